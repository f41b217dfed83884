/*
 * Operations on names that span MDTs (docs/architecture.md, "Cross-MDT
 * operations"): rename of a file between MDTs, unlink of a name whose
 * inode is on another MDT, and a hard link to another MDT's inode. They run
 * on the intents of xmdt.c; the steps they send are XNAME requests.
 *
 * rename (the MDT of the source name coordinates; B holds the target):
 *   phase 1: intent; B HOLDs the target name (checks it, keeps every other
 *            change off it, says which inode it holds). Recovery RELEASEs.
 *   commit:  the source name goes here, with the victim's link when its
 *            inode is here, and the intent moves to phase 2.
 *   phase 2: B COMMITs (the name now names the file), the victim's MDT drops
 *            its link once (LINK_DROP). Recovery repeats both.
 * unlink:    the name goes here with an intent in phase 2; the inode's MDT
 *            drops the link once. Recovery repeats the drop.
 * link:      phase 1: the inode's MDT adds a link once (LINK_ADD); commit:
 *            the name is added here. Recovery undoes the add (LINK_UNDO).
 *
 * "Once": the MDT that adds or drops a link for txid records it (an
 * APPLIED record under txid, in the same transaction), so a repeat does
 * nothing; FORGET removes the record when the operation is over.
 *
 * A hold is kept in memory, where every change to a name checks it, and
 * recorded in the MDT's intents (kind HOLD) in the transaction that takes
 * it, so a restarted MDT still keeps changes off the name until the
 * coordinator's COMMIT or RELEASE arrives: a rename already acknowledged
 * must not lose its target name to a create in between.
 */
#include "../../common/log.h"
#include "xname.h"
#include "xname_step.h"

#include <dirent.h>
#include <errno.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HOLD_TRIES 400 /* x 5 ms: how long a coordinator waits for a held name */

/* One XNAME step on MDT mdt: this one's own handler, or a peer's. */
static int xstep(const struct meta_req *rq, uint32_t mdt, uint8_t op, uint64_t txid, uint64_t dir,
                 const char *name, uint64_t ino, uint8_t type, uint32_t flags,
                 const struct proto_cred *cred, struct proto_xname_rep *r)
{
    struct meta_ctx *c = rq->ctx;
    struct proto_xname_req q;
    memset(&q, 0, sizeof(q));
    if (cred)
        q.cred = *cred;
    q.txid = txid;
    q.op = op;
    q.dir = dir;
    q.name = proto_str_c(name ? name : "");
    q.ino = ino;
    q.type = type;
    q.flags = flags;
    struct proto_xname_rep *dummy = NULL;
    if (!r && !(r = dummy = malloc(sizeof(*r))))
        return -ENOMEM;
    memset(r, 0, sizeof(*r));
    int rc;
    if (mdt == c->mdt)
        rc = meta_op_xname(rq, &q, r);
    else if (meta_peer_err(rc = c->xpeer ? c->xpeer(c->peer_arg, mdt, &q, r) : -EHOSTUNREACH) ==
             -EIO)
        meta_peer_failed = (int32_t)mdt; /* not an answer such as ENOENT */
    free(dummy);
    return rc;
}

static int alloc_txn(struct meta_txn *t, void *arg)
{
    return meta_alloc_ino(t, arg);
}

/* Where the records of a replaced directory start in x->mdt (x->n: none). */
static uint16_t victims(const struct meta_intent *x)
{
    return (x->flags & XF_VDIR) ? x->vfirst : x->n;
}

/* Phase 2 of a rename (also recovery's): the target's MDT points the name
 * at the file, the victim's MDT drops its link. out: what went, if known. */
