/*
 * The cluster map: every MDT and OST with its server address, state and
 * capacity, versioned by an epoch that the management service bumps on any
 * change. mgmtd encodes it into GET_MAP replies; metad (for allocation),
 * libstria and the CLI decode it.
 *
 * Target groups: layouts name groups, never OSTs (DESIGN §3). Until
 * replication exists every group is exactly one OST and group i is OST i,
 * so map_group_ost() is the identity; the wire format does not change when
 * groups grow members.
 *
 * OST pools (Lustre's): named sets of OSTs that layouts may ask their
 * stripes to stay inside. mgmtd keeps them and sends them after the
 * targets (appended: a decoder that stops after the targets still reads
 * the map); a pool change moves the epoch like any other.
 */
#ifndef STRIA_MAP_H
#define STRIA_MAP_H

#include "proto.h"

#define MAP_MAX_TARGETS 4096
enum { MAP_OFFLINE = 0, MAP_ONLINE = 1 };

struct map_target {
    uint8_t kind; /* PROTO_NODE_META (an MDT) or PROTO_NODE_STOR (an OST) */
    uint32_t index;
    uint8_t state;
    char node[64];
    char host[256];
    uint16_t port;
    struct proto_tstat stat;
    uint64_t age_ms; /* since the last heartbeat */
};

#define MAP_MAX_POOLS 1024
struct map_pool {
    char name[LAYOUT_POOL_MAX + 1];
    uint32_t n;
    uint32_t *ost; /* n OST indices, ascending */
};

struct cluster_map {
    uint64_t epoch;
    char fsname[64];
    uint32_t n;
    struct map_target *t; /* malloc'd, n entries; freed by map_free */
    uint32_t npools;
    struct map_pool *pools; /* malloc'd with their OSTs; freed by map_free */
};

/* Encode the targets and pools into buf; returns bytes written or
 * negative errno. */
int map_encode(const struct cluster_map *m, uint8_t *buf, size_t cap);
/* Decode a GET_MAP blob into m (t and pools are allocated; free with
 * map_free). A map without pools (an older mgmtd) has npools 0. */
int map_decode(const uint8_t *buf, size_t len, struct cluster_map *m);
void map_free(struct cluster_map *m);
/* The target of kind with that index, or NULL. */
const struct map_target *map_find(const struct cluster_map *m, uint8_t kind, uint32_t index);
/* The pool called name, or NULL. */
const struct map_pool *map_find_pool(const struct cluster_map *m, const char *name);
/* Number of targets of a kind. */
uint32_t map_count(const struct cluster_map *m, uint8_t kind);
static inline uint32_t map_group_ost(uint32_t group)
{
    return group;
}

#endif
