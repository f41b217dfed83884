/*
 * stria setstripe, getstripe and df: layouts and capacity.
 *
 * The output copies Lustre's `lfs getstripe` and `lfs df` column for
 * column, so scripts and people used to Lustre can read it unchanged.
 * Stria names an object by its file's inode, so the objid of every stripe
 * is the inode number and the group is always 0.
 *
 * Layout arguments are checked (args.c) before anything is sent.
 */
#include "args.h"
#include "commands.h"
#include "connect.h"
#include "paths.h"
#include "balance.h"
#include "pools.h"

#include "../common/util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* -i OFFSET of setstripe. */
static int parse_offset(const char *cmd, const char *arg, int32_t *out)
{
    int64_t v;
    if (util_parse_i64(arg, &v) < 0 || v < -1 || v > INT32_MAX)
        return cli_usage_error(cmd, "invalid OST index '%s' (-1 for any)", arg);
    *out = (int32_t)v;
    return 0;
}

/* ---- setstripe ---- */

/* setstripe -E END [-c N] [-S SIZE] [-i OST] -E ... PATH...: a composite
 * layout, its options up to the first argument that is none of them. */
static int setstripe_comps(int argc, char **argv)
{
    struct stria_comp_spec comps[STRIA_MAX_COMPONENTS];
    unsigned n = 0;
    char why[256];
    int k = 1;
    while (k + 1 < argc &&
           (!strcmp(argv[k], "-E") || !strcmp(argv[k], "-c") || !strcmp(argv[k], "-S") ||
            !strcmp(argv[k], "-i") || !strcmp(argv[k], "-p") || !strcmp(argv[k], "--pool") ||
            !strcmp(argv[k], "-L"))) {
        if (!strcmp(argv[k], "--pool"))
            argv[k] = "-p";
        k += 2;
    }
    if (stria_comps_parse(k - 1, argv + 1, comps, STRIA_MAX_COMPONENTS, &n, why, sizeof(why)))
        return cli_usage_error(argv[0], "%s", why);
    if (k == argc)
        return cli_usage_error(argv[0], "missing PATH");
    stria_fs_t *fs;
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    int ret = CLI_OK, rc;
    /* Each pool named, for an error that names it. */
    for (int i = 1; i + 1 < k; i += 2)
        if (!strcmp(argv[i], "-p") && strcmp(argv[i + 1], "none") &&
            (rc = cli_pool_find(fs, argv[0], argv[i + 1], NULL, NULL))) {
            stria_disconnect(fs);
            return rc;
        }
    for (int i = k; i < argc; i++) {
        char path[CLI_PATH_MAX];
        if (cli_stria_path(argv[0], argv[i], path, sizeof(path)) < 0) {
            ret = CLI_FAIL;
            continue;
        }
        if ((rc = stria_setstripe_comps(fs, path, n, comps)) < 0) {
            cli_stripe_error(argv[0], path, rc);
            ret = CLI_FAIL;
        }
    }
    stria_disconnect(fs);
    return ret;
}

int cmd_setstripe(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-E"))
            return setstripe_comps(argc, argv);
    int32_t count = 0, offset = -1;
    uint32_t size = 0;
    int c, rc, given = 0, ret = CLI_OK;
    const char *pool = NULL;
    stria_fs_t *fs;
    static const struct option longopts[] = {{"pool", required_argument, NULL, 'p'},
                                             {NULL, 0, NULL, 0}};

    while ((c = cli_getopt_long(argc, argv, "c:S:i:p:", longopts)) != -1) {
        switch (c) {
        case 'p':
            pool = optarg;
            rc = 0;
            break;
        case 'c':
            rc = cli_parse_stripe_count(argv[0], optarg, &count);
            break;
        case 'S':
            rc = cli_parse_stripe_size(argv[0], optarg, &size);
            break;
        case 'i':
            rc = parse_offset(argv[0], optarg, &offset);
            break;
        default:
            return cli_usage_error(argv[0], NULL);
        }
        if (rc != 0)
            return rc;
        given = 1;
    }
    if (!given)
        return cli_usage_error(argv[0], "give at least one of -c, -S, -i and -p");
    if (optind == argc)
        return cli_usage_error(argv[0], "missing PATH");
    /* In a pool: one component to EOF, as lfs makes it. */
    struct stria_comp_spec one = {UINT64_MAX, count, size, offset, "", 0};
    if (pool && !strcmp(pool, "none"))
        pool = NULL;
    if (pool) {
        const char *dot = strchr(pool, '.');
        snprintf(one.pool, sizeof(one.pool), "%s", dot ? dot + 1 : pool);
    }
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    if (pool && (rc = cli_pool_find(fs, argv[0], pool, NULL, NULL))) {
        stria_disconnect(fs);
        return rc;
    }
    for (int i = optind; i < argc; i++) {
        char path[CLI_PATH_MAX];
        if (cli_stria_path(argv[0], argv[i], path, sizeof(path)) < 0) {
            ret = CLI_FAIL;
            continue;
        }
        rc = pool ? stria_setstripe_comps(fs, path, 1, &one)
                  : stria_setstripe(fs, path, count, size, offset);
        if (rc < 0) {
            cli_stripe_error(argv[0], path, rc);
            ret = CLI_FAIL;
        }
    }
    stria_disconnect(fs);
    return ret;
}

