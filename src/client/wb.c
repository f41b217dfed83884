/*
 * Write-behind unlink (wb.h).
 *
 * A queue under one mutex, each MDT's grant beside it, and one thread that
 * sends the queue in batches: up to WB_BATCH unlinks for one MDT, the
 * oldest item's, in their order, in one UNLINKS request (protocol.md),
 * which the MDT commits together; an unlink sent again after a broken
 * connection, or a batch of one, goes as UNLINKs written back to back on
 * one connection, then their replies read in order. An unlink goes to the MDT holding its
 * name (a striped directory's shard), under that MDT's grant: each MDT gates its own
 * requests, so each grant covers only the names it holds. `pending`
 * counts what is queued or in flight; wb_flush waits for it to reach zero.
 * An MDT out of reach (restarting, failing over) is waited for as a call
 * of the program's waits for its target, until client.conf's timeout_ms:
 * its unlinks go back to the queue, parked, while the sender serves the
 * other MDTs' (park).
 *
 * Queuing and revocation meet under the mutex: once wb_revoked has marked
 * an MDT's grant lost, nothing more is queued for it, and it returns only
 * when what was queued for that MDT before has been answered, so the MDT
 * hears everything before it lets another client in.
 *
 * Data-on-MDT bytes written behind (wb_behind_begin) are queued the same
 * way, in gathering's behind buffers, with the mutex held: so wb_revoked,
 * once it has marked the grant lost, waits for all of them too. Each
 * grant keeps the room the MDT's records had left when an OPEN brought
 * it, less what this client wrote there since (wb_dom_used); bytes are
 * written behind only while that room, less WB_DOM_RESERVE, covers them
 * and those still on their way, and while those on their way stay within
 * WB_DOM_RESERVE: while the grant is held no other client's request runs
 * on that MDT, so a write behind never meets ENOSPC there.
 *
 * Files created behind under the same grant are wb_create.c's.
 */
#include "wb_int.h"

#include "../common/log.h"
#include "../common/util.h"
#include "gather.h"
#include "inode.h"
#include "mdcache.h"
#include "ns.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WB_BATCH   64
#define WB_MAX     4096 /* queued at most; past it, unlinks wait */
#define WB_BACKOFF 1000 /* ms not to ask for the grant after losing it */
/* Room kept back from what an OPEN said: the bytes written behind that
 * were on their way when the MDT counted. What is on its way behind to an
 * MDT is kept within it (wb_behind_begin): gathering's buffers alone
 * (32 of up to 1 MiB) could hold more. */
#define WB_DOM_RESERVE (16ull << 20)

struct wb_item {
    struct wb_item *next;
    uint64_t parent;
    uint32_t mdt; /* the MDT holding the name */
    /* As a change in flight (TARGET_CALL): its sequence number and slot,
     * kept when it goes again on a new connection (resend). */
    uint64_t seq;
    uint16_t tag;  /* 0: none yet (never sent) */
    uint16_t slot; /* wb_name_slot, counted in wb.unlinking while pending */
    bool resend;
    struct proto_cred cred;
    char name[PROTO_MAX_STR + 1];
};

/* ---- the sender ---- */

/* What the MDT answered to one unlink of a batch. */
static void answered(struct wb *w, const struct wb_item *it, int64_t sent,
                     const struct proto_unlink_rep *r)
{
    stria_fs_t *fs = w->fs;
    if (it->resend) {
        /* Answered from the reply the MDT kept: its leases and grant are
         * of the first answer's moment, perhaps taken back since; and
         * reads since the break may have seen the state before it. */
        if (fs->mdc)
            mdc_forget_mdt(fs->mdc, it->mdt);
    } else {
        cl_note(fs, sent, &r->leases, it->parent, it->name, 0, 0, NULL, NULL);
        /* A grant of the lease table the channel hears only: numbers
         * start again in another (a restarted MDT). */
        if (r->wb_ms && fs->mdc && mdc_reply_mdt(fs->mdc, r->leases.instance) == (int)it->mdt)
            wb_granted(fs, it->mdt, r->wb_id, r->wb_ms, sent, WB_ROOM_UNKNOWN);
    }
    if (r->gone) {
        struct stria_removed rm = {r->ino, r->gone, r->destroy, r->size, r->layout};
        w->removed(fs, &rm);
    }
}

