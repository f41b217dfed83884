/* Kept replies of one MDT's store (reply.c). */
#ifndef STRIA_META_REPLY_H
#define STRIA_META_REPLY_H

#include "records.h"

/*
 * Reply records: exactly-once changes across a restart (docs/protocol.md,
 * "Resending"). A client tags each change it sends with a slot number
 * (tag) that it uses for no other change until this one is answered. The
 * reply to a change is kept under (client, tag), in the same transaction
 * as the change itself, so a change and its record are both on disk or
 * neither is. A change sent again after the MDT restarted finds its
 * record (the same seq) and is answered from it instead of being made
 * again.
 *
 * The dispatcher arms one meta_reply per request (meta_req.reply); the
 * store records it when a write of the request succeeds. An operation that goes on across MDTs (a
 * txn fn returning a positive value, META_CROSS) is recorded only where its coordinator commits it:
 * that txn calls meta_reply_here. Only successes are kept: a failure changed nothing, and running
 * it again is harmless.
 */
struct meta_reply {
    uint64_t client, seq;
    uint16_t tag, op;
    /* Encodes the reply as it stands (its leases are not kept: a resent
     * change's reply carries none). */
    int (*encode)(struct proto_enc *e, const void *rep);
    const void *rep;
    bool cross;    /* the operation went on across MDTs */
    bool recorded; /* put in a transaction (which may yet fail) */
};
/* In the transaction that commits a cross-MDT operation: keep its reply. */
int meta_reply_here(struct meta_txn *t);
/* reply.c: the transaction behind meta_reply_get. */
struct meta_reply_get_arg {
    uint64_t client, seq;
    uint16_t tag;
    int *status;
    void *payload;
    uint32_t cap, *len;
};
int meta_reply_get_txn(struct meta_txn *t, void *arg);

#endif
