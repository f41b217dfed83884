/*
 * Striped object I/O (io.h).
 *
 * A read or write is cut by the layout into pieces of at most one stripe
 * unit (and at most IO_PIECE_MAX bytes); pieces are grouped by OST, each
 * OST gets one borrowed connection, and one poll loop keeps up to io_depth
 * requests in flight on every connection at once, so all OSTs of a file
 * work in parallel from a single calling thread. Read replies land
 * straight in the caller's buffer; bytes an object does not hold (holes,
 * or past its end) read as zeros.
 */
#include "io.h"
#include "io_dom.h"
#include "inode.h"
#include "migrate.h"

#include "../common/log.h"
#include "../common/util.h"
#include "../proto/csum.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct piece {
    struct layout_piece lp;
    uint8_t *buf;
    uint64_t reqid;
    bool checked;       /* asked again, to be read and checked by the OST */
    struct piece *next; /* next piece for the same OST */
};

struct lane {
    uint32_t ost;
    struct lease lease;
    bool have;
    bool broken;
    struct piece *todo;     /* not yet sent */
    struct piece *inflight; /* sent, oldest first */
    struct piece *inflight_tail;
    int ninflight;
};

/* The pieces and lanes of one call, kept per thread and grown as needed,
 * so that the I/O path allocates nothing once a thread has done its first
 * call of a given size (freed when the thread ends). */
struct io_scratch {
    struct piece *pieces;
    size_t npieces;
    struct lane *lanes;
    size_t nlanes;
};
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p)
{
    struct io_scratch *s = p;
    free(s->pieces);
    free(s->lanes);
    free(s);
}

static void scratch_init(void)
{
    pthread_key_create(&scratch_key, scratch_free);
}

/* Make *p an array of at least want elements of size elem (*have now). */
static int grow(void **p, size_t *have, size_t want, size_t elem)
{
    if (want <= *have)
        return 0;
    void *n = realloc(*p, want * elem);
    if (!n)
        return -ENOMEM;
    *p = n;
    *have = want;
    return 0;
}

/* Room for npieces pieces and nlanes zeroed lanes, or NULL. */
static struct io_scratch *scratch_get(size_t npieces, size_t nlanes)
{
    pthread_once(&scratch_once, scratch_init);
    struct io_scratch *s = pthread_getspecific(scratch_key);
    if (!s) {
        if (!(s = calloc(1, sizeof(*s))) || pthread_setspecific(scratch_key, s)) {
            free(s);
            return NULL;
        }
    }
    if (grow((void **)&s->pieces, &s->npieces, npieces, sizeof(*s->pieces)) ||
        grow((void **)&s->lanes, &s->nlanes, nlanes, sizeof(*s->lanes)))
        return NULL;
    memset(s->lanes, 0, nlanes * sizeof(*s->lanes));
    return s;
}

/* A piece's chunks: at most IO_PIECE_MAX / PROTO_CSUM_BLOCK + 1 of them. */
#define PIECE_CRCS (IO_PIECE_MAX / PROTO_CSUM_BLOCK + 2)

static int send_piece(stria_fs_t *fs, uint64_t ino, bool write, struct lane *ln, struct piece *p)
{
    (void)fs;
    uint8_t buf[128 + 4 * PIECE_CRCS], crcs[4 * PIECE_CRCS];
    struct proto_enc e;
    proto_enc_init(&e, buf, sizeof(buf));
    int rc;
    uint16_t op;
    if (write) {
        /* The OST checks the data against these on receipt (csum.h). */
        proto_csum_fill(p->lp.obj_off, p->buf, p->lp.len, crcs);
        struct proto_write_req q = {
            .ost = ln->ost,
            .ino = ino,
            .comp = p->lp.ocomp,
            .stripe = p->lp.stripe,
            .offset = p->lp.obj_off,
            .crcs = {crcs, 4 * proto_csum_chunks(p->lp.obj_off, p->lp.len)}};
        rc = proto_enc_write_req(&e, &q);
        op = PROTO_OP_WRITE;
    } else {
        struct proto_read_req q = {.ost = ln->ost,
                                   .ino = ino,
                                   .comp = p->lp.ocomp,
                                   .stripe = p->lp.stripe,
                                   .offset = p->lp.obj_off,
                                   .len = p->lp.len,
                                   .flags = p->checked ? PROTO_READ_CHECKED : 0};
        rc = proto_enc_read_req(&e, &q);
        op = PROTO_OP_READ;
    }
    if (rc)
        return rc;
    rc = net_send(ln->lease.c, op, buf, (uint32_t)e.len, write ? p->buf : NULL,
                  write ? p->lp.len : 0, &p->reqid);
    if (rc)
        return rc;
    p->next = NULL;
    if (ln->inflight_tail)
        ln->inflight_tail->next = p;
    else
        ln->inflight = p;
    ln->inflight_tail = p;
    ln->ninflight++;
    return 0;
}

