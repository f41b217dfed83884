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

/* An open directory: libstria's handle, and what the kept table below
 * knows of it. */
struct sf_dir {
    stria_dir_t *d;
    uint64_t version; /* stria_dir_version's at opendir */
    bool counted;     /* counted in its kept entry's nopen */
    bool fills;       /* opened to read the listing afresh for the kernel */
};

static struct sf_dir *dh(struct fuse_file_info *fi)
{
    return (struct sf_dir *)(uintptr_t)fi->fh;
}

/*
 * The listings the kernel keeps that are still current. The kernel keeps
 * a directory's listing in its page cache (cache_dirs) and asks this mount
 * at each opendir whether to go on using it (keep_cache). The table holds
 * an entry per directory listed: its version (stria_dir_version: this
 * mount's lease generation on every part of it, taken at opendir), whether
 * the kernel's copy is current, and how many handles on it are open.
 *
 * - An opendir keeps the kernel's copy when the entry is current and of
 *   the same version. Otherwise it answers "do not keep" (the kernel drops
 *   its copy as the open completes) and leaves the entry not current; the
 *   handle's first READDIR (the open has completed by then, and the
 *   listing it reads is read after) makes it current.
 * - A revocation of any kind makes the entry not current. Another mount's
 *   create, link, unlink or rename in the directory says only its names
 *   changed (STRIA_REVOKED_NAMES): then, unless a handle on it is open,
 *   the kernel is told nothing. Dropping the kernel's attributes
 *   (fuse_lowlevel_notify_inval_inode) makes it throw away a GETATTR reply
 *   on its way and check permissions against what it held before
 *   (architecture.md, "A dropped reply"); the directory's times and link
 *   count then follow attr_timeout here, as its names follow
 *   entry_timeout. With a handle open, a READDIR read before the change
 *   may still land in the kernel's copy after it: the attributes are
 *   dropped then, so the kernel compares the mtime at the next listing.
 * - The version moves with every change, and with a lease given anew: a
 *   change while this mount's lease had run out (no revocation comes) or
 *   while its MDT restarted is seen too.
 * - A directory may take one of 8 slots from its hash on; one with open
 *   handles is never pushed out. When all 8 are, the listing is not kept
 *   for that open.
 */
#define KEPT_SLOTS  16384u /* a power of 2 */
#define KEPT_WINDOW 8u     /* slots a directory may take, from its hash on */

static struct {
    pthread_mutex_t lock;
    struct kept_dir {
        uint64_t ino; /* 0: empty */
        uint64_t version;
        uint32_t nopen; /* handles open on it with the kernel's cache */
        bool current;   /* the kernel's copy is that of version */
    } d[KEPT_SLOTS];
    uint32_t evict; /* which slot of a full window goes next */
} kept = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct kept_dir *kept_slot(uint64_t ino, uint32_t i)
{
    uint32_t h = (uint32_t)((ino * 0x9e3779b97f4a7c15ull) >> 40);
    return &kept.d[(h + i) & (KEPT_SLOTS - 1)];
}

/* ino's entry, or NULL (lock held). */
static struct kept_dir *kept_find(uint64_t ino)
{
    for (uint32_t i = 0; i < KEPT_WINDOW; i++) {
        struct kept_dir *k = kept_slot(ino, i);
        if (k->ino == ino)
            return k;
    }
    return NULL;
}

/* At opendir: count a handle on ino, of version; *keep says whether the
 * kernel may go on using its copy, *others whether other handles on it are
 * open. False when there is no slot for it (then the handle must not fill
 * the kernel's cache). */
