/*
 * Directory listings: readdir, in cookie order. Each operation
 * takes the request context (store.h), the decoded request and the reply
 * to fill, and returns 0 or a negative errno.
 */
#ifndef STRIA_META_OPS_DIR_H
#define STRIA_META_OPS_DIR_H

#include "core.h"

/* Entries are encoded into buf (at most min(buflen, q->max_bytes) bytes). */
int meta_op_readdir(const struct meta_req *rq, const void *q, void *r);

#endif
