/*
 * Unit tests of the wire protocol (proto.h) and the cluster map codec (map.h).
 *
 * Every daemon decodes bytes that arrive from the network, so a decoder that
 * crashes, loops or reads past the end of a message takes a server down.
 * Besides round trips, these tests feed every generated decoder truncated,
 * oversized, mutated and random input. Decoders always get heap buffers that
 * end exactly where the input ends, so a build with -fsanitize=address turns
 * any over-read into a failure. Randomness comes from a fixed seed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include "common/crc.h"
#include "common/util.h"
#include "proto/map.h"
#include "proto/proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---------------------------------------------------------- */

/* Large enough for any message the tests build. */
static uint8_t wire[PROTO_MAX_REP_PAYLOAD];
static uint8_t wire2[PROTO_MAX_REP_PAYLOAD];

/* A heap copy of n bytes whose end is the end of the allocation. */
static uint8_t *exact_copy(const void *src, size_t n)
{
    uint8_t *p = malloc(n);
    if (!p && n == 0)
        p = malloc(1);
    assert_non_null(p);
    if (n)
        memcpy(p, src, n);
    return p;
}

static void assert_str_is(const struct proto_str *s, const char *want)
{
    assert_int_equal(s->len, strlen(want));
    if (s->len)
        assert_memory_equal(s->p, want, s->len);
}

static void assert_str_same(const struct proto_str *a, const struct proto_str *b)
{
    assert_int_equal(a->len, b->len);
    if (a->len)
        assert_memory_equal(a->p, b->p, a->len);
}

static void assert_blob_same(const struct proto_blob *a, const struct proto_blob *b)
{
    assert_int_equal(a->len, b->len);
    if (a->len)
        assert_memory_equal(a->p, b->p, a->len);
}

static void assert_cred_same(const struct proto_cred *a, const struct proto_cred *b)
{
    assert_int_equal(a->uid, b->uid);
    assert_int_equal(a->gid, b->gid);
    assert_int_equal(a->ngroups, b->ngroups);
    for (uint32_t i = 0; i < a->ngroups; i++)
        assert_int_equal(a->groups[i], b->groups[i]);
}

static void assert_attr_same(const struct proto_attr *a, const struct proto_attr *b)
{
    assert_int_equal(a->ino, b->ino);
    assert_int_equal(a->mode, b->mode);
    assert_int_equal(a->nlink, b->nlink);
    assert_int_equal(a->uid, b->uid);
    assert_int_equal(a->gid, b->gid);
    assert_int_equal(a->size, b->size);
    assert_int_equal(a->blocks, b->blocks);
    assert_true(a->atime_ns == b->atime_ns);
    assert_true(a->mtime_ns == b->mtime_ns);
    assert_true(a->ctime_ns == b->ctime_ns);
    assert_int_equal(a->rdev, b->rdev);
}

static void assert_layout_same(const struct layout *a, const struct layout *b)
{
    assert_int_equal(a->ncomp, b->ncomp);
    for (uint16_t i = 0; i < a->ncomp; i++) {
        const struct layout_comp *x = &a->comp[i], *y = &b->comp[i];
        assert_int_equal(x->start, y->start);
        assert_int_equal(x->end, y->end);
        assert_int_equal(x->stripe_size, y->stripe_size);
        assert_int_equal(x->stripe_count, y->stripe_count);
        assert_int_equal(x->type, y->type);
        for (uint16_t s = 0; s < x->stripe_count; s++)
            assert_int_equal(x->groups[s], y->groups[s]);
    }
}

static void assert_tstats_same(const struct proto_tstats *a, const struct proto_tstats *b)
{
    assert_int_equal(a->n, b->n);
    for (uint32_t i = 0; i < a->n; i++) {
        assert_int_equal(a->t[i].index, b->t[i].index);
        assert_int_equal(a->t[i].bytes_total, b->t[i].bytes_total);
        assert_int_equal(a->t[i].bytes_used, b->t[i].bytes_used);
        assert_int_equal(a->t[i].bytes_avail, b->t[i].bytes_avail);
        assert_int_equal(a->t[i].inodes_total, b->t[i].inodes_total);
        assert_int_equal(a->t[i].inodes_used, b->t[i].inodes_used);
    }
}

static void make_cred(struct proto_cred *c, uint32_t ngroups)
{
    memset(c, 0, sizeof(*c));
    c->uid = 1000;
    c->gid = 100;
    c->ngroups = ngroups;
    for (uint32_t i = 0; i < ngroups && i < PROTO_MAX_GROUPS; i++)
        c->groups[i] = 5000 + 7 * i;
}

static void make_attr(struct proto_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->ino = 0x1122334455667788ull;
    a->mode = 0100644;
    a->nlink = 3;
    a->uid = 4000000000u;
    a->gid = 2;
    a->size = (5ull << 40) + 17;
    a->blocks = 0xfffffffffffffff0ull;
    a->atime_ns = -1;
    a->mtime_ns = INT64_MAX;
    a->ctime_ns = INT64_MIN;
    a->rdev = 0x0801;
}

/* comp 0: [0, 4M) 1M x 2; comp 1: [4M, EOF) 4M x 4. */
static void make_layout2(struct layout *l)
{
    memset(l, 0, sizeof(*l));
    l->ncomp = 2;
    l->comp[0] = (struct layout_comp){.start = 0,
                                      .end = 4u << 20,
                                      .stripe_size = 1u << 20,
                                      .stripe_count = 2,
                                      .type = LAYOUT_TYPE_OST};
    l->comp[0].groups[0] = 7;
    l->comp[0].groups[1] = 3;
    l->comp[1] = (struct layout_comp){.start = 4u << 20,
                                      .end = LAYOUT_END_EOF,
                                      .stripe_size = 4u << 20,
                                      .stripe_count = 4,
                                      .type = LAYOUT_TYPE_OST};
    for (int s = 0; s < 4; s++)
        l->comp[1].groups[s] = 100 + 11 * (uint32_t)s;
}

static void make_open_req(struct proto_open_req *q, uint32_t ngroups)
{
    memset(q, 0, sizeof(*q));
    make_cred(&q->cred, ngroups);
    q->parent = 1;
    q->path = proto_str_c("dir/sub/file.dat");
    q->flags = O_CREAT | O_RDWR | O_TRUNC;
    q->mode = 0644;
    q->stripe_count = -1;
    q->stripe_size = 1u << 20;
    q->stripe_offset = -1;
    q->dom_len = 1u << 20;
    q->wb.absent = true; /* as an older client sends it */
}

static const uint8_t open_crcs[8] = {1, 2, 3, 4, 5, 6, 7, 8};

static void make_open_rep(struct proto_open_rep *r)
{
    memset(r, 0, sizeof(*r));
    make_attr(&r->attr);
    make_layout2(&r->layout);
    r->created = 1;
    r->old_size = 123456789;
    r->marked = 1;
    r->dom_crcs = (struct proto_blob){open_crcs, sizeof(open_crcs)};
    r->wb.absent = true; /* as an older MDT sends it */
}

static size_t encode_open_req(const struct proto_open_req *q, uint8_t *buf, size_t cap)
{
    struct proto_enc e;
    proto_enc_init(&e, buf, cap);
    assert_int_equal(proto_enc_open_req(&e, q), 0);
    return e.len;
}

static size_t encode_open_rep(const struct proto_open_rep *r, uint8_t *buf, size_t cap)
{
    struct proto_enc e;
    proto_enc_init(&e, buf, cap);
    assert_int_equal(proto_enc_open_rep(&e, r), 0);
    return e.len;
}

/* ---- header ----------------------------------------------------------- */

static struct proto_hdr sample_hdr(void)
{
    struct proto_hdr h = {
        .magic = PROTO_MAGIC,
        .version = PROTO_VERSION,
        .opcode = PROTO_OP_OPEN,
        .flags = 0,
        .status = 0,
        .reqid = 0x0102030405060708ull,
        .client_id = 0xfedcba9876543210ull,
        .seq = 77,
        .payload_len = 1234,
        .bulk_len = 4096,
    };
    return h;
}

static int hdr_through_wire(const struct proto_hdr *in, struct proto_hdr *out)
{
    uint8_t buf[PROTO_HDR_LEN];
    proto_hdr_encode(in, buf);
    memset(out, 0xa5, sizeof(*out));
    return proto_hdr_decode(buf, out);
}

static void assert_hdr_same(const struct proto_hdr *a, const struct proto_hdr *b)
{
    assert_int_equal(a->magic, b->magic);
    assert_int_equal(a->version, b->version);
    assert_int_equal(a->opcode, b->opcode);
    assert_int_equal(a->flags, b->flags);
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->reqid, b->reqid);
    assert_int_equal(a->client_id, b->client_id);
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->payload_len, b->payload_len);
    assert_int_equal(a->bulk_len, b->bulk_len);
}

static void test_hdr_roundtrip(void **state)
{
    (void)state;
    struct proto_hdr h = sample_hdr(), out;
    assert_int_equal(hdr_through_wire(&h, &out), 0);
    assert_hdr_same(&h, &out);

    /* A reply carrying an error, with every wide field at its extreme. */
    h.flags = PROTO_FLAG_REPLY;
    h.status = -ENOENT;
    h.opcode = 0xffff;
    h.reqid = UINT64_MAX;
    h.client_id = 0;
    h.seq = UINT64_MAX - 1;
    h.payload_len = PROTO_MAX_REP_PAYLOAD;
    h.bulk_len = PROTO_MAX_BULK;
    assert_int_equal(hdr_through_wire(&h, &out), 0);
    assert_hdr_same(&h, &out);
    assert_int_equal(out.status, -ENOENT);

    h.status = INT32_MIN;
    assert_int_equal(hdr_through_wire(&h, &out), 0);
    assert_true(out.status == INT32_MIN);
}

/* The byte layout documented in proto.h is what other implementations and
 * older peers read, so it must not drift. */
static void test_hdr_wire_layout(void **state)
{
    (void)state;
    struct proto_hdr h = sample_hdr();
    h.status = -2;
    uint8_t b[PROTO_HDR_LEN];
    memset(b, 0xee, sizeof(b));
    proto_hdr_encode(&h, b);
    assert_memory_equal(b, "STRA", 4);
    assert_int_equal(b[4] | b[5] << 8, PROTO_VERSION);
    assert_int_equal(b[6] | b[7] << 8, PROTO_OP_OPEN);
    const uint8_t status[4] = {0xfe, 0xff, 0xff, 0xff};
    assert_memory_equal(b + 12, status, 4);
    const uint8_t reqid[8] = {8, 7, 6, 5, 4, 3, 2, 1};
    assert_memory_equal(b + 16, reqid, 8);
    assert_int_equal(b[32], 77);
    assert_int_equal(b[40] | b[41] << 8, 1234);
    assert_int_equal(b[44] | b[45] << 8 | b[46] << 16, 4096);
    const uint8_t zero[4] = {0};
    assert_memory_equal(b + 48, zero, 4);
    uint32_t crc = crc32c(0, b, 52);
    assert_int_equal(b[52] | b[53] << 8 | b[54] << 16 | (uint32_t)b[55] << 24, crc);
}

