/*
 * libstria: configuration, connections, the cluster map, and every
 * metadata call of the public API (stria.h).
 *
 * Connections are pooled per target and lent to one thread at a time, so
 * the library is thread-safe without a global lock. Reply strings point
 * into a connection's buffer, so each call copies what it needs before
 * returning its connection. A request that fails on a pooled connection
 * (the server restarted since it was last used) is retried once on a fresh
 * one: the failed attempt never reached a live server.
 */
#include "client.h"

#include "../common/log.h"
#include "../common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define O(n, t, lo, hi, d, req, h)                                                                 \
    {                                                                                              \
#n, t, lo, hi, d, req, h, offsetof(struct client_conf, n)                                  \
    }
static const struct cfg_option client_options[] = {
    O(mgmt, CFG_ADDR, 0, 0, NULL, true, "host:port of stria-mgmtd"),
    O(key_file, CFG_STR, 0, 0, NULL, true,
      "the cluster's shared key file (relative paths: from this file's directory)"),
    O(connect_timeout_ms, CFG_INT, 100, 600000, "5000", false,
      "give up connecting to a server after this long"),
    O(io_depth, CFG_INT, 1, 64, "8", false, "data requests in flight per storage connection"),
    O(timeout_ms, CFG_INT, 500, 3600000, "100000", false,
      "how long a request waits for an unreachable server, MDT or OST (reconnecting "
      "meanwhile), before it fails with EIO; also the longest a server may take to answer"),
};
#undef O
static const struct cfg_table client_table = {"client.conf", "Stria client configuration",
                                              client_options, ARRAY_SIZE(client_options)};

/* ---- credentials ---- */

static __thread bool cred_set;
static __thread struct proto_cred thread_cred;

int stria_set_thread_cred(uid_t uid, gid_t gid, int ngroups, const gid_t *groups)
{
    if (ngroups < 0)
        return -EINVAL;
    thread_cred.uid = uid;
    thread_cred.gid = gid;
    thread_cred.ngroups = (uint32_t)MIN(ngroups, (int)PROTO_MAX_GROUPS);
    for (uint32_t i = 0; i < thread_cred.ngroups; i++)
        thread_cred.groups[i] = groups[i];
    cred_set = true;
    return 0;
}

void stria_clear_thread_cred(void)
{
    cred_set = false;
}

void cl_cred(struct proto_cred *c)
{
    if (cred_set) {
        *c = thread_cred;
        return;
    }
    c->uid = geteuid();
    c->gid = getegid();
    gid_t g[PROTO_MAX_GROUPS];
    int n = getgroups(PROTO_MAX_GROUPS, g);
    if (n < 0)
        n = 0; /* more groups than a credential carries: primary only */
    c->ngroups = (uint32_t)n;
    for (int i = 0; i < n; i++)
        c->groups[i] = g[i];
}

/* ---- configuration ---- */

int stria_conf_find(char *buf, size_t len)
{
    const char *env = getenv("STRIA_CONF");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return access(buf, R_OK) == 0 ? 0 : -ENOENT;
    }
    const char *home = getenv("HOME");
    if (home && *home) {
        snprintf(buf, len, "%s/.config/stria/client.conf", home);
        if (access(buf, R_OK) == 0)
            return 0;
    }
    snprintf(buf, len, "/etc/stria/client.conf");
    return access(buf, R_OK) == 0 ? 0 : -ENOENT;
}

static void ct_init(struct ctarget *t, uint8_t kind, uint32_t index, const char *host,
                    uint16_t port)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_init(&t->lock, NULL);
    t->kind = kind;
    t->index = index;
    snprintf(t->host, sizeof(t->host), "%s", host);
    t->port = port;
    t->state = MAP_ONLINE;
}

static void ct_drain(struct ctarget *t)
{
    for (int i = 0; i < t->nidle; i++)
        net_close(t->idle[i]);
    t->nidle = 0;
}

/* The key file key_file names: relative paths from the directory
 * conf_path really is in. */
