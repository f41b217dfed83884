/*
 * The public namespace API of stria.h at both of its levels, over the
 * calls on names and inodes (ns.h, inode.h) and file handles (file.h).
 *
 * The inode level (stria_*_at, stria_*_ino, with public attribute
 * structs) is what a server acting for others, such as the FUSE mount,
 * uses; the path API (stria_*) is the same calls started at the root.
 * Directory streams and removals handed to the caller (stria_removed_t)
 * live here. Nothing but stria.h declares what this file defines.
 */
#include "../common/log.h"
#include "../common/util.h"
#include "file.h"
#include "gather.h"
#include "io.h"
#include "mdcache.h"
#include "migrate.h"
#include "ns.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ---- the public path API: the same calls, from the root ---- */

static int lookup(stria_fs_t *fs, const char *path, bool follow, struct proto_attr *attr)
{
    return cl_lookup(fs, PROTO_ROOT_INO, path, follow, attr);
}

int stria_stat(stria_fs_t *fs, const char *path, struct stat *st)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    if (rc == 0) {
        cl_merge_times(fs, &a);
        cl_to_stat(&a, st);
    }
    return rc;
}

int stria_lstat(stria_fs_t *fs, const char *path, struct stat *st)
{
    struct proto_attr a;
    int rc = lookup(fs, path, false, &a);
    if (rc == 0) {
        cl_merge_times(fs, &a);
        cl_to_stat(&a, st);
    }
    return rc;
}

int stria_mkdir(stria_fs_t *fs, const char *path, mode_t mode)
{
    return cl_mkdir(fs, PROTO_ROOT_INO, path, mode, NULL);
}

int stria_mkdir_striped(stria_fs_t *fs, const char *path, mode_t mode, int32_t count, int32_t start)
{
    return cl_mkdir_striped(fs, PROTO_ROOT_INO, path, mode, count, start, NULL);
}

int stria_setdirstripe(stria_fs_t *fs, const char *path, int32_t count, int32_t start)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    return rc ? rc : cl_setdirstripe(fs, a.ino, count, start);
}

int stria_rmdir(stria_fs_t *fs, const char *path)
{
    return cl_rmdir(fs, PROTO_ROOT_INO, path);
}

int stria_unlink(stria_fs_t *fs, const char *path)
{
    struct stria_removed *rm = calloc(1, sizeof(*rm));
    if (!rm)
        return -ENOMEM;
    int rc = cl_unlink(fs, PROTO_ROOT_INO, path, rm);
    if (rc == 0)
        cl_destroy(fs, rm);
    free(rm);
    return rc;
}

int stria_rename(stria_fs_t *fs, const char *from, const char *to, unsigned flags)
{
    struct stria_removed *rm = calloc(1, sizeof(*rm));
    if (!rm)
        return -ENOMEM;
    int rc = cl_rename(fs, PROTO_ROOT_INO, from, PROTO_ROOT_INO, to, flags, rm);
    if (rc == 0)
        cl_destroy(fs, rm);
    free(rm);
    return rc;
}

int stria_link(stria_fs_t *fs, const char *existing, const char *newpath)
{
    struct proto_attr a;
    int rc = lookup(fs, existing, false, &a);
    return rc ? rc : cl_link(fs, a.ino, PROTO_ROOT_INO, newpath, NULL);
}

int stria_symlink(stria_fs_t *fs, const char *target, const char *linkpath)
{
    return cl_symlink(fs, PROTO_ROOT_INO, linkpath, target, NULL);
}

int stria_mknod(stria_fs_t *fs, const char *path, mode_t mode, dev_t rdev)
{
    return cl_mknod(fs, PROTO_ROOT_INO, path, mode, rdev, NULL);
}

ssize_t stria_readlink(stria_fs_t *fs, const char *path, char *buf, size_t len)
{
    struct proto_attr a;
    int rc = lookup(fs, path, false, &a);
    return rc ? rc : cl_readlink(fs, a.ino, buf, len);
}

