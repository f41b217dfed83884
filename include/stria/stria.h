/*
 * libstria: the native Stria client.
 *
 * Connect with a client.conf, then use files and directories by path
 * ("/ckpt/step100/rank0" names stria:/ckpt/step100/rank0). A file's data is
 * split by its layout and sent to the storage targets in parallel.
 *
 * Every function returns 0 (or a byte count) on success and a negative
 * errno on failure. Every function is thread-safe; one stria_file_t may be
 * used by several threads at once.
 *
 * Consistency is close-to-open: after a writer closes or fsyncs a file, a
 * client that opens it afterwards sees the data and the size.
 */
#ifndef STRIA_STRIA_H
#define STRIA_STRIA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STRIA_API __attribute__((visibility("default")))

typedef struct stria_fs stria_fs_t;
typedef struct stria_file stria_file_t;
typedef struct stria_dir stria_dir_t;
struct stria_layout; /* below, with the layout calls */

/*
 * Which client.conf a connect with conf == NULL uses: $STRIA_CONF if set,
 * else ~/.config/stria/client.conf (written by `stria up`), else
 * /etc/stria/client.conf. Writes the path into buf; returns 0 or -ENOENT
 * when none exists (buf then holds the last candidate).
 */
STRIA_API int stria_conf_find(char *buf, size_t len);

/* Connect to a cluster. conf: a client.conf path, or NULL (stria_conf_find).
 * On success *fs is set; free it with stria_disconnect. -EACCES: the
 * servers refused this client's key (the cluster key does not match);
 * libstria then logs the key file it used. */
STRIA_API int stria_connect(const char *conf, stria_fs_t **fs);
/* The cluster key file client.conf conf (NULL: stria_conf_find) names, as
 * stria_connect reads it (a relative key_file is taken from the directory
 * of the client.conf). Writes the path into buf; returns 0, or a negative
 * errno when the client.conf cannot be read or names no key_file. */
STRIA_API int stria_conf_key_file(const char *conf, char *buf, size_t len);
STRIA_API void stria_disconnect(stria_fs_t *fs);
/* How long I/O waits for an unreachable storage target (reconnecting
 * meanwhile) before it fails with EIO: ms in 500..3600000 (client.conf's
 * timeout_ms, default 100 s). Returns 0 or -EINVAL. */
STRIA_API int stria_set_io_timeout(stria_fs_t *fs, int ms);
/* That timeout now, in ms. */
STRIA_API int stria_io_timeout(stria_fs_t *fs);

/* The identity metadata operations of the calling thread run as. By default
 * the process's uid, gid and groups; a server acting for others (the FUSE
 * mount) sets its caller's identity per thread. ngroups <= 32. */
STRIA_API int stria_set_thread_cred(uid_t uid, gid_t gid, int ngroups, const gid_t *groups);
STRIA_API void stria_clear_thread_cred(void);

/* ---- files ---- */

/* Open (flags as open(2): O_RDONLY/O_WRONLY/O_RDWR, O_CREAT, O_EXCL,
 * O_TRUNC, O_APPEND, O_NOFOLLOW; O_SYNC, O_DSYNC and O_DIRECT only turn
 * gathering off). A created file takes its directory's default layout.
 * A FIFO, device or socket (stria_mknod) answers -ENXIO: only a mount's
 * kernel can open one. */
STRIA_API int stria_open(stria_fs_t *fs, const char *path, int flags, mode_t mode,
                         stria_file_t **out);
/* Close: sends gathered writes, reports the file's size to the metadata
 * service, frees f. Returns the first failure (also of a gathered write). */
STRIA_API int stria_close(stria_file_t *f);
STRIA_API ssize_t stria_pread(stria_file_t *f, void *buf, size_t len, off_t off);
STRIA_API ssize_t stria_pwrite(stria_file_t *f, const void *buf, size_t len, off_t off);
/* Make the data and size of f durable on every target it touched. */
STRIA_API int stria_fsync(stria_file_t *f);
STRIA_API int stria_ftruncate(stria_file_t *f, off_t size);
STRIA_API int stria_fstat(stria_file_t *f, struct stat *st);
/* Set the times of f's file (as futimens(2); times as stria_utimens).
 * What f wrote is reported first, so the times set here survive the close,
 * as cp -p and tar -x expect. A file's mtime is that of its last write:
 * a handle's close or fsync reports the size with the time of its last
 * write, which replaces a time set by name since then (stria_utimens), as
 * it would on a file system that writes back later. */
STRIA_API int stria_futimens(stria_file_t *f, const struct timespec times[2]);

/* ---- namespace ---- */

STRIA_API int stria_stat(stria_fs_t *fs, const char *path, struct stat *st);
/* As stria_stat, but a symlink is not followed. */
STRIA_API int stria_lstat(stria_fs_t *fs, const char *path, struct stat *st);
STRIA_API int stria_mkdir(stria_fs_t *fs, const char *path, mode_t mode);
/* mkdir with its entries striped over count MDTs (-1: all; 0: as the
 * parent's default says) whose first, which holds its inode, is start (-1:
 * the MDT that holds its name). Lustre's `lfs mkdir -c -i`. */
STRIA_API int stria_mkdir_striped(stria_fs_t *fs, const char *path, mode_t mode, int32_t count,
                                  int32_t start);
/* The default stripe over MDTs of new subdirectories of a directory (count
 * 0: none, they are plain; -1: all MDTs; start -1: any). `lfs setdirstripe -D`. */
STRIA_API int stria_setdirstripe(stria_fs_t *fs, const char *path, int32_t count, int32_t start);
STRIA_API int stria_rmdir(stria_fs_t *fs, const char *path);
STRIA_API int stria_unlink(stria_fs_t *fs, const char *path);
/* flags: 0, RENAME_NOREPLACE or RENAME_EXCHANGE (linux/fs.h values). */
STRIA_API int stria_rename(stria_fs_t *fs, const char *from, const char *to, unsigned flags);
STRIA_API int stria_link(stria_fs_t *fs, const char *existing, const char *newpath);
STRIA_API int stria_symlink(stria_fs_t *fs, const char *target, const char *linkpath);
/* Make a special file, as mknod(2): mode is a type (S_IFIFO, S_IFCHR,
 * S_IFBLK, S_IFSOCK; S_IFREG or 0 an empty regular file) and permission
 * bits, taken as given (no umask); rdev the device number (makedev(3)),
 * kept for S_IFCHR and S_IFBLK only. Returns -EINVAL for another type
 * (-EPERM for S_IFDIR), -EPERM for a device made by anyone but root,
 * -EEXIST when path exists. A FIFO, device or socket holds no data in
 * Stria: a mount's kernel serves it on its own node (a FIFO passes data
 * between processes of one node only), and stria_open of one answers
 * -ENXIO. */
