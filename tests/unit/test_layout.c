/*
 * Unit tests of the striping arithmetic (layout.h).
 *
 * Getting this wrong silently corrupts files: two file bytes sharing one
 * object byte, or a byte read from a different place than it was written.
 * So the arithmetic is checked against a deliberately naive model that
 * walks the file one stripe unit at a time, deals units round-robin to the
 * stripes of each component and appends each unit to its object. Offsets
 * too large to walk to are checked through the periodicity of that model:
 * moving one full row (count x size bytes) further into a component lands
 * on the same stripe, one stripe unit further into its object.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include "proto/layout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define K64 (64u << 10)
#define MIB (1u << 20)

/* ---- the reference model ---------------------------------------------- */

struct ref_unit {
    uint64_t start, end; /* file bytes [start, end) */
    uint16_t comp, stripe;
    uint64_t obj_start; /* where start lands in the object */
};

struct ref_model {
    struct ref_unit u[512];
    size_t n;
    uint64_t horizon; /* every byte below it is modelled */
};

/* Walk the file from 0 in stripe units until horizon. */
static void ref_build(const struct layout *l, uint64_t horizon, struct ref_model *r)
{
    static uint64_t obj_len[LAYOUT_MAX_COMP][LAYOUT_MAX_STRIPES];
    memset(obj_len, 0, sizeof(obj_len));
    r->n = 0;
    r->horizon = 0;
    for (uint16_t i = 0; i < l->ncomp; i++) {
        const struct layout_comp *c = &l->comp[i];
        uint16_t next = 0;
        for (uint64_t at = c->start; at < c->end && at < horizon;) {
            assert_true(r->n < sizeof(r->u) / sizeof(r->u[0]));
            struct ref_unit *u = &r->u[r->n++];
            u->start = at;
            u->end = c->end - at < c->stripe_size ? c->end : at + c->stripe_size;
            u->comp = i;
            u->stripe = next;
            u->obj_start = obj_len[i][next];
            obj_len[i][next] += u->end - u->start;
            next = (uint16_t)((next + 1) % c->stripe_count);
            at = u->end;
            r->horizon = at;
        }
    }
}

static const struct ref_unit *ref_find(const struct ref_model *r, uint64_t off)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->u[mid].end <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    assert_true(lo < r->n && r->u[lo].start <= off && off < r->u[lo].end);
    return &r->u[lo];
}

/* Bytes of the file [0, size) that land on object (comp, stripe). */
static uint64_t ref_object_size(const struct ref_model *r, uint16_t comp, uint16_t stripe,
                                uint64_t size)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct ref_unit *u = &r->u[i];
        if (u->comp == comp && u->stripe == stripe && u->start < size)
            sum += (size < u->end ? size : u->end) - u->start;
    }
    return sum;
}

/* ---- the shapes under test -------------------------------------------- */

static const uint32_t stripe_sizes[] = {K64, MIB, 4 * MIB};

/*
 * ncomp components; component k has its own size and count derived from
 * (size_idx, count) so neighbours differ. Bounded components hold a couple
 * of full rows plus, for some, a partial stripe unit at the end, so both
 * aligned and unaligned component boundaries are covered.
 */
static void make_shape(struct layout *l, int ncomp, int size_idx, int count)
{
    memset(l, 0, sizeof(*l));
    l->ncomp = (uint16_t)ncomp;
    uint64_t start = 0;
    for (int k = 0; k < ncomp; k++) {
        struct layout_comp *c = &l->comp[k];
        c->start = start;
        c->stripe_size = stripe_sizes[(size_idx + k) % 3];
        c->stripe_count = (uint16_t)((count - 1 + 3 * k) % 8 + 1);
        c->type = LAYOUT_TYPE_OST;
        for (uint16_t s = 0; s < c->stripe_count; s++)
            c->groups[s] = 100u * (uint32_t)(k + 1) + 7u * s;
        if (k + 1 == ncomp) {
            c->end = LAYOUT_END_EOF;
        } else {
            uint64_t extra = k % 2 == 0 ? (c->stripe_size > K64 ? c->stripe_size / 2 : 0) : 3 * K64;
            c->end = start + 2ull * c->stripe_size * c->stripe_count + extra;
        }
        start = c->end;
    }
}

