/*
 * The client side of the transport (client.h): connect, answer the
 * server's challenge, then calls, one at a time per connection.
 *
 * A call is a request sent whole (frame.c) and its reply read straight
 * into the connection's payload buffer and the caller's bulk buffer; the
 * typed net_call_* stubs are generated from PROTO_MESSAGES. A wait for a
 * reply polls in 100 ms slices while the thread has a cancel flag, so an
 * interrupted caller stops waiting. It never retries: a transport failure
 * is reported and the caller (libstria's pools) decides.
 */
#include "client.h"

#include "frame.h"

#include "../common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int net_tcp_connect(const char *host, uint16_t port, int timeout_ms)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
    char portstr[8];
    snprintf(portstr, sizeof(portstr), "%u", port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc)
        return rc == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
    int fd = -1;
    rc = -ECONNREFUSED;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            rc = -errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            rc = 0;
        } else if (errno == EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int pr = poll(&p, 1, timeout_ms);
            int err = 0;
            socklen_t el = sizeof(err);
            if (pr == 0)
                rc = -ETIMEDOUT;
            else if (pr < 0)
                rc = -errno;
            else {
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
                rc = err ? -err : 0;
            }
        } else {
            rc = -errno;
        }
        if (rc == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (rc)
        return rc;
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    frame_tune(fd);
    return fd;
}

static __thread const volatile int *thread_cancel;

const volatile int *net_set_cancel(const volatile int *flag)
{
    const volatile int *was = thread_cancel;
    thread_cancel = flag;
    return was;
}

bool net_cancelled(void)
{
    return thread_cancel && *thread_cancel;
}

/* Wait until a reply starts to arrive, in slices, so that a cancelled
 * caller stops waiting; the socket's own timeout still bounds the wait. */
static int wait_reply(struct net_conn *c, const volatile int *cancel)
{
    int waited = 0;
    for (;;) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int n = poll(&p, 1, 100);
        if (n > 0)
            return 0; /* readable, closed or failed: the read says which */
        if (n < 0 && errno != EINTR)
            return -errno;
        if (*cancel)
            return -EINTR;
        waited += 100;
        if (c->timeout_ms && waited >= c->timeout_ms)
            return -EAGAIN;
    }
}
/* The next header on c, waited for in slices while the thread may be
 * cancelled (net_set_cancel). */
static int recv_hdr_wait(struct net_conn *c, struct proto_hdr *h)
{
    int rc = thread_cancel ? wait_reply(c, thread_cancel) : 0;
    return rc ? rc : frame_recv_hdr(c->fd, h);
}

int net_connect(const char *host, uint16_t port, const struct auth_key *key, uint64_t client_id,
                const char *name, int timeout_ms, struct net_conn **out)
{
    struct net_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->fd = -1;
    c->client_id = client_id;
    c->next_reqid = 1;
    snprintf(c->peer, sizeof(c->peer), "%s:%u", host, port);
    int rc = -ENOMEM;
    if (!(c->rx = malloc(PROTO_MAX_REP_PAYLOAD)))
        goto fail;
    c->fd = net_tcp_connect(host, port, timeout_ms);
    if (c->fd < 0) {
        rc = c->fd;
        goto fail;
    }
    net_set_timeout(c, timeout_ms);
    /* The server speaks first: HELLO with the challenge. */
    struct proto_hdr h;
    if ((rc = recv_hdr_wait(c, &h)))
        goto fail;
    if (h.opcode != PROTO_OP_HELLO || h.bulk_len || h.payload_len > 1024) {
        rc = -EPROTO;
        goto fail;
    }
    if ((rc = util_read_full(c->fd, c->rx, h.payload_len)))
        goto fail;
    struct proto_dec d;
    struct proto_hello_req hello;
    proto_dec_init(&d, c->rx, h.payload_len);
    if (proto_dec_hello_req(&d, &hello) || hello.nonce.len != AUTH_NONCE_LEN) {
        rc = -EPROTO;
        goto fail;
    }
    /* Either side's oldest version above the other's newest: no common
     * one. A server older than PROTO_MIN_VERSION would misread this
     * client's READs (protocol.md, "Version 4"). */
    if (hello.min_version > PROTO_VERSION || hello.max_version < PROTO_MIN_VERSION) {
        rc = -EPROTONOSUPPORT;
        goto fail;
    }
    c->version = hello.max_version < PROTO_VERSION ? hello.max_version : PROTO_VERSION;
    uint8_t mac[AUTH_MAC_LEN];
    auth_mac(key, hello.nonce.p, client_id, mac);
    struct proto_auth_req a = {
        .version = c->version, .mac = {mac, AUTH_MAC_LEN}, .name = proto_str_c(name ? name : "")};
    struct proto_auth_rep ar;
    bool transport = false;
    rc = net_call_auth(c, &a, &ar, NULL, 0, NULL, 0, NULL, &transport);
    if (rc)
        goto fail;
    net_set_timeout(c, 0);
    *out = c;
    return 0;
fail:
    net_close(c);
    return rc;
}

