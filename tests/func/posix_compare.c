/*
 * posix_compare: the same POSIX calls under two directories, compared call by call.
 *
 * A is the file system under test (the Stria mount), B a reference (a local ext4
 * directory). Each case is a small function that makes calls relative to a fresh
 * directory of its own. It runs once under A and once under B, each time in a forked
 * child, which streams a record of every call to the parent: the call as written, its
 * return value and errno, and what it produced (bytes read, stat fields, names listed,
 * link text, xattr values). The parent compares the two records entry by entry and
 * prints one MISMATCH line per difference. A child that crashes (SIGBUS from a mapping,
 * say) or hangs (alarm) ends its record there, which is itself compared.
 *
 * Cases must not branch on results, so both records hold the same calls in the same
 * order. Results that legitimately differ between file systems (directory st_size,
 * st_blocks, statfs numbers, times set to "now") are recorded as properties, not values.
 * Where A may refuse an optional feature (fallocate modes, RENAME_EXCHANGE), the call
 * is marked: if A fails with that errno, a NOTE is printed and the rest of the case is
 * not compared.
 *
 * Usage: posix_compare [-v] [-l] A B [CASE...]
 *   -v prints every call and its result; -l lists the cases; CASE runs only the cases
 *   whose names contain it.
 * Exit: 0 no mismatch, 1 mismatches, 2 usage or setup error.
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
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define KiB            1024L
#define MiB            (1024L * 1024L)
#define CASE_ALARM_SEC 300 /* a case that takes longer is reported as hung */
#define PIPE_FD        900 /* the record stream, out of the way of the case's fds */
#define MAX_REPORTS    10  /* mismatches printed per case before the rest are elided */
#define RECENT_SEC     300 /* how close to now a time set to "now" must be */

/* One call as recorded. */
struct entry {
    char *desc;          /* the call, as written in the case */
    long ret;            /* return value; 0 for a successful fd-returning call */
    int err;             /* errno when the call failed, else 0 */
    int note_errno;      /* if A fails with this errno, the rest of the case is a NOTE */
    bool is_fd;          /* ret was an fd (printed as such) */
    char *res;           /* what the call produced, as text, or NULL */
    unsigned char *data; /* bytes the call produced, or NULL */
    size_t dlen;
};

/* What a case works with. */
struct cx {
    int d;              /* the case's own directory */
    char dir[PATH_MAX]; /* its path */
    char pbuf[4][PATH_MAX];
    int pnext;
    int ncalls; /* entries recorded so far */
};

static bool verbose;

/* ---- helpers ---- */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "posix_compare: out of memory\n");
        exit(2);
    }
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s;
    if (vasprintf(&s, fmt, ap) < 0) {
        fprintf(stderr, "posix_compare: out of memory\n");
        exit(2);
    }
    va_end(ap);
    return s;
}

/* A growing string. */
struct sb {
    char *s;
    size_t n, cap;
};

static void sb_add(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sb *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->n + (size_t)need + 1 > b->cap) {
        b->cap = (b->n + (size_t)need + 1) * 2;
        char *ns = realloc(b->s, b->cap);
        if (!ns) {
            fprintf(stderr, "posix_compare: out of memory\n");
            exit(2);
        }
        b->s = ns;
    }
    vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap2);
    va_end(ap2);
    b->n += (size_t)need;
}

/* Deterministic bytes for pattern seed, the same under both roots. */
static void fill(unsigned char *buf, size_t len, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = (unsigned char)(x >> 24);
    }
}

static const char *errname(int e)
{
    const char *n = strerrorname_np(e);
    return n ? n : "E?";
}

/* An absolute path under the case directory (a few live at once). */
static const char *P(struct cx *c, const char *name)
{
    char *b = c->pbuf[c->pnext++ % 4];
    if (snprintf(b, PATH_MAX, "%s/%s", c->dir, name) >= PATH_MAX)
        snprintf(b, PATH_MAX, "(path too long)");
    return b;
}

/* name for a description: long names shortened (a few live at once). */
static const char *nm(const char *name)
{
    static char buf[4][64];
    static int next;
    size_t n = strlen(name);
    if (n <= 40)
        return name;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof(buf[0]), "%.8s...(%zu bytes)", name, n);
    return b;
}

/* ---- the record stream (child side) ---- */

static void write_all(const void *p, size_t n)
{
    const char *s = p;
    while (n) {
        ssize_t w = write(PIPE_FD, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            _exit(3);
        s += w;
        n -= (size_t)w;
    }
}

static void put_str(const char *s)
{
    uint32_t n = s ? (uint32_t)strlen(s) : UINT32_MAX;
    write_all(&n, sizeof(n));
    if (s)
        write_all(s, n);
}

/* Send one entry to the parent. Takes nothing over. */
static void emit(struct cx *c, const char *desc, long ret, int err, int note_errno, bool is_fd,
                 const char *res, const void *data, size_t dlen)
{
    int64_t r = ret;
    int32_t e = err, ne = note_errno, f = is_fd;
    uint64_t dl = data ? dlen : UINT64_MAX;
    c->ncalls++;
    put_str(desc);
    write_all(&r, sizeof(r));
    write_all(&e, sizeof(e));
    write_all(&ne, sizeof(ne));
    write_all(&f, sizeof(f));
    put_str(res);
    write_all(&dl, sizeof(dl));
    if (data)
        write_all(data, dlen);
}

/*
 * Record a call. errno is read first, before anything can change it; the call has
 * completed by then (its value is an argument).
 */
static long call_(struct cx *c, long ret, bool is_fd, int note_errno, const char *desc)
{
    int err = ret < 0 ? errno : 0;
    emit(c, desc, is_fd && ret >= 0 ? 0 : ret, err, note_errno, is_fd, NULL, NULL, 0);
    return ret;
}

static int fd_(struct cx *c, long ret, const char *desc)
{
    int err = ret < 0 ? errno : 0;
    emit(c, desc, ret >= 0 ? 0 : ret, err, 0, true, NULL, NULL, 0);
    return (int)ret;
}

#define DO(c, expr)         call_(c, (long)(expr), false, 0, #expr)
#define FD(c, expr)         fd_(c, (long)(expr), #expr)
#define DO_NOTE(c, e, expr) call_(c, (long)(expr), false, e, #expr)

/* Record a property the case computed: desc, and res as text. */
static void fact(struct cx *c, const char *desc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fact(struct cx *c, const char *desc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *res;
    if (vasprintf(&res, fmt, ap) < 0)
        exit(2);
    va_end(ap);
    emit(c, desc, 0, 0, 0, false, res, NULL, 0);
    free(res);
}

/* Record bytes the case obtained some other way (through a mapping). */
static void blob(struct cx *c, const char *desc, const void *p, size_t n)
{
    emit(c, desc, 0, 0, 0, false, NULL, p, n);
}

static void *map_(struct cx *c, void *p, const char *desc)
{
    int err = p == MAP_FAILED ? errno : 0;
    emit(c, desc, p == MAP_FAILED ? -1 : 0, err, 0, false, NULL, NULL, 0);
    return p;
}
#define MMAP(c, expr) map_(c, (expr), #expr)

static const char *type_name(mode_t m)
{
    switch (m & S_IFMT) {
    case S_IFREG:
        return "reg";
    case S_IFDIR:
        return "dir";
    case S_IFLNK:
        return "lnk";
    case S_IFIFO:
        return "fifo";
    case S_IFSOCK:
        return "sock";
    case S_IFCHR:
        return "chr";
    case S_IFBLK:
        return "blk";
    }
    return "?";
}

/* The stat fields compared; a directory's size is file-system specific, a
 * device's number is compared instead of its size. */
static char *describe(const struct stat *st)
{
    if (S_ISDIR(st->st_mode))
        return xprintf("type=dir perm=%04o nlink=%lu uid=%u gid=%u", st->st_mode & 07777,
                       (unsigned long)st->st_nlink, st->st_uid, st->st_gid);
    if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
        return xprintf("type=%s perm=%04o nlink=%lu rdev=%u:%u uid=%u gid=%u",
                       type_name(st->st_mode), st->st_mode & 07777, (unsigned long)st->st_nlink,
                       major(st->st_rdev), minor(st->st_rdev), st->st_uid, st->st_gid);
    return xprintf("type=%s perm=%04o nlink=%lu size=%lld uid=%u gid=%u", type_name(st->st_mode),
                   st->st_mode & 07777, (unsigned long)st->st_nlink, (long long)st->st_size,
                   st->st_uid, st->st_gid);
}

static void stat_(struct cx *c, const char *name, int flags)
{
    struct stat st;
    int r = fstatat(c->d, name, &st, flags);
    int err = r ? errno : 0;
    char *desc = xprintf("%s(\"%s\")", flags & AT_SYMLINK_NOFOLLOW ? "lstat" : "stat", nm(name));
    char *res = r ? NULL : describe(&st);
    emit(c, desc, r, err, 0, false, res, NULL, 0);
    free(desc);
    free(res);
}
#define ST(c, name)  stat_(c, name, 0)
#define LST(c, name) stat_(c, name, AT_SYMLINK_NOFOLLOW)

static void fst(struct cx *c, const char *label, int fd)
{
    struct stat st;
    int r = fstat(fd, &st);
    int err = r ? errno : 0;
    char *desc = xprintf("fstat(%s)", label);
    char *res = r ? NULL : describe(&st);
    emit(c, desc, r, err, 0, false, res, NULL, 0);
    free(desc);
    free(res);
}
#define FST(c, fd) fst(c, #fd, fd)

static long pw(struct cx *c, const char *label, int fd, off_t off, size_t len, unsigned seed)
{
    unsigned char *b = xmalloc(len);
    fill(b, len, seed);
    ssize_t r = pwrite(fd, b, len, off);
    int err = r < 0 ? errno : 0;
    char *desc =
        xprintf("pwrite(%s, %zu bytes of pattern %u, %lld)", label, len, seed, (long long)off);
    emit(c, desc, r, err, 0, false, NULL, NULL, 0);
    free(desc);
    free(b);
    return r;
}
#define PW(c, fd, off, len, seed) pw(c, #fd, fd, off, len, seed)

static long wr(struct cx *c, const char *label, int fd, size_t len, unsigned seed)
{
    unsigned char *b = xmalloc(len);
    fill(b, len, seed);
    ssize_t r = write(fd, b, len);
    int err = r < 0 ? errno : 0;
    char *desc = xprintf("write(%s, %zu bytes of pattern %u)", label, len, seed);
    emit(c, desc, r, err, 0, false, NULL, NULL, 0);
    free(desc);
    free(b);
    return r;
}
#define WR(c, fd, len, seed) wr(c, #fd, fd, len, seed)

static void pr(struct cx *c, const char *label, int fd, off_t off, size_t len)
{
    unsigned char *b = xmalloc(len);
    ssize_t r = pread(fd, b, len, off);
    int err = r < 0 ? errno : 0;
    char *desc = xprintf("pread(%s, %zu, %lld)", label, len, (long long)off);
    emit(c, desc, r, err, 0, false, NULL, r >= 0 ? b : NULL, r >= 0 ? (size_t)r : 0);
    free(desc);
    free(b);
}
#define PR(c, fd, off, len) pr(c, #fd, fd, off, len)

static void rd(struct cx *c, const char *label, int fd, size_t len)
{
    unsigned char *b = xmalloc(len);
    ssize_t r = read(fd, b, len);
    int err = r < 0 ? errno : 0;
    char *desc = xprintf("read(%s, %zu)", label, len);
    emit(c, desc, r, err, 0, false, NULL, r >= 0 ? b : NULL, r >= 0 ? (size_t)r : 0);
    free(desc);
    free(b);
}
#define RD(c, fd, len) rd(c, #fd, fd, len)

/* Create or truncate name and write len bytes of pattern seed into it: one entry. */
static void put(struct cx *c, const char *name, size_t len, unsigned seed)
{
    char *desc = xprintf("put(\"%s\", %zu bytes of pattern %u)", nm(name), len, seed);
    unsigned char *b = xmalloc(len);
    fill(b, len, seed);
    const char *step = "open";
    long r = openat(c->d, name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (r >= 0) {
        int fd = (int)r;
        step = "write";
        for (size_t done = 0; done < len;) {
            ssize_t w = write(fd, b + done, len - done);
            if (w <= 0) {
                r = -1;
                if (w == 0)
                    errno = EIO;
                break;
            }
            done += (size_t)w;
        }
        if (r >= 0) {
            step = "close";
            r = close(fd);
        } else {
            int e = errno;
            close(fd);
            errno = e;
        }
    }
    int err = r < 0 ? errno : 0;
    char *res = r < 0 ? xprintf("%s failed", step) : NULL;
    emit(c, desc, r < 0 ? -1 : 0, err, 0, false, res, NULL, 0);
    free(res);
    free(desc);
    free(b);
}

/* Read the whole of name (open, read to EOF, close): one entry with the bytes. */
static void cat(struct cx *c, const char *name)
{
    char *desc = xprintf("read all of \"%s\"", nm(name));
    struct sb b = {0};
    const char *step = "open";
    long r = openat(c->d, name, O_RDONLY);
    if (r >= 0) {
        int fd = (int)r;
        step = "read";
        for (;;) {
            if (b.cap - b.n < 65536) {
                b.cap = b.cap * 2 + 65536;
                b.s = realloc(b.s, b.cap);
                if (!b.s)
                    exit(2);
            }
            ssize_t n = read(fd, b.s + b.n, b.cap - b.n);
            if (n < 0) {
                r = -1;
                break;
            }
            if (n == 0)
                break;
            b.n += (size_t)n;
        }
        if (r >= 0) {
            step = "close";
            r = close(fd);
        } else {
            int e = errno;
            close(fd);
            errno = e;
        }
    }
    int err = r < 0 ? errno : 0;
    char *res = r < 0 ? xprintf("%s failed", step) : NULL;
    emit(c, desc, r < 0 ? -1 : 0, err, 0, false, res, r < 0 ? NULL : (b.s ? b.s : ""), b.n);
    free(res);
    free(desc);
    free(b.s);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *dtype_name(unsigned char t)
{
    switch (t) {
    case DT_REG:
        return "reg";
    case DT_DIR:
        return "dir";
    case DT_LNK:
        return "lnk";
    case DT_FIFO:
        return "fifo";
    case DT_CHR:
        return "chr";
    case DT_BLK:
        return "blk";
    case DT_SOCK:
        return "sock";
    case DT_UNKNOWN:
        return "unknown";
    }
    return "other";
}

/* The sorted names in directory name, with d_type; "." and ".." must be there once. */
static void ls(struct cx *c, const char *name)
{
    char *desc = xprintf("readdir(\"%s\")", nm(name));
    int fd = openat(c->d, name, O_RDONLY | O_DIRECTORY);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        int err = errno;
        emit(c, desc, -1, err, 0, false, "opendir failed", NULL, 0);
        if (fd >= 0)
            close(fd);
        free(desc);
        return;
    }
    size_t n = 0, cap = 64;
    char **names = xmalloc(cap * sizeof(*names));
    int dots = 0, dotdots = 0;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".")) {
            dots++;
            continue;
        }
        if (!strcmp(de->d_name, "..")) {
            dotdots++;
            continue;
        }
        if (n == cap)
            names = realloc(names, (cap *= 2) * sizeof(*names));
        names[n++] = xprintf("%s:%s", de->d_name, dtype_name(de->d_type));
    }
    int err = errno;
    closedir(d);
    qsort(names, n, sizeof(*names), cmp_str);
    struct sb b = {0};
    sb_add(&b, "'.'x%d '..'x%d %zu names:", dots, dotdots, n);
    for (size_t i = 0; i < n; i++) {
        sb_add(&b, " %s", names[i]);
        free(names[i]);
    }
    free(names);
    emit(c, desc, err ? -1 : 0, err, 0, false, b.s, NULL, 0);
    free(b.s);
    free(desc);
}

