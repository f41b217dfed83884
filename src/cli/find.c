/*
 * stria find: select files as `lfs find` does, so that an operator can
 * drain an OST (`stria find /x -ost 3 | stria migrate ...`) or list what a
 * policy would touch.
 *
 *   stria find PATH... [-type T] [-name GLOB] [-size [+-]N[KMGT]]
 *              [-mtime [+-]DAYS] [-stripe-count [+-]N] [-stripe-size [+-]N]
 *              [-component-count [+-]N] [-ost N[,N...]] [-pool POOL]
 *              [-layout mdt|raid0|released[,...]] [-maxdepth N] [-print0]
 *
 * Directories are read with their entries' attributes in one round trip
 * per batch (READDIR plus); a layout is asked for only when a layout test
 * is given and the other tests passed. Tests are ANDed, as find's. Sizes
 * round up to their unit as find's -size does (-size 1M: up to 1 MiB); a
 * number without a unit is bytes. -mtime counts whole days ago, as find.
 * Layout tests read a composite file's last instantiated component, as
 * getstripe -c does; -ost matches a file with an object on any OST given.
 * -layout (-L) matches a file with any of the patterns given, as lfs
 * find's: a component kept by its MDT (mdt, Data-on-MDT), one on OSTs
 * (raid0), or its data in S3 only (released, from its HSM state).
 */
#include "args.h"
#include "commands.h"
#include "connect.h"
#include "paths.h"

#include "../common/util.h"

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* A numeric test: -1 less than, 0 equal, 1 more than n. */
struct num {
    bool on;
    int cmp;
    uint64_t n, unit;
};

struct find {
    stria_fs_t *fs;
    char type;        /* 0: any */
    const char *name; /* glob on the last component, or NULL */
    struct num size, mtime, count, ssize, comps;
    uint32_t osts[64];
    unsigned nost;
    const char *pool; /* a component in this pool, or NULL */
    unsigned layouts; /* -layout: FIND_L_* bits, any of them (0: no test) */
    long maxdepth;    /* -1: none */
    bool print0;
    int64_t now_s;
    int ret;
};

/* -layout's patterns, lfs find's words. */
#define FIND_L_MDT      1u
#define FIND_L_RAID0    2u
#define FIND_L_RELEASED 4u

static int parse_layouts(const char *cmd, const char *arg, unsigned *out)
{
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", arg);
    char *save = NULL;
    *out = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "mdt") || !strcmp(t, "dom"))
            *out |= FIND_L_MDT;
        else if (!strcmp(t, "raid0"))
            *out |= FIND_L_RAID0;
        else if (!strcmp(t, "released"))
            *out |= FIND_L_RELEASED;
        else
            return cli_usage_error(cmd, "-layout wants mdt, raid0 or released, not '%s'", t);
    }
    if (!*out)
        return cli_usage_error(cmd, "-layout wants mdt, raid0 or released");
    return 0;
}

static int parse_num(const char *cmd, const char *opt, const char *arg, bool units, struct num *out)
{
    const char *digits = arg + (*arg == '+' || *arg == '-');
    out->on = true;
    out->cmp = *arg == '+' ? 1 : *arg == '-' ? -1 : 0;
    out->unit = 1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(digits, &end, 10);
    bool ok = !errno && end != digits && *digits >= '0' && *digits <= '9';
    if (ok && units && *end) {
        /* c bytes, K, M, G, T: powers of 1024, as lfs find's. */
        static const char u[] = "cKMGT";
        const char *k = strchr(u, *end == 'k' ? 'K' : *end);
        ok = k && end[1] == 0;
        for (const char *p = u; ok && p < k; p++)
            out->unit *= 1024;
        end++;
    }
    if (!ok || *end)
        return cli_usage_error(cmd, "%s wants [+-]N%s, not '%s'", opt, units ? "[KMGT]" : "", arg);
    out->n = v;
    return 0;
}

/* find's comparison of value v (in units of t->unit, rounded up). */
static bool num_ok(const struct num *t, uint64_t v)
{
    if (!t->on)
        return true;
    uint64_t x = t->unit > 1 ? (v + t->unit - 1) / t->unit : v;
    return t->cmp < 0 ? x < t->n : t->cmp > 0 ? x > t->n : x == t->n;
}

static char type_of(uint32_t mode)
{
    return S_ISREG(mode)    ? 'f'
           : S_ISDIR(mode)  ? 'd'
           : S_ISLNK(mode)  ? 'l'
           : S_ISFIFO(mode) ? 'p'
           : S_ISSOCK(mode) ? 's'
           : S_ISCHR(mode)  ? 'c'
           : S_ISBLK(mode)  ? 'b'
                            : '?';
}

static bool layout_tests(const struct find *f)
{
    return f->count.on || f->ssize.on || f->comps.on || f->nost || f->pool ||
           (f->layouts & (FIND_L_MDT | FIND_L_RAID0));
}

