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

#endif
