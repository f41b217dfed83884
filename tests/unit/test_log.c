/*
 * Unit tests of the log's rate limit (common/log.h): one line a period,
 * the lines held back counted and told with the next one that passes,
 * from many threads at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/log.h"

#include <pthread.h>
#include <unistd.h>

static void test_one_line_a_period(void **state)
{
    (void)state;
    struct log_limit l = {0};
    uint64_t held = 99;
    assert_true(log_limit_pass(&l, 200, &held));
    assert_int_equal(held, 0);
    for (int i = 0; i < 5; i++)
        assert_false(log_limit_pass(&l, 200, &held));
    usleep(250 * 1000);
    assert_true(log_limit_pass(&l, 200, &held));
    assert_int_equal(held, 5);
    assert_false(log_limit_pass(&l, 200, &held));
}

#define THREADS 4
#define TRIES   10000

static struct log_limit shared;
static int passed;    /* atomic */
static uint64_t told; /* atomic: what the lines that passed said was held */

static void *hammer(void *arg)
{
    (void)arg;
    uint64_t held;
    for (int i = 0; i < TRIES; i++)
        if (log_limit_pass(&shared, 60000, &held)) {
            __atomic_fetch_add(&passed, 1, __ATOMIC_SEQ_CST);
            __atomic_fetch_add(&told, held, __ATOMIC_SEQ_CST);
        }
    return NULL;
}

static void test_threads_share_a_period(void **state)
{
    (void)state;
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, hammer, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    /* A minute's period: one line passed, and every other try was
     * counted once: told by it (a try held back between the winner's
     * claim and its count is told then), or still held. */
    assert_int_equal(passed, 1);
    assert_int_equal(told + shared.held, THREADS * TRIES - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_line_a_period),
        cmocka_unit_test(test_threads_share_a_period),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
