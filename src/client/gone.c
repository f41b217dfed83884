/*
 * What the export policy "deleted" needs of the cluster (stria.h): the
 * MDTs' tombstones of archived files destroyed in Stria (HSM_GONE), and
 * the conditional delete of their objects by a storage host (S3_DELETE);
 * and the files a changed object superseded, taken once those who opened
 * them had their time (HSM_REAP). The policy itself (which repository exports deletions, when) is
 * the caller's; nothing here decides to delete anything.
 */
#include "hsm.h"
#include "io.h"
#include "migrate.h"

#include "../common/log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t stria_mdt_count(stria_fs_t *fs)
{
    return __atomic_load_n(&fs->mdt_count, __ATOMIC_RELAXED);
}

int stria_hsm_gone_list(stria_fs_t *fs, uint32_t mdt, uint64_t after, unsigned max,
                        int (*cb)(const struct stria_hsm_gone *g, void *arg), void *arg, int *more)
{
    if (more)
        *more = 0;
    if (max < 1 || max > HSM_GONE_MAX)
        return -EINVAL;
    struct proto_hsm_gone_req q = {.op = HSM_GONE_LIST, .after = after, .max = max};
    struct proto_hsm_gone_rep r;
    uint8_t *page = NULL;
    uint32_t plen = 0;
    int got_more = 0;
    cl_cred(&q.cred);
    /* The page is copied out: cb runs with no connection held. */
    int rc = MDT_CALL(fs, mdt, hsm_gone, &q, &r, ({
                          got_more = r.more;
                          plen = r.entries.len;
                          if (plen && !(page = malloc(plen)))
                              rc_ = -ENOMEM;
                          else if (plen)
                              memcpy(page, r.entries.p, plen);
                      }));
    struct proto_dec d;
    proto_dec_init(&d, page, plen);
    char key[PROTO_MAX_S3_KEY + 1], etag[PROTO_MAX_STR + 1];
    while (rc == 0 && d.off < d.len) {
        struct proto_str k, e;
        struct stria_hsm_gone g;
        proto_get_U64(&d, &g.id);
        proto_get_U64(&d, &g.repo);
        proto_get_STR(&d, &k);
        proto_get_STR(&d, &e);
        if (d.err || proto_str_copy(&k, key, sizeof(key)) ||
            proto_str_copy(&e, etag, sizeof(etag))) {
            rc = -EBADMSG;
            break;
        }
        g.key = key;
        g.etag = etag;
        rc = cb ? cb(&g, arg) : 0;
    }
    free(page);
    if (rc == 0 && more)
        *more = got_more;
    return rc;
}

int stria_hsm_gone_drop(stria_fs_t *fs, uint32_t mdt, uint64_t after, uint64_t upto)
{
    struct proto_hsm_gone_req q = {.op = HSM_GONE_DROP, .after = after, .upto = upto};
    struct proto_hsm_gone_rep r;
    cl_cred(&q.cred);
    return MDT_CALL(fs, mdt, hsm_gone, &q, &r, (void)0);
}

int stria_s3_delete(stria_fs_t *fs, const struct stria_s3_target *t, const char *key,
                    const char *etag, char *why, size_t whylen)
{
    if (why && whylen)
        why[0] = '\0';
    if (!t || !t->bucket || !t->bucket[0] || !key || !key[0] || strlen(key) > PROTO_MAX_S3_KEY ||
        !etag || !etag[0])
        return -EINVAL;
    uint32_t ost;
    int rc = hsm_any_ost(fs, &ost);
    if (rc)
        return rc;
    struct proto_s3_delete_req q = {.key = proto_str_c(key), .etag = proto_str_c(etag)};
    TARGET_FIELDS(q, t);
    struct proto_s3_delete_rep r;
    int s3err = 0;
    rc = TARGET_CALL(fs, PROTO_NODE_STOR, ost, s3_delete, &q, &r, ({
                         s3err = r.s3err;
                         if (s3err && why)
                             hsm_copy_str(why, whylen, &r.why);
                     }));
    if (rc && why && whylen)
        snprintf(why, whylen, "storage target %u: %s", ost, strerror(-rc));
    return rc ? rc : s3err;
}

/* One superseded file of MDT mdt after *after: its objects destroyed,
 * then its inode dropped; *after becomes it (0: none left), *took 1 when
 * it went. A file that cannot go now (an OST out of reach) is logged and
 * left for the next pass, and the pass goes on after it. */
static int reap_one(stria_fs_t *fs, uint32_t mdt, uint64_t repo, uint64_t age_ms, uint64_t *after,
                    int *took, struct proto_hsm_reap_rep *r)
{
    struct proto_hsm_reap_req q = {
        .op = HSM_REAP_LIST, .repo = repo, .after = *after, .age_ms = age_ms};
    cl_cred(&q.cred);
    *took = 0;
    int rc = MDT_CALL(fs, mdt, hsm_reap, &q, r, (void)0);
    *after = rc ? 0 : r->ino;
    if (rc || !r->ino)
        return rc;
    /* Its objects first: a failure leaves the inode to name them. */
    if (r->objects && r->layout.ncomp && (rc = io_objects(fs, r->ino, &r->layout, IO_DESTROY, 0))) {
        log_warn("superseded inode %" PRIx64 " kept for now: its objects: %s", r->ino,
                 strerror(-rc));
        return 0;
    }
    cl_migrate_forget(fs, r->ino, &r->layout);
    struct proto_hsm_reap_rep d;
    q.op = HSM_REAP_DROP;
    q.ino = r->ino;
    rc = MDT_CALL(fs, mdt, hsm_reap, &q, &d, (void)0);
    *took = rc == 0;
    return rc == -ENOENT ? 0 : rc;
}

int hsm_reap(stria_fs_t *fs, uint64_t repo, uint64_t age_ms, uint64_t *reaped)
{
    struct proto_hsm_reap_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    int rc = 0;
    uint32_t nmdt = stria_mdt_count(fs);
    for (uint32_t mdt = 0; mdt < nmdt && rc == 0; mdt++) {
        uint64_t after = 0;
        for (unsigned n = 0; n < HSM_REAP_PASS_MAX && rc == 0; n++) {
            int took;
            rc = reap_one(fs, mdt, repo, age_ms, &after, &took, r);
            if (reaped)
                *reaped += (uint64_t)took;
            if (!after)
                break;
        }
    }
    free(r);
    return rc;
}
