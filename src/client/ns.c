/*
 * Calls on names at the inode level (ns.h): a start inode and a relative
 * path, as the protocol names things.
 *
 * Each is sent where routing says (ROUTED_CALL) and its reply followed by
 * the metadata cache; an unlink asks for write-behind's grant. SETATTR and
 * the destruction of a removed file's objects are here too, because they
 * reach the objects: gathered writes land first, then the objects are cut
 * or destroyed through striped I/O. Removing the last link of a file
 * returns its layout (struct stria_removed) instead of destroying its
 * objects here, so a caller with the file still open (the mount) can keep
 * the data until the last close.
 */
#include "ns.h"

#include "../common/log.h"
#include "../common/util.h"
#include "gather.h"
#include "hsm.h"
#include "io.h"
#include "mdcache.h"
#include "migrate.h"
#include "peek.h"
#include "wb.h"

#include <errno.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int check_path(const char *path)
{
    if (!path)
        return -EFAULT;
    if (strlen(path) > PROTO_MAX_STR)
        return -ENAMETOOLONG;
    return 0;
}

/* The part of new directory ino on MDT mdt that the MKDIR's reply did not
 * lease (a shard another MDT made): lease it with a GETATTR there, then
 * list it; empty, every name of it is known here, as long as that lease
 * lasts (mdcache.h, mdc_shard_epoch). Two requests per shard, once per
 * directory, against one LOOKUP per name created in it. Whether it is
 * complete now. */
int cl_lease_part(stria_fs_t *fs, uint64_t ino, uint32_t mdt)
{
    struct proto_getattr_req q = {.ino = ino};
    struct proto_getattr_rep r;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    return MDT_CALL(fs, mdt, getattr, &q, &r,
                    cl_note(fs, sent, &r.leases, 0, NULL, 0, 0, NULL, &r.attr));
}

static bool complete_shard(stria_fs_t *fs, uint64_t ino, uint32_t mdt)
{
    if (cl_lease_part(fs, ino, mdt))
        return false;
    uint64_t epoch = mdc_shard_epoch(fs->mdc, ino, mdt);
    if (!epoch)
        return false;
    /* Room for one entry at least: the MDT says eof only when one more
     * would have fitted. */
    struct proto_readdir_req dq = {.ino = ino, .max_bytes = 1024};
    struct proto_readdir_rep dr;
    cl_cred(&dq.cred);
    bool empty = false;
    return MDT_CALL(fs, mdt, readdir, &dq, &dr, empty = dr.count == 0 && dr.eof) == 0 && empty &&
           mdc_shard_empty(fs->mdc, ino, mdt, epoch);
}

/* The most of a directory's part one READDIR lists to complete it
 * (fill_part): about 2,000 names. */
#define FILL_BYTES 65536

/* Complete the part of a directory this client did not make, that f
 * (mdc_fill_begin) names, from at most batches READDIRs: whether it is
 * complete now. More than one is one snapshot only if no other client's
 * change ran there meanwhile: this client held the MDT's write-behind
 * grant grant (not 0) throughout (a change from elsewhere takes it back,
 * and waits for this client to say so, before it commits). */
static bool fill_part(stria_fs_t *fs, const struct mdc_fill *f, int batches, uint64_t grant)
{
    struct proto_readdir_req q = {.ino = f->ino, .max_bytes = FILL_BYTES};
    struct proto_readdir_rep *r = malloc(sizeof(*r));
    if (!r)
        return false;
    cl_cred(&q.cred);
    int got = 0, calls = 0;
    while (got == 0 && calls++ < batches) {
        uint64_t next = q.cookie;
        got = -1;
        if (MDT_CALL(fs, f->mdt, readdir, &q, r,
                     got = mdc_fill_end(fs->mdc, f, r->eof, r->entries.p, r->entries.len, r->count,
                                        &next)) ||
            next == q.cookie)
            break; /* failed, or no progress */
        q.cookie = next;
    }
    free(r);
    return got == 1 && (calls == 1 || (grant && wb_grant_id(fs, f->mdt) == grant)) &&
           mdc_fill_complete(fs->mdc, f);
}

