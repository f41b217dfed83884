/*
 * stria pool: OST pools with Lustre's words. `stria pool new|add|remove|
 * destroy FSNAME.POOL [OST...]` are `lctl pool_*`, `stria pool list` is
 * `lfs pool_list`; `stria pool_new` and the like are the same commands
 * (main.c). OSTs are named as lctl takes them: FSNAME-OST0001_UUID,
 * FSNAME-OST0001, OST0001 (the index in hex), a decimal index, or ranges
 * OST[0-3], FSNAME-OST[0-10/2,12] (decimal, with a step).
 *
 * Everything is checked against the cluster (its name, OSTs and pools)
 * before the one request that makes the change, so that a mistake is
 * reported in words and nothing changes; stria-mgmtd checks again, all
 * or nothing.
 */
#include "pools.h"

#include "args.h"
#include "commands.h"
#include "connect.h"

#include "../proto/layout.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_NAME_MAX LAYOUT_POOL_MAX

/* The layout's rule for a pool's name, and no dot: FSNAME.POOL splits
 * at the first. */
static int pool_name_ok(const char *s)
{
    return layout_pool_name_ok(s, false) && !strchr(s, '.');
}

/* "FSNAME.POOL" (or "POOL" when fs_optional) into fs and pool. */
static int split(const char *cmd, const char *arg, int fs_optional, char *fs, size_t fslen,
                 char *pool, size_t plen)
{
    const char *dot = strchr(arg, '.');
    if (!dot && !fs_optional)
        return cli_usage_error(cmd, "'%s' is not FSNAME.POOL", arg);
    size_t flen = dot ? (size_t)(dot - arg) : 0;
    if (flen >= fslen || (dot && flen == 0))
        return cli_usage_error(cmd, "'%s': bad file system name", arg);
    memcpy(fs, arg, flen);
    fs[flen] = 0;
    const char *p = dot ? dot + 1 : arg;
    if (!pool_name_ok(p) || strlen(p) >= plen)
        return cli_usage_error(cmd, "'%s': a pool's name is 1 to %d of A-Z a-z 0-9 _ -", arg,
                               POOL_NAME_MAX);
    snprintf(pool, plen, "%s", p);
    return CLI_OK;
}

/* Whether fs (the name a command gave; "" none) is the cluster's. */
static int same_fs(const char *cmd, const char *given, const char *fsname)
{
    if (!given[0] || !strcmp(given, fsname))
        return CLI_OK;
    fprintf(stderr, "stria %s: file system '%s' is not this cluster's ('%s')\n", cmd, given,
            fsname);
    return CLI_FAIL;
}

static const struct stria_pool *lookup(const struct stria_pool *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].name, name))
            return &v[i];
    return NULL;
}

static int pool_has(const struct stria_pool *p, uint32_t ost)
{
    for (uint32_t i = 0; i < p->nost; i++)
        if (p->ost[i] == ost)
            return 1;
    return 0;
}

int cli_pool_find(stria_fs_t *fs, const char *cmd, const char *arg, uint32_t **osts, size_t *n)
{
    char given[64], name[POOL_NAME_MAX + 1], fsname[64];
    int rc = split(cmd, arg, 1, given, sizeof(given), name, sizeof(name));
    if (rc)
        return rc;
    struct stria_pool *v = NULL;
    size_t nv = 0;
    if ((rc = stria_cluster_info(fs, fsname, sizeof(fsname), NULL)) < 0 ||
        (rc = stria_pools(fs, &v, &nv)) < 0) {
        fprintf(stderr, "stria %s: cannot read the pools: %s\n", cmd, strerror(-rc));
        return CLI_FAIL;
    }
    if ((rc = same_fs(cmd, given, fsname))) {
        free(v);
        return rc;
    }
    const struct stria_pool *p = lookup(v, nv, name);
    if (!p) {
        fprintf(stderr, "stria %s: pool '%s.%s' does not exist (stria pool list)\n", cmd, fsname,
                name);
        free(v);
        return CLI_FAIL;
    }
    if (osts) {
        *osts = p->nost ? malloc(sizeof(uint32_t) * p->nost) : NULL;
        if (*osts)
            memcpy(*osts, p->ost, sizeof(uint32_t) * p->nost);
    }
    if (n)
        *n = p->nost;
    free(v);
    return CLI_OK;
}

