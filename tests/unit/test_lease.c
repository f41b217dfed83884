/*
 * Unit tests of the MDT's lease table (meta/lease.h): grants, revocation
 * before a change is acknowledged, the changer keeping its lease, grants
 * refused for state read before a change, and the two ways a wait ends
 * without an acknowledgement (the holder's channel closes; its lease runs
 * out); and the write-behind grant: given only to a request running
 * alone, renewed for its holder, and revoked by any other client's request,
 * which waits until the holder acknowledges (or its channel closes, or the
 * grant runs out). A poll with nothing to say parks and is woken when
 * there is (a revocation, its channel replaced, the table stopping). A
 * revocation says when only a directory's names changed.
 * Clients are numbers and channels are addresses, as metad passes them; a
 * change by another client runs on its own thread, since it blocks until
 * the holder answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/util.h"
#include "meta/service/lease.h"

#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define A 0xaaull /* a client with a revocation channel */
#define B 0xbbull /* another client */

static int chan_a, chan_b;                  /* their channels' identities */
static uint8_t buf[PROTO_MAX_REVOKES * 17]; /* 16 bytes and a kind each */

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Open (or poll) A's channel without parking; returns the revocations. */
static uint32_t poll_a(struct lease_tab *t, uint64_t acked, uint64_t *first)
{
    int n = lease_poll(t, A, &chan_a, acked, false, 0, false, buf, sizeof(buf), first);
    assert_true(n >= 0);
    return (uint32_t)n;
}

/* What metad's server does with a parked poll, as the table sees it: the
 * ids it was woken for, the last first. */
static uint64_t woken[16];
static int nwoken; /* atomic */
static uint64_t next_park;

static void wake(void *ctx, uint64_t park)
{
    (void)ctx;
    int i = __atomic_load_n(&nwoken, __ATOMIC_SEQ_CST);
    if (i < 16)
        woken[i] = park;
    __atomic_store_n(&nwoken, i + 1, __ATOMIC_SEQ_CST);
}

static bool was_woken(uint64_t park)
{
    int n = __atomic_load_n(&nwoken, __ATOMIC_SEQ_CST);
    for (int i = 0; i < n && i < 16; i++)
        if (woken[i] == park)
            return true;
    return false;
}

/* Poll client's channel conn as a server would: it parks with nothing to
 * say, and is served again once woken or after ms. */
static uint32_t poll_wait(struct lease_tab *t, uint64_t client, void *conn, uint64_t acked, int ms,
                          uint64_t *first)
{
    uint64_t park = ++next_park;
    int n = lease_poll(t, client, conn, acked, false, park, false, buf, sizeof(buf), first);
    if (n != LEASE_PARKED)
        return (uint32_t)n;
    for (int i = 0; i < ms && !was_woken(park); i++)
        usleep(1000);
    n = lease_poll(t, client, conn, acked, false, 0, true, buf, sizeof(buf), first);
    assert_true(n >= 0);
    return (uint32_t)n;
}

/* A table whose leases last term_ms, with A's channel open. */
static struct lease_tab *table_with_a(uint32_t term_ms)
{
    struct lease_tab *t;
    uint64_t first;
    assert_int_equal(lease_tab_create(term_ms, &t), 0);
    lease_set_wake(t, wake, NULL);
    __atomic_store_n(&nwoken, 0, __ATOMIC_SEQ_CST);
    poll_a(t, 0, &first);
    return t;
}

static struct proto_lease grant(struct lease_tab *t, uint64_t client, uint64_t ino, uint64_t mark)
{
    struct proto_leases out;
    lease_grant(t, mark, client, &ino, 1, &out);
    assert_int_equal(out.n, 1);
    assert_int_equal(out.l[0].ino, ino);
    return out.l[0];
}

struct change {
    struct lease_tab *t;
    uint64_t client;
    struct meta_touched touched;
    struct proto_leases out;
    int done; /* atomically set when lease_changed returned */
};

