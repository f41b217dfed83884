/*
 * stria-fuse internals: the POSIX mount on libfuse3's low-level API.
 *
 * FUSE inode numbers are Stria inode numbers (the root is 1 in both), so
 * the mount needs no inode translation and forget is a no-op. Each request
 * runs with its caller's uid, gid and groups (stria_set_thread_cred), and
 * the metadata service checks permissions as a local file system would.
 *
 * The inode table (fuse_tab.c) remembers, per inode, the open handles of
 * this mount, the size and mtime the kernel was last told (to decide at
 * open whether the page cache may be kept), and the objects of a file
 * unlinked while open, destroyed at its last close.
 *
 * The mount uses libstria's public API only (include/stria/stria.h, its
 * inode level), plus src/common's helpers; gathering of small writes and
 * read-ahead happen inside libstria's handles.
 */
#ifndef STRIA_FUSE_INT_H
#define STRIA_FUSE_INT_H

#define FUSE_USE_VERSION 314
#include "stria/stria.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>

#include <fuse_lowlevel.h>

/* The longest path or symlink target (the protocol's). */
#define SF_MAX_PATH 4096

struct sfuse {
    stria_fs_t *fs;
    struct fuse_session *se;
    double attr_timeout, entry_timeout;
    bool writeback;
    bool write_behind;         /* acknowledge buffered writes before they land */
    bool direct_writes;        /* write-only handles bypass the page cache */
    unsigned wb_test_delay_ms; /* STRIA_TEST_WRITE_DELAY_MS: hold them back (tests) */
    bool kernel_checks;        /* mounted with default_permissions */
    char conf[4096];
};
extern struct sfuse sf;

/* Run the rest of this request as its caller. */
void sf_cred(fuse_req_t req);
/* Set while a worker serves a WRITE whose caller lacks CAP_FSETID, under
 * FUSE_HANDLE_KILLPRIV_V2 (fuse_main.c: libfuse 3.14 drops the flag). */
extern __thread bool sf_write_kills_privs;
/* Such a write drops setuid, and setgid where the group may execute. */
int sf_write_drop_privs(fuse_req_t req, uint64_t ino);
/* The mode the kernel was last told for ino, if it was told any. */
bool tab_mode(uint64_t ino, uint32_t *mode);
/* Interrupts: between sf_intr_begin and sf_intr_end (before the reply: no
 * callback touches flag after it), an INTERRUPT from the kernel makes the
 * calling thread's client calls stop waiting and fail with EINTR.
 * SF_INTR(req, call) wraps one call so. */
void sf_intr_begin(fuse_req_t req, volatile int *flag);
void sf_intr_end(fuse_req_t req);
#define SF_INTR(req, call)                                                                         \
    ({                                                                                             \
        volatile int intr_;                                                                        \
        sf_intr_begin(req, &intr_);                                                                \
        __typeof__(call) v_ = (call);                                                              \
        sf_intr_end(req);                                                                          \
        v_;                                                                                        \
    })
/* Reply an entry for attributes the MDT returned (and note them). */
void sf_reply_entry(fuse_req_t req, const struct stria_attr *a);
/* sf_reply_entry when rc is 0, else the error. */
void sf_reply_entry_rc(fuse_req_t req, int rc, const struct stria_attr *a);
/* Report to the MDT what this mount's handles of ino wrote and have not
 * reported (before a truncate or an fsync), once their writes on the way
 * have landed; a write-behind failure of handle f (NULL: none) comes
 * first, as tab_wb_wait's. */
int sf_report_local(uint64_t ino, stria_file_t *f);
/* Fill a fuse_entry_param for a, without noting it (see sf_entry). */
void sf_fill_entry(const struct stria_attr *a, struct fuse_entry_param *e);
/* Note that the kernel was given entry e (filled from a). */
void sf_note_entry(const struct stria_attr *a, const struct fuse_entry_param *e);
/* Fill a fuse_entry_param for a; notes the attributes. */
void sf_entry(const struct stria_attr *a, struct fuse_entry_param *e);
/* What follows the MDT's answer to a write-behind unlink
 * (stria_start_unlink_behind). */