static void test_hdr_bad_magic(void **state)
{
    (void)state;
    struct proto_hdr h = sample_hdr(), out;
    /* The encoder writes whatever magic it is given, with a valid checksum,
     * so the decoder's magic check is what rejects these. */
    const uint32_t bad[] = {0, PROTO_MAGIC + 1, 0x53545241u /* byte-swapped */, UINT32_MAX};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        h.magic = bad[i];
        assert_int_equal(hdr_through_wire(&h, &out), -EBADMSG);
    }
}

static void test_hdr_flipped_bytes(void **state)
{
    (void)state;
    struct proto_hdr h = sample_hdr(), out;
    uint8_t good[PROTO_HDR_LEN], b[PROTO_HDR_LEN];
    proto_hdr_encode(&h, good);
    for (int i = 0; i < PROTO_HDR_LEN; i++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(b, good, sizeof(b));
            b[i] ^= (uint8_t)(1u << bit);
            int rc = proto_hdr_decode(b, &out);
            if (rc != -EBADMSG)
                fail_msg("bit %d of byte %d flipped: rc %d, want -EBADMSG", bit, i, rc);
        }
        memcpy(b, good, sizeof(b));
        b[i] ^= 0xff;
        assert_int_equal(proto_hdr_decode(b, &out), -EBADMSG);
    }
    /* A zeroed header (a peer that sent nothing useful) is rejected too. */
    memset(b, 0, sizeof(b));
    assert_int_equal(proto_hdr_decode(b, &out), -EBADMSG);
}

static void test_hdr_version_zero(void **state)
{
    (void)state;
    struct proto_hdr h = sample_hdr(), out;
    h.version = 0;
    assert_int_equal(hdr_through_wire(&h, &out), -EPROTO);
    h.flags = PROTO_FLAG_REPLY;
    assert_int_equal(hdr_through_wire(&h, &out), -EPROTO);
}

static void test_hdr_size_limits(void **state)
{
    (void)state;
    struct proto_hdr h = sample_hdr(), out;

    /* Requests: payload up to PROTO_MAX_REQ_PAYLOAD. */
    h.flags = 0;
    h.payload_len = PROTO_MAX_REQ_PAYLOAD;
    assert_int_equal(hdr_through_wire(&h, &out), 0);
    h.payload_len = PROTO_MAX_REQ_PAYLOAD + 1;
    assert_int_equal(hdr_through_wire(&h, &out), -EMSGSIZE);
    h.payload_len = PROTO_MAX_REP_PAYLOAD;
    assert_int_equal(hdr_through_wire(&h, &out), -EMSGSIZE);
    h.payload_len = UINT32_MAX;
    assert_int_equal(hdr_through_wire(&h, &out), -EMSGSIZE);

    /* Replies may be larger, up to PROTO_MAX_REP_PAYLOAD. */
    h.flags = PROTO_FLAG_REPLY;
    h.payload_len = PROTO_MAX_REQ_PAYLOAD + 1;
    assert_int_equal(hdr_through_wire(&h, &out), 0);
    h.payload_len = PROTO_MAX_REP_PAYLOAD;
    assert_int_equal(hdr_through_wire(&h, &out), 0);
    h.payload_len = PROTO_MAX_REP_PAYLOAD + 1;
    assert_int_equal(hdr_through_wire(&h, &out), -EMSGSIZE);
    h.payload_len = UINT32_MAX;
    assert_int_equal(hdr_through_wire(&h, &out), -EMSGSIZE);

    /* Bulk: the same limit both ways. */
    for (int dir = 0; dir < 2; dir++) {
        h.flags = dir ? PROTO_FLAG_REPLY : 0;
        h.payload_len = 0;
        h.bulk_len = PROTO_MAX_BULK;
        assert_int_equal(hdr_through_wire(&h, &out), 0);
        h.bulk_len = PROTO_MAX_BULK + 1;
        assert_int_equal(hdr_through_wire(&h, &out), -EMSGSIZE);
        h.bulk_len = UINT32_MAX;
        assert_int_equal(hdr_through_wire(&h, &out), -EMSGSIZE);
    }
}

static void test_hdr_garbage(void **state)
{
    (void)state;
    rng_seed(0x5eed0001);
    uint8_t b[PROTO_HDR_LEN];
    struct proto_hdr out;
    for (int it = 0; it < 20000; it++) {
        for (int i = 0; i < PROTO_HDR_LEN; i++)
            b[i] = (uint8_t)rng_next();
        if (it & 1) /* Get past the magic check half the time. */
            memcpy(b, "STRA", 4);
        assert_int_equal(proto_hdr_decode(b, &out), -EBADMSG);
    }
}

/* ---- message round trips ---------------------------------------------- */

static void roundtrip_open_req(uint32_t ngroups)
{
    struct proto_open_req q, q2;
    make_open_req(&q, ngroups);
    size_t len = encode_open_req(&q, wire, sizeof(wire));
    /* cred (12 + 4 per group), parent, path (2 + len), then six 32-bit fields
     * (the last, dom_len, appended): the wire size is part of the protocol. */
    assert_int_equal(len, 12 + 4 * ngroups + 8 + 2 + strlen("dir/sub/file.dat") + 6 * 4);
    /* dom_len last, little-endian. */
    const uint8_t dom_len[4] = {0, 0, 0x10, 0};
    assert_memory_equal(wire + len - 4, dom_len, 4);

    uint8_t *copy = exact_copy(wire, len);
    struct proto_dec d;
    proto_dec_init(&d, copy, len);
    memset(&q2, 0, sizeof(q2));
    assert_int_equal(proto_dec_open_req(&d, &q2), 0);
    assert_int_equal(d.off, len);
    assert_cred_same(&q.cred, &q2.cred);
    assert_int_equal(q2.parent, 1);
    assert_str_is(&q2.path, "dir/sub/file.dat");
    assert_int_equal(q2.flags, O_CREAT | O_RDWR | O_TRUNC);
    assert_int_equal(q2.mode, 0644);
    assert_int_equal(q2.stripe_count, -1);
    assert_int_equal(q2.stripe_size, 1u << 20);
    assert_int_equal(q2.stripe_offset, -1);
    assert_int_equal(q2.dom_len, 1u << 20);
    /* Decoded strings point into the message. */
    assert_true((const uint8_t *)q2.path.p >= copy && (const uint8_t *)q2.path.p < copy + len);
    free(copy);
}

/* MKNOD (48): cred, parent, path, mode, rdev, in that order on the wire,
 * a device number of more than 32 bits kept whole. */
static void test_mknod_wire(void **state)
{
    (void)state;
    struct proto_mknod_req q, q2;
    memset(&q, 0, sizeof(q));
    make_cred(&q.cred, 0);
    q.parent = 0x0001000000000002ull;
    q.path = proto_str_c("dir/fifo");
    q.mode = 0010644; /* S_IFIFO | 0644 */
    q.rdev = 0x123456789abcdef0ull;
    struct proto_enc e;
    proto_enc_init(&e, wire, sizeof(wire));
    assert_int_equal(proto_enc_mknod_req(&e, &q), 0);
    /* The last 12 bytes: mode u32, rdev u64, little-endian. */
    const uint8_t tail[] = {0xa4, 0x11, 0, 0, 0xf0, 0xde, 0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12};
    assert_true(e.len > sizeof(tail));
    assert_memory_equal(wire + e.len - sizeof(tail), tail, sizeof(tail));
    struct proto_dec d;
    proto_dec_init(&d, wire, e.len);
    assert_int_equal(proto_dec_mknod_req(&d, &q2), 0);
    assert_int_equal(q2.parent, q.parent);
    assert_int_equal(q2.mode, q.mode);
    assert_int_equal(q2.rdev, q.rdev);
    assert_int_equal(q2.path.len, 8);
    assert_memory_equal(q2.path.p, "dir/fifo", 8);
    /* One field short: the decoder refuses it. */
    proto_dec_init(&d, wire, e.len - 1);
    assert_int_not_equal(proto_dec_mknod_req(&d, &q2), 0);
    assert_int_equal(PROTO_OP_MKNOD, 48);
    assert_string_equal(proto_op_name(48), "MKNOD");
}

static void test_open_req_roundtrip(void **state)
{
    (void)state;
    roundtrip_open_req(0);
    roundtrip_open_req(5);
    roundtrip_open_req(PROTO_MAX_GROUPS);
}

/* OPEN's appended wb: asked for in a request, the grant and room in a
 * reply; a message that ends before it reads it as absent, which says no
 * grant; a wb of another length is refused. */
