/*
 * Unit tests of CRC32C (crc.h) and shared-key authentication (auth.h).
 *
 * The CRC guards every message header and must match the standard
 * Castagnoli CRC bit for bit, or peers built differently cannot talk.
 * Authentication must accept exactly the holder of the cluster key
 * answering this challenge for this client, and key files must never be
 * readable by anyone but their owner.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include "common/auth.h"
#include "common/crc.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int setup(void **state)
{
    (void)state;
    return tmpdir_make("auth");
}

static int teardown(void **state)
{
    (void)state;
    return tmpdir_remove();
}

static void tmp_path(const char *name, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", tmpdir, name);
}

static void write_mode(const char *path, const char *text, size_t len, mode_t mode)
{
    unlink(path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, mode), 0);
}

/* ---- CRC32C ----------------------------------------------------------- */

static void test_crc_check_value(void **state)
{
    (void)state;
    assert_int_equal(crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(crc32c(0, "", 0), 0);
    assert_int_equal(crc32c(0, "a", 1), 0xc1d04330u);
}

/* The 32-byte test patterns of RFC 3720 (iSCSI), appendix B.4. */
static void test_crc_rfc3720_vectors(void **state)
{
    (void)state;
    uint8_t b[32];
    memset(b, 0, sizeof(b));
    assert_int_equal(crc32c(0, b, sizeof(b)), 0x8a9136aau);
    memset(b, 0xff, sizeof(b));
    assert_int_equal(crc32c(0, b, sizeof(b)), 0x62a8ab43u);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)i;
    assert_int_equal(crc32c(0, b, sizeof(b)), 0x46dd794eu);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)(31 - i);
    assert_int_equal(crc32c(0, b, sizeof(b)), 0x113fdb5cu);
}

