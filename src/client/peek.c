/*
 * Bytes a lookup brings (peek.h). Whether to ask is a guess from what
 * this client did lately: a score that an open for reading of a file
 * looked up just before (answered from the cache, of a Data-on-MDT file)
 * raises, and bytes that went unused lower. `ls -l`, `find` and a stat
 * storm open nothing they look up, so they never ask; a dataset read
 * opens every name it looks up, so it asks from its second file on.
 */
#include "peek.h"

#include "../common/util.h"
#include "../proto/layout.h"
#include "file_int.h"
#include "mdcache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

_Static_assert(PEEK_CAP == RA_CAP, "a lookup's bytes become a handle's read-ahead buffer");

/* Bytes kept at once (each in a read-ahead buffer, which counts against
 * file_ra.c's bound): one per thread between its lookup and its open. */
#define PEEK_SLOTS 8
/* Kept no longer than this: the kernel opens right after it looks up. */
#define PEEK_MS 2000
/* Files looked up without bytes whose opens are watched for. */
#define PEEK_LOOKED 8
/* How far the score goes up: bytes then go unused at most this many
 * times in a row before lookups stop asking. */
#define PEEK_SCORE_MAX 8

struct peek_slot {
    uint64_t ino;
    uint64_t instance, gen; /* the lease's, as the bytes were read */
    uint64_t epoch;         /* this client's write epoch before they were */
    int64_t at_ms;          /* 0: free */
    char *buf;
    uint32_t got;
};

struct peek {
    pthread_mutex_t lock;
    int score;
    uint64_t brought, used; /* stria_lookup_bytes_stats */
    struct peek_slot slot[PEEK_SLOTS];
    uint64_t looked[PEEK_LOOKED]; /* inodes, 0: none */
    unsigned looked_next;
};

int peek_start(stria_fs_t *fs)
{
    struct peek *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    pthread_mutex_init(&p->lock, NULL);
    fs->peek = p;
    return 0;
}

void peek_stop(stria_fs_t *fs)
{
    struct peek *p = fs->peek;
    if (!p)
        return;
    fs->peek = NULL;
    for (int i = 0; i < PEEK_SLOTS; i++)
        file_ra_put(fs, p->slot[i].buf);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static void score(struct peek *p, int by)
{
    p->score = MAX(0, MIN(PEEK_SCORE_MAX, p->score + by));
}

/* Empty slot s (its bytes, unused, lower the score), returning its buffer
 * for the caller to free outside the lock. */
static char *vacate(struct peek *p, struct peek_slot *s)
{
    char *b = s->buf;
    if (s->at_ms)
        score(p, -1);
    *s = (struct peek_slot){0};
    return b;
}

char *peek_want(stria_fs_t *fs, uint64_t *epoch)
{
    struct peek *p = fs->peek;
    if (!p)
        return NULL;
    pthread_mutex_lock(&p->lock);
    bool ask = p->score > 0;
    pthread_mutex_unlock(&p->lock);
    *epoch = atomic_load_explicit(&fs->write_epoch, memory_order_acquire);
    return ask ? file_ra_get(fs) : NULL;
}

void peek_drop(stria_fs_t *fs, char *buf)
{
    file_ra_put(fs, buf);
}

/* The lease r's reply gave on its inode: whether there is one. */
static bool reply_lease(const struct proto_lookup_rep *r, uint64_t *gen)
{
    for (uint32_t i = 0; i < r->leases.n && i < PROTO_MAX_LEASES; i++)
        if (r->leases.l[i].ino == r->attr.ino && r->leases.l[i].ms) {
            *gen = r->leases.l[i].gen;
            return true;
        }
    return false;
}

void peek_took(stria_fs_t *fs, const struct proto_lookup_rep *r, char *buf, uint32_t got,
               uint64_t epoch)
{
    struct peek *p = fs->peek;
    uint64_t gen = 0;
    /* Only for an open the cache can answer (mdc_open_layout). */
    bool keep =
        p && buf && got && !r->remote && S_ISREG(r->attr.mode) && reply_lease(r, &gen) &&
        got <= RA_CAP && mdc_layout_fits(&r->layout) &&
        file_ra_took(r->attr.ino, r->attr.size, &r->layout, buf, got, &r->dom_crcs, "lookup");
    if (!p || (!keep && !S_ISREG(r->attr.mode))) {
        file_ra_put(fs, buf);
        return;
    }
    char *drop[PEEK_SLOTS + 1];
    int nd = 0;
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&p->lock);
    /* Bytes kept too long go, and those an earlier lookup of this inode
     * brought: they may be older than the lease this one gave. */
    for (int i = 0; i < PEEK_SLOTS; i++)
        if (p->slot[i].at_ms && (now - p->slot[i].at_ms > PEEK_MS || p->slot[i].ino == r->attr.ino))
            drop[nd++] = vacate(p, &p->slot[i]);
    if (!keep) {
        p->looked[p->looked_next++ % PEEK_LOOKED] = r->attr.ino;
    } else {
        /* A free slot, else the oldest. */
        struct peek_slot *s = NULL;
        for (int i = 0; i < PEEK_SLOTS && !s; i++)
            if (!p->slot[i].at_ms)
                s = &p->slot[i];
        if (!s) {
            s = &p->slot[0];
            for (int i = 1; i < PEEK_SLOTS; i++)
                if (p->slot[i].at_ms < s->at_ms)
                    s = &p->slot[i];
            drop[nd++] = vacate(p, s);
        }
        *s = (struct peek_slot){r->attr.ino, r->leases.instance, gen, epoch, now, buf, got};
        p->brought++;
        buf = NULL;
    }
    pthread_mutex_unlock(&p->lock);
    while (nd)
        file_ra_put(fs, drop[--nd]);
    file_ra_put(fs, buf);
}

