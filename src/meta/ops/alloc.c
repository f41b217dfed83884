/*
 * Allocation (alloc.h): where a new file's stripes go over the OSTs and a
 * new directory over the MDTs.
 *
 * A component that names an OST pool takes its stripes among the pool's
 * OSTs only, by the same rules. The pools come with the cluster map, so
 * a pool made (or filled) a moment ago may not have reached this MDT
 * yet: a pool the map does not show, or shows empty, makes the MDT ask
 * for a fresh map and the request wait for it (at most 2 s). A pool still
 * unknown or empty then is ignored, as Lustre's MDS ignores it, with a
 * warning: the file is placed over all OSTs and keeps the pool's name.
 */
#include "alloc.h"

#include "../../common/log.h"
#include "../../common/util.h"
#include "../../proto/layout.h"
#include "../../proto/map.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
uint64_t meta_rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* An OST below this much free space takes no new files. */
#define OST_FULL_BYTES (64ull << 20)

#define POOL_WAIT_NS  (2000000000ll)  /* for a fresh map that shows the pool */
#define POOL_AGAIN_NS (10000000000ll) /* between two asks for the same pool */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static const struct map_pool *find_pool(const struct meta_ctx *c, const char *name)
{
    for (uint32_t i = 0; i < c->npools; i++)
        if (!strcmp(c->pools[i].name, name))
            return &c->pools[i];
    return NULL;
}

/* Pool name is not in this MDT's map, or is empty there (under
 * alloc_lock): -EAGAIN while a fresh map is awaited (the request's
 * transaction runs again), 0 to place the file as if it named no pool. */
static int pool_missing(struct meta_ctx *c, const char *name, bool empty)
{
    int64_t now = (int64_t)util_now_mono_ns();
    if (c->refresh_map) {
        bool asked =
            c->pool_ask_ns && !strcmp(c->pool_asked, name) && now - c->pool_ask_ns < POOL_AGAIN_NS;
        if (!asked) {
            c->pool_ask_ns = now;
            c->pool_ask_gen = c->map_gen;
            snprintf(c->pool_asked, sizeof(c->pool_asked), "%s", name);
            c->refresh_map(c->refresh_arg);
            return -EAGAIN;
        }
        if (c->map_gen == c->pool_ask_gen && now - c->pool_ask_ns < POOL_WAIT_NS)
            return -EAGAIN;
    }
    if (!c->pool_warned_ns || now - c->pool_warned_ns >= POOL_AGAIN_NS) {
        c->pool_warned_ns = now;
        log_warn("pool %s %s: placing new files over all OSTs", name,
                 empty ? "has no OSTs" : "does not exist");
    }
    return 0;
}

/*
 * Choose count OSTs (among pool's if it names one): round-robin from a
 * rotating start while free space is balanced; once the emptiest and
 * fullest usable OSTs differ by more than 17% of the larger (Lustre's
 * qos_threshold_rr), a random draw weighted by free space. Never an
 * offline or full OST.
 */
int meta_alloc_layout(struct meta_ctx *c, int32_t count, uint32_t size, int32_t offset,
                      const char *pool, struct layout *out)
{
    uint32_t cand[META_MAX_OSTS];
    uint64_t avail[META_MAX_OSTS];
    uint32_t n = 0;
    pthread_mutex_lock(&c->alloc_lock);
    if (!c->osts_known) {
        /* Just started, before the first cluster map: wait for it
         * (run_waiting tries again, up to two seconds, then EBUSY) rather
         * than tell the client the disks are full. */
        pthread_mutex_unlock(&c->alloc_lock);
        return -EAGAIN;
    }
    const struct map_pool *p = pool && pool[0] ? find_pool(c, pool) : NULL;
    if (pool && pool[0] && (!p || !p->n)) {
        int rc = pool_missing(c, pool, p != NULL);
        if (rc) {
            pthread_mutex_unlock(&c->alloc_lock);
            return rc;
        }
        p = NULL;
    }
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < c->nost; i++) {
        if (!c->ost[i].online || c->ost[i].avail < OST_FULL_BYTES)
            continue;
        if (p && !bsearch(&c->ost[i].index, p->ost, p->n, sizeof(uint32_t), cmp_u32))
            continue;
        cand[n] = c->ost[i].index;
        avail[n] = c->ost[i].avail;
        lo = MIN(lo, avail[n]);
        hi = MAX(hi, avail[n]);
        n++;
    }
    if (n == 0) {
        uint32_t members = p ? p->n : 0;
        pthread_mutex_unlock(&c->alloc_lock);
        if (members)
            log_warn("pool %s: no OST can take a new file (none of its %u online with free "
                     "space): %s",
                     pool, members, log_err(-ENOSPC));
        else
            log_warn("no OST can take a new file (none online with free space)");
        return -ENOSPC;
    }
    uint32_t want = count < 0 ? n : (uint32_t)count;
    if (want > n)
        want = n;
    if (want > LAYOUT_MAX_STRIPES)
        want = LAYOUT_MAX_STRIPES;
    uint32_t groups[LAYOUT_MAX_STRIPES];
    bool qos = hi - lo > hi / 100 * 17 && offset < 0;
    if (!qos) {
        uint32_t start = c->rr_next % n;
        if (offset >= 0) {
            for (uint32_t i = 0; i < n; i++)
                if (cand[i] == (uint32_t)offset)
                    start = i;
        } else {
            c->rr_next += want;
        }
        for (uint32_t i = 0; i < want; i++)
            groups[i] = cand[(start + i) % n];
    } else {
        for (uint32_t i = 0; i < want; i++) {
            uint64_t total = 0;
            for (uint32_t j = i; j < n; j++)
                total += avail[j] >> 20;
            uint64_t r = total ? meta_rng_next(&c->rng) % total : 0, acc = 0;
            uint32_t pick = i;
            for (uint32_t j = i; j < n; j++) {
                acc += avail[j] >> 20;
                if (r < acc) {
                    pick = j;
                    break;
                }
            }
            uint32_t tc = cand[i];
            uint64_t ta = avail[i];
            cand[i] = cand[pick], avail[i] = avail[pick];
            cand[pick] = tc, avail[pick] = ta;
            groups[i] = cand[i];
        }
    }
    pthread_mutex_unlock(&c->alloc_lock);
    layout_make_simple(out, size, (uint16_t)want, groups);
    return 0;
}

