/*
 * Unit tests of the client's metadata cache under MDT leases
 * (client/mdcache.h), without its revocation thread and without an MDT:
 * the cache is made with mdc_create, and what the channel would hear is
 * handed to mdc_heard. What a reply grants is fed through mdc_update as the
 * calls of inode.c and ns.c feed it.
 *
 * An entry is answered while its lease is valid, and not once it ran out,
 * was revoked, or the MDT's instance changed; a reply that carries an
 * older state than the one cached changes nothing; a revocation heard
 * before the grant it revokes refuses the grant; the revocation of
 * write-behind's grant reaches the callback registered for it; a rename
 * this client made keeps its directories complete.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "client/mdcache.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define INSTANCE 7
#define DIR      0x10
#define FILE_INO 0x11
#define LONG_MS  60000

static stria_fs_t *fs;
static struct mdc *m;

static int setup(void **state)
{
    (void)state;
    fs = calloc(1, sizeof(*fs));
    m = fs ? mdc_create(fs, 4) : NULL;
    if (!m)
        return -1;
    mdc_heard(m, 0, INSTANCE, NULL, 0, NULL, 0); /* the channel is up */
    usleep(2000); /* requests sent in the millisecond it was heard lease nothing */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mdc_destroy(m);
    free(fs);
    return 0;
}

static struct proto_attr attr_of(uint64_t ino, mode_t mode, uint64_t size)
{
    return (struct proto_attr){.ino = ino, .mode = mode, .nlink = 1, .size = size};
}

/* A reply of instance `instance` granting a lease of ms on ino at gen
 * (after gen_before), with ino's attributes. */
static void grant(uint64_t instance, uint64_t ino, uint64_t gen_before, uint64_t gen, uint32_t ms,
                  int64_t sent, const struct proto_attr *a)
{
    struct proto_leases ls = {.instance = instance, .n = 1};
    ls.l[0] = (struct proto_lease){.ino = ino, .gen_before = gen_before, .gen = gen, .ms = ms};
    struct mdc_update u = {.sent_ms = sent, .leases = &ls, .attr = a};
    mdc_update(m, &u);
}

/* A lookup reply: name in DIR holds FILE_INO; leases on both. */
static void grant_name(const char *name, uint64_t dir_gen, uint64_t file_gen, uint32_t ms)
{
    struct proto_leases ls = {.instance = INSTANCE, .n = 2};
    ls.l[0] = (struct proto_lease){.ino = DIR, .gen = dir_gen, .ms = ms, .has_attr = 1};
    ls.l[0].attr = attr_of(DIR, S_IFDIR | 0755, 0);
    ls.l[1] = (struct proto_lease){.ino = FILE_INO, .gen = file_gen, .ms = ms};
    struct proto_attr fa = attr_of(FILE_INO, S_IFREG | 0644, 42);
    struct mdc_update u = {.sent_ms = mdc_clock_ms(),
                           .leases = &ls,
                           .parent = DIR,
                           .name = name,
                           .child = FILE_INO,
                           .attr = &fa};
    mdc_update(m, &u);
}

static bool cached_size(uint64_t ino, uint64_t *size)
{
    struct proto_attr a;
    if (!mdc_getattr(m, ino, &a))
        return false;
    assert_int_equal(a.ino, ino);
    *size = a.size;
    return true;
}

static void hear_revoke(uint64_t instance, uint64_t ino, uint64_t gen)
{
    uint8_t r[16];
    proto_put_le64(r, ino);
    proto_put_le64(r + 8, gen);
    mdc_heard(m, 0, instance, r, 1, NULL, 0);
}

static void test_answered_while_valid(void **state)
{
    (void)state;
    uint64_t size;
    assert_false(cached_size(FILE_INO, &size)); /* nothing yet */
    struct proto_attr a = attr_of(FILE_INO, S_IFREG | 0644, 100);
    grant(INSTANCE, FILE_INO, 0, 1, LONG_MS, mdc_clock_ms(), &a);
    assert_true(cached_size(FILE_INO, &size));
    assert_int_equal(size, 100);

    grant_name("a", 1, 2, LONG_MS);
    struct proto_cred root = {0};
    struct proto_attr out;
    assert_int_equal(mdc_lookup(m, DIR, 0, "a", &root, &out), 0);
    assert_int_equal(out.ino, FILE_INO);
    assert_int_equal(out.size, 42);
    /* A name never seen in a directory not known complete: ask the MDT. */
    assert_int_equal(mdc_lookup(m, DIR, 0, "b", &root, &out), -EAGAIN);
}

/* A directory whose names are leased without its mode and owner (a
 * lookup's reply leases the names alone): a GETATTR of it is worth
 * sending for a name the cache holds with what it holds, or for a name
 * absent from a complete part; not when the lookup would go to the MDT
 * all the same. */
static void test_perm_missing(void **state)
{
    (void)state;
    struct proto_leases ls = {.instance = INSTANCE, .n = 2};
    ls.l[0] = (struct proto_lease){.ino = DIR, .gen = 1, .ms = LONG_MS};
    ls.l[1] = (struct proto_lease){.ino = FILE_INO, .gen = 2, .ms = LONG_MS};
    struct proto_attr fa = attr_of(FILE_INO, S_IFREG | 0644, 42);
    struct mdc_update u = {.sent_ms = mdc_clock_ms(),
                           .leases = &ls,
                           .parent = DIR,
                           .name = "a",
                           .child = FILE_INO,
                           .attr = &fa};
    mdc_update(m, &u);
    assert_true(mdc_perm_missing(m, DIR, 0, "a"));
    assert_false(mdc_perm_missing(m, DIR, 0, "b")); /* not known complete */
    hear_revoke(INSTANCE, FILE_INO, 2);
    assert_false(mdc_perm_missing(m, DIR, 0, "a")); /* what it holds is not here */
    mdc_new_dir(m, DIR, 0);
    assert_true(mdc_perm_missing(m, DIR, 0, "b"));
    assert_false(mdc_perm_missing(m, DIR, 0, ".."));
    struct proto_attr da = attr_of(DIR, S_IFDIR | 0755, 0);
    grant(INSTANCE, DIR, 0, 1, LONG_MS, mdc_clock_ms(), &da);
    assert_false(mdc_perm_missing(m, DIR, 0, "b")); /* known now */
}

