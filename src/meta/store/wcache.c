/*
 * The walk cache (wcache.h): two direct-mapped tables under one mutex.
 *
 * Correctness rests on three rules, kept here so that store.c need only
 * report changes: nothing is used or added while a batch that changed a
 * fact is in flight (busy); a reader's fact is added only if no change
 * and no batch end happened since it took its generation; and a batch's
 * end drops every fact it reported changed (or all of them). The slots a
 * batch changed are remembered, up to PENDING_MAX; beyond that the end
 * drops everything, which costs misses, never a wrong answer.
 */
#include "wcache.h"

#include "../../common/util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PENDING_MAX 32

struct name_slot {
    uint64_t dir; /* 0: empty (no directory has inode number 0) */
    uint64_t child;
    uint8_t len;
    char name[WCACHE_NAME_MAX + 1];
};

struct wcache {
    pthread_mutex_t lock;
    uint32_t mask;
    uint64_t gen;
    bool busy;
    /* Slots the batch in flight changed: name slots as is, dir slots with
     * the top bit set; npending > PENDING_MAX means drop everything. */
    uint32_t npending;
    uint32_t pending[PENDING_MAX];
    uint64_t hits, drops;
    struct name_slot *names;
    struct wcache_dir *dirs; /* ino 0: empty */
};

#define DIR_BIT 0x80000000u

struct wcache *wcache_create(uint32_t slots)
{
    struct wcache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->names = calloc(slots, sizeof(*c->names));
    c->dirs = calloc(slots, sizeof(*c->dirs));
    if (!slots || !c->names || !c->dirs || (slots & (slots - 1)) || slots >= DIR_BIT) {
        wcache_destroy(c);
        return NULL;
    }
    c->mask = slots - 1;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void wcache_destroy(struct wcache *c)
{
    if (!c)
        return;
    if (c->mask)
        pthread_mutex_destroy(&c->lock);
    free(c->names);
    free(c->dirs);
    free(c);
}

static uint32_t name_slot(const struct wcache *c, uint64_t dir, const char *name, size_t len)
{
    return (uint32_t)((util_hash64(name, len) ^ dir * 0x9e3779b97f4a7c15ull) >> 32) & c->mask;
}

static uint32_t dir_slot(const struct wcache *c, uint64_t ino)
{
    return (uint32_t)((ino * 0x9e3779b97f4a7c15ull) >> 32) & c->mask;
}

uint64_t wcache_gen(struct wcache *c)
{
    pthread_mutex_lock(&c->lock);
    uint64_t g = c->gen;
    pthread_mutex_unlock(&c->lock);
    return g;
}

bool wcache_name(struct wcache *c, uint64_t dir, const char *name, size_t len, uint64_t *child)
{
    if (len > WCACHE_NAME_MAX)
        return false;
    uint32_t i = name_slot(c, dir, name, len);
    pthread_mutex_lock(&c->lock);
    const struct name_slot *n = &c->names[i];
    bool hit = !c->busy && n->dir == dir && n->len == len && !memcmp(n->name, name, len);
    if (hit) {
        *child = n->child;
        c->hits++;
    }
    pthread_mutex_unlock(&c->lock);
    return hit;
}

static bool dir_get(struct wcache *c, uint64_t ino, struct wcache_dir *out, bool busy_too)
{
    uint32_t i = dir_slot(c, ino);
    pthread_mutex_lock(&c->lock);
    bool hit = (busy_too || !c->busy) && c->dirs[i].ino == ino;
    if (hit) {
        *out = c->dirs[i];
        c->hits += !busy_too;
    }
    pthread_mutex_unlock(&c->lock);
    return hit;
}

bool wcache_dir(struct wcache *c, uint64_t ino, struct wcache_dir *out)
{
    return ino && dir_get(c, ino, out, false);
}

bool wcache_peek_dir(struct wcache *c, uint64_t ino, struct wcache_dir *out)
{
    return ino && dir_get(c, ino, out, true);
}

/* May a fact be added now? (lock held) */
static bool may_add(const struct wcache *c, bool reader, uint64_t gen)
{
    return !c->busy && (!reader || gen == c->gen);
}

void wcache_add_name(struct wcache *c, bool reader, uint64_t gen, uint64_t dir, const char *name,
                     size_t len, uint64_t child)
{
    if (len > WCACHE_NAME_MAX || !dir)
        return;
    uint32_t i = name_slot(c, dir, name, len);
    pthread_mutex_lock(&c->lock);
    if (may_add(c, reader, gen)) {
        struct name_slot *n = &c->names[i];
        n->dir = dir;
        n->child = child;
        n->len = (uint8_t)len;
        memcpy(n->name, name, len);
    }
    pthread_mutex_unlock(&c->lock);
}

void wcache_add_dir(struct wcache *c, bool reader, uint64_t gen, const struct wcache_dir *d)
{
    if (!d->ino)
        return;
    uint32_t i = dir_slot(c, d->ino);
    pthread_mutex_lock(&c->lock);
    if (may_add(c, reader, gen))
        c->dirs[i] = *d;
    pthread_mutex_unlock(&c->lock);
}

static void changed(struct wcache *c, uint32_t slot)
{
    pthread_mutex_lock(&c->lock);
    c->busy = true;
    c->gen++;
    if (c->npending < PENDING_MAX)
        c->pending[c->npending] = slot;
    if (c->npending <= PENDING_MAX)
        c->npending++;
    pthread_mutex_unlock(&c->lock);
}

void wcache_changed_name(struct wcache *c, uint64_t dir, const char *name, size_t len)
{
    if (len > WCACHE_NAME_MAX)
        return; /* never cached */
    changed(c, name_slot(c, dir, name, len));
}

void wcache_changed_dir(struct wcache *c, uint64_t ino)
{
    changed(c, dir_slot(c, ino) | DIR_BIT);
}

void wcache_batch_end(struct wcache *c, bool flush_all)
{
    pthread_mutex_lock(&c->lock);
    if (flush_all || c->npending > PENDING_MAX) {
        memset(c->names, 0, ((size_t)c->mask + 1) * sizeof(*c->names));
        memset(c->dirs, 0, ((size_t)c->mask + 1) * sizeof(*c->dirs));
        c->drops += (uint64_t)c->mask + 1;
        c->gen++;
    } else if (c->busy) {
        for (uint32_t i = 0; i < c->npending; i++) {
            uint32_t s = c->pending[i];
            if (s & DIR_BIT)
                c->dirs[s & ~DIR_BIT].ino = 0;
            else
                c->names[s].dir = 0;
        }
        c->drops += c->npending;
        c->gen++;
    }
    c->busy = false;
    c->npending = 0;
    pthread_mutex_unlock(&c->lock);
}

void wcache_counts(struct wcache *c, uint64_t *hits, uint64_t *drops)
{
    pthread_mutex_lock(&c->lock);
    *hits = c->hits;
    *drops = c->drops;
    pthread_mutex_unlock(&c->lock);
}
