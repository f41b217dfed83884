/*
 * Data repositories on S3 (hsm.h), the MDT's side. A file's HSM record is
 * kept with its inode (store/hsm_rec.h); a released file's layout carries
 * LAYOUT_F_RELEASED, so every change of that flag is a change of the inode
 * (put, hence its leases revoked) and of the MDT's released counters, in
 * one transaction. The repositories are reserved-name xattrs of the root
 * inode on MDT 0, one per repository directory.
 *
 * The MDT never speaks S3: movers and clients tell it what they did
 * (ARCHIVED, RESTORED, LOST) and it checks that the file is still what
 * they copied, refusing (EBUSY, ESTALE) otherwise.
 */
#include "hsm.h"
#include "alloc.h"

#include "../../common/log.h"
#include "../../proto/layout.h"
#include "../store/dom_rec.h"
#include "../store/hsm_rec.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The key and etag of a request as C strings: -EINVAL when empty or too
 * long (a key over PROTO_MAX_S3_KEY, an etag over META_HSM_ETAG_MAX). */
static int copy_obj(const struct proto_str *key, const struct proto_str *etag, struct meta_hsm *h)
{
    if (key && (!key->len || proto_str_copy(key, h->key, sizeof(h->key))))
        return -EINVAL;
    if (!etag->len || proto_str_copy(etag, h->etag, sizeof(h->etag)))
        return -EINVAL;
    return 0;
}

/* ---- HSM_GET ---- */

static int hsm_get_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
    const struct proto_hsm_get_req *q = a->q;
    struct proto_hsm_get_rep *r = a->r;
    struct meta_inode in;
    struct meta_hsm h;
    /* Anyone may, as GETATTR: search permission was the path's. */
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    meta_inode_attr(&in, &r->attr);
    if (!S_ISREG(in.mode) || (rc = meta_hsm_get(t, &in, &h)) == -ENOENT)
        return 0;
    if (rc)
        return rc;
    size_t klen = strlen(h.key), elen = strlen(h.etag);
    if (klen + elen > a->buflen)
        return -EOVERFLOW;
    memcpy(a->buf, h.key, klen);
    memcpy(a->buf + klen, h.etag, elen);
    r->state = meta_hsm_state(&h, &in);
    r->repo = h.repo;
    r->key = (struct proto_str){(const char *)a->buf, (uint32_t)klen};
    r->etag = (struct proto_str){(const char *)a->buf + klen, (uint32_t)elen};
    r->arch_size = h.size;
    r->arch_mtime_ns = h.mtime_ns;
    r->gen = h.gen;
    return 0;
}

int meta_op_hsm_get(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ino_arg a = {rq->ctx, qv, rv, rq->buf, rq->buf_len, 0};
    return meta_store_read(rq->ctx->store, rq, hsm_get_txn, &a);
}

/* ---- HSM_SET ---- */

/* Change in's RELEASED state (record h, layout, counters); the caller puts
 * both. Restored data is on the OSTs again: objects exist. */
static int set_released(struct meta_txn *t, struct meta_inode *in, struct meta_hsm *h, bool on)
{
    if (on)
        h->state |= HSM_RELEASED;
    else
        h->state &= ~HSM_RELEASED;
    layout_set_released(&in->layout, on);
    if (!on)
        in->flags |= META_F_OBJECTS;
    return meta_hsm_count(t, on ? (int64_t)in->size : -(int64_t)in->size, on ? 1 : -1);
}

/* What HSM_SET's op does to in and its record h (has: there is one).
 * *put: the record changed; *put_in: the inode did. */