static void test_crc_chaining(void **state)
{
    (void)state;
    const char *s = "123456789";
    for (size_t cut = 0; cut <= 9; cut++)
        assert_int_equal(crc32c(crc32c(0, s, cut), s + cut, 9 - cut), 0xe3069283u);

    /* A larger buffer in pieces of every awkward size, as a stream arrives;
     * SIMD code paths differ by length and alignment. */
    static uint8_t big[100000];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < sizeof(big); i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        big[i] = (uint8_t)x;
    }
    uint32_t whole = crc32c(0, big, sizeof(big));
    for (size_t step = 1; step < 300; step += 7) {
        uint32_t c = 0;
        for (size_t off = 0; off < sizeof(big); off += step)
            c = crc32c(c, big + off, MIN(step, sizeof(big) - off));
        assert_int_equal(c, whole);
    }
    /* Unaligned starts agree with a copy at an aligned address. */
    static uint8_t copy[1024];
    for (size_t a = 0; a < 16; a++) {
        memcpy(copy, big + a, 1000);
        assert_int_equal(crc32c(0, big + a, 1000), crc32c(0, copy, 1000));
    }
    /* Any single flipped bit changes it. */
    uint8_t m[64];
    memcpy(m, big, sizeof(m));
    uint32_t ref = crc32c(0, m, sizeof(m));
    for (size_t i = 0; i < sizeof(m) * 8; i++) {
        m[i / 8] ^= (uint8_t)(1u << (i % 8));
        assert_int_not_equal(crc32c(0, m, sizeof(m)), ref);
        m[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
}

/* ---- key files -------------------------------------------------------- */

static void test_key_generate_and_load(void **state)
{
    (void)state;
    char path[PATH_MAX + 32], err[512] = "";
    tmp_path("gen.key", path, sizeof(path));
    /* Even under a permissive umask the key is for its owner only. */
    mode_t old = umask(0);
    int rc = auth_key_generate(path);
    umask(old);
    assert_int_equal(rc, 0);

    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_size, 2 * AUTH_KEY_LEN + 1);

    struct auth_key k1, k2;
    assert_int_equal(auth_key_load(path, &k1, err, sizeof(err)), 0);

    /* What was loaded is what the file says. */
    char *text = NULL;
    assert_int_equal(util_read_file(path, 4096, &text, NULL), 0);
    assert_int_equal(text[2 * AUTH_KEY_LEN], '\n');
    char hex[2 * AUTH_KEY_LEN + 1];
    util_hex(k1.bytes, AUTH_KEY_LEN, hex);
    assert_memory_equal(text, hex, 2 * AUTH_KEY_LEN);
    free(text);

    /* A second key is a different key; regenerating replaces the file. */
    assert_int_equal(auth_key_generate(path), 0);
    assert_int_equal(auth_key_load(path, &k2, err, sizeof(err)), 0);
    assert_memory_not_equal(k1.bytes, k2.bytes, AUTH_KEY_LEN);
    /* No temporary file is left behind. */
    DIR *d = opendir(tmpdir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        assert_null(strstr(e->d_name, ".tmp"));
    closedir(d);
}

static const char good_hex[] = "000102030405060708090a0b0c0d0e0f"
                               "f0e1d2c3b4a5968778695a4b3c2d1e0f";

static void test_key_load_formats(void **state)
{
    (void)state;
    char path[PATH_MAX + 32], err[512];
    tmp_path("fmt.key", path, sizeof(path));
    struct auth_key k;

    const char *ok[] = {"%s", "%s\n", "%s\r\n", "%s  \n"};
    for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
        char text[128];
        snprintf(text, sizeof(text), ok[i], good_hex);
        write_mode(path, text, strlen(text), 0600);
        memset(&k, 0, sizeof(k));
        assert_int_equal(auth_key_load(path, &k, err, sizeof(err)), 0);
        assert_int_equal(k.bytes[1], 0x01);
        assert_int_equal(k.bytes[16], 0xf0);
        assert_int_equal(k.bytes[31], 0x0f);
    }
    /* Owner read-only is fine too. */
    write_mode(path, good_hex, 64, 0400);
    assert_int_equal(auth_key_load(path, &k, err, sizeof(err)), 0);

    char text[256];
    const char *bad[] = {
        "", "\n", "0001", /* far too short */
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        write_mode(path, bad[i], strlen(bad[i]), 0600);
        assert_int_equal(auth_key_load(path, &k, err, sizeof(err)), -EINVAL);
    }
    /* 63 and 65 digits. */
    write_mode(path, good_hex, 63, 0600);
    assert_int_equal(auth_key_load(path, &k, err, sizeof(err)), -EINVAL);
    snprintf(text, sizeof(text), "%s0", good_hex);
    write_mode(path, text, strlen(text), 0600);
    assert_int_equal(auth_key_load(path, &k, err, sizeof(err)), -EINVAL);
    /* Two keys, or a key and a comment. */
    snprintf(text, sizeof(text), "%s\n%s\n", good_hex, good_hex);
    write_mode(path, text, strlen(text), 0600);
    assert_int_equal(auth_key_load(path, &k, err, sizeof(err)), -EINVAL);
    /* Right length, not hex: in each position, and a 0x prefix. */
    for (size_t pos = 0; pos < 64; pos += 9) {
        memcpy(text, good_hex, 65);
        text[pos] = 'g';
        write_mode(path, text, 64, 0600);
        assert_int_equal(auth_key_load(path, &k, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, path));
    }
    memcpy(text, good_hex, 65);
    text[0] = '0';
    text[1] = 'x';
    write_mode(path, text, 64, 0600);
    assert_int_equal(auth_key_load(path, &k, err, sizeof(err)), -EINVAL);
    /* A NUL byte inside. */
    memcpy(text, good_hex, 65);
    text[10] = '\0';
    write_mode(path, text, 64, 0600);
    assert_int_equal(auth_key_load(path, &k, err, sizeof(err)), -EINVAL);
}

static void test_key_load_refuses_open_permissions(void **state)
{
    (void)state;
    char path[PATH_MAX + 32], err[512] = "";
    tmp_path("perm.key", path, sizeof(path));
    struct auth_key k;
    const mode_t modes[] = {0644, 0640, 0604, 0660, 0601, 0777};
    for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
        write_mode(path, good_hex, 64, modes[i]);
        err[0] = '\0';
        if (auth_key_load(path, &k, err, sizeof(err)) != -EPERM)
            fail_msg("key file with mode %o accepted", (unsigned)modes[i]);
        assert_non_null(strstr(err, path));
    }

    tmp_path("missing.key", path, sizeof(path));
    assert_int_equal(auth_key_load(path, &k, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, path));
}

/* ---- challenge and answer --------------------------------------------- */

static void make_key(struct auth_key *k, uint8_t seed)
{
    for (int i = 0; i < AUTH_KEY_LEN; i++)
        k->bytes[i] = (uint8_t)(seed + 13 * i);
}

