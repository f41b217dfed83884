/*
 * Fences and write stamps of the objects of one stria-stord: its part in
 * an online migration (proto.h's FENCE and MIGRATE; docs/architecture.md,
 * "Migration").
 *
 * A migration copies a file's objects while writers may go on, then
 * fences the old objects (writes, truncates and punches answer -ESTALE)
 * and compares their write stamps with those it took before the copy:
 * unchanged, the copy is whole and the layout may be swapped; changed,
 * the copy is thrown away. After the swap the fence turns dead (reads
 * answer -ESTALE too) and outlives the object, so a handle still holding
 * the old layout asks for the new one instead of reading holes or
 * recreating the object. It lasts as long as the file: FORGET, when the
 * file is gone, drops every fence of it (fence.c says why not sooner).
 *
 * A write stamp is a counter per hash of the object (64 Ki of them),
 * moved on after each change finished; a change of another object of the
 * same hash moves it too, which costs a migration a retry, never a wrong
 * answer. The counters live in memory: a restart changes the daemon's
 * instance, and with it every stamp.
 *
 * Each change passes fence_begin() (which holds the object's fence slot
 * shared, so that a fence set waits for the changes in progress) and
 * fence_end(). Fences are kept as files under each OST's fence/.
 */
#ifndef STRIA_STORAGE_FENCE_H
#define STRIA_STORAGE_FENCE_H

#include "store.h"

#include "../net/net.h"

#include <stdbool.h>
#include <stdint.h>

/* Load the fences of s's OSTs (after they are open). Returns 0 or a
 * negative errno (logged). */
int fence_init(struct stord *s);
void fence_fini(struct stord *s);

struct fence_pass {
    pthread_rwlock_t *slot;
    uint32_t hash;
};

/* Before a change of object (ost, ino, comp, stripe) (write: a write,
 * truncate or punch; else a read): -ESTALE if its fence forbids it, else
 * 0 with the slot held until fence_end (changed: the change was made). */
int fence_begin(struct stord *s, uint32_t ost, uint64_t ino, uint32_t comp, uint32_t stripe,
                bool write, struct fence_pass *p);
void fence_end(struct stord *s, struct fence_pass *p, bool changed);

/* One FENCE request q (proto.h) on s: 0 with its reply in r, or a
 * negative errno (logged, but for STAMP's). */
int fence_apply(struct stord *s, const struct proto_fence_req *q, struct proto_fence_rep *r);
/* LISTOBJ's fences: every fence OST o keeps of inodes of fan-out
 * directory fan, as {U64 ino, U32 comp, U32 stripe} into e, for stria
 * fsck; *more when not all fitted. */
void fence_list(struct stord *s, const struct ost *o, uint32_t fan, struct proto_enc *e,
                bool *more);
/* The FENCE message's handler: fence_apply over the wire. */
int fence_h_fence(void *ctx, struct net_req *req, struct net_rep *rep);

#endif
