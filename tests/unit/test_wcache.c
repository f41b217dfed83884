/*
 * Unit tests of the MDT's walk cache (meta/wcache.h) on its own, without a
 * store: facts added and looked up, the generation rule that keeps a
 * reader from adding a fact older than a change, the busy state of a batch
 * and what its end drops, names too long to cache, and slots shared by two
 * facts. A wrong answer here is a path walk that finds a renamed or
 * removed directory, or goes through one its caller may no longer search
 * (test_meta.c checks the same through the namespace operations).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "meta/store/wcache.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static struct wcache_dir dir_of(uint64_t ino, uint64_t parent, uint32_t mode)
{
    struct wcache_dir d = {
        .ino = ino, .parent = parent, .mode = S_IFDIR | mode, .uid = 10, .gid = 20, .dstripe = 0};
    return d;
}

static bool has_name(struct wcache *c, uint64_t dir, const char *name, uint64_t want)
{
    uint64_t child = 0;
    if (!wcache_name(c, dir, name, strlen(name), &child))
        return false;
    assert_int_equal(child, want); /* a hit is never someone else's fact */
    return true;
}

static void add_name(struct wcache *c, uint64_t dir, const char *name, uint64_t child)
{
    wcache_add_name(c, true, wcache_gen(c), dir, name, strlen(name), child);
}

static void test_create_sizes(void **state)
{
    (void)state;
    /* Direct-mapped tables index by mask: only powers of two will do. */
    assert_null(wcache_create(3));
    assert_null(wcache_create(100));
    struct wcache *c = wcache_create(1);
    assert_non_null(c);
    wcache_destroy(c);
    wcache_destroy(NULL);
}

/* wcache_create(0) passed the power-of-two check (0 & (0 - 1) == 0) and
 * made a cache with mask 0xffffffff over tables of no slots. */
static void test_create_zero_slots(void **state)
{
    (void)state;
    struct wcache *c = wcache_create(0);
    assert_null(c);
    wcache_destroy(c);
}

static void test_add_and_lookup(void **state)
{
    (void)state;
    struct wcache *c = wcache_create(1024);
    assert_non_null(c);
    uint64_t child;
    assert_false(wcache_name(c, 1, "a", 1, &child));
    add_name(c, 1, "a", 100);
    add_name(c, 1, "ab", 101);
    add_name(c, 2, "a", 102);
    assert_true(has_name(c, 1, "a", 100));
    assert_true(has_name(c, 1, "ab", 101));
    assert_true(has_name(c, 2, "a", 102));
    /* Another directory, another name, a prefix: misses. */
    assert_false(has_name(c, 3, "a", 0));
    assert_false(has_name(c, 1, "b", 0));
    /* A newer fact for the same name replaces the old one. */
    add_name(c, 1, "a", 200);
    assert_true(has_name(c, 1, "a", 200));

    struct wcache_dir d = dir_of(100, 1, 0750), got;
    wcache_add_dir(c, true, wcache_gen(c), &d);
    assert_true(wcache_dir(c, 100, &got));
    assert_memory_equal(&got, &d, sizeof(d));
    assert_false(wcache_dir(c, 101, &got));
    /* Inode 0 marks an empty slot: it is never a directory. */
    struct wcache_dir zero = dir_of(0, 1, 0755);
    wcache_add_dir(c, false, 0, &zero);
    assert_false(wcache_dir(c, 0, &got));
    assert_false(wcache_peek_dir(c, 0, &got));
    wcache_add_name(c, false, 0, 0, "z", 1, 5);
    assert_false(wcache_name(c, 0, "z", 1, &child));

    uint64_t hits, drops;
    wcache_counts(c, &hits, &drops);
    assert_int_equal(hits, 5); /* the hits above, no more */
    assert_int_equal(drops, 0);
    wcache_destroy(c);
}

/* A reader's snapshot began after it took its generation: any change or
 * batch end since means the fact may be older than the store. */
static void test_generation_rule(void **state)
{
    (void)state;
    struct wcache *c = wcache_create(1024);
    assert_non_null(c);
    struct wcache_dir d = dir_of(7, 1, 0755), got;

    uint64_t g = wcache_gen(c);
    wcache_changed_name(c, 9, "elsewhere", 9);
    wcache_batch_end(c, false);
    wcache_add_name(c, true, g, 1, "a", 1, 7);
    wcache_add_dir(c, true, g, &d);
    assert_false(has_name(c, 1, "a", 7));
    assert_false(wcache_dir(c, 7, &got));

    /* A batch end with nothing changed moves nothing. */
    g = wcache_gen(c);
    wcache_batch_end(c, false);
    assert_int_equal(wcache_gen(c), g);
    wcache_add_name(c, true, g, 1, "a", 1, 7);
    assert_true(has_name(c, 1, "a", 7));

    /* A thrown-away batch moves it even with nothing reported. */
    g = wcache_gen(c);
    wcache_batch_end(c, true);
    wcache_add_dir(c, true, g, &d);
    assert_false(wcache_dir(c, 7, &got));

    /* The leader adds from its own transaction, whatever the generation. */
    wcache_add_dir(c, false, 0, &d);
    assert_true(wcache_dir(c, 7, &got));
    wcache_destroy(c);
}

