/*
 * File handles: the stria_file_t calls of stria.h (file.h), but for
 * reads (file_ra.c).
 *
 * A handle keeps what its open learnt (layout, size), what its writes did
 * not report to the MDT yet, a read-ahead buffer and a failure to report.
 * Small writes go to gathering, the rest to striped I/O; size reports go
 * out at close, fsync and before a change of size or times. Every change
 * this client makes to a file voids the read-ahead buffers (written()).
 */
#include "file_int.h"

#include "../common/util.h"
#include "../proto/csum.h"
#include "gather.h"
#include "hsm.h"
#include "inode.h"
#include "io.h"
#include "mdcache.h"
#include "ns.h"
#include "route.h"
#include "wb.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void cl_file_set_error(stria_file_t *f, int rc)
{
    pthread_mutex_lock(&f->lock);
    if (!f->gerr)
        f->gerr = rc;
    pthread_mutex_unlock(&f->lock);
}

/* Take f's unreported failure of a gathered write (0: none). */
static int take_error(stria_file_t *f)
{
    pthread_mutex_lock(&f->lock);
    int rc = f->gerr;
    f->gerr = 0;
    pthread_mutex_unlock(&f->lock);
    return rc;
}

/* Something of a file changes through this client: read-ahead is stale.
 * Called before a change (a buffer filled later than it is stale) and
 * again once it has landed (one filled while it was on its way may have
 * read the bytes before it). */
static void written(stria_fs_t *fs)
{
    atomic_fetch_add_explicit(&fs->write_epoch, 1, memory_order_release);
}

void file_init(stria_file_t *f, stria_fs_t *fs, int flags, const struct proto_attr *a)
{
    f->fs = fs;
    f->ino = a->ino;
    f->flags = flags;
    f->is_dir = S_ISDIR(a->mode);
    f->size = a->size;
    pthread_mutex_init(&f->lock, NULL);
    pthread_mutex_init(&f->ra_lock, NULL);
    pthread_mutex_init(&f->hsm_lock, NULL);
    pthread_cond_init(&f->marked, NULL);
}

/* An open of inode ino (an empty path) for reading, answered from the
 * metadata cache: the lease on it is valid and a reply brought its layout.
 * The MDT would check read permission; so does this. */
static bool open_cached(stria_fs_t *fs, uint64_t ino, const char *path, int flags, stria_file_t *f,
                        struct proto_attr *attr)
{
    if (!fs->mdc || path[0] || (flags & (O_CREAT | O_TRUNC)) || (flags & O_ACCMODE) != O_RDONLY)
        return false;
    gather_drain_behind(fs, ino); /* the size the cache has then is the file's */
    struct proto_attr a;
    struct proto_cred cred;
    if (!mdc_open_layout(fs->mdc, ino, &a, &f->layout) || !S_ISREG(a.mode))
        return false;
    cl_cred(&cred);
    if (!proto_cred_may(&cred, a.mode, a.uid, a.gid, 4))
        return false; /* the MDT says why */
    file_init(f, fs, flags, &a);
    peek_open(f);
    if (attr)
        *attr = a;
    return true;
}

/* Room for the CRCs of the bytes an open brings (from offset 0). */
#define OPEN_CRCS (4 * (PROTO_OPEN_DOM_MAX / PROTO_CSUM_BLOCK + 1))
_Static_assert(RA_CAP <= PROTO_OPEN_DOM_MAX,
               "an open asks for no more bytes than OPEN_CRCS covers");

/* Copy the CRCs of r's bytes into crcs and point r at them, while the
 * reply's connection is still held: they point into its buffer, which
 * another thread's call overwrites once it goes back to the pool (two
 * threads reading small files saw the bytes of an open fail their check
 * now and then). More than there is room for: none (the bytes are then
 * read again). */
