/*
 * stria rebalance: move the data of the fullest OSTs' files to the
 * emptiest ones, online, within a bandwidth (docs/operations.md,
 * "Rebalancing OSTs").
 *
 * The files under PATH (default /) with data on OSTs are listed once, with
 * the bytes each keeps on each OST, all of them before the first move
 * (each move picks from the whole list). Then, while
 * the fullest OST is out of balance (balance.h), the file that keeps the
 * most on it is migrated (stria_migrate) into a layout of the same shape
 * whose stripes start at the emptiest OST, and the OSTs are measured
 * again. Nothing is kept between runs: an interrupted run
 * leaves every file whole (a migration cut short is cleaned up by the
 * next one of that file), and running it again measures the OSTs anew and
 * goes on from where they are.
 */
#include "args.h"
#include "balance.h"
#include "commands.h"
#include "connect.h"
#include "paths.h"

#include "../common/util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct share {
    uint32_t ost;
    uint64_t bytes;
};

struct file {
    char *path;
    uint64_t size;
    struct share *shares;
    uint32_t nshares;
    bool done;
};

struct rb {
    const char *cmd;
    stria_fs_t *fs;
    struct stria_target *t;
    size_t nt;
    double threshold;
    uint64_t rate; /* bytes/s, 0: no limit */
    bool dry, verbose, bar;
    size_t moved; /* files, so far */
    struct file *v;
    size_t n, cap;
    /* The bandwidth: bytes copied since start_ns. */
    uint64_t copied, file_done;
    int64_t start_ns;
};

static struct stria_target *ost(struct rb *r, uint32_t index)
{
    for (size_t i = 0; i < r->nt; i++)
        if (!strncmp(r->t[i].kind, "OST", sizeof(r->t[i].kind)) && r->t[i].index == index &&
            r->t[i].online)
            return &r->t[i];
    return NULL;
}

/* What file path (l its layout, size bytes) keeps on each OST. */
static int add_file(struct rb *r, const char *path, uint64_t size, const struct stria_layout *l)
{
    struct file f = {.size = size};
    for (uint32_t c = 0; c < l->ncomp; c++) {
        if (!l->comp[c].init || l->comp[c].on_mdt || size <= l->comp[c].start)
            continue;
        uint64_t end = l->comp[c].end < size ? l->comp[c].end : size;
        uint64_t per = (end - l->comp[c].start) / l->comp[c].stripe_count;
        for (uint32_t s = 0; s < l->comp[c].stripe_count; s++) {
            uint32_t k = 0;
            while (k < f.nshares && f.shares[k].ost != l->comp[c].ost[s])
                k++;
            if (k == f.nshares) {
                struct share *ns = realloc(f.shares, (k + 1) * sizeof(*ns));
                if (!ns) {
                    free(f.shares);
                    return -ENOMEM;
                }
                f.shares = ns;
                f.shares[k] = (struct share){l->comp[c].ost[s], 0};
                f.nshares++;
            }
            f.shares[k].bytes += per;
        }
    }
    if (!f.nshares)
        return 0;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        struct file *nv = realloc(r->v, cap * sizeof(*nv));
        if (!nv) {
            free(f.shares);
            return -ENOMEM;
        }
        r->v = nv;
        r->cap = cap;
    }
    if (!(f.path = strdup(path))) {
        free(f.shares);
        return -ENOMEM;
    }
    r->v[r->n++] = f;
    return 0;
}

/* A file of the walk: listed if it has data on OSTs. */
static int on_file(const char *path, const struct stat *st, void *arg)
{
    struct rb *r = arg;
    struct stria_layout *l = malloc(sizeof(*l));
    if (!l)
        return -ENOMEM;
    int rc = stria_getstripe(r->fs, path, l);
    if (rc == 0)
        rc = add_file(r, path, (uint64_t)st->st_size, l);
    free(l);
    if (rc == -ENOENT)
        return 0; /* gone since it was listed */
    if (rc)
        fprintf(stderr, "stria %s: %s: %s\n", r->cmd, path, strerror(-rc));
    return rc;
}

/* Hold the copy to r->rate: after each chunk, sleep until the bytes
 * copied so far are no more than the rate allows. */
static void throttle(uint64_t done, void *arg)
{
    struct rb *r = arg;
    if (done > r->file_done) {
        r->copied += done - r->file_done;
        r->file_done = done;
    }
    if (r->bar)
        fprintf(stderr, "\r%s: %zu file(s) moved, %" PRIu64 " MiB copied ", r->cmd, r->moved,
                r->copied >> 20);
    if (!r->rate)
        return;
    int64_t due = r->start_ns + (int64_t)((double)r->copied * 1e9 / (double)r->rate);
    int64_t now = (int64_t)util_now_mono_ns();
    if (due > now)
        usleep((useconds_t)((due - now) / 1000));
}

