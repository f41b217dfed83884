/*
 * Data repositories on S3: the public stria_hsm_*, stria_repo_* and
 * stria_s3_* calls of stria.h (docs/architecture.md, "Data repositories").
 *
 * The client moves no data itself: it asks the MDT for a file's state and
 * layout, and the storage hosts that hold the file's stripes to move them
 * (HSM_PUSH parts in parallel, HSM_PULL through hsm.c); it tells the MDT
 * the outcome only once the storage hosts have confirmed it.
 */
#include "hsm.h"
#include "io.h"
#include "mdcache.h"
#include "route.h"

#include "../common/log.h"
#include "../common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Files up to this size go up as one PUT; larger ones in parts. */
#define PUT_MAX      (16ull << 20)
#define PART_MIN     (16ull << 20)
#define PART_MAX     (64ull << 20)
#define PARTS_MAX    10000u
#define PUSH_THREADS 8

int stria_hsm_get(stria_fs_t *fs, uint64_t ino, struct stria_hsm *out)
{
    struct proto_hsm_get_req q = {.ino = ino};
    struct proto_hsm_get_rep r;
    cl_cred(&q.cred);
    memset(out, 0, sizeof(*out));
    return MDT_CALL(fs, proto_ino_mdt(ino), hsm_get, &q, &r, ({
                        out->state = r.state;
                        out->repo = r.repo;
                        hsm_copy_str(out->key, sizeof(out->key), &r.key);
                        hsm_copy_str(out->etag, sizeof(out->etag), &r.etag);
                        out->arch_size = r.arch_size;
                        out->arch_mtime_ns = r.arch_mtime_ns;
                        out->gen = r.gen;
                        cl_attr_out(&r.attr, &out->attr);
                    }));
}

/* One HSM_PUSH to ost; S3's failure into *s3err and why. */
static int push(stria_fs_t *fs, uint32_t ost, struct proto_hsm_push_req *q, char *upload_id,
                size_t idcap, char *etag, size_t etagcap, uint8_t md5[16], char *why, size_t whylen)
{
    struct proto_hsm_push_rep r;
    int s3err = 0;
    int rc = TARGET_CALL(fs, PROTO_NODE_STOR, ost, hsm_push, q, &r, ({
                             s3err = r.s3err;
                             if (s3err)
                                 hsm_copy_str(why, whylen, &r.why);
                             if (upload_id)
                                 hsm_copy_str(upload_id, idcap, &r.upload_id);
                             if (etag)
                                 hsm_copy_str(etag, etagcap, &r.etag);
                             if (md5 && r.md5.len == 16)
                                 memcpy(md5, r.md5.p, 16);
                         }));
    if (rc) {
        snprintf(why, whylen, "storage target %u: %s", ost, strerror(-rc));
        return rc;
    }
    return s3err;
}

struct part {
    uint64_t off, len;
    uint32_t ost;
    char etag[130];
    uint8_t md5[16];
    int rc;
    char why[400];
};

struct push_set {
    stria_fs_t *fs;
    const struct stria_s3_target *t;
    const char *key, *upload_id;
    uint64_t ino;
    const struct layout *l;
    struct part *v;
    uint32_t n;
    _Atomic uint32_t next;
    _Atomic uint64_t done;
    _Atomic int failed;
    stria_progress_fn fn;
    void *arg;
    pthread_mutex_t fn_lock;
};

