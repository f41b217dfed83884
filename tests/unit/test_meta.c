/*
 * Unit tests of the namespace operations of one MDT (meta/ops.h) over a real
 * LMDB store (meta/store.h).
 *
 * Each test opens a fresh store in its own mkdtemp directory with four
 * online OSTs and drives the namespace through the meta_op_* functions, the
 * way metad does after decoding a request. Paths are relative to the root
 * (inode 1). The expected results are what Linux on ext4 returns for the
 * same sequence of system calls: a client that sees a different errno, a
 * stale ".." or a lost directory entry sees a different file system.
 * Every test tears the store down and removes its directory, pass or fail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/auth.h"
#include "common/log.h"
#include "common/util.h"
#include "meta/ops/fsck.h"
#include "meta/ops/ops.h"
#include "meta/service/dispatch.h"
#include "meta/service/mdt.h"
#include "meta/service/metad_conf.h"
#include "meta/store/dlg_rec.h"
#include "meta/store/dom_rec.h"
#include "meta/store/env.h"
#include "meta/store/hsm_rec.h"
#include "meta/store/mig_rec.h"
#include "meta/store/wcache.h"
#include "proto/csum.h"
#include "proto/layout.h"
#include "proto/map.h"
#include "proto/proto.h"
#include "proto/xrefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

/* A request that keeps nothing, for calling an operation of context c. */
#define RQ(c) (&(struct meta_req){.ctx = (c)})

#define ROOT     PROTO_ROOT_INO
#define MAP_SIZE (64ull << 20)
#define NOST     4
#define MIB      (1u << 20)

/* ---- fixture ---------------------------------------------------------- */

struct fx {
    char dir[64];
    struct meta_store *s;
    struct meta_ctx ctx;
    bool ctx_live;
};

static const struct proto_cred root_cred;

static struct proto_cred user(uint32_t uid, uint32_t gid)
{
    struct proto_cred c;
    memset(&c, 0, sizeof(c));
    c.uid = uid;
    c.gid = gid;
    return c;
}

/* Replace the allocator's view: n OSTs, online where mask has the bit. */
static void set_osts(struct fx *f, uint32_t n, uint32_t online_mask)
{
    struct meta_ost o[NOST];
    for (uint32_t i = 0; i < n; i++) {
        o[i].index = i;
        o[i].online = (online_mask >> i) & 1;
        o[i].avail = 1ull << 40;
        o[i].total = 1ull << 41;
    }
    meta_ctx_set_osts(&f->ctx, o, n);
}

/* The cluster map of four online OSTs, 100 ms from now. */
static void *map_later(void *arg)
{
    usleep(100 * 1000);
    set_osts(arg, NOST, 0xf);
    return NULL;
}

/* Open the store as MDT 0 and a context over it with four online OSTs. */
static int fx_open(struct fx *f)
{
    int rc = meta_store_open(f->dir, 0, MAP_SIZE, &f->s);
    if (rc)
        return rc;
    if ((rc = meta_ctx_init(&f->ctx, f->s, 1, MIB, 1))) {
        meta_store_close(f->s);
        f->s = NULL;
        return rc;
    }
    f->ctx_live = true;
    set_osts(f, NOST, 0xf);
    return 0;
}

static void fx_close(struct fx *f)
{
    if (f->ctx_live)
        meta_ctx_destroy(&f->ctx);
    f->ctx_live = false;
    meta_store_close(f->s);
    f->s = NULL;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void rm_rf(const char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    snprintf(f->dir, sizeof(f->dir), "/tmp/stria_test_meta.XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    if (fx_open(f)) {
        rm_rf(f->dir);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (!f)
        return 0;
    fx_close(f);
    rm_rf(f->dir);
    free(f);
    return 0;
}

/* ---- operation helpers: return the op's result, fill optional outputs ---- */

static int op_open_at(struct fx *f, const struct proto_cred *c, uint64_t parent, const char *path,
                      uint32_t flags, uint32_t mode, struct proto_open_rep *rep)
{
    struct proto_open_req q;
    memset(&q, 0, sizeof(q));
    q.cred = *c;
    q.parent = parent;
    q.path = proto_str_c(path);
    q.flags = flags;
    q.mode = mode;
    q.stripe_count = 0;
    q.stripe_size = 0;
    q.stripe_offset = -1;
    static __thread struct proto_open_rep scratch;
    if (!rep)
        rep = &scratch;
    memset(rep, 0, sizeof(*rep));
    return meta_op_open(RQ(&f->ctx), &q, rep);
}

static int op_open(struct fx *f, const struct proto_cred *c, const char *path, uint32_t flags,
                   uint32_t mode, struct proto_open_rep *rep)
{
    return op_open_at(f, c, ROOT, path, flags, mode, rep);
}

/* Create a regular file that must not fail; returns its inode. */
static uint64_t mk_file(struct fx *f, const struct proto_cred *c, const char *path, uint32_t mode)
{
    struct proto_open_rep r;
    /* Without write access: a create for writing marks the file as
     * having objects (test_create_for_writing_marks), which is not what
     * most tests here want of an empty file. */
    assert_int_equal(op_open(f, c, path, O_CREAT | O_RDONLY | O_EXCL, mode, &r), 0);
    assert_int_equal(r.created, 1);
    assert_int_equal(r.marked, 0);
    assert_true(S_ISREG(r.attr.mode));
    return r.attr.ino;
}

static int op_mkdir(struct fx *f, const struct proto_cred *c, const char *path, uint32_t mode,
                    struct proto_attr *attr)
{
    struct proto_mkdir_req q;
    struct proto_mkdir_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.cred = *c;
    q.parent = ROOT;
    q.path = proto_str_c(path);
    q.mode = mode;
    int rc = meta_op_mkdir(RQ(&f->ctx), &q, &r);
    if (attr)
        *attr = r.attr;
    return rc;
}

static uint64_t mk_dir(struct fx *f, const struct proto_cred *c, const char *path, uint32_t mode)
{
    struct proto_attr a;
    assert_int_equal(op_mkdir(f, c, path, mode, &a), 0);
    assert_true(S_ISDIR(a.mode));
    assert_int_equal(a.nlink, 2);
    return a.ino;
}

static int op_unlink(struct fx *f, const struct proto_cred *c, const char *path,
                     struct proto_unlink_rep *rep)
{
    struct proto_unlink_req q;
    struct proto_unlink_rep r;
    memset(&q, 0, sizeof(q));
    q.cred = *c;
    q.parent = ROOT;
    q.path = proto_str_c(path);
    if (!rep)
        rep = &r;
    memset(rep, 0, sizeof(*rep));
    return meta_op_unlink(RQ(&f->ctx), &q, rep);
}

static int op_rmdir(struct fx *f, const struct proto_cred *c, const char *path)
{
    struct proto_rmdir_req q;
    struct proto_rmdir_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.cred = *c;
    q.parent = ROOT;
    q.path = proto_str_c(path);
    return meta_op_rmdir(RQ(&f->ctx), &q, &r);
}

static int op_rename(struct fx *f, const struct proto_cred *c, const char *from, const char *to,
                     uint32_t flags, struct proto_rename_rep *rep)
{
    struct proto_rename_req q;
    struct proto_rename_rep r;
    memset(&q, 0, sizeof(q));
    q.cred = *c;
    q.sparent = ROOT;
    q.spath = proto_str_c(from);
    q.dparent = ROOT;
    q.dpath = proto_str_c(to);
    q.flags = flags;
    if (!rep)
        rep = &r;
    memset(rep, 0, sizeof(*rep));
    return meta_op_rename(RQ(&f->ctx), &q, rep);
}

static int op_link(struct fx *f, const struct proto_cred *c, uint64_t ino, const char *to,
                   struct proto_attr *attr)
{
    struct proto_link_req q;
    struct proto_link_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.cred = *c;
    q.ino = ino;
    q.dparent = ROOT;
    q.dpath = proto_str_c(to);
    int rc = meta_op_link(RQ(&f->ctx), &q, &r);
    if (attr)
        *attr = r.attr;
    return rc;
}

static int op_symlink(struct fx *f, const struct proto_cred *c, const char *path,
                      const char *target, struct proto_attr *attr)
{
    struct proto_symlink_req q;
    struct proto_symlink_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.cred = *c;
    q.parent = ROOT;
    q.path = proto_str_c(path);
    q.target = proto_str_c(target);
    int rc = meta_op_symlink(RQ(&f->ctx), &q, &r);
    if (attr)
        *attr = r.attr;
    return rc;
}

static int op_mknod(struct fx *f, const struct proto_cred *c, const char *path, uint32_t mode,
                    uint64_t rdev, struct proto_attr *attr)
{
    struct proto_mknod_req q;
    struct proto_mknod_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.cred = *c;
    q.parent = ROOT;
    q.path = proto_str_c(path);
    q.mode = mode;
    q.rdev = rdev;
    int rc = meta_op_mknod(RQ(&f->ctx), &q, &r);
    if (attr)
        *attr = r.attr;
    return rc;
}

static int op_lookup_at(struct fx *f, const struct proto_cred *c, uint64_t parent, const char *path,
                        bool follow, struct proto_attr *attr)
{
    struct proto_lookup_req q;
    struct proto_lookup_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.cred = *c;
    q.parent = parent;
    q.path = proto_str_c(path);
    q.follow = follow;
    int rc = meta_op_lookup(RQ(&f->ctx), &q, &r);
    if (attr)
        *attr = r.attr;
    return rc;
}

static int op_lookup(struct fx *f, const struct proto_cred *c, const char *path, bool follow,
                     struct proto_attr *attr)
{
    return op_lookup_at(f, c, ROOT, path, follow, attr);
}

/* The inode a path names (as root, not following a final symlink). */
static uint64_t ino_of(struct fx *f, const char *path)
{
    struct proto_attr a;
    assert_int_equal(op_lookup(f, &root_cred, path, false, &a), 0);
    return a.ino;
}

static int op_getattr(struct fx *f, uint64_t ino, struct proto_attr *attr)
{
    struct proto_getattr_req q;
    struct proto_getattr_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.ino = ino;
    int rc = meta_op_getattr(RQ(&f->ctx), &q, &r);
    if (attr)
        *attr = r.attr;
    return rc;
}

static struct proto_attr attr_of(struct fx *f, uint64_t ino)
{
    struct proto_attr a;
    assert_int_equal(op_getattr(f, ino, &a), 0);
    return a;
}

static int op_setsize(struct fx *f, uint64_t ino, uint64_t size, struct proto_attr *attr)
{
    struct proto_setsize_req q;
    struct proto_setsize_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.ino = ino;
    q.size = size;
    int rc = meta_op_setsize(RQ(&f->ctx), &q, &r);
    if (attr)
        *attr = r.attr;
    return rc;
}

static int op_setattr(struct fx *f, const struct proto_cred *c, uint64_t ino, uint32_t valid,
                      uint32_t mode, uint32_t uid, uint32_t gid, uint64_t size,
                      struct proto_setattr_rep *rep)
{
    struct proto_setattr_req q;
    struct proto_setattr_rep r;
    memset(&q, 0, sizeof(q));
    q.cred = *c;
    q.ino = ino;
    q.valid = valid;
    q.mode = mode;
    q.uid = uid;
    q.gid = gid;
    q.size = size;
    if (!rep)
        rep = &r;
    memset(rep, 0, sizeof(*rep));
    return meta_op_setattr(RQ(&f->ctx), &q, rep);
}

static int op_chmod(struct fx *f, const struct proto_cred *c, uint64_t ino, uint32_t mode)
{
    return op_setattr(f, c, ino, SETATTR_MODE, mode, 0, 0, 0, NULL);
}

static int op_chown(struct fx *f, const struct proto_cred *c, uint64_t ino, uint32_t uid,
                    uint32_t gid)
{
    return op_setattr(f, c, ino, SETATTR_UID | SETATTR_GID, 0, uid, gid, 0, NULL);
}

/* readlink into buf (NUL-terminated on success). */
static int op_readlink(struct fx *f, uint64_t ino, char *buf, size_t len)
{
    struct proto_readlink_req q;
    struct proto_readlink_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.ino = ino;
    int rc = meta_op_readlink(&(struct meta_req){.ctx = &f->ctx, .buf = buf, .buf_len = len - 1},
                              &q, &r);
    if (rc == 0) {
        assert_ptr_equal(r.target.p, buf);
        buf[r.target.len] = '\0';
    }
    return rc;
}

static int op_readdir(struct fx *f, const struct proto_cred *c, uint64_t ino, uint64_t cookie,
                      uint32_t max_bytes, uint8_t *buf, size_t buflen,
                      struct proto_readdir_rep *rep)
{
    struct proto_readdir_req q;
    memset(&q, 0, sizeof(q));
    memset(rep, 0, sizeof(*rep));
    q.cred = *c;
    q.ino = ino;
    q.cookie = cookie;
    q.max_bytes = max_bytes;
    return meta_op_readdir(&(struct meta_req){.ctx = &f->ctx, .buf = buf, .buf_len = buflen}, &q,
                           rep);
}

typedef void (*dirent_fn)(void *arg, const struct proto_dirent *de);

/* Read a whole directory in batches of at most max_bytes, calling fn for
 * each entry and between(arg, batch) after every batch but the last.
 * Returns the number of batches. */
static int read_dir(struct fx *f, uint64_t ino, uint32_t max_bytes, dirent_fn fn,
                    void (*between)(void *arg, int batch), void *arg)
{
    uint8_t *buf = malloc(max_bytes);
    assert_non_null(buf);
    uint64_t cookie = 0;
    int batches = 0;
    for (;;) {
        struct proto_readdir_rep r;
        assert_int_equal(op_readdir(f, &root_cred, ino, cookie, max_bytes, buf, max_bytes, &r), 0);
        batches++;
        assert_true(batches < 100000);
        assert_true(r.entries.len <= max_bytes);
        struct proto_dec d;
        proto_dec_init(&d, r.entries.p, r.entries.len);
        for (uint32_t i = 0; i < r.count; i++) {
            struct proto_dirent de;
            proto_get_dirent(&d, &de);
            assert_int_equal(d.err, 0);
            fn(arg, &de);
            cookie = de.next_cookie;
        }
        assert_int_equal(d.off, d.len);
        if (r.eof)
            break;
        /* A batch that is not the end must make progress. */
        assert_true(r.count > 0);
        if (between)
            between(arg, batches);
    }
    free(buf);
    return batches;
}

static int op_getstripe(struct fx *f, uint64_t ino, struct proto_getstripe_rep *rep)
{
    struct proto_getstripe_req q;
    memset(&q, 0, sizeof(q));
    memset(rep, 0, sizeof(*rep));
    q.ino = ino;
    return meta_op_getstripe(RQ(&f->ctx), &q, rep);
}

static int op_setstripe(struct fx *f, const struct proto_cred *c, uint64_t ino, int32_t count,
                        uint32_t size, int32_t offset, struct proto_setstripe_rep *rep)
{
    struct proto_setstripe_req q;
    struct proto_setstripe_rep r;
    memset(&q, 0, sizeof(q));
    q.cred = *c;
    q.ino = ino;
    q.count = count;
    q.size = size;
    q.offset = offset;
    if (!rep)
        rep = &r;
    memset(rep, 0, sizeof(*rep));
    return meta_op_setstripe(RQ(&f->ctx), &q, rep);
}

static int op_setxattr(struct fx *f, const struct proto_cred *c, uint64_t ino, const char *name,
                       const char *value, uint32_t flags)
{
    struct proto_setxattr_req q;
    struct proto_setxattr_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.cred = *c;
    q.ino = ino;
    q.name = proto_str_c(name);
    q.value.p = (const uint8_t *)value;
    q.value.len = (uint32_t)strlen(value);
    q.flags = flags;
    return meta_op_setxattr(RQ(&f->ctx), &q, &r);
}

/* getxattr into buf as a C string. */
static int op_getxattr(struct fx *f, const struct proto_cred *c, uint64_t ino, const char *name,
                       char *buf, size_t len)
{
    struct proto_getxattr_req q;
    struct proto_getxattr_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.cred = *c;
    q.ino = ino;
    q.name = proto_str_c(name);
    int rc = meta_op_getxattr(&(struct meta_req){.ctx = &f->ctx, .buf = buf, .buf_len = len - 1},
                              &q, &r);
    if (rc == 0)
        buf[r.value.len] = '\0';
    return rc;
}

/* listxattr: the NUL-separated names in buf; returns their length or an error. */
static int op_listxattr(struct fx *f, const struct proto_cred *c, uint64_t ino, char *buf,
                        size_t len)
{
    struct proto_listxattr_req q;
    struct proto_listxattr_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.cred = *c;
    q.ino = ino;
    int rc =
        meta_op_listxattr(&(struct meta_req){.ctx = &f->ctx, .buf = buf, .buf_len = len}, &q, &r);
    return rc ? rc : (int)r.names.len;
}

static int op_removexattr(struct fx *f, const struct proto_cred *c, uint64_t ino, const char *name)
{
    struct proto_removexattr_req q;
    struct proto_removexattr_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.cred = *c;
    q.ino = ino;
    q.name = proto_str_c(name);
    return meta_op_removexattr(RQ(&f->ctx), &q, &r);
}

/* Is name among the NUL-separated names of list[0..len)? */
static bool list_has(const char *list, int len, const char *name)
{
    for (int off = 0; off < len; off += (int)strlen(list + off) + 1)
        if (!strcmp(list + off, name))
            return true;
    return false;
}

/* A layout of one component, count stripes of size bytes on distinct OSTs
 * below NOST, none of them in the bad mask. */
static void check_layout(const struct layout *l, uint16_t count, uint32_t size, uint32_t bad)
{
    assert_int_equal(l->ncomp, 1);
    assert_int_equal(l->comp[0].start, 0);
    assert_true(l->comp[0].end == LAYOUT_END_EOF);
    assert_int_equal(l->comp[0].stripe_count, count);
    assert_int_equal(l->comp[0].stripe_size, size);
    uint32_t seen = 0;
    for (uint16_t i = 0; i < count; i++) {
        uint32_t g = l->comp[0].groups[i];
        assert_true(g < NOST);
        assert_false(seen & (1u << g));
        assert_false(bad & (1u << g));
        seen |= 1u << g;
    }
}

/* ---- open and create -------------------------------------------------- */

static void test_create_and_open(void **state)
{
    struct fx *f = *state;
    struct proto_open_rep r;
    assert_int_equal(op_open(f, &root_cred, "f", O_CREAT | O_WRONLY, 0644, &r), 0);
    assert_int_equal(r.created, 1);
    assert_int_equal(r.attr.mode, S_IFREG | 0644);
    assert_int_equal(r.attr.nlink, 1);
    assert_int_equal(r.attr.size, 0);
    uint64_t ino = r.attr.ino;
    assert_int_equal(ino_of(f, "f"), ino);

    /* O_CREAT without O_EXCL opens what is there. */
    assert_int_equal(op_open(f, &root_cred, "f", O_CREAT | O_WRONLY, 0600, &r), 0);
    assert_int_equal(r.created, 0);
    assert_int_equal(r.attr.ino, ino);
    assert_int_equal(r.attr.mode, S_IFREG | 0644);
    assert_int_equal(op_open(f, &root_cred, "f", O_RDONLY, 0, &r), 0);
    assert_int_equal(r.attr.ino, ino);

    assert_int_equal(op_open(f, &root_cred, "f", O_CREAT | O_EXCL | O_WRONLY, 0644, NULL), -EEXIST);
    assert_int_equal(op_open(f, &root_cred, "missing", O_RDONLY, 0, NULL), -ENOENT);
    assert_int_equal(op_open(f, &root_cred, "missing", O_WRONLY, 0, NULL), -ENOENT);
    assert_int_equal(op_lookup(f, &root_cred, "missing", true, NULL), -ENOENT);
    /* A missing intermediate directory: ENOENT, even with O_CREAT. */
    assert_int_equal(op_open(f, &root_cred, "nodir/x", O_CREAT | O_WRONLY, 0644, NULL), -ENOENT);
    /* A regular file in the middle of a path. */
    assert_int_equal(op_open(f, &root_cred, "f/x", O_CREAT | O_WRONLY, 0644, NULL), -ENOTDIR);
    assert_int_equal(op_open(f, &root_cred, "f/x", O_RDONLY, 0, NULL), -ENOTDIR);
    assert_int_equal(op_lookup(f, &root_cred, "f/x", false, NULL), -ENOTDIR);
    assert_int_equal(op_lookup(f, &root_cred, "f/", false, NULL), -ENOTDIR);

    /* Paths relative to a directory other than the root. */
    uint64_t d = mk_dir(f, &root_cred, "d", 0755);
    assert_int_equal(op_open_at(f, &root_cred, d, "g", O_CREAT | O_WRONLY, 0644, &r), 0);
    assert_int_equal(ino_of(f, "d/g"), r.attr.ino);
    struct proto_attr a;
    assert_int_equal(op_lookup_at(f, &root_cred, d, "../f", false, &a), 0);
    assert_int_equal(a.ino, ino);
    assert_int_equal(op_lookup_at(f, &root_cred, d, "/f", false, &a), 0);
    assert_int_equal(a.ino, ino);
}

static void test_name_too_long(void **state)
{
    struct fx *f = *state;
    char name[300];
    memset(name, 'n', 255);
    name[255] = '\0';
    /* 255 bytes is the limit, as NAME_MAX. */
    mk_file(f, &root_cred, name, 0644);
    memset(name, 'm', 256);
    name[256] = '\0';
    assert_int_equal(op_open(f, &root_cred, name, O_CREAT | O_WRONLY, 0644, NULL), -ENAMETOOLONG);
    assert_int_equal(op_mkdir(f, &root_cred, name, 0755, NULL), -ENAMETOOLONG);
    assert_int_equal(op_lookup(f, &root_cred, name, false, NULL), -ENAMETOOLONG);

    /* A whole path longer than PROTO_MAX_STR, every component short. */
    char *path = malloc(PROTO_MAX_STR + 64);
    assert_non_null(path);
    size_t n = 0;
    while (n < PROTO_MAX_STR + 10) {
        memcpy(path + n, "aa/", 3);
        n += 3;
    }
    memcpy(path + n, "x", 2);
    int rc = op_open(f, &root_cred, path, O_CREAT | O_WRONLY, 0644, NULL);
    int rc2 = op_lookup(f, &root_cred, path, false, NULL);
    int rc3 = op_mkdir(f, &root_cred, path, 0755, NULL);
    free(path);
    assert_int_equal(rc, -ENAMETOOLONG);
    assert_int_equal(rc2, -ENAMETOOLONG);
    assert_int_equal(rc3, -ENAMETOOLONG);
}

static void test_open_directory(void **state)
{
    struct fx *f = *state;
    mk_dir(f, &root_cred, "d", 0755);
    struct proto_open_rep r;
    assert_int_equal(op_open(f, &root_cred, "d", O_RDONLY, 0, &r), 0);
    assert_true(S_ISDIR(r.attr.mode));
    assert_int_equal(op_open(f, &root_cred, "d", O_WRONLY, 0, NULL), -EISDIR);
    assert_int_equal(op_open(f, &root_cred, "d", O_RDWR, 0, NULL), -EISDIR);
    assert_int_equal(op_open(f, &root_cred, "d", O_CREAT | O_WRONLY, 0644, NULL), -EISDIR);
    assert_int_equal(op_open(f, &root_cred, ".", O_WRONLY, 0, NULL), -EISDIR);
    assert_int_equal(op_open(f, &root_cred, "d/.", O_RDWR, 0, NULL), -EISDIR);
    assert_int_equal(op_open(f, &root_cred, "d", O_CREAT | O_EXCL | O_WRONLY, 0644, NULL), -EEXIST);
}

static void test_open_trunc(void **state)
{
    struct fx *f = *state;
    uint64_t ino = mk_file(f, &root_cred, "f", 0644);
    assert_int_equal(op_setsize(f, ino, 5000, NULL), 0);
    assert_int_equal(attr_of(f, ino).size, 5000);
    struct proto_open_rep r;
    assert_int_equal(op_open(f, &root_cred, "f", O_WRONLY | O_TRUNC, 0, &r), 0);
    assert_int_equal(r.created, 0);
    assert_int_equal(r.old_size, 5000);
    assert_int_equal(r.attr.size, 0);
    assert_int_equal(attr_of(f, ino).size, 0);
    /* The layout comes back so the client can truncate the objects. */
    check_layout(&r.layout, 1, MIB, 0);
}

/* ---- mkdir, rmdir, unlink --------------------------------------------- */

static void test_mkdir_rmdir(void **state)
{
    struct fx *f = *state;
    uint64_t d = mk_dir(f, &root_cred, "d", 0750);
    assert_int_equal(attr_of(f, d).mode, S_IFDIR | 0750);
    assert_int_equal(op_mkdir(f, &root_cred, "d", 0755, NULL), -EEXIST);
    mk_file(f, &root_cred, "f", 0644);
    assert_int_equal(op_mkdir(f, &root_cred, "f", 0755, NULL), -EEXIST);
    assert_int_equal(op_mkdir(f, &root_cred, ".", 0755, NULL), -EEXIST);
    assert_int_equal(op_mkdir(f, &root_cred, "d/..", 0755, NULL), -EEXIST);
    assert_int_equal(op_mkdir(f, &root_cred, "nodir/x", 0755, NULL), -ENOENT);
    assert_int_equal(op_mkdir(f, &root_cred, "f/x", 0755, NULL), -ENOTDIR);

    mk_file(f, &root_cred, "d/x", 0644);
    assert_int_equal(op_rmdir(f, &root_cred, "d"), -ENOTEMPTY);
    assert_int_equal(op_rmdir(f, &root_cred, "f"), -ENOTDIR);
    assert_int_equal(op_rmdir(f, &root_cred, "missing"), -ENOENT);
    assert_int_equal(op_unlink(f, &root_cred, "d", NULL), -EISDIR);
    assert_int_equal(op_rmdir(f, &root_cred, ""), -EBUSY);
    assert_int_equal(op_rmdir(f, &root_cred, "/"), -EBUSY);
    assert_int_equal(op_rmdir(f, &root_cred, "d/."), -EINVAL);

    assert_int_equal(op_unlink(f, &root_cred, "d/x", NULL), 0);
    assert_int_equal(op_lookup(f, &root_cred, "d/x", false, NULL), -ENOENT);
    assert_int_equal(op_rmdir(f, &root_cred, "d"), 0);
    assert_int_equal(op_lookup(f, &root_cred, "d", false, NULL), -ENOENT);
    assert_int_equal(op_getattr(f, d, NULL), -ENOENT);
    assert_int_equal(op_unlink(f, &root_cred, "f", NULL), 0);
    assert_int_equal(op_unlink(f, &root_cred, "f", NULL), -ENOENT);
}

static void test_dir_nlink(void **state)
{
    struct fx *f = *state;
    assert_int_equal(attr_of(f, ROOT).nlink, 2);
    uint64_t p = mk_dir(f, &root_cred, "p", 0755);
    assert_int_equal(attr_of(f, ROOT).nlink, 3);
    char name[32];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "p/s%d", i);
        mk_dir(f, &root_cred, name, 0755);
        assert_int_equal(attr_of(f, p).nlink, 2 + i + 1);
    }
    /* Files do not count. */
    mk_file(f, &root_cred, "p/file", 0644);
    assert_int_equal(attr_of(f, p).nlink, 7);
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "p/s%d", i);
        assert_int_equal(op_rmdir(f, &root_cred, name), 0);
        assert_int_equal(attr_of(f, p).nlink, 7 - i - 1);
    }
    assert_int_equal(attr_of(f, ROOT).nlink, 3);
}

/* ---- permissions ------------------------------------------------------ */

static void test_perm_create_in_root_owned_dir(void **state)
{
    struct fx *f = *state;
    struct proto_cred u = user(1000, 1000);
    /* The root directory is 0755 root:root. */
    assert_int_equal(op_open(f, &u, "f", O_CREAT | O_WRONLY, 0644, NULL), -EACCES);
    assert_int_equal(op_mkdir(f, &u, "d", 0755, NULL), -EACCES);
    assert_int_equal(op_symlink(f, &u, "l", "x", NULL), -EACCES);
    assert_int_equal(op_lookup(f, &root_cred, "f", false, NULL), -ENOENT);
    /* Root may. */
    mk_file(f, &root_cred, "f", 0644);
    mk_dir(f, &root_cred, "d", 0755);
    /* Nor may the user remove or link what root created there. */
    assert_int_equal(op_unlink(f, &u, "f", NULL), -EACCES);
    assert_int_equal(op_rmdir(f, &u, "d"), -EACCES);
    assert_int_equal(op_link(f, &u, ino_of(f, "f"), "g", NULL), -EACCES);
    assert_int_equal(op_rename(f, &u, "f", "g", 0, NULL), -EACCES);
    /* In a directory the user owns, the user may. */
    assert_int_equal(op_chown(f, &root_cred, ino_of(f, "d"), 1000, 1000), 0);
    struct proto_open_rep r;
    assert_int_equal(op_open(f, &u, "d/mine", O_CREAT | O_WRONLY, 0644, &r), 0);
    assert_int_equal(r.attr.uid, 1000);
    assert_int_equal(r.attr.gid, 1000);
}

static void test_perm_read_private_file(void **state)
{
    struct fx *f = *state;
    struct proto_cred u = user(1000, 1000);
    mk_file(f, &root_cred, "secret", 0600);
    assert_int_equal(op_open(f, &u, "secret", O_RDONLY, 0, NULL), -EACCES);
    assert_int_equal(op_open(f, &u, "secret", O_WRONLY, 0, NULL), -EACCES);
    assert_int_equal(op_open(f, &u, "secret", O_RDWR, 0, NULL), -EACCES);
    /* Stat needs no permission on the file itself. */
    assert_int_equal(op_lookup(f, &u, "secret", false, NULL), 0);
    assert_int_equal(op_open(f, &root_cred, "secret", O_RDWR, 0, NULL), 0);

    /* 0644: others read, not write. */
    mk_file(f, &root_cred, "pub", 0644);
    assert_int_equal(op_open(f, &u, "pub", O_RDONLY, 0, NULL), 0);
    assert_int_equal(op_open(f, &u, "pub", O_WRONLY, 0, NULL), -EACCES);
    assert_int_equal(op_open(f, &u, "pub", O_RDONLY | O_TRUNC, 0, NULL), -EACCES);
    /* The owner class decides for the owner, even when others have more. */
    uint64_t o = mk_file(f, &root_cred, "odd", 0047);
    assert_int_equal(op_chown(f, &root_cred, o, 1000, 0), 0);
    assert_int_equal(op_open(f, &u, "odd", O_RDONLY, 0, NULL), -EACCES);
}

