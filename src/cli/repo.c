/*
 * stria repo: data repositories on S3 (docs/operations.md, "Data
 * repositories"). add links a directory to s3://BUCKET/PREFIX and imports
 * the listing as released files, whose data the storage hosts fetch at
 * their first read; import and sync bring the listing up to date; list,
 * remove and policy manage the links. Secrets never pass through here: the
 * storage hosts sign their requests with their own credentials.
 */
#include "args.h"
#include "commands.h"
#include "connect.h"
#include "paths.h"
#include "repos.h"

#include "../common/util.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A policy list: a comma-separated subset of new, changed, deleted. */
static int check_policy(const char *s)
{
    char buf[64];
    if (strlen(s) >= sizeof(buf))
        return -EINVAL;
    strcpy(buf, s);
    if (!*buf || !strcmp(buf, "none"))
        return 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (strcmp(t, "new") && strcmp(t, "changed") && strcmp(t, "deleted"))
            return -EINVAL;
    return 0;
}

/* A duration: seconds, or with s, m, h or d. */
static int parse_duration(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0)
        return -EINVAL;
    int64_t mul = 1;
    if (*end == 's')
        end++;
    else if (*end == 'm')
        mul = 60, end++;
    else if (*end == 'h')
        mul = 3600, end++;
    else if (*end == 'd')
        mul = 86400, end++;
    if (*end || v > INT64_MAX / mul / 1000000000)
        return -EINVAL;
    *out = v * mul;
    return 0;
}

/* ---- a pass's messages ---- */

static void on_note(const char *line, void *arg)
{
    (void)arg;
    fprintf(stderr, "stria repo: %s\n", line);
}

static void on_listed(uint64_t seen, void *arg)
{
    (void)arg;
    if (isatty(2))
        fprintf(stderr, "\rstria repo: %" PRIu64 " objects listed", seen);
}

/* Bring r's files up to date with its listing (sync: with its import
 * policy; else new objects only, as a first import). */
static int run_import(stria_fs_t *fs, struct stria_repo *r, bool sync)
{
    struct stria_pass p = {.note = on_note, .progress = on_listed};
    struct stria_sync_stats st;
    char why[512] = "";
    double t0 = (double)util_now_mono_ns() / 1e9;
    int rc = stria_repo_import(fs, r, sync ? STRIA_SYNC_POLICY : 0, &p, &st, why, sizeof(why));
    if (isatty(2) && st.seen)
        fputc('\n', stderr);
    if (rc) {
        fprintf(stderr, "stria repo: listing s3://%s/%s failed: %s\n", r->bucket, r->prefix,
                why[0] ? why : strerror(-rc));
        return CLI_FAIL;
    }
    double dt = (double)util_now_mono_ns() / 1e9 - t0;
    printf("%s: %" PRIu64 " objects: %" PRIu64 " new, %" PRIu64 " updated, %" PRIu64
           " unchanged, %" PRIu64 " kept (changed here), %" PRIu64 " removed, %" PRIu64
           " skipped, %" PRIu64 " failed in %.2f s (%.0f objects/s)\n",
           r->path, st.seen, st.imported, st.updated, st.unchanged, st.kept, st.removed, st.skipped,
           st.failed, dt, dt > 0 ? (double)st.seen / dt : 0);
    if (st.reaped)
        printf("%s: %" PRIu64 " superseded files freed (kept %" PRId64 " s for their readers)\n",
               r->path, st.reaped, stria_repo_int(r, "keep_old", 3600));
    return st.failed ? CLI_FAIL : CLI_OK;
}

/* One export pass, as the policy engine runs it (now: without waiting
 * for files to be quiet for export_delay). */
static int run_export(stria_fs_t *fs, const struct stria_repo *r, bool now)
{
    struct stria_pass p = {.note = on_note};
    struct stria_export_stats st;
    double t0 = (double)util_now_mono_ns() / 1e9;
    if (!stria_repo_has(r, "export_policy", "new") &&
        !stria_repo_has(r, "export_policy", "changed") &&
        !stria_repo_has(r, "export_policy", "deleted")) {
        fprintf(stderr,
                "stria repo: %s has no export policy (stria repo policy %s "
                "--export-policy new,changed,deleted)\n",
                r->path, r->path);
        return CLI_FAIL;
    }
    int rc = stria_repo_export(fs, r, now ? 0 : stria_repo_int(r, "export_delay", 30), &p, &st);
    double dt = (double)util_now_mono_ns() / 1e9 - t0;
    if (rc)
        fprintf(stderr, "stria repo: export of %s stopped: %s\n", r->path, strerror(-rc));
    printf("%s: exported %" PRIu64 " files, %.1f MiB; %" PRIu64 " waiting, %" PRIu64
           " objects deleted, %" PRIu64 " failed in %.2f s\n",
           r->path, st.files, (double)st.bytes / 1048576.0, st.waiting, st.deleted, st.failed, dt);
    return rc || st.failed ? CLI_FAIL : CLI_OK;
}

