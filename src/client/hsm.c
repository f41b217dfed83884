/*
 * Released files: fetching their data back from S3 (hsm.h).
 *
 * A read of a released file asks the storage hosts that hold the stripes
 * it meets to fetch those units first (HSM_PULL with the background flag:
 * each host then fills the rest of its object by itself); a write, a
 * truncate or `stria hsm restore` asks for everything, window by window,
 * every object of a window at once. An object that holds all of its units
 * says so; when all of them have, the MDT clears the file's released flag.
 */
#include "hsm.h"
#include "inode.h"
#include "io.h"

#include "../common/log.h"
#include "../common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hsm_src {
    struct hsm_target t;
    char key[PROTO_MAX_S3_KEY + 1];
    char etag[129];
    uint64_t repo;
    uint32_t nobj, ndone;
    bool done[LAYOUT_MAX_COMP * LAYOUT_MAX_STRIPES];
    bool logged; /* a failure was logged: one line per handle */
    /* A range of the file known fetched: reads inside it ask no one. */
    uint64_t have_lo, have_hi;
};

/* One window of restore moves at most this much of each object. */
#define HSM_WINDOW (64ull << 20)
/* A read of a released file fetches at least this much of each object
 * from where it reads, in one round of parallel GETs on every host, so
 * that a sequential reader finds what it reads next already there. */
#define HSM_READ_WINDOW (8ull << 20)
#define HSM_PARALLEL    16

void hsm_src_free(struct hsm_src *s)
{
    free(s);
}

void hsm_copy_str(char *dst, size_t cap, const struct proto_str *s)
{
    size_t n = s->len < cap - 1 ? s->len : cap - 1;
    memcpy(dst, s->p, n);
    dst[n] = 0;
}

int stria_repo_value(const char *conf, size_t len, const char *name, char *buf, size_t cap)
{
    size_t nl = strlen(name);
    for (size_t at = 0; at < len;) {
        const char *line = conf + at;
        const char *end = memchr(line, '\n', len - at);
        size_t ll = end ? (size_t)(end - line) : len - at;
        at += ll + 1;
        if (ll > nl && !memcmp(line, name, nl) && line[nl] == '=') {
            size_t vl = ll - nl - 1;
            if (vl >= cap)
                return -ENAMETOOLONG;
            memcpy(buf, line + nl + 1, vl);
            buf[vl] = 0;
            return 0;
        }
    }
    return -ENOENT;
}

/* Whether the movers fill component c: instantiated, on OSTs (a
 * Data-on-MDT component keeps its bytes on the MDT through a release). */
static bool hsm_comp_on_osts(const struct layout_comp *c)
{
    return !layout_comp_pending(c) && (c->type & LAYOUT_TYPE_MASK) == LAYOUT_TYPE_OST;
}

/* The objects the movers fill for layout l. */
static uint32_t hsm_objects(const struct layout *l)
{
    uint32_t n = 0;
    for (uint16_t c = 0; c < l->ncomp; c++)
        if (hsm_comp_on_osts(&l->comp[c]))
            n += l->comp[c].stripe_count;
    return n;
}

int hsm_target_parse(const char *conf, size_t len, struct hsm_target *t)
{
    char addressing[32] = "";
    memset(t, 0, sizeof(*t));
    int rc = stria_repo_value(conf, len, "bucket", t->bucket, sizeof(t->bucket));
    if (rc)
        return rc == -ENOENT ? -EINVAL : rc;
    stria_repo_value(conf, len, "endpoint", t->endpoint, sizeof(t->endpoint));
    stria_repo_value(conf, len, "region", t->region, sizeof(t->region));
    stria_repo_value(conf, len, "addressing", addressing, sizeof(addressing));
    t->vhost = !strcmp(addressing, "virtual");
    return 0;
}

int hsm_repo_conf(stria_fs_t *fs, uint64_t dir, char *buf, size_t cap, size_t *len)
{
    struct proto_repo_req q = {.op = REPO_OP_GET, .dir = dir};
    struct proto_repo_rep r;
    cl_cred(&q.cred);
    size_t got = 0;
    int rc = MDT_CALL(fs, 0, repo, &q, &r, ({
                          /* {u64 dir, u32 len, conf} */
                          if (r.repos.len < 12 || proto_le32(r.repos.p + 8) > r.repos.len - 12 ||
                              proto_le32(r.repos.p + 8) >= cap)
                              rc_ = -ENOENT;
                          else {
                              got = proto_le32(r.repos.p + 8);
                              memcpy(buf, r.repos.p + 12, got);
                              buf[got] = 0;
                          }
                      }));
    *len = got;
    return rc;
}

