/*
 * Consistency check of one MDT's namespace (`stria fsck`, docs/operations.md).
 *
 * Every entry must name an inode that exists, in a directory that exists;
 * every inode but the root must be named by an entry (a directory by
 * exactly one); a file's link count must equal its entries, a directory's
 * 2 + its subdirectories; a directory's parent (its "..") must be the
 * directory holding it. With repair, dangling entries are removed, link
 * counts and parents set, and unnamed inodes linked into /lost+found as
 * "#<inode in hex>" (made if missing), as e2fsck does, so nothing is lost.
 * A Data-on-MDT record whose inode is gone (and not pending) or has no mdt
 * component is an orphan too, and goes with repair (its bytes are no
 * file's).
 * What one MDT cannot decide alone (names of other MDTs' inodes, inodes
 * other MDTs may name) it lists in refs for the client to join across MDTs
 * (proto/xrefs.h), and with repair it also makes the repairs that join
 * asks of it (xfixes).
 */
#ifndef STRIA_META_FSCK_H
#define STRIA_META_FSCK_H

#include "../store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct meta_fsck_report {
    uint64_t inodes, entries;
    uint64_t dangling;   /* entries naming a missing inode or in a missing directory */
    uint64_t orphans;    /* inodes no entry names; Data-on-MDT records no file reads */
    uint64_t bad_nlink;  /* link counts that differ from the entries */
    uint64_t bad_parent; /* directories whose ".." is wrong, or named more than once */
    uint64_t corrupt;    /* records that cannot be decoded (reported, not repaired) */
    uint64_t open_ops;   /* cross-MDT operations this MDT has not finished (not an error) */
    uint64_t pending;    /* removed files whose objects wait for their client */
    uint64_t fixed;      /* findings repaired */
    /* The cross-MDT references (proto/xrefs.h), when refs is set: at most
     * refs_cap bytes; refs_full says some did not fit. */
    uint8_t *refs;
    size_t refs_len, refs_cap;
    bool refs_full;
    /* In: repairs the check across MDTs asks for (xrefs.h's xfix records),
     * made with repair. */
    const uint8_t *xfixes;
    size_t xfixes_len;
    /* In: how long a migration lives without PROGRESS before it is listed
     * stale (metad's migrate_stale_ms; 0: META_MIG_STALE_MS_DEFAULT). */
    uint32_t mig_stale_ms;
    /* One line per finding (the first that fit), NUL-terminated. */
    char *text;
    size_t text_len, text_cap;
};

/* Check (and with repair, fix) the store in one transaction: a write
 * transaction with repair, which holds the MDT's other writes meanwhile.
 * report->text must point to text_cap bytes. Returns 0 or a negative
 * errno; the counts are valid either way. */
int meta_fsck(struct meta_store *s, bool repair, struct meta_fsck_report *report);

#endif
