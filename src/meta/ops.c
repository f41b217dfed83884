/*
 * Namespace operations (ops.h).
 *
 * Path-taking requests carry a start directory and a relative path. The
 * walk resolves every component but the last inside the operation's own
 * transaction, checking search permission on each directory and following
 * symlinks (at most 40, as Linux) whose targets are taken relative to the
 * file system root when absolute. Doing the walk here makes a create or a
 * stat of a deep path one round trip, and keeps the walk and the change in
 * one atomic transaction.
 *
 * Operations that change anything run through meta_store_write (group
 * commit); reads run in a read snapshot.
 */
#include "ops.h"
#include "ops_int.h"

#include "../common/log.h"
#include "../common/util.h"
#include "../proto/layout.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <stdio.h>
#include <sys/xattr.h>
#include <unistd.h>

#define MAX_SYMLINKS META_MAX_SYMLINKS
#define PATH_BUF     (2 * PROTO_MAX_STR + 2)

/* ---- helpers ---- */

int64_t meta_now_ns(void)
{
    return (int64_t)util_now_real_ns();
}

/* mask: 4 read, 2 write, 1 execute/search. */
static int may(const struct meta_inode *in, const struct proto_cred *c, unsigned mask)
{
    return proto_cred_may(c, in->mode, in->uid, in->gid, mask) ? 0 : -EACCES;
}

/* Removing or renaming victim out of dir: write+search, and the sticky bit. */
static int may_delete(const struct meta_inode *dir, const struct meta_inode *victim,
                      const struct proto_cred *c)
{
    int rc = may(dir, c, 3);
    if (rc)
        return rc;
    return proto_cred_may_delete(c, dir->mode, dir->uid, dir->gid, victim->uid) ? 0 : -EPERM;
}

/* Whether name's entry in directory dir (record din) belongs on this MDT. */
static bool name_here(struct meta_txn *t, uint64_t dir, const struct meta_inode *din,
                      const char *name)
{
    return proto_ds_name_mdt(din->dstripe, proto_ino_mdt(dir), name, strlen(name)) ==
           meta_store_mdt(t->store);
}

/* An inode record, or -EREMOTE when it lives on another MDT and this one
 * holds no shard of it. */
int meta_inode_get_here(struct meta_txn *t, uint64_t ino, struct meta_inode *out)
{
    int rc = meta_inode_get(t, ino, out);
    if (rc == -ENOENT && proto_ino_mdt(ino) != meta_store_mdt(t->store))
        return -EREMOTE;
    return rc;
}

/* Adding a name to the directory the walk ended in: write and search
 * permission, and a directory being removed (sealed) takes no new names. */
int meta_may_add(const struct walk *w, const struct proto_cred *c)
{
    if (w->din.flags & META_F_SEALED)
        return -ENOENT;
    return may(&w->din, c, 3);
}

/* An operation on a name that a cross-MDT rename holds (-EAGAIN) waits for
 * it (a few milliseconds), then gives up with EBUSY after two seconds. */
enum run_mode {
    RUN_READ,  /* a read-only snapshot */
    RUN_WRITE, /* a write transaction of its own (nested in the batch) */
    RUN_FLAT,  /* a write that fails only before writing: meta_store_write_flat */
};

static int run_waiting(const struct meta_req *rq, enum run_mode mode, meta_txn_fn fn, void *arg)
{
    struct meta_ctx *c = rq->ctx;
    for (int i = 0;; i++) {
        int rc = mode == RUN_READ   ? meta_store_read(c->store, rq, fn, arg)
                 : mode == RUN_FLAT ? meta_store_write_flat(c->store, rq, fn, arg)
                                    : meta_store_write(c->store, rq, fn, arg);
        if (rc != -EAGAIN)
            return rc;
        if (i == 800)
            return -EBUSY;
        usleep(2500);
    }
}

static uint8_t dtype(uint32_t mode)
{
    return (uint8_t)IFTODT(mode);
}

static int valid_name(const char *name)
{
    size_t len = strlen(name);
    if (len == 0)
        return -ENOENT;
    if (len > PROTO_MAX_NAME)
        return -ENAMETOOLONG;
    return 0;
}

/* ---- path walk ---- */

/* What a walk reads of inode ino: through the walk cache (*full false when
 * only a directory's summary came from it), -EREMOTE as
 * meta_inode_get_here. */
static int walk_inode(struct meta_txn *t, uint64_t ino, struct meta_inode *out, bool *full)
{
    int rc = meta_walk_dir(t, ino, out, full);
    if (rc == -ENOENT && proto_ino_mdt(ino) != meta_store_mdt(t->store))
        return -EREMOTE;
    return rc;
}

/* The walk ends in directory cur (w->din, full or a summary): the caller
 * gets its whole record unless it asked for no more than a summary. */
static int walk_end(struct meta_txn *t, struct walk *w, uint64_t cur, bool full, bool need_full)
{
    w->dir = cur;
    if (full || !need_full)
        return 0;
    return meta_inode_get_here(t, cur, &w->din);
}

int meta_walk_parent(struct meta_txn *t, const struct proto_cred *c, uint64_t start,
                     const char *path, struct walk *w)
{
    char buf[PATH_BUF];
    size_t plen = strlen(path);
    if (plen > PROTO_MAX_STR)
        return -ENAMETOOLONG;
    memcpy(buf, path, plen + 1);
    char *p = buf;
    uint64_t cur = (*p == '/') ? PROTO_ROOT_INO : start;
    bool full;
    int rc = walk_inode(t, cur, &w->din, &full);
    if (rc)
        return rc;
    /* An empty path names the start inode itself, of any type: this is how
     * a client that knows an inode (the FUSE mount) opens or looks it up. */
    if (!*p) {
        w->self = true;
        w->must_dir = false;
        w->dots = 0;
        w->name[0] = '\0';
        return walk_end(t, w, cur, full, true);
    }
    if (!S_ISDIR(w->din.mode))
        return -ENOTDIR;
    w->self = false;
    w->must_dir = false;
    w->dots = 0;
    for (;;) {
        while (*p == '/')
            p++;
        if (!*p) {
            w->self = true;
            w->name[0] = '\0';
            return walk_end(t, w, cur, full, true);
        }
        char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char *next = end ? end : p + len;
        while (*next == '/')
            next++;
        bool last = *next == '\0';
        if (len > PROTO_MAX_NAME)
            return -ENAMETOOLONG;
        char comp[PROTO_MAX_NAME + 1];
        memcpy(comp, p, len);
        comp[len] = '\0';
        if ((rc = may(&w->din, c, 1)))
            return rc;
        w->dots = !strcmp(comp, ".") ? 1 : !strcmp(comp, "..") ? 2 : 0;
        /* A name of a striped directory may live on another MDT: the
         * client goes on from there (EREMOTE). */
        if (!w->dots && !name_here(t, cur, &w->din, comp))
            return -EREMOTE;
        if (last && !w->dots) {
            memcpy(w->name, comp, len + 1);
            w->must_dir = end != NULL;
            /* A name a cross-MDT rename holds is read and changed only once
             * the rename is over (a few milliseconds): the caller waits. Every
             * operation on a name comes here, so none checks again. */
            struct meta_ctx *owner = meta_store_owner(t->store);
            if (owner && meta_name_held(owner, cur, comp, 0))
                return -EAGAIN;
            return walk_end(t, w, cur, full, !w->summary_ok);
        }
        uint64_t ino;
        uint8_t type;
        if (w->dots == 1)
            ino = cur;
        else if (w->dots == 2)
            ino = w->din.parent ? w->din.parent : cur;
        else if ((rc = meta_walk_name(t, cur, comp, &ino, &type)))
            return rc;
        /* Straight into w->din when it is a directory, as it must be
         * unless it is a symlink: no copy of a whole record per step. */
        if (ino != cur && (rc = walk_inode(t, ino, &w->din, &full)))
            return rc == -ENOENT ? -EUCLEAN : rc;
        if (S_ISLNK(w->din.mode)) {
            if (w->links_left-- <= 0)
                return -ELOOP;
            MDB_val tv;
            if ((rc = meta_symlink_get(t, ino, &tv)))
                return rc;
            size_t rest = strlen(next);
            if (tv.mv_size + 1 + rest + 1 > sizeof(buf))
                return -ENAMETOOLONG;
            /* Splice the target in front of what is left of the path. */
            memmove(buf + tv.mv_size + 1, next, rest + 1);
            memcpy(buf, tv.mv_data, tv.mv_size);
            buf[tv.mv_size] = '/';
            p = buf;
            /* Back in the directory that held the link. */
            if (*p == '/')
                cur = PROTO_ROOT_INO;
            if ((rc = walk_inode(t, cur, &w->din, &full)))
                return rc;
            continue;
        }
        if (!S_ISDIR(w->din.mode))
            return -ENOTDIR;
        cur = ino;
        p = next;
    }
}

