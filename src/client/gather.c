/*
 * Gathering of small sequential writes (stria.h, "Gathering and
 * read-ahead").
 *
 * A program writing 4 KiB at a time would cost the OSTs one request per
 * 4 KiB. A write smaller than GATHER_MAX that continues the last write of
 * its handle is copied into a buffer of its inode instead and acknowledged;
 * the buffer covers one piece of the layout (the rest of a stripe unit, at
 * most IO_PIECE_MAX, which is what io_rw sends as one request), and is sent
 * as one write:
 *   - when it is full, or a write of the file does not continue it
 *     (another offset, another handle): it is then READY, and the
 *     client's sender threads send it, so the writer never waits for it;
 *   - before a write that is not gathered (too large, O_DIRECT...), a
 *     read, size report, truncate or close of the file, by the thread that
 *     asks, which waits until it has landed (only buffers that existed
 *     when it asked: a steady writer cannot hold a reader there);
 *   - GATHER_AGE_MS after its first write, by a sender thread;
 *   - at stria_disconnect.
 * At most one buffer per inode is FILLING. READY buffers are sent oldest
 * first, and none while an older one of its inode is being sent or
 * overlaps it, so one file's writes land in the order they were made.
 * There are GATHER_SENDERS sender threads: with one, a client writing
 * small files behind kept one DOM_WRITES in flight, and its MDT received
 * the next batch only after it had committed the last (8,800 files/s of
 * 64 KiB through libstria; 11,200 with two; 11,800-13,200 with two and 32
 * buffers, whose batches are twice as large).
 * A failed send is kept on its handle (gather_error_fn) and reported by
 * the handle's next write, flush, fsync or close. A send is never
 * abandoned by the interrupt of the call that caused it: its writes were
 * acknowledged. This must never hold a lock while sending.
 *
 * A behind buffer (gather_behind) holds one write of a Data-on-MDT
 * component made under its MDT's write-behind grant (wb.h): READY at once,
 * with a copy of the layout of its own, and left behind by the flush and
 * close of its handle, which then no longer names it. Whatever may look at
 * the MDT's copy of its bytes waits for it first: gather_drain of its
 * inode, gather_drain_behind (the revocation of the grant, and every other
 * MDT call of this client: wb_flush).
 */
#include "gather.h"

#include "io.h"
#include "mdcache.h"
#include "wb.h"

#include "../common/log.h"
#include "../common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GATHER_BUFS    32
#define GATHER_CAP     (1u << 20) /* io.c's IO_PIECE_MAX */
#define GATHER_MAX     (256u << 10)
#define GATHER_AGE_MS  1000
#define GATHER_SENDERS 2
/* Behind buffers sent in one DOM_WRITES at most, and their bytes. */
#define BEHIND_BATCH       (PROTO_MAX_DOM_WRITES / 2) /* a create takes an entry more */
#define BEHIND_BATCH_BYTES (4u << 20)
/* How long the sender holds a behind buffer for others to join it. */
#define BEHIND_HOLD_MS 3
/* How long the sender leaves a create whose handle is still open, for the
 * file's first bytes to join it (it goes at the handle's close, or at
 * once for whoever waits for it). */
#define BEHIND_OPEN_MS 20

enum { G_FREE, G_FILLING, G_READY, G_SENDING };

/* Which buffers a wait is for (W_CREATE: behind buffers that create). */
enum { W_ALL, W_OWN, W_BEHIND, W_CREATE };

struct gbuf {
    int state;
    uint64_t ino, off, len, cap;
    stria_file_t *f;        /* NULL: a behind buffer whose handle closed */
    const struct layout *l; /* f's, or a behind buffer's own copy */
    bool behind;
    uint32_t mdt;     /* a behind buffer's MDT */
    struct io_mk *mk; /* a behind buffer that creates its file first (its own) */
    uint32_t writes;  /* the behind writes it carries (stats) */
    uint64_t seq;     /* its number among buffers begun: older is lower */
    int64_t born_ms;  /* its first write, monotonic */
    char *buf;        /* GATHER_CAP bytes, kept once allocated */
};