static void rl(struct cx *c, const char *name)
{
    char buf[PATH_MAX + 1];
    ssize_t r = readlinkat(c->d, name, buf, sizeof(buf) - 1);
    int err = r < 0 ? errno : 0;
    char *desc = xprintf("readlink(\"%s\")", nm(name));
    if (r >= 0)
        buf[r] = 0;
    emit(c, desc, r, err, 0, false, r >= 0 ? buf : NULL, NULL, 0);
    free(desc);
}

static void gx(struct cx *c, const char *name, const char *attr)
{
    char buf[65536];
    ssize_t r = getxattr(P(c, name), attr, buf, sizeof(buf));
    int err = r < 0 ? errno : 0;
    char *desc = xprintf("getxattr(\"%s\", \"%s\")", nm(name), attr);
    emit(c, desc, r, err, 0, false, NULL, r >= 0 ? buf : NULL, r >= 0 ? (size_t)r : 0);
    free(desc);
}

/* The user.* names of name's extended attributes, sorted. */
static void lx(struct cx *c, const char *name)
{
    char buf[65536];
    ssize_t r = listxattr(P(c, name), buf, sizeof(buf));
    int err = r < 0 ? errno : 0;
    char *desc = xprintf("listxattr(\"%s\") user.* names", nm(name));
    struct sb b = {0};
    sb_add(&b, "names:");
    if (r > 0) {
        char *names[1024];
        size_t n = 0;
        for (char *p = buf; p < buf + r && n < 1024; p += strlen(p) + 1)
            if (!strncmp(p, "user.", 5))
                names[n++] = p;
        qsort(names, n, sizeof(*names), cmp_str);
        for (size_t i = 0; i < n; i++)
            sb_add(&b, " %s", names[i]);
    }
    emit(c, desc, r < 0 ? -1 : 0, err, 0, false, r < 0 ? NULL : b.s, NULL, 0);
    free(b.s);
    free(desc);
}

enum tmode { EXACT, RECENT };

static void tfield(struct sb *b, const char *what, const struct timespec *t, enum tmode m)
{
    if (m == EXACT) {
        sb_add(b, " %s=%lld.%09ld", what, (long long)t->tv_sec, t->tv_nsec);
        return;
    }
    time_t now = time(NULL);
    if (llabs((long long)(t->tv_sec - now)) <= RECENT_SEC)
        sb_add(b, " %s=recent", what);
    else
        sb_add(b, " %s=NOT-recent(%lld, now %lld)", what, (long long)t->tv_sec, (long long)now);
}

/* name's atime and mtime: either exactly, or whether they are close to now. */
static void tm(struct cx *c, const char *name, int flags, enum tmode am, enum tmode mm)
{
    struct stat st;
    int r = fstatat(c->d, name, &st, flags);
    int err = r ? errno : 0;
    char *desc = xprintf("times of \"%s\"%s", nm(name), flags ? " (no follow)" : "");
    struct sb b = {0};
    if (!r) {
        tfield(&b, "atime", &st.st_atim, am);
        tfield(&b, "mtime", &st.st_mtim, mm);
    }
    emit(c, desc, r, err, 0, false, b.s, NULL, 0);
    free(b.s);
    free(desc);
}

/* Whether two names are the same inode (hard links, renames keep st_ino). */
static void same_ino(struct cx *c, const char *a, unsigned long long ino_a, const char *b)
{
    struct stat st;
    int r = fstatat(c->d, b, &st, AT_SYMLINK_NOFOLLOW);
    int err = r ? errno : 0;
    char *desc = xprintf("st_ino of \"%s\" equals the earlier st_ino of \"%s\"", b, a);
    emit(c, desc, r, err, 0, false, r ? NULL : (st.st_ino == ino_a ? "yes" : "no"), NULL, 0);
    free(desc);
}

static unsigned long long ino_of(struct cx *c, const char *name)
{
    struct stat st;
    return fstatat(c->d, name, &st, AT_SYMLINK_NOFOLLOW) ? 0 : (unsigned long long)st.st_ino;
}

/* rm -rf, reporting the first failure only. */
static int rm_err;
static char rm_where[PATH_MAX];
static int rm_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    int r = type == FTW_DP ? rmdir(path) : unlink(path);
    if (r && !rm_err) {
        rm_err = errno;
        snprintf(rm_where, sizeof(rm_where), "%s", path);
    }
    return 0;
}

static int rm_rf(const char *path, char *where, size_t wlen)
{
    rm_err = 0;
    rm_where[0] = 0;
    if (nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) && !rm_err)
        rm_err = errno;
    if (where)
        snprintf(where, wlen, "%s", rm_where);
    return rm_err;
}

/* ---- the cases ---- */

static void t_create_excl(struct cx *c)
{
    int fd = FD(c, openat(c->d, "f", O_CREAT | O_EXCL | O_WRONLY, 0644));
    FST(c, fd);
    PW(c, fd, 0, 100, 1);
    DO(c, close(fd));
    FD(c, openat(c->d, "f", O_CREAT | O_EXCL | O_WRONLY, 0644));
    fd = FD(c, openat(c->d, "f", O_CREAT | O_WRONLY, 0600));
    DO(c, close(fd));
    ST(c, "f");
    cat(c, "f");
    fd = FD(c, openat(c->d, "g", O_CREAT | O_EXCL | O_RDWR, 0640));
    FST(c, fd);
    DO(c, close(fd));
    fd = FD(c, openat(c->d, "h", O_CREAT | O_EXCL | O_RDWR, 0777));
    DO(c, close(fd));
    ST(c, "h");
    FD(c, openat(c->d, "missing", O_RDONLY));
    FD(c, openat(c->d, "nodir/f", O_CREAT | O_WRONLY, 0644));
    FD(c, openat(c->d, "f/x", O_CREAT | O_WRONLY, 0644));
    DO(c, symlinkat("f", c->d, "s"));
    FD(c, openat(c->d, "s", O_CREAT | O_EXCL | O_WRONLY, 0644));
    ls(c, ".");
}

static void t_o_trunc(struct cx *c)
{
    put(c, "f", 5000, 2);
    int fd = FD(c, openat(c->d, "f", O_RDWR | O_TRUNC));
    FST(c, fd);
    PR(c, fd, 0, 100);
    PW(c, fd, 0, 10, 3);
    DO(c, close(fd));
    ST(c, "f");
    cat(c, "f");
    /* Linux truncates even with O_RDONLY. */
    fd = FD(c, openat(c->d, "f", O_RDONLY | O_TRUNC));
    FST(c, fd);
    DO(c, close(fd));
    put(c, "g", 70000, 4);
    fd = FD(c, openat(c->d, "g", O_WRONLY | O_CREAT | O_TRUNC, 0644));
    WR(c, fd, 300, 5);
    DO(c, close(fd));
    ST(c, "g");
    cat(c, "g");
}

static void t_o_append(struct cx *c)
{
    put(c, "f", 3, 4);
    int fd = FD(c, openat(c->d, "f", O_WRONLY | O_APPEND));
    WR(c, fd, 10, 5);
    DO(c, lseek(fd, 0, SEEK_SET));
    WR(c, fd, 7, 6);
    PW(c, fd, 0, 5, 7); /* Linux appends even for pwrite */
    DO(c, lseek(fd, 0, SEEK_CUR));
    FST(c, fd);
    DO(c, close(fd));
    cat(c, "f");
    int a = FD(c, openat(c->d, "f", O_RDWR | O_APPEND));
    int b = FD(c, openat(c->d, "f", O_WRONLY | O_APPEND));
    WR(c, a, 5, 8);
    WR(c, b, 6, 9);
    WR(c, a, 70000, 10);
    WR(c, b, 3, 11);
    PR(c, a, 0, 200000);
    DO(c, close(a));
    DO(c, close(b));
    cat(c, "f");
    /* The shell's >>: create if missing. */
    fd = FD(c, openat(c->d, "g", O_WRONLY | O_CREAT | O_APPEND, 0644));
    WR(c, fd, 12, 12);
    DO(c, close(fd));
    fd = FD(c, openat(c->d, "g", O_WRONLY | O_CREAT | O_APPEND, 0644));
    WR(c, fd, 12, 13);
    DO(c, close(fd));
    cat(c, "g");
}