static void *push_worker(void *arg)
{
    struct push_set *ps = arg;
    uint32_t i;
    while ((i = atomic_fetch_add(&ps->next, 1)) < ps->n && !atomic_load(&ps->failed)) {
        struct part *p = &ps->v[i];
        struct proto_hsm_push_req q = {.op = PUSH_PART,
                                       .key = proto_str_c(ps->key),
                                       .upload_id = proto_str_c(ps->upload_id),
                                       .part = i + 1,
                                       .ino = ps->ino,
                                       .offset = p->off,
                                       .len = p->len};
        TARGET_FIELDS(q, ps->t);
        layout_copy(&q.layout, ps->l);
        layout_set_released(&q.layout, false);
        p->rc = push(ps->fs, p->ost, &q, NULL, 0, p->etag, sizeof(p->etag), p->md5, p->why,
                     sizeof(p->why));
        if (p->rc) {
            atomic_store(&ps->failed, 1);
            continue;
        }
        uint64_t done = atomic_fetch_add(&ps->done, p->len) + p->len;
        if (ps->fn) {
            pthread_mutex_lock(&ps->fn_lock);
            ps->fn(done, ps->arg);
            pthread_mutex_unlock(&ps->fn_lock);
        }
    }
    return NULL;
}

/* The etag S3 gives an object made of parts: the MD5 of their MD5s, "-N". */
static void multipart_etag(const struct part *v, uint32_t n, char *out, size_t cap)
{
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    out[0] = 0;
    if (!c)
        return;
    EVP_DigestInit_ex(c, EVP_md5(), NULL);
    for (uint32_t i = 0; i < n; i++)
        EVP_DigestUpdate(c, v[i].md5, 16);
    EVP_DigestFinal_ex(c, md, &mdlen);
    EVP_MD_CTX_free(c);
    size_t at = 0;
    for (unsigned i = 0; i < mdlen && at + 3 < cap; i++)
        at += (size_t)snprintf(out + at, cap - at, "%02x", md[i]);
    snprintf(out + at, cap - at, "-%u", n);
}

/* Upload [0, size) of ino in parts; *etag the object's. */
static int push_parts(stria_fs_t *fs, uint64_t ino, const struct layout *l, uint64_t size,
                      const struct stria_s3_target *t, const char *key, char *etag, size_t etagcap,
                      stria_progress_fn fn, void *arg, char *why, size_t whylen)
{
    const struct layout_comp *c0 = &l->comp[0];
    uint64_t psize = PART_MIN;
    if ((size + PARTS_MAX - 1) / PARTS_MAX > psize)
        psize = (size + PARTS_MAX - 1) / PARTS_MAX;
    if (c0->stripe_size <= PART_MAX)
        psize = (psize + c0->stripe_size - 1) / c0->stripe_size * c0->stripe_size;
    if (psize > PART_MAX) {
        snprintf(why, whylen, "a file of %" PRIu64 " bytes needs parts over 64 MiB", size);
        return -EFBIG;
    }
    uint32_t n = (uint32_t)((size + psize - 1) / psize);
    struct part *v = calloc(n, sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        v[i].off = i * psize;
        v[i].len = size - v[i].off < psize ? size - v[i].off : psize;
        /* Parts go round the file's storage hosts; each reads its own
         * stripes of the part locally and the others' over the network. */
        v[i].ost = map_group_ost(c0->groups[i % c0->stripe_count]);
    }
    char upload_id[1100];
    struct proto_hsm_push_req q = {.op = PUSH_CREATE, .key = proto_str_c(key)};
    TARGET_FIELDS(q, t);
    int rc = push(fs, v[0].ost, &q, upload_id, sizeof(upload_id), NULL, 0, NULL, why, whylen);
    if (rc) {
        free(v);
        return rc;
    }
    struct push_set ps = {.fs = fs,
                          .t = t,
                          .key = key,
                          .upload_id = upload_id,
                          .ino = ino,
                          .l = l,
                          .v = v,
                          .n = n,
                          .fn = fn,
                          .arg = arg};
    pthread_mutex_init(&ps.fn_lock, NULL);
    hsm_workers(n < PUSH_THREADS ? n : PUSH_THREADS, push_worker, &ps);
    pthread_mutex_destroy(&ps.fn_lock);
    for (uint32_t i = 0; i < n && !rc; i++)
        if (v[i].rc) {
            rc = v[i].rc;
            snprintf(why, whylen, "part %u: %s", i + 1, v[i].why);
        }
    if (rc == 0 && atomic_load(&ps.next) < n)
        rc = -EIO;
    uint8_t *blob = NULL;
    struct proto_enc e = {0};
    if (rc == 0) {
        size_t cap = (size_t)n * (4 + 4 + 130);
        if (!(blob = malloc(cap)))
            rc = -ENOMEM;
        else {
            proto_enc_init(&e, blob, cap);
            for (uint32_t i = 0; i < n; i++) {
                uint32_t num = i + 1;
                struct proto_str s = proto_str_c(v[i].etag);
                proto_put_U32(&e, &num);
                proto_put_STR(&e, &s);
            }
            rc = e.err;
        }
    }
    if (rc == 0) {
        q.op = PUSH_COMPLETE;
        q.upload_id = proto_str_c(upload_id);
        q.parts = (struct proto_blob){blob, (uint32_t)e.len};
        q.size = size;
        rc = push(fs, v[0].ost, &q, NULL, 0, etag, etagcap, NULL, why, whylen);
    }
    if (rc == 0) {
        /* Check the object is these parts (where S3 names it as AWS does). */
        char want_etag[64];
        multipart_etag(v, n, want_etag, sizeof(want_etag));
        if (strchr(etag, '-') && strcmp(etag, want_etag)) {
            snprintf(why, whylen, "s3://%s/%s: its etag %s is not the parts' %s", t->bucket, key,
                     etag, want_etag);
            rc = -EIO;
        }
    }
    if (rc) {
        char ignore[400];
        q.op = PUSH_ABORT;
        q.upload_id = proto_str_c(upload_id);
        q.parts = (struct proto_blob){NULL, 0};
        push(fs, v[0].ost, &q, NULL, 0, NULL, 0, NULL, ignore, sizeof(ignore));
    }
    free(blob);
    free(v);
    return rc;
}

