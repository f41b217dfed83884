/*
 * Unit tests of the MDT store (meta/store.h) driven directly, without the
 * namespace operations: the inode record codec, group commit under many
 * writers and what one failing write does to the others of its batch, the
 * replies kept for resent changes, and a store closed and opened again.
 *
 * Each test opens a store in a temporary directory of its own and removes
 * it, pass or fail (the group teardown). test_meta.c covers the same store
 * through meta_op_*; these tests pin the store's own contract.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "meta/store/dom_rec.h"
#include "meta/store/store.h"
#include "proto/layout.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAP_SIZE   (64ull << 20)
#define NTHREADS   8
#define PER_THREAD 150

static struct meta_store *st;

static int setup(void **state)
{
    (void)state;
    if (tmpdir_make("store"))
        return -1;
    return meta_store_open(tmpdir, 0, MAP_SIZE, &st);
}

static int teardown(void **state)
{
    (void)state;
    meta_store_close(st);
    st = NULL;
    return tmpdir_remove();
}

static void reopen(uint32_t mdt)
{
    meta_store_close(st);
    st = NULL;
    assert_int_equal(meta_store_open(tmpdir, mdt, MAP_SIZE, &st), 0);
}

/* ---- the inode record codec ---- */

static void file_rec(struct meta_inode *in)
{
    memset(in, 0, sizeof(*in));
    in->ino = (2ull << PROTO_INO_BITS) | 12345;
    in->mode = S_IFREG | 0640;
    in->uid = 1000;
    in->gid = 2000;
    in->nlink = 3;
    in->size = 0x123456789aull;
    in->atime_ns = -5; /* before 1970 */
    in->mtime_ns = 1700000000123456789ll;
    in->ctime_ns = 1700000000987654321ll;
    in->flags = META_F_OBJECTS | META_F_REMOTE_NAMES;
    in->parent = 77;
    uint32_t groups[3] = {4, 9, 1};
    layout_make_simple(&in->layout, 2u << 20, 3, groups);
}

static void dev_rec(struct meta_inode *in)
{
    memset(in, 0, sizeof(*in));
    in->ino = 99;
    in->mode = S_IFCHR | 0600;
    in->nlink = 1;
    in->rdev = 0x0000000812345678ull; /* a major and minor beyond 8 bits */
}

static void dir_rec(struct meta_inode *in, uint64_t seal)
{
    memset(in, 0, sizeof(*in));
    in->ino = 1234;
    in->mode = S_IFDIR | 01777;
    in->uid = 5;
    in->gid = 6;
    in->nlink = 7;
    in->flags = META_F_SHARD | (seal ? META_F_SEALED : 0);
    in->parent = 1;
    in->dcount = -1;
    in->dsize = 4u << 20;
    in->doffset = 2;
    struct proto_dstripe ds = {.count = 3, .start = 1, .nmdt = 4, .hash = PROTO_DS_HASH_FNV};
    in->dstripe = proto_ds_pack(ds);
    ds.count = 2;
    in->ddefault = proto_ds_pack(ds);
    in->seal = seal;
}

static void assert_same_inode(const struct meta_inode *a, const struct meta_inode *b)
{
    assert_int_equal(a->ino, b->ino);
    assert_int_equal(a->mode, b->mode);
    assert_int_equal(a->uid, b->uid);
    assert_int_equal(a->gid, b->gid);
    assert_int_equal(a->nlink, b->nlink);
    assert_int_equal(a->size, b->size);
    assert_int_equal(a->atime_ns, b->atime_ns);
    assert_int_equal(a->mtime_ns, b->mtime_ns);
    assert_int_equal(a->ctime_ns, b->ctime_ns);
    assert_int_equal(a->rdev, b->rdev);
    assert_int_equal(a->flags, b->flags);
    assert_int_equal(a->parent, b->parent);
    assert_int_equal(a->dcount, b->dcount);
    assert_int_equal(a->dsize, b->dsize);
    assert_int_equal(a->doffset, b->doffset);
    assert_int_equal(a->dstripe, b->dstripe);
    assert_int_equal(a->ddefault, b->ddefault);
    assert_int_equal(a->seal, b->seal);
    assert_int_equal(a->layout.ncomp, b->layout.ncomp);
    for (uint16_t i = 0; i < a->layout.ncomp; i++) {
        const struct layout_comp *x = &a->layout.comp[i], *y = &b->layout.comp[i];
        assert_int_equal(x->start, y->start);
        assert_int_equal(x->end, y->end);
        assert_int_equal(x->stripe_size, y->stripe_size);
        assert_int_equal(x->stripe_count, y->stripe_count);
        assert_int_equal(x->type, y->type);
        assert_memory_equal(x->groups, y->groups, x->stripe_count * sizeof(x->groups[0]));
    }
}

static struct meta_inode in_a, in_b; /* 4 KiB each: off the stack */
static uint8_t rec[META_INODE_REC_MAX];