/* -layout on file ino of layout l: any pattern asked for. */
static bool pattern_ok(struct find *f, uint64_t ino, const struct stria_layout *l, uint32_t n)
{
    if (!f->layouts)
        return true;
    for (uint32_t i = 0; i < n; i++) {
        if ((f->layouts & FIND_L_MDT) && l->comp[i].on_mdt)
            return true;
        if ((f->layouts & FIND_L_RAID0) && !l->comp[i].on_mdt)
            return true;
    }
    if (!(f->layouts & FIND_L_RELEASED))
        return false;
    struct stria_hsm *h = malloc(sizeof(*h));
    bool released = h && stria_hsm_get(f->fs, ino, h) == 0 && (h->state & STRIA_HSM_RELEASED);
    free(h);
    return released;
}

/* The tests that need the layout, on file ino. */
static bool layout_ok(struct find *f, uint64_t ino, bool dir)
{
    if (!layout_tests(f) && !f->layouts)
        return true;
    if (dir)
        return false; /* lfs find tests files' layouts */
    if (!layout_tests(f))
        return pattern_ok(f, ino, NULL, 0); /* released only: no layout needed */
    struct stria_layout *l = malloc(sizeof(*l));
    if (!l)
        return false;
    bool ok = stria_getstripe_ino(f->fs, ino, l) == 0 && !l->is_dir;
    uint32_t n = ok ? (l->ncomp < STRIA_MAX_COMPONENTS ? l->ncomp : STRIA_MAX_COMPONENTS) : 0;
    uint32_t last = 0;
    for (uint32_t i = 0; i < n; i++)
        if (l->comp[i].init)
            last = i;
    if (ok && n) {
        ok = num_ok(&f->comps, n) && num_ok(&f->count, l->comp[last].stripe_count) &&
             num_ok(&f->ssize, l->comp[last].stripe_size);
        bool on = f->nost == 0;
        for (uint32_t i = 0; i < n && !on; i++)
            for (uint32_t s = 0; l->comp[i].init && s < l->comp[i].stripe_count && !on; s++)
                for (unsigned k = 0; k < f->nost && !on; k++)
                    on = l->comp[i].ost[s] == f->osts[k];
        ok = ok && on;
        bool pooled = !f->pool;
        for (uint32_t i = 0; i < n && !pooled; i++)
            pooled = !strcmp(l->comp[i].pool, f->pool);
        ok = ok && pooled && pattern_ok(f, ino, l, n);
    }
    free(l);
    return ok && n;
}

static void visit(struct find *f, const char *path, const char *name, const struct stria_attr *a)
{
    if (f->type && type_of(a->mode) != f->type)
        return;
    if (f->name && fnmatch(f->name, name, 0) != 0)
        return;
    if (!num_ok(&f->size, a->size))
        return;
    if (f->mtime.on) {
        int64_t days = (f->now_s - a->mtime_ns / 1000000000) / 86400;
        if (!num_ok(&f->mtime, days < 0 ? 0 : (uint64_t)days))
            return;
    }
    if (!layout_ok(f, a->ino, S_ISDIR(a->mode)))
        return;
    fputs(path, stdout);
    putchar(f->print0 ? '\0' : '\n');
}

/* Walk directory ino (path) at depth. */
static void walk(struct find *f, uint64_t ino, const char *path, long depth)
{
    if (f->maxdepth >= 0 && depth >= f->maxdepth)
        return;
    stria_dir_t *d;
    int rc = stria_opendir_ino(f->fs, ino, &d);
    if (rc) {
        fprintf(stderr, "stria find: %s: %s\n", path, strerror(-rc));
        f->ret = CLI_FAIL;
        return;
    }
    struct stria_direntplus e;
    uint64_t cookie = 0;
    while ((rc = stria_readdir_at(d, cookie, 1, &e)) == 1) {
        cookie = e.next_cookie;
        char child[CLI_PATH_MAX];
        if ((size_t)snprintf(child, sizeof(child), "%s%s%s", path,
                             path[strlen(path) - 1] == '/' ? "" : "/", e.d.name) >= sizeof(child)) {
            fprintf(stderr, "stria find: %s/%s: name too long\n", path, e.d.name);
            f->ret = CLI_FAIL;
            continue;
        }
        struct stria_attr a = e.attr;
        if (a.nlink == 0 && stria_lookup_at(f->fs, ino, e.d.name, &a) != 0)
            continue; /* gone meanwhile */
        visit(f, child, e.d.name, &a);
        if (S_ISDIR(a.mode))
            walk(f, a.ino, child, depth + 1);
    }
    if (rc < 0) {
        fprintf(stderr, "stria find: %s: %s\n", path, strerror(-rc));
        f->ret = CLI_FAIL;
    }
    stria_closedir(d);
}

/* -ost's list: indexes, or OST names as lfs takes them (OST000a,
 * fs-OST000a_UUID: the index in hex). */
