/*
 * Layout arithmetic: which object of which target holds a byte of a file.
 * Pure functions over struct layout (proto.h); no I/O.
 *
 * Within a component [start, end) of stripe size S and count C, file offset
 * off falls in stripe unit u = (off - start) / S, stored by stripe u % C at
 * object offset (u / C) * S + (off - start) % S. Objects of different
 * components are distinct, so components never share object bytes.
 */
#ifndef STRIA_LAYOUT_H
#define STRIA_LAYOUT_H

#include "proto.h"

/* One contiguous piece of a file range, inside one stripe unit. */
struct layout_piece {
    uint64_t file_off; /* where the piece starts in the file */
    uint64_t obj_off;  /* where it starts in its object */
    uint32_t len;
    uint16_t comp;  /* the component's index */
    uint16_t ocomp; /* and its objects' component id (layout_obj_comp) */
    uint16_t stripe;
    uint32_t group; /* target group holding the object */
};

/* Map one file offset. Returns 0 and fills p (len = bytes to the end of the
 * stripe unit or component, capped at maxlen); LAYOUT_ON_MDT when off is in
 * a Data-on-MDT component (p's group is the MDT, obj_off the offset in the
 * component, len to its end); -ENODATA when off is in a pending component
 * (a hole: p's file_off, len and comp say how far, its group is
 * LAYOUT_ANY_OST); -ERANGE if no component covers off. */
#define LAYOUT_ON_MDT 1
int layout_map(const struct layout *l, uint64_t off, uint64_t maxlen, struct layout_piece *p);

/* Size object (comp, stripe) must have for the file to be size bytes long. */
uint64_t layout_object_size(const struct layout *l, uint16_t comp, uint16_t stripe, uint64_t size);

/* How many bytes of stripe s lie before offset rel (relative to the
 * component's start): the object offset at which file byte rel, or the
 * next byte of stripe s after it, is stored. Turns a file range into one
 * object extent per stripe without walking stripe units. */
uint64_t layout_stripe_bytes_before(const struct layout_comp *c, uint16_t s, uint64_t rel);

/* Check a layout is well formed: components contiguous from 0, the last
 * open-ended, ends and sizes multiples of 64 KiB, counts within bounds
 * (a pending component's may be 0 or LAYOUT_COUNT_ALL, its size 0). */
int layout_validate(const struct layout *l);

/* Whether name is a pool name (1 to LAYOUT_POOL_MAX of [A-Za-z0-9_.-];
 * empty_ok: or none). */
bool layout_pool_name_ok(const char *name, bool empty_ok);

/* The first pending component that starts before end (a write reaching
 * end needs it instantiated), or -1. */
int layout_first_pending(const struct layout *l, uint64_t end);
/* A file whose last link went while a handle keeps it open can no longer
 * ask its MDT to instantiate: its pending components take the OSTs of its
 * first (as many as they ask for, at most as many as it has), by a rule
 * the handle and the destroy at its last close both follow. */
void layout_fill_orphan(struct layout *l);
static inline bool layout_comp_pending(const struct layout_comp *c)
{
    return (c->type & LAYOUT_F_PENDING) != 0;
}
/* The groups of c a layout holds (and the wire carries): its stripes',
 * or when it is pending the first OST it asks for. */
static inline uint16_t layout_comp_groups(const struct layout_comp *c)
{
    return layout_comp_pending(c) ? 1 : c->stripe_count;
}
/* How many bytes of l's file its MDT keeps (a first component of type
 * mdt, Data-on-MDT), 0 if none. */
static inline uint64_t layout_dom_size(const struct layout *l)
{
    return l->ncomp && (l->comp[0].type & LAYOUT_TYPE_MASK) == LAYOUT_TYPE_MDT ? l->comp[0].end : 0;
}

static inline uint16_t layout_comp_gen(const struct layout_comp *c)
{
    return (uint16_t)((c->type & LAYOUT_GEN_MASK) >> LAYOUT_GEN_SHIFT);
}
static inline void layout_comp_set_gen(struct layout_comp *c, uint16_t gen)
{
    c->type =
        (uint16_t)((c->type & ~LAYOUT_GEN_MASK) | ((gen << LAYOUT_GEN_SHIFT) & LAYOUT_GEN_MASK));
}
/* The id that names the objects of component ci of l on the OSTs. */
static inline uint16_t layout_obj_comp(const struct layout *l, uint16_t ci)
{
    return (uint16_t)(ci + LAYOUT_MAX_COMP * layout_comp_gen(&l->comp[ci]));
}

/* Whether a and b are the same layout (every field a component uses). */
bool layout_equal(const struct layout *a, const struct layout *b);

/* dst = src, copying only the components and groups src uses (struct
 * layout is 4 KiB at full size; assignment copies all of it). */
void layout_copy(struct layout *dst, const struct layout *src);

/* A one-component layout over groups[0..count). */
void layout_make_simple(struct layout *l, uint32_t stripe_size, uint16_t count,
                        const uint32_t *groups);

/* Whether l is a released file's (LAYOUT_F_RELEASED): its data is in S3. */
static inline bool layout_released(const struct layout *l)
{
    return l->ncomp && (l->comp[0].type & LAYOUT_F_RELEASED);
}
static inline void layout_set_released(struct layout *l, bool on)
{
    if (!l->ncomp)
        return;
    if (on)
        l->comp[0].type |= LAYOUT_F_RELEASED;
    else
        l->comp[0].type &= (uint16_t)~LAYOUT_F_RELEASED;
}

#define LAYOUT_MIN_STRIPE_SIZE (64u << 10)
#define LAYOUT_MAX_STRIPE_SIZE (1u << 30)

#endif