/* ---- getstripe ---- */

/* lfs prints a component's pool after its first OST, when it has one. */
static void print_pool(const struct stria_layout *l, uint32_t i, const char *indent)
{
    if (l->comp[i].pool[0])
        printf("%slmm_pool:          %.15s\n", indent, l->comp[i].pool);
}

/* One component in lfs's plain format, objects table included. */
static void print_component(const struct stria_layout *l, uint32_t i, uint64_t ino,
                            const char *indent)
{
    uint32_t n = l->comp[i].stripe_count;
    if (!l->comp[i].init) {
        /* What it asks for; lfs prints the same for a component not
         * instantiated (-1: all OSTs, 0: the default). */
        printf("%slmm_stripe_count:  %d\n", indent, n == UINT32_MAX ? -1 : (int)n);
        printf("%slmm_stripe_size:   %" PRIu32 "\n", indent, l->comp[i].stripe_size);
        printf("%slmm_pattern:       %s\n", indent, l->comp[i].on_mdt ? "mdt" : "raid0");
        printf("%slmm_layout_gen:    0\n", indent);
        printf("%slmm_stripe_offset: %d\n", indent, l->comp[i].first_ost);
        print_pool(l, i, indent);
        putchar('\n');
        return;
    }
    if (l->comp[i].on_mdt) {
        /* On the file's MDT: lfs prints no objects for it. */
        printf("%slmm_stripe_count:  0\n", indent);
        printf("%slmm_stripe_size:   %" PRIu32 "\n", indent, l->comp[i].stripe_size);
        printf("%slmm_pattern:       mdt\n", indent);
        printf("%slmm_layout_gen:    0\n", indent);
        printf("%slmm_stripe_offset: 0\n\n", indent);
        return;
    }
    if (n > STRIA_MAX_STRIPES)
        n = STRIA_MAX_STRIPES;
    printf("%slmm_stripe_count:  %" PRIu32 "\n", indent, n);
    printf("%slmm_stripe_size:   %" PRIu32 "\n", indent, l->comp[i].stripe_size);
    printf("%slmm_pattern:       raid0\n", indent);
    printf("%slmm_layout_gen:    0\n", indent);
    printf("%slmm_stripe_offset: %" PRId64 "\n", indent, n ? (int64_t)l->comp[i].ost[0] : -1);
    print_pool(l, i, indent);
    if (n == 0)
        return;
    printf("\tobdidx\t\t objid\t\t objid\t\t group\n");
    for (uint32_t s = 0; s < n; s++)
        printf("\t%6" PRIu32 "\t%14" PRIu64 "\t%#13" PRIx64 "\t%14d\n", l->comp[i].ost[s], ino, ino,
               0);
    putchar('\n');
}

/* Several components (a progressive layout): lfs's composite header, then
 * each component's extent and stripes. */
static void print_composite(const struct stria_layout *l, uint32_t ncomp, uint64_t ino)
{
    printf("  lcm_layout_gen:    0\n");
    printf("  lcm_mirror_count:  1\n");
    printf("  lcm_entry_count:   %" PRIu32 "\n", ncomp);
    for (uint32_t i = 0; i < ncomp; i++) {
        printf("    lcme_id:             %" PRIu32 "\n", i + 1);
        printf("    lcme_flags:          %s\n", l->comp[i].init ? "init" : "0");
        printf("    lcme_extent.e_start: %" PRIu64 "\n", l->comp[i].start);
        if (l->comp[i].end == UINT64_MAX)
            printf("    lcme_extent.e_end:   EOF\n");
        else
            printf("    lcme_extent.e_end:   %" PRIu64 "\n", l->comp[i].end);
        print_component(l, i, ino, "      ");
    }
}

