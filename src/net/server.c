/*
 * The server side of the transport (server.h): an event loop that owns
 * every connection, and workers that serve whole requests (srv_work.c).
 *
 * One thread, the loop, waits in epoll on the listening socket and on
 * every connection that is not being served. It accepts, runs the
 * handshake (HELLO sent at accept; AUTH read and checked, all before one
 * deadline) and reads each request, header then payload then bulk, with
 * non-blocking reads into pooled buffers, as the bytes come: no peer can
 * make it wait. A whole request goes to the fair queue, and the
 * connection leaves epoll (EPOLLONESHOT) until a worker has sent its
 * reply and arms it again, or until a request its handler parked (a long
 * poll, srv_park.c) has been answered. An idle connection is thus a small
 * struct and its socket; its buffers exist only while a request is in it.
 *
 * Lengths are checked in proto_hdr_decode before any read or allocation.
 * A bad header (wrong magic, checksum, oversize) closes the connection:
 * after it the byte stream has no trustworthy framing. A bad payload gets
 * an error reply and the connection goes on. A request whose bytes have
 * not all come within request_ms of its first, like a handshake past its
 * deadline, closes the connection; so does a reply the peer does not take
 * within request_ms (the socket's send timeout).
 *
 * Messages go through frame.c; this file never calls the client side.
 */
#include "server_int.h"

#include "frame.h"
#include "rcache.h"

#include "../common/log.h"
#include "../common/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define HANDSHAKE_TIMEOUT_MS 5000  /* net_server_opts.handshake_ms's default */
#define REQUEST_TIMEOUT_MS   60000 /* net_server_opts.request_ms's default */
#define MAX_WORKERS          64    /* net_server_opts.max_workers's default */
#define AUTH_MAX_PAYLOAD     1024
#define DRAIN_LEN            65536
#define LOOP_EVENTS          256
#define ACCEPTS_PER_WAKE     256
#define TICK_MS              100

/* ---- sending ---- */

int srv_reply(int fd, const struct proto_hdr *req, int status, const void *payload, uint32_t plen,
              const void *bulk, uint32_t blen, int bulk_fd, uint64_t bulk_off, int flags)
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
    uint8_t hb[PROTO_HDR_LEN];
    proto_hdr_encode(&h, hb);
    bool from_file = bulk_fd >= 0 && h.bulk_len;
    struct iovec iov[3] = {{hb, PROTO_HDR_LEN},
                           {(void *)payload, h.payload_len},
                           {(void *)bulk, from_file ? 0 : h.bulk_len}};
    /* With the bulk in a file, header and payload are held back to go
     * with the file's data. */
    int rc = frame_send_iov(fd, iov, 3, flags | (from_file ? MSG_MORE : 0));
    return rc || !from_file ? rc : frame_send_file(fd, bulk_fd, bulk_off, h.bulk_len);
}

/* ---- connections ---- */

static void time_add(struct srv_conn *sc, int64_t deadline_ns)
{
    struct net_server *s = sc->srv;
    sc->deadline_ns = deadline_ns;
    if (sc->timed)
        return;
    sc->timed = true;
    sc->tprev = NULL;
    sc->tnext = s->timed;
    if (s->timed)
        s->timed->tprev = sc;
    s->timed = sc;
}

static void time_remove(struct srv_conn *sc)
{
    struct net_server *s = sc->srv;
    if (!sc->timed)
        return;
    if (sc->tprev)
        sc->tprev->tnext = sc->tnext;
    else
        s->timed = sc->tnext;
    if (sc->tnext)
        sc->tnext->tprev = sc->tprev;
    sc->timed = false;
}

void srv_conn_close(struct srv_conn *sc)
{
    struct net_server *s = sc->srv;
    if (s->o.on_close)
        s->o.on_close(s->o.ctx, sc);
    pthread_mutex_lock(&s->lock);
    srv_park_close(sc);
    srv_clients_fold(s, sc);
    if (sc->prev)
        sc->prev->next = sc->next;
    else
        s->conns = sc->next;
    if (sc->next)
        sc->next->prev = sc->prev;
    s->nconns--;
    pthread_cond_broadcast(&s->drained);
    pthread_mutex_unlock(&s->lock);
    close(sc->fd); /* which takes it out of epoll */
    if (srv_payload_pooled(sc))
        srv_buf_put(s, sc->payload, sc->h.payload_len);
    srv_buf_put(s, sc->bulk, sc->h.bulk_len);
    free(sc);
}

