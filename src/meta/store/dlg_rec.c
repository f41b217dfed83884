/*
 * The inode ranges handed to clients (dlg_rec.h): one record a client in
 * the info database, "dlg" and its id, {lo[0], lo[1]} big-endian and the
 * two bitmaps.
 */
#include "dlg_rec.h"

#include "env.h"

#include <errno.h>
#include <string.h>

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

static size_t dlg_key(uint8_t kb[11], uint64_t client)
{
    memcpy(kb, "dlg", 3);
    be64(kb + 3, client);
    return 11;
}

int meta_dlg_get(struct meta_txn *t, uint64_t client, struct meta_dlg *d)
{
    uint8_t kb[11];
    MDB_val k = {dlg_key(kb, client), kb}, v;
    memset(d, 0, sizeof(*d));
    int rc = mdb_err(mdb_get(t->txn, t->store->info, &k, &v));
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return rc;
    if (v.mv_size != 16 + sizeof(d->used))
        return -EUCLEAN;
    d->lo[0] = rd_be64(v.mv_data);
    d->lo[1] = rd_be64((const uint8_t *)v.mv_data + 8);
    memcpy(d->used, (const uint8_t *)v.mv_data + 16, sizeof(d->used));
    return 0;
}

int meta_dlg_put(struct meta_txn *t, uint64_t client, const struct meta_dlg *d)
{
    uint8_t kb[11], vb[16 + sizeof(d->used)];
    be64(vb, d->lo[0]);
    be64(vb + 8, d->lo[1]);
    memcpy(vb + 16, d->used, sizeof(d->used));
    MDB_val k = {dlg_key(kb, client), kb}, v = {sizeof(vb), vb};
    t->wrote = true;
    return mdb_err(mdb_put(t->txn, t->store->info, &k, &v, 0));
}
