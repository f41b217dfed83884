/*
 * chaos: a randomized namespace workload of several clients against a
 * cluster whose metadata daemons are being killed (tests/func/chaos.sh),
 * checked against a model of what was acknowledged.
 *
 * Usage: chaos CLIENT_CONF SECONDS SEED [CLIENTS]
 *
 * Each client (its own stria_fs_t, its own thread) works in a directory of
 * its own, /chaos/cK, striped over every MDT, on twelve names: creates,
 * mkdirs (plain and striped), renames (so between shards), hard links,
 * unlinks and rmdirs. The model maps each name to the inode it holds.
 *
 * Every answer is checked against the model: a success moves the model; an
 * error must be the one POSIX gives for the model's state. An answer that
 * cannot be trusted (the daemon died mid-request: EIO, ECONNREFUSED...; or
 * a request the library resent after a lost reply, which without a reply
 * cache may run twice) is resolved by looking: the names it touched are
 * stat'ed until the servers answer, and what they hold must be one of the
 * two outcomes "it happened once" or "it did not happen". A rename that
 * left both names, or neither, fails the test.
 *
 * At the end: every name holds what the model says, the directory lists
 * nothing else, and every file's link count is the number of names the
 * model gives it. The script then runs fsck and compares inode counts.
 */
#include "stria/stria.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NAMES       12
#define MAX_CLIENTS 8
#define PROBE_MS    60000

enum kind { NONE, FILE_, DIR_ };

struct entry {
    enum kind kind;
    uint64_t ino;
};

struct client {
    int id;
    stria_fs_t *fs;
    char dir[64];
    struct entry model[NAMES];
    uint64_t rng;
    double until;
    long ops, unsure, failed;
    char why[512];
    char hist[8192][160]; /* the last operations, for a failure's report */
    unsigned nhist;
};

static void note(struct client *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->hist[c->nhist++ % 8192], sizeof(c->hist[0]), fmt, ap);
    va_end(ap);
}

static const char *conf;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint32_t rnd(struct client *c, uint32_t n)
{
    c->rng ^= c->rng << 13;
    c->rng ^= c->rng >> 7;
    c->rng ^= c->rng << 17;
    return (uint32_t)(c->rng % n);
}

static void path_of(const struct client *c, int n, char *buf, size_t len)
{
    snprintf(buf, len, "%s/n%d", c->dir, n);
}

static int fail(struct client *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof(c->why), fmt, ap);
    va_end(ap);
    c->failed++;
    return -1;
}

/* Answers that say nothing about whether the request ran. */
static bool untrusted(int rc)
{
    return rc == -EIO || rc == -ECONNREFUSED || rc == -ECONNRESET || rc == -ETIMEDOUT ||
           rc == -EPIPE || rc == -ENOTCONN || rc == -EHOSTUNREACH || rc == -EBUSY ||
           rc == -ECONNABORTED || rc == -EPROTO || rc == -EBADMSG;
}

/* What name n holds now, asking until the servers answer. */
static int look(struct client *c, int n, struct entry *out)
{
    char p[96];
    path_of(c, n, p, sizeof(p));
    double give_up = now_s() + PROBE_MS / 1000.0;
    for (;;) {
        struct stat st;
        int rc = stria_lstat(c->fs, p, &st);
        if (rc == 0) {
            out->kind = S_ISDIR(st.st_mode) ? DIR_ : FILE_;
            out->ino = st.st_ino;
            return 0;
        }
        if (rc == -ENOENT) {
            out->kind = NONE;
            out->ino = 0;
            return 0;
        }
        if (!untrusted(rc) || now_s() > give_up)
            return fail(c, "lstat %s: %s", p, strerror(-rc));
        usleep(50 * 1000);
    }
}

static bool same(const struct entry *a, const struct entry *b)
{
    return a->kind == b->kind && a->ino == b->ino;
}

static const char *show(const struct entry *e, char *buf, size_t len)
{
    if (e->kind == NONE)
        snprintf(buf, len, "nothing");
    else
        snprintf(buf, len, "%s %llx", e->kind == DIR_ ? "dir" : "file", (unsigned long long)e->ino);
    return buf;
}

/* The op's answer was not trusted (or contradicts the model): look at the
 * names and accept "happened once" (to, what they hold then) or "did not
 * happen" (the model). A create or mkdir that happened made some new
 * inode: want_new says so for name a. */