int hsm_any_ost(stria_fs_t *fs, uint32_t *ost)
{
    static _Atomic uint32_t next;
    pthread_rwlock_rdlock(&fs->map_lock);
    uint32_t n = fs->nost_slots, pick = UINT32_MAX;
    uint32_t start = n ? atomic_fetch_add(&next, 1) % n : 0;
    for (uint32_t i = 0; i < n && pick == UINT32_MAX; i++)
        if (fs->ost[(start + i) % n])
            pick = (start + i) % n;
    pthread_rwlock_unlock(&fs->map_lock);
    if (pick == UINT32_MAX)
        return -ENODEV;
    *ost = pick;
    return 0;
}

/* Load where ino's data is: 1 if the file is no longer released. */
static int src_load(stria_fs_t *fs, uint64_t ino, const struct layout *l, struct hsm_src **out)
{
    struct hsm_src *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    struct proto_hsm_get_req q = {.ino = ino};
    struct proto_hsm_get_rep r;
    uint32_t state = 0;
    cl_cred(&q.cred);
    int rc = MDT_CALL(fs, proto_ino_mdt(ino), hsm_get, &q, &r, ({
                          state = r.state;
                          s->repo = r.repo;
                          hsm_copy_str(s->key, sizeof(s->key), &r.key);
                          hsm_copy_str(s->etag, sizeof(s->etag), &r.etag);
                      }));
    if (rc == 0 && !(state & HSM_RELEASED))
        rc = 1;
    char *conf = NULL;
    size_t clen = 0;
    if (rc == 0 && !(conf = malloc(PROTO_MAX_REPO_CONF + 1)))
        rc = -ENOMEM;
    if (rc == 0 && (rc = hsm_repo_conf(fs, s->repo, conf, PROTO_MAX_REPO_CONF + 1, &clen)) == 0)
        rc = hsm_target_parse(conf, clen, &s->t);
    else if (rc == -ENOENT)
        log_warn("released file %" PRIu64 ": its repository (directory %" PRIu64
                 ") is gone; add it again to read the file",
                 ino, s->repo);
    free(conf);
    if (rc) {
        free(s);
        return rc;
    }
    /* Components not instantiated lie past the end of the data. */
    s->nobj = hsm_objects(l);
    *out = s;
    return 0;
}

struct pull {
    uint16_t comp, stripe;
    uint64_t off, len;
    uint8_t flags;
    int rc, s3err;
    bool complete;
    char why[400];
};

struct pull_set {
    stria_fs_t *fs;
    uint64_t ino, size;
    const struct layout *l;
    const struct hsm_src *s;
    struct pull *v;
    int n;
    _Atomic int next;
};

static void pull_one(struct pull_set *ps, struct pull *p)
{
    const struct layout_comp *c = &ps->l->comp[p->comp];
    const struct hsm_src *s = ps->s;
    uint32_t ost = map_group_ost(c->groups[p->stripe]);
    struct proto_hsm_pull_req q = {.ost = ost,
                                   .ino = ps->ino,
                                   .comp = layout_obj_comp(ps->l, p->comp),
                                   .stripe = p->stripe,
                                   .comp_start = c->start,
                                   .stripe_size = c->stripe_size,
                                   .stripe_count = c->stripe_count,
                                   /* The component's own bytes: the
                                    * object holds none past its end. */
                                   .file_size = MIN(ps->size, c->end),
                                   .endpoint = proto_str_c(s->t.endpoint),
                                   .region = proto_str_c(s->t.region),
                                   .bucket = proto_str_c(s->t.bucket),
                                   .vhost = s->t.vhost,
                                   .key = proto_str_c(s->key),
                                   .etag = proto_str_c(s->etag),
                                   .offset = p->off,
                                   .len = p->len,
                                   .flags = p->flags};
    struct proto_hsm_pull_rep r;
    p->rc = TARGET_CALL(ps->fs, PROTO_NODE_STOR, ost, hsm_pull, &q, &r, ({
                            p->complete = r.complete;
                            p->s3err = r.s3err;
                            hsm_copy_str(p->why, sizeof(p->why), &r.why);
                        }));
}

static void *pull_worker(void *arg)
{
    struct pull_set *ps = arg;
    int i;
    while ((i = atomic_fetch_add(&ps->next, 1)) < ps->n)
        pull_one(ps, &ps->v[i]);
    return NULL;
}

void hsm_workers(unsigned n, void *(*fn)(void *), void *arg)
{
    pthread_t th[HSM_PARALLEL];
    unsigned want = n < HSM_PARALLEL ? n : HSM_PARALLEL, started = 0;
    for (unsigned i = 0; want > 1 && i < want; i++)
        if (pthread_create(&th[started], NULL, fn, arg) == 0)
            started++;
    if (!started)
        fn(arg);
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i], NULL);
}

