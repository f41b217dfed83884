/*
 * Data-on-MDT records (dom_rec.h). A record is
 *   u8 version (1), 3 bytes zero, u32 len (little-endian),
 *   ceil(len / PROTO_CSUM_BLOCK) CRC32Cs (u32, little-endian), len bytes,
 * the CRC of the last block over its len % PROTO_CSUM_BLOCK bytes only.
 * A change rewrites the whole record (LMDB copies a value on every put in
 * any case); records are at most a component's size.
 */
#include "dom_rec.h"

#include "../../common/crc.h"
#include "../../proto/csum.h"
#include "env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DOM_VERSION 1
#define DOM_HDR     8

static const MDB_val total_key = {9, "dom_bytes"};

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint32_t nblocks(uint64_t len)
{
    return (uint32_t)((len + PROTO_CSUM_BLOCK - 1) / PROTO_CSUM_BLOCK);
}

/* A record as read: its len, CRCs and bytes (pointing into LMDB's page). */
struct rec {
    uint32_t len;
    const uint8_t *crcs, *data;
};

static int get(struct meta_txn *t, uint64_t ino, struct rec *r, MDB_val *raw)
{
    uint8_t kb[8];
    be64(kb, ino);
    MDB_val k = {8, kb};
    memset(r, 0, sizeof(*r));
    int rc = mdb_err(mdb_get(t->txn, t->store->dom, &k, raw));
    if (rc)
        return rc;
    const uint8_t *p = raw->mv_data;
    if (raw->mv_size < DOM_HDR || p[0] != DOM_VERSION)
        return -EUCLEAN;
    r->len = rd32(p + 4);
    size_t want = DOM_HDR + 4ull * nblocks(r->len) + r->len;
    if (raw->mv_size != want)
        return -EUCLEAN;
    r->crcs = p + DOM_HDR;
    r->data = r->crcs + 4ull * nblocks(r->len);
    return 0;
}

/* Block b of r against its CRC. */
static bool block_ok(const struct rec *r, uint32_t b)
{
    uint64_t at = (uint64_t)b * PROTO_CSUM_BLOCK;
    uint32_t n = (uint32_t)(r->len - at < PROTO_CSUM_BLOCK ? r->len - at : PROTO_CSUM_BLOCK);
    return crc32c(0, r->data + at, n) == rd32(r->crcs + 4ull * b);
}

int meta_dom_total(struct meta_txn *t, uint64_t *bytes)
{
    MDB_val k = total_key, v;
    int rc = mdb_err(mdb_get(t->txn, t->store->info, &k, &v));
    *bytes = 0;
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return rc;
    if (v.mv_size != 8)
        return -EUCLEAN;
    *bytes = rd_be64(v.mv_data);
    return 0;
}

static int total_txn(struct meta_txn *t, void *arg)
{
    return meta_dom_total(t, arg);
}

int meta_store_dom_total(struct meta_store *s, uint64_t *bytes)
{
    *bytes = 0;
    return meta_store_read(s, NULL, total_txn, bytes);
}

static int add_total(struct meta_txn *t, int64_t delta)
{
    uint64_t total;
    int rc = meta_dom_total(t, &total);
    if (rc || !delta)
        return rc;
    total = delta < 0 && (uint64_t)-delta > total ? 0 : total + (uint64_t)delta;
    uint8_t b[8];
    be64(b, total);
    MDB_val k = total_key, v = {8, b};
    t->wrote = true;
    return mdb_err(mdb_put(t->txn, t->store->info, &k, &v, 0));
}

/* Put a record of len bytes: the first keep of r's, then zeros, with data
 * (n bytes at off, inside len) over them; only the blocks that changed
 * get new CRCs, after the old ones were checked. */
static int put(struct meta_txn *t, uint64_t ino, const struct rec *r, uint32_t keep, uint32_t len,
               uint64_t off, const void *data, uint32_t n)
{
    uint32_t nb = nblocks(len);
    size_t size = DOM_HDR + 4ull * nb + len;
    uint8_t *buf = malloc(size);
    if (!buf)
        return -ENOMEM;
    uint8_t *crcs = buf + DOM_HDR, *bytes = crcs + 4ull * nb;
    memset(buf, 0, DOM_HDR);
    buf[0] = DOM_VERSION;
    wr32(buf + 4, len);
    if (keep)
        memcpy(bytes, r->data, keep);
    memset(bytes + keep, 0, len - keep);
    if (n)
        memcpy(bytes + off, data, n);
    /* A block whose bytes are all r's block's keeps its CRC; the rest are
     * summed again. */
    for (uint32_t b = 0; b < nb; b++) {
        uint64_t at = (uint64_t)b * PROTO_CSUM_BLOCK;
        uint32_t bl = (uint32_t)(len - at < PROTO_CSUM_BLOCK ? len - at : PROTO_CSUM_BLOCK);
        uint64_t old_bl =
            at < r->len ? (r->len - at < PROTO_CSUM_BLOCK ? r->len - at : PROTO_CSUM_BLOCK) : 0;
        bool untouched = n == 0 || at + bl <= off || at >= off + n;
        if (at + bl <= keep && old_bl == bl && untouched)
            memcpy(crcs + 4ull * b, r->crcs + 4ull * b, 4);
        else
            wr32(crcs + 4ull * b, crc32c(0, bytes + at, bl));
    }
    uint8_t kb[8];
    be64(kb, ino);
    MDB_val k = {8, kb}, v = {size, buf};
    t->wrote = true;
    int rc = mdb_err(mdb_put(t->txn, t->store->dom, &k, &v, 0));
    free(buf);
    return rc;
}

