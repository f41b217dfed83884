/*
 * stria-metad: serves a metadata target (MDT) over the network.
 *
 * Each request is decoded here, handed to the operation in ops.c, and its
 * reply encoded; nothing in this file touches LMDB. A heartbeat thread
 * keeps the node registered with the management service and refreshes the
 * allocator's view of the OSTs from the cluster map; a flusher thread
 * makes committed metadata durable every sync_interval_ms.
 */
#include "../common/config.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../net/hb.h"
#include "../net/net.h"
#include "ops.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct metad_conf {
    struct cfg_addr listen;
    char *advertise;
    struct cfg_addr mgmt;
    char *key_file;
    struct cfg_list mdt;
    char *node;
    int64_t heartbeat_ms;
    int64_t sync_interval_ms;
    uint64_t lmdb_map_size;
    int64_t default_stripe_count;
    uint64_t default_stripe_size;
    int64_t max_connections;
    char *log_level;
};

#define O(n, t, lo, hi, d, req, h)                                                                 \
    {                                                                                              \
#n, t, lo, hi, d, req, h, offsetof(struct metad_conf, n)                                   \
    }
static const struct cfg_option metad_options[] = {
    O(listen, CFG_ADDR, 0, 0, "0.0.0.0:7401", false, "address and port to serve on"),
    O(advertise, CFG_STR, 0, 0, NULL, false,
      "host name or address clients use to reach this daemon (default: the listen host, or "
      "this machine's host name when listening on 0.0.0.0)"),
    O(mgmt, CFG_ADDR, 0, 0, NULL, true, "host:port of stria-mgmtd"),
    O(key_file, CFG_STR, 0, 0, NULL, true, "the cluster's shared key file (mode 0600)"),
    O(mdt, CFG_LIST, 0, 0, NULL, true,
      "a metadata target to serve, as INDEX:DIRECTORY (this release: exactly one)"),
    O(node, CFG_STR, 0, 0, NULL, false, "node name shown in `stria status` (default: host name)"),
    O(heartbeat_ms, CFG_INT, 100, 60000, "1000", false, "interval between heartbeats to mgmt"),
    O(sync_interval_ms, CFG_INT, 10, 60000, "1000", false,
      "flush committed metadata to disk at least this often (fsync forces it at once)"),
    O(lmdb_map_size, CFG_SIZE, 16 << 20, INT64_MAX, "16G", false,
      "largest size the MDT's LMDB database may grow to"),
    O(default_stripe_count, CFG_INT, -1, 256, "1", false,
      "stripe count of new files where no directory says otherwise (-1: all OSTs)"),
    O(default_stripe_size, CFG_SIZE, 65536, 1 << 30, "1M", false,
      "stripe size of new files where no directory says otherwise (multiple of 64K)"),
    O(max_connections, CFG_INT, 1, 1000000, "4096", false, "most client connections at once"),
    O(log_level, CFG_STR, 0, 0, "info", false, "error, warn, info or debug"),
};
#undef O

static const struct cfg_table metad_table = {"stria-metad",
                                             "Stria metadata service: serves metadata targets",
                                             metad_options, ARRAY_SIZE(metad_options)};

struct metad {
    struct meta_ctx ctx;
    struct meta_store *store;
};

#define CTX(p) (&((struct metad *)(p))->ctx)

