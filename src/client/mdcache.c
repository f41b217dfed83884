/*
 * The client's metadata cache under MDT leases (mdcache.h).
 *
 * Two hash tables under one mutex: records, one per (inode, MDT) whose
 * lease this client holds (generation, lease expiry, attributes), and names
 * (parent, name -> inode). A striped directory has one record per shard,
 * because each shard's MDT leases the names it holds and revokes them on
 * its own channel, with generations from its own counter; an inode's
 * attributes are only ever kept in the record of its own MDT (a shard's
 * record keeps the mode and owner, which every shard has, for permission
 * checks). A name counts only while its parent's record on the name's MDT
 * is valid and in the same epoch as when the name was stored; dropping a
 * directory's names is a new epoch, not a walk.
 *
 * A record is valid while its lease has time left, its generation is past
 * every revocation heard for the inode from that MDT, and that MDT's
 * revocation channel is up (instance non-zero). A revocation heard before
 * the grant it revokes (the two travel on different connections) is
 * remembered in `revoked`, so the late grant is refused. A reply names the
 * MDT it came from by its lease table's instance, which each channel
 * learnt; a reply from an instance no channel knows grants nothing.
 *
 * The channels that bring the revocations, and mdc_start and mdc_stop,
 * are in mdc_chan.c; directories whose every name is cached in
 * mdc_complete.c; the xattrs known absent (from replies and listings) in
 * mdc_xattr.c. Write-behind, above, hears of its grants'
 * revocations through the callback it registers (mdc_on_revoke).
 */
#include "mdcache_int.h"

#include "../common/util.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ITEMS (1u << 18) /* of each kind; past it everything is dropped */

struct cname {
    uint64_t parent, epoch, child;
    struct cname *next;
    uint32_t mdt; /* the MDT holding the name (its parent's record there) */
    uint32_t len;
    char name[];
};

int64_t mdc_clock_ms(void)
{
    return (int64_t)(util_now_mono_ns() / 1000000);
}

uint32_t mdc_hash_ino(uint64_t ino)
{
    return (uint32_t)(util_mix64(ino) % BUCKETS);
}

static uint32_t hash_rec(uint64_t ino, uint32_t mdt)
{
    return mdc_hash_ino(ino ^ (uint64_t)mdt << 48);
}

static uint32_t hash_name(uint64_t parent, const char *name, size_t len)
{
    return mdc_hash_ino(util_hash64(name, len) ^ parent);
}

/* ---- tables (under lock) ---- */

void mdc_drop_all(struct mdc *m)
{
    m->xseq++;
    /* What the records knew of revocations goes with them: a reply to a
     * request sent before leases nothing (mdc_update). */
    for (uint32_t k = 0; k < m->nchan; k++)
        m->chan[k].forgot_ms = mdc_clock_ms();
    for (uint32_t b = 0; b < BUCKETS; b++) {
        for (struct crec *r = m->rec[b], *n; r; r = n) {
            n = r->next;
            free(r);
        }
        for (struct cname *c = m->names[b], *n; c; c = n) {
            n = c->next;
            free(c);
        }
        m->rec[b] = NULL;
        m->names[b] = NULL;
    }
    m->nrec = m->nnames = 0;
}

struct crec *mdc_rec_find(struct mdc *m, uint64_t ino, uint32_t mdt)
{
    for (struct crec *r = m->rec[hash_rec(ino, mdt)]; r; r = r->next)
        if (r->ino == ino && r->mdt == mdt)
            return r;
    return NULL;
}

struct crec *mdc_home_find(struct mdc *m, uint64_t ino)
{
    return mdc_rec_find(m, ino, proto_ino_mdt(ino));
}

static struct crec *rec_get(struct mdc *m, uint64_t ino, uint32_t mdt)
{
    struct crec *r = mdc_rec_find(m, ino, mdt);
    if (r)
        return r;
    if (m->nrec >= MAX_ITEMS)
        mdc_drop_all(m);
    if (!(r = calloc(1, sizeof(*r))))
        return NULL;
    uint32_t b = hash_rec(ino, mdt);
    r->ino = ino;
    r->mdt = mdt;
    r->epoch = ++m->next_epoch;
    r->next = m->rec[b];
    m->rec[b] = r;
    m->nrec++;
    return r;
}