static int recv_piece(struct lane *ln, bool write, uint64_t ino)
{
    struct piece *p = ln->inflight;
    ln->inflight = p->next;
    if (!ln->inflight)
        ln->inflight_tail = NULL;
    ln->ninflight--;
    uint32_t got = 0;
    bool transport = false;
    int rc = net_recv(ln->lease.c, p->reqid, write ? NULL : p->buf, write ? 0 : p->lp.len, &got,
                      &transport);
    if (transport)
        ln->broken = true;
    if (rc == 0 && !write) {
        /* The data must match the OST's checksums of it. */
        struct proto_read_rep r;
        struct proto_dec d;
        uint64_t bad;
        proto_dec_init(&d, ln->lease.c->rx, ln->lease.c->rx_len);
        if (proto_dec_read_rep(&d, &r)) {
            ln->broken = true;
            return -EPROTO;
        }
        rc = proto_csum_check(p->lp.obj_off, p->buf, got, &r.crcs, &r.alt, &bad);
        if (rc == -EIO && r.alt.len && !p->checked) {
            /* Sent from the OST's cache unread: the block changed since
             * its checksum was kept (a write raced the send), or its copy
             * on disk is bad. Ask again for a read the OST checks. */
            log_info("checksum mismatch reading OST%04x object %" PRIx64 ".%u.%u offset %" PRIu64
                     " from its cache: asking for a checked read",
                     ln->ost, ino, p->lp.ocomp, p->lp.stripe, bad);
            p->checked = true;
            p->next = ln->todo;
            ln->todo = p;
            return 0;
        }
        if (rc) {
            log_error("checksum mismatch reading OST%04x object %" PRIx64 ".%u.%u offset %" PRIu64
                      ": the data changed on its way",
                      ln->ost, ino, p->lp.ocomp, p->lp.stripe, bad);
            return -EIO;
        }
        if (got < p->lp.len)
            memset(p->buf + got, 0, p->lp.len - got);
    }
    return rc;
}

/* One attempt of the call rt; *stale says a pooled connection failed
 * under us, *unreach that an OST was out of reach (cl_unreachable). */
