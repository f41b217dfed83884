/*
 * Intent records: what an open cross-MDT operation (or a record of another
 * MDT's operation kept here) writes in the store's intents table, and its
 * codec. The intents themselves are run by ops/intent.c.
 */
#ifndef STRIA_META_STORE_INTENT_REC_H
#define STRIA_META_STORE_INTENT_REC_H

#include "../../proto/proto.h"

#include <stddef.h>
#include <stdint.h>

/* Kinds of intent. Two are records of another MDT's operation kept here:
 * APPLIED, a LINK_* step done; HOLD, a name held for a rename (dir, name),
 * which must outlive a restart of this MDT. */
enum {
    XK_MKDIR = 1,
    XK_RMDIR,
    XK_SYNC,
    XK_RENAME,
    XK_UNLINK,
    XK_LINK,
    XK_APPLIED,
    XK_HOLD,
    XK_RLOCK /* MDT 0: who holds the rename lock (ino) until when (dir, real time) */
};
#define X_MAX_MDTS PROTO_DS_MAX_COUNT

struct meta_intent {
    uint8_t kind, phase;
    uint64_t ino, dir;
    uint16_t n;
    uint16_t mdt[X_MAX_MDTS];
    /* names (rename, unlink, link): the other inode, a type, a name */
    uint64_t ino2;
    uint8_t type;
    char name[PROTO_MAX_NAME + 1];
    uint8_t flags;   /* rename: XF_* */
    uint16_t vfirst; /* rename with XF_VDIR: mdt[vfirst..n-1] hold records of
                      * the replaced directory, sealed in phase 1, deleted
                      * in phase 2 */
};
/* A rename holds the rename lock; moves a directory to another parent. */
#define XF_LOCKED   1u
#define XF_REPARENT 2u
#define XF_VDIR     4u /* ino2 is a directory being replaced (records from vfirst) */
/* A sync: the directory's atime, or its mtime, was set (each is copied
 * onto the shards only then; the same bits as PROTO_SHARD_ATTR_*). */
#define XF_SYNC_ATIME 1u
#define XF_SYNC_MTIME 2u
/* An intent in the store's encoding: encode returns its length or a
 * negative errno; decode -EUCLEAN for anything it cannot read. */
int meta_intent_decode(const void *buf, size_t len, struct meta_intent *x);
int meta_intent_encode(const struct meta_intent *x, uint8_t *buf, size_t cap);

#endif
