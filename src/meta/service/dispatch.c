/*
 * The dispatcher of one MDT's requests (dispatch.h): one table, serves[],
 * says for every kind of request how it is served (a read that grants
 * leases, a change that revokes them and keeps its reply for resends, a
 * plain operation, a step of another MDT's operation, or a handler of the
 * service's own) and by which operation; one generic function serves every
 * row, decoding and encoding through the message table's codecs. Adding
 * an operation: its message in src/proto/proto.h, a row here.
 */
#include "dispatch.h"

#include "../../common/log.h"
#include "../ops/fsck.h"
#include "../store/dom_rec.h"
#include "../store/hsm_rec.h"
#include "mdt.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Around each request whose reply carries leases: the mark for grants
 * and where the operation notes the inodes it writes. */
struct leasing {
    uint64_t mark;
    struct meta_touched touched;
};

static void leasing_begin(void *p, struct leasing *ls)
{
    memset(ls, 0, sizeof(*ls));
    ls->mark = lease_read_begin(MDT_LEASES(p));
}

/* A request that wrote inodes revokes other clients' leases on them and
 * tells the changer the new generations and attributes (which it then
 * answers from); one that only read grants leases on inos. */
static void leasing_end(void *p, struct leasing *ls, uint64_t client, int rc, const uint64_t *inos,
                        uint32_t n, struct proto_leases *out)
{
    if (ls->touched.n || ls->touched.overflow) {
        lease_changed(MDT_LEASES(p), client, &ls->touched, rc == 0, out);
        if (rc == 0)
            meta_op_lease_attrs(MDT_CTX(p), &ls->touched, out);
    } else if (rc == 0) {
        lease_grant(MDT_LEASES(p), ls->mark, client, inos, n, out);
    }
}

/* Which inodes a lookup leases: for one name, not through a symlink, the
 * directory (its names) and what the name holds. */
static uint32_t grants_lookup(const void *qv, const void *rv, uint64_t *inos)
{
    const struct proto_lookup_req *q = qv;
    const struct proto_lookup_rep *r = rv;
    if (q->follow || q->path.len == 0 || memchr(q->path.p, '/', q->path.len))
        return 0;
    inos[0] = q->parent;
    inos[1] = r->attr.ino;
    return 2;
}

/* A getattr leases its inode. */
static uint32_t grants_getattr(const void *qv, const void *rv, uint64_t *inos)
{
    const struct proto_getattr_req *q = qv;
    (void)rv;
    inos[0] = q->ino;
    return 1;
}

/* What an OPEN's reply says of the bytes it sends, and a grant: not kept
 * for a resend (a grant is of its moment). Whether there was anything to
 * leave out. */
static bool unbulk_open(void *rv)
{
    struct proto_open_rep *r = rv;
    bool any = r->dom_crcs.len || (!r->wb.absent && r->wb.len);
    r->dom_crcs = (struct proto_blob){NULL, 0};
    r->wb = (struct proto_tblob){NULL, 0, true};
    return any;
}

/* Scratch for an operation that finds it needs some (meta_req.scratch). */
static void *req_scratch(void *req, uint32_t len)
{
    return net_scratch(req, len);
}

/* An unlink that asks for it gets the write-behind grant (lease.h). */
static void after_unlink(struct mdt_service *m, const struct net_req *req, const void *qv, void *rv)
{
    const struct proto_unlink_req *q = qv;
    struct proto_unlink_rep *r = rv;
    if (q->want_wb)
        r->wb_ms = lease_wb_grant(m->leases, req->hdr.client_id, &r->wb_id);
}

/* An open that created its file and asks for it gets the write-behind
 * grant, with the room left in the Data-on-MDT records (what the holder
 * may write behind: while it holds the grant, only its own requests run
 * here, so they are counted once it is held). A new grant covers the file
 * only if no other request passed the gate since this one
 * (lease_wb_grant_since): that one could have looked at the new file. */
static void after_open(struct mdt_service *m, const struct net_req *req, const void *qv, void *rv)
{
    const struct proto_open_req *q = qv;
    struct proto_open_rep *r = rv;
    uint64_t held = 0;
    if (!r->created || q->wb.len != 1 || !(q->wb.p[0] & PROTO_OPEN_WANT_WB))
        return;
    uint8_t *out = net_scratch((struct net_req *)req, PROTO_OPEN_WB_LEN);
    if (!out)
        return;
    struct proto_open_wb w = {0};
    w.ms = lease_wb_grant_since(m->leases, req->hdr.client_id, req->entered, &w.id);
    if (w.ms && meta_store_dom_total(m->store, &held))
        w.ms = 0; /* the room unknown: no grant said */
    if (!w.ms)
        w.id = 0;
    uint64_t max = m->ctx.dom_max;
    w.dom_room = max > held ? max - held : 0;
    /* Numbers to create files behind with (create.h); none is no harm:
     * the client makes its files the ordinary way. */
    if (q->wb.p[0] & PROTO_OPEN_WANT_INOS) {
        struct meta_req rq = {.ctx = &m->ctx, .wait_ns = &((struct net_req *)req)->wait_ns};
        bool idle = q->wb.p[0] & PROTO_OPEN_INOS_IDLE;
        if (meta_op_ino_range(&rq, req->hdr.client_id, idle, &w.ino_lo) == 0)
            w.ino_n = META_DLG_INOS;
    }
    proto_open_wb_put(out, &w);
    /* A client that asked for no range may be of before ranges: it reads
     * the first PROTO_OPEN_WB_LEN_V1 bytes only. */
    bool ranges = q->wb.p[0] & PROTO_OPEN_WANT_INOS;
    r->wb = (struct proto_tblob){out, ranges ? PROTO_OPEN_WB_LEN : PROTO_OPEN_WB_LEN_V1, false};
}