/* DOM_WRITES's items read back as written; a cut list does not parse. */
static void test_dom_writes_items(void **state)
{
    (void)state;
    const uint8_t crcs[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct proto_dom_writes_item in[2] = {
        {.ino = 0x0102030405060708ull, .offset = 65535, .mtime_ns = -1, .len = 7, .gen = 3},
        {.ino = 9, .offset = 0, .mtime_ns = 1234567890123ll, .len = 1u << 20, .gen = 255}};
    in[0].crcs = (struct proto_blob){crcs, 4};
    in[1].crcs = (struct proto_blob){crcs, 8};
    struct proto_enc e;
    proto_enc_init(&e, wire, sizeof(wire));
    for (int i = 0; i < 2; i++)
        proto_dom_writes_item_put(&e, &in[i]);
    assert_int_equal(e.err, 0);
    struct proto_dec d;
    proto_dec_init(&d, wire, e.len);
    for (int i = 0; i < 2; i++) {
        struct proto_dom_writes_item out;
        assert_int_equal(proto_dom_writes_item_get(&d, &out), 0);
        assert_int_equal(out.ino, in[i].ino);
        assert_int_equal(out.offset, in[i].offset);
        assert_int_equal(out.mtime_ns, in[i].mtime_ns);
        assert_int_equal(out.len, in[i].len);
        assert_int_equal(out.gen, in[i].gen);
        assert_int_equal(out.crcs.len, in[i].crcs.len);
        assert_memory_equal(out.crcs.p, in[i].crcs.p, in[i].crcs.len);
    }
    assert_int_equal(d.off, d.len);
    struct proto_dom_writes_item out;
    proto_dec_init(&d, wire, e.len - 1);
    assert_int_equal(proto_dom_writes_item_get(&d, &out), 0);
    assert_int_equal(proto_dom_writes_item_get(&d, &out), -EBADMSG);
}

static void test_open_wb(void **state)
{
    (void)state;
    struct proto_open_req q, q2;
    make_open_req(&q, 2);
    size_t old = encode_open_req(&q, wire, sizeof(wire));
    uint8_t want = PROTO_OPEN_WANT_WB;
    q.wb = (struct proto_tblob){&want, 1, false};
    size_t len = encode_open_req(&q, wire, sizeof(wire));
    assert_int_equal(len, old + 4 + 1);
    struct proto_dec d;
    proto_dec_init(&d, wire, len);
    assert_int_equal(proto_dec_open_req(&d, &q2), 0);
    assert_false(q2.wb.absent);
    assert_int_equal(q2.wb.len, 1);
    assert_int_equal(q2.wb.p[0], PROTO_OPEN_WANT_WB);
    proto_dec_init(&d, wire, old);
    assert_int_equal(proto_dec_open_req(&d, &q2), 0);
    assert_true(q2.wb.absent);

    struct proto_open_rep r, r2;
    make_open_rep(&r);
    size_t rold = encode_open_rep(&r, wire, sizeof(wire));
    uint8_t grant[PROTO_OPEN_WB_LEN];
    struct proto_open_wb w = {.ms = 10000,
                              .id = 0x0102030405060708ull,
                              .dom_room = 17ull << 30,
                              .ino_lo = (3ull << 48) | 4096,
                              .ino_n = 1024};
    proto_open_wb_put(grant, &w);
    r.wb = (struct proto_tblob){grant, sizeof(grant), false};
    len = encode_open_rep(&r, wire, sizeof(wire));
    assert_int_equal(len, rold + 4 + PROTO_OPEN_WB_LEN);
    proto_dec_init(&d, wire, len);
    assert_int_equal(proto_dec_open_rep(&d, &r2), 0);
    struct proto_open_wb w2;
    assert_int_equal(proto_open_wb_get(&r2.wb, &w2), 0);
    assert_int_equal(w2.ms, 10000);
    assert_int_equal(w2.id, 0x0102030405060708ull);
    assert_int_equal(w2.dom_room, 17ull << 30);
    assert_int_equal(w2.ino_lo, (3ull << 48) | 4096);
    assert_int_equal(w2.ino_n, 1024);
    /* Little-endian on the wire: the term first. */
    assert_int_equal(proto_le32(wire + rold + 4), 10000);
    /* A peer of before ranges sends the first 20 bytes: no range. */
    struct proto_tblob v1 = {grant, PROTO_OPEN_WB_LEN_V1, false};
    assert_int_equal(proto_open_wb_get(&v1, &w2), 0);
    assert_int_equal(w2.dom_room, 17ull << 30);
    assert_int_equal(w2.ino_lo, 0);
    assert_int_equal(w2.ino_n, 0);
    proto_dec_init(&d, wire, rold);
    assert_int_equal(proto_dec_open_rep(&d, &r2), 0);
    assert_int_equal(proto_open_wb_get(&r2.wb, &w2), -ENODATA);
    assert_int_equal(w2.ms, 0);
    struct proto_tblob odd = {grant, sizeof(grant) - 1, false};
    assert_int_equal(proto_open_wb_get(&odd, &w2), -EBADMSG);
    assert_int_equal(w2.ms, 0);
}

static void test_open_rep_roundtrip(void **state)
{
    (void)state;
    struct proto_open_rep r, r2;
    make_open_rep(&r);
    size_t len = encode_open_rep(&r, wire, sizeof(wire));
    uint8_t *copy = exact_copy(wire, len);
    struct proto_dec d;
    proto_dec_init(&d, copy, len);
    memset(&r2, 0, sizeof(r2));
    assert_int_equal(proto_dec_open_rep(&d, &r2), 0);
    assert_int_equal(d.off, len);
    assert_attr_same(&r.attr, &r2.attr);
    assert_layout_same(&r.layout, &r2.layout);
    assert_int_equal(r2.layout.comp[1].end, LAYOUT_END_EOF);
    assert_int_equal(r2.created, 1);
    assert_int_equal(r2.old_size, 123456789);
    assert_int_equal(r2.marked, 1);
    /* dom_crcs last: a BLOB, u32 length then the bytes. */
    assert_int_equal(r2.dom_crcs.len, sizeof(open_crcs));
    assert_memory_equal(r2.dom_crcs.p, open_crcs, sizeof(open_crcs));
    assert_memory_equal(copy + len - sizeof(open_crcs), open_crcs, sizeof(open_crcs));
    assert_int_equal(proto_le32(copy + len - sizeof(open_crcs) - 4), sizeof(open_crcs));
    free(copy);
}

static void heartbeat_roundtrip(uint32_t ntargets)
{
    static struct proto_heartbeat_req q, q2;
    memset(&q, 0, sizeof(q));
    q.kind = PROTO_NODE_STOR;
    q.node = proto_str_c("stor-03");
    q.host = proto_str_c("10.0.0.3");
    q.port = 7003;
    q.incarnation = 0xabcdef0123456789ull;
    q.targets.n = ntargets;
    for (uint32_t i = 0; i < ntargets; i++) {
        struct proto_tstat *t = &q.targets.t[i];
        t->index = 1000 + i;
        t->bytes_total = (1ull << 40) + i;
        t->bytes_used = (1ull << 30) * i;
        t->bytes_avail = t->bytes_total - t->bytes_used;
        t->inodes_total = 1u << 24;
        t->inodes_used = i * 3;
    }
    struct proto_enc e;
    proto_enc_init(&e, wire, sizeof(wire));
    assert_int_equal(proto_enc_heartbeat_req(&e, &q), 0);
    assert_true(e.len <= PROTO_MAX_REQ_PAYLOAD);

    uint8_t *copy = exact_copy(wire, e.len);
    struct proto_dec d;
    proto_dec_init(&d, copy, e.len);
    memset(&q2, 0, sizeof(q2));
    assert_int_equal(proto_dec_heartbeat_req(&d, &q2), 0);
    assert_int_equal(d.off, e.len);
    assert_int_equal(q2.kind, PROTO_NODE_STOR);
    assert_str_is(&q2.node, "stor-03");
    assert_str_is(&q2.host, "10.0.0.3");
    assert_int_equal(q2.port, 7003);
    assert_int_equal(q2.incarnation, 0xabcdef0123456789ull);
    assert_tstats_same(&q.targets, &q2.targets);
    free(copy);

    struct proto_heartbeat_rep r = {.epoch = 42}, r2 = {0};
    proto_enc_init(&e, wire, sizeof(wire));
    assert_int_equal(proto_enc_heartbeat_rep(&e, &r), 0);
    proto_dec_init(&d, wire, e.len);
    assert_int_equal(proto_dec_heartbeat_rep(&d, &r2), 0);
    assert_int_equal(r2.epoch, 42);
}

static void test_heartbeat_roundtrip(void **state)
{
    (void)state;
    heartbeat_roundtrip(0);
    heartbeat_roundtrip(3);
    heartbeat_roundtrip(PROTO_MAX_TARGETS);
}

static void test_readdir_roundtrip(void **state)
{
    (void)state;
    static char longname[PROTO_MAX_NAME + 1];
    memset(longname, 'n', PROTO_MAX_NAME);
    const char *names[] = {".", "..", "a", "file with spaces", "caf\xc3\xa9", longname};
    const uint8_t types[] = {DT_DIR, DT_DIR, DT_REG, DT_REG, DT_LNK, DT_REG};
    const size_t n = sizeof(names) / sizeof(names[0]);

    uint8_t ents[4096];
    struct proto_enc e;
    proto_enc_init(&e, ents, sizeof(ents));
    for (size_t i = 0; i < n; i++) {
        struct proto_dirent de = {.ino = 100 + i,
                                  .next_cookie = 0x9e3779b97f4a7c15ull * (i + 1),
                                  .type = types[i],
                                  .name = proto_str_c(names[i])};
        proto_put_dirent(&e, &de);
    }
    assert_int_equal(e.err, 0);

    struct proto_readdir_rep r = {
        .eof = 1, .count = (uint32_t)n, .entries = {.p = ents, .len = (uint32_t)e.len}};
    struct proto_readdir_rep r2;
    struct proto_enc e2;
    proto_enc_init(&e2, wire, sizeof(wire));
    assert_int_equal(proto_enc_readdir_rep(&e2, &r), 0);
    uint8_t *copy = exact_copy(wire, e2.len);
    struct proto_dec d;
    proto_dec_init(&d, copy, e2.len);
    memset(&r2, 0, sizeof(r2));
    assert_int_equal(proto_dec_readdir_rep(&d, &r2), 0);
    assert_int_equal(d.off, e2.len);
    assert_int_equal(r2.eof, 1);
    assert_int_equal(r2.count, n);
    assert_blob_same(&r.entries, &r2.entries);

    struct proto_dec de;
    proto_dec_init(&de, r2.entries.p, r2.entries.len);
    for (size_t i = 0; i < r2.count; i++) {
        struct proto_dirent ent;
        proto_get_dirent(&de, &ent);
        assert_int_equal(de.err, 0);
        assert_int_equal(ent.ino, 100 + i);
        assert_int_equal(ent.next_cookie, 0x9e3779b97f4a7c15ull * (i + 1));
        assert_int_equal(ent.type, types[i]);
        assert_str_is(&ent.name, names[i]);
    }
    assert_int_equal(de.off, de.len);
    /* One more entry than the blob holds is an error, not garbage. */
    struct proto_dirent extra;
    proto_get_dirent(&de, &extra);
    assert_int_equal(de.err, -EBADMSG);
    free(copy);

    /* The request side. */
    struct proto_readdir_req q = {.ino = 2, .cookie = UINT64_MAX, .max_bytes = 65536}, q2;
    make_cred(&q.cred, 2);
    proto_enc_init(&e2, wire, sizeof(wire));
    assert_int_equal(proto_enc_readdir_req(&e2, &q), 0);
    proto_dec_init(&d, wire, e2.len);
    assert_int_equal(proto_dec_readdir_req(&d, &q2), 0);
    assert_cred_same(&q.cred, &q2.cred);
    assert_int_equal(q2.ino, 2);
    assert_int_equal(q2.cookie, UINT64_MAX);
    assert_int_equal(q2.max_bytes, 65536);
}

/* Entry names are one path component: 1..PROTO_MAX_NAME bytes, on both sides. */
static void test_dirent_bad_names(void **state)
{
    (void)state;
    static char toolong[PROTO_MAX_NAME + 2];
    memset(toolong, 'x', PROTO_MAX_NAME + 1);
    const char *bad[] = {"", toolong};
    for (size_t i = 0; i < 2; i++) {
        uint8_t buf[1024];
        struct proto_enc e;
        proto_enc_init(&e, buf, sizeof(buf));
        struct proto_dirent de = {
            .ino = 5, .next_cookie = 6, .type = DT_REG, .name = proto_str_c(bad[i])};
        /* The encoder refuses it... */
        proto_put_dirent(&e, &de);
        assert_int_equal(e.err, -EINVAL);
        /* ...and a peer that sends it anyway is refused by the decoder. */
        proto_enc_init(&e, buf, sizeof(buf));
        proto_put_U64(&e, &de.ino);
        proto_put_U64(&e, &de.next_cookie);
        proto_put_U8(&e, &de.type);
        proto_put_STR(&e, &de.name);
        assert_int_equal(e.err, 0);
        struct proto_dec d;
        proto_dec_init(&d, buf, e.len);
        struct proto_dirent out;
        proto_get_dirent(&d, &out);
        assert_int_equal(d.err, -EBADMSG);
    }
}

static void test_setxattr_roundtrip(void **state)
{
    (void)state;
    uint8_t value[1000];
    for (size_t i = 0; i < sizeof(value); i++)
        value[i] = (uint8_t)(i * 37); /* includes NUL bytes */
    const uint32_t lens[] = {0, 1, 256, sizeof(value)};
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        struct proto_setxattr_req q = {.ino = 99,
                                       .name = proto_str_c("user.stria.test"),
                                       .value = {.p = value, .len = lens[k]},
                                       .flags = 2};
        struct proto_setxattr_req q2;
        make_cred(&q.cred, 1);
        struct proto_enc e;
        proto_enc_init(&e, wire, sizeof(wire));
        assert_int_equal(proto_enc_setxattr_req(&e, &q), 0);
        uint8_t *copy = exact_copy(wire, e.len);
        struct proto_dec d;
        proto_dec_init(&d, copy, e.len);
        memset(&q2, 0, sizeof(q2));
        assert_int_equal(proto_dec_setxattr_req(&d, &q2), 0);
        assert_int_equal(d.off, e.len);
        assert_cred_same(&q.cred, &q2.cred);
        assert_int_equal(q2.ino, 99);
        assert_str_is(&q2.name, "user.stria.test");
        assert_blob_same(&q.value, &q2.value);
        assert_int_equal(q2.flags, 2);
        free(copy);
    }
}

