/*
 * Namespace operations of one MDT. Each takes a decoded request and fills
 * the reply; the service (metad.c) only decodes and encodes. Unit tests
 * call these directly on a store in a temporary directory.
 *
 * Every operation checks the caller's credentials (uid, gid, groups) as a
 * local POSIX file system would, and returns 0 or a negative errno.
 */
#ifndef STRIA_META_OPS_H
#define STRIA_META_OPS_H

#include "store.h"

#include <pthread.h>

#define META_MAX_OSTS 1024

/* What the allocator knows of one OST, refreshed from the cluster map. */
struct meta_ost {
    uint32_t index;
    bool online;
    uint64_t avail, total;
};

/* A step of a cross-MDT operation sent to another MDT (metad.c sends it;
 * unit tests call the other MDT's meta_op_shard directly). */
typedef int (*meta_peer_fn)(void *arg, uint32_t mdt, const struct proto_shard_req *q,
                            struct proto_shard_rep *r);
typedef int (*meta_xpeer_fn)(void *arg, uint32_t mdt, const struct proto_xname_req *q,
                             struct proto_xname_rep *r);

/* A name a cross-MDT rename holds on this MDT (xname.c). */
#define META_MAX_HOLDS 64
struct meta_hold {
    uint64_t txid, dir;
    char name[PROTO_MAX_NAME + 1];
};

struct meta_ctx {
    struct meta_store *store;
    uint32_t mdt;  /* this MDT's index */
    uint32_t nmdt; /* MDTs of the file system, as far as this one knows */
    /* Other MDTs; NULL: this MDT works alone (a cross-MDT step fails). */
    meta_peer_fn peer;
    meta_xpeer_fn xpeer;
    void *peer_arg;
    /* Names held for cross-MDT renames, under xlock (nholds also read
     * without it, as a hint that there are none). */
    struct meta_hold holds[META_MAX_HOLDS];
    uint32_t nholds;
    /* Cross-MDT operations in progress here (xmdt.c), under xlock: as
     * many as there are requests at once, so it grows. */
    pthread_mutex_t xlock;
    uint64_t *xbusy;
    uint32_t nxbusy, xbusy_cap;
    int xpending; /* an intent waits to be run (atomic) */
    /* MDT 0: the rename lock (txid, when it lapses), under xlock */
    uint64_t rlock_txid;
    int64_t rlock_until_ns;
    /* Recovery's log: the open operations it said last (under xlock), and
     * how many it finished (atomic). */
    uint32_t xopen_said;
    uint64_t xrecovered;
    /* Tests only (NULL in the daemon): called by recovery once it has its
     * snapshot of the intents, before it reads one. */
    void (*recover_hook)(struct meta_ctx *c);
    /* File system defaults for new files (DESIGN §3). */
    int32_t default_count;
    uint32_t default_size;
    /* Allocation state, under alloc_lock. */
    pthread_mutex_t alloc_lock;
    bool osts_known; /* a cluster map has come since start */
    uint32_t nost;
    struct meta_ost ost[META_MAX_OSTS];
    uint32_t rr_next;
    uint64_t rng;
};

/* Initialise ctx over an open store. On a new MDT below root_mdts it
 * creates the root directory, striped over MDTs 0 .. root_mdts - 1 (MDT 0
 * holds its inode, the others a shard). */
int meta_ctx_init(struct meta_ctx *ctx, struct meta_store *store, int32_t default_count,
                  uint32_t default_size, uint32_t root_mdts);
/* Where a new directory under parent goes: its stripe (0: plain) and the
 * MDT of its inode, from MKDIR's count and start (0 and -1: the parent's
 * default for new subdirectories, else plain on this MDT). */
int meta_dir_placement(struct meta_ctx *c, const struct meta_inode *parent, int32_t count,
                       int32_t start, uint64_t *dstripe, uint32_t *owner);
void meta_ctx_destroy(struct meta_ctx *ctx);
/* Replace the allocator's view of the OSTs. */
void meta_ctx_set_osts(struct meta_ctx *ctx, const struct meta_ost *osts, uint32_t n);

int meta_op_lookup(const struct meta_req *rq, const void *q, void *r);
int meta_op_getattr(const struct meta_req *rq, const void *q, void *r);
/* Fill the attributes of each leased entry (ms > 0) of ls that still
 * exists: as the change wrote them (touched), else read back in one read
 * transaction. */
void meta_op_lease_attrs(struct meta_ctx *c, const struct meta_touched *touched,
                         struct proto_leases *ls);
int meta_op_setattr(const struct meta_req *rq, const void *q, void *r);
int meta_op_open(const struct meta_req *rq, const void *q, void *r);
int meta_op_mkdir(const struct meta_req *rq, const void *q, void *r);
int meta_op_unlink(const struct meta_req *rq, const void *q, void *r);
int meta_op_rmdir(const struct meta_req *rq, const void *q, void *r);
int meta_op_rename(const struct meta_req *rq, const void *q, void *r);
int meta_op_link(const struct meta_req *rq, const void *q, void *r);
int meta_op_symlink(const struct meta_req *rq, const void *q, void *r);
/* A FIFO, device, socket or (mode type S_IFREG or 0) regular file, with
 * mknod(2)'s rules: other types EINVAL (a directory EPERM), a device by
 * anyone but root EPERM. */
int meta_op_mknod(const struct meta_req *rq, const void *q, void *r);
/* buf receives the target; r->target points into it. */
int meta_op_readlink(const struct meta_req *rq, const void *q, void *r);
/* Entries are encoded into buf (at most min(buflen, q->max_bytes) bytes). */
int meta_op_readdir(const struct meta_req *rq, const void *q, void *r);
int meta_op_getstripe(const struct meta_req *rq, const void *q, void *r);
int meta_op_setstripe(const struct meta_req *rq, const void *q, void *r);
int meta_op_setxattr(const struct meta_req *rq, const void *q, void *r);
int meta_op_getxattr(const struct meta_req *rq, const void *q, void *r);
int meta_op_listxattr(const struct meta_req *rq, const void *q, void *r);
int meta_op_removexattr(const struct meta_req *rq, const void *q, void *r);
int meta_op_setdirstripe(const struct meta_req *rq, const void *q, void *r);
/* The objects of inode q->ino are gone: it is no longer pending. */
int meta_op_destroyed(const struct meta_req *rq, const void *q, void *r);
/* A step of another MDT's cross-MDT operation (SHARD, XNAME). */
int meta_op_shard(const struct meta_req *rq, const void *q, void *r);
int meta_op_xname(const struct meta_req *rq, const void *q, void *r);
/* Finish or roll back every cross-MDT operation this MDT began and did not
 * end (after a restart, or when a peer was away). Returns how many remain
 * open, or a negative errno. */
int meta_xmdt_recover(struct meta_ctx *c);

int meta_op_setsize(const struct meta_req *rq, const void *q, void *r);

#endif
