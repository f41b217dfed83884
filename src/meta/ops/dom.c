/*
 * Data-on-MDT (dom.h): DOM_WRITE and DOM_READ. A write is checked against
 * its CRCs before it reaches the store, and moves the file's size and
 * mtime in the same transaction, so a small file written to its MDT needs
 * no size report; a read sends CRCs of what it sends, which the client
 * checks, as an OST's do.
 */
#include "dom.h"

#include "../../proto/csum.h"
#include "../../proto/layout.h"
#include "../store/dom_rec.h"
#include "../store/hsm_rec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct dom_arg {
    const struct meta_req *rq;
    const void *q;
    void *r;
};

/* ino, a regular file of this MDT whose first component is on it. */
static int dom_file(struct meta_txn *t, uint64_t ino, struct meta_inode *in, uint64_t *size)
{
    int rc = meta_inode_get_here(t, ino, in);
    if (rc)
        return rc;
    if (!S_ISREG(in->mode) || !(*size = layout_dom_size(&in->layout)))
        return -EINVAL;
    return 0;
}

static int write_txn(struct meta_txn *t, void *arg)
{
    struct dom_arg *a = arg;
    const struct proto_dom_write_req *q = a->q;
    struct proto_dom_write_rep *r = a->r;
    struct meta_inode in;
    uint64_t limit;
    int rc = dom_file(t, q->ino, &in, &limit);
    bool orphan = rc == -ENOENT;
    if (orphan)
        limit = LAYOUT_DOM_MAX; /* removed, kept open: its record is all */
    else if (rc)
        return rc;
    else if (meta_hsm_is_released(&in))
        return -EBUSY;
    else if (in.flags & META_F_SUPERSEDED)
        return -ESTALE;
    uint32_t len = a->rq->bulk_len;
    if (len) {
        rc = meta_dom_write(t, q->ino, q->offset, a->rq->bulk, len, limit, 0);
    } else {
        /* A punch: zeros over what the record holds of the range. */
        uint64_t held = 0;
        uint8_t probe;
        if ((rc = meta_dom_read(t, q->ino, 0, &probe, 0, &held)) || q->offset >= held)
            return rc;
        uint64_t end = q->offset + q->zero < held ? q->offset + q->zero : held;
        uint8_t *z = calloc(1, end - q->offset);
        if (!z)
            return -ENOMEM;
        rc = meta_dom_write(t, q->ino, q->offset, z, (uint32_t)(end - q->offset), limit, 0);
        free(z);
    }
    if (rc || orphan)
        return rc;
    /* The size and mtime a SETSIZE would report. */
    if (len && q->offset + len > in.size)
        in.size = q->offset + len;
    in.mtime_ns = in.ctime_ns = q->mtime_ns ? q->mtime_ns : meta_now_ns();
    if ((rc = meta_inode_put(t, &in)))
        return rc;
    meta_inode_attr(&in, &r->attr);
    return 0;
}

int meta_op_dom_write(const struct meta_req *rq, const void *qv, void *rv)
{
    const struct proto_dom_write_req *q = qv;
    if (!rq->bulk_len && !q->zero)
        return -EINVAL;
    if (q->zero > LAYOUT_DOM_MAX)
        return -EFBIG;
    uint64_t bad;
    int rc = rq->bulk_len
                 ? proto_csum_check(q->offset, rq->bulk, rq->bulk_len, &q->crcs, NULL, &bad)
                 : 0;
    if (rc)
        return rc; /* damaged on its way: the client sends it again */
    struct dom_arg a = {rq, qv, rv};
    return meta_run_waiting(rq, META_RUN_WRITE, write_txn, &a);
}

static int read_txn(struct meta_txn *t, void *arg)
{
    struct dom_arg *a = arg;
    const struct proto_dom_read_req *q = a->q;
    struct meta_inode in;
    uint64_t limit, held;
    int rc = dom_file(t, q->ino, &in, &limit);
    if (rc == -ENOENT)
        limit = LAYOUT_DOM_MAX; /* removed, kept open: its record is all */
    else if (rc)
        return rc;
    uint32_t len = q->offset >= limit           ? 0
                   : limit - q->offset < q->len ? (uint32_t)(limit - q->offset)
                                                : q->len;
    rc = meta_dom_read(t, q->ino, q->offset, a->rq->buf, len, &held);
    if (rc == 0) {
        struct meta_req *rq = (struct meta_req *)a->rq;
        rq->out_bulk = rq->buf;
        rq->out_bulk_len = len;
    }
    return rc;
}

int meta_op_dom_read(const struct meta_req *rq, const void *qv, void *rv)
{
    const struct proto_dom_read_req *q = qv;
    struct proto_dom_read_rep *r = rv;
    if (q->len > META_DOM_READ_MAX || !rq->buf || rq->buf_len < META_DOM_BUF)
        return q->len > META_DOM_READ_MAX ? -EINVAL : -ENOMEM;
    struct dom_arg a = {rq, qv, rv};
    int rc = meta_store_read(rq->ctx->store, rq, read_txn, &a);
    if (rc)
        return rc;
    uint8_t *crcs = (uint8_t *)rq->buf + META_DOM_READ_MAX;
    proto_csum_fill(q->offset, rq->buf, rq->out_bulk_len, crcs);
    r->crcs = (struct proto_blob){crcs, 4 * proto_csum_chunks(q->offset, rq->out_bulk_len)};
    return 0;
}
