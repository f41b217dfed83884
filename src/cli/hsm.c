/*
 * stria hsm: archive, release, restore and state of files in data
 * repositories, as Lustre's lfs hsm_* verbs; and stria repo policy, the
 * tiering rules that release archived files (docs/operations.md, "Data
 * repositories"). Directories are walked; files are moved several at a
 * time, and each file's stripes by the storage hosts that hold them.
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
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 4

struct item {
    char *path;
    uint64_t ino, size;
    int64_t atime_ns;
};

struct job {
    stria_fs_t *fs;
    const char *verb;
    struct item *v;
    size_t n;
    struct repo *repos;
    size_t nrepos;
    _Atomic size_t next, done_files, failed;
    _Atomic uint64_t done_bytes, total_bytes;
    bool bar;
    pthread_mutex_t out;
};

static int add_item(struct item **v, size_t *n, const char *path, const struct stat *st)
{
    struct item *nv = realloc(*v, (*n + 1) * sizeof(**v));
    if (!nv)
        return -ENOMEM;
    *v = nv;
    if (!(nv[*n].path = strdup(path)))
        return -ENOMEM;
    nv[*n].ino = st->st_ino;
    nv[*n].size = (uint64_t)st->st_size;
    nv[*n].atime_ns = (int64_t)st->st_atim.tv_sec * 1000000000 + st->st_atim.tv_nsec;
    (*n)++;
    return 0;
}

/* The regular files at path, walking directories. */
static int collect(stria_fs_t *fs, const char *path, struct item **v, size_t *n)
{
    struct stat st;
    int rc = stria_lstat(fs, path, &st);
    if (rc)
        return rc;
    if (S_ISREG(st.st_mode))
        return add_item(v, n, path, &st);
    if (!S_ISDIR(st.st_mode))
        return 0;
    stria_dir_t *d;
    if ((rc = stria_opendir(fs, path, &d)))
        return rc;
    struct stria_dirent e;
    while (rc == 0 && (rc = stria_readdir(d, &e)) == 1) {
        char child[CLI_PATH_MAX];
        rc = cli_path_join(path, e.name, child, sizeof(child));
        if (rc == 0 && (e.type == DT_DIR || e.type == DT_REG))
            rc = collect(fs, child, v, n);
    }
    stria_closedir(d);
    return rc < 0 ? rc : 0;
}

static void bar(struct job *j)
{
    if (!j->bar)
        return;
    pthread_mutex_lock(&j->out);
    uint64_t done = atomic_load(&j->done_bytes), total = atomic_load(&j->total_bytes);
    int pct = total ? (int)(done * 100 / total) : 100;
    fprintf(stderr, "\rstria hsm %s: %zu/%zu files, %" PRIu64 "/%" PRIu64 " MiB [%3d%%]", j->verb,
            atomic_load(&j->done_files), j->n, done >> 20, total >> 20, pct);
    pthread_mutex_unlock(&j->out);
}

struct progress {
    struct job *j;
    uint64_t seen;
};

static void on_progress(uint64_t done, void *arg)
{
    struct progress *p = arg;
    if (done > p->seen) {
        atomic_fetch_add(&p->j->done_bytes, done - p->seen);
        p->seen = done;
    }
    bar(p->j);
}

static void report(struct job *j, const char *path, int rc, const char *why)
{
    pthread_mutex_lock(&j->out);
    if (j->bar)
        fputc('\n', stderr);
    fprintf(stderr, "stria hsm %s: %s: %s\n", j->verb, path, why && why[0] ? why : strerror(-rc));
    pthread_mutex_unlock(&j->out);
    atomic_fetch_add(&j->failed, 1);
}

static void do_one(struct job *j, struct item *it)
{
    char why[512] = "";
    struct progress p = {j, 0};
    int rc = 0;
    if (!strcmp(j->verb, "archive")) {
        /* The key its path gives; libstria keeps the key a file was
         * imported from or archived to before. */
        const struct repo *r = repo_for(j->repos, j->nrepos, it->path);
        char key[1100];
        if (!r) {
            rc = -EINVAL;
            snprintf(why, sizeof(why), "not in a data repository (stria repo add)");
        } else if (repo_key(r, it->path, key, sizeof(key))) {
            rc = -ENAMETOOLONG;
        }
        if (rc == 0)
            rc = stria_hsm_archive(j->fs, it->ino, r->dir, &r->t, key, on_progress, &p, why,
                                   sizeof(why));
    } else if (!strcmp(j->verb, "restore")) {
        rc = stria_hsm_restore(j->fs, it->ino, on_progress, &p, why, sizeof(why));
    } else if (!strcmp(j->verb, "release")) {
        rc = stria_hsm_release(j->fs, it->ino);
        if (rc == -EPERM)
            snprintf(why, sizeof(why), "not archived, or changed since (stria hsm state)");
    }
    atomic_fetch_add(&j->done_bytes, it->size > p.seen ? it->size - p.seen : 0);
    atomic_fetch_add(&j->done_files, 1);
    if (rc)
        report(j, it->path, rc, why);
    bar(j);
}

