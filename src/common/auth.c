/* HMAC via OpenSSL's one-shot HMAC(); key files as hex text. */
#include "auth.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

int auth_key_load(const char *path, struct auth_key *key, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        snprintf(err, errlen, "key file %s: %s", path, strerror(errno));
        return -errno;
    }
    if (st.st_mode & 077) {
        snprintf(err, errlen, "key file %s is readable by others (mode %o); chmod 600 it", path,
                 st.st_mode & 0777);
        return -EPERM;
    }
    char *text = NULL;
    int rc = util_read_file(path, 4096, &text, NULL);
    if (rc) {
        snprintf(err, errlen, "key file %s: %s", path, strerror(-rc));
        return rc;
    }
    size_t n = strlen(text);
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
        text[--n] = '\0';
    rc = (n == 2 * AUTH_KEY_LEN) ? util_unhex(text, key->bytes, AUTH_KEY_LEN) : -EINVAL;
    if (rc)
        snprintf(err, errlen, "key file %s: expected %d hex digits", path, 2 * AUTH_KEY_LEN);
    OPENSSL_cleanse(text, n);
    free(text);
    return rc;
}

int auth_random(void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int auth_key_generate(const char *path)
{
    uint8_t k[AUTH_KEY_LEN];
    char hex[2 * AUTH_KEY_LEN + 2];
    int rc = auth_random(k, sizeof(k));
    if (rc)
        return rc;
    util_hex(k, sizeof(k), hex);
    strcat(hex, "\n");
    rc = util_write_file_atomic(path, hex, strlen(hex), 0600);
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(hex, sizeof(hex));
    return rc;
}

void auth_mac(const struct auth_key *key, const uint8_t nonce[AUTH_NONCE_LEN], uint64_t client_id,
              uint8_t out[AUTH_MAC_LEN])
{
    static const char tag[] = "stria-auth-v1";
    uint8_t msg[sizeof(tag) - 1 + AUTH_NONCE_LEN + 8];
    memcpy(msg, tag, sizeof(tag) - 1);
    memcpy(msg + sizeof(tag) - 1, nonce, AUTH_NONCE_LEN);
    for (int i = 0; i < 8; i++)
        msg[sizeof(tag) - 1 + AUTH_NONCE_LEN + i] = (uint8_t)(client_id >> (8 * i));
    unsigned int len = AUTH_MAC_LEN;
    HMAC(EVP_sha256(), key->bytes, AUTH_KEY_LEN, msg, sizeof(msg), out, &len);
}

int auth_verify(const struct auth_key *key, const uint8_t nonce[AUTH_NONCE_LEN], uint64_t client_id,
                const uint8_t mac[AUTH_MAC_LEN])
{
    uint8_t want[AUTH_MAC_LEN];
    auth_mac(key, nonce, client_id, want);
    return CRYPTO_memcmp(want, mac, AUTH_MAC_LEN) == 0 ? 0 : -EACCES;
}