static int setattr_path(stria_fs_t *fs, const char *path, bool follow, struct proto_setattr_req *q)
{
    struct proto_attr a;
    int rc = lookup(fs, path, follow, &a);
    if (rc)
        return rc;
    struct proto_setattr_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    rc = cl_setattr(fs, a.ino, q, r);
    free(r);
    return rc;
}

int stria_truncate(stria_fs_t *fs, const char *path, off_t size)
{
    if (size < 0)
        return -EINVAL;
    struct proto_setattr_req q = {.valid = SETATTR_SIZE, .size = (uint64_t)size};
    return setattr_path(fs, path, true, &q);
}

int stria_chmod(stria_fs_t *fs, const char *path, mode_t mode)
{
    struct proto_setattr_req q = {.valid = SETATTR_MODE, .mode = mode};
    return setattr_path(fs, path, true, &q);
}

int stria_chown(stria_fs_t *fs, const char *path, uid_t uid, gid_t gid)
{
    struct proto_setattr_req q = {0};
    if (uid != (uid_t)-1) {
        q.valid |= SETATTR_UID;
        q.uid = uid;
    }
    if (gid != (gid_t)-1) {
        q.valid |= SETATTR_GID;
        q.gid = gid;
    }
    return setattr_path(fs, path, true, &q);
}

int stria_utimens(stria_fs_t *fs, const char *path, const struct timespec times[2])
{
    struct proto_setattr_req q = {0};
    cl_set_time(&q, times ? &times[0] : NULL, true);
    cl_set_time(&q, times ? &times[1] : NULL, false);
    if (!q.valid)
        return 0;
    return setattr_path(fs, path, true, &q);
}

#define DIR_BATCH     (256u << 10)
#define DIR_BATCH_INO (64u << 10) /* a caller such as the mount keeps many open */

/* An open directory: the last batch read from the MDT. stria_readdir reads
 * it in order; stria_readdir_at by position (the entry at at_cookie starts
 * at off; the one last given, given_len bytes, ends at given_next). */
struct stria_dir {
    stria_fs_t *fs;
    uint64_t ino;
    uint64_t cookie;
    uint8_t *buf;
    uint32_t cap;
    struct cl_dirbatch b;
    uint32_t off, left;
    bool have, plus, given;
    uint64_t at_cookie, given_next;
    uint32_t given_len;
    struct cl_shards *shards; /* a striped directory's batches per shard */
    uint64_t dstripe;         /* its stripe over MDTs (0: plain) */
    uint64_t xseq;            /* the cache's mdc_listing_seq before the batch was asked */
};

/* A handle on directory a (rc: the lookup's result) with batches of cap. */
static int dir_open(stria_fs_t *fs, int rc, const struct proto_attr *a, uint32_t cap,
                    stria_dir_t **out)
{
    if (rc)
        return rc;
    if (!S_ISDIR(a->mode))
        return -ENOTDIR;
    stria_dir_t *d = calloc(1, sizeof(*d));
    if (!d || !(d->buf = malloc(cap))) {
        free(d);
        return -ENOMEM;
    }
    d->fs = fs;
    d->ino = a->ino;
    d->cap = cap;
    d->dstripe = a->dstripe;
    *out = d;
    return 0;
}

int stria_dir_on_one_mdt(const stria_dir_t *d)
{
    return proto_ds_count(d->dstripe) == 1;
}

int stria_dir_version(stria_dir_t *d, uint64_t *version)
{
    stria_fs_t *fs = d->fs;
    if (!fs->mdc)
        return -EOPNOTSUPP;
    uint64_t h = 0;
    for (uint32_t k = 0; k < proto_ds_count(d->dstripe); k++) {
        /* Chained over the parts: the hash so far, the part's MDT, the
         * instance and the lease's generation there. */
        uint64_t v[4] = {h, cl_dir_part_mdt(d->ino, d->dstripe, k)};
        if (!mdc_lease_gen(fs->mdc, d->ino, (uint32_t)v[1], &v[2], &v[3]) &&
            (cl_lease_part(fs, d->ino, (uint32_t)v[1]) ||
             !mdc_lease_gen(fs->mdc, d->ino, (uint32_t)v[1], &v[2], &v[3])))
            return -EAGAIN; /* unreachable, or refused: a change raced */
        h = util_hash64(v, sizeof(v));
    }
    *version = h ? h : 1;
    return 0;
}