/* ---- the settings add and policy share ---- */

/* The policy options, as given (NULL: not given). */
struct settings {
    const char *ipol, *xpol, *interval, *delay, *release_after, *keep_free, *keep_old;
};

#define SETTING_OPTIONS                                                                            \
    {"import-policy", required_argument, NULL, 'i'},                                               \
        {"export-policy", required_argument, NULL, 'x'},                                           \
        {"sync-interval", required_argument, NULL, 's'},                                           \
        {"export-delay", required_argument, NULL, 'd'},                                            \
        {"release-after", required_argument, NULL, 'R'},                                           \
        {"keep-old", required_argument, NULL, 'O'},                                                \
    {                                                                                              \
        "keep-free", required_argument, NULL, 'k'                                                  \
    }

/* Take option c into st; false: c is not a setting. */
static bool setting_opt(struct settings *st, int c)
{
    const char **slot = c == 'i'   ? &st->ipol
                        : c == 'x' ? &st->xpol
                        : c == 's' ? &st->interval
                        : c == 'd' ? &st->delay
                        : c == 'R' ? &st->release_after
                        : c == 'k' ? &st->keep_free
                        : c == 'O' ? &st->keep_old
                                   : NULL;
    if (slot)
        *slot = optarg;
    return slot != NULL;
}

/* Check st and write what it gives into r's conf (CLI_FAIL after saying
 * what is wrong). */
static int put_settings(struct stria_repo *r, const struct settings *st)
{
    int64_t v;
    char buf[32];
    int rc = 0;
    if ((st->ipol && check_policy(st->ipol)) || (st->xpol && check_policy(st->xpol)))
        return cli_usage_error("repo", "a policy is a list of new, changed, deleted (or none)");
    const struct {
        const char *arg, *name, *what;
        int64_t max;
    } d[] = {
        {st->interval, "sync_interval", "--sync-interval (0: only stria repo sync)", 86400 * 365},
        {st->delay, "export_delay", "--export-delay", 86400 * 365},
        {st->release_after, "release_after", "--release-after (0: never)", 86400LL * 36500},
        {st->keep_old, "keep_old", "--keep-old", 86400 * 365},
    };
    for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
        if (!d[i].arg)
            continue;
        if (parse_duration(d[i].arg, &v) || v > d[i].max)
            return cli_usage_error("repo", "%s is a duration (90, 30m, 12h, 7d)", d[i].what);
        snprintf(buf, sizeof(buf), "%" PRId64, v);
        if (!rc)
            rc = stria_repo_set(r, d[i].name, v || strcmp(d[i].name, "release_after") ? buf : NULL);
    }
    if (st->keep_free) {
        if (util_parse_i64(st->keep_free, &v) < 0 || v < 0 || v > 99)
            return cli_usage_error("repo", "--keep-free is a percentage, 0 to 99");
        snprintf(buf, sizeof(buf), "%" PRId64, v);
        if (!rc)
            rc = stria_repo_set(r, "keep_free", v ? buf : NULL);
    }
    if (!rc && st->ipol)
        rc = stria_repo_set(r, "import_policy", st->ipol[0] ? st->ipol : "none");
    if (!rc && st->xpol)
        rc = stria_repo_set(r, "export_policy", st->xpol[0] ? st->xpol : "none");
    if (rc) {
        fprintf(stderr, "stria repo: the repository's settings are too long\n");
        return CLI_FAIL;
    }
    return CLI_OK;
}