bool mdc_rec_valid(const struct mdc *m, const struct crec *r, int64_t now)
{
    return r && r->mdt < m->nchan && m->chan[r->mdt].instance && r->expiry_ms > now &&
           r->gen > r->revoked;
}

void mdc_exclusive(struct mdc *m, uint32_t mdt, int64_t since_ms, int64_t until_ms)
{
    if (!m || mdt >= MDC_MAX_MDTS)
        return;
    /* Ended first, begun last; an ended hold begins never (INT64_MAX), so
     * a reader that paired an old end with it would still refuse. */
    atomic_store(&m->chan[mdt].excl_until_ms, 0);
    atomic_store(&m->chan[mdt].excl_since_ms, until_ms ? since_ms : INT64_MAX);
    atomic_store(&m->chan[mdt].excl_until_ms, until_ms);
}

/* r valid, or valid when this client's exclusive hold on its MDT began
 * and not dropped since: while the hold lasts no other client changed it,
 * and this client's own changes update it either way (a reply's leases
 * fill a record whether or not its lease ran out). */
static bool rec_held(const struct mdc *m, const struct crec *r, int64_t now)
{
    if (mdc_rec_valid(m, r, now))
        return true;
    if (!r || r->mdt >= m->nchan || !m->chan[r->mdt].instance || !r->expiry_ms ||
        r->gen <= r->revoked)
        return false;
    const struct mdc_chan *c = &m->chan[r->mdt];
    return now < atomic_load(&c->excl_until_ms) && atomic_load(&c->excl_since_ms) <= r->expiry_ms;
}

/* The MDT whose lease table is instance, or -1 when no channel hears it. */
static int instance_mdt(const struct mdc *m, uint64_t instance)
{
    for (uint32_t i = 0; instance && i < m->nchan; i++)
        if (m->chan[i].instance == instance)
            return (int)i;
    return -1;
}

void mdc_rec_drop(struct mdc *m, struct crec *r)
{
    mdc_listed_forget(m, r->ino); /* a revocation: ino changed */
    r->expiry_ms = 0;
    r->have_attr = r->have_perm = false;
    r->have_layout = false;
    r->xattr_absent = 0;
    r->epoch = ++m->next_epoch;
}

static struct cname **name_slot(struct mdc *m, uint64_t parent, const char *name, size_t len)
{
    struct cname **p = &m->names[hash_name(parent, name, len)];
    for (; *p; p = &(*p)->next)
        if ((*p)->parent == parent && (*p)->len == len && memcmp((*p)->name, name, len) == 0)
            break;
    return p;
}

/* This client changed a name of dir (whatever it knew of it): a listing
 * taken before may miss that change (mdc_fill_end). */
static void names_changed(struct mdc *m, uint64_t dir)
{
    for (uint32_t k = 0; dir && k < m->nchan; k++) {
        struct crec *r = mdc_rec_find(m, dir, k);
        if (r)
            r->changes++;
    }
}

static void name_forget(struct mdc *m, uint64_t parent, const char *name)
{
    if (!parent || !name)
        return;
    names_changed(m, parent);
    struct cname **p = name_slot(m, parent, name, strlen(name));
    struct cname *c = *p;
    if (c) {
        *p = c->next;
        free(c);
        m->nnames--;
    }
}

/* Store name in parent (false: no room, and parent is incomplete now). */
bool mdc_name_put(struct mdc *m, struct crec *parent, const char *name, size_t len, uint64_t child)
{
    struct cname **p = name_slot(m, parent->ino, name, len);
    struct cname *c = *p;
    if (!c) {
        if (m->nnames >= MAX_ITEMS || !(c = malloc(sizeof(*c) + len))) {
            parent->complete_epoch = 0; /* a name is missing now */
            return false;
        }
        c->parent = parent->ino;
        c->mdt = parent->mdt;
        c->len = (uint32_t)len;
        memcpy(c->name, name, len);
        c->next = NULL;
        *p = c;
        m->nnames++;
    }
    c->mdt = parent->mdt;
    c->epoch = parent->epoch;
    c->child = child;
    return true;
}