int meta_check_stripe_args(int32_t count, uint32_t size, int32_t offset)
{
    if (count < -1 || count > LAYOUT_MAX_STRIPES || offset < -1)
        return -EINVAL;
    if (size && (size < LAYOUT_MIN_STRIPE_SIZE || size > LAYOUT_MAX_STRIPE_SIZE ||
                 size % LAYOUT_MIN_STRIPE_SIZE))
        return -EINVAL;
    return 0;
}

int meta_instantiate(struct meta_ctx *c, struct layout *l, uint64_t end)
{
    for (uint16_t i = 0; i < l->ncomp; i++) {
        struct layout_comp *k = &l->comp[i];
        if (k->start >= end || !layout_comp_pending(k))
            continue;
        if ((k->type & LAYOUT_TYPE_MASK) == LAYOUT_TYPE_MDT) {
            /* On this MDT, the file's: one stripe as large as itself. */
            k->stripe_count = 1;
            k->stripe_size = (uint32_t)k->end;
            k->groups[0] = c->mdt;
            k->type &= (uint16_t)~LAYOUT_F_PENDING;
            continue;
        }
        int32_t count = k->stripe_count == LAYOUT_COUNT_ALL ? -1
                        : k->stripe_count                   ? k->stripe_count
                                                            : c->default_count;
        uint32_t size = k->stripe_size ? k->stripe_size : c->default_size;
        int32_t offset = k->groups[0] == LAYOUT_ANY_OST ? -1 : (int32_t)k->groups[0];
        struct layout one;
        int rc = meta_alloc_layout(c, count, size, offset, k->pool, &one);
        if (rc)
            return rc;
        k->stripe_size = one.comp[0].stripe_size;
        k->stripe_count = one.comp[0].stripe_count;
        memcpy(k->groups, one.comp[0].groups, sizeof(uint32_t) * k->stripe_count);
        k->type &= (uint16_t)~LAYOUT_F_PENDING;
    }
    return 0;
}

int meta_layout_from_template(struct meta_ctx *c, const struct meta_inode *dir,
                              const struct layout *tmpl, struct layout *out)
{
    layout_copy(out, tmpl);
    /* Data-on-MDT is off on this MDT (dom_max 0): the file keeps all its
     * data on OSTs, its next component from offset 0 on, as Lustre makes
     * a file when its MDT's dom_stripesize is 0. */
    if (c->dom_max == 0 && out->ncomp > 1 &&
        (out->comp[0].type & LAYOUT_TYPE_MASK) == LAYOUT_TYPE_MDT) {
        memmove(&out->comp[0], &out->comp[1], (out->ncomp - 1u) * sizeof(out->comp[0]));
        out->ncomp--;
        out->comp[0].start = 0;
    }
    /* What the components leave to the default is the directory's (then
     * the file system's) at the time the file is made. */
    for (uint16_t i = 0; i < out->ncomp; i++) {
        struct layout_comp *k = &out->comp[i];
        k->type = (uint16_t)((k->type & (LAYOUT_TYPE_MASK | LAYOUT_F_POOL)) | LAYOUT_F_PENDING);
        if ((k->type & LAYOUT_TYPE_MASK) == LAYOUT_TYPE_MDT)
            continue; /* one stripe, on the file's MDT */
        if (!k->stripe_count && dir && dir->dcount)
            k->stripe_count = dir->dcount < 0 ? LAYOUT_COUNT_ALL : (uint16_t)dir->dcount;
        if (!k->stripe_size && dir && dir->dsize)
            k->stripe_size = dir->dsize;
    }
    int rc = layout_validate(out);
    return rc ? rc : meta_instantiate(c, out, 1);
}

