/*
 * Reply records (store.h, "Reply records"): the reply to a change kept
 * under (client, slot) in the transaction of the change, so that a change
 * resent after a restart is answered rather than made twice.
 *
 * Record: key client (8, BE) + tag (2, BE); value seq (u64), time written
 * (i64 ns, real time), opcode (u16), status (i32), then the reply's
 * payload as sent (without leases).
 */
#include "env.h"

#include "../../common/log.h"
#include "../../common/util.h"

#include <errno.h>
#include <string.h>
/* Key: client (8 bytes) and tag (2), big-endian. Value: seq u64, the time
 * it was written (i64 ns, CLOCK_REALTIME), op u16, status i32, then the
 * reply's payload. */
#define REPLY_KEY_LEN 10

#define REPLY_HDR_LEN 22

/* A change's reply holds at most an attr and a layout. */
#define REPLY_MAX (REPLY_HDR_LEN + META_INODE_REC_MAX + 1024)

static void reply_key(uint8_t *k, uint64_t client, uint16_t tag)
{
    be64(k, client);
    k[8] = (uint8_t)(tag >> 8);
    k[9] = (uint8_t)tag;
}

/* The fixed part of a record; -EUCLEAN if it is too short to hold one. */
struct reply_head {
    uint64_t seq;
    int64_t when_ns;
    uint16_t op;
    int32_t status;
};

static int reply_head(const MDB_val *v, struct reply_head *h)
{
    struct proto_dec d;
    proto_dec_init(&d, v->mv_data, v->mv_size);
    proto_get_U64(&d, &h->seq);
    proto_get_I64(&d, &h->when_ns);
    proto_get_U16(&d, &h->op);
    proto_get_I32(&d, &h->status);
    return d.err ? -EUCLEAN : 0;
}

int meta_reply_here(struct meta_txn *t)
{
    struct meta_reply *r = t->req->reply;
    if (!r || r->recorded)
        return 0;
    /* Scratch only: the record is encoded here and copied into LMDB by the
     * put below; nothing of the request lives in it afterwards. Per thread
     * so that it costs neither an allocation nor REPLY_MAX of stack. */
    static _Thread_local uint8_t buf[REPLY_MAX];
    struct proto_enc e;
    proto_enc_init(&e, buf, sizeof(buf));
    int64_t now = util_now_real_ns();
    int32_t status = 0;
    proto_put_U64(&e, &r->seq);
    proto_put_I64(&e, &now);
    proto_put_U16(&e, &r->op);
    proto_put_I32(&e, &status);
    int rc = r->encode(&e, r->rep);
    if (rc || e.err) {
        /* Larger than any change's reply should be: the change stands,
         * but a resend of it after a restart would run it again. */
        log_warn("MDT%04x: reply of %s too large to keep (%zu bytes)", t->store->mdt,
                 proto_op_name(r->op), e.len);
        return 0;
    }
    uint8_t k[REPLY_KEY_LEN];
    reply_key(k, r->client, r->tag);
    MDB_cursor *cur;
    if ((rc = mdb_err(mdb_cursor_open(t->txn, t->store->replies, &cur))))
        return rc;
    MDB_val key = {sizeof(k), k}, old, val = {e.len, buf};
    /* MDB_SET, not MDB_SET_KEY: that points key into the page, and a put
     * of another size re-adds the record with a key copied from a page it
     * has just rearranged. */
    int found = mdb_cursor_get(cur, &key, &old, MDB_SET);
    struct reply_head oh;
    /* A change its client gave up on (EIO, an interrupt) can be made after
     * the next change in its slot: the newer record stays. */
    if (found == 0 && reply_head(&old, &oh) == 0 && oh.seq > r->seq) {
        mdb_cursor_close(cur);
        return 0;
    }
    t->wrote = true;
    rc = mdb_err(mdb_cursor_put(cur, &key, &val, found == 0 ? MDB_CURRENT : 0));
    mdb_cursor_close(cur);
    if (rc)
        return rc;
    r->recorded = true;
    return 0;
}

int meta_reply_get_txn(struct meta_txn *t, void *arg)
{
    struct meta_reply_get_arg *a = arg;
    uint8_t k[REPLY_KEY_LEN];
    reply_key(k, a->client, a->tag);
    MDB_val key = {sizeof(k), k}, v;
    int rc = mdb_err(mdb_get(t->txn, t->store->replies, &key, &v));
    if (rc)
        return rc == -ENOENT ? 0 : rc;
    struct reply_head h;
    if ((rc = reply_head(&v, &h)))
        return rc;
    if (h.seq < a->seq)
        return 0; /* an older change in that slot: this one was not made */
    if (h.seq > a->seq)
        return -EIO;
    size_t n = v.mv_size - REPLY_HDR_LEN;
    if (n > a->cap)
        return -EMSGSIZE;
    memcpy(a->payload, (const uint8_t *)v.mv_data + REPLY_HDR_LEN, n);
    *a->len = (uint32_t)n;
    *a->status = h.status;
    return 1;
}

/* A record written before *arg (CLOCK_REALTIME ns), or unreadable. */
static bool reply_gone(const MDB_val *key, const MDB_val *val, void *arg)
{
    (void)key;
    struct reply_head h;
    return reply_head(val, &h) || h.when_ns < *(const int64_t *)arg;
}

int meta_reply_prune(struct meta_store *s, int64_t before_ns)
{
    return meta_store_prune(s, s->replies, NULL, 0, reply_gone, &before_ns);
}
