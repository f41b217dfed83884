/*
 * HSM records (hsm_rec.h). A file's record is an xattr of its inode under
 * the reserved name "stria.hsm", so it goes where the inode's xattrs go
 * (meta_xattr_del_all when the inode goes for good); the inode's flag
 * META_F_HSM says it has one, so that no hot path looks it up otherwise.
 * The counters of released files are one record of the info database,
 * changed in the transaction of every change into or out of RELEASED.
 * A record that cannot be read is -EUCLEAN, never a crash.
 *
 * Tombstones are the database "gone", key the id (8 bytes, big-endian, so
 * that they sort by id), value the repository, key and etag of an object
 * whose file was destroyed; the last id handed out is "gone_last" in the
 * info database, so that dropping every tombstone never lets an id come
 * back. meta_hsm_forget writes one in the transaction that destroys the
 * inode, and never fails for a record it cannot read: the removal of a
 * file must not depend on it (and in a flat batch, a failure after the
 * removal's first write would cost the batch).
 */
#include "hsm_rec.h"

#include "../../common/log.h"
#include "../../proto/layout.h"
#include "env.h"

#include <errno.h>
#include <string.h>

#define HSM_REC_VERSION 1
#define HSM_STORED      (HSM_EXISTS | HSM_ARCHIVED | HSM_RELEASED | HSM_LOST)

int meta_hsm_encode(const struct meta_hsm *h, void *buf, size_t cap)
{
    struct proto_enc e;
    uint8_t ver = HSM_REC_VERSION;
    struct proto_str key = proto_str_c(h->key), etag = proto_str_c(h->etag);
    if (key.len > PROTO_MAX_S3_KEY || etag.len > META_HSM_ETAG_MAX)
        return -ENAMETOOLONG;
    proto_enc_init(&e, buf, cap);
    proto_put_U8(&e, &ver);
    proto_put_U32(&e, &h->state);
    proto_put_U64(&e, &h->repo);
    proto_put_U64(&e, &h->size);
    proto_put_I64(&e, &h->mtime_ns);
    proto_put_U64(&e, &h->gen);
    proto_put_STR(&e, &key);
    proto_put_STR(&e, &etag);
    return e.err ? e.err : (int)e.len;
}

int meta_hsm_decode(const void *buf, size_t len, struct meta_hsm *out)
{
    struct proto_dec d;
    struct proto_str key = {0}, etag = {0};
    uint8_t ver = 0;
    memset(out, 0, offsetof(struct meta_hsm, key));
    out->key[0] = out->etag[0] = '\0';
    proto_dec_init(&d, buf, len);
    proto_get_U8(&d, &ver);
    proto_get_U32(&d, &out->state);
    proto_get_U64(&d, &out->repo);
    proto_get_U64(&d, &out->size);
    proto_get_I64(&d, &out->mtime_ns);
    proto_get_U64(&d, &out->gen);
    proto_get_STR(&d, &key);
    proto_get_STR(&d, &etag);
    /* A later version may append fields: a reader stops before them. */
    if (d.err || ver < 1 || (out->state & ~HSM_STORED) ||
        proto_str_copy(&key, out->key, sizeof(out->key)) ||
        proto_str_copy(&etag, out->etag, sizeof(out->etag)))
        return -EUCLEAN;
    return 0;
}

bool meta_hsm_dirty(const struct meta_hsm *h, const struct meta_inode *in)
{
    return (h->state & HSM_ARCHIVED) && (in->size != h->size || in->mtime_ns != h->mtime_ns);
}

uint32_t meta_hsm_state(const struct meta_hsm *h, const struct meta_inode *in)
{
    return h->state | (meta_hsm_dirty(h, in) ? HSM_DIRTY : 0);
}

int meta_hsm_get(struct meta_txn *t, const struct meta_inode *in, struct meta_hsm *out)
{
    memset(out, 0, offsetof(struct meta_hsm, key));
    out->key[0] = out->etag[0] = '\0';
    if (!(in->flags & META_F_HSM))
        return -ENOENT;
    MDB_val v;
    int rc = meta_xattr_get(t, in->ino, META_XATTR_HSM, &v);
    if (rc)
        return rc;
    if (meta_hsm_decode(v.mv_data, v.mv_size, out)) {
        log_error("MDT%04x inode %llx: corrupt HSM record", t->store->mdt,
                  (unsigned long long)in->ino);
        return -EUCLEAN;
    }
    return 0;
}

int meta_hsm_put(struct meta_txn *t, uint64_t ino, const struct meta_hsm *h)
{
    uint8_t buf[META_HSM_REC_MAX];
    int len = meta_hsm_encode(h, buf, sizeof(buf));
    if (len < 0)
        return len;
    return meta_xattr_put(t, ino, META_XATTR_HSM, buf, (size_t)len);
}

