/*
 * The client's decision to create a file behind (src/client/wb_create.c):
 * which inode numbers it uses, on its own, without a cluster. The grant,
 * the template and the ranges are fed as the OPEN replies would bring
 * them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "client/wb_int.h"

#include <stdlib.h>
#include <string.h>

#define DIR   0x10
#define GRANT 3

static stria_fs_t *fs;

static int setup(void **state)
{
    (void)state;
    fs = calloc(1, sizeof(*fs));
    if (!fs || wb_start(fs, NULL))
        return -1;
    wb_granted(fs, 0, GRANT, 600000, mdc_clock_ms(), 1u << 30);
    struct layout l;
    memset(&l, 0, sizeof(l));
    wb_template(fs, 0, DIR, GRANT, 0, &l);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    wb_stop(fs);
    wb_destroy(fs);
    free(fs);
    return 0;
}

/* The number a create behind in DIR would take now, 0 if it would not. */
static uint64_t create_ino(const char *name)
{
    uint64_t ino = 0, grant = 0;
    struct layout l;
    if (!wb_create_begin(fs, 0, DIR, name, &ino, &l, &grant))
        return 0;
    wb_behind_end(fs);
    assert_int_equal(grant, GRANT);
    return ino;
}

static void ask_and_get(uint64_t lo)
{
    /* With the word that it drops ranges left idle, so the MDT may forget
     * them (meta/store/dlg_rec.h). */
    assert_int_equal(wb_want_inos(fs, 0), PROTO_OPEN_WANT_INOS | PROTO_OPEN_INOS_IDLE);
    assert_int_equal(wb_want_inos(fs, 0), 0); /* one ask on its way at a time */
    wb_inos(fs, 0, lo, 1024);
}

/* A range unused for an hour is not used again: the MDT drops ranges
 * nobody changed for four (meta/store/dlg_rec.h). The next ask's range is
 * the only one used, as after an ask whose answer was lost. */
static void test_idle_range(void **state)
{
    (void)state;
    uint64_t a = proto_ino_make(0, 5000), b = proto_ino_make(0, 9000);
    ask_and_get(a);
    assert_int_equal(create_ino("f1"), a);
    assert_int_equal(create_ino("f2"), a + 1);
    assert_int_equal(wb_want_inos(fs, 0), 0); /* plenty left */
    fs->wb->g[0].rng_ms -= WB_RANGE_IDLE_MS - 1000;
    assert_int_equal(create_ino("f3"), a + 2); /* used within the hour */
    fs->wb->g[0].rng_ms -= WB_RANGE_IDLE_MS - 1000;
    assert_int_equal(create_ino("f4"), a + 3); /* the hour counts from the last use */
    fs->wb->g[0].rng_ms -= WB_RANGE_IDLE_MS + 1;
    assert_int_equal(create_ino("f5"), 0);
    ask_and_get(b);
    assert_int_equal(create_ino("f5"), b);
}

/* An ask without an answer: nothing is created behind until the next
 * answer, whose range alone is used, however many numbers were left. */
static void test_lost_answer(void **state)
{
    (void)state;
    uint64_t a = proto_ino_make(0, 5000), c = proto_ino_make(0, 20000);
    ask_and_get(a);
    for (int i = 0; i < 1024 - WB_INOS_LOW + 1; i++)
        assert_int_equal(create_ino("g"), a + (uint64_t)i);
    assert_int_equal(wb_want_inos(fs, 0), PROTO_OPEN_WANT_INOS | PROTO_OPEN_INOS_IDLE);
    wb_inos(fs, 0, 0, 0); /* lost */
    assert_int_equal(create_ino("h"), 0);
    ask_and_get(c);
    assert_int_equal(create_ino("h"), c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_idle_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_answer, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