static bool kept_open(uint64_t ino, uint64_t version, bool *keep, bool *others)
{
    pthread_mutex_lock(&kept.lock);
    struct kept_dir *k = kept_find(ino);
    for (uint32_t i = 0; !k && i < KEPT_WINDOW; i++)
        if (kept_slot(ino, i)->ino == 0)
            k = kept_slot(ino, i);
    for (uint32_t i = 0; !k && i < KEPT_WINDOW; i++) {
        struct kept_dir *o = kept_slot(ino, kept.evict++ % KEPT_WINDOW);
        if (o->nopen == 0)
            k = o; /* listed afresh at its next opendir */
    }
    if (k) {
        *keep = k->ino == ino && k->current && k->version == version;
        *others = k->ino == ino && k->nopen;
        if (!*keep)
            *k = (struct kept_dir){ino, version, k->ino == ino ? k->nopen : 0, false};
        k->nopen++;
    }
    pthread_mutex_unlock(&kept.lock);
    return k != NULL;
}

static void kept_close(uint64_t ino)
{
    pthread_mutex_lock(&kept.lock);
    struct kept_dir *k = kept_find(ino);
    if (k && k->nopen)
        k->nopen--;
    pthread_mutex_unlock(&kept.lock);
}

/* A handle opened to fill the kernel's copy reads it: its open, and the
 * kernel's dropping of the old copy, are done. */
static void kept_filling(uint64_t ino, uint64_t version)
{
    pthread_mutex_lock(&kept.lock);
    struct kept_dir *k = kept_find(ino);
    if (k && k->version == version)
        k->current = true;
    pthread_mutex_unlock(&kept.lock);
}

/* Another client changed ino (stria_on_lease_changed), before the change
 * is acknowledged. The kernel's listing of it is no longer current. For
 * any change but a name's, or with a handle open, the kernel drops the
 * attributes it holds, so that the next stat, and the next listing,
 * asks this mount again, which answers from the MDT, the lease gone; a
 * listing whose directory's mtime moved is read again. Only the
 * attributes: the page cache of a file follows close-to-open, at its next
 * open. */
void sf_revoked(uint64_t ino, unsigned what, void *arg)
{
    (void)arg;
    pthread_mutex_lock(&kept.lock);
    struct kept_dir *k = kept_find(ino);
    bool open = k && k->nopen;
    if (k)
        k->current = false;
    pthread_mutex_unlock(&kept.lock);
    if (!(what & STRIA_REVOKED_NAMES) || open)
        fuse_lowlevel_notify_inval_inode(sf.se, ino, -1, 0);
}

static void sf_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct sf_dir *w = calloc(1, sizeof(*w));
    if (!w) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    sf_cred(req);
    int rc = stria_opendir_ino(sf.fs, ino, &w->d);
    if (rc) {
        free(w);
        sf_reply_err(req, rc);
        return;
    }
    fi->fh = (uintptr_t)w;
    /* The kernel keeps a listing in its page cache, and lists it again
     * from there, while the table above says it is current. It also drops
     * the copy when this mount changes the directory, and at a listing
     * when the directory's mtime has moved, which it asks for again once
     * attr_timeout has passed, or at once when its attributes were
     * dropped (sf_revoked). Without a version (no lease to be had) the
     * listing is not kept. */
    bool keep = false, others = false;
    fi->cache_readdir = sf.cache_dirs && stria_dir_version(w->d, &w->version) == 0 &&
                        (w->counted = kept_open(ino, w->version, &keep, &others));
    fi->keep_cache = keep;
    w->fills = w->counted && !keep;
    /* The version moved with no revocation (a lease had run out) while
     * another handle may be reading an older listing into the kernel's
     * copy: its attributes go too, so the mtime is compared. */
    if (w->fills && others)
        fuse_lowlevel_notify_inval_inode(sf.se, ino, -1, 0);
    if (fuse_reply_open(req, fi) == -ENOENT) {
        if (w->counted)
            kept_close(ino);
        stria_closedir(w->d);
        free(w);
    }
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi, bool plus)
{
    struct sf_dir *w = dh(fi);
    stria_dir_t *d = w->d;
    char *out = malloc(size);
    size_t used = 0;
    int rc = 0;
    if (!out) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    sf_cred(req);
    if (w->fills && off == 0) {
        kept_filling(ino, w->version);
        w->fills = false;
    }
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
    struct sf_dir *w = dh(fi);
    if (w->counted)
        kept_close(ino);
    stria_closedir(w->d);
    free(w);
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
