/*
 * Which MDT a namespace request goes to (DESIGN §4).
 *
 * A request about an inode goes to the MDT in the inode number's top bits.
 * A request about a name in a directory goes to the MDT that holds the
 * name: for a plain directory the directory's own, for a striped one the
 * shard that hash(name) picks. Stripes never change once a directory is
 * made, so the client keeps every stripe it has seen in a small table.
 *
 * A request with a path of several components goes to the MDT of the
 * first; that MDT walks as far as the names are its own and answers
 * EREMOTE where they are not. The client then walks the rest itself, one
 * LOOKUP per component, and sends the last component from its directory.
 *
 * Built on the inode calls (inode.h), never below them: a walk asks GETATTR
 * and READLINK like any caller, through the metadata cache.
 */
#include "route.h"

#include "../common/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_SYMLINKS 40
#define WALK_DEPTH   256

static bool one_mdt(stria_fs_t *fs)
{
    return __atomic_load_n(&fs->mdt_count, __ATOMIC_RELAXED) <= 1;
}

int cl_dir_stripe(stria_fs_t *fs, uint64_t dir, uint64_t *dstripe)
{
    if (cl_known_stripe(fs, dir, dstripe))
        return 0;
    struct proto_attr a;
    int rc = cl_getattr(fs, dir, &a);
    if (rc)
        return rc;
    if (!S_ISDIR(a.mode))
        return -ENOTDIR;
    cl_learn(fs, &a);
    *dstripe = a.dstripe;
    return 0;
}

uint32_t cl_name_mdt(stria_fs_t *fs, uint64_t dir, const char *name, size_t len)
{
    uint64_t ds = 0;
    if (one_mdt(fs) || (len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)) ||
        cl_dir_stripe(fs, dir, &ds))
        return proto_ino_mdt(dir); /* an error shows when the request is sent */
    return proto_ds_name_mdt(ds, proto_ino_mdt(dir), name, len);
}

/* ---- the prefix cache ----
 * A path that crosses MDTs is walked here one LOOKUP at a time; the
 * directory it led to is kept for PFX_TTL_NS, so the next request on a
 * path through it goes straight to the right MDT, as NFS clients cache
 * lookups for a short while. A request that a cached route sent astray
 * (the directory went, ENOENT or ENOTDIR) is walked afresh. */
#define PFX_TTL_NS 1000000000ll

static struct cl_pfx *pfx_slot(stria_fs_t *fs, uint64_t start, const char *dir, size_t len)
{
    uint64_t h = util_hash64(dir, len) ^ start * 0x9e3779b97f4a7c15ull;
    return &fs->pfx[h % CL_PFX_SLOTS];
}

static bool pfx_get(stria_fs_t *fs, uint64_t start, const char *dir, size_t len, uint64_t *out)
{
    if (len >= CL_PFX_PATH)
        return false;
    int64_t now = (int64_t)util_now_mono_ns();
    pthread_mutex_lock(&fs->ds_lock);
    struct cl_pfx *p = pfx_slot(fs, start, dir, len);
    bool hit = p->start == start && p->expires_ns > now && !strncmp(p->path, dir, len) &&
               p->path[len] == '\0';
    *out = p->dir;
    pthread_mutex_unlock(&fs->ds_lock);
    return hit;
}

static void pfx_put(stria_fs_t *fs, uint64_t start, const char *dir, size_t len, uint64_t ino)
{
    if (len >= CL_PFX_PATH)
        return;
    pthread_mutex_lock(&fs->ds_lock);
    struct cl_pfx *p = pfx_slot(fs, start, dir, len);
    p->start = start;
    p->dir = ino;
    p->expires_ns = (int64_t)util_now_mono_ns() + PFX_TTL_NS;
    memcpy(p->path, dir, len);
    p->path[len] = '\0';
    pthread_mutex_unlock(&fs->ds_lock);
}

/* Split path (from start) into its directory part and its last
 * component: *start moves to the root for an absolute path; false when
 * there is no directory part. */
/* Past the leading '/' of an absolute path, which starts at the root. */
static const char *from_root(const char *path, uint64_t *start)
{
    if (*path == '/') {
        *start = PROTO_ROOT_INO;
        while (*path == '/')
            path++;
    }
    return path;
}

/* The MDT of the first component of p in directory dir (dir's own for "",
 * "." and ".."). */
static uint32_t first_mdt(stria_fs_t *fs, uint64_t dir, const char *p)
{
    size_t len = strcspn(p, "/");
    return len ? cl_name_mdt(fs, dir, p, len) : proto_ino_mdt(dir);
}

