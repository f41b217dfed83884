/*
 * Metadata calls on an inode (inode.h).
 *
 * Each names an inode, so it goes straight to the MDT in the inode
 * number's top bits, after the metadata cache had its chance to answer
 * (GETATTR). Every reply passes through cl_note, which lets the cache
 * follow it, and directories' stripes are learnt here for routing, which
 * is built on these calls and never below them. Nothing here touches
 * objects: a call that must (SETATTR of a smaller size, destroying a
 * removed file) is ns.c's.
 */
#include "inode.h"

#include "../common/util.h"
#include "gather.h"
#include "mdcache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

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

bool cl_one_name(const char *path)
{
    return path[0] && !strchr(path, '/');
}

static void note(stria_fs_t *fs, int64_t sent, const struct proto_leases *leases, uint64_t parent,
                 const char *name, uint64_t child, uint64_t parent2, const char *name2,
                 const struct proto_attr *attr, const struct layout *layout, bool exchange)
{
    if (!fs->mdc || cl_replaying)
        return; /* a kept reply's leases may have been taken back since */
    struct mdc_update u = {.sent_ms = sent,
                           .leases = leases,
                           .parent = parent && cl_one_name(name) ? parent : 0,
                           .name = name,
                           .child = child,
                           .parent2 = parent2 && cl_one_name(name2) ? parent2 : 0,
                           .name2 = name2,
                           .attr = attr,
                           .layout = layout,
                           .exchange = exchange};
    mdc_update(fs->mdc, &u);
}

void cl_note_layout(stria_fs_t *fs, int64_t sent, const struct proto_leases *leases,
                    uint64_t parent, const char *name, const struct proto_attr *attr,
                    const struct layout *layout)
{
    note(fs, sent, leases, parent, name, attr->ino, 0, NULL, attr,
         S_ISREG(attr->mode) ? layout : NULL, false);
}

/* Let the metadata cache (if on) follow a reply: see struct mdc_update. */
void cl_note(stria_fs_t *fs, int64_t sent, const struct proto_leases *leases, uint64_t parent,
             const char *name, uint64_t child, uint64_t parent2, const char *name2,
             const struct proto_attr *attr)
{
    note(fs, sent, leases, parent, name, child, parent2, name2, attr, NULL, false);
}

void cl_note_rename(stria_fs_t *fs, int64_t sent, const struct proto_leases *leases,
                    uint64_t sparent, const char *sname, uint64_t dparent, const char *dname,
                    bool exchange)
{
    note(fs, sent, leases, sparent, sname, 0, dparent, dname, NULL, NULL, exchange);
}

int cl_getattr(stria_fs_t *fs, uint64_t ino, struct proto_attr *out)
{
    /* The cache has the size and mtime once the bytes written behind landed. */
    gather_drain_behind(fs, ino);
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

/* The times of the shard of directory ino on MDT mdt, leased. One try, not
 * MDT_CALL's retries: a shard's MDT that cannot be reached leaves its
 * times out rather than hold every stat of the directory until the I/O
 * timeout (the directory's own MDT answered already). */
static int shard_attr(stria_fs_t *fs, uint64_t ino, uint32_t mdt, struct proto_attr *out)
{
    if (fs->mdc && mdc_getattr_at(fs->mdc, ino, mdt, out))
        return 0;
    struct proto_getattr_req q = {.ino = ino};
    struct proto_getattr_rep r;
    cl_cred(&q.cred);
    struct lease l;
    int rc = cl_get(fs, PROTO_NODE_META, mdt, &l);
    if (rc)
        return rc;
    int64_t sent = mdc_clock_ms();
    bool transport = false;
    rc = net_call_getattr(l.c, &q, &r, NULL, 0, NULL, 0, NULL, &transport);
    if (rc == 0) {
        *out = r.attr;
        cl_note(fs, sent, &r.leases, 0, NULL, 0, 0, NULL, &r.attr);
    }
    cl_put(&l, transport);
    return rc;
}

void cl_merge_times(stria_fs_t *fs, struct proto_attr *a)
{
    if (!S_ISDIR(a->mode) || a->nlink == 0 || !proto_ds_valid(a->dstripe) ||
        proto_ds_count(a->dstripe) < 2)
        return;
    uint32_t home = proto_ino_mdt(a->ino);
    for (uint32_t k = 0; k < proto_ds_count(a->dstripe); k++) {
        uint32_t mdt = proto_ds_shard_mdt(a->dstripe, k);
        struct proto_attr s;
        if (mdt == home || shard_attr(fs, a->ino, mdt, &s) || s.ino != a->ino)
            continue; /* a shard that cannot be asked leaves its times out */
        if (s.mtime_ns > a->mtime_ns)
            a->mtime_ns = s.mtime_ns;
        if (s.ctime_ns > a->ctime_ns)
            a->ctime_ns = s.ctime_ns;
        if (s.atime_ns > a->atime_ns)
            a->atime_ns = s.atime_ns;
    }
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
    if (fs->mdc)
        mdc_xattr_changed(fs->mdc, ino);
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
    uint64_t gen = 0;
    if (fs->mdc && mdc_xattr_absent(fs->mdc, ino, name, &gen))
        return -ENODATA;
    cl_cred(&q.cred);
    int rc =
        MDT_CALL(fs, proto_ino_mdt(ino), getxattr, &q, &r, n = copy_out(&r.value, value, size));
    if (rc == -ENODATA && gen)
        mdc_note_xattr_absent(fs->mdc, ino, name, gen);
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
    if (fs->mdc)
        mdc_xattr_changed(fs->mdc, ino);
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
            out->comp[i].init = !layout_comp_pending(c);
            out->comp[i].on_mdt = (c->type & LAYOUT_TYPE_MASK) == LAYOUT_TYPE_MDT;
            snprintf(out->comp[i].pool, sizeof(out->comp[i].pool), "%s", c->pool);
            if (out->comp[i].init) {
                out->comp[i].stripe_count = c->stripe_count;
                out->comp[i].first_ost = (int32_t)map_group_ost(c->groups[0]);
                for (uint32_t s = 0; s < c->stripe_count; s++)
                    out->comp[i].ost[s] = map_group_ost(c->groups[s]);
            } else {
                out->comp[i].stripe_count =
                    c->stripe_count == LAYOUT_COUNT_ALL ? UINT32_MAX : c->stripe_count;
                out->comp[i].first_ost =
                    c->groups[0] == LAYOUT_ANY_OST ? -1 : (int32_t)map_group_ost(c->groups[0]);
            }
        }
    }
    free(r);
    return rc;
}