static void keep_crcs(struct proto_open_rep *r, uint8_t *crcs)
{
    uint32_t n = r->dom_crcs.len <= OPEN_CRCS ? r->dom_crcs.len : 0;
    if (n)
        memcpy(crcs, r->dom_crcs.p, n);
    r->dom_crcs = (struct proto_blob){crcs, n};
}

int cl_open(stria_fs_t *fs, uint64_t parent, const char *path, int flags, mode_t mode,
            int32_t count, uint32_t size, int32_t offset, stria_file_t **out,
            struct proto_attr *attr)
{
    if (!path)
        return -EFAULT;
    if (strlen(path) > PROTO_MAX_STR)
        return -ENAMETOOLONG;
    stria_file_t *f = calloc(1, sizeof(*f));
    if (f && open_cached(fs, parent, path, flags, f, attr)) {
        *out = f;
        return 0;
    }
    /* A create by a whole path ("d/f", a library's): its directory found
     * here, from the metadata cache, so that the OPEN names one entry of
     * it and may ask for write-behind's grant below. What the cache lacks
     * is asked for only when the grant could be had (held, or not lost
     * within the last second): among other clients' changes, which take
     * both away, a create costs one request still. */
    if ((flags & O_CREAT) && fs->wb && !cl_one_name(path) &&
        !cl_walk_dir(fs, &parent, &path, false) &&
        wb_want(fs, proto_ino_mdt(path[0] == '/' ? PROTO_ROOT_INO : parent), true))
        cl_walk_dir(fs, &parent, &path, true);
    struct proto_open_rep *r = malloc(sizeof(*r));
    char *ra = NULL;
    uint32_t got = 0;
    int rc = -ENOMEM;
    if (!f || !r)
        goto fail;
    struct proto_open_req q = {.parent = parent,
                               .path = proto_str_c(path),
                               /* These only choose how this client writes. */
                               .flags = (uint32_t)(flags & ~(O_SYNC | O_DSYNC | O_DIRECT)),
                               .mode = mode,
                               .stripe_count = count,
                               .stripe_size = size,
                               .stripe_offset = offset};
    cl_cred(&q.cred);
    /* An open that may read an existing file's bytes takes those of a
     * Data-on-MDT component with it, as far as a read-ahead buffer goes. */
    uint64_t epoch = atomic_load_explicit(&fs->write_epoch, memory_order_acquire);
    if ((flags & O_ACCMODE) != O_WRONLY && !(flags & (O_TRUNC | O_DIRECTORY)) &&
        (flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL) && (ra = file_ra_get(fs)))
        q.dom_len = RA_CAP;
    /* A create asks for write-behind's grant, which lets this client write
     * a small file's bytes behind its close (wb.h). It need not wait for
     * the bytes written behind before it when the name is surely new:
     * nothing written behind can be the file it opens. */
    uint8_t want = PROTO_OPEN_WANT_WB;
    bool pass = false, plain = count == 0 && size == 0 && offset == -1;
    uint32_t mdt = UINT32_MAX;
    if ((flags & O_CREAT) && fs->wb && cl_one_name(path)) {
        mdt = cl_name_mdt(fs, parent, path, strlen(path));
        if (wb_want(fs, mdt, true))
            q.wb = (struct proto_tblob){&want, 1, false};
        /* Whether the name is new, from the cache, which may list the
         * directory once to know it whole when the grant is sought (a
         * listing of names cannot meet bytes written behind). */
        struct proto_attr none;
        wb_pass_behind(true);
        pass = (flags & O_EXCL) ||
               (q.wb.len ? cl_lookup_cached(fs, parent, path, &q.cred, &none)
                         : mdc_lookup(fs->mdc, parent, mdt, path, &q.cred, &none)) == -ENOENT;
        wb_pass_behind(false);
        if (pass && q.wb.len && plain &&
            file_create_behind(fs, parent, mdt, path, flags, mode, &q.cred, f, attr)) {
            file_ra_put(fs, ra);
            free(r);
            *out = f;
            return 0;
        }
        if (q.wb.len && (want |= wb_want_inos(fs, mdt)) & PROTO_OPEN_WANT_INOS)
            pass = false; /* the creates of the ranges the MDT will forget go first */
    }
    int64_t sent = mdc_clock_ms();
    uint64_t ns_ep = atomic_load(&fs->ns_epoch);
    struct proto_open_wb wb = {0};
    uint8_t crcs[OPEN_CRCS];
    wb_pass_behind(pass);
    /* The grant and the CRCs are read while the reply is, before its
     * connection goes back. */
    rc = ROUTED_CALL_BULK(fs, parent, path, parent, path, open, &q, r, ra, q.dom_len, &got,
                          cl_note_layout(fs, sent, &r->leases, parent, path, &r->attr, &r->layout);
                          proto_open_wb_get(&r->wb, &wb); keep_crcs(r, crcs));
    wb_pass_behind(false);
    if (want & PROTO_OPEN_WANT_INOS)
        wb_inos(fs, mdt, rc == 0 ? wb.ino_lo : 0, rc == 0 ? wb.ino_n : 0);
    uint32_t wb_ms = rc == 0 ? wb.ms : 0;
    uint64_t wb_id = wb.id;
    int wb_mdt = wb_ms && fs->mdc ? mdc_reply_mdt(fs->mdc, r->leases.instance) : -1;
    if (wb_mdt >= 0)
        wb_granted(fs, (uint32_t)wb_mdt, wb_id, wb_ms, sent, wb.dom_room);
    /* What a new file gets in parent, while nothing of this client changed
     * since it was asked: the next ones may be created behind. */
    if (wb_mdt >= 0 && r->created && plain && (uint32_t)wb_mdt == mdt)
        file_create_learnt(fs, mdt, parent, wb_id, ns_ep, &r->layout);
    if (rc == -EREMOTE) {
        /* The name is here, its inode on another MDT: open that by number. */
        struct proto_attr a;
        rc = cl_resolve(fs, parent, path, !(flags & O_NOFOLLOW), &a);
        if (rc == 0 && (flags & O_CREAT) && (flags & O_EXCL))
            rc = -EEXIST;
        if (rc == 0) {
            q.parent = a.ino;
            q.path = proto_str_c("");
            q.flags &= ~(uint32_t)(O_CREAT | O_EXCL);
            rc = MDT_CALL_BULK(fs, proto_ino_mdt(a.ino), open, &q, r, ra, q.dom_len, &got,
                               keep_crcs(r, crcs));
        }
    }
    if (rc)
        goto fail;
    if (S_ISDIR(r->attr.mode) && (flags & O_ACCMODE) != O_RDONLY) {
        rc = -EISDIR;
        goto fail;
    }
    file_init(f, fs, flags, &r->attr);
    f->layout = r->layout;
    if (r->created && wb_mdt >= 0) {
        f->wb_grant = wb_id;
        f->wb_mdt = (uint32_t)wb_mdt;
    }
    /* The MDT marked the file it made for us: no SETSIZE before a write. */
    if (r->created && r->marked)
        f->mark = MARK_DONE;
    /* O_TRUNC of an existing file: cut its objects too, also when the MDT
     * thought it empty (another handle may have written unreported data). */
    if ((flags & O_TRUNC) && !r->created && f->layout.ncomp &&
        (rc = io_objects(fs, f->ino, &f->layout, IO_TRUNCATE, 0)))
        goto fail;
    if (flags & O_TRUNC)
        written(fs);
    file_ra_opened(f, r, ra, got, epoch);
    if (attr)
        *attr = r->attr;
    free(r);
    *out = f;
    return 0;
fail:
    file_ra_put(fs, ra);
    free(r);
    free(f);
    return rc;
}

