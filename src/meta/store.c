/*
 * LMDB-backed metadata store with group commit (store.h).
 *
 * Databases:
 *   inodes   key ino (8 bytes, big-endian)           value: encoded meta_inode
 *   dentries key parent ino + cookie (8+8, BE) + name value: ino (8) + type (1)
 *   xattrs   key ino + name                          value: the xattr value
 *   links    key ino                                 value: symlink target
 *   info     "next_ino", "mdt"                       counters and identity
 *   intents  key transaction id (8, BE)              value: an open cross-MDT operation
 *   pending  key ino (8, BE)                         value: none; its objects wait to go
 * A directory's entries sort by cookie, a 62-bit hash of the name, so a
 * READDIR cookie stays valid while other entries are added and removed.
 */
#include "store.h"

#include "../common/log.h"
#include "../common/util.h"

#include "wcache.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <stdio.h>
#include <sys/statvfs.h>

#define BATCH_MAX         512
#define DEFER_MAX         16
#define INODE_REC_VERSION 2
#define WCACHE_SLOTS      8192

struct wreq {
    meta_txn_fn fn;
    void *arg;
    const struct meta_req *req; /* never NULL (no_req) */
    bool flat;                  /* meta_store_write_flat */
    int rc;
    bool done;
    struct wreq *next;
};

struct meta_store {
    MDB_env *env;
    MDB_dbi inodes, dentries, xattrs, links, info, intents, pending, replies;
    uint32_t mdt;
    void *owner; /* meta_store_set_owner */
    char dir[4096];
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct wreq *head, *tail;
    bool leader;
    bool dirty;
    /* Inode numbers [ino_next, ino_limit) are reserved on disk already; only
     * the batch leader touches them. ino_limit 0: reload from disk. */
    uint64_t ino_next, ino_limit;
    /* A flat batch's directory records whose put waits for the batch's end
     * (meta_dir_touched): a create changes its directory's times, and a
     * batch of creates in one directory writes that record once. Only the
     * batch leader touches them. */
    MDB_txn *defer_txn; /* the flat batch's transaction, or NULL */
    uint32_t ndefer;
    struct meta_inode defer[DEFER_MAX];
    pthread_mutex_t sync_lock;
    struct wcache *wc; /* the walk cache (wcache.h) */
    /* Batches committed and the writes in them (leader only), logged at
     * close: how well group commit gathers under the load seen. */
    uint64_t commits, committed;
    int last_batch; /* how many requests the last batch took */
};

/* What a write or read without a request of its own runs for: nothing is
 * noted and no reply is kept (recovery, fsck, pruning). */
static const struct meta_req no_req;
static int note(struct meta_txn *t, uint64_t ino);

static int mdb_err(int rc)
{
    switch (rc) {
    case 0:
        return 0;
    case MDB_NOTFOUND:
        return -ENOENT;
    case MDB_KEYEXIST:
        return -EEXIST;
    case MDB_MAP_FULL:
        return -ENOSPC;
    case MDB_TXN_FULL:
        return -ENOSPC;
    case MDB_BAD_VALSIZE:
        return -ENAMETOOLONG;
    default:
        return rc > 0 ? -rc : -EIO;
    }
}

static void be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint64_t rd_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static uint64_t name_cookie(const char *name, size_t len)
{
    /* 62 bits: cookie + 1 stays positive as a FUSE directory offset, with
     * room below for the offsets of "." and "..". */
    return util_hash64(name, len) >> 2;
}

int meta_store_open(const char *dir, uint32_t mdt_index, uint64_t map_size, struct meta_store **out)
{
    struct meta_store *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    snprintf(s->dir, sizeof(s->dir), "%s", dir);
    s->mdt = mdt_index;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    pthread_mutex_init(&s->sync_lock, NULL);
    int rc = util_mkdir_p(dir, 0700);
    MDB_txn *txn = NULL;
    if (!rc && !(s->wc = wcache_create(WCACHE_SLOTS)))
        rc = -ENOMEM;
    if (rc) {
        log_error("cannot create MDT directory %s: %s", dir, log_err(rc));
        goto fail;
    }
    if ((rc = mdb_err(mdb_env_create(&s->env))))
        goto fail;
    mdb_env_set_maxdbs(s->env, 16);
    mdb_env_set_mapsize(s->env, map_size);
    mdb_env_set_maxreaders(s->env, 4096);
    rc = mdb_env_open(s->env, dir, MDB_NOSYNC | MDB_NOTLS, 0600);
    if (rc) {
        log_error("cannot open LMDB environment in %s: %s", dir, mdb_strerror(rc));
        rc = mdb_err(rc);
        goto fail;
    }
    if ((rc = mdb_err(mdb_txn_begin(s->env, NULL, 0, &txn))))
        goto fail;
    if ((rc = mdb_err(mdb_dbi_open(txn, "inodes", MDB_CREATE, &s->inodes))) ||
        (rc = mdb_err(mdb_dbi_open(txn, "dentries", MDB_CREATE, &s->dentries))) ||
        (rc = mdb_err(mdb_dbi_open(txn, "xattrs", MDB_CREATE, &s->xattrs))) ||
        (rc = mdb_err(mdb_dbi_open(txn, "links", MDB_CREATE, &s->links))) ||
        (rc = mdb_err(mdb_dbi_open(txn, "info", MDB_CREATE, &s->info))) ||
        (rc = mdb_err(mdb_dbi_open(txn, "intents", MDB_CREATE, &s->intents))) ||
        (rc = mdb_err(mdb_dbi_open(txn, "pending", MDB_CREATE, &s->pending))) ||
        (rc = mdb_err(mdb_dbi_open(txn, "replies", MDB_CREATE, &s->replies))))
        goto fail;
    MDB_val k = {3, "mdt"}, v;
    rc = mdb_get(txn, s->info, &k, &v);
    if (rc == MDB_NOTFOUND) {
        uint8_t b[8];
        be64(b, mdt_index);
        v.mv_size = 8;
        v.mv_data = b;
        rc = mdb_put(txn, s->info, &k, &v, 0);
    } else if (rc == 0 && (v.mv_size != 8 || rd_be64(v.mv_data) != mdt_index)) {
        log_error("%s holds MDT %llu, not MDT %u; refusing to serve it", dir,
                  v.mv_size == 8 ? (unsigned long long)rd_be64(v.mv_data) : 0ull, mdt_index);
        rc = -EINVAL;
        goto fail;
    }
    if ((rc = mdb_err(rc)) || (rc = mdb_err(mdb_txn_commit(txn)))) {
        txn = NULL;
        goto fail;
    }
    txn = NULL;
    if ((rc = meta_store_sync(s)))
        goto fail;
    *out = s;
    return 0;
fail:
    if (txn)
        mdb_txn_abort(txn);
    if (s->env)
        mdb_env_close(s->env);
    wcache_destroy(s->wc);
    free(s);
    return rc;
}

