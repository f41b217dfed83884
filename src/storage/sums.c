#include "sums.h"

#include "../common/crc.h"
#include "../common/util.h"
#include "../proto/csum.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define BS         PROTO_CSUM_BLOCK
#define ENTRY      8u
#define HEAD_XATTR "user.stria.c"
/* A request moves at most PROTO_MAX_BULK bytes: the entries it touches fit
 * on the stack, as does a block (BS): the I/O path allocates nothing. */
#define MAX_ENTS (PROTO_MAX_BULK / BS + 2)

static void sums_name(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s.c", name);
}

int sums_open(int dirfd, const char *name, enum sums_how how, struct sums_obj *o)
{
    *o = (struct sums_obj){.dirfd = dirfd, .name = name, .how = how, .sfd = -1};
    o->fd = openat(dirfd, name,
                   (how == SUMS_READ     ? O_RDONLY
                    : how == SUMS_CHANGE ? O_RDWR
                                         : O_RDWR | O_CREAT) |
                       O_CLOEXEC,
                   0600);
    if (o->fd < 0)
        return -errno;
    struct stat st;
    if (fstat(o->fd, &st) < 0) {
        int rc = -errno;
        close(o->fd);
        return rc;
    }
    o->size = (uint64_t)st.st_size;
    return 0;
}

void sums_close(struct sums_obj *o)
{
    if (o->sfd >= 0)
        close(o->sfd);
    if (o->fd >= 0)
        close(o->fd); /* -1: handed on (stord's sendfile reads) */
}

/* The checksum file, opened when first needed (made, if make): 0 with
 * o->sfd -1 when there is none. */
static int need_file(struct sums_obj *o, bool make)
{
    if (o->sfd >= 0 || (o->sfd_looked && !make))
        return 0;
    char sname[128];
    sums_name(sname, sizeof(sname), o->name);
    int flags = o->how == SUMS_READ ? O_RDONLY : O_RDWR | (make ? O_CREAT : 0);
    o->sfd = openat(o->dirfd, sname, flags | O_CLOEXEC, 0600);
    o->sfd_looked = true;
    if (o->sfd < 0)
        return errno == ENOENT && !make ? 0 : -errno;
    return 0;
}

/* The head's entries: from the attribute, else (an older object, or a file
 * system without user xattrs) from the file. */
static int load_head(struct sums_obj *o)
{
    if (o->head_loaded)
        return 0;
    ssize_t n = fgetxattr(o->fd, HEAD_XATTR, o->head, sizeof(o->head));
    if (n == (ssize_t)sizeof(o->head)) {
        o->head_in_xattr = true;
    } else if (n >= 0 || errno == ERANGE) {
        return -EIO; /* not ours, or damaged: nothing to check against */
    } else if (errno == ENODATA || errno == EOPNOTSUPP) {
        /* Writes move the head to the attribute where there can be one. */
        o->head_in_xattr = errno == ENODATA;
        memset(o->head, 0, sizeof(o->head));
        int rc = need_file(o, false);
        if (rc || (o->sfd >= 0 && (rc = util_pread_zero(o->sfd, o->head, sizeof(o->head), 0))))
            return rc;
    } else {
        return -errno;
    }
    o->head_loaded = true;
    return 0;
}

/* How many of blocks [first, first + n) are in the head (then loaded). */
static int head_part(struct sums_obj *o, uint64_t first, uint32_t n, uint32_t *h)
{
    *h = first < SUMS_HEAD ? (uint32_t)MIN((uint64_t)n, SUMS_HEAD - first) : 0;
    return *h ? load_head(o) : 0;
}

/* Entries of blocks [first, first + n) into out (zeros: none). */
static int ents_read(struct sums_obj *o, uint64_t first, uint32_t n, uint8_t *out)
{
    uint32_t h;
    int rc = head_part(o, first, n, &h);
    if (rc)
        return rc;
    if (h)
        memcpy(out, o->head + first * ENTRY, (size_t)h * ENTRY);
    if (h == n)
        return 0;
    if ((rc = need_file(o, false)))
        return rc;
    if (o->sfd < 0) {
        memset(out + (size_t)h * ENTRY, 0, (size_t)(n - h) * ENTRY);
        return 0;
    }
    return util_pread_zero(o->sfd, out + (size_t)h * ENTRY, (size_t)(n - h) * ENTRY,
                           (first + h) * ENTRY);
}

/* Store the entries of blocks [first, first + n): those of the head in
 * memory, until head_flush. */
static int ents_write(struct sums_obj *o, uint64_t first, uint32_t n, const uint8_t *ents)
{
    uint32_t h;
    int rc = head_part(o, first, n, &h);
    if (rc)
        return rc;
    if (h) {
        memcpy(o->head + first * ENTRY, ents, (size_t)h * ENTRY);
        o->head_dirty = true;
    }
    if (h == n)
        return 0;
    if ((rc = need_file(o, true)))
        return rc;
    return util_pwrite_full(o->sfd, ents + (size_t)h * ENTRY, (size_t)(n - h) * ENTRY,
                            (first + h) * ENTRY);
}

