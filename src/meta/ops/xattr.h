/*
 * Extended attributes. Each operation
 * takes the request context (store.h), the decoded request and the reply
 * to fill, and returns 0 or a negative errno.
 */
#ifndef STRIA_META_OPS_XATTR_H
#define STRIA_META_OPS_XATTR_H

#include "core.h"

int meta_op_setxattr(const struct meta_req *rq, const void *q, void *r);
int meta_op_getxattr(const struct meta_req *rq, const void *q, void *r);
int meta_op_listxattr(const struct meta_req *rq, const void *q, void *r);
int meta_op_removexattr(const struct meta_req *rq, const void *q, void *r);

#endif
