/*
 * Requests parked by their handler (server.h, net_park): a long poll, such
 * as an MDT's revocation channel, waits here with no worker and, when its
 * payload is small, no pooled buffer, until net_wake or its time is up;
 * then it is queued again like a request just read, and its handler is
 * called again.
 *
 * An id lives in a hash from net_park until the request is queued again
 * or its handler answers without parking; a connection holds at most one.
 * Everything here is under srv->lock. The parked list runs by deadline,
 * soonest first: a park is put in place from the tail (parks of one length
 * come in order, so that is one step), and the loop's tick (srv_park_expire)
 * serves again those past their time from the head, stopping at the first
 * not yet due; 10,000 parked polls cost it nothing until they are due.
 * srv_park kicks the loop awake when the first one parks, since an idle
 * loop does not tick.
 */
#include "server_int.h"

#include "../common/log.h"
#include "../common/util.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static struct srv_conn **phash_slot(struct net_server *s, uint64_t id)
{
    struct srv_conn **p = &s->phash[util_mix64(id) % SRV_PBUCKETS];
    while (*p && (*p)->park_id != id)
        p = &(*p)->phnext;
    return p;
}

/* sc's id goes stale, and sc is no longer parked. */
static void park_end(struct net_server *s, struct srv_conn *sc)
{
    struct srv_conn **p = phash_slot(s, sc->park_id);
    if (*p == sc)
        *p = sc->phnext;
    if (sc->park == PARK_PARKED) {
        if (sc->pprev)
            sc->pprev->pnext = sc->pnext;
        else
            s->parked = sc->pnext;
        if (sc->pnext)
            sc->pnext->pprev = sc->pprev;
        else
            s->parked_tail = sc->pprev;
        __atomic_sub_fetch(&s->nparked, 1, __ATOMIC_RELAXED);
    }
    sc->phnext = sc->pnext = sc->pprev = NULL;
    sc->park_id = 0;
    sc->park = PARK_NONE;
}

/* sc's request waits for a worker again. Its time parked is the
 * handler's choice, neither service nor queueing: the figures count from
 * here. */
static void requeue(struct srv_conn *sc)
{
    sc->ready_ns = util_now_mono_ns();
    srv_enqueue(sc->srv, sc);
}

uint64_t net_park(struct net_req *req, int ms)
{
    struct srv_conn *sc = req->conn;
    struct net_server *s = sc->srv;
    if (s->replies && s->o.cached[sc->h.opcode] && PROTO_HDR_TAG(&sc->h))
        return 0; /* its reply is kept: it is answered by the worker that serves it */
    sc->took_id = true;
    pthread_mutex_lock(&s->lock);
    if (sc->park == PARK_NONE) {
        sc->park_id = ++s->park_seq;
        sc->park = PARK_TAKEN;
        struct srv_conn **b = &s->phash[util_mix64(sc->park_id) % SRV_PBUCKETS];
        sc->phnext = *b;
        *b = sc;
    }
    sc->park_until_ns = (int64_t)util_now_mono_ns() + (int64_t)ms * 1000000;
    uint64_t id = sc->park_id;
    pthread_mutex_unlock(&s->lock);
    return id;
}

static int park_without_id(const struct srv_conn *sc)
{
    log_warn("a handler parked a request without an id peer=%s op=%s", sc->peer,
             proto_op_name(sc->h.opcode));
    return -EIO;
}

int srv_park_settle(struct srv_conn *sc, int status)
{
    struct net_server *s = sc->srv;
    /* Most requests never take an id: no lock for them. */
    if (!sc->took_id)
        return status == NET_PARKED ? park_without_id(sc) : status;
    sc->took_id = false;
    pthread_mutex_lock(&s->lock);
    if (status != NET_PARKED)
        park_end(s, sc);
    pthread_mutex_unlock(&s->lock);
    return status;
}

void srv_park(struct srv_conn *sc)
{
    struct net_server *s = sc->srv;
    if (srv_payload_pooled(sc) && sc->h.payload_len <= SRV_PARK_INLINE) {
        memcpy(sc->inl, sc->payload, sc->h.payload_len);
        srv_buf_put(s, sc->payload, sc->h.payload_len);
        sc->payload = sc->inl;
    }
    pthread_mutex_lock(&s->lock);
    if (sc->park == PARK_WOKEN) {
        /* net_wake came while the handler was still on its way out. */
        park_end(s, sc);
        sc->woken = NET_WOKEN;
        pthread_mutex_unlock(&s->lock);
        requeue(sc);
        return;
    }
    sc->park = PARK_PARKED;
    struct srv_conn *after = s->parked_tail;
    while (after && after->park_until_ns > sc->park_until_ns)
        after = after->pprev;
    sc->pprev = after;
    sc->pnext = after ? after->pnext : s->parked;
    if (sc->pnext)
        sc->pnext->pprev = sc;
    else
        s->parked_tail = sc;
    if (after)
        after->pnext = sc;
    else
        s->parked = sc;
    bool first = __atomic_fetch_add(&s->nparked, 1, __ATOMIC_RELAXED) == 0;
    pthread_mutex_unlock(&s->lock);
    uint64_t one = 1;
    if (first && write(s->wake_fd, &one, sizeof(one)) < 0)
        log_warn("cannot wake the event loop: %s", strerror(errno));
}

void net_wake(struct net_server *s, uint64_t id)
{
    if (!id)
        return;
    pthread_mutex_lock(&s->lock);
    struct srv_conn *sc = *phash_slot(s, id);
    if (sc && sc->park == PARK_TAKEN)
        sc->park = PARK_WOKEN; /* srv_park queues it */
    /* Stopping: the connections are closed, parked ones with the rest. */
    if (!sc || sc->park != PARK_PARKED || s->stopping) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    park_end(s, sc);
    sc->woken = NET_WOKEN;
    pthread_mutex_unlock(&s->lock);
    requeue(sc);
}

void srv_park_expire(struct net_server *s, int64_t now)
{
    struct srv_conn *due = NULL;
    pthread_mutex_lock(&s->lock);
    for (struct srv_conn *sc = s->parked, *next; sc && sc->park_until_ns <= now; sc = next) {
        next = sc->pnext;
        park_end(s, sc);
        sc->woken = NET_EXPIRED;
        sc->pnext = due;
        due = sc;
    }
    pthread_mutex_unlock(&s->lock);
    for (struct srv_conn *sc = due, *next; sc; sc = next) {
        next = sc->pnext;
        sc->pnext = NULL;
        requeue(sc);
    }
}

void srv_park_close(struct srv_conn *sc)
{
    if (sc->park != PARK_NONE)
        park_end(sc->srv, sc);
}
