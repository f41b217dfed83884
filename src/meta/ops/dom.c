/*
 * Data-on-MDT (dom.h): DOM_WRITE and DOM_READ. A write is checked against
 * its CRCs before it reaches the store, and moves the file's size and
 * mtime in the same transaction, so a small file written to its MDT needs
 * no size report; a read sends CRCs of what it sends, which the client
 * checks, as an OST's do. The MDT's records hold at most dom_max bytes
 * (meta_ctx): a write that would grow them past it answers ENOSPC, and the
 * log says so once, until they are well below it again.
 *
 * A request names the generation of the component it means (its sender's
 * layout). Another than the file's is a migration's copy into the layout
 * it makes (migrate.c), or a sender whose layout is gone (-ESTALE: it
 * fetches the new one). A change by anyone else is noted in the file's
 * migration record, if it has one: the copy may have missed it, and the
 * migration copies again before it swaps.
 */
#include "dom.h"
#include "create.h"

#include "../../common/log.h"
#include "../../common/util.h"
#include "../../proto/csum.h"
#include "../../proto/layout.h"
#include "../store/dom_rec.h"
#include "../store/hsm_rec.h"
#include "../store/mig_rec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct dom_arg {
    const struct meta_req *rq;
    const void *q;
    void *r;
};

/* ino, a regular file of this MDT whose first component is on it in
 * generation gen (*size: the component's); *copy: not in the file's
 * layout but in the one its migration makes. */
static int dom_file(struct meta_txn *t, uint64_t ino, uint8_t gen, struct meta_inode *in,
                    uint64_t *size, bool *copy)
{
    *copy = false;
    int rc = meta_inode_get_here(t, ino, in);
    if (rc)
        return rc;
    if (!S_ISREG(in->mode))
        return -EINVAL;
    if ((*size = layout_dom_size(&in->layout)) && layout_comp_gen(&in->layout.comp[0]) == gen)
        return 0;
    struct meta_mig *m = malloc(sizeof(*m));
    if (!m)
        return -ENOMEM;
    rc = meta_mig_get(t, ino, m) ? -ESTALE : 0;
    if (!rc && m->state == MIGRATE_COPYING && (*size = layout_dom_size(&m->layout)) &&
        layout_comp_gen(&m->layout.comp[0]) == gen)
        *copy = true;
    else
        rc = -ESTALE;
    free(m);
    return rc;
}

/* The records may grow again: once they hold at most 7/8 of dom_max,
 * the next refusal is logged again. */
static void dom_room_again(struct meta_txn *t, struct meta_ctx *c)
{
    uint64_t total;
    if (meta_dom_total(t, &total) == 0 && total <= c->dom_max - c->dom_max / 8 &&
        __atomic_exchange_n(&c->dom_full, 0, __ATOMIC_RELAXED))
        log_info("MDT%04x: Data-on-MDT records hold %" PRIu64 " bytes, below dom_max=%" PRIu64
                 " again",
                 c->mdt, total, c->dom_max);
}