STRIA_API int stria_mknod(stria_fs_t *fs, const char *path, mode_t mode, dev_t rdev);
/* Returns the target's length; buf is not NUL-terminated if it fills. */
STRIA_API ssize_t stria_readlink(stria_fs_t *fs, const char *path, char *buf, size_t len);
STRIA_API int stria_truncate(stria_fs_t *fs, const char *path, off_t size);
STRIA_API int stria_chmod(stria_fs_t *fs, const char *path, mode_t mode);
/* uid or gid (uid_t)-1 leaves it unchanged. */
STRIA_API int stria_chown(stria_fs_t *fs, const char *path, uid_t uid, gid_t gid);
/* times[0] atime, times[1] mtime; NULL means now; UTIME_NOW / UTIME_OMIT work. */
STRIA_API int stria_utimens(stria_fs_t *fs, const char *path, const struct timespec times[2]);

struct stria_dirent {
    uint64_t ino;
    unsigned char type; /* DT_REG, DT_DIR, DT_LNK, ... */
    char name[256];
};
STRIA_API int stria_opendir(stria_fs_t *fs, const char *path, stria_dir_t **out);
/* Returns 1 with *ent filled, 0 at the end, or a negative errno. "." and
 * ".." are not returned. */
STRIA_API int stria_readdir(stria_dir_t *d, struct stria_dirent *ent);
STRIA_API void stria_closedir(stria_dir_t *d);

/*
 * Gathering and read-ahead (every handle; the FUSE mount's too).
 *
 * Small sequential writes: a stria_pwrite of less than 256 KiB that
 * continues the previous write of the same handle is copied into a buffer
 * and returns at once; the buffer is sent as one request when it reaches
 * the end of its stripe piece (a stripe unit, at most 1 MiB), so 4 KiB
 * writes cost the storage targets one request per piece instead of one
 * each. A client keeps at most 16 such buffers; with all in use a write
 * is sent as it comes. Before anything else of the file goes on through
 * this client (a read, flush, fsync, close, truncate, stat or size report
 * through any handle of it, or a write that does not continue the buffer)
 * the buffer is sent, and a buffer is sent at the latest 1 s after its
 * first write. A buffer whose sending failed reports the failure on the
 * next stria_pwrite, stria_flush, stria_fsync or stria_close of its handle
 * (as a write-back failure of a local file system is reported), not to the
 * write whose bytes it held. Handles opened with O_SYNC, O_DSYNC or
 * O_DIRECT are never gathered. Data gathered counts as written: sizes,
 * stria_file_unreported and reads through this client see it.
 *
 * Sequential reads: a stria_pread of less than 1 MiB that starts where the
 * previous read of the handle ended fetches the rest of its stripe piece
 * along with it into the handle's read-ahead buffer (1 MiB; at most 16 per
 * client), and the following reads are answered from it. The buffer is
 * dropped on a read elsewhere and on any write, truncate or punch through
 * this client. As everything else, it follows close-to-open: it holds
 * nothing older than the handle's open.
 *
 * Data-on-MDT: an open that may read (not O_WRONLY, O_TRUNC or O_CREAT |
 * O_EXCL) of a file whose first component its MDT keeps brings that
 * component's bytes (up to 1 MiB) into the handle's read-ahead buffer, so
 * reads of a small file send no request after the open (readahead_hits
 * counts them). They are dropped as the buffer is.
 */
/* Turn gathering of small writes on (the default) or off for every handle
 * of fs (the mount's -o write_behind=0 turns it off). Off sends what is
 * gathered first. */
STRIA_API void stria_set_write_gather(stria_fs_t *fs, int on);
struct stria_io_stats {
    uint64_t writes_gathered; /* stria_pwrite calls copied into a buffer */
    uint64_t gathers_sent;    /* buffers sent */
    uint64_t readahead_fills; /* read-ahead buffers fetched */
    uint64_t readahead_hits;  /* reads answered from them */
};
/* What gathering and read-ahead did since stria_connect. */
STRIA_API void stria_io_stats(stria_fs_t *fs, struct stria_io_stats *out);
/* With the metadata cache on: lookups that brought a Data-on-MDT file's
 * first bytes since stria_connect, and how many of those an open for
 * reading then read (a lookup brings them when this client has lately
 * opened what it looked up: a dataset read through the mount). */
STRIA_API void stria_lookup_bytes_stats(stria_fs_t *fs, uint64_t *brought, uint64_t *used);
/* Writes of Data-on-MDT bytes taken behind since stria_connect (under the
 * write-behind grant, see stria_start_unlink_behind: their flush and
 * close do not wait for the MDT), how many of those have landed (or
 * failed), and how many failed after their handle closed (each logged). */
STRIA_API void stria_dom_behind_stats(stria_fs_t *fs, uint64_t *taken, uint64_t *landed,
                                      uint64_t *lost);

/* ---- handle-level calls (what a server such as the FUSE mount needs) ---- */

/* Report the size f wrote (if anything changed), so the next opener sees
 * it: what close does, without closing. Also reports an earlier failure of
 * a gathered write of f. */
STRIA_API int stria_flush(stria_file_t *f);
/* Read exactly [off, off + len): bytes no object holds read as zeros,
 * whatever size f knows (for a caller, such as a kernel, that knows the
 * size and never asks past it). Returns len or a negative errno. */
STRIA_API ssize_t stria_read_range(stria_file_t *f, void *buf, size_t len, off_t off);
/* Grow the file to at least size, as fallocate(2) without KEEP_SIZE
 * (space is not reserved; the bytes read as zeros). */
STRIA_API int stria_fextend(stria_file_t *f, off_t size);
/* Deallocate [off, off + len) on the storage targets: reads as zeros
 * afterwards; the size does not change (fallocate PUNCH_HOLE). */
STRIA_API int stria_fpunch(stria_file_t *f, off_t off, off_t len);
/* As stria_pwrite, but only what gathering takes at once, without waiting
 * for a storage server: a small write that continues f's last one, or that
 * starts a buffer when one is free. A handle's first write first tells the
 * MDT that objects may exist, as stria_pwrite does (one round trip, once).
 * Returns how many bytes from the front of buf were taken (0: none; write
 * the rest with stria_pwrite), or that mark's failure, or an
 * earlier failure of a gathered write of f. For a caller that acknowledges
 * writes before they land (the mount's write-behind): the order of its
 * calls is the order the bytes land in. */
STRIA_API ssize_t stria_pwrite_nowait(stria_file_t *f, const void *buf, size_t len, off_t off);
/* The inode number of f's file. */
STRIA_API uint64_t stria_file_ino(const stria_file_t *f);
/* Whether f is a regular file opened for writing (ftruncate may use it). */
STRIA_API int stria_file_writable(const stria_file_t *f);
/* Let a write-only handle read too (the kernel's writeback cache fills
 * partial pages through it); permission was checked at open. Call before
 * the handle is shared between threads. */
STRIA_API void stria_file_allow_read(stria_file_t *f);
/* The end of what f wrote and has not reported to the metadata service
 * yet (0 if none); *wrote_ns (if not NULL) when it last wrote (0 if none). */