static void print_file_layout(const char *path, const struct stria_layout *l, uint64_t ino)
{
    uint32_t ncomp = l->ncomp > STRIA_MAX_COMPONENTS ? STRIA_MAX_COMPONENTS : l->ncomp;
    if (ncomp == 0) {
        printf("%s has no stripe info\n", path);
        return;
    }
    printf("%s\n", path);
    if (ncomp == 1)
        print_component(l, 0, ino, "");
    else
        print_composite(l, ncomp, ino);
}

/* A directory's default for new files; 0 means "inherit from the parent". */
static void print_dir_layout(const char *path, const struct stria_layout *l)
{
    printf("%s\n", path);
    if (l->ncomp) {
        print_composite(l, MIN(l->ncomp, (uint32_t)STRIA_MAX_COMPONENTS), 0);
        return;
    }
    printf("stripe_count:  %" PRId32 "%s ", l->dir_stripe_count,
           l->dir_stripe_count == 0 ? " (inherit)" : "");
    printf("stripe_size:   %" PRIu32 "%s ", l->dir_stripe_size,
           l->dir_stripe_size == 0 ? " (inherit)" : "");
    printf("pattern:       raid0 stripe_offset: %" PRId32 "\n", l->dir_stripe_offset);
}

/* getstripe's queries: one figure per path, as lfs getstripe -c/-S/-i
 * print (of the last instantiated component of a composite file). */
enum { Q_NONE, Q_COUNT, Q_SIZE, Q_INDEX, Q_COMPS, Q_POOL };
static int query;

static void print_query(const struct stria_layout *l)
{
    if (query == Q_COMPS) {
        printf("%u\n", l->is_dir ? l->ncomp : MIN(l->ncomp, (uint32_t)STRIA_MAX_COMPONENTS));
        return;
    }
    if (l->is_dir && !l->ncomp && query == Q_POOL) {
        putchar('\n');
        return;
    }
    if (l->is_dir && !l->ncomp) {
        printf("%d\n", query == Q_COUNT  ? l->dir_stripe_count
                       : query == Q_SIZE ? (int)l->dir_stripe_size
                                         : l->dir_stripe_offset);
        return;
    }
    uint32_t i = 0;
    for (uint32_t k = 0; k < l->ncomp && k < STRIA_MAX_COMPONENTS; k++)
        if (l->comp[k].init || l->is_dir)
            i = k;
    uint32_t n = l->comp[i].stripe_count;
    if (query == Q_COUNT)
        printf("%d\n", n == UINT32_MAX ? -1 : (int)n);
    else if (query == Q_SIZE)
        printf("%" PRIu32 "\n", l->comp[i].stripe_size);
    else if (query == Q_POOL)
        printf("%.15s\n", l->comp[i].pool);
    else
        printf("%d\n", l->comp[i].first_ost);
}

static int getstripe_one(stria_fs_t *fs, const char *cmd, const char *path)
{
    struct stria_layout l;
    struct stat st;
    int rc = stria_getstripe(fs, path, &l);
    if (rc == 0 && !l.is_dir)
        rc = stria_stat(fs, path, &st);
    if (rc < 0) {
        cli_error(cmd, path, rc);
        return CLI_FAIL;
    }
    if (query != Q_NONE)
        print_query(&l);
    else if (l.is_dir)
        print_dir_layout(path, &l);
    else
        print_file_layout(path, &l, (uint64_t)st.st_ino);
    return CLI_OK;
}

int cmd_getstripe(int argc, char **argv)
{
    static const struct option opts[] = {
        {"stripe-count", no_argument, NULL, 'c'}, {"stripe-size", no_argument, NULL, 'S'},
        {"stripe-index", no_argument, NULL, 'i'}, {"component-count", no_argument, NULL, 'N'},
        {"pool", no_argument, NULL, 'p'},         {NULL, 0, NULL, 0}};
    int c;
    query = Q_NONE;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+cSip", opts, NULL)) != -1) {
        int q = c == 'c'   ? Q_COUNT
                : c == 'S' ? Q_SIZE
                : c == 'i' ? Q_INDEX
                : c == 'N' ? Q_COMPS
                : c == 'p' ? Q_POOL
                           : -1;
        if (q < 0)
            return cli_usage_error(argv[0], NULL);
        if (query != Q_NONE && query != q)
            return cli_usage_error(argv[0], "give one of -c, -S, -i, -p and --component-count");
        query = q;
    }
    if (optind == argc)
        return cli_usage_error(argv[0], "missing PATH");
    stria_fs_t *fs;
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    int ret = CLI_OK;
    for (int i = optind; i < argc; i++) {
        char path[CLI_PATH_MAX];
        if (cli_stria_path(argv[0], argv[i], path, sizeof(path)) < 0 ||
            getstripe_one(fs, argv[0], path) != CLI_OK)
            ret = CLI_FAIL;
    }
    stria_disconnect(fs);
    return ret;
}

