/*
 * The OST's block checksums (src/storage/sums.c): after any sequence of
 * writes, truncates and punches every block checks, a changed byte is
 * caught, and a crash between the checksum and the data leaves the block
 * readable. The first blocks' checksums live in the object's attribute, so
 * a small object has no checksum file; objects from before that still
 * check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/crc.h"
#include "proto/csum.h"
#include "storage/sums.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#define BS   PROTO_CSUM_BLOCK
#define OBJ  "obj"
#define MAXS (16 * BS)

struct fx {
    char dir[64];
    int dirfd;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/stria_test_sums.XXXXXX");
    if (!f || !mkdtemp(f->dir))
        return -1;
    f->dirfd = open(f->dir, O_DIRECTORY | O_RDONLY);
    *state = f;
    return f->dirfd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    unlinkat(f->dirfd, OBJ, 0);
    unlinkat(f->dirfd, OBJ ".c", 0);
    close(f->dirfd);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* As stord does: checksums first, then the data. data_too false stops
 * between the two, as a crash would. */
static void do_write(struct fx *f, uint64_t off, const uint8_t *data, uint32_t len, bool data_too)
{
    uint8_t crcs[4 * (MAXS / BS + 2)];
    proto_csum_fill(off, data, len, crcs);
    struct sums_obj o;
    assert_int_equal(sums_open(f->dirfd, OBJ, SUMS_WRITE, &o), 0);
    assert_int_equal(sums_before_write(&o, off, data, len, crcs), 0);
    if (data_too)
        assert_int_equal(pwrite(o.fd, data, len, (off_t)off), (ssize_t)len);
    sums_close(&o);
}

static void do_truncate(struct fx *f, uint64_t size)
{
    struct sums_obj o;
    assert_int_equal(sums_open(f->dirfd, OBJ, SUMS_CHANGE, &o), 0);
    assert_int_equal(sums_before_resize(&o, size), 0);
    assert_int_equal(ftruncate(o.fd, (off_t)size), 0);
    sums_close(&o);
}

static void do_punch(struct fx *f, uint64_t off, uint64_t len)
{
    struct sums_obj o;
    assert_int_equal(sums_open(f->dirfd, OBJ, SUMS_CHANGE, &o), 0);
    assert_int_equal(sums_before_punch(&o, off, len), 0);
    assert_int_equal(
        fallocate(o.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len), 0);
    sums_close(&o);
}

