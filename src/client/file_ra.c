/*
 * Reads of file handles (file_int.h; the stria_pread and
 * stria_read_range of stria.h), and their read-ahead.
 *
 * Consistency is close-to-open: a read past the size the handle knows
 * asks the MDT first. A small read that continues the last one fetches
 * the rest of its piece into the handle's read-ahead buffer (at most
 * RA_MAX_BUFS handles of a client have one), and the reads after it are
 * answered from there. An open that reads takes a Data-on-MDT file's
 * first bytes with it (OPEN's dom_len) into the read-ahead buffer, so that
 * open, read and close of a small file are one round trip; the buffer is
 * a snapshot that any change this client makes to a file meanwhile voids
 * (the write epoch, file.c's written()).
 */
#include "file_int.h"

#include "../common/log.h"
#include "../common/util.h"
#include "../proto/csum.h"
#include "gather.h"
#include "inode.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define RA_MAX_BUFS 16

/* A read-ahead buffer (RA_CAP bytes), or NULL: past RA_MAX_BUFS handles
 * of fs go without. Freed by file_ra_put. */
char *file_ra_get(stria_fs_t *fs)
{
    char *b = NULL;
    if (atomic_fetch_add(&fs->ra_bufs, 1) < RA_MAX_BUFS)
        b = malloc(RA_CAP);
    if (!b)
        atomic_fetch_sub(&fs->ra_bufs, 1);
    return b;
}

void file_ra_put(stria_fs_t *fs, char *b)
{
    if (b) {
        free(b);
        atomic_fetch_sub(&fs->ra_bufs, 1);
    }
}

bool file_ra_took(uint64_t ino, uint64_t size, const struct layout *l, const char *buf,
                  uint32_t got, const struct proto_blob *crcs, const char *by)
{
    if (!got || !buf)
        return false;
    uint64_t bad = 0;
    if (got > size || got > layout_dom_size(l) ||
        proto_csum_check(0, (const uint8_t *)buf, got, crcs, NULL, &bad)) {
        log_info("inode %" PRIx64 ": the bytes its %s brought fail their check at %" PRIu64
                 ": read again",
                 ino, by, bad);
        return false;
    }
    return true;
}

void file_ra_adopt(stria_file_t *f, char *buf, uint32_t got, uint64_t epoch)
{
    f->ra_buf = buf;
    f->ra_off = 0;
    f->ra_len = got;
    f->ra_zeros = got == f->size ? MIN(layout_dom_size(&f->layout), RA_CAP) : got;
    f->ra_epoch = epoch;
}

void file_ra_opened(stria_file_t *f, const struct proto_open_rep *r, char *ra, uint32_t got,
                    uint64_t epoch)
{
    if (file_ra_took(f->ino, r->attr.size, &f->layout, ra, got, &r->dom_crcs, "open"))
        file_ra_adopt(f, ra, got, epoch);
    else
        file_ra_put(f->fs, ra);
}

/* The first bytes of [off, off + len) that the read-ahead buffer holds,
 * copied to buf: how many (0: none). zeros: also those the open's view of
 * the file saw as zeros past its end (ra_zeros), for a reader that reads
 * past the size it knows (the mount's pages). */
static size_t ra_take(stria_file_t *f, void *buf, size_t len, uint64_t off, bool zeros)
{
    stria_fs_t *fs = f->fs;
    uint64_t epoch = atomic_load_explicit(&fs->write_epoch, memory_order_acquire);
    pthread_mutex_lock(&f->ra_lock);
    uint64_t data = f->ra_off + f->ra_len, end = zeros ? MAX(f->ra_zeros, data) : data;
    size_t n = 0;
    if (f->ra_len && f->ra_epoch == epoch && off >= f->ra_off && off < end) {
        n = (size_t)MIN((uint64_t)len, end - off);
        size_t held = off < data ? (size_t)MIN((uint64_t)n, data - off) : 0;
        util_copy(buf, f->ra_buf + (off - f->ra_off), held);
        memset((char *)buf + held, 0, n - held);
        f->read_end = off + n;
    }
    pthread_mutex_unlock(&f->ra_lock);
    if (n)
        atomic_fetch_add_explicit(&fs->ra_hits, 1, memory_order_relaxed);
    return n;
}

/* A small read [off, off + len) below size that the read-ahead buffer
 * does not hold (ra_take): one that starts where the last one ended
 * fetches the rest of its piece (at most RA_CAP, not past size) into the
 * buffer and is answered from it. Any other read drops the buffer. */