void net_close(struct net_conn *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    free(c->rx);
    free(c);
}

int net_set_timeout(struct net_conn *c, int ms)
{
    c->timeout_ms = ms;
    return frame_set_timeout(c->fd, ms);
}

static _Atomic uint64_t seq_counter = 1;

uint64_t net_next_seq(void)
{
    return atomic_fetch_add(&seq_counter, 1);
}

int net_send(struct net_conn *c, uint16_t op, const void *payload, uint32_t plen, const void *bulk,
             uint32_t blen, uint64_t *reqid)
{
    struct proto_hdr h = {.magic = PROTO_MAGIC,
                          .version = c->version ? c->version : PROTO_VERSION,
                          .opcode = op,
                          .reqid = c->next_reqid++,
                          .client_id = c->client_id,
                          .payload_len = plen,
                          .bulk_len = blen};
    h.seq = c->seq ? c->seq : net_next_seq();
    h.flags = (uint32_t)c->tag << PROTO_TAG_SHIFT | (c->resend ? PROTO_FLAG_RESEND : 0);
    c->seq = 0;
    c->tag = 0;
    c->resend = false;
    *reqid = h.reqid;
    return frame_send(c->fd, &h, payload, bulk);
}

int net_recv(struct net_conn *c, uint64_t reqid, void *bulk_dst, uint32_t bulk_cap,
             uint32_t *bulk_len, bool *transport)
{
    struct proto_hdr h;
    int rc = recv_hdr_wait(c, &h);
    if (rc)
        goto broken;
    if (!(h.flags & PROTO_FLAG_REPLY) || h.reqid != reqid || h.bulk_len > bulk_cap) {
        rc = -EPROTO;
        goto broken;
    }
    if ((rc = util_read_full(c->fd, c->rx, h.payload_len)))
        goto broken;
    if (h.bulk_len && (rc = util_read_full(c->fd, bulk_dst, h.bulk_len)))
        goto broken;
    c->rx_len = h.payload_len;
    if (bulk_len)
        *bulk_len = h.bulk_len;
    if (h.status > 0)
        return -EPROTO;
    return h.status;
broken:
    if (transport)
        *transport = true;
    return rc;
}

int net_call_raw(struct net_conn *c, uint16_t op, const void *payload, uint32_t plen,
                 const void *bulk, uint32_t blen, void *bulk_dst, uint32_t bulk_cap,
                 uint32_t *bulk_len, bool *transport)
{
    uint64_t reqid;
    int rc = net_send(c, op, payload, plen, bulk, blen, &reqid);
    if (rc) {
        if (transport)
            *transport = true;
        return rc;
    }
    return net_recv(c, reqid, bulk_dst, bulk_cap, bulk_len, transport);
}

#define NET_X_CALL_IMPL(NAME, num, lname)                                                          \
    int net_call_##lname(struct net_conn *c, const struct proto_##lname##_req *req,                \
                         struct proto_##lname##_rep *rep, const void *bulk, uint32_t blen,         \
                         void *bulk_dst, uint32_t bulk_cap, uint32_t *bulk_len, bool *transport)   \
    {                                                                                              \
        uint8_t buf[PROTO_MAX_REQ_PAYLOAD];                                                        \
        struct proto_enc e;                                                                        \
        proto_enc_init(&e, buf, sizeof(buf));                                                      \
        int rc = proto_enc_##lname##_req(&e, req);                                                 \
        if (rc)                                                                                    \
            return rc;                                                                             \
        rc = net_call_raw(c, PROTO_OP_##NAME, buf, (uint32_t)e.len, bulk, blen, bulk_dst,          \
                          bulk_cap, bulk_len, transport);                                          \
        if (rc)                                                                                    \
            return rc;                                                                             \
        struct proto_dec d;                                                                        \
        proto_dec_init(&d, c->rx, c->rx_len);                                                      \
        memset(rep, 0, sizeof(*rep));                                                              \
        if (proto_dec_##lname##_rep(&d, rep)) {                                                    \
            if (transport)                                                                         \
                *transport = true;                                                                 \
            return -EPROTO;                                                                        \
        }                                                                                          \
        return 0;                                                                                  \
    }
PROTO_MESSAGES(NET_X_CALL_IMPL)
#undef NET_X_CALL_IMPL
