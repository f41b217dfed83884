/*
 * The inode table (fuse_int.h): a hash of the inodes this mount has told
 * the kernel about or has open. One mutex guards it; every operation on it
 * is a few pointer steps. Entries with nothing open are dropped wholesale
 * when the table grows past TAB_MAX, which at worst costs a page-cache
 * refill on the next open of those files.
 */
#include "fuse_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define TAB_BUCKETS (1u << 16)
#define TAB_MAX     (1u << 20)

struct handle {
    stria_file_t *f;
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

uint64_t tab_local_size(uint64_t ino, bool *open)
{
    uint64_t size = 0;
    *open = false;
    pthread_mutex_lock(&tab_lock);
    struct ent *e = find(ino, false);
    for (struct handle *h = e ? e->open : NULL; h; h = h->next) {
        uint64_t s = cl_file_unreported_end(h->f);
        size = s > size ? s : size;
        *open = true;
    }
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
