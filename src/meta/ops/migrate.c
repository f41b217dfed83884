/*
 * Online migration's MDT side (migrate.h).
 *
 * BEGIN writes the record with both layouts: the new one in the next
 * generation of objects, so the copy never writes an object the file
 * still reads. SWAP puts the new layout into the inode in the same
 * transaction that marks the record swapped, and only if the inode's
 * layout is still the one BEGIN saw. Every step checks the record's id:
 * a migrator that was taken over (stale) fails at its next step.
 *
 * A file's Data-on-MDT bytes are one record on either side (dom_rec.h):
 * what both layouts keep there stays, the copy writes only the bytes the
 * new component holds past the old one's end, and the record is cut to
 * the component of the layout the file keeps (SWAP: the new one; ABORT:
 * the old one). Nothing fences the record: a change to it while the copy
 * runs is noted in the migration record (dom.c, attrs.c, create.c), and
 * SWAP then leaves the file as it is for the migrator to copy again.
 */
#include "migrate.h"

#include "../../common/util.h"
#include "../../proto/layout.h"
#include "../store/dom_rec.h"
#include "../store/mig_rec.h"
#include "alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The new layout from the template: what it leaves open is the file
 * system's, components below size instantiated, all in generation gen. */
static int new_layout(struct meta_ctx *c, const struct layout *tmpl, uint64_t size, uint16_t gen,
                      struct layout *out)
{
    int rc = meta_layout_from_template(c, NULL, tmpl, out);
    if (!rc && size > 1)
        rc = meta_instantiate(c, out, size);
    for (uint16_t i = 0; !rc && i < out->ncomp; i++)
        layout_comp_set_gen(&out->comp[i], gen);
    return rc;
}

static int begin(struct meta_txn *t, struct meta_ino_arg *a, struct meta_inode *in,
                 struct proto_migrate_rep *r)
{
    const struct proto_migrate_req *q = a->q;
    if (layout_released(&in->layout))
        return -EBUSY; /* its data is in S3 only: restore it first */
    if (in->flags & META_F_SUPERSEDED)
        return -ESTALE;
    struct meta_mig m;
    int rc = meta_mig_get(t, in->ino, &m);
    int64_t now = meta_now_ns();
    if (rc == 0) {
        /* Alive: busy. Dead: the caller cleans up after it first. */
        if (!meta_mig_stale(&m, now, a->c->mig_stale_ms))
            return -EBUSY;
        r->id = m.id;
        r->state = m.state;
        r->stale = 1;
        layout_copy(&r->old, &m.old);
        layout_copy(&r->layout, &m.layout);
        return 0;
    }
    if (rc != -ENOENT && rc != -EUCLEAN)
        return rc;
    uint16_t gen = 0;
    for (uint16_t i = 0; i < in->layout.ncomp; i++)
        gen = MAX(gen, layout_comp_gen(&in->layout.comp[i]));
    m = (struct meta_mig){.id = util_mix64((uint64_t)now ^ in->ino) | 1,
                          .state = MIGRATE_COPYING,
                          .touched_ns = now,
                          .dom_changed = 0};
    layout_copy(&m.old, &in->layout);
    if ((rc = new_layout(a->c, &q->layout, in->size,
                         (uint16_t)((gen + 1) % ((LAYOUT_GEN_MASK >> LAYOUT_GEN_SHIFT) + 1)),
                         &m.layout)))
        return rc;
    if ((rc = meta_mig_put(t, in->ino, &m)))
        return rc;
    /* Its fences on the OSTs go with its objects, which the unlink of
     * the file destroys only if they may exist: so they may, even for a
     * file never written. */
    if (!(in->flags & META_F_OBJECTS)) {
        in->flags |= META_F_OBJECTS;
        if ((rc = meta_inode_put(t, in)))
            return rc;
    }
    r->id = m.id;
    r->state = m.state;
    layout_copy(&r->old, &m.old);
    layout_copy(&r->layout, &m.layout);
    return 0;
}