/* This client made directory a: every part of it is empty. */
static void new_dir(stria_fs_t *fs, const struct proto_attr *a)
{
    uint32_t n = proto_ds_count(a->dstripe);
    for (uint32_t k = 0; k < n; k++)
        mdc_new_dir(fs->mdc, a->ino, cl_dir_part_mdt(a->ino, a->dstripe, k));
}

/* mdc_lookup, with the attributes of a file whose bytes written behind
 * have landed (their replies bring its size and mtime). */
static int cached_lookup(stria_fs_t *fs, uint64_t parent, uint32_t mdt, const char *name,
                         const struct proto_cred *cred, struct proto_attr *out)
{
    int rc = mdc_lookup(fs->mdc, parent, mdt, name, cred, out);
    if (rc == 0 && S_ISREG(out->mode) && gather_drain_behind(fs, out->ino))
        rc = mdc_lookup(fs->mdc, parent, mdt, name, cred, out);
    return rc;
}

int cl_lookup_cached(stria_fs_t *fs, uint64_t parent, const char *name,
                     const struct proto_cred *cred, struct proto_attr *out)
{
    int rc;
    uint32_t mdt = cl_name_mdt(fs, parent, name, strlen(name));
    if ((rc = cached_lookup(fs, parent, mdt, name, cred, out)) != -EAGAIN)
        return rc;
    /* A directory whose names are leased but whose mode and owner this
     * cache lost (what an MDT leased goes when its channel breaks or it
     * restarts): the kernel never looks up the mount's root or a process's
     * working directory again, so nothing else would bring them back, and
     * every lookup in it would go to the MDT. One GETATTR does. */
    struct proto_attr pa;
    if (mdc_perm_missing(fs->mdc, parent, mdt, name) && cl_getattr(fs, parent, &pa) == 0 &&
        (rc = cached_lookup(fs, parent, mdt, name, cred, out)) != -EAGAIN)
        return rc;
    /* The first name looked up in a part of a new directory that its
     * MKDIR's reply did not lease: complete that part, and the names
     * created there after this one need no LOOKUP. */
    if (mdc_new_shard(fs->mdc, parent, mdt) && complete_shard(fs, parent, mdt) &&
        (rc = cached_lookup(fs, parent, mdt, name, cred, out)) != -EAGAIN)
        return rc;
    /* A part this client did not make, whose lease it holds: list it
     * once, and the names made there later need no LOOKUP (at most a
     * try a second, mdcache.h). One READDIR only: every rank of a storm
     * may try it, and a directory too big for one (a dataset's) would cost
     * the MDT many READDIRs of each that fail all the same. */
    struct mdc_fill fl;
    if (mdc_fill_begin(fs->mdc, parent, mdt, 1, &fl) && fill_part(fs, &fl, 1, 0))
        return cached_lookup(fs, parent, mdt, name, cred, out);
    return -EAGAIN;
}

bool cl_fill_dir(stria_fs_t *fs, uint64_t dir, uint32_t mdt)
{
    struct mdc_fill fl;
    uint64_t grant = wb_grant_id(fs, mdt);
    if (!fs->mdc || !mdc_fill_begin(fs->mdc, dir, mdt, grant ? MDC_FILL_BATCHES : 1, &fl))
        return false;
    /* Unlinks queued before go first (every MDT call waits for them); a
     * listing of names cannot meet bytes written behind. */
    wb_pass_behind(true);
    bool done = fill_part(fs, &fl, grant ? MDC_FILL_BATCHES : 1, grant);
    wb_pass_behind(false);
    return done;
}

