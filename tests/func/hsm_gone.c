/*
 * hsm_gone CONF BUCKET [list]: what an export policy "deleted" does with
 * libstria, against the S3 endpoint $S3_ENDPOINT: every MDT's tombstones,
 * paged two at a time, each object deleted through a storage host while
 * its etag is the tombstone's, then every tombstone seen dropped; with
 * "list", only the listing. Prints "mdt=M id=N repo=R key=K delete=RESULT"
 * per tombstone (RESULT "0", the errno's name, or "-" for a listing), then
 * "mdts=N seen=N left=N", left being what a listing finds afterwards.
 * Exit 1 when a call other than a delete fails.
 */
#include <stria/stria.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct run {
    stria_fs_t *fs;
    struct stria_s3_target t;
    uint32_t mdt;
    uint64_t last;
    int seen;
    bool list;
};

static int one(const struct stria_hsm_gone *g, void *arg)
{
    struct run *r = arg;
    char why[512];
    if (g->id <= r->last) {
        fprintf(stderr, "hsm_gone: id %" PRIu64 " after %" PRIu64 "\n", g->id, r->last);
        return -EPROTO;
    }
    int rc = r->list ? 0 : stria_s3_delete(r->fs, &r->t, g->key, g->etag, why, sizeof(why));
    printf("mdt=%u id=%" PRIu64 " repo=%" PRIx64 " key=%s delete=%s\n", r->mdt, g->id, g->repo,
           g->key,
           r->list ? "-"
           : rc    ? strerrorname_np(-rc)
                   : "0");
    if (rc)
        printf("  why: %s\n", why);
    r->last = g->id;
    r->seen++;
    return 0;
}

static int count(const struct stria_hsm_gone *g, void *arg)
{
    (void)g;
    (*(int *)arg)++;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (argc == 4 && strcmp(argv[3], "list")) || argc > 4) {
        fprintf(stderr, "usage: hsm_gone CONF BUCKET [list]\n");
        return 2;
    }
    struct run r = {.t = {getenv("S3_ENDPOINT"), "us-east-1", argv[2], 0}, .list = argc == 4};
    int rc = stria_connect(argv[1], &r.fs);
    if (rc) {
        fprintf(stderr, "hsm_gone: connect: %s\n", strerror(-rc));
        return 1;
    }
    uint32_t n = stria_mdt_count(r.fs);
    int left = 0, bad = 0;
    for (r.mdt = 0; r.mdt < n && !bad; r.mdt++) {
        int more = 1;
        r.last = 0;
        while (more && !bad) {
            if ((rc = stria_hsm_gone_list(r.fs, r.mdt, r.last, 2, one, &r, &more))) {
                fprintf(stderr, "hsm_gone: list MDT %u: %s\n", r.mdt, strerror(-rc));
                bad = 1;
            }
        }
        if (!bad && !r.list && r.last && (rc = stria_hsm_gone_drop(r.fs, r.mdt, 0, r.last))) {
            fprintf(stderr, "hsm_gone: drop MDT %u: %s\n", r.mdt, strerror(-rc));
            bad = 1;
        }
        if (!bad && (rc = stria_hsm_gone_list(r.fs, r.mdt, 0, 1000, count, &left, NULL))) {
            fprintf(stderr, "hsm_gone: list MDT %u again: %s\n", r.mdt, strerror(-rc));
            bad = 1;
        }
    }
    printf("mdts=%u seen=%d left=%d\n", n, r.seen, left);
    stria_disconnect(r.fs);
    return bad;
}
