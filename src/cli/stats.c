/*
 * stria stats: what each MDT's requests cost, as `lctl get_param
 * mdt.*.md_stats` shows for Lustre.
 *
 *   stria stats          counters since each MDT started
 *   stria stats -i 5     the same over the next five seconds
 *   stria stats -s       each storage server's requests (WRITE, READ, ...) too
 *
 * One table per MDT (and with -s per storage server, which counts the
 * requests of all its OSTs): per kind of request, its count, rate, errors,
 * and the mean, median, 99th percentile and largest service time in
 * microseconds. With -i the MDTs' and servers' counts of one interval,
 * divided by how many files a workload made or read, are its round trips
 * per file (bench/bench_small.sh prints them).
 * The percentiles come from the MDT's power-of-two histogram, so each is
 * the upper bound of its bucket.
 */
#include "args.h"
#include "commands.h"
#include "connect.h"

#include "../common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The upper bound, in us, of the bucket holding the q-th quantile. */
static uint64_t quantile_us(const uint64_t *hist, uint64_t count, double q)
{
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

/* ops minus what before (same MDT, earlier) had counted; max stays. */
static void subtract(struct stria_op_stats *ops, size_t n, const struct stria_op_stats *before,
                     size_t nb)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < nb; j++) {
            if (strcmp(ops[i].op, before[j].op) != 0)
                continue;
            ops[i].count -= before[j].count;
            ops[i].errors -= before[j].errors;
            ops[i].total_ns -= before[j].total_ns;
            for (unsigned b = 0; b < STRIA_STAT_BUCKETS; b++)
                ops[i].hist[b] -= before[j].hist[b];
        }
}

static void print_table(const char *who, const struct stria_op_stats *ops, size_t n, double secs,
                        bool interval)
{
    printf("%s (%s %.1f s)\n", who, interval ? "over" : "up", secs);
    printf("%-12s %12s %10s %8s %9s %8s %8s %9s\n", "request", "count", "per_s", "errors",
           "mean_us", "p50_us", "p99_us", "max_us");
    size_t shown = 0;
    for (size_t i = 0; i < n; i++) {
        const struct stria_op_stats *o = &ops[i];
        if (!o->count)
            continue;
        shown++;
        printf("%-12s %12" PRIu64 " %10.1f %8" PRIu64 " %9.1f %8" PRIu64 " %8" PRIu64 " %9.1f\n",
               o->op, o->count, secs > 0 ? (double)o->count / secs : 0.0, o->errors,
               (double)o->total_ns / (double)o->count / 1000.0, quantile_us(o->hist, o->count, 0.5),
               quantile_us(o->hist, o->count, 0.99), (double)o->max_ns / 1000.0);
    }
    if (!shown)
        printf("(no requests)\n");
}

/* The counters of MDT index, or (ost) of the server of OST index. */
static int fetch(stria_fs_t *fs, bool ost, uint32_t index, struct stria_op_stats **ops, size_t *n,
                 uint64_t *up)
{
    return ost ? stria_ost_stats(fs, index, ops, n, up) : stria_mdt_stats(fs, index, ops, n, up);
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
        case 'i': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end || v < 1 || v > 3600)
                return cli_usage_error(argv[0], "-i takes whole seconds, 1 to 3600");
            interval = (int)v;
            break;
        }
        default:
            return cli_usage_error(argv[0], NULL);
        }
    }
    if (optind != argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    stria_fs_t *fs;
    uint32_t *idx;
    size_t nm;
    if (cli_connect_mdts(&fs, &idx, &nm) < 0)
        return CLI_FAIL;
    /* With -s, one OST of each storage server follows the MDTs (its
     * server answers for all of them); names[i] says whose table it is. */
    size_t nsrc = nm;
    char(*names)[320] = NULL;
    struct stria_target *t = NULL;
    size_t nt = 0;
    if (servers && stria_targets(fs, &t, &nt) == 0) {
        uint32_t *more = realloc(idx, (nm + nt + 1) * sizeof(*idx));
        names = calloc(nm + nt + 1, sizeof(*names));
        if (more)
            idx = more;
        for (size_t i = 0; more && names && i < nt; i++) {
            if (strcmp(t[i].kind, "OST"))
                continue;
            char key[300];
            snprintf(key, sizeof(key), "%s:%u", t[i].host, (unsigned)t[i].port);
            size_t j = nm;
            while (j < nsrc && strncmp(names[j], key, strlen(key)))
                j++;
            if (j < nsrc) {
                size_t l = strlen(names[j]);
                snprintf(names[j] + l, sizeof(names[j]) - l, " OST%04" PRIx32, t[i].index);
                continue;
            }
            snprintf(names[nsrc], sizeof(names[0]), "%s: OST%04" PRIx32, key, t[i].index);
            idx[nsrc++] = t[i].index;
        }
    }
    free(t);
    /* Each MDT's counters now (and, with -i, after the interval). */
    struct stria_op_stats **first = calloc(nsrc ? nsrc : 1, sizeof(*first));
    size_t *nfirst = calloc(nsrc ? nsrc : 1, sizeof(*nfirst));
    uint64_t *up = calloc(nsrc ? nsrc : 1, sizeof(*up));
    int *err = calloc(nsrc ? nsrc : 1, sizeof(*err));
    int status = CLI_OK;
    if (!first || !nfirst || !up || !err) {
        fprintf(stderr, "stria stats: out of memory\n");
        status = CLI_FAIL;
        goto out;
    }
    for (size_t i = 0; i < nsrc; i++)
        err[i] = fetch(fs, i >= nm, idx[i], &first[i], &nfirst[i], &up[i]);
    if (interval)
        sleep((unsigned)interval);
    for (size_t i = 0; i < nsrc; i++) {
        char who[400];
        if (i < nm)
            snprintf(who, sizeof(who), "MDT%04" PRIx32, idx[i]);
        else
            snprintf(who, sizeof(who), "storage server %s", names[i]);
        if (i)
            putchar('\n');
        struct stria_op_stats *ops = first[i];
        size_t n = nfirst[i];
        uint64_t up2 = up[i];
        bool fresh = false;
        if (interval && !err[i]) {
            err[i] = fetch(fs, i >= nm, idx[i], &ops, &n, &up2);
            fresh = !err[i];
            if (fresh && up2 < up[i])
                err[i] = -ESTALE; /* it restarted in between */
        }
        if (err[i]) {
            printf("%s: no answer (%s)\n", who, strerror(-err[i]));
            status = CLI_FAIL;
        } else if (interval) {
            subtract(ops, n, first[i], nfirst[i]);
            print_table(who, ops, n, (double)(up2 - up[i]) / 1e9, true);
        } else {
            print_table(who, ops, n, (double)up2 / 1e9, false);
        }
        if (fresh)
            free(ops);
    }
    if (!nm)
        printf("(the cluster map lists no MDT)\n");
out:
    for (size_t i = 0; first && i < nsrc; i++)
        free(first[i]);
    free(names);
    free(first);
    free(nfirst);
    free(up);
    free(err);
    free(idx);
    stria_disconnect(fs);
    return status;
}