int cl_lookup(stria_fs_t *fs, uint64_t parent, const char *path, bool follow,
              struct proto_attr *out)
{
    int rc = check_path(path);
    if (rc)
        return rc;
    struct proto_lookup_req q = {.parent = parent, .path = proto_str_c(path), .follow = follow};
    struct proto_lookup_rep r;
    cl_cred(&q.cred);
    if (fs->mdc && !follow && cl_one_name(path) &&
        (rc = cl_lookup_cached(fs, parent, path, &q.cred, out)) != -EAGAIN)
        return rc;
    /* A lookup the mount's open is likely to follow takes a small file's
     * bytes with it (peek.h): handed over (or dropped) while the reply is
     * still ours, since their CRCs point into it. */
    uint64_t epoch = 0;
    uint32_t got = 0;
    bool peek = fs->peek && !follow && cl_one_name(path);
    char *ra = peek ? peek_want(fs, &epoch) : NULL;
    q.dom_len = ra ? PEEK_CAP : 0;
    int64_t sent = mdc_clock_ms();
    bool remote = false;
    rc = ROUTED_CALL_BULK(
        fs, parent, path, parent, path, lookup, &q, &r, ra, ra ? PEEK_CAP : 0, &got, *out = r.attr;
        remote = r.remote; if (!remote) {
            cl_note_layout(fs, sent, &r.leases, follow ? 0 : parent, path, &r.attr, &r.layout);
            cl_learn(fs, &r.attr);
        } if (peek) {
            peek_took(fs, &r, ra, got, epoch);
            ra = NULL;
        });
    peek_drop(fs, ra); /* the lookup failed */
    if (rc == 0 && remote)
        return cl_getattr(fs, out->ino, out); /* the entry's inode is on another MDT */
    if (rc == -EREMOTE)
        return cl_resolve(fs, parent, path, follow, out); /* through a symlink, say */
    return rc;
}

bool cl_walk_dir(stria_fs_t *fs, uint64_t *parent, const char **path, bool ask)
{
    const char *p = *path;
    uint64_t dir = *parent;
    const char *slash = strrchr(p, '/');
    if (!fs->mdc || !slash || !slash[1])
        return false; /* one name, or none last: nothing to walk here */
    if (*p == '/')
        dir = PROTO_ROOT_INO;
    /* A lookup answered here checks search permission on the directory:
     * the first one's attributes must be here too (a program's first
     * requests may have gone before the cache's channel was up). */
    struct proto_attr a;
    if (ask && (cl_getattr(fs, dir, &a) || !S_ISDIR(a.mode)))
        return false;
    struct proto_cred cred;
    cl_cred(&cred);
    char name[PROTO_MAX_STR + 1];
    for (;;) { /* each turn takes a name of the path */
        while (*p == '/')
            p++;
        size_t len = strcspn(p, "/");
        if (!len || !p[len])
            break; /* the last name; none (a trailing '/') is the MDT's to judge */
        if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        memcpy(name, p, len);
        name[len] = '\0';
        int rc = ask ? cl_lookup(fs, dir, name, false, &a)
                     : cached_lookup(fs, dir, cl_name_mdt(fs, dir, name, len), name, &cred, &a);
        if (rc || !S_ISDIR(a.mode))
            return false; /* a symlink, an error, not cached: the MDT's walk says */
        dir = a.ino;
        p += len;
    }
    if (!cl_one_name(p))
        return false;
    *parent = dir;
    *path = p;
    return true;
}

int cl_mkdir(stria_fs_t *fs, uint64_t parent, const char *path, mode_t mode, struct proto_attr *out)
{
    return cl_mkdir_striped(fs, parent, path, mode, 0, -1, out);
}