/* Check every block of the object; 0 or -EIO (with *bad). */
static int check_all(struct fx *f, uint64_t *bad)
{
    struct sums_obj o;
    assert_int_equal(sums_open(f->dirfd, OBJ, SUMS_READ, &o), 0);
    uint32_t n = (uint32_t)((o.size + BS - 1) / BS);
    uint8_t *buf = calloc(1, (size_t)n * BS + 1);
    assert_non_null(buf);
    assert_true(pread(o.fd, buf, o.size, 0) == (ssize_t)o.size);
    int rc = sums_verify(&o, 0, n, buf, NULL, bad);
    free(buf);
    sums_close(&o);
    return rc;
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random writes, truncates and punches: every block checks after each,
 * and the object's bytes are what a model says. */
static void test_random_ops(void **state)
{
    struct fx *f = *state;
    uint8_t *model = calloc(1, MAXS), *data = malloc(MAXS), *got = malloc(MAXS);
    assert_true(model && data && got);
    uint64_t size = 0, seed = 0x9e3779b97f4a7c15ull, bad = 0;
    for (int step = 0; step < 3000; step++) {
        uint64_t r = step == 0 ? 0 : rnd(&seed) % 10; /* the object exists from the first */
        uint64_t off = rnd(&seed) % MAXS;
        /* Lengths: often around a block, sometimes tiny or long. */
        uint64_t len = rnd(&seed) % 3 == 0 ? rnd(&seed) % 64 + 1 : rnd(&seed) % (3 * BS) + 1;
        if (off + len > MAXS)
            len = MAXS - off;
        if (r < 6) {
            for (uint64_t i = 0; i < len; i++)
                data[i] = (uint8_t)rnd(&seed);
            do_write(f, off, data, (uint32_t)len, true);
            memcpy(model + off, data, len);
            size = off + len > size ? off + len : size;
        } else if (r < 8) {
            uint64_t ns = off;
            do_truncate(f, ns);
            if (ns > size)
                memset(model + size, 0, ns - size);
            else
                memset(model + ns, 0, MAXS - ns);
            size = ns;
        } else {
            do_punch(f, off, len);
            if (off < size)
                memset(model + off, 0, (off + len > size ? size : off + len) - off);
        }
        int rc = check_all(f, &bad);
        if (rc)
            print_error("step %d (op %llu off %llu len %llu): block at %llu fails\n", step,
                        (unsigned long long)r, (unsigned long long)off, (unsigned long long)len,
                        (unsigned long long)bad);
        assert_int_equal(rc, 0);
        int fd = openat(f->dirfd, OBJ, O_RDONLY);
        assert_true(pread(fd, got, MAXS, 0) == (ssize_t)size);
        close(fd);
        assert_memory_equal(got, model, size);
    }
    free(model);
    free(data);
    free(got);
}

/* One changed byte anywhere fails its block, and only its block. */
static void test_flip_caught(void **state)
{
    struct fx *f = *state;
    uint8_t *data = malloc(5 * BS + 100);
    for (uint32_t i = 0; i < 5 * BS + 100; i++)
        data[i] = (uint8_t)(i * 7);
    do_write(f, 0, data, 5 * BS + 100, true);
    uint64_t bad = 0;
    assert_int_equal(check_all(f, &bad), 0);
    int fd = openat(f->dirfd, OBJ, O_RDWR);
    uint8_t b = (uint8_t)~data[3 * BS + 5];
    assert_int_equal(pwrite(fd, &b, 1, 3 * BS + 5), 1);
    assert_int_equal(check_all(f, &bad), -EIO);
    assert_int_equal(bad, 3 * BS);
    /* The last, partial block too. */
    b = data[3 * BS + 5];
    assert_int_equal(pwrite(fd, &b, 1, 3 * BS + 5), 1);
    b = (uint8_t)~data[5 * BS + 50];
    assert_int_equal(pwrite(fd, &b, 1, 5 * BS + 50), 1);
    assert_int_equal(check_all(f, &bad), -EIO);
    assert_int_equal(bad, 5 * BS);
    close(fd);
    free(data);
}

/* A crash after the checksums and before the data: the old bytes still
 * check; so do the new ones once written; a mix of neither does not. */
static void test_crash_between(void **state)
{
    struct fx *f = *state;
    uint8_t a[BS], b[BS];
    memset(a, 'a', sizeof(a));
    memset(b, 'b', sizeof(b));
    uint64_t bad;
    do_write(f, 0, a, BS, true);
    do_write(f, 0, b, BS, false); /* the crash */
    assert_int_equal(check_all(f, &bad), 0);
    do_write(f, 0, b, BS, true); /* the client's resend */
    assert_int_equal(check_all(f, &bad), 0);
    int fd = openat(f->dirfd, OBJ, O_RDWR);
    assert_int_equal(pwrite(fd, a, BS / 2, 0), BS / 2); /* half old, half new */
    close(fd);
    assert_int_equal(check_all(f, &bad), -EIO);
}

static void flip(struct fx *f, uint64_t off);

static uint64_t heal(struct fx *f, uint64_t *first)
{
    struct sums_obj o;
    uint64_t n = 0;
    assert_int_equal(sums_open(f->dirfd, OBJ, SUMS_CHANGE, &o), 0);
    assert_int_equal(sums_heal(&o, &n, first), 0);
    sums_close(&o);
    return n;
}

/* After an unclean stop (recovery.c): a torn block, in the head
 * and past it, gets the checksum of what it holds; blocks that check are
 * left as they are, a hole stays unchecked, and a healed object checks. */
static void test_heal(void **state)
{
    struct fx *f = *state;
    uint8_t a[12 * BS], b[BS];
    for (size_t i = 0; i < sizeof(a); i++)
        a[i] = (uint8_t)(i * 7 + 1);
    memset(b, 'b', sizeof(b));
    uint64_t bad, first = 0;
    do_write(f, 0, a, sizeof(a), true);
    do_write(f, 20 * BS, b, BS / 2, true); /* a hole between */
    assert_int_equal(heal(f, &first), 0);
    /* Torn: half of a rewrite of block 2 (head) and of block 10 (file). */
    int fd = openat(f->dirfd, OBJ, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, b, BS / 2, 2 * BS), BS / 2);
    assert_int_equal(pwrite(fd, b, BS / 2, 10 * BS + BS / 4), BS / 2);
    close(fd);
    assert_int_equal(check_all(f, &bad), -EIO);
    assert_int_equal(bad, 2 * BS);
    assert_int_equal(heal(f, &first), 2);
    assert_int_equal(first, 2 * BS);
    assert_int_equal(check_all(f, &bad), 0);
    assert_int_equal(heal(f, &first), 0);
    /* Later changes are checked as before. */
    flip(f, 3 * BS + 5);
    assert_int_equal(check_all(f, &bad), -EIO);
    assert_int_equal(bad, 3 * BS);
}

