/*
 * The workers of a server (server_int.h): a pool of threads that serve
 * whole requests the event loop has read, from a queue that is fair
 * between clients, and the pool of buffers requests are read into.
 *
 * Fairness. Requests wait per client (the id a connection authenticated
 * as), and the clients with requests take turns, one request each. A
 * client with a thousand connections in a storm thus delays another's
 * single request by at most one request per client waiting, not by its
 * thousand. A connection has one request in service at a time, so a
 * connection's replies keep their order.
 *
 * Workers. There are at least WORKERS_MIN; the loop starts another when
 * more requests wait than workers sleep, up to max_workers. Handlers may
 * block (the MDT's group commit, a call to another MDT, S3), which is why
 * the pool grows rather than staying at the core count. A long poll
 * (the MDT's revocation channel, LEASE_POLL) holds no worker while it
 * waits: its handler parks it (srv_park.c). When it has something to say
 * it is served before everything else and is not counted against the
 * limit, since requests held at the write-behind gate may be waiting for
 * its acknowledgement; nor is a request held at that gate (on_enter), or
 * the two could wait for each other forever. A heartbeat to mgmtd goes
 * first too (goes_first). Such a request starts a worker of its own only
 * while fewer than max_workers serve them: they never block (a poll with
 * nothing to say parks), so one in the queue soon finds a worker, and
 * 10,000 polls arriving at once on a busy machine no longer start a
 * thread each (func_connections counted 1,061 threads once). A worker
 * left idle for WORKER_IDLE_MS exits.
 *
 * Buffers. A request's payload and bulk come from a pool of page-aligned
 * buffers in power-of-two classes; an idle connection holds none. The
 * pool keeps at most POOL_KEEP_BYTES, so a burst does not stay resident.
 * A worker owns its reply buffer and the scratch net_scratch hands out.
 */
#include "server_int.h"

#include "frame.h"
#include "rcache.h"

#include "../common/log.h"
#include "../common/util.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WORKERS_MIN     4
#define WORKER_IDLE_MS  10000
#define POOL_KEEP_BYTES (128ull << 20)
#define POOL_MIN_SHIFT  12

struct srv_worker {
    struct net_server *srv;
    uint8_t *reply; /* PROTO_MAX_REP_PAYLOAD */
    uint8_t *scratch;
    uint32_t scratch_cap;
};

/* ---- buffers ---- */

static unsigned pool_class(uint32_t len)
{
    unsigned c = 0;
    while (c + 1 < SRV_POOL_CLASSES && (1u << (POOL_MIN_SHIFT + c)) < len)
        c++;
    return c;
}

void *srv_buf_get(struct net_server *s, uint32_t len)
{
    unsigned c = pool_class(len);
    size_t size = (size_t)1 << (POOL_MIN_SHIFT + c);
    if (size < len)
        return NULL;
    pthread_mutex_lock(&s->plock);
    struct srv_pool_class *pc = &s->pool[c];
    void *p = pc->n ? pc->free[--pc->n] : NULL;
    if (p)
        s->pooled_bytes -= size;
    pthread_mutex_unlock(&s->plock);
    if (!p && posix_memalign(&p, 4096, size))
        return NULL;
    return p;
}

void srv_buf_put(struct net_server *s, void *p, uint32_t len)
{
    if (!p)
        return;
    unsigned c = pool_class(len);
    size_t size = (size_t)1 << (POOL_MIN_SHIFT + c);
    pthread_mutex_lock(&s->plock);
    struct srv_pool_class *pc = &s->pool[c];
    if (s->pooled_bytes + size <= POOL_KEEP_BYTES) {
        if (pc->n == pc->cap) {
            uint32_t cap = pc->cap ? 2 * pc->cap : 8;
            void **v = realloc(pc->free, cap * sizeof(*v));
            if (v) {
                pc->free = v;
                pc->cap = cap;
            }
        }
        if (pc->n < pc->cap) {
            pc->free[pc->n++] = p;
            s->pooled_bytes += size;
            p = NULL;
        }
    }
    pthread_mutex_unlock(&s->plock);
    free(p);
}