/* Resolve the whole path to an inode; follow a final symlink if asked. */
static int walk_full(struct meta_txn *t, const struct proto_cred *c, uint64_t start,
                     const char *path, bool follow, struct meta_inode *out)
{
    struct walk w = {.links_left = MAX_SYMLINKS, .summary_ok = true};
    char buf[PATH_BUF];
    bool need_dir = false; /* a trailing '/' anywhere along the way */
    snprintf(buf, sizeof(buf), "%s", path);
    for (;;) {
        int rc = meta_walk_parent(t, c, start, buf, &w);
        if (rc)
            return rc;
        need_dir |= w.must_dir;
        if (w.self) {
            *out = w.din;
            return 0;
        }
        uint64_t ino;
        uint8_t type;
        if ((rc = meta_dentry_get(t, w.dir, w.name, &ino, &type)))
            return rc;
        rc = meta_inode_get_here(t, ino, out);
        if (rc == 0 && (out->flags & META_F_SHARD))
            rc = -EREMOTE; /* a shard here: the directory's own MDT has its attributes */
        if (rc) {
            if (rc != -EREMOTE)
                return rc == -ENOENT ? -EUCLEAN : rc;
            /* A remote entry: what it names. */
            meta_inode_clear(out);
            out->ino = ino;
            out->mode = (uint32_t)DTTOIF(type);
            return 1;
        }
        if (S_ISLNK(out->mode) && (follow || need_dir)) {
            if (w.links_left-- <= 0)
                return -ELOOP;
            MDB_val tv;
            if ((rc = meta_symlink_get(t, ino, &tv)))
                return rc;
            if (tv.mv_size >= sizeof(buf))
                return -ENAMETOOLONG;
            memcpy(buf, tv.mv_data, tv.mv_size);
            buf[tv.mv_size] = '\0';
            start = w.dir;
            continue;
        }
        if (need_dir && !S_ISDIR(out->mode))
            return -ENOTDIR;
        return 0;
    }
}

/* ---- allocation ---- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* An OST below this much free space takes no new files. */
#define OST_FULL_BYTES (64ull << 20)

/*
 * Choose count OSTs: round-robin from a rotating start while free space is
 * balanced; once the emptiest and fullest usable OSTs differ by more than
 * 17% of the larger (Lustre's qos_threshold_rr), a random draw weighted by
 * free space. Never an offline or full OST.
 */
static int alloc_layout(struct meta_ctx *c, int32_t count, uint32_t size, int32_t offset,
                        struct layout *out)
{
    uint32_t cand[META_MAX_OSTS];
    uint64_t avail[META_MAX_OSTS];
    uint32_t n = 0;
    pthread_mutex_lock(&c->alloc_lock);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < c->nost; i++) {
        if (!c->ost[i].online || c->ost[i].avail < OST_FULL_BYTES)
            continue;
        cand[n] = c->ost[i].index;
        avail[n] = c->ost[i].avail;
        lo = MIN(lo, avail[n]);
        hi = MAX(hi, avail[n]);
        n++;
    }
    if (n == 0) {
        bool known = c->osts_known;
        pthread_mutex_unlock(&c->alloc_lock);
        /* Just started, before the first cluster map: wait for it
         * (run_waiting tries again, up to two seconds, then EBUSY) rather
         * than tell the client the disks are full. */
        if (!known)
            return -EAGAIN;
        log_warn("no OST can take a new file (none online with free space)");
        return -ENOSPC;
    }
    uint32_t want = count < 0 ? n : (uint32_t)count;
    if (want > n)
        want = n;
    if (want > LAYOUT_MAX_STRIPES)
        want = LAYOUT_MAX_STRIPES;
    uint32_t groups[LAYOUT_MAX_STRIPES];
    bool qos = hi - lo > hi / 100 * 17 && offset < 0;
    if (!qos) {
        uint32_t start = c->rr_next % n;
        if (offset >= 0) {
            for (uint32_t i = 0; i < n; i++)
                if (cand[i] == (uint32_t)offset)
                    start = i;
        } else {
            c->rr_next += want;
        }
        for (uint32_t i = 0; i < want; i++)
            groups[i] = cand[(start + i) % n];
    } else {
        for (uint32_t i = 0; i < want; i++) {
            uint64_t total = 0;
            for (uint32_t j = i; j < n; j++)
                total += avail[j] >> 20;
            uint64_t r = total ? rng_next(&c->rng) % total : 0, acc = 0;
            uint32_t pick = i;
            for (uint32_t j = i; j < n; j++) {
                acc += avail[j] >> 20;
                if (r < acc) {
                    pick = j;
                    break;
                }
            }
            uint32_t tc = cand[i];
            uint64_t ta = avail[i];
            cand[i] = cand[pick], avail[i] = avail[pick];
            cand[pick] = tc, avail[pick] = ta;
            groups[i] = cand[i];
        }
    }
    pthread_mutex_unlock(&c->alloc_lock);
    layout_make_simple(out, size, (uint16_t)want, groups);
    return 0;
}

static int check_stripe_args(int32_t count, uint32_t size, int32_t offset)
{
    if (count < -1 || count > LAYOUT_MAX_STRIPES || offset < -1)
        return -EINVAL;
    if (size && (size < LAYOUT_MIN_STRIPE_SIZE || size > LAYOUT_MAX_STRIPE_SIZE ||
                 size % LAYOUT_MIN_STRIPE_SIZE))
        return -EINVAL;
    return 0;
}

/* The layout of a new file in dir: request, else the directory's default,
 * else the file system's. */
static int new_file_layout(struct meta_ctx *c, const struct meta_inode *dir, int32_t count,
                           uint32_t size, int32_t offset, struct layout *out)
{
    int rc = check_stripe_args(count, size, offset);
    if (rc)
        return rc;
    if (count == 0)
        count = dir->dcount ? dir->dcount : c->default_count;
    if (size == 0)
        size = dir->dsize ? dir->dsize : c->default_size;
    if (offset < 0)
        offset = dir->doffset;
    return alloc_layout(c, count, size, offset, out);
}

/* ---- context ---- */

struct root_arg {
    struct meta_ctx *c;
    uint32_t root_mdts;
};

static int root_txn(struct meta_txn *t, void *arg)
{
    struct root_arg *a = arg;
    struct meta_inode root;
    int rc = meta_inode_get(t, PROTO_ROOT_INO, &root);
    if (rc != -ENOENT)
        return rc;
    memset(&root, 0, sizeof(root));
    root.ino = PROTO_ROOT_INO;
    root.mode = S_IFDIR | 0755;
    root.nlink = 2;
    root.atime_ns = root.mtime_ns = root.ctime_ns = meta_now_ns();
    root.parent = PROTO_ROOT_INO;
    root.dcount = a->c->default_count;
    root.dsize = a->c->default_size;
    root.doffset = -1;
    /* Every MDT of the root's stripe makes its shard the same way on its
     * first start, so a fresh file system needs no cross-MDT step. */
    if (a->root_mdts > 1) {
        struct proto_dstripe ds = {(uint16_t)a->root_mdts, 0, (uint16_t)a->root_mdts,
                                   PROTO_DS_HASH_FNV};
        root.dstripe = proto_ds_pack(ds);
    }
    if (meta_store_mdt(t->store) != 0)
        root.flags |= META_F_SHARD;
    return meta_inode_put(t, &root);
}

int meta_ctx_init(struct meta_ctx *ctx, struct meta_store *store, int32_t default_count,
                  uint32_t default_size, uint32_t root_mdts)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->store = store;
    ctx->mdt = meta_store_mdt(store);
    ctx->nmdt = root_mdts ? root_mdts : 1;
    ctx->default_count = default_count;
    ctx->default_size = default_size;
    pthread_mutex_init(&ctx->alloc_lock, NULL);
    pthread_mutex_init(&ctx->xlock, NULL);
    meta_store_set_owner(store, ctx);
    ctx->rng = util_now_real_ns();
    ctx->rr_next = (uint32_t)rng_next(&ctx->rng);
    int rc = meta_holds_load(ctx);
    if (rc || (ctx->mdt == 0 && (rc = meta_rlock_load(ctx))))
        return rc;
    if (ctx->mdt >= (root_mdts ? root_mdts : 1))
        return 0;
    struct root_arg a = {ctx, root_mdts};
    return meta_store_write(store, NULL, root_txn, &a);
}

int meta_dir_placement(struct meta_ctx *c, const struct meta_inode *parent, int32_t count,
                       int32_t start, uint64_t *dstripe, uint32_t *owner)
{
    uint32_t nmdt = __atomic_load_n(&c->nmdt, __ATOMIC_RELAXED);
    bool inherited = count == 0;
    if (inherited) {
        /* The parent's default for new subdirectories, if it has one. */
        struct proto_dstripe d = proto_ds_unpack(parent->ddefault);
        count = d.count == 0xffff ? -1 : d.count;
        if (start < 0 && d.start != 0xffff && parent->ddefault)
            start = d.start;
    }
    if (count < 0)
        count = (int32_t)nmdt;
    if (count == 0)
        count = 1;
    if ((uint32_t)count > nmdt && !inherited)
        return -EINVAL;
    if ((uint32_t)count > nmdt)
        count = (int32_t)nmdt; /* a default asks for more MDTs than exist now */
    if (start >= (int32_t)nmdt) {
        if (!inherited)
            return -EINVAL;
        start = -1;
    }
    *owner = start < 0 ? c->mdt : (uint32_t)start;
    *dstripe = 0;
    if (count > 1) {
        struct proto_dstripe d = {(uint16_t)count, (uint16_t)*owner, (uint16_t)nmdt,
                                  PROTO_DS_HASH_FNV};
        *dstripe = proto_ds_pack(d);
    }
    return 0;
}