static int io_rw_once(stria_fs_t *fs, const struct cl_retry *rt, uint64_t ino,
                      const struct layout *l, bool write, void *buf, size_t len, uint64_t off,
                      bool *stale, bool *unreach)
{
    size_t npieces = 0;
    for (uint64_t o = off; o < off + len;) {
        struct layout_piece lp;
        int mrc = layout_map(l, o, MIN(off + len - o, (uint64_t)IO_PIECE_MAX), &lp);
        if (mrc == -ENODATA && !write) {
            /* A component not instantiated holds no byte yet. */
            memset((uint8_t *)buf + (o - off), 0, lp.len);
        } else if (mrc == LAYOUT_ON_MDT) {
            int drc = io_dom_piece(fs, ino, &lp, (uint8_t)layout_comp_gen(&l->comp[lp.comp]), write,
                                   (uint8_t *)buf + (o - off));
            if (drc)
                return drc;
        } else if (mrc == -ENODATA) {
            log_error("write of inode %" PRIx64 " at %" PRIu64
                      " meets a component not instantiated",
                      ino, o);
            return -EIO;
        } else if (mrc) {
            return -EIO;
        } else {
            npieces++;
        }
        o += lp.len;
    }
    if (npieces == 0)
        return 0;
    struct io_scratch *s =
        scratch_get(npieces, MIN(npieces, (size_t)LAYOUT_MAX_STRIPES * LAYOUT_MAX_COMP) + 1);
    if (!s)
        return -ENOMEM;
    struct piece *pieces = s->pieces;
    struct lane *lanes = s->lanes;
    int nlanes = 0, rc = 0;
    /* Cut the range and deal the pieces to one lane per OST. */
    size_t i = 0;
    for (uint64_t o = off; o < off + len;) {
        struct layout_piece lp;
        int mrc = layout_map(l, o, MIN(off + len - o, (uint64_t)IO_PIECE_MAX), &lp);
        if (mrc == -ENODATA || mrc == LAYOUT_ON_MDT) {
            o += lp.len; /* zeroed, or the MDT's, above */
            continue;
        }
        struct piece *p = &pieces[i++];
        p->lp = lp;
        p->buf = (uint8_t *)buf + (o - off);
        p->checked = false;
        o += p->lp.len;
        uint32_t ost = map_group_ost(p->lp.group);
        struct lane *ln = NULL;
        for (int k = 0; k < nlanes; k++)
            if (lanes[k].ost == ost)
                ln = &lanes[k];
        if (!ln) {
            ln = &lanes[nlanes++];
            ln->ost = ost;
        }
        /* Keep each lane's pieces in file order: append. */
        p->next = NULL;
        struct piece **tail = &ln->todo;
        while (*tail)
            tail = &(*tail)->next;
        *tail = p;
    }
    for (int k = 0; k < nlanes && !rc; k++) {
        rc = cl_get(fs, PROTO_NODE_STOR, lanes[k].ost, &lanes[k].lease);
        lanes[k].have = rc == 0;
        if (rc && cl_unreachable(rc, false))
            *unreach = true;
        if (rc)
            log_info("OST%04x unreachable: %s", lanes[k].ost, log_err(rc));
    }
    /* Replies must keep coming: none for timeout_ms, or for what the call
     * has left of it when this try began late, and the OSTs waited on are
     * out of reach. */
    int64_t last_ns = (int64_t)util_now_mono_ns();
    int64_t quiet_ns =
        MIN(fs->conf.timeout_ms * 1000000, MAX(rt->deadline_ns - last_ns, 100000000));
    int depth = (int)fs->conf.io_depth;
    struct pollfd pfd[LAYOUT_MAX_STRIPES * LAYOUT_MAX_COMP + 1];
    int idx[LAYOUT_MAX_STRIPES * LAYOUT_MAX_COMP + 1];
    while (!rc) {
        int np = 0;
        for (int k = 0; k < nlanes && !rc; k++) {
            struct lane *ln = &lanes[k];
            while (ln->todo && ln->ninflight < depth && !rc) {
                struct piece *p = ln->todo;
                ln->todo = p->next;
                if ((rc = send_piece(fs, ino, write, ln, p)))
                    ln->broken = true;
            }
            if (ln->ninflight) {
                pfd[np].fd = ln->lease.c->fd;
                pfd[np].events = POLLIN;
                idx[np++] = k;
            }
        }
        if (rc || np == 0)
            break;
        int n = poll(pfd, (nfds_t)np, 200);
        if (n < 0 && errno != EINTR) {
            rc = -errno;
            break;
        }
        int64_t now = (int64_t)util_now_mono_ns();
        if (n <= 0) {
            if (cl_cancelled())
                rc = -EINTR;
            else if (now - last_ns >= quiet_ns)
                rc = -ETIMEDOUT;
            else
                continue;
            for (int j = 0; j < np; j++) {
                lanes[idx[j]].broken = true; /* replies still owed: the connection goes */
                if (rc == -ETIMEDOUT)
                    cl_silent_since(&lanes[idx[j]].lease, last_ns);
            }
            break;
        }
        last_ns = now;
        for (int j = 0; j < np && !rc; j++)
            if (pfd[j].revents)
                rc = recv_piece(&lanes[idx[j]], write, ino);
    }
    for (int k = 0; k < nlanes; k++)
        if (lanes[k].broken)
            *unreach = true;
    /* On failure, collect what is still in flight so connections stay usable. */
    for (int k = 0; k < nlanes; k++) {
        struct lane *ln = &lanes[k];
        if (ln->broken && ln->lease.reused && rc != -ETIMEDOUT && !cl_cancelled())
            *stale = true; /* it broke (a restart), rather than went silent */
        while (ln->have && ln->ninflight && !ln->broken)
            recv_piece(ln, write, ino);
        if (ln->have)
            cl_put(&ln->lease, ln->broken || ln->ninflight);
    }
    return rc;
}