static void key_path(const char *conf_path, const char *key_file, char *buf, size_t len)
{
    if (key_file[0] == '/') {
        snprintf(buf, len, "%s", key_file);
        return;
    }
    /* Relative to where the file really is (~/.config/... is a link). */
    char dir[4096], *real = realpath(conf_path, NULL);
    snprintf(dir, sizeof(dir), "%s", real ? real : conf_path);
    free(real);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof(dir), ".");
    snprintf(buf, len, "%s/%s", dir, key_file);
}

int stria_conf_key_file(const char *conf, char *buf, size_t len)
{
    char path[4096], err[512];
    int rc;
    if (conf)
        snprintf(path, sizeof(path), "%s", conf);
    else if ((rc = stria_conf_find(path, sizeof(path))))
        return rc;
    struct client_conf cc = {0};
    if ((rc = cfg_defaults(&client_table, &cc)) == 0 &&
        (rc = cfg_load_file(&client_table, &cc, path, err, sizeof(err))) == 0 && !cc.key_file)
        rc = -ENOENT;
    if (rc == 0)
        key_path(path, cc.key_file, buf, len);
    cfg_free(&client_table, &cc);
    return rc;
}

int stria_connect(const char *conf, stria_fs_t **out)
{
    stria_fs_t *fs = calloc(1, sizeof(*fs));
    if (!fs)
        return -ENOMEM;
    int rc;
    if (conf)
        snprintf(fs->conf_path, sizeof(fs->conf_path), "%s", conf);
    else if ((rc = stria_conf_find(fs->conf_path, sizeof(fs->conf_path)))) {
        free(fs);
        return rc;
    }
    char err[512];
    if ((rc = cfg_defaults(&client_table, &fs->conf)) ||
        (rc = cfg_load_file(&client_table, &fs->conf, fs->conf_path, err, sizeof(err))) ||
        (rc = cfg_check_required(&client_table, &fs->conf, err, sizeof(err)))) {
        log_error("%s", err);
        goto fail;
    }
    key_path(fs->conf_path, fs->conf.key_file, fs->key_path, sizeof(fs->key_path));
    if ((rc = auth_key_load(fs->key_path, &fs->key, err, sizeof(err)))) {
        log_error("cannot load the cluster key: %s (key_file in %s)", err, fs->conf_path);
        goto fail;
    }
    auth_random(&fs->client_id, sizeof(fs->client_id));
    pthread_rwlock_init(&fs->map_lock, NULL);
    pthread_mutex_init(&fs->ds_lock, NULL);
    ct_init(&fs->mgmt, PROTO_NODE_MGMT, 0, fs->conf.mgmt.host, fs->conf.mgmt.port);
    if ((rc = cl_refresh_map(fs)) || (rc = gather_init(fs)))
        goto fail;
    *out = fs;
    return 0;
fail:
    cfg_free(&client_table, &fs->conf);
    free(fs);
    return rc;
}

static void free_slots(struct ctarget **v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (v[i]) {
            ct_drain(v[i]);
            free(v[i]);
        }
    }
    free(v);
}

void stria_disconnect(stria_fs_t *fs)
{
    if (!fs)
        return;
    gather_fini(fs); /* sends what open handles gathered */
    wb_stop(fs);     /* sends what is queued */
    mdc_stop(fs);    /* its channel may still be waiting in wb_revoked */
    wb_destroy(fs);
    ct_drain(&fs->mgmt);
    free_slots(fs->mdt, fs->nmdt_slots);
    free_slots(fs->ost, fs->nost_slots);
    cfg_free(&client_table, &fs->conf);
    free(fs);
}

/* ---- connections ---- */

static struct ctarget *slot(stria_fs_t *fs, uint8_t kind, uint32_t index)
{
    if (kind == PROTO_NODE_MGMT)
        return &fs->mgmt;
    struct ctarget **v = kind == PROTO_NODE_META ? fs->mdt : fs->ost;
    uint32_t n = kind == PROTO_NODE_META ? fs->nmdt_slots : fs->nost_slots;
    return index < n ? v[index] : NULL;
}