/* Handlers whose operation needs no buffer beyond the reply struct. */
#define SIMPLE(lname)                                                                              \
    static int h_##lname(void *p, struct net_req *req, struct net_rep *rep)                        \
    {                                                                                              \
        struct proto_##lname##_req q;                                                              \
        struct proto_##lname##_rep r;                                                              \
        memset(&r, 0, sizeof(r));                                                                  \
        if (proto_dec_##lname##_req(&req->dec, &q))                                                \
            return -EBADMSG;                                                                       \
        int rc = meta_op_##lname(CTX(p), &q, &r);                                                  \
        if (rc)                                                                                    \
            return rc;                                                                             \
        return proto_enc_##lname##_rep(&rep->enc, &r);                                             \
    }
SIMPLE(lookup)
SIMPLE(getattr)
SIMPLE(setattr)
SIMPLE(open)
SIMPLE(mkdir)
SIMPLE(unlink)
SIMPLE(rmdir)
SIMPLE(rename)
SIMPLE(link)
SIMPLE(symlink)
SIMPLE(getstripe)
SIMPLE(setstripe)
SIMPLE(setxattr)
SIMPLE(removexattr)
SIMPLE(setsize)
#undef SIMPLE

/* Handlers whose reply carries bytes copied out of the store. */
#define BUFFERED(lname, buftype, size)                                                             \
    static int h_##lname(void *p, struct net_req *req, struct net_rep *rep)                        \
    {                                                                                              \
        struct proto_##lname##_req q;                                                              \
        struct proto_##lname##_rep r;                                                              \
        memset(&r, 0, sizeof(r));                                                                  \
        if (proto_dec_##lname##_req(&req->dec, &q))                                                \
            return -EBADMSG;                                                                       \
        buftype *buf = net_scratch(req, size);                                                     \
        if (!buf)                                                                                  \
            return -ENOMEM;                                                                        \
        int rc = meta_op_##lname(CTX(p), &q, &r, buf, size);                                       \
        if (rc)                                                                                    \
            return rc;                                                                             \
        return proto_enc_##lname##_rep(&rep->enc, &r);                                             \
    }
BUFFERED(readlink, char, PROTO_MAX_STR)
BUFFERED(readdir, uint8_t, PROTO_MAX_REP_PAYLOAD - 64)
BUFFERED(getxattr, uint8_t, PROTO_MAX_XATTR)
BUFFERED(listxattr, uint8_t, PROTO_MAX_REP_PAYLOAD - 64)
#undef BUFFERED

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

static int h_ping(void *p, struct net_req *req, struct net_rep *rep)
{
    (void)p, (void)req, (void)rep;
    return 0;
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
    log_info("cluster map epoch=%llu osts=%u", (unsigned long long)map->epoch, n);
    free(osts);
}

int main(int argc, char **argv)
{
    static struct metad_conf conf; /* lives as long as the process */
    int rc = cfg_main_args(&metad_table, &conf, argc, argv);
    if (rc)
        return rc > 0 ? 0 : 2;
    enum log_level lvl;
    if (log_level_parse(conf.log_level, &lvl)) {
        fprintf(stderr, "stria-metad: log_level '%s' is not error/warn/info/debug\n",
                conf.log_level);
        return 2;
    }
    log_init("stria-metad", lvl);
    if (conf.mdt.count != 1) {
        fprintf(stderr,
                "stria-metad: this release serves exactly one MDT per daemon (got %d); "
                "more arrive with striped directories\n",
                conf.mdt.count);
        return 2;
    }
    uint32_t mdt_index;
    const char *mdt_path;
    if (util_parse_target(conf.mdt.items[0], &mdt_index, &mdt_path)) {
        fprintf(stderr, "stria-metad: mdt '%s' is not INDEX:DIRECTORY\n", conf.mdt.items[0]);
        return 2;
    }
    if (mdt_index != 0) {
        fprintf(stderr,
                "stria-metad: MDT %u: the namespace root lives on MDT 0, and this "
                "release has one MDT\n",
                mdt_index);
        return 2;
    }
    if (conf.default_stripe_size % 65536) {
        fprintf(stderr, "stria-metad: default_stripe_size must be a multiple of 64K\n");
        return 2;
    }
    char err[512];
    struct auth_key key;
    if (auth_key_load(conf.key_file, &key, err, sizeof(err))) {
        fprintf(stderr, "stria-metad: %s\n", err);
        return 2;
    }
    char node[256], adv[256];
    if (conf.node)
        snprintf(node, sizeof(node), "%s", conf.node);
    else
        util_hostname(node, sizeof(node));
    if (conf.advertise)
        snprintf(adv, sizeof(adv), "%s", conf.advertise);
    else if (strcmp(conf.listen.host, "0.0.0.0") && strcmp(conf.listen.host, "::"))
        snprintf(adv, sizeof(adv), "%s", conf.listen.host);
    else
        util_hostname(adv, sizeof(adv));

    util_block_signals();
    struct metad *m = calloc(1, sizeof(*m));
    if (!m)
        return 1;
    if ((rc = meta_store_open(mdt_path, mdt_index, conf.lmdb_map_size, &m->store))) {
        log_error("cannot open MDT%04x at %s: %s", mdt_index, mdt_path, log_err(rc));
        return 1;
    }
    if ((rc = meta_ctx_init(&m->ctx, m->store, (int32_t)conf.default_stripe_count,
                            (uint32_t)conf.default_stripe_size))) {
        log_error("cannot initialise MDT%04x: %s", mdt_index, log_err(rc));
        return 1;
    }
    struct net_server_opts so = {.host = conf.listen.host,
                                 .port = conf.listen.port,
                                 .key = &key,
                                 .max_conns = (int)conf.max_connections,
                                 .ctx = m};
#define H(OP, fn) so.handlers[PROTO_OP_##OP] = fn
    H(PING, h_ping);
    H(LOOKUP, h_lookup);
    H(GETATTR, h_getattr);
    H(SETATTR, h_setattr);
    H(OPEN, h_open);
    H(MKDIR, h_mkdir);
    H(UNLINK, h_unlink);
    H(RMDIR, h_rmdir);
    H(RENAME, h_rename);
    H(LINK, h_link);
    H(SYMLINK, h_symlink);
    H(READLINK, h_readlink);
    H(READDIR, h_readdir);
    H(GETSTRIPE, h_getstripe);
    H(SETSTRIPE, h_setstripe);
    H(SETXATTR, h_setxattr);
    H(GETXATTR, h_getxattr);
    H(LISTXATTR, h_listxattr);
    H(REMOVEXATTR, h_removexattr);
    H(SETSIZE, h_setsize);
    H(STATFS, h_statfs);
    H(SYNC, h_sync);
#undef H
    struct net_server *srv;
    if ((rc = net_server_start(&so, &srv)))
        return 1;
    struct hb_opts ho = {.mgmt_host = conf.mgmt.host,
                         .mgmt_port = conf.mgmt.port,
                         .key = &key,
                         .kind = PROTO_NODE_META,
                         .node = node,
                         .host = adv,
                         .port = net_server_port(srv),
                         .interval_ms = (int)conf.heartbeat_ms,
                         .stats = hb_stats,
                         .on_map = hb_map,
                         .ctx = m};
    struct hb *hb;
    if ((rc = hb_start(&ho, &hb)))
        return 1;
    log_info("serving MDT%04x dir=%s listen=%s:%u advertise=%s node=%s", mdt_index, mdt_path,
             conf.listen.host, net_server_port(srv), adv, node);
    /* Flush on the main thread's clock while waiting for a signal. */
    int sig = 0;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    struct timespec tick = {conf.sync_interval_ms / 1000, (conf.sync_interval_ms % 1000) * 1000000};
    for (;;) {
        sig = sigtimedwait(&set, NULL, &tick);
        if (sig > 0)
            break;
        meta_store_flush_if_dirty(m->store);
    }
    log_info("signal %d: stopping", sig);
    hb_stop(hb);
    net_server_stop(srv);
    meta_store_close(m->store);
    meta_ctx_destroy(&m->ctx);
    cfg_free(&metad_table, &conf);
    free(m);
    return 0;
}
