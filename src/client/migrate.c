/*
 * Online migration of a file's data into a new layout (stria.h's
 * stria_migrate; docs/architecture.md, "Migration").
 *
 *   1. MIGRATE BEGIN: the MDT records the migration and the new layout,
 *      whose objects are of the next generation.
 *   2. The write stamp of every old object (FENCE STAMP), then a copy of
 *      the file up to its end (the MDT's size, or further where objects
 *      hold bytes a writer has not reported yet), old objects to new.
 *   3. FENCE SET on every old object: writes to them now answer -ESTALE
 *      (their writers wait, io.c's relayout) and the stamps come back.
 *      A stamp that moved: the copy may have missed a write: the fences
 *      go, the new objects are emptied, and the copy starts over (three
 *      times, then the file is left as it was).
 *   4. MIGRATE SWAP: the file's layout is the new one, atomically.
 *   5. FENCE DEAD on the old objects (reads of them answer -ESTALE too),
 *      their destruction, MIGRATE DONE.
 * A Data-on-MDT component keeps its bytes in the MDT's one record of the
 * file on both sides: the copy skips what both layouts keep there, and
 * empties what it writes past the old component's end before each copy.
 * Nothing fences the record; the MDT notes changes to it, and its SWAP
 * then answers that the copy must be made again (state still COPYING).
 * A migrator that dies leaves a record that goes stale; the next
 * migration of the file, or a writer waiting on its fences, cleans up
 * after it (cl_migrate_recover): before the swap it undoes the migration,
 * after it finishes it.
 *
 * The dead fences stay as long as the file (storage/fence.c says why):
 * whoever destroys its objects asks every OST to forget them
 * (cl_migrate_forget), since no one remembers which OSTs its earlier
 * layouts had.
 */
#include "conn.h"
#include "inode.h"
#include "io.h"
#include "mdcache.h"
#include "migrate.h"
#include "route.h"

#include "../common/log.h"
#include "../common/util.h"
#include "../proto/layout.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COPY_CHUNK    (8u << 20)
#define COPY_TRIES    3
#define FORGET_WINDOW 32

/* When the migration last told the MDT it lives, and how often it must:
 * a sixth of the MDT's stale time (its replies' stale_ms), so that the
 * copy may stall for most of it and still be the file's migration. */
struct pulse {
    int64_t told_ns, every_ns; /* monotonic */
};

/* What a FENCE said of one object. */
struct stamp {
    uint64_t instance, stamp, size;
    bool exists;
};

static int mig_call(stria_fs_t *fs, uint64_t ino, uint8_t op, uint64_t id,
                    const struct layout *tmpl, struct proto_migrate_rep *r)
{
    struct proto_migrate_req *q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    q->ino = ino;
    q->op = op;
    q->id = id;
    if (tmpl)
        layout_copy(&q->layout, tmpl);
    cl_cred(&q->cred);
    int64_t sent = mdc_clock_ms();
    int rc = MDT_CALL(fs, proto_ino_mdt(ino), migrate, q, r,
                      cl_note(fs, sent, &r->leases, 0, NULL, 0, 0, NULL, NULL));
    free(q);
    return rc;
}

static bool on_osts(const struct layout_comp *c)
{
    return !layout_comp_pending(c) && (c->type & LAYOUT_TYPE_MASK) == LAYOUT_TYPE_OST;
}

static size_t count_objects(const struct layout *l)
{
    size_t n = 0;
    for (uint16_t c = 0; c < l->ncomp; c++)
        if (on_osts(&l->comp[c]))
            n += l->comp[c].stripe_count;
    return n;
}

/* FENCE op (with id) on every object of l, in order; their stamps into
 * out (may be NULL). All are tried; the first failure is returned. */
