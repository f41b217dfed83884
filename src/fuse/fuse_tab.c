/*
 * The inode table (fuse_int.h): a hash of the inodes this mount has told
 * the kernel about or has open. One mutex guards it; every operation on it
 * is a few pointer steps. Entries with nothing open are dropped wholesale
 * when the table grows past TAB_MAX, which at worst costs a page-cache
 * refill on the next open of those files.
 */
#include "fuse_int.h"

#include "../common/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TAB_BUCKETS (1u << 16)
#define TAB_MAX     (1u << 20)

struct handle {
    stria_file_t *f;
    int err; /* a write-behind failure not yet reported to the caller */
    struct handle *next;
};

struct ent {
    uint64_t ino;
    uint64_t size; /* what the kernel was last told */
    int64_t mtime;
    bool known;
    struct handle *open;
    struct cl_removed *pending; /* unlinked while open */
    struct proto_attr last;
    struct ent *next;
};

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ent *buckets[TAB_BUCKETS];
static uint32_t count;

/* Writes already acknowledged to the kernel and still on their way to the
 * OSTs (write-behind), few enough to scan: WB_SLOTS in all, WB_PER_INODE
 * per file. Under tab_lock; wb_cond is signalled whenever one ends. */
#define WB_SLOTS     8
#define WB_PER_INODE 4
static struct wb_slot {
    bool used;
    uint64_t ino, off, end;
    stria_file_t *f;
} wb[WB_SLOTS];
static _Atomic int wb_used; /* read without the lock as a fast path */
static pthread_cond_t wb_cond = PTHREAD_COND_INITIALIZER;

/* Gathering: small writes that continue one another, acknowledged at once
 * and kept in a buffer, sent as one write when it is full, when a write of
 * the file does not continue it, when anything else of the file must see
 * it (read, flush, fsync, release, truncate, size report), or
 * GATHER_AGE_MS after its first write. At most one buffer per inode is
 * FILLING; a SENDING one is a tracked write like a write-behind slot.
 * Under tab_lock. */
#define GATHER_BUFS   8
#define GATHER_CAP    (1u << 20)
#define GATHER_MAX    (256u << 10) /* larger writes are not gathered */
#define GATHER_AGE_MS 1000
enum { G_FREE, G_FILLING, G_SENDING };
struct gather {
    int state;
    uint64_t ino, off, len;
    stria_file_t *f;
    uint64_t seq;    /* its number among buffers begun (g_seq) */
    int64_t born_ms; /* its first write, monotonic */
    char *buf;       /* GATHER_CAP bytes, kept once allocated */
};
static struct gather gt[GATHER_BUFS];
static _Atomic int g_used; /* FILLING or SENDING, read without the lock */
static uint64_t g_writes, g_sends, g_seq;
static pthread_t g_flusher;
static bool g_flusher_on, g_flusher_stop;
static pthread_cond_t g_flusher_cond = PTHREAD_COND_INITIALIZER;

void tab_init(void)
{
    memset(buckets, 0, sizeof(buckets));
    count = 0;
}

static uint32_t bucket(uint64_t ino)
{
    return (uint32_t)((ino * 0x9e3779b97f4a7c15ull) >> 48) & (TAB_BUCKETS - 1);
}

/* Drop every entry that holds nothing open (lock held). */
static void shrink(void)
{
    for (uint32_t b = 0; b < TAB_BUCKETS; b++) {
        struct ent **pp = &buckets[b];
        while (*pp) {
            struct ent *e = *pp;
            if (!e->open && !e->pending) {
                *pp = e->next;
                free(e);
                count--;
            } else {
                pp = &e->next;
            }
        }
    }
}

static struct ent *find(uint64_t ino, bool create)
{
    struct ent *e;
    for (e = buckets[bucket(ino)]; e; e = e->next)
        if (e->ino == ino)
            return e;
    if (!create)
        return NULL;
    if (count >= TAB_MAX)
        shrink();
    if (!(e = calloc(1, sizeof(*e))))
        return NULL;
    e->ino = ino;
    e->next = buckets[bucket(ino)];
    buckets[bucket(ino)] = e;
    count++;
    return e;
}

