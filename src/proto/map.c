/* Cluster map codec (map.h). */
#include "map.h"

#include "layout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void put_tgt(struct proto_enc *e, const struct map_target *t)
{
    struct proto_str node = proto_str_c(t->node), host = proto_str_c(t->host);
    proto_put_U8(e, &t->kind);
    proto_put_U32(e, &t->index);
    proto_put_U8(e, &t->state);
    proto_put_STR(e, &node);
    proto_put_STR(e, &host);
    proto_put_U16(e, &t->port);
    proto_put_U64(e, &t->stat.bytes_total);
    proto_put_U64(e, &t->stat.bytes_used);
    proto_put_U64(e, &t->stat.bytes_avail);
    proto_put_U64(e, &t->stat.inodes_total);
    proto_put_U64(e, &t->stat.inodes_used);
    proto_put_U64(e, &t->age_ms);
}

int map_encode(const struct cluster_map *m, uint8_t *buf, size_t cap)
{
    struct proto_enc e;
    proto_enc_init(&e, buf, cap);
    proto_put_U32(&e, &m->n);
    for (uint32_t i = 0; i < m->n; i++)
        put_tgt(&e, &m->t[i]);
    /* Appended after the targets: U32 count, then per pool STR name,
     * U32 n, n x U32 OST index. */
    proto_put_U32(&e, &m->npools);
    for (uint32_t i = 0; i < m->npools; i++) {
        const struct map_pool *p = &m->pools[i];
        struct proto_str name = proto_str_c(p->name);
        proto_put_STR(&e, &name);
        proto_put_U32(&e, &p->n);
        for (uint32_t k = 0; k < p->n; k++)
            proto_put_U32(&e, &p->ost[k]);
    }
    return e.err ? e.err : (int)e.len;
}

static void free_pools(struct map_pool *p, uint32_t n)
{
    for (uint32_t i = 0; p && i < n; i++)
        free(p[i].ost);
    free(p);
}

/* The pools after the targets; none if the map ends there (an older
 * mgmtd). Each pool takes at least 7 bytes and each OST 4: checked
 * before allocating. */
static int get_pools(struct proto_dec *d, struct map_pool **out, uint32_t *nout)
{
    *out = NULL;
    *nout = 0;
    if (d->off == d->len)
        return 0;
    uint32_t n;
    proto_get_U32(d, &n);
    if (d->err || n > MAP_MAX_POOLS || (uint64_t)n * 7 > d->len - d->off)
        return -EBADMSG;
    struct map_pool *p = calloc(n ? n : 1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    for (uint32_t i = 0; i < n && !d->err; i++) {
        struct proto_str name;
        proto_get_STR(d, &name);
        proto_get_U32(d, &p[i].n);
        if (d->err || proto_str_copy(&name, p[i].name, sizeof(p[i].name)) ||
            !layout_pool_name_ok(p[i].name, false) || p[i].n > MAP_MAX_TARGETS ||
            (uint64_t)p[i].n * 4 > d->len - d->off) {
            d->err = -EBADMSG;
            break;
        }
        if (!(p[i].ost = malloc(sizeof(uint32_t) * (p[i].n ? p[i].n : 1)))) {
            free_pools(p, n);
            return -ENOMEM;
        }
        for (uint32_t k = 0; k < p[i].n; k++)
            proto_get_U32(d, &p[i].ost[k]);
    }
    if (d->err) {
        free_pools(p, n);
        return -EBADMSG;
    }
    *out = p;
    *nout = n;
    return 0;
}

int map_decode(const uint8_t *buf, size_t len, struct cluster_map *m)
{
    struct proto_dec d;
    proto_dec_init(&d, buf, len);
    uint32_t n;
    proto_get_U32(&d, &n);
    /* Each entry takes at least 58 bytes: check before allocating. */
    if (d.err || n > MAP_MAX_TARGETS || (uint64_t)n * 58 > len - d.off)
        return -EBADMSG;
    struct map_target *t = calloc(n ? n : 1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    for (uint32_t i = 0; i < n && !d.err; i++) {
        struct proto_str node, host;
        proto_get_U8(&d, &t[i].kind);
        proto_get_U32(&d, &t[i].index);
        proto_get_U8(&d, &t[i].state);
        proto_get_STR(&d, &node);
        proto_get_STR(&d, &host);
        proto_get_U16(&d, &t[i].port);
        proto_get_U64(&d, &t[i].stat.bytes_total);
        proto_get_U64(&d, &t[i].stat.bytes_used);
        proto_get_U64(&d, &t[i].stat.bytes_avail);
        proto_get_U64(&d, &t[i].stat.inodes_total);
        proto_get_U64(&d, &t[i].stat.inodes_used);
        proto_get_U64(&d, &t[i].age_ms);
        t[i].stat.index = t[i].index;
        if (!d.err && (proto_str_copy(&node, t[i].node, sizeof(t[i].node)) ||
                       proto_str_copy(&host, t[i].host, sizeof(t[i].host))))
            d.err = -EBADMSG;
    }
    if (d.err) {
        free(t);
        return -EBADMSG;
    }
    struct map_pool *pools;
    uint32_t npools;
    int rc = get_pools(&d, &pools, &npools);
    if (rc) {
        free(t);
        return rc;
    }
    free(m->t);
    free_pools(m->pools, m->npools);
    m->t = t;
    m->n = n;
    m->pools = pools;
    m->npools = npools;
    return 0;
}

void map_free(struct cluster_map *m)
{
    free(m->t);
    m->t = NULL;
    m->n = 0;
    free_pools(m->pools, m->npools);
    m->pools = NULL;
    m->npools = 0;
}

const struct map_pool *map_find_pool(const struct cluster_map *m, const char *name)
{
    for (uint32_t i = 0; i < m->npools; i++)
        if (!strcmp(m->pools[i].name, name))
            return &m->pools[i];
    return NULL;
}

const struct map_target *map_find(const struct cluster_map *m, uint8_t kind, uint32_t index)
{
    for (uint32_t i = 0; i < m->n; i++)
        if (m->t[i].kind == kind && m->t[i].index == index)
            return &m->t[i];
    return NULL;
}

uint32_t map_count(const struct cluster_map *m, uint8_t kind)
{
    uint32_t c = 0;
    for (uint32_t i = 0; i < m->n; i++)
        c += m->t[i].kind == kind;
    return c;
}
