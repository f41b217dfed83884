/*
 * Striped data I/O and the file handle calls of stria.h.
 *
 * A read or write is cut by the layout into pieces of at most one stripe
 * unit (and at most IO_PIECE_MAX bytes); pieces are grouped by OST, each
 * OST gets one borrowed connection, and one poll loop keeps up to io_depth
 * requests in flight on every connection at once, so all OSTs of a file
 * work in parallel from a single calling thread. Read replies land
 * straight in the caller's buffer; bytes an object does not hold (holes,
 * or past its end) read as zeros.
 */
#include "client.h"

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

#define IO_PIECE_MAX (1u << 20)

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
            .comp = p->lp.comp,
            .stripe = p->lp.stripe,
            .offset = p->lp.obj_off,
            .crcs = {crcs, 4 * proto_csum_chunks(p->lp.obj_off, p->lp.len)}};
        rc = proto_enc_write_req(&e, &q);
        op = PROTO_OP_WRITE;
    } else {
        struct proto_read_req q = {.ost = ln->ost,
                                   .ino = ino,
                                   .comp = p->lp.comp,
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
                     ln->ost, ino, p->lp.comp, p->lp.stripe, bad);
            p->checked = true;
            p->next = ln->todo;
            ln->todo = p;
            return 0;
        }
        if (rc) {
            log_error("checksum mismatch reading OST%04x object %" PRIx64 ".%u.%u offset %" PRIu64
                      ": the data changed on its way",
                      ln->ost, ino, p->lp.comp, p->lp.stripe, bad);
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
        if (layout_map(l, o, MIN(off + len - o, (uint64_t)IO_PIECE_MAX), &lp))
            return -EIO;
        o += lp.len;
        npieces++;
    }
    struct io_scratch *s =
        scratch_get(npieces, MIN(npieces, (size_t)LAYOUT_MAX_STRIPES * LAYOUT_MAX_COMP) + 1);
    if (!s)
        return -ENOMEM;
    struct piece *pieces = s->pieces;
    struct lane *lanes = s->lanes;
    int nlanes = 0, rc = 0;
    /* Cut the range and deal the pieces to one lane per OST. */
    size_t i = 0;
    for (uint64_t o = off; o < off + len; i++) {
        struct piece *p = &pieces[i];
        layout_map(l, o, MIN(off + len - o, (uint64_t)IO_PIECE_MAX), &p->lp);
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

int io_rw(stria_fs_t *fs, uint64_t ino, const struct layout *l, bool write, void *buf, size_t len,
          uint64_t off)
{
    if (len == 0)
        return 0;
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
    return rc;
}

static int encode_object_op(enum io_obj_op op, uint64_t ino, const struct layout *l, uint16_t c,
                            uint16_t s, uint64_t size, struct proto_enc *e, uint16_t *opcode)
{
    uint32_t ost = map_group_ost(l->comp[c].groups[s]);
    if (op == IO_TRUNCATE) {
        struct proto_truncate_req q = {ost, ino, c, s, layout_object_size(l, c, s, size), 0};
        *opcode = PROTO_OP_TRUNCATE;
        return proto_enc_truncate_req(e, &q);
    }
    if (op == IO_DESTROY) {
        struct proto_destroy_req q = {ost, ino, c, s, 0};
        *opcode = PROTO_OP_DESTROY;
        return proto_enc_destroy_req(e, &q);
    }
    struct proto_osync_req q = {ost, ino, c, s, 0};
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

int io_objects(stria_fs_t *fs, uint64_t ino, const struct layout *l, enum io_obj_op op,
               uint64_t size)
{
    struct obj_call v[OBJ_WINDOW];
    int n = 0, first = 0;
    for (uint16_t c = 0; c < l->ncomp; c++) {
        for (uint16_t s = 0; s < l->comp[c].stripe_count; s++) {
            v[n++] = (struct obj_call){.comp = c, .stripe = s};
            bool last = c + 1 == l->ncomp && s + 1 == l->comp[c].stripe_count;
            if (n < OBJ_WINDOW && !last)
                continue;
            /* One timeout for the window, from its first try: a server
             * restarted under a pooled connection: once more, fresh; an
             * OST out of reach: again until the timeout. */
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
                    } else if (v[i].rc && !first)
                        first = v[i].rc;
                if (!again)
                    break;
                if ((!fresh || cl_cancelled()) && !cl_retry_again(&rt, &arc, atr, "object call")) {
                    if (!first)
                        first = arc;
                    break;
                }
                fresh = false;
                n = again;
                object_window(fs, ino, l, op, size, v, n);
            }
            cl_retry_end(&rt);
            n = 0;
        }
    }
    return first;
}