void meta_store_close(struct meta_store *s)
{
    if (!s)
        return;
    if (s->commits)
        log_info("MDT%04x closing: commits=%llu writes=%llu (%.1f per commit)", s->mdt,
                 (unsigned long long)s->commits, (unsigned long long)s->committed,
                 (double)s->committed / (double)s->commits);
    meta_store_sync(s);
    mdb_env_close(s->env);
    wcache_destroy(s->wc);
    free(s);
}

uint32_t meta_store_mdt(const struct meta_store *s)
{
    return s->mdt;
}

void meta_store_set_owner(struct meta_store *s, void *owner)
{
    s->owner = owner;
}

void *meta_store_owner(const struct meta_store *s)
{
    return s->owner;
}

#define INO_RESERVE 65536

/* Make sure the batch can hand out BATCH_MAX inode numbers without touching
 * the counter record: reserve a range in the parent transaction. Creates
 * then cost no write to the info database, and a child that aborts merely
 * skips a number. */
static int reserve_inos(struct meta_store *s, MDB_txn *txn)
{
    if (s->ino_limit && s->ino_limit - s->ino_next >= BATCH_MAX)
        return 0;
    MDB_val k = {8, "next_ino"}, v;
    uint64_t next = 2; /* 1 is the root of MDT 0 */
    int rc = mdb_get(txn, s->info, &k, &v);
    if (rc == 0 && v.mv_size == 8)
        next = rd_be64(v.mv_data);
    else if (rc != MDB_NOTFOUND)
        return mdb_err(rc ? rc : MDB_CORRUPTED);
    if (!s->ino_limit)
        s->ino_next = next;
    uint64_t limit = MAX(next, s->ino_limit) + INO_RESERVE;
    if (limit >= (1ull << PROTO_INO_BITS))
        limit = 1ull << PROTO_INO_BITS;
    uint8_t b[8];
    be64(b, limit);
    v.mv_size = 8;
    v.mv_data = b;
    if ((rc = mdb_err(mdb_put(txn, s->info, &k, &v, 0))))
        return rc;
    s->ino_limit = limit;
    return 0;
}

/* Begin a batch's transaction and make its inode reservation; *limit is
 * set to the reservation in force before, for batch_restart. */
static int batch_begin(struct meta_store *s, bool flat, MDB_txn **txn, uint64_t *limit)
{
    *limit = s->ino_limit;
    s->defer_txn = NULL;
    s->ndefer = 0;
    int rc = mdb_err(mdb_txn_begin(s->env, NULL, 0, txn));
    if (rc == 0 && (rc = reserve_inos(s, *txn)))
        mdb_txn_abort(*txn);
    if (rc)
        s->ino_limit = 0;
    else if (flat)
        s->defer_txn = *txn;
    return rc;
}

/* Write the directory records the batch deferred. */
static int flush_deferred(struct meta_store *s, MDB_txn *txn)
{
    struct meta_txn t = {txn, s, &no_req, false, false, 0};
    int rc = 0;
    s->defer_txn = NULL;
    for (uint32_t i = 0; i < s->ndefer && !rc; i++)
        rc = meta_inode_put(&t, &s->defer[i]);
    s->ndefer = 0;
    return rc;
}

/* Throw the batch's transaction away, with any reservation it made, and
 * begin it again. */
static int batch_restart(struct meta_store *s, bool flat, MDB_txn **txn, uint64_t *limit)
{
    mdb_txn_abort(*txn);
    /* The walk cache may hold facts only those writes made true. */
    wcache_batch_end(s->wc, true);
    s->ino_limit = *limit;
    return batch_begin(s, flat, txn, limit);
}

/* The batch's transaction failed (rc) when it was to be kept: every
 * request of it that had succeeded gets rc. */
static void batch_failed(struct meta_store *s, struct wreq *batch, int rc, const char *what)
{
    s->ino_limit = 0; /* the reservation may not have reached the disk */
    wcache_batch_end(s->wc, true);
    log_error("MDT%04x batch %s: %s", s->mdt, what, log_err(rc));
    for (struct wreq *w = batch; w; w = w->next)
        if (w->rc >= 0)
            w->rc = rc;
}

/* A flat request failed after writing: the batch's transaction cannot be
 * kept. Everything the batch did so far goes; the rest of it runs in a new
 * transaction. */
static int batch_lost(struct meta_store *s, struct wreq *batch, struct wreq *bad, MDB_txn **txn,
                      uint64_t *limit)
{
    int n = 0;
    for (struct wreq *w = batch; w != bad; w = w->next)
        if (w->rc >= 0) {
            w->rc = -EIO;
            n++;
        }
    /* The store's own failure, or a fn that broke its promise. */
    log_error("MDT%04x: a flat request (fn %p) failed after writing (%s); %d other(s) lost", s->mdt,
              (void *)bad->fn, log_err(bad->rc), n);
    return batch_restart(s, true, txn, limit);
}

/* A batch is either flat requests only or one request of any kind (the
 * leader makes it so), and every request runs in the batch's transaction
 * itself. LMDB's nested transactions would let any request fail after
 * writing, but a nested transaction costs about as many instructions as a
 * create. */
static void run_batch(struct meta_store *s, struct wreq *batch)
{
    MDB_txn *txn;
    uint64_t limit;
    int rc = batch_begin(s, batch->flat, &txn, &limit);
    bool any = false;
    for (struct wreq *w = batch; w; w = w->next) {
        if (rc) {
            w->rc = rc;
            continue;
        }
        struct meta_txn t = {txn, s, w->req, false, false, 0};
        struct meta_reply *kept = w->req->reply;
        w->rc = w->fn(&t, w->arg);
        if (kept && w->rc > 0)
            kept->cross = true; /* its coordinator's commit keeps the reply */
        else if (kept && w->rc == 0 && !kept->cross && t.wrote)
            w->rc = meta_reply_here(&t); /* (a change that changed nothing may run again) */
        if (w->rc >= 0)
            any = any || t.wrote;
        else if (t.wrote && any)
            rc = batch_lost(s, batch, w, &txn, &limit);
        else if (t.wrote)
            rc = batch_restart(s, batch->flat, &txn, &limit); /* nothing else kept yet */
    }
    if (rc) {
        wcache_batch_end(s->wc, true);
        return; /* every request has its error and no transaction is open */
    }
    if (any && (rc = flush_deferred(s, txn))) {
        mdb_txn_abort(txn);
        batch_failed(s, batch, rc, "lost writing its directories");
        return;
    }
    if (!any) {
        /* Nothing to keep but perhaps a new reservation: commit that. */
        if (mdb_txn_commit(txn))
            s->ino_limit = 0;
        wcache_batch_end(s->wc, false);
        return;
    }
    if ((rc = mdb_err(mdb_txn_commit(txn)))) {
        batch_failed(s, batch, rc, "commit failed");
        return;
    }
    wcache_batch_end(s->wc, false);
    s->commits++;
    for (struct wreq *w = batch; w; w = w->next)
        s->committed += w->rc >= 0;
}