void meta_ctx_destroy(struct meta_ctx *ctx)
{
    pthread_mutex_destroy(&ctx->alloc_lock);
    free(ctx->xbusy);
    ctx->xbusy = NULL;
}

void meta_ctx_set_osts(struct meta_ctx *ctx, const struct meta_ost *osts, uint32_t n)
{
    pthread_mutex_lock(&ctx->alloc_lock);
    ctx->nost = MIN(n, META_MAX_OSTS);
    memcpy(ctx->ost, osts, sizeof(*osts) * ctx->nost);
    ctx->osts_known = true;
    pthread_mutex_unlock(&ctx->alloc_lock);
}

/* ---- lookup, getattr, setattr ---- */

struct lookup_arg {
    struct meta_ctx *c;
    const struct proto_lookup_req *q;
    struct proto_lookup_rep *r;
};

static int lookup_txn(struct meta_txn *t, void *arg)
{
    struct lookup_arg *a = arg;
    char path[PROTO_MAX_STR + 1];
    int rc = proto_str_copy(&a->q->path, path, sizeof(path));
    if (rc)
        return rc;
    struct meta_inode in;
    if ((rc = walk_full(t, &a->q->cred, a->q->parent, path, a->q->follow, &in)) < 0)
        return rc;
    meta_inode_attr(&in, &a->r->attr);
    a->r->remote = rc == 1;
    if (rc != 1 && S_ISREG(in.mode))
        layout_copy(&a->r->layout, &in.layout);
    return 0;
}

int meta_op_lookup(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_lookup_req *q = qv;
    struct proto_lookup_rep *r = rv;
    struct lookup_arg a = {c, q, r};
    return run_waiting(rq, RUN_READ, lookup_txn, &a);
}

struct ino_arg {
    struct meta_ctx *c;
    const void *q;
    void *r;
    uint8_t *buf;
    size_t buflen;
};

static int getattr_txn(struct meta_txn *t, void *arg)
{
    struct ino_arg *a = arg;
    const struct proto_getattr_req *q = a->q;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    meta_inode_attr(&in, &((struct proto_getattr_rep *)a->r)->attr);
    return 0;
}

int meta_op_getattr(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_getattr_req *q = qv;
    struct proto_getattr_rep *r = rv;
    struct ino_arg a = {c, q, r, NULL, 0};
    return meta_store_read(c->store, rq, getattr_txn, &a);
}

static int lease_attrs_txn(struct meta_txn *t, void *arg)
{
    struct proto_leases *ls = arg;
    for (uint32_t i = 0; i < ls->n; i++) {
        struct proto_lease *l = &ls->l[i];
        struct meta_inode in;
        if (l->ms && !l->has_attr && meta_inode_get(t, l->ino, &in) == 0) {
            meta_inode_attr(&in, &l->attr);
            l->has_attr = 1;
        }
    }
    return 0;
}

void meta_op_lease_attrs(struct meta_ctx *c, const struct meta_touched *touched,
                         struct proto_leases *ls)
{
    bool missing = false;
    for (uint32_t i = 0; i < ls->n; i++) {
        struct proto_lease *l = &ls->l[i];
        for (uint32_t k = 0; l->ms && k < touched->n && !l->has_attr; k++)
            if (touched->ino[k] == l->ino && touched->has_attr[k]) {
                l->attr = touched->attr[k];
                l->has_attr = 1;
            }
        missing |= l->ms && !l->has_attr;
    }
    /* A directory whose names changed but whose record was not written. */
    if (missing)
        meta_store_read(c->store, NULL, lease_attrs_txn, ls);
}

/* The mode bits a truncate by c drops: CAP_FSETID is root's here. */
static uint32_t truncate_drops(const struct meta_inode *in, const struct proto_cred *c)
{
    return c->uid == 0 ? 0 : proto_mode_kill_privs(in->mode);
}

static int setattr_txn(struct meta_txn *t, void *arg)
{
    struct ino_arg *a = arg;
    const struct proto_setattr_req *q = a->q;
    struct proto_setattr_rep *r = a->r;
    const struct proto_cred *c = &q->cred;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    bool owner = c->uid == 0 || c->uid == in.uid;
    int64_t now = meta_now_ns();
    if (q->valid & SETATTR_MODE) {
        /* A writer's kernel clears setuid/setgid when it writes or
         * truncates: a change that only drops those bits is allowed to
         * anyone who may write the file. */
        uint32_t privs = S_ISUID | S_ISGID, cur = in.mode & 07777;
        bool drops_privs = (q->mode & 07777) == (cur & ~privs) && (cur & privs);
        if (!owner && !(drops_privs && may(&in, c, 2) == 0))
            return -EPERM;
        uint32_t mode = q->mode & 07777;
        /* A non-owner group may not keep setgid (as Linux). */
        if (c->uid != 0 && owner && !proto_cred_in_group(c, in.gid))
            mode &= ~(uint32_t)S_ISGID;
        in.mode = (in.mode & S_IFMT) | mode;
    }
    if (q->valid & (SETATTR_UID | SETATTR_GID)) {
        bool uid_change = (q->valid & SETATTR_UID) && q->uid != in.uid;
        bool gid_change = (q->valid & SETATTR_GID) && q->gid != in.gid;
        if (c->uid != 0 &&
            (uid_change || (gid_change && (c->uid != in.uid || !proto_cred_in_group(c, q->gid)))))
            return -EPERM;
        if (q->valid & SETATTR_UID)
            in.uid = q->uid;
        if (q->valid & SETATTR_GID)
            in.gid = q->gid;
        if ((uid_change || gid_change) && !S_ISDIR(in.mode))
            in.mode &= ~(uint32_t)(S_ISUID | S_ISGID);
    }
    if (q->valid & SETATTR_SIZE) {
        if (S_ISDIR(in.mode))
            return -EISDIR;
        if (!S_ISREG(in.mode))
            return -EINVAL;
        if (!(q->valid & SETATTR_WRITER) && (rc = may(&in, c, 2)))
            return rc;
        r->old_size = in.size;
        layout_copy(&r->layout, &in.layout);
        if (q->size != in.size)
            in.mtime_ns = now;
        in.size = q->size;
        if (q->size)
            in.flags |= META_F_OBJECTS;
        /* Also when the kernel leaves it to us (FUSE_HANDLE_KILLPRIV_V2). */
        in.mode &= ~truncate_drops(&in, c);
    }
    if (q->valid & (SETATTR_ATIME | SETATTR_MTIME | SETATTR_ATIME_NOW | SETATTR_MTIME_NOW)) {
        /* Explicit times need ownership, "now" only write access; a kernel
         * that checked already sends touch as explicit times. */
        bool explicit_time =
            (q->valid & (SETATTR_ATIME | SETATTR_MTIME)) && !(q->valid & SETATTR_TIMES_CHECKED);
        if (!owner && (explicit_time || may(&in, c, 2)))
            return explicit_time ? -EPERM : -EACCES;
        if (q->valid & SETATTR_ATIME_NOW)
            in.atime_ns = now;
        else if (q->valid & SETATTR_ATIME)
            in.atime_ns = q->atime_ns;
        if (q->valid & SETATTR_MTIME_NOW)
            in.mtime_ns = now;
        else if (q->valid & SETATTR_MTIME)
            in.mtime_ns = q->mtime_ns;
    }
    in.ctime_ns = now;
    if ((rc = meta_inode_put(t, &in)) || (rc = meta_xsync_note(a->c, t, &in)))
        return rc;
    meta_inode_attr(&in, &r->attr);
    return 0;
}

/* A striped directory changed: its shards get the news before the reply. */
static int sync_after(struct meta_ctx *c, int rc)
{
    if (rc == 0 && __atomic_load_n(&c->xpending, __ATOMIC_RELAXED))
        meta_xmdt_recover(c);
    return rc;
}

int meta_op_setattr(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_setattr_req *q = qv;
    struct proto_setattr_rep *r = rv;
    struct ino_arg a = {c, q, r, NULL, 0};
    return sync_after(c, meta_store_write(c->store, rq, setattr_txn, &a));
}

/* ---- create and open ---- */

void meta_init_inode(struct meta_inode *in, uint64_t ino, uint32_t mode, const struct proto_cred *c,
                     const struct meta_inode *dir)
{
    meta_inode_clear(in);
    in->ino = ino;
    in->mode = mode;
    in->uid = c->uid;
    /* BSD group semantics under a setgid directory, as Linux. */
    in->gid = (dir->mode & S_ISGID) ? dir->gid : c->gid;
    if ((dir->mode & S_ISGID) && S_ISDIR(mode))
        in->mode |= S_ISGID;
    in->nlink = 1;
    in->atime_ns = in->mtime_ns = in->ctime_ns = meta_now_ns();
}

int meta_touch_dir(struct meta_txn *t, struct meta_inode *dir, int nlink_delta)
{
    dir->nlink = (uint32_t)((int64_t)dir->nlink + nlink_delta);
    dir->mtime_ns = dir->ctime_ns = meta_now_ns();
    return meta_dir_touched(t, dir);
}

struct open_arg {
    struct meta_ctx *c;
    const struct proto_open_req *q;
    struct proto_open_rep *r;
};