static void t_open_types(struct cx *c)
{
    put(c, "f", 10, 14);
    DO(c, mkdirat(c->d, "d", 0755));
    FD(c, openat(c->d, "f", O_RDONLY | O_DIRECTORY));
    FD(c, openat(c->d, "d", O_WRONLY));
    FD(c, openat(c->d, "d", O_RDWR));
    FD(c, openat(c->d, "d", O_CREAT | O_WRONLY, 0644));
    FD(c, openat(c->d, "d", O_CREAT | O_EXCL | O_WRONLY, 0644));
    int fd = FD(c, openat(c->d, "d", O_RDONLY));
    FST(c, fd);
    RD(c, fd, 10);
    DO(c, close(fd));
    fd = FD(c, openat(c->d, "d", O_RDONLY | O_DIRECTORY));
    DO(c, close(fd));
    fd = FD(c, openat(c->d, "f", O_RDONLY));
    WR(c, fd, 5, 15);
    DO(c, close(fd));
    fd = FD(c, openat(c->d, "f", O_WRONLY));
    RD(c, fd, 5);
    DO(c, close(fd));
    FD(c, openat(c->d, "f/", O_RDONLY));
    ST(c, "f");
    cat(c, "f");
}

static void t_rw_offsets(struct cx *c)
{
    int fd = FD(c, openat(c->d, "f", O_CREAT | O_RDWR, 0644));
    PW(c, fd, 0, 4096, 20);
    PW(c, fd, 4096 * 3 + 17, 1000, 21);
    PW(c, fd, MiB + 7, 70000, 22);
    FST(c, fd);
    PR(c, fd, 0, 20000);
    PR(c, fd, 4000, 200);
    PR(c, fd, MiB - 10, 100);
    PR(c, fd, MiB + 7 + 70000 - 10, 100);
    PR(c, fd, MiB + 7 + 70000, 100);
    PR(c, fd, 1LL << 40, 10);
    DO(c, lseek(fd, 0, SEEK_END));
    WR(c, fd, 100, 23);
    DO(c, lseek(fd, 5000, SEEK_SET));
    RD(c, fd, 100);
    DO(c, lseek(fd, 0, SEEK_CUR));
    DO(c, lseek(fd, 10 * MiB, SEEK_SET));
    WR(c, fd, 1, 24);
    FST(c, fd);
    PR(c, fd, 9 * MiB, 4096);
    PR(c, fd, 10 * MiB - 5, 100);
    PW(c, fd, 100, 0, 25);
    PW(c, fd, -1, 10, 25);
    FST(c, fd);
    DO(c, close(fd));
    /* One large unaligned write, read back in odd pieces. */
    fd = FD(c, openat(c->d, "big", O_CREAT | O_RDWR, 0644));
    PW(c, fd, 3, 4 * MiB, 26);
    for (off_t off = 0; off < 4 * MiB + 200000; off += 123457)
        PR(c, fd, off, 123457);
    DO(c, close(fd));
    cat(c, "big");
    /* Writes that overlap earlier ones, across a 1 MiB boundary. */
    fd = FD(c, openat(c->d, "over", O_CREAT | O_RDWR, 0644));
    PW(c, fd, MiB - 3000, 6000, 27);
    PW(c, fd, MiB - 100, 200, 28);
    PW(c, fd, MiB - 5000, 3000, 29);
    PR(c, fd, MiB - 6000, 12000);
    DO(c, close(fd));
}

static void t_ftruncate(struct cx *c)
{
    int fd = FD(c, openat(c->d, "f", O_CREAT | O_RDWR, 0644));
    PW(c, fd, 0, 10000, 30);
    DO(c, ftruncate(fd, 5000));
    FST(c, fd);
    PR(c, fd, 0, 10000);
    DO(c, ftruncate(fd, 100000));
    FST(c, fd);
    PR(c, fd, 4990, 100);
    PR(c, fd, 99990, 100);
    DO(c, ftruncate(fd, 0));
    FST(c, fd);
    PR(c, fd, 0, 100);
    DO(c, ftruncate(fd, 3 * MiB + 5));
    PR(c, fd, 3 * MiB - 100, 200);
    PW(c, fd, 2 * MiB, 10, 31);
    DO(c, ftruncate(fd, 2 * MiB + 5));
    PR(c, fd, 2 * MiB - 5, 20);
    DO(c, ftruncate(fd, -1));
    FST(c, fd);
    DO(c, close(fd));
    DO(c, truncate(P(c, "f"), 7));
    ST(c, "f");
    int ro = FD(c, openat(c->d, "f", O_RDONLY));
    DO(c, ftruncate(ro, 0));
    DO(c, close(ro));
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, truncate(P(c, "d"), 0));
    DO(c, truncate(P(c, "missing"), 0));
    /* A truncate through the path is seen through an fd opened before it. */
    fd = FD(c, openat(c->d, "g", O_CREAT | O_RDWR, 0644));
    PW(c, fd, 0, 8192, 32);
    PR(c, fd, 0, 8192);
    DO(c, truncate(P(c, "g"), 100));
    FST(c, fd);
    PR(c, fd, 0, 8192);
    DO(c, truncate(P(c, "g"), 5000));
    PR(c, fd, 0, 8192);
    DO(c, close(fd));
    cat(c, "g");
}

static void t_fsync_close(struct cx *c)
{
    int fd = FD(c, openat(c->d, "f", O_CREAT | O_WRONLY, 0644));
    PW(c, fd, 0, 300000, 33);
    DO(c, fsync(fd));
    PW(c, fd, 300000, 1000, 34);
    DO(c, fdatasync(fd));
    DO(c, syncfs(fd));
    DO(c, close(fd));
    DO(c, close(fd));
    cat(c, "f");
    fd = FD(c, openat(c->d, "f", O_RDONLY));
    DO(c, fsync(fd));
    DO(c, fdatasync(fd));
    int fd2 = FD(c, dup(fd));
    DO(c, close(fd));
    PR(c, fd2, 299990, 100);
    DO(c, close(fd2));
    int dfd = FD(c, openat(c->d, ".", O_RDONLY | O_DIRECTORY));
    DO(c, fsync(dfd));
    DO(c, close(dfd));
    ST(c, "f");
}

static void t_mkdir(struct cx *c)
{
    DO(c, mkdirat(c->d, "d", 0755));
    ST(c, "d");
    DO(c, mkdirat(c->d, "d", 0755));
    put(c, "f", 1, 35);
    DO(c, mkdirat(c->d, "f", 0755));
    DO(c, mkdirat(c->d, "nope/d", 0755));
    DO(c, mkdirat(c->d, "f/d", 0755));
    DO(c, mkdirat(c->d, "d/s1", 0777));
    ST(c, "d/s1");
    ST(c, "d");
    DO(c, mkdirat(c->d, "d/s2", 0700));
    ST(c, "d/s2");
    ST(c, "d");
    DO(c, mkdirat(c->d, "sticky", 01777));
    ST(c, "sticky");
    DO(c, mkdirat(c->d, "new/", 0755));
    DO(c, mkdirat(c->d, "d/", 0755));
    ST(c, ".");
    ls(c, ".");
    ls(c, "d");
    ls(c, "d/s1");
}

static void t_rmdir(struct cx *c)
{
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, mkdirat(c->d, "d/s", 0755));
    put(c, "d/f", 10, 36);
    DO(c, unlinkat(c->d, "d", AT_REMOVEDIR));
    DO(c, rmdir(P(c, "d")));
    DO(c, unlinkat(c->d, "d/f", AT_REMOVEDIR));
    DO(c, unlinkat(c->d, "missing", AT_REMOVEDIR));
    DO(c, rmdir(P(c, "d/s/.")));
    DO(c, unlinkat(c->d, "d/s", AT_REMOVEDIR));
    ST(c, "d");
    DO(c, unlinkat(c->d, "d/f", 0));
    DO(c, rmdir(P(c, "d")));
    ST(c, "d");
    ST(c, ".");
    /* A directory removed while open. */
    DO(c, mkdirat(c->d, "e", 0755));
    int dfd = FD(c, openat(c->d, "e", O_RDONLY | O_DIRECTORY));
    DO(c, unlinkat(c->d, "e", AT_REMOVEDIR));
    FD(c, openat(dfd, "x", O_CREAT | O_WRONLY, 0644));
    DO(c, mkdirat(dfd, "y", 0755));
    DO(c, close(dfd));
    ls(c, ".");
}

static void t_unlink(struct cx *c)
{
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, unlinkat(c->d, "d", 0));
    DO(c, unlink(P(c, "d")));
    DO(c, unlinkat(c->d, "missing", 0));
    DO(c, unlinkat(c->d, "missing/x", 0));
    put(c, "f", 10, 37);
    DO(c, unlinkat(c->d, "f/x", 0));
    DO(c, symlinkat("f", c->d, "s"));
    DO(c, unlinkat(c->d, "s", 0));
    ST(c, "f");
    LST(c, "s");
    DO(c, unlinkat(c->d, "f", 0));
    ST(c, "f");
    DO(c, unlinkat(c->d, "f", 0));
    ls(c, ".");
}

static void t_unlink_open(struct cx *c)
{
    int fd = FD(c, openat(c->d, "f", O_CREAT | O_RDWR, 0644));
    PW(c, fd, 0, 5000, 38);
    int fd2 = FD(c, openat(c->d, "f", O_RDONLY));
    DO(c, unlinkat(c->d, "f", 0));
    ST(c, "f");
    ls(c, ".");
    FST(c, fd);
    FST(c, fd2);
    PW(c, fd, 5000, 3000, 39);
    PR(c, fd, 0, 10000);
    PR(c, fd2, 4000, 2000);
    DO(c, ftruncate(fd, 6000));
    FST(c, fd2);
    /* A new file under the old name is a different file. */
    put(c, "f", 77, 40);
    cat(c, "f");
    PR(c, fd2, 0, 10000);
    DO(c, fsync(fd));
    DO(c, close(fd));
    PR(c, fd2, 0, 10000);
    FST(c, fd2);
    DO(c, close(fd2));
    cat(c, "f");
    /* Truncated down and up again while unlinked, after its data reached the file system. */
    fd = FD(c, openat(c->d, "t", O_CREAT | O_RDWR, 0644));
    DO(c, unlinkat(c->d, "t", 0));
    PW(c, fd, 0, 100000, 95);
    DO(c, fsync(fd));
    DO(c, ftruncate(fd, 10));
    DO(c, ftruncate(fd, 100000));
    PR(c, fd, 0, 100000);
    DO(c, close(fd));
    /* Unlinked while open for writing only, written a lot after. */
    fd = FD(c, openat(c->d, "g", O_CREAT | O_WRONLY, 0644));
    DO(c, unlinkat(c->d, "g", 0));
    PW(c, fd, 0, 3 * MiB, 41);
    FST(c, fd);
    DO(c, close(fd));
    ls(c, ".");
}

static void t_rename_plain(struct cx *c)
{
    put(c, "a", 1000, 42);
    unsigned long long ino = ino_of(c, "a");
    DO(c, renameat(c->d, "a", c->d, "b"));
    ST(c, "a");
    cat(c, "b");
    same_ino(c, "a", ino, "b");
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, renameat(c->d, "b", c->d, "d/b"));
    cat(c, "d/b");
    same_ino(c, "a", ino, "d/b");
    DO(c, renameat(c->d, "missing", c->d, "x"));
    DO(c, renameat(c->d, "d/b", c->d, "nodir/b"));
    DO(c, mkdirat(c->d, "x", 0755));
    put(c, "x/f", 100, 43);
    DO(c, renameat(c->d, "x", c->d, "y"));
    ST(c, "x");
    cat(c, "y/f");
    int fd = FD(c, openat(c->d, "y/f", O_RDWR));
    DO(c, renameat(c->d, "y/f", c->d, "z"));
    PR(c, fd, 0, 200);
    PW(c, fd, 50, 100, 44);
    FST(c, fd);
    DO(c, close(fd));
    cat(c, "z");
    DO(c, renameat(c->d, "z", c->d, "z"));
    ST(c, "z");
    DO(c, renameat(c->d, "d", c->d, "y/d"));
    ls(c, ".");
    ls(c, "y");
    ls(c, "y/d");
    ST(c, "y");
}