static void *worker(void *arg)
{
    struct job *j = arg;
    size_t i;
    while ((i = atomic_fetch_add(&j->next, 1)) < j->n)
        do_one(j, &j->v[i]);
    return NULL;
}

static void run_job(struct job *j)
{
    pthread_t th[WORKERS];
    int started = 0;
    for (int i = 0; i < WORKERS && (size_t)i < j->n; i++)
        if (pthread_create(&th[i], NULL, worker, j) == 0)
            started++;
    if (!started)
        worker(j);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (j->bar && j->n)
        fputc('\n', stderr);
}

static void print_state(const char *shown, const struct stria_hsm *h, bool verbose)
{
    uint32_t s = h->state;
    printf("%s: (0x%08x)", shown, s);
    if (s & STRIA_HSM_RELEASED)
        printf(" released");
    if (s & STRIA_HSM_EXISTS)
        printf(" exists");
    if (s & STRIA_HSM_DIRTY)
        printf(" dirty");
    if (s & STRIA_HSM_ARCHIVED)
        printf(" archived");
    if (s & STRIA_HSM_LOST)
        printf(" lost");
    if (s)
        printf(", archive_id:1");
    putchar('\n');
    if (verbose && s)
        printf("  key: %s\n  etag: %s\n  archived size: %" PRIu64 "\n", h->key, h->etag,
               h->arch_size);
}

int cmd_hsm(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("hsm", "missing an action (archive, release, restore, state)");
    const char *verb = argv[1];
    bool verbose = false;
    int first = 2;
    if (strcmp(verb, "archive") && strcmp(verb, "release") && strcmp(verb, "restore") &&
        strcmp(verb, "state"))
        return cli_usage_error("hsm", "unknown action '%s'", verb);
    if (first < argc && !strcmp(argv[first], "-v")) {
        verbose = true;
        first++;
    }
    if (first >= argc)
        return cli_usage_error("hsm", "missing FILE");
    stria_fs_t *fs;
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    struct job j = {.fs = fs, .verb = verb, .bar = isatty(2) != 0};
    pthread_mutex_init(&j.out, NULL);
    int ret = CLI_OK;
    for (int i = first; i < argc; i++) {
        char path[CLI_PATH_MAX];
        if (cli_stria_path("hsm", argv[i], path, sizeof(path)) < 0) {
            ret = CLI_FAIL;
            continue;
        }
        if (!strcmp(verb, "state")) {
            struct stat st;
            struct stria_hsm h;
            int rc = stria_lstat(fs, path, &st);
            if (rc == 0)
                rc = S_ISREG(st.st_mode) ? stria_hsm_get(fs, st.st_ino, &h) : -EISDIR;
            if (rc) {
                cli_error("hsm", argv[i], rc);
                ret = CLI_FAIL;
            } else
                print_state(cli_shown_name(argv[i], path), &h, verbose);
            continue;
        }
        int rc = collect(fs, path, &j.v, &j.n);
        if (rc) {
            cli_error("hsm", argv[i], rc);
            ret = CLI_FAIL;
        }
    }
    if (strcmp(verb, "state")) {
        int rc = 0;
        if (!strcmp(verb, "archive") && (rc = repos_load(fs, &j.repos, &j.nrepos)))
            fprintf(stderr, "stria hsm: cannot read the repositories: %s\n", strerror(-rc));
        for (size_t i = 0; i < j.n; i++)
            j.total_bytes += j.v[i].size;
        double t0 = (double)util_now_mono_ns() / 1e9;
        if (rc == 0)
            run_job(&j);
        double dt = (double)util_now_mono_ns() / 1e9 - t0;
        size_t failed = atomic_load(&j.failed);
        if (rc == 0 && (strcmp(verb, "release") || failed))
            printf("%s: %zu files, %.1f MiB in %.2f s (%.1f MiB/s)%s\n", verb, j.n - failed,
                   (double)j.total_bytes / 1048576.0, dt,
                   dt > 0 ? (double)j.total_bytes / 1048576.0 / dt : 0.0,
                   failed ? "; some failed" : "");
        if (rc || failed)
            ret = CLI_FAIL;
    }
    for (size_t i = 0; i < j.n; i++)
        free(j.v[i].path);
    free(j.v);
    free(j.repos);
    pthread_mutex_destroy(&j.out);
    stria_disconnect(fs);
    return ret;
}

/* ---- stria repo policy ---- */

/* Release the archived, unchanged files of r not read for release_after
 * seconds, then, while the OSTs are fuller than 100 - keep_free percent,
 * the least recently read of the rest. */