/* While a batch that changed a fact is in flight nobody uses or adds any
 * fact; its end drops the changed facts and keeps the others. */
static void test_busy_batch(void **state)
{
    (void)state;
    struct wcache *c = wcache_create(4096);
    assert_non_null(c);
    struct wcache_dir d7 = dir_of(7, 1, 0755), d8 = dir_of(8, 1, 0700), got;
    add_name(c, 1, "a", 7);
    add_name(c, 1, "b", 8);
    wcache_add_dir(c, false, 0, &d7);
    wcache_add_dir(c, false, 0, &d8);

    wcache_changed_name(c, 1, "a", 1);
    wcache_changed_dir(c, 8);
    assert_false(has_name(c, 1, "a", 7));
    assert_false(has_name(c, 1, "b", 8)); /* unchanged, but the cache is busy */
    assert_false(wcache_dir(c, 7, &got));
    /* The leader still sees what it is changing. */
    assert_true(wcache_peek_dir(c, 8, &got));
    assert_int_equal(got.mode, S_IFDIR | 0700);
    /* Nothing is added while busy, by readers or the leader. */
    wcache_add_name(c, false, 0, 1, "c", 1, 9);
    wcache_add_name(c, true, wcache_gen(c), 1, "d", 1, 10);

    wcache_batch_end(c, false);
    assert_false(has_name(c, 1, "a", 7));
    assert_false(wcache_dir(c, 8, &got));
    assert_false(wcache_peek_dir(c, 8, &got));
    assert_true(has_name(c, 1, "b", 8));
    assert_true(wcache_dir(c, 7, &got));
    assert_false(has_name(c, 1, "c", 9));
    assert_false(has_name(c, 1, "d", 10));
    uint64_t hits, drops;
    wcache_counts(c, &hits, &drops);
    assert_int_equal(drops, 2);

    /* And the cache takes facts again. */
    add_name(c, 1, "a", 70);
    assert_true(has_name(c, 1, "a", 70));
    wcache_destroy(c);
}

/* More changes than the batch remembers: its end drops everything. */
static void test_many_changes_drop_all(void **state)
{
    (void)state;
    struct wcache *c = wcache_create(4096);
    assert_non_null(c);
    add_name(c, 1, "keep", 7);
    char name[16];
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof(name), "x%d", i);
        wcache_changed_name(c, 2, name, strlen(name));
    }
    wcache_batch_end(c, false);
    assert_false(has_name(c, 1, "keep", 7));
    wcache_destroy(c);
}

static void test_long_names(void **state)
{
    (void)state;
    struct wcache *c = wcache_create(1024);
    assert_non_null(c);
    char fits[WCACHE_NAME_MAX + 1], over[WCACHE_NAME_MAX + 2];
    memset(fits, 'f', sizeof(fits) - 1);
    fits[sizeof(fits) - 1] = '\0';
    memset(over, 'o', sizeof(over) - 1);
    over[sizeof(over) - 1] = '\0';
    add_name(c, 1, fits, 11);
    add_name(c, 1, over, 12);
    assert_true(has_name(c, 1, fits, 11));
    assert_false(has_name(c, 1, over, 12));
    /* A name never cached changes no fact: the cache stays in use. */
    uint64_t g = wcache_gen(c);
    wcache_changed_name(c, 1, over, strlen(over));
    assert_true(has_name(c, 1, fits, 11));
    assert_int_equal(wcache_gen(c), g);
    wcache_batch_end(c, false);
    assert_true(has_name(c, 1, fits, 11));
    wcache_destroy(c);
}

/* A single slot: every fact shares it, the last one wins, and a lookup of
 * the one it replaced misses rather than answer with the other's child. */
static void test_slot_collisions(void **state)
{
    (void)state;
    struct wcache *c = wcache_create(1);
    assert_non_null(c);
    add_name(c, 1, "a", 100);
    assert_true(has_name(c, 1, "a", 100));
    add_name(c, 2, "a", 200);
    assert_true(has_name(c, 2, "a", 200));
    assert_false(has_name(c, 1, "a", 100));
    add_name(c, 2, "b", 300);
    assert_false(has_name(c, 2, "a", 200));
    assert_true(has_name(c, 2, "b", 300));

    struct wcache_dir d1 = dir_of(5, 1, 0755), d2 = dir_of(6, 1, 0700), got;
    wcache_add_dir(c, false, 0, &d1);
    wcache_add_dir(c, false, 0, &d2);
    assert_false(wcache_dir(c, 5, &got));
    assert_true(wcache_dir(c, 6, &got));
    assert_int_equal(got.mode, S_IFDIR | 0700);

    /* A change to a fact that was replaced drops whatever holds its slot:
     * a miss, never a stale answer. */
    wcache_changed_name(c, 1, "a", 1);
    wcache_batch_end(c, false);
    assert_false(has_name(c, 2, "b", 300));
    wcache_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_sizes),   cmocka_unit_test(test_create_zero_slots),
        cmocka_unit_test(test_add_and_lookup), cmocka_unit_test(test_generation_rule),
        cmocka_unit_test(test_busy_batch),     cmocka_unit_test(test_many_changes_drop_all),
        cmocka_unit_test(test_long_names),     cmocka_unit_test(test_slot_collisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
