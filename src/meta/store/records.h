/*
 * The records of one MDT's store (records.c), read and written inside a
 * store transaction (struct meta_txn, which store.h's meta_store_write and
 * meta_store_read hand to their callers): inodes and their encoding,
 * directory entries, xattrs, symlink targets, intents and the list of
 * files whose objects await removal. Below the group commit (store.c),
 * which it never calls.
 */
#ifndef STRIA_META_RECORDS_H
#define STRIA_META_RECORDS_H

#include "../../proto/ids.h"
#include "../../proto/proto.h"

#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct meta_store;
struct meta_reply;
struct meta_ctx;

/* The inodes one request changed: every inode record it wrote or removed
 * and every directory whose entries it changed, in order, without repeats
 * (leases on them are revoked, lease.h). overflow: more than fit. An inode
 * whose record the request wrote last has its attributes as written in
 * attr (has_attr), so the reply need not read them back. */
#define META_TOUCHED_MAX 8
struct meta_touched {
    uint32_t n;
    bool overflow;
    uint64_t ino[META_TOUCHED_MAX];
    bool has_attr[META_TOUCHED_MAX];
    struct proto_attr attr[META_TOUCHED_MAX];
    /* When the request last wrote each, in the order of the store's
     * writes: requests are numbered (leases) after they wrote, in any
     * order, and this says which wrote last. */
    uint64_t wseq[META_TOUCHED_MAX];
    /* Set by the service, not the store: the request is a namespace
     * operation (a create, link, unlink or rename, or a step of one), so
     * the directories it touched changed only in their names and in the
     * times and link count that follow (lease.c tells other clients so). */
    bool names;
};

/* The request a store call serves, built by the service's dispatcher for
 * each request and handed down through the operation to every
 * meta_store_write and meta_store_read it makes; the store hands it to the
 * transaction. Recovery and other internal callers pass one with neither
 * touched nor reply (or NULL, which means the same). */
struct meta_req {
    struct meta_ctx *ctx;         /* the MDT serving it (ops); the store never looks inside */
    struct meta_touched *touched; /* where its changes are noted; NULL: nowhere */
    struct meta_reply *reply;     /* where its reply is kept (meta_reply_here); NULL: not kept */
    void *buf;                    /* scratch its reply may point into (READDIR's entries...) */
    size_t buf_len;
    /* Data with the request, and data the reply sends back (in buf). */
    const uint8_t *bulk;
    uint32_t bulk_len;
    const void *out_bulk;
    uint32_t out_bulk_len;
    /* Scratch asked for only when an operation finds it needs some (an
     * OPEN that sends a file's bytes): at least len bytes, valid until the
     * reply is sent, or NULL (no memory, or none to give: NULL scratch).
     * The same memory as buf: an operation uses one or the other. */
    void *(*scratch)(void *arg, uint32_t len);
    void *scratch_arg;
    /* Where the time it waits for its turn (queued for a batch, or for a
     * name another operation holds) is added; NULL: nowhere. */
    uint64_t *wait_ns;
};

/* An open transaction: the LMDB txn, the store's databases, and the
 * request it runs for (never NULL: an empty one when there is none). */
struct meta_txn {
    MDB_txn *txn;
    struct meta_store *store;
    const struct meta_req *req;
    bool wrote;      /* a record was put or deleted */
    bool reader;     /* a read-only snapshot (meta_store_read) */
    uint64_t wc_gen; /* a reader's walk-cache generation (wcache.h) */
};

/* Inode flags. */
#define META_F_OBJECTS 1u /* data objects may exist on OSTs */
/* A shard of a striped directory whose inode lives on another MDT: the
 * record holds that inode's number, owner and mode for permission checks
 * here, and counts the subdirectories of this shard only. */
#define META_F_SHARD 2u
/* A directory being removed by a cross-MDT rmdir (or replaced by a rename):
 * it takes no new names. The seal belongs to the operation in seal. */
#define META_F_SEALED 4u
/* A file that another MDT's entry may name (it moved or was linked there):
 * its entries cannot all be counted on this MDT alone. */
#define META_F_REMOTE_NAMES 8u
/* A file with an HSM record (hsm_rec.h): only such inodes are looked up. */
#define META_F_HSM 16u
/* A file whose name took a changed S3 object (HSM_IMPORT UPDATED): it has
 * no name, and stays with its objects and HSM record (and pending) for
 * the readers that opened it until HSM_REAP takes it. */
