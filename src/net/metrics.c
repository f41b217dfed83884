/*
 * The Prometheus exposition of a daemon's figures (metrics.h).
 *
 * The text is made family by family (each family's samples together, as
 * the format requires), from figures taken once per scrape. The responder
 * is one thread: accept, read the request's head for at most
 * READ_TIMEOUT_MS in all and NET_METRICS_REQ_MAX bytes, answer, close. A
 * scraper comes every few seconds, so one at a time is enough, and a peer
 * that sends garbage or nothing costs at most that timeout; it never
 * reaches the daemon's request servers.
 */
#include "metrics.h"

#include "../common/log.h"
#include "../common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define READ_TIMEOUT_MS 2000 /* to send a request's head */
#define WRITE_TIMEOUT_S 2    /* to take each part of the answer */
#define LINGER_MS       1000 /* to read what a peer still sends, after the answer */
#define LINGER_BYTES    (1u << 20)

/* ---- the text ---- */

/* A growing text; err once anything failed. */
struct text {
    char *p;
    size_t len, cap;
    int err;
};

static void __attribute__((format(printf, 2, 3))) put(struct text *t, const char *fmt, ...)
{
    for (int tries = 0; !t->err && tries < 2; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->err = -EINVAL;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = (t->cap + (size_t)n + 1) * 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->err = -ENOMEM;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
}

/* A label value as the format quotes it: \, " and newline escaped. */
static void put_value(struct text *t, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            put(t, "\\%c", *v);
        else if (*v == '\n')
            put(t, "\\n");
        else
            put(t, "%c", *v);
    }
}

/* {daemon="...",target="..." then op="..." if op: the labels of a sample,
 * left open for le. */
static void put_labels(struct text *t, const struct net_metrics_source *s, const char *op)
{
    put(t, "{daemon=\"");
    put_value(t, s->daemon);
    if (s->target && *s->target) {
        put(t, "\",target=\"");
        put_value(t, s->target);
    }
    if (op) {
        put(t, "\",op=\"");
        put_value(t, op);
    }
    put(t, "\"");
}

