/*
 * The groups of FUSE operations (fuse_ns.c, fuse_file.c, fuse_dir.c,
 * fuse_xattr.c), which fuse_main.c puts in the session's table.
 */
#ifndef STRIA_FUSE_OPS_H
#define STRIA_FUSE_OPS_H

#include "fuse_req.h"

/* ---- operation groups ---- */
void sf_ops_ns(struct fuse_lowlevel_ops *ops);
void sf_ops_file(struct fuse_lowlevel_ops *ops);
void sf_ops_dir(struct fuse_lowlevel_ops *ops);
void sf_ops_xattr(struct fuse_lowlevel_ops *ops);

/* What follows the MDT's answer to a write-behind unlink
 * (stria_start_unlink_behind). */
void sf_wb_removed(stria_fs_t *fs, stria_removed_t *rm, void *arg);
/* Another client changed ino (stria_on_lease_changed; what:
 * STRIA_REVOKED_NAMES when only a directory's names changed). */
void sf_revoked(uint64_t ino, unsigned what, void *arg);
#endif
