/*
 * The life of a libstria file system handle, the top of src/client:
 * stria_connect and stria_disconnect, and the caches and services a
 * server turns on (the metadata cache, write-behind unlink, gathering).
 *
 * Every other module is below this one; this is where they are started in
 * order and stopped in reverse, and where the callbacks that let a lower
 * layer reach a higher one are handed over (gathering's calls into file
 * handles, write-behind's removals). Nothing but stria.h declares what
 * this file defines.
 */
#include "../common/log.h"
#include "file.h"
#include "gather.h"
#include "mdcache.h"
#include "ns.h"
#include "reap.h"
#include "wb.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int stria_connect(const char *conf, stria_fs_t **out)
{
    stria_fs_t *fs = calloc(1, sizeof(*fs));
    if (!fs)
        return -ENOMEM;
    int rc = cl_conn_open(fs, conf);
    if (rc) {
        free(fs);
        return rc;
    }
    if ((rc = gather_init(fs, cl_file_mark, cl_file_set_error))) {
        cl_conn_close(fs);
        free(fs);
        return rc;
    }
    *out = fs;
    return 0;
}

void stria_disconnect(stria_fs_t *fs)
{
    if (!fs)
        return;
    gather_fini(fs); /* sends what open handles gathered */
    wb_stop(fs);     /* sends what is queued */
    reap_stop(fs);   /* removes the objects still queued, also wb's */
    mdc_stop(fs);    /* its channel may still be waiting in wb_revoked */
    wb_destroy(fs);
    cl_conn_close(fs);
    free(fs);
}

/* ---- caches and services a server turns on (stria.h) ---- */

int stria_start_mdcache(stria_fs_t *fs)
{
    return fs->mdc ? 0 : mdc_start(fs);
}

int stria_on_lease_changed(stria_fs_t *fs, void (*fn)(uint64_t ino, unsigned what, void *arg),
                           void *arg)
{
    if (!fs->mdc)
        return -EINVAL;
    mdc_on_change(fs->mdc, fn, arg);
    return 0;
}

static void revoked_adapter(uint64_t ino, unsigned what, void *arg)
{
    (void)what;
    stria_fs_t *fs = arg;
    fs->revoked_fn(ino, fs->revoked_arg);
}

int stria_on_lease_revoked(stria_fs_t *fs, void (*fn)(uint64_t ino, void *arg), void *arg)
{
    if (!fs->mdc)
        return -EINVAL;
    /* No call of the adapter is under way once this returns. */
    mdc_on_change(fs->mdc, NULL, NULL);
    fs->revoked_fn = fn;
    fs->revoked_arg = arg;
    if (fn)
        mdc_on_change(fs->mdc, revoked_adapter, fs);
    return 0;
}

/* wb.c's removal, handed to the caller's callback as its own copy. */
static void removed_by_wb(stria_fs_t *fs, struct stria_removed *rm)
{
    struct stria_removed *copy = malloc(sizeof(*copy));
    if (!copy) {
        cl_destroy(fs, rm); /* nobody can be told: at least free the space */
        return;
    }
    *copy = *rm;
    if (fs->removed_fn)
        fs->removed_fn(fs, copy, fs->removed_arg);
    else
        stria_removed_finish(fs, copy);
}

/* Removals still on their way from here, which hold space (the core's
 * flush_removals hook: stria_statfs, a write failing with ENOSPC): the
 * unlinks queued behind, then the objects queued behind. How many there
 * were (0: none). */
static unsigned flush_removals(stria_fs_t *fs)
{
    struct wb_stats a, b;
    wb_get_stats(fs, &a);
    wb_flush(fs);
    wb_get_stats(fs, &b);
    return (unsigned)(b.sent - a.sent) + reap_flush(fs);
}

int stria_start_unlink_behind(stria_fs_t *fs, stria_removed_fn removed, void *arg)
{
    if (!fs->mdc)
        return -EINVAL; /* it decides from the cache's leases */
    if (fs->wb)
        return 0;
    fs->removed_fn = removed;
    fs->removed_arg = arg;
    int rc = wb_start(fs, removed_by_wb);
    if (rc == 0)
        fs->flush_removals = flush_removals;
    return rc;
}