static int resolve(struct client *c, const char *op, int a, int b, const struct entry *to_a,
                   const struct entry *to_b, bool want_new)
{
    struct entry ea, eb = {NONE, 0};
    bool before = false, after = false;
    /* A daemon killed in the middle of an operation leaves it open until
     * its recovery runs (a tick after it is back): look until it is done
     * or undone, for a while. */
    double give_up = now_s() + 15;
    do {
        if (before || after)
            break;
        if (look(c, a, &ea) || (b >= 0 && look(c, b, &eb)))
            return -1;
        before = same(&ea, &c->model[a]) && (b < 0 || same(&eb, &c->model[b]));
        after = (want_new ? ea.kind == to_a->kind && ea.ino && ea.ino != c->model[a].ino
                          : same(&ea, to_a)) &&
                (b < 0 || same(&eb, to_b));
    } while (!before && !after && now_s() < give_up && usleep(200 * 1000) == 0);
    c->unsure++;
    char r1[64], r2[64];
    note(c, "  resolved %s: n%d holds %s, n%d holds %s: %s", op, a, show(&ea, r1, sizeof(r1)), b,
         b >= 0 ? show(&eb, r2, sizeof(r2)) : "-",
         after    ? "done"
         : before ? "not done"
                  : "??");
    if (after) {
        c->model[a] = ea;
        if (b >= 0)
            c->model[b] = eb;
        return 0;
    }
    if (before)
        return 0;
    char s1[64], s2[64], s3[64], s4[64];
    return fail(c,
                "%s n%d n%d: neither done nor undone: n%d holds %s (model %s), n%d holds %s "
                "(model %s)",
                op, a, b, a, show(&ea, s1, sizeof(s1)), show(&c->model[a], s2, sizeof(s2)), b,
                b >= 0 ? show(&eb, s3, sizeof(s3)) : "-",
                b >= 0 ? show(&c->model[b], s4, sizeof(s4)) : "-");
}

/* A create (kind FILE_) or mkdir (DIR_) of name a answered rc: check it
 * against the model, and follow it there. */
static int check_made(struct client *c, int a, int rc, enum kind kind)
{
    const char *what = kind == FILE_ ? "create" : "mkdir";
    struct entry *ma = &c->model[a];
    note(c, "%.3f %s n%d -> %d (model %d %llx)", now_s(), what, a, rc, ma->kind,
         (unsigned long long)ma->ino);
    int want = ma->kind == NONE ? 0 : -EEXIST;
    if (rc == want && rc == 0) {
        struct entry e;
        if (look(c, a, &e))
            return -1;
        if (e.kind != kind || (kind == FILE_ && e.ino == ma->ino))
            return fail(c, "%s n%d succeeded but it holds no %s", what, a,
                        kind == FILE_ ? "new file" : "directory");
        *ma = e;
        return 0;
    }
    if (rc == want)
        return 0;
    struct entry fresh = {kind, 0};
    if (untrusted(rc) || (rc == -EEXIST && ma->kind == NONE))
        return resolve(c, what, a, -1, &fresh, NULL, true);
    return fail(c, "%s n%d: %s, model %s", what, a, strerror(-rc), ma->kind ? "exists" : "none");
}

/* An unlink (kind FILE_) or rmdir (DIR_) of name a answered rc: the same. */
static int check_removed(struct client *c, int a, int rc, enum kind kind)
{
    const char *what = kind == FILE_ ? "unlink" : "rmdir";
    struct entry *ma = &c->model[a], none = {NONE, 0};
    note(c, "%.3f %s n%d -> %d (model %d %llx)", now_s(), what, a, rc, ma->kind,
         (unsigned long long)ma->ino);
    int want = ma->kind == NONE   ? -ENOENT
               : ma->kind != kind ? (kind == FILE_ ? -EISDIR : -ENOTDIR)
                                  : 0;
    if (rc == want) {
        if (rc == 0)
            *ma = none;
        return 0;
    }
    if (untrusted(rc) || (rc == -ENOENT && ma->kind == kind))
        return resolve(c, what, a, -1, &none, NULL, false);
    return fail(c, "%s n%d: %s, want %s", what, a, strerror(-rc), strerror(-want));
}

