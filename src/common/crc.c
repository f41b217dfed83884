/* ISA-L's crc32_iscsi keeps the register un-inverted between calls; wrap it
 * so callers see the conventional (pre- and post-inverted) CRC32C. */
#include "crc.h"

#include <isa-l/crc.h>

uint32_t crc32c(uint32_t seed, const void *buf, size_t len)
{
    return ~crc32_iscsi((unsigned char *)buf, (int)len, ~seed);
}