/* The loop closes one of its own connections. */
static void loop_close(struct srv_conn *sc)
{
    time_remove(sc);
    srv_conn_close(sc);
}

static int arm(struct srv_conn *sc, int op)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.ptr = sc};
    return epoll_ctl(sc->srv->ep, op, sc->fd, &ev) ? -errno : 0;
}

void srv_rearm(struct srv_conn *sc)
{
    int rc = arm(sc, EPOLL_CTL_MOD);
    if (rc) {
        log_warn("closing connection peer=%s reason=\"%s\"", sc->peer, log_err(rc));
        srv_conn_close(sc);
    }
}

/* ---- the handshake ---- */

static int send_hello(struct srv_conn *sc)
{
    struct net_server *s = sc->srv;
    uint8_t buf[256];
    int rc = auth_random(sc->nonce, sizeof(sc->nonce));
    if (rc)
        return rc;
    /* Version 3 put checksums into WRITE and READ, version 4 READs sent
     * unread: older peers cannot talk to this one (PROTO_MIN_VERSION). */
    struct proto_hello_req hello = {.min_version = PROTO_MIN_VERSION,
                                    .max_version = PROTO_VERSION,
                                    .nonce = {sc->nonce, AUTH_NONCE_LEN},
                                    .server_id = s->server_id};
    struct proto_enc e;
    proto_enc_init(&e, buf, sizeof(buf));
    proto_enc_hello_req(&e, &hello);
    uint8_t hb[PROTO_HDR_LEN];
    struct proto_hdr m = {.magic = PROTO_MAGIC,
                          .version = PROTO_VERSION,
                          .opcode = PROTO_OP_HELLO,
                          .payload_len = (uint32_t)e.len};
    proto_hdr_encode(&m, hb);
    struct iovec iov[2] = {{hb, PROTO_HDR_LEN}, {buf, e.len}};
    return frame_send_iov(sc->fd, iov, 2, MSG_DONTWAIT);
}

/* The AUTH read whole: check it and answer. 0: authenticated. */
static int auth_finish(struct srv_conn *sc)
{
    struct net_server *s = sc->srv;
    struct proto_hdr *h = &sc->h;
    struct proto_dec d;
    struct proto_auth_req a;
    proto_dec_init(&d, sc->payload, h->payload_len);
    if (proto_dec_auth_req(&d, &a) || a.mac.len != AUTH_MAC_LEN) {
        log_warn("auth refused peer=%s reason=\"malformed AUTH\"", sc->peer);
        srv_reply(sc->fd, h, -EBADMSG, NULL, 0, NULL, 0, -1, 0, MSG_DONTWAIT);
        return -EACCES;
    }
    if (auth_verify(s->o.key, sc->nonce, h->client_id, a.mac.p)) {
        log_warn("auth refused peer=%s reason=\"wrong cluster key\" client=%016llx", sc->peer,
                 (unsigned long long)h->client_id);
        srv_reply(sc->fd, h, -EACCES, NULL, 0, NULL, 0, -1, 0, MSG_DONTWAIT);
        return -EACCES;
    }
    sc->client_id = h->client_id;
    uint8_t buf[64];
    struct proto_enc e;
    struct proto_auth_rep ar = {.version = a.version < PROTO_VERSION ? a.version : PROTO_VERSION};
    proto_enc_init(&e, buf, sizeof(buf));
    proto_enc_auth_rep(&e, &ar);
    int rc = srv_reply(sc->fd, h, 0, buf, (uint32_t)e.len, NULL, 0, -1, 0, MSG_DONTWAIT);
    if (rc)
        return rc;
    sc->authed = true;
    return 0;
}

/* ---- reading ---- */

