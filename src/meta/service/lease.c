/*
 * Metadata leases of one MDT (lease.h).
 *
 * One mutex guards the table: a record per inode someone holds a lease on
 * (its generation and holders), a record per client that opened a
 * revocation channel (its queue of revocations and how far it acknowledged),
 * and a ring of the inodes the last RING changes touched, against which
 * grants check that what they read is still current.
 *
 * Generations come from one counter, so an inode's generation only ever
 * grows, even when its record is dropped and made again.
 */
#include "lease.h"

#include "../../common/log.h"
#include "../../common/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define REC_BUCKETS (1u << 16)
#define CLI_BUCKETS 1024u
#define RING        1024u
#define MAX_RECORDS (1u << 20)
#define MAX_CLIENTS 65536u
#define RING_ALL    0 /* a change too big to list: every inode */

struct revoke {
    uint64_t ino, gen, seq;
    uint8_t kind; /* PROTO_REVOKE_NAMES or 0 */
};

struct lclient {
    uint64_t id;
    void *conn;        /* its LEASE_POLL channel; NULL when it has none */
    bool gone;         /* no channel: it holds nothing */
    uint64_t next_seq; /* number of its next revocation (from 1) */
    uint64_t acked;
    struct revoke *q; /* sent or to send, not yet acknowledged */
    uint32_t qn, qcap;
    uint64_t park; /* its poll, parked until there is something to say (0: none) */
    struct lclient *next;
    struct lclient *cnext; /* with a channel: in the table's hash by conn */
};

struct holder {
    struct lclient *c;
    int64_t expiry_ms;
};

struct lrec {
    uint64_t ino, gen;
    uint64_t wseq; /* the store's order of the latest write a change numbered */
    struct holder *h;
    uint32_t nh, caph;
    struct lrec *next;
};

/* A revocation a change waits for. */
struct wait {
    struct lclient *c;
    uint64_t seq;
    int64_t expiry_ms;
};

struct lease_tab {
    pthread_mutex_t lock;
    pthread_cond_t acked; /* an acknowledgement came or a channel closed */
    uint32_t term_ms;
    uint64_t instance;
    uint64_t gen;  /* the last generation handed out */
    uint64_t done; /* changes finished; change k touched ring[k % RING] */
    uint64_t ring[RING];
    struct lrec *rec[REC_BUCKETS];
    uint32_t nrec;
    struct lclient *cli[CLI_BUCKETS];
    uint32_t ncli;
    /* The clients with a channel, by conn: every connection that closes
     * asks, and a storm closes thousands. */
    struct lclient *by_conn[CLI_BUCKETS];
    bool stopping;
    /* Who serves a parked poll again (lease_set_wake). */
    void (*wake)(void *ctx, uint64_t park);
    void *wake_ctx;
    /* The write-behind grant (lease.h): its holder, the grant's number, the
     * number of its revocation (0 before one is queued) and its end; the
     * requests past lease_enter() and those waiting in it. */
    struct lclient *wb;
    uint64_t wb_id, wb_seq;
    int64_t wb_expiry_ms;
    uint32_t inflight, waiting;
    uint64_t entered; /* requests that passed the gate, ever */
};

static int64_t now_ms(void)
{
    return (int64_t)(util_now_mono_ns() / 1000000);
}

/* Conditions wait on the monotonic clock, as deadline() counts. */
static void cond_init(pthread_cond_t *c)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(c, &ca);
    pthread_condattr_destroy(&ca);
}

int lease_tab_create(uint32_t term_ms, struct lease_tab **out)
{
    struct lease_tab *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    pthread_mutex_init(&t->lock, NULL);
    cond_init(&t->acked);
    t->term_ms = term_ms;
    t->instance = util_instance_id();
    *out = t;
    return 0;
}

void lease_set_wake(struct lease_tab *t, void (*wake)(void *ctx, uint64_t park), void *ctx)
{
    pthread_mutex_lock(&t->lock);
    t->wake = wake;
    t->wake_ctx = ctx;
    pthread_mutex_unlock(&t->lock);
}

/* c's parked poll, if any, is served again: it has something to say. */
static void wake_poll(struct lease_tab *t, struct lclient *c)
{
    if (c->park && t->wake)
        t->wake(t->wake_ctx, c->park);
    c->park = 0;
}

void lease_tab_stop(struct lease_tab *t)
{
    pthread_mutex_lock(&t->lock);
    t->stopping = true;
    for (uint32_t b = 0; b < CLI_BUCKETS; b++)
        for (struct lclient *c = t->cli[b]; c; c = c->next)
            wake_poll(t, c);
    pthread_cond_broadcast(&t->acked);
    pthread_mutex_unlock(&t->lock);
}