static int one_op(struct client *c)
{
    int a = (int)rnd(c, NAMES), b = (int)rnd(c, NAMES);
    char pa[96], pb[96];
    path_of(c, a, pa, sizeof(pa));
    path_of(c, b, pb, sizeof(pb));
    struct entry *ma = &c->model[a], *mb = &c->model[b];
    struct entry none = {NONE, 0};
    int rc, want;
    switch (rnd(c, 7)) {
    case 0:
    case 1: { /* create */
        stria_file_t *f;
        rc = stria_open(c->fs, pa, O_CREAT | O_EXCL | O_WRONLY, 0644, &f);
        if (rc == 0)
            rc = stria_close(f);
        return check_made(c, a, rc, FILE_);
    }
    case 2: { /* mkdir, striped over two MDTs one time in three */
        int count = rnd(c, 3) == 0 ? 2 : 0;
        rc = count ? stria_mkdir_striped(c->fs, pa, 0755, count, -1) : stria_mkdir(c->fs, pa, 0755);
        return check_made(c, a, rc, DIR_);
    }
    case 3: /* unlink */
        return check_removed(c, a, stria_unlink(c->fs, pa), FILE_);
    case 4: /* rmdir: the model's directories are empty */
        return check_removed(c, a, stria_rmdir(c->fs, pa), DIR_);
    case 5: { /* rename a -> b */
        rc = stria_rename(c->fs, pa, pb, 0);
        note(c, "%.3f rename n%d n%d -> %d (model %d %llx, %d %llx)", now_s(), a, b, rc, ma->kind,
             (unsigned long long)ma->ino, mb->kind, (unsigned long long)mb->ino);
        if (a == b || (ma->kind != NONE && ma->ino == mb->ino))
            want = ma->kind == NONE ? -ENOENT : 0;
        else if (ma->kind == NONE)
            want = -ENOENT;
        else if (ma->kind == FILE_ && mb->kind == DIR_)
            want = -EISDIR;
        else if (ma->kind == DIR_ && mb->kind == FILE_)
            want = -ENOTDIR;
        else
            want = 0;
        /* A directory between MDTs is not moved yet, nor is a striped one
         * replaced: EXDEV, and nothing changes (a check of the names below
         * at the end still holds it to that). */
        if (rc == -EXDEV && (ma->kind == DIR_ || mb->kind == DIR_))
            return 0;
        if (rc == want) {
            if (rc == 0 && a != b && ma->ino != mb->ino) {
                *mb = *ma;
                *ma = none;
            }
            return 0;
        }
        struct entry moved = *ma;
        if (untrusted(rc) || (rc == -ENOENT && ma->kind != NONE))
            return resolve(c, "rename", a, b, &none, &moved, false);
        return fail(c, "rename n%d n%d: %s, want %s", a, b, strerror(-rc), strerror(-want));
    }
    default: { /* link a -> b */
        rc = stria_link(c->fs, pa, pb);
        note(c, "%.3f link n%d n%d -> %d (model %d %llx, %d %llx)", now_s(), a, b, rc, ma->kind,
             (unsigned long long)ma->ino, mb->kind, (unsigned long long)mb->ino);
        want = ma->kind == NONE   ? -ENOENT
               : mb->kind != NONE ? -EEXIST
               : ma->kind == DIR_ ? -EPERM
                                  : 0;
        if (rc == want) {
            if (rc == 0)
                *mb = *ma;
            return 0;
        }
        if (ma->kind == DIR_ && (rc == -EPERM || rc == -EEXIST))
            return 0; /* EEXIST first, as Linux, or EPERM: both refuse */
        struct entry linked = *ma;
        if (untrusted(rc) || (rc == -EEXIST && mb->kind == NONE && ma->kind == FILE_))
            return resolve(c, "link", b, -1, &linked, NULL, false);
        return fail(c, "link n%d n%d: %s, want %s", a, b, strerror(-rc), strerror(-want));
    }
    }
}

/* The end: names, listing and link counts against the model. */
static int verify(struct client *c)
{
    for (int n = 0; n < NAMES; n++) {
        struct entry e;
        char s1[64], s2[64];
        if (look(c, n, &e))
            return -1;
        if (!same(&e, &c->model[n]))
            return fail(c, "n%d holds %s, model says %s", n, show(&e, s1, sizeof(s1)),
                        show(&c->model[n], s2, sizeof(s2)));
        if (e.kind == FILE_) {
            char p[96];
            struct stat st;
            path_of(c, n, p, sizeof(p));
            unsigned want = 0;
            for (int m = 0; m < NAMES; m++)
                want += c->model[m].kind == FILE_ && c->model[m].ino == e.ino;
            if (stria_lstat(c->fs, p, &st) || st.st_nlink != want)
                return fail(c, "n%d: link count %lu, %u names hold it", n,
                            (unsigned long)st.st_nlink, want);
        }
    }
    stria_dir_t *d;
    int rc = stria_opendir(c->fs, c->dir, &d), listed = 0, want = 0;
    if (rc)
        return fail(c, "opendir %s: %s", c->dir, strerror(-rc));
    struct stria_dirent de;
    while ((rc = stria_readdir(d, &de)) == 1) {
        int n;
        if (sscanf(de.name, "n%d", &n) != 1 || n < 0 || n >= NAMES || c->model[n].kind == NONE) {
            stria_closedir(d);
            return fail(c, "%s lists '%s', which the model does not have", c->dir, de.name);
        }
        listed++;
    }
    stria_closedir(d);
    for (int n = 0; n < NAMES; n++)
        want += c->model[n].kind != NONE;
    if (rc < 0 || listed != want)
        return fail(c, "%s lists %d names (rc %d), the model %d", c->dir, listed, rc, want);
    return 0;
}