static int rw_layout(stria_fs_t *fs, uint64_t ino, const struct layout *l, bool write, void *buf,
                     size_t len, uint64_t off)
{
    /* A layout with pending components may gain one from another thread
     * of the handle (file.c's layout_take) while this call cuts the range
     * twice: cut a copy. */
    struct layout *snap = NULL;
    if (layout_first_pending(l, UINT64_MAX) >= 0) {
        if (!(snap = malloc(sizeof(*snap))))
            return -ENOMEM;
        layout_copy(snap, l);
        l = snap;
    }
    /* Reads and writes of whole pieces are idempotent: after a storage
     * server restart repeat at once on fresh connections, and while an OST
     * is out of reach keep trying until the timeout. */
    struct cl_retry rt;
    cl_retry_init(fs, &rt);
    bool stale = false, unreach = false;
    int rc = io_rw_once(fs, &rt, ino, l, write, buf, len, off, &stale, &unreach);
    if (rc && stale)
        rc = io_rw_once(fs, &rt, ino, l, write, buf, len, off, &stale, &unreach);
    while (rc && cl_retry_again(&rt, &rc, unreach, write ? "write" : "read")) {
        unreach = false;
        rc = io_rw_once(fs, &rt, ino, l, write, buf, len, off, &stale, &unreach);
    }
    cl_retry_end(&rt);
    free(snap);
    return rc;
}

static int encode_object_op(enum io_obj_op op, uint64_t ino, const struct layout *l, uint16_t c,
                            uint16_t s, uint64_t size, struct proto_enc *e, uint16_t *opcode)
{
    uint32_t ost = map_group_ost(l->comp[c].groups[s]);
    uint16_t oc = layout_obj_comp(l, c);
    if (op == IO_TRUNCATE) {
        struct proto_truncate_req q = {ost, ino, oc, s, layout_object_size(l, c, s, size), 0};
        *opcode = PROTO_OP_TRUNCATE;
        return proto_enc_truncate_req(e, &q);
    }
    if (op == IO_DESTROY) {
        struct proto_destroy_req q = {.ost = ost, .ino = ino, .comp = oc, .stripe = s};
        *opcode = PROTO_OP_DESTROY;
        return proto_enc_destroy_req(e, &q);
    }
    struct proto_osync_req q = {ost, ino, oc, s, 0};
    *opcode = PROTO_OP_OSYNC;
    return proto_enc_osync_req(e, &q);
}

#define OBJ_WINDOW 32

struct obj_call {
    uint16_t comp, stripe;
    struct lease lease;
    bool sent, transport;
    uint64_t reqid;
    int rc;
};

/* Send one request per object of a window, then collect the replies, so
 * every OST flushes (or truncates, or removes) at the same time. */
static void object_window(stria_fs_t *fs, uint64_t ino, const struct layout *l, enum io_obj_op op,
                          uint64_t size, struct obj_call *v, int n)
{
    for (int i = 0; i < n; i++) {
        struct obj_call *o = &v[i];
        uint8_t buf[64];
        struct proto_enc e;
        uint16_t opcode;
        proto_enc_init(&e, buf, sizeof(buf));
        uint32_t ost = map_group_ost(l->comp[o->comp].groups[o->stripe]);
        o->rc = encode_object_op(op, ino, l, o->comp, o->stripe, size, &e, &opcode);
        if (!o->rc && !(o->rc = cl_get(fs, PROTO_NODE_STOR, ost, &o->lease))) {
            o->rc = net_send(o->lease.c, opcode, buf, (uint32_t)e.len, NULL, 0, &o->reqid);
            o->sent = o->rc == 0;
            o->transport = !o->sent;
            if (!o->sent)
                cl_put(&o->lease, true);
        }
    }
    for (int i = 0; i < n; i++) {
        struct obj_call *o = &v[i];
        if (!o->sent)
            continue;
        o->rc = net_recv(o->lease.c, o->reqid, NULL, 0, NULL, &o->transport);
        cl_put(&o->lease, o->transport);
    }
}