static int parse_osts(const char *cmd, const char *arg, struct find *f)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", arg);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const char *p = strstr(t, "OST");
        char *end;
        long v = p ? strtol(p + 3, &end, 16) : strtol(t, &end, 10);
        bool ok = p ? end == p + 7 && (!*end || !strcmp(end, "_UUID")) : *t && !*end;
        if (!ok || v < 0 || v > 65535 || f->nost == sizeof(f->osts) / sizeof(f->osts[0]))
            return cli_usage_error(cmd, "-ost wants OST indexes (3, OST0003), not '%s'", t);
        f->osts[f->nost++] = (uint32_t)v;
    }
    return 0;
}

int cmd_find(int argc, char **argv)
{
    struct find f = {.maxdepth = -1, .now_s = (int64_t)time(NULL), .ret = CLI_OK};
    const char *cmd = argv[0];
    int npaths = 0;
    /* Paths first, then the tests (as find and lfs find take them). */
    while (1 + npaths < argc && argv[1 + npaths][0] != '-')
        npaths++;
    if (!npaths)
        return cli_usage_error(cmd, "missing PATH");
    for (int i = 1 + npaths; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        while (*o == '-')
            o++;
        int rc = 0;
        bool takes = true;
        if (!strcmp(o, "print0") || !strcmp(o, "0")) {
            f.print0 = true;
            takes = false;
        } else if (!strcmp(o, "print")) {
            takes = false;
        } else if (!v) {
            return cli_usage_error(cmd, "%s needs a value", argv[i]);
        } else if (!strcmp(o, "type") || !strcmp(o, "t")) {
            if (strlen(v) != 1 || !strchr("fdlpscb", v[0]))
                return cli_usage_error(cmd, "-type wants one of f d l p s c b");
            f.type = v[0];
        } else if (!strcmp(o, "name") || !strcmp(o, "n")) {
            f.name = v;
        } else if (!strcmp(o, "size") || !strcmp(o, "s")) {
            rc = parse_num(cmd, argv[i], v, true, &f.size);
        } else if (!strcmp(o, "mtime") || !strcmp(o, "M")) {
            rc = parse_num(cmd, argv[i], v, false, &f.mtime);
        } else if (!strcmp(o, "stripe-count") || !strcmp(o, "c")) {
            rc = parse_num(cmd, argv[i], v, false, &f.count);
        } else if (!strcmp(o, "stripe-size") || !strcmp(o, "S")) {
            rc = parse_num(cmd, argv[i], v, true, &f.ssize);
        } else if (!strcmp(o, "component-count")) {
            rc = parse_num(cmd, argv[i], v, false, &f.comps);
        } else if (!strcmp(o, "ost") || !strcmp(o, "O") || !strcmp(o, "obd")) {
            rc = parse_osts(cmd, v, &f);
        } else if (!strcmp(o, "pool")) {
            /* FSNAME.POOL or POOL, as lfs find --pool */
            const char *dot = strchr(v, '.');
            f.pool = dot ? dot + 1 : v;
        } else if (!strcmp(o, "layout") || !strcmp(o, "L")) {
            rc = parse_layouts(cmd, v, &f.layouts);
        } else if (!strcmp(o, "maxdepth")) {
            int64_t d;
            if (util_parse_i64(v, &d) < 0 || d < 0)
                return cli_usage_error(cmd, "-maxdepth wants a number");
            f.maxdepth = d;
        } else {
            return cli_usage_error(cmd, "unknown test '%s'", argv[i]);
        }
        if (rc)
            return rc;
        if (takes)
            i++;
    }
    if (cli_connect(&f.fs) < 0)
        return CLI_FAIL;
    for (int i = 1; i <= npaths; i++) {
        char path[CLI_PATH_MAX];
        if (cli_stria_path(cmd, argv[i], path, sizeof(path)) < 0) {
            f.ret = CLI_FAIL;
            continue;
        }
        struct stat st;
        int rc = stria_lstat(f.fs, path, &st);
        if (rc) {
            fprintf(stderr, "stria find: %s: %s\n", argv[i], strerror(-rc));
            f.ret = CLI_FAIL;
            continue;
        }
        struct stria_attr a = {.ino = st.st_ino,
                               .mode = st.st_mode,
                               .nlink = (uint32_t)st.st_nlink,
                               .size = (uint64_t)st.st_size,
                               .mtime_ns =
                                   (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec};
        /* -name looks at the last component, trailing slashes aside. */
        char name[CLI_PATH_MAX];
        snprintf(name, sizeof(name), "%s", argv[i]);
        for (size_t n = strlen(name); n > 1 && name[n - 1] == '/'; n--)
            name[n - 1] = 0;
        const char *base = strrchr(name, '/');
        visit(&f, argv[i], base && base[1] ? base + 1 : name, &a);
        if (S_ISDIR(st.st_mode))
            walk(&f, (uint64_t)st.st_ino, argv[i], 0);
    }
    stria_disconnect(f.fs);
    return f.ret;
}