void peek_open(stria_file_t *f)
{
    stria_fs_t *fs = f->fs;
    struct peek *p = fs->peek;
    if (!p || !layout_dom_size(&f->layout))
        return;
    struct peek_slot s = {0};
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < PEEK_SLOTS; i++)
        if (p->slot[i].at_ms && p->slot[i].ino == f->ino) {
            s = p->slot[i];
            p->slot[i] = (struct peek_slot){0};
            break;
        }
    for (int i = 0; !s.at_ms && i < PEEK_LOOKED; i++)
        if (p->looked[i] == f->ino) {
            p->looked[i] = 0;
            score(p, 1); /* bytes with its lookup would have spared a round trip */
        }
    pthread_mutex_unlock(&p->lock);
    if (!s.at_ms)
        return;
    /* Good only if nothing changed the inode since they were read: its
     * lease is the one they came with (a change elsewhere revokes it, one
     * of this client's moves the generation on and the write epoch). */
    uint64_t instance, gen;
    bool same = mdc_clock_ms() - s.at_ms <= PEEK_MS &&
                mdc_lease_gen(fs->mdc, f->ino, proto_ino_mdt(f->ino), &instance, &gen) &&
                instance == s.instance && gen == s.gen && s.got <= f->size &&
                s.got <= layout_dom_size(&f->layout);
    pthread_mutex_lock(&p->lock);
    score(p, same ? 1 : -1);
    p->used += same;
    pthread_mutex_unlock(&p->lock);
    if (!same) {
        file_ra_put(fs, s.buf);
        return;
    }
    file_ra_adopt(f, s.buf, s.got, s.epoch);
}

void stria_lookup_bytes_stats(stria_fs_t *fs, uint64_t *brought, uint64_t *used)
{
    struct peek *p = fs->peek;
    *brought = *used = 0;
    if (p) {
        pthread_mutex_lock(&p->lock);
        *brought = p->brought;
        *used = p->used;
        pthread_mutex_unlock(&p->lock);
    }
}