/* Write the head if it changed: once per change of the object, as the
 * last step of each sums_before_*, so before the data it covers. */
static int head_flush(struct sums_obj *o)
{
    if (!o->head_dirty)
        return 0;
    o->head_dirty = false;
    if (o->head_in_xattr && fsetxattr(o->fd, HEAD_XATTR, o->head, sizeof(o->head), 0) < 0) {
        if (errno != EOPNOTSUPP)
            return -errno;
        o->head_in_xattr = false;
    }
    if (o->head_in_xattr)
        return 0;
    int rc = need_file(o, true);
    return rc ? rc : util_pwrite_full(o->sfd, o->head, sizeof(o->head), 0);
}

/* Forget the entries of blocks from keep on (the object was cut). */
static int ents_cut(struct sums_obj *o, uint64_t keep)
{
    int rc;
    if (keep < SUMS_HEAD) {
        if ((rc = load_head(o)))
            return rc;
        static const uint8_t zeros[SUMS_HEAD * ENTRY];
        size_t at = (size_t)keep * ENTRY;
        if (memcmp(o->head + at, zeros, sizeof(zeros) - at)) {
            memset(o->head + at, 0, sizeof(zeros) - at);
            o->head_dirty = true;
        }
    }
    if ((rc = need_file(o, false)))
        return rc;
    if (o->sfd >= 0 && ftruncate(o->sfd, (off_t)(keep * ENTRY)) < 0)
        return -errno;
    return 0;
}

int sums_sync(struct sums_obj *o)
{
    /* fsync, not fdatasync: the head's attribute is the inode's, and
     * fdatasync may leave a change of only that behind. */
    int rc = need_file(o, false);
    if (rc)
        return rc;
    if (fsync(o->fd) < 0 || (o->sfd >= 0 && fdatasync(o->sfd) < 0))
        return -errno;
    return 0;
}

int sums_clear_head(int fd)
{
    if (fremovexattr(fd, HEAD_XATTR) < 0 && errno != ENODATA && errno != EOPNOTSUPP)
        return -errno;
    return 0;
}

void sums_unlink(int dirfd, const char *name)
{
    char sname[128];
    sums_name(sname, sizeof(sname), name);
    unlinkat(dirfd, sname, 0);
}

/* Block b's new CRC is c: it becomes the first of its entry, the first
 * before becoming the second (unless it is c already). */
static void entry_set(uint8_t *e, uint32_t c)
{
    uint32_t cur = proto_le32(e);
    if (cur == c)
        return;
    proto_put_le32(e + 4, cur);
    proto_put_le32(e, c);
}

/* The CRC32C block b will have: its bytes [bs, old_end) as they are, then
 * len bytes of data at object offset at (within the block), up to end. */
static int block_crc(struct sums_obj *o, uint64_t b, uint64_t at, const uint8_t *data, uint32_t len,
                     uint64_t end, uint8_t *tmp, uint32_t *crc)
{
    uint64_t bs = b * BS;
    uint64_t old_end = MIN(o->size, bs + BS);
    int rc = old_end > bs ? util_pread_zero(o->fd, tmp, old_end - bs, bs) : 0;
    if (rc)
        return rc;
    if (end > old_end)
        memset(tmp + (old_end > bs ? old_end - bs : 0), 0, end - MAX(old_end, bs));
    if (data)
        memcpy(tmp + (at - bs), data, len);
    else
        memset(tmp + (at - bs), 0, len);
    *crc = crc32c(0, tmp, end - bs);
    return 0;
}

static int rewrite_block(struct sums_obj *o, uint64_t b, uint64_t z, uint64_t zl, uint64_t end,
                         uint8_t *tmp);

int sums_before_write(struct sums_obj *o, uint64_t off, const uint8_t *data, uint32_t len,
                      const uint8_t *crcs)
{
    if (len == 0)
        return 0;
    uint64_t first = off / BS;
    uint32_t n = proto_csum_chunks(off, len);
    if (n > MAX_ENTS)
        return -EINVAL;
    uint8_t ents[MAX_ENTS * ENTRY], tmp[BS];
    int rc = 0;
    if (o->size % BS && o->size / BS < first) {
        /* Writing past the end: the block the old end falls in gains zeros
         * (a hole) up to its end. */
        rc = rewrite_block(o, o->size / BS, 0, 0, off + len, tmp);
    }
    if (!rc)
        rc = ents_read(o, first, n, ents);
    for (uint32_t i = 0; i < n && !rc; i++) {
        uint64_t b = first + i, bs = b * BS;
        uint32_t cl = proto_csum_chunk_len(off, len);
        uint64_t old_end = MIN(o->size, bs + BS), end = MAX(old_end, off + cl);
        uint32_t c = proto_le32(crcs + 4 * i);
        /* A chunk from the block's start to (past) its old end is the whole
         * block: its wire CRC is the block's. Otherwise merge. */
        if (off != bs || off + cl < old_end)
            rc = block_crc(o, b, off, data, cl, end, tmp, &c);
        entry_set(ents + (size_t)i * ENTRY, c);
        off += cl;
        data += cl;
        len -= cl;
    }
    if (!rc)
        rc = ents_write(o, first, n, ents);
    return rc ? rc : head_flush(o);
}

