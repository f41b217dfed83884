/*
 * Extended attributes (xattr.h), and the stria.layout pseudo-attribute.
 */
#include "xattr.h"
#include "alloc.h"
#include "intent.h"
#include "recover.h"

#include "../../common/log.h"
#include "../../common/util.h"
#include "../../proto/layout.h"
#include "../store/hsm_rec.h"

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
/* Who may read (write=false) or change an xattr of in, by namespace. */
static int xattr_may(const struct meta_inode *in, const struct proto_cred *c, const char *name,
                     bool write)
{
    if (!strncmp(name, "user.", 5)) {
        if (!S_ISREG(in->mode) && !S_ISDIR(in->mode))
            return write ? -EPERM : -ENODATA;
        if ((in->mode & S_ISVTX) && S_ISDIR(in->mode) && write && c->uid != 0 && c->uid != in->uid)
            return -EPERM;
        return meta_may(in, c, write ? 2 : 4);
    }
    if (!strncmp(name, "trusted.", 8))
        return c->uid == 0 ? 0 : (write ? -EPERM : -ENODATA);
    if (!strncmp(name, "security.", 9))
        return write && c->uid != 0 && c->uid != in->uid ? -EPERM : 0;
    /* system.* (POSIX ACLs) is not supported yet; unknown prefixes never. */
    return -EOPNOTSUPP;
}

/* The name of a request; the store's own names (hsm_rec.h) are a
 * namespace this file system does not know, as ext4 answers. */
static int xattr_name(const struct proto_str *s, char *buf)
{
    int rc = proto_str_copy(s, buf, PROTO_MAX_NAME + 1);
    if (rc == -ENAMETOOLONG)
        return -ERANGE;
    if (rc)
        return rc;
    if (meta_xattr_reserved(buf))
        return -EOPNOTSUPP;
    return buf[0] ? 0 : -EINVAL;
}

static int setxattr_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
    const struct proto_setxattr_req *q = a->q;
    char name[PROTO_MAX_NAME + 1];
    struct meta_inode in;
    int rc;
    if ((rc = xattr_name(&q->name, name)))
        return rc;
    if (q->value.len > PROTO_MAX_XATTR)
        return -E2BIG;
    if (q->flags & ~(uint32_t)(XATTR_CREATE | XATTR_REPLACE))
        return -EINVAL;
    if ((rc = meta_inode_get(t, q->ino, &in)) || (rc = xattr_may(&in, &q->cred, name, true)))
        return rc;
    MDB_val v;
    rc = meta_xattr_get(t, q->ino, name, &v);
    if (rc && rc != -ENOENT)
        return rc;
    if (rc == 0 && (q->flags & XATTR_CREATE))
        return -EEXIST;
    if (rc == -ENOENT && (q->flags & XATTR_REPLACE))
        return -ENODATA;
    if ((rc = meta_xattr_put(t, q->ino, name, q->value.p, q->value.len)))
        return rc;
    in.ctime_ns = meta_now_ns();
    return meta_inode_put(t, &in);
}

int meta_op_setxattr(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_setxattr_req *q = qv;
    struct proto_setxattr_rep *r = rv;
    struct meta_ino_arg a = {c, q, r, NULL, 0, 0};
    return meta_store_write(c->store, rq, setxattr_txn, &a);
}

static int getxattr_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
    const struct proto_getxattr_req *q = a->q;
    struct proto_getxattr_rep *r = a->r;
    char name[PROTO_MAX_NAME + 1];
    struct meta_inode in;
    int rc;
    if ((rc = xattr_name(&q->name, name)))
        return rc;
    if ((rc = meta_inode_get(t, q->ino, &in)) || (rc = xattr_may(&in, &q->cred, name, false)))
        return rc;
    MDB_val v;
    if ((rc = meta_xattr_get(t, q->ino, name, &v)))
        return rc == -ENOENT ? -ENODATA : rc;
    if (v.mv_size > a->buflen)
        return -E2BIG;
    memcpy(a->buf, v.mv_data, v.mv_size);
    r->value.p = a->buf;
    r->value.len = (uint32_t)v.mv_size;
    return 0;
}

int meta_op_getxattr(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_getxattr_req *q = qv;
    struct proto_getxattr_rep *r = rv;
    uint8_t *buf = rq->buf;
    size_t buflen = rq->buf_len;
    struct meta_ino_arg a = {c, q, r, buf, buflen, 0};
    return meta_store_read(c->store, rq, getxattr_txn, &a);
}

struct list_state {
    struct meta_ino_arg *a;
    const struct meta_inode *in;
    const struct proto_cred *cred;
    size_t len;
};

static int list_cb(void *arg, const char *name, size_t len)
{
    struct list_state *s = arg;
    char n[PROTO_MAX_NAME + 1];
    if (len > PROTO_MAX_NAME)
        return 0;
    memcpy(n, name, len);
    n[len] = '\0';
    if (meta_xattr_reserved(n))
        return 0;
    /* List only what the caller could read (trusted.* is root's). */
    if (xattr_may(s->in, s->cred, n, false) == -ENODATA && strncmp(n, "user.", 5))
        return 0;
    if (s->len + len + 1 > s->a->buflen)
        return -E2BIG;
    memcpy(s->a->buf + s->len, n, len + 1);
    s->len += len + 1;
    return 0;
}

static int listxattr_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
    const struct proto_listxattr_req *q = a->q;
    struct proto_listxattr_rep *r = a->r;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    struct list_state s = {a, &in, &q->cred, 0};
    if ((rc = meta_xattr_list(t, q->ino, list_cb, &s)))
        return rc;
    r->names.p = a->buf;
    r->names.len = (uint32_t)s.len;
    return 0;
}

int meta_op_listxattr(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_listxattr_req *q = qv;
    struct proto_listxattr_rep *r = rv;
    uint8_t *buf = rq->buf;
    size_t buflen = rq->buf_len;
    struct meta_ino_arg a = {c, q, r, buf, buflen, 0};
    return meta_store_read(c->store, rq, listxattr_txn, &a);
}

static int removexattr_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
    const struct proto_removexattr_req *q = a->q;
    char name[PROTO_MAX_NAME + 1];
    struct meta_inode in;
    int rc;
    if ((rc = xattr_name(&q->name, name)))
        return rc;
    if ((rc = meta_inode_get(t, q->ino, &in)) || (rc = xattr_may(&in, &q->cred, name, true)))
        return rc;
    if ((rc = meta_xattr_del(t, q->ino, name)))
        return rc == -ENOENT ? -ENODATA : rc;
    in.ctime_ns = meta_now_ns();
    return meta_inode_put(t, &in);
}

int meta_op_removexattr(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_removexattr_req *q = qv;
    struct proto_removexattr_rep *r = rv;
    struct meta_ino_arg a = {c, q, r, NULL, 0, 0};
    return meta_store_write(c->store, rq, removexattr_txn, &a);
}