struct gather {
    stria_fs_t *fs;
    gather_mark_fn mark; /* the handle layer's (file.c) */
    gather_error_fn error;
    pthread_mutex_t lock;
    pthread_cond_t landed; /* a SENDING buffer became FREE */
    struct gbuf b[GATHER_BUFS];
    atomic_int used; /* not FREE, read without the lock */
    atomic_bool on;
    uint64_t seq, writes, sends;
    uint64_t behind, behind_sent, behind_failed; /* behind buffers queued, landed, failed */
    atomic_bool one_by_one;                      /* an MDT refused DOM_WRITES: none is sent */
    unsigned test_delay_ms; /* STRIA_TEST_WRITE_DELAY_MS: hold sends back (tests) */
    pthread_t thread[GATHER_SENDERS];
    int threads; /* sender threads running */
    bool stop;
    pthread_cond_t wake; /* the sender has work: READY buffers, or stop */
};

/* Set while this thread sends a buffer: what the send calls (an MDT call
 * after ENOSPC or a moved layout) must not wait for buffers written
 * behind, the one it is sending among them. */
static _Thread_local bool sending_here;

static int64_t now_ms(void)
{
    return (int64_t)(util_now_mono_ns() / 1000000);
}

int gather_init(stria_fs_t *fs, gather_mark_fn mark, gather_error_fn error)
{
    struct gather *g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->fs = fs;
    g->mark = mark;
    g->error = error;
    atomic_store(&g->on, true);
    const char *d = getenv("STRIA_TEST_WRITE_DELAY_MS");
    g->test_delay_ms = d ? (unsigned)strtoul(d, NULL, 10) % 60000u : 0;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->landed, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->wake, &ca);
    pthread_condattr_destroy(&ca);
    fs->gather = g;
    return 0;
}

static struct gbuf *filling(struct gather *g, uint64_t ino)
{
    for (int i = 0; i < GATHER_BUFS; i++)
        if (g->b[i].state == G_FILLING && g->b[i].ino == ino)
            return &g->b[i];
    return NULL;
}

/* The filling buffer is complete: queue it (lock held). */
static void ready(struct gather *g, struct gbuf *b)
{
    b->state = G_READY;
    pthread_cond_signal(&g->wake);
}

/* Whether buffer b, of [off, end), is one to wait for there: it overlaps
 * the range, or it creates its file (which all its writes follow). */
static bool covers(const struct gbuf *b, uint64_t off, uint64_t end)
{
    return b->mk || (b->off < end && off < b->off + b->len);
}

/* May READY buffer b go now, after bs[0..n) in the same request: no other
 * older buffer of its inode that it must follow is READY, and none of its
 * inode is SENDING? The senders send different files' buffers at once,
 * and one file's one after the other, in the order they were begun: an
 * older write landing last would set the file's mtime back. (lock held) */
static bool may_send(struct gather *g, const struct gbuf *b, struct gbuf *const *bs, uint32_t n)
{
    for (int i = 0; i < GATHER_BUFS; i++) {
        const struct gbuf *o = &g->b[i];
        bool before = false;
        for (uint32_t k = 0; k < n && !before; k++)
            before = bs[k] == o;
        if (o != b && o->ino == b->ino && o->seq < b->seq && !before &&
            (o->state == G_SENDING || (o->state == G_READY && covers(o, b->off, b->off + b->len))))
            return false;
    }
    return true;
}

/* A create whose handle is open and that is younger than BEHIND_OPEN_MS at
 * now (0: none is): the sender leaves it for its file's bytes to join. */
static bool open_create(const struct gbuf *b, int64_t now)
{
    return now && b->mk && b->f && now - b->born_ms < BEHIND_OPEN_MS;
}

/* The oldest READY buffer (of ino, or of any inode when ino is 0) that may
 * go now, but creates left open at now (open_create), or NULL. */
static struct gbuf *next_ready(struct gather *g, uint64_t ino, int64_t now)
{
    struct gbuf *best = NULL;
    for (int i = 0; i < GATHER_BUFS; i++) {
        struct gbuf *b = &g->b[i];
        if (b->state == G_READY && (!ino || b->ino == ino) && (!best || b->seq < best->seq) &&
            !open_create(b, now) && may_send(g, b, NULL, 0))
            best = b;
    }
    return best;
}