static int fence_all(stria_fs_t *fs, uint64_t ino, const struct layout *l, uint8_t op, uint64_t id,
                     struct stamp *out)
{
    int first = 0;
    size_t k = 0;
    for (uint16_t c = 0; c < l->ncomp; c++) {
        if (!on_osts(&l->comp[c]))
            continue;
        for (uint16_t s = 0; s < l->comp[c].stripe_count; s++, k++) {
            uint32_t ost = map_group_ost(l->comp[c].groups[s]);
            struct proto_fence_req q = {.ost = ost,
                                        .ino = ino,
                                        .comp = layout_obj_comp(l, c),
                                        .stripe = s,
                                        .op = op,
                                        .id = id};
            struct proto_fence_rep r;
            int rc = TARGET_CALL(fs, PROTO_NODE_STOR, ost, fence, &q, &r, (void)0);
            if (rc && !first)
                first = rc;
            if (out)
                out[k] =
                    rc ? (struct stamp){0} : (struct stamp){r.instance, r.stamp, r.size, r.exists};
        }
    }
    return first;
}

/* The end of file data the objects of l hold (object sizes), which may
 * pass the size the MDT knows while a writer has not reported it. */
static uint64_t objects_end(const struct layout *l, const struct stamp *st)
{
    uint64_t end = 0;
    size_t k = 0;
    for (uint16_t ci = 0; ci < l->ncomp; ci++) {
        const struct layout_comp *c = &l->comp[ci];
        if (!on_osts(c))
            continue;
        for (uint16_t s = 0; s < c->stripe_count; s++, k++) {
            if (!st[k].exists || !st[k].size)
                continue;
            uint64_t o = st[k].size - 1;
            uint64_t unit = (o / c->stripe_size) * c->stripe_count + s;
            uint64_t at = c->start + unit * c->stripe_size + o % c->stripe_size + 1;
            end = MAX(end, MIN(at, c->end));
        }
    }
    return end;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* Copy [0, end) from old to new (zeros are left as holes), telling the
 * MDT the migration lives as often as p says. The first bytes that both
 * layouts keep in the file's Data-on-MDT record stay where they are. */
static int copy(stria_fs_t *fs, uint64_t ino, uint64_t id, const struct layout *old,
                const struct layout *new, uint64_t end, stria_progress_fn fn, void *arg,
                struct pulse *p, struct proto_migrate_rep *scratch)
{
    uint8_t *buf = malloc(COPY_CHUNK);
    if (!buf)
        return -ENOMEM;
    int rc = 0;
    uint64_t kept = MIN(layout_dom_size(old), layout_dom_size(new));
    if (fn && kept)
        fn(MIN(kept, end), arg);
    for (uint64_t at = MIN(kept, end); at < end && !rc;) {
        size_t n = (size_t)MIN((uint64_t)COPY_CHUNK, end - at);
        if (!(rc = io_rw_as(fs, ino, old, false, buf, n, at)) && !all_zero(buf, n)) {
            /* Still ours before it writes: after a stall long enough for
             * the migration to go stale, another may have taken it over,
             * and the new objects are then that one's. */
            if ((int64_t)util_now_mono_ns() - p->told_ns > p->every_ns) {
                rc = mig_call(fs, ino, MIGRATE_PROGRESS, id, NULL, scratch);
                p->told_ns = (int64_t)util_now_mono_ns();
            }
            if (!rc)
                rc = io_rw_as(fs, ino, new, true, buf, n, at);
        }
        at += n;
        if (fn)
            fn(at, arg);
    }
    free(buf);
    return rc;
}

/* After a migrator that is gone (m: its record): before the swap, undo
 * (fences cleared, new objects destroyed, record dropped); after, finish
 * (old objects fenced dead and destroyed, record dropped). */
static int clean_up(stria_fs_t *fs, uint64_t ino, struct proto_migrate_rep *m)
{
    uint64_t id = m->id;
    int rc;
    if (m->state == MIGRATE_COPYING) {
        /* The record first: a migrator that was only slow then stops at
         * its next step and leaves the new objects to us. */
        struct layout *new = malloc(sizeof(*new));
        if (!new)
            return -ENOMEM;
        layout_copy(new, &m->layout);
        if (!(rc = fence_all(fs, ino, &m->old, FENCE_CLEAR, id, NULL)) &&
            !(rc = mig_call(fs, ino, MIGRATE_ABORT, id, NULL, m)))
            rc = io_objects_as(fs, ino, new, IO_DESTROY, 0);
        free(new);
    } else {
        if ((rc = fence_all(fs, ino, &m->old, FENCE_DEAD, id, NULL)) ||
            (rc = io_objects_as(fs, ino, &m->old, IO_DESTROY, 0)))
            return rc;
        rc = mig_call(fs, ino, MIGRATE_DONE, id, NULL, m);
    }
    log_info("inode %" PRIx64 ": migration %" PRIx64 " whose migrator is gone %s: %s", ino, id,
             m->state == MIGRATE_COPYING ? "undone" : "finished", rc ? log_err(rc) : "done");
    return rc;
}

int cl_migrate_recover(stria_fs_t *fs, uint64_t ino, uint32_t *stale_ms)
{
    struct proto_migrate_rep *m = malloc(sizeof(*m));
    if (!m)
        return -ENOMEM;
    int rc = mig_call(fs, ino, MIGRATE_STATE, 0, NULL, m);
    if (rc == 0 && stale_ms)
        *stale_ms = m->stale_ms;
    if (rc == 0 && m->stale)
        rc = clean_up(fs, ino, m);
    free(m);
    return rc == -ENOENT ? 0 : rc;
}

/* Before a copy: what it writes into the file's Data-on-MDT record past
 * the old layout's component (an earlier copy's bytes) goes. */
static int empty_dom(stria_fs_t *fs, uint64_t ino, const struct layout *old,
                     const struct layout *new)
{
    uint64_t from = layout_dom_size(old), to = layout_dom_size(new);
    return to > from ? io_punch_as(fs, ino, new, from, to - from) : 0;
}

static bool stamps_equal(const struct stamp *a, const struct stamp *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].instance != b[i].instance || a[i].stamp != b[i].stamp ||
            a[i].exists != b[i].exists || a[i].size != b[i].size)
            return false;
    return true;
}