/* PROTO_MAX_XATTR is the largest xattr value Stria stores (Linux allows
 * 64 KiB too), and SETXATTR carries the value in its payload. A request
 * setting a value of that size with a long name must therefore fit within
 * PROTO_MAX_REQ_PAYLOAD, or setfattr of a legal value fails on the wire. */
static void test_setxattr_max_value_fits_request(void **state)
{
    (void)state;
    static uint8_t value[PROTO_MAX_XATTR];
    static char name[PROTO_MAX_NAME + 1];
    memset(value, 0x5a, sizeof(value));
    memset(name, 'u', PROTO_MAX_NAME);
    struct proto_setxattr_req q = {
        .ino = 1, .name = proto_str_c(name), .value = {.p = value, .len = PROTO_MAX_XATTR}};
    make_cred(&q.cred, PROTO_MAX_GROUPS);
    struct proto_enc e;
    proto_enc_init(&e, wire, PROTO_MAX_REQ_PAYLOAD);
    int rc = proto_enc_setxattr_req(&e, &q);
    if (rc)
        fail_msg(
            "SETXATTR with a %u-byte value needs %zu payload bytes; requests are "
            "limited to %u (rc %d)",
            PROTO_MAX_XATTR,
            (size_t)(12 + 4 * PROTO_MAX_GROUPS + 8 + 2 + PROTO_MAX_NAME + 4 + PROTO_MAX_XATTR + 4),
            PROTO_MAX_REQ_PAYLOAD, rc);
}

/* Integers are little-endian, strings carry a u16 length and blobs a u32. */
static void test_field_wire_format(void **state)
{
    (void)state;
    uint8_t b[64];
    struct proto_enc e;
    proto_enc_init(&e, b, sizeof(b));
    uint16_t u16 = 0x0102;
    uint32_t u32 = 0x01020304;
    uint64_t u64 = 0x0102030405060708ull;
    int32_t i32 = -2;
    struct proto_str s = proto_str_c("ab");
    struct proto_blob bl = {(const uint8_t *)"xyz", 3};
    proto_put_U16(&e, &u16);
    proto_put_U32(&e, &u32);
    proto_put_U64(&e, &u64);
    proto_put_I32(&e, &i32);
    proto_put_STR(&e, &s);
    proto_put_BLOB(&e, &bl);
    assert_int_equal(e.err, 0);
    const uint8_t want[] = {2,    1,    4,    3, 2, 1,   8,   7, 6, 5, 4, 3,   2,   1,  0xfe,
                            0xff, 0xff, 0xff, 2, 0, 'a', 'b', 3, 0, 0, 0, 'x', 'y', 'z'};
    assert_int_equal(e.len, sizeof(want));
    assert_memory_equal(b, want, sizeof(want));
}

/* ---- every message, generated from the table -------------------------- */

/* Fill each field kind with varied, valid values. */
static char long_str[PROTO_MAX_STR + 1];
static uint8_t blob_pool[4096];

static void fill_U8(uint8_t *v)
{
    *v = (uint8_t)rng_next();
}
static void fill_U16(uint16_t *v)
{
    *v = (uint16_t)rng_next();
}
static void fill_U32(uint32_t *v)
{
    *v = (uint32_t)rng_next();
}
static void fill_U64(uint64_t *v)
{
    *v = rng_next();
}
static void fill_I32(int32_t *v)
{
    *v = (int32_t)(uint32_t)rng_next();
}
static void fill_I64(int64_t *v)
{
    *v = (int64_t)rng_next();
}
static void fill_STR(struct proto_str *v)
{
    static const char *pool[] = {"", "x", "some/path/name", "caf\xc3\xa9", NULL};
    size_t i = rng_below(5);
    *v = proto_str_c(pool[i] ? pool[i] : long_str);
}
static void fill_BLOB(struct proto_blob *v)
{
    v->len = (uint32_t)rng_below(300);
    v->p = blob_pool + rng_below(sizeof(blob_pool) - v->len);
}
static void fill_TBLOB(struct proto_tblob *v)
{
    struct proto_blob b;
    fill_BLOB(&b);
    *v = (struct proto_tblob){b.p, b.len, false};
}
static void fill_CRED(struct proto_cred *v)
{
    make_cred(v, (uint32_t)rng_below(PROTO_MAX_GROUPS + 1));
    v->uid = (uint32_t)rng_next();
}
static void fill_ATTR(struct proto_attr *v)
{
    uint64_t *w[] = {&v->ino, &v->size, &v->blocks, &v->rdev};
    for (size_t i = 0; i < 4; i++)
        *w[i] = rng_next();
    v->mode = (uint32_t)rng_next();
    v->nlink = (uint32_t)rng_next();
    v->uid = (uint32_t)rng_next();
    v->gid = (uint32_t)rng_next();
    v->atime_ns = (int64_t)rng_next();
    v->mtime_ns = (int64_t)rng_next();
    v->ctime_ns = (int64_t)rng_next();
}
static void fill_LAYOUT(struct layout *v)
{
    memset(v, 0, sizeof(*v));
    v->ncomp = (uint16_t)(1 + rng_below(LAYOUT_MAX_COMP));
    uint64_t start = 0;
    for (uint16_t i = 0; i < v->ncomp; i++) {
        struct layout_comp *c = &v->comp[i];
        c->start = start;
        c->end = i + 1 == v->ncomp ? LAYOUT_END_EOF : start + ((1 + rng_below(64)) << 16);
        c->stripe_size = (uint32_t)((1 + rng_below(64)) << 16);
        c->stripe_count = (uint16_t)(rng_below(8) ? 1 + rng_below(8) : LAYOUT_MAX_STRIPES);
        for (uint16_t s = 0; s < c->stripe_count; s++)
            c->groups[s] = (uint32_t)rng_next();
        start = c->end;
    }
}
static void fill_TSTATS(struct proto_tstats *v)
{
    v->n = (uint32_t)rng_below(4);
    for (uint32_t i = 0; i < v->n; i++) {
        struct proto_tstat *t = &v->t[i];
        t->index = (uint32_t)rng_next();
        t->bytes_total = rng_next();
        t->bytes_used = rng_next();
        t->bytes_avail = rng_next();
        t->inodes_total = rng_next();
        t->inodes_used = rng_next();
    }
}

static void fill_LEASES(struct proto_leases *v)
{
    v->instance = rng_next();
    v->n = (uint32_t)rng_below(PROTO_MAX_LEASES + 1);
    for (uint32_t i = 0; i < v->n; i++) {
        v->l[i].ino = rng_next();
        v->l[i].gen_before = rng_next();
        v->l[i].gen = rng_next();
        v->l[i].ms = (uint32_t)rng_next();
        v->l[i].has_attr = (uint8_t)rng_below(2);
        if (v->l[i].has_attr)
            fill_ATTR(&v->l[i].attr);
    }
}
static void same_LEASES(const struct proto_leases *a, const struct proto_leases *b)
{
    assert_int_equal(a->instance, b->instance);
    assert_int_equal(a->n, b->n);
    for (uint32_t i = 0; i < a->n; i++) {
        assert_int_equal(a->l[i].ino, b->l[i].ino);
        assert_int_equal(a->l[i].gen_before, b->l[i].gen_before);
        assert_int_equal(a->l[i].gen, b->l[i].gen);
        assert_int_equal(a->l[i].ms, b->l[i].ms);
        assert_int_equal(a->l[i].has_attr, b->l[i].has_attr);
        if (a->l[i].has_attr)
            assert_attr_same(&a->l[i].attr, &b->l[i].attr);
    }
}

static void same_U8(const uint8_t *a, const uint8_t *b)
{
    assert_int_equal(*a, *b);
}
static void same_U16(const uint16_t *a, const uint16_t *b)
{
    assert_int_equal(*a, *b);
}
static void same_U32(const uint32_t *a, const uint32_t *b)
{
    assert_int_equal(*a, *b);
}
static void same_U64(const uint64_t *a, const uint64_t *b)
{
    assert_int_equal(*a, *b);
}
static void same_I32(const int32_t *a, const int32_t *b)
{
    assert_true(*a == *b);
}
static void same_I64(const int64_t *a, const int64_t *b)
{
    assert_true(*a == *b);
}
#define same_STR  assert_str_same
#define same_BLOB assert_blob_same
static void same_TBLOB(const struct proto_tblob *a, const struct proto_tblob *b)
{
    assert_int_equal(a->absent, b->absent);
    assert_int_equal(a->len, b->len);
    if (a->len)
        assert_memory_equal(a->p, b->p, a->len);
}
#define same_CRED   assert_cred_same
#define same_ATTR   assert_attr_same
#define same_LAYOUT assert_layout_same
#define same_TSTATS assert_tstats_same