/* A header read whole: check it and get buffers for what follows. */
static int hdr_done(struct srv_conn *sc)
{
    struct net_server *s = sc->srv;
    struct proto_hdr *h = &sc->h;
    int rc = proto_hdr_decode(sc->hb, h);
    if (rc) {
        if (!sc->authed)
            log_warn("auth refused peer=%s reason=\"%s\"", sc->peer,
                     rc == -EBADMSG ? "not a stria message" : "oversized message");
        else
            log_warn("closing connection peer=%s reason=\"%s\"", sc->peer,
                     rc == -EBADMSG ? "bad header (magic or checksum)" : "oversized message");
        return rc;
    }
    if (!sc->authed) {
        if (h->opcode != PROTO_OP_AUTH || h->bulk_len || h->payload_len > AUTH_MAX_PAYLOAD) {
            log_warn("auth refused peer=%s reason=\"%s opcode=%u before authenticating\"", sc->peer,
                     "unexpected", h->opcode);
            return -EACCES;
        }
    } else if (h->flags & PROTO_FLAG_REPLY) {
        log_warn("closing connection peer=%s reason=\"reply sent as a request\"", sc->peer);
        return -EPROTO;
    } else if (!(h->opcode < PROTO_OP_MAX && s->o.handlers[h->opcode]) &&
               h->opcode != PROTO_OP_STATS) {
        log_warn("unsupported request peer=%s opcode=%u", sc->peer, h->opcode);
        sc->refuse = -EOPNOTSUPP;
    }
    if (h->payload_len && !(sc->payload = srv_buf_get(s, h->payload_len))) {
        log_warn("closing connection peer=%s reason=\"no memory for a request\"", sc->peer);
        return -ENOMEM;
    }
    if (h->bulk_len && !sc->refuse && !(sc->bulk = srv_buf_get(s, h->bulk_len)))
        sc->refuse = -ENOMEM; /* its bulk is dropped as it comes */
    return 0;
}

/* Read what sc's peer has sent. Returns 0 when it must wait for more, 1
 * when its request is whole and queued, or a negative errno to close. */
static int conn_read(struct srv_conn *sc)
{
    struct net_server *s = sc->srv;
    for (;;) {
        uint32_t total = sc->part == PART_HDR       ? PROTO_HDR_LEN
                         : sc->part == PART_PAYLOAD ? sc->h.payload_len
                                                    : sc->h.bulk_len;
        if (sc->got < total) {
            uint32_t want = total - sc->got;
            uint8_t *dst = sc->part == PART_HDR       ? sc->hb + sc->got
                           : sc->part == PART_PAYLOAD ? sc->payload + sc->got
                           : sc->part == PART_BULK    ? sc->bulk + sc->got
                                                      : s->drain;
            if (sc->part == PART_DRAIN && want > DRAIN_LEN)
                want = DRAIN_LEN;
            ssize_t r = recv(sc->fd, dst, want, MSG_DONTWAIT);
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
            }
            if (r == 0)
                return -ECONNRESET;
            if (sc->part == PART_HDR && sc->got == 0 && sc->authed)
                time_add(sc, (int64_t)util_now_mono_ns() + (int64_t)s->o.request_ms * 1000000);
            sc->got += (uint32_t)r;
            continue;
        }
        /* The part is whole: on to the next. */
        if (sc->part == PART_HDR) {
            int rc = hdr_done(sc);
            if (rc)
                return rc;
        }
        sc->got = 0;
        if (sc->part == PART_HDR && sc->h.payload_len) {
            sc->part = PART_PAYLOAD;
            continue;
        }
        if ((sc->part == PART_HDR || sc->part == PART_PAYLOAD) && sc->h.bulk_len) {
            sc->part = sc->refuse ? PART_DRAIN : PART_BULK;
            continue;
        }
        sc->part = PART_HDR;
        time_remove(sc);
        if (!sc->authed) {
            int rc = auth_finish(sc);
            srv_buf_put(s, sc->payload, sc->h.payload_len);
            sc->payload = NULL;
            if (rc)
                return rc;
            continue;
        }
        sc->ready_ns = util_now_mono_ns();
        srv_enqueue(s, sc);
        return 1;
    }
}

/* Read all of n bytes that are in sc's socket already (a worker's
 * srv_read_next): 0, or a negative errno (a short read is -EIO). */
static int read_queued(int fd, void *dst, uint32_t n)
{
    uint32_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, (uint8_t *)dst + got, n - got, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 ? -ECONNRESET : errno == EAGAIN ? -EIO : -errno;
        got += (uint32_t)r;
    }
    return 0;
}

