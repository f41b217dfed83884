/*
 * Names and attributes: lookup, getattr, setattr, readlink, mkdir, mknod,
 * unlink, rmdir, symlink, rename, link, statfs, through libstria's inode
 * level. Each is one metadata RPC; a
 * name's last link going away destroys the file's objects now, or at the
 * last close when this mount still has it open. FIFOs, devices and sockets
 * are only a name and attributes here: the kernel serves their opens itself
 * (a FIFO's data passes between processes of this node only).
 */
#include "fuse_ops.h"
#include "fuse_reply.h"
#include "fuse_tab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void sf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct stria_attr a;
    sf_cred(req);
    int rc = SF_INTR(req, stria_lookup_at(sf.fs, parent, name, &a));
    sf_reply_entry_rc(req, rc, &a);
}

static void reply_attr(fuse_req_t req, const struct stria_attr *attr)
{
    struct stria_attr m = *attr, *a = &m;
    struct stat st;
    sf_merge_local(a);
    stria_attr_to_stat(a, &st);
    tab_note(a);
    fuse_reply_attr(req, &st, sf.attr_timeout);
}

static void sf_getattr_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    struct stria_attr a;
    sf_cred(req);
    int rc = SF_INTR(req, sf_getattr(ino, &a));
    if (rc)
        sf_reply_err(req, rc);
    else
        reply_attr(req, &a);
}

static void truncated_one(stria_file_t *f, void *arg)
{
    stria_file_truncated(f, *(uint64_t *)arg);
}

static void sf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *st, int to_set,
                       struct fuse_file_info *fi)
{
    struct stria_setattr q = {0};
    const uint32_t times =
        STRIA_SET_ATIME | STRIA_SET_MTIME | STRIA_SET_ATIME_NOW | STRIA_SET_MTIME_NOW;
    if (to_set & FUSE_SET_ATTR_MODE) {
        q.valid |= STRIA_SET_MODE;
        q.mode = st->st_mode;
    }
    if (to_set & FUSE_SET_ATTR_UID) {
        q.valid |= STRIA_SET_UID;
        q.uid = st->st_uid;
    }
    if (to_set & FUSE_SET_ATTR_GID) {
        q.valid |= STRIA_SET_GID;
        q.gid = st->st_gid;
    }
    if (to_set & FUSE_SET_ATTR_SIZE) {
        q.valid |= STRIA_SET_SIZE;
        q.size = (uint64_t)st->st_size;
    }
    if (to_set & FUSE_SET_ATTR_ATIME_NOW)
        q.valid |= STRIA_SET_ATIME_NOW;
    else if (to_set & FUSE_SET_ATTR_ATIME) {
        q.valid |= STRIA_SET_ATIME;
        q.atime = st->st_atim;
    }
    if (to_set & FUSE_SET_ATTR_MTIME_NOW)
        q.valid |= STRIA_SET_MTIME_NOW;
    else if (to_set & FUSE_SET_ATTR_MTIME) {
        q.valid |= STRIA_SET_MTIME;
        q.mtime = st->st_mtim;
    }
    if (sf.kernel_checks)
        q.valid |= STRIA_SET_TIMES_CHECKED;
    sf_cred(req);
    /* Sizes this mount wrote but has not reported would re-grow the file
     * after the truncate, and their mtime undo a time set now (futimens
     * before close, as cp -p and tar -x do): report them first. */
    if (q.valid & (STRIA_SET_SIZE | times))
        sf_report_local(ino, NULL);
    /* ftruncate: the kernel names the handle, which an open for writing
     * made; libstria checks the size change against it. */
    stria_file_t *via = fi && fi->fh ? (stria_file_t *)(uintptr_t)fi->fh : NULL;
    struct stria_attr a;
    int rc = SF_INTR(req, stria_setattr_ino(sf.fs, ino, &q, via, &a));
    /* Unlinked but open here: the MDT has forgotten it; the handles and
     * the kernel still hold it. Times and sizes apply locally. */
    if (rc == -ENOENT && tab_orphan_attr(ino, &a)) {
        rc = 0;
        if (q.valid & STRIA_SET_SIZE) {
            a.size = q.size;
            rc = tab_orphan_truncate(ino, q.size);
        }
    }
    if (rc == 0 && (q.valid & STRIA_SET_SIZE))
        tab_each(ino, truncated_one, &q.size);
    if (rc)
        sf_reply_err(req, rc);
    else
        reply_attr(req, &a);
}

