/*
 * Data repositories' registry entries and the passes that apply their
 * settings (stria.h, "A repository as the registry holds it"): import and
 * sync of a listing, export of what changed here, and tiering. The CLI
 * runs them when asked; stria-mgmtd's policy engine runs them on its own.
 *
 * Every pass is made of the public calls of repo.c (stria_s3_list,
 * stria_hsm_import, stria_hsm_archive, stria_hsm_release) and walks the
 * namespace by path, so it can be stopped between any two files and run
 * again: a pass keeps no state but what the registry and the HSM records
 * hold (the listing's resume key and generation are saved in the
 * repository's conf after each page).
 */
#include "admin.h"
#include "hsm.h"

#include "../common/util.h"

#include <stria/stria.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#define PAGE     1000
#define PATH_CAP 4096

/* ---- the registry ---- */

int stria_repo_parse(struct stria_repo *r)
{
    char addressing[32] = "";
    if (r->len >= sizeof(r->conf))
        return -EINVAL;
    r->conf[r->len] = 0;
    r->path[0] = r->bucket[0] = r->prefix[0] = r->endpoint[0] = r->region[0] = 0;
    stria_repo_value(r->conf, r->len, "path", r->path, sizeof(r->path));
    stria_repo_value(r->conf, r->len, "bucket", r->bucket, sizeof(r->bucket));
    stria_repo_value(r->conf, r->len, "prefix", r->prefix, sizeof(r->prefix));
    stria_repo_value(r->conf, r->len, "endpoint", r->endpoint, sizeof(r->endpoint));
    stria_repo_value(r->conf, r->len, "region", r->region, sizeof(r->region));
    stria_repo_value(r->conf, r->len, "addressing", addressing, sizeof(addressing));
    r->vhost = !strcmp(addressing, "virtual");
    r->t = (struct stria_s3_target){r->endpoint, r->region, r->bucket, r->vhost};
    return r->path[0] == '/' && r->bucket[0] ? 0 : -EINVAL;
}

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

int stria_repo_load(stria_fs_t *fs, struct stria_repo **v, size_t *n)
{
    size_t cap = 1 << 20, len = 0, count = 0;
    uint8_t *buf = malloc(cap);
    *v = NULL;
    *n = 0;
    if (!buf)
        return -ENOMEM;
    int rc = stria_repo_call(fs, STRIA_REPO_LIST, 0, NULL, 0, buf, cap, &len);
    for (size_t at = 0; rc == 0 && at + 12 <= len;) {
        uint32_t l = (uint32_t)le(buf + at + 8, 4);
        if (l > len - at - 12 || l > 4096) {
            rc = -EBADMSG;
            break;
        }
        struct stria_repo *nv = realloc(*v, (count + 1) * sizeof(**v));
        if (!nv) {
            rc = -ENOMEM;
            break;
        }
        *v = nv;
        struct stria_repo *r = &nv[count];
        memset(r, 0, sizeof(*r));
        r->dir = le(buf + at, 8);
        memcpy(r->conf, buf + at + 12, l);
        r->len = l;
        if (stria_repo_parse(r) == 0)
            count++;
        at += 12 + l;
    }
    free(buf);
    if (rc) {
        free(*v);
        *v = NULL;
        return rc;
    }
    /* Each entry's target points into itself: the array moved as it grew. */
    for (size_t i = 0; i < count; i++)
        stria_repo_parse(&(*v)[i]);
    *n = count;
    return 0;
}

int stria_repo_set(struct stria_repo *r, const char *name, const char *value)
{
    char out[sizeof(r->conf)];
    size_t o = 0, nl = strlen(name);
    for (size_t at = 0; at < r->len;) {
        const char *line = r->conf + at;
        const char *end = memchr(line, '\n', r->len - at);
        size_t ll = end ? (size_t)(end - line) : r->len - at;
        at += ll + 1;
        if (ll > nl && !memcmp(line, name, nl) && line[nl] == '=')
            continue;
        if (o + ll + 1 >= sizeof(out))
            return -E2BIG;
        memcpy(out + o, line, ll);
        o += ll;
        out[o++] = '\n';
    }
    if (value) {
        int w = snprintf(out + o, sizeof(out) - o, "%s=%s\n", name, value);
        if (w < 0 || (size_t)w >= sizeof(out) - o)
            return -E2BIG;
        o += (size_t)w;
    }
    memcpy(r->conf, out, o);
    r->len = o;
    return stria_repo_parse(r);
}

