/*
 * Unit tests of the client's routing over MDTs (client/route.c): which MDT
 * a request about an inode or a name goes to, for plain and striped
 * directories, and the prefix cache of routes that crossed MDTs.
 *
 * The file system handle is built here by hand (conn.h shows it), with
 * the stripes of the directories involved taught through cl_learn, so the
 * routing functions run without a cluster. The prefix cache is filled by
 * a walk, which asks MDTs: a fake MDT started here on loopback (every
 * MDT index points at it) answers GETATTR and LOOKUP from a table of four
 * directories and counts the LOOKUPs it served.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "client/route.h"
#include "common/util.h"
#include "net/net.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NMDT 4
/* route.c's PFX_TTL_NS: how long a walked route is kept. */
#define PFX_TTL_NS 1000000000ll

static uint64_t ino_on(uint32_t mdt, uint64_t n)
{
    return (uint64_t)mdt << 48 | n;
}

static uint64_t stripe(uint16_t count, uint16_t start)
{
    struct proto_dstripe d = {
        .count = count, .start = start, .nmdt = NMDT, .hash = PROTO_DS_HASH_FNV};
    return proto_ds_pack(d);
}

/* ---- the fake MDT: /a/b, with a on MDT 1 and b on MDT 2 ---- */

struct node {
    uint64_t ino, parent;
    const char *name;
};
static struct node tree[] = {
    {1, 0, NULL},
    {0, 1, "a"}, /* inode numbers set in setup */
    {0, 0, "b"},
};
static bool a_gone; /* LOOKUP of a answers ENOENT */
static int lookups;

static void node_attr(const struct node *n, struct proto_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->ino = n->ino;
    a->mode = S_IFDIR | 0755;
    a->nlink = 2;
}

static int h_getattr(void *ctx, struct net_req *req, struct net_rep *rep)
{
    (void)ctx;
    struct proto_getattr_req q;
    if (proto_dec_getattr_req(&req->dec, &q))
        return -EBADMSG;
    for (size_t i = 0; i < sizeof(tree) / sizeof(tree[0]); i++) {
        if (tree[i].ino == q.ino) {
            struct proto_getattr_rep r;
            memset(&r, 0, sizeof(r));
            node_attr(&tree[i], &r.attr);
            return proto_enc_getattr_rep(&rep->enc, &r);
        }
    }
    return -ENOENT;
}

static struct proto_lookup_rep lrep; /* 4 KiB of layout: off the stack */

static int h_lookup(void *ctx, struct net_req *req, struct net_rep *rep)
{
    (void)ctx;
    struct proto_lookup_req q;
    if (proto_dec_lookup_req(&req->dec, &q))
        return -EBADMSG;
    __atomic_add_fetch(&lookups, 1, __ATOMIC_RELAXED);
    for (size_t i = 1; i < sizeof(tree) / sizeof(tree[0]); i++) {
        const struct node *n = &tree[i];
        if (n->parent == q.parent && q.path.len == strlen(n->name) &&
            !memcmp(q.path.p, n->name, q.path.len)) {
            if (i == 1 && a_gone)
                return -ENOENT;
            memset(&lrep, 0, sizeof(lrep));
            node_attr(n, &lrep.attr);
            return proto_enc_lookup_rep(&rep->enc, &lrep);
        }
    }
    return -ENOENT;
}

static struct auth_key key = {{9, 9, 9}};
static struct net_server *srv;
static stria_fs_t *fs;
static struct ctarget targets[NMDT], *target_v[NMDT];

static stria_fs_t *fs_new(uint32_t nmdt)
{
    stria_fs_t *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    pthread_mutex_init(&f->ds_lock, NULL);
    pthread_rwlock_init(&f->map_lock, NULL);
    f->mdt_count = nmdt;
    return f;
}

static void fs_free(stria_fs_t *f)
{
    pthread_mutex_destroy(&f->ds_lock);
    pthread_rwlock_destroy(&f->map_lock);
    free(f);
}

static void learn(stria_fs_t *f, uint64_t ino, uint64_t ds)
{
    struct proto_attr a = {.ino = ino, .mode = S_IFDIR | 0755, .nlink = 2, .dstripe = ds};
    cl_learn(f, &a);
}