static void name_set(struct mdc *m, struct crec *parent, const char *name, uint64_t child)
{
    names_changed(m, parent->ino);
    (void)mdc_name_put(m, parent, name, strlen(name), child);
}

/* ---- answers ---- */

bool mdc_ordinary_name(const char *name, size_t len)
{
    return len <= NAME_MAX && !(len == 1 && name[0] == '.') &&
           !(len == 2 && name[0] == '.' && name[1] == '.');
}

/* The record whose mode and owner say who may use directory dir, seen
 * through its record p on one MDT: p's own, else (a shard that only
 * leased names) the directory's own MDT's. Every shard has the same: a
 * change of them is made on every shard before it is acknowledged, and
 * revokes each shard's lease. NULL when neither is known. */
/* Whether r may be used: valid, or for a victim's decision held. */
static bool usable(const struct mdc *m, const struct crec *r, int64_t now, bool victim)
{
    return victim ? rec_held(m, r, now) : mdc_rec_valid(m, r, now);
}

static const struct crec *perm_of(struct mdc *m, const struct crec *p, int64_t now, bool victim)
{
    if (p->have_perm)
        return p;
    const struct crec *h = mdc_home_find(m, p->ino);
    return usable(m, h, now, victim) && h->have_perm ? h : NULL;
}

/* The child of name in parent (0), or -ENOENT if parent's shard on mdt is
 * complete and has no such name, when parent's lease lets cred search it
 * (and, with victim, remove names from it) and the leases involved are
 * valid; else -EAGAIN. */
static int lookup(struct mdc *m, uint64_t parent, uint32_t mdt, const char *name,
                  const struct proto_cred *cred, bool victim, struct proto_attr *out)
{
    int rc = -EAGAIN;
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&m->lock);
    struct crec *p = mdc_rec_find(m, parent, mdt);
    const struct crec *pp = usable(m, p, now, victim) ? perm_of(m, p, now, victim) : NULL;
    if (pp && proto_cred_may(cred, pp->attr.mode, pp->attr.uid, pp->attr.gid, 1)) {
        struct cname *c = *name_slot(m, parent, name, strlen(name));
        if (c && c->mdt == mdt && c->epoch == p->epoch && c->child) {
            struct crec *r = mdc_home_find(m, c->child);
            if (usable(m, r, now, victim) && r->have_attr &&
                (!victim || proto_cred_may_delete(cred, pp->attr.mode, pp->attr.uid, pp->attr.gid,
                                                  r->attr.uid))) {
                *out = r->attr;
                rc = 0;
            }
        } else if (p->complete_epoch == p->epoch && !victim &&
                   mdc_ordinary_name(name, strlen(name))) {
            rc = -ENOENT;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

int mdc_lookup(struct mdc *m, uint64_t parent, uint32_t mdt, const char *name,
               const struct proto_cred *cred, struct proto_attr *out)
{
    return lookup(m, parent, mdt, name, cred, false, out);
}

bool mdc_lookup_victim(struct mdc *m, uint64_t parent, uint32_t mdt, const char *name,
                       const struct proto_cred *cred, struct proto_attr *out)
{
    return lookup(m, parent, mdt, name, cred, true, out) == 0;
}

bool mdc_perm_missing(struct mdc *m, uint64_t dir, uint32_t mdt, const char *name)
{
    int64_t now = mdc_clock_ms();
    uint32_t home = proto_ino_mdt(dir);
    pthread_mutex_lock(&m->lock);
    struct crec *p = mdc_rec_find(m, dir, mdt);
    bool missing = mdc_rec_valid(m, p, now) && !perm_of(m, p, now, false) && home < m->nchan &&
                   m->chan[home].instance;
    if (missing) {
        /* The lookup would go to the MDT all the same without the name
         * (in a part not complete) or without what it holds. */
        struct cname *c = *name_slot(m, dir, name, strlen(name));
        if (c && c->mdt == mdt && c->epoch == p->epoch && c->child) {
            struct crec *r = mdc_home_find(m, c->child);
            missing = mdc_rec_valid(m, r, now) && r->have_attr;
        } else {
            missing = p->complete_epoch == p->epoch && mdc_ordinary_name(name, strlen(name));
        }
    }
    pthread_mutex_unlock(&m->lock);
    return missing;
}

bool mdc_getattr(struct mdc *m, uint64_t ino, struct proto_attr *out)
{
    return mdc_getattr_at(m, ino, proto_ino_mdt(ino), out);
}

bool mdc_getattr_at(struct mdc *m, uint64_t ino, uint32_t mdt, struct proto_attr *out)
{
    bool hit = false;
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&m->lock);
    struct crec *r = mdc_rec_find(m, ino, mdt);
    if (mdc_rec_valid(m, r, now) && r->have_attr) {
        *out = r->attr;
        hit = true;
    }
    pthread_mutex_unlock(&m->lock);
    return hit;
}

bool mdc_lease_gen(struct mdc *m, uint64_t ino, uint32_t mdt, uint64_t *instance, uint64_t *gen)
{
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&m->lock);
    struct crec *r = mdc_rec_find(m, ino, mdt);
    bool valid = mdc_rec_valid(m, r, now);
    if (valid) {
        *instance = m->chan[mdt].instance;
        *gen = r->gen;
    }
    pthread_mutex_unlock(&m->lock);
    return valid;
}

