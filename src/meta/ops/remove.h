/*
 * Names that go: unlink and rmdir. Each operation
 * takes the request context (store.h), the decoded request and the reply
 * to fill, and returns 0 or a negative errno.
 */
#ifndef STRIA_META_OPS_REMOVE_H
#define STRIA_META_OPS_REMOVE_H

#include "core.h"

int meta_op_unlink(const struct meta_req *rq, const void *q, void *r);
int meta_op_rmdir(const struct meta_req *rq, const void *q, void *r);

#endif