/* The deadline of the calling thread's retrying call (cl_retry_init). */
static __thread int64_t call_deadline_ns;

static int lease_once(stria_fs_t *fs, uint8_t kind, uint32_t index, struct lease *l)
{
    pthread_rwlock_rdlock(&fs->map_lock);
    struct ctarget *t = slot(fs, kind, index);
    pthread_rwlock_unlock(&fs->map_lock);
    if (!t)
        return -ENXIO;
    char host[256];
    uint16_t port;
    pthread_mutex_lock(&t->lock);
    l->t = t;
    l->gen = t->gen;
    l->c = t->nidle ? t->idle[--t->nidle] : NULL;
    if (!l->c) { /* connecting: the address, as it is now */
        snprintf(host, sizeof(host), "%s", t->host);
        port = t->port;
    }
    pthread_mutex_unlock(&t->lock);
    l->reused = l->c != NULL;
    /* stria_set_io_timeout may change it at any time. */
    int64_t timeout_ms = __atomic_load_n(&fs->conf.timeout_ms, __ATOMIC_RELAXED);
    int64_t now = (int64_t)util_now_mono_ns(), timeout_ns = timeout_ms * 1000000;
    /* No try of a retrying call outlasts its deadline: a try late in the
     * call waits for a reply only as long as the call has left. The first
     * try has the whole timeout, and keeps the socket's as it is. */
    int64_t try_ms = timeout_ms;
    if (call_deadline_ns > now && call_deadline_ns - now < timeout_ns - 100000000)
        try_ms = MAX((call_deadline_ns - now) / 1000000, 100);
    if (l->c) {
        int rc = l->c->timeout_ms == try_ms ? 0 : net_set_timeout(l->c, (int)try_ms);
        if (rc) {
            net_close(l->c);
            l->c = NULL;
        }
        return rc;
    }
    int connect_ms = (int)MIN(fs->conf.connect_timeout_ms, try_ms);
    /* A target out of reach for timeout_ms is written off: each request
     * still tries it, once and briefly, so one that is back is used at
     * once; one still out of reach fails the request with EIO at once. */
    pthread_mutex_lock(&t->lock);
    bool written_off = t->down_since_ns && now - t->down_since_ns >= timeout_ns;
    pthread_mutex_unlock(&t->lock);
    if (written_off)
        connect_ms = MIN(connect_ms, 1000);
    int rc = net_connect(host, port, &fs->key, fs->client_id, "libstria", connect_ms, &l->c);
    if (rc == -EACCES)
        log_error("%s:%u refused this client: the cluster key does not match (key file %s)", host,
                  port, fs->key_path);
    if (rc && cl_unreachable(rc, false)) {
        pthread_mutex_lock(&t->lock);
        if (!t->down_since_ns)
            t->down_since_ns = now;
        pthread_mutex_unlock(&t->lock);
        if (written_off)
            rc = -EIO; /* the one try failed: no waiting again */
    }
    /* A server that stops answering (its host cut off, or frozen) must not
     * hold a caller forever. */
    if (rc == 0 && (rc = net_set_timeout(l->c, (int)try_ms))) {
        net_close(l->c);
        l->c = NULL;
    }
    return rc;
}

int cl_get(stria_fs_t *fs, uint8_t kind, uint32_t index, struct lease *l)
{
    l->t = NULL;
    l->c = NULL;
    int rc = lease_once(fs, kind, index, l);
    if (rc == 0 || kind == PROTO_NODE_MGMT || rc == -EACCES || rc == -EIO)
        return rc;
    /* Unknown or unreachable: the map may have moved on. Only a new
     * address is worth a second try now. */
    uint64_t gen = l->t ? l->t->gen : 0;
    if (cl_refresh_map(fs) == 0 && (rc == -ENXIO || !l->t || l->t->gen != gen))
        rc = lease_once(fs, kind, index, l);
    if (rc == -ENXIO)
        log_warn("no %s%04x in the cluster map", kind == PROTO_NODE_META ? "MDT" : "OST", index);
    return rc;
}