static void test_not_after_expiry(void **state)
{
    (void)state;
    uint64_t size;
    struct proto_attr a = attr_of(FILE_INO, S_IFREG | 0644, 100);
    /* 160 ms, counted from the sending, less an eighth: 140 ms. */
    grant(INSTANCE, FILE_INO, 0, 1, 160, mdc_clock_ms(), &a);
    assert_true(cached_size(FILE_INO, &size));
    usleep(200 * 1000);
    assert_false(cached_size(FILE_INO, &size));
    /* Counted from when the request was sent, not when the reply came:
     * sent 150 ms ago (after the channel was heard), for 160 ms. */
    grant(INSTANCE, FILE_INO, 0, 2, 160, mdc_clock_ms() - 150, &a);
    assert_false(cached_size(FILE_INO, &size));
}

/* A file to remove is decided from records whose leases ran out if this
 * client's exclusive hold on their MDT began before they did
 * (mdc_exclusive): nobody else changed them since. Ordinary lookups and
 * stats do not use that. */
static void test_victim_under_exclusive_hold(void **state)
{
    (void)state;
    struct proto_cred root = {0};
    struct proto_attr out;
    uint64_t size;
    int64_t t0 = mdc_clock_ms();
    grant_name("v", 100, 101, 160); /* valid for 140 ms */
    mdc_exclusive(m, 0, t0, t0 + LONG_MS);
    usleep(200 * 1000);
    assert_true(mdc_lookup_victim(m, DIR, 0, "v", &root, &out));
    assert_int_equal(out.ino, FILE_INO);
    assert_int_equal(mdc_lookup(m, DIR, 0, "v", &root, &out), -EAGAIN);
    assert_false(cached_size(FILE_INO, &size));
    /* The hold ended (a revocation of the grant): no more. */
    mdc_exclusive(m, 0, 0, 0);
    assert_false(mdc_lookup_victim(m, DIR, 0, "v", &root, &out));
    /* A hold that began after the leases ran out proves nothing. */
    int64_t now = mdc_clock_ms();
    mdc_exclusive(m, 0, now, now + LONG_MS);
    assert_false(mdc_lookup_victim(m, DIR, 0, "v", &root, &out));
    /* Nor one that ran out. */
    mdc_exclusive(m, 0, t0, now - 1);
    assert_false(mdc_lookup_victim(m, DIR, 0, "v", &root, &out));
    /* A revoked record stays revoked under the hold. */
    grant_name("w", 102, 103, 160);
    mdc_exclusive(m, 0, t0, now + LONG_MS);
    hear_revoke(INSTANCE, FILE_INO, 104);
    usleep(200 * 1000);
    assert_false(mdc_lookup_victim(m, DIR, 0, "w", &root, &out));
    mdc_exclusive(m, 0, 0, 0);
}

/* A reply that carries the generation cached, after the lease ran out,
 * renews the record as it was: a directory keeps its names. A later
 * generation drops them. */
static void test_same_generation_after_expiry_keeps_names(void **state)
{
    (void)state;
    struct proto_cred root = {0};
    struct proto_attr out, da = attr_of(DIR, S_IFDIR | 0755, 0);
    struct proto_attr fa = attr_of(FILE_INO, S_IFREG | 0644, 42);
    grant_name("k", 200, 201, 160);
    usleep(200 * 1000);
    assert_int_equal(mdc_lookup(m, DIR, 0, "k", &root, &out), -EAGAIN);
    grant(INSTANCE, DIR, 0, 200, LONG_MS, mdc_clock_ms(), &da);
    grant(INSTANCE, FILE_INO, 0, 201, LONG_MS, mdc_clock_ms(), &fa);
    assert_int_equal(mdc_lookup(m, DIR, 0, "k", &root, &out), 0);
    assert_int_equal(out.ino, FILE_INO);
    grant(INSTANCE, DIR, 0, 205, LONG_MS, mdc_clock_ms(), &da);
    assert_int_equal(mdc_lookup(m, DIR, 0, "k", &root, &out), -EAGAIN);
}

static void test_not_after_revoke(void **state)
{
    (void)state;
    uint64_t size;
    struct proto_attr a = attr_of(FILE_INO, S_IFREG | 0644, 100);
    grant(INSTANCE, FILE_INO, 0, 3, LONG_MS, mdc_clock_ms(), &a);
    grant_name("a", 1, 3, LONG_MS);
    assert_true(cached_size(FILE_INO, &size));
    hear_revoke(INSTANCE, FILE_INO, 3);
    assert_false(cached_size(FILE_INO, &size));
    struct proto_cred root = {0};
    struct proto_attr out;
    assert_int_equal(mdc_lookup(m, DIR, 0, "a", &root, &out), -EAGAIN);

    /* A revocation heard before its grant (they travel on different
     * connections) refuses the late grant, and no newer one. */
    hear_revoke(INSTANCE, DIR + 100, 5);
    struct proto_attr b = attr_of(DIR + 100, S_IFREG | 0644, 7);
    grant(INSTANCE, DIR + 100, 0, 5, LONG_MS, mdc_clock_ms(), &b);
    assert_false(cached_size(DIR + 100, &size));
    grant(INSTANCE, DIR + 100, 0, 6, LONG_MS, mdc_clock_ms(), &b);
    assert_true(cached_size(DIR + 100, &size));
}

static void test_generation_order(void **state)
{
    (void)state;
    uint64_t size;
    struct proto_attr a5 = attr_of(FILE_INO, S_IFREG | 0644, 500),
                      a4 = attr_of(FILE_INO, S_IFREG | 0644, 400),
                      a6 = attr_of(FILE_INO, S_IFREG | 0644, 600);
    grant(INSTANCE, FILE_INO, 4, 5, LONG_MS, mdc_clock_ms(), &a5);
    assert_true(cached_size(FILE_INO, &size));
    assert_int_equal(size, 500);
    /* A reply of an older state, arriving late, changes nothing. */
    grant(INSTANCE, FILE_INO, 3, 4, LONG_MS, mdc_clock_ms(), &a4);
    assert_true(cached_size(FILE_INO, &size));
    assert_int_equal(size, 500);
    /* A newer one replaces it. */
    grant(INSTANCE, FILE_INO, 5, 6, LONG_MS, mdc_clock_ms(), &a6);
    assert_true(cached_size(FILE_INO, &size));
    assert_int_equal(size, 600);

    /* A change of the directory that follows what is cached (gen_before
     * is the cached gen) keeps its names; one that does not drops them. */
    grant_name("a", 10, 20, LONG_MS);
    struct proto_leases ls = {.instance = INSTANCE, .n = 1};
    ls.l[0] = (struct proto_lease){.ino = DIR, .gen_before = 10, .gen = 11, .ms = LONG_MS};
    struct mdc_update u = {.sent_ms = mdc_clock_ms(),
                           .leases = &ls,
                           .parent = DIR,
                           .name = "b",
                           .child = FILE_INO + 1};
    mdc_update(m, &u);
    struct proto_cred root = {0};
    struct proto_attr out;
    assert_int_equal(mdc_lookup(m, DIR, 0, "a", &root, &out), 0);
    ls.l[0] = (struct proto_lease){.ino = DIR, .gen_before = 12, .gen = 13, .ms = LONG_MS};
    u.name = "c";
    mdc_update(m, &u);
    assert_int_equal(mdc_lookup(m, DIR, 0, "a", &root, &out), -EAGAIN);
}