/* Record what the kernel is told about a; returns whether it matched what
 * it was told before. */
static bool note(const struct proto_attr *a)
{
    pthread_mutex_lock(&tab_lock);
    struct ent *e = find(a->ino, true);
    bool same = e && e->known && e->size == a->size && e->mtime == a->mtime_ns;
    if (e) {
        e->size = a->size;
        e->mtime = a->mtime_ns;
        e->known = true;
        e->last = *a;
    }
    pthread_mutex_unlock(&tab_lock);
    return same;
}

void tab_note(const struct proto_attr *a)
{
    note(a);
}

bool tab_mode(uint64_t ino, uint32_t *mode)
{
    pthread_mutex_lock(&tab_lock);
    struct ent *e = find(ino, false);
    bool known = e && e->known;
    if (known)
        *mode = e->last.mode;
    pthread_mutex_unlock(&tab_lock);
    return known;
}

bool tab_unchanged(const struct proto_attr *a)
{
    return note(a);
}

void tab_open(uint64_t ino, stria_file_t *f)
{
    struct handle *h = malloc(sizeof(*h));
    pthread_mutex_lock(&tab_lock);
    struct ent *e = find(ino, true);
    if (e && h) {
        h->f = f;
        h->err = 0;
        h->next = e->open;
        e->open = h;
        h = NULL;
    }
    pthread_mutex_unlock(&tab_lock);
    free(h); /* only when out of memory: the handle then goes untracked */
}

struct cl_removed *tab_close(uint64_t ino, stria_file_t *f)
{
    struct cl_removed *rm = NULL;
    pthread_mutex_lock(&tab_lock);
    struct ent *e = find(ino, false);
    if (e) {
        for (struct handle **pp = &e->open; *pp; pp = &(*pp)->next) {
            if ((*pp)->f == f) {
                struct handle *h = *pp;
                *pp = h->next;
                free(h);
                break;
            }
        }
        if (!e->open && e->pending) {
            rm = e->pending;
            e->pending = NULL;
            e->known = false;
        }
    }
    pthread_mutex_unlock(&tab_lock);
    return rm;
}

uint64_t tab_local_size(uint64_t ino, bool *open, int64_t *wrote_ns)
{
    uint64_t size = 0;
    int64_t latest = 0;
    *open = false;
    pthread_mutex_lock(&tab_lock);
    struct ent *e = find(ino, false);
    for (struct handle *h = e ? e->open : NULL; h; h = h->next) {
        int64_t w;
        uint64_t s = cl_file_unreported(h->f, &w);
        size = s > size ? s : size;
        latest = w > latest ? w : latest;
        *open = true;
    }
    if (wrote_ns)
        *wrote_ns = latest;
    /* The kernel already counts writes it has had replies for. */
    for (int i = 0; e && i < WB_SLOTS; i++)
        if (wb[i].used && wb[i].ino == ino && wb[i].end > size)
            size = wb[i].end;
    for (int i = 0; e && i < GATHER_BUFS; i++)
        if (gt[i].state != G_FREE && gt[i].ino == ino && gt[i].off + gt[i].len > size)
            size = gt[i].off + gt[i].len;
    pthread_mutex_unlock(&tab_lock);
    return size;
}

bool tab_orphan(const struct cl_removed *rm)
{
    bool kept = false;
    pthread_mutex_lock(&tab_lock);
    struct ent *e = find(rm->ino, false);
    if (e && e->open) {
        struct cl_removed *copy = malloc(sizeof(*copy));
        if (copy) {
            *copy = *rm;
            /* Writes after the unlink may create objects: remove them at the
             * last close whatever the MDT knew. */
            copy->destroy = copy->layout.ncomp > 0;
            free(e->pending);
            e->pending = copy;
            e->last.nlink = 0;
            if (rm->size > e->last.size)
                e->last.size = rm->size;
            /* From now on no one can tell the handles the size: give them
             * the last the MDT knew. */
            for (struct handle *h = e->open; h; h = h->next) {
                cl_file_know_size(h->f, rm->size);
                cl_file_orphan(h->f);
            }
            kept = true;
        }
    }
    pthread_mutex_unlock(&tab_lock);
    return kept;
}