static int punch_one(stria_fs_t *fs, uint64_t ino, const struct layout *l, uint16_t c, uint16_t s,
                     uint64_t ostart, uint64_t oend)
{
    uint32_t ost = map_group_ost(l->comp[c].groups[s]);
    struct proto_punch_req q = {ost, ino, c, s, ostart, oend - ostart, 0};
    struct proto_punch_rep r;
    return TARGET_CALL(fs, PROTO_NODE_STOR, ost, punch, &q, &r, (void)0);
}

int io_punch(stria_fs_t *fs, uint64_t ino, const struct layout *l, uint64_t off, uint64_t len)
{
    /* A file range lands on each object as one contiguous extent, found by
     * arithmetic: one PUNCH per object however long the range. */
    uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
    int first = 0;
    for (uint16_t ci = 0; ci < l->ncomp; ci++) {
        const struct layout_comp *c = &l->comp[ci];
        uint64_t a = MAX(off, c->start), b = MIN(end, c->end);
        if (a >= b)
            continue;
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

/* ---- file handles ---- */

struct stria_file {
    stria_fs_t *fs;
    uint64_t ino;
    int flags;
    bool is_dir;
    struct layout layout;
    pthread_mutex_t lock;
    uint64_t size;                                 /* as the MDT last said, or as we extended it */
    uint64_t wrote_end;                            /* end of the furthest byte this handle wrote */
    enum { MARK_NONE, MARK_BUSY, MARK_DONE } mark; /* the MDT knows objects may exist */
    pthread_cond_t marked;                         /* a mark in flight ended */
    bool dirty;                                    /* written since the last size report */
    int64_t wrote_ns;   /* when this handle last wrote: the mtime its report sets */
    uint64_t write_gen; /* bumped by every write: a report covers those before it */
    bool orphan;        /* unlinked while open: the MDT has no inode any more */
    int gerr;           /* a gathered write of this handle failed: its next call says so */
    /* Read-ahead (stria.h): the piece [ra_off, ra_off + ra_len) fetched at
     * write epoch ra_epoch, and where the last read ended. */
    pthread_mutex_t ra_lock;
    char *ra_buf;
    uint64_t ra_off, ra_len, ra_epoch, read_end;
};

#define RA_CAP      IO_PIECE_MAX
#define RA_MAX_BUFS 16

uint64_t cl_file_ino_of(const stria_file_t *f)
{
    return f->ino;
}

stria_fs_t *cl_file_fs(const stria_file_t *f)
{
    return f->fs;
}

const struct layout *cl_file_layout(const stria_file_t *f)
{
    return &f->layout;
}

void cl_file_set_error(stria_file_t *f, int rc)
{
    pthread_mutex_lock(&f->lock);
    if (!f->gerr)
        f->gerr = rc;
    pthread_mutex_unlock(&f->lock);
}

/* Take f's unreported failure of a gathered write (0: none). */
static int take_error(stria_file_t *f)
{
    pthread_mutex_lock(&f->lock);
    int rc = f->gerr;
    f->gerr = 0;
    pthread_mutex_unlock(&f->lock);
    return rc;
}

/* Something of ino changed through this client: read-ahead is stale. */
static void written(stria_fs_t *fs)
{
    atomic_fetch_add_explicit(&fs->write_epoch, 1, memory_order_release);
}

/* A handle of the inode a describes, opened with flags (layout set apart). */
static void file_init(stria_file_t *f, stria_fs_t *fs, int flags, const struct proto_attr *a)
{
    f->fs = fs;
    f->ino = a->ino;
    f->flags = flags;
    f->is_dir = S_ISDIR(a->mode);
    f->size = a->size;
    pthread_mutex_init(&f->lock, NULL);
    pthread_mutex_init(&f->ra_lock, NULL);
    pthread_cond_init(&f->marked, NULL);
}

/* An open of inode ino (an empty path) for reading, answered from the
 * metadata cache: the lease on it is valid and a reply brought its layout.
 * The MDT would check read permission; so does this. */
static bool open_cached(stria_fs_t *fs, uint64_t ino, const char *path, int flags, stria_file_t *f,
                        struct proto_attr *attr)
{
    if (!fs->mdc || path[0] || (flags & (O_CREAT | O_TRUNC)) || (flags & O_ACCMODE) != O_RDONLY)
        return false;
    struct proto_attr a;
    struct proto_cred cred;
    if (!mdc_open_layout(fs->mdc, ino, &a, &f->layout) || !S_ISREG(a.mode))
        return false;
    cl_cred(&cred);
    if (!proto_cred_may(&cred, a.mode, a.uid, a.gid, 4))
        return false; /* the MDT says why */
    file_init(f, fs, flags, &a);
    if (attr)
        *attr = a;
    return true;
}

int cl_open(stria_fs_t *fs, uint64_t parent, const char *path, int flags, mode_t mode,
            int32_t count, uint32_t size, int32_t offset, stria_file_t **out,
            struct proto_attr *attr)
{
    if (!path)
        return -EFAULT;
    if (strlen(path) > PROTO_MAX_STR)
        return -ENAMETOOLONG;
    stria_file_t *f = calloc(1, sizeof(*f));
    if (f && open_cached(fs, parent, path, flags, f, attr)) {
        *out = f;
        return 0;
    }
    struct proto_open_rep *r = malloc(sizeof(*r));
    int rc = -ENOMEM;
    if (!f || !r)
        goto fail;
    struct proto_open_req q = {.parent = parent,
                               .path = proto_str_c(path),
                               /* These only choose how this client writes. */
                               .flags = (uint32_t)(flags & ~(O_SYNC | O_DSYNC | O_DIRECT)),
                               .mode = mode,
                               .stripe_count = count,
                               .stripe_size = size,
                               .stripe_offset = offset};
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    rc = ROUTED_CALL(fs, parent, path, parent, path, open, &q, r,
                     cl_note_layout(fs, sent, &r->leases, parent, path, &r->attr, &r->layout));
    if (rc == -EREMOTE) {
        /* The name is here, its inode on another MDT: open that by number. */
        struct proto_attr a;
        rc = cl_resolve(fs, parent, path, !(flags & O_NOFOLLOW), &a);
        if (rc == 0 && (flags & O_CREAT) && (flags & O_EXCL))
            rc = -EEXIST;
        if (rc == 0) {
            q.parent = a.ino;
            q.path = proto_str_c("");
            q.flags &= ~(uint32_t)(O_CREAT | O_EXCL);
            rc = MDT_CALL(fs, proto_ino_mdt(a.ino), open, &q, r, (void)0);
        }
    }
    if (rc)
        goto fail;
    if (S_ISDIR(r->attr.mode) && (flags & O_ACCMODE) != O_RDONLY) {
        rc = -EISDIR;
        goto fail;
    }
    file_init(f, fs, flags, &r->attr);
    f->layout = r->layout;
    /* O_TRUNC of an existing file: cut its objects too, also when the MDT
     * thought it empty (another handle may have written unreported data). */
    if ((flags & O_TRUNC) && !r->created && f->layout.ncomp &&
        (rc = io_objects(fs, f->ino, &f->layout, IO_TRUNCATE, 0)))
        goto fail;
    if (flags & O_TRUNC)
        written(fs);
    if (attr)
        *attr = r->attr;
    free(r);
    *out = f;
    return 0;
fail:
    free(r);
    free(f);
    return rc;
}

int stria_open(stria_fs_t *fs, const char *path, int flags, mode_t mode, stria_file_t **out)
{
    return cl_open(fs, 1, path, flags, mode, 0, 0, -1, out, NULL);
}

void stria_file_allow_read(stria_file_t *f)
{
    if ((f->flags & O_ACCMODE) == O_WRONLY)
        f->flags = (f->flags & ~O_ACCMODE) | O_RDWR;
}

int stria_file_writable(const stria_file_t *f)
{
    return !f->is_dir && (f->flags & O_ACCMODE) != O_RDONLY;
}

uint64_t stria_file_unreported(stria_file_t *f, int64_t *wrote_ns)
{
    pthread_mutex_lock(&f->lock);
    uint64_t end = f->dirty ? f->wrote_end : 0;
    if (wrote_ns)
        *wrote_ns = f->dirty ? f->wrote_ns : 0;
    pthread_mutex_unlock(&f->lock);
    return end;
}

void stria_file_reported(stria_file_t *f, uint64_t end, int64_t wrote_ns)
{
    pthread_mutex_lock(&f->lock);
    if (f->dirty && f->wrote_end <= end && f->wrote_ns <= wrote_ns)
        f->dirty = false;
    if (end > f->size)
        f->size = end;
    pthread_mutex_unlock(&f->lock);
}

void stria_file_know_size(stria_file_t *f, uint64_t size)
{
    pthread_mutex_lock(&f->lock);
    if (size > f->size)
        f->size = size;
    pthread_mutex_unlock(&f->lock);
}

void stria_file_orphan(stria_file_t *f)
{
    pthread_mutex_lock(&f->lock);
    f->orphan = true;
    pthread_mutex_unlock(&f->lock);
}

static int call_setsize(stria_file_t *f, uint64_t size, int64_t mtime)
{
    pthread_mutex_lock(&f->lock);
    bool orphan = f->orphan;
    pthread_mutex_unlock(&f->lock);
    if (orphan)
        return 0; /* nobody can see its size any more */
    struct proto_attr a;
    int rc = cl_setsize(f->fs, f->ino, size, mtime, &f->layout, &a);
    if (rc == 0) {
        pthread_mutex_lock(&f->lock);
        if (a.size > f->size)
            f->size = a.size;
        pthread_mutex_unlock(&f->lock);
    }
    return rc;
}

/* Before the first byte lands, tell the MDT objects may exist, so an
 * unlink from anywhere removes them. Concurrent writes of this handle
 * (the mount's write-behind) wait for that mark; if it fails, the next
 * one tries. Gathered writes are marked when their buffer is sent. */
int cl_file_mark(stria_file_t *f)
{
    pthread_mutex_lock(&f->lock);
    while (f->mark == MARK_BUSY)
        pthread_cond_wait(&f->marked, &f->lock);
    bool mark = f->mark == MARK_NONE;
    if (mark)
        f->mark = MARK_BUSY;
    pthread_mutex_unlock(&f->lock);
    if (!mark)
        return 0;
    int rc = call_setsize(f, 0, 0);
    pthread_mutex_lock(&f->lock);
    f->mark = rc ? MARK_NONE : MARK_DONE;
    pthread_cond_broadcast(&f->marked);
    pthread_mutex_unlock(&f->lock);
    return rc;
}

ssize_t stria_pwrite(stria_file_t *f, const void *buf, size_t len, off_t off)
{
    if (f->is_dir)
        return -EISDIR;
    if ((f->flags & O_ACCMODE) == O_RDONLY)
        return -EBADF;
    if (off < 0)
        return -EINVAL;
    if (len == 0)
        return 0;
    if (len > SSIZE_MAX)
        len = SSIZE_MAX;
    int rc = cl_file_mark(f);
    if (rc)
        return rc;
    if (f->flags & O_APPEND) {
        pthread_mutex_lock(&f->lock);
        off = (off_t)MAX(f->size, f->wrote_end);
        pthread_mutex_unlock(&f->lock);
    }
    if ((rc = take_error(f)))
        return rc;
    written(f->fs);
    /* Small and sequential: into the inode's buffer (gather.c). */
    size_t took = 0;
    if (!(f->flags & (O_APPEND | O_SYNC | O_DSYNC | O_DIRECT))) {
        ssize_t n = gather_write(f, buf, len, (uint64_t)off);
        if (n < 0)
            return n;
        took = (size_t)n;
    }
    if (took < len) {
        uint64_t at = (uint64_t)off + took;
        gather_before_write(f->fs, f->ino, at, (uint64_t)off + len);
        if ((rc = io_rw(f->fs, f->ino, &f->layout, true, (char *)buf + took, len - took, at)))
            return rc;
    }
    int64_t now = (int64_t)util_now_real_ns();
    pthread_mutex_lock(&f->lock);
    f->wrote_end = MAX(f->wrote_end, (uint64_t)off + len);
    f->wrote_ns = MAX(f->wrote_ns, now);
    f->dirty = true;
    f->write_gen++;
    pthread_mutex_unlock(&f->lock);
    return (ssize_t)len;
}

/* A small read [off, off + len) below size: from the read-ahead buffer
 * when it holds it; a read that starts where the last one ended fetches
 * the rest of its piece (at most RA_CAP, not past size) into the buffer
 * and is answered from it. Any other read drops the buffer. */
static ssize_t read_ahead(stria_file_t *f, void *buf, size_t len, uint64_t off, uint64_t size)
{
    stria_fs_t *fs = f->fs;
    uint64_t epoch = atomic_load_explicit(&fs->write_epoch, memory_order_acquire);
    int rc = 0;
    pthread_mutex_lock(&f->ra_lock);
    bool seq = off == f->read_end;
    f->read_end = off + len;
    if (f->ra_len && f->ra_epoch == epoch && off >= f->ra_off &&
        off + len <= f->ra_off + f->ra_len) {
        memcpy(buf, f->ra_buf + (off - f->ra_off), len);
        pthread_mutex_unlock(&f->ra_lock);
        atomic_fetch_add_explicit(&fs->ra_hits, 1, memory_order_relaxed);
        return (ssize_t)len;
    }
    f->ra_len = 0;
    struct layout_piece lp;
    uint64_t want = 0;
    if (seq && layout_map(&f->layout, off, RA_CAP, &lp) == 0)
        want = MIN((uint64_t)lp.len, size - off);
    if (want > len && !f->ra_buf) {
        /* Bounded: past RA_MAX_BUFS handles read as asked. */
        if (atomic_fetch_add(&fs->ra_bufs, 1) < RA_MAX_BUFS)
            f->ra_buf = malloc(RA_CAP);
        if (!f->ra_buf)
            atomic_fetch_sub(&fs->ra_bufs, 1);
    }
    if (want > len && f->ra_buf) {
        rc = io_rw(fs, f->ino, &f->layout, false, f->ra_buf, want, off);
        if (rc == 0) {
            f->ra_off = off;
            f->ra_len = want;
            f->ra_epoch = epoch;
            memcpy(buf, f->ra_buf, len);
            atomic_fetch_add_explicit(&fs->ra_fills, 1, memory_order_relaxed);
        }
        pthread_mutex_unlock(&f->ra_lock);
        return rc ? rc : (ssize_t)len;
    }
    pthread_mutex_unlock(&f->ra_lock);
    rc = io_rw(fs, f->ino, &f->layout, false, buf, len, off);
    return rc ? rc : (ssize_t)len;
}

ssize_t stria_pwrite_nowait(stria_file_t *f, const void *buf, size_t len, off_t off)
{
    if (f->is_dir || (f->flags & O_ACCMODE) == O_RDONLY || off < 0 ||
        (f->flags & (O_APPEND | O_SYNC | O_DSYNC | O_DIRECT)))
        return 0; /* stria_pwrite says why, or writes it */
    int rc = take_error(f);
    if (rc)
        return rc;
    ssize_t n = gather_write(f, buf, len, (uint64_t)off);
    if (n > 0) {
        written(f->fs);
        int64_t now = (int64_t)util_now_real_ns();
        pthread_mutex_lock(&f->lock);
        f->wrote_end = MAX(f->wrote_end, (uint64_t)off + (uint64_t)n);
        f->wrote_ns = MAX(f->wrote_ns, now);
        f->dirty = true;
        f->write_gen++;
        pthread_mutex_unlock(&f->lock);
    }
    return n;
}

static int refresh_size(stria_file_t *f)
{
    struct proto_attr a;
    int rc = cl_getattr(f->fs, f->ino, &a);
    if (rc == 0) {
        pthread_mutex_lock(&f->lock);
        f->size = MAX(f->size, a.size);
        pthread_mutex_unlock(&f->lock);
    }
    return rc;
}

ssize_t stria_pread(stria_file_t *f, void *buf, size_t len, off_t off)
{
    if (f->is_dir)
        return -EISDIR;
    if ((f->flags & O_ACCMODE) == O_WRONLY)
        return -EBADF;
    if (off < 0)
        return -EINVAL;
    if (len > SSIZE_MAX)
        len = SSIZE_MAX;
    pthread_mutex_lock(&f->lock);
    uint64_t size = MAX(f->size, f->wrote_end);
    pthread_mutex_unlock(&f->lock);
    /* Past what we know: another client may have grown the file. */
    if ((uint64_t)off + len > size && !f->orphan) {
        int rc = refresh_size(f);
        if (rc)
            return rc;
        pthread_mutex_lock(&f->lock);
        size = MAX(f->size, f->wrote_end);
        pthread_mutex_unlock(&f->lock);
    }
    if ((uint64_t)off >= size || len == 0)
        return 0;
    len = MIN(len, size - (uint64_t)off);
    gather_drain(f->fs, f->ino);
    if (len < RA_CAP)
        return read_ahead(f, buf, len, (uint64_t)off, size);
    int rc = io_rw(f->fs, f->ino, &f->layout, false, buf, len, (uint64_t)off);
    pthread_mutex_lock(&f->ra_lock);
    f->read_end = (uint64_t)off + len;
    pthread_mutex_unlock(&f->ra_lock);
    return rc ? rc : (ssize_t)len;
}

ssize_t stria_read_range(stria_file_t *f, void *buf, size_t len, off_t off)
{
    if (f->is_dir)
        return -EISDIR;
    if (off < 0)
        return -EINVAL;
    if (len > SSIZE_MAX)
        len = SSIZE_MAX;
    gather_drain(f->fs, f->ino);
    int rc = io_rw(f->fs, f->ino, &f->layout, false, buf, len, (uint64_t)off);
    return rc ? rc : (ssize_t)len;
}

/* Report the size if this handle wrote since the last report, with the
 * time of its last write as the mtime: a close is no write, and a time
 * set since (futimens before close, as cp -p does) must stay. */
static int report(stria_file_t *f)
{
    /* A size must not come before its data. */
    gather_drain(f->fs, f->ino);
    int rc = take_error(f);
    if (rc)
        return rc;
    pthread_mutex_lock(&f->lock);
    bool dirty = f->dirty;
    uint64_t end = f->wrote_end, gen = f->write_gen;
    int64_t wrote_ns = f->wrote_ns;
    pthread_mutex_unlock(&f->lock);
    if (!dirty)
        return 0;
    /* dirty stays set until the MDT has the size, so a concurrent flush
     * cannot return early; reports are max-merged, so two are harmless. */
    rc = call_setsize(f, end, wrote_ns);
    pthread_mutex_lock(&f->lock);
    if (rc == 0 && f->write_gen == gen)
        f->dirty = false;
    pthread_mutex_unlock(&f->lock);
    return rc;
}

int stria_fsync(stria_file_t *f)
{
    int rc = report(f);
    if (rc)
        return rc;
    /* fsync covers the file, not the handle: data written through other
     * handles (or by the kernel's writeback) must be flushed too. */
    if (f->layout.ncomp && (rc = io_objects(f->fs, f->ino, &f->layout, IO_SYNC, 0)))
        return rc;
    struct proto_sync_req q = {0};
    struct proto_sync_rep r;
    rc = MDT_CALL(f->fs, proto_ino_mdt(f->ino), sync, &q, &r, (void)0);
    return rc;
}

int stria_ftruncate(stria_file_t *f, off_t size)
{
    if (size < 0)
        return -EINVAL;
    if (f->is_dir)
        return -EISDIR;
    if ((f->flags & O_ACCMODE) == O_RDONLY)
        return -EBADF;
    int rc = report(f);
    if (rc)
        return rc;
    /* Checked against how f was opened, not the file's mode now. */
    struct proto_setattr_req q = {
        .ino = f->ino, .valid = SETATTR_SIZE | SETATTR_WRITER, .size = (uint64_t)size};
    struct proto_setattr_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    rc = cl_setattr(f->fs, f->ino, &q, r);
    free(r);
    written(f->fs);
    if (rc == 0) {
        pthread_mutex_lock(&f->lock);
        f->size = (uint64_t)size;
        f->wrote_end = MIN(f->wrote_end, (uint64_t)size);
        pthread_mutex_unlock(&f->lock);
    }
    return rc;
}

int stria_futimens(stria_file_t *f, const struct timespec times[2])
{
    if (!f)
        return -EBADF;
    struct proto_setattr_req q = {0};
    cl_set_time(&q, times ? &times[0] : NULL, true);
    cl_set_time(&q, times ? &times[1] : NULL, false);
    if (!q.valid)
        return 0;
    /* Its report comes first, or it would undo the times at the close. */
    int rc = report(f);
    if (rc)
        return rc;
    struct proto_setattr_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    rc = cl_setattr(f->fs, f->ino, &q, r);
    free(r);
    return rc;
}

int stria_fextend(stria_file_t *f, off_t sz)
{
    if (sz < 0)
        return -EINVAL;
    uint64_t size = (uint64_t)sz;
    int64_t now = (int64_t)util_now_real_ns();
    pthread_mutex_lock(&f->lock);
    bool grow = size > MAX(f->size, f->wrote_end);
    if (grow) {
        f->wrote_end = size;
        f->wrote_ns = MAX(f->wrote_ns, now);
        f->dirty = true;
        f->write_gen++;
    }
    pthread_mutex_unlock(&f->lock);
    return grow ? report(f) : 0;
}

int stria_fpunch(stria_file_t *f, off_t off, off_t len)
{
    if (off < 0 || len < 0 || (uint64_t)off + (uint64_t)len < (uint64_t)off)
        return -EINVAL;
    if (len == 0)
        return 0;
    gather_drain(f->fs, f->ino);
    written(f->fs);
    return io_punch(f->fs, f->ino, &f->layout, (uint64_t)off, (uint64_t)len);
}

uint64_t stria_file_ino(const stria_file_t *f)
{
    return f->ino;
}

void stria_file_truncated(stria_file_t *f, uint64_t size)
{
    written(f->fs);
    pthread_mutex_lock(&f->lock);
    f->size = size;
    f->wrote_end = MIN(f->wrote_end, size);
    pthread_mutex_unlock(&f->lock);
}

int stria_flush(stria_file_t *f)
{
    return report(f);
}

int stria_fstat(stria_file_t *f, struct stat *st)
{
    int rc = report(f);
    if (rc)
        return rc;
    struct proto_attr a;
    if ((rc = cl_getattr(f->fs, f->ino, &a)))
        return rc;
    cl_to_stat(&a, st);
    return 0;
}

int stria_close(stria_file_t *f)
{
    if (!f)
        return -EBADF;
    int rc = report(f);
    /* Nothing gathered may still name f. */
    gather_drain(f->fs, f->ino);
    int late = take_error(f);
    if (!rc)
        rc = late;
    if (f->ra_buf) {
        free(f->ra_buf);
        atomic_fetch_sub(&f->fs->ra_bufs, 1);
    }
    pthread_cond_destroy(&f->marked);
    pthread_mutex_destroy(&f->ra_lock);
    pthread_mutex_destroy(&f->lock);
    free(f);
    return rc;
}