int stria_open(stria_fs_t *fs, const char *path, int flags, mode_t mode, stria_file_t **out)
{
    bool held = cl_cred_hold();
    int rc = cl_open(fs, 1, path, flags, mode, 0, 0, -1, out, NULL);
    cl_cred_release(held);
    return rc;
}

void stria_file_allow_read(stria_file_t *f)
{
    if ((f->flags & O_ACCMODE) == O_WRONLY)
        f->flags = (f->flags & ~O_ACCMODE) | O_RDWR;
}

int stria_file_writable(const stria_file_t *f)
{
    return !f->is_dir && (f->flags & O_ACCMODE) != O_RDONLY;
}

uint64_t stria_file_unreported(stria_file_t *f, int64_t *wrote_ns)
{
    pthread_mutex_lock(&f->lock);
    uint64_t end = f->dirty ? f->wrote_end : 0;
    if (wrote_ns)
        *wrote_ns = f->dirty ? f->wrote_ns : 0;
    /* The MDT has those (DOM_WRITE): reported, but a cache that saw the
     * replies out of order may not show them yet. */
    end = MAX(end, f->mdt_end);
    pthread_mutex_unlock(&f->lock);
    return end;
}

void stria_file_reported(stria_file_t *f, uint64_t end, int64_t wrote_ns)
{
    pthread_mutex_lock(&f->lock);
    if (f->dirty && f->wrote_end <= end && f->wrote_ns <= wrote_ns)
        f->dirty = false;
    if (end > f->size)
        f->size = end;
    pthread_mutex_unlock(&f->lock);
}