/* The calls of window v (n objects) to their end: a server restarted under
 * a pooled connection: once more, fresh; an OST out of reach: again until
 * the timeout. The first failure goes to *first. */
static void run_window(stria_fs_t *fs, uint64_t ino, const struct layout *l, enum io_obj_op op,
                       uint64_t size, struct obj_call *v, int n, int *first)
{
    /* One timeout for the window, from its first try. */
    struct cl_retry rt;
    cl_retry_init(fs, &rt);
    object_window(fs, ino, l, op, size, v, n);
    bool fresh = true;
    for (;;) {
        int again = 0, arc = 0;
        bool atr = false;
        for (int i = 0; i < n; i++)
            if (v[i].rc && ((v[i].transport && v[i].lease.reused && fresh) ||
                            cl_unreachable(v[i].rc, v[i].transport))) {
                arc = v[i].rc;
                atr = atr || v[i].transport;
                v[again++] = (struct obj_call){.comp = v[i].comp, .stripe = v[i].stripe};
            } else if (v[i].rc && !*first)
                *first = v[i].rc;
        if (!again)
            break;
        if ((!fresh || cl_cancelled()) && !cl_retry_again(&rt, &arc, atr, "object call")) {
            if (!*first)
                *first = arc;
            break;
        }
        fresh = false;
        n = again;
        object_window(fs, ino, l, op, size, v, n);
    }
    cl_retry_end(&rt);
}

static int objects_layout(stria_fs_t *fs, uint64_t ino, const struct layout *l, enum io_obj_op op,
                          uint64_t size)
{
    struct obj_call v[OBJ_WINDOW];
    int n = 0, first = 0;
    for (uint16_t c = 0; c < l->ncomp; c++) {
        const struct layout_comp *k = &l->comp[c];
        if (op == IO_TRUNCATE && !layout_comp_pending(k) &&
            (k->type & LAYOUT_TYPE_MASK) == LAYOUT_TYPE_MDT && size < k->end) {
            /* The MDT cut its bytes with the size, unless no name holds
             * the file any more: zeros then read as the cut would. */
            int rc = io_dom_zero(fs, ino, k, size, k->end);
            first = first ? first : rc;
        }
        if (layout_comp_pending(k) || (k->type & LAYOUT_TYPE_MASK) != LAYOUT_TYPE_OST)
            continue; /* no objects (yet), or its bytes on the MDT */
        for (uint16_t s = 0; s < l->comp[c].stripe_count; s++) {
            v[n++] = (struct obj_call){.comp = c, .stripe = s};
            if (n == OBJ_WINDOW) {
                run_window(fs, ino, l, op, size, v, n, &first);
                n = 0;
            }
        }
    }
    if (n)
        run_window(fs, ino, l, op, size, v, n, &first);
    return first;
}

size_t io_objects_of(uint64_t ino, const struct layout *l, struct io_obj *v, size_t cap)
{
    size_t n = 0;
    for (uint16_t c = 0; c < l->ncomp; c++) {
        const struct layout_comp *k = &l->comp[c];
        if (layout_comp_pending(k) || (k->type & LAYOUT_TYPE_MASK) != LAYOUT_TYPE_OST)
            continue; /* as objects_layout */
        for (uint16_t s = 0; s < k->stripe_count; s++, n++)
            if (n < cap)
                v[n] =
                    (struct io_obj){ino, map_group_ost(k->groups[s]), layout_obj_comp(l, c), s, 0};
    }
    return n;
}

