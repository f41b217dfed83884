/*
 * Unit tests of declarative configuration (config.h) and the parsers it is
 * built on (util_parse_size, util_parse_hostport), and util_copy.
 *
 * A mistyped config line must stop a daemon with a message that says which
 * file and line to fix, never turn silently into a default. The tests use
 * their own option table with one option of every type and write config
 * files into a private temporary directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include "common/config.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tconf {
    char *name;
    int64_t threads;
    uint64_t cache;
    bool verbose;
    struct cfg_addr listen;
    struct cfg_list peers;
    char *key_file;
};

static const struct cfg_option opts[] = {
    {"name", CFG_STR, 0, 0, "stria", false, "file system name", offsetof(struct tconf, name)},
    {"threads", CFG_INT, 1, 64, "4", false, "worker threads", offsetof(struct tconf, threads)},
    {"cache", CFG_SIZE, 4096, 1 << 30, "64M", false, "cache size", offsetof(struct tconf, cache)},
    {"verbose", CFG_BOOL, 0, 0, "false", false, "log more", offsetof(struct tconf, verbose)},
    {"listen", CFG_ADDR, 0, 0, "0.0.0.0:7000", false, "where to serve",
     offsetof(struct tconf, listen)},
    {"peer", CFG_LIST, 0, 0, NULL, false, "another node", offsetof(struct tconf, peers)},
    {"key_file", CFG_STR, 0, 0, NULL, true, "cluster key file", offsetof(struct tconf, key_file)},
};

static const struct cfg_table table = {"stria-test", "config unit test", opts, ARRAY_SIZE(opts)};

/* The same fields, but the address and the list are required. */
static const struct cfg_option req_opts[] = {
    {"listen", CFG_ADDR, 0, 0, NULL, true, "where to serve", offsetof(struct tconf, listen)},
    {"peer", CFG_LIST, 0, 0, NULL, true, "another node", offsetof(struct tconf, peers)},
};

static const struct cfg_table req_table = {"stria-test", "required options", req_opts,
                                           ARRAY_SIZE(req_opts)};

static int nfiles;

static int setup(void **state)
{
    (void)state;
    return tmpdir_make("config");
}

static int teardown(void **state)
{
    (void)state;
    return tmpdir_remove();
}