int stria_opendir(stria_fs_t *fs, const char *path, stria_dir_t **out)
{
    struct proto_attr a;
    return dir_open(fs, lookup(fs, path, true, &a), &a, DIR_BATCH, out);
}

/* The path API's readdir: the inode level's from where the last ended. */
int stria_readdir(stria_dir_t *d, struct stria_dirent *ent)
{
    struct stria_direntplus e;
    int rc = stria_readdir_at(d, d->cookie, 0, &e);
    if (rc == 1) {
        d->cookie = e.next_cookie;
        *ent = e.d;
    }
    return rc;
}

void stria_closedir(stria_dir_t *d)
{
    if (!d)
        return;
    free(d->buf);
    cl_shards_free(d->shards);
    free(d);
}

int stria_setxattr(stria_fs_t *fs, const char *path, const char *name, const void *value,
                   size_t size, int flags)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    return rc ? rc : cl_setxattr(fs, a.ino, name, value, size, flags);
}

ssize_t stria_getxattr(stria_fs_t *fs, const char *path, const char *name, void *value, size_t size)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    return rc ? rc : cl_getxattr(fs, a.ino, name, value, size);
}

ssize_t stria_listxattr(stria_fs_t *fs, const char *path, char *list, size_t size)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    return rc ? rc : cl_listxattr(fs, a.ino, list, size);
}

int stria_removexattr(stria_fs_t *fs, const char *path, const char *name)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    return rc ? rc : cl_removexattr(fs, a.ino, name);
}

int stria_getstripe(stria_fs_t *fs, const char *path, struct stria_layout *out)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    return rc ? rc : cl_getstripe(fs, a.ino, out);
}

int stria_setstripe(stria_fs_t *fs, const char *path, int32_t count, uint32_t size, int32_t offset)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    if (rc == -ENOENT) {
        /* A new, empty file with this layout. */
        stria_file_t *f;
        rc = cl_open(fs, PROTO_ROOT_INO, path, O_CREAT | O_EXCL | O_WRONLY, 0666 & ~cl_umask(),
                     count, size, offset, &f, NULL);
        return rc ? rc : stria_close(f);
    }
    return rc ? rc : cl_setstripe(fs, a.ino, count, size, offset, NULL);
}

/* The template of comps (n of them), every component pending. */
static int comps_template(unsigned n, const struct stria_comp_spec *comps, struct layout *t)
{
    if (n < 1 || n > LAYOUT_MAX_COMP || !comps)
        return -EINVAL;
    uint64_t start = 0;
    for (unsigned i = 0; i < n; i++) {
        const struct stria_comp_spec *s = &comps[i];
        struct layout_comp *c = &t->comp[i];
        if (s->end <= start || s->stripe_count < -1 || s->stripe_count > LAYOUT_MAX_STRIPES ||
            s->first_ost < -1)
            return -EINVAL;
        c->start = start;
        c->end = s->end;
        c->stripe_size = s->stripe_size;
        c->stripe_count = s->stripe_count < 0 ? LAYOUT_COUNT_ALL : (uint16_t)s->stripe_count;
        c->type = (s->on_mdt ? LAYOUT_TYPE_MDT : LAYOUT_TYPE_OST) | LAYOUT_F_PENDING;
        if (s->on_mdt) {
            /* One stripe, as large as the component (lfs's -L mdt). */
            c->stripe_count = 1;
            c->stripe_size = 0;
        }
        c->groups[0] = s->first_ost < 0 ? LAYOUT_ANY_OST : (uint32_t)s->first_ost;
        if (!memchr(s->pool, 0, sizeof(s->pool)) || !layout_pool_name_ok(s->pool, true))
            return -EINVAL;
        snprintf(c->pool, sizeof(c->pool), "%s", s->pool);
        start = s->end;
    }
    t->ncomp = (uint16_t)n;
    return layout_validate(t);
}