int stria_set_io_timeout(stria_fs_t *fs, int ms)
{
    if (ms < 500 || ms > 3600000)
        return -EINVAL;
    __atomic_store_n(&fs->conf.timeout_ms, (int64_t)ms, __ATOMIC_RELAXED);
    return 0;
}

/* One flag per thread, the net layer's: its waits for replies stop too. */
const volatile int *cl_set_cancel(const volatile int *flag)
{
    return net_set_cancel(flag);
}

bool cl_cancelled(void)
{
    return net_cancelled();
}

const volatile int *stria_set_thread_cancel(const volatile int *flag)
{
    return cl_set_cancel(flag);
}

/* ---- caches and services a server turns on (stria.h) ---- */

int stria_start_mdcache(stria_fs_t *fs)
{
    return fs->mdc ? 0 : mdc_start(fs);
}

/* wb.c's removal, handed to the caller's callback as its own copy. */
static void removed_by_wb(stria_fs_t *fs, struct stria_removed *rm)
{
    struct stria_removed *copy = malloc(sizeof(*copy));
    if (!copy) {
        cl_destroy(fs, rm); /* nobody can be told: at least free the space */
        return;
    }
    *copy = *rm;
    if (fs->removed_fn)
        fs->removed_fn(fs, copy, fs->removed_arg);
    else
        stria_removed_finish(fs, copy);
}

int stria_start_unlink_behind(stria_fs_t *fs, stria_removed_fn removed, void *arg)
{
    if (!fs->mdc)
        return -EINVAL; /* it decides from the cache's leases */
    if (fs->wb)
        return 0;
    fs->removed_fn = removed;
    fs->removed_arg = arg;
    return wb_start(fs, removed_by_wb);
}

int stria_unlink_behind(stria_fs_t *fs, uint64_t parent, const char *name,
                        int (*is_open)(uint64_t ino, void *arg), void *arg)
{
    struct mdc *m = fs->mdc;
    struct proto_cred cred;
    struct proto_attr a;
    if (!m || !fs->wb || !name || strlen(name) > PROTO_MAX_NAME)
        return -EAGAIN;
    cl_cred(&cred);
    if (!mdc_lookup_victim(m, parent, name, &cred, &a) || a.nlink != 1 ||
        !(S_ISREG(a.mode) || S_ISLNK(a.mode)))
        return -EAGAIN;
    if (is_open && is_open(a.ino, arg))
        return -EAGAIN;
    mdc_unlinked(m, parent, name, a.ino);
    return wb_unlink(fs, parent, name, &cred) == 0 ? 0 : -EAGAIN;
}

void stria_unlink_behind_stats(stria_fs_t *fs, struct stria_unlink_stats *out)
{
    struct wb_stats w;
    wb_get_stats(fs, &w);
    *out = (struct stria_unlink_stats){w.queued, w.sent, w.failed, w.grants};
}

void stria_set_write_gather(stria_fs_t *fs, int on)
{
    gather_set(fs, on != 0);
}

void stria_io_stats(stria_fs_t *fs, struct stria_io_stats *out)
{
    memset(out, 0, sizeof(*out));
    gather_stats(fs, &out->writes_gathered, &out->gathers_sent);
    out->readahead_fills = atomic_load_explicit(&fs->ra_fills, memory_order_relaxed);
    out->readahead_hits = atomic_load_explicit(&fs->ra_hits, memory_order_relaxed);
}

__thread bool cl_replaying;
__thread bool cl_long_call;

bool cl_op_resendable(enum cl_op op)
{
    return !(proto_op_flags((uint16_t)op) & PROTO_F_CHANGE); /* proto.h: the message table */
}

bool cl_open_changes(const struct proto_open_req *q)
{
    return (q->flags & (O_CREAT | O_TRUNC)) != 0;
}

/* Slots for changes in flight, one bit each (slot 0 is "none" on the
 * wire, so bit i is slot i + 1). More than this many changes in flight at
 * once from one process wait for a slot. */
#define CL_TAG_WORDS 16
static _Atomic uint64_t tag_used[CL_TAG_WORDS];