int stria_hsm_archive(stria_fs_t *fs, uint64_t ino, uint64_t repo, const struct stria_s3_target *t,
                      const char *key, stria_progress_fn fn, void *arg, char *why, size_t whylen)
{
    return hsm_archive(fs, ino, repo, t, key, false, fn, arg, why, whylen);
}

int hsm_archive(stria_fs_t *fs, uint64_t ino, uint64_t repo, const struct stria_s3_target *t,
                const char *key, bool moved, stria_progress_fn fn, void *arg, char *why,
                size_t whylen)
{
    char whybuf[400];
    if (!why || !whylen) {
        why = whybuf;
        whylen = sizeof(whybuf);
    }
    why[0] = 0;
    if (!key || !*key || strlen(key) > PROTO_MAX_S3_KEY || !t || !t->bucket)
        return -EINVAL;
    struct stria_hsm h;
    int rc = stria_hsm_get(fs, ino, &h);
    if (rc)
        return rc;
    if (!S_ISREG(h.attr.mode))
        return -EINVAL;
    /* A file of this repository keeps its object (where it was imported
     * from or archived to), wherever it has moved since. */
    if (h.repo == repo && h.key[0] && !moved)
        key = h.key;
    if ((h.state & HSM_ARCHIVED) && !(h.state & (HSM_DIRTY | HSM_LOST)) && h.repo == repo &&
        !strcmp(key, h.key))
        return 0;
    if (h.state & HSM_RELEASED) /* archived elsewhere, data not here */
        return -EPERM;
    struct proto_getstripe_req gq = {.ino = ino};
    struct proto_getstripe_rep *gr = malloc(sizeof(*gr));
    if (!gr)
        return -ENOMEM;
    cl_cred(&gq.cred);
    rc = MDT_CALL(fs, proto_ino_mdt(ino), getstripe, &gq, gr, (void)0);
    char etag[130] = "";
    uint64_t size = h.attr.size;
    if (rc == 0 && !gr->layout.ncomp)
        rc = -EINVAL;
    if (rc == 0 && size <= PUT_MAX) {
        struct proto_hsm_push_req q = {
            .op = PUSH_PUT, .key = proto_str_c(key), .ino = ino, .offset = 0, .len = size};
        TARGET_FIELDS(q, t);
        layout_copy(&q.layout, &gr->layout);
        rc = push(fs, map_group_ost(gr->layout.comp[0].groups[0]), &q, NULL, 0, etag, sizeof(etag),
                  NULL, why, whylen);
        if (rc == 0 && fn)
            fn(size, arg);
    } else if (rc == 0) {
        rc = push_parts(fs, ino, &gr->layout, size, t, key, etag, sizeof(etag), fn, arg, why,
                        whylen);
    }
    free(gr);
    if (rc)
        return rc;
    struct proto_hsm_set_req q = {.ino = ino,
                                  .op = HSM_OP_ARCHIVED,
                                  .repo = repo,
                                  .key = proto_str_c(key),
                                  .etag = proto_str_c(etag),
                                  .size = size,
                                  .mtime_ns = h.attr.mtime_ns};
    struct proto_hsm_set_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    rc = MDT_CALL(fs, proto_ino_mdt(ino), hsm_set, &q, r, (void)0);
    free(r);
    if (rc == -EBUSY)
        snprintf(why, whylen, "the file changed while it was uploaded; it is not archived");
    return rc;
}