/* One item's result of a list reply (UNLINKS, DOM_WRITES) into res:
 * {status, BLOB reply}, rep encoded in place by codec when status is 0.
 * Where the reply's bytes begin in res. */
static size_t result_put(struct proto_enc *res, int status, const struct proto_codec *codec,
                         const void *rep)
{
    proto_result_put(res, status, (struct proto_blob){NULL, 0});
    size_t at = res->len;
    if (status == 0 && res->err == 0) {
        codec->enc_rep(res, rep);
        if (res->err == 0)
            proto_put_le32(res->buf + at - 4, (uint32_t)(res->len - at));
    }
    return at;
}

/* UNLINKS (proto.h): each item served as an UNLINK, with its own leases
 * and its own kept reply, all of them queued to the store at once so that
 * they share a commit. */
struct unlinks {
    struct proto_unlink_req q[PROTO_MAX_UNLINKS];
    struct proto_unlink_rep r[PROTO_MAX_UNLINKS];
    struct meta_req rq[PROTO_MAX_UNLINKS];
    const struct meta_req *rqp[PROTO_MAX_UNLINKS];
    struct leasing ls[PROTO_MAX_UNLINKS];
    struct meta_reply kept[PROTO_MAX_UNLINKS];
    int rc[PROTO_MAX_UNLINKS];
    bool slot[PROTO_MAX_UNLINKS];     /* its slot is claimed in the reply cache */
    bool made[PROTO_MAX_UNLINKS];     /* to be made here, not answered from the cache */
    uint8_t order[PROTO_MAX_UNLINKS]; /* the items with slots, by seq */
    uint32_t nslots;                  /* how many */
};

/* The items of q into u: their count, or -EINVAL for a list that does not
 * parse, is empty or too long, or names a slot twice. */
static int unlinks_parse(struct unlinks *u, void *p, struct net_req *req,
                         const struct proto_unlinks_req *q)
{
    const struct proto_codec *codec = proto_codec(PROTO_OP_UNLINK);
    struct proto_dec d;
    proto_dec_init(&d, q->items.p, q->items.len);
    uint32_t n = 0, nslots = 0;
    while (d.off < d.len) {
        struct proto_unlinks_item it;
        if (n == PROTO_MAX_UNLINKS || proto_unlinks_item_get(&d, &it))
            return -EINVAL;
        u->q[n] = (struct proto_unlink_req){.cred = q->cred, .parent = it.parent, .path = it.path};
        u->kept[n] = (struct meta_reply){.client = req->hdr.client_id,
                                         .seq = it.seq,
                                         .tag = it.tag,
                                         .op = PROTO_OP_UNLINK,
                                         .encode = codec->enc_rep,
                                         .rep = &u->r[n]};
        u->rq[n] = (struct meta_req){.ctx = MDT_CTX(p),
                                     .touched = &u->ls[n].touched,
                                     .reply = it.tag ? &u->kept[n] : NULL,
                                     .wait_ns = &req->wait_ns};
        u->rqp[n] = &u->rq[n];
        u->made[n] = true;
        if (it.tag) { /* in by seq, and no seq twice */
            uint32_t at = nslots++;
            for (; at > 0 && u->kept[u->order[at - 1]].seq >= it.seq; at--) {
                if (u->kept[u->order[at - 1]].seq == it.seq)
                    return -EINVAL;
                u->order[at] = u->order[at - 1];
            }
            u->order[at] = (uint8_t)n;
            u->slot[n] = true;
        }
        n++;
    }
    u->nslots = nslots;
    return n ? (int)n : -EINVAL;
}

/* Claim the items' slots (net_item_begin), in the order that keeps two
 * requests from waiting on each other. An item already made, sent again
 * alone before this request came, is answered from its reply and not made
 * again. */
