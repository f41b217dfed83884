/* Heartbeat thread (hb.h). */
#include "hb.h"

#include "../common/log.h"
#include "../common/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct hb {
    struct hb_opts o;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop;
    bool force; /* fetch the map at the next beat, whatever its epoch */
    uint64_t incarnation;
};

static int fetch_map(struct hb *h, struct net_conn *c)
{
    struct proto_get_map_req q = {0};
    struct proto_get_map_rep r;
    bool transport = false;
    int rc = net_call_get_map(c, &q, &r, NULL, 0, NULL, 0, NULL, &transport);
    if (rc)
        return rc;
    struct cluster_map m = {0};
    if ((rc = map_decode(r.map.p, r.map.len, &m)))
        return rc;
    m.epoch = r.epoch;
    h->o.on_map(h->o.ctx, &m);
    map_free(&m);
    return 0;
}

static void *hb_main(void *arg)
{
    struct hb *h = arg;
    struct net_conn *c = NULL;
    struct proto_tstats *ts = malloc(sizeof(*ts));
    uint64_t seen_epoch = 0;
    bool warned = false;
    if (!ts)
        return NULL;
    pthread_mutex_lock(&h->lock);
    while (!h->stop) {
        bool force = h->force;
        h->force = false;
        pthread_mutex_unlock(&h->lock);
        int rc = 0;
        if (!c)
            rc = net_connect(h->o.mgmt_host, h->o.mgmt_port, h->o.key, h->incarnation, h->o.node,
                             2000, &c);
        if (rc == 0) {
            memset(ts, 0, sizeof(*ts));
            rc = h->o.stats(h->o.ctx, ts);
            struct proto_heartbeat_req q = {.kind = h->o.kind,
                                            .node = proto_str_c(h->o.node),
                                            .host = proto_str_c(h->o.host),
                                            .port = h->o.port,
                                            .incarnation = h->incarnation};
            q.targets = *ts;
            struct proto_heartbeat_rep r;
            bool transport = false;
            if (rc == 0)
                rc = net_call_heartbeat(c, &q, &r, NULL, 0, NULL, 0, NULL, &transport);
            if (rc == 0 && h->o.on_map && (r.epoch != seen_epoch || force)) {
                if ((rc = fetch_map(h, c)) == 0)
                    seen_epoch = r.epoch;
            }
            if (rc && transport) {
                net_close(c);
                c = NULL;
            }
        }
        if (rc && !warned) {
            log_warn("heartbeat to mgmt %s:%u failed: %s; retrying every %d ms", h->o.mgmt_host,
                     h->o.mgmt_port, log_err(rc), h->o.interval_ms);
            warned = true;
        } else if (rc == 0 && warned) {
            log_info("heartbeat to mgmt %s:%u restored", h->o.mgmt_host, h->o.mgmt_port);
            warned = false;
        }
        struct timespec ts2;
        util_deadline(&ts2, CLOCK_REALTIME, h->o.interval_ms);
        pthread_mutex_lock(&h->lock);
        if (!h->stop && !h->force)
            pthread_cond_timedwait(&h->cond, &h->lock, &ts2);
    }
    pthread_mutex_unlock(&h->lock);
    net_close(c);
    free(ts);
    return NULL;
}

int hb_start(const struct hb_opts *o, struct hb **out)
{
    struct hb *h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    h->o = *o;
    h->incarnation = util_now_real_ns();
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    int rc = pthread_create(&h->thread, NULL, hb_main, h);
    if (rc) {
        free(h);
        return -rc;
    }
    *out = h;
    return 0;
}

void hb_refresh(struct hb *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    h->force = true;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
}

void hb_stop(struct hb *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    h->stop = true;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->thread, NULL);
    free(h);
}
