/*
 * OST pools (Lustre's `lctl pool_*`): named sets of OSTs kept by the
 * management service in data_dir/pools and sent to everyone in the
 * cluster map. Not thread-safe: mgmtd calls it under its lock.
 */
#ifndef STRIA_MGMT_POOLS_H
#define STRIA_MGMT_POOLS_H

#include "../proto/map.h"

#include <stdbool.h>

struct pools;

/* Load the pools of data_dir (none if it has no pools file yet). */
int pools_open(const char *data_dir, struct pools **out);
void pools_close(struct pools *p);

/* Whether OST idx is one the cluster map knows. */
typedef bool (*pools_ost_known_fn)(void *arg, uint32_t idx);

/*
 * Make a change (PROTO_POOL_NEW, _ADD, _REMOVE, _DESTROY) of pool name
 * with osts (n of them; ADD and REMOVE only), all or nothing, and save it
 * before returning 0. Errors: -EINVAL (a bad name or op, no OSTs or an
 * OST twice in osts), -EEXIST (NEW of a pool there is; ADD of an OST in
 * the pool), -ENOENT (no such pool), -ENODEV (ADD of an OST known() does
 * not know), -ENXIO (REMOVE of an OST not in the pool), -ENOTEMPTY
 * (DESTROY of a pool with OSTs), -ENOSPC (MAP_MAX_POOLS pools), or the
 * error of saving (then nothing changed).
 */
int pools_change(struct pools *p, uint8_t op, const char *name, const uint32_t *osts, uint32_t n,
                 pools_ost_known_fn known, void *arg);

/* A copy of the pools into m->pools and m->npools (map_free frees it). */
int pools_snapshot(const struct pools *p, struct cluster_map *m);

#endif
