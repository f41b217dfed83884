/*
 * Unit tests of the OST's pool of destroyed objects (src/storage/store.c):
 * a destroyed object is emptied into pool/ rather than unlinked, a new
 * object takes that inode back (no inode allocated), what it then holds
 * reads back checked, and the pool outlives a restart, except a pooled
 * file that is not empty.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "proto/csum.h"
#include "proto/ids.h"
#include "storage/ost.h"
#include "storage/recovery.h"
#include "storage/store.h"
#include "storage/sums.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LEN (64u << 10)

static struct ost *o;
static pthread_rwlock_t lk = PTHREAD_RWLOCK_INITIALIZER;
static char path[4200];

static int setup(void **state)
{
    (void)state;
    if (tmpdir_make("ostpool"))
        return -1;
    snprintf(path, sizeof(path), "%s/ost", tmpdir);
    recovery_boot_load();
    return ost_open(path, 0, &o);
}

static int teardown(void **state)
{
    (void)state;
    ost_close(o);
    free(o);
    o = NULL;
    char cmd[4400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void reopen(void)
{
    ost_close(o);
    free(o);
    o = NULL;
    assert_int_equal(ost_open(path, 0, &o), 0);
}

static void write_obj(const char *name, uint8_t seed)
{
    static uint8_t data[LEN], crcs[LEN / PROTO_CSUM_BLOCK * 4 + 8];
    memset(data, seed, sizeof(data));
    proto_csum_fill(0, data, LEN, crcs);
    struct proto_write_req q = {.offset = 0};
    q.crcs.p = crcs;
    q.crcs.len = proto_csum_chunks(0, LEN) * 4;
    assert_int_equal(ost_write(o, name, &lk, &q, data, LEN, false, false), 0);
}

static void read_obj(const char *name, uint8_t seed)
{
    static uint8_t buf[LEN], crcs[LEN / PROTO_CSUM_BLOCK * 4 + 8];
    struct sums_obj so;
    assert_int_equal(sums_open(o->dirfd, name, SUMS_READ, &so), 0);
    uint32_t at, got;
    assert_int_equal(ost_read_checked(o, name, &so, 0, LEN, buf, &at, &got, crcs), 0);
    sums_close(&so);
    assert_int_equal(got, LEN);
    for (uint32_t i = 0; i < LEN; i++)
        if (buf[at + i] != seed)
            fail_msg("byte %u of %s is %u, not %u", i, name, buf[at + i], seed);
}

/* How many files pool/ holds. */
static int pooled(void)
{
    char p[4300];
    snprintf(p, sizeof(p), "%s/pool", path);
    DIR *d = opendir(p);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        n += de->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static ino_t inode_of(const char *name)
{
    struct stat st;
    assert_int_equal(fstatat(o->dirfd, name, &st, 0), 0);
    return st.st_ino;
}

static void test_destroy_then_create_reuses(void **state)
{
    (void)state;
    char a[128], b[128];
    proto_obj_name(a, sizeof(a), 0x100, 0, 0);
    proto_obj_name(b, sizeof(b), 0x200, 0, 1);
    write_obj(a, 7);
    read_obj(a, 7);
    ino_t ia = inode_of(a);
    uint64_t objects = o->objects;
    assert_int_equal(ost_destroy(o, a, &lk), 0);
    struct stat st;
    assert_int_equal(fstatat(o->dirfd, a, &st, 0), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(pooled(), 1);
    assert_int_equal(o->objects, objects - 1);
    /* The new object is the old inode, emptied: no old byte or checksum. */
    write_obj(b, 9);
    assert_int_equal(inode_of(b), ia);
    assert_int_equal(pooled(), 0);
    assert_int_equal(o->objects, objects);
    read_obj(b, 9);
    /* A write to an existing object leaves the pool alone. */
    assert_int_equal(ost_destroy(o, b, &lk), 0);
    write_obj(a, 3);
    write_obj(a, 4);
    read_obj(a, 4);
    assert_int_equal(pooled(), 0);
}

static void test_pool_survives_restart(void **state)
{
    (void)state;
    char a[128], b[128], c[128];
    proto_obj_name(a, sizeof(a), 0x300, 0, 0);
    proto_obj_name(b, sizeof(b), 0x400, 0, 0);
    proto_obj_name(c, sizeof(c), 0x500, 0, 0);
    write_obj(a, 1);
    write_obj(b, 2);
    ino_t ia = inode_of(a);
    assert_int_equal(ost_destroy(o, a, &lk), 0);
    assert_int_equal(ost_destroy(o, b, &lk), 0);
    assert_int_equal(pooled(), 2);
    /* One pooled file holds bytes (a crash while it was emptied): it goes
     * at the restart, the empty one stays. */
    char p[4300];
    snprintf(p, sizeof(p), "%s/pool", path);
    DIR *d = opendir(p);
    struct dirent *de;
    while ((de = readdir(d))) {
        char f[4600];
        snprintf(f, sizeof(f), "%s/%s", p, de->d_name);
        struct stat st;
        if (de->d_name[0] != '.' && stat(f, &st) == 0 && st.st_ino != ia) {
            int fd = open(f, O_WRONLY);
            assert_true(fd >= 0);
            assert_int_equal(write(fd, "x", 1), 1);
            close(fd);
        }
    }
    closedir(d);
    reopen();
    assert_int_equal(pooled(), 1);
    write_obj(c, 5);
    assert_int_equal(inode_of(c), ia);
    read_obj(c, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_destroy_then_create_reuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_survives_restart, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