static void test_perm_search(void **state)
{
    struct fx *f = *state;
    struct proto_cred u = user(1000, 1000);
    mk_dir(f, &root_cred, "priv", 0700);
    uint64_t ino = mk_file(f, &root_cred, "priv/f", 0644);
    assert_int_equal(op_lookup(f, &u, "priv/f", false, NULL), -EACCES);
    assert_int_equal(op_open(f, &u, "priv/f", O_RDONLY, 0, NULL), -EACCES);
    assert_int_equal(op_open(f, &u, "priv/g", O_CREAT | O_WRONLY, 0644, NULL), -EACCES);
    struct proto_attr a;
    assert_int_equal(op_lookup(f, &root_cred, "priv/f", false, &a), 0);
    assert_int_equal(a.ino, ino);
    /* Read without search (0744) is not enough to walk through. */
    assert_int_equal(op_chmod(f, &root_cred, ino_of(f, "priv"), 0744), 0);
    assert_int_equal(op_lookup(f, &u, "priv/f", false, NULL), -EACCES);
    /* Search without read (0711) is enough to reach a known name. */
    assert_int_equal(op_chmod(f, &root_cred, ino_of(f, "priv"), 0711), 0);
    assert_int_equal(op_lookup(f, &u, "priv/f", false, &a), 0);
    assert_int_equal(a.ino, ino);
}

static void test_perm_sticky(void **state)
{
    struct fx *f = *state;
    struct proto_cred a = user(1000, 1000), b = user(1001, 1001);
    uint64_t tmp = mk_dir(f, &root_cred, "tmp", 01777);
    assert_int_equal(attr_of(f, tmp).mode, S_IFDIR | 01777);
    assert_int_equal(op_open(f, &a, "tmp/f", O_CREAT | O_WRONLY, 0666, NULL), 0);
    assert_int_equal(op_unlink(f, &b, "tmp/f", NULL), -EPERM);
    assert_int_equal(op_rename(f, &b, "tmp/f", "tmp/g", 0, NULL), -EPERM);
    /* Nor may b replace a's file by renaming over it. */
    assert_int_equal(op_open(f, &b, "tmp/bfile", O_CREAT | O_WRONLY, 0666, NULL), 0);
    assert_int_equal(op_rename(f, &b, "tmp/bfile", "tmp/f", 0, NULL), -EPERM);
    assert_int_equal(op_lookup(f, &root_cred, "tmp/f", false, NULL), 0);
    /* The owner may; so may root. */
    assert_int_equal(op_unlink(f, &a, "tmp/f", NULL), 0);
    assert_int_equal(op_open(f, &a, "tmp/f", O_CREAT | O_WRONLY, 0666, NULL), 0);
    assert_int_equal(op_unlink(f, &root_cred, "tmp/f", NULL), 0);
    /* Without the sticky bit, anyone with write permission may. */
    assert_int_equal(op_chmod(f, &root_cred, tmp, 0777), 0);
    assert_int_equal(op_open(f, &a, "tmp/f", O_CREAT | O_WRONLY, 0666, NULL), 0);
    assert_int_equal(op_unlink(f, &b, "tmp/f", NULL), 0);
}

static void test_perm_chmod_chown(void **state)
{
    struct fx *f = *state;
    struct proto_cred a = user(1000, 1000), b = user(1001, 1001);
    uint64_t d = mk_dir(f, &root_cred, "d", 0777);
    (void)d;
    struct proto_open_rep r;
    assert_int_equal(op_open(f, &a, "d/f", O_CREAT | O_WRONLY, 0644, &r), 0);
    uint64_t ino = r.attr.ino;

    assert_int_equal(op_chmod(f, &b, ino, 0777), -EPERM);
    assert_int_equal(attr_of(f, ino).mode, S_IFREG | 0644);
    assert_int_equal(op_chmod(f, &a, ino, 0600), 0);
    assert_int_equal(attr_of(f, ino).mode, S_IFREG | 0600);
    assert_int_equal(op_chmod(f, &root_cred, ino, 0640), 0);
    assert_int_equal(attr_of(f, ino).mode, S_IFREG | 0640);

    /* Giving a file away takes root; keeping the same owner is allowed. */
    assert_int_equal(op_chown(f, &a, ino, 1001, 1000), -EPERM);
    assert_int_equal(op_chown(f, &b, ino, 1001, 1001), -EPERM);
    assert_int_equal(attr_of(f, ino).uid, 1000);
    assert_int_equal(op_chown(f, &a, ino, 1000, 1000), 0);
    /* The owner may change the group only to one of its own groups. */
    assert_int_equal(op_chown(f, &a, ino, 1000, 2000), -EPERM);
    struct proto_cred a2 = a;
    a2.ngroups = 1;
    a2.groups[0] = 2000;
    assert_int_equal(op_chown(f, &a2, ino, 1000, 2000), 0);
    assert_int_equal(attr_of(f, ino).gid, 2000);
    assert_int_equal(op_chown(f, &root_cred, ino, 1001, 1001), 0);
    struct proto_attr at = attr_of(f, ino);
    assert_int_equal(at.uid, 1001);
    assert_int_equal(at.gid, 1001);
    /* Now a is no longer the owner. */
    assert_int_equal(op_chmod(f, &a, ino, 0777), -EPERM);
    assert_int_equal(op_chmod(f, &b, ino, 0600), 0);
}

static void test_perm_groups(void **state)
{
    struct fx *f = *state;
    uint64_t ino = mk_file(f, &root_cred, "g", 0640);
    assert_int_equal(op_chown(f, &root_cred, ino, 0, 500), 0);
    struct proto_cred u = user(1000, 1000);
    assert_int_equal(op_open(f, &u, "g", O_RDONLY, 0, NULL), -EACCES);
    u.ngroups = 3;
    u.groups[0] = 42;
    u.groups[1] = 43;
    u.groups[2] = 500;
    assert_int_equal(op_open(f, &u, "g", O_RDONLY, 0, NULL), 0);
    assert_int_equal(op_open(f, &u, "g", O_WRONLY, 0, NULL), -EACCES);
    /* The primary group counts too. */
    struct proto_cred p = user(1000, 500);
    assert_int_equal(op_open(f, &p, "g", O_RDONLY, 0, NULL), 0);

    /* Group write and search on a directory let a member create in it. */
    uint64_t d = mk_dir(f, &root_cred, "shared", 0770);
    assert_int_equal(op_chown(f, &root_cred, d, 0, 500), 0);
    assert_int_equal(op_open(f, &u, "shared/x", O_CREAT | O_WRONLY, 0644, NULL), 0);
    struct proto_cred outsider = user(1000, 1000);
    assert_int_equal(op_open(f, &outsider, "shared/y", O_CREAT | O_WRONLY, 0644, NULL), -EACCES);
}

/* ---- rename ----------------------------------------------------------- */

static void test_rename_plain(void **state)
{
    struct fx *f = *state;
    uint64_t a = mk_file(f, &root_cred, "a", 0644);
    mk_dir(f, &root_cred, "d", 0755);
    struct proto_rename_rep r;
    assert_int_equal(op_rename(f, &root_cred, "a", "b", 0, &r), 0);
    assert_int_equal(r.replaced, 0);
    assert_int_equal(r.destroy, 0);
    assert_int_equal(op_lookup(f, &root_cred, "a", false, NULL), -ENOENT);
    assert_int_equal(ino_of(f, "b"), a);
    assert_int_equal(op_rename(f, &root_cred, "b", "d/c", 0, NULL), 0);
    assert_int_equal(ino_of(f, "d/c"), a);
    assert_int_equal(attr_of(f, a).nlink, 1);
    assert_int_equal(op_rename(f, &root_cred, "missing", "x", 0, NULL), -ENOENT);
    /* Renaming a name onto itself does nothing. */
    assert_int_equal(op_rename(f, &root_cred, "d/c", "d/c", 0, NULL), 0);
    assert_int_equal(ino_of(f, "d/c"), a);
}

static void test_rename_over_file(void **state)
{
    struct fx *f = *state;
    uint64_t src = mk_file(f, &root_cred, "src", 0644);
    uint64_t dst = mk_file(f, &root_cred, "dst", 0644);
    assert_int_equal(op_link(f, &root_cred, dst, "dst2", NULL), 0);
    assert_int_equal(attr_of(f, dst).nlink, 2);

    /* dst still has another name: only its link count drops. */
    struct proto_rename_rep r;
    assert_int_equal(op_rename(f, &root_cred, "src", "dst", 0, &r), 0);
    assert_int_equal(r.replaced, dst);
    assert_int_equal(r.destroy, 0);
    assert_int_equal(ino_of(f, "dst"), src);
    assert_int_equal(op_lookup(f, &root_cred, "src", false, NULL), -ENOENT);
    assert_int_equal(attr_of(f, dst).nlink, 1);

    /* The last link of a file with data: the client must destroy its objects. */
    struct proto_open_rep o;
    assert_int_equal(op_open(f, &root_cred, "dst2", O_RDONLY, 0, &o), 0);
    assert_int_equal(op_setsize(f, dst, 4096, NULL), 0);
    uint64_t s2 = mk_file(f, &root_cred, "src2", 0644);
    assert_int_equal(op_rename(f, &root_cred, "src2", "dst2", 0, &r), 0);
    assert_int_equal(r.replaced, dst);
    assert_int_equal(r.destroy, 1);
    assert_memory_equal(&r.layout.comp[0], &o.layout.comp[0], sizeof(o.layout.comp[0]));
    assert_int_equal(r.layout.ncomp, o.layout.ncomp);
    assert_int_equal(op_getattr(f, dst, NULL), -ENOENT);
    assert_int_equal(ino_of(f, "dst2"), s2);

    /* A file that never had data has no objects to destroy. */
    uint64_t e = mk_file(f, &root_cred, "empty", 0644);
    assert_int_equal(op_rename(f, &root_cred, "dst2", "empty", 0, &r), 0);
    assert_int_equal(r.replaced, e);
    assert_int_equal(r.destroy, 0);
    assert_int_equal(op_getattr(f, e, NULL), -ENOENT);
}

static void test_rename_type_errors(void **state)
{
    struct fx *f = *state;
    mk_dir(f, &root_cred, "d1", 0755);
    mk_dir(f, &root_cred, "full", 0755);
    mk_file(f, &root_cred, "full/x", 0644);
    mk_file(f, &root_cred, "file", 0644);
    mk_dir(f, &root_cred, "d1/sub", 0755);

    assert_int_equal(op_rename(f, &root_cred, "d1", "full", 0, NULL), -ENOTEMPTY);
    assert_int_equal(op_rename(f, &root_cred, "d1", "file", 0, NULL), -ENOTDIR);
    assert_int_equal(op_rename(f, &root_cred, "file", "full", 0, NULL), -EISDIR);
    assert_int_equal(op_rename(f, &root_cred, "d1", "d1/sub/d1", 0, NULL), -EINVAL);
    assert_int_equal(op_rename(f, &root_cred, "d1", "d1/x", 0, NULL), -EINVAL);
    assert_int_equal(op_rename(f, &root_cred, "d1", "d1/sub", 0, NULL), -EINVAL);
    /* The target an ancestor of the source: it cannot be empty. */
    assert_int_equal(op_rename(f, &root_cred, "d1/sub", "d1", 0, NULL), -ENOTEMPTY);
    assert_int_equal(op_rename(f, &root_cred, "file", "nodir/x", 0, NULL), -ENOENT);
    /* Nothing moved. */
    assert_int_equal(op_lookup(f, &root_cred, "d1/sub", false, NULL), 0);
    assert_int_equal(op_lookup(f, &root_cred, "full/x", false, NULL), 0);
    assert_int_equal(op_lookup(f, &root_cred, "file", false, NULL), 0);

    /* A directory over an empty directory replaces it. */
    uint64_t d1 = ino_of(f, "d1");
    uint64_t e = mk_dir(f, &root_cred, "empty", 0755);
    uint32_t nl = attr_of(f, ROOT).nlink;
    struct proto_rename_rep r;
    assert_int_equal(op_rename(f, &root_cred, "d1", "empty", 0, &r), 0);
    assert_int_equal(r.replaced, e);
    assert_int_equal(r.destroy, 0);
    assert_int_equal(ino_of(f, "empty"), d1);
    assert_int_equal(op_getattr(f, e, NULL), -ENOENT);
    assert_int_equal(attr_of(f, ROOT).nlink, nl - 1);
}

static void test_rename_noreplace(void **state)
{
    struct fx *f = *state;
    uint64_t a = mk_file(f, &root_cred, "a", 0644);
    uint64_t b = mk_file(f, &root_cred, "b", 0644);
    assert_int_equal(op_rename(f, &root_cred, "a", "b", RENAME_NOREPLACE, NULL), -EEXIST);
    assert_int_equal(ino_of(f, "a"), a);
    assert_int_equal(ino_of(f, "b"), b);
    assert_int_equal(op_rename(f, &root_cred, "a", "c", RENAME_NOREPLACE, NULL), 0);
    assert_int_equal(ino_of(f, "c"), a);
    assert_int_equal(op_rename(f, &root_cred, "c", "b", RENAME_NOREPLACE | RENAME_EXCHANGE, NULL),
                     -EINVAL);
}

static void test_rename_exchange(void **state)
{
    struct fx *f = *state;
    uint64_t a = mk_file(f, &root_cred, "a", 0644);
    uint64_t b = mk_file(f, &root_cred, "b", 0644);
    assert_int_equal(op_rename(f, &root_cred, "a", "b", RENAME_EXCHANGE, NULL), 0);
    assert_int_equal(ino_of(f, "a"), b);
    assert_int_equal(ino_of(f, "b"), a);
    assert_int_equal(attr_of(f, a).nlink, 1);
    assert_int_equal(attr_of(f, b).nlink, 1);
    assert_int_equal(op_rename(f, &root_cred, "a", "none", RENAME_EXCHANGE, NULL), -ENOENT);

    /* Across directories, a file with a directory. */
    uint64_t A = mk_dir(f, &root_cred, "A", 0755);
    uint64_t B = mk_dir(f, &root_cred, "B", 0755);
    uint64_t file = mk_file(f, &root_cred, "A/f", 0644);
    uint64_t dir = mk_dir(f, &root_cred, "B/d", 0755);
    mk_file(f, &root_cred, "B/d/inside", 0644);
    assert_int_equal(attr_of(f, A).nlink, 2);
    assert_int_equal(attr_of(f, B).nlink, 3);
    assert_int_equal(op_rename(f, &root_cred, "A/f", "B/d", RENAME_EXCHANGE, NULL), 0);
    assert_int_equal(ino_of(f, "A/f"), dir);
    assert_int_equal(ino_of(f, "B/d"), file);
    assert_int_equal(attr_of(f, A).nlink, 3);
    assert_int_equal(attr_of(f, B).nlink, 2);
    /* The directory's ".." follows it, and its contents come along. */
    assert_int_equal(ino_of(f, "A/f/.."), A);
    assert_int_equal(op_lookup(f, &root_cred, "A/f/inside", false, NULL), 0);
    assert_int_equal(op_lookup(f, &root_cred, "B/d/inside", false, NULL), -ENOTDIR);

    /* A directory may not be exchanged with something inside itself. */
    mk_file(f, &root_cred, "A/f/g", 0644);
    assert_int_equal(op_rename(f, &root_cred, "A", "A/f/g", RENAME_EXCHANGE, NULL), -EINVAL);
    assert_int_equal(op_rename(f, &root_cred, "A/f/g", "A", RENAME_EXCHANGE, NULL), -EINVAL);
}

static void test_rename_dir_parent(void **state)
{
    struct fx *f = *state;
    uint64_t p1 = mk_dir(f, &root_cred, "p1", 0755);
    uint64_t p2 = mk_dir(f, &root_cred, "p2", 0755);
    uint64_t d = mk_dir(f, &root_cred, "p1/dir", 0755);
    mk_file(f, &root_cred, "p1/dir/f", 0644);
    assert_int_equal(ino_of(f, "p1/dir/.."), p1);
    assert_int_equal(attr_of(f, p1).nlink, 3);
    assert_int_equal(op_rename(f, &root_cred, "p1/dir", "p2/dir", 0, NULL), 0);
    assert_int_equal(ino_of(f, "p2/dir"), d);
    assert_int_equal(ino_of(f, "p2/dir/.."), p2);
    assert_int_equal(ino_of(f, "p2/dir/../dir/f"), ino_of(f, "p2/dir/f"));
    struct proto_attr a;
    assert_int_equal(op_lookup_at(f, &root_cred, d, "..", false, &a), 0);
    assert_int_equal(a.ino, p2);
    assert_int_equal(attr_of(f, p1).nlink, 2);
    assert_int_equal(attr_of(f, p2).nlink, 3);
    assert_int_equal(attr_of(f, d).nlink, 2);
    /* p1 is empty again and can go. */
    assert_int_equal(op_rmdir(f, &root_cred, "p1"), 0);
    /* Up to the root and down. */
    assert_int_equal(op_rename(f, &root_cred, "p2/dir", "top", 0, NULL), 0);
    assert_int_equal(ino_of(f, "top/.."), ROOT);
    assert_int_equal(attr_of(f, p2).nlink, 2);

    /* Over an empty directory in another parent: that parent keeps its
     * count (one subdirectory out, one in), the source parent loses one. */
    uint64_t q1 = mk_dir(f, &root_cred, "q1", 0755);
    uint64_t q2 = mk_dir(f, &root_cred, "q2", 0755);
    uint64_t mover = mk_dir(f, &root_cred, "q1/m", 0755);
    uint64_t victim = mk_dir(f, &root_cred, "q2/v", 0755);
    struct proto_rename_rep r;
    assert_int_equal(op_rename(f, &root_cred, "q1/m", "q2/v", 0, &r), 0);
    assert_int_equal(r.replaced, victim);
    assert_int_equal(op_getattr(f, victim, NULL), -ENOENT);
    assert_int_equal(ino_of(f, "q2/v"), mover);
    assert_int_equal(ino_of(f, "q2/v/.."), q2);
    assert_int_equal(attr_of(f, q1).nlink, 2);
    assert_int_equal(attr_of(f, q2).nlink, 3);

    /* Two directories exchanged across parents: counts stay, ".." swap. */
    uint64_t other = mk_dir(f, &root_cred, "q1/o", 0755);
    assert_int_equal(op_rename(f, &root_cred, "q1/o", "q2/v", RENAME_EXCHANGE, NULL), 0);
    assert_int_equal(ino_of(f, "q1/o"), mover);
    assert_int_equal(ino_of(f, "q2/v"), other);
    assert_int_equal(ino_of(f, "q1/o/.."), q1);
    assert_int_equal(ino_of(f, "q2/v/.."), q2);
    assert_int_equal(attr_of(f, q1).nlink, 3);
    assert_int_equal(attr_of(f, q2).nlink, 3);
    assert_int_equal(op_rmdir(f, &root_cred, "q1/o"), 0);
    assert_int_equal(op_rmdir(f, &root_cred, "q2/v"), 0);
    assert_int_equal(attr_of(f, q1).nlink, 2);
    assert_int_equal(attr_of(f, q2).nlink, 2);
}

/* rmdir of a path ending in "..": ENOTEMPTY on Linux (the directory it
 * names holds at least the one the path came through). */
static void test_rmdir_dotdot(void **state)
{
    struct fx *f = *state;
    mk_dir(f, &root_cred, "a", 0755);
    mk_dir(f, &root_cred, "a/b", 0755);
    assert_int_equal(op_rmdir(f, &root_cred, "a/b/.."), -ENOTEMPTY);
    assert_int_equal(op_rmdir(f, &root_cred, "a/.."), -ENOTEMPTY);
    assert_int_equal(op_lookup(f, &root_cred, "a/b", false, NULL), 0);
}

/* ---- link ------------------------------------------------------------- */

static void test_link(void **state)
{
    struct fx *f = *state;
    uint64_t ino = mk_file(f, &root_cred, "f", 0644);
    mk_dir(f, &root_cred, "d", 0755);
    struct proto_attr a;
    assert_int_equal(op_link(f, &root_cred, ino, "d/g", &a), 0);
    assert_int_equal(a.ino, ino);
    assert_int_equal(a.nlink, 2);
    assert_int_equal(ino_of(f, "d/g"), ino);
    assert_int_equal(op_link(f, &root_cred, ino, "h", NULL), 0);
    assert_int_equal(attr_of(f, ino).nlink, 3);
    assert_int_equal(op_link(f, &root_cred, ino, "h", NULL), -EEXIST);
    assert_int_equal(op_link(f, &root_cred, ino, "nodir/x", NULL), -ENOENT);

    struct proto_unlink_rep u;
    assert_int_equal(op_unlink(f, &root_cred, "f", &u), 0);
    assert_int_equal(u.ino, ino);
    assert_int_equal(u.destroy, 0);
    assert_int_equal(attr_of(f, ino).nlink, 2);
    assert_int_equal(op_unlink(f, &root_cred, "d/g", &u), 0);
    assert_int_equal(u.destroy, 0);
    assert_int_equal(attr_of(f, ino).nlink, 1);
    assert_int_equal(ino_of(f, "h"), ino);

    /* The last link goes with the inode; its objects must be destroyed. */
    assert_int_equal(op_setsize(f, ino, 100, NULL), 0);
    struct proto_open_rep o;
    assert_int_equal(op_open(f, &root_cred, "h", O_RDONLY, 0, &o), 0);
    assert_int_equal(op_unlink(f, &root_cred, "h", &u), 0);
    assert_int_equal(u.ino, ino);
    assert_int_equal(u.destroy, 1);
    assert_int_equal(u.layout.ncomp, 1);
    assert_memory_equal(&u.layout.comp[0], &o.layout.comp[0], sizeof(o.layout.comp[0]));
    assert_int_equal(op_getattr(f, ino, NULL), -ENOENT);

    uint64_t d = ino_of(f, "d");
    assert_int_equal(op_link(f, &root_cred, d, "d2", NULL), -EPERM);
    assert_int_equal(attr_of(f, d).nlink, 2);
}

/* ---- symlinks --------------------------------------------------------- */

