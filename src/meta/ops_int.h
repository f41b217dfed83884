/*
 * What ops.c shares with the cross-MDT operations (xmdt.c): the path walk
 * and the small rules every namespace change follows. Not for the service.
 */
#ifndef STRIA_META_OPS_INT_H
#define STRIA_META_OPS_INT_H

#include "ops.h"

#define META_MAX_SYMLINKS 40

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

/* ---- intents (xmdt.c) ---- */

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
/* One SHARD step (arg: SETPARENT's parent; DEL's flag) on MDT mdt, this one
 * or a peer. SEAL, UNSEAL and DEL act for txid: a seal is the operation's
 * that made it; another's SEAL and DEL answer EBUSY, another's UNSEAL does
 * nothing. DEL removes only a record sealed by txid, or one that no name
 * ever held (META_SHARD_DEL_UNNAMED: an unfinished mkdir's). */
#define META_SHARD_DEL_UNNAMED 1
int meta_shard_step(const struct meta_req *rq, uint32_t mdt, uint8_t op, uint64_t txid,
                    uint64_t ino, uint64_t arg, struct proto_shard_rep *r);
/* Write x under a new txid (and allocate x->ino here if alloc_ino). */
int meta_intent_begin(const struct meta_req *rq, struct meta_intent *x, bool alloc_ino,
                      uint64_t *txid);
int meta_intent_decode(const void *buf, size_t len, struct meta_intent *x);
int meta_intent_encode(const struct meta_intent *x, uint8_t *buf, size_t cap);
/* Write x under txid inside a transaction. */
int meta_intent_record(struct meta_txn *t, uint64_t txid, const struct meta_intent *x);
int meta_intent_end(const struct meta_req *rq, uint64_t txid);
/* Write x again under txid (it learnt more), in a transaction of its own. */
int meta_intent_rewrite(const struct meta_req *rq, uint64_t txid, struct meta_intent *x);
/* Inside a transaction: write x under txid as of phase; x itself keeps its
 * phase until the caller knows the transaction committed. */
int meta_intent_advance(struct meta_txn *t, uint64_t txid, struct meta_intent *x, uint8_t phase);
/* Seal a directory against new names on every MDT holding a record of it
 * (each must hold none): x->mdt[first] is its inode's MDT, already in the
 * recorded intent; the others (from dstripe, or as the seal says) are
 * added to x and recorded before they are sealed. The directory is x->ino
 * for rmdir, else x->ino2 (the one a rename replaces); uid: its owner.
 * A record sealed by another operation is waited for (2 s at most, then
 * EBUSY). */
int meta_seal_records(const struct meta_req *rq, uint64_t txid, struct meta_intent *x,
                      uint16_t first, uint64_t dstripe, uint32_t *uid);
/* What a client sees when a peer MDT cannot be reached: EIO. */
int meta_peer_err(int rc);
const char *meta_intent_kind(uint8_t kind);
/* Mark txid worked on (recovery leaves it alone) or not. Marking fails
 * when someone works on txid already, or there is no memory for the mark:
 * then the caller must not touch the intent. */
bool meta_xbusy_add(struct meta_ctx *c, uint64_t txid);
void meta_xbusy_del(struct meta_ctx *c, uint64_t txid);
/* Run a name intent (xname.c) to its end; 0 when it is gone. */
int meta_xname_finish(const struct meta_req *rq, uint64_t txid, struct meta_intent *x, bool quiet);

/* Drop one link of in (ops.c): when the last goes, the inode goes, and
 * gone, its layout and size and whether objects may exist say so. */
int meta_drop_link(struct meta_txn *t, struct meta_inode *in, uint8_t *destroy,
                   struct layout *layout, uint8_t *gone, uint64_t *size);
/* A name held by a cross-MDT rename other than txid (xname.c): changes to
 * it wait (-EAGAIN, which the operation retries). */
bool meta_name_held(struct meta_ctx *c, uint64_t dir, const char *name, uint64_t txid);
/* Load the holds a previous run of this MDT left (at start). */
int meta_holds_load(struct meta_ctx *c);
/* Load the rename lock a previous run of MDT 0 left (at start). */
int meta_rlock_load(struct meta_ctx *c);

/* rename whose names or inodes span MDTs: the source name is here. */
struct meta_xmv {
    uint64_t sdir, ddir, sino;
    bool lock; /* a directory to another parent: the rename lock first */
    char sname[PROTO_MAX_NAME + 1], dname[PROTO_MAX_NAME + 1];
    uint8_t stype;
    uint32_t dmdt, flags;
};
int meta_xrename(const struct meta_req *rq, const struct proto_cred *cred, struct meta_xmv *m,
                 struct proto_rename_rep *out);
/* unlink of a name here whose inode is on another MDT. */
int meta_xunlink(const struct meta_req *rq, const struct proto_cred *cred, uint64_t dir,
                 const char *name, uint64_t ino, struct proto_unlink_rep *out);
/* link of another MDT's inode to a name here. */
int meta_xlink(const struct meta_req *rq, const struct proto_cred *cred, uint64_t ino, uint64_t dir,
               const char *name, struct proto_link_rep *out);

/* mkdir of a directory whose inode is on another MDT (owner) or whose
 * entries are striped (rec.dstripe). rec: the new inode, ino still 0. */
struct meta_xmk {
    uint64_t dir;
    char name[PROTO_MAX_NAME + 1];
    uint32_t owner;
    struct meta_inode rec;
};
int meta_xmkdir(const struct meta_req *rq, const struct proto_cred *cred, struct meta_xmk *x,
                struct proto_attr *out);

/* rmdir of a directory whose records live on other MDTs: its inode there,
 * or shards (dstripe, when its inode is here). */
struct meta_xrm {
    uint64_t dir;
    char name[PROTO_MAX_NAME + 1];
    uint64_t ino;
    uint64_t dstripe;
    bool ask_owner; /* the sticky bit: may remove only if it owns the (remote) victim */
};
int meta_xrmdir(const struct meta_req *rq, const struct proto_cred *cred, struct meta_xrm *x);

/* A transaction changed in, the inode of a striped directory: note that
 * its shards need the new attributes (the operation then calls
 * meta_xmdt_recover when c->xpending says so). */
int meta_xsync_note(struct meta_ctx *c, struct meta_txn *t, const struct meta_inode *in);

#endif
