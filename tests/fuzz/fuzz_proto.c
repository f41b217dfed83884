/*
 * libFuzzer target: every message decoder (requests and replies, generated
 * from PROTO_MESSAGES), the header decoder, READDIR entries, UNLINKS's
 * lists of items and results, OPEN's write-behind blob, and the cluster map. The first input byte
 * picks the decoder; the rest is the payload. Anything a decoder accepts is re-encoded, which must
 * succeed.
 */
#include "proto/map.h"
#include "proto/proto.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDTRIP(NAME, num, lname)                                                                \
    static void rt_##lname(const uint8_t *p, size_t n)                                             \
    {                                                                                              \
        static uint8_t out[PROTO_MAX_REP_PAYLOAD];                                                 \
        struct proto_dec d;                                                                        \
        struct proto_enc e;                                                                        \
        struct proto_##lname##_req *q = malloc(sizeof(*q));                                        \
        struct proto_##lname##_rep *r = malloc(sizeof(*r));                                        \
        proto_dec_init(&d, p, n);                                                                  \
        if (proto_dec_##lname##_req(&d, q) == 0) {                                                 \
            proto_enc_init(&e, out, sizeof(out));                                                  \
            if (proto_enc_##lname##_req(&e, q))                                                    \
                abort();                                                                           \
        }                                                                                          \
        proto_dec_init(&d, p, n);                                                                  \
        if (proto_dec_##lname##_rep(&d, r) == 0) {                                                 \
            proto_enc_init(&e, out, sizeof(out));                                                  \
            if (proto_enc_##lname##_rep(&e, r))                                                    \
                abort();                                                                           \
        }                                                                                          \
        free(q);                                                                                   \
        free(r);                                                                                   \
    }
PROTO_MESSAGES(ROUNDTRIP)
#undef ROUNDTRIP

typedef void (*rt_fn)(const uint8_t *, size_t);
static const rt_fn fns[] = {
#define ENTRY(NAME, num, lname) rt_##lname,
    PROTO_MESSAGES(ENTRY)
#undef ENTRY
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t nfns = sizeof(fns) / sizeof(fns[0]);
    unsigned pick = data[0] % (nfns + 5);
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    if (pick < nfns) {
        fns[pick](p, n);
    } else if (pick == nfns) {
        struct proto_hdr h;
        if (n >= PROTO_HDR_LEN)
            proto_hdr_decode(p, &h);
    } else if (pick == nfns + 1) {
        /* READDIR's entries, with plus's attributes and xabsent when
         * the first byte is odd. */
        struct proto_dec d;
        struct proto_dirent de;
        struct proto_attr a;
        uint8_t xabsent;
        bool plus = n && (p[0] & 1);
        proto_dec_init(&d, p, n);
        while (d.off < d.len && !d.err) {
            proto_get_dirent(&d, &de);
            if (plus)
                proto_get_dirplus(&d, &a, &xabsent);
        }
    } else if (pick == nfns + 2) {
        /* A list: by the first byte modulo 4, UNLINKS's items, a list
         * reply's results (UNLINKS, DOM_WRITES), DOM_WRITES's items or
         * its creates; each accepted one encoded again. */
        static uint8_t out[PROTO_MAX_REP_PAYLOAD];
        struct proto_dec d;
        struct proto_enc e;
        int kind = n ? p[0] % 4 : 0;
        proto_dec_init(&d, p, n);
        proto_enc_init(&e, out, sizeof(out));
        while (d.off < d.len) {
            struct proto_unlinks_item it;
            struct proto_dom_writes_item dw;
            struct proto_dom_create mk;
            int32_t status;
            struct proto_blob rep;
            if (kind == 0 && proto_unlinks_item_get(&d, &it) == 0)
                proto_unlinks_item_put(&e, &it);
            else if (kind == 1 && proto_result_get(&d, &status, &rep) == 0)
                proto_result_put(&e, status, rep);
            else if (kind == 2 && proto_dom_writes_item_get(&d, &dw) == 0)
                proto_dom_writes_item_put(&e, &dw);
            else if (kind == 3 && proto_dom_create_get(&d, &mk) == 0)
                proto_dom_create_put(&e, &mk);
            else
                break;
            if (e.err)
                abort();
        }
    } else if (pick == nfns + 3) {
        /* OPEN's wb: what it accepts reads back the same once written. */
        struct proto_tblob b = {p, (uint32_t)n, n == 0};
        struct proto_open_wb w, w2;
        uint8_t out[PROTO_OPEN_WB_LEN];
        if (proto_open_wb_get(&b, &w) == 0) {
            proto_open_wb_put(out, &w);
            struct proto_tblob b2 = {out, sizeof(out), false};
            if (proto_open_wb_get(&b2, &w2) || memcmp(&w, &w2, sizeof(w)) ||
                memcmp(out, p, n < sizeof(out) ? n : sizeof(out)))
                abort();
        }
    } else {
        struct cluster_map m = {0};
        if (map_decode(p, n, &m) == 0)
            map_free(&m);
    }
    return 0;
}