bool mdc_layout_fits(const struct layout *l)
{
    uint32_t groups = 0;
    if (!l->ncomp || l->ncomp > MDC_LAYOUT_COMPS)
        return false;
    for (uint16_t i = 0; i < l->ncomp; i++) {
        const struct layout_comp *c = &l->comp[i];
        if ((groups += layout_comp_groups(c)) > MDC_LAYOUT_STRIPES ||
            (layout_comp_pending(c) && c->pool[0]))
            return false;
    }
    return true;
}

/* Keep l in r if it fits (crec.lay); else r keeps none. */
static void keep_layout(struct crec *r, const struct layout *l)
{
    if (!(r->have_layout = mdc_layout_fits(l)))
        return;
    r->lay.ncomp = (uint8_t)l->ncomp;
    uint32_t *g = r->lay.groups;
    for (uint16_t i = 0; i < l->ncomp; i++) {
        const struct layout_comp *c = &l->comp[i];
        r->lay.c[i].start = c->start;
        r->lay.c[i].end = c->end;
        r->lay.c[i].stripe_size = c->stripe_size;
        r->lay.c[i].stripe_count = c->stripe_count;
        r->lay.c[i].type = c->type;
        memcpy(g, c->groups, layout_comp_groups(c) * sizeof(*g));
        g += layout_comp_groups(c);
    }
}

bool mdc_open_layout(struct mdc *m, uint64_t ino, struct proto_attr *attr, struct layout *out)
{
    bool hit = false;
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&m->lock);
    struct crec *r = mdc_home_find(m, ino);
    if (mdc_rec_valid(m, r, now) && r->have_attr && r->have_layout) {
        *attr = r->attr;
        out->ncomp = r->lay.ncomp;
        const uint32_t *g = r->lay.groups;
        for (uint16_t i = 0; i < out->ncomp; i++) {
            struct layout_comp *c = &out->comp[i];
            c->start = r->lay.c[i].start;
            c->end = r->lay.c[i].end;
            c->stripe_size = r->lay.c[i].stripe_size;
            c->stripe_count = r->lay.c[i].stripe_count;
            c->type = r->lay.c[i].type;
            c->pool[0] = '\0';
            memcpy(c->groups, g, layout_comp_groups(c) * sizeof(*g));
            g += layout_comp_groups(c);
        }
        hit = true;
    }
    pthread_mutex_unlock(&m->lock);
    return hit;
}

/* ---- following replies ---- */

/* Take in one lease entry from mdt; returns the record if what the reply
 * says about the inode may be cached, NULL if not. delta: the caller will
 * apply the change to the directory's names itself, so they may stay;
 * *own says they did: the change was this client's, with nothing between. */
