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
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static stria_dir_t *dh(struct fuse_file_info *fi)
{
    return (stria_dir_t *)(uintptr_t)fi->fh;
}

/*
 * The listings the kernel keeps that are still current. The kernel keeps
 * a directory's listing in its page cache (cache_dirs) and asks this mount
 * at each opendir whether to go on using it (keep_cache). Another mount's
 * create, link, unlink or rename in the directory revokes this mount's
 * lease on it with a revocation that says only its names changed
 * (STRIA_REVOKED_NAMES): the directory leaves the table, and the next
 * opendir drops the kernel's copy. An opendir of a directory not in the
 * table drops it too and puts the directory in, so a directory pushed out
 * of a full window is listed again, never listed old.
 *
 * A striped directory's entry also holds its version (stria_dir_version:
 * the generations of this mount's leases on every shard), taken at the
 * opendir before the listing is read; the next opendir keeps the listing
 * only if the version is the same. A change in a shard while this mount's
 * lease there had run out sends no revocation, but moves the version.
 * (A directory on one MDT needs none: a change moves its mtime, which the
 * kernel compares at opendir once attr_timeout has passed.)
 *
 * A revocation of that kind leaves the kernel's attributes of the
 * directory alone: dropping them (fuse_lowlevel_notify_inval_inode) makes
 * the kernel throw away a GETATTR reply on its way, and check permissions
 * against what it held before (architecture.md, "A dropped reply"). The
 * directory's times and link count then follow attr_timeout on this
 * mount, as its names follow entry_timeout.
 */
#define KEPT_SLOTS  16384u /* a power of 2 */
#define KEPT_WINDOW 8u     /* slots a directory may take, from its hash on */

static struct {
    pthread_mutex_t lock;
    struct kept_dir {
        uint64_t ino; /* 0: empty */
        uint64_t version;
    } d[KEPT_SLOTS];
    uint32_t evict; /* which slot of a full window goes next */
} kept = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint32_t kept_home(uint64_t ino)
{
    return (uint32_t)((ino * 0x9e3779b97f4a7c15ull) >> 40) & (KEPT_SLOTS - 1);
}

/* ino's entry in its window, or NULL (lock held). */
static struct kept_dir *kept_find(uint64_t ino)
{
    uint32_t h = kept_home(ino);
    for (uint32_t i = 0; i < KEPT_WINDOW; i++) {
        struct kept_dir *k = &kept.d[(h + i) & (KEPT_SLOTS - 1)];
        if (k->ino == ino)
            return k;
    }
    return NULL;
}

/* At opendir: true when the kernel may go on using its listing of ino, of
 * version (0 for a directory on one MDT); otherwise ino is put in the
 * table with it (the kernel's copy, if any, goes). */
static bool kept_current(uint64_t ino, uint64_t version)
{
    pthread_mutex_lock(&kept.lock);
    struct kept_dir *k = kept_find(ino);
    bool current = k && k->version == version;
    if (!k) {
        uint32_t h = kept_home(ino);
        k = &kept.d[(h + kept.evict++ % KEPT_WINDOW) & (KEPT_SLOTS - 1)];
        for (uint32_t i = 0; i < KEPT_WINDOW; i++)
            if (kept.d[(h + i) & (KEPT_SLOTS - 1)].ino == 0) {
                k = &kept.d[(h + i) & (KEPT_SLOTS - 1)];
                break;
            }
    }
    *k = (struct kept_dir){ino, version}; /* what was there is listed afresh next time */
    pthread_mutex_unlock(&kept.lock);
    return current;
}

/* Another client changed ino (stria_on_lease_revoked), before the change
 * is acknowledged. Only its names: the kernel's listing of it is no longer
 * current. Anything else: the kernel drops the attributes it holds, so
 * that the next stat, and the next opendir of a directory whose listing it
 * keeps, asks this mount again, which answers from the MDT, the lease
 * gone; a listing whose directory's mtime moved is read again. Only the
 * attributes: the page cache of a file follows close-to-open, at its next
 * open. */
void sf_revoked(uint64_t ino, unsigned what, void *arg)
{
    (void)arg;
    if (what & STRIA_REVOKED_NAMES) {
        pthread_mutex_lock(&kept.lock);
        struct kept_dir *k = kept_find(ino);
        if (k)
            k->ino = 0;
        pthread_mutex_unlock(&kept.lock);
        return;
    }
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
    /* The kernel keeps a listing in its page cache, and lists it again
     * from there. It drops the copy when this mount changes the directory;
     * when another client did since the listing was read (the table
     * above); and at an opendir when the directory's mtime has moved,
     * which it asks for again once attr_timeout has passed, or at once
     * when another client changed more than its names (sf_revoked, before
     * the change is acknowledged). A striped directory's listing is kept
     * only while this mount can lease every shard (its version). */
    uint64_t version = 0;
    fi->cache_readdir =
        sf.cache_dirs && (stria_dir_on_one_mdt(d) || stria_dir_version(d, &version) == 0);
    fi->keep_cache = fi->cache_readdir && kept_current(ino, version);
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
