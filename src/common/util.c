/* Helpers with no state; see util.h. */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint64_t util_now_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool util_find_in_path(const char *name, char *buf, size_t len)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        if (n && snprintf(buf, len, "%.*s/%s", (int)n, path, name) < (int)len &&
            access(buf, X_OK) == 0)
            return true;
        path += n + (path[n] == ':');
    }
    return false;
}

uint64_t util_now_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void util_deadline(struct timespec *ts, clockid_t clk, int64_t ms)
{
    clock_gettime(clk, ts);
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

uint64_t util_hash64(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    /* FNV alone clusters short similar names; mix. */
    return util_mix64(h);
}

void util_copy(void *dst, const void *src, size_t n)
{
    enum { PIECE = 2048 }; /* below glibc's rep movsb threshold (2,112 with FSRM) */
    size_t dist = ((uintptr_t)dst - (uintptr_t)src) & 4095;
    if (n <= PIECE || dist == 0 || dist >= 64) {
        memcpy(dst, src, n);
        return;
    }
    uint8_t *d = dst;
    const uint8_t *s = src;
    for (; n > PIECE; n -= PIECE, d += PIECE, s += PIECE)
        memcpy(d, s, PIECE);
    memcpy(d, s, n);
}

uint64_t util_mix64(uint64_t h)
{
    /* The splitmix64 finaliser. */
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}

uint64_t util_instance_id(void)
{
    /* The clock tells restarts apart, the pid two daemons started at once. */
    return util_hash64(&(uint64_t[2]){util_now_real_ns(), (uint64_t)getpid()}, 16) | 1;
}

int util_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
        return -EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -EINVAL;
    *out = v;
    return 0;
}

int util_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s || isspace((unsigned char)*s))
        return -EINVAL;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return -EINVAL;
    *out = v;
    return 0;
}

int util_parse_size(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
        return -EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -EINVAL;
    unsigned shift = 0;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K':
            shift = 10;
            break;
        case 'M':
            shift = 20;
            break;
        case 'G':
            shift = 30;
            break;
        case 'T':
            shift = 40;
            break;
        default:
            return -EINVAL;
        }
        end++;
        if (*end == 'i' || *end == 'I')
            end++;
        if (*end == 'b' || *end == 'B')
            end++;
        if (*end)
            return -EINVAL;
    }
    if (shift && v > (UINT64_MAX >> shift))
        return -EINVAL;
    *out = (uint64_t)v << shift;
    return 0;
}

const char *util_fmt_size(uint64_t bytes, char *buf, size_t len)
{
    static const char units[] = "BKMGTPE";
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.1f%c", v, units[u]);
    return buf;
}

int util_parse_hostport(const char *s, char *host, size_t hostlen, uint16_t *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || (size_t)(colon - s) >= hostlen)
        return -EINVAL;
    uint64_t p;
    if (util_parse_u64(colon + 1, &p) || p == 0 || p > 65535)
        return -EINVAL;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    *port = (uint16_t)p;
    return 0;
}

void util_hex(const uint8_t *in, size_t len, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = d[in[i] >> 4];
        out[2 * i + 1] = d[in[i] & 15];
    }
    out[2 * len] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)tolower((unsigned char)c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int util_unhex(const char *in, uint8_t *out, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        int hi = hexval(in[2 * i]), lo = hi < 0 ? -1 : hexval(in[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -EINVAL;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return in[2 * len] == '\0' ? 0 : -EINVAL;
}

int util_mkdir_p(const char *path, mode_t mode)
{
    char tmp[4096];
    if (strlen(path) >= sizeof(tmp))
        return -ENAMETOOLONG;
    strcpy(tmp, path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, mode) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, mode) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

int util_read_full(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -ECONNRESET;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int util_write_full(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
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

int util_pread_zero(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    memset((uint8_t *)buf + got, 0, len - got);
    return 0;
}

int util_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, (const uint8_t *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        done += (size_t)n;
    }
    return 0;
}

int util_read_file(const char *path, size_t max, char **out, size_t *outlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = 0;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto out;
    }
    if ((size_t)st.st_size > max) {
        rc = -EFBIG;
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        rc = -ENOMEM;
        goto out;
    }
    ssize_t n = pread(fd, buf, (size_t)st.st_size, 0);
    if (n < 0) {
        rc = -errno;
        goto out;
    }
    buf[n] = '\0';
    *out = buf;
    if (outlen)
        *outlen = (size_t)n;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return rc;
}

int util_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    int rc = util_write_full(fd, data, len);
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    close(fd);
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc)
        unlink(tmp);
    return rc;
}

#include <pthread.h>
#include <signal.h>

void util_block_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

void util_hostname(char *buf, size_t len)
{
    if (gethostname(buf, len) < 0 || !buf[0])
        snprintf(buf, len, "localhost");
    buf[len - 1] = '\0';
}

int util_parse_target(const char *s, uint32_t *index, const char **path)
{
    const char *colon = strchr(s, ':');
    if (!colon || colon == s || !colon[1])
        return -EINVAL;
    char num[16];
    size_t n = (size_t)(colon - s);
    if (n >= sizeof(num))
        return -EINVAL;
    memcpy(num, s, n);
    num[n] = '\0';
    uint64_t v;
    if (util_parse_u64(num, &v) || v > 0xffff)
        return -EINVAL;
    *index = (uint32_t)v;
    *path = colon + 1;
    return 0;
}

/* ---- a table of records keyed by a 64-bit number ---- */

static uint64_t *table_slot(uint8_t *slots, size_t cap, size_t rec_size, uint64_t key)
{
    size_t i = util_mix64(key) & (cap - 1);
    uint64_t *r;
    while (*(r = (uint64_t *)(slots + i * rec_size)) && *r != key)
        i = (i + 1) & (cap - 1);
    return r;
}

void *util_table_find(struct util_table *t, size_t rec_size, uint64_t key, bool add)
{
    if (!t->cap && !add)
        return NULL;
    if (add && (t->used + 1) * 2 > t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 1024;
        uint8_t *n = calloc(ncap, rec_size);
        if (!n)
            return NULL;
        for (size_t i = 0; i < t->cap; i++) {
            uint64_t *old = (uint64_t *)(t->slots + i * rec_size);
            if (*old)
                memcpy(table_slot(n, ncap, rec_size, *old), old, rec_size);
        }
        free(t->slots);
        t->slots = n;
        t->cap = ncap;
        t->rec_size = rec_size;
    }
    uint64_t *r = table_slot(t->slots, t->cap, t->rec_size, key);
    if (!*r) {
        if (!add)
            return NULL;
        *r = key;
        t->used++;
    }
    return r;
}

void *util_table_at(const struct util_table *t, size_t i)
{
    uint64_t *r = (uint64_t *)(t->slots + i * t->rec_size);
    return *r ? r : NULL;
}

void util_table_free(struct util_table *t)
{
    free(t->slots);
    memset(t, 0, sizeof(*t));
}