int cl_mkdir_striped(stria_fs_t *fs, uint64_t parent, const char *path, mode_t mode, int32_t count,
                     int32_t start, struct proto_attr *out)
{
    int rc = check_path(path);
    if (rc)
        return rc;
    struct proto_mkdir_req q = {.mode = mode, .dir_count = count, .dir_start = start};
    struct proto_mkdir_rep r;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    rc = ROUTED_CALL(fs, parent, path, parent, path, mkdir, &q, &r, if (out) *out = r.attr;
                     cl_note(fs, sent, &r.leases, parent, path, r.attr.ino, 0, NULL, &r.attr);
                     cl_learn(fs, &r.attr));
    if (rc == 0 && fs->mdc)
        new_dir(fs, &r.attr);
    return rc;
}

int cl_rmdir(stria_fs_t *fs, uint64_t parent, const char *path)
{
    int rc = check_path(path);
    if (rc)
        return rc;
    struct proto_rmdir_req q;
    struct proto_rmdir_rep r;
    memset(&q, 0, sizeof(q));
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    return ROUTED_CALL(fs, parent, path, parent, path, rmdir, &q, &r,
                       cl_note(fs, sent, &r.leases, parent, path, 0, 0, NULL, NULL));
}

/* What an UNLINK or RENAME reply says was removed. */
static void removed(struct stria_removed *rm, uint64_t ino, uint8_t gone, uint8_t destroy,
                    uint64_t size, const struct layout *l)
{
    rm->ino = ino;
    rm->gone = gone;
    rm->destroy = destroy;
    rm->size = size;
    rm->layout = *l;
}

int cl_unlink(stria_fs_t *fs, uint64_t parent, const char *path, struct stria_removed *rm)
{
    int rc = check_path(path);
    if (rc)
        return rc;
    /* Write-behind's grant is per MDT: asked of the one holding the name. */
    struct proto_unlink_req q = {
        .parent = parent,
        .path = proto_str_c(path),
        .want_wb =
            cl_one_name(path) && wb_want(fs, cl_name_mdt(fs, parent, path, strlen(path)), false)};
    struct proto_unlink_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    rc = ROUTED_CALL(fs, parent, path, parent, path, unlink, &q, r,
                     removed(rm, r->ino, r->gone, r->destroy, r->size, &r->layout);
                     cl_note(fs, sent, &r->leases, parent, path, 0, 0, NULL, NULL);
                     if (r->wb_ms && fs->mdc)
                         wb_granted(fs, (uint32_t)mdc_reply_mdt(fs->mdc, r->leases.instance),
                                    r->wb_id, r->wb_ms, sent, WB_ROOM_UNKNOWN));
    free(r);
    return rc;
}

int cl_rename(stria_fs_t *fs, uint64_t sparent, const char *spath, uint64_t dparent,
              const char *dpath, unsigned flags, struct stria_removed *rm)
{
    int rc = check_path(spath);
    if (rc || (rc = check_path(dpath)))
        return rc;
    struct proto_rename_req q = {.sparent = sparent,
                                 .spath = proto_str_c(spath),
                                 .dparent = dparent,
                                 .dpath = proto_str_c(dpath),
                                 .flags = flags};
    struct proto_rename_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    /* The destination's directory is walked here when it is not where the
     * source is; the MDT of the source's name runs the rename. */
    struct cl_route drt;
    cl_route(fs, dparent, dpath, &drt);
    if (__atomic_load_n(&fs->mdt_count, __ATOMIC_RELAXED) > 1 && strchr(dpath, '/') &&
        (drt.cached || (rc = cl_reroute(fs, &drt)) == 0)) {
        q.dparent = drt.parent;
        q.dpath = proto_str_c(drt.path);
    }
    q.dmdt = drt.mdt; /* where the destination name lives, for a rename between MDTs */
    if (rc == 0)
        rc = ROUTED_CALL(fs, sparent, spath, sparent, spath, rename, &q, r,
                         removed(rm, r->replaced, r->gone, r->destroy, r->size, &r->layout);
                         cl_note_rename(fs, sent, &r->leases, sparent, spath, dparent, dpath,
                                        (flags & RENAME_EXCHANGE) != 0));
    if (rc == -EREMOTE)
        rc = -EXDEV;
    free(r);
    return rc;
}

