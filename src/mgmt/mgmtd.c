/*
 * stria-mgmtd: the management service. It keeps the cluster map: every MDT
 * and OST, the node serving it, its address, state and capacity, under an
 * epoch that moves on every change so daemons and clients know when to
 * fetch the map again.
 *
 * Daemons register by heartbeat; a target whose heartbeats stop for
 * offline_after_ms is marked offline (and online again when they resume).
 * The known targets, their state and last reported capacity, and the
 * epoch are saved in data_dir/targets whenever the map changes. A restarted
 * mgmtd takes the map up where it was: a target online before is online,
 * as if heard at start, and goes offline after offline_after_ms of silence
 * like any other; one offline before stays offline until it heartbeats.
 * (Marking every target offline at start would hand the MDTs a map with no
 * OST for the moment until the heartbeats came, and fail their creates.)
 *
 * It keeps the OST pools too (pools.h): changed by POOL, saved in
 * data_dir/pools, sent with the map.
 *
 * It also runs the policy engine of the data repositories (policy.h): one
 * per cluster, as the management service is.
 */
#include "../common/config.h"
#include "../common/daemon.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../net/metrics.h"
#include "../net/net.h"
#include "../proto/map.h"
#include "policy.h"
#include "pools.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

struct mgmtd_conf {
    struct daemon_conf d;
    char *data_dir;
    char *fsname;
    int64_t offline_after_ms;
    int64_t policy_interval;
};

#define O(n, t, lo, hi, d, req, h)                                                                 \
    {                                                                                              \
#n, t, lo, hi, d, req, h, offsetof(struct mgmtd_conf, n)                                   \
    }
static const struct cfg_option mgmtd_options[] = {
    DAEMON_BASE_OPTIONS(struct mgmtd_conf, "7400"),
    O(data_dir, CFG_STR, 0, 0, NULL, true, "directory for the saved cluster map"),
    O(fsname, CFG_STR, 0, 0, "stria", false, "file system name (shown by df, up to 31 chars)"),
    O(offline_after_ms, CFG_INT, 500, 3600000, "5000", false,
      "mark a target offline after this long without a heartbeat"),
    O(policy_interval, CFG_INT, 0, 86400, "10", false,
      "seconds between rounds of the policy engine, which applies the data "
      "repositories' sync, export and tiering settings (0: off)"),
};
#undef O

static const struct cfg_table mgmtd_table = {"stria-mgmtd",
                                             "Stria management service: the cluster map",
                                             mgmtd_options, ARRAY_SIZE(mgmtd_options)};

struct tgt {
    struct map_target m;
    uint64_t last_seen_ns; /* monotonic; 0: never since start */
    uint64_t incarnation;
    uint64_t told_avail; /* bytes_avail when the epoch last moved for it */
};

/* Has a target's free space moved enough since the map's readers last
 * heard (the epoch moved) that they should look again? An eighth of what
 * was free, at most 1 GiB, at least 1 MiB: the nearer a target is to full,
 * the sooner the MDTs learn it, so that they stop placing files on it
 * (their threshold is 64 MiB). Filling a target from 10 TB to full moves
 * the epoch about a hundred times. */
static bool avail_moved(uint64_t told, uint64_t now)
{
    uint64_t d = told > now ? told - now : now - told;
    return d >= (1ull << 20) && d > MIN(told / 8, 1ull << 30);
}

struct mgmtd {
    pthread_mutex_t lock;
    struct tgt *t;
    uint32_t n, cap;
    uint64_t epoch;
    char fsname[64];
    char state_path[4200];
    int64_t offline_after_ms;
    struct pools *pools;
};

static const char *kind_name(uint8_t k)
{
    return k == PROTO_NODE_META ? "MDT" : k == PROTO_NODE_STOR ? "OST" : "?";
}

/* Save the known targets (called with the lock held), in lines of
 * "target KIND INDEX NODE HOST PORT STATE TOTAL USED AVAIL INODES IUSED";
 * load_state reads the older lines without the state and capacity too. */
static void save_state(struct mgmtd *g)
{
    /* A line is at most 7 + 2 * 11 + 63 + 255 + 6 + 4 + 5 * 21 bytes. */
    size_t cap = 128 + (size_t)g->n * 512, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return;
    len += (size_t)snprintf(buf + len, cap - len, "epoch %" PRIu64 "\n", g->epoch);
    for (uint32_t i = 0; i < g->n; i++) {
        const struct map_target *m = &g->t[i].m;
        const struct proto_tstat *s = &m->stat;
        int n = snprintf(buf + len, cap - len,
                         "target %u %u %s %s %u %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                         " %" PRIu64 "\n",
                         m->kind, m->index, m->node, m->host, m->port, m->state, s->bytes_total,
                         s->bytes_used, s->bytes_avail, s->inodes_total, s->inodes_used);
        if (n < 0 || (size_t)n >= cap - len) {
            log_error("cannot save cluster map: line of %s%04x too long", kind_name(m->kind),
                      m->index);
            free(buf);
            return;
        }
        len += (size_t)n;
    }
    int rc = util_write_file_atomic(g->state_path, buf, len, 0600);
    if (rc)
        log_error("cannot save cluster map to %s: %s", g->state_path, log_err(rc));
    free(buf);
}