void *net_scratch(struct net_req *req, uint32_t len)
{
    struct srv_worker *w = req->worker;
    if (len > NET_SCRATCH_MAX)
        return NULL;
    if (w->scratch_cap < len) {
        void *p = realloc(w->scratch, len);
        if (!p)
            return NULL;
        w->scratch = p;
        w->scratch_cap = len;
    }
    return w->scratch;
}

int net_item_begin(struct net_req *req, uint64_t seq, int *status, void *payload, uint32_t cap,
                   uint32_t *len)
{
    struct net_server *s = ((struct srv_worker *)req->worker)->srv;
    if (!s->replies)
        return NET_ITEM_NEW;
    return rcache_begin(s->replies, req->hdr.client_id, seq, status, payload, cap, len) ==
                   RCACHE_DONE
               ? NET_ITEM_DONE
               : NET_ITEM_NEW;
}

void net_item_end(struct net_req *req, uint64_t seq, int status, const void *payload, uint32_t len)
{
    struct net_server *s = ((struct srv_worker *)req->worker)->srv;
    if (s->replies)
        rcache_end(s->replies, req->hdr.client_id, seq, status, payload, len);
}

void net_item_forget(struct net_req *req, uint64_t seq)
{
    struct net_server *s = ((struct srv_worker *)req->worker)->srv;
    if (s->replies)
        rcache_forget(s->replies, req->hdr.client_id, seq);
}

/* ---- the fair queue (qlock) ---- */

static struct srv_qclient **qslot(struct net_server *s, uint64_t id)
{
    struct srv_qclient **p = &s->qhash[(id * 0x9E3779B97F4A7C15ull) >> 54];
    while (*p && (*p)->id != id)
        p = &(*p)->hnext;
    return p;
}

/* Served first, and never waiting for a free worker: a revocation
 * channel's long poll, which requests held at the write-behind gate may be
 * waiting for, and a server's heartbeat to mgmtd, which must not wait its
 * turn behind every client of a storm (a target not heard from for 5 s is
 * marked offline). Both are one per server or mount, not per rank. */
static bool goes_first(const struct srv_conn *sc)
{
    return sc->h.opcode == PROTO_OP_LEASE_POLL || sc->h.opcode == PROTO_OP_HEARTBEAT;
}

static void *worker_main(void *arg);

static int worker_spawn(struct net_server *s)
{
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 512 << 10);
    int rc = pthread_create(&t, &attr, worker_main, s);
    pthread_attr_destroy(&attr);
    if (rc) {
        log_warn("cannot start a worker: %s", strerror(rc));
        return -rc;
    }
    s->nworkers++;
    return 0;
}

static void urgent_push(struct net_server *s, struct srv_conn *sc)
{
    if (s->urgent_tail)
        s->urgent_tail->qnext = sc;
    else
        s->urgent = sc;
    s->urgent_tail = sc;
}

void srv_enqueue(struct net_server *s, struct srv_conn *sc)
{
    sc->qnext = NULL;
    pthread_mutex_lock(&s->qlock);
    if (goes_first(sc)) {
        urgent_push(s, sc);
    } else {
        struct srv_qclient **slot = qslot(s, sc->client_id), *c = *slot;
        if (!c) {
            c = calloc(1, sizeof(*c));
            if (!c) {
                /* No memory for the client's turn: it queues with the
                 * urgent ones rather than be lost. */
                urgent_push(s, sc);
                goto queued;
            }
            c->id = sc->client_id;
            *slot = c;
            if (s->round_tail)
                s->round_tail->rnext = c;
            else
                s->round = c;
            s->round_tail = c;
        }
        if (c->tail)
            c->tail->qnext = sc;
        else
            c->head = sc;
        c->tail = sc;
    }
queued:
    s->nqueued++;
    if ((int)s->nqueued > s->idle && !s->qstop &&
        (goes_first(sc)
             ? s->nfirst < s->max_workers
             : s->nworkers - __atomic_load_n(&s->nlong, __ATOMIC_RELAXED) < s->max_workers))
        worker_spawn(s);
    pthread_cond_signal(&s->qcond);
    pthread_mutex_unlock(&s->qlock);
}

