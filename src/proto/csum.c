#include "csum.h"

#include "../common/crc.h"

#include <errno.h>

uint32_t proto_csum_chunks(uint64_t off, uint32_t len)
{
    if (len == 0)
        return 0;
    uint64_t first = off / PROTO_CSUM_BLOCK, last = (off + len - 1) / PROTO_CSUM_BLOCK;
    return (uint32_t)(last - first + 1);
}

void proto_csum_fill(uint64_t off, const uint8_t *data, uint32_t len, uint8_t *out)
{
    while (len) {
        uint32_t n = proto_csum_chunk_len(off, len);
        proto_put_le32(out, crc32c(0, data, n));
        out += 4;
        data += n;
        off += n;
        len -= n;
    }
}

int proto_csum_check(uint64_t off, const uint8_t *data, uint32_t len, const struct proto_blob *crcs,
                     const struct proto_blob *alt, uint64_t *bad_off)
{
    uint64_t want = 4ull * proto_csum_chunks(off, len);
    if (crcs->len != want || (alt && alt->len && alt->len != want))
        return -EBADMSG;
    const uint8_t *c = crcs->p, *a = alt && alt->len ? alt->p : NULL;
    while (len) {
        uint32_t n = proto_csum_chunk_len(off, len);
        uint32_t v = crc32c(0, data, n);
        if (v != proto_le32(c) && !(a && proto_le32(a) && v == proto_le32(a))) {
            if (bad_off)
                *bad_off = off;
            return -EIO;
        }
        c += 4;
        a = a ? a + 4 : NULL;
        data += n;
        off += n;
        len -= n;
    }
    return 0;
}
