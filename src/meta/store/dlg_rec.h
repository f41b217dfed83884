/*
 * Inode numbers handed to a client to make files with behind its grant
 * (docs/architecture.md, "Files created behind"). A client holds at most
 * two ranges of META_DLG_INOS numbers of an MDT, the one it was given last
 * (lo[1]) and the one before (lo[0]); each number is used once, marked in
 * the range's bitmap. The record ("dlg" and the client's id in the info
 * database) outlives a restart of the MDT, so a create sent again after
 * one is still known for the client's. A record nobody changed for
 * META_DLG_KEEP_NS is of a client that went away, and goes
 * (meta_dlg_prune) if its client said (PROTO_OPEN_INOS_IDLE) that it uses
 * no range it has not used for an hour (wb_int.h's WB_RANGE_IDLE_MS): it
 * also waits for an MDT out of reach for an hour at most (client.conf's
 * timeout_ms), so a create of it reaches the MDT within two hours of the
 * record's last change. A client of before that bit keeps its record.
 */
#ifndef STRIA_META_DLG_REC_H
#define STRIA_META_DLG_REC_H

#include "records.h"

#include <stdint.h>

struct meta_dlg {
    uint64_t lo[2]; /* each range's first number (0: none) */
    uint8_t used[2][META_DLG_INOS / 8];
    int64_t when_ns; /* when last put (CLOCK_REALTIME); 0: a record of before the stamp */
    bool idle;       /* its client asked with PROTO_OPEN_INOS_IDLE: it may be pruned */
};

#define META_DLG_KEEP_NS (4 * 3600 * 1000000000ll)
/* n numbers in a row, from *lo (the batch's reservation, records.c's
 * meta_alloc_ino); -ENOSPC when it cannot spare them (the caller gives
 * none this time). */
int meta_alloc_ino_range(struct meta_txn *t, uint32_t n, uint64_t *lo);
/* Client's ranges (all zero when it has none; -EUCLEAN: damaged). */
int meta_dlg_get(struct meta_txn *t, uint64_t client, struct meta_dlg *d);
/* Put them, stamped now (d->when_ns is not read). */
int meta_dlg_put(struct meta_txn *t, uint64_t client, const struct meta_dlg *d);
/* Drop the records of idle clients put before before_ns (CLOCK_REALTIME),
 * and the unreadable ones. Returns how many went, or a negative errno. */
int meta_dlg_prune(struct meta_store *s, int64_t before_ns);

#endif
