/*
 * The HSM records of one MDT's store (hsm_rec.c), read and written inside
 * a store transaction: a file's HSM record (its state, the repository and
 * S3 object that hold its data, the archived size and mtime, the sync
 * generation that last saw it), kept in the xattr table under a reserved
 * name, and the MDT's counters of released files. Above the records and
 * the group commit (records.c, store.c), which never call it.
 *
 * Names starting "stria." in the xattr table are the store's own: users
 * never list, read, write or remove them (xattr.c answers as ext4 does for
 * a namespace it does not know).
 */
#ifndef STRIA_META_HSM_REC_H
#define STRIA_META_HSM_REC_H

#include "store.h"

#include <sys/stat.h>

#define META_XATTR_HSM         "stria.hsm"
#define META_XATTR_REPO_PREFIX "stria.repo."
#define META_HSM_ETAG_MAX      256u

/* Whether an xattr name is the store's own (never a user's). */
static inline bool meta_xattr_reserved(const char *name)
{
    return !strncmp(name, "stria.", 6);
}

/* One file's HSM record. state holds HSM_EXISTS, HSM_ARCHIVED,
 * HSM_RELEASED and HSM_LOST (proto.h); HSM_DIRTY is never stored but
 * derived (meta_hsm_state). key and etag are C strings. */
struct meta_hsm {
    uint32_t state;
    uint64_t repo; /* the repository directory's inode */
    uint64_t size; /* the archived copy's size and mtime */
    int64_t mtime_ns;
    uint64_t gen; /* the sync generation that last saw the object */
    char key[PROTO_MAX_S3_KEY + 1];
    char etag[META_HSM_ETAG_MAX + 1];
};

/* The record's own encoding (versioned): encode returns its length or a
 * negative errno; decode -EUCLEAN for anything it cannot read. */
#define META_HSM_REC_MAX (64 + PROTO_MAX_S3_KEY + META_HSM_ETAG_MAX)
int meta_hsm_encode(const struct meta_hsm *h, void *buf, size_t cap);
int meta_hsm_decode(const void *buf, size_t len, struct meta_hsm *out);

/* Whether the file of record h and inode in changed since it was
 * archived: its size or mtime are no longer the archived ones. */
bool meta_hsm_dirty(const struct meta_hsm *h, const struct meta_inode *in);
/* The state clients see: h's bits, and HSM_DIRTY when meta_hsm_dirty. */
uint32_t meta_hsm_state(const struct meta_hsm *h, const struct meta_inode *in);

/* The record of in: 0, or -ENOENT when it has none (in without META_F_HSM
 * is not even looked up; *out is then zero), -EUCLEAN when it is corrupt. */
int meta_hsm_get(struct meta_txn *t, const struct meta_inode *in, struct meta_hsm *out);
/* Write h as inode ino's record. The caller sets META_F_HSM on the inode
 * and puts it. */
int meta_hsm_put(struct meta_txn *t, uint64_t ino, const struct meta_hsm *h);

/* Add dbytes and dfiles (either may be negative) to the MDT's counters of
 * released files, in t; they never go below zero. */
int meta_hsm_count(struct meta_txn *t, int64_t dbytes, int64_t dfiles);
/* The counters, read in t. */
int meta_hsm_released(struct meta_txn *t, uint64_t *bytes, uint64_t *files);
/* The same from a snapshot of its own, for STATFS. */
int meta_store_released(struct meta_store *s, uint64_t *bytes, uint64_t *files);

/* Inode in goes for good, in t: a released file leaves the counters, and
 * a file whose record names an object that holds its data (a key, and
 * ARCHIVED or RELEASED, not LOST) leaves a tombstone of it (meta_gone_*).
 * Call it before meta_xattr_del_all, which takes the record away. Fails
 * only with the store's own errors: a record that cannot be read is
 * logged and leaves no tombstone. */
int meta_hsm_forget(struct meta_txn *t, const struct meta_inode *in);

/*
 * Tombstones: the S3 objects of archived files destroyed here, for the
 * export policy "deleted" (docs/architecture.md, "Tombstones"). Written
 * in the transaction that destroys the inode, so one exists iff its inode
 * went; ids rise by one per tombstone on this MDT and are never reused
 * (the last one handed out is kept in the info database), so a reader
 * that has seen every id up to n needs to look after n only. They stay
 * until dropped (HSM_GONE DROP).
 */
struct meta_gone {
    uint64_t id;
    uint64_t repo; /* the repository directory's inode */
    char key[PROTO_MAX_S3_KEY + 1];
    char etag[META_HSM_ETAG_MAX + 1];
};
/* The record's own encoding (versioned; id is the key, not in it):
 * encode returns its length or a negative errno, decode -EUCLEAN for
 * anything it cannot read. */
#define META_GONE_REC_MAX (32 + PROTO_MAX_S3_KEY + META_HSM_ETAG_MAX)
int meta_gone_encode(const struct meta_gone *g, void *buf, size_t cap);
int meta_gone_decode(const void *buf, size_t len, struct meta_gone *out);
/* A tombstone of repo's object key (etag), in t, with the next id (*id,
 * may be NULL). */
int meta_gone_add(struct meta_txn *t, uint64_t repo, const char *key, const char *etag,
                  uint64_t *id);
/* Each tombstone after id after, in id order: cb returns 0 to go on, 1
 * to stop (that one not taken), or a negative errno, which is returned.
 * One that cannot be read is logged and skipped. g is valid during the
 * call only. */
typedef int (*meta_gone_cb)(void *arg, const struct meta_gone *g);
int meta_gone_scan(struct meta_txn *t, uint64_t after, meta_gone_cb cb, void *arg);
/* Drop the tombstones of ids in (after, upto], at most max of them, in t:
 * *dropped how many went, *more whether some in the range are left. */
int meta_gone_drop(struct meta_txn *t, uint64_t after, uint64_t upto, uint32_t max,
                   uint64_t *dropped, bool *more);
/* Regular file in is truncated to 0, before its size changes: its data no
 * longer matters, so a released file is released no more (its record
 * loses RELEASED, its layout the flag, the counters the file). The caller
 * puts in. */
int meta_hsm_truncated(struct meta_txn *t, struct meta_inode *in);
/* Whether in is a released file (its layout says so). */
static inline bool meta_hsm_is_released(const struct meta_inode *in)
{
    return S_ISREG(in->mode) && in->layout.ncomp && (in->layout.comp[0].type & LAYOUT_F_RELEASED);
}
/* Whether in's objects may exist on the OSTs: it wrote some, or it is
 * released, when a reader's fetch may have filled some already (a fetch
 * writes the objects before anyone says RESTORED). */
static inline bool meta_objects_may_exist(const struct meta_inode *in)
{
    return (in->flags & META_F_OBJECTS) || meta_hsm_is_released(in);
}

#endif
