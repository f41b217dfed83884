/*
 * The intent log and SHARD steps (intent.h) of operations that span MDTs
 * (DESIGN §4; docs/architecture.md, "Cross-MDT operations"); the
 * operations themselves are xdir.c (mkdir, rmdir) and xname.c (names).
 *
 * The MDT that holds the name coordinates. It writes an intent record
 * before it sends any step to another MDT, and ends the operation with one
 * local transaction that adds (or removes) the name and changes or drops
 * the intent. Every step (SHARD) can be repeated without harm, so a
 * coordinator that restarts simply runs the intent again to its end:
 *
 *   mkdir  phase 1: records put on the other MDTs. Not committed, so
 *          recovery deletes them (the mkdir did not happen).
 *   rmdir  phase 1: every record sealed (no new names, and none held),
 *          each seal this rmdir's (txid) alone: a later rmdir waits for
 *          it, and this one's UNSEAL and DEL touch no other's seal.
 *          Recovery unseals them (the rmdir did not happen).
 *          phase 2: the name is gone; recovery deletes the records.
 *   sync   a striped directory's owner, mode, times or defaults changed
 *          (in the same transaction as the intent): copy them onto every
 *          shard, which checks permissions and makes files with them.
 */
#include "../../common/log.h"
#include "../../common/util.h"
#include "intent.h"
#include "../../proto/layout.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The MDTs holding a record of a directory: its shards, else its owner. */
void meta_intent_members(uint64_t dstripe, uint32_t owner, struct meta_intent *x)
{
    x->n = 0;
    if (!dstripe) {
        x->mdt[x->n++] = (uint16_t)owner;
        return;
    }
    for (uint32_t k = 0; k < proto_ds_count(dstripe) && x->n < X_MAX_MDTS; k++)
        x->mdt[x->n++] = (uint16_t)proto_ds_shard_mdt(dstripe, k);
}

static bool xbusy_has_locked(const struct meta_ctx *c, uint64_t key)
{
    for (uint32_t i = 0; i < c->nxbusy; i++)
        if (c->xbusy[i] == key)
            return true;
    return false;
}

/* Under xlock: mark key, which is not marked. false: no memory. */
static bool xbusy_put_locked(struct meta_ctx *c, uint64_t key)
{
    if (c->nxbusy == c->xbusy_cap) {
        uint32_t cap = c->xbusy_cap ? 2 * c->xbusy_cap : 64;
        uint64_t *v = realloc(c->xbusy, cap * sizeof(*v));
        if (!v)
            return false;
        c->xbusy = v;
        c->xbusy_cap = cap;
    }
    c->xbusy[c->nxbusy++] = key;
    return true;
}

/* One owner at a time: a request that writes the intent, or a recovery.
 * false: marked already, or no memory to mark it. */
bool meta_xbusy_add(struct meta_ctx *c, uint64_t txid)
{
    pthread_mutex_lock(&c->xlock);
    bool ok = !xbusy_has_locked(c, txid) && xbusy_put_locked(c, txid);
    pthread_mutex_unlock(&c->xlock);
    return ok;
}

/* Mark key once nobody else has it marked, waiting for that (the other
 * owner's work is bounded by its steps' timeouts). false: no memory. */
static bool xbusy_wait_add(struct meta_ctx *c, uint64_t key)
{
    pthread_mutex_lock(&c->xlock);
    while (xbusy_has_locked(c, key))
        pthread_cond_wait(&c->xdone, &c->xlock);
    bool ok = xbusy_put_locked(c, key);
    pthread_mutex_unlock(&c->xlock);
    return ok;
}

void meta_xbusy_del(struct meta_ctx *c, uint64_t txid)
{
    pthread_mutex_lock(&c->xlock);
    for (uint32_t i = 0; i < c->nxbusy; i++)
        if (c->xbusy[i] == txid) {
            c->xbusy[i] = c->xbusy[--c->nxbusy];
            pthread_cond_broadcast(&c->xdone);
            break;
        }
    pthread_mutex_unlock(&c->xlock);
}

bool meta_xbusy_has(struct meta_ctx *c, uint64_t txid)
{
    pthread_mutex_lock(&c->xlock);
    bool b = xbusy_has_locked(c, txid);
    pthread_mutex_unlock(&c->xlock);
    return b;
}

__thread int32_t meta_peer_failed = -1;