void stria_file_know_size(stria_file_t *f, uint64_t size)
{
    pthread_mutex_lock(&f->lock);
    if (size > f->size)
        f->size = size;
    pthread_mutex_unlock(&f->lock);
}

static void layout_take(stria_file_t *f, const struct layout *l);

void stria_file_orphan(stria_file_t *f, const stria_removed_t *rm)
{
    if (rm)
        layout_take(f, &rm->layout);
    pthread_mutex_lock(&f->lock);
    f->orphan = true;
    pthread_mutex_unlock(&f->lock);
}

static int call_setsize(stria_file_t *f, uint64_t size, int64_t mtime)
{
    pthread_mutex_lock(&f->lock);
    bool orphan = f->orphan;
    pthread_mutex_unlock(&f->lock);
    if (orphan)
        return 0; /* nobody can see its size any more */
    struct proto_attr a;
    int rc = cl_setsize(f->fs, f->ino, size, mtime, &f->layout, &a);
    if (rc == 0) {
        pthread_mutex_lock(&f->lock);
        if (a.size > f->size)
            f->size = a.size;
        pthread_mutex_unlock(&f->lock);
    }
    return rc;
}

/* Take from l the components f's layout still has pending and l has
 * instantiated (a component is instantiated once, so nothing else of f's
 * layout can be stale). Each goes in whole before its flag says so. */