static int open_existing(struct meta_txn *t, struct open_arg *a, struct meta_inode *in)
{
    const struct proto_open_req *q = a->q;
    uint32_t acc = q->flags & O_ACCMODE;
    int rc;
    if (S_ISLNK(in->mode))
        return -ELOOP; /* only reached with O_NOFOLLOW */
    if (S_ISDIR(in->mode) && (acc != O_RDONLY || (q->flags & O_TRUNC)))
        return -EISDIR;
    unsigned mask = (acc == O_RDONLY ? 4 : acc == O_WRONLY ? 2 : 6);
    if ((q->flags & O_TRUNC) && acc == O_RDONLY)
        mask |= 2;
    if ((rc = may(in, &q->cred, mask)))
        return rc;
    /* A FIFO, device or socket has no data here: a mount's kernel opens
     * one itself, and a libstria client has nothing to open (as a device
     * without a driver, or a socket, answers open(2)). */
    if (!S_ISREG(in->mode) && !S_ISDIR(in->mode))
        return -ENXIO;
    if ((q->flags & O_TRUNC) && S_ISREG(in->mode)) {
        a->r->old_size = in->size;
        bool changed = false;
        if (in->size) {
            in->size = 0;
            in->mtime_ns = in->ctime_ns = meta_now_ns();
            changed = true;
        }
        /* The mount's kernel leaves O_TRUNC to us whole. */
        uint32_t drop = truncate_drops(in, &q->cred);
        if (drop) {
            in->mode &= ~drop;
            in->ctime_ns = meta_now_ns();
            changed = true;
        }
        if (changed && (rc = meta_inode_put(t, in)))
            return rc;
    }
    meta_inode_attr(in, &a->r->attr);
    if (S_ISREG(in->mode))
        layout_copy(&a->r->layout, &in->layout);
    return 0;
}

/* The name w leads to, for an O_CREAT open: made as a new regular file
 * (0, the reply filled in) or found (1, its inode in *ino). Making it adds
 * the name only if it is free, so a create looks the name up once. */
static int create_or_get(struct meta_txn *t, struct open_arg *a, struct walk *w, uint64_t *ino)
{
    const struct proto_open_req *q = a->q;
    struct meta_inode in;
    int rc = 0;
    if (w->must_dir)
        rc = -EISDIR;
    else if ((rc = valid_name(w->name)) || (rc = meta_may_add(w, &q->cred)))
        ;
    else if ((rc = meta_alloc_ino(t, ino)) == 0) {
        meta_init_inode(&in, *ino, S_IFREG | (q->mode & 07777), &q->cred, &w->din);
        rc = new_file_layout(a->c, &w->din, q->stripe_count, q->stripe_size, q->stripe_offset,
                             &in.layout);
    }
    if (rc) {
        /* It cannot be made here, but it may be there. */
        int grc = meta_dentry_get(t, w->dir, w->name, ino, NULL);
        return grc == -ENOENT ? rc : grc ? grc : 1;
    }
    if ((rc = meta_dentry_add_or_get(t, w->dir, w->name, ino, DT_REG)))
        return rc; /* 1: someone's already; the number just goes unused */
    if ((rc = meta_inode_put(t, &in)) || (rc = meta_touch_dir(t, &w->din, 0)))
        return rc;
    meta_inode_attr(&in, &a->r->attr);
    layout_copy(&a->r->layout, &in.layout);
    a->r->created = 1;
    return 0;
}

static int open_txn(struct meta_txn *t, void *arg)
{
    struct open_arg *a = arg;
    const struct proto_open_req *q = a->q;
    char path[PATH_BUF];
    int rc = proto_str_copy(&q->path, path, PROTO_MAX_STR + 1);
    if (rc)
        return rc;
    uint64_t start = q->parent, ino;
    int links = MAX_SYMLINKS;
    /* Each turn opens path from start; a final symlink sends us round again
     * with its target, so O_CREAT through a dangling link creates the
     * target, as Linux does. */
    for (;;) {
        /* Only a create changes the directory the walk ends in. */
        struct walk w = {.links_left = links, .summary_ok = !(q->flags & O_CREAT)};
        if ((rc = meta_walk_parent(t, &q->cred, start, path, &w)))
            return rc;
        links = w.links_left;
        if (w.self) {
            if ((q->flags & O_CREAT) && (q->flags & O_EXCL))
                return -EEXIST;
            return open_existing(t, a, &w.din);
        }
        if (q->flags & O_CREAT)
            rc = create_or_get(t, a, &w, &ino);
        else if ((rc = meta_dentry_get(t, w.dir, w.name, &ino, NULL)) == 0)
            rc = 1;
        if (rc <= 0)
            return rc; /* made, or an error */
        if ((q->flags & O_CREAT) && (q->flags & O_EXCL))
            return -EEXIST;
        struct meta_inode in;
        if ((rc = meta_inode_get_here(t, ino, &in)))
            return rc;
        if (S_ISLNK(in.mode) && !(q->flags & O_NOFOLLOW)) {
            MDB_val tv;
            if (links-- <= 0)
                return -ELOOP;
            if ((rc = meta_symlink_get(t, ino, &tv)))
                return rc;
            if (tv.mv_size > PROTO_MAX_STR)
                return -ENAMETOOLONG;
            memcpy(path, tv.mv_data, tv.mv_size);
            path[tv.mv_size] = '\0';
            start = w.dir;
            continue;
        }
        if (w.must_dir && !S_ISDIR(in.mode))
            return -ENOTDIR;
        return open_existing(t, a, &in);
    }
}

int meta_op_open(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_open_req *q = qv;
    struct proto_open_rep *r = rv;
    struct open_arg a = {c, q, r};
    /* Opens that cannot change anything need no write transaction. */
    if (!(q->flags & (O_CREAT | O_TRUNC)))
        return run_waiting(rq, RUN_READ, open_txn, &a);
    return run_waiting(rq, RUN_FLAT, open_txn, &a);
}

struct mk_arg {
    struct meta_ctx *c;
    const struct proto_cred *cred;
    uint64_t parent;
    const struct proto_str *path;
    uint32_t mode;
    const struct proto_str *target; /* symlinks */
    struct proto_attr *attr;
    int32_t dir_count, dir_start; /* MKDIR's stripe request */
    struct meta_xmk *x;           /* the plan, when the directory spans MDTs */
    uint64_t rdev;                /* devices */
};

/* The rest of a new inode that is neither a directory nor a symlink: a
 * regular file's layout (as an O_CREAT open gives it), a device's number. */
static int mk_other(struct mk_arg *a, const struct meta_inode *dir, struct meta_inode *in)
{
    if (S_ISREG(in->mode))
        return new_file_layout(a->c, dir, 0, 0, -1, &in->layout);
    if (S_ISCHR(in->mode) || S_ISBLK(in->mode))
        in->rdev = a->rdev;
    return 0;
}

static int mk_txn(struct meta_txn *t, void *arg)
{
    struct mk_arg *a = arg;
    char path[PROTO_MAX_STR + 1];
    int rc = proto_str_copy(a->path, path, sizeof(path));
    if (rc)
        return rc;
    struct walk w = {.links_left = MAX_SYMLINKS};
    if ((rc = meta_walk_parent(t, a->cred, a->parent, path, &w)))
        return rc;
    if (w.self)
        return -EEXIST;
    if ((rc = valid_name(w.name)))
        return rc;
    uint64_t ino;
    rc = meta_dentry_get(t, w.dir, w.name, &ino, NULL);
    if (rc == 0)
        return -EEXIST;
    if (rc != -ENOENT)
        return rc;
    if ((rc = meta_may_add(&w, a->cred)))
        return rc;
    /* CAP_MKNOD, checked after the parent's permission as Linux does. */
    if ((S_ISCHR(a->mode) || S_ISBLK(a->mode)) && a->cred->uid != 0)
        return -EPERM;
    bool dir = S_ISDIR(a->mode);
    if (!dir && w.must_dir)
        return -ENOENT;
    struct meta_inode in;
    if (dir) {
        uint64_t ds;
        uint32_t owner;
        if ((rc = meta_dir_placement(a->c, &w.din, a->dir_count, a->dir_start, &ds, &owner)))
            return rc;
        if (ds || owner != meta_store_mdt(t->store)) {
            /* Shards or the inode elsewhere: xmdt.c does the rest. */
            struct meta_xmk *x = a->x;
            x->dir = w.dir;
            memcpy(x->name, w.name, sizeof(x->name));
            x->owner = owner;
            meta_init_inode(&x->rec, 0, a->mode, a->cred, &w.din);
            x->rec.nlink = 2;
            x->rec.parent = w.dir;
            x->rec.dcount = w.din.dcount;
            x->rec.dsize = w.din.dsize;
            x->rec.doffset = w.din.doffset;
            x->rec.dstripe = ds;
            x->rec.ddefault = w.din.ddefault;
            return META_CROSS;
        }
    }
    if ((rc = meta_alloc_ino(t, &ino)))
        return rc;
    meta_init_inode(&in, ino, a->mode, a->cred, &w.din);
    if (dir) {
        in.nlink = 2;
        in.parent = w.dir;
        in.dcount = w.din.dcount;
        in.dsize = w.din.dsize;
        in.doffset = w.din.doffset;
        in.ddefault = w.din.ddefault;
    } else if (S_ISLNK(in.mode)) {
        char target[PROTO_MAX_STR + 1];
        if ((rc = proto_str_copy(a->target, target, sizeof(target))))
            return rc;
        if (!target[0])
            return -ENOENT;
        in.size = strlen(target);
        if ((rc = meta_symlink_put(t, ino, target, in.size)))
            return rc;
    } else if ((rc = mk_other(a, &w.din, &in))) {
        return rc;
    }
    if ((rc = meta_inode_put(t, &in)) ||
        (rc = meta_dentry_add(t, w.dir, w.name, ino, dtype(in.mode))) ||
        (rc = meta_touch_dir(t, &w.din, dir ? 1 : 0)))
        return rc;
    meta_inode_attr(&in, a->attr);
    return 0;
}

