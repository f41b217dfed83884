/*
 * Small helpers shared by every process: time, hashing, number and size
 * parsing, host:port parsing, hex, directory creation and whole-buffer I/O.
 */
#ifndef STRIA_UTIL_H
#define STRIA_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b)     ((a) < (b) ? (a) : (b))
#define MAX(a, b)     ((a) > (b) ? (a) : (b))

/* Monotonic and wall-clock time in nanoseconds. */
uint64_t util_now_mono_ns(void);
uint64_t util_now_real_ns(void);
/* *ts = now on clock clk plus ms, for pthread_cond_timedwait. */
void util_deadline(struct timespec *ts, clockid_t clk, int64_t ms);

/* memcpy for the data path's large copies (a file's bytes). glibc 2.36
 * (Debian 12) copies more than 2,112 bytes (on CPUs with FSRM) with `rep
 * movsb`, which AMD Zen runs about 20 times slower when the destination
 * lies 1 to 63 bytes past the source modulo 4,096 (measured here: 23-34
 * us for 64 KiB instead of 1.5, 1.2 us for 2,200 bytes instead of 65 ns;
 * a third of a client's CPU writing small files; glibc's BZ 30994). Such
 * copies go in 2 KiB pieces; any other is memcpy. */
void util_copy(void *dst, const void *src, size_t n);

/* 64-bit hash of a byte string (FNV-1a with a final avalanche). Stable across
 * releases: directory cookies and, later, directory striping depend on it. */
uint64_t util_hash64(const void *data, size_t len);
/* Its final avalanche alone: spreads a 64-bit key (an inode number) over
 * hash buckets. */
uint64_t util_mix64(uint64_t h);
/* A number (odd, so never 0) that tells this process from the one before
 * and the one after it: what a daemon answers as its instance, so that
 * peers learn of a restart. */
uint64_t util_instance_id(void);

/*
 * A hash table of fixed-size records, each starting with its non-zero
 * 64-bit key (an inode number, say), kept by open addressing. Zero it to
 * start; rec_size is set by the first find.
 */
struct util_table {
    uint8_t *slots;
    size_t cap, used, rec_size;
};
/* The record of key: NULL if absent and !add, or without memory. A new
 * record is zero but for its key. Records move when the table grows. */
void *util_table_find(struct util_table *t, size_t rec_size, uint64_t key, bool add);
/* Slot i (0 <= i < t->cap), or NULL if empty: for walking every record. */
void *util_table_at(const struct util_table *t, size_t i);
void util_table_free(struct util_table *t);

/* An executable called name in $PATH (or, when PATH is unset or empty, as
 * mount(8) may run helpers, the usual system directories): its path into
 * buf. */
bool util_find_in_path(const char *name, char *buf, size_t len);

/* Parse a decimal integer or a size with an optional K/M/G/T suffix (powers
 * of 1024). Returns 0 or -EINVAL; nothing is written on failure. */
int util_parse_u64(const char *s, uint64_t *out);
int util_parse_i64(const char *s, int64_t *out);
int util_parse_size(const char *s, uint64_t *out);
/* Human-readable size into buf ("1.5G"); returns buf. */
const char *util_fmt_size(uint64_t bytes, char *buf, size_t len);

/* Split "host:port". host must hold at least 256 bytes. Returns 0 or -EINVAL. */
int util_parse_hostport(const char *s, char *host, size_t hostlen, uint16_t *port);

/* Lower-case hex of len bytes into out (2*len+1 bytes). */
void util_hex(const uint8_t *in, size_t len, char *out);
/* Parse exactly 2*len hex digits; returns 0 or -EINVAL. */
int util_unhex(const char *in, uint8_t *out, size_t len);

/* mkdir -p with mode; returns 0 or negative errno. */
int util_mkdir_p(const char *path, mode_t mode);

/* Read or write exactly len bytes, retrying on EINTR and short transfers.
 * Return 0, -EPIPE/-ECONNRESET (read: 0 bytes at EOF gives -ECONNRESET) or a
 * negative errno. */
int util_read_full(int fd, void *buf, size_t len);
int util_write_full(int fd, const void *buf, size_t len);
/* pread all len bytes at off, what lies past the file's end as zeros. */
int util_pread_zero(int fd, void *buf, size_t len, uint64_t off);
/* pwrite all len bytes at off. Both: 0 or -errno. */
int util_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);

/* Read a whole small file (at most max bytes) into a malloc'd NUL-terminated
 * buffer the caller frees. Returns 0 or negative errno. */
int util_read_file(const char *path, size_t max, char **out, size_t *outlen);
/* Write a file atomically (temporary file, fsync, rename). */
int util_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* Daemons: block SIGINT/SIGTERM/SIGHUP in every thread (call before
 * starting any; daemon_wait then takes them) and ignore SIGPIPE. */
void util_block_signals(void);
/* This machine's host name (for node names). */
void util_hostname(char *buf, size_t len);
/* Parse "INDEX:PATH" (a target line in a daemon config). */
int util_parse_target(const char *s, uint32_t *index, const char **path);

#endif
