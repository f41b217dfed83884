/*
 * random_ops: random file operations checked after every step against a model.
 *
 * Eight names over two directories under DIR (d0/f0..f3, d1/f0..f3) and up to four
 * open file descriptors. Each step is one random operation: write (random offset up
 * to 1 MiB, 1..64 KiB of random bytes), truncate up or down, read, rename (within and
 * across the directories, over existing names), unlink, create, open, close, fsync.
 * The model holds every file's bytes, which names refer to which file and which file
 * each open fd refers to, so an fd whose file was unlinked or renamed over keeps
 * working on the old file. Every call's result and errno are compared with the model;
 * after every step all eight names are stat'ed, every open fd fstat'ed and the bytes
 * around what the step touched read back through a fresh open; every 10 steps both
 * directories are listed and every 1,000 steps every file is read whole.
 *
 * On the first divergence it prints the step, the operation, expected and actual,
 * the operations before it, and exits 1. It gives up with a failure after 15 minutes.
 *
 * Usage: random_ops DIR [OPS [SEED]]   (OPS default 100000; SEED default from the clock)
 * RANDOM_OPS_TRACE=1 prints every operation as it is done.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NAMES       8
#define FDS         4
#define MAX_OFF     (1 << 20)    /* writes start at most here */
#define MAX_WRITE   (64 << 10)   /* and are at most this long */
#define MAX_SIZE    (1280 << 10) /* truncate never grows a file past this */
#define TIME_LIMIT  (15 * 60)    /* seconds */
#define HISTORY     12           /* operations printed before a divergence */
#define LIST_EVERY  10           /* steps between directory listings */
#define SWEEP_EVERY 1000         /* steps between whole-file checks */

/* A file as the model sees it. */
struct file {
    unsigned char *data;
    size_t size, cap;
    int nlink; /* names that refer to it: 0 or 1 (no hard links here) */
    int nopen; /* fds that refer to it */
    int id;    /* for messages */
};

static struct file *names[NAMES]; /* which file each name refers to, or NULL */
static struct {
    int fd; /* -1: slot free */
    struct file *f;
} fds[FDS];

static const char *root;
static long step;
static uint64_t rng, seed;
static char op[512];               /* the current operation, described */
static char history[HISTORY][512]; /* the ones before it */
static unsigned char *buf, *buf2;  /* scratch: a write's bytes, a read's bytes */
static int next_id;
static struct timespec t0;
static long orphan_ops; /* operations through an fd on an unlinked file */
static bool trace;      /* RANDOM_OPS_TRACE=1: print every operation */

static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, n). */
static uint64_t below(uint64_t n)
{
    return n ? rnd() % n : 0;
}

static double elapsed(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
}

static void path_of(int slot, char *p, size_t n)
{
    snprintf(p, n, "%s/d%d/f%d", root, slot / 4, slot % 4);
}

static const char *ename(int e)
{
    if (!e)
        return "success";
    const char *n = strerrorname_np(e);
    return n ? n : "E?";
}

/* "file #N" or "no file", for messages (a few live at once). */
static const char *fid(const struct file *f)
{
    static char b[4][32];
    static int next;
    if (!f)
        return "no file";
    char *p = b[next++ % 4];
    snprintf(p, sizeof(b[0]), "file #%d", f->id);
    return p;
}

static void print_history(void)
{
    printf("operations before it (oldest first):\n");
    for (int i = HISTORY - 1; i >= 0; i--) {
        long s = step - 1 - i;
        if (s >= 1 && history[(unsigned long)s % HISTORY][0])
            printf("  step %ld: %s\n", s, history[(unsigned long)s % HISTORY]);
    }
}

