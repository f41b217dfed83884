/*
 * stria-metad: serves one or more metadata targets (MDTs) over the network.
 *
 * Each MDT has its own store, lease table, listening port, server threads
 * and heartbeat: nothing on a request's path is shared between MDTs, so
 * they scale with cores. Each request is decoded here, handed to the
 * operation in ops.c, and its reply encoded; nothing in this file touches
 * LMDB. The heartbeat keeps the MDT registered with the management service
 * and refreshes the allocator's view of the OSTs and where the other MDTs
 * are (for cross-MDT operations, which this process sends as SHARD
 * requests). The main thread makes committed metadata durable every
 * sync_interval_ms and finishes cross-MDT operations left open.
 */
#include "../../common/config.h"
#include "../../common/daemon.h"
#include "../../common/log.h"
#include "../../common/util.h"
#include "../../net/hb.h"
#include "../../net/net.h"
#include "../ops/fsck.h"
#include "lease.h"
#include "../ops/ops.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct metad_conf {
    struct daemon_conf d;
    struct cfg_list mdt;
    int64_t sync_interval_ms;
    uint64_t lmdb_map_size;
    int64_t default_stripe_count;
    uint64_t default_stripe_size;
    int64_t lease_ms;
    int64_t root_mdts;
};

#define O(n, t, lo, hi, d, req, h)                                                                 \
    {                                                                                              \
#n, t, lo, hi, d, req, h, offsetof(struct metad_conf, n)                                   \
    }
static const struct cfg_option metad_options[] = {
    DAEMON_BASE_OPTIONS(struct metad_conf, "7401"),
    DAEMON_NODE_OPTIONS(struct metad_conf),
    O(mdt, CFG_LIST, 0, 0, NULL, true,
      "a metadata target to serve, as INDEX:DIRECTORY; repeat for more. The n-th (from 0) "
      "listens on the listen port + n (any free port when that is 0)"),
    O(root_mdts, CFG_INT, 1, 4096, "1", false,
      "MDTs 0..N-1 the root directory of a new file system is striped over (every "
      "stria-metad of the file system must say the same)"),
    O(sync_interval_ms, CFG_INT, 10, 60000, "1000", false,
      "flush committed metadata to disk at least this often (fsync forces it at once)"),
    O(lmdb_map_size, CFG_SIZE, 16 << 20, INT64_MAX, "16G", false,
      "largest size the MDT's LMDB database may grow to"),
    O(default_stripe_count, CFG_INT, -1, 256, "1", false,
      "stripe count of new files where no directory says otherwise (-1: all OSTs)"),
    O(default_stripe_size, CFG_SIZE, 65536, 1 << 30, "1M", false,
      "stripe size of new files where no directory says otherwise (multiple of 64K)"),
    O(lease_ms, CFG_INT, 0, 600000, "10000", false,
      "how long a client may cache names and attributes without hearing from the MDT "
      "(0: no caching); a change waits at most this long for an unreachable client"),
};
#undef O

static const struct cfg_table metad_table = {"stria-metad",
                                             "Stria metadata service: serves metadata targets",
                                             metad_options, ARRAY_SIZE(metad_options)};

#define PEER_IDLE 4

/* Another MDT, for cross-MDT steps: where it is and idle connections. */
struct peer {
    uint32_t index;
    char host[256];
    uint16_t port;
    struct net_conn *idle[PEER_IDLE];
    int nidle;
};

/* What the MDTs of this process share: only the way to other MDTs. */
struct peers {
    pthread_mutex_t lock;
    const struct auth_key *key;
    uint64_t client_id;
    struct peer *v;
    uint32_t n;
};

struct metad {
    uint32_t index;
    struct meta_ctx ctx;
    struct meta_store *store;
    struct lease_tab *leases;
    struct net_server *srv;
    struct hb *hb;
    struct peers *peers;
};

#define CTX(p)    (&((struct metad *)(p))->ctx)
#define LEASES(p) (((struct metad *)(p))->leases)