static void *change_main(void *arg)
{
    struct change *c = arg;
    lease_changed(c->t, c->client, &c->touched, true, &c->out);
    __atomic_store_n(&c->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void change_one(struct change *c, struct lease_tab *t, uint64_t client, uint64_t ino)
{
    memset(c, 0, sizeof(*c));
    c->t = t;
    c->client = client;
    c->touched.n = 1;
    c->touched.ino[0] = ino;
}

static void test_revoked_before_change_is_acknowledged(void **state)
{
    (void)state;
    uint64_t first;
    struct lease_tab *t = table_with_a(600000);
    assert_int_equal(poll_a(t, 0, &first), 0);
    struct proto_lease l = grant(t, A, 10, lease_read_begin(t));
    assert_int_equal(l.ms, 600000);
    assert_true(l.gen > 0);

    struct change c;
    change_one(&c, t, B, 10);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, change_main, &c), 0);
    /* A hears of it on its channel; until it acknowledges, the change waits
     * (its lease has ten minutes left). */
    uint32_t n = poll_wait(t, A, &chan_a, 0, 60000, &first);
    assert_int_equal(n, 1);
    assert_int_equal(get64(buf), 10);
    assert_int_equal(get64(buf + 8), l.gen);
    assert_int_equal(__atomic_load_n(&c.done, __ATOMIC_SEQ_CST), 0);
    assert_int_equal(poll_a(t, first, &first), 0);
    pthread_join(th, NULL);
    /* B has no channel: it learns the generations but gets no lease. */
    assert_int_equal(c.out.n, 1);
    assert_int_equal(c.out.l[0].gen_before, l.gen);
    assert_true(c.out.l[0].gen > l.gen);
    assert_int_equal(c.out.l[0].ms, 0);
    assert_int_equal(c.out.instance, lease_instance(t));
    lease_tab_destroy(t);
}

/* B changes what A holds; A acknowledges. The kind of A's revocation. */
static uint8_t kind_heard(struct lease_tab *t, const struct change *proto)
{
    uint64_t first;
    grant(t, A, proto->touched.ino[0], lease_read_begin(t));
    struct change c = *proto;
    c.t = t;
    c.client = B;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, change_main, &c), 0);
    uint32_t n = poll_wait(t, A, &chan_a, 0, 60000, &first);
    assert_int_equal(n, 1);
    assert_int_equal(get64(buf), proto->touched.ino[0]);
    uint8_t kind = buf[16]; /* after the one entry */
    assert_int_equal(poll_a(t, first, &first), 0);
    pthread_join(th, NULL);
    return kind;
}

static void test_revocation_says_names_only(void **state)
{
    (void)state;
    struct lease_tab *t = table_with_a(600000);
    struct change c;
    /* A create in a directory: only its names (and times) changed. */
    change_one(&c, t, B, 10);
    c.touched.names = true;
    c.touched.has_attr[0] = true;
    c.touched.attr[0].mode = S_IFDIR | 0755;
    assert_int_equal(kind_heard(t, &c), PROTO_REVOKE_NAMES);
    /* A chmod of the directory: anything may have. */
    c.touched.names = false;
    assert_int_equal(kind_heard(t, &c), 0);
    /* A namespace operation's file (an unlink's link count). */
    change_one(&c, t, B, 11);
    c.touched.names = true;
    c.touched.has_attr[0] = true;
    c.touched.attr[0].mode = S_IFREG | 0644;
    assert_int_equal(kind_heard(t, &c), 0);
    /* A directory whose attributes the change did not say (removed). */
    change_one(&c, t, B, 12);
    c.touched.names = true;
    assert_int_equal(kind_heard(t, &c), 0);
    lease_tab_destroy(t);
}

/* Several revocations in one poll: every pair first, then a kind each, in
 * the pairs' order. */
