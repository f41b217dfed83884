/*
 * A repository's registry entry in libstria (src/client/policy.c): its
 * conf lines parsed, changed and removed, a path's object key, the
 * repository that holds a path, and policy lists. Entries come from MDT 0,
 * which stores whatever a root user wrote: garbage must parse to an error,
 * never past the buffers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stria/stria.h>

#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void make(struct stria_repo *r, const char *conf)
{
    memset(r, 0, sizeof(*r));
    r->len = strlen(conf);
    memcpy(r->conf, conf, r->len);
}

static void test_parse(void **state)
{
    (void)state;
    struct stria_repo r;
    make(&r, "path=/data\nbucket=b1\nprefix=train/\nendpoint=http://h:1\nregion=eu\n"
             "addressing=virtual\nexport_policy=new,changed\n");
    assert_int_equal(stria_repo_parse(&r), 0);
    assert_string_equal(r.path, "/data");
    assert_string_equal(r.t.bucket, "b1");
    assert_string_equal(r.t.endpoint, "http://h:1");
    assert_int_equal(r.t.vhost, 1);
    assert_true(stria_repo_has(&r, "export_policy", "changed"));
    assert_false(stria_repo_has(&r, "export_policy", "deleted"));
    assert_false(stria_repo_has(&r, "import_policy", "new"));
    /* No bucket, no path, a relative path: not a repository. */
    make(&r, "path=/data\n");
    assert_int_equal(stria_repo_parse(&r), -EINVAL);
    make(&r, "bucket=b\n");
    assert_int_equal(stria_repo_parse(&r), -EINVAL);
    make(&r, "path=data\nbucket=b\n");
    assert_int_equal(stria_repo_parse(&r), -EINVAL);
}

static void test_set(void **state)
{
    (void)state;
    struct stria_repo r;
    make(&r, "path=/d\nbucket=b\nsync_interval=0\n");
    assert_int_equal(stria_repo_parse(&r), 0);
    assert_int_equal(stria_repo_set(&r, "sync_interval", "60"), 0);
    assert_int_equal(stria_repo_set(&r, "export_delay", "5"), 0);
    char v[32];
    assert_int_equal(stria_repo_value(r.conf, r.len, "sync_interval", v, sizeof(v)), 0);
    assert_string_equal(v, "60");
    /* Replaced, not added twice; a name that is a prefix of another is
     * its own. */
    assert_null(strstr(strstr(r.conf, "sync_interval=") + 1, "sync_interval="));
    assert_int_equal(stria_repo_set(&r, "sync", "x"), 0);
    assert_int_equal(stria_repo_value(r.conf, r.len, "sync_interval", v, sizeof(v)), 0);
    assert_string_equal(v, "60");
    /* Removed. */
    assert_int_equal(stria_repo_set(&r, "export_delay", NULL), 0);
    assert_int_equal(stria_repo_value(r.conf, r.len, "export_delay", v, sizeof(v)), -ENOENT);
    assert_string_equal(r.path, "/d");
    /* Too long for the registry: refused, r unchanged. */
    char big[5000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    size_t len = r.len;
    assert_int_equal(stria_repo_set(&r, "import_after", big), -E2BIG);
    assert_int_equal(r.len, len);
}

static void test_key_and_for(void **state)
{
    (void)state;
    struct stria_repo v[3];
    make(&v[0], "path=/\nbucket=root\nprefix=\n");
    make(&v[1], "path=/data\nbucket=b\nprefix=p/\n");
    make(&v[2], "path=/data/sub\nbucket=c\nprefix=q/\n");
    for (int i = 0; i < 3; i++)
        assert_int_equal(stria_repo_parse(&v[i]), 0);
    assert_ptr_equal(stria_repo_for(v, 3, "/data/x"), &v[1]);
    assert_ptr_equal(stria_repo_for(v, 3, "/data/sub/y"), &v[2]);
    assert_ptr_equal(stria_repo_for(v, 3, "/database"), &v[0]); /* not below /data */
    assert_null(stria_repo_for(v + 1, 2, "/other"));
    char key[64];
    assert_int_equal(stria_repo_key(&v[1], "/data/a/b.bin", key, sizeof(key)), 0);
    assert_string_equal(key, "p/a/b.bin");
    assert_int_equal(stria_repo_key(&v[0], "/top", key, sizeof(key)), 0);
    assert_string_equal(key, "top");
    /* The directory itself is no object; a key too long is refused. */
    assert_int_equal(stria_repo_key(&v[1], "/data", key, sizeof(key)), -ENAMETOOLONG);
    char lng[200];
    snprintf(lng, sizeof(lng), "/data/%0150d", 7);
    assert_int_equal(stria_repo_key(&v[1], lng, key, sizeof(key)), -ENAMETOOLONG);
}

/* Random bytes as conf: parse answers, and every value fits its field. */
static void test_garbage(void **state)
{
    (void)state;
    for (int i = 0; i < 2000; i++) {
        struct stria_repo r;
        memset(&r, 0, sizeof(r));
        r.len = rng_below(sizeof(r.conf));
        for (size_t k = 0; k < r.len; k++) {
            uint64_t x = rng_below(8);
            r.conf[k] = x == 0 ? '\n' : x == 1 ? '=' : (char)rng_below(256);
        }
        int rc = stria_repo_parse(&r);
        assert_true(rc == 0 || rc == -EINVAL);
        assert_true(strlen(r.path) < sizeof(r.path) && strlen(r.bucket) < sizeof(r.bucket));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_key_and_for),
        cmocka_unit_test(test_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