/* ---- OST arguments ---- */

struct ost_list {
    uint32_t *v;
    size_t n, cap;
};

static int list_add(const char *cmd, struct ost_list *l, uint32_t idx, const char *arg)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == idx)
            return cli_usage_error(cmd, "OST%04" PRIx32 " is given twice ('%s')", idx, arg);
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        uint32_t *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return CLI_FAIL;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = idx;
    return CLI_OK;
}

/* A number of base (10 or 16) from s to end, at most max. */
static int number(const char *s, const char *end, int base, uint32_t *out)
{
    if (s == end || end - s > 10)
        return -EINVAL;
    uint64_t v = 0;
    for (; s < end; s++) {
        int d = *s >= '0' && *s <= '9'                 ? *s - '0'
                : base == 16 && *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
                : base == 16 && *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
                                                       : -1;
        if (d < 0)
            return -EINVAL;
        v = v * (unsigned)base + (unsigned)d;
        if (v > 0xffff)
            return -EINVAL;
    }
    *out = (uint32_t)v;
    return 0;
}

/* "[0-3,5,8-12/2]": decimal indices, ranges with an optional step. */
static int parse_range(const char *cmd, const char *s, const char *arg, struct ost_list *l)
{
    size_t len = strlen(s);
    if (len < 3 || s[len - 1] != ']')
        return cli_usage_error(cmd, "bad OST range '%s'", arg);
    const char *p = s + 1, *stop = s + len - 1;
    while (p < stop) {
        const char *comma = memchr(p, ',', (size_t)(stop - p));
        const char *e = comma ? comma : stop;
        const char *dash = memchr(p, '-', (size_t)(e - p));
        const char *slash = memchr(p, '/', (size_t)(e - p));
        uint32_t a, b, step = 1;
        int bad = number(p, dash ? dash : slash ? slash : e, 10, &a);
        b = a;
        if (!bad && dash)
            bad = number(dash + 1, slash ? slash : e, 10, &b);
        if (!bad && slash)
            bad = !dash || number(slash + 1, e, 10, &step) || step == 0;
        if (bad || b < a)
            return cli_usage_error(cmd, "bad OST range '%s'", arg);
        for (uint32_t i = a; i <= b; i += step) {
            int rc = list_add(cmd, l, i, arg);
            if (rc)
                return rc;
        }
        p = e + 1;
    }
    return CLI_OK;
}

/* One OST argument of fs fsname into l. */
static int parse_ost(const char *cmd, const char *fsname, const char *arg, struct ost_list *l)
{
    char buf[128];
    if (strlen(arg) >= sizeof(buf))
        return cli_usage_error(cmd, "bad OST '%.40s...'", arg);
    snprintf(buf, sizeof(buf), "%s", arg);
    uint32_t idx;
    if (!number(buf, buf + strlen(buf), 10, &idx))
        return list_add(cmd, l, idx, arg);
    char *s = buf, *ost = strstr(buf, "-OST");
    if (ost) {
        *ost = 0;
        if (strcmp(buf, fsname)) {
            fprintf(stderr, "stria %s: OST '%s' is not of file system '%s'\n", cmd, arg, fsname);
            return CLI_FAIL;
        }
        s = ost + 1;
    }
    if (strncmp(s, "OST", 3))
        return cli_usage_error(cmd, "bad OST '%s' (FSNAME-OST0001_UUID, OST0001, OST[0-3])", arg);
    s += 3;
    size_t len = strlen(s);
    if (len > 5 && !strcmp(s + len - 5, "_UUID"))
        s[len -= 5] = 0;
    if (s[0] == '[')
        return parse_range(cmd, s, arg, l);
    if (number(s, s + len, 16, &idx))
        return cli_usage_error(cmd, "bad OST '%s' (FSNAME-OST0001_UUID, OST0001, OST[0-3])", arg);
    return list_add(cmd, l, idx, arg);
}