/* One migration of ino from BEGIN's reply m (just received) to its end,
 * or to an abort. */
static int run(stria_fs_t *fs, uint64_t ino, struct proto_migrate_rep *m, stria_progress_fn fn,
               void *arg, char *why, size_t whylen)
{
    uint64_t id = m->id;
    struct pulse pulse = {(int64_t)util_now_mono_ns(), (int64_t)m->stale_ms * 1000000 / 6};
    struct layout *old = malloc(2 * sizeof(*old)), *new = old + 1;
    size_t n = old ? count_objects(&m->old) : 0;
    struct stamp *st = calloc(2 * n + 1, sizeof(*st)), *st2 = st + n;
    int rc = old && st ? 0 : -ENOMEM;
    if (!rc) {
        layout_copy(old, &m->old);
        layout_copy(new, &m->layout);
    }
    uint64_t size = m->size;
    bool fenced = false, swap_sent = false;
    for (int tries = 0; !rc; tries++) {
        if (tries == COPY_TRIES) {
            snprintf(why, whylen, "written to during each of %d copies; left as it was",
                     COPY_TRIES);
            rc = -EBUSY;
            break;
        }
        if ((rc = fence_all(fs, ino, old, FENCE_STAMP, 0, st)) ||
            (rc = empty_dom(fs, ino, old, new)))
            break;
        uint64_t end = MAX(size, objects_end(old, st));
        if ((rc = copy(fs, ino, id, old, new, end, fn, arg, &pulse, m)))
            break;
        fenced = true;
        if ((rc = fence_all(fs, ino, old, FENCE_SET, id, st2)))
            break;
        if (stamps_equal(st, st2, n)) {
            swap_sent = true;
            if ((rc = mig_call(fs, ino, MIGRATE_SWAP, id, NULL, m)) || m->state == MIGRATE_SWAPPED)
                break;
            swap_sent = false; /* its Data-on-MDT bytes changed meanwhile */
        }
        /* A write the copy may have missed: again, from empty objects. */
        fenced = false;
        if ((rc = fence_all(fs, ino, old, FENCE_CLEAR, id, NULL)) ||
            (rc = io_objects_as(fs, ino, new, IO_DESTROY, 0)))
            break;
    }
    if (swap_sent && rc == -ESTALE)
        snprintf(why, whylen, "a write reached a component not instantiated; left as it was");
    if (swap_sent && rc && rc != -ESTALE && rc != -EPERM && rc != -EINVAL && rc != -ENOENT) {
        /* The MDT did not say: the swap may have been made. */
        int src = mig_call(fs, ino, MIGRATE_STATE, 0, NULL, m);
        if (src == 0 && m->id == id && m->state == MIGRATE_SWAPPED) {
            rc = 0;
        } else if (src || m->id != id) {
            log_warn("inode %" PRIx64 ": migration %" PRIx64 " swapped or not, unknown (%s): "
                     "left for the next migration of the file to finish or undo",
                     ino, id, log_err(rc));
            free(old);
            free(st);
            return rc;
        }
    }
    if (rc) {
        /* Undo: the file keeps its layout and its old objects. The record
         * goes before the new objects: if another migration took it over
         * (ours went stale), the new objects are that one's. */
        int urc = fenced ? fence_all(fs, ino, old, FENCE_CLEAR, id, NULL) : 0;
        if (!urc && (urc = mig_call(fs, ino, MIGRATE_ABORT, id, NULL, m)) == -ENOENT)
            urc = 0; /* undone by whoever found it stale */
        else if (!urc)
            urc = io_objects_as(fs, ino, new, IO_DESTROY, 0);
        if (urc && urc != -ESTALE)
            log_warn("inode %" PRIx64 ": migration %" PRIx64 " not undone (%s): the next "
                     "migration of the file, or a writer, does it once it is stale",
                     ino, id, log_err(urc));
    } else {
        /* Swapped: the old objects go, and handles still holding the old
         * layout learn the new one from their dead fences. */
        if (!(rc = fence_all(fs, ino, old, FENCE_DEAD, id, NULL)) &&
            !(rc = io_objects_as(fs, ino, old, IO_DESTROY, 0)))
            rc = mig_call(fs, ino, MIGRATE_DONE, id, NULL, m);
        if (rc)
            log_warn("inode %" PRIx64 ": migrated, but its old objects are not all gone (%s): "
                     "the next migration of the file does it",
                     ino, log_err(rc));
        rc = 0;
    }
    free(old);
    free(st);
    return rc;
}