int stria_unlink_behind(stria_fs_t *fs, uint64_t parent, const char *name,
                        int (*is_open)(uint64_t ino, void *arg), void *arg,
                        stria_removed_t **rm_out)
{
    if (rm_out)
        *rm_out = NULL;
    struct mdc *m = fs->mdc;
    struct proto_cred cred;
    struct proto_attr a;
    if (!m || !fs->wb || !name || strlen(name) > PROTO_MAX_NAME)
        return -EAGAIN;
    cl_cred(&cred);
    uint32_t mdt = cl_name_mdt(fs, parent, name, strlen(name));
    /* The decision holds under this grant only (wb_unlink checks). */
    uint64_t grant = wb_grant_id(fs, mdt);
    if (!grant)
        return -EAGAIN;
    bool known = mdc_lookup_victim(m, parent, mdt, name, &cred, &a);
    /* The directory's names go when a reply brings it a new generation,
     * as one does after a quiet spell longer than the lease, when the MDT
     * forgot its lease record (architecture.md, "Files older than their
     * leases"): one listing under the grant brings them back. */
    if (!known && cl_fill_dir(fs, parent, mdt))
        known = mdc_lookup_victim(m, parent, mdt, name, &cred, &a);
    if (!known || a.nlink != 1 || !(S_ISREG(a.mode) || S_ISLNK(a.mode)))
        return -EAGAIN;
    if (is_open && is_open(a.ino, arg))
        return -EAGAIN;
    /* Bytes written behind that landed after the unlink would be kept
     * for an inode that is gone. */
    gather_drain_behind(fs, a.ino);
    /* Counted before the name leaves the cache: a create of it on
     * another thread in between would find it gone and no unlink of it
     * pending, and overtake the unlink. */
    uint32_t slot = wb_unlink_hold(fs, parent, name);
    mdc_unlinked(m, parent, mdt, name, a.ino);
    if (wb_unlink(fs, parent, mdt, name, &cred, grant, slot) == 0)
        return 0;
    /* Refused (a new grant since the decision): unlinked the ordinary way
     * here, while the count still holds a create behind of the name back,
     * which would otherwise be made before this unlink and fail. */
    int rc = stria_unlink_at(fs, parent, name, rm_out);
    wb_unlink_unhold(fs, slot);
    return rc == -EAGAIN ? -EIO : rc;
}

int stria_start_destroy_behind(stria_fs_t *fs)
{
    int rc = reap_start(fs);
    if (rc == 0)
        fs->flush_removals = flush_removals;
    return rc;
}

void stria_removed_finish_behind(stria_fs_t *fs, stria_removed_t *rm)
{
    if (!rm)
        return;
    reap_later(fs, rm);
    free(rm);
}

void stria_unlink_behind_stats(stria_fs_t *fs, struct stria_unlink_stats *out)
{
    struct wb_stats w;
    wb_get_stats(fs, &w);
    *out = (struct stria_unlink_stats){w.queued, w.sent, w.failed, w.grants, w.batched, w.batches};
}

void stria_set_create_behind(stria_fs_t *fs, int on)
{
    wb_set_create(fs, on != 0);
}

void stria_create_behind_stats(stria_fs_t *fs, uint64_t *made, uint64_t *failed, uint64_t *differed)
{
    struct wb_stats w;
    wb_get_stats(fs, &w);
    *made = w.created;
    *failed = w.create_failed;
    *differed = w.create_differed;
}

void stria_set_write_gather(stria_fs_t *fs, int on)
{
    gather_set(fs, on != 0);
}

void stria_io_stats(stria_fs_t *fs, struct stria_io_stats *out)
{
    memset(out, 0, sizeof(*out));
    uint64_t behind[3];
    gather_stats(fs, &out->writes_gathered, &out->gathers_sent, behind);
    out->readahead_fills = atomic_load_explicit(&fs->ra_fills, memory_order_relaxed);
    out->readahead_hits = atomic_load_explicit(&fs->ra_hits, memory_order_relaxed);
}

void stria_dom_behind_stats(stria_fs_t *fs, uint64_t *taken, uint64_t *landed, uint64_t *lost)
{
    uint64_t writes, sends, behind[3];
    gather_stats(fs, &writes, &sends, behind);
    *taken = behind[0];
    *landed = behind[1];
    *lost = behind[2];
}
