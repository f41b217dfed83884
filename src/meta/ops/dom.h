/*
 * Data-on-MDT (docs/architecture.md, "Data-on-MDT"): the bytes of a
 * file's first component of type mdt, kept in this MDT's store
 * (store/dom_rec.h). Each operation takes the request context, the
 * decoded request and the reply to fill, and returns 0 or a negative
 * errno; proto.h's comments on the messages are their contract.
 */
#ifndef STRIA_META_OPS_DOM_H
#define STRIA_META_OPS_DOM_H

#include "core.h"

/* A DOM_READ's reply bulk and CRCs live in rq->buf (META_DOM_BUF bytes):
 * at most META_DOM_READ_MAX bytes a request. */
#define META_DOM_READ_MAX (1u << 20)
#define META_DOM_BUF      (META_DOM_READ_MAX + (META_DOM_READ_MAX / (32u << 10) + 2) * 4)
/* The bytes a reply takes with it (OPEN's and LOOKUP's dom_len): regular
 * file in's first bytes of its Data-on-MDT component below its size, at
 * most want of them (and PROTO_OPEN_DOM_MAX), read in transaction t into
 * scratch asked of rq, with room for their CRCs after them: their count
 * (0: none; so too when there is no scratch or a record fails its
 * checksum: the reply stands, and the client's read asks DOM_READ, which
 * says why), the bytes in *buf. */
uint32_t meta_dom_take(struct meta_txn *t, const struct meta_req *rq, const struct meta_inode *in,
                       uint32_t want, uint8_t **buf);
/* After the transaction, the n bytes at buf that meta_dom_take read
 * become rq's reply bulk, and *crcs their CRCs (one per chunk from offset
 * 0, as DOM_READ's). Only then: a reply the store keeps for a resend must
 * not describe bytes it never holds. */
void meta_dom_send(const struct meta_req *rq, uint8_t *buf, uint32_t n, struct proto_blob *crcs);
int meta_op_dom_write(const struct meta_req *rq, const void *q, void *r);
int meta_op_dom_read(const struct meta_req *rq, const void *q, void *r);
/* The files a DOM_WRITES makes (its creates): items[i] the one item i
 * makes (NULL: item i is a write), in ranges handed to client. */
struct meta_dom_mk {
    uint64_t client;
    const struct proto_dom_create *items[PROTO_MAX_DOM_WRITES];
    struct proto_open_rep *reps; /* reps[i]: what item i's create made, as an OPEN says it */
};
/* n DOM_WRITEs (DOM_WRITES), each with its own request context (its bulk,
 * its leases), made in one transaction, and the files mk (NULL: none)
 * makes, each before the items after it: each one's result in rcs[i] (a
 * write of a file whose create failed fails as it did); returns an error
 * only when none could be made (the store failed). */
int meta_op_dom_write_n(uint32_t n, const struct meta_req *const *rqs,
                        const struct proto_dom_write_req *qs, const struct meta_dom_mk *mk,
                        struct proto_dom_write_rep *rs, int *rcs);

#endif