static void put_family(struct text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One op's histogram: cumulative buckets at STATS's bounds (bucket i holds
 * requests under 2^i us), the unbounded last one as +Inf. */
static void put_histogram(struct text *t, const char *name, const struct net_metrics_source *s,
                          const char *op, const uint64_t *hist, uint64_t count, uint64_t sum_ns)
{
    uint64_t seen = 0;
    for (unsigned i = 0; i + 1 < PROTO_STAT_BUCKETS; i++) {
        seen += hist[i];
        put(t, "%s_bucket", name);
        put_labels(t, s, op);
        put(t, ",le=\"%.7g\"} %" PRIu64 "\n", (double)(1ull << i) * 1e-6, seen);
    }
    put(t, "%s_bucket", name);
    put_labels(t, s, op);
    put(t, ",le=\"+Inf\"} %" PRIu64 "\n", count);
    put(t, "%s_sum", name);
    put_labels(t, s, op);
    put(t, "} %.9f\n", (double)sum_ns / 1e9);
    put(t, "%s_count", name);
    put_labels(t, s, op);
    put(t, "} %" PRIu64 "\n", count);
}

/* Which figure of an op a family shows. */
enum family { REQUESTS, ERRORS, SERVICE, WAIT };

static void put_ops(struct text *t, const struct net_metrics_source *v,
                    const struct net_server_figures *f, size_t n, const char *name,
                    enum family which)
{
    for (size_t i = 0; i < n; i++)
        for (uint16_t op = 0; op < PROTO_OP_MAX; op++) {
            const struct net_op_figures *o = &f[i].ops[op];
            const char *opname = proto_op_name(op);
            if (!o->count || !opname)
                continue;
            if (which == SERVICE || which == WAIT) {
                bool w = which == WAIT;
                put_histogram(t, name, &v[i], opname, w ? o->wait_hist : o->service_hist, o->count,
                              w ? o->wait_ns : o->service_ns);
                continue;
            }
            put(t, "%s", name);
            put_labels(t, &v[i], opname);
            put(t, "} %" PRIu64 "\n", which == REQUESTS ? o->count : o->errors);
        }
}

int net_metrics_text(const struct net_metrics_source *v, const struct net_server_figures *f,
                     size_t n, char **text, size_t *len)
{
    struct text t = {0};
    put_family(&t, "stria_uptime_seconds", "gauge", "Time since the server started.");
    for (size_t i = 0; i < n; i++) {
        put(&t, "stria_uptime_seconds");
        put_labels(&t, &v[i], NULL);
        put(&t, "} %.3f\n", (double)f[i].uptime_ns / 1e9);
    }
    put_family(&t, "stria_connections", "gauge", "Connections open now.");
    for (size_t i = 0; i < n; i++) {
        put(&t, "stria_connections");
        put_labels(&t, &v[i], NULL);
        put(&t, "} %d\n", f[i].connections);
    }
    put_family(&t, "stria_requests_queued", "gauge", "Whole requests waiting for a worker now.");
    for (size_t i = 0; i < n; i++) {
        put(&t, "stria_requests_queued");
        put_labels(&t, &v[i], NULL);
        put(&t, "} %d\n", f[i].queued);
    }
    put_family(&t, "stria_requests_parked", "gauge",
               "Long polls waiting now with no worker (revocation channels).");
    for (size_t i = 0; i < n; i++) {
        put(&t, "stria_requests_parked");
        put_labels(&t, &v[i], NULL);
        put(&t, "} %d\n", f[i].parked);
    }
    put_family(&t, "stria_workers", "gauge", "Worker threads now, busy or not.");
    for (size_t i = 0; i < n; i++) {
        put(&t, "stria_workers");
        put_labels(&t, &v[i], NULL);
        put(&t, "} %d\n", f[i].workers);
    }
    put_family(&t, "stria_requests_total", "counter", "Requests served, per kind.");
    put_ops(&t, v, f, n, "stria_requests_total", REQUESTS);
    put_family(&t, "stria_request_errors_total", "counter",
               "Requests answered with an error, per kind.");
    put_ops(&t, v, f, n, "stria_request_errors_total", ERRORS);
    put_family(&t, "stria_request_service_seconds", "histogram",
               "Time a request was served, after its wait.");
    put_ops(&t, v, f, n, "stria_request_service_seconds", SERVICE);
    put_family(&t, "stria_request_wait_seconds", "histogram",
               "Time a request waited in a queue before its service began.");
    put_ops(&t, v, f, n, "stria_request_wait_seconds", WAIT);
    if (t.err) {
        free(t.p);
        return t.err;
    }
    *text = t.p;
    *len = t.len;
    return 0;
}

/* ---- the request ---- */

static bool is_upper(char c)
{
    return c >= 'A' && c <= 'Z';
}

/* Whether [p, end) is an HTTP/1.x version. */
static bool is_version(const char *p, const char *end)
{
    return end - p == 8 && !memcmp(p, "HTTP/1.", 7) && (p[7] == '0' || p[7] == '1');
}

int net_metrics_request(const char *buf, size_t len)
{
    const char *end = buf + len;
    /* The method: garbage is told at once, before any line end. */
    const char *p = buf;
    while (p < end && is_upper(*p) && p - buf < 16)
        p++;
    if (p < end && (*p != ' ' || p == buf))
        return 400;
    const char *eol = memchr(buf, '\n', len);
    if (!eol)
        return len >= NET_METRICS_REQ_MAX ? 431 : 0;
    const char *line_end = eol > buf && eol[-1] == '\r' ? eol - 1 : eol;
    /* METHOD SP TARGET SP VERSION, the target printable and without spaces. */
    const char *target = p + 1, *sp = target;
    while (sp<line_end && * sp> ' ' && *sp < 0x7f)
        sp++;
    if (target >= line_end || *target != '/' || sp == target || sp >= line_end || *sp != ' ' ||
        !is_version(sp + 1, line_end))
        return 400;
    /* The head ends with an empty line. */
    const char *q = eol + 1;
    bool done = false;
    while (!done && q < end) {
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        if (!nl)
            break;
        done = nl == q || (nl == q + 1 && *q == '\r');
        q = nl + 1;
    }
    if (!done)
        return len >= NET_METRICS_REQ_MAX ? 431 : 0;
    size_t mlen = (size_t)(p - buf);
    if (mlen != 3 || memcmp(buf, "GET", 3))
        return 405;
    size_t plen = (size_t)(sp - target);
    const char *qm = memchr(target, '?', plen);
    if (qm)
        plen = (size_t)(qm - target);
    return plen == 8 && !memcmp(target, "/metrics", 8) ? 200 : 404;
}

/* ---- the responder ---- */

struct net_metrics {
    int lfd;
    pthread_t thread;
    bool stopping; /* under lock */
    pthread_mutex_t lock;
    size_t n;
    struct net_metrics_source v[];
};

/* The head of a request on fd, until its status is known: 408 when the
 * time runs out, 400 when the peer closes first. */
static int read_request(int fd)
{
    char buf[NET_METRICS_REQ_MAX];
    size_t len = 0;
    int64_t deadline = (int64_t)(util_now_mono_ns() / 1000000) + READ_TIMEOUT_MS;
    for (;;) {
        int left = (int)(deadline - (int64_t)(util_now_mono_ns() / 1000000));
        struct pollfd pfd = {fd, POLLIN, 0};
        if (left <= 0 || poll(&pfd, 1, left) <= 0)
            return 408;
        ssize_t got = recv(fd, buf + len, sizeof(buf) - len, 0);
        if (got <= 0)
            return 400;
        len += (size_t)got;
        int status = net_metrics_request(buf, len);
        if (status)
            return status;
    }
}

static const char *reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 431:
        return "Request Header Fields Too Large";
    default:
        return "Bad Request";
    }
}

