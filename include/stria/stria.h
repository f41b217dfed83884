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

#ifdef __cplusplus
extern "C" {
#endif

#define STRIA_API __attribute__((visibility("default")))

typedef struct stria_fs stria_fs_t;
typedef struct stria_file stria_file_t;
typedef struct stria_dir stria_dir_t;

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

/* The identity metadata operations of the calling thread run as. By default
 * the process's uid, gid and groups; a server acting for others (the FUSE
 * mount) sets its caller's identity per thread. ngroups <= 32. */
STRIA_API int stria_set_thread_cred(uid_t uid, gid_t gid, int ngroups, const gid_t *groups);
STRIA_API void stria_clear_thread_cred(void);

/* ---- files ---- */

/* Open (flags as open(2): O_RDONLY/O_WRONLY/O_RDWR, O_CREAT, O_EXCL,
 * O_TRUNC, O_APPEND). A created file takes its directory's default layout.
 * A FIFO, device or socket (stria_mknod) answers -ENXIO: only a mount's
 * kernel can open one. */
STRIA_API int stria_open(stria_fs_t *fs, const char *path, int flags, mode_t mode,
                         stria_file_t **out);
/* Close: reports the file's size to the metadata service. */
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
    /* A file's layout: its components and the OST of each stripe. */
    uint32_t ncomp;
    struct {
        uint64_t start, end; /* end UINT64_MAX: to end of file */
        uint32_t stripe_size;
        uint32_t stripe_count;
        uint32_t ost[STRIA_MAX_STRIPES];
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

/* ---- cluster ---- */

/* Capacity of the whole file system, as statvfs(3). */
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
/* What one kind of request cost a metadata target since it started
 * (`stria stats`). Times are the server's, from the decoded request to the
 * encoded reply. */
#define STRIA_STAT_BUCKETS 24
struct stria_op_stats {
    char op[16]; /* the request's name, as protocol.md gives it */
    uint64_t count, errors;
    uint64_t total_ns, max_ns;
    /* hist[i]: requests served in [2^(i-1), 2^i) us; hist[0] under 1 us,
     * the last bucket unbounded. */
    uint64_t hist[STRIA_STAT_BUCKETS];
};
/* The counters of MDT mdt, one entry per kind of request it served at
 * least once; *ops is malloc'd (free() it), *uptime_ns how long the
 * server has run. */
STRIA_API int stria_mdt_stats(stria_fs_t *fs, uint32_t mdt, struct stria_op_stats **ops, size_t *n,
                              uint64_t *uptime_ns);
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

#ifdef __cplusplus
}
#endif
#endif
