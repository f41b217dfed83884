/*
 * Unit tests of directories striped over MDTs and of the operations that
 * span MDTs (meta/xmdt.c), on four real LMDB stores in one process.
 *
 * The four contexts reach each other through a peer function that calls
 * the other context's meta_op_shard directly, as metad would over the
 * network. The peer can be made to fail from the n-th step on, which is
 * what a coordinator sees when a peer dies or it is itself killed between
 * steps: the operation fails, its intent stays, and meta_xmdt_recover
 * (what a restarted stria-metad runs) must bring every MDT to "all of it
 * happened" or "none of it happened". Each test removes its directories,
 * pass or fail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/util.h"
#include "meta/ops/fsck.h"
#include "meta/ops/ops.h"
#include "meta/store/hsm_rec.h"
#include "proto/layout.h"
#include "proto/proto.h"
#include "proto/xrefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

/* A request that keeps nothing, for calling an operation of context c. */
#define RQ(c) (&(struct meta_req){.ctx = (c)})

#define NMDT     4
#define ROOT     PROTO_ROOT_INO
#define MAP_SIZE (64ull << 20)

struct fx {
    char dir[64];
    struct meta_store *s[NMDT];
    struct meta_ctx ctx[NMDT];
    int fail_after; /* steps that still succeed; -1: all do */
    uint32_t down;  /* bit k: MDT k does not answer (ECONNREFUSED) */
    int steps;
    /* Recovery beside an operation (test_recovery_beside_*): at the first
     * step of this kind, start a recovery of MDT pause_mdt in a thread and
     * wait until it has its snapshot of the intents (0: never). */
    uint8_t pause_shard, pause_xname;
    uint32_t pause_mdt;
    /* Fail the next XNAME step of this kind, once (0: none). */
    uint8_t fail_xname;
    /* At the first XNAME step of this kind, run a recovery of MDT
     * nest_mdt in this thread, as a second one beside the first. */
    uint8_t nest_xname;
    uint32_t nest_mdt;
    /* Once a SHARD step of this kind has been answered, call after (0: none). */
    uint8_t after_shard;
    void (*after)(struct fx *f);
    /* At the next SHARD step of this kind, stop at the gate until the test
     * opens it (0: none). */
    uint8_t gate_shard;
    int seals; /* SEAL steps sent to peers */
    /* At each SHARD step, another thread creates a file on MDT busy_mdt
     * and the step waits for it (busy_n of them; 0: none): a client's
     * request committed during a recovery round. */
    int busy_n;
    uint32_t busy_mdt;
    uint64_t busy_dir;
};

static void recovery_paused(struct fx *f);
static void gate_wait(void);

static int create_at(struct fx *f, uint32_t mdt, uint64_t parent, const char *name);

static void *busy_create(void *arg)
{
    struct fx *f = arg;
    char name[32];
    snprintf(name, sizeof(name), "busy%d", f->busy_n);
    assert_int_equal(create_at(f, f->busy_mdt, f->busy_dir, name), 0);
    return NULL;
}

static int peer(void *arg, uint32_t mdt, const struct proto_shard_req *q, struct proto_shard_rep *r)
{
    struct fx *f = arg;
    if (mdt >= NMDT)
        return -EHOSTUNREACH;
    if (f->down & (1u << mdt)) {
        f->steps++;
        return -ECONNREFUSED;
    }
    if (f->busy_n > 0) {
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, busy_create, f), 0);
        pthread_join(t, NULL);
        f->busy_n--;
    }
    f->steps++;
    if (q->op == PROTO_SHARD_SEAL)
        f->seals++;
    if (f->fail_after >= 0 && f->fail_after-- == 0) {
        f->fail_after = 0; /* and every step after it */
        return -ECONNREFUSED;
    }
    if (f->pause_shard && q->op == f->pause_shard) {
        f->pause_shard = 0;
        recovery_paused(f);
    }
    if (f->gate_shard && q->op == f->gate_shard) {
        f->gate_shard = 0;
        gate_wait();
    }
    int rc = meta_op_shard(RQ(&f->ctx[mdt]), q, r);
    if (f->after_shard && q->op == f->after_shard) {
        f->after_shard = 0;
        f->after(f);
    }
    return rc;
}