static void unlinks_claim(struct unlinks *u, struct net_req *req)
{
    uint8_t *buf = NULL;
    for (uint32_t k = 0; k < u->nslots; k++) {
        uint32_t i = u->order[k], len = 0;
        if (!buf && !(buf = net_scratch(req, PROTO_MAX_REP_PAYLOAD - 64))) {
            u->slot[i] = false; /* without memory: made unclaimed, as before a cache */
            continue;
        }
        int st = 0;
        if (net_item_begin(req, u->kept[i].seq, &st, buf, PROTO_MAX_REP_PAYLOAD - 64, &len) ==
            NET_ITEM_NEW)
            continue;
        u->slot[i] = u->made[i] = false;
        struct proto_dec d;
        proto_dec_init(&d, buf, len);
        u->rc[i] = st ? st : proto_dec_unlink_rep(&d, &u->r[i]) ? -EIO : 0;
    }
}

/* Keep item i's reply in the reply cache (its encoded bytes at enc, none
 * for a failure), or forget its slot when its reply could not be had
 * (enc NULL: the request failed, or the reply could not be built): a
 * resend then finds the reply its transaction kept, or is made anew. */
static void unlinks_settle(struct unlinks *u, uint32_t i, struct net_req *req, const uint8_t *enc,
                           uint32_t len)
{
    if (!u->slot[i])
        return;
    u->slot[i] = false;
    if (!enc)
        net_item_forget(req, u->kept[i].seq);
    else
        net_item_end(req, u->kept[i].seq, u->rc[i], u->rc[i] ? NULL : enc, u->rc[i] ? 0 : len);
}

static int h_unlinks(void *p, struct net_req *req, struct net_rep *rep)
{
    struct mdt_service *m = p;
    struct proto_unlinks_req q;
    if (proto_dec_unlinks_req(&req->dec, &q))
        return -EBADMSG;
    struct unlinks *u = calloc(1, sizeof(*u));
    if (!u)
        return -ENOMEM;
    const struct proto_codec *codec = proto_codec(PROTO_OP_UNLINK);
    uint64_t client = req->hdr.client_id;
    int rc = unlinks_parse(u, p, req, &q);
    uint32_t n = rc > 0 ? (uint32_t)rc : 0;
    if (rc < 0) {
        free(u);
        return rc;
    }
    rc = 0;
    unlinks_claim(u, req);
    for (uint32_t i = 0; i < n; i++)
        if (u->made[i]) {
            leasing_begin(p, &u->ls[i]);
            u->ls[i].touched.names = true; /* each an UNLINK */
        }
    /* The items to make, a run at a time (all of them, unless some were
     * answered from the cache). */
    for (uint32_t i = 0, j; rc == 0 && i < n; i = j) {
        for (j = i; j < n && u->made[j] == u->made[i]; j++)
            ;
        if (u->made[i])
            rc = meta_op_unlink_n(j - i, &u->rqp[i], &u->q[i], &u->r[i], &u->rc[i]);
    }
    /* What was made revokes other clients' leases, whatever the reply. */
    for (uint32_t i = 0; i < n; i++)
        if (u->made[i])
            leasing_end(p, &u->ls[i], client, rc ? rc : u->rc[i], NULL, 0, &u->r[i].leases);
    uint64_t wb_id = 0;
    uint32_t wb_ms = rc == 0 && q.want_wb ? lease_wb_grant(m->leases, client, &wb_id) : 0;
    struct proto_enc res;
    proto_enc_init(&res, NULL, 0);
    if (rc == 0) {
        uint8_t *buf = net_scratch(req, PROTO_MAX_REP_PAYLOAD - 64);
        if (!buf)
            rc = -ENOMEM; /* made: the client's resends find the kept replies */
        proto_enc_init(&res, buf, buf ? PROTO_MAX_REP_PAYLOAD - 64 : 0);
    }
    for (uint32_t i = 0; i < n; i++) {
        u->r[i].wb_ms = wb_ms;
        u->r[i].wb_id = wb_id;
        size_t at = rc == 0 ? result_put(&res, u->rc[i], codec, &u->r[i]) : 0;
        bool whole = rc == 0 && res.err == 0;
        unlinks_settle(u, i, req, whole ? res.buf + at : NULL,
                       whole ? (uint32_t)(res.len - at) : 0);
    }
    free(u);
    if (rc)
        return rc;
    /* Too long a reply (the items are made: the client asks for each
     * again, as a resend, and is answered from its kept reply). */
    struct proto_unlinks_rep r = {.results = {res.buf, (uint32_t)res.len}};
    return res.err ? res.err : proto_enc_unlinks_rep(&rep->enc, &r);
}

/* DOM_WRITES (msg_layout.h): each item served as a DOM_WRITE of its slice
 * of the bulk, with its own leases, all of them in one transaction. */
struct dom_writes {
    struct proto_dom_create c[PROTO_MAX_DOM_WRITES];
    struct meta_dom_mk mk;
    struct proto_open_rep mkr[PROTO_MAX_DOM_WRITES];
    struct proto_dom_write_req q[PROTO_MAX_DOM_WRITES];
    struct proto_dom_write_rep r[PROTO_MAX_DOM_WRITES];
    struct meta_req rq[PROTO_MAX_DOM_WRITES];
    const struct meta_req *rqp[PROTO_MAX_DOM_WRITES];
    struct leasing ls[PROTO_MAX_DOM_WRITES];
    int rc[PROTO_MAX_DOM_WRITES];
};