int cl_link(stria_fs_t *fs, uint64_t ino, uint64_t dparent, const char *dpath,
            struct proto_attr *out)
{
    int rc = check_path(dpath);
    if (rc)
        return rc;
    struct proto_link_req q = {.ino = ino, .dparent = dparent, .dpath = proto_str_c(dpath)};
    struct proto_link_rep r;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    rc = ROUTED_CALL(fs, dparent, dpath, dparent, dpath, link, &q, &r, if (out) *out = r.attr;
                     cl_note(fs, sent, &r.leases, dparent, dpath, r.attr.ino, 0, NULL, &r.attr));
    return rc == -EREMOTE ? -EXDEV : rc;
}

int cl_symlink(stria_fs_t *fs, uint64_t parent, const char *path, const char *target,
               struct proto_attr *out)
{
    int rc = check_path(path);
    if (rc || (rc = check_path(target)))
        return rc;
    struct proto_symlink_req q = {
        .parent = parent, .path = proto_str_c(path), .target = proto_str_c(target)};
    struct proto_symlink_rep r;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    return ROUTED_CALL(fs, parent, path, parent, path, symlink, &q, &r, if (out) * out = r.attr;
                       cl_note(fs, sent, &r.leases, parent, path, r.attr.ino, 0, NULL, &r.attr));
}

int cl_mknod(stria_fs_t *fs, uint64_t parent, const char *path, mode_t mode, dev_t rdev,
             struct proto_attr *out)
{
    int rc = check_path(path);
    if (rc)
        return rc;
    struct proto_mknod_req q = {.mode = mode, .rdev = rdev};
    struct proto_mknod_rep r;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    return ROUTED_CALL(fs, parent, path, parent, path, mknod, &q, &r, if (out) * out = r.attr;
                       cl_note(fs, sent, &r.leases, parent, path, r.attr.ino, 0, NULL, &r.attr));
}

int cl_setattr(stria_fs_t *fs, uint64_t ino, struct proto_setattr_req *q,
               struct proto_setattr_rep *r)
{
    q->ino = ino;
    cl_cred(&q->cred);
    /* Gathered writes land first: they would regrow a truncated file, or
     * their size report undo the times set here. */
    gather_drain(fs, ino);
    if (q->valid & SETATTR_SIZE)
        atomic_fetch_add(&fs->write_epoch, 1);
    int64_t sent = mdc_clock_ms();
    int rc = MDT_CALL(fs, proto_ino_mdt(ino), setattr, q, r,
                      cl_note(fs, sent, &r->leases, 0, NULL, 0, 0, NULL, &r->attr));
    /* Before and after: a buffer filled while it was on its way is stale. */
    if (q->valid & SETATTR_SIZE)
        atomic_fetch_add(&fs->write_epoch, 1);
    /* A released file's size changes once its data is back (hsm.h). */
    if (rc == -EBUSY && (q->valid & SETATTR_SIZE) && q->size &&
        (rc = hsm_restore_ino(fs, ino, NULL, NULL, NULL, 0)) == 0) {
        sent = mdc_clock_ms();
        rc = MDT_CALL(fs, proto_ino_mdt(ino), setattr, q, r,
                      cl_note(fs, sent, &r->leases, 0, NULL, 0, 0, NULL, &r->attr));
    }
    /* Shrinking: cut the objects to what the new size implies. */
    if (rc == 0 && (q->valid & SETATTR_SIZE) && q->size < r->old_size && r->layout.ncomp)
        rc = io_objects(fs, ino, &r->layout, IO_TRUNCATE, q->size);
    return rc;
}