/* The next request: a long poll first, else the next client's turn. */
static struct srv_conn *dequeue(struct net_server *s)
{
    struct srv_conn *sc = s->urgent;
    if (sc) {
        s->urgent = sc->qnext;
        if (!s->urgent)
            s->urgent_tail = NULL;
    } else {
        struct srv_qclient *c = s->round;
        if (!c)
            return NULL;
        s->round = c->rnext;
        if (!s->round)
            s->round_tail = NULL;
        c->rnext = NULL;
        sc = c->head;
        c->head = sc->qnext;
        if (c->head) {
            /* Its next request waits for its next turn. */
            if (s->round_tail)
                s->round_tail->rnext = c;
            else
                s->round = c;
            s->round_tail = c;
        } else {
            *qslot(s, c->id) = c->hnext;
            free(c);
        }
    }
    sc->qnext = NULL;
    s->nqueued--;
    return sc;
}

void srv_queue_free(struct net_server *s)
{
    pthread_mutex_lock(&s->qlock);
    while (dequeue(s))
        ;
    pthread_mutex_unlock(&s->qlock);
}

/* ---- serving one request ---- */

/* Serve sc's whole request and send its reply. Returns 0, NET_PARKED
 * (its handler parked it: nothing was sent), or a negative errno when the
 * connection must close. A function of its own, kept out
 * of line: the benchmarks count the instructions spent here (callgrind
 * --toggle-collect=req_serve), which are per request, apart from the
 * loop's reading and the handshake. */