/* The layout of a new file in dir: request, else the directory's default
 * (its composite template, else count, size and offset), else the file
 * system's. */
int meta_new_file_layout(struct meta_ctx *c, const struct meta_inode *dir, int32_t count,
                         uint32_t size, int32_t offset, struct layout *out)
{
    int rc = meta_check_stripe_args(count, size, offset);
    if (rc)
        return rc;
    if (count == 0 && size == 0 && offset < 0 && dir->layout.ncomp)
        return meta_layout_from_template(c, dir, &dir->layout, out);
    if (count == 0)
        count = dir->dcount ? dir->dcount : c->default_count;
    if (size == 0)
        size = dir->dsize ? dir->dsize : c->default_size;
    if (offset < 0)
        offset = dir->doffset;
    return meta_alloc_layout(c, count, size, offset, NULL, out);
}

int meta_dir_placement(struct meta_ctx *c, const struct meta_inode *parent, int32_t count,
                       int32_t start, uint64_t *dstripe, uint32_t *owner)
{
    uint32_t nmdt = __atomic_load_n(&c->nmdt, __ATOMIC_RELAXED);
    bool inherited = count == 0;
    if (inherited) {
        /* The parent's default for new subdirectories, if it has one. */
        struct proto_dstripe d = proto_ds_unpack(parent->ddefault);
        count = d.count == 0xffff ? -1 : d.count;
        if (start < 0 && d.start != 0xffff && parent->ddefault)
            start = d.start;
    }
    if (count < 0)
        count = (int32_t)nmdt;
    if (count == 0)
        count = 1;
    if ((uint32_t)count > nmdt && !inherited)
        return -EINVAL;
    if ((uint32_t)count > nmdt)
        count = (int32_t)nmdt; /* a default asks for more MDTs than exist now */
    if (start >= (int32_t)nmdt) {
        if (!inherited)
            return -EINVAL;
        start = -1;
    }
    *owner = start < 0 ? c->mdt : (uint32_t)start;
    *dstripe = 0;
    if (count > 1) {
        struct proto_dstripe d = {(uint16_t)count, (uint16_t)*owner, (uint16_t)nmdt,
                                  PROTO_DS_HASH_FNV};
        *dstripe = proto_ds_pack(d);
    }
    return 0;
}

void meta_ctx_set_osts(struct meta_ctx *ctx, const struct meta_ost *osts, uint32_t n)
{
    pthread_mutex_lock(&ctx->alloc_lock);
    ctx->nost = MIN(n, META_MAX_OSTS);
    memcpy(ctx->ost, osts, sizeof(*osts) * ctx->nost);
    ctx->osts_known = true;
    pthread_mutex_unlock(&ctx->alloc_lock);
}

static void free_pools(struct map_pool *v, uint32_t n)
{
    for (uint32_t i = 0; v && i < n; i++)
        free(v[i].ost);
    free(v);
}

int meta_ctx_set_pools(struct meta_ctx *ctx, const struct map_pool *pools, uint32_t n)
{
    struct map_pool *v = calloc(n ? n : 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        v[i] = pools[i];
        if (!(v[i].ost = malloc(sizeof(uint32_t) * (pools[i].n ? pools[i].n : 1)))) {
            free_pools(v, i);
            return -ENOMEM;
        }
        memcpy(v[i].ost, pools[i].ost, sizeof(uint32_t) * pools[i].n);
        qsort(v[i].ost, v[i].n, sizeof(uint32_t), cmp_u32);
    }
    pthread_mutex_lock(&ctx->alloc_lock);
    struct map_pool *old = ctx->pools;
    uint32_t nold = ctx->npools;
    ctx->pools = v;
    ctx->npools = n;
    ctx->map_gen++;
    pthread_mutex_unlock(&ctx->alloc_lock);
    free_pools(old, nold);
    return 0;
}

void meta_ctx_free_pools(struct meta_ctx *ctx)
{
    free_pools(ctx->pools, ctx->npools);
    ctx->pools = NULL;
    ctx->npools = 0;
}