static ssize_t read_ahead(stria_file_t *f, void *buf, size_t len, uint64_t off, uint64_t size)
{
    stria_fs_t *fs = f->fs;
    uint64_t epoch = atomic_load_explicit(&fs->write_epoch, memory_order_acquire);
    int rc = 0;
    pthread_mutex_lock(&f->ra_lock);
    bool seq = off == f->read_end;
    f->read_end = off + len;
    f->ra_len = 0;
    struct layout_piece lp;
    uint64_t want = 0;
    if (seq && layout_map(&f->layout, off, RA_CAP, &lp) == 0)
        want = MIN((uint64_t)lp.len, size - off);
    if (want > len && !f->ra_buf)
        f->ra_buf = file_ra_get(fs); /* bounded: past RA_MAX_BUFS handles read as asked */
    if (want > len && f->ra_buf) {
        rc = io_rw(fs, f->ino, &f->layout, false, f->ra_buf, want, off);
        if (rc == 0) {
            f->ra_off = off;
            f->ra_len = want;
            f->ra_zeros = off + want;
            f->ra_epoch = epoch;
            util_copy(buf, f->ra_buf, len);
            atomic_fetch_add_explicit(&fs->ra_fills, 1, memory_order_relaxed);
        }
        pthread_mutex_unlock(&f->ra_lock);
        return rc ? rc : (ssize_t)len;
    }
    pthread_mutex_unlock(&f->ra_lock);
    rc = io_rw(fs, f->ino, &f->layout, false, buf, len, off);
    return rc ? rc : (ssize_t)len;
}

static int refresh_size(stria_file_t *f)
{
    struct proto_attr a;
    int rc = cl_getattr(f->fs, f->ino, &a);
    if (rc == 0) {
        pthread_mutex_lock(&f->lock);
        f->size = MAX(f->size, a.size);
        pthread_mutex_unlock(&f->lock);
    }
    return rc;
}

/* Before a read of [off, off + len): this client's pending writes to the
 * file land, the layout covers the range, and a released file's range is
 * back from its repository. */
static int read_prepare(stria_file_t *f, uint64_t off, size_t len)
{
    gather_drain(f->fs, f->ino);
    int rc = file_learn(f, off, off + len, false);
    if (rc)
        return rc;
    return layout_released(&f->layout) ? file_fetch_released(f, off, len, false) : 0;
}

ssize_t stria_pread(stria_file_t *f, void *buf, size_t len, off_t off)
{
    if (f->is_dir)
        return -EISDIR;
    if ((f->flags & O_ACCMODE) == O_WRONLY)
        return -EBADF;
    if (off < 0)
        return -EINVAL;
    if (len > SSIZE_MAX)
        len = SSIZE_MAX;
    pthread_mutex_lock(&f->lock);
    uint64_t size = MAX(f->size, f->wrote_end);
    pthread_mutex_unlock(&f->lock);
    /* Past what we know: another client may have grown the file. */
    if ((uint64_t)off + len > size && !f->orphan) {
        int rc = refresh_size(f);
        if (rc)
            return rc;
        pthread_mutex_lock(&f->lock);
        size = MAX(f->size, f->wrote_end);
        pthread_mutex_unlock(&f->lock);
    }
    if ((uint64_t)off >= size || len == 0)
        return 0;
    len = MIN(len, size - (uint64_t)off);
    int src = read_prepare(f, (uint64_t)off, len);
    if (src)
        return src;
    size_t took = ra_take(f, buf, len, (uint64_t)off, false);
    if (took == len)
        return (ssize_t)len;
    char *rest = (char *)buf + took;
    uint64_t at = (uint64_t)off + took;
    len -= took;
    if (len < RA_CAP) {
        ssize_t n = read_ahead(f, rest, len, at, size);
        return n < 0 ? n : (ssize_t)(took + len);
    }
    int rc = io_rw(f->fs, f->ino, &f->layout, false, rest, len, at);
    pthread_mutex_lock(&f->ra_lock);
    f->read_end = at + len;
    pthread_mutex_unlock(&f->ra_lock);
    return rc ? rc : (ssize_t)(took + len);
}

ssize_t stria_read_range(stria_file_t *f, void *buf, size_t len, off_t off)
{
    if (f->is_dir)
        return -EISDIR;
    if (off < 0)
        return -EINVAL;
    if (len > SSIZE_MAX)
        len = SSIZE_MAX;
    int src = read_prepare(f, (uint64_t)off, len);
    if (src)
        return src;
    /* What the open brought, with the zeros its view saw past the end:
     * the mount's pages of a small file need no request. */
    size_t took = ra_take(f, buf, len, (uint64_t)off, true);
    int rc = took == len ? 0
                         : io_rw(f->fs, f->ino, &f->layout, false, (char *)buf + took, len - took,
                                 (uint64_t)off + took);
    return rc ? rc : (ssize_t)len;
}