static int set_op(struct meta_txn *t, const struct proto_hsm_set_req *q, struct meta_inode *in,
                  struct meta_hsm *h, bool has, bool *put, bool *put_in)
{
    struct meta_hsm o;
    bool released = meta_hsm_is_released(in);
    int rc;
    switch (q->op) {
    case HSM_OP_ARCHIVED:
        if (!q->repo || (rc = copy_obj(&q->key, &q->etag, &o)))
            return -EINVAL;
        /* It changed while it was being copied. */
        if (in->size != q->size || in->mtime_ns != q->mtime_ns)
            return -EBUSY;
        if (released) {
            /* Its data is only in its object: the same one, or no other. */
            bool same =
                has && h->repo == q->repo && !strcmp(h->key, o.key) && !strcmp(h->etag, o.etag);
            return same ? 0 : -EBUSY;
        }
        h->state = (h->state | HSM_EXISTS | HSM_ARCHIVED) & ~HSM_LOST;
        h->repo = q->repo;
        h->size = q->size;
        h->mtime_ns = q->mtime_ns;
        memcpy(h->key, o.key, sizeof(h->key));
        memcpy(h->etag, o.etag, sizeof(h->etag));
        *put = true;
        return 0;
    case HSM_OP_RELEASE:
        if (released)
            return 0;
        if (!has || !(h->state & HSM_ARCHIVED) || (h->state & HSM_LOST) || meta_hsm_dirty(h, in))
            return -EPERM;
        *put = *put_in = true;
        return set_released(t, in, h, true);
    case HSM_OP_RESTORED:
    case HSM_OP_LOST:
        if ((rc = copy_obj(NULL, &q->etag, &o)))
            return rc;
        if (!has || strcmp(h->etag, o.etag))
            return -ESTALE;
        *put = true;
        if (q->op == HSM_OP_LOST) {
            h->state |= HSM_LOST;
            return 0;
        }
        if (!released)
            return 0;
        *put_in = true;
        return set_released(t, in, h, false);
    default:
        return -EINVAL;
    }
}

static int hsm_set_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
    const struct proto_hsm_set_req *q = a->q;
    struct proto_hsm_set_rep *r = a->r;
    struct meta_inode in;
    struct meta_hsm h;
    bool put = false, put_in = false;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    /* RESTORED and LOST are facts a reader finds (checked against the
     * etag), not changes it asks for: anyone who may read the file says
     * them. The rest is its owner's (or root's). */
    bool fact = q->op == HSM_OP_RESTORED || q->op == HSM_OP_LOST;
    if (fact ? !proto_cred_may(&q->cred, in.mode, in.uid, in.gid, 4)
             : q->cred.uid != 0 && q->cred.uid != in.uid)
        return fact ? -EACCES : -EPERM;
    if (!S_ISREG(in.mode))
        return -EINVAL;
    if ((rc = meta_hsm_get(t, &in, &h)) && rc != -ENOENT)
        return rc;
    if ((rc = set_op(t, q, &in, &h, rc == 0, &put, &put_in)))
        return rc;
    if (put && !(in.flags & META_F_HSM)) {
        in.flags |= META_F_HSM;
        put_in = true;
    }
    if ((put && (rc = meta_hsm_put(t, in.ino, &h))) || (put_in && (rc = meta_inode_put(t, &in))))
        return rc;
    r->state = meta_hsm_state(&h, &in);
    meta_inode_attr(&in, &r->attr);
    layout_copy(&r->layout, &in.layout);
    return 0;
}

int meta_op_hsm_set(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ino_arg a = {rq->ctx, qv, rv, NULL, 0, 0};
    return meta_store_write(rq->ctx->store, rq, hsm_set_txn, &a);
}

/* ---- HSM_IMPORT ---- */

struct import_arg {
    struct meta_ctx *c;
    const struct proto_hsm_import_req *q;
    struct proto_hsm_import_rep *r;
    struct meta_hsm h; /* the object, as the request describes it */
};

/* Name w's entry the released copy of the request's object: a new inode
 * with the directory's default layout, holding no objects. Without old,
 * a new entry, with the request's mode and the owner a create gives;
 * else old's entry, mode and owner. result goes to the reply with the new
 * file. */