/* Write len bytes to a new file in tmpdir; its path goes into path. */
static void write_cfg(const void *text, size_t len, char *path, size_t pathlen)
{
    snprintf(path, pathlen, "%s/conf-%d.ini", tmpdir, nfiles++);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static int load(const char *text, size_t len, struct tconf *c, char *path, char *err, size_t errlen)
{
    write_cfg(text, len, path, PATH_MAX);
    memset(c, 0, sizeof(*c));
    assert_int_equal(cfg_defaults(&table, c), 0);
    err[0] = '\0';
    return cfg_load_file(&table, c, path, err, errlen);
}

/* Loading text must fail, with a message naming the file and line and,
 * if given, containing what. */
static void expect_error_len(const char *text, size_t len, int line, const char *what)
{
    char path[PATH_MAX], err[1024], want[PATH_MAX + 32];
    struct tconf c;
    int rc = load(text, len, &c, path, err, sizeof(err));
    cfg_free(&table, &c);
    if (rc >= 0)
        fail_msg("accepted: \"%s\"", text);
    snprintf(want, sizeof(want), "%s:%d:", path, line);
    if (!strstr(err, want))
        fail_msg("error for \"%s\" does not name %s: \"%s\"", text, want, err);
    if (what && !strstr(err, what))
        fail_msg("error for \"%s\" does not say \"%s\": \"%s\"", text, what, err);
}

static void expect_error(const char *text, int line, const char *what)
{
    expect_error_len(text, strlen(text), line, what);
}

/* ---- tables and files ------------------------------------------------- */

static void test_defaults(void **state)
{
    (void)state;
    struct tconf c;
    memset(&c, 0, sizeof(c));
    assert_int_equal(cfg_defaults(&table, &c), 0);
    assert_string_equal(c.name, "stria");
    assert_int_equal(c.threads, 4);
    assert_int_equal(c.cache, 64ull << 20);
    assert_false(c.verbose);
    assert_string_equal(c.listen.host, "0.0.0.0");
    assert_int_equal(c.listen.port, 7000);
    assert_int_equal(c.peers.count, 0);
    assert_null(c.key_file);
    cfg_free(&table, &c);
    assert_null(c.name);
}

static void test_load_file(void **state)
{
    (void)state;
    const char *text = "# Stria test configuration\n"
                       "\n"
                       "; another comment style\n"
                       "   # indented comment\n"
                       "name=alpha\n"
                       "\n"
                       "\t threads   =   16   \n"
                       "cache = 1GiB\n"
                       "verbose = yes\n"
                       "listen = 192.168.1.10:7100\n"
                       "peer = a:1\n"
                       "\n"
                       "peer = b:2\n"
                       "peer = c:3\n"
                       "key_file = /etc/stria/key\n"
                       "\n";
    char path[PATH_MAX], err[1024];
    struct tconf c;
    int rc = load(text, strlen(text), &c, path, err, sizeof(err));
    if (rc)
        fail_msg("rc %d: %s", rc, err);
    assert_string_equal(c.name, "alpha");
    assert_int_equal(c.threads, 16);
    assert_int_equal(c.cache, 1ull << 30);
    assert_true(c.verbose);
    assert_string_equal(c.listen.host, "192.168.1.10");
    assert_int_equal(c.listen.port, 7100);
    assert_int_equal(c.peers.count, 3);
    assert_string_equal(c.peers.items[0], "a:1");
    assert_string_equal(c.peers.items[1], "b:2");
    assert_string_equal(c.peers.items[2], "c:3");
    assert_string_equal(c.key_file, "/etc/stria/key");
    assert_int_equal(cfg_check_required(&table, &c, err, sizeof(err)), 0);
    cfg_free(&table, &c);
    assert_int_equal(c.peers.count, 0);
    assert_null(c.peers.items);
}

static void test_load_odd_but_valid(void **state)
{
    (void)state;
    /* CRLF line endings, no final newline, '=' and '#' inside values (no
     * inline comments), and an empty file. */
    const char *text = "name = a=b#c\r\nthreads = 64\r\ncache = 4K\r\nverbose = 0";
    char path[PATH_MAX], err[1024];
    struct tconf c;
    int rc = load(text, strlen(text), &c, path, err, sizeof(err));
    if (rc)
        fail_msg("rc %d: %s", rc, err);
    assert_string_equal(c.name, "a=b#c");
    assert_int_equal(c.threads, 64);
    assert_int_equal(c.cache, 4096);
    assert_false(c.verbose);
    cfg_free(&table, &c);

    assert_int_equal(load("", 0, &c, path, err, sizeof(err)), 0);
    assert_string_equal(c.name, "stria");
    cfg_free(&table, &c);
}

static void test_load_errors(void **state)
{
    (void)state;
    expect_error("# comment\nname = x\nbogus = 1\n", 3, "bogus");
    expect_error("nme = x\n", 1, "unknown option");
    expect_error("threads = 4\njust some words\n", 2, "key = value");
    expect_error("threads\n", 1, "key = value");

    /* Integers: bounds and syntax. */
    expect_error("threads = 65\n", 1, "threads");
    expect_error("threads = 0\n", 1, "threads");
    expect_error("threads = -1\n", 1, "threads");
    expect_error("threads = 4x\n", 1, "threads");
    expect_error("threads = \n", 1, "threads");
    expect_error("threads = 99999999999999999999\n", 1, "threads");

    /* Sizes: suffixes and bounds. */
    expect_error("cache = 4X\n", 1, "cache");
    expect_error("cache = 1Q\n", 1, "cache");
    expect_error("cache = 4 K\n", 1, "cache");
    expect_error("cache = K\n", 1, "cache");
    expect_error("cache = -4K\n", 1, "cache");
    expect_error("cache = 2G\n", 1, "cache");
    expect_error("cache = 1K\n", 1, "cache");

    /* Booleans. */
    expect_error("verbose = maybe\n", 1, "verbose");
    expect_error("verbose = 2\n", 1, "verbose");
    expect_error("verbose =\n", 1, "verbose");

    /* Addresses. */
    const char *addrs[] = {"nohost", "host:0",    "host:65536", ":7000",
                           "host:",  "host:http", "host:-1"};
    for (size_t i = 0; i < ARRAY_SIZE(addrs); i++) {
        char text[128];
        snprintf(text, sizeof(text), "# listen\nlisten = %s\n", addrs[i]);
        expect_error(text, 2, "listen");
    }

    /* Control characters in a value; whitespace-only lines still count. */
    expect_error("  \t \nname = a\tb\n", 2, "control character");
    expect_error("name = a\x01"
                 "b\n",
                 1, "control character");
    expect_error("name = ab\x1b\n", 1, "control character");
    expect_error("name = \x7f\n", 1, "control character");
    expect_error("threads = 4\nname = x\x08y\n", 2, "control character");
}

static void test_load_nul_byte(void **state)
{
    (void)state;
    static const char text[] = "name = ok\nname = a\0b\n";
    expect_error_len(text, sizeof(text) - 1, 2, "NUL");
}

/* A blank line is a line: a person counting lines in an editor must find
 * the one the error names. */
static void test_error_line_counts_blank_lines(void **state)
{
    (void)state;
    expect_error("name = x\n\n\nbogus = 1\n", 4, "bogus");
    expect_error("\n# c\n\nthreads = 100\n", 4, "threads");
}

static void test_load_missing_file(void **state)
{
    (void)state;
    char path[PATH_MAX + 32], err[1024] = "";
    struct tconf c;
    memset(&c, 0, sizeof(c));
    snprintf(path, sizeof(path), "%s/does-not-exist.ini", tmpdir);
    assert_int_equal(cfg_load_file(&table, &c, path, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, path));
}

static void test_list_accumulates(void **state)
{
    (void)state;
    struct tconf c;
    char err[256];
    memset(&c, 0, sizeof(c));
    for (int i = 0; i < 1024; i++) {
        char v[32];
        snprintf(v, sizeof(v), "node%d:%d", i, 1000 + i);
        assert_int_equal(cfg_set(&table, &c, "peer", v, err, sizeof(err)), 0);
    }
    assert_int_equal(c.peers.count, 1024);
    assert_string_equal(c.peers.items[0], "node0:1000");
    assert_string_equal(c.peers.items[1023], "node1023:2023");
    /* A bound, so a runaway generated file cannot eat memory. */
    assert_int_equal(cfg_set(&table, &c, "peer", "x:1", err, sizeof(err)), -E2BIG);
    assert_non_null(strstr(err, "peer"));
    cfg_free(&table, &c);
}

static void test_set(void **state)
{
    (void)state;
    struct tconf c;
    char err[256] = "";
    memset(&c, 0, sizeof(c));
    assert_int_equal(cfg_defaults(&table, &c), 0);
    assert_int_equal(cfg_set(&table, &c, "nope", "1", err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, "nope"));
    assert_int_equal(cfg_set(&table, &c, "threads", "65", err, sizeof(err)), -ERANGE);
    assert_int_equal(c.threads, 4); /* untouched by a failed set */
    assert_int_equal(cfg_set(&table, &c, "threads", "1", err, sizeof(err)), 0);
    assert_int_equal(c.threads, 1);
    assert_int_equal(cfg_set(&table, &c, "cache", "2G", err, sizeof(err)), -ERANGE);
    assert_int_equal(c.cache, 64ull << 20);
    assert_int_equal(cfg_set(&table, &c, "listen", "bad", err, sizeof(err)), -EINVAL);
    assert_string_equal(c.listen.host, "0.0.0.0");
    assert_int_equal(c.listen.port, 7000);
    /* Replacing a string frees the old one (LeakSanitizer checks). */
    for (int i = 0; i < 3; i++)
        assert_int_equal(cfg_set(&table, &c, "name", "again", err, sizeof(err)), 0);
    const char *yes[] = {"true", "yes", "1"}, *no[] = {"false", "no", "0"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cfg_set(&table, &c, "verbose", yes[i], err, sizeof(err)), 0);
        assert_true(c.verbose);
        assert_int_equal(cfg_set(&table, &c, "verbose", no[i], err, sizeof(err)), 0);
        assert_false(c.verbose);
    }
    cfg_free(&table, &c);
}

