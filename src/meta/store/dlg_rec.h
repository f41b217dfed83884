/*
 * Inode numbers handed to a client to make files with behind its grant
 * (docs/architecture.md, "Files created behind"). A client holds at most
 * two ranges of META_DLG_INOS numbers of an MDT, the one it was given last
 * (lo[1]) and the one before (lo[0]); each number is used once, marked in
 * the range's bitmap. The record ("dlg" and the client's id in the info
 * database) outlives a restart of the MDT, so a create sent again after
 * one is still known for the client's.
 */
#ifndef STRIA_META_DLG_REC_H
#define STRIA_META_DLG_REC_H

#include "records.h"

#include <stdint.h>

struct meta_dlg {
    uint64_t lo[2]; /* each range's first number (0: none) */
    uint8_t used[2][META_DLG_INOS / 8];
};
/* n numbers in a row, from *lo (the batch's reservation, records.c's
 * meta_alloc_ino); -ENOSPC when it cannot spare them (the caller gives
 * none this time). */
int meta_alloc_ino_range(struct meta_txn *t, uint32_t n, uint64_t *lo);
/* Client's ranges (all zero when it has none; -EUCLEAN: damaged). */
int meta_dlg_get(struct meta_txn *t, uint64_t client, struct meta_dlg *d);
int meta_dlg_put(struct meta_txn *t, uint64_t client, const struct meta_dlg *d);

#endif