/* The creates of q into w->mk: how many, or -EINVAL for a list that does
 * not parse or whose items are not in rising order. */
static int dom_creates_parse(struct dom_writes *w, const struct proto_dom_writes_req *q,
                             uint64_t client)
{
    struct proto_dec d;
    proto_dec_init(&d, q->creates.p, q->creates.absent ? 0 : q->creates.len);
    w->mk.client = client;
    w->mk.reps = w->mkr;
    int n = 0;
    for (int last = -1; d.off < d.len; last = w->c[n++].item)
        if (n == PROTO_MAX_DOM_WRITES || proto_dom_create_get(&d, &w->c[n]) ||
            w->c[n].item >= PROTO_MAX_DOM_WRITES || (int)w->c[n].item <= last)
            return -EINVAL;
    for (int i = 0; i < n; i++)
        w->mk.items[w->c[i].item] = &w->c[i];
    return n;
}

/* The items of q into d, each with its slice of the request's bulk: their
 * count, or -EINVAL for a list that does not parse, is empty or too long,
 * whose lengths are not the bulk's, or whose creates do not fit it (one
 * past its end, or bytes with a create). */
static int dom_writes_parse(struct dom_writes *w, void *p, struct net_req *req,
                            const struct proto_dom_writes_req *q)
{
    int nmk = dom_creates_parse(w, q, req->hdr.client_id);
    if (nmk < 0)
        return nmk;
    struct proto_dec d;
    proto_dec_init(&d, q->items.p, q->items.len);
    uint32_t n = 0;
    uint64_t at = 0;
    while (d.off < d.len) {
        struct proto_dom_writes_item it;
        if (n == PROTO_MAX_DOM_WRITES || proto_dom_writes_item_get(&d, &it) ||
            (it.len == 0) != (w->mk.items[n] != NULL) || it.len > req->bulk_len - at)
            return -EINVAL;
        w->q[n] = (struct proto_dom_write_req){.cred = q->cred,
                                               .ino = it.ino,
                                               .offset = it.offset,
                                               .mtime_ns = it.mtime_ns,
                                               .crcs = it.crcs,
                                               .gen = it.gen};
        w->rq[n] = (struct meta_req){.ctx = MDT_CTX(p),
                                     .bulk = req->bulk + at,
                                     .bulk_len = it.len,
                                     .touched = &w->ls[n].touched,
                                     .wait_ns = &req->wait_ns};
        w->rqp[n] = &w->rq[n];
        at += it.len;
        n++;
    }
    for (uint32_t i = n; nmk && i < PROTO_MAX_DOM_WRITES; i++)
        if (w->mk.items[i])
            return -EINVAL; /* a create of no item */
    return n && at == req->bulk_len ? (int)n : -EINVAL;
}

static int h_dom_writes(void *p, struct net_req *req, struct net_rep *rep)
{
    struct proto_dom_writes_req q;
    if (proto_dec_dom_writes_req(&req->dec, &q))
        return -EBADMSG;
    struct dom_writes *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    int rc = dom_writes_parse(w, p, req, &q);
    uint32_t n = rc > 0 ? (uint32_t)rc : 0;
    for (uint32_t i = 0; i < n; i++)
        leasing_begin(p, &w->ls[i]);
    rc = n ? meta_op_dom_write_n(n, w->rqp, w->q, &w->mk, w->r, w->rc) : rc;
    /* What was made revokes other clients' leases, whatever the reply. */
    for (uint32_t i = 0; i < n; i++)
        leasing_end(p, &w->ls[i], req->hdr.client_id, rc ? rc : w->rc[i], NULL, 0,
                    w->mk.items[i] ? &w->mkr[i].leases : &w->r[i].leases);
    uint8_t *buf = rc == 0 ? net_scratch(req, PROTO_MAX_REP_PAYLOAD - 64) : NULL;
    if (rc == 0 && !buf)
        rc = -ENOMEM; /* made: the client sends it again, and it is made once */
    struct proto_enc res;
    proto_enc_init(&res, buf, buf ? PROTO_MAX_REP_PAYLOAD - 64 : 0);
    const struct proto_codec *codec = proto_codec(PROTO_OP_DOM_WRITE);
    const struct proto_codec *mk_codec = proto_codec(PROTO_OP_OPEN);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        if (w->mk.items[i]) {
            /* A create's reply is an OPEN's, without bytes or a grant. */
            w->mkr[i].wb = (struct proto_tblob){NULL, 0, true};
            result_put(&res, w->rc[i], mk_codec, &w->mkr[i]);
        } else {
            result_put(&res, w->rc[i], codec, &w->r[i]);
        }
    }
    free(w);
    if (rc)
        return rc;
    struct proto_dom_writes_rep r = {.results = {res.buf, (uint32_t)res.len}};
    return res.err ? res.err : proto_enc_dom_writes_rep(&rep->enc, &r);
}

