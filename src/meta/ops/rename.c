/*
 * rename and link (rename.h): on one MDT in one transaction; when the
 * names or inodes span MDTs, xname.c carries them on.
 */
#include "rename.h"
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
    int rc = meta_may(&s->din, &a->q->cred, 3);
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
    struct walk s = {.links_left = META_MAX_SYMLINKS}, d = {.links_left = META_MAX_SYMLINKS};
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
        if ((rc = meta_valid_name(d.name)))
            return rc;
        return rename_cross(a, &s, sino, stype, &d, q->dmdt);
    }
    if (d.self)
        return -EBUSY;
    if ((rc = meta_valid_name(d.name)))
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
    if ((rc = meta_may_delete(&s.din, &sin, c)))
        return rc;
    if (dexists && (rc = meta_may_delete(&d.din, &din, c)))
        return rc;
    if (!dexists && (rc = meta_may(&d.din, c, 3)))
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
    if (S_ISDIR(sin.mode) && s.dir != d.dir && (rc = meta_may(&sin, c, 2)))
        return rc;
    if ((q->flags & RENAME_EXCHANGE) && S_ISDIR(din.mode) && s.dir != d.dir &&
        (rc = meta_may(&din, c, 2)))
        return rc;
    bool same_dir = s.dir == d.dir;
    if (q->flags & RENAME_EXCHANGE) {
        if ((rc = meta_dentry_set(t, s.dir, s.name, dino, meta_dtype(din.mode))) ||
            (rc = meta_dentry_set(t, d.dir, d.name, sino, meta_dtype(sin.mode))))
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
    if ((rc = meta_dentry_set(t, d.dir, d.name, sino, meta_dtype(sin.mode))))
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
    int rc = meta_run_waiting(rq, META_RUN_WRITE, rename_txn, &a);
    if (rc == META_CROSS)
        return meta_xrename(rq, &q->cred, &x, r);
    return rc;
}

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
    struct walk w = {.links_left = META_MAX_SYMLINKS};
    /* A walk that leads to another MDT answers EREMOTE: the client walks
     * the path itself and sends the link where the name lives. */
    if ((rc = meta_walk_parent(t, &q->cred, q->dparent, path, &w)))
        return rc;
    if (w.self)
        return -EEXIST;
    if ((rc = meta_valid_name(w.name)) || (rc = meta_may_add(&w, &q->cred)))
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
    /* No name left (a superseded file): as link(2) of such a file. */
    if (in.nlink == 0)
        return -ENOENT;
    if (in.nlink >= 65000)
        return -EMLINK;
    if ((rc = meta_dentry_add(t, w.dir, w.name, in.ino, meta_dtype(in.mode))))
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
    int rc = meta_run_waiting(rq, META_RUN_WRITE, link_txn, a);
    if (rc == META_CROSS)
        rc = meta_xlink(rq, &q->cred, q->ino, a->w.dir, a->w.name, r);
    free(a);
    return rc;
}
