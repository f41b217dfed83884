/*
 * Heartbeats from a metadata or storage daemon to the management service.
 * A background thread registers the node's targets, repeats that every
 * interval with fresh capacity figures, and fetches the cluster map
 * whenever its epoch moves. A lost management service is retried every
 * interval; the daemon keeps serving meanwhile.
 */
#ifndef STRIA_HB_H
#define STRIA_HB_H

#include "../proto/map.h"
#include "client.h"

struct hb_opts {
    const char *mgmt_host;
    uint16_t mgmt_port;
    const struct auth_key *key;
    uint8_t kind; /* PROTO_NODE_META or PROTO_NODE_STOR */
    const char *node;
    const char *host; /* where clients reach this daemon */
    uint16_t port;
    int interval_ms;
    /* Fill the node's target statistics; called from the heartbeat thread. */
    int (*stats)(void *ctx, struct proto_tstats *out);
    /* Optional: a new cluster map (called from the heartbeat thread). */
    void (*on_map)(void *ctx, const struct cluster_map *m);
    void *ctx;
};

struct hb;
int hb_start(const struct hb_opts *o, struct hb **out);
/* Beat now and fetch the map whatever its epoch (on_map then follows);
 * returns at once. */
void hb_refresh(struct hb *h);
void hb_stop(struct hb *h);

#endif