int srv_read_next(struct srv_conn *sc)
{
    struct net_server *s = sc->srv;
    uint8_t hb[PROTO_HDR_LEN];
    struct proto_hdr h;
    int avail = 0;
    /* Whole and plain, or left to the loop, which reads, checks and
     * refuses as the bytes come. */
    if (recv(sc->fd, hb, sizeof(hb), MSG_PEEK | MSG_DONTWAIT) != (ssize_t)sizeof(hb) ||
        proto_hdr_decode(hb, &h) || (h.flags & PROTO_FLAG_REPLY) ||
        !(h.opcode < PROTO_OP_MAX && s->o.handlers[h.opcode]) ||
        ioctl(sc->fd, FIONREAD, &avail) < 0 ||
        (uint64_t)avail < (uint64_t)PROTO_HDR_LEN + h.payload_len + h.bulk_len)
        return 0;
    int rc = read_queued(sc->fd, sc->hb, PROTO_HDR_LEN);
    if (rc == 0)
        rc = hdr_done(sc);
    if (rc == 0 && h.payload_len)
        rc = read_queued(sc->fd, sc->payload, h.payload_len);
    if (rc == 0 && h.bulk_len && !sc->refuse)
        rc = read_queued(sc->fd, sc->bulk, h.bulk_len);
    for (uint32_t left = sc->refuse ? h.bulk_len : 0; rc == 0 && left;) {
        uint8_t drop[4096]; /* a refused bulk (no memory for it) */
        uint32_t n = left < sizeof(drop) ? left : (uint32_t)sizeof(drop);
        rc = read_queued(sc->fd, drop, n);
        left -= n;
    }
    sc->part = PART_HDR;
    sc->got = 0;
    sc->ready_ns = util_now_mono_ns();
    return rc ? rc : 1;
}

/* ---- the loop ---- */

/* Read what came on sc. Out of line: with req_serve, what the benchmarks
 * count as a request's cost (callgrind --toggle-collect). */
static __attribute__((noinline)) void conn_event(struct srv_conn *sc)
{
    int rc = conn_read(sc);
    if (rc == 0)
        rc = arm(sc, EPOLL_CTL_MOD);
    if (rc < 0) {
        if (rc != -ECONNRESET && rc != -EACCES && rc != -EBADMSG && rc != -EMSGSIZE &&
            rc != -EPROTO && rc != -ENOMEM)
            log_warn("closing connection peer=%s reason=\"%s\"", sc->peer, log_err(rc));
        loop_close(sc);
    }
}

static void peer_name(const struct sockaddr_storage *ss, char *peer, size_t plen, char *ip,
                      size_t iplen)
{
    snprintf(peer, plen, "?");
    snprintf(ip, iplen, "?");
    char a[INET6_ADDRSTRLEN];
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &v4->sin_addr, a, sizeof(a));
        snprintf(ip, iplen, "%s", a);
        snprintf(peer, plen, "%s:%u", a, ntohs(v4->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &v6->sin6_addr, a, sizeof(a));
        snprintf(ip, iplen, "%s", a);
        snprintf(peer, plen, "[%s]:%u", a, ntohs(v6->sin6_port));
    }
}

/* Accept what is waiting. Returns false when accepting must pause (out of
 * descriptors or memory: the backlog waits, and the loop serves on). */
static bool accept_ready(struct net_server *s)
{
    for (int i = 0; i < ACCEPTS_PER_WAKE; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return true;
            log_warn("accept: %s; pausing", strerror(errno));
            return false;
        }
        frame_tune(fd);
        /* A reply the peer does not take fails after this, and closes. */
        frame_set_timeout(fd, s->o.request_ms);
        char peer[64], ip[INET6_ADDRSTRLEN];
        peer_name(&ss, peer, sizeof(peer), ip, sizeof(ip));
        struct srv_conn *sc = NULL;
        pthread_mutex_lock(&s->lock);
        bool full = s->nconns >= s->o.max_conns;
        if (!full && (sc = calloc(1, sizeof(*sc)))) {
            sc->srv = s;
            sc->fd = fd;
            sc->next = s->conns;
            if (s->conns)
                s->conns->prev = sc;
            s->conns = sc;
            s->nconns++;
        }
        pthread_mutex_unlock(&s->lock);
        if (!sc) {
            log_warn("refusing connection peer=%s reason=\"%s\"", peer,
                     full ? "too many connections" : "no memory");
            close(fd);
            continue;
        }
        snprintf(sc->peer, sizeof(sc->peer), "%s", peer);
        snprintf(sc->ip, sizeof(sc->ip), "%s", ip);
        time_add(sc, (int64_t)util_now_mono_ns() + (int64_t)s->o.handshake_ms * 1000000);
        int rc = send_hello(sc);
        if (rc == 0)
            rc = arm(sc, EPOLL_CTL_ADD);
        if (rc) {
            log_warn("closing connection peer=%s reason=\"HELLO: %s\"", sc->peer, log_err(rc));
            loop_close(sc);
        }
    }
    return true;
}

