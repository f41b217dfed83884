#include "rcache.h"

#include "../common/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS 16384
/* Replies up to this size (a create's, with attributes and layout, is
 * about 150 bytes) live in their entry: no allocation of their own. */
#define SMALL_REPLY 224

struct entry {
    uint64_t client, seq;
    bool done;
    int status;
    uint32_t len;
    uint8_t *data;             /* small, or allocated */
    struct entry *hnext;       /* bucket chain */
    struct entry *prev, *next; /* served entries, oldest first */
    uint8_t small[SMALL_REPLY];
};

static void entry_free(struct entry *e)
{
    if (e->data != e->small)
        free(e->data);
    free(e);
}

struct rcache {
    pthread_mutex_t lock;
    pthread_cond_t served;
    struct entry *bucket[NBUCKETS];
    struct entry *oldest, *newest;
    uint32_t n, max_entries;
    uint64_t bytes, max_bytes;
};

int rcache_create(uint32_t max_entries, uint64_t max_bytes, struct rcache **out)
{
    struct rcache *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->served, NULL);
    c->max_entries = max_entries;
    c->max_bytes = max_bytes;
    *out = c;
    return 0;
}

void rcache_destroy(struct rcache *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < NBUCKETS; i++)
        for (struct entry *e = c->bucket[i], *n; e; e = n) {
            n = e->hnext;
            entry_free(e);
        }
    pthread_cond_destroy(&c->served);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static struct entry **slot(struct rcache *c, uint64_t client, uint64_t seq)
{
    struct entry **p = &c->bucket[util_mix64(client ^ util_mix64(seq)) % NBUCKETS];
    while (*p && ((*p)->client != client || (*p)->seq != seq))
        p = &(*p)->hnext;
    return p;
}

/* Drop the oldest served entry. */
static void evict(struct rcache *c)
{
    struct entry *e = c->oldest;
    c->oldest = e->next;
    if (c->oldest)
        c->oldest->prev = NULL;
    else
        c->newest = NULL;
    *slot(c, e->client, e->seq) = e->hnext;
    c->n--;
    c->bytes -= e->len;
    entry_free(e);
}

int rcache_begin(struct rcache *c, uint64_t client, uint64_t seq, int *status, void *payload,
                 uint32_t cap, uint32_t *len)
{
    pthread_mutex_lock(&c->lock);
    struct entry **p;
    /* A copy still being served: wait for its reply. */
    while (*(p = slot(c, client, seq)) && !(*p)->done)
        pthread_cond_wait(&c->served, &c->lock);
    struct entry *e = *p;
    if (e) {
        *status = e->status;
        *len = e->len < cap ? e->len : cap;
        if (*len)
            memcpy(payload, e->data, *len);
        pthread_mutex_unlock(&c->lock);
        return RCACHE_DONE;
    }
    e = malloc(sizeof(*e));
    if (e) { /* without memory the request is served uncached */
        memset(e, 0, offsetof(struct entry, small));
        e->client = client;
        e->seq = seq;
        *p = e;
    }
    pthread_mutex_unlock(&c->lock);
    return RCACHE_NEW;
}

void rcache_end(struct rcache *c, uint64_t client, uint64_t seq, int status, const void *payload,
                uint32_t len)
{
    pthread_mutex_lock(&c->lock);
    struct entry **p = slot(c, client, seq), *e = *p;
    if (e && !e->done) {
        uint8_t *d = len <= SMALL_REPLY ? e->small : malloc(len);
        if (len && !d) {
            *p = e->hnext; /* cannot keep it: forget it */
            free(e);
        } else {
            if (len)
                memcpy(d, payload, len);
            e->data = d;
            e->len = len;
            e->status = status;
            e->done = true;
            e->prev = c->newest;
            if (c->newest)
                c->newest->next = e;
            else
                c->oldest = e;
            c->newest = e;
            c->n++;
            c->bytes += len;
            while (c->oldest && (c->n > c->max_entries || c->bytes > c->max_bytes))
                evict(c);
        }
    }
    pthread_cond_broadcast(&c->served);
    pthread_mutex_unlock(&c->lock);
}

void rcache_forget(struct rcache *c, uint64_t client, uint64_t seq)
{
    pthread_mutex_lock(&c->lock);
    struct entry **p = slot(c, client, seq), *e = *p;
    if (e && !e->done) {
        *p = e->hnext;
        free(e);
    }
    pthread_cond_broadcast(&c->served);
    pthread_mutex_unlock(&c->lock);
}
