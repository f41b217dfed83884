/*
 * The restore state of HSM_PULL (src/storage/hsmstate.c): which units of
 * an object meet a file range, against a model that walks every stripe
 * unit of the file, over many random geometries; and the sidecar, whose
 * decoder takes any garbage without a crash, answering -EUCLEAN, and whose
 * file lives outside the OST's objects/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "storage/hsmstate.h"
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#define KiB 1024ull
#define MiB (1024ull * KiB)

static struct hsm_geom random_geom(void)
{
    struct hsm_geom g = {0};
    g.stripe_size = (uint32_t)((1 + rng_below(16)) * 64 * KiB);
    g.stripe_count = (uint16_t)(1 + rng_below(rng_below(4) ? 8 : 200));
    g.stripe = (uint32_t)rng_below(g.stripe_count);
    g.comp_start = rng_below(3) ? 0 : rng_below(64) * g.stripe_size;
    uint64_t span = (uint64_t)g.stripe_size * (1 + rng_below(3 * g.stripe_count + 4));
    g.file_size = rng_below(4) ? g.comp_start + rng_below(span) : rng_below(span);
    snprintf(g.etag, sizeof(g.etag), "%016llx", (unsigned long long)rng_next());
    return g;
}

/* The model: walk the file's stripe units one by one. */
static void model(const struct hsm_geom *g, uint64_t off, uint64_t len, uint64_t *n, uint64_t *lo,
                  uint64_t *hi)
{
    *n = 0;
    *lo = *hi = UINT64_MAX;
    for (uint64_t u = 0; g->comp_start + u * g->stripe_size < g->file_size; u++) {
        if (u % g->stripe_count != g->stripe)
            continue;
        uint64_t k = u / g->stripe_count, a = g->comp_start + u * g->stripe_size;
        uint64_t b = a + g->stripe_size < g->file_size ? a + g->stripe_size : g->file_size;
        struct hsm_unit x = hsm_unit_at(g, k);
        assert_int_equal(x.file_off, a);
        assert_int_equal(x.len, b - a);
        assert_int_equal(x.obj_off, k * g->stripe_size);
        assert_int_equal(k, *n);
        (*n)++;
        if (len && a < off + len && off < b) {
            if (*lo == UINT64_MAX)
                *lo = k;
            assert_true(*hi == UINT64_MAX || *hi == k); /* contiguous */
            *hi = k + 1;
        }
    }
    if (*lo == UINT64_MAX)
        *lo = *hi = 0;
}

static void test_units_meeting(void **state)
{
    (void)state;
    rng_seed(22);
    for (int i = 0; i < 20000; i++) {
        struct hsm_geom g = random_geom();
        assert_true(hsm_geom_valid(&g));
        uint64_t span = g.file_size + 2 * g.stripe_size;
        uint64_t off = rng_below(span), len = rng_below(4) ? rng_below(span) : rng_below(4);
        uint64_t n, lo, hi, glo, ghi;
        model(&g, off, len, &n, &lo, &hi);
        assert_int_equal(hsm_units(&g), n);
        hsm_units_meeting(&g, off, len, &glo, &ghi);
        if (lo == hi) {
            assert_int_equal(glo, ghi);
        } else {
            assert_int_equal(glo, lo);
            assert_int_equal(ghi, hi);
        }
    }
}

static void test_geom_valid(void **state)
{
    (void)state;
    struct hsm_geom g = {.stripe_size = 1 * MiB,
                         .stripe_count = 4,
                         .stripe = 3,
                         .file_size = 10 * MiB,
                         .etag = "abc"};
    assert_true(hsm_geom_valid(&g));
    struct hsm_geom b = g;
    b.stripe = 4;
    assert_false(hsm_geom_valid(&b));
    b = g;
    b.stripe_size = 1000;
    assert_false(hsm_geom_valid(&b));
    b = g;
    b.etag[0] = 0;
    assert_false(hsm_geom_valid(&b));
    b = g;
    b.file_size = 1ull << 45; /* 2^25 units of 1 MiB: too many for a bitmap */
    b.stripe_count = 1;
    b.stripe = 0;
    b.stripe_size = 64 * KiB;
    assert_false(hsm_geom_valid(&b));
}

