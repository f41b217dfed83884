/*
 * Connections and RPC over TCP (DESIGN §7).
 *
 * Client side: net_connect() opens an authenticated connection; requests
 * on one connection are answered in order. A connection is used by one
 * thread at a time (libstria pools them). Bulk data of a reply is read
 * straight into the caller's buffer.
 *
 * Server side: net_server_start() accepts connections and runs each on its
 * own thread: authenticate, then read a request, validate it, call the
 * handler for its opcode and write the reply. Anything malformed gets an
 * error reply, or the connection is closed when the byte stream cannot be
 * trusted any more; the server carries on with everyone else.
 */
#ifndef STRIA_NET_H
#define STRIA_NET_H

#include "../common/auth.h"
#include "../proto/proto.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- client ---- */

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

/* ---- server ---- */

struct net_req {
    struct proto_hdr hdr;
    struct proto_dec dec; /* over the request payload */
    const uint8_t *bulk;
    uint32_t bulk_len;
    const char *peer; /* "ip:port" */
    void *conn;       /* the server connection, for net_scratch */
};
struct net_rep {
    struct proto_enc enc; /* reply payload */
    const void *bulk;     /* reply bulk, e.g. from net_scratch */
    uint32_t bulk_len;
    /* Or, with bulk_in_file, the bulk is bulk_len bytes of file bulk_fd from
     * bulk_off, sent from the page cache (sendfile) after the handler
     * returns; the server closes bulk_fd in any case. Bytes the file no
     * longer has by then go as zeros. */
    bool bulk_in_file;
    int bulk_fd;
    uint64_t bulk_off;
};

/* Handler: decode req->dec, do the work, encode into rep->enc. Returns 0 or
 * a negative errno sent as the reply status (the payload is then dropped). */
typedef int (*net_handler_fn)(void *ctx, struct net_req *req, struct net_rep *rep);

struct net_server_opts {
    const char *host;
    uint16_t port;
    const struct auth_key *key;
    int max_conns;
    /* A connection that has not authenticated this long after it was
     * accepted is closed (0: 5000). */
    int handshake_ms;
    net_handler_fn handlers[PROTO_OP_MAX];
    void *ctx;
    /* Called (if set) when a connection ends, with net_req.conn's value. */
    void (*on_close)(void *ctx, void *conn);
    /* Called (if set) around every handler, before and after it runs. */
    void (*on_enter)(void *ctx, const struct net_req *req);
    void (*on_leave)(void *ctx, const struct net_req *req);
    /* Requests whose replies the reply cache keeps (rcache.h) when they
     * come with a slot (PROTO_HDR_TAG): a change sent again with the same
     * sequence number is answered from it. */
    bool cached[PROTO_OP_MAX];
    /* Where a change sent again (PROTO_FLAG_RESEND) that the reply cache
     * does not know is looked for next (the server may have restarted
     * since): 1 with its kept status and payload (up to cap bytes, *len),
     * 0 if it was never served, or a negative errno to answer with. */
    int (*replay)(void *ctx, const struct proto_hdr *h, int *status, void *payload, uint32_t cap,
                  uint32_t *len);
};

struct net_server;
/* Bind, listen and start accepting. Returns 0 and *out, or negative errno. */
int net_server_start(const struct net_server_opts *o, struct net_server **out);
/* The port actually bound (useful with port 0). */
uint16_t net_server_port(const struct net_server *s);
/* Stop accepting, close every connection, join all threads, free. */
void net_server_stop(struct net_server *s);
/* The most a handler may ask of net_scratch: a bulk and what goes with it
 * (an OST's read keeps the blocks around the range and their CRCs). */
#define NET_SCRATCH_MAX (PROTO_MAX_BULK + (1u << 20))
/* A buffer of at least len bytes (len <= NET_SCRATCH_MAX) owned by the
 * connection, valid until the handler's reply is sent; NULL if no memory. */
void *net_scratch(struct net_req *req, uint32_t len);

/* Socket helpers shared with tests. */
int net_tcp_connect(const char *host, uint16_t port, int timeout_ms);

#endif
