/*
 * Unit tests of the OST's fences (src/storage/fence.c): the table every
 * write, read, truncate and punch looks its object up in. A fenced object
 * answers -ESTALE and its neighbours do not, among thousands of fences;
 * FENCE's ops keep their rules (another migration's fence, a dead one);
 * FORGET takes every fence of a file that is gone, from memory and disk,
 * and no other; and the fences on disk are what a restart finds again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "proto/ids.h"
#include "proto/proto.h"
#include "storage/fence.h"
#include "storage/recovery.h"
#include "storage/store.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOSTS    2
#define MANY     5000
#define LIST_CAP (64u << 10)

static struct stord *s;
static char path[NOSTS][700];

static int setup(void **state)
{
    (void)state;
    if (tmpdir_make("fence") || !(s = calloc(1, sizeof(*s))))
        return -1;
    recovery_boot_load();
    for (int i = 0; i < NOSTS; i++) {
        snprintf(path[i], sizeof(path[i]), "%s/ost%d", tmpdir, i);
        if (ost_open(path[i], (uint32_t)i + 1, &s->osts[i]))
            return -1;
        s->nosts++;
    }
    return fence_init(s);
}

static int teardown(void **state)
{
    (void)state;
    fence_fini(s);
    for (int i = 0; i < s->nosts; i++) {
        ost_close(s->osts[i]);
        free(s->osts[i]);
    }
    free(s);
    s = NULL;
    char cmd[800];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The daemon stopped and started again over the same OSTs. */
static void restart(void)
{
    fence_fini(s);
    assert_int_equal(fence_init(s), 0);
}

/* What a write (or a read) of the object meets. */
static int check(uint32_t ost, uint64_t ino, uint32_t comp, uint32_t stripe, bool write)
{
    struct fence_pass p;
    int rc = fence_begin(s, ost, ino, comp, stripe, write, &p);
    if (rc == 0)
        fence_end(s, &p, write);
    return rc;
}

static int fence(uint32_t ost, uint64_t ino, uint32_t comp, uint32_t stripe, uint8_t op,
                 uint64_t id)
{
    struct proto_fence_req q = {
        .ost = ost, .ino = ino, .comp = comp, .stripe = stripe, .op = op, .id = id};
    struct proto_fence_rep r;
    return fence_apply(s, &q, &r);
}

/* Whether OST ost keeps a fence of the object on disk. */
static bool on_disk(uint32_t ost, uint64_t ino, uint32_t comp, uint32_t stripe)
{
    char p[900];
    snprintf(p, sizeof(p), "%s/fence/%016" PRIx64 ".%u.%u", path[ost - 1], ino, comp, stripe);
    return access(p, F_OK) == 0;
}

/* A fence as the daemon writes it (and finds it at its start), without
 * the sync each of FENCE's takes. */
static void put_on_disk(uint32_t ost, uint64_t ino, uint32_t comp, uint32_t stripe, uint64_t id)
{
    char p[900];
    snprintf(p, sizeof(p), "%s/fence/%016" PRIx64 ".%u.%u", path[ost - 1], ino, comp, stripe);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fprintf(fp, "%" PRIx64 " 1\n", id);
    fclose(fp);
}