static bool has_file(struct fx *f)
{
    return faccessat(f->dirfd, OBJ ".c", F_OK, 0) == 0;
}

static void flip(struct fx *f, uint64_t off)
{
    int fd = openat(f->dirfd, OBJ, O_RDWR);
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
    b = (uint8_t)~b;
    assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
    close(fd);
}

/* An object within the head has its checksums in its attribute and no
 * checksum file; one that reaches past it gets the file for the rest, and
 * a changed byte is caught on either side. */
static void test_head_in_attribute(void **state)
{
    struct fx *f = *state;
    uint32_t len = SUMS_HEAD * BS;
    uint8_t *data = malloc(len);
    for (uint32_t i = 0; i < len; i++)
        data[i] = (uint8_t)(i * 13 + 1);
    do_write(f, 0, data, 64 << 10, true);
    do_write(f, 64 << 10, data, len - (64 << 10), true);
    assert_false(has_file(f));
    uint8_t head[SUMS_HEAD * 8];
    int fd = openat(f->dirfd, OBJ, O_RDONLY);
    assert_int_equal(fgetxattr(fd, "user.stria.c", head, sizeof(head)), sizeof(head));
    close(fd);
    uint64_t bad = 0;
    assert_int_equal(check_all(f, &bad), 0);
    flip(f, 2 * BS + 9);
    assert_int_equal(check_all(f, &bad), -EIO);
    assert_int_equal(bad, 2 * BS);
    flip(f, 2 * BS + 9);
    do_write(f, (SUMS_HEAD + 2) * BS + 7, data, 100, true);
    assert_true(has_file(f));
    assert_int_equal(check_all(f, &bad), 0);
    flip(f, (SUMS_HEAD + 2) * BS + 50);
    assert_int_equal(check_all(f, &bad), -EIO);
    assert_int_equal(bad, (SUMS_HEAD + 2) * BS);
    free(data);
}

/* An object written before the attribute (every entry in its file): its
 * head is checked from the file; a write moves the head to the attribute
 * with the entries it had. */
