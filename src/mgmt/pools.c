/*
 * OST pools of the management service (pools.h).
 *
 * The list lives in memory as the cluster map sends it (struct map_pool,
 * OSTs ascending) and in data_dir/pools, one line a pool ("pool NAME
 * OST..."), rewritten whole and atomically on every change. A change is
 * made on a copy that replaces the list only once it is on disk, so a
 * failed save changes nothing. Pools are few and small: copying them all
 * costs nothing next to the fsync.
 */
#include "pools.h"

#include "../common/log.h"
#include "../common/util.h"
#include "../proto/layout.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pools {
    char path[4200];
    uint32_t n;
    struct map_pool *v;
};

static void free_list(struct map_pool *v, uint32_t n)
{
    for (uint32_t i = 0; v && i < n; i++)
        free(v[i].ost);
    free(v);
}

/* A deep copy of n pools, each with room for spare more OSTs, and room for
 * one more pool; NULL when out of memory. */
static struct map_pool *copy_list(const struct map_pool *v, uint32_t n, uint32_t spare)
{
    struct map_pool *c = calloc(n + 1, sizeof(*c));
    if (!c)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        c[i] = v[i];
        c[i].ost = malloc(sizeof(uint32_t) * (v[i].n + spare + 1));
        if (!c[i].ost) {
            free_list(c, i);
            return NULL;
        }
        memcpy(c[i].ost, v[i].ost, sizeof(uint32_t) * v[i].n);
    }
    return c;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int save(const char *path, const struct map_pool *v, uint32_t n)
{
    size_t cap = 64, len = 0;
    for (uint32_t i = 0; i < n; i++)
        cap += 32 + (size_t)v[i].n * 11;
    char *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        len += (size_t)snprintf(buf + len, cap - len, "pool %s", v[i].name);
        for (uint32_t k = 0; k < v[i].n; k++)
            len += (size_t)snprintf(buf + len, cap - len, " %" PRIu32, v[i].ost[k]);
        len += (size_t)snprintf(buf + len, cap - len, "\n");
    }
    int rc = util_write_file_atomic(path, buf, len, 0600);
    if (rc)
        log_error("cannot save the pools to %s: %s", path, log_err(rc));
    free(buf);
    return rc;
}

static int find(const struct map_pool *v, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(v[i].name, name))
            return (int)i;
    return -1;
}

static bool has(const struct map_pool *p, uint32_t ost)
{
    return bsearch(&ost, p->ost, p->n, sizeof(uint32_t), cmp_u32) != NULL;
}

int pools_open(const char *data_dir, struct pools **out)
{
    struct pools *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    snprintf(p->path, sizeof(p->path), "%s/pools", data_dir);
    char *text = NULL;
    int rc = util_read_file(p->path, 16 << 20, &text, NULL);
    if (rc == -ENOENT) {
        *out = p;
        return 0;
    }
    if (rc) {
        log_error("cannot read the pools from %s: %s", p->path, log_err(rc));
        free(p);
        return rc;
    }
    char *save_line = NULL;
    for (char *line = strtok_r(text, "\n", &save_line); line;
         line = strtok_r(NULL, "\n", &save_line)) {
        char *save_word = NULL, *w = strtok_r(line, " ", &save_word);
        char *name = w ? strtok_r(NULL, " ", &save_word) : NULL;
        if (!w || strcmp(w, "pool") || !name || !layout_pool_name_ok(name, false) ||
            find(p->v, p->n, name) >= 0 || p->n == MAP_MAX_POOLS) {
            log_warn("%s: ignoring unreadable line '%.60s'", p->path, line);
            continue;
        }
        struct map_pool *v = copy_list(p->v, p->n, 0);
        if (!v) {
            rc = -ENOMEM;
            break;
        }
        struct map_pool *np = &v[p->n];
        snprintf(np->name, sizeof(np->name), "%s", name);
        if (!(np->ost = malloc(sizeof(uint32_t) * MAP_MAX_TARGETS))) {
            free_list(v, p->n);
            rc = -ENOMEM;
            break;
        }
        for (char *o = strtok_r(NULL, " ", &save_word); o; o = strtok_r(NULL, " ", &save_word)) {
            char *end;
            unsigned long idx = strtoul(o, &end, 10);
            if (*end || idx > UINT32_MAX || np->n == MAP_MAX_TARGETS || has(np, (uint32_t)idx)) {
                log_warn("%s: pool %s: ignoring OST '%.20s'", p->path, name, o);
                continue;
            }
            np->ost[np->n++] = (uint32_t)idx;
            qsort(np->ost, np->n, sizeof(uint32_t), cmp_u32);
        }
        free_list(p->v, p->n);
        p->v = v;
        p->n++;
    }
    free(text);
    if (rc) {
        pools_close(p);
        return rc;
    }
    log_info("loaded %u pools from %s", p->n, p->path);
    *out = p;
    return 0;
}

