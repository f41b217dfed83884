/*
 * stria stats and stria top: what each server's requests cost, as `lctl
 * get_param mdt.*.md_stats` and Lustre's req_waittime show, and who sends
 * them.
 *
 *   stria stats          counters since each MDT started
 *   stria stats -i 5     the same over the next five seconds
 *   stria stats -s       each storage server's requests (WRITE, READ, ...) too
 *   stria top            the same figures live, every second, per server
 *
 * One table per MDT (and with -s per storage server, which counts the
 * requests of all its OSTs): per kind of request, its count, rate, errors,
 * the mean, median, 99th percentile and largest service time in
 * microseconds, and the mean and 99th percentile of the time requests
 * waited before their service began; then the server's busiest clients.
 * A high wait means a queue (the MDT's group commit, a starved pool), a
 * high service time the handler itself (docs/operations.md, "Debugging a
 * metadata storm"). With -i the MDTs' and servers' counts of one interval,
 * divided by how many files a workload made or read, are its round trips
 * per file (bench/bench_small.sh prints them).
 * The percentiles come from the server's power-of-two histograms, so each
 * is the upper bound of its bucket.
 */
#include "args.h"
#include "commands.h"
#include "connect.h"

#include "../common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The upper bound, in us, of the bucket holding the q-th quantile; 0 for
 * a histogram of nothing (an older server's waits). */
static uint64_t quantile_us(const uint64_t *hist, uint64_t count, double q)
{
    uint64_t all = 0;
    for (unsigned b = 0; b < STRIA_STAT_BUCKETS; b++)
        all += hist[b];
    if (!all)
        return 0;
    if (count > all)
        count = all;
    uint64_t want = (uint64_t)((double)count * q + 0.999999), seen = 0;
    if (want == 0)
        want = 1;
    for (unsigned b = 0; b < STRIA_STAT_BUCKETS; b++) {
        seen += hist[b];
        if (seen >= want)
            return (uint64_t)1 << b;
    }
    return (uint64_t)1 << (STRIA_STAT_BUCKETS - 1);
}

static double mean_us(uint64_t ns, uint64_t count)
{
    return count ? (double)ns / (double)count / 1000.0 : 0.0;
}

#define STATS_CLIENTS 8 /* busiest clients under each table of stria stats */
#define TOP_REQUESTS  8 /* kinds of request per server in stria top */
#define TOP_CLIENTS   5 /* clients per server in stria top */

/* Whose counters a table shows: an MDT, or (ost) the server of an OST. */
struct source {
    char who[400];
    bool ost;
    uint32_t index;
};

/* One answer of a source. */
struct snap {
    int err;
    uint64_t up;
    struct stria_op_stats *ops;
    size_t n;
    struct stria_client_stats *clients;
    size_t nclients;
};

static void snap_take(stria_fs_t *fs, const struct source *src, struct snap *s)
{
    s->err = stria_server_stats(fs, src->ost, src->index, &s->ops, &s->n, &s->up, &s->clients,
                                &s->nclients);
}

/* Every source's snapshot at once, a thread each (SNAP_THREADS at a time):
 * k daemons down cost one timeout, not k. With answered, only the sources
 * that answered it are asked again. */
#define SNAP_THREADS 64
struct snap_job {
    stria_fs_t *fs;
    const struct source *src;
    struct snap *s;
    pthread_t t;
    bool started;
};

static void *snap_run(void *arg)
{
    struct snap_job *j = arg;
    snap_take(j->fs, j->src, j->s);
    return NULL;
}

static void snap_all(stria_fs_t *fs, const struct source *src, size_t n, struct snap *out,
                     const struct snap *answered)
{
    struct snap_job jobs[SNAP_THREADS];
    for (size_t base = 0; base < n; base += SNAP_THREADS) {
        size_t k = n - base < SNAP_THREADS ? n - base : SNAP_THREADS;
        for (size_t i = 0; i < k; i++) {
            jobs[i] = (struct snap_job){fs, &src[base + i], &out[base + i], 0, false};
            if (answered && answered[base + i].err)
                continue; /* its first answer is missing: nothing to compare */
            jobs[i].started = pthread_create(&jobs[i].t, NULL, snap_run, &jobs[i]) == 0;
            if (!jobs[i].started)
                snap_take(fs, &src[base + i], &out[base + i]); /* no thread: here */
        }
        for (size_t i = 0; i < k; i++)
            if (jobs[i].started)
                pthread_join(jobs[i].t, NULL);
    }
}

static void snap_free(struct snap *s)
{
    free(s->ops);
    free(s->clients);
    memset(s, 0, sizeof(*s));
}

/* *to: a copy of from (to free with snap_free). */
static int snap_copy(struct snap *to, const struct snap *from)
{
    *to = *from;
    to->ops = malloc((from->n ? from->n : 1) * sizeof(*from->ops));
    to->clients = malloc((from->nclients ? from->nclients : 1) * sizeof(*from->clients));
    if (!to->ops || !to->clients) {
        snap_free(to);
        return -ENOMEM;
    }
    memcpy(to->ops, from->ops, from->n * sizeof(*from->ops));
    memcpy(to->clients, from->clients, from->nclients * sizeof(*from->clients));
    return 0;
}

/* cur less what before (same server, earlier) had counted; maxima stay. A
 * client before did not name counts from its start. -ESTALE when the
 * server restarted in between. */
static int snap_since(struct snap *cur, const struct snap *before)
{
    if (cur->up < before->up)
        return -ESTALE;
    for (size_t i = 0; i < cur->n; i++)
        for (size_t j = 0; j < before->n; j++) {
            struct stria_op_stats *o = &cur->ops[i];
            const struct stria_op_stats *b = &before->ops[j];
            if (strcmp(o->op, b->op) != 0)
                continue;
            o->count -= b->count;
            o->errors -= b->errors;
            o->total_ns -= b->total_ns;
            o->wait_ns -= b->wait_ns;
            for (unsigned k = 0; k < STRIA_STAT_BUCKETS; k++) {
                o->hist[k] -= b->hist[k];
                o->wait_hist[k] -= b->wait_hist[k];
            }
        }
    for (size_t i = 0; i < cur->nclients; i++)
        for (size_t j = 0; j < before->nclients; j++) {
            struct stria_client_stats *c = &cur->clients[i];
            const struct stria_client_stats *b = &before->clients[j];
            if (c->client_id != b->client_id || c->requests < b->requests)
                continue;
            c->requests -= b->requests;
            c->service_ns -= b->service_ns;
            c->wait_ns -= b->wait_ns;
        }
    return 0;
}

static int by_requests(const void *a, const void *b)
{
    uint64_t x = ((const struct stria_client_stats *)a)->requests;
    uint64_t y = ((const struct stria_client_stats *)b)->requests;
    return x > y ? -1 : x < y;
}

static int by_count(const void *a, const void *b)
{
    uint64_t x = ((const struct stria_op_stats *)a)->count;
    uint64_t y = ((const struct stria_op_stats *)b)->count;
    return x > y ? -1 : x < y;
}

/* Up to max of s's busiest clients, busiest first, each line after
 * indent. */
static void print_clients(const struct snap *s, double secs, size_t max, const char *indent)
{
    qsort(s->clients, s->nclients, sizeof(*s->clients), by_requests);
    if (!s->nclients || !s->clients[0].requests)
        return;
    printf("%s%-18s %12s %10s %9s %9s  %s\n", indent, "busiest clients", "requests", "per_s",
           "mean_us", "wait_us", "address");
    for (size_t i = 0; i < s->nclients && i < max; i++) {
        const struct stria_client_stats *c = &s->clients[i];
        if (!c->requests)
            break;
        printf("%s  %016" PRIx64 " %12" PRIu64 " %10.1f %9.1f %9.1f  %s\n", indent, c->client_id,
               c->requests, secs > 0 ? (double)c->requests / secs : 0.0,
               mean_us(c->service_ns, c->requests), mean_us(c->wait_ns, c->requests),
               c->ip[0] ? c->ip : "-");
    }
}

static void print_table(const char *who, const struct snap *s, double secs, bool interval)
{
    printf("%s (%s %.1f s)\n", who, interval ? "over" : "up", secs);
    printf("%-12s %12s %10s %8s %9s %8s %8s %9s %12s %11s\n", "request", "count", "per_s", "errors",
           "mean_us", "p50_us", "p99_us", "max_us", "wait_mean_us", "wait_p99_us");
    size_t shown = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct stria_op_stats *o = &s->ops[i];
        if (!o->count)
            continue;
        shown++;
        printf("%-12s %12" PRIu64 " %10.1f %8" PRIu64 " %9.1f %8" PRIu64 " %8" PRIu64
               " %9.1f %12.1f %11" PRIu64 "\n",
               o->op, o->count, secs > 0 ? (double)o->count / secs : 0.0, o->errors,
               mean_us(o->total_ns, o->count), quantile_us(o->hist, o->count, 0.5),
               quantile_us(o->hist, o->count, 0.99), (double)o->max_ns / 1000.0,
               mean_us(o->wait_ns, o->count), quantile_us(o->wait_hist, o->count, 0.99));
    }
    if (!shown)
        printf("(no requests)\n");
    print_clients(s, secs, STATS_CLIENTS, "");
}