/* ---- the dispatcher ---- */

/* Around each request whose reply carries leases: the mark for grants
 * and where the operation notes the inodes it writes. */
struct leasing {
    uint64_t mark;
    struct meta_touched touched;
};

static void leasing_begin(void *p, struct leasing *ls)
{
    memset(ls, 0, sizeof(*ls));
    ls->mark = lease_read_begin(LEASES(p));
}

/* A request that wrote inodes revokes other clients' leases on them and
 * tells the changer the new generations and attributes (which it then
 * answers from); one that only read grants leases on inos. */
static void leasing_end(void *p, struct leasing *ls, uint64_t client, int rc, const uint64_t *inos,
                        uint32_t n, struct proto_leases *out)
{
    if (ls->touched.n || ls->touched.overflow) {
        lease_changed(LEASES(p), client, &ls->touched, rc == 0, out);
        if (rc == 0)
            meta_op_lease_attrs(CTX(p), &ls->touched, out);
    } else if (rc == 0) {
        lease_grant(LEASES(p), ls->mark, client, inos, n, out);
    }
}

/* Which inodes a lookup leases: for one name, not through a symlink, the
 * directory (its names) and what the name holds. */
static uint32_t grants_lookup(const void *qv, const void *rv, uint64_t *inos)
{
    const struct proto_lookup_req *q = qv;
    const struct proto_lookup_rep *r = rv;
    if (q->follow || q->path.len == 0 || memchr(q->path.p, '/', q->path.len))
        return 0;
    inos[0] = q->parent;
    inos[1] = r->attr.ino;
    return 2;
}

/* A getattr leases its inode. */
static uint32_t grants_getattr(const void *qv, const void *rv, uint64_t *inos)
{
    const struct proto_getattr_req *q = qv;
    (void)rv;
    inos[0] = q->ino;
    return 1;
}

/* An unlink that asks for it gets the write-behind grant (lease.h). */
static void after_unlink(struct metad *m, const struct net_req *req, const void *qv, void *rv)
{
    const struct proto_unlink_req *q = qv;
    struct proto_unlink_rep *r = rv;
    if (q->want_wb)
        r->wb_ms = lease_wb_grant(m->leases, req->hdr.client_id, &r->wb_id);
}

/* ---- other MDTs ---- */

static struct peer *peer_find(struct peers *ps, uint32_t index)
{
    for (uint32_t i = 0; i < ps->n; i++)
        if (ps->v[i].index == index)
            return &ps->v[i];
    return NULL;
}

/* A connection to MDT mdt: an idle one, or a new one. */
static int peer_get(struct peers *ps, uint32_t mdt, char *host, size_t hlen, uint16_t *port,
                    struct net_conn **c, bool *reused)
{
    *c = NULL;
    pthread_mutex_lock(&ps->lock);
    struct peer *pr = peer_find(ps, mdt);
    if (pr) {
        snprintf(host, hlen, "%s", pr->host);
        *port = pr->port;
        if (pr->nidle)
            *c = pr->idle[--pr->nidle];
    }
    pthread_mutex_unlock(&ps->lock);
    if (!pr)
        return -EHOSTUNREACH; /* not in the map (yet) */
    *reused = *c != NULL;
    return *c ? 0 : net_connect(host, *port, ps->key, ps->client_id, "stria-metad", 2000, c);
}