static void test_codec_round_trip(void **state)
{
    (void)state;
    void (*make[])(struct meta_inode *) = {file_rec, dev_rec};
    for (size_t i = 0; i < 2; i++) {
        make[i](&in_a);
        int len = meta_inode_encode(&in_a, rec, sizeof(rec));
        assert_true(len > 0);
        assert_int_equal(meta_inode_decode(rec, (size_t)len, &in_b), 0);
        assert_same_inode(&in_a, &in_b);
    }
    for (uint64_t seal = 0; seal < 2; seal++) {
        dir_rec(&in_a, seal ? 0xfeedull : 0);
        int len = meta_inode_encode(&in_a, rec, sizeof(rec));
        assert_true(len > 0);
        assert_int_equal(meta_inode_decode(rec, (size_t)len, &in_b), 0);
        assert_same_inode(&in_a, &in_b);
        assert_int_equal(meta_sealed_by(&in_b, 0xfeed), seal != 0);
    }
    /* What clients see: the device number, and 1 link for a striped
     * directory whose subdirectories are counted per shard. */
    struct proto_attr a;
    dev_rec(&in_a);
    meta_inode_attr(&in_a, &a);
    assert_int_equal(a.rdev, in_a.rdev);
    dir_rec(&in_a, 0);
    meta_inode_attr(&in_a, &a);
    assert_int_equal(a.nlink, 1);
    assert_int_equal(a.dstripe, in_a.dstripe);
    /* A buffer too small is refused, not overrun. */
    file_rec(&in_a);
    int full = meta_inode_encode(&in_a, rec, sizeof(rec));
    assert_true(meta_inode_encode(&in_a, rec, (size_t)full - 1) < 0);
}

/* Every cut of a record short of its end is refused: a record torn on disk
 * or in a SHARD message never passes for a smaller one. */
static void test_codec_refuses_truncated(void **state)
{
    (void)state;
    for (int kind = 0; kind < 4; kind++) {
        if (kind == 0)
            file_rec(&in_a);
        else if (kind == 1)
            dev_rec(&in_a);
        else
            dir_rec(&in_a, kind == 3 ? 42 : 0);
        int full = meta_inode_encode(&in_a, rec, sizeof(rec));
        assert_true(full > 0);
        for (int len = 0; len < full; len++) {
            if (meta_inode_decode(rec, (size_t)len, &in_b) != -EUCLEAN)
                fail_msg("kind %d: a record cut to %d of %d bytes was accepted", kind, len, full);
        }
    }
    /* Unknown versions and an impossible stripe. */
    dir_rec(&in_a, 0);
    int full = meta_inode_encode(&in_a, rec, sizeof(rec));
    rec[0] = 0;
    assert_int_equal(meta_inode_decode(rec, (size_t)full, &in_b), -EUCLEAN);
    rec[0] = 4;
    assert_int_equal(meta_inode_decode(rec, (size_t)full, &in_b), -EUCLEAN);
    in_a.dstripe = 5; /* count 5 over 0 MDTs */
    full = meta_inode_encode(&in_a, rec, sizeof(rec));
    assert_int_equal(meta_inode_decode(rec, (size_t)full, &in_b), -EUCLEAN);
}

/* Garbage and flipped bytes: an answer (0 or -EUCLEAN), never a crash. */
static void test_codec_garbage(void **state)
{
    (void)state;
    rng_seed(21);
    for (int i = 0; i < 20000; i++) {
        size_t len = rng_below(sizeof(rec));
        for (size_t k = 0; k < len; k++)
            rec[k] = (uint8_t)rng_next();
        if (i % 2)
            rec[0] = 2; /* past the version check more often */
        int rc = meta_inode_decode(rec, len, &in_b);
        assert_true(rc == 0 || rc == -EUCLEAN);
    }
    file_rec(&in_a);
    int full = meta_inode_encode(&in_a, rec, sizeof(rec));
    for (int k = 0; k < full; k++) {
        uint8_t was = rec[k];
        rec[k] ^= 0xff;
        int rc = meta_inode_decode(rec, (size_t)full, &in_b);
        assert_true(rc == 0 || rc == -EUCLEAN);
        rec[k] = was;
    }
}

/* ---- records through the store ---- */

static int put_inode_txn(struct meta_txn *t, void *arg)
{
    return meta_inode_put(t, arg);
}

static int get_inode_txn(struct meta_txn *t, void *arg)
{
    struct meta_inode *in = arg;
    return meta_inode_get(t, in->ino, in);
}

static int count_null(void *arg, uint64_t ino, const struct meta_inode *in)
{
    (void)ino;
    if (!in)
        ++*(int *)arg;
    return 0;
}

static int scan_txn(struct meta_txn *t, void *arg)
{
    return meta_inode_scan(t, count_null, arg);
}

/* Open database db of the store straight through LMDB, the store closed
 * meanwhile, as a bad disk or a bug would touch it; raw_end commits and
 * opens the store again. */
struct raw {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    uint8_t kb[8];
};

static MDB_val raw_begin(struct raw *r, const char *db, uint64_t ino)
{
    meta_store_close(st);
    st = NULL;
    assert_int_equal(mdb_env_create(&r->env), 0);
    mdb_env_set_maxdbs(r->env, 16);
    mdb_env_set_mapsize(r->env, MAP_SIZE);
    assert_int_equal(mdb_env_open(r->env, tmpdir, 0, 0600), 0);
    assert_int_equal(mdb_txn_begin(r->env, NULL, 0, &r->txn), 0);
    assert_int_equal(mdb_dbi_open(r->txn, db, 0, &r->dbi), 0);
    for (int i = 0; i < 8; i++)
        r->kb[i] = (uint8_t)(ino >> (56 - 8 * i));
    return (MDB_val){8, r->kb};
}

static void raw_end(struct raw *r)
{
    assert_int_equal(mdb_txn_commit(r->txn), 0);
    mdb_env_close(r->env);
    assert_int_equal(meta_store_open(tmpdir, 0, MAP_SIZE, &st), 0);
}