static void test_required(void **state)
{
    (void)state;
    struct tconf c;
    char err[256] = "";
    memset(&c, 0, sizeof(c));
    assert_int_equal(cfg_defaults(&table, &c), 0);
    assert_int_equal(cfg_check_required(&table, &c, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "key_file"));
    assert_int_equal(cfg_set(&table, &c, "key_file", "/k", err, sizeof(err)), 0);
    assert_int_equal(cfg_check_required(&table, &c, err, sizeof(err)), 0);
    cfg_free(&table, &c);

    memset(&c, 0, sizeof(c));
    assert_int_equal(cfg_defaults(&req_table, &c), 0);
    assert_int_equal(cfg_check_required(&req_table, &c, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "listen"));
    assert_int_equal(cfg_set(&req_table, &c, "listen", "h:1", err, sizeof(err)), 0);
    assert_int_equal(cfg_check_required(&req_table, &c, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "peer"));
    assert_int_equal(cfg_set(&req_table, &c, "peer", "p:2", err, sizeof(err)), 0);
    assert_int_equal(cfg_check_required(&req_table, &c, err, sizeof(err)), 0);
    cfg_free(&req_table, &c);
}

/* The template shipped in conf/ is generated from the table: it must load
 * as it is and mention every option; --help must too. */
static void test_template_and_help(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    cfg_print_template(&table, f);
    assert_int_equal(fclose(f), 0);
    for (size_t i = 0; i < ARRAY_SIZE(opts); i++)
        assert_non_null(strstr(text, opts[i].name));

    char path[PATH_MAX], err[1024];
    struct tconf c;
    int rc = load(text, len, &c, path, err, sizeof(err));
    if (rc)
        fail_msg("template does not load: %s", err);
    assert_string_equal(c.name, "stria");
    cfg_free(&table, &c);
    free(text);

    f = open_memstream(&text, &len);
    assert_non_null(f);
    cfg_print_help(&table, f);
    assert_int_equal(fclose(f), 0);
    for (size_t i = 0; i < ARRAY_SIZE(opts); i++)
        assert_non_null(strstr(text, opts[i].name));
    assert_non_null(strstr(text, "(required)"));
    free(text);
}