/* The counters: "released" in the info database, bytes and files, 8
 * bytes each, big-endian; none is zero. */
static MDB_val released_key = {8, "released"};

int meta_hsm_released(struct meta_txn *t, uint64_t *bytes, uint64_t *files)
{
    MDB_val k = released_key, v;
    *bytes = *files = 0;
    int rc = mdb_get(t->txn, t->store->info, &k, &v);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return mdb_err(rc);
    if (v.mv_size < 16)
        return -EUCLEAN;
    *bytes = rd_be64(v.mv_data);
    *files = rd_be64((const uint8_t *)v.mv_data + 8);
    return 0;
}

static uint64_t add_clamped(uint64_t v, int64_t d)
{
    if (d < 0)
        return (uint64_t)-d > v ? 0 : v - (uint64_t)-d;
    return v + (uint64_t)d;
}

int meta_hsm_count(struct meta_txn *t, int64_t dbytes, int64_t dfiles)
{
    uint64_t bytes, files;
    int rc = meta_hsm_released(t, &bytes, &files);
    if (rc)
        return rc;
    uint8_t b[16];
    be64(b, add_clamped(bytes, dbytes));
    be64(b + 8, add_clamped(files, dfiles));
    MDB_val k = released_key, v = {16, b};
    t->wrote = true; /* run_batch must know, as for every put */
    return mdb_err(mdb_put(t->txn, t->store->info, &k, &v, 0));
}

static int released_txn(struct meta_txn *t, void *arg)
{
    uint64_t *out = arg;
    return meta_hsm_released(t, &out[0], &out[1]);
}

int meta_store_released(struct meta_store *s, uint64_t *bytes, uint64_t *files)
{
    uint64_t out[2] = {0, 0};
    int rc = meta_store_read(s, NULL, released_txn, out);
    *bytes = out[0];
    *files = out[1];
    return rc;
}

int meta_hsm_forget(struct meta_txn *t, const struct meta_inode *in)
{
    if (!(in->flags & META_F_HSM))
        return 0;
    struct meta_hsm h;
    int rc = meta_hsm_get(t, in, &h);
    /* An object that holds the file's data, archived (even if the file
     * changed since) or its only copy (released); not one known to be
     * gone from S3 (lost), which a delete could only meet as someone
     * else's upload of the same bytes; not a superseded file's, whose key
     * holds the object that took its name. */
    if (rc == 0 && h.key[0] && h.etag[0] && (h.state & (HSM_ARCHIVED | HSM_RELEASED)) &&
        !(h.state & HSM_LOST) && !(in->flags & META_F_SUPERSEDED)) {
        uint64_t id;
        if ((rc = meta_gone_add(t, h.repo, h.key, h.etag, &id)))
            return rc;
        log_debug("MDT%04x inode %llx destroyed: tombstone %llu of %s", t->store->mdt,
                  (unsigned long long)in->ino, (unsigned long long)id, h.key);
    } else if (rc == -EUCLEAN) {
        log_error("MDT%04x inode %llx destroyed with a corrupt HSM record: no tombstone, its "
                  "object stays in S3",
                  t->store->mdt, (unsigned long long)in->ino);
    } else if (rc && rc != -ENOENT) {
        return rc;
    }
    if (!meta_hsm_is_released(in))
        return 0;
    return meta_hsm_count(t, -(int64_t)in->size, -1);
}

int meta_hsm_truncated(struct meta_txn *t, struct meta_inode *in)
{
    if (!(in->flags & META_F_HSM) || !meta_hsm_is_released(in))
        return 0;
    struct meta_hsm h;
    int rc = meta_hsm_get(t, in, &h);
    if (rc && rc != -ENOENT)
        return rc;
    if (rc == 0) {
        h.state &= ~HSM_RELEASED;
        if ((rc = meta_hsm_put(t, in->ino, &h)))
            return rc;
    }
    layout_set_released(&in->layout, false);
    return meta_hsm_count(t, -(int64_t)in->size, -1);
}

/* ---- tombstones ---- */

#define GONE_REC_VERSION 1

static MDB_val gone_last_key = {9, "gone_last"};

int meta_gone_encode(const struct meta_gone *g, void *buf, size_t cap)
{
    struct proto_enc e;
    uint8_t ver = GONE_REC_VERSION;
    struct proto_str key = proto_str_c(g->key), etag = proto_str_c(g->etag);
    if (key.len > PROTO_MAX_S3_KEY || etag.len > META_HSM_ETAG_MAX)
        return -ENAMETOOLONG;
    proto_enc_init(&e, buf, cap);
    proto_put_U8(&e, &ver);
    proto_put_U64(&e, &g->repo);
    proto_put_STR(&e, &key);
    proto_put_STR(&e, &etag);
    return e.err ? e.err : (int)e.len;
}

