/*
 * End-to-end data checksums (DESIGN §5; docs/protocol.md, "Checksums").
 *
 * An object is cut into PROTO_CSUM_BLOCK blocks. Data on the wire carries
 * one CRC32C per chunk, a chunk being the part of the data inside one
 * block: WRITE's crcs are the client's, checked by the OST on receipt;
 * READ's are the OST's, checked by the client. The OST keeps one CRC32C
 * per block beside each object and checks it on every read and scrub.
 */
#ifndef STRIA_PROTO_CSUM_H
#define STRIA_PROTO_CSUM_H

#include "proto.h"

#include <stdint.h>

#define PROTO_CSUM_BLOCK (32u << 10)

/* How many chunks data at object offset off of len bytes has. */
uint32_t proto_csum_chunks(uint64_t off, uint32_t len);
/* The length of the first chunk at off (at most len). */
static inline uint32_t proto_csum_chunk_len(uint64_t off, uint32_t len)
{
    uint32_t room = PROTO_CSUM_BLOCK - (uint32_t)(off % PROTO_CSUM_BLOCK);
    return len < room ? len : room;
}
/* Write the chunks' CRC32Cs (4 bytes each, little-endian) into out, which
 * holds proto_csum_chunks(off, len) * 4 bytes. */
void proto_csum_fill(uint64_t off, const uint8_t *data, uint32_t len, uint8_t *out);
/* Check data against crcs: 0, -EBADMSG if crcs (or a non-empty alt) has
 * the wrong length, or -EIO with *bad_off (if not NULL) the object offset
 * of the first chunk that does not match. With alt (NULL or empty: none),
 * a chunk may match its CRC in either; a zero in alt matches nothing. */
int proto_csum_check(uint64_t off, const uint8_t *data, uint32_t len, const struct proto_blob *crcs,
                     const struct proto_blob *alt, uint64_t *bad_off);

#endif
