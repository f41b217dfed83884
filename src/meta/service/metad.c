/*
 * stria-metad: serves one or more metadata targets (MDTs) over the network.
 *
 * Each MDT has its own store, lease table, listening port, server threads
 * and heartbeat: nothing on a request's path is shared between MDTs, so
 * they scale with cores. Requests go through the dispatcher (dispatch.c)
 * to the operations (ops/); cross-MDT steps go to the other MDTs through
 * peers.c. This file is the start-up (the options are metad_conf.c's):
 * one MDT's store, context, leases, server and heartbeat, and the main
 * thread's tick; nothing in it touches LMDB. The heartbeat keeps the MDT
 * registered with the management service and refreshes the allocator's
 * view of the OSTs and where the other MDTs are (for cross-MDT
 * operations, which this process sends as SHARD requests). The main
 * thread makes committed metadata durable every sync_interval_ms and
 * finishes cross-MDT operations left open.
 */
#include "../../common/config.h"
#include "../../common/daemon.h"
#include "../../common/log.h"
#include "../../common/util.h"
#include "../../net/hb.h"
#include "../../net/metrics.h"
#include "../../net/net.h"
#include "../ops/ops.h"
#include "../store/dlg_rec.h"
#include "dispatch.h"
#include "lease.h"
#include "mdt.h"
#include "metad_conf.h"
#include "peers.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int hb_stats(void *p, struct proto_tstats *out)
{
    struct mdt_service *m = p;
    out->n = 1;
    return meta_store_stats(m->store, &out->t[0]);
}

static void hb_map(void *p, const struct cluster_map *map)
{
    struct mdt_service *m = p;
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
    if (meta_ctx_set_pools(&m->ctx, map->pools, map->npools))
        log_warn("MDT%04x: cannot take the map's %u pools: %s", m->index, map->npools,
                 log_err(-ENOMEM));
    uint32_t nmdt = map_count(map, PROTO_NODE_META);
    if (nmdt > __atomic_load_n(&m->ctx.nmdt, __ATOMIC_RELAXED))
        __atomic_store_n(&m->ctx.nmdt, nmdt, __ATOMIC_RELAXED);
    meta_peers_update(m->peers, map);
    log_info("MDT%04x: cluster map epoch=%llu osts=%u mdts=%u pools=%u", m->index,
             (unsigned long long)map->epoch, n, nmdt, map->npools);
    free(osts);
}

/* The allocator meets a pool its map does not show (alloc.c). */
static void refresh_map(void *hb)
{
    hb_refresh(hb);
}

struct mdt_services {
    struct mdt_service *v;
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
    struct mdt_services *all = p;
    all->ticks++;
    int64_t now = (int64_t)util_now_mono_ns();
    bool prune = !all->pruned_ns || now - all->pruned_ns >= PRUNE_EVERY_NS;
    if (prune)
        all->pruned_ns = now;
    for (uint32_t i = 0; i < all->n; i++) {
        struct mdt_service *m = &all->v[i];
        meta_store_flush_if_dirty(m->store);
        lease_sweep(m->leases);
        meta_xmdt_recover(&m->ctx);
        if (prune) {
            int gone = meta_reply_prune(m->store, (int64_t)util_now_real_ns() - REPLY_KEEP_NS);
            if (gone < 0)
                log_warn("MDT%04x: pruning reply records: %s", m->index, log_err(gone));
            else if (gone)
                log_info("MDT%04x: %d reply records older than 2 hours pruned", m->index, gone);
            gone = meta_dlg_prune(m->store, (int64_t)util_now_real_ns() - META_DLG_KEEP_NS);
            if (gone < 0)
                log_warn("MDT%04x: pruning inode ranges: %s", m->index, log_err(gone));
            else if (gone)
                log_info("MDT%04x: the inode ranges of %d clients unused for 4 hours pruned",
                         m->index, gone);
        }
    }
}

/* A change sent again (net_server_opts.replay): its kept reply, if the
 * store has one. */
static int replay(void *p, const struct proto_hdr *h, int *status, void *payload, uint32_t cap,
                  uint32_t *len)
{
    struct mdt_service *m = p;
    return meta_reply_get(m->store, h->client_id, PROTO_HDR_TAG(h), h->seq, status, payload, cap,
                          len);
}

/* A revocation channel's parked poll has something to say (lease.h). */
static void wake_poll(void *srv, uint64_t park)
{
    net_wake(srv, park);
}

/* Around a round of cross-MDT recovery (meta_ctx.recover_begin): it
 * passes the write-behind gate as a client no other has (0), so the
 * grant's holder sends its queue and a later grant has a new number; and
 * after, when the round itself wrote anything here, every lease goes,
 * as after an fsck's repairs. */
static void recover_begin(void *arg)
{
    struct mdt_service *m = arg;
    lease_enter(m->leases, 0);
}

static void recover_end(void *arg, bool changed)
{
    struct mdt_service *m = arg;
    struct meta_touched all = {.overflow = true};
    struct proto_leases none;
    if (changed)
        lease_changed(m->leases, 0, &all, true, &none);
    lease_leave(m->leases);
}

