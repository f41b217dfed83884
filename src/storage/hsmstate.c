/*
 * The restore state of an object being filled from S3 (hsmstate.h): the
 * unit arithmetic of HSM_PULL, and the sidecar that records which units an
 * object holds.
 *
 * The sidecar is made whole or not at all (written beside, synced,
 * renamed, its directory synced); afterwards only its bitmap changes, in
 * place, each bit set after the object's data is durable. Never here:
 * S3, the object's data or its lock (mover.c holds those).
 */
#include "hsmstate.h"

#include "../common/crc.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../proto/layout.h"
#include "../proto/proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC      "STRIAHSM"
#define MAX_UNITS  (1ull << 27) /* a 16 MiB bitmap */
#define MAX_FILE   (1ull << 50)
#define OFF_CRC    (HSM_STATE_HDR - 4)
#define OBJ_PREFIX "objects/"

bool hsm_geom_valid(const struct hsm_geom *g)
{
    if (g->stripe_size < LAYOUT_MIN_STRIPE_SIZE || g->stripe_size > LAYOUT_MAX_STRIPE_SIZE ||
        g->stripe_size % LAYOUT_MIN_STRIPE_SIZE || g->stripe_count == 0 ||
        g->stripe >= g->stripe_count || g->file_size > MAX_FILE || g->comp_start > MAX_FILE ||
        !g->etag[0] || strnlen(g->etag, HSM_STATE_ETAG_MAX) >= HSM_STATE_ETAG_MAX)
        return false;
    return hsm_units(g) <= MAX_UNITS;
}

uint64_t hsm_units(const struct hsm_geom *g)
{
    if (g->file_size <= g->comp_start || !g->stripe_count || !g->stripe_size)
        return 0;
    uint64_t total = (g->file_size - g->comp_start + g->stripe_size - 1) / g->stripe_size;
    return total > g->stripe ? (total - g->stripe + g->stripe_count - 1) / g->stripe_count : 0;
}

struct hsm_unit hsm_unit_at(const struct hsm_geom *g, uint64_t k)
{
    uint64_t u = g->stripe + k * g->stripe_count;
    struct hsm_unit r = {.file_off = g->comp_start + u * g->stripe_size,
                         .obj_off = k * g->stripe_size};
    r.len = MIN((uint64_t)g->stripe_size, g->file_size - r.file_off);
    return r;
}

void hsm_units_meeting(const struct hsm_geom *g, uint64_t off, uint64_t len, uint64_t *lo,
                       uint64_t *hi)
{
    uint64_t n = hsm_units(g), end = MIN(off + len, g->file_size);
    *lo = *hi = 0;
    if (len == 0 || off >= end || end <= g->comp_start || n == 0)
        return;
    uint64_t from = off > g->comp_start ? off - g->comp_start : 0;
    uint64_t u_lo = from / g->stripe_size, u_hi = (end - g->comp_start - 1) / g->stripe_size;
    uint64_t C = g->stripe_count, s = g->stripe;
    /* The object's units among [u_lo, u_hi]: k with u_lo <= s + k*C <= u_hi. */
    uint64_t k_lo = u_lo > s ? (u_lo - s + C - 1) / C : 0;
    if (u_hi < s)
        return;
    uint64_t k_hi = MIN((u_hi - s) / C + 1, n);
    if (k_lo < k_hi) {
        *lo = k_lo;
        *hi = k_hi;
    }
}

bool hsm_geom_same(const struct hsm_geom *a, const struct hsm_geom *b)
{
    return a->file_size == b->file_size && a->comp_start == b->comp_start &&
           a->stripe_size == b->stripe_size && a->stripe_count == b->stripe_count &&
           a->stripe == b->stripe && !strcmp(a->etag, b->etag);
}

void hsm_state_encode(const struct hsm_geom *g, uint8_t out[HSM_STATE_HDR])
{
    memset(out, 0, HSM_STATE_HDR);
    memcpy(out, MAGIC, 8);
    proto_put_le32(out + 8, HSM_STATE_VERSION);
    proto_put_le32(out + 12, g->stripe_size);
    proto_put_le64(out + 16, g->file_size);
    proto_put_le64(out + 24, g->comp_start);
    proto_put_le32(out + 32, g->stripe);
    out[36] = (uint8_t)g->stripe_count;
    out[37] = (uint8_t)(g->stripe_count >> 8);
    size_t el = strnlen(g->etag, HSM_STATE_ETAG_MAX - 1);
    out[38] = (uint8_t)el;
    memcpy(out + 40, g->etag, el);
    proto_put_le32(out + OFF_CRC, crc32c(0, out, OFF_CRC));
}