static int h_fsck(void *p, struct net_req *req, struct net_rep *rep)
{
    struct mdt_service *m = p;
    struct proto_fsck_req q;
    if (proto_dec_fsck_req(&req->dec, &q))
        return -EBADMSG;
    if (q.cred.uid != 0)
        return -EPERM;
    char *text = net_scratch(req, PROTO_MAX_FSCK_TEXT);
    if (!text)
        return -ENOMEM;
    struct meta_fsck_report f = {.text = text, .text_cap = PROTO_MAX_FSCK_TEXT};
    uint8_t *refs = malloc(PROTO_MAX_FSCK_REFS);
    if (!refs)
        return -ENOMEM;
    f.refs = refs;
    f.refs_cap = PROTO_MAX_FSCK_REFS;
    f.xfixes = q.fixes.p;
    f.xfixes_len = q.fixes.len;
    f.mig_stale_ms = m->ctx.mig_stale_ms;
    log_info("fsck%s started peer=%s", q.repair ? " --repair" : "", req->peer);
    int rc = meta_fsck(m->store, q.repair != 0, &f);
    log_info("fsck: %s; inodes=%llu entries=%llu dangling=%llu orphans=%llu bad_nlink=%llu "
             "bad_parent=%llu corrupt=%llu fixed=%llu",
             rc ? log_err(rc) : "done", (unsigned long long)f.inodes, (unsigned long long)f.entries,
             (unsigned long long)f.dangling, (unsigned long long)f.orphans,
             (unsigned long long)f.bad_nlink, (unsigned long long)f.bad_parent,
             (unsigned long long)f.corrupt, (unsigned long long)f.fixed);
    if (f.fixed) {
        /* Repairs are not listed inode by inode: every lease goes. */
        struct meta_touched all = {.overflow = true};
        struct proto_leases none;
        lease_changed(MDT_LEASES(p), 0, &all, true, &none);
    }
    if (rc) {
        free(refs);
        return rc;
    }
    struct proto_fsck_rep r = {.inodes = f.inodes,
                               .entries = f.entries,
                               .dangling = f.dangling,
                               .orphans = f.orphans,
                               .bad_nlink = f.bad_nlink,
                               .bad_parent = f.bad_parent,
                               .corrupt = f.corrupt,
                               .fixed = f.fixed,
                               .text = {.p = (const uint8_t *)text, .len = (uint32_t)f.text_len},
                               .open_ops = f.open_ops,
                               .refs = {refs, (uint32_t)f.refs_len},
                               .refs_full = f.refs_full};
    rc = proto_enc_fsck_rep(&rep->enc, &r);
    free(refs);
    return rc;
}

static int h_statfs(void *p, struct net_req *req, struct net_rep *rep)
{
    struct mdt_service *m = p;
    struct proto_statfs_rep r;
    (void)req;
    memset(&r, 0, sizeof(r));
    r.targets.n = 1;
    int rc = meta_store_stats(m->store, &r.targets.t[0]);
    if (rc == 0)
        rc = meta_store_released(m->store, &r.released_bytes, &r.released_files);
    if (rc == 0)
        rc = meta_store_dom_total(m->store, &r.dom_bytes);
    r.dom_max = m->ctx.dom_max;
    return rc ? rc : proto_enc_statfs_rep(&rep->enc, &r);
}

static int h_sync(void *p, struct net_req *req, struct net_rep *rep)
{
    (void)req, (void)rep;
    return meta_store_sync(((struct mdt_service *)p)->store);
}

/* The longest a revocation channel's poll waits with nothing to say: its
 * client hears this often which instance of the MDT it talks to. */
#define LEASE_POLL_MS 1000

/* A client's revocation channel: answers within a second, parked
 * (without a worker) while it has nothing to say. */
static int h_lease_poll(void *p, struct net_req *req, struct net_rep *rep)
{
    struct proto_lease_poll_req q;
    struct proto_lease_poll_rep r;
    memset(&r, 0, sizeof(r));
    if (proto_dec_lease_poll_req(&req->dec, &q))
        return -EBADMSG;
    uint32_t cap = PROTO_MAX_REVOKES * 17; /* 16 bytes and a kind each */
    uint8_t *buf = net_scratch(req, cap);
    if (!buf)
        return -ENOMEM;
    bool again = req->woken != 0;
    uint64_t park = again ? 0 : net_park(req, LEASE_POLL_MS);
    int n = lease_poll(MDT_LEASES(p), req->hdr.client_id, req->conn, q.acked, q.bye != 0, park,
                       again, buf, cap, &r.first);
    if (n == LEASE_PARKED)
        return NET_PARKED;
    r.instance = lease_instance(MDT_LEASES(p));
    r.revokes = (struct proto_blob){buf, (uint32_t)n * 16};
    r.kinds = (struct proto_tblob){buf + (uint32_t)n * 16, (uint32_t)n, false};
    return proto_enc_lease_poll_rep(&rep->enc, &r);
}