/* Model three rows into the open-ended component, plus a bit. */
static uint64_t shape_horizon(const struct layout *l)
{
    const struct layout_comp *c = &l->comp[l->ncomp - 1];
    return c->start + 3ull * c->stripe_size * c->stripe_count + 12345;
}

#define FOR_EACH_SHAPE(ncomp, si, count)                                                           \
    for (int ncomp = 1; ncomp <= 3; ncomp++)                                                       \
        for (int si = 0; si < 3; si++)                                                             \
            for (int count = 1; count <= 8; count++)

static void check_one(const struct layout *l, const struct ref_model *r, uint64_t off,
                      uint64_t maxlen)
{
    const struct ref_unit *u = ref_find(r, off);
    struct layout_piece p;
    memset(&p, 0xcc, sizeof(p));
    int rc = layout_map(l, off, maxlen, &p);
    uint64_t want_len = u->end - off < maxlen ? u->end - off : maxlen;
    uint64_t want_obj = u->obj_start + (off - u->start);
    if (rc || p.file_off != off || p.comp != u->comp || p.stripe != u->stripe ||
        p.obj_off != want_obj || p.len != want_len || p.group != l->comp[u->comp].groups[u->stripe])
        fail_msg("off %llu maxlen %llu: rc %d comp %u stripe %u obj %llu len %u; want comp %u "
                 "stripe %u obj %llu len %llu",
                 (unsigned long long)off, (unsigned long long)maxlen, rc, p.comp, p.stripe,
                 (unsigned long long)p.obj_off, p.len, u->comp, u->stripe,
                 (unsigned long long)want_obj, (unsigned long long)want_len);
}

/* ---- tests ------------------------------------------------------------ */

static void test_map_matches_model(void **state)
{
    (void)state;
    static struct layout l;
    static struct ref_model r;
    rng_seed(0x1a7017);
    FOR_EACH_SHAPE(ncomp, si, count)
    {
        make_shape(&l, ncomp, si, count);
        assert_int_equal(layout_validate(&l), 0);
        ref_build(&l, shape_horizon(&l), &r);

        /* Both edges and the middle of every stripe unit... */
        for (size_t i = 0; i < r.n; i++) {
            const struct ref_unit *u = &r.u[i];
            const uint64_t offs[] = {u->start, u->start + 1, (u->start + u->end) / 2, u->end - 1};
            for (size_t k = 0; k < 4; k++) {
                check_one(&l, &r, offs[k], UINT64_MAX);
                check_one(&l, &r, offs[k], 1);
                check_one(&l, &r, offs[k], 1 + rng_below(2 * (u->end - u->start)));
            }
        }
        /* ...every component boundary and its neighbours... */
        for (int k = 1; k < ncomp; k++) {
            uint64_t b = l.comp[k].start;
            check_one(&l, &r, b - 1, UINT64_MAX);
            check_one(&l, &r, b, UINT64_MAX);
            check_one(&l, &r, b + 1, UINT64_MAX);
        }
        /* ...and anywhere. */
        for (int k = 0; k < 300; k++)
            check_one(&l, &r, rng_below(r.horizon), 1 + rng_below(8ull * MIB));
    }
}

/* Far into the open-ended component, including its very last byte. */
static void test_map_far_offsets(void **state)
{
    (void)state;
    static struct layout l;
    static struct ref_model r;
    FOR_EACH_SHAPE(ncomp, si, count)
    {
        make_shape(&l, ncomp, si, count);
        const struct layout_comp *c = &l.comp[ncomp - 1];
        uint64_t row = (uint64_t)c->stripe_size * c->stripe_count;
        ref_build(&l, c->start + row, &r);

        const uint64_t offs[] = {LAYOUT_END_EOF - 1, LAYOUT_END_EOF - 2, 1ull << 63,
                                 (1ull << 50) + 4095, c->start + 1000 * row + 17};
        for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
            uint64_t off = offs[k], rel = off - c->start;
            /* The same position in the first row, then whole rows further. */
            const struct ref_unit *u = ref_find(&r, c->start + rel % row);
            uint64_t in_unit = c->start + rel % row - u->start;
            uint64_t want_obj = (rel / row) * c->stripe_size + u->obj_start + in_unit;
            uint64_t want_len = u->end - u->start - in_unit;
            if (want_len > LAYOUT_END_EOF - off)
                want_len = LAYOUT_END_EOF - off;

            struct layout_piece p;
            assert_int_equal(layout_map(&l, off, UINT64_MAX, &p), 0);
            assert_int_equal(p.comp, ncomp - 1);
            assert_int_equal(p.stripe, u->stripe);
            assert_int_equal(p.obj_off, want_obj);
            assert_int_equal(p.len, want_len);
            assert_int_equal(p.group, c->groups[u->stripe]);
        }
        /* The last byte of a file is at EOF - 1; EOF itself is not a byte. */
        struct layout_piece p;
        assert_int_equal(layout_map(&l, LAYOUT_END_EOF - 1, UINT64_MAX, &p), 0);
        assert_int_equal(p.len, 1);
        assert_int_equal(layout_map(&l, LAYOUT_END_EOF, UINT64_MAX, &p), -ERANGE);
    }
}