static void test_instance_change_drops_all(void **state)
{
    (void)state;
    uint64_t size;
    struct proto_attr a = attr_of(FILE_INO, S_IFREG | 0644, 100);
    grant(INSTANCE, FILE_INO, 0, 1, LONG_MS, mdc_clock_ms(), &a);
    grant_name("a", 1, 1, LONG_MS);
    assert_true(cached_size(FILE_INO, &size));
    mdc_heard(m, 0, INSTANCE + 1, NULL, 0, NULL, 0); /* the MDT restarted */
    usleep(2000);                                    /* what is sent from now on may lease */
    assert_false(cached_size(FILE_INO, &size));
    struct proto_cred root = {0};
    struct proto_attr out;
    assert_int_equal(mdc_lookup(m, DIR, 0, "a", &root, &out), -EAGAIN);
    /* A reply from the old process, arriving late, grants nothing. */
    grant(INSTANCE, FILE_INO, 1, 2, LONG_MS, mdc_clock_ms(), &a);
    assert_false(cached_size(FILE_INO, &size));
    grant(INSTANCE + 1, FILE_INO, 0, 1, LONG_MS, mdc_clock_ms(), &a);
    assert_true(cached_size(FILE_INO, &size));
}

static uint64_t revoked_id;

static uint32_t revoked_mdt;

static void on_revoke(stria_fs_t *f, uint32_t mdt, uint64_t id)
{
    assert_ptr_equal(f, fs);
    revoked_mdt = mdt;
    revoked_id = id;
}

static void test_write_behind_revoke_reaches_callback(void **state)
{
    (void)state;
    hear_revoke(INSTANCE, 0, 9); /* no callback: nothing to tell */
    mdc_on_revoke(m, on_revoke);
    hear_revoke(INSTANCE, 0, 9);
    assert_int_equal(revoked_id, 9);
    uint8_t r[16];
    proto_put_le64(r, 0);
    proto_put_le64(r + 8, 11);
    mdc_heard(m, 2, INSTANCE + 2, r, 1, NULL, 0); /* another MDT's grant */
    assert_int_equal(revoked_mdt, 2);
    assert_int_equal(revoked_id, 11);
}

/* A striped directory DIR (inode on MDT 0) with a shard on MDT 1, where the
 * name "s" and its file live. */
#define SHARD_INO (((uint64_t)1 << 48) | 0x12)

static void grant_shard_name(uint64_t dir_gen, uint64_t file_gen)
{
    struct proto_leases ls = {.instance = INSTANCE + 1, .n = 2};
    ls.l[0] = (struct proto_lease){.ino = DIR, .gen = dir_gen, .ms = LONG_MS, .has_attr = 1};
    ls.l[0].attr = attr_of(DIR, S_IFDIR | 0755, 99); /* the shard's own record */
    ls.l[1] = (struct proto_lease){.ino = SHARD_INO, .gen = file_gen, .ms = LONG_MS};
    struct proto_attr fa = attr_of(SHARD_INO, S_IFREG | 0644, 7);
    struct mdc_update u = {.sent_ms = mdc_clock_ms(),
                           .leases = &ls,
                           .parent = DIR,
                           .name = "s",
                           .child = SHARD_INO,
                           .attr = &fa};
    mdc_update(m, &u);
}

static void hear_revoke_from(uint32_t mdt, uint64_t instance, uint64_t ino, uint64_t gen)
{
    uint8_t r[16];
    proto_put_le64(r, ino);
    proto_put_le64(r + 8, gen);
    mdc_heard(m, mdt, instance, r, 1, NULL, 0);
}

/* What one MDT leased goes when its connection broke under a change or
 * its channel was lost; what the others leased stays. */
static void test_forget_one_mdt(void **state)
{
    (void)state;
    struct proto_cred root = {0};
    struct proto_attr out;
    uint64_t size;
    mdc_heard(m, 1, INSTANCE + 1, NULL, 0, NULL, 0); /* MDT 1's channel is up */
    usleep(2000);                                    /* what is sent from now on may lease */
    grant_name("a", 1, 2, LONG_MS);
    grant_shard_name(5, 6);
    assert_int_equal(mdc_lookup(m, DIR, 1, "s", &root, &out), 0);
    assert_int_equal(mdc_lookup(m, DIR, 0, "a", &root, &out), 0);
    mdc_forget_mdt(m, 1);
    assert_int_equal(mdc_lookup(m, DIR, 1, "s", &root, &out), -EAGAIN);
    assert_false(cached_size(SHARD_INO, &size));
    assert_int_equal(mdc_lookup(m, DIR, 0, "a", &root, &out), 0);
    assert_true(cached_size(FILE_INO, &size));
    assert_int_equal(size, 42);
    /* Leased again by MDT 1 with the same generation: nothing of before. */
    usleep(2000); /* a request sent after the forgetting */
    grant(INSTANCE + 1, SHARD_INO, 0, 6, LONG_MS, mdc_clock_ms(), NULL);
    assert_false(cached_size(SHARD_INO, &size));
    /* What the records knew of generations goes too: a restarted MDT
     * numbers them from the start again (its channel, lost, hears the new
     * instance after this forgetting), and a record that heard a
     * revocation of a later one would refuse every new lease. */
    hear_revoke_from(1, INSTANCE + 1, SHARD_INO, 50);
    mdc_forget_mdt(m, 1);
    usleep(2000);
    struct proto_attr sa = attr_of(SHARD_INO, S_IFREG | 0644, 9);
    grant(INSTANCE + 1, SHARD_INO, 0, 3, LONG_MS, mdc_clock_ms(), &sa);
    assert_true(cached_size(SHARD_INO, &size));
    assert_int_equal(size, 9);
    mdc_forget_mdt(m, 0);
    assert_int_equal(mdc_lookup(m, DIR, 0, "a", &root, &out), -EAGAIN);
    assert_false(cached_size(FILE_INO, &size));
}

/* A reply to a request sent before the cache forgot what an MDT leased
 * (a connection broke under a change, a channel was lost or heard anew)
 * leases nothing: the MDT may have dropped that lease with the channel,
 * or the state may be from before this client's own change, which revokes
 * nothing here. One sent after leases again. */
