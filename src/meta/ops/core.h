/*
 * The bottom of the namespace operations: the context of one MDT
 * (struct meta_ctx), the path walk, permission checks and the small rules
 * every namespace change follows (inode records, link counts). Everything
 * else in ops/ is built on it; it calls nothing above it.
 */
#ifndef STRIA_META_OPS_CORE_H
#define STRIA_META_OPS_CORE_H

#include "../store/store.h"
#include "../store/intent_rec.h"
#include <pthread.h>

#define META_MAX_OSTS 1024

/* What the allocator knows of one OST, refreshed from the cluster map. */
struct meta_ost {
    uint32_t index;
    bool online;
    uint64_t avail, total;
};

struct map_pool;

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
     * many as there are requests at once, so it grows. It also holds the
     * striped directories whose attributes are being copied onto their
     * shards (sync_shards): both are inode numbers of this MDT, so an
     * intent's number never meets a directory's. xdone is signalled when
     * one goes. */
    pthread_mutex_t xlock;
    pthread_cond_t xdone;
    uint64_t *xbusy;
    uint32_t nxbusy, xbusy_cap;
    /* MDT 0: the rename lock (txid, when it lapses), under xlock */
    uint64_t rlock_txid;
    int64_t rlock_until_ns;
    /* Recovery's log: the open operations it said last (under xlock), and
     * how many it finished (atomic). */
    uint32_t xopen_said;
    uint64_t xrecovered;
    /* Around the intents one round of recovery runs (NULL: nothing). What
     * recovery writes passes no request's write-behind gate and revokes no
     * lease, so the daemon takes the grant back before it runs the first
     * (recover_begin) and every lease after the last (recover_end) when
     * the round itself wrote anything here (changed: its own writes, not
     * the requests committed meanwhile, which revoke what they change),
     * also for an intent
     * left open (a peer away: it may have taken a local step): a client
     * holding the grant assumes that nobody else changed the MDT while it
     * kept the grant's number, and a lease that nothing else changed what
     * it covers. A round that changed nothing here (a peer still away)
     * leaves the leases: it runs every tick, and revoking each time would
     * send every client back to the MDT every second. */
    void (*recover_begin)(void *arg);
    void (*recover_end)(void *arg, bool changed);
    void *recover_arg;
    /* Whether MDT mdt answers now (metad: a PING; NULL: every peer is
     * taken as answering). Recovery asks it, before it passes the
     * write-behind gate, of the peer that left an intent open in its last
     * round; one that still does not answer leaves the intent for the
     * next tick without a round, so the grant's holder keeps its grant
     * while a peer is away. */
    bool (*peer_up)(void *arg, uint32_t mdt);
    /* Intents the last round left open because a peer failed, and which
     * peer (under xlock; recover.c). */
#define META_XAWAY 64
    struct meta_xaway {
        uint64_t txid;
        uint32_t mdt;
    } xaway[META_XAWAY];
    uint32_t nxaway;
    /* Tests only (NULL in the daemon): called by recovery once it has its
     * snapshot of the intents, before it reads one. */
    void (*recover_hook)(struct meta_ctx *c);
    /* Tests only: called by a request between the commit of its attribute
     * copy's intent and its run of it (meta_xsync_after). */
    void (*xsync_hook)(struct meta_ctx *c, uint64_t txid);
    /* File system defaults for new files (DESIGN §3). */
    int32_t default_count;
    uint32_t default_size;
    /* The most bytes the Data-on-MDT records may hold (metad's dom_max;
     * 0: Data-on-MDT is off here: no growth, and new files take their
     * layout without an mdt component), and whether a refusal for it was
     * logged since the records were last well below it (atomic). */
    uint64_t dom_max;
    int dom_full;
    /* How long a migration lives without PROGRESS before it is stale
     * (metad's migrate_stale_ms; META_MIG_STALE_MS_DEFAULT). Its replies
     * say it, so that the migrator keeps well inside it. */
    uint32_t mig_stale_ms;
    /* Allocation state, under alloc_lock. */
    pthread_mutex_t alloc_lock;
    bool osts_known; /* a cluster map has come since start */
    uint32_t nost;
    struct meta_ost ost[META_MAX_OSTS];
    uint32_t rr_next;
    uint64_t rng;
    /* OST pools from the cluster map (each pool's OSTs ascending), and
     * how a pool the map does not show yet is waited for (alloc.c). */
    struct map_pool *pools;
    uint32_t npools;
    uint64_t map_gen;                     /* maps received (meta_ctx_set_pools) */
    uint64_t pool_ask_gen;                /* map_gen when a fresh map was asked for */
    int64_t pool_ask_ns;                  /* then (monotonic; 0 never) */
    char pool_asked[LAYOUT_POOL_MAX + 1]; /* for which pool */
    int64_t pool_warned_ns;               /* the last warning of a pool not there */
    /* Ask for a fresh cluster map now, without waiting (metad: the
     * heartbeat's; NULL: never, as in unit tests). */
    void (*refresh_map)(void *arg);
    void *refresh_arg;
};

#define META_MAX_SYMLINKS 40
/* dom_max when no one says (metad's default). */
#define META_DOM_MAX_DEFAULT (8ull << 30)