void lease_tab_destroy(struct lease_tab *t)
{
    if (!t)
        return;
    for (uint32_t b = 0; b < REC_BUCKETS; b++)
        for (struct lrec *r = t->rec[b], *n; r; r = n) {
            n = r->next;
            free(r->h);
            free(r);
        }
    for (uint32_t b = 0; b < CLI_BUCKETS; b++)
        for (struct lclient *c = t->cli[b], *n; c; c = n) {
            n = c->next;
            free(c->q);
            free(c);
        }
    pthread_cond_destroy(&t->acked);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

uint64_t lease_instance(const struct lease_tab *t)
{
    return t->instance;
}

/* ---- records and clients (under lock) ---- */

static struct lrec *rec_find(struct lease_tab *t, uint64_t ino)
{
    for (struct lrec *r = t->rec[util_mix64(ino) % REC_BUCKETS]; r; r = r->next)
        if (r->ino == ino)
            return r;
    return NULL;
}

static struct lrec *rec_get(struct lease_tab *t, uint64_t ino)
{
    struct lrec *r = rec_find(t, ino);
    if (r || t->nrec >= MAX_RECORDS || !(r = calloc(1, sizeof(*r))))
        return r;
    uint32_t b = util_mix64(ino) % REC_BUCKETS;
    r->ino = ino;
    r->gen = ++t->gen;
    r->next = t->rec[b];
    t->rec[b] = r;
    t->nrec++;
    return r;
}

static struct lclient *cli_find(struct lease_tab *t, uint64_t id)
{
    for (struct lclient *c = t->cli[util_mix64(id) % CLI_BUCKETS]; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

static struct lclient *cli_get(struct lease_tab *t, uint64_t id)
{
    struct lclient *c = cli_find(t, id);
    if (c || t->ncli >= MAX_CLIENTS || !(c = calloc(1, sizeof(*c))))
        return c;
    uint32_t b = util_mix64(id) % CLI_BUCKETS;
    c->id = id;
    c->gone = true;
    c->next_seq = 1;
    c->next = t->cli[b];
    t->cli[b] = c;
    t->ncli++;
    return c;
}

static struct lclient **conn_slot(struct lease_tab *t, const void *conn)
{
    return &t->by_conn[util_mix64((uint64_t)(uintptr_t)conn) % CLI_BUCKETS];
}

/* c's channel is conn from now on (NULL: none). */
static void set_conn(struct lease_tab *t, struct lclient *c, void *conn)
{
    if (c->conn == conn)
        return;
    if (c->conn) {
        struct lclient **p = conn_slot(t, c->conn);
        while (*p && *p != c)
            p = &(*p)->cnext;
        if (*p)
            *p = c->cnext;
        c->cnext = NULL;
    }
    c->conn = conn;
    if (conn) {
        struct lclient **b = conn_slot(t, conn);
        c->cnext = *b;
        *b = c;
    }
}

static void wb_clear(struct lease_tab *t)
{
    t->wb = NULL;
    t->wb_seq = 0;
}

/* A client's channel closed or it left: nothing it held counts any more. */
static void cli_gone(struct lease_tab *t, struct lclient *c)
{
    if (t->wb == c)
        wb_clear(t);
    c->gone = true;
    set_conn(t, c, NULL);
    c->qn = 0;
    wake_poll(t, c);
    pthread_cond_broadcast(&t->acked);
}

/* Give c a lease on r until expiry; false if out of memory. */
static bool hold(struct lrec *r, struct lclient *c, int64_t expiry)
{
    for (uint32_t i = 0; i < r->nh; i++)
        if (r->h[i].c == c) {
            r->h[i].expiry_ms = expiry;
            return true;
        }
    if (r->nh == r->caph) {
        uint32_t cap = r->caph ? r->caph * 2 : 2;
        struct holder *h = realloc(r->h, cap * sizeof(*h));
        if (!h)
            return false;
        r->h = h;
        r->caph = cap;
    }
    r->h[r->nh++] = (struct holder){c, expiry};
    return true;
}

/* Whether a change finished after mark touched ino. */
static bool changed_since(const struct lease_tab *t, uint64_t mark, uint64_t ino)
{
    if (t->done - mark >= RING)
        return true;
    for (uint64_t k = mark + 1; k <= t->done; k++) {
        uint64_t x = t->ring[k % RING];
        if (x == ino || x == RING_ALL)
            return true;
    }
    return false;
}

static void ring_add(struct lease_tab *t, uint64_t ino)
{
    t->done++;
    t->ring[t->done % RING] = ino;
}

/* What a change waits for: acknowledgements, and (when a revocation could
 * not be queued or recorded for lack of memory) the end of leases. */
struct waits {
    struct wait *w;
    uint32_t n, cap;
    int64_t until_ms;
};

static void wait_on(struct waits *ws, struct lclient *c, uint64_t seq, int64_t expiry)
{
    if (ws->n == ws->cap) {
        uint32_t cap = ws->cap ? ws->cap * 2 : 8;
        struct wait *w = realloc(ws->w, cap * sizeof(*w));
        if (!w) {
            if (expiry > ws->until_ms)
                ws->until_ms = expiry;
            return;
        }
        ws->w = w;
        ws->cap = cap;
    }
    ws->w[ws->n++] = (struct wait){c, seq, expiry};
}

/* Queue a revocation of (ino, gen) of kind (proto.h, LEASE_POLL) for c;
 * its number, or 0 without memory. */
static uint64_t tell(struct lease_tab *t, struct lclient *c, uint64_t ino, uint64_t gen,
                     uint8_t kind)
{
    if (c->qn == c->qcap) {
        uint32_t cap = c->qcap ? c->qcap * 2 : 16;
        struct revoke *q = realloc(c->q, cap * sizeof(*q));
        if (!q)
            return 0;
        c->q = q;
        c->qcap = cap;
    }
    c->q[c->qn++] = (struct revoke){ino, gen, c->next_seq++, kind};
    wake_poll(t, c);
    return c->next_seq - 1;
}

/* Queue a revocation of kind for every live holder of r but keep (the
 * changer) and note what to wait for; those holders are removed. */
static void revoke_holders(struct lease_tab *t, struct lrec *r, uint64_t gen_before, uint8_t kind,
                           struct lclient *keep, int64_t now, struct waits *ws)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < r->nh; i++) {
        struct holder h = r->h[i];
        struct lclient *c = h.c;
        if (c == keep) {
            r->h[kept++] = h;
            continue;
        }
        if (c->gone || h.expiry_ms <= now)
            continue;
        uint64_t seq = tell(t, c, r->ino, gen_before, kind);
        if (seq)
            wait_on(ws, c, seq, h.expiry_ms);
        else if (h.expiry_ms > ws->until_ms)
            ws->until_ms = h.expiry_ms; /* cannot tell it: outwait it */
    }
    r->nh = kept;
}

static void deadline(struct timespec *ts, int64_t ms)
{
    util_deadline(ts, CLOCK_MONOTONIC, ms); /* the conditions wait on this clock */
}

/* ---- grants and changes ---- */

uint64_t lease_read_begin(struct lease_tab *t)
{
    pthread_mutex_lock(&t->lock);
    uint64_t mark = t->done;
    pthread_mutex_unlock(&t->lock);
    return mark;
}

void lease_grant(struct lease_tab *t, uint64_t mark, uint64_t client, const uint64_t *inos,
                 uint32_t n, struct proto_leases *out)
{
    memset(out, 0, sizeof(*out));
    out->instance = t->instance;
    if (n > PROTO_MAX_LEASES)
        n = PROTO_MAX_LEASES;
    out->n = n;
    pthread_mutex_lock(&t->lock);
    struct lclient *c = t->term_ms ? cli_find(t, client) : NULL;
    int64_t expiry = now_ms() + t->term_ms;
    for (uint32_t i = 0; i < n; i++) {
        struct proto_lease *l = &out->l[i];
        l->ino = inos[i];
        if (!c || c->gone || changed_since(t, mark, inos[i]))
            continue;
        struct lrec *r = rec_get(t, inos[i]);
        if (!r || !hold(r, c, expiry))
            continue;
        l->gen_before = l->gen = r->gen;
        l->ms = t->term_ms;
    }
    pthread_mutex_unlock(&t->lock);
}

void lease_changed(struct lease_tab *t, uint64_t client, const struct meta_touched *touched,
                   bool ok, struct proto_leases *out)
{
    memset(out, 0, sizeof(*out));
    out->instance = t->instance;
    if (!ok || (touched->n == 0 && !touched->overflow))
        return;
    struct waits ws = {0};
    pthread_mutex_lock(&t->lock);
    int64_t now = now_ms();
    struct lclient *c = t->term_ms ? cli_find(t, client) : NULL;
    if (c && c->gone)
        c = NULL;
    if (touched->overflow) {
        /* Not every inode is known: every lease but the changer's goes. */
        for (uint32_t b = 0; b < REC_BUCKETS; b++)
            for (struct lrec *r = t->rec[b]; r; r = r->next) {
                uint64_t before = r->gen;
                r->gen = ++t->gen;
                revoke_holders(t, r, before, 0, NULL, now, &ws);
            }
        ring_add(t, RING_ALL);
    }
    for (uint32_t i = 0; i < touched->n && i < PROTO_MAX_LEASES; i++) {
        uint64_t ino = touched->ino[i];
        struct lrec *r = c ? rec_get(t, ino) : rec_find(t, ino);
        struct proto_lease *l = &out->l[out->n++];
        l->ino = ino;
        ring_add(t, ino);
        if (!r)
            continue;
        l->gen_before = r->gen;
        l->gen = r->gen = ++t->gen;
        /* A namespace operation changed a directory's names: its holders
         * may keep what they know of its mode and owner. */
        bool names = touched->names && touched->has_attr[i] && S_ISDIR(touched->attr[i].mode);
        revoke_holders(t, r, l->gen_before, names ? PROTO_REVOKE_NAMES : 0, c, now, &ws);
        /* A change that wrote before one numbered already: its attributes
         * are older than its generation says, so the changer may not keep
         * them (two writes of one client's threads whose replies crossed
         * left a size behind that way). */
        bool crossed = touched->wseq[i] < r->wseq;
        if (!crossed)
            r->wseq = touched->wseq[i];
        if (c && !touched->overflow && !crossed && hold(r, c, now + t->term_ms))
            l->ms = t->term_ms;
    }
    /* The change is acknowledged once nobody else can still use what was. */
    for (uint32_t i = 0; i < ws.n; i++) {
        struct wait *x = &ws.w[i];
        while (!t->stopping && !x->c->gone && x->c->acked < x->seq) {
            int64_t left = x->expiry_ms - now_ms();
            if (left <= 0)
                break;
            struct timespec ts;
            deadline(&ts, left);
            pthread_cond_timedwait(&t->acked, &t->lock, &ts);
        }
    }
    while (!t->stopping && now_ms() < ws.until_ms) {
        struct timespec ts;
        deadline(&ts, ws.until_ms - now_ms());
        pthread_cond_timedwait(&t->acked, &t->lock, &ts);
    }
    pthread_mutex_unlock(&t->lock);
    free(ws.w);
}

/* ---- the write-behind grant ---- */

uint64_t lease_enter(struct lease_tab *t, uint64_t client)
{
    pthread_mutex_lock(&t->lock);
    while (t->wb && t->wb->id != client && !t->stopping) {
        struct lclient *h = t->wb;
        int64_t left = t->wb_expiry_ms - now_ms();
        if (h->gone || left <= 0 || (t->wb_seq && h->acked >= t->wb_seq)) {
            wb_clear(t);
            break;
        }
        /* Without memory for the revocation, the grant is outwaited. */
        if (!t->wb_seq)
            t->wb_seq = tell(t, h, 0, t->wb_id, 0);
        struct timespec ts;
        deadline(&ts, left);
        t->waiting++;
        pthread_cond_timedwait(&t->acked, &t->lock, &ts);
        t->waiting--;
    }
    /* 0: other requests were running as it entered. */
    uint64_t n = ++t->entered;
    if (t->inflight++)
        n = 0;
    pthread_mutex_unlock(&t->lock);
    return n;
}

void lease_leave(struct lease_tab *t)
{
    pthread_mutex_lock(&t->lock);
    t->inflight--;
    pthread_mutex_unlock(&t->lock);
}

static uint32_t grant(struct lease_tab *t, uint64_t client, bool alone_since, uint64_t entered,
                      uint64_t *id);

uint32_t lease_wb_grant(struct lease_tab *t, uint64_t client, uint64_t *id)
{
    return grant(t, client, false, 0, id);
}

uint32_t lease_wb_grant_since(struct lease_tab *t, uint64_t client, uint64_t entered, uint64_t *id)
{
    return grant(t, client, true, entered, id);
}

static uint32_t grant(struct lease_tab *t, uint64_t client, bool alone_since, uint64_t entered,
                      uint64_t *id)
{
    uint32_t ms = 0;
    *id = 0;
    pthread_mutex_lock(&t->lock);
    struct lclient *c = t->term_ms && !t->stopping ? cli_find(t, client) : NULL;
    if (c && !c->gone && t->waiting == 0) {
        if (t->wb == c && !t->wb_seq) {
            ms = t->term_ms; /* a renewal */
        } else if (!t->wb && t->inflight == 1 &&
                   (!alone_since || (entered && entered == t->entered))) {
            t->wb = c;
            t->wb_id = ++t->gen;
            t->wb_seq = 0;
            ms = t->term_ms;
        }
    }
    if (ms) {
        t->wb_expiry_ms = now_ms() + ms;
        *id = t->wb_id;
    }
    pthread_mutex_unlock(&t->lock);
    return ms;
}

/* ---- the revocation channel ---- */

int lease_poll(struct lease_tab *t, uint64_t client, void *conn, uint64_t acked, bool bye,
               uint64_t park, bool again, uint8_t *buf, uint32_t cap, uint64_t *first)
{
    *first = 0;
    pthread_mutex_lock(&t->lock);
    struct lclient *c = cli_get(t, client);
    /* Served again after a park, on a channel that closed or was replaced
     * meanwhile: it says nothing, and takes nothing back. */
    if (!c || (again && (c->gone || c->conn != conn))) {
        pthread_mutex_unlock(&t->lock);
        return 0;
    }
    if (bye) {
        cli_gone(t, c);
        pthread_mutex_unlock(&t->lock);
        return 0;
    }
    /* A new channel hears at once which instance it talks to; the poll
     * parked on the one it replaces is answered. */
    bool fresh = c->gone || c->conn != conn;
    if (fresh)
        wake_poll(t, c);
    set_conn(t, c, conn);
    c->gone = false;
    if (acked >= c->next_seq)
        acked = c->next_seq - 1;
    if (acked > c->acked) {
        c->acked = acked;
        uint32_t keep = 0;
        for (uint32_t i = 0; i < c->qn; i++)
            if (c->q[i].seq > acked)
                c->q[keep++] = c->q[i];
        c->qn = keep;
        pthread_cond_broadcast(&t->acked);
    }
    if (!fresh && !again && c->qn == 0 && !t->stopping && park && t->wake) {
        c->park = park;
        pthread_mutex_unlock(&t->lock);
        return LEASE_PARKED;
    }
    uint32_t n = c->qn;
    if (n > cap / 17)
        n = cap / 17;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v[2] = {c->q[i].ino, c->q[i].gen};
        for (int k = 0; k < 2; k++)
            for (int b = 0; b < 8; b++)
                buf[i * 16 + (uint32_t)k * 8 + (uint32_t)b] = (uint8_t)(v[k] >> (8 * b));
        buf[n * 16 + i] = c->q[i].kind;
    }
    if (n)
        *first = c->q[0].seq;
    pthread_mutex_unlock(&t->lock);
    return (int)n;
}