int cl_migrate(stria_fs_t *fs, uint64_t ino, const struct layout *tmpl, stria_progress_fn fn,
               void *arg, char *why, size_t whylen)
{
    if (whylen)
        why[0] = 0;
    struct proto_migrate_rep *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    int rc = mig_call(fs, ino, MIGRATE_BEGIN, 0, tmpl, m);
    if (rc == 0 && m->stale) {
        /* A dead migration's leftovers first, then ours. */
        if (!(rc = clean_up(fs, ino, m)))
            rc = mig_call(fs, ino, MIGRATE_BEGIN, 0, tmpl, m);
        if (rc == 0 && m->stale)
            rc = -EBUSY;
    }
    if (rc == -EBUSY && !why[0])
        snprintf(why, whylen, "%s",
                 m->stale ? "another migration's leftovers could not be cleaned up"
                          : "being migrated by someone else, or released (restore it first)");
    if (rc == 0)
        rc = run(fs, ino, m, fn, arg, why, whylen);
    free(m);
    return rc;
}

/* Was the file of layout l migrated? Its objects are then of a later
 * generation than a new file's, unless it was migrated a multiple of
 * sixteen times (stria fsck --repair then finds the fences left). */
bool cl_migrated(const struct layout *l)
{
    for (uint16_t c = 0; c < l->ncomp; c++)
        if (layout_comp_gen(&l->comp[c]))
            return true;
    return false;
}

/* The OSTs of the map that are online, at most cap of them, into v;
 * returns how many. */