static void t_rename_over_file(struct cx *c)
{
    put(c, "a", 1000, 45);
    put(c, "b", 3000, 46);
    int fdb = FD(c, openat(c->d, "b", O_RDONLY));
    DO(c, renameat(c->d, "a", c->d, "b"));
    ST(c, "a");
    ST(c, "b");
    cat(c, "b");
    PR(c, fdb, 0, 4000);
    FST(c, fdb);
    DO(c, close(fdb));
    /* An editor's atomic save. */
    put(c, "b.tmp", 2000, 47);
    int fd = FD(c, openat(c->d, "b.tmp", O_RDONLY));
    DO(c, fsync(fd));
    DO(c, close(fd));
    DO(c, renameat(c->d, "b.tmp", c->d, "b"));
    cat(c, "b");
    ls(c, ".");
    /* Renaming one hard link over another of the same file does nothing. */
    DO(c, linkat(c->d, "b", c->d, "c", 0));
    DO(c, renameat(c->d, "b", c->d, "c"));
    ST(c, "b");
    ST(c, "c");
    /* Kinds must match. */
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, renameat(c->d, "b", c->d, "d"));
    DO(c, renameat(c->d, "d", c->d, "b"));
    ls(c, ".");
}

static void t_rename_over_empty_dir(struct cx *c)
{
    DO(c, mkdirat(c->d, "d1", 0755));
    put(c, "d1/f", 10, 48);
    DO(c, mkdirat(c->d, "d2", 0755));
    ST(c, ".");
    DO(c, renameat(c->d, "d1", c->d, "d2"));
    ST(c, "d1");
    ST(c, "d2");
    cat(c, "d2/f");
    ST(c, ".");
    ls(c, ".");
}

static void t_rename_dir_nonempty(struct cx *c)
{
    DO(c, mkdirat(c->d, "d1", 0755));
    DO(c, mkdirat(c->d, "d2", 0755));
    put(c, "d2/f", 10, 49);
    DO(c, renameat(c->d, "d1", c->d, "d2"));
    ls(c, "d2");
    ST(c, "d1");
    DO(c, mkdirat(c->d, "d3", 0755));
    DO(c, mkdirat(c->d, "d3/sub", 0755));
    DO(c, renameat(c->d, "d1", c->d, "d3"));
    ls(c, ".");
}

static void t_rename_into_subdir(struct cx *c)
{
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, mkdirat(c->d, "d/sub", 0755));
    DO(c, renameat(c->d, "d", c->d, "d/sub/x"));
    DO(c, renameat(c->d, "d", c->d, "d/x"));
    DO(c, renameat(c->d, "d/sub", c->d, "d/sub/sub2"));
    DO(c, renameat(c->d, "d/sub", c->d, "d"));
    ls(c, ".");
    ls(c, "d");
}

static void t_rename_noreplace(struct cx *c)
{
    put(c, "a", 100, 50);
    put(c, "b", 200, 51);
    DO(c, renameat2(c->d, "a", c->d, "b", RENAME_NOREPLACE));
    cat(c, "a");
    cat(c, "b");
    DO(c, renameat2(c->d, "a", c->d, "c", RENAME_NOREPLACE));
    ST(c, "a");
    cat(c, "c");
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, renameat2(c->d, "c", c->d, "d", RENAME_NOREPLACE));
    DO(c, renameat2(c->d, "missing", c->d, "e", RENAME_NOREPLACE));
    ls(c, ".");
}

static void t_rename_exchange(struct cx *c)
{
    put(c, "a", 100, 52);
    put(c, "b", 200, 53);
    DO_NOTE(c, EINVAL, renameat2(c->d, "a", c->d, "b", RENAME_EXCHANGE));
    cat(c, "a");
    cat(c, "b");
    DO(c, mkdirat(c->d, "d", 0755));
    put(c, "d/x", 10, 54);
    DO(c, renameat2(c->d, "a", c->d, "d", RENAME_EXCHANGE));
    ST(c, "a");
    ST(c, "d");
    cat(c, "a/x");
    cat(c, "d");
    DO(c, renameat2(c->d, "b", c->d, "missing", RENAME_EXCHANGE));
    DO(c, renameat2(c->d, "b", c->d, "c", RENAME_EXCHANGE | RENAME_NOREPLACE));
    ls(c, ".");
}

static void t_link(struct cx *c)
{
    put(c, "f", 100, 55);
    unsigned long long ino = ino_of(c, "f");
    DO(c, linkat(c->d, "f", c->d, "l", 0));
    ST(c, "f");
    ST(c, "l");
    same_ino(c, "f", ino, "l");
    int fd = FD(c, openat(c->d, "l", O_WRONLY));
    PW(c, fd, 0, 10, 56);
    DO(c, close(fd));
    cat(c, "f");
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, linkat(c->d, "f", c->d, "d/l2", 0));
    ST(c, "l");
    DO(c, linkat(c->d, "d", c->d, "dl", 0));
    DO(c, linkat(c->d, "f", c->d, "l", 0));
    DO(c, linkat(c->d, "missing", c->d, "x", 0));
    DO(c, unlinkat(c->d, "f", 0));
    ST(c, "l");
    cat(c, "l");
    DO(c, unlinkat(c->d, "d/l2", 0));
    ST(c, "l");
    same_ino(c, "f", ino, "l");
    /* A link to a symlink is a second name of the symlink. */
    DO(c, symlinkat("l", c->d, "s"));
    DO(c, linkat(c->d, "s", c->d, "s2", 0));
    LST(c, "s2");
    rl(c, "s2");
    DO(c, linkat(c->d, "s", c->d, "s3", AT_SYMLINK_FOLLOW));
    LST(c, "s3");
    ST(c, "l");
    ls(c, ".");
}

static void t_symlink(struct cx *c)
{
    put(c, "t", 100, 57);
    DO(c, symlinkat("t", c->d, "s"));
    rl(c, "s");
    LST(c, "s");
    ST(c, "s");
    int fd = FD(c, openat(c->d, "s", O_RDONLY));
    PR(c, fd, 0, 200);
    DO(c, close(fd));
    cat(c, "s");
    DO(c, symlinkat("t", c->d, "s"));
    rl(c, "t");
    DO(c, symlinkat("nowhere", c->d, "dang"));
    ST(c, "dang");
    LST(c, "dang");
    rl(c, "dang");
    FD(c, openat(c->d, "dang", O_RDONLY));
    FD(c, openat(c->d, "dang", O_CREAT | O_EXCL | O_WRONLY, 0644));
    fd = FD(c, openat(c->d, "dang", O_CREAT | O_WRONLY, 0644));
    WR(c, fd, 5, 58);
    DO(c, close(fd));
    ST(c, "nowhere");
    cat(c, "dang");
    FD(c, openat(c->d, "s", O_RDONLY | O_NOFOLLOW));
    DO(c, mkdirat(c->d, "d", 0755));
    put(c, "d/f", 20, 59);
    DO(c, symlinkat("d", c->d, "sd"));
    ST(c, "sd");
    cat(c, "sd/f");
    ls(c, "sd");
    DO(c, mkdirat(c->d, "e", 0755));
    DO(c, symlinkat("../t", c->d, "e/up"));
    cat(c, "e/up");
    DO(c, symlinkat(P(c, "t"), c->d, "abs"));
    cat(c, "abs");
    char longt[4001];
    memset(longt, 'x', 4000);
    longt[4000] = 0;
    for (int i = 100; i < 4000; i += 100)
        longt[i] = '/';
    DO(c, symlinkat(longt, c->d, "long"));
    rl(c, "long");
    LST(c, "long");
    char toolong[4200];
    memset(toolong, 'y', sizeof(toolong) - 1);
    toolong[sizeof(toolong) - 1] = 0;
    DO(c, symlinkat(toolong, c->d, "toolong"));
    DO(c, symlinkat("loop", c->d, "loop"));
    FD(c, openat(c->d, "loop", O_RDONLY));
    ST(c, "loop");
    DO(c, unlinkat(c->d, "s", 0));
    ST(c, "t");
    ls(c, ".");
}

static void t_chmod(struct cx *c)
{
    put(c, "f", 10, 60);
    DO(c, fchmodat(c->d, "f", 0600, 0));
    ST(c, "f");
    DO(c, fchmodat(c->d, "f", 0755, 0));
    ST(c, "f");
    DO(c, fchmodat(c->d, "f", 04755, 0));
    ST(c, "f");
    DO(c, fchmodat(c->d, "f", 07777, 0));
    ST(c, "f");
    DO(c, fchmodat(c->d, "f", 0, 0));
    ST(c, "f");
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, fchmodat(c->d, "d", 01777, 0));
    ST(c, "d");
    DO(c, fchmodat(c->d, "d", 0700, 0));
    ST(c, "d");
    int fd = FD(c, openat(c->d, "f", O_RDONLY));
    DO(c, fchmod(fd, 0640));
    FST(c, fd);
    DO(c, close(fd));
    DO(c, symlinkat("f", c->d, "s"));
    DO(c, fchmodat(c->d, "s", 0444, 0));
    ST(c, "f");
    LST(c, "s");
    DO(c, fchmodat(c->d, "missing", 0644, 0));
    /* A write clears set-user-ID unless the writer has CAP_FSETID (root keeps it). */
    DO(c, fchmodat(c->d, "f", 06755, 0));
    fd = FD(c, openat(c->d, "f", O_WRONLY));
    PW(c, fd, 0, 5, 61);
    DO(c, close(fd));
    ST(c, "f");
    /* So does an O_TRUNC open, which the mount's kernel leaves to the MDT. */
    DO(c, fchmodat(c->d, "f", 06755, 0));
    fd = FD(c, openat(c->d, "f", O_WRONLY | O_TRUNC));
    DO(c, close(fd));
    ST(c, "f");
}

static void t_chown(struct cx *c)
{
    uid_t uid = geteuid();
    gid_t gid = getegid();
    put(c, "f", 10, 62);
    DO(c, fchownat(c->d, "f", uid, gid, 0));
    ST(c, "f");
    DO(c, fchownat(c->d, "f", (uid_t)-1, (gid_t)-1, 0));
    ST(c, "f");
    DO(c, fchownat(c->d, "missing", uid, gid, 0));
    if (uid != 0) {
        DO(c, fchownat(c->d, "f", 0, 0, 0));
        ST(c, "f");
        return;
    }
    DO(c, fchownat(c->d, "f", 1234, 5678, 0));
    ST(c, "f");
    DO(c, fchownat(c->d, "f", 65534, (gid_t)-1, 0));
    ST(c, "f");
    DO(c, fchownat(c->d, "f", (uid_t)-1, 65534, 0));
    ST(c, "f");
    /* chown clears set-user-ID (and set-group-ID with group execute) on files. */
    DO(c, fchmodat(c->d, "f", 06755, 0));
    DO(c, fchownat(c->d, "f", 1000, 1000, 0));
    ST(c, "f");
    DO(c, symlinkat("f", c->d, "s"));
    DO(c, fchownat(c->d, "s", 42, 43, AT_SYMLINK_NOFOLLOW));
    LST(c, "s");
    ST(c, "f");
    DO(c, fchownat(c->d, "s", 44, 45, 0));
    LST(c, "s");
    ST(c, "f");
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, fchownat(c->d, "d", 4321, 4321, 0));
    ST(c, "d");
    int fd = FD(c, openat(c->d, "f", O_RDONLY));
    DO(c, fchown(fd, 0, 0));
    FST(c, fd);
    DO(c, close(fd));
    /* Files created by root in a directory owned by someone else are root's. */
    put(c, "d/g", 1, 63);
    ST(c, "d/g");
}

