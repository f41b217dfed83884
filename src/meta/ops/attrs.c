/*
 * Attributes (attrs.h): lookup, getattr, setattr, setsize, readlink and
 * DESTROYED. A change to a striped directory's attributes notes an
 * attribute copy in its transaction and runs it before the reply.
 */
#include "attrs.h"
#include "alloc.h"
#include "dom.h"
#include "intent.h"
#include "recover.h"

#include "../../common/log.h"
#include "../../common/util.h"
#include "../../proto/layout.h"
#include "../store/dom_rec.h"
#include "../store/hsm_rec.h"
#include "../store/mig_rec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
struct lookup_arg {
    struct meta_ctx *c;
    const struct meta_req *rq;
    const struct proto_lookup_req *q;
    struct proto_lookup_rep *r;
    uint8_t *dom;   /* the bytes sent with the reply (in rq's scratch) */
    uint32_t dom_n; /* how many (0: none) */
};

static int lookup_txn(struct meta_txn *t, void *arg)
{
    struct lookup_arg *a = arg;
    char path[PROTO_MAX_STR + 1];
    int rc = proto_str_copy(&a->q->path, path, sizeof(path));
    if (rc)
        return rc;
    struct meta_inode in;
    if ((rc = meta_walk_full(t, &a->q->cred, a->q->parent, path, a->q->follow, &in)) < 0)
        return rc;
    meta_inode_attr(&in, &a->r->attr);
    a->r->remote = rc == 1;
    a->dom_n = 0; /* a run again starts afresh */
    if (rc != 1 && S_ISREG(in.mode)) {
        layout_copy(&a->r->layout, &in.layout);
        if (a->q->dom_len)
            a->dom_n = meta_dom_take(t, a->rq, &in, a->q->dom_len, &a->dom);
    }
    return 0;
}

int meta_op_lookup(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_lookup_req *q = qv;
    struct proto_lookup_rep *r = rv;
    struct lookup_arg a = {.c = c, .rq = rq, .q = q, .r = r};
    int rc = meta_run_waiting(rq, META_RUN_READ, lookup_txn, &a);
    if (rc == 0 && a.dom_n)
        meta_dom_send(rq, a.dom, a.dom_n, &r->dom_crcs);
    return rc;
}

static int getattr_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
    const struct proto_getattr_req *q = a->q;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    meta_inode_attr(&in, &((struct proto_getattr_rep *)a->r)->attr);
    return 0;
}

int meta_op_getattr(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_getattr_req *q = qv;
    struct proto_getattr_rep *r = rv;
    struct meta_ino_arg a = {c, q, r, NULL, 0, 0};
    return meta_store_read(c->store, rq, getattr_txn, &a);
}

static int lease_attrs_txn(struct meta_txn *t, void *arg)
{
    struct proto_leases *ls = arg;
    for (uint32_t i = 0; i < ls->n; i++) {
        struct proto_lease *l = &ls->l[i];
        struct meta_inode in;
        if (l->ms && !l->has_attr && meta_inode_get(t, l->ino, &in) == 0) {
            meta_inode_attr(&in, &l->attr);
            l->has_attr = 1;
        }
    }
    return 0;
}

void meta_op_lease_attrs(struct meta_ctx *c, const struct meta_touched *touched,
                         struct proto_leases *ls)
{
    bool missing = false;
    for (uint32_t i = 0; i < ls->n; i++) {
        struct proto_lease *l = &ls->l[i];
        for (uint32_t k = 0; l->ms && k < touched->n && !l->has_attr; k++)
            if (touched->ino[k] == l->ino && touched->has_attr[k]) {
                l->attr = touched->attr[k];
                l->has_attr = 1;
            }
        missing |= l->ms && !l->has_attr;
    }
    /* A directory whose names changed but whose record was not written. */
    if (missing)
        meta_store_read(c->store, NULL, lease_attrs_txn, ls);
}

