/*
 * The other side of XNAME (xname_step.h): holds, commits and link counts
 * a coordinator on another MDT asks of this one.
 */
#include "xname_step.h"

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
struct xname_arg {
    struct meta_ctx *c;
    const struct proto_xname_req *q;
    struct proto_xname_rep *r;
    char name[PROTO_MAX_NAME + 1];
};

/* Whether key has a record here: an APPLIED step, or a HOLD. */
static bool applied(struct meta_txn *t, uint64_t txid)
{
    MDB_val v;
    return meta_intent_get(t, txid, &v) == 0;
}

static int mark_applied(struct meta_txn *t, uint64_t txid)
{
    struct meta_intent *x = meta_intent_new(XK_APPLIED, 0, 0, 0, NULL);
    if (!x)
        return -ENOMEM;
    int rc = meta_intent_record(t, txid, x);
    free(x);
    return rc;
}

/* A hold's record is kept under its txid with the top bit set: when the
 * coordinator holds a name of its own, its intent has the plain txid. */
#define HOLD_KEY(txid) ((txid) | 1ull << 63)

/* The hold's record: its directory and name, and an empty directory it
 * sealed to replace it (victim). */
static int hold_record(struct meta_txn *t, uint64_t txid, uint64_t dir, const char *name,
                       uint64_t victim)
{
    struct meta_intent *x = meta_intent_new(XK_HOLD, 0, 0, dir, name);
    if (!x)
        return -ENOMEM;
    x->ino2 = victim;
    int rc = meta_intent_record(t, HOLD_KEY(txid), x);
    free(x);
    return rc;
}

static int unhold_txn(struct meta_txn *t, void *arg)
{
    struct xname_arg *a = arg;
    int rc = meta_intent_del(t, HOLD_KEY(a->q->txid));
    return rc == -ENOENT ? 0 : rc;
}

/* RELEASE: a directory sealed to be replaced takes names again. */
static int release_txn(struct meta_txn *t, void *arg)
{
    struct xname_arg *a = arg;
    MDB_val v;
    int rc = meta_intent_get(t, HOLD_KEY(a->q->txid), &v);
    if (rc)
        return rc == -ENOENT ? 0 : rc;
    struct meta_intent *x = malloc(sizeof(*x));
    if (!x)
        return -ENOMEM;
    struct meta_inode in;
    if (meta_intent_decode(v.mv_data, v.mv_size, x) == 0 && x->ino2 &&
        meta_inode_get(t, x->ino2, &in) == 0 && meta_sealed_by(&in, a->q->txid)) {
        meta_seal_clear(&in);
        rc = meta_inode_put(t, &in);
    }
    free(x);
    return rc ? rc : unhold_txn(t, a);
}

static int hold_txn(struct meta_txn *t, void *arg)
{
    struct xname_arg *a = arg;
    const struct proto_xname_req *q = a->q;
    struct meta_inode dir, victim;
    int rc = meta_inode_get_here(t, q->dir, &dir);
    if (rc)
        return rc == -EREMOTE ? -EXDEV : rc;
    if (!S_ISDIR(dir.mode))
        return -ENOTDIR;
    if (proto_ds_name_mdt(dir.dstripe, proto_ino_mdt(q->dir), a->name, strlen(a->name)) !=
        a->c->mdt)
        return -EXDEV; /* the client's idea of where the name lives is wrong */
    if (dir.flags & META_F_SEALED)
        return -ENOENT;
    if (!proto_cred_may(&q->cred, dir.mode, dir.uid, dir.gid, 3))
        return -EACCES;
    uint64_t ino;
    uint8_t type;
    rc = meta_dentry_get(t, q->dir, a->name, &ino, &type);
    if (rc == -ENOENT)
        return hold_record(t, q->txid, q->dir, a->name, 0); /* a new name */
    if (rc)
        return rc;
    a->r->ino = ino;
    a->r->type = type;
    if (ino == q->ino)
        return hold_record(t, q->txid, q->dir, a->name, 0); /* the same: nothing to do */
    if (q->flags & RENAME_NOREPLACE)
        return -EEXIST;
    if (type == DT_DIR && q->type != DT_DIR)
        return -EISDIR;
    if (type != DT_DIR && q->type == DT_DIR)
        return -ENOTDIR;
    rc = meta_inode_get_here(t, ino, &victim);
    if (rc && rc != -EREMOTE)
        return rc;
    /* The sticky bit: the owner of the victim, of the directory, or root.
     * A victim on another MDT has an owner this MDT cannot see. */
    uint32_t vuid = rc ? UINT32_MAX : victim.uid;
    a->r->uid = vuid;
    if (!proto_cred_may_delete(&q->cred, dir.mode, dir.uid, dir.gid, vuid))
        return -EPERM;
    if (type != DT_DIR)
        return hold_record(t, q->txid, q->dir, a->name, 0);
    /* A directory replaced by one moved here must be empty, and stay so
     * until COMMIT removes it: sealed, as rmdir seals. One with records on
     * other MDTs (striped, or its inode elsewhere) the coordinator seals on
     * every MDT (gone says so; size carries its stripe, when known here). */
    if (rc || victim.dstripe) {
        a->r->gone = 1;
        a->r->size = rc ? 0 : victim.dstripe;
        return hold_record(t, q->txid, q->dir, a->name, 0);
    }
    if ((victim.flags & META_F_SEALED) && !meta_sealed_by(&victim, q->txid))
        return -EBUSY; /* another operation is removing it */
    if ((rc = meta_dir_is_empty(t, ino)) <= 0)
        return rc ? rc : -ENOTEMPTY;
    meta_seal_set(&victim, q->txid);
    if ((rc = meta_inode_put(t, &victim)))
        return rc;
    return hold_record(t, q->txid, q->dir, a->name, ino);
}