static void t_utimens(struct cx *c)
{
    put(c, "f", 10, 64);
    struct timespec ts[2] = {{1000000000, 123456789}, {1234567890, 987654321}};
    DO(c, utimensat(c->d, "f", ts, 0));
    tm(c, "f", 0, EXACT, EXACT);
    struct timespec now_omit[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
    DO(c, utimensat(c->d, "f", now_omit, 0));
    tm(c, "f", 0, RECENT, EXACT);
    DO(c, utimensat(c->d, "f", ts, 0));
    struct timespec omit_now[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    DO(c, utimensat(c->d, "f", omit_now, 0));
    tm(c, "f", 0, EXACT, RECENT);
    DO(c, utimensat(c->d, "f", ts, 0));
    DO(c, utimensat(c->d, "f", NULL, 0));
    tm(c, "f", 0, RECENT, RECENT);
    struct timespec edges[2] = {{0, 0}, {4102444800LL, 999999999}};
    DO(c, utimensat(c->d, "f", edges, 0));
    tm(c, "f", 0, EXACT, EXACT);
    struct timespec bad[2] = {{0, 1000000000}, {0, 0}};
    DO(c, utimensat(c->d, "f", bad, 0));
    int fd = FD(c, openat(c->d, "f", O_RDWR));
    DO(c, futimens(fd, ts));
    tm(c, "f", 0, EXACT, EXACT);
    /* A write moves mtime to now and leaves atime. */
    PW(c, fd, 0, 10, 65);
    DO(c, close(fd));
    tm(c, "f", 0, EXACT, RECENT);
    DO(c, utimensat(c->d, "f", ts, 0));
    DO(c, truncate(P(c, "f"), 3));
    tm(c, "f", 0, EXACT, RECENT);
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, utimensat(c->d, "d", ts, 0));
    tm(c, "d", 0, EXACT, EXACT);
    put(c, "d/new", 1, 66);
    tm(c, "d", 0, EXACT, RECENT);
    DO(c, symlinkat("f", c->d, "s"));
    struct timespec ts2[2] = {{1100000000, 5}, {1200000000, 7}};
    DO(c, utimensat(c->d, "s", ts2, AT_SYMLINK_NOFOLLOW));
    tm(c, "s", AT_SYMLINK_NOFOLLOW, EXACT, EXACT);
    tm(c, "f", 0, EXACT, RECENT);
    DO(c, utimensat(c->d, "missing", ts, 0));
}

static void t_readdir_basic(struct cx *c)
{
    ls(c, ".");
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, mkdirat(c->d, "d/x", 0755));
    put(c, "f", 1, 67);
    DO(c, symlinkat("f", c->d, "s"));
    put(c, ".hidden", 1, 68);
    put(c, "with space", 1, 69);
    put(c, "utf8-\xc3\xa9\xe2\x82\xac", 1, 70);
    ls(c, ".");
    ls(c, "d");
    ls(c, "d/x");
    /* A file created after opendir may or may not be seen; rewinddir must see it. */
    int fd = FD(c, openat(c->d, "d", O_RDONLY | O_DIRECTORY));
    DIR *dir = fdopendir(fd);
    int n1 = 0, n2 = 0;
    while (dir && readdir(dir))
        n1++;
    put(c, "d/late", 1, 71);
    if (dir) {
        rewinddir(dir);
        while (readdir(dir))
            n2++;
        closedir(dir);
    }
    fact(c, "entries before and after rewinddir", "%d %d", n1, n2);
}

/*
 * 1,000 names; a third of them unlinked part-way through a readdir pass. The names are
 * long enough that the listing takes several getdents calls after the unlinks.
 */
#define LONGISH "a-name-long-enough-to-need-many-getdents-"
static void t_readdir_unlink(struct cx *c)
{
    enum { N = 1000 };
    DO(c, mkdirat(c->d, "d", 0755));
    int fails = 0, first_err = 0;
    for (int i = 0; i < N; i++) {
        char name[80];
        snprintf(name, sizeof(name), "d/" LONGISH "%04d", i);
        int fd = openat(c->d, name, O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd < 0 || close(fd)) {
            if (!fails++)
                first_err = errno;
        }
    }
    fact(c, "create 1000 files", "failed=%d first=%s", fails, fails ? errname(first_err) : "-");
    int fd = FD(c, openat(c->d, "d", O_RDONLY | O_DIRECTORY));
    DIR *dir = fd < 0 ? NULL : fdopendir(fd);
    unsigned char seen[N] = {0};
    int dots = 0, unknown = 0, read_before = 0, unl_fail = 0, unl_err = 0;
    char unknown_name[300] = "";
    struct dirent *de;
    errno = 0;
    while (dir && (de = readdir(dir))) {
        int i;
        char extra;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) {
            dots++;
        } else if (!strncmp(de->d_name, LONGISH, strlen(LONGISH)) &&
                   sscanf(de->d_name + strlen(LONGISH), "%d%c", &i, &extra) == 1 && i >= 0 &&
                   i < N && strlen(de->d_name) == strlen(LONGISH) + 4) {
            if (seen[i] < 255)
                seen[i]++;
        } else if (!unknown++) {
            snprintf(unknown_name, sizeof(unknown_name), "%s", de->d_name);
        }
        if (++read_before == 300) {
            for (int k = 0; k < N; k += 3) {
                char name[80];
                snprintf(name, sizeof(name), "d/" LONGISH "%04d", k);
                if (unlinkat(c->d, name, 0) && !unl_fail++)
                    unl_err = errno;
            }
        }
        errno = 0;
    }
    int rerr = errno;
    if (dir)
        closedir(dir);
    fact(c, "unlink every third name during the pass", "failed=%d first=%s", unl_fail,
         unl_fail ? errname(unl_err) : "-");
    struct sb b = {0};
    int dup = 0, missing = 0, removed_seen_twice = 0;
    for (int i = 0; i < N; i++) {
        if (i % 3 == 0) {
            if (seen[i] > 1 && !removed_seen_twice++)
                sb_add(&b, " removed #%04d seen %d times;", i, seen[i]);
        } else if (seen[i] == 0) {
            if (!missing++)
                sb_add(&b, " #%04d never seen;", i);
        } else if (seen[i] > 1) {
            if (!dup++)
                sb_add(&b, " #%04d seen %d times;", i, seen[i]);
        }
    }
    fact(c, "readdir pass: each remaining name once, each removed name at most once",
         "error=%s dots=%d unknown=%d%s%s missing=%d dup=%d removed-dup=%d%s",
         rerr ? errname(rerr) : "-", dots, unknown, unknown ? " first unknown: " : "", unknown_name,
         missing, dup, removed_seen_twice, b.s ? b.s : "");
    free(b.s);
    ls(c, "d");
}

static void t_xattr(struct cx *c)
{
    put(c, "f", 10, 72);
    DO(c, setxattr(P(c, "f"), "user.a", "v1", 2, 0));
    gx(c, "f", "user.a");
    DO(c, setxattr(P(c, "f"), "user.a", "v9", 2, XATTR_CREATE));
    DO(c, setxattr(P(c, "f"), "user.b", "v2", 2, XATTR_REPLACE));
    gx(c, "f", "user.b");
    DO(c, setxattr(P(c, "f"), "user.b", "", 0, XATTR_CREATE));
    gx(c, "f", "user.b");
    gx(c, "f", "user.none");
    DO(c, getxattr(P(c, "f"), "user.a", NULL, 0));
    char small[1];
    DO(c, getxattr(P(c, "f"), "user.a", small, sizeof(small)));
    DO(c, setxattr(P(c, "f"), "user.a", "value2", 6, XATTR_REPLACE));
    gx(c, "f", "user.a");
    unsigned char big[4000];
    fill(big, sizeof(big), 73);
    DO(c, setxattr(P(c, "f"), "user.big", big, sizeof(big), 0));
    gx(c, "f", "user.big");
    DO(c, setxattr(P(c, "f"), "user.bin", "a\0b\0", 4, 0));
    gx(c, "f", "user.bin");
    lx(c, "f");
    DO(c, removexattr(P(c, "f"), "user.a"));
    gx(c, "f", "user.a");
    DO(c, removexattr(P(c, "f"), "user.a"));
    lx(c, "f");
    int fd = FD(c, openat(c->d, "f", O_RDONLY));
    DO(c, fsetxattr(fd, "user.fd", "viafd", 5, 0));
    char buf[64];
    DO(c, fgetxattr(fd, "user.fd", buf, sizeof(buf)));
    DO(c, fremovexattr(fd, "user.b"));
    DO(c, close(fd));
    lx(c, "f");
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, setxattr(P(c, "d"), "user.x", "dir", 3, 0));
    gx(c, "d", "user.x");
    lx(c, "d");
    DO(c, symlinkat("f", c->d, "s"));
    DO(c, lsetxattr(P(c, "s"), "user.x", "lnk", 3, 0));
    gx(c, "s", "user.fd");
    DO(c, setxattr(P(c, "missing"), "user.x", "v", 1, 0));
    gx(c, "missing", "user.x");
    /* Attributes survive a rename and are shared by hard links. */
    DO(c, renameat(c->d, "f", c->d, "g"));
    gx(c, "g", "user.fd");
    DO(c, linkat(c->d, "g", c->d, "h", 0));
    DO(c, setxattr(P(c, "h"), "user.l", "link", 4, 0));
    gx(c, "g", "user.l");
}

static void t_statfs(struct cx *c)
{
    struct statfs s;
    int r = DO(c, statfs(P(c, "."), &s));
    struct sb b = {0};
    if (!r) {
        if (s.f_bsize <= 0)
            sb_add(&b, " bsize<=0");
        if (s.f_blocks == 0)
            sb_add(&b, " blocks=0");
        if (s.f_bfree > s.f_blocks)
            sb_add(&b, " bfree>blocks");
        if (s.f_bavail > s.f_blocks)
            sb_add(&b, " bavail>blocks");
        if (s.f_ffree > s.f_files)
            sb_add(&b, " ffree>files");
    }
    fact(c, "statfs numbers are self-consistent", "%s", b.s ? b.s : "yes");
    free(b.s);
    int fd = FD(c, openat(c->d, ".", O_RDONLY | O_DIRECTORY));
    DO(c, fstatfs(fd, &s));
    DO(c, close(fd));
    DO(c, statfs(P(c, "missing"), &s));
}

static void t_falloc_alloc(struct cx *c)
{
    int fd = FD(c, openat(c->d, "f", O_CREAT | O_RDWR, 0644));
    DO_NOTE(c, EOPNOTSUPP, fallocate(fd, 0, 0, MiB));
    FST(c, fd);
    PR(c, fd, 0, MiB);
    PW(c, fd, 100, 100, 80);
    DO(c, fallocate(fd, 0, 512 * KiB, 2 * MiB));
    FST(c, fd);
    PR(c, fd, 0, 4096);
    PR(c, fd, 2 * MiB, 4096);
    DO_NOTE(c, EOPNOTSUPP, fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 8 * MiB));
    FST(c, fd);
    DO(c, fallocate(fd, 0, 0, 0));
    DO(c, fallocate(fd, 0, -1, 10));
    DO(c, close(fd));
    cat(c, "f");
}

static void t_falloc_punch(struct cx *c)
{
    int fd = FD(c, openat(c->d, "f", O_CREAT | O_RDWR, 0644));
    PW(c, fd, 0, 3 * 65536, 81);
    DO_NOTE(c, EOPNOTSUPP, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 65536));
    FST(c, fd);
    PR(c, fd, 0, 3 * 65536);
    DO(c, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 70000, 13));
    PR(c, fd, 69990, 40);
    DO(c, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 3 * 65536 - 100, 10000));
    FST(c, fd);
    PR(c, fd, 3 * 65536 - 200, 300);
    DO(c, fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 10));
    DO(c, close(fd));
    cat(c, "f");
}

static void t_falloc_zero(struct cx *c)
{
    int fd = FD(c, openat(c->d, "f", O_CREAT | O_RDWR, 0644));
    PW(c, fd, 0, 200000, 82);
    DO_NOTE(c, EOPNOTSUPP, fallocate(fd, FALLOC_FL_ZERO_RANGE, 1000, 5000));
    FST(c, fd);
    PR(c, fd, 0, 200000);
    DO(c, fallocate(fd, FALLOC_FL_ZERO_RANGE, 190000, 20000));
    FST(c, fd);
    PR(c, fd, 189000, 30000);
    DO(c, fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 205000, 20000));
    FST(c, fd);
    DO(c, close(fd));
    cat(c, "f");
}