static struct crec *take_lease(struct mdc *m, uint32_t mdt, const struct proto_lease *l, bool delta,
                               int64_t sent, bool *own)
{
    struct crec *r = l->ms ? rec_get(m, l->ino, mdt) : mdc_rec_find(m, l->ino, mdt);
    if (!r)
        return NULL;
    if (!l->ms || l->gen <= r->revoked) {
        mdc_rec_drop(m, r);
        return NULL;
    }
    int64_t expiry = sent + l->ms - l->ms / 8;
    /* Generations compare states, whether or not r's lease ran out since:
     * an MDT numbers every change of an inode anew, and a record it forgot
     * and made again gets a new number too, so the same number is the
     * same state. So a directory's names survive the first reply after a
     * quiet spell (an rm -rf of files made long ago) unless it changed. */
    bool known = r->expiry_ms && r->gen > r->revoked;
    if (known && r->gen == l->gen) {
        /* The same state again: a renewal. */
    } else if (known && delta && l->gen_before == r->gen) {
        /* Our own change, with nothing between: the names follow it. */
        r->gen = l->gen;
        *own = true;
        r->have_attr = false; /* times changed; mode and owner did not */
    } else if (!known || l->gen > r->gen) {
        mdc_rec_drop(m, r);
        r->gen = l->gen;
    } else {
        return NULL; /* an older state than the one cached */
    }
    if (expiry > r->expiry_ms)
        r->expiry_ms = expiry;
    return r;
}

/* Attributes a reply gave for r's inode: the inode's in the record of its
 * own MDT; in a shard's, the shard's (mode and owner are the directory's,
 * times and link count the shard's own: mdc_getattr_at). */
static void set_attr(struct crec *r, const struct proto_attr *a)
{
    r->attr = *a;
    r->have_perm = true;
    r->have_attr = true;
}

/* A reply from an MDT no channel hears: whatever any MDT leased about
 * these inodes is dropped, and the names the reply speaks of. */
static void drop_unheard(struct mdc *m, const struct mdc_update *u)
{
    for (uint32_t i = 0; i < u->leases->n && i < PROTO_MAX_LEASES; i++)
        for (uint32_t k = 0; k < m->nchan; k++) {
            struct crec *r = mdc_rec_find(m, u->leases->l[i].ino, k);
            if (r)
                mdc_rec_drop(m, r);
        }
}

/* Every name of dir on any MDT may be missing from the cache now. */
static void incomplete(struct mdc *m, uint64_t dir)
{
    names_changed(m, dir);
    for (uint32_t k = 0; dir && k < m->nchan; k++) {
        struct crec *r = mdc_rec_find(m, dir, k);
        if (r)
            r->complete_epoch = 0;
    }
}

void mdc_update(struct mdc *m, const struct mdc_update *u)
{
    pthread_mutex_lock(&m->lock);
    /* Room for every record the reply may add, made before any is taken:
     * rec_get's dropping everything when full would free the records
     * this loop holds. */
    if (m->nrec + PROTO_MAX_LEASES >= MAX_ITEMS)
        mdc_drop_all(m);
    int mdt = instance_mdt(m, u->leases->instance);
    /* A request sent before this cache last forgot what its MDT leased
     * may bring a lease the MDT dropped since (with the channel that
     * broke), or a state from before a change of this client's whose
     * reply was lost (which revokes nothing here): it leases nothing.
     * Sent in the same millisecond counts as before. */
    if (mdt >= 0 && u->sent_ms <= m->chan[mdt].forgot_ms)
        mdt = -1;
    struct crec *parent = NULL, *parent2 = NULL, *attr_rec = NULL;
    bool own = false, own2 = false; /* the parents' names followed the change */
    if (mdt < 0)
        drop_unheard(m, u);
    for (uint32_t i = 0; mdt >= 0 && i < u->leases->n && i < PROTO_MAX_LEASES; i++) {
        const struct proto_lease *l = &u->leases->l[i];
        bool is_parent = u->parent && l->ino == u->parent;
        bool is_parent2 = u->parent2 && l->ino == u->parent2;
        bool followed = false;
        struct crec *r =
            take_lease(m, (uint32_t)mdt, l, is_parent || is_parent2, u->sent_ms, &followed);
        if (is_parent) {
            parent = r;
            own = followed;
        }
        if (is_parent2) {
            parent2 = r;
            own2 = followed;
        }
        if (u->attr && l->ino == u->attr->ino)
            attr_rec = r;
        else if (r && l->has_attr && l->attr.ino == l->ino)
            set_attr(r, &l->attr);
    }
    /* What a renamed name held, if this cache knew it from before the
     * rename and the source directory's lease still stands. */
    uint64_t moved = 0;
    if (u->parent2 && u->name2 && u->name && parent && own && !u->exchange) {
        struct cname *c = *name_slot(m, u->parent, u->name, strlen(u->name));
        if (c && c->mdt == parent->mdt && c->epoch == parent->epoch)
            moved = c->child;
    }
    /* A name that now holds a known inode is stored over the old entry;
     * any other name the reply speaks of is forgotten. */
    if (parent && u->child && u->name)
        name_set(m, parent, u->name, u->child);
    else
        name_forget(m, u->parent, u->name); /* removed, or not cached */
    if (u->parent2 && u->name2) {
        /* A rename this cache followed in both directories (its own, with
         * nothing between): the source name is gone and the target holds
         * what the source held, so both stay as complete as they were.
         * Otherwise (the moved inode not known here, the target's
         * directory another MDT's, an exchange, or a rename that changed
         * nothing: two links of one file) either may miss a name now. */
        if (moved && parent2 && own2) {
            name_set(m, parent2, u->name2, moved);
        } else {
            incomplete(m, u->parent2);
            incomplete(m, u->parent);
            name_forget(m, u->parent2, u->name2);
        }
    }
    if (attr_rec)
        set_attr(attr_rec, u->attr);
    if (attr_rec && attr_rec->have_attr && u->layout)
        keep_layout(attr_rec, u->layout);
    pthread_mutex_unlock(&m->lock);
}