int cl_readdir(stria_fs_t *fs, uint64_t ino, uint64_t cookie, bool plus, uint8_t *buf, uint32_t cap,
               struct cl_dirbatch *out, struct cl_shards **keep)
{
    uint64_t ds = 0;
    if (__atomic_load_n(&fs->mdt_count, __ATOMIC_RELAXED) > 1) {
        int rc = cl_dir_stripe(fs, ino, &ds);
        if (rc)
            return rc;
        if (ds)
            return cl_readdir_striped(fs, ino, ds, cookie, plus, buf, cap, out, keep);
    }
    struct proto_readdir_req q = {.ino = ino, .cookie = cookie, .max_bytes = cap, .plus = plus};
    struct proto_readdir_rep r;
    cl_cred(&q.cred);
    return MDT_CALL(fs, proto_ino_mdt(ino), readdir, &q, &r, ({
                        uint32_t n = MIN(r.entries.len, cap);
                        memcpy(buf, r.entries.p, n);
                        out->len = n;
                        out->count = r.count;
                        out->eof = r.eof;
                    }));
}

/* This thread's batch of DESTROYED notices, if any (ns.h). */
static __thread struct cl_destroyed_batch *destroyed_batch;

/* Tell the MDTs that the objects of n files are gone: one DESTROYED per
 * MDT for each PROTO_MAX_DESTROYED of its files. */
static void tell_destroyed(stria_fs_t *fs, const uint64_t *inos, uint32_t n)
{
    bool told[PROTO_MAX_DESTROYED] = {false};
    for (uint32_t i = 0; i < n; i++) {
        if (told[i])
            continue;
        uint32_t mdt = proto_ino_mdt(inos[i]);
        uint8_t more[8 * (PROTO_MAX_DESTROYED - 1)];
        uint32_t nmore = 0;
        for (uint32_t j = i + 1; j < n && nmore < PROTO_MAX_DESTROYED - 1; j++)
            if (!told[j] && proto_ino_mdt(inos[j]) == mdt) {
                proto_put_le64(more + 8 * nmore++, inos[j]);
                told[j] = true;
            }
        struct proto_destroyed_req q = {.ino = inos[i], .more = {more, 8 * nmore}};
        struct proto_destroyed_rep r;
        cl_cred(&q.cred);
        int rc = MDT_CALL(fs, mdt, destroyed, &q, &r, (void)0);
        if (rc)
            log_warn("%u file(s) of MDT%04x: objects removed, but the MDT was not told: %s",
                     nmore + 1, mdt, log_err(rc));
    }
}

void cl_destroyed_begin(stria_fs_t *fs, struct cl_destroyed_batch *b)
{
    b->fs = fs;
    b->n = 0;
    b->nobj = 0;
    destroyed_batch = b;
}

/* Objects went: stria_statfs's kept answer is stale, and a write that
 * met a full OST meanwhile may try again (io.c). */
static void space_freed(stria_fs_t *fs)
{
    atomic_fetch_add(&fs->freed_gen, 1);
    pthread_mutex_lock(&fs->statfs_lock);
    fs->statfs_at_ns = 0;
    pthread_mutex_unlock(&fs->statfs_lock);
}

/* DESTROY the n objects of v, of any files: one request for each
 * PROTO_MAX_DESTROY of them on one OST, retried as any OST call; each
 * v[i].rc gets its request's result. */
