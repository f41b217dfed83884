/*
 * bench_fsops DIR N [RANKS [own]]: create, stat and unlink N empty files in
 * one directory through the ordinary system calls, and print each phase's
 * ops/s.
 *
 * bench_fuse.sh runs it on a local directory, on the FUSE passthrough and on
 * stria-fuse, and prints the ratios; this program prints rates only, never a
 * bare time. The files live in a fresh subdirectory DIR/fsops-PID, made
 * first and removed last (after a failure, the files left are removed
 * first), so that runs never see each other's entries. Three phases:
 *
 *   create  open(O_CREAT|O_EXCL|O_WRONLY) then close
 *   stat    stat
 *   unlink  unlink
 *
 * With RANKS > 1 it does what mdtest -n N does with that many MPI ranks:
 * RANKS threads, each with N files of its own (RANKS * N in all), start
 * each phase together (a barrier stands for MPI's) and the phase is timed
 * from that start to the end of the last rank, so the rate printed is the
 * aggregate. By default every rank works in the one shared directory, on
 * names of its own (rank r has f<i*RANKS+r>), which is the harder case: the
 * kernel takes a directory's lock exclusively for a create or an unlink in
 * it, on any file system. With "own", each rank has a subdirectory of its
 * own, rank<r>, made before and removed after the timed phases (mdtest -u).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS 64

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

/* What the ranks share; each rank's own part is its index. */
static struct run {
    char dir[PATH_MAX - 64]; /* the shared directory, DIR/fsops-PID */
    long n;                  /* files per rank */
    int ranks;
    bool own; /* each rank in a subdirectory of its own */
    pthread_barrier_t start, end;
    double t0[PH_N], t1[PH_N];
    _Atomic int failed; /* a rank failed: the others stop at their next file */
    int err[MAX_RANKS];
} run;

/* The directory rank r works in. */
static void rank_dir(char *buf, size_t len, int r)
{
    if (run.own)
        snprintf(buf, len, "%s/rank%d", run.dir, r);
    else
        snprintf(buf, len, "%s", run.dir);
}

/* Rank r's part of one phase; 0 or the first error (reported). */
static int rank_phase(int r, enum phase ph)
{
    char dir[PATH_MAX - 32], path[PATH_MAX];
    rank_dir(dir, sizeof(dir), r);
    for (long i = 0; i < run.n && !run.failed; i++) {
        snprintf(path, sizeof(path), "%s/f%ld", dir, i * run.ranks + r);
        int rc = one_op(ph, path);
        if (rc) {
            fprintf(stderr, "bench_fsops: rank %d: %s %s: %s\n", r, phase_name[ph], path,
                    strerror(-rc));
            run.failed = 1;
            return rc;
        }
    }
    return 0;
}