uint16_t cl_tag_get(void)
{
    for (unsigned spins = 0;; spins++) {
        for (unsigned w = 0; w < CL_TAG_WORDS; w++) {
            uint64_t v = atomic_load(&tag_used[w]);
            while (~v) {
                int b = __builtin_ctzll(~v);
                if (atomic_compare_exchange_weak(&tag_used[w], &v, v | 1ull << b))
                    return (uint16_t)(w * 64 + (unsigned)b + 1);
            }
        }
        struct timespec ts = {0, spins < 100 ? 100000 : 1000000};
        nanosleep(&ts, NULL);
    }
}

void cl_tag_put(uint16_t tag)
{
    unsigned i = tag - 1u;
    atomic_fetch_and(&tag_used[i / 64], ~(1ull << (i % 64)));
}

void cl_retry_init(stria_fs_t *fs, struct cl_retry *r)
{
    int64_t timeout_ms = __atomic_load_n(&fs->conf.timeout_ms, __ATOMIC_RELAXED);
    r->start_ns = (int64_t)util_now_mono_ns();
    r->deadline_ns = r->start_ns + timeout_ms * 1000000;
    r->delay_ms = 50;
    r->outer_ns = call_deadline_ns;
    call_deadline_ns = r->deadline_ns;
}

void cl_retry_end(struct cl_retry *r)
{
    /* A deadline left behind would cut the tries of later calls short. */
    call_deadline_ns = r->outer_ns;
}

bool cl_unreachable(int rc, bool transport)
{
    switch (rc) {
    case -ECONNREFUSED:
    case -ECONNRESET:
    case -ECONNABORTED:
    case -EHOSTUNREACH:
    case -ENETUNREACH:
    case -ENETDOWN:
    case -ETIMEDOUT:
    case -EPIPE:
    case -EAGAIN:
        return true;
    default:
        return transport && rc < 0;
    }
}

bool cl_retry_again(struct cl_retry *r, int *rc, bool transport, const char *what)
{
    if (!cl_unreachable(*rc, transport))
        return false;
    int64_t now = (int64_t)util_now_mono_ns();
    /* Sleep the pause (at most to the deadline) in slices, so that an
     * interrupt ends the wait soon. */
    int64_t until = MIN(now + (int64_t)r->delay_ms * 1000000, r->deadline_ns);
    bool time_left = now < r->deadline_ns;
    while (time_left && now < until && !cl_cancelled()) {
        struct timespec ts = {0, (long)MIN(until - now, 100000000)};
        nanosleep(&ts, NULL);
        now = (int64_t)util_now_mono_ns();
    }
    if (time_left && !cl_cancelled()) {
        r->delay_ms = MIN(r->delay_ms * 2, 1000);
        return true;
    }
    if (cl_cancelled()) {
        *rc = -EINTR;
        return false;
    }
    log_warn("%s: out of reach for %lld ms (%s): giving up with EIO", what,
             (long long)((now - r->start_ns) / 1000000), log_err(*rc));
    *rc = -EIO;
    return false;
}

void cl_silent_since(struct lease *l, int64_t since_ns)
{
    pthread_mutex_lock(&l->t->lock);
    if (!l->t->down_since_ns || since_ns < l->t->down_since_ns)
        l->t->down_since_ns = since_ns;
    pthread_mutex_unlock(&l->t->lock);
}

void cl_put(struct lease *l, bool broken)
{
    struct ctarget *t = l->t;
    if (!l->c)
        return;
    pthread_mutex_lock(&t->lock);
    if (!broken)
        t->down_since_ns = 0; /* it answered */
    else if (!t->down_since_ns)
        t->down_since_ns = (int64_t)util_now_mono_ns();
    if (!broken && l->gen == t->gen && t->nidle < CT_IDLE_MAX) {
        t->idle[t->nidle++] = l->c;
        l->c = NULL;
    } else if (broken) {
        /* The server likely restarted: its other idle connections are as
         * dead as this one, and a retry must not pick one of them. */
        ct_drain(t);
    }
    pthread_mutex_unlock(&t->lock);
    net_close(l->c);
    l->c = NULL;
}

