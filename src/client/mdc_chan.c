/*
 * The metadata cache's revocation channels (mdcache.h): a thread per MDT
 * that long-polls it (LEASE_POLL) for the leases it revokes, and
 * mdc_start and mdc_stop, which start and stop them.
 *
 * Built on the transport core alone: each channel borrows a connection
 * from its MDT's pool and never gives it back. A poll acknowledges the
 * revocations the last one brought, once mdc_heard has taken them in. A
 * poll that fails, or hears nothing for RECV_LIMIT ms, loses the channel,
 * and everything its MDT leased is dropped; the channel opens again (backing off)
 * and its MDT's leases count once it has heard that MDT's instance. The
 * transport core tells the cache of a broken MDT connection through the
 * hook mdc_start sets in struct stria_fs.
 */
#include "mdcache_int.h"

#include "../common/log.h"
#include "peek.h"

#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define RECV_LIMIT 5000 /* ms without an answer from the channel: broken */

/* Nothing its MDT leased may be used any more: a channel is gone (and the
 * MDT drops this client's leases when it sees it close). */
static void channel_lost(struct mdc_chan *ch)
{
    struct mdc *m = ch->m;
    pthread_mutex_lock(&m->lock);
    ch->instance = 0;
    mdc_forget_mdt_locked(m, ch->mdt);
    struct net_conn *c = ch->conn;
    ch->conn = NULL;
    pthread_mutex_unlock(&m->lock);
    net_close(c);
    mdc_revoked_fn fn = __atomic_load_n(&m->revoked, __ATOMIC_ACQUIRE);
    if (fn)
        fn(m->fs, ch->mdt, 0);
}

static int channel_open(struct mdc_chan *ch)
{
    struct mdc *m = ch->m;
    struct lease l;
    int rc = cl_get(m->fs, PROTO_NODE_META, ch->mdt, &l);
    if (rc)
        return rc;
    /* The connection is ours from now on: it never goes back to the pool. */
    struct timeval tv = {RECV_LIMIT / 1000, 0};
    setsockopt(l.c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    pthread_mutex_lock(&m->lock);
    bool stop = m->stop;
    if (!stop)
        ch->conn = l.c;
    pthread_mutex_unlock(&m->lock);
    if (stop) {
        net_close(l.c);
        return -ECANCELED;
    }
    return 0;
}

static void *channel_main(void *arg)
{
    struct mdc_chan *ch = arg;
    struct mdc *m = ch->m;
    uint64_t acked = 0;
    int failures = 0;
    for (;;) {
        pthread_mutex_lock(&m->lock);
        bool stop = m->stop;
        struct net_conn *c = ch->conn;
        pthread_mutex_unlock(&m->lock);
        if (stop)
            break;
        if (!c) {
            if (channel_open(ch)) {
                /* Bounded back-off: 50 ms doubling to 1 s. */
                int ms = failures < 5 ? 50 << failures : 1000;
                failures++;
                for (int i = 0; i < ms / 50 && !__atomic_load_n(&m->stop, __ATOMIC_RELAXED); i++)
                    usleep(50 * 1000);
            }
            acked = 0;
            continue;
        }
        struct proto_lease_poll_req q = {.acked = acked};
        struct proto_lease_poll_rep r;
        bool transport = false;
        int rc = net_call_lease_poll(c, &q, &r, NULL, 0, NULL, 0, NULL, &transport);
        if (rc) {
            if (!__atomic_load_n(&m->stop, __ATOMIC_RELAXED))
                log_warn("metadata cache: revocation channel to MDT%04x lost (%s); "
                         "what it leased is dropped",
                         ch->mdt, log_err(rc));
            channel_lost(ch);
            continue;
        }
        failures = 0;
        uint32_t n = r.revokes.len / 16;
        mdc_heard(m, ch->mdt, r.instance, r.revokes.p, n, r.kinds.p, r.kinds.len);
        if (n)
            acked = r.first + n - 1;
    }
    channel_lost(ch);
    return NULL;
}

/* The transport core's hook: a connection to MDT mdt broke under a call. */
static void mdt_conn_broke(stria_fs_t *fs, uint32_t mdt)
{
    if (fs->mdc)
        mdc_forget_mdt(fs->mdc, mdt);
}

/* Stop every channel started. */
static void stop_channels(struct mdc *m)
{
    pthread_mutex_lock(&m->lock);
    m->stop = true;
    for (uint32_t i = 0; i < m->nchan; i++)
        if (m->chan[i].conn)
            shutdown(m->chan[i].conn->fd, SHUT_RDWR); /* wakes the channel's wait */
    pthread_mutex_unlock(&m->lock);
    for (uint32_t i = 0; i < m->nchan; i++)
        if (m->chan[i].started)
            pthread_join(m->chan[i].thread, NULL);
}

int mdc_start(stria_fs_t *fs)
{
    uint32_t nmdt = __atomic_load_n(&fs->mdt_count, __ATOMIC_RELAXED);
    struct mdc *m = mdc_create(fs, nmdt ? nmdt : 1);
    if (!m)
        return -ENOMEM;
    for (uint32_t i = 0; i < m->nchan; i++) {
        int rc = pthread_create(&m->chan[i].thread, NULL, channel_main, &m->chan[i]);
        if (rc) {
            stop_channels(m);
            mdc_destroy(m);
            return -rc;
        }
        m->chan[i].started = true;
    }
    if (peek_start(fs)) {
        stop_channels(m);
        mdc_destroy(m);
        return -ENOMEM;
    }
    fs->mdc = m;
    fs->mdt_conn_broke = mdt_conn_broke;
    return 0;
}

void mdc_stop(stria_fs_t *fs)
{
    struct mdc *m = fs->mdc;
    if (!m)
        return;
    peek_stop(fs);
    stop_channels(m);
    fs->mdt_conn_broke = NULL;
    fs->mdc = NULL;
    mdc_destroy(m);
}
