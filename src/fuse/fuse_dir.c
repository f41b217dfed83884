/*
 * Directories: opendir, readdir, readdirplus, releasedir.
 *
 * Offsets handed to the kernel: 1 after ".", 2 after "..", and an entry's
 * READDIR cookie + 2 after each entry (cookies are below 2^62, so offsets
 * stay positive). A cookie names a position in the directory's hash order,
 * so offsets stay valid while entries are added and removed. Each open
 * directory is a libstria directory (stria_opendir_ino), which keeps the
 * last batch from the MDT, since the kernel asks for a page of entries at
 * a time.
 */
#include "fuse_ops.h"
#include "fuse_reply.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static stria_dir_t *dh(struct fuse_file_info *fi)
{
    return (stria_dir_t *)(uintptr_t)fi->fh;
}

/* Another client changed ino: the kernel drops the attributes it holds,
 * so that the next stat, and the next opendir of a directory whose
 * listing it keeps (cache_dirs), asks this mount again; the mount answers
 * from the MDT, the lease gone, and a listing whose directory's mtime
 * moved is read again. Only the attributes: the page cache of a file
 * follows close-to-open, at its next open. */
void sf_revoked(uint64_t ino, void *arg)
{
    (void)arg;
    fuse_lowlevel_notify_inval_inode(sf.se, ino, -1, 0);
}

static void sf_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    stria_dir_t *d;
    sf_cred(req);
    int rc = stria_opendir_ino(sf.fs, ino, &d);
    if (rc) {
        sf_reply_err(req, rc);
        return;
    }
    fi->fh = (uintptr_t)d;
    /* The kernel keeps a listing of a directory on one MDT in its page
     * cache, and lists it again from there. It drops the copy when this
     * mount changes the directory, or at an opendir when the directory's
     * mtime has moved: it asks for the mtime again once attr_timeout has
     * passed, or at once when another client's change revoked this
     * mount's lease on it (sf_revoked, before the change is
     * acknowledged). A striped directory's mtime follows its first shard
     * only, so its listings are not kept. */
    fi->cache_readdir = sf.cache_dirs && stria_dir_on_one_mdt(d);
    fi->keep_cache = fi->cache_readdir;
    if (fuse_reply_open(req, fi) == -ENOENT)
        stria_closedir(d);
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi, bool plus)
{
    stria_dir_t *d = dh(fi);
    char *out = malloc(size);
    size_t used = 0;
    int rc = 0;
    if (!out) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    sf_cred(req);
    /* "." and ".." first, at offsets 0 and 1. */
    for (off_t dot = off; dot < 2; dot++) {
        struct stat st = {.st_ino = ino, .st_mode = S_IFDIR};
        const char *name = dot == 0 ? "." : "..";
        size_t n;
        if (plus) {
            struct fuse_entry_param e = {.attr = st}; /* ino 0: no lookup counted */
            n = fuse_add_direntry_plus(req, out + used, size - used, name, &e, dot + 1);
        } else {
            n = fuse_add_direntry(req, out + used, size - used, name, &st, dot + 1);
        }
        if (n > size - used)
            goto reply;
        used += n;
        off = dot + 1;
    }
    uint64_t cookie = (uint64_t)off - 2;
    struct stria_direntplus *de = malloc(sizeof(*de));
    if (!de) {
        rc = -ENOMEM;
        goto reply;
    }
    for (;;) {
        rc = stria_readdir_at(d, cookie, plus, de);
        if (rc <= 0)
            break; /* the end, or an error */
        rc = 0;
        /* An entry whose inode is on another MDT comes with its type only. */
        if (plus && de->attr.nlink == 0 && (rc = stria_getattr_ino(sf.fs, de->d.ino, &de->attr)))
            break;
        off_t next = (off_t)(de->next_cookie + 2);
        size_t n;
        struct fuse_entry_param e;
        if (plus) {
            sf_fill_entry(&de->attr, &e);
            n = fuse_add_direntry_plus(req, out + used, size - used, de->d.name, &e, next);
        } else {
            struct stat st = {.st_ino = de->d.ino, .st_mode = (mode_t)DTTOIF(de->d.type)};
            n = fuse_add_direntry(req, out + used, size - used, de->d.name, &st, next);
        }
        if (n > size - used)
            break; /* full: this entry starts the next reply */
        if (plus)
            sf_note_entry(&de->attr, &e); /* the kernel gets it */
        used += n;
        cookie = de->next_cookie;
    }
    free(de);
reply:
    if (rc && used == 0)
        sf_reply_err(req, rc);
    else
        fuse_reply_buf(req, out, used);
    free(out);
}

static void sf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    readdir_common(req, ino, size, off, fi, false);
}

static void sf_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
    readdir_common(req, ino, size, off, fi, true);
}

static void sf_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    stria_closedir(dh(fi));
    fuse_reply_err(req, 0);
}

static void sf_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)ino, (void)datasync, (void)fi;
    /* Metadata is made durable by the MDT's SYNC; a directory has no data. */
    stria_file_t *f;
    sf_cred(req);
    int rc = stria_open_at(sf.fs, ino, "", O_RDONLY, 0, &f, NULL);
    if (rc == 0) {
        rc = stria_fsync(f);
        stria_close(f);
    }
    sf_reply_err(req, rc);
}

void sf_ops_dir(struct fuse_lowlevel_ops *ops)
{
    ops->opendir = sf_opendir;
    ops->readdir = sf_readdir;
    ops->readdirplus = sf_readdirplus;
    ops->releasedir = sf_releasedir;
    ops->fsyncdir = sf_fsyncdir;
}