static void test_symlink(void **state)
{
    struct fx *f = *state;
    uint64_t file = mk_file(f, &root_cred, "f", 0644);
    uint64_t dir = mk_dir(f, &root_cred, "dir", 0755);
    uint64_t x = mk_file(f, &root_cred, "dir/x", 0644);

    struct proto_attr a;
    assert_int_equal(op_symlink(f, &root_cred, "lnk", "dir", &a), 0);
    assert_true(S_ISLNK(a.mode));
    assert_int_equal(a.size, 3);
    uint64_t lnk = a.ino;
    assert_int_equal(op_symlink(f, &root_cred, "lnk", "other", NULL), -EEXIST);
    assert_int_equal(op_symlink(f, &root_cred, "flnk", "f", NULL), 0);

    char buf[PROTO_MAX_STR + 1];
    assert_int_equal(op_readlink(f, lnk, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "dir");
    assert_int_equal(op_readlink(f, file, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(op_readlink(f, dir, buf, sizeof(buf)), -EINVAL);

    /* lstat sees the link; stat sees the file. */
    assert_int_equal(op_lookup(f, &root_cred, "flnk", false, &a), 0);
    assert_true(S_ISLNK(a.mode));
    assert_int_equal(op_lookup(f, &root_cred, "flnk", true, &a), 0);
    assert_int_equal(a.ino, file);
    assert_true(S_ISREG(a.mode));
    /* open follows. */
    struct proto_open_rep o;
    assert_int_equal(op_open(f, &root_cred, "flnk", O_RDONLY, 0, &o), 0);
    assert_int_equal(o.attr.ino, file);

    /* A symlink inside a path always resolves. */
    assert_int_equal(op_lookup(f, &root_cred, "lnk/x", false, &a), 0);
    assert_int_equal(a.ino, x);
    assert_int_equal(op_lookup(f, &root_cred, "lnk", true, &a), 0);
    assert_int_equal(a.ino, dir);
    assert_int_equal(op_lookup(f, &root_cred, "lnk/", false, &a), 0);
    assert_int_equal(a.ino, dir);
    assert_int_equal(op_open(f, &root_cred, "lnk/new", O_CREAT | O_WRONLY, 0644, &o), 0);
    assert_int_equal(ino_of(f, "dir/new"), o.attr.ino);
    /* Relative targets resolve from the link's directory, absolute from the root. */
    assert_int_equal(op_symlink(f, &root_cred, "dir/up", "../f", NULL), 0);
    assert_int_equal(op_lookup(f, &root_cred, "dir/up", true, &a), 0);
    assert_int_equal(a.ino, file);
    assert_int_equal(op_symlink(f, &root_cred, "dir/abs", "/dir/x", NULL), 0);
    assert_int_equal(op_lookup(f, &root_cred, "lnk/abs", true, &a), 0);
    assert_int_equal(a.ino, x);

    /* Loops. */
    assert_int_equal(op_symlink(f, &root_cred, "a", "b", NULL), 0);
    assert_int_equal(op_symlink(f, &root_cred, "b", "a", NULL), 0);
    assert_int_equal(op_lookup(f, &root_cred, "a", true, NULL), -ELOOP);
    assert_int_equal(op_lookup(f, &root_cred, "a/x", false, NULL), -ELOOP);
    assert_int_equal(op_open(f, &root_cred, "a", O_RDONLY, 0, NULL), -ELOOP);
    assert_int_equal(op_lookup(f, &root_cred, "a", false, &a), 0);
    assert_true(S_ISLNK(a.mode));
    /* A dangling link is there, its target is not. */
    assert_int_equal(op_symlink(f, &root_cred, "dang", "nowhere", NULL), 0);
    assert_int_equal(op_lookup(f, &root_cred, "dang", false, NULL), 0);
    assert_int_equal(op_lookup(f, &root_cred, "dang", true, NULL), -ENOENT);
    /* An empty target is refused, as Linux. */
    assert_int_equal(op_symlink(f, &root_cred, "empty", "", NULL), -ENOENT);

    /* Removing the link leaves the target. */
    assert_int_equal(op_unlink(f, &root_cred, "flnk", NULL), 0);
    assert_int_equal(op_getattr(f, file, NULL), 0);
}

/* stat("flnk/") with flnk -> regular file: ENOTDIR on Linux, because the
 * trailing slash demands a directory after the link is followed. */
static void test_symlink_trailing_slash(void **state)
{
    struct fx *f = *state;
    mk_file(f, &root_cred, "f", 0644);
    assert_int_equal(op_symlink(f, &root_cred, "flnk", "f", NULL), 0);
    assert_int_equal(op_lookup(f, &root_cred, "f/", false, NULL), -ENOTDIR);
    assert_int_equal(op_lookup(f, &root_cred, "flnk/", false, NULL), -ENOTDIR);
    assert_int_equal(op_lookup(f, &root_cred, "flnk/", true, NULL), -ENOTDIR);
}

/* open("dang", O_CREAT) where dang -> "target" does not exist: Linux
 * creates "target" through the link. */
static void test_symlink_create_through_dangling(void **state)
{
    struct fx *f = *state;
    assert_int_equal(op_symlink(f, &root_cred, "dang", "target", NULL), 0);
    struct proto_open_rep o;
    int rc = op_open(f, &root_cred, "dang", O_CREAT | O_WRONLY, 0644, &o);
    assert_int_equal(rc, 0);
    assert_int_equal(o.created, 1);
    assert_int_equal(ino_of(f, "target"), o.attr.ino);
    /* O_EXCL never follows. */
    assert_int_equal(op_symlink(f, &root_cred, "dang2", "target2", NULL), 0);
    assert_int_equal(op_open(f, &root_cred, "dang2", O_CREAT | O_EXCL | O_WRONLY, 0644, NULL),
                     -EEXIST);
}

/* ---- readdir ---------------------------------------------------------- */

#define NDIR 1000
#define NADD 50

struct dir_seen {
    uint64_t ino[NDIR];
    int seen[NDIR];
    bool removed[NDIR];
    int added_seen[NADD];
    int nadded;
    int other;
    uint32_t total;
    char last[PROTO_MAX_NAME + 1]; /* the entry the next batch continues after */
    struct fx *f;
};

static void seen_entry(void *arg, const struct proto_dirent *de)
{
    struct dir_seen *s = arg;
    char name[PROTO_MAX_NAME + 1];
    assert_int_equal(proto_str_copy(&de->name, name, sizeof(name)), 0);
    assert_int_equal(de->type, DT_REG);
    int i;
    char tail;
    s->total++;
    memcpy(s->last, name, sizeof(name));
    if (sscanf(name, "n%d%c", &i, &tail) == 1 && i >= 0 && i < NDIR) {
        assert_int_equal(de->ino, s->ino[i]);
        s->seen[i]++;
    } else if (sscanf(name, "new%d%c", &i, &tail) == 1 && i >= 0 && i < NADD) {
        s->added_seen[i]++;
    } else {
        s->other++;
    }
}

static void make_big_dir(struct fx *f, struct dir_seen *s)
{
    mk_dir(f, &root_cred, "big", 0755);
    char name[64];
    for (int i = 0; i < NDIR; i++) {
        snprintf(name, sizeof(name), "big/n%04d", i);
        s->ino[i] = mk_file(f, &root_cred, name, 0644);
    }
}

static void test_readdir_batches(void **state)
{
    struct fx *f = *state;
    struct dir_seen *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    make_big_dir(f, s);
    int batches = read_dir(f, ino_of(f, "big"), 4096, seen_entry, NULL, s);
    assert_true(batches > 3);
    uint32_t total = s->total;
    int other = s->other;
    int missing = 0, twice = 0;
    for (int i = 0; i < NDIR; i++) {
        missing += s->seen[i] == 0;
        twice += s->seen[i] > 1;
    }
    free(s);
    assert_int_equal(missing, 0);
    assert_int_equal(twice, 0);
    assert_int_equal(other, 0);
    assert_int_equal(total, NDIR);
}

/* Between batches: remove the entry the cookie points after, a few other
 * originals (some already read, some not), and add new names. */
static void churn(void *arg, int batch)
{
    struct dir_seen *s = arg;
    char name[PROTO_MAX_NAME + 8];
    int i;
    char tail;
    if (sscanf(s->last, "n%d%c", &i, &tail) == 1 && i >= 0 && i < NDIR && !s->removed[i]) {
        snprintf(name, sizeof(name), "big/%s", s->last);
        assert_int_equal(op_unlink(s->f, &root_cred, name, NULL), 0);
        s->removed[i] = true;
    }
    for (int k = 0; k < 5; k++) {
        i = (batch * 97 + k * 211) % NDIR;
        if (s->removed[i])
            continue;
        snprintf(name, sizeof(name), "big/n%04d", i);
        assert_int_equal(op_unlink(s->f, &root_cred, name, NULL), 0);
        s->removed[i] = true;
    }
    for (int k = 0; k < 5 && s->nadded < NADD; k++) {
        snprintf(name, sizeof(name), "big/new%d", s->nadded++);
        mk_file(s->f, &root_cred, name, 0644);
    }
}

static void test_readdir_stable_under_changes(void **state)
{
    struct fx *f = *state;
    struct dir_seen *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    s->f = f;
    make_big_dir(f, s);
    uint8_t small[4096];
    struct proto_readdir_rep r;
    /* A buffer that cannot hold one maximal entry is refused. */
    assert_int_equal(op_readdir(f, &root_cred, ino_of(f, "big"), 0, 64, small, sizeof(small), &r),
                     -EINVAL);
    int batches = read_dir(f, ino_of(f, "big"), 4096, seen_entry, churn, s);
    int missing = 0, twice = 0, nremoved = 0, added_twice = 0;
    for (int i = 0; i < NDIR; i++) {
        if (s->removed[i]) {
            nremoved++;
            twice += s->seen[i] > 1;
        } else {
            missing += s->seen[i] != 1;
            twice += s->seen[i] > 1;
        }
    }
    for (int i = 0; i < NADD; i++)
        added_twice += s->added_seen[i] > 1;
    int other = s->other;
    free(s);
    assert_true(batches > 3);
    assert_true(nremoved > 0);
    assert_int_equal(missing, 0);
    assert_int_equal(twice, 0);
    assert_int_equal(added_twice, 0);
    assert_int_equal(other, 0);
}

static void test_readdir_errors(void **state)
{
    struct fx *f = *state;
    uint64_t file = mk_file(f, &root_cred, "f", 0644);
    uint64_t d = mk_dir(f, &root_cred, "d", 0711);
    uint8_t buf[4096];
    struct proto_readdir_rep r;
    assert_int_equal(op_readdir(f, &root_cred, file, 0, 4096, buf, sizeof(buf), &r), -ENOTDIR);
    struct proto_readdir_req q;
    memset(&q, 0, sizeof(q));
    q.cred = user(1000, 1000);
    q.ino = d;
    q.max_bytes = 4096;
    assert_int_equal(
        meta_op_readdir(&(struct meta_req){.ctx = &f->ctx, .buf = buf, .buf_len = sizeof(buf)}, &q,
                        &r),
        -EACCES);
    /* An empty directory: no entries, at the end. */
    assert_int_equal(op_readdir(f, &root_cred, d, 0, 4096, buf, sizeof(buf), &r), 0);
    assert_int_equal(r.count, 0);
    assert_int_equal(r.eof, 1);
}

/* ---- xattrs ----------------------------------------------------------- */

/* READDIR plus says which well-known xattrs an entry has not: those a
 * GETXATTR would answer ENODATA for (security.*), never system.*, which is
 * not supported (EOPNOTSUPP). */
static void test_readdir_plus_xattrs_absent(void **state)
{
    struct fx *f = *state;
    uint64_t d = mk_dir(f, &root_cred, "xd", 0755);
    uint64_t plain = mk_file(f, &root_cred, "xd/plain", 0644);
    uint64_t labeled = mk_file(f, &root_cred, "xd/labeled", 0644);
    assert_int_equal(op_setxattr(f, &root_cred, labeled, "security.selinux", "u:o:t:s0", 0), 0);
    uint8_t buf[4096];
    struct proto_readdir_req q = {.cred = root_cred, .ino = d, .max_bytes = sizeof(buf), .plus = 1};
    struct proto_readdir_rep r;
    memset(&r, 0, sizeof(r));
    assert_int_equal(
        meta_op_readdir(&(struct meta_req){.ctx = &f->ctx, .buf = buf, .buf_len = sizeof(buf)}, &q,
                        &r),
        0);
    assert_int_equal(r.count, 2);
    struct proto_dec dec;
    proto_dec_init(&dec, r.entries.p, r.entries.len);
    int sel = proto_xattr_known("security.selinux"), cap = proto_xattr_known("security.capability");
    int acl = proto_xattr_known("system.posix_acl_access");
    assert_true(sel >= 0 && cap >= 0 && acl >= 0);
    for (uint32_t i = 0; i < r.count; i++) {
        struct proto_dirent de;
        struct proto_attr a;
        uint8_t xabsent;
        proto_get_dirent(&dec, &de);
        proto_get_dirplus(&dec, &a, &xabsent);
        assert_int_equal(dec.err, 0);
        assert_int_equal(a.ino, de.ino);
        assert_true(de.ino == plain || de.ino == labeled);
        assert_int_equal(!!(xabsent & (1u << sel)), de.ino == plain);
        assert_true(xabsent & (1u << cap));
        assert_false(xabsent & (1u << acl));
    }
    assert_int_equal(dec.off, dec.len);
}

static void test_xattr(void **state)
{
    struct fx *f = *state;
    uint64_t ino = mk_file(f, &root_cred, "f", 0644);
    char buf[256];
    assert_int_equal(op_getxattr(f, &root_cred, ino, "user.a", buf, sizeof(buf)), -ENODATA);
    assert_int_equal(op_setxattr(f, &root_cred, ino, "user.a", "one", 0), 0);
    assert_int_equal(op_getxattr(f, &root_cred, ino, "user.a", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "one");
    assert_int_equal(op_setxattr(f, &root_cred, ino, "user.a", "two", XATTR_CREATE), -EEXIST);
    assert_int_equal(op_setxattr(f, &root_cred, ino, "user.a", "two", XATTR_REPLACE), 0);
    assert_int_equal(op_getxattr(f, &root_cred, ino, "user.a", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "two");
    assert_int_equal(op_setxattr(f, &root_cred, ino, "user.b", "x", XATTR_REPLACE), -ENODATA);
    assert_int_equal(op_setxattr(f, &root_cred, ino, "user.b", "bee", XATTR_CREATE), 0);
    assert_int_equal(op_setxattr(f, &root_cred, ino, "user.empty", "", 0), 0);
    assert_int_equal(op_getxattr(f, &root_cred, ino, "user.empty", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "");

    char list[1024];
    int n = op_listxattr(f, &root_cred, ino, list, sizeof(list));
    assert_int_equal(n, (int)(sizeof("user.a") + sizeof("user.b") + sizeof("user.empty")));
    assert_true(list_has(list, n, "user.a"));
    assert_true(list_has(list, n, "user.b"));
    assert_true(list_has(list, n, "user.empty"));

    assert_int_equal(op_removexattr(f, &root_cred, ino, "user.a"), 0);
    assert_int_equal(op_removexattr(f, &root_cred, ino, "user.a"), -ENODATA);
    assert_int_equal(op_getxattr(f, &root_cred, ino, "user.a", buf, sizeof(buf)), -ENODATA);
    n = op_listxattr(f, &root_cred, ino, list, sizeof(list));
    assert_false(list_has(list, n, "user.a"));
    assert_true(list_has(list, n, "user.b"));

    /* An xattr belongs to its inode only. */
    uint64_t other = mk_file(f, &root_cred, "g", 0644);
    assert_int_equal(op_getxattr(f, &root_cred, other, "user.b", buf, sizeof(buf)), -ENODATA);
    assert_int_equal(op_listxattr(f, &root_cred, other, list, sizeof(list)), 0);

    /* user.* follows the file's permission bits. */
    struct proto_cred u = user(1000, 1000);
    assert_int_equal(op_getxattr(f, &u, ino, "user.b", buf, sizeof(buf)), 0);
    assert_int_equal(op_setxattr(f, &u, ino, "user.c", "x", 0), -EACCES);
    assert_int_equal(op_removexattr(f, &u, ino, "user.b"), -EACCES);

    /* trusted.* is root's; system.* is not supported. */
    assert_int_equal(op_setxattr(f, &u, ino, "trusted.t", "x", 0), -EPERM);
    assert_int_equal(op_setxattr(f, &root_cred, ino, "trusted.t", "root", 0), 0);
    assert_int_equal(op_getxattr(f, &root_cred, ino, "trusted.t", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "root");
    n = op_listxattr(f, &root_cred, ino, list, sizeof(list));
    assert_true(list_has(list, n, "trusted.t"));
    n = op_listxattr(f, &u, ino, list, sizeof(list));
    assert_true(n >= 0);
    assert_false(list_has(list, n, "trusted.t"));
    assert_true(list_has(list, n, "user.b"));
    assert_int_equal(op_setxattr(f, &root_cred, ino, "system.posix_acl_access", "x", 0),
                     -EOPNOTSUPP);
    assert_int_equal(op_setxattr(f, &u, ino, "system.posix_acl_access", "x", 0), -EOPNOTSUPP);

    /* xattrs go with the inode. */
    assert_int_equal(op_unlink(f, &root_cred, "f", NULL), 0);
    uint64_t again = mk_file(f, &root_cred, "f", 0644);
    assert_int_equal(op_listxattr(f, &root_cred, again, list, sizeof(list)), 0);
}

/* ---- layouts ---------------------------------------------------------- */

static void test_stripe_inherit(void **state)
{
    struct fx *f = *state;
    uint64_t sd = mk_dir(f, &root_cred, "sd", 0755);
    assert_int_equal(op_setstripe(f, &root_cred, sd, 2, 4 * MIB, -1, NULL), 0);
    struct proto_getstripe_rep g;
    assert_int_equal(op_getstripe(f, sd, &g), 0);
    assert_int_equal(g.is_dir, 1);
    assert_int_equal(g.dir_count, 2);
    assert_int_equal(g.dir_size, 4 * MIB);

    for (int i = 0; i < 8; i++) {
        char name[32];
        snprintf(name, sizeof(name), "sd/f%d", i);
        struct proto_open_rep o;
        assert_int_equal(op_open(f, &root_cred, name, O_CREAT | O_WRONLY, 0644, &o), 0);
        check_layout(&o.layout, 2, 4 * MIB, 0);
        assert_int_equal(op_getstripe(f, o.attr.ino, &g), 0);
        assert_int_equal(g.is_dir, 0);
        check_layout(&g.layout, 2, 4 * MIB, 0);
        assert_memory_equal(&g.layout.comp[0], &o.layout.comp[0], sizeof(g.layout.comp[0]));
    }

    /* A new subdirectory inherits the default, and passes it on. */
    uint64_t sub = mk_dir(f, &root_cred, "sd/sub", 0755);
    assert_int_equal(op_getstripe(f, sub, &g), 0);
    assert_int_equal(g.is_dir, 1);
    assert_int_equal(g.dir_count, 2);
    assert_int_equal(g.dir_size, 4 * MIB);
    struct proto_open_rep o;
    assert_int_equal(op_open(f, &root_cred, "sd/sub/x", O_CREAT | O_WRONLY, 0644, &o), 0);
    check_layout(&o.layout, 2, 4 * MIB, 0);

    /* Outside, the file system default (1 x 1 MiB). */
    assert_int_equal(op_open(f, &root_cred, "plain", O_CREAT | O_WRONLY, 0644, &o), 0);
    check_layout(&o.layout, 1, MIB, 0);

    /* Only the owner (or root) sets a directory's default. */
    struct proto_cred u = user(1000, 1000);
    assert_int_equal(op_setstripe(f, &u, sd, 1, MIB, -1, NULL), -EPERM);
}

static struct meta_fsck_report fsck(struct fx *f, bool repair, char *text, size_t cap);
static int op_setsize_m(struct fx *f, uint64_t ino, uint64_t size, int64_t mtime);

/* A composite template: comps (end, count, size) of n components, each
 * pending. */
static void tmpl_of(struct layout *t, int n, const uint64_t (*comps)[3])
{
    memset(t, 0, sizeof(*t));
    t->ncomp = (uint16_t)n;
    uint64_t start = 0;
    for (int i = 0; i < n; i++) {
        struct layout_comp *c = &t->comp[i];
        c->start = start;
        c->end = comps[i][0];
        c->stripe_count = (uint16_t)comps[i][1];
        c->stripe_size = (uint32_t)comps[i][2];
        c->type = LAYOUT_TYPE_OST | LAYOUT_F_PENDING;
        c->groups[0] = LAYOUT_ANY_OST;
        start = c->end;
    }
}

static int op_setstripe_comps(struct fx *f, const struct proto_cred *c, uint64_t ino,
                              const struct layout *t)
{
    static struct proto_setstripe_req q;
    static struct proto_setstripe_rep r;
    memset(&q, 0, sizeof(q));
    q.cred = *c;
    q.ino = ino;
    q.offset = -1;
    layout_copy(&q.comps, t);
    return meta_op_setstripe(RQ(&f->ctx), &q, &r);
}

static int op_intent(struct fx *f, const struct proto_cred *c, uint64_t ino, uint64_t end,
                     struct layout *out)
{
    static struct proto_layout_intent_rep r;
    struct proto_layout_intent_req q = {.cred = *c, .ino = ino, .end = end};
    memset(&r, 0, sizeof(r));
    int rc = meta_op_layout_intent(RQ(&f->ctx), &q, &r);
    if (rc == 0 && out)
        layout_copy(out, &r.layout);
    return rc;
}

/* PFL: a directory's composite default reaches its files (the first
 * component instantiated) and subdirectories; LAYOUT_INTENT instantiates
 * what a write reaches, once. */
static void test_stripe_composite(void **state)
{
    struct fx *f = *state;
    static struct layout t, l;
    static struct proto_getstripe_rep g;
    uint64_t d = mk_dir(f, &root_cred, "pfl", 0777);
    const uint64_t comps[3][3] = {
        {MIB, 1, MIB}, {8 * MIB, 2, 0}, {LAYOUT_END_EOF, LAYOUT_COUNT_ALL, 4 * MIB}};
    tmpl_of(&t, 3, comps);
    assert_int_equal(op_setstripe_comps(f, &root_cred, d, &t), 0);
    assert_int_equal(op_getstripe(f, d, &g), 0);
    assert_int_equal(g.is_dir, 1);
    assert_int_equal(g.layout.ncomp, 3);
    assert_true(layout_comp_pending(&g.layout.comp[2]));
    assert_int_equal(g.layout.comp[2].stripe_count, LAYOUT_COUNT_ALL);

    struct proto_open_rep o;
    assert_int_equal(op_open(f, &root_cred, "pfl/a", O_CREAT | O_WRONLY, 0644, &o), 0);
    uint64_t a = o.attr.ino;
    assert_int_equal(o.layout.ncomp, 3);
    assert_false(layout_comp_pending(&o.layout.comp[0]));
    assert_int_equal(o.layout.comp[0].stripe_count, 1);
    assert_true(layout_comp_pending(&o.layout.comp[1]));
    assert_true(layout_comp_pending(&o.layout.comp[2]));
    assert_int_equal(o.layout.comp[1].stripe_size, 0); /* the default, when instantiated */

    /* A write reaching 2 MiB: the second component, not the third. */
    /* The writer's open checked its right (a 0444 file is written through
     * the descriptor that created it): the intent trusts it, as SETSIZE. */
    struct proto_cred u = user(1000, 1000);
    assert_int_equal(op_intent(f, &u, a, 2 * MIB, &l), 0);
    assert_false(layout_comp_pending(&l.comp[1]));
    assert_int_equal(l.comp[1].stripe_count, 2);
    assert_int_equal(l.comp[1].stripe_size, MIB);
    assert_true(layout_comp_pending(&l.comp[2]));
    assert_int_equal(layout_validate(&l), 0);
    static struct layout again;
    assert_int_equal(op_intent(f, &root_cred, a, 2 * MIB, &again), 0);
    assert_memory_equal(&again.comp[1], &l.comp[1], sizeof(l.comp[1]));
    assert_int_equal(op_intent(f, &root_cred, a, UINT64_MAX, &l), 0);
    assert_int_equal(l.comp[2].stripe_count, NOST);
    assert_int_equal(l.comp[2].stripe_size, 4 * MIB);
    assert_int_equal(op_getstripe(f, a, &g), 0);
    assert_memory_equal(&g.layout.comp[2], &l.comp[2], sizeof(l.comp[2]));

    /* Subdirectories take the template along. */
    uint64_t sub = mk_dir(f, &root_cred, "pfl/sub", 0755);
    assert_int_equal(op_getstripe(f, sub, &g), 0);
    assert_int_equal(g.layout.ncomp, 3);
    assert_int_equal(op_open(f, &root_cred, "pfl/sub/b", O_CREAT | O_WRONLY, 0644, &o), 0);
    assert_int_equal(o.layout.ncomp, 3);

    /* On an empty file: the file's own composite layout; a file with
     * data keeps its layout. */
    uint64_t e = mk_file(f, &root_cred, "e", 0644);
    const uint64_t two[2][3] = {{4 * MIB, 2, MIB}, {LAYOUT_END_EOF, 1, MIB}};
    tmpl_of(&t, 2, two);
    assert_int_equal(op_setstripe_comps(f, &root_cred, e, &t), 0);
    assert_int_equal(op_getstripe(f, e, &g), 0);
    assert_int_equal(g.layout.ncomp, 2);
    assert_false(layout_comp_pending(&g.layout.comp[0]));
    assert_int_equal(g.layout.comp[0].stripe_count, 2);
    assert_int_equal(op_setsize_m(f, e, 10, 0), 0);
    assert_int_equal(op_setstripe_comps(f, &root_cred, e, &t), -EEXIST);

    /* Templates that do not hold together. */
    tmpl_of(&t, 2, two);
    t.comp[0].end = 4 * MIB + 4096;
    t.comp[1].start = t.comp[0].end;
    assert_int_equal(op_setstripe_comps(f, &root_cred, d, &t), -EINVAL);
    tmpl_of(&t, 2, two);
    t.comp[1].end = 8 * MIB; /* not to EOF */
    assert_int_equal(op_setstripe_comps(f, &root_cred, d, &t), -EINVAL);
    tmpl_of(&t, 2, two);
    t.comp[0].type &= (uint16_t)~LAYOUT_F_PENDING; /* OSTs are the MDT's to choose */
    assert_int_equal(op_setstripe_comps(f, &root_cred, d, &t), -EINVAL);

    /* A plain setstripe drops the template. */
    assert_int_equal(op_setstripe(f, &root_cred, d, 2, MIB, -1, NULL), 0);
    assert_int_equal(op_getstripe(f, d, &g), 0);
    assert_int_equal(g.layout.ncomp, 0);
    char text[4096];
    struct meta_fsck_report fr = fsck(f, false, text, sizeof(text));
    assert_int_equal(fr.dangling + fr.orphans + fr.bad_nlink + fr.corrupt, 0);
}

/* The OPEN that creates a file for writing marks it as one whose objects
 * may exist, as the writer's first SETSIZE did: its reply says so, a
 * rename over it (or an unlink) destroys its objects, and its layout is
 * fixed. Opening an existing file for writing marks nothing. */
static void test_create_for_writing_marks(void **state)
{
    struct fx *f = *state;
    struct proto_open_rep o;
    struct proto_rename_rep r;
    assert_int_equal(op_open(f, &root_cred, "w", O_CREAT | O_WRONLY, 0644, &o), 0);
    assert_int_equal(o.created, 1);
    assert_int_equal(o.marked, 1);
    uint64_t w = o.attr.ino;
    assert_int_equal(op_setstripe(f, &root_cred, w, 1, MIB, -1, NULL), -EEXIST);
    assert_int_equal(op_open(f, &root_cred, "w", O_CREAT | O_RDWR, 0644, &o), 0);
    assert_int_equal(o.created, 0);
    assert_int_equal(o.marked, 0);
    uint64_t e = mk_file(f, &root_cred, "e", 0644);
    assert_int_equal(op_open(f, &root_cred, "e", O_WRONLY, 0, &o), 0);
    assert_int_equal(o.marked, 0);
    assert_int_equal(op_setstripe(f, &root_cred, e, 1, MIB, -1, NULL), 0);
    uint64_t s = mk_file(f, &root_cred, "s", 0644);
    assert_int_equal(op_rename(f, &root_cred, "s", "w", 0, &r), 0);
    assert_int_equal(r.replaced, w);
    assert_int_equal(r.destroy, 1);
    assert_int_equal(ino_of(f, "w"), s);
}

/* One DESTROYED forgets the pending objects of many files; a list of a
 * wrong length is refused. */
static void test_destroyed_many(void **state)
{
    struct fx *f = *state;
    struct proto_open_rep o;
    struct proto_unlink_rep u;
    enum { N = 5 };
    uint64_t ino[N];
    char name[16];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "g%d", i);
        assert_int_equal(op_open(f, &root_cred, name, O_CREAT | O_WRONLY, 0644, &o), 0);
        ino[i] = o.attr.ino;
        assert_int_equal(op_unlink(f, &root_cred, name, &u), 0);
        assert_int_equal(u.destroy, 1);
    }
    char text[4096];
    assert_int_equal(fsck(f, false, text, sizeof(text)).pending, N);
    uint8_t more[8 * PROTO_MAX_DESTROYED];
    memset(more, 0, sizeof(more));
    struct proto_destroyed_req q = {.cred = root_cred, .ino = ino[0], .more = {more, 7}};
    struct proto_destroyed_rep r;
    assert_int_equal(meta_op_destroyed(RQ(&f->ctx), &q, &r), -EINVAL);
    q.more.len = 8 * PROTO_MAX_DESTROYED; /* one too many with ino */
    assert_int_equal(meta_op_destroyed(RQ(&f->ctx), &q, &r), -EINVAL);
    assert_int_equal(fsck(f, false, text, sizeof(text)).pending, N);
    /* The first alone, then the other four, and one of them again. */
    q.more.len = 0;
    assert_int_equal(meta_op_destroyed(RQ(&f->ctx), &q, &r), 0);
    assert_int_equal(fsck(f, false, text, sizeof(text)).pending, N - 1);
    q.ino = ino[1];
    for (int i = 2; i < N; i++)
        proto_put_le64(more + 8 * (i - 2), ino[i]);
    proto_put_le64(more + 8 * (N - 2), ino[3]);
    q.more.len = 8 * (N - 1);
    assert_int_equal(meta_op_destroyed(RQ(&f->ctx), &q, &r), 0);
    struct meta_fsck_report fr = fsck(f, false, text, sizeof(text));
    assert_int_equal(fr.pending + fr.dangling + fr.orphans + fr.bad_nlink + fr.corrupt, 0);
}

/* ---- Data-on-MDT ---- */

static int dom_total_txn(struct meta_txn *t, void *arg)
{
    return meta_dom_total(t, arg);
}

static int op_dom_write(struct fx *f, uint64_t ino, uint64_t off, const uint8_t *data, uint32_t len,
                        bool damage, struct proto_attr *attr)
{
    static uint8_t crcs[4 * 64];
    static struct proto_dom_write_rep r;
    proto_csum_fill(off, data, len, crcs);
    if (damage)
        crcs[0] ^= 1;
    struct proto_dom_write_req q = {.cred = root_cred, .ino = ino, .offset = off};
    q.crcs = (struct proto_blob){crcs, 4 * proto_csum_chunks(off, len)};
    struct meta_req rq = {.ctx = &f->ctx, .bulk = data, .bulk_len = len};
    memset(&r, 0, sizeof(r));
    int rc = meta_op_dom_write(&rq, &q, &r);
    if (rc == 0 && attr)
        *attr = r.attr;
    return rc;
}

/* Read [off, off + len) into out; checks the reply's CRCs as a client. */
static int op_dom_read(struct fx *f, uint64_t ino, uint64_t off, uint32_t len, uint8_t *out,
                       uint32_t *got)
{
    static uint8_t buf[META_DOM_BUF];
    static struct proto_dom_read_rep r;
    struct proto_dom_read_req q = {.cred = root_cred, .ino = ino, .offset = off, .len = len};
    struct meta_req rq = {.ctx = &f->ctx, .buf = buf, .buf_len = sizeof(buf)};
    memset(&r, 0, sizeof(r));
    int rc = meta_op_dom_read(&rq, &q, &r);
    if (rc)
        return rc;
    *got = rq.out_bulk_len;
    memcpy(out, rq.out_bulk, rq.out_bulk_len);
    assert_int_equal(proto_csum_check(off, out, *got, &r.crcs, NULL, NULL), 0);
    return 0;
}

static uint64_t dom_total(struct fx *f)
{
    uint64_t total = 0;
    assert_int_equal(meta_store_read(f->s, NULL, dom_total_txn, &total), 0);
    return total;
}

/* A file whose first 64 KiB live on its MDT: written and read there with
 * checksums, the size and mtime moving with the write, truncated by
 * SETATTR and O_TRUNC, gone with the file. */
static void test_dom(void **state)
{
    struct fx *f = *state;
    static struct layout t;
    static uint8_t data[70000], got[70000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7 + 3);
    uint64_t d = mk_dir(f, &root_cred, "dom", 0777);
    const uint64_t comps[2][3] = {{64 << 10, 0, 0}, {LAYOUT_END_EOF, 1, MIB}};
    tmpl_of(&t, 2, comps);
    t.comp[0].type = LAYOUT_TYPE_MDT | LAYOUT_F_PENDING;
    assert_int_equal(op_setstripe_comps(f, &root_cred, d, &t), 0);
    struct proto_open_rep o;
    assert_int_equal(op_open(f, &root_cred, "dom/s", O_CREAT | O_WRONLY, 0644, &o), 0);
    uint64_t s = o.attr.ino;
    assert_int_equal(layout_dom_size(&o.layout), 64 << 10);
    assert_int_equal(o.layout.comp[0].groups[0], 0); /* this MDT */
    assert_int_equal(o.layout.comp[0].stripe_size, 64 << 10);
    assert_true(layout_comp_pending(&o.layout.comp[1]));

    struct proto_attr a;
    assert_int_equal(op_dom_write(f, s, 1000, data, 50000, false, &a), 0);
    assert_int_equal(a.size, 51000);
    assert_int_equal(attr_of(f, s).size, 51000);
    uint32_t n;
    assert_int_equal(op_dom_read(f, s, 0, 65536, got, &n), 0);
    assert_int_equal(n, 65536);
    for (uint32_t i = 0; i < 1000; i++)
        assert_int_equal(got[i], 0);
    assert_memory_equal(got + 1000, data, 50000);
    assert_int_equal(got[51000], 0);
    assert_int_equal(dom_total(f), 51000);
    /* Past the component: EFBIG; read short at its end. */
    assert_int_equal(op_dom_write(f, s, 60000, data, 10000, false, NULL), -EFBIG);
    assert_int_equal(op_dom_read(f, s, 60000, 10000, got, &n), 0);
    assert_int_equal(n, 65536 - 60000);
    /* Damaged on its way: EIO, nothing written. */
    assert_int_equal(op_dom_write(f, s, 0, data, 100, true, NULL), -EIO);
    assert_int_equal(op_dom_read(f, s, 0, 100, got, &n), 0);
    assert_int_equal(got[0], 0);
    /* A file without the component, and one of another MDT's shape. */
    uint64_t plain = mk_file(f, &root_cred, "plain", 0644);
    /* (its layout is not the sender's: the sender fetches it anew) */
    assert_int_equal(op_dom_write(f, plain, 0, data, 10, false, NULL), -ESTALE);
    /* Truncates: SETATTR, then O_TRUNC; then the file goes. */
    assert_int_equal(op_setattr(f, &root_cred, s, SETATTR_SIZE, 0, 0, 0, 20000, NULL), 0);
    assert_int_equal(dom_total(f), 20000);
    assert_int_equal(op_dom_read(f, s, 19990, 20, got, &n), 0);
    assert_memory_equal(got, data + 18990, 10);
    assert_int_equal(got[10], 0);
    assert_int_equal(op_open(f, &root_cred, "dom/s", O_WRONLY | O_TRUNC, 0, &o), 0);
    assert_int_equal(dom_total(f), 0);
    assert_int_equal(op_dom_write(f, s, 0, data, 30000, false, NULL), 0);
    assert_int_equal(dom_total(f), 30000);
    /* Removed while a client may keep it open: its bytes stay, readable
     * and writable by number, until that client's DESTROYED. */
    struct proto_unlink_rep ur;
    assert_int_equal(op_unlink(f, &root_cred, "dom/s", &ur), 0);
    assert_int_equal(ur.destroy, 1);
    assert_int_equal(dom_total(f), 30000);
    assert_int_equal(op_dom_read(f, s, 0, 100, got, &n), 0);
    assert_memory_equal(got, data, 100);
    assert_int_equal(op_dom_write(f, s, 100, data, 10, false, NULL), 0);
    struct proto_destroyed_req dq = {.cred = root_cred, .ino = s};
    struct proto_destroyed_rep dr;
    assert_int_equal(meta_op_destroyed(RQ(&f->ctx), &dq, &dr), 0);
    assert_int_equal(dom_total(f), 0);
    char text[4096];
    struct meta_fsck_report fr = fsck(f, false, text, sizeof(text));
    assert_int_equal(fr.dangling + fr.orphans + fr.bad_nlink + fr.corrupt, 0);
}

/* Scratch an OPEN asks for when it sends bytes (meta_req.scratch). */
static uint8_t open_scratch[(1u << 20) + 4096];
static uint32_t scratch_asks;

static void *test_scratch(void *arg, uint32_t len)
{
    (void)arg;
    scratch_asks++;
    return len <= sizeof(open_scratch) ? open_scratch : NULL;
}

/* What an operation that ended with rc sent as rq's bulk, in *bytes (n
 * of them), checked against the reply's CRCs as a client does (none
 * described when none sent); rc. */
static int sent_bytes(int rc, const struct meta_req *rq, const struct proto_blob *crcs,
                      const uint8_t **bytes, uint32_t *n)
{
    *bytes = rq->out_bulk;
    *n = rq->out_bulk_len;
    if (rc == 0 && *n)
        assert_int_equal(proto_csum_check(0, *bytes, *n, crcs, NULL, NULL), 0);
    else
        assert_int_equal(crcs->len, 0);
    return rc;
}

/* An OPEN of path taking up to dom_len bytes: the bytes sent in *bytes
 * (n of them), checked against the reply's CRCs as a client does. */
static int op_open_bytes(struct fx *f, const char *path, uint32_t flags, uint32_t dom_len,
                         bool scratch, struct proto_open_rep *rep, const uint8_t **bytes,
                         uint32_t *n)
{
    struct proto_open_req q = {.cred = root_cred,
                               .parent = ROOT,
                               .path = proto_str_c(path),
                               .flags = flags,
                               .mode = 0644,
                               .stripe_offset = -1,
                               .dom_len = dom_len};
    struct meta_req rq = {.ctx = &f->ctx, .scratch = scratch ? test_scratch : NULL};
    memset(rep, 0, sizeof(*rep));
    return sent_bytes(meta_op_open(&rq, &q, rep), &rq, &rep->dom_crcs, bytes, n);
}

/* A directory whose default keeps the first 64 KiB of a file on its MDT
 * (then one OST), and file name in it written with len bytes of data. */
static uint64_t dom_file_of(struct fx *f, const char *dir, const char *name, const uint8_t *data,
                            uint32_t len)
{
    static struct layout t;
    char path[128];
    uint64_t d = mk_dir(f, &root_cred, dir, 0777);
    const uint64_t comps[2][3] = {{64 << 10, 0, 0}, {LAYOUT_END_EOF, 1, MIB}};
    tmpl_of(&t, 2, comps);
    t.comp[0].type = LAYOUT_TYPE_MDT | LAYOUT_F_PENDING;
    assert_int_equal(op_setstripe_comps(f, &root_cred, d, &t), 0);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct proto_open_rep o;
    assert_int_equal(op_open(f, &root_cred, path, O_CREAT | O_WRONLY, 0644, &o), 0);
    assert_int_equal(layout_dom_size(&o.layout), 64 << 10);
    if (len)
        assert_int_equal(op_dom_write(f, o.attr.ino, 0, data, len, false, NULL), 0);
    return o.attr.ino;
}

/* An open that reads brings a Data-on-MDT file's bytes: those below its
 * size, within the component, at most what was asked; none for a writer
 * only, a truncating open, a file without the component or a directory,
 * and no scratch is asked for then. */
static void test_dom_open(void **state)
{
    struct fx *f = *state;
    static uint8_t data[70000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 13 + 5);
    uint64_t s = dom_file_of(f, "dom", "s", data, 50000);
    struct proto_open_rep r;
    const uint8_t *b;
    uint32_t n;
    assert_int_equal(op_open_bytes(f, "dom/s", O_RDONLY, 1u << 20, true, &r, &b, &n), 0);
    assert_int_equal(r.attr.ino, s);
    assert_int_equal(n, 50000); /* the size, not the component's 64 KiB */
    assert_memory_equal(b, data, 50000);
    assert_int_equal(r.dom_crcs.len, 4 * 2);
    /* At most what was asked. */
    assert_int_equal(op_open_bytes(f, "dom/s", O_RDONLY, 1000, true, &r, &b, &n), 0);
    assert_int_equal(n, 1000);
    assert_memory_equal(b, data, 1000);
    assert_int_equal(op_open_bytes(f, "dom/s", O_RDWR, 1u << 20, true, &r, &b, &n), 0);
    assert_int_equal(n, 50000);
    /* O_CREAT of the file there is, for reading: its bytes too. */
    assert_int_equal(op_open_bytes(f, "dom/s", O_CREAT | O_RDWR, 1u << 20, true, &r, &b, &n), 0);
    assert_int_equal(r.created, 0);
    assert_int_equal(n, 50000);
    /* None: not asked for, a writer only, no scratch to give. */
    uint32_t asks = scratch_asks;
    assert_int_equal(op_open_bytes(f, "dom/s", O_RDONLY, 0, true, &r, &b, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(op_open_bytes(f, "dom/s", O_WRONLY, 1u << 20, true, &r, &b, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(scratch_asks, asks);
    assert_int_equal(op_open_bytes(f, "dom/s", O_RDONLY, 1u << 20, false, &r, &b, &n), 0);
    assert_int_equal(n, 0);
    /* Within the component: a file that goes on past it on an OST. */
    assert_int_equal(op_dom_write(f, s, 0, data, 64 << 10, false, NULL), 0);
    assert_int_equal(op_setsize(f, s, 200000, NULL), 0);
    assert_int_equal(op_open_bytes(f, "dom/s", O_RDONLY, 1u << 20, true, &r, &b, &n), 0);
    assert_int_equal(r.attr.size, 200000);
    assert_int_equal(n, 64 << 10);
    assert_memory_equal(b, data, 64 << 10);
    /* A truncating open leaves nothing to send. */
    assert_int_equal(op_open_bytes(f, "dom/s", O_RDWR | O_TRUNC, 1u << 20, true, &r, &b, &n), 0);
    assert_int_equal(r.attr.size, 0);
    assert_int_equal(n, 0);
    /* A hole below the size reads as zeros. */
    assert_int_equal(op_setsize(f, s, 3000, NULL), 0);
    assert_int_equal(op_open_bytes(f, "dom/s", O_RDONLY, 1u << 20, true, &r, &b, &n), 0);
    assert_int_equal(n, 3000);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(b[i], 0);
    /* No component on the MDT, a directory, a new file: nothing, no scratch. */
    uint64_t plain = mk_file(f, &root_cred, "plain", 0644);
    assert_int_equal(op_setsize(f, plain, 1000, NULL), 0);
    asks = scratch_asks;
    assert_int_equal(op_open_bytes(f, "plain", O_RDONLY, 1u << 20, true, &r, &b, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(op_open_bytes(f, "dom", O_RDONLY, 1u << 20, true, &r, &b, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(
        op_open_bytes(f, "dom/new", O_CREAT | O_EXCL | O_RDWR, 1u << 20, true, &r, &b, &n), 0);
    assert_int_equal(r.created, 1);
    assert_int_equal(n, 0);
    assert_int_equal(scratch_asks, asks);
}

/* A LOOKUP of path taking up to dom_len bytes, as op_open_bytes. */
static int op_lookup_bytes(struct fx *f, const char *path, bool follow, uint32_t dom_len,
                           struct proto_lookup_rep *rep, const uint8_t **bytes, uint32_t *n)
{
    struct proto_lookup_req q = {.cred = root_cred,
                                 .parent = ROOT,
                                 .path = proto_str_c(path),
                                 .follow = follow,
                                 .dom_len = dom_len};
    struct meta_req rq = {.ctx = &f->ctx, .scratch = test_scratch};
    memset(rep, 0, sizeof(*rep));
    return sent_bytes(meta_op_lookup(&rq, &q, rep), &rq, &rep->dom_crcs, bytes, n);
}

/* A lookup that asks for them brings a Data-on-MDT file's first bytes as
 * an open does (below its size, within the component, at most what was
 * asked), also through a symlink it follows; none when not asked, for a
 * file without the component, a directory or a missing name. */
static void test_dom_lookup(void **state)
{
    struct fx *f = *state;
    static uint8_t data[70000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7 + 3);
    uint64_t s = dom_file_of(f, "dom", "s", data, 50000);
    struct proto_lookup_rep r;
    const uint8_t *b;
    uint32_t n;
    assert_int_equal(op_lookup_bytes(f, "dom/s", false, 1u << 20, &r, &b, &n), 0);
    assert_int_equal(r.attr.ino, s);
    assert_int_equal(layout_dom_size(&r.layout), 64 << 10);
    assert_int_equal(n, 50000);
    assert_memory_equal(b, data, 50000);
    assert_int_equal(op_lookup_bytes(f, "dom/s", false, 4096, &r, &b, &n), 0);
    assert_int_equal(n, 4096);
    assert_memory_equal(b, data, 4096);
    assert_int_equal(op_symlink(f, &root_cred, "dom/ln", "s", NULL), 0);
    assert_int_equal(op_lookup_bytes(f, "dom/ln", true, 1u << 20, &r, &b, &n), 0);
    assert_int_equal(r.attr.ino, s);
    assert_int_equal(n, 50000);
    /* Past the component: its bytes only. */
    assert_int_equal(op_dom_write(f, s, 0, data, 64 << 10, false, NULL), 0);
    assert_int_equal(op_setsize(f, s, 100000, NULL), 0);
    assert_int_equal(op_lookup_bytes(f, "dom/s", false, 1u << 20, &r, &b, &n), 0);
    assert_int_equal(n, 64 << 10);
    assert_memory_equal(b, data, 64 << 10);
    uint32_t asks = scratch_asks;
    assert_int_equal(op_lookup_bytes(f, "dom/s", false, 0, &r, &b, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(op_lookup_bytes(f, "dom/ln", false, 1u << 20, &r, &b, &n), 0);
    assert_int_equal(n, 0); /* the symlink itself */
    uint64_t plain = mk_file(f, &root_cred, "plain", 0644);
    assert_int_equal(op_setsize(f, plain, 1000, NULL), 0);
    assert_int_equal(op_lookup_bytes(f, "plain", false, 1u << 20, &r, &b, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(op_lookup_bytes(f, "dom", false, 1u << 20, &r, &b, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(scratch_asks, asks);
    assert_int_equal(op_lookup_bytes(f, "dom/none", false, 1u << 20, &r, &b, &n), -ENOENT);
}

/* The same opens through the MDT's dispatcher and a real connection: the
 * reply's bulk holds the bytes; an OPEN that is a change (O_CREAT, with a
 * slot) sent again is answered from the reply cache, without them and
 * without CRCs saying there are any; STATFS says what the records hold. */
static void test_dom_open_served(void **state)
{
    struct fx *f = *state;
    static uint8_t data[50000], got[1u << 20];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 31 + 1);
    uint64_t s = dom_file_of(f, "dom", "s", data, sizeof(data));
    /* The service gets the store and a context of its own. */
    meta_ctx_destroy(&f->ctx);
    f->ctx_live = false;
    struct mdt_service *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    m->store = f->s;
    assert_int_equal(meta_ctx_init(&m->ctx, f->s, 1, MIB, 1), 0);
    assert_int_equal(lease_tab_create(10000, &m->leases), 0);
    static const struct auth_key key = {{9, 8, 7, 6, 5, 4, 3, 2}};
    struct net_server_opts so = {.host = "127.0.0.1", .port = 0, .key = &key, .ctx = m};
    meta_dispatch_install(&so);
    assert_int_equal(net_server_start(&so, &m->srv), 0);
    struct net_conn *c;
    assert_int_equal(net_connect("127.0.0.1", net_server_port(m->srv), &key, 77, "test", 10000, &c),
                     0);

    static struct proto_open_rep r;
    struct proto_open_req q = {.cred = root_cred,
                               .parent = ROOT,
                               .path = proto_str_c("dom/s"),
                               .flags = O_RDONLY,
                               .stripe_offset = -1,
                               .dom_len = sizeof(got)};
    uint32_t n = 0;
    bool tr = false;
    assert_int_equal(net_call_open(c, &q, &r, NULL, 0, got, sizeof(got), &n, &tr), 0);
    assert_int_equal(r.attr.ino, s);
    assert_int_equal(n, sizeof(data));
    assert_memory_equal(got, data, sizeof(data));
    assert_int_equal(proto_csum_check(0, got, n, &r.dom_crcs, NULL, NULL), 0);

    /* A change with a slot: the first answer brings the bytes... */
    q.flags = O_CREAT | O_RDWR;
    c->seq = net_next_seq();
    uint64_t seq = c->seq;
    c->tag = 9;
    n = 0;
    assert_int_equal(net_call_open(c, &q, &r, NULL, 0, got, sizeof(got), &n, &tr), 0);
    assert_int_equal(r.created, 0);
    assert_int_equal(n, sizeof(data));
    assert_int_equal(proto_csum_check(0, got, n, &r.dom_crcs, NULL, NULL), 0);
    /* ...the same sent again (its connection broke) gets the reply the
     * cache kept: the open's, with no bytes and no CRCs. */
    c->seq = seq;
    c->tag = 9;
    c->resend = true;
    n = 12345;
    memset(&r, 0, sizeof(r));
    assert_int_equal(net_call_open(c, &q, &r, NULL, 0, got, sizeof(got), &n, &tr), 0);
    assert_int_equal(r.attr.ino, s);
    assert_int_equal(r.attr.size, sizeof(data));
    assert_int_equal(n, 0);
    assert_int_equal(r.dom_crcs.len, 0);

    /* STATFS: the bytes the records hold, and the limit. */
    static struct proto_statfs_rep st;
    struct proto_statfs_req sq;
    assert_int_equal(net_call_statfs(c, &sq, &st, NULL, 0, NULL, 0, NULL, &tr), 0);
    assert_int_equal(st.dom_bytes, sizeof(data));
    assert_int_equal(st.dom_max, META_DOM_MAX_DEFAULT);

    net_close(c);
    lease_tab_stop(m->leases);
    net_server_stop(m->srv);
    lease_tab_destroy(m->leases);
    meta_ctx_destroy(&m->ctx);
    free(m);
}

/* dom_max bounds what the records hold: a write past it answers ENOSPC,
 * rewrites and shrinking still work; with 0 Data-on-MDT is off: new files
 * in a directory whose default has an mdt component keep all their data
 * on OSTs, the next component from 0, and nothing grows. */
static void test_dom_max(void **state)
{
    struct fx *f = *state;
    static uint8_t data[65536];
    memset(data, 0x5a, sizeof(data));
    uint64_t a = dom_file_of(f, "dom", "a", data, 40000);
    struct proto_open_rep o;
    assert_int_equal(op_open(f, &root_cred, "dom/b", O_CREAT | O_WRONLY, 0644, &o), 0);
    uint64_t b = o.attr.ino;
    f->ctx.dom_max = 60000;
    assert_int_equal(op_dom_write(f, b, 0, data, 20000, false, NULL), 0); /* 60000: full */
    assert_int_equal(op_dom_write(f, b, 20000, data, 1, false, NULL), -ENOSPC);
    assert_int_equal(op_dom_write(f, a, 40000, data, 100, false, NULL), -ENOSPC);
    assert_int_equal(dom_total(f), 60000);
    assert_int_equal(attr_of(f, b).size, 20000);
    /* Rewrites need no room; a truncate makes some. */
    assert_int_equal(op_dom_write(f, a, 0, data, 40000, false, NULL), 0);
    assert_int_equal(op_setattr(f, &root_cred, a, SETATTR_SIZE, 0, 0, 0, 10000, NULL), 0);
    assert_int_equal(op_dom_write(f, b, 20000, data, 30000, false, NULL), 0);
    assert_int_equal(dom_total(f), 60000);
    /* Off: nothing grows, new files take the directory's default without
     * its mdt component, and a file's own setstripe likewise. */
    f->ctx.dom_max = 0;
    assert_int_equal(op_dom_write(f, a, 10000, data, 1, false, NULL), -ENOSPC);
    assert_int_equal(op_open(f, &root_cred, "dom/c", O_CREAT | O_WRONLY, 0644, &o), 0);
    assert_int_equal(layout_dom_size(&o.layout), 0);
    assert_int_equal(o.layout.ncomp, 1);
    assert_int_equal(o.layout.comp[0].start, 0);
    assert_int_equal(o.layout.comp[0].end, LAYOUT_END_EOF);
    assert_int_equal(o.layout.comp[0].type & LAYOUT_TYPE_MASK, LAYOUT_TYPE_OST);
    assert_false(layout_comp_pending(&o.layout.comp[0]));
    assert_int_equal(op_dom_write(f, o.attr.ino, 0, data, 10, false, NULL), -ESTALE);
    /* The directory keeps its default: back on, files get the component. */
    f->ctx.dom_max = META_DOM_MAX_DEFAULT;
    assert_int_equal(op_open(f, &root_cred, "dom/d", O_CREAT | O_WRONLY, 0644, &o), 0);
    assert_int_equal(layout_dom_size(&o.layout), 64 << 10);
    assert_int_equal(op_dom_write(f, o.attr.ino, 0, data, 10, false, NULL), 0);
}

/* The store's data file has blocks allocated ahead of what LMDB wrote,
 * while its size is what LMDB made it: a commit that writes new pages at
 * the end finds them allocated. */
static void test_store_grows_ahead(void **state)
{
    struct fx *f = *state;
    static uint8_t data[65536];
    memset(data, 0x5a, sizeof(data));
    dom_file_of(f, "dom", "a", data, sizeof(data));
    char path[sizeof(f->dir) + 16];
    snprintf(path, sizeof(path), "%s/probe", f->dir);
    int fd = open(path, O_CREAT | O_RDWR, 0600);
    assert_true(fd >= 0);
    int rc = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 4096) ? errno : 0;
    close(fd);
    unlink(path);
    if (rc == EOPNOTSUPP) {
        print_message("skipped: %s's file system has no fallocate\n", f->dir);
        skip();
    }
    snprintf(path, sizeof(path), "%s/data.mdb", f->dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true((uint64_t)st.st_blocks * 512 >= (uint64_t)st.st_size + (1u << 20));
    /* LMDB's own size: no more than its pages, with the 64 KiB just written. */
    assert_true(st.st_size < 4 << 20);
}

/* DOM_WRITES: several writes in one transaction, each with its own
 * result; one that fails changes nothing and the others are made; the
 * records' limit answers ENOSPC per write; made twice, made once. */
static void test_dom_write_n(void **state)
{
    struct fx *f = *state;
    enum { N = 5 };
    static uint8_t data[N][20000], got[65536], crcs[N][4 * 8];
    for (int i = 0; i < N; i++)
        memset(data[i], 'a' + i, sizeof(data[i]));
    uint64_t a = dom_file_of(f, "dom", "a", NULL, 0);
    struct proto_open_rep o;
    assert_int_equal(op_open(f, &root_cred, "dom/b", O_CREAT | O_WRONLY, 0644, &o), 0);
    uint64_t b = o.attr.ino;
    uint64_t plain = mk_file(f, &root_cred, "plain", 0644);
    /* a at 0, the plain file (its layout has no such component), b at
     * 1000 damaged on its way, b at 0, a again at 20000. */
    const uint64_t ino[N] = {a, plain, b, b, a};
    const uint64_t off[N] = {0, 0, 1000, 0, 20000};
    const uint32_t len[N] = {20000, 10, 500, 10000, 20000};
    struct proto_dom_write_req q[N];
    static struct proto_dom_write_rep r[N];
    struct meta_req rq[N];
    const struct meta_req *rqp[N];
    int rc[N];
    for (int i = 0; i < N; i++) {
        proto_csum_fill(off[i], data[i], len[i], crcs[i]);
        q[i] = (struct proto_dom_write_req){.cred = root_cred, .ino = ino[i], .offset = off[i]};
        q[i].crcs = (struct proto_blob){crcs[i], 4 * proto_csum_chunks(off[i], len[i])};
        rq[i] = (struct meta_req){.ctx = &f->ctx, .bulk = data[i], .bulk_len = len[i]};
        rqp[i] = &rq[i];
    }
    crcs[2][0] ^= 1;
    for (int round = 0; round < 2; round++) {
        assert_int_equal(meta_op_dom_write_n(N, rqp, q, NULL, r, rc), 0);
        assert_int_equal(rc[0], 0);
        assert_int_equal(rc[1], -ESTALE);
        assert_int_equal(rc[2], -EIO);
        assert_int_equal(rc[3], 0);
        assert_int_equal(rc[4], 0);
        assert_int_equal(r[4].attr.size, 40000);
        assert_int_equal(r[3].attr.size, 10000);
        assert_int_equal(attr_of(f, a).size, 40000);
        assert_int_equal(attr_of(f, b).size, 10000);
        assert_int_equal(dom_total(f), 50000);
    }
    uint32_t n;
    assert_int_equal(op_dom_read(f, a, 0, 40000, got, &n), 0);
    assert_int_equal(n, 40000);
    assert_memory_equal(got, data[0], 20000);
    assert_memory_equal(got + 20000, data[4], 20000);
    assert_int_equal(op_dom_read(f, b, 0, 10001, got, &n), 0);
    assert_memory_equal(got, data[3], 10000);
    assert_int_equal(got[10000], 0);
    /* Full: the write that would grow the records fails alone, with
     * ENOSPC; a rewrite beside it needs no room. */
    f->ctx.dom_max = 50000;
    memset(data[1], 'z', sizeof(data[1]));
    q[1] = (struct proto_dom_write_req){.cred = root_cred, .ino = b, .offset = 10000};
    proto_csum_fill(10000, data[1], 5000, crcs[1]);
    q[1].crcs = (struct proto_blob){crcs[1], 4 * proto_csum_chunks(10000, 5000)};
    rq[1].bulk_len = 5000;
    memset(data[0], 'y', sizeof(data[0]));
    proto_csum_fill(0, data[0], 20000, crcs[0]);
    assert_int_equal(meta_op_dom_write_n(2, rqp, q, NULL, r, rc), 0);
    assert_int_equal(rc[0], 0);
    assert_int_equal(rc[1], -ENOSPC);
    assert_int_equal(attr_of(f, b).size, 10000);
    assert_int_equal(op_dom_read(f, a, 0, 100, got, &n), 0);
    assert_memory_equal(got, data[0], 100);
    f->ctx.dom_max = META_DOM_MAX_DEFAULT;
}

/* One create behind (DOM_WRITES' creates) of name in dir by client,
 * numbered ino, with len bytes of data after it: the create's result in
 * rcs[0], the write's in rcs[1]; *r what the create made. */
static void create_numbered(struct fx *f, uint64_t client, uint64_t dir, const char *name,
                            uint64_t ino, const uint8_t *data, uint32_t len, int rcs[2],
                            struct proto_open_rep *r)
{
    static uint8_t crcs[4 * 8];
    struct proto_dom_create c = {.item = 0,
                                 .parent = dir,
                                 .name = proto_str_c(name),
                                 .mode = 0640,
                                 .flags = O_WRONLY,
                                 .cred = user(1000, 1000)};
    static struct proto_open_rep reps[2];
    struct meta_dom_mk mk = {client, {&c, NULL}, reps};
    struct proto_dom_write_req q[2] = {{.cred = root_cred, .ino = ino},
                                       {.cred = root_cred, .ino = ino}};
    static struct proto_dom_write_rep wr[2];
    struct meta_req rq[2] = {{.ctx = &f->ctx}, {.ctx = &f->ctx, .bulk = data, .bulk_len = len}};
    const struct meta_req *rqp[2] = {&rq[0], &rq[1]};
    proto_csum_fill(0, data, len, crcs);
    q[1].crcs = (struct proto_blob){crcs, 4 * proto_csum_chunks(0, len)};
    memset(reps, 0, sizeof(reps));
    rcs[1] = 0;
    assert_int_equal(meta_op_dom_write_n(len ? 2 : 1, rqp, q, &mk, wr, rcs), 0);
    *r = reps[0];
}

/* Files created behind: a number of the client's ranges makes the file
 * once, with its bytes in the same transaction; the same create again
 * (a resend) succeeds; a number used before, another client's, or one of
 * a range the MDT forgot is refused, and the bytes after a refused create
 * are not written (nor by a later write of that number alone). */
static void test_dom_create_numbered(void **state)
{
    struct fx *f = *state;
    static uint8_t data[5000], got[5000];
    memset(data, 'q', sizeof(data));
    dom_file_of(f, "cb", "seed", NULL, 0);
    uint64_t dir = ino_of(f, "cb");
    uint64_t lo1, lo2, lo3, other;
    struct meta_req rq = {.ctx = &f->ctx};
    assert_int_equal(meta_op_ino_range(&rq, 7, true, &lo1), 0);
    assert_int_equal(meta_op_ino_range(&rq, 9, true, &other), 0);
    assert_true(other >= lo1 + META_DLG_INOS || other + META_DLG_INOS <= lo1);
    int rcs[2];
    struct proto_open_rep r;
    create_numbered(f, 7, dir, "x", lo1 + 3, data, sizeof(data), rcs, &r);
    assert_int_equal(rcs[0], 0);
    assert_int_equal(rcs[1], 0);
    assert_int_equal(r.created, 1);
    assert_int_equal(r.marked, 1);
    assert_int_equal(r.attr.ino, lo1 + 3);
    assert_int_equal(r.attr.mode, S_IFREG | 0640);
    assert_int_equal(r.attr.uid, 1000);
    assert_int_equal(layout_dom_size(&r.layout), 64 << 10);
    assert_int_equal(ino_of(f, "cb/x"), lo1 + 3);
    assert_int_equal(attr_of(f, lo1 + 3).size, sizeof(data));
    uint32_t n;
    assert_int_equal(op_dom_read(f, lo1 + 3, 0, sizeof(got), got, &n), 0);
    assert_memory_equal(got, data, sizeof(data));
    /* Sent again: the same file, not another. */
    create_numbered(f, 7, dir, "x", lo1 + 3, data, sizeof(data), rcs, &r);
    assert_int_equal(rcs[0], 0);
    assert_int_equal(r.attr.ino, lo1 + 3);
    /* The number under another name, another client's number, a number
     * of no range: refused, and their bytes go nowhere. */
    uint64_t total = dom_total(f);
    create_numbered(f, 7, dir, "y", lo1 + 3, data, sizeof(data), rcs, &r);
    assert_int_equal(rcs[0], -ESTALE);
    assert_int_equal(rcs[1], -ESTALE);
    create_numbered(f, 7, dir, "y", other, data, sizeof(data), rcs, &r);
    assert_int_equal(rcs[0], -ESTALE);
    create_numbered(f, 7, dir, "y", lo1 + META_DLG_INOS + 5000, data, sizeof(data), rcs, &r);
    assert_int_equal(rcs[0], -ESTALE);
    /* A name taken: EEXIST, and a write of the number alone later finds
     * no file (no record is made for it). */
    create_numbered(f, 7, dir, "seed", lo1 + 4, data, sizeof(data), rcs, &r);
    assert_int_equal(rcs[0], -EEXIST);
    assert_int_equal(rcs[1], -EEXIST);
    assert_int_not_equal(op_dom_write(f, lo1 + 4, 0, data, 100, false, NULL), 0);
    assert_int_equal(dom_total(f), total);
    assert_int_equal(op_lookup(f, &root_cred, "cb/y", false, NULL), -ENOENT);
    /* A number once used stays used when its file is gone. */
    assert_int_equal(op_unlink(f, &root_cred, "cb/x", NULL), 0);
    create_numbered(f, 7, dir, "x", lo1 + 3, data, 0, rcs, &r);
    assert_int_equal(rcs[0], -ESTALE);
    /* The MDT keeps a client's last two ranges. */
    assert_int_equal(meta_op_ino_range(&rq, 7, true, &lo2), 0);
    create_numbered(f, 7, dir, "z1", lo1 + 10, NULL, 0, rcs, &r);
    assert_int_equal(rcs[0], 0);
    assert_int_equal(meta_op_ino_range(&rq, 7, true, &lo3), 0);
    create_numbered(f, 7, dir, "z2", lo1 + 11, NULL, 0, rcs, &r);
    assert_int_equal(rcs[0], -ESTALE);
    create_numbered(f, 7, dir, "z2", lo2, NULL, 0, rcs, &r);
    assert_int_equal(rcs[0], 0);
    create_numbered(f, 7, dir, "z3", lo3 + META_DLG_INOS - 1, NULL, 0, rcs, &r);
    assert_int_equal(rcs[0], 0);
    assert_int_equal(attr_of(f, lo3 + META_DLG_INOS - 1).size, 0);
}

/* Ranges of idle clients 1000 .. 1000 + *n, put in one transaction. */
static int many_dlg_txn(struct meta_txn *t, void *arg)
{
    const int *n = arg;
    struct meta_dlg d = {.lo = {0, proto_ino_make(0, 1u << 30)}, .idle = true};
    int rc = 0;
    for (int i = 0; i < *n && rc == 0; i++)
        rc = meta_dlg_put(t, 1000 + (uint64_t)i, &d);
    return rc;
}

/* A record as MDTs wrote it before the stamp: 16 + 256 bytes. */
static int old_dlg_txn(struct meta_txn *t, void *arg)
{
    const uint64_t *lo = arg;
    uint8_t kb[11] = {'d', 'l', 'g', 0, 0, 0, 0, 0, 0, 0, 77}, vb[16 + META_DLG_INOS / 4] = {0};
    for (int i = 0; i < 8; i++)
        vb[8 + i] = (uint8_t)(*lo >> (56 - 8 * i));
    MDB_val k = {sizeof(kb), kb}, v = {sizeof(vb), vb};
    t->wrote = true;
    return mdb_put(t->txn, t->store->info, &k, &v, 0) ? -EIO : 0;
}

static int get_dlg_txn(struct meta_txn *t, void *arg)
{
    struct meta_dlg *d = arg;
    return meta_dlg_get(t, (uint64_t)d->when_ns, d);
}

/* The ranges of clients that went away are pruned, if their clients said
 * they drop ranges left idle (dlg_rec.h). */
static void test_dlg_prune(void **state)
{
    struct fx *f = *state;
    dom_file_of(f, "dp", "seed", NULL, 0);
    uint64_t dir = ino_of(f, "dp");
    struct meta_req rq = {.ctx = &f->ctx};
    uint64_t lo, kept, old = 0;
    int64_t before = (int64_t)util_now_real_ns();
    assert_int_equal(meta_op_ino_range(&rq, 7, true, &lo), 0);
    assert_int_equal(meta_op_ino_range(&rq, 9, false, &kept), 0); /* a client of before the bit */
    struct meta_dlg d = {.when_ns = 7};
    assert_int_equal(meta_store_read(f->s, NULL, get_dlg_txn, &d), 0);
    assert_int_equal(d.lo[1], lo);
    assert_true(d.idle);
    assert_true(d.when_ns >= before && d.when_ns <= (int64_t)util_now_real_ns());
    /* Recent: kept, and its numbers still make files. */
    assert_int_equal(meta_dlg_prune(f->s, before - 1), 0);
    int rcs[2];
    struct proto_open_rep r;
    create_numbered(f, 7, dir, "a", lo, NULL, 0, rcs, &r);
    assert_int_equal(rcs[0], 0);
    /* A record of before the stamp stays, as it was. */
    assert_int_equal(meta_op_ino_range(&rq, 77, true, &old), 0);
    assert_int_equal(meta_store_write(f->s, NULL, old_dlg_txn, &old), 0);
    d.when_ns = 77;
    assert_int_equal(meta_store_read(f->s, NULL, get_dlg_txn, &d), 0);
    assert_int_equal(d.lo[1], old);
    assert_int_equal(d.when_ns, 0);
    assert_false(d.idle);
    /* Old enough: the idle client's goes, the others stay. */
    assert_int_equal(meta_dlg_prune(f->s, INT64_MAX), 1);
    create_numbered(f, 7, dir, "c", lo + 1, NULL, 0, rcs, &r);
    assert_int_equal(rcs[0], -ESTALE);
    create_numbered(f, 9, dir, "k", kept, NULL, 0, rcs, &r);
    assert_int_equal(rcs[0], 0);
    create_numbered(f, 77, dir, "b", old + 1, NULL, 0, rcs, &r);
    assert_int_equal(rcs[0], 0);
    /* Taking a number rewrites the old record stamped, still not idle. */
    d.when_ns = 77;
    assert_int_equal(meta_store_read(f->s, NULL, get_dlg_txn, &d), 0);
    assert_true(d.when_ns > 0);
    assert_false(d.idle);
    /* More than one batch of them; the store's other records stay. */
    int n = 2500;
    assert_int_equal(meta_store_write(f->s, NULL, many_dlg_txn, &n), 0);
    assert_int_equal(meta_dlg_prune(f->s, INT64_MAX), n);
    assert_int_equal(meta_dlg_prune(f->s, INT64_MAX), 0);
    uint64_t made = mk_file(f, &root_cred, "dp/after", 0644);
    assert_int_equal(ino_of(f, "dp/after"), made);
    assert_int_equal(ino_of(f, "dp/b"), old + 1);
    assert_int_equal(ino_of(f, "dp/k"), kept);
    fx_close(f);
    assert_int_equal(fx_open(f), 0);
    assert_int_equal(ino_of(f, "dp/after"), made);
    create_numbered(f, 9, dir, "k2", kept + 1, NULL, 0, rcs, &r);
    assert_int_equal(rcs[0], 0);
}

/* ---- online migration's stale time (metad's migrate_stale_ms) ---- */

static int op_migrate(struct fx *f, uint64_t ino, uint8_t op, uint64_t id,
                      struct proto_migrate_rep *r)
{
    static struct proto_migrate_req q;
    memset(&q, 0, sizeof(q));
    memset(r, 0, sizeof(*r));
    q.cred = root_cred;
    q.ino = ino;
    q.op = op;
    q.id = id;
    if (op == MIGRATE_BEGIN)
        tmpl_of(&q.layout, 1, (const uint64_t[][3]){{LAYOUT_END_EOF, 2, MIB}});
    return meta_op_migrate(RQ(&f->ctx), &q, r);
}

/* Whether fsck, given stale_ms, lists ino's migration as stale (-1: it
 * lists none). */
static int fsck_mig_stale(struct fx *f, uint64_t ino, uint32_t stale_ms)
{
    static uint8_t refs[64 << 10];
    struct meta_fsck_report r = {.refs = refs, .refs_cap = sizeof(refs), .mig_stale_ms = stale_ms};
    assert_int_equal(meta_fsck(f->s, false, &r), 0);
    struct proto_dec d;
    proto_dec_init(&d, refs, (uint32_t)r.refs_len);
    struct xref x;
    int rc;
    while ((rc = xref_get(&d, &x)) == 0)
        if (x.kind == XREF_MIGRATION && x.ino == ino)
            return x.stale;
    assert_int_equal(rc, -1);
    return -1;
}

/* The option: 30 s unless set, in milliseconds; garbage, and less than a
 * second, refused with the option named (the daemon then exits 2). */
static void test_migrate_stale_option(void **state)
{
    (void)state;
    static struct mdt_service_conf conf;
    char err[256];
    assert_int_equal(cfg_defaults(&metad_table, &conf), 0);
    assert_int_equal(conf.migrate_stale_ms, META_MIG_STALE_MS_DEFAULT);
    assert_int_equal(cfg_set(&metad_table, &conf, "migrate_stale_ms", "3000", err, sizeof(err)), 0);
    assert_int_equal(conf.migrate_stale_ms, 3000);
    static const char *bad[] = {"soon", "3s", "", "-1", "999", "600001"};
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        err[0] = 0;
        assert_true(cfg_set(&metad_table, &conf, "migrate_stale_ms", bad[i], err, sizeof(err)) < 0);
        assert_non_null(strstr(err, "migrate_stale_ms"));
        assert_int_equal(conf.migrate_stale_ms, 3000);
    }
    cfg_free(&metad_table, &conf);
}

/* The MDT's stale time decides: its replies say it; a migration is busy
 * within it and taken over (stale) past it, and fsck says the same with
 * the time it is given. */
static void test_migrate_stale(void **state)
{
    struct fx *f = *state;
    static struct proto_migrate_rep r;
    uint64_t ino = mk_file(f, &root_cred, "m", 0644);
    f->ctx.mig_stale_ms = 200;
    assert_int_equal(op_migrate(f, ino, MIGRATE_BEGIN, 0, &r), 0);
    assert_int_equal(r.stale_ms, 200);
    assert_int_equal(r.stale, 0);
    uint64_t id = r.id;
    assert_int_equal(op_migrate(f, ino, MIGRATE_BEGIN, 0, &r), -EBUSY);
    assert_int_equal(op_migrate(f, ino, MIGRATE_STATE, 0, &r), 0);
    assert_int_equal(r.stale, 0);
    assert_int_equal(r.stale_ms, 200);
    assert_int_equal(fsck_mig_stale(f, ino, 200), 0);
    usleep(300 * 1000);
    /* Stale at 200 ms; alive still at the default's 30 s. */
    assert_int_equal(fsck_mig_stale(f, ino, 200), 1);
    assert_int_equal(fsck_mig_stale(f, ino, 0), 0);
    assert_int_equal(op_migrate(f, ino, MIGRATE_STATE, 0, &r), 0);
    assert_int_equal(r.stale, 1);
    f->ctx.mig_stale_ms = META_MIG_STALE_MS_DEFAULT;
    assert_int_equal(op_migrate(f, ino, MIGRATE_BEGIN, 0, &r), -EBUSY);
    /* PROGRESS revives it (no one took it over): stale again only 200 ms
     * after it. */
    f->ctx.mig_stale_ms = 200;
    assert_int_equal(op_migrate(f, ino, MIGRATE_PROGRESS, id, &r), 0);
    assert_int_equal(op_migrate(f, ino, MIGRATE_BEGIN, 0, &r), -EBUSY);
    usleep(300 * 1000);
    assert_int_equal(op_migrate(f, ino, MIGRATE_BEGIN, 0, &r), 0);
    assert_int_equal(r.stale, 1);
    assert_int_equal(r.id, id);
    assert_int_equal(r.stale_ms, 200);
    assert_int_equal(op_migrate(f, ino, MIGRATE_ABORT, id, &r), 0);
    assert_int_equal(fsck_mig_stale(f, ino, 200), -1);
}

/* Data-on-MDT records no file reads any more are orphans: of an inode
 * that is gone (and not pending), or whose layout has no mdt component.
 * The repair drops them, and the MDT's total with them; a pending
 * file's record stays. */
static int put_dom_txn(struct meta_txn *t, void *arg)
{
    const uint64_t *ino = arg;
    static const uint8_t bytes[3000] = {1};
    return meta_dom_write(t, *ino, 0, bytes, sizeof(bytes), 1u << 20, UINT64_MAX);
}

static void test_dom_fsck(void **state)
{
    struct fx *f = *state;
    static uint8_t data[10000];
    memset(data, 7, sizeof(data));
    uint64_t s = dom_file_of(f, "dom", "s", data, sizeof(data));
    assert_int_equal(op_open(f, &root_cred, "dom/kept", O_CREAT | O_WRONLY, 0644, NULL), 0);
    uint64_t kept = ino_of(f, "dom/kept");
    assert_int_equal(op_dom_write(f, kept, 0, data, 500, false, NULL), 0);
    struct proto_unlink_rep ur;
    assert_int_equal(op_unlink(f, &root_cred, "dom/kept", &ur), 0);
    assert_int_equal(ur.destroy, 1); /* pending: a client may keep it open */
    /* A record of no inode, and one of a file without the component. */
    uint64_t ghost = proto_ino_make(0, 999999), plain = mk_file(f, &root_cred, "plain", 0644);
    assert_int_equal(meta_store_write(f->s, NULL, put_dom_txn, &ghost), 0);
    assert_int_equal(meta_store_write(f->s, NULL, put_dom_txn, &plain), 0);
    assert_int_equal(dom_total(f), 10000 + 500 + 3000 + 3000);
    char text[4096];
    struct meta_fsck_report r = fsck(f, false, text, sizeof(text));
    assert_int_equal(r.orphans, 2);
    assert_int_equal(r.dangling + r.bad_nlink + r.corrupt, 0);
    assert_non_null(strstr(text, "no such inode"));
    assert_non_null(strstr(text, "its layout has no mdt component"));
    r = fsck(f, true, text, sizeof(text));
    assert_int_equal(r.orphans, 2);
    assert_int_equal(r.fixed, 2);
    assert_int_equal(dom_total(f), 10000 + 500);
    r = fsck(f, false, text, sizeof(text));
    assert_int_equal(r.orphans, 0);
    uint32_t n;
    static uint8_t got[10000];
    assert_int_equal(op_dom_read(f, s, 0, sizeof(got), got, &n), 0);
    assert_memory_equal(got, data, sizeof(data));
    assert_int_equal(op_dom_read(f, kept, 0, 500, got, &n), 0);
    assert_memory_equal(got, data, 500);
}

static void test_stripe_errors(void **state)
{
    struct fx *f = *state;
    uint64_t ino = mk_file(f, &root_cred, "f", 0644);
    uint64_t d = mk_dir(f, &root_cred, "d", 0755);
    assert_int_equal(op_setstripe(f, &root_cred, ino, 1, 100000, -1, NULL), -EINVAL);
    assert_int_equal(op_setstripe(f, &root_cred, ino, 1, (64u << 10) + 4096, -1, NULL), -EINVAL);
    assert_int_equal(op_setstripe(f, &root_cred, d, 1, 100000, -1, NULL), -EINVAL);
    assert_int_equal(op_setstripe(f, &root_cred, ino, -2, MIB, -1, NULL), -EINVAL);

    /* A file without data may change layout; count -1 is every OST. */
    struct proto_setstripe_rep s;
    assert_int_equal(op_setstripe(f, &root_cred, ino, -1, 3 * (64u << 10), -1, &s), 0);
    check_layout(&s.layout, NOST, 3 * (64u << 10), 0);
    struct proto_getstripe_rep g;
    assert_int_equal(op_getstripe(f, ino, &g), 0);
    check_layout(&g.layout, NOST, 3 * (64u << 10), 0);

    /* Once it holds data, never. */
    assert_int_equal(op_setsize(f, ino, 1, NULL), 0);
    assert_int_equal(op_setstripe(f, &root_cred, ino, 2, MIB, -1, NULL), -EEXIST);
    assert_int_equal(op_getstripe(f, ino, &g), 0);
    check_layout(&g.layout, NOST, 3 * (64u << 10), 0);

    /* A directory default of -1 gives new files every OST. */
    assert_int_equal(op_setstripe(f, &root_cred, d, -1, 0, -1, NULL), 0);
    struct proto_open_rep o;
    assert_int_equal(op_open(f, &root_cred, "d/all", O_CREAT | O_WRONLY, 0644, &o), 0);
    check_layout(&o.layout, NOST, MIB, 0);
    /* More stripes than OSTs: as many as there are. */
    struct proto_open_req q;
    memset(&q, 0, sizeof(q));
    q.parent = ROOT;
    q.path = proto_str_c("wide");
    q.flags = O_CREAT | O_WRONLY;
    q.mode = 0644;
    q.stripe_count = 16;
    q.stripe_offset = -1;
    assert_int_equal(meta_op_open(RQ(&f->ctx), &q, &o), 0);
    check_layout(&o.layout, NOST, MIB, 0);
}

static void test_stripe_offline_osts(void **state)
{
    struct fx *f = *state;
    /* OSTs 1 and 3 offline. */
    set_osts(f, NOST, 0x5);
    uint64_t d = mk_dir(f, &root_cred, "d", 0755);
    assert_int_equal(op_setstripe(f, &root_cred, d, 2, MIB, -1, NULL), 0);
    char name[32];
    struct proto_open_rep o;
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof(name), "d/f%d", i);
        assert_int_equal(op_open(f, &root_cred, name, O_CREAT | O_WRONLY, 0644, &o), 0);
        check_layout(&o.layout, 2, MIB, 0xa);
        snprintf(name, sizeof(name), "one%d", i);
        assert_int_equal(op_open(f, &root_cred, name, O_CREAT | O_WRONLY, 0644, &o), 0);
        check_layout(&o.layout, 1, MIB, 0xa);
    }
    uint64_t e = mk_file(f, &root_cred, "all", 0644);
    struct proto_setstripe_rep s;
    assert_int_equal(op_setstripe(f, &root_cred, e, -1, MIB, -1, &s), 0);
    check_layout(&s.layout, 2, MIB, 0xa);

    /* Before the first cluster map (a metad just started) a create waits
     * for it, rather than hear that the disks are full. */
    f->ctx.osts_known = false;
    f->ctx.nost = 0;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, map_later, f), 0);
    assert_int_equal(op_open(f, &root_cred, "aftermap", O_CREAT | O_WRONLY, 0644, NULL), 0);
    pthread_join(th, NULL);

    /* None online: no file can be created, and nothing is left behind. */
    set_osts(f, NOST, 0);
    assert_int_equal(op_open(f, &root_cred, "nospace", O_CREAT | O_WRONLY, 0644, NULL), -ENOSPC);
    assert_int_equal(op_lookup(f, &root_cred, "nospace", false, NULL), -ENOENT);
    /* Directories need no OST. */
    mk_dir(f, &root_cred, "stilldir", 0755);
    /* Online but full is no better. */
    struct meta_ost full[NOST];
    for (uint32_t i = 0; i < NOST; i++) {
        full[i].index = i;
        full[i].online = true;
        full[i].avail = 1 << 20;
        full[i].total = 1ull << 40;
    }
    meta_ctx_set_osts(&f->ctx, full, NOST);
    assert_int_equal(op_open(f, &root_cred, "nospace", O_CREAT | O_WRONLY, 0644, NULL), -ENOSPC);
    set_osts(f, NOST, 0xf);
    mk_file(f, &root_cred, "nospace", 0644);
}

/* ---- OST pools -------------------------------------------------------- */

#define POOL_OSTS 8

/* Eight OSTs, online, with avail[i] bytes free (each 1 TiB big). */
static void set_pool_osts(struct fx *f, const uint64_t *avail)
{
    struct meta_ost o[POOL_OSTS];
    for (uint32_t i = 0; i < POOL_OSTS; i++) {
        o[i].index = i;
        o[i].online = true;
        o[i].avail = avail[i];
        o[i].total = 1ull << 40;
    }
    meta_ctx_set_osts(&f->ctx, o, POOL_OSTS);
}

/* How many stripes of tries layouts of count stripes each OST got. */
static void alloc_counts(struct fx *f, int tries, int32_t count, const char *pool,
                         uint32_t hits[POOL_OSTS])
{
    memset(hits, 0, sizeof(uint32_t) * POOL_OSTS);
    for (int i = 0; i < tries; i++) {
        struct layout l;
        assert_int_equal(meta_alloc_layout(&f->ctx, count, MIB, -1, pool, &l), 0);
        for (uint32_t s = 0; s < l.comp[0].stripe_count; s++) {
            assert_true(l.comp[0].groups[s] < POOL_OSTS);
            for (uint32_t k = 0; k < s; k++)
                assert_int_not_equal(l.comp[0].groups[k], l.comp[0].groups[s]);
            hits[l.comp[0].groups[s]]++;
        }
    }
}

static int refreshes;
static void count_refresh(void *arg)
{
    (void)arg;
    refreshes++;
}

static void test_alloc_pool(void **state)
{
    struct fx *f = *state;
    uint64_t even[POOL_OSTS];
    for (int i = 0; i < POOL_OSTS; i++)
        even[i] = 500ull << 30;
    set_pool_osts(f, even);
    uint32_t fast[] = {6, 1, 3, 5}, none[1];
    struct map_pool pools[] = {{"fast", 4, fast}, {"empty", 0, none}};
    assert_int_equal(meta_ctx_set_pools(&f->ctx, pools, 2), 0);
    const uint32_t in_fast = 1u << 1 | 1u << 3 | 1u << 5 | 1u << 6;

    /* Balanced: round-robin over the pool's OSTs, never outside it. */
    uint32_t hits[POOL_OSTS];
    alloc_counts(f, 400, 1, "fast", hits);
    for (int i = 0; i < POOL_OSTS; i++)
        assert_int_equal(hits[i], (in_fast >> i) & 1 ? 100 : 0);
    alloc_counts(f, 100, 3, "fast", hits);
    for (int i = 0; i < POOL_OSTS; i++)
        assert_int_equal(hits[i], (in_fast >> i) & 1 ? 75 : 0);
    /* -c -1 and a count above the pool's size: the pool's four. */
    alloc_counts(f, 10, -1, "fast", hits);
    for (int i = 0; i < POOL_OSTS; i++)
        assert_int_equal(hits[i], (in_fast >> i) & 1 ? 10 : 0);
    alloc_counts(f, 10, 8, "fast", hits);
    for (int i = 0; i < POOL_OSTS; i++)
        assert_int_equal(hits[i], (in_fast >> i) & 1 ? 10 : 0);
    /* A first OST outside the pool is a hint not taken. */
    struct layout l;
    assert_int_equal(meta_alloc_layout(&f->ctx, 1, MIB, 0, "fast", &l), 0);
    assert_true((in_fast >> l.comp[0].groups[0]) & 1);
    assert_int_equal(meta_alloc_layout(&f->ctx, 1, MIB, 5, "fast", &l), 0);
    assert_int_equal(l.comp[0].groups[0], 5);

    /* Unbalanced inside the pool: weighted by free space, OSTs 1 and 3
     * (400 GiB) about ten times as often as 5 and 6 (40 GiB); the much
     * emptier OSTs outside it never. */
    uint64_t skew[POOL_OSTS] = {1ull << 40, 400ull << 30, 1ull << 40,  400ull << 30,
                                1ull << 40, 40ull << 30,  40ull << 30, 1ull << 40};
    set_pool_osts(f, skew);
    alloc_counts(f, 4000, 1, "fast", hits);
    for (int i = 0; i < POOL_OSTS; i++)
        if (!((in_fast >> i) & 1))
            assert_int_equal(hits[i], 0);
    assert_true(hits[1] > 4 * hits[5] && hits[1] > 4 * hits[6]);
    assert_true(hits[3] > 4 * hits[5] && hits[3] > 4 * hits[6]);
    assert_true(hits[5] > 0 && hits[6] > 0);
    /* Without the pool, the emptiest OSTs win. */
    alloc_counts(f, 1000, 1, NULL, hits);
    assert_true(hits[0] > hits[1] && hits[7] > hits[6]);

    /* A pool none of whose OSTs can take data: ENOSPC, even with room
     * outside it. */
    uint64_t full[POOL_OSTS];
    for (int i = 0; i < POOL_OSTS; i++)
        full[i] = (in_fast >> i) & 1 ? 1u << 20 : 1ull << 40;
    set_pool_osts(f, full);
    assert_int_equal(meta_alloc_layout(&f->ctx, 1, MIB, -1, "fast", &l), -ENOSPC);
    assert_int_equal(meta_alloc_layout(&f->ctx, 1, MIB, -1, "", &l), 0);
    set_pool_osts(f, even);

    /* A pool the map does not show, or shows empty, with no way to ask
     * for a fresher map: ignored, as Lustre ignores it. */
    alloc_counts(f, 80, 1, "nosuch", hits);
    for (int i = 0; i < POOL_OSTS; i++)
        assert_int_equal(hits[i], 10);
    alloc_counts(f, 80, 1, "empty", hits);
    for (int i = 0; i < POOL_OSTS; i++)
        assert_int_equal(hits[i], 10);

    /* With one: the request waits for a fresh map (EAGAIN, asked once);
     * the map that comes shows the pool, whose OSTs it then gets. */
    refreshes = 0;
    f->ctx.refresh_map = count_refresh;
    assert_int_equal(meta_alloc_layout(&f->ctx, 1, MIB, -1, "new", &l), -EAGAIN);
    assert_int_equal(meta_alloc_layout(&f->ctx, 1, MIB, -1, "new", &l), -EAGAIN);
    assert_int_equal(refreshes, 1);
    uint32_t two[] = {2, 7};
    struct map_pool more[] = {{"fast", 4, fast}, {"new", 2, two}};
    assert_int_equal(meta_ctx_set_pools(&f->ctx, more, 2), 0);
    alloc_counts(f, 10, 1, "new", hits);
    assert_int_equal(hits[2] + hits[7], 10);
    assert_int_equal(hits[2], 5);
    /* A fresh map that still lacks it: placed over all OSTs, and the
     * pool is not asked for again for a while. */
    assert_int_equal(meta_alloc_layout(&f->ctx, 1, MIB, -1, "gone", &l), -EAGAIN);
    assert_int_equal(meta_ctx_set_pools(&f->ctx, more, 2), 0);
    assert_int_equal(meta_alloc_layout(&f->ctx, 1, MIB, -1, "gone", &l), 0);
    assert_int_equal(meta_alloc_layout(&f->ctx, 1, MIB, -1, "gone", &l), 0);
    assert_int_equal(refreshes, 2);
    f->ctx.refresh_map = NULL;

    /* Components: each instantiated within its own pool. */
    for (int round = 0; round < 20; round++) {
        memset(&l, 0, sizeof(l));
        l.ncomp = 2;
        l.comp[0] = (struct layout_comp){
            .start = 0, .end = 1 << 20, .stripe_count = 1, .type = LAYOUT_F_PENDING, .pool = "new"};
        l.comp[1] = (struct layout_comp){.start = 1 << 20,
                                         .end = LAYOUT_END_EOF,
                                         .stripe_count = LAYOUT_COUNT_ALL,
                                         .type = LAYOUT_F_PENDING,
                                         .pool = "fast"};
        l.comp[0].groups[0] = l.comp[1].groups[0] = LAYOUT_ANY_OST;
        assert_int_equal(layout_validate(&l), 0);
        assert_int_equal(meta_instantiate(&f->ctx, &l, LAYOUT_END_EOF), 0);
        assert_true(l.comp[0].groups[0] == 2 || l.comp[0].groups[0] == 7);
        assert_string_equal(l.comp[0].pool, "new");
        assert_int_equal(l.comp[1].stripe_count, 4);
        for (int s = 0; s < 4; s++)
            assert_true((in_fast >> l.comp[1].groups[s]) & 1);
    }
    set_osts(f, NOST, 0xf);
}

/* ---- sizes ------------------------------------------------------------ */

static void test_setsize_setattr(void **state)
{
    struct fx *f = *state;
    uint64_t ino = mk_file(f, &root_cred, "f", 0644);
    struct proto_attr a;
    assert_int_equal(op_setsize(f, ino, 1000, &a), 0);
    assert_int_equal(a.size, 1000);
    /* A writer that wrote less does not shrink the file. */
    assert_int_equal(op_setsize(f, ino, 500, &a), 0);
    assert_int_equal(a.size, 1000);
    assert_int_equal(attr_of(f, ino).size, 1000);
    assert_int_equal(op_setsize(f, ino, 1 << 20, &a), 0);
    assert_int_equal(attr_of(f, ino).size, 1 << 20);

    /* truncate(2) does. */
    struct proto_setattr_rep r;
    assert_int_equal(op_setattr(f, &root_cred, ino, SETATTR_SIZE, 0, 0, 0, 10, &r), 0);
    assert_int_equal(r.old_size, 1 << 20);
    assert_int_equal(r.attr.size, 10);
    check_layout(&r.layout, 1, MIB, 0);
    assert_int_equal(attr_of(f, ino).size, 10);
    /* And may grow it. */
    assert_int_equal(op_setattr(f, &root_cred, ino, SETATTR_SIZE, 0, 0, 0, 3000, &r), 0);
    assert_int_equal(r.old_size, 10);
    assert_int_equal(attr_of(f, ino).size, 3000);

    /* Not on a directory; not without write permission. */
    uint64_t d = mk_dir(f, &root_cred, "d", 0755);
    assert_int_equal(op_setattr(f, &root_cred, d, SETATTR_SIZE, 0, 0, 0, 0, NULL), -EISDIR);
    struct proto_cred u = user(1000, 1000);
    assert_int_equal(op_setattr(f, &u, ino, SETATTR_SIZE, 0, 0, 0, 0, NULL), -EACCES);
    assert_int_equal(attr_of(f, ino).size, 3000);
    assert_int_equal(op_setsize(f, d, 10, NULL), -EINVAL);
}

/* ---- group commit ----------------------------------------------------- */

#define NTHREADS   4
#define PER_THREAD 2000
#define NSHARED    200 /* names every thread races to create */
#define NSUBDIR    100 /* subdirectories each thread adds to the shared directory */

struct worker {
    struct fx *f;
    int idx;
    pthread_barrier_t *go;
    int failures;
    int first_rc;
    int won; /* shared names this thread created */
};

static void worker_fail(struct worker *w, int rc)
{
    if (!w->failures)
        w->first_rc = rc;
    w->failures++;
}

static void *create_many(void *arg)
{
    struct worker *w = arg;
    char name[64];
    struct proto_open_rep *r = malloc(sizeof(*r));
    pthread_barrier_wait(w->go);
    if (!r) {
        worker_fail(w, -ENOMEM);
        return NULL;
    }
    /* One directory for all: exactly one O_EXCL create of a name wins, and
     * no subdirectory is lost from the parent's link count. */
    for (int i = 0; i < NSHARED; i++) {
        snprintf(name, sizeof(name), "shared/s%d", i);
        int rc = op_open(w->f, &root_cred, name, O_CREAT | O_EXCL | O_WRONLY, 0644, r);
        if (rc == 0)
            w->won++;
        else if (rc != -EEXIST)
            worker_fail(w, rc);
        if (i < NSUBDIR) {
            snprintf(name, sizeof(name), "shared/d%d_%d", w->idx, i);
            if ((rc = op_mkdir(w->f, &root_cred, name, 0755, NULL)))
                worker_fail(w, rc);
        }
    }
    /* Then each its own directory. */
    for (int i = 0; i < PER_THREAD; i++) {
        snprintf(name, sizeof(name), "t%d/f%d", w->idx, i);
        int rc = op_open(w->f, &root_cred, name, O_CREAT | O_EXCL | O_WRONLY, 0644, r);
        if (rc || !r->created)
            worker_fail(w, rc);
    }
    free(r);
    return NULL;
}

struct ino_list {
    uint64_t *ino;
    size_t n, cap;
};

static void collect_ino(void *arg, const struct proto_dirent *de)
{
    struct ino_list *l = arg;
    assert_true(l->n < l->cap);
    l->ino[l->n++] = de->ino;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_group_commit_concurrent(void **state)
{
    struct fx *f = *state;
    struct worker w[NTHREADS];
    pthread_t th[NTHREADS];
    pthread_barrier_t go;
    uint64_t dir[NTHREADS];
    pthread_barrier_init(&go, NULL, NTHREADS);
    uint64_t shared = mk_dir(f, &root_cred, "shared", 0755);
    for (int i = 0; i < NTHREADS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "t%d", i);
        dir[i] = mk_dir(f, &root_cred, name, 0755);
        w[i] = (struct worker){.f = f, .idx = i, .go = &go};
    }
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, create_many, &w[i]), 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    int won = 0;
    for (int i = 0; i < NTHREADS; i++) {
        if (w[i].failures)
            print_error("thread %d: %d failures, first rc %d\n", i, w[i].failures, w[i].first_rc);
        assert_int_equal(w[i].failures, 0);
        won += w[i].won;
    }
    assert_int_equal(won, NSHARED);
    assert_int_equal(attr_of(f, shared).nlink, 2 + NTHREADS * NSUBDIR);

    struct ino_list l = {.cap = NTHREADS * PER_THREAD + NSHARED + NTHREADS * NSUBDIR + 16};
    l.ino = calloc(l.cap, sizeof(uint64_t));
    assert_non_null(l.ino);
    size_t counts[NTHREADS + 1];
    for (int i = 0; i <= NTHREADS; i++) {
        size_t before = l.n;
        read_dir(f, i < NTHREADS ? dir[i] : shared, 64 << 10, collect_ino, NULL, &l);
        counts[i] = l.n - before;
    }
    for (int i = 0; i < NTHREADS; i++)
        l.ino[l.n++] = dir[i];
    l.ino[l.n++] = shared;
    l.ino[l.n++] = ROOT;
    qsort(l.ino, l.n, sizeof(uint64_t), cmp_u64);
    size_t dups = 0;
    for (size_t i = 1; i < l.n; i++)
        dups += l.ino[i] == l.ino[i - 1];
    free(l.ino);
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(counts[i], PER_THREAD);
    assert_int_equal(counts[NTHREADS], NSHARED + NTHREADS * NSUBDIR);
    assert_int_equal(dups, 0);
    /* Every entry leads to a live inode. */
    assert_int_equal(op_lookup(f, &root_cred, "t3/f1999", false, NULL), 0);
    assert_int_equal(op_lookup(f, &root_cred, "t0/f0", false, NULL), 0);
}

/* ---- batches of flat writes ------------------------------------------- */

/* One queued write: an xattr "k" on inode ino, then a failure if fail
 * says so (after the write when late). */
struct bw {
    struct meta_store *s;
    uint64_t ino;
    bool flat, fail, late;
    int wait_queued; /* the first write holds its batch until this many wait */
    int entered;     /* its fn runs */
    int rc;
    pthread_t th;
};

static int bw_txn(struct meta_txn *t, void *arg)
{
    struct bw *b = arg;
    __atomic_store_n(&b->entered, 1, __ATOMIC_RELEASE);
    for (int i = 0; b->wait_queued && i < 10000 && meta_store_queued(b->s) < b->wait_queued; i++)
        usleep(1000);
    if (b->fail && !b->late)
        return -EINVAL;
    int rc = meta_xattr_put(t, b->ino, "user.k", "v", 1);
    return rc ? rc : b->fail ? -EINVAL : 0;
}

static void *bw_main(void *arg)
{
    struct bw *b = arg;
    b->rc = b->flat ? meta_store_write_flat(b->s, NULL, bw_txn, b)
                    : meta_store_write(b->s, NULL, bw_txn, b);
    return NULL;
}

static int bw_has(struct meta_txn *t, void *arg)
{
    MDB_val v;
    return meta_xattr_get(t, *(uint64_t *)arg, "user.k", &v);
}

/* Run a holder, then w[0..n-1] queued in that order behind it, so that
 * they make the next batches; 0 or -ENOENT per write's record after. */
static void run_bw(struct fx *f, struct bw *w, int n, int *found)
{
    static uint64_t next_ino = 1000;
    struct bw hold = {.s = f->s, .ino = next_ino++, .flat = true, .wait_queued = n};
    assert_int_equal(pthread_create(&hold.th, NULL, bw_main, &hold), 0);
    for (int k = 0; k < 10000 && !__atomic_load_n(&hold.entered, __ATOMIC_ACQUIRE); k++)
        usleep(1000);
    for (int i = 0; i < n; i++) {
        w[i].s = f->s;
        w[i].ino = next_ino++;
        assert_int_equal(pthread_create(&w[i].th, NULL, bw_main, &w[i]), 0);
        /* The next joins the queue only behind this one (the holder lets
         * the batch go once the last is in). */
        for (int k = 0; i < n - 1 && k < 10000 && meta_store_queued(f->s) < i + 1; k++)
            usleep(1000);
    }
    pthread_join(hold.th, NULL);
    assert_int_equal(hold.rc, 0);
    for (int i = 0; i < n; i++) {
        pthread_join(w[i].th, NULL);
        found[i] = meta_store_read(f->s, NULL, bw_has, &w[i].ino);
    }
}

static void test_flat_batches(void **state)
{
    struct fx *f = *state;
    int found[3];
    /* A flat write that fails before writing leaves its batch alone. */
    struct bw a[3] = {{.flat = true}, {.flat = true, .fail = true}, {.flat = true}};
    run_bw(f, a, 3, found);
    assert_int_equal(a[0].rc, 0);
    assert_int_equal(a[1].rc, -EINVAL);
    assert_int_equal(a[2].rc, 0);
    assert_int_equal(found[0], 0);
    assert_int_equal(found[1], -ENOENT);
    assert_int_equal(found[2], 0);
    /* One that fails after writing takes the batch's earlier writes with
     * it (EIO, nothing kept); the later ones run afresh. */
    struct bw b[3] = {{.flat = true}, {.flat = true, .fail = true, .late = true}, {.flat = true}};
    run_bw(f, b, 3, found);
    assert_int_equal(b[0].rc, -EIO);
    assert_int_equal(b[1].rc, -EINVAL);
    assert_int_equal(b[2].rc, 0);
    assert_int_equal(found[0], -ENOENT);
    assert_int_equal(found[1], -ENOENT);
    assert_int_equal(found[2], 0);
    /* Any other write has a batch of its own, and may fail after writing
     * without harm to the flat writes around it. */
    struct bw c[3] = {{.flat = true}, {.fail = true, .late = true}, {.flat = true}};
    run_bw(f, c, 3, found);
    assert_int_equal(c[0].rc, 0);
    assert_int_equal(c[1].rc, -EINVAL);
    assert_int_equal(c[2].rc, 0);
    assert_int_equal(found[0], 0);
    assert_int_equal(found[1], -ENOENT);
    assert_int_equal(found[2], 0);
}

/* Unlinks queued together (UNLINKS) share one commit; each has its own
 * result and reply, a missing name failing alone. */
static void test_unlink_n(void **state)
{
    struct fx *f = *state;
    const char *names[4] = {"un0", "un-missing", "un1", "un2"};
    uint64_t inos[4] = {0};
    for (int i = 0; i < 4; i++)
        if (i != 1)
            inos[i] = mk_file(f, &root_cred, names[i], 0644);
    struct proto_unlink_req q[4];
    struct proto_unlink_rep r[4];
    struct meta_req rq[4];
    const struct meta_req *rqp[4];
    int rc[4];
    memset(q, 0, sizeof(q));
    memset(r, 0, sizeof(r));
    for (int i = 0; i < 4; i++) {
        q[i].cred = root_cred;
        q[i].parent = ROOT;
        q[i].path = proto_str_c(names[i]);
        rq[i] = *RQ(&f->ctx);
        rqp[i] = &rq[i];
    }
    uint64_t commits = meta_store_commits(f->s);
    assert_int_equal(meta_op_unlink_n(4, rqp, q, r, rc), 0);
    assert_int_equal(meta_store_commits(f->s) - commits, 1);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rc[i], i == 1 ? -ENOENT : 0);
        if (i != 1) {
            assert_int_equal(r[i].ino, inos[i]);
            assert_int_equal(r[i].gone, 1);
            struct proto_attr a;
            assert_int_equal(op_lookup(f, &root_cred, names[i], false, &a), -ENOENT);
        }
    }
    assert_int_equal(meta_op_unlink_n(0, rqp, q, r, rc), -EINVAL);
}

/* ---- persistence ------------------------------------------------------ */

static void test_persistence(void **state)
{
    struct fx *f = *state;
    uint64_t d = mk_dir(f, &root_cred, "keep", 0755);
    uint64_t file = mk_file(f, &root_cred, "keep/f", 0640);
    assert_int_equal(op_setsize(f, file, 12345, NULL), 0);
    assert_int_equal(op_setxattr(f, &root_cred, file, "user.k", "v", 0), 0);
    assert_int_equal(op_symlink(f, &root_cred, "keep/l", "f", NULL), 0);
    assert_int_equal(op_setstripe(f, &root_cred, d, 2, 2 * MIB, -1, NULL), 0);
    struct proto_getstripe_rep g0;
    assert_int_equal(op_getstripe(f, file, &g0), 0);

    fx_close(f);
    struct meta_store *wrong = NULL;
    int rc = meta_store_open(f->dir, 1, MAP_SIZE, &wrong);
    if (rc == 0)
        meta_store_close(wrong);
    assert_true(rc < 0);
    assert_int_equal(fx_open(f), 0);

    assert_int_equal(ino_of(f, "keep"), d);
    assert_int_equal(ino_of(f, "keep/f"), file);
    struct proto_attr a = attr_of(f, file);
    assert_int_equal(a.size, 12345);
    assert_int_equal(a.mode, S_IFREG | 0640);
    assert_int_equal(attr_of(f, d).nlink, 2);
    char buf[64];
    assert_int_equal(op_getxattr(f, &root_cred, file, "user.k", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "v");
    assert_int_equal(op_readlink(f, ino_of(f, "keep/l"), buf, sizeof(buf)), 0);
    assert_string_equal(buf, "f");
    struct proto_getstripe_rep g;
    assert_int_equal(op_getstripe(f, file, &g), 0);
    assert_memory_equal(&g.layout.comp[0], &g0.layout.comp[0], sizeof(g.layout.comp[0]));
    assert_int_equal(op_getstripe(f, d, &g), 0);
    assert_int_equal(g.dir_count, 2);
    assert_int_equal(g.dir_size, 2 * MIB);
    /* New inodes do not reuse numbers handed out before the restart. */
    uint64_t n = mk_file(f, &root_cred, "keep/new", 0644);
    assert_true(n != d && n != file && n != ino_of(f, "keep/l"));
    assert_true(n > file);
}

/* ---- reply records (exactly-once across a restart) ---- */

static int enc_mkdir(struct proto_enc *e, const void *r)
{
    return proto_enc_mkdir_rep(e, r);
}

/* A mkdir made with a reply record armed, as metad's handler makes it. */
static int kept_mkdir(struct fx *f, const char *path, uint16_t tag, uint64_t seq,
                      struct proto_mkdir_rep *r)
{
    struct proto_mkdir_req q;
    memset(&q, 0, sizeof(q));
    memset(r, 0, sizeof(*r));
    q.cred = root_cred;
    q.parent = ROOT;
    q.path = proto_str_c(path);
    q.mode = 0755;
    struct meta_reply k = {
        .client = 77, .seq = seq, .tag = tag, .op = PROTO_OP_MKDIR, .encode = enc_mkdir, .rep = r};
    int rc = meta_op_mkdir(&(struct meta_req){.ctx = &f->ctx, .reply = &k}, &q, r);
    return rc;
}

static int kept(struct fx *f, uint16_t tag, uint64_t seq, struct proto_mkdir_rep *r)
{
    uint8_t buf[8192];
    uint32_t len = 0;
    int status = 1;
    int rc = meta_reply_get(f->s, 77, tag, seq, &status, buf, sizeof(buf), &len);
    if (rc == 1) {
        assert_int_equal(status, 0);
        struct proto_dec d;
        proto_dec_init(&d, buf, len);
        assert_int_equal(proto_dec_mkdir_rep(&d, r), 0);
    }
    return rc;
}

static int enc_rmdir(struct proto_enc *e, const void *r)
{
    return proto_enc_rmdir_rep(e, r);
}

/* Records of several slots replaced in one transaction, each by one of
 * another size: the first replacement copies the page, the next ones
 * resize records in a page the transaction already changed. LMDB re-adds a
 * resized record with the key it is given, which must never point into
 * that page (ASan saw the copy overlap, and a key moved under it can land
 * the record under its neighbour's). */
struct resize_arg {
    struct proto_rmdir_rep rep;
};

static int resize_txn(struct meta_txn *t, void *arg)
{
    struct resize_arg *a = arg;
    for (uint16_t tag = 1; tag <= 40; tag += 3) {
        struct meta_reply k = {.client = 77,
                               .seq = 2000 + tag,
                               .tag = tag,
                               .op = PROTO_OP_RMDIR,
                               .encode = enc_rmdir,
                               .rep = &a->rep};
        const struct meta_req *was = t->req;
        struct meta_req rq = {.reply = &k};
        t->req = &rq;
        int rc = meta_reply_here(t);
        t->req = was;
        if (rc)
            return rc;
    }
    return 0;
}

static void test_reply_record_resized(void **state)
{
    struct fx *f = *state;
    struct proto_mkdir_rep r[40], k;
    char name[16];
    for (uint16_t tag = 1; tag <= 40; tag++) {
        snprintf(name, sizeof(name), "d%u", tag);
        assert_int_equal(kept_mkdir(f, name, tag, 1000 + tag, &r[tag - 1]), 0);
    }
    struct resize_arg ra;
    memset(&ra, 0, sizeof(ra));
    assert_int_equal(meta_store_write(f->s, NULL, resize_txn, &ra), 0);
    for (uint16_t tag = 1; tag <= 40; tag++) {
        if (tag % 3 == 1) {
            uint8_t buf[256];
            uint32_t len = 0;
            int status = 1;
            assert_int_equal(
                meta_reply_get(f->s, 77, tag, 2000 + tag, &status, buf, sizeof(buf), &len), 1);
            assert_int_equal(status, 0);
        } else {
            assert_int_equal(kept(f, tag, 1000 + tag, &k), 1);
            assert_int_equal(k.attr.ino, r[tag - 1].attr.ino);
        }
    }
}

static void test_reply_records(void **state)
{
    struct fx *f = *state;
    struct proto_mkdir_rep r, k;
    assert_int_equal(kept_mkdir(f, "a", 5, 100, &r), 0);
    /* A failed change keeps nothing: the slot still answers seq 100. */
    assert_int_equal(kept_mkdir(f, "a", 5, 101, &k), -EEXIST);
    fx_close(f);
    assert_int_equal(fx_open(f), 0); /* the record is on disk with the change */
    assert_int_equal(kept(f, 5, 100, &k), 1);
    assert_int_equal(k.attr.ino, r.attr.ino);
    assert_int_equal(k.attr.mode, S_IFDIR | 0755);
    assert_int_equal(kept(f, 5, 101, &k), 0);   /* not made: run it */
    assert_int_equal(kept(f, 5, 99, &k), -EIO); /* the slot was reused too early */
    assert_int_equal(kept(f, 6, 100, &k), 0);   /* another slot */
    /* The next change in the slot replaces the record. */
    assert_int_equal(kept_mkdir(f, "b", 5, 102, &r), 0);
    assert_int_equal(kept(f, 5, 102, &k), 1);
    assert_int_equal(k.attr.ino, r.attr.ino);
    assert_int_equal(kept(f, 5, 100, &k), -EIO);
    /* A change its client gave up on, made after the next one in its slot,
     * leaves the newer record. */
    struct proto_mkdir_rep late;
    assert_int_equal(kept_mkdir(f, "c", 5, 101, &late), 0);
    assert_int_equal(kept(f, 5, 102, &k), 1);
    assert_int_equal(k.attr.ino, r.attr.ino);
    /* Pruning drops records older than the time given. */
    assert_int_equal(meta_reply_prune(f->s, 0), 0);
    assert_int_equal(kept(f, 5, 102, &k), 1);
    assert_int_equal(meta_reply_prune(f->s, INT64_MAX), 1);
    assert_int_equal(kept(f, 5, 102, &k), 0);
}

/* ---- fsck ---- */

/* Damage the store directly, as a crash between two writes or a bug
 * would: each a write transaction of its own. */
struct damage {
    enum { DROP_ENTRY, ADD_ENTRY, SET_NLINK, SET_PARENT } kind;
    uint64_t parent, ino, value;
    const char *name;
};

static int damage_txn(struct meta_txn *t, void *arg)
{
    struct damage *d = arg;
    struct meta_inode in;
    int rc;
    switch (d->kind) {
    case DROP_ENTRY:
        return meta_dentry_del(t, d->parent, d->name);
    case ADD_ENTRY:
        return meta_dentry_add(t, d->parent, d->name, d->ino, DT_REG);
    default:
        if ((rc = meta_inode_get(t, d->ino, &in)))
            return rc;
        if (d->kind == SET_NLINK)
            in.nlink = (uint32_t)d->value;
        else
            in.parent = d->value;
        return meta_inode_put(t, &in);
    }
}

static void damage(struct fx *f, struct damage d)
{
    assert_int_equal(meta_store_write(f->s, NULL, damage_txn, &d), 0);
}

static struct meta_fsck_report fsck(struct fx *f, bool repair, char *text, size_t cap)
{
    struct meta_fsck_report r = {.text = text, .text_cap = cap};
    assert_int_equal(meta_fsck(f->s, repair, &r), 0);
    return r;
}

/* ---- the walk cache (wcache.h) ---- */

static uint64_t wc_hits(struct fx *f)
{
    uint64_t hits, drops;
    meta_store_wcache_counts(f->s, &hits, &drops);
    return hits;
}

/* Walks through directories are answered from the cache, and every change
 * to what a walk sees of them shows at once: a rename, a replaced entry, an
 * rmdir and a new directory of the same name, a chmod and a chown of a
 * directory on the way, and ".." after a directory moved. */
static void test_walk_cache(void **state)
{
    struct fx *f = *state;
    struct proto_cred u = user(1000, 1000);
    mk_dir(f, &root_cred, "a", 0755);
    uint64_t b = mk_dir(f, &root_cred, "a/b", 0755);
    mk_dir(f, &root_cred, "a/b/c", 0755);
    uint64_t fi = mk_file(f, &root_cred, "a/b/c/f", 0644);
    struct proto_attr a;
    assert_int_equal(op_lookup(f, &u, "a/b/c/f", false, &a), 0);
    uint64_t h0 = wc_hits(f);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(op_lookup(f, &u, "a/b/c/f", false, &a), 0);
        assert_int_equal(a.ino, fi);
    }
    assert_true(wc_hits(f) >= h0 + 3 * 3); /* a, b and c's names or records, each time */

    /* Permission on a directory on the way. */
    assert_int_equal(op_chmod(f, &root_cred, b, 0700), 0);
    assert_int_equal(op_lookup(f, &u, "a/b/c/f", false, NULL), -EACCES);
    assert_int_equal(op_open(f, &u, "a/b/c/g", O_CREAT | O_WRONLY, 0644, NULL), -EACCES);
    assert_int_equal(op_chown(f, &root_cred, b, 1000, 1000), 0);
    assert_int_equal(op_lookup(f, &u, "a/b/c/f", false, NULL), 0);
    assert_int_equal(op_chown(f, &root_cred, b, 0, 0), 0);
    assert_int_equal(op_lookup(f, &u, "a/b/c/f", false, NULL), -EACCES);
    assert_int_equal(op_chmod(f, &root_cred, b, 0755), 0);
    assert_int_equal(op_lookup(f, &u, "a/b/c/f", false, NULL), 0);

    /* A rename of a directory on the way. */
    assert_int_equal(op_rename(f, &root_cred, "a/b", "a/b2", 0, NULL), 0);
    assert_int_equal(op_lookup(f, &u, "a/b/c/f", false, NULL), -ENOENT);
    assert_int_equal(op_open(f, &root_cred, "a/b/c/g", O_CREAT | O_WRONLY, 0644, NULL), -ENOENT);
    assert_int_equal(op_lookup(f, &u, "a/b2/c/f", false, &a), 0);
    assert_int_equal(a.ino, fi);

    /* A new directory under the old name is a different one. */
    uint64_t nb = mk_dir(f, &root_cred, "a/b", 0755);
    assert_int_not_equal(nb, b);
    assert_int_equal(op_lookup(f, &u, "a/b/c/f", false, NULL), -ENOENT);
    mk_dir(f, &root_cred, "a/b/c", 0755);
    assert_int_equal(op_lookup(f, &u, "a/b/c/f", false, NULL), -ENOENT);

    /* A directory renamed over another (the entry replaced). */
    assert_int_equal(op_rmdir(f, &root_cred, "a/b/c"), 0);
    assert_int_equal(op_lookup(f, &u, "a/b/c", false, NULL), -ENOENT);
    assert_int_equal(op_rename(f, &root_cred, "a/b2", "a/b", 0, NULL), 0);
    assert_int_equal(op_lookup(f, &u, "a/b/c/f", false, &a), 0);
    assert_int_equal(a.ino, fi);
    assert_int_equal(op_lookup(f, &u, "a/b2/c/f", false, NULL), -ENOENT);

    /* ".." follows a directory that moved to another parent. */
    uint64_t x = mk_dir(f, &root_cred, "x", 0755);
    assert_int_equal(op_lookup(f, &u, "a/b/c/../..", false, &a), 0);
    assert_int_equal(a.ino, ino_of(f, "a"));
    assert_int_equal(op_rename(f, &root_cred, "a/b", "x/b", 0, NULL), 0);
    assert_int_equal(op_lookup(f, &u, "x/b/c/../..", false, &a), 0);
    assert_int_equal(a.ino, x);
    assert_int_equal(op_open(f, &root_cred, "x/b/c/../c/g", O_CREAT | O_WRONLY, 0644, NULL), 0);
    assert_int_equal(op_lookup(f, &u, "x/b/c/g", false, NULL), 0);
}

/* The cache after a restart: cold, then warmed by readers (lookups in a
 * read-only snapshot) as well as by writes. */
static void test_walk_cache_readers(void **state)
{
    struct fx *f = *state;
    mk_dir(f, &root_cred, "r", 0755);
    mk_dir(f, &root_cred, "r/s", 0755);
    uint64_t fi = mk_file(f, &root_cred, "r/s/f", 0644);
    fx_close(f);
    assert_int_equal(fx_open(f), 0);
    assert_int_equal(wc_hits(f), 0);
    struct proto_attr a;
    assert_int_equal(op_lookup(f, &root_cred, "r/s/f", false, &a), 0);
    assert_int_equal(op_lookup(f, &root_cred, "r/s/f", false, &a), 0);
    assert_int_equal(a.ino, fi);
    assert_true(wc_hits(f) > 0);
}

/* The rules that keep readers from adding what a change made false. */
static void test_wcache_rules(void **state)
{
    (void)state;
    struct wcache *c = wcache_create(64);
    assert_non_null(c);
    uint64_t child;
    struct wcache_dir d = {.ino = 7, .parent = 1, .mode = S_IFDIR | 0755}, got;

    /* A reader's fact counts only while its generation is current. */
    uint64_t g = wcache_gen(c);
    wcache_add_name(c, true, g, 1, "a", 1, 7);
    assert_true(wcache_name(c, 1, "a", 1, &child));
    assert_int_equal(child, 7);

    /* A change: nothing is used or added until the batch ends. */
    uint64_t g_before = wcache_gen(c);
    wcache_changed_name(c, 1, "a", 1);
    assert_false(wcache_name(c, 1, "a", 1, &child));
    uint64_t g_busy = wcache_gen(c);
    wcache_add_dir(c, true, g_busy, &d);
    wcache_add_dir(c, false, 0, &d);
    assert_false(wcache_peek_dir(c, 7, &got));
    wcache_batch_end(c, false);
    /* The changed fact went; a reader whose snapshot may predate the
     * commit (generation from before it) adds nothing. */
    assert_false(wcache_name(c, 1, "a", 1, &child));
    wcache_add_name(c, true, g_before, 1, "a", 1, 9);
    wcache_add_name(c, true, g_busy, 1, "a", 1, 9);
    assert_false(wcache_name(c, 1, "a", 1, &child));
    /* A reader that began after it does. */
    g = wcache_gen(c);
    wcache_add_name(c, true, g, 1, "a", 1, 9);
    assert_true(wcache_name(c, 1, "a", 1, &child));
    assert_int_equal(child, 9);

    /* A batch thrown away drops everything; long names are never kept. */
    wcache_add_dir(c, false, 0, &d);
    assert_true(wcache_dir(c, 7, &got));
    assert_int_equal(got.parent, 1);
    wcache_batch_end(c, true);
    assert_false(wcache_dir(c, 7, &got));
    assert_false(wcache_name(c, 1, "a", 1, &child));
    char longname[WCACHE_NAME_MAX + 2];
    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    wcache_add_name(c, false, 0, 1, longname, strlen(longname), 5);
    assert_false(wcache_name(c, 1, longname, strlen(longname), &child));

    /* More changes than a batch remembers: everything goes at its end. */
    wcache_add_dir(c, false, 0, &d);
    for (uint64_t i = 100; i < 200; i++)
        wcache_changed_dir(c, i);
    wcache_batch_end(c, false);
    assert_false(wcache_dir(c, 7, &got));
    wcache_destroy(c);
}

static void test_fsck(void **state)
{
    struct fx *f = *state;
    char text[8192];
    mk_dir(f, &root_cred, "d", 0755);
    mk_dir(f, &root_cred, "d/sub", 0755);
    uint64_t a = mk_file(f, &root_cred, "d/a", 0644);
    uint64_t b = mk_file(f, &root_cred, "d/b", 0644);
    mk_file(f, &root_cred, "d/c", 0644);
    assert_int_equal(op_link(f, &root_cred, b, "b2", NULL), 0);
    uint64_t d = ino_of(f, "d"), sub = ino_of(f, "d/sub");

    /* A healthy tree: nothing to say. */
    struct meta_fsck_report r = fsck(f, false, text, sizeof(text));
    assert_int_equal(r.inodes, 6);
    assert_int_equal(r.entries, 6);
    assert_int_equal(r.dangling + r.orphans + r.bad_nlink + r.bad_parent + r.corrupt, 0);
    assert_string_equal(text, "");

    /* Each kind of damage. */
    damage(f, (struct damage){.kind = DROP_ENTRY, .parent = d, .name = "a"}); /* orphan */
    damage(f, (struct damage){.kind = ADD_ENTRY, .parent = d, .name = "ghost", .ino = a + 1000});
    damage(f, (struct damage){.kind = SET_NLINK, .ino = b, .value = 5});       /* 2 entries */
    damage(f, (struct damage){.kind = SET_NLINK, .ino = d, .value = 9});       /* 1 subdir */
    damage(f, (struct damage){.kind = SET_PARENT, .ino = sub, .value = ROOT}); /* d holds it */
    r = fsck(f, false, text, sizeof(text));
    assert_int_equal(r.orphans, 1);
    assert_int_equal(r.dangling, 1);
    assert_int_equal(r.bad_nlink, 2);
    assert_int_equal(r.bad_parent, 1);
    assert_int_equal(r.fixed, 0);
    assert_non_null(strstr(text, "dangling entry 'ghost'"));
    assert_non_null(strstr(text, "orphan inode"));
    /* Without --repair nothing changed. */
    assert_int_equal(attr_of(f, b).nlink, 5);

    r = fsck(f, true, text, sizeof(text));
    assert_int_equal(r.fixed, 5);
    assert_int_equal(attr_of(f, b).nlink, 2);
    assert_int_equal(attr_of(f, d).nlink, 3);
    assert_int_equal(op_lookup(f, &root_cred, "d/ghost", false, NULL), -ENOENT);
    /* The orphan is in /lost+found under its number, whole. */
    char name[64];
    snprintf(name, sizeof(name), "lost+found/#%llx", (unsigned long long)a);
    assert_int_equal(ino_of(f, name), a);
    assert_int_equal(attr_of(f, a).nlink, 1);
    assert_int_equal(attr_of(f, ROOT).nlink, 4); /* d and the new lost+found */

    /* Clean again, sub's ".." included. */
    r = fsck(f, false, text, sizeof(text));
    assert_int_equal(r.dangling + r.orphans + r.bad_nlink + r.bad_parent + r.corrupt, 0);
    assert_string_equal(text, "");
}

/* ---- special files (MKNOD) ------------------------------------------ */

/* Each type mknod(2) makes on ext4, with its mode, device number and
 * directory entry type as stat and readdir show them. */
struct special {
    const char *name;
    uint32_t mode;
    uint64_t rdev, want_rdev;
    uint8_t dtype;
};
static const struct special specials[] = {
    {"fifo", S_IFIFO | 0640, 0, 0, DT_FIFO},
    {"chr", S_IFCHR | 0600, 0x0103, 0x0103, DT_CHR}, /* makedev(1, 3): /dev/null */
    {"blk", S_IFBLK | 0660, 0, 0, DT_BLK},           /* rdev set below */
    {"sock", S_IFSOCK | 0755, 0, 0, DT_SOCK},
    {"reg", S_IFREG | 0644, 0, 0, DT_REG},
    {"fifo2", S_IFIFO | 0644, 0x0103, 0, DT_FIFO}, /* a FIFO keeps no number */
};
#define NSPECIAL (sizeof(specials) / sizeof(specials[0]))

struct special_seen {
    uint8_t type[NSPECIAL];
    int n;
};

static void seen_special(void *arg, const struct proto_dirent *de)
{
    struct special_seen *s = arg;
    char name[PROTO_MAX_NAME + 1];
    assert_int_equal(proto_str_copy(&de->name, name, sizeof(name)), 0);
    s->n++;
    for (size_t i = 0; i < NSPECIAL; i++)
        if (!strcmp(name, specials[i].name))
            s->type[i] = de->type;
}

static void test_mknod_types(void **state)
{
    struct fx *f = *state;
    struct proto_attr a;
    uint64_t big = makedev(259, 65536 + 7); /* a number past 16 bits each */
    uint64_t dir = mk_dir(f, &root_cred, "d", 0755);
    for (size_t i = 0; i < NSPECIAL; i++) {
        const struct special *sp = &specials[i];
        char path[64];
        uint64_t rdev = S_ISBLK(sp->mode) ? big : sp->rdev;
        uint64_t want = S_ISBLK(sp->mode) ? big : sp->want_rdev;
        snprintf(path, sizeof(path), "d/%s", sp->name);
        assert_int_equal(op_mknod(f, &root_cred, path, sp->mode, rdev, &a), 0);
        assert_int_equal(a.mode, sp->mode);
        assert_int_equal(a.rdev, want);
        assert_int_equal(a.nlink, 1);
        assert_int_equal(a.size, 0);
        assert_int_equal(op_lookup(f, &root_cred, path, true, &a), 0);
        assert_int_equal(a.mode, sp->mode);
        assert_int_equal(a.rdev, want);
        assert_int_equal(attr_of(f, a.ino).rdev, want);
        assert_int_equal(op_mknod(f, &root_cred, path, S_IFIFO | 0644, 0, NULL), -EEXIST);
    }
    /* Type 0 is a regular file (mknod(2)), one with a layout like any. */
    assert_int_equal(op_mknod(f, &root_cred, "d/zero", 0644, 0, &a), 0);
    assert_int_equal(a.mode, S_IFREG | 0644);
    struct proto_getstripe_rep gs;
    assert_int_equal(op_getstripe(f, a.ino, &gs), 0);
    assert_true(gs.layout.ncomp > 0);
    /* readdir tells the types apart. */
    struct special_seen seen = {0};
    read_dir(f, dir, 4096, seen_special, NULL, &seen);
    assert_int_equal(seen.n, NSPECIAL + 1);
    for (size_t i = 0; i < NSPECIAL; i++)
        assert_int_equal(seen.type[i], specials[i].dtype);

    /* Types mknod(2) refuses; a trailing slash names a directory. */
    assert_int_equal(op_mknod(f, &root_cred, "x", S_IFDIR | 0755, 0, NULL), -EPERM);
    assert_int_equal(op_mknod(f, &root_cred, "x", S_IFLNK | 0777, 0, NULL), -EINVAL);
    assert_int_equal(op_mknod(f, &root_cred, "x", 0170000 | 0644, 0, NULL), -EINVAL);
    assert_int_equal(op_mknod(f, &root_cred, "x/", S_IFIFO | 0644, 0, NULL), -ENOENT);
    assert_int_equal(op_mknod(f, &root_cred, "missing/x", S_IFIFO | 0644, 0, NULL), -ENOENT);
    assert_int_equal(op_lookup(f, &root_cred, "x", false, NULL), -ENOENT);

    /* Kept across a restart of the store. */
    fx_close(f);
    assert_int_equal(fx_open(f), 0);
    assert_int_equal(op_lookup(f, &root_cred, "d/blk", false, &a), 0);
    assert_int_equal(a.mode, S_IFBLK | 0660);
    assert_int_equal(a.rdev, big);
    assert_int_equal(major(a.rdev), 259);
    assert_int_equal(minor(a.rdev), 65536 + 7);
}

/* Devices need CAP_MKNOD (root here), checked after the directory's
 * permission; anyone who may write a directory makes FIFOs and sockets. */
static void test_mknod_perm(void **state)
{
    struct fx *f = *state;
    struct proto_cred u = user(1000, 1000);
    struct proto_attr a;
    mk_dir(f, &root_cred, "pub", 0777);
    assert_int_equal(op_mknod(f, &u, "pub/c", S_IFCHR | 0644, 0x0103, NULL), -EPERM);
    assert_int_equal(op_mknod(f, &u, "pub/b", S_IFBLK | 0644, 0x0801, NULL), -EPERM);
    assert_int_equal(op_lookup(f, &root_cred, "pub/c", false, NULL), -ENOENT);
    assert_int_equal(op_mknod(f, &u, "pub/p", S_IFIFO | 0640, 0, &a), 0);
    assert_int_equal(a.uid, 1000);
    assert_int_equal(a.gid, 1000);
    assert_int_equal(op_mknod(f, &u, "pub/s", S_IFSOCK | 0700, 0, NULL), 0);
    /* No write permission: EACCES, also for a device. */
    assert_int_equal(op_mknod(f, &u, "p", S_IFIFO | 0644, 0, NULL), -EACCES);
    assert_int_equal(op_mknod(f, &u, "c", S_IFCHR | 0644, 0x0103, NULL), -EACCES);
    /* A setgid directory gives its group. */
    uint64_t g = mk_dir(f, &root_cred, "g", 0777);
    assert_int_equal(op_chown(f, &root_cred, g, 0, 4242), 0);
    assert_int_equal(op_chmod(f, &root_cred, g, 02777), 0);
    assert_int_equal(op_mknod(f, &u, "g/p", S_IFIFO | 0644, 0, &a), 0);
    assert_int_equal(a.gid, 4242);
    assert_int_equal(a.mode, S_IFIFO | 0644);

    /* The sticky bit: only the owner (or the directory's, or root)
     * removes or renames a special file. */
    struct proto_cred b = user(1001, 1001);
    mk_dir(f, &root_cred, "tmp", 01777);
    assert_int_equal(op_mknod(f, &u, "tmp/p", S_IFIFO | 0666, 0, NULL), 0);
    assert_int_equal(op_mknod(f, &u, "tmp/s", S_IFSOCK | 0777, 0, NULL), 0);
    assert_int_equal(op_unlink(f, &b, "tmp/p", NULL), -EPERM);
    assert_int_equal(op_rename(f, &b, "tmp/p", "tmp/q", 0, NULL), -EPERM);
    assert_int_equal(op_mknod(f, &b, "tmp/bp", S_IFIFO | 0666, 0, NULL), 0);
    assert_int_equal(op_rename(f, &b, "tmp/bp", "tmp/s", 0, NULL), -EPERM);
    assert_int_equal(op_unlink(f, &u, "tmp/p", NULL), 0);
    assert_int_equal(op_unlink(f, &root_cred, "tmp/s", NULL), 0);
    assert_int_equal(op_unlink(f, &b, "tmp/bp", NULL), 0);
}

/* What can be done to a special file: attributes, links, renames over and
 * onto it, removal; what cannot: a size, data, user xattrs. */
static void test_mknod_ops(void **state)
{
    struct fx *f = *state;
    struct proto_attr a;
    struct proto_setattr_rep sr;
    struct proto_cred u = user(1000, 1000);
    assert_int_equal(op_mknod(f, &root_cred, "p", S_IFIFO | 0644, 0, &a), 0);
    uint64_t p = a.ino;
    assert_int_equal(op_mknod(f, &root_cred, "c", S_IFCHR | 0666, 0x0105, &a), 0);
    uint64_t c = a.ino;

    /* chmod, chown, times keep the type and the number. */
    assert_int_equal(op_chmod(f, &root_cred, c, 0600), 0);
    assert_int_equal(op_chown(f, &root_cred, c, 1000, 1000), 0);
    a = attr_of(f, c);
    assert_int_equal(a.mode, S_IFCHR | 0600);
    assert_int_equal(a.uid, 1000);
    assert_int_equal(a.rdev, 0x0105);
    assert_int_equal(op_chmod(f, &u, p, 0600), -EPERM);
    assert_int_equal(op_chown(f, &root_cred, p, 1000, 1000), 0);
    assert_int_equal(op_chmod(f, &u, p, 0620), 0);
    struct proto_setattr_req tq;
    memset(&tq, 0, sizeof(tq));
    tq.cred = u;
    tq.ino = p;
    tq.valid = SETATTR_ATIME | SETATTR_MTIME;
    tq.atime_ns = 1000000000123456789ll;
    tq.mtime_ns = 1234567890987654321ll;
    assert_int_equal(meta_op_setattr(RQ(&f->ctx), &tq, &sr), 0);
    a = attr_of(f, p);
    assert_int_equal(a.mode, S_IFIFO | 0620);
    assert_int_equal(a.atime_ns, 1000000000123456789ll);
    assert_int_equal(a.mtime_ns, 1234567890987654321ll);

    /* No size: truncate(2) of a FIFO or device is EINVAL. */
    assert_int_equal(op_setattr(f, &root_cred, p, SETATTR_SIZE, 0, 0, 0, 0, NULL), -EINVAL);
    assert_int_equal(op_setattr(f, &root_cred, c, SETATTR_SIZE, 0, 0, 0, 10, NULL), -EINVAL);
    assert_int_equal(attr_of(f, p).size, 0);
    /* Nothing to open through the MDT (a mount's kernel opens them). */
    assert_int_equal(op_open(f, &root_cred, "p", O_RDONLY, 0, NULL), -ENXIO);
    assert_int_equal(op_open(f, &root_cred, "c", O_RDWR | O_TRUNC, 0, NULL), -ENXIO);
    assert_int_equal(op_open(f, &root_cred, "p", O_CREAT | O_WRONLY, 0644, NULL), -ENXIO);
    assert_int_equal(op_open(f, &root_cred, "p", O_CREAT | O_EXCL | O_WRONLY, 0644, NULL), -EEXIST);
    /* ... but permission is checked first, as open(2) does. */
    struct proto_cred other = user(1001, 1001);
    assert_int_equal(op_open(f, &other, "c", O_RDONLY, 0, NULL), -EACCES);
    /* user.* xattrs are for files and directories only (as Linux). */
    assert_int_equal(op_setxattr(f, &root_cred, p, "user.x", "v", 0), -EPERM);
    assert_int_equal(op_setxattr(f, &root_cred, p, "trusted.x", "v", 0), 0);

    /* Hard links. */
    assert_int_equal(op_link(f, &root_cred, p, "p2", &a), 0);
    assert_int_equal(a.nlink, 2);
    assert_int_equal(a.mode, S_IFIFO | 0620);
    assert_int_equal(ino_of(f, "p2"), p);
    assert_int_equal(op_link(f, &root_cred, c, "d/c", NULL), -ENOENT);

    /* Rename: plain, over a file, a file over it, onto directories. */
    uint64_t file = mk_file(f, &root_cred, "file", 0644);
    assert_int_equal(op_rename(f, &root_cred, "c", "c2", 0, NULL), 0);
    assert_int_equal(ino_of(f, "c2"), c);
    assert_int_equal(attr_of(f, c).rdev, 0x0105);
    struct proto_rename_rep rr;
    assert_int_equal(op_rename(f, &root_cred, "c2", "file", 0, &rr), 0);
    assert_int_equal(rr.replaced, file);
    assert_int_equal(rr.gone, 1);
    assert_int_equal(ino_of(f, "file"), c);
    assert_int_equal(op_getattr(f, file, NULL), -ENOENT);
    uint64_t file2 = mk_file(f, &root_cred, "file2", 0644);
    assert_int_equal(op_rename(f, &root_cred, "file2", "p2", 0, &rr), 0);
    assert_int_equal(rr.replaced, p);
    assert_int_equal(rr.gone, 0); /* p still has its other name */
    assert_int_equal(rr.destroy, 0);
    assert_int_equal(ino_of(f, "p2"), file2);
    assert_int_equal(attr_of(f, p).nlink, 1);
    mk_dir(f, &root_cred, "d", 0755);
    assert_int_equal(op_rename(f, &root_cred, "p", "d", 0, NULL), -EISDIR);
    assert_int_equal(op_rename(f, &root_cred, "d", "p", 0, NULL), -ENOTDIR);
    assert_int_equal(op_rename(f, &root_cred, "p", "file", RENAME_NOREPLACE, NULL), -EEXIST);
    assert_int_equal(op_rename(f, &root_cred, "p", "file", RENAME_EXCHANGE, NULL), 0);
    assert_int_equal(ino_of(f, "file"), p);
    assert_int_equal(ino_of(f, "p"), c);
    assert_int_equal(op_rename(f, &root_cred, "file", "d/p", 0, NULL), 0);
    assert_int_equal(op_lookup(f, &root_cred, "d/p", false, &a), 0);
    assert_int_equal(a.mode, S_IFIFO | 0620);

    /* Unlink: the last link goes, with no objects to destroy. */
    struct proto_unlink_rep ur;
    assert_int_equal(op_unlink(f, &root_cred, "d/p", &ur), 0);
    assert_int_equal(ur.gone, 1);
    assert_int_equal(ur.destroy, 0);
    assert_int_equal(op_getattr(f, p, NULL), -ENOENT);
    assert_int_equal(op_rmdir(f, &root_cred, "p"), -ENOTDIR);
    assert_int_equal(op_unlink(f, &root_cred, "p", &ur), 0);
    assert_int_equal(ur.gone, 1);
    assert_int_equal(op_getattr(f, c, NULL), -ENOENT);
}

/* fsck counts special files like any other inode and finds nothing. */
static void test_mknod_fsck(void **state)
{
    struct fx *f = *state;
    char text[4096];
    struct proto_attr a;
    mk_dir(f, &root_cred, "d", 0755);
    assert_int_equal(op_mknod(f, &root_cred, "d/p", S_IFIFO | 0644, 0, &a), 0);
    assert_int_equal(op_link(f, &root_cred, a.ino, "p2", NULL), 0);
    assert_int_equal(op_mknod(f, &root_cred, "d/c", S_IFCHR | 0644, 0x0103, NULL), 0);
    assert_int_equal(op_mknod(f, &root_cred, "d/b", S_IFBLK | 0644, 0x0801, NULL), 0);
    assert_int_equal(op_mknod(f, &root_cred, "s", S_IFSOCK | 0644, 0, NULL), 0);
    struct meta_fsck_report r = fsck(f, false, text, sizeof(text));
    assert_int_equal(r.inodes, 6);
    assert_int_equal(r.entries, 6);
    assert_int_equal(r.dangling + r.orphans + r.bad_nlink + r.bad_parent + r.corrupt, 0);
    assert_string_equal(text, "");
}

/* ---- data repositories on S3 (hsm.h) ---- */

#define REPO  42ull
#define ETAG1 "\"etag-1\""
#define ETAG2 "\"etag-2\""

static int op_hsm_set(struct fx *f, const struct proto_cred *c, uint64_t ino, uint8_t op,
                      const char *key, const char *etag, uint64_t size, int64_t mtime,
                      struct proto_hsm_set_rep *rep)
{
    struct proto_hsm_set_req q;
    static __thread struct proto_hsm_set_rep scratch;
    memset(&q, 0, sizeof(q));
    q.cred = *c;
    q.ino = ino;
    q.op = op;
    q.repo = REPO;
    q.key = proto_str_c(key);
    q.etag = proto_str_c(etag);
    q.size = size;
    q.mtime_ns = mtime;
    if (!rep)
        rep = &scratch;
    memset(rep, 0, sizeof(*rep));
    return meta_op_hsm_set(RQ(&f->ctx), &q, rep);
}

/* HSM_GET's state of ino (must succeed); key, when asked, as a C string. */
static uint32_t hsm_state(struct fx *f, uint64_t ino, struct proto_hsm_get_rep *rep)
{
    struct proto_hsm_get_req q;
    struct proto_hsm_get_rep r;
    static char buf[META_HSM_BUF];
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.cred = user(1234, 1234);
    q.ino = ino;
    assert_int_equal(
        meta_op_hsm_get(&(struct meta_req){.ctx = &f->ctx, .buf = buf, .buf_len = sizeof(buf)}, &q,
                        &r),
        0);
    if (rep)
        *rep = r;
    return r.state;
}

static int op_import(struct fx *f, const struct proto_cred *c, const char *name, const char *key,
                     const char *etag, uint64_t size, int64_t mtime, uint64_t gen, uint8_t flags,
                     struct proto_hsm_import_rep *rep)
{
    struct proto_hsm_import_req q;
    static __thread struct proto_hsm_import_rep scratch;
    memset(&q, 0, sizeof(q));
    q.cred = *c;
    q.parent = ROOT;
    q.name = proto_str_c(name);
    q.repo = REPO;
    q.key = proto_str_c(key);
    q.etag = proto_str_c(etag);
    q.size = size;
    q.mtime_ns = mtime;
    q.mode = 0644;
    q.gen = gen;
    q.flags = flags;
    if (!rep)
        rep = &scratch;
    memset(rep, 0, sizeof(*rep));
    return meta_op_hsm_import(RQ(&f->ctx), &q, rep);
}

/* A writer's SETSIZE with its last write's mtime. */
static int op_setsize_m(struct fx *f, uint64_t ino, uint64_t size, int64_t mtime)
{
    struct proto_setsize_req q;
    struct proto_setsize_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.ino = ino;
    q.size = size;
    q.mtime_ns = mtime;
    return meta_op_setsize(RQ(&f->ctx), &q, &r);
}

static void released_counts(struct fx *f, uint64_t *bytes, uint64_t *files)
{
    assert_int_equal(meta_store_released(f->s, bytes, files), 0);
}

/* A file of 1000 bytes written by u at mtime 5 s, archived as key "k". */
static uint64_t archived_file(struct fx *f, const struct proto_cred *u, const char *path)
{
    uint64_t ino = mk_file(f, u, path, 0644);
    assert_int_equal(op_setsize_m(f, ino, 1000, 5000000000ll), 0);
    assert_int_equal(op_hsm_set(f, u, ino, HSM_OP_ARCHIVED, "k", ETAG1, 1000, 5000000000ll, NULL),
                     0);
    return ino;
}

/* Archive, dirty, release and restore, and who may. */
static void test_hsm_states(void **state)
{
    struct fx *f = *state;
    assert_int_equal(op_chmod(f, &root_cred, ROOT, 0777), 0);
    struct proto_cred u = user(1000, 1000), other = user(1001, 1001);
    uint64_t ino = mk_file(f, &u, "f", 0644);
    struct proto_hsm_get_rep g;
    assert_int_equal(hsm_state(f, ino, &g), 0);
    assert_int_equal(g.repo, 0);
    assert_int_equal(op_setsize_m(f, ino, 1000, 5000000000ll), 0);
    /* Not archived: nothing to release. */
    assert_int_equal(op_hsm_set(f, &u, ino, HSM_OP_RELEASE, "", "", 0, 0, NULL), -EPERM);
    /* The file changed during the copy. */
    assert_int_equal(op_hsm_set(f, &u, ino, HSM_OP_ARCHIVED, "k", ETAG1, 999, 5000000000ll, NULL),
                     -EBUSY);
    assert_int_equal(op_hsm_set(f, &u, ino, HSM_OP_ARCHIVED, "k", ETAG1, 1000, 1, NULL), -EBUSY);
    /* Another user's file: no. */
    assert_int_equal(
        op_hsm_set(f, &other, ino, HSM_OP_ARCHIVED, "k", ETAG1, 1000, 5000000000ll, NULL), -EPERM);
    assert_int_equal(op_hsm_set(f, &u, ino, HSM_OP_ARCHIVED, "k", ETAG1, 1000, 5000000000ll, NULL),
                     0);
    assert_int_equal(hsm_state(f, ino, &g), HSM_EXISTS | HSM_ARCHIVED);
    assert_int_equal(g.repo, REPO);
    assert_int_equal(g.arch_size, 1000);
    assert_int_equal(g.key.len, 1);
    assert_memory_equal(g.etag.p, ETAG1, strlen(ETAG1));
    assert_int_equal(op_hsm_set(f, &other, ino, HSM_OP_RELEASE, "", "", 0, 0, NULL), -EPERM);

    /* Written after the archive (another mtime): dirty, not releasable. */
    assert_int_equal(op_setsize_m(f, ino, 1000, 6000000000ll), 0);
    assert_int_equal(hsm_state(f, ino, NULL), HSM_EXISTS | HSM_ARCHIVED | HSM_DIRTY);
    assert_int_equal(op_hsm_set(f, &u, ino, HSM_OP_RELEASE, "", "", 0, 0, NULL), -EPERM);
    /* Archived again, as it is now: clean. */
    assert_int_equal(op_hsm_set(f, &u, ino, HSM_OP_ARCHIVED, "k", ETAG2, 1000, 6000000000ll, NULL),
                     0);
    assert_int_equal(hsm_state(f, ino, NULL), HSM_EXISTS | HSM_ARCHIVED);

    /* Release: the layout says so, to every opener. */
    struct proto_hsm_set_rep sr;
    assert_int_equal(op_hsm_set(f, &u, ino, HSM_OP_RELEASE, "", "", 0, 0, &sr), 0);
    assert_int_equal(sr.state, HSM_EXISTS | HSM_ARCHIVED | HSM_RELEASED);
    assert_true(layout_released(&sr.layout));
    struct proto_open_rep o;
    assert_int_equal(op_open(f, &u, "f", O_RDONLY, 0, &o), 0);
    assert_true(layout_released(&o.layout));
    assert_int_equal(o.attr.size, 1000);
    assert_int_equal(op_hsm_set(f, &u, ino, HSM_OP_RELEASE, "", "", 0, 0, NULL), 0); /* again */
    uint64_t bytes, files;
    released_counts(f, &bytes, &files);
    assert_int_equal(bytes, 1000);
    assert_int_equal(files, 1);
    /* A restore of another version of the object is stale. */
    assert_int_equal(op_hsm_set(f, &u, ino, HSM_OP_RESTORED, "", ETAG1, 0, 0, NULL), -ESTALE);
    assert_int_equal(op_hsm_set(f, &u, ino, HSM_OP_RESTORED, "", ETAG2, 0, 0, NULL), 0);
    assert_int_equal(op_open(f, &u, "f", O_RDONLY, 0, &o), 0);
    assert_false(layout_released(&o.layout));
    assert_int_equal(hsm_state(f, ino, NULL), HSM_EXISTS | HSM_ARCHIVED);
    released_counts(f, &bytes, &files);
    assert_int_equal(bytes + files, 0);
    /* Lost, then archived again: no longer lost. */
    assert_int_equal(op_hsm_set(f, &u, ino, HSM_OP_LOST, "", ETAG1, 0, 0, NULL), -ESTALE);
    assert_int_equal(op_hsm_set(f, &u, ino, HSM_OP_LOST, "", ETAG2, 0, 0, NULL), 0);
    assert_int_equal(hsm_state(f, ino, NULL), HSM_EXISTS | HSM_ARCHIVED | HSM_LOST);
    assert_int_equal(op_hsm_set(f, &u, ino, HSM_OP_RELEASE, "", "", 0, 0, NULL), -EPERM);
    assert_int_equal(
        op_hsm_set(f, &root_cred, ino, HSM_OP_ARCHIVED, "k", ETAG2, 1000, 6000000000ll, NULL), 0);
    assert_int_equal(hsm_state(f, ino, NULL), HSM_EXISTS | HSM_ARCHIVED);
    /* Directories have no HSM state to set. */
    mk_dir(f, &root_cred, "d", 0755);
    assert_int_equal(
        op_hsm_set(f, &root_cred, ino_of(f, "d"), HSM_OP_ARCHIVED, "k", ETAG1, 0, 0, NULL),
        -EINVAL);
}

/* Size changes of a released file: to 0 makes it local (and dirty), any
 * other is refused until the client restores it. */
static void test_hsm_released_sizes(void **state)
{
    struct fx *f = *state;
    assert_int_equal(op_chmod(f, &root_cred, ROOT, 0777), 0);
    struct proto_cred u = user(1000, 1000);
    uint64_t a = archived_file(f, &u, "a"), b = archived_file(f, &u, "b");
    assert_int_equal(op_hsm_set(f, &u, a, HSM_OP_RELEASE, "", "", 0, 0, NULL), 0);
    assert_int_equal(op_hsm_set(f, &u, b, HSM_OP_RELEASE, "", "", 0, 0, NULL), 0);
    assert_int_equal(op_setsize_m(f, a, 2000, 0), -EBUSY);
    assert_int_equal(op_setattr(f, &u, a, SETATTR_SIZE, 0, 0, 0, 10, NULL), -EBUSY);
    assert_int_equal(attr_of(f, a).size, 1000);
    uint64_t bytes, files;
    released_counts(f, &bytes, &files);
    assert_int_equal(bytes, 2000);
    assert_int_equal(files, 2);

    struct proto_open_rep o;
    assert_int_equal(op_open(f, &u, "a", O_WRONLY | O_TRUNC, 0, &o), 0);
    assert_false(layout_released(&o.layout));
    assert_int_equal(o.attr.size, 0);
    assert_int_equal(hsm_state(f, a, NULL), HSM_EXISTS | HSM_ARCHIVED | HSM_DIRTY);
    struct proto_setattr_rep sr;
    assert_int_equal(op_setattr(f, &u, b, SETATTR_SIZE, 0, 0, 0, 0, &sr), 0);
    assert_false(layout_released(&sr.layout));
    assert_int_equal(hsm_state(f, b, NULL), HSM_EXISTS | HSM_ARCHIVED | HSM_DIRTY);
    released_counts(f, &bytes, &files);
    assert_int_equal(bytes + files, 0);
    /* Local again: written as any file. */
    assert_int_equal(op_setsize_m(f, a, 10, 0), 0);
}

/* The released counters follow a released file's removal; its record goes
 * with it. */
static void test_hsm_unlink_released(void **state)
{
    struct fx *f = *state;
    assert_int_equal(op_chmod(f, &root_cred, ROOT, 0777), 0);
    struct proto_cred u = user(1000, 1000);
    uint64_t a = archived_file(f, &u, "a");
    archived_file(f, &u, "b");
    assert_int_equal(op_hsm_set(f, &u, a, HSM_OP_RELEASE, "", "", 0, 0, NULL), 0);
    assert_int_equal(op_import(f, &root_cred, "c", "c", ETAG1, 300, 1, 1, 0, NULL), 0);
    uint64_t bytes, files;
    released_counts(f, &bytes, &files);
    assert_int_equal(bytes, 1300);
    assert_int_equal(files, 2);
    assert_int_equal(op_unlink(f, &u, "a", NULL), 0);
    assert_int_equal(op_unlink(f, &u, "b", NULL), 0);
    released_counts(f, &bytes, &files);
    assert_int_equal(bytes, 300);
    assert_int_equal(files, 1);
    assert_int_equal(op_rename(f, &root_cred, "c", "c2", 0, NULL), 0);
    assert_int_equal(op_unlink(f, &root_cred, "c2", NULL), 0);
    released_counts(f, &bytes, &files);
    assert_int_equal(bytes + files, 0);
    char text[4096];
    struct meta_fsck_report r = fsck(f, false, text, sizeof(text));
    assert_int_equal(r.dangling + r.orphans + r.bad_nlink + r.bad_parent + r.corrupt, 0);
}

static int op_reap(struct fx *f, const struct proto_cred *c, uint8_t op, uint64_t arg,
                   uint64_t age_ms, struct proto_hsm_reap_rep *r)
{
    struct proto_hsm_reap_req q;
    memset(&q, 0, sizeof(q));
    memset(r, 0, sizeof(*r));
    q.cred = *c;
    q.op = op;
    if (op == HSM_REAP_LIST)
        q.repo = arg;
    else
        q.ino = arg;
    q.age_ms = age_ms;
    return meta_op_hsm_reap(RQ(&f->ctx), &q, r);
}

/* How many tombstones the MDT holds. */
static uint64_t gone_count(struct fx *f)
{
    static uint8_t buf[META_GONE_BUF];
    struct proto_hsm_gone_req q;
    struct proto_hsm_gone_rep r;
    memset(&q, 0, sizeof(q));
    q.cred = root_cred;
    q.op = HSM_GONE_LIST;
    q.max = HSM_GONE_MAX;
    assert_int_equal(
        meta_op_hsm_gone(&(struct meta_req){.ctx = &f->ctx, .buf = buf, .buf_len = sizeof(buf)}, &q,
                         &r),
        0);
    return r.count;
}

/* Import: a new name, then the same object, a changed one, and names
 * that are not the repository's to change. */
static void test_hsm_import(void **state)
{
    struct fx *f = *state;
    struct proto_cred u = user(1000, 1000);
    struct proto_hsm_import_rep r;
    assert_int_equal(op_import(f, &u, "x", "p/x", ETAG1, 4096, 7000000000ll, 1, 0, &r), -EACCES);
    assert_int_equal(op_import(f, &root_cred, "a/b", "p/x", ETAG1, 1, 1, 1, 0, &r), -EINVAL);
    assert_int_equal(op_import(f, &root_cred, "x", "", ETAG1, 1, 1, 1, 0, &r), -EINVAL);
    assert_int_equal(op_import(f, &root_cred, "x", "p/x", ETAG1, 4096, 7000000000ll, 1, 0, &r), 0);
    assert_int_equal(r.result, HSM_IMPORTED);
    uint64_t x = r.attr.ino;
    assert_int_equal(r.attr.size, 4096);
    assert_int_equal(r.attr.mtime_ns, 7000000000ll);
    assert_int_equal(r.attr.atime_ns, 7000000000ll);
    assert_int_equal(r.attr.mode, S_IFREG | 0644);
    assert_true(layout_released(&r.layout));
    struct proto_hsm_get_rep g;
    assert_int_equal(hsm_state(f, x, &g), HSM_EXISTS | HSM_ARCHIVED | HSM_RELEASED);
    assert_int_equal(g.gen, 1);
    assert_int_equal(g.arch_size, 4096);
    assert_memory_equal(g.key.p, "p/x", 3);
    struct proto_open_rep o;
    assert_int_equal(op_open(f, &u, "x", O_RDONLY, 0, &o), 0);
    assert_true(layout_released(&o.layout));

    /* The same object: only stamped. */
    assert_int_equal(op_import(f, &root_cred, "x", "p/x", ETAG1, 4096, 7000000000ll, 2, 0, &r), 0);
    assert_int_equal(r.result, HSM_UNCHANGED);
    assert_int_equal(r.attr.ino, x);
    assert_int_equal(hsm_state(f, x, &g), HSM_EXISTS | HSM_ARCHIVED | HSM_RELEASED);
    assert_int_equal(g.gen, 2);
    /* Changed, but not asked to take changes: kept. */
    assert_int_equal(op_import(f, &root_cred, "x", "p/x", ETAG2, 10, 8000000000ll, 3, 0, &r), 0);
    assert_int_equal(r.result, HSM_KEPT);
    /* Changed, taken: the name takes a new inode for the new object,
     * released; the old one stays, nameless, for its readers. */
    assert_int_equal(op_chmod(f, &root_cred, x, 0640), 0);
    assert_int_equal(
        op_import(f, &root_cred, "x", "p/x", ETAG2, 10, 8000000000ll, 3, HSM_IMPORT_CHANGED, &r),
        0);
    assert_int_equal(r.result, HSM_UPDATED);
    uint64_t y = r.attr.ino;
    assert_true(y != x);
    assert_int_equal(ino_of(f, "x"), y);
    assert_int_equal(r.attr.size, 10);
    assert_int_equal(r.attr.mode, S_IFREG | 0640);
    assert_true(layout_released(&r.layout));
    assert_int_equal(hsm_state(f, y, &g), HSM_EXISTS | HSM_ARCHIVED | HSM_RELEASED);
    assert_memory_equal(g.etag.p, ETAG2, strlen(ETAG2));
    struct proto_attr old = attr_of(f, x);
    assert_int_equal(old.nlink, 0);
    assert_int_equal(old.size, 4096);
    assert_int_equal(hsm_state(f, x, &g), HSM_EXISTS | HSM_ARCHIVED | HSM_RELEASED);
    assert_memory_equal(g.etag.p, ETAG1, strlen(ETAG1));
    /* Its readers may bring it back; no new name (a writer is refused:
     * its data would go at the reaping). */
    assert_int_equal(op_intent(f, &root_cred, x, UINT64_MAX, NULL), 0);
    assert_int_equal(op_link(f, &root_cred, x, "x-again", NULL), -ENOENT);
    uint64_t bytes, files;
    released_counts(f, &bytes, &files);
    assert_int_equal(bytes, 4096 + 10);
    assert_int_equal(files, 2);
    char text[4096];
    struct meta_fsck_report fr = fsck(f, false, text, sizeof(text));
    assert_int_equal(fr.dangling + fr.orphans + fr.bad_nlink + fr.corrupt, 0);
    assert_int_equal(fr.pending, 1);

    /* Reaped once old enough, by root only, with no tombstone. */
    struct proto_hsm_reap_rep rr;
    assert_int_equal(op_reap(f, &u, HSM_REAP_LIST, 0, 0, &rr), -EPERM);
    assert_int_equal(op_reap(f, &root_cred, HSM_REAP_LIST, 0, 3600000, &rr), 0);
    assert_int_equal(rr.ino, 0);
    assert_int_equal(op_reap(f, &root_cred, HSM_REAP_LIST, REPO + 1, 0, &rr), 0);
    assert_int_equal(rr.ino, 0);
    assert_int_equal(op_reap(f, &root_cred, HSM_REAP_LIST, REPO, 0, &rr), 0);
    assert_int_equal(rr.ino, x);
    assert_int_equal(rr.layout.ncomp, 1);
    assert_int_equal(op_reap(f, &root_cred, HSM_REAP_DROP, y, 0, &rr), -ENOENT);
    assert_int_equal(op_reap(f, &root_cred, HSM_REAP_DROP, x, 0, &rr), 0);
    assert_int_equal(op_reap(f, &root_cred, HSM_REAP_DROP, x, 0, &rr), -ENOENT);
    assert_int_equal(op_reap(f, &root_cred, HSM_REAP_LIST, 0, 0, &rr), 0);
    assert_int_equal(rr.ino, 0);
    released_counts(f, &bytes, &files);
    assert_int_equal(bytes, 10);
    assert_int_equal(files, 1);
    assert_int_equal(gone_count(f), 0);
    fr = fsck(f, false, text, sizeof(text));
    assert_int_equal(fr.dangling + fr.orphans + fr.bad_nlink + fr.corrupt + fr.pending, 0);

    /* Restored, then changed again: the old inode keeps its objects. */
    x = y;
    assert_int_equal(op_hsm_set(f, &root_cred, x, HSM_OP_RESTORED, "", ETAG2, 0, 0, NULL), 0);
    assert_int_equal(
        op_import(f, &root_cred, "x", "p/x", ETAG1, 20, 9000000000ll, 4, HSM_IMPORT_CHANGED, &r),
        0);
    assert_int_equal(r.result, HSM_UPDATED);
    assert_true(r.attr.ino != x);
    struct proto_getstripe_rep gs;
    assert_int_equal(op_getstripe(f, x, &gs), 0);
    assert_false(layout_released(&gs.layout));
    assert_int_equal(op_reap(f, &root_cred, HSM_REAP_LIST, 0, 0, &rr), 0);
    assert_int_equal(rr.ino, x);
    assert_int_equal(rr.objects, 1);
    x = r.attr.ino;
    released_counts(f, &bytes, &files);
    assert_int_equal(bytes, 20);
    assert_int_equal(files, 1);

    /* Hard-linked: the other name would go on naming the old data. */
    assert_int_equal(op_hsm_set(f, &root_cred, x, HSM_OP_RESTORED, "", ETAG1, 0, 0, NULL), 0);
    assert_int_equal(op_link(f, &root_cred, x, "x2", NULL), 0);
    assert_int_equal(
        op_import(f, &root_cred, "x", "p/x", ETAG2, 20, 9000000000ll, 5, HSM_IMPORT_CHANGED, &r),
        0);
    assert_int_equal(r.result, HSM_KEPT);
    assert_int_equal(op_unlink(f, &root_cred, "x2", NULL), 0);

    /* Dirty here: kept. */
    assert_int_equal(op_setsize_m(f, x, 30, 0), 0);
    assert_int_equal(
        op_import(f, &root_cred, "x", "p/x", ETAG2, 20, 9000000000ll, 5, HSM_IMPORT_CHANGED, &r),
        0);
    assert_int_equal(r.result, HSM_KEPT);
    assert_int_equal(attr_of(f, x).size, 30);
    /* Not from the repository, not a file: kept. */
    mk_file(f, &root_cred, "local", 0644);
    mk_dir(f, &root_cred, "dir", 0755);
    assert_int_equal(
        op_import(f, &root_cred, "local", "local", ETAG1, 5, 1, 5, HSM_IMPORT_CHANGED, &r), 0);
    assert_int_equal(r.result, HSM_KEPT);
    assert_int_equal(attr_of(f, r.attr.ino).size, 0);
    assert_int_equal(op_import(f, &root_cred, "dir", "dir", ETAG1, 5, 1, 5, 0, &r), 0);
    assert_int_equal(r.result, HSM_KEPT);
    /* Another key under the same name: not this object's file. */
    assert_int_equal(op_import(f, &root_cred, "x", "p/y", ETAG2, 20, 1, 5, HSM_IMPORT_CHANGED, &r),
                     0);
    assert_int_equal(r.result, HSM_KEPT);
    /* An imported file in a user's directory belongs to the importer. */
    mk_dir(f, &root_cred, "home", 0777);
    struct proto_hsm_import_req q;
    memset(&q, 0, sizeof(q));
    q.cred = u;
    q.parent = ino_of(f, "home");
    q.name = proto_str_c("mine");
    q.repo = REPO;
    q.key = proto_str_c("mine");
    q.etag = proto_str_c(ETAG1);
    q.mode = 0600;
    assert_int_equal(meta_op_hsm_import(RQ(&f->ctx), &q, &r), 0);
    assert_int_equal(r.attr.uid, 1000);
    assert_int_equal(r.attr.mode, S_IFREG | 0600);
}

/* The HSM record is the store's: no user sees or changes it. */
static void test_hsm_xattr_hidden(void **state)
{
    struct fx *f = *state;
    assert_int_equal(op_chmod(f, &root_cred, ROOT, 0777), 0);
    struct proto_cred u = user(1000, 1000);
    uint64_t ino = archived_file(f, &u, "f");
    char buf[4096];
    assert_int_equal(op_setxattr(f, &u, ino, "user.a", "1", 0), 0);
    int n = op_listxattr(f, &root_cred, ino, buf, sizeof(buf));
    assert_int_equal(n, (int)sizeof("user.a"));
    assert_string_equal(buf, "user.a");
    assert_int_equal(op_getxattr(f, &root_cred, ino, "stria.hsm", buf, sizeof(buf)), -EOPNOTSUPP);
    assert_int_equal(op_setxattr(f, &root_cred, ino, "stria.hsm", "x", 0), -EOPNOTSUPP);
    assert_int_equal(op_removexattr(f, &root_cred, ino, "stria.hsm"), -EOPNOTSUPP);
    assert_int_equal(op_setxattr(f, &root_cred, ROOT, "stria.repo.1", "x", 0), -EOPNOTSUPP);
    assert_int_equal(hsm_state(f, ino, NULL), HSM_EXISTS | HSM_ARCHIVED);
}

static int op_repo(struct fx *f, const struct proto_cred *c, uint8_t op, uint64_t dir,
                   const char *conf, struct proto_repo_rep *r)
{
    static uint8_t buf[META_REPO_BUF];
    struct proto_repo_req q;
    memset(&q, 0, sizeof(q));
    memset(r, 0, sizeof(*r));
    q.cred = *c;
    q.op = op;
    q.dir = dir;
    q.conf = (struct proto_blob){(const uint8_t *)conf, conf ? (uint32_t)strlen(conf) : 0};
    return meta_op_repo(&(struct meta_req){.ctx = &f->ctx, .buf = buf, .buf_len = sizeof(buf)}, &q,
                        r);
}

/* The i-th entry of a listing: its dir, its conf in conf. */
static uint64_t repo_at(const struct proto_repo_rep *r, int i, char *conf, size_t cap)
{
    struct proto_dec d;
    proto_dec_init(&d, r->repos.p, r->repos.len);
    uint64_t dir = 0;
    uint32_t len = 0;
    for (int k = 0; k <= i; k++) {
        if (k)
            d.off += len;
        proto_get_U64(&d, &dir);
        proto_get_U32(&d, &len);
    }
    assert_int_equal(d.err, 0);
    assert_true(len < cap && d.off + len <= r->repos.len);
    memcpy(conf, r->repos.p + d.off, len);
    conf[len] = '\0';
    return dir;
}

static void test_repo(void **state)
{
    struct fx *f = *state;
    struct proto_cred u = user(1000, 1000);
    struct proto_repo_rep r;
    char conf[256];
    assert_int_equal(op_repo(f, &root_cred, REPO_OP_LIST, 0, NULL, &r), 0);
    assert_int_equal(r.repos.len, 0);
    assert_int_equal(op_repo(f, &u, REPO_OP_ADD, 7, "url=s3://b/p", &r), -EPERM);
    assert_int_equal(op_repo(f, &root_cred, REPO_OP_ADD, 7, "url=s3://b/p", &r), 0);
    assert_int_equal(op_repo(f, &root_cred, REPO_OP_ADD, 7, "again", &r), -EEXIST);
    assert_int_equal(op_repo(f, &root_cred, REPO_OP_ADD, 0x1000000000005ull, "two", &r), 0);
    assert_int_equal(op_repo(f, &u, REPO_OP_LIST, 0, NULL, &r), 0);
    assert_int_equal(r.repos.len, 12 + 12 + 12 + 3);
    assert_int_equal(repo_at(&r, 0, conf, sizeof(conf)), 7);
    assert_string_equal(conf, "url=s3://b/p");
    assert_int_equal(repo_at(&r, 1, conf, sizeof(conf)), 0x1000000000005ull);
    assert_string_equal(conf, "two");
    assert_int_equal(op_repo(f, &u, REPO_OP_SET, 7, "x", &r), -EPERM);
    assert_int_equal(op_repo(f, &root_cred, REPO_OP_SET, 7, "url=s3://b/q", &r), 0);
    assert_int_equal(op_repo(f, &root_cred, REPO_OP_SET, 8, "url=s3://b/q", &r), -ENOENT);
    assert_int_equal(op_repo(f, &u, REPO_OP_GET, 7, NULL, &r), 0);
    assert_int_equal(repo_at(&r, 0, conf, sizeof(conf)), 7);
    assert_string_equal(conf, "url=s3://b/q");
    assert_int_equal(op_repo(f, &u, REPO_OP_GET, 8, NULL, &r), -ENOENT);
    assert_int_equal(op_repo(f, &u, REPO_OP_DEL, 7, NULL, &r), -EPERM);
    assert_int_equal(op_repo(f, &root_cred, REPO_OP_DEL, 7, NULL, &r), 0);
    assert_int_equal(op_repo(f, &root_cred, REPO_OP_DEL, 7, NULL, &r), -ENOENT);
    assert_int_equal(op_repo(f, &u, REPO_OP_LIST, 0, NULL, &r), 0);
    assert_int_equal(repo_at(&r, 0, conf, sizeof(conf)), 0x1000000000005ull);
    assert_int_equal(r.repos.len, 12 + 3);
    /* Invisible as xattrs of the root. */
    assert_int_equal(op_listxattr(f, &root_cred, ROOT, conf, sizeof(conf)), 0);
    /* A configuration too large for one, and a list too large for a reply. */
    static char big[PROTO_MAX_REPO_CONF + 2];
    memset(big, 'c', sizeof(big) - 1);
    assert_int_equal(op_repo(f, &root_cred, REPO_OP_ADD, 9, big, &r), -E2BIG);
    big[PROTO_MAX_REPO_CONF] = '\0';
    int added = 0, rc;
    for (uint64_t d = 100; (rc = op_repo(f, &root_cred, REPO_OP_ADD, d, big, &r)) == 0; d++)
        added++;
    assert_int_equal(rc, -ENOSPC);
    assert_true(added > 200);
    assert_int_equal(op_repo(f, &u, REPO_OP_LIST, 0, NULL, &r), 0);
    assert_true(r.repos.len <= PROTO_MAX_REP_PAYLOAD - 64);

    /* Only MDT 0 keeps them. */
    char dir1[sizeof(f->dir) + 8];
    snprintf(dir1, sizeof(dir1), "%s/mdt1", f->dir);
    assert_int_equal(mkdir(dir1, 0700), 0);
    struct meta_store *s1;
    struct meta_ctx c1;
    assert_int_equal(meta_store_open(dir1, 1, MAP_SIZE, &s1), 0);
    assert_int_equal(meta_ctx_init(&c1, s1, 1, MIB, 1), 0);
    struct proto_repo_req q;
    memset(&q, 0, sizeof(q));
    q.op = REPO_OP_LIST;
    assert_int_equal(meta_op_repo(RQ(&c1), &q, &r), -EINVAL);
    meta_ctx_destroy(&c1);
    meta_store_close(s1);
}

/* A corrupt HSM record is -EUCLEAN, never a crash. */
static void test_hsm_record_codec(void **state)
{
    (void)state;
    static struct meta_hsm h, b;
    uint8_t buf[META_HSM_REC_MAX];
    memset(&h, 0, sizeof(h));
    h.state = HSM_EXISTS | HSM_ARCHIVED;
    h.repo = 9;
    h.size = 77;
    h.mtime_ns = -5;
    h.gen = 3;
    strcpy(h.key, "a/b");
    strcpy(h.etag, ETAG1);
    int len = meta_hsm_encode(&h, buf, sizeof(buf));
    assert_true(len > 0);
    assert_int_equal(meta_hsm_decode(buf, (size_t)len, &b), 0);
    assert_int_equal(b.size, 77);
    assert_string_equal(b.key, "a/b");
    assert_string_equal(b.etag, ETAG1);
    for (int n = 0; n < len; n++)
        assert_int_equal(meta_hsm_decode(buf, (size_t)n, &b), -EUCLEAN);
    buf[0] = 0;
    assert_int_equal(meta_hsm_decode(buf, (size_t)len, &b), -EUCLEAN);
    buf[0] = 1;
    buf[1] = 0xff; /* a state bit no record holds */
    assert_int_equal(meta_hsm_decode(buf, (size_t)len, &b), -EUCLEAN);
}

/* ---- tombstones (HSM_GONE) ---- */

/* A file of 1000 bytes by u at mtime 5 s, archived as key. */
static uint64_t archived_as(struct fx *f, const struct proto_cred *u, const char *path,
                            const char *key)
{
    uint64_t ino = mk_file(f, u, path, 0644);
    assert_int_equal(op_setsize_m(f, ino, 1000, 5000000000ll), 0);
    assert_int_equal(op_hsm_set(f, u, ino, HSM_OP_ARCHIVED, key, ETAG1, 1000, 5000000000ll, NULL),
                     0);
    return ino;
}

static int op_gone(struct fx *f, const struct proto_cred *c, uint8_t op, uint64_t after,
                   uint32_t max, uint64_t upto, struct proto_hsm_gone_rep *r)
{
    static uint8_t buf[META_GONE_BUF];
    struct proto_hsm_gone_req q;
    memset(&q, 0, sizeof(q));
    memset(r, 0, sizeof(*r));
    q.cred = *c;
    q.op = op;
    q.after = after;
    q.max = max;
    q.upto = upto;
    return meta_op_hsm_gone(&(struct meta_req){.ctx = &f->ctx, .buf = buf, .buf_len = sizeof(buf)},
                            &q, r);
}

/* One tombstone as LIST gives it. */
struct gone {
    uint64_t id, repo;
    char key[PROTO_MAX_S3_KEY + 1];
    char etag[64];
};

/* LIST as root after after (at most max) into v (room for cap); returns
 * how many, checked against the reply's count. */
static int gone_list(struct fx *f, uint64_t after, uint32_t max, struct gone *v, int cap,
                     bool *more)
{
    struct proto_hsm_gone_rep r;
    assert_int_equal(op_gone(f, &root_cred, HSM_GONE_LIST, after, max, 0, &r), 0);
    struct proto_dec d;
    proto_dec_init(&d, r.entries.p, r.entries.len);
    int n = 0;
    while (d.off < d.len) {
        struct proto_str k, e;
        struct gone g;
        proto_get_U64(&d, &g.id);
        proto_get_U64(&d, &g.repo);
        proto_get_STR(&d, &k);
        proto_get_STR(&d, &e);
        assert_int_equal(d.err, 0);
        assert_int_equal(proto_str_copy(&k, g.key, sizeof(g.key)), 0);
        assert_int_equal(proto_str_copy(&e, g.etag, sizeof(g.etag)), 0);
        assert_true(n == 0 || g.id > v[n - 1].id);
        if (n < cap)
            v[n] = g;
        n++;
    }
    assert_int_equal(r.count, (uint64_t)n);
    assert_true(n <= (int)max);
    if (more)
        *more = r.more;
    return n;
}

static int gone_all(struct fx *f, struct gone *v, int cap)
{
    bool more;
    int n = gone_list(f, 0, HSM_GONE_MAX, v, cap, &more);
    assert_false(more);
    return n;
}

static uint64_t gone_drop(struct fx *f, uint64_t after, uint64_t upto)
{
    struct proto_hsm_gone_rep r;
    assert_int_equal(op_gone(f, &root_cred, HSM_GONE_DROP, after, 0, upto, &r), 0);
    return r.count;
}

/* Unlink leaves a tombstone of an archived or released file's object,
 * and only when its last link goes; a file never archived leaves none. */
static void test_hsm_gone_unlink(void **state)
{
    struct fx *f = *state;
    assert_int_equal(op_chmod(f, &root_cred, ROOT, 0777), 0);
    struct proto_cred u = user(1000, 1000);
    static struct gone v[8];
    archived_as(f, &u, "a", "obj/a");
    mk_file(f, &u, "plain", 0644);
    assert_int_equal(op_unlink(f, &u, "plain", NULL), 0);
    assert_int_equal(gone_all(f, v, 8), 0);
    assert_int_equal(op_unlink(f, &u, "a", NULL), 0);
    assert_int_equal(gone_all(f, v, 8), 1);
    assert_int_equal(v[0].id, 1);
    assert_int_equal(v[0].repo, REPO);
    assert_string_equal(v[0].key, "obj/a");
    assert_string_equal(v[0].etag, ETAG1);

    /* Two links: the first unlink leaves the object to the other name. */
    uint64_t b = archived_as(f, &u, "b", "obj/b");
    assert_int_equal(op_link(f, &u, b, "b2", NULL), 0);
    assert_int_equal(op_unlink(f, &u, "b", NULL), 0);
    assert_int_equal(gone_all(f, v, 8), 1);
    assert_int_equal(op_unlink(f, &u, "b2", NULL), 0);
    assert_int_equal(gone_all(f, v, 8), 2);
    assert_int_equal(v[1].id, 2);
    assert_string_equal(v[1].key, "obj/b");

    /* Released (imported): S3 holds its only copy. Archived and changed
     * since (dirty): its object is still the repository's. */
    assert_int_equal(op_import(f, &root_cred, "c", "obj/c", ETAG2, 300, 1, 1, 0, NULL), 0);
    uint64_t d = archived_as(f, &u, "d", "obj/d");
    assert_int_equal(op_setsize_m(f, d, 2000, 6000000000ll), 0);
    assert_int_equal(hsm_state(f, d, NULL), HSM_EXISTS | HSM_ARCHIVED | HSM_DIRTY);
    assert_int_equal(op_unlink(f, &root_cred, "c", NULL), 0);
    assert_int_equal(op_unlink(f, &u, "d", NULL), 0);
    assert_int_equal(gone_all(f, v, 8), 4);
    assert_string_equal(v[2].key, "obj/c");
    assert_string_equal(v[2].etag, ETAG2);
    assert_string_equal(v[3].key, "obj/d");
    uint64_t bytes, files;
    released_counts(f, &bytes, &files);
    assert_int_equal(bytes + files, 0);

    /* Lost: S3 no longer holds its object, nothing to delete. */
    uint64_t e = archived_as(f, &u, "e", "obj/e");
    assert_int_equal(op_hsm_set(f, &u, e, HSM_OP_LOST, "", ETAG1, 0, 0, NULL), 0);
    assert_int_equal(op_unlink(f, &u, "e", NULL), 0);
    assert_int_equal(gone_all(f, v, 8), 4);

    /* Directories and symlinks have no objects. */
    mk_dir(f, &u, "dir", 0755);
    assert_int_equal(op_rmdir(f, &u, "dir"), 0);
    assert_int_equal(op_symlink(f, &u, "l", "a", NULL), 0);
    assert_int_equal(op_unlink(f, &u, "l", NULL), 0);
    assert_int_equal(gone_all(f, v, 8), 4);

    /* Root's alone, and max within 1..1000. */
    struct proto_hsm_gone_rep r;
    assert_int_equal(op_gone(f, &u, HSM_GONE_LIST, 0, 10, 0, &r), -EPERM);
    assert_int_equal(op_gone(f, &u, HSM_GONE_DROP, 0, 0, 10, &r), -EPERM);
    assert_int_equal(op_gone(f, &root_cred, HSM_GONE_LIST, 0, 0, 0, &r), -EINVAL);
    assert_int_equal(op_gone(f, &root_cred, HSM_GONE_LIST, 0, HSM_GONE_MAX + 1, 0, &r), -EINVAL);
    assert_int_equal(op_gone(f, &root_cred, 9, 0, 10, 10, &r), -EINVAL);
    char text[4096];
    struct meta_fsck_report fr = fsck(f, false, text, sizeof(text));
    assert_int_equal(fr.dangling + fr.orphans + fr.bad_nlink + fr.bad_parent + fr.corrupt, 0);
}

/* A rename over an archived file destroys it: one tombstone. A rename of
 * one, or an exchange, destroys nothing. */
static void test_hsm_gone_rename(void **state)
{
    struct fx *f = *state;
    assert_int_equal(op_chmod(f, &root_cred, ROOT, 0777), 0);
    struct proto_cred u = user(1000, 1000);
    static struct gone v[4];
    archived_as(f, &u, "a", "obj/a");
    archived_as(f, &u, "b", "obj/b");
    assert_int_equal(op_rename(f, &u, "a", "a2", 0, NULL), 0);
    assert_int_equal(op_rename(f, &u, "a2", "b", RENAME_EXCHANGE, NULL), 0);
    assert_int_equal(gone_all(f, v, 4), 0);
    mk_file(f, &u, "new", 0644);
    struct proto_rename_rep rr;
    assert_int_equal(op_rename(f, &u, "new", "b", 0, &rr), 0);
    assert_int_equal(rr.gone, 1);
    assert_int_equal(gone_all(f, v, 4), 1);
    assert_string_equal(v[0].key, "obj/a"); /* b held a's file after the exchange */
    /* Over a file with another link: nothing goes. */
    uint64_t c = archived_as(f, &u, "c", "obj/c");
    assert_int_equal(op_link(f, &u, c, "c2", NULL), 0);
    mk_file(f, &u, "new2", 0644);
    assert_int_equal(op_rename(f, &u, "new2", "c", 0, NULL), 0);
    assert_int_equal(gone_all(f, v, 4), 1);
}

/* LIST pages by after and max, and by the reply's size; DROP takes a
 * range; ids are never handed out twice. */
static void test_hsm_gone_list_drop(void **state)
{
    struct fx *f = *state;
    static struct gone v[HSM_GONE_MAX];
    char path[32], key[32];
    for (int i = 0; i < 25; i++) {
        snprintf(path, sizeof(path), "f%02d", i);
        snprintf(key, sizeof(key), "obj/%02d", i);
        archived_as(f, &root_cred, path, key);
        assert_int_equal(op_unlink(f, &root_cred, path, NULL), 0);
    }
    bool more;
    assert_int_equal(gone_list(f, 0, 10, v, 10, &more), 10);
    assert_true(more);
    assert_int_equal(v[0].id, 1);
    assert_int_equal(v[9].id, 10);
    assert_string_equal(v[9].key, "obj/09");
    assert_int_equal(gone_list(f, 10, 10, v, 10, &more), 10);
    assert_true(more);
    assert_int_equal(v[0].id, 11);
    assert_int_equal(gone_list(f, 20, 10, v, 10, &more), 5);
    assert_false(more);
    assert_int_equal(v[4].id, 25);
    assert_int_equal(gone_list(f, 25, 10, v, 10, &more), 0);
    assert_false(more);
    assert_int_equal(gone_list(f, UINT64_MAX, 10, v, 10, &more), 0);
    /* Exactly max left: no more. */
    assert_int_equal(gone_list(f, 15, 10, v, 10, &more), 10);
    assert_false(more);

    /* Every one up to 5, then 7 alone, then again (nothing). */
    assert_int_equal(gone_drop(f, 0, 5), 5);
    assert_int_equal(gone_drop(f, 6, 7), 1);
    assert_int_equal(gone_drop(f, 6, 7), 0);
    assert_int_equal(gone_drop(f, 0, 5), 0);
    assert_int_equal(gone_drop(f, 9, 9), 0);
    assert_int_equal(gone_all(f, v, HSM_GONE_MAX), 19);
    assert_int_equal(v[0].id, 6);
    assert_int_equal(v[1].id, 8);
    /* All of them: the next tombstone is 26, not 1. */
    assert_int_equal(gone_drop(f, 0, UINT64_MAX), 19);
    assert_int_equal(gone_all(f, v, HSM_GONE_MAX), 0);
    archived_as(f, &root_cred, "late", "obj/late");
    assert_int_equal(op_unlink(f, &root_cred, "late", NULL), 0);
    assert_int_equal(gone_all(f, v, HSM_GONE_MAX), 1);
    assert_int_equal(v[0].id, 26);
}

/* Keys of 1024 bytes: 1000 of them do not fit one reply, which then
 * holds as many as fit and says there are more. */
static void test_hsm_gone_reply_full(void **state)
{
    struct fx *f = *state;
    static struct gone v[HSM_GONE_MAX];
    static char key[PROTO_MAX_S3_KEY + 1];
    memset(key, 'k', PROTO_MAX_S3_KEY);
    char path[32];
    for (int i = 0; i < (int)HSM_GONE_MAX; i++) {
        snprintf(path, sizeof(path), "f%04d", i);
        archived_as(f, &root_cred, path, key);
        assert_int_equal(op_unlink(f, &root_cred, path, NULL), 0);
    }
    bool more;
    int n = gone_list(f, 0, HSM_GONE_MAX, v, HSM_GONE_MAX, &more);
    assert_true(n > 500 && n < (int)HSM_GONE_MAX);
    assert_true(more);
    assert_int_equal(strlen(v[n - 1].key), PROTO_MAX_S3_KEY);
    int m = gone_list(f, v[n - 1].id, HSM_GONE_MAX, v, HSM_GONE_MAX, &more);
    assert_int_equal(n + m, (int)HSM_GONE_MAX);
    assert_false(more);
}

static int add_many_txn(struct meta_txn *t, void *arg)
{
    int n = *(int *)arg, rc = 0;
    for (int i = 0; i < n && !rc; i++)
        rc = meta_gone_add(t, REPO, "many", ETAG1, NULL);
    return rc;
}

/* A DROP too large for one transaction (4096 a time) drops them all. */
static void test_hsm_gone_drop_many(void **state)
{
    struct fx *f = *state;
    static struct gone v[HSM_GONE_MAX];
    int n = 10000;
    assert_int_equal(meta_store_write(f->s, NULL, add_many_txn, &n), 0);
    bool more;
    assert_int_equal(gone_list(f, 9990, HSM_GONE_MAX, v, HSM_GONE_MAX, &more), 10);
    assert_int_equal(v[9].id, 10000);
    assert_int_equal(gone_drop(f, 1, 9999), 9998);
    assert_int_equal(gone_all(f, v, HSM_GONE_MAX), 2);
    assert_int_equal(v[0].id, 1);
    assert_int_equal(v[1].id, 10000);
}

/* Drop the last link of an inode, then fail: the transaction goes. */
static int drop_then_fail_txn(struct meta_txn *t, void *arg)
{
    struct meta_inode in;
    struct layout l;
    uint8_t destroy = 0, gone = 0;
    uint64_t size = 0;
    int rc = meta_inode_get(t, *(uint64_t *)arg, &in);
    if (rc || (rc = meta_drop_link(t, &in, &destroy, &l, &gone, &size)))
        return rc;
    assert_int_equal(gone, 1);
    return -EIO;
}

/* The tombstone is written with the inode's removal, or not at all. */
static void test_hsm_gone_same_txn(void **state)
{
    struct fx *f = *state;
    static struct gone v[2];
    uint64_t ino = archived_as(f, &root_cred, "a", "obj/a");
    assert_int_equal(meta_store_write(f->s, NULL, drop_then_fail_txn, &ino), -EIO);
    assert_int_equal(attr_of(f, ino).nlink, 1);
    assert_int_equal(hsm_state(f, ino, NULL), HSM_EXISTS | HSM_ARCHIVED);
    assert_int_equal(gone_all(f, v, 2), 0);
    assert_int_equal(op_unlink(f, &root_cred, "a", NULL), 0);
    assert_int_equal(gone_all(f, v, 2), 1);
    assert_int_equal(v[0].id, 1);
}

/* Tombstones and their counter are on disk: a restart keeps both. */
static void test_hsm_gone_persist(void **state)
{
    struct fx *f = *state;
    static struct gone v[4];
    archived_as(f, &root_cred, "a", "obj/a");
    archived_as(f, &root_cred, "b", "obj/b");
    assert_int_equal(op_unlink(f, &root_cred, "a", NULL), 0);
    assert_int_equal(op_unlink(f, &root_cred, "b", NULL), 0);
    assert_int_equal(gone_drop(f, 0, 1), 1);
    fx_close(f);
    assert_int_equal(fx_open(f), 0);
    assert_int_equal(gone_all(f, v, 4), 1);
    assert_int_equal(v[0].id, 2);
    assert_string_equal(v[0].key, "obj/b");
    assert_int_equal(gone_drop(f, 0, 2), 1);
    fx_close(f);
    assert_int_equal(fx_open(f), 0);
    archived_as(f, &root_cred, "c", "obj/c");
    assert_int_equal(op_unlink(f, &root_cred, "c", NULL), 0);
    assert_int_equal(gone_all(f, v, 4), 1);
    assert_int_equal(v[0].id, 3);
}

/* A corrupt tombstone is -EUCLEAN, never a crash. */
static void test_hsm_gone_codec(void **state)
{
    (void)state;
    static struct meta_gone g, b;
    uint8_t buf[META_GONE_REC_MAX];
    memset(&g, 0, sizeof(g));
    g.repo = 9;
    strcpy(g.key, "a/b");
    strcpy(g.etag, ETAG1);
    int len = meta_gone_encode(&g, buf, sizeof(buf));
    assert_true(len > 0);
    assert_int_equal(meta_gone_decode(buf, (size_t)len, &b), 0);
    assert_int_equal(b.repo, 9);
    assert_string_equal(b.key, "a/b");
    assert_string_equal(b.etag, ETAG1);
    for (int n = 0; n < len; n++)
        assert_int_equal(meta_gone_decode(buf, (size_t)n, &b), -EUCLEAN);
    buf[0] = 0;
    assert_int_equal(meta_gone_decode(buf, (size_t)len, &b), -EUCLEAN);
    memset(g.key, 'k', PROTO_MAX_S3_KEY);
    g.key[PROTO_MAX_S3_KEY] = '\0';
    assert_true(meta_gone_encode(&g, buf, sizeof(buf)) > 0);
}

int main(void)
{
    log_init("test_meta", LOG_ERROR);
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(test_create_and_open),
        T(test_name_too_long),
        T(test_open_directory),
        T(test_open_trunc),
        T(test_mkdir_rmdir),
        T(test_dir_nlink),
        T(test_perm_create_in_root_owned_dir),
        T(test_perm_read_private_file),
        T(test_perm_search),
        T(test_perm_sticky),
        T(test_perm_chmod_chown),
        T(test_perm_groups),
        T(test_rename_plain),
        T(test_rename_over_file),
        T(test_rename_type_errors),
        T(test_rename_noreplace),
        T(test_rename_exchange),
        T(test_rename_dir_parent),
        T(test_rmdir_dotdot),
        T(test_link),
        T(test_symlink),
        T(test_symlink_trailing_slash),
        T(test_symlink_create_through_dangling),
        T(test_readdir_batches),
        T(test_readdir_stable_under_changes),
        T(test_readdir_errors),
        T(test_xattr),
        T(test_readdir_plus_xattrs_absent),
        T(test_stripe_inherit),
        T(test_create_for_writing_marks),
        T(test_destroyed_many),
        T(test_stripe_errors),
        T(test_stripe_composite),
        T(test_dom),
        T(test_dom_open),
        T(test_dom_lookup),
        T(test_dom_open_served),
        T(test_dom_max),
        T(test_store_grows_ahead),
        T(test_dom_write_n),
        T(test_dom_create_numbered),
        T(test_dlg_prune),
        T(test_migrate_stale_option),
        T(test_migrate_stale),
        T(test_dom_fsck),
        T(test_stripe_offline_osts),
        T(test_alloc_pool),
        T(test_setsize_setattr),
        T(test_group_commit_concurrent),
        T(test_flat_batches),
        T(test_unlink_n),
        T(test_persistence),
        T(test_reply_records),
        T(test_reply_record_resized),
        T(test_fsck),
        T(test_mknod_types),
        T(test_mknod_perm),
        T(test_mknod_ops),
        T(test_mknod_fsck),
        T(test_walk_cache),
        T(test_walk_cache_readers),
        T(test_wcache_rules),
        T(test_hsm_states),
        T(test_hsm_released_sizes),
        T(test_hsm_unlink_released),
        T(test_hsm_import),
        T(test_hsm_xattr_hidden),
        T(test_repo),
        T(test_hsm_record_codec),
        T(test_hsm_gone_unlink),
        T(test_hsm_gone_rename),
        T(test_hsm_gone_list_drop),
        T(test_hsm_gone_reply_full),
        T(test_hsm_gone_drop_many),
        T(test_hsm_gone_same_txn),
        T(test_hsm_gone_persist),
        T(test_hsm_gone_codec),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
