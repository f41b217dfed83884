/*
 * What the operations of stria-fuse share above the inode table: entries
 * and attributes handed to the kernel (with what this mount wrote and has
 * not reported), the size reports of this mount's handles, and the drop of
 * setuid/setgid by a write.
 */
#include "fuse_reply.h"

#include "fuse_tab.h"

#include "../common/util.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* Set by the mount's reader of requests (fuse_main.c) for each WRITE. */
__thread bool sf_write_kills_privs;

void sf_fill_entry(const struct stria_attr *attr, struct fuse_entry_param *e)
{
    struct stria_attr m = *attr, *a = &m;
    sf_merge_local(a);
    memset(e, 0, sizeof(*e));
    e->ino = a->ino;
    e->generation = 1; /* inode numbers are never reused */
    stria_attr_to_stat(a, &e->attr);
    e->attr_timeout = sf.attr_timeout;
    e->entry_timeout = sf.entry_timeout;
}

void sf_note_entry(const struct stria_attr *attr, const struct fuse_entry_param *e)
{
    struct stria_attr a = *attr;
    a.size = (uint64_t)e->attr.st_size; /* as filled: with local writes */
    tab_note(&a);
}

void sf_entry(const struct stria_attr *attr, struct fuse_entry_param *e)
{
    sf_fill_entry(attr, e);
    sf_note_entry(attr, e);
}

static void reported_one(stria_file_t *f, void *arg)
{
    const int64_t *r = arg;
    stria_file_reported(f, (uint64_t)r[0], r[1]);
}

int sf_report_local(uint64_t ino, stria_file_t *f)
{
    bool open;
    int64_t wrote_ns;
    int rc = tab_wb_wait(ino, f); /* a size must not come before its data */
    if (rc)
        return rc;
    uint64_t end = tab_local_size(ino, &open, &wrote_ns);
    if (!end)
        return 0;
    /* The mtime is the last write's: a report is no write. */
    if (!wrote_ns)
        wrote_ns = (int64_t)util_now_real_ns();
    rc = stria_report_size(sf.fs, ino, end, wrote_ns);
    if (rc == -ENOENT)
        return 0; /* unlinked: nobody can see its size */
    if (rc == 0) {
        /* The handles' own reports would come later with older times. */
        int64_t done[2] = {(int64_t)end, wrote_ns};
        tab_each(ino, reported_one, done);
    }
    return rc;
}

void sf_reply_entry(fuse_req_t req, const struct stria_attr *a)
{
    struct fuse_entry_param e;
    sf_entry(a, &e);
    fuse_reply_entry(req, &e);
}

void sf_reply_entry_rc(fuse_req_t req, int rc, const struct stria_attr *a)
{
    if (rc)
        sf_reply_err(req, rc);
    else
        sf_reply_entry(req, a);
}

void sf_merge_local(struct stria_attr *a)
{
    /* Writes of this mount not yet reported to the MDT still count: the
     * kernel takes the size we give it, whichever call carries it. */
    bool open;
    uint64_t local = tab_local_size(a->ino, &open, NULL);
    if (open && local > a->size) {
        a->size = local;
        a->blocks = (local + 511) / 512;
    }
}

int sf_getattr(uint64_t ino, struct stria_attr *a)
{
    int rc = stria_getattr_ino(sf.fs, ino, a);
    if (rc == -ENOENT && tab_orphan_attr(ino, a))
        rc = 0;
    if (rc == 0)
        sf_merge_local(a);
    return rc;
}

int sf_write_drop_privs(fuse_req_t req, uint64_t ino)
{
    uint32_t mode;
    struct stria_attr a;
    if (!tab_mode(ino, &mode)) {
        int rc = sf_getattr(ino, &a);
        if (rc)
            return rc;
        mode = a.mode;
    }
    /* setuid always; setgid where the group may execute (else it marks
     * mandatory locking), as Linux drops them. */
    uint32_t drop = mode & S_ISUID;
    if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
        drop |= S_ISGID;
    if (!drop)
        return 0;
    /* The MDT lets anyone who may write the file make this change. */
    struct stria_setattr q = {.valid = STRIA_SET_MODE, .mode = mode & 07777 & ~drop};
    sf_cred(req);
    int rc = SF_INTR(req, stria_setattr_ino(sf.fs, ino, &q, NULL, &a));
    if (rc == 0)
        tab_note(&a);
    return rc;
}
