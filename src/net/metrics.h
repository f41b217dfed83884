/*
 * A daemon's request figures (net_server_figures) in the Prometheus text
 * exposition format (version 0.0.4), served over HTTP at GET /metrics by
 * one thread of the daemon's own when its `metrics` option names an
 * address (docs/operations.md, "Debugging a metadata storm").
 *
 * Metrics, each with a daemon label (stria-metad...) and, where one server
 * serves one target, a target label (MDT0000):
 *   stria_uptime_seconds            gauge
 *   stria_connections               gauge, open now
 *   stria_requests_total            counter, per op
 *   stria_request_errors_total      counter, per op
 *   stria_request_service_seconds   histogram, per op: a request's time
 *                                   being served
 *   stria_request_wait_seconds      histogram, per op: its time queued
 *                                   before that
 * The histograms' buckets are STATS's powers of two (1 us to 4.2 s).
 */
#ifndef STRIA_NET_METRICS_H
#define STRIA_NET_METRICS_H

#include "server.h"

#include <stddef.h>

/* One server a daemon reports. */
struct net_metrics_source {
    const char *daemon; /* "stria-metad" */
    const char *target; /* "MDT0000", or NULL: the daemon's only server */
    struct net_server *srv;
};

/* The text of n sources' figures (f[i] of v[i]; v[i].srv is not read):
 * *text is malloc'd (free() it), *len its length. 0 or -ENOMEM. */
int net_metrics_text(const struct net_metrics_source *v, const struct net_server_figures *f,
                     size_t n, char **text, size_t *len);

/* The most of a request's head (request line and headers) read. */
#define NET_METRICS_REQ_MAX 4096
/* What a request whose first len bytes are buf gets: 0 while its head is
 * not complete (no blank line yet) and may still be valid; else the HTTP
 * status to answer: 200 for GET /metrics (a query string allowed), 404
 * for GET of another path, 405 for another method, 400 for anything that
 * is not an HTTP/1.x request line, 431 for a head of NET_METRICS_REQ_MAX
 * bytes or more. */
int net_metrics_request(const char *buf, size_t len);

struct net_metrics;
/* Listen on host:port and serve the sources' figures (v and the servers
 * must outlive the responder; v is copied). Returns 0 and *out, or a
 * negative errno (logged). */
int net_metrics_start(const char *host, uint16_t port, const struct net_metrics_source *v, size_t n,
                      struct net_metrics **out);
/* Stop serving and free (NULL: nothing). Before the servers stop. */
void net_metrics_stop(struct net_metrics *m);

#endif