static void print_settings(const struct stria_repo *r)
{
    char ip[64] = "", xp[64] = "", ra[32] = "", kf[32] = "";
    stria_repo_value(r->conf, r->len, "import_policy", ip, sizeof(ip));
    stria_repo_value(r->conf, r->len, "export_policy", xp, sizeof(xp));
    stria_repo_value(r->conf, r->len, "release_after", ra, sizeof(ra));
    stria_repo_value(r->conf, r->len, "keep_free", kf, sizeof(kf));
    printf("import=%s export=%s sync_interval=%" PRId64 " export_delay=%" PRId64
           " keep_old=%" PRId64,
           ip, xp, stria_repo_int(r, "sync_interval", 0), stria_repo_int(r, "export_delay", 30),
           stria_repo_int(r, "keep_old", 3600));
    if (ra[0])
        printf(" release_after=%s", ra);
    if (kf[0])
        printf(" keep_free=%s%%", kf);
}

/* ---- the subcommands ---- */

static const struct option add_opts[] = {{"endpoint", required_argument, NULL, 'e'},
                                         {"region", required_argument, NULL, 'r'},
                                         {"addressing", required_argument, NULL, 'a'},
                                         {"no-import", no_argument, NULL, 'n'},
                                         SETTING_OPTIONS,
                                         {NULL, 0, NULL, 0}};

static int repo_add(int argc, char **argv)
{
    struct stria_repo *r = calloc(1, sizeof(*r));
    const char *endpoint = "", *region = "", *addressing = NULL;
    struct settings set = {0};
    bool import = true;
    int c, ret = CLI_FAIL;
    if (!r)
        return CLI_FAIL;
    optind = 1;
    opterr = 1;
    while ((c = getopt_long(argc, argv, "", add_opts, NULL)) != -1) {
        if (c == 'e')
            endpoint = optarg;
        else if (c == 'r')
            region = optarg;
        else if (c == 'a')
            addressing = optarg;
        else if (c == 'n')
            import = false;
        else if (!setting_opt(&set, c)) {
            free(r);
            return cli_usage_error("repo", NULL);
        }
    }
    if (argc - optind != 2) {
        free(r);
        return cli_usage_error("repo", "repo add takes PATH and s3://BUCKET/PREFIX");
    }
    const char *url = argv[optind + 1];
    char bucket[256], prefix[1025], path[CLI_PATH_MAX];
    const char *b = url + 5, *slash;
    if (strncmp(url, "s3://", 5) || !*b || *b == '/' ||
        (size_t)((slash = strchr(b, '/')) ? slash - b : (ptrdiff_t)strlen(b)) >= sizeof(bucket)) {
        free(r);
        return cli_usage_error("repo", "'%s' is not s3://BUCKET/PREFIX", url);
    }
    size_t bl = slash ? (size_t)(slash - b) : strlen(b);
    memcpy(bucket, b, bl);
    bucket[bl] = 0;
    snprintf(prefix, sizeof(prefix), "%s", slash ? slash + 1 : "");
    if (prefix[0] && prefix[strlen(prefix) - 1] != '/' && strlen(prefix) + 1 < sizeof(prefix))
        strcat(prefix, "/");
    if (addressing && strcmp(addressing, "path") && strcmp(addressing, "virtual")) {
        free(r);
        return cli_usage_error("repo", "--addressing is path or virtual");
    }
    if (endpoint[0] && strncmp(endpoint, "http://", 7) && strncmp(endpoint, "https://", 8)) {
        free(r);
        return cli_usage_error("repo", "--endpoint is http://HOST[:PORT] or https://...");
    }
    /* AWS itself is addressed by virtual host; other endpoints by path. */
    if (!addressing)
        addressing = endpoint[0] ? "path" : "virtual";
    r->len = (size_t)snprintf(r->conf, sizeof(r->conf),
                              "path=/\nbucket=%s\nprefix=%s\nendpoint=%s\nregion=%s\n"
                              "addressing=%s\nimport_policy=new\nexport_policy=none\n"
                              "sync_interval=0\nexport_delay=30\ngen=0\n",
                              bucket, prefix, endpoint, region, addressing);
    if (r->len >= sizeof(r->conf) || stria_repo_parse(r)) {
        fprintf(stderr, "stria repo: the repository's settings are too long\n");
        free(r);
        return CLI_FAIL;
    }
    if (put_settings(r, &set) != CLI_OK ||
        cli_stria_path("repo", argv[optind], path, sizeof(path)) < 0) {
        free(r);
        return CLI_FAIL;
    }
    stria_fs_t *fs;
    if (cli_connect(&fs) < 0) {
        free(r);
        return CLI_FAIL;
    }
    struct stat st;
    int rc = stria_stat(fs, path, &st);
    if (rc == 0 && !S_ISDIR(st.st_mode))
        rc = -ENOTDIR;
    if (rc == 0)
        rc = stria_repo_set(r, "path", path);
    if (rc) {
        cli_error("repo", argv[optind], rc);
        goto out;
    }
    r->dir = st.st_ino;
    /* The bucket must answer before the link is made. */
    char why[512] = "";
    int more;
    rc = stria_s3_list(fs, &r->t, prefix, NULL, 1, NULL, NULL, &more, why, sizeof(why));
    if (rc) {
        fprintf(stderr, "stria repo: cannot list s3://%s/%s: %s\n", bucket, prefix,
                why[0] ? why : strerror(-rc));
        goto out;
    }
    rc = stria_repo_call(fs, STRIA_REPO_ADD, r->dir, r->conf, r->len, NULL, 0, NULL);
    if (rc == -EEXIST) {
        fprintf(stderr, "stria repo: %s already has a repository (stria repo list)\n", path);
        goto out;
    }
    if (rc) {
        cli_error("repo", argv[optind], rc);
        goto out;
    }
    printf("%s: linked to s3://%s/%s\n", path, bucket, prefix);
    ret = import ? run_import(fs, r, false) : CLI_OK;
out:
    stria_disconnect(fs);
    free(r);
    return ret;
}