/* All of len bytes, or -errno (a peer gone, or slower than
 * WRITE_TIMEOUT_S a part). */
static int send_all(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EPIPE;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Read and drop what the peer still sends (the rest of a request refused
 * early), for a while, before closing: closed with unread bytes, the
 * socket would reset the connection, and the peer could lose the answer. */
static void linger_close(int fd)
{
    char buf[4096];
    size_t total = 0;
    int64_t deadline = (int64_t)(util_now_mono_ns() / 1000000) + LINGER_MS;
    while (total < LINGER_BYTES) {
        int left = (int)(deadline - (int64_t)(util_now_mono_ns() / 1000000));
        struct pollfd pfd = {fd, POLLIN, 0};
        if (left <= 0 || poll(&pfd, 1, left) <= 0)
            break;
        ssize_t got = recv(fd, buf, sizeof(buf), 0);
        if (got <= 0)
            break;
        total += (size_t)got;
    }
    close(fd);
}

/* Answer one connection, its figures or why not, and close it. */
static void serve_one(struct net_metrics *m, int fd)
{
    struct timeval tv = {WRITE_TIMEOUT_S, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int status = read_request(fd);
    char *body = NULL;
    size_t blen = 0;
    struct net_server_figures *f = NULL;
    if (status == 200) {
        f = calloc(m->n ? m->n : 1, sizeof(*f));
        for (size_t i = 0; f && i < m->n; i++)
            net_server_figures(m->v[i].srv, &f[i], false); /* not exported */
        if (!f || net_metrics_text(m->v, f, m->n, &body, &blen))
            status = 500;
    }
    if (status != 200) {
        log_info("metrics: answered %d %s", status, reason(status));
        blen = 0;
    }
    char head[256];
    int hlen = snprintf(head, sizeof(head),
                        "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
                        "Connection: close\r\n\r\n",
                        status, status == 500 ? "Internal Server Error" : reason(status),
                        status == 200 ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain",
                        blen, status == 405 ? "Allow: GET\r\n" : "");
    if (send_all(fd, head, (size_t)hlen) == 0 && blen)
        send_all(fd, body, blen);
    shutdown(fd, SHUT_WR);
    linger_close(fd);
    free(body);
    free(f);
}

static void *responder_main(void *arg)
{
    struct net_metrics *m = arg;
    for (;;) {
        int fd = accept4(m->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            pthread_mutex_lock(&m->lock);
            bool stop = m->stopping;
            pthread_mutex_unlock(&m->lock);
            if (stop)
                break;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                usleep(100000);
            continue;
        }
        serve_one(m, fd); /* and closes fd */
    }
    return NULL;
}

int net_metrics_start(const char *host, uint16_t port, const struct net_metrics_source *v, size_t n,
                      struct net_metrics **out)
{
    struct net_metrics *m = calloc(1, sizeof(*m) + n * sizeof(*v));
    if (!m)
        return -ENOMEM;
    memcpy(m->v, v, n * sizeof(*v));
    m->n = n;
    pthread_mutex_init(&m->lock, NULL);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *res;
    char portstr[8];
    snprintf(portstr, sizeof(portstr), "%u", port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc) {
        log_error("metrics: cannot resolve %s: %s", host, gai_strerror(rc));
        free(m);
        return -EINVAL;
    }
    m->lfd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (m->lfd >= 0)
        setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (m->lfd < 0 || bind(m->lfd, res->ai_addr, res->ai_addrlen) || listen(m->lfd, 16)) {
        rc = -errno;
        log_error("metrics: cannot listen on %s:%u: %s", host, port, log_err(rc));
        goto fail;
    }
    if ((rc = -pthread_create(&m->thread, NULL, responder_main, m))) {
        log_error("metrics: cannot start its thread: %s", log_err(rc));
        goto fail;
    }
    freeaddrinfo(res);
    log_info("metrics: serving GET /metrics on %s:%u", host, port);
    *out = m;
    return 0;
fail:
    freeaddrinfo(res);
    if (m->lfd >= 0)
        close(m->lfd);
    free(m);
    return rc;
}

void net_metrics_stop(struct net_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->stopping = true;
    pthread_mutex_unlock(&m->lock);
    shutdown(m->lfd, SHUT_RDWR);
    pthread_join(m->thread, NULL);
    close(m->lfd);
    pthread_mutex_destroy(&m->lock);
    free(m);
}
