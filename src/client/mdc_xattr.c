/*
 * The metadata cache's word on well-known xattrs an inode does not have
 * (mdcache.h): kept in the inode's record while its lease holds the state
 * the MDT answered for, and, from a listing's entries, in a small table
 * of its own (MDC_LISTED slots, MDC_LISTED_WAYS to a set) for at most
 * MDC_LISTED_MS, which a revocation of the inode forgets. `ls -l` asks for
 * security.selinux of every entry, and nearly no file has one.
 */
#include "mdcache_int.h"

#include <pthread.h>

/* The set of MDC_LISTED_WAYS slots ino may be in. */
static struct listed *listed_set(struct mdc *m, uint64_t ino)
{
    size_t sets = MDC_LISTED / MDC_LISTED_WAYS;
    return &m->listed[((ino * 0x9E3779B97F4A7C15ull) >> 40) % sets * MDC_LISTED_WAYS];
}

/* ino's slot, or NULL (under m->lock). */
static struct listed *listed_find(struct mdc *m, uint64_t ino)
{
    struct listed *set = listed_set(m, ino);
    for (int i = 0; i < MDC_LISTED_WAYS; i++)
        if (set[i].ino == ino)
            return &set[i];
    return NULL;
}

void mdc_listed_forget(struct mdc *m, uint64_t ino)
{
    struct listed *l = listed_find(m, ino);
    if (l)
        l->until_ms = 0;
}

uint64_t mdc_listing_seq(struct mdc *m)
{
    pthread_mutex_lock(&m->lock);
    uint64_t seq = m->xseq;
    pthread_mutex_unlock(&m->lock);
    return seq;
}

void mdc_note_listed(struct mdc *m, uint64_t ino, uint8_t absent, uint64_t seq)
{
    if (!absent)
        return;
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&m->lock);
    /* Under ino's lease, when nothing that could have changed its xattrs
     * was heard or made since the listing was asked for: kept while the
     * lease holds this state, as an answer of the MDT's would be. */
    struct crec *r = mdc_home_find(m, ino);
    if (seq == m->xseq && mdc_rec_valid(m, r, now) && r->have_attr) {
        if (r->xattr_gen != r->gen)
            r->xattr_absent = 0;
        r->xattr_gen = r->gen;
        r->xattr_absent |= absent;
    }
    /* ino's own slot, else the one that ends first. */
    struct listed *l = listed_find(m, ino);
    if (!l) {
        struct listed *set = listed_set(m, ino);
        l = set;
        for (struct listed *o = set + 1; o < set + MDC_LISTED_WAYS; o++)
            if (o->until_ms < l->until_ms)
                l = o;
    }
    *l = (struct listed){ino, now + MDC_LISTED_MS, absent};
    pthread_mutex_unlock(&m->lock);
}

bool mdc_xattr_absent(struct mdc *m, uint64_t ino, const char *name, uint64_t *gen)
{
    *gen = 0;
    int slot = proto_xattr_known(name);
    if (slot < 0)
        return false;
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&m->lock);
    struct crec *r = mdc_home_find(m, ino);
    bool absent = false;
    if (mdc_rec_valid(m, r, now) && r->have_attr) {
        *gen = r->gen;
        absent = r->xattr_gen == r->gen && (r->xattr_absent & (1u << slot));
    }
    /* Or a listing's word, not older than MDC_LISTED_MS (a revocation of
     * the lease forgot it). */
    const struct listed *l = listed_find(m, ino);
    if (!absent && l && now < l->until_ms)
        absent = l->absent & (1u << slot);
    pthread_mutex_unlock(&m->lock);
    return absent;
}

void mdc_xattr_changed(struct mdc *m, uint64_t ino)
{
    pthread_mutex_lock(&m->lock);
    m->xseq++;
    struct crec *r = mdc_home_find(m, ino);
    if (r)
        mdc_rec_drop(m, r); /* an answer sent before the change is not kept either */
    mdc_listed_forget(m, ino);
    pthread_mutex_unlock(&m->lock);
}

void mdc_note_xattr_absent(struct mdc *m, uint64_t ino, const char *name, uint64_t gen)
{
    int slot = proto_xattr_known(name);
    if (slot < 0 || !gen)
        return;
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&m->lock);
    struct crec *r = mdc_home_find(m, ino);
    /* Only the state the request was sent under: a change since moved it. */
    if (mdc_rec_valid(m, r, now) && r->have_attr && r->gen == gen) {
        if (r->xattr_gen != gen)
            r->xattr_absent = 0;
        r->xattr_gen = gen;
        r->xattr_absent |= (uint8_t)(1u << slot);
    }
    pthread_mutex_unlock(&m->lock);
}