static int repo_list(void)
{
    stria_fs_t *fs;
    struct stria_repo *v;
    size_t n;
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    int rc = stria_repo_load(fs, &v, &n);
    if (rc) {
        fprintf(stderr, "stria repo: cannot read the repositories: %s\n", strerror(-rc));
        stria_disconnect(fs);
        return CLI_FAIL;
    }
    for (size_t i = 0; i < n; i++) {
        const struct stria_repo *r = &v[i];
        printf("%s  s3://%s/%s  endpoint=%s region=%s addressing=%s ", r->path, r->bucket,
               r->prefix, r->endpoint[0] ? r->endpoint : "aws",
               r->region[0] ? r->region : "us-east-1", r->vhost ? "virtual" : "path");
        print_settings(r);
        putchar('\n');
    }
    free(v);
    stria_disconnect(fs);
    return CLI_OK;
}

static const struct option policy_opts[] = {
    SETTING_OPTIONS, {"apply", no_argument, NULL, 'a'}, {NULL, 0, NULL, 0}};

/* stria repo policy PATH [settings] [--apply]: change and show r's
 * settings; --apply runs the tiering pass now. */
static int repo_policy(int argc, char **argv)
{
    struct settings set = {0};
    bool apply = false, changed = false;
    int c;
    optind = 1;
    opterr = 1;
    while ((c = getopt_long(argc, argv, "", policy_opts, NULL)) != -1) {
        if (c == 'a')
            apply = true;
        else if (setting_opt(&set, c))
            changed = true;
        else
            return cli_usage_error("repo", NULL);
    }
    if (argc - optind != 1)
        return cli_usage_error("repo", "repo policy takes one PATH");
    stria_fs_t *fs;
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    struct stria_repo *v = NULL, *r = NULL;
    int ret = repo_find(fs, "repo", argv[optind], &v, &r);
    if (ret == CLI_OK && changed && (ret = put_settings(r, &set)) == CLI_OK) {
        int rc = stria_repo_save(fs, r);
        if (rc) {
            cli_error("repo", argv[optind], rc);
            ret = CLI_FAIL;
        }
    }
    if (ret == CLI_OK) {
        printf("%s: ", r->path);
        print_settings(r);
        putchar('\n');
    }
    int64_t ra = ret == CLI_OK ? stria_repo_int(r, "release_after", 0) : 0;
    int64_t kf = ret == CLI_OK ? stria_repo_int(r, "keep_free", 0) : 0;
    if (ret == CLI_OK && apply && (ra || kf)) {
        struct stria_pass p = {.note = on_note};
        struct stria_tier_stats st;
        int rc = stria_repo_tier(fs, r, ra, (int)kf, &p, &st);
        printf("%s: released %" PRIu64 " files, %.1f MiB\n", r->path, st.files,
               (double)st.bytes / 1048576.0);
        if (rc) {
            cli_error("repo", argv[optind], rc);
            ret = CLI_FAIL;
        }
    }
    free(v);
    stria_disconnect(fs);
    return ret;
}