static int punch_one(stria_fs_t *fs, uint64_t ino, const struct layout *l, uint16_t c, uint16_t s,
                     uint64_t ostart, uint64_t oend)
{
    uint32_t ost = map_group_ost(l->comp[c].groups[s]);
    struct proto_punch_req q = {ost, ino, layout_obj_comp(l, c), s, ostart, oend - ostart, 0};
    struct proto_punch_rep r;
    return TARGET_CALL(fs, PROTO_NODE_STOR, ost, punch, &q, &r, (void)0);
}

static int punch_layout(stria_fs_t *fs, uint64_t ino, const struct layout *l, uint64_t off,
                        uint64_t len)
{
    /* A file range lands on each object as one contiguous extent, found by
     * arithmetic: one PUNCH per object however long the range. */
    uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
    int first = 0;
    for (uint16_t ci = 0; ci < l->ncomp; ci++) {
        const struct layout_comp *c = &l->comp[ci];
        uint64_t a = MAX(off, c->start), b = MIN(end, c->end);
        if (a >= b || layout_comp_pending(c))
            continue;
        if ((c->type & LAYOUT_TYPE_MASK) == LAYOUT_TYPE_MDT) {
            int rc = io_dom_zero(fs, ino, c, a, b);
            first = first ? first : rc;
            continue;
        }
        for (uint16_t s = 0; s < c->stripe_count; s++) {
            uint64_t os = layout_stripe_bytes_before(c, s, a - c->start);
            uint64_t oe = layout_stripe_bytes_before(c, s, b - c->start);
            if (oe > os) {
                int rc = punch_one(fs, ino, l, ci, s, os, oe);
                first = first ? first : rc;
            }
        }
    }
    return first;
}

/* ---- objects fenced by a migration ---- */

/* How long a call waits for a migration's swap: with no record of the
 * migration to say more, 45 s; else past the MDT's stale time, after
 * which a dead migrator's fences are cleared, by enough for another look
 * at the record (every RECOVER_EVERY pauses of at most half a second). */
#define RELAYOUT_WAIT_NS  (45 * 1000000000ll)
#define RELAYOUT_GRACE_NS (15 * 1000000000ll)
#define RECOVER_EVERY     20

struct fenced_wait {
    int64_t start_ns, limit_ns; /* monotonic; limit_ns counts from start_ns */
};

/* An OST answered -ESTALE: file ino has another layout (it was migrated),
 * or is about to (its objects are fenced while the migration swaps).
 * Fetch the layout into fresh; when it is still the one used, pause
 * first (a swap takes milliseconds), and now and then see whether the
 * migration holding the fences is dead and clear them (cl_migrate_
 * recover). A file whose inode went (open, unlinked) keeps its layout.
 * The MDT's -ESTALE for its Data-on-MDT bytes (dom: DOM_MOVED) is never
 * waited out: with the layout unchanged it is the file's (superseded). */
static int relayout(stria_fs_t *fs, uint64_t ino, const struct layout *used, struct layout *fresh,
                    int attempt, bool dom, struct fenced_wait *w)
{
    int rc = cl_get_layout(fs, ino, fresh);
    if (rc && rc != -ENOENT)
        return rc;
    if (rc == 0 && !layout_equal(used, fresh))
        return 0;
    if (dom)
        return -ESTALE;
    if ((int64_t)util_now_mono_ns() - w->start_ns > w->limit_ns) {
        log_error("inode %" PRIx64 ": its objects stay fenced by a migration", ino);
        return -EIO;
    }
    if (attempt % RECOVER_EVERY == RECOVER_EVERY - 1) {
        uint32_t stale_ms = 0;
        cl_migrate_recover(fs, ino, &stale_ms);
        if (stale_ms)
            w->limit_ns = MAX(RELAYOUT_WAIT_NS, (int64_t)stale_ms * 1000000 + RELAYOUT_GRACE_NS);
    }
    layout_copy(fresh, used);
    usleep((useconds_t)MIN(10000u << MIN(attempt, 6), 500000u));
    return 0;
}

#define MOVED(rc) ((rc) == -ESTALE || (rc) == DOM_MOVED)

/* One call over a layout: what io_rw, io_objects and io_punch do. */
struct io_call {
    enum { CALL_RW, CALL_OBJECTS, CALL_PUNCH } kind;
    bool write;
    void *buf;
    size_t len;
    uint64_t off;
    enum io_obj_op op;
};