static void test_mac_verify(void **state)
{
    (void)state;
    struct auth_key key, other;
    uint8_t nonce[AUTH_NONCE_LEN], mac[AUTH_MAC_LEN], mac2[AUTH_MAC_LEN];
    make_key(&key, 1);
    for (int i = 0; i < AUTH_NONCE_LEN; i++)
        nonce[i] = (uint8_t)(200 - i);
    const uint64_t client = 0x0123456789abcdefull;

    auth_mac(&key, nonce, client, mac);
    assert_int_equal(auth_verify(&key, nonce, client, mac), 0);
    auth_mac(&key, nonce, client, mac2);
    assert_memory_equal(mac, mac2, AUTH_MAC_LEN);

    /* A key differing in any one bit. */
    for (int i = 0; i < AUTH_KEY_LEN * 8; i += 5) {
        other = key;
        other.bytes[i / 8] ^= (uint8_t)(1u << (i % 8));
        assert_int_equal(auth_verify(&other, nonce, client, mac), -EACCES);
    }
    make_key(&other, 2);
    assert_int_equal(auth_verify(&other, nonce, client, mac), -EACCES);

    /* A different challenge: an answer cannot be replayed. */
    for (int i = 0; i < AUTH_NONCE_LEN; i++) {
        uint8_t n2[AUTH_NONCE_LEN];
        memcpy(n2, nonce, sizeof(n2));
        n2[i] ^= 0x80;
        assert_int_equal(auth_verify(&key, n2, client, mac), -EACCES);
    }

    /* A different client id: one client cannot answer as another. */
    const uint64_t others[] = {client + 1, client ^ (1ull << 63), 0, UINT64_MAX,
                               client & 0xffffffffu};
    for (size_t i = 0; i < ARRAY_SIZE(others); i++)
        assert_int_equal(auth_verify(&key, nonce, others[i], mac), -EACCES);

    /* A tampered answer. */
    for (int i = 0; i < AUTH_MAC_LEN; i++) {
        memcpy(mac2, mac, sizeof(mac2));
        mac2[i] ^= 1;
        assert_int_equal(auth_verify(&key, nonce, client, mac2), -EACCES);
    }
}

/* The answer is HMAC-SHA256(key, "stria-auth-v1" || nonce || client id as
 * 8 little-endian bytes): peers of different builds must agree on it. */
static void test_mac_definition(void **state)
{
    (void)state;
    struct auth_key key;
    uint8_t nonce[AUTH_NONCE_LEN], mac[AUTH_MAC_LEN], want[EVP_MAX_MD_SIZE];
    make_key(&key, 7);
    for (int i = 0; i < AUTH_NONCE_LEN; i++)
        nonce[i] = (uint8_t)(i * 3);
    const uint64_t client = 0x1122334455667788ull;
    uint8_t msg[13 + AUTH_NONCE_LEN + 8];
    memcpy(msg, "stria-auth-v1", 13);
    memcpy(msg + 13, nonce, AUTH_NONCE_LEN);
    const uint8_t le[8] = {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11};
    memcpy(msg + 13 + AUTH_NONCE_LEN, le, 8);
    unsigned int len = 0;
    assert_non_null(HMAC(EVP_sha256(), key.bytes, AUTH_KEY_LEN, msg, sizeof(msg), want, &len));
    assert_int_equal(len, AUTH_MAC_LEN);
    auth_mac(&key, nonce, client, mac);
    assert_memory_equal(mac, want, AUTH_MAC_LEN);
}

static void test_random(void **state)
{
    (void)state;
    uint8_t a[AUTH_NONCE_LEN], b[AUTH_NONCE_LEN], zero[AUTH_NONCE_LEN] = {0};
    assert_int_equal(auth_random(a, sizeof(a)), 0);
    assert_int_equal(auth_random(b, sizeof(b)), 0);
    assert_memory_not_equal(a, b, sizeof(a));
    assert_memory_not_equal(a, zero, sizeof(a));
    static uint8_t big[1 << 20]; /* more than one getrandom() call may return */
    assert_int_equal(auth_random(big, sizeof(big)), 0);
    assert_int_equal(auth_random(big, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc_check_value),
        cmocka_unit_test(test_crc_rfc3720_vectors),
        cmocka_unit_test(test_crc_chaining),
        cmocka_unit_test(test_key_generate_and_load),
        cmocka_unit_test(test_key_load_formats),
        cmocka_unit_test(test_key_load_refuses_open_permissions),
        cmocka_unit_test(test_mac_verify),
        cmocka_unit_test(test_mac_definition),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