/* The file keeping the most on OST src, less than below (moving as much
 * as the gap between two OSTs or more would only swap them), not moved
 * yet; NULL if none. */
static struct file *pick(struct rb *r, uint32_t src, uint64_t below, uint64_t *bytes)
{
    struct file *best = NULL;
    *bytes = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->v[i].done)
            continue;
        for (uint32_t k = 0; k < r->v[i].nshares; k++) {
            uint64_t b = r->v[i].shares[k].bytes;
            if (r->v[i].shares[k].ost == src && b > *bytes && b < below) {
                *bytes = b;
                best = &r->v[i];
            }
        }
    }
    return best;
}

/* The next move: off the fullest OST out of balance that has a file to
 * give, to the emptiest. NULL when none (balanced, or nothing movable). */
static struct file *next_move(struct rb *r, struct stria_target **src, struct stria_target **dst,
                              uint64_t *bytes)
{
    double mean = balance_mean(r->t, r->nt);
    struct stria_target *empty = NULL;
    for (size_t i = 0; i < r->nt; i++) {
        struct stria_target *x = &r->t[i];
        if (x->online && !strncmp(x->kind, "OST", sizeof(x->kind)) && x->bytes_total &&
            (!empty || balance_fill(x) < balance_fill(empty)))
            empty = x;
    }
    bool *tried = calloc(r->nt, sizeof(*tried)); /* fullest OSTs with nothing to give */
    struct file *f = NULL;
    while (tried && !f) {
        struct stria_target *full = NULL;
        for (size_t i = 0; i < r->nt; i++) {
            struct stria_target *x = &r->t[i];
            if (x->online && !strncmp(x->kind, "OST", sizeof(x->kind)) && x->bytes_total &&
                !tried[i] && (!full || balance_fill(x) > balance_fill(full)))
                full = x;
        }
        if (!full || full == empty || balance_off(full, mean) <= r->threshold)
            break;
        tried[full - r->t] = true;
        uint64_t gap =
            full->bytes_used > empty->bytes_used ? full->bytes_used - empty->bytes_used : 0;
        if ((f = pick(r, full->index, gap, bytes))) {
            *src = full;
            *dst = empty;
        }
    }
    free(tried);
    return f;
}

/* Migrate f into a layout of its shape whose stripes start at OST dst. */
static int move(struct rb *r, struct file *f, uint32_t dst)
{
    struct stria_layout *l = malloc(sizeof(*l));
    if (!l)
        return -ENOMEM;
    int rc = stria_getstripe(r->fs, f->path, l);
    struct stria_comp_spec comps[STRIA_MAX_COMPONENTS];
    unsigned n = 0;
    for (uint32_t c = 0; rc == 0 && c < l->ncomp && c < STRIA_MAX_COMPONENTS; c++) {
        if (l->comp[c].on_mdt) {
            rc = -EOPNOTSUPP;
            break;
        }
        struct stria_comp_spec *s = &comps[n++];
        memset(s, 0, sizeof(*s));
        s->end = l->comp[c].end;
        s->stripe_count =
            l->comp[c].stripe_count == UINT32_MAX ? -1 : (int32_t)l->comp[c].stripe_count;
        s->stripe_size = l->comp[c].stripe_size;
        s->first_ost = (int32_t)dst;
        snprintf(s->pool, sizeof(s->pool), "%s", l->comp[c].pool);
    }
    free(l);
    if (rc)
        return rc;
    char why[256] = "";
    r->file_done = 0;
    rc = stria_migrate(r->fs, f->path, n, comps, throttle, r, why, sizeof(why));
    if (rc)
        fprintf(stderr, "%s: %s: %s\n", r->cmd, f->path, why[0] ? why : strerror(-rc));
    return rc;
}