/* Whether req passes write-behind's gate (lease_enter): every request
 * that may look at the namespace or the files' bytes. The revocation
 * channel's polls do not, nor STATS, STATFS and PING, which see only
 * counters: a monitor scraping the MDTs (stria stats, stria top, df) must
 * not take the grant from the clients writing behind. Nor do the reads of
 * the management daemon's policy engine, every policy_interval on every
 * MDT whether or not a repository exists: REPO's LIST and GET read the
 * repositories' settings, which nothing written behind changes, and
 * HSM_GONE's LIST reads tombstones, of which those of unlinks still queued
 * behind a grant come in the next round. A request that does not decode
 * passes the gate, and its handler refuses it. */
static bool gated(const struct net_req *req)
{
    struct proto_dec d = req->dec;
    switch (req->hdr.opcode) {
    case PROTO_OP_LEASE_POLL:
    case PROTO_OP_STATS:
    case PROTO_OP_STATFS:
    case PROTO_OP_PING:
        return false;
    case PROTO_OP_REPO: {
        struct proto_repo_req q;
        return proto_dec_repo_req(&d, &q) || (q.op != REPO_OP_LIST && q.op != REPO_OP_GET);
    }
    case PROTO_OP_HSM_GONE: {
        struct proto_hsm_gone_req q;
        return proto_dec_hsm_gone_req(&d, &q) || q.op != HSM_GONE_LIST;
    }
    default:
        return true;
    }
}

static void request_enter(void *p, struct net_req *req)
{
    req->gated = gated(req);
    if (req->gated)
        req->entered = lease_enter(MDT_LEASES(p), req->hdr.client_id);
}

static void request_leave(void *p, const struct net_req *req)
{
    if (req->gated)
        lease_leave(MDT_LEASES(p));
}

static void conn_closed(void *p, void *conn)
{
    lease_conn_closed(MDT_LEASES(p), conn);
}

static int h_ping(void *p, struct net_req *req, struct net_rep *rep)
{
    (void)p, (void)req, (void)rep;
    return 0;
}

/* How the dispatcher serves one kind of request. */
enum serve_how {
    SERVE_NONE,   /* not served by this daemon */
    SERVE_READ,   /* an operation whose reply carries LEASES: grants leases on what it read */
    SERVE_CHANGE, /* the same for a change: revokes every other client's lease on what it wrote,
                   * and keeps its reply with the change when the client gave it a slot */
    SERVE_PLAIN,  /* an operation whose reply carries no leases */
    SERVE_STEP,   /* a step of another MDT's cross-MDT operation: revokes, grants nothing */
    SERVE_KEEP,   /* a change whose reply carries no leases: revokes, keeps its reply */
    SERVE_OWN,    /* the service's own handler (no operation of ops.h) */
};

/* One row per request kind: how it is served and by what. Decoding and
 * encoding come from the message table (proto_codec). */
struct serve {
    enum serve_how how;
    /* The operation (ops.h): rq, the decoded request, the reply to fill. */
    int (*fn)(const struct meta_req *rq, const void *q, void *r);
    /* Where the reply's LEASES field is (SERVE_READ, SERVE_CHANGE). */
    size_t leases;
    /* How many inodes a read leases, put in inos (from q and r; at most
     * PROTO_MAX_LEASES); NULL: none. */
    uint32_t (*grants)(const void *q, const void *r, uint64_t *inos);
    /* Runs on success, after the leases, before the reply is encoded. */
    void (*after)(struct mdt_service *m, const struct net_req *req, const void *q, void *r);
    /* Bytes of scratch the reply may point into (meta_req.buf). */
    uint32_t buf;
    /* A change whose reply may send bulk, or say what holds only for the
     * request's moment (OPEN's grant): clears those fields of the reply,
     * for the copy the reply cache keeps (a resend is answered from that
     * copy, without the bulk); whether there were any. */
    bool (*unbulk)(void *r);
    /* SERVE_OWN: the handler. */
    net_handler_fn own;
    /* A namespace operation (meta_touched's names): the directories it
     * changes change only in their names, so other mounts keep the
     * kernel's attributes of them (architecture.md, "A dropped reply"). */
    bool names;
};

#define LEASES_OF(lname) offsetof(struct proto_##lname##_rep, leases)