/* Whether every pool the components name is one the management service
 * has (-EINVAL otherwise). The MDT does not refuse a pool it does not
 * know: its map may be older than the pool. */
static int pools_exist(stria_fs_t *fs, unsigned n, const struct stria_comp_spec *comps)
{
    bool any = false;
    for (unsigned i = 0; i < n; i++)
        any |= comps[i].pool[0] != 0;
    if (!any)
        return 0;
    struct stria_pool *v;
    size_t np;
    int rc = stria_pools(fs, &v, &np);
    if (rc)
        return rc;
    for (unsigned i = 0; i < n && !rc; i++) {
        bool found = !comps[i].pool[0];
        for (size_t k = 0; k < np && !found; k++)
            found = !strcmp(v[k].name, comps[i].pool);
        if (!found)
            rc = -EINVAL;
    }
    free(v);
    return rc;
}

int stria_setstripe_comps_ino(stria_fs_t *fs, uint64_t ino, unsigned n,
                              const struct stria_comp_spec *comps)
{
    struct layout *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    int rc = comps_template(n, comps, t);
    if (rc == 0)
        rc = pools_exist(fs, n, comps);
    if (rc == 0)
        rc = cl_setstripe(fs, ino, 0, 0, -1, t);
    free(t);
    return rc;
}

int stria_setstripe_comps(stria_fs_t *fs, const char *path, unsigned n,
                          const struct stria_comp_spec *comps)
{
    struct layout *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    int rc = comps_template(n, comps, t);
    if (rc == 0)
        rc = pools_exist(fs, n, comps);
    struct proto_attr a;
    if (rc == 0 && (rc = lookup(fs, path, true, &a)) == -ENOENT) {
        /* A new, empty file, then its layout: made for reading, so that
         * the MDT does not take it as one whose objects may exist. */
        stria_file_t *f;
        rc = cl_open(fs, PROTO_ROOT_INO, path, O_CREAT | O_EXCL | O_RDONLY, 0666 & ~cl_umask(), 0,
                     0, -1, &f, NULL);
        if (rc == 0) {
            a.ino = stria_file_ino(f);
            rc = stria_close(f);
        }
    }
    if (rc == 0)
        rc = cl_setstripe(fs, a.ino, 0, 0, -1, t);
    free(t);
    return rc;
}

int stria_migrate(stria_fs_t *fs, const char *path, unsigned n, const struct stria_comp_spec *comps,
                  stria_progress_fn fn, void *arg, char *why, size_t whylen)
{
    struct layout *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    struct proto_attr a;
    int rc = comps_template(n, comps, t);
    if (rc == 0)
        rc = pools_exist(fs, n, comps);
    if (rc == 0)
        rc = lookup(fs, path, true, &a);
    if (rc == 0 && !S_ISREG(a.mode))
        rc = S_ISDIR(a.mode) ? -EISDIR : -EINVAL;
    if (rc == 0)
        rc = cl_migrate(fs, a.ino, t, fn, arg, why, whylen);
    free(t);
    return rc;
}

int stria_migrate_recover(stria_fs_t *fs, uint64_t ino)
{
    return cl_migrate_recover(fs, ino, NULL);
}

/* ---- the public inode level (stria.h): the cl_* calls in public types ---- */