static int call_layout(stria_fs_t *fs, uint64_t ino, const struct layout *l,
                       const struct io_call *c)
{
    switch (c->kind) {
    case CALL_RW:
        return rw_layout(fs, ino, l, c->write, c->buf, c->len, c->off);
    case CALL_OBJECTS:
        return objects_layout(fs, ino, l, c->op, c->off);
    default:
        return punch_layout(fs, ino, l, c->off, c->len);
    }
}

/* The call c, again over the file's layout now while its objects answer
 * that they are fenced or its layout moved on; exact: over l only. */
static int call(stria_fs_t *fs, uint64_t ino, const struct layout *l, const struct io_call *c,
                bool exact)
{
    int rc = call_layout(fs, ino, l, c);
    if (!MOVED(rc) || exact)
        return rc == DOM_MOVED ? -ESTALE : rc;
    struct layout *v = malloc(2 * sizeof(*v)); /* the layout used, and the fresh one */
    if (!v)
        return -ENOMEM;
    layout_copy(&v[1], l);
    struct fenced_wait w = {(int64_t)util_now_mono_ns(), RELAYOUT_WAIT_NS};
    for (int a = 0; MOVED(rc); a++) {
        layout_copy(&v[0], &v[1]);
        if ((rc = relayout(fs, ino, &v[0], &v[1], a, rc == DOM_MOVED, &w)))
            break;
        rc = call_layout(fs, ino, &v[1], c);
    }
    free(v);
    return rc == DOM_MOVED ? -ESTALE : rc;
}

static int rw(stria_fs_t *fs, uint64_t ino, const struct layout *l, bool write, void *buf,
              size_t len, uint64_t off, bool exact)
{
    struct io_call c = {.kind = CALL_RW, .write = write, .buf = buf, .len = len, .off = off};
    uint64_t freed = atomic_load(&fs->freed_gen);
    int rc = len ? call(fs, ino, l, &c, exact) : 0;
    /* An OST full while objects of files removed here wait to go: once
     * they are gone (by this call's flush, or another's meanwhile), once
     * more. */
    if (rc == -ENOSPC && write && fs->flush_removals &&
        (fs->flush_removals(fs) > 0 || atomic_load(&fs->freed_gen) != freed))
        rc = call(fs, ino, l, &c, exact);
    return rc;
}

static int objects(stria_fs_t *fs, uint64_t ino, const struct layout *l, enum io_obj_op op,
                   uint64_t size, bool exact)
{
    struct io_call c = {.kind = CALL_OBJECTS, .op = op, .off = size};
    return call(fs, ino, l, &c, exact);
}

static int punch(stria_fs_t *fs, uint64_t ino, const struct layout *l, uint64_t off, uint64_t len,
                 bool exact)
{
    struct io_call c = {.kind = CALL_PUNCH, .len = len, .off = off};
    return call(fs, ino, l, &c, exact);
}

int io_rw(stria_fs_t *fs, uint64_t ino, const struct layout *l, bool write, void *buf, size_t len,
          uint64_t off)
{
    return rw(fs, ino, l, write, buf, len, off, false);
}

int io_objects(stria_fs_t *fs, uint64_t ino, const struct layout *l, enum io_obj_op op,
               uint64_t size)
{
    return objects(fs, ino, l, op, size, false);
}

int io_punch(stria_fs_t *fs, uint64_t ino, const struct layout *l, uint64_t off, uint64_t len)
{
    return punch(fs, ino, l, off, len, false);
}

int io_rw_as(stria_fs_t *fs, uint64_t ino, const struct layout *l, bool write, void *buf,
             size_t len, uint64_t off)
{
    return rw(fs, ino, l, write, buf, len, off, true);
}

int io_objects_as(stria_fs_t *fs, uint64_t ino, const struct layout *l, enum io_obj_op op,
                  uint64_t size)
{
    return objects(fs, ino, l, op, size, true);
}

int io_punch_as(stria_fs_t *fs, uint64_t ino, const struct layout *l, uint64_t off, uint64_t len)
{
    return punch(fs, ino, l, off, len, true);
}