/* SENDING buffer b was sent, with result rc: it is FREE again (lock held). */
static void sent(struct gather *g, struct gbuf *b, int rc)
{
    if (rc && b->f) {
        g->error(b->f, rc);
    } else if (rc && b->writes) {
        /* Its handle closed: nobody is left to tell but the log (a create
         * that failed said so already). */
        g->behind_failed += b->writes;
        log_warn("inode %" PRIx64 ": %" PRIu64 " bytes at %" PRIu64 " written behind its close "
                 "were lost: %s",
                 b->ino, b->len, b->off, log_err(rc));
    }
    if (b->behind) {
        free((struct layout *)b->l);
        free(b->mk);
        b->mk = NULL;
        g->behind_sent += b->writes;
    } else {
        g->sends++;
    }
    b->state = G_FREE;
    b->f = NULL;
    b->behind = false;
    atomic_fetch_sub(&g->used, 1);
    pthread_cond_broadcast(&g->landed);
}

/* Send READY buffers bs[0..n) (behind buffers of one MDT when n > 1); the
 * lock is dropped meanwhile. Their writes were acknowledged: no interrupt
 * of the calling thread abandons them. */
static void send_n_locked(struct gather *g, struct gbuf **bs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        bs[i]->state = G_SENDING;
    pthread_mutex_unlock(&g->lock);
    const volatile int *cancel = cl_set_cancel(NULL);
    if (g->test_delay_ms)
        usleep(g->test_delay_ms * 1000);
    bool nested = sending_here;
    sending_here = true;
    struct io_dom_item items[BEHIND_BATCH];
    bool any_mk = false;
    for (uint32_t i = 0; i < n; i++) {
        items[i] = (struct io_dom_item){bs[i]->ino, bs[i]->l, bs[i]->buf, (uint32_t)bs[i]->len,
                                        bs[i]->off, -EAGAIN,  bs[i]->mk,  bs[i]->mk ? -EAGAIN : 0};
        any_mk = any_mk || bs[i]->mk;
    }
    if (n > 1 || any_mk) {
        /* In one request; what it did not write goes the ordinary way. */
        int rc = io_dom_writes(g->fs, bs[0]->mdt, items, n);
        if (rc == -EOPNOTSUPP)
            atomic_store(&g->one_by_one, true); /* an MDT of before DOM_WRITES */
        for (uint32_t i = 0; rc && i < n; i++) {
            items[i].rc = -EAGAIN;
            items[i].mk_rc = items[i].mk ? -EAGAIN : 0;
        }
        /* A file to make has no other way: its request goes again alone,
         * once (the MDT knows a create it made by its name and number). */
        for (uint32_t i = 0; rc && i < n; i++) {
            int one = items[i].mk ? io_dom_writes(g->fs, bs[0]->mdt, &items[i], 1) : 0;
            if (one)
                items[i].rc = items[i].mk_rc = one;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        struct gbuf *b = bs[i];
        if (b->mk && items[i].mk_rc) {
            /* Not made: nothing to write to, and the name this client gave
             * it is not there. */
            if (items[i].rc == 0 || items[i].rc == -EAGAIN)
                items[i].rc = items[i].mk_rc;
            log_warn("the create of '%s' in directory %" PRIx64 " (inode %" PRIx64 "), made "
                     "behind, failed: %s",
                     b->mk->name, b->mk->parent, b->ino, log_err(items[i].mk_rc));
            if (g->fs->mdc)
                mdc_forget_mdt(g->fs->mdc, b->mdt); /* where it said the name is */
            wb_create_count(g->fs, WB_CREATE_FAILED);
            continue;
        }
        if (items[i].rc == 0)
            continue;
        /* A behind buffer's handle was marked before its write was taken. */
        items[i].rc = b->behind ? 0 : g->mark(b->f);
        if (items[i].rc == 0)
            items[i].rc = io_rw(g->fs, b->ino, b->l, true, b->buf, b->len, b->off);
    }
    sending_here = nested;
    /* A read-ahead buffer filled while these bytes were held here (an
     * open's bytes of the file) is stale now that they have landed. */
    atomic_fetch_add(&g->fs->write_epoch, 1);
    cl_set_cancel(cancel);
    pthread_mutex_lock(&g->lock);
    for (uint32_t i = 0; i < n; i++)
        sent(g, bs[i], items[i].rc);
}

/* Behind buffers that may go with b (READY, behind, the oldest that may
 * go) in one DOM_WRITES: READY behind buffers of its MDT that may go now,
 * in the order they were begun, within BEHIND_BATCH and
 * BEHIND_BATCH_BYTES; b first. How many into bs, and whether the batch
 * could take more (lock held). */
static uint32_t behind_batch(struct gather *g, struct gbuf *b, struct gbuf **bs, bool *room,
                             int64_t now)
{
    uint32_t n = 0;
    uint64_t bytes = b->len;
    *room = false;
    bs[n++] = b;
    if (atomic_load(&g->one_by_one))
        return n;
    for (uint64_t last = b->seq; n < BEHIND_BATCH;) {
        struct gbuf *next = NULL;
        for (int i = 0; i < GATHER_BUFS; i++) {
            struct gbuf *o = &g->b[i];
            if (o->state == G_READY && o->behind && o->mdt == b->mdt && o->seq > last &&
                (!next || o->seq < next->seq))
                next = o;
        }
        if (!next) {
            *room = bytes < BEHIND_BATCH_BYTES / 2;
            break;
        }
        if (bytes + next->len > BEHIND_BATCH_BYTES)
            break;
        last = next->seq;
        if (open_create(next, now) || !may_send(g, next, bs, n))
            continue; /* its file's bytes may join it, or it waits for an older write */
        bytes += next->len;
        bs[n++] = next;
    }
    return n;
}

/* Send READY buffer b, that may go now, and with a behind buffer the
 * others that may go with it (behind_batch; lock held, dropped meanwhile). */
static void send_locked(struct gather *g, struct gbuf *b)
{
    struct gbuf *bs[BEHIND_BATCH] = {b};
    bool room;
    send_n_locked(g, bs, b->behind ? behind_batch(g, b, bs, &room, 0) : 1);
}

static struct gbuf *free_buf(struct gather *g)
{
    for (int i = 0; i < GATHER_BUFS; i++) {
        struct gbuf *b = &g->b[i];
        if (b->state != G_FREE)
            continue;
        if (!b->buf && !(b->buf = malloc(GATHER_CAP)))
            return NULL;
        return b;
    }
    return NULL;
}

/* Whether buffer b is one a wait of kind w is for. */
static bool waits_for(const struct gbuf *b, int w)
{
    if (w == W_CREATE)
        return b->mk != NULL;
    return w == W_ALL || (w == W_BEHIND) == b->behind;
}

/* Whether a buffer of ino (any when ino is 0) of kind w, begun up to seq
 * upto and overlapping [off, end), has yet to land. */
static bool pending(struct gather *g, uint64_t ino, uint64_t off, uint64_t end, uint64_t upto,
                    int w)
{
    for (int i = 0; i < GATHER_BUFS; i++) {
        const struct gbuf *b = &g->b[i];
        if (b->state != G_FREE && (!ino || b->ino == ino) && waits_for(b, w) && b->seq <= upto &&
            covers(b, off, end))
            return true;
    }
    return false;
}

/* Until the buffers of ino (any when 0) of kind w begun so far that overlap
 * [off, end) have landed: queue the filling one, send what may go from
 * this thread, wait for what the sender thread is sending (lock held). */
static void settle(struct gather *g, uint64_t ino, uint64_t off, uint64_t end, int w)
{
    uint64_t upto = g->seq;
    struct gbuf *b = ino ? filling(g, ino) : NULL;
    if (b && w != W_BEHIND && b->off < end && off < b->off + b->len)
        ready(g, b);
    while (pending(g, ino, off, end, upto, w)) {
        /* A wait for one file sends that file's buffers alone: another's
         * trouble (a layout moving, an MDT out of reach) is not its. */
        if ((b = next_ready(g, ino, 0)) && b->seq <= upto && ino)
            send_n_locked(g, &b, 1);
        else if (b && b->seq <= upto)
            send_locked(g, b);
        else
            pthread_cond_wait(&g->landed, &g->lock);
    }
}

/* Free buffer b becomes a FILLING one as init says (its place in the
 * order, its age and its memory are b's own; lock held). */
static void begin(struct gather *g, struct gbuf *b, struct gbuf init)
{
    init.state = G_FILLING;
    init.seq = ++g->seq;
    init.born_ms = now_ms();
    init.buf = b->buf;
    *b = init;
    atomic_fetch_add(&g->used, 1);
}

static void *sender_main(void *arg);

/* Start the sender thread at the first gathered write (lock held): a
 * client that never gathers runs no thread. */
static bool start_thread(struct gather *g)
{
    while (g->threads < GATHER_SENDERS && !g->stop &&
           pthread_create(&g->thread[g->threads], NULL, sender_main, g) == 0)
        g->threads++;
    return g->threads > 0;
}

ssize_t gather_write(stria_fs_t *fs, stria_file_t *f, uint64_t ino, const struct layout *l,
                     const void *buf, size_t len, uint64_t off)
{
    struct gather *g = fs->gather;
    size_t took = 0;
    if (!g || len == 0 || len >= GATHER_MAX || !atomic_load(&g->on))
        return 0;
    pthread_mutex_lock(&g->lock);
    if (!start_thread(g))
        goto out;
    while (took < len) {
        uint64_t at = off + took;
        struct gbuf *b = filling(g, ino);
        if (b && b->f == f && at == b->off + b->len && b->len < b->cap) {
            size_t n = MIN(len - took, (size_t)(b->cap - b->len));
            util_copy(b->buf + b->len, (const char *)buf + took, n);
            b->len += n;
            took += n;
            if (b->len == b->cap)
                ready(g, b);
            continue;
        }
        struct gbuf *fresh = free_buf(g);
        struct layout_piece lp;
        if (!fresh || layout_map(l, at, GATHER_CAP, &lp))
            break; /* the caller writes the rest itself */
        if (b)
            ready(g, b); /* not continued: it goes before this write */
        begin(g, fresh, (struct gbuf){.ino = ino, .off = at, .cap = lp.len, .f = f, .l = l});
    }
    if (took)
        g->writes++;
out:
    pthread_mutex_unlock(&g->lock);
    return (ssize_t)took;
}

void gather_before_write(stria_fs_t *fs, uint64_t ino, uint64_t off, uint64_t end)
{
    struct gather *g = fs->gather;
    if (!g || atomic_load(&g->used) == 0)
        return;
    pthread_mutex_lock(&g->lock);
    /* The filling buffer goes first even when this write does not
     * overlap it: it would otherwise wait behind a write begun later. */
    struct gbuf *b = filling(g, ino);
    if (b)
        ready(g, b);
    settle(g, ino, off, end, W_ALL);
    pthread_mutex_unlock(&g->lock);
}

/* A READY behind buffer of f that creates ino, not sent yet, whose bytes
 * [off, off + len) continue within one piece of layout l, or NULL (lock
 * held). */
static struct gbuf *joins(struct gather *g, stria_file_t *f, uint64_t ino, const struct layout *l,
                          uint64_t off, size_t len)
{
    for (int i = 0; i < GATHER_BUFS; i++) {
        struct gbuf *b = &g->b[i];
        struct layout_piece lp;
        if (b->state == G_READY && b->mk && b->ino == ino && b->f == f && b->off + b->len == off &&
            b->len + len <= GATHER_CAP &&
            layout_map(l, b->off, b->len + len, &lp) == LAYOUT_ON_MDT && lp.len == b->len + len) {
            /* Not past a later write of the file that these bytes overlap:
             * they would land before it. */
            for (int k = 0; k < GATHER_BUFS; k++) {
                const struct gbuf *o = &g->b[k];
                if (o->state != G_FREE && o->ino == ino && o->seq > b->seq && o->off < off + len &&
                    off < o->off + o->len)
                    return NULL;
            }
            return b;
        }
    }
    return NULL;
}

/* A free buffer for a behind write, with the lock held and *own a copy of
 * layout l for it; NULL (no lock held) when there is none or no memory. */
static struct gbuf *take_behind(struct gather *g, const struct layout *l, struct layout **own)
{
    if (!(*own = malloc(sizeof(**own))))
        return NULL;
    layout_copy(*own, l);
    pthread_mutex_lock(&g->lock);
    struct gbuf *b = start_thread(g) ? free_buf(g) : NULL;
    if (!b) {
        pthread_mutex_unlock(&g->lock);
        free(*own);
    }
    return b;
}

int gather_create(stria_fs_t *fs, stria_file_t *f, uint64_t ino, const struct layout *l,
                  uint32_t mdt, const struct io_mk *mk)
{
    struct gather *g = fs->gather;
    if (!g || !atomic_load(&g->on) || atomic_load(&g->one_by_one))
        return -EAGAIN;
    struct io_mk *m = malloc(sizeof(*m));
    struct layout *own;
    struct gbuf *b = m ? take_behind(g, l, &own) : NULL;
    if (!b) {
        free(m);
        return -EAGAIN;
    }
    *m = *mk;
    begin(
        g, b,
        (struct gbuf){
            .ino = ino, .cap = GATHER_CAP, .f = f, .l = own, .behind = true, .mdt = mdt, .mk = m});
    /* READY without waking the sender: it leaves an open create alone
     * (open_create); the handle's close wakes it (gather_detach). */
    b->state = G_READY;
    pthread_mutex_unlock(&g->lock);
    return 0;
}

ssize_t gather_behind(stria_fs_t *fs, stria_file_t *f, uint64_t ino, const struct layout *l,
                      uint32_t mdt, const void *buf, size_t len, uint64_t off)
{
    struct gather *g = fs->gather;
    if (!g || len == 0 || len > GATHER_CAP || !atomic_load(&g->on))
        return 0;
    pthread_mutex_lock(&g->lock);
    /* A filling buffer of the file goes first, as before any write. */
    struct gbuf *fb = filling(g, ino);
    if (fb)
        ready(g, fb);
    /* Bytes that continue a create not yet sent go with it. */
    struct gbuf *mb = joins(g, f, ino, l, off, len);
    if (mb) {
        util_copy(mb->buf + mb->len, buf, len);
        mb->len += len;
        mb->writes++;
        g->behind++;
    }
    pthread_mutex_unlock(&g->lock);
    if (mb)
        return (ssize_t)len;
    struct layout *own;
    struct gbuf *b = take_behind(g, l, &own);
    if (!b)
        return 0;
    begin(g, b,
          (struct gbuf){.ino = ino,
                        .off = off,
                        .len = len,
                        .cap = len,
                        .f = f,
                        .l = own,
                        .behind = true,
                        .mdt = mdt,
                        .writes = 1});
    util_copy(b->buf, buf, len);
    ready(g, b);
    g->behind++;
    pthread_mutex_unlock(&g->lock);
    return (ssize_t)len;
}

uint64_t gather_behind_bytes(stria_fs_t *fs, uint32_t mdt)
{
    struct gather *g = fs->gather;
    uint64_t n = 0;
    if (!g || atomic_load(&g->used) == 0)
        return 0;
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < GATHER_BUFS; i++)
        if (g->b[i].state != G_FREE && g->b[i].behind && g->b[i].mdt == mdt)
            n += g->b[i].off + g->b[i].len; /* what its record may grow by, at most */
    pthread_mutex_unlock(&g->lock);
    return n;
}

