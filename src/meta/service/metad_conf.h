/*
 * stria-metad's options: one table (common/config.h) that the daemon
 * loads at start-up, prints as --help and as conf/metad.conf.example,
 * and that the unit tests read to check what it takes and refuses.
 */
#ifndef STRIA_META_METAD_CONF_H
#define STRIA_META_METAD_CONF_H

#include "../../common/daemon.h"

#include <stdint.h>

struct mdt_service_conf {
    struct daemon_conf d;
    struct cfg_list mdt;
    int64_t sync_interval_ms;
    uint64_t lmdb_map_size;
    int64_t default_stripe_count;
    uint64_t default_stripe_size;
    int64_t lease_ms;
    int64_t root_mdts;
    uint64_t dom_max;
    int64_t migrate_stale_ms;
};

/* The table of struct mdt_service_conf's options. */
extern const struct cfg_table metad_table;

#endif