int meta_op_mkdir(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_mkdir_req *q = qv;
    struct proto_mkdir_rep *r = rv;
    struct meta_xmk x;
    struct mk_arg a = {c,    &q->cred, q->parent,    &q->path,     S_IFDIR | (q->mode & 07777),
                       NULL, &r->attr, q->dir_count, q->dir_start, &x,
                       0};
    int rc = run_waiting(rq, RUN_FLAT, mk_txn, &a);
    if (rc == META_CROSS)
        return meta_xmkdir(rq, &q->cred, &x, &r->attr);
    return rc;
}

int meta_op_symlink(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_symlink_req *q = qv;
    struct proto_symlink_rep *r = rv;
    struct mk_arg a = {c, &q->cred, q->parent, &q->path, S_IFLNK | 0777, &q->target, &r->attr,
                       0, -1,       NULL,      0};
    return run_waiting(rq, RUN_FLAT, mk_txn, &a);
}

int meta_op_mknod(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_mknod_req *q = qv;
    struct proto_mknod_rep *r = rv;
    uint32_t type = q->mode & S_IFMT;
    switch (type) {
    case 0:
        type = S_IFREG;
        break;
    case S_IFREG:
    case S_IFIFO:
    case S_IFCHR:
    case S_IFBLK:
    case S_IFSOCK:
        break;
    case S_IFDIR:
        return -EPERM; /* as Linux's mknod(2) */
    default:
        return -EINVAL;
    }
    struct mk_arg a = {c, &q->cred, q->parent, &q->path, type | (q->mode & 07777), NULL, &r->attr,
                       0, -1,       NULL,      q->rdev};
    return run_waiting(rq, RUN_FLAT, mk_txn, &a);
}

/* ---- removal ---- */

/* Drop one link of in; when the last goes, delete the inode, say so (gone)
 * with its layout, and whether objects may exist (destroy). */
int meta_drop_link(struct meta_txn *t, struct meta_inode *in, uint8_t *destroy,
                   struct layout *layout, uint8_t *gone, uint64_t *size)
{
    int rc;
    /* A directory goes with all its links ("." and the parent's entry). */
    uint32_t drop = S_ISDIR(in->mode) ? in->nlink : 1;
    if (in->nlink > drop) {
        in->nlink -= drop;
        in->ctime_ns = meta_now_ns();
        return meta_inode_put(t, in);
    }
    if ((rc = meta_inode_del(t, in->ino)) || (rc = meta_xattr_del_all(t, in->ino)))
        return rc;
    if (S_ISLNK(in->mode) && (rc = meta_symlink_del(t, in->ino)))
        return rc;
    *gone = 1;
    if (S_ISREG(in->mode)) {
        layout_copy(layout, &in->layout);
        *size = in->size;
        *destroy = (in->flags & META_F_OBJECTS) != 0;
        if (*destroy && (rc = meta_pending_put(t, in->ino)))
            return rc;
    }
    return 0;
}

struct rm_arg {
    struct meta_ctx *c;
    const struct proto_cred *cred;
    uint64_t parent;
    const struct proto_str *path;
    bool dir;
    struct proto_unlink_rep *r;
    struct meta_xrm *x; /* rmdir: the plan, when the directory spans MDTs */
    /* unlink of a name whose inode is another MDT's */
    uint64_t xdir, xino;
    char xname[PROTO_MAX_NAME + 1];
};

static int rm_txn(struct meta_txn *t, void *arg)
{
    struct rm_arg *a = arg;
    char path[PROTO_MAX_STR + 1];
    int rc = proto_str_copy(a->path, path, sizeof(path));
    if (rc)
        return rc;
    struct walk w = {.links_left = MAX_SYMLINKS};
    if ((rc = meta_walk_parent(t, a->cred, a->parent, path, &w)))
        return rc;
    if (w.self) {
        /* As Linux: rmdir of "x/." is EINVAL, of "x/.." ENOTEMPTY (the
         * parent holds x), of the root EBUSY. */
        if (!a->dir)
            return -EISDIR;
        return w.dots == 1 ? -EINVAL : w.dots == 2 ? -ENOTEMPTY : -EBUSY;
    }
    uint64_t ino;
    uint8_t type;
    if ((rc = meta_dentry_get(t, w.dir, w.name, &ino, &type)))
        return rc;
    if (!a->dir && type == DT_DIR)
        return -EISDIR;
    if (a->dir && type != DT_DIR)
        return -ENOTDIR;
    struct meta_inode in;
    rc = meta_inode_get_here(t, ino, &in);
    if (!a->dir && rc == -EREMOTE) {
        /* A file's name here, its inode on another MDT (after a rename
         * between MDTs): xname.c drops the link there. */
        if (w.must_dir)
            return -ENOTDIR;
        a->xdir = w.dir;
        memcpy(a->xname, w.name, sizeof(a->xname));
        a->xino = ino;
        return META_CROSS;
    }
    if (a->dir && type == DT_DIR && (rc == -EREMOTE || (rc == 0 && in.dstripe))) {
        /* Its records live on several MDTs: xmdt.c removes it. It seals
         * them first, which holds off every create in it, so a caller who
         * may not remove it is refused here, before any seal (its commit
         * checks again). Where the sticky bit makes the answer the
         * victim's owner's and that inode is elsewhere, xmdt.c asks. */
        struct meta_xrm *x = a->x;
        int prc = rc == 0 ? may_delete(&w.din, &in, a->cred) : may(&w.din, a->cred, 3);
        if (prc)
            return prc;
        x->dir = w.dir;
        memcpy(x->name, w.name, sizeof(x->name));
        x->ino = ino;
        x->dstripe = rc == 0 ? in.dstripe : 0;
        x->ask_owner = rc == -EREMOTE && !proto_cred_may_delete(a->cred, w.din.mode, w.din.uid,
                                                                w.din.gid, UINT32_MAX);
        return META_CROSS;
    }
    if (rc)
        return rc;
    if ((rc = may_delete(&w.din, &in, a->cred)))
        return rc;
    if (a->dir) {
        if (!S_ISDIR(in.mode))
            return -ENOTDIR;
        if ((rc = meta_dir_is_empty(t, ino)) <= 0)
            return rc ? rc : -ENOTEMPTY;
    } else {
        if (S_ISDIR(in.mode))
            return -EISDIR;
        if (w.must_dir)
            return -ENOTDIR;
    }
    if ((rc = meta_dentry_del(t, w.dir, w.name)))
        return rc;
    if ((rc = meta_drop_link(t, &in, &a->r->destroy, &a->r->layout, &a->r->gone, &a->r->size)))
        return rc;
    a->r->ino = ino;
    return meta_touch_dir(t, &w.din, a->dir ? -1 : 0);
}

int meta_op_unlink(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_unlink_req *q = qv;
    struct proto_unlink_rep *r = rv;
    struct rm_arg a = {c, &q->cred, q->parent, &q->path, false, r, NULL, 0, 0, ""};
    int rc = run_waiting(rq, RUN_FLAT, rm_txn, &a);
    if (rc == META_CROSS)
        return meta_xunlink(rq, &q->cred, a.xdir, a.xname, a.xino, r);
    return rc;
}

int meta_op_rmdir(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_rmdir_req *q = qv;
    struct proto_rmdir_rep *r = rv;
    (void)r;
    struct proto_unlink_rep ur;
    memset(&ur, 0, sizeof(ur));
    struct meta_xrm x;
    struct rm_arg a = {c, &q->cred, q->parent, &q->path, true, &ur, &x, 0, 0, ""};
    int rc = run_waiting(rq, RUN_FLAT, rm_txn, &a);
    if (rc == META_CROSS)
        return meta_xrmdir(rq, &q->cred, &x);
    return rc;
}

/* ---- rename ---- */

/* Is anc an ancestor of (or equal to) dir? Walks ".." links to the root. */
static int is_ancestor(struct meta_txn *t, uint64_t anc, uint64_t dir)
{
    for (int depth = 0; depth < 4096; depth++) {
        if (dir == anc)
            return 1;
        if (dir == PROTO_ROOT_INO)
            return 0;
        struct meta_inode in;
        int rc = meta_inode_get(t, dir, &in);
        if (rc)
            return rc;
        dir = in.parent;
    }
    return -ELOOP;
}

struct rename_arg {
    struct meta_ctx *c;
    const struct proto_rename_req *q;
    struct proto_rename_rep *r;
    struct meta_xmv *x; /* the plan, when the rename spans MDTs */
};