/* Note ino in the request's list; its index there, or -1. */
static int note(struct meta_txn *t, uint64_t ino)
{
    struct meta_touched *m = t->req->touched;
    if (!m)
        return -1;
    for (uint32_t i = 0; i < m->n; i++)
        if (m->ino[i] == ino)
            return (int)i;
    if (m->n < META_TOUCHED_MAX) {
        m->has_attr[m->n] = false;
        m->ino[m->n++] = ino;
        return (int)m->n - 1;
    }
    m->overflow = true;
    return -1;
}

void meta_inode_attr(const struct meta_inode *in, struct proto_attr *a)
{
    a->ino = in->ino;
    a->mode = in->mode;
    /* A striped directory's subdirectories are counted per shard; like
     * btrfs, it says 1 ("not counted") rather than a part of the count. */
    a->nlink = S_ISDIR(in->mode) && in->dstripe ? 1 : in->nlink;
    a->uid = in->uid;
    a->gid = in->gid;
    a->size = in->size;
    a->blocks = (in->size + 511) / 512;
    a->atime_ns = in->atime_ns;
    a->mtime_ns = in->mtime_ns;
    a->ctime_ns = in->ctime_ns;
    a->rdev = in->rdev;
    a->dstripe = in->dstripe;
}

static int store_write(struct meta_store *s, const struct meta_req *rq, meta_txn_fn fn, void *arg,
                       bool flat)
{
    struct wreq w = {.fn = fn, .arg = arg, .req = rq ? rq : &no_req, .flat = flat};
    pthread_mutex_lock(&s->lock);
    if (s->tail)
        s->tail->next = &w;
    else
        s->head = &w;
    s->tail = &w;
    while (!w.done) {
        if (s->leader) {
            pthread_cond_wait(&s->cond, &s->lock);
            continue;
        }
        /* Lead one batch: everything queued so far, up to BATCH_MAX. */
        s->leader = true;
        if (s->last_batch > 1) {
            /* Writes come in together: let the threads that are about to
             * queue theirs do so, and commit them with this one. A lone
             * client (batches of one) never waits for this. */
            pthread_mutex_unlock(&s->lock);
            sched_yield();
            pthread_mutex_lock(&s->lock);
        }
        struct wreq *batch = s->head, *last = batch;
        int n = 1;
        for (; n < BATCH_MAX && batch->flat && last->next && last->next->flat; n++)
            last = last->next;
        s->last_batch = n;
        s->head = last->next;
        if (!s->head)
            s->tail = NULL;
        last->next = NULL;
        pthread_mutex_unlock(&s->lock);
        run_batch(s, batch);
        pthread_mutex_lock(&s->lock);
        for (struct wreq *b = batch; b;) {
            struct wreq *next = b->next;
            b->done = true;
            b = next;
        }
        s->dirty = true;
        s->leader = false;
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    return w.rc;
}

int meta_store_queued(struct meta_store *s)
{
    pthread_mutex_lock(&s->lock);
    int n = 0;
    for (struct wreq *w = s->head; w; w = w->next)
        n++;
    pthread_mutex_unlock(&s->lock);
    return n;
}

int meta_store_write(struct meta_store *s, const struct meta_req *rq, meta_txn_fn fn, void *arg)
{
    return store_write(s, rq, fn, arg, false);
}

int meta_store_write_flat(struct meta_store *s, const struct meta_req *rq, meta_txn_fn fn,
                          void *arg)
{
    return store_write(s, rq, fn, arg, true);
}

int meta_store_read(struct meta_store *s, const struct meta_req *rq, meta_txn_fn fn, void *arg)
{
    MDB_txn *txn;
    /* The generation before the snapshot: see wcache.h. */
    uint64_t gen = wcache_gen(s->wc);
    int rc = mdb_err(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn));
    if (rc)
        return rc;
    struct meta_txn t = {txn, s, rq ? rq : &no_req, false, true, gen};
    rc = fn(&t, arg);
    mdb_txn_abort(txn);
    return rc;
}

int meta_store_sync(struct meta_store *s)
{
    pthread_mutex_lock(&s->lock);
    s->dirty = false;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&s->sync_lock);
    int rc = mdb_env_sync(s->env, 1);
    pthread_mutex_unlock(&s->sync_lock);
    if (rc) {
        log_error("MDT%04x sync failed: %s", s->mdt, mdb_strerror(rc));
        pthread_mutex_lock(&s->lock);
        s->dirty = true;
        pthread_mutex_unlock(&s->lock);
    }
    return mdb_err(rc);
}

int meta_store_flush_if_dirty(struct meta_store *s)
{
    pthread_mutex_lock(&s->lock);
    bool dirty = s->dirty;
    pthread_mutex_unlock(&s->lock);
    return dirty ? meta_store_sync(s) : 0;
}

int meta_store_stats(struct meta_store *s, struct proto_tstat *out)
{
    MDB_envinfo info;
    MDB_stat st;
    MDB_txn *txn;
    int rc = mdb_err(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn));
    if (rc)
        return rc;
    mdb_stat(txn, s->inodes, &st);
    mdb_txn_abort(txn);
    mdb_env_info(s->env, &info);
    MDB_stat est;
    mdb_env_stat(s->env, &est);
    uint64_t map = info.me_mapsize, used = (uint64_t)(info.me_last_pgno + 1) * est.ms_psize;
    struct statvfs vfs;
    uint64_t disk_avail = UINT64_MAX;
    if (statvfs(s->dir, &vfs) == 0)
        disk_avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    uint64_t avail = map > used ? map - used : 0;
    if (avail > disk_avail)
        avail = disk_avail;
    out->index = s->mdt;
    out->bytes_used = used;
    out->bytes_avail = avail;
    out->bytes_total = used + avail;
    out->inodes_used = st.ms_entries;
    /* An inode costs about 512 bytes with its entry: the free estimate. */
    out->inodes_total = st.ms_entries + avail / 512;
    return 0;
}