static void failed(struct wb *w, const struct wb_item *it, int rc)
{
    __atomic_add_fetch(&w->stats.failed, 1, __ATOMIC_RELAXED);
    /* The application was told it worked; the name stays. */
    log_warn("write-behind unlink of '%s' in directory %llx failed: %s", it->name,
             (unsigned long long)it->parent, log_err(rc));
}

/* The end of a request or batch whose replies were read up to items[from]
 * of items[0..n): the rest, unanswered, go again as resends (perhaps
 * made: the MDT knows by their slots); the lease goes back, closed if the
 * connection broke, and the batch's objects are removed. */
static void batch_end(struct wb *w, struct wb_item **items, uint32_t from, uint32_t n,
                      bool unanswered, struct lease *l, bool broken,
                      struct cl_destroyed_batch *gone)
{
    for (uint32_t i = from; unanswered && i < n; i++)
        items[i]->resend = true;
    cl_put(l, broken);
    cl_destroyed_end(gone);
    if (broken && w->fs->mdc && n)
        mdc_forget_mdt(w->fs->mdc, items[0]->mdt); /* what happened to the rest is unknown */
}

/* A connection to the MDT of items[0..n) in *l: 0; or the error, with
 * which each of them then failed unless it says the MDT is out of reach
 * (they then wait for it: send_items). */
static int get_or_fail(struct wb *w, struct wb_item **items, uint32_t n, struct lease *l)
{
    int rc = cl_get(w->fs, PROTO_NODE_META, items[0]->mdt, l);
    for (uint32_t i = 0; rc && !cl_unreachable(rc, false) && i < n; i++)
        failed(w, items[i], rc);
    return rc;
}

/* Send n items (one MDT) pipelined; returns how many were answered or
 * failed (the rest met a broken connection or no MDT). */
static uint32_t send_batch(struct wb *w, struct wb_item **items, uint32_t n)
{
    stria_fs_t *fs = w->fs;
    struct lease l;
    int rc = get_or_fail(w, items, n, &l);
    if (rc)
        return cl_unreachable(rc, false) ? 0 : n;
    uint64_t reqid[WB_BATCH];
    bool on_wire[WB_BATCH];
    int64_t sent = mdc_clock_ms();
    uint32_t nsent = 0;
    bool broken = false;
    for (; nsent < n && !broken; nsent++) {
        struct wb_item *it = items[nsent];
        struct proto_unlink_req q = {
            .cred = it->cred, .parent = it->parent, .path = proto_str_c(it->name), .want_wb = 1};
        uint8_t buf[PROTO_MAX_REQ_PAYLOAD];
        struct proto_enc e;
        proto_enc_init(&e, buf, sizeof(buf));
        on_wire[nsent] = false;
        if ((rc = proto_enc_unlink_req(&e, &q))) {
            failed(w, it, rc); /* this one only */
            continue;
        }
        l.c->seq = it->seq;
        l.c->tag = it->tag;
        l.c->resend = it->resend;
        if ((rc = net_send(l.c, PROTO_OP_UNLINK, buf, (uint32_t)e.len, NULL, 0, &reqid[nsent]))) {
            broken = true;
            nsent--; /* not sent: it goes again with the rest */
            continue;
        }
        on_wire[nsent] = true;
    }
    /* The DESTROYED of the batch's files go together, once it is read. */
    struct cl_destroyed_batch gone;
    cl_destroyed_begin(fs, &gone);
    uint32_t done = 0;
    for (; done < nsent; done++) {
        if (!on_wire[done])
            continue;
        bool transport = false;
        struct proto_unlink_rep r;
        memset(&r, 0, sizeof(r));
        rc = net_recv(l.c, reqid[done], NULL, 0, NULL, &transport);
        if (rc == 0) {
            struct proto_dec d;
            proto_dec_init(&d, l.c->rx, l.c->rx_len);
            if (proto_dec_unlink_rep(&d, &r))
                rc = -EPROTO, transport = true;
        }
        if (transport) {
            broken = true;
            break;
        }
        if (rc)
            failed(w, items[done], rc);
        else
            answered(w, items[done], sent, &r);
    }
    batch_end(w, items, done, n, broken, &l, broken, &gone);
    return broken ? done : n;
}