static void test_older_object(void **state)
{
    struct fx *f = *state;
    uint32_t nb = SUMS_HEAD + 2, len = nb * BS;
    uint8_t *data = malloc(len), ents[(SUMS_HEAD + 2) * 8] = {0};
    for (uint32_t i = 0; i < len; i++)
        data[i] = (uint8_t)(i * 5 + 3);
    for (uint32_t b = 0; b < nb; b++)
        proto_put_le32(ents + 8 * b, crc32c(0, data + (size_t)b * BS, BS));
    int fd = openat(f->dirfd, OBJ, O_RDWR | O_CREAT, 0600);
    assert_int_equal(pwrite(fd, data, len, 0), (ssize_t)len);
    close(fd);
    fd = openat(f->dirfd, OBJ ".c", O_RDWR | O_CREAT, 0600);
    assert_int_equal(pwrite(fd, ents, sizeof(ents), 0), (ssize_t)sizeof(ents));
    close(fd);
    uint64_t bad = 0;
    assert_int_equal(check_all(f, &bad), 0);
    flip(f, 3 * BS);
    assert_int_equal(check_all(f, &bad), -EIO);
    assert_int_equal(bad, 3 * BS);
    flip(f, 3 * BS);
    do_write(f, BS, data + BS, BS, true); /* block 1 again: the head moves */
    fd = openat(f->dirfd, OBJ, O_RDONLY);
    assert_int_equal(fgetxattr(fd, "user.stria.c", ents, SUMS_HEAD * 8), SUMS_HEAD * 8);
    close(fd);
    assert_int_equal(check_all(f, &bad), 0);
    flip(f, 3 * BS + 1);
    assert_int_equal(check_all(f, &bad), -EIO);
    assert_int_equal(bad, 3 * BS);
    free(data);
}

/* The wire's chunks: cut at block boundaries, checked by proto_csum_check. */
static void test_wire_chunks(void **state)
{
    (void)state;
    uint8_t data[3 * BS], crcs[16];
    memset(data, 1, sizeof(data));
    assert_int_equal(proto_csum_chunks(BS - 10, 20), 2);
    assert_int_equal(proto_csum_chunks(0, BS), 1);
    assert_int_equal(proto_csum_chunks(5, 0), 0);
    proto_csum_fill(BS - 10, data, 2 * BS, crcs);
    struct proto_blob c = {crcs, 12};
    assert_int_equal(proto_csum_check(BS - 10, data, 2 * BS, &c, NULL, NULL), 0);
    assert_int_equal(proto_le32(crcs), crc32c(0, data, 10));
    uint64_t bad;
    data[BS + 3] ^= 1;
    assert_int_equal(proto_csum_check(BS - 10, data, 2 * BS, &c, NULL, &bad), -EIO);
    assert_int_equal(bad, BS);
    c.len = 8;
    assert_int_equal(proto_csum_check(BS - 10, data, 2 * BS, &c, NULL, NULL), -EBADMSG);
}

/* A read sent from the OST's cache unread: each chunk may match its CRC or
 * the one its block had before (alt); a zero in alt matches nothing. */
static void test_wire_alt(void **state)
{
    (void)state;
    uint8_t data[2 * BS], now[8], before[8], zero[8] = {0};
    memset(data, 7, sizeof(data));
    proto_csum_fill(0, data, sizeof(data), before);
    data[5] = 8; /* block 0 was written since: its current CRC is of this */
    proto_csum_fill(0, data, sizeof(data), now);
    struct proto_blob c = {now, 8}, a = {before, 8}, z = {zero, 8}, none = {NULL, 0};
    assert_int_equal(proto_csum_check(0, data, sizeof(data), &c, &a, NULL), 0);
    data[5] = 7; /* the data as it was before that write: still passes */
    assert_int_equal(proto_csum_check(0, data, sizeof(data), &c, &a, NULL), 0);
    assert_int_equal(proto_csum_check(0, data, sizeof(data), &c, &z, NULL), -EIO);
    assert_int_equal(proto_csum_check(0, data, sizeof(data), &c, &none, NULL), -EIO);
    data[5] = 9; /* neither */
    uint64_t bad = 1;
    assert_int_equal(proto_csum_check(0, data, sizeof(data), &c, &a, &bad), -EIO);
    assert_int_equal(bad, 0);
    /* alt, when given, has one CRC per chunk too. */
    a.len = 4;
    assert_int_equal(proto_csum_check(0, data, sizeof(data), &c, &a, NULL), -EBADMSG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_random_ops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flip_caught, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_between, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_head_in_attribute, setup, teardown),
        cmocka_unit_test_setup_teardown(test_older_object, setup, teardown),
        cmocka_unit_test(test_wire_chunks),
        cmocka_unit_test(test_wire_alt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