static int update_slots(struct ctarget ***v, uint32_t *n, const struct map_target *m)
{
    if (m->index >= *n) {
        uint32_t nn = m->index + 1;
        struct ctarget **nv = realloc(*v, nn * sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        memset(nv + *n, 0, (nn - *n) * sizeof(*nv));
        *v = nv;
        *n = nn;
    }
    struct ctarget *t = (*v)[m->index];
    if (!t) {
        if (!(t = malloc(sizeof(*t))))
            return -ENOMEM;
        ct_init(t, m->kind, m->index, m->host, m->port);
        (*v)[m->index] = t;
    }
    pthread_mutex_lock(&t->lock);
    if (strcmp(t->host, m->host) || t->port != m->port) {
        snprintf(t->host, sizeof(t->host), "%s", m->host);
        t->port = m->port;
        t->gen++;
        ct_drain(t);
    }
    t->state = m->state;
    pthread_mutex_unlock(&t->lock);
    return 0;
}

/* Fetch the map into m (the caller frees it). */
static int get_map(stria_fs_t *fs, struct cluster_map *m, char *fsname, size_t fslen)
{
    struct lease l;
    int rc;
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((rc = cl_get(fs, PROTO_NODE_MGMT, 0, &l)))
            return rc;
        struct proto_get_map_req q = {0};
        struct proto_get_map_rep r;
        bool transport = false;
        rc = net_call_get_map(l.c, &q, &r, NULL, 0, NULL, 0, NULL, &transport);
        if (rc == 0) {
            m->epoch = r.epoch;
            rc = map_decode(r.map.p, r.map.len, m);
            if (fsname && proto_str_copy(&r.fsname, fsname, fslen))
                snprintf(fsname, fslen, "stria");
        }
        bool retry = transport && l.reused;
        cl_put(&l, transport);
        if (!retry)
            break;
    }
    return rc;
}

int cl_refresh_map(stria_fs_t *fs)
{
    struct cluster_map m = {0};
    char fsname[64];
    int rc = get_map(fs, &m, fsname, sizeof(fsname));
    if (rc)
        return rc;
    pthread_rwlock_wrlock(&fs->map_lock);
    fs->epoch = m.epoch;
    snprintf(fs->fsname, sizeof(fs->fsname), "%s", fsname);
    uint32_t osts = 0, mdts = 0;
    for (uint32_t i = 0; i < m.n && rc == 0; i++) {
        if (m.t[i].kind == PROTO_NODE_META) {
            rc = update_slots(&fs->mdt, &fs->nmdt_slots, &m.t[i]);
            mdts++;
        } else if (m.t[i].kind == PROTO_NODE_STOR) {
            rc = update_slots(&fs->ost, &fs->nost_slots, &m.t[i]);
            osts++;
        }
    }
    fs->ost_count = osts;
    __atomic_store_n(&fs->mdt_count, mdts, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&fs->map_lock);
    map_free(&m);
    return rc;
}

/* ---- metadata calls ---- */

/* ---- cluster ---- */

int stria_cluster_info(stria_fs_t *fs, char *fsname, size_t len, uint64_t *epoch)
{
    int rc = cl_refresh_map(fs);
    if (rc)
        return rc;
    pthread_rwlock_rdlock(&fs->map_lock);
    if (fsname)
        snprintf(fsname, len, "%s", fs->fsname);
    if (epoch)
        *epoch = fs->epoch;
    pthread_rwlock_unlock(&fs->map_lock);
    return 0;
}

