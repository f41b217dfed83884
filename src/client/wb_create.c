/*
 * Files created behind (wb.h; docs/architecture.md, "Files created
 * behind"): the ranges of inode numbers the MDTs handed this client, the
 * templates of the directories it created in under a grant, and the
 * decision to create a file here, under wb.c's lock.
 */
#include "wb_int.h"

#include "../common/util.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

uint8_t wb_want_inos(stria_fs_t *fs, uint32_t mdt)
{
    struct wb *w = fs->wb;
    if (!w || mdt >= MDC_MAX_MDTS)
        return 0;
    pthread_mutex_lock(&w->lock);
    struct wb_grant *g = &w->g[mdt];
    bool want = !w->no_create && !g->asking &&
                (g->unsure || (!g->rng[1].lo && g->rng[0].n - g->rng[0].used < WB_INOS_LOW));
    g->asking = g->asking || want;
    pthread_mutex_unlock(&w->lock);
    return want ? PROTO_OPEN_WANT_INOS | PROTO_OPEN_INOS_IDLE : 0;
}

void wb_inos(stria_fs_t *fs, uint32_t mdt, uint64_t lo, uint32_t n)
{
    static const struct wb_range none;
    struct wb *w = fs->wb;
    if (!w || mdt >= MDC_MAX_MDTS)
        return;
    pthread_mutex_lock(&w->lock);
    struct wb_grant *g = &w->g[mdt];
    struct wb_range fresh = {lo, n, 0};
    g->asking = false;
    g->rng_ms = mdc_clock_ms();
    if (!lo || !n || proto_ino_mdt(lo) != mdt) {
        g->unsure = true;
    } else if (g->unsure) {
        /* Nothing of the older ranges is on its way (an ask waits for
         * every create first), and the MDT may no longer know them. */
        g->rng[0] = fresh;
        g->rng[1] = none;
        g->unsure = false;
    } else {
        /* The MDT now keeps this one and the last before it. */
        if (g->rng[1].lo || g->rng[0].used >= g->rng[0].n)
            g->rng[0] = g->rng[1];
        if (g->rng[0].used < g->rng[0].n) {
            g->rng[1] = fresh;
        } else {
            g->rng[0] = fresh;
            g->rng[1] = none;
        }
    }
    pthread_mutex_unlock(&w->lock);
}

/* The template of parent on mdt (NULL: none), or with make the place for
 * it: its own, else an empty or the oldest of its set (lock held). */
static struct wb_tmpl *tmpl_find(struct wb *w, uint64_t parent, uint32_t mdt, bool make)
{
    uint64_t key[2] = {parent, mdt};
    struct wb_tmpl *set = &w->tmpl[util_hash64(key, sizeof(key)) % (WB_TMPLS / WB_WAYS) * WB_WAYS];
    struct wb_tmpl *old = &set[0];
    for (int i = 0; i < WB_WAYS; i++) {
        if (set[i].gen && set[i].parent == parent && set[i].mdt == mdt) {
            set[i].used = ++w->tmpl_clock;
            return &set[i];
        }
        if (set[i].used < old->used)
            old = &set[i];
    }
    return make ? old : NULL;
}

void wb_template(stria_fs_t *fs, uint32_t mdt, uint64_t parent, uint64_t grant, uint64_t epoch,
                 const struct layout *l)
{
    struct wb *w = fs->wb;
    if (!w || mdt >= MDC_MAX_MDTS || !grant)
        return;
    pthread_mutex_lock(&w->lock);
    uint32_t slot = WB_LAYOUTS;
    for (uint32_t k = 0; k < WB_LAYOUTS && slot == WB_LAYOUTS; k++)
        if (w->layouts[k].gen && layout_equal(&w->layouts[k].l, l))
            slot = k;
    if (slot == WB_LAYOUTS) {
        /* A new one takes the place of the oldest: its directories' next
         * creates go the ordinary way. */
        slot = w->layout_next++ % WB_LAYOUTS;
        w->layouts[slot].gen = ++w->layout_gen;
        layout_copy(&w->layouts[slot].l, l);
    }
    *tmpl_find(w, parent, mdt, true) = (struct wb_tmpl){.parent = parent,
                                                        .grant = grant,
                                                        .epoch = epoch,
                                                        .gen = w->layouts[slot].gen,
                                                        .used = ++w->tmpl_clock,
                                                        .mdt = mdt,
                                                        .slot = slot};
    pthread_mutex_unlock(&w->lock);
}

bool wb_tmpl_dir(stria_fs_t *fs, uint64_t ino)
{
    struct wb *w = fs->wb;
    bool yes = false;
    pthread_mutex_lock(&w->lock);
    for (int i = 0; i < WB_TMPLS && !yes; i++)
        yes = w->tmpl[i].parent == ino;
    pthread_mutex_unlock(&w->lock);
    return yes;
}

bool wb_create_begin(stria_fs_t *fs, uint32_t mdt, uint64_t parent, const char *name, uint64_t *ino,
                     struct layout *l, uint64_t *grant)
{
    struct wb *w = fs->wb;
    if (!w || mdt >= MDC_MAX_MDTS)
        return false;
    uint64_t epoch = atomic_load(&fs->ns_epoch);
    pthread_mutex_lock(&w->lock);
    struct wb_grant *g = &w->g[mdt];
    const struct wb_tmpl *t = tmpl_find(w, parent, mdt, false);
    if (t && w->layouts[t->slot].gen != t->gen)
        t = NULL;
    if (g->rng[0].used >= g->rng[0].n && g->rng[1].lo) {
        g->rng[0] = g->rng[1];
        g->rng[1] = (struct wb_range){0};
    }
    /* Unused for long, the MDT may have dropped them: the next ask's
     * range is the only one used, as after an ask without answer. */
    int64_t now = mdc_clock_ms();
    if (g->rng[0].lo && now - g->rng_ms > WB_RANGE_IDLE_MS)
        g->unsure = true;
    /* Unlinks queued go by another queue: a create of the same name
     * behind them could reach the MDT first. */
    if (w->stop || w->no_create || w->unlinking[wb_name_slot(parent, name)] || g->unsure || !t ||
        !wb_held(w, mdt, now) || t->grant != g->id || t->epoch != epoch ||
        g->rng[0].used >= g->rng[0].n) {
        pthread_mutex_unlock(&w->lock);
        return false;
    }
    *ino = g->rng[0].lo + g->rng[0].used++;
    g->rng_ms = now;
    layout_copy(l, &w->layouts[t->slot].l);
    *grant = g->id;
    return true; /* locked until wb_behind_end */
}

void wb_create_count(stria_fs_t *fs, enum wb_create_what what)
{
    struct wb *w = fs->wb;
    if (!w)
        return;
    uint64_t *n = what == WB_CREATE_MADE     ? &w->stats.created
                  : what == WB_CREATE_FAILED ? &w->stats.create_failed
                                             : &w->stats.create_differed;
    __atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
}

void wb_set_create(stria_fs_t *fs, bool on)
{
    struct wb *w = fs->wb;
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->no_create = !on;
    pthread_mutex_unlock(&w->lock);
}