/* ---- records ---- */

/* Call fn on every record of dbi in key order; a non-zero return stops the
 * walk and is returned. */
static int walk_db(struct meta_txn *t, MDB_dbi dbi,
                   int (*fn)(void *arg, const MDB_val *k, const MDB_val *v), void *arg)
{
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, dbi, &cur));
    if (rc)
        return rc;
    MDB_val k, v;
    int mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    while (mrc == 0 && (rc = fn(arg, &k, &v)) == 0)
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    mdb_cursor_close(cur);
    if (rc == 0 && mrc != MDB_NOTFOUND)
        rc = mdb_err(mrc);
    return rc;
}

/* Get or delete the record under a 64-bit key (big-endian, so keys sort
 * as numbers). */
static int get_u64(struct meta_txn *t, MDB_dbi dbi, uint64_t key, MDB_val *val)
{
    uint8_t kb[8];
    be64(kb, key);
    MDB_val k = {8, kb};
    return mdb_err(mdb_get(t->txn, dbi, &k, val));
}

/* Every change to the store goes through del_rec or put_rec, which mark
 * the transaction written (run_batch must know). */
static int del_rec(struct meta_txn *t, MDB_dbi dbi, const void *key, size_t klen)
{
    MDB_val k = {klen, (void *)key};
    t->wrote = true;
    return mdb_err(mdb_del(t->txn, dbi, &k, NULL));
}

static int del_u64(struct meta_txn *t, MDB_dbi dbi, uint64_t key)
{
    uint8_t kb[8];
    be64(kb, key);
    return del_rec(t, dbi, kb, 8);
}

/* With MDB_NOOVERWRITE, a key already there is -EEXIST, changes nothing,
 * and leaves the record found in *old (if old). */
static int put_rec_old(struct meta_txn *t, MDB_dbi dbi, const void *key, size_t klen,
                       const void *val, size_t vlen, unsigned flags, MDB_val *old)
{
    MDB_val k = {klen, (void *)key}, v = {vlen, (void *)val};
    int rc = mdb_put(t->txn, dbi, &k, &v, flags);
    if (rc != MDB_KEYEXIST)
        t->wrote = true; /* any other failure spoils the transaction */
    else if (old)
        *old = v;
    return mdb_err(rc);
}

static int put_rec(struct meta_txn *t, MDB_dbi dbi, const void *key, size_t klen, const void *val,
                   size_t vlen, unsigned flags)
{
    return put_rec_old(t, dbi, key, klen, val, vlen, flags, NULL);
}

static int put_u64(struct meta_txn *t, MDB_dbi dbi, uint64_t key, const void *val, size_t vlen)
{
    uint8_t kb[8];
    be64(kb, key);
    return put_rec(t, dbi, kb, 8, val, vlen, 0);
}

int meta_inode_decode(const void *buf, size_t len, struct meta_inode *out)
{
    struct proto_dec d;
    proto_dec_init(&d, buf, len);
    uint8_t ver;
    meta_inode_clear(out);
    proto_get_U8(&d, &ver);
    proto_get_U64(&d, &out->ino);
    proto_get_U32(&d, &out->mode);
    proto_get_U32(&d, &out->uid);
    proto_get_U32(&d, &out->gid);
    proto_get_U32(&d, &out->nlink);
    proto_get_U64(&d, &out->size);
    proto_get_I64(&d, &out->atime_ns);
    proto_get_I64(&d, &out->mtime_ns);
    proto_get_I64(&d, &out->ctime_ns);
    proto_get_U64(&d, &out->rdev);
    proto_get_U32(&d, &out->flags);
    proto_get_U64(&d, &out->parent);
    proto_get_I32(&d, &out->dcount);
    proto_get_U32(&d, &out->dsize);
    proto_get_I32(&d, &out->doffset);
    if (S_ISREG(out->mode))
        proto_get_LAYOUT(&d, &out->layout);
    /* Version 2 added the stripe of a directory over MDTs. */
    if (ver >= 2 && S_ISDIR(out->mode)) {
        proto_get_U64(&d, &out->dstripe);
        proto_get_U64(&d, &out->ddefault);
        /* The owner of a seal follows, when there is one: a reader that
         * does not know it stops before (so no new version). */
        if (!d.err && d.off < d.len)
            proto_get_U64(&d, &out->seal);
    }
    if (d.err || ver < 1 || ver > INODE_REC_VERSION || !proto_ds_valid(out->dstripe))
        return -EUCLEAN;
    return 0;
}

/* Note in the request's list that in changed, and to what. */
static void note_attr(struct meta_txn *t, const struct meta_inode *in)
{
    int i = note(t, in->ino);
    if (i >= 0) {
        meta_inode_attr(in, &t->req->touched->attr[i]);
        t->req->touched->has_attr[i] = true;
    }
}

/* The batch's deferred record of ino, or NULL. */
static struct meta_inode *deferred(struct meta_txn *t, uint64_t ino)
{
    struct meta_store *s = t->store;
    if (s->defer_txn != t->txn)
        return NULL;
    for (uint32_t i = 0; i < s->ndefer; i++)
        if (s->defer[i].ino == ino)
            return &s->defer[i];
    return NULL;
}

/* Copy a directory's record (it has no layout). */
static void dir_copy(struct meta_inode *to, const struct meta_inode *from)
{
    memcpy(to, from, offsetof(struct meta_inode, layout));
    to->layout.ncomp = 0;
}

/* The record of ino leaves the deferred ones (a put or delete supersedes). */
static void undefer(struct meta_txn *t, uint64_t ino)
{
    struct meta_inode *d = deferred(t, ino);
    if (d) {
        struct meta_store *s = t->store;
        dir_copy(d, &s->defer[--s->ndefer]);
    }
}

/* ---- the walk cache's view of directories (wcache.h) ---- */

static void dir_sum(const struct meta_inode *in, struct wcache_dir *d)
{
    d->ino = in->ino;
    d->parent = in->parent;
    d->dstripe = in->dstripe;
    d->mode = in->mode;
    d->uid = in->uid;
    d->gid = in->gid;
}