int stria_hsm_release(stria_fs_t *fs, uint64_t ino)
{
    struct proto_hsm_set_req q = {.ino = ino, .op = HSM_OP_RELEASE};
    struct proto_hsm_set_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    int rc = MDT_CALL(fs, proto_ino_mdt(ino), hsm_set, &q, r, (void)0);
    /* Marked released first: the data is in S3 before the objects go. */
    if (rc == 0 && r->layout.ncomp)
        rc = io_objects(fs, ino, &r->layout, IO_DESTROY, 0);
    free(r);
    return rc;
}

int stria_hsm_restore(stria_fs_t *fs, uint64_t ino, stria_progress_fn fn, void *arg, char *why,
                      size_t whylen)
{
    return hsm_restore_ino(fs, ino, fn, arg, why, whylen);
}

int stria_hsm_import(stria_fs_t *fs, uint64_t parent, const char *name, uint64_t repo,
                     const char *key, const char *etag, uint64_t size, int64_t mtime_ns,
                     mode_t mode, uint64_t gen, int flags, int *result, uint64_t *ino)
{
    if (!name || !cl_one_name(name) || !key || !etag)
        return -EINVAL;
    struct proto_hsm_import_req q = {.repo = repo,
                                     .key = proto_str_c(key),
                                     .etag = proto_str_c(etag),
                                     .size = size,
                                     .mtime_ns = mtime_ns,
                                     .mode = (uint32_t)mode,
                                     .gen = gen,
                                     .flags = (uint8_t)flags};
    struct proto_hsm_import_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    int rc =
        ROUTED_CALL(fs, parent, name, parent, name, hsm_import, &q, r,
                    cl_note(fs, sent, &r->leases, parent, name, r->attr.ino, 0, NULL, &r->attr));
    if (rc == 0) {
        if (result)
            *result = r->result;
        if (ino)
            *ino = r->attr.ino;
    }
    free(r);
    return rc;
}

int stria_repo_call(stria_fs_t *fs, int op, uint64_t dir, const char *conf, size_t len, void *out,
                    size_t cap, size_t *outlen)
{
    if (len > PROTO_MAX_REPO_CONF)
        return -E2BIG;
    struct proto_repo_req q = {
        .op = (uint8_t)op, .dir = dir, .conf = {(const uint8_t *)conf, (uint32_t)len}};
    struct proto_repo_rep r;
    size_t got = 0;
    cl_cred(&q.cred);
    int rc = MDT_CALL(fs, 0, repo, &q, &r, ({
                          got = r.repos.len;
                          if (got > cap)
                              rc_ = -ERANGE;
                          else if (got)
                              memcpy(out, r.repos.p, got);
                      }));
    if (outlen)
        *outlen = rc ? 0 : got;
    return rc;
}