static int migrate_txn(struct meta_txn *t, void *arg)
{
    struct meta_ino_arg *a = arg;
    const struct proto_migrate_req *q = a->q;
    struct proto_migrate_rep *r = a->r;
    struct meta_inode in;
    int rc = meta_inode_get_here(t, q->ino, &in);
    if (rc)
        return rc;
    if (!S_ISREG(in.mode))
        return -EINVAL;
    bool owner = q->cred.uid == 0 || q->cred.uid == in.uid;
    r->size = in.size;
    r->stale_ms = a->c->mig_stale_ms;
    if (q->op == MIGRATE_BEGIN)
        return owner ? begin(t, a, &in, r) : -EPERM;
    struct meta_mig m;
    if ((rc = meta_mig_get(t, q->ino, &m)))
        return rc;
    int64_t now = meta_now_ns();
    r->id = m.id;
    r->state = m.state;
    r->stale = meta_mig_stale(&m, now, a->c->mig_stale_ms);
    layout_copy(&r->old, &m.old);
    layout_copy(&r->layout, &m.layout);
    /* A reader may see it; a writer waiting on its fences may clean up
     * after a dead migrator; the rest is its owner's. */
    if (q->op == MIGRATE_STATE)
        return meta_may(&in, &q->cred, 4);
    if (!owner && !(r->stale && (q->op == MIGRATE_ABORT || q->op == MIGRATE_DONE) &&
                    meta_may(&in, &q->cred, 2) == 0))
        return -EPERM;
    if (q->id != m.id)
        return -ESTALE; /* taken over */
    switch (q->op) {
    case MIGRATE_PROGRESS:
        if (m.state != MIGRATE_COPYING)
            return -EINVAL;
        m.touched_ns = now;
        return meta_mig_put(t, q->ino, &m);
    case MIGRATE_SWAP:
        if (m.state == MIGRATE_SWAPPED)
            return 0;
        /* A component instantiated meanwhile: data may have gone there. */
        if (!layout_equal(&in.layout, &m.old))
            return -ESTALE;
        if (m.dom_changed) {
            /* The copy may have missed it: again (state COPYING). */
            m.dom_changed = 0;
            m.touched_ns = now;
            return meta_mig_put(t, q->ino, &m);
        }
        /* The record keeps what the new layout's component holds. */
        if ((rc = meta_dom_truncate(t, q->ino, layout_dom_size(&m.layout))))
            return rc;
        layout_copy(&in.layout, &m.layout);
        in.ctime_ns = now;
        m.state = MIGRATE_SWAPPED;
        m.touched_ns = now;
        r->state = m.state;
        if ((rc = meta_inode_put(t, &in)))
            return rc;
        return meta_mig_put(t, q->ino, &m);
    case MIGRATE_DONE:
        if (m.state != MIGRATE_SWAPPED)
            return -EINVAL;
        return meta_mig_del(t, q->ino);
    case MIGRATE_ABORT:
        if (m.state != MIGRATE_COPYING)
            return -EINVAL; /* swapped: only DONE ends it */
        /* What the copy wrote past the old component's end goes. */
        if ((rc = meta_dom_truncate(t, q->ino, layout_dom_size(&m.old))))
            return rc;
        return meta_mig_del(t, q->ino);
    default:
        return -EINVAL;
    }
}

int meta_op_migrate(const struct meta_req *rq, const void *qv, void *rv)
{
    const struct proto_migrate_req *q = qv;
    struct meta_ino_arg a = {rq->ctx, qv, rv, NULL, 0, 0};
    if (q->op < MIGRATE_BEGIN || q->op > MIGRATE_STATE)
        return -EINVAL;
    if (q->op == MIGRATE_BEGIN && layout_validate(&q->layout))
        return -EINVAL;
    return meta_run_waiting(rq, q->op == MIGRATE_STATE ? META_RUN_READ : META_RUN_WRITE,
                            migrate_txn, &a);
}
