/*
 * Shared-key authentication. Every cluster has one 32-byte secret, stored
 * as hex in a key file readable only by its owner. A server sends a random
 * challenge when a connection opens; the peer proves it holds the key by
 * answering HMAC-SHA256(key, "stria-auth-v1" || challenge || client id).
 */
#ifndef STRIA_AUTH_H
#define STRIA_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define AUTH_KEY_LEN   32
#define AUTH_NONCE_LEN 32
#define AUTH_MAC_LEN   32

struct auth_key {
    uint8_t bytes[AUTH_KEY_LEN];
};

/* Load a key file (64 hex digits, optional trailing newline). Refuses a file
 * readable by group or others. Returns 0 or negative errno; err explains. */
int auth_key_load(const char *path, struct auth_key *key, char *err, size_t errlen);
/* Create a new random key file with mode 0600. */
int auth_key_generate(const char *path);
/* Fill buf with random bytes (getrandom). */
int auth_random(void *buf, size_t len);
/* The answer to a challenge. */
void auth_mac(const struct auth_key *key, const uint8_t nonce[AUTH_NONCE_LEN], uint64_t client_id,
              uint8_t out[AUTH_MAC_LEN]);
/* Constant-time comparison of the expected and received answers. */
int auth_verify(const struct auth_key *key, const uint8_t nonce[AUTH_NONCE_LEN], uint64_t client_id,
                const uint8_t mac[AUTH_MAC_LEN]);

#endif
