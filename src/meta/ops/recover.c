/*
 * Recovery of cross-MDT operations (recover.h).
 */
#include "recover.h"
#include "intent.h"
#include "xname.h"

#include "../../common/log.h"
#include "../../common/util.h"
#include "../../proto/layout.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
struct scan_arg {
    struct meta_ctx *c;
    struct meta_intent *x; /* scratch */
    uint64_t *v;           /* txids of intents that look open */
    uint32_t n, cap;
};

static bool not_ours(uint8_t kind)
{
    return kind == XK_APPLIED || kind == XK_HOLD || kind == XK_RLOCK;
}

static int scan_cb(void *arg, uint64_t txid, const void *rec, size_t len)
{
    struct scan_arg *s = arg;
    if (s->n == s->cap || meta_xbusy_has(s->c, txid))
        return 0;
    if (meta_intent_decode(rec, len, s->x)) {
        log_error("MDT%04x: intent %llx cannot be read; left for fsck", s->c->mdt,
                  (unsigned long long)txid);
        return 0;
    }
    if (not_ours(s->x->kind))
        return 0; /* another MDT's operation, kept here: not ours to finish */
    s->v[s->n++] = txid;
    return 0;
}

static int scan_txn(struct meta_txn *t, void *arg)
{
    struct scan_arg *s = arg;
    if (s->c->recover_hook)
        s->c->recover_hook(s->c);
    return meta_intent_scan(t, scan_cb, s);
}

struct reread_arg {
    uint64_t txid;
    struct meta_intent *x;
};

static int reread_txn(struct meta_txn *t, void *arg)
{
    struct reread_arg *a = arg;
    MDB_val v;
    int rc = meta_intent_get(t, a->txid, &v);
    if (rc == 0 && (meta_intent_decode(v.mv_data, v.mv_size, a->x) || not_ours(a->x->kind)))
        rc = -ENOENT; /* said by the scan, or not an operation */
    return rc;
}

/* The peer that left txid open in the last round, if it still does not
 * answer (asked once a round per peer: up and down, PEERS_ASKED of them). */
#define PEERS_ASKED 16
struct asked {
    uint32_t mdt[PEERS_ASKED];
    bool up[PEERS_ASKED];
    uint32_t n;
};

static int32_t still_away(struct meta_ctx *c, uint64_t txid, struct asked *k)
{
    if (!c->peer_up)
        return -1;
    int32_t mdt = -1;
    pthread_mutex_lock(&c->xlock);
    for (uint32_t i = 0; i < c->nxaway && mdt < 0; i++)
        if (c->xaway[i].txid == txid)
            mdt = (int32_t)c->xaway[i].mdt;
    pthread_mutex_unlock(&c->xlock);
    if (mdt < 0)
        return -1;
    for (uint32_t i = 0; i < k->n; i++)
        if (k->mdt[i] == (uint32_t)mdt)
            return k->up[i] ? -1 : mdt;
    bool up = c->peer_up(c->peer_arg, (uint32_t)mdt);
    if (k->n < PEERS_ASKED) {
        k->mdt[k->n] = (uint32_t)mdt;
        k->up[k->n++] = up;
    }
    return up ? -1 : mdt;
}

