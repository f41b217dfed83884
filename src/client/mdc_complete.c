/*
 * The metadata cache's complete directories (mdcache.h): the parts of
 * directories whose every name the cache holds, so that a name it lacks
 * there is absent without asking the MDT. A part is complete when this
 * client made it (mdc_new_dir; a shard another MDT made, once listed
 * empty: mdc_new_shard, mdc_shard_epoch, mdc_shard_empty), or once one
 * READDIR listed all of it under the same lease, with no change of this
 * client's to its names meanwhile (mdc_fill_begin, mdc_fill_end). The
 * records, names and leases are mdcache.c's.
 */
#include "mdcache_int.h"

#include <stdlib.h>

void mdc_new_dir(struct mdc *m, uint64_t ino, uint32_t mdt)
{
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&m->lock);
    struct crec *r = mdc_rec_find(m, ino, mdt);
    if (mdc_rec_valid(m, r, now)) {
        r->complete_epoch = r->epoch;
    } else if (mdt < 64) {
        struct new_dir *d = &m->new_dirs[mdc_hash_ino(ino) % NEW_DIRS];
        if (d->ino != ino)
            *d = (struct new_dir){ino, 0};
        d->mdts |= 1ull << mdt;
    }
    pthread_mutex_unlock(&m->lock);
}

bool mdc_new_shard(struct mdc *m, uint64_t ino, uint32_t mdt)
{
    bool pending = false;
    pthread_mutex_lock(&m->lock);
    struct new_dir *d = &m->new_dirs[mdc_hash_ino(ino) % NEW_DIRS];
    if (mdt < 64 && d->ino == ino && (d->mdts & 1ull << mdt)) {
        d->mdts &= ~(1ull << mdt);
        pending = true;
    }
    pthread_mutex_unlock(&m->lock);
    return pending;
}

uint64_t mdc_shard_epoch(struct mdc *m, uint64_t ino, uint32_t mdt)
{
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&m->lock);
    struct crec *r = mdc_rec_find(m, ino, mdt);
    uint64_t epoch = mdc_rec_valid(m, r, now) ? r->epoch : 0;
    pthread_mutex_unlock(&m->lock);
    return epoch;
}

bool mdc_shard_empty(struct mdc *m, uint64_t ino, uint32_t mdt, uint64_t epoch)
{
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&m->lock);
    struct crec *r = mdc_rec_find(m, ino, mdt);
    bool same = epoch && mdc_rec_valid(m, r, now) && r->epoch == epoch;
    if (same)
        r->complete_epoch = r->epoch;
    pthread_mutex_unlock(&m->lock);
    return same;
}

bool mdc_fill_begin(struct mdc *m, uint64_t ino, uint32_t mdt, uint32_t batches, struct mdc_fill *f)
{
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&m->lock);
    struct crec *r = mdc_rec_find(m, ino, mdt);
    /* A try of fewer READDIRs (a lookup's) holds back no longer one. */
    bool go = mdc_rec_valid(m, r, now) && r->complete_epoch != r->epoch &&
              (now >= r->fill_next_ms || batches > r->fill_batches);
    if (go) {
        r->fill_next_ms = now + MDC_FILL_MS;
        r->fill_batches = (uint8_t)(batches < 255 ? batches : 255);
        *f = (struct mdc_fill){ino, r->epoch, r->changes, mdt};
    }
    pthread_mutex_unlock(&m->lock);
    return go;
}

bool mdc_fill_complete(struct mdc *m, const struct mdc_fill *f)
{
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&m->lock);
    struct crec *r = mdc_rec_find(m, f->ino, f->mdt);
    bool same = mdc_rec_valid(m, r, now) && r->epoch == f->epoch && r->changes == f->changes;
    if (same) {
        r->complete_epoch = r->epoch;
        r->fill_next_ms = now + MDC_FILL_MS; /* a later try is an ordinary one */
    }
    pthread_mutex_unlock(&m->lock);
    return same;
}

int mdc_fill_end(struct mdc *m, const struct mdc_fill *f, bool eof, const uint8_t *entries,
                 uint32_t len, uint32_t count, uint64_t *next)
{
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&m->lock);
    struct crec *r = mdc_rec_find(m, f->ino, f->mdt);
    if (r && !eof)
        r->fill_next_ms = now + MDC_FILL_BIG_MS;
    /* Each batch's names hold as long as the lease is the one the listing
     * began under: a change since moved the epoch. */
    bool same = mdc_rec_valid(m, r, now) && r->epoch == f->epoch && r->changes == f->changes;
    struct proto_dec d;
    proto_dec_init(&d, entries, len);
    for (uint32_t i = 0; same && i < count; i++) {
        struct proto_dirent de;
        proto_get_dirent(&d, &de);
        if (d.err)
            same = false;
        else if (mdc_ordinary_name(de.name.p, de.name.len)) /* others are always asked */
            same = mdc_name_put(m, r, de.name.p, de.name.len, de.ino);
        if (same)
            *next = de.next_cookie;
    }
    pthread_mutex_unlock(&m->lock);
    return !same ? -1 : eof ? 1 : count ? 0 : -1;
}