/* Close the connections whose handshake or request is past its deadline. */
static void deadlines(struct net_server *s, int64_t now)
{
    for (struct srv_conn *sc = s->timed, *next; sc; sc = next) {
        next = sc->tnext;
        if (sc->deadline_ns > now)
            continue;
        if (!sc->authed)
            log_warn("auth refused peer=%s reason=\"no AUTH within %d ms\"", sc->peer,
                     s->o.handshake_ms);
        else
            log_warn("closing connection peer=%s reason=\"request not whole within %d ms\"",
                     sc->peer, s->o.request_ms);
        loop_close(sc);
    }
}

static void *loop_main(void *arg)
{
    struct net_server *s = arg;
    struct epoll_event evs[LOOP_EVENTS];
    int64_t accept_paused_until = 0, next_tick = 0;
    for (;;) {
        bool parked = __atomic_load_n(&s->nparked, __ATOMIC_RELAXED) > 0;
        int timeout = s->timed || parked || accept_paused_until ? TICK_MS : -1;
        int n = epoll_wait(s->ep, evs, LOOP_EVENTS, timeout);
        if (n < 0 && errno != EINTR) {
            log_error("epoll_wait: %s", strerror(errno));
            break;
        }
        bool stop = false;
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &s->wake_fd) {
                /* Stopping, or the first request parked: ticks begin. */
                uint64_t v;
                if (read(s->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
                    log_warn("cannot read the event loop's wake: %s", strerror(errno));
                pthread_mutex_lock(&s->lock);
                stop = s->stopping;
                pthread_mutex_unlock(&s->lock);
            } else if (p == &s->lfd) {
                if (!accept_ready(s)) {
                    struct epoll_event ev = {.events = 0, .data.ptr = &s->lfd};
                    epoll_ctl(s->ep, EPOLL_CTL_MOD, s->lfd, &ev);
                    accept_paused_until = (int64_t)util_now_mono_ns() + TICK_MS * 1000000ll;
                }
            } else
                conn_event(p);
        }
        if (stop)
            break;
        int64_t now = (int64_t)util_now_mono_ns();
        if (accept_paused_until && now >= accept_paused_until) {
            struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &s->lfd};
            epoll_ctl(s->ep, EPOLL_CTL_MOD, s->lfd, &ev);
            accept_paused_until = 0;
        }
        if ((s->timed || parked) && now >= next_tick) {
            deadlines(s, now);
            srv_park_expire(s, now);
            next_tick = now + TICK_MS * 1000000ll;
        }
    }
    return NULL;
}

/* ---- start and stop ---- */

#define LISTEN_BUSY_MS 5000

static int listen_on(struct net_server *s, const struct net_server_opts *o)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *res;
    char portstr[8];
    snprintf(portstr, sizeof(portstr), "%u", o->port);
    int rc = getaddrinfo(o->host, portstr, &hints, &res);
    if (rc) {
        log_error("cannot resolve listen address %s: %s", o->host, gai_strerror(rc));
        return -EINVAL;
    }
    s->lfd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (s->lfd >= 0)
        setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    /* A port held for a moment (a daemon restarted while the one it
     * replaces is still going, another program probing ports to pick
     * one) is waited for, up to LISTEN_BUSY_MS; one held for good fails
     * after that. */
    int r = -1;
    bool bound = false;
    for (int waited = 0; s->lfd >= 0; waited += 100) {
        if (!bound)
            bound = (r = bind(s->lfd, res->ai_addr, res->ai_addrlen)) == 0;
        /* Two sockets with SO_REUSEADDR may bind one port while neither
         * listens; the second listen() then finds it in use. The kernel
         * caps the backlog at net.core.somaxconn. */
        if (bound)
            r = listen(s->lfd, 4096);
        if (r == 0 || errno != EADDRINUSE || waited >= LISTEN_BUSY_MS)
            break;
        if (waited == 0)
            log_info("%s:%u is in use; trying again for %d s", o->host, o->port,
                     LISTEN_BUSY_MS / 1000);
        usleep(100 * 1000);
    }
    if (s->lfd < 0 || r < 0) {
        rc = -errno;
        log_error("cannot listen on %s:%u: %s", o->host, o->port, strerror(errno));
        freeaddrinfo(res);
        return rc;
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(s->lfd, (struct sockaddr *)&ss, &sl);
    s->port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                            : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}

