/*
 * Unit tests of the transport (net/net.h) over loopback: a server started
 * here on a port of its own, clients through net_connect, and a raw socket
 * where a test must send what no client would (a bad header, a reply as a
 * request, garbage instead of the handshake).
 *
 * What is checked is what a peer sees: a client with the cluster key is
 * answered, one without is refused; a broken byte stream closes that
 * connection and nobody else's; a malformed request is answered with an
 * error and the connection goes on; requests in flight on one connection
 * get their own replies; a request its handler parks holds no worker and
 * is served again when woken or when its time runs out. No assertion depends on how long anything
 * takes (the handshake's timeout is another change's business); raw sockets wait at most 30 s so
 * that a hang fails instead of hanging.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/auth.h"
#include "common/util.h"
#include "net/net.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define OP_ECHO  PROTO_OP_PING /* the handler echoes payload and bulk */
#define OP_FAIL  PROTO_OP_GETATTR
#define OP_NONE  PROTO_OP_LOOKUP  /* no handler */
#define OP_WAIT  PROTO_OP_SETATTR /* says it waited WAIT_MS of its SLEEP_MS */
#define OP_ORDER PROTO_OP_MKDIR   /* notes who asked, in order */
#define OP_PARK  PROTO_OP_READDIR /* parks for the ms its payload says */
#define WAIT_MS  20
#define SLEEP_MS 30

static struct auth_key key = {{1, 2, 3, 4, 5, 6, 7, 8}};
static struct net_server *srv;
static uint16_t port;
static uint64_t seen_client; /* the client id the last request spoke for */

/* Echo the payload and the bulk; a payload starting with '!' is malformed. */
static int h_echo(void *ctx, struct net_req *req, struct net_rep *rep)
{
    (void)ctx;
    __atomic_store_n(&seen_client, req->hdr.client_id, __ATOMIC_RELAXED);
    size_t n = req->dec.len;
    if (n && req->dec.buf[0] == '!')
        return -EBADMSG;
    if (n > rep->enc.cap)
        return -EMSGSIZE;
    memcpy(rep->enc.buf, req->dec.buf, n);
    rep->enc.len = n;
    rep->bulk = req->bulk;
    rep->bulk_len = req->bulk_len;
    return 0;
}

static int h_fail(void *ctx, struct net_req *req, struct net_rep *rep)
{
    (void)ctx, (void)req;
    proto_put_U64(&rep->enc, &(uint64_t){42}); /* dropped with the error */
    return -ENOENT;
}

/* A handler that queued for part of its time, as the MDT's store does. */
static int h_wait(void *ctx, struct net_req *req, struct net_rep *rep)
{
    (void)ctx, (void)rep;
    usleep(SLEEP_MS * 1000);
    req->wait_ns += WAIT_MS * 1000000ull;
    return 0;
}

/* The order requests of OP_ORDER were served in, by client; the first
 * one served waits until the test opens the gate. */
static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t order_cond = PTHREAD_COND_INITIALIZER;
static bool order_gate_open, order_blocked;
static uint64_t order[64];
static int norder;

static int h_order(void *ctx, struct net_req *req, struct net_rep *rep)
{
    (void)ctx, (void)rep;
    pthread_mutex_lock(&order_lock);
    if (norder < 64)
        order[norder++] = req->hdr.client_id;
    order_blocked = true;
    pthread_cond_broadcast(&order_cond);
    while (!order_gate_open)
        pthread_cond_wait(&order_cond, &order_lock);
    pthread_mutex_unlock(&order_lock);
    return 0;
}

/* The ids of parked requests, in the order they parked. Served again,
 * the handler answers its payload and why it was served again. */
static uint64_t parked_ids[64];
static int nparked_ids; /* atomic */