/* Check every block of r that [from, to) meets: those a change keeps part
 * of, or a read returns. */
static int check(const struct rec *r, uint64_t from, uint64_t to)
{
    if (to > r->len)
        to = r->len;
    for (uint64_t b = from / PROTO_CSUM_BLOCK; b * PROTO_CSUM_BLOCK < to; b++)
        if (!block_ok(r, (uint32_t)b))
            return -EIO;
    return 0;
}

int meta_dom_write(struct meta_txn *t, uint64_t ino, uint64_t off, const void *data, uint32_t len,
                   uint64_t limit, uint64_t max)
{
    if (off > limit || len > limit - off || off + len > UINT32_MAX)
        return -EFBIG;
    struct rec r;
    MDB_val raw;
    int rc = get(t, ino, &r, &raw);
    if (rc && rc != -ENOENT)
        return rc;
    uint32_t newlen = (uint32_t)(off + len > r.len ? off + len : r.len);
    if (max != UINT64_MAX && newlen > r.len) {
        uint64_t total;
        if ((rc = meta_dom_total(t, &total)))
            return rc;
        if (total + (newlen - r.len) > max)
            return -EDQUOT;
    }
    /* The blocks a write keeps part of: before its start, after its end. */
    uint64_t end = off + len;
    if ((off % PROTO_CSUM_BLOCK && off < r.len && (rc = check(&r, off, off + 1))) ||
        (end % PROTO_CSUM_BLOCK && end < r.len && (rc = check(&r, end, end + 1))))
        return rc;
    if ((rc = put(t, ino, &r, r.len, newlen, off, data, len)))
        return rc;
    return add_total(t, (int64_t)newlen - (int64_t)r.len);
}

int meta_dom_read(struct meta_txn *t, uint64_t ino, uint64_t off, void *buf, uint32_t len,
                  uint64_t *held)
{
    struct rec r;
    MDB_val raw;
    int rc = get(t, ino, &r, &raw);
    *held = 0;
    memset(buf, 0, len);
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return rc;
    *held = r.len;
    if (off >= r.len || !len)
        return 0;
    uint32_t n = (uint32_t)(r.len - off < len ? r.len - off : len);
    if ((rc = check(&r, off, off + n)))
        return rc;
    memcpy(buf, r.data + off, n);
    return 0;
}

int meta_dom_truncate(struct meta_txn *t, uint64_t ino, uint64_t size)
{
    struct rec r;
    MDB_val raw;
    int rc = get(t, ino, &r, &raw);
    if (rc == -ENOENT || (rc == 0 && size >= r.len))
        return 0;
    if (rc)
        return rc;
    if (size == 0)
        return meta_dom_del(t, ino);
    /* The block cut in two keeps bytes it must hold right. */
    if ((rc = check(&r, size - 1, size)))
        return rc;
    uint32_t keep = (uint32_t)size;
    if ((rc = put(t, ino, &r, keep, keep, 0, NULL, 0)))
        return rc;
    return add_total(t, (int64_t)keep - (int64_t)r.len);
}

int meta_dom_del(struct meta_txn *t, uint64_t ino)
{
    struct rec r;
    MDB_val raw;
    int rc = get(t, ino, &r, &raw);
    if (rc == -ENOENT)
        return 0;
    uint32_t had = rc ? 0 : r.len; /* a damaged record goes too */
    uint8_t kb[8];
    be64(kb, ino);
    MDB_val k = {8, kb};
    t->wrote = true;
    if ((rc = mdb_err(mdb_del(t->txn, t->store->dom, &k, NULL))))
        return rc;
    return add_total(t, -(int64_t)had);
}

int meta_dom_scan(struct meta_txn *t, int (*cb)(void *arg, uint64_t ino, uint64_t len), void *arg)
{
    MDB_cursor *c;
    int rc = mdb_err(mdb_cursor_open(t->txn, t->store->dom, &c));
    if (rc)
        return rc;
    MDB_val k, v;
    int op = MDB_FIRST, stop = 0;
    while (!stop && (rc = mdb_cursor_get(c, &k, &v, op)) == 0) {
        op = MDB_NEXT;
        if (k.mv_size == 8)
            stop = cb(arg, rd_be64(k.mv_data),
                      v.mv_size >= DOM_HDR ? rd32((const uint8_t *)v.mv_data + 4) : 0);
    }
    mdb_cursor_close(c);
    return stop ? stop : rc == MDB_NOTFOUND ? 0 : mdb_err(rc);
}
