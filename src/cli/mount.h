/*
 * The mount manager: the stria-fuse mounts of a `stria up` cluster.
 *
 * A cluster's mounts are the mount points recorded in DIR/run/mount and
 * any other stria mount whose source (mountinfo) is DIR/client.conf, made
 * by hand or by mount(8). Every wait on a child (stria-fuse, fusermount3)
 * is bounded, so a stuck mount never hangs `stria up` or `stria down`.
 */
#ifndef STRIA_CLI_MOUNT_H
#define STRIA_CLI_MOUNT_H

#include "cli.h"

#define MNT_FUSE_BIN "stria-fuse"

/*
 * Mount the cluster of dir (DIR/client.conf) at given (NULL: DIR/mnt,
 * created if missing) with stria-fuse, unless a live stria mount of it is
 * there already; a dead one (its stria-fuse gone) is mounted again. Record
 * the mount point in DIR/run/mount. stria-fuse runs detached with -f and
 * its output appended to DIR/log/stria-fuse.log. Returns 0, or a negative
 * errno after saying why on stderr.
 */
int mnt_mount(const char *dir, const char *given);

/* Unmount every mount of the cluster of dir (lazily if busy, saying so),
 * see each stria-fuse exit, and forget them. */
void mnt_unmount_all(const char *dir);

/* Print the lines of `stria status` about the mounts of the cluster of dir. */
void mnt_show(const char *dir);

#endif