static int h_park(void *ctx, struct net_req *req, struct net_rep *rep)
{
    (void)ctx;
    size_t n = req->dec.len;
    if (n + 1 > rep->enc.cap || n > 15)
        return -EMSGSIZE;
    if (req->woken) {
        memcpy(rep->enc.buf, req->dec.buf, n);
        rep->enc.buf[n] = req->woken;
        rep->enc.len = n + 1;
        return 0;
    }
    char ms[16] = {0};
    memcpy(ms, req->dec.buf, n);
    uint64_t id = net_park(req, atoi(ms));
    assert_true(id != 0);
    int i = __atomic_load_n(&nparked_ids, __ATOMIC_SEQ_CST);
    assert_true(i < 64);
    parked_ids[i] = id;
    __atomic_store_n(&nparked_ids, i + 1, __ATOMIC_SEQ_CST);
    return NET_PARKED;
}

/* The options of the next server setup() starts (0: the defaults). */
static int opt_workers, opt_handshake_ms, opt_request_ms;

static int setup(void **state)
{
    (void)state;
    struct net_server_opts o = {.host = "127.0.0.1",
                                .port = 0,
                                .key = &key,
                                .max_workers = opt_workers,
                                .handshake_ms = opt_handshake_ms,
                                .request_ms = opt_request_ms};
    o.handlers[OP_ECHO] = h_echo;
    o.handlers[OP_FAIL] = h_fail;
    o.handlers[OP_WAIT] = h_wait;
    o.handlers[OP_ORDER] = h_order;
    o.handlers[OP_PARK] = h_park;
    if (net_server_start(&o, &srv))
        return -1;
    port = net_server_port(srv);
    return port ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    net_server_stop(srv); /* with connections still open: must return */
    srv = NULL;
    return 0;
}

static struct net_conn *connect_ok(uint64_t client_id)
{
    struct net_conn *c = NULL;
    assert_int_equal(net_connect("127.0.0.1", port, &key, client_id, "test", 10000, &c), 0);
    assert_non_null(c);
    return c;
}

/* One echo round trip on c; asserts the reply is the request. */
static void echo_ok(struct net_conn *c, const char *text)
{
    bool transport = false;
    uint32_t blen = 0;
    char bulk[32] = {0};
    int rc = net_call_raw(c, OP_ECHO, text, (uint32_t)strlen(text), "bulk!", 5, bulk, sizeof(bulk),
                          &blen, &transport);
    assert_int_equal(rc, 0);
    assert_false(transport);
    assert_int_equal(c->rx_len, strlen(text));
    assert_memory_equal(c->rx, text, strlen(text));
    assert_int_equal(blen, 5);
    assert_memory_equal(bulk, "bulk!", 5);
}

static void test_auth_and_reply(void **state)
{
    (void)state;
    struct net_conn *c = connect_ok(0x1234);
    assert_int_equal(c->version, PROTO_VERSION);
    echo_ok(c, "hello");
    assert_int_equal(seen_client, 0x1234);
    /* A request speaks for whom its connection authenticated as, whatever
     * its header claims. */
    c->client_id = 0x9999;
    echo_ok(c, "again");
    assert_int_equal(seen_client, 0x1234);
    net_close(c);
}

static void test_wrong_key_refused(void **state)
{
    (void)state;
    struct auth_key other = key;
    other.bytes[31] ^= 1;
    struct net_conn *c = NULL;
    assert_int_equal(net_connect("127.0.0.1", port, &other, 7, "intruder", 10000, &c), -EACCES);
    assert_null(c);
    /* The server carries on. */
    c = connect_ok(8);
    echo_ok(c, "still here");
    net_close(c);
}

static void test_error_replies_keep_connection(void **state)
{
    (void)state;
    struct net_conn *c = connect_ok(1);
    bool transport = false;
    /* The handler's error comes back as the status, without its payload. */
    assert_int_equal(net_call_raw(c, OP_FAIL, NULL, 0, NULL, 0, NULL, 0, NULL, &transport),
                     -ENOENT);
    assert_false(transport);
    assert_int_equal(c->rx_len, 0);
    /* A malformed payload: an error reply, not a closed connection. */
    assert_int_equal(net_call_raw(c, OP_ECHO, "!bad", 4, NULL, 0, NULL, 0, NULL, &transport),
                     -EBADMSG);
    assert_false(transport);
    /* A request nobody serves, with a bulk the server must skip. */
    char bulk[1000];
    memset(bulk, 'b', sizeof(bulk));
    assert_int_equal(
        net_call_raw(c, OP_NONE, "x", 1, bulk, sizeof(bulk), NULL, 0, NULL, &transport),
        -EOPNOTSUPP);
    assert_false(transport);
    assert_int_equal(net_call_raw(c, 9999, NULL, 0, NULL, 0, NULL, 0, NULL, &transport),
                     -EOPNOTSUPP);
    echo_ok(c, "the stream is still in step");
    net_close(c);
}