static void sf_readlink(fuse_req_t req, fuse_ino_t ino)
{
    char buf[SF_MAX_PATH + 1];
    sf_cred(req);
    ssize_t n = stria_readlink_ino(sf.fs, ino, buf, sizeof(buf) - 1);
    if (n < 0) {
        sf_reply_err(req, (int)n);
        return;
    }
    buf[n] = '\0';
    fuse_reply_readlink(req, buf);
}

static void sf_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    struct stria_attr a;
    sf_cred(req);
    int rc = SF_INTR(req, stria_mkdir_at(sf.fs, parent, name, mode, &a));
    sf_reply_entry_rc(req, rc, &a);
}

static void sf_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
    struct stria_attr a;
    sf_cred(req);
    int rc = SF_INTR(req, stria_mknod_at(sf.fs, parent, name, mode, rdev, &a));
    sf_reply_entry_rc(req, rc, &a);
}

/* The last link went (rm not NULL): objects behind the reply, or at the
 * last close here (when this mount still has it open; writes may still
 * come, so they go then even if none existed yet). */
static void finish_removal(stria_removed_t *rm)
{
    if (rm && !tab_orphan(rm))
        stria_removed_finish_behind(sf.fs, rm);
}

/* The MDT's answer to a write-behind unlink (stria_start_unlink_behind):
 * its sender removes the objects of a batch's files together already. */
void sf_wb_removed(stria_fs_t *fs, stria_removed_t *rm, void *arg)
{
    (void)fs, (void)arg;
    if (rm && !tab_orphan(rm))
        stria_removed_finish(sf.fs, rm);
}

/* Whether this mount has ino open: such an unlink is not sent behind. */
static int open_here(uint64_t ino, void *arg)
{
    (void)arg;
    bool open = false;
    tab_local_size(ino, &open, NULL);
    return open;
}

static void sf_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    sf_cred(req);
    /* Acknowledged now and sent later, when this mount holds the
     * write-behind grant and its cache can decide alone. */
    stria_removed_t *rm = NULL;
    int rc = SF_INTR(req, stria_unlink_behind(sf.fs, parent, name, open_here, NULL, &rm));
    if (rc != -EAGAIN) {
        if (rc == 0)
            finish_removal(rm);
        sf_reply_err(req, rc);
        return;
    }
    rc = SF_INTR(req, stria_unlink_at(sf.fs, parent, name, &rm));
    if (rc == 0)
        finish_removal(rm);
    sf_reply_err(req, rc);
}

static void sf_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    sf_cred(req);
    sf_reply_err(req, SF_INTR(req, stria_rmdir_at(sf.fs, parent, name)));
}

static void sf_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
    struct stria_attr a;
    sf_cred(req);
    int rc = SF_INTR(req, stria_symlink_at(sf.fs, parent, name, link, &a));
    sf_reply_entry_rc(req, rc, &a);
}

static void sf_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
    stria_removed_t *rm = NULL;
    sf_cred(req);
    int rc = SF_INTR(req, stria_rename_at(sf.fs, parent, name, newparent, newname, flags, &rm));
    if (rc == 0)
        finish_removal(rm);
    sf_reply_err(req, rc);
}

static void sf_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
    struct stria_attr a;
    sf_cred(req);
    int rc = SF_INTR(req, stria_link_at(sf.fs, ino, newparent, newname, &a));
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
