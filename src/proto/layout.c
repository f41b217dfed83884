/* Layout arithmetic (layout.h). */
#include "layout.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))

int layout_map(const struct layout *l, uint64_t off, uint64_t maxlen, struct layout_piece *p)
{
    for (uint16_t i = 0; i < l->ncomp; i++) {
        const struct layout_comp *c = &l->comp[i];
        if (off < c->start || off >= c->end)
            continue;
        if (c->type & LAYOUT_F_PENDING) {
            /* No objects yet: the rest of the component is a hole. */
            uint64_t len = c->end - off;
            p->file_off = off;
            p->obj_off = 0;
            p->len = (uint32_t)MIN(MIN(len, maxlen), (uint64_t)UINT32_MAX);
            p->comp = p->ocomp = i;
            p->stripe = 0;
            p->group = LAYOUT_ANY_OST;
            return -ENODATA;
        }
        if ((c->type & LAYOUT_TYPE_MASK) == LAYOUT_TYPE_MDT) {
            uint64_t len = c->end - off;
            p->file_off = off;
            p->obj_off = off - c->start;
            p->len = (uint32_t)MIN(MIN(len, maxlen), (uint64_t)UINT32_MAX);
            p->comp = p->ocomp = i;
            p->stripe = 0;
            p->group = c->groups[0];
            return LAYOUT_ON_MDT;
        }
        uint64_t rel = off - c->start;
        uint64_t unit = rel / c->stripe_size;
        uint64_t in_unit = rel % c->stripe_size;
        uint64_t len = c->stripe_size - in_unit;
        if (len > c->end - off)
            len = c->end - off;
        if (len > maxlen)
            len = maxlen;
        p->file_off = off;
        p->comp = i;
        p->ocomp = layout_obj_comp(l, i);
        p->stripe = (uint16_t)(unit % c->stripe_count);
        p->obj_off = (unit / c->stripe_count) * c->stripe_size + in_unit;
        p->len = (uint32_t)len;
        p->group = c->groups[p->stripe];
        return 0;
    }
    return -ERANGE;
}

uint64_t layout_object_size(const struct layout *l, uint16_t comp, uint16_t stripe, uint64_t size)
{
    if (comp >= l->ncomp)
        return 0;
    const struct layout_comp *c = &l->comp[comp];
    if (size <= c->start || stripe >= c->stripe_count || (c->type & LAYOUT_F_PENDING) ||
        (c->type & LAYOUT_TYPE_MASK) != LAYOUT_TYPE_OST)
        return 0;
    uint64_t rel_end = (size < c->end ? size : c->end) - c->start;
    uint64_t full = rel_end / c->stripe_size, rem = rel_end % c->stripe_size;
    uint64_t obj = (full / c->stripe_count) * c->stripe_size;
    uint64_t last = full % c->stripe_count;
    if (stripe < last)
        obj += c->stripe_size;
    else if (stripe == last)
        obj += rem;
    return obj;
}

uint64_t layout_stripe_bytes_before(const struct layout_comp *c, uint16_t s, uint64_t rel)
{
    uint64_t unit = rel / c->stripe_size, row = unit / c->stripe_count;
    uint64_t pos = unit % c->stripe_count;
    if (pos > s)
        return (row + 1) * c->stripe_size;
    if (pos == s)
        return row * c->stripe_size + rel % c->stripe_size;
    return row * c->stripe_size;
}

bool layout_pool_name_ok(const char *name, bool empty_ok)
{
    size_t n = strnlen(name, LAYOUT_POOL_MAX + 1);
    if (n > LAYOUT_POOL_MAX || (!n && !empty_ok))
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-' || ch == '.'))
            return false;
    }
    return true;
}

int layout_validate(const struct layout *l)
{
    if (l->ncomp == 0 || l->ncomp > LAYOUT_MAX_COMP)
        return -EINVAL;
    uint64_t expect = 0;
    for (uint16_t i = 0; i < l->ncomp; i++) {
        const struct layout_comp *c = &l->comp[i];
        uint16_t flags = (uint16_t)(LAYOUT_F_PENDING | LAYOUT_F_POOL | LAYOUT_GEN_MASK |
                                    (i ? 0u : LAYOUT_F_RELEASED));
        uint16_t type = c->type & LAYOUT_TYPE_MASK;
        if (c->start != expect || c->end <= c->start || (c->type & ~flags & ~LAYOUT_TYPE_MASK))
            return -EINVAL;
        if (type == LAYOUT_TYPE_MDT) {
            /* Data-on-MDT: the first component only, one stripe as large
             * as itself (0 in a template: filled in), no pool, no EOF. */
            bool pend = c->type & LAYOUT_F_PENDING;
            if (i || c->end > LAYOUT_DOM_MAX || c->end % LAYOUT_MIN_STRIPE_SIZE || c->pool[0] ||
                (c->type & LAYOUT_F_RELEASED) || c->stripe_count > 1 ||
                (!pend && (c->stripe_count != 1 || c->stripe_size != c->end)) ||
                (pend && c->stripe_size && c->stripe_size != c->end))
                return -EINVAL;
            expect = c->end;
            continue;
        }
        if (type != LAYOUT_TYPE_OST)
            return -EINVAL;
        /* A component boundary inside a stripe unit would leave a unit
         * half in each: ends fall on 64 KiB as Lustre's do. */
        if (c->end != LAYOUT_END_EOF && c->end % LAYOUT_MIN_STRIPE_SIZE)
            return -EINVAL;
        bool pending = c->type & LAYOUT_F_PENDING;
        if (pending ? (c->stripe_count > LAYOUT_MAX_STRIPES && c->stripe_count != LAYOUT_COUNT_ALL)
                    : (c->stripe_count == 0 || c->stripe_count > LAYOUT_MAX_STRIPES))
            return -EINVAL;
        if ((!pending || c->stripe_size) &&
            (c->stripe_size < LAYOUT_MIN_STRIPE_SIZE || c->stripe_size > LAYOUT_MAX_STRIPE_SIZE ||
             c->stripe_size % LAYOUT_MIN_STRIPE_SIZE))
            return -EINVAL;
        if (!layout_pool_name_ok(c->pool, true))
            return -EINVAL;
        expect = c->end;
    }
    return expect == LAYOUT_END_EOF ? 0 : -EINVAL;
}

