/*
 * Names that make inodes (create.h). A file's inode is made on the MDT of
 * its name; a directory whose inode or shards go elsewhere is handed to
 * xdir.c once the walk and the checks are done here (META_CROSS).
 */
#include "create.h"
#include "alloc.h"
#include "dom.h"
#include "intent.h"
#include "xdir.h"

#include "../../common/log.h"
#include "../../common/util.h"
#include "../../proto/csum.h"
#include "../../proto/layout.h"
#include "../store/dlg_rec.h"
#include "../store/dom_rec.h"
#include "../store/hsm_rec.h"
#include "../store/mig_rec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
struct open_arg {
    struct meta_ctx *c;
    const struct meta_req *rq;
    const struct proto_open_req *q;
    struct proto_open_rep *r;
    uint8_t *dom;   /* the bytes sent with the reply (in rq's scratch) */
    uint32_t dom_n; /* how many (0: none) */
};

/* The bytes an open that reads takes with it (MSG_OPEN_REQ's dom_len). */
static void open_bytes(struct meta_txn *t, struct open_arg *a, const struct meta_inode *in)
{
    if ((a->q->flags & O_ACCMODE) != O_WRONLY)
        a->dom_n = meta_dom_take(t, a->rq, in, a->q->dom_len, &a->dom);
}

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
    if ((rc = meta_may(in, &q->cred, mask)))
        return rc;
    /* A file an object that changed in S3 superseded (hsm.h) is for those
     * who read the old version, by number; a write would be lost. */
    if ((in->flags & META_F_SUPERSEDED) && (mask & 2))
        return -ESTALE;
    /* A FIFO, device or socket has no data here: a mount's kernel opens
     * one itself, and a libstria client has nothing to open (as a device
     * without a driver, or a socket, answers open(2)). */
    if (!S_ISREG(in->mode) && !S_ISDIR(in->mode))
        return -ENXIO;
    if ((q->flags & O_TRUNC) && S_ISREG(in->mode)) {
        a->r->old_size = in->size;
        bool changed = meta_hsm_is_released(in);
        /* A released file's data no longer matters: it is here again. */
        if (changed && (rc = meta_hsm_truncated(t, in)))
            return rc;
        if (layout_dom_size(&in->layout) &&
            ((rc = meta_dom_truncate(t, in->ino, 0)) || (rc = meta_mig_dom_changed(t, in->ino))))
            return rc;
        if (in->size) {
            in->size = 0;
            in->mtime_ns = in->ctime_ns = meta_now_ns();
            changed = true;
        }
        /* The mount's kernel leaves O_TRUNC to us whole. */
        uint32_t drop = meta_truncate_drops(in, &q->cred);
        if (drop) {
            in->mode &= ~drop;
            in->ctime_ns = meta_now_ns();
            changed = true;
        }
        if (changed && (rc = meta_inode_put(t, in)))
            return rc;
    }
    meta_inode_attr(in, &a->r->attr);
    if (S_ISREG(in->mode)) {
        layout_copy(&a->r->layout, &in->layout);
        open_bytes(t, a, in);
    }
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
    else if ((rc = meta_valid_name(w->name)) || (rc = meta_may_add(w, &q->cred)))
        ;
    else if ((rc = meta_alloc_ino(t, ino)) == 0) {
        meta_init_inode(&in, *ino, S_IFREG | (q->mode & 07777), &q->cred, &w->din);
        /* A writer creating a file is about to write it: marking it now
         * spares the SETSIZE that would mark it before its first byte
         * lands (an unlink from anywhere must then destroy objects). */
        if ((q->flags & O_ACCMODE) != O_RDONLY)
            in.flags |= META_F_OBJECTS;
        rc = meta_new_file_layout(a->c, &w->din, q->stripe_count, q->stripe_size, q->stripe_offset,
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
    a->r->marked = (in.flags & META_F_OBJECTS) != 0;
    return 0;
}

static int open_txn(struct meta_txn *t, void *arg)
{
    struct open_arg *a = arg;
    const struct proto_open_req *q = a->q;
    char path[META_PATH_BUF];
    int rc = proto_str_copy(&q->path, path, PROTO_MAX_STR + 1);
    if (rc)
        return rc;
    uint64_t start = q->parent, ino;
    int links = META_MAX_SYMLINKS;
    a->dom_n = 0; /* a run again (a held name) starts afresh */
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
    struct open_arg a = {.c = c, .rq = rq, .q = q, .r = r};
    /* Opens that cannot change anything need no write transaction. */
    int rc = meta_run_waiting(rq, q->flags & (O_CREAT | O_TRUNC) ? META_RUN_FLAT : META_RUN_READ,
                              open_txn, &a);
    /* The CRCs go in only now, after the transaction: the reply kept
     * there for a resend (meta_reply_here) never carries the bytes. */
    if (rc == 0 && a.dom_n)
        meta_dom_send(rq, a.dom, a.dom_n, &r->dom_crcs);
    return rc;
}

struct range_arg {
    uint64_t client, lo;
    bool idle;
};

/* The client's last range becomes its previous one, a new one its last. */
static int range_txn(struct meta_txn *t, void *arg)
{
    struct range_arg *a = arg;
    struct meta_dlg d;
    int rc = meta_dlg_get(t, a->client, &d);
    if (rc == -EUCLEAN) {
        log_warn("MDT%04x: the inode ranges of client %016" PRIx64 " were damaged; they start "
                 "again",
                 meta_store_mdt(t->store), a->client);
        memset(&d, 0, sizeof(d));
    } else if (rc) {
        return rc;
    }
    if ((rc = meta_alloc_ino_range(t, META_DLG_INOS, &a->lo)))
        return rc;
    d.lo[0] = d.lo[1];
    memcpy(d.used[0], d.used[1], sizeof(d.used[0]));
    d.lo[1] = a->lo;
    memset(d.used[1], 0, sizeof(d.used[1]));
    d.idle = a->idle;
    return meta_dlg_put(t, a->client, &d);
}

int meta_op_ino_range(const struct meta_req *rq, uint64_t client, bool idle, uint64_t *lo)
{
    struct range_arg a = {client, 0, idle};
    int rc = meta_store_write(rq->ctx->store, rq, range_txn, &a);
    *lo = rc ? 0 : a.lo;
    return rc;
}

/* Mark ino used in client's ranges: 0, or -ESTALE when it is in none of
 * them or was used before. */
static int take_number(struct meta_txn *t, uint64_t client, uint64_t ino)
{
    struct meta_dlg d;
    int rc = meta_dlg_get(t, client, &d);
    if (rc)
        return rc == -EUCLEAN ? -ESTALE : rc;
    for (int k = 1; k >= 0; k--) {
        if (!d.lo[k] || ino < d.lo[k] || ino - d.lo[k] >= META_DLG_INOS)
            continue;
        uint64_t bit = ino - d.lo[k];
        uint8_t *byte = &d.used[k][bit / 8];
        if (*byte & (1u << (bit % 8)))
            return -ESTALE;
        *byte |= (uint8_t)(1u << (bit % 8));
        return meta_dlg_put(t, client, &d);
    }
    return -ESTALE;
}

/* What a create behind made (or made before), as an OPEN's reply says it. */
static void numbered_reply(const struct meta_inode *in, struct proto_open_rep *r)
{
    meta_inode_attr(in, &r->attr);
    layout_copy(&r->layout, &in->layout);
    r->created = 1;
    r->marked = (in->flags & META_F_OBJECTS) != 0;
}

int meta_create_numbered(struct meta_txn *t, struct meta_ctx *c, uint64_t client,
                         const struct proto_dom_create *mk, uint64_t ino, struct proto_open_rep *r)
{
    char name[PROTO_MAX_STR + 1];
    int rc = proto_str_copy(&mk->name, name, sizeof(name));
    if (rc)
        return rc;
    if (!name[0] || strchr(name, '/'))
        return -EINVAL; /* one name, as the client's cache decided it */
    struct walk w = {.links_left = META_MAX_SYMLINKS};
    if ((rc = meta_walk_parent(t, &mk->cred, mk->parent, name, &w)))
        return rc;
    if (w.self || w.must_dir)
        return -EEXIST;
    uint64_t had;
    struct meta_inode in;
    rc = meta_dentry_get(t, w.dir, w.name, &had, NULL);
    if (rc == 0 && had == ino) {
        /* Made before: this is the request sent again. */
        if ((rc = meta_inode_get_here(t, ino, &in)) == 0)
            numbered_reply(&in, r);
        return rc;
    }
    if (rc != -ENOENT)
        return rc ? rc : -EEXIST;
    if ((rc = meta_valid_name(w.name)) || (rc = meta_may_add(&w, &mk->cred)))
        return rc;
    /* The number is free: numbers of a range are never handed out again. */
    if (proto_ino_mdt(ino) != meta_store_mdt(t->store))
        return -ESTALE;
    if ((rc = meta_inode_get_here(t, ino, &in)) != -ENOENT)
        return rc ? rc : -ESTALE;
    meta_init_inode(&in, ino, S_IFREG | (mk->mode & 07777), &mk->cred, &w.din);
    if ((mk->flags & O_ACCMODE) != O_RDONLY)
        in.flags |= META_F_OBJECTS; /* as create_or_get */
    if ((rc = meta_new_file_layout(c, &w.din, 0, 0, -1, &in.layout)) ||
        (rc = take_number(t, client, ino)) ||
        (rc = meta_dentry_add(t, w.dir, w.name, ino, DT_REG)) || (rc = meta_inode_put(t, &in)) ||
        (rc = meta_touch_dir(t, &w.din, 0)))
        return rc;
    numbered_reply(&in, r);
    return 0;
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
        return meta_new_file_layout(a->c, dir, 0, 0, -1, &in->layout);
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
    struct walk w = {.links_left = META_MAX_SYMLINKS};
    if ((rc = meta_walk_parent(t, a->cred, a->parent, path, &w)))
        return rc;
    if (w.self)
        return -EEXIST;
    if ((rc = meta_valid_name(w.name)))
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
            layout_copy(&x->rec.layout, &w.din.layout);
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
        layout_copy(&in.layout, &w.din.layout);
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
        (rc = meta_dentry_add(t, w.dir, w.name, ino, meta_dtype(in.mode))) ||
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
    int rc = meta_run_waiting(rq, META_RUN_FLAT, mk_txn, &a);
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
    return meta_run_waiting(rq, META_RUN_FLAT, mk_txn, &a);
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
    return meta_run_waiting(rq, META_RUN_FLAT, mk_txn, &a);
}
