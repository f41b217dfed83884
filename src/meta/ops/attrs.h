/*
 * Attributes: lookup, getattr, setattr and the size a writer reports (SETSIZE),
 * readlink, and the removal of a file's objects (DESTROYED). Each operation
 * takes the request context (store.h), the decoded request and the reply
 * to fill, and returns 0 or a negative errno.
 */
#ifndef STRIA_META_OPS_ATTRS_H
#define STRIA_META_OPS_ATTRS_H

#include "core.h"

int meta_op_lookup(const struct meta_req *rq, const void *q, void *r);
int meta_op_getattr(const struct meta_req *rq, const void *q, void *r);
/* Fill the attributes of each leased entry (ms > 0) of ls that still
 * exists: as the change wrote them (touched), else read back in one read
 * transaction. */
void meta_op_lease_attrs(struct meta_ctx *c, const struct meta_touched *touched,
                         struct proto_leases *ls);
int meta_op_setattr(const struct meta_req *rq, const void *q, void *r);
/* buf receives the target; r->target points into it. */
int meta_op_readlink(const struct meta_req *rq, const void *q, void *r);
int meta_op_setsize(const struct meta_req *rq, const void *q, void *r);
/* The objects of inode q->ino are gone: it is no longer pending. */
int meta_op_destroyed(const struct meta_req *rq, const void *q, void *r);

#endif