static void destroy_objects(stria_fs_t *fs, struct io_obj *v, size_t n)
{
    bool *sent = calloc(n ? n : 1, sizeof(*sent));
    if (!sent) {
        for (size_t i = 0; i < n; i++)
            v[i].rc = -ENOMEM;
        return;
    }
    uint8_t more[PROTO_DESTROY_ENTRY * (PROTO_MAX_DESTROY - 1)];
    size_t with[PROTO_MAX_DESTROY - 1];
    for (size_t i = 0; i < n; i++) {
        if (sent[i])
            continue;
        uint32_t nmore = 0;
        for (size_t j = i + 1; j < n && nmore < PROTO_MAX_DESTROY - 1; j++) {
            if (sent[j] || v[j].ost != v[i].ost)
                continue;
            uint8_t *e = more + PROTO_DESTROY_ENTRY * nmore;
            proto_put_le64(e, v[j].ino);
            proto_put_le32(e + 8, v[j].comp);
            proto_put_le32(e + 12, v[j].stripe);
            with[nmore++] = j;
            sent[j] = true;
        }
        struct proto_destroy_req q = {.ost = v[i].ost,
                                      .ino = v[i].ino,
                                      .comp = v[i].comp,
                                      .stripe = v[i].stripe,
                                      .more = {more, PROTO_DESTROY_ENTRY * nmore}};
        struct proto_destroy_rep r;
        int rc = TARGET_CALL(fs, PROTO_NODE_STOR, v[i].ost, destroy, &q, &r, (void)0);
        v[i].rc = rc;
        for (uint32_t k = 0; k < nmore; k++)
            v[with[k]].rc = rc;
    }
    free(sent);
}

/* Remove the objects b keeps, then tell the MDTs of the files whose
 * objects all went; a file one of whose objects could not be removed stays
 * pending, as outside a batch. */
static void batch_flush(struct cl_destroyed_batch *b)
{
    destroy_objects(b->fs, b->obj, b->nobj);
    if (b->nobj)
        space_freed(b->fs);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        int rc = 0;
        for (uint32_t k = 0; k < b->nobj && !rc; k++)
            if (b->obj[k].ino == b->ino[i])
                rc = b->obj[k].rc;
        if (rc)
            log_warn("inode %llx: could not remove all objects: %s", (unsigned long long)b->ino[i],
                     log_err(rc));
        else
            b->ino[kept++] = b->ino[i];
    }
    tell_destroyed(b->fs, b->ino, kept);
    b->n = 0;
    b->nobj = 0;
}

void cl_destroyed_end(struct cl_destroyed_batch *b)
{
    destroyed_batch = NULL;
    batch_flush(b);
}

void cl_destroyed_add(struct cl_destroyed_batch *b, uint64_t ino, const struct io_obj *obj,
                      uint32_t nobj)
{
    if (b->n == PROTO_MAX_DESTROYED || b->nobj + nobj > CL_BATCH_OBJECTS)
        batch_flush(b);
    for (uint32_t i = 0; i < nobj; i++)
        b->obj[b->nobj++] = obj[i];
    b->ino[b->n++] = ino;
}

void cl_destroy(stria_fs_t *fs, const struct stria_removed *rm)
{
    if (!rm->destroy)
        return;
    gather_drain(fs, rm->ino); /* or it would make the objects again */
    struct cl_destroyed_batch *b = destroyed_batch;
    if (b && b->fs != fs)
        b = NULL;
    size_t nobj = io_objects_of(rm->ino, &rm->layout, NULL, 0);
    if (b && !cl_migrated(&rm->layout) && nobj <= CL_BATCH_OBJECTS) {
        struct io_obj obj[CL_BATCH_OBJECTS];
        io_objects_of(rm->ino, &rm->layout, obj, nobj);
        cl_destroyed_add(b, rm->ino, obj, (uint32_t)nobj);
        return;
    }
    /* A failure leaves orphan objects (space, not data, is lost), which
     * stria fsck finds: the MDT keeps the inode pending until told. */
    int rc = io_objects(fs, rm->ino, &rm->layout, IO_DESTROY, 0);
    if (rc) {
        log_warn("inode %llx: could not remove all objects: %s", (unsigned long long)rm->ino,
                 log_err(rc));
        return;
    }
    space_freed(fs);
    cl_migrate_forget(fs, rm->ino, &rm->layout);
    if (!b) {
        tell_destroyed(fs, &rm->ino, 1);
        return;
    }
    if (b->n == PROTO_MAX_DESTROYED)
        batch_flush(b);
    b->ino[b->n++] = rm->ino;
}