void stria_attr_to_stat(const struct stria_attr *a, struct stat *st)
{
    struct proto_attr p = {.ino = a->ino,
                           .mode = a->mode,
                           .nlink = a->nlink,
                           .uid = a->uid,
                           .gid = a->gid,
                           .size = a->size,
                           .blocks = a->blocks,
                           .atime_ns = a->atime_ns,
                           .mtime_ns = a->mtime_ns,
                           .ctime_ns = a->ctime_ns,
                           .rdev = a->rdev};
    cl_to_stat(&p, st);
}

int stria_lookup_at(stria_fs_t *fs, uint64_t parent, const char *name, struct stria_attr *out)
{
    struct proto_attr a;
    int rc = cl_lookup(fs, parent, name, false, &a);
    if (rc == 0) {
        cl_merge_times(fs, &a);
        cl_attr_out(&a, out);
    }
    return rc;
}

int stria_getattr_ino(stria_fs_t *fs, uint64_t ino, struct stria_attr *out)
{
    struct proto_attr a;
    int rc = cl_getattr(fs, ino, &a);
    if (rc == 0) {
        cl_merge_times(fs, &a);
        cl_attr_out(&a, out);
    }
    return rc;
}

int stria_setattr_ino(stria_fs_t *fs, uint64_t ino, const struct stria_setattr *s,
                      stria_file_t *via, struct stria_attr *out)
{
    struct proto_setattr_req q = {0};
    if (s->valid & STRIA_SET_MODE) {
        q.valid |= SETATTR_MODE;
        q.mode = s->mode;
    }
    if (s->valid & STRIA_SET_UID) {
        q.valid |= SETATTR_UID;
        q.uid = s->uid;
    }
    if (s->valid & STRIA_SET_GID) {
        q.valid |= SETATTR_GID;
        q.gid = s->gid;
    }
    if (s->valid & STRIA_SET_SIZE) {
        q.valid |= SETATTR_SIZE;
        q.size = s->size;
        /* ftruncate: the handle an open for writing made; the file's mode
         * now is no bar (open(2) with O_CREAT and mode 0). */
        if (via && stria_file_writable(via))
            q.valid |= SETATTR_WRITER;
    }
    if (s->valid & STRIA_SET_ATIME_NOW)
        q.valid |= SETATTR_ATIME_NOW;
    else if (s->valid & STRIA_SET_ATIME)
        cl_set_time(&q, &s->atime, true);
    if (s->valid & STRIA_SET_MTIME_NOW)
        q.valid |= SETATTR_MTIME_NOW;
    else if (s->valid & STRIA_SET_MTIME)
        cl_set_time(&q, &s->mtime, false);
    if ((s->valid & STRIA_SET_TIMES_CHECKED) && (q.valid & (SETATTR_ATIME | SETATTR_MTIME)))
        q.valid |= SETATTR_TIMES_CHECKED;
    struct proto_setattr_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    int rc = cl_setattr(fs, ino, &q, r);
    if (rc == 0) {
        cl_merge_times(fs, &r->attr);
        cl_attr_out(&r->attr, out);
    }
    free(r);
    return rc;
}

int stria_open_at(stria_fs_t *fs, uint64_t parent, const char *name, int flags, mode_t mode,
                  stria_file_t **out, struct stria_attr *attr)
{
    struct proto_attr a;
    int rc = cl_open(fs, parent, name, flags, mode, 0, 0, -1, out, &a);
    if (rc == 0)
        cl_attr_out(&a, attr);
    return rc;
}

int stria_mkdir_at(stria_fs_t *fs, uint64_t parent, const char *name, mode_t mode,
                   struct stria_attr *out)
{
    struct proto_attr a;
    int rc = cl_mkdir(fs, parent, name, mode, &a);
    if (rc == 0)
        cl_attr_out(&a, out);
    return rc;
}

int stria_rmdir_at(stria_fs_t *fs, uint64_t parent, const char *name)
{
    return cl_rmdir(fs, parent, name);
}

int stria_mknod_at(stria_fs_t *fs, uint64_t parent, const char *name, mode_t mode, dev_t rdev,
                   struct stria_attr *out)
{
    struct proto_attr a;
    int rc = cl_mknod(fs, parent, name, mode, rdev, &a);
    if (rc == 0)
        cl_attr_out(&a, out);
    return rc;
}

