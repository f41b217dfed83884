/*
 * The context of one MDT over its store: set up (the root directory of a
 * new file system, the holds and rename lock a previous run left) and
 * torn down. struct meta_ctx itself is in core.h.
 */
#ifndef STRIA_META_OPS_CTX_H
#define STRIA_META_OPS_CTX_H

#include "core.h"

/* Initialise ctx over an open store. On a new MDT below root_mdts it
 * creates the root directory, striped over MDTs 0 .. root_mdts - 1 (MDT 0
 * holds its inode, the others a shard). */
int meta_ctx_init(struct meta_ctx *ctx, struct meta_store *store, int32_t default_count,
                  uint32_t default_size, uint32_t root_mdts);
void meta_ctx_destroy(struct meta_ctx *ctx);

#endif
