/*
 * The server side of the transport (server.h).
 *
 * One accept thread, then one thread per connection. A connection
 * thread owns a payload buffer and a bulk buffer that grows on demand up
 * to PROTO_MAX_BULK, so steady-state requests allocate nothing. Lengths
 * are checked in proto_hdr_decode before any read or allocation. A bad
 * header (wrong magic, checksum, oversize) closes the connection: after
 * it the byte stream has no trustworthy framing. A bad payload gets an
 * error reply and the connection goes on.
 *
 * A connection first passes the handshake (HELLO, then AUTH checked, all
 * before one deadline); then each request goes to its handler, or is
 * answered from the reply cache (rcache.h) when it is a change sent
 * again. Messages go through frame.c; this file never calls the client
 * side.
 *
 * Every request's cost is split in two for STATS: the time it waited
 * (net_req.wait_ns, what queued it adds, and the gate before the handler)
 * and the rest, its service. An event loop's queue for its workers adds
 * its time the same way. Per client, each connection counts its own
 * requests (no lock on the way); a connection that closes folds its counts
 * into a table of at most CLIENTS_KEPT clients, which forgets the one with
 * the fewest requests to make room, so no peer can make it grow.
 */
#include "server.h"

#include "frame.h"
#include "rcache.h"

#include "../common/log.h"
#include "../common/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdatomic.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define HANDSHAKE_TIMEOUT_MS 5000 /* net_server_opts.handshake_ms's default */
#define CLIENTS_KEPT         1024 /* clients of closed connections remembered */

struct srv_conn {
    struct net_server *srv;
    int fd;
    pthread_t thread;
    char peer[64];
    uint8_t *payload;
    uint8_t *bulk;
    uint32_t bulk_cap;
    uint8_t *scratch;
    uint32_t scratch_cap;
    uint8_t *reply;
    uint64_t client_id; /* as authenticated */
    char ip[PROTO_CLIENT_IP];
    /* What it served, for the busiest clients (relaxed atomics). */
    uint64_t requests, service_ns, wait_ns;
    struct srv_conn *next, *prev;
};

/* What one kind of request cost (STATS), updated with relaxed atomics by
 * whichever connection thread served it. */
struct op_stat {
    uint64_t count, errors, total_ns, max_ns;
    uint64_t hist[PROTO_STAT_BUCKETS];
    uint64_t wait_ns, wait_max_ns;
    uint64_t whist[PROTO_STAT_BUCKETS];
};

struct net_server {
    struct net_server_opts o;
    int lfd;
    uint16_t port;
    pthread_t accept_thread;
    pthread_mutex_t lock;
    pthread_cond_t drained;
    struct srv_conn *conns;
    int nconns;
    bool stopping;
    uint64_t server_id;
    uint64_t started_ns;
    struct op_stat stats[PROTO_OP_MAX];
    struct net_client_figures gone[CLIENTS_KEPT]; /* under lock */
    int ngone;
    struct rcache *replies; /* when some request is cached */
    uint64_t drop_every;    /* STRIA_TEST_DROP_REPLY_EVERY (tests) */
    uint64_t die_every;     /* STRIA_TEST_DIE_BEFORE_REPLY_EVERY (tests) */
    _Atomic uint64_t cached_served;
};

/* The STATS bucket of a service time: 0 under 1 us, i for [2^(i-1), 2^i). */
static unsigned stat_bucket(uint64_t ns)
{
    uint64_t us = ns / 1000;
    unsigned b = us ? 64u - (unsigned)__builtin_clzll(us) : 0u; /* bit length, no loop */
    return b < PROTO_STAT_BUCKETS ? b : PROTO_STAT_BUCKETS - 1;
}