#define STATS_TIMEOUT_MS 10000

/* Connect; every MDT (*nm of them) and, with servers, one OST of each
 * storage server (its server answers for all of them). *src is malloc'd. */
static int sources(stria_fs_t **fs, bool servers, struct source **src, size_t *n, size_t *nm)
{
    uint32_t *idx;
    size_t nt = 0;
    struct stria_target *t = NULL;
    if (cli_connect_mdts(fs, &idx, nm) < 0)
        return -1;
    /* A daemon that is down is what an operator looks for here: it is
     * named (no answer) after STATS_TIMEOUT_MS, or the configured timeout
     * if shorter, not after the mounts' (100 s) of waiting for it to come
     * back. */
    if (stria_io_timeout(*fs) > STATS_TIMEOUT_MS)
        stria_set_io_timeout(*fs, STATS_TIMEOUT_MS);
    if (servers && stria_targets(*fs, &t, &nt))
        nt = 0;
    struct source *v = calloc(*nm + nt + 1, sizeof(*v));
    if (!v) {
        free(idx);
        free(t);
        stria_disconnect(*fs);
        fprintf(stderr, "stria: out of memory\n");
        return -1;
    }
    for (size_t i = 0; i < *nm; i++) {
        snprintf(v[i].who, sizeof(v[i].who), "MDT%04" PRIx32, idx[i]);
        v[i].index = idx[i];
    }
    size_t k = *nm;
    for (size_t i = 0; i < nt; i++) {
        if (strcmp(t[i].kind, "OST"))
            continue;
        char key[300];
        snprintf(key, sizeof(key), "storage server %s:%u", t[i].host, (unsigned)t[i].port);
        size_t j = *nm;
        while (j < k && strncmp(v[j].who, key, strlen(key)))
            j++;
        if (j < k) {
            size_t l = strlen(v[j].who);
            snprintf(v[j].who + l, sizeof(v[j].who) - l, " OST%04" PRIx32, t[i].index);
            continue;
        }
        snprintf(v[k].who, sizeof(v[k].who), "%s: OST%04" PRIx32, key, t[i].index);
        v[k].ost = true;
        v[k++].index = t[i].index;
    }
    free(t);
    free(idx);
    *src = v;
    *n = k;
    return 0;
}