void lease_conn_closed(struct lease_tab *t, void *conn)
{
    pthread_mutex_lock(&t->lock);
    for (struct lclient *c = *conn_slot(t, conn), *next; c; c = next) {
        next = c->cnext;
        if (c->conn == conn)
            cli_gone(t, c); /* which takes it off the list */
    }
    pthread_mutex_unlock(&t->lock);
}

/* Drop the expired holds, and the records left with none, of buckets
 * [from, to) (lock held). */
static void sweep_buckets(struct lease_tab *t, uint32_t from, uint32_t to, int64_t now)
{
    for (uint32_t b = from; b < to && b < REC_BUCKETS; b++)
        for (struct lrec **p = &t->rec[b]; *p;) {
            struct lrec *r = *p;
            uint32_t kept = 0;
            for (uint32_t i = 0; i < r->nh; i++)
                if (!r->h[i].c->gone && r->h[i].expiry_ms > now)
                    r->h[kept++] = r->h[i];
            r->nh = kept;
            if (kept) {
                p = &r->next;
                continue;
            }
            *p = r->next;
            free(r->h);
            free(r);
            t->nrec--;
        }
}

/* Buckets swept under one hold of the lock: every request of the MDT takes
 * it, and a table of a million records (16 a bucket) swept in one hold
 * would stall them all for milliseconds every tick. */
#define SWEEP_CHUNK 4096u

void lease_sweep(struct lease_tab *t)
{
    /* A grant that ran out is not dropped here: lease_enter drops it when
     * another client comes (lease.h). */
    for (uint32_t from = 0; from < REC_BUCKETS; from += SWEEP_CHUNK) {
        pthread_mutex_lock(&t->lock);
        sweep_buckets(t, from, from + SWEEP_CHUNK, now_ms());
        pthread_mutex_unlock(&t->lock);
    }
}

uint32_t lease_records(struct lease_tab *t)
{
    pthread_mutex_lock(&t->lock);
    uint32_t n = t->nrec;
    pthread_mutex_unlock(&t->lock);
    return n;
}
