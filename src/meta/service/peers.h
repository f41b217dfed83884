/*
 * The way from one stria-metad to the other MDTs (peers.c): where each is,
 * from the cluster map, and a few idle connections to it; the steps of
 * cross-MDT operations (SHARD, XNAME) go through it. What the MDTs of one
 * process share, and nothing else.
 */
#ifndef STRIA_META_PEERS_H
#define STRIA_META_PEERS_H

#include "../../common/auth.h"
#include "../../net/net.h"
#include "../../proto/map.h"
#include "../../proto/proto.h"

#include <pthread.h>
#include <stdint.h>

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
struct meta_peers {
    pthread_mutex_t lock;
    const struct auth_key *key;
    uint64_t client_id;
    struct peer *v;
    uint32_t n;
};

void meta_peers_init(struct meta_peers *ps, const struct auth_key *key, uint64_t client_id);
/* The map moved: learn where the MDTs are now. */
void meta_peers_update(struct meta_peers *ps, const struct cluster_map *map);
void meta_peers_free(struct meta_peers *ps);
/* meta_peer_fn and meta_xpeer_fn (ops/core.h), arg a struct meta_peers:
 * send a step to MDT mdt, once more on a fresh connection when a pooled
 * one turns out dead (the peer restarted since). */
int meta_peer_call(void *arg, uint32_t mdt, const struct proto_shard_req *q,
                   struct proto_shard_rep *r);
int meta_peer_xcall(void *arg, uint32_t mdt, const struct proto_xname_req *q,
                    struct proto_xname_rep *r);
/* Whether MDT mdt answers a PING now (meta_ctx.peer_up). */
bool meta_peer_up(void *arg, uint32_t mdt);

#endif