static int setattr_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
    const struct proto_setattr_req *q = a->q;
    struct proto_setattr_rep *r = a->r;
    const struct proto_cred *c = &q->cred;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    bool owner = c->uid == 0 || c->uid == in.uid;
    int64_t now = meta_now_ns();
    if (q->valid & SETATTR_MODE) {
        /* A writer's kernel clears setuid/setgid when it writes or
         * truncates: a change that only drops those bits is allowed to
         * anyone who may write the file. */
        uint32_t privs = S_ISUID | S_ISGID, cur = in.mode & 07777;
        bool drops_privs = (q->mode & 07777) == (cur & ~privs) && (cur & privs);
        if (!owner && !(drops_privs && meta_may(&in, c, 2) == 0))
            return -EPERM;
        uint32_t mode = q->mode & 07777;
        /* A non-owner group may not keep setgid (as Linux). */
        if (c->uid != 0 && owner && !proto_cred_in_group(c, in.gid))
            mode &= ~(uint32_t)S_ISGID;
        in.mode = (in.mode & S_IFMT) | mode;
    }
    if (q->valid & (SETATTR_UID | SETATTR_GID)) {
        bool uid_change = (q->valid & SETATTR_UID) && q->uid != in.uid;
        bool gid_change = (q->valid & SETATTR_GID) && q->gid != in.gid;
        if (c->uid != 0 &&
            (uid_change || (gid_change && (c->uid != in.uid || !proto_cred_in_group(c, q->gid)))))
            return -EPERM;
        if (q->valid & SETATTR_UID)
            in.uid = q->uid;
        if (q->valid & SETATTR_GID)
            in.gid = q->gid;
        if ((uid_change || gid_change) && !S_ISDIR(in.mode))
            in.mode &= ~(uint32_t)(S_ISUID | S_ISGID);
    }
    if (q->valid & SETATTR_SIZE) {
        if (S_ISDIR(in.mode))
            return -EISDIR;
        if (!S_ISREG(in.mode))
            return -EINVAL;
        if (!(q->valid & SETATTR_WRITER) && (rc = meta_may(&in, c, 2)))
            return rc;
        /* A released file's data is in S3: clients restore it before any
         * size change but to 0, which makes it irrelevant. */
        if (meta_hsm_is_released(&in) && (q->size || (rc = meta_hsm_truncated(t, &in))))
            return q->size ? -EBUSY : rc;
        r->old_size = in.size;
        layout_copy(&r->layout, &in.layout);
        /* The bytes on this MDT shrink here (a migration copying them
         * hears of it); the OSTs' are the client's. */
        if (q->size < in.size && layout_dom_size(&in.layout) &&
            ((rc = meta_dom_truncate(t, in.ino, q->size)) ||
             (rc = meta_mig_dom_changed(t, in.ino))))
            return rc;
        if (q->size != in.size)
            in.mtime_ns = now;
        in.size = q->size;
        if (q->size)
            in.flags |= META_F_OBJECTS;
        /* Also when the kernel leaves it to us (FUSE_HANDLE_KILLPRIV_V2). */
        in.mode &= ~meta_truncate_drops(&in, c);
    }
    if (q->valid & (SETATTR_ATIME | SETATTR_MTIME | SETATTR_ATIME_NOW | SETATTR_MTIME_NOW)) {
        /* Explicit times need ownership, "now" only write access; a kernel
         * that checked already sends touch as explicit times. */
        bool explicit_time =
            (q->valid & (SETATTR_ATIME | SETATTR_MTIME)) && !(q->valid & SETATTR_TIMES_CHECKED);
        if (!owner && (explicit_time || meta_may(&in, c, 2)))
            return explicit_time ? -EPERM : -EACCES;
        if (q->valid & SETATTR_ATIME_NOW)
            in.atime_ns = now;
        else if (q->valid & SETATTR_ATIME)
            in.atime_ns = q->atime_ns;
        if (q->valid & SETATTR_MTIME_NOW)
            in.mtime_ns = now;
        else if (q->valid & SETATTR_MTIME)
            in.mtime_ns = q->mtime_ns;
    }
    in.ctime_ns = now;
    unsigned times = (q->valid & (SETATTR_ATIME | SETATTR_ATIME_NOW) ? XF_SYNC_ATIME : 0) |
                     (q->valid & (SETATTR_MTIME | SETATTR_MTIME_NOW) ? XF_SYNC_MTIME : 0);
    if ((rc = meta_inode_put(t, &in)) || (rc = meta_xsync_note(a->c, t, &in, times, &a->xsync)))
        return rc;
    meta_inode_attr(&in, &r->attr);
    return 0;
}