static void max_note(uint64_t *max, uint64_t ns)
{
    uint64_t m = __atomic_load_n(max, __ATOMIC_RELAXED);
    while (ns > m &&
           !__atomic_compare_exchange_n(max, &m, ns, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static void stat_note(struct net_server *s, uint16_t op, int status, uint64_t ns, uint64_t wait)
{
    struct op_stat *st = &s->stats[op];
    __atomic_fetch_add(&st->count, 1, __ATOMIC_RELAXED);
    if (status < 0)
        __atomic_fetch_add(&st->errors, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&st->total_ns, ns, __ATOMIC_RELAXED);
    __atomic_fetch_add(&st->hist[stat_bucket(ns)], 1, __ATOMIC_RELAXED);
    max_note(&st->max_ns, ns);
    __atomic_fetch_add(&st->wait_ns, wait, __ATOMIC_RELAXED);
    __atomic_fetch_add(&st->whist[stat_bucket(wait)], 1, __ATOMIC_RELAXED);
    max_note(&st->wait_max_ns, wait);
}

static uint64_t load(const uint64_t *v)
{
    return __atomic_load_n(v, __ATOMIC_RELAXED);
}

/* A connection's counts as a client's. */
static struct net_client_figures conn_figures(const struct srv_conn *sc)
{
    struct net_client_figures f = {.client_id = sc->client_id,
                                   .requests = load(&sc->requests),
                                   .service_ns = load(&sc->service_ns),
                                   .wait_ns = load(&sc->wait_ns)};
    memcpy(f.ip, sc->ip, sizeof(f.ip));
    return f;
}

/* Fold a closing connection's counts into the table of clients gone
 * (under s->lock). When it is full the client with the fewest requests
 * goes, the newcomer itself if it has fewer than all. */
static void clients_fold(struct net_server *s, const struct srv_conn *sc)
{
    struct net_client_figures f = conn_figures(sc);
    if (!f.requests)
        return;
    int least = -1;
    for (int i = 0; i < s->ngone; i++) {
        struct net_client_figures *g = &s->gone[i];
        if (g->client_id == f.client_id) {
            g->requests += f.requests;
            g->service_ns += f.service_ns;
            g->wait_ns += f.wait_ns;
            memcpy(g->ip, f.ip, sizeof(g->ip));
            return;
        }
        if (least < 0 || g->requests < s->gone[least].requests)
            least = i;
    }
    if (s->ngone < CLIENTS_KEPT)
        s->gone[s->ngone++] = f;
    else if (s->gone[least].requests < f.requests)
        s->gone[least] = f;
}

static int by_id(const void *a, const void *b)
{
    uint64_t x = ((const struct net_client_figures *)a)->client_id;
    uint64_t y = ((const struct net_client_figures *)b)->client_id;
    return x < y ? -1 : x > y;
}

static int by_requests(const void *a, const void *b)
{
    uint64_t x = ((const struct net_client_figures *)a)->requests;
    uint64_t y = ((const struct net_client_figures *)b)->requests;
    return x > y ? -1 : x < y;
}

/* The busiest clients: those gone and those connected, each client's
 * connections summed. */
static int clients_top(struct net_server *s, struct net_server_figures *out)
{
    pthread_mutex_lock(&s->lock);
    size_t n = 0, cap = (size_t)s->ngone + (size_t)s->nconns;
    struct net_client_figures *v = malloc((cap ? cap : 1) * sizeof(*v));
    if (v) {
        memcpy(v, s->gone, (size_t)s->ngone * sizeof(*v));
        n = (size_t)s->ngone;
        for (struct srv_conn *c = s->conns; c && n < cap; c = c->next)
            if (load(&c->requests))
                v[n++] = conn_figures(c);
    }
    pthread_mutex_unlock(&s->lock);
    if (!v)
        return -ENOMEM;
    qsort(v, n, sizeof(*v), by_id);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && v[m - 1].client_id == v[i].client_id) {
            v[m - 1].requests += v[i].requests;
            v[m - 1].service_ns += v[i].service_ns;
            v[m - 1].wait_ns += v[i].wait_ns;
            continue;
        }
        v[m++] = v[i];
    }
    qsort(v, m, sizeof(*v), by_requests);
    out->nclients = m < PROTO_STAT_CLIENTS ? (uint32_t)m : PROTO_STAT_CLIENTS;
    memcpy(out->clients, v, out->nclients * sizeof(*v));
    free(v);
    return 0;
}

int net_server_figures(struct net_server *s, struct net_server_figures *out)
{
    memset(out, 0, sizeof(*out));
    out->uptime_ns = util_now_mono_ns() - s->started_ns;
    pthread_mutex_lock(&s->lock);
    out->connections = s->nconns;
    pthread_mutex_unlock(&s->lock);
    for (uint16_t op = 0; op < PROTO_OP_MAX; op++) {
        const struct op_stat *st = &s->stats[op];
        struct net_op_figures *f = &out->ops[op];
        f->count = load(&st->count);
        f->errors = load(&st->errors);
        f->service_ns = load(&st->total_ns);
        f->service_max_ns = load(&st->max_ns);
        f->wait_ns = load(&st->wait_ns);
        f->wait_max_ns = load(&st->wait_max_ns);
        for (unsigned i = 0; i < PROTO_STAT_BUCKETS; i++) {
            f->service_hist[i] = load(&st->hist[i]);
            f->wait_hist[i] = load(&st->whist[i]);
        }
    }
    return clients_top(s, out);
}

/* STATS, answered by every server unless its own table says otherwise. */
static int h_stats(struct net_server *s, struct net_req *req, struct net_rep *rep)
{
    struct proto_stats_req q;
    if (proto_dec_stats_req(&req->dec, &q))
        return -EBADMSG;
    uint32_t cap_ops = PROTO_OP_MAX * PROTO_STAT_LEN, cap_waits = PROTO_OP_MAX * PROTO_WAIT_LEN;
    uint8_t *buf = net_scratch(req, cap_ops + cap_waits + PROTO_STAT_CLIENTS * PROTO_CLIENT_LEN);
    struct net_server_figures *f = malloc(sizeof(*f));
    if (!buf || !f) {
        free(f);
        return -ENOMEM;
    }
    int rc = net_server_figures(s, f);
    uint8_t *ops = buf, *waits = buf + cap_ops, *clients = waits + cap_waits;
    uint32_t nops = 0;
    for (uint16_t op = 0; op < PROTO_OP_MAX; op++) {
        const struct net_op_figures *o = &f->ops[op];
        if (!o->count)
            continue;
        uint8_t *p = ops + nops * PROTO_STAT_LEN, *w = waits + nops * PROTO_WAIT_LEN;
        p[0] = w[0] = (uint8_t)op;
        p[1] = w[1] = (uint8_t)(op >> 8);
        proto_put_le64(p + 2, o->count);
        proto_put_le64(p + 10, o->errors);
        proto_put_le64(p + 18, o->service_ns);
        proto_put_le64(p + 26, o->service_max_ns);
        proto_put_le64(w + 2, o->wait_ns);
        proto_put_le64(w + 10, o->wait_max_ns);
        for (unsigned i = 0; i < PROTO_STAT_BUCKETS; i++) {
            proto_put_le64(p + 34 + 8 * i, o->service_hist[i]);
            proto_put_le64(w + 18 + 8 * i, o->wait_hist[i]);
        }
        nops++;
    }
    for (uint32_t i = 0; i < f->nclients; i++) {
        const struct net_client_figures *c = &f->clients[i];
        uint8_t *p = clients + i * PROTO_CLIENT_LEN;
        proto_put_le64(p, c->client_id);
        proto_put_le64(p + 8, c->requests);
        proto_put_le64(p + 16, c->service_ns);
        proto_put_le64(p + 24, c->wait_ns);
        memcpy(p + 32, c->ip, PROTO_CLIENT_IP);
    }
    struct proto_stats_rep r = {.uptime_ns = f->uptime_ns,
                                .ops = {.p = ops, .len = nops * PROTO_STAT_LEN},
                                .waits = {.p = waits, .len = nops * PROTO_WAIT_LEN},
                                .clients = {.p = clients, .len = f->nclients * PROTO_CLIENT_LEN}};
    if (rc)
        log_warn("STATS without its busiest clients: %s", log_err(rc));
    free(f);
    return proto_enc_stats_rep(&rep->enc, &r);
}

void *net_scratch(struct net_req *req, uint32_t len)
{
    struct srv_conn *sc = req->conn;
    if (len > NET_SCRATCH_MAX)
        return NULL;
    if (sc->scratch_cap < len) {
        void *p = realloc(sc->scratch, len);
        if (!p)
            return NULL;
        sc->scratch = p;
        sc->scratch_cap = len;
    }
    return sc->scratch;
}

/* A reply with its bulk from memory (bulk, blen) or, with bulk_fd >= 0,
 * blen bytes of that file from bulk_off. */
static int reply_bulk(struct srv_conn *sc, const struct proto_hdr *req, int status,
                      const void *payload, uint32_t plen, const void *bulk, uint32_t blen,
                      int bulk_fd, uint64_t bulk_off)
{
    struct proto_hdr h = {.magic = PROTO_MAGIC,
                          .version = PROTO_VERSION,
                          .opcode = req->opcode,
                          .flags = PROTO_FLAG_REPLY,
                          .status = status,
                          .reqid = req->reqid,
                          .client_id = req->client_id,
                          .seq = req->seq,
                          .payload_len = status ? 0 : plen,
                          .bulk_len = status ? 0 : blen};
    if (bulk_fd < 0 || h.bulk_len == 0)
        return frame_send(sc->fd, &h, payload, bulk);
    /* The header and payload first, held back to go with the file's data. */
    uint8_t hb[PROTO_HDR_LEN];
    proto_hdr_encode(&h, hb);
    struct iovec iov[2] = {{hb, PROTO_HDR_LEN}, {(void *)payload, h.payload_len}};
    int rc = frame_send_iov(sc->fd, iov, 2, MSG_MORE);
    return rc ? rc : frame_send_file(sc->fd, bulk_fd, bulk_off, h.bulk_len);
}

static int reply(struct srv_conn *sc, const struct proto_hdr *req, int status, const void *payload,
                 uint32_t plen)
{
    return reply_bulk(sc, req, status, payload, plen, NULL, 0, -1, 0);
}

/* HELLO, then AUTH read and checked, all before one deadline: the
 * handshake_ms after the connection was accepted, whatever arrives
 * meanwhile, so a peer that never authenticates cannot keep its thread and
 * slot by sending a byte now and then. */
static int handshake(struct srv_conn *sc)
{
    struct net_server *s = sc->srv;
    int64_t deadline_ns = (int64_t)util_now_mono_ns() + (int64_t)s->o.handshake_ms * 1000000;
    uint8_t nonce[AUTH_NONCE_LEN], buf[1024];
    int rc = auth_random(nonce, sizeof(nonce));
    if (rc)
        return rc;
    /* Version 3 put checksums into WRITE and READ, version 4 READs sent
     * unread: older peers cannot talk to this one (PROTO_MIN_VERSION). */
    struct proto_hello_req hello = {.min_version = PROTO_MIN_VERSION,
                                    .max_version = PROTO_VERSION,
                                    .nonce = {nonce, AUTH_NONCE_LEN},
                                    .server_id = s->server_id};
    struct proto_enc e;
    proto_enc_init(&e, buf, sizeof(buf));
    proto_enc_hello_req(&e, &hello);
    struct proto_hdr h = {.magic = PROTO_MAGIC,
                          .version = PROTO_VERSION,
                          .opcode = PROTO_OP_HELLO,
                          .payload_len = (uint32_t)e.len};
    if ((rc = frame_send(sc->fd, &h, buf, NULL)))
        return rc;
    uint8_t hb[PROTO_HDR_LEN];
    rc = frame_read_by(sc->fd, hb, PROTO_HDR_LEN, deadline_ns);
    if (rc == 0)
        rc = proto_hdr_decode(hb, &h);
    if (rc) {
        if (rc == -ETIMEDOUT)
            log_warn("auth refused peer=%s reason=\"no AUTH within %d ms\"", sc->peer,
                     s->o.handshake_ms);
        else
            log_warn("auth refused peer=%s reason=\"%s\"", sc->peer,
                     rc == -EBADMSG    ? "not a stria message"
                     : rc == -EMSGSIZE ? "oversized message"
                                       : strerror(-rc));
        return -EACCES;
    }
    if (h.opcode != PROTO_OP_AUTH || h.bulk_len || h.payload_len > sizeof(buf)) {
        log_warn("auth refused peer=%s reason=\"%s opcode=%u before authenticating\"", sc->peer,
                 "unexpected", h.opcode);
        return -EACCES;
    }
    if ((rc = frame_read_by(sc->fd, buf, h.payload_len, deadline_ns))) {
        if (rc == -ETIMEDOUT)
            log_warn("auth refused peer=%s reason=\"no AUTH within %d ms\"", sc->peer,
                     s->o.handshake_ms);
        return rc;
    }
    struct proto_dec d;
    struct proto_auth_req a;
    proto_dec_init(&d, buf, h.payload_len);
    if (proto_dec_auth_req(&d, &a) || a.mac.len != AUTH_MAC_LEN) {
        log_warn("auth refused peer=%s reason=\"malformed AUTH\"", sc->peer);
        reply(sc, &h, -EBADMSG, NULL, 0);
        return -EACCES;
    }
    if (auth_verify(s->o.key, nonce, h.client_id, a.mac.p)) {
        log_warn("auth refused peer=%s reason=\"wrong cluster key\" client=%016llx", sc->peer,
                 (unsigned long long)h.client_id);
        reply(sc, &h, -EACCES, NULL, 0);
        return -EACCES;
    }
    sc->client_id = h.client_id;
    struct proto_auth_rep ar = {.version = a.version < PROTO_VERSION ? a.version : PROTO_VERSION};
    proto_enc_init(&e, buf, sizeof(buf));
    proto_enc_auth_rep(&e, &ar);
    return reply(sc, &h, 0, buf, (uint32_t)e.len);
}

/* Serve a connection's requests until it closes or breaks. A function of
 * its own, kept out of line: the benchmarks count the instructions spent
 * here (callgrind --toggle-collect=conn_serve), which are per request,
 * apart from the handshake and teardown, which are per connection. */
static __attribute__((noinline)) void conn_serve(struct srv_conn *sc)
{
    struct net_server *s = sc->srv;
    for (;;) {
        struct proto_hdr h;
        int rc = frame_recv_hdr(sc->fd, &h);
        if (rc) {
            if (rc != -ECONNRESET)
                log_warn("closing connection peer=%s reason=\"%s\"", sc->peer,
                         rc == -EBADMSG    ? "bad header (magic or checksum)"
                         : rc == -EMSGSIZE ? "oversized message"
                                           : log_err(rc));
            break;
        }
        if (h.flags & PROTO_FLAG_REPLY) {
            log_warn("closing connection peer=%s reason=\"reply sent as a request\"", sc->peer);
            break;
        }
        if ((rc = util_read_full(sc->fd, sc->payload, h.payload_len)))
            break;
        net_handler_fn fn = h.opcode < PROTO_OP_MAX ? s->o.handlers[h.opcode] : NULL;
        bool builtin_stats = !fn && h.opcode == PROTO_OP_STATS;
        if (!fn && !builtin_stats) {
            log_warn("unsupported request peer=%s opcode=%u", sc->peer, h.opcode);
            if (frame_drain(sc->fd, h.bulk_len) || reply(sc, &h, -EOPNOTSUPP, NULL, 0))
                break;
            continue;
        }
        if (h.bulk_len > sc->bulk_cap) {
            /* Page-aligned: a large write can go to disk with O_DIRECT. */
            void *p;
            if (posix_memalign(&p, 4096, h.bulk_len)) {
                if (frame_drain(sc->fd, h.bulk_len) || reply(sc, &h, -ENOMEM, NULL, 0))
                    break;
                continue;
            }
            free(sc->bulk);
            sc->bulk = p;
            sc->bulk_cap = h.bulk_len;
        }
        if (h.bulk_len && (rc = util_read_full(sc->fd, sc->bulk, h.bulk_len)))
            break;
        h.client_id = sc->client_id; /* a request speaks for whom it authenticated as */
        bool cached = s->replies && fn && s->o.cached[h.opcode] && PROTO_HDR_TAG(&h);
        if (cached) {
            int st = 0;
            uint32_t len = 0;
            const char *from = "reply cache";
            int found = rcache_begin(s->replies, h.client_id, h.seq, &st, sc->reply,
                                     PROTO_MAX_REP_PAYLOAD, &len) == RCACHE_DONE;
            if (!found && (h.flags & PROTO_FLAG_RESEND) && s->o.replay) {
                /* Not served by this process: perhaps before a restart. */
                from = "kept reply";
                found = s->o.replay(s->o.ctx, &h, &st, sc->reply, PROTO_MAX_REP_PAYLOAD, &len);
                if (found < 0) {
                    st = found;
                    len = 0;
                }
                if (found)
                    rcache_end(s->replies, h.client_id, h.seq, st, sc->reply, len);
            }
            if (found) {
                log_info("answered a resent request from its %s peer=%s op=%s seq=%llu%s%s", from,
                         sc->peer, proto_op_name(h.opcode), (unsigned long long)h.seq,
                         st ? " status=" : "", st ? log_err(st) : "");
                if (reply(sc, &h, st, sc->reply, len))
                    break;
                continue;
            }
        }
        struct net_req req = {
            .hdr = h, .bulk = sc->bulk, .bulk_len = h.bulk_len, .peer = sc->peer, .conn = sc};
        proto_dec_init(&req.dec, sc->payload, h.payload_len);
        struct net_rep rep = {0};
        proto_enc_init(&rep.enc, sc->reply, PROTO_MAX_REP_PAYLOAD);
        uint64_t t0 = util_now_mono_ns();
        int status;
        if (builtin_stats) {
            status = h_stats(s, &req, &rep);
        } else {
            if (s->o.on_enter) {
                /* A gate (the MDT's write-behind grant): its time is a wait. */
                s->o.on_enter(s->o.ctx, &req);
                req.wait_ns += util_now_mono_ns() - t0;
            }
            status = fn(s->o.ctx, &req, &rep);
            if (s->o.on_leave)
                s->o.on_leave(s->o.ctx, &req);
        }
        if (status == 0 && rep.enc.err)
            status = rep.enc.err;
        if (status == -EBADMSG)
            log_warn("malformed request peer=%s op=%s", sc->peer, proto_op_name(h.opcode));
        if (status > 0)
            status = -EIO;
        uint64_t took = util_now_mono_ns() - t0;
        uint64_t wait = req.wait_ns < took ? req.wait_ns : took;
        stat_note(s, h.opcode, status, took - wait, wait);
        if (h.opcode != PROTO_OP_LEASE_POLL) {
            __atomic_fetch_add(&sc->requests, 1, __ATOMIC_RELAXED);
            __atomic_fetch_add(&sc->service_ns, took - wait, __ATOMIC_RELAXED);
            __atomic_fetch_add(&sc->wait_ns, wait, __ATOMIC_RELAXED);
        }
        if (cached) {
            bool other = status == 0 && rep.kept;
            rcache_end(s->replies, h.client_id, h.seq, status, other ? rep.kept : sc->reply,
                       other ? rep.kept_len : (uint32_t)rep.enc.len);
            if (s->drop_every &&
                atomic_fetch_add(&s->cached_served, 1) % s->drop_every == s->drop_every - 1) {
                log_warn("test: dropping the connection instead of the reply peer=%s op=%s",
                         sc->peer, proto_op_name(h.opcode));
                if (rep.bulk_in_file)
                    close(rep.bulk_fd);
                break;
            }
            if (s->die_every && status == 0 &&
                atomic_fetch_add(&s->cached_served, 1) % s->die_every == s->die_every - 1) {
                log_warn("test: exiting after a change was made, before its reply peer=%s op=%s",
                         sc->peer, proto_op_name(h.opcode));
                _exit(75);
            }
        }
        int fd = rep.bulk_in_file ? rep.bulk_fd : -1;
        int sent = reply_bulk(sc, &h, status, sc->reply, (uint32_t)rep.enc.len, rep.bulk,
                              rep.bulk_len, fd, rep.bulk_off);
        if (fd >= 0)
            close(fd);
        if (sent)
            break;
    }
}

static void *conn_main(void *arg)
{
    struct srv_conn *sc = arg;
    struct net_server *s = sc->srv;
    /* Reads have the handshake's deadline; this bounds its two sends. */
    frame_set_timeout(sc->fd, s->o.handshake_ms);
    if (handshake(sc))
        goto out;
    frame_set_timeout(sc->fd, 0);
    sc->payload = malloc(PROTO_MAX_REQ_PAYLOAD);
    sc->reply = malloc(PROTO_MAX_REP_PAYLOAD);
    if (!sc->payload || !sc->reply)
        goto out;
    conn_serve(sc);
out:
    if (s->o.on_close)
        s->o.on_close(s->o.ctx, sc);
    pthread_mutex_lock(&s->lock);
    clients_fold(s, sc);
    if (sc->prev)
        sc->prev->next = sc->next;
    else
        s->conns = sc->next;
    if (sc->next)
        sc->next->prev = sc->prev;
    s->nconns--;
    pthread_cond_broadcast(&s->drained);
    pthread_mutex_unlock(&s->lock);
    close(sc->fd);
    free(sc->payload);
    free(sc->bulk);
    free(sc->scratch);
    free(sc->reply);
    free(sc);
    return NULL;
}

static void *accept_main(void *arg)
{
    struct net_server *s = arg;
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            pthread_mutex_lock(&s->lock);
            bool stop = s->stopping;
            pthread_mutex_unlock(&s->lock);
            if (stop)
                break;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                log_warn("accept: %s; pausing", strerror(errno));
                usleep(100000);
                continue;
            }
            log_error("accept: %s", strerror(errno));
            break;
        }
        frame_tune(fd);
        char peer[64] = "?";
        char ip[INET6_ADDRSTRLEN] = "?";
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
            snprintf(peer, sizeof(peer), "%s:%u", ip, ntohs(a->sin_port));
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
            snprintf(peer, sizeof(peer), "[%s]:%u", ip, ntohs(a->sin6_port));
        }
        pthread_mutex_lock(&s->lock);
        if (s->stopping || s->nconns >= s->o.max_conns) {
            pthread_mutex_unlock(&s->lock);
            log_warn("refusing connection peer=%s reason=\"%s\"", peer,
                     s->stopping ? "stopping" : "too many connections");
            close(fd);
            continue;
        }
        struct srv_conn *sc = calloc(1, sizeof(*sc));
        if (!sc) {
            pthread_mutex_unlock(&s->lock);
            close(fd);
            continue;
        }
        sc->srv = s;
        sc->fd = fd;
        snprintf(sc->peer, sizeof(sc->peer), "%s", peer);
        snprintf(sc->ip, sizeof(sc->ip), "%s", ip);
        sc->next = s->conns;
        if (s->conns)
            s->conns->prev = sc;
        s->conns = sc;
        s->nconns++;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 512 << 10);
        int rc = pthread_create(&sc->thread, &attr, conn_main, sc);
        pthread_attr_destroy(&attr);
        if (rc) {
            s->conns = sc->next;
            if (sc->next)
                sc->next->prev = NULL;
            s->nconns--;
            close(fd);
            free(sc);
            log_warn("cannot start a connection thread: %s", strerror(rc));
        }
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

