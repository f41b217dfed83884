/*
 * The core of the namespace operations (core.h): permissions, the path
 * walk, inode helpers, and names held by cross-MDT renames.
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
#include "core.h"

#include "../../common/log.h"
#include "../../common/util.h"
#include "../../proto/layout.h"
#include "../store/dom_rec.h"
#include "../store/hsm_rec.h"
#include "../store/mig_rec.h"

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

int64_t meta_now_ns(void)
{
    return (int64_t)util_now_real_ns();
}

/* mask: 4 read, 2 write, 1 execute/search. */
int meta_may(const struct meta_inode *in, const struct proto_cred *c, unsigned mask)
{
    return proto_cred_may(c, in->mode, in->uid, in->gid, mask) ? 0 : -EACCES;
}

/* Removing or renaming victim out of dir: write+search, and the sticky bit. */
int meta_may_delete(const struct meta_inode *dir, const struct meta_inode *victim,
                    const struct proto_cred *c)
{
    int rc = meta_may(dir, c, 3);
    if (rc)
        return rc;
    return proto_cred_may_delete(c, dir->mode, dir->uid, dir->gid, victim->uid) ? 0 : -EPERM;
}

/* Whether name's entry in directory dir (record din) belongs on this MDT. */
bool meta_name_here(struct meta_txn *t, uint64_t dir, const struct meta_inode *din,
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
    return meta_may(&w->din, c, 3);
}

int meta_run_waiting(const struct meta_req *rq, enum meta_run_mode mode, meta_txn_fn fn, void *arg)
{
    struct meta_ctx *c = rq->ctx;
    for (int i = 0;; i++) {
        int rc = mode == META_RUN_READ   ? meta_store_read(c->store, rq, fn, arg)
                 : mode == META_RUN_FLAT ? meta_store_write_flat(c->store, rq, fn, arg)
                                         : meta_store_write(c->store, rq, fn, arg);
        if (rc != -EAGAIN)
            return rc;
        if (i == 800)
            return -EBUSY;
        uint64_t t0 = rq->wait_ns ? util_now_mono_ns() : 0;
        usleep(2500);
        if (rq->wait_ns)
            *rq->wait_ns += util_now_mono_ns() - t0;
    }
}

uint8_t meta_dtype(uint32_t mode)
{
    return (uint8_t)IFTODT(mode);
}

int meta_valid_name(const char *name)
{
    size_t len = strlen(name);
    if (len == 0)
        return -ENOENT;
    if (len > PROTO_MAX_NAME)
        return -ENAMETOOLONG;
    return 0;
}

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
    char buf[META_PATH_BUF];
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
        if ((rc = meta_may(&w->din, c, 1)))
            return rc;
        w->dots = !strcmp(comp, ".") ? 1 : !strcmp(comp, "..") ? 2 : 0;
        /* A name of a striped directory may live on another MDT: the
         * client goes on from there (EREMOTE). */
        if (!w->dots && !meta_name_here(t, cur, &w->din, comp))
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
int meta_walk_full(struct meta_txn *t, const struct proto_cred *c, uint64_t start, const char *path,
                   bool follow, struct meta_inode *out)
{
    struct walk w = {.links_left = META_MAX_SYMLINKS, .summary_ok = true};
    char buf[META_PATH_BUF];
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
    /* Its HSM record, read before its xattrs take it, leaves a tombstone
     * of its object and a released file the counters: every inode that
     * goes for good goes here, in the transaction that removes it. */
    if ((rc = meta_hsm_forget(t, in)) || (rc = meta_inode_del(t, in->ino)) ||
        (rc = meta_xattr_del_all(t, in->ino)))
        return rc;
    /* Its bytes on this MDT (Data-on-MDT, or what a migration into such a
     * layout copied) go with it, or, while a client may keep it open
     * (pending, below), when that client says DESTROYED. */
    if (S_ISREG(in->mode) && !meta_objects_may_exist(in) && (rc = meta_dom_del(t, in->ino)))
        return rc;
    /* A migration a crash left: the objects it named become orphans for
     * stria fsck (their inode is gone). */
    if (S_ISREG(in->mode) && (rc = meta_mig_del(t, in->ino)))
        return rc;
    if (S_ISLNK(in->mode) && (rc = meta_symlink_del(t, in->ino)))
        return rc;
    *gone = 1;
    if (S_ISREG(in->mode)) {
        layout_copy(layout, &in->layout);
        *size = in->size;
        *destroy = meta_objects_may_exist(in);
        if (*destroy && (rc = meta_pending_put(t, in->ino)))
            return rc;
    }
    return 0;
}

