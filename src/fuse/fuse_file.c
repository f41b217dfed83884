/*
 * File data: create, open, read, write, flush, release, fsync, fallocate.
 *
 * A FUSE file handle is a libstria handle. The kernel supplies write
 * offsets (also for O_APPEND), so O_APPEND never reaches libstria. At open
 * the fresh attributes from the MDT are compared with what the kernel was
 * last told: unchanged, the page cache is kept (a dataset file read every
 * epoch stays in memory); changed, the kernel drops its cached data and
 * attributes, which is what makes opens see what other mounts closed.
 */
#include "fuse_ops.h"
#include "fuse_reply.h"
#include "fuse_tab.h"

#include "../common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_BUF (1u << 20)

static stria_file_t *fh(struct fuse_file_info *fi)
{
    return (stria_file_t *)(uintptr_t)fi->fh;
}

/* Flags libstria should see: the kernel handles O_APPEND offsets itself.
 * O_DIRECT, O_SYNC and O_DSYNC handles are never gathered by libstria, as
 * their writes were never behind here. */
static int open_flags(int flags)
{
    return flags & (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_NOFOLLOW | O_DIRECTORY | O_DIRECT |
                    O_SYNC | O_DSYNC);
}

/* Close a handle whose open the caller never saw (interrupted), finishing
 * an unlink that waited for it. */
static void drop_unreplied(uint64_t ino, stria_file_t *f)
{
    stria_removed_t *rm = tab_close(ino, f);
    stria_close(f);
    stria_removed_finish(sf.fs, rm);
}

/* A write-only handle writes around the kernel's page cache (-o
 * direct_writes): the kernel then hands the caller's pages to the WRITE
 * instead of copying them into its cache first, which was a quarter of
 * the CPU of a large write through the mount. Nothing of such a handle is
 * ever read, and it cannot be mapped. The flags are the open's, which the
 * kernel also passes with every WRITE. */
static bool direct_handle(int flags)
{
    return sf.direct_writes && (flags & O_ACCMODE) == O_WRONLY;
}

/* Acknowledge size bytes written at off. A direct handle's write first
 * drops what other handles of ino hold of the range in the page cache, so
 * that their next read sees it (kernels before 6.6 do not do that for a
 * direct write). */
static void reply_written(fuse_req_t req, fuse_ino_t ino, const struct fuse_file_info *fi,
                          off_t off, size_t size)
{
    if (direct_handle(fi->flags)) {
        sf_count_direct_write();
        if (size)
            fuse_lowlevel_notify_inval_inode(sf.se, ino, off, (off_t)size);
    }
    fuse_reply_write(req, size);
}

static void sf_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
    stria_file_t *f;
    struct stria_attr a;
    sf_cred(req);
    int rc = SF_INTR(
        req, stria_open_at(sf.fs, parent, name, open_flags(fi->flags) | O_CREAT, mode, &f, &a));
    if (rc) {
        sf_reply_err(req, rc);
        return;
    }
    struct fuse_entry_param e;
    sf_entry(&a, &e);
    if (sf.writeback)
        stria_file_allow_read(f);
    tab_open(a.ino, f);
    fi->fh = (uintptr_t)f;
    fi->keep_cache = 0;
    fi->direct_io = direct_handle(fi->flags);
    if (fuse_reply_create(req, &e, fi) == -ENOENT)
        drop_unreplied(a.ino, f); /* interrupted: nobody will release it */
}

static void emptied_one(stria_file_t *f, void *arg)
{
    (void)arg;
    stria_file_truncated(f, 0);
}