static int xpeer(void *arg, uint32_t mdt, const struct proto_xname_req *q,
                 struct proto_xname_rep *r)
{
    struct fx *f = arg;
    if (mdt >= NMDT)
        return -EHOSTUNREACH;
    f->steps++;
    if (f->down & (1u << mdt))
        return -ECONNREFUSED;
    if (f->fail_after >= 0 && f->fail_after-- == 0) {
        f->fail_after = 0;
        return -ECONNREFUSED;
    }
    if (f->fail_xname && q->op == f->fail_xname) {
        f->fail_xname = 0;
        return -ECONNRESET;
    }
    if (f->pause_xname && q->op == f->pause_xname) {
        f->pause_xname = 0;
        recovery_paused(f);
    }
    if (f->nest_xname && q->op == f->nest_xname) {
        f->nest_xname = 0;
        meta_xmdt_recover(&f->ctx[f->nest_mdt]);
    }
    return meta_op_xname(RQ(&f->ctx[mdt]), q, r);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    snprintf(f->dir, sizeof(f->dir), "/tmp/stria_test_xmdt.XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    f->fail_after = -1;
    for (uint32_t i = 0; i < NMDT; i++) {
        char sub[128];
        snprintf(sub, sizeof(sub), "%s/mdt%u", f->dir, i);
        if (meta_store_open(sub, i, MAP_SIZE, &f->s[i]) ||
            meta_ctx_init(&f->ctx[i], f->s[i], 1, 1u << 20, NMDT))
            return -1;
        f->ctx[i].peer = peer;
        f->ctx[i].xpeer = xpeer;
        f->ctx[i].peer_arg = f;
        struct meta_ost o = {0, true, 1ull << 40, 1ull << 41};
        meta_ctx_set_osts(&f->ctx[i], &o, 1);
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    for (uint32_t i = 0; i < NMDT; i++) {
        if (f->s[i]) {
            meta_ctx_destroy(&f->ctx[i]);
            meta_store_close(f->s[i]);
        }
    }
    nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* The MDT that holds name in directory dir (of stripe ds, inode on home). */
static uint32_t where(uint64_t ds, uint64_t dir, const char *name)
{
    return proto_ds_name_mdt(ds, proto_ino_mdt(dir), name, strlen(name));
}

static uint64_t root_ds(void)
{
    struct proto_dstripe d = {NMDT, 0, NMDT, PROTO_DS_HASH_FNV};
    return proto_ds_pack(d);
}

static int mkdir_as(struct fx *f, uint32_t uid, uint32_t mdt, uint64_t parent, const char *name,
                    int32_t count, int32_t start, struct proto_attr *out)
{
    struct proto_mkdir_req q;
    struct proto_mkdir_rep r;
    memset(&q, 0, sizeof(q));
    memset(&r, 0, sizeof(r));
    q.cred.uid = q.cred.gid = uid;
    q.parent = parent;
    q.path = proto_str_c(name);
    q.mode = 0755;
    q.dir_count = count;
    q.dir_start = start;
    int rc = meta_op_mkdir(RQ(&f->ctx[mdt]), &q, &r);
    if (out)
        *out = r.attr;
    return rc;
}

static int mkdir_at(struct fx *f, uint32_t mdt, uint64_t parent, const char *name, int32_t count,
                    int32_t start, struct proto_attr *out)
{
    return mkdir_as(f, 0, mdt, parent, name, count, start, out);
}

static int rmdir_as(struct fx *f, uint32_t uid, uint32_t mdt, uint64_t parent, const char *name)
{
    struct proto_rmdir_req q;
    struct proto_rmdir_rep r;
    memset(&q, 0, sizeof(q));
    q.cred.uid = q.cred.gid = uid;
    q.parent = parent;
    q.path = proto_str_c(name);
    return meta_op_rmdir(RQ(&f->ctx[mdt]), &q, &r);
}

static int rmdir_at(struct fx *f, uint32_t mdt, uint64_t parent, const char *name)
{
    return rmdir_as(f, 0, mdt, parent, name);
}

static void chmod_as_root(struct fx *f, uint64_t ino, uint32_t mode)
{
    struct proto_setattr_req q;
    struct proto_setattr_rep *r = calloc(1, sizeof(*r));
    memset(&q, 0, sizeof(q));
    q.ino = ino;
    q.valid = SETATTR_MODE;
    q.mode = mode;
    assert_int_equal(meta_op_setattr(RQ(&f->ctx[proto_ino_mdt(ino)]), &q, r), 0);
    free(r);
}

static int create_at(struct fx *f, uint32_t mdt, uint64_t parent, const char *name)
{
    struct proto_open_req q;
    struct proto_open_rep *r = calloc(1, sizeof(*r));
    memset(&q, 0, sizeof(q));
    q.parent = parent;
    q.path = proto_str_c(name);
    q.flags = O_CREAT | O_EXCL | O_WRONLY;
    q.mode = 0644;
    q.stripe_offset = -1;
    int rc = meta_op_open(RQ(&f->ctx[mdt]), &q, r);
    free(r);
    return rc;
}

static int getattr_at(struct fx *f, uint32_t mdt, uint64_t ino, struct proto_attr *out)
{
    struct proto_getattr_req q;
    struct proto_getattr_rep r;
    memset(&q, 0, sizeof(q));
    q.ino = ino;
    int rc = meta_op_getattr(RQ(&f->ctx[mdt]), &q, &r);
    if (out)
        *out = r.attr;
    return rc;
}

/* Inode records on every MDT together. */
static uint64_t inodes(struct fx *f)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < NMDT; i++) {
        struct proto_tstat t;
        assert_int_equal(meta_store_stats(f->s[i], &t), 0);
        n += t.inodes_used;
    }
    return n;
}

static void say_fail(void *arg, const char *line)
{
    (void)arg;
    fprintf(stderr, "across MDTs: %s", line);
}

/* Every MDT passes fsck and has no open intent, and the names and inodes
 * that span MDTs agree with each other (what stria fsck checks). */
/* fsck every MDT; lists[i] gets MDT i's cross-MDT references. With
 * clean, each MDT must be consistent and, once recovered, hold no open
 * intent. */
static void fsck_all(struct fx *f, bool clean, struct proto_blob lists[NMDT])
{
    static uint8_t refs[NMDT][1 << 20];
    for (uint32_t i = 0; i < NMDT; i++) {
        char text[4096];
        struct meta_fsck_report r = {
            .text = text, .text_cap = sizeof(text), .refs = refs[i], .refs_cap = sizeof(refs[i])};
        if (clean)
            assert_true(meta_xmdt_recover(&f->ctx[i]) >= 0);
        assert_int_equal(meta_fsck(f->s[i], false, &r), 0);
        assert_false(r.refs_full);
        lists[i] = (struct proto_blob){refs[i], (uint32_t)r.refs_len};
        if (!clean)
            continue;
        if (r.dangling + r.orphans + r.bad_nlink + r.bad_parent + r.corrupt)
            fail_msg("MDT%u: %.*s", i, (int)r.text_len, text);
        assert_int_equal(meta_xmdt_recover(&f->ctx[i]), 0);
    }
}

static void assert_clean(struct fx *f)
{
    for (uint32_t i = 0; i < NMDT; i++)
        assert_int_equal(f->ctx[i].nxbusy, 0); /* no mark left behind */
    struct proto_blob lists[NMDT];
    fsck_all(f, true, lists);
    struct xrefs_found x;
    assert_int_equal(xrefs_check(lists, NMDT, &x, say_fail, NULL, NULL), 0);
    if (x.dangling + x.orphans + x.bad_nlink + x.named_twice)
        fail_msg("across MDTs: %llu dangling, %llu orphans, %llu link counts, %llu named twice",
                 (unsigned long long)x.dangling, (unsigned long long)x.orphans,
                 (unsigned long long)x.bad_nlink, (unsigned long long)x.named_twice);
}

/* ---- tests ---------------------------------------------------------- */

static void test_root_striped(void **state)
{
    struct fx *f = *state;
    struct proto_attr a;
    assert_int_equal(getattr_at(f, 0, ROOT, &a), 0);
    assert_int_equal(a.dstripe, root_ds());
    /* Every MDT holds a shard of the root; a name goes where its hash says,
     * and only there. */
    for (int i = 0; i < 64; i++) {
        char name[32];
        snprintf(name, sizeof(name), "file%d", i);
        uint32_t m = where(root_ds(), ROOT, name);
        assert_int_equal(create_at(f, (m + 1) % NMDT, ROOT, name), -EREMOTE);
        assert_int_equal(create_at(f, m, ROOT, name), 0);
    }
    assert_clean(f);
}

static void test_striped_mkdir_rmdir(void **state)
{
    struct fx *f = *state;
    uint64_t before = inodes(f);
    uint32_t e = where(root_ds(), ROOT, "d");
    struct proto_attr d;
    assert_int_equal(mkdir_at(f, e, ROOT, "d", NMDT, 2, &d), 0);
    assert_int_equal(proto_ino_mdt(d.ino), 2);
    assert_int_equal(inodes(f), before + NMDT);
    /* Files spread over the shards, each on the MDT of its name. */
    uint32_t per[NMDT] = {0};
    for (int i = 0; i < 400; i++) {
        char name[32];
        snprintf(name, sizeof(name), "f%d", i);
        uint32_t m = where(d.dstripe, d.ino, name);
        assert_int_equal(create_at(f, m, d.ino, name), 0);
        per[m]++;
    }
    for (uint32_t i = 0; i < NMDT; i++)
        assert_true(per[i] > 60); /* 100 expected */
    /* Not empty: refused, and nothing stays sealed. */
    assert_int_equal(rmdir_at(f, e, ROOT, "d"), -ENOTEMPTY);
    assert_int_equal(create_at(f, where(d.dstripe, d.ino, "late"), d.ino, "late"), 0);
    assert_clean(f);
    /* A subdirectory on a shard counts in that shard's links. */
    uint32_t sm = where(d.dstripe, d.ino, "sub");
    assert_int_equal(mkdir_at(f, sm, d.ino, "sub", 0, -1, NULL), 0);
    assert_clean(f);
}

static void test_remote_mkdir_lookup(void **state)
{
    struct fx *f = *state;
    uint32_t e = where(root_ds(), ROOT, "r");
    uint32_t owner = (e + 1) % NMDT;
    struct proto_attr d;
    assert_int_equal(mkdir_at(f, e, ROOT, "r", 1, (int32_t)owner, &d), 0);
    assert_int_equal(proto_ino_mdt(d.ino), owner);
    assert_int_equal(d.dstripe, 0);
    /* The name's MDT says where the inode is. */
    struct proto_lookup_req q;
    struct proto_lookup_rep *r = calloc(1, sizeof(*r));
    memset(&q, 0, sizeof(q));
    q.parent = ROOT;
    q.path = proto_str_c("r");
    assert_int_equal(meta_op_lookup(RQ(&f->ctx[e]), &q, r), 0);
    assert_int_equal(r->remote, 1);
    assert_int_equal(r->attr.ino, d.ino);
    /* A path through it stops there: the client goes on. */
    q.path = proto_str_c("r/x");
    assert_int_equal(meta_op_lookup(RQ(&f->ctx[e]), &q, r), -EREMOTE);
    free(r);
    /* Its entries live with its inode. */
    assert_int_equal(create_at(f, owner, d.ino, "x"), 0);
    assert_int_equal(rmdir_at(f, e, ROOT, "r"), -ENOTEMPTY);
    struct proto_unlink_req uq;
    struct proto_unlink_rep *ur = calloc(1, sizeof(*ur));
    memset(&uq, 0, sizeof(uq));
    uq.parent = d.ino;
    uq.path = proto_str_c("x");
    assert_int_equal(meta_op_unlink(RQ(&f->ctx[owner]), &uq, ur), 0);
    free(ur);
    assert_int_equal(rmdir_at(f, e, ROOT, "r"), 0);
    assert_int_equal(getattr_at(f, owner, d.ino, NULL), -ENOENT);
    assert_clean(f);
}

/* A chmod of a striped directory reaches every shard, which checks the
 * permissions of names made there. */
static void test_attrs_reach_shards(void **state)
{
    struct fx *f = *state;
    struct proto_attr d;
    uint32_t e = where(root_ds(), ROOT, "p");
    assert_int_equal(mkdir_at(f, e, ROOT, "p", NMDT, 0, &d), 0);
    chmod_as_root(f, d.ino, 0700);
    for (uint32_t i = 0; i < NMDT; i++) {
        struct proto_attr a;
        assert_int_equal(getattr_at(f, i, d.ino, &a), 0);
        assert_int_equal(a.mode & 07777, 0700);
    }
    struct proto_open_req oq;
    struct proto_open_rep *orp = calloc(1, sizeof(*orp));
    memset(&oq, 0, sizeof(oq));
    oq.cred.uid = oq.cred.gid = 1000;
    oq.parent = d.ino;
    oq.path = proto_str_c("nope");
    oq.flags = O_CREAT | O_WRONLY;
    oq.stripe_offset = -1;
    assert_int_equal(meta_op_open(RQ(&f->ctx[where(d.dstripe, d.ino, "nope")]), &oq, orp), -EACCES);
    free(orp);
    assert_clean(f);
}

/* Kill the coordinator's view of its peers at every step of a striped
 * mkdir and rmdir: after recovery the directory is wholly there or wholly
 * gone, and fsck is clean. */
static void test_failure_at_every_step(void **state)
{
    struct fx *f = *state;
    uint32_t e = where(root_ds(), ROOT, "c");
    uint64_t base = inodes(f);
    for (int k = 0; k < 12; k++) {
        f->fail_after = k;
        struct proto_attr d;
        int rc = mkdir_at(f, e, ROOT, "c", NMDT, (int32_t)((e + 1) % NMDT), &d);
        f->fail_after = -1;
        for (uint32_t i = 0; i < NMDT; i++)
            assert_true(meta_xmdt_recover(&f->ctx[i]) >= 0);
        if (rc) {
            assert_int_equal(rc, -EIO);
            assert_int_equal(inodes(f), base); /* none of it */
            assert_clean(f);
            continue;
        }
        assert_int_equal(inodes(f), base + NMDT); /* all of it */
        assert_clean(f);
        assert_int_equal(rmdir_at(f, e, ROOT, "c"), 0);
        assert_clean(f);
    }
    /* Its removal failing at each step: sealing (phase 1) or deleting the
     * records once the name is gone (phase 2). */
    for (int k = 0; k < 8; k++) {
        struct proto_attr d;
        assert_int_equal(mkdir_at(f, e, ROOT, "c", NMDT, (int32_t)((e + 1) % NMDT), &d), 0);
        f->fail_after = k;
        int rc = rmdir_at(f, e, ROOT, "c");
        f->fail_after = -1;
        for (uint32_t i = 0; i < NMDT; i++)
            assert_true(meta_xmdt_recover(&f->ctx[i]) >= 0);
        struct proto_lookup_req q;
        struct proto_lookup_rep *r = calloc(1, sizeof(*r));
        memset(&q, 0, sizeof(q));
        q.parent = ROOT;
        q.path = proto_str_c("c");
        int lrc = meta_op_lookup(RQ(&f->ctx[e]), &q, r);
        free(r);
        if (lrc == -ENOENT) {
            assert_int_equal(inodes(f), base); /* all of it */
        } else {
            /* None of it: whole and unsealed, a name can be made in it. */
            assert_int_not_equal(rc, 0);
            assert_int_equal(lrc, 0);
            assert_int_equal(inodes(f), base + NMDT);
            uint32_t zm = where(d.dstripe, d.ino, "z");
            assert_int_equal(create_at(f, zm, d.ino, "z"), 0);
            struct proto_unlink_req uq;
            struct proto_unlink_rep *ur = calloc(1, sizeof(*ur));
            memset(&uq, 0, sizeof(uq));
            uq.parent = d.ino;
            uq.path = proto_str_c("z");
            assert_int_equal(meta_op_unlink(RQ(&f->ctx[zm]), &uq, ur), 0);
            free(ur);
            assert_int_equal(rmdir_at(f, e, ROOT, "c"), 0);
        }
        assert_clean(f);
    }
}

static int enc_mkdir(struct proto_enc *e, const void *r)
{
    return proto_enc_mkdir_rep(e, r);
}

/* A cross-MDT mkdir keeps its reply in its commit and only there: one
 * that fails at any step (and is undone) keeps none, so that a resend
 * makes it; one that succeeds keeps the reply it gave. */
static void test_reply_at_commit(void **state)
{
    struct fx *f = *state;
    uint32_t e = where(root_ds(), ROOT, "c");
    for (int k = 0; k < 12; k++) {
        struct proto_mkdir_req q;
        struct proto_mkdir_rep r;
        memset(&q, 0, sizeof(q));
        memset(&r, 0, sizeof(r));
        q.parent = ROOT;
        q.path = proto_str_c("c");
        q.mode = 0755;
        q.dir_count = NMDT;
        q.dir_start = (int32_t)((e + 1) % NMDT);
        uint64_t seq = 1000 + (uint64_t)k;
        struct meta_reply kr = {.client = 9,
                                .seq = seq,
                                .tag = 3,
                                .op = PROTO_OP_MKDIR,
                                .encode = enc_mkdir,
                                .rep = &r};
        f->fail_after = k;
        int rc = meta_op_mkdir(&(struct meta_req){.ctx = &f->ctx[e], .reply = &kr}, &q, &r);
        f->fail_after = -1;
        for (uint32_t i = 0; i < NMDT; i++)
            assert_true(meta_xmdt_recover(&f->ctx[i]) >= 0);
        uint8_t buf[4096];
        uint32_t len = 0;
        int status = 1;
        int got = meta_reply_get(f->s[e], 9, 3, seq, &status, buf, sizeof(buf), &len);
        if (rc) {
            assert_int_equal(got, 0);
            continue;
        }
        assert_int_equal(got, 1);
        assert_int_equal(status, 0);
        struct proto_mkdir_rep k2;
        struct proto_dec d;
        proto_dec_init(&d, buf, len);
        assert_int_equal(proto_dec_mkdir_rep(&d, &k2), 0);
        assert_int_equal(k2.attr.ino, r.attr.ino);
        assert_int_equal(k2.attr.dstripe, r.attr.dstripe);
        for (uint32_t i = 0; i < NMDT; i++)
            if (i != e)
                assert_int_equal(
                    meta_reply_get(f->s[i], 9, 3, seq, &status, buf, sizeof(buf), &len), 0);
        assert_int_equal(rmdir_at(f, e, ROOT, "c"), 0);
    }
}
/* A name of the root that lives on MDT m (not on avoid), made up. */
static void name_on(uint32_t m, const char *prefix, char *out, size_t len)
{
    for (int i = 0;; i++) {
        snprintf(out, len, "%s%d", prefix, i);
        if (where(root_ds(), ROOT, out) == m)
            return;
    }
}

static int rename_at(struct fx *f, const char *from, const char *to, struct proto_rename_rep *r)
{
    struct proto_rename_req q;
    memset(&q, 0, sizeof(q));
    memset(r, 0, sizeof(*r));
    q.sparent = q.dparent = ROOT;
    q.spath = proto_str_c(from);
    q.dpath = proto_str_c(to);
    q.dmdt = where(root_ds(), ROOT, to);
    return meta_op_rename(RQ(&f->ctx[where(root_ds(), ROOT, from)]), &q, r);
}

/* What a name of the root holds: its inode number, 0 if none. */
static uint64_t holds(struct fx *f, const char *name)
{
    struct proto_lookup_req q;
    struct proto_lookup_rep *r = calloc(1, sizeof(*r));
    memset(&q, 0, sizeof(q));
    q.parent = ROOT;
    q.path = proto_str_c(name);
    int rc = meta_op_lookup(RQ(&f->ctx[where(root_ds(), ROOT, name)]), &q, r);
    uint64_t ino = rc == 0 ? r->attr.ino : 0;
    free(r);
    assert_true(rc == 0 || rc == -ENOENT);
    return ino;
}

static uint64_t create_file(struct fx *f, const char *name)
{
    assert_int_equal(create_at(f, where(root_ds(), ROOT, name), ROOT, name), 0);
    return holds(f, name);
}

/* Checkpoints as training jobs write them: into a temporary name, then
 * renamed over the last one, with the two names on different MDTs. */
static void test_rename_between_mdts(void **state)
{
    struct fx *f = *state;
    char tmp[32], ckpt[32];
    name_on(1, "tmp", tmp, sizeof(tmp));
    name_on(3, "ckpt", ckpt, sizeof(ckpt));
    uint64_t base = inodes(f);
    struct proto_rename_rep *r = calloc(1, sizeof(*r));
    for (int round = 0; round < 3; round++) {
        uint64_t ino = create_file(f, tmp);
        uint64_t old = holds(f, ckpt);
        assert_int_equal(rename_at(f, tmp, ckpt, r), 0);
        assert_int_equal(holds(f, tmp), 0);
        assert_int_equal(holds(f, ckpt), ino);
        assert_int_equal(r->replaced, old);
        if (old) {
            /* The last checkpoint went with its last link. */
            assert_int_equal(r->gone, 1);
            assert_int_equal(getattr_at(f, proto_ino_mdt(old), old, NULL), -ENOENT);
        }
        assert_int_equal(inodes(f), base + 1);
        assert_clean(f);
    }
    /* Renaming onto itself does nothing; RENAME_NOREPLACE onto a name is EEXIST. */
    uint64_t ino = holds(f, ckpt);
    create_file(f, tmp);
    struct proto_rename_req q;
    memset(&q, 0, sizeof(q));
    q.sparent = q.dparent = ROOT;
    q.spath = proto_str_c(tmp);
    q.dpath = proto_str_c(ckpt);
    q.dmdt = 3;
    q.flags = RENAME_NOREPLACE;
    assert_int_equal(meta_op_rename(RQ(&f->ctx[1]), &q, r), -EEXIST);
    assert_int_equal(holds(f, ckpt), ino);
    /* Unlink of a name whose inode is on another MDT drops the link there. */
    struct proto_unlink_req uq;
    struct proto_unlink_rep *ur = calloc(1, sizeof(*ur));
    memset(&uq, 0, sizeof(uq));
    uq.parent = ROOT;
    uq.path = proto_str_c(ckpt);
    assert_int_equal(meta_op_unlink(RQ(&f->ctx[3]), &uq, ur), 0);
    assert_int_equal(ur->gone, 1);
    assert_int_equal(getattr_at(f, proto_ino_mdt(ino), ino, NULL), -ENOENT);
    uq.path = proto_str_c(tmp);
    assert_int_equal(meta_op_unlink(RQ(&f->ctx[1]), &uq, ur), 0);
    assert_int_equal(inodes(f), base);
    free(ur);
    free(r);
    assert_clean(f);
}

static void test_link_between_mdts(void **state)
{
    struct fx *f = *state;
    char a[32], b[32];
    name_on(0, "a", a, sizeof(a));
    name_on(2, "b", b, sizeof(b));
    uint64_t ino = create_file(f, a);
    struct proto_link_req q;
    struct proto_link_rep r;
    memset(&q, 0, sizeof(q));
    q.ino = ino;
    q.dparent = ROOT;
    q.dpath = proto_str_c(b);
    assert_int_equal(meta_op_link(RQ(&f->ctx[2]), &q, &r), 0);
    assert_int_equal(r.attr.nlink, 2);
    assert_int_equal(holds(f, b), ino);
    assert_int_equal(meta_op_link(RQ(&f->ctx[2]), &q, &r), -EEXIST);
    /* A link that fails at its first step leaves the count as it was. */
    char c2[32];
    name_on(2, "c", c2, sizeof(c2));
    q.dpath = proto_str_c(c2);
    f->fail_after = 0;
    assert_int_equal(meta_op_link(RQ(&f->ctx[2]), &q, &r), -EIO);
    f->fail_after = -1;
    for (uint32_t i = 0; i < NMDT; i++)
        assert_true(meta_xmdt_recover(&f->ctx[i]) >= 0);
    struct proto_attr at;
    assert_int_equal(getattr_at(f, 0, ino, &at), 0);
    assert_int_equal(at.nlink, 2);
    assert_int_equal(holds(f, c2), 0);
    assert_clean(f);
}

/* A rename between MDTs failing at each step: afterwards the file has
 * exactly one of the two names, the replaced file is gone only if the
 * rename happened, and no link count is off. */
static void test_rename_failure_at_every_step(void **state)
{
    struct fx *f = *state;
    char src[32], dst[32];
    name_on(2, "s", src, sizeof(src));
    name_on(0, "d", dst, sizeof(dst));
    struct proto_rename_rep *r = calloc(1, sizeof(*r));
    int happened = 0, not = 0;
    for (int k = 0; k < 6; k++) {
        uint64_t base = inodes(f);
        uint64_t ino = create_file(f, src), victim = create_file(f, dst);
        f->fail_after = k;
        int rc = rename_at(f, src, dst, r);
        f->fail_after = -1;
        for (uint32_t i = 0; i < NMDT; i++)
            assert_true(meta_xmdt_recover(&f->ctx[i]) >= 0);
        uint64_t s_now = holds(f, src), d_now = holds(f, dst);
        if (s_now) {
            /* Did not happen. */
            assert_int_not_equal(rc, 0);
            assert_int_equal(s_now, ino);
            assert_int_equal(d_now, victim);
            assert_int_equal(inodes(f), base + 2);
            not ++;
        } else {
            happened++;
            assert_int_equal(d_now, ino);
            assert_int_equal(getattr_at(f, proto_ino_mdt(victim), victim, NULL), -ENOENT);
            assert_int_equal(inodes(f), base + 1);
        }
        assert_clean(f);
        /* Both names usable again: nothing stays held. */
        struct proto_unlink_req uq;
        struct proto_unlink_rep *ur = calloc(1, sizeof(*ur));
        memset(&uq, 0, sizeof(uq));
        uq.parent = ROOT;
        uq.path = proto_str_c(dst);
        assert_int_equal(meta_op_unlink(RQ(&f->ctx[0]), &uq, ur), 0);
        if (s_now) {
            uq.path = proto_str_c(src);
            assert_int_equal(meta_op_unlink(RQ(&f->ctx[2]), &uq, ur), 0);
        }
        free(ur);
        assert_int_equal(inodes(f), base);
        assert_clean(f);
    }
    /* Failing the first step stops it; failing a later one only delays it. */
    assert_true(happened > 0 && not > 0);
    free(r);
}

/* rename of name sn in directory sdir to dn in ddir, sent where a client
 * sends it (the MDT of the source name, saying the target's MDT). */
static int rename_in(struct fx *f, uint64_t sdir, uint64_t sds, const char *sn, uint64_t ddir,
                     uint64_t dds, const char *dn)
{
    struct proto_rename_req q;
    struct proto_rename_rep *r = calloc(1, sizeof(*r));
    memset(&q, 0, sizeof(q));
    q.sparent = sdir;
    q.spath = proto_str_c(sn);
    q.dparent = ddir;
    q.dpath = proto_str_c(dn);
    q.dmdt = where(dds, ddir, dn);
    int rc = meta_op_rename(RQ(&f->ctx[where(sds, sdir, sn)]), &q, r);
    free(r);
    return rc;
}

/* Directories move between MDTs, also to another parent, over an empty
 * directory, and never into their own subtree. */
static void test_directory_moves(void **state)
{
    struct fx *f = *state;
    char p[32], q[32], e[32];
    name_on(1, "p", p, sizeof(p));
    name_on(2, "q", q, sizeof(q));
    name_on(3, "e", e, sizeof(e));
    struct proto_attr dp, dq, de, sub;
    assert_int_equal(mkdir_at(f, 1, ROOT, p, 0, -1, &dp), 0);
    assert_int_equal(mkdir_at(f, 2, ROOT, q, 0, -1, &dq), 0);
    assert_int_equal(mkdir_at(f, 3, ROOT, e, 0, -1, &de), 0);
    assert_int_equal(mkdir_at(f, 1, dp.ino, "sub", 0, -1, &sub), 0);
    assert_clean(f);
    /* Between shards of the root: the name moves, the inode stays. */
    char p2[32];
    name_on(0, "p2-", p2, sizeof(p2));
    assert_int_equal(rename_in(f, ROOT, root_ds(), p, ROOT, root_ds(), p2), 0);
    assert_int_equal(holds(f, p), 0);
    assert_int_equal(holds(f, p2), dp.ino);
    assert_clean(f);
    /* Into another directory, on another MDT: its ".." follows. */
    assert_int_equal(rename_in(f, ROOT, root_ds(), p2, dq.ino, 0, "moved"), 0);
    struct proto_shard_rep r;
    assert_int_equal(meta_shard_step(RQ(&f->ctx[0]), 1, PROTO_SHARD_PARENT, 0, dp.ino, 0, &r), 0);
    assert_int_equal(r.ino, dq.ino);
    assert_clean(f);
    /* Not into its own subtree: q holds p ("moved"), which holds sub. */
    assert_int_equal(rename_in(f, ROOT, root_ds(), q, sub.ino, 0, "loop"), -EINVAL);
    assert_int_equal(rename_in(f, ROOT, root_ds(), q, dp.ino, 0, "loop"), -EINVAL);
    assert_int_equal(holds(f, q), dq.ino);
    /* Over an empty directory on another MDT, which goes; not over a full one. */
    assert_int_equal(rename_in(f, dq.ino, 0, "moved", ROOT, root_ds(), e), 0);
    assert_int_equal(getattr_at(f, 3, de.ino, NULL), -ENOENT);
    assert_int_equal(holds(f, e), dp.ino);
    char full[32];
    struct proto_attr dfull;
    name_on(3, "full", full, sizeof(full));
    assert_int_equal(mkdir_at(f, 3, ROOT, full, 0, -1, &dfull), 0);
    assert_int_equal(create_at(f, 3, dfull.ino, "inside"), 0);
    assert_int_equal(rename_in(f, ROOT, root_ds(), q, ROOT, root_ds(), full), -ENOTEMPTY);
    assert_int_equal(holds(f, q), dq.ino);
    /* Not over e, which holds p and so sub: not empty, on another MDT. */
    assert_int_equal(rename_in(f, ROOT, root_ds(), q, ROOT, root_ds(), e), -ENOTEMPTY);
    /* A directory whose inode is on another MDT is replaced when empty. */
    char rn[32];
    struct proto_attr dr;
    name_on(3, "r-", rn, sizeof(rn));
    assert_int_equal(mkdir_at(f, 3, ROOT, rn, 1, 0, &dr), 0); /* its inode on MDT 0 */
    assert_int_equal(proto_ino_mdt(dr.ino), 0);
    assert_int_equal(rename_in(f, ROOT, root_ds(), q, ROOT, root_ds(), rn), 0);
    assert_int_equal(getattr_at(f, 0, dr.ino, NULL), -ENOENT);
    assert_int_equal(holds(f, rn), dq.ino);
    assert_clean(f);
    /* And a striped one; a full striped one is refused, and nothing stays sealed. */
    char st[32], full2[32];
    struct proto_attr dst, dfull2;
    name_on(2, "st-", st, sizeof(st));
    name_on(0, "f2-", full2, sizeof(full2));
    assert_int_equal(mkdir_at(f, 2, ROOT, st, NMDT, -1, &dst), 0);
    assert_int_equal(mkdir_at(f, 0, ROOT, full2, NMDT, -1, &dfull2), 0);
    assert_int_equal(create_at(f, where(dfull2.dstripe, dfull2.ino, "in"), dfull2.ino, "in"), 0);
    assert_int_equal(rename_in(f, ROOT, root_ds(), rn, ROOT, root_ds(), full2), -ENOTEMPTY);
    assert_int_equal(create_at(f, where(dfull2.dstripe, dfull2.ino, "in2"), dfull2.ino, "in2"), 0);
    uint64_t before = inodes(f);
    assert_int_equal(rename_in(f, ROOT, root_ds(), rn, ROOT, root_ds(), st), 0);
    assert_int_equal(holds(f, st), dq.ino);
    assert_int_equal(inodes(f), before - NMDT); /* every record of the striped one went */
    for (uint32_t i = 0; i < NMDT; i++)
        assert_int_equal(getattr_at(f, i, dst.ino, NULL), -ENOENT);
    assert_clean(f);
    /* Nothing stays held or sealed: names can be made in both. */
    assert_int_equal(create_at(f, 2, dq.ino, "x"), 0);
    assert_int_equal(create_at(f, 1, sub.ino, "y"), 0);
    assert_clean(f);
    /* A striped directory renamed over an empty one on another MDT. */
    char s2[32], t2[32];
    struct proto_attr ds2, dt2;
    name_on(3, "s2-", s2, sizeof(s2));
    name_on(1, "t2-", t2, sizeof(t2));
    assert_int_equal(mkdir_at(f, 3, ROOT, s2, 2, -1, &ds2), 0);
    assert_int_equal(mkdir_at(f, 1, ROOT, t2, 0, -1, &dt2), 0);
    assert_clean(f);
    assert_int_equal(rename_in(f, ROOT, root_ds(), s2, ROOT, root_ds(), t2), 0);
    assert_int_equal(holds(f, t2), ds2.ino);
    assert_clean(f);
    assert_int_equal(rename_in(f, ROOT, root_ds(), t2, ROOT, root_ds(), t2), 0);
    assert_clean(f);
}

/* Random operations on twelve names of the root, as the chaos test runs
 * them but without faults: every MDT must stay fsck-clean. */
static void test_random_names(void **state)
{
    struct fx *f = *state;
    uint64_t rng = 12345;
    for (int i = 0; i < 4000; i++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        char a[16], b[16];
        snprintf(a, sizeof(a), "n%d", (int)(rng % 12));
        snprintf(b, sizeof(b), "n%d", (int)((rng >> 8) % 12));
        uint32_t ma = where(root_ds(), ROOT, a);
        switch ((rng >> 16) % 6) {
        case 0:
            create_at(f, ma, ROOT, a);
            break;
        case 1:
            mkdir_at(f, ma, ROOT, a, (rng >> 24) % 3 == 0 ? 2 : 0, -1, NULL);
            break;
        case 2: {
            struct proto_unlink_req uq;
            struct proto_unlink_rep *ur = calloc(1, sizeof(*ur));
            memset(&uq, 0, sizeof(uq));
            uq.parent = ROOT;
            uq.path = proto_str_c(a);
            meta_op_unlink(RQ(&f->ctx[ma]), &uq, ur);
            free(ur);
            break;
        }
        case 3:
            rmdir_at(f, ma, ROOT, a);
            break;
        default:
            rename_in(f, ROOT, root_ds(), a, ROOT, root_ds(), b);
        }
        if (i % 50 == 49)
            assert_clean(f);
    }
    assert_clean(f);
}

struct raw {
    uint64_t ino, dir;
    const char *name;
};

static int del_inode_txn(struct meta_txn *t, void *arg)
{
    return meta_inode_del(t, ((struct raw *)arg)->ino);
}

static int del_entry_txn(struct meta_txn *t, void *arg)
{
    struct raw *r = arg;
    return meta_dentry_del(t, r->dir, r->name);
}

static uint8_t fixes[NMDT][4096];
static size_t fixes_len[NMDT];

static void collect_fix(void *arg, uint32_t pos, const struct xfix *x)
{
    (void)arg;
    struct proto_enc e;
    proto_enc_init(&e, fixes[pos] + fixes_len[pos], sizeof(fixes[pos]) - fixes_len[pos]);
    xfix_put(&e, x);
    assert_int_equal(e.err, 0);
    fixes_len[pos] += e.len;
}

static struct xrefs_found check_across(struct fx *f)
{
    struct proto_blob lists[NMDT];
    fsck_all(f, false, lists);
    struct xrefs_found x;
    assert_int_equal(xrefs_check(lists, NMDT, &x, say_fail, NULL, NULL), 0);
    return x;
}

/* What no MDT sees alone: a name whose inode another MDT lost, and an
 * inode whose only name (on another MDT) was lost. */
static void test_fsck_across(void **state)
{
    struct fx *f = *state;
    char a[32], b[32], c2[32], d2[32];
    name_on(1, "a", a, sizeof(a));
    name_on(3, "b", b, sizeof(b));
    name_on(1, "c", c2, sizeof(c2));
    name_on(2, "d", d2, sizeof(d2));
    struct proto_rename_rep *r = calloc(1, sizeof(*r));
    uint64_t ia = create_file(f, a), ic = create_file(f, c2);
    assert_int_equal(rename_at(f, a, b, r), 0);   /* b on MDT 3 names ia on MDT 1 */
    assert_int_equal(rename_at(f, c2, d2, r), 0); /* d2 on MDT 2 names ic on MDT 1 */
    free(r);
    struct xrefs_found x = check_across(f);
    assert_int_equal(x.dangling + x.orphans + x.bad_nlink + x.named_twice, 0);
    struct raw gone = {ia, 0, NULL}, lost = {0, ROOT, d2};
    assert_int_equal(meta_store_write(f->s[1], NULL, del_inode_txn, &gone), 0);
    assert_int_equal(meta_store_write(f->s[2], NULL, del_entry_txn, &lost), 0);
    x = check_across(f);
    assert_int_equal(x.dangling, 1); /* b */
    assert_int_equal(x.orphans, 1);  /* ic */
    /* The repairs: the dangling name goes, the orphan joins lost+found on
     * its MDT (under a name that lives there), and then all is clean. */
    struct proto_blob lists[NMDT];
    fsck_all(f, false, lists);
    memset(fixes, 0, sizeof(fixes));
    memset(fixes_len, 0, sizeof(fixes_len));
    assert_int_equal(xrefs_check(lists, NMDT, &x, say_fail, collect_fix, NULL), 0);
    uint64_t fixed = 0;
    for (uint32_t i = 0; i < NMDT; i++) {
        char text[4096];
        struct meta_fsck_report r = {
            .text = text, .text_cap = sizeof(text), .xfixes = fixes[i], .xfixes_len = fixes_len[i]};
        assert_int_equal(meta_fsck(f->s[i], true, &r), 0);
        fixed += r.fixed;
    }
    assert_int_equal(fixed, 2);
    assert_int_equal(holds(f, b), 0);
    assert_int_equal(getattr_at(f, 1, ic, NULL), 0);
    assert_clean(f);
}

/* The rename lock outlives a restart of MDT 0, and lets go when asked. */
static void test_rename_lock_restart(void **state)
{
    struct fx *f = *state;
    assert_int_equal(meta_shard_step(RQ(&f->ctx[1]), 0, PROTO_SHARD_LOCK, 111, 0, 0, NULL), 0);
    assert_int_equal(meta_shard_step(RQ(&f->ctx[1]), 0, PROTO_SHARD_LOCK, 222, 0, 0, NULL), -EBUSY);
    /* MDT 0 restarts. */
    meta_ctx_destroy(&f->ctx[0]);
    meta_store_close(f->s[0]);
    char sub[128];
    snprintf(sub, sizeof(sub), "%s/mdt0", f->dir);
    assert_int_equal(meta_store_open(sub, 0, MAP_SIZE, &f->s[0]), 0);
    assert_int_equal(meta_ctx_init(&f->ctx[0], f->s[0], 1, 1u << 20, NMDT), 0);
    f->ctx[0].peer = peer;
    f->ctx[0].xpeer = xpeer;
    f->ctx[0].peer_arg = f;
    assert_int_equal(meta_shard_step(RQ(&f->ctx[1]), 0, PROTO_SHARD_LOCK, 222, 0, 0, NULL), -EBUSY);
    assert_int_equal(meta_shard_step(RQ(&f->ctx[1]), 0, PROTO_SHARD_UNLOCK, 111, 0, 0, NULL), 0);
    assert_int_equal(meta_shard_step(RQ(&f->ctx[1]), 0, PROTO_SHARD_LOCK, 222, 0, 0, NULL), 0);
    assert_int_equal(meta_shard_step(RQ(&f->ctx[1]), 0, PROTO_SHARD_UNLOCK, 222, 0, 0, NULL), 0);
    assert_clean(f);
}

/* Bad SHARD steps are refused without harm. */
static void test_shard_garbage(void **state)
{
    struct fx *f = *state;
    struct proto_shard_req q;
    struct proto_shard_rep r;
    memset(&q, 0, sizeof(q));
    q.op = 99;
    assert_int_equal(meta_op_shard(RQ(&f->ctx[1]), &q, &r), -EINVAL);
    q.op = PROTO_SHARD_PUT;
    uint8_t junk[16] = {2, 1, 2, 3};
    q.rec = (struct proto_blob){junk, sizeof(junk)};
    assert_int_equal(meta_op_shard(RQ(&f->ctx[1]), &q, &r), -EINVAL);
    q.op = PROTO_SHARD_DEL;
    q.ino = ROOT;
    assert_int_equal(meta_op_shard(RQ(&f->ctx[1]), &q, &r), -EBUSY); /* never the root */
    q.cred.uid = 1000;
    assert_int_equal(meta_op_shard(RQ(&f->ctx[2]), &q, &r), -EPERM);
}

/* ---- recovery beside the operations it must leave alone ---- */

/* A recovery in a thread of its own, held once it has its snapshot of the
 * intents until the test lets it go on: what the daemon's tick does when
 * it is descheduled in the middle of its scan. */
static struct paused {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stage; /* 0: not begun; 1: has its snapshot, waits; 2: goes on */
    bool started;
    struct meta_ctx *c;
    pthread_t thread;
} paused = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false, NULL, 0};