static void *run(void *arg)
{
    struct client *c = arg;
    while (now_s() < c->until && c->failed == 0) {
        one_op(c);
        c->ops++;
    }
    if (c->failed) {
        fprintf(stderr, "client %d, last operations (oldest first):\n", c->id);
        for (unsigned i = c->nhist > 32 ? c->nhist - 32 : 0; i < c->nhist; i++)
            fprintf(stderr, "  %s\n", c->hist[i % 8192]);
    }
    {
        /* CHAOS_HISTORY=PREFIX: each client's last operations in PREFIX.cK. */
        const char *hp = getenv("CHAOS_HISTORY");
        char hf[4096];
        snprintf(hf, sizeof(hf), "%s.c%d", hp ? hp : "", c->id);
        FILE *f = hp ? fopen(hf, "w") : NULL;
        for (unsigned i = c->nhist > 8192 ? c->nhist - 8192 : 0; f && i < c->nhist; i++)
            fprintf(f, "%s\n", c->hist[i % 8192]);
        if (f)
            fclose(f);
    }
    /* An acknowledged operation whose last step waits for an MDT that was
     * down completes when recovery reaches it (a tick after the MDT is
     * back): the namespace must match the model within seconds. */
    double deadline = now_s() + 15;
    while (c->failed == 0 && verify(c) && now_s() < deadline) {
        c->failed = 0;
        usleep(250 * 1000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s CLIENT_CONF SECONDS SEED [CLIENTS]\n", argv[0]);
        return 2;
    }
    conf = argv[1];
    double secs = atof(argv[2]);
    uint64_t seed = strtoull(argv[3], NULL, 0);
    int nc = argc > 4 ? atoi(argv[4]) : 3;
    if (secs <= 0 || secs > 3600 || nc < 1 || nc > MAX_CLIENTS) {
        fprintf(stderr, "%s: SECONDS 0..3600, CLIENTS 1..%d\n", argv[0], MAX_CLIENTS);
        return 2;
    }
    static struct client cl[MAX_CLIENTS]; /* large: the histories */
    stria_fs_t *setup;
    int rc = stria_connect(conf, &setup);
    if (rc || ((rc = stria_mkdir(setup, "/chaos", 0755)) && rc != -EEXIST)) {
        fprintf(stderr, "set-up: %s\n", strerror(-rc));
        return 1;
    }
    for (int i = 0; i < nc; i++) {
        struct client *c = &cl[i];
        c->id = i;
        c->rng = seed * 0x9e3779b97f4a7c15ull + (uint64_t)i * 7919 + 1;
        snprintf(c->dir, sizeof(c->dir), "/chaos/c%d", i);
        if ((rc = stria_mkdir_striped(setup, c->dir, 0755, -1, -1)) ||
            (rc = stria_connect(conf, &c->fs))) {
            fprintf(stderr, "set-up of client %d: %s\n", i, strerror(-rc));
            return 1;
        }
    }
    stria_disconnect(setup);
    double start = now_s();
    pthread_t t[MAX_CLIENTS];
    for (int i = 0; i < nc; i++) {
        cl[i].until = start + secs;
        pthread_create(&t[i], NULL, run, &cl[i]);
    }
    int bad = 0;
    for (int i = 0; i < nc; i++) {
        pthread_join(t[i], NULL);
        printf("client %d: %ld operations, %ld resolved by looking%s%s\n", i, cl[i].ops,
               cl[i].unsure, cl[i].failed ? "; FAILED: " : "", cl[i].failed ? cl[i].why : "");
        bad |= cl[i].failed != 0;
        stria_disconnect(cl[i].fs);
    }
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad;
}