static void t_mmap_shared(struct cx *c)
{
    size_t len = 3 * 4096 + 100;
    int fd = FD(c, openat(c->d, "f", O_CREAT | O_RDWR, 0644));
    DO(c, ftruncate(fd, (off_t)len));
    unsigned char *p = MMAP(c, mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    if (p == MAP_FAILED)
        return;
    unsigned char *pat = xmalloc(len);
    fill(pat, len, 83);
    memcpy(p, pat, len);
    DO(c, msync(p, len, MS_SYNC));
    PR(c, fd, 0, len + 10);
    /* And the other way: a write(2) is seen through the mapping. */
    PW(c, fd, 5000, 50, 84);
    blob(c, "mapping bytes 4990..5060 after pwrite", p + 4990, 70);
    DO(c, munmap(p, len));
    DO(c, close(fd));
    cat(c, "f");
    ST(c, "f");
    free(pat);
    /* numpy.memmap(mode="w+"): create, size by writing the last byte, map, fill, flush. */
    size_t n = 100000;
    fd = FD(c, openat(c->d, "w", O_CREAT | O_RDWR | O_TRUNC, 0644));
    DO(c, lseek(fd, (off_t)n - 1, SEEK_SET));
    DO(c, write(fd, "", 1));
    p = MMAP(c, mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    if (p == MAP_FAILED)
        return;
    fill(p, n, 85);
    DO(c, msync(p, n, MS_SYNC));
    DO(c, munmap(p, n));
    DO(c, close(fd));
    cat(c, "w");
    /* Written through a mapping and never msync'ed: munmap and close must keep it. */
    fd = FD(c, openat(c->d, "nosync", O_CREAT | O_RDWR, 0644));
    DO(c, ftruncate(fd, 8192));
    p = MMAP(c, mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    if (p == MAP_FAILED)
        return;
    fill(p, 8192, 86);
    DO(c, munmap(p, 8192));
    DO(c, close(fd));
    cat(c, "nosync");
}

/* numpy.memmap(path, mode="r", offset=..., shape=...), as numpy and Python's mmap do it. */
static void memmap_r(struct cx *c, const char *name, off_t offset, size_t bytes)
{
    fact(c, "numpy.memmap(mode=\"r\")", "%s offset=%lld bytes=%zu", name, (long long)offset, bytes);
    int fd = FD(c, openat(c->d, name, O_RDONLY));
    DO(c, lseek(fd, 0, SEEK_END));
    int mfd = FD(c, dup(fd));
    struct stat st;
    DO(c, fstat(mfd, &st));
    DO(c, close(fd));
    off_t start = offset - offset % 4096;
    size_t len = (size_t)(offset - start) + bytes;
    unsigned char *p = MMAP(c, mmap(NULL, len, PROT_READ, MAP_SHARED, mfd, start));
    if (p != MAP_FAILED) {
        blob(c, "array bytes through the read-only mapping", p + (offset - start), bytes);
        DO(c, munmap(p, len));
    }
    DO(c, close(mfd));
}

static void t_mmap_numpy(struct cx *c)
{
    put(c, "a.npy", 128 + 8 * 10000, 87);
    memmap_r(c, "a.npy", 128, 8 * 10000);
    memmap_r(c, "a.npy", 5000, 8 * 2000);
    memmap_r(c, "a.npy", 8192, 8 * 100);
    put(c, "big.bin", 3 * MiB + 123, 88);
    memmap_r(c, "big.bin", 0, 3 * MiB + 123);
    /* A file rewritten (same name, new content) is seen new by a fresh mapping. */
    put(c, "a.npy", 128 + 8 * 10000, 89);
    memmap_r(c, "a.npy", 128, 8 * 10000);
}

static void t_long_names(struct cx *c)
{
    char n255[256], n256[257], m255[256], l255[256], u255[256], u256[257];
    memset(n255, 'a', 255);
    n255[255] = 0;
    memset(n256, 'b', 256);
    n256[256] = 0;
    memset(m255, 'c', 255);
    m255[255] = 0;
    memset(l255, 'd', 255);
    l255[255] = 0;
    /* 127 two-byte characters and one ASCII: 255 bytes; 128 of them: 256. */
    for (int i = 0; i < 127; i++)
        memcpy(u255 + 2 * i, "\xc3\xa9", 2);
    u255[254] = 'z';
    u255[255] = 0;
    for (int i = 0; i < 128; i++)
        memcpy(u256 + 2 * i, "\xc3\xa9", 2);
    u256[256] = 0;
    int fd = FD(c, openat(c->d, n255, O_CREAT | O_WRONLY, 0644));
    WR(c, fd, 10, 90);
    DO(c, close(fd));
    ST(c, n255);
    cat(c, n255);
    FD(c, openat(c->d, n256, O_CREAT | O_WRONLY, 0644));
    DO(c, mkdirat(c->d, n256, 0755));
    DO(c, mkdirat(c->d, m255, 0755));
    ST(c, m255);
    ST(c, n256);
    DO(c, renameat(c->d, n255, c->d, n256));
    DO(c, symlinkat("x", c->d, n256));
    DO(c, linkat(c->d, n255, c->d, l255, 0));
    DO(c, linkat(c->d, n255, c->d, n256, 0));
    fd = FD(c, openat(c->d, u255, O_CREAT | O_WRONLY, 0644));
    DO(c, close(fd));
    FD(c, openat(c->d, u256, O_CREAT | O_WRONLY, 0644));
    DO(c, setxattr(P(c, n255), "user.k", "v", 1, 0));
    gx(c, n255, "user.k");
    ls(c, ".");
    DO(c, unlinkat(c->d, n255, 0));
    DO(c, unlinkat(c->d, n256, 0));
    ls(c, ".");
}

/* 2,000 small files of different sizes, each checked. */
static void t_many_small(struct cx *c)
{
    enum { N = 2000 };
    DO(c, mkdirat(c->d, "m", 0755));
    unsigned char buf[512], back[600];
    int fails = 0;
    char first[200] = "-";
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof(name), "m/f%05d", i);
        size_t len = (size_t)(i * 37) % 500;
        fill(buf, len, 1000 + (unsigned)i);
        int fd = openat(c->d, name, O_CREAT | O_EXCL | O_WRONLY, 0644);
        ssize_t w = fd < 0 ? -1 : write(fd, buf, len);
        int cr = fd < 0 ? -1 : close(fd);
        if (fd < 0 || w != (ssize_t)len || cr) {
            if (!fails++)
                snprintf(first, sizeof(first), "%s: fd=%d write=%zd close=%d errno=%s", name, fd, w,
                         cr, errname(errno));
        }
    }
    fact(c, "create and write 2000 small files", "failed=%d first: %s", fails, first);
    ls(c, "m");
    fails = 0;
    snprintf(first, sizeof(first), "-");
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof(name), "m/f%05d", i);
        size_t len = (size_t)(i * 37) % 500;
        fill(buf, len, 1000 + (unsigned)i);
        struct stat st;
        int fd = openat(c->d, name, O_RDONLY);
        ssize_t r = fd < 0 ? -1 : read(fd, back, sizeof(back));
        int sr = fstatat(c->d, name, &st, 0);
        if (fd >= 0)
            close(fd);
        if (r != (ssize_t)len || memcmp(buf, back, len) || sr || st.st_size != (off_t)len) {
            if (!fails++)
                snprintf(first, sizeof(first), "%s: read %zd of %zu, stat %d size %lld", name, r,
                         len, sr, sr ? -1LL : (long long)st.st_size);
        }
    }
    fact(c, "read back and stat 2000 small files", "failed=%d first: %s", fails, first);
    fails = 0;
    snprintf(first, sizeof(first), "-");
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof(name), "m/f%05d", i);
        if (unlinkat(c->d, name, 0) && !fails++)
            snprintf(first, sizeof(first), "%s: %s", name, errname(errno));
    }
    fact(c, "unlink 2000 small files", "failed=%d first: %s", fails, first);
    ls(c, "m");
    DO(c, unlinkat(c->d, "m", AT_REMOVEDIR));
}

static void t_access(struct cx *c)
{
    put(c, "f", 1, 91);
    DO(c, fchmodat(c->d, "f", 0644, 0));
    DO(c, faccessat(c->d, "f", F_OK, 0));
    DO(c, faccessat(c->d, "f", R_OK | W_OK, 0));
    DO(c, faccessat(c->d, "f", X_OK, 0));
    DO(c, fchmodat(c->d, "f", 0755, 0));
    DO(c, faccessat(c->d, "f", X_OK, 0));
    DO(c, fchmodat(c->d, "f", 0, 0));
    DO(c, faccessat(c->d, "f", R_OK, 0));
    DO(c, faccessat(c->d, "f", R_OK, AT_EACCESS));
    DO(c, faccessat(c->d, "missing", F_OK, 0));
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, faccessat(c->d, "d", X_OK | W_OK, 0));
}

/*
 * A file truncated by another open(O_TRUNC) (the shell's `: > log`) while a writer
 * keeps its fd: the writer's next write leaves a hole where the old data was.
 */
static void t_trunc_under_writer(struct cx *c)
{
    int w = FD(c, openat(c->d, "log", O_CREAT | O_EXCL | O_RDWR, 0644));
    PW(c, w, 0, 8192, 96);
    int r = FD(c, openat(c->d, "log", O_RDONLY));
    PR(c, r, 0, 8192);
    DO(c, close(r));
    int t = FD(c, openat(c->d, "log", O_WRONLY | O_TRUNC));
    DO(c, close(t));
    ST(c, "log");
    PW(c, w, 100000, 10, 97);
    PR(c, w, 0, 8192);
    FST(c, w);
    DO(c, close(w));
    cat(c, "log");
    /* The same with truncate(2) on the path. */
    w = FD(c, openat(c->d, "log2", O_CREAT | O_EXCL | O_RDWR, 0644));
    PW(c, w, 0, 8192, 98);
    r = FD(c, openat(c->d, "log2", O_RDONLY));
    DO(c, close(r));
    DO(c, truncate(P(c, "log2"), 0));
    PW(c, w, 100000, 10, 99);
    PR(c, w, 0, 8192);
    DO(c, close(w));
    cat(c, "log2");
}

/* Two fds on one file see each other's writes and truncates at once. */
static void t_two_fds(struct cx *c)
{
    int a = FD(c, openat(c->d, "f", O_CREAT | O_RDWR, 0644));
    int b = FD(c, openat(c->d, "f", O_RDWR));
    PW(c, a, 0, 10000, 92);
    PR(c, b, 0, 10000);
    FST(c, b);
    PW(c, b, 5000, 10000, 93);
    PR(c, a, 0, 20000);
    FST(c, a);
    DO(c, ftruncate(a, 3000));
    PR(c, b, 0, 20000);
    FST(c, b);
    int r = FD(c, openat(c->d, "f", O_RDONLY));
    PR(c, r, 0, 20000);
    DO(c, close(a));
    DO(c, close(b));
    DO(c, close(r));
    cat(c, "f");
}

/* cp(1) uses copy_file_range; tar and rsync use plain read and write. */
static void t_copy_range(struct cx *c)
{
    put(c, "src", 3 * MiB + 77, 94);
    int in = FD(c, openat(c->d, "src", O_RDONLY));
    int out = FD(c, openat(c->d, "dst", O_CREAT | O_WRONLY | O_TRUNC, 0644));
    loff_t ioff = 0, ooff = 0;
    long total = 0;
    for (int i = 0; i < 64; i++) {
        ssize_t n = copy_file_range(in, &ioff, out, &ooff, 8 * MiB, 0);
        if (n <= 0) {
            total = n < 0 ? -errno : total;
            break;
        }
        total += n;
    }
    fact(c, "copy_file_range until done", "%s", total < 0 ? errname((int)-total) : "ok");
    fact(c, "copied bytes", "%ld", total < 0 ? 0 : total);
    DO(c, close(in));
    DO(c, close(out));
    cat(c, "dst");
}

/* ---- special files ---- */

/*
 * A writer process and this one pass len bytes of pattern seed through FIFO name:
 * the writer opens it for writing (blocking until a reader comes), writes all and
 * exits; this process opens it for reading and reads to the end. Both are bounded by
 * an alarm, so a FIFO that never connects fails the case instead of hanging it.
 */