static int run(struct rb *r)
{
    size_t failed = 0;
    for (;;) {
        struct stria_target *full, *empty;
        uint64_t bytes;
        struct file *f = next_move(r, &full, &empty, &bytes);
        if (!f)
            break;
        f->done = true;
        if (r->verbose || r->dry)
            printf("%s: %s: %" PRIu64 " MiB off OST%04" PRIx32 " to OST%04" PRIx32 "\n", r->cmd,
                   f->path, bytes >> 20, full->index, empty->index);
        if (!r->dry && move(r, f, empty->index)) {
            failed++;
            continue;
        }
        r->moved++;
        if (r->dry) {
            /* What it would carry: off its OSTs, onto the emptiest. */
            for (uint32_t k = 0; k < f->nshares; k++) {
                struct stria_target *o = ost(r, f->shares[k].ost);
                uint64_t b = f->shares[k].bytes;
                if (o)
                    o->bytes_used -= o->bytes_used < b ? o->bytes_used : b;
                empty->bytes_used += b;
            }
            continue;
        }
        /* The OSTs measured again: where the allocator put the stripes. */
        struct stria_target *t;
        size_t nt;
        if (stria_targets(r->fs, &t, &nt) == 0) {
            free(r->t);
            r->t = t;
            r->nt = nt;
        }
    }
    if (r->bar && r->copied)
        fputc('\n', stderr);
    double mean = balance_mean(r->t, r->nt);
    double worst = 0;
    for (size_t i = 0; i < r->nt; i++)
        if (r->t[i].online && !strncmp(r->t[i].kind, "OST", sizeof(r->t[i].kind))) {
            double off = balance_off(&r->t[i], mean);
            worst = off > worst ? off : -off > worst ? -off : worst;
        }
    double secs = (double)((int64_t)util_now_mono_ns() - r->start_ns) / 1e9;
    printf("%s: %zu file(s) %s, %" PRIu64 " MiB in %.1f s; %zu failed; the fullest OST is now "
           "%.0f%% from the mean (threshold %.0f%%)%s\n",
           r->cmd, r->moved, r->dry ? "to move" : "moved", r->copied >> 20, secs, failed, worst,
           r->threshold,
           worst > r->threshold ? ": what is left there cannot move without overfilling another"
                                : "");
    return failed ? CLI_FAIL : CLI_OK;
}

int cmd_rebalance(int argc, char **argv)
{
    static struct rb r;
    memset(&r, 0, sizeof(r));
    r.cmd = argv[0];
    r.threshold = BALANCE_THRESHOLD_DEFAULT;
    r.bar = isatty(2) != 0;
    static const struct option longopts[] = {{"threshold", required_argument, NULL, 't'},
                                             {"max-bandwidth", required_argument, NULL, 'b'},
                                             {"dry-run", no_argument, NULL, 'n'},
                                             {"verbose", no_argument, NULL, 'v'},
                                             {NULL, 0, NULL, 0}};
    int c;
    while ((c = cli_getopt_long(argc, argv, "t:b:nv", longopts)) != -1) {
        char *end;
        switch (c) {
        case 't':
            r.threshold = strtod(optarg, &end);
            if (*end || end == optarg || !(r.threshold > 0 && r.threshold <= 1000))
                return cli_usage_error(argv[0], "invalid threshold '%s' (a percentage > 0)",
                                       optarg);
            break;
        case 'b': {
            /* RATE: bytes a second, with K/M/G (a trailing /s is taken). */
            char rate[64];
            snprintf(rate, sizeof(rate), "%s", optarg);
            size_t len = strlen(rate);
            if (len > 2 && !strcmp(rate + len - 2, "/s"))
                rate[len - 2] = 0;
            if (util_parse_size(rate, &r.rate) < 0 || r.rate == 0)
                return cli_usage_error(argv[0], "invalid bandwidth '%s' (as 100M or 1G/s)", optarg);
            break;
        }
        case 'n':
            r.dry = true;
            break;
        case 'v':
            r.verbose = true;
            break;
        default:
            return cli_usage_error(argv[0], NULL);
        }
    }
    if (argc - optind > 1)
        return cli_usage_error(argv[0], "at most one PATH");
    char path[CLI_PATH_MAX] = "/";
    if (optind < argc && cli_stria_path(argv[0], argv[optind], path, sizeof(path)) < 0)
        return CLI_FAIL;
    if (cli_connect(&r.fs) < 0)
        return CLI_FAIL;
    /* Every file first: each move takes the one that keeps the most on
     * the fullest OST of the moment, which only the whole list tells.
     * A tree that cannot be listed whole moves nothing. */
    size_t errors = 0;
    int rc = stria_targets(r.fs, &r.t, &r.nt);
    if (rc)
        fprintf(stderr, "%s: %s\n", argv[0], strerror(-rc));
    else
        rc = cli_walk_files(r.fs, argv[0], path, on_file, &r, &errors);
    int ret = CLI_FAIL;
    if (rc == 0 && errors == 0) {
        r.start_ns = (int64_t)util_now_mono_ns();
        ret = run(&r);
    }
    for (size_t i = 0; i < r.n; i++) {
        free(r.v[i].path);
        free(r.v[i].shares);
    }
    free(r.v);
    free(r.t);
    stria_disconnect(r.fs);
    return ret;
}
