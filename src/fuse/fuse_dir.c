/*
 * Directories: opendir, readdir, readdirplus, releasedir.
 *
 * Offsets handed to the kernel: 1 after ".", 2 after "..", and an entry's
 * READDIR cookie + 2 after each entry (cookies are below 2^62, so offsets
 * stay positive). A cookie names a position in the directory's hash order,
 * so offsets stay valid while entries are added and removed. Each open
 * directory keeps the last batch from the MDT, since the kernel asks for a
 * page of entries at a time.
 */
#include "fuse_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BATCH (64u << 10)

struct sdir {
    uint64_t ino;
    uint8_t *buf;
    struct cl_dirbatch b;
    bool plus;
    bool have;
    uint64_t batch_cookie; /* the cookie the batch was read from */
    uint32_t pos;          /* next entry to hand out, as a byte offset */
    uint32_t left;         /* entries from pos to the end of the batch */
    uint64_t pos_cookie;   /* the cookie that resumes at pos */
};

static struct sdir *dh(struct fuse_file_info *fi)
{
    return (struct sdir *)(uintptr_t)fi->fh;
}

static void sf_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct proto_attr a;
    sf_cred(req);
    int rc = cl_getattr(sf.fs, ino, &a);
    if (rc) {
        sf_reply_err(req, rc);
        return;
    }
    if (!S_ISDIR(a.mode)) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    struct sdir *d = calloc(1, sizeof(*d));
    if (!d || !(d->buf = malloc(BATCH))) {
        free(d);
        fuse_reply_err(req, ENOMEM);
        return;
    }
    d->ino = ino;
    fi->fh = (uintptr_t)d;
    fi->cache_readdir = 0;
    if (fuse_reply_open(req, fi) == -ENOENT) {
        free(d->buf);
        free(d);
    }
}

/* Position the batch at cookie, reading from the MDT if needed. */
static int seek(struct sdir *d, uint64_t cookie, bool plus)
{
    if (d->have && d->plus == plus && d->pos_cookie == cookie)
        return 0;
    int rc = cl_readdir(sf.fs, d->ino, cookie, plus, d->buf, BATCH, &d->b);
    if (rc)
        return rc;
    d->have = true;
    d->plus = plus;
    d->batch_cookie = cookie;
    d->pos = 0;
    d->left = d->b.count;
    d->pos_cookie = cookie;
    return 0;
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi, bool plus)
{
    struct sdir *d = dh(fi);
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
    for (;;) {
        if ((rc = seek(d, cookie, plus)))
            break;
        if (d->left == 0) {
            if (d->b.eof)
                break;
            rc = -EIO; /* the MDT made no progress */
            break;
        }
        struct proto_dec dec;
        struct proto_dirent de;
        struct proto_attr a;
        proto_dec_init(&dec, d->buf + d->pos, d->b.len - d->pos);
        proto_get_dirent(&dec, &de);
        if (plus)
            proto_get_ATTR(&dec, &a);
        if (dec.err) {
            rc = -EPROTO;
            break;
        }
        /* An entry whose inode is on another MDT comes with its type only. */
        if (plus && a.nlink == 0 && (rc = cl_getattr(sf.fs, a.ino, &a)))
            break;
        char name[PROTO_MAX_NAME + 1];
        memcpy(name, de.name.p, de.name.len);
        name[de.name.len] = '\0';
        off_t next = (off_t)(de.next_cookie + 2);
        size_t n;
        struct fuse_entry_param e;
        if (plus) {
            sf_fill_entry(&a, &e);
            n = fuse_add_direntry_plus(req, out + used, size - used, name, &e, next);
        } else {
            struct stat st = {.st_ino = de.ino, .st_mode = (mode_t)DTTOIF(de.type)};
            n = fuse_add_direntry(req, out + used, size - used, name, &st, next);
        }
        if (n > size - used)
            break; /* full: this entry starts the next reply */
        if (plus)
            sf_note_entry(&a, &e); /* the kernel gets it */
        used += n;
        d->pos += (uint32_t)dec.off;
        d->left--;
        d->pos_cookie = cookie = de.next_cookie;
        if (d->left == 0 && d->b.eof)
            break;
        if (d->left == 0)
            d->have = false; /* read the next batch from cookie */
    }
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
    struct sdir *d = dh(fi);
    free(d->buf);
    free(d);
    fuse_reply_err(req, 0);
}

static void sf_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)ino, (void)datasync, (void)fi;
    /* Metadata is made durable by the MDT's SYNC; a directory has no data. */
    stria_file_t *f;
    sf_cred(req);
    int rc = cl_open(sf.fs, ino, "", O_RDONLY, 0, 0, 0, -1, &f, NULL);
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