static int start_mdt(struct mdt_service *m, const struct mdt_service_conf *conf,
                     const struct auth_key *key, const char *path, uint16_t port, const char *node,
                     const char *adv)
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
    m->ctx.dom_max = conf->dom_max;
    m->ctx.mig_stale_ms = (uint32_t)conf->migrate_stale_ms;
    if (conf->dom_max == 0)
        log_info("MDT%04x: Data-on-MDT off (dom_max=0): new files keep their data on OSTs",
                 m->index);
    else if (conf->dom_max > conf->lmdb_map_size / 2)
        log_warn("MDT%04x: dom_max=%llu is more than half of lmdb_map_size=%llu: file data "
                 "may leave no room for metadata",
                 m->index, (unsigned long long)conf->dom_max,
                 (unsigned long long)conf->lmdb_map_size);
    m->ctx.recover_begin = recover_begin;
    m->ctx.recover_end = recover_end;
    m->ctx.recover_arg = m;
    m->ctx.peer = meta_peer_call;
    m->ctx.xpeer = meta_peer_xcall;
    m->ctx.peer_up = meta_peer_up;
    m->ctx.peer_arg = m->peers;
    if ((rc = lease_tab_create((uint32_t)conf->lease_ms, &m->leases))) {
        log_error("cannot set up leases: %s", log_err(rc));
        return rc;
    }
    struct net_server_opts so = {.host = conf->d.listen.host,
                                 .port = port,
                                 .key = key,
                                 .max_conns = daemon_max_conns(&conf->d),
                                 .max_workers = (int)conf->d.workers,
                                 .handshake_ms = (int)conf->d.handshake_timeout_ms,
                                 .ctx = m,
                                 .replay = replay};
    meta_dispatch_install(&so);
    if ((rc = net_server_start(&so, &m->srv)))
        return rc;
    lease_set_wake(m->leases, wake_poll, m->srv);
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
    pthread_mutex_lock(&m->ctx.alloc_lock);
    m->ctx.refresh_map = refresh_map;
    m->ctx.refresh_arg = m->hb;
    pthread_mutex_unlock(&m->ctx.alloc_lock);
    log_info("serving MDT%04x dir=%s listen=%s:%u advertise=%s node=%s", m->index, path,
             conf->d.listen.host, net_server_port(m->srv), adv, node);
    return 0;
}

/* The request counters of every MDT served here, each labelled with its
 * target (in names, which must outlive the responder), for Prometheus. */
static int start_metrics(const struct mdt_services *all, const struct cfg_addr *at,
                         char (*names)[16], struct net_metrics **out)
{
    struct net_metrics_source *v = calloc(all->n, sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (uint32_t i = 0; i < all->n; i++) {
        snprintf(names[i], sizeof(names[i]), "MDT%04x", all->v[i].index);
        v[i] = (struct net_metrics_source){"stria-metad", names[i], all->v[i].srv};
    }
    int rc = net_metrics_start(at->host, at->port, v, all->n, out);
    free(v);
    return rc;
}

int main(int argc, char **argv)
{
    static struct mdt_service_conf conf; /* lives as long as the process */
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
    struct meta_peers peers;
    uint64_t client_id;
    auth_random(&client_id, sizeof(client_id));
    meta_peers_init(&peers, &key, client_id);
    struct mdt_services all = {.v = calloc(n, sizeof(struct mdt_service)), .n = n};
    if (!all.v)
        return 1;
    for (uint32_t i = 0; i < n; i++) {
        all.v[i].index = index[i];
        all.v[i].peers = &peers;
        uint16_t port = conf.d.listen.port ? (uint16_t)(conf.d.listen.port + i) : 0;
        if (start_mdt(&all.v[i], &conf, &key, path[i], port, node, adv))
            return 1;
    }
    struct net_metrics *metrics = NULL;
    char labels[n ? n : 1][16];
    if (conf.d.metrics.port && start_metrics(&all, &conf.d.metrics, labels, &metrics))
        return 1;
    /* Flush on the main thread's clock while waiting for a signal. */
    int sig = daemon_wait((int)conf.sync_interval_ms, tick, &all);
    log_info("signal %d: stopping", sig);
    net_metrics_stop(metrics);
    for (uint32_t i = 0; i < n; i++) {
        struct mdt_service *m = &all.v[i];
        /* Requests still served may ask the heartbeat for a map. */
        pthread_mutex_lock(&m->ctx.alloc_lock);
        m->ctx.refresh_map = NULL;
        pthread_mutex_unlock(&m->ctx.alloc_lock);
        hb_stop(m->hb);
        lease_tab_stop(m->leases);
        net_server_stop(m->srv);
        lease_tab_destroy(m->leases);
        meta_store_close(m->store);
        meta_ctx_destroy(&m->ctx);
    }
    meta_peers_free(&peers);
    cfg_free(&metad_table, &conf);
    free(all.v);
    return 0;
}