/* ---- the subcommands ---- */

/* What the cluster has: its name, its OSTs and its pools. */
struct cluster {
    char fsname[64];
    struct stria_target *t;
    size_t nt;
    struct stria_pool *p;
    size_t np;
};

static int cluster_read(stria_fs_t *fs, const char *cmd, struct cluster *c, int targets)
{
    memset(c, 0, sizeof(*c));
    int rc = stria_cluster_info(fs, c->fsname, sizeof(c->fsname), NULL);
    if (rc == 0 && targets)
        rc = stria_targets(fs, &c->t, &c->nt);
    if (rc == 0)
        rc = stria_pools(fs, &c->p, &c->np);
    if (rc < 0)
        fprintf(stderr, "stria %s: cannot read the cluster's pools: %s\n", cmd, strerror(-rc));
    return rc < 0 ? CLI_FAIL : CLI_OK;
}

static void cluster_free(struct cluster *c)
{
    free(c->t);
    free(c->p);
}

static int ost_known(const struct cluster *c, uint32_t idx)
{
    for (size_t i = 0; i < c->nt; i++)
        if (!strcmp(c->t[i].kind, "OST") && c->t[i].index == idx)
            return 1;
    return 0;
}

/* A change refused by stria-mgmtd after the checks here passed. */
static int refused(const char *cmd, const char *fsname, const char *pool, int rc)
{
    fprintf(stderr, "stria %s: %s.%s: %s%s\n", cmd, fsname, pool, strerror(-rc),
            rc == -EPERM ? " (only root may change pools)" : "");
    return CLI_FAIL;
}

static int pool_list(stria_fs_t *fs, const char *arg)
{
    const char *cmd = "pool list";
    struct cluster c;
    if (cluster_read(fs, cmd, &c, 0))
        return CLI_FAIL;
    int rc = CLI_OK;
    if (!arg || !strchr(arg, '.')) {
        if (arg && (rc = same_fs(cmd, arg, c.fsname)))
            goto out;
        printf("Pools from %s:\n", c.fsname);
        for (size_t i = 0; i < c.np; i++)
            printf("%s.%s\n", c.fsname, c.p[i].name);
        goto out;
    }
    char given[64], name[POOL_NAME_MAX + 1];
    if ((rc = split(cmd, arg, 0, given, sizeof(given), name, sizeof(name))) ||
        (rc = same_fs(cmd, given, c.fsname)))
        goto out;
    const struct stria_pool *p = lookup(c.p, c.np, name);
    if (!p) {
        fprintf(stderr, "stria %s: pool '%s.%s' does not exist\n", cmd, c.fsname, name);
        rc = CLI_FAIL;
        goto out;
    }
    printf("Pool: %s.%s\n", c.fsname, p->name);
    for (uint32_t i = 0; i < p->nost; i++)
        printf("%s-OST%04" PRIx32 "_UUID\n", c.fsname, p->ost[i]);
out:
    cluster_free(&c);
    return rc;
}