/* Whether a and b are the same caller (an UNLINKS carries one cred). */
static bool same_cred(const struct proto_cred *a, const struct proto_cred *b)
{
    return a->uid == b->uid && a->gid == b->gid && a->ngroups == b->ngroups &&
           a->ngroups <= PROTO_MAX_GROUPS &&
           memcmp(a->groups, b->groups, a->ngroups * sizeof(a->groups[0])) == 0;
}

/* Send the first of n items (one MDT, none a resend) that share a cred
 * and fit, at most PROTO_MAX_UNLINKS, as one UNLINKS, which the MDT
 * commits together. Returns how many it took, each answered or failed;
 * 0 when none was taken: *broken says the connection broke, and else the
 * MDT refused the request (it gave no answer for any). The items of a
 * request without its answer are marked to go again as resends, one by
 * one: their slots find the replies the MDT kept of what it made. */
static uint32_t send_unlinks(struct wb *w, struct wb_item **items, uint32_t n, bool *broken)
{
    stria_fs_t *fs = w->fs;
    *broken = false;
    struct proto_enc e;
    proto_enc_init(&e, w->list, sizeof(w->list));
    uint32_t k = 0;
    for (; k < n && k < PROTO_MAX_UNLINKS; k++) {
        if (k && !same_cred(&items[k]->cred, &items[0]->cred))
            break;
        size_t at = e.len;
        struct proto_unlinks_item it = {items[k]->parent, items[k]->seq, items[k]->tag,
                                        proto_str_c(items[k]->name)};
        proto_unlinks_item_put(&e, &it);
        if (e.err) {
            e.len = at, e.err = 0; /* full: the rest go next */
            break;
        }
    }
    if (k == 0)
        return 0;
    struct lease l;
    int rc = get_or_fail(w, items, k, &l);
    if (rc) {
        *broken = cl_unreachable(rc, false);
        return *broken ? 0 : k;
    }
    struct proto_unlinks_req q = {
        .cred = items[0]->cred, .want_wb = 1, .items = {w->list, (uint32_t)e.len}};
    uint8_t buf[PROTO_MAX_REQ_PAYLOAD];
    struct proto_enc qe;
    proto_enc_init(&qe, buf, sizeof(buf));
    int64_t sent = mdc_clock_ms();
    bool transport = false;
    uint64_t reqid;
    if ((rc = proto_enc_unlinks_req(&qe, &q)) == 0 &&
        (rc = net_send(l.c, PROTO_OP_UNLINKS, buf, (uint32_t)qe.len, NULL, 0, &reqid)))
        transport = true;
    if (rc == 0)
        rc = net_recv(l.c, reqid, NULL, 0, NULL, &transport);
    struct proto_unlinks_rep r;
    struct proto_dec d;
    if (rc == 0) {
        proto_dec_init(&d, l.c->rx, l.c->rx_len);
        if (proto_dec_unlinks_rep(&d, &r))
            rc = -EPROTO, transport = true;
        else
            proto_dec_init(&d, r.results.p, r.results.len);
    }
    struct cl_destroyed_batch gone;
    cl_destroyed_begin(fs, &gone);
    uint32_t i = 0;
    for (; rc == 0 && i < k; i++) {
        int32_t st;
        struct proto_blob one;
        struct proto_unlink_rep ur;
        struct proto_dec od;
        if (proto_result_get(&d, &st, &one)) {
            rc = -EPROTO, transport = true;
            break;
        }
        proto_dec_init(&od, one.p, one.len);
        if (st == 0 && proto_dec_unlink_rep(&od, &ur)) {
            rc = -EPROTO, transport = true;
            break;
        }
        if (st)
            failed(w, items[i], st);
        else
            answered(w, items[i], sent, &ur);
    }
    batch_end(w, items, i, k, rc != 0, &l, transport, &gone);
    *broken = transport;
    if (i) {
        pthread_mutex_lock(&w->lock);
        w->stats.batched += i;
        w->stats.batches++;
        pthread_mutex_unlock(&w->lock);
    }
    if (rc && i == 0 && !transport)
        log_warn(
            "write-behind: MDT%04x refused %u unlinks in one request (%s); sending them one by one",
            items[0]->mdt, k, log_err(rc));
    return rc ? i : k;
}