static void test_kinds_follow_the_pairs(void **state)
{
    (void)state;
    uint64_t first;
    struct lease_tab *t = table_with_a(600000);
    uint64_t mark = lease_read_begin(t);
    for (uint64_t ino = 20; ino < 23; ino++)
        grant(t, A, ino, mark);
    /* One change of B's touches a directory (names), a file and another
     * directory (names), as a rename between two directories does. */
    struct change c;
    change_one(&c, t, B, 20);
    c.touched.n = 3;
    c.touched.names = true;
    for (int i = 0; i < 3; i++) {
        c.touched.ino[i] = 20 + (uint64_t)i;
        c.touched.has_attr[i] = true;
        c.touched.attr[i].mode = i == 1 ? S_IFREG | 0644 : S_IFDIR | 0755;
    }
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, change_main, &c), 0);
    uint32_t n = 0;
    for (int tries = 0; tries < 100 && n < 3; tries++) {
        n = poll_wait(t, A, &chan_a, 0, 600, &first);
        if (n < 3)
            usleep(10 * 1000); /* the three are queued under one lock hold */
    }
    assert_int_equal(n, 3);
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(get64(buf + i * 16), 20 + i);
    assert_int_equal(buf[48], PROTO_REVOKE_NAMES);
    assert_int_equal(buf[49], 0);
    assert_int_equal(buf[50], PROTO_REVOKE_NAMES);
    assert_int_equal(poll_a(t, first + 2, &first), 0);
    pthread_join(th, NULL);
    lease_tab_destroy(t);
}

static void test_changer_keeps_its_lease(void **state)
{
    (void)state;
    uint64_t first;
    struct lease_tab *t = table_with_a(600000);
    struct proto_lease l = grant(t, A, 10, lease_read_begin(t));
    struct change c;
    change_one(&c, t, A, 10);
    change_main(&c); /* nobody else holds it: returns at once */
    assert_int_equal(c.out.l[0].gen_before, l.gen);
    assert_true(c.out.l[0].gen > l.gen);
    assert_int_equal(c.out.l[0].ms, 600000);
    assert_int_equal(poll_a(t, 0, &first), 0); /* and nothing to drop */
    /* A failed change changes nothing and says nothing. */
    struct proto_leases out;
    lease_changed(t, A, &c.touched, false, &out);
    assert_int_equal(out.n, 0);
    lease_tab_destroy(t);
}

/* Two changes of one client's threads to one inode, numbered in the
 * other order than they wrote (wseq): the one that wrote first but was
 * numbered second says older attributes under a newer generation, so its
 * changer gets no lease on them; in order, both keep theirs. */
static void test_crossed_changes_get_no_lease(void **state)
{
    (void)state;
    struct lease_tab *t = table_with_a(600000);
    struct change first, second;
    change_one(&first, t, A, 10);
    change_one(&second, t, A, 10);
    first.touched.wseq[0] = 5;
    second.touched.wseq[0] = 6;
    change_main(&second);
    change_main(&first);
    assert_int_equal(second.out.l[0].ms, 600000);
    assert_true(first.out.l[0].gen > second.out.l[0].gen);
    assert_int_equal(first.out.l[0].ms, 0);
    change_one(&first, t, A, 10);
    change_one(&second, t, A, 10);
    first.touched.wseq[0] = 7;
    second.touched.wseq[0] = 8;
    change_main(&first);
    change_main(&second);
    assert_int_equal(first.out.l[0].ms, 600000);
    assert_int_equal(second.out.l[0].ms, 600000);
    lease_tab_destroy(t);
}