static bool split_path(const char *path, uint64_t *start, const char **dir, size_t *dirlen,
                       const char **last)
{
    const char *p = from_root(path, start);
    size_t n = strlen(p);
    while (n && p[n - 1] == '/')
        n--; /* the last component may end in '/' */
    const char *slash = memrchr(p, '/', n);
    if (!slash)
        return false;
    *dir = p;
    *dirlen = (size_t)(slash - p);
    *last = slash + 1;
    return true;
}

void cl_route(stria_fs_t *fs, uint64_t parent, const char *path, struct cl_route *rt)
{
    rt->parent = rt->from = parent;
    rt->path = rt->whole = path;
    rt->cached = false;
    rt->tries = 0;
    if (one_mdt(fs)) {
        rt->mdt = proto_ino_mdt(parent);
        return;
    }
    uint64_t start = parent, dir;
    const char *dpath, *last;
    size_t dlen;
    if (split_path(path, &start, &dpath, &dlen, &last) && pfx_get(fs, start, dpath, dlen, &dir)) {
        rt->parent = dir;
        rt->path = last;
        rt->cached = true;
        rt->mdt = first_mdt(fs, dir, last);
        return;
    }
    start = parent;
    const char *p = from_root(path, &start);
    rt->mdt = first_mdt(fs, start, p);
}

bool cl_route_again(stria_fs_t *fs, struct cl_route *rt, int *rc)
{
    /* Walk after the MDT's first EREMOTE, or when a cached route led astray. */
    bool astray = rt->cached && (*rc == -ENOENT || *rc == -ENOTDIR || *rc == -EREMOTE);
    if (rt->tries >= 2 || !(astray || (*rc == -EREMOTE && rt->tries == 0)))
        return false;
    rt->tries++;
    int r = cl_reroute(fs, rt);
    if (r) {
        *rc = r;
        return false;
    }
    return true;
}

/* ---- walking here ---- */

/* LOOKUP of one name (no symlink followed), with a remote entry's
 * attributes asked from its own MDT. */
static int lookup_one(stria_fs_t *fs, uint64_t dir, const char *name, struct proto_attr *out)
{
    struct proto_lookup_req q = {.parent = dir, .path = proto_str_c(name)};
    struct proto_lookup_rep r;
    cl_cred(&q.cred);
    bool remote = false;
    int rc = MDT_CALL(fs, cl_name_mdt(fs, dir, name, strlen(name)), lookup, &q, &r, *out = r.attr;
                      remote = r.remote);
    if (rc == 0 && remote)
        rc = cl_getattr(fs, out->ino, out);
    if (rc == 0)
        cl_learn(fs, out);
    return rc;
}

struct walker {
    stria_fs_t *fs;
    uint64_t stack[WALK_DEPTH]; /* the directories walked through, for ".." */
    int depth;
    int links;
    struct proto_attr cur;
};

static int walk_start(struct walker *w, uint64_t start)
{
    w->depth = 0;
    return cl_getattr(w->fs, start, &w->cur);
}

/* Step into component name of the current directory; follow a symlink
 * (splicing its target in front of rest) if it is not the last or follow. */
static int walk_step(struct walker *w, const char *name, bool last, bool follow, char *rest,
                     size_t restcap, bool *restarted)
{
    *restarted = false;
    if (!S_ISDIR(w->cur.mode))
        return -ENOTDIR;
    if (!strcmp(name, "."))
        return 0;
    struct proto_attr a;
    int rc;
    if (!strcmp(name, "..")) {
        if (w->depth > 0)
            rc = cl_getattr(w->fs, w->stack[--w->depth], &a);
        else
            rc = lookup_one(w->fs, w->cur.ino, "..", &a);
        if (rc == 0)
            w->cur = a;
        return rc;
    }
    if ((rc = lookup_one(w->fs, w->cur.ino, name, &a)))
        return rc;
    if (S_ISLNK(a.mode) && (!last || follow)) {
        if (w->links-- <= 0)
            return -ELOOP;
        char target[PROTO_MAX_STR + 1];
        ssize_t n = cl_readlink(w->fs, a.ino, target, sizeof(target) - 1);
        if (n < 0)
            return (int)n;
        target[n] = '\0';
        size_t rl = strlen(rest);
        if ((size_t)n + 1 + rl + 1 > restcap)
            return -ENAMETOOLONG;
        memmove(rest + n + 1, rest, rl + 1);
        memcpy(rest, target, (size_t)n);
        rest[n] = rl ? '/' : '\0';
        if (target[0] == '/' && (rc = walk_start(w, PROTO_ROOT_INO)))
            return rc;
        *restarted = true;
        return 0;
    }
    if (w->depth == WALK_DEPTH)
        memmove(w->stack, w->stack + 1, sizeof(w->stack) - sizeof(w->stack[0]));
    else
        w->depth++;
    w->stack[w->depth - 1] = w->cur.ino;
    w->cur = a;
    return 0;
}