static int setup(void **state)
{
    (void)state;
    tree[1].ino = ino_on(1, 2);
    tree[2].ino = ino_on(2, 3);
    tree[2].parent = tree[1].ino;
    struct net_server_opts o = {.host = "127.0.0.1", .key = &key};
    o.handlers[PROTO_OP_GETATTR] = h_getattr;
    o.handlers[PROTO_OP_LOOKUP] = h_lookup;
    if (net_server_start(&o, &srv))
        return -1;
    fs = fs_new(NMDT);
    fs->key = key;
    fs->client_id = 77;
    fs->conf.timeout_ms = 10000;
    fs->conf.connect_timeout_ms = 10000;
    for (uint32_t i = 0; i < NMDT; i++) {
        struct ctarget *t = &targets[i];
        t->kind = PROTO_NODE_META;
        t->index = i;
        pthread_mutex_init(&t->lock, NULL);
        snprintf(t->host, sizeof(t->host), "127.0.0.1");
        t->port = net_server_port(srv);
        target_v[i] = t;
    }
    fs->mdt = target_v;
    fs->nmdt_slots = NMDT;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (uint32_t i = 0; i < NMDT; i++) {
        while (targets[i].nidle)
            net_close(targets[i].idle[--targets[i].nidle]);
        pthread_mutex_destroy(&targets[i].lock);
    }
    fs_free(fs);
    net_server_stop(srv);
    return 0;
}

/* ---- which MDT ---- */

static void test_inode_mdt(void **state)
{
    (void)state;
    assert_int_equal(proto_ino_mdt(1), 0);
    assert_int_equal(proto_ino_mdt(ino_on(3, 12345)), 3);
    assert_int_equal(proto_ino_mdt(ino_on(0xffff, 1)), 0xffff);
}

