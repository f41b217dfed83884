/*
 * The policy engine (policy.h). One thread, so that passes never overlap:
 * each round it loads the registry and, for each repository,
 *  - sync: when sync_interval has gone by since its last sync here, the
 *    import policy's pass (new, changed, deleted objects of the listing);
 *  - export: with an export policy, archives the new and changed files
 *    quiet for export_delay, and ("deleted") deletes the objects of files
 *    removed here, from the MDTs' tombstones;
 *  - tiering: with release_after or keep_free, releases what they say.
 * and last drops the tombstones no repository's policy will use.
 * The passes are libstria's (stria.h, stria_repo_*), the same the CLI
 * runs, so `stria repo sync` and the engine cannot disagree. The engine
 * keeps nothing but when it last synced each repository: everything else
 * is in the registry and the HSM records, so a restarted mgmtd goes on.
 *
 * Why in stria-mgmtd: there is one per cluster, so passes never run twice,
 * and it moves no data itself (the storage hosts do, as for the CLI).
 */
#include "policy.h"

#include "../common/daemon.h"
#include "../common/log.h"
#include "../common/util.h"

#include <stria/stria.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct synced {
    uint64_t dir;
    uint64_t at_ns; /* monotonic */
};

static struct {
    pthread_t th;
    bool running;
    atomic_int stop;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    char conf[4200];
    int64_t interval_s;
    stria_fs_t *fs;
    bool warned; /* the cluster could not be reached: said once */
    struct synced *synced;
    size_t nsynced;
} E = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void on_note(const char *line, void *arg)
{
    log_warn("policy %s: %s", (const char *)arg, line);
}

static int on_stop(void *arg)
{
    (void)arg;
    return atomic_load(&E.stop);
}

static struct synced *synced_of(uint64_t dir)
{
    for (size_t i = 0; i < E.nsynced; i++)
        if (E.synced[i].dir == dir)
            return &E.synced[i];
    struct synced *v = realloc(E.synced, (E.nsynced + 1) * sizeof(*v));
    if (!v)
        return NULL;
    E.synced = v;
    v[E.nsynced] = (struct synced){dir, 0};
    return &v[E.nsynced++];
}

static void run_repo(struct stria_repo *r)
{
    struct stria_pass p = {.note = on_note, .stop = on_stop, .arg = r->path};
    int64_t sync_s = stria_repo_int(r, "sync_interval", 0);
    struct synced *sy = synced_of(r->dir);
    uint64_t now = util_now_mono_ns();
    if (sync_s > 0 && sy && (!sy->at_ns || now - sy->at_ns >= (uint64_t)sync_s * 1000000000)) {
        struct stria_sync_stats st;
        char why[512] = "";
        int rc = stria_repo_import(E.fs, r, STRIA_SYNC_POLICY, &p, &st, why, sizeof(why));
        sy->at_ns = util_now_mono_ns();
        if (rc && rc != -EINTR)
            log_warn("policy %s: sync with s3://%s/%s failed: %s", r->path, r->bucket, r->prefix,
                     why[0] ? why : log_err(rc));
        else if (st.imported || st.updated || st.removed || st.failed || st.reaped)
            log_info("policy %s: synced %" PRIu64 " objects: %" PRIu64 " new, %" PRIu64
                     " updated, %" PRIu64 " removed, %" PRIu64 " failed; %" PRIu64
                     " superseded files freed",
                     r->path, st.seen, st.imported, st.updated, st.removed, st.failed, st.reaped);
    }
    if (atomic_load(&E.stop))
        return;
    if (stria_repo_has(r, "export_policy", "new") ||
        stria_repo_has(r, "export_policy", "changed") ||
        stria_repo_has(r, "export_policy", "deleted")) {
        struct stria_export_stats st;
        int rc = stria_repo_export(E.fs, r, stria_repo_int(r, "export_delay", 30), &p, &st);
        if (rc && rc != -EINTR)
            log_warn("policy %s: export stopped: %s", r->path, log_err(rc));
        if (st.files || st.deleted || st.failed)
            log_info("policy %s: exported %" PRIu64 " files (%" PRIu64 " MiB), deleted %" PRIu64
                     " objects, %" PRIu64 " failed, %" PRIu64 " waiting",
                     r->path, st.files, st.bytes >> 20, st.deleted, st.failed, st.waiting);
    }
    if (atomic_load(&E.stop))
        return;
    int64_t ra = stria_repo_int(r, "release_after", 0), kf = stria_repo_int(r, "keep_free", 0);
    if (ra > 0 || kf > 0) {
        struct stria_tier_stats st;
        int rc = stria_repo_tier(E.fs, r, ra, (int)kf, &p, &st);
        if (rc && rc != -EINTR)
            log_warn("policy %s: tiering stopped: %s", r->path, log_err(rc));
        if (st.files)
            log_info("policy %s: released %" PRIu64 " files (%" PRIu64 " MiB)", r->path, st.files,
                     st.bytes >> 20);
    }
}