static int write_txn(struct meta_txn *t, void *arg)
{
    struct dom_arg *a = arg;
    const struct proto_dom_write_req *q = a->q;
    struct proto_dom_write_rep *r = a->r;
    struct meta_inode in;
    uint64_t limit;
    bool copy;
    int rc = dom_file(t, q->ino, q->gen, &in, &limit, &copy);
    bool orphan = rc == -ENOENT;
    if (orphan) {
        /* Removed while a client keeps it open: its record is all, kept
         * until that client's DESTROYED (pending). A number with neither
         * names no file (one whose create behind failed): no record may
         * be made for it. */
        if ((rc = meta_pending_has(t, q->ino)) <= 0)
            return rc ? rc : -ENOENT;
        limit = LAYOUT_DOM_MAX;
    } else if (rc)
        return rc;
    else if (meta_hsm_is_released(&in))
        return -EBUSY;
    else if (in.flags & META_F_SUPERSEDED)
        return -ESTALE;
    uint32_t len = a->rq->bulk_len;
    uint64_t max = a->rq->ctx->dom_max;
    if (len) {
        rc = meta_dom_write(t, q->ino, q->offset, a->rq->bulk, len, limit, max);
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
        rc = meta_dom_write(t, q->ino, q->offset, z, (uint32_t)(end - q->offset), limit, max);
        free(z);
    }
    if (rc == 0 && __atomic_load_n(&a->rq->ctx->dom_full, __ATOMIC_RELAXED))
        dom_room_again(t, a->rq->ctx);
    if (rc || orphan)
        return rc;
    if (copy) {
        meta_inode_attr(&in, &r->attr); /* a copy moves neither size nor mtime */
        return 0;
    }
    if ((rc = meta_mig_dom_changed(t, q->ino)))
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

/* Whether write q (its bytes rq's bulk) may be tried: 0, or why not. */
static int write_check(const struct meta_req *rq, const struct proto_dom_write_req *q)
{
    if (!rq->bulk_len && !q->zero)
        return -EINVAL;
    if (q->zero > LAYOUT_DOM_MAX)
        return -EFBIG;
    uint64_t bad;
    /* Damaged on its way: the client sends it again. */
    return rq->bulk_len ? proto_csum_check(q->offset, rq->bulk, rq->bulk_len, &q->crcs, NULL, &bad)
                        : 0;
}

/* What a write that met the records' limit answers (said once in the log
 * until they have room again). */
static int write_end(const struct meta_req *rq, const struct proto_dom_write_req *q, int rc)
{
    if (rc != -EDQUOT)
        return rc;
    struct meta_ctx *c = rq->ctx;
    if (!__atomic_exchange_n(&c->dom_full, 1, __ATOMIC_RELAXED))
        log_warn("MDT%04x: Data-on-MDT full: a write of inode %" PRIx64 " would take its records "
                 "past dom_max=%" PRIu64 " bytes; writes that grow them answer %s until some "
                 "are freed (stria df shows them)",
                 c->mdt, q->ino, c->dom_max, log_err(-ENOSPC));
    return -ENOSPC;
}

int meta_op_dom_write(const struct meta_req *rq, const void *qv, void *rv)
{
    const struct proto_dom_write_req *q = qv;
    int rc = write_check(rq, q);
    if (rc)
        return rc;
    struct dom_arg a = {rq, qv, rv};
    return write_end(rq, q, meta_run_waiting(rq, META_RUN_WRITE, write_txn, &a));
}

struct writes_arg {
    uint32_t n;
    const struct meta_req *const *rqs;
    const struct proto_dom_write_req *qs;
    const struct meta_dom_mk *mk;
    struct proto_dom_write_rep *rs;
    int *rcs;
};

/* Why item i may not be written: a create of its file earlier in the list
 * failed (its number then names no file, and a write would go to a
 * record without one). */
static int create_failed(const struct writes_arg *w, uint32_t i)
{
    for (uint32_t k = 0; w->mk && k < i; k++)
        if (w->mk->items[k] && w->qs[k].ino == w->qs[i].ino && w->rcs[k])
            return w->rcs[k];
    return 0;
}

/* The writes of a DOM_WRITES in one transaction, each as its own request
 * (its leases are its own: t->req), those not already failed, and the
 * files its creates make. One that fails before it wrote anything fails
 * alone; one that fails after (the store's own error) fails the
 * transaction. */
static int writes_txn(struct meta_txn *t, void *arg)
{
    struct writes_arg *w = arg;
    const struct meta_req *own = t->req;
    bool any = false;
    int rc = 0;
    for (uint32_t i = 0; i < w->n && rc == 0; i++) {
        const struct proto_dom_create *mk = w->mk ? w->mk->items[i] : NULL;
        if (w->rcs[i] || (!mk && (w->rcs[i] = create_failed(w, i))))
            continue;
        struct dom_arg a = {w->rqs[i], &w->qs[i], &w->rs[i]};
        t->req = w->rqs[i];
        t->wrote = false;
        w->rcs[i] = mk ? meta_create_numbered(t, w->rqs[i]->ctx, w->mk->client, mk, w->qs[i].ino,
                                              &w->mk->reps[i])
                       : write_txn(t, &a);
        if (w->rcs[i] && t->wrote)
            rc = w->rcs[i];
        any = any || t->wrote;
    }
    t->req = own;
    t->wrote = any || t->wrote;
    return rc;
}

int meta_op_dom_write_n(uint32_t n, const struct meta_req *const *rqs,
                        const struct proto_dom_write_req *qs, const struct meta_dom_mk *mk,
                        struct proto_dom_write_rep *rs, int *rcs)
{
    if (n == 0)
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++)
        rcs[i] = mk && mk->items[i] ? 0 : write_check(rqs[i], &qs[i]);
    struct writes_arg w = {n, rqs, qs, mk, rs, rcs};
    int rc = meta_store_write(rqs[0]->ctx->store, rqs[0], writes_txn, &w);
    /* A create to wait for (a name another operation holds): alone, as a
     * DOM_WRITE waits, and then the writes of its file. */
    for (uint32_t i = 0; rc == 0 && mk && i < n; i++) {
        if (!mk->items[i] || rcs[i] != -EAGAIN)
            continue;
        struct meta_dom_mk one = {mk->client, {mk->items[i]}, &mk->reps[i]};
        struct writes_arg a = {1, &rqs[i], &qs[i], &one, &rs[i], &rcs[i]};
        rcs[i] = 0;
        int orc = meta_run_waiting(rqs[i], META_RUN_WRITE, writes_txn, &a);
        if (orc)
            rcs[i] = orc;
        for (uint32_t k = i + 1; k < n; k++)
            if (!mk->items[k] && qs[k].ino == qs[i].ino && rcs[k] == -EAGAIN)
                rcs[k] = rcs[i] ? rcs[i] : meta_op_dom_write(rqs[k], &qs[k], &rs[k]);
    }
    for (uint32_t i = 0; rc == 0 && i < n; i++)
        if (!mk || !mk->items[i])
            rcs[i] = write_end(rqs[i], &qs[i], rcs[i]);
    return rc;
}