/* The first divergence: say everything useful and stop. */
static void diverge(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void diverge(const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    printf("FAIL random_ops at step %ld (%.1f s): %s\n  %s\n", step, elapsed(), op, what);
    print_history();
    printf("(rerun: random_ops DIR %ld %" PRIu64 ")\n", step, seed);
    exit(1);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char m[] = "FAIL random_ops: stuck for minutes in: ";
    ssize_t r = write(2, m, sizeof(m) - 1);
    r = write(2, op, strlen(op));
    r = write(2, "\n", 1);
    (void)r;
    _exit(1);
}

static struct file *file_new(void)
{
    struct file *f = calloc(1, sizeof(*f));
    if (!f)
        abort();
    f->id = ++next_id;
    return f;
}

static void file_put(struct file *f)
{
    if (f && !f->nlink && !f->nopen) {
        free(f->data);
        free(f);
    }
}

static void file_resize(struct file *f, size_t size)
{
    if (size > f->cap) {
        size_t cap = size + (size >> 2) + 4096;
        f->data = realloc(f->data, cap);
        if (!f->data)
            abort();
        f->cap = cap;
    }
    if (size > f->size)
        memset(f->data + f->size, 0, size - f->size);
    f->size = size;
}

static void file_write(struct file *f, size_t off, const unsigned char *p, size_t len)
{
    if (off + len > f->size)
        file_resize(f, off + len);
    memcpy(f->data + off, p, len);
}

/* Read up to len bytes at off until EOF (short reads before EOF are allowed). */
static ssize_t pread_full(int fd, unsigned char *p, size_t len, off_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t r = pread(fd, p + done, len - done, off + (off_t)done);
        if (r < 0)
            return r;
        if (r == 0)
            break;
        done += (size_t)r;
    }
    return (ssize_t)done;
}

/* Bytes got (n of them, read at off) against f; what says how they were read. */
static void check_bytes(const char *what, const struct file *f, size_t off, size_t len,
                        const unsigned char *got, ssize_t n)
{
    size_t want = off >= f->size ? 0 : (f->size - off < len ? f->size - off : len);
    if (n < 0)
        diverge("%s: read of %zu bytes at %zu (file #%d, size %zu): expected %zu bytes, got "
                "-1 %s",
                what, len, off, f->id, f->size, want, ename(errno));
    if ((size_t)n != want)
        diverge("%s: read of %zu bytes at %zu (file #%d, size %zu): expected %zu bytes, got %zd",
                what, len, off, f->id, f->size, want, n);
    for (size_t i = 0; i < want; i++)
        if (got[i] != f->data[off + i]) {
            size_t j = i;
            while (j < want && got[j] != f->data[off + j])
                j++;
            bool zeros = true;
            for (size_t k = i; k < j; k++)
                zeros = zeros && got[k] == 0;
            diverge("%s: file #%d (size %zu): bytes differ from offset %zu for %zu bytes "
                    "(expected 0x%02x, got 0x%02x%s)",
                    what, f->id, f->size, off + i, j - i, f->data[off + i], got[i],
                    zeros ? "; got zeros there" : "");
        }
}

/* A call's outcome against the model's: ok, or the errno expected. */
static void expect_rc(const char *call, long rc, int want_errno)
{
    int e = rc < 0 ? errno : 0;
    if (want_errno == 0 && rc < 0)
        diverge("%s: expected success, got -1 %s (%s)", call, ename(e), strerror(e));
    if (want_errno && rc >= 0)
        diverge("%s: expected -1 %s, got %ld (success)", call, ename(want_errno), rc);
    if (want_errno && e != want_errno)
        diverge("%s: expected -1 %s, got -1 %s", call, ename(want_errno), ename(e));
}

static int free_fd_slot(void)
{
    for (int i = 0; i < FDS; i++)
        if (fds[i].fd < 0)
            return i;
    return -1;
}

static int random_open_fd(void)
{
    int n = 0, pick = -1;
    for (int i = 0; i < FDS; i++)
        if (fds[i].fd >= 0 && below((uint64_t)++n) == 0)
            pick = i;
    return pick;
}

