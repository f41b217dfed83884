/*
 * Data-on-MDT records (dom_rec.h). A record is the chunks of one file:
 *   key   u64 inode, u32 chunk index (big-endian, so a file's chunks sort
 *         together and in order),
 *   value u32 CRC32C of the bytes (little-endian), then the bytes: all of
 *         the chunk's DOM_CHUNK, the last one's len % DOM_CHUNK at least 1.
 * Every chunk below the last is there (zeros are written, not left out),
 * so the last chunk says len.
 *
 * Why chunks of 4,072 bytes. LMDB keeps a value larger than about half a
 * page on pages of its own, in one contiguous run. A record of 64 KiB in
 * one value took 17 contiguous pages, and once files had been deleted the
 * free pages were scattered: finding a run meant searching the whole free
 * list, and creates of 64 KiB files fell from 3,546/s to 775/s after
 * 20,000 had come and gone, and to about 11/s at 100,000. A chunk whose
 * value (4 bytes of CRC and its bytes) fits one page less its 16-byte
 * header takes exactly one page, and any free page serves it. Chunks small
 * enough to sit in the leaf with their key (below 2,014 bytes on 4 KiB
 * pages) were tried: the B-tree split pages half-full, one chunk to a
 * page, and the store took twice the bytes it held.
 */
#include "dom_rec.h"

#include "../../common/crc.h"
#include "../../common/util.h"
#include "env.h"

#include <errno.h>
#include <string.h>

#define DOM_CHUNK 4072u
#define DOM_KEY   12

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

static void chunk_key(uint8_t *kb, uint64_t ino, uint32_t idx)
{
    be64(kb, ino);
    for (int i = 0; i < 4; i++)
        kb[8 + i] = (uint8_t)(idx >> (24 - 8 * i));
}

static uint32_t key_idx(const uint8_t *kb)
{
    return (uint32_t)kb[8] << 24 | (uint32_t)kb[9] << 16 | (uint32_t)kb[10] << 8 | kb[11];
}

/* A chunk as read: its bytes (pointing into LMDB's page) and how many. */
struct chunk {
    const uint8_t *data;
    uint32_t n;
};

/* v as a chunk: -EUCLEAN when it cannot be one, -EIO when its bytes fail
 * their CRC. */
static int chunk_of(const MDB_val *v, struct chunk *c)
{
    const uint8_t *p = v->mv_data;
    if (v->mv_size <= 4 || v->mv_size > 4 + DOM_CHUNK)
        return -EUCLEAN;
    c->data = p + 4;
    c->n = (uint32_t)v->mv_size - 4;
    return crc32c(0, c->data, c->n) == rd32(p) ? 0 : -EIO;
}

/* The record's len: from its last chunk (0: no record). */
static int rec_len(MDB_cursor *cur, uint64_t ino, uint64_t *len)
{
    uint8_t kb[DOM_KEY];
    chunk_key(kb, ino + 1, 0);
    MDB_val k = {DOM_KEY, kb}, v;
    int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    rc = rc == MDB_NOTFOUND ? mdb_cursor_get(cur, &k, &v, MDB_LAST)
         : rc == 0          ? mdb_cursor_get(cur, &k, &v, MDB_PREV)
                            : rc;
    *len = 0;
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return mdb_err(rc);
    if (k.mv_size != DOM_KEY || rd_be64(k.mv_data) != ino)
        return 0;
    if (v.mv_size <= 4 || v.mv_size > 4 + DOM_CHUNK)
        return -EUCLEAN;
    *len = (uint64_t)key_idx(k.mv_data) * DOM_CHUNK + (v.mv_size - 4);
    return 0;
}

static int cursor(struct meta_txn *t, MDB_cursor **cur)
{
    return mdb_err(mdb_cursor_open(t->txn, t->store->dom, cur));
}