int stria_symlink_at(stria_fs_t *fs, uint64_t parent, const char *name, const char *target,
                     struct stria_attr *out)
{
    struct proto_attr a;
    int rc = cl_symlink(fs, parent, name, target, &a);
    if (rc == 0)
        cl_attr_out(&a, out);
    return rc;
}

int stria_link_at(stria_fs_t *fs, uint64_t ino, uint64_t dparent, const char *dname,
                  struct stria_attr *out)
{
    struct proto_attr a;
    int rc = cl_link(fs, ino, dparent, dname, &a);
    if (rc == 0)
        cl_attr_out(&a, out);
    return rc;
}

ssize_t stria_readlink_ino(stria_fs_t *fs, uint64_t ino, char *buf, size_t len)
{
    return cl_readlink(fs, ino, buf, len);
}

/* Hand a removal to the caller (rm_out) or finish it here. */
static int removal(stria_fs_t *fs, int rc, struct stria_removed *rm, stria_removed_t **rm_out)
{
    if (rc == 0 && rm->gone && rm_out) {
        *rm_out = rm;
        return 0;
    }
    if (rc == 0 && rm->gone)
        cl_destroy(fs, rm);
    free(rm);
    return rc;
}

int stria_unlink_at(stria_fs_t *fs, uint64_t parent, const char *name, stria_removed_t **rm_out)
{
    if (rm_out)
        *rm_out = NULL;
    struct stria_removed *rm = calloc(1, sizeof(*rm));
    if (!rm)
        return -ENOMEM;
    return removal(fs, cl_unlink(fs, parent, name, rm), rm, rm_out);
}

int stria_rename_at(stria_fs_t *fs, uint64_t sparent, const char *sname, uint64_t dparent,
                    const char *dname, unsigned flags, stria_removed_t **rm_out)
{
    if (rm_out)
        *rm_out = NULL;
    struct stria_removed *rm = calloc(1, sizeof(*rm));
    if (!rm)
        return -ENOMEM;
    return removal(fs, cl_rename(fs, sparent, sname, dparent, dname, flags, rm), rm, rm_out);
}

uint64_t stria_removed_ino(const stria_removed_t *rm)
{
    return rm->ino;
}

uint64_t stria_removed_size(const stria_removed_t *rm)
{
    return rm->size;
}

void stria_removed_hold(stria_removed_t *rm)
{
    /* Writes through the handles kept open may place the components they
     * had pending by the rule they follow: their objects go too. */
    layout_fill_orphan(&rm->layout);
    rm->destroy = rm->layout.ncomp > 0;
}

int stria_removed_truncate(stria_fs_t *fs, const stria_removed_t *rm, uint64_t size)
{
    if (!rm->layout.ncomp)
        return 0;
    gather_drain(fs, rm->ino);
    atomic_fetch_add(&fs->write_epoch, 1);
    int rc = io_objects(fs, rm->ino, &rm->layout, IO_TRUNCATE, size);
    atomic_fetch_add(&fs->write_epoch, 1); /* and once it has landed */
    return rc;
}

void stria_removed_finish(stria_fs_t *fs, stria_removed_t *rm)
{
    if (!rm)
        return;
    cl_destroy(fs, rm);
    free(rm);
}

void stria_removed_free(stria_removed_t *rm)
{
    free(rm);
}

int stria_opendir_ino(stria_fs_t *fs, uint64_t ino, stria_dir_t **out)
{
    struct proto_attr a;
    return dir_open(fs, cl_getattr(fs, ino, &a), &a, DIR_BATCH_INO, out);
}

/* Position d's batch at cookie, reading from the MDT if needed: the entry
 * there starts at d->off (d->left entries remain). The entry last given
 * (at at_cookie) is passed over when cookie is its next. */