static bool same_sum(const struct wcache_dir *a, const struct wcache_dir *b)
{
    return a->ino == b->ino && a->parent == b->parent && a->dstripe == b->dstripe &&
           a->mode == b->mode && a->uid == b->uid && a->gid == b->gid;
}

/* Before the leader writes directory record in: tell the walk cache if
 * what walks see of it changes. When the cache holds nothing of it, the
 * record on disk says what a reader might be about to add. */
static void wc_dir_put(struct meta_txn *t, const struct meta_inode *in)
{
    if (!S_ISDIR(in->mode))
        return;
    struct wcache *wc = t->store->wc;
    struct wcache_dir now, was;
    dir_sum(in, &now);
    if (wcache_peek_dir(wc, in->ino, &was)) {
        if (!same_sum(&was, &now))
            wcache_changed_dir(wc, in->ino);
        return;
    }
    struct meta_inode old;
    MDB_val v;
    int rc = get_u64(t, t->store->inodes, in->ino, &v);
    if (rc == -ENOENT)
        return; /* a new directory: nothing was known of it */
    if (rc == 0 && meta_inode_decode(v.mv_data, v.mv_size, &old) == 0 && S_ISDIR(old.mode)) {
        dir_sum(&old, &was);
        if (same_sum(&was, &now))
            return;
    }
    wcache_changed_dir(wc, in->ino);
}

/* The record a summary stands for, zero but for what it holds. */
static void dir_unsum(const struct wcache_dir *d, struct meta_inode *in)
{
    meta_inode_clear(in);
    in->ino = d->ino;
    in->parent = d->parent;
    in->dstripe = d->dstripe;
    in->mode = d->mode;
    in->uid = d->uid;
    in->gid = d->gid;
}

int meta_walk_dir(struct meta_txn *t, uint64_t ino, struct meta_inode *out, bool *full)
{
    struct wcache_dir d;
    if (wcache_dir(t->store->wc, ino, &d)) {
        dir_unsum(&d, out);
        *full = false;
        return 0;
    }
    *full = true;
    int rc = meta_inode_get(t, ino, out);
    if (rc == 0 && S_ISDIR(out->mode)) {
        dir_sum(out, &d);
        wcache_add_dir(t->store->wc, t->reader, t->wc_gen, &d);
    }
    return rc;
}

void meta_store_wcache_counts(struct meta_store *s, uint64_t *hits, uint64_t *drops)
{
    wcache_counts(s->wc, hits, drops);
}

int meta_dir_touched(struct meta_txn *t, const struct meta_inode *dir)
{
    struct meta_store *s = t->store;
    struct meta_inode *d = deferred(t, dir->ino);
    if (!S_ISDIR(dir->mode) || (!d && (s->defer_txn != t->txn || s->ndefer == DEFER_MAX)))
        return meta_inode_put(t, dir);
    wc_dir_put(t, dir);
    if (!d)
        d = &s->defer[s->ndefer++];
    dir_copy(d, dir);
    note_attr(t, dir);
    t->wrote = true;
    return 0;
}

int meta_inode_get(struct meta_txn *t, uint64_t ino, struct meta_inode *out)
{
    const struct meta_inode *d = deferred(t, ino);
    if (d) {
        dir_copy(out, d);
        return 0;
    }
    MDB_val v;
    int rc = get_u64(t, t->store->inodes, ino, &v);
    if (rc)
        return rc;
    if (meta_inode_decode(v.mv_data, v.mv_size, out) || out->ino != ino) {
        log_error("MDT%04x inode %llx: corrupt record", t->store->mdt, (unsigned long long)ino);
        return -EUCLEAN;
    }
    return 0;
}

int meta_inode_encode(const struct meta_inode *in, void *buf, size_t cap)
{
    struct proto_enc e;
    uint8_t ver = INODE_REC_VERSION;
    proto_enc_init(&e, buf, cap);
    proto_put_U8(&e, &ver);
    proto_put_U64(&e, &in->ino);
    proto_put_U32(&e, &in->mode);
    proto_put_U32(&e, &in->uid);
    proto_put_U32(&e, &in->gid);
    proto_put_U32(&e, &in->nlink);
    proto_put_U64(&e, &in->size);
    proto_put_I64(&e, &in->atime_ns);
    proto_put_I64(&e, &in->mtime_ns);
    proto_put_I64(&e, &in->ctime_ns);
    proto_put_U64(&e, &in->rdev);
    proto_put_U32(&e, &in->flags);
    proto_put_U64(&e, &in->parent);
    proto_put_I32(&e, &in->dcount);
    proto_put_U32(&e, &in->dsize);
    proto_put_I32(&e, &in->doffset);
    if (S_ISREG(in->mode))
        proto_put_LAYOUT(&e, &in->layout);
    if (S_ISDIR(in->mode)) {
        proto_put_U64(&e, &in->dstripe);
        proto_put_U64(&e, &in->ddefault);
        if (in->seal)
            proto_put_U64(&e, &in->seal);
    }
    return e.err ? e.err : (int)e.len;
}

int meta_inode_put(struct meta_txn *t, const struct meta_inode *in)
{
    uint8_t buf[META_INODE_REC_MAX];
    int len = meta_inode_encode(in, buf, sizeof(buf));
    if (len < 0)
        return len;
    wc_dir_put(t, in);
    undefer(t, in->ino);
    note_attr(t, in);
    return put_u64(t, t->store->inodes, in->ino, buf, (size_t)len);
}

int meta_inode_del(struct meta_txn *t, uint64_t ino)
{
    int i = note(t, ino);
    if (i >= 0)
        t->req->touched->has_attr[i] = false;
    /* Only a cached directory's deletion is reported: a reader may still
     * add an uncached one's summary from an older snapshot, but a deleted
     * directory was empty, so a walk through it ends in ENOENT. */
    struct wcache_dir was;
    if (wcache_peek_dir(t->store->wc, ino, &was))
        wcache_changed_dir(t->store->wc, ino);
    undefer(t, ino);
    return del_u64(t, t->store->inodes, ino);
}

int meta_alloc_ino(struct meta_txn *t, uint64_t *ino)
{
    struct meta_store *s = t->store;
    /* Only write transactions of a batch allocate; reserve_inos ran. */
    if (s->ino_next >= s->ino_limit)
        return -ENOSPC;
    *ino = proto_ino_make(s->mdt, s->ino_next++);
    return 0;
}

/* ---- directory entries ---- */

static size_t dentry_key(uint8_t *kb, uint64_t parent, const char *name, size_t len)
{
    be64(kb, parent);
    be64(kb + 8, name_cookie(name, len));
    memcpy(kb + 16, name, len);
    return 16 + len;
}