bool tab_orphan_attr(uint64_t ino, struct proto_attr *a)
{
    bool found = false;
    pthread_mutex_lock(&tab_lock);
    struct ent *e = find(ino, false);
    if (e && e->pending) {
        *a = e->last;
        a->nlink = 0;
        found = true;
    }
    pthread_mutex_unlock(&tab_lock);
    return found;
}

bool tab_orphan_layout(uint64_t ino, struct layout *l)
{
    bool found = false;
    pthread_mutex_lock(&tab_lock);
    struct ent *e = find(ino, false);
    if (e && e->pending && e->pending->layout.ncomp) {
        *l = e->pending->layout;
        found = true;
    }
    pthread_mutex_unlock(&tab_lock);
    return found;
}

void tab_each(uint64_t ino, void (*fn)(stria_file_t *f, void *arg), void *arg)
{
    pthread_mutex_lock(&tab_lock);
    struct ent *e = find(ino, false);
    for (struct handle *h = e ? e->open : NULL; h; h = h->next)
        fn(h->f, arg);
    pthread_mutex_unlock(&tab_lock);
}

/* ---- write-behind ---- */

static struct handle *handle_of(uint64_t ino, stria_file_t *f)
{
    struct ent *e = find(ino, false);
    for (struct handle *h = e ? e->open : NULL; h; h = h->next)
        if (h->f == f)
            return h;
    return NULL;
}

/* Take h's unreported write-behind failure (0: none). */
static int take_err(struct handle *h)
{
    int rc = h ? h->err : 0;
    if (h)
        h->err = 0;
    return rc;
}

/* Whether a tracked write of ino (a write-behind slot or a gather being
 * sent) overlaps [off, end); *same_ino counts them all. */
static bool wb_overlaps(uint64_t ino, uint64_t off, uint64_t end, int *same_ino)
{
    bool hit = false;
    *same_ino = 0;
    for (int i = 0; i < WB_SLOTS; i++) {
        if (!wb[i].used || wb[i].ino != ino)
            continue;
        (*same_ino)++;
        if (wb[i].off < end && off < wb[i].end)
            hit = true;
    }
    for (int i = 0; i < GATHER_BUFS; i++) {
        if (gt[i].state != G_SENDING || gt[i].ino != ino)
            continue;
        (*same_ino)++;
        if (gt[i].off < end && off < gt[i].off + gt[i].len)
            hit = true;
    }
    return hit;
}

/* ---- gathering ---- */

static struct gather *filling(uint64_t ino)
{
    for (int i = 0; i < GATHER_BUFS; i++)
        if (gt[i].state == G_FILLING && gt[i].ino == ino)
            return &gt[i];
    return NULL;
}

/* Make the filling gather g a tracked write, once no tracked write of its
 * inode overlaps it (those are older and land first). False if another
 * thread took it meanwhile. The caller then sends it (gather_send). */
static bool claim(struct gather *g)
{
    uint64_t ino = g->ino;
    int mine;
    while (g->state == G_FILLING && g->ino == ino &&
           wb_overlaps(ino, g->off, g->off + g->len, &mine))
        pthread_cond_wait(&wb_cond, &tab_lock);
    if (g->state != G_FILLING || g->ino != ino)
        return false;
    g->state = G_SENDING;
    return true;
}

/* Send a claimed gather (tab_lock not held). Its writes were acknowledged:
 * no interrupt of the calling request may abandon it. A failure is kept on
 * its handle, as write-behind's are. */