/* Adding an operation: a row here (and its message in proto.h). */
static const struct serve serves[PROTO_OP_MAX] = {
    [PROTO_OP_LOOKUP] = {SERVE_READ, meta_op_lookup, LEASES_OF(lookup), grants_lookup},
    [PROTO_OP_GETATTR] = {SERVE_READ, meta_op_getattr, LEASES_OF(getattr), grants_getattr},
    [PROTO_OP_SETATTR] = {SERVE_CHANGE, meta_op_setattr, LEASES_OF(setattr)},
    [PROTO_OP_OPEN] = {SERVE_CHANGE, meta_op_open, LEASES_OF(open), .after = after_open,
                       .unbulk = unbulk_open, .names = true},
    [PROTO_OP_MKDIR] = {SERVE_CHANGE, meta_op_mkdir, LEASES_OF(mkdir), .names = true},
    [PROTO_OP_UNLINK] = {SERVE_CHANGE, meta_op_unlink, LEASES_OF(unlink), .after = after_unlink,
                         .names = true},
    [PROTO_OP_RMDIR] = {SERVE_CHANGE, meta_op_rmdir, LEASES_OF(rmdir), .names = true},
    [PROTO_OP_RENAME] = {SERVE_CHANGE, meta_op_rename, LEASES_OF(rename), .names = true},
    [PROTO_OP_LINK] = {SERVE_CHANGE, meta_op_link, LEASES_OF(link), .names = true},
    [PROTO_OP_SYMLINK] = {SERVE_CHANGE, meta_op_symlink, LEASES_OF(symlink), .names = true},
    [PROTO_OP_MKNOD] = {SERVE_CHANGE, meta_op_mknod, LEASES_OF(mknod), .names = true},
    [PROTO_OP_SETSTRIPE] = {SERVE_CHANGE, meta_op_setstripe, LEASES_OF(setstripe)},
    [PROTO_OP_SETDIRSTRIPE] = {SERVE_CHANGE, meta_op_setdirstripe, LEASES_OF(setdirstripe)},
    [PROTO_OP_SETXATTR] = {SERVE_CHANGE, meta_op_setxattr, LEASES_OF(setxattr)},
    [PROTO_OP_REMOVEXATTR] = {SERVE_CHANGE, meta_op_removexattr, LEASES_OF(removexattr)},
    [PROTO_OP_SETSIZE] = {SERVE_CHANGE, meta_op_setsize, LEASES_OF(setsize)},
    [PROTO_OP_GETSTRIPE] = {SERVE_PLAIN, meta_op_getstripe},
    [PROTO_OP_DESTROYED] = {SERVE_PLAIN, meta_op_destroyed},
    [PROTO_OP_READLINK] = {SERVE_PLAIN, meta_op_readlink, .buf = PROTO_MAX_STR},
    [PROTO_OP_READDIR] = {SERVE_PLAIN, meta_op_readdir, .buf = PROTO_MAX_REP_PAYLOAD - 64},
    [PROTO_OP_GETXATTR] = {SERVE_PLAIN, meta_op_getxattr, .buf = PROTO_MAX_XATTR},
    [PROTO_OP_LISTXATTR] = {SERVE_PLAIN, meta_op_listxattr, .buf = PROTO_MAX_REP_PAYLOAD - 64},
    [PROTO_OP_HSM_GET] = {SERVE_PLAIN, meta_op_hsm_get, .buf = META_HSM_BUF},
    [PROTO_OP_HSM_SET] = {SERVE_CHANGE, meta_op_hsm_set, LEASES_OF(hsm_set)},
    [PROTO_OP_HSM_IMPORT] = {SERVE_CHANGE, meta_op_hsm_import, LEASES_OF(hsm_import)},
    [PROTO_OP_REPO] = {SERVE_KEEP, meta_op_repo, .buf = META_REPO_BUF},
    [PROTO_OP_HSM_GONE] = {SERVE_PLAIN, meta_op_hsm_gone, .buf = META_GONE_BUF},
    [PROTO_OP_HSM_REAP] = {SERVE_PLAIN, meta_op_hsm_reap},
    [PROTO_OP_DOM_WRITE] = {SERVE_CHANGE, meta_op_dom_write, LEASES_OF(dom_write)},
    [PROTO_OP_MIGRATE] = {SERVE_CHANGE, meta_op_migrate, LEASES_OF(migrate)},
    [PROTO_OP_DOM_READ] = {SERVE_PLAIN, meta_op_dom_read, .buf = META_DOM_BUF},
    [PROTO_OP_LAYOUT_INTENT] = {SERVE_CHANGE, meta_op_layout_intent, LEASES_OF(layout_intent)},
    [PROTO_OP_SHARD] = {SERVE_STEP, meta_op_shard},
    [PROTO_OP_XNAME] = {SERVE_STEP, meta_op_xname, .names = true},
    [PROTO_OP_PING] = {SERVE_OWN, .own = h_ping},
    [PROTO_OP_STATFS] = {SERVE_OWN, .own = h_statfs},
    [PROTO_OP_SYNC] = {SERVE_OWN, .own = h_sync},
    [PROTO_OP_FSCK] = {SERVE_OWN, .own = h_fsck},
    [PROTO_OP_LEASE_POLL] = {SERVE_OWN, .own = h_lease_poll},
    [PROTO_OP_UNLINKS] = {SERVE_OWN, .own = h_unlinks},
    [PROTO_OP_DOM_WRITES] = {SERVE_OWN, .own = h_dom_writes},
};
#undef LEASES_OF