struct piece_rec {
    uint16_t comp, stripe;
    uint64_t obj_off, len, file_off;
};

static int piece_cmp(const void *a, const void *b)
{
    const struct piece_rec *x = a, *y = b;
    if (x->comp != y->comp)
        return x->comp < y->comp ? -1 : 1;
    if (x->stripe != y->stripe)
        return x->stripe < y->stripe ? -1 : 1;
    if (x->obj_off != y->obj_off)
        return x->obj_off < y->obj_off ? -1 : 1;
    return 0;
}

/*
 * Map [from, to) the way the client does I/O: piece after piece, each
 * capped at what is left (or at chunk bytes). The pieces must tile the
 * range exactly, each must agree with the model at both ends, and no two
 * may share an object byte.
 */
static void cover_range(const struct layout *l, const struct ref_model *r, uint64_t from,
                        uint64_t to, uint64_t chunk)
{
    static struct piece_rec *rec;
    static size_t cap;
    size_t n = 0;
    uint64_t off = from;
    while (off < to) {
        uint64_t want = to - off < chunk ? to - off : chunk;
        struct layout_piece p;
        assert_int_equal(layout_map(l, off, want, &p), 0);
        assert_int_equal(p.file_off, off);
        assert_true(p.len > 0 && p.len <= want);
        /* Both ends of the piece sit in one stripe unit, contiguously. */
        const struct ref_unit *a = ref_find(r, off), *b = ref_find(r, off + p.len - 1);
        assert_ptr_equal(a, b);
        assert_int_equal(p.obj_off, a->obj_start + (off - a->start));
        assert_int_equal(p.comp, a->comp);
        assert_int_equal(p.stripe, a->stripe);
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            rec = realloc(rec, cap * sizeof(*rec));
            assert_non_null(rec);
        }
        rec[n++] = (struct piece_rec){p.comp, p.stripe, p.obj_off, p.len, off};
        off += p.len;
    }
    assert_int_equal(off, to);

    qsort(rec, n, sizeof(rec[0]), piece_cmp);
    for (size_t i = 1; i < n; i++) {
        const struct piece_rec *x = &rec[i - 1], *y = &rec[i];
        if (x->comp == y->comp && x->stripe == y->stripe && x->obj_off + x->len > y->obj_off)
            fail_msg("file bytes at %llu and %llu share object (%u, %u) byte %llu",
                     (unsigned long long)x->file_off, (unsigned long long)y->file_off, y->comp,
                     y->stripe, (unsigned long long)y->obj_off);
    }
}

static void test_range_covered_once(void **state)
{
    (void)state;
    static struct layout l;
    static struct ref_model r;
    rng_seed(0xc0fe);
    FOR_EACH_SHAPE(ncomp, si, count)
    {
        make_shape(&l, ncomp, si, count);
        ref_build(&l, shape_horizon(&l), &r);
        cover_range(&l, &r, 0, r.horizon, UINT64_MAX);
        cover_range(&l, &r, 0, r.horizon, 3 * K64 + 4097);
        for (int k = 0; k < 20; k++) {
            uint64_t a = rng_below(r.horizon), b = a + 1 + rng_below(r.horizon - a);
            cover_range(&l, &r, a, b, k % 2 ? UINT64_MAX : 4096 + rng_below(2 * MIB));
        }
        /* A range straddling each component boundary. */
        for (int k = 1; k < ncomp; k++)
            cover_range(&l, &r, l.comp[k].start - 1, l.comp[k].start + 1, UINT64_MAX);
    }
}

