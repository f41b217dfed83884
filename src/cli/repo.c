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

#define PAGE 1000

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

static bool has_policy(const struct repo *r, const char *which, const char *what)
{
    char v[64] = "";
    if (stria_repo_value(r->conf, r->len, which, v, sizeof(v)))
        return false;
    for (char *save = NULL, *t = strtok_r(v, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (!strcmp(t, what))
            return true;
    return false;
}

/* ---- import ---- */

struct import {
    stria_fs_t *fs;
    struct repo *r;
    uint64_t gen;
    bool changed; /* take objects changed in S3 */
    bool quiet;
    uint64_t n[4], skipped, failed, seen;
    char last[1025];
    /* The directory the last object went into, and its inode. */
    char dir[CLI_PATH_MAX];
    uint64_t dir_ino;
    double t0;
};

/* The inode of directory rel (below the repository's), made as needed. */
static int ensure_dir(struct import *im, const char *rel, uint64_t *ino)
{
    if (im->dir_ino && !strcmp(im->dir, rel)) {
        *ino = im->dir_ino;
        return 0;
    }
    uint64_t at = im->r->dir;
    char buf[CLI_PATH_MAX];
    snprintf(buf, sizeof(buf), "%s", rel);
    for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        struct stria_attr a;
        int rc = stria_lookup_at(im->fs, at, c, &a);
        if (rc == -ENOENT) {
            rc = stria_mkdir_at(im->fs, at, c, 0755, &a);
            if (rc == -EEXIST)
                rc = stria_lookup_at(im->fs, at, c, &a);
        }
        if (rc)
            return rc;
        if (!S_ISDIR(a.mode))
            return -ENOTDIR;
        at = a.ino;
    }
    snprintf(im->dir, sizeof(im->dir), "%s", rel);
    im->dir_ino = at;
    *ino = at;
    return 0;
}

/* Whether every component of rel is a name a file system can hold. */
static bool good_name(const char *rel)
{
    const char *c = rel;
    for (;;) {
        const char *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == 0 || n > 255 || (n == 1 && c[0] == '.') || (n == 2 && !strncmp(c, "..", 2)))
            return false;
        if (!e)
            return true;
        c = e + 1;
    }
}

static int import_one(const struct stria_s3_obj *o, void *arg)
{
    struct import *im = arg;
    snprintf(im->last, sizeof(im->last), "%s", o->key);
    im->seen++;
    size_t pl = strlen(im->r->prefix);
    const char *rel = o->key + pl;
    if (strncmp(o->key, im->r->prefix, pl) || !*rel)
        return 0;
    char path[CLI_PATH_MAX];
    size_t rl = strlen(rel);
    bool is_dir = rel[rl - 1] == '/';
    if (rl >= sizeof(path)) {
        im->skipped++;
        return 0;
    }
    memcpy(path, rel, rl + 1);
    if (is_dir)
        path[rl - 1] = 0;
    if (!good_name(path)) {
        if (!im->quiet)
            fprintf(stderr, "stria repo: skipping s3://%s/%s: not a valid path\n", im->r->bucket,
                    o->key);
        im->skipped++;
        return 0;
    }
    uint64_t parent;
    char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    if (slash)
        *slash = 0;
    int rc = ensure_dir(im, slash ? path : "", &parent);
    if (rc == 0 && is_dir) {
        struct stria_attr a;
        rc = stria_mkdir_at(im->fs, parent, name, 0755, &a);
        if (rc == -EEXIST)
            rc = 0;
    } else if (rc == 0) {
        int result = 0;
        rc = stria_hsm_import(im->fs, parent, name, im->r->dir, o->key, o->etag, o->size,
                              o->mtime_ns, 0644, im->gen, im->changed ? STRIA_IMPORT_CHANGED : 0,
                              &result, NULL);
        if (rc == 0 && result >= 0 && result < 4)
            im->n[result]++;
    }
    if (rc) {
        im->failed++;
        fprintf(stderr, "stria repo: s3://%s/%s: %s\n", im->r->bucket, o->key, strerror(-rc));
    }
    return 0;
}