static int rename_forward(const struct meta_req *rq, uint64_t txid, const struct meta_intent *x,
                          struct proto_rename_rep *out)
{
    struct meta_ctx *c = rq->ctx;
    uint32_t b = x->mdt[0];
    int rc =
        xstep(rq, b, PROTO_XNAME_COMMIT, txid, x->dir, x->name, x->ino, x->type, 0, NULL, NULL);
    if (rc)
        return rc;
    bool remote_victim = x->ino2 && !(x->flags & XF_VDIR) && x->mdt[1] != c->mdt;
    if (remote_victim) {
        struct proto_xname_rep *r = calloc(1, sizeof(*r));
        if (!r)
            return -ENOMEM;
        rc = xstep(rq, x->mdt[1], PROTO_XNAME_LINK_DROP, txid, 0, NULL, x->ino2, 0, 0, NULL, r);
        if (rc == 0 && out && r->gone) {
            out->gone = 1;
            out->destroy = r->destroy;
            out->layout = r->layout;
            out->size = r->size;
        }
        free(r);
        if (rc == -ENOENT)
            rc = 0; /* the victim is gone already, as in unlink_forward */
        if (rc)
            return rc;
    }
    /* A replaced directory's records on other MDTs go (sealed and empty). */
    for (uint16_t i = victims(x); i < x->n; i++)
        if ((rc = meta_shard_step(rq, x->mdt[i], PROTO_SHARD_DEL, txid, x->ino2, 0, NULL)) &&
            rc != -ENOENT)
            return rc;
    /* The moved directory's ".." on every MDT that has a record of it. */
    for (uint16_t i = 2; (x->flags & XF_REPARENT) && i < victims(x); i++)
        if ((rc = meta_shard_step(rq, x->mdt[i], PROTO_SHARD_SETPARENT, txid, x->ino, x->dir,
                                  NULL)) &&
            rc != -ENOENT)
            return rc;
    if ((rc = meta_intent_end(rq, txid)))
        return rc;
    if (remote_victim)
        xstep(rq, x->mdt[1], PROTO_XNAME_FORGET, txid, 0, NULL, 0, 0, 0, NULL, NULL);
    if (x->flags & XF_LOCKED)
        meta_shard_step(rq, 0, PROTO_SHARD_UNLOCK, txid, 0, 0, NULL);
    return 0;
}

/* A directory the rename replaces has records on other MDTs: seal each (it
 * must be empty there, and stays so), noting them in the intent so that
 * recovery unseals them (phase 1) or deletes them (phase 2). */
static int seal_victim(const struct meta_req *rq, uint64_t txid, struct meta_intent *x,
                       uint64_t ino, uint64_t dstripe)
{
    x->ino2 = ino;
    x->flags |= XF_VDIR; /* a directory: no link to drop, records to delete */
    x->vfirst = x->n;
    x->mdt[x->n++] = (uint16_t)proto_ino_mdt(ino);
    int rc = meta_intent_rewrite(rq, txid, x);
    return rc ? rc : meta_seal_records(rq, txid, x, x->vfirst, dstripe, NULL);
}

/* A directory moves to another parent: take the rename lock, then make
 * sure it is not moving below itself, walking up from its new parent (the
 * lock keeps every other such move out meanwhile). x learns the MDTs that
 * hold a record of the directory, whose ".." changes. */
static int lock_and_check(const struct meta_req *rq, uint64_t txid, const struct meta_xmv *m,
                          struct meta_intent *x)
{
    int rc;
    for (int i = 0;; i++) {
        rc = meta_shard_step(rq, 0, PROTO_SHARD_LOCK, txid, 0, 0, NULL);
        if (rc != -EBUSY || i == 2 * HOLD_TRIES)
            break;
        usleep(5000);
    }
    if (rc)
        return rc;
    struct proto_shard_rep r;
    uint64_t cur = m->ddir;
    for (int depth = 0;; depth++) {
        if (cur == m->sino)
            return -EINVAL; /* into its own subtree */
        if (cur == PROTO_ROOT_INO)
            break;
        if (depth == 4096)
            return -ELOOP;
        if ((rc = meta_shard_step(rq, proto_ino_mdt(cur), PROTO_SHARD_PARENT, txid, cur, 0, &r)))
            return rc;
        cur = r.ino;
    }
    uint32_t owner = proto_ino_mdt(m->sino);
    if ((rc = meta_shard_step(rq, owner, PROTO_SHARD_PARENT, txid, m->sino, 0, &r)))
        return rc;
    uint32_t count = proto_ds_count(r.dstripe);
    for (uint32_t k = 0; k < count && x->n < X_MAX_MDTS; k++)
        x->mdt[x->n++] = (uint16_t)(r.dstripe ? proto_ds_shard_mdt(r.dstripe, k) : owner);
    x->flags |= XF_REPARENT;
    return 0;
}

struct xmv_commit {
    struct meta_ctx *c;
    const struct proto_cred *cred;
    const struct meta_xmv *m;
    struct meta_intent *x;
    uint64_t txid;
    struct proto_rename_rep *out;
};