/* Wait (of kind w) for the buffers of ino, 0: of any inode. Whether
 * there were any. */
static bool drain(stria_fs_t *fs, uint64_t ino, int w)
{
    struct gather *g = fs->gather;
    if (!g || atomic_load(&g->used) == 0)
        return false;
    /* A thread waiting for buffers it may be sending would wait for ever. */
    if ((w == W_BEHIND || w == W_CREATE) && sending_here)
        return false;
    pthread_mutex_lock(&g->lock);
    bool any = pending(g, ino, 0, UINT64_MAX, g->seq, w);
    if (any)
        settle(g, ino, 0, UINT64_MAX, w);
    pthread_mutex_unlock(&g->lock);
    return any;
}

void gather_drain(stria_fs_t *fs, uint64_t ino)
{
    drain(fs, ino, W_ALL);
}

void gather_drain_own(stria_fs_t *fs, uint64_t ino)
{
    drain(fs, ino, W_OWN);
}

bool gather_drain_behind(stria_fs_t *fs, uint64_t ino)
{
    return drain(fs, ino, W_BEHIND);
}

void gather_wait_free(stria_fs_t *fs)
{
    struct gather *g = fs->gather;
    if (!g || atomic_load(&g->used) < GATHER_BUFS || sending_here)
        return;
    pthread_mutex_lock(&g->lock);
    for (;;) {
        bool moving = false;
        for (int i = 0; i < GATHER_BUFS && !moving; i++)
            moving = g->b[i].state == G_READY || g->b[i].state == G_SENDING;
        if (atomic_load(&g->used) < GATHER_BUFS || !moving || g->stop)
            break;
        pthread_cond_wait(&g->landed, &g->lock);
    }
    pthread_mutex_unlock(&g->lock);
}