static void close_slot(int s)
{
    if (close(fds[s].fd))
        diverge("close(fd slot %d, file #%d): expected success, got -1 %s", s, fds[s].f->id,
                ename(errno));
    fds[s].fd = -1;
    fds[s].f->nopen--;
    file_put(fds[s].f);
    fds[s].f = NULL;
}

static void keep_fd(int fd, struct file *f)
{
    int s = free_fd_slot();
    if (s < 0) {
        s = (int)below(FDS);
        close_slot(s);
    }
    fds[s].fd = fd;
    fds[s].f = f;
    f->nopen++;
}

/* What the step touched, checked through a fresh open afterwards. */
static struct {
    struct file *f;
    size_t off, len;
} touched;

static void touch(struct file *f, size_t off, size_t len)
{
    touched.f = f;
    touched.off = off;
    touched.len = len;
}

/* ---- the operations ---- */

static void op_write(void)
{
    size_t off = (size_t)below(MAX_OFF + 1), len = 1 + (size_t)below(MAX_WRITE);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t r = rnd();
        memcpy(buf + i, &r, len - i < 8 ? len - i : 8);
    }
    int s = random_open_fd();
    if (s >= 0 && below(2)) {
        struct file *f = fds[s].f;
        snprintf(op, sizeof(op), "pwrite(fd slot %d = file #%d%s, %zu bytes, offset %zu)", s, f->id,
                 f->nlink ? "" : " (unlinked)", len, off);
        orphan_ops += !f->nlink;
        ssize_t r = pwrite(fds[s].fd, buf, len, (off_t)off);
        expect_rc("pwrite", r, 0);
        if ((size_t)r != len)
            diverge("pwrite: expected %zu bytes written, got %zd", len, r);
        file_write(f, off, buf, len);
        touch(f, off, len);
        return;
    }
    int n = (int)below(NAMES);
    char p[PATH_MAX];
    path_of(n, p, sizeof(p));
    struct file *f = names[n];
    snprintf(op, sizeof(op), "open(d%d/f%d, O_WRONLY) = %s, pwrite %zu bytes at %zu, close", n / 4,
             n % 4, fid(f), len, off);
    int fd = open(p, O_WRONLY);
    expect_rc("open(O_WRONLY)", fd, f ? 0 : ENOENT);
    if (!f)
        return;
    ssize_t r = pwrite(fd, buf, len, (off_t)off);
    expect_rc("pwrite", r, 0);
    if ((size_t)r != len)
        diverge("pwrite: expected %zu bytes written, got %zd", len, r);
    file_write(f, off, buf, len);
    expect_rc("close", close(fd), 0);
    touch(f, off, len);
}

static size_t new_size(const struct file *f)
{
    if (below(2))
        return (size_t)below(f->size + 1);
    size_t s = f->size + (size_t)below(256 << 10);
    return s > MAX_SIZE ? MAX_SIZE : s;
}

static void op_truncate(void)
{
    int s = random_open_fd();
    if (s >= 0 && below(2)) {
        struct file *f = fds[s].f;
        size_t ns = new_size(f);
        snprintf(op, sizeof(op), "ftruncate(fd slot %d = file #%d%s, %zu -> %zu)", s, f->id,
                 f->nlink ? "" : " (unlinked)", f->size, ns);
        orphan_ops += !f->nlink;
        expect_rc("ftruncate", ftruncate(fds[s].fd, (off_t)ns), 0);
        size_t old = f->size;
        file_resize(f, ns);
        touch(f, ns < old ? ns : old, 1);
        return;
    }
    int n = (int)below(NAMES);
    char p[PATH_MAX];
    path_of(n, p, sizeof(p));
    struct file *f = names[n];
    size_t ns = f ? new_size(f) : (size_t)below(MAX_SIZE);
    snprintf(op, sizeof(op), "truncate(d%d/f%d = %s, %zu -> %zu)", n / 4, n % 4, fid(f),
             f ? f->size : 0, ns);
    expect_rc("truncate", truncate(p, (off_t)ns), f ? 0 : ENOENT);
    if (f) {
        size_t old = f->size;
        file_resize(f, ns);
        touch(f, ns < old ? ns : old, 1);
    }
}