/* Walk path from start: every component, or all but the last (stop_last:
 * the last one is copied into last). */
static int walk(stria_fs_t *fs, uint64_t start, const char *path, bool follow, bool stop_last,
                struct walker *w, char *last, size_t lastcap)
{
    char buf[2 * PROTO_MAX_STR + 2];
    if (strlen(path) > PROTO_MAX_STR)
        return -ENAMETOOLONG;
    snprintf(buf, sizeof(buf), "%s", path);
    w->fs = fs;
    w->links = MAX_SYMLINKS;
    int rc = walk_start(w, buf[0] == '/' ? PROTO_ROOT_INO : start);
    if (last)
        last[0] = '\0';
    char *p = buf;
    while (rc == 0) {
        while (*p == '/')
            p++;
        if (!*p)
            return 0;
        size_t len = strcspn(p, "/");
        char name[PROTO_MAX_NAME + 1];
        if (len > PROTO_MAX_NAME)
            return -ENAMETOOLONG;
        memcpy(name, p, len);
        name[len] = '\0';
        char *next = p + len;
        bool trailing = *next == '/';
        while (*next == '/')
            next++;
        bool is_last = *next == '\0';
        if (is_last && stop_last) {
            snprintf(last, lastcap, "%s%s", name, trailing ? "/" : "");
            return 0;
        }
        /* The rest of the path moves to the front, so a symlink's target
         * can be put before it. */
        memmove(buf, next, strlen(next) + 1);
        p = buf;
        bool restarted;
        rc = walk_step(w, name, is_last, follow || trailing, buf, sizeof(buf), &restarted);
    }
    return rc;
}

int cl_resolve(stria_fs_t *fs, uint64_t start, const char *path, bool follow,
               struct proto_attr *out)
{
    struct walker *w = malloc(sizeof(*w));
    if (!w)
        return -ENOMEM;
    int rc = walk(fs, start, path, follow, false, w, NULL, 0);
    if (rc == 0)
        *out = w->cur;
    free(w);
    return rc;
}

int cl_reroute(stria_fs_t *fs, struct cl_route *rt)
{
    struct walker *w = malloc(sizeof(*w));
    if (!w)
        return -ENOMEM;
    rt->cached = false;
    int rc = walk(fs, rt->from, rt->whole, false, true, w, rt->last, sizeof(rt->last));
    if (rc == 0 && !S_ISDIR(w->cur.mode))
        rc = -ENOTDIR;
    if (rc == 0) {
        rt->parent = w->cur.ino;
        rt->path = rt->last;
        rt->mdt = first_mdt(fs, rt->parent, rt->last);
        uint64_t start = rt->from;
        const char *dpath, *last;
        size_t dlen;
        if (split_path(rt->whole, &start, &dpath, &dlen, &last))
            pfx_put(fs, start, dpath, dlen, rt->parent);
    }
    free(w);
    return rc;
}

/* ---- READDIR over shards ---- */

/* One shard's batch: what a READDIR from cookie `from` returned, and
 * where the merge stands in it. */
struct shard_batch {
    uint8_t *buf;
    struct cl_dirbatch b;
    uint64_t from;   /* the cookie it was asked from */
    uint64_t last;   /* its last entry's cookie (from when empty) */
    bool filled;     /* buf holds a batch */
    uint32_t pos;    /* next entry's offset */
    uint64_t cookie; /* its cookie (next_cookie - 1) */
    uint32_t elen;   /* its length */
    bool have;       /* pos holds an entry */
};

/* Each shard's batch, kept between the batches of one open directory. */
struct cl_shards {
    uint64_t ino, ds;
    bool plus;
    uint32_t n, cap;
    struct shard_batch s[];
};

void cl_shards_free(struct cl_shards *st)
{
    if (!st)
        return;
    for (uint32_t k = 0; k < st->n; k++)
        free(st->s[k].buf);
    free(st);
}

static void shard_next(struct shard_batch *s, bool plus)
{
    s->have = false;
    if (s->pos >= s->b.len)
        return;
    struct proto_dec d;
    proto_dec_init(&d, s->buf + s->pos, s->b.len - s->pos);
    struct proto_dirent de;
    proto_get_dirent(&d, &de);
    if (plus) {
        struct proto_attr a;
        uint8_t xabsent;
        proto_get_dirplus(&d, &a, &xabsent);
    }
    if (d.err)
        return;
    s->cookie = de.next_cookie - 1;
    s->elen = (uint32_t)d.off;
    s->have = true;
}