/* One SHARD step on MDT mdt: this one's own handler, or a peer's. */
int meta_step_rec(const struct meta_req *rq, uint32_t mdt, uint8_t op, uint64_t txid, uint64_t ino,
                  const struct meta_inode *rec, uint64_t arg, struct proto_shard_rep *r)
{
    struct meta_ctx *c = rq->ctx;
    uint8_t buf[META_INODE_REC_MAX];
    struct proto_shard_req q;
    memset(&q, 0, sizeof(q));
    q.txid = txid;
    q.op = op;
    q.ino = ino;
    q.arg = arg;
    if (rec) {
        int len = meta_inode_encode(rec, buf, sizeof(buf));
        if (len < 0)
            return len;
        q.rec = (struct proto_blob){buf, (uint32_t)len};
    }
    struct proto_shard_rep dummy;
    if (!r)
        r = &dummy;
    memset(r, 0, sizeof(*r));
    if (mdt == c->mdt)
        return meta_op_shard(rq, &q, r);
    int rc = c->peer ? c->peer(c->peer_arg, mdt, &q, r) : -EHOSTUNREACH;
    if (meta_peer_err(rc) == -EIO)
        meta_peer_failed = (int32_t)mdt; /* not an answer such as ENOENT */
    return rc;
}

int meta_shard_step(const struct meta_req *rq, uint32_t mdt, uint8_t op, uint64_t txid,
                    uint64_t ino, uint64_t arg, struct proto_shard_rep *r)
{
    return meta_step_rec(rq, mdt, op, txid, ino, NULL, arg, r);
}

int meta_peer_err(int rc)
{
    return rc == -EHOSTUNREACH || rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -ECONNRESET ||
                   rc == -EPIPE
               ? -EIO
               : rc;
}

/* The same step (with arg) on every MDT of x; 0 if all succeeded, else the
 * first error (the others are still tried). */
static int step_all(const struct meta_req *rq, const struct meta_intent *x, uint8_t op,
                    uint64_t txid, uint64_t arg)
{
    int first = 0;
    for (uint16_t i = 0; i < x->n; i++) {
        int rc = meta_step_rec(rq, x->mdt[i], op, txid, x->ino, NULL, arg, NULL);
        if (rc == -ENOENT && (op == PROTO_SHARD_DEL || op == PROTO_SHARD_UNSEAL))
            rc = 0;
        if (rc && !first)
            first = rc;
    }
    return first;
}

struct intent_arg {
    struct meta_ctx *c;
    uint64_t txid;
    struct meta_intent *x;
    bool alloc_ino; /* allocate x->ino here too */
};

int meta_intent_record(struct meta_txn *t, uint64_t txid, const struct meta_intent *x)
{
    uint8_t buf[64 + 2 * X_MAX_MDTS + PROTO_MAX_NAME];
    int len = meta_intent_encode(x, buf, sizeof(buf));
    return len < 0 ? len : meta_intent_put(t, txid, buf, (size_t)len);
}

/* Marked busy before the intent can be seen, so that recovery (which
 * reads committed intents) never runs it beside the request that writes
 * it; the caller unmarks it, also when this fails. An intent that cannot
 * be marked (no memory) is not written. */
static int begin_txn(struct meta_txn *t, void *arg)
{
    struct intent_arg *a = arg;
    int rc = meta_alloc_ino(t, &a->txid);
    if (rc)
        return rc;
    if (!meta_xbusy_add(a->c, a->txid))
        return -ENOMEM; /* a new txid: only memory can fail */
    if (a->alloc_ino && (rc = meta_alloc_ino(t, &a->x->ino)))
        return rc;
    return meta_intent_record(t, a->txid, a->x);
}

static int rewrite_txn(struct meta_txn *t, void *arg)
{
    struct intent_arg *a = arg;
    return meta_intent_record(t, a->txid, a->x);
}

int meta_intent_rewrite(const struct meta_req *rq, uint64_t txid, struct meta_intent *x)
{
    struct meta_ctx *c = rq->ctx;
    struct intent_arg a = {c, txid, x, false};
    return meta_store_write(c->store, rq, rewrite_txn, &a);
}

int meta_intent_advance(struct meta_txn *t, uint64_t txid, struct meta_intent *x, uint8_t phase)
{
    uint8_t was = x->phase;
    x->phase = phase;
    int rc = meta_intent_record(t, txid, x);
    x->phase = was; /* until the transaction is known to have committed */
    return rc;
}

static int end_txn(struct meta_txn *t, void *arg)
{
    struct intent_arg *a = arg;
    int rc = meta_intent_del(t, a->txid);
    return rc == -ENOENT ? 0 : rc;
}