static int xmv_commit_txn(struct meta_txn *t, void *arg)
{
    struct xmv_commit *a = arg;
    const struct meta_xmv *m = a->m;
    struct meta_inode sdir, in;
    uint64_t ino;
    int rc = meta_inode_get_here(t, m->sdir, &sdir);
    if (rc)
        return rc == -EREMOTE ? -ENOENT : rc;
    if ((rc = meta_dentry_get(t, m->sdir, m->sname, &ino, NULL)))
        return rc;
    if (ino != m->sino)
        return -ENOENT; /* changed meanwhile: the caller may try again */
    rc = meta_inode_get_here(t, m->sino, &in);
    if (rc && rc != -EREMOTE)
        return rc;
    bool src_here = rc == 0;
    uint32_t suid = src_here ? in.uid : UINT32_MAX;
    if (!proto_cred_may_delete(a->cred, sdir.mode, sdir.uid, sdir.gid, suid))
        return proto_cred_may(a->cred, sdir.mode, sdir.uid, sdir.gid, 3) ? -EPERM : -EACCES;
    /* Moving a directory to another parent rewrites its "..": that needs
     * write permission on it (checked here when its inode is). */
    if (m->stype == DT_DIR && m->sdir != m->ddir && src_here &&
        !proto_cred_may(a->cred, in.mode, in.uid, in.gid, 2))
        return -EACCES;
    if ((rc = meta_dentry_del(t, m->sdir, m->sname)) ||
        (rc = meta_touch_dir(t, &sdir, m->stype == DT_DIR ? -1 : 0)))
        return rc;
    /* The target name follows in COMMIT, here or on its own MDT. */
    if (a->x->ino2 && !(a->x->flags & XF_VDIR) && a->x->mdt[1] == a->c->mdt) {
        /* The victim's inode is here: its link goes in this transaction. */
        struct meta_inode v;
        if ((rc = meta_inode_get(t, a->x->ino2, &v)) == 0)
            rc = meta_drop_link(t, &v, &a->out->destroy, &a->out->layout, &a->out->gone,
                                &a->out->size);
        if (rc && rc != -ENOENT)
            return rc;
    }
    if (rc == -ENOENT)
        rc = 0; /* the victim went meanwhile */
    if (!rc && src_here && !(rc = meta_inode_get(t, m->sino, &in))) {
        in.ctime_ns = meta_now_ns(); /* a rename changes the inode's ctime, as Linux */
        if (a->x->mdt[0] != a->c->mdt)
            in.flags |= META_F_REMOTE_NAMES;
        rc = meta_inode_put(t, &in);
    }
    if (rc)
        return rc;
    if ((rc = meta_intent_advance(t, a->txid, a->x, 2)))
        return rc;
    return meta_reply_here(t); /* the rename is made; recovery finishes it */
}

int meta_xrename(const struct meta_req *rq, const struct proto_cred *cred, struct meta_xmv *m,
                 struct proto_rename_rep *out)
{
    struct meta_ctx *c = rq->ctx;
    struct meta_intent *x = meta_intent_new(XK_RENAME, 1, m->sino, m->ddir, m->dname);
    if (!x)
        return -ENOMEM;
    x->type = m->stype;
    x->n = 2; /* mdt[1]: the replaced file's MDT, once known */
    x->mdt[0] = (uint16_t)m->dmdt;
    x->flags = m->lock ? XF_LOCKED : 0;
    uint64_t txid;
    int rc = meta_intent_begin(rq, x, false, &txid);
    if (rc) {
        free(x);
        return rc;
    }
    if (m->lock && (rc = lock_and_check(rq, txid, m, x)) == 0)
        rc = meta_intent_rewrite(rq, txid, x);
    struct proto_xname_rep *h = rc ? NULL : calloc(1, sizeof(*h));
    rc = rc ? rc : h ? 0 : -ENOMEM;
    for (int i = 0; rc == 0 && i < HOLD_TRIES; i++) {
        rc = xstep(rq, m->dmdt, PROTO_XNAME_HOLD, txid, m->ddir, m->dname, m->sino, m->stype,
                   m->flags, cred, h);
        if (rc != -EBUSY)
            break;
        rc = 0;
        usleep(5000); /* another rename holds the name for a moment */
        if (i == HOLD_TRIES - 1)
            rc = -EBUSY;
    }
    bool same = rc == 0 && h->ino == m->sino;
    if (rc == 0 && !same && h->ino && h->type != DT_DIR) {
        /* A replaced file loses a link on its MDT; a replaced (empty)
         * directory goes in the target MDT's COMMIT. */
        x->ino2 = h->ino;
        x->mdt[1] = (uint16_t)proto_ino_mdt(h->ino);
    }
    if (rc == 0 && !same && h->ino && h->type == DT_DIR && h->gone)
        rc = seal_victim(rq, txid, x, h->ino, h->size);
    free(h);
    if (rc == 0 && !same) {
        struct xmv_commit a = {c, cred, m, x, txid, out};
        out->replaced = x->ino2; /* the reply, kept by the commit */
        if ((rc = meta_store_write(c->store, rq, xmv_commit_txn, &a)) == 0) {
            x->phase = 2;
            /* Phase 2: an unreachable peer leaves the intent to recovery;
             * the rename has happened all the same. */
            int frc = rename_forward(rq, txid, x, out);
            if (frc)
                log_warn("MDT%04x: rename %llx: finishing later: %s", c->mdt,
                         (unsigned long long)txid, log_err(frc));
        }
    }
    if (x->phase == 1)
        meta_xname_finish(rq, txid, x, true); /* nothing happened: undo the hold, the lock */
    meta_xbusy_del(c, txid);
    free(x);
    return meta_peer_err(rc);
}