int hsm_state_decode(const uint8_t *buf, size_t len, struct hsm_geom *g, const uint8_t **bitmap)
{
    if (len < HSM_STATE_HDR || memcmp(buf, MAGIC, 8) ||
        proto_le32(buf + OFF_CRC) != crc32c(0, buf, OFF_CRC) ||
        proto_le32(buf + 8) != HSM_STATE_VERSION || buf[38] >= HSM_STATE_ETAG_MAX || buf[39])
        return -EUCLEAN;
    memset(g, 0, sizeof(*g));
    g->stripe_size = proto_le32(buf + 12);
    g->file_size = proto_le64(buf + 16);
    g->comp_start = proto_le64(buf + 24);
    g->stripe = proto_le32(buf + 32);
    g->stripe_count = (uint16_t)(buf[36] | buf[37] << 8);
    memcpy(g->etag, buf + 40, buf[38]);
    if (memchr(g->etag, 0, buf[38]) || !hsm_geom_valid(g))
        return -EUCLEAN;
    uint64_t n = hsm_units(g);
    size_t bl = hsm_bitmap_len(n);
    if (len != HSM_STATE_HDR + bl)
        return -EUCLEAN;
    const uint8_t *bm = buf + HSM_STATE_HDR;
    if (n % 8 && bm[bl - 1] >> (n % 8))
        return -EUCLEAN; /* bits past the last unit */
    *bitmap = bm;
    return 0;
}

/* ---- the file ---- */

void hsm_state_path(const char *obj_name, char *out, size_t len)
{
    size_t pl = strlen(OBJ_PREFIX);
    snprintf(out, len, "hsm/%s", strncmp(obj_name, OBJ_PREFIX, pl) ? obj_name : obj_name + pl);
}

/* The directory of path (up to its last '/') into dir. */
static void dir_of(const char *path, char *dir, size_t len)
{
    snprintf(dir, len, "%s", path);
    char *sl = strrchr(dir, '/');
    if (sl)
        *sl = 0;
}

static int sync_dir(int dirfd, const char *dir)
{
    int fd = openat(dirfd, dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

int hsm_state_load(int dirfd, const char *obj_name, struct hsm_state *st)
{
    char path[128];
    hsm_state_path(obj_name, path, sizeof(path));
    memset(st, 0, sizeof(*st));
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat sb;
    int rc = 0;
    uint8_t *buf = NULL;
    if (fstat(fd, &sb) < 0) {
        rc = -errno;
        goto out;
    }
    if (sb.st_size < HSM_STATE_HDR ||
        sb.st_size > HSM_STATE_HDR + (off_t)hsm_bitmap_len(MAX_UNITS)) {
        rc = -EUCLEAN;
        goto out;
    }
    if (!(buf = malloc((size_t)sb.st_size))) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = util_pread_zero(fd, buf, (size_t)sb.st_size, 0)))
        goto out;
    const uint8_t *bm;
    if ((rc = hsm_state_decode(buf, (size_t)sb.st_size, &st->g, &bm)))
        goto out;
    st->n = hsm_units(&st->g);
    size_t bl = hsm_bitmap_len(st->n);
    /* Keep the bitmap, dropping the header before it. */
    memmove(buf, bm, bl);
    st->bitmap = buf;
    buf = NULL;
    for (uint64_t k = 0; k < st->n; k++)
        st->have += hsm_bit(st->bitmap, k);
out:
    if (rc == -EUCLEAN)
        log_warn("restore state %s is damaged: the object is fetched again", path);
    free(buf);
    close(fd);
    return rc;
}

int hsm_state_create(int dirfd, const char *obj_name, const struct hsm_geom *g,
                     struct hsm_state *st)
{
    char path[128], tmp[140], dir[128];
    hsm_state_path(obj_name, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    dir_of(path, dir, sizeof(dir));
    memset(st, 0, sizeof(*st));
    st->g = *g;
    st->n = hsm_units(g);
    size_t bl = hsm_bitmap_len(st->n);
    uint8_t *buf = calloc(1, HSM_STATE_HDR + bl);
    if (!buf)
        return -ENOMEM;
    hsm_state_encode(g, buf);
    int rc = 0;
    bool made = false;
    if (mkdirat(dirfd, "hsm", 0700) == 0)
        made = true;
    if (mkdirat(dirfd, dir, 0700) == 0)
        made = true;
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = -errno;
        goto out;
    }
    rc = util_write_full(fd, buf, HSM_STATE_HDR + bl);
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    close(fd);
    if (rc == 0 && renameat(dirfd, tmp, dirfd, path) < 0)
        rc = -errno;
    if (rc == 0)
        rc = sync_dir(dirfd, dir);
    if (rc == 0 && made)
        rc = sync_dir(dirfd, "hsm") ?: sync_dir(dirfd, ".");
    if (rc) {
        unlinkat(dirfd, tmp, 0);
        goto out;
    }
    memmove(buf, buf + HSM_STATE_HDR, bl);
    st->bitmap = buf;
    buf = NULL;
out:
    free(buf);
    return rc;
}

int hsm_state_store_bits(int dirfd, const char *obj_name, const struct hsm_state *st)
{
    char path[128];
    hsm_state_path(obj_name, path, sizeof(path));
    int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = util_pwrite_full(fd, st->bitmap, hsm_bitmap_len(st->n), HSM_STATE_HDR);
    if (rc == 0 && fdatasync(fd) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

int hsm_state_unlink(int dirfd, const char *obj_name)
{
    char path[128], dir[128];
    hsm_state_path(obj_name, path, sizeof(path));
    if (unlinkat(dirfd, path, 0) < 0)
        return errno == ENOENT ? 0 : -errno;
    dir_of(path, dir, sizeof(dir));
    return sync_dir(dirfd, dir);
}

void hsm_state_free(struct hsm_state *st)
{
    free(st->bitmap);
    st->bitmap = NULL;
}