STRIA_API uint64_t stria_file_unreported(stria_file_t *f, int64_t *wrote_ns);
/* Someone reported size end with mtime wrote_ns for f's file
 * (stria_report_size): if that covers what f wrote, f has nothing left to
 * report. */
STRIA_API void stria_file_reported(stria_file_t *f, uint64_t end, int64_t wrote_ns);
/* Other handles of this process wrote up to size: reads of f may go that far. */
STRIA_API void stria_file_know_size(stria_file_t *f, uint64_t size);
/* Someone truncated f's file to size: f forgets what it wrote past it. */
STRIA_API void stria_file_truncated(stria_file_t *f, uint64_t size);
/* f's file lost its last link while open: f stops reporting sizes. */
typedef struct stria_removed stria_removed_t;
/* rm: what the MDT said of the removal (its layout is the file's last:
 * the handle takes the components it had not seen instantiated). */
STRIA_API void stria_file_orphan(stria_file_t *f, const stria_removed_t *rm);

/* ---- cancellation ---- */

/* The calling thread's calls give up with -EINTR once *flag becomes
 * nonzero (checked every 100 ms while waiting for a server; retries stop
 * too); NULL: never. Returns the flag it replaces, to be put back. The
 * flag must stay valid until replaced. A buffer of gathered writes being
 * sent is never abandoned. */
STRIA_API const volatile int *stria_set_thread_cancel(const volatile int *flag);

/* ---- the inode level ----
 *
 * Operations relative to a directory's inode number (parent) and a name in
 * it, or on an inode, as DAOS's dfs_lookup_rel: what a server that only
 * knows inode numbers (the FUSE mount) uses. The path API above is the
 * same calls started at the root, whose inode number is 1. Inode numbers
 * are 64 bits, never reused, and stay the same across renames. A name is
 * one component, or a relative path. Each call returns 0 (or a count) or a
 * negative errno; runs with the thread's identity (stria_set_thread_cred);
 * honours stria_set_thread_cancel.
 */
#define STRIA_ROOT_INO 1

/* An inode's attributes, as stat(2) gives them (times in ns since the
 * epoch; blocks in 512-byte units). nlink 0: an entry of a directory read
 * with plus whose inode lives on another MDT, its attributes not sent. */
struct stria_attr {
    uint64_t ino;
    uint32_t mode, nlink, uid, gid;
    uint64_t size, blocks;
    int64_t atime_ns, mtime_ns, ctime_ns;
    uint64_t rdev;
};
/* Fill a struct stat from a (st_blksize 1 MiB). */
STRIA_API void stria_attr_to_stat(const struct stria_attr *a, struct stat *st);

/* Look up name in parent (a symlink is not followed). */
STRIA_API int stria_lookup_at(stria_fs_t *fs, uint64_t parent, const char *name,
                              struct stria_attr *out);
STRIA_API int stria_getattr_ino(stria_fs_t *fs, uint64_t ino, struct stria_attr *out);

/* What stria_setattr_ino changes (valid, a mask of STRIA_SET_*). */
#define STRIA_SET_MODE      0x01u
#define STRIA_SET_UID       0x02u
#define STRIA_SET_GID       0x04u
#define STRIA_SET_SIZE      0x08u /* a shrink cuts the objects too */
#define STRIA_SET_ATIME     0x10u
#define STRIA_SET_MTIME     0x20u
#define STRIA_SET_ATIME_NOW 0x40u
#define STRIA_SET_MTIME_NOW 0x80u
/* The caller (a kernel mounted with default_permissions) already checked
 * who may set the times: a writer who is not the owner may set them. */
#define STRIA_SET_TIMES_CHECKED 0x100u
struct stria_setattr {
    uint32_t valid;
    mode_t mode;
    uid_t uid;
    gid_t gid;
    uint64_t size;
    struct timespec atime, mtime;
};
/* Change an inode's attributes; out (if not NULL) gets them after. via: a
 * handle of the inode that names the change (ftruncate), or NULL; a size
 * change is then checked against how via was opened, not the file's mode,
 * as ftruncate(2) is. Writes gathered for the inode go first. */
STRIA_API int stria_setattr_ino(stria_fs_t *fs, uint64_t ino, const struct stria_setattr *s,
                                stria_file_t *via, struct stria_attr *out);

/* Open (flags and mode as stria_open) name in parent; an empty name opens
 * parent itself (also a directory, read-only: stria_fsync of it makes the
 * MDT's metadata durable). attr (if not NULL) gets the attributes. */
STRIA_API int stria_open_at(stria_fs_t *fs, uint64_t parent, const char *name, int flags,
                            mode_t mode, stria_file_t **out, struct stria_attr *attr);
STRIA_API int stria_mkdir_at(stria_fs_t *fs, uint64_t parent, const char *name, mode_t mode,
                             struct stria_attr *out);
STRIA_API int stria_rmdir_at(stria_fs_t *fs, uint64_t parent, const char *name);
/* mknod of name in parent (as stria_mknod: a FIFO, socket, device or an
 * empty regular file). */
STRIA_API int stria_mknod_at(stria_fs_t *fs, uint64_t parent, const char *name, mode_t mode,
                             dev_t rdev, struct stria_attr *out);
STRIA_API int stria_symlink_at(stria_fs_t *fs, uint64_t parent, const char *name,
                               const char *target, struct stria_attr *out);
/* A new name dname in dparent for inode ino; out gets ino's attributes. */
STRIA_API int stria_link_at(stria_fs_t *fs, uint64_t ino, uint64_t dparent, const char *dname,
                            struct stria_attr *out);
/* As stria_readlink, of a symlink's inode. */
STRIA_API ssize_t stria_readlink_ino(stria_fs_t *fs, uint64_t ino, char *buf, size_t len);

/*
 * The last link of a file gone. When a name's removal (unlink, or a rename
 * over it) takes an inode's last link, its objects on the storage targets
 * are to be destroyed: at once by the path API; by a caller that asks for
 * the removal (rm not NULL) when it decides, which lets a file that caller
 * still has open keep its data until the last close. *rm is NULL when
 * nothing is left to do, else malloc'd and owned by the caller, who ends
 * it with stria_removed_finish.
 */
STRIA_API int stria_unlink_at(stria_fs_t *fs, uint64_t parent, const char *name,
                              stria_removed_t **rm);
/* flags as stria_rename. rm: as stria_unlink_at, for the name replaced. */
STRIA_API int stria_rename_at(stria_fs_t *fs, uint64_t sparent, const char *sname, uint64_t dparent,
                              const char *dname, unsigned flags, stria_removed_t **rm);
/* The removed inode, and its size as the MDT knew it then. */
STRIA_API uint64_t stria_removed_ino(const stria_removed_t *rm);
STRIA_API uint64_t stria_removed_size(const stria_removed_t *rm);
/* The caller keeps the file open past its removal (writes may create
 * objects the MDT never heard of): stria_removed_finish then destroys
 * every object the layout names. */