int meta_dentry_get(struct meta_txn *t, uint64_t parent, const char *name, uint64_t *ino,
                    uint8_t *type)
{
    uint8_t kb[16 + PROTO_MAX_NAME];
    size_t len = strlen(name);
    if (len > PROTO_MAX_NAME)
        return -ENAMETOOLONG;
    MDB_val k = {dentry_key(kb, parent, name, len), kb}, v;
    int rc = mdb_err(mdb_get(t->txn, t->store->dentries, &k, &v));
    if (rc)
        return rc;
    if (v.mv_size != 9)
        return -EUCLEAN;
    *ino = rd_be64(v.mv_data);
    if (type)
        *type = ((uint8_t *)v.mv_data)[8];
    return 0;
}

/* Does an entry's value name a directory (or is it one nobody can read,
 * which a walk-cache fact may still stand for)? */
static bool names_dir(const MDB_val *v)
{
    return v->mv_size != 9 || ((const uint8_t *)v->mv_data)[8] == DT_DIR;
}

int meta_walk_name(struct meta_txn *t, uint64_t dir, const char *name, uint64_t *ino, uint8_t *type)
{
    struct wcache *wc = t->store->wc;
    size_t len = strlen(name);
    if (wcache_name(wc, dir, name, len, ino)) {
        *type = DT_DIR;
        return 0;
    }
    int rc = meta_dentry_get(t, dir, name, ino, type);
    if (rc == 0 && *type == DT_DIR)
        wcache_add_name(wc, t->reader, t->wc_gen, dir, name, len, *ino);
    return rc;
}

static int dentry_put(struct meta_txn *t, uint64_t parent, const char *name, uint64_t ino,
                      uint8_t type, unsigned flags, MDB_val *old)
{
    uint8_t kb[16 + PROTO_MAX_NAME], vb[9];
    size_t len = strlen(name);
    if (len > PROTO_MAX_NAME)
        return -ENAMETOOLONG;
    be64(vb, ino);
    vb[8] = type;
    note(t, parent);
    size_t klen = dentry_key(kb, parent, name, len);
    if (flags & MDB_NOOVERWRITE) /* adding a name never changes a walk-cache fact */
        return put_rec_old(t, t->store->dentries, kb, klen, vb, 9, flags, old);
    /* Replacing one: through a cursor, to see what it named in the same
     * search. */
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, t->store->dentries, &cur));
    if (rc)
        return rc;
    MDB_val k = {klen, kb}, v, nv = {9, vb};
    int found = mdb_cursor_get(cur, &k, &v, MDB_SET);
    if (found == 0 && names_dir(&v))
        wcache_changed_name(t->store->wc, parent, name, len);
    t->wrote = true;
    rc = mdb_err(mdb_cursor_put(cur, &k, &nv, found == 0 ? MDB_CURRENT : 0));
    mdb_cursor_close(cur);
    return rc;
}

int meta_dentry_add(struct meta_txn *t, uint64_t parent, const char *name, uint64_t ino,
                    uint8_t type)
{
    return dentry_put(t, parent, name, ino, type, MDB_NOOVERWRITE, NULL);
}

int meta_dentry_add_or_get(struct meta_txn *t, uint64_t parent, const char *name, uint64_t *ino,
                           uint8_t type)
{
    MDB_val old;
    int rc = dentry_put(t, parent, name, *ino, type, MDB_NOOVERWRITE, &old);
    if (rc != -EEXIST)
        return rc;
    if (old.mv_size != 9)
        return -EUCLEAN;
    *ino = rd_be64(old.mv_data);
    return 1;
}

int meta_dentry_set(struct meta_txn *t, uint64_t parent, const char *name, uint64_t ino,
                    uint8_t type)
{
    return dentry_put(t, parent, name, ino, type, 0, NULL);
}

int meta_dentry_del(struct meta_txn *t, uint64_t parent, const char *name)
{
    uint8_t kb[16 + PROTO_MAX_NAME];
    size_t len = strlen(name);
    if (len > PROTO_MAX_NAME)
        return -ENAMETOOLONG;
    note(t, parent);
    /* Through a cursor, to see what the entry named (one search, as
     * mdb_del makes): removing a directory's entry changes a fact of the
     * walk cache. */
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, t->store->dentries, &cur));
    if (rc)
        return rc;
    MDB_val k = {dentry_key(kb, parent, name, len), kb}, v;
    if ((rc = mdb_err(mdb_cursor_get(cur, &k, &v, MDB_SET))) == 0) {
        if (names_dir(&v))
            wcache_changed_name(t->store->wc, parent, name, len);
        t->wrote = true;
        rc = mdb_err(mdb_cursor_del(cur, 0));
    }
    mdb_cursor_close(cur);
    return rc;
}

int meta_dir_iterate(struct meta_txn *t, uint64_t dir, uint64_t cookie, meta_dirent_cb cb,
                     void *arg)
{
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, t->store->dentries, &cur));
    if (rc)
        return rc;
    uint8_t kb[16];
    be64(kb, dir);
    be64(kb + 8, cookie);
    MDB_val k = {16, kb}, v;
    int mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (mrc == 0) {
        if (k.mv_size < 17 || rd_be64(k.mv_data) != dir)
            break;
        if (v.mv_size != 9) {
            rc = -EUCLEAN;
            break;
        }
        const uint8_t *kp = k.mv_data;
        rc = cb(arg, rd_be64(v.mv_data), ((uint8_t *)v.mv_data)[8], (const char *)kp + 16,
                k.mv_size - 16, rd_be64(kp + 8) + 1);
        if (rc)
            break;
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    if (rc == 1)
        rc = 0;
    if (rc == 0 && mrc && mrc != MDB_NOTFOUND)
        rc = mdb_err(mrc);
    return rc;
}

static int first_entry_cb(void *arg, uint64_t ino, uint8_t type, const char *name, size_t len,
                          uint64_t next)
{
    (void)ino, (void)type, (void)name, (void)len, (void)next;
    *(int *)arg = 0;
    return 1;
}

int meta_dir_is_empty(struct meta_txn *t, uint64_t dir)
{
    int empty = 1;
    int rc = meta_dir_iterate(t, dir, 0, first_entry_cb, &empty);
    return rc ? rc : empty;
}

struct scan_arg {
    struct meta_txn *t;
    union {
        meta_scan_dentry_cb dentry;
        meta_scan_inode_cb inode;
        meta_scan_intent_cb intent;
        int (*pending)(void *arg, uint64_t ino);
    } cb;
    void *arg;
    struct meta_inode *in;
};

