/*
 * bench_meta: metadata operation rates of libstria against the local file system.
 *
 * In a fresh directory (stria:/bench-meta-<pid>/t<T>-<pid>), T threads
 * share N empty files (f<thread>-<i>) and run three phases one after the
 * other, each timed from the start of the first thread to the end of the
 * last: create (open O_CREAT|O_EXCL then close), stat, unlink. The same
 * phases with open/close, stat and unlink in the same tree under --local
 * DIR, with the same thread count, are the baseline, measured in the same
 * run: each local phase runs right after its stria twin. The table gives
 * both rates and their ratio (stria / local). --threads takes a list
 * ("1,2") and repeats the whole comparison for each count. Nothing is
 * asserted about speed.
 *
 * All threads of the stria side share one stria_fs_t, as the threads of
 * one application would. --mdts N stripes the stria directories over N
 * MDTs (stria_mkdir_striped), so the files spread over them.
 */
#include <stria/stria.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64
#define MAX_COUNTS  16

enum phase { PH_CREATE, PH_STAT, PH_UNLINK, PH_N };
static const char *phase_name[PH_N] = {"create", "stat", "unlink"};

/* One file system's three operations and its directory listing, so the
 * stria side and the local side run the same loop. */
struct backend {
    const char *name;
    int (*create)(void *ctx, const char *path);
    int (*stat)(void *ctx, const char *path);
    int (*unlink)(void *ctx, const char *path);
    int (*mkdir)(void *ctx, const char *path);
    int (*rmdir)(void *ctx, const char *path);
    /* Unlink whatever is left in dir (after a failed run). */
    void (*empty)(void *ctx, const char *dir);
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- libstria ---- */

static int st_create(void *ctx, const char *path)
{
    stria_file_t *f;
    int rc = stria_open(ctx, path, O_CREAT | O_EXCL | O_WRONLY, 0644, &f);
    return rc ? rc : stria_close(f);
}

static int st_stat(void *ctx, const char *path)
{
    struct stat st;
    return stria_stat(ctx, path, &st);
}

static int st_unlink(void *ctx, const char *path)
{
    return stria_unlink(ctx, path);
}

static int dir_mdts = 1; /* --mdts */

static int st_mkdir(void *ctx, const char *path)
{
    if (dir_mdts > 1)
        return stria_mkdir_striped(ctx, path, 0755, dir_mdts, -1);
    return stria_mkdir(ctx, path, 0755);
}

static int st_rmdir(void *ctx, const char *path)
{
    return stria_rmdir(ctx, path);
}

static void st_empty(void *ctx, const char *dir)
{
    for (;;) {
        stria_dir_t *d;
        struct stria_dirent ent;
        char names[64][sizeof(ent.name)];
        int n = 0;
        /* Collect a batch, then unlink it: no unlinks under an open listing. */
        if (stria_opendir(ctx, dir, &d))
            return;
        while (n < 64 && stria_readdir(d, &ent) == 1)
            snprintf(names[n++], sizeof(names[0]), "%.*s", (int)sizeof(ent.name) - 1, ent.name);
        stria_closedir(d);
        if (n == 0)
            return;
        int gone = 0;
        for (int i = 0; i < n; i++) {
            char path[PATH_MAX];
            if (snprintf(path, sizeof(path), "%s/%s", dir, names[i]) < (int)sizeof(path))
                gone += stria_unlink(ctx, path) == 0;
        }
        if (gone == 0)
            return;
    }
}

static const struct backend stria_backend = {"stria",  st_create, st_stat, st_unlink,
                                             st_mkdir, st_rmdir,  st_empty};

/* ---- local file system ---- */

static int lo_create(void *ctx, const char *path)
{
    (void)ctx;
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    return close(fd) < 0 ? -errno : 0;
}

static int lo_stat(void *ctx, const char *path)
{
    (void)ctx;
    struct stat st;
    return stat(path, &st) < 0 ? -errno : 0;
}

static int lo_unlink(void *ctx, const char *path)
{
    (void)ctx;
    return unlink(path) < 0 ? -errno : 0;
}

static int lo_mkdir(void *ctx, const char *path)
{
    (void)ctx;
    return mkdir(path, 0755) < 0 ? -errno : 0;
}

static int lo_rmdir(void *ctx, const char *path)
{
    (void)ctx;
    return rmdir(path) < 0 ? -errno : 0;
}

static void lo_empty(void *ctx, const char *dir)
{
    (void)ctx;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
            unlink(path);
    }
    closedir(d);
}

