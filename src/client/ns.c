/*
 * The namespace calls of libstria, at two levels.
 *
 * The inode level (cl_*, declared in client.h) names things as the
 * protocol does: a start inode and a relative path, or an inode. The
 * public API offers it twice: the inode level of stria.h (stria_*_at,
 * stria_*_ino, with public attribute structs), which the FUSE mount uses,
 * and the path API (stria_*), the same calls started at the root.
 *
 * Removing the last link of a file returns its layout (struct stria_removed)
 * instead of destroying its objects here, so a caller with the file still
 * open (the mount) can keep the data until the last close.
 */
#include "client.h"

#include "../common/log.h"
#include "../common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static int check_path(const char *path)
{
    if (!path)
        return -EFAULT;
    if (strlen(path) > PROTO_MAX_STR)
        return -ENAMETOOLONG;
    return 0;
}

void cl_to_stat(const struct proto_attr *a, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = a->ino;
    st->st_mode = a->mode;
    st->st_nlink = a->nlink;
    st->st_uid = a->uid;
    st->st_gid = a->gid;
    st->st_size = (off_t)a->size;
    st->st_blocks = (blkcnt_t)a->blocks;
    st->st_blksize = 1 << 20;
    st->st_rdev = a->rdev;
    st->st_atim.tv_sec = a->atime_ns / 1000000000;
    st->st_atim.tv_nsec = a->atime_ns % 1000000000;
    st->st_mtim.tv_sec = a->mtime_ns / 1000000000;
    st->st_mtim.tv_nsec = a->mtime_ns % 1000000000;
    st->st_ctim.tv_sec = a->ctime_ns / 1000000000;
    st->st_ctim.tv_nsec = a->ctime_ns % 1000000000;
}

/* ---- inode level ---- */

/* One name, not a path: what the metadata cache can follow. */
static bool one_name(const char *path)
{
    return path[0] && !strchr(path, '/');
}

static void note(stria_fs_t *fs, int64_t sent, const struct proto_leases *leases, uint64_t parent,
                 const char *name, uint64_t child, uint64_t parent2, const char *name2,
                 const struct proto_attr *attr, const struct layout *layout)
{
    if (!fs->mdc || cl_replaying)
        return; /* a kept reply's leases may have been taken back since */
    struct mdc_update u = {.sent_ms = sent,
                           .leases = leases,
                           .parent = parent && one_name(name) ? parent : 0,
                           .name = name,
                           .child = child,
                           .parent2 = parent2 && one_name(name2) ? parent2 : 0,
                           .name2 = name2,
                           .attr = attr,
                           .layout = layout};
    mdc_update(fs->mdc, &u);
}

void cl_note_layout(stria_fs_t *fs, int64_t sent, const struct proto_leases *leases,
                    uint64_t parent, const char *name, const struct proto_attr *attr,
                    const struct layout *layout)
{
    note(fs, sent, leases, parent, name, attr->ino, 0, NULL, attr,
         S_ISREG(attr->mode) ? layout : NULL);
}

/* Let the metadata cache (if on) follow a reply: see struct mdc_update. */
void cl_note(stria_fs_t *fs, int64_t sent, const struct proto_leases *leases, uint64_t parent,
             const char *name, uint64_t child, uint64_t parent2, const char *name2,
             const struct proto_attr *attr)
{
    note(fs, sent, leases, parent, name, child, parent2, name2, attr, NULL);
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
    if (fs->mdc && !follow && one_name(path) &&
        (rc = mdc_lookup(fs->mdc, parent, path, &q.cred, out)) != -EAGAIN)
        return rc;
    int64_t sent = mdc_clock_ms();
    bool remote = false;
    rc = ROUTED_CALL(
        fs, parent, path, parent, path, lookup, &q, &r, *out = r.attr; remote = r.remote;
        if (!remote) {
            cl_note_layout(fs, sent, &r.leases, follow ? 0 : parent, path, &r.attr, &r.layout);
            cl_learn(fs, &r.attr);
        });
    if (rc == 0 && remote)
        return cl_getattr(fs, out->ino, out); /* the entry's inode is on another MDT */
    if (rc == -EREMOTE)
        return cl_resolve(fs, parent, path, follow, out); /* through a symlink, say */
    return rc;
}