static void sf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    stria_file_t *f;
    struct stria_attr a;
    sf_cred(req);
    int flags = open_flags(fi->flags) & ~(O_CREAT | O_EXCL);
    /* O_TRUNC under other handles of this mount: what they wrote goes too,
     * and must not be reported back as a size afterwards. */
    if (flags & O_TRUNC)
        sf_report_local(ino, NULL);
    int rc = SF_INTR(req, stria_open_at(sf.fs, ino, "", flags, 0, &f, &a));
    if (rc) {
        sf_reply_err(req, rc);
        return;
    }
    if (flags & O_TRUNC)
        tab_each(ino, emptied_one, NULL);
    /* Writes of this mount's other handles count as known, not as change. */
    bool open;
    uint64_t local = tab_local_size(ino, &open, NULL);
    bool keep = tab_unchanged(&a) || (open && local >= a.size);
    if (!keep)
        fuse_lowlevel_notify_inval_inode(sf.se, ino, -1, 0); /* attributes only */
    if (sf.writeback)
        stria_file_allow_read(f);
    tab_open(ino, f);
    fi->fh = (uintptr_t)f;
    fi->keep_cache = keep;
    /* A close(2) of a read-only handle has nothing to report (no size, no
     * write-behind): the kernel need not send a flush for it, which is one
     * request of five per file read (lookup, open, read, flush, release). */
    fi->noflush = (flags & O_ACCMODE) == O_RDONLY;
    fi->direct_io = direct_handle(flags);
    if (fuse_reply_open(req, fi) == -ENOENT)
        drop_unreplied(ino, f);
}

/* One read buffer per worker thread, freed when libfuse retires the thread. */
static pthread_key_t read_key;
static pthread_once_t read_once = PTHREAD_ONCE_INIT;

static void read_key_init(void)
{
    pthread_key_create(&read_key, free);
}

static char *thread_read_buf(void)
{
    pthread_once(&read_once, read_key_init);
    char *buf = pthread_getspecific(read_key);
    if (!buf && (buf = malloc(READ_BUF)))
        pthread_setspecific(read_key, buf);
    return buf;
}

static void sf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    char *read_buf = thread_read_buf();
    if (!read_buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    if (size > READ_BUF)
        size = READ_BUF;
    sf_cred(req);
    /* What this mount acknowledged must read back, also through another
     * handle and after the page cache let go of it. */
    int rc = SF_INTR(req, tab_wb_wait(ino, NULL));
    if (rc) {
        sf_reply_err(req, rc);
        return;
    }
    /* The kernel knows this mount's size exactly (its own writes and what
     * we told it) and asks only below it; a short reply would tell it the
     * file ended. So read the whole range, holes as zeros. */
    ssize_t n = SF_INTR(req, stria_read_range(fh(fi), read_buf, size, off));
    if (n < 0) {
        sf_reply_err(req, (int)n);
        return;
    }
    sf_count_read((uint64_t)n);
    fuse_reply_buf(req, read_buf, (size_t)n);
}

/* Write-behind (-o write_behind, the default): a buffered write is
 * acknowledged at once and then sent from this same thread, while the
 * kernel passes the caller's next write to another; so one writer keeps
 * several writes on their way, as the libstria calls keep several pieces.
 * The data is libfuse's copy, ours until we return. A failure is reported
 * by the handle's next write, flush (close) or fsync, as a local file
 * system reports write-back failures; reads, truncates and closes of the
 * file wait for what is on its way (fuse_tab.c). O_DIRECT and O_SYNC
 * writes are never behind. Small writes that continue one another are
 * gathered by libstria into stripe-piece writes (stria.h): a program
 * writing 4 KiB at a time costs the OSTs one request per MiB, not 256. */