/* A rename that spans MDTs, from a name here (xname.c). */
static int rename_cross(struct rename_arg *a, const struct walk *s, uint64_t sino, uint8_t stype,
                        const struct walk *d, uint32_t dmdt)
{
    if (a->q->flags & RENAME_EXCHANGE)
        return -EXDEV; /* an exchange between MDTs: not yet */
    if ((s->must_dir || d->must_dir) && stype != DT_DIR)
        return -ENOTDIR;
    /* Refused here, before any step on another MDT (which may seal a
     * directory the rename would replace, holding off creates in it):
     * write and search on the source's parent. Its commit checks it all
     * again, with the sticky bit. */
    int rc = may(&s->din, &a->q->cred, 3);
    if (rc)
        return rc;
    struct meta_xmv *x = a->x;
    x->lock = stype == DT_DIR && s->dir != d->dir;
    x->sdir = s->dir;
    x->sino = sino;
    x->stype = stype;
    memcpy(x->sname, s->name, sizeof(x->sname));
    x->ddir = d->dir;
    memcpy(x->dname, d->name, sizeof(x->dname));
    x->dmdt = dmdt;
    x->flags = a->q->flags;
    return META_CROSS;
}

static int rename_txn(struct meta_txn *t, void *arg)
{
    struct rename_arg *a = arg;
    const struct proto_rename_req *q = a->q;
    const struct proto_cred *c = &q->cred;
    char sp[PROTO_MAX_STR + 1], dp[PROTO_MAX_STR + 1];
    int rc;
    if (q->flags & ~(uint32_t)(RENAME_NOREPLACE | RENAME_EXCHANGE) ||
        ((q->flags & RENAME_NOREPLACE) && (q->flags & RENAME_EXCHANGE)))
        return -EINVAL;
    if ((rc = proto_str_copy(&q->spath, sp, sizeof(sp))) ||
        (rc = proto_str_copy(&q->dpath, dp, sizeof(dp))))
        return rc;
    struct walk s = {.links_left = MAX_SYMLINKS}, d = {.links_left = MAX_SYMLINKS};
    if ((rc = meta_walk_parent(t, c, q->sparent, sp, &s)))
        return rc;
    if (s.self)
        return -EBUSY;
    uint64_t sino, dino = 0;
    uint8_t stype, dtyp = 0;
    if ((rc = meta_dentry_get(t, s.dir, s.name, &sino, &stype)))
        return rc;
    /* The destination name, or an inode, on another MDT: xname.c runs the
     * rename across MDTs (files; directories not yet: EXDEV, and mv copies). */
    if ((rc = meta_walk_parent(t, c, q->dparent, dp, &d))) {
        if (rc != -EREMOTE || strchr(dp, '/') || q->dmdt == a->c->mdt)
            return rc == -EREMOTE ? -EXDEV : rc;
        memset(&d, 0, sizeof(d));
        d.dir = q->dparent;
        if ((rc = proto_str_copy(&q->dpath, d.name, sizeof(d.name))))
            return rc;
        if ((rc = valid_name(d.name)))
            return rc;
        return rename_cross(a, &s, sino, stype, &d, q->dmdt);
    }
    if (d.self)
        return -EBUSY;
    if ((rc = valid_name(d.name)))
        return rc;
    struct meta_inode sin, din;
    if ((rc = meta_inode_get_here(t, sino, &sin)))
        return rc == -EREMOTE ? rename_cross(a, &s, sino, stype, &d, a->c->mdt) : rc;
    /* With several MDTs, a directory that moves to another parent takes the
     * file system's rename lock, and its ancestry may cross MDTs: xname.c. */
    if (S_ISDIR(sin.mode) && s.dir != d.dir && __atomic_load_n(&a->c->nmdt, __ATOMIC_RELAXED) > 1)
        return rename_cross(a, &s, sino, stype, &d, a->c->mdt);
    rc = meta_dentry_get(t, d.dir, d.name, &dino, &dtyp);
    if (rc && rc != -ENOENT)
        return rc;
    bool dexists = rc == 0;
    if (dexists && (rc = meta_inode_get_here(t, dino, &din))) {
        return rc == -EREMOTE ? rename_cross(a, &s, sino, stype, &d, a->c->mdt) : rc;
    }
    if (d.din.flags & META_F_SEALED)
        return -ENOENT;
    /* Replacing a striped directory removes its shards: a cross-MDT change
     * (and moving one to another parent went that way above). */
    if (dexists && dino != sino && S_ISDIR(din.mode) && din.dstripe)
        return rename_cross(a, &s, sino, stype, &d, a->c->mdt);
    if ((s.must_dir || d.must_dir) && !S_ISDIR(sin.mode))
        return -ENOTDIR;
    if ((q->flags & RENAME_NOREPLACE) && dexists)
        return -EEXIST;
    if ((q->flags & RENAME_EXCHANGE) && !dexists)
        return -ENOENT;
    if ((rc = may_delete(&s.din, &sin, c)))
        return rc;
    if (dexists && (rc = may_delete(&d.din, &din, c)))
        return rc;
    if (!dexists && (rc = may(&d.din, c, 3)))
        return rc;
    if (dexists && dino == sino)
        return 0; /* the same file under both names: POSIX says do nothing */
    /* A directory may not move below itself. */
    if (S_ISDIR(sin.mode) && s.dir != d.dir) {
        if ((rc = is_ancestor(t, sino, d.dir)))
            return rc < 0 ? rc : -EINVAL;
    }
    if ((q->flags & RENAME_EXCHANGE) && S_ISDIR(din.mode) && s.dir != d.dir) {
        if ((rc = is_ancestor(t, dino, s.dir)))
            return rc < 0 ? rc : -EINVAL;
    }
    /* Moving a directory rewrites its ".."; that needs write permission on it. */
    if (S_ISDIR(sin.mode) && s.dir != d.dir && (rc = may(&sin, c, 2)))
        return rc;
    if ((q->flags & RENAME_EXCHANGE) && S_ISDIR(din.mode) && s.dir != d.dir &&
        (rc = may(&din, c, 2)))
        return rc;
    bool same_dir = s.dir == d.dir;
    if (q->flags & RENAME_EXCHANGE) {
        if ((rc = meta_dentry_set(t, s.dir, s.name, dino, dtype(din.mode))) ||
            (rc = meta_dentry_set(t, d.dir, d.name, sino, dtype(sin.mode))))
            return rc;
        if (!same_dir) {
            int sdelta = (S_ISDIR(din.mode) ? 1 : 0) - (S_ISDIR(sin.mode) ? 1 : 0);
            if (S_ISDIR(sin.mode)) {
                sin.parent = d.dir;
                sin.ctime_ns = meta_now_ns();
                if ((rc = meta_inode_put(t, &sin)))
                    return rc;
            }
            if (S_ISDIR(din.mode)) {
                din.parent = s.dir;
                din.ctime_ns = meta_now_ns();
                if ((rc = meta_inode_put(t, &din)))
                    return rc;
            }
            if ((rc = meta_touch_dir(t, &s.din, sdelta)))
                return rc;
            if ((rc = meta_inode_get(t, d.dir, &d.din)) ||
                (rc = meta_touch_dir(t, &d.din, -sdelta)))
                return rc;
            return 0;
        }
        return meta_touch_dir(t, &s.din, 0);
    }
    if (dexists) {
        if (S_ISDIR(sin.mode) && !S_ISDIR(din.mode))
            return -ENOTDIR;
        if (!S_ISDIR(sin.mode) && S_ISDIR(din.mode))
            return -EISDIR;
        if (S_ISDIR(din.mode) && (rc = meta_dir_is_empty(t, dino)) <= 0)
            return rc ? rc : -ENOTEMPTY;
    }
    if ((rc = meta_dentry_del(t, s.dir, s.name)))
        return rc;
    if ((rc = meta_dentry_set(t, d.dir, d.name, sino, dtype(sin.mode))))
        return rc;
    int ddelta = 0, sdelta = 0;
    if (dexists) {
        a->r->replaced = dino;
        if ((rc = meta_drop_link(t, &din, &a->r->destroy, &a->r->layout, &a->r->gone, &a->r->size)))
            return rc;
        if (S_ISDIR(din.mode))
            ddelta -= 1;
    }
    if (S_ISDIR(sin.mode) && !same_dir) {
        sdelta -= 1;
        ddelta += 1;
    }
    sin.parent = S_ISDIR(sin.mode) ? d.dir : sin.parent;
    sin.ctime_ns = meta_now_ns();
    if ((rc = meta_inode_put(t, &sin)))
        return rc;
    if (same_dir)
        return meta_touch_dir(t, &s.din, sdelta + ddelta);
    if ((rc = meta_touch_dir(t, &s.din, sdelta)))
        return rc;
    /* Re-read: the source directory update may not be the same record, but
     * d.din could be stale if the destination was inside what we wrote. */
    if ((rc = meta_inode_get(t, d.dir, &d.din)))
        return rc;
    return meta_touch_dir(t, &d.din, ddelta);
}

int meta_op_rename(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_rename_req *q = qv;
    struct proto_rename_rep *r = rv;
    struct meta_xmv x;
    struct rename_arg a = {c, q, r, &x};
    int rc = run_waiting(rq, RUN_WRITE, rename_txn, &a);
    if (rc == META_CROSS)
        return meta_xrename(rq, &q->cred, &x, r);
    return rc;
}