/* Walk dir (cluster path p) and remove the files of repository r that
 * the last listing did not stamp: their objects are gone from S3. */
static void remove_deleted(stria_fs_t *fs, const struct repo *r, uint64_t gen, const char *p,
                           uint64_t *removed)
{
    stria_dir_t *d;
    if (stria_opendir(fs, p, &d))
        return;
    struct stria_dirent e;
    char **subs = NULL;
    size_t nsub = 0;
    while (stria_readdir(d, &e) == 1) {
        char child[CLI_PATH_MAX];
        if (cli_path_join(p, e.name, child, sizeof(child)))
            continue;
        if (e.type == DT_DIR) {
            char **ns = realloc(subs, (nsub + 1) * sizeof(*subs));
            if (ns && (ns[nsub] = strdup(child))) {
                subs = ns;
                nsub++;
            } else if (ns)
                subs = ns;
            continue;
        }
        struct stria_hsm h;
        if (e.type != DT_REG || stria_hsm_get(fs, e.ino, &h) || h.repo != r->dir ||
            !(h.state & STRIA_HSM_ARCHIVED) || (h.state & STRIA_HSM_DIRTY) || h.gen >= gen)
            continue;
        if (stria_unlink(fs, child) == 0)
            (*removed)++;
    }
    stria_closedir(d);
    for (size_t i = 0; i < nsub; i++) {
        remove_deleted(fs, r, gen, subs[i], removed);
        free(subs[i]);
    }
    free(subs);
}

/* Bring r's files up to date with its listing (sync: with its import
 * policy; else new objects only, as a first import). */
static int run_import(stria_fs_t *fs, struct repo *r, bool sync, bool quiet)
{
    struct import im = {.fs = fs, .r = r, .quiet = quiet, .t0 = (double)util_now_mono_ns() / 1e9};
    char v[1025] = "", resume[1025] = "";
    if (stria_repo_value(r->conf, r->len, "gen", v, sizeof(v)) == 0)
        im.gen = strtoull(v, NULL, 10);
    stria_repo_value(r->conf, r->len, "import_after", resume, sizeof(resume));
    if (!resume[0])
        im.gen++; /* a new pass; a resumed one keeps its generation */
    else if (!quiet)
        fprintf(stderr, "stria repo: resuming the listing after %s\n", resume);
    im.changed = sync && has_policy(r, "import_policy", "changed");
    snprintf(v, sizeof(v), "%" PRIu64, im.gen);
    int rc = repo_set(r, "gen", v);
    if (rc == 0)
        rc = stria_repo_call(fs, STRIA_REPO_SET, r->dir, r->conf, r->len, NULL, 0, NULL);
    const char *after = resume[0] ? resume : NULL;
    int more = 1;
    char why[512] = "";
    while (rc == 0 && more) {
        rc = stria_s3_list(fs, &r->t, r->prefix, after, PAGE, import_one, &im, &more, why,
                           sizeof(why));
        if (rc)
            break;
        /* Where a rerun resumes if this one is stopped. */
        if (more && (rc = repo_set(r, "import_after", im.last)) == 0)
            rc = stria_repo_call(fs, STRIA_REPO_SET, r->dir, r->conf, r->len, NULL, 0, NULL);
        after = im.last;
        if (!quiet && isatty(2))
            fprintf(stderr, "\rstria repo: %" PRIu64 " objects listed", im.seen);
    }
    if (!quiet && isatty(2))
        fputc('\n', stderr);
    if (rc) {
        fprintf(stderr, "stria repo: listing s3://%s/%s failed: %s\n", r->bucket, r->prefix,
                why[0] ? why : strerror(-rc));
        return CLI_FAIL;
    }
    if (repo_set(r, "import_after", NULL) == 0)
        stria_repo_call(fs, STRIA_REPO_SET, r->dir, r->conf, r->len, NULL, 0, NULL);
    uint64_t removed = 0;
    if (sync && has_policy(r, "import_policy", "deleted"))
        remove_deleted(fs, r, im.gen, r->path, &removed);
    double dt = (double)util_now_mono_ns() / 1e9 - im.t0;
    printf("%s: %" PRIu64 " objects: %" PRIu64 " new, %" PRIu64 " updated, %" PRIu64
           " unchanged, %" PRIu64 " kept (changed here), %" PRIu64 " removed, %" PRIu64
           " skipped, %" PRIu64 " failed in %.2f s (%.0f objects/s)\n",
           r->path, im.seen, im.n[STRIA_IMPORTED], im.n[STRIA_UPDATED], im.n[STRIA_UNCHANGED],
           im.n[STRIA_KEPT], removed, im.skipped, im.failed, dt, dt > 0 ? (double)im.seen / dt : 0);
    return im.failed ? CLI_FAIL : CLI_OK;
}

