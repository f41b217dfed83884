/*
 * Calls on names, at the inode level (ns.c; stria.h's inode level and path
 * API wrap them, api.c). Never installed.
 *
 * parent/ino are Stria inode numbers; paths are relative to parent (one
 * name for the mount), sent where routing (route.h) says. Also SETATTR and
 * the destruction of a removed file's objects, which reach the objects
 * through gathering and striped I/O. Each returns 0 or a negative errno.
 */
#ifndef STRIA_CLIENT_NS_H
#define STRIA_CLIENT_NS_H

#include "conn.h"
#include "inode.h"
#include "io.h"
#include "route.h"

int cl_lookup(stria_fs_t *fs, uint64_t parent, const char *path, bool follow,
              struct proto_attr *out);
/* Look name (one component) up in parent from the metadata cache, which
 * may list the directory's part to know it whole (complete_shard,
 * fill_part: a READDIR at most a second, mdcache.h): 0, -ENOENT, or
 * -EAGAIN when only a LOOKUP could tell. fs->mdc must be on. */
int cl_lookup_cached(stria_fs_t *fs, uint64_t parent, const char *name,
                     const struct proto_cred *cred, struct proto_attr *out);
/* List dir's part on mdt into the cache, whole (in MDC_FILL_BATCHES
 * READDIRs at most, where a lookup's completing takes one: an unlink
 * behind needs the grant, which one client holds), if its lease holds and
 * it is not known whole (at most a try a second, mdcache.h): whether it
 * was. Unlinks queued behind are answered first. */
bool cl_fill_dir(stria_fs_t *fs, uint64_t dir, uint32_t mdt);
/* Resolve all but the last name of *path (from *parent, or the root when
 * it begins with '/') here, one lookup a name, from the metadata cache
 * while its lease holds, else (when ask) from the MDT, which leases it:
 * true, with *parent the directory holding the last name and *path that
 * name, when every name on the way is a directory; false (nothing
 * changed) when one is not, is "." or "..", or fails, or is not cached
 * and ask is false, or there is no cache: the MDT then walks the path. */
bool cl_walk_dir(stria_fs_t *fs, uint64_t *parent, const char **path, bool ask);
int cl_mkdir(stria_fs_t *fs, uint64_t parent, const char *path, mode_t mode,
             struct proto_attr *out);
/* count, start: the stripe over MDTs (stria_mkdir_striped). */
int cl_mkdir_striped(stria_fs_t *fs, uint64_t parent, const char *path, mode_t mode, int32_t count,
                     int32_t start, struct proto_attr *out);
int cl_rmdir(stria_fs_t *fs, uint64_t parent, const char *path);
int cl_unlink(stria_fs_t *fs, uint64_t parent, const char *path, struct stria_removed *rm);
int cl_rename(stria_fs_t *fs, uint64_t sparent, const char *spath, uint64_t dparent,
              const char *dpath, unsigned flags, struct stria_removed *rm);
int cl_link(stria_fs_t *fs, uint64_t ino, uint64_t dparent, const char *dpath,
            struct proto_attr *out);
int cl_symlink(stria_fs_t *fs, uint64_t parent, const char *path, const char *target,
               struct proto_attr *out);
/* A FIFO, device, socket or regular file (MKNOD; mode includes the type,
 * rdev a device's number). */
int cl_mknod(stria_fs_t *fs, uint64_t parent, const char *path, mode_t mode, dev_t rdev,
             struct proto_attr *out);
/* One READDIR batch into buf (entries as proto_get_dirent reads them, each
 * followed by its ATTR when plus). keep: an open directory's kept shard
 * batches, for a striped one (cl_readdir_striped), or NULL. */
int cl_readdir(stria_fs_t *fs, uint64_t ino, uint64_t cookie, bool plus, uint8_t *buf, uint32_t cap,
               struct cl_dirbatch *out, struct cl_shards **keep);
/* The MDT holding part k of directory ino of stripe dstripe: shard k's,
 * or for a plain directory (k 0) its inode's own. */
static inline uint32_t cl_dir_part_mdt(uint64_t ino, uint64_t dstripe, uint32_t k)
{
    return dstripe ? proto_ds_shard_mdt(dstripe, k) : proto_ino_mdt(ino);
}
/* Lease the part of directory ino that MDT mdt holds (a striped
 * directory's shard, or its inode's own MDT): a GETATTR there, whose
 * reply the cache takes in. 0 or the request's error. */
int cl_lease_part(stria_fs_t *fs, uint64_t ino, uint32_t mdt);
/* SETATTR on an inode; a shrinking size also cuts the objects. */
int cl_setattr(stria_fs_t *fs, uint64_t ino, struct proto_setattr_req *q,
               struct proto_setattr_rep *r);
/* Remove the objects of a file whose last link went (if rm->destroy),
 * then tell its MDT (DESTROYED); within a batch on this thread, that
 * notice waits for the batch's end. */
void cl_destroy(stria_fs_t *fs, const struct stria_removed *rm);
/* A batch of removals on this thread (write-behind's replies): between
 * begin and end, cl_destroy on this thread keeps the files' objects and
 * the MDT's notices, and end removes the objects, one DESTROY per OST for
 * up to PROTO_MAX_DESTROY of them, then sends the notices of the files
 * whose objects went, one DESTROYED per MDT for up to PROTO_MAX_DESTROYED
 * files: two requests and one commit where there were twice as many as
 * files. A file migrated before (its objects' names carry a generation)
 * has its objects removed at once, as outside a batch.
 * Delaying a notice is harmless (the MDT keeps the inode pending until
 * told, which stria fsck reads as objects that may still exist). */
#define CL_BATCH_OBJECTS 256
struct cl_destroyed_batch {
    stria_fs_t *fs;
    uint32_t n; /* files whose objects are gone, or waiting in obj */
    uint64_t ino[PROTO_MAX_DESTROYED];
    uint32_t nobj; /* their objects still to remove: one DESTROY per OST */
    struct io_obj obj[CL_BATCH_OBJECTS];
};
void cl_destroyed_begin(stria_fs_t *fs, struct cl_destroyed_batch *b);
void cl_destroyed_end(struct cl_destroyed_batch *b);
/* Add a file whose last link went, and its nobj objects (at most
 * CL_BATCH_OBJECTS), to b, removing what b held first when it is full. */
void cl_destroyed_add(struct cl_destroyed_batch *b, uint64_t ino, const struct io_obj *obj,
                      uint32_t nobj);

#endif
