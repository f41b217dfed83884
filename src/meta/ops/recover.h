/*
 * Recovery of cross-MDT operations: every intent no live request works on
 * is run to its end, the directory kinds by intent.h, the name kinds by
 * xname.h. Run on every tick, and after a change to a striped directory.
 */
#ifndef STRIA_META_OPS_RECOVER_H
#define STRIA_META_OPS_RECOVER_H

#include "core.h"

/* Finish or roll back every cross-MDT operation this MDT began and did not
 * end (after a restart, or when a peer was away). Returns how many remain
 * open, or a negative errno. */
int meta_xmdt_recover(struct meta_ctx *c);
/* After a change that may have noted an attribute copy (meta_xsync_note
 * gave txid, 0 when it noted none): run it before the reply when the
 * change committed (rc 0), and unmark it either way. Returns rc. */
int meta_xsync_after(struct meta_ctx *c, int rc, uint64_t txid);

#endif