static void test_no_lease_from_before_a_forget(void **state)
{
    (void)state;
    uint64_t size;
    struct proto_attr fa = attr_of(FILE_INO, S_IFREG | 0644, 42);
    int64_t sent = mdc_clock_ms();
    usleep(2000);
    mdc_forget_mdt(m, 0);
    grant(INSTANCE, FILE_INO, 0, 5, LONG_MS, sent, &fa);
    assert_false(cached_size(FILE_INO, &size));
    usleep(2000);
    grant(INSTANCE, FILE_INO, 0, 5, LONG_MS, mdc_clock_ms(), &fa);
    assert_true(cached_size(FILE_INO, &size));
    /* Another instance heard on MDT 0 without a loss between: every
     * MDT's leases go, and replies to what was sent before lease nothing,
     * MDT 1's too. */
    struct proto_attr sa = attr_of(SHARD_INO, S_IFREG | 0644, 9);
    mdc_heard(m, 1, INSTANCE + 1, NULL, 0, NULL, 0);
    usleep(2000); /* what is sent from now on may lease */
    sent = mdc_clock_ms();
    grant(INSTANCE + 1, SHARD_INO, 0, 3, LONG_MS, sent, &sa);
    assert_true(cached_size(SHARD_INO, &size));
    usleep(2000);
    mdc_heard(m, 0, INSTANCE + 2, NULL, 0, NULL, 0);
    usleep(2000); /* what is sent from now on may lease */
    assert_false(cached_size(SHARD_INO, &size));
    grant(INSTANCE + 1, SHARD_INO, 0, 3, LONG_MS, sent, &sa);
    assert_false(cached_size(SHARD_INO, &size));
}

static void test_shards_lease_their_own_names(void **state)
{
    (void)state;
    struct proto_cred root = {0};
    struct proto_attr out;
    uint64_t size;
    mdc_heard(m, 1, INSTANCE + 1, NULL, 0, NULL, 0); /* MDT 1's channel is up */
    usleep(2000);                                    /* what is sent from now on may lease */
    struct proto_attr da = attr_of(DIR, S_IFDIR | 0755, 0);
    grant(INSTANCE, DIR, 0, 1, LONG_MS, mdc_clock_ms(), &da);
    grant_shard_name(5, 6);
    /* The name is MDT 1's: answered there, and the file's attributes too. */
    assert_int_equal(mdc_lookup(m, DIR, 1, "s", &root, &out), 0);
    assert_int_equal(out.ino, SHARD_INO);
    assert_int_equal(mdc_lookup(m, DIR, 0, "s", &root, &out), -EAGAIN);
    assert_true(cached_size(SHARD_INO, &size));
    assert_int_equal(size, 7);
    /* The directory's attributes are its own MDT's, not the shard's. */
    assert_true(cached_size(DIR, &size));
    assert_int_equal(size, 0);
    /* MDT 0's revocation of the directory leaves MDT 1's names alone... */
    hear_revoke_from(0, INSTANCE, DIR, 1);
    assert_false(cached_size(DIR, &size));
    assert_int_equal(mdc_lookup(m, DIR, 1, "s", &root, &out), 0); /* the shard's mode */
    grant(INSTANCE, DIR, 0, 2, LONG_MS, mdc_clock_ms(), &da);
    /* ...and MDT 1's drops them; the same generation from MDT 0 means nothing. */
    hear_revoke_from(1, INSTANCE + 1, DIR, 5);
    assert_int_equal(mdc_lookup(m, DIR, 1, "s", &root, &out), -EAGAIN);
    assert_true(cached_size(DIR, &size));
    /* A shard's part is complete on its own: only names hashed there. */
    grant_shard_name(7, 8);
    mdc_new_dir(m, DIR, 1);
    assert_false(mdc_new_shard(m, DIR, 1)); /* complete at once */
    assert_int_equal(mdc_lookup(m, DIR, 1, "t", &root, &out), -ENOENT);
    assert_int_equal(mdc_lookup(m, DIR, 0, "u", &root, &out), -EAGAIN);
    mdc_new_dir(m, DIR, 2); /* MDT 2 leased nothing: remembered, once */
    assert_int_equal(mdc_lookup(m, DIR, 2, "v", &root, &out), -EAGAIN);
    assert_true(mdc_new_shard(m, DIR, 2));
    assert_false(mdc_new_shard(m, DIR, 2));
    /* A reply from an instance no channel hears is not used. */
    struct proto_leases ls = {.instance = INSTANCE + 9, .n = 1};
    ls.l[0] = (struct proto_lease){.ino = SHARD_INO, .gen = 50, .ms = LONG_MS};
    struct proto_attr fa = attr_of(SHARD_INO, S_IFREG | 0644, 1000);
    struct mdc_update u = {.sent_ms = mdc_clock_ms(), .leases = &ls, .attr = &fa};
    mdc_update(m, &u);
    assert_false(cached_size(SHARD_INO, &size));
}

/* Completing a shard: only if its lease is the one taken before listing. */
static void test_shard_empty_needs_the_same_lease(void **state)
{
    (void)state;
    struct proto_cred root = {0};
    struct proto_attr out;
    mdc_heard(m, 1, INSTANCE + 1, NULL, 0, NULL, 0);
    usleep(2000); /* what is sent from now on may lease */
    struct proto_attr sa = attr_of(DIR, S_IFDIR | 0755, 0);
    struct proto_leases ls = {.instance = INSTANCE + 1, .n = 1};
    ls.l[0] = (struct proto_lease){.ino = DIR, .gen = 3, .ms = LONG_MS};
    struct mdc_update u = {.sent_ms = mdc_clock_ms(), .leases = &ls, .attr = &sa};
    mdc_update(m, &u);
    uint64_t epoch = mdc_shard_epoch(m, DIR, 1);
    assert_true(epoch != 0);
    hear_revoke_from(1, INSTANCE + 1, DIR, 3); /* someone created a name meanwhile */
    ls.l[0].gen = 4;
    mdc_update(m, &u);
    assert_false(mdc_shard_empty(m, DIR, 1, epoch));
    assert_int_equal(mdc_lookup(m, DIR, 1, "x", &root, &out), -EAGAIN);
    epoch = mdc_shard_epoch(m, DIR, 1);
    assert_true(mdc_shard_empty(m, DIR, 1, epoch));
    assert_int_equal(mdc_lookup(m, DIR, 1, "x", &root, &out), -ENOENT);
}

/* An xattr the MDT said a file lacks is answered while the file's lease
 * holds the state it was asked under: not after a change (a newer
 * state, or this client's own setxattr), nor after a revocation, and
 * never for a name tools do not ask of every file. */