static int import_file(struct meta_txn *t, struct import_arg *a, struct walk *w,
                       const struct meta_inode *old, uint8_t result)
{
    const struct proto_hsm_import_req *q = a->q;
    struct meta_inode in;
    uint64_t ino;
    int rc;
    if ((rc = meta_alloc_ino(t, &ino)))
        return rc;
    meta_init_inode(&in, ino, S_IFREG | ((old ? old->mode : q->mode) & 07777), &q->cred, &w->din);
    if (old) {
        in.uid = old->uid;
        in.gid = old->gid;
    }
    if ((rc = meta_new_file_layout(a->c, &w->din, 0, 0, -1, &in.layout)))
        return rc;
    /* The storage hosts bring a released file's bytes back onto OSTs:
     * an imported file takes the directory's stripes without its
     * Data-on-MDT component. */
    if (layout_dom_size(&in.layout) &&
        (rc = meta_alloc_layout(a->c, w->din.dcount ? w->din.dcount : a->c->default_count,
                                w->din.dsize ? w->din.dsize : a->c->default_size, -1, NULL,
                                &in.layout)))
        return rc;
    layout_set_released(&in.layout, true);
    in.size = q->size;
    in.atime_ns = in.mtime_ns = q->mtime_ns;
    in.flags |= META_F_HSM;
    rc = old ? meta_dentry_set(t, w->dir, w->name, ino, DT_REG)
             : meta_dentry_add(t, w->dir, w->name, ino, DT_REG);
    if (rc || (rc = meta_inode_put(t, &in)) || (rc = meta_hsm_put(t, ino, &a->h)) ||
        (rc = meta_hsm_count(t, (int64_t)in.size, 1)) || (rc = meta_touch_dir(t, &w->din, 0)))
        return rc;
    a->r->result = result;
    meta_inode_attr(&in, &a->r->attr);
    layout_copy(&a->r->layout, &in.layout);
    return 0;
}

/* The name does not exist: make it, as an O_CREAT|O_EXCL open would. */
static int import_new(struct meta_txn *t, struct import_arg *a, struct walk *w)
{
    return import_file(t, a, w, NULL, HSM_IMPORTED);
}

/* The object changed and the file did not: the name takes a new inode,
 * released, for the new object, with old's owner and mode. old keeps its
 * objects and record, nameless, for the readers that opened it: they go
 * on reading the version they opened, never the new one's bytes, which
 * land in other objects. HSM_REAP takes old later. */
static int import_supersede(struct meta_txn *t, struct import_arg *a, struct walk *w,
                            struct meta_inode *old)
{
    old->nlink = 0;
    old->flags = (old->flags | META_F_SUPERSEDED) & ~META_F_REMOTE_NAMES;
    old->ctime_ns = meta_now_ns();
    int rc = meta_inode_put(t, old);
    if (rc || (rc = meta_pending_put(t, old->ino)))
        return rc;
    return import_file(t, a, w, old, HSM_UPDATED);
}

/* The name holds inode ino: stamp it, supersede it, or keep it. */
static int import_existing(struct meta_txn *t, struct import_arg *a, struct walk *w, uint64_t ino)
{
    const struct proto_hsm_import_req *q = a->q;
    struct proto_hsm_import_rep *r = a->r;
    struct meta_inode in;
    struct meta_hsm h;
    r->result = HSM_KEPT;
    int rc = meta_inode_get_here(t, ino, &in);
    if (rc == -EREMOTE) {
        r->attr.ino = ino; /* another MDT's file: not one this import made */
        return 0;
    }
    if (rc)
        return rc;
    meta_inode_attr(&in, &r->attr);
    if (!S_ISREG(in.mode) || (rc = meta_hsm_get(t, &in, &h)) == -ENOENT)
        return 0;
    if (rc)
        return rc;
    if (h.repo != q->repo || strcmp(h.key, a->h.key))
        return 0;
    if (!strcmp(h.etag, a->h.etag)) {
        r->result = HSM_UNCHANGED;
        h.gen = q->gen;
        return meta_hsm_put(t, ino, &h);
    }
    /* A second link would go on naming the old data. */
    if (!(q->flags & HSM_IMPORT_CHANGED) || !(h.state & HSM_ARCHIVED) || meta_hsm_dirty(&h, &in) ||
        in.nlink != 1)
        return 0;
    return import_supersede(t, a, w, &in);
}