struct xunlink_commit {
    const struct proto_cred *cred;
    uint64_t dir, ino, txid;
    const char *name;
    struct meta_intent *x;
};

static int xunlink_txn(struct meta_txn *t, void *arg)
{
    struct xunlink_commit *a = arg;
    struct meta_inode dir;
    uint64_t ino;
    int rc = meta_inode_get_here(t, a->dir, &dir);
    if (rc)
        return rc == -EREMOTE ? -ENOENT : rc;
    if ((rc = meta_dentry_get(t, a->dir, a->name, &ino, NULL)))
        return rc;
    if (ino != a->ino)
        return -ENOENT;
    /* The sticky bit needs the file's owner, which is on its MDT. */
    if (!proto_cred_may_delete(a->cred, dir.mode, dir.uid, dir.gid, UINT32_MAX))
        return proto_cred_may(a->cred, dir.mode, dir.uid, dir.gid, 3) ? -EPERM : -EACCES;
    if ((rc = meta_dentry_del(t, a->dir, a->name)) || (rc = meta_touch_dir(t, &dir, 0)))
        return rc;
    if ((rc = meta_intent_record(t, a->txid, a->x)))
        return rc;
    return meta_reply_here(t); /* the name is gone; recovery drops the link */
}

/* Drop the link on the inode's MDT, end the intent, forget the step. */
static int unlink_forward(const struct meta_req *rq, uint64_t txid, const struct meta_intent *x,
                          struct proto_unlink_rep *out)
{
    struct proto_xname_rep *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    int rc = xstep(rq, x->mdt[0], PROTO_XNAME_LINK_DROP, txid, 0, NULL, x->ino, 0, 0, NULL, r);
    if (rc == 0 && out) {
        out->gone = r->gone;
        out->destroy = r->destroy;
        out->layout = r->layout;
        out->size = r->size;
    }
    free(r);
    if (rc == -ENOENT)
        rc = 0; /* the inode is gone already */
    if (rc || (rc = meta_intent_end(rq, txid)))
        return rc;
    xstep(rq, x->mdt[0], PROTO_XNAME_FORGET, txid, 0, NULL, 0, 0, 0, NULL, NULL);
    return 0;
}

int meta_xunlink(const struct meta_req *rq, const struct proto_cred *cred, uint64_t dir,
                 const char *name, uint64_t ino, struct proto_unlink_rep *out)
{
    struct meta_ctx *c = rq->ctx;
    struct meta_intent *x = meta_intent_new(XK_UNLINK, 2, ino, dir, name);
    if (!x)
        return -ENOMEM;
    x->n = 1;
    x->mdt[0] = (uint16_t)proto_ino_mdt(ino);
    uint64_t txid;
    int rc = meta_store_write(c->store, rq, alloc_txn, &txid);
    if (rc == 0 && !meta_xbusy_add(c, txid)) {
        rc = -ENOMEM; /* unmarked, recovery could run its intent beside it */
    } else if (rc == 0) {
        struct xunlink_commit a = {cred, dir, ino, txid, name, x};
        out->ino = ino; /* the reply, kept by the commit */
        if ((rc = meta_store_write(c->store, rq, xunlink_txn, &a)) == 0) {
            int frc = unlink_forward(rq, txid, x, out);
            if (frc)
                log_warn("MDT%04x: unlink %llx: the link of inode %llx goes later: %s", c->mdt,
                         (unsigned long long)txid, (unsigned long long)ino, log_err(frc));
        }
        meta_xbusy_del(c, txid);
    }
    free(x);
    return rc;
}

struct xlink_commit {
    struct meta_ctx *c;
    const struct proto_cred *cred;
    uint64_t dir, ino, txid;
    const char *name;
    uint8_t type;
};

