/*
 * stria hsm: archive, release, restore and state of files in data
 * repositories, as Lustre's lfs hsm_* verbs (docs/operations.md, "Data
 * repositories"). Directories are walked; files are moved several at a
 * time, and each file's stripes by the storage hosts that hold them.
 */
#include "args.h"
#include "commands.h"
#include "connect.h"
#include "paths.h"
#include "repos.h"

#include "../common/util.h"

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
};

struct job {
    stria_fs_t *fs;
    const char *verb;
    struct item *v;
    size_t n;
    struct stria_repo *repos;
    size_t nrepos;
    _Atomic size_t next, done_files, failed;
    _Atomic uint64_t done_bytes, total_bytes;
    bool bar;
    pthread_mutex_t out;
};

/* A file to move: into the job's list, which is whole before any moves
 * (the progress bar shows the total, and workers take files from it). */
static int add_item(const char *path, const struct stat *st, void *arg)
{
    struct job *j = arg;
    struct item *nv = realloc(j->v, (j->n + 1) * sizeof(*nv));
    if (!nv)
        return -ENOMEM;
    j->v = nv;
    if (!(nv[j->n].path = strdup(path)))
        return -ENOMEM;
    nv[j->n].ino = st->st_ino;
    nv[j->n].size = (uint64_t)st->st_size;
    j->n++;
    return 0;
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
        const struct stria_repo *r = stria_repo_for(j->repos, j->nrepos, it->path);
        char key[1100];
        if (!r) {
            rc = -EINVAL;
            snprintf(why, sizeof(why), "not in a data repository (stria repo add)");
        } else if (stria_repo_key(r, it->path, key, sizeof(key))) {
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
        size_t errors = 0;
        int rc = cli_walk_files(fs, "hsm", path, add_item, &j, &errors);
        if (rc)
            cli_error("hsm", argv[i], rc);
        if (rc || errors)
            ret = CLI_FAIL;
    }
    if (strcmp(verb, "state")) {
        int rc = 0;
        if (!strcmp(verb, "archive") && (rc = stria_repo_load(fs, &j.repos, &j.nrepos)))
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
