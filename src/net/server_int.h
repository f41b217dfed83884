/*
 * The server side of the transport, inside: what server.c (the event
 * loop), srv_work.c (the workers and their fair queue) and srv_stats.c
 * (the figures) share. Nothing outside src/net includes this file.
 *
 * A connection belongs to one thread at a time, and only its owner
 * touches its fd and its request: the loop while it is armed in epoll
 * (handshaking, idle or part-read), the queue once its request is whole,
 * then the worker that serves it, which hands it back by arming it again
 * as its very last step. The lists it is on are guarded as said beside
 * them.
 */
#ifndef STRIA_NET_SERVER_INT_H
#define STRIA_NET_SERVER_INT_H

#include "server.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SRV_CLIENTS_KEPT 1024 /* clients of closed connections remembered */

/* Where a request the handler parked stands: it took an id (TAKEN) while
 * the handler runs; net_wake came before the worker was done with it
 * (WOKEN); it waits with no worker (PARKED). */
enum srv_park { PARK_NONE, PARK_TAKEN, PARK_WOKEN, PARK_PARKED };
/* A parked request's payload up to this size is kept in its connection,
 * and its pooled buffer goes back. */
#define SRV_PARK_INLINE 32
#define SRV_PBUCKETS    1024

/* Which part of a message the loop is reading. */
enum srv_part { PART_HDR, PART_PAYLOAD, PART_BULK, PART_DRAIN };

struct srv_conn {
    struct net_server *srv;
    int fd;
    bool authed;
    uint8_t part; /* enum srv_part */
    char peer[64];
    char ip[PROTO_CLIENT_IP];
    uint64_t client_id; /* as authenticated */
    uint8_t nonce[AUTH_NONCE_LEN];
    /* The message being read, then served. */
    uint8_t hb[PROTO_HDR_LEN];
    struct proto_hdr h;
    uint32_t got;        /* bytes of the current part */
    int refuse;          /* answered with this instead of served (0: served) */
    uint8_t *payload;    /* pooled, at least h.payload_len */
    uint8_t *bulk;       /* pooled, at least h.bulk_len */
    int64_t deadline_ns; /* of the handshake or the part-read request */
    uint64_t ready_ns;   /* when the request was whole */
    /* What it served, for the busiest clients (relaxed atomics). */
    uint64_t requests, service_ns, wait_ns;
    struct srv_conn *next, *prev;   /* every connection (srv->lock) */
    struct srv_conn *tnext, *tprev; /* those with a deadline (the loop's) */
    bool timed;
    struct srv_conn *qnext; /* in its client's queue (srv->qlock) */
    /* Its request parked by the handler (srv_park.c; srv->lock). */
    uint64_t park_id; /* 0: none */
    uint8_t park;     /* enum srv_park */
    uint8_t woken;    /* net_req.woken of its next serving */
    bool took_id;     /* its handler called net_park (the worker's own) */
    int64_t park_until_ns;
    struct srv_conn *pnext, *pprev; /* parked: the server's list */
    struct srv_conn *phnext;        /* with an id: its hash bucket */
    uint8_t inl[SRV_PARK_INLINE];   /* a parked request's small payload */
};

/* What one kind of request cost (STATS), updated with relaxed atomics by
 * whichever worker served it. */
struct srv_op_stat {
    uint64_t count, errors, total_ns, max_ns;
    uint64_t hist[PROTO_STAT_BUCKETS];
    uint64_t wait_ns, wait_max_ns;
    uint64_t whist[PROTO_STAT_BUCKETS];
};

/* A client with requests waiting: its connections in arrival order. */
struct srv_qclient {
    uint64_t id;
    struct srv_conn *head, *tail;
    struct srv_qclient *hnext; /* in its hash bucket */
    struct srv_qclient *rnext; /* in the round */
};

#define SRV_QBUCKETS     1024
#define SRV_POOL_CLASSES 13 /* 4 KiB << 0..12: up to 16 MiB, PROTO_MAX_BULK */

struct srv_pool_class {
    void **free;
    uint32_t n, cap;
};

struct net_server {
    struct net_server_opts o;
    int lfd, ep, wake_fd;
    uint16_t port;
    pthread_t loop_thread;
    uint64_t server_id;
    uint64_t started_ns;
    uint8_t *drain; /* where the loop drops a refused request's bulk */

    pthread_mutex_t lock; /* the connections and the clients gone */
    pthread_cond_t drained;
    struct srv_conn *conns;
    int nconns;
    bool stopping;
    struct net_client_figures gone[SRV_CLIENTS_KEPT];
    int ngone;
    struct srv_conn *timed; /* the loop's own: deadlines to watch */
    /* Requests their handler parked (srv_park.c; lock): those waiting, and
     * every id taken and not yet served again, by id. */
    struct srv_conn *parked, *parked_tail; /* by deadline, soonest first */
    int nparked;
    uint64_t park_seq;
    struct srv_conn *phash[SRV_PBUCKETS];