/* Whether stripe st of component c holds a unit of [lo, hi). */
static bool stripe_meets(const struct layout_comp *c, uint16_t st, uint64_t lo, uint64_t hi)
{
    lo = lo > c->start ? lo : c->start;
    hi = hi < c->end ? hi : c->end;
    if (lo >= hi)
        return false;
    uint64_t u0 = (lo - c->start) / c->stripe_size, u1 = (hi - 1 - c->start) / c->stripe_size;
    if (u1 - u0 + 1 >= c->stripe_count)
        return true;
    for (uint64_t u = u0; u <= u1; u++)
        if (u % c->stripe_count == st)
            return true;
    return false;
}

/* Pull [lo, hi) of the file from every object that holds part of it
 * (all: from every object not known complete). Returns 0, or the first
 * failure with its text. */
static int pull_range(stria_fs_t *fs, uint64_t ino, const struct layout *l, uint64_t size,
                      struct hsm_src *s, uint64_t lo, uint64_t hi, bool all, uint8_t flags,
                      char *why, size_t whylen)
{
    /* Components are instantiated in file order, so a layout that gained
     * one since the source was loaded keeps every earlier stripe's index. */
    uint32_t nobj = s->nobj = hsm_objects(l);
    struct pull *v = malloc(sizeof(*v) * (nobj ? nobj : 1));
    uint32_t *at = malloc(sizeof(*at) * (nobj ? nobj : 1));
    if (!v || !at) {
        free(v);
        free(at);
        return -ENOMEM;
    }
    int n = 0;
    uint32_t idx = 0;
    for (uint16_t c = 0; c < l->ncomp; c++)
        for (uint16_t st = 0; hsm_comp_on_osts(&l->comp[c]) && st < l->comp[c].stripe_count;
             st++, idx++) {
            if (s->done[idx] || !(all || stripe_meets(&l->comp[c], st, lo, hi)))
                continue;
            v[n] =
                (struct pull){.comp = c, .stripe = st, .off = lo, .len = hi - lo, .flags = flags};
            at[n++] = idx;
        }
    if (!n) {
        free(v);
        free(at);
        return 0;
    }
    struct pull_set ps = {.fs = fs, .ino = ino, .size = size, .l = l, .s = s, .v = v, .n = n};
    hsm_workers((unsigned)n, pull_worker, &ps);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        struct pull *p = &v[i];
        if (p->rc == 0 && p->s3err == 0) {
            if (p->complete && !s->done[at[i]]) {
                s->done[at[i]] = true;
                s->ndone++;
            }
            continue;
        }
        if (rc)
            continue;
        rc = p->rc ? p->rc : p->s3err;
        if (p->rc)
            snprintf(why, whylen, "storage target of stripe %u: %s", p->stripe, strerror(-p->rc));
        else
            snprintf(why, whylen, "%s", p->why);
    }
    free(v);
    free(at);
    return rc;
}

int hsm_mark_lost(stria_fs_t *fs, uint64_t ino, uint64_t repo, const char *etag)
{
    struct proto_hsm_set_req q = {
        .ino = ino, .op = HSM_OP_LOST, .repo = repo, .etag = proto_str_c(etag)};
    struct proto_hsm_set_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred); /* any reader may say it (the MDT checks the etag) */
    int rc = MDT_CALL(fs, proto_ino_mdt(ino), hsm_set, &q, r, (void)0);
    free(r);
    return rc;
}

static int restored(stria_fs_t *fs, uint64_t ino, struct layout *l, const struct hsm_src *s)
{
    struct proto_hsm_set_req q = {
        .ino = ino, .op = HSM_OP_RESTORED, .repo = s->repo, .etag = proto_str_c(s->etag)};
    struct proto_hsm_set_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred); /* any reader may complete a restore */
    int rc = MDT_CALL(fs, proto_ino_mdt(ino), hsm_set, &q, r, (void)0);
    free(r);
    if (rc == 0)
        layout_set_released(l, false);
    return rc;
}