/*
 * Invariants of anything a decoder accepted: counts within their maxima and
 * strings and blobs inside the message. Buffers from the network are only
 * ever looked at through these fields, so this is what keeps a hostile
 * message from steering a daemon out of bounds. Fixed-size kinds can hold
 * any value.
 */
#define check_fixed(v, buf, len) ((void)(v), (void)(buf), (void)(len))
#define check_U8                 check_fixed
#define check_U16                check_fixed
#define check_U32                check_fixed
#define check_U64                check_fixed
#define check_I32                check_fixed
#define check_I64                check_fixed
#define check_ATTR               check_fixed

static void check_span(const void *p, size_t n, const uint8_t *buf, size_t len)
{
    const uint8_t *q = p;
    if (n == 0)
        return;
    if (q < buf || q > buf + len || n > (size_t)(buf + len - q))
        fail_msg("decoded span of %zu bytes lies outside the %zu-byte message", n, len);
}
static void check_STR(const struct proto_str *v, const uint8_t *buf, size_t len)
{
    assert_true(v->len <= PROTO_MAX_STR);
    check_span(v->p, v->len, buf, len);
}
static void check_BLOB(const struct proto_blob *v, const uint8_t *buf, size_t len)
{
    check_span(v->p, v->len, buf, len);
}
static void check_TBLOB(const struct proto_tblob *v, const uint8_t *buf, size_t len)
{
    if (!v->absent)
        check_span(v->p, v->len, buf, len);
}
static void check_CRED(const struct proto_cred *v, const uint8_t *buf, size_t len)
{
    (void)buf, (void)len;
    assert_true(v->ngroups <= PROTO_MAX_GROUPS);
}
static void check_LAYOUT(const struct layout *v, const uint8_t *buf, size_t len)
{
    (void)buf, (void)len;
    assert_true(v->ncomp <= LAYOUT_MAX_COMP);
    for (uint16_t i = 0; i < v->ncomp; i++) {
        if (v->comp[i].type & LAYOUT_F_PENDING) {
            /* What it asks for: 0 default, all, or a count. */
            assert_true(v->comp[i].stripe_count <= LAYOUT_MAX_STRIPES ||
                        v->comp[i].stripe_count == LAYOUT_COUNT_ALL);
        } else {
            assert_in_range(v->comp[i].stripe_count, 1, LAYOUT_MAX_STRIPES);
            assert_true(v->comp[i].stripe_size > 0);
        }
        assert_true(v->comp[i].start < v->comp[i].end);
    }
}
static void check_LEASES(const struct proto_leases *v, const uint8_t *buf, size_t len)
{
    (void)buf, (void)len;
    assert_true(v->n <= PROTO_MAX_LEASES);
}
static void check_TSTATS(const struct proto_tstats *v, const uint8_t *buf, size_t len)
{
    (void)buf, (void)len;
    assert_true(v->n <= PROTO_MAX_TARGETS);
}

#define FILL_FIELD(kind, fname)  fill_##kind(&m->fname);
#define SAME_FIELD(kind, fname)  same_##kind(&m->fname, &m2->fname);
#define CHECK_FIELD(kind, fname) check_##kind(&m->fname, buf, len);
/* Whether a message has a field an older peer's message may end before. */
#define TAIL_FIELD(kind, fname) || !strcmp(#kind, "TBLOB")

/*
 * For one direction of one message (struct S, codecs ENC/DEC, field list
 * FIELDS):
 *   NAME_rt:   fill, encode, decode, compare, re-encode to the same bytes,
 *              then every truncation must fail.
 *   NAME_dec:  decode arbitrary bytes; whatever is accepted must satisfy the
 *              invariants and re-encode to exactly the bytes consumed.
 *              NAME_hits counts the non-empty messages accepted.
 */