static int dir_seek(stria_dir_t *d, uint64_t cookie, bool plus)
{
    /* Once asked for, attributes come with every batch: the kernel mixes
     * READDIRPLUS and READDIR in one listing, and a batch with them
     * serves both. */
    plus = plus || (d->have && d->plus);
    if (d->have && d->plus == plus && d->at_cookie == cookie && (d->left || d->b.eof))
        return 0;
    if (d->have && d->plus == plus && d->left && d->given && d->given_next == cookie) {
        d->off += d->given_len;
        d->left--;
        d->given = false;
        d->at_cookie = cookie;
        if (d->left || d->b.eof)
            return 0;
    }
    uint64_t xseq = d->fs->mdc ? mdc_listing_seq(d->fs->mdc) : 0;
    int rc = cl_readdir(d->fs, d->ino, cookie, plus, d->buf, d->cap, &d->b, &d->shards);
    if (rc)
        return rc;
    d->xseq = xseq;
    d->have = true;
    d->plus = plus;
    d->given = false;
    d->off = 0;
    d->left = d->b.count;
    d->at_cookie = cookie;
    if (d->left == 0 && !d->b.eof)
        return -EIO; /* the MDT made no progress */
    return 0;
}

int stria_readdir_at(stria_dir_t *d, uint64_t cookie, int plus, struct stria_direntplus *e)
{
    int rc = dir_seek(d, cookie, plus != 0);
    if (rc)
        return rc;
    if (d->left == 0)
        return 0;
    struct proto_dec dec;
    struct proto_dirent de;
    struct proto_attr a = {0};
    uint8_t xabsent = 0;
    proto_dec_init(&dec, d->buf + d->off, d->b.len - d->off);
    proto_get_dirent(&dec, &de);
    if (d->plus)
        proto_get_dirplus(&dec, &a, &xabsent);
    if (dec.err)
        return -EPROTO;
    if (xabsent && d->fs->mdc) /* a plus batch, whatever the caller asked */
        mdc_note_listed(d->fs->mdc, de.ino, xabsent, d->xseq);
    memset(e, 0, sizeof(*e));
    e->d.ino = de.ino;
    e->d.type = de.type;
    memcpy(e->d.name, de.name.p, de.name.len);
    e->d.name[de.name.len] = '\0';
    e->next_cookie = de.next_cookie;
    if (plus) {
        cl_merge_times(d->fs, &a);
        cl_attr_out(&a, &e->attr);
    }
    d->given = true;
    d->given_next = de.next_cookie;
    d->given_len = (uint32_t)dec.off;
    return 1;
}

int stria_setxattr_ino(stria_fs_t *fs, uint64_t ino, const char *name, const void *value,
                       size_t size, int flags)
{
    return cl_setxattr(fs, ino, name, value, size, flags);
}

ssize_t stria_getxattr_ino(stria_fs_t *fs, uint64_t ino, const char *name, void *value, size_t size)
{
    return cl_getxattr(fs, ino, name, value, size);
}

ssize_t stria_listxattr_ino(stria_fs_t *fs, uint64_t ino, char *list, size_t size)
{
    return cl_listxattr(fs, ino, list, size);
}

int stria_removexattr_ino(stria_fs_t *fs, uint64_t ino, const char *name)
{
    return cl_removexattr(fs, ino, name);
}

int stria_getstripe_ino(stria_fs_t *fs, uint64_t ino, struct stria_layout *out)
{
    return cl_getstripe(fs, ino, out);
}

int stria_setstripe_ino(stria_fs_t *fs, uint64_t ino, int32_t count, uint32_t size, int32_t offset)
{
    return cl_setstripe(fs, ino, count, size, offset, NULL);
}

int stria_report_size(stria_fs_t *fs, uint64_t ino, uint64_t size, int64_t mtime_ns)
{
    gather_drain(fs, ino); /* a size must not come before its data */
    return cl_setsize(fs, ino, size, mtime_ns, NULL, NULL);
}