/* Overwrite inode ino's record with bytes. */
static void smash_record(uint64_t ino, const void *bytes, size_t len)
{
    struct raw r;
    MDB_val k = raw_begin(&r, "inodes", ino), v = {len, (void *)bytes};
    assert_int_equal(mdb_put(r.txn, r.dbi, &k, &v, 0), 0);
    raw_end(&r);
}

static void test_corrupt_record_refused(void **state)
{
    (void)state;
    file_rec(&in_a);
    in_a.ino = 500;
    assert_int_equal(meta_store_write(st, NULL, put_inode_txn, &in_a), 0);
    in_a.ino = 501;
    assert_int_equal(meta_store_write(st, NULL, put_inode_txn, &in_a), 0);
    smash_record(500, "\x02\xff\xff", 3);
    in_b.ino = 500;
    assert_int_equal(meta_store_read(st, NULL, get_inode_txn, &in_b), -EUCLEAN);
    in_b.ino = 501;
    assert_int_equal(meta_store_read(st, NULL, get_inode_txn, &in_b), 0);
    /* A record filed under another inode's number is refused too. */
    in_a.ino = 502;
    int len = meta_inode_encode(&in_a, rec, sizeof(rec));
    smash_record(501, rec, (size_t)len);
    in_b.ino = 501;
    assert_int_equal(meta_store_read(st, NULL, get_inode_txn, &in_b), -EUCLEAN);
    int bad = 0;
    assert_int_equal(meta_store_read(st, NULL, scan_txn, &bad), 0);
    assert_int_equal(bad, 2);
}

/* ---- group commit ---- */

struct writer {
    int idx;
    pthread_barrier_t *go;
    int failures, first_rc;
    int touched_wrong;
};

struct add_arg {
    uint64_t parent;
    char name[32];
    uint64_t ino;
};

/* A create as the store sees it: a new inode and the name for it. */
static int add_txn(struct meta_txn *t, void *arg)
{
    struct add_arg *a = arg;
    int rc = meta_alloc_ino(t, &a->ino);
    if (rc)
        return rc;
    struct meta_inode *in = calloc(1, sizeof(*in));
    if (!in)
        return -ENOMEM;
    meta_inode_clear(in);
    in->ino = a->ino;
    in->mode = S_IFREG | 0644;
    in->nlink = 1;
    in->parent = a->parent;
    rc = meta_inode_put(t, in);
    free(in);
    return rc ? rc : meta_dentry_add(t, a->parent, a->name, a->ino, DT_REG);
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    pthread_barrier_wait(w->go);
    for (int i = 0; i < PER_THREAD; i++) {
        struct add_arg a = {.parent = (1ull << 40) + (uint64_t)w->idx};
        snprintf(a.name, sizeof(a.name), "f%d", i);
        struct meta_touched touched = {0};
        struct meta_req rq = {.touched = &touched};
        /* Half the writers flat (batched together), half one per batch. */
        int rc = w->idx % 2 ? meta_store_write_flat(st, &rq, add_txn, &a)
                            : meta_store_write(st, &rq, add_txn, &a);
        if (rc && !w->failures++)
            w->first_rc = rc;
        /* The request learns what it changed: the new inode (with its
         * attributes as written) and the directory. */
        if (rc == 0 && (touched.n != 2 || touched.ino[0] != a.ino || !touched.has_attr[0] ||
                        touched.attr[0].ino != a.ino || touched.ino[1] != a.parent)) {
            if (!w->touched_wrong)
                print_error("touched n=%u ino0=%llx (want %llx) has_attr0=%d ino1=%llx\n",
                            touched.n, (unsigned long long)touched.ino[0],
                            (unsigned long long)a.ino, touched.has_attr[0],
                            (unsigned long long)touched.ino[1]);
            w->touched_wrong++;
        }
    }
    return NULL;
}

struct check_arg {
    uint64_t parent;
    int missing;
    uint64_t *inos;
    int n;
};