static struct tgt *add_target(struct mgmtd *g)
{
    if (g->n == g->cap) {
        uint32_t cap = g->cap ? g->cap * 2 : 16;
        if (cap > MAP_MAX_TARGETS)
            return NULL;
        struct tgt *t = realloc(g->t, cap * sizeof(*t));
        if (!t)
            return NULL;
        g->t = t;
        g->cap = cap;
    }
    struct tgt *t = &g->t[g->n++];
    memset(t, 0, sizeof(*t));
    return t;
}

static void load_state(struct mgmtd *g)
{
    char *text = NULL;
    if (util_read_file(g->state_path, 16 << 20, &text, NULL))
        return;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        unsigned kind, index, port, state;
        char node[64], host[256];
        uint64_t epoch;
        int used = 0;
        struct proto_tstat st = {0};
        if (sscanf(line, "epoch %" SCNu64, &epoch) == 1) {
            g->epoch = epoch;
        } else if (sscanf(line, "target %u %u %63s %255s %u%n", &kind, &index, node, host, &port,
                          &used) == 5 &&
                   (kind == PROTO_NODE_META || kind == PROTO_NODE_STOR) && port <= 65535) {
            struct tgt *t = add_target(g);
            if (!t)
                break;
            t->m.kind = (uint8_t)kind;
            t->m.index = index;
            t->m.port = (uint16_t)port;
            t->m.state = MAP_OFFLINE;
            if (sscanf(line + used, " %u %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
                       &state, &st.bytes_total, &st.bytes_used, &st.bytes_avail, &st.inodes_total,
                       &st.inodes_used) == 6 &&
                state == MAP_ONLINE) {
                /* Online as if heard now: offline after offline_after_ms
                 * of silence from here, like any other target. */
                t->m.state = MAP_ONLINE;
                t->m.stat = st;
                t->m.stat.index = index;
                t->told_avail = st.bytes_avail;
                t->last_seen_ns = util_now_mono_ns();
            }
            snprintf(t->m.node, sizeof(t->m.node), "%s", node);
            snprintf(t->m.host, sizeof(t->m.host), "%s", host);
        } else {
            log_warn("%s: ignoring unreadable line '%.60s'", g->state_path, line);
        }
    }
    free(text);
    /* A new epoch: every reader fetches the map again. */
    g->epoch++;
    log_info("loaded cluster map: %u targets, epoch %" PRIu64, g->n, g->epoch);
}

static struct tgt *find(struct mgmtd *g, uint8_t kind, uint32_t index)
{
    for (uint32_t i = 0; i < g->n; i++)
        if (g->t[i].m.kind == kind && g->t[i].m.index == index)
            return &g->t[i];
    return NULL;
}

static int h_heartbeat(void *p, struct net_req *req, struct net_rep *rep)
{
    struct mgmtd *g = p;
    struct proto_heartbeat_req *q = malloc(sizeof(*q));
    if (!q)
        return -ENOMEM;
    int rc = proto_dec_heartbeat_req(&req->dec, q) ? -EBADMSG : 0;
    char node[64], host[256];
    if (!rc && (q->kind != PROTO_NODE_META && q->kind != PROTO_NODE_STOR))
        rc = -EINVAL;
    if (!rc && (proto_str_copy(&q->node, node, sizeof(node)) ||
                proto_str_copy(&q->host, host, sizeof(host)) || !node[0] || !host[0] ||
                strchr(node, ' ') || strchr(host, ' ') || q->port == 0))
        rc = -EINVAL;
    if (rc) {
        log_warn("bad heartbeat peer=%s: %s", req->peer, log_err(rc));
        free(q);
        return rc;
    }
    uint64_t now = util_now_mono_ns();
    bool changed = false, save = false;
    pthread_mutex_lock(&g->lock);
    for (uint32_t i = 0; i < q->targets.n && !rc; i++) {
        const struct proto_tstat *s = &q->targets.t[i];
        struct tgt *t = find(g, q->kind, s->index);
        if (t && strcmp(t->m.node, node) && t->m.state == MAP_ONLINE &&
            t->incarnation != q->incarnation) {
            log_warn("refusing %s%04x from node=%s peer=%s: node=%s serves it", kind_name(q->kind),
                     s->index, node, req->peer, t->m.node);
            rc = -EEXIST;
            break;
        }
        if (!t) {
            if (!(t = add_target(g))) {
                rc = -ENOSPC;
                break;
            }
            t->m.kind = q->kind;
            t->m.index = s->index;
            save = true;
        }
        if (strcmp(t->m.node, node) || strcmp(t->m.host, host) || t->m.port != q->port) {
            snprintf(t->m.node, sizeof(t->m.node), "%s", node);
            snprintf(t->m.host, sizeof(t->m.host), "%s", host);
            t->m.port = q->port;
            save = changed = true;
        }
        if (t->m.state != MAP_ONLINE) {
            t->m.state = MAP_ONLINE;
            changed = true;
            log_info("%s%04x online node=%s addr=%s:%u", kind_name(q->kind), s->index, node, host,
                     q->port);
        }
        t->m.stat = *s;
        if (avail_moved(t->told_avail, s->bytes_avail)) {
            log_info("%s%04x free space %llu MiB (was %llu MiB)", kind_name(q->kind), s->index,
                     (unsigned long long)(s->bytes_avail >> 20),
                     (unsigned long long)(t->told_avail >> 20));
            t->told_avail = s->bytes_avail;
            changed = true;
        }
        t->last_seen_ns = now;
        t->incarnation = q->incarnation;
    }
    if (changed)
        g->epoch++;
    if (save || changed)
        save_state(g);
    struct proto_heartbeat_rep r = {.epoch = g->epoch};
    pthread_mutex_unlock(&g->lock);
    free(q);
    return rc ? rc : proto_enc_heartbeat_rep(&rep->enc, &r);
}