static const struct backend local_backend = {"local",  lo_create, lo_stat, lo_unlink,
                                             lo_mkdir, lo_rmdir,  lo_empty};

/* ---- the measured phases ---- */

struct worker {
    pthread_t tid;
    const struct backend *b;
    void *ctx;
    const char *dir;
    enum phase ph;
    int t;
    uint64_t first, n;
    int rc;
    char failed[PATH_MAX];
};

static void *work(void *arg)
{
    struct worker *w = arg;
    for (uint64_t i = w->first; i < w->first + w->n; i++) {
        char path[PATH_MAX];
        int rc = -ENAMETOOLONG;
        if (snprintf(path, sizeof(path), "%s/f%d-%llu", w->dir, w->t, (unsigned long long)i) <
            (int)sizeof(path))
            rc = w->ph == PH_CREATE ? w->b->create(w->ctx, path)
                 : w->ph == PH_STAT ? w->b->stat(w->ctx, path)
                                    : w->b->unlink(w->ctx, path);
        if (rc) {
            w->rc = rc;
            snprintf(w->failed, sizeof(w->failed), "%s", path);
            break;
        }
    }
    return NULL;
}

/* Run one phase on nthreads threads; returns 0 and *ops_s, or the first error. */
static int run_phase(const struct backend *b, void *ctx, const char *dir, enum phase ph,
                     int nthreads, uint64_t nfiles, double *ops_s)
{
    struct worker w[MAX_THREADS];
    int started = 0, rc = 0;
    double t0 = now_s();
    for (int t = 0; t < nthreads; t++) {
        uint64_t lo = nfiles * (uint64_t)t / (uint64_t)nthreads;
        uint64_t hi = nfiles * (uint64_t)(t + 1) / (uint64_t)nthreads;
        w[t] = (struct worker){
            .b = b, .ctx = ctx, .dir = dir, .ph = ph, .t = t, .first = lo, .n = hi - lo};
        int e = pthread_create(&w[t].tid, NULL, work, &w[t]);
        if (e) {
            fprintf(stderr, "bench_meta: pthread_create: %s\n", strerror(e));
            rc = -e;
            break;
        }
        started++;
    }
    for (int t = 0; t < started; t++)
        pthread_join(w[t].tid, NULL);
    double dt = now_s() - t0;
    for (int t = 0; t < started && !rc; t++) {
        if (w[t].rc) {
            rc = w[t].rc;
            fprintf(stderr, "bench_meta: %s %s %s: %s\n", b->name, phase_name[ph], w[t].failed,
                    strerror(-rc));
        }
    }
    *ops_s = (double)nfiles / dt;
    return rc;
}

/* One file system under test: its operations, handle, and the directory
 * (made once) that holds a fresh subdirectory per thread count. */
struct side {
    const struct backend *b;
    void *ctx;
    const char *top;
    char dir[PATH_MAX];
    bool made;
};

/*
 * Ask ext4 to treat dir as a top of a tree (chattr +T), so that each
 * subdirectory made in it lands in a fresh block group. Without a journal,
 * ext4 will not reuse an inode freed in the last minutes and scans past
 * every one of them on each create (recently_deleted()), so a round of
 * creates right after the previous round's unlinks, in the same group,
 * runs 3 to 30 times slower: the baseline would measure our own clean-up.
 * Returns whether the flag is set; other file systems just say no.
 */
