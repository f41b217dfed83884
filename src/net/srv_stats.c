/*
 * What a server's requests cost (server_int.h): the figures STATS and the
 * metrics endpoint report.
 *
 * Every request's cost is split in two: the time it waited (net_req.wait_ns:
 * what queued it adds, the fair queue before a worker took it, and the gate
 * before the handler) and the rest, its service. Per client, each
 * connection counts its own requests (no lock on the way); a connection
 * that closes folds its counts into a table of at most SRV_CLIENTS_KEPT
 * clients, which forgets the one with the fewest requests to make room, so
 * no peer can make it grow.
 */
#include "server_int.h"

#include "../common/log.h"
#include "../common/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

void srv_stat_note(struct net_server *s, uint16_t op, int status, uint64_t ns, uint64_t wait)
{
    struct srv_op_stat *st = &s->stats[op];
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
void srv_clients_fold(struct net_server *s, const struct srv_conn *sc)
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
    if (s->ngone < SRV_CLIENTS_KEPT)
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

int net_server_figures(struct net_server *s, struct net_server_figures *out, bool clients)
{
    memset(out, 0, sizeof(*out));
    out->uptime_ns = util_now_mono_ns() - s->started_ns;
    pthread_mutex_lock(&s->lock);
    out->connections = s->nconns;
    out->parked = s->nparked;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&s->qlock);
    out->queued = (int)s->nqueued;
    out->workers = s->nworkers;
    pthread_mutex_unlock(&s->qlock);
    for (uint16_t op = 0; op < PROTO_OP_MAX; op++) {
        const struct srv_op_stat *st = &s->stats[op];
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
    return clients ? clients_top(s, out) : 0;
}

/* STATS, answered by every server unless its own table says otherwise. */
int srv_h_stats(struct net_server *s, struct net_req *req, struct net_rep *rep)
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
    int rc = net_server_figures(s, f, true);
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
