/*
 * bench_storm: a metadata storm (issue 25). N simulated ranks, each its own
 * libstria client with its own connections, start at one moment and each
 * opens, stats, reads (64 KiB) and closes files of one directory, as the
 * ranks of a training job do at the start of an epoch.
 *
 *   bench_storm --stria CONF --dir DIR --files F --ranks N [--procs P]
 *               [--per-rank K] [--size BYTES]
 *   bench_storm --stria CONF --dir DIR --files F --make [--size BYTES] [--threads T]
 *     (makes DIR/f0 .. DIR/f<F-1>, of random bytes, through one client;
 *     --size 0 makes them empty, by create and close only; T threads
 *     share the client)
 *   bench_storm --stria CONF --watch PATH [--seconds S] [--interval-us U]
 *     (one client stats PATH every U us (1000), for S seconds or until
 *     SIGTERM or SIGINT, and prints the latency of a stat: what another
 *     client sees while a big job runs, bench_ls.sh)
 *
 * The ranks run as threads of P processes (N / P each; libstria keeps a
 * thread per client, so a process of thousands of clients would have
 * twice as many threads). Every rank connects first; once all have (or
 * failed to), the parent starts them together through a pipe, and each
 * rank does K files: rank r's k-th file is DIR/f<(r * K + k) % F>. One
 * op is stat + open + read + close of one file; its latency goes to a
 * table shared with the parent, which prints:
 *   RESULT storm ranks N
 *   RESULT storm connect_failed C     ranks that could not connect
 *   RESULT storm op_failed E          ops that returned an error
 *   RESULT storm ops_per_s X          ops over the wall time of the storm
 *   RESULT storm p50_ms / p99_ms / max_ms
 *   RESULT storm rank_spread S        slowest rank's time / fastest's
 * Exits 1 if any rank failed. --watch prints "RESULT watch" lines: ops,
 * failed, p50_ms, p99_ms, max_ms; once connected and past its first stat,
 * it says "bench_storm: watching" on stderr.
 */
#include <stria/stria.h>

#include "bench_common.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* What every rank writes where the parent reads it (MAP_SHARED). */
struct shared {
    int connected, connect_failed, op_failed;
    double first_start, last_end;
    pthread_mutex_t lock; /* process-shared */
    /* then: per rank, its time from start to last op; then lat[N * K] */
};

static const char *conf, *dir;
static long files, per_rank, ranks, size = 65536, threads = 1;
static struct shared *sh;
static double *rank_time, *lat;
static int go_fd; /* the read end: a byte per process starts its ranks */

struct rank {
    long id;
    stria_fs_t *fs;
    int *arrived; /* ranks of this process done connecting (atomic) */
    volatile int *go;
};

static void note_connect(bool ok)
{
    pthread_mutex_lock(&sh->lock);
    if (ok)
        sh->connected++;
    else
        sh->connect_failed++;
    pthread_mutex_unlock(&sh->lock);
}

static int one_op(stria_fs_t *fs, const char *path, char *buf)
{
    struct stat st;
    stria_file_t *f;
    int rc = stria_stat(fs, path, &st);
    if (rc == 0 && (rc = stria_open(fs, path, O_RDONLY, 0, &f)) == 0) {
        ssize_t n = stria_pread(f, buf, (size_t)size, 0);
        int crc = stria_close(f);
        rc = n < 0 ? (int)n : crc;
    }
    return rc;
}

static void *rank_main(void *arg)
{
    struct rank *r = arg;
    int rc = stria_connect(conf, &r->fs);
    note_connect(rc == 0);
    if (rc) {
        fprintf(stderr, "rank %ld: connect: %s\n", r->id, strerror(-rc));
        r->fs = NULL;
    }
    __atomic_fetch_add(r->arrived, 1, __ATOMIC_RELEASE);
    while (!*r->go)
        usleep(1000);
    if (!r->fs)
        return NULL;
    char *buf = malloc((size_t)size), path[4096];
    double start = now_s(), end = start;
    int failed = 0;
    for (long k = 0; buf && k < per_rank; k++) {
        snprintf(path, sizeof(path), "%s/f%ld", dir, (r->id * per_rank + k) % files);
        double t0 = now_s();
        if (one_op(r->fs, path, buf))
            failed++;
        end = now_s();
        lat[r->id * per_rank + k] = end - t0;
    }
    free(buf);
    rank_time[r->id] = end - start;
    pthread_mutex_lock(&sh->lock);
    sh->op_failed += failed;
    if (sh->first_start == 0 || start < sh->first_start)
        sh->first_start = start;
    if (end > sh->last_end)
        sh->last_end = end;
    pthread_mutex_unlock(&sh->lock);
    return NULL;
}

/* A child: ranks [first, first + n) as threads; connect all, tell the
 * parent (ready_fd), wait for its go, run, disconnect. */