static void op_read(void)
{
    int s = random_open_fd();
    struct file *f;
    int fd;
    bool own = false;
    if (s >= 0 && below(2)) {
        f = fds[s].f;
        fd = fds[s].fd;
        orphan_ops += !f->nlink;
        snprintf(op, sizeof(op), "pread(fd slot %d = file #%d%s, size %zu)", s, f->id,
                 f->nlink ? "" : " (unlinked)", f->size);
    } else {
        int n = (int)below(NAMES);
        char p[PATH_MAX];
        path_of(n, p, sizeof(p));
        f = names[n];
        snprintf(op, sizeof(op), "open(d%d/f%d, O_RDONLY) = %s, pread, close", n / 4, n % 4,
                 fid(f));
        fd = open(p, O_RDONLY);
        expect_rc("open(O_RDONLY)", fd, f ? 0 : ENOENT);
        if (!f)
            return;
        own = true;
    }
    size_t off = (size_t)below(f->size + MAX_WRITE + 1), len = 1 + (size_t)below(2 * MAX_WRITE);
    ssize_t r = pread_full(fd, buf2, len, (off_t)off);
    check_bytes("pread", f, off, len, buf2, r);
    if (own)
        expect_rc("close", close(fd), 0);
}

static void op_rename(void)
{
    int a = (int)below(NAMES), b = (int)below(NAMES);
    char pa[PATH_MAX], pb[PATH_MAX];
    path_of(a, pa, sizeof(pa));
    path_of(b, pb, sizeof(pb));
    struct file *fa = names[a], *fb = names[b];
    snprintf(op, sizeof(op), "rename(d%d/f%d = %s, d%d/f%d = %s)", a / 4, a % 4, fid(fa), b / 4,
             b % 4, fid(fb));
    expect_rc("rename", rename(pa, pb), fa ? 0 : ENOENT);
    if (!fa || a == b)
        return;
    if (fb) {
        fb->nlink--;
        file_put(fb);
    }
    names[b] = fa;
    names[a] = NULL;
    touch(fa, 0, 4096);
}

static void op_unlink(void)
{
    int n = (int)below(NAMES);
    char p[PATH_MAX];
    path_of(n, p, sizeof(p));
    struct file *f = names[n];
    snprintf(op, sizeof(op), "unlink(d%d/f%d = %s%s)", n / 4, n % 4, fid(f),
             f && f->nopen ? ", open" : "");
    expect_rc("unlink", unlink(p), f ? 0 : ENOENT);
    if (f) {
        names[n] = NULL;
        f->nlink--;
        file_put(f);
    }
}

static void op_create(void)
{
    int n = (int)below(NAMES);
    char p[PATH_MAX];
    path_of(n, p, sizeof(p));
    struct file *f = names[n];
    bool excl = !f || below(3) == 0, keep = below(2);
    snprintf(op, sizeof(op), "open(d%d/f%d = %s, O_CREAT|%s|O_RDWR)%s", n / 4, n % 4, fid(f),
             excl ? "O_EXCL" : "O_TRUNC", keep ? ", kept open" : ", close");
    int fd = open(p, O_CREAT | O_RDWR | (excl ? O_EXCL : O_TRUNC), 0644);
    expect_rc("open(O_CREAT)", fd, f && excl ? EEXIST : 0);
    if (f && excl)
        return;
    if (!f) {
        f = names[n] = file_new();
        f->nlink = 1;
    } else {
        file_resize(f, 0);
    }
    touch(f, 0, 1);
    if (keep)
        keep_fd(fd, f);
    else
        expect_rc("close", close(fd), 0);
}

