/*
 * LMDB-backed metadata store with group commit (store.h).
 *
 * Databases:
 *   inodes   key ino (8 bytes, big-endian)           value: encoded meta_inode
 *   dentries key parent ino + cookie (8+8, BE) + name value: ino (8) + type (1)
 *   xattrs   key ino + name                          value: the xattr value
 *   links    key ino                                 value: symlink target
 *   info     "next_ino", "mdt"                       counters and identity
 *            "dlg" + client id (8, BE)               numbers handed to a client (meta_dlg)
 *   intents  key transaction id (8, BE)              value: an open cross-MDT operation
 *   pending  key ino (8, BE)                         value: none; its objects wait to go
 *   gone     key tombstone id (8, BE)                value: an archived file's object, its
 *                                                    file destroyed (hsm_rec.h)
 * A directory's entries sort by cookie, a 62-bit hash of the name, so a
 * READDIR cookie stays valid while other entries are added and removed.
 */
#include "store.h"

#include "../../common/log.h"
#include "../../common/util.h"

#include "env.h"
#include "wcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <stdio.h>
#include <sys/statvfs.h>

#define BATCH_MAX 512
_Static_assert(META_BATCH_INOS >= BATCH_MAX, "a batch's creates have numbers");

#define WCACHE_SLOTS 8192

struct wreq {
    meta_txn_fn fn;
    void *arg;
    const struct meta_req *req; /* never NULL (no_req) */
    bool flat;                  /* meta_store_write_flat */
    uint64_t started_ns;        /* when its fn began (0: it never ran) */
    int rc;
    bool done;
    struct wreq *next;
};

static const struct meta_req no_req;

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
        (rc = mdb_err(mdb_dbi_open(txn, "replies", MDB_CREATE, &s->replies))) ||
        (rc = mdb_err(mdb_dbi_open(txn, "gone", MDB_CREATE, &s->gone))) ||
        (rc = mdb_err(mdb_dbi_open(txn, "dom", MDB_CREATE, &s->dom))) ||
        (rc = mdb_err(mdb_dbi_open(txn, "mig", MDB_CREATE, &s->mig))))
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
    MDB_stat est;
    mdb_env_stat(s->env, &est);
    s->psize = est.ms_psize;
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

/* Make sure the batch can hand out BATCH_MAX inode numbers, and two ranges
 * to clients (meta_alloc_ino_range), without touching the counter record:
 * reserve a range in the parent transaction. Creates
 * then cost no write to the info database, and a child that aborts merely
 * skips a number. */
static int reserve_inos(struct meta_store *s, MDB_txn *txn)
{
    if (s->ino_limit && s->ino_limit > s->ino_next &&
        s->ino_limit - s->ino_next >= META_BATCH_INOS + 2 * META_DLG_INOS)
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

/* The data file's blocks are allocated ahead of LMDB's writes, a step at
 * a time: a commit that writes new pages at the end of the file then
 * finds its blocks there, and ext4 reserves no block for each page it
 * takes (with 64 KiB of Data-on-MDT a file, that was 8% of the MDT's
 * time). Leader only. The size LMDB sees is unchanged (KEEP_SIZE); a
 * step is at most GROW_STEP, 1/32 of the free space, and what is left of
 * the map, so a small disk is not filled by it; a disk that refuses
 * (full, or no fallocate) is asked again only a quarter step later. */
#define GROW_STEP (64ull << 20)
#define GROW_MIN  (1ull << 20)

/* The bytes of the data file LMDB uses, and its map (info). */
static uint64_t store_used(struct meta_store *s, MDB_envinfo *info)
{
    mdb_env_info(s->env, info);
    return (uint64_t)(info->me_last_pgno + 1) * s->psize;
}

static void grow_ahead(struct meta_store *s)
{
    MDB_envinfo info;
    uint64_t used = store_used(s, &info);
    if (used + GROW_STEP / 4 <= s->grown || used < s->grow_retry)
        return;
    /* Allocated ranges always begin where the last ended, or at LMDB's
     * last page: no blocks are held past a range left unallocated. */
    uint64_t from = used > s->grown ? used : s->grown;
    uint64_t step = info.me_mapsize > from ? info.me_mapsize - from : 0;
    struct statvfs vfs;
    if (statvfs(s->dir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize / 32 < step)
        step = (uint64_t)vfs.f_bavail * vfs.f_frsize / 32;
    step = MIN(step, GROW_STEP);
    /* Not looked at again before the store has grown by a quarter step
     * (a small step, a refusal). */
    s->grow_retry = used + GROW_STEP / 4;
    int fd;
    if (step < GROW_MIN || mdb_env_get_fd(s->env, &fd))
        return;
    if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)from, (off_t)step) == 0)
        s->grown = from + step;
    else
        log_debug("MDT%04x: no blocks ahead of the store at %llu: %s", s->mdt,
                  (unsigned long long)from, log_err(-errno));
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
        s->wseq++;
        if (w->req->wait_ns)
            w->started_ns = util_now_mono_ns();
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
    if (any && (rc = meta_store_flush_deferred(s, txn))) {
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
    grow_ahead(s);
    s->commits++;
    for (struct wreq *w = batch; w; w = w->next)
        s->committed += w->rc >= 0;
}