/* Give block b the CRC of its bytes as they will be, zeros in [z, z+zl)
 * and the object ending at end; 0 when it keeps no bytes. */
static int rewrite_block(struct sums_obj *o, uint64_t b, uint64_t z, uint64_t zl, uint64_t end,
                         uint8_t *tmp)
{
    uint64_t bs = b * BS;
    uint8_t e[ENTRY];
    int rc = ents_read(o, b, 1, e);
    if (rc)
        return rc;
    uint32_t c = 0;
    end = MIN(end, bs + BS);
    if (end > bs) {
        uint64_t zs = MAX(z, bs), ze = MIN(z + zl, end);
        uint64_t keep = o->size;
        o->size = MIN(o->size, end); /* bytes past the new end are gone */
        rc = block_crc(o, b, zs < ze ? zs : bs, NULL, zs < ze ? (uint32_t)(ze - zs) : 0, end, tmp,
                       &c);
        o->size = keep;
        if (rc)
            return rc;
    }
    entry_set(e, c);
    return ents_write(o, b, 1, e);
}

int sums_before_resize(struct sums_obj *o, uint64_t size)
{
    if (size == o->size)
        return 0;
    uint8_t tmp[BS];
    int rc = 0;
    if (size < o->size) {
        /* The block the new end falls in keeps part of its bytes. */
        if (size % BS)
            rc = rewrite_block(o, size / BS, 0, 0, size, tmp);
        if (!rc)
            rc = ents_cut(o, (size + BS - 1) / BS);
    } else if (o->size % BS) {
        /* The block the old end falls in gains zeros. */
        rc = rewrite_block(o, o->size / BS, 0, 0, size, tmp);
    }
    return rc ? rc : head_flush(o);
}

int sums_before_punch(struct sums_obj *o, uint64_t off, uint64_t len)
{
    if (off >= o->size || len == 0)
        return 0;
    uint64_t end = MIN(off + len, o->size);
    uint8_t tmp[BS];
    int rc = 0;
    for (uint64_t b = off / BS; b * BS < end && !rc; b++)
        rc = rewrite_block(o, b, off, end - off, o->size, tmp);
    return rc ? rc : head_flush(o);
}

int sums_entries(struct sums_obj *o, uint64_t first, uint32_t n, uint8_t *ents)
{
    return n > MAX_ENTS ? -EINVAL : ents_read(o, first, n, ents);
}

int sums_verify(struct sums_obj *o, uint64_t first, uint32_t n, const uint8_t *buf,
                uint32_t *crc_out, uint64_t *bad_off)
{
    if (n > MAX_ENTS)
        return -EINVAL;
    uint8_t ents[MAX_ENTS * ENTRY];
    int rc = ents_read(o, first, n, ents);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t bs = (first + i) * BS;
        uint64_t end = MIN(o->size, bs + BS);
        uint32_t c = end > bs ? crc32c(0, buf + (size_t)i * BS, end - bs) : 0;
        if (crc_out)
            crc_out[i] = c;
        if (rc)
            continue;
        uint32_t a = proto_le32(ents + (size_t)i * ENTRY), p = proto_le32(ents + i * ENTRY + 4);
        if ((a || p) && c != a && c != p) {
            *bad_off = bs;
            rc = -EIO;
        }
    }
    return rc;
}

int sums_heal(struct sums_obj *o, uint64_t *healed, uint64_t *first_off)
{
    uint8_t buf[BS], e[ENTRY];
    *healed = 0;
    for (uint64_t b = 0; b * BS < o->size; b++) {
        uint64_t bs = b * BS, end = MIN(o->size, bs + BS);
        int rc = util_pread_zero(o->fd, buf, end - bs, bs);
        if (rc || (rc = ents_read(o, b, 1, e)))
            return rc;
        uint32_t c = crc32c(0, buf, end - bs), a = proto_le32(e), p = proto_le32(e + 4);
        if (!(a || p) || c == a || c == p)
            continue;
        if (!(*healed)++)
            *first_off = bs;
        proto_put_le32(e, c);
        proto_put_le32(e + 4, 0);
        if ((rc = ents_write(o, b, 1, e)))
            return rc;
    }
    return head_flush(o);
}
