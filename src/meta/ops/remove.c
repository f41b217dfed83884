/*
 * Names that go (remove.h): unlink and rmdir; a remote entry's unlink and
 * an rmdir of a directory with records elsewhere go on in xname.c and
 * xdir.c.
 */
#include "remove.h"
#include "xdir.h"
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
    struct walk w = {.links_left = META_MAX_SYMLINKS};
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
        int prc = rc == 0 ? meta_may_delete(&w.din, &in, a->cred) : meta_may(&w.din, a->cred, 3);
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
    if ((rc = meta_may_delete(&w.din, &in, a->cred)))
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
    int rc = meta_run_waiting(rq, META_RUN_FLAT, rm_txn, &a);
    if (rc == META_CROSS)
        return meta_xunlink(rq, &q->cred, a.xdir, a.xname, a.xino, r);
    return rc;
}

int meta_op_unlink_n(uint32_t n, const struct meta_req *const *rqs,
                     const struct proto_unlink_req *qs, struct proto_unlink_rep *rs, int *rcs)
{
    if (n == 0)
        return -EINVAL;
    struct rm_arg *a = calloc(n, sizeof(*a));
    void **args = calloc(n, sizeof(*args));
    int rc = a && args ? 0 : -ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        a[i] = (struct rm_arg){
            rqs[i]->ctx, &qs[i].cred, qs[i].parent, &qs[i].path, false, &rs[i], NULL, 0, 0, ""};
        args[i] = &a[i];
    }
    if (rc == 0)
        rc = meta_store_write_flat_n(rqs[0]->ctx->store, n, rqs, rm_txn, args, rcs);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        if (rcs[i] == META_CROSS)
            rcs[i] = meta_xunlink(rqs[i], &qs[i].cred, a[i].xdir, a[i].xname, a[i].xino, &rs[i]);
        else if (rcs[i] == -EAGAIN) /* a held name: wait for it, alone */
            rcs[i] = meta_op_unlink(rqs[i], &qs[i], &rs[i]);
    }
    free(args);
    free(a);
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
    int rc = meta_run_waiting(rq, META_RUN_FLAT, rm_txn, &a);
    if (rc == META_CROSS)
        return meta_xrmdir(rq, &q->cred, &x);
    return rc;
}
