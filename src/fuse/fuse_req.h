/*
 * stria-fuse: the POSIX mount on libfuse3's low-level API. This header is
 * the bottom of the mount's layers (fuse_req.c): its settings, the
 * caller's identity, interrupts, error replies and counters. Above it the
 * inode table (fuse_tab.h), then what the operations share (fuse_reply.h),
 * then the operations (fuse_ops.h), then fuse_main.c; each calls only down.
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
#ifndef STRIA_FUSE_REQ_H
#define STRIA_FUSE_REQ_H

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
    bool cache_dirs;           /* the kernel keeps listings (cache_dirs=1) */
    unsigned wb_test_delay_ms; /* STRIA_TEST_WRITE_DELAY_MS: hold them back (tests) */
    bool kernel_checks;        /* mounted with default_permissions */
    char conf[4096];
};
extern struct sfuse sf;

/* Run the rest of this request as its caller. */
void sf_cred(fuse_req_t req);
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
/* Whether the calling request was interrupted (between sf_intr_begin and
 * sf_intr_end). */
bool sf_cancelled(void);
/* Reply with a negative errno (or 0). */
void sf_reply_err(fuse_req_t req, int rc);

/* A READ served of bytes; a WRITE served on a write-only handle. */
void sf_count_read(uint64_t bytes);
void sf_count_direct_write(void);
/* READ requests served and their bytes, for stria.mount.stats (fuse_file.c). */
void sf_read_stats(uint64_t *reads, uint64_t *bytes);
/* WRITEs served on write-only handles, which bypass the page cache. */
uint64_t sf_direct_writes(void);

#endif
