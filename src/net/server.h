/*
 * The server side of the transport (DESIGN §7): net_server_start()
 * accepts connections into an event loop, which authenticates them and
 * reads their requests; a pool of workers validates each whole request,
 * calls the handler for its opcode and writes the reply. Anything malformed gets an error reply, or
 * the connection is closed when the byte stream cannot be trusted any more; the server carries on
 * with everyone else.
 *
 * Included through net.h, the transport's whole API.
 */
#ifndef STRIA_NET_SERVER_H
#define STRIA_NET_SERVER_H

#include "../common/auth.h"
#include "../proto/proto.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- server ---- */

struct net_req {
    struct proto_hdr hdr;
    struct proto_dec dec; /* over the request payload */
    const uint8_t *bulk;
    uint32_t bulk_len;
    const char *peer; /* "ip:port" */
    void *conn;       /* the server connection: the same for its requests */
    void *worker;     /* the worker serving it, for net_scratch */
    /* Time the request spent waiting rather than being served: whatever
     * queues it for its turn adds to it (the MDT's group commit, the
     * server before the handler). STATS counts it apart from service. */
    uint64_t wait_ns;
    /* Why a parked request is served again (net_park): 0 the first time,
     * NET_WOKEN after net_wake, NET_EXPIRED once its time ran out. */
    uint8_t woken;
    /* What the service's on_enter noted of the request (the MDT: the
     * number its write-behind gate gave it, lease_enter). */
    uint64_t entered;
    bool gated; /* whether on_enter passed it through a gate on_leave leaves */
};
enum { NET_WOKEN = 1, NET_EXPIRED = 2 };
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
    /* The payload the reply cache keeps for a resend, when it is not the
     * one sent (NULL: that one): a resend gets no bulk, so a reply that
     * describes its bulk is kept without saying so. */
    const void *kept;
    uint32_t kept_len;
};

/* Handler: decode req->dec, do the work, encode into rep->enc. Returns 0 or
 * a negative errno sent as the reply status (the payload is then dropped),
 * or NET_PARKED (below). */
typedef int (*net_handler_fn)(void *ctx, struct net_req *req, struct net_rep *rep);

/* Answering later, without holding a worker: a long poll. A handler with
 * nothing to answer yet takes an id for its request from net_park, hands
 * the id to whatever will have the answer and returns NET_PARKED. Its
 * connection then waits with no worker and no pooled buffer until
 * net_wake(id) or until ms have passed, and the handler is called again
 * for the same request (net_req.woken says why), in its turn with the
 * others. A handler that took an id and answers at once instead, or a
 * connection that closes, makes the id stale: net_wake of a stale id does
 * nothing. net_park returns 0 (the handler must answer now) for a request
 * the reply cache keeps. */
#define NET_PARKED 1
uint64_t net_park(struct net_req *req, int ms);
struct net_server;
/* Serve parked request id again; any thread, any time before
 * net_server_stop returns. */
void net_wake(struct net_server *s, uint64_t id);

struct net_server_opts {
    const char *host;
    uint16_t port;
    const struct auth_key *key;
    int max_conns;
    /* A connection that has not authenticated this long after it was
     * accepted is closed (0: 5000). */
    int handshake_ms;
    /* A request not whole this long after its first byte, or a reply not
     * taken by the peer this long, closes its connection (0: 60000). */
    int request_ms;
    /* Most workers serving requests at once; more requests wait in a
     * queue fair between clients (0: 64). A revocation channel's long
     * poll and a request held at on_enter's gate are not counted. */
    int max_workers;
    net_handler_fn handlers[PROTO_OP_MAX];
    void *ctx;
    /* Called (if set) when a connection ends, with net_req.conn's value. */
    void (*on_close)(void *ctx, void *conn);
    /* Called (if set) around every handler, before and after it runs. */
    void (*on_enter)(void *ctx, struct net_req *req);
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
/* What a server's requests cost since it started: STATS's figures. Service
 * is a handler's time less its wait (net_req.wait_ns). */
struct net_op_figures {
    uint64_t count, errors;
    uint64_t service_ns, service_max_ns, wait_ns, wait_max_ns;
    /* As STATS: [i] counts requests of [2^(i-1), 2^i) us. */
    uint64_t service_hist[PROTO_STAT_BUCKETS], wait_hist[PROTO_STAT_BUCKETS];
};
struct net_client_figures {
    uint64_t client_id; /* as it authenticated */
    uint64_t requests, service_ns, wait_ns;
    char ip[PROTO_CLIENT_IP]; /* of its last connection */
};
struct net_server_figures {
    uint64_t uptime_ns;
    int connections; /* open now, authenticated or not */
    int queued;      /* whole requests waiting for a worker */
    int parked;      /* requests parked by their handler (net_park) */
    int workers;     /* worker threads, busy or not */
    struct net_op_figures ops[PROTO_OP_MAX];
    /* The busiest clients, most requests first. A revocation channel's long
     * polls are not counted: they wait for events by design. */
    struct net_client_figures clients[PROTO_STAT_CLIENTS];
    uint32_t nclients;
};
/* Fill *out with s's figures now, the busiest clients only if clients
 * (they take a sort of every client's counts). Returns 0, or -ENOMEM
 * (then the clients are missing: nclients 0). */
int net_server_figures(struct net_server *s, struct net_server_figures *out, bool clients);
/* The most a handler may ask of net_scratch: a bulk and what goes with it
 * (an OST's read keeps the blocks around the range and their CRCs). */
#define NET_SCRATCH_MAX (PROTO_MAX_BULK + (1u << 20))
/* A buffer of at least len bytes (len <= NET_SCRATCH_MAX) owned by the
 * connection, valid until the handler's reply is sent; NULL if no memory. */
void *net_scratch(struct net_req *req, uint32_t len);

/* The slots of a message's items (PROTO_F_ITEMS: each item a change with
 * a slot of its own, docs/protocol.md "Resending"). A handler claims an
 * item's slot in the server's reply cache before it makes the item, as
 * the server does for a request's own slot, so that the item sent again
 * alone meanwhile waits for it instead of being made anew.
 * net_item_begin: NET_ITEM_NEW, make the item, then net_item_end (its
 * reply kept) or net_item_forget (no reply to keep here); or
 * NET_ITEM_DONE, it was made: its status and encoded reply (up to cap
 * bytes, *len of them) are copied out. It may wait for a copy being
 * served: a handler claims its items' slots in increasing seq order, and
 * never the same one twice, so that two requests cannot wait on each
 * other. On a server that keeps no replies: NET_ITEM_NEW, and the rest
 * do nothing. */
enum { NET_ITEM_NEW, NET_ITEM_DONE };
int net_item_begin(struct net_req *req, uint64_t seq, int *status, void *payload, uint32_t cap,
                   uint32_t *len);
void net_item_end(struct net_req *req, uint64_t seq, int status, const void *payload, uint32_t len);
void net_item_forget(struct net_req *req, uint64_t seq);

#endif
