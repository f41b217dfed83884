/*
 * Data-on-MDT (DoM): the bytes of a file's first component when it is of
 * type mdt, kept in the MDT's store beside the inode (table "dom"). A
 * file's record holds its first len bytes (the furthest byte written, or
 * the size it was truncated to, whichever is less), in chunks of
 * DOM_CHUNK bytes, each with its CRC32C: a chunk is checked before it is
 * read or partly rewritten, so a record damaged on disk gives EIO, never
 * other bytes. Bytes past len read as zeros (a hole). The MDT's total is
 * one counter of the info database, changed in the transaction of every
 * change, for dom_max and df.
 */
#ifndef STRIA_META_DOM_REC_H
#define STRIA_META_DOM_REC_H

#include "store.h"

#include <stdint.h>

/* Write len bytes of data at off into ino's record; the record grows to
 * off + len (zeros between). -EFBIG when off + len > limit (the component
 * ends there), -EDQUOT when the record would grow and the MDT's total pass
 * max (UINT64_MAX: no limit; 0: no record may grow), which the MDT tells
 * apart from its store's -ENOSPC, -EIO when a block it partly rewrites
 * fails its checksum. */
int meta_dom_write(struct meta_txn *t, uint64_t ino, uint64_t off, const void *data, uint32_t len,
                   uint64_t limit, uint64_t max);
/* Read [off, off + len) of ino's record into buf (zeros past its len, and
 * for a file without one). -EIO when a block fails its checksum. *held:
 * the record's len (0: none). */
int meta_dom_read(struct meta_txn *t, uint64_t ino, uint64_t off, void *buf, uint32_t len,
                  uint64_t *held);
/* The record keeps its first size bytes (a truncate; growing adds none). */
int meta_dom_truncate(struct meta_txn *t, uint64_t ino, uint64_t size);
/* The record goes (the inode does). */
int meta_dom_del(struct meta_txn *t, uint64_t ino);
/* The bytes every record of this MDT holds. */
int meta_dom_total(struct meta_txn *t, uint64_t *bytes);
/* The same from a snapshot of its own, for STATFS. */
int meta_store_dom_total(struct meta_store *s, uint64_t *bytes);
/* Each record: cb(arg, ino, len); a non-zero return stops the scan. */
int meta_dom_scan(struct meta_txn *t, int (*cb)(void *arg, uint64_t ino, uint64_t len), void *arg);

#endif