static void paused_hook(struct meta_ctx *c)
{
    pthread_mutex_lock(&paused.lock);
    if (c == paused.c && paused.stage == 0) {
        paused.stage = 1;
        pthread_cond_broadcast(&paused.cond);
        while (paused.stage != 2)
            pthread_cond_wait(&paused.cond, &paused.lock);
    }
    pthread_mutex_unlock(&paused.lock);
}

static void *paused_main(void *arg)
{
    meta_xmdt_recover(arg);
    return NULL;
}

/* From a step of the operation: the recovery starts and takes its snapshot. */
static void recovery_paused(struct fx *f)
{
    struct meta_ctx *c = &f->ctx[f->pause_mdt];
    paused.stage = 0;
    paused.c = c;
    c->recover_hook = paused_hook;
    if (pthread_create(&paused.thread, NULL, paused_main, c))
        return;
    paused.started = true;
    pthread_mutex_lock(&paused.lock);
    while (paused.stage != 1)
        pthread_cond_wait(&paused.cond, &paused.lock);
    pthread_mutex_unlock(&paused.lock);
}

/* The operation is over: the recovery reads its snapshot and ends. Whether
 * it had started. */
static bool recovery_goes_on(struct fx *f)
{
    bool started = paused.started;
    if (started) {
        pthread_mutex_lock(&paused.lock);
        paused.stage = 2;
        pthread_cond_broadcast(&paused.cond);
        pthread_mutex_unlock(&paused.lock);
        pthread_join(paused.thread, NULL);
        paused.c->recover_hook = NULL;
    }
    paused.started = false;
    f->pause_shard = f->pause_xname = 0;
    return started;
}