static int child(long first, long n, int ready_fd)
{
    struct rank *rs = calloc((size_t)n, sizeof(*rs));
    pthread_t *th = calloc((size_t)n, sizeof(*th));
    int arrived = 0;
    volatile int go = 0;
    if (!rs || !th)
        return 1;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10);
    long started = 0;
    for (long i = 0; i < n; i++) {
        rs[i] = (struct rank){first + i, NULL, &arrived, &go};
        if (pthread_create(&th[i], &attr, rank_main, &rs[i]))
            break;
        started++;
    }
    if (started < n)
        fprintf(stderr, "bench_storm: only %ld of %ld threads started\n", started, n);
    for (long i = started; i < n; i++)
        note_connect(false);
    /* Each connect ends within libstria's own timeout. */
    while (__atomic_load_n(&arrived, __ATOMIC_ACQUIRE) < started)
        usleep(10000);
    char c = 1;
    if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1)
        return 1;
    go = 1;
    for (long i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    for (long i = 0; i < started; i++)
        if (rs[i].fs)
            stria_disconnect(rs[i].fs);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* --make: the files the storm reads, made by threads sharing one client;
 * thread t makes every threads-th file from t. */
struct maker {
    pthread_t tid;
    stria_fs_t *fs;
    long t;
    int rc;
};

static void *make_main(void *arg)
{
    struct maker *m = arg;
    char *buf = size ? malloc((size_t)size) : NULL, path[4096];
    if (size && !buf)
        m->rc = -ENOMEM;
    for (long i = m->t; m->rc == 0 && i < files; i += threads) {
        for (long j = 0; j < size; j++)
            buf[j] = (char)rand();
        stria_file_t *f;
        snprintf(path, sizeof(path), "%s/f%ld", dir, i);
        if ((m->rc = stria_open(m->fs, path, O_CREAT | O_WRONLY | O_TRUNC, 0644, &f)) == 0) {
            ssize_t n = size ? stria_pwrite(f, buf, (size_t)size, 0) : 0;
            int crc = stria_close(f);
            m->rc = n < 0 ? (int)n : crc;
        }
        if (m->rc)
            fprintf(stderr, "bench_storm --make: %s: %s\n", path, strerror(-m->rc));
    }
    free(buf);
    return NULL;
}

static int make_files(void)
{
    stria_fs_t *fs;
    int rc = stria_connect(conf, &fs);
    if (rc) {
        fprintf(stderr, "bench_storm --make: connect: %s\n", strerror(-rc));
        return 1;
    }
    struct maker *m = calloc((size_t)threads, sizeof(*m));
    long started = 0;
    double t0 = now_s();
    for (; m && started < threads; started++) {
        m[started] = (struct maker){.fs = fs, .t = started};
        if (pthread_create(&m[started].tid, NULL, make_main, &m[started]))
            break;
    }
    if (started < threads) {
        fprintf(stderr, "bench_storm --make: only %ld of %ld threads started\n", started, threads);
        rc = -EAGAIN;
    }
    for (long t = 0; t < started; t++) {
        pthread_join(m[t].tid, NULL);
        rc = rc ? rc : m[t].rc;
    }
    if (rc == 0)
        fprintf(stderr, "bench_storm --make: %ld files of %ld bytes in %.1f s, %ld thread(s)\n",
                files, size, now_s() - t0, threads);
    free(m);
    stria_disconnect(fs);
    return rc ? 1 : 0;
}

/* --watch: stat one path at a steady pace until told to stop. */
static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
    (void)sig;
    stop = 1;
}