/* ---- df ---- */

struct df_opts {
    int inodes, human;
    double threshold; /* an OST this far (percent of the mean fill) from it is flagged */
};

/* MDTs first, then OSTs, each by index. */
static int target_cmp(const void *a, const void *b)
{
    const struct stria_target *x = a, *y = b;
    int kind = strncmp(x->kind, y->kind, sizeof(x->kind));
    if (kind)
        return kind;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* One figure: human-readable bytes or inodes with -h, else 1K blocks or
 * an inode count. */
static const char *df_num(uint64_t v, const struct df_opts *o, char *buf, size_t len)
{
    if (o->human)
        return util_fmt_size(v, buf, len);
    snprintf(buf, len, "%" PRIu64, o->inodes ? v : v / 1024);
    return buf;
}

/* Use% as df(1) and lfs df: rounded up, of what is used or available. */
static int df_percent(uint64_t used, uint64_t avail)
{
    double total = (double)used + (double)avail;
    if (total <= 0)
        return 0;
    double pct = (double)used * 100.0 / total;
    int whole = (int)pct;
    return pct > whole ? whole + 1 : whole;
}

static void df_row(const char *uuid, uint64_t total, uint64_t used, uint64_t avail,
                   const char *mounted, const struct df_opts *o)
{
    char t[32], u[32], a[32];
    printf("%-20s %11s %11s %11s %3d%% %s\n", uuid, df_num(total, o, t, sizeof(t)),
           df_num(used, o, u, sizeof(u)), df_num(avail, o, a, sizeof(a)), df_percent(used, avail),
           mounted);
}

static void df_target(const char *fsname, const struct stria_target *t, const struct df_opts *o)
{
    char uuid[128], mounted[128];
    snprintf(uuid, sizeof(uuid), "%s-%.4s%04" PRIx32 "_UUID", fsname, t->kind, t->index);
    if (!t->online) {
        printf("%-20s : offline device\n", uuid);
        return;
    }
    snprintf(mounted, sizeof(mounted), "%s[%.4s:%" PRIu32 "]", fsname, t->kind, t->index);
    if (o->inodes) {
        uint64_t ifree = t->inodes_total > t->inodes_used ? t->inodes_total - t->inodes_used : 0;
        df_row(uuid, t->inodes_total, t->inodes_used, ifree, mounted, o);
    } else {
        df_row(uuid, t->bytes_total, t->bytes_used, t->bytes_avail, mounted, o);
    }
}

/* The summary counts online targets only: space is the OSTs', and inodes
 * are the MDTs' since every file needs one there. */
static void df_summary(const char *fsname, const struct stria_target *t, size_t n,
                       const struct df_opts *o)
{
    const char *kind = o->inodes ? "MDT" : "OST";
    uint64_t total = 0, used = 0, avail = 0;
    for (size_t i = 0; i < n; i++) {
        if (!t[i].online || strncmp(t[i].kind, kind, sizeof(t[i].kind)) != 0)
            continue;
        if (o->inodes) {
            total += t[i].inodes_total;
            used += t[i].inodes_used;
            avail +=
                t[i].inodes_total > t[i].inodes_used ? t[i].inodes_total - t[i].inodes_used : 0;
        } else {
            total += t[i].bytes_total;
            used += t[i].bytes_used;
            avail += t[i].bytes_avail;
        }
    }
    putchar('\n');
    df_row("filesystem_summary:", total, used, avail, fsname, o);
}

static void df_print(const char *fsname, struct stria_target *t, size_t n, const struct df_opts *o)
{
    const char *total = o->inodes ? "Inodes" : o->human ? "bytes" : "1K-blocks";
    printf("%-20s %11s %11s %11s %4s %s\n", "UUID", total, o->inodes ? "IUsed" : "Used",
           o->inodes ? "IFree" : "Available", o->inodes ? "IUse%" : "Use%", "Mounted on");
    qsort(t, n, sizeof(*t), target_cmp);
    for (size_t i = 0; i < n; i++)
        df_target(fsname, &t[i], o);
    df_summary(fsname, t, n, o);
}

/* What each MDT keeps of file data (Data-on-MDT) and may keep (its
 * dom_max), after the table: lfs df has no such column, and scripts that
 * read df's rows by UUID see these rows as none of theirs. */
static void df_dom(stria_fs_t *fs, const char *fsname, const struct stria_target *t, size_t n,
                   const struct df_opts *o)
{
    bool head = false;
    for (size_t i = 0; i < n; i++) {
        uint64_t used, max;
        if (!t[i].online || strncmp(t[i].kind, "MDT", sizeof(t[i].kind)) != 0 ||
            stria_mdt_dom(fs, t[i].index, &used, &max) != 0)
            continue;
        if (!head) {
            printf("\n%-20s %11s %11s %4s\n", "Data-on-MDT", "Used", "dom_max", "Use%");
            head = true;
        }
        char name[128], u[32], m[32];
        snprintf(name, sizeof(name), "%s-MDT%04" PRIx32, fsname, t[i].index);
        if (max)
            printf("%-20s %11s %11s %3d%%\n", name, df_num(used, o, u, sizeof(u)),
                   df_num(max, o, m, sizeof(m)), df_percent(used, used < max ? max - used : 0));
        else
            printf("%-20s %11s %11s %4s\n", name, df_num(used, o, u, sizeof(u)), "off", "-");
    }
}

/* df --pool: the MDTs and the pool's OSTs, as lfs df --pool; returns how
 * many of t are left (at its start). */
static size_t df_pool_only(struct stria_target *t, size_t n, const uint32_t *osts, size_t nosts)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool keep = strncmp(t[i].kind, "OST", sizeof(t[i].kind)) != 0;
        for (size_t j = 0; j < nosts && !keep; j++)
            keep = osts[j] == t[i].index;
        if (keep)
            t[k++] = t[i];
    }
    return k;
}