int meta_xmdt_recover(struct meta_ctx *c)
{
    /* Recovery runs for no request: nothing it writes is noted or kept. */
    const struct meta_req *rq = &(struct meta_req){.ctx = c};
    struct scan_arg s = {c, malloc(sizeof(*s.x)), NULL, 0, 64};
    s.v = calloc(s.cap, sizeof(*s.v));
    if (!s.x || !s.v) {
        free(s.x);
        free(s.v);
        return -ENOMEM;
    }
    int rc = meta_store_read(c->store, NULL, scan_txn, &s);
    int open = 0;
    bool begun = false;
    uint64_t writes = 0;
    struct asked asked = {0};
    struct meta_xaway away[META_XAWAY];
    uint32_t naway = 0;
    for (uint32_t i = 0; rc == 0 && i < s.n; i++) {
        uint64_t txid = s.v[i];
        /* Claimed so that two recoveries never run one intent at once;
         * one a request works on is the request's, and not open. */
        if (!meta_xbusy_add(c, txid)) {
            open += !meta_xbusy_has(c, txid); /* no memory to claim it */
            continue;
        }
        struct reread_arg a = {txid, s.x};
        int rrc = meta_store_read(c->store, NULL, reread_txn, &a);
        if (rrc) {
            meta_xbusy_del(c, txid);
            if (rrc != -ENOENT) /* gone: ended since the scan */
                rc = rrc;
            continue;
        }
        /* The peer that held it last round still away: no round for it.
         * Every step can be repeated, so one not taken now is taken when
         * the peer answers. */
        int32_t away_mdt = still_away(c, txid, &asked);
        if (away_mdt >= 0) {
            open++;
            if (naway < META_XAWAY)
                away[naway++] = (struct meta_xaway){txid, (uint32_t)away_mdt};
            meta_xbusy_del(c, txid);
            continue;
        }
        /* Said at info but for attribute copies (every setattr of a
         * striped directory has one): what recovery ran is what explains
         * a namespace after a crash. */
        log_msg(s.x->kind == XK_SYNC ? LOG_DEBUG : LOG_INFO,
                "MDT%04x: recovering cross-MDT %s %llx (phase %u, inode %llx)", c->mdt,
                meta_intent_kind(s.x->kind), (unsigned long long)txid, s.x->phase,
                (unsigned long long)s.x->ino);
        uint8_t kind = s.x->kind;
        if (!begun && c->recover_begin) {
            c->recover_begin(c->recover_arg);
            writes = meta_store_thread_writes();
        }
        begun = true;
        meta_peer_failed = -1;
        if (kind >= XK_RENAME ? meta_xname_finish(rq, txid, s.x, true)
                              : meta_intent_finish(rq, txid, s.x, true)) {
            open++;
            if (meta_peer_failed >= 0 && naway < META_XAWAY)
                away[naway++] = (struct meta_xaway){txid, (uint32_t)meta_peer_failed};
        } else if (kind != XK_SYNC)
            __atomic_add_fetch(&c->xrecovered, 1, __ATOMIC_RELAXED);
        meta_xbusy_del(c, txid);
    }
    if (begun && c->recover_end)
        c->recover_end(c->recover_arg, meta_store_thread_writes() != writes);
    free(s.x);
    free(s.v);
    /* One line when the count of open operations changes, not one per try. */
    pthread_mutex_lock(&c->xlock);
    memcpy(c->xaway, away, naway * sizeof(*away));
    c->nxaway = naway;
    if (rc == 0 && (uint32_t)open != c->xopen_said) {
        if (open)
            log_warn("MDT%04x: %d cross-MDT operation(s) open, waiting for a peer MDT; "
                     "retried every tick",
                     c->mdt, open);
        else
            log_info("MDT%04x: every open cross-MDT operation finished (%llu recovered so far)",
                     c->mdt, (unsigned long long)c->xrecovered);
        c->xopen_said = (uint32_t)open;
    }
    pthread_mutex_unlock(&c->xlock);
    return rc ? rc : open;
}

/* A striped directory changed: its shards get the news before the reply.
 * The intent is the request's own until it has tried (marked worked on
 * since its transaction), so a recovery beside it cannot take it and
 * leave the reply to go before the copy. A copy that fails (a peer away)
 * is left to recovery's next tick. */
int meta_xsync_after(struct meta_ctx *c, int rc, uint64_t txid)
{
    if (!txid)
        return rc;
    if (rc == 0) {
        if (c->xsync_hook)
            c->xsync_hook(c, txid);
        struct meta_intent *x = malloc(sizeof(*x));
        struct reread_arg a = {txid, x};
        if (x && meta_store_read(c->store, NULL, reread_txn, &a) == 0)
            meta_intent_finish(&(struct meta_req){.ctx = c}, txid, x, false);
        free(x);
    }
    meta_xbusy_del(c, txid);
    return rc;
}