#define GEN_DIR(S, ENC, DEC, FIELDS, NAME)                                                         \
    static void NAME##_rt(void)                                                                    \
    {                                                                                              \
        static struct S m_, m2_;                                                                   \
        struct S *m = &m_, *m2 = &m2_;                                                             \
        memset(m, 0, sizeof(*m));                                                                  \
        memset(m2, 0, sizeof(*m2));                                                                \
        FIELDS(FILL_FIELD)                                                                         \
        struct proto_enc e;                                                                        \
        proto_enc_init(&e, wire, sizeof(wire));                                                    \
        assert_int_equal(ENC(&e, m), 0);                                                           \
        size_t len = e.len;                                                                        \
        uint8_t *buf = exact_copy(wire, len);                                                      \
        struct proto_dec d;                                                                        \
        proto_dec_init(&d, buf, len);                                                              \
        assert_int_equal(DEC(&d, m2), 0);                                                          \
        assert_int_equal(d.off, len);                                                              \
        FIELDS(SAME_FIELD)                                                                         \
        proto_enc_init(&e, wire2, sizeof(wire2));                                                  \
        assert_int_equal(ENC(&e, m2), 0);                                                          \
        assert_int_equal(e.len, len);                                                              \
        if (len)                                                                                   \
            assert_memory_equal(wire2, buf, len);                                                  \
        /* Each prefix, placed so it ends where the allocation ends. */                            \
        for (size_t n = 0; n < len; n++) {                                                         \
            memmove(buf + len - n, wire, n);                                                       \
            proto_dec_init(&d, buf + len - n, n);                                                  \
            int rc = DEC(&d, m2);                                                                  \
            if (rc == 0 && (0 FIELDS(TAIL_FIELD)) && d.off == n) {                                 \
                /* An older peer's message, which ends before the appended                         \
                 * fields: it must read as it was written. */                                      \
                proto_enc_init(&e, wire2, sizeof(wire2));                                          \
                assert_int_equal(ENC(&e, m2), 0);                                                  \
                assert_int_equal(e.len, n);                                                        \
                continue;                                                                          \
            }                                                                                      \
            if (rc != -EBADMSG || d.off > n)                                                       \
                fail_msg(#NAME ": %zu of %zu bytes: rc %d, off %zu", n, len, rc, d.off);           \
        }                                                                                          \
        free(buf);                                                                                 \
    }                                                                                              \
    static unsigned NAME##_hits;                                                                   \
    static bool NAME##_has_fields(void)                                                            \
    {                                                                                              \
        static struct S z;                                                                         \
        struct proto_enc e;                                                                        \
        proto_enc_init(&e, wire2, sizeof(wire2));                                                  \
        assert_int_equal(ENC(&e, &z), 0);                                                          \
        return e.len > 0;                                                                          \
    }                                                                                              \
    static void NAME##_dec(const uint8_t *buf, size_t len)                                         \
    {                                                                                              \
        static struct S m_;                                                                        \
        struct S *m = &m_;                                                                         \
        struct proto_dec d;                                                                        \
        proto_dec_init(&d, buf, len);                                                              \
        int rc = DEC(&d, m);                                                                       \
        if (rc != 0 && rc != -EBADMSG)                                                             \
            fail_msg(#NAME ": rc %d", rc);                                                         \
        if (d.off > len)                                                                           \
            fail_msg(#NAME ": consumed %zu of %zu bytes", d.off, len);                             \
        if (rc)                                                                                    \
            return;                                                                                \
        FIELDS(CHECK_FIELD)                                                                        \
        struct proto_enc e;                                                                        \
        proto_enc_init(&e, wire2, sizeof(wire2));                                                  \
        assert_int_equal(ENC(&e, m), 0);                                                           \
        if (e.len != d.off || (e.len && memcmp(wire2, buf, e.len)))                                \
            fail_msg(#NAME ": accepted %zu bytes that re-encode differently", d.off);              \
        NAME##_hits += d.off > 0;                                                                  \
    }

#define GEN_MSG(NAME, num, lname)                                                                  \
    GEN_DIR(proto_##lname##_req, proto_enc_##lname##_req, proto_dec_##lname##_req,                 \
            MSG_##NAME##_REQ, lname##_req)                                                         \
    GEN_DIR(proto_##lname##_rep, proto_enc_##lname##_rep, proto_dec_##lname##_rep,                 \
            MSG_##NAME##_REP, lname##_rep)
PROTO_MESSAGES(GEN_MSG)
#undef GEN_MSG

static void init_pools(void)
{
    memset(long_str, 'L', PROTO_MAX_STR);
    long_str[PROTO_MAX_STR] = '\0';
    for (size_t i = 0; i < sizeof(blob_pool); i++)
        blob_pool[i] = (uint8_t)(i * 131 + 7);
}

static void test_every_message_roundtrip(void **state)
{
    (void)state;
    init_pools();
    rng_seed(0x5eed0002);
    for (int round = 0; round < 8; round++) {
#define RT(NAME, num, lname)                                                                       \
    lname##_req_rt();                                                                              \
    lname##_rep_rt();
        PROTO_MESSAGES(RT)
#undef RT
    }
}

/* ---- encoder and decoder limits --------------------------------------- */

static void test_encode_too_small(void **state)
{
    (void)state;
    struct proto_open_req q;
    struct proto_open_rep r;
    make_open_req(&q, 4);
    make_open_rep(&r);
    size_t qlen = encode_open_req(&q, wire, sizeof(wire));
    size_t rlen = encode_open_rep(&r, wire, sizeof(wire));

    for (int which = 0; which < 2; which++) {
        size_t len = which ? rlen : qlen;
        for (size_t cap = 0; cap < len; cap++) {
            /* Exactly cap bytes of heap, so a write past the end is caught. */
            uint8_t *b = malloc(cap ? cap : 1);
            assert_non_null(b);
            struct proto_enc e;
            proto_enc_init(&e, b, cap);
            int rc = which ? proto_enc_open_rep(&e, &r) : proto_enc_open_req(&e, &q);
            if (rc != -EMSGSIZE || e.err != -EMSGSIZE || e.len > cap)
                fail_msg("cap %zu of %zu: rc %d len %zu", cap, len, rc, e.len);
            free(b);
        }
    }

    /* Exactly enough room is enough. */
    uint8_t *b = malloc(qlen);
    assert_non_null(b);
    struct proto_enc e;
    proto_enc_init(&e, b, qlen);
    assert_int_equal(proto_enc_open_req(&e, &q), 0);
    assert_int_equal(e.len, qlen);
    free(b);
}

/* Every prefix of a valid OPEN request and reply is rejected without
 * reading past its end (each field is mandatory, so nothing short decodes). */
static void truncations(const uint8_t *msg, size_t len, int rep)
{
    for (size_t n = 0; n < len; n++) {
        uint8_t *b = exact_copy(msg, n);
        struct proto_dec d;
        proto_dec_init(&d, b, n);
        int rc;
        if (rep) {
            struct proto_open_rep r;
            rc = proto_dec_open_rep(&d, &r);
        } else {
            struct proto_open_req q;
            rc = proto_dec_open_req(&d, &q);
        }
        if (rc != -EBADMSG || d.off > n)
            fail_msg("%s prefix of %zu/%zu bytes: rc %d off %zu", rep ? "reply" : "request", n, len,
                     rc, d.off);
        free(b);
    }
}

static void test_open_truncations(void **state)
{
    (void)state;
    struct proto_open_req q;
    struct proto_open_rep r;
    uint8_t msg[8192];
    make_open_req(&q, PROTO_MAX_GROUPS);
    truncations(msg, encode_open_req(&q, msg, sizeof(msg)), 0);
    make_open_rep(&r);
    truncations(msg, encode_open_rep(&r, msg, sizeof(msg)), 1);
}

static void test_cred_too_many_groups(void **state)
{
    (void)state;
    uint8_t b[1024];
    struct proto_enc e;
    struct proto_dec d;
    struct proto_cred c;

    make_cred(&c, PROTO_MAX_GROUPS);
    c.ngroups = PROTO_MAX_GROUPS + 1;
    proto_enc_init(&e, b, sizeof(b));
    proto_put_CRED(&e, &c);
    assert_int_not_equal(e.err, 0);
    struct proto_getattr_req q = {.cred = c, .ino = 1};
    proto_enc_init(&e, b, sizeof(b));
    assert_int_not_equal(proto_enc_getattr_req(&e, &q), 0);

    /* Hand-built: ngroups 33 followed by 33 groups' worth of bytes, and a
     * count large enough that trusting it would read far past the end. */
    const uint32_t counts[] = {PROTO_MAX_GROUPS + 1, 0x40000000u, UINT32_MAX};
    for (size_t k = 0; k < 3; k++) {
        proto_enc_init(&e, b, sizeof(b));
        uint32_t v = 1;
        proto_put_U32(&e, &v);
        proto_put_U32(&e, &v);
        proto_put_U32(&e, &counts[k]);
        for (uint32_t i = 0; i <= PROTO_MAX_GROUPS; i++)
            proto_put_U32(&e, &i);
        uint64_t ino = 1;
        proto_put_U64(&e, &ino);
        assert_int_equal(e.err, 0);

        proto_dec_init(&d, b, e.len);
        proto_get_CRED(&d, &c);
        assert_int_equal(d.err, -EBADMSG);
        assert_true(c.ngroups <= PROTO_MAX_GROUPS);

        struct proto_getattr_req q2;
        proto_dec_init(&d, b, e.len);
        assert_int_equal(proto_dec_getattr_req(&d, &q2), -EBADMSG);
    }
}

/* Encode one component by hand so invalid values reach the decoder. */
static void put_raw_comp(struct proto_enc *e, uint64_t start, uint64_t end, uint32_t size,
                         uint16_t count, uint16_t ngroups)
{
    uint16_t type = LAYOUT_TYPE_OST;
    proto_put_U64(e, &start);
    proto_put_U64(e, &end);
    proto_put_U32(e, &size);
    proto_put_U16(e, &count);
    proto_put_U16(e, &type);
    for (uint32_t s = 0; s < ngroups; s++)
        proto_put_U32(e, &s);
}

static int decode_layout(const uint8_t *b, size_t len, struct layout *l)
{
    struct proto_dec d;
    proto_dec_init(&d, b, len);
    memset(l, 0xcc, sizeof(*l));
    proto_get_LAYOUT(&d, l);
    if (d.err)
        assert_true(l->ncomp <= LAYOUT_MAX_COMP);
    return d.err;
}

static void test_layout_rejected(void **state)
{
    (void)state;
    static uint8_t b[16384];
    static struct layout l;
    struct proto_enc e;
    uint16_t n;

    /* Sanity: the hand encoding of a good layout decodes. */
    proto_enc_init(&e, b, sizeof(b));
    n = 1;
    proto_put_U16(&e, &n);
    put_raw_comp(&e, 0, LAYOUT_END_EOF, 1u << 20, 2, 2);
    assert_int_equal(decode_layout(b, e.len, &l), 0);
    assert_int_equal(l.comp[0].stripe_count, 2);

    /* ncomp above LAYOUT_MAX_COMP, with that many valid components behind. */
    proto_enc_init(&e, b, sizeof(b));
    n = LAYOUT_MAX_COMP + 1;
    proto_put_U16(&e, &n);
    for (uint16_t i = 0; i < n; i++)
        put_raw_comp(&e, i << 20, i + 1 == n ? LAYOUT_END_EOF : (uint64_t)(i + 1) << 20, 1u << 16,
                     1, 1);
    assert_int_equal(decode_layout(b, e.len, &l), -EBADMSG);
    n = UINT16_MAX;
    memcpy(b, &n, 2);
    assert_int_equal(decode_layout(b, e.len, &l), -EBADMSG);

    /* stripe_count 0, LAYOUT_MAX_STRIPES + 1 and 65535 with groups present;
     * stripe size 0; an empty or inverted extent. */
    struct {
        uint64_t start, end;
        uint32_t size;
        uint16_t count;
    } bad[] = {
        {0, LAYOUT_END_EOF, 1u << 20, 0},
        {0, LAYOUT_END_EOF, 1u << 20, LAYOUT_MAX_STRIPES + 1},
        {0, LAYOUT_END_EOF, 1u << 20, UINT16_MAX},
        {0, LAYOUT_END_EOF, 0, 1},
        {5, 5, 1u << 20, 1},
        {6, 5, 1u << 20, 1},
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        proto_enc_init(&e, b, sizeof(b));
        n = 1;
        proto_put_U16(&e, &n);
        uint16_t ng = bad[k].count > LAYOUT_MAX_STRIPES + 1 ? LAYOUT_MAX_STRIPES + 1 : bad[k].count;
        put_raw_comp(&e, bad[k].start, bad[k].end, bad[k].size, bad[k].count, ng);
        assert_int_equal(e.err, 0);
        if (decode_layout(b, e.len, &l) != -EBADMSG)
            fail_msg("bad component %zu accepted", k);
        /* And inside a real message. */
        struct proto_setstripe_rep r;
        struct proto_dec d;
        proto_dec_init(&d, b, e.len);
        assert_int_equal(proto_dec_setstripe_rep(&d, &r), -EBADMSG);
    }

    /* The encoder refuses what it cannot represent. */
    make_layout2(&l);
    l.ncomp = LAYOUT_MAX_COMP + 1;
    proto_enc_init(&e, b, sizeof(b));
    proto_put_LAYOUT(&e, &l);
    assert_int_not_equal(e.err, 0);
    make_layout2(&l);
    l.comp[1].stripe_count = LAYOUT_MAX_STRIPES + 1;
    proto_enc_init(&e, b, sizeof(b));
    proto_put_LAYOUT(&e, &l);
    assert_int_not_equal(e.err, 0);
    /* Exactly LAYOUT_MAX_STRIPES is fine. */
    l.comp[1].stripe_count = LAYOUT_MAX_STRIPES;
    proto_enc_init(&e, b, sizeof(b));
    proto_put_LAYOUT(&e, &l);
    assert_int_equal(e.err, 0);
    static struct layout l2;
    assert_int_equal(decode_layout(b, e.len, &l2), 0);
    assert_layout_same(&l, &l2);
}

static void test_tstats_too_many(void **state)
{
    (void)state;
    static struct proto_tstats t;
    uint8_t b[64];
    struct proto_enc e;
    memset(&t, 0, sizeof(t));
    t.n = PROTO_MAX_TARGETS + 1;
    proto_enc_init(&e, b, sizeof(b));
    proto_put_TSTATS(&e, &t);
    assert_int_not_equal(e.err, 0);

    uint32_t n = PROTO_MAX_TARGETS + 1;
    proto_enc_init(&e, b, sizeof(b));
    proto_put_U32(&e, &n);
    struct proto_dec d;
    proto_dec_init(&d, b, e.len);
    proto_get_TSTATS(&d, &t);
    assert_int_equal(d.err, -EBADMSG);
    assert_true(t.n <= PROTO_MAX_TARGETS);
}

static void test_str_too_long(void **state)
{
    (void)state;
    static char s[PROTO_MAX_STR + 2];
    static uint8_t b[PROTO_MAX_STR + 64];
    memset(s, 'p', PROTO_MAX_STR + 1);
    struct proto_enc e;
    struct proto_dec d;
    struct proto_str out;

    /* PROTO_MAX_STR bytes is the limit and still fine. */
    struct proto_str str = {s, PROTO_MAX_STR};
    proto_enc_init(&e, b, sizeof(b));
    proto_put_STR(&e, &str);
    assert_int_equal(e.err, 0);
    proto_dec_init(&d, b, e.len);
    proto_get_STR(&d, &out);
    assert_int_equal(d.err, 0);
    assert_int_equal(out.len, PROTO_MAX_STR);

    /* One more is refused by the encoder... */
    str.len = PROTO_MAX_STR + 1;
    proto_enc_init(&e, b, sizeof(b));
    proto_put_STR(&e, &str);
    assert_int_not_equal(e.err, 0);
    struct proto_lookup_req q = {.parent = 1, .path = str};
    proto_enc_init(&e, b, sizeof(b));
    assert_int_not_equal(proto_enc_lookup_req(&e, &q), 0);

    /* ...and by the decoder, even with all the bytes present. */
    const uint16_t lens[] = {PROTO_MAX_STR + 1, UINT16_MAX};
    for (size_t k = 0; k < 2; k++) {
        b[0] = (uint8_t)lens[k];
        b[1] = (uint8_t)(lens[k] >> 8);
        memset(b + 2, 'p', sizeof(b) - 2);
        proto_dec_init(&d, b, sizeof(b));
        proto_get_STR(&d, &out);
        assert_int_equal(d.err, -EBADMSG);
        assert_int_equal(out.len, 0);
    }

    /* A length running past the end of the message. */
    b[0] = 10;
    b[1] = 0;
    proto_dec_init(&d, b, 11);
    proto_get_STR(&d, &out);
    assert_int_equal(d.err, -EBADMSG);
    assert_int_equal(out.len, 0);
}

/* proto.h: "The first failure sticks in err and every later put is a
 * no-op", so a caller that checks err once at the end learns the first
 * thing that went wrong. */
static void test_enc_first_error_sticks(void **state)
{
    (void)state;
    static char s[PROTO_MAX_STR + 2];
    static struct proto_cred c;
    static struct layout l;
    static struct proto_tstats t;
    memset(s, 'p', sizeof(s) - 1);
    uint8_t b[2];
    uint32_t u = 7;
    struct proto_enc e;

    for (int k = 0; k < 4; k++) {
        proto_enc_init(&e, b, sizeof(b));
        proto_put_U32(&e, &u);
        assert_int_equal(e.err, -EMSGSIZE);
        size_t len = e.len;
        switch (k) {
        case 0: {
            struct proto_str str = {s, PROTO_MAX_STR + 1};
            proto_put_STR(&e, &str);
            break;
        }
        case 1:
            make_cred(&c, 0);
            c.ngroups = PROTO_MAX_GROUPS + 1;
            proto_put_CRED(&e, &c);
            break;
        case 2:
            make_layout2(&l);
            l.ncomp = LAYOUT_MAX_COMP + 1;
            proto_put_LAYOUT(&e, &l);
            break;
        default:
            t.n = PROTO_MAX_TARGETS + 1;
            proto_put_TSTATS(&e, &t);
            break;
        }
        if (e.err != -EMSGSIZE)
            fail_msg("case %d: first error -EMSGSIZE replaced by %d", k, e.err);
        assert_int_equal(e.len, len);
    }
}

static void test_str_copy(void **state)
{
    (void)state;
    char buf[8];
    struct proto_str s;

    s = (struct proto_str){"abc", 3};
    assert_int_equal(proto_str_copy(&s, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "abc");

    s = (struct proto_str){"", 0};
    memset(buf, 'z', sizeof(buf));
    assert_int_equal(proto_str_copy(&s, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "");

    /* Not NUL-terminated in the message: only len bytes are copied. */
    s = (struct proto_str){"abcdefgXYZ", 7};
    assert_int_equal(proto_str_copy(&s, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "abcdefg");

    /* One byte too many for the terminator. */
    memset(buf, 'z', sizeof(buf));
    s = (struct proto_str){"abcdefgh", 8};
    assert_int_equal(proto_str_copy(&s, buf, sizeof(buf)), -ENAMETOOLONG);
    assert_int_equal(proto_str_copy(&s, buf, 0), -ENAMETOOLONG);

    /* Embedded NUL anywhere, including last: a name that means two things. */
    const char *nul[] = {"a\0b", "\0ab", "ab\0"};
    for (size_t i = 0; i < 3; i++) {
        s = (struct proto_str){nul[i], 3};
        assert_int_equal(proto_str_copy(&s, buf, sizeof(buf)), -EINVAL);
    }
}

/* ---- random garbage into every decoder -------------------------------- */

static const uint8_t *fuzz_seeds[64];
static size_t fuzz_seed_len[64];
static size_t nfuzz_seeds;

/* Valid encodings to mutate: mutations get past the first few fields, where
 * uniform garbage almost never does. */
static void build_fuzz_seeds(void)
{
    static uint8_t store[65536];
    size_t used = 0;
    nfuzz_seeds = 0;
    struct proto_open_req q;
    struct proto_open_rep r;
    make_open_req(&q, 3);
    make_open_rep(&r);
    struct proto_enc e;
    for (int k = 0; k < 2; k++) {
        proto_enc_init(&e, store + used, sizeof(store) - used);
        if (k == 0)
            assert_int_equal(proto_enc_open_req(&e, &q), 0);
        else
            assert_int_equal(proto_enc_open_rep(&e, &r), 0);
        fuzz_seeds[nfuzz_seeds] = store + used;
        fuzz_seed_len[nfuzz_seeds++] = e.len;
        used += e.len;
    }
    /* A few of every field kind, back to back. */
    rng_seed(0x5eed0003);
    while (nfuzz_seeds < 64 && used + 8192 < sizeof(store)) {
        proto_enc_init(&e, store + used, 512);
        for (int f = 0; f < 6; f++) {
            static struct layout l;
            struct proto_cred c;
            struct proto_attr a;
            struct proto_str s;
            struct proto_blob bl;
            struct proto_dirent de = {.ino = 1, .next_cookie = 2, .type = 8};
            switch (rng_below(6)) {
            case 0:
                fill_CRED(&c);
                c.ngroups %= 4;
                proto_put_CRED(&e, &c);
                break;
            case 1:
                fill_ATTR(&a);
                proto_put_ATTR(&e, &a);
                break;
            case 2:
                fill_LAYOUT(&l);
                for (uint16_t i = 0; i < l.ncomp; i++)
                    l.comp[i].stripe_count = 1 + l.comp[i].stripe_count % 4;
                proto_put_LAYOUT(&e, &l);
                break;
            case 3:
                s = proto_str_c("name");
                proto_put_STR(&e, &s);
                break;
            case 4:
                bl = (struct proto_blob){blob_pool, (uint32_t)rng_below(16)};
                proto_put_BLOB(&e, &bl);
                break;
            default:
                de.name = proto_str_c("entry");
                proto_put_dirent(&e, &de);
                break;
            }
        }
        if (e.err)
            continue;
        fuzz_seeds[nfuzz_seeds] = store + used;
        fuzz_seed_len[nfuzz_seeds++] = e.len;
        used += e.len;
    }
}

static void test_garbage_every_decoder(void **state)
{
    (void)state;
    init_pools();
    build_fuzz_seeds();
    rng_seed(0x5eed0004);
    static uint8_t src[512];
    for (int it = 0; it < 100000; it++) {
        size_t len = (size_t)rng_below(513);
        switch (it % 3) {
        case 0: /* Uniform bytes. */
            for (size_t i = 0; i < len; i++)
                src[i] = (uint8_t)rng_next();
            break;
        case 1: /* Mostly tiny values, so counts and lengths look plausible. */
            for (size_t i = 0; i < len; i++)
                src[i] = rng_below(4) ? (uint8_t)rng_below(3) : (uint8_t)rng_next();
            break;
        default: { /* A valid encoding, mutated and cut or padded to len. */
            size_t k = (size_t)rng_below(nfuzz_seeds);
            size_t n = MIN(fuzz_seed_len[k], len);
            memcpy(src, fuzz_seeds[k], n);
            for (size_t i = n; i < len; i++)
                src[i] = (uint8_t)rng_next();
            for (int m = (int)rng_below(4); m >= 0 && len; m--)
                src[rng_below(len)] ^= (uint8_t)(1 + rng_below(255));
            break;
        }
        }
        uint8_t *buf = exact_copy(src, len);
#define DEC_ALL(NAME, num, lname)                                                                  \
    lname##_req_dec(buf, len);                                                                     \
    lname##_rep_dec(buf, len);
        PROTO_MESSAGES(DEC_ALL)
#undef DEC_ALL
        /* Directory entries, until the first error. */
        struct proto_dec d;
        proto_dec_init(&d, buf, len);
        for (int i = 0; i < 64 && !d.err; i++) {
            struct proto_dirent de;
            proto_get_dirent(&d, &de);
            assert_true(d.off <= len);
            if (!d.err) {
                assert_in_range(de.name.len, 1, PROTO_MAX_NAME);
                check_span(de.name.p, de.name.len, buf, len);
            }
        }
        free(buf);
    }
    /* Every decoder with fields must have accepted something: otherwise all
     * the garbage bounced off its first field and the rest went untested. */
#define HITS(NAME, num, lname)                                                                     \
    if (lname##_req_has_fields() && lname##_req_hits == 0)                                         \
        fail_msg(#NAME " request: no random input was ever accepted");                             \
    if (lname##_rep_has_fields() && lname##_rep_hits == 0)                                         \
        fail_msg(#NAME " reply: no random input was ever accepted");
    PROTO_MESSAGES(HITS)
#undef HITS
}

/* ---- cluster map ------------------------------------------------------ */

static void make_map(struct cluster_map *m, struct map_target *t, uint32_t n)
{
    memset(m, 0, sizeof(*m));
    memset(t, 0, sizeof(*t) * n);
    for (uint32_t i = 0; i < n; i++) {
        t[i].kind = i == 0 ? PROTO_NODE_META : PROTO_NODE_STOR;
        t[i].index = i == 0 ? 0 : i - 1;
        t[i].state = i % 2 ? MAP_ONLINE : MAP_OFFLINE;
        snprintf(t[i].node, sizeof(t[i].node), "node-%u", i);
        snprintf(t[i].host, sizeof(t[i].host), "10.0.%u.%u", i / 256, i % 256);
        t[i].port = (uint16_t)(7000 + i);
        t[i].stat.index = t[i].index;
        t[i].stat.bytes_total = (1ull << 40) * (i + 1);
        t[i].stat.bytes_used = 12345 * i;
        t[i].stat.bytes_avail = t[i].stat.bytes_total - t[i].stat.bytes_used;
        t[i].stat.inodes_total = 1u << 20;
        t[i].stat.inodes_used = i;
        t[i].age_ms = 250 * i;
    }
    m->epoch = 9;
    m->n = n;
    m->t = t;
}

static void assert_target_same(const struct map_target *a, const struct map_target *b)
{
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->index, b->index);
    assert_int_equal(a->state, b->state);
    assert_string_equal(a->node, b->node);
    assert_string_equal(a->host, b->host);
    assert_int_equal(a->port, b->port);
    assert_int_equal(a->stat.index, b->stat.index);
    assert_int_equal(a->stat.bytes_total, b->stat.bytes_total);
    assert_int_equal(a->stat.bytes_used, b->stat.bytes_used);
    assert_int_equal(a->stat.bytes_avail, b->stat.bytes_avail);
    assert_int_equal(a->stat.inodes_total, b->stat.inodes_total);
    assert_int_equal(a->stat.inodes_used, b->stat.inodes_used);
    assert_int_equal(a->age_ms, b->age_ms);
}

static void test_map_roundtrip(void **state)
{
    (void)state;
    struct map_target t[5];
    struct cluster_map m, out = {0};
    make_map(&m, t, 5);
    /* The longest names that fit. */
    memset(t[2].node, 'N', sizeof(t[2].node) - 1);
    memset(t[2].host, 'H', sizeof(t[2].host) - 1);
    t[2].node[sizeof(t[2].node) - 1] = t[2].host[sizeof(t[2].host) - 1] = '\0';

    int len = map_encode(&m, wire, sizeof(wire));
    assert_true(len > 0);
    uint8_t *buf = exact_copy(wire, (size_t)len);
    assert_int_equal(map_decode(buf, (size_t)len, &out), 0);
    free(buf);
    assert_int_equal(out.n, 5);
    for (uint32_t i = 0; i < 5; i++)
        assert_target_same(&t[i], &out.t[i]);

    assert_int_equal(map_count(&out, PROTO_NODE_META), 1);
    assert_int_equal(map_count(&out, PROTO_NODE_STOR), 4);
    assert_int_equal(map_count(&out, PROTO_NODE_MGMT), 0);
    const struct map_target *f = map_find(&out, PROTO_NODE_STOR, 3);
    assert_non_null(f);
    assert_string_equal(f->node, "node-4");
    assert_null(map_find(&out, PROTO_NODE_STOR, 4));
    assert_non_null(map_find(&out, PROTO_NODE_META, 0));
    assert_null(map_find(&out, PROTO_NODE_META, 1));

    /* Decoding into a map that already holds targets replaces them. */
    struct map_target one[1];
    struct cluster_map m1;
    make_map(&m1, one, 1);
    len = map_encode(&m1, wire, sizeof(wire));
    assert_true(len > 0);
    assert_int_equal(map_decode(wire, (size_t)len, &out), 0);
    assert_int_equal(out.n, 1);
    assert_target_same(&one[0], &out.t[0]);
    map_free(&out);
    assert_null(out.t);
    assert_int_equal(out.n, 0);

    /* An empty map: no targets, no pools. */
    struct cluster_map empty = {0};
    len = map_encode(&empty, wire, sizeof(wire));
    assert_int_equal(len, 8);
    assert_int_equal(map_decode(wire, (size_t)len, &out), 0);
    assert_int_equal(out.n, 0);
    assert_int_equal(out.npools, 0);
    map_free(&out);
}

/* Pools travel after the targets; a map without them (an older mgmtd)
 * still decodes, with none. */
static void test_map_pools(void **state)
{
    (void)state;
    struct map_target t[5];
    struct cluster_map m, out = {0};
    make_map(&m, t, 5);
    uint32_t fast[] = {0, 2}, none[1];
    struct map_pool pools[] = {{"fast", 2, fast}, {"empty.1", 0, none}};
    m.pools = pools;
    m.npools = 2;
    int len = map_encode(&m, wire, sizeof(wire));
    assert_true(len > 0);
    uint8_t *buf = exact_copy(wire, (size_t)len);
    assert_int_equal(map_decode(buf, (size_t)len, &out), 0);
    free(buf);
    assert_int_equal(out.n, 5);
    assert_int_equal(out.npools, 2);
    const struct map_pool *f = map_find_pool(&out, "fast");
    assert_non_null(f);
    assert_int_equal(f->n, 2);
    assert_int_equal(f->ost[0], 0);
    assert_int_equal(f->ost[1], 2);
    assert_non_null(map_find_pool(&out, "empty.1"));
    assert_int_equal(map_find_pool(&out, "empty.1")->n, 0);
    assert_null(map_find_pool(&out, "fas"));

    /* The same map as an older mgmtd sends it: the targets only. */
    m.npools = 0;
    int old = map_encode(&m, wire, sizeof(wire)) - 4;
    assert_int_equal(map_decode(wire, (size_t)old, &out), 0);
    assert_int_equal(out.n, 5);
    assert_int_equal(out.npools, 0);
    assert_null(out.pools);

    /* A pool with a bad name, or more OSTs than the bytes left, is garbage. */
    const char *bad[] = {"", "a b", "0123456789abcdef"};
    for (int k = 0; k < 4; k++) {
        struct proto_enc e;
        proto_enc_init(&e, wire, sizeof(wire));
        uint32_t np = 1, nost = k == 3 ? 1000 : 1, idx = 1;
        struct proto_str name = proto_str_c(k < 3 ? bad[k] : "ok");
        proto_put_U32(&e, &(uint32_t){0});
        proto_put_U32(&e, &np);
        proto_put_STR(&e, &name);
        proto_put_U32(&e, &nost);
        proto_put_U32(&e, &idx);
        assert_int_equal(e.err, 0);
        assert_int_equal(map_decode(wire, e.len, &out), -EBADMSG);
        assert_int_equal(out.npools, 0);
    }
    map_free(&out);
}

static void test_map_encode_too_small(void **state)
{
    (void)state;
    struct map_target t[3];
    struct cluster_map m;
    make_map(&m, t, 3);
    int len = map_encode(&m, wire, sizeof(wire));
    assert_true(len > 0);
    for (int cap = 0; cap < len; cap++) {
        uint8_t *b = malloc(cap ? (size_t)cap : 1);
        assert_non_null(b);
        assert_int_equal(map_encode(&m, b, (size_t)cap), -EMSGSIZE);
        free(b);
    }
}

static void test_map_rejects_garbage(void **state)
{
    (void)state;
    struct map_target t[3];
    struct cluster_map m, out = {0};
    make_map(&m, t, 3);
    int len = map_encode(&m, wire, sizeof(wire));
    assert_true(len > 0);

    /* Every truncation fails and leaves the output alone, but the one
     * that ends with the targets: a map of an mgmtd without pools. */
    for (int n = 0; n < len; n++) {
        uint8_t *b = exact_copy(wire, (size_t)n);
        if (n == len - 4) {
            assert_int_equal(map_decode(b, (size_t)n, &out), 0);
            map_free(&out);
            free(b);
            continue;
        }
        if (map_decode(b, (size_t)n, &out) != -EBADMSG)
            fail_msg("map prefix of %d/%d bytes accepted", n, len);
        assert_null(out.t);
        free(b);
    }

    /* More targets than a map may hold. */
    uint8_t b[64] = {0};
    uint32_t big = MAP_MAX_TARGETS + 1;
    memcpy(b, &big, 4);
    assert_int_equal(map_decode(b, sizeof(b), &out), -EBADMSG);
    big = UINT32_MAX;
    memcpy(b, &big, 4);
    assert_int_equal(map_decode(b, sizeof(b), &out), -EBADMSG);

    /* A node name with no room for its terminator, or with a NUL inside. */
    uint8_t raw[512];
    for (int k = 0; k < 2; k++) {
        struct proto_enc e;
        proto_enc_init(&e, raw, sizeof(raw));
        uint32_t n = 1;
        uint8_t kind = PROTO_NODE_STOR, st = MAP_ONLINE;
        uint32_t idx = 0;
        char name[64];
        memset(name, 'n', sizeof(name));
        if (k)
            name[3] = '\0';
        struct proto_str node = {name, k ? 8 : 64}, host = proto_str_c("h");
        uint16_t port = 1;
        uint64_t z = 0;
        proto_put_U32(&e, &n);
        proto_put_U8(&e, &kind);
        proto_put_U32(&e, &idx);
        proto_put_U8(&e, &st);
        proto_put_STR(&e, &node);
        proto_put_STR(&e, &host);
        proto_put_U16(&e, &port);
        for (int i = 0; i < 6; i++)
            proto_put_U64(&e, &z);
        assert_int_equal(e.err, 0);
        assert_int_equal(map_decode(raw, e.len, &out), -EBADMSG);
        assert_null(out.t);
    }

    /* Random bytes: never a crash, never a half-filled map. */
    rng_seed(0x5eed0005);
    for (int it = 0; it < 20000; it++) {
        size_t n = (size_t)rng_below(600);
        uint8_t *g = malloc(n ? n : 1);
        assert_non_null(g);
        if (it % 2 && n >= (size_t)len) {
            memcpy(g, wire, n > (size_t)len ? (size_t)len : n);
            for (size_t i = (size_t)len; i < n; i++)
                g[i] = (uint8_t)rng_next();
            g[rng_below(n)] ^= (uint8_t)(1 + rng_below(255));
        } else {
            for (size_t i = 0; i < n; i++)
                g[i] = (uint8_t)(it % 4 == 0 ? rng_below(3) : rng_next());
        }
        int rc = map_decode(g, n, &out);
        if (rc == 0) {
            assert_true(out.n <= MAP_MAX_TARGETS);
            for (uint32_t i = 0; i < out.n; i++) {
                assert_true(memchr(out.t[i].node, '\0', sizeof(out.t[i].node)) != NULL);
                assert_true(memchr(out.t[i].host, '\0', sizeof(out.t[i].host)) != NULL);
            }
            assert_true(out.npools <= MAP_MAX_POOLS);
            for (uint32_t i = 0; i < out.npools; i++)
                assert_true(out.pools[i].n <= MAP_MAX_TARGETS);
            map_free(&out);
        } else {
            assert_int_equal(rc, -EBADMSG);
            assert_null(out.t);
        }
        free(g);
    }
}

/* ---- opcode names ----------------------------------------------------- */

static void test_op_names(void **state)
{
    (void)state;
    assert_string_equal(proto_op_name(PROTO_OP_OPEN), "OPEN");
    assert_string_equal(proto_op_name(23), "OPEN");
    assert_string_equal(proto_op_name(PROTO_OP_GET_MAP), "GET_MAP");
    assert_null(proto_op_name(0));
    assert_null(proto_op_name(4));
    assert_null(proto_op_name(PROTO_OP_MAX));
    assert_null(proto_op_name(UINT16_MAX));

    size_t nmsg = 0;
#define CHECK_NAME(NAME, num, lname)                                                               \
    assert_string_equal(proto_op_name(num), #NAME);                                                \
    assert_true(num > 0 && num < PROTO_OP_MAX);                                                    \
    nmsg++;
    PROTO_MESSAGES(CHECK_NAME)
#undef CHECK_NAME
    /* Opcodes are distinct: exactly one name per declared message. */
    size_t named = 0;
    for (uint32_t op = 0; op <= UINT16_MAX; op++)
        named += proto_op_name((uint16_t)op) != NULL;
    assert_int_equal(named, nmsg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hdr_roundtrip),
        cmocka_unit_test(test_hdr_wire_layout),
        cmocka_unit_test(test_hdr_bad_magic),
        cmocka_unit_test(test_hdr_flipped_bytes),
        cmocka_unit_test(test_hdr_version_zero),
        cmocka_unit_test(test_hdr_size_limits),
        cmocka_unit_test(test_hdr_garbage),
        cmocka_unit_test(test_open_req_roundtrip),
        cmocka_unit_test(test_mknod_wire),
        cmocka_unit_test(test_open_rep_roundtrip),
        cmocka_unit_test(test_open_wb),
        cmocka_unit_test(test_dom_writes_items),
        cmocka_unit_test(test_heartbeat_roundtrip),
        cmocka_unit_test(test_readdir_roundtrip),
        cmocka_unit_test(test_dirent_bad_names),
        cmocka_unit_test(test_setxattr_roundtrip),
        cmocka_unit_test(test_setxattr_max_value_fits_request),
        cmocka_unit_test(test_field_wire_format),
        cmocka_unit_test(test_every_message_roundtrip),
        cmocka_unit_test(test_encode_too_small),
        cmocka_unit_test(test_open_truncations),
        cmocka_unit_test(test_cred_too_many_groups),
        cmocka_unit_test(test_layout_rejected),
        cmocka_unit_test(test_tstats_too_many),
        cmocka_unit_test(test_str_too_long),
        cmocka_unit_test(test_enc_first_error_sticks),
        cmocka_unit_test(test_str_copy),
        cmocka_unit_test(test_garbage_every_decoder),
        cmocka_unit_test(test_map_roundtrip),
        cmocka_unit_test(test_map_pools),
        cmocka_unit_test(test_map_encode_too_small),
        cmocka_unit_test(test_map_rejects_garbage),
        cmocka_unit_test(test_op_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
