/*
 * stria_statfs keeps its answer for client.conf's statfs_max_age_ms: two
 * calls within that age cost the servers one round of STATFS (MDTs) and
 * OSTATFS (OSTs), a call after it another round; with the option at 0
 * every call asks; threads that call at once while one asks wait for its
 * answer rather than asking too; stria_targets (stria df) always asks.
 * The rounds are counted in the servers' own statistics of MDT 0's and
 * OST 0's servers (stria_mdt_stats, stria_ost_stats), which send neither.
 *
 * Usage: statfs_cache CONF_DEFAULT CONF_AGE_0 CONF_AGE_60000
 */
#include "stria/stria.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define THREADS 8

static stria_fs_t *admin; /* the one that reads the counters */

static uint64_t count_of(struct stria_op_stats *ops, size_t n, const char *op)
{
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ops[i].op, op))
            c += ops[i].count;
    free(ops);
    return c;
}

/* STATFS served by MDT 0's server plus OSTATFS by OST 0's, so far. */
static uint64_t asked(void)
{
    struct stria_op_stats *ops;
    size_t n;
    uint64_t up, sum = 0;
    CHECK(stria_mdt_stats(admin, 0, &ops, &n, &up) == 0, "MDT 0's stats");
    sum += count_of(ops, n, "STATFS");
    CHECK(stria_ost_stats(admin, 0, &ops, &n, &up) == 0, "OST 0's stats");
    sum += count_of(ops, n, "OSTATFS");
    return sum;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int statfs_ok(stria_fs_t *fs)
{
    struct statvfs sv;
    int rc = stria_statfs(fs, &sv);
    CHECK(rc == 0 && sv.f_blocks > 0 && sv.f_files > 0, "statfs: %d, %lu blocks, %lu files", rc,
          (unsigned long)sv.f_blocks, (unsigned long)sv.f_files);
    return rc;
}

static stria_fs_t *connect_to(const char *conf)
{
    stria_fs_t *fs = NULL;
    int rc = stria_connect(conf, &fs);
    CHECK(rc == 0, "connect with %s: %d", conf, rc);
    if (rc)
        exit(1);
    return fs;
}

/* The default age (1 s): the second call within it asks nobody, one after
 * it asks again. Returns the requests of one round. */
static uint64_t kept_then_expired(const char *conf)
{
    stria_fs_t *fs = connect_to(conf);
    uint64_t a0 = asked();
    double t0 = now_s();
    statfs_ok(fs);
    uint64_t round = asked() - a0;
    CHECK(round >= 2, "the first statfs asked %lu of MDT 0's and OST 0's servers, want at least 2",
          (unsigned long)round);
    a0 = asked();
    statfs_ok(fs);
    if (now_s() - t0 < 0.8)
        CHECK(asked() == a0, "a statfs within 1 s of the last asked again (%lu requests)",
              (unsigned long)(asked() - a0));
    else
        printf("note: the machine is too slow to tell a kept answer (%.2f s)\n", now_s() - t0);
    struct timespec d = {1, 200000000};
    nanosleep(&d, NULL);
    a0 = asked();
    statfs_ok(fs);
    CHECK(asked() - a0 == round, "a statfs 1.2 s after the last asked %lu, want a round of %lu",
          (unsigned long)(asked() - a0), (unsigned long)round);
    /* stria df's call is never kept. */
    struct stria_target *t;
    size_t n;
    a0 = asked();
    CHECK(stria_targets(fs, &t, &n) == 0, "targets");
    free(t);
    CHECK(asked() - a0 == round, "stria_targets asked %lu, want a round of %lu",
          (unsigned long)(asked() - a0), (unsigned long)round);
    stria_disconnect(fs);
    return round;
}

static void always_asked(const char *conf, uint64_t round)
{
    stria_fs_t *fs = connect_to(conf);
    uint64_t a0 = asked();
    for (int i = 0; i < 3; i++)
        statfs_ok(fs);
    CHECK(asked() - a0 == 3 * round, "3 statfs with statfs_max_age_ms = 0 asked %lu, want %lu",
          (unsigned long)(asked() - a0), (unsigned long)(3 * round));
    stria_disconnect(fs);
}

static pthread_barrier_t start;

static void *caller(void *arg)
{
    pthread_barrier_wait(&start);
    statfs_ok(arg);
    return NULL;
}

/* Threads that call at once: one asks, the others take its answer. */
static void one_asks_for_all(const char *conf, uint64_t round)
{
    stria_fs_t *fs = connect_to(conf);
    pthread_t th[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    uint64_t a0 = asked();
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, caller, fs);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    CHECK(asked() - a0 == round, "%d threads' statfs asked %lu, want one round of %lu", THREADS,
          (unsigned long)(asked() - a0), (unsigned long)round);
    stria_disconnect(fs);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s CONF_DEFAULT CONF_AGE_0 CONF_AGE_60000\n", argv[0]);
        return 2;
    }
    admin = connect_to(argv[1]);
    uint64_t round = kept_then_expired(argv[1]);
    if (round) {
        always_asked(argv[2], round);
        one_asks_for_all(argv[3], round);
    }
    stria_disconnect(admin);
    if (failures) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