void sf_wb_removed(stria_fs_t *fs, stria_removed_t *rm, void *arg);
/* Whether the calling request was interrupted (between sf_intr_begin and
 * sf_intr_end). */
bool sf_cancelled(void);
/* Reply with a negative errno (or 0). */
void sf_reply_err(fuse_req_t req, int rc);
/* Raise a->size to what this mount's open handles wrote (unreported yet). */
void sf_merge_local(struct stria_attr *a);
/* The attributes of ino, merged with what this mount's open handles wrote. */
int sf_getattr(uint64_t ino, struct stria_attr *a);

/* ---- the inode table ---- */
void tab_init(void);
/* The kernel has been told these attributes. */
void tab_note(const struct stria_attr *a);
/* Whether the kernel's picture of ino still matches a (then the page cache
 * may be kept across this open); notes a either way. */
bool tab_unchanged(const struct stria_attr *a);
void tab_open(uint64_t ino, stria_file_t *f);
/* Forget handle f of ino; returns the removal to finish (objects to
 * destroy) if this was the last handle of an unlinked file, else NULL.
 * The caller frees it. */
stria_removed_t *tab_close(uint64_t ino, stria_file_t *f);
/* The furthest end any open handle of ino wrote without reporting it to
 * the MDT yet; 0 if none (open says whether any handle is open; wrote_ns,
 * if not NULL, gets when the last of those writes was made, 0 if none). */
uint64_t tab_local_size(uint64_t ino, bool *open, int64_t *wrote_ns);
/* ino lost its last link: if handles are open here, keep rm (the table
 * owns it now) for the last close and return true (the caller must not
 * destroy now). */
bool tab_orphan(stria_removed_t *rm);
/* Attributes of an unlinked-but-open inode (nlink 0), if it is one. */
bool tab_orphan_attr(uint64_t ino, struct stria_attr *a);
/* Cut the objects of an unlinked-but-open inode to size (0 if it is not
 * one: the MDT has done it). */
int tab_orphan_truncate(uint64_t ino, uint64_t size);
/* Call fn on every open handle of ino, under the table lock: fn must not
 * block (no RPCs). */
void tab_each(uint64_t ino, void (*fn)(stria_file_t *f, void *arg), void *arg);

/* Write-behind: a write may be acknowledged to the kernel before it is
 * sent, and is then tracked here until it lands. tab_wb_begin waits until
 * no tracked write of ino overlaps [off, off + len) and, if behind and
 * there is room, tracks this one (*slot >= 0: reply first, then write,
 * then tab_wb_end); *slot -1: write, then reply. It returns, instead, an
 * earlier write-behind failure of handle f not yet reported. tab_wb_end
 * ends a tracked write with its result, which f's next write, flush or
 * fsync reports. tab_wb_wait waits until no write of ino is tracked
 * (-EINTR if the caller is interrupted), then returns and clears f's
 * unreported failure (none asked for when f is NULL). Tracked writes count
 * in tab_local_size. */
int tab_wb_begin(uint64_t ino, stria_file_t *f, uint64_t off, uint64_t len, bool behind, int *slot);
void tab_wb_end(int slot, int rc);
/* Before a write of f that may bypass tab_wb_begin: f's earlier
 * write-behind failure (which that write reports instead), else 1 when a
 * tracked write of ino overlaps [off, off + len), else 0. */
int tab_wb_busy(uint64_t ino, stria_file_t *f, uint64_t off, uint64_t len);
int tab_wb_wait(uint64_t ino, stria_file_t *f);

/* READ requests served and their bytes, for stria.mount.stats (fuse_file.c). */
void sf_read_stats(uint64_t *reads, uint64_t *bytes);
/* WRITEs served on write-only handles, which bypass the page cache. */
uint64_t sf_direct_writes(void);

/* ---- operation groups ---- */
void sf_ops_ns(struct fuse_lowlevel_ops *ops);
void sf_ops_file(struct fuse_lowlevel_ops *ops);
void sf_ops_dir(struct fuse_lowlevel_ops *ops);
void sf_ops_xattr(struct fuse_lowlevel_ops *ops);

#endif