static void test_grant_refused_for_state_read_before_a_change(void **state)
{
    (void)state;
    struct lease_tab *t = table_with_a(600000);
    uint64_t mark = lease_read_begin(t);
    struct change c;
    change_one(&c, t, B, 10);
    change_main(&c);
    assert_int_equal(grant(t, A, 10, mark).ms, 0);
    assert_int_equal(grant(t, A, 12, mark).ms, 600000); /* another inode: fine */
    struct proto_lease l11 = grant(t, A, 11, lease_read_begin(t));
    struct proto_lease l = grant(t, A, 10, lease_read_begin(t));
    assert_int_equal(l.ms, 600000);
    assert_true(l.gen > l11.gen); /* generations only grow */
    /* A client without a channel gets nothing. */
    assert_int_equal(grant(t, B, 10, lease_read_begin(t)).ms, 0);
    lease_tab_destroy(t);
}

static void test_closed_channel_is_not_waited_for(void **state)
{
    (void)state;
    uint64_t first;
    struct lease_tab *t = table_with_a(600000);
    grant(t, A, 10, lease_read_begin(t));
    lease_conn_closed(t, &chan_b); /* not A's channel: nothing happens */
    lease_conn_closed(t, &chan_a);
    struct change c;
    change_one(&c, t, B, 10);
    change_main(&c); /* would wait ten minutes if A still counted */
    assert_int_equal(grant(t, A, 10, lease_read_begin(t)).ms, 0);
    assert_int_equal(poll_a(t, 0, &first), 0); /* a new channel starts clean */
    assert_int_equal(grant(t, A, 10, lease_read_begin(t)).ms, 600000);
    lease_tab_destroy(t);
}

static void test_unanswered_revocation_waits_out_the_lease(void **state)
{
    (void)state;
    struct lease_tab *t = table_with_a(200);
    grant(t, A, 10, lease_read_begin(t));
    struct change c;
    change_one(&c, t, B, 10);
    change_main(&c); /* A never answers: returns when A's lease ran out */
    assert_int_equal(c.out.n, 1);
    lease_sweep(t);
    lease_tab_destroy(t);
}

/* The sweep, a slice of buckets at a time, reaches every bucket: expired
 * leases on inodes hashed all over the table go, live ones stay. */
static void test_sweep_reaches_every_bucket(void **state)
{
    (void)state;
    enum { N = 20000 };
    struct lease_tab *t = table_with_a(1500);
    uint64_t t0 = util_now_mono_ns();
    for (uint64_t ino = 1; ino <= N; ino++)
        assert_int_equal(grant(t, A, ino, lease_read_begin(t)).ms, 1500);
    assert_int_equal(lease_records(t), N);
    lease_sweep(t);
    /* None expired yet, unless a slow machine took the whole term. */
    if (util_now_mono_ns() - t0 < 1000000000ull)
        assert_int_equal(lease_records(t), N);
    while (util_now_mono_ns() - t0 < 1600000000ull)
        usleep(50 * 1000);
    lease_sweep(t);
    assert_int_equal(lease_records(t), 0);
    lease_tab_destroy(t);
}

static void test_overflow_revokes_everything(void **state)
{
    (void)state;
    uint64_t first;
    struct lease_tab *t = table_with_a(600000);
    grant(t, A, 10, lease_read_begin(t));
    grant(t, A, 20, lease_read_begin(t));
    uint64_t mark = lease_read_begin(t);
    struct change c;
    memset(&c, 0, sizeof(c));
    c.t = t;
    c.client = B;
    c.touched.overflow = true;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, change_main, &c), 0);
    uint32_t got = 0;
    uint64_t acked = 0;
    for (int i = 0; i < 100 && got < 2; i++) {
        uint32_t n = poll_wait(t, A, &chan_a, acked, 1000, &first);
        if (n) {
            got += n;
            acked = first + n - 1;
        }
    }
    assert_int_equal(got, 2);
    poll_a(t, acked, &first);
    pthread_join(th, NULL);
    assert_int_equal(grant(t, A, 30, mark).ms, 0); /* every inode counts as changed */
    lease_tab_destroy(t);
}

/* ---- the write-behind grant ---- */

struct entry {
    struct lease_tab *t;
    uint64_t client;
    int done; /* atomically set when lease_enter returned */
};