/* Send n items (one MDT): in UNLINKS requests while the MDT takes them,
 * else pipelined one by one, until the connection breaks or the MDT is
 * out of reach. Returns how many were answered or failed; the rest, from
 * the first, go again. */
static uint32_t send_items(struct wb *w, struct wb_item **items, uint32_t n)
{
    uint32_t ok = 0;
    bool singles = false, broken = false;
    while (ok < n && !broken) {
        uint32_t k;
        if (!singles && n - ok > 1 && !items[ok]->resend) {
            k = send_unlinks(w, items + ok, n - ok, &broken);
            if (k == 0 && !broken)
                singles = true;
        } else {
            k = send_batch(w, items + ok, n - ok);
            broken = k < n - ok;
        }
        ok += k;
    }
    return ok;
}

/* An unlink the sender is done with (lock held). */
static void item_done(struct wb *w, struct wb_item *it)
{
    w->unlinking[it->slot]--;
    w->g[it->mdt].pending--;
    w->pending--;
    w->stats.sent++;
    if (it->tag)
        cl_tag_put(it->tag);
    free(it);
}

/* After a round of mdt's unlinks left items[0..n) unsent (lock held):
 * they go back to the head of the queue, in their order, and the MDT is
 * tried again at once after the first break (a pooled connection found
 * dead, as a call's first try is: TARGET_CALL), then after pauses that
 * double up to a second, as cl_retry_again's; past client.conf's
 * timeout_ms they fail, and so does each later batch for it that finds it
 * still out of reach. A parked item that never went keeps no slot (tag):
 * a process has 1,024, and unsent items of many MDTs out of reach could
 * take them all, and every change would wait for one. */
static void park(struct wb *w, uint32_t mdt, struct wb_item **items, uint32_t n, bool progress)
{
    struct wb_grant *g = &w->g[mdt];
    int64_t now = mdc_clock_ms(),
            timeout = __atomic_load_n(&w->fs->conf.timeout_ms, __ATOMIC_RELAXED);
    if (progress)
        g->park_deadline_ms = 0; /* the MDT answered: a new break */
    if (!g->park_deadline_ms) {
        g->park_deadline_ms = now + timeout;
        g->park_delay_ms = 0;
    } else if (now >= g->park_deadline_ms) {
        log_warn("write-behind: MDT%04x out of reach for %lld ms: %u unlinks fail", mdt,
                 (long long)(now - g->park_deadline_ms + timeout), n);
        for (uint32_t i = 0; i < n; i++) {
            failed(w, items[i], -EIO);
            item_done(w, items[i]);
        }
        g->park_until_ms = 0; /* the deadline stays, until the MDT answers */
        return;
    } else {
        g->park_delay_ms = g->park_delay_ms ? MIN(g->park_delay_ms * 2, 1000) : 50;
    }
    g->park_until_ms = now + g->park_delay_ms;
    for (uint32_t i = n; i-- > 0;) {
        if (items[i]->tag && !items[i]->resend) {
            cl_tag_put(items[i]->tag); /* not sent: a new slot and seq next time */
            items[i]->tag = 0;
        }
        items[i]->next = w->head;
        w->head = items[i];
        if (!w->tail)
            w->tail = items[i];
    }
    w->queued += n;
}

/* Wait for work (lock held): until an item's MDT may be tried, or stop
 * with nothing queued. Returns the first such item, NULL to end. */