static int tier(stria_fs_t *fs, const struct repo *r, int64_t release_after, int64_t keep_free)
{
    struct item *v = NULL;
    size_t n = 0, released = 0, kept = 0;
    uint64_t freed = 0;
    int rc = collect(fs, r->path, &v, &n);
    size_t *cand = rc == 0 && n ? malloc(n * sizeof(*cand)) : NULL;
    int64_t now = (int64_t)util_now_real_ns();
    for (size_t i = 0; rc == 0 && cand && i < n; i++) {
        struct stria_hsm h;
        if (stria_hsm_get(fs, v[i].ino, &h) || !(h.state & STRIA_HSM_ARCHIVED) ||
            (h.state & (STRIA_HSM_DIRTY | STRIA_HSM_RELEASED | STRIA_HSM_LOST)))
            continue;
        if (release_after > 0 && now - v[i].atime_ns >= release_after * 1000000000) {
            if (stria_hsm_release(fs, v[i].ino) == 0) {
                released++;
                freed += v[i].size;
            }
        } else {
            cand[kept++] = i; /* for keep_free, by last read */
        }
    }
    if (cand && keep_free > 0) {
        /* Least recently read first. */
        for (size_t a = 1; a < kept; a++)
            for (size_t b = a; b > 0 && v[cand[b - 1]].atime_ns > v[cand[b]].atime_ns; b--) {
                size_t t = cand[b];
                cand[b] = cand[b - 1];
                cand[b - 1] = t;
            }
        struct statvfs sv;
        for (size_t i = 0; i < kept; i++) {
            if (stria_statfs(fs, &sv) || !sv.f_blocks ||
                sv.f_bavail * 100 / sv.f_blocks >= (uint64_t)keep_free)
                break;
            if (stria_hsm_release(fs, v[cand[i]].ino) == 0) {
                released++;
                freed += v[cand[i]].size;
            }
        }
    }
    printf("%s: released %zu files, %.1f MiB\n", r->path, released, (double)freed / 1048576.0);
    for (size_t i = 0; i < n; i++)
        free(v[i].path);
    free(v);
    free(cand);
    return rc;
}

static const struct option policy_opts[] = {{"release-after", required_argument, NULL, 'r'},
                                            {"keep-free", required_argument, NULL, 'k'},
                                            {"apply", no_argument, NULL, 'a'},
                                            {NULL, 0, NULL, 0}};

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

int cmd_repo_policy(int argc, char **argv)
{
    const char *ra = NULL, *kf = NULL;
    bool apply = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", policy_opts, NULL)) != -1) {
        if (c == 'r')
            ra = optarg;
        else if (c == 'k')
            kf = optarg;
        else if (c == 'a')
            apply = true;
        else
            return cli_usage_error("repo", NULL);
    }
    if (argc - optind != 1)
        return cli_usage_error("repo", "repo policy takes one PATH");
    int64_t secs = 0, pct = 0;
    char buf[32];
    if (ra && parse_duration(ra, &secs))
        return cli_usage_error("repo", "--release-after is a duration (90, 30m, 12h, 7d)");
    if (kf && (util_parse_i64(kf, &pct) < 0 || pct < 0 || pct > 99))
        return cli_usage_error("repo", "--keep-free is a percentage, 0 to 99");
    stria_fs_t *fs;
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    struct repo *v = NULL, *r = NULL;
    int ret = repo_find(fs, "repo", argv[optind], &v, &r), rc = 0;
    if (ret != CLI_OK)
        goto out;
    if (ra) {
        snprintf(buf, sizeof(buf), "%" PRId64, secs);
        rc = repo_set(r, "release_after", secs ? buf : NULL);
    }
    if (rc == 0 && kf) {
        snprintf(buf, sizeof(buf), "%" PRId64, pct);
        rc = repo_set(r, "keep_free", pct ? buf : NULL);
    }
    if (rc == 0 && (ra || kf))
        rc = stria_repo_call(fs, STRIA_REPO_SET, r->dir, r->conf, r->len, NULL, 0, NULL);
    if (rc) {
        cli_error("repo", argv[optind], rc);
        ret = CLI_FAIL;
        goto out;
    }
    char cur_ra[32] = "", cur_kf[32] = "";
    stria_repo_value(r->conf, r->len, "release_after", cur_ra, sizeof(cur_ra));
    stria_repo_value(r->conf, r->len, "keep_free", cur_kf, sizeof(cur_kf));
    printf("%s: release_after=%s keep_free=%s\n", r->path, cur_ra[0] ? cur_ra : "never",
           cur_kf[0] ? cur_kf : "none");
    if (apply && (cur_ra[0] || cur_kf[0]) &&
        tier(fs, r, cur_ra[0] ? strtoll(cur_ra, NULL, 10) : 0,
             cur_kf[0] ? strtoll(cur_kf, NULL, 10) : 0))
        ret = CLI_FAIL;
out:
    free(v);
    stria_disconnect(fs);
    return ret;
}
