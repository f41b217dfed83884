/*
 * The other side of XNAME: HOLD, COMMIT, RELEASE and the LINK_* steps a
 * coordinator on another MDT sends (xname.h).
 */
#ifndef STRIA_META_OPS_XNAME_STEP_H
#define STRIA_META_OPS_XNAME_STEP_H

#include "intent.h"

/* A step of another MDT's cross-MDT rename, unlink or link: XNAME. */
int meta_op_xname(const struct meta_req *rq, const void *q, void *r);

#endif
