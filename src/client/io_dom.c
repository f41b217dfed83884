/*
 * The bytes of a file's Data-on-MDT component, to and from its MDT
 * (io_dom.h): one piece at a time (DOM_WRITE, DOM_READ, a punch), and
 * several files' writes in one DOM_WRITES (io.h's io_dom_writes), with
 * CRCs both ways as an OST's pieces.
 */
#include "io_dom.h"

#include "inode.h"
#include "mdcache.h"
#include "wb.h"

#include "../common/log.h"
#include "../proto/csum.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int dom_stale(int rc)
{
    return rc == -ESTALE ? DOM_MOVED : rc;
}

/* A piece of a Data-on-MDT component (of generation gen): to or from the
 * file's MDT, with CRCs both ways as an OST's pieces. */
int io_dom_piece(stria_fs_t *fs, uint64_t ino, const struct layout_piece *lp, uint8_t gen,
                 bool write, uint8_t *buf)
{
    uint8_t crcs[4 * (IO_PIECE_MAX / PROTO_CSUM_BLOCK + 2)];
    int64_t sent = mdc_clock_ms();
    if (write) {
        struct proto_dom_write_req q = {.ino = ino, .offset = lp->obj_off, .gen = gen};
        struct proto_dom_write_rep r;
        cl_cred(&q.cred);
        proto_csum_fill(lp->obj_off, buf, lp->len, crcs);
        q.crcs = (struct proto_blob){crcs, 4 * proto_csum_chunks(lp->obj_off, lp->len)};
        /* Less room to write behind: a record grows to the write's end at most. */
        wb_dom_used(fs, lp->group, lp->obj_off + lp->len);
        return dom_stale(
            TARGET_CALL_BULK(fs, PROTO_NODE_META, lp->group, dom_write, &q, &r, buf, lp->len, NULL,
                             0, NULL, cl_note(fs, sent, &r.leases, 0, NULL, 0, 0, NULL, &r.attr)));
    }
    struct proto_dom_read_req q = {.ino = ino, .offset = lp->obj_off, .len = lp->len, .gen = gen};
    struct proto_dom_read_rep r;
    uint32_t got = 0;
    uint64_t bad = 0;
    cl_cred(&q.cred);
    int rc = TARGET_CALL_BULK(
        fs, PROTO_NODE_META, lp->group, dom_read, &q, &r, NULL, 0, buf, lp->len, &got,
        ({ rc_ = proto_csum_check(lp->obj_off, buf, got, &r.crcs, NULL, &bad); }));
    if (rc == -EIO)
        log_error("checksum mismatch reading MDT%04x's bytes of inode %" PRIx64 " at %" PRIu64
                  ": the data changed on its way",
                  lp->group, ino, bad);
    if (rc == 0 && got < lp->len)
        memset(buf + got, 0, lp->len - got);
    return dom_stale(rc);
}

/* Zeros over [a, b) of Data-on-MDT component c, the size kept (a punch,
 * or what a truncate of a file no name holds any more cuts). */
int io_dom_zero(stria_fs_t *fs, uint64_t ino, const struct layout_comp *c, uint64_t a, uint64_t b)
{
    struct proto_dom_write_req q = {.ino = ino,
                                    .offset = a - c->start,
                                    .zero = (uint32_t)(b - a),
                                    .gen = (uint8_t)layout_comp_gen(c)};
    struct proto_dom_write_rep r;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    return dom_stale(TARGET_CALL(fs, PROTO_NODE_META, c->groups[0], dom_write, &q, &r,
                                 cl_note(fs, sent, &r.leases, 0, NULL, 0, 0, NULL, &r.attr)));
}

/* The results of a DOM_WRITES (results, in items' order) into items[i].rc,
 * and each reply's leases and attributes into the cache; -EPROTO for a
 * list that does not parse. */