#define META_F_SUPERSEDED 32u

/* One inode record as decoded from LMDB. */
struct meta_inode {
    uint64_t ino;
    uint32_t mode, uid, gid, nlink;
    uint64_t size;
    int64_t atime_ns, mtime_ns, ctime_ns;
    uint64_t rdev;
    uint32_t flags;
    uint64_t parent; /* directories: the parent directory, for ".." */
    /* directories: default layout for new files (count -1 all, 0 inherit) */
    int32_t dcount;
    uint32_t dsize;
    int32_t doffset;
    /* directories: the stripe over MDTs (proto_dstripe, 0 plain) and the
     * default for new subdirectories (GETSTRIPE's ddefault) */
    uint64_t dstripe, ddefault;
    /* sealed directories: the txid of the operation that sealed it (0: a
     * seal made before seals were owned, which any operation may undo) */
    uint64_t seal;
    struct layout layout; /* regular files */
};

/* Whether in is sealed by operation txid: its seal is txid's, or an
 * unowned one (made before seals had owners), which any operation holds. */
static inline bool meta_sealed_by(const struct meta_inode *in, uint64_t txid)
{
    return (in->flags & META_F_SEALED) && (in->seal == txid || in->seal == 0);
}

/* Seal in for operation txid, or let go of its seal (the caller puts it). */
static inline void meta_seal_set(struct meta_inode *in, uint64_t txid)
{
    in->flags |= META_F_SEALED;
    in->seal = txid;
}

static inline void meta_seal_clear(struct meta_inode *in)
{
    in->flags &= ~META_F_SEALED;
    in->seal = 0;
}

/* Zero an inode record but for the unused part of its layout (4 KiB at
 * full size; only ncomp components count). */
static inline void meta_inode_clear(struct meta_inode *in)
{
    memset(in, 0, offsetof(struct meta_inode, layout));
    in->layout.ncomp = 0;
}

/* An inode record in the store's own encoding (SHARD carries it between
 * MDTs): encode returns its length or a negative errno; decode -EUCLEAN
 * for anything it cannot read. */
#define META_INODE_REC_MAX (160 + sizeof(struct layout))
int meta_inode_encode(const struct meta_inode *in, void *buf, size_t cap);
int meta_inode_decode(const void *buf, size_t len, struct meta_inode *out);

/* The attributes clients see of an inode record. */
void meta_inode_attr(const struct meta_inode *in, struct proto_attr *a);

/* Records. All return 0, -ENOENT when missing, or another negative errno. */
int meta_inode_get(struct meta_txn *t, uint64_t ino, struct meta_inode *out);
int meta_inode_put(struct meta_txn *t, const struct meta_inode *in);
/* A directory's record changed by adding or removing a name: in a batch of
 * flat writes its put waits for the batch's end (one put per directory
 * per batch), and reads in the batch see it; elsewhere it is put now. */
int meta_dir_touched(struct meta_txn *t, const struct meta_inode *dir);
int meta_inode_del(struct meta_txn *t, uint64_t ino);
int meta_alloc_ino(struct meta_txn *t, uint64_t *ino);

/* Inode numbers handed to clients to create files behind their grant
 * (dlg_rec.h): META_DLG_INOS a range, two of which a batch keeps room for. */
#define META_DLG_INOS 1024u
/* Numbers a batch of the store may hand out to its creates (store.c). */
#define META_BATCH_INOS 512u

int meta_dentry_get(struct meta_txn *t, uint64_t parent, const char *name, uint64_t *ino,
                    uint8_t *type);

/* For path walks, through the walk cache (wcache.h). meta_walk_name is
 * meta_dentry_get for one component. meta_walk_dir reads what a walk needs
 * of inode ino: from the cache only the fields of struct wcache_dir
 * (*full false; the rest of out is zero), else the whole record (*full
 * true), which may be of any type. */
int meta_walk_name(struct meta_txn *t, uint64_t dir, const char *name, uint64_t *ino,
                   uint8_t *type);