static int check_txn(struct meta_txn *t, void *arg)
{
    struct check_arg *c = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        char name[32];
        snprintf(name, sizeof(name), "f%d", i);
        uint64_t ino;
        uint8_t type;
        if (meta_dentry_get(t, c->parent, name, &ino, &type) || type != DT_REG ||
            meta_inode_get(t, ino, &in_b) || in_b.parent != c->parent) {
            c->missing++;
            continue;
        }
        c->inos[c->n++] = ino;
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_group_commit_many_writers(void **state)
{
    (void)state;
    struct writer w[NTHREADS];
    pthread_t th[NTHREADS];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (struct writer){.idx = i, .go = &go};
        assert_int_equal(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    for (int i = 0; i < NTHREADS; i++) {
        if (w[i].failures)
            print_error("writer %d: %d failures, first %d\n", i, w[i].failures, w[i].first_rc);
        assert_int_equal(w[i].failures, 0);
        assert_int_equal(w[i].touched_wrong, 0);
    }
    /* Every write is there, after a reopen too, and no two creates got
     * the same inode number. */
    for (int pass = 0; pass < 2; pass++) {
        uint64_t *inos = calloc(NTHREADS * PER_THREAD, sizeof(*inos));
        assert_non_null(inos);
        int n = 0;
        for (int i = 0; i < NTHREADS; i++) {
            struct check_arg c = {.parent = (1ull << 40) + (uint64_t)i, .inos = inos + n};
            assert_int_equal(meta_store_read(st, NULL, check_txn, &c), 0);
            assert_int_equal(c.missing, 0);
            n += c.n;
        }
        qsort(inos, (size_t)n, sizeof(*inos), cmp_u64);
        for (int i = 1; i < n; i++)
            assert_true(inos[i] != inos[i - 1]);
        free(inos);
        reopen(0);
    }
}

/* Batches shaped by hand: a holder's write runs (as its batch's leader)
 * until the writes after it have queued, in order, so that they make the
 * next batch together. */
struct bw {
    bool flat, fail, late, keep; /* fail before writing, or after (late) */
    int wait_queued;             /* (the holder) wait for this many queued */
    int entered;
    uint64_t ino;
    int rc;
    struct meta_reply reply;
    pthread_t th;
};

static int enc_ino(struct proto_enc *e, const void *rep)
{
    proto_put_U64(e, rep);
    return 0;
}

static int bw_txn(struct meta_txn *t, void *arg)
{
    struct bw *b = arg;
    __atomic_store_n(&b->entered, 1, __ATOMIC_RELEASE);
    for (int i = 0; b->wait_queued && i < 10000 && meta_store_queued(st) < b->wait_queued; i++)
        usleep(1000);
    if (b->fail && !b->late)
        return -EINVAL;
    int rc = meta_xattr_put(t, b->ino, "user.k", "v", 1);
    return rc ? rc : b->fail ? -EINVAL : 0;
}

static void *bw_main(void *arg)
{
    struct bw *b = arg;
    struct meta_req rq = {0};
    if (b->keep) {
        b->reply = (struct meta_reply){
            .client = 9, .seq = b->ino, .tag = (uint16_t)b->ino, .encode = enc_ino, .rep = &b->ino};
        rq.reply = &b->reply;
    }
    b->rc =
        b->flat ? meta_store_write_flat(st, &rq, bw_txn, b) : meta_store_write(st, &rq, bw_txn, b);
    return NULL;
}

static int bw_has(struct meta_txn *t, void *arg)
{
    MDB_val v;
    return meta_xattr_get(t, *(uint64_t *)arg, "user.k", &v);
}

static int kept_reply(uint64_t client, uint16_t tag, uint64_t seq, int *status, uint8_t *buf,
                      uint32_t cap, uint32_t *len)
{
    return meta_reply_get(st, client, tag, seq, status, buf, cap, len);
}

static void run_batch(struct bw *w, int n, int *found)
{
    static uint64_t next = 100;
    struct bw hold = {.flat = true, .ino = next++, .wait_queued = n};
    assert_int_equal(pthread_create(&hold.th, NULL, bw_main, &hold), 0);
    for (int k = 0; k < 10000 && !__atomic_load_n(&hold.entered, __ATOMIC_ACQUIRE); k++)
        usleep(1000);
    for (int i = 0; i < n; i++) {
        w[i].ino = next++;
        assert_int_equal(pthread_create(&w[i].th, NULL, bw_main, &w[i]), 0);
        for (int k = 0; i < n - 1 && k < 10000 && meta_store_queued(st) < i + 1; k++)
            usleep(1000);
    }
    pthread_join(hold.th, NULL);
    assert_int_equal(hold.rc, 0);
    for (int i = 0; i < n; i++) {
        pthread_join(w[i].th, NULL);
        found[i] = meta_store_read(st, NULL, bw_has, &w[i].ino);
    }
}

/* A write queued behind a running batch: its time until its own batch
 * began is counted as its wait (meta_req.wait_ns, what STATS shows apart
 * from service), and the batch it waited for was at least HOLD_MS long. */
#define HOLD_MS 30
struct waiter {
    bool hold;
    int entered;
    uint64_t wait_ns;
    int rc;
    pthread_t th;
};

static int waiter_txn(struct meta_txn *t, void *arg)
{
    struct waiter *w = arg;
    (void)t;
    __atomic_store_n(&w->entered, 1, __ATOMIC_RELEASE);
    for (int i = 0; w->hold && i < 10000 && meta_store_queued(st) < 1; i++)
        usleep(1000);
    if (w->hold)
        usleep(HOLD_MS * 1000);
    return 0;
}

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    struct meta_req rq = {.wait_ns = &w->wait_ns};
    w->rc = meta_store_write(st, &rq, waiter_txn, w);
    return NULL;
}

static void test_write_wait(void **state)
{
    (void)state;
    struct waiter hold = {.hold = true}, next = {0};
    assert_int_equal(pthread_create(&hold.th, NULL, waiter_main, &hold), 0);
    for (int k = 0; k < 10000 && !__atomic_load_n(&hold.entered, __ATOMIC_ACQUIRE); k++)
        usleep(1000);
    assert_int_equal(pthread_create(&next.th, NULL, waiter_main, &next), 0);
    pthread_join(hold.th, NULL);
    pthread_join(next.th, NULL);
    assert_int_equal(hold.rc, 0);
    assert_int_equal(next.rc, 0);
    assert_true(next.wait_ns >= HOLD_MS * 1000000ull);
    assert_true(hold.wait_ns < next.wait_ns);
    /* Without a place to note it, nothing is noted (and nothing breaks). */
    assert_int_equal(meta_store_write(st, NULL, waiter_txn, &(struct waiter){0}), 0);
}

/* What a caller is told matches what the store holds: a success is kept,
 * an error is not, whatever its neighbours in the batch did. */
static void test_batch_neighbours(void **state)
{
    (void)state;
    int found[4];
    int status;
    uint8_t buf[64];
    uint32_t len;

    /* A flat write failing before it writes: its neighbours commit. */
    struct bw a[3] = {{.flat = true, .keep = true},
                      {.flat = true, .fail = true, .keep = true},
                      {.flat = true, .keep = true}};
    run_batch(a, 3, found);
    assert_int_equal(a[0].rc, 0);
    assert_int_equal(a[1].rc, -EINVAL);
    assert_int_equal(a[2].rc, 0);
    assert_int_equal(found[0], 0);
    assert_int_equal(found[1], -ENOENT);
    assert_int_equal(found[2], 0);
    /* Their replies are kept; the failure's is not. */
    for (int i = 0; i < 3; i++)
        assert_int_equal(
            kept_reply(9, (uint16_t)a[i].ino, a[i].ino, &status, buf, sizeof(buf), &len),
            i == 1 ? 0 : 1);

    /* A flat write failing after it wrote breaks its promise: the batch's
     * earlier writes are lost (EIO, nothing kept, no reply kept that
     * would answer a resend with a success), the later ones run again. */
    struct bw b[4] = {{.flat = true, .keep = true},
                      {.flat = true, .keep = true},
                      {.flat = true, .fail = true, .late = true, .keep = true},
                      {.flat = true, .keep = true}};
    run_batch(b, 4, found);
    assert_int_equal(b[0].rc, -EIO);
    assert_int_equal(b[1].rc, -EIO);
    assert_int_equal(b[2].rc, -EINVAL);
    assert_int_equal(b[3].rc, 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(found[i], -ENOENT);
        assert_int_equal(
            kept_reply(9, (uint16_t)b[i].ino, b[i].ino, &status, buf, sizeof(buf), &len), 0);
    }
    assert_int_equal(found[3], 0);
    assert_int_equal(kept_reply(9, (uint16_t)b[3].ino, b[3].ino, &status, buf, sizeof(buf), &len),
                     1);

    /* Any other write runs alone: failing after writing rolls back its
     * own writes and nobody else's. */
    struct bw c[3] = {{.flat = true}, {.fail = true, .late = true}, {.flat = true}};
    run_batch(c, 3, found);
    assert_int_equal(c[0].rc, 0);
    assert_int_equal(c[1].rc, -EINVAL);
    assert_int_equal(c[2].rc, 0);
    assert_int_equal(found[0], 0);
    assert_int_equal(found[1], -ENOENT);
    assert_int_equal(found[2], 0);
}

/* ---- kept replies ---- */

struct change {
    uint64_t ino;
    int result; /* what fn returns after writing */
    bool write;
    bool here; /* keep the reply itself (a cross-MDT commit) */
};

static int change_txn(struct meta_txn *t, void *arg)
{
    struct change *c = arg;
    if (c->write) {
        int rc = meta_xattr_put(t, c->ino, "user.c", "x", 1);
        if (rc)
            return rc;
    }
    if (c->here) {
        int rc = meta_reply_here(t);
        if (rc)
            return rc;
    }
    return c->result;
}

static int has_c(struct meta_txn *t, void *arg)
{
    MDB_val v;
    return meta_xattr_get(t, *(uint64_t *)arg, "user.c", &v);
}

struct payload {
    char text[40];
};

static int enc_text(struct proto_enc *e, const void *rep)
{
    const struct payload *p = rep;
    struct proto_str s = proto_str_c(p->text);
    proto_put_STR(e, &s);
    return 0;
}

/* Make change c with a reply record armed for (client 5, tag, seq). */
static int kept_change(struct change *c, uint16_t tag, uint64_t seq, const struct payload *p)
{
    struct meta_reply r = {
        .client = 5, .seq = seq, .tag = tag, .op = PROTO_OP_SETXATTR, .encode = enc_text, .rep = p};
    int rc = meta_store_write(st, &(struct meta_req){.reply = &r}, change_txn, c);
    return rc;
}

static void assert_kept(uint16_t tag, uint64_t seq, const struct payload *p)
{
    uint8_t buf[256], want[256];
    uint32_t len = 0;
    int status = 1;
    assert_int_equal(meta_reply_get(st, 5, tag, seq, &status, buf, sizeof(buf), &len), 1);
    assert_int_equal(status, 0);
    struct proto_enc e;
    proto_enc_init(&e, want, sizeof(want));
    enc_text(&e, p);
    assert_int_equal(len, e.len);
    assert_memory_equal(buf, want, e.len);
}

static void test_kept_replies(void **state)
{
    (void)state;
    struct payload p1 = {"first answer"}, p2 = {"second"};
    uint8_t buf[256];
    uint32_t len;
    int status;

    struct change ok = {.ino = 1, .write = true};
    assert_int_equal(kept_change(&ok, 1, 10, &p1), 0);
    assert_kept(1, 10, &p1);
    /* Too little room for the payload: said so, nothing overrun. */
    assert_int_equal(meta_reply_get(st, 5, 1, 10, &status, buf, 4, &len), -EMSGSIZE);
    /* Another client or slot has no record; an older seq of the slot was
     * answered; a newer one was not made yet. */
    assert_int_equal(meta_reply_get(st, 6, 1, 10, &status, buf, sizeof(buf), &len), 0);
    assert_int_equal(meta_reply_get(st, 5, 2, 10, &status, buf, sizeof(buf), &len), 0);
    assert_int_equal(meta_reply_get(st, 5, 1, 11, &status, buf, sizeof(buf), &len), 0);
    assert_int_equal(meta_reply_get(st, 5, 1, 9, &status, buf, sizeof(buf), &len), -EIO);

    /* A failed change and one that changed nothing keep nothing: made
     * again, they come out the same. */
    struct change bad = {.ino = 2, .write = true, .result = -EPERM};
    assert_int_equal(kept_change(&bad, 2, 20, &p1), -EPERM);
    assert_int_equal(meta_reply_get(st, 5, 2, 20, &status, buf, sizeof(buf), &len), 0);
    struct change none = {.ino = 3};
    assert_int_equal(kept_change(&none, 3, 30, &p1), 0);
    assert_int_equal(meta_reply_get(st, 5, 3, 30, &status, buf, sizeof(buf), &len), 0);

    /* A change that goes on across MDTs is kept only where its
     * coordinator commits it. */
    struct change cross = {.ino = 4, .write = true, .result = 1};
    assert_int_equal(kept_change(&cross, 4, 40, &p1), 1);
    assert_int_equal(meta_reply_get(st, 5, 4, 40, &status, buf, sizeof(buf), &len), 0);
    struct change commit = {.ino = 4, .write = true, .here = true};
    assert_int_equal(kept_change(&commit, 4, 40, &p2), 0);
    assert_kept(4, 40, &p2);

    /* The next change of a slot replaces its record; a late older one
     * does not. */
    assert_int_equal(kept_change(&ok, 1, 12, &p2), 0);
    assert_kept(1, 12, &p2);
    assert_int_equal(kept_change(&ok, 1, 11, &p1), 0);
    assert_kept(1, 12, &p2);

    /* Kept across a restart, with the change. */
    reopen(0);
    assert_kept(1, 12, &p2);
    assert_kept(4, 40, &p2);
    assert_int_equal(meta_store_read(st, NULL, has_c, &(uint64_t){1}), 0);
    assert_int_equal(meta_store_read(st, NULL, has_c, &(uint64_t){2}), -ENOENT);

    /* Pruning: nothing younger than the limit goes. */
    assert_int_equal(meta_reply_prune(st, 0), 0);
    assert_kept(1, 12, &p2);
    assert_int_equal(meta_reply_prune(st, INT64_MAX), 2);
    assert_int_equal(meta_reply_get(st, 5, 1, 12, &status, buf, sizeof(buf), &len), 0);
}

/* ---- reopen ---- */

struct fill {
    uint64_t file, dir, dev, link;
};

static int fill_txn(struct meta_txn *t, void *arg)
{
    struct fill *f = arg;
    int rc;
    dir_rec(&in_a, 0xabc);
    f->dir = in_a.ino;
    if ((rc = meta_inode_put(t, &in_a)))
        return rc;
    file_rec(&in_a);
    if ((rc = meta_alloc_ino(t, &in_a.ino)))
        return rc;
    f->file = in_a.ino;
    in_a.parent = f->dir;
    if ((rc = meta_inode_put(t, &in_a)) ||
        (rc = meta_dentry_add(t, f->dir, "file", f->file, DT_REG)))
        return rc;
    dev_rec(&in_a);
    if ((rc = meta_alloc_ino(t, &in_a.ino)))
        return rc;
    f->dev = in_a.ino;
    if ((rc = meta_inode_put(t, &in_a)) || (rc = meta_dentry_add(t, f->dir, "dev", f->dev, DT_CHR)))
        return rc;
    if ((rc = meta_alloc_ino(t, &f->link)))
        return rc;
    if ((rc = meta_symlink_put(t, f->link, "../target", 9)) ||
        (rc = meta_dentry_add(t, f->dir, "link", f->link, DT_LNK)) ||
        (rc = meta_xattr_put(t, f->file, "user.a", "\0\1\2", 3)) ||
        (rc = meta_intent_put(t, 77, "intent", 6)) || (rc = meta_pending_put(t, f->dev)))
        return rc;
    return 0;
}

static int pending_cb(void *arg, uint64_t ino)
{
    *(uint64_t *)arg = ino;
    return 0;
}

static int verify_txn(struct meta_txn *t, void *arg)
{
    struct fill *f = arg;
    uint64_t ino;
    uint8_t type;
    MDB_val v;
    assert_int_equal(meta_inode_get(t, f->dir, &in_b), 0);
    dir_rec(&in_a, 0xabc);
    assert_same_inode(&in_a, &in_b);
    assert_int_equal(meta_inode_get(t, f->file, &in_b), 0);
    file_rec(&in_a);
    in_a.ino = f->file;
    in_a.parent = f->dir;
    assert_same_inode(&in_a, &in_b);
    assert_int_equal(meta_inode_get(t, f->dev, &in_b), 0);
    dev_rec(&in_a);
    in_a.ino = f->dev;
    assert_same_inode(&in_a, &in_b);
    assert_int_equal(meta_dentry_get(t, f->dir, "file", &ino, &type), 0);
    assert_int_equal(ino, f->file);
    assert_int_equal(type, DT_REG);
    assert_int_equal(meta_dentry_get(t, f->dir, "dev", &ino, &type), 0);
    assert_int_equal(type, DT_CHR);
    assert_int_equal(meta_dentry_get(t, f->dir, "link", &ino, &type), 0);
    assert_int_equal(ino, f->link);
    assert_int_equal(meta_symlink_get(t, f->link, &v), 0);
    assert_int_equal(v.mv_size, 9);
    assert_memory_equal(v.mv_data, "../target", 9);
    assert_int_equal(meta_xattr_get(t, f->file, "user.a", &v), 0);
    assert_int_equal(v.mv_size, 3);
    assert_memory_equal(v.mv_data, "\0\1\2", 3);
    assert_int_equal(meta_intent_get(t, 77, &v), 0);
    assert_memory_equal(v.mv_data, "intent", 6);
    uint64_t pend = 0;
    assert_int_equal(meta_pending_scan(t, pending_cb, &pend), 0);
    assert_int_equal(pend, f->dev);
    assert_int_equal(meta_dir_is_empty(t, f->dir), 0);
    return 0;
}

static int alloc_txn(struct meta_txn *t, void *arg)
{
    return meta_alloc_ino(t, arg);
}

static void test_reopen_keeps_everything(void **state)
{
    (void)state;
    struct fill f;
    assert_int_equal(meta_store_write(st, NULL, fill_txn, &f), 0);
    assert_int_equal(meta_store_read(st, NULL, verify_txn, &f), 0);
    reopen(0);
    assert_int_equal(meta_store_read(st, NULL, verify_txn, &f), 0);
    /* Inode numbers handed out before are not handed out again. */
    uint64_t n;
    assert_int_equal(meta_store_write(st, NULL, alloc_txn, &n), 0);
    assert_true(n > f.file && n > f.dev && n > f.link);
    /* The store knows which MDT it is: another index is refused. */
    meta_store_close(st);
    st = NULL;
    struct meta_store *other = NULL;
    assert_int_equal(meta_store_open(tmpdir, 3, MAP_SIZE, &other), -EINVAL);
    assert_null(other);
    assert_int_equal(meta_store_open(tmpdir, 0, MAP_SIZE, &st), 0);
    assert_int_equal(meta_store_read(st, NULL, verify_txn, &f), 0);
}

/* ---- Data-on-MDT records (dom_rec.h) ---- */

struct dom_op {
    int op; /* 0 write, 1 read, 2 truncate, 3 delete, 4 total */
    uint64_t ino, off, limit, max;
    uint32_t len;
    uint8_t *buf;
    uint64_t held;
};

static int dom_txn(struct meta_txn *t, void *arg)
{
    struct dom_op *o = arg;
    switch (o->op) {
    case 0:
        return meta_dom_write(t, o->ino, o->off, o->buf, o->len, o->limit, o->max);
    case 1:
        return meta_dom_read(t, o->ino, o->off, o->buf, o->len, &o->held);
    case 2:
        return meta_dom_truncate(t, o->ino, o->off);
    case 3:
        return meta_dom_del(t, o->ino);
    default:
        return meta_dom_total(t, &o->held);
    }
}

static int dom(int op, uint64_t ino, uint64_t off, uint8_t *buf, uint32_t len, uint64_t *held)
{
    struct dom_op o = {op, ino, off, 1u << 20, UINT64_MAX, len, buf, 0};
    int rc = op == 1 || op == 4 ? meta_store_read(st, NULL, dom_txn, &o)
                                : meta_store_write(st, NULL, dom_txn, &o);
    if (held)
        *held = o.held;
    return rc;
}

static int count_dom(void *arg, uint64_t ino, uint64_t len)
{
    uint64_t *sum = arg;
    sum[0]++;
    sum[1] += len + ino * 0;
    return 0;
}

static int dom_scan_txn(struct meta_txn *t, void *arg)
{
    return meta_dom_scan(t, count_dom, arg);
}

/* Random writes, reads and truncates of two files against a model in
 * memory; the MDT's total follows. */
static void test_dom_model(void **state)
{
    (void)state;
    enum { CAP = 300000 };
    static uint8_t model[2][CAP], got[CAP], data[CAP];
    uint64_t len[2] = {0, 0}, held;
    srand(7);
    for (int step = 0; step < 600; step++) {
        int f = rand() % 2, what = rand() % 10;
        uint64_t ino = 1000 + (uint64_t)f;
        uint64_t off = (uint64_t)(rand() % (CAP - 1));
        uint32_t n = (uint32_t)(rand() % (what < 2 ? 70000 : 9000)) + 1;
        if (off + n > CAP)
            n = (uint32_t)(CAP - off);
        if (what < 5) {
            for (uint32_t i = 0; i < n; i++)
                data[i] = (uint8_t)rand();
            assert_int_equal(dom(0, ino, off, data, n, NULL), 0);
            memcpy(model[f] + off, data, n);
            if (off + n > len[f]) {
                /* zeros between the old end and the write */
                if (off > len[f])
                    memset(model[f] + len[f], 0, off - len[f]);
                len[f] = off + n;
            }
        } else if (what < 8) {
            assert_int_equal(dom(1, ino, off, got, n, &held), 0);
            assert_int_equal(held, len[f]);
            for (uint32_t i = 0; i < n; i++)
                if (got[i] != (off + i < len[f] ? model[f][off + i] : 0))
                    fail_msg("step %d file %d: byte %llu is %u", step, f,
                             (unsigned long long)(off + i), got[i]);
        } else if (what == 8) {
            uint64_t size = (uint64_t)rand() % (len[f] + 2);
            assert_int_equal(dom(2, ino, size, NULL, 0, NULL), 0);
            if (size < len[f])
                len[f] = size;
        } else if (rand() % 20 == 0) {
            assert_int_equal(dom(3, ino, 0, NULL, 0, NULL), 0);
            len[f] = 0;
        }
        assert_int_equal(dom(4, 0, 0, NULL, 0, &held), 0);
        assert_int_equal(held, len[0] + len[1]);
    }
    uint64_t sum[2] = {0, 0};
    assert_int_equal(meta_store_read(st, NULL, dom_scan_txn, sum), 0);
    assert_int_equal(sum[0], (len[0] > 0) + (len[1] > 0));
    assert_int_equal(sum[1], len[0] + len[1]);
}

/* A sample of 64 KiB takes one page per chunk: no run of contiguous
 * pages that a free list fragmented by deletes would have to find
 * (dom_rec.c), and no page half empty. */
static void test_dom_no_overflow(void **state)
{
    (void)state;
    static uint8_t data[65536];
    memset(data, 0x5a, sizeof(data));
    for (uint64_t ino = 40; ino < 48; ino++)
        assert_int_equal(dom(0, ino, 0, data, sizeof(data), NULL), 0);
    assert_int_equal(dom(3, 41, 0, NULL, 0, NULL), 0);
    struct raw r;
    raw_begin(&r, "dom", 0);
    MDB_stat ms;
    assert_int_equal(mdb_stat(r.txn, r.dbi, &ms), 0);
    assert_int_equal(ms.ms_entries, 7 * 17); /* 16 of 4,072 bytes, one of 384 */
    /* a page each, and the short one beside its key in a leaf */
    assert_int_equal(ms.ms_overflow_pages, 7 * 16);
    raw_end(&r);
}

/* Flip byte at of chunk idx of inode ino's DoM record (dom_rec.c: u32
 * CRC, then the bytes), as a bad disk would. */
static void smash_dom(uint64_t ino, uint32_t idx, size_t at)
{
    struct raw r;
    raw_begin(&r, "dom", ino);
    uint8_t kb[12];
    memcpy(kb, r.kb, 8);
    for (int i = 0; i < 4; i++)
        kb[8 + i] = (uint8_t)(idx >> (24 - 8 * i));
    MDB_val k = {12, kb}, v;
    assert_int_equal(mdb_get(r.txn, r.dbi, &k, &v), 0);
    uint8_t *copy = malloc(v.mv_size);
    memcpy(copy, v.mv_data, v.mv_size);
    copy[at] ^= 0x40;
    MDB_val nv = {v.mv_size, copy};
    assert_int_equal(mdb_put(r.txn, r.dbi, &k, &nv, 0), 0);
    free(copy);
    raw_end(&r);
}

/* A damaged chunk is EIO for whoever reads it or keeps part of it, and
 * nothing else; limits are kept. */
static void test_dom_checks(void **state)
{
    (void)state;
    static uint8_t data[100000], got[100000];
    memset(data, 0xab, sizeof(data));
    assert_int_equal(dom(0, 7, 0, data, 100000, NULL), 0); /* chunks 0..24 */
    /* chunk 9 holds bytes 36,648..40,719: damage its byte 40,100 */
    smash_dom(7, 9, 4 + 40100 - 36648);
    uint64_t held;
    assert_int_equal(dom(1, 7, 0, got, 1000, &held), 0);
    assert_int_equal(dom(1, 7, 39000, got, 1010, &held), -EIO);
    assert_int_equal(dom(1, 7, 36000, got, 640, &held), 0); /* chunk 8 */
    assert_int_equal(dom(1, 7, 70000, got, 1000, &held), 0);
    assert_int_equal(dom(0, 7, 40500, data, 10, NULL), -EIO); /* keeps part of it */
    assert_int_equal(dom(2, 7, 40000, NULL, 0, NULL), -EIO);  /* so does a cut */
    assert_int_equal(dom(0, 7, 36000, data, 5000, NULL), 0);  /* replaces all of it */
    assert_int_equal(dom(1, 7, 36000, got, 5000, &held), 0);
    assert_memory_equal(got, data, 5000);
    /* A truncate that cuts a chunk keeps its bytes and their CRC right. */
    assert_int_equal(dom(2, 7, 41234, NULL, 0, NULL), 0);
    assert_int_equal(dom(1, 7, 40000, got, 2000, &held), 0);
    assert_int_equal(held, 41234);
    assert_memory_equal(got, data, 1234);
    assert_int_equal(got[1234], 0);
    assert_int_equal(dom(0, 7, 41234, data, 100000 - 41234, NULL), 0);
    /* The component's end, and the MDT's limit. */
    struct dom_op o = {0, 8, 60000, 65536, UINT64_MAX, 10000, data, 0};
    assert_int_equal(meta_store_write(st, NULL, dom_txn, &o), -EFBIG);
    o.off = 0;
    o.max = 100000 + 5000;
    assert_int_equal(meta_store_write(st, NULL, dom_txn, &o), -EDQUOT);
    o.max = 100000 + 10000; /* exactly full */
    assert_int_equal(meta_store_write(st, NULL, dom_txn, &o), 0);
    /* A limit below what is held: nothing grows, rewrites still land. */
    o.max = 0;
    o.len = 20000;
    assert_int_equal(meta_store_write(st, NULL, dom_txn, &o), -EDQUOT);
    o.len = 10000;
    assert_int_equal(meta_store_write(st, NULL, dom_txn, &o), 0);
    o.off = 9000;
    o.len = 2000;
    assert_int_equal(meta_store_write(st, NULL, dom_txn, &o), -EDQUOT);
    o.max = UINT64_MAX;
    assert_int_equal(meta_store_write(st, NULL, dom_txn, &o), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codec_round_trip),
        cmocka_unit_test(test_codec_refuses_truncated),
        cmocka_unit_test(test_codec_garbage),
        cmocka_unit_test_setup_teardown(test_corrupt_record_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_many_writers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_neighbours, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kept_replies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen_keeps_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dom_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dom_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dom_no_overflow, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