static void test_sidecar_codec(void **state)
{
    (void)state;
    rng_seed(7);
    for (int i = 0; i < 2000; i++) {
        struct hsm_geom g = random_geom(), d;
        uint64_t n = hsm_units(&g);
        size_t len = HSM_STATE_HDR + hsm_bitmap_len(n);
        uint8_t *buf = calloc(1, len + 16);
        assert_non_null(buf);
        hsm_state_encode(&g, buf);
        for (uint64_t k = 0; k < n; k++)
            if (rng_below(2))
                hsm_bit_set(buf + HSM_STATE_HDR, k);
        const uint8_t *bm = NULL;
        assert_int_equal(hsm_state_decode(buf, len, &d, &bm), 0);
        assert_true(hsm_geom_same(&g, &d));
        assert_ptr_equal(bm, buf + HSM_STATE_HDR);
        /* Wrong lengths. */
        assert_int_equal(hsm_state_decode(buf, len + 1, &d, &bm), -EUCLEAN);
        if (len > HSM_STATE_HDR)
            assert_int_equal(hsm_state_decode(buf, len - 1, &d, &bm), -EUCLEAN);
        assert_int_equal(hsm_state_decode(buf, rng_below(HSM_STATE_HDR), &d, &bm), -EUCLEAN);
        /* A flipped bit in the header. */
        size_t at = rng_below(HSM_STATE_HDR);
        uint8_t keep = buf[at];
        buf[at] ^= (uint8_t)(1u << rng_below(8));
        assert_int_equal(hsm_state_decode(buf, len, &d, &bm), -EUCLEAN);
        buf[at] = keep;
        /* A bit past the last unit. */
        if (n % 8) {
            buf[len - 1] |= 0x80;
            assert_int_equal(hsm_state_decode(buf, len, &d, &bm), -EUCLEAN);
        }
        free(buf);
    }
    /* Pure garbage, and garbage behind a good magic. */
    uint8_t junk[HSM_STATE_HDR + 64];
    for (int i = 0; i < 20000; i++) {
        for (size_t j = 0; j < sizeof(junk); j++)
            junk[j] = (uint8_t)rng_next();
        if (i % 2)
            memcpy(junk, "STRIAHSM\1\0\0\0", 12);
        struct hsm_geom d;
        const uint8_t *bm;
        assert_int_equal(hsm_state_decode(junk, rng_below(sizeof(junk) + 1), &d, &bm), -EUCLEAN);
    }
}

static void test_sidecar_file(void **state)
{
    (void)state;
    char dir[64];
    snprintf(dir, sizeof(dir), "/tmp/stria_test_hsm.XXXXXX");
    assert_non_null(mkdtemp(dir));
    int dfd = open(dir, O_DIRECTORY | O_RDONLY);
    assert_true(dfd >= 0);
    const char *obj = "objects/2a/000000000000002a.0.1";
    char path[128];
    hsm_state_path(obj, path, sizeof(path));
    assert_string_equal(path, "hsm/2a/000000000000002a.0.1");

    struct hsm_state st;
    assert_int_equal(hsm_state_load(dfd, obj, &st), -ENOENT);
    struct hsm_geom g = {.stripe_size = 64 * KiB,
                         .stripe_count = 2,
                         .stripe = 1,
                         .file_size = 20 * 64 * KiB + 5,
                         .etag = "e1"};
    assert_int_equal(hsm_state_create(dfd, obj, &g, &st), 0);
    assert_int_equal(st.n, 10);
    assert_int_equal(st.have, 0);
    hsm_bit_set(st.bitmap, 3);
    hsm_bit_set(st.bitmap, 9);
    assert_int_equal(hsm_state_store_bits(dfd, obj, &st), 0);
    hsm_state_free(&st);
    assert_int_equal(hsm_state_load(dfd, obj, &st), 0);
    assert_int_equal(st.have, 2);
    assert_true(hsm_bit(st.bitmap, 3) && hsm_bit(st.bitmap, 9) && !hsm_bit(st.bitmap, 0));
    assert_true(hsm_geom_same(&st.g, &g));
    hsm_state_free(&st);

    /* A damaged sidecar is refused, not believed. */
    int fd = openat(dfd, path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "X", 1, 40), 1);
    close(fd);
    assert_int_equal(hsm_state_load(dfd, obj, &st), -EUCLEAN);

    assert_int_equal(hsm_state_unlink(dfd, obj), 0);
    assert_int_equal(hsm_state_unlink(dfd, obj), 0);
    assert_int_equal(hsm_state_load(dfd, obj, &st), -ENOENT);
    unlinkat(dfd, "hsm/2a", AT_REMOVEDIR);
    unlinkat(dfd, "hsm", AT_REMOVEDIR);
    close(dfd);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units_meeting),
        cmocka_unit_test(test_geom_valid),
        cmocka_unit_test(test_sidecar_codec),
        cmocka_unit_test(test_sidecar_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