int meta_op_setattr(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_setattr_req *q = qv;
    struct proto_setattr_rep *r = rv;
    struct meta_ino_arg a = {c, q, r, NULL, 0, 0};
    int rc = meta_store_write(c->store, rq, setattr_txn, &a);
    return meta_xsync_after(c, rc, a.xsync);
}

static int readlink_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
    const struct proto_readlink_req *q = a->q;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    if (!S_ISLNK(in.mode))
        return -EINVAL;
    MDB_val v;
    if ((rc = meta_symlink_get(t, q->ino, &v)))
        return rc;
    if (v.mv_size > a->buflen)
        return -ENAMETOOLONG;
    memcpy(a->buf, v.mv_data, v.mv_size);
    struct proto_readlink_rep *r = a->r;
    r->target.p = (const char *)a->buf;
    r->target.len = (uint32_t)v.mv_size;
    return 0;
}

int meta_op_readlink(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_readlink_req *q = qv;
    struct proto_readlink_rep *r = rv;
    char *buf = rq->buf;
    size_t buflen = rq->buf_len;
    struct meta_ino_arg a = {c, q, r, (uint8_t *)buf, buflen, 0};
    return meta_store_read(c->store, rq, readlink_txn, &a);
}

static int setsize_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
    const struct proto_setsize_req *q = a->q;
    struct proto_setsize_rep *r = a->r;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    if (!S_ISREG(in.mode))
        return -EINVAL;
    if (meta_hsm_is_released(&in))
        return -EBUSY; /* its data is in S3: restored before it is written */
    if (in.flags & META_F_SUPERSEDED)
        return -ESTALE; /* its data would go at its reaping: the writer must know */
    /* Only a writer reports sizes; it proved write access when it opened. */
    bool changed = !(in.flags & META_F_OBJECTS) || q->size > in.size ||
                   (q->mtime_ns && q->mtime_ns != in.mtime_ns);
    in.flags |= META_F_OBJECTS;
    if (q->size > in.size)
        in.size = q->size;
    if (q->mtime_ns) {
        in.mtime_ns = q->mtime_ns;
        in.ctime_ns = q->mtime_ns;
    }
    if (changed && (rc = meta_inode_put(t, &in)))
        return rc;
    meta_inode_attr(&in, &r->attr);
    return 0;
}

static int destroyed_txn(struct meta_txn *t, void *arg)
{
    const struct proto_destroyed_req *q = arg;
    int rc = 0;
    for (uint32_t i = 0; i <= q->more.len / 8 && !rc; i++) {
        uint64_t ino = i == 0 ? q->ino : proto_le64(q->more.p + 8 * (i - 1));
        /* The file's bytes on this MDT too, if it kept any. */
        if (!(rc = meta_dom_del(t, ino)))
            rc = meta_pending_del(t, ino);
    }
    return rc;
}

int meta_op_destroyed(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_destroyed_req *q = qv;
    (void)rv;
    if (q->more.len % 8 || q->more.len / 8 >= PROTO_MAX_DESTROYED)
        return -EINVAL;
    return meta_store_write(c->store, rq, destroyed_txn, (void *)q);
}

int meta_op_setsize(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_setsize_req *q = qv;
    struct proto_setsize_rep *r = rv;
    struct meta_ino_arg a = {c, q, r, NULL, 0, 0};
    return meta_store_write(c->store, rq, setsize_txn, &a);
}