/* A striped mkdir whose intent a recovery saw (its snapshot taken between
 * the mkdir's steps) and read once the mkdir was over: the recovery must
 * not undo it, or its name stays without the inode (EUCLEAN, as in the
 * chaos test with seed 11492). */
static void test_recovery_beside_mkdir(void **state)
{
    struct fx *f = *state;
    uint32_t e = where(root_ds(), ROOT, "c");
    uint64_t base = inodes(f);
    f->pause_mdt = e;
    f->pause_shard = PROTO_SHARD_PUT; /* the record on the other MDT */
    struct proto_attr d;
    int rc = mkdir_at(f, e, ROOT, "c", 2, -1, &d);
    assert_true(recovery_goes_on(f));
    assert_int_equal(rc, 0);
    assert_int_equal(proto_ino_mdt(d.ino), e);
    assert_int_equal(getattr_at(f, e, d.ino, NULL), 0);
    assert_int_equal(holds(f, "c"), d.ino);
    assert_int_equal(inodes(f), base + 2);
    assert_clean(f);
    assert_int_equal(rmdir_at(f, e, ROOT, "c"), 0);
    assert_int_equal(inodes(f), base);
}

/* What recovery told the daemon around its rounds (meta_ctx.recover_*). */
static int rounds_begun, rounds_changed, rounds_ended;