static int dom_writes_results(stria_fs_t *fs, int64_t sent, const struct proto_blob *results,
                              struct io_dom_item *items, const bool *sent_it, uint32_t n)
{
    struct proto_dec d;
    proto_dec_init(&d, results->p, results->len);
    for (uint32_t i = 0; i < n; i++) {
        if (!sent_it[i])
            continue;
        int32_t st;
        struct proto_blob one;
        struct proto_dom_write_rep r;
        struct proto_dec od;
        if (proto_result_get(&d, &st, &one))
            return -EPROTO;
        proto_dec_init(&od, one.p, one.len);
        if (st == 0 && proto_dec_dom_write_rep(&od, &r))
            return -EPROTO;
        items[i].rc = st;
        if (st)
            continue;
        cl_note(fs, sent, &r.leases, 0, NULL, 0, 0, NULL, &r.attr);
        /* Less room to write behind: a record grows to the write's end at
         * most. (One that failed is counted when it goes again.) */
        struct layout_piece lp;
        layout_map(items[i].l, items[i].off, items[i].len, &lp);
        wb_dom_used(fs, lp.group, lp.obj_off + lp.len);
    }
    return 0;
}

int io_dom_writes(stria_fs_t *fs, uint32_t mdt, struct io_dom_item *items, uint32_t n)
{
    enum { CRCS = 4 * (IO_PIECE_MAX / PROTO_CSUM_BLOCK + 2) };
    if (n == 0 || n > PROTO_MAX_DOM_WRITES)
        return -EINVAL;
    bool sent_it[PROTO_MAX_DOM_WRITES] = {false};
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct layout_piece lp;
        items[i].rc = -EAGAIN;
        if (layout_map(items[i].l, items[i].off, items[i].len, &lp) == LAYOUT_ON_MDT &&
            lp.group == mdt && lp.len == items[i].len && items[i].len) {
            sent_it[i] = true;
            total += items[i].len;
        }
    }
    if (total == 0 || total > PROTO_MAX_BULK)
        return total ? -EINVAL : 0;
    uint8_t *bulk = malloc(total);
    uint8_t *crcs = malloc((size_t)n * CRCS);
    uint8_t *list = malloc(PROTO_MAX_REQ_PAYLOAD / 2);
    int rc = bulk && crcs && list ? 0 : -ENOMEM;
    struct proto_enc e;
    proto_enc_init(&e, list, list ? PROTO_MAX_REQ_PAYLOAD / 2 : 0);
    uint64_t at = 0;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        if (!sent_it[i])
            continue;
        struct layout_piece lp;
        layout_map(items[i].l, items[i].off, items[i].len, &lp);
        uint8_t *c = crcs + (size_t)i * CRCS;
        proto_csum_fill(lp.obj_off, items[i].buf, items[i].len, c);
        struct proto_dom_writes_item it = {
            .ino = items[i].ino,
            .offset = lp.obj_off,
            .len = items[i].len,
            .gen = (uint8_t)layout_comp_gen(&items[i].l->comp[lp.comp]),
            .crcs = {c, 4 * proto_csum_chunks(lp.obj_off, items[i].len)}};
        proto_dom_writes_item_put(&e, &it);
        memcpy(bulk + at, items[i].buf, items[i].len);
        at += items[i].len;
    }
    if (rc == 0 && e.err)
        rc = -EINVAL;
    if (rc == 0) {
        struct proto_dom_writes_req q = {.items = {list, (uint32_t)e.len}};
        struct proto_dom_writes_rep r;
        cl_cred(&q.cred);
        int64_t sent = mdc_clock_ms();
        rc = TARGET_CALL_BULK(
            fs, PROTO_NODE_META, mdt, dom_writes, &q, &r, bulk, (uint32_t)total, NULL, 0, NULL,
            ({ rc_ = dom_writes_results(fs, sent, &r.results, items, sent_it, n); }));
    }
    free(list);
    free(crcs);
    free(bulk);
    return rc;
}