static int dentry_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    struct scan_arg *a = arg;
    char name[PROTO_MAX_NAME + 1];
    if (k->mv_size < 17 || k->mv_size > 16 + PROTO_MAX_NAME || v->mv_size != 9)
        return -EUCLEAN;
    memcpy(name, (const uint8_t *)k->mv_data + 16, k->mv_size - 16);
    name[k->mv_size - 16] = '\0';
    return a->cb.dentry(a->arg, rd_be64(k->mv_data), name, rd_be64(v->mv_data),
                        ((const uint8_t *)v->mv_data)[8]);
}

int meta_dentry_scan(struct meta_txn *t, meta_scan_dentry_cb cb, void *arg)
{
    struct scan_arg a = {.t = t, .cb.dentry = cb, .arg = arg};
    return walk_db(t, t->store->dentries, dentry_rec, &a);
}

static int inode_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    struct scan_arg *a = arg;
    (void)v;
    if (k->mv_size != 8)
        return -EUCLEAN;
    uint64_t ino = rd_be64(k->mv_data);
    /* Decoded through the one reader, which reports corruption. */
    int grc = meta_inode_get(a->t, ino, a->in);
    return a->cb.inode(a->arg, ino, grc == 0 ? a->in : NULL);
}

int meta_inode_scan(struct meta_txn *t, meta_scan_inode_cb cb, void *arg)
{
    struct scan_arg a = {.t = t, .cb.inode = cb, .arg = arg, .in = malloc(sizeof(*a.in))};
    int rc = a.in ? walk_db(t, t->store->inodes, inode_rec, &a) : -ENOMEM;
    free(a.in);
    return rc;
}

/* ---- xattrs and symlinks ---- */

static size_t xattr_key(uint8_t *kb, uint64_t ino, const char *name)
{
    size_t len = strlen(name);
    be64(kb, ino);
    memcpy(kb + 8, name, len);
    return 8 + len;
}

int meta_xattr_get(struct meta_txn *t, uint64_t ino, const char *name, MDB_val *val)
{
    uint8_t kb[8 + PROTO_MAX_NAME];
    if (strlen(name) > PROTO_MAX_NAME)
        return -ERANGE;
    MDB_val k = {xattr_key(kb, ino, name), kb};
    return mdb_err(mdb_get(t->txn, t->store->xattrs, &k, val));
}

int meta_xattr_put(struct meta_txn *t, uint64_t ino, const char *name, const void *v, size_t len)
{
    uint8_t kb[8 + PROTO_MAX_NAME];
    if (strlen(name) > PROTO_MAX_NAME)
        return -ERANGE;
    return put_rec(t, t->store->xattrs, kb, xattr_key(kb, ino, name), v, len, 0);
}

int meta_xattr_del(struct meta_txn *t, uint64_t ino, const char *name)
{
    uint8_t kb[8 + PROTO_MAX_NAME];
    if (strlen(name) > PROTO_MAX_NAME)
        return -ERANGE;
    return del_rec(t, t->store->xattrs, kb, xattr_key(kb, ino, name));
}

static int xattr_walk(struct meta_txn *t, uint64_t ino, bool del,
                      int (*cb)(void *arg, const char *name, size_t len), void *arg)
{
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, t->store->xattrs, &cur));
    if (rc)
        return rc;
    uint8_t kb[8];
    be64(kb, ino);
    MDB_val k = {8, kb}, v;
    int mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (mrc == 0 && k.mv_size > 8 && rd_be64(k.mv_data) == ino) {
        if (del) {
            /* Re-seek after each delete rather than trust the cursor. */
            t->wrote = true;
            if ((rc = mdb_err(mdb_cursor_del(cur, 0))))
                break;
            k.mv_size = 8;
            k.mv_data = kb;
            mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
            continue;
        }
        if ((rc = cb(arg, (const char *)k.mv_data + 8, k.mv_size - 8)))
            break;
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return rc;
}

int meta_xattr_list(struct meta_txn *t, uint64_t ino,
                    int (*cb)(void *arg, const char *name, size_t len), void *arg)
{
    return xattr_walk(t, ino, false, cb, arg);
}

int meta_xattr_del_all(struct meta_txn *t, uint64_t ino)
{
    return xattr_walk(t, ino, true, NULL, NULL);
}

int meta_symlink_get(struct meta_txn *t, uint64_t ino, MDB_val *target)
{
    return get_u64(t, t->store->links, ino, target);
}

int meta_symlink_put(struct meta_txn *t, uint64_t ino, const char *target, size_t len)
{
    return put_u64(t, t->store->links, ino, target, len);
}

int meta_symlink_del(struct meta_txn *t, uint64_t ino)
{
    int rc = del_u64(t, t->store->links, ino);
    return rc == -ENOENT ? 0 : rc;
}

/* ---- intents ---- */

int meta_intent_put(struct meta_txn *t, uint64_t txid, const void *rec, size_t len)
{
    return put_u64(t, t->store->intents, txid, rec, len);
}

int meta_intent_get(struct meta_txn *t, uint64_t txid, MDB_val *val)
{
    return get_u64(t, t->store->intents, txid, val);
}

int meta_intent_del(struct meta_txn *t, uint64_t txid)
{
    return del_u64(t, t->store->intents, txid);
}

static int intent_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    struct scan_arg *a = arg;
    return k->mv_size == 8 ? a->cb.intent(a->arg, rd_be64(k->mv_data), v->mv_data, v->mv_size)
                           : -EUCLEAN;
}

int meta_intent_scan(struct meta_txn *t, meta_scan_intent_cb cb, void *arg)
{
    struct scan_arg a = {.t = t, .cb.intent = cb, .arg = arg};
    return walk_db(t, t->store->intents, intent_rec, &a);
}

/* ---- files whose objects wait to be destroyed ---- */

int meta_pending_put(struct meta_txn *t, uint64_t ino)
{
    return put_u64(t, t->store->pending, ino, "", 0);
}

int meta_pending_del(struct meta_txn *t, uint64_t ino)
{
    int rc = del_u64(t, t->store->pending, ino);
    return rc == -ENOENT ? 0 : rc;
}

static int pending_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    struct scan_arg *a = arg;
    (void)v;
    return k->mv_size == 8 ? a->cb.pending(a->arg, rd_be64(k->mv_data)) : 0;
}