static void *enter_main(void *arg)
{
    struct entry *e = arg;
    lease_enter(e->t, e->client);
    __atomic_store_n(&e->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* A asks for the grant from a request of its own. */
static uint32_t wb_ask(struct lease_tab *t, uint64_t client, uint64_t *id)
{
    lease_enter(t, client);
    uint32_t ms = lease_wb_grant(t, client, id);
    lease_leave(t);
    return ms;
}

static void test_wb_only_to_a_request_running_alone(void **state)
{
    (void)state;
    uint64_t id, id2;
    struct lease_tab *t = table_with_a(600000);
    /* B's request is in flight: A gets nothing. */
    lease_enter(t, B);
    lease_enter(t, A);
    assert_int_equal(lease_wb_grant(t, A, &id), 0);
    assert_int_equal(id, 0);
    lease_leave(t);
    lease_leave(t);
    /* Alone, it does; asked again, it is renewed under the same number. */
    assert_int_equal(wb_ask(t, A, &id), 600000);
    assert_true(id > 0);
    assert_int_equal(wb_ask(t, A, &id2), 600000);
    assert_int_equal(id2, id);
    /* A client without a channel could not be told to give it back. */
    lease_tab_destroy(t);
    assert_int_equal(lease_tab_create(600000, &t), 0);
    assert_int_equal(wb_ask(t, B, &id), 0);
    lease_tab_destroy(t);
}

/* A new grant with an OPEN (lease_wb_grant_since) only to a request that
 * ran alone from its entry on: one that ran beside it, or passed the gate
 * after it, could have looked at what it made. A renewal is not hindered. */
static void test_wb_since_a_request_ran_alone(void **state)
{
    (void)state;
    uint64_t id, id2;
    struct lease_tab *t = table_with_a(600000);
    /* B was running when A's request entered: no grant, also once B is done. */
    lease_enter(t, B);
    uint64_t a = lease_enter(t, A);
    assert_int_equal(a, 0);
    lease_leave(t);
    assert_int_equal(lease_wb_grant_since(t, A, a, &id), 0);
    lease_leave(t);
    /* B passed the gate after A's request and is done: no grant. */
    a = lease_enter(t, A);
    assert_true(a > 0);
    lease_enter(t, B);
    lease_leave(t);
    assert_int_equal(lease_wb_grant_since(t, A, a, &id), 0);
    assert_int_equal(id, 0);
    lease_leave(t);
    /* Alone all along: granted; then renewed, whatever ran before. */
    a = lease_enter(t, A);
    assert_int_equal(lease_wb_grant_since(t, A, a, &id), 600000);
    assert_true(id > 0);
    lease_leave(t);
    lease_enter(t, A);
    lease_enter(t, A);
    lease_leave(t);
    assert_int_equal(lease_wb_grant_since(t, A, 0, &id2), 600000);
    assert_int_equal(id2, id);
    lease_leave(t);
    lease_tab_destroy(t);
}

static void test_wb_revoked_by_another_clients_request(void **state)
{
    (void)state;
    uint64_t id, first;
    struct lease_tab *t = table_with_a(600000);
    assert_int_equal(wb_ask(t, A, &id), 600000);
    /* The holder's own requests pass at once. */
    lease_enter(t, A);
    lease_leave(t);

    struct entry e = {t, B, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, enter_main, &e), 0);
    /* A hears inode 0 with the grant's number, and B waits for the ack
     * (the grant has ten minutes left); A's requests (its queue being sent)
     * still pass meanwhile, and the grant is not renewed. */
    uint32_t n = poll_wait(t, A, &chan_a, 0, 60000, &first);
    assert_int_equal(n, 1);
    assert_int_equal(get64(buf), 0);
    assert_int_equal(get64(buf + 8), id);
    uint64_t renewed;
    lease_enter(t, A);
    assert_int_equal(lease_wb_grant(t, A, &renewed), 0);
    lease_leave(t);
    assert_int_equal(__atomic_load_n(&e.done, __ATOMIC_SEQ_CST), 0);
    uint64_t none;
    assert_int_equal(poll_a(t, first, &none), 0);
    pthread_join(th, NULL);
    assert_int_equal(__atomic_load_n(&e.done, __ATOMIC_SEQ_CST), 1);
    /* B's request now runs: nobody gets the grant until it leaves. */
    assert_int_equal(lease_wb_grant(t, B, &id), 0);
    lease_leave(t);
    lease_tab_destroy(t);
}

static void test_wb_holder_gone_or_expired_is_not_waited_for(void **state)
{
    (void)state;
    uint64_t id;
    /* The holder's channel closes: B enters at once. */
    struct lease_tab *t = table_with_a(600000);
    assert_int_equal(wb_ask(t, A, &id), 600000);
    lease_conn_closed(t, &chan_a);
    lease_enter(t, B);
    lease_leave(t);
    lease_tab_destroy(t);
    /* The holder never answers: B waits out the grant's 200 ms, and the
     * grant is gone: A's next one has a new number. */
    t = table_with_a(200);
    assert_int_equal(wb_ask(t, A, &id), 200);
    lease_enter(t, B);
    lease_leave(t);
    uint64_t id2;
    assert_int_equal(wb_ask(t, A, &id2), 200);
    assert_true(id2 > id);
    lease_tab_destroy(t);
}

/* A grant that ran out while nobody else came is renewed under its
 * number, also after a sweep; once another client came, a new grant has a
 * new one. */
static void test_wb_ran_out_keeps_its_number_until_another_comes(void **state)
{
    (void)state;
    uint64_t id, id2;
    struct lease_tab *t = table_with_a(50);
    assert_int_equal(wb_ask(t, A, &id), 50);
    usleep(80 * 1000);
    lease_sweep(t);
    assert_int_equal(wb_ask(t, A, &id2), 50);
    assert_int_equal(id2, id);
    usleep(80 * 1000);
    lease_enter(t, B); /* the grant ran out: dropped, not waited for */
    lease_leave(t);
    assert_int_equal(wb_ask(t, A, &id2), 50);
    assert_true(id2 > id);
    lease_tab_destroy(t);
}

/* ---- parked polls ---- */

static void test_poll_parks_until_a_revocation(void **state)
{
    (void)state;
    uint64_t first;
    struct lease_tab *t = table_with_a(600000);
    grant(t, A, 10, lease_read_begin(t));
    /* Nothing to say: the poll parks, and nobody wakes it. */
    assert_int_equal(lease_poll(t, A, &chan_a, 0, false, 7, false, buf, sizeof(buf), &first),
                     LEASE_PARKED);
    assert_false(was_woken(7));
    /* Its time runs out: served again, it answers nothing. */
    assert_int_equal(lease_poll(t, A, &chan_a, 0, false, 0, true, buf, sizeof(buf), &first), 0);
    /* Parked again; a change of inode 10 by B wakes it, and the poll
     * served again carries the revocation. */
    assert_int_equal(lease_poll(t, A, &chan_a, 0, false, 8, false, buf, sizeof(buf), &first),
                     LEASE_PARKED);
    struct change c;
    change_one(&c, t, B, 10);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, change_main, &c), 0);
    for (int i = 0; i < 60000 && !was_woken(8); i++)
        usleep(1000);
    assert_true(was_woken(8));
    assert_int_equal(lease_poll(t, A, &chan_a, 0, false, 0, true, buf, sizeof(buf), &first), 1);
    assert_int_equal(get64(buf), 10);
    assert_int_equal(poll_a(t, first, &first), 0);
    pthread_join(th, NULL);
    lease_tab_destroy(t);
}

