/*
 * readdir (dir.h): entries in cookie order, with attributes for READDIR
 * plus.
 */
#include "dir.h"

#include "../../common/log.h"
#include "../../common/util.h"
#include "../../proto/layout.h"

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
struct readdir_state {
    struct meta_txn *t;
    bool plus;
    struct proto_enc e;
    uint32_t count;
};

/* An entry's bytes at most: dirent, name, and its attributes with plus. */
#define DIRENT_MAX (8 + 8 + 1 + 2 + PROTO_MAX_NAME + 96 + 1)

/* The well-known xattrs ino does not have (READDIR's xabsent): those a
 * GETXATTR from anyone would answer ENODATA for. That is security.* only:
 * system.* (the POSIX ACLs) is answered EOPNOTSUPP (xattr.c, xattr_may). */
static uint8_t xattrs_absent(struct meta_txn *t, uint64_t ino)
{
    uint8_t bits = 0;
    for (int i = 0; i < PROTO_XATTR_KNOWN; i++) {
        MDB_val v;
        if (!strncmp(proto_xattr_known_names[i], "security.", 9) &&
            meta_xattr_get(t, ino, proto_xattr_known_names[i], &v) == -ENOENT)
            bits |= (uint8_t)(1u << i);
    }
    return bits;
}

static int readdir_cb(void *arg, uint64_t ino, uint8_t type, const char *name, size_t len,
                      uint64_t next)
{
    struct readdir_state *s = arg;
    struct proto_dirent de = {ino, next, type, {name, (uint32_t)len}};
    size_t before = s->e.len;
    proto_put_dirent(&s->e, &de);
    if (s->plus) {
        struct meta_inode in;
        struct proto_attr attr;
        uint8_t xabsent = 0;
        int rc = meta_inode_get_here(s->t, ino, &in);
        if (rc == 0 && (in.flags & META_F_SHARD))
            rc = -EREMOTE; /* the directory's own MDT has its attributes */
        if (rc == -EREMOTE) {
            /* Another MDT's inode: its number and type only (nlink 0 says
             * so; the client asks that MDT). */
            meta_inode_clear(&in);
            in.ino = ino;
            in.mode = (uint32_t)DTTOIF(type);
        } else if (rc) {
            return rc == -ENOENT ? -EUCLEAN : rc;
        } else {
            xabsent = xattrs_absent(s->t, ino);
        }
        meta_inode_attr(&in, &attr);
        proto_put_dirplus(&s->e, &attr, xabsent);
    }
    if (s->e.err) {
        s->e.len = before;
        s->e.err = 0;
        return 1; /* full: this entry goes in the next batch */
    }
    s->count++;
    return 0;
}

static int readdir_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
    const struct proto_readdir_req *q = a->q;
    struct proto_readdir_rep *r = a->r;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    if (!S_ISDIR(in.mode))
        return -ENOTDIR;
    if ((rc = meta_may(&in, &q->cred, 4)))
        return rc;
    size_t cap = MIN(a->buflen, (size_t)q->max_bytes);
    if (cap < DIRENT_MAX)
        return -EINVAL;
    struct readdir_state s = {.t = t, .plus = q->plus, .count = 0};
    proto_enc_init(&s.e, a->buf, cap);
    if ((rc = meta_dir_iterate(t, q->ino, q->cookie, readdir_cb, &s)))
        return rc;
    r->count = s.count;
    r->entries.p = a->buf;
    r->entries.len = (uint32_t)s.e.len;
    /* Not full means the iteration reached the end. */
    r->eof = s.e.len + DIRENT_MAX <= cap;
    return 0;
}

int meta_op_readdir(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_readdir_req *q = qv;
    struct proto_readdir_rep *r = rv;
    uint8_t *buf = rq->buf;
    size_t buflen = rq->buf_len;
    struct meta_ino_arg a = {c, q, r, buf, buflen, 0};
    return meta_store_read(c->store, rq, readdir_txn, &a);
}