/* Zero the first size bytes of a reply (at least). Each clear has a size
 * known at compile time, which the compiler makes one `rep stosq` (8
 * bytes a step); memset with the size as a variable goes to libc's, which
 * clears a reply of 5 KiB as `rep stosb`, a byte a step: the same time,
 * but 5,000 of the instructions bench/bench_mdt.sh counts, against 650
 * before the table. Most replies hold a LAYOUT (about 5 KiB). */
static void zero_reply(union proto_any_rep *r, size_t size)
{
    if (size <= 1024)
        memset(r, 0, 1024);
    else if (size <= 5248)
        memset(r, 0, 5248);
    else
        memset(r, 0, sizeof(*r));
}

/* Every operation of the table: decode, run the operation with its
 * request context, grant or revoke leases, encode. Nothing is allocated:
 * the request and reply live on the stack (the largest of any message)
 * and a buffer the reply points into is the connection's scratch. */
static int dispatch(void *p, struct net_req *req, struct net_rep *rep)
{
    uint16_t op = req->hdr.opcode;
    const struct serve *sv = &serves[op];
    const struct proto_codec *codec = proto_codec(op);
    union proto_any_req q;
    union proto_any_rep r;
    zero_reply(&r, codec->rep_size);
    if (codec->dec_req(&req->dec, &q))
        return -EBADMSG;
    struct meta_req rq = {.ctx = MDT_CTX(p),
                          .buf_len = sv->buf,
                          .bulk = req->bulk,
                          .bulk_len = req->bulk_len,
                          .scratch = sv->buf ? NULL : req_scratch,
                          .scratch_arg = req,
                          .wait_ns = &req->wait_ns};
    if (sv->buf && !(rq.buf = net_scratch(req, sv->buf)))
        return -ENOMEM;
    if (sv->how == SERVE_PLAIN) {
        int rc = sv->fn(&rq, &q, &r);
        rep->bulk = rq.out_bulk;
        rep->bulk_len = rq.out_bulk_len;
        return rc ? rc : codec->enc_rep(&rep->enc, &r);
    }
    struct leasing ls;
    leasing_begin(p, &ls);
    ls.touched.names = sv->names;
    rq.touched = &ls.touched;
    struct meta_reply kept = {.client = req->hdr.client_id,
                              .seq = req->hdr.seq,
                              .tag = PROTO_HDR_TAG(&req->hdr),
                              .op = op,
                              .encode = codec->enc_rep,
                              .rep = &r};
    if (kept.tag && (codec->flags & PROTO_F_CHANGE))
        rq.reply = &kept;
    int rc = sv->fn(&rq, &q, &r);
    uint64_t inos[PROTO_MAX_LEASES];
    uint32_t n = rc == 0 && sv->grants ? sv->grants(&q, &r, inos) : 0;
    struct proto_leases none, *out = &none;
    if (sv->how == SERVE_STEP || sv->how == SERVE_KEEP)
        memset(&none, 0, sizeof(none));
    else
        out = (struct proto_leases *)((char *)&r + sv->leases);
    leasing_end(p, &ls, req->hdr.client_id, rc, inos, n, out);
    if (rc)
        return rc;
    if (sv->after)
        sv->after(p, req, &q, &r);
    if ((rc = codec->enc_rep(&rep->enc, &r)))
        return rc;
    rep->bulk = rq.out_bulk;
    rep->bulk_len = rq.out_bulk_len;
    if (rq.reply && sv->unbulk && sv->unbulk(&r)) {
        /* The reply cache keeps the reply as the store does (the
         * operation describes its bulk only after the transaction that
         * kept it): encoded again without it, in the rest of the reply's
         * buffer. */
        struct proto_enc k;
        proto_enc_init(&k, rep->enc.buf + rep->enc.len, rep->enc.cap - rep->enc.len);
        if (codec->enc_rep(&k, &r)) {
            /* No room for both: the reply goes as it is kept, without. */
            rep->bulk_len = 0;
            proto_enc_init(&rep->enc, rep->enc.buf, rep->enc.cap);
            return codec->enc_rep(&rep->enc, &r);
        }
        rep->kept = k.buf;
        rep->kept_len = (uint32_t)k.len;
    }
    return 0;
}

void meta_dispatch_install(struct net_server_opts *so)
{
    so->on_close = conn_closed;
    so->on_enter = request_enter;
    so->on_leave = request_leave;
    /* Every operation of the table, through the one dispatcher; a change
     * a client may send again after its connection broke (PROTO_F_CHANGE,
     * with a slot) is answered from the reply cache, or from the reply the
     * store kept, rather than made twice. */
    for (uint16_t op = 0; op < PROTO_OP_MAX; op++) {
        if (!serves[op].how)
            continue;
        so->handlers[op] = serves[op].how == SERVE_OWN ? serves[op].own : dispatch;
        so->cached[op] = (proto_op_flags(op) & PROTO_F_CHANGE) != 0;
    }
}
