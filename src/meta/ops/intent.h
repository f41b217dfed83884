/*
 * The intent log of cross-MDT operations and the SHARD steps (DESIGN §4;
 * docs/architecture.md, "Cross-MDT operations"): an intent is written
 * before any step is sent, every step can be repeated without harm, and
 * the operation ends with one local transaction. Also the other side of
 * SHARD (meta_op_shard), seals, the rename lock, and the attribute copy of
 * striped directories. Above core; below the operations that use it.
 */
#ifndef STRIA_META_OPS_INTENT_H
#define STRIA_META_OPS_INTENT_H

#include "core.h"

/* The MDTs holding a record of a directory into x->mdt: its shards
 * (dstripe), else its owner. */
void meta_intent_members(uint64_t dstripe, uint32_t owner, struct meta_intent *x);
/* One SHARD step on MDT mdt, this one's own handler or a peer's, carrying
 * the inode record rec (NULL: none) and arg; r may be NULL. */
int meta_step_rec(const struct meta_req *rq, uint32_t mdt, uint8_t op, uint64_t txid, uint64_t ino,
                  const struct meta_inode *rec, uint64_t arg, struct proto_shard_rep *r);
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
/* The peer MDT that could not be reached (meta_peer_err says EIO) by the
 * last such step on this thread (a SHARD or XNAME step sent to another
 * MDT), or -1: recovery clears it before an intent and reads it after
 * (meta_ctx.xaway). */
extern __thread int32_t meta_peer_failed;
/* What a client sees when a peer MDT cannot be reached: EIO. */
int meta_peer_err(int rc);
const char *meta_intent_kind(uint8_t kind);
/* Mark txid worked on (recovery leaves it alone) or not. Marking fails
 * when someone works on txid already, or there is no memory for the mark:
 * then the caller must not touch the intent. */
bool meta_xbusy_add(struct meta_ctx *c, uint64_t txid);
void meta_xbusy_del(struct meta_ctx *c, uint64_t txid);
/* A transaction changed in, the inode of a striped directory: note that
 * its shards need the new attributes; times: XF_SYNC_ATIME and
 * XF_SYNC_MTIME when its atime or its mtime was set, which then goes onto
 * the shards too. The intent's number goes to *noted (0 before, and left
 * 0 when in is not a striped directory), marked worked on; the operation
 * passes it to meta_xsync_after whether its transaction committed or not.
 * The note is its transaction's last step: a store never runs a
 * transaction again once it wrote (meta_run_waiting only after -EAGAIN). */
int meta_xsync_note(struct meta_ctx *c, struct meta_txn *t, const struct meta_inode *in,
                    unsigned times, uint64_t *noted);
/* Run an intent of a directory operation (mkdir, rmdir, sync) to its end,
 * then remove it; 0 when it is gone. quiet (recovery's runs): a failure is
 * logged at debug, and a sync whose directory another copy holds is left
 * for the next try rather than waited for. */
int meta_intent_finish(const struct meta_req *rq, uint64_t txid, struct meta_intent *x, bool quiet);
/* Whether txid is marked worked on (meta_xbusy_add). */
bool meta_xbusy_has(struct meta_ctx *c, uint64_t txid);
/* Load the rename lock a previous run of MDT 0 left (at start). */
int meta_rlock_load(struct meta_ctx *c);
/* A step of another MDT's cross-MDT operation: SHARD. */
int meta_op_shard(const struct meta_req *rq, const void *q, void *r);

/* A new intent record about a name (name may be NULL), to be freed by the
 * caller: NULL without memory. */
struct meta_intent *meta_intent_new(uint8_t kind, uint8_t phase, uint64_t ino, uint64_t dir,
                                    const char *name);

#endif
