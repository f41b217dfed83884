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
#include "../common/util.h"
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

/* What the MDT answered to the create of items[i] (st, and its OPEN-like
 * reply r when st is 0): the cache learns the file, and a file made
 * otherwise than this client said is counted. */
static void created(stria_fs_t *fs, int64_t sent, struct io_dom_item *it, int32_t st,
                    const struct proto_open_rep *r)
{
    it->mk_rc = st;
    if (st) {
        it->rc = st; /* its bytes had no file to go to (the sender says so) */
        return;
    }
    const struct proto_attr *a = &r->attr, *said = &it->mk->said;
    bool differed =
        a->ino != said->ino || a->mode != said->mode || a->uid != said->uid || a->gid != said->gid;
    if (differed)
        log_warn("inode %" PRIx64 " created behind as '%s' was made with mode %o uid %u gid %u, "
                 "not mode %o uid %u gid %u as said",
                 it->ino, it->mk->name, a->mode, a->uid, a->gid, said->mode, said->uid, said->gid);
    if (differed || !layout_equal(&r->layout, it->l))
        wb_create_count(fs, WB_CREATE_DIFFERED);
    cl_note_layout(fs, sent, &r->leases, it->mk->parent, it->mk->name, a, &r->layout);
    if (!it->len)
        it->rc = 0;
}

/* The results of a DOM_WRITES (results, in the order of the request's
 * list: wire[k] the item whose write, or with mk[k] whose create, entry k
 * is) into items[i].rc and mk_rc, and each reply's leases and attributes
 * into the cache; -EPROTO for a list that does not parse. */
static int dom_writes_results(stria_fs_t *fs, int64_t sent, const struct proto_blob *results,
                              struct io_dom_item *items, const uint8_t *wire, const bool *mk,
                              uint32_t nwire)
{
    struct proto_dec d;
    proto_dec_init(&d, results->p, results->len);
    for (uint32_t k = 0; k < nwire; k++) {
        struct io_dom_item *it = &items[wire[k]];
        int32_t st;
        struct proto_blob one;
        struct proto_dec od;
        if (proto_result_get(&d, &st, &one))
            return -EPROTO;
        proto_dec_init(&od, one.p, one.len);
        if (mk[k]) {
            struct proto_open_rep r;
            if (st == 0 && proto_dec_open_rep(&od, &r))
                return -EPROTO;
            created(fs, sent, it, st, &r);
            continue;
        }
        struct proto_dom_write_rep r;
        if (st == 0 && proto_dec_dom_write_rep(&od, &r))
            return -EPROTO;
        it->rc = st;
        if (st)
            continue;
        cl_note(fs, sent, &r.leases, 0, NULL, 0, 0, NULL, &r.attr);
        /* Less room to write behind: a record grows to the write's end at
         * most. (One that failed is counted when it goes again.) */
        struct layout_piece lp;
        layout_map(it->l, it->off, it->len, &lp);
        wb_dom_used(fs, lp.group, lp.obj_off + lp.len);
    }
    return 0;
}

int io_dom_writes(stria_fs_t *fs, uint32_t mdt, struct io_dom_item *items, uint32_t n)
{
    enum { CRCS = 4 * (IO_PIECE_MAX / PROTO_CSUM_BLOCK + 2) };
    if (n == 0 || n > PROTO_MAX_DOM_WRITES / 2)
        return -EINVAL;
    bool sent_it[PROTO_MAX_DOM_WRITES / 2] = {false};
    uint64_t total = 0;
    uint32_t nsend = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct layout_piece lp;
        items[i].rc = items[i].mk_rc = -EAGAIN;
        if (layout_map(items[i].l, items[i].off, items[i].len ? items[i].len : 1, &lp) ==
                LAYOUT_ON_MDT &&
            lp.group == mdt && (lp.len == items[i].len || !items[i].len) &&
            (items[i].len || items[i].mk)) {
            sent_it[i] = true;
            total += items[i].len;
            nsend++;
        }
    }
    if (nsend == 0 || total > PROTO_MAX_BULK)
        return nsend ? -EINVAL : 0;
    uint8_t *bulk = total ? malloc(total) : NULL;
    uint8_t *crcs = malloc((size_t)n * CRCS);
    uint8_t *list = malloc(PROTO_MAX_REQ_PAYLOAD / 2);
    uint8_t *mklist = malloc(PROTO_MAX_REQ_PAYLOAD / 4);
    int rc = (bulk || !total) && crcs && list && mklist ? 0 : -ENOMEM;
    struct proto_enc e, me;
    proto_enc_init(&e, list, list ? PROTO_MAX_REQ_PAYLOAD / 2 : 0);
    proto_enc_init(&me, mklist, mklist ? PROTO_MAX_REQ_PAYLOAD / 4 : 0);
    uint8_t wire[PROTO_MAX_DOM_WRITES];
    bool mk[PROTO_MAX_DOM_WRITES];
    uint32_t nwire = 0;
    uint64_t at = 0;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        if (!sent_it[i])
            continue;
        struct layout_piece lp;
        layout_map(items[i].l, items[i].off, items[i].len ? items[i].len : 1, &lp);
        uint8_t gen = (uint8_t)layout_comp_gen(&items[i].l->comp[lp.comp]);
        const struct io_mk *m = items[i].mk;
        if (m) {
            /* The file first: an entry of its own, with no bytes. */
            struct proto_dom_create c = {.item = (uint16_t)nwire,
                                         .parent = m->parent,
                                         .name = proto_str_c(m->name),
                                         .mode = m->mode,
                                         .flags = m->flags,
                                         .cred = m->cred};
            proto_dom_create_put(&me, &c);
            struct proto_dom_writes_item it = {.ino = items[i].ino, .gen = gen};
            proto_dom_writes_item_put(&e, &it);
            wire[nwire] = (uint8_t)i;
            mk[nwire++] = true;
        }
        if (!items[i].len)
            continue;
        uint8_t *c = crcs + (size_t)i * CRCS;
        proto_csum_fill(lp.obj_off, items[i].buf, items[i].len, c);
        struct proto_dom_writes_item it = {
            .ino = items[i].ino,
            .offset = lp.obj_off,
            .len = items[i].len,
            .gen = gen,
            .crcs = {c, 4 * proto_csum_chunks(lp.obj_off, items[i].len)}};
        proto_dom_writes_item_put(&e, &it);
        wire[nwire] = (uint8_t)i;
        mk[nwire++] = false;
        util_copy(bulk + at, items[i].buf, items[i].len);
        at += items[i].len;
    }
    if (rc == 0 && (e.err || me.err))
        rc = -EINVAL;
    if (rc == 0) {
        struct proto_dom_writes_req q = {.items = {list, (uint32_t)e.len},
                                         .creates = {mklist, (uint32_t)me.len, me.len == 0}};
        struct proto_dom_writes_rep r;
        cl_cred(&q.cred);
        int64_t sent = mdc_clock_ms();
        rc = TARGET_CALL_BULK(
            fs, PROTO_NODE_META, mdt, dom_writes, &q, &r, bulk, (uint32_t)total, NULL, 0, NULL,
            ({ rc_ = dom_writes_results(fs, sent, &r.results, items, wire, mk, nwire); }));
    }
    free(mklist);
    free(list);
    free(crcs);
    free(bulk);
    return rc;
}