static bool xattr_absent(struct mdc *m, uint64_t ino, const char *name)
{
    uint64_t gen;
    return mdc_xattr_absent(m, ino, name, &gen);
}

static uint64_t attr_gen(struct mdc *m, uint64_t ino, const char *name)
{
    uint64_t gen;
    mdc_xattr_absent(m, ino, name, &gen);
    return gen;
}

static void test_xattr_absent_under_the_lease(void **state)
{
    (void)state;
    const char *sel = "security.selinux";
    assert_int_equal(attr_gen(m, FILE_INO, sel), 0); /* no lease: nothing kept */
    struct proto_attr a = attr_of(FILE_INO, S_IFREG | 0644, 100);
    grant(INSTANCE, FILE_INO, 0, 4, LONG_MS, mdc_clock_ms(), &a);
    assert_int_equal(attr_gen(m, FILE_INO, "user.mine"), 0);
    uint64_t gen = attr_gen(m, FILE_INO, sel);
    assert_int_equal(gen, 4);
    assert_false(xattr_absent(m, FILE_INO, sel));
    mdc_note_xattr_absent(m, FILE_INO, sel, gen);
    assert_true(xattr_absent(m, FILE_INO, sel));
    assert_false(xattr_absent(m, FILE_INO, "system.posix_acl_access"));

    /* A newer state of the file: asked again. */
    grant(INSTANCE, FILE_INO, 4, 5, LONG_MS, mdc_clock_ms(), &a);
    assert_false(xattr_absent(m, FILE_INO, sel));
    /* An answer to a request sent under the old state is not kept. */
    mdc_note_xattr_absent(m, FILE_INO, sel, gen);
    assert_false(xattr_absent(m, FILE_INO, sel));
    mdc_note_xattr_absent(m, FILE_INO, sel, attr_gen(m, FILE_INO, sel));
    assert_true(xattr_absent(m, FILE_INO, sel));

    /* This client's own change forgets it before it is sent. */
    gen = attr_gen(m, FILE_INO, sel);
    mdc_xattr_changed(m, FILE_INO);
    assert_false(xattr_absent(m, FILE_INO, sel));
    mdc_note_xattr_absent(m, FILE_INO, sel, gen);
    assert_false(xattr_absent(m, FILE_INO, sel));

    /* Another client's change revokes the lease. */
    grant(INSTANCE, FILE_INO, 5, 6, LONG_MS, mdc_clock_ms(), &a);
    mdc_note_xattr_absent(m, FILE_INO, sel, attr_gen(m, FILE_INO, sel));
    assert_true(xattr_absent(m, FILE_INO, sel));
    hear_revoke(INSTANCE, FILE_INO, 6);
    assert_false(xattr_absent(m, FILE_INO, sel));
}

/* READDIR plus's word, with no lease: kept for MDC_LISTED_MS, forgotten
 * at this client's own change and at a revocation. Under a lease, and
 * with nothing heard or changed since the listing was asked for, it is
 * kept while the lease holds, past MDC_LISTED_MS. */
static void test_xattr_absent_from_a_listing(void **state)
{
    (void)state;
    const char *sel = "security.selinux";
    mdc_note_listed(m, FILE_INO, 1u << proto_xattr_known(sel), mdc_listing_seq(m));
    assert_true(xattr_absent(m, FILE_INO, sel));
    assert_int_equal(attr_gen(m, FILE_INO, sel), 0); /* no lease: no answer noted */
    assert_false(xattr_absent(m, FILE_INO, "system.posix_acl_access"));
    assert_false(xattr_absent(m, FILE_INO, "user.mine"));
    assert_false(xattr_absent(m, FILE_INO + 1, sel));

    mdc_xattr_changed(m, FILE_INO);
    assert_false(xattr_absent(m, FILE_INO, sel));

    /* Under a lease too; a revocation of the lease forgets it. */
    struct proto_attr a = attr_of(FILE_INO, S_IFREG | 0644, 100);
    grant(INSTANCE, FILE_INO, 0, 7, LONG_MS, mdc_clock_ms(), &a);
    mdc_note_listed(m, FILE_INO, 1u << proto_xattr_known(sel), mdc_listing_seq(m));
    assert_true(xattr_absent(m, FILE_INO, sel));
    hear_revoke(INSTANCE, FILE_INO, 7);
    assert_false(xattr_absent(m, FILE_INO, sel));

    /* A listing asked for before a revocation (of anything) was heard is
     * not taken under the lease: only for MDC_LISTED_MS. */
    grant(INSTANCE, FILE_INO, 0, 8, LONG_MS, mdc_clock_ms(), &a);
    uint64_t before = mdc_listing_seq(m);
    hear_revoke(INSTANCE, FILE_INO + 5, 1);
    mdc_note_listed(m, FILE_INO, 1u << proto_xattr_known(sel), before);
    uint64_t asked = mdc_listing_seq(m);
    mdc_note_listed(m, FILE_INO + 2, 1u << proto_xattr_known(sel), asked);
    assert_true(xattr_absent(m, FILE_INO, sel));
    assert_true(xattr_absent(m, FILE_INO + 2, sel));
    usleep((MDC_LISTED_MS + 100) * 1000);
    assert_false(xattr_absent(m, FILE_INO, sel));
    assert_false(xattr_absent(m, FILE_INO + 2, sel)); /* no lease on it */

    /* Leased and asked for with nothing heard since: kept past it. */
    mdc_note_listed(m, FILE_INO, 1u << proto_xattr_known(sel), mdc_listing_seq(m));
    usleep((MDC_LISTED_MS + 100) * 1000);
    assert_true(xattr_absent(m, FILE_INO, sel));
    mdc_xattr_changed(m, FILE_INO);
    assert_false(xattr_absent(m, FILE_INO, sel));
}

/* A reply leasing FILE_INO at gen with layout l. */
static void grant_layout(uint64_t gen, const struct layout *l)
{
    struct proto_leases ls = {.instance = INSTANCE, .n = 1};
    ls.l[0] = (struct proto_lease){.ino = FILE_INO, .gen = gen, .ms = LONG_MS};
    struct proto_attr fa = attr_of(FILE_INO, S_IFREG | 0644, 5000);
    struct mdc_update u = {.sent_ms = mdc_clock_ms(), .leases = &ls, .attr = &fa, .layout = l};
    mdc_update(m, &u);
}

