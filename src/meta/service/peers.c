/*
 * Connections from this stria-metad to the other MDTs (peers.h): a pool of
 * at most PEER_IDLE idle connections per MDT, refreshed when the cluster
 * map moves an MDT, and a call that tries once more on a fresh connection
 * when a pooled one turns out dead.
 */
#include "peers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void meta_peers_init(struct meta_peers *ps, const struct auth_key *key, uint64_t client_id)
{
    memset(ps, 0, sizeof(*ps));
    ps->key = key;
    ps->client_id = client_id;
    pthread_mutex_init(&ps->lock, NULL);
}

static struct peer *peer_find(struct meta_peers *ps, uint32_t index)
{
    for (uint32_t i = 0; i < ps->n; i++)
        if (ps->v[i].index == index)
            return &ps->v[i];
    return NULL;
}

/* A connection to MDT mdt: an idle one, or a new one. */
static int peer_get(struct meta_peers *ps, uint32_t mdt, char *host, size_t hlen, uint16_t *port,
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
static void peer_put(struct meta_peers *ps, uint32_t mdt, const char *host, uint16_t port,
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
 * turns out dead (the peer restarted since). ms: how long the reply may
 * take (0: as long as it takes; the connection goes back to the pool
 * waiting for ever again). */
#define PEER_CALL(ps, mdt, lname, q, r, ms)                                                        \
    ({                                                                                             \
        int rc_ = 0;                                                                               \
        for (int attempt_ = 0; attempt_ < 2; attempt_++) {                                         \
            char host_[256];                                                                       \
            uint16_t port_ = 0;                                                                    \
            struct net_conn *c_;                                                                   \
            bool reused_ = false, transport_ = false;                                              \
            if ((rc_ = peer_get(ps, mdt, host_, sizeof(host_), &port_, &c_, &reused_)))            \
                break;                                                                             \
            if (!(ms) || (rc_ = net_set_timeout(c_, (ms))) == 0)                                   \
                rc_ = net_call_##lname(c_, q, r, NULL, 0, NULL, 0, NULL, &transport_);             \
            if (!transport_ && (!(ms) || net_set_timeout(c_, 0) == 0)) {                           \
                peer_put(ps, mdt, host_, port_, c_);                                               \
                break;                                                                             \
            }                                                                                      \
            net_close(c_);                                                                         \
            if (!reused_)                                                                          \
                break;                                                                             \
        }                                                                                          \
        rc_;                                                                                       \
    })

int meta_peer_call(void *arg, uint32_t mdt, const struct proto_shard_req *q,
                   struct proto_shard_rep *r)
{
    return PEER_CALL((struct meta_peers *)arg, mdt, shard, q, r, 0);
}

int meta_peer_xcall(void *arg, uint32_t mdt, const struct proto_xname_req *q,
                    struct proto_xname_rep *r)
{
    return PEER_CALL((struct meta_peers *)arg, mdt, xname, q, r, 0);
}

/* A PING waits PING_MS at most for its answer: a peer's host gone
 * silently would otherwise hold the recovery tick (steps wait forever). */
#define PING_MS 2000

bool meta_peer_up(void *arg, uint32_t mdt)
{
    struct proto_ping_req q = {0};
    struct proto_ping_rep r;
    return PEER_CALL((struct meta_peers *)arg, mdt, ping, &q, &r, PING_MS) == 0;
}

void meta_peers_update(struct meta_peers *ps, const struct cluster_map *map)
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

void meta_peers_free(struct meta_peers *ps)
{
    for (uint32_t i = 0; i < ps->n; i++)
        while (ps->v[i].nidle)
            net_close(ps->v[i].idle[--ps->v[i].nidle]);
    free(ps->v);
    pthread_mutex_destroy(&ps->lock);
}