/* Give a connection back to the pool of MDT mdt, or close it. */
static void peer_put(struct peers *ps, uint32_t mdt, const char *host, uint16_t port,
                     struct net_conn *c)
{
    pthread_mutex_lock(&ps->lock);
    struct peer *pr = peer_find(ps, mdt);
    if (pr && pr->nidle < PEER_IDLE && pr->port == port && !strcmp(pr->host, host)) {
        pr->idle[pr->nidle++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&ps->lock);
    if (c)
        net_close(c);
}

/* Send a step to MDT mdt; once more on a fresh connection when a pooled one
 * turns out dead (the peer restarted since). */
#define PEER_CALL(ps, mdt, lname, q, r)                                                            \
    ({                                                                                             \
        int rc_ = 0;                                                                               \
        for (int attempt_ = 0; attempt_ < 2; attempt_++) {                                         \
            char host_[256];                                                                       \
            uint16_t port_ = 0;                                                                    \
            struct net_conn *c_;                                                                   \
            bool reused_ = false, transport_ = false;                                              \
            if ((rc_ = peer_get(ps, mdt, host_, sizeof(host_), &port_, &c_, &reused_)))            \
                break;                                                                             \
            rc_ = net_call_##lname(c_, q, r, NULL, 0, NULL, 0, NULL, &transport_);                 \
            if (!transport_) {                                                                     \
                peer_put(ps, mdt, host_, port_, c_);                                               \
                break;                                                                             \
            }                                                                                      \
            net_close(c_);                                                                         \
            if (!reused_)                                                                          \
                break;                                                                             \
        }                                                                                          \
        rc_;                                                                                       \
    })

/* meta_peer_fn and meta_xpeer_fn. */
static int peer_call(void *arg, uint32_t mdt, const struct proto_shard_req *q,
                     struct proto_shard_rep *r)
{
    return PEER_CALL((struct peers *)arg, mdt, shard, q, r);
}

static int peer_xcall(void *arg, uint32_t mdt, const struct proto_xname_req *q,
                      struct proto_xname_rep *r)
{
    return PEER_CALL((struct peers *)arg, mdt, xname, q, r);
}

/* The map moved: learn where the MDTs are now. */
static void peers_update(struct peers *ps, const struct cluster_map *map)
{
    pthread_mutex_lock(&ps->lock);
    for (uint32_t i = 0; i < map->n; i++) {
        const struct map_target *t = &map->t[i];
        if (t->kind != PROTO_NODE_META)
            continue;
        struct peer *pr = peer_find(ps, t->index);
        if (!pr) {
            struct peer *v = realloc(ps->v, (ps->n + 1) * sizeof(*v));
            if (!v)
                break;
            ps->v = v;
            pr = &v[ps->n++];
            memset(pr, 0, sizeof(*pr));
            pr->index = t->index;
        }
        if (strcmp(pr->host, t->host) || pr->port != t->port) {
            while (pr->nidle)
                net_close(pr->idle[--pr->nidle]);
            snprintf(pr->host, sizeof(pr->host), "%s", t->host);
            pr->port = t->port;
        }
    }
    pthread_mutex_unlock(&ps->lock);
}

static void peers_free(struct peers *ps)
{
    for (uint32_t i = 0; i < ps->n; i++)
        while (ps->v[i].nidle)
            net_close(ps->v[i].idle[--ps->v[i].nidle]);
    free(ps->v);
    pthread_mutex_destroy(&ps->lock);
}

static int h_fsck(void *p, struct net_req *req, struct net_rep *rep)
{
    struct metad *m = p;
    struct proto_fsck_req q;
    if (proto_dec_fsck_req(&req->dec, &q))
        return -EBADMSG;
    if (q.cred.uid != 0)
        return -EPERM;
    char *text = net_scratch(req, PROTO_MAX_FSCK_TEXT);
    if (!text)
        return -ENOMEM;
    struct meta_fsck_report f = {.text = text, .text_cap = PROTO_MAX_FSCK_TEXT};
    uint8_t *refs = malloc(PROTO_MAX_FSCK_REFS);
    if (!refs)
        return -ENOMEM;
    f.refs = refs;
    f.refs_cap = PROTO_MAX_FSCK_REFS;
    f.xfixes = q.fixes.p;
    f.xfixes_len = q.fixes.len;
    log_info("fsck%s started peer=%s", q.repair ? " --repair" : "", req->peer);
    int rc = meta_fsck(m->store, q.repair != 0, &f);
    log_info("fsck: %s; inodes=%llu entries=%llu dangling=%llu orphans=%llu bad_nlink=%llu "
             "bad_parent=%llu corrupt=%llu fixed=%llu",
             rc ? log_err(rc) : "done", (unsigned long long)f.inodes, (unsigned long long)f.entries,
             (unsigned long long)f.dangling, (unsigned long long)f.orphans,
             (unsigned long long)f.bad_nlink, (unsigned long long)f.bad_parent,
             (unsigned long long)f.corrupt, (unsigned long long)f.fixed);
    if (f.fixed) {
        /* Repairs are not listed inode by inode: every lease goes. */
        struct meta_touched all = {.overflow = true};
        struct proto_leases none;
        lease_changed(LEASES(p), 0, &all, true, &none);
    }
    if (rc) {
        free(refs);
        return rc;
    }
    struct proto_fsck_rep r = {.inodes = f.inodes,
                               .entries = f.entries,
                               .dangling = f.dangling,
                               .orphans = f.orphans,
                               .bad_nlink = f.bad_nlink,
                               .bad_parent = f.bad_parent,
                               .corrupt = f.corrupt,
                               .fixed = f.fixed,
                               .text = {.p = (const uint8_t *)text, .len = (uint32_t)f.text_len},
                               .open_ops = f.open_ops,
                               .refs = {refs, (uint32_t)f.refs_len},
                               .refs_full = f.refs_full};
    rc = proto_enc_fsck_rep(&rep->enc, &r);
    free(refs);
    return rc;
}

static int h_statfs(void *p, struct net_req *req, struct net_rep *rep)
{
    struct metad *m = p;
    struct proto_statfs_rep r;
    (void)req;
    memset(&r, 0, sizeof(r));
    r.targets.n = 1;
    int rc = meta_store_stats(m->store, &r.targets.t[0]);
    return rc ? rc : proto_enc_statfs_rep(&rep->enc, &r);
}

static int h_sync(void *p, struct net_req *req, struct net_rep *rep)
{
    (void)req, (void)rep;
    return meta_store_sync(((struct metad *)p)->store);
}

/* A client's revocation channel: answers within a second. */
static int h_lease_poll(void *p, struct net_req *req, struct net_rep *rep)
{
    struct proto_lease_poll_req q;
    struct proto_lease_poll_rep r;
    memset(&r, 0, sizeof(r));
    if (proto_dec_lease_poll_req(&req->dec, &q))
        return -EBADMSG;
    uint32_t cap = PROTO_MAX_REVOKES * 16;
    uint8_t *buf = net_scratch(req, cap);
    if (!buf)
        return -ENOMEM;
    uint32_t n = lease_poll(LEASES(p), req->hdr.client_id, req->conn, q.acked, q.bye != 0, 1000,
                            buf, cap, &r.first);
    r.instance = lease_instance(LEASES(p));
    r.revokes = (struct proto_blob){buf, n * 16};
    return proto_enc_lease_poll_rep(&rep->enc, &r);
}

/* Every request but a revocation channel's long poll passes the
 * write-behind grant's gate (lease.h). */
static void request_enter(void *p, const struct net_req *req)
{
    if (req->hdr.opcode != PROTO_OP_LEASE_POLL)
        lease_enter(LEASES(p), req->hdr.client_id);
}

static void request_leave(void *p, const struct net_req *req)
{
    if (req->hdr.opcode != PROTO_OP_LEASE_POLL)
        lease_leave(LEASES(p));
}

static void conn_closed(void *p, void *conn)
{
    lease_conn_closed(LEASES(p), conn);
}

static int h_ping(void *p, struct net_req *req, struct net_rep *rep)
{
    (void)p, (void)req, (void)rep;
    return 0;
}

/* How the dispatcher serves one kind of request. */
enum serve_how {
    SERVE_NONE,   /* not served by this daemon */
    SERVE_READ,   /* an operation whose reply carries LEASES: grants leases on what it read */
    SERVE_CHANGE, /* the same for a change: revokes every other client's lease on what it wrote,
                   * and keeps its reply with the change when the client gave it a slot */
    SERVE_PLAIN,  /* an operation whose reply carries no leases */
    SERVE_STEP,   /* a step of another MDT's cross-MDT operation: revokes, grants nothing */
    SERVE_OWN,    /* the service's own handler (no operation of ops.h) */
};

/* One row per request kind: how it is served and by what. Decoding and
 * encoding come from the message table (proto_codec). */
struct serve {
    enum serve_how how;
    /* The operation (ops.h): rq, the decoded request, the reply to fill. */
    int (*fn)(const struct meta_req *rq, const void *q, void *r);
    /* Where the reply's LEASES field is (SERVE_READ, SERVE_CHANGE). */
    size_t leases;
    /* How many inodes a read leases, put in inos (from q and r; at most
     * PROTO_MAX_LEASES); NULL: none. */
    uint32_t (*grants)(const void *q, const void *r, uint64_t *inos);
    /* Runs on success, after the leases, before the reply is encoded. */
    void (*after)(struct metad *m, const struct net_req *req, const void *q, void *r);
    /* Bytes of scratch the reply may point into (meta_req.buf). */
    uint32_t buf;
    /* SERVE_OWN: the handler. */
    net_handler_fn own;
};

#define LEASES_OF(lname) offsetof(struct proto_##lname##_rep, leases)

/* Adding an operation: a row here (and its message in proto.h). */
static const struct serve serves[PROTO_OP_MAX] = {
    [PROTO_OP_LOOKUP] = {SERVE_READ, meta_op_lookup, LEASES_OF(lookup), grants_lookup},
    [PROTO_OP_GETATTR] = {SERVE_READ, meta_op_getattr, LEASES_OF(getattr), grants_getattr},
    [PROTO_OP_SETATTR] = {SERVE_CHANGE, meta_op_setattr, LEASES_OF(setattr)},
    [PROTO_OP_OPEN] = {SERVE_CHANGE, meta_op_open, LEASES_OF(open)},
    [PROTO_OP_MKDIR] = {SERVE_CHANGE, meta_op_mkdir, LEASES_OF(mkdir)},
    [PROTO_OP_UNLINK] = {SERVE_CHANGE, meta_op_unlink, LEASES_OF(unlink), .after = after_unlink},
    [PROTO_OP_RMDIR] = {SERVE_CHANGE, meta_op_rmdir, LEASES_OF(rmdir)},
    [PROTO_OP_RENAME] = {SERVE_CHANGE, meta_op_rename, LEASES_OF(rename)},
    [PROTO_OP_LINK] = {SERVE_CHANGE, meta_op_link, LEASES_OF(link)},
    [PROTO_OP_SYMLINK] = {SERVE_CHANGE, meta_op_symlink, LEASES_OF(symlink)},
    [PROTO_OP_MKNOD] = {SERVE_CHANGE, meta_op_mknod, LEASES_OF(mknod)},
    [PROTO_OP_SETSTRIPE] = {SERVE_CHANGE, meta_op_setstripe, LEASES_OF(setstripe)},
    [PROTO_OP_SETDIRSTRIPE] = {SERVE_CHANGE, meta_op_setdirstripe, LEASES_OF(setdirstripe)},
    [PROTO_OP_SETXATTR] = {SERVE_CHANGE, meta_op_setxattr, LEASES_OF(setxattr)},
    [PROTO_OP_REMOVEXATTR] = {SERVE_CHANGE, meta_op_removexattr, LEASES_OF(removexattr)},
    [PROTO_OP_SETSIZE] = {SERVE_CHANGE, meta_op_setsize, LEASES_OF(setsize)},
    [PROTO_OP_GETSTRIPE] = {SERVE_PLAIN, meta_op_getstripe},
    [PROTO_OP_DESTROYED] = {SERVE_PLAIN, meta_op_destroyed},
    [PROTO_OP_READLINK] = {SERVE_PLAIN, meta_op_readlink, .buf = PROTO_MAX_STR},
    [PROTO_OP_READDIR] = {SERVE_PLAIN, meta_op_readdir, .buf = PROTO_MAX_REP_PAYLOAD - 64},
    [PROTO_OP_GETXATTR] = {SERVE_PLAIN, meta_op_getxattr, .buf = PROTO_MAX_XATTR},
    [PROTO_OP_LISTXATTR] = {SERVE_PLAIN, meta_op_listxattr, .buf = PROTO_MAX_REP_PAYLOAD - 64},
    [PROTO_OP_SHARD] = {SERVE_STEP, meta_op_shard},
    [PROTO_OP_XNAME] = {SERVE_STEP, meta_op_xname},
    [PROTO_OP_PING] = {SERVE_OWN, .own = h_ping},
    [PROTO_OP_STATFS] = {SERVE_OWN, .own = h_statfs},
    [PROTO_OP_SYNC] = {SERVE_OWN, .own = h_sync},
    [PROTO_OP_FSCK] = {SERVE_OWN, .own = h_fsck},
    [PROTO_OP_LEASE_POLL] = {SERVE_OWN, .own = h_lease_poll},
};
#undef LEASES_OF

/* Every operation of the table: decode, run the operation with its
 * request context, grant or revoke leases, encode. Nothing is allocated:
 * the request and reply live on the stack (the largest of any message)
 * and a buffer the reply points into is the connection's scratch. */
static int dispatch(void *p, struct net_req *req, struct net_rep *rep)
{
    uint16_t op = req->hdr.opcode;
    const struct serve *sv = &serves[op];
    const struct proto_codec *codec = proto_codec(op);
    union proto_any_req q;
    union proto_any_rep r;
    memset(&r, 0, codec->rep_size);
    if (codec->dec_req(&req->dec, &q))
        return -EBADMSG;
    struct meta_req rq = {.ctx = CTX(p), .buf_len = sv->buf};
    if (sv->buf && !(rq.buf = net_scratch(req, sv->buf)))
        return -ENOMEM;
    if (sv->how == SERVE_PLAIN) {
        int rc = sv->fn(&rq, &q, &r);
        return rc ? rc : codec->enc_rep(&rep->enc, &r);
    }
    struct leasing ls;
    leasing_begin(p, &ls);
    rq.touched = &ls.touched;
    struct meta_reply kept = {.client = req->hdr.client_id,
                              .seq = req->hdr.seq,
                              .tag = PROTO_HDR_TAG(&req->hdr),
                              .op = op,
                              .encode = codec->enc_rep,
                              .rep = &r};
    if (kept.tag && (codec->flags & PROTO_F_CHANGE))
        rq.reply = &kept;
    int rc = sv->fn(&rq, &q, &r);
    uint64_t inos[PROTO_MAX_LEASES];
    uint32_t n = rc == 0 && sv->grants ? sv->grants(&q, &r, inos) : 0;
    struct proto_leases none, *out = &none;
    if (sv->how == SERVE_STEP)
        memset(&none, 0, sizeof(none));
    else
        out = (struct proto_leases *)((char *)&r + sv->leases);
    leasing_end(p, &ls, req->hdr.client_id, rc, inos, n, out);
    if (rc)
        return rc;
    if (sv->after)
        sv->after(p, req, &q, &r);
    return codec->enc_rep(&rep->enc, &r);
}

static int hb_stats(void *p, struct proto_tstats *out)
{
    struct metad *m = p;
    out->n = 1;
    return meta_store_stats(m->store, &out->t[0]);
}

static void hb_map(void *p, const struct cluster_map *map)
{
    struct metad *m = p;
    struct meta_ost *osts = calloc(META_MAX_OSTS, sizeof(*osts));
    if (!osts)
        return;
    uint32_t n = 0;
    for (uint32_t i = 0; i < map->n && n < META_MAX_OSTS; i++) {
        const struct map_target *t = &map->t[i];
        if (t->kind != PROTO_NODE_STOR)
            continue;
        osts[n].index = t->index;
        osts[n].online = t->state == MAP_ONLINE;
        osts[n].avail = t->stat.bytes_avail;
        osts[n].total = t->stat.bytes_total;
        n++;
    }
    meta_ctx_set_osts(&m->ctx, osts, n);
    uint32_t nmdt = map_count(map, PROTO_NODE_META);
    if (nmdt > __atomic_load_n(&m->ctx.nmdt, __ATOMIC_RELAXED))
        __atomic_store_n(&m->ctx.nmdt, nmdt, __ATOMIC_RELAXED);
    peers_update(m->peers, map);
    log_info("MDT%04x: cluster map epoch=%llu osts=%u mdts=%u", m->index,
             (unsigned long long)map->epoch, n, nmdt);
    free(osts);
}

struct metads {
    struct metad *v;
    uint32_t n;
    uint32_t ticks;
    int64_t pruned_ns; /* the last prune of reply records (monotonic) */
};

/* A client resends a change for at most its timeout (an hour at most):
 * reply records older than two hours belong to clients that went away. */
#define REPLY_KEEP_NS  (2 * 3600 * 1000000000ll)
#define PRUNE_EVERY_NS (600 * 1000000000ll)

static void tick(void *p)
{
    struct metads *all = p;
    all->ticks++;
    int64_t now = (int64_t)util_now_mono_ns();
    bool prune = !all->pruned_ns || now - all->pruned_ns >= PRUNE_EVERY_NS;
    if (prune)
        all->pruned_ns = now;
    for (uint32_t i = 0; i < all->n; i++) {
        struct metad *m = &all->v[i];
        meta_store_flush_if_dirty(m->store);
        lease_sweep(m->leases);
        meta_xmdt_recover(&m->ctx);
        if (prune) {
            int gone = meta_reply_prune(m->store, (int64_t)util_now_real_ns() - REPLY_KEEP_NS);
            if (gone < 0)
                log_warn("MDT%04x: pruning reply records: %s", m->index, log_err(gone));
            else if (gone)
                log_info("MDT%04x: %d reply records older than 2 hours pruned", m->index, gone);
        }
    }
}

/* A change sent again (net_server_opts.replay): its kept reply, if the
 * store has one. */
static int replay(void *p, const struct proto_hdr *h, int *status, void *payload, uint32_t cap,
                  uint32_t *len)
{
    struct metad *m = p;
    return meta_reply_get(m->store, h->client_id, PROTO_HDR_TAG(h), h->seq, status, payload, cap,
                          len);
}

static int start_mdt(struct metad *m, const struct metad_conf *conf, const struct auth_key *key,
                     const char *path, uint16_t port, const char *node, const char *adv)
{
    int rc;
    if ((rc = meta_store_open(path, m->index, conf->lmdb_map_size, &m->store))) {
        log_error("cannot open MDT%04x at %s: %s", m->index, path, log_err(rc));
        return rc;
    }
    if ((rc = meta_ctx_init(&m->ctx, m->store, (int32_t)conf->default_stripe_count,
                            (uint32_t)conf->default_stripe_size, (uint32_t)conf->root_mdts))) {
        log_error("cannot initialise MDT%04x: %s", m->index, log_err(rc));
        return rc;
    }
    m->ctx.peer = peer_call;
    m->ctx.xpeer = peer_xcall;
    m->ctx.peer_arg = m->peers;
    if ((rc = lease_tab_create((uint32_t)conf->lease_ms, &m->leases))) {
        log_error("cannot set up leases: %s", log_err(rc));
        return rc;
    }
    struct net_server_opts so = {.host = conf->d.listen.host,
                                 .port = port,
                                 .key = key,
                                 .max_conns = (int)conf->d.max_connections,
                                 .handshake_ms = (int)conf->d.handshake_timeout_ms,
                                 .ctx = m,
                                 .on_close = conn_closed,
                                 .on_enter = request_enter,
                                 .on_leave = request_leave,
                                 .replay = replay};
    /* Every operation of the table, through the one dispatcher; a change
     * a client may send again after its connection broke (PROTO_F_CHANGE,
     * with a slot) is answered from the reply cache, or from the reply the
     * store kept, rather than made twice. */
    for (uint16_t op = 0; op < PROTO_OP_MAX; op++) {
        if (!serves[op].how)
            continue;
        so.handlers[op] = serves[op].how == SERVE_OWN ? serves[op].own : dispatch;
        so.cached[op] = (proto_op_flags(op) & PROTO_F_CHANGE) != 0;
    }
    if ((rc = net_server_start(&so, &m->srv)))
        return rc;
    struct hb_opts ho = {.mgmt_host = conf->d.mgmt.host,
                         .mgmt_port = conf->d.mgmt.port,
                         .key = key,
                         .kind = PROTO_NODE_META,
                         .node = node,
                         .host = adv,
                         .port = net_server_port(m->srv),
                         .interval_ms = (int)conf->d.heartbeat_ms,
                         .stats = hb_stats,
                         .on_map = hb_map,
                         .ctx = m};
    if ((rc = hb_start(&ho, &m->hb)))
        return rc;
    log_info("serving MDT%04x dir=%s listen=%s:%u advertise=%s node=%s", m->index, path,
             conf->d.listen.host, net_server_port(m->srv), adv, node);
    return 0;
}

int main(int argc, char **argv)
{
    static struct metad_conf conf; /* lives as long as the process */
    struct auth_key key;
    int rc = daemon_start(&metad_table, &conf, &conf.d, argc, argv, &key);
    if (rc)
        return rc > 0 ? 0 : 2;
    uint32_t n = (uint32_t)conf.mdt.count;
    uint32_t index[n ? n : 1];
    const char *path[n ? n : 1];
    for (uint32_t i = 0; i < n; i++) {
        if (util_parse_target(conf.mdt.items[i], &index[i], &path[i])) {
            fprintf(stderr, "stria-metad: mdt '%s' is not INDEX:DIRECTORY\n", conf.mdt.items[i]);
            return 2;
        }
        for (uint32_t j = 0; j < i; j++)
            if (index[j] == index[i] || !strcmp(path[j], path[i])) {
                fprintf(stderr, "stria-metad: mdt '%s' repeats an index or a directory\n",
                        conf.mdt.items[i]);
                return 2;
            }
        if (conf.d.listen.port && (uint32_t)conf.d.listen.port + i > 65535) {
            fprintf(stderr, "stria-metad: no port left for mdt '%s'\n", conf.mdt.items[i]);
            return 2;
        }
    }
    if (conf.default_stripe_size % 65536) {
        fprintf(stderr, "stria-metad: default_stripe_size must be a multiple of 64K\n");
        return 2;
    }
    char node[256], adv[256];
    daemon_names(&conf.d, node, sizeof(node), adv, sizeof(adv));
    struct peers peers = {.key = &key};
    pthread_mutex_init(&peers.lock, NULL);
    auth_random(&peers.client_id, sizeof(peers.client_id));
    struct metads all = {.v = calloc(n, sizeof(struct metad)), .n = n};
    if (!all.v)
        return 1;
    for (uint32_t i = 0; i < n; i++) {
        all.v[i].index = index[i];
        all.v[i].peers = &peers;
        uint16_t port = conf.d.listen.port ? (uint16_t)(conf.d.listen.port + i) : 0;
        if (start_mdt(&all.v[i], &conf, &key, path[i], port, node, adv))
            return 1;
    }
    /* Flush on the main thread's clock while waiting for a signal. */
    int sig = daemon_wait((int)conf.sync_interval_ms, tick, &all);
    log_info("signal %d: stopping", sig);
    for (uint32_t i = 0; i < n; i++) {
        struct metad *m = &all.v[i];
        hb_stop(m->hb);
        lease_tab_stop(m->leases);
        net_server_stop(m->srv);
        lease_tab_destroy(m->leases);
        meta_store_close(m->store);
        meta_ctx_destroy(&m->ctx);
    }
    peers_free(&peers);
    cfg_free(&metad_table, &conf);
    free(all.v);
    return 0;
}