static void test_main_args(void **state)
{
    (void)state;
    const char *text = "threads = 8\nkey_file = /k\n";
    char path[PATH_MAX];
    write_cfg(text, strlen(text), path, sizeof(path));
    char set1[] = "threads=12", set2[] = "peer=x:1";
    char *argv[] = {"stria-test", "--config", path, "--set", set1, "--set", set2, NULL};
    struct tconf c;
    memset(&c, 0, sizeof(c));
    assert_int_equal(cfg_main_args(&table, &c, 7, argv), 0);
    assert_int_equal(c.threads, 12); /* --set comes after the file */
    assert_string_equal(c.key_file, "/k");
    assert_int_equal(c.peers.count, 1);
    assert_string_equal(set1, "threads=12"); /* argv is left as it was */
    cfg_free(&table, &c);

    /* Without the required key file. */
    char *argv2[] = {"stria-test", "--set", set1, NULL};
    memset(&c, 0, sizeof(c));
    assert_int_equal(cfg_main_args(&table, &c, 3, argv2), -1);
    cfg_free(&table, &c);
}

/* ---- parsers ---------------------------------------------------------- */

static void test_parse_size(void **state)
{
    (void)state;
    const struct {
        const char *s;
        uint64_t v;
    } good[] = {
        {"0", 0},
        {"4096", 4096},
        {"4K", 4096},
        {"4k", 4096},
        {"1M", 1ull << 20},
        {"2G", 2ull << 30},
        {"3T", 3ull << 40},
        {"1MiB", 1ull << 20},
        {"1KB", 1024},
        {"64KiB", 64ull << 10},
        {"16777215T", 16777215ull << 40},
        {"18446744073709551615", UINT64_MAX},
    };
    for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
        uint64_t v = 12345;
        if (util_parse_size(good[i].s, &v) != 0 || v != good[i].v)
            fail_msg("\"%s\" parsed to %llu", good[i].s, (unsigned long long)v);
    }
    const char *bad[] = {"-1",    "1X",  "",   "K",    " 1",   "1 K",       "1K ",
                         "1KiBx", "1iB", "1B", "0x10", "1.5M", "16777216T", "18446744073709551616",
                         "+",     "M1"};
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        uint64_t v = 12345;
        if (util_parse_size(bad[i], &v) != -EINVAL)
            fail_msg("\"%s\" accepted", bad[i]);
        assert_int_equal(v, 12345); /* nothing written on failure */
    }
    uint64_t v = 1;
    assert_int_equal(util_parse_size(NULL, &v), -EINVAL);
}