int stria_repo_save(stria_fs_t *fs, const struct stria_repo *r)
{
    return stria_repo_call(fs, STRIA_REPO_SET, r->dir, r->conf, r->len, NULL, 0, NULL);
}

/* Whether p is dir or below it. */
static int below(const char *dir, const char *p)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return p[0] == '/';
    return !strncmp(dir, p, n) && (p[n] == 0 || p[n] == '/');
}

const struct stria_repo *stria_repo_for(const struct stria_repo *v, size_t n, const char *p)
{
    const struct stria_repo *best = NULL;
    for (size_t i = 0; i < n; i++)
        if (below(v[i].path, p) && (!best || strlen(v[i].path) > strlen(best->path)))
            best = &v[i];
    return best;
}

int stria_repo_key(const struct stria_repo *r, const char *p, char *key, size_t cap)
{
    size_t n = strlen(r->path);
    const char *rel = p + (n == 1 ? 1 : n);
    while (*rel == '/')
        rel++;
    int w = snprintf(key, cap, "%s%s", r->prefix, rel);
    return w < 0 || (size_t)w >= cap || !*rel ? -ENAMETOOLONG : 0;
}

int64_t stria_repo_int(const struct stria_repo *r, const char *name, int64_t dflt)
{
    char v[32];
    int64_t n;
    if (stria_repo_value(r->conf, r->len, name, v, sizeof(v)) || util_parse_i64(v, &n) < 0)
        return dflt;
    return n;
}