static int len_of(struct meta_txn *t, uint64_t ino, uint64_t *len)
{
    MDB_cursor *cur;
    int rc = cursor(t, &cur);
    if (rc)
        return rc;
    rc = rec_len(cur, ino, len);
    mdb_cursor_close(cur);
    return rc;
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

/* Chunk idx of ino, n bytes: room for them in the page it goes to
 * (MDB_RESERVE), its first nkeep bytes those at keep (the old bytes it
 * keeps, read before: the reserve may reuse their place), the CRC to be
 * sealed over them (seal_chunk). One copy of the bytes, straight into the
 * page. */
static int reserve_chunk(struct meta_txn *t, uint64_t ino, uint32_t idx, uint32_t n,
                         const uint8_t *keep, uint32_t nkeep, uint8_t **buf)
{
    uint8_t kb[DOM_KEY];
    chunk_key(kb, ino, idx);
    MDB_val k = {DOM_KEY, kb}, v = {4 + (size_t)n, NULL};
    t->wrote = true;
    int rc = mdb_err(mdb_put(t->txn, t->store->dom, &k, &v, MDB_RESERVE));
    *buf = rc ? NULL : (uint8_t *)v.mv_data + 4;
    if (rc == 0 && nkeep)
        util_copy(*buf, keep, nkeep);
    return rc;
}

/* The CRC of a chunk's n bytes at buf, before them. */
static void seal_chunk(uint8_t *buf, uint32_t n)
{
    wr32(buf - 4, crc32c(0, buf, n));
}

/* Bytes [base, n) of the chunk at file offset at: the write's (data, at
 * [off, end)) where it covers them, zeros elsewhere. */
static void fill_chunk(uint8_t *buf, uint32_t base, uint32_t n, uint64_t at, const uint8_t *data,
                       uint64_t off, uint64_t end)
{
    uint64_t lo = off > at ? off : at, hi = end < at + n ? end : at + n;
    if (hi <= lo) {
        memset(buf + base, 0, n - base);
        return;
    }
    uint32_t l = (uint32_t)(lo - at), h = (uint32_t)(hi - at), z = h > base ? h : base;
    if (l > base)
        memset(buf + base, 0, l - base);
    util_copy(buf + l, data + (lo - off), h - l);
    if (n > z)
        memset(buf + z, 0, n - z);
}

/* The bytes chunk idx keeps of its old n: copied into buf, after its CRC
 * was checked. */
static int keep_old(struct meta_txn *t, uint64_t ino, uint32_t idx, uint8_t *buf, uint32_t n)
{
    uint8_t kb[DOM_KEY];
    chunk_key(kb, ino, idx);
    MDB_val k = {DOM_KEY, kb}, v;
    struct chunk c;
    int rc = mdb_err(mdb_get(t->txn, t->store->dom, &k, &v));
    if (rc == -ENOENT)
        return -EUCLEAN; /* a chunk below the last is always there */
    if (rc || (rc = chunk_of(&v, &c)))
        return rc;
    if (c.n != n)
        return -EUCLEAN;
    util_copy(buf, c.data, n);
    return 0;
}

int meta_dom_write(struct meta_txn *t, uint64_t ino, uint64_t off, const void *data, uint32_t len,
                   uint64_t limit, uint64_t max)
{
    if (off > limit || len > limit - off || off + len > UINT32_MAX)
        return -EFBIG;
    uint64_t old, end = off + len;
    int rc = len_of(t, ino, &old);
    if (rc)
        return rc;
    uint64_t newlen = end > old ? end : old;
    if (max != UINT64_MAX && newlen > old) {
        uint64_t total;
        if ((rc = meta_dom_total(t, &total)))
            return rc;
        if (total + (newlen - old) > max)
            return -EDQUOT;
    }
    /* From the old end (zeros up to off) or off, to the write's end. */
    uint64_t from = off < old ? off : old;
    uint8_t room[DOM_CHUNK];
    for (uint32_t idx = (uint32_t)(from / DOM_CHUNK); (uint64_t)idx * DOM_CHUNK < end; idx++) {
        uint64_t at = (uint64_t)idx * DOM_CHUNK;
        uint32_t n = (uint32_t)(newlen - at < DOM_CHUNK ? newlen - at : DOM_CHUNK);
        uint32_t had = at < old ? (uint32_t)(old - at < DOM_CHUNK ? old - at : DOM_CHUNK) : 0;
        /* The old bytes stay unless the write covers all of them: read
         * before the chunk's room is reserved over them. */
        uint32_t base = had && !(off <= at && end >= at + had) ? had : 0;
        uint8_t *buf;
        if ((base && (rc = keep_old(t, ino, idx, room, had))) ||
            (rc = reserve_chunk(t, ino, idx, n, room, base, &buf)))
            return rc;
        fill_chunk(buf, base, n, at, data, off, end);
        seal_chunk(buf, n);
    }
    return add_total(t, (int64_t)newlen - (int64_t)old);
}

int meta_dom_read(struct meta_txn *t, uint64_t ino, uint64_t off, void *buf, uint32_t len,
                  uint64_t *held)
{
    memset(buf, 0, len);
    MDB_cursor *cur;
    int rc = cursor(t, &cur);
    if (rc)
        return rc;
    if ((rc = rec_len(cur, ino, held)) || off >= *held || !len)
        goto out;
    uint64_t end = off + len < *held ? off + len : *held;
    uint8_t kb[DOM_KEY];
    chunk_key(kb, ino, (uint32_t)(off / DOM_CHUNK));
    MDB_val k = {DOM_KEY, kb}, v;
    MDB_cursor_op op = MDB_SET_KEY;
    for (uint64_t at = off / DOM_CHUNK * DOM_CHUNK; at < end; at += DOM_CHUNK, op = MDB_NEXT) {
        struct chunk c;
        if ((rc = mdb_err(mdb_cursor_get(cur, &k, &v, op))))
            break;
        if (k.mv_size != DOM_KEY || rd_be64(k.mv_data) != ino ||
            (uint64_t)key_idx(k.mv_data) * DOM_CHUNK != at) {
            rc = -EUCLEAN; /* a chunk below the last is missing */
            break;
        }
        if ((rc = chunk_of(&v, &c)))
            break;
        uint64_t lo = off > at ? off : at, hi = end < at + c.n ? end : at + c.n;
        if (hi > lo)
            util_copy((uint8_t *)buf + (lo - off), c.data + (lo - at), hi - lo);
    }
    if (rc == -ENOENT)
        rc = -EUCLEAN;
out:
    mdb_cursor_close(cur);
    return rc;
}

/* Every chunk of ino from index idx on goes; *gone: the bytes they held. */
static int drop_from(struct meta_txn *t, uint64_t ino, uint32_t idx, uint64_t *gone)
{
    MDB_cursor *cur;
    int rc = cursor(t, &cur);
    if (rc)
        return rc;
    uint8_t kb[DOM_KEY];
    chunk_key(kb, ino, idx);
    MDB_val k = {DOM_KEY, kb}, v;
    *gone = 0;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < 8 || rd_be64(k.mv_data) != ino)
            break;
        *gone += v.mv_size > 4 ? v.mv_size - 4 : 0;
        t->wrote = true;
        if ((rc = mdb_cursor_del(cur, 0)))
            break;
    }
    mdb_cursor_close(cur);
    return rc == 0 || rc == MDB_NOTFOUND ? 0 : mdb_err(rc);
}

