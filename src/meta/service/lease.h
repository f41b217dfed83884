/*
 * Metadata leases of one MDT (docs/architecture.md, "Metadata leases").
 *
 * A client holding a lease on an inode may answer lookups and getattrs
 * from its cache. Before a change to an inode is acknowledged, every other
 * client holding a lease on it is told to drop it (over its LEASE_POLL
 * channel) and the change's reply waits for that client's acknowledgement,
 * for the client's channel to close, or for the lease to run out, whichever
 * comes first. The client that made the change keeps its lease and updates
 * its cache from the reply.
 *
 * Nothing here is persistent: leases die with the process, and clients,
 * whose revocation channel then breaks, drop everything they cached.
 *
 * Grants race with changes: a reply may carry state read before a change
 * that finished before the grant. lease_read_begin() numbers the changes
 * finished so far; lease_grant() refuses an inode changed since.
 */
#ifndef STRIA_META_LEASE_H
#define STRIA_META_LEASE_H

#include "../../proto/proto.h"
#include "../store/store.h"

#include <stdbool.h>
#include <stdint.h>

struct lease_tab;

/* term_ms 0 disables leases (every grant says ms 0). */
int lease_tab_create(uint32_t term_ms, struct lease_tab **out);
/* Wake every poller (they return at once) before the server stops. */
void lease_tab_stop(struct lease_tab *t);
void lease_tab_destroy(struct lease_tab *t);
uint64_t lease_instance(const struct lease_tab *t);

/* Before reading state a reply will grant leases on. */
uint64_t lease_read_begin(struct lease_tab *t);
/* Grant client leases on inos (n <= PROTO_MAX_LEASES) read after mark;
 * fills out (ms 0 where refused). */
void lease_grant(struct lease_tab *t, uint64_t mark, uint64_t client, const uint64_t *inos,
                 uint32_t n, struct proto_leases *out);
/* After a change by client committed (or failed: ok false) touching
 * inodes: move their generations on, revoke other clients' leases and wait
 * for that, and fill out with the before/after generations and the
 * changer's renewed leases (none on an inode a change that wrote after
 * this one numbered first: see meta_touched's wseq). */
void lease_changed(struct lease_tab *t, uint64_t client, const struct meta_touched *touched,
                   bool ok, struct proto_leases *out);

/* The write-behind grant (docs/architecture.md, "Write-behind unlink").
 * One client at a time may hold it; while it does, it may acknowledge
 * unlinks to its applications before it sends them. That is safe because
 * every request but LEASE_POLL passes lease_enter() first, and a request
 * from any other client revokes the grant there (a revocation of inode 0
 * whose generation is the grant's number) and waits until the holder has
 * sent what it queued and acknowledged, its channel closed, or the grant
 * ran out. lease_leave() ends what lease_enter() began. A grant that ran
 * out stays its holder's until another client enters (which drops it
 * without a revocation) or the holder's channel closes: its holder's next
 * request renews it under the same number, which tells the holder that no
 * other client's request ran here since it was first given (the client's
 * cache relies on that: mdcache.h's mdc_exclusive). A new grant always
 * has a new number. */
/* lease_enter returns the request's number among those that passed the
 * gate, or 0 when others were running as it passed (for
 * lease_wb_grant_since). */
uint64_t lease_enter(struct lease_tab *t, uint64_t client);
void lease_leave(struct lease_tab *t);
/* Asked by a request of client between enter and leave: the grant's term in
 * ms and *id its number, or 0 when refused. It is given only to a request
 * running alone, and renewed for its holder until revoked. */
uint32_t lease_wb_grant(struct lease_tab *t, uint64_t client, uint64_t *id);
/* lease_wb_grant for the request lease_enter numbered entered: a new grant
 * only if that request ran alone from its entry on (entered is not 0, and
 * no request passed the gate after it), so that no other saw what it did
 * before the grant; a renewal as lease_wb_grant. */
uint32_t lease_wb_grant_since(struct lease_tab *t, uint64_t client, uint64_t entered, uint64_t *id);

/* A poll with nothing to say parks (lease_poll) rather than wait in a
 * thread; wake(ctx, park) is then called, under the table's lock, when
 * there is: a revocation for its client, its channel closing or replaced,
 * the table stopping. Until this is set, no poll parks. */
void lease_set_wake(struct lease_tab *t, void (*wake)(void *ctx, uint64_t park), void *ctx);
/* LEASE_POLL from client's channel conn (which lease_conn_closed names):
 * record acked. With nothing to say (no revocation queued, the channel not
 * new), park not 0 and again false, keep park and return LEASE_PARKED.
 * Otherwise encode the queued revocations into buf (cap bytes: n entries
 * of 16, then their n kind bytes, proto.h's LEASE_POLL)
 * and return their count, *first the number of the first. again: the
 * poll is served again after it parked, and answers now; if its channel
 * was replaced or closed meanwhile it answers nothing. */
#define LEASE_PARKED (-1)
int lease_poll(struct lease_tab *t, uint64_t client, void *conn, uint64_t acked, bool bye,
               uint64_t park, bool again, uint8_t *buf, uint32_t cap, uint64_t *first);
/* A connection closed: if it was a client's channel, its leases end. */
void lease_conn_closed(struct lease_tab *t, void *conn);
/* Drop expired leases and unused records, a slice of the table at a time
 * (the lock is let go between slices). */
void lease_sweep(struct lease_tab *t);
/* How many inodes have a record (leased, or not yet swept). */
uint32_t lease_records(struct lease_tab *t);

#endif