static void sf_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    stria_file_t *f = fh(fi);
    bool behind = sf.write_behind && !(fi->flags & (O_DIRECT | O_SYNC | O_DSYNC));
    int slot, rc;
    size_t took = 0;
    if (sf_write_kills_privs && (rc = sf_write_drop_privs(req, ino))) {
        sf_reply_err(req, rc);
        return;
    }
    /* A small write that continues the last one: into libstria's buffer
     * now, in the order the kernel sent them (stria_pwrite_nowait), unless
     * a write acknowledged earlier over the same bytes is still on its way
     * here. Neither credentials nor interrupts: what gathering sends needs
     * none, and a send of acknowledged writes is never abandoned. */
    if (behind && (rc = tab_wb_busy(ino, f, (uint64_t)off, size)) < 0) {
        sf_reply_err(req, rc);
        return;
    }
    if (behind && rc == 0) {
        ssize_t n = stria_pwrite_nowait(f, buf, size, off);
        if (n < 0) {
            sf_reply_err(req, (int)n);
            return;
        }
        took = (size_t)n;
        if (took == size) {
            reply_written(req, ino, fi, off, size);
            return;
        }
    }
    const char *rest = buf + took;
    size_t left = size - took;
    off_t at = off + (off_t)took;
    sf_cred(req);
    rc = SF_INTR(req, tab_wb_begin(ino, f, (uint64_t)at, left, behind, &slot));
    if (rc) {
        sf_reply_err(req, rc);
        return;
    }
    if (slot >= 0) {
        reply_written(req, ino, fi, off, size);
        if (sf.wb_test_delay_ms)
            usleep(sf.wb_test_delay_ms * 1000);
        ssize_t n = stria_pwrite(f, rest, left, at);
        tab_wb_end(slot, n < 0 ? (int)n : 0);
        return;
    }
    ssize_t n = SF_INTR(req, stria_pwrite(f, rest, left, at));
    if (n < 0)
        sf_reply_err(req, (int)n);
    else
        reply_written(req, ino, fi, off, took + (size_t)n);
}

/* Every close(2): report the size, so the next opener anywhere sees it. */
static void sf_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    sf_cred(req);
    int rc = SF_INTR(req, tab_wb_wait(ino, fh(fi)));
    sf_reply_err(req, rc ? rc : SF_INTR(req, stria_flush(fh(fi))));
}

static void sf_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    stria_file_t *f = fh(fi);
    /* Nothing may still be writing through f (no caller to interrupt this
     * wait); a failure not reported by now has no one left to hear it but
     * the log. */
    int rc = tab_wb_wait(ino, f);
    if (rc)
        log_warn("inode %" PRIu64 ": a write acknowledged earlier failed and no flush or fsync "
                 "reported it: %s",
                 (uint64_t)ino, log_err(rc));
    stria_removed_t *rm = tab_close(ino, f);
    int crc = stria_close(f);
    if (crc && !rc)
        log_warn("inode %" PRIu64 ": its last close failed (a gathered write acknowledged "
                 "earlier, or its size report) and no flush or fsync reported it: %s",
                 (uint64_t)ino, log_err(crc));
    stria_removed_finish_behind(sf.fs, rm); /* unlinked while open: its objects go now */
    sf_reply_err(req, crc);
}

/* fsync is of the file: what other handles here wrote counts too. */
static int fsync_file(fuse_ino_t ino, stria_file_t *f)
{
    int rc = sf_report_local(ino, f);
    return rc ? rc : stria_fsync(f);
}

static void sf_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)datasync;
    sf_cred(req);
    sf_reply_err(req, SF_INTR(req, fsync_file(ino, fh(fi))));
}

static void sf_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
                         struct fuse_file_info *fi)
{
    stria_file_t *f = fh(fi);
    int rc;
    if (off < 0 || len <= 0) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    sf_cred(req);
    if ((rc = SF_INTR(req, tab_wb_wait(ino, NULL)))) {
        sf_reply_err(req, rc);
        return;
    }
    uint64_t end = (uint64_t)off + (uint64_t)len;
    switch (mode) {
    case 0:
        /* Space is not reserved on the OSTs; the size and zeros are right. */
        rc = stria_fextend(f, (off_t)end);
        break;
    case FALLOC_FL_KEEP_SIZE:
        rc = 0;
        break;
    case FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE:
        rc = stria_fpunch(f, off, len);
        break;
    case FALLOC_FL_ZERO_RANGE:
    case FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE:
        rc = stria_fpunch(f, off, len);
        if (rc == 0 && !(mode & FALLOC_FL_KEEP_SIZE))
            rc = stria_fextend(f, (off_t)end);
        break;
    default:
        rc = -EOPNOTSUPP;
    }
    sf_reply_err(req, rc);
}

void sf_ops_file(struct fuse_lowlevel_ops *ops)
{
    ops->create = sf_create;
    ops->open = sf_open;
    ops->read = sf_read;
    ops->write = sf_write;
    ops->flush = sf_flush;
    ops->release = sf_release;
    ops->fsync = sf_fsync;
    ops->fallocate = sf_fallocate;
}