int stria_repo_has(const struct stria_repo *r, const char *which, const char *what)
{
    char v[64] = "";
    if (stria_repo_value(r->conf, r->len, which, v, sizeof(v)))
        return 0;
    for (char *save = NULL, *t = strtok_r(v, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (!strcmp(t, what))
            return 1;
    return 0;
}

/* ---- reporting ---- */

static void note(const struct stria_pass *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(const struct stria_pass *p, const char *fmt, ...)
{
    if (!p || !p->note)
        return;
    char line[1600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    p->note(line, p->arg);
}

static int stopped(const struct stria_pass *p)
{
    return p && p->stop && p->stop(p->arg);
}

static void progress(const struct stria_pass *p, uint64_t done)
{
    if (p && p->progress)
        p->progress(done, p->arg);
}

static int join(const char *dir, const char *name, char *out)
{
    int w = snprintf(out, PATH_CAP, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", name);
    return w < 0 || w >= PATH_CAP ? -ENAMETOOLONG : 0;
}

/* Call fn for every regular file below path (directories first listed,
 * then walked, so that fn may unlink what it is given). Stops at fn's
 * first nonzero return or when the pass is stopped. */
typedef int (*file_fn)(const char *path, uint64_t ino, void *arg);
#define WALK_DEPTH 256 /* deeper directories are left out, and said so */
static int walk_at(stria_fs_t *fs, const char *path, file_fn fn, void *arg,
                   const struct stria_pass *p, int depth)
{
    if (depth >= WALK_DEPTH) {
        note(p, "%s: more than %d directories deep: left out", path, WALK_DEPTH);
        return 0;
    }
    stria_dir_t *d;
    int rc = stria_opendir(fs, path, &d);
    if (rc)
        return rc;
    struct stria_dirent e;
    char **subs = NULL, child[PATH_CAP];
    size_t nsub = 0;
    while (rc == 0 && (rc = stria_readdir(d, &e)) == 1) {
        rc = 0;
        if (stopped(p))
            rc = -EINTR;
        else if (join(path, e.name, child))
            note(p, "%s/%s: path too long, skipped", path, e.name);
        else if (e.type == DT_DIR) {
            char **ns = realloc(subs, (nsub + 1) * sizeof(*subs));
            if (!ns || !(ns[nsub] = strdup(child)))
                rc = -ENOMEM;
            if (ns)
                subs = ns;
            if (!rc)
                nsub++;
        } else if (e.type == DT_REG) {
            rc = fn(child, e.ino, arg);
        }
    }
    stria_closedir(d);
    for (size_t i = 0; i < nsub; i++) {
        if (rc >= 0) {
            int r = walk_at(fs, subs[i], fn, arg, p, depth + 1);
            if (r == -EINTR || r == -ENOMEM)
                rc = r;
            else if (r && r != -ENOENT)
                note(p, "%s: %s", subs[i], strerror(-r));
        }
        free(subs[i]);
    }
    free(subs);
    return rc < 0 ? rc : 0;
}

static int walk(stria_fs_t *fs, const char *path, file_fn fn, void *arg, const struct stria_pass *p)
{
    return walk_at(fs, path, fn, arg, p, 0);
}

/* ---- import and sync ---- */

struct import {
    stria_fs_t *fs;
    struct stria_repo *r;
    const struct stria_pass *p;
    struct stria_sync_stats *st;
    uint64_t gen;
    int changed; /* take objects changed in S3 */
    char last[1025];
    /* The directory the last object went into, and its inode. */
    char dir[PATH_CAP];
    uint64_t dir_ino;
};

/* The inode of directory rel (below the repository's), made as needed. */
static int ensure_dir(struct import *im, const char *rel, uint64_t *ino)
{
    if (im->dir_ino && !strcmp(im->dir, rel)) {
        *ino = im->dir_ino;
        return 0;
    }
    uint64_t at = im->r->dir;
    char buf[PATH_CAP];
    snprintf(buf, sizeof(buf), "%s", rel);
    for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        struct stria_attr a;
        int rc = stria_lookup_at(im->fs, at, c, &a);
        if (rc == -ENOENT) {
            rc = stria_mkdir_at(im->fs, at, c, 0755, &a);
            if (rc == -EEXIST)
                rc = stria_lookup_at(im->fs, at, c, &a);
        }
        if (rc)
            return rc;
        if (!S_ISDIR(a.mode))
            return -ENOTDIR;
        at = a.ino;
    }
    snprintf(im->dir, sizeof(im->dir), "%s", rel);
    im->dir_ino = at;
    *ino = at;
    return 0;
}

/* Whether every component of rel is a name a file system can hold. */
static int good_name(const char *rel)
{
    const char *c = rel;
    for (;;) {
        const char *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == 0 || n > 255 || (n == 1 && c[0] == '.') || (n == 2 && !strncmp(c, "..", 2)))
            return 0;
        if (!e)
            return 1;
        c = e + 1;
    }
}

static int import_one(const struct stria_s3_obj *o, void *arg)
{
    struct import *im = arg;
    snprintf(im->last, sizeof(im->last), "%s", o->key);
    im->st->seen++;
    size_t pl = strlen(im->r->prefix);
    const char *rel = o->key + pl;
    if (strncmp(o->key, im->r->prefix, pl) || !*rel)
        return 0;
    char path[PATH_CAP];
    size_t rl = strlen(rel);
    int is_dir = rel[rl - 1] == '/';
    if (rl >= sizeof(path)) {
        im->st->skipped++;
        return 0;
    }
    memcpy(path, rel, rl + 1);
    if (is_dir)
        path[rl - 1] = 0;
    if (!good_name(path)) {
        note(im->p, "skipping s3://%s/%s: not a valid path", im->r->bucket, o->key);
        im->st->skipped++;
        return 0;
    }
    uint64_t parent;
    char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    if (slash)
        *slash = 0;
    int rc = ensure_dir(im, slash ? path : "", &parent);
    if (rc == 0 && is_dir) {
        struct stria_attr a;
        rc = stria_mkdir_at(im->fs, parent, name, 0755, &a);
        if (rc == -EEXIST)
            rc = 0;
    } else if (rc == 0) {
        int result = 0;
        rc = stria_hsm_import(im->fs, parent, name, im->r->dir, o->key, o->etag, o->size,
                              o->mtime_ns, 0644, im->gen, im->changed ? STRIA_IMPORT_CHANGED : 0,
                              &result, NULL);
        uint64_t *count[] = {[STRIA_IMPORTED] = &im->st->imported,
                             [STRIA_UNCHANGED] = &im->st->unchanged,
                             [STRIA_UPDATED] = &im->st->updated,
                             [STRIA_KEPT] = &im->st->kept};
        if (rc == 0 && result >= 0 && result < 4)
            (*count[result])++;
    }
    if (rc) {
        im->st->failed++;
        note(im->p, "s3://%s/%s: %s", im->r->bucket, o->key, strerror(-rc));
    }
    return 0;
}

struct sweep {
    stria_fs_t *fs;
    const struct stria_repo *r;
    uint64_t gen, removed;
};

/* A file of r that the last whole listing did not stamp: its object is
 * gone from S3; unless changed here, it goes too. */
static int sweep_one(const char *path, uint64_t ino, void *arg)
{
    struct sweep *s = arg;
    struct stria_hsm h;
    if (stria_hsm_get(s->fs, ino, &h) || h.repo != s->r->dir || !(h.state & STRIA_HSM_ARCHIVED) ||
        (h.state & STRIA_HSM_DIRTY) || h.gen >= s->gen)
        return 0;
    /* Not stamped is not proof: a file kept (changed in S3 while the
     * policy takes no changes, renamed here) is not stamped either. Only
     * an object S3 says is gone takes its file with it. */
    struct stria_s3_obj o;
    char etag[130], why[256];
    if (stria_s3_head(s->fs, &s->r->t, h.key, &o, etag, sizeof(etag), why, sizeof(why)) != -ENOENT)
        return 0;
    /* Lost first: a file whose object S3 no longer has leaves no
     * tombstone, so an export policy "deleted" never deletes an object
     * someone uploads again under its key. */
    if (hsm_mark_lost(s->fs, ino, h.repo, h.etag))
        return 0;
    if (stria_unlink(s->fs, path) == 0)
        s->removed++;
    return 0;
}

int stria_repo_import(stria_fs_t *fs, struct stria_repo *r, int flags, const struct stria_pass *p,
                      struct stria_sync_stats *st, char *why, size_t whylen)
{
    struct import *im = calloc(1, sizeof(*im));
    if (!im)
        return -ENOMEM;
    memset(st, 0, sizeof(*st));
    *im = (struct import){.fs = fs, .r = r, .p = p, .st = st};
    char v[1025] = "", resume[1025] = "";
    if (stria_repo_value(r->conf, r->len, "gen", v, sizeof(v)) == 0)
        im->gen = strtoull(v, NULL, 10);
    stria_repo_value(r->conf, r->len, "import_after", resume, sizeof(resume));
    if (!resume[0])
        im->gen++; /* a new pass; a resumed one keeps its generation */
    else
        note(p, "resuming the listing of s3://%s/%s after %s", r->bucket, r->prefix, resume);
    im->changed = (flags & STRIA_SYNC_POLICY) && stria_repo_has(r, "import_policy", "changed");
    snprintf(v, sizeof(v), "%" PRIu64, im->gen);
    int rc = stria_repo_set(r, "gen", v);
    if (rc == 0)
        rc = stria_repo_save(fs, r);
    const char *after = resume[0] ? resume : NULL;
    int more = 1;
    if (why && whylen)
        why[0] = 0;
    while (rc == 0 && more) {
        if (stopped(p)) {
            rc = -EINTR;
            break;
        }
        rc = stria_s3_list(fs, &r->t, r->prefix, after, PAGE, import_one, im, &more, why, whylen);
        if (rc)
            break;
        /* Where a rerun resumes if this one is stopped. */
        if (more && (rc = stria_repo_set(r, "import_after", im->last)) == 0)
            rc = stria_repo_save(fs, r);
        after = im->last;
        progress(p, st->seen);
    }
    if (rc == 0 && (rc = stria_repo_set(r, "import_after", NULL)) == 0)
        rc = stria_repo_save(fs, r);
    if (rc == 0 && (flags & STRIA_SYNC_POLICY) && stria_repo_has(r, "import_policy", "deleted")) {
        struct sweep s = {.fs = fs, .r = r, .gen = im->gen};
        rc = walk(fs, r->path, sweep_one, &s, p);
        st->removed = s.removed;
    }
    /* Files an object that changed superseded stay for those who opened
     * them for keep_old seconds. */
    if (rc == 0) {
        int64_t keep = stria_repo_int(r, "keep_old", 3600);
        int rrc = hsm_reap(fs, r->dir, (uint64_t)(keep > 0 ? keep : 0) * 1000, &st->reaped);
        if (rrc)
            note(p, "superseded files not freed yet: %s", strerror(-rrc));
    }
    free(im);
    return rc;
}

/* ---- export ---- */

struct exp_pass {
    stria_fs_t *fs;
    const struct stria_repo *r;
    const struct stria_pass *p;
    struct stria_export_stats *st;
    int new, changed, deleted;
    int64_t quiet_ns, now_ns;
};

/* What an export pass does with one file: archive it (new, or dirty), or
 * move its object after it (archived under another name: renamed here,
 * and the policy takes new objects; the old one goes with "deleted"). */
static int export_one(const char *path, uint64_t ino, void *arg)
{
    struct exp_pass *x = arg;
    struct stria_hsm h;
    char key[1100], why[512] = "";
    int rc = stria_hsm_get(x->fs, ino, &h);
    if (rc)
        return rc == -ENOENT ? 0 : (x->st->failed++, 0);
    if (h.repo && h.repo != x->r->dir)
        return 0; /* another repository's (a nested link) */
    if (stria_repo_key(x->r, path, key, sizeof(key))) {
        note(x->p, "%s: no object key fits its path, not exported", path);
        return 0;
    }
    int archived = (h.state & STRIA_HSM_ARCHIVED) != 0;
    int fresh = !archived && !(h.state & STRIA_HSM_RELEASED);
    int dirty = archived && (h.state & STRIA_HSM_DIRTY);
    /* A file with two names would move back and forth: it stays. */
    int moved = archived && x->new &&h.key[0] && strcmp(h.key, key) && h.attr.nlink == 1 &&
                !(h.state & (STRIA_HSM_RELEASED | STRIA_HSM_LOST));
    if (!((fresh && x->new) || (dirty && x->changed) || moved) ||
        (h.state & STRIA_HSM_LOST && !dirty))
        return 0;
    int64_t last = h.attr.mtime_ns > h.attr.ctime_ns ? h.attr.mtime_ns : h.attr.ctime_ns;
    if (x->now_ns - last < x->quiet_ns) {
        x->st->waiting++; /* still being written, or just closed */
        return 0;
    }
    rc = hsm_archive(x->fs, ino, x->r->dir, &x->r->t, key, moved, NULL, NULL, why, sizeof(why));
    if (rc == 0) {
        x->st->files++;
        x->st->bytes += h.attr.size;
        progress(x->p, x->st->bytes);
    } else if (rc == -EBUSY) {
        x->st->waiting++; /* changed during the copy: the next pass */
    } else if (rc != -ENOENT) {
        x->st->failed++;
        note(x->p, "export of %s to s3://%s/%s failed: %s", path, x->r->bucket, key,
             why[0] ? why : strerror(-rc));
    }
    if (rc == 0 && moved && x->deleted) {
        rc = stria_s3_delete(x->fs, &x->r->t, h.key, h.etag, why, sizeof(why));
        if (rc == 0)
            x->st->deleted++;
        else if (rc == -ESTALE)
            note(x->p, "s3://%s/%s was rewritten in S3 since it was archived: left alone",
                 x->r->bucket, h.key);
        else {
            x->st->failed++;
            note(x->p, "%s moved to s3://%s/%s; its old object %s stays: %s", path, x->r->bucket,
                 key, h.key, why[0] ? why : strerror(-rc));
        }
    }
    return 0;
}

/* The tombstones of r on one MDT: the objects of r's files removed here. */
struct gone {
    stria_fs_t *fs;
    const struct stria_repo *r; /* export: r's; forget: NULL */
    const struct stria_repo *v; /* forget: the repositories that keep theirs */
    size_t n;
    const struct stria_pass *p;
    struct stria_export_stats *st;
    uint32_t mdt;
    uint64_t last;           /* the last id seen */
    uint64_t run_lo, run_hi; /* forget: ids (run_lo, run_hi] to drop */
};

static int delete_one(const struct stria_hsm_gone *g, void *arg)
{
    struct gone *c = arg;
    c->last = g->id;
    if (g->repo != c->r->dir)
        return 0;
    if (stopped(c->p))
        return -EINTR;
    char why[512] = "";
    int rc = stria_s3_delete(c->fs, &c->r->t, g->key, g->etag, why, sizeof(why));
    if (rc == -ESTALE)
        note(c->p, "s3://%s/%s was rewritten in S3 since it was archived: left alone", c->r->bucket,
             g->key);
    else if (rc) {
        /* S3 out of reach, say: stop here, the tombstone stays for the
         * next pass. */
        c->st->failed++;
        note(c->p, "cannot delete s3://%s/%s (its file was removed): %s", c->r->bucket, g->key,
             why[0] ? why : strerror(-rc));
        return rc;
    } else
        c->st->deleted++;
    return stria_hsm_gone_drop(c->fs, c->mdt, g->id - 1, g->id);
}

static int walk_tombstones(struct gone *c, int (*cb)(const struct stria_hsm_gone *, void *))
{
    uint32_t nmdt = stria_mdt_count(c->fs);
    int rc = 0;
    for (c->mdt = 0; c->mdt < nmdt && rc == 0; c->mdt++) {
        int more = 1;
        c->last = c->run_lo = c->run_hi = 0;
        for (unsigned pages = 0; more && rc == 0 && pages < 100000; pages++)
            if ((rc = stria_hsm_gone_list(c->fs, c->mdt, c->last, 1000, cb, c, &more)) == 0 &&
                !more && c->run_hi > c->run_lo)
                rc = stria_hsm_gone_drop(c->fs, c->mdt, c->run_lo, c->run_hi);
    }
    return rc;
}

int stria_repo_export(stria_fs_t *fs, const struct stria_repo *r, int64_t quiet_s,
                      const struct stria_pass *p, struct stria_export_stats *st)
{
    memset(st, 0, sizeof(*st));
    struct exp_pass x = {.fs = fs,
                         .r = r,
                         .p = p,
                         .st = st,
                         .new = stria_repo_has(r, "export_policy", "new"),
                         .changed = stria_repo_has(r, "export_policy", "changed"),
                         .deleted = stria_repo_has(r, "export_policy", "deleted"),
                         .quiet_ns = quiet_s * 1000000000,
                         .now_ns = (int64_t)util_now_real_ns()};
    int rc = 0;
    if (x.new || x.changed)
        rc = walk(fs, r->path, export_one, &x, p);
    if (rc == 0 && x.deleted) {
        struct gone c = {.fs = fs, .r = r, .p = p, .st = st};
        rc = walk_tombstones(&c, delete_one);
        if (rc == -EPERM)
            note(p, "the objects of removed files are deleted only by root (tombstones)");
    }
    return rc;
}

/* Drop what no repository's export policy will delete: runs of such ids
 * in one request each. */
static int forget_one(const struct stria_hsm_gone *g, void *arg)
{
    struct gone *c = arg;
    const struct stria_repo *keep = NULL;
    for (size_t i = 0; i < c->n && !keep; i++)
        if (c->v[i].dir == g->repo && stria_repo_has(&c->v[i], "export_policy", "deleted"))
            keep = &c->v[i];
    int rc = 0;
    if (keep && c->run_hi > c->run_lo)
        rc = stria_hsm_gone_drop(c->fs, c->mdt, c->run_lo, c->run_hi);
    if (keep)
        c->run_lo = c->run_hi = g->id;
    else
        c->run_hi = g->id;
    c->last = g->id;
    return rc;
}

int stria_repo_forget(stria_fs_t *fs, const struct stria_repo *v, size_t n)
{
    struct gone c = {.fs = fs, .v = v, .n = n};
    return walk_tombstones(&c, forget_one);
}

/* ---- tiering ---- */

struct cand {
    uint64_t ino, size;
    int64_t atime_ns;
};

struct tier {
    stria_fs_t *fs;
    const struct stria_repo *r;
    struct stria_tier_stats *st;
    int64_t limit_ns; /* release what was last read before this; 0: none */
    int full;         /* keep the rest as candidates, by last read */
    struct cand *v;
    size_t n, cap;
};

static int tier_one(const char *path, uint64_t ino, void *arg)
{
    (void)path;
    struct tier *t = arg;
    struct stria_hsm h;
    if (stria_hsm_get(t->fs, ino, &h) || h.repo != t->r->dir || !(h.state & STRIA_HSM_ARCHIVED) ||
        (h.state & (STRIA_HSM_DIRTY | STRIA_HSM_RELEASED | STRIA_HSM_LOST)))
        return 0;
    if (t->limit_ns && h.attr.atime_ns < t->limit_ns) {
        if (stria_hsm_release(t->fs, ino) == 0) {
            t->st->files++;
            t->st->bytes += h.attr.size;
        }
        return 0;
    }
    if (!t->full)
        return 0;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        struct cand *nv = realloc(t->v, cap * sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        t->v = nv;
        t->cap = cap;
    }
    t->v[t->n++] = (struct cand){ino, h.attr.size, h.attr.atime_ns};
    return 0;
}

static int by_atime(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    return x->atime_ns < y->atime_ns ? -1 : x->atime_ns > y->atime_ns;
}

/* How many bytes the OSTs lack of pct percent free (0: none), from fresh
 * figures rather than stria_statfs's kept ones: an answer from before the
 * last pass would have this one release again what that pass freed. */
static uint64_t lacking(stria_fs_t *fs, int pct)
{
    struct statvfs sv;
    if (cl_statfs(fs, &sv, 0) || !sv.f_blocks)
        return 0;
    uint64_t want = sv.f_blocks / 100 * (uint64_t)pct, have = sv.f_bavail;
    return have < want ? (want - have) * sv.f_frsize : 0;
}

int stria_repo_tier(stria_fs_t *fs, const struct stria_repo *r, int64_t release_after_s,
                    int keep_free_pct, const struct stria_pass *p, struct stria_tier_stats *st)
{
    memset(st, 0, sizeof(*st));
    struct tier t = {.fs = fs, .r = r, .st = st};
    if (release_after_s > 0)
        t.limit_ns = (int64_t)util_now_real_ns() - release_after_s * 1000000000;
    /* Only the files of a full file system are kept as candidates. */
    /* Free space is what the storage hosts last reported: released
     * bytes are counted here rather than waited for. */
    uint64_t need = keep_free_pct > 0 ? lacking(fs, keep_free_pct) : 0;
    t.full = need > 0;
    if (!t.limit_ns && !t.full)
        return 0;
    int rc = walk(fs, r->path, tier_one, &t, p);
    if (rc == 0 && t.full && t.n) {
        qsort(t.v, t.n, sizeof(*t.v), by_atime); /* least recently read first */
        for (size_t i = 0; i < t.n && st->bytes < need; i++) {
            if (stopped(p)) {
                rc = -EINTR;
                break;
            }
            if (stria_hsm_release(fs, t.v[i].ino) == 0) {
                st->files++;
                st->bytes += t.v[i].size;
            }
        }
    }
    free(t.v);
    return rc;
}