int mdc_reply_mdt(struct mdc *m, uint64_t instance)
{
    pthread_mutex_lock(&m->lock);
    int mdt = instance_mdt(m, instance);
    pthread_mutex_unlock(&m->lock);
    return mdt;
}

void mdc_unlinked(struct mdc *m, uint64_t parent, uint32_t mdt, const char *name, uint64_t child)
{
    int64_t now_ns = (int64_t)util_now_real_ns();
    pthread_mutex_lock(&m->lock);
    name_forget(m, parent, name);
    struct crec *r = mdc_home_find(m, child);
    if (r)
        mdc_rec_drop(m, r);
    /* The directory's times move as the MDT holding the name will move
     * them (a shard's are not the directory's); its reply brings the
     * MDT's own. */
    if ((r = mdc_rec_find(m, parent, mdt)) && r->have_attr)
        r->attr.mtime_ns = r->attr.ctime_ns = now_ns;
    pthread_mutex_unlock(&m->lock);
}

bool mdc_create_new(struct mdc *m, uint64_t parent, uint32_t mdt, const char *name,
                    const struct proto_cred *cred, uint64_t child, struct proto_attr *dir)
{
    int64_t now_ns = (int64_t)util_now_real_ns();
    bool yes = false;
    int64_t now = mdc_clock_ms();
    size_t len = strlen(name);
    pthread_mutex_lock(&m->lock);
    struct crec *p = mdc_rec_find(m, parent, mdt);
    const struct crec *pp = mdc_rec_valid(m, p, now) ? perm_of(m, p, now, false) : NULL;
    if (pp && p->complete_epoch == p->epoch && mdc_ordinary_name(name, len) &&
        proto_cred_may(cred, pp->attr.mode, pp->attr.uid, pp->attr.gid, 3)) {
        const struct cname *c = *name_slot(m, parent, name, len);
        yes = !(c && c->mdt == mdt && c->epoch == p->epoch && c->child);
        *dir = pp->attr;
    }
    if (yes) {
        name_set(m, p, name, child);
        /* The directory's times move as the MDT's will (mdc_unlinked). */
        if (p->have_attr)
            p->attr.mtime_ns = p->attr.ctime_ns = now_ns;
    }
    pthread_mutex_unlock(&m->lock);
    return yes;
}

void mdc_forget_mdt_locked(struct mdc *m, uint32_t mdt)
{
    m->xseq++;
    if (mdt < m->nchan)
        m->chan[mdt].forgot_ms = mdc_clock_ms();
    /* Freed, not only dropped: a restarted MDT numbers its generations
     * from the start again, and a record that kept the old ones would
     * refuse every new lease as older than what it heard. Its names go
     * with it (a record made again has a new epoch). */
    for (uint32_t b = 0; b < BUCKETS; b++)
        for (struct crec **p = &m->rec[b]; *p;) {
            struct crec *r = *p;
            if (r->mdt != mdt) {
                p = &r->next;
                continue;
            }
            mdc_listed_forget(m, r->ino);
            *p = r->next;
            free(r);
            m->nrec--;
        }
}