static void layout_take(stria_file_t *f, const struct layout *l)
{
    pthread_mutex_lock(&f->lock);
    for (uint16_t i = 0; i < f->layout.ncomp && i < l->ncomp; i++) {
        struct layout_comp *c = &f->layout.comp[i];
        const struct layout_comp *n = &l->comp[i];
        if (!layout_comp_pending(c) || layout_comp_pending(n) || n->start != c->start ||
            n->end != c->end)
            continue;
        c->stripe_size = n->stripe_size;
        c->stripe_count = n->stripe_count;
        memcpy(c->groups, n->groups, sizeof(uint32_t) * n->stripe_count);
        __atomic_store_n(&c->type, n->type, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&f->lock);
}

/* f's layout holds pending components where [off, end) falls: learn
 * what the MDT has. A write first instantiates them (LAYOUT_INTENT, a
 * round trip once per component in the file's life); a read asks for the
 * layout (GETSTRIPE), since another client may have written there, and
 * reads a hole if the file is gone elsewhere. An orphan has no MDT to
 * ask: its handles follow one rule (layout_fill_orphan). */
int file_learn(stria_file_t *f, uint64_t off, uint64_t end, bool write)
{
    bool meets = false;
    for (uint16_t i = 0; i < f->layout.ncomp && !meets; i++) {
        const struct layout_comp *c = &f->layout.comp[i];
        meets = layout_comp_pending(c) && c->start < end && c->end > off;
    }
    if (!meets)
        return 0;
    struct layout *l = malloc(sizeof(*l));
    if (!l)
        return -ENOMEM;
    int rc = f->orphan ? -ENOENT
             : write   ? cl_layout_intent(f->fs, f->ino, end, l)
                       : cl_get_layout(f->fs, f->ino, l);
    if (rc == -ENOENT && f->orphan) {
        layout_copy(l, &f->layout);
        layout_fill_orphan(l);
        rc = 0;
    }
    if (rc == 0)
        layout_take(f, l);
    else if (!write && (rc == -ENOENT || rc == -ESTALE))
        rc = 0;
    free(l);
    return rc;
}

/* A released file's [off, off + len) (all: everything) from S3 first. */
int file_fetch_released(stria_file_t *f, uint64_t off, uint64_t len, bool all)
{
    pthread_mutex_lock(&f->hsm_lock);
    pthread_mutex_lock(&f->lock);
    uint64_t size = MAX(f->size, f->wrote_end);
    pthread_mutex_unlock(&f->lock);
    int rc =
        hsm_fetch(f->fs, f->ino, &f->layout, size, off, len, all, &f->hsm, NULL, NULL, NULL, 0);
    pthread_mutex_unlock(&f->hsm_lock);
    return rc;
}

/* Before the first byte lands, tell the MDT objects may exist, so an
 * unlink from anywhere removes them. Concurrent writes of this handle
 * (the mount's write-behind) wait for that mark; if it fails, the next
 * one tries. Gathered writes are marked when their buffer is sent. */
int cl_file_mark(stria_file_t *f)
{
    /* A released file is written once its data is back. */
    if (layout_released(&f->layout)) {
        int rc = file_fetch_released(f, 0, 0, true);
        if (rc)
            return rc;
    }
    pthread_mutex_lock(&f->lock);
    while (f->mark == MARK_BUSY)
        pthread_cond_wait(&f->marked, &f->lock);
    bool mark = f->mark == MARK_NONE;
    if (mark)
        f->mark = MARK_BUSY;
    pthread_mutex_unlock(&f->lock);
    if (!mark)
        return 0;
    int rc = call_setsize(f, 0, 0);
    pthread_mutex_lock(&f->lock);
    f->mark = rc ? MARK_NONE : MARK_DONE;
    pthread_cond_broadcast(&f->marked);
    pthread_mutex_unlock(&f->lock);
    return rc;
}

/* A write all inside f's Data-on-MDT component, taken behind (gather.h)
 * while the MDT's write-behind grant is held and its room covers it:
 * whether it was. The size and mtime move there when it lands, as a
 * DOM_WRITE's do. */
static bool dom_behind(stria_file_t *f, const void *buf, size_t len, uint64_t off)
{
    struct layout_piece lp;
    if (!f->fs->wb || (f->flags & (O_APPEND | O_SYNC | O_DSYNC | O_DIRECT)) ||
        layout_map(&f->layout, off, len, &lp) != LAYOUT_ON_MDT || lp.len < len)
        return false;
    pthread_mutex_lock(&f->lock);
    bool orphan = f->orphan;
    pthread_mutex_unlock(&f->lock);
    if (orphan || !f->wb_grant || lp.group != f->wb_mdt)
        return false;
    gather_wait_free(f->fs);
    if (!wb_behind_begin(f->fs, lp.group, f->wb_grant, off + len))
        return false;
    ssize_t n = gather_behind(f->fs, f, f->ino, &f->layout, lp.group, buf, len, off);
    wb_behind_end(f->fs);
    if (n != (ssize_t)len)
        return false;
    pthread_mutex_lock(&f->lock);
    f->wrote_end = MAX(f->wrote_end, off + len);
    f->size = MAX(f->size, off + len);
    f->mdt_end = MAX(f->mdt_end, off + len);
    pthread_mutex_unlock(&f->lock);
    return true;
}

ssize_t stria_pwrite(stria_file_t *f, const void *buf, size_t len, off_t off)
{
    if (f->is_dir)
        return -EISDIR;
    if ((f->flags & O_ACCMODE) == O_RDONLY)
        return -EBADF;
    if (off < 0)
        return -EINVAL;
    if (len == 0)
        return 0;
    if (len > SSIZE_MAX)
        len = SSIZE_MAX;
    int rc = cl_file_mark(f);
    if (rc)
        return rc;
    if (f->flags & O_APPEND) {
        pthread_mutex_lock(&f->lock);
        off = (off_t)MAX(f->size, f->wrote_end);
        pthread_mutex_unlock(&f->lock);
    }
    if ((rc = file_learn(f, 0, (uint64_t)off + len, true)))
        return rc;
    if ((rc = take_error(f)))
        return rc;
    written(f->fs);
    if (dom_behind(f, buf, len, (uint64_t)off))
        return (ssize_t)len;
    /* Small and sequential: into the inode's buffer (gather.c). */
    size_t took = 0;
    if (!(f->flags & (O_APPEND | O_SYNC | O_DSYNC | O_DIRECT))) {
        ssize_t n = gather_write(f->fs, f, f->ino, &f->layout, buf, len, (uint64_t)off);
        if (n < 0)
            return n;
        took = (size_t)n;
    }
    if (took < len) {
        uint64_t at = (uint64_t)off + took;
        gather_before_write(f->fs, f->ino, at, (uint64_t)off + len);
        rc = io_rw(f->fs, f->ino, &f->layout, true, (char *)buf + took, len - took, at);
        written(f->fs);
        if (rc)
            return rc;
    }
    int64_t now = (int64_t)util_now_real_ns();
    /* Bytes all on the MDT moved the size and mtime there already
     * (DOM_WRITE): nothing to report for them. */
    bool on_mdt = took == 0 && (uint64_t)off + len <= layout_dom_size(&f->layout) && !f->orphan;
    pthread_mutex_lock(&f->lock);
    f->wrote_end = MAX(f->wrote_end, (uint64_t)off + len);
    if (on_mdt) {
        f->size = MAX(f->size, (uint64_t)off + len);
        f->mdt_end = MAX(f->mdt_end, (uint64_t)off + len);
    } else {
        f->wrote_ns = MAX(f->wrote_ns, now);
        f->dirty = true;
        f->write_gen++;
    }
    pthread_mutex_unlock(&f->lock);
    return (ssize_t)len;
}

ssize_t stria_pwrite_nowait(stria_file_t *f, const void *buf, size_t len, off_t off)
{
    if (f->is_dir || (f->flags & O_ACCMODE) == O_RDONLY || off < 0 ||
        (f->flags & (O_APPEND | O_SYNC | O_DSYNC | O_DIRECT)))
        return 0; /* stria_pwrite says why, or writes it */
    /* A handle's first write marks the inode on the MDT before it returns,
     * the one wait this call makes: left to the buffer's send, up to a
     * second later, the mark could meet an unlink the caller made meanwhile
     * and fail with ENOENT before the handle is known to be orphaned. */
    int rc = cl_file_mark(f);
    if (rc)
        return rc;
    if ((rc = file_learn(f, 0, (uint64_t)off + len, true)))
        return rc;
    rc = take_error(f);
    if (rc)
        return rc;
    if (dom_behind(f, buf, len, (uint64_t)off)) {
        written(f->fs);
        return (ssize_t)len;
    }
    ssize_t n = gather_write(f->fs, f, f->ino, &f->layout, buf, len, (uint64_t)off);
    if (n > 0) {
        written(f->fs);
        int64_t now = (int64_t)util_now_real_ns();
        pthread_mutex_lock(&f->lock);
        f->wrote_end = MAX(f->wrote_end, (uint64_t)off + (uint64_t)n);
        f->wrote_ns = MAX(f->wrote_ns, now);
        f->dirty = true;
        f->write_gen++;
        pthread_mutex_unlock(&f->lock);
    }
    return n;
}

/* Report the size if this handle wrote since the last report, with the
 * time of its last write as the mtime: a close is no write, and a time
 * set since (futimens before close, as cp -p does) must stay. A flush or
 * close leaves the bytes written behind to land on their own (behind);
 * anything else waits for them too. */
static int report_as(stria_file_t *f, bool behind)
{
    /* A size must not come before its data. */
    if (behind)
        gather_drain_own(f->fs, f->ino);
    else
        gather_drain(f->fs, f->ino);
    int rc = take_error(f);
    if (rc)
        return rc;
    pthread_mutex_lock(&f->lock);
    bool dirty = f->dirty;
    uint64_t end = f->wrote_end, gen = f->write_gen;
    int64_t wrote_ns = f->wrote_ns;
    pthread_mutex_unlock(&f->lock);
    if (!dirty)
        return 0;
    /* dirty stays set until the MDT has the size, so a concurrent flush
     * cannot return early; reports are max-merged, so two are harmless. */
    rc = call_setsize(f, end, wrote_ns);
    pthread_mutex_lock(&f->lock);
    if (rc == 0 && f->write_gen == gen)
        f->dirty = false;
    pthread_mutex_unlock(&f->lock);
    return rc;
}

static int report(stria_file_t *f)
{
    return report_as(f, false);
}

/* The MDT's SYNC sent, its reply not read yet: *l holds its connection. */
static bool mdt_sync_send(stria_fs_t *fs, uint32_t mdt, struct lease *l, uint64_t *reqid)
{
    if (fs->before_mdt_call)
        fs->before_mdt_call(fs);
    if (cl_get(fs, PROTO_NODE_META, mdt, l))
        return false;
    if (net_send(l->c, PROTO_OP_SYNC, NULL, 0, NULL, 0, reqid) == 0)
        return true;
    cl_put(l, true);
    return false;
}

int stria_fsync(stria_file_t *f)
{
    int rc = report(f);
    if (rc)
        return rc;
    /* fsync covers the file, not the handle: data written through other
     * handles (or by the kernel's writeback) must be flushed too, in
     * components they instantiated that this handle has not seen. */
    if ((rc = file_learn(f, 0, UINT64_MAX, false)))
        return rc;
    /* The MDT's SYNC goes out beside the OSTs' OSYNCs: the size reported
     * above and the data must both be durable before fsync returns, in no
     * order, so the two flushes run at once. A SYNC whose connection
     * fails goes again the usual way, with its retries. */
    uint32_t mdt = proto_ino_mdt(f->ino);
    struct lease l;
    uint64_t reqid = 0;
    bool sent = mdt_sync_send(f->fs, mdt, &l, &reqid);
    if (f->layout.ncomp)
        rc = io_objects(f->fs, f->ino, &f->layout, IO_SYNC, 0);
    int mrc = -EIO;
    bool transport = !sent;
    if (sent) {
        mrc = net_recv(l.c, reqid, NULL, 0, NULL, &transport);
        cl_put(&l, transport);
    }
    if (transport) {
        struct proto_sync_req q = {0};
        struct proto_sync_rep r;
        mrc = MDT_CALL(f->fs, mdt, sync, &q, &r, (void)0);
    }
    return rc ? rc : mrc;
}

/* q on f's inode, once f's writes are reported. The reply (about 5 KiB,
 * a layout) is not kept. */
static int handle_setattr(stria_file_t *f, struct proto_setattr_req *q)
{
    struct proto_setattr_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    int rc = cl_setattr(f->fs, f->ino, q, r);
    free(r);
    return rc;
}

int stria_ftruncate(stria_file_t *f, off_t size)
{
    if (size < 0)
        return -EINVAL;
    if (f->is_dir)
        return -EISDIR;
    if ((f->flags & O_ACCMODE) == O_RDONLY)
        return -EBADF;
    int rc = report(f);
    if (rc)
        return rc;
    /* Checked against how f was opened, not the file's mode now. */
    struct proto_setattr_req q = {
        .ino = f->ino, .valid = SETATTR_SIZE | SETATTR_WRITER, .size = (uint64_t)size};
    rc = handle_setattr(f, &q);
    written(f->fs);
    if (rc == 0) {
        pthread_mutex_lock(&f->lock);
        f->size = (uint64_t)size;
        f->wrote_end = MIN(f->wrote_end, (uint64_t)size);
        f->mdt_end = MIN(f->mdt_end, (uint64_t)size);
        pthread_mutex_unlock(&f->lock);
    }
    return rc;
}

int stria_futimens(stria_file_t *f, const struct timespec times[2])
{
    if (!f)
        return -EBADF;
    struct proto_setattr_req q = {0};
    cl_set_time(&q, times ? &times[0] : NULL, true);
    cl_set_time(&q, times ? &times[1] : NULL, false);
    if (!q.valid)
        return 0;
    /* Its report comes first, or it would undo the times at the close. */
    int rc = report(f);
    return rc ? rc : handle_setattr(f, &q);
}

int stria_fextend(stria_file_t *f, off_t sz)
{
    if (sz < 0)
        return -EINVAL;
    uint64_t size = (uint64_t)sz;
    int64_t now = (int64_t)util_now_real_ns();
    pthread_mutex_lock(&f->lock);
    bool grow = size > MAX(f->size, f->wrote_end);
    if (grow) {
        f->wrote_end = size;
        f->wrote_ns = MAX(f->wrote_ns, now);
        f->dirty = true;
        f->write_gen++;
    }
    pthread_mutex_unlock(&f->lock);
    return grow ? report(f) : 0;
}

int stria_fpunch(stria_file_t *f, off_t off, off_t len)
{
    if (off < 0 || len < 0 || (uint64_t)off + (uint64_t)len < (uint64_t)off)
        return -EINVAL;
    if (len == 0)
        return 0;
    gather_drain(f->fs, f->ino);
    written(f->fs);
    /* Components another handle filled hold bytes to punch too. */
    int rc = file_learn(f, (uint64_t)off, (uint64_t)off + (uint64_t)len, false);
    if (rc == 0)
        rc = io_punch(f->fs, f->ino, &f->layout, (uint64_t)off, (uint64_t)len);
    written(f->fs);
    return rc;
}

uint64_t stria_file_ino(const stria_file_t *f)
{
    return f->ino;
}

void stria_file_truncated(stria_file_t *f, uint64_t size)
{
    written(f->fs);
    pthread_mutex_lock(&f->lock);
    f->size = size;
    f->wrote_end = MIN(f->wrote_end, size);
    f->mdt_end = MIN(f->mdt_end, size);
    pthread_mutex_unlock(&f->lock);
}

int stria_flush(stria_file_t *f)
{
    return report_as(f, true);
}

int stria_fstat(stria_file_t *f, struct stat *st)
{
    int rc = report(f);
    if (rc)
        return rc;
    struct proto_attr a;
    if ((rc = cl_getattr(f->fs, f->ino, &a)))
        return rc;
    cl_to_stat(&a, st);
    return 0;
}

int stria_close(stria_file_t *f)
{
    if (!f)
        return -EBADF;
    int rc = report_as(f, true);
    /* Nothing gathered may still name f: what it wrote behind goes on
     * without it. */
    gather_drain_own(f->fs, f->ino);
    gather_detach(f->fs, f);
    int late = take_error(f);
    if (!rc)
        rc = late;
    file_ra_put(f->fs, f->ra_buf);
    hsm_src_free(f->hsm);
    pthread_cond_destroy(&f->marked);
    pthread_mutex_destroy(&f->ra_lock);
    pthread_mutex_destroy(&f->lock);
    free(f);
    return rc;
}