static void fifo_pass(struct cx *c, const char *name, size_t len, unsigned seed)
{
    pid_t w = fork();
    if (w == 0) {
        alarm(20);
        int fd = openat(c->d, name, O_WRONLY);
        if (fd < 0)
            _exit(10);
        unsigned char *b = xmalloc(len);
        fill(b, len, seed);
        for (size_t off = 0; off < len;) {
            ssize_t n = write(fd, b + off, len - off);
            if (n <= 0)
                _exit(11);
            off += (size_t)n;
        }
        _exit(close(fd) ? 12 : 0);
    }
    unsigned left = alarm(20);
    unsigned char *b = xmalloc(len + 1);
    size_t got = 0;
    int fd = openat(c->d, name, O_RDONLY);
    int err = fd < 0 ? errno : 0;
    while (fd >= 0 && got <= len) {
        ssize_t n = read(fd, b + got, len + 1 - got);
        if (n <= 0) {
            err = n < 0 ? errno : 0;
            break;
        }
        got += (size_t)n;
    }
    if (fd >= 0)
        close(fd);
    int status = 0;
    if (w > 0)
        waitpid(w, &status, 0);
    alarm(left);
    char *desc =
        xprintf("%zu bytes of pattern %u from a writer process through \"%s\"", len, seed, name);
    emit(c, desc, fd < 0 ? -1 : 0, err, 0, false, NULL, b, got);
    free(desc);
    fact(c, "the writer process", "%s",
         w < 0                                            ? "fork failed"
         : WIFEXITED(status) && !WEXITSTATUS(status)      ? "wrote all and exited"
         : WIFEXITED(status) && WEXITSTATUS(status) == 10 ? "could not open the FIFO"
                                                          : "failed");
    free(b);
}

static void t_fifo(struct cx *c)
{
    DO(c, mkfifoat(c->d, "p", 0640));
    LST(c, "p");
    DO(c, mkfifoat(c->d, "p", 0640));
    DO(c, mknodat(c->d, "p2", S_IFIFO | 0604, makedev(1, 3)));
    LST(c, "p2");
    /* Opens that do not wait: a writer with no reader is refused. */
    FD(c, openat(c->d, "p", O_WRONLY | O_NONBLOCK));
    int r = FD(c, openat(c->d, "p", O_RDONLY | O_NONBLOCK));
    FST(c, r);
    int w = FD(c, openat(c->d, "p", O_WRONLY | O_NONBLOCK));
    WR(c, w, 1000, 70);
    RD(c, r, 4096);
    RD(c, r, 4096);
    DO(c, close(w));
    RD(c, r, 4096);
    DO(c, close(r));
    /* Between processes, more than a pipe holds (64 KiB). */
    fifo_pass(c, "p", 300 * KiB, 71);
    fifo_pass(c, "p", 1, 72);
    /* O_TRUNC on a FIFO is ignored; truncate(2) of one is EINVAL. */
    int rw = FD(c, openat(c->d, "p", O_RDWR | O_TRUNC));
    WR(c, rw, 10, 73);
    RD(c, rw, 100);
    DO(c, ftruncate(rw, 0));
    DO(c, close(rw));
    DO(c, truncate(P(c, "p"), 0));
    LST(c, "p");
    /* Attributes. */
    DO(c, fchmodat(c->d, "p", 0602, 0));
    LST(c, "p");
    if (geteuid() == 0) {
        DO(c, fchownat(c->d, "p", 1234, 5678, AT_SYMLINK_NOFOLLOW));
        LST(c, "p");
    }
    struct timespec ts[2] = {{1000000000, 123456789}, {1234567890, 987654321}};
    DO(c, utimensat(c->d, "p", ts, AT_SYMLINK_NOFOLLOW));
    tm(c, "p", AT_SYMLINK_NOFOLLOW, EXACT, EXACT);
    struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
    DO(c, utimensat(c->d, "p", now, 0));
    tm(c, "p", 0, RECENT, RECENT);
    /* Names: links, renames, removal. */
    unsigned long long ino = ino_of(c, "p");
    DO(c, linkat(c->d, "p", c->d, "l", 0));
    LST(c, "l");
    same_ino(c, "p", ino, "l");
    DO(c, renameat(c->d, "l", c->d, "m"));
    same_ino(c, "p", ino, "m");
    ls(c, ".");
    DO(c, unlinkat(c->d, "p", 0));
    LST(c, "m");
    /* A FIFO renamed keeps passing data: the kernel keys it by inode. */
    fifo_pass(c, "m", 5000, 74);
    DO(c, unlinkat(c->d, "m", AT_REMOVEDIR));
    DO(c, unlinkat(c->d, "m", 0));
    DO(c, unlinkat(c->d, "p2", 0));
    ls(c, ".");
}

static void t_devices(struct cx *c)
{
    DO(c, mknodat(c->d, "c", S_IFCHR | 0644, makedev(1, 3)));
    DO(c, mknodat(c->d, "b", S_IFBLK | 0660, makedev(7, 0)));
    DO(c, mknodat(c->d, "big", S_IFCHR | 0600, makedev(300, 70000)));
    LST(c, "c");
    LST(c, "b");
    LST(c, "big");
    DO(c, mknodat(c->d, "c", S_IFCHR | 0644, makedev(1, 3)));
    DO(c, mknodat(c->d, "d", S_IFDIR | 0755, 0));
    DO(c, mknodat(c->d, "r", S_IFREG | 0600, 0));
    DO(c, mknodat(c->d, "z", 0640, 0));
    LST(c, "r");
    LST(c, "z");
    cat(c, "z");
    DO(c, truncate(P(c, "c"), 0));
    DO(c, truncate(P(c, "b"), 10));
    DO(c, fchmodat(c->d, "c", 0600, 0));
    LST(c, "c");
    if (geteuid() == 0) {
        DO(c, fchownat(c->d, "b", 42, 6, AT_SYMLINK_NOFOLLOW));
        LST(c, "b");
    }
    struct timespec ts[2] = {{1100000000, 5}, {1200000000, 7}};
    DO(c, utimensat(c->d, "big", ts, AT_SYMLINK_NOFOLLOW));
    tm(c, "big", AT_SYMLINK_NOFOLLOW, EXACT, EXACT);
    unsigned long long ino = ino_of(c, "c");
    DO(c, linkat(c->d, "c", c->d, "c2", 0));
    LST(c, "c2");
    same_ino(c, "c", ino, "c2");
    DO(c, renameat(c->d, "b", c->d, "r"));
    LST(c, "r");
    DO(c, renameat(c->d, "z", c->d, "c2"));
    LST(c, "c2");
    LST(c, "c");
    ls(c, ".");
    DO(c, unlinkat(c->d, "c", 0));
    DO(c, unlinkat(c->d, "r", 0));
    DO(c, unlinkat(c->d, "big", 0));
    ls(c, ".");
}

/* An AF_UNIX socket of type type bound at name (relative to the case directory, the
 * current one); its fd, or -1. */
static int sock_at(struct cx *c, int type, const char *name, bool do_bind)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", name);
    int s = FD(c, socket(AF_UNIX, type, 0));
    if (do_bind)
        DO(c, bind(s, (struct sockaddr *)&a, sizeof(a)));
    return s;
}

static void sock_connect(struct cx *c, int s, const char *name)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", name);
    char *desc = xprintf("connect(socket, \"%s\")", name);
    call_(c, connect(s, (struct sockaddr *)&a, sizeof(a)), false, 0, desc);
    free(desc);
}

static void t_socket(struct cx *c)
{
    /* Relative names: a Unix socket path holds at most 107 bytes. */
    DO(c, fchdir(c->d));
    int srv = sock_at(c, SOCK_STREAM, "s", true);
    DO(c, listen(srv, 4));
    LST(c, "s");
    int cl = sock_at(c, SOCK_STREAM, "", false);
    sock_connect(c, cl, "s");
    int acc = FD(c, accept(srv, NULL, NULL));
    WR(c, cl, 100, 80);
    RD(c, acc, 100);
    WR(c, acc, 200, 81);
    RD(c, cl, 200);
    DO(c, close(cl));
    DO(c, close(acc));
    /* The name is taken; it cannot be opened. */
    int again = sock_at(c, SOCK_STREAM, "s", true);
    DO(c, close(again));
    FD(c, openat(c->d, "s", O_RDONLY));
    /* Renamed and linked, it is the same socket. */
    DO(c, renameat(c->d, "s", c->d, "t"));
    DO(c, linkat(c->d, "t", c->d, "u", 0));
    LST(c, "u");
    cl = sock_at(c, SOCK_STREAM, "", false);
    sock_connect(c, cl, "u");
    acc = FD(c, accept(srv, NULL, NULL));
    WR(c, cl, 10, 82);
    RD(c, acc, 10);
    DO(c, close(cl));
    DO(c, close(acc));
    DO(c, close(srv));
    /* No listener now. */
    cl = sock_at(c, SOCK_STREAM, "", false);
    sock_connect(c, cl, "t");
    DO(c, close(cl));
    DO(c, fchmodat(c->d, "t", 0700, 0));
    LST(c, "t");
    /* Datagrams. */
    int ds = sock_at(c, SOCK_DGRAM, "ds", true);
    int dc = sock_at(c, SOCK_DGRAM, "", false);
    sock_connect(c, dc, "ds");
    WR(c, dc, 50, 83);
    RD(c, ds, 100);
    DO(c, close(dc));
    DO(c, close(ds));
    ls(c, ".");
    DO(c, unlinkat(c->d, "t", 0));
    DO(c, unlinkat(c->d, "u", 0));
    DO(c, unlinkat(c->d, "ds", 0));
    /* The name can be bound again once removed. */
    srv = sock_at(c, SOCK_STREAM, "s", true);
    LST(c, "s");
    DO(c, close(srv));
    ls(c, ".");
}

/* Renames between special files, files and directories, each way. */
static void t_special_rename(struct cx *c)
{
    DO(c, mkfifoat(c->d, "p", 0644));
    DO(c, mknodat(c->d, "s", S_IFSOCK | 0644, 0));
    put(c, "f", 10, 90);
    DO(c, mkdirat(c->d, "d", 0755));
    DO(c, mkdirat(c->d, "full", 0755));
    put(c, "full/x", 1, 91);
    DO(c, renameat(c->d, "p", c->d, "d"));
    DO(c, renameat(c->d, "p", c->d, "full"));
    DO(c, renameat(c->d, "d", c->d, "p"));
    DO(c, renameat(c->d, "p", c->d, "p/x"));
    DO(c, renameat2(c->d, "p", c->d, "f", RENAME_NOREPLACE));
    DO_NOTE(c, EINVAL, renameat2(c->d, "p", c->d, "f", RENAME_EXCHANGE));
    LST(c, "p");
    LST(c, "f");
    DO(c, renameat(c->d, "p", c->d, "s"));
    LST(c, "s");
    DO(c, renameat(c->d, "f", c->d, "s"));
    LST(c, "s");
    DO(c, renameat(c->d, "s", c->d, "d/s"));
    LST(c, "d/s");
    DO(c, renameat(c->d, "d/s", c->d, "d/s"));
    ls(c, ".");
    ls(c, "d");
}

struct tcase {
    const char *name;
    void (*fn)(struct cx *c);
};

static const struct tcase cases[] = {
    {"create_excl", t_create_excl},
    {"o_trunc", t_o_trunc},
    {"o_append", t_o_append},
    {"open_types", t_open_types},
    {"rw_offsets", t_rw_offsets},
    {"ftruncate", t_ftruncate},
    {"fsync_close", t_fsync_close},
    {"mkdir", t_mkdir},
    {"rmdir", t_rmdir},
    {"unlink", t_unlink},
    {"unlink_open", t_unlink_open},
    {"rename_plain", t_rename_plain},
    {"rename_over_file", t_rename_over_file},
    {"rename_over_empty_dir", t_rename_over_empty_dir},
    {"rename_dir_nonempty", t_rename_dir_nonempty},
    {"rename_into_subdir", t_rename_into_subdir},
    {"rename_noreplace", t_rename_noreplace},
    {"rename_exchange", t_rename_exchange},
    {"link", t_link},
    {"symlink", t_symlink},
    {"chmod", t_chmod},
    {"chown", t_chown},
    {"utimens", t_utimens},
    {"readdir_basic", t_readdir_basic},
    {"readdir_unlink", t_readdir_unlink},
    {"xattr", t_xattr},
    {"statfs", t_statfs},
    {"falloc_alloc", t_falloc_alloc},
    {"falloc_punch", t_falloc_punch},
    {"falloc_zero", t_falloc_zero},
    {"mmap_shared", t_mmap_shared},
    {"mmap_numpy", t_mmap_numpy},
    {"long_names", t_long_names},
    {"many_small", t_many_small},
    {"access", t_access},
    {"two_fds", t_two_fds},
    {"trunc_under_writer", t_trunc_under_writer},
    {"copy_range", t_copy_range},
    {"fifo", t_fifo},
    {"devices", t_devices},
    {"socket", t_socket},
    {"special_rename", t_special_rename},
};