static void test_parked_poll_of_a_replaced_channel(void **state)
{
    (void)state;
    uint64_t first;
    struct lease_tab *t = table_with_a(600000);
    assert_int_equal(lease_poll(t, A, &chan_a, 0, false, 5, false, buf, sizeof(buf), &first),
                     LEASE_PARKED);
    /* A opens a new channel (it reconnected): the old channel's poll is
     * woken, and the new one answers at once. */
    assert_int_equal(lease_poll(t, A, &chan_b, 0, false, 6, false, buf, sizeof(buf), &first), 0);
    assert_true(was_woken(5));
    /* The old poll, served again, says nothing and does not take the
     * channel back: closing the old connection leaves A's leases alone. */
    assert_int_equal(lease_poll(t, A, &chan_a, 0, false, 0, true, buf, sizeof(buf), &first), 0);
    lease_conn_closed(t, &chan_a);
    assert_int_equal(grant(t, A, 10, lease_read_begin(t)).ms, 600000);
    /* Closing the channel in use wakes its parked poll. */
    assert_int_equal(lease_poll(t, A, &chan_b, 0, false, 9, false, buf, sizeof(buf), &first),
                     LEASE_PARKED);
    lease_conn_closed(t, &chan_b);
    assert_true(was_woken(9));
    assert_int_equal(lease_poll(t, A, &chan_b, 0, false, 0, true, buf, sizeof(buf), &first), 0);
    assert_int_equal(grant(t, A, 10, lease_read_begin(t)).ms, 0);
    lease_tab_destroy(t);
}