static void on_begin(void *arg)
{
    (void)arg;
    rounds_begun++;
}

static void on_end(void *arg, bool changed)
{
    (void)arg;
    rounds_ended++;
    rounds_changed += changed;
}

/* A cross-MDT mkdir left open while its peers stay away is retried every
 * tick: such a round says it changed nothing (the daemon then keeps every
 * lease; revoking them each tick would send every client back to the MDT
 * every second). The round that finishes it says it changed something. */
static void test_recovery_changes_nothing_while_peers_away(void **state)
{
    struct fx *f = *state;
    uint32_t e = where(root_ds(), ROOT, "c");
    uint64_t base = inodes(f);
    f->ctx[e].recover_begin = on_begin;
    f->ctx[e].recover_end = on_end;
    rounds_begun = rounds_changed = rounds_ended = 0;
    struct proto_attr d, bd;
    assert_int_equal(mkdir_at(f, where(root_ds(), ROOT, "busy"), ROOT, "busy", 1, (int32_t)e, &bd),
                     0);
    assert_int_equal(proto_ino_mdt(bd.ino), e);
    f->fail_after = 1; /* one step, then every peer is away */
    assert_int_equal(mkdir_at(f, e, ROOT, "c", NMDT, (int32_t)((e + 1) % NMDT), &d), -EIO);
    /* Another client's creates on the same MDT commit during the rounds:
     * they are not the round's changes. */
    f->busy_mdt = e;
    f->busy_dir = bd.ino;
    f->busy_n = 3;
    for (int tick = 0; tick < 3; tick++)
        assert_true(meta_xmdt_recover(&f->ctx[e]) > 0); /* still open */
    assert_int_equal(f->busy_n, 0);
    assert_int_equal(rounds_begun, 3);
    assert_int_equal(rounds_ended, 3);
    assert_int_equal(rounds_changed, 0);
    f->fail_after = -1; /* the peers are back */
    assert_int_equal(meta_xmdt_recover(&f->ctx[e]), 0);
    assert_int_equal(rounds_ended, 4);
    assert_int_equal(rounds_changed, 1);
    assert_int_equal(inodes(f), base + 4); /* busy and its files */
    assert_clean(f);
    f->ctx[e].recover_begin = NULL;
    f->ctx[e].recover_end = NULL;
}

/* Whether a peer answers, as recovery asks it (meta_ctx.peer_up). */
static int peers_asked;
static uint32_t peer_asked_last;

static bool peer_up(void *arg, uint32_t mdt)
{
    struct fx *f = arg;
    peers_asked++;
    peer_asked_last = mdt;
    return !(f->down & (1u << mdt));
}

/* While the peer that left an operation open still does not answer, a
 * tick runs no round for it: it does not pass the write-behind gate (the
 * grant's holder would lose its grant every tick) and sends no step. The
 * peer asked about is the one that could not be reached, not another that
 * answered the round's steps with ENOENT (the shards the mkdir never made,
 * after the one that is down). Once the peer answers, the next tick
 * finishes the operation. */
static void test_recovery_waits_for_peer_without_a_round(void **state)
{
    struct fx *f = *state;
    uint32_t e = where(root_ds(), ROOT, "c");
    f->ctx[e].recover_begin = on_begin;
    f->ctx[e].recover_end = on_end;
    f->ctx[e].peer_up = peer_up;
    rounds_begun = rounds_changed = rounds_ended = peers_asked = 0;
    struct proto_attr d;
    /* Striped over every MDT from the one after e: its second member is
     * away, the first is not, nor the one after (which answers ENOENT to
     * the rollback of a shard never made). */
    uint32_t away = (e + 2) % NMDT;
    f->down = 1u << away;
    assert_int_equal(mkdir_at(f, e, ROOT, "c", NMDT, (int32_t)((e + 1) % NMDT), &d), -EIO);
    /* The first round learns which peer holds it. */
    assert_true(meta_xmdt_recover(&f->ctx[e]) > 0);
    assert_int_equal(rounds_begun, 1);
    assert_int_equal(peers_asked, 0);
    int steps = f->steps;
    for (int tick = 0; tick < 3; tick++)
        assert_true(meta_xmdt_recover(&f->ctx[e]) > 0); /* still open */
    assert_int_equal(rounds_begun, 1);
    assert_int_equal(rounds_ended, 1);
    assert_int_equal(peers_asked, 3); /* once a tick */
    assert_int_equal(peer_asked_last, away);
    assert_int_equal(f->steps, steps);
    f->down = 0; /* it is back */
    assert_int_equal(meta_xmdt_recover(&f->ctx[e]), 0);
    assert_int_equal(rounds_begun, 2);
    assert_int_equal(rounds_changed, 1);
    assert_int_equal(peers_asked, 4);
    assert_clean(f);
    f->ctx[e].recover_begin = NULL;
    f->ctx[e].recover_end = NULL;
    f->ctx[e].peer_up = NULL;
}