STRIA_API void stria_removed_hold(stria_removed_t *rm);
/* Cut the objects of a removed, still open file to size (a truncate the
 * MDT, which has forgotten the inode, cannot do). */
STRIA_API int stria_removed_truncate(stria_fs_t *fs, const stria_removed_t *rm, uint64_t size);
/* Destroy the objects (failures are logged: stria fsck finds what is
 * left) and free rm. NULL is ignored. */
STRIA_API void stria_removed_finish(stria_fs_t *fs, stria_removed_t *rm);
/* The same behind, once stria_start_destroy_behind ran (else now): the
 * objects go within 200 ms, with those of up to 63 other files in one
 * request per OST; stria_statfs, a write that fails with ENOSPC and
 * stria_disconnect wait for them. Frees rm. */
STRIA_API void stria_removed_finish_behind(stria_fs_t *fs, stria_removed_t *rm);
/* Start the thread that stria_removed_finish_behind hands removals to.
 * Off by default. */
STRIA_API int stria_start_destroy_behind(stria_fs_t *fs);
/* Free rm and destroy nothing (another removal of the same inode will). */
STRIA_API void stria_removed_free(stria_removed_t *rm);

/* Directories by inode: stria_opendir_ino then stria_readdir_at, which
 * gives the entry at position cookie (0: the first) without moving on, so
 * that a caller who cannot take it yet may ask again. The next entry's
 * position is its next_cookie; positions stay valid while entries come and
 * go, and are below 2^62. Entries come from the MDT in batches kept in d:
 * asking for the position after the last entry given costs no round trip. */
struct stria_direntplus {
    struct stria_dirent d;
    uint64_t next_cookie;
    struct stria_attr attr; /* with plus only; see struct stria_attr for nlink 0 */
};
/* Open directory ino (-ENOTDIR if it is not one); close with stria_closedir. */
STRIA_API int stria_opendir_ino(stria_fs_t *fs, uint64_t ino, stria_dir_t **out);
/* Whether every entry of d's directory lives on one MDT, so that any
 * change of its entries moves the directory's mtime (a striped
 * directory's mtime follows its first shard only): 1 or 0. */
STRIA_API int stria_dir_on_one_mdt(const stria_dir_t *d);
/* With the metadata cache on: a number that stays the same while no name
 * of d's directory changes, on any of its MDTs, and moves when one does
 * (it may also move without: a lease given anew). It holds a lease on
 * every part of the directory, taking those it lacks (a GETATTR to each
 * such MDT), so a change is also heard (stria_on_lease_revoked). Returns
 * 0, -EOPNOTSUPP without the cache, -EAGAIN when a part could not be
 * leased (out of reach, or changing as it was asked). */
STRIA_API int stria_dir_version(stria_dir_t *d, uint64_t *version);
/* Returns 1 with *e filled, 0 past the last entry, or a negative errno.
 * plus: the entries' attributes too (in the same round trip). */
STRIA_API int stria_readdir_at(stria_dir_t *d, uint64_t cookie, int plus,
                               struct stria_direntplus *e);

/* Extended attributes and layouts of an inode: as the path calls. */
STRIA_API int stria_setxattr_ino(stria_fs_t *fs, uint64_t ino, const char *name, const void *value,
                                 size_t size, int flags);
STRIA_API ssize_t stria_getxattr_ino(stria_fs_t *fs, uint64_t ino, const char *name, void *value,
                                     size_t size);
STRIA_API ssize_t stria_listxattr_ino(stria_fs_t *fs, uint64_t ino, char *list, size_t size);
STRIA_API int stria_removexattr_ino(stria_fs_t *fs, uint64_t ino, const char *name);
STRIA_API int stria_getstripe_ino(stria_fs_t *fs, uint64_t ino, struct stria_layout *out);
struct stria_comp_spec;
STRIA_API int stria_setstripe_comps_ino(stria_fs_t *fs, uint64_t ino, unsigned n,
                                        const struct stria_comp_spec *comps);
STRIA_API int stria_setstripe_ino(stria_fs_t *fs, uint64_t ino, int32_t count, uint32_t size,
                                  int32_t offset);

/* Tell the MDT that ino is at least size bytes long (it keeps the
 * maximum) with mtime mtime_ns (0: leave it): what handles report at
 * close, for a caller that reports for several handles of a file at once.
 * Gathered writes of ino are sent first: a size never comes before its
 * data. Returns 0, -ENOENT when ino has no link left, or an error. */
STRIA_API int stria_report_size(stria_fs_t *fs, uint64_t ino, uint64_t size, int64_t mtime_ns);

/* ---- caches for a server acting for one machine (the FUSE mount) ---- */

/* Lease names and attributes from the MDT and answer lookups, stats and
 * read-only opens from them while the leases hold (architecture.md,
 * "Metadata leases"). Starts a thread: call it in the process that will
 * use fs (after a daemon's fork). Off by default. */
STRIA_API int stria_start_mdcache(stria_fs_t *fs);
/* With the metadata cache on: call fn for every inode whose lease an MDT
 * revokes (a change by another client), from the cache's thread, after
 * the cache dropped what it held of it and before the MDT hears that it
 * did, so before the change is acknowledged; fn must not call into fs.
 * NULL: none; once this returns, the fn it replaced is no longer being
 * called. -EINVAL without the cache. One callback at a time: this call and
 * stria_on_lease_changed replace each other's. */
STRIA_API int stria_on_lease_revoked(stria_fs_t *fs, void (*fn)(uint64_t ino, void *arg),
                                     void *arg);
/* The same, and fn also hears what changed: STRIA_REVOKED_NAMES when ino
 * is a directory whose names changed (a create, link, unlink or rename in
 * it; its times and link count changed with them, its mode, owner and
 * xattrs did not), 0 for any other change. */
#define STRIA_REVOKED_NAMES 1u
STRIA_API int stria_on_lease_changed(stria_fs_t *fs,
                                     void (*fn)(uint64_t ino, unsigned what, void *arg), void *arg);
/* What to do with a removal that a queued unlink's reply brings (the
 * callback owns rm: end it with stria_removed_finish, now or later). */
typedef void (*stria_removed_fn)(stria_fs_t *fs, stria_removed_t *rm, void *arg);
/* With the metadata cache on: let stria_unlink_behind queue unlinks while
 * this client holds its MDT's write-behind grant (architecture.md,
 * "Write-behind unlink"). Starts a thread. removed is called from it.
 * Under the same grant, a write inside a file's Data-on-MDT component is
 * then taken behind while gathering is on: its flush and close do not wait
 * for the MDT ("Small files written behind"; stria_dom_behind_stats). */