static void op_open(void)
{
    int n = (int)below(NAMES);
    char p[PATH_MAX];
    path_of(n, p, sizeof(p));
    struct file *f = names[n];
    snprintf(op, sizeof(op), "open(d%d/f%d = %s, O_RDWR), kept open", n / 4, n % 4, fid(f));
    int fd = open(p, O_RDWR);
    expect_rc("open(O_RDWR)", fd, f ? 0 : ENOENT);
    if (f)
        keep_fd(fd, f);
}

static void op_close(void)
{
    int s = random_open_fd();
    if (s < 0) {
        snprintf(op, sizeof(op), "close (no fd open: nothing)");
        return;
    }
    snprintf(op, sizeof(op), "close(fd slot %d = file #%d%s)", s, fds[s].f->id,
             fds[s].f->nlink ? "" : " (unlinked: last close frees it)");
    close_slot(s);
}

static void op_fsync(void)
{
    int s = random_open_fd();
    if (s < 0) {
        snprintf(op, sizeof(op), "fsync (no fd open: nothing)");
        return;
    }
    bool data = below(2);
    snprintf(op, sizeof(op), "%s(fd slot %d = file #%d%s)", data ? "fdatasync" : "fsync", s,
             fds[s].f->id, fds[s].f->nlink ? "" : " (unlinked)");
    orphan_ops += !fds[s].f->nlink;
    expect_rc(data ? "fdatasync" : "fsync", data ? fdatasync(fds[s].fd) : fsync(fds[s].fd), 0);
}

static const struct {
    void (*fn)(void);
    int weight;
} ops[] = {
    {op_write, 25},  {op_read, 20}, {op_truncate, 10}, {op_rename, 10}, {op_unlink, 6},
    {op_create, 10}, {op_open, 8},  {op_close, 7},     {op_fsync, 4},
};

/* ---- the checks after each step ---- */

static void check_names(void)
{
    for (int n = 0; n < NAMES; n++) {
        char p[PATH_MAX];
        path_of(n, p, sizeof(p));
        struct stat st;
        int r = stat(p, &st);
        struct file *f = names[n];
        if (!f) {
            if (r == 0)
                diverge("after the step, stat(d%d/f%d): expected ENOENT, got a file of size "
                        "%lld",
                        n / 4, n % 4, (long long)st.st_size);
            if (errno != ENOENT)
                diverge("after the step, stat(d%d/f%d): expected ENOENT, got %s", n / 4, n % 4,
                        ename(errno));
            continue;
        }
        if (r)
            diverge("after the step, stat(d%d/f%d) (file #%d, size %zu): got -1 %s", n / 4, n % 4,
                    f->id, f->size, ename(errno));
        if (!S_ISREG(st.st_mode) || (size_t)st.st_size != f->size || st.st_nlink != 1)
            diverge("after the step, stat(d%d/f%d) (file #%d): expected a regular file of size "
                    "%zu with nlink 1, got mode 0%o size %lld nlink %lu",
                    n / 4, n % 4, f->id, f->size, st.st_mode, (long long)st.st_size,
                    (unsigned long)st.st_nlink);
    }
    for (int s = 0; s < FDS; s++) {
        if (fds[s].fd < 0)
            continue;
        struct stat st;
        struct file *f = fds[s].f;
        if (fstat(fds[s].fd, &st))
            diverge("after the step, fstat(fd slot %d = file #%d): got -1 %s", s, f->id,
                    ename(errno));
        if ((size_t)st.st_size != f->size || st.st_nlink != (nlink_t)f->nlink)
            diverge("after the step, fstat(fd slot %d = file #%d%s): expected size %zu nlink "
                    "%d, got size %lld nlink %lu",
                    s, f->id, f->nlink ? "" : ", unlinked", f->size, f->nlink,
                    (long long)st.st_size, (unsigned long)st.st_nlink);
    }
}