/* ---- the subcommands ---- */

static const struct option add_opts[] = {{"endpoint", required_argument, NULL, 'e'},
                                         {"region", required_argument, NULL, 'r'},
                                         {"addressing", required_argument, NULL, 'a'},
                                         {"import-policy", required_argument, NULL, 'i'},
                                         {"export-policy", required_argument, NULL, 'x'},
                                         {"sync-interval", required_argument, NULL, 's'},
                                         {"no-import", no_argument, NULL, 'n'},
                                         {NULL, 0, NULL, 0}};

static int repo_add(int argc, char **argv)
{
    struct repo *r = calloc(1, sizeof(*r));
    const char *endpoint = "", *region = "", *addressing = NULL, *ipol = "new", *xpol = "none";
    const char *interval = "0";
    bool import = true;
    int c, ret = CLI_FAIL;
    if (!r)
        return CLI_FAIL;
    optind = 1;
    opterr = 1;
    while ((c = getopt_long(argc, argv, "", add_opts, NULL)) != -1) {
        switch (c) {
        case 'e':
            endpoint = optarg;
            break;
        case 'r':
            region = optarg;
            break;
        case 'a':
            addressing = optarg;
            break;
        case 'i':
            ipol = optarg;
            break;
        case 'x':
            xpol = optarg;
            break;
        case 's':
            interval = optarg;
            break;
        case 'n':
            import = false;
            break;
        default:
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
    int64_t secs;
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
    if (check_policy(ipol) || check_policy(xpol)) {
        free(r);
        return cli_usage_error("repo", "a policy is a list of new, changed, deleted (or none)");
    }
    if (addressing && strcmp(addressing, "path") && strcmp(addressing, "virtual")) {
        free(r);
        return cli_usage_error("repo", "--addressing is path or virtual");
    }
    if (util_parse_i64(interval, &secs) < 0 || secs < 0 || secs > 86400 * 365) {
        free(r);
        return cli_usage_error("repo", "--sync-interval is seconds (0: only stria repo sync)");
    }
    if (endpoint[0] && strncmp(endpoint, "http://", 7) && strncmp(endpoint, "https://", 8)) {
        free(r);
        return cli_usage_error("repo", "--endpoint is http://HOST[:PORT] or https://...");
    }
    /* AWS itself is addressed by virtual host; other endpoints by path. */
    if (!addressing)
        addressing = endpoint[0] ? "path" : "virtual";
    if (cli_stria_path("repo", argv[optind], path, sizeof(path)) < 0) {
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
    if (rc) {
        cli_error("repo", argv[optind], rc);
        goto out;
    }
    r->dir = st.st_ino;
    r->len = (size_t)snprintf(r->conf, sizeof(r->conf),
                              "path=%s\nbucket=%s\nprefix=%s\nendpoint=%s\nregion=%s\n"
                              "addressing=%s\nimport_policy=%s\nexport_policy=%s\n"
                              "sync_interval=%" PRId64 "\ngen=0\n",
                              path, bucket, prefix, endpoint, region, addressing, ipol, xpol, secs);
    if (r->len >= sizeof(r->conf) || repo_parse(r)) {
        fprintf(stderr, "stria repo: the repository's settings are too long\n");
        goto out;
    }
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
    ret = import ? run_import(fs, r, false, false) : CLI_OK;
out:
    stria_disconnect(fs);
    free(r);
    return ret;
}

static int repo_list(void)
{
    stria_fs_t *fs;
    struct repo *v;
    size_t n;
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    int rc = repos_load(fs, &v, &n);
    if (rc) {
        fprintf(stderr, "stria repo: cannot read the repositories: %s\n", strerror(-rc));
        stria_disconnect(fs);
        return CLI_FAIL;
    }
    for (size_t i = 0; i < n; i++) {
        char ip[64] = "", xp[64] = "", si[32] = "", ra[32] = "", kf[32] = "";
        const struct repo *r = &v[i];
        stria_repo_value(r->conf, r->len, "import_policy", ip, sizeof(ip));
        stria_repo_value(r->conf, r->len, "export_policy", xp, sizeof(xp));
        stria_repo_value(r->conf, r->len, "sync_interval", si, sizeof(si));
        stria_repo_value(r->conf, r->len, "release_after", ra, sizeof(ra));
        stria_repo_value(r->conf, r->len, "keep_free", kf, sizeof(kf));
        printf("%s  s3://%s/%s  endpoint=%s region=%s addressing=%s import=%s export=%s "
               "sync_interval=%s",
               r->path, r->bucket, r->prefix, r->endpoint[0] ? r->endpoint : "aws",
               r->region[0] ? r->region : "us-east-1", r->vhost ? "virtual" : "path", ip, xp, si);
        if (ra[0])
            printf(" release_after=%s", ra);
        if (kf[0])
            printf(" keep_free=%s%%", kf);
        putchar('\n');
    }
    free(v);
    stria_disconnect(fs);
    return CLI_OK;
}

/* remove, import, sync: one PATH. */
static int repo_path_cmd(const char *sub, int argc, char **argv)
{
    if (argc != 2)
        return cli_usage_error("repo", "repo %s takes one PATH", sub);
    stria_fs_t *fs;
    struct repo *v, *r;
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    int ret = repo_find(fs, "repo", argv[1], &v, &r);
    if (ret == CLI_OK && !strcmp(sub, "remove")) {
        int rc = stria_repo_call(fs, STRIA_REPO_DEL, r->dir, NULL, 0, NULL, 0, NULL);
        if (rc) {
            cli_error("repo", argv[1], rc);
            ret = CLI_FAIL;
        } else
            printf("%s: unlinked from s3://%s/%s (its files stay)\n", r->path, r->bucket,
                   r->prefix);
    } else if (ret == CLI_OK) {
        ret = run_import(fs, r, !strcmp(sub, "sync"), false);
    }
    free(v);
    stria_disconnect(fs);
    return ret;
}

int cmd_repo(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("repo", "missing a subcommand (add, list, remove, import, sync, "
                                       "policy)");
    const char *sub = argv[1];
    if (!strcmp(sub, "add"))
        return repo_add(argc - 1, argv + 1);
    if (!strcmp(sub, "list")) {
        if (argc != 2)
            return cli_usage_error("repo", "repo list takes no arguments");
        return repo_list();
    }
    if (!strcmp(sub, "remove") || !strcmp(sub, "import") || !strcmp(sub, "sync"))
        return repo_path_cmd(sub, argc - 1, argv + 1);
    if (!strcmp(sub, "policy"))
        return cmd_repo_policy(argc - 1, argv + 1);
    return cli_usage_error("repo", "unknown subcommand '%s'", sub);
}