static void server_free(struct net_server *s)
{
    srv_queue_free(s); /* before the connections it names are freed */
    while (s->conns)
        srv_conn_close(s->conns);
    for (unsigned c = 0; c < SRV_POOL_CLASSES; c++) {
        for (uint32_t i = 0; i < s->pool[c].n; i++)
            free(s->pool[c].free[i]);
        free(s->pool[c].free);
    }
    if (s->lfd >= 0)
        close(s->lfd);
    if (s->ep >= 0)
        close(s->ep);
    if (s->wake_fd >= 0)
        close(s->wake_fd);
    free(s->drain);
    rcache_destroy(s->replies);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->qlock);
    pthread_mutex_destroy(&s->plock);
    pthread_cond_destroy(&s->drained);
    pthread_cond_destroy(&s->qcond);
    pthread_cond_destroy(&s->qdone);
    free(s);
}

int net_server_start(const struct net_server_opts *o, struct net_server **out)
{
    struct net_server *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->o = *o;
    s->lfd = s->ep = s->wake_fd = -1;
    if (s->o.max_conns <= 0)
        s->o.max_conns = 1024;
    if (s->o.handshake_ms <= 0)
        s->o.handshake_ms = HANDSHAKE_TIMEOUT_MS;
    if (s->o.request_ms <= 0)
        s->o.request_ms = REQUEST_TIMEOUT_MS;
    s->max_workers = s->o.max_workers > 0 ? s->o.max_workers : MAX_WORKERS;
    auth_random(&s->server_id, sizeof(s->server_id));
    s->started_ns = util_now_mono_ns();
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->qlock, NULL);
    pthread_mutex_init(&s->plock, NULL);
    pthread_cond_init(&s->drained, NULL);
    /* Workers' idle waits count on the monotonic clock. */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->qcond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&s->qdone, NULL);
    int rc = -ENOMEM;
    for (int i = 0; i < PROTO_OP_MAX && !s->replies; i++)
        if (s->o.cached[i] && rcache_create(65536, 64ull << 20, &s->replies))
            goto fail;
    const char *drop = getenv("STRIA_TEST_DROP_REPLY_EVERY");
    if (drop && s->replies)
        s->drop_every = strtoull(drop, NULL, 10);
    /* STRIA_TEST_DROP_REPLY_OP=NAME: only that kind's replies count. */
    const char *drop_op = getenv("STRIA_TEST_DROP_REPLY_OP");
    for (uint16_t op = 1; drop_op && op < PROTO_OP_MAX && !s->drop_op; op++)
        if (proto_op_name(op) && strcmp(proto_op_name(op), drop_op) == 0)
            s->drop_op = op;
    const char *die = getenv("STRIA_TEST_DIE_BEFORE_REPLY_EVERY");
    if (die && s->replies)
        s->die_every = strtoull(die, NULL, 10);
    if (!(s->drain = malloc(DRAIN_LEN)))
        goto fail;
    if ((rc = listen_on(s, o)))
        goto fail;
    s->ep = epoll_create1(EPOLL_CLOEXEC);
    s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &s->lfd};
    struct epoll_event wev = {.events = EPOLLIN, .data.ptr = &s->wake_fd};
    if (s->ep < 0 || s->wake_fd < 0 || epoll_ctl(s->ep, EPOLL_CTL_ADD, s->lfd, &lev) ||
        epoll_ctl(s->ep, EPOLL_CTL_ADD, s->wake_fd, &wev)) {
        rc = -errno;
        log_error("cannot start the event loop: %s", strerror(errno));
        goto fail;
    }
    if ((rc = srv_workers_start(s)))
        goto fail_workers;
    if ((rc = -pthread_create(&s->loop_thread, NULL, loop_main, s)))
        goto fail_workers;
    *out = s;
    return 0;
fail_workers:
    srv_workers_stop(s);
fail:
    server_free(s);
    return rc;
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
    uint64_t one = 1;
    if (write(s->wake_fd, &one, sizeof(one)) < 0)
        log_warn("cannot wake the event loop: %s", strerror(errno));
    pthread_join(s->loop_thread, NULL);
    /* Replies being sent fail at once; handlers finish. */
    pthread_mutex_lock(&s->lock);
    for (struct srv_conn *c = s->conns; c; c = c->next)
        shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_unlock(&s->lock);
    srv_workers_stop(s);
    server_free(s);
}