STRIA_API int stria_start_unlink_behind(stria_fs_t *fs, stria_removed_fn removed, void *arg);
/* Acknowledge the unlink of name in parent now and send it later, when
 * the cache can decide it alone: the caller may remove the name, which
 * holds a file or symlink with one link for which is_open(ino, arg) says
 * 0 (nothing of the caller's has it open). Returns 0 when queued, -EAGAIN
 * when it must go the ordinary way (stria_unlink_at). When the grant it
 * decided under was lost before the unlink was queued, it unlinks the
 * ordinary way itself: then 0 or that unlink's error (never -EAGAIN), and
 * *rm_out as stria_unlink_at sets it (rm_out may be NULL: the objects
 * are removed before it returns). */
STRIA_API int stria_unlink_behind(stria_fs_t *fs, uint64_t parent, const char *name,
                                  int (*is_open)(uint64_t ino, void *arg), void *arg,
                                  stria_removed_t **rm_out);
struct stria_unlink_stats {
    uint64_t queued;  /* unlinks acknowledged before they were sent */
    uint64_t sent;    /* of those, answered by the MDT (failures included) */
    uint64_t failed;  /* of those, refused by the MDT or lost with a connection */
    uint64_t grants;  /* grants received (renewals not counted) */
    uint64_t batched; /* of those sent, sent several to a request (UNLINKS) */
    uint64_t batches; /* the requests that carried them */
};
STRIA_API void stria_unlink_behind_stats(stria_fs_t *fs, struct stria_unlink_stats *out);
/* With write-behind started (stria_start_unlink_behind) and gathering on,
 * a create of a name the metadata cache knows is new, in a directory
 * where a create under the same grant showed that new files keep their
 * first bytes on the MDT (Data-on-MDT) and nothing else yet, is made here:
 * its number from a range the MDT handed this client, its attributes as
 * the MDT makes them, and its create sent with its first bytes behind its
 * close (architecture.md, "Files created behind"). On by default;
 * stria_set_create_behind(fs, 0) turns it off. */
STRIA_API void stria_set_create_behind(stria_fs_t *fs, int on);
/* Files created behind since stria_connect, how many of those the MDT
 * refused or were lost (each logged), and how many it made with other
 * attributes or layout than this client said (each logged). */
STRIA_API void stria_create_behind_stats(stria_fs_t *fs, uint64_t *made, uint64_t *failed,
                                         uint64_t *differed);

/* ---- extended attributes (names as in setxattr(2), e.g. "user.x") ---- */
STRIA_API int stria_setxattr(stria_fs_t *fs, const char *path, const char *name, const void *value,
                             size_t size, int flags);
/* With size 0 returns the value's size. */
STRIA_API ssize_t stria_getxattr(stria_fs_t *fs, const char *path, const char *name, void *value,
                                 size_t size);
/* NUL-separated names; with size 0 returns the size needed. */
STRIA_API ssize_t stria_listxattr(stria_fs_t *fs, const char *path, char *list, size_t size);
STRIA_API int stria_removexattr(stria_fs_t *fs, const char *path, const char *name);

/* ---- layouts ---- */

#define STRIA_MAX_STRIPES    256
#define STRIA_MAX_COMPONENTS 4
struct stria_layout {
    int is_dir;
    /* A directory's default for new files: count (-1 all OSTs, 0 inherit),
     * stripe size (0 inherit), first OST (-1 any). */
    int32_t dir_stripe_count;
    uint32_t dir_stripe_size;
    int32_t dir_stripe_offset;
    /* A directory's stripe over MDTs: its entries are spread by a hash
     * (mdt_hash, 1: FNV-1a) of their name over mdt_count MDTs from
     * mdt_start on (1 and its MDT for a plain directory); and the default
     * for new subdirectories (count 0 none, -1 all MDTs; start -1 any). */
    uint32_t mdt_count, mdt_start, mdt_hash, mdt_nmdt;
    int32_t mdt_default_count, mdt_default_start;
    /* A file's layout: its components and the OST of each stripe. A
     * component not instantiated yet (init 0) has no OSTs: it says what it
     * asks for (stripe_count 0 default, -1 as UINT32_MAX all; stripe_size
     * 0 default; first_ost -1 any). A directory's composite default is
     * such a layout, every component not instantiated (ncomp 0: none). */
    uint32_t ncomp;
    struct {
        uint64_t start, end; /* end UINT64_MAX: to end of file */
        uint32_t stripe_size;
        uint32_t stripe_count;
        int init;
        int on_mdt; /* Data-on-MDT: kept by MDT ost[0] (lfs's lmm_pattern mdt) */
        int32_t first_ost;
        uint32_t ost[STRIA_MAX_STRIPES];
        char pool[16]; /* the OST pool its stripes are kept in ("": none) */
    } comp[STRIA_MAX_COMPONENTS];
};
STRIA_API int stria_getstripe(stria_fs_t *fs, const char *path, struct stria_layout *out);
/*
 * On a directory: set its default layout. On a file that holds no data
 * yet: give it this layout. On a path that does not exist: create an empty
 * file with it. count: -1 for all OSTs; size a multiple of 64 KiB; offset
 * the first OST or -1.
 */
STRIA_API int stria_setstripe(stria_fs_t *fs, const char *path, int32_t count, uint32_t size,
                              int32_t offset);
/* One component of a composite layout (`lfs setstripe -E`), as asked for:
 * it ends at end (UINT64_MAX: the end of file; a multiple of 64 KiB);
 * stripe_count 0 default, -1 all OSTs; stripe_size 0 default; first_ost
 * -1 any; pool the OST pool its stripes must stay in ("": none). */
struct stria_comp_spec {
    uint64_t end;
    int32_t stripe_count;
    uint32_t stripe_size;
    int32_t first_ost;
    char pool[16];
    int on_mdt; /* -L mdt: kept by the file's MDT (Data-on-MDT; the first only) */
};
/* stria_setstripe with a composite layout of n components (1 to
 * STRIA_MAX_COMPONENTS, each starting where the one before ends, the last
 * ending at UINT64_MAX). A file's components are instantiated as writes
 * reach them. On a directory, the default of its new files and
 * subdirectories. -EINVAL for a layout that does not hold together or
 * names a pool the file system does not have (a plain layout in a pool
 * is one component to UINT64_MAX with that pool). */
STRIA_API int stria_setstripe_comps(stria_fs_t *fs, const char *path, unsigned n,
                                    const struct stria_comp_spec *comps);
/* Parse lfs setstripe's component options (-E END [-c N] [-S SIZE]
 * [-i OST] [-p [FSNAME.]POOL] ..., END a size with K/M/G/T or -1 for EOF;
 * -c, -S and -p carry over from the component before, as lfs's; -p none
 * stops a pool's carrying over) into out (max of them), *n how many.
 * -EINVAL with the reason in why. */
STRIA_API int stria_comps_parse(int argc, char *const *argv, struct stria_comp_spec *out,
                                unsigned max, unsigned *n, char *why, size_t whylen);