static void comp_of(struct layout_comp *c, uint64_t start, uint64_t end, uint16_t type,
                    uint16_t count, uint32_t first)
{
    memset(c, 0, sizeof(*c));
    c->start = start;
    c->end = end;
    c->type = type;
    c->stripe_count = count;
    c->stripe_size = 1u << 20;
    uint16_t groups = (type & LAYOUT_F_PENDING) ? 1 : count;
    for (uint16_t i = 0; i < groups; i++)
        c->groups[i] = first + i;
}

/* Whether the cache opens FILE_INO with layout l, as it is but its pools. */
static bool opens_with(const struct layout *l)
{
    struct proto_attr a;
    static struct layout got;
    memset(&got, 0xa5, sizeof(got));
    if (!mdc_open_layout(m, FILE_INO, &a, &got))
        return false;
    assert_int_equal(a.size, 5000);
    assert_int_equal(got.ncomp, l->ncomp);
    for (uint16_t i = 0; i < l->ncomp; i++) {
        const struct layout_comp *c = &l->comp[i], *g = &got.comp[i];
        assert_int_equal(g->start, c->start);
        assert_int_equal(g->end, c->end);
        assert_int_equal(g->type, c->type);
        assert_int_equal(g->stripe_count, c->stripe_count);
        assert_int_equal(g->stripe_size, c->stripe_size);
        assert_int_equal(g->pool[0], 0);
        uint16_t groups = (c->type & LAYOUT_F_PENDING) ? 1 : c->stripe_count;
        assert_memory_equal(g->groups, c->groups, groups * sizeof(c->groups[0]));
    }
    return true;
}

/* The cache keeps what an open for reading needs of a file's layout when
 * it has at most 3 components of 8 stripes in all (Data-on-MDT and the
 * components after it: a dataset's files), none pending with a pool; a
 * reply with a layout past that leaves none, and a revocation drops it. */
static void test_layout_for_open(void **state)
{
    (void)state;
    static struct layout l;
    memset(&l, 0, sizeof(l));
    l.ncomp = 2;
    comp_of(&l.comp[0], 0, 64 << 10, LAYOUT_TYPE_MDT, 1, 0);
    comp_of(&l.comp[1], 64 << 10, LAYOUT_END_EOF, LAYOUT_TYPE_OST | LAYOUT_F_PENDING, 1, 3);
    grant_layout(10, &l);
    assert_true(opens_with(&l));
    /* Three components, eight groups: an instantiated one of 6 stripes. */
    l.ncomp = 3;
    comp_of(&l.comp[1], 64 << 10, 8 << 20, LAYOUT_TYPE_OST, 6, 10);
    comp_of(&l.comp[2], 8 << 20, LAYOUT_END_EOF, LAYOUT_TYPE_OST | LAYOUT_F_PENDING,
            LAYOUT_COUNT_ALL, 2);
    grant_layout(11, &l);
    assert_true(opens_with(&l));
    /* Nine groups: none, also of the layout kept before (a renewal of
     * the same lease, which keeps the record). */
    comp_of(&l.comp[1], 64 << 10, 8 << 20, LAYOUT_TYPE_OST, 7, 10);
    assert_false(mdc_layout_fits(&l));
    grant_layout(11, &l);
    assert_false(opens_with(&l));
    /* Four components. */
    static struct layout four;
    memset(&four, 0, sizeof(four));
    four.ncomp = 4;
    for (uint16_t i = 0; i < 4; i++)
        comp_of(&four.comp[i], i << 20, (i + 1u) << 20, LAYOUT_TYPE_OST, 1, i);
    four.comp[3].end = LAYOUT_END_EOF;
    grant_layout(13, &four);
    assert_false(opens_with(&four));
    /* A pending component with a pool, which an open to write would need. */
    l.ncomp = 2;
    comp_of(&l.comp[1], 64 << 10, LAYOUT_END_EOF, LAYOUT_TYPE_OST | LAYOUT_F_PENDING, 1, 3);
    strcpy(l.comp[1].pool, "fast");
    grant_layout(14, &l);
    assert_false(opens_with(&l));
    /* An instantiated one with a pool: kept, without it. */
    comp_of(&l.comp[1], 64 << 10, LAYOUT_END_EOF, LAYOUT_TYPE_OST, 2, 3);
    strcpy(l.comp[1].pool, "fast");
    grant_layout(15, &l);
    assert_true(opens_with(&l));
    hear_revoke(INSTANCE, FILE_INO, 16);
    assert_false(opens_with(&l));
}

/* A rename's reply: name in DIR moved to name2 in DIR2, each directory's
 * lease going from gen_before to gen (the same lease when DIR2 is DIR). */
#define DIR2 0x20
static void renamed(const char *name, uint64_t dir2, const char *name2, uint64_t gb, uint64_t g,
                    uint64_t gb2, uint64_t g2, bool exchange)
{
    struct proto_leases ls = {.instance = INSTANCE, .n = dir2 == DIR ? 1 : 2};
    ls.l[0] = (struct proto_lease){.ino = DIR, .gen_before = gb, .gen = g, .ms = LONG_MS};
    ls.l[1] = (struct proto_lease){.ino = dir2, .gen_before = gb2, .gen = g2, .ms = LONG_MS};
    struct mdc_update u = {.sent_ms = mdc_clock_ms(),
                           .leases = &ls,
                           .parent = DIR,
                           .name = name,
                           .parent2 = dir2,
                           .name2 = name2,
                           .exchange = exchange};
    mdc_update(m, &u);
}

/* This client's own rename keeps both directories complete: the source
 * name is gone, the target holds the moved file. One the cache cannot
 * follow leaves them incomplete: a gap in the generations, an exchange, a
 * rename that changed nothing (two links of one file). */