static void round_once(void)
{
    int rc = 0;
    if (!E.fs && (rc = stria_connect(E.conf, &E.fs))) {
        if (!E.warned)
            log_warn("policy: cannot reach the cluster with %s yet: %s (trying every %" PRId64
                     " s)",
                     E.conf, log_err(rc), E.interval_s);
        E.warned = true;
        E.fs = NULL;
        return;
    }
    struct stria_repo *v;
    size_t n;
    if ((rc = stria_repo_load(E.fs, &v, &n))) {
        if (!E.warned)
            log_warn("policy: cannot read the repositories: %s", log_err(rc));
        E.warned = true;
        return;
    }
    if (E.warned)
        log_info("policy: the cluster answers; %zu repositories", n);
    E.warned = false;
    for (size_t i = 0; i < n && !atomic_load(&E.stop); i++)
        run_repo(&v[i]);
    /* Tombstones no export policy will use go, so they never pile up. */
    if (!atomic_load(&E.stop) && (rc = stria_repo_forget(E.fs, v, n)) && rc != -EPERM)
        log_warn("policy: cannot drop unused tombstones: %s", log_err(rc));
    free(v);
}

static void *engine(void *arg)
{
    (void)arg;
    while (!atomic_load(&E.stop)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += E.interval_s;
        pthread_mutex_lock(&E.lock);
        while (!atomic_load(&E.stop) &&
               pthread_cond_timedwait(&E.cond, &E.lock, &until) != ETIMEDOUT)
            ;
        pthread_mutex_unlock(&E.lock);
        if (!atomic_load(&E.stop))
            round_once();
    }
    return NULL;
}

int policy_start(const char *data_dir, const char *host, uint16_t port, const char *key_path,
                 int64_t interval_s)
{
    if (interval_s <= 0) {
        log_info("policy: off (policy_interval = 0): repositories' policies run only when asked");
        return 0;
    }
    if ((size_t)snprintf(E.conf, sizeof(E.conf), "%s/policy-client.conf", data_dir) >=
        sizeof(E.conf))
        return -ENAMETOOLONG;
    int rc = daemon_client_conf(E.conf, "stria-mgmtd's policy engine", host, port, key_path);
    if (rc)
        return rc;
    E.interval_s = interval_s;
    atomic_store(&E.stop, 0);
    if ((rc = pthread_create(&E.th, NULL, engine, NULL))) {
        log_error("policy: cannot start its thread: %s", log_err(-rc));
        return -rc;
    }
    E.running = true;
    log_info("policy: every %" PRId64 " s, client %s", interval_s, E.conf);
    return 0;
}

void policy_stop(void)
{
    if (!E.running)
        return;
    pthread_mutex_lock(&E.lock);
    atomic_store(&E.stop, 1);
    pthread_cond_broadcast(&E.cond);
    pthread_mutex_unlock(&E.lock);
    /* A pass ends after its current file; an upload of a large one may
     * take longer than a stop should: then the process exits under it (the
     * file is not marked archived, and the next start exports it again). */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    if (pthread_timedjoin_np(E.th, NULL, &until)) {
        log_warn("policy: a pass is still under way; stopping without it");
        return;
    }
    E.running = false;
    if (E.fs)
        stria_disconnect(E.fs);
    E.fs = NULL;
    free(E.synced);
    E.synced = NULL;
    E.nsynced = 0;
}