/* l's components in the words stria_comps_parse takes: the length, or
 * -ERANGE if cap is too small. */
STRIA_API int stria_comps_format(const struct stria_layout *l, char *buf, size_t cap);

/* ---- cluster ---- */

/* OST pools (Lustre's `lctl pool_*`, `lfs pool_list`): named sets of OSTs
 * that a layout's component may keep its stripes in. */
struct stria_pool {
    char name[16];
    uint32_t nost;
    uint32_t *ost; /* nost OST indices, ascending */
};
/* The file system's pools, as the management service has them: *out
 * (one block with the OST lists: free() it) gets *n of them. */
STRIA_API int stria_pools(stria_fs_t *fs, struct stria_pool **out, size_t *n);
/* Change the pools (root only, -EPERM), all or nothing; pool is the name
 * without the file system's. -EEXIST: new of a pool there is, or add of
 * an OST already in it; -ENOENT: no such pool; -ENODEV: add of an OST
 * the cluster does not have; -ENXIO: remove of an OST not in the pool;
 * -ENOTEMPTY: destroy of a pool that still has OSTs (as lctl's);
 * -EINVAL: a bad name, or an OST twice in osts. A change reaches the
 * MDTs with the cluster map, within a heartbeat. */
STRIA_API int stria_pool_new(stria_fs_t *fs, const char *pool);
STRIA_API int stria_pool_destroy(stria_fs_t *fs, const char *pool);
STRIA_API int stria_pool_add(stria_fs_t *fs, const char *pool, const uint32_t *osts, size_t n);
STRIA_API int stria_pool_remove(stria_fs_t *fs, const char *pool, const uint32_t *osts, size_t n);

/* Capacity of the whole file system, as statvfs(3). Figures asked of
 * every server are kept for client.conf's statfs_max_age_ms (default
 * 1000; 0: none): a call within that age of the last asking, or while
 * another thread asks, gets that answer (Lustre's statfs_max_age).
 * stria_targets always asks. */
STRIA_API int stria_statfs(stria_fs_t *fs, struct statvfs *st);

struct stria_target {
    char kind[4]; /* "MDT" or "OST" */
    uint32_t index;
    int online;
    char node[64];
    char host[256];
    uint16_t port;
    uint64_t bytes_total, bytes_used, bytes_avail;
    uint64_t inodes_total, inodes_used;
    uint64_t heartbeat_age_ms;
};
/* Every target of the cluster with fresh figures (asked of each server;
 * the management service's last report for one that does not answer).
 * *out is malloc'd; free() it. */
STRIA_API int stria_targets(stria_fs_t *fs, struct stria_target **out, size_t *n);
/* What MDT mdt keeps of file data (Data-on-MDT, `stria df`): the bytes its
 * records hold, and its dom_max, the most they may hold (0: Data-on-MDT
 * is off there). Asked once: an MDT out of reach gives its error at once. */
STRIA_API int stria_mdt_dom(stria_fs_t *fs, uint32_t mdt, uint64_t *bytes, uint64_t *max);
/* What one kind of request cost a metadata target since it started
 * (`stria stats`). Times are the server's: a request first waits (queued
 * for the MDT's group commit, or for a server's workers), then is served,
 * until its reply is encoded. */
#define STRIA_STAT_BUCKETS 24
struct stria_op_stats {
    char op[16]; /* the request's name, as protocol.md gives it */
    uint64_t count, errors;
    uint64_t total_ns, max_ns; /* service */
    /* hist[i]: requests served in [2^(i-1), 2^i) us; hist[0] under 1 us,
     * the last bucket unbounded. */
    uint64_t hist[STRIA_STAT_BUCKETS];
    /* Their waits before service began, likewise; all 0 from a server
     * older than the figures. */
    uint64_t wait_ns, wait_max_ns;
    uint64_t wait_hist[STRIA_STAT_BUCKETS];
};
/* One of a server's busiest clients: a libstria instance (a mount, a
 * program), by the id it authenticated with, since the server started. */
struct stria_client_stats {
    uint64_t client_id;
    uint64_t requests;
    uint64_t service_ns, wait_ns; /* summed over its requests */
    char ip[48];                  /* the address of its last connection */
};
/* The counters of MDT mdt, one entry per kind of request it served at
 * least once; *ops is malloc'd (free() it), *uptime_ns how long the
 * server has run. */
STRIA_API int stria_mdt_stats(stria_fs_t *fs, uint32_t mdt, struct stria_op_stats **ops, size_t *n,
                              uint64_t *uptime_ns);
/* The same counters of OST ost's server (WRITE, READ, ...): how many
 * requests the storage targets of that server's process received. */
STRIA_API int stria_ost_stats(stria_fs_t *fs, uint32_t ost, struct stria_op_stats **ops, size_t *n,
                              uint64_t *uptime_ns);
/* stria_mdt_stats (ost false) or stria_ost_stats (ost true) of target
 * index, and in the same answer its server's busiest clients, most
 * requests first (at most 16; none from a server older than the figures):
 * *clients is malloc'd (free() it), *nclients its length. A revocation
 * channel's long polls are not counted: they wait for events by design. */
STRIA_API int stria_server_stats(stria_fs_t *fs, int ost, uint32_t index,
                                 struct stria_op_stats **ops, size_t *n, uint64_t *uptime_ns,
                                 struct stria_client_stats **clients, size_t *nclients);
/* What `stria fsck` found on one MDT (docs/operations.md, "Checking"). */
struct stria_fsck_report {
    uint64_t inodes, entries;
    uint64_t dangling;   /* entries naming a missing inode */
    uint64_t orphans;    /* inodes no entry names */
    uint64_t bad_nlink;  /* wrong link counts */
    uint64_t bad_parent; /* directories with a wrong "..", or named twice */
    uint64_t corrupt;    /* undecodable records */
    uint64_t fixed;      /* of these, repaired */
    uint64_t open_ops;   /* cross-MDT operations still open (recovery ends them) */
    /* What this MDT cannot check alone: names of other MDTs' inodes, and
     * inodes other MDTs may name, in the wire's form (stria fsck joins
     * every MDT's). malloc'd: free() it. refs_full: not all fit. */
    void *refs;
    size_t refs_len;
    int refs_full;
};
/* Check MDT mdt's namespace, and with repair fix it (root only; the MDT
 * holds its other writes meanwhile). text (cap bytes) receives one line
 * per finding, the first that fit, NUL-terminated. */
STRIA_API int stria_mdt_fsck(stria_fs_t *fs, uint32_t mdt, int repair,
                             struct stria_fsck_report *out, char *text, size_t cap);
/* stria_mdt_fsck, and with repair also the repairs stria fsck's check
 * across MDTs asks of this MDT (fixes: len bytes of its records). */
STRIA_API int stria_mdt_fsck_fixes(stria_fs_t *fs, uint32_t mdt, int repair, const void *fixes,
                                   size_t len, struct stria_fsck_report *out, char *text,
                                   size_t cap);