int cl_setstripe(stria_fs_t *fs, uint64_t ino, int32_t count, uint32_t size, int32_t offset,
                 const struct layout *comps)
{
    struct proto_setstripe_req *q = calloc(1, sizeof(*q));
    struct proto_setstripe_rep *r = malloc(sizeof(*r));
    if (!r || !q) {
        free(q);
        free(r);
        return -ENOMEM;
    }
    q->ino = ino;
    q->count = count;
    q->size = size;
    q->offset = offset;
    if (comps)
        layout_copy(&q->comps, comps);
    cl_cred(&q->cred);
    int64_t sent = mdc_clock_ms();
    int rc = MDT_CALL(fs, proto_ino_mdt(ino), setstripe, q, r,
                      cl_note(fs, sent, &r->leases, 0, NULL, 0, 0, NULL, NULL));
    free(q);
    free(r);
    return rc;
}

int cl_get_layout(stria_fs_t *fs, uint64_t ino, struct layout *l)
{
    struct proto_getstripe_req q = {.ino = ino};
    struct proto_getstripe_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    int rc = MDT_CALL(fs, proto_ino_mdt(ino), getstripe, &q, r, layout_copy(l, &r->layout));
    free(r);
    return rc;
}

int cl_layout_intent(stria_fs_t *fs, uint64_t ino, uint64_t end, struct layout *l)
{
    struct proto_layout_intent_req q = {.ino = ino, .end = end};
    struct proto_layout_intent_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    int64_t sent = mdc_clock_ms();
    int rc = MDT_CALL(fs, proto_ino_mdt(ino), layout_intent, &q, r, ({
                          layout_copy(l, &r->layout);
                          cl_note(fs, sent, &r->leases, 0, NULL, 0, 0, NULL, NULL);
                      }));
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

/* ---- stripes of directories, learnt from replies (route.c routes by them) ---- */

static struct cl_ds *ds_slot(stria_fs_t *fs, uint64_t ino)
{
    return &fs->ds[(ino * 0x9e3779b97f4a7c15ull) >> 52 & (CL_DS_SLOTS - 1)];
}

void cl_learn(stria_fs_t *fs, const struct proto_attr *a)
{
    if (!S_ISDIR(a->mode) || a->nlink == 0 || !proto_ds_valid(a->dstripe))
        return; /* nlink 0: a remote entry's type only */
    pthread_mutex_lock(&fs->ds_lock);
    struct cl_ds *d = ds_slot(fs, a->ino);
    d->ino = a->ino;
    d->dstripe = a->dstripe;
    pthread_mutex_unlock(&fs->ds_lock);
}

bool cl_known_stripe(stria_fs_t *fs, uint64_t dir, uint64_t *dstripe)
{
    pthread_mutex_lock(&fs->ds_lock);
    struct cl_ds *d = ds_slot(fs, dir);
    bool known = d->ino == dir;
    *dstripe = d->dstripe;
    pthread_mutex_unlock(&fs->ds_lock);
    return known;
}

void cl_attr_out(const struct proto_attr *a, struct stria_attr *o)
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
