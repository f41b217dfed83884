/*
 * Metadata calls on an inode (inode.c). Never installed.
 *
 * The calls that name an inode, not a path, so they need no routing: the
 * request goes to the MDT in the inode number's top bits. GETATTR (answered
 * from the metadata cache while its lease holds), READLINK, SETSIZE,
 * SETDIRSTRIPE, xattrs and layouts; and what every reply goes through: the
 * metadata cache follows it (cl_note) and the stripes of directories it
 * shows are remembered for routing (cl_learn). Built on the transport core
 * and the metadata cache; striped I/O, handles and routing build on it.
 * Each call returns 0 or a negative errno.
 */
#ifndef STRIA_CLIENT_INODE_H
#define STRIA_CLIENT_INODE_H

#include "conn.h"

#include <sys/stat.h>

/* What removing a name left to do (stria_removed_t): when gone is set, the
 * inode's last link went; a regular file's objects (layout) go with its
 * last close. */
struct stria_removed {
    uint64_t ino;
    uint8_t gone;    /* the inode's last link went */
    uint8_t destroy; /* and it may have objects */
    uint64_t size;   /* its size then, as the MDT knew it */
    struct layout layout;
};

void cl_to_stat(const struct proto_attr *a, struct stat *st);
/* a in the public type (o may be NULL: nothing). */
void cl_attr_out(const struct proto_attr *a, struct stria_attr *o);
/* One name, not a path: what the metadata cache can follow. */
bool cl_one_name(const char *path);

int cl_getattr(stria_fs_t *fs, uint64_t ino, struct proto_attr *out);
/* The attributes a of a directory striped over MDTs, as a user sees them
 * (ext4's): its times are the latest of its inode's and its shards', since
 * a name made, removed or renamed in a shard moves only that shard's
 * (docs/architecture.md, "Striped directories"; Lustre's lmv_merge_attr).
 * Each shard's come from the metadata cache under that MDT's lease, or a
 * GETATTR there, which leases them. Anything else is left as it is, and
 * so are the times of a shard that cannot be asked. Called where
 * attributes leave libstria, not on its walks. */
void cl_merge_times(stria_fs_t *fs, struct proto_attr *a);
int cl_setdirstripe(stria_fs_t *fs, uint64_t ino, int32_t count, int32_t start);
ssize_t cl_readlink(stria_fs_t *fs, uint64_t ino, char *buf, size_t len);
int cl_setxattr(stria_fs_t *fs, uint64_t ino, const char *name, const void *value, size_t size,
                int flags);
ssize_t cl_getxattr(stria_fs_t *fs, uint64_t ino, const char *name, void *value, size_t size);
ssize_t cl_listxattr(stria_fs_t *fs, uint64_t ino, char *list, size_t size);
int cl_removexattr(stria_fs_t *fs, uint64_t ino, const char *name);
int cl_getstripe(stria_fs_t *fs, uint64_t ino, struct stria_layout *out);
/* SETSTRIPE; comps: a composite template (NULL or none: count, size,
 * offset alone). */
int cl_setstripe(stria_fs_t *fs, uint64_t ino, int32_t count, uint32_t size, int32_t offset,
                 const struct layout *comps);
/* LAYOUT_INTENT: instantiate what a write reaching end needs; *l becomes
 * the file's layout now. */
int cl_layout_intent(stria_fs_t *fs, uint64_t ino, uint64_t end, struct layout *l);
/* GETSTRIPE of a file: its layout into *l. */
int cl_get_layout(stria_fs_t *fs, uint64_t ino, struct layout *l);
/* Tell the MDT that ino is at least size bytes long (the MDT keeps the
 * maximum) and, if mtime_ns, its mtime; out (if not NULL) gets the result.
 * layout: the file's (from an open handle), for the metadata cache, or NULL. */
int cl_setsize(stria_fs_t *fs, uint64_t ino, uint64_t size, int64_t mtime_ns,
               const struct layout *layout, struct proto_attr *out);

/* Let the metadata cache (if on) follow a reply (struct mdc_update): a
 * name in parent now holds child (0: removed or unknown); the name in
 * parent2 changed too; attr: the attributes of attr->ino now. */
void cl_note(stria_fs_t *fs, int64_t sent, const struct proto_leases *leases, uint64_t parent,
             const char *name, uint64_t child, uint64_t parent2, const char *name2,
             const struct proto_attr *attr);
/* cl_note of a rename's reply: sname in sparent moved to dname in dparent
 * (exchange: the two names swapped what they hold). */
void cl_note_rename(stria_fs_t *fs, int64_t sent, const struct proto_leases *leases,
                    uint64_t sparent, const char *sname, uint64_t dparent, const char *dname,
                    bool exchange);
/* cl_note of a reply that also brings attr->ino's layout. */
void cl_note_layout(stria_fs_t *fs, int64_t sent, const struct proto_leases *leases,
                    uint64_t parent, const char *name, const struct proto_attr *attr,
                    const struct layout *layout);

/* Remember the stripe of a directory whose attributes a reply carried. */
void cl_learn(stria_fs_t *fs, const struct proto_attr *a);
/* The stripe of directory dir over MDTs (0: plain) if one was learnt. */
bool cl_known_stripe(stria_fs_t *fs, uint64_t dir, uint64_t *dstripe);

/* Set atime (or mtime) in q from a timespec (NULL, UTIME_NOW, UTIME_OMIT). */
void cl_set_time(struct proto_setattr_req *q, const struct timespec *ts, bool atime);
/* The process's umask, read without changing it. */
mode_t cl_umask(void);

#endif