/* The objects an OST holds, one of its 256 fan-out directories at a time
 * (fan 0..255), for stria fsck: *out (free() it) gets *n of them; *more
 * says not all fitted. */
struct stria_object {
    uint64_t ino;
    uint32_t comp, stripe;
};
STRIA_API int stria_ost_objects(stria_fs_t *fs, uint32_t ost, uint32_t fan,
                                struct stria_object **out, size_t *n, int *more);
/* Remove one object from an OST (stria fsck --repair, for objects no file
 * owns). */
STRIA_API int stria_ost_destroy(stria_fs_t *fs, uint32_t ost, const struct stria_object *o);
/* The objects an OST keeps a migration's fence of (whether they exist or
 * not), of the inodes of one of its fan-out directories at a time, as
 * stria_ost_objects gives its objects. */
STRIA_API int stria_ost_fences(stria_fs_t *fs, uint32_t ost, uint32_t fan,
                               struct stria_object **out, size_t *n, int *more);
/* Drop every fence an OST keeps of inode ino (stria fsck --repair, for
 * files that are gone). */
STRIA_API int stria_ost_forget_fences(stria_fs_t *fs, uint32_t ost, uint64_t ino);
/* What SCRUB found in one of an OST's 256 fan-out directories (`stria
 * scrub`): every block of every object read and checked against its
 * checksum; bad (free() it) names up to 1024 blocks that failed. */
struct stria_bad_block {
    struct stria_object obj;
    uint64_t offset; /* in the object */
};
struct stria_scrub_report {
    uint64_t objects, blocks, bytes, bad_blocks;
    struct stria_bad_block *bad;
    size_t nbad;
};
STRIA_API int stria_ost_scrub(stria_fs_t *fs, uint32_t ost, uint32_t fan,
                              struct stria_scrub_report *out);
/* stat of an inode by number (-ENOENT: no such inode). */
STRIA_API int stria_stat_ino(stria_fs_t *fs, uint64_t ino, struct stat *st);
/* The file system name and map epoch of the management service. */
STRIA_API int stria_cluster_info(stria_fs_t *fs, char *fsname, size_t len, uint64_t *epoch);

/* ---- data repositories on S3 (docs/architecture.md, "Data repositories") ---- */

/* HSM state bits, as Lustre's `lfs hsm_state` prints them. */
#define STRIA_HSM_EXISTS   0x1u
#define STRIA_HSM_DIRTY    0x2u
#define STRIA_HSM_RELEASED 0x4u
#define STRIA_HSM_ARCHIVED 0x8u
#define STRIA_HSM_LOST     0x40u

/* Where a bucket is (vhost: bucket.host rather than host/bucket). */
struct stria_s3_target {
    const char *endpoint, *region, *bucket;
    int vhost;
};

/* A file's HSM record and its attributes now. */
struct stria_hsm {
    uint32_t state;
    uint64_t repo; /* the repository's directory inode; 0: none */
    char key[1025];
    char etag[129];
    uint64_t arch_size;
    int64_t arch_mtime_ns;
    uint64_t gen;
    struct stria_attr attr;
};
STRIA_API int stria_hsm_get(stria_fs_t *fs, uint64_t ino, struct stria_hsm *out);

/* Progress of a long call: bytes moved so far (may be NULL). */
typedef void (*stria_progress_fn)(uint64_t done, void *arg);

/* Upload file ino to key of t (or to the key it already has in repo:
 * where it was imported from or last archived to), in parts in parallel by the storage hosts
 * that hold its stripes, and mark it archived in repository repo once the
 * whole object is there, checked by size and MD5. A file archived and not
 * changed since: nothing. -EBUSY: the file changed during the upload (not
 * archived); an S3 failure: its errno, and why holds its text. */
STRIA_API int stria_hsm_archive(stria_fs_t *fs, uint64_t ino, uint64_t repo,
                                const struct stria_s3_target *t, const char *key,
                                stria_progress_fn fn, void *arg, char *why, size_t whylen);
/* Rewrite regular file path's data into a new layout of n components
 * (as stria_setstripe_comps takes them; Data-on-MDT not yet) while it
 * stays readable and writable, and swap the layouts atomically at the
 * end (docs/architecture.md, "Migration"); progress in bytes copied. A
 * file written to during each of three copies is left as it was
 * (-EBUSY); why then says why. The owner or root only. */
STRIA_API int stria_migrate(stria_fs_t *fs, const char *path, unsigned n,
                            const struct stria_comp_spec *comps, stria_progress_fn fn, void *arg,
                            char *why, size_t whylen);
/* If file ino's migration is stale (its migrator died), undo it (before
 * its swap) or finish it (after), destroying the objects it left; 0 also
 * when there is none, or it is alive (stria fsck --repair). */
STRIA_API int stria_migrate_recover(stria_fs_t *fs, uint64_t ino);
/* Free the OST space of an archived, unchanged file (-EPERM otherwise). */
STRIA_API int stria_hsm_release(stria_fs_t *fs, uint64_t ino);
/* Bring a released file's data back from S3, every stripe at once. A file
 * not released: nothing. An object gone from S3: the file is marked lost. */
STRIA_API int stria_hsm_restore(stria_fs_t *fs, uint64_t ino, stria_progress_fn fn, void *arg,
                                char *why, size_t whylen);
/* Make name in parent the released copy of an S3 object (HSM_IMPORT in
 * docs/protocol.md); *result one of STRIA_IMPORT_*. flags: STRIA_IMPORT_CHANGED. */
#define STRIA_IMPORT_CHANGED 1
enum { STRIA_IMPORTED = 0, STRIA_UNCHANGED, STRIA_UPDATED, STRIA_KEPT };
STRIA_API int stria_hsm_import(stria_fs_t *fs, uint64_t parent, const char *name, uint64_t repo,
                               const char *key, const char *etag, uint64_t size, int64_t mtime_ns,
                               mode_t mode, uint64_t gen, int flags, int *result, uint64_t *ino);

/* The repositories, kept by MDT 0: op one of STRIA_REPO_*, conf its
 * "key=value" lines. LIST and GET write {u64 dir, u32 len, conf} records
 * (little-endian) into out and set *outlen. */
enum { STRIA_REPO_ADD = 1, STRIA_REPO_SET, STRIA_REPO_DEL, STRIA_REPO_LIST, STRIA_REPO_GET };
STRIA_API int stria_repo_call(stria_fs_t *fs, int op, uint64_t dir, const char *conf, size_t len,
                              void *out, size_t cap, size_t *outlen);
/* The value of name in a repository's conf lines into buf (-ENOENT: none). */
STRIA_API int stria_repo_value(const char *conf, size_t len, const char *name, char *buf,
                               size_t cap);

/* S3 through a storage host: a listing page (cb per object; *more: the
 * listing goes on after the last) and one object's head. */
