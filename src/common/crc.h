/* CRC32C (Castagnoli), the checksum of message headers and, later, of bulk
 * data blocks. Backed by ISA-L's SIMD implementation. */
#ifndef STRIA_CRC_H
#define STRIA_CRC_H

#include <stddef.h>
#include <stdint.h>

/* Standard CRC32C of buf; crc32c("123456789") == 0xe3069283. Chain by passing
 * the previous result as seed (0 for the first call). */
uint32_t crc32c(uint32_t seed, const void *buf, size_t len);

#endif
