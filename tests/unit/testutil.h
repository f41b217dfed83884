/*
 * Helpers the cmocka unit tests share: a seeded generator that gives the
 * same sequence everywhere, and a temporary directory per test (flat: its
 * files are removed, then it).
 */
#ifndef STRIA_TESTUTIL_H
#define STRIA_TESTUTIL_H

#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* xorshift64*: the same sequence on every platform and libc. */
static uint64_t rng_state;

static inline void rng_seed(uint64_t seed)
{
    rng_state = seed ? seed : 1;
}

static inline uint64_t rng_next(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dull;
}

static inline uint64_t rng_below(uint64_t n)
{
    return rng_next() % n;
}

/* Short enough that every path built from it fits in PATH_MAX. */
static char tmpdir[512];

/* Make tmpdir under $TMPDIR (or /tmp) named after the test. */
static inline int tmpdir_make(const char *name)
{
    const char *base = getenv("TMPDIR");
    int n = snprintf(tmpdir, sizeof(tmpdir), "%s/stria-test-%s-XXXXXX",
                     base && *base ? base : "/tmp", name);
    if (n < 0 || (size_t)n >= sizeof(tmpdir))
        return -1;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static inline int tmpdir_remove(void)
{
    DIR *d = opendir(tmpdir);
    if (d) {
        struct dirent *e;
        char p[PATH_MAX + 256];
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof(p), "%s/%s", tmpdir, e->d_name);
                unlink(p);
            }
        }
        closedir(d);
    }
    return rmdir(tmpdir);
}

#endif
