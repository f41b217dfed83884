/*
 * Path arguments, the stria mounts they may lie in, and walks of the
 * cluster's trees for their files.
 *
 * libstria has no working directory: every path starts at the cluster's
 * root. A path argument is "stria:/a/b", a local path inside a stria FUSE
 * mount (which names the same file as the part below the mount point), or
 * a bare path that each command reads as a cluster path or a local one.
 */
#ifndef STRIA_CLI_PATHS_H
#define STRIA_CLI_PATHS_H

#include "cli.h"

#include <stddef.h>
#include <sys/stat.h>

#include "../common/mounts.h"
#include "stria/stria.h"

/* The type a stria FUSE mount has in mountinfo. */
#define CLI_MOUNT_TYPE "fuse.stria"

/*
 * Parse a path argument. "stria:/a/b" and "stria:a/b" name the cluster
 * path /a/b: *is_stria is set to 1 and out gets the path made absolute,
 * with "//", "." and ".." resolved. A local path inside a stria mount
 * (absolute, or relative to the working directory) is a cluster path too:
 * *is_stria 1 and out gets the path below the mount point ("/" at the
 * mount point itself). Any other argument is copied to out unchanged with
 * *is_stria 0; whether such a bare path means the cluster (most commands,
 * see cli_stria_path) or the local disk (cp) is the caller's choice.
 * Returns 0 or -ENAMETOOLONG.
 */
int cli_path(const char *arg, char *out, size_t len, int *is_stria);

/*
 * A path argument of a command that only works on the cluster: "stria:...",
 * a path inside a stria mount, or a bare path starting with '/' (which,
 * outside every stria mount, is a cluster path). Writes the normalised
 * cluster path to out. On a bad argument prints "stria CMD: ..." and
 * returns a negative errno.
 */
int cli_stria_path(const char *cmd, const char *arg, char *out, size_t len);

/*
 * The client.conf of the stria mount that the local path arg lies in (the
 * mount's source in mountinfo), or NULL when arg is a "stria:" path or not
 * inside a stria mount. The string lives until the process exits.
 */
const char *cli_mount_conf(const char *arg);

/* Make in absolute and resolve "//", "." and ".." (never above /) into
 * out, lexically. Returns 0 or -ENAMETOOLONG. */
int cli_path_normalize(const char *in, char *out, size_t len);

/* Join a directory and a name into out; returns 0 or -ENAMETOOLONG. */
int cli_path_join(const char *dir, const char *name, char *out, size_t len);

/* How output names an argument: as written (arg) when it is a path in a
 * stria mount, else by its cluster path (path). Returns one of the two. */
const char *cli_shown_name(const char *arg, const char *path);

/* The last component of path, ignoring trailing slashes, into buf, which
 * it returns. */
const char *cli_base_name(const char *path, char *buf, size_t len);

/*
 * Read every mount of this process's mount namespace (mount_table_read)
 * from /proc/self/mountinfo, or from the file $STRIA_MOUNTINFO names, for
 * tests. Free m with mount_table_free.
 */
int cli_mounts_read(struct mount_table *m);

/*
 * The mount on top at exactly point (absolute, canonical) if it is a
 * stria mount, else NULL. The result points into m.
 */
const struct mount_ent *cli_mount_at(const struct mount_table *m, const char *point);

/*
 * Called for each regular file a walk finds, with its cluster path (valid
 * during the call only) and its lstat. Returns 0 to go on, or a negative
 * errno to stop the walk, which then returns it.
 */
typedef int (*cli_walk_fn)(const char *path, const struct stat *st, void *arg);

/*
 * Hand fn the regular files at the cluster path path: path itself if it is
 * one, else every one under it, depth first, in each directory's order.
 * Symlinks are never followed (a walk stays in its tree and cannot loop)
 * and special files are skipped. A path that cannot be read (its lstat,
 * opendir or readdir fails, or a name makes it longer than CLI_PATH_MAX)
 * is reported as "stria CMD: PATH: reason" and counted in *errors (when
 * errors is not NULL), and the walk goes on with the rest; an entry
 * removed between its directory's listing and its lstat is skipped
 * without a word, but path itself missing is reported.
 * Returns 0, or the negative errno with which fn stopped the walk.
 */
int cli_walk_files(stria_fs_t *fs, const char *cmd, const char *path, cli_walk_fn fn, void *arg,
                   size_t *errors);

#endif