static uint32_t online_osts(stria_fs_t *fs, uint32_t *v, uint32_t cap)
{
    uint32_t n = 0;
    pthread_rwlock_rdlock(&fs->map_lock);
    for (uint32_t i = 0; i < fs->nost_slots && n < cap; i++) {
        struct ctarget *t = fs->ost[i];
        if (!t)
            continue;
        pthread_mutex_lock(&t->lock);
        if (t->state == MAP_ONLINE)
            v[n++] = i;
        pthread_mutex_unlock(&t->lock);
    }
    pthread_rwlock_unlock(&fs->map_lock);
    return n;
}

struct forget_call {
    uint32_t ost;
    struct lease lease;
    uint64_t reqid;
    bool sent, transport;
    int rc;
};

/* FENCE FORGET of ino to the n OSTs of v, all sent before any reply is
 * awaited: one round trip for the lot. One try each. */
static void forget_window(stria_fs_t *fs, uint64_t ino, struct forget_call *v, int n)
{
    for (int i = 0; i < n; i++) {
        struct forget_call *c = &v[i];
        struct proto_fence_req q = {.ost = c->ost, .ino = ino, .op = FENCE_FORGET};
        uint8_t buf[64];
        struct proto_enc e;
        proto_enc_init(&e, buf, sizeof(buf));
        c->sent = false;
        c->transport = false;
        if ((c->rc = proto_enc_fence_req(&e, &q)) ||
            (c->rc = cl_get(fs, PROTO_NODE_STOR, c->ost, &c->lease)))
            continue;
        c->rc = net_send(c->lease.c, PROTO_OP_FENCE, buf, (uint32_t)e.len, NULL, 0, &c->reqid);
        c->sent = c->rc == 0;
        c->transport = !c->sent;
        if (!c->sent)
            cl_put(&c->lease, true);
    }
    for (int i = 0; i < n; i++) {
        struct forget_call *c = &v[i];
        if (!c->sent)
            continue;
        c->rc = net_recv(c->lease.c, c->reqid, NULL, 0, NULL, &c->transport);
        cl_put(&c->lease, c->transport);
    }
}

/* forget_window, once more on fresh connections for the calls whose
 * pooled one had died (a daemon restarted); returns the calls that
 * failed, the first of them in *first. */
static int forget_some(stria_fs_t *fs, uint64_t ino, struct forget_call *v, int n, int *first)
{
    forget_window(fs, ino, v, n);
    int again = 0, failed = 0;
    for (int i = 0; i < n; i++)
        if (v[i].rc && v[i].transport && v[i].lease.reused)
            v[again++] = (struct forget_call){.ost = v[i].ost};
        else if (v[i].rc && !failed++)
            *first = v[i].rc;
    forget_window(fs, ino, v, again);
    for (int i = 0; i < again; i++)
        if (v[i].rc && !failed++)
            *first = v[i].rc;
    return failed;
}

void cl_migrate_forget(stria_fs_t *fs, uint64_t ino, const struct layout *l)
{
    if (!cl_migrated(l))
        return;
    pthread_rwlock_rdlock(&fs->map_lock);
    uint32_t cap = fs->nost_slots;
    pthread_rwlock_unlock(&fs->map_lock);
    uint32_t *osts = malloc((cap ? cap : 1) * sizeof(*osts));
    if (!osts)
        return;
    uint32_t n = online_osts(fs, osts, cap);
    struct forget_call v[FORGET_WINDOW];
    int failed = 0, first = 0;
    for (uint32_t at = 0; at < n;) {
        int k = 0;
        while (at < n && k < FORGET_WINDOW)
            v[k++] = (struct forget_call){.ost = osts[at++]};
        failed += forget_some(fs, ino, v, k, &first);
    }
    free(osts);
    if (failed)
        log_warn("inode %" PRIx64 ": the fences its migrations left stay on %d OST(s) (%s): "
                 "stria fsck --repair removes them",
                 ino, failed, log_err(first));
}