/* new, destroy, add, remove of FSNAME.POOL (argv[0]) with OSTs argv[1..]. */
static int pool_change(stria_fs_t *fs, const char *sub, int argc, char **argv)
{
    char cmd[32], given[64], name[POOL_NAME_MAX + 1];
    snprintf(cmd, sizeof(cmd), "pool %s", sub);
    int members = !strcmp(sub, "add") || !strcmp(sub, "remove");
    if (argc < 1)
        return cli_usage_error("pool", "pool %s: missing FSNAME.POOL", sub);
    if (members && argc < 2)
        return cli_usage_error("pool", "pool %s: missing OST", sub);
    if (!members && argc > 1)
        return cli_usage_error("pool", "pool %s takes FSNAME.POOL only", sub);
    int rc = split(cmd, argv[0], 0, given, sizeof(given), name, sizeof(name));
    if (rc)
        return rc;
    struct cluster c;
    if (cluster_read(fs, cmd, &c, members))
        return CLI_FAIL;
    struct ost_list l = {0};
    const struct stria_pool *p = lookup(c.p, c.np, name);
    if ((rc = same_fs(cmd, given, c.fsname)))
        goto out;
    for (int i = 1; i < argc && !rc; i++)
        rc = parse_ost(cmd, c.fsname, argv[i], &l);
    if (rc)
        goto out;
    rc = CLI_FAIL;
    if (!strcmp(sub, "new") && p) {
        fprintf(stderr, "stria %s: pool %s.%s already exists\n", cmd, c.fsname, name);
        goto out;
    }
    if (strcmp(sub, "new") && !p) {
        fprintf(stderr, "stria %s: pool '%s.%s' does not exist\n", cmd, c.fsname, name);
        goto out;
    }
    if (!strcmp(sub, "destroy") && p->nost) {
        fprintf(stderr,
                "stria %s: pool %s.%s is not empty (%" PRIu32 " OSTs): remove them first "
                "(stria pool remove)\n",
                cmd, c.fsname, name, p->nost);
        goto out;
    }
    for (size_t i = 0; i < l.n; i++) {
        char ost[96];
        snprintf(ost, sizeof(ost), "OST %s-OST%04" PRIx32 "_UUID", c.fsname, l.v[i]);
        if (!strcmp(sub, "add") && !ost_known(&c, l.v[i])) {
            fprintf(stderr, "stria %s: %s is not part of file system %s (stria df)\n", cmd, ost,
                    c.fsname);
            goto out;
        }
        if (!strcmp(sub, "add") && pool_has(p, l.v[i])) {
            fprintf(stderr, "stria %s: %s is already in pool %s.%s\n", cmd, ost, c.fsname, name);
            goto out;
        }
        if (!strcmp(sub, "remove") && !pool_has(p, l.v[i])) {
            fprintf(stderr, "stria %s: %s is not in pool %s.%s\n", cmd, ost, c.fsname, name);
            goto out;
        }
    }
    int err = !strcmp(sub, "new")       ? stria_pool_new(fs, name)
              : !strcmp(sub, "destroy") ? stria_pool_destroy(fs, name)
              : !strcmp(sub, "add")     ? stria_pool_add(fs, name, l.v, l.n)
                                        : stria_pool_remove(fs, name, l.v, l.n);
    if (err < 0) {
        rc = refused(cmd, c.fsname, name, err);
        goto out;
    }
    if (!members)
        printf("Pool %s.%s %s\n", c.fsname, name, !strcmp(sub, "new") ? "created" : "destroyed");
    for (size_t i = 0; i < l.n; i++)
        printf("OST %s-OST%04" PRIx32 "_UUID %s pool %s.%s\n", c.fsname, l.v[i],
               !strcmp(sub, "add") ? "added to" : "removed from", c.fsname, name);
    rc = CLI_OK;
out:
    free(l.v);
    cluster_free(&c);
    return rc;
}

int cmd_pool(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("pool", "missing a subcommand (new, add, remove, destroy, list)");
    const char *sub = argv[1];
    int list = !strcmp(sub, "list");
    if (!list && strcmp(sub, "new") && strcmp(sub, "add") && strcmp(sub, "remove") &&
        strcmp(sub, "destroy"))
        return cli_usage_error("pool", "unknown subcommand '%s'", sub);
    if (list && argc > 3)
        return cli_usage_error("pool", "pool list takes at most FSNAME[.POOL]");
    stria_fs_t *fs;
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    int rc =
        list ? pool_list(fs, argc > 2 ? argv[2] : NULL) : pool_change(fs, sub, argc - 2, argv + 2);
    stria_disconnect(fs);
    return rc;
}
