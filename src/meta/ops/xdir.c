/*
 * Directories across MDTs (xdir.h): mkdir and rmdir as intents.
 *
 *   mkdir  phase 1: records put on the other MDTs. Not committed, so
 *          recovery deletes them (the mkdir did not happen).
 *   rmdir  phase 1: every record sealed; recovery unseals them.
 *          phase 2: the name is gone; recovery deletes the records.
 */
#include "xdir.h"

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
static int finish(const struct meta_req *rq, uint64_t txid, struct meta_intent *x)
{
    return meta_intent_finish(rq, txid, x, false);
}

struct xmk_commit {
    struct meta_ctx *c;
    const struct proto_cred *cred;
    struct meta_xmk *m;
    const struct meta_intent *x;
    uint64_t txid;
};

static int xmk_commit_txn(struct meta_txn *t, void *arg)
{
    struct xmk_commit *a = arg;
    struct walk w = {.dir = a->m->dir};
    int rc = meta_inode_get_here(t, a->m->dir, &w.din);
    if (rc)
        return rc == -EREMOTE ? -ENOENT : rc;
    if ((rc = meta_may_add(&w, a->cred)))
        return rc;
    if (meta_name_held(a->c, a->m->dir, a->m->name, 0))
        return -EBUSY; /* a rename is moving a file to this name */
    if ((rc = meta_dentry_add(t, a->m->dir, a->m->name, a->m->rec.ino, DT_DIR)))
        return rc;
    for (uint16_t i = 0; i < a->x->n; i++) {
        if (a->x->mdt[i] != a->c->mdt)
            continue;
        struct meta_inode here = a->m->rec;
        if (a->m->owner != a->c->mdt)
            here.flags |= META_F_SHARD;
        if ((rc = meta_inode_put(t, &here)))
            return rc;
    }
    if ((rc = meta_touch_dir(t, &w.din, 1)))
        return rc;
    if ((rc = meta_intent_del(t, a->txid)))
        return rc;
    return meta_reply_here(t); /* the mkdir is made: a resend must not make it again */
}

int meta_xmkdir(const struct meta_req *rq, const struct proto_cred *cred, struct meta_xmk *m,
                struct proto_attr *out)
{
    struct meta_ctx *c = rq->ctx;
    struct meta_intent *xp = calloc(1, sizeof(*xp)); /* 8 KiB: off the stack */
    if (!xp)
        return -ENOMEM;
    xp->kind = XK_MKDIR;
    xp->phase = 1;
    xp->dir = m->dir;
    meta_intent_members(m->rec.dstripe, m->owner, xp);
    int rc = 0;
    /* The inode number comes from the MDT that will own the inode. */
    if (m->owner != c->mdt) {
        struct proto_shard_rep r;
        if ((rc = meta_step_rec(rq, m->owner, PROTO_SHARD_ALLOC, 0, 0, NULL, 0, &r))) {
            free(xp);
            return meta_peer_err(rc);
        }
        xp->ino = r.ino;
    }
    uint64_t txid;
    if ((rc = meta_intent_begin(rq, xp, m->owner == c->mdt, &txid))) {
        free(xp);
        return rc;
    }
    m->rec.ino = xp->ino;
    for (uint16_t i = 0; i < xp->n && !rc; i++) {
        uint32_t mdt = xp->mdt[i];
        if (mdt == c->mdt)
            continue; /* put in the commit below */
        struct meta_inode rec = m->rec;
        if (mdt != m->owner)
            rec.flags |= META_F_SHARD;
        rc = meta_step_rec(rq, mdt, PROTO_SHARD_PUT, txid, xp->ino, &rec, 0, NULL);
    }
    if (!rc) {
        struct xmk_commit a = {c, cred, m, xp, txid};
        meta_inode_attr(&m->rec, out); /* the reply, kept by the commit */
        rc = meta_store_write(c->store, rq, xmk_commit_txn, &a);
    }
    if (rc) {
        finish(rq, txid, xp); /* if it fails, left open: recovery tries again */
        rc = meta_peer_err(rc);
    }
    meta_xbusy_del(c, txid);
    free(xp);
    return rc;
}

struct xrm_commit {
    struct meta_ctx *c;
    const struct proto_cred *cred;
    struct meta_xrm *m;
    struct meta_intent *x;
    uint64_t txid;
    uint32_t victim_uid;
};

static int xrm_commit_txn(struct meta_txn *t, void *arg)
{
    struct xrm_commit *a = arg;
    struct meta_inode dir;
    int rc = meta_inode_get_here(t, a->m->dir, &dir);
    if (rc)
        return rc == -EREMOTE ? -ENOENT : rc;
    if (!proto_cred_may_delete(a->cred, dir.mode, dir.uid, dir.gid, a->victim_uid))
        return proto_cred_may(a->cred, dir.mode, dir.uid, dir.gid, 3) ? -EPERM : -EACCES;
    uint64_t ino;
    if ((rc = meta_dentry_get(t, a->m->dir, a->m->name, &ino, NULL)))
        return rc;
    if (ino != a->m->ino)
        return -ENOENT; /* renamed over meanwhile: the caller may try again */
    if ((rc = meta_dentry_del(t, a->m->dir, a->m->name)) || (rc = meta_touch_dir(t, &dir, -1)) ||
        (rc = meta_intent_advance(t, a->txid, a->x, 2)))
        return rc;
    return meta_reply_here(t); /* recovery finishes it from here */
}

int meta_xrmdir(const struct meta_req *rq, const struct proto_cred *cred, struct meta_xrm *m)
{
    struct meta_ctx *c = rq->ctx;
    if (m->ask_owner) {
        /* Refused before any seal, as in meta_op_rmdir's walk. */
        struct proto_shard_rep r;
        int rc =
            meta_step_rec(rq, proto_ino_mdt(m->ino), PROTO_SHARD_PARENT, 0, m->ino, NULL, 0, &r);
        if (rc)
            return meta_peer_err(rc);
        if (cred->uid != r.uid)
            return -EPERM;
    }
    struct meta_intent *xp = calloc(1, sizeof(*xp));
    if (!xp)
        return -ENOMEM;
    xp->kind = XK_RMDIR;
    xp->phase = 1;
    xp->ino = m->ino;
    xp->dir = m->dir;
    xp->n = 1;
    xp->mdt[0] = (uint16_t)proto_ino_mdt(m->ino);
    uint64_t txid;
    int rc = meta_intent_begin(rq, xp, false, &txid);
    if (rc) {
        free(xp);
        return rc;
    }
    uint32_t uid = 0;
    rc = meta_seal_records(rq, txid, xp, 0, m->dstripe, &uid);
    if (!rc) {
        struct xrm_commit a = {c, cred, m, xp, txid, uid};
        if ((rc = meta_store_write(c->store, rq, xrm_commit_txn, &a)) == 0)
            xp->phase = 2;
    }
    rc = meta_peer_err(rc);
    /* Undo the seals (phase 1), or delete the records (phase 2). */
    finish(rq, txid, xp);
    meta_xbusy_del(c, txid);
    free(xp);
    return rc;
}
