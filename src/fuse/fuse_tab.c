/*
 * The inode table (fuse_tab.h): a hash of the inodes this mount has told
 * the kernel about or has open. One mutex guards it; every operation on it
 * is a few pointer steps. Entries with nothing open are dropped wholesale
 * when the table grows past TAB_MAX, which at worst costs a page-cache
 * refill on the next open of those files.
 */
#include "fuse_tab.h"

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
    stria_removed_t *pending; /* unlinked while open */
    struct stria_attr last;
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
static bool note(const struct stria_attr *a)
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

void tab_note(const struct stria_attr *a)
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

bool tab_unchanged(const struct stria_attr *a)
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

stria_removed_t *tab_close(uint64_t ino, stria_file_t *f)
{
    stria_removed_t *rm = NULL;
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
        uint64_t s = stria_file_unreported(h->f, &w);
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
    pthread_mutex_unlock(&tab_lock);
    return size;
}

bool tab_orphan(stria_removed_t *rm)
{
    bool kept = false;
    uint64_t size = stria_removed_size(rm);
    pthread_mutex_lock(&tab_lock);
    struct ent *e = find(stria_removed_ino(rm), false);
    if (e && e->open) {
        /* Writes after the unlink may create objects: remove them at the
         * last close whatever the MDT knew. An inode loses its last link
         * once, so one is pending at most; a second would be the same. */
        stria_removed_hold(rm);
        if (e->pending)
            stria_removed_free(rm);
        else
            e->pending = rm;
        e->last.nlink = 0;
        if (size > e->last.size)
            e->last.size = size;
        /* From now on no one can tell the handles the size: give them
         * the last the MDT knew. */
        for (struct handle *h = e->open; h; h = h->next) {
            stria_file_know_size(h->f, size);
            stria_file_orphan(h->f, rm);
        }
        kept = true;
    }
    pthread_mutex_unlock(&tab_lock);
    return kept;
}

bool tab_orphan_attr(uint64_t ino, struct stria_attr *a)
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

int tab_orphan_truncate(uint64_t ino, uint64_t size)
{
    int rc = 0;
    /* Under the lock, which keeps a last close from finishing the removal
     * meanwhile: a truncate of an unlinked open file is rare. */
    pthread_mutex_lock(&tab_lock);
    struct ent *e = find(ino, false);
    if (e && e->pending)
        rc = stria_removed_truncate(sf.fs, e->pending, size);
    pthread_mutex_unlock(&tab_lock);
    return rc;
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

/* Whether a tracked write of ino overlaps [off, end); *same_ino counts them
 * all. */
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
    return hit;
}

int tab_wb_begin(uint64_t ino, stria_file_t *f, uint64_t off, uint64_t len, bool behind, int *slot)
{
    *slot = -1;
    pthread_mutex_lock(&tab_lock);
    struct handle *h = handle_of(ino, f);
    int rc = take_err(h);
    int mine = 0;
    /* A write the kernel has been told is done must land before any later
     * write over the same bytes (libstria keeps the order of what it
     * gathered itself). */
    while (!rc && wb_overlaps(ino, off, off + len, &mine))
        pthread_cond_wait(&wb_cond, &tab_lock);
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

int tab_wb_busy(uint64_t ino, stria_file_t *f, uint64_t off, uint64_t len)
{
    int mine;
    pthread_mutex_lock(&tab_lock);
    int rc = take_err(handle_of(ino, f));
    if (!rc && atomic_load(&wb_used) && wb_overlaps(ino, off, off + len, &mine))
        rc = 1;
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
    if (atomic_load(&wb_used) == 0 && !f)
        return 0;
    int rc = 0, mine;
    pthread_mutex_lock(&tab_lock);
    while (wb_overlaps(ino, 0, UINT64_MAX, &mine)) {
        if (sf_cancelled()) {
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