static int h_get_map(void *p, struct net_req *req, struct net_rep *rep)
{
    struct mgmtd *g = p;
    uint32_t cap = PROTO_MAX_REP_PAYLOAD - 1024;
    uint8_t *buf = net_scratch(req, cap);
    if (!buf)
        return -ENOMEM;
    uint64_t now = util_now_mono_ns();
    pthread_mutex_lock(&g->lock);
    struct cluster_map m = {.epoch = g->epoch, .n = g->n};
    struct map_target *snap = malloc(sizeof(*snap) * (g->n ? g->n : 1));
    if (!snap) {
        pthread_mutex_unlock(&g->lock);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < g->n; i++) {
        snap[i] = g->t[i].m;
        snap[i].age_ms = g->t[i].last_seen_ns ? (now - g->t[i].last_seen_ns) / 1000000 : UINT64_MAX;
    }
    m.t = snap;
    int rc = pools_snapshot(g->pools, &m);
    struct proto_get_map_rep r = {.epoch = g->epoch, .fsname = proto_str_c(g->fsname)};
    pthread_mutex_unlock(&g->lock);
    int len = rc ? rc : map_encode(&m, buf, cap);
    map_free(&m);
    if (len < 0)
        return len;
    r.map.p = buf;
    r.map.len = (uint32_t)len;
    return proto_enc_get_map_rep(&rep->enc, &r);
}

static bool ost_known(void *p, uint32_t idx)
{
    return find(p, PROTO_NODE_STOR, idx) != NULL;
}

static const char *pool_op_name(uint8_t op)
{
    static const char *const names[] = {"?", "new", "add", "remove", "destroy"};
    return op <= PROTO_POOL_DESTROY ? names[op] : "?";
}

/* POOL: the lctl pool_* commands, by root. */
static int h_pool(void *p, struct net_req *req, struct net_rep *rep)
{
    struct mgmtd *g = p;
    struct proto_pool_req q;
    char fsname[64], pool[LAYOUT_POOL_MAX + 1];
    int rc = proto_dec_pool_req(&req->dec, &q) ? -EBADMSG : 0;
    if (!rc && (proto_str_copy(&q.fsname, fsname, sizeof(fsname)) ||
                proto_str_copy(&q.pool, pool, sizeof(pool)) || q.osts.len % 4 ||
                q.osts.len / 4 > MAP_MAX_TARGETS))
        rc = -EINVAL;
    if (rc) {
        log_warn("bad POOL request peer=%s: %s", req->peer, log_err(rc));
        return rc;
    }
    if (q.cred.uid != 0)
        return -EPERM;
    if (strcmp(fsname, g->fsname))
        return -EINVAL;
    uint32_t n = q.osts.len / 4;
    uint32_t *osts = malloc(sizeof(uint32_t) * (n ? n : 1));
    if (!osts)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        osts[i] = proto_le32(q.osts.p + 4 * i);
    pthread_mutex_lock(&g->lock);
    rc = pools_change(g->pools, q.op, pool, osts, n, ost_known, g);
    if (rc == 0)
        g->epoch++;
    struct proto_pool_rep r = {.epoch = g->epoch};
    pthread_mutex_unlock(&g->lock);
    if (rc == 0)
        log_info("pool %s.%s: %s osts=%u peer=%s", fsname, pool, pool_op_name(q.op), n, req->peer);
    else
        log_info("pool %s.%s: %s refused: %s", fsname, pool, pool_op_name(q.op), log_err(rc));
    free(osts);
    return rc ? rc : proto_enc_pool_rep(&rep->enc, &r);
}