int hsm_fetch(stria_fs_t *fs, uint64_t ino, struct layout *l, uint64_t size, uint64_t off,
              uint64_t len, bool all, struct hsm_src **src, stria_progress_fn fn, void *arg,
              char *why, size_t whylen)
{
    char whybuf[400];
    if (!why || !whylen) {
        why = whybuf;
        whylen = sizeof(whybuf);
    }
    why[0] = 0;
    if (!layout_released(l))
        return 0;
    int rc;
    /* The data comes back into objects: every component it covers needs
     * its OSTs first. */
    if (layout_first_pending(l, size) >= 0) {
        struct layout *n = malloc(sizeof(*n));
        if (!n)
            return -ENOMEM;
        rc = cl_layout_intent(fs, ino, size, n);
        if (rc == 0)
            layout_copy(l, n);
        free(n);
        if (rc) {
            snprintf(why, whylen, "cannot place the data of inode %" PRIu64 ": %s", ino,
                     strerror(-rc));
            return rc;
        }
    }
    if (!*src && (rc = src_load(fs, ino, l, src))) {
        if (rc == 1) { /* restored meanwhile by another */
            layout_set_released(l, false);
            return 0;
        }
        snprintf(why, whylen, "cannot find where the data of inode %" PRIu64 " is: %s", ino,
                 strerror(-rc));
        return rc == -ENOENT ? -EIO : rc;
    }
    struct hsm_src *s = *src;
    if (all) {
        /* Window by window over the file, every object at once. */
        uint64_t span = HSM_WINDOW;
        if (l->ncomp)
            span = HSM_WINDOW * l->comp[0].stripe_count;
        rc = 0;
        for (uint64_t at = 0; at < size && !rc; at += span) {
            uint64_t hi = size - at < span ? size : at + span;
            rc = pull_range(fs, ino, l, size, s, at, hi, false, 0, why, whylen);
            if (!rc && fn)
                fn(hi, arg);
        }
        /* Objects that hold nothing of the file, and the final word. */
        if (!rc)
            rc = pull_range(fs, ino, l, size, s, 0, size ? size : 1, true, HSM_PULL_ALL, why,
                            whylen);
    } else {
        /* Read-ahead may read a piece past len: that must be there too. */
        if (off >= size || (off >= s->have_lo && off + len + IO_PIECE_MAX <= s->have_hi))
            return 0;
        uint64_t want = HSM_READ_WINDOW * (l->ncomp ? l->comp[0].stripe_count : 1);
        if (len > want)
            want = len;
        uint64_t hi = want > size - off ? size : off + want;
        rc = pull_range(fs, ino, l, size, s, off, hi, false, HSM_PULL_BACKGROUND, why, whylen);
        if (rc == 0) {
            /* Extend the known range when this one touches it. */
            if (off <= s->have_hi && hi >= s->have_lo && s->have_hi > s->have_lo) {
                s->have_lo = off < s->have_lo ? off : s->have_lo;
                s->have_hi = hi > s->have_hi ? hi : s->have_hi;
            } else {
                s->have_lo = off;
                s->have_hi = hi;
            }
        }
    }
    if (rc) {
        if (!s->logged) {
            s->logged = true;
            log_warn("cannot fetch the data of inode %" PRIu64 " from s3://%s/%s: %s", ino,
                     s->t.bucket, s->key, why);
        }
        if (rc == -ENOENT)
            hsm_mark_lost(fs, ino, s->repo, s->etag);
        /* To a reader or writer every failure of S3 or of a mover is an
         * I/O error; why says which. */
        return rc == -ENOMEM ? rc : -EIO;
    }
    if (s->ndone == s->nobj) {
        rc = restored(fs, ino, l, s);
        if (rc == -ESTALE) {
            snprintf(why, whylen, "the object changed in S3 while it was restored");
            return -EIO;
        }
        return rc;
    }
    return 0;
}

int hsm_restore_ino(stria_fs_t *fs, uint64_t ino, stria_progress_fn fn, void *arg, char *why,
                    size_t whylen)
{
    struct proto_getstripe_req q = {.ino = ino};
    struct proto_getstripe_rep *r = malloc(sizeof(*r));
    struct proto_hsm_get_req hq = {.ino = ino};
    struct proto_hsm_get_rep hr;
    uint64_t size = 0;
    uint32_t state = 0;
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    cl_cred(&hq.cred);
    int rc = MDT_CALL(fs, proto_ino_mdt(ino), hsm_get, &hq, &hr, ({
                          state = hr.state;
                          size = hr.attr.size;
                      }));
    if (rc == 0 && (state & HSM_RELEASED))
        rc = MDT_CALL(fs, proto_ino_mdt(ino), getstripe, &q, r, (void)0);
    if (rc == 0 && (state & HSM_RELEASED) && !r->is_dir) {
        struct hsm_src *s = NULL;
        rc = hsm_fetch(fs, ino, &r->layout, size, 0, size, true, &s, fn, arg, why, whylen);
        hsm_src_free(s);
    }
    free(r);
    return rc;
}
