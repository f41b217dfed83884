/*
 * The LMDB environment of one MDT's store, which its files (store.c,
 * records.c, reply.c) share: struct meta_store and the helpers of its
 * encodings. No functions of its own. Not for anyone outside store/.
 */
#ifndef STRIA_META_ENV_H
#define STRIA_META_ENV_H

#include "records.h"
#include "reply.h"

#include <errno.h>
#include <pthread.h>

struct wcache;
struct wreq;

#define DEFER_MAX 16

struct meta_store {
    MDB_env *env;
    MDB_dbi inodes, dentries, xattrs, links, info, intents, pending, replies, gone, dom, mig;
    uint32_t mdt;
    void *owner; /* meta_store_set_owner */
    char dir[4096];
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct wreq *head, *tail;
    bool leader;
    bool dirty;
    /* Inode numbers [ino_next, ino_limit) are reserved on disk already; only
     * the batch leader touches them. ino_limit 0: reload from disk. */
    uint64_t ino_next, ino_limit;
    /* A flat batch's directory records whose put waits for the batch's end
     * (meta_dir_touched): a create changes its directory's times, and a
     * batch of creates in one directory writes that record once. Only the
     * batch leader touches them. */
    MDB_txn *defer_txn; /* the flat batch's transaction, or NULL */
    uint32_t ndefer;
    struct meta_inode defer[DEFER_MAX];
    pthread_mutex_t sync_lock;
    struct wcache *wc; /* the walk cache (wcache.h) */
    /* Batches committed and the writes in them (leader only), logged at
     * close: how well group commit gathers under the load seen. */
    uint64_t commits, committed;
    uint64_t wseq;       /* requests' write functions run so far (leader only) */
    int last_batch;      /* how many requests the last batch took */
    uint32_t psize;      /* LMDB's page size */
    uint64_t grown;      /* the data file's blocks are allocated to here (leader only) */
    uint64_t grow_retry; /* grow_ahead looks again once LMDB uses this much */
};

/* What a write or read without a request of its own runs for: nothing is
 * noted and no reply is kept (recovery, fsck, pruning). */

static inline int mdb_err(int rc)
{
    switch (rc) {
    case 0:
        return 0;
    case MDB_NOTFOUND:
        return -ENOENT;
    case MDB_KEYEXIST:
        return -EEXIST;
    case MDB_MAP_FULL:
        return -ENOSPC;
    case MDB_TXN_FULL:
        return -ENOSPC;
    case MDB_BAD_VALSIZE:
        return -ENAMETOOLONG;
    default:
        return rc > 0 ? -rc : -EIO;
    }
}

/* Whether a record goes (meta_store_prune). */
typedef bool meta_prune_fn(const MDB_val *key, const MDB_val *val, void *arg);
/* Delete the records of dbi whose keys begin with prefix (plen bytes; 0:
 * all) that gone says go, at most 1,024 a write transaction, so that a
 * prune never holds the writers up for long; each transaction goes on
 * from where the last stopped. Returns how many went, or a negative
 * errno. */
int meta_store_prune(struct meta_store *s, MDB_dbi dbi, const void *prefix, size_t plen,
                     meta_prune_fn *gone, void *arg);

static inline void be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static inline uint64_t rd_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

#endif