/* The released files of repository dir a walk found, and the first. */
struct released {
    stria_fs_t *fs;
    uint64_t dir;
    uint64_t n;
    char first[CLI_PATH_MAX];
};

static int count_released(const char *path, const struct stat *st, void *arg)
{
    struct released *c = arg;
    struct stria_hsm h;
    int rc = stria_hsm_get(c->fs, st->st_ino, &h);
    if (rc == -ENOENT)
        return 0; /* gone since the listing */
    if (rc)
        return rc;
    if ((h.state & STRIA_HSM_RELEASED) && h.repo == c->dir && !c->n++)
        snprintf(c->first, sizeof(c->first), "%s", path);
    return 0;
}

/* Unlink repository r, whose files stay. A released file's data is in S3
 * only, and only the link says where: unless force, a repository with
 * released files stays linked, and the user is told what to do. */
static int repo_remove(stria_fs_t *fs, const char *arg, struct stria_repo *r, bool force)
{
    if (!force) {
        struct released c = {.fs = fs, .dir = r->dir};
        size_t errors = 0;
        int rc = cli_walk_files(fs, "repo", r->path, count_released, &c, &errors);
        if (rc || errors) {
            if (rc)
                cli_error("repo", arg, rc);
            fprintf(stderr,
                    "stria repo: %s: not unlinked: its files could not all be checked for "
                    "released ones (--force unlinks anyway)\n",
                    arg);
            return CLI_FAIL;
        }
        if (c.n) {
            fprintf(stderr,
                    "stria repo: %s: not unlinked: %" PRIu64
                    " released file(s) (%s%s) have their data only in s3://%s/%s and could not "
                    "be read without the link; `stria hsm restore %s` brings it back first, "
                    "`stria repo remove --force %s` unlinks anyway\n",
                    arg, c.n, c.first, c.n > 1 ? ", ..." : "", r->bucket, r->prefix, arg, arg);
            return CLI_FAIL;
        }
    }
    int rc = stria_repo_call(fs, STRIA_REPO_DEL, r->dir, NULL, 0, NULL, 0, NULL);
    if (rc) {
        cli_error("repo", arg, rc);
        return CLI_FAIL;
    }
    printf("%s: unlinked from s3://%s/%s (its files stay)\n", r->path, r->bucket, r->prefix);
    return CLI_OK;
}

/* remove (and --force), import, sync, export (and --now): one PATH. */
static int repo_path_cmd(const char *sub, int argc, char **argv)
{
    const char *flag = !strcmp(sub, "export") ? "--now" : !strcmp(sub, "remove") ? "--force" : NULL;
    bool flagged = false, bad = false;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (flag && !flagged && !strcmp(argv[i], flag))
            flagged = true;
        else if (!path && argv[i][0] != '-')
            path = argv[i];
        else
            bad = true; /* an unknown option or a second PATH */
    }
    if (bad || !path)
        return cli_usage_error("repo", "repo %s takes one PATH%s%s%s", sub, flag ? " (and " : "",
                               flag ? flag : "", flag ? ")" : "");
    stria_fs_t *fs;
    struct stria_repo *v, *r;
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    int ret = repo_find(fs, "repo", path, &v, &r);
    if (ret == CLI_OK && !strcmp(sub, "remove")) {
        ret = repo_remove(fs, path, r, flagged);
    } else if (ret == CLI_OK && !strcmp(sub, "export")) {
        ret = run_export(fs, r, flagged);
    } else if (ret == CLI_OK) {
        ret = run_import(fs, r, !strcmp(sub, "sync"));
    }
    free(v);
    stria_disconnect(fs);
    return ret;
}

int cmd_repo(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("repo", "missing a subcommand (add, list, remove, import, sync, "
                                       "export, policy)");
    const char *sub = argv[1];
    if (!strcmp(sub, "add"))
        return repo_add(argc - 1, argv + 1);
    if (!strcmp(sub, "list")) {
        if (argc != 2)
            return cli_usage_error("repo", "repo list takes no arguments");
        return repo_list();
    }
    if (!strcmp(sub, "remove") || !strcmp(sub, "import") || !strcmp(sub, "sync") ||
        !strcmp(sub, "export"))
        return repo_path_cmd(sub, argc - 1, argv + 1);
    if (!strcmp(sub, "policy"))
        return repo_policy(argc - 1, argv + 1);
    return cli_usage_error("repo", "unknown subcommand '%s'", sub);
}
