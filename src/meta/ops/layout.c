/*
 * Layouts (layout.h): getstripe, setstripe, setdirstripe.
 */
#include "layout.h"
#include "alloc.h"
#include "intent.h"
#include "recover.h"

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
static int getstripe_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
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
        layout_copy(&r->layout, &in.layout);
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
    struct meta_ino_arg a = {c, q, r, NULL, 0, 0};
    return meta_store_read(c->store, rq, getstripe_txn, &a);
}

static int setdirstripe_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
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
    return rc2 ? rc2 : meta_xsync_note(a->c, t, &in, 0, &a->xsync);
}

int meta_op_setdirstripe(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    const struct proto_setdirstripe_req *q = qv;
    struct proto_setdirstripe_rep *r = rv;
    struct meta_ino_arg a = {c, q, r, NULL, 0, 0};
    int rc = meta_store_write(c->store, rq, setdirstripe_txn, &a);
    return meta_xsync_after(c, rc, a.xsync);
}

/* A template is a valid layout of pending components, each of a known
 * type, whose first OST (when asked for) is a number. */
static int check_template(const struct layout *l)
{
    for (uint16_t i = 0; i < l->ncomp; i++)
        if (!layout_comp_pending(&l->comp[i]) || (l->comp[i].type & LAYOUT_F_RELEASED))
            return -EINVAL;
    return layout_validate(l);
}

static int setstripe_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
    const struct proto_setstripe_req *q = a->q;
    struct proto_setstripe_rep *r = a->r;
    struct meta_inode in;
    int rc = meta_inode_get(t, q->ino, &in);
    if (rc)
        return rc;
    if ((rc = meta_check_stripe_args(q->count, q->size, q->offset)))
        return rc;
    const struct layout *tmpl = &q->comps;
    if (tmpl->ncomp && (rc = check_template(tmpl)))
        return rc;
    if (S_ISDIR(in.mode)) {
        if (q->cred.uid != 0 && q->cred.uid != in.uid)
            return -EPERM;
        in.dcount = q->count;
        in.dsize = q->size;
        in.doffset = q->offset;
        layout_copy(&in.layout, tmpl);
        in.ctime_ns = meta_now_ns();
        if ((rc = meta_inode_put(t, &in)))
            return rc;
        return meta_xsync_note(a->c, t, &in, 0, &a->xsync);
    }
    if (!S_ISREG(in.mode))
        return -EINVAL;
    if ((rc = meta_may(&in, &q->cred, 2)))
        return rc;
    /* Data already placed by the old layout would become unreachable. */
    if (in.size || (in.flags & META_F_OBJECTS))
        return -EEXIST;
    if (tmpl->ncomp) {
        rc = meta_layout_from_template(a->c, NULL, tmpl, &in.layout);
    } else {
        int32_t count = q->count ? q->count : a->c->default_count;
        uint32_t size = q->size ? q->size : in.layout.comp[0].stripe_size;
        rc = meta_alloc_layout(a->c, count, size, q->offset, NULL, &in.layout);
    }
    if (rc)
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
    struct meta_ino_arg a = {c, q, r, NULL, 0, 0};
    /* run_waiting: a pool this MDT does not know yet is waited for. */
    int rc = meta_run_waiting(rq, META_RUN_WRITE, setstripe_txn, &a);
    return meta_xsync_after(c, rc, a.xsync);
}

static int intent_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
    const struct proto_layout_intent_req *q = a->q;
    struct proto_layout_intent_rep *r = a->r;
    struct meta_inode in;
    int rc = meta_inode_get_here(t, q->ino, &in);
    if (rc)
        return rc;
    if (!S_ISREG(in.mode))
        return -EINVAL;
    /* A writer's, whose open checked its right to write (a file created
     * 0444 is written through the descriptor that made it, as SETSIZE
     * trusts); or a reader's bringing a released file back. A superseded
     * file takes no more data (it would go at its reaping), but its
     * readers may bring the version they opened back. */
    if ((in.flags & META_F_SUPERSEDED) && !layout_released(&in.layout))
        return -ESTALE;
    if (layout_released(&in.layout) && (rc = meta_may(&in, &q->cred, 4)))
        return rc;
    if (layout_first_pending(&in.layout, q->end) >= 0) {
        if ((rc = meta_instantiate(a->c, &in.layout, q->end)) || (rc = meta_inode_put(t, &in)))
            return rc;
    }
    layout_copy(&r->layout, &in.layout);
    return 0;
}

int meta_op_layout_intent(const struct meta_req *rq, const void *qv, void *rv)
{
    struct meta_ctx *c = rq->ctx;
    struct meta_ino_arg a = {c, qv, rv, NULL, 0, 0};
    return meta_run_waiting(rq, META_RUN_WRITE, intent_txn, &a);
}
