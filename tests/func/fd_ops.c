/*
 * Calls on an open descriptor, as cp -p, tar -x and rsync -t make them,
 * for fuse_fd_ops.sh to run on the mount (and, as a reference, on a local
 * directory). Each case prints one line and exits non-zero when the
 * result is not what Linux gives on a local file system.
 *
 * Usage: fd_ops CASE FILE [OTHER]
 * OTHER, the same file seen through another mount, is checked too: a
 * mount's kernel may answer stat from what it cached, the MDT may not.
 *   times-before-close  write, futimens() to a fixed time, close: the time stays
 *   write-then-close    write, wait 2 s, close: mtime is the write's, not the close's
 *   ftruncate-mode0     create with mode 0, O_RDWR: ftruncate and write work
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FIXED_SEC 981173106 /* 2001-02-03 04:05:06 UTC */

static const char *other; /* the same file through another mount, or NULL */

static int bad(const char *what, const char *file)
{
    fprintf(stderr, "fd_ops: %s: %s (%s)\n", file, what, strerror(errno));
    return 1;
}

static int times_before_close(const char *file)
{
    char buf[8192];
    memset(buf, 'x', sizeof(buf));
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return bad("open", file);
    if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
        return bad("write", file);
    struct timespec ts[2] = {{FIXED_SEC - 100, 0}, {FIXED_SEC, 123456789}};
    if (futimens(fd, ts))
        return bad("futimens", file);
    if (close(fd))
        return bad("close", file);
    for (int i = 0; i < 2; i++) {
        const char *p = i ? other : file;
        if (!p)
            break;
        struct stat st;
        if (stat(p, &st))
            return bad("stat", p);
        if (st.st_mtim.tv_sec != FIXED_SEC || st.st_mtim.tv_nsec != 123456789 ||
            st.st_atim.tv_sec != FIXED_SEC - 100 || st.st_size != (off_t)sizeof(buf)) {
            fprintf(
                stderr,
                "fd_ops: %s: after close mtime %lld.%09ld atime %lld size %lld; want %d.123456789, "
                "%d, %zu\n",
                p, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long)st.st_atim.tv_sec,
                (long long)st.st_size, FIXED_SEC, FIXED_SEC - 100, sizeof(buf));
            return 1;
        }
    }
    printf("times-before-close: the time set before close stays\n");
    return 0;
}

static int write_then_close(const char *file)
{
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return bad("open", file);
    if (write(fd, "data", 4) != 4)
        return bad("write", file);
    struct timespec wrote;
    clock_gettime(CLOCK_REALTIME, &wrote);
    sleep(2);
    if (close(fd))
        return bad("close", file);
    for (int i = 0; i < 2; i++) {
        const char *p = i ? other : file;
        if (!p)
            break;
        struct stat st;
        if (stat(p, &st))
            return bad("stat", p);
        /* The write's time, give or take a second; the close came 2 s later. */
        if (st.st_mtim.tv_sec > wrote.tv_sec + 1 || st.st_mtim.tv_sec < wrote.tv_sec - 1) {
            fprintf(stderr,
                    "fd_ops: %s: mtime %lld, the write was at %lld and the close 2 s later\n", p,
                    (long long)st.st_mtim.tv_sec, (long long)wrote.tv_sec);
            return 1;
        }
    }
    printf("write-then-close: mtime is the write's\n");
    return 0;
}

static int ftruncate_mode0(const char *file)
{
    int fd = open(file, O_RDWR | O_CREAT | O_EXCL, 0);
    if (fd < 0)
        return bad("open O_CREAT mode 0", file);
    if (ftruncate(fd, 100))
        return bad("ftruncate to 100 on an O_RDWR descriptor of a mode-0 file", file);
    if (pwrite(fd, "abc", 3, 200) != 3)
        return bad("pwrite", file);
    if (ftruncate(fd, 10))
        return bad("ftruncate to 10", file);
    struct stat st;
    if (fstat(fd, &st))
        return bad("fstat", file);
    if (st.st_size != 10) {
        fprintf(stderr, "fd_ops: %s: size %lld after ftruncate to 10\n", file,
                (long long)st.st_size);
        return 1;
    }
    close(fd);
    /* By name, with no descriptor, the mode still forbids it. */
    if (truncate(file, 5) == 0 || errno != EACCES) {
        fprintf(stderr, "fd_ops: %s: truncate by name of a mode-0 file: %s, want EACCES\n", file,
                strerror(errno));
        return 1;
    }
    printf("ftruncate-mode0: a writable descriptor may truncate, the name may not\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr,
                "usage: fd_ops times-before-close|write-then-close|ftruncate-mode0 FILE [OTHER]\n");
        return 2;
    }
    other = argc == 4 ? argv[3] : NULL;
    if (!strcmp(argv[1], "times-before-close"))
        return times_before_close(argv[2]);
    if (!strcmp(argv[1], "write-then-close"))
        return write_then_close(argv[2]);
    if (!strcmp(argv[1], "ftruncate-mode0"))
        return ftruncate_mode0(argv[2]);
    fprintf(stderr, "fd_ops: unknown case %s\n", argv[1]);
    return 2;
}
