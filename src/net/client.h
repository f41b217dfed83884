/*
 * The client side of the transport (DESIGN §7): net_connect() opens an
 * authenticated connection; requests on one connection are answered in
 * order. A connection is used by one thread at a time (libstria pools
 * them). Bulk data of a reply is read straight into the caller's buffer.
 *
 * Included through net.h, the transport's whole API.
 */
#ifndef STRIA_NET_CLIENT_H
#define STRIA_NET_CLIENT_H

#include "../common/auth.h"
#include "../proto/proto.h"

#include <stdbool.h>
#include <stdint.h>

struct net_conn {
    int fd;
    uint64_t client_id;
    uint64_t next_reqid;
    uint16_t version;
    uint8_t *rx;     /* reply payload buffer, PROTO_MAX_REP_PAYLOAD bytes */
    uint32_t rx_len; /* payload length of the last reply */
    char peer[280];  /* "host:port" for messages */
    uint64_t seq;    /* the next request's sequence number, 0: a new one */
    /* The next request's slot as a change (PROTO_HDR_TAG, 0: none) and
     * whether it is sent again; both are cleared by the send. */
    uint16_t tag;
    bool resend;
    int timeout_ms; /* net_set_timeout's */
};

/* A new sequence number, unique in this process (a request keeps its own
 * when it is sent again: net_conn.seq). */
uint64_t net_next_seq(void);

/* Connect and authenticate. timeout_ms bounds connect and handshake.
 * Returns 0 and *out (free with net_close), -EACCES if the server refused
 * the key, or a negative errno. */
int net_connect(const char *host, uint16_t port, const struct auth_key *key, uint64_t client_id,
                const char *name, int timeout_ms, struct net_conn **out);
void net_close(struct net_conn *c);
/* While the calling thread's flag is set (not NULL), its waits for a
 * reply (handshakes included) end with -EINTR, a transport failure, within
 * 100 ms of *flag becoming non-zero: an interrupted caller. Returns the
 * flag it replaces. */
const volatile int *net_set_cancel(const volatile int *flag);
/* Whether the calling thread's flag is set and non-zero. */
bool net_cancelled(void);
/* A send or receive on c that makes no progress for ms (0: forever) fails
 * with -EAGAIN, a transport failure. */
int net_set_timeout(struct net_conn *c, int ms);

/* Send one request. Returns 0 or negative errno (the connection is then
 * unusable). *reqid receives the id to match in net_recv. */
int net_send(struct net_conn *c, uint16_t op, const void *payload, uint32_t plen, const void *bulk,
             uint32_t blen, uint64_t *reqid);
/* Receive the reply to reqid: its payload lands in c->rx, its bulk (up to
 * bulk_cap bytes) in bulk_dst. Returns the reply status (0 or the server's
 * negative errno), or a negative errno for a transport failure, in which
 * case *transport is set true and the connection must be closed. */
int net_recv(struct net_conn *c, uint64_t reqid, void *bulk_dst, uint32_t bulk_cap,
             uint32_t *bulk_len, bool *transport);

/* Send a request and wait for its reply (see net_recv). */
int net_call_raw(struct net_conn *c, uint16_t op, const void *payload, uint32_t plen,
                 const void *bulk, uint32_t blen, void *bulk_dst, uint32_t bulk_cap,
                 uint32_t *bulk_len, bool *transport);

/* Typed calls, one per message: encode req, call, decode the reply into
 * rep (strings in rep point into c->rx until the next call on c). */
#define NET_X_CALL(NAME, num, lname)                                                               \
    int net_call_##lname(struct net_conn *c, const struct proto_##lname##_req *req,                \
                         struct proto_##lname##_rep *rep, const void *bulk, uint32_t blen,         \
                         void *bulk_dst, uint32_t bulk_cap, uint32_t *bulk_len, bool *transport);
PROTO_MESSAGES(NET_X_CALL)
#undef NET_X_CALL

/* Open a TCP connection (no handshake) within timeout_ms: a blocking
 * socket with TCP_NODELAY, or a negative errno. The caller closes it.
 * Shared with tests that speak to a server byte by byte. */
int net_tcp_connect(const char *host, uint16_t port, int timeout_ms);

#endif