/* A rename between MDTs acknowledged while its target's MDT could not be
 * reached ("finishing later", phase 2), whose intent a recovery saw in
 * phase 1: the recovery finishes it, it does not roll it back (which
 * would release the target name and leave the file without a name). */
static void test_recovery_beside_rename(void **state)
{
    struct fx *f = *state;
    char tmp[32], ckpt[32];
    name_on(1, "tmp", tmp, sizeof(tmp));
    name_on(3, "ckpt", ckpt, sizeof(ckpt));
    uint64_t ino = create_file(f, tmp);
    struct proto_rename_rep *r = calloc(1, sizeof(*r));
    f->pause_mdt = 1;
    f->pause_xname = PROTO_XNAME_HOLD;  /* phase 1 */
    f->fail_xname = PROTO_XNAME_COMMIT; /* phase 2 left to recovery */
    int rc = rename_at(f, tmp, ckpt, r);
    f->fail_xname = 0;
    assert_true(recovery_goes_on(f));
    free(r);
    assert_int_equal(rc, 0);
    assert_true(meta_xmdt_recover(&f->ctx[1]) >= 0);
    assert_int_equal(holds(f, tmp), 0);
    assert_int_equal(holds(f, ckpt), ino);
    assert_clean(f);
}

/* Two recoveries of one MDT at once (the tick, and a request that changed
 * a striped directory): one that read an intent before the other ran it
 * to its end must not run it again. Here two unlinks of remote names whose
 * link drops were left for later: a second drop would take the inode from
 * under the file's other name. */
static void test_two_recoveries(void **state)
{
    struct fx *f = *state;
    char a[2][32], g[2][32];
    uint64_t ino[2];
    name_on(0, "a", a[0], sizeof(a[0]));
    name_on(0, "b", a[1], sizeof(a[1]));
    name_on(2, "g", g[0], sizeof(g[0]));
    name_on(2, "h", g[1], sizeof(g[1]));
    for (int i = 0; i < 2; i++) {
        ino[i] = create_file(f, a[i]);
        struct proto_link_req q;
        struct proto_link_rep r;
        memset(&q, 0, sizeof(q));
        q.ino = ino[i];
        q.dparent = ROOT;
        q.dpath = proto_str_c(g[i]);
        assert_int_equal(meta_op_link(RQ(&f->ctx[2]), &q, &r), 0);
    }
    for (int i = 0; i < 2; i++) {
        struct proto_unlink_req uq;
        struct proto_unlink_rep *ur = calloc(1, sizeof(*ur));
        memset(&uq, 0, sizeof(uq));
        uq.parent = ROOT;
        uq.path = proto_str_c(g[i]);
        f->fail_after = 0; /* the link drop on MDT 0 goes later */
        assert_int_equal(meta_op_unlink(RQ(&f->ctx[2]), &uq, ur), 0);
        f->fail_after = -1;
        free(ur);
    }
    f->nest_xname = PROTO_XNAME_LINK_DROP;
    f->nest_mdt = 2;
    assert_true(meta_xmdt_recover(&f->ctx[2]) >= 0);
    assert_int_equal(f->nest_xname, 0);
    for (int i = 0; i < 2; i++) {
        struct proto_attr at;
        assert_int_equal(getattr_at(f, 0, ino[i], &at), 0);
        assert_int_equal(at.nlink, 1);
        assert_int_equal(holds(f, a[i]), ino[i]);
        assert_int_equal(holds(f, g[i]), 0);
    }
    assert_clean(f);
}

/* What the request's xsync_hook saw, between the commit of its attribute
 * copy's intent and its own run of it. */
static struct {
    struct fx *f;
    bool marked;
    int steps;
} beside;

/* The daemon's tick, come in that moment. */
static void recovery_at_commit(struct meta_ctx *c, uint64_t txid)
{
    beside.marked = meta_xbusy_has(c, txid);
    int before = beside.f->steps;
    meta_xmdt_recover(c);
    beside.steps = beside.f->steps - before;
}

static void assert_shards_mode(struct fx *f, uint64_t ino, uint32_t mode)
{
    for (uint32_t i = 0; i < NMDT; i++) {
        struct proto_attr a;
        assert_int_equal(getattr_at(f, i, ino, &a), 0);
        assert_int_equal(a.mode & 07777, mode);
    }
}

/* A chmod of a striped directory copies the mode onto the shards itself,
 * before its reply: a recovery that comes between its commit and its copy
 * leaves the copy alone. Taken by a recovery, the copy could still be on
 * its way when the reply left, and a create on another MDT was then
 * checked against the old mode (an EACCES in the Slurm test's job root,
 * chmod 0700'd to its user). */
static void test_recovery_beside_chmod(void **state)
{
    struct fx *f = *state;
    struct proto_attr d;
    uint32_t e = where(root_ds(), ROOT, "cm");
    assert_int_equal(mkdir_at(f, e, ROOT, "cm", NMDT, 0, &d), 0);
    beside.f = f;
    beside.marked = false;
    beside.steps = -1;
    struct meta_ctx *owner = &f->ctx[proto_ino_mdt(d.ino)];
    owner->xsync_hook = recovery_at_commit;
    chmod_as_root(f, d.ino, 0700);
    owner->xsync_hook = NULL;
    assert_true(beside.marked);
    assert_int_equal(beside.steps, 0);
    assert_shards_mode(f, d.ino, 0700);
    assert_clean(f);
    assert_int_equal(rmdir_at(f, e, ROOT, "cm"), 0);
}

/* A SHARD step held at a gate, from a thread of the test's. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stage; /* 0: armed; 1: a step waits at it; 2: open */
} gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void gate_wait(void)
{
    pthread_mutex_lock(&gate.lock);
    gate.stage = 1;
    pthread_cond_broadcast(&gate.cond);
    while (gate.stage != 2)
        pthread_cond_wait(&gate.cond, &gate.lock);
    pthread_mutex_unlock(&gate.lock);
}

/* Wait until cond holds of stage, or ms have passed; whether it held. */
static bool gate_until(int stage, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&gate.lock);
    while (gate.stage != stage && pthread_cond_timedwait(&gate.cond, &gate.lock, &ts) == 0)
        ;
    bool held = gate.stage == stage;
    pthread_mutex_unlock(&gate.lock);
    return held;
}

static void gate_open(void)
{
    pthread_mutex_lock(&gate.lock);
    gate.stage = 2;
    pthread_cond_broadcast(&gate.cond);
    pthread_mutex_unlock(&gate.lock);
}

static struct chmod_job {
    struct fx *f;
    uint64_t ino;
    uint32_t mode;
    int rc;
} cj;

static void *recover_main(void *arg)
{
    struct chmod_job *j = arg;
    meta_xmdt_recover(&j->f->ctx[proto_ino_mdt(j->ino)]);
    return NULL;
}

static void *chmod_main(void *arg)
{
    struct chmod_job *j = arg;
    struct proto_setattr_req q;
    struct proto_setattr_rep *r = calloc(1, sizeof(*r));
    memset(&q, 0, sizeof(q));
    q.ino = j->ino;
    q.valid = SETATTR_MODE;
    q.mode = j->mode;
    j->rc = r ? meta_op_setattr(RQ(&j->f->ctx[proto_ino_mdt(j->ino)]), &q, r) : -ENOMEM;
    free(r);
    pthread_mutex_lock(&gate.lock);
    gate.stage = 3; /* done */
    pthread_cond_broadcast(&gate.cond);
    pthread_mutex_unlock(&gate.lock);
    return NULL;
}

/* A directory name striped over every MDT (on MDT *e), chmod 0700'd with
 * its copy onto the shards left to recovery (its peers away). */
static uint64_t dir_copy_left(struct fx *f, const char *name, uint32_t *e)
{
    struct proto_attr d;
    *e = where(root_ds(), ROOT, name);
    assert_int_equal(mkdir_at(f, *e, ROOT, name, NMDT, 0, &d), 0);
    f->fail_after = 0;
    chmod_as_root(f, d.ino, 0700);
    f->fail_after = -1;
    struct proto_attr a;
    assert_int_equal(getattr_at(f, (proto_ino_mdt(d.ino) + 1) % NMDT, d.ino, &a), 0);
    assert_int_not_equal(a.mode & 07777, 0700);
    return d.ino;
}

/* Two copies of one directory's attributes at once: recovery's, of a chmod
 * whose copy found its peers away, read the inode and is on its way; a
 * second chmod commits and copies. The second's copy must land last, or
 * the shards keep the first mode while the inode has the second. */
static void test_copies_in_order(void **state)
{
    struct fx *f = *state;
    uint32_t e;
    struct proto_attr d = {.ino = dir_copy_left(f, "co", &e)};

    gate.stage = 0;
    f->gate_shard = PROTO_SHARD_ATTR;
    cj = (struct chmod_job){f, d.ino, 0750, 1};
    pthread_t rt, ct;
    assert_int_equal(pthread_create(&rt, NULL, recover_main, &cj), 0);
    bool held = gate_until(1, 10000); /* recovery read 0700 and stopped */
    bool started = held && pthread_create(&ct, NULL, chmod_main, &cj) == 0;
    /* The second chmod, unordered, would be done at once; ordered, it
     * waits for the first copy, whatever time it is given here. */
    if (started)
        gate_until(3, 300);
    gate_open();
    pthread_join(rt, NULL);
    if (started)
        pthread_join(ct, NULL);
    assert_true(held);
    assert_true(started);
    assert_int_equal(cj.rc, 0);
    assert_shards_mode(f, d.ino, 0750);
    assert_clean(f);
    assert_int_equal(rmdir_at(f, e, ROOT, "co"), 0);
}

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    int open;
} rec = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0};

static void *recover_done_main(void *arg)
{
    struct chmod_job *j = arg;
    int open = meta_xmdt_recover(&j->f->ctx[proto_ino_mdt(j->ino)]);
    pthread_mutex_lock(&rec.lock);
    rec.open = open;
    rec.done = true;
    pthread_cond_broadcast(&rec.cond);
    pthread_mutex_unlock(&rec.lock);
    return NULL;
}

/* The other way round: a request's copy is on its way when recovery
 * meets an older copy of the same directory. Recovery runs on the
 * daemon's tick, which also makes commits durable: it leaves that copy for
 * its next tick instead of waiting behind the request. */