static int read_txn(struct meta_txn *t, void *arg)
{
    struct dom_arg *a = arg;
    const struct proto_dom_read_req *q = a->q;
    struct meta_inode in;
    uint64_t limit, held;
    bool copy;
    int rc = dom_file(t, q->ino, q->gen, &in, &limit, &copy);
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

/* Room for n bytes a reply takes and their CRCs after them. */
#define TAKE_BUF(n) ((n) + 4 * ((n) / PROTO_CSUM_BLOCK + 2))

uint32_t meta_dom_take(struct meta_txn *t, const struct meta_req *rq, const struct meta_inode *in,
                       uint32_t want, uint8_t **buf)
{
    uint64_t n = MIN(MIN(want, PROTO_OPEN_DOM_MAX), MIN(in->size, layout_dom_size(&in->layout)));
    if (!n || !S_ISREG(in->mode) || !rq->scratch)
        return 0;
    uint64_t held;
    uint8_t *b = rq->scratch(rq->scratch_arg, (uint32_t)TAKE_BUF(n));
    if (!b || meta_dom_read(t, in->ino, 0, b, (uint32_t)n, &held))
        return 0;
    *buf = b;
    return (uint32_t)n;
}

void meta_dom_send(const struct meta_req *rq, uint8_t *buf, uint32_t n, struct proto_blob *crcs)
{
    uint8_t *c = buf + n;
    proto_csum_fill(0, buf, n, c);
    *crcs = (struct proto_blob){c, 4 * proto_csum_chunks(0, n)};
    struct meta_req *out = (struct meta_req *)rq;
    out->out_bulk = buf;
    out->out_bulk_len = n;
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