/* Where a walk ended. */
struct walk {
    uint64_t dir;          /* the directory holding the last component */
    struct meta_inode din; /* its inode */
    char name[PROTO_MAX_NAME + 1];
    bool self;      /* the path names dir itself ("", "/", ".", "..") */
    int dots;       /* with self: 1 if it ended in ".", 2 if in "..", else 0 */
    bool must_dir;  /* the path ended in '/' */
    int links_left; /* symlinks that may still be followed */
    /* Set by a caller that reads no more of din than a walk cache summary
     * holds (wcache.h) when the walk ends at a name: mode, owner, parent,
     * stripe. It spares the read of the whole record. */
    bool summary_ok;
};

/* A path with room for a symlink's target spliced in. */
#define META_PATH_BUF (2 * PROTO_MAX_STR + 2)

/* mask: 4 read, 2 write, 1 execute/search. 0 or -EACCES. */
int meta_may(const struct meta_inode *in, const struct proto_cred *c, unsigned mask);
/* Removing or renaming victim out of dir: write+search, and the sticky bit. */
int meta_may_delete(const struct meta_inode *dir, const struct meta_inode *victim,
                    const struct proto_cred *c);
/* Whether name's entry in directory dir (record din) belongs on this MDT. */
bool meta_name_here(struct meta_txn *t, uint64_t dir, const struct meta_inode *din,
                    const char *name);
/* The DT_* type of an inode mode. */
uint8_t meta_dtype(uint32_t mode);
/* 0, -ENOENT for an empty name, -ENAMETOOLONG for one over PROTO_MAX_NAME. */
int meta_valid_name(const char *name);
/* Resolve the whole path to an inode; follow a final symlink if asked. */
int meta_walk_full(struct meta_txn *t, const struct proto_cred *c, uint64_t start, const char *path,
                   bool follow, struct meta_inode *out);

/* The mode bits a truncate by c drops: CAP_FSETID is root's here. */
uint32_t meta_truncate_drops(const struct meta_inode *in, const struct proto_cred *c);
/* The argument of a transaction about one inode: its request and reply,
 * and a buffer the reply may point into. */
struct meta_ino_arg {
    struct meta_ctx *c;
    const void *q;
    void *r;
    uint8_t *buf;
    size_t buflen;
    uint64_t xsync; /* the attribute copy the change noted (meta_xsync_note), or 0 */
};

int64_t meta_now_ns(void);
/* Resolve all but the last component of path, starting at start, with
 * search permission on each directory. -EREMOTE when a component (the last
 * one too) or a directory on the way lives on another MDT. */
int meta_walk_parent(struct meta_txn *t, const struct proto_cred *c, uint64_t start,
                     const char *path, struct walk *w);
/* May c add a name where the walk ended? */
int meta_may_add(const struct walk *w, const struct proto_cred *c);
/* A new inode record made by c in directory dir. */
void meta_init_inode(struct meta_inode *in, uint64_t ino, uint32_t mode, const struct proto_cred *c,
                     const struct meta_inode *dir);
/* A directory's entries changed: times, and its link count by delta. */
int meta_touch_dir(struct meta_txn *t, struct meta_inode *dir, int nlink_delta);
/* An inode record, or -EREMOTE when it lives on another MDT and this one
 * holds no shard of it. */
int meta_inode_get_here(struct meta_txn *t, uint64_t ino, struct meta_inode *out);

/* An operation returns this when it spans MDTs: xmdt.c carries it on
 * with the plan the operation filled in. */
#define META_CROSS 2

/* Drop one link of in (ops.c): when the last goes, the inode goes, and
 * gone, its layout and size and whether objects may exist say so. */
int meta_drop_link(struct meta_txn *t, struct meta_inode *in, uint8_t *destroy,
                   struct layout *layout, uint8_t *gone, uint64_t *size);

/* Operations on a name held by a cross-MDT rename wait (-EAGAIN) for it:
 * run fn as mode says, again every 2.5 ms while it answers -EAGAIN, for
 * two seconds at most (then -EBUSY). */
enum meta_run_mode {
    META_RUN_READ,  /* a read-only snapshot */
    META_RUN_WRITE, /* a write transaction of its own (nested in the batch) */
    META_RUN_FLAT,  /* a write that fails only before writing: meta_store_write_flat */
};
int meta_run_waiting(const struct meta_req *rq, enum meta_run_mode mode, meta_txn_fn fn, void *arg);

/* ---- names held by cross-MDT renames (meta_ctx.holds, and HOLD intents
 * so that they outlive a restart) ---- */
/* A name held by a cross-MDT rename other than txid (xname.c): changes to
 * it wait (-EAGAIN, which the operation retries). */
bool meta_name_held(struct meta_ctx *c, uint64_t dir, const char *name, uint64_t txid);
/* Hold (dir, name) for txid; -EBUSY when another operation holds it or
 * there is no room. */
int meta_hold_take(struct meta_ctx *c, uint64_t txid, uint64_t dir, const char *name);
/* Let go of txid's hold, if any. */
void meta_hold_drop(struct meta_ctx *c, uint64_t txid);
/* Load the holds a previous run of this MDT left (at start). */
int meta_holds_load(struct meta_ctx *c);

#endif