static void test_requests_in_flight(void **state)
{
    (void)state;
    struct net_conn *c = connect_ok(2);
    enum { N = 16 };
    uint64_t reqid[N];
    char text[N][32];
    for (int i = 0; i < N; i++) {
        snprintf(text[i], sizeof(text[i]), "request %d%.*s", i, i, "xxxxxxxxxxxxxxxx");
        assert_int_equal(
            net_send(c, OP_ECHO, text[i], (uint32_t)strlen(text[i]), NULL, 0, &reqid[i]), 0);
    }
    for (int i = 1; i < N; i++)
        assert_true(reqid[i] != reqid[i - 1]);
    for (int i = 0; i < N; i++) {
        bool transport = false;
        assert_int_equal(net_recv(c, reqid[i], NULL, 0, NULL, &transport), 0);
        assert_int_equal(c->rx_len, strlen(text[i]));
        assert_memory_equal(c->rx, text[i], strlen(text[i]));
    }
    net_close(c);
}

/* ---- raw sockets ---- */

static int raw_connect(void)
{
    int fd = net_tcp_connect("127.0.0.1", port, 10000);
    assert_true(fd >= 0);
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

static void raw_send_hdr(int fd, const struct proto_hdr *h, const void *payload)
{
    uint8_t hb[PROTO_HDR_LEN];
    proto_hdr_encode(h, hb);
    assert_int_equal(write(fd, hb, sizeof(hb)), (ssize_t)sizeof(hb));
    if (payload && h->payload_len)
        assert_int_equal(write(fd, payload, h->payload_len), (ssize_t)h->payload_len);
}

static void raw_recv(int fd, struct proto_hdr *h, uint8_t *payload, size_t cap)
{
    uint8_t hb[PROTO_HDR_LEN];
    assert_int_equal(util_read_full(fd, hb, sizeof(hb)), 0);
    assert_int_equal(proto_hdr_decode(hb, h), 0);
    assert_true(h->payload_len <= cap);
    assert_int_equal(util_read_full(fd, payload, h->payload_len), 0);
}

/* Answer the server's challenge as net_connect does. */
static void raw_handshake(int fd, uint64_t client_id)
{
    struct proto_hdr h;
    uint8_t buf[1024];
    raw_recv(fd, &h, buf, sizeof(buf));
    assert_int_equal(h.opcode, PROTO_OP_HELLO);
    struct proto_dec d;
    struct proto_hello_req hello;
    proto_dec_init(&d, buf, h.payload_len);
    assert_int_equal(proto_dec_hello_req(&d, &hello), 0);
    assert_int_equal(hello.nonce.len, AUTH_NONCE_LEN);
    uint8_t mac[AUTH_MAC_LEN];
    auth_mac(&key, hello.nonce.p, client_id, mac);
    struct proto_auth_req a = {
        .version = PROTO_VERSION, .mac = {mac, AUTH_MAC_LEN}, .name = proto_str_c("raw")};
    struct proto_enc e;
    proto_enc_init(&e, buf, sizeof(buf));
    assert_int_equal(proto_enc_auth_req(&e, &a), 0);
    struct proto_hdr ah = {.magic = PROTO_MAGIC,
                           .version = PROTO_VERSION,
                           .opcode = PROTO_OP_AUTH,
                           .reqid = 1,
                           .client_id = client_id,
                           .payload_len = (uint32_t)e.len};
    raw_send_hdr(fd, &ah, buf);
    raw_recv(fd, &h, buf, sizeof(buf));
    assert_int_equal(h.opcode, PROTO_OP_AUTH);
    assert_int_equal(h.status, 0);
}

/* The server closed fd: EOF (or a reset) before any reply. */
static void assert_closed(int fd)
{
    uint8_t b[PROTO_HDR_LEN];
    ssize_t n;
    do
        n = read(fd, b, sizeof(b));
    while (n < 0 && errno == EINTR);
    if (n > 0)
        fail_msg("the server answered (%zd bytes) instead of closing", n);
    assert_true(n == 0 || errno == ECONNRESET);
}

static struct proto_hdr echo_hdr(uint32_t plen)
{
    struct proto_hdr h = {.magic = PROTO_MAGIC,
                          .version = PROTO_VERSION,
                          .opcode = OP_ECHO,
                          .reqid = 5,
                          .seq = 5,
                          .payload_len = plen};
    return h;
}

static void test_raw_handshake_and_echo(void **state)
{
    (void)state;
    int fd = raw_connect();
    raw_handshake(fd, 3);
    struct proto_hdr h = echo_hdr(3), r;
    raw_send_hdr(fd, &h, "abc");
    uint8_t buf[16];
    raw_recv(fd, &r, buf, sizeof(buf));
    assert_true(r.flags & PROTO_FLAG_REPLY);
    assert_int_equal(r.reqid, 5);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.payload_len, 3);
    assert_memory_equal(buf, "abc", 3);
    close(fd);
}