int net_server_start(const struct net_server_opts *o, struct net_server **out)
{
    struct net_server *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->o = *o;
    if (s->o.max_conns <= 0)
        s->o.max_conns = 1024;
    if (s->o.handshake_ms <= 0)
        s->o.handshake_ms = HANDSHAKE_TIMEOUT_MS;
    auth_random(&s->server_id, sizeof(s->server_id));
    s->started_ns = util_now_mono_ns();
    for (int i = 0; i < PROTO_OP_MAX && !s->replies; i++)
        if (s->o.cached[i] && rcache_create(65536, 64ull << 20, &s->replies)) {
            free(s);
            return -ENOMEM;
        }
    const char *drop = getenv("STRIA_TEST_DROP_REPLY_EVERY");
    if (drop && s->replies)
        s->drop_every = strtoull(drop, NULL, 10);
    const char *die = getenv("STRIA_TEST_DIE_BEFORE_REPLY_EVERY");
    if (die && s->replies)
        s->die_every = strtoull(die, NULL, 10);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->drained, NULL);
    int rc;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *res;
    char portstr[8];
    snprintf(portstr, sizeof(portstr), "%u", o->port);
    if ((rc = getaddrinfo(o->host, portstr, &hints, &res))) {
        log_error("cannot resolve listen address %s: %s", o->host, gai_strerror(rc));
        rcache_destroy(s->replies);
        free(s);
        return -EINVAL;
    }
    s->lfd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (s->lfd < 0 || bind(s->lfd, res->ai_addr, res->ai_addrlen) < 0 || listen(s->lfd, 1024) < 0) {
        rc = -errno;
        log_error("cannot listen on %s:%u: %s", o->host, o->port, strerror(errno));
        freeaddrinfo(res);
        if (s->lfd >= 0)
            close(s->lfd);
        rcache_destroy(s->replies);
        free(s);
        return rc;
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(s->lfd, (struct sockaddr *)&ss, &sl);
    s->port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                            : ((struct sockaddr_in6 *)&ss)->sin6_port);
    if ((rc = pthread_create(&s->accept_thread, NULL, accept_main, s))) {
        close(s->lfd);
        free(s);
        return -rc;
    }
    *out = s;
    return 0;
}

uint16_t net_server_port(const struct net_server *s)
{
    return s->port;
}

void net_server_stop(struct net_server *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_mutex_unlock(&s->lock);
    shutdown(s->lfd, SHUT_RDWR);
    pthread_join(s->accept_thread, NULL);
    close(s->lfd);
    pthread_mutex_lock(&s->lock);
    for (struct srv_conn *c = s->conns; c; c = c->next)
        shutdown(c->fd, SHUT_RDWR);
    while (s->nconns > 0)
        pthread_cond_wait(&s->drained, &s->lock);
    pthread_mutex_unlock(&s->lock);
    rcache_destroy(s->replies);
    free(s);
}