static void test_recovery_leaves_busy_dir(void **state)
{
    struct fx *f = *state;
    uint32_t e;
    struct proto_attr d = {.ino = dir_copy_left(f, "cb", &e)};

    gate.stage = 0;
    f->gate_shard = PROTO_SHARD_ATTR;
    cj = (struct chmod_job){f, d.ino, 0750, 1};
    rec.done = false;
    pthread_t ct, rt;
    assert_int_equal(pthread_create(&ct, NULL, chmod_main, &cj), 0);
    bool held = gate_until(1, 10000); /* the second chmod's copy holds the directory */
    bool started = held && pthread_create(&rt, NULL, recover_done_main, &cj) == 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&rec.lock);
    while (started && !rec.done && pthread_cond_timedwait(&rec.cond, &rec.lock, &until) == 0)
        ;
    bool done = rec.done;
    pthread_mutex_unlock(&rec.lock);
    gate_open();
    pthread_join(ct, NULL);
    if (started)
        pthread_join(rt, NULL);
    assert_true(held);
    assert_true(done); /* it did not wait for the gate */
    assert_int_equal(rec.open, 1);
    assert_int_equal(cj.rc, 0);
    assert_int_equal(meta_xmdt_recover(&f->ctx[proto_ino_mdt(d.ino)]), 0);
    assert_shards_mode(f, d.ino, 0750);
    assert_clean(f);
    assert_int_equal(rmdir_at(f, e, ROOT, "cb"), 0);
}

/* The marks of operations in progress: as many as there are requests at
 * once (a metadata storm), one owner per intent. */
static void test_busy_marks(void **state)
{
    struct fx *f = *state;
    struct meta_ctx *c = &f->ctx[1];
    enum { N = 5000 };
    for (uint64_t t = 1; t <= N; t++)
        assert_true(meta_xbusy_add(c, 1000 + t));
    assert_false(meta_xbusy_add(c, 1000 + N / 2)); /* one owner */
    for (uint64_t t = 1; t <= N; t += 2)
        meta_xbusy_del(c, 1000 + t);
    assert_true(meta_xbusy_add(c, 1001));
    assert_false(meta_xbusy_add(c, 1002));
    for (uint64_t t = 1; t <= N; t++)
        meta_xbusy_del(c, 1000 + t);
    assert_int_equal(c->nxbusy, 0);
}

/* ---- seals belong to operations ---- */

/* The directory late_rollback works on: removed from MDT e, a name in it on e. */
static struct {
    uint32_t e;
    uint64_t dir;
    char name[32];
    int create_rc;
} late;

/* The first rmdir's rollback, as recovery runs it (each tick, requests
 * being served meanwhile), then a create in the directory. */
static void late_rollback(struct fx *f)
{
    assert_true(meta_xmdt_recover(&f->ctx[late.e]) >= 0);
    late.create_rc = create_at(f, late.e, late.dir, late.name);
}

/* An rmdir that stopped in phase 1 (its peers away: seals left behind),
 * then the same rmdir again (the client's resend after a restart, or
 * another client's) before recovery rolled the first back. The rollback
 * comes after the second has sealed the directory's inode: it must not
 * unseal what the second sealed, or a file made in the directory before
 * the second removes its name is lost with it (and the second's intent
 * never ends, its records not empty). */
static void test_late_unseal(void **state)
{
    struct fx *f = *state;
    uint32_t e = where(root_ds(), ROOT, "c");
    uint64_t base = inodes(f);
    struct proto_attr d;
    /* The inode on the coordinator's MDT, the other shards elsewhere. */
    assert_int_equal(mkdir_at(f, e, ROOT, "c", NMDT, (int32_t)e, &d), 0);
    assert_int_equal(proto_ino_mdt(d.ino), e);
    /* The first: the inode and one shard sealed, then no peer answers; its
     * rollback unseals the inode (here) but not the shard. */
    f->fail_after = 1;
    assert_int_equal(rmdir_at(f, e, ROOT, "c"), -EIO);
    f->fail_after = -1;
    late.e = e;
    late.dir = d.ino;
    late.create_rc = 1;
    for (int i = 0;; i++) {
        snprintf(late.name, sizeof(late.name), "late%d", i);
        if (where(d.dstripe, d.ino, late.name) == e)
            break;
    }
    /* The second: it seals the inode here, then the shards; the first
     * one's rollback comes right after the first shard's answer. */
    f->after_shard = PROTO_SHARD_SEAL;
    f->after = late_rollback;
    int rc = rmdir_at(f, e, ROOT, "c");
    assert_int_equal(f->after_shard, 0);
    assert_int_equal(late.create_rc, -ENOENT); /* still sealed, by the second */
    assert_int_equal(rc, 0);
    assert_int_equal(getattr_at(f, e, d.ino, NULL), -ENOENT);
    assert_int_equal(inodes(f), base);
    assert_clean(f);
}

static int unlink_at(struct fx *f, uint32_t mdt, uint64_t parent, const char *name)
{
    struct proto_unlink_req q;
    struct proto_unlink_rep *r = calloc(1, sizeof(*r));
    memset(&q, 0, sizeof(q));
    q.parent = parent;
    q.path = proto_str_c(name);
    int rc = meta_op_unlink(RQ(&f->ctx[mdt]), &q, r);
    free(r);
    return rc;
}

static int shard_op(struct fx *f, uint32_t mdt, uint8_t op, uint64_t txid, uint64_t ino,
                    uint64_t arg)
{
    struct proto_shard_rep r;
    return meta_shard_step(RQ(&f->ctx[mdt]), mdt, op, txid, ino, arg, &r);
}

/* A seal as the code before owned seals wrote it: no operation's. */
static int old_seal_txn(struct meta_txn *t, void *arg)
{
    struct meta_inode in;
    int rc = meta_inode_get(t, *(uint64_t *)arg, &in);
    if (rc)
        return rc;
    in.flags |= META_F_SEALED;
    in.seal = 0;
    return meta_inode_put(t, &in);
}

/* The steps themselves: another operation's SEAL waits (EBUSY), its UNSEAL
 * leaves the seal, its DEL is refused; a named directory goes only sealed;
 * a seal made before seals had owners is undone by anyone. */
static void test_seal_owned(void **state)
{
    struct fx *f = *state;
    uint32_t e = where(root_ds(), ROOT, "s");
    struct proto_attr d;
    assert_int_equal(mkdir_at(f, e, ROOT, "s", 2, (int32_t)e, &d), 0);
    uint32_t o = proto_ino_mdt(d.ino);
    char n[32];
    for (int i = 0;; i++) {
        snprintf(n, sizeof(n), "n%d", i);
        if (where(d.dstripe, d.ino, n) == o)
            break;
    }
    const uint64_t t1 = 0x7001, t2 = 0x7002;
    assert_int_equal(shard_op(f, o, PROTO_SHARD_DEL, t1, d.ino, 0), -EBUSY); /* not sealed */
    assert_int_equal(shard_op(f, o, PROTO_SHARD_SEAL, t1, d.ino, 0), 0);
    assert_int_equal(shard_op(f, o, PROTO_SHARD_SEAL, t1, d.ino, 0), 0); /* a repeat */
    assert_int_equal(shard_op(f, o, PROTO_SHARD_SEAL, t2, d.ino, 0), -EBUSY);
    assert_int_equal(shard_op(f, o, PROTO_SHARD_UNSEAL, t2, d.ino, 0), 0);
    assert_int_equal(create_at(f, o, d.ino, n), -ENOENT); /* still sealed */
    assert_int_equal(shard_op(f, o, PROTO_SHARD_DEL, t2, d.ino, 0), -EBUSY);
    assert_int_equal(shard_op(f, o, PROTO_SHARD_UNSEAL, t1, d.ino, 0), 0);
    assert_int_equal(shard_op(f, o, PROTO_SHARD_UNSEAL, t1, d.ino, 0), 0); /* a repeat */
    assert_int_equal(shard_op(f, o, PROTO_SHARD_SEAL, t2, d.ino, 0), 0);
    assert_int_equal(shard_op(f, o, PROTO_SHARD_UNSEAL, t2, d.ino, 0), 0);
    /* Unsealed again: names are made. */
    assert_int_equal(create_at(f, o, d.ino, n), 0);
    assert_int_equal(shard_op(f, o, PROTO_SHARD_SEAL, t1, d.ino, 0), -ENOTEMPTY);
    assert_int_equal(unlink_at(f, o, d.ino, n), 0);
    /* An old seal (no owner) is taken over by a SEAL, undone by any UNSEAL. */
    uint64_t ino = d.ino;
    assert_int_equal(meta_store_write(f->s[o], NULL, old_seal_txn, &ino), 0);
    assert_int_equal(create_at(f, o, d.ino, n), -ENOENT);
    assert_int_equal(shard_op(f, o, PROTO_SHARD_UNSEAL, t2, d.ino, 0), 0);
    assert_int_equal(create_at(f, o, d.ino, n), 0);
    assert_int_equal(unlink_at(f, o, d.ino, n), 0);
    assert_int_equal(meta_store_write(f->s[o], NULL, old_seal_txn, &ino), 0);
    assert_int_equal(shard_op(f, o, PROTO_SHARD_SEAL, t2, d.ino, 0), 0);
    assert_int_equal(shard_op(f, o, PROTO_SHARD_UNSEAL, t1, d.ino, 0), 0);
    assert_int_equal(create_at(f, o, d.ino, n), -ENOENT); /* t2's now */
    assert_int_equal(shard_op(f, o, PROTO_SHARD_UNSEAL, t2, d.ino, 0), 0);
    assert_clean(f);
    assert_int_equal(rmdir_at(f, e, ROOT, "s"), 0);
    assert_clean(f);
}

/* A directory over several MDTs is sealed before it is removed, which
 * holds off every create in it; so one the caller may not remove is
 * refused before any seal: in a sticky directory unless the caller owns
 * it (its inode here or on another MDT), and without write permission on
 * the parent at all. */