static void check_sizes(const struct layout *l, const struct ref_model *r, uint64_t size)
{
    for (uint16_t k = 0; k < l->ncomp; k++) {
        for (uint16_t s = 0; s < l->comp[k].stripe_count; s++) {
            uint64_t got = layout_object_size(l, k, s, size), want = ref_object_size(r, k, s, size);
            if (got != want)
                fail_msg("size %llu: object (%u, %u) is %llu bytes, want %llu",
                         (unsigned long long)size, k, s, (unsigned long long)got,
                         (unsigned long long)want);
        }
        /* Stripes past the count hold nothing. */
        assert_int_equal(layout_object_size(l, k, l->comp[k].stripe_count, size), 0);
    }
    assert_int_equal(layout_object_size(l, l->ncomp, 0, size), 0);
}

static void test_object_size_matches_model(void **state)
{
    (void)state;
    static struct layout l;
    static struct ref_model r;
    rng_seed(0x0b1ec7);
    FOR_EACH_SHAPE(ncomp, si, count)
    {
        make_shape(&l, ncomp, si, count);
        ref_build(&l, shape_horizon(&l), &r);
        check_sizes(&l, &r, 0);
        check_sizes(&l, &r, 1);
        for (size_t i = 0; i < r.n; i++) {
            check_sizes(&l, &r, r.u[i].start + 1);
            check_sizes(&l, &r, (r.u[i].start + r.u[i].end) / 2);
            check_sizes(&l, &r, r.u[i].end - 1);
            check_sizes(&l, &r, r.u[i].end);
        }
        for (int k = 0; k < 100; k++)
            check_sizes(&l, &r, rng_below(r.horizon + 1));
    }
}

/* File sizes far past anything the model can walk, via whole rows. */
static void test_object_size_far(void **state)
{
    (void)state;
    static struct layout l;
    static struct ref_model r;
    FOR_EACH_SHAPE(ncomp, si, count)
    {
        make_shape(&l, ncomp, si, count);
        uint16_t last = (uint16_t)(ncomp - 1);
        const struct layout_comp *c = &l.comp[last];
        uint64_t row = (uint64_t)c->stripe_size * c->stripe_count;
        ref_build(&l, c->start + row, &r);
        const uint64_t sizes[] = {LAYOUT_END_EOF, LAYOUT_END_EOF - 1, (1ull << 63) + 12345,
                                  1ull << 50, c->start + 77 * row + 65537};
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            uint64_t rel = sizes[k] - c->start;
            for (uint16_t s = 0; s < c->stripe_count; s++) {
                uint64_t want = (rel / row) * c->stripe_size +
                                ref_object_size(&r, last, s, c->start + rel % row);
                assert_int_equal(layout_object_size(&l, last, s, sizes[k]), want);
            }
            /* Bounded components are full. */
            for (uint16_t k2 = 0; k2 < last; k2++)
                for (uint16_t s = 0; s < l.comp[k2].stripe_count; s++)
                    assert_int_equal(layout_object_size(&l, k2, s, sizes[k]),
                                     ref_object_size(&r, k2, s, l.comp[k2].end));
        }
    }
}

static void test_map_uncovered(void **state)
{
    (void)state;
    static struct layout l;
    struct layout_piece p;
    memset(&l, 0, sizeof(l));
    assert_int_equal(layout_map(&l, 0, 1, &p), -ERANGE);

    /* An invalid layout with a hole: bytes in the hole map nowhere. */
    make_shape(&l, 2, 1, 2);
    l.comp[1].start += MIB;
    assert_int_equal(layout_map(&l, l.comp[0].end, 1, &p), -ERANGE);
    assert_int_equal(layout_map(&l, l.comp[1].start - 1, 1, &p), -ERANGE);
    assert_int_equal(layout_map(&l, l.comp[1].start, 1, &p), 0);
}

static void test_validate_accepts(void **state)
{
    (void)state;
    static struct layout l;
    FOR_EACH_SHAPE(ncomp, si, count)
    {
        make_shape(&l, ncomp, si, count);
        assert_int_equal(layout_validate(&l), 0);
    }
    uint32_t groups[LAYOUT_MAX_STRIPES];
    for (uint32_t i = 0; i < LAYOUT_MAX_STRIPES; i++)
        groups[i] = i;
    const struct {
        uint32_t size;
        uint16_t count;
    } good[] = {
        {LAYOUT_MIN_STRIPE_SIZE, 1},
        {3 * K64, 3}, /* a multiple of 64 KiB need not be a power of two */
        {LAYOUT_MAX_STRIPE_SIZE, LAYOUT_MAX_STRIPES},
    };
    for (size_t k = 0; k < sizeof(good) / sizeof(good[0]); k++) {
        layout_make_simple(&l, good[k].size, good[k].count, groups);
        assert_int_equal(layout_validate(&l), 0);
    }
    /* Four components, the most a layout holds. */
    make_shape(&l, 3, 0, 4);
    l.comp[2].end = l.comp[2].start + 8 * MIB;
    l.comp[3] = l.comp[2];
    l.comp[3].start = l.comp[2].end;
    l.comp[3].end = LAYOUT_END_EOF;
    l.ncomp = 4;
    assert_int_equal(layout_validate(&l), 0);
}