static struct wb_item *next_item(struct wb *w)
{
    for (;;) {
        int64_t now = mdc_clock_ms(), wake = INT64_MAX;
        for (struct wb_item *it = w->head; it; it = it->next) {
            int64_t at = w->g[it->mdt].park_until_ms;
            if (at <= now)
                return it;
            wake = MIN(wake, at);
        }
        if (!w->head && w->stop)
            return NULL;
        if (!w->head) {
            pthread_cond_wait(&w->work, &w->lock);
            continue;
        }
        struct timespec ts;
        util_deadline(&ts, CLOCK_MONOTONIC, wake - now);
        pthread_cond_timedwait(&w->work, &w->lock, &ts);
    }
}

static void *sender_main(void *arg)
{
    struct wb *w = arg;
    wb_pass_behind(true); /* wb_flush: its calls need no order with them */
    struct wb_item *items[WB_BATCH];
    pthread_mutex_lock(&w->lock);
    struct wb_item *first;
    while ((first = next_item(w))) {
        /* One batch: the first item's MDT's items, in their order, from
         * anywhere in the queue. Names on different MDTs are independent
         * (a name lives on one); in a striped directory consecutive
         * unlinks go to different MDTs, and batches of consecutive items
         * were one item each. */
        uint32_t n = 0;
        uint32_t mdt = first->mdt;
        struct wb_item **p = &w->head, *last = NULL;
        while (*p && n < WB_BATCH) {
            if ((*p)->mdt == mdt) {
                items[n++] = *p;
                *p = (*p)->next;
            } else {
                last = *p;
                p = &(*p)->next;
            }
        }
        if (!*p)
            w->tail = last;
        w->queued -= n;
        pthread_cond_broadcast(&w->done); /* room in the queue */
        pthread_mutex_unlock(&w->lock);
        if (w->delay_ms)
            usleep(w->delay_ms * 1000u);
        for (uint32_t i = 0; i < n; i++) {
            if (items[i]->tag)
                continue;                 /* going again: the same change */
            items[i]->tag = cl_tag_get(); /* then the seq: rising within a slot */
            items[i]->seq = net_next_seq();
            items[i]->resend = false;
        }
        uint32_t ok = send_items(w, items, n);
        pthread_mutex_lock(&w->lock);
        for (uint32_t i = 0; i < ok; i++)
            item_done(w, items[i]);
        if (ok < n)
            park(w, mdt, items + ok, n - ok, ok > 0);
        else
            w->g[mdt].park_deadline_ms = w->g[mdt].park_until_ms = 0;
        pthread_cond_broadcast(&w->done);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* ---- the interface ---- */

uint32_t wb_name_slot(uint64_t parent, const char *name)
{
    return (uint32_t)((util_hash64(name, strlen(name)) ^ util_mix64(parent)) % WB_NAME_SLOTS);
}

bool wb_held(const struct wb *w, uint32_t mdt, int64_t now)
{
    const struct wb_grant *g = &w->g[mdt];
    return g->id > g->revoked && now < g->until_ms;
}

uint64_t wb_grant_id(stria_fs_t *fs, uint32_t mdt)
{
    struct wb *w = fs->wb;
    if (!w || mdt >= MDC_MAX_MDTS)
        return 0;
    pthread_mutex_lock(&w->lock);
    uint64_t id = wb_held(w, mdt, mdc_clock_ms()) ? w->g[mdt].id : 0;
    pthread_mutex_unlock(&w->lock);
    return id;
}

uint32_t wb_unlink_hold(stria_fs_t *fs, uint64_t parent, const char *name)
{
    struct wb *w = fs->wb;
    uint32_t slot = wb_name_slot(parent, name);
    pthread_mutex_lock(&w->lock);
    w->unlinking[slot]++;
    pthread_mutex_unlock(&w->lock);
    return slot;
}

void wb_unlink_unhold(stria_fs_t *fs, uint32_t slot)
{
    struct wb *w = fs->wb;
    pthread_mutex_lock(&w->lock);
    w->unlinking[slot]--;
    pthread_mutex_unlock(&w->lock);
}

int wb_unlink(stria_fs_t *fs, uint64_t parent, uint32_t mdt, const char *name,
              const struct proto_cred *cred, uint64_t id, uint32_t slot)
{
    struct wb *w = fs->wb;
    size_t len = strlen(name);
    if (len > PROTO_MAX_STR || mdt >= MDC_MAX_MDTS)
        return -EAGAIN;
    struct wb_item *it = malloc(sizeof(*it));
    if (!it)
        return -EAGAIN;
    it->next = NULL;
    it->tag = 0;
    it->parent = parent;
    it->mdt = mdt;
    it->cred = *cred;
    memcpy(it->name, name, len + 1);
    pthread_mutex_lock(&w->lock);
    while (w->queued >= WB_MAX && wb_held(w, mdt, mdc_clock_ms()) && !w->stop)
        pthread_cond_wait(&w->done, &w->lock);
    if (w->stop || !wb_held(w, mdt, mdc_clock_ms()) || w->g[mdt].id != id || w->refuse_unlinks) {
        pthread_mutex_unlock(&w->lock);
        free(it);
        return -EAGAIN;
    }
    if (w->tail)
        w->tail->next = it;
    else
        w->head = it;
    w->tail = it;
    w->queued++;
    w->pending++;
    w->g[mdt].pending++;
    it->slot = (uint16_t)slot;
    w->stats.queued++;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->lock);
    return 0;
}

/* Set while this thread's call may pass the bytes written behind. */
static _Thread_local bool passing;

void wb_pass_behind(bool on)
{
    passing = on;
}

void wb_flush(stria_fs_t *fs)
{
    struct wb *w = fs->wb;
    /* The sender waiting for its own batch would wait for ever; its calls
     * (removals' DESTROYED) need no order with bytes written behind, and
     * waiting for those could meet a sender of them waiting for its batch. */
    if (!w || pthread_equal(pthread_self(), w->thread))
        return;
    /* A name known new may be one created behind: those go first always. */
    if (!passing)
        gather_drain_behind(fs, 0);
    else
        gather_drain_creates(fs);
    if (__atomic_load_n(&w->pending, __ATOMIC_ACQUIRE) == 0)
        return;
    pthread_mutex_lock(&w->lock);
    while (w->pending)
        pthread_cond_wait(&w->done, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

bool wb_behind_begin(stria_fs_t *fs, uint32_t mdt, uint64_t id, uint64_t end)
{
    struct wb *w = fs->wb;
    if (!w || mdt >= MDC_MAX_MDTS)
        return false;
    pthread_mutex_lock(&w->lock);
    const struct wb_grant *g = &w->g[mdt];
    uint64_t away = end + gather_behind_bytes(fs, mdt);
    if (!w->stop && g->id == id && wb_held(w, mdt, mdc_clock_ms()) && g->room != WB_ROOM_UNKNOWN &&
        away <= WB_DOM_RESERVE && g->room >= WB_DOM_RESERVE + away)
        return true; /* locked until wb_behind_end */
    pthread_mutex_unlock(&w->lock);
    return false;
}

void wb_behind_end(stria_fs_t *fs)
{
    pthread_mutex_unlock(&fs->wb->lock);
}

void wb_dom_used(stria_fs_t *fs, uint32_t mdt, uint64_t len)
{
    struct wb *w = fs->wb;
    if (!w || mdt >= MDC_MAX_MDTS)
        return;
    pthread_mutex_lock(&w->lock);
    struct wb_grant *g = &w->g[mdt];
    if (g->room != WB_ROOM_UNKNOWN)
        g->room = g->room > len ? g->room - len : 0;
    pthread_mutex_unlock(&w->lock);
}

bool wb_want(stria_fs_t *fs, uint32_t mdt, bool renew)
{
    struct wb *w = fs->wb;
    if (!w || mdt >= MDC_MAX_MDTS)
        return false;
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&w->lock);
    bool want = wb_held(w, mdt, now) ? renew : now >= w->g[mdt].backoff_until_ms;
    pthread_mutex_unlock(&w->lock);
    return want;
}

void wb_granted(stria_fs_t *fs, uint32_t mdt, uint64_t id, uint32_t ms, int64_t sent_ms,
                uint64_t room)
{
    struct wb *w = fs->wb;
    if (!w || !ms || mdt >= MDC_MAX_MDTS)
        return;
    pthread_mutex_lock(&w->lock);
    struct wb_grant *g = &w->g[mdt];
    /* A grant whose revocation was heard first stays dead. */
    if (id > g->revoked && id >= g->id && sent_ms > g->lost_ms) {
        /* The room a new grant brings; a renewal's may be older than what
         * this client counted since (wb_dom_used), so it is not taken. */
        if (id > g->id || g->room == WB_ROOM_UNKNOWN)
            g->room = room;
        if (id > g->id) {
            w->stats.grants++;
            g->since_ms = mdc_clock_ms();
        }
        g->id = id;
        g->until_ms = sent_ms + ms / 2; /* the rest is margin for the queue */
        mdc_exclusive(fs->mdc, mdt, g->since_ms, g->until_ms);
    }
    pthread_mutex_unlock(&w->lock);
}

void wb_revoked(stria_fs_t *fs, uint32_t mdt, uint64_t id)
{
    struct wb *w = fs->wb;
    if (!w || mdt >= MDC_MAX_MDTS)
        return;
    int64_t now = mdc_clock_ms();
    pthread_mutex_lock(&w->lock);
    struct wb_grant *g = &w->g[mdt];
    if (id == 0) {
        /* A new channel may meet a new MDT process, whose numbers restart. */
        g->id = g->revoked = 0;
        g->until_ms = 0;
        g->lost_ms = now;
    } else if (id > g->revoked) {
        g->revoked = id;
    }
    /* Before the revocation is acknowledged: then other clients change
     * what this one cached. */
    if (g->id <= g->revoked)
        mdc_exclusive(fs->mdc, mdt, 0, 0);
    g->backoff_until_ms = now + WB_BACKOFF;
    g->room = WB_ROOM_UNKNOWN;
    while (g->pending)
        pthread_cond_wait(&w->done, &w->lock);
    pthread_mutex_unlock(&w->lock);
    /* What was written behind before the mark was queued under the lock. */
    gather_drain_behind(fs, 0);
}

void wb_get_stats(stria_fs_t *fs, struct wb_stats *out)
{
    struct wb *w = fs->wb;
    memset(out, 0, sizeof(*out));
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    *out = w->stats;
    out->failed = __atomic_load_n(&w->stats.failed, __ATOMIC_RELAXED);
    out->created = __atomic_load_n(&w->stats.created, __ATOMIC_RELAXED);
    out->create_failed = __atomic_load_n(&w->stats.create_failed, __ATOMIC_RELAXED);
    out->create_differed = __atomic_load_n(&w->stats.create_differed, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&w->lock);
}

int wb_start(stria_fs_t *fs, wb_removed_fn removed)
{
    struct wb *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->fs = fs;
    w->removed = removed;
    for (uint32_t i = 0; i < MDC_MAX_MDTS; i++)
        w->g[i].room = WB_ROOM_UNKNOWN;
    /* Tests hold the queue back to show that other clients wait for it. */
    const char *d = getenv("STRIA_TEST_WB_DELAY_MS");
    if (d)
        w->delay_ms = (unsigned)strtoul(d, NULL, 10) % 60000u;
    /* Tests refuse every unlink as a grant lost before it was queued. */
    w->refuse_unlinks = getenv("STRIA_TEST_WB_REFUSE_UNLINKS") != NULL;
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_t ca; /* next_item's waits, on mdc_clock_ms's clock */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->work, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&w->done, NULL);
    int rc = pthread_create(&w->thread, NULL, sender_main, w);
    if (rc) {
        pthread_cond_destroy(&w->done);
        pthread_cond_destroy(&w->work);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return -rc;
    }
    fs->wb = w;
    fs->before_mdt_call = wb_flush;
    fs->tmpl_dir = wb_tmpl_dir;
    if (fs->mdc)
        mdc_on_revoke(fs->mdc, wb_revoked);
    return 0;
}

void wb_stop(stria_fs_t *fs)
{
    struct wb *w = fs->wb;
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = true; /* the thread sends what is queued, then ends */
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
}

void wb_destroy(stria_fs_t *fs)
{
    struct wb *w = fs->wb;
    if (!w)
        return;
    fs->before_mdt_call = NULL;
    fs->tmpl_dir = NULL;
    fs->wb = NULL;
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->work);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