int cl_getattr(stria_fs_t *fs, uint64_t ino, struct proto_attr *out)
{
    if (fs->mdc && mdc_getattr(fs->mdc, ino, out))
        return 0;
    struct proto_getattr_req q = {.ino = ino};
    struct proto_getattr_rep r;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    return MDT_CALL(fs, proto_ino_mdt(ino), getattr, &q, &r, *out = r.attr;
                    cl_note(fs, sent, &r.leases, 0, NULL, 0, 0, NULL, &r.attr);
                    cl_learn(fs, &r.attr));
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
    return ROUTED_CALL(fs, parent, path, parent, path, mkdir, &q, &r, if (out) * out = r.attr;
                       cl_note(fs, sent, &r.leases, parent, path, r.attr.ino, 0, NULL, &r.attr);
                       cl_learn(fs, &r.attr); if (fs->mdc) mdc_new_dir(fs->mdc, r.attr.ino));
}

int cl_setdirstripe(stria_fs_t *fs, uint64_t ino, int32_t count, int32_t start)
{
    struct proto_setdirstripe_req q = {.ino = ino, .count = count, .start = start};
    struct proto_setdirstripe_rep r;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    return MDT_CALL(fs, proto_ino_mdt(ino), setdirstripe, &q, &r,
                    cl_note(fs, sent, &r.leases, 0, NULL, 0, 0, NULL, NULL));
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
    struct proto_unlink_req q = {
        .parent = parent, .path = proto_str_c(path), .want_wb = wb_want(fs)};
    struct proto_unlink_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    rc = ROUTED_CALL(fs, parent, path, parent, path, unlink, &q, r,
                     removed(rm, r->ino, r->gone, r->destroy, r->size, &r->layout);
                     cl_note(fs, sent, &r->leases, parent, path, 0, 0, NULL, NULL);
                     wb_granted(fs, r->wb_id, r->wb_ms, sent));
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
                         cl_note(fs, sent, &r->leases, sparent, spath, 0, dparent, dpath, NULL));
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

ssize_t cl_readlink(stria_fs_t *fs, uint64_t ino, char *buf, size_t len)
{
    struct proto_readlink_req q = {.ino = ino};
    struct proto_readlink_rep r;
    size_t n = 0;
    cl_cred(&q.cred);
    int rc = MDT_CALL(fs, proto_ino_mdt(ino), readlink, &q, &r, ({
                          n = MIN(len, (size_t)r.target.len);
                          memcpy(buf, r.target.p, n);
                      }));
    return rc ? rc : (ssize_t)n;
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
    /* Shrinking: cut the objects to what the new size implies. */
    if (rc == 0 && (q->valid & SETATTR_SIZE) && q->size < r->old_size && r->layout.ncomp)
        rc = io_objects(fs, ino, &r->layout, IO_TRUNCATE, q->size);
    return rc;
}