static void test_validate_rejects(void **state)
{
    (void)state;
    static struct layout l;
    static struct layout base;
    make_shape(&base, 3, 1, 4);
    assert_int_equal(layout_validate(&base), 0);

#define REJECT(what, change)                                                                       \
    do {                                                                                           \
        l = base;                                                                                  \
        change;                                                                                    \
        if (layout_validate(&l) != -EINVAL)                                                        \
            fail_msg("accepted a layout with %s", what);                                           \
    } while (0)

    REJECT("a gap between components", l.comp[1].start += K64);
    REJECT("overlapping components", l.comp[1].start -= K64);
    REJECT("a gap before the last component", l.comp[2].start += K64);
    REJECT("a first component not at 0", l.comp[0].start = K64);
    REJECT("a bounded last component", l.comp[2].end = l.comp[2].start + 64 * MIB);
    REJECT("a last component ending at EOF - 1", l.comp[2].end = LAYOUT_END_EOF - 1);
    REJECT("an empty component", (l.comp[0].end = 0, l.comp[1].start = 0));
    REJECT("EOF before the last component",
           (l.comp[1].end = LAYOUT_END_EOF, l.comp[2].start = LAYOUT_END_EOF));
    REJECT("no components", l.ncomp = 0);
    REJECT("too many components", l.ncomp = LAYOUT_MAX_COMP + 1);
    REJECT("stripe size 0", l.comp[1].stripe_size = 0);
    REJECT("stripe size 4 KiB", l.comp[1].stripe_size = 4096);
    REJECT("stripe size 64 KiB + 4 KiB", l.comp[1].stripe_size = K64 + 4096);
    REJECT("stripe size 1 MiB - 1", l.comp[0].stripe_size = MIB - 1);
    REJECT("stripe size above the maximum",
           l.comp[2].stripe_size = LAYOUT_MAX_STRIPE_SIZE + LAYOUT_MIN_STRIPE_SIZE);
    REJECT("stripe count 0", l.comp[0].stripe_count = 0);
    REJECT("stripe count 0 in the last component", l.comp[2].stripe_count = 0);
    REJECT("stripe count 257", l.comp[1].stripe_count = LAYOUT_MAX_STRIPES + 1);
    REJECT("stripe count 65535", l.comp[1].stripe_count = UINT16_MAX);
    REJECT("an unknown component type", l.comp[1].type = LAYOUT_TYPE_OST + 1);
#undef REJECT

    /* The single-component form too. */
    uint32_t groups[1] = {0};
    layout_make_simple(&l, 0, 1, groups);
    assert_int_equal(layout_validate(&l), -EINVAL);
    layout_make_simple(&l, MIB, 0, groups);
    assert_int_equal(layout_validate(&l), -EINVAL);
    layout_make_simple(&l, MIB + K64 / 2, 1, groups);
    assert_int_equal(layout_validate(&l), -EINVAL);
}