int stria_s3_list(stria_fs_t *fs, const struct stria_s3_target *t, const char *prefix,
                  const char *start_after, unsigned max,
                  int (*cb)(const struct stria_s3_obj *o, void *arg), void *arg, int *more,
                  char *why, size_t whylen)
{
    uint32_t ost;
    int rc = hsm_any_ost(fs, &ost);
    if (rc)
        return rc;
    struct proto_s3_list_req q = {.prefix = proto_str_c(prefix ? prefix : ""),
                                  .start_after = proto_str_c(start_after ? start_after : ""),
                                  .max = max};
    TARGET_FIELDS(q, t);
    struct proto_s3_list_rep r;
    uint8_t *page = NULL;
    uint32_t plen = 0;
    int s3err = 0;
    *more = 0;
    rc = TARGET_CALL(fs, PROTO_NODE_STOR, ost, s3_list, &q, &r, ({
                         s3err = r.s3err;
                         if (s3err && why)
                             hsm_copy_str(why, whylen, &r.why);
                         *more = r.more;
                         plen = r.entries.len;
                         if (plen && !(page = malloc(plen)))
                             rc_ = -ENOMEM;
                         else if (plen)
                             memcpy(page, r.entries.p, plen);
                     }));
    if (rc == 0)
        rc = s3err;
    struct proto_dec d;
    proto_dec_init(&d, page, plen);
    char key[PROTO_MAX_S3_KEY + 1], etag[130];
    while (rc == 0 && d.off < d.len) {
        struct proto_str k, e;
        struct stria_s3_obj o;
        proto_get_STR(&d, &k);
        proto_get_U64(&d, &o.size);
        proto_get_I64(&d, &o.mtime_ns);
        proto_get_STR(&d, &e);
        if (d.err || k.len > PROTO_MAX_S3_KEY) {
            rc = -EBADMSG;
            break;
        }
        hsm_copy_str(key, sizeof(key), &k);
        hsm_copy_str(etag, sizeof(etag), &e);
        o.key = key;
        o.etag = etag;
        rc = cb ? cb(&o, arg) : 0;
    }
    free(page);
    return rc;
}

int stria_s3_head(stria_fs_t *fs, const struct stria_s3_target *t, const char *key,
                  struct stria_s3_obj *out, char *etag, size_t etaglen, char *why, size_t whylen)
{
    uint32_t ost;
    int rc = hsm_any_ost(fs, &ost);
    if (rc)
        return rc;
    struct proto_s3_head_req q = {.key = proto_str_c(key)};
    TARGET_FIELDS(q, t);
    struct proto_s3_head_rep r;
    int s3err = 0;
    rc = TARGET_CALL(fs, PROTO_NODE_STOR, ost, s3_head, &q, &r, ({
                         s3err = r.s3err;
                         if (s3err && why)
                             hsm_copy_str(why, whylen, &r.why);
                         out->key = key;
                         out->size = r.size;
                         out->mtime_ns = r.mtime_ns;
                         hsm_copy_str(etag, etaglen, &r.etag);
                         out->etag = etag;
                     }));
    return rc ? rc : s3err;
}

int stria_released(stria_fs_t *fs, uint64_t *bytes, uint64_t *files)
{
    *bytes = *files = 0;
    uint32_t n = __atomic_load_n(&fs->mdt_count, __ATOMIC_RELAXED);
    for (uint32_t m = 0; m < n; m++) {
        struct proto_statfs_req q;
        struct proto_statfs_rep *r = malloc(sizeof(*r));
        if (!r)
            return -ENOMEM;
        int rc = MDT_CALL(fs, m, statfs, &q, r, ({
                              *bytes += r->released_bytes;
                              *files += r->released_files;
                          }));
        free(r);
        if (rc)
            return rc;
    }
    return 0;
}