int meta_dom_truncate(struct meta_txn *t, uint64_t ino, uint64_t size)
{
    uint64_t len, gone;
    int rc = len_of(t, ino, &len);
    if (rc || size >= len)
        return rc;
    if (size == 0)
        return meta_dom_del(t, ino);
    /* The chunk cut in two keeps bytes it must hold right. */
    uint32_t idx = (uint32_t)((size - 1) / DOM_CHUNK);
    uint64_t at = (uint64_t)idx * DOM_CHUNK;
    uint32_t had = (uint32_t)(len - at < DOM_CHUNK ? len - at : DOM_CHUNK);
    uint32_t n = (uint32_t)(size - at);
    uint8_t room[DOM_CHUNK], *buf;
    if ((rc = keep_old(t, ino, idx, room, had)) || (rc = drop_from(t, ino, idx + 1, &gone)) ||
        (rc = reserve_chunk(t, ino, idx, n, room, n, &buf)))
        return rc;
    seal_chunk(buf, n);
    return add_total(t, (int64_t)size - (int64_t)len);
}

int meta_dom_del(struct meta_txn *t, uint64_t ino)
{
    uint64_t len, gone;
    /* A damaged record goes too, counted by the bytes its chunks hold. */
    int rc = len_of(t, ino, &len);
    if (rc == 0 && len == 0)
        return 0;
    if ((rc = drop_from(t, ino, 0, &gone)))
        return rc;
    return add_total(t, -(int64_t)(len ? len : gone));
}

int meta_dom_scan(struct meta_txn *t, int (*cb)(void *arg, uint64_t ino, uint64_t len), void *arg)
{
    MDB_cursor *cur;
    int rc = cursor(t, &cur);
    if (rc)
        return rc;
    MDB_val k, v;
    int stop = 0;
    uint64_t ino = 0, len = 0;
    bool have = false;
    /* A file's chunks come together; the last of them says its len. */
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !stop && rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != DOM_KEY)
            continue;
        uint64_t i = rd_be64(k.mv_data);
        if (have && i != ino)
            stop = cb(arg, ino, len);
        ino = i;
        have = true;
        len = (uint64_t)key_idx(k.mv_data) * DOM_CHUNK + (v.mv_size > 4 ? v.mv_size - 4 : 0);
    }
    mdb_cursor_close(cur);
    if (!stop && have && (rc == 0 || rc == MDB_NOTFOUND))
        stop = cb(arg, ino, len);
    return stop ? stop : rc == 0 || rc == MDB_NOTFOUND ? 0 : mdb_err(rc);
}
