/*
 * Migration records (table "mig", key the inode): an online migration of
 * a file in progress (proto.h's MIGRATE; docs/architecture.md,
 * "Migration"). The record names both layouts, so that whichever set of
 * objects a crash leaves behind can be found and destroyed.
 */
#ifndef STRIA_META_MIG_REC_H
#define STRIA_META_MIG_REC_H

#include "store.h"

#include <stdbool.h>
#include <stdint.h>

/* How long a migration lives without PROGRESS when metad's
 * migrate_stale_ms does not say. */
#define META_MIG_STALE_MS_DEFAULT 30000u

struct meta_mig {
    uint64_t id;
    uint8_t state;      /* MIGRATE_COPYING, MIGRATE_SWAPPED */
    int64_t touched_ns; /* its last BEGIN or PROGRESS, real time */
    struct layout old, layout;
    /* The file's Data-on-MDT bytes changed since the copy began (no fence
     * stops them, as the OSTs' do theirs): SWAP makes the copy start over. */
    uint8_t dom_changed;
};

/* m's migrator made no PROGRESS for stale_ms by now_ns (real time): it is
 * taken for gone, and whoever meets the record may clean up after it. */
bool meta_mig_stale(const struct meta_mig *m, int64_t now_ns, uint32_t stale_ms);

/* ino's record into *out; -ENOENT if none, -EUCLEAN if damaged. */
int meta_mig_get(struct meta_txn *t, uint64_t ino, struct meta_mig *out);
int meta_mig_put(struct meta_txn *t, uint64_t ino, const struct meta_mig *m);
/* ino's Data-on-MDT bytes changed: a migration copying them notes it
 * (meta_mig.dom_changed). None, or one that swapped already: nothing. */
int meta_mig_dom_changed(struct meta_txn *t, uint64_t ino);
/* The record goes (none: 0). */
int meta_mig_del(struct meta_txn *t, uint64_t ino);
/* Each record: cb(arg, ino, m) (m NULL: it does not decode); a non-zero
 * return stops the scan. */
int meta_mig_scan(struct meta_txn *t, int (*cb)(void *arg, uint64_t ino, const struct meta_mig *m),
                  void *arg);

#endif