void pools_close(struct pools *p)
{
    if (!p)
        return;
    free_list(p->v, p->n);
    free(p);
}

int pools_change(struct pools *p, uint8_t op, const char *name, const uint32_t *osts, uint32_t n,
                 pools_ost_known_fn known, void *arg)
{
    if (!layout_pool_name_ok(name, false))
        return -EINVAL;
    bool members = op == PROTO_POOL_ADD || op == PROTO_POOL_REMOVE;
    if ((op < PROTO_POOL_NEW || op > PROTO_POOL_DESTROY) || members != (n > 0) ||
        n > MAP_MAX_TARGETS)
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < i; j++)
            if (osts[i] == osts[j])
                return -EINVAL;
    int at = find(p->v, p->n, name);
    if (op == PROTO_POOL_NEW && at >= 0)
        return -EEXIST;
    if (op == PROTO_POOL_NEW && p->n == MAP_MAX_POOLS)
        return -ENOSPC;
    if (op != PROTO_POOL_NEW && at < 0)
        return -ENOENT;
    if (op == PROTO_POOL_DESTROY && p->v[at].n)
        return -ENOTEMPTY;
    for (uint32_t i = 0; i < n; i++) {
        if (op == PROTO_POOL_ADD && !known(arg, osts[i]))
            return -ENODEV;
        if (op == PROTO_POOL_ADD && has(&p->v[at], osts[i]))
            return -EEXIST;
        if (op == PROTO_POOL_REMOVE && !has(&p->v[at], osts[i]))
            return -ENXIO;
    }
    if (op == PROTO_POOL_ADD && p->v[at].n + n > MAP_MAX_TARGETS)
        return -ENOSPC;

    struct map_pool *v = copy_list(p->v, p->n, n);
    if (!v)
        return -ENOMEM;
    uint32_t nv = p->n;
    if (op == PROTO_POOL_NEW) {
        snprintf(v[nv].name, sizeof(v[nv].name), "%s", name);
        v[nv].n = 0;
        if (!(v[nv].ost = malloc(sizeof(uint32_t)))) {
            free_list(v, nv);
            return -ENOMEM;
        }
        nv++;
    } else if (op == PROTO_POOL_DESTROY) {
        free(v[at].ost);
        memmove(&v[at], &v[at + 1], sizeof(*v) * (nv - (uint32_t)at - 1));
        nv--;
    } else if (op == PROTO_POOL_ADD) {
        memcpy(v[at].ost + v[at].n, osts, sizeof(uint32_t) * n);
        v[at].n += n;
        qsort(v[at].ost, v[at].n, sizeof(uint32_t), cmp_u32);
    } else {
        uint32_t k = 0;
        for (uint32_t i = 0; i < v[at].n; i++) {
            bool gone = false;
            for (uint32_t j = 0; j < n && !gone; j++)
                gone = v[at].ost[i] == osts[j];
            if (!gone)
                v[at].ost[k++] = v[at].ost[i];
        }
        v[at].n = k;
    }
    int rc = save(p->path, v, nv);
    if (rc) {
        free_list(v, nv);
        return rc;
    }
    free_list(p->v, p->n);
    p->v = v;
    p->n = nv;
    return 0;
}

int pools_snapshot(const struct pools *p, struct cluster_map *m)
{
    m->npools = 0;
    if (!(m->pools = copy_list(p->v, p->n, 0)))
        return -ENOMEM;
    m->npools = p->n;
    return 0;
}