/* Ask a server for fresh figures of its targets. */
static int fresh_stats(stria_fs_t *fs, const struct map_target *m, struct proto_tstats *ts)
{
    struct lease l;
    int rc = cl_get(fs, m->kind, m->index, &l);
    if (rc)
        return rc;
    bool transport = false;
    if (m->kind == PROTO_NODE_META) {
        struct proto_statfs_req q = {0};
        struct proto_statfs_rep *r = malloc(sizeof(*r));
        rc = r ? net_call_statfs(l.c, &q, r, NULL, 0, NULL, 0, NULL, &transport) : -ENOMEM;
        if (rc == 0)
            *ts = r->targets;
        free(r);
    } else {
        struct proto_ostatfs_req q = {0};
        struct proto_ostatfs_rep *r = malloc(sizeof(*r));
        rc = r ? net_call_ostatfs(l.c, &q, r, NULL, 0, NULL, 0, NULL, &transport) : -ENOMEM;
        if (rc == 0)
            *ts = r->targets;
        free(r);
    }
    cl_put(&l, transport);
    return rc;
}

/* The ops blob of a STATS reply, as the public struct. */
static int decode_stats(const struct proto_blob *b, struct stria_op_stats **ops, size_t *n)
{
    _Static_assert(STRIA_STAT_BUCKETS == PROTO_STAT_BUCKETS, "one histogram on both sides");
    if (b->len % PROTO_STAT_LEN)
        return -EPROTO;
    size_t count = b->len / PROTO_STAT_LEN;
    struct stria_op_stats *v = calloc(count ? count : 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p = b->p + i * PROTO_STAT_LEN;
        snprintf(v[i].op, sizeof(v[i].op), "%s", proto_op_name((uint16_t)(p[0] | p[1] << 8)));
        v[i].count = proto_le64(p + 2);
        v[i].errors = proto_le64(p + 10);
        v[i].total_ns = proto_le64(p + 18);
        v[i].max_ns = proto_le64(p + 26);
        for (unsigned k = 0; k < PROTO_STAT_BUCKETS; k++)
            v[i].hist[k] = proto_le64(p + 34 + 8 * k);
    }
    *ops = v;
    *n = count;
    return 0;
}

int stria_mdt_stats(stria_fs_t *fs, uint32_t mdt, struct stria_op_stats **ops, size_t *n,
                    uint64_t *uptime_ns)
{
    *ops = NULL;
    *n = 0;
    struct proto_stats_req q;
    struct proto_stats_rep r;
    int drc = 0;
    int rc = MDT_CALL(fs, mdt, stats, &q, &r, drc = decode_stats(&r.ops, ops, n);
                      *uptime_ns = r.uptime_ns);
    return rc ? rc : drc;
}

int stria_ost_stats(stria_fs_t *fs, uint32_t ost, struct stria_op_stats **ops, size_t *n,
                    uint64_t *uptime_ns)
{
    *ops = NULL;
    *n = 0;
    struct proto_stats_req q;
    struct proto_stats_rep r;
    int drc = 0;
    int rc =
        TARGET_CALL(fs, PROTO_NODE_STOR, ost, stats, &q, &r, drc = decode_stats(&r.ops, ops, n);
                    *uptime_ns = r.uptime_ns);
    return rc ? rc : drc;
}

int stria_mdt_fsck(stria_fs_t *fs, uint32_t mdt, int repair, struct stria_fsck_report *out,
                   char *text, size_t cap)
{
    return stria_mdt_fsck_fixes(fs, mdt, repair, NULL, 0, out, text, cap);
}

int stria_mdt_fsck_fixes(stria_fs_t *fs, uint32_t mdt, int repair, const void *fixes, size_t len,
                         struct stria_fsck_report *out, char *text, size_t cap)
{
    memset(out, 0, sizeof(*out));
    if (text && cap)
        text[0] = '\0';
    if (len > PROTO_MAX_REQ_PAYLOAD - 1024)
        return -E2BIG;
    struct proto_fsck_req q = {.repair = repair != 0, .fixes = {fixes, (uint32_t)len}};
    struct proto_fsck_rep r;
    cl_cred(&q.cred);
    cl_long_call = true; /* a large MDT takes long to walk */
    int rc = MDT_CALL(fs, mdt, fsck, &q, &r, ({
                          out->inodes = r.inodes;
                          out->entries = r.entries;
                          out->dangling = r.dangling;
                          out->orphans = r.orphans;
                          out->bad_nlink = r.bad_nlink;
                          out->bad_parent = r.bad_parent;
                          out->corrupt = r.corrupt;
                          out->fixed = r.fixed;
                          out->open_ops = r.open_ops;
                          if (r.refs.len && (out->refs = malloc(r.refs.len))) {
                              memcpy(out->refs, r.refs.p, r.refs.len);
                              out->refs_len = r.refs.len;
                          }
                          out->refs_full = r.refs_full || (r.refs.len && !out->refs);
                          if (text && cap) {
                              size_t len = r.text.len < cap - 1 ? r.text.len : cap - 1;
                              memcpy(text, r.text.p, len);
                              text[len] = '\0';
                          }
                      }));
    cl_long_call = false;
    return rc;
}