enum bad { BAD_MAGIC, BAD_CRC, OVERSIZED, OVERSIZED_BULK, REPLY_AS_REQUEST };

static void send_bad(int fd, enum bad kind)
{
    struct proto_hdr h = echo_hdr(3);
    uint8_t hb[PROTO_HDR_LEN];
    switch (kind) {
    case BAD_MAGIC:
        h.magic = 0x41525454u;
        break;
    case OVERSIZED:
        h.payload_len = PROTO_MAX_REQ_PAYLOAD + 1;
        break;
    case OVERSIZED_BULK:
        h.bulk_len = PROTO_MAX_BULK + 1;
        break;
    case REPLY_AS_REQUEST:
        h.flags = PROTO_FLAG_REPLY;
        break;
    default:
        break;
    }
    proto_hdr_encode(&h, hb);
    if (kind == BAD_CRC)
        hb[20] ^= 0x10; /* a bit of reqid: the checksum no longer matches */
    assert_int_equal(write(fd, hb, sizeof(hb)), (ssize_t)sizeof(hb));
    assert_int_equal(write(fd, "abc", 3), 3);
}

/* After a header it cannot trust the server closes the connection: the
 * byte stream has no framing left. It serves the next connection. */
static void test_bad_headers_close(void **state)
{
    (void)state;
    for (int kind = BAD_MAGIC; kind <= REPLY_AS_REQUEST; kind++) {
        int fd = raw_connect();
        raw_handshake(fd, 4);
        send_bad(fd, (enum bad)kind);
        assert_closed(fd);
        close(fd);
    }
    struct net_conn *c = connect_ok(4);
    echo_ok(c, "after the garbage");
    net_close(c);
}

/* Garbage, or a request, instead of the answer to the challenge: refused
 * and closed before anything is served. */
static void test_garbage_handshake(void **state)
{
    (void)state;
    uint8_t buf[1024];
    struct proto_hdr h;
    int fd = raw_connect();
    raw_recv(fd, &h, buf, sizeof(buf));
    memset(buf, 0x5a, PROTO_HDR_LEN);
    assert_int_equal(write(fd, buf, PROTO_HDR_LEN), PROTO_HDR_LEN);
    assert_closed(fd);
    close(fd);

    fd = raw_connect();
    raw_recv(fd, &h, buf, sizeof(buf));
    struct proto_hdr e = echo_hdr(3);
    raw_send_hdr(fd, &e, "abc");
    assert_closed(fd);
    close(fd);

    /* A well-framed AUTH with a malformed body: an error, then closed. */
    fd = raw_connect();
    raw_recv(fd, &h, buf, sizeof(buf));
    struct proto_hdr a = {.magic = PROTO_MAGIC,
                          .version = PROTO_VERSION,
                          .opcode = PROTO_OP_AUTH,
                          .reqid = 1,
                          .payload_len = 2};
    raw_send_hdr(fd, &a, "\xff\xff");
    raw_recv(fd, &h, buf, sizeof(buf));
    assert_true(h.status < 0);
    assert_closed(fd);
    close(fd);

    struct net_conn *c = connect_ok(5);
    echo_ok(c, "after the intruders");
    net_close(c);
}

