/*
 * Layouts: a file's stripes, a directory's defaults and its stripe over MDTs. Each operation
 * takes the request context (store.h), the decoded request and the reply
 * to fill, and returns 0 or a negative errno.
 */
#ifndef STRIA_META_OPS_LAYOUT_H
#define STRIA_META_OPS_LAYOUT_H

#include "core.h"

int meta_op_getstripe(const struct meta_req *rq, const void *q, void *r);
int meta_op_setstripe(const struct meta_req *rq, const void *q, void *r);
int meta_op_setdirstripe(const struct meta_req *rq, const void *q, void *r);
/* LAYOUT_INTENT: instantiate what a write is about to reach (proto.h). */
int meta_op_layout_intent(const struct meta_req *rq, const void *q, void *r);

#endif