/* Read the touched region (and 4 KiB either side) through a fresh open of a name. */
static void check_touched(void)
{
    struct file *f = touched.f;
    if (!f)
        return;
    touched.f = NULL;
    size_t from = touched.off > 4096 ? touched.off - 4096 : 0;
    size_t len = touched.off - from + touched.len + 4096;
    if (len > 2 * MAX_WRITE + 8192)
        len = 2 * MAX_WRITE + 8192;
    int n = -1;
    for (int i = 0; i < NAMES; i++)
        if (names[i] == f)
            n = i;
    if (n < 0) {
        /* No name left: read through an fd that still has it. */
        for (int s = 0; s < FDS; s++)
            if (fds[s].f == f) {
                ssize_t r = pread_full(fds[s].fd, buf2, len, (off_t)from);
                check_bytes("after the step, through an open fd", f, from, len, buf2, r);
                return;
            }
        return;
    }
    char p[PATH_MAX], what[64];
    path_of(n, p, sizeof(p));
    snprintf(what, sizeof(what), "after the step, through a fresh open of d%d/f%d", n / 4, n % 4);
    int fd = open(p, O_RDONLY);
    if (fd < 0)
        diverge("%s: open: -1 %s", what, ename(errno));
    ssize_t r = pread_full(fd, buf2, len, (off_t)from);
    check_bytes(what, f, from, len, buf2, r);
    close(fd);
}

static void check_listing(void)
{
    for (int d = 0; d < 2; d++) {
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/d%d", root, d);
        DIR *dir = opendir(p);
        if (!dir)
            diverge("after the step, opendir(d%d): -1 %s", d, ename(errno));
        int seen[4] = {0};
        struct dirent *de;
        errno = 0;
        while ((de = readdir(dir))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            int i;
            char extra;
            if (sscanf(de->d_name, "f%d%c", &i, &extra) != 1 || i < 0 || i > 3)
                diverge("after the step, readdir(d%d): unexpected name '%s'", d, de->d_name);
            seen[i]++;
        }
        if (errno)
            diverge("after the step, readdir(d%d): -1 %s", d, ename(errno));
        closedir(dir);
        for (int i = 0; i < 4; i++) {
            int want = names[d * 4 + i] != NULL;
            if (seen[i] != want)
                diverge("after the step, readdir(d%d): f%d listed %d time(s), expected %d", d, i,
                        seen[i], want);
        }
    }
}

static void check_all_bytes(void)
{
    static unsigned char *whole;
    if (!whole && !(whole = malloc(MAX_SIZE + MAX_OFF + MAX_WRITE)))
        abort();
    for (int n = 0; n < NAMES; n++) {
        if (!names[n])
            continue;
        char p[PATH_MAX], what[64];
        path_of(n, p, sizeof(p));
        snprintf(what, sizeof(what), "whole-file check of d%d/f%d", n / 4, n % 4);
        int fd = open(p, O_RDONLY);
        if (fd < 0)
            diverge("%s: open: -1 %s", what, ename(errno));
        ssize_t r = pread_full(fd, whole, MAX_SIZE + MAX_OFF, 0);
        check_bytes(what, names[n], 0, MAX_SIZE + MAX_OFF, whole, r);
        close(fd);
    }
    for (int s = 0; s < FDS; s++) {
        if (fds[s].fd < 0)
            continue;
        char what[64];
        snprintf(what, sizeof(what), "whole-file check through fd slot %d", s);
        ssize_t r = pread_full(fds[s].fd, whole, MAX_SIZE + MAX_OFF, 0);
        check_bytes(what, fds[s].f, 0, MAX_SIZE + MAX_OFF, whole, r);
    }
}

/* ---- setup ---- */

static int rm_one(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    if (ftw->level == 0)
        return 0;
    return (type == FTW_DP ? rmdir(p) : unlink(p)) ? -1 : 0;
}