int cl_readdir(stria_fs_t *fs, uint64_t ino, uint64_t cookie, bool plus, uint8_t *buf, uint32_t cap,
               struct cl_dirbatch *out)
{
    uint64_t ds = 0;
    if (__atomic_load_n(&fs->mdt_count, __ATOMIC_RELAXED) > 1) {
        int rc = cl_dir_stripe(fs, ino, &ds);
        if (rc)
            return rc;
        if (ds)
            return cl_readdir_striped(fs, ino, ds, cookie, plus, buf, cap, out);
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

int cl_setxattr(stria_fs_t *fs, uint64_t ino, const char *name, const void *value, size_t size,
                int flags)
{
    if (size > PROTO_MAX_XATTR)
        return -E2BIG;
    struct proto_setxattr_req q = {.ino = ino,
                                   .name = proto_str_c(name),
                                   .value = {value, (uint32_t)size},
                                   .flags = (uint32_t)flags};
    struct proto_setxattr_rep r;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    return MDT_CALL(fs, proto_ino_mdt(ino), setxattr, &q, &r,
                    cl_note(fs, sent, &r.leases, 0, NULL, 0, 0, NULL, NULL));
}

/* An xattr reply's bytes into the caller's buffer, as getxattr(2) and
 * listxattr(2) do: size 0 asks only the length; too small is ERANGE. */
static ssize_t copy_out(const struct proto_blob *b, void *dst, size_t size)
{
    if (size && b->len > size)
        return -ERANGE;
    if (size)
        memcpy(dst, b->p, b->len);
    return b->len;
}

ssize_t cl_getxattr(stria_fs_t *fs, uint64_t ino, const char *name, void *value, size_t size)
{
    struct proto_getxattr_req q = {.ino = ino, .name = proto_str_c(name)};
    struct proto_getxattr_rep r;
    ssize_t n = 0;
    cl_cred(&q.cred);
    int rc =
        MDT_CALL(fs, proto_ino_mdt(ino), getxattr, &q, &r, n = copy_out(&r.value, value, size));
    return rc ? rc : n;
}

ssize_t cl_listxattr(stria_fs_t *fs, uint64_t ino, char *list, size_t size)
{
    struct proto_listxattr_req q = {.ino = ino};
    struct proto_listxattr_rep r;
    ssize_t n = 0;
    cl_cred(&q.cred);
    int rc =
        MDT_CALL(fs, proto_ino_mdt(ino), listxattr, &q, &r, n = copy_out(&r.names, list, size));
    return rc ? rc : n;
}

int cl_removexattr(stria_fs_t *fs, uint64_t ino, const char *name)
{
    struct proto_removexattr_req q = {.ino = ino, .name = proto_str_c(name)};
    struct proto_removexattr_rep r;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    return MDT_CALL(fs, proto_ino_mdt(ino), removexattr, &q, &r,
                    cl_note(fs, sent, &r.leases, 0, NULL, 0, 0, NULL, NULL));
}

int cl_getstripe(stria_fs_t *fs, uint64_t ino, struct stria_layout *out)
{
    struct proto_getstripe_req q = {.ino = ino};
    struct proto_getstripe_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    int rc = MDT_CALL(fs, proto_ino_mdt(ino), getstripe, &q, r, (void)0);
    if (rc == 0) {
        memset(out, 0, sizeof(*out));
        out->is_dir = r->is_dir;
        out->dir_stripe_count = r->dir_count;
        out->dir_stripe_size = r->dir_size;
        out->dir_stripe_offset = r->dir_offset;
        struct proto_dstripe d = proto_ds_unpack(r->dstripe), dd = proto_ds_unpack(r->ddefault);
        out->mdt_count = r->dstripe ? d.count : 1;
        out->mdt_start = r->dstripe ? d.start : proto_ino_mdt(ino);
        out->mdt_hash = r->dstripe ? d.hash : 0;
        out->mdt_nmdt = r->dstripe ? d.nmdt : 1;
        out->mdt_default_count = !r->ddefault ? 0 : dd.count == 0xffff ? -1 : dd.count;
        out->mdt_default_start = !r->ddefault || dd.start == 0xffff ? -1 : dd.start;
        out->ncomp = r->layout.ncomp;
        for (uint32_t i = 0; i < r->layout.ncomp && i < STRIA_MAX_COMPONENTS; i++) {
            const struct layout_comp *c = &r->layout.comp[i];
            out->comp[i].start = c->start;
            out->comp[i].end = c->end;
            out->comp[i].stripe_size = c->stripe_size;
            out->comp[i].stripe_count = c->stripe_count;
            for (uint32_t s = 0; s < c->stripe_count; s++)
                out->comp[i].ost[s] = map_group_ost(c->groups[s]);
        }
    }
    free(r);
    return rc;
}

int cl_setstripe(stria_fs_t *fs, uint64_t ino, int32_t count, uint32_t size, int32_t offset)
{
    struct proto_setstripe_req q = {.ino = ino, .count = count, .size = size, .offset = offset};
    struct proto_setstripe_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    int rc = MDT_CALL(fs, proto_ino_mdt(ino), setstripe, &q, r,
                      cl_note(fs, sent, &r->leases, 0, NULL, 0, 0, NULL, NULL));
    free(r);
    return rc;
}

int cl_setsize(stria_fs_t *fs, uint64_t ino, uint64_t size, int64_t mtime_ns,
               const struct layout *layout, struct proto_attr *out)
{
    struct proto_setsize_req q = {.ino = ino, .size = size, .mtime_ns = mtime_ns};
    struct proto_setsize_rep r;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    /* A file with data keeps its layout (SETSTRIPE wants it empty). */
    const struct layout *kept = size ? layout : NULL;
    return MDT_CALL(fs, proto_ino_mdt(ino), setsize, &q, &r, if (out) * out = r.attr;
                    cl_note_layout(fs, sent, &r.leases, 0, NULL, &r.attr, kept));
}

void cl_destroy(stria_fs_t *fs, const struct stria_removed *rm)
{
    if (!rm->destroy)
        return;
    gather_drain(fs, rm->ino); /* or it would make the objects again */
    /* A failure leaves orphan objects (space, not data, is lost), which
     * stria fsck finds: the MDT keeps the inode pending until told. */
    int rc = io_objects(fs, rm->ino, &rm->layout, IO_DESTROY, 0);
    if (rc) {
        log_warn("inode %llx: could not remove all objects: %s", (unsigned long long)rm->ino,
                 log_err(rc));
        return;
    }
    struct proto_destroyed_req q = {.ino = rm->ino};
    struct proto_destroyed_rep r;
    cl_cred(&q.cred);
    if ((rc = MDT_CALL(fs, proto_ino_mdt(rm->ino), destroyed, &q, &r, (void)0)))
        log_warn("inode %llx: objects removed, but MDT%04x was not told: %s",
                 (unsigned long long)rm->ino, proto_ino_mdt(rm->ino), log_err(rc));
}

mode_t cl_umask(void)
{
    /* umask(2) can only be read by changing it, which races other threads;
     * Linux shows it in /proc/self/status. */
    mode_t um = 022;
    char *text = NULL;
    if (util_read_file("/proc/self/status", 1 << 16, &text, NULL) == 0) {
        char *u = strstr(text, "\nUmask:");
        if (u)
            um = (mode_t)strtoul(u + 7, NULL, 8) & 0777;
        free(text);
    }
    return um;
}

/* ---- the public path API: the same calls, from the root ---- */

static int lookup(stria_fs_t *fs, const char *path, bool follow, struct proto_attr *attr)
{
    return cl_lookup(fs, PROTO_ROOT_INO, path, follow, attr);
}

int stria_stat(stria_fs_t *fs, const char *path, struct stat *st)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    if (rc == 0)
        cl_to_stat(&a, st);
    return rc;
}

int stria_lstat(stria_fs_t *fs, const char *path, struct stat *st)
{
    struct proto_attr a;
    int rc = lookup(fs, path, false, &a);
    if (rc == 0)
        cl_to_stat(&a, st);
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

void cl_set_time(struct proto_setattr_req *q, const struct timespec *ts, bool atime)
{
    uint32_t bit = atime ? SETATTR_ATIME : SETATTR_MTIME;
    uint32_t now_bit = atime ? SETATTR_ATIME_NOW : SETATTR_MTIME_NOW;
    int64_t *field = atime ? &q->atime_ns : &q->mtime_ns;
    if (!ts || ts->tv_nsec == UTIME_NOW) {
        q->valid |= now_bit;
    } else if (ts->tv_nsec != UTIME_OMIT) {
        q->valid |= bit;
        *field = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
    }
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
};

int stria_opendir(stria_fs_t *fs, const char *path, stria_dir_t **out)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    if (rc)
        return rc;
    if (!S_ISDIR(a.mode))
        return -ENOTDIR;
    stria_dir_t *d = calloc(1, sizeof(*d));
    if (!d || !(d->buf = malloc(DIR_BATCH))) {
        free(d);
        return -ENOMEM;
    }
    d->fs = fs;
    d->ino = a.ino;
    d->cap = DIR_BATCH;
    *out = d;
    return 0;
}

int stria_readdir(stria_dir_t *d, struct stria_dirent *ent)
{
    while (d->left == 0) {
        if (d->b.eof)
            return 0;
        int rc = cl_readdir(d->fs, d->ino, d->cookie, false, d->buf, d->cap, &d->b);
        if (rc)
            return rc;
        d->off = 0;
        d->left = d->b.count;
        if (d->left == 0 && !d->b.eof)
            return -EIO; /* the server made no progress */
    }
    struct proto_dec dec;
    struct proto_dirent de;
    proto_dec_init(&dec, d->buf + d->off, d->b.len - d->off);
    proto_get_dirent(&dec, &de);
    if (dec.err)
        return -EPROTO;
    d->off += (uint32_t)dec.off;
    d->left--;
    d->cookie = de.next_cookie;
    ent->ino = de.ino;
    ent->type = de.type;
    memcpy(ent->name, de.name.p, de.name.len);
    ent->name[de.name.len] = '\0';
    return 1;
}

void stria_closedir(stria_dir_t *d)
{
    if (!d)
        return;
    free(d->buf);
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
    return rc ? rc : cl_setstripe(fs, a.ino, count, size, offset);
}

/* ---- the public inode level (stria.h): the cl_* calls in public types ---- */

static void attr_out(const struct proto_attr *a, struct stria_attr *o)
{
    if (!o)
        return;
    *o = (struct stria_attr){.ino = a->ino,
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
}

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
    if (rc == 0)
        attr_out(&a, out);
    return rc;
}

int stria_getattr_ino(stria_fs_t *fs, uint64_t ino, struct stria_attr *out)
{
    struct proto_attr a;
    int rc = cl_getattr(fs, ino, &a);
    if (rc == 0)
        attr_out(&a, out);
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
    if (rc == 0)
        attr_out(&r->attr, out);
    free(r);
    return rc;
}

int stria_open_at(stria_fs_t *fs, uint64_t parent, const char *name, int flags, mode_t mode,
                  stria_file_t **out, struct stria_attr *attr)
{
    struct proto_attr a;
    int rc = cl_open(fs, parent, name, flags, mode, 0, 0, -1, out, &a);
    if (rc == 0)
        attr_out(&a, attr);
    return rc;
}

int stria_mkdir_at(stria_fs_t *fs, uint64_t parent, const char *name, mode_t mode,
                   struct stria_attr *out)
{
    struct proto_attr a;
    int rc = cl_mkdir(fs, parent, name, mode, &a);
    if (rc == 0)
        attr_out(&a, out);
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
        attr_out(&a, out);
    return rc;
}

int stria_symlink_at(stria_fs_t *fs, uint64_t parent, const char *name, const char *target,
                     struct stria_attr *out)
{
    struct proto_attr a;
    int rc = cl_symlink(fs, parent, name, target, &a);
    if (rc == 0)
        attr_out(&a, out);
    return rc;
}

int stria_link_at(stria_fs_t *fs, uint64_t ino, uint64_t dparent, const char *dname,
                  struct stria_attr *out)
{
    struct proto_attr a;
    int rc = cl_link(fs, ino, dparent, dname, &a);
    if (rc == 0)
        attr_out(&a, out);
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
    rm->destroy = rm->layout.ncomp > 0;
}

int stria_removed_truncate(stria_fs_t *fs, const stria_removed_t *rm, uint64_t size)
{
    if (!rm->layout.ncomp)
        return 0;
    gather_drain(fs, rm->ino);
    atomic_fetch_add(&fs->write_epoch, 1);
    return io_objects(fs, rm->ino, &rm->layout, IO_TRUNCATE, size);
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
    int rc = cl_getattr(fs, ino, &a);
    if (rc)
        return rc;
    if (!S_ISDIR(a.mode))
        return -ENOTDIR;
    stria_dir_t *d = calloc(1, sizeof(*d));
    if (!d || !(d->buf = malloc(DIR_BATCH_INO))) {
        free(d);
        return -ENOMEM;
    }
    d->fs = fs;
    d->ino = ino;
    d->cap = DIR_BATCH_INO;
    *out = d;
    return 0;
}

/* Position d's batch at cookie, reading from the MDT if needed: the entry
 * there starts at d->off (d->left entries remain). The entry last given
 * (at at_cookie) is passed over when cookie is its next. */
static int dir_seek(stria_dir_t *d, uint64_t cookie, bool plus)
{
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
    int rc = cl_readdir(d->fs, d->ino, cookie, plus, d->buf, d->cap, &d->b);
    if (rc)
        return rc;
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
    proto_dec_init(&dec, d->buf + d->off, d->b.len - d->off);
    proto_get_dirent(&dec, &de);
    if (plus)
        proto_get_ATTR(&dec, &a);
    if (dec.err)
        return -EPROTO;
    memset(e, 0, sizeof(*e));
    e->d.ino = de.ino;
    e->d.type = de.type;
    memcpy(e->d.name, de.name.p, de.name.len);
    e->d.name[de.name.len] = '\0';
    e->next_cookie = de.next_cookie;
    if (plus)
        attr_out(&a, &e->attr);
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
    return cl_setstripe(fs, ino, count, size, offset);
}

int stria_report_size(stria_fs_t *fs, uint64_t ino, uint64_t size, int64_t mtime_ns)
{
    gather_drain(fs, ino); /* a size must not come before its data */
    return cl_setsize(fs, ino, size, mtime_ns, NULL, NULL);
}