/* ---- running a case under one root ---- */

/* Child: make the case directory, run the case, remove the directory; all recorded. */
static void run_child(const struct tcase *t, const char *root)
{
    struct cx c = {.d = -1};
    snprintf(c.dir, sizeof(c.dir), "%s/%s", root, t->name);
    alarm(CASE_ALARM_SEC);
    DO(&c, mkdir(c.dir, 0755));
    c.d = FD(&c, open(c.dir, O_RDONLY | O_DIRECTORY));
    t->fn(&c);
    char where[PATH_MAX];
    int e = rm_rf(c.dir, where, sizeof(where));
    const char *rel = strncmp(where, c.dir, strlen(c.dir)) ? where : where + strlen(c.dir);
    fact(&c, "remove the case directory recursively", "%s%s%s", e ? errname(e) : "ok",
         e ? " at " : "", e ? rel : "");
}

struct log {
    struct entry *e;
    size_t n;
    char *end; /* how the child ended */
};

static bool get(const unsigned char **p, const unsigned char *end, void *out, size_t n)
{
    if ((size_t)(end - *p) < n)
        return false;
    memcpy(out, *p, n);
    *p += n;
    return true;
}

static bool get_str(const unsigned char **p, const unsigned char *end, char **out)
{
    uint32_t n;
    if (!get(p, end, &n, sizeof(n)))
        return false;
    if (n == UINT32_MAX) {
        *out = NULL;
        return true;
    }
    if ((size_t)(end - *p) < n)
        return false;
    *out = xmalloc(n + 1);
    memcpy(*out, *p, n);
    (*out)[n] = 0;
    *p += n;
    return true;
}

static void parse(struct log *lg, const unsigned char *p, const unsigned char *end)
{
    size_t cap = 0;
    while (p < end) {
        struct entry e = {0};
        int64_t r;
        int32_t err, ne, f;
        uint64_t dl;
        if (!get_str(&p, end, &e.desc) || !get(&p, end, &r, sizeof(r)) ||
            !get(&p, end, &err, sizeof(err)) || !get(&p, end, &ne, sizeof(ne)) ||
            !get(&p, end, &f, sizeof(f)) || !get_str(&p, end, &e.res) ||
            !get(&p, end, &dl, sizeof(dl)))
            break;
        if (dl != UINT64_MAX) {
            if ((uint64_t)(end - p) < dl)
                break;
            e.data = xmalloc(dl);
            memcpy(e.data, p, dl);
            e.dlen = dl;
            p += dl;
        }
        e.ret = (long)r;
        e.err = err;
        e.note_errno = ne;
        e.is_fd = f;
        if (lg->n == cap) {
            cap = cap ? cap * 2 : 256;
            lg->e = realloc(lg->e, cap * sizeof(*lg->e));
            if (!lg->e)
                exit(2);
        }
        lg->e[lg->n++] = e;
    }
}

static void log_free(struct log *lg)
{
    for (size_t i = 0; i < lg->n; i++) {
        free(lg->e[i].desc);
        free(lg->e[i].res);
        free(lg->e[i].data);
    }
    free(lg->e);
    free(lg->end);
}

/* Run t under root in a child and collect its record. */
static void run_case(const struct tcase *t, const char *root, struct log *lg)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/%s", root, t->name);
    rm_rf(dir, NULL, 0); /* left over from an earlier run */
    int pfd[2];
    if (pipe(pfd)) {
        perror("pipe");
        exit(2);
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        close(pfd[0]);
        if (dup2(pfd[1], PIPE_FD) < 0)
            _exit(3);
        close(pfd[1]);
        run_child(t, root);
        _exit(0);
    }
    close(pfd[1]);
    struct sb b = {0};
    char chunk[65536];
    for (;;) {
        ssize_t n = read(pfd[0], chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (b.n + (size_t)n > b.cap) {
            b.cap = (b.n + (size_t)n) * 2;
            b.s = realloc(b.s, b.cap);
            if (!b.s)
                exit(2);
        }
        memcpy(b.s + b.n, chunk, (size_t)n);
        b.n += (size_t)n;
    }
    close(pfd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    memset(lg, 0, sizeof(*lg));
    parse(lg, (unsigned char *)b.s, (unsigned char *)b.s + b.n);
    free(b.s);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        lg->end = xstrdup("completed");
    else if (WIFEXITED(status))
        lg->end = xprintf("exited with status %d", WEXITSTATUS(status));
    else if (WTERMSIG(status) == SIGALRM)
        lg->end = xprintf("hung: no progress for %d s (killed by SIGALRM)", CASE_ALARM_SEC);
    else
        lg->end =
            xprintf("killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    if (strcmp(lg->end, "completed"))
        rm_rf(dir, NULL, 0);
}

/* ---- comparing ---- */

/* How one entry came out, for a MISMATCH line. Caller frees. */
static char *outcome(const struct entry *e)
{
    struct sb b = {0};
    if (e->err)
        sb_add(&b, "-1 %s (%s)", errname(e->err), strerror(e->err));
    else if (e->is_fd)
        sb_add(&b, "an fd");
    else
        sb_add(&b, "%ld", e->ret);
    if (e->res)
        sb_add(&b, " [%s]", e->res);
    if (e->data)
        sb_add(&b, " [%zu bytes]", e->dlen);
    return b.s;
}

static bool same(const struct entry *a, const struct entry *b)
{
    if (a->ret != b->ret || a->err != b->err)
        return false;
    if (!a->res != !b->res || (a->res && strcmp(a->res, b->res)))
        return false;
    if (!a->data != !b->data || a->dlen != b->dlen)
        return false;
    return !a->data || !memcmp(a->data, b->data, a->dlen);
}

/* Where long results or data differ, said briefly. Caller frees; NULL if nothing to add. */
static char *detail(const struct entry *a, const struct entry *b)
{
    struct sb s = {0};
    if (a->res && b->res && strcmp(a->res, b->res) &&
        (strlen(a->res) > 120 || strlen(b->res) > 120)) {
        size_t i = 0;
        while (a->res[i] && a->res[i] == b->res[i])
            i++;
        size_t from = i;
        while (from > 0 && a->res[from - 1] != ' ')
            from--;
        sb_add(&s, "; results first differ at \"...%.80s\" (A) vs \"...%.80s\" (B)", a->res + from,
               b->res + from);
    }
    if (a->data && b->data) {
        size_t n = a->dlen < b->dlen ? a->dlen : b->dlen, i = 0;
        while (i < n && a->data[i] == b->data[i])
            i++;
        if (i < n) {
            size_t zeros = 0;
            for (size_t k = i; k < n && k < i + 64; k++)
                zeros += a->data[k] == 0;
            sb_add(&s, "; bytes first differ at offset %zu: A 0x%02x B 0x%02x%s", i, a->data[i],
                   b->data[i], zeros == (n - i < 64 ? n - i : 64) ? " (A has zeros there)" : "");
        } else if (a->dlen != b->dlen) {
            sb_add(&s, "; one is a prefix of the other (first %zu bytes equal)", n);
        }
    }
    return s.s;
}

/* Compare A's record with B's; returns the number of mismatches, sets *noted. */
static int compare(const char *name, const struct log *a, const struct log *b, bool *noted)
{
    int mism = 0;
    *noted = false;
    size_t n = a->n > b->n ? a->n : b->n;
    for (size_t i = 0; i <= n; i++) {
        const struct entry *ea = i < a->n ? &a->e[i] : NULL, *eb = i < b->n ? &b->e[i] : NULL;
        if (!ea || !eb) {
            if (!ea && !eb) {
                if (strcmp(a->end, b->end)) {
                    printf("MISMATCH %s: end of case: A %s, B %s\n", name, a->end, b->end);
                    mism++;
                }
                break;
            }
            printf("MISMATCH %s: after call %zu: A %s, B %s\n", name, i, ea ? "went on" : a->end,
                   eb ? "went on" : b->end);
            if (ea)
                printf("    (A's next call: %s)\n", ea->desc);
            if (eb)
                printf("    (B's next call: %s)\n", eb->desc);
            mism++;
            break;
        }
        if (strcmp(ea->desc, eb->desc)) {
            printf("MISMATCH %s: the cases diverged at call %zu: A did %s, B did %s\n", name, i,
                   ea->desc, eb->desc);
            mism++;
            break;
        }
        if (verbose) {
            char *oa = outcome(ea);
            printf("    %s: %s\n", ea->desc, oa);
            free(oa);
        }
        if (ea->note_errno && ea->err == ea->note_errno && eb->err != ea->note_errno) {
            char *ob = outcome(eb);
            printf("NOTE %s: call %s: A gave -1 %s, B gave %s; the rest of this case is not "
                   "compared\n",
                   name, ea->desc, errname(ea->err), ob);
            free(ob);
            *noted = true;
            break;
        }
        if (same(ea, eb))
            continue;
        if (++mism > MAX_REPORTS) {
            printf("MISMATCH %s: (more mismatches in this case not shown)\n", name);
            break;
        }
        char *oa = outcome(ea), *ob = outcome(eb), *dt = detail(ea, eb);
        printf("MISMATCH %s: call %s: A gave %s B gave %s%s\n", name, ea->desc, oa, ob,
               dt ? dt : "");
        free(oa);
        free(ob);
        free(dt);
    }
    return mism;
}

static bool wanted(const char *name, int argc, char **argv, int first)
{
    if (first >= argc)
        return true;
    for (int i = first; i < argc; i++)
        if (strstr(name, argv[i]))
            return true;
    return false;
}

int main(int argc, char **argv)
{
    int opt;
    while ((opt = getopt(argc, argv, "vl")) != -1) {
        if (opt == 'v') {
            verbose = true;
        } else if (opt == 'l') {
            for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                printf("%s\n", cases[i].name);
            return 0;
        } else {
            goto usage;
        }
    }
    if (argc - optind < 2)
        goto usage;
    const char *ra = argv[optind], *rb = argv[optind + 1];
    umask(022);
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < 2; i++) {
        const char *r = i ? rb : ra;
        struct stat st;
        if (mkdir(r, 0755) && errno != EEXIST) {
            fprintf(stderr, "posix_compare: mkdir %s: %s\n", r, strerror(errno));
            return 2;
        }
        if (stat(r, &st) || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "posix_compare: %s is not a directory\n", r);
            return 2;
        }
    }
    /* Absolute roots: symlinks made from P() must resolve from anywhere. */
    static char abs_a[PATH_MAX], abs_b[PATH_MAX];
    if (!realpath(ra, abs_a) || !realpath(rb, abs_b)) {
        fprintf(stderr, "posix_compare: realpath: %s\n", strerror(errno));
        return 2;
    }
    ra = abs_a;
    rb = abs_b;
    printf("posix_compare: A=%s B=%s, running as uid %u\n", ra, rb, (unsigned)geteuid());
    int total = 0, failed = 0, ran = 0, notes = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct tcase *t = &cases[i];
        if (!wanted(t->name, argc, argv, optind + 2))
            continue;
        ran++;
        struct log la, lb;
        run_case(t, ra, &la);
        run_case(t, rb, &lb);
        bool noted;
        int m = compare(t->name, &la, &lb, &noted);
        if (m) {
            printf("FAIL %s (%d mismatch%s)\n", t->name, m, m == 1 ? "" : "es");
            failed++;
        } else {
            printf("ok %s%s\n", t->name, noted ? " (with a note)" : "");
        }
        notes += noted;
        total += m;
        fflush(stdout);
        log_free(&la);
        log_free(&lb);
    }
    if (!ran) {
        fprintf(stderr, "posix_compare: no case matches\n");
        return 2;
    }
    printf("posix_compare: %d case(s), %d failed, %d mismatch(es), %d note(s)\n", ran, failed,
           total, notes);
    return total ? 1 : 0;
usage:
    fprintf(stderr, "usage: posix_compare [-v] [-l] A B [CASE...]\n"
                    "  A: the file system under test, B: a reference (local ext4) directory\n"
                    "  CASE: run only the cases whose names contain it; -l lists them\n");
    return 2;
}
