/*
 * Names and attributes: lookup, getattr, setattr, readlink, mkdir, mknod,
 * unlink, rmdir, symlink, rename, link, statfs. Each is one metadata RPC; a
 * name's last link going away destroys the file's objects now, or at the
 * last close when this mount still has it open. FIFOs, devices and sockets
 * are only a name and attributes here: the kernel serves their opens itself
 * (a FIFO's data passes between processes of this node only).
 */
#include "fuse_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void sf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct proto_attr a;
    sf_cred(req);
    int rc = SF_INTR(req, cl_lookup(sf.fs, parent, name, false, &a));
    sf_reply_entry_rc(req, rc, &a);
}

static void reply_attr(fuse_req_t req, const struct proto_attr *attr)
{
    struct proto_attr m = *attr, *a = &m;
    struct stat st;
    sf_merge_local(a);
    cl_to_stat(a, &st);
    tab_note(a);
    fuse_reply_attr(req, &st, sf.attr_timeout);
}

static void sf_getattr_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    struct proto_attr a;
    sf_cred(req);
    int rc = SF_INTR(req, sf_getattr(ino, &a));
    if (rc)
        sf_reply_err(req, rc);
    else
        reply_attr(req, &a);
}

static void truncated_one(stria_file_t *f, void *arg)
{
    cl_file_truncated(f, *(uint64_t *)arg);
}

static void sf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *st, int to_set,
                       struct fuse_file_info *fi)
{
    struct proto_setattr_req q = {0};
    if (to_set & FUSE_SET_ATTR_MODE) {
        q.valid |= SETATTR_MODE;
        q.mode = st->st_mode;
    }
    if (to_set & FUSE_SET_ATTR_UID) {
        q.valid |= SETATTR_UID;
        q.uid = st->st_uid;
    }
    if (to_set & FUSE_SET_ATTR_GID) {
        q.valid |= SETATTR_GID;
        q.gid = st->st_gid;
    }
    if (to_set & FUSE_SET_ATTR_SIZE) {
        q.valid |= SETATTR_SIZE;
        q.size = (uint64_t)st->st_size;
        /* ftruncate: the kernel names the handle, which an open for
         * writing made; the file's mode now is no bar (open(2) with
         * O_CREAT and mode 0 gives a writable descriptor). */
        if (fi && fi->fh && cl_file_writable((stria_file_t *)(uintptr_t)fi->fh))
            q.valid |= SETATTR_WRITER;
    }
    if (to_set & FUSE_SET_ATTR_ATIME_NOW)
        q.valid |= SETATTR_ATIME_NOW;
    else if (to_set & FUSE_SET_ATTR_ATIME)
        cl_set_time(&q, &st->st_atim, true);
    if (to_set & FUSE_SET_ATTR_MTIME_NOW)
        q.valid |= SETATTR_MTIME_NOW;
    else if (to_set & FUSE_SET_ATTR_MTIME)
        cl_set_time(&q, &st->st_mtim, false);
    if (sf.kernel_checks && (q.valid & (SETATTR_ATIME | SETATTR_MTIME)))
        q.valid |= SETATTR_TIMES_CHECKED;
    sf_cred(req);
    /* Sizes this mount wrote but has not reported would re-grow the file
     * after the truncate, and their mtime undo a time set now (futimens
     * before close, as cp -p and tar -x do): report them first. */
    if (q.valid &
        (SETATTR_SIZE | SETATTR_ATIME | SETATTR_MTIME | SETATTR_ATIME_NOW | SETATTR_MTIME_NOW))
        sf_report_local(ino, NULL);
    struct proto_setattr_rep *r = malloc(sizeof(*r));
    int rc = r ? SF_INTR(req, cl_setattr(sf.fs, ino, &q, r)) : -ENOMEM;
    /* Unlinked but open here: the MDT has forgotten it; the handles and
     * the kernel still hold it. Times and sizes apply locally. */
    if (rc == -ENOENT && tab_orphan_attr(ino, &r->attr)) {
        rc = 0;
        if (q.valid & SETATTR_SIZE) {
            r->attr.size = q.size;
            if (tab_orphan_layout(ino, &r->layout))
                rc = io_objects(sf.fs, ino, &r->layout, IO_TRUNCATE, q.size);
        }
    }
    if (rc == 0 && (q.valid & SETATTR_SIZE))
        tab_each(ino, truncated_one, &q.size);
    if (rc)
        sf_reply_err(req, rc);
    else
        reply_attr(req, &r->attr);
    free(r);
}