static void test_plain_directory(void **state)
{
    (void)state;
    stria_fs_t *f = fs_new(NMDT);
    uint64_t d = ino_on(2, 10);
    learn(f, d, 0);
    const char *names[] = {"a", "b", "zz", ".", "..", "a-much-longer-name-than-the-others"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        assert_int_equal(cl_name_mdt(f, d, names[i], strlen(names[i])), 2);
    fs_free(f);
}

static void test_striped_directory(void **state)
{
    (void)state;
    stria_fs_t *f = fs_new(NMDT);
    uint64_t d = ino_on(1, 10), ds = stripe(3, 3); /* shards on MDTs 3, 0, 1 */
    learn(f, d, ds);
    assert_int_equal(proto_ds_shard_mdt(ds, 0), 3);
    assert_int_equal(proto_ds_shard_mdt(ds, 1), 0);
    assert_int_equal(proto_ds_shard_mdt(ds, 2), 1);
    int per_mdt[NMDT] = {0};
    for (int i = 0; i < 300; i++) {
        char name[16];
        snprintf(name, sizeof(name), "f%d", i);
        uint32_t m = cl_name_mdt(f, d, name, strlen(name));
        assert_int_equal(m, proto_ds_name_mdt(ds, 1, name, strlen(name)));
        /* The same name always goes to the same shard. */
        assert_int_equal(cl_name_mdt(f, d, name, strlen(name)), m);
        assert_true(m < NMDT);
        per_mdt[m]++;
    }
    assert_int_equal(per_mdt[2], 0); /* no shard there */
    assert_true(per_mdt[3] > 0 && per_mdt[0] > 0 && per_mdt[1] > 0);
    /* "." and ".." are the directory itself: its inode's MDT. */
    assert_int_equal(cl_name_mdt(f, d, ".", 1), 1);
    assert_int_equal(cl_name_mdt(f, d, "..", 2), 1);
    /* Only a directory's own attributes teach its stripe: a remote
     * entry's (nlink 0) and a file's do not overwrite it. */
    struct proto_attr remote = {.ino = d, .mode = S_IFDIR, .nlink = 0, .dstripe = 0};
    cl_learn(f, &remote);
    struct proto_attr file = {.ino = d, .mode = S_IFREG | 0644, .nlink = 1};
    cl_learn(f, &file);
    struct proto_attr bad = {.ino = d, .mode = S_IFDIR, .nlink = 2, .dstripe = 5};
    cl_learn(f, &bad);
    uint64_t got;
    assert_int_equal(cl_dir_stripe(f, d, &got), 0);
    assert_int_equal(got, ds);

    /* With one MDT everything stays on it, whatever the stripe says. */
    f->mdt_count = 1;
    assert_int_equal(cl_name_mdt(f, d, "f1", 2), 1);
    fs_free(f);
}

static void test_route_first_component(void **state)
{
    (void)state;
    stria_fs_t *f = fs_new(NMDT);
    uint64_t d = ino_on(1, 10), ds = stripe(4, 0);
    learn(f, d, ds);
    learn(f, 1, 0);
    struct cl_route rt;
    cl_route(f, d, "x/y/z", &rt);
    assert_int_equal(rt.mdt, proto_ds_name_mdt(ds, 1, "x", 1));
    assert_int_equal(rt.parent, d);
    assert_string_equal(rt.path, "x/y/z");
    assert_false(rt.cached);
    /* An absolute path starts at the root (a plain directory on MDT 0). */
    cl_route(f, d, "/x/y", &rt);
    assert_int_equal(rt.mdt, 0);
    assert_false(rt.cached);
    /* Nothing to walk again after an answer or a plain error. */
    int rc = 0;
    assert_false(cl_route_again(f, &rt, &rc));
    rc = -ENOENT;
    assert_false(cl_route_again(f, &rt, &rc));
    assert_int_equal(rc, -ENOENT);
    fs_free(f);
}

/* ---- the prefix cache ---- */

static void test_prefix_cache(void **state)
{
    (void)state;
    learn(fs, 1, 0);
    uint64_t a = tree[1].ino, b = tree[2].ino;
    struct cl_route rt;
    cl_route(fs, 1, "a/b/c", &rt);
    assert_false(rt.cached);
    assert_int_equal(rt.mdt, 0);
    /* MDT 0 says EREMOTE: the client walks a and b itself, one LOOKUP
     * each, and sends c from b, on b's MDT. */
    int rc = -EREMOTE, before = lookups;
    assert_true(cl_route_again(fs, &rt, &rc));
    assert_int_equal(lookups - before, 2);
    assert_int_equal(rt.parent, b);
    assert_string_equal(rt.path, "c");
    assert_int_equal(rt.mdt, 2);

    /* The next request on that path goes straight there (kept), unless
     * the route's time ran out in between (a slow machine). */
    int64_t t0 = (int64_t)util_now_mono_ns();
    cl_route(fs, 1, "a/b/d", &rt);
    int64_t t1 = (int64_t)util_now_mono_ns();
    if (t1 - t0 < PFX_TTL_NS / 2) {
        assert_true(rt.cached);
        assert_int_equal(rt.parent, b);
        assert_string_equal(rt.path, "d");
        assert_int_equal(rt.mdt, 2);
    }
    /* Another start or another directory is not that route. */
    cl_route(fs, a, "a/b/d", &rt);
    assert_false(rt.cached);
    cl_route(fs, 1, "a/bb/d", &rt);
    assert_false(rt.cached);

    /* A cached route that led astray (ENOENT) is walked afresh. */
    cl_route(fs, 1, "a/b/c", &rt);
    if (rt.cached) {
        rc = -ENOENT;
        before = lookups;
        assert_true(cl_route_again(fs, &rt, &rc));
        assert_int_equal(lookups - before, 2);
        assert_false(rt.cached);
        assert_int_equal(rt.parent, b);
        /* ...and when the walk finds the directory gone, the caller gets
         * the walk's error. */
        cl_route(fs, 1, "a/b/c", &rt);
        a_gone = true;
        rc = -ENOENT;
        bool again = cl_route_again(fs, &rt, &rc);
        a_gone = false;
        if (rt.tries) { /* it was cached, so it walked */
            assert_false(again);
            assert_int_equal(rc, -ENOENT);
        }
    }

    /* Expired: after the route's time, the request goes by its first
     * component again. Bounded wait, no assertion on how long it took. */
    int rc2 = -EREMOTE;
    cl_route(fs, 1, "a/b/c", &rt);
    if (!rt.cached)
        assert_true(cl_route_again(fs, &rt, &rc2));
    int64_t put = (int64_t)util_now_mono_ns();
    while ((int64_t)util_now_mono_ns() - put <= PFX_TTL_NS)
        usleep(50 * 1000);
    cl_route(fs, 1, "a/b/c", &rt);
    assert_false(rt.cached);
    assert_int_equal(rt.mdt, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inode_mdt),         cmocka_unit_test(test_plain_directory),
        cmocka_unit_test(test_striped_directory), cmocka_unit_test(test_route_first_component),
        cmocka_unit_test(test_prefix_cache),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
