/*
 * Allocation: the layout of a new file over the OSTs the cluster map
 * shows (round-robin, or weighted by free space once they differ), and
 * where a new directory goes over the MDTs.
 */
#ifndef STRIA_META_OPS_ALLOC_H
#define STRIA_META_OPS_ALLOC_H

#include "core.h"

/* Where a new directory under parent goes: its stripe (0: plain) and the
 * MDT of its inode, from MKDIR's count and start (0 and -1: the parent's
 * default for new subdirectories, else plain on this MDT). */
int meta_dir_placement(struct meta_ctx *c, const struct meta_inode *parent, int32_t count,
                       int32_t start, uint64_t *dstripe, uint32_t *owner);
/* Replace the allocator's view of the OSTs. */
void meta_ctx_set_osts(struct meta_ctx *ctx, const struct meta_ost *osts, uint32_t n);
/* Replace the allocator's pools with a copy of pools (n of them), after
 * the OSTs of the same map: a map has come. 0 or -ENOMEM (the old stay). */
int meta_ctx_set_pools(struct meta_ctx *ctx, const struct map_pool *pools, uint32_t n);
/* Free the pools (meta_ctx_destroy). */
void meta_ctx_free_pools(struct meta_ctx *ctx);
/* A layout of count stripes of size bytes (offset: the first OST asked
 * for, -1 any; a hint) over the usable OSTs, those of pool only if pool
 * names one (NULL or "": none): round-robin while they are balanced, else
 * weighted by free space. Never an offline or full OST. -ENOSPC when no
 * candidate can take data (logged with the pool's name); -EAGAIN while a
 * pool this MDT does not know yet is awaited (alloc.c), then a pool still
 * unknown or empty is ignored, as Lustre's is. */
int meta_alloc_layout(struct meta_ctx *c, int32_t count, uint32_t size, int32_t offset,
                      const char *pool, struct layout *out);
/* Check a stripe request's count, size and offset. */
int meta_check_stripe_args(int32_t count, uint32_t size, int32_t offset);
/* The layout of a new file in dir (count/size/offset 0: dir's default,
 * its composite template if it has one, else the file system's). */
int meta_new_file_layout(struct meta_ctx *c, const struct meta_inode *dir, int32_t count,
                         uint32_t size, int32_t offset, struct layout *out);

/* Instantiate the pending components of l that start before end: choose
 * their OSTs as meta_alloc_layout does, with what each asks for (0: the
 * file system's default). */
int meta_instantiate(struct meta_ctx *c, struct layout *l, uint64_t end);
/* A new file's layout from template tmpl (a directory's composite
 * default, or one given to SETSTRIPE): the directory's count and size
 * where the template leaves them, and the components from offset 0
 * instantiated. -EINVAL if tmpl is not a valid layout. */
int meta_layout_from_template(struct meta_ctx *c, const struct meta_inode *dir,
                              const struct layout *tmpl, struct layout *out);

/* The next number of the allocator's generator (xorshift64*; s: its state). */
uint64_t meta_rng_next(uint64_t *s);

#endif