/* ---- link, readlink ---- */

struct link_arg {
    struct meta_ctx *c;
    const struct proto_link_req *q;
    struct proto_link_rep *r;
    struct walk w; /* where the name goes, when the inode is another MDT's */
};

static int link_txn(struct meta_txn *t, void *arg)
{
    struct link_arg *a = arg;
    const struct proto_link_req *q = a->q;
    char path[PROTO_MAX_STR + 1];
    int rc = proto_str_copy(&q->dpath, path, sizeof(path));
    if (rc)
        return rc;
    struct meta_inode in;
    struct walk w = {.links_left = MAX_SYMLINKS};
    /* A walk that leads to another MDT answers EREMOTE: the client walks
     * the path itself and sends the link where the name lives. */
    if ((rc = meta_walk_parent(t, &q->cred, q->dparent, path, &w)))
        return rc;
    if (w.self)
        return -EEXIST;
    if ((rc = valid_name(w.name)) || (rc = meta_may_add(&w, &q->cred)))
        return rc;
    if ((rc = meta_inode_get_here(t, q->ino, &in))) {
        if (rc != -EREMOTE)
            return rc;
        /* Another MDT's inode: xname.c adds the link there first. */
        uint64_t ino;
        if ((rc = meta_dentry_get(t, w.dir, w.name, &ino, NULL)) != -ENOENT)
            return rc ? rc : -EEXIST;
        a->w = w;
        return META_CROSS;
    }
    if (S_ISDIR(in.mode))
        return -EPERM;
    if (in.nlink >= 65000)
        return -EMLINK;
    if ((rc = meta_dentry_add(t, w.dir, w.name, in.ino, dtype(in.mode))))
        return rc;
    in.nlink++;
    in.ctime_ns = meta_now_ns();
    if ((rc = meta_inode_put(t, &in)) || (rc = meta_touch_dir(t, &w.din, 0)))
        return rc;
    meta_inode_attr(&in, &a->r->attr);
    return 0;
}

int meta_op_link(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_link_req *q = qv;
    struct proto_link_rep *r = rv;
    struct link_arg *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->c = c;
    a->q = q;
    a->r = r;
    int rc = run_waiting(rq, RUN_WRITE, link_txn, a);
    if (rc == META_CROSS)
        rc = meta_xlink(rq, &q->cred, q->ino, a->w.dir, a->w.name, r);
    free(a);
    return rc;
}

static int readlink_txn(struct meta_txn *t, void *arg)
{
    struct ino_arg *a = arg;
    const struct proto_readlink_req *q = a->q;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    if (!S_ISLNK(in.mode))
        return -EINVAL;
    MDB_val v;
    if ((rc = meta_symlink_get(t, q->ino, &v)))
        return rc;
    if (v.mv_size > a->buflen)
        return -ENAMETOOLONG;
    memcpy(a->buf, v.mv_data, v.mv_size);
    struct proto_readlink_rep *r = a->r;
    r->target.p = (const char *)a->buf;
    r->target.len = (uint32_t)v.mv_size;
    return 0;
}

int meta_op_readlink(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_readlink_req *q = qv;
    struct proto_readlink_rep *r = rv;
    char *buf = rq->buf;
    size_t buflen = rq->buf_len;
    struct ino_arg a = {c, q, r, (uint8_t *)buf, buflen};
    return meta_store_read(c->store, rq, readlink_txn, &a);
}

/* ---- readdir ---- */

struct readdir_state {
    struct meta_txn *t;
    bool plus;
    struct proto_enc e;
    uint32_t count;
};

/* An entry's bytes at most: dirent, name, and its attributes with plus. */
#define DIRENT_MAX (8 + 8 + 1 + 2 + PROTO_MAX_NAME + 96)

static int readdir_cb(void *arg, uint64_t ino, uint8_t type, const char *name, size_t len,
                      uint64_t next)
{
    struct readdir_state *s = arg;
    struct proto_dirent de = {ino, next, type, {name, (uint32_t)len}};
    size_t before = s->e.len;
    proto_put_dirent(&s->e, &de);
    if (s->plus) {
        struct meta_inode in;
        struct proto_attr attr;
        int rc = meta_inode_get_here(s->t, ino, &in);
        if (rc == 0 && (in.flags & META_F_SHARD))
            rc = -EREMOTE; /* the directory's own MDT has its attributes */
        if (rc == -EREMOTE) {
            /* Another MDT's inode: its number and type only (nlink 0 says
             * so; the client asks that MDT). */
            meta_inode_clear(&in);
            in.ino = ino;
            in.mode = (uint32_t)DTTOIF(type);
        } else if (rc) {
            return rc == -ENOENT ? -EUCLEAN : rc;
        }
        meta_inode_attr(&in, &attr);
        proto_put_ATTR(&s->e, &attr);
    }
    if (s->e.err) {
        s->e.len = before;
        s->e.err = 0;
        return 1; /* full: this entry goes in the next batch */
    }
    s->count++;
    return 0;
}

static int readdir_txn(struct meta_txn *t, void *arg)
{
    struct ino_arg *a = arg;
    const struct proto_readdir_req *q = a->q;
    struct proto_readdir_rep *r = a->r;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    if (!S_ISDIR(in.mode))
        return -ENOTDIR;
    if ((rc = may(&in, &q->cred, 4)))
        return rc;
    size_t cap = MIN(a->buflen, (size_t)q->max_bytes);
    if (cap < DIRENT_MAX)
        return -EINVAL;
    struct readdir_state s = {.t = t, .plus = q->plus, .count = 0};
    proto_enc_init(&s.e, a->buf, cap);
    if ((rc = meta_dir_iterate(t, q->ino, q->cookie, readdir_cb, &s)))
        return rc;
    r->count = s.count;
    r->entries.p = a->buf;
    r->entries.len = (uint32_t)s.e.len;
    /* Not full means the iteration reached the end. */
    r->eof = s.e.len + DIRENT_MAX <= cap;
    return 0;
}

int meta_op_readdir(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_readdir_req *q = qv;
    struct proto_readdir_rep *r = rv;
    uint8_t *buf = rq->buf;
    size_t buflen = rq->buf_len;
    struct ino_arg a = {c, q, r, buf, buflen};
    return meta_store_read(c->store, rq, readdir_txn, &a);
}

/* ---- layouts ---- */

static int getstripe_txn(struct meta_txn *t, void *arg)
{
    struct ino_arg *a = arg;
    const struct proto_getstripe_req *q = a->q;
    struct proto_getstripe_rep *r = a->r;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    if (S_ISDIR(in.mode)) {
        r->is_dir = 1;
        r->dir_count = in.dcount;
        r->dir_size = in.dsize;
        r->dir_offset = in.doffset;
        r->dstripe = in.dstripe;
        r->ddefault = in.ddefault;
        return 0;
    }
    if (!S_ISREG(in.mode))
        return -ENODATA;
    layout_copy(&r->layout, &in.layout);
    return 0;
}

int meta_op_getstripe(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_getstripe_req *q = qv;
    struct proto_getstripe_rep *r = rv;
    struct ino_arg a = {c, q, r, NULL, 0};
    return meta_store_read(c->store, rq, getstripe_txn, &a);
}

static int setdirstripe_txn(struct meta_txn *t, void *arg)
{
    struct ino_arg *a = arg;
    const struct proto_setdirstripe_req *q = a->q;
    struct meta_inode in;
    int rc = meta_inode_get_here(t, q->ino, &in);
    if (rc)
        return rc;
    if (!S_ISDIR(in.mode))
        return -ENOTDIR;
    if (q->cred.uid != 0 && q->cred.uid != in.uid)
        return -EPERM;
    uint32_t nmdt = __atomic_load_n(&a->c->nmdt, __ATOMIC_RELAXED);
    if (q->count < -1 || q->count > (int32_t)nmdt || q->start < -1 || q->start >= (int32_t)nmdt)
        return -EINVAL;
    struct proto_dstripe d = {q->count < 0 ? 0xffff : (uint16_t)q->count,
                              q->start < 0 ? 0xffff : (uint16_t)q->start, 0, 0};
    in.ddefault = q->count == 0 ? 0 : proto_ds_pack(d);
    in.ctime_ns = meta_now_ns();
    int rc2 = meta_inode_put(t, &in);
    return rc2 ? rc2 : meta_xsync_note(a->c, t, &in);
}

int meta_op_setdirstripe(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_setdirstripe_req *q = qv;
    struct proto_setdirstripe_rep *r = rv;
    struct ino_arg a = {c, q, r, NULL, 0};
    return sync_after(c, meta_store_write(c->store, rq, setdirstripe_txn, &a));
}