int meta_intent_begin(const struct meta_req *rq, struct meta_intent *x, bool alloc_ino,
                      uint64_t *txid)
{
    struct meta_ctx *c = rq->ctx;
    struct intent_arg a = {c, 0, x, alloc_ino};
    int rc = meta_store_write(c->store, rq, begin_txn, &a);
    *txid = a.txid;
    if (rc && a.txid)
        meta_xbusy_del(c, a.txid);
    return rc;
}

int meta_intent_end(const struct meta_req *rq, uint64_t txid)
{
    struct meta_ctx *c = rq->ctx;
    struct intent_arg a = {c, txid, NULL, false};
    return meta_store_write(c->store, rq, end_txn, &a);
}

/* Roll an intent back (or, in rmdir's phase 2, forward) to its end; the
 * intent goes once every step succeeded. */
const char *meta_intent_kind(uint8_t kind)
{
    static const char *const names[] = {
        "?", "mkdir", "rmdir", "attribute copy", "rename", "unlink", "link", "step", "hold"};
    return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

struct master_arg {
    uint64_t ino;
    struct meta_inode *in;
};

static int master_txn(struct meta_txn *t, void *arg)
{
    struct master_arg *a = arg;
    return meta_inode_get(t, a->ino, a->in);
}

_Static_assert(XF_SYNC_ATIME == PROTO_SHARD_ATTR_ATIME && XF_SYNC_MTIME == PROTO_SHARD_ATTR_MTIME,
               "a sync's flags are the SHARD ATTR step's bits");

/* Copy a striped directory's attributes onto its shards. One copy of a
 * directory at a time: two that overlapped (two clients' chmods, or a
 * request's and recovery's) could land in the other order, the later
 * attributes under the earlier. A request's copy waits for the one under
 * way and reads the inode after it; recovery's (wait false: the tick,
 * which also makes commits durable, must not queue behind requests)
 * leaves the directory for its next tick. */
static int sync_shards(const struct meta_req *rq, uint64_t txid, const struct meta_intent *x,
                       bool wait)
{
    struct meta_ctx *c = rq->ctx;
    struct meta_inode *in = malloc(sizeof(*in));
    if (!in)
        return -ENOMEM;
    if (!(wait ? xbusy_wait_add(c, x->ino) : meta_xbusy_add(c, x->ino))) {
        free(in);
        return wait ? -ENOMEM : -EBUSY; /* not waiting: another copy holds it */
    }
    struct master_arg a = {x->ino, in};
    int rc = meta_store_read(c->store, rq, master_txn, &a);
    for (uint16_t i = 0; i < x->n && rc == 0; i++)
        if (x->mdt[i] != c->mdt)
            rc = meta_step_rec(rq, x->mdt[i], PROTO_SHARD_ATTR, txid, x->ino, in,
                               x->flags & (PROTO_SHARD_ATTR_ATIME | PROTO_SHARD_ATTR_MTIME), NULL);
    meta_xbusy_del(c, x->ino);
    free(in);
    return rc == -ENOENT ? 0 : rc; /* gone meanwhile: nothing to copy */
}

int meta_xsync_note(struct meta_ctx *c, struct meta_txn *t, const struct meta_inode *in,
                    unsigned times, uint64_t *noted)
{
    if (!S_ISDIR(in->mode) || !in->dstripe || (in->flags & META_F_SHARD))
        return 0;
    struct meta_intent *x = calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    x->kind = XK_SYNC;
    x->phase = 1;
    x->flags = (uint8_t)(times & (XF_SYNC_ATIME | XF_SYNC_MTIME));
    x->ino = in->ino;
    x->dir = in->parent;
    meta_intent_members(in->dstripe, c->mdt, x);
    /* Marked before it can be seen, as meta_intent_begin's: a recovery
     * beside the request leaves it to the request, which runs it before
     * its reply (meta_xsync_after). */
    uint64_t txid;
    int rc = meta_alloc_ino(t, &txid);
    if (rc == 0 && !meta_xbusy_add(c, txid))
        rc = -ENOMEM; /* a new txid: only memory can fail */
    else if (rc == 0 && (rc = meta_intent_record(t, txid, x)))
        meta_xbusy_del(c, txid);
    else if (rc == 0)
        *noted = txid;
    free(x);
    return rc;
}

int meta_intent_finish(const struct meta_req *rq, uint64_t txid, struct meta_intent *x, bool quiet)
{
    struct meta_ctx *c = rq->ctx;
    int rc;
    if (x->kind == XK_SYNC)
        rc = sync_shards(rq, txid, x, !quiet); /* quiet: recovery's */
    else if (x->kind == XK_MKDIR)
        rc = step_all(rq, x, PROTO_SHARD_DEL, txid, META_SHARD_DEL_UNNAMED);
    else if (x->phase == 1)
        rc = step_all(rq, x, PROTO_SHARD_UNSEAL, txid, 0);
    else
        rc = step_all(rq, x, PROTO_SHARD_DEL, txid, 0);
    if (rc) {
        /* A request's failure is a warning, but at most one a second: a
         * shard's MDT down under a storm of chmods would fill the log. */
        static struct log_limit limit;
        uint64_t held = 0;
        enum log_level level = quiet || !log_limit_pass(&limit, 1000, &held) ? LOG_DEBUG : LOG_WARN;
        log_msg(level, "MDT%04x: cross-MDT %s %llx of inode %llx left open: %s (%llu more since)",
                c->mdt, meta_intent_kind(x->kind), (unsigned long long)txid,
                (unsigned long long)x->ino, log_err(rc), (unsigned long long)held);
        return rc;
    }
    struct intent_arg a = {c, txid, x, false};
    return meta_store_write(c->store, rq, end_txn, &a);
}

/* SEAL one record; while another operation's seal is on it, wait for that
 * one to end (a rollback that recovery runs within a tick). Every sealer
 * seals a directory's records in the same order, its inode's first, so two
 * never wait for each other. */
#define SEAL_TRIES 400 /* x 5 ms */

static int seal_one(const struct meta_req *rq, uint32_t mdt, uint64_t txid, uint64_t ino,
                    struct proto_shard_rep *r)
{
    int rc;
    for (int i = 0;; i++) {
        rc = meta_step_rec(rq, mdt, PROTO_SHARD_SEAL, txid, ino, NULL, 0, r);
        if (rc != -EBUSY || ino == PROTO_ROOT_INO || i == SEAL_TRIES)
            return rc;
        usleep(5000);
    }
}

int meta_seal_records(const struct meta_req *rq, uint64_t txid, struct meta_intent *x,
                      uint16_t first, uint64_t dstripe, uint32_t *uid)
{
    uint32_t owner = x->mdt[first];
    uint64_t ino = x->kind == XK_RMDIR ? x->ino : x->ino2;
    struct proto_shard_rep r;
    int rc = seal_one(rq, owner, txid, ino, &r);
    if (rc)
        return rc;
    if (uid)
        *uid = r.uid;
    /* A directory whose inode is elsewhere: its stripe comes with the seal. */
    if (!dstripe)
        dstripe = r.dstripe;
    for (uint32_t k = 0; dstripe && k < proto_ds_count(dstripe) && x->n < X_MAX_MDTS; k++) {
        uint16_t m = (uint16_t)proto_ds_shard_mdt(dstripe, k);
        if (m != owner)
            x->mdt[x->n++] = m;
    }
    if (x->n > first + 1 && (rc = meta_intent_rewrite(rq, txid, x)))
        return rc;
    for (uint16_t i = first + 1; i < x->n && rc == 0; i++)
        rc = seal_one(rq, x->mdt[i], txid, ino, NULL);
    return rc;
}

struct shard_arg {
    struct meta_ctx *c;
    const struct proto_shard_req *q;
    struct proto_shard_rep *r;
    struct meta_inode rec;
};

static int shard_txn(struct meta_txn *t, void *arg)
{
    struct shard_arg *a = arg;
    const struct proto_shard_req *q = a->q;
    struct meta_inode in;
    int rc;
    if (q->op == PROTO_SHARD_ALLOC)
        return meta_alloc_ino(t, &a->r->ino);
    if (q->op == PROTO_SHARD_PUT) {
        rc = meta_inode_get(t, a->rec.ino, &in);
        if (rc == 0)
            return 0; /* a repeat: the record may have changed since */
        return rc == -ENOENT ? meta_inode_put(t, &a->rec) : rc;
    }
    if (q->op == PROTO_SHARD_ATTR) {
        if ((rc = meta_inode_get(t, a->rec.ino, &in)))
            return rc == -ENOENT ? 0 : rc;
        /* The shard keeps its own link count, flags, parent and stripe,
         * and its own times, which its names moved and a client merges
         * with the directory's (docs/architecture.md, "Striped
         * directories"), unless they were set. */
        in.mode = a->rec.mode;
        in.uid = a->rec.uid;
        in.gid = a->rec.gid;
        if (q->arg & PROTO_SHARD_ATTR_ATIME)
            in.atime_ns = a->rec.atime_ns;
        if (q->arg & PROTO_SHARD_ATTR_MTIME)
            in.mtime_ns = a->rec.mtime_ns;
        if (a->rec.ctime_ns > in.ctime_ns)
            in.ctime_ns = a->rec.ctime_ns;
        in.dcount = a->rec.dcount;
        in.dsize = a->rec.dsize;
        in.doffset = a->rec.doffset;
        layout_copy(&in.layout, &a->rec.layout);
        in.ddefault = a->rec.ddefault;
        return meta_inode_put(t, &in);
    }
    if (q->op == PROTO_SHARD_PARENT || q->op == PROTO_SHARD_SETPARENT) {
        if ((rc = meta_inode_get(t, q->ino, &in)))
            return rc;
        if (!S_ISDIR(in.mode))
            return -ENOTDIR;
        a->r->ino = in.parent;
        a->r->uid = in.uid;
        a->r->dstripe = in.dstripe;
        if (q->op == PROTO_SHARD_PARENT || in.parent == q->arg || q->ino == PROTO_ROOT_INO)
            return 0;
        in.parent = q->arg;
        in.ctime_ns = meta_now_ns();
        return meta_inode_put(t, &in);
    }
    if (q->ino == PROTO_ROOT_INO && q->op != PROTO_SHARD_UNSEAL)
        return -EBUSY; /* the root is never removed */
    if ((rc = meta_inode_get(t, q->ino, &in)))
        return rc;
    if (!S_ISDIR(in.mode))
        return -ENOTDIR;
    a->r->ino = in.ino;
    a->r->uid = in.uid;
    a->r->dstripe = in.dstripe;
    /* A seal is the operation's that made it (txid): another's SEAL waits
     * for it to go, another's UNSEAL leaves it, and only its own DEL
     * removes the record. Otherwise the late rollback of one rmdir (by
     * recovery, after a restart) could unseal a directory that a newer
     * rmdir had sealed, and a create slip in before its removal. */
    bool sealed = in.flags & META_F_SEALED, mine = meta_sealed_by(&in, q->txid);
    switch (q->op) {
    case PROTO_SHARD_DEL:
    case PROTO_SHARD_SEAL:
        if (sealed && !mine)
            return -EBUSY;
        if (q->op == PROTO_SHARD_DEL && !sealed && q->arg != META_SHARD_DEL_UNNAMED)
            return -EBUSY; /* a named directory goes only sealed */
        if ((rc = meta_dir_is_empty(t, q->ino)) <= 0)
            return rc ? rc : -ENOTEMPTY;
        if (q->op == PROTO_SHARD_DEL) {
            if ((rc = meta_inode_del(t, q->ino)))
                return rc;
            return meta_xattr_del_all(t, q->ino);
        }
        if (sealed && in.seal == q->txid)
            return 0;
        meta_seal_set(&in, q->txid); /* an unowned seal is taken over */
        return meta_inode_put(t, &in);
    case PROTO_SHARD_UNSEAL:
        if (!mine)
            return 0; /* not sealed, or not by this operation */
        meta_seal_clear(&in);
        return meta_inode_put(t, &in);
    }
    return -EINVAL;
}

/* The rename lock (on MDT 0): one move of a directory to another parent
 * at a time in the whole file system, so that the check that it does not
 * move below itself cannot race another such move (Lustre's "big
 * filesystem lock" for renames). It lapses after RLOCK_NS. */
#define RLOCK_NS (30ll * 1000000000)

/* The lock is recorded with MDT 0's intents, so that a restart of MDT 0
 * does not let a second move in while the first is still being finished. */
#define RLOCK_KEY UINT64_MAX

struct rlock_arg {
    uint64_t txid;
    int64_t until_real_ns;
};

static int rlock_txn(struct meta_txn *t, void *arg)
{
    struct rlock_arg *a = arg;
    if (!a->txid) {
        int rc = meta_intent_del(t, RLOCK_KEY);
        return rc == -ENOENT ? 0 : rc;
    }
    struct meta_intent *x = calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    x->kind = XK_RLOCK;
    x->ino = a->txid;
    x->dir = (uint64_t)a->until_real_ns;
    int rc = meta_intent_record(t, RLOCK_KEY, x);
    free(x);
    return rc;
}

static int rlock_read_txn(struct meta_txn *t, void *arg)
{
    struct rlock_arg *a = arg;
    MDB_val v;
    struct meta_intent *x = malloc(sizeof(*x));
    if (!x)
        return -ENOMEM;
    if (meta_intent_get(t, RLOCK_KEY, &v) == 0 &&
        meta_intent_decode(v.mv_data, v.mv_size, x) == 0 && x->kind == XK_RLOCK) {
        a->txid = x->ino;
        a->until_real_ns = (int64_t)x->dir;
    }
    free(x);
    return 0;
}

int meta_rlock_load(struct meta_ctx *c)
{
    struct rlock_arg a = {0, 0};
    int rc = meta_store_read(c->store, NULL, rlock_read_txn, &a);
    int64_t left = a.until_real_ns - (int64_t)util_now_real_ns();
    if (rc == 0 && a.txid && left > 0) {
        c->rlock_txid = a.txid;
        c->rlock_until_ns = (int64_t)util_now_mono_ns() + left;
        log_info("MDT%04x: the rename lock is held by %llx for %lld ms more", c->mdt,
                 (unsigned long long)a.txid, (long long)(left / 1000000));
    }
    return rc;
}

static int rename_lock(const struct meta_req *rq, uint64_t txid, bool take)
{
    struct meta_ctx *c = rq->ctx;
    int64_t now = (int64_t)util_now_mono_ns();
    int rc = 0;
    bool changed = false;
    pthread_mutex_lock(&c->xlock);
    if (take) {
        if (c->rlock_txid && c->rlock_txid != txid && c->rlock_until_ns > now)
            rc = -EBUSY;
        else {
            changed = c->rlock_txid != txid;
            c->rlock_txid = txid;
            c->rlock_until_ns = now + RLOCK_NS;
        }
    } else if (c->rlock_txid == txid) {
        c->rlock_txid = 0;
        changed = true;
    }
    pthread_mutex_unlock(&c->xlock);
    if (changed) {
        struct rlock_arg a = {take ? txid : 0, (int64_t)util_now_real_ns() + RLOCK_NS};
        int wrc = meta_store_write(c->store, rq, rlock_txn, &a);
        if (wrc && take) {
            rename_lock(rq, txid, false);
            rc = wrc;
        }
    }
    return rc;
}

int meta_op_shard(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_shard_req *q = qv;
    struct proto_shard_rep *r = rv;
    struct shard_arg a = {c, q, r, {0}};
    if (q->cred.uid != 0)
        return -EPERM;
    if (q->op < PROTO_SHARD_ALLOC || q->op > PROTO_SHARD_UNLOCK)
        return -EINVAL;
    if (q->op == PROTO_SHARD_LOCK || q->op == PROTO_SHARD_UNLOCK)
        return c->mdt == 0 ? rename_lock(rq, q->txid, q->op == PROTO_SHARD_LOCK) : -EINVAL;
    if (q->op == PROTO_SHARD_PUT || q->op == PROTO_SHARD_ATTR) {
        /* Only directory records travel, and only under their own number. */
        if (meta_inode_decode(q->rec.p, q->rec.len, &a.rec) || !S_ISDIR(a.rec.mode) ||
            a.rec.ino != q->ino || a.rec.ino == 0)
            return -EINVAL;
    }
    return meta_store_write(c->store, rq, shard_txn, &a);
}

/* Recovery reads which intents are open from a snapshot, which may be older
 * than the request (or the other recovery) that ends one: it claims each
 * (meta_xbusy_add) and only then reads it again, and runs what it reads
 * then. A request unmarks its intent only after its last change to it has
 * committed, so a claimed intent read afresh is as its owner left it, or
 * gone. Run from the scan's copy, a striped mkdir that committed would be
 * undone (its records deleted under its name), a rename acknowledged in
 * phase 2 rolled back, a link dropped twice. */

/* A new intent record about a name (name may be NULL): NULL without memory. */
struct meta_intent *meta_intent_new(uint8_t kind, uint8_t phase, uint64_t ino, uint64_t dir,
                                    const char *name)
{
    struct meta_intent *x = calloc(1, sizeof(*x)); /* 8 KiB: off the stack */
    if (x) {
        x->kind = kind;
        x->phase = phase;
        x->ino = ino;
        x->dir = dir;
        snprintf(x->name, sizeof(x->name), "%s", name ? name : "");
    }
    return x;
}