static int watch(const char *path, long seconds, long interval_us)
{
    stria_fs_t *fs;
    struct stat st;
    int rc = stria_connect(conf, &fs);
    if (rc == 0 && (rc = stria_stat(fs, path, &st)))
        stria_disconnect(fs);
    if (rc) {
        fprintf(stderr, "bench_storm --watch %s: %s\n", path, strerror(-rc));
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_stop};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    fprintf(stderr, "bench_storm: watching %s\n", path);
    size_t n = 0, cap = 1 << 16, failed = 0;
    double *l = malloc(cap * sizeof(*l));
    double end = now_s() + (double)seconds;
    while (l && !stop && (seconds == 0 || now_s() < end)) {
        double t0 = now_s();
        if (stria_stat(fs, path, &st))
            failed++;
        double dt = now_s() - t0;
        if (n == cap) {
            double *more = realloc(l, 2 * cap * sizeof(*l));
            if (!more)
                break;
            l = more;
            cap *= 2;
        }
        l[n++] = dt;
        /* A steady pace: a slow stat is not followed by a burst. */
        if (dt * 1e6 < (double)interval_us)
            usleep((useconds_t)((double)interval_us - dt * 1e6));
    }
    stria_disconnect(fs);
    if (!l)
        return 1;
    qsort(l, n, sizeof(double), cmp_double);
    printf("RESULT watch ops %zu\n", n);
    printf("RESULT watch failed %zu\n", failed);
    printf("RESULT watch p50_ms %.3f\n", n ? l[n / 2] * 1e3 : 0.0);
    printf("RESULT watch p99_ms %.3f\n", n ? l[n * 99 / 100] * 1e3 : 0.0);
    printf("RESULT watch max_ms %.3f\n", n ? l[n - 1] * 1e3 : 0.0);
    free(l);
    return failed ? 1 : 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_storm --stria CONF --dir DIR --files F --ranks N [--procs P]\n"
            "                   [--per-rank K] [--size BYTES]\n"
            "       bench_storm --stria CONF --dir DIR --files F --make [--size BYTES]\n"
            "                   [--threads T]\n"
            "       bench_storm --stria CONF --watch PATH [--seconds S] [--interval-us U]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    long procs = 0, seconds = 0, interval_us = 1000;
    bool make = false;
    const char *watch_path = NULL;
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--make")) {
            make = true;
            i--;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        const char *o = argv[i], *v = argv[i + 1];
        char *end;
        long x = strtol(v, &end, 10);
        bool num = *v && !*end && x > 0;
        if (!strcmp(o, "--stria"))
            conf = v;
        else if (!strcmp(o, "--dir"))
            dir = v;
        else if (!strcmp(o, "--files") && num)
            files = x;
        else if (!strcmp(o, "--ranks") && num)
            ranks = x;
        else if (!strcmp(o, "--procs") && num)
            procs = x;
        else if (!strcmp(o, "--per-rank") && num)
            per_rank = x;
        else if (!strcmp(o, "--size") && *v && !*end && x >= 0 && x <= (64 << 20))
            size = x;
        else if (!strcmp(o, "--threads") && num && x <= 256)
            threads = x;
        else if (!strcmp(o, "--watch"))
            watch_path = v;
        else if (!strcmp(o, "--seconds") && num)
            seconds = x;
        else if (!strcmp(o, "--interval-us") && num)
            interval_us = x;
        else
            usage();
    }
    if (watch_path && conf && !make)
        return watch(watch_path, seconds, interval_us);
    if (make && conf && dir && files)
        return make_files();
    if (make || watch_path || !conf || !dir || !files || !ranks || !size)
        usage();
    if (!per_rank)
        per_rank = 10;
    if (!procs)
        procs = (ranks + 99) / 100;
    if (procs > ranks)
        procs = ranks;
    size_t bytes = sizeof(struct shared) + sizeof(double) * (size_t)ranks * (size_t)(1 + per_rank);
    sh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return perror("mmap"), 1;
    rank_time = (double *)(sh + 1);
    lat = rank_time + ranks;
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&sh->lock, &ma);
    int ready[2], go[2];
    if (pipe(ready) || pipe(go))
        return perror("pipe"), 1;
    pid_t *kids = calloc((size_t)procs, sizeof(*kids));
    long made = 0;
    for (long p = 0; p < procs; p++) {
        long first = ranks * p / procs, n = ranks * (p + 1) / procs - first;
        pid_t pid = fork();
        if (pid == 0) {
            close(ready[0]);
            close(go[1]);
            go_fd = go[0];
            _exit(child(first, n, ready[1]));
        }
        if (pid < 0) {
            perror("fork");
            break;
        }
        kids[made++] = pid;
    }
    close(ready[1]);
    close(go[0]);
    /* Every process has connected its ranks (or failed to): go. */
    double t_connect = now_s();
    char c;
    long up = 0;
    while (up < made && read(ready[0], &c, 1) == 1)
        up++;
    fprintf(stderr, "bench_storm: %d ranks connected, %d failed, in %.1f s; go\n", sh->connected,
            sh->connect_failed, now_s() - t_connect);
    for (long p = 0; p < up; p++)
        if (write(go[1], "g", 1) != 1)
            break;
    int status = made == procs && up == made ? 0 : 1;
    for (long p = 0; p < made; p++) {
        int ws;
        if (waitpid(kids[p], &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws))
            status = 1;
    }
    /* The latencies of the ops that ran (a rank that never connected
     * left zeros, which are not ops). */
    size_t nl = 0;
    for (size_t i = 0; i < (size_t)ranks * (size_t)per_rank; i++)
        if (lat[i] > 0)
            lat[nl++] = lat[i];
    qsort(lat, nl, sizeof(double), cmp_double);
    double lo = 0, hi = 0;
    for (long r = 0; r < ranks; r++) {
        if (rank_time[r] <= 0)
            continue;
        lo = lo == 0 || rank_time[r] < lo ? rank_time[r] : lo;
        hi = rank_time[r] > hi ? rank_time[r] : hi;
    }
    double wall = sh->last_end - sh->first_start;
    printf("RESULT storm ranks %ld\n", ranks);
    printf("RESULT storm connect_failed %d\n", sh->connect_failed);
    printf("RESULT storm op_failed %d\n", sh->op_failed);
    printf("RESULT storm ops %zu\n", nl);
    printf("RESULT storm ops_per_s %.1f\n", wall > 0 ? (double)nl / wall : 0.0);
    printf("RESULT storm p50_ms %.2f\n", nl ? lat[nl / 2] * 1e3 : 0.0);
    printf("RESULT storm p99_ms %.2f\n", nl ? lat[nl * 99 / 100] * 1e3 : 0.0);
    printf("RESULT storm max_ms %.2f\n", nl ? lat[nl - 1] * 1e3 : 0.0);
    printf("RESULT storm rank_spread %.2f\n", lo > 0 ? hi / lo : 0.0);
    return status || sh->connect_failed || sh->op_failed ? 1 : 0;
}
