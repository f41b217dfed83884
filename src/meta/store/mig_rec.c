/*
 * Migration records (mig_rec.h): u8 version (1), u8 state, u64 id,
 * i64 touched_ns, the old and the new layout as the wire has them, then
 * u8 dom_changed (absent in the first records: 0).
 */
#include "mig_rec.h"

#include "../../proto/layout.h"
#include "env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MIG_VERSION 1

bool meta_mig_stale(const struct meta_mig *m, int64_t now_ns, uint32_t stale_ms)
{
    return now_ns - m->touched_ns > (int64_t)stale_ms * 1000000;
}

static MDB_val key_of(uint64_t ino, uint8_t kb[8])
{
    be64(kb, ino);
    return (MDB_val){8, kb};
}

static int decode(const MDB_val *v, struct meta_mig *out)
{
    struct proto_dec d;
    proto_dec_init(&d, v->mv_data, (uint32_t)v->mv_size);
    uint8_t ver = 0;
    proto_get_U8(&d, &ver);
    proto_get_U8(&d, &out->state);
    proto_get_U64(&d, &out->id);
    proto_get_I64(&d, &out->touched_ns);
    proto_get_LAYOUT(&d, &out->old);
    proto_get_LAYOUT(&d, &out->layout);
    out->dom_changed = 0;
    if (d.off < d.len)
        proto_get_U8(&d, &out->dom_changed);
    if (d.err || ver != MIG_VERSION || d.off != d.len || layout_validate(&out->old) ||
        layout_validate(&out->layout))
        return -EUCLEAN;
    return 0;
}

int meta_mig_get(struct meta_txn *t, uint64_t ino, struct meta_mig *out)
{
    uint8_t kb[8];
    MDB_val k = key_of(ino, kb), v;
    int rc = mdb_err(mdb_get(t->txn, t->store->mig, &k, &v));
    return rc ? rc : decode(&v, out);
}

int meta_mig_put(struct meta_txn *t, uint64_t ino, const struct meta_mig *m)
{
    /* Two layouts at their largest: about 2 KiB each on the wire. */
    uint8_t *buf = malloc(16384);
    if (!buf)
        return -ENOMEM;
    struct proto_enc e;
    proto_enc_init(&e, buf, 16384);
    uint8_t ver = MIG_VERSION;
    proto_put_U8(&e, &ver);
    proto_put_U8(&e, &m->state);
    proto_put_U64(&e, &m->id);
    proto_put_I64(&e, &m->touched_ns);
    proto_put_LAYOUT(&e, &m->old);
    proto_put_LAYOUT(&e, &m->layout);
    proto_put_U8(&e, &m->dom_changed);
    int rc = e.err ? -EOVERFLOW : 0;
    if (!rc) {
        uint8_t kb[8];
        MDB_val k = key_of(ino, kb), v = {e.len, buf};
        t->wrote = true; /* a failed put spoils the transaction too */
        rc = mdb_err(mdb_put(t->txn, t->store->mig, &k, &v, 0));
    }
    free(buf);
    return rc;
}

int meta_mig_dom_changed(struct meta_txn *t, uint64_t ino)
{
    /* On every Data-on-MDT change: most files have no record. */
    uint8_t kb[8];
    MDB_val k = key_of(ino, kb), v;
    if (mdb_get(t->txn, t->store->mig, &k, &v) == MDB_NOTFOUND)
        return 0;
    struct meta_mig *m = malloc(sizeof(*m));
    if (!m)
        return -ENOMEM;
    int rc = meta_mig_get(t, ino, m);
    if (rc == 0 && m->state == MIGRATE_COPYING && !m->dom_changed) {
        m->dom_changed = 1;
        rc = meta_mig_put(t, ino, m);
    }
    free(m);
    return rc == -ENOENT || rc == -EUCLEAN ? 0 : rc;
}

int meta_mig_del(struct meta_txn *t, uint64_t ino)
{
    uint8_t kb[8];
    MDB_val k = key_of(ino, kb);
    t->wrote = true;
    int rc = mdb_err(mdb_del(t->txn, t->store->mig, &k, NULL));
    return rc == -ENOENT ? 0 : rc;
}

int meta_mig_scan(struct meta_txn *t, int (*cb)(void *arg, uint64_t ino, const struct meta_mig *m),
                  void *arg)
{
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, t->store->mig, &cur));
    if (rc)
        return rc;
    struct meta_mig *m = malloc(sizeof(*m));
    if (!m) {
        mdb_cursor_close(cur);
        return -ENOMEM;
    }
    MDB_val k, v;
    int mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    while (mrc == 0 && rc == 0) {
        if (k.mv_size == 8)
            rc = cb(arg, rd_be64(k.mv_data), decode(&v, m) ? NULL : m);
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    if (rc == 0 && mrc != MDB_NOTFOUND)
        rc = mdb_err(mrc);
    free(m);
    mdb_cursor_close(cur);
    return rc;
}