/* How many fences of inode ino OST ost keeps on disk. */
static int on_disk_of(uint32_t ost, uint64_t ino)
{
    char p[800], prefix[32];
    snprintf(p, sizeof(p), "%s/fence", path[ost - 1]);
    snprintf(prefix, sizeof(prefix), "%016" PRIx64 ".", ino);
    DIR *d = opendir(p);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* The object of fence i of MANY: inodes of 8 stripes, even ones on OST
 * 1, odd ones on OST 2. */
static void many_obj(int i, uint32_t *ost, uint64_t *ino, uint32_t *stripe)
{
    *ino = 0x1000 + (uint64_t)i / 8;
    *stripe = (uint32_t)i % 8;
    *ost = 1 + *stripe % NOSTS;
}

static void test_many_fences(void **state)
{
    (void)state;
    /* Thousands of dead fences, as a daemon finds them on disk after many
     * migrations (written here without a sync each: the load is tested). */
    for (int i = 0; i < MANY; i++) {
        uint32_t ost, stripe;
        uint64_t ino;
        many_obj(i, &ost, &ino, &stripe);
        put_on_disk(ost, ino, 4, stripe, (uint64_t)i + 1);
    }
    restart();
    for (int i = 0; i < MANY; i++) {
        uint32_t ost, stripe;
        uint64_t ino;
        many_obj(i, &ost, &ino, &stripe);
        assert_int_equal(check(ost, ino, 4, stripe, true), -ESTALE);
        assert_int_equal(check(ost, ino, 4, stripe, false), -ESTALE);
        /* Its neighbours: the next generation, another stripe, the same
         * name on the other OST. */
        assert_int_equal(check(ost, ino, 8, stripe, true), 0);
        assert_int_equal(check(ost, ino, 4, stripe + 100, true), 0);
        assert_int_equal(check(1 + ost % NOSTS, ino, 4, stripe, true), 0);
    }
    /* One set by FENCE among them is found as well. */
    assert_int_equal(fence(2, 0x1001, 8, 1, FENCE_SET, 7), 0);
    assert_int_equal(check(2, 0x1001, 8, 1, true), -ESTALE);
    assert_int_equal(check(2, 0x1001, 8, 1, false), 0);
    assert_int_equal(check(2, 0x1001, 4, 1, false), -ESTALE);
}

static void test_set_clear_dead(void **state)
{
    (void)state;
    assert_int_equal(check(1, 0x42, 0, 0, true), 0); /* no fence at all */
    assert_int_equal(fence(1, 0x42, 0, 0, FENCE_SET, 7), 0);
    assert_true(on_disk(1, 0x42, 0, 0));
    assert_int_equal(check(1, 0x42, 0, 0, true), -ESTALE);
    assert_int_equal(check(1, 0x42, 0, 0, false), 0); /* a copy still reads it */
    assert_int_equal(fence(1, 0x42, 0, 0, FENCE_SET, 8), -EBUSY);
    assert_int_equal(fence(1, 0x42, 0, 0, FENCE_CLEAR, 8), 0); /* not 8's: stays */
    assert_int_equal(check(1, 0x42, 0, 0, true), -ESTALE);
    assert_int_equal(fence(1, 0x42, 0, 0, FENCE_CLEAR, 7), 0);
    assert_false(on_disk(1, 0x42, 0, 0));
    assert_int_equal(check(1, 0x42, 0, 0, true), 0);
    /* Set, then dead: reads stop too, and nothing clears it. */
    assert_int_equal(fence(1, 0x42, 0, 0, FENCE_SET, 9), 0);
    assert_int_equal(fence(1, 0x42, 0, 0, FENCE_DEAD, 9), 0);
    assert_int_equal(check(1, 0x42, 0, 0, false), -ESTALE);
    assert_int_equal(fence(1, 0x42, 0, 0, FENCE_CLEAR, 0), 0);
    assert_int_equal(fence(1, 0x42, 0, 0, FENCE_SET, 9), -ESTALE);
    assert_int_equal(check(1, 0x42, 0, 0, true), -ESTALE);
    assert_true(on_disk(1, 0x42, 0, 0));
    assert_int_equal(fence(9, 0x42, 0, 0, FENCE_SET, 9), -ENXIO); /* no such OST */
}

/* File 0x77 migrated three times over 64 stripes of both OSTs: its
 * dead fences, one live one, and a neighbour's, all in the table. */
static void fence_a_file(void)
{
    for (uint32_t gen = 0; gen < 3; gen++)
        for (uint32_t stripe = 0; stripe < 64; stripe++)
            put_on_disk(1 + stripe % NOSTS, 0x77, 4 * gen, stripe, 10 + gen);
    put_on_disk(1, 0x78, 0, 0, 20);
    restart();
    assert_int_equal(fence(1, 0x77, 12, 0, FENCE_SET, 13), 0);
    assert_int_equal(on_disk_of(1, 0x77), 3 * 32 + 1);
    assert_int_equal(on_disk_of(2, 0x77), 3 * 32);
}

static int forget(uint32_t ost, uint64_t ino)
{
    return fence(ost, ino, 0, 0, FENCE_FORGET, 0);
}

static void test_forget_file(void **state)
{
    (void)state;
    fence_a_file();
    assert_int_equal(forget(1, 0x77), 0);
    /* Gone from OST 1, memory and disk; OST 2's wait for their own. */
    assert_int_equal(on_disk_of(1, 0x77), 0);
    for (uint32_t stripe = 0; stripe < 64; stripe += NOSTS) {
        assert_int_equal(check(1, 0x77, 0, stripe, false), 0);
        assert_int_equal(check(1, 0x77, 8, stripe, true), 0);
    }
    assert_int_equal(check(1, 0x77, 12, 0, true), 0);
    assert_int_equal(on_disk_of(2, 0x77), 3 * 32);
    assert_int_equal(check(2, 0x77, 4, 1, false), -ESTALE);
    assert_int_equal(forget(2, 0x77), 0);
    assert_int_equal(on_disk_of(2, 0x77), 0);
    assert_int_equal(check(2, 0x77, 4, 1, false), 0);
    /* The neighbour keeps its fence; forgetting twice is forgetting. */
    assert_int_equal(check(1, 0x78, 0, 0, false), -ESTALE);
    assert_int_equal(on_disk_of(1, 0x78), 1);
    assert_int_equal(forget(1, 0x77), 0);
    assert_int_equal(forget(1, 0x99), 0);
    /* A restart finds what is left, and nothing of the file. */
    restart();
    assert_int_equal(check(1, 0x77, 0, 0, false), 0);
    assert_int_equal(check(2, 0x77, 8, 1, true), 0);
    assert_int_equal(check(1, 0x78, 0, 0, true), -ESTALE);
    assert_int_equal(forget(9, 0x77), -ENXIO);
}

/* What LISTOBJ lists of OST ost's fences of fan-out directory fan, into
 * a reply of cap bytes: how many, each of inode ino. */
static size_t listed(uint32_t ost, uint32_t fan, size_t cap, uint64_t ino, bool *more)
{
    static uint8_t buf[LIST_CAP];
    struct proto_enc e;
    proto_enc_init(&e, buf, cap);
    fence_list(s, s->osts[ost - 1], fan, &e, more);
    assert_int_equal(e.len % 16, 0);
    struct proto_dec d;
    proto_dec_init(&d, buf, e.len);
    for (size_t i = 0; i < e.len / 16; i++) {
        uint64_t got;
        uint32_t comp, stripe;
        proto_get_U64(&d, &got);
        proto_get_U32(&d, &comp);
        proto_get_U32(&d, &stripe);
        assert_int_equal(got, ino);
        assert_int_equal(1 + stripe % NOSTS, ost);
    }
    return e.len / 16;
}

static void test_list_by_fan(void **state)
{
    (void)state;
    fence_a_file();
    bool more;
    uint32_t fan = proto_obj_fan(0x77);
    assert_int_equal(listed(1, fan, LIST_CAP, 0x77, &more), 3 * 32 + 1);
    assert_false(more);
    assert_int_equal(listed(2, fan, LIST_CAP, 0x77, &more), 3 * 32);
    assert_int_equal(listed(1, proto_obj_fan(0x78), 1024, 0x78, &more), 1);
    assert_int_equal(listed(2, proto_obj_fan(0x78), 1024, 0x78, &more), 0);
    /* A reply too small says so. */
    assert_int_equal(listed(1, fan, 10 * 16 + 8, 0x77, &more), 10);
    assert_true(more);
    assert_int_equal(forget(1, 0x77), 0);
    assert_int_equal(listed(1, fan, 1024, 0x77, &more), 0);
}

static void test_restart_keeps_fences(void **state)
{
    (void)state;
    assert_int_equal(fence(1, 0x50, 0, 0, FENCE_SET, 3), 0);
    assert_int_equal(fence(2, 0x50, 0, 1, FENCE_SET, 3), 0);
    assert_int_equal(fence(2, 0x50, 0, 1, FENCE_DEAD, 3), 0);
    assert_int_equal(fence(1, 0x51, 0, 0, FENCE_SET, 4), 0);
    assert_int_equal(fence(1, 0x51, 0, 0, FENCE_CLEAR, 4), 0);
    restart();
    assert_int_equal(check(1, 0x50, 0, 0, true), -ESTALE);
    assert_int_equal(check(1, 0x50, 0, 0, false), 0);
    assert_int_equal(check(2, 0x50, 0, 1, false), -ESTALE);
    assert_int_equal(check(1, 0x51, 0, 0, true), 0);
    /* Its migration's id came back with it. */
    assert_int_equal(fence(1, 0x50, 0, 0, FENCE_SET, 5), -EBUSY);
    assert_int_equal(fence(1, 0x50, 0, 0, FENCE_CLEAR, 3), 0);
    assert_int_equal(check(1, 0x50, 0, 0, true), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_many_fences, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_clear_dead, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forget_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_by_fan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_keeps_fences, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