/* A server of its own, whose figures no earlier test made. */
static int fresh_server(void **state)
{
    teardown(state);
    return setup(state);
}

static void call_wait(struct net_conn *c)
{
    bool transport = false;
    assert_int_equal(net_call_raw(c, OP_WAIT, NULL, 0, NULL, 0, NULL, 0, NULL, &transport), 0);
}

/* STATS counts what a handler waited apart from its service, and names
 * the busiest clients, those of closed connections too. */
static void test_stats_wait_and_clients(void **state)
{
    (void)state;
    struct net_conn *a = connect_ok(0xa11ce), *b = connect_ok(0xb0b);
    for (int i = 0; i < 3; i++)
        call_wait(a);
    call_wait(b);
    net_close(a); /* its counts go to the table of clients gone */
    static struct net_server_figures f;
    for (int i = 0; i < 3000; i++) {
        assert_int_equal(net_server_figures(srv, &f, true), 0);
        if (f.connections == 1)
            break;
        usleep(1000);
    }
    assert_int_equal(f.connections, 1);
    const struct net_op_figures *o = &f.ops[OP_WAIT];
    assert_int_equal(o->count, 4);
    /* What the handler said it waited, and the queue before it. */
    assert_true(o->wait_ns >= 4 * WAIT_MS * 1000000ull);
    assert_true(o->wait_max_ns >= WAIT_MS * 1000000ull);
    uint64_t from_15 = 0; /* 20,000 us is in [2^14, 2^15) */
    for (unsigned i = 15; i < PROTO_STAT_BUCKETS; i++)
        from_15 += o->wait_hist[i];
    assert_int_equal(from_15, 4);
    assert_true(o->service_ns >= 4 * (SLEEP_MS - WAIT_MS) * 1000000ull);
    assert_true(o->service_max_ns < o->service_ns);
    /* The busiest first: a (gone) with 3, then b (connected) with 1. */
    assert_true(f.nclients >= 2);
    assert_int_equal(f.clients[0].client_id, 0xa11ce);
    assert_int_equal(f.clients[0].requests, 3);
    assert_true(f.clients[0].wait_ns >= 3 * WAIT_MS * 1000000ull);
    assert_string_equal(f.clients[0].ip, "127.0.0.1");
    assert_int_equal(f.clients[1].client_id, 0xb0b);

    /* The same over the wire, through the message table. */
    bool transport = false;
    assert_int_equal(net_call_raw(b, PROTO_OP_STATS, NULL, 0, NULL, 0, NULL, 0, NULL, &transport),
                     0);
    struct proto_dec d;
    struct proto_stats_rep r;
    proto_dec_init(&d, b->rx, b->rx_len);
    assert_int_equal(proto_dec_stats_rep(&d, &r), 0);
    assert_false(r.waits.absent);
    assert_int_equal(r.ops.len % PROTO_STAT_LEN, 0);
    assert_int_equal(r.waits.len, r.ops.len / PROTO_STAT_LEN * PROTO_WAIT_LEN);
    bool found = false;
    for (uint32_t off = 0; off < r.waits.len; off += PROTO_WAIT_LEN)
        if ((r.waits.p[off] | r.waits.p[off + 1] << 8) == OP_WAIT) {
            assert_int_equal(proto_le64(r.waits.p + off + 2), o->wait_ns);
            found = true;
        }
    assert_true(found);
    assert_true(r.clients.len >= 2 * PROTO_CLIENT_LEN && r.clients.len % PROTO_CLIENT_LEN == 0);
    assert_int_equal(proto_le64(r.clients.p), 0xa11ce);
    assert_int_equal(proto_le64(r.clients.p + 8), 3);
    net_close(b);
}