static void test_parse_hostport(void **state)
{
    (void)state;
    char host[256];
    uint16_t port = 0;
    assert_int_equal(util_parse_hostport("mgmt.example.com:7000", host, sizeof(host), &port), 0);
    assert_string_equal(host, "mgmt.example.com");
    assert_int_equal(port, 7000);
    assert_int_equal(util_parse_hostport("10.0.0.1:1", host, sizeof(host), &port), 0);
    assert_string_equal(host, "10.0.0.1");
    assert_int_equal(port, 1);
    assert_int_equal(util_parse_hostport("h:65535", host, sizeof(host), &port), 0);
    assert_int_equal(port, 65535);
    /* The port follows the last colon, so bracketed IPv6 works. */
    assert_int_equal(util_parse_hostport("[::1]:7001", host, sizeof(host), &port), 0);
    assert_string_equal(host, "[::1]");
    assert_int_equal(port, 7001);

    const char *bad[] = {":80",
                         "host",
                         "host:",
                         "host:0",
                         "host:65536",
                         "host:-1",
                         "host:8o",
                         "",
                         "host: 80",
                         "host:80 ",
                         "host:99999999999999999999"};
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        strcpy(host, "unchanged");
        port = 4242;
        if (util_parse_hostport(bad[i], host, sizeof(host), &port) != -EINVAL)
            fail_msg("\"%s\" accepted", bad[i]);
        assert_string_equal(host, "unchanged");
        assert_int_equal(port, 4242);
    }

    /* The host must fit with its terminator. */
    char small[8];
    assert_int_equal(util_parse_hostport("1234567:9", small, sizeof(small), &port), 0);
    assert_string_equal(small, "1234567");
    assert_int_equal(util_parse_hostport("12345678:9", small, sizeof(small), &port), -EINVAL);
}

/* util_copy copies exactly [dst, dst + n) for every distance between
 * the two buffers modulo a page (the ones it splits, 1 to 63, and
 * others) and lengths around its piece size. */
static void test_util_copy(void **state)
{
    (void)state;
    enum { CAP = 3 * 65536 };
    uint8_t *src = malloc(CAP), *dst = malloc(CAP + 8192);
    assert_non_null(src);
    assert_non_null(dst);
    for (size_t i = 0; i < CAP; i++)
        src[i] = (uint8_t)(i * 131 + 7);
    static const size_t lens[] = {0, 1, 2047, 4095, 4096, 4097, 65536, 65536 + 3, 2 * 65536 + 11};
    static const size_t dists[] = {0, 1, 16, 31, 32, 63, 64, 65, 4095};
    for (size_t d = 0; d < sizeof(dists) / sizeof(dists[0]); d++) {
        /* dst - src is dists[d] modulo 4,096 */
        size_t at = (((uintptr_t)src + dists[d]) - (uintptr_t)dst) & 4095;
        for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
            memset(dst, 0xee, CAP + 8192);
            util_copy(dst + at, src, lens[l]);
            assert_memory_equal(dst + at, src, lens[l]);
            for (size_t i = 0; i < at; i++)
                assert_int_equal(dst[i], 0xee);
            assert_int_equal(dst[at + lens[l]], 0xee);
        }
    }
    free(src);
    free(dst);
}

/* util.h promises decimal: a leading zero must not silently switch to
 * octal ("07000" is port 3584) nor "0x" to hex. Rejecting is fine too. */
static void test_numbers_are_decimal(void **state)
{
    (void)state;
    char host[256];
    uint16_t port = 0;
    int rc = util_parse_hostport("h:07000", host, sizeof(host), &port);
    if (rc == 0 && port != 7000)
        fail_msg("\"h:07000\" parsed as port %u", port);
    rc = util_parse_hostport("h:010", host, sizeof(host), &port);
    if (rc == 0 && port != 10)
        fail_msg("\"h:010\" parsed as port %u", port);

    struct tconf c;
    char err[256];
    memset(&c, 0, sizeof(c));
    assert_int_equal(cfg_defaults(&table, &c), 0);
    int rc1 = cfg_set(&table, &c, "threads", "010", err, sizeof(err));
    int64_t v1 = c.threads;
    int rc2 = cfg_set(&table, &c, "threads", "0x10", err, sizeof(err));
    int64_t v2 = c.threads;
    cfg_free(&table, &c);
    if (rc1 == 0 && v1 != 10)
        fail_msg("\"threads = 010\" gave %lld threads", (long long)v1);
    if (rc2 == 0)
        fail_msg("\"threads = 0x10\" accepted as %lld", (long long)v2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_load_odd_but_valid),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_load_nul_byte),
        cmocka_unit_test(test_error_line_counts_blank_lines),
        cmocka_unit_test(test_load_missing_file),
        cmocka_unit_test(test_list_accumulates),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_required),
        cmocka_unit_test(test_template_and_help),
        cmocka_unit_test(test_main_args),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_parse_hostport),
        cmocka_unit_test(test_numbers_are_decimal),
        cmocka_unit_test(test_util_copy),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