struct stria_s3_obj {
    const char *key;
    uint64_t size;
    int64_t mtime_ns;
    const char *etag;
};
STRIA_API int stria_s3_list(stria_fs_t *fs, const struct stria_s3_target *t, const char *prefix,
                            const char *start_after, unsigned max,
                            int (*cb)(const struct stria_s3_obj *o, void *arg), void *arg,
                            int *more, char *why, size_t whylen);
STRIA_API int stria_s3_head(stria_fs_t *fs, const struct stria_s3_target *t, const char *key,
                            struct stria_s3_obj *out, char *etag, size_t etaglen, char *why,
                            size_t whylen);
/*
 * A repository as the registry holds it, parsed (docs/operations.md, "Data
 * repositories on S3"), and the passes that apply its settings. The CLI
 * runs them on demand (stria repo import/sync, stria repo policy --apply);
 * stria-mgmtd's policy engine runs them on its own every policy_interval.
 */
struct stria_repo {
    uint64_t dir;
    char conf[4097]; /* its "key=value" lines */
    size_t len;
    /* Values of conf, for convenience. */
    char path[4096];
    char bucket[256], prefix[1025], endpoint[512], region[128];
    int vhost;
    struct stria_s3_target t; /* points into the fields above */
};
/* Fill r's values from r->conf. Returns 0 or -EINVAL (no bucket or path). */
STRIA_API int stria_repo_parse(struct stria_repo *r);
/* Every repository (*v malloc'd, *n of them). */
STRIA_API int stria_repo_load(stria_fs_t *fs, struct stria_repo **v, size_t *n);
/* Set name=value in r's conf (replacing it; value NULL: remove it), then
 * r's values again; stria_repo_save stores r's conf in the registry. */
STRIA_API int stria_repo_set(struct stria_repo *r, const char *name, const char *value);
STRIA_API int stria_repo_save(stria_fs_t *fs, const struct stria_repo *r);
/* The repository whose path holds cluster path p (the longest), or NULL. */
STRIA_API const struct stria_repo *stria_repo_for(const struct stria_repo *v, size_t n,
                                                  const char *p);
/* The object key of cluster path p in r: its prefix and p's path below r. */
STRIA_API int stria_repo_key(const struct stria_repo *r, const char *p, char *key, size_t cap);
/* The number r's setting name holds (dflt: none, or not a number). */
STRIA_API int64_t stria_repo_int(const struct stria_repo *r, const char *name, int64_t dflt);
/* Whether r's policy list which (import_policy, export_policy) holds what
 * (new, changed, deleted). */
STRIA_API int stria_repo_has(const struct stria_repo *r, const char *which, const char *what);

/* How a pass reports: note gets one line per file that failed (and what
 * a pass did not do); progress the objects listed or bytes moved so far;
 * stop, asked between files, ends the pass early (-EINTR). Any may be
 * NULL. */
struct stria_pass {
    void (*note)(const char *line, void *arg);
    void (*progress)(uint64_t done, void *arg);
    int (*stop)(void *arg);
    void *arg;
};

/* Bring r's files up to date with its listing: every object becomes a
 * released file (STRIA_SYNC_POLICY: also as r's import policy says:
 * changed objects replace clean files, and with "deleted" files whose
 * objects are gone are removed). Paged, and resumed after the last page
 * saved when a pass was stopped. */
#define STRIA_SYNC_POLICY 1
struct stria_sync_stats {
    uint64_t seen, imported, updated, unchanged, kept, removed, skipped, failed;
    uint64_t reaped; /* files superseded more than keep_old ago, now gone */
};
STRIA_API int stria_repo_import(stria_fs_t *fs, struct stria_repo *r, int flags,
                                const struct stria_pass *p, struct stria_sync_stats *st, char *why,
                                size_t whylen);
/* Archive r's files as its export policy says ("new": never archived,
 * "changed": dirty) once they have not changed for quiet_s seconds, and,
 * with "deleted", delete the objects of the files removed here. */
struct stria_export_stats {
    uint64_t files, bytes, waiting, failed, deleted;
};
STRIA_API int stria_repo_export(stria_fs_t *fs, const struct stria_repo *r, int64_t quiet_s,
                                const struct stria_pass *p, struct stria_export_stats *st);
/* Drop the MDTs' tombstones that none of the repositories v (all of
 * them) will use: of repositories gone or without the export policy
 * "deleted". Root only (-EPERM). */
STRIA_API int stria_repo_forget(stria_fs_t *fs, const struct stria_repo *v, size_t n);
/* Release r's archived, clean files not read for release_after_s seconds
 * (0: none), then, while the OSTs have less than keep_free_pct percent
 * free (0: never), the least recently read of the rest. */
struct stria_tier_stats {
    uint64_t files, bytes;
};
STRIA_API int stria_repo_tier(stria_fs_t *fs, const struct stria_repo *r, int64_t release_after_s,
                              int keep_free_pct, const struct stria_pass *p,
                              struct stria_tier_stats *st);
/* Delete object key of t through a storage host, only while its etag is
 * etag (with or without its quotes; never empty: -EINVAL): an object
 * someone rewrote since is left alone (-ESTALE). A key not there is
 * success (already gone). An S3 failure: its errno, and why its text. */
STRIA_API int stria_s3_delete(stria_fs_t *fs, const struct stria_s3_target *t, const char *key,
                              const char *etag, char *why, size_t whylen);

/* How many MDTs the cluster map names, as this client last read it: they
 * are MDTs 0 to n - 1. */
STRIA_API uint32_t stria_mdt_count(stria_fs_t *fs);

/* Tombstones (docs/architecture.md, "Tombstones"): each MDT keeps one for
 * every file whose last link went while its HSM record named an object
 * holding its data (archived or released, not lost), in the transaction that
 * destroyed it, until dropped. Ids rise by one per tombstone on each MDT
 * and are never reused. Root only (-EPERM). */
struct stria_hsm_gone {
    uint64_t id;
    uint64_t repo;    /* the repository's directory inode */
    const char *key;  /* the object's key and etag, NUL-terminated; */
    const char *etag; /* valid during the callback only */
};
/* MDT mdt's tombstones after id after, at most max (1..1000), in id order:
 * cb for each (a non-zero return stops and is returned); *more (may be
 * NULL) is set when there are others after the last one given. */
STRIA_API int stria_hsm_gone_list(stria_fs_t *fs, uint32_t mdt, uint64_t after, unsigned max,
                                  int (*cb)(const struct stria_hsm_gone *g, void *arg), void *arg,
                                  int *more);
/* Drop the tombstones of MDT mdt whose ids are in (after, upto]. */
STRIA_API int stria_hsm_gone_drop(stria_fs_t *fs, uint32_t mdt, uint64_t after, uint64_t upto);
/* What the MDTs hold released (stria df). */
STRIA_API int stria_released(stria_fs_t *fs, uint64_t *bytes, uint64_t *files);

#ifdef __cplusplus
}
#endif
#endif