/* Remove what a run leaves under root (d0, d1), keeping root. */
static int clean(void)
{
    for (int d = 0; d < 2; d++) {
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/d%d", root, d);
        if (access(p, F_OK) == 0 && (nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS) || rmdir(p)))
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: random_ops DIR [OPS [SEED]]\n");
        return 2;
    }
    root = argv[1];
    trace = getenv("RANDOM_OPS_TRACE") && *getenv("RANDOM_OPS_TRACE") == '1';
    long nops = argc > 2 ? strtol(argv[2], NULL, 0) : 100000;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    seed = argc > 3 ? strtoull(argv[3], NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)getpid();
    rng = seed * 0x9E3779B97F4A7C15ull + 1;
    if (nops < 1) {
        fprintf(stderr, "random_ops: OPS must be at least 1\n");
        return 2;
    }
    printf("random_ops: DIR=%s ops=%ld seed=%" PRIu64 " (rerun: random_ops DIR %ld %" PRIu64 ")\n",
           root, nops, seed, nops, seed);
    fflush(stdout);
    if (clean()) {
        fprintf(stderr, "random_ops: cannot clear %s/d0, d1: %s\n", root, strerror(errno));
        return 2;
    }
    for (int d = 0; d < 2; d++) {
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/d%d", root, d);
        if (mkdir(p, 0755)) {
            fprintf(stderr, "random_ops: mkdir %s: %s\n", p, strerror(errno));
            return 2;
        }
    }
    buf = malloc(MAX_WRITE + 8);
    buf2 = malloc(2 * MAX_WRITE + 8192 + 16);
    if (!buf || !buf2)
        abort();
    for (int s = 0; s < FDS; s++)
        fds[s].fd = -1;
    signal(SIGALRM, on_alarm);
    int total = 0;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        total += ops[i].weight;
    for (step = 1; step <= nops; step++) {
        if (elapsed() > TIME_LIMIT) {
            printf("FAIL random_ops: time limit of %d minutes reached after %ld of %ld ops (seed "
                   "%" PRIu64 ")\n",
                   TIME_LIMIT / 60, step - 1, nops, seed);
            return 1;
        }
        alarm(TIME_LIMIT - (unsigned)elapsed() + 60); /* a single stuck call */
        int w = (int)below((uint64_t)total), k = 0;
        while (w >= ops[k].weight)
            w -= ops[k++].weight;
        ops[k].fn();
        check_names();
        check_touched();
        if (step % LIST_EVERY == 0)
            check_listing();
        if (step % SWEEP_EVERY == 0)
            check_all_bytes();
        snprintf(history[(unsigned long)step % HISTORY], sizeof(history[0]), "%s", op);
        if (trace)
            printf("step %ld: %s\n", step, op);
        if (step % 10000 == 0) {
            int open_n = 0, files = 0;
            for (int s = 0; s < FDS; s++)
                open_n += fds[s].fd >= 0;
            for (int n = 0; n < NAMES; n++)
                files += names[n] != NULL;
            printf("random_ops: %ld ops, %.0f s, %d names, %d fds open, %ld ops through fds of "
                   "unlinked files\n",
                   step, elapsed(), files, open_n, orphan_ops);
            fflush(stdout);
        }
    }
    alarm(0);
    step = nops;
    check_all_bytes();
    for (int s = 0; s < FDS; s++)
        if (fds[s].fd >= 0)
            close_slot(s);
    if (nops >= 10000 && orphan_ops == 0) {
        printf("FAIL random_ops: no operation went through an fd of an unlinked file; the test "
               "did not test that\n");
        return 1;
    }
    if (clean())
        fprintf(stderr, "random_ops: warning: could not remove d0, d1: %s\n", strerror(errno));
    printf("PASS %ld ops (%.0f s, seed %" PRIu64 ", %ld through fds of unlinked files)\n", nops,
           elapsed(), seed, orphan_ops);
    return 0;
}