/* Queue ws[0..n) together, so that no other write comes between them,
 * and wait until the last is done: batches are taken from the head of the
 * queue, so the others are done before it. Their waits are counted when
 * the first's request counts one (they are one request's). */
/* Writes the calling thread made that succeeded (meta_store_thread_writes). */
static _Thread_local uint64_t thread_writes;

static void store_write_many(struct meta_store *s, struct wreq *ws, uint32_t n)
{
    uint64_t queued_ns = ws[0].req->wait_ns ? util_now_mono_ns() : 0;
    pthread_mutex_lock(&s->lock);
    for (uint32_t i = 0; i < n; i++) {
        if (s->tail)
            s->tail->next = &ws[i];
        else
            s->head = &ws[i];
        s->tail = &ws[i];
    }
    struct wreq *mine = &ws[n - 1];
    while (!mine->done) {
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
        int k = 1;
        for (; k < BATCH_MAX && batch->flat && last->next && last->next->flat; k++)
            last = last->next;
        s->last_batch = k;
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
    /* Its wait: until its fn began, the batches before its own and its
     * batch's earlier requests; what follows (its fn and the commit) is
     * its service. */
    for (uint32_t i = 0; i < n; i++) {
        if (ws[i].req->wait_ns && ws[i].started_ns > queued_ns)
            *ws[i].req->wait_ns += ws[i].started_ns - queued_ns;
        thread_writes += ws[i].rc >= 0;
    }
}

static int store_write(struct meta_store *s, const struct meta_req *rq, meta_txn_fn fn, void *arg,
                       bool flat)
{
    struct wreq w = {.fn = fn, .arg = arg, .req = rq ? rq : &no_req, .flat = flat};
    store_write_many(s, &w, 1);
    return w.rc;
}

uint64_t meta_store_thread_writes(void)
{
    return thread_writes;
}

uint64_t meta_store_commits(struct meta_store *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t n = s->commits;
    pthread_mutex_unlock(&s->lock);
    return n;
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

int meta_store_write_flat_n(struct meta_store *s, uint32_t n, const struct meta_req *const *rqs,
                            meta_txn_fn fn, void *const *args, int *rcs)
{
    if (n == 0 || n > BATCH_MAX)
        return -EINVAL;
    struct wreq *ws = calloc(n, sizeof(*ws));
    if (!ws)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        ws[i] =
            (struct wreq){.fn = fn, .arg = args[i], .req = rqs[i] ? rqs[i] : &no_req, .flat = true};
    store_write_many(s, ws, n);
    for (uint32_t i = 0; i < n; i++)
        rcs[i] = ws[i].rc;
    free(ws);
    return 0;
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
    uint64_t used = store_used(s, &info), map = info.me_mapsize;
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

int meta_reply_get(struct meta_store *s, uint64_t client, uint16_t tag, uint64_t seq, int *status,
                   void *payload, uint32_t cap, uint32_t *len)
{
    struct meta_reply_get_arg a = {client, seq, tag, status, payload, cap, len};
    return meta_store_read(s, NULL, meta_reply_get_txn, &a);
}

#define PRUNE_BATCH   1024
#define PRUNE_KEY_MAX 64

struct prune_arg {
    MDB_dbi dbi;
    const void *prefix;
    size_t plen;
    meta_prune_fn *gone;
    void *arg;
    uint8_t from[PRUNE_KEY_MAX]; /* where the next transaction starts */
    size_t from_len;
    int n;
    bool more;
};

static int prune_txn(struct meta_txn *t, void *arg)
{
    struct prune_arg *a = arg;
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, a->dbi, &cur));
    if (rc)
        return rc;
    uint8_t kb[PRUNE_KEY_MAX];
    memcpy(kb, a->from, a->from_len);
    MDB_val k = {a->from_len, kb}, v;
    int n = 0;
    a->more = false;
    for (int op = a->from_len ? MDB_SET_RANGE : MDB_FIRST;
         (rc = mdb_cursor_get(cur, &k, &v, op)) == 0; op = MDB_NEXT) {
        if (a->plen && (k.mv_size < a->plen || memcmp(k.mv_data, a->prefix, a->plen)))
            break; /* past the prefix */
        if (!a->gone(&k, &v, a->arg))
            continue;
        if (n == PRUNE_BATCH) {
            /* A key too long to keep: the next starts at the prefix again. */
            if (k.mv_size <= sizeof(a->from)) {
                memcpy(a->from, k.mv_data, k.mv_size);
                a->from_len = k.mv_size;
            }
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
    a->n += n;
    return 0;
}

int meta_store_prune(struct meta_store *s, MDB_dbi dbi, const void *prefix, size_t plen,
                     meta_prune_fn *gone, void *arg)
{
    struct prune_arg a = {.dbi = dbi, .prefix = prefix, .plen = plen, .gone = gone, .arg = arg};
    if (plen > sizeof(a.from))
        return -EINVAL;
    if (plen)
        memcpy(a.from, prefix, plen);
    a.from_len = plen;
    int rc;
    do
        rc = meta_store_write(s, NULL, prune_txn, &a);
    while (rc == 0 && a.more);
    return rc ? rc : a.n;
}
