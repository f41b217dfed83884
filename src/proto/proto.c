/*
 * Codecs for the wire protocol (proto.h). Integers are little-endian;
 * strings carry a u16 length, blobs a u32 length, each checked against the
 * bytes remaining and against a per-kind maximum before anything is used.
 * Message codecs are generated from PROTO_MESSAGES, so a field is declared
 * in exactly one place.
 */
#include "proto.h"
#include "layout.h"

#include "../common/crc.h"
#include "../common/util.h"

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* n is a constant at every call, so each becomes one load or store (the
 * byte loops they replace were not merged by the compiler: 8 iterations a
 * u64, the largest single cost of the MDT's encoding in callgrind). */
static inline void put_le(uint8_t *p, uint64_t v, int n)
{
    switch (n) {
    case 1:
        *p = (uint8_t)v;
        break;
    case 2: {
        uint16_t x = htole16((uint16_t)v);
        memcpy(p, &x, 2);
        break;
    }
    case 4: {
        uint32_t x = htole32((uint32_t)v);
        memcpy(p, &x, 4);
        break;
    }
    default: {
        uint64_t x = htole64(v);
        memcpy(p, &x, 8);
        break;
    }
    }
}

static inline uint64_t get_le(const uint8_t *p, int n)
{
    switch (n) {
    case 1:
        return *p;
    case 2: {
        uint16_t x;
        memcpy(&x, p, 2);
        return le16toh(x);
    }
    case 4: {
        uint32_t x;
        memcpy(&x, p, 4);
        return le32toh(x);
    }
    default: {
        uint64_t x;
        memcpy(&x, p, 8);
        return le64toh(x);
    }
    }
}

uint64_t proto_le64(const uint8_t *p)
{
    return get_le(p, 8);
}

void proto_put_le64(uint8_t *p, uint64_t v)
{
    put_le(p, v, 8);
}

uint32_t proto_le32(const uint8_t *p)
{
    return (uint32_t)get_le(p, 4);
}

void proto_put_le32(uint8_t *p, uint32_t v)
{
    put_le(p, v, 4);
}

void proto_hdr_encode(const struct proto_hdr *h, uint8_t out[PROTO_HDR_LEN])
{
    put_le(out + 0, h->magic, 4);
    put_le(out + 4, h->version, 2);
    put_le(out + 6, h->opcode, 2);
    put_le(out + 8, h->flags, 4);
    put_le(out + 12, (uint32_t)h->status, 4);
    put_le(out + 16, h->reqid, 8);
    put_le(out + 24, h->client_id, 8);
    put_le(out + 32, h->seq, 8);
    put_le(out + 40, h->payload_len, 4);
    put_le(out + 44, h->bulk_len, 4);
    put_le(out + 48, 0, 4);
    put_le(out + 52, crc32c(0, out, 52), 4);
}

int proto_hdr_decode(const uint8_t in[PROTO_HDR_LEN], struct proto_hdr *h)
{
    h->magic = (uint32_t)get_le(in + 0, 4);
    if (h->magic != PROTO_MAGIC)
        return -EBADMSG;
    if ((uint32_t)get_le(in + 52, 4) != crc32c(0, in, 52))
        return -EBADMSG;
    h->version = (uint16_t)get_le(in + 4, 2);
    h->opcode = (uint16_t)get_le(in + 6, 2);
    h->flags = (uint32_t)get_le(in + 8, 4);
    h->status = (int32_t)(uint32_t)get_le(in + 12, 4);
    h->reqid = get_le(in + 16, 8);
    h->client_id = get_le(in + 24, 8);
    h->seq = get_le(in + 32, 8);
    h->payload_len = (uint32_t)get_le(in + 40, 4);
    h->bulk_len = (uint32_t)get_le(in + 44, 4);
    if (h->version == 0)
        return -EPROTO;
    uint32_t maxp = (h->flags & PROTO_FLAG_REPLY) ? PROTO_MAX_REP_PAYLOAD : PROTO_MAX_REQ_PAYLOAD;
    if (h->payload_len > maxp || h->bulk_len > PROTO_MAX_BULK)
        return -EMSGSIZE;
    return 0;
}

bool proto_cred_in_group(const struct proto_cred *c, uint32_t gid)
{
    if (c->gid == gid)
        return true;
    for (uint32_t i = 0; i < c->ngroups && i < PROTO_MAX_GROUPS; i++)
        if (c->groups[i] == gid)
            return true;
    return false;
}

bool proto_cred_may(const struct proto_cred *c, uint32_t mode, uint32_t uid, uint32_t gid,
                    unsigned mask)
{
    if (c->uid == 0)
        return !((mask & 1) && !S_ISDIR(mode) && !(mode & 0111));
    unsigned bits;
    if (c->uid == uid)
        bits = (mode >> 6) & 7;
    else if (proto_cred_in_group(c, gid))
        bits = (mode >> 3) & 7;
    else
        bits = mode & 7;
    return (bits & mask) == mask;
}

uint32_t proto_mode_kill_privs(uint32_t mode)
{
    uint32_t drop = mode & S_ISUID;
    if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
        drop |= S_ISGID;
    return drop;
}

bool proto_cred_may_delete(const struct proto_cred *c, uint32_t dmode, uint32_t duid, uint32_t dgid,
                           uint32_t victim_uid)
{
    if (!proto_cred_may(c, dmode, duid, dgid, 3))
        return false;
    return !((dmode & S_ISVTX) && c->uid != 0 && c->uid != duid && c->uid != victim_uid);
}

int proto_str_copy(const struct proto_str *s, char *buf, size_t buflen)
{
    if (s->len >= buflen)
        return -ENAMETOOLONG;
    if (s->len && memchr(s->p, '\0', s->len))
        return -EINVAL;
    if (s->len)
        memcpy(buf, s->p, s->len);
    buf[s->len] = '\0';
    return 0;
}

/* ---- primitive put/get ---- */

static uint8_t *enc_reserve(struct proto_enc *e, size_t n)
{
    if (e->err)
        return NULL;
    if (n > e->cap - e->len) {
        e->err = -EMSGSIZE;
        return NULL;
    }
    uint8_t *p = e->buf + e->len;
    e->len += n;
    return p;
}

static const uint8_t *dec_take(struct proto_dec *d, size_t n)
{
    if (d->err)
        return NULL;
    if (n > d->len - d->off) {
        d->err = -EBADMSG;
        return NULL;
    }
    const uint8_t *p = d->buf + d->off;
    d->off += n;
    return p;
}

#define PUT_INT(KIND, T, N)                                                                        \
    void proto_put_##KIND(struct proto_enc *e, const T *v)                                         \
    {                                                                                              \
        uint8_t *p = enc_reserve(e, N);                                                            \
        if (p)                                                                                     \
            put_le(p, (uint64_t)*v, N);                                                            \
    }                                                                                              \
    void proto_get_##KIND(struct proto_dec *d, T *v)                                               \
    {                                                                                              \
        const uint8_t *p = dec_take(d, N);                                                         \
        *v = p ? (T)get_le(p, N) : 0;                                                              \
    }
PUT_INT(U8, uint8_t, 1)
PUT_INT(U16, uint16_t, 2)
PUT_INT(U32, uint32_t, 4)
PUT_INT(U64, uint64_t, 8)
PUT_INT(I64, int64_t, 8)
#undef PUT_INT

void proto_put_I32(struct proto_enc *e, const int32_t *v)
{
    uint32_t u = (uint32_t)*v;
    proto_put_U32(e, &u);
}

void proto_get_I32(struct proto_dec *d, int32_t *v)
{
    uint32_t u;
    proto_get_U32(d, &u);
    *v = (int32_t)u;
}

void proto_put_STR(struct proto_enc *e, const struct proto_str *v)
{
    if (v->len > PROTO_MAX_STR) {
        if (!e->err)
            e->err = -ENAMETOOLONG;
        return;
    }
    uint16_t n = (uint16_t)v->len;
    proto_put_U16(e, &n);
    uint8_t *p = enc_reserve(e, n);
    if (p && n)
        memcpy(p, v->p, n);
}

void proto_get_STR(struct proto_dec *d, struct proto_str *v)
{
    uint16_t n;
    proto_get_U16(d, &n);
    if (n > PROTO_MAX_STR && !d->err)
        d->err = -EBADMSG;
    const uint8_t *p = dec_take(d, n);
    v->p = p ? (const char *)p : "";
    v->len = p ? n : 0;
}

void proto_put_BLOB(struct proto_enc *e, const struct proto_blob *v)
{
    proto_put_U32(e, &v->len);
    uint8_t *p = enc_reserve(e, v->len);
    if (p && v->len)
        memcpy(p, v->p, v->len);
}

void proto_get_BLOB(struct proto_dec *d, struct proto_blob *v)
{
    uint32_t n;
    proto_get_U32(d, &n);
    const uint8_t *p = dec_take(d, n);
    v->p = p ? p : (const uint8_t *)"";
    v->len = p ? n : 0;
}

void proto_put_TBLOB(struct proto_enc *e, const struct proto_tblob *v)
{
    if (v->absent)
        return;
    struct proto_blob b = {v->p, v->len};
    proto_put_BLOB(e, &b);
}

void proto_get_TBLOB(struct proto_dec *d, struct proto_tblob *v)
{
    struct proto_blob b;
    if (!d->err && d->off == d->len) {
        *v = (struct proto_tblob){(const uint8_t *)"", 0, true};
        return;
    }
    proto_get_BLOB(d, &b);
    *v = (struct proto_tblob){b.p, b.len, false};
}

void proto_put_CRED(struct proto_enc *e, const struct proto_cred *v)
{
    uint32_t n = v->ngroups;
    if (n > PROTO_MAX_GROUPS) {
        if (!e->err)
            e->err = -EINVAL;
        return;
    }
    proto_put_U32(e, &v->uid);
    proto_put_U32(e, &v->gid);
    proto_put_U32(e, &n);
    for (uint32_t i = 0; i < n; i++)
        proto_put_U32(e, &v->groups[i]);
}

void proto_get_CRED(struct proto_dec *d, struct proto_cred *v)
{
    proto_get_U32(d, &v->uid);
    proto_get_U32(d, &v->gid);
    proto_get_U32(d, &v->ngroups);
    if (v->ngroups > PROTO_MAX_GROUPS) {
        if (!d->err)
            d->err = -EBADMSG;
        v->ngroups = 0;
        return;
    }
    for (uint32_t i = 0; i < v->ngroups; i++)
        proto_get_U32(d, &v->groups[i]);
}

void proto_put_ATTR(struct proto_enc *e, const struct proto_attr *v)
{
    proto_put_U64(e, &v->ino);
    proto_put_U32(e, &v->mode);
    proto_put_U32(e, &v->nlink);
    proto_put_U32(e, &v->uid);
    proto_put_U32(e, &v->gid);
    proto_put_U64(e, &v->size);
    proto_put_U64(e, &v->blocks);
    proto_put_I64(e, &v->atime_ns);
    proto_put_I64(e, &v->mtime_ns);
    proto_put_I64(e, &v->ctime_ns);
    proto_put_U64(e, &v->rdev);
    proto_put_U64(e, &v->dstripe);
}

void proto_get_ATTR(struct proto_dec *d, struct proto_attr *v)
{
    proto_get_U64(d, &v->ino);
    proto_get_U32(d, &v->mode);
    proto_get_U32(d, &v->nlink);
    proto_get_U32(d, &v->uid);
    proto_get_U32(d, &v->gid);
    proto_get_U64(d, &v->size);
    proto_get_U64(d, &v->blocks);
    proto_get_I64(d, &v->atime_ns);
    proto_get_I64(d, &v->mtime_ns);
    proto_get_I64(d, &v->ctime_ns);
    proto_get_U64(d, &v->rdev);
    proto_get_U64(d, &v->dstripe);
}

static bool comp_ok(const struct layout_comp *c)
{
    if (c->start >= c->end)
        return false;
    if (c->type & LAYOUT_F_PENDING)
        return c->stripe_count <= LAYOUT_MAX_STRIPES || c->stripe_count == LAYOUT_COUNT_ALL;
    return c->stripe_count && c->stripe_count <= LAYOUT_MAX_STRIPES && c->stripe_size;
}

void proto_put_LAYOUT(struct proto_enc *e, const struct layout *v)
{
    if (v->ncomp > LAYOUT_MAX_COMP) {
        if (!e->err)
            e->err = -EINVAL;
        return;
    }
    proto_put_U16(e, &v->ncomp);
    for (uint16_t i = 0; i < v->ncomp; i++) {
        const struct layout_comp *c = &v->comp[i];
        if (!comp_ok(c)) {
            if (!e->err)
                e->err = -EINVAL;
            return;
        }
        proto_put_U64(e, &c->start);
        proto_put_U64(e, &c->end);
        proto_put_U32(e, &c->stripe_size);
        proto_put_U16(e, &c->stripe_count);
        uint16_t type = (uint16_t)(c->pool[0] ? c->type | LAYOUT_F_POOL : c->type & ~LAYOUT_F_POOL);
        proto_put_U16(e, &type);
        for (uint16_t s = 0; s < layout_comp_groups(c); s++)
            proto_put_U32(e, &c->groups[s]);
        if (c->pool[0]) {
            struct proto_str p = {c->pool, (uint32_t)strnlen(c->pool, LAYOUT_POOL_MAX)};
            proto_put_STR(e, &p);
        }
    }
}

void proto_get_LAYOUT(struct proto_dec *d, struct layout *v)
{
    proto_get_U16(d, &v->ncomp);
    if (v->ncomp > LAYOUT_MAX_COMP) {
        if (!d->err)
            d->err = -EBADMSG;
        v->ncomp = 0;
        return;
    }
    for (uint16_t i = 0; i < v->ncomp; i++) {
        struct layout_comp *c = &v->comp[i];
        proto_get_U64(d, &c->start);
        proto_get_U64(d, &c->end);
        proto_get_U32(d, &c->stripe_size);
        proto_get_U16(d, &c->stripe_count);
        proto_get_U16(d, &c->type);
        if (!comp_ok(c)) {
            if (!d->err)
                d->err = -EBADMSG;
            v->ncomp = 0;
            return;
        }
        for (uint16_t s = 0; s < layout_comp_groups(c); s++)
            proto_get_U32(d, &c->groups[s]);
        memset(c->pool, 0, sizeof(c->pool));
        if (c->type & LAYOUT_F_POOL) {
            struct proto_str p;
            proto_get_STR(d, &p);
            if (!d->err && (p.len == 0 || proto_str_copy(&p, c->pool, sizeof(c->pool)))) {
                d->err = -EBADMSG;
                v->ncomp = 0;
                return;
            }
        }
    }
}

static void put_tstat(struct proto_enc *e, const struct proto_tstat *t)
{
    proto_put_U32(e, &t->index);
    proto_put_U64(e, &t->bytes_total);
    proto_put_U64(e, &t->bytes_used);
    proto_put_U64(e, &t->bytes_avail);
    proto_put_U64(e, &t->inodes_total);
    proto_put_U64(e, &t->inodes_used);
}

void proto_put_TSTATS(struct proto_enc *e, const struct proto_tstats *v)
{
    if (v->n > PROTO_MAX_TARGETS) {
        if (!e->err)
            e->err = -EINVAL;
        return;
    }
    proto_put_U32(e, &v->n);
    for (uint32_t i = 0; i < v->n; i++)
        put_tstat(e, &v->t[i]);
}

void proto_get_TSTATS(struct proto_dec *d, struct proto_tstats *v)
{
    proto_get_U32(d, &v->n);
    if (v->n > PROTO_MAX_TARGETS) {
        if (!d->err)
            d->err = -EBADMSG;
        v->n = 0;
        return;
    }
    for (uint32_t i = 0; i < v->n; i++) {
        struct proto_tstat *t = &v->t[i];
        proto_get_U32(d, &t->index);
        proto_get_U64(d, &t->bytes_total);
        proto_get_U64(d, &t->bytes_used);
        proto_get_U64(d, &t->bytes_avail);
        proto_get_U64(d, &t->inodes_total);
        proto_get_U64(d, &t->inodes_used);
    }
}

void proto_put_LEASES(struct proto_enc *e, const struct proto_leases *v)
{
    if (v->n > PROTO_MAX_LEASES) {
        if (!e->err)
            e->err = -EINVAL;
        return;
    }
    proto_put_U64(e, &v->instance);
    proto_put_U32(e, &v->n);
    for (uint32_t i = 0; i < v->n; i++) {
        proto_put_U64(e, &v->l[i].ino);
        proto_put_U64(e, &v->l[i].gen_before);
        proto_put_U64(e, &v->l[i].gen);
        proto_put_U32(e, &v->l[i].ms);
        uint8_t has = v->l[i].has_attr != 0;
        proto_put_U8(e, &has);
        if (has)
            proto_put_ATTR(e, &v->l[i].attr);
    }
}

void proto_get_LEASES(struct proto_dec *d, struct proto_leases *v)
{
    proto_get_U64(d, &v->instance);
    proto_get_U32(d, &v->n);
    if (v->n > PROTO_MAX_LEASES) {
        if (!d->err)
            d->err = -EBADMSG;
        v->n = 0;
        return;
    }
    for (uint32_t i = 0; i < v->n; i++) {
        proto_get_U64(d, &v->l[i].ino);
        proto_get_U64(d, &v->l[i].gen_before);
        proto_get_U64(d, &v->l[i].gen);
        proto_get_U32(d, &v->l[i].ms);
        proto_get_U8(d, &v->l[i].has_attr);
        if (v->l[i].has_attr > 1 && !d->err)
            d->err = -EBADMSG;
        if (v->l[i].has_attr)
            proto_get_ATTR(d, &v->l[i].attr);
    }
}

/* ---- the lists of UNLINKS and DOM_WRITES ---- */

void proto_unlinks_item_put(struct proto_enc *e, const struct proto_unlinks_item *it)
{
    proto_put_U64(e, &it->parent);
    proto_put_U64(e, &it->seq);
    proto_put_U16(e, &it->tag);
    proto_put_STR(e, &it->path);
}

int proto_unlinks_item_get(struct proto_dec *d, struct proto_unlinks_item *it)
{
    proto_get_U64(d, &it->parent);
    proto_get_U64(d, &it->seq);
    proto_get_U16(d, &it->tag);
    proto_get_STR(d, &it->path);
    return d->err ? -EBADMSG : 0;
}

void proto_dom_writes_item_put(struct proto_enc *e, const struct proto_dom_writes_item *it)
{
    proto_put_U64(e, &it->ino);
    proto_put_U64(e, &it->offset);
    proto_put_I64(e, &it->mtime_ns);
    proto_put_U32(e, &it->len);
    proto_put_U8(e, &it->gen);
    proto_put_BLOB(e, &it->crcs);
}

int proto_dom_writes_item_get(struct proto_dec *d, struct proto_dom_writes_item *it)
{
    proto_get_U64(d, &it->ino);
    proto_get_U64(d, &it->offset);
    proto_get_I64(d, &it->mtime_ns);
    proto_get_U32(d, &it->len);
    proto_get_U8(d, &it->gen);
    proto_get_BLOB(d, &it->crcs);
    return d->err ? -EBADMSG : 0;
}

void proto_dom_create_put(struct proto_enc *e, const struct proto_dom_create *c)
{
    proto_put_U16(e, &c->item);
    proto_put_U64(e, &c->parent);
    proto_put_STR(e, &c->name);
    proto_put_U32(e, &c->mode);
    proto_put_U32(e, &c->flags);
    proto_put_CRED(e, &c->cred);
}

int proto_dom_create_get(struct proto_dec *d, struct proto_dom_create *c)
{
    proto_get_U16(d, &c->item);
    proto_get_U64(d, &c->parent);
    proto_get_STR(d, &c->name);
    proto_get_U32(d, &c->mode);
    proto_get_U32(d, &c->flags);
    proto_get_CRED(d, &c->cred);
    return d->err ? -EBADMSG : 0;
}

void proto_result_put(struct proto_enc *e, int32_t status, struct proto_blob rep)
{
    proto_put_I32(e, &status);
    proto_put_BLOB(e, &rep);
}

int proto_result_get(struct proto_dec *d, int32_t *status, struct proto_blob *rep)
{
    proto_get_I32(d, status);
    proto_get_BLOB(d, rep);
    return d->err ? -EBADMSG : 0;
}

void proto_open_wb_put(uint8_t out[PROTO_OPEN_WB_LEN], const struct proto_open_wb *w)
{
    proto_put_le32(out, w->ms);
    proto_put_le64(out + 4, w->id);
    proto_put_le64(out + 12, w->dom_room);
    proto_put_le64(out + 20, w->ino_lo);
    proto_put_le32(out + 28, w->ino_n);
}

int proto_open_wb_get(const struct proto_tblob *b, struct proto_open_wb *w)
{
    memset(w, 0, sizeof(*w));
    if (b->absent || b->len == 0)
        return -ENODATA;
    if (b->len != PROTO_OPEN_WB_LEN && b->len != PROTO_OPEN_WB_LEN_V1)
        return -EBADMSG;
    w->ms = proto_le32(b->p);
    w->id = proto_le64(b->p + 4);
    w->dom_room = proto_le64(b->p + 12);
    if (b->len == PROTO_OPEN_WB_LEN) {
        w->ino_lo = proto_le64(b->p + 20);
        w->ino_n = proto_le32(b->p + 28);
    }
    return 0;
}

/* ---- generated message codecs ---- */

#define ENC_FIELD(kind, fname) proto_put_##kind(e, &m->fname);
#define DEC_FIELD(kind, fname) proto_get_##kind(d, &m->fname);
#define GEN_CODEC(NAME, num, lname)                                                                \
    int proto_enc_##lname##_req(struct proto_enc *e, const struct proto_##lname##_req *m)          \
    {                                                                                              \
        (void)m;                                                                                   \
        MSG_##NAME##_REQ(ENC_FIELD) return e->err;                                                 \
    }                                                                                              \
    int proto_dec_##lname##_req(struct proto_dec *d, struct proto_##lname##_req *m)                \
    {                                                                                              \
        (void)m;                                                                                   \
        MSG_##NAME##_REQ(DEC_FIELD) return d->err;                                                 \
    }                                                                                              \
    int proto_enc_##lname##_rep(struct proto_enc *e, const struct proto_##lname##_rep *m)          \
    {                                                                                              \
        (void)m;                                                                                   \
        MSG_##NAME##_REP(ENC_FIELD) return e->err;                                                 \
    }                                                                                              \
    int proto_dec_##lname##_rep(struct proto_dec *d, struct proto_##lname##_rep *m)                \
    {                                                                                              \
        (void)m;                                                                                   \
        MSG_##NAME##_REP(DEC_FIELD) return d->err;                                                 \
    }                                                                                              \
    static int dec_req_any_##lname(struct proto_dec *d, void *m)                                   \
    {                                                                                              \
        return proto_dec_##lname##_req(d, m);                                                      \
    }                                                                                              \
    static int enc_rep_any_##lname(struct proto_enc *e, const void *m)                             \
    {                                                                                              \
        return proto_enc_##lname##_rep(e, m);                                                      \
    }
PROTO_MESSAGES(GEN_CODEC)
#undef GEN_CODEC

static const struct proto_codec codecs[PROTO_OP_MAX] = {
#define CODEC(NAME, num, lname, flags)                                                             \
    [num] = {#NAME,                                                                                \
             flags,                                                                                \
             sizeof(struct proto_##lname##_req),                                                   \
             sizeof(struct proto_##lname##_rep),                                                   \
             dec_req_any_##lname,                                                                  \
             enc_rep_any_##lname},
    PROTO_MESSAGES_FLAGS(CODEC)
#undef CODEC
};

const struct proto_codec *proto_codec(uint16_t opcode)
{
    return opcode < PROTO_OP_MAX && codecs[opcode].name ? &codecs[opcode] : NULL;
}

uint32_t proto_op_flags(uint16_t opcode)
{
    const struct proto_codec *c = proto_codec(opcode);
    return c ? c->flags : 0;
}

const char *proto_op_name(uint16_t opcode)
{
    switch (opcode) {
#define NAME_CASE(NAME, num, lname)                                                                \
    case num:                                                                                      \
        return #NAME;
        PROTO_MESSAGES(NAME_CASE)
#undef NAME_CASE
    }
    return NULL;
}

void proto_put_dirent(struct proto_enc *e, const struct proto_dirent *v)
{
    if (v->name.len == 0 || v->name.len > PROTO_MAX_NAME) {
        if (!e->err)
            e->err = -EINVAL;
        return;
    }
    proto_put_U64(e, &v->ino);
    proto_put_U64(e, &v->next_cookie);
    proto_put_U8(e, &v->type);
    proto_put_STR(e, &v->name);
}

void proto_get_dirent(struct proto_dec *d, struct proto_dirent *v)
{
    proto_get_U64(d, &v->ino);
    proto_get_U64(d, &v->next_cookie);
    proto_get_U8(d, &v->type);
    proto_get_STR(d, &v->name);
    if (!d->err && (v->name.len == 0 || v->name.len > PROTO_MAX_NAME))
        d->err = -EBADMSG;
}

void proto_put_dirplus(struct proto_enc *e, const struct proto_attr *a, uint8_t xabsent)
{
    proto_put_ATTR(e, a);
    proto_put_U8(e, &xabsent);
}

void proto_get_dirplus(struct proto_dec *d, struct proto_attr *a, uint8_t *xabsent)
{
    proto_get_ATTR(d, a);
    proto_get_U8(d, xabsent);
    if (!d->err && (*xabsent >> PROTO_XATTR_KNOWN))
        d->err = -EBADMSG;
}

const char *const proto_xattr_known_names[PROTO_XATTR_KNOWN] = {
    "security.selinux", "system.posix_acl_access", "system.posix_acl_default",
    "security.capability"};

int proto_xattr_known(const char *name)
{
    for (int i = 0; i < PROTO_XATTR_KNOWN; i++)
        if (!strcmp(name, proto_xattr_known_names[i]))
            return i;
    return -1;
}

/* ---- directory stripes ---- */

bool proto_ds_valid(uint64_t v)
{
    struct proto_dstripe d = proto_ds_unpack(v);
    if (v >> 56)
        return false;
    if (d.count <= 1)
        return v == 0; /* a plain directory is always 0 */
    return d.hash == PROTO_DS_HASH_FNV && d.count <= d.nmdt && d.start < d.nmdt &&
           d.count <= PROTO_DS_MAX_COUNT;
}

uint32_t proto_ds_shard_mdt(uint64_t ds, uint32_t k)
{
    struct proto_dstripe d = proto_ds_unpack(ds);
    return d.nmdt ? (d.start + k) % d.nmdt : d.start;
}

uint32_t proto_ds_name_mdt(uint64_t ds, uint32_t home, const char *name, size_t len)
{
    struct proto_dstripe d = proto_ds_unpack(ds);
    if (d.count <= 1)
        return home;
    return proto_ds_shard_mdt(ds, (uint32_t)(util_hash64(name, len) % d.count));
}