static void test_rename_keeps_directories_complete(void **state)
{
    (void)state;
    struct proto_cred root = {0};
    struct proto_attr out;
    struct proto_attr da = attr_of(DIR, S_IFDIR | 0755, 0), d2a = attr_of(DIR2, S_IFDIR | 0755, 0);
    grant(INSTANCE, DIR, 0, 10, LONG_MS, mdc_clock_ms(), &da);
    grant(INSTANCE, DIR2, 0, 30, LONG_MS, mdc_clock_ms(), &d2a);
    mdc_new_dir(m, DIR, 0);
    mdc_new_dir(m, DIR2, 0);
    grant_name("a", 10, 20, LONG_MS); /* a renewal of DIR's lease: still complete */
    assert_int_equal(mdc_lookup(m, DIR, 0, "a", &root, &out), 0);

    /* Within DIR: a goes, b holds the file; other names are still known absent. */
    renamed("a", DIR, "b", 10, 11, 10, 11, false);
    assert_int_equal(mdc_lookup(m, DIR, 0, "a", &root, &out), -ENOENT);
    assert_int_equal(mdc_lookup(m, DIR, 0, "x", &root, &out), -ENOENT);
    /* b: the name is known; the file's attributes were not in this reply
     * and stay as cached. */
    assert_int_equal(mdc_lookup(m, DIR, 0, "b", &root, &out), 0);
    assert_int_equal(out.ino, FILE_INO);

    /* From DIR to DIR2: both stay complete. */
    renamed("b", DIR2, "c", 11, 12, 30, 31, false);
    assert_int_equal(mdc_lookup(m, DIR, 0, "b", &root, &out), -ENOENT);
    assert_int_equal(mdc_lookup(m, DIR2, 0, "c", &root, &out), 0);
    assert_int_equal(out.ino, FILE_INO);
    assert_int_equal(mdc_lookup(m, DIR2, 0, "y", &root, &out), -ENOENT);

    /* A gap in DIR2's generations (another client's change between), and
     * a name this cache did not know: neither directory stays complete. */
    renamed("q", DIR2, "r", 12, 13, 33, 34, false);
    assert_int_equal(mdc_lookup(m, DIR2, 0, "y", &root, &out), -EAGAIN);
    assert_int_equal(mdc_lookup(m, DIR, 0, "x", &root, &out), -EAGAIN);

    /* An exchange: neither directory is known complete after it. */
    grant(INSTANCE, DIR, 0, 40, LONG_MS, mdc_clock_ms(), &da);
    mdc_new_dir(m, DIR, 0);
    grant_name("e", 40, 41, LONG_MS);
    renamed("e", DIR, "f", 40, 42, 40, 42, true);
    assert_int_equal(mdc_lookup(m, DIR, 0, "x", &root, &out), -EAGAIN);

    /* Two links of one file: the MDT changes nothing and leases nothing,
     * and the source name may still be there. */
    grant(INSTANCE, DIR, 0, 50, LONG_MS, mdc_clock_ms(), &da);
    mdc_new_dir(m, DIR, 0);
    grant_name("h", 50, 51, LONG_MS);
    struct proto_leases none = {.instance = INSTANCE, .n = 0};
    struct mdc_update u = {.sent_ms = mdc_clock_ms(),
                           .leases = &none,
                           .parent = DIR,
                           .name = "h",
                           .parent2 = DIR,
                           .name2 = "h2"};
    mdc_update(m, &u);
    assert_int_equal(mdc_lookup(m, DIR, 0, "h", &root, &out), -EAGAIN);
}

/* The owner hears of every inode whose lease was revoked (not of the
 * write-behind grant, inode 0), and of none once it unsets its fn. */
static uint64_t changed_inos[8];
static unsigned changed_what[8];
static int nchanged;

/* Entries of a READDIR reply: names[i] holding inos[i]. */
static uint32_t listing(uint8_t *buf, size_t cap, const char **names, const uint64_t *inos, int n)
{
    struct proto_enc e;
    proto_enc_init(&e, buf, cap);
    for (int i = 0; i < n; i++) {
        struct proto_dirent de = {.ino = inos[i],
                                  .next_cookie = (uint64_t)i + 1,
                                  .type = DT_REG,
                                  .name = proto_str_c(names[i])};
        proto_put_dirent(&e, &de);
    }
    assert_int_equal(e.err, 0);
    return (uint32_t)e.len;
}

/* A directory this client did not make is completed from a listing, and
 * then answers a name it lacks as absent; but not when the lease changed,
 * or this client changed its names, between the listing's start and its
 * end, and not tried twice within MDC_FILL_MS. */
static void test_fill_from_a_listing(void **state)
{
    (void)state;
    struct proto_cred root = {0};
    struct proto_attr out;
    uint8_t buf[512];
    const char *names[2] = {"a", "b"};
    const uint64_t inos[2] = {FILE_INO, 0x12};
    uint32_t len = listing(buf, sizeof(buf), names, inos, 2);
    grant_name("a", 5, 6, LONG_MS);
    assert_int_equal(mdc_lookup(m, DIR, 0, "zz", &root, &out), -EAGAIN);
    struct mdc_fill f, f2;
    assert_true(mdc_fill_begin(m, DIR, 0, 1, &f));
    assert_false(mdc_fill_begin(m, DIR, 0, 1, &f2)); /* not again so soon */
    uint64_t next = 0;
    assert_int_equal(mdc_fill_end(m, &f, true, buf, len, 2, &next), 1);
    assert_int_equal(next, 2);
    assert_true(mdc_fill_complete(m, &f));
    assert_int_equal(mdc_lookup(m, DIR, 0, "zz", &root, &out), -ENOENT);
    assert_int_equal(mdc_lookup(m, DIR, 0, "a", &root, &out), 0);
    assert_int_equal(out.ino, FILE_INO);
    assert_int_equal(mdc_lookup(m, DIR, 0, "b", &root, &out), -EAGAIN); /* not leased */
    assert_false(mdc_fill_begin(m, DIR, 0, 1, &f2));                    /* complete */

    /* This client removes a name while the listing is under way. */
    const uint64_t dir2 = 0x20, dir3 = 0x30;
    struct proto_attr da = attr_of(dir2, S_IFDIR | 0755, 0);
    grant(INSTANCE, dir2, 0, 3, LONG_MS, mdc_clock_ms(), &da);
    assert_true(mdc_fill_begin(m, dir2, 0, 1, &f));
    mdc_unlinked(m, dir2, 0, "a", FILE_INO);
    assert_int_equal(mdc_fill_end(m, &f, true, buf, len, 2, &next), -1);
    assert_int_equal(mdc_lookup(m, dir2, 0, "zz", &root, &out), -EAGAIN);

    /* Another client changes it: its lease is revoked meanwhile. */
    da.ino = dir3;
    grant(INSTANCE, dir3, 0, 3, LONG_MS, mdc_clock_ms(), &da);
    assert_true(mdc_fill_begin(m, dir3, 0, 1, &f));
    hear_revoke(INSTANCE, dir3, 3);
    grant(INSTANCE, dir3, 0, 4, LONG_MS, mdc_clock_ms(), &da);
    assert_int_equal(mdc_fill_end(m, &f, true, buf, len, 2, &next), -1);
    assert_int_equal(mdc_lookup(m, dir3, 0, "zz", &root, &out), -EAGAIN);
    /* A listing that does not parse completes nothing. */
    da.ino = 0x40;
    grant(INSTANCE, 0x40, 0, 3, LONG_MS, mdc_clock_ms(), &da);
    assert_true(mdc_fill_begin(m, 0x40, 0, 1, &f));
    assert_int_equal(mdc_fill_end(m, &f, true, buf, len - 1, 2, &next), -1);
    assert_int_equal(mdc_lookup(m, 0x40, 0, "zz", &root, &out), -EAGAIN);
}