/* A rank: every phase, between two barriers each; rank 0 keeps the times. */
static void *rank_main(void *arg)
{
    int r = (int)(intptr_t)arg;
    for (int ph = 0; ph < PH_N; ph++) {
        pthread_barrier_wait(&run.start);
        if (r == 0)
            run.t0[ph] = now_s();
        if (!run.err[r])
            run.err[r] = rank_phase(r, (enum phase)ph);
        pthread_barrier_wait(&run.end);
        if (r == 0)
            run.t1[ph] = now_s();
    }
    return NULL;
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

static int usage(void)
{
    fprintf(stderr,
            "usage: bench_fsops DIR N [RANKS [own]]\n"
            "Creates, stats and unlinks N empty files in a fresh directory in DIR\n"
            "and prints ops/s of each phase. RANKS threads (1 to %d) do so at once,\n"
            "N files each, in that one directory, or with \"own\" each in a\n"
            "subdirectory of its own; the rates are then their sum.\n",
            MAX_RANKS);
    return 2;
}

int main(int argc, char **argv)
{
    char *end = NULL;
    if (argc < 3 || argc > 5)
        return usage();
    run.n = strtol(argv[2], &end, 10);
    if (*end || run.n < 1 || run.n > 100000000)
        return usage();
    run.ranks = 1;
    if (argc >= 4) {
        run.ranks = (int)strtol(argv[3], &end, 10);
        if (*end || run.ranks < 1 || run.ranks > MAX_RANKS)
            return usage();
    }
    if (argc == 5) {
        if (strcmp(argv[4], "own") != 0)
            return usage();
        run.own = true;
    }
    if (snprintf(run.dir, sizeof(run.dir), "%s/fsops-%d", argv[1], (int)getpid()) >=
        (int)sizeof(run.dir)) {
        fprintf(stderr, "bench_fsops: %s: %s\n", argv[1], strerror(ENAMETOOLONG));
        return 1;
    }
    if (mkdir(run.dir, 0755) < 0) {
        fprintf(stderr, "bench_fsops: mkdir %s: %s\n", run.dir, strerror(errno));
        return 1;
    }
    int rc = 0, made = 0;
    for (; run.own && made < run.ranks; made++) {
        char d[PATH_MAX - 32];
        rank_dir(d, sizeof(d), made);
        if (mkdir(d, 0755) < 0) {
            rc = -errno;
            fprintf(stderr, "bench_fsops: mkdir %s: %s\n", d, strerror(errno));
            break;
        }
    }
    if (run.ranks == 1)
        printf("bench_fsops: %ld empty files in %s\n", run.n, run.dir);
    else
        printf("bench_fsops: %d ranks, %ld empty files each, in %s%s\n", run.ranks, run.n, run.dir,
               run.own ? "/rank<r>" : " (one directory, disjoint names)");
    fflush(stdout);

    pthread_t tid[MAX_RANKS];
    int started = 0;
    if (!rc) {
        pthread_barrier_init(&run.start, NULL, (unsigned)run.ranks);
        pthread_barrier_init(&run.end, NULL, (unsigned)run.ranks);
        /* Rank 0 is this thread, so a failed thread start can still be waited out. */
        for (started = 1; started < run.ranks; started++) {
            int e = pthread_create(&tid[started], NULL, rank_main, (void *)(intptr_t)started);
            if (e) {
                fprintf(stderr, "bench_fsops: pthread_create: %s\n", strerror(e));
                rc = -e;
                break;
            }
        }
    }
    if (!rc) {
        rank_main((void *)0);
        for (int r = 1; r < run.ranks; r++)
            pthread_join(tid[r], NULL);
        for (int ph = 0; ph < PH_N && !rc; ph++) {
            for (int r = 0; r < run.ranks && !rc; r++)
                rc = run.err[r];
            if (!rc)
                printf("%-8s %12.0f ops/s\n", phase_name[ph],
                       (double)run.n * run.ranks / (run.t1[ph] - run.t0[ph]));
        }
        /* A rank's error stops every rank at its next file, whatever the phase. */
        for (int r = 0; r < run.ranks && !rc; r++)
            rc = run.err[r];
    } else if (started > 1) {
        /* The threads started wait at the first barrier forever: no way out but exit. */
        fprintf(stderr, "bench_fsops: giving up; %s is left behind\n", run.dir);
        return 1;
    }

    for (int r = 0; r < made; r++) {
        char d[PATH_MAX - 32];
        rank_dir(d, sizeof(d), r);
        if (rc)
            empty_dir(d);
        if (rmdir(d) < 0) {
            fprintf(stderr, "bench_fsops: rmdir %s: %s\n", d, strerror(errno));
            rc = rc ? rc : -errno;
        }
    }
    if (rc)
        empty_dir(run.dir);
    if (rmdir(run.dir) < 0) {
        fprintf(stderr, "bench_fsops: rmdir %s: %s\n", run.dir, strerror(errno));
        rc = rc ? rc : -errno;
    }
    return rc ? 1 : 0;
}