static void gather_send(struct gather *g)
{
    const volatile int *cancel = cl_set_cancel(NULL);
    if (sf.wb_test_delay_ms)
        usleep(sf.wb_test_delay_ms * 1000);
    ssize_t n = stria_pwrite(g->f, g->buf, g->len, (off_t)g->off);
    cl_set_cancel(cancel);
    pthread_mutex_lock(&tab_lock);
    if (n < 0) {
        struct handle *h = handle_of(g->ino, g->f);
        if (h && !h->err)
            h->err = (int)n;
    }
    g->state = G_FREE;
    atomic_fetch_sub(&g_used, 1);
    g_sends++;
    pthread_cond_broadcast(&wb_cond);
    pthread_mutex_unlock(&tab_lock);
}

void tab_gather_send(struct gather *g)
{
    gather_send(g);
}

/* gather_send from under tab_lock, which it drops meanwhile. */
static void send_locked(struct gather *g)
{
    pthread_mutex_unlock(&tab_lock);
    gather_send(g);
    pthread_mutex_lock(&tab_lock);
}

/* Send ino's filling gather, if it began before this call, before
 * anything else of ino goes on (lock held; dropped while sending). Ones
 * begun meanwhile hold later writes: a steady writer cannot keep the
 * caller here. */
static void gather_drain(uint64_t ino)
{
    uint64_t upto = g_seq;
    struct gather *g;
    while ((g = filling(ino)) && g->seq <= upto) {
        if (claim(g))
            send_locked(g);
    }
}

static struct gather *free_gather(void)
{
    for (int i = 0; i < GATHER_BUFS; i++) {
        struct gather *g = &gt[i];
        if (g->state != G_FREE)
            continue;
        if (!g->buf && !(g->buf = malloc(GATHER_CAP)))
            return NULL;
        return g;
    }
    return NULL;
}

int tab_gather(uint64_t ino, stria_file_t *f, const char *buf, size_t size, uint64_t off,
               struct gather **send)
{
    *send = NULL;
    if (size >= GATHER_MAX || size == 0)
        return 0;
    pthread_mutex_lock(&tab_lock);
    struct handle *h = handle_of(ino, f);
    int rc = take_err(h);
    if (rc || !h)
        goto out;
    int64_t now = (int64_t)(util_now_mono_ns() / 1000000);
    for (;;) {
        struct gather *g = filling(ino);
        if (g && g->f == f && off == g->off + g->len && g->len + size <= GATHER_CAP) {
            memcpy(g->buf + g->len, buf, size);
            g->len += size;
            /* Full when another write of this size would not fit. */
            if (g->len + size > GATHER_CAP && claim(g))
                *send = g;
            rc = 1;
            break;
        }
        if (g && !claim(g))
            continue; /* taken by another thread: look again */
        struct gather *fresh = free_gather();
        if (!fresh && g) {
            /* Every buffer in use: send the one this write ends, then
             * gather this write in it. */
            send_locked(g);
            continue;
        }
        if (!fresh)
            break; /* not gathered: the caller writes it the usual way */
        *fresh = (struct gather){G_FILLING, ino, off, size, f, ++g_seq, now, fresh->buf};
        memcpy(fresh->buf, buf, size);
        atomic_fetch_add(&g_used, 1);
        *send = g; /* the buffer this write did not continue, if any */
        rc = 1;
        break;
    }
    if (rc == 1)
        g_writes++;
out:
    pthread_mutex_unlock(&tab_lock);
    return rc;
}

/* Send every filling gather whose first write is age_ms old or older (0:
 * all), one at a time (lock held; dropped while sending). */
static void send_aged(int64_t age_ms)
{
    int64_t now = (int64_t)(util_now_mono_ns() / 1000000);
    for (int i = 0; i < GATHER_BUFS; i++) {
        struct gather *g = &gt[i];
        if (g->state == G_FILLING && now - g->born_ms >= age_ms && claim(g)) {
            send_locked(g);
        }
    }
}

/* Send what was first written GATHER_AGE_MS ago, also while writes still
 * come, so that an acknowledged write reaches the OSTs (and other mounts
 * reading bytes they know of) in bounded time without a close. */
static void *flush_aged(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&tab_lock);
    while (!g_flusher_stop) {
        struct timespec ts;
        util_deadline(&ts, CLOCK_MONOTONIC, GATHER_AGE_MS / 4);
        pthread_cond_timedwait(&g_flusher_cond, &tab_lock, &ts);
        if (!g_flusher_stop)
            send_aged(GATHER_AGE_MS);
    }
    pthread_mutex_unlock(&tab_lock);
    return NULL;
}