static int commit_txn(struct meta_txn *t, void *arg)
{
    struct xname_arg *a = arg;
    const struct proto_xname_req *q = a->q;
    struct meta_inode dir;
    /* Only under its hold: once the hold is gone the name is the
     * clients' again (the rename's COMMIT came already, and the file may
     * have been unlinked since), and a repeat must not bring it back. */
    if (!applied(t, HOLD_KEY(q->txid)))
        return 0;
    int rc = meta_inode_get_here(t, q->dir, &dir);
    if (rc)
        return rc;
    uint64_t ino;
    uint8_t type;
    rc = meta_dentry_get(t, q->dir, a->name, &ino, &type);
    if (rc == 0 && ino == q->ino)
        return unhold_txn(t, a); /* the same, written before */
    /* A directory here counts in the links of this shard of its parent. */
    int delta = q->type == DT_DIR ? 1 : 0;
    if (rc == 0 && type == DT_DIR) {
        /* The empty directory HOLD sealed goes. */
        struct meta_inode v;
        if ((rc = meta_inode_get(t, ino, &v)) == 0) {
            if ((rc = meta_dir_is_empty(t, ino)) <= 0)
                return rc ? rc : -ENOTEMPTY;
            if ((rc = meta_inode_del(t, ino)) || (rc = meta_xattr_del_all(t, ino)))
                return rc;
        } else if (rc != -ENOENT) {
            return rc;
        }
        delta--;
        rc = 0;
    }
    if (rc == 0)
        rc = meta_dentry_set(t, q->dir, a->name, q->ino, q->type);
    else if (rc == -ENOENT)
        rc = meta_dentry_add(t, q->dir, a->name, q->ino, q->type);
    if (rc || (rc = meta_touch_dir(t, &dir, delta)))
        return rc;
    return unhold_txn(t, a);
}

static int link_txn(struct meta_txn *t, void *arg)
{
    struct xname_arg *a = arg;
    const struct proto_xname_req *q = a->q;
    struct meta_inode in;
    bool done = applied(t, q->txid);
    int rc;
    if (q->op == PROTO_XNAME_FORGET) {
        rc = done ? meta_intent_del(t, q->txid) : 0;
        return rc;
    }
    if (q->op == PROTO_XNAME_LINK_UNDO && !done)
        return 0; /* the add never happened */
    if (q->op != PROTO_XNAME_LINK_UNDO && done) {
        if (q->op == PROTO_XNAME_LINK_ADD && meta_inode_get(t, q->ino, &in) == 0)
            meta_inode_attr(&in, &a->r->attr);
        return 0; /* a repeat */
    }
    if ((rc = meta_inode_get(t, q->ino, &in)))
        return rc;
    if (S_ISDIR(in.mode))
        return -EPERM;
    switch (q->op) {
    case PROTO_XNAME_LINK_ADD:
        if (in.nlink >= 65000)
            return -EMLINK;
        in.nlink++;
        in.ctime_ns = meta_now_ns();
        in.flags |= META_F_REMOTE_NAMES;
        if ((rc = meta_inode_put(t, &in)))
            return rc;
        meta_inode_attr(&in, &a->r->attr);
        return mark_applied(t, q->txid);
    case PROTO_XNAME_LINK_DROP:
        if ((rc = meta_drop_link(t, &in, &a->r->destroy, &a->r->layout, &a->r->gone, &a->r->size)))
            return rc;
        a->r->ino = q->ino;
        return mark_applied(t, q->txid);
    case PROTO_XNAME_LINK_UNDO:
        if ((rc = meta_drop_link(t, &in, &a->r->destroy, &a->r->layout, &a->r->gone, &a->r->size)))
            return rc;
        return meta_intent_del(t, q->txid);
    }
    return -EINVAL;
}

int meta_op_xname(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_xname_req *q = qv;
    struct proto_xname_rep *r = rv;
    struct xname_arg *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->c = c;
    a->q = q;
    a->r = r;
    int rc = proto_str_copy(&q->name, a->name, sizeof(a->name));
    if (rc == 0 && (q->op == PROTO_XNAME_HOLD || q->op == PROTO_XNAME_COMMIT) &&
        (!a->name[0] || strchr(a->name, '/') || !strcmp(a->name, ".") || !strcmp(a->name, "..")))
        rc = -EINVAL;
    if (rc == 0) {
        switch (q->op) {
        case PROTO_XNAME_HOLD:
            /* Taken first: a change to the name that runs after this sees
             * the hold, one that ran before is in what the check reads. */
            if ((rc = meta_hold_take(c, q->txid, q->dir, a->name)) == 0 &&
                (rc = meta_store_write(c->store, rq, hold_txn, a)))
                meta_hold_drop(c, q->txid);
            break;
        case PROTO_XNAME_COMMIT:
            if ((rc = meta_store_write(c->store, rq, commit_txn, a)) == 0)
                meta_hold_drop(c, q->txid);
            break;
        case PROTO_XNAME_RELEASE:
            if ((rc = meta_store_write(c->store, rq, release_txn, a)) == 0)
                meta_hold_drop(c, q->txid);
            break;
        case PROTO_XNAME_LINK_ADD:
        case PROTO_XNAME_LINK_DROP:
        case PROTO_XNAME_LINK_UNDO:
        case PROTO_XNAME_FORGET:
            rc = meta_store_write(c->store, rq, link_txn, a);
            break;
        default:
            rc = -EINVAL;
        }
    }
    free(a);
    return rc;
}