/* Position s at its first entry at or past cookie; whether the batch
 * holds every entry of its shard from cookie to its end (or the shard's). */
static bool shard_seek(struct shard_batch *s, uint64_t cookie, bool plus)
{
    if (!s->filled || s->from > cookie || (!s->b.eof && s->last < cookie))
        return false;
    s->pos = 0;
    for (shard_next(s, plus); s->have && s->cookie < cookie; shard_next(s, plus))
        s->pos += s->elen;
    return true;
}

/* Ask shard k of ino for a batch from cookie into s. */
static int shard_fill(stria_fs_t *fs, uint64_t ino, uint64_t ds, uint32_t k, uint64_t cookie,
                      bool plus, uint32_t cap, struct shard_batch *s)
{
    s->filled = false;
    struct proto_readdir_req q = {.ino = ino, .cookie = cookie, .max_bytes = cap, .plus = plus};
    struct proto_readdir_rep r;
    cl_cred(&q.cred);
    int rc = MDT_CALL(fs, proto_ds_shard_mdt(ds, k), readdir, &q, &r, ({
                          uint32_t len = MIN(r.entries.len, cap);
                          memcpy(s->buf, r.entries.p, len);
                          s->b.len = len;
                          s->b.count = r.count;
                          s->b.eof = r.eof;
                      }));
    if (rc)
        return rc;
    s->from = cookie;
    s->last = cookie;
    s->pos = 0;
    for (shard_next(s, plus); s->have; shard_next(s, plus)) {
        s->last = s->cookie;
        s->pos += s->elen;
    }
    s->pos = 0;
    shard_next(s, plus);
    s->filled = true;
    return 0;
}

int cl_readdir_striped(stria_fs_t *fs, uint64_t ino, uint64_t ds, uint64_t cookie, bool plus,
                       uint8_t *buf, uint32_t cap, struct cl_dirbatch *out, struct cl_shards **keep)
{
    uint32_t n = proto_ds_count(ds);
    struct cl_shards *st = keep ? *keep : NULL;
    if (st && (st->ino != ino || st->ds != ds || st->plus != plus || st->cap != cap)) {
        cl_shards_free(st);
        st = *keep = NULL;
    }
    if (!st) {
        st = calloc(1, sizeof(*st) + n * sizeof(st->s[0]));
        if (!st)
            return -ENOMEM;
        *st = (struct cl_shards){.ino = ino, .ds = ds, .plus = plus, .n = n, .cap = cap};
        for (uint32_t k = 0; k < n; k++)
            if (!(st->s[k].buf = malloc(cap))) {
                cl_shards_free(st);
                return -ENOMEM;
            }
        if (keep)
            *keep = st;
    }
    struct shard_batch *s = st->s;
    int rc = 0;
    /* Everything below limit is in hand from every shard. A shard whose
     * kept batch still covers cookie is not asked again: reading a
     * directory of N shards costs a READDIR per batch, not N. */
    uint64_t limit = UINT64_MAX;
    for (uint32_t k = 0; k < n && rc == 0; k++) {
        if (!shard_seek(&s[k], cookie, plus))
            rc = shard_fill(fs, ino, ds, k, cookie, plus, cap, &s[k]);
        if (rc == 0 && !s[k].b.eof)
            limit = MIN(limit, s[k].last + 1); /* the shard's last entry bounds what is known */
    }
    memset(out, 0, sizeof(*out));
    while (rc == 0) {
        int best = -1;
        for (uint32_t k = 0; k < n; k++)
            if (s[k].have && s[k].cookie < limit && (best < 0 || s[k].cookie < s[best].cookie))
                best = (int)k;
        if (best < 0) {
            bool all_eof = true;
            for (uint32_t k = 0; k < n; k++)
                all_eof &= s[k].b.eof && !s[k].have;
            out->eof = all_eof;
            break;
        }
        struct shard_batch *b = &s[best];
        if (out->len + b->elen > cap)
            break;
        memcpy(buf + out->len, b->buf + b->pos, b->elen);
        out->len += b->elen;
        out->count++;
        b->pos += b->elen;
        shard_next(b, plus);
    }
    if (rc)
        for (uint32_t k = 0; k < n; k++)
            s[k].filled = false;
    if (!keep)
        cl_shards_free(st);
    return rc;
}