static void test_stopping_wakes_parked_polls(void **state)
{
    (void)state;
    uint64_t first;
    struct lease_tab *t = table_with_a(600000);
    assert_int_equal(lease_poll(t, A, &chan_a, 0, false, 3, false, buf, sizeof(buf), &first),
                     LEASE_PARKED);
    lease_tab_stop(t);
    assert_true(was_woken(3));
    assert_int_equal(lease_poll(t, A, &chan_a, 0, false, 0, true, buf, sizeof(buf), &first), 0);
    /* Once stopping, nothing parks. */
    assert_int_equal(lease_poll(t, A, &chan_a, 0, false, 4, false, buf, sizeof(buf), &first), 0);
    lease_tab_destroy(t);
}

static void test_disabled(void **state)
{
    (void)state;
    struct lease_tab *t = table_with_a(0);
    assert_int_equal(grant(t, A, 10, lease_read_begin(t)).ms, 0);
    uint64_t id;
    assert_int_equal(wb_ask(t, A, &id), 0);
    lease_tab_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_revoked_before_change_is_acknowledged),
        cmocka_unit_test(test_revocation_says_names_only),
        cmocka_unit_test(test_kinds_follow_the_pairs),
        cmocka_unit_test(test_changer_keeps_its_lease),
        cmocka_unit_test(test_crossed_changes_get_no_lease),
        cmocka_unit_test(test_grant_refused_for_state_read_before_a_change),
        cmocka_unit_test(test_closed_channel_is_not_waited_for),
        cmocka_unit_test(test_unanswered_revocation_waits_out_the_lease),
        cmocka_unit_test(test_sweep_reaches_every_bucket),
        cmocka_unit_test(test_overflow_revokes_everything),
        cmocka_unit_test(test_wb_only_to_a_request_running_alone),
        cmocka_unit_test(test_wb_revoked_by_another_clients_request),
        cmocka_unit_test(test_wb_holder_gone_or_expired_is_not_waited_for),
        cmocka_unit_test(test_wb_ran_out_keeps_its_number_until_another_comes),
        cmocka_unit_test(test_wb_since_a_request_ran_alone),
        cmocka_unit_test(test_poll_parks_until_a_revocation),
        cmocka_unit_test(test_parked_poll_of_a_replaced_channel),
        cmocka_unit_test(test_stopping_wakes_parked_polls),
        cmocka_unit_test(test_disabled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
