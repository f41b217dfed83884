/*
 * The server's reply cache (docs/protocol.md, "Resending"): the replies to
 * changes, by (client, sequence number), so that a change a client sends
 * again after its connection broke is answered from here instead of being
 * made twice. A copy that arrives while the first is still being served
 * waits for it.
 *
 * It lives in the server's memory. An MDT also keeps each change's reply
 * on disk, in the change's own transaction (meta/store.h, "Reply
 * records"), which answers a resend after a restart; this cache answers
 * resends to the same process without a read.
 */
#ifndef STRIA_NET_RCACHE_H
#define STRIA_NET_RCACHE_H

#include <stdint.h>

struct rcache;

/* At most max_entries replies and max_bytes of their payloads; the oldest
 * served go first. */
int rcache_create(uint32_t max_entries, uint64_t max_bytes, struct rcache **out);
void rcache_destroy(struct rcache *c);

enum { RCACHE_NEW, RCACHE_DONE };
/* The request (client, seq) arrives. RCACHE_NEW: serve it, then call
 * rcache_end. RCACHE_DONE: it was served; its status and payload (up to
 * cap bytes, *len of them) are copied out. */
int rcache_begin(struct rcache *c, uint64_t client, uint64_t seq, int *status, void *payload,
                 uint32_t cap, uint32_t *len);
/* The request rcache_begin gave as new was served: keep its reply. */
void rcache_end(struct rcache *c, uint64_t client, uint64_t seq, int status, const void *payload,
                uint32_t len);
/* The request rcache_begin gave as new will keep no reply here (it was
 * made, but its reply could not be had): forget it, so that a copy
 * waiting for it, or sent later, is served as if it came first. */
void rcache_forget(struct rcache *c, uint64_t client, uint64_t seq);

#endif