    /* The fair queue and the workers (qlock). A revocation channel's long
     * poll goes first and never waits for a free worker: the requests it
     * would wait behind may be waiting for its acknowledgement. */
    pthread_mutex_t qlock;
    pthread_cond_t qcond, qdone;
    struct srv_qclient *qhash[SRV_QBUCKETS];
    struct srv_qclient *round, *round_tail;
    struct srv_conn *urgent, *urgent_tail;
    uint32_t nqueued;
    int nworkers, idle; /* qlock */
    int nlong;          /* in a long poll or a gate; atomic, read under qlock */
    int nfirst;         /* serving a request that goes first (under qlock) */
    bool qstop;
    int max_workers;

    pthread_mutex_t plock; /* the buffer pool */
    struct srv_pool_class pool[SRV_POOL_CLASSES];
    uint64_t pooled_bytes;

    struct srv_op_stat stats[PROTO_OP_MAX];
    struct rcache *replies; /* when some request is cached */
    uint64_t drop_every;    /* STRIA_TEST_DROP_REPLY_EVERY (tests) */
    uint16_t drop_op;       /* STRIA_TEST_DROP_REPLY_OP: only this kind (0: any) */
    uint64_t die_every;     /* STRIA_TEST_DIE_BEFORE_REPLY_EVERY (tests) */
    _Atomic uint64_t cached_served;
};

/* srv_work.c */
/* Queue sc, whose request is whole, for a worker (the loop calls it). */
void srv_enqueue(struct net_server *s, struct srv_conn *sc);
/* Start the first workers. Returns 0 or a negative errno. */
int srv_workers_start(struct net_server *s);
/* Wake every worker to stop and wait for them all (s->stopping set). */
void srv_workers_stop(struct net_server *s);
/* Forget every request still queued (the server stops; their
 * connections are closed with the others). */
void srv_queue_free(struct net_server *s);
/* A pooled buffer of at least len bytes, page-aligned; NULL if none. */
void *srv_buf_get(struct net_server *s, uint32_t len);
void srv_buf_put(struct net_server *s, void *p, uint32_t len);

/* srv_park.c */
/* After a handler returned NET_PARKED: sc waits, or is queued again at
 * once if net_wake came meanwhile. Its payload moves into sc->inl when it
 * fits. */
void srv_park(struct srv_conn *sc);
/* A handler returned status for sc: NET_PARKED if it parked with an id
 * (-EIO without one); else an id it took goes stale. */
int srv_park_settle(struct srv_conn *sc, int status);
/* sc closes (srv->lock held): its id goes stale. */
void srv_park_close(struct srv_conn *sc);
/* The loop's tick: requests parked past their time are served again. */
void srv_park_expire(struct net_server *s, int64_t now);
/* Whether p is sc's pooled payload (not its inline copy). */
static inline bool srv_payload_pooled(const struct srv_conn *sc)
{
    return sc->payload && sc->payload != sc->inl;
}

/* server.c */
/* Arm sc in the loop again, its request served (the worker's last step). */
void srv_rearm(struct srv_conn *sc);
/* After a reply, by the worker that sent it: when sc's peer has sent a
 * whole request already (pipelined), read it into sc as the loop would,
 * without the loop. 1: read, ready to serve; 0: none whole yet, nothing
 * read (the loop reads it); a negative errno: close sc. */
int srv_read_next(struct srv_conn *sc);
/* Close sc and free it: on_close, counts folded, fd closed. */
void srv_conn_close(struct srv_conn *sc);
/* Send a reply: its bulk from memory (bulk, blen) or, with bulk_fd >= 0,
 * blen bytes of that file from bulk_off; flags adds e.g. MSG_DONTWAIT. */
int srv_reply(int fd, const struct proto_hdr *req, int status, const void *payload, uint32_t plen,
              const void *bulk, uint32_t blen, int bulk_fd, uint64_t bulk_off, int flags);

/* srv_stats.c */
void srv_stat_note(struct net_server *s, uint16_t op, int status, uint64_t ns, uint64_t wait);
/* Fold a closing connection's counts into the clients gone (s->lock). */
void srv_clients_fold(struct net_server *s, const struct srv_conn *sc);
/* STATS, answered by every server unless its own table says otherwise. */
int srv_h_stats(struct net_server *s, struct net_req *req, struct net_rep *rep);

#endif
