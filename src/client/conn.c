/*
 * libstria's transport core (conn.h): configuration, credentials, the
 * cluster map, pooled connections and the machinery of every call.
 *
 * Connections are pooled per target and lent to one thread at a time, so
 * the library is thread-safe without a global lock. Reply strings point
 * into a connection's buffer, so each call copies what it needs before
 * returning its connection. A request that fails on a pooled connection
 * (the server restarted since it was last used) is retried once on a fresh
 * one: the failed attempt never reached a live server. This layer calls no
 * other module of src/client: what the layers above need around an MDT
 * call, they hook into struct stria_fs.
 */
#include "conn.h"

#include "../common/log.h"
#include "../common/util.h"
#include "mdcache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    O(statfs_max_age_ms, CFG_INT, 0, 60000, "1000", false,
      "how long statfs (df of a mount) answers from the figures the servers last gave, "
      "without asking them again; 0: always ask"),
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

bool cl_cred_hold(void)
{
    if (cred_set)
        return false;
    cl_cred(&thread_cred);
    cred_set = true;
    return true;
}

void cl_cred_release(bool held)
{
    if (held)
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

int cl_conn_open(stria_fs_t *fs, const char *conf)
{
    int rc;
    if (conf)
        snprintf(fs->conf_path, sizeof(fs->conf_path), "%s", conf);
    else if ((rc = stria_conf_find(fs->conf_path, sizeof(fs->conf_path))))
        return rc;
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
    pthread_mutex_init(&fs->statfs_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* admin.c's waits */
    pthread_cond_init(&fs->statfs_cond, &ca);
    pthread_condattr_destroy(&ca);
    ct_init(&fs->mgmt, PROTO_NODE_MGMT, 0, fs->conf.mgmt.host, fs->conf.mgmt.port);
    if ((rc = cl_refresh_map(fs)))
        goto fail;
    return 0;
fail:
    cfg_free(&client_table, &fs->conf);
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

void cl_conn_close(stria_fs_t *fs)
{
    ct_drain(&fs->mgmt);
    free_slots(fs->mdt, fs->nmdt_slots);
    free_slots(fs->ost, fs->nost_slots);
    cfg_free(&client_table, &fs->conf);
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
    if (rc == -EACCES) {
        log_error("%s:%u refused this client: the cluster key does not match (key file %s)", host,
                  port, fs->key_path);
        /* An OST's address answered with another key: not its daemon (its
         * port taken by another cluster's, as on nodes that run on-demand
         * file systems one after another). The OST is out of reach, and a
         * read or write waits for it and fails with EIO as for any other. */
        if (kind == PROTO_NODE_STOR)
            rc = -ECONNREFUSED;
    }
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

int stria_io_timeout(stria_fs_t *fs)
{
    return (int)__atomic_load_n(&fs->conf.timeout_ms, __ATOMIC_RELAXED);
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

bool cl_ns_change(stria_fs_t *fs, enum cl_op op, const void *q)
{
    struct proto_attr a;
    switch (op) {
    case CL_OP_open:
    case CL_OP_mkdir:
    case CL_OP_symlink:
    case CL_OP_mknod:
    case CL_OP_link:
    case CL_OP_unlink:
    case CL_OP_unlinks:
    case CL_OP_setsize:
    case CL_OP_layout_intent:
    case CL_OP_destroyed:
        return false;
    case CL_OP_setattr:
    case CL_OP_setxattr:
    case CL_OP_removexattr: {
        /* Only a directory's attributes say what a create in it gets:
         * chmod, chown, utimens and xattrs of the files a program writes
         * (tar, cp -p) leave the templates alone. A directory a template
         * is of, or one the cache knows, is one. */
        uint64_t ino = op == CL_OP_setattr    ? ((const struct proto_setattr_req *)q)->ino
                       : op == CL_OP_setxattr ? ((const struct proto_setxattr_req *)q)->ino
                                              : ((const struct proto_removexattr_req *)q)->ino;
        return (fs->tmpl_dir && fs->tmpl_dir(fs, ino)) ||
               (fs->mdc && mdc_getattr(fs->mdc, ino, &a) && S_ISDIR(a.mode));
    }
    default:
        return !cl_op_resendable(op);
    }
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

/* Tests (STRIA_TEST_POISON_REPLIES) overwrite a reply once its
 * connection goes back to the pool, as another thread's call on it would:
 * what a caller still reads of it then is wrong every time, not once in
 * 50,000 opens. -1: not looked up yet. */
static int poison_replies = -1;

void cl_put(struct lease *l, bool broken)
{
    struct ctarget *t = l->t;
    if (!l->c)
        return;
    if (__atomic_load_n(&poison_replies, __ATOMIC_RELAXED) < 0)
        __atomic_store_n(&poison_replies, getenv("STRIA_TEST_POISON_REPLIES") != NULL,
                         __ATOMIC_RELAXED);
    if (__atomic_load_n(&poison_replies, __ATOMIC_RELAXED) && l->c->rx_len)
        memset(l->c->rx, 0xa5, l->c->rx_len);
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

int cl_get_map(stria_fs_t *fs, struct cluster_map *m, char *fsname, size_t fslen)
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
    int rc = cl_get_map(fs, &m, fsname, sizeof(fsname));
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
