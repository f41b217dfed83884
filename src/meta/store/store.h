/*
 * The metadata store of one MDT: an LMDB environment holding inodes,
 * directory entries, xattrs and symlink targets (DESIGN §4), the intents
 * of cross-MDT operations and the replies kept for resent changes.
 *
 * Writes go through meta_store_write(), which batches the writes of many
 * concurrent requests into one LMDB transaction (group commit): the first
 * waiting thread becomes the leader, runs the queued requests in the
 * batch's transaction (flat ones together, any other alone: see
 * meta_store_write_flat), and commits the batch once. A leader whose last
 * batch held more than one write first yields the CPU once, so that
 * threads about to queue theirs join this commit. The environment is
 * opened MDB_NOSYNC: a commit reaches the kernel, so it survives the
 * daemon's death at any moment; meta_store_sync() (and a periodic
 * flusher) make it survive power loss.
 */
#ifndef STRIA_META_STORE_H
#define STRIA_META_STORE_H

#include "records.h"
#include "reply.h"

#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int meta_store_open(const char *dir, uint32_t mdt_index, uint64_t map_size,
                    struct meta_store **out);
void meta_store_close(struct meta_store *s);
uint32_t meta_store_mdt(const struct meta_store *s);
/* Who serves the store (the operations' context), for code that has only
 * a transaction in hand. */
void meta_store_set_owner(struct meta_store *s, void *owner);
void *meta_store_owner(const struct meta_store *s);

typedef int (*meta_txn_fn)(struct meta_txn *t, void *arg);
/* Run fn in the next group-committed write transaction for request rq
 * (NULL: none); returns fn's result once the batch is committed (or the
 * commit's error). The inodes fn changes are noted in rq->touched, and
 * rq->reply is kept with the change (see "Reply records"). */
int meta_store_write(struct meta_store *s, const struct meta_req *rq, meta_txn_fn fn, void *arg);
/* The same for a fn that fails only before its first write, or with the
 * store's own error: it then runs in the batch's transaction itself rather
 * than in a nested one, which costs as much as a create. Should such a fn
 * fail after writing, its batch is lost: the others in it get EIO, and
 * the log says which fn broke the rule. */
int meta_store_write_flat(struct meta_store *s, const struct meta_req *rq, meta_txn_fn fn,
                          void *arg);
/* n writes of meta_store_write_flat's kind, queued together so that they
 * share one batch and its commit (up to the batch's limit) rather than
 * each waiting for the commit of the one before: fn(args[i]) for rqs[i],
 * its result in rcs[i]. Returns 0, or -EINVAL (n is 0 or over 512) or
 * -ENOMEM with nothing run. */
int meta_store_write_flat_n(struct meta_store *s, uint32_t n, const struct meta_req *const *rqs,
                            meta_txn_fn fn, void *const *args, int *rcs);
/* Writes (meta_store_write, _flat) the calling thread made that
 * succeeded, in any store: what a thread changed itself, whatever other
 * threads commit meanwhile. */
uint64_t meta_store_thread_writes(void);
/* Transactions committed with a change in them since the store opened. */
uint64_t meta_store_commits(struct meta_store *s);
/* How many writes wait for a batch (tests use it to shape batches). */
int meta_store_queued(struct meta_store *s);
/* Run fn in a read-only snapshot for request rq (NULL: none). */
int meta_store_read(struct meta_store *s, const struct meta_req *rq, meta_txn_fn fn, void *arg);
/* Make every committed write durable (fsync of the environment). */
int meta_store_sync(struct meta_store *s);
/* Flush if anything was committed since the last flush. */
int meta_store_flush_if_dirty(struct meta_store *s);

/* Entries, used inodes and capacity figures for STATFS. */
int meta_store_stats(struct meta_store *s, struct proto_tstat *out);

/* The reply kept for (client, tag) if it answers seq: 1 with its status and
 * payload (up to cap bytes, *len), 0 if no record answers seq (the change
 * was not made), -EIO if the record is newer than seq (the client reused
 * the tag too early), or another negative errno. */
int meta_reply_get(struct meta_store *s, uint64_t client, uint16_t tag, uint64_t seq, int *status,
                   void *payload, uint32_t cap, uint32_t *len);
/* Drop the records written before before_ns (CLOCK_REALTIME): clients that
 * went away. Returns how many went, or a negative errno. */
int meta_reply_prune(struct meta_store *s, int64_t before_ns);

#endif