static bool spread_subdirs(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return false;
    int flags = 0;
    bool ok = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    if (ok && !(flags & FS_TOPDIR_FL)) {
        flags |= FS_TOPDIR_FL;
        ok = ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    close(fd);
    return ok;
}

/*
 * The three phases with nthreads threads, each phase on stria then at once
 * on the local file system, so that both see the same load from whatever
 * else runs on the machine. Fresh directories, removed afterwards either way.
 */
/* --hook CMD: run as "CMD begin|end PHASE" around each phase on stria (the
 * instruction counting of bench_mdt.sh starts and stops there). */
static const char *hook;

static int run_hook(const char *when, enum phase ph)
{
    if (!hook)
        return 0;
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "%s %s %s", hook, when, phase_name[ph]);
    int st = system(cmd);
    if (st != 0) {
        fprintf(stderr, "bench_meta: hook '%s' failed (status %d)\n", cmd, st);
        return -ECHILD;
    }
    return 0;
}

static int run_count(struct side sides[2], int nthreads, uint64_t nfiles, double ops_s[2][PH_N])
{
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        struct side *sd = &sides[k];
        /* The name picks where ext4 starts looking for a group: never reuse one. */
        snprintf(sd->dir, sizeof(sd->dir), "%s/t%d-%d", sd->top, nthreads, (int)getpid());
        if ((rc = sd->b->mkdir(sd->ctx, sd->dir)))
            fprintf(stderr, "bench_meta: %s mkdir %s: %s\n", sd->b->name, sd->dir, strerror(-rc));
        sd->made = rc == 0;
    }
    for (int ph = 0; ph < PH_N && !rc; ph++) {
        for (int k = 0; k < 2 && !rc; k++) {
            struct side *sd = &sides[k];
            if (k == 0 && (rc = run_hook("begin", (enum phase)ph)))
                break;
            rc =
                run_phase(sd->b, sd->ctx, sd->dir, (enum phase)ph, nthreads, nfiles, &ops_s[k][ph]);
            if (k == 0 && !rc)
                rc = run_hook("end", (enum phase)ph);
            if (rc == 0) {
                printf("  threads=%d %-6s %-5s %10.0f ops/s\n", nthreads, phase_name[ph],
                       sd->b->name, ops_s[k][ph]);
                fflush(stdout);
            }
        }
    }
    for (int k = 0; k < 2; k++) {
        struct side *sd = &sides[k];
        if (!sd->made)
            continue;
        if (rc)
            sd->b->empty(sd->ctx, sd->dir);
        int rrc = sd->b->rmdir(sd->ctx, sd->dir);
        if (rrc) {
            fprintf(stderr, "bench_meta: %s rmdir %s: %s\n", sd->b->name, sd->dir, strerror(-rrc));
            if (!rc)
                rc = rrc;
        }
        sd->made = false;
    }
    return rc;
}

static int parse_threads(const char *s, int *counts, int *n)
{
    *n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > MAX_THREADS || *n == MAX_COUNTS)
            return -EINVAL;
        counts[(*n)++] = (int)v;
        if (*end == ',' && end[1])
            end++;
        else if (*end)
            return -EINVAL;
        s = end;
    }
    return *n ? 0 : -EINVAL;
}

static void usage(FILE *to)
{
    fprintf(to, "usage: bench_meta --conf FILE --local DIR [--files 100000] [--threads 1[,2...]]\n"
                "                  [--hook CMD] [--mdts N]\n"
                "Creates, stats and unlinks --files empty files through libstria and in DIR\n"
                "(the baseline) with each thread count, and prints ops/s of both and their ratio.\n"
                "--hook CMD runs 'CMD begin PHASE' and 'CMD end PHASE' around each stria phase.\n"
                "--mdts N stripes the stria directories over N MDTs.\n");
}

