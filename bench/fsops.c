/*
 * bench_fsops DIR N: create, stat and unlink N empty files in one directory
 * through the ordinary system calls, and print each phase's ops/s.
 *
 * bench_fuse.sh runs it on a local directory, on the FUSE passthrough and on
 * stria-fuse, and prints the ratios; this program prints rates only, never a
 * bare time. The files live in a fresh subdirectory DIR/fsops-PID, made
 * first and removed last (after a failure, the files left are removed
 * first), so that runs never see each other's entries. Three phases, each
 * timed from its first call to its last, one thread:
 *
 *   create  open(O_CREAT|O_EXCL|O_WRONLY) then close
 *   stat    stat
 *   unlink  unlink
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum phase { PH_CREATE, PH_STAT, PH_UNLINK, PH_N };
static const char *const phase_name[PH_N] = {"create", "stat", "unlink"};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One operation of a phase on path; 0 or a negative errno. */
static int one_op(enum phase ph, const char *path)
{
    struct stat st;
    int fd;
    switch (ph) {
    case PH_CREATE:
        fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0)
            return -errno;
        return close(fd) < 0 ? -errno : 0;
    case PH_STAT:
        return stat(path, &st) < 0 ? -errno : 0;
    default:
        return unlink(path) < 0 ? -errno : 0;
    }
}

/* Run one phase over f0..f(n-1) in dir; 0 and *ops_s, or the first error (reported). */
static int run_phase(enum phase ph, const char *dir, long n, double *ops_s)
{
    char path[PATH_MAX];
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%s/f%ld", dir, i);
        int rc = one_op(ph, path);
        if (rc) {
            fprintf(stderr, "bench_fsops: %s %s: %s\n", phase_name[ph], path, strerror(-rc));
            return rc;
        }
    }
    *ops_s = (double)n / (now_s() - t0);
    return 0;
}

/* After a failure: remove whatever the phases left in dir. */
static void empty_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[PATH_MAX];
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
            unlink(path);
    }
    closedir(d);
}

int main(int argc, char **argv)
{
    char *end = NULL;
    long n = argc == 3 ? strtol(argv[2], &end, 10) : 0;
    if (argc != 3 || *end || n < 1 || n > 100000000) {
        fprintf(stderr, "usage: bench_fsops DIR N\n"
                        "Creates, stats and unlinks N empty files in a fresh directory in DIR\n"
                        "and prints ops/s of each phase.\n");
        return 2;
    }
    char dir[PATH_MAX - 32];
    if (snprintf(dir, sizeof(dir), "%s/fsops-%d", argv[1], (int)getpid()) >= (int)sizeof(dir)) {
        fprintf(stderr, "bench_fsops: %s: %s\n", argv[1], strerror(ENAMETOOLONG));
        return 1;
    }
    if (mkdir(dir, 0755) < 0) {
        fprintf(stderr, "bench_fsops: mkdir %s: %s\n", dir, strerror(errno));
        return 1;
    }
    printf("bench_fsops: %ld empty files in %s\n", n, dir);
    fflush(stdout);
    int rc = 0;
    for (int ph = 0; ph < PH_N && !rc; ph++) {
        double ops_s;
        rc = run_phase((enum phase)ph, dir, n, &ops_s);
        if (!rc) {
            printf("%-8s %12.0f ops/s\n", phase_name[ph], ops_s);
            fflush(stdout);
        }
    }
    if (rc)
        empty_dir(dir);
    if (rmdir(dir) < 0) {
        fprintf(stderr, "bench_fsops: rmdir %s: %s\n", dir, strerror(errno));
        rc = rc ? rc : -errno;
    }
    return rc ? 1 : 0;
}