/* The loop and the queue as the server reports them. */
static struct net_server_figures *figures_now(void)
{
    static struct net_server_figures f;
    assert_int_equal(net_server_figures(srv, &f, true), 0);
    return &f;
}

/* Wait (bounded) until the server has n requests queued. */
static void wait_queued(int n)
{
    for (int i = 0; i < 10000 && figures_now()->queued != n; i++)
        usleep(1000);
    assert_int_equal(figures_now()->queued, n);
}

/* Until the first OP_ORDER holds the worker at the gate. */
static void wait_order_blocked(void)
{
    pthread_mutex_lock(&order_lock);
    for (int i = 0; i < 30000 && !order_blocked; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&order_cond, &order_lock, &ts);
    }
    assert_true(order_blocked);
    pthread_mutex_unlock(&order_lock);
}

/* One worker, held by client A's first request; A then queues 39 more on
 * connections of its own, and B one. B's is served third, not forty-first:
 * clients take turns, whatever number of requests each has waiting. */
static void test_fair_between_clients(void **state)
{
    (void)state;
    enum { A_CONNS = 40 };
    struct net_conn *a[A_CONNS], *b = connect_ok(0xb);
    uint64_t id[A_CONNS], bid;
    for (int i = 0; i < A_CONNS; i++)
        a[i] = connect_ok(0xa);
    assert_int_equal(net_send(a[0], OP_ORDER, NULL, 0, NULL, 0, &id[0]), 0);
    wait_order_blocked();
    for (int i = 1; i < A_CONNS; i++)
        assert_int_equal(net_send(a[i], OP_ORDER, NULL, 0, NULL, 0, &id[i]), 0);
    wait_queued(A_CONNS - 1);
    assert_int_equal(net_send(b, OP_ORDER, NULL, 0, NULL, 0, &bid), 0);
    wait_queued(A_CONNS);
    assert_int_equal(figures_now()->workers, 1);
    pthread_mutex_lock(&order_lock);
    order_gate_open = true;
    pthread_cond_broadcast(&order_cond);
    pthread_mutex_unlock(&order_lock);
    bool transport = false;
    for (int i = 0; i < A_CONNS; i++)
        assert_int_equal(net_recv(a[i], id[i], NULL, 0, NULL, &transport), 0);
    assert_int_equal(net_recv(b, bid, NULL, 0, NULL, &transport), 0);
    assert_int_equal(norder, A_CONNS + 1);
    /* A's turn was already due when B's request came: B goes next. */
    assert_int_equal(order[0], 0xa);
    assert_int_equal(order[1], 0xa);
    assert_int_equal(order[2], 0xb);
    for (int i = 0; i < A_CONNS; i++)
        net_close(a[i]);
    net_close(b);
}

/* Requests sent back to back on one connection, with bulks small and
 * large: the worker reads the ones already whole itself (srv_read_next),
 * the loop the others; every reply matches its request, in order. */
static void test_pipelined_bulks(void **state)
{
    (void)state;
    struct net_conn *c = connect_ok(3);
    enum { N = 24 };
    static uint8_t bulk[N][3 * 65536], back[3 * 65536];
    uint64_t reqid[N];
    uint32_t blen[N];
    char text[N][32];
    for (int i = 0; i < N; i++) {
        blen[i] = i % 3 == 0   ? 0
                  : i % 3 == 1 ? 100 + (uint32_t)i
                               : (uint32_t)sizeof(bulk[i]) - (uint32_t)i;
        for (uint32_t k = 0; k < blen[i]; k++)
            bulk[i][k] = (uint8_t)(k * 7 + (uint32_t)i);
        snprintf(text[i], sizeof(text[i]), "pipelined %d", i);
        assert_int_equal(
            net_send(c, OP_ECHO, text[i], (uint32_t)strlen(text[i]), bulk[i], blen[i], &reqid[i]),
            0);
    }
    for (int i = 0; i < N; i++) {
        bool transport = false;
        uint32_t got = 0;
        assert_int_equal(net_recv(c, reqid[i], back, sizeof(back), &got, &transport), 0);
        assert_int_equal(c->rx_len, strlen(text[i]));
        assert_memory_equal(c->rx, text[i], strlen(text[i]));
        assert_int_equal(got, blen[i]);
        if (got)
            assert_memory_equal(back, bulk[i], got);
    }
    net_close(c);
}

