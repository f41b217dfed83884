/*
 * The inode ranges handed to clients (dlg_rec.h): one record a client in
 * the info database, "dlg" and its id, {lo[0], lo[1]} big-endian, the two
 * bitmaps, the time it was put (i64 ns, big-endian) and a byte of flags
 * (1: idle, dlg_rec.h). Records written before the stamp lack both.
 */
#include "dlg_rec.h"

#include "env.h"

#include "../../common/util.h"

#include <errno.h>
#include <string.h>

#define DLG_OLD_LEN (16 + META_DLG_INOS / 4)
#define DLG_LEN     (DLG_OLD_LEN + 9)
#define DLG_F_IDLE  1u
#define DLG_KEY_LEN 11

int meta_alloc_ino_range(struct meta_txn *t, uint32_t n, uint64_t *lo)
{
    struct meta_store *s = t->store;
    /* What is left must still cover the batch's other creates. */
    if (s->ino_next + n + META_BATCH_INOS > s->ino_limit)
        return -ENOSPC;
    *lo = proto_ino_make(s->mdt, s->ino_next);
    s->ino_next += n;
    return 0;
}

static size_t dlg_key(uint8_t kb[DLG_KEY_LEN], uint64_t client)
{
    memcpy(kb, "dlg", 3);
    be64(kb + 3, client);
    return DLG_KEY_LEN;
}

/* A record's value into d: 0, or -EUCLEAN when it holds none. */
static int dlg_decode(const MDB_val *v, struct meta_dlg *d)
{
    /* Stamped without flags: a record of a development build (19bfc12),
     * kept as one of a client of before the flag. */
    if (v->mv_size != DLG_LEN && v->mv_size != DLG_LEN - 1 && v->mv_size != DLG_OLD_LEN)
        return -EUCLEAN;
    const uint8_t *p = v->mv_data;
    d->lo[0] = rd_be64(p);
    d->lo[1] = rd_be64(p + 8);
    memcpy(d->used, p + 16, sizeof(d->used));
    d->when_ns = v->mv_size > DLG_OLD_LEN ? (int64_t)rd_be64(p + DLG_OLD_LEN) : 0;
    d->idle = v->mv_size == DLG_LEN && (p[DLG_OLD_LEN + 8] & DLG_F_IDLE);
    return 0;
}

static void dlg_encode(uint8_t vb[DLG_LEN], const struct meta_dlg *d, int64_t when_ns)
{
    be64(vb, d->lo[0]);
    be64(vb + 8, d->lo[1]);
    memcpy(vb + 16, d->used, sizeof(d->used));
    be64(vb + DLG_OLD_LEN, (uint64_t)when_ns);
    vb[DLG_OLD_LEN + 8] = d->idle ? DLG_F_IDLE : 0;
}

int meta_dlg_get(struct meta_txn *t, uint64_t client, struct meta_dlg *d)
{
    uint8_t kb[DLG_KEY_LEN];
    MDB_val k = {dlg_key(kb, client), kb}, v;
    memset(d, 0, sizeof(*d));
    int rc = mdb_err(mdb_get(t->txn, t->store->info, &k, &v));
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return rc;
    if ((rc = dlg_decode(&v, d)))
        memset(d, 0, sizeof(*d));
    return rc;
}

int meta_dlg_put(struct meta_txn *t, uint64_t client, const struct meta_dlg *d)
{
    uint8_t kb[DLG_KEY_LEN], vb[DLG_LEN];
    dlg_encode(vb, d, (int64_t)util_now_real_ns());
    MDB_val k = {dlg_key(kb, client), kb}, v = {sizeof(vb), vb};
    t->wrote = true;
    return mdb_err(mdb_put(t->txn, t->store->info, &k, &v, 0));
}

/* A client's record put before *arg (CLOCK_REALTIME ns) by an idle
 * client, or unreadable. */
static bool dlg_gone(const MDB_val *key, const MDB_val *val, void *arg)
{
    struct meta_dlg d;
    if (key->mv_size != DLG_KEY_LEN)
        return false; /* not a client's */
    return dlg_decode(val, &d) || (d.idle && d.when_ns < *(const int64_t *)arg);
}

int meta_dlg_prune(struct meta_store *s, int64_t before_ns)
{
    return meta_store_prune(s, s->info, "dlg", 3, dlg_gone, &before_ns);
}
