/*
 * One MDT's service inside stria-metad: what its dispatcher (dispatch.c)
 * and its start-up (metad.c) share. Types only.
 */
#ifndef STRIA_META_MDT_H
#define STRIA_META_MDT_H

#include "../ops/ops.h"
#include "lease.h"
#include "peers.h"

struct net_server;
struct hb;

struct mdt_service {
    uint32_t index;
    struct meta_ctx ctx;
    struct meta_store *store;
    struct lease_tab *leases;
    struct net_server *srv;
    struct hb *hb;
    struct meta_peers *peers;
};

#define MDT_CTX(p)    (&((struct mdt_service *)(p))->ctx)
#define MDT_LEASES(p) (((struct mdt_service *)(p))->leases)

#endif
