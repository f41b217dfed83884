/*
 * The rules of Stria's identifiers, in one place (DESIGN §2): every
 * daemon, libstria and the tools derive inode numbers, the MDT that owns
 * one, and the names of data objects from here and nowhere else.
 *
 * - An inode number is 64 bits: the index of the MDT that owns the inode
 *   record in the top 16, a per-MDT counter in the low 48. It never
 *   changes (rename keeps it) and it is what FUSE sees.
 * - The root directory is inode 1: MDT 0, counter 1.
 * - A file's data objects are named by (inode, component, stripe) on the
 *   OST that holds them, so layouts hold no object ids: the object lives at
 *   objects/FF/IIIIIIIIIIIIIIII.C.S under the OST's directory, FF a fan-out
 *   of 256 directories taken from the inode number, I the inode in 16
 *   lower-case hex digits, C and S decimal.
 */
#ifndef STRIA_IDS_H
#define STRIA_IDS_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PROTO_INO_BITS 48
#define PROTO_ROOT_INO 1ull /* MDT 0, counter 1 */
/* The longest object name, with its NUL: "objects/ff/" 16 hex ".C.S". */
#define PROTO_OBJ_NAME_MAX 96

/* The MDT that owns inode ino. */
static inline uint32_t proto_ino_mdt(uint64_t ino)
{
    return (uint32_t)(ino >> PROTO_INO_BITS);
}

/* The inode number of counter value n on MDT mdt. */
static inline uint64_t proto_ino_make(uint32_t mdt, uint64_t n)
{
    return (uint64_t)mdt << PROTO_INO_BITS | (n & ((1ull << PROTO_INO_BITS) - 1));
}

/* The fan-out directory (0..255) of inode ino's objects. */
static inline unsigned proto_obj_fan(uint64_t ino)
{
    return (unsigned)((ino ^ (ino >> 8) ^ (ino >> 16)) & 0xff);
}

/* The path of an object under its OST's directory, into buf of len
 * (PROTO_OBJ_NAME_MAX is always enough). */
static inline void proto_obj_name(char *buf, size_t len, uint64_t ino, uint32_t comp,
                                  uint32_t stripe)
{
    snprintf(buf, len, "objects/%02x/%016" PRIx64 ".%u.%u", proto_obj_fan(ino), ino, comp, stripe);
}

/* The fan-out directory fan's path under an OST's directory. */
static inline void proto_obj_fan_dir(char *buf, size_t len, unsigned fan)
{
    snprintf(buf, len, "objects/%02x", fan);
}

#endif