static int setstripe_txn(struct meta_txn *t, void *arg)
{
    struct ino_arg *a = arg;
    const struct proto_setstripe_req *q = a->q;
    struct proto_setstripe_rep *r = a->r;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    if ((rc = check_stripe_args(q->count, q->size, q->offset)))
        return rc;
    if (S_ISDIR(in.mode)) {
        if (q->cred.uid != 0 && q->cred.uid != in.uid)
            return -EPERM;
        in.dcount = q->count;
        in.dsize = q->size;
        in.doffset = q->offset;
        in.ctime_ns = meta_now_ns();
        if ((rc = meta_inode_put(t, &in)))
            return rc;
        return meta_xsync_note(a->c, t, &in);
    }
    if (!S_ISREG(in.mode))
        return -EINVAL;
    if ((rc = may(&in, &q->cred, 2)))
        return rc;
    /* Data already placed by the old layout would become unreachable. */
    if (in.size || (in.flags & META_F_OBJECTS))
        return -EEXIST;
    int32_t count = q->count ? q->count : a->c->default_count;
    uint32_t size = q->size ? q->size : in.layout.comp[0].stripe_size;
    if ((rc = alloc_layout(a->c, count, size, q->offset, &in.layout)))
        return rc;
    in.ctime_ns = meta_now_ns();
    layout_copy(&r->layout, &in.layout);
    return meta_inode_put(t, &in);
}

int meta_op_setstripe(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_setstripe_req *q = qv;
    struct proto_setstripe_rep *r = rv;
    struct ino_arg a = {c, q, r, NULL, 0};
    return sync_after(c, meta_store_write(c->store, rq, setstripe_txn, &a));
}

/* ---- xattrs ---- */

/* Who may read (write=false) or change an xattr of in, by namespace. */
static int xattr_may(const struct meta_inode *in, const struct proto_cred *c, const char *name,
                     bool write)
{
    if (!strncmp(name, "user.", 5)) {
        if (!S_ISREG(in->mode) && !S_ISDIR(in->mode))
            return write ? -EPERM : -ENODATA;
        if ((in->mode & S_ISVTX) && S_ISDIR(in->mode) && write && c->uid != 0 && c->uid != in->uid)
            return -EPERM;
        return may(in, c, write ? 2 : 4);
    }
    if (!strncmp(name, "trusted.", 8))
        return c->uid == 0 ? 0 : (write ? -EPERM : -ENODATA);
    if (!strncmp(name, "security.", 9))
        return write && c->uid != 0 && c->uid != in->uid ? -EPERM : 0;
    /* system.* (POSIX ACLs) is not supported yet; unknown prefixes never. */
    return -EOPNOTSUPP;
}

static int xattr_name(const struct proto_str *s, char *buf)
{
    int rc = proto_str_copy(s, buf, PROTO_MAX_NAME + 1);
    if (rc == -ENAMETOOLONG)
        return -ERANGE;
    if (rc)
        return rc;
    return buf[0] ? 0 : -EINVAL;
}

static int setxattr_txn(struct meta_txn *t, void *arg)
{
    struct ino_arg *a = arg;
    const struct proto_setxattr_req *q = a->q;
    char name[PROTO_MAX_NAME + 1];
    struct meta_inode in;
    int rc;
    if ((rc = xattr_name(&q->name, name)))
        return rc;
    if (q->value.len > PROTO_MAX_XATTR)
        return -E2BIG;
    if (q->flags & ~(uint32_t)(XATTR_CREATE | XATTR_REPLACE))
        return -EINVAL;
    if ((rc = meta_inode_get(t, q->ino, &in)) || (rc = xattr_may(&in, &q->cred, name, true)))
        return rc;
    MDB_val v;
    rc = meta_xattr_get(t, q->ino, name, &v);
    if (rc && rc != -ENOENT)
        return rc;
    if (rc == 0 && (q->flags & XATTR_CREATE))
        return -EEXIST;
    if (rc == -ENOENT && (q->flags & XATTR_REPLACE))
        return -ENODATA;
    if ((rc = meta_xattr_put(t, q->ino, name, q->value.p, q->value.len)))
        return rc;
    in.ctime_ns = meta_now_ns();
    return meta_inode_put(t, &in);
}

int meta_op_setxattr(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_setxattr_req *q = qv;
    struct proto_setxattr_rep *r = rv;
    struct ino_arg a = {c, q, r, NULL, 0};
    return meta_store_write(c->store, rq, setxattr_txn, &a);
}

static int getxattr_txn(struct meta_txn *t, void *arg)
{
    struct ino_arg *a = arg;
    const struct proto_getxattr_req *q = a->q;
    struct proto_getxattr_rep *r = a->r;
    char name[PROTO_MAX_NAME + 1];
    struct meta_inode in;
    int rc;
    if ((rc = xattr_name(&q->name, name)))
        return rc;
    if ((rc = meta_inode_get(t, q->ino, &in)) || (rc = xattr_may(&in, &q->cred, name, false)))
        return rc;
    MDB_val v;
    if ((rc = meta_xattr_get(t, q->ino, name, &v)))
        return rc == -ENOENT ? -ENODATA : rc;
    if (v.mv_size > a->buflen)
        return -E2BIG;
    memcpy(a->buf, v.mv_data, v.mv_size);
    r->value.p = a->buf;
    r->value.len = (uint32_t)v.mv_size;
    return 0;
}

int meta_op_getxattr(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_getxattr_req *q = qv;
    struct proto_getxattr_rep *r = rv;
    uint8_t *buf = rq->buf;
    size_t buflen = rq->buf_len;
    struct ino_arg a = {c, q, r, buf, buflen};
    return meta_store_read(c->store, rq, getxattr_txn, &a);
}

struct list_state {
    struct ino_arg *a;
    const struct meta_inode *in;
    const struct proto_cred *cred;
    size_t len;
};

static int list_cb(void *arg, const char *name, size_t len)
{
    struct list_state *s = arg;
    char n[PROTO_MAX_NAME + 1];
    if (len > PROTO_MAX_NAME)
        return 0;
    memcpy(n, name, len);
    n[len] = '\0';
    /* List only what the caller could read (trusted.* is root's). */
    if (xattr_may(s->in, s->cred, n, false) == -ENODATA && strncmp(n, "user.", 5))
        return 0;
    if (s->len + len + 1 > s->a->buflen)
        return -E2BIG;
    memcpy(s->a->buf + s->len, n, len + 1);
    s->len += len + 1;
    return 0;
}

static int listxattr_txn(struct meta_txn *t, void *arg)
{
    struct ino_arg *a = arg;
    const struct proto_listxattr_req *q = a->q;
    struct proto_listxattr_rep *r = a->r;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    struct list_state s = {a, &in, &q->cred, 0};
    if ((rc = meta_xattr_list(t, q->ino, list_cb, &s)))
        return rc;
    r->names.p = a->buf;
    r->names.len = (uint32_t)s.len;
    return 0;
}

int meta_op_listxattr(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_listxattr_req *q = qv;
    struct proto_listxattr_rep *r = rv;
    uint8_t *buf = rq->buf;
    size_t buflen = rq->buf_len;
    struct ino_arg a = {c, q, r, buf, buflen};
    return meta_store_read(c->store, rq, listxattr_txn, &a);
}

static int removexattr_txn(struct meta_txn *t, void *arg)
{
    struct ino_arg *a = arg;
    const struct proto_removexattr_req *q = a->q;
    char name[PROTO_MAX_NAME + 1];
    struct meta_inode in;
    int rc;
    if ((rc = xattr_name(&q->name, name)))
        return rc;
    if ((rc = meta_inode_get(t, q->ino, &in)) || (rc = xattr_may(&in, &q->cred, name, true)))
        return rc;
    if ((rc = meta_xattr_del(t, q->ino, name)))
        return rc == -ENOENT ? -ENODATA : rc;
    in.ctime_ns = meta_now_ns();
    return meta_inode_put(t, &in);
}

int meta_op_removexattr(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_removexattr_req *q = qv;
    struct proto_removexattr_rep *r = rv;
    struct ino_arg a = {c, q, r, NULL, 0};
    return meta_store_write(c->store, rq, removexattr_txn, &a);
}

/* ---- size reports ---- */

static int setsize_txn(struct meta_txn *t, void *arg)
{
    struct ino_arg *a = arg;
    const struct proto_setsize_req *q = a->q;
    struct proto_setsize_rep *r = a->r;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    if (!S_ISREG(in.mode))
        return -EINVAL;
    /* Only a writer reports sizes; it proved write access when it opened. */
    bool changed = !(in.flags & META_F_OBJECTS) || q->size > in.size ||
                   (q->mtime_ns && q->mtime_ns != in.mtime_ns);
    in.flags |= META_F_OBJECTS;
    if (q->size > in.size)
        in.size = q->size;
    if (q->mtime_ns) {
        in.mtime_ns = q->mtime_ns;
        in.ctime_ns = q->mtime_ns;
    }
    if (changed && (rc = meta_inode_put(t, &in)))
        return rc;
    meta_inode_attr(&in, &r->attr);
    return 0;
}

static int destroyed_txn(struct meta_txn *t, void *arg)
{
    return meta_pending_del(t, *(const uint64_t *)arg);
}

int meta_op_destroyed(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_destroyed_req *q = qv;
    struct proto_destroyed_rep *r = rv;
    (void)r;
    uint64_t ino = q->ino;
    return meta_store_write(c->store, rq, destroyed_txn, &ino);
}

int meta_op_setsize(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_setsize_req *q = qv;
    struct proto_setsize_rep *r = rv;
    struct ino_arg a = {c, q, r, NULL, 0};
    return meta_store_write(c->store, rq, setsize_txn, &a);
}