bool gather_drain_creates(stria_fs_t *fs)
{
    return drain(fs, 0, W_CREATE);
}

void gather_detach(stria_fs_t *fs, stria_file_t *f)
{
    struct gather *g = fs->gather;
    if (!g || atomic_load(&g->used) == 0)
        return;
    pthread_mutex_lock(&g->lock);
    bool any = false;
    for (int i = 0; i < GATHER_BUFS; i++)
        if (g->b[i].state != G_FREE && g->b[i].f == f && g->b[i].behind) {
            g->b[i].f = NULL;
            any = true;
        }
    if (any)
        pthread_cond_signal(&g->wake); /* a create left open may go now */
    pthread_mutex_unlock(&g->lock);
}

/* Queue every filling buffer whose first write is age_ms old or older (0:
 * all) (lock held). */
static void queue_aged(struct gather *g, int64_t age_ms)
{
    int64_t now = now_ms();
    for (int i = 0; i < GATHER_BUFS; i++) {
        struct gbuf *b = &g->b[i];
        if (b->state == G_FILLING && now - b->born_ms >= age_ms)
            ready(g, b);
    }
}

/* Sends READY buffers oldest first, and queues aged ones, so that an
 * acknowledged write reaches the OSTs in bounded time without a close,
 * also while writes keep coming. */