/* A directory whose listing takes several READDIRs is complete once the
 * last of them (eof) is taken under the same lease; each batch's names are
 * cached as it comes. A change between two batches makes the listing of no
 * use, and the directory stays incomplete. */
static void test_fill_in_batches(void **state)
{
    (void)state;
    struct proto_cred root = {0};
    struct proto_attr out;
    uint8_t b1[256], b2[256];
    const char *n1[2] = {"a", "b"}, *n2[1] = {"c"};
    const uint64_t i1[2] = {FILE_INO, 0x12}, i2[1] = {0x13};
    uint32_t l1 = listing(b1, sizeof(b1), n1, i1, 2), l2 = listing(b2, sizeof(b2), n2, i2, 1);
    grant_name("a", 5, 6, LONG_MS);
    struct mdc_fill f;
    uint64_t next = 0;
    assert_true(mdc_fill_begin(m, DIR, 0, 1, &f));
    assert_int_equal(mdc_fill_end(m, &f, false, b1, l1, 2, &next), 0); /* more to list */
    assert_int_equal(next, 2);
    assert_int_equal(mdc_lookup(m, DIR, 0, "a", &root, &out), 0);
    assert_int_equal(mdc_lookup(m, DIR, 0, "zz", &root, &out), -EAGAIN); /* not complete yet */
    assert_int_equal(mdc_fill_end(m, &f, true, b2, l2, 1, &next), 1);
    assert_int_equal(mdc_lookup(m, DIR, 0, "zz", &root, &out), -EAGAIN); /* not yet marked */
    assert_true(mdc_fill_complete(m, &f));
    assert_int_equal(mdc_lookup(m, DIR, 0, "zz", &root, &out), -ENOENT);
    /* A batch that lists nothing and is not the end: no progress. */
    const uint64_t dir2 = 0x20;
    struct proto_attr da = attr_of(dir2, S_IFDIR | 0755, 0);
    grant(INSTANCE, dir2, 0, 3, LONG_MS, mdc_clock_ms(), &da);
    assert_true(mdc_fill_begin(m, dir2, 0, 1, &f));
    assert_int_equal(mdc_fill_end(m, &f, false, b1, 0, 0, &next), -1);
    /* Another client's change between two batches. */
    assert_true(mdc_fill_end(m, &f, false, b1, l1, 2, &next) == 0);
    hear_revoke(INSTANCE, dir2, 3);
    grant(INSTANCE, dir2, 0, 4, LONG_MS, mdc_clock_ms(), &da);
    assert_int_equal(mdc_fill_end(m, &f, true, b2, l2, 1, &next), -1);
    assert_false(mdc_fill_complete(m, &f));
    assert_int_equal(mdc_lookup(m, dir2, 0, "zz", &root, &out), -EAGAIN);
    /* A lookup's try of one READDIR that did not fit holds back another
     * such try for MDC_FILL_BIG_MS, not an unlink's of more READDIRs. */
    const uint64_t dir3 = 0x30;
    da.ino = dir3;
    grant(INSTANCE, dir3, 0, 3, LONG_MS, mdc_clock_ms(), &da);
    assert_true(mdc_fill_begin(m, dir3, 0, 1, &f));
    assert_int_equal(mdc_fill_end(m, &f, false, b1, l1, 2, &next), 0);
    assert_false(mdc_fill_begin(m, dir3, 0, 1, &f));
    assert_true(mdc_fill_begin(m, dir3, 0, MDC_FILL_BATCHES, &f));
    assert_false(mdc_fill_begin(m, dir3, 0, MDC_FILL_BATCHES, &f)); /* not again so soon */
}

static void on_changed(uint64_t ino, unsigned what, void *arg)
{
    assert_ptr_equal(arg, &nchanged);
    if (nchanged < 8) {
        changed_what[nchanged] = what;
        changed_inos[nchanged++] = ino;
    }
}

static void test_change_hook(void **state)
{
    (void)state;
    grant_name("h", 50, 51, LONG_MS);
    nchanged = 0;
    mdc_on_change(m, on_changed, &nchanged);
    uint8_t r[48];
    const uint64_t inos[3] = {FILE_INO, 0, DIR};
    for (int i = 0; i < 3; i++) {
        proto_put_le64(r + i * 16, inos[i]);
        proto_put_le64(r + i * 16 + 8, 60);
    }
    /* The kinds the MDT sent: the file's attributes, only the directory's
     * names (the grant's byte is not looked at). */
    const uint8_t kinds[3] = {0, 0, PROTO_REVOKE_NAMES};
    mdc_heard(m, 0, INSTANCE, r, 3, kinds, 3);
    assert_int_equal(nchanged, 2);
    assert_int_equal(changed_inos[0], FILE_INO);
    assert_int_equal(changed_what[0], 0);
    assert_int_equal(changed_inos[1], DIR);
    assert_int_equal(changed_what[1], STRIA_REVOKED_NAMES);
    /* An older MDT sends no kinds, and a short list leaves the rest 0:
     * anything may have changed. */
    proto_put_le64(r + 8, 63);
    proto_put_le64(r + 40, 63);
    mdc_heard(m, 0, INSTANCE, r, 3, kinds, 0);
    assert_int_equal(nchanged, 4);
    assert_int_equal(changed_inos[3], DIR);
    assert_int_equal(changed_what[3], 0);
    nchanged = 0;
    /* An inode the cache never held is told too (the kernel may hold it). */
    hear_revoke(INSTANCE, 0x77, 64);
    assert_int_equal(nchanged, 1);
    assert_int_equal(changed_inos[0], 0x77);
    mdc_on_change(m, NULL, NULL);
    hear_revoke(INSTANCE, DIR, 65);
    assert_int_equal(nchanged, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_change_hook, setup, teardown),
        cmocka_unit_test_setup_teardown(test_answered_while_valid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_after_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_victim_under_exclusive_hold, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_generation_after_expiry_keeps_names, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_not_after_revoke, setup, teardown),
        cmocka_unit_test_setup_teardown(test_generation_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_instance_change_drops_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_behind_revoke_reaches_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shards_lease_their_own_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forget_one_mdt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shard_empty_needs_the_same_lease, setup, teardown),
        cmocka_unit_test_setup_teardown(test_xattr_absent_under_the_lease, setup, teardown),
        cmocka_unit_test_setup_teardown(test_xattr_absent_from_a_listing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_perm_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_layout_for_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_lease_from_before_a_forget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_keeps_directories_complete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fill_from_a_listing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fill_in_batches, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