int meta_gone_decode(const void *buf, size_t len, struct meta_gone *out)
{
    struct proto_dec d;
    struct proto_str key = {0}, etag = {0};
    uint8_t ver = 0;
    out->repo = 0;
    out->key[0] = out->etag[0] = '\0';
    proto_dec_init(&d, buf, len);
    proto_get_U8(&d, &ver);
    proto_get_U64(&d, &out->repo);
    proto_get_STR(&d, &key);
    proto_get_STR(&d, &etag);
    /* A later version may append fields: a reader stops before them. */
    if (d.err || ver < 1 || proto_str_copy(&key, out->key, sizeof(out->key)) ||
        proto_str_copy(&etag, out->etag, sizeof(out->etag)))
        return -EUCLEAN;
    return 0;
}

/* The last id handed out: the counter, or if it cannot be read (never
 * written, or damaged), the highest id in the table. */
static int gone_last(struct meta_txn *t, uint64_t *last)
{
    MDB_val k = gone_last_key, v;
    *last = 0;
    int rc = mdb_get(t->txn, t->store->info, &k, &v);
    if (rc == 0 && v.mv_size == 8) {
        *last = rd_be64(v.mv_data);
        return 0;
    }
    if (rc && rc != MDB_NOTFOUND)
        return mdb_err(rc);
    if (rc == 0)
        log_error("MDT%04x: the tombstone counter is damaged; going on after the last one kept",
                  t->store->mdt);
    MDB_cursor *cur;
    if ((rc = mdb_err(mdb_cursor_open(t->txn, t->store->gone, &cur))))
        return rc;
    rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
    if (rc == 0 && k.mv_size == 8)
        *last = rd_be64(k.mv_data);
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : mdb_err(rc);
}

int meta_gone_add(struct meta_txn *t, uint64_t repo, const char *key, const char *etag,
                  uint64_t *id)
{
    struct meta_gone g;
    uint8_t buf[META_GONE_REC_MAX], kb[8], lb[8];
    uint64_t last;
    int rc = gone_last(t, &last);
    if (rc)
        return rc;
    g.id = last + 1;
    g.repo = repo;
    if (strlen(key) > PROTO_MAX_S3_KEY || strlen(etag) > META_HSM_ETAG_MAX)
        return -ENAMETOOLONG;
    strcpy(g.key, key);
    strcpy(g.etag, etag);
    int len = meta_gone_encode(&g, buf, sizeof(buf));
    if (len < 0)
        return len;
    be64(kb, g.id);
    be64(lb, g.id);
    MDB_val k = {8, kb}, v = {(size_t)len, buf}, lk = gone_last_key, lv = {8, lb};
    t->wrote = true; /* run_batch must know, as for every put */
    if ((rc = mdb_err(mdb_put(t->txn, t->store->gone, &k, &v, 0))) ||
        (rc = mdb_err(mdb_put(t->txn, t->store->info, &lk, &lv, 0))))
        return rc;
    if (id)
        *id = g.id;
    return 0;
}

int meta_gone_scan(struct meta_txn *t, uint64_t after, meta_gone_cb cb, void *arg)
{
    if (after == UINT64_MAX)
        return 0;
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, t->store->gone, &cur));
    if (rc)
        return rc;
    struct meta_gone g;
    uint8_t kb[8];
    be64(kb, after + 1);
    MDB_val k = {8, kb}, v;
    int mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    for (; mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 8 || meta_gone_decode(v.mv_data, v.mv_size, &g)) {
            log_error("MDT%04x: a tombstone that cannot be read, skipped", t->store->mdt);
            continue;
        }
        g.id = rd_be64(k.mv_data);
        if ((rc = cb(arg, &g)))
            break;
    }
    if (!rc && mrc != MDB_NOTFOUND)
        rc = mdb_err(mrc);
    mdb_cursor_close(cur);
    return rc < 0 ? rc : 0;
}

int meta_gone_drop(struct meta_txn *t, uint64_t after, uint64_t upto, uint32_t max,
                   uint64_t *dropped, bool *more)
{
    *dropped = 0;
    *more = false;
    if (after >= upto)
        return 0;
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, t->store->gone, &cur));
    if (rc)
        return rc;
    uint8_t kb[8];
    be64(kb, after + 1);
    MDB_val k = {8, kb}, v;
    int mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (mrc == 0 && (k.mv_size != 8 || rd_be64(k.mv_data) <= upto)) {
        if (*dropped == max) {
            *more = true;
            break;
        }
        t->wrote = true;
        if ((rc = mdb_err(mdb_cursor_del(cur, 0))))
            break;
        (*dropped)++;
        /* Re-seek after each delete rather than trust the cursor. */
        k.mv_size = 8;
        k.mv_data = kb;
        mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    }
    if (!rc && mrc && mrc != MDB_NOTFOUND)
        rc = mdb_err(mrc);
    mdb_cursor_close(cur);
    return rc;
}