int meta_walk_dir(struct meta_txn *t, uint64_t ino, struct meta_inode *out, bool *full);
/* Walk-cache counters for tests (wcache_counts). */
void meta_store_wcache_counts(struct meta_store *s, uint64_t *hits, uint64_t *drops);
/* Add an entry; -EEXIST if the name is taken. */
int meta_dentry_add(struct meta_txn *t, uint64_t parent, const char *name, uint64_t ino,
                    uint8_t type);
/* Add parent/name -> *ino unless the name is there: then 1, with its inode
 * in *ino, and nothing changed. One lookup where get and add make two. */
int meta_dentry_add_or_get(struct meta_txn *t, uint64_t parent, const char *name, uint64_t *ino,
                           uint8_t type);
/* Point an existing name at another inode. */
int meta_dentry_set(struct meta_txn *t, uint64_t parent, const char *name, uint64_t ino,
                    uint8_t type);
int meta_dentry_del(struct meta_txn *t, uint64_t parent, const char *name);
/* 1 if the directory holds no entries, 0 if it does. */
int meta_dir_is_empty(struct meta_txn *t, uint64_t dir);

/* Directory iteration in cookie order. cb returns 0 to continue, 1 to stop
 * (the entry was not consumed), or a negative errno. */
typedef int (*meta_dirent_cb)(void *arg, uint64_t ino, uint8_t type, const char *name,
                              size_t namelen, uint64_t next_cookie);
int meta_dir_iterate(struct meta_txn *t, uint64_t dir, uint64_t cookie, meta_dirent_cb cb,
                     void *arg);

/* Every entry of the MDT, in key order (by parent), and every inode
 * record (in NULL where the record cannot be decoded). A callback's
 * non-zero return stops the scan and is returned. Changing the database
 * from a callback is not allowed; collect, then change. */
typedef int (*meta_scan_dentry_cb)(void *arg, uint64_t parent, const char *name, uint64_t ino,
                                   uint8_t type);
typedef int (*meta_scan_inode_cb)(void *arg, uint64_t ino, const struct meta_inode *in);
int meta_dentry_scan(struct meta_txn *t, meta_scan_dentry_cb cb, void *arg);
int meta_inode_scan(struct meta_txn *t, meta_scan_inode_cb cb, void *arg);

int meta_xattr_get(struct meta_txn *t, uint64_t ino, const char *name, MDB_val *val);
int meta_xattr_put(struct meta_txn *t, uint64_t ino, const char *name, const void *v, size_t len);
int meta_xattr_del(struct meta_txn *t, uint64_t ino, const char *name);
/* Call cb for each xattr name of ino. */
int meta_xattr_list(struct meta_txn *t, uint64_t ino,
                    int (*cb)(void *arg, const char *name, size_t len), void *arg);
int meta_xattr_del_all(struct meta_txn *t, uint64_t ino);

int meta_symlink_get(struct meta_txn *t, uint64_t ino, MDB_val *target);
int meta_symlink_put(struct meta_txn *t, uint64_t ino, const char *target, size_t len);
int meta_symlink_del(struct meta_txn *t, uint64_t ino);

/* Intents of cross-MDT operations (xmdt.h), by transaction id. The scan
 * callback may not change the database; a non-zero return stops it. */
int meta_intent_put(struct meta_txn *t, uint64_t txid, const void *rec, size_t len);
int meta_intent_get(struct meta_txn *t, uint64_t txid, MDB_val *val);
/* Files whose last link went while their objects stay until the client
 * destroys them (DESTROYED): stria fsck must not call those orphans. */
int meta_pending_put(struct meta_txn *t, uint64_t ino);
int meta_pending_del(struct meta_txn *t, uint64_t ino);
/* 1 if ino is pending, 0 if not, or a negative errno. */
int meta_pending_has(struct meta_txn *t, uint64_t ino);
int meta_pending_scan(struct meta_txn *t, int (*cb)(void *arg, uint64_t ino), void *arg);
int meta_intent_del(struct meta_txn *t, uint64_t txid);
typedef int (*meta_scan_intent_cb)(void *arg, uint64_t txid, const void *rec, size_t len);
int meta_intent_scan(struct meta_txn *t, meta_scan_intent_cb cb, void *arg);

/* records.c: the directory records a flat batch deferred, put in txn (the
 * batch's, before it commits). */
int meta_store_flush_deferred(struct meta_store *s, MDB_txn *txn);

#endif