int tab_gather_start(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g_flusher_cond, &ca);
    pthread_condattr_destroy(&ca);
    int rc = pthread_create(&g_flusher, NULL, flush_aged, NULL);
    g_flusher_on = rc == 0;
    return -rc;
}

void tab_gather_stop(void)
{
    if (g_flusher_on) {
        pthread_mutex_lock(&tab_lock);
        g_flusher_stop = true;
        pthread_cond_signal(&g_flusher_cond);
        pthread_mutex_unlock(&tab_lock);
        pthread_join(g_flusher, NULL);
        g_flusher_on = false;
    }
    /* Stopped by a signal with files still open (no release came): what
     * they wrote was acknowledged, so it goes now, while the cluster is
     * still connected. */
    pthread_mutex_lock(&tab_lock);
    send_aged(0);
    pthread_mutex_unlock(&tab_lock);
    for (int i = 0; i < GATHER_BUFS; i++) {
        free(gt[i].buf);
        gt[i].buf = NULL;
    }
}

void tab_gather_stats(uint64_t *writes, uint64_t *sends)
{
    pthread_mutex_lock(&tab_lock);
    *writes = g_writes;
    *sends = g_sends;
    pthread_mutex_unlock(&tab_lock);
}

int tab_wb_begin(uint64_t ino, stria_file_t *f, uint64_t off, uint64_t len, bool behind, int *slot)
{
    *slot = -1;
    pthread_mutex_lock(&tab_lock);
    struct handle *h = handle_of(ino, f);
    int rc = take_err(h);
    int mine = 0;
    /* A write the kernel has been told is done must land before any later
     * write over the same bytes; gathered ones go first, also those
     * acknowledged while this one waits (mmap write-back is not held back
     * by the inode lock). */
    while (!rc) {
        struct gather *g = filling(ino);
        if (g) {
            if (claim(g))
                send_locked(g);
        } else if (wb_overlaps(ino, off, off + len, &mine)) {
            pthread_cond_wait(&wb_cond, &tab_lock);
        } else {
            break;
        }
    }
    if (!rc && behind && h && mine < WB_PER_INODE && atomic_load(&wb_used) < WB_SLOTS) {
        for (int i = 0; i < WB_SLOTS; i++) {
            if (!wb[i].used) {
                wb[i] = (struct wb_slot){true, ino, off, off + len, f};
                atomic_fetch_add(&wb_used, 1);
                *slot = i;
                break;
            }
        }
    }
    pthread_mutex_unlock(&tab_lock);
    return rc;
}

void tab_wb_end(int slot, int rc)
{
    pthread_mutex_lock(&tab_lock);
    struct wb_slot *w = &wb[slot];
    struct handle *h = rc ? handle_of(w->ino, w->f) : NULL;
    if (h && !h->err)
        h->err = rc;
    w->used = false;
    atomic_fetch_sub(&wb_used, 1);
    pthread_cond_broadcast(&wb_cond);
    pthread_mutex_unlock(&tab_lock);
}

int tab_wb_wait(uint64_t ino, stria_file_t *f)
{
    if (atomic_load(&wb_used) == 0 && atomic_load(&g_used) == 0 && !f)
        return 0;
    int rc = 0, mine;
    pthread_mutex_lock(&tab_lock);
    gather_drain(ino);
    while (wb_overlaps(ino, 0, UINT64_MAX, &mine)) {
        if (cl_cancelled()) {
            rc = -EINTR;
            break;
        }
        /* In slices, so that an interrupted caller stops waiting. */
        struct timespec ts;
        util_deadline(&ts, CLOCK_REALTIME, 100);
        pthread_cond_timedwait(&wb_cond, &tab_lock, &ts);
    }
    if (!rc && f)
        rc = take_err(handle_of(ino, f));
    pthread_mutex_unlock(&tab_lock);
    return rc;
}
