/*
 * Names that make inodes: open (with O_CREAT), mkdir, symlink, mknod. Each operation
 * takes the request context (store.h), the decoded request and the reply
 * to fill, and returns 0 or a negative errno.
 */
#ifndef STRIA_META_OPS_CREATE_H
#define STRIA_META_OPS_CREATE_H

#include "core.h"

int meta_op_open(const struct meta_req *rq, const void *q, void *r);
int meta_op_mkdir(const struct meta_req *rq, const void *q, void *r);
int meta_op_symlink(const struct meta_req *rq, const void *q, void *r);
/* A FIFO, device, socket or (mode type S_IFREG or 0) regular file, with
 * mknod(2)'s rules: other types EINVAL (a directory EPERM), a device by
 * anyone but root EPERM. */
int meta_op_mknod(const struct meta_req *rq, const void *q, void *r);

/* Files created behind (docs/architecture.md, "Files created behind"):
 * a range of META_DLG_INOS inode numbers handed to client (an OPEN that
 * asks, PROTO_OPEN_WANT_INOS; idle: with PROTO_OPEN_INOS_IDLE, so that
 * its ranges may be pruned: dlg_rec.h), its first into *lo; and, inside a DOM_WRITES
 * transaction, the file mk makes numbered ino (msg_layout.h, "creates"),
 * its attributes and layout into *r as an OPEN's reply says them. */
int meta_op_ino_range(const struct meta_req *rq, uint64_t client, bool idle, uint64_t *lo);
int meta_create_numbered(struct meta_txn *t, struct meta_ctx *c, uint64_t client,
                         const struct proto_dom_create *mk, uint64_t ino, struct proto_open_rep *r);

#endif
