/*
 * Unit tests of the server's reply cache (net/rcache.h): a served change's
 * reply comes back byte for byte, small and large alike, the oldest go
 * first when the cache is full, and a copy that comes while the first is
 * served waits for its reply, or is served itself when the first's is
 * forgotten.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "net/rcache.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

static void serve(struct rcache *c, uint64_t client, uint64_t seq, int status, const void *p,
                  uint32_t len)
{
    int st;
    uint32_t got;
    uint8_t buf[8];
    assert_int_equal(rcache_begin(c, client, seq, &st, buf, sizeof(buf), &got), RCACHE_NEW);
    rcache_end(c, client, seq, status, p, len);
}

static void test_replies_kept(void **state)
{
    (void)state;
    struct rcache *c;
    assert_int_equal(rcache_create(16, 1 << 20, &c), 0);
    static uint8_t small[100], large[5000], out[8192];
    for (size_t i = 0; i < sizeof(small); i++)
        small[i] = (uint8_t)(i * 7);
    for (size_t i = 0; i < sizeof(large); i++)
        large[i] = (uint8_t)(i * 13 + 1);
    serve(c, 1, 10, 0, small, sizeof(small));
    serve(c, 1, 11, -17, large, sizeof(large));
    serve(c, 2, 10, 0, NULL, 0);
    int st;
    uint32_t len;
    assert_int_equal(rcache_begin(c, 1, 10, &st, out, sizeof(out), &len), RCACHE_DONE);
    assert_int_equal(st, 0);
    assert_int_equal(len, sizeof(small));
    assert_memory_equal(out, small, sizeof(small));
    assert_int_equal(rcache_begin(c, 1, 11, &st, out, sizeof(out), &len), RCACHE_DONE);
    assert_int_equal(st, -17);
    assert_int_equal(len, sizeof(large));
    assert_memory_equal(out, large, sizeof(large));
    /* A short buffer gets what fits. */
    assert_int_equal(rcache_begin(c, 1, 11, &st, out, 64, &len), RCACHE_DONE);
    assert_int_equal(len, 64);
    assert_memory_equal(out, large, 64);
    assert_int_equal(rcache_begin(c, 2, 10, &st, out, sizeof(out), &len), RCACHE_DONE);
    assert_int_equal(len, 0);
    rcache_destroy(c);
}

static void test_oldest_go_first(void **state)
{
    (void)state;
    struct rcache *c;
    assert_int_equal(rcache_create(4, 1 << 20, &c), 0);
    uint8_t p[32] = {1};
    for (uint64_t seq = 1; seq <= 6; seq++)
        serve(c, 9, seq, 0, p, sizeof(p));
    int st;
    uint32_t len;
    uint8_t out[64];
    /* 1 and 2 went; 3 to 6 stay. */
    for (uint64_t seq = 3; seq <= 6; seq++)
        assert_int_equal(rcache_begin(c, 9, seq, &st, out, sizeof(out), &len), RCACHE_DONE);
    assert_int_equal(rcache_begin(c, 9, 1, &st, out, sizeof(out), &len), RCACHE_NEW);
    rcache_end(c, 9, 1, 0, p, sizeof(p));
    rcache_destroy(c);
}

struct copy {
    struct rcache *c;
    int found, st;
    uint32_t len;
    uint8_t out[16];
    int done; /* atomic */
};

static void *second_copy(void *arg)
{
    struct copy *k = arg;
    k->found = rcache_begin(k->c, 5, 50, &k->st, k->out, sizeof(k->out), &k->len);
    __atomic_store_n(&k->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void test_copy_waits(void **state)
{
    (void)state;
    struct rcache *c;
    assert_int_equal(rcache_create(16, 1 << 20, &c), 0);
    int st;
    uint32_t len;
    uint8_t out[16];
    for (int forget = 0; forget < 2; forget++) {
        assert_int_equal(rcache_begin(c, 5, 50, &st, out, sizeof(out), &len), RCACHE_NEW);
        struct copy k = {.c = c};
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, second_copy, &k), 0);
        usleep(50 * 1000);
        /* Still waiting (a slow machine could only hide a failure). */
        assert_int_equal(__atomic_load_n(&k.done, __ATOMIC_ACQUIRE), 0);
        if (forget)
            rcache_forget(c, 5, 50);
        else
            rcache_end(c, 5, 50, -3, "abc", 3);
        pthread_join(t, NULL);
        if (forget) {
            /* The copy is served as if first: its reply is the one kept. */
            assert_int_equal(k.found, RCACHE_NEW);
            rcache_end(c, 5, 50, 0, "xy", 2);
            assert_int_equal(rcache_begin(c, 5, 50, &st, out, sizeof(out), &len), RCACHE_DONE);
            assert_int_equal(st, 0);
            assert_int_equal(len, 2);
        } else {
            assert_int_equal(k.found, RCACHE_DONE);
            assert_int_equal(k.st, -3);
            assert_int_equal(k.len, 3);
            assert_memory_equal(k.out, "abc", 3);
            rcache_destroy(c);
            assert_int_equal(rcache_create(16, 1 << 20, &c), 0);
        }
    }
    /* Forgetting a reply already kept does nothing. */
    rcache_forget(c, 5, 50);
    assert_int_equal(rcache_begin(c, 5, 50, &st, out, sizeof(out), &len), RCACHE_DONE);
    rcache_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replies_kept),
        cmocka_unit_test(test_oldest_go_first),
        cmocka_unit_test(test_copy_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