static int h_ping(void *p, struct net_req *req, struct net_rep *rep)
{
    (void)p, (void)req, (void)rep;
    return 0;
}

static void check_offline(void *arg)
{
    struct mgmtd *g = arg;
    uint64_t now = util_now_mono_ns(), limit = (uint64_t)g->offline_after_ms * 1000000ull;
    bool changed = false;
    pthread_mutex_lock(&g->lock);
    for (uint32_t i = 0; i < g->n; i++) {
        struct tgt *t = &g->t[i];
        if (t->m.state == MAP_ONLINE && now - t->last_seen_ns > limit) {
            t->m.state = MAP_OFFLINE;
            g->epoch++;
            changed = true;
            log_warn("%s%04x offline node=%s: no heartbeat for %" PRId64 " ms",
                     kind_name(t->m.kind), t->m.index, t->m.node, g->offline_after_ms);
        }
    }
    if (changed)
        save_state(g); /* once, however many went */
    pthread_mutex_unlock(&g->lock);
}

int main(int argc, char **argv)
{
    static struct mgmtd_conf conf; /* lives as long as the process */
    struct auth_key key;
    int rc = daemon_start(&mgmtd_table, &conf, &conf.d, argc, argv, &key);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (strlen(conf.fsname) == 0 || strlen(conf.fsname) > 31 || strchr(conf.fsname, ' ')) {
        fprintf(stderr, "stria-mgmtd: fsname must be 1-31 characters without spaces\n");
        return 2;
    }
    if ((rc = util_mkdir_p(conf.data_dir, 0700))) {
        fprintf(stderr, "stria-mgmtd: cannot create %s: %s\n", conf.data_dir, strerror(-rc));
        return 2;
    }
    struct mgmtd *g = calloc(1, sizeof(*g));
    if (!g)
        return 1;
    pthread_mutex_init(&g->lock, NULL);
    snprintf(g->fsname, sizeof(g->fsname), "%s", conf.fsname);
    snprintf(g->state_path, sizeof(g->state_path), "%s/targets", conf.data_dir);
    g->offline_after_ms = conf.offline_after_ms;
    g->epoch = 1;
    load_state(g);
    if ((rc = pools_open(conf.data_dir, &g->pools))) {
        fprintf(stderr, "stria-mgmtd: cannot read %s/pools: %s\n", conf.data_dir, strerror(-rc));
        return 2;
    }
    struct net_server_opts so = {.host = conf.d.listen.host,
                                 .port = conf.d.listen.port,
                                 .key = &key,
                                 .max_conns = daemon_max_conns(&conf.d),
                                 .max_workers = (int)conf.d.workers,
                                 .handshake_ms = (int)conf.d.handshake_timeout_ms,
                                 .ctx = g};
    so.handlers[PROTO_OP_PING] = h_ping;
    so.handlers[PROTO_OP_HEARTBEAT] = h_heartbeat;
    so.handlers[PROTO_OP_GET_MAP] = h_get_map;
    so.handlers[PROTO_OP_POOL] = h_pool;
    struct net_server *srv;
    if ((rc = net_server_start(&so, &srv)))
        return 1;
    log_info("serving fsname=%s listen=%s:%u data_dir=%s", g->fsname, conf.d.listen.host,
             net_server_port(srv), conf.data_dir);
    char key_path[PATH_MAX];
    if (!realpath(conf.d.key_file, key_path))
        snprintf(key_path, sizeof(key_path), "%s", conf.d.key_file);
    if (policy_start(conf.data_dir, conf.d.listen.host, net_server_port(srv), key_path,
                     conf.policy_interval))
        log_warn("policy: not started; repositories' policies run only when asked");
    struct net_metrics *metrics = NULL;
    struct net_metrics_source ms = {"stria-mgmtd", NULL, srv};
    if (conf.d.metrics.port &&
        net_metrics_start(conf.d.metrics.host, conf.d.metrics.port, &ms, 1, &metrics))
        return 1;
    int sig = daemon_wait(250, check_offline, g);
    log_info("signal %d: stopping", sig);
    net_metrics_stop(metrics);
    policy_stop();
    net_server_stop(srv);
    pthread_mutex_lock(&g->lock);
    save_state(g);
    pthread_mutex_unlock(&g->lock);
    free(g->t);
    pools_close(g->pools);
    free(g);
    cfg_free(&mgmtd_table, &conf);
    return 0;
}