static __attribute__((noinline)) int req_serve(struct srv_worker *w, struct srv_conn *sc)
{
    struct net_server *s = w->srv;
    struct proto_hdr h = sc->h;
    uint64_t t0 = util_now_mono_ns();
    uint64_t queued = t0 > sc->ready_ns ? t0 - sc->ready_ns : 0;
    net_handler_fn fn = h.opcode < PROTO_OP_MAX ? s->o.handlers[h.opcode] : NULL;
    bool builtin_stats = !fn && h.opcode == PROTO_OP_STATS;
    if (sc->refuse)
        return srv_reply(sc->fd, &h, sc->refuse, NULL, 0, NULL, 0, -1, 0, 0);
    h.client_id = sc->client_id; /* a request speaks for whom it authenticated as */
    bool cached = s->replies && fn && s->o.cached[h.opcode] && PROTO_HDR_TAG(&h);
    if (cached) {
        int st = 0;
        uint32_t len = 0;
        const char *from = "reply cache";
        int found = rcache_begin(s->replies, h.client_id, h.seq, &st, w->reply,
                                 PROTO_MAX_REP_PAYLOAD, &len) == RCACHE_DONE;
        if (!found && (h.flags & PROTO_FLAG_RESEND) && s->o.replay) {
            /* Not served by this process: perhaps before a restart. */
            from = "kept reply";
            found = s->o.replay(s->o.ctx, &h, &st, w->reply, PROTO_MAX_REP_PAYLOAD, &len);
            if (found < 0) {
                st = found;
                len = 0;
            }
            if (found)
                rcache_end(s->replies, h.client_id, h.seq, st, w->reply, len);
        }
        if (found) {
            log_info("answered a resent request from its %s peer=%s op=%s seq=%llu%s%s", from,
                     sc->peer, proto_op_name(h.opcode), (unsigned long long)h.seq,
                     st ? " status=" : "", st ? log_err(st) : "");
            return srv_reply(sc->fd, &h, st, w->reply, len, NULL, 0, -1, 0, 0);
        }
    }
    struct net_req req = {.hdr = h,
                          .bulk = sc->bulk,
                          .bulk_len = h.bulk_len,
                          .peer = sc->peer,
                          .conn = sc,
                          .worker = w,
                          .wait_ns = queued,
                          .woken = sc->woken};
    proto_dec_init(&req.dec, sc->payload, h.payload_len);
    struct net_rep rep = {0};
    proto_enc_init(&rep.enc, w->reply, PROTO_MAX_REP_PAYLOAD);
    int status;
    if (builtin_stats) {
        status = srv_h_stats(s, &req, &rep);
    } else {
        if (s->o.on_enter) {
            /* A gate (the MDT's write-behind grant): its time is a wait,
             * and a worker held there does not count against the limit. */
            bool gate = h.opcode != PROTO_OP_LEASE_POLL;
            if (gate)
                __atomic_add_fetch(&s->nlong, 1, __ATOMIC_RELAXED);
            uint64_t g0 = util_now_mono_ns();
            s->o.on_enter(s->o.ctx, &req);
            req.wait_ns += util_now_mono_ns() - g0;
            if (gate)
                __atomic_sub_fetch(&s->nlong, 1, __ATOMIC_RELAXED);
        }
        status = fn(s->o.ctx, &req, &rep);
        if (s->o.on_leave)
            s->o.on_leave(s->o.ctx, &req);
        if ((status = srv_park_settle(sc, status)) == NET_PARKED)
            return NET_PARKED; /* no reply yet, and no figures */
    }
    if (status == 0 && rep.enc.err)
        status = rep.enc.err;
    if (status == -EBADMSG)
        log_warn("malformed request peer=%s op=%s", sc->peer, proto_op_name(h.opcode));
    if (status > 0)
        status = -EIO;
    uint64_t took = util_now_mono_ns() - t0 + queued;
    uint64_t wait = req.wait_ns < took ? req.wait_ns : took;
    srv_stat_note(s, h.opcode, status, took - wait, wait);
    if (h.opcode != PROTO_OP_LEASE_POLL) {
        __atomic_fetch_add(&sc->requests, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&sc->service_ns, took - wait, __ATOMIC_RELAXED);
        __atomic_fetch_add(&sc->wait_ns, wait, __ATOMIC_RELAXED);
    }
    int fd = rep.bulk_in_file ? rep.bulk_fd : -1;
    if (cached) {
        bool other = status == 0 && rep.kept;
        rcache_end(s->replies, h.client_id, h.seq, status, other ? rep.kept : w->reply,
                   other ? rep.kept_len : (uint32_t)rep.enc.len);
    }
    /* The test hooks lose the reply of a change, or of a message whose
     * items are changes (on a server that keeps replies). */
    if (cached || (s->replies && (proto_op_flags(h.opcode) & PROTO_F_ITEMS))) {
        if (s->drop_every && (!s->drop_op || s->drop_op == h.opcode) &&
            atomic_fetch_add(&s->cached_served, 1) % s->drop_every == s->drop_every - 1) {
            log_warn("test: dropping the connection instead of the reply peer=%s op=%s", sc->peer,
                     proto_op_name(h.opcode));
            if (fd >= 0)
                close(fd);
            return -ECONNABORTED;
        }
        if (s->die_every && status == 0 &&
            atomic_fetch_add(&s->cached_served, 1) % s->die_every == s->die_every - 1) {
            log_warn("test: exiting after a change was made, before its reply peer=%s op=%s",
                     sc->peer, proto_op_name(h.opcode));
            _exit(75);
        }
    }
    int sent = srv_reply(sc->fd, &h, status, w->reply, (uint32_t)rep.enc.len, rep.bulk,
                         rep.bulk_len, fd, rep.bulk_off, 0);
    if (fd >= 0)
        close(fd);
    if (sent && sent != -ECONNRESET && sent != -EPIPE)
        log_warn("closing connection peer=%s reason=\"reply not taken: %s\"", sc->peer,
                 log_err(sent));
    return sent;
}