static void sf_readlink(fuse_req_t req, fuse_ino_t ino)
{
    char buf[PROTO_MAX_STR + 1];
    sf_cred(req);
    ssize_t n = cl_readlink(sf.fs, ino, buf, sizeof(buf) - 1);
    if (n < 0) {
        sf_reply_err(req, (int)n);
        return;
    }
    buf[n] = '\0';
    fuse_reply_readlink(req, buf);
}

static void sf_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    struct proto_attr a;
    sf_cred(req);
    int rc = SF_INTR(req, cl_mkdir(sf.fs, parent, name, mode, &a));
    sf_reply_entry_rc(req, rc, &a);
}

static void sf_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
    struct proto_attr a;
    sf_cred(req);
    int rc = SF_INTR(req, cl_mknod(sf.fs, parent, name, mode, rdev, &a));
    sf_reply_entry_rc(req, rc, &a);
}

/* The last link went: objects now, or at the last close here (when this
 * mount still has it open; writes may still come, so they go then even if
 * none existed yet). */
static void finish_removal(struct cl_removed *rm)
{
    if (rm->gone && !tab_orphan(rm))
        cl_destroy(sf.fs, rm);
}

/* The MDT's answer to a write-behind unlink (wb.h). */
void sf_wb_removed(stria_fs_t *fs, struct cl_removed *rm)
{
    (void)fs;
    finish_removal(rm);
}

/* Acknowledge the unlink now and send it later (wb.h), when this mount
 * holds the write-behind grant and can decide alone: the cache knows the
 * caller may remove the name, which holds a file or symlink with one link
 * that nobody here has open. Anything else goes the ordinary way. */
static bool unlink_behind(fuse_ino_t parent, const char *name)
{
    struct mdc *m = sf.fs->mdc;
    struct proto_cred cred;
    struct proto_attr a;
    bool open = false;
    if (!m || !sf.fs->wb)
        return false;
    cl_cred(&cred);
    if (!mdc_lookup_victim(m, parent, name, &cred, &a) || a.nlink != 1 ||
        !(S_ISREG(a.mode) || S_ISLNK(a.mode)))
        return false;
    tab_local_size(a.ino, &open, NULL);
    if (open)
        return false;
    mdc_unlinked(m, parent, name, a.ino);
    return wb_unlink(sf.fs, parent, name, &cred) == 0;
}

static void sf_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    sf_cred(req);
    if (unlink_behind(parent, name)) {
        fuse_reply_err(req, 0);
        return;
    }
    struct cl_removed *rm = calloc(1, sizeof(*rm));
    int rc = rm ? SF_INTR(req, cl_unlink(sf.fs, parent, name, rm)) : -ENOMEM;
    if (rc == 0)
        finish_removal(rm);
    free(rm);
    sf_reply_err(req, rc);
}

static void sf_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    sf_cred(req);
    sf_reply_err(req, SF_INTR(req, cl_rmdir(sf.fs, parent, name)));
}

static void sf_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
    struct proto_attr a;
    sf_cred(req);
    int rc = SF_INTR(req, cl_symlink(sf.fs, parent, name, link, &a));
    sf_reply_entry_rc(req, rc, &a);
}

static void sf_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
    struct cl_removed *rm = calloc(1, sizeof(*rm));
    sf_cred(req);
    int rc =
        rm ? SF_INTR(req, cl_rename(sf.fs, parent, name, newparent, newname, flags, rm)) : -ENOMEM;
    if (rc == 0)
        finish_removal(rm);
    free(rm);
    sf_reply_err(req, rc);
}

static void sf_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
    struct proto_attr a;
    sf_cred(req);
    int rc = SF_INTR(req, cl_link(sf.fs, ino, newparent, newname, &a));
    sf_reply_entry_rc(req, rc, &a);
}

static void sf_statfs(fuse_req_t req, fuse_ino_t ino)
{
    (void)ino;
    struct statvfs st;
    int rc = SF_INTR(req, stria_statfs(sf.fs, &st));
    if (rc)
        sf_reply_err(req, rc);
    else
        fuse_reply_statfs(req, &st);
}

void sf_ops_ns(struct fuse_lowlevel_ops *ops)
{
    ops->lookup = sf_lookup;
    ops->getattr = sf_getattr_op;
    ops->setattr = sf_setattr;
    ops->readlink = sf_readlink;
    ops->mkdir = sf_mkdir;
    ops->mknod = sf_mknod;
    ops->unlink = sf_unlink;
    ops->rmdir = sf_rmdir;
    ops->symlink = sf_symlink;
    ops->rename = sf_rename;
    ops->link = sf_link;
    ops->statfs = sf_statfs;
}