static void test_make_simple(void **state)
{
    (void)state;
    static struct layout l;
    uint32_t groups[5] = {9, 4, 7, 1, 3};
    memset(&l, 0xff, sizeof(l));
    layout_make_simple(&l, 4 * MIB, 5, groups);
    assert_int_equal(l.ncomp, 1);
    assert_int_equal(l.comp[0].start, 0);
    assert_int_equal(l.comp[0].end, LAYOUT_END_EOF);
    assert_int_equal(l.comp[0].stripe_size, 4 * MIB);
    assert_int_equal(l.comp[0].stripe_count, 5);
    assert_int_equal(l.comp[0].type, LAYOUT_TYPE_OST);
    assert_memory_equal(l.comp[0].groups, groups, sizeof(groups));
    assert_int_equal(layout_validate(&l), 0);

    /* Group order is stripe order: stripe unit 3 is on groups[3]. */
    struct layout_piece p;
    assert_int_equal(layout_map(&l, 3ull * 4 * MIB + 5, UINT64_MAX, &p), 0);
    assert_int_equal(p.stripe, 3);
    assert_int_equal(p.group, 1);
    assert_int_equal(p.obj_off, 5);
    assert_int_equal(p.len, 4 * MIB - 5);
    /* Unit 7 wraps to stripe 2, second unit of its object. */
    assert_int_equal(layout_map(&l, 7ull * 4 * MIB, UINT64_MAX, &p), 0);
    assert_int_equal(p.stripe, 2);
    assert_int_equal(p.group, 7);
    assert_int_equal(p.obj_off, 4 * MIB);
}

/* layout_stripe_bytes_before against counting bytes one by one, for every
 * stripe and every offset over a few rows of small and odd shapes. */
static void test_stripe_bytes_before(void **state)
{
    (void)state;
    static const uint32_t counts[] = {1, 2, 3, 5};
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
        struct layout_comp c = {.start = 0,
                                .end = LAYOUT_END_EOF,
                                .stripe_size = 7,
                                .stripe_count = (uint16_t)counts[ci]};
        uint64_t span = (uint64_t)c.stripe_size * c.stripe_count * 4;
        for (uint16_t s = 0; s < c.stripe_count; s++) {
            uint64_t seen = 0;
            for (uint64_t x = 0; x <= span; x++) {
                assert_int_equal(layout_stripe_bytes_before(&c, s, x), seen);
                if ((x / c.stripe_size) % c.stripe_count == s)
                    seen++;
            }
        }
    }
    /* Near the top of the offset space: no overflow. */
    struct layout_comp big = {
        .start = 0, .end = LAYOUT_END_EOF, .stripe_size = 1 << 20, .stripe_count = 4};
    uint64_t top = UINT64_MAX - (1 << 20);
    assert_true(layout_stripe_bytes_before(&big, 3, top) <= top / 4 + (1 << 20));
}

/* Components not instantiated yet (PFL): a subset of each shape's
 * components pending. Offsets in them are holes to the component's end;
 * elsewhere the mapping is the model's; their objects are empty. */
static void pend(struct layout *l, unsigned mask)
{
    for (uint16_t k = 0; k < l->ncomp; k++)
        if (mask & (1u << k)) {
            struct layout_comp *c = &l->comp[k];
            c->type |= LAYOUT_F_PENDING;
            c->groups[0] = LAYOUT_ANY_OST;
        }
}

static void test_pending_matches_model(void **state)
{
    (void)state;
    static struct layout l;
    static struct ref_model r;
    rng_seed(0x9f1);
    FOR_EACH_SHAPE(ncomp, si, count)
    {
        for (unsigned mask = 1; mask < (1u << ncomp); mask++) {
            make_shape(&l, ncomp, si, count);
            ref_build(&l, shape_horizon(&l), &r);
            pend(&l, mask);
            assert_int_equal(layout_validate(&l), 0);
            for (int k = 0; k < 200; k++) {
                uint64_t off = rng_below(r.horizon), maxlen = 1 + rng_below(8ull * MIB);
                const struct ref_unit *u = ref_find(&r, off);
                const struct layout_comp *c = &l.comp[u->comp];
                if (!(mask & (1u << u->comp))) {
                    check_one(&l, &r, off, maxlen);
                    continue;
                }
                struct layout_piece p;
                assert_int_equal(layout_map(&l, off, maxlen, &p), -ENODATA);
                uint64_t want = c->end - off < maxlen ? c->end - off : maxlen;
                if (want > UINT32_MAX)
                    want = UINT32_MAX;
                assert_int_equal(p.file_off, off);
                assert_int_equal(p.len, want);
                assert_int_equal(p.comp, u->comp);
                assert_int_equal(p.group, LAYOUT_ANY_OST);
            }
            /* Objects of pending components hold nothing at any size. */
            uint64_t size = rng_below(r.horizon);
            for (uint16_t k = 0; k < l.ncomp; k++)
                for (uint16_t st = 0; st < l.comp[k].stripe_count; st++) {
                    uint64_t want = (mask & (1u << k)) ? 0 : ref_object_size(&r, k, st, size);
                    assert_int_equal(layout_object_size(&l, k, st, size), want);
                }
            /* The first pending component a write reaching end needs. */
            for (uint16_t k = 0; k < l.ncomp; k++) {
                int first = -1;
                for (uint16_t j = 0; j < l.ncomp && first < 0; j++)
                    if ((mask & (1u << j)) && l.comp[j].start < l.comp[k].start + 1)
                        first = j;
                assert_int_equal(layout_first_pending(&l, l.comp[k].start + 1), first);
            }
        }
    }
}