static void *sender_main(void *arg)
{
    struct gather *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->stop) {
        int64_t now = now_ms();
        struct gbuf *b = next_ready(g, 0, now);
        if (b) {
            struct gbuf *bs[BEHIND_BATCH] = {b};
            bool room = false;
            uint32_t n = b->behind ? behind_batch(g, b, bs, &room, now) : 1;
            int64_t wait = b->born_ms + BEHIND_HOLD_MS - now;
            if (room && n < BEHIND_BATCH / 2 && wait > 0 &&
                atomic_load(&g->used) < GATHER_BUFS / 2) {
                /* A few more small files' bytes may come to go with these
                 * (while half the buffers are left to take them). */
                struct timespec ts;
                util_deadline(&ts, CLOCK_MONOTONIC, (int)wait);
                pthread_cond_timedwait(&g->wake, &g->lock, &ts);
                continue;
            }
            send_n_locked(g, bs, n);
            continue;
        }
        /* Until the next open create may go, at the latest. */
        int64_t wait = GATHER_AGE_MS / 4;
        for (int i = 0; i < GATHER_BUFS; i++)
            if (g->b[i].state == G_READY && open_create(&g->b[i], now))
                wait = MIN(wait, g->b[i].born_ms + BEHIND_OPEN_MS - now);
        struct timespec ts;
        util_deadline(&ts, CLOCK_MONOTONIC, (int)MAX(wait, 1));
        pthread_cond_timedwait(&g->wake, &g->lock, &ts);
        queue_aged(g, GATHER_AGE_MS);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

/* Send everything, from this thread (lock held). */
static void send_all(struct gather *g)
{
    queue_aged(g, 0);
    while (atomic_load(&g->used)) {
        struct gbuf *b = next_ready(g, 0, 0);
        if (b)
            send_locked(g, b);
        else
            pthread_cond_wait(&g->landed, &g->lock);
    }
}

void gather_set(stria_fs_t *fs, bool on)
{
    struct gather *g = fs->gather;
    if (!g)
        return;
    atomic_store(&g->on, on);
    if (!on) {
        pthread_mutex_lock(&g->lock);
        send_all(g);
        pthread_mutex_unlock(&g->lock);
    }
}

void gather_stats(stria_fs_t *fs, uint64_t *writes, uint64_t *sends, uint64_t behind[3])
{
    struct gather *g = fs->gather;
    *writes = *sends = behind[0] = behind[1] = behind[2] = 0;
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    *writes = g->writes;
    *sends = g->sends;
    behind[0] = g->behind;
    behind[1] = g->behind_sent;
    behind[2] = g->behind_failed;
    pthread_mutex_unlock(&g->lock);
}

void gather_fini(stria_fs_t *fs)
{
    struct gather *g = fs->gather;
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    g->stop = true;
    pthread_cond_broadcast(&g->wake);
    pthread_mutex_unlock(&g->lock);
    for (int i = 0; i < g->threads; i++)
        pthread_join(g->thread[i], NULL);
    /* Handles still open (a program that never closed them, a mount
     * stopped by a signal): what they wrote was acknowledged, so it goes
     * now, while the cluster is still connected. */
    pthread_mutex_lock(&g->lock);
    send_all(g);
    pthread_mutex_unlock(&g->lock);
    for (int i = 0; i < GATHER_BUFS; i++)
        free(g->b[i].buf);
    pthread_cond_destroy(&g->wake);
    pthread_cond_destroy(&g->landed);
    pthread_mutex_destroy(&g->lock);
    fs->gather = NULL;
    free(g);
}