int meta_pending_scan(struct meta_txn *t, int (*cb)(void *arg, uint64_t ino), void *arg)
{
    struct scan_arg a = {.t = t, .cb.pending = cb, .arg = arg};
    return walk_db(t, t->store->pending, pending_rec, &a);
}

/* ---- reply records (store.h) ---- */

/* Key: client (8 bytes) and tag (2), big-endian. Value: seq u64, the time
 * it was written (i64 ns, CLOCK_REALTIME), op u16, status i32, then the
 * reply's payload. */
#define REPLY_KEY_LEN 10
#define REPLY_HDR_LEN 22
/* A change's reply holds at most an attr and a layout. */
#define REPLY_MAX (REPLY_HDR_LEN + META_INODE_REC_MAX + 1024)

static void reply_key(uint8_t *k, uint64_t client, uint16_t tag)
{
    be64(k, client);
    k[8] = (uint8_t)(tag >> 8);
    k[9] = (uint8_t)tag;
}

/* The fixed part of a record; -EUCLEAN if it is too short to hold one. */
struct reply_head {
    uint64_t seq;
    int64_t when_ns;
    uint16_t op;
    int32_t status;
};

static int reply_head(const MDB_val *v, struct reply_head *h)
{
    struct proto_dec d;
    proto_dec_init(&d, v->mv_data, v->mv_size);
    proto_get_U64(&d, &h->seq);
    proto_get_I64(&d, &h->when_ns);
    proto_get_U16(&d, &h->op);
    proto_get_I32(&d, &h->status);
    return d.err ? -EUCLEAN : 0;
}

int meta_reply_here(struct meta_txn *t)
{
    struct meta_reply *r = t->req->reply;
    if (!r || r->recorded)
        return 0;
    /* Scratch only: the record is encoded here and copied into LMDB by the
     * put below; nothing of the request lives in it afterwards. Per thread
     * so that it costs neither an allocation nor REPLY_MAX of stack. */
    static _Thread_local uint8_t buf[REPLY_MAX];
    struct proto_enc e;
    proto_enc_init(&e, buf, sizeof(buf));
    int64_t now = util_now_real_ns();
    int32_t status = 0;
    proto_put_U64(&e, &r->seq);
    proto_put_I64(&e, &now);
    proto_put_U16(&e, &r->op);
    proto_put_I32(&e, &status);
    int rc = r->encode(&e, r->rep);
    if (rc || e.err) {
        /* Larger than any change's reply should be: the change stands,
         * but a resend of it after a restart would run it again. */
        log_warn("MDT%04x: reply of %s too large to keep (%zu bytes)", t->store->mdt,
                 proto_op_name(r->op), e.len);
        return 0;
    }
    uint8_t k[REPLY_KEY_LEN];
    reply_key(k, r->client, r->tag);
    MDB_cursor *cur;
    if ((rc = mdb_err(mdb_cursor_open(t->txn, t->store->replies, &cur))))
        return rc;
    MDB_val key = {sizeof(k), k}, old, val = {e.len, buf};
    /* MDB_SET, not MDB_SET_KEY: that points key into the page, and a put
     * of another size re-adds the record with a key copied from a page it
     * has just rearranged. */
    int found = mdb_cursor_get(cur, &key, &old, MDB_SET);
    struct reply_head oh;
    /* A change its client gave up on (EIO, an interrupt) can be made after
     * the next change in its slot: the newer record stays. */
    if (found == 0 && reply_head(&old, &oh) == 0 && oh.seq > r->seq) {
        mdb_cursor_close(cur);
        return 0;
    }
    t->wrote = true;
    rc = mdb_err(mdb_cursor_put(cur, &key, &val, found == 0 ? MDB_CURRENT : 0));
    mdb_cursor_close(cur);
    if (rc)
        return rc;
    r->recorded = true;
    return 0;
}

struct reply_get_arg {
    uint64_t client, seq;
    uint16_t tag;
    int *status;
    void *payload;
    uint32_t cap, *len;
};

static int reply_get_txn(struct meta_txn *t, void *arg)
{
    struct reply_get_arg *a = arg;
    uint8_t k[REPLY_KEY_LEN];
    reply_key(k, a->client, a->tag);
    MDB_val key = {sizeof(k), k}, v;
    int rc = mdb_err(mdb_get(t->txn, t->store->replies, &key, &v));
    if (rc)
        return rc == -ENOENT ? 0 : rc;
    struct reply_head h;
    if ((rc = reply_head(&v, &h)))
        return rc;
    if (h.seq < a->seq)
        return 0; /* an older change in that slot: this one was not made */
    if (h.seq > a->seq)
        return -EIO;
    size_t n = v.mv_size - REPLY_HDR_LEN;
    if (n > a->cap)
        return -EMSGSIZE;
    memcpy(a->payload, (const uint8_t *)v.mv_data + REPLY_HDR_LEN, n);
    *a->len = (uint32_t)n;
    *a->status = h.status;
    return 1;
}

int meta_reply_get(struct meta_store *s, uint64_t client, uint16_t tag, uint64_t seq, int *status,
                   void *payload, uint32_t cap, uint32_t *len)
{
    struct reply_get_arg a = {client, seq, tag, status, payload, cap, len};
    return meta_store_read(s, NULL, reply_get_txn, &a);
}

/* At most this many records go per transaction, so that a prune never
 * holds the writers up for long. */
#define PRUNE_BATCH 1024

struct prune_arg {
    int64_t before_ns;
    int gone;
    bool more;
};

static int prune_txn(struct meta_txn *t, void *arg)
{
    struct prune_arg *a = arg;
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, t->store->replies, &cur));
    if (rc)
        return rc;
    MDB_val k, v;
    int n = 0;
    a->more = false;
    for (int op = MDB_FIRST; (rc = mdb_cursor_get(cur, &k, &v, op)) == 0; op = MDB_NEXT) {
        struct reply_head h;
        if (reply_head(&v, &h) == 0 && h.when_ns >= a->before_ns)
            continue; /* recent; an unreadable record goes */
        if (n == PRUNE_BATCH) {
            a->more = true;
            break;
        }
        t->wrote = true;
        if ((rc = mdb_cursor_del(cur, 0)))
            break;
        n++;
    }
    mdb_cursor_close(cur);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return mdb_err(rc);
    a->gone += n;
    return 0;
}

int meta_reply_prune(struct meta_store *s, int64_t before_ns)
{
    struct prune_arg a = {.before_ns = before_ns};
    int rc;
    do
        rc = meta_store_write(s, NULL, prune_txn, &a);
    while (rc == 0 && a.more);
    return rc ? rc : a.gone;
}