static void test_rmdir_refused_before_seal(void **state)
{
    struct fx *f = *state;
    uint32_t e = where(root_ds(), ROOT, "pub");
    struct proto_attr p;
    assert_int_equal(mkdir_at(f, e, ROOT, "pub", 0, -1, &p), 0);
    chmod_as_root(f, p.ino, 01777);
    uint32_t h = proto_ino_mdt(p.ino), other = (h + 1) % NMDT;
    assert_int_equal(where(p.dstripe, p.ino, "rv"), h);
    /* Root's: one whose inode is on another MDT, one striped from here. */
    struct proto_attr rv, sv, mine;
    assert_int_equal(mkdir_at(f, h, p.ino, "rv", 1, (int32_t)other, &rv), 0);
    assert_int_equal(proto_ino_mdt(rv.ino), other);
    assert_int_equal(mkdir_at(f, h, p.ino, "sv", NMDT, (int32_t)h, &sv), 0);
    assert_int_equal(proto_ino_mdt(sv.ino), h);
    /* uid 1000's, its inode on another MDT. */
    assert_int_equal(mkdir_as(f, 1000, h, p.ino, "mine", 1, (int32_t)other, &mine), 0);
    assert_int_equal(mine.uid, 1000);
    f->seals = 0;
    assert_int_equal(rmdir_as(f, 1000, h, p.ino, "rv"), -EPERM);
    assert_int_equal(rmdir_as(f, 1000, h, p.ino, "sv"), -EPERM);
    assert_int_equal(f->seals, 0);
    assert_int_equal(rmdir_as(f, 1000, h, p.ino, "mine"), 0);
    assert_true(f->seals > 0);
    /* No write permission on the parent. */
    chmod_as_root(f, p.ino, 0755);
    f->seals = 0;
    assert_int_equal(rmdir_as(f, 1000, h, p.ino, "rv"), -EACCES);
    assert_int_equal(rmdir_as(f, 1000, h, p.ino, "sv"), -EACCES);
    assert_int_equal(f->seals, 0);
    assert_int_equal(rmdir_at(f, h, p.ino, "rv"), 0);
    assert_int_equal(rmdir_at(f, h, p.ino, "sv"), 0);
    assert_int_equal(rmdir_at(f, e, ROOT, "pub"), 0);
    assert_clean(f);
}

/* The same for a rename between MDTs over a directory spanning them: a
 * caller without write permission on the source's parent is refused
 * before the directory it would replace is sealed. */
static void test_rename_refused_before_seal(void **state)
{
    struct fx *f = *state;
    struct proto_attr src, pub, sd, v;
    uint32_t es = where(root_ds(), ROOT, "src"), ep = where(root_ds(), ROOT, "pub");
    assert_int_equal(mkdir_at(f, es, ROOT, "src", 0, -1, &src), 0);
    assert_int_equal(mkdir_at(f, ep, ROOT, "pub", 0, -1, &pub), 0);
    chmod_as_root(f, pub.ino, 0777);
    uint32_t ms = where(src.dstripe, src.ino, "sd"), mv = where(pub.dstripe, pub.ino, "v");
    assert_int_equal(mkdir_at(f, ms, src.ino, "sd", 0, -1, &sd), 0);
    assert_int_equal(mkdir_at(f, mv, pub.ino, "v", NMDT, (int32_t)mv, &v), 0);
    struct proto_rename_req q;
    struct proto_rename_rep r;
    memset(&q, 0, sizeof(q));
    q.cred.uid = q.cred.gid = 1000;
    q.sparent = src.ino;
    q.spath = proto_str_c("sd");
    q.dparent = pub.ino;
    q.dpath = proto_str_c("v");
    q.dmdt = mv;
    f->seals = 0;
    memset(&r, 0, sizeof(r));
    assert_int_equal(meta_op_rename(RQ(&f->ctx[ms]), &q, &r), -EACCES);
    assert_int_equal(f->seals, 0);
    /* Root may: the directory is replaced. */
    q.cred.uid = q.cred.gid = 0;
    memset(&r, 0, sizeof(r));
    assert_int_equal(meta_op_rename(RQ(&f->ctx[ms]), &q, &r), 0);
    assert_true(f->seals > 0);
    assert_int_equal(rmdir_at(f, mv, pub.ino, "v"), 0);
    assert_int_equal(rmdir_at(f, ep, ROOT, "pub"), 0);
    assert_int_equal(rmdir_at(f, es, ROOT, "src"), 0);
    assert_clean(f);
}

/* HSM_IMPORT into a striped directory: served by the MDT of the name,
 * which makes the file's inode there, from the shard's defaults, as an
 * O_CREAT open does; any other MDT answers -EREMOTE. */
static void test_hsm_import_striped(void **state)
{
    struct fx *f = *state;
    struct proto_attr d;
    uint32_t e = where(root_ds(), ROOT, "repo");
    assert_int_equal(mkdir_at(f, e, ROOT, "repo", NMDT, 0, &d), 0);
    for (int i = 0; i < 16; i++) {
        char name[32];
        snprintf(name, sizeof(name), "obj%d", i);
        uint32_t m = where(d.dstripe, d.ino, name);
        struct proto_hsm_import_req q;
        struct proto_hsm_import_rep *r = calloc(1, sizeof(*r));
        memset(&q, 0, sizeof(q));
        q.parent = d.ino;
        q.name = proto_str_c(name);
        q.repo = d.ino;
        q.key = proto_str_c(name);
        q.etag = proto_str_c("\"e\"");
        q.size = 100;
        q.mtime_ns = 1;
        q.mode = 0644;
        q.gen = 1;
        assert_int_equal(meta_op_hsm_import(RQ(&f->ctx[(m + 1) % NMDT]), &q, r), -EREMOTE);
        assert_int_equal(meta_op_hsm_import(RQ(&f->ctx[m]), &q, r), 0);
        assert_int_equal(r->result, HSM_IMPORTED);
        assert_int_equal(proto_ino_mdt(r->attr.ino), m);
        assert_true(layout_released(&r->layout));
        assert_int_equal(meta_op_hsm_import(RQ(&f->ctx[m]), &q, r), 0);
        assert_int_equal(r->result, HSM_UNCHANGED);
        free(r);
    }
    uint64_t bytes = 0, files = 0;
    for (uint32_t m = 0; m < NMDT; m++) {
        uint64_t b, n;
        assert_int_equal(meta_store_released(f->s[m], &b, &n), 0);
        bytes += b;
        files += n;
    }
    assert_int_equal(bytes, 1600);
    assert_int_equal(files, 16);
    assert_clean(f);
}

/* An imported file (released, its record naming key) at name in the
 * root, on the name's MDT. */
static uint64_t import_at(struct fx *f, const char *name, const char *key)
{
    struct proto_hsm_import_req q;
    struct proto_hsm_import_rep *r = calloc(1, sizeof(*r));
    memset(&q, 0, sizeof(q));
    q.parent = ROOT;
    q.name = proto_str_c(name);
    q.repo = 77;
    q.key = proto_str_c(key);
    q.etag = proto_str_c("\"e\"");
    q.size = 100;
    q.mtime_ns = 1;
    q.mode = 0644;
    q.gen = 1;
    assert_int_equal(meta_op_hsm_import(RQ(&f->ctx[where(root_ds(), ROOT, name)]), &q, r), 0);
    assert_int_equal(r->result, HSM_IMPORTED);
    uint64_t ino = r->attr.ino;
    free(r);
    return ino;
}

/* MDT mdt's tombstones: how many, the key of the first into key. */
static int gone_on(struct fx *f, uint32_t mdt, char *key, size_t cap)
{
    static uint8_t buf[META_GONE_BUF];
    struct proto_hsm_gone_req q;
    struct proto_hsm_gone_rep r;
    memset(&q, 0, sizeof(q));
    q.op = HSM_GONE_LIST;
    q.max = HSM_GONE_MAX;
    assert_int_equal(
        meta_op_hsm_gone(
            &(struct meta_req){.ctx = &f->ctx[mdt], .buf = buf, .buf_len = sizeof(buf)}, &q, &r),
        0);
    if (r.count) {
        struct proto_dec d;
        struct proto_str k, e;
        uint64_t id, repo;
        proto_dec_init(&d, r.entries.p, r.entries.len);
        proto_get_U64(&d, &id);
        proto_get_U64(&d, &repo);
        proto_get_STR(&d, &k);
        proto_get_STR(&d, &e);
        assert_int_equal(d.err, 0);
        assert_int_equal(repo, 77);
        assert_int_equal(proto_str_copy(&k, key, cap), 0);
    }
    return (int)r.count;
}

/* The tombstone of a file whose inode lives on another MDT than its
 * name is written by the inode's MDT, when a cross-MDT unlink or rename
 * drops its last link there. */
static void test_hsm_gone_across(void **state)
{
    struct fx *f = *state;
    char a[32], b[32], s[32], d[32], e[32], key[64];
    name_on(1, "a", a, sizeof(a));
    name_on(3, "b", b, sizeof(b));
    name_on(0, "s", s, sizeof(s));
    name_on(2, "d", d, sizeof(d));
    name_on(0, "e", e, sizeof(e));
    struct proto_rename_rep *r = calloc(1, sizeof(*r));

    /* a's inode on MDT 1, named on MDT 3, then renamed over from MDT 0. */
    uint64_t ia = import_at(f, a, "obj/a");
    assert_int_equal(proto_ino_mdt(ia), 1);
    assert_int_equal(rename_at(f, a, b, r), 0);
    assert_int_equal(holds(f, b), ia);
    for (uint32_t m = 0; m < NMDT; m++)
        assert_int_equal(gone_on(f, m, key, sizeof(key)), 0);
    create_file(f, s);
    assert_int_equal(rename_at(f, s, b, r), 0);
    assert_int_equal(r->replaced, ia);
    assert_int_equal(r->gone, 1);
    assert_int_equal(gone_on(f, 1, key, sizeof(key)), 1);
    assert_string_equal(key, "obj/a");

    /* d's inode on MDT 2, named on MDT 0, unlinked there. */
    uint64_t id = import_at(f, d, "obj/d");
    assert_int_equal(rename_at(f, d, e, r), 0);
    struct proto_unlink_req uq;
    struct proto_unlink_rep *ur = calloc(1, sizeof(*ur));
    memset(&uq, 0, sizeof(uq));
    uq.parent = ROOT;
    uq.path = proto_str_c(e);
    assert_int_equal(meta_op_unlink(RQ(&f->ctx[0]), &uq, ur), 0);
    assert_int_equal(ur->gone, 1);
    assert_int_equal(ur->ino, id);
    assert_int_equal(gone_on(f, 2, key, sizeof(key)), 1);
    assert_string_equal(key, "obj/d");
    assert_int_equal(gone_on(f, 0, key, sizeof(key)) + gone_on(f, 3, key, sizeof(key)), 0);
    assert_int_equal(gone_on(f, 1, key, sizeof(key)), 1);
    free(ur);
    free(r);
    assert_clean(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_root_striped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busy_marks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_striped_mkdir_rmdir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remote_mkdir_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attrs_reach_shards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_at_every_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reply_at_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shard_garbage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_between_mdts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_link_between_mdts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_failure_at_every_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directory_moves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fsck_across, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_lock_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovery_beside_mkdir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovery_beside_rename, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_recoveries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovery_beside_chmod, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copies_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovery_leaves_busy_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_late_unseal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seal_owned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rmdir_refused_before_seal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_refused_before_seal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hsm_import_striped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hsm_gone_across, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovery_changes_nothing_while_peers_away, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_recovery_waits_for_peer_without_a_round, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