/* One worker, held by client A's first request, behind which A has sent
 * nine more on the same connection; B sends one meanwhile. B's is served
 * second: a worker goes on with a connection's next request only while no
 * other client's waits. */
static void test_pipeline_takes_turns(void **state)
{
    (void)state;
    enum { A_REQS = 10 };
    pthread_mutex_lock(&order_lock); /* after test_fair_between_clients */
    norder = 0;
    order_gate_open = order_blocked = false;
    pthread_mutex_unlock(&order_lock);
    struct net_conn *a = connect_ok(0xa), *b = connect_ok(0xb);
    uint64_t id[A_REQS], bid;
    assert_int_equal(net_send(a, OP_ORDER, NULL, 0, NULL, 0, &id[0]), 0);
    wait_order_blocked();
    for (int i = 1; i < A_REQS; i++)
        assert_int_equal(net_send(a, OP_ORDER, NULL, 0, NULL, 0, &id[i]), 0);
    assert_int_equal(net_send(b, OP_ORDER, NULL, 0, NULL, 0, &bid), 0);
    wait_queued(1);
    pthread_mutex_lock(&order_lock);
    order_gate_open = true;
    pthread_cond_broadcast(&order_cond);
    pthread_mutex_unlock(&order_lock);
    bool transport = false;
    for (int i = 0; i < A_REQS; i++)
        assert_int_equal(net_recv(a, id[i], NULL, 0, NULL, &transport), 0);
    assert_int_equal(net_recv(b, bid, NULL, 0, NULL, &transport), 0);
    assert_int_equal(norder, A_REQS + 1);
    assert_int_equal(order[0], 0xa);
    assert_int_equal(order[1], 0xb);
    for (int i = 2; i <= A_REQS; i++)
        assert_int_equal(order[i], 0xa);
    net_close(a);
    net_close(b);
}

static int one_worker(void **state)
{
    opt_workers = 1;
    int rc = fresh_server(state);
    opt_workers = 0;
    return rc;
}

/* A peer that never authenticates, and one that sends half a request and
 * stops: each is closed at its deadline, and the others are served. */
static void test_silent_peers_closed(void **state)
{
    (void)state;
    uint8_t buf[1024];
    struct proto_hdr h;
    int silent = raw_connect();
    raw_recv(silent, &h, buf, sizeof(buf)); /* HELLO, then nothing */
    int half = raw_connect();
    raw_handshake(half, 6);
    struct proto_hdr e = echo_hdr(100);
    uint8_t hb[PROTO_HDR_LEN];
    proto_hdr_encode(&e, hb);
    assert_int_equal(write(half, hb, sizeof(hb)), (ssize_t)sizeof(hb));
    assert_int_equal(write(half, "only ten b", 10), 10);
    struct net_conn *c = connect_ok(7);
    echo_ok(c, "beside the silent ones");
    assert_closed(silent);
    assert_closed(half);
    close(silent);
    close(half);
    echo_ok(c, "after they were closed");
    net_close(c);
    for (int i = 0; i < 10000 && figures_now()->connections; i++)
        usleep(1000);
    assert_int_equal(figures_now()->connections, 0);
}

/* The reply to a parked request: its payload and why it was served again. */
static uint8_t park_reply(struct net_conn *c, uint64_t id, const char *ms)
{
    bool transport = false;
    assert_int_equal(net_recv(c, id, NULL, 0, NULL, &transport), 0);
    assert_int_equal(c->rx_len, strlen(ms) + 1);
    assert_memory_equal(c->rx, ms, strlen(ms));
    return c->rx[strlen(ms)];
}