void layout_fill_orphan(struct layout *l)
{
    /* The first instantiated component on OSTs; with none (a file whose
     * only instantiated component is on its MDT), OSTs 0, 1, ... */
    static const struct layout_comp first_osts = {
        .stripe_size = LAYOUT_MIN_STRIPE_SIZE * 16, .stripe_count = 1, .groups = {0}};
    const struct layout_comp *z = &first_osts;
    for (uint16_t i = 0; i < l->ncomp && z == &first_osts; i++)
        if (!layout_comp_pending(&l->comp[i]) &&
            (l->comp[i].type & LAYOUT_TYPE_MASK) == LAYOUT_TYPE_OST)
            z = &l->comp[i];
    for (uint16_t i = 1; i < l->ncomp; i++) {
        struct layout_comp *c = &l->comp[i];
        if (!layout_comp_pending(c))
            continue;
        uint16_t n = c->stripe_count && c->stripe_count <= z->stripe_count ? c->stripe_count
                                                                           : z->stripe_count;
        if (z == &first_osts)
            n = c->stripe_count && c->stripe_count <= LAYOUT_MAX_STRIPES ? c->stripe_count : 1;
        if (!c->stripe_size)
            c->stripe_size = z->stripe_size;
        c->stripe_count = n;
        for (uint16_t s = 0; s < n; s++)
            c->groups[s] = z == &first_osts ? s : z->groups[s % z->stripe_count];
        c->type &= (uint16_t)~LAYOUT_F_PENDING;
    }
}

int layout_first_pending(const struct layout *l, uint64_t end)
{
    for (uint16_t i = 0; i < l->ncomp; i++)
        if (l->comp[i].start < end && (l->comp[i].type & LAYOUT_F_PENDING))
            return i;
    return -1;
}

void layout_copy(struct layout *dst, const struct layout *src)
{
    dst->ncomp = src->ncomp <= LAYOUT_MAX_COMP ? src->ncomp : LAYOUT_MAX_COMP;
    for (uint16_t i = 0; i < dst->ncomp; i++) {
        const struct layout_comp *c = &src->comp[i];
        struct layout_comp *d = &dst->comp[i];
        bool pending = c->type & LAYOUT_F_PENDING;
        uint16_t n = c->stripe_count <= LAYOUT_MAX_STRIPES ? c->stripe_count : LAYOUT_MAX_STRIPES;
        d->start = c->start;
        d->end = c->end;
        d->stripe_size = c->stripe_size;
        d->stripe_count = pending ? c->stripe_count : n;
        d->type = c->type;
        memcpy(d->pool, c->pool, sizeof(d->pool));
        d->pool[LAYOUT_POOL_MAX] = 0;
        memcpy(d->groups, c->groups, sizeof(uint32_t) * (pending ? 1 : n));
    }
}

void layout_make_simple(struct layout *l, uint32_t stripe_size, uint16_t count,
                        const uint32_t *groups)
{
    /* Only what the layout uses is written: it is 4 KiB at full size. */
    l->ncomp = 1;
    l->comp[0].start = 0;
    l->comp[0].end = LAYOUT_END_EOF;
    l->comp[0].stripe_size = stripe_size;
    l->comp[0].stripe_count = count;
    l->comp[0].type = LAYOUT_TYPE_OST;
    memset(l->comp[0].pool, 0, sizeof(l->comp[0].pool));
    memcpy(l->comp[0].groups, groups, sizeof(uint32_t) * count);
}

bool layout_equal(const struct layout *a, const struct layout *b)
{
    if (a->ncomp != b->ncomp)
        return false;
    for (uint16_t i = 0; i < a->ncomp; i++) {
        const struct layout_comp *x = &a->comp[i], *y = &b->comp[i];
        uint16_t n = layout_comp_pending(x) ? 1 : x->stripe_count;
        if (x->start != y->start || x->end != y->end || x->stripe_size != y->stripe_size ||
            x->stripe_count != y->stripe_count || x->type != y->type ||
            strncmp(x->pool, y->pool, sizeof(x->pool)) ||
            memcmp(x->groups, y->groups, n * sizeof(x->groups[0])))
            return false;
    }
    return true;
}
