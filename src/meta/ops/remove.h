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
/* n unlinks (UNLINKS), queued to the store together so that they share a
 * commit: qs[i] for rqs[i], its reply in rs[i] and its result in rcs[i].
 * One whose name another MDT's operation holds, or whose inode is on
 * another MDT, then goes on alone, as meta_op_unlink. Returns 0, or a
 * negative errno with nothing done. */
int meta_op_unlink_n(uint32_t n, const struct meta_req *const *rqs,
                     const struct proto_unlink_req *qs, struct proto_unlink_rep *rs, int *rcs);

#endif