static int import_txn(struct meta_txn *t, void *arg)
{
    struct import_arg *a = arg;
    const struct proto_hsm_import_req *q = a->q;
    char name[PROTO_MAX_NAME + 1];
    int rc = proto_str_copy(&q->name, name, sizeof(name));
    if (rc)
        return rc;
    if (strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        return -EINVAL;
    if ((rc = meta_valid_name(name)))
        return rc;
    /* The walk checks search permission and that the name is this MDT's
     * (-EREMOTE else); adding or changing names needs write, as a create. */
    struct walk w = {.links_left = 0};
    uint64_t ino;
    if ((rc = meta_walk_parent(t, &q->cred, q->parent, name, &w)) ||
        (rc = meta_may_add(&w, &q->cred)))
        return rc;
    rc = meta_dentry_get(t, w.dir, w.name, &ino, NULL);
    if (rc == -ENOENT)
        return import_new(t, a, &w);
    return rc ? rc : import_existing(t, a, &w, ino);
}

int meta_op_hsm_import(const struct meta_req *rq, const void *qv, void *rv)
{
    const struct proto_hsm_import_req *q = qv;
    struct import_arg a = {.c = rq->ctx, .q = q, .r = rv};
    int rc = copy_obj(&q->key, &q->etag, &a.h);
    if (rc || !q->repo || (q->flags & ~HSM_IMPORT_CHANGED))
        return -EINVAL;
    a.h.state = HSM_EXISTS | HSM_ARCHIVED | HSM_RELEASED;
    a.h.repo = q->repo;
    a.h.size = q->size;
    a.h.mtime_ns = q->mtime_ns;
    a.h.gen = q->gen;
    return meta_run_waiting(rq, META_RUN_WRITE, import_txn, &a);
}

/* ---- REPO ---- */

struct repo_arg {
    const struct proto_repo_req *q;
    struct proto_repo_rep *r;
    uint8_t *buf; /* LIST, GET: where repos is written; NULL: only counted */
    size_t cap, len;
    struct meta_txn *t;
};

static void repo_name(char *name, size_t cap, uint64_t dir)
{
    snprintf(name, cap, META_XATTR_REPO_PREFIX "%016llx", (unsigned long long)dir);
}

/* One repository's entry in a listing: {U64 dir, U32 len, conf}. */
static int repo_entry(struct repo_arg *a, uint64_t dir, const void *conf, size_t len)
{
    if (a->len + 12 + len > a->cap)
        return -ENOSPC;
    if (a->buf) {
        struct proto_enc e;
        uint32_t l = (uint32_t)len;
        proto_enc_init(&e, a->buf + a->len, 12);
        proto_put_U64(&e, &dir);
        proto_put_U32(&e, &l);
        memcpy(a->buf + a->len + 12, conf, len);
    }
    a->len += 12 + len;
    return 0;
}

/* Each of the root's xattrs that is a repository, into the listing (but
 * the one of the request's dir when it is being replaced). */
static int repo_list_cb(void *arg, const char *name, size_t len)
{
    struct repo_arg *a = arg;
    size_t plen = strlen(META_XATTR_REPO_PREFIX);
    char n[PROTO_MAX_NAME + 1], *end;
    if (len <= plen || len > PROTO_MAX_NAME || memcmp(name, META_XATTR_REPO_PREFIX, plen))
        return 0;
    memcpy(n, name, len);
    n[len] = '\0';
    uint64_t dir = strtoull(n + plen, &end, 16);
    if (*end || (!a->buf && dir == a->q->dir))
        return 0;
    MDB_val v;
    int rc = meta_xattr_get(a->t, PROTO_ROOT_INO, n, &v);
    return rc ? rc : repo_entry(a, dir, v.mv_data, v.mv_size);
}

static int repo_txn(struct meta_txn *t, void *arg)
{
    struct repo_arg *a = arg;
    const struct proto_repo_req *q = a->q;
    char name[PROTO_MAX_NAME + 1];
    MDB_val v;
    a->t = t;
    a->len = 0; /* the transaction may run again */
    repo_name(name, sizeof(name), q->dir);
    int rc = q->op == REPO_OP_LIST ? 0 : meta_xattr_get(t, PROTO_ROOT_INO, name, &v);
    if (rc && rc != -ENOENT)
        return rc;
    switch (q->op) {
    case REPO_OP_LIST:
        rc = meta_xattr_list(t, PROTO_ROOT_INO, repo_list_cb, a);
        break;
    case REPO_OP_GET:
        rc = rc ? rc : repo_entry(a, q->dir, v.mv_data, v.mv_size);
        break;
    case REPO_OP_ADD:
    case REPO_OP_SET:
        if (q->op == REPO_OP_ADD && rc == 0)
            return -EEXIST;
        if (q->op == REPO_OP_SET && rc)
            return rc;
        /* Every listing must fit one reply: count it with this one. */
        if ((rc = meta_xattr_list(t, PROTO_ROOT_INO, repo_list_cb, a)) ||
            (rc = repo_entry(a, q->dir, NULL, q->conf.len)))
            return rc;
        return meta_xattr_put(t, PROTO_ROOT_INO, name, q->conf.p, q->conf.len);
    case REPO_OP_DEL:
        return rc ? rc : meta_xattr_del(t, PROTO_ROOT_INO, name);
    }
    if (rc)
        return rc;
    a->r->repos = (struct proto_blob){a->buf, (uint32_t)a->len};
    return 0;
}

int meta_op_repo(const struct meta_req *rq, const void *qv, void *rv)
{
    const struct proto_repo_req *q = qv;
    struct repo_arg a = {.q = q, .r = rv, .cap = META_REPO_BUF};
    if (meta_store_mdt(rq->ctx->store) != 0)
        return -EINVAL; /* MDT 0 keeps them */
    if (q->op < REPO_OP_ADD || q->op > REPO_OP_GET || (q->op != REPO_OP_LIST && !q->dir))
        return -EINVAL;
    if (q->op == REPO_OP_LIST || q->op == REPO_OP_GET) {
        if (!rq->buf || rq->buf_len < a.cap)
            return -ENOMEM;
        a.buf = rq->buf;
        return meta_store_read(rq->ctx->store, rq, repo_txn, &a);
    }
    if (q->cred.uid != 0)
        return -EPERM;
    if (q->conf.len > PROTO_MAX_REPO_CONF)
        return -E2BIG;
    return meta_store_write(rq->ctx->store, rq, repo_txn, &a);
}

/* ---- HSM_GONE ---- */

/* LIST's entries, encoded as they come until max or the buffer is full. */
struct gone_list {
    struct proto_enc e;
    uint64_t after;
    uint32_t max, n;
    bool more;
};

static int gone_list_one(void *arg, const struct meta_gone *g)
{
    struct gone_list *a = arg;
    size_t before = a->e.len;
    struct proto_str key = proto_str_c(g->key), etag = proto_str_c(g->etag);
    if (a->n < a->max) {
        proto_put_U64(&a->e, &g->id);
        proto_put_U64(&a->e, &g->repo);
        proto_put_STR(&a->e, &key);
        proto_put_STR(&a->e, &etag);
        if (!a->e.err) {
            a->n++;
            return 0;
        }
    }
    /* No room: this one and the rest are for the next request. */
    a->e.len = before;
    a->e.err = 0;
    a->more = true;
    return 1;
}

static int gone_list_txn(struct meta_txn *t, void *arg)
{
    struct gone_list *a = arg;
    return meta_gone_scan(t, a->after, gone_list_one, a);
}

/* Tombstones dropped per transaction, so that dropping a million holds
 * the batch leader no longer than other writes do. */
#define GONE_DROP_BATCH 4096

struct gone_drop {
    uint64_t after, upto, n;
    bool more;
};

static int gone_drop_txn(struct meta_txn *t, void *arg)
{
    struct gone_drop *a = arg;
    return meta_gone_drop(t, a->after, a->upto, GONE_DROP_BATCH, &a->n, &a->more);
}

int meta_op_hsm_gone(const struct meta_req *rq, const void *qv, void *rv)
{
    const struct proto_hsm_gone_req *q = qv;
    struct proto_hsm_gone_rep *r = rv;
    struct meta_store *s = rq->ctx->store;
    int rc;
    /* Keys name files of directories any user may not have seen. */
    if (q->cred.uid != 0)
        return -EPERM;
    if (q->op == HSM_GONE_LIST) {
        if (q->max < 1 || q->max > HSM_GONE_MAX)
            return -EINVAL;
        if (!rq->buf || rq->buf_len < META_GONE_BUF)
            return -ENOMEM;
        struct gone_list l = {.after = q->after, .max = q->max};
        proto_enc_init(&l.e, rq->buf, META_GONE_BUF);
        if ((rc = meta_store_read(s, rq, gone_list_txn, &l)))
            return rc;
        r->entries = (struct proto_blob){rq->buf, (uint32_t)l.e.len};
        r->more = l.more;
        r->count = l.n;
        return 0;
    }
    if (q->op != HSM_GONE_DROP)
        return -EINVAL;
    struct gone_drop d = {.after = q->after, .upto = q->upto};
    uint64_t total = 0;
    do {
        rc = meta_store_write(s, rq, gone_drop_txn, &d);
        if (rc == 0)
            total += d.n;
    } while (rc == 0 && d.more);
    r->count = total;
    if (total)
        log_info("MDT%04x: %llu tombstone(s) of ids in (%llu, %llu] dropped", meta_store_mdt(s),
                 (unsigned long long)total, (unsigned long long)q->after,
                 (unsigned long long)q->upto);
    if (rc)
        log_error("MDT%04x: dropping tombstones up to %llu failed after %llu: %s",
                  meta_store_mdt(s), (unsigned long long)q->upto, (unsigned long long)total,
                  log_err(rc));
    return rc;
}

/* ---- HSM_REAP ---- */

struct reap_find {
    const struct proto_hsm_reap_req *q;
    struct proto_hsm_reap_rep *r;
    struct meta_txn *t;
    int64_t before; /* superseded at or before this time */
    struct meta_inode in;
    int err;
};

static int reap_look(void *arg, uint64_t ino)
{
    struct reap_find *a = arg;
    if (ino <= a->q->after)
        return 0;
    int rc = meta_inode_get(a->t, ino, &a->in);
    if (rc == -ENOENT)
        return 0; /* a file removed while open: its client destroys */
    if (rc) {
        a->err = rc;
        return 1;
    }
    if (!(a->in.flags & META_F_SUPERSEDED) || a->in.ctime_ns > a->before)
        return 0;
    if (a->q->repo) {
        struct meta_hsm h;
        rc = meta_hsm_get(a->t, &a->in, &h);
        if (rc && rc != -ENOENT) {
            a->err = rc;
            return 1;
        }
        if (rc || h.repo != a->q->repo)
            return 0;
    }
    a->r->ino = ino;
    layout_copy(&a->r->layout, &a->in.layout);
    a->r->objects = meta_objects_may_exist(&a->in);
    return 1;
}

static int reap_list_txn(struct meta_txn *t, void *arg)
{
    struct reap_find *a = arg;
    a->t = t;
    int rc = meta_pending_scan(t, reap_look, a);
    return rc < 0 ? rc : a->err; /* 1: reap_look stopped it */
}

static int reap_drop_txn(struct meta_txn *t, void *arg)
{
    uint64_t ino = *(const uint64_t *)arg;
    struct meta_inode in;
    int rc = meta_inode_get(t, ino, &in);
    if (rc)
        return rc;
    if (!(in.flags & META_F_SUPERSEDED))
        return -ENOENT;
    if ((rc = meta_hsm_forget(t, &in)) || (rc = meta_inode_del(t, ino)) ||
        (rc = meta_xattr_del_all(t, ino)) || (rc = meta_pending_del(t, ino)))
        return rc;
    if (layout_dom_size(&in.layout) && (rc = meta_dom_del(t, ino)))
        return rc;
    return 0;
}

int meta_op_hsm_reap(const struct meta_req *rq, const void *qv, void *rv)
{
    const struct proto_hsm_reap_req *q = qv;
    struct proto_hsm_reap_rep *r = rv;
    struct meta_store *s = rq->ctx->store;
    if (q->cred.uid != 0)
        return -EPERM;
    if (q->op == HSM_REAP_LIST) {
        struct reap_find *a = calloc(1, sizeof(*a));
        if (!a)
            return -ENOMEM;
        a->q = q;
        a->r = r;
        int64_t age =
            q->age_ms > (uint64_t)INT64_MAX / 1000000 ? INT64_MAX / 1000000 : (int64_t)q->age_ms;
        a->before = meta_now_ns() - age * 1000000;
        r->ino = 0;
        int rc = meta_store_read(s, rq, reap_list_txn, a);
        free(a);
        return rc;
    }
    if (q->op != HSM_REAP_DROP || !q->ino)
        return -EINVAL;
    int rc = meta_store_write(s, rq, reap_drop_txn, (void *)&q->ino);
    if (rc == 0)
        log_info("MDT%04x: superseded inode %llx reaped", meta_store_mdt(s),
                 (unsigned long long)q->ino);
    return rc;
}