int cmd_df(int argc, char **argv)
{
    struct df_opts o = {.threshold = BALANCE_THRESHOLD_DEFAULT};
    struct stria_target *t = NULL;
    char fsname[64];
    uint64_t epoch;
    size_t n = 0;
    stria_fs_t *fs;
    int c, rc;

    const char *pool = NULL;
    static const struct option longopts[] = {{"pool", required_argument, NULL, 'p'},
                                             {"threshold", required_argument, NULL, 't'},
                                             {NULL, 0, NULL, 0}};
    while ((c = cli_getopt_long(argc, argv, "ihp:", longopts)) != -1) {
        char *end;
        switch (c) {
        case 'p':
            pool = optarg;
            break;
        case 't':
            o.threshold = strtod(optarg, &end);
            if (*end || end == optarg || !(o.threshold > 0 && o.threshold <= 1000))
                return cli_usage_error(argv[0], "invalid threshold '%s' (a percentage > 0)",
                                       optarg);
            break;
        case 'i':
            o.inodes = 1;
            break;
        case 'h':
            o.human = 1;
            break;
        default:
            return cli_usage_error(argv[0], NULL);
        }
    }
    if (optind != argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    uint32_t *members = NULL;
    size_t nmembers = 0;
    if (pool && (rc = cli_pool_find(fs, argv[0], pool, &members, &nmembers))) {
        stria_disconnect(fs);
        return rc;
    }
    rc = stria_cluster_info(fs, fsname, sizeof(fsname), &epoch);
    if (rc == 0)
        rc = stria_targets(fs, &t, &n);
    if (rc < 0)
        fprintf(stderr, "stria df: cannot read the cluster's targets: %s\n", strerror(-rc));
    if (rc == 0 && pool)
        n = df_pool_only(t, n, members, nmembers);
    if (rc == 0) {
        df_print(fsname, t, n, &o);
        if (!o.inodes) {
            df_dom(fs, fsname, t, n, &o);
            balance_report(t, n, o.threshold);
        }
    }
    free(members);
    /* What data repositories hold in S3 only (stria hsm release). */
    uint64_t rbytes = 0, rfiles = 0;
    if (rc == 0 && stria_released(fs, &rbytes, &rfiles) == 0 && rfiles) {
        if (o.human)
            printf("released: %" PRIu64 " files, %.1fG in S3 only\n", rfiles,
                   (double)rbytes / (1u << 30));
        else
            printf("released: %" PRIu64 " files, %" PRIu64 " 1K-blocks in S3 only\n", rfiles,
                   (rbytes + 1023) / 1024);
    }
    free(t);
    stria_disconnect(fs);
    return rc < 0 ? CLI_FAIL : CLI_OK;
}