void mdc_forget_mdt(struct mdc *m, uint32_t mdt)
{
    pthread_mutex_lock(&m->lock);
    mdc_forget_mdt_locked(m, mdt);
    pthread_mutex_unlock(&m->lock);
}

/* ---- revocations heard ---- */

static void heard_revoke(struct mdc *m, uint32_t mdt, uint64_t ino, uint64_t gen)
{
    m->xseq++;
    struct crec *r = rec_get(m, ino, mdt);
    if (!r)
        return;
    if (gen > r->revoked)
        r->revoked = gen;
    if (r->gen <= gen)
        mdc_rec_drop(m, r);
}

void mdc_heard(struct mdc *m, uint32_t mdt, uint64_t instance, const uint8_t *revokes, uint32_t n,
               const uint8_t *kinds, uint32_t nkinds)
{
    if (mdt >= m->nchan)
        return;
    pthread_mutex_lock(&m->lock);
    /* Another lease table (a restarted MDT): its grant numbers start
     * again, so the write-behind grant of the old one goes too. */
    bool replaced = false;
    if (instance != m->chan[mdt].instance) {
        /* Heard again after the channel was lost (0), as it must be after
         * a restart: that MDT's records went then, and go again (none was
         * leased meanwhile: drop_unheard). Another instance where one was
         * heard without a loss between: everything, to be safe. */
        if (m->chan[mdt].instance)
            mdc_drop_all(m);
        else
            mdc_forget_mdt_locked(m, mdt);
        replaced = m->chan[mdt].instance != 0;
        m->chan[mdt].instance = instance;
    }
    uint64_t wb_revoke = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t ino = proto_le64(revokes + i * 16), gen = proto_le64(revokes + i * 16 + 8);
        if (ino == 0)
            wb_revoke = gen > wb_revoke ? gen : wb_revoke; /* the write-behind grant */
        else
            heard_revoke(m, mdt, ino, gen);
    }
    pthread_mutex_unlock(&m->lock);
    pthread_mutex_lock(&m->change_lock);
    for (uint32_t i = 0; m->changed && i < n; i++) {
        uint64_t ino = proto_le64(revokes + i * 16);
        unsigned what = i < nkinds && kinds[i] == PROTO_REVOKE_NAMES ? STRIA_REVOKED_NAMES : 0;
        if (ino)
            m->changed(ino, what, m->changed_arg);
    }
    pthread_mutex_unlock(&m->change_lock);
    /* Acknowledged (by the next poll) only once the queue is sent. */
    mdc_revoked_fn fn = __atomic_load_n(&m->revoked, __ATOMIC_ACQUIRE);
    if (replaced && fn)
        fn(m->fs, mdt, 0);
    if (wb_revoke && fn)
        fn(m->fs, mdt, wb_revoke);
}

struct mdc *mdc_create(stria_fs_t *fs, uint32_t nmdt)
{
    struct mdc *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->fs = fs;
    m->nchan = nmdt < MDC_MAX_MDTS ? nmdt : MDC_MAX_MDTS;
    for (uint32_t i = 0; i < MDC_MAX_MDTS; i++) {
        m->chan[i].m = m;
        m->chan[i].mdt = i;
    }
    pthread_mutex_init(&m->lock, NULL);
    pthread_mutex_init(&m->change_lock, NULL);
    return m;
}

void mdc_destroy(struct mdc *m)
{
    if (!m)
        return;
    mdc_drop_all(m);
    pthread_mutex_destroy(&m->change_lock);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

void mdc_on_revoke(struct mdc *m, mdc_revoked_fn fn)
{
    __atomic_store_n(&m->revoked, fn, __ATOMIC_RELEASE);
}

void mdc_on_change(struct mdc *m, mdc_changed_fn fn, void *arg)
{
    pthread_mutex_lock(&m->change_lock);
    m->changed = fn;
    m->changed_arg = arg;
    pthread_mutex_unlock(&m->change_lock);
}