int stria_targets(stria_fs_t *fs, struct stria_target **out, size_t *n)
{
    struct cluster_map m = {0};
    int rc = get_map(fs, &m, NULL, 0);
    if (rc)
        return rc;
    struct stria_target *v = calloc(m.n ? m.n : 1, sizeof(*v));
    struct proto_tstats *ts = malloc(sizeof(*ts));
    if (!v || !ts) {
        free(v);
        free(ts);
        map_free(&m);
        return -ENOMEM;
    }
    size_t k = 0;
    const struct map_target *asked = NULL; /* the server ts came from */
    bool have = false;
    /* MDTs first, then OSTs, each by index, as lfs df lists them. */
    for (int pass = 0; pass < 2; pass++) {
        uint8_t kind = pass == 0 ? PROTO_NODE_META : PROTO_NODE_STOR;
        for (uint32_t idx = 0, seen = 0; seen < map_count(&m, kind); idx++) {
            const struct map_target *t = map_find(&m, kind, idx);
            if (!t)
                continue;
            seen++;
            struct stria_target *o = &v[k++];
            snprintf(o->kind, sizeof(o->kind), "%s", pass == 0 ? "MDT" : "OST");
            o->index = t->index;
            o->online = t->state == MAP_ONLINE;
            snprintf(o->node, sizeof(o->node), "%s", t->node);
            snprintf(o->host, sizeof(o->host), "%s", t->host);
            o->port = t->port;
            o->heartbeat_age_ms = t->age_ms;
            struct proto_tstat s = t->stat;
            /* One server answers for all its targets: ask it once. */
            bool same = asked && asked->kind == t->kind && asked->port == t->port &&
                        !strcmp(asked->host, t->host);
            if (o->online && !same) {
                asked = t;
                have = fresh_stats(fs, t, ts) == 0;
            }
            if (o->online && have) {
                for (uint32_t j = 0; j < ts->n; j++)
                    if (ts->t[j].index == t->index)
                        s = ts->t[j];
            }
            o->bytes_total = s.bytes_total;
            o->bytes_used = s.bytes_used;
            o->bytes_avail = s.bytes_avail;
            o->inodes_total = s.inodes_total;
            o->inodes_used = s.inodes_used;
        }
    }
    free(ts);
    map_free(&m);
    *out = v;
    *n = k;
    return 0;
}

int stria_statfs(stria_fs_t *fs, struct statvfs *st)
{
    struct stria_target *v;
    size_t n;
    int rc = stria_targets(fs, &v, &n);
    if (rc)
        return rc;
    uint64_t total = 0, avail = 0, free_ = 0, files = 0, ffree = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].kind[0] == 'O') {
            total += v[i].bytes_total;
            avail += v[i].bytes_avail;
            free_ += v[i].bytes_total - MIN(v[i].bytes_used, v[i].bytes_total);
        } else {
            files += v[i].inodes_total;
            ffree += v[i].inodes_total - MIN(v[i].inodes_used, v[i].inodes_total);
        }
    }
    free(v);
    memset(st, 0, sizeof(*st));
    st->f_bsize = 1 << 20;
    st->f_frsize = 4096;
    st->f_blocks = total / 4096;
    st->f_bfree = free_ / 4096;
    st->f_bavail = avail / 4096;
    st->f_files = files;
    st->f_ffree = ffree;
    st->f_favail = ffree;
    st->f_namemax = PROTO_MAX_NAME;
    return 0;
}