/* With one worker, twenty requests parked by their handler: the worker is
 * free for others; each is served again when woken, in any order, with its
 * payload, and one whose time runs out is served again too. A stale id
 * wakes nothing, and the server stops with requests still parked. */
static void test_parked_requests_hold_no_worker(void **state)
{
    (void)state;
    enum { N = 20 };
    struct net_conn *p[N];
    uint64_t id[N];
    __atomic_store_n(&nparked_ids, 0, __ATOMIC_SEQ_CST);
    for (int i = 0; i < N; i++) {
        p[i] = connect_ok(0x100 + (uint64_t)i);
        assert_int_equal(net_send(p[i], OP_PARK, "60000", 5, NULL, 0, &id[i]), 0);
    }
    for (int i = 0; i < 10000 && figures_now()->parked != N; i++)
        usleep(1000);
    assert_int_equal(figures_now()->parked, N);
    assert_int_equal(figures_now()->workers, 1);
    struct net_conn *c = connect_ok(7);
    echo_ok(c, "beside twenty parked");
    /* Woken in reverse order of parking; which connection each id is is
     * the server's business: every one answers, woken. */
    for (int i = N - 1; i >= 0; i--)
        net_wake(srv, parked_ids[i]);
    for (int i = 0; i < N; i++)
        assert_int_equal(park_reply(p[i], id[i], "60000"), NET_WOKEN);
    assert_int_equal(figures_now()->parked, 0);
    net_wake(srv, parked_ids[0]); /* stale: nothing */
    /* Short parks run out and are served again, and the connection goes
     * on, behind a long one parked before them (the list runs by deadline:
     * each short one goes in before it, and the tick stops at it). p[1]
     * stays parked when the server stops (teardown): it must still return. */
    assert_int_equal(net_send(p[1], OP_PARK, "60000", 5, NULL, 0, &id[1]), 0);
    for (int i = 0; i < 10000 && figures_now()->parked != 1; i++)
        usleep(1000);
    assert_int_equal(net_send(p[2], OP_PARK, "400", 3, NULL, 0, &id[2]), 0);
    for (int i = 0; i < 10000 && figures_now()->parked != 2; i++)
        usleep(1000);
    assert_int_equal(net_send(p[0], OP_PARK, "200", 3, NULL, 0, &id[0]), 0);
    assert_int_equal(park_reply(p[0], id[0], "200"), NET_EXPIRED);
    echo_ok(p[0], "after its park");
    assert_int_equal(park_reply(p[2], id[2], "400"), NET_EXPIRED);
    echo_ok(p[2], "after its park");
    assert_int_equal(figures_now()->parked, 1);
    net_close(c);
    for (int i = 0; i < N; i++)
        net_close(p[i]); /* the server's side of p[1] stays parked */
}

static int short_deadlines(void **state)
{
    opt_handshake_ms = 300;
    opt_request_ms = 300;
    int rc = fresh_server(state);
    opt_handshake_ms = opt_request_ms = 0;
    return rc;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auth_and_reply),
        cmocka_unit_test(test_wrong_key_refused),
        cmocka_unit_test(test_error_replies_keep_connection),
        cmocka_unit_test(test_requests_in_flight),
        cmocka_unit_test(test_raw_handshake_and_echo),
        cmocka_unit_test(test_bad_headers_close),
        cmocka_unit_test(test_garbage_handshake),
        cmocka_unit_test_setup(test_stats_wait_and_clients, fresh_server),
        cmocka_unit_test(test_pipelined_bulks),
        cmocka_unit_test_setup(test_fair_between_clients, one_worker),
        cmocka_unit_test_setup(test_pipeline_takes_turns, one_worker),
        cmocka_unit_test_setup(test_parked_requests_hold_no_worker, one_worker),
        cmocka_unit_test_setup(test_silent_peers_closed, short_deadlines),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