/* What a pending component may ask for, and what an instantiated one may
 * not be; component ends fall on 64 KiB. */
static void test_validate_pending(void **state)
{
    (void)state;
    static struct layout l;
    make_shape(&l, 3, 1, 2);
    pend(&l, 6);
    l.comp[1].stripe_count = 0; /* the default */
    l.comp[1].stripe_size = 0;
    l.comp[2].stripe_count = LAYOUT_COUNT_ALL;
    assert_int_equal(layout_validate(&l), 0);
    l.comp[2].stripe_count = LAYOUT_MAX_STRIPES + 1;
    assert_int_equal(layout_validate(&l), -EINVAL);
    l.comp[2].stripe_count = 1;
    l.comp[2].stripe_size = 1000; /* not a multiple of 64 KiB */
    assert_int_equal(layout_validate(&l), -EINVAL);
    l.comp[2].stripe_size = 0;
    assert_int_equal(layout_validate(&l), 0);
    l.comp[1].type &= (uint16_t)~LAYOUT_F_PENDING; /* instantiated with count 0 */
    assert_int_equal(layout_validate(&l), -EINVAL);
    make_shape(&l, 2, 0, 1);
    l.comp[0].end += 4096;
    l.comp[1].start += 4096;
    assert_int_equal(layout_validate(&l), -EINVAL);
    make_shape(&l, 2, 0, 1);
    l.comp[1].type |= LAYOUT_F_RELEASED; /* only the first may say released */
    assert_int_equal(layout_validate(&l), -EINVAL);
    l.comp[1].type = LAYOUT_TYPE_OST | 0x1000; /* a flag nobody knows */
    assert_int_equal(layout_validate(&l), -EINVAL);
}

/* A component's generation names its objects apart from the same
 * component's of another generation, and maps the same otherwise. */
static void test_generations(void **state)
{
    (void)state;
    struct layout a, b;
    make_shape(&a, 2, 0, 1);
    layout_copy(&b, &a);
    assert_true(layout_equal(&a, &b));
    for (uint16_t i = 0; i < b.ncomp; i++)
        layout_comp_set_gen(&b.comp[i], 15);
    assert_int_equal(layout_validate(&b), 0);
    assert_false(layout_equal(&a, &b));
    assert_int_equal(layout_comp_gen(&b.comp[1]), 15);
    assert_int_equal(layout_obj_comp(&a, 1), 1);
    assert_int_equal(layout_obj_comp(&b, 1), 1 + 15 * LAYOUT_MAX_COMP);
    struct layout_piece pa, pb;
    assert_int_equal(layout_map(&a, b.comp[1].start + 12345, 1 << 20, &pa), 0);
    assert_int_equal(layout_map(&b, b.comp[1].start + 12345, 1 << 20, &pb), 0);
    assert_int_equal(pa.comp, pb.comp);
    assert_int_equal(pa.stripe, pb.stripe);
    assert_int_equal(pa.obj_off, pb.obj_off);
    assert_int_equal(pa.ocomp, 1);
    assert_int_equal(pb.ocomp, 1 + 15 * LAYOUT_MAX_COMP);
    layout_comp_set_gen(&b.comp[1], 16); /* wraps into 4 bits */
    assert_int_equal(layout_comp_gen(&b.comp[1]), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stripe_bytes_before),
        cmocka_unit_test(test_map_matches_model),
        cmocka_unit_test(test_map_far_offsets),
        cmocka_unit_test(test_range_covered_once),
        cmocka_unit_test(test_object_size_matches_model),
        cmocka_unit_test(test_object_size_far),
        cmocka_unit_test(test_map_uncovered),
        cmocka_unit_test(test_validate_accepts),
        cmocka_unit_test(test_validate_rejects),
        cmocka_unit_test(test_make_simple),
        cmocka_unit_test(test_pending_matches_model),
        cmocka_unit_test(test_validate_pending),
        cmocka_unit_test(test_generations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
