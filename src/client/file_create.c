/*
 * Files created behind, the handle's side (file_int.h; docs/architecture.md,
 * "Files created behind"): a create cl_open makes here, and what an
 * ordinary create under the grant shows of its directory.
 */
#include "file_int.h"

#include "../common/util.h"
#include "gather.h"
#include "mdcache.h"
#include "wb.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>

/* Whether l, a new file's, has no component on an OST yet: its first on
 * its MDT, the rest pending. Only such a layout is the same for every new
 * file of a directory, which a file created behind takes (wb_template). */
static bool layout_mdt_only(const struct layout *l)
{
    if (!layout_dom_size(l))
        return false;
    for (uint32_t k = 1; k < l->ncomp; k++)
        if (!layout_comp_pending(&l->comp[k]))
            return false;
    return true;
}

/* Flags a create behind leaves to the ordinary way: writes that must not
 * be behind, and what is no regular new file. */
#define NOT_BEHIND (O_SYNC | O_DSYNC | O_DIRECT | O_APPEND | O_DIRECTORY | O_PATH | __O_TMPFILE)

/* Create name in parent (on MDT mdt) here, and send the create later with
 * the file's first bytes (docs/architecture.md, "Files created behind"):
 * when the cache knows the name is new and cred may add it, and the grant
 * a create in parent was made under, which showed the layout a new file
 * gets there, is held still (wb_create_begin). The file's attributes are
 * those the MDT gives (meta_init_inode); its number is from this client's
 * range. Whether it was made. */
bool file_create_behind(stria_fs_t *fs, uint64_t parent, uint32_t mdt, const char *name, int flags,
                        mode_t mode, const struct proto_cred *cred, stria_file_t *f,
                        struct proto_attr *attr)
{
    struct proto_attr dir;
    uint64_t ino, grant;
    if ((flags & NOT_BEHIND) || !fs->mdc)
        return false;
    gather_wait_free(fs);
    if (!wb_create_begin(fs, mdt, parent, name, &ino, &f->layout, &grant))
        return false;
    /* The name is taken in the cache with the check: another thread's
     * create of it then goes the ordinary way, which waits for this one. */
    if (!mdc_create_new(fs->mdc, parent, mdt, name, cred, ino, &dir)) {
        wb_behind_end(fs); /* the number goes unused */
        return false;
    }
    struct io_mk mk = {.parent = parent,
                       .mode = mode & 07777,
                       .flags = (uint32_t)(flags & O_ACCMODE),
                       .cred = *cred};
    snprintf(mk.name, sizeof(mk.name), "%s", name);
    int64_t now = (int64_t)util_now_real_ns();
    mk.said = (struct proto_attr){.ino = ino,
                                  .mode = S_IFREG | (mode & 07777),
                                  .nlink = 1,
                                  .uid = cred->uid,
                                  /* BSD groups under a setgid directory, as the MDT */
                                  .gid = (dir.mode & S_ISGID) ? dir.gid : cred->gid,
                                  .atime_ns = now,
                                  .mtime_ns = now,
                                  .ctime_ns = now};
    file_init(f, fs, flags, &mk.said);
    int rc = gather_create(fs, f, ino, &f->layout, mdt, &mk);
    wb_behind_end(fs);
    if (rc) {
        /* Its number goes unused; the ordinary way makes it. */
        mdc_forget_mdt(fs->mdc, mdt);
        pthread_cond_destroy(&f->marked);
        pthread_mutex_destroy(&f->hsm_lock);
        pthread_mutex_destroy(&f->ra_lock);
        pthread_mutex_destroy(&f->lock);
        return false;
    }
    f->wb_grant = grant;
    f->wb_mdt = mdt;
    /* The MDT marks a file a writer creates (create_or_get). */
    if ((flags & O_ACCMODE) != O_RDONLY)
        f->mark = MARK_DONE;
    wb_create_count(fs, WB_CREATE_MADE);
    if (attr)
        *attr = mk.said;
    return true;
}

void file_create_learnt(stria_fs_t *fs, uint32_t mdt, uint64_t parent, uint64_t grant,
                        uint64_t ns_ep, const struct layout *l)
{
    if (layout_mdt_only(l) && atomic_load(&fs->ns_epoch) == ns_ep)
        wb_template(fs, mdt, parent, grant, ns_ep, l);
}