int main(int argc, char **argv)
{
    const char *conf = NULL, *local = NULL;
    uint64_t nfiles = 100000;
    int counts[MAX_COUNTS] = {1}, ncounts = 1;
    static const struct option longopts[] = {
        {"conf", required_argument, NULL, 'f'},    {"files", required_argument, NULL, 'n'},
        {"threads", required_argument, NULL, 't'}, {"local", required_argument, NULL, 'l'},
        {"hook", required_argument, NULL, 'k'},    {"mdts", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "f:n:t:l:k:m:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'm':
            dir_mdts = atoi(optarg);
            if (dir_mdts < 1 || dir_mdts > 4096) {
                fprintf(stderr, "bench_meta: bad --mdts %s (1..4096)\n", optarg);
                return 2;
            }
            break;
        case 'f':
            conf = optarg;
            break;
        case 'k':
            hook = optarg;
            break;
        case 'n': {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || v == 0 || v > 100000000ull) {
                fprintf(stderr, "bench_meta: bad --files %s\n", optarg);
                return 2;
            }
            nfiles = v;
            break;
        }
        case 't':
            if (parse_threads(optarg, counts, &ncounts)) {
                fprintf(stderr, "bench_meta: bad --threads %s (a list like 1,2; each 1..%d)\n",
                        optarg, MAX_THREADS);
                return 2;
            }
            break;
        case 'l':
            local = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc || !local) {
        usage(stderr);
        return 2;
    }

    /* A closed stdout (| head) must not stop us before the clean-up. */
    signal(SIGPIPE, SIG_IGN);
    stria_fs_t *fs = NULL;
    int rc = stria_connect(conf, &fs);
    if (rc) {
        fprintf(stderr, "bench_meta: cannot connect with %s: %s\n", conf ? conf : "(default)",
                strerror(-rc));
        return 1;
    }
    char sdir[64], ldir[PATH_MAX];
    snprintf(sdir, sizeof(sdir), "/bench-meta-%d", (int)getpid());
    snprintf(ldir, sizeof(ldir), "%s/bench-meta-%d", local, (int)getpid());
    struct side sides[2] = {{.b = &stria_backend, .ctx = fs, .top = sdir},
                            {.b = &local_backend, .top = ldir}};
    double ops[MAX_COUNTS][2][PH_N];
    int done = 0, made = 0;
    for (; made < 2; made++) {
        struct side *sd = &sides[made];
        if ((rc = sd->b->mkdir(sd->ctx, sd->top))) {
            fprintf(stderr, "bench_meta: %s mkdir %s: %s\n", sd->b->name, sd->top, strerror(-rc));
            break;
        }
    }
    if (rc == 0) {
        bool spread = spread_subdirs(ldir);
        printf("bench_meta: %llu files; stria %s; local %s (%s)\n", (unsigned long long)nfiles,
               sdir, ldir,
               spread ? "each round in a fresh ext4 block group" : "no ext4 top-directory flag");
        fflush(stdout);
        for (; done < ncounts; done++)
            if ((rc = run_count(sides, counts[done], nfiles, ops[done])))
                break;
    }
    while (made-- > 0) {
        struct side *sd = &sides[made];
        int rrc = sd->b->rmdir(sd->ctx, sd->top);
        if (rrc) {
            fprintf(stderr, "bench_meta: %s rmdir %s: %s\n", sd->b->name, sd->top, strerror(-rrc));
            rc = rc ? rc : rrc;
        }
    }
    stria_disconnect(fs);

    if (done) {
        printf("\n%-8s %-7s %14s %14s %8s\n", "threads", "phase", "stria ops/s", "local ops/s",
               "ratio");
        for (int c = 0; c < done; c++)
            for (int ph = 0; ph < PH_N; ph++)
                printf("%-8d %-7s %14.0f %14.0f %8.3f\n", counts[c], phase_name[ph], ops[c][0][ph],
                       ops[c][1][ph], ops[c][0][ph] / ops[c][1][ph]);
        printf("(ratio = stria / local)\n");
    }
    return rc ? 1 : 0;
}