static struct meta_hold *hold_find(struct meta_ctx *c, uint64_t dir, const char *name)
{
    for (uint32_t i = 0; i < c->nholds; i++)
        if (c->holds[i].dir == dir && !strcmp(c->holds[i].name, name))
            return &c->holds[i];
    return NULL;
}

bool meta_name_held(struct meta_ctx *c, uint64_t dir, const char *name, uint64_t txid)
{
    if (!__atomic_load_n(&c->nholds, __ATOMIC_RELAXED))
        return false;
    pthread_mutex_lock(&c->xlock);
    struct meta_hold *h = hold_find(c, dir, name);
    bool held = h && h->txid != txid;
    pthread_mutex_unlock(&c->xlock);
    return held;
}

/* Hold dir/name for txid: 0, or -EBUSY when another operation holds it or
 * the table is full. */
int meta_hold_take(struct meta_ctx *c, uint64_t txid, uint64_t dir, const char *name)
{
    int rc = 0;
    pthread_mutex_lock(&c->xlock);
    struct meta_hold *h = hold_find(c, dir, name);
    if (h)
        rc = h->txid == txid ? 0 : -EBUSY;
    else if (c->nholds == META_MAX_HOLDS)
        rc = -EBUSY;
    else {
        h = &c->holds[c->nholds];
        h->txid = txid;
        h->dir = dir;
        snprintf(h->name, sizeof(h->name), "%s", name);
        __atomic_store_n(&c->nholds, c->nholds + 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&c->xlock);
    return rc;
}

void meta_hold_drop(struct meta_ctx *c, uint64_t txid)
{
    pthread_mutex_lock(&c->xlock);
    for (uint32_t i = 0; i < c->nholds; i++)
        if (c->holds[i].txid == txid) {
            c->holds[i] = c->holds[c->nholds - 1];
            __atomic_store_n(&c->nholds, c->nholds - 1, __ATOMIC_RELAXED);
            break;
        }
    pthread_mutex_unlock(&c->xlock);
}

struct holds_scan {
    struct meta_ctx *c;
    int err;
};

static int holds_cb(void *arg, uint64_t txid, const void *rec, size_t len)
{
    struct holds_scan *h = arg;
    struct proto_dec d;
    uint8_t kind;
    proto_dec_init(&d, rec, len);
    proto_get_U8(&d, &kind);
    if (d.err || kind != XK_HOLD)
        return 0;
    struct meta_intent *x = calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    /* Decoded as every intent is; a record that cannot be read holds nothing. */
    int rc = meta_intent_decode(rec, len, x);
    if (rc == 0 && meta_hold_take(h->c, txid & ~(1ull << 63), x->dir, x->name))
        h->err = -ENOSPC;
    free(x);
    return 0;
}

static int holds_txn(struct meta_txn *t, void *arg)
{
    return meta_intent_scan(t, holds_cb, arg);
}

int meta_holds_load(struct meta_ctx *c)
{
    struct holds_scan h = {c, 0};
    int rc = meta_store_read(c->store, NULL, holds_txn, &h);
    if (c->nholds)
        log_info("MDT%04x: %u name(s) held for renames of other MDTs", c->mdt, c->nholds);
    return rc ? rc : h.err;
}

/* The mode bits a truncate by c drops: CAP_FSETID is root's here. */
uint32_t meta_truncate_drops(const struct meta_inode *in, const struct proto_cred *c)
{
    return c->uid == 0 ? 0 : proto_mode_kill_privs(in->mode);
}