static int xlink_txn(struct meta_txn *t, void *arg)
{
    struct xlink_commit *a = arg;
    struct walk w = {.dir = a->dir};
    uint64_t old;
    int rc = meta_inode_get_here(t, a->dir, &w.din);
    if (rc)
        return rc == -EREMOTE ? -ENOENT : rc;
    if ((rc = meta_may_add(&w, a->cred)))
        return rc;
    if (meta_name_held(a->c, a->dir, a->name, 0))
        return -EBUSY;
    if ((rc = meta_dentry_get(t, a->dir, a->name, &old, NULL)) != -ENOENT)
        return rc ? rc : -EEXIST;
    if ((rc = meta_dentry_add(t, a->dir, a->name, a->ino, a->type)) ||
        (rc = meta_touch_dir(t, &w.din, 0)))
        return rc;
    if ((rc = meta_intent_del(t, a->txid)))
        return rc;
    return meta_reply_here(t);
}

int meta_xlink(const struct meta_req *rq, const struct proto_cred *cred, uint64_t ino, uint64_t dir,
               const char *name, struct proto_link_rep *out)
{
    struct meta_ctx *c = rq->ctx;
    struct meta_intent *x = meta_intent_new(XK_LINK, 1, ino, dir, name);
    struct proto_xname_rep *r = calloc(1, sizeof(*r));
    if (!x || !r) {
        free(x);
        free(r);
        return -ENOMEM;
    }
    x->n = 1;
    x->mdt[0] = (uint16_t)proto_ino_mdt(ino);
    uint64_t txid;
    int rc = meta_intent_begin(rq, x, false, &txid);
    if (rc == 0) {
        rc = xstep(rq, x->mdt[0], PROTO_XNAME_LINK_ADD, txid, 0, NULL, ino, 0, 0, NULL, r);
        if (rc == 0) {
            struct xlink_commit a = {
                c, cred, dir, ino, txid, name, (uint8_t)(IFTODT(r->attr.mode))};
            out->attr = r->attr; /* the reply, kept by the commit */
            rc = meta_store_write(c->store, rq, xlink_txn, &a);
        }
        if (rc == 0) {
            xstep(rq, x->mdt[0], PROTO_XNAME_FORGET, txid, 0, NULL, 0, 0, 0, NULL, NULL);
        } else {
            meta_xname_finish(rq, txid, x, false); /* undone, now or by recovery */
        }
        meta_xbusy_del(c, txid);
    }
    free(r);
    free(x);
    return meta_peer_err(rc);
}

int meta_xname_finish(const struct meta_req *rq, uint64_t txid, struct meta_intent *x, bool quiet)
{
    struct meta_ctx *c = rq->ctx;
    int rc = 0;
    switch (x->kind) {
    case XK_RENAME:
        if (x->phase == 2) {
            rc = rename_forward(rq, txid, x, NULL);
            break;
        }
        for (uint16_t i = victims(x); i < x->n && rc == 0; i++)
            if ((rc = meta_shard_step(rq, x->mdt[i], PROTO_SHARD_UNSEAL, txid, x->ino2, 0, NULL)) ==
                -ENOENT)
                rc = 0;
        if (!rc &&
            !(rc = xstep(rq, x->mdt[0], PROTO_XNAME_RELEASE, txid, 0, NULL, 0, 0, 0, NULL, NULL)) &&
            !(rc = meta_intent_end(rq, txid)) && (x->flags & XF_LOCKED))
            meta_shard_step(rq, 0, PROTO_SHARD_UNLOCK, txid, 0, 0, NULL);
        break;
    case XK_UNLINK:
        rc = unlink_forward(rq, txid, x, NULL);
        break;
    case XK_LINK:
        rc = xstep(rq, x->mdt[0], PROTO_XNAME_LINK_UNDO, txid, 0, NULL, x->ino, 0, 0, NULL, NULL);
        if (rc == -ENOENT)
            rc = 0;
        if (!rc && !(rc = meta_intent_end(rq, txid)))
            xstep(rq, x->mdt[0], PROTO_XNAME_FORGET, txid, 0, NULL, 0, 0, 0, NULL, NULL);
        break;
    default:
        rc = -EINVAL;
    }
    if (rc)
        log_msg(quiet ? LOG_DEBUG : LOG_WARN, "MDT%04x: cross-MDT %s %llx left open: %s", c->mdt,
                meta_intent_kind(x->kind), (unsigned long long)txid, log_err(rc));
    return rc;
}