/* Serve sc, then give it back to the loop (or close it). A request its
 * peer sent behind this one, whole already, is served here too while no
 * other client's waits, up to SERVE_RUN in a row: a pipelined batch (the
 * write-behind sender's, a striped write's pieces) costs no trip through
 * the loop and no wake-up of another thread per request. */
#define SERVE_RUN 16
static void serve(struct srv_worker *w, struct srv_conn *sc)
{
    struct net_server *s = w->srv;
    for (int run = 1;; run++) {
        int rc = req_serve(w, sc);
        if (rc == NET_PARKED) {
            srv_park(sc);
            return;
        }
        if (srv_payload_pooled(sc))
            srv_buf_put(s, sc->payload, sc->h.payload_len);
        srv_buf_put(s, sc->bulk, sc->h.bulk_len);
        sc->payload = sc->bulk = NULL;
        sc->part = PART_HDR;
        sc->got = 0;
        sc->refuse = 0;
        sc->woken = 0;
        if (rc == 0 && run < SERVE_RUN && !__atomic_load_n(&s->nqueued, __ATOMIC_RELAXED))
            rc = srv_read_next(sc); /* else (0) the loop reads what comes next */
        if (rc < 0) {
            srv_conn_close(sc);
            return;
        }
        if (rc == 0) {
            srv_rearm(sc);
            return;
        }
        if (__atomic_load_n(&s->nqueued, __ATOMIC_RELAXED)) {
            srv_enqueue(s, sc); /* another client's came meanwhile: take turns */
            return;
        }
    }
}

static void *worker_main(void *arg)
{
    struct srv_worker w = {.srv = arg, .reply = malloc(PROTO_MAX_REP_PAYLOAD)};
    struct net_server *s = w.srv;
    pthread_mutex_lock(&s->qlock);
    for (;;) {
        bool idle_long = false;
        while (!s->qstop && !s->nqueued) {
            if (idle_long && s->nworkers > WORKERS_MIN)
                goto out;
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_sec += WORKER_IDLE_MS / 1000;
            s->idle++;
            idle_long = pthread_cond_timedwait(&s->qcond, &s->qlock, &ts) == ETIMEDOUT;
            s->idle--;
        }
        if (s->qstop)
            break;
        struct srv_conn *sc = dequeue(s);
        bool lp = goes_first(sc);
        if (lp) {
            __atomic_add_fetch(&s->nlong, 1, __ATOMIC_RELAXED);
            s->nfirst++;
        }
        pthread_mutex_unlock(&s->qlock);
        if (w.reply)
            serve(&w, sc);
        else
            srv_conn_close(sc); /* no memory for any reply */
        pthread_mutex_lock(&s->qlock);
        if (lp) {
            __atomic_sub_fetch(&s->nlong, 1, __ATOMIC_RELAXED);
            s->nfirst--;
        }
    }
out:
    s->nworkers--;
    pthread_cond_broadcast(&s->qdone);
    pthread_mutex_unlock(&s->qlock);
    free(w.reply);
    free(w.scratch);
    return NULL;
}

int srv_workers_start(struct net_server *s)
{
    pthread_mutex_lock(&s->qlock);
    int rc = 0;
    for (int i = 0; i < WORKERS_MIN && i < s->max_workers && !rc; i++)
        rc = worker_spawn(s);
    pthread_mutex_unlock(&s->qlock);
    return rc;
}

void srv_workers_stop(struct net_server *s)
{
    pthread_mutex_lock(&s->qlock);
    s->qstop = true;
    pthread_cond_broadcast(&s->qcond);
    while (s->nworkers > 0)
        pthread_cond_wait(&s->qdone, &s->qlock);
    pthread_mutex_unlock(&s->qlock);
}