/* -i SECONDS and -n COUNT: whole numbers from 1 to max. */
static int whole(const char *cmd, char opt, const char *arg, long max, int *out)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg == '\0' || *end || v < 1 || v > max)
        return cli_usage_error(cmd, "-%c takes a whole number, 1 to %ld", opt, max);
    *out = (int)v;
    return 0;
}

int cmd_stats(int argc, char **argv)
{
    int c, interval = 0;
    bool servers = false;
    while ((c = cli_getopt(argc, argv, "i:s")) != -1) {
        switch (c) {
        case 's':
            servers = true;
            break;
        case 'i':
            if (whole(argv[0], 'i', optarg, 3600, &interval))
                return CLI_USAGE;
            break;
        default:
            return cli_usage_error(argv[0], NULL);
        }
    }
    if (optind != argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    stria_fs_t *fs;
    struct source *src;
    size_t n, nm;
    if (sources(&fs, servers, &src, &n, &nm))
        return CLI_FAIL;
    struct snap *first = calloc(n ? n : 1, sizeof(*first)), *later = NULL;
    int status = CLI_OK;
    if (!first) {
        fprintf(stderr, "stria stats: out of memory\n");
        status = CLI_FAIL;
        goto out;
    }
    snap_all(fs, src, n, first, NULL);
    if (interval) {
        sleep((unsigned)interval);
        if (!(later = calloc(n ? n : 1, sizeof(*later)))) {
            fprintf(stderr, "stria stats: out of memory\n");
            status = CLI_FAIL;
            goto out;
        }
        snap_all(fs, src, n, later, first);
    }
    for (size_t i = 0; i < n; i++) {
        if (i)
            putchar('\n');
        struct snap now = {0};
        if (interval && !first[i].err) {
            now = later[i];
            memset(&later[i], 0, sizeof(later[i]));
            if (!now.err)
                now.err = snap_since(&now, &first[i]); /* it restarted in between */
        } else {
            now = first[i];
            memset(&first[i], 0, sizeof(first[i]));
        }
        if (now.err) {
            printf("%s: no answer (%s)\n", src[i].who, strerror(-now.err));
            status = CLI_FAIL;
        } else if (interval) {
            print_table(src[i].who, &now, (double)(now.up - first[i].up) / 1e9, true);
        } else {
            print_table(src[i].who, &now, (double)now.up / 1e9, false);
        }
        snap_free(&now);
    }
    if (!nm)
        printf("(the cluster map lists no MDT)\n");
out:
    for (size_t i = 0; first && i < n; i++)
        snap_free(&first[i]);
    for (size_t i = 0; later && i < n; i++)
        snap_free(&later[i]);
    free(first);
    free(later);
    free(src);
    stria_disconnect(fs);
    return status;
}

/* One server's line in stria top, its busiest requests and clients. */
static void top_server(const struct source *src, struct snap *s, double secs)
{
    uint64_t count = 0, wait = 0, service = 0;
    for (size_t i = 0; i < s->n; i++) {
        count += s->ops[i].count;
        wait += s->ops[i].wait_ns;
        service += s->ops[i].total_ns;
    }
    printf("%s: %.1f ops/s, wait %.1f us, service %.1f us\n", src->who,
           secs > 0 ? (double)count / secs : 0.0, mean_us(wait, count), mean_us(service, count));
    if (!count)
        return;
    qsort(s->ops, s->n, sizeof(*s->ops), by_count);
    printf("  %-12s %10s %9s %9s %8s\n", "request", "per_s", "wait_us", "mean_us", "p99_us");
    for (size_t i = 0; i < s->n && i < TOP_REQUESTS && s->ops[i].count; i++) {
        const struct stria_op_stats *o = &s->ops[i];
        printf("  %-12s %10.1f %9.1f %9.1f %8" PRIu64 "\n", o->op, (double)o->count / secs,
               mean_us(o->wait_ns, o->count), mean_us(o->total_ns, o->count),
               quantile_us(o->hist, o->count, 0.99));
    }
    print_clients(s, secs, TOP_CLIENTS, "  ");
}

int cmd_top(int argc, char **argv)
{
    int c, interval = 1, count = 0;
    while ((c = cli_getopt(argc, argv, "i:n:")) != -1) {
        switch (c) {
        case 'i':
            if (whole(argv[0], 'i', optarg, 3600, &interval))
                return CLI_USAGE;
            break;
        case 'n':
            if (whole(argv[0], 'n', optarg, 1000000, &count))
                return CLI_USAGE;
            break;
        default:
            return cli_usage_error(argv[0], NULL);
        }
    }
    if (optind != argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    stria_fs_t *fs;
    struct source *src;
    size_t n, nm;
    if (sources(&fs, true, &src, &n, &nm))
        return CLI_FAIL;
    /* On a terminal each view replaces the last; elsewhere they follow
     * each other, for a log or a script. */
    bool tty = isatty(STDOUT_FILENO);
    struct snap *prev = calloc(n ? n : 1, sizeof(*prev)), *cur = calloc(n ? n : 1, sizeof(*cur));
    int status = CLI_OK;
    if (!prev || !cur) {
        fprintf(stderr, "stria top: out of memory\n");
        status = CLI_FAIL;
        goto out;
    }
    snap_all(fs, src, n, prev, NULL);
    for (int round = 0; count == 0 || round < count; round++) {
        sleep((unsigned)interval);
        char when[32];
        time_t now = time(NULL);
        strftime(when, sizeof(when), "%F %T", localtime(&now));
        /* Asked before the screen is cleared: a daemon that does not
         * answer leaves the last view up meanwhile, not a blank one. */
        snap_all(fs, src, n, cur, NULL);
        printf("%sstria top: %s, every %d s\n",
               tty     ? "\033[H\033[2J"
               : round ? "\n"
                       : "",
               when, interval);
        status = CLI_OK;
        for (size_t i = 0; i < n; i++) {
            struct snap diff = {0};
            if (i)
                putchar('\n');
            if (cur[i].err) {
                printf("%s: no answer (%s)\n", src[i].who, strerror(-cur[i].err));
                status = CLI_FAIL;
            } else if (prev[i].err || snap_copy(&diff, &cur[i]) || snap_since(&diff, &prev[i])) {
                printf("%s: (re)started or unreachable; figures from the next round\n", src[i].who);
            } else {
                top_server(&src[i], &diff, (double)(cur[i].up - prev[i].up) / 1e9);
            }
            snap_free(&diff);
            snap_free(&prev[i]);
            prev[i] = cur[i];
            memset(&cur[i], 0, sizeof(cur[i]));
        }
        fflush(stdout);
    }
out:
    for (size_t i = 0; prev && i < n; i++)
        snap_free(&prev[i]);
    free(prev);
    free(cur);
    free(src);
    stria_disconnect(fs);
    return status;
}
