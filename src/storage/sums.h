/*
 * The checksums an OST keeps of its objects (docs/architecture.md,
 * "Checksums").
 *
 * An object's blocks (PROTO_CSUM_BLOCK bytes each) have an entry of two
 * CRC32Cs, little-endian: the block's and the one it had before, 0 meaning
 * none. The entries of the first SUMS_HEAD blocks live in the object's
 * extended attribute user.stria.c (64 bytes, which ext4 keeps inside the
 * inode), those of later blocks at offset 8*b of the file NAME.c beside it,
 * made only when the object reaches past the head. So reading a small
 * object (a dataset sample) opens one file, not two, and the OST keeps one
 * inode per small object. An object without the attribute (written before
 * it, or on a file system without user xattrs) has all its entries in
 * NAME.c, which is then read for the head too.
 *
 * A block's checksum covers its bytes up to the object's size. The
 * checksum is written before the data, and a block matching either CRC
 * passes. After a crash of the host, a block can hold something neither
 * CRC describes (two writes since its data last reached the disk, or its
 * pages written back in part); recovery.c finds the objects that can hold
 * such blocks and sums_heal sums them again (architecture.md).
 * A block with no checksum (a hole, or an object from before checksums)
 * is not checked.
 *
 * The caller serialises writers of one object against everyone else on it
 * (store.c's object locks).
 */
#ifndef STRIA_STORAGE_SUMS_H
#define STRIA_STORAGE_SUMS_H

#include <stdbool.h>
#include <stdint.h>

/* The blocks whose entries live in the object's attribute. */
#define SUMS_HEAD 8

enum sums_how { SUMS_READ, SUMS_CHANGE, SUMS_WRITE };

struct sums_obj {
    int fd;        /* the object */
    uint64_t size; /* the object's size when opened */
    /* Private: the checksum file, opened when first needed. */
    int dirfd;
    const char *name;
    enum sums_how how;
    int sfd;            /* -1: not open (absent, or not looked for yet) */
    bool sfd_looked;    /* sfd is what there is */
    bool head_loaded;   /* head holds the attribute's entries */
    bool head_in_xattr; /* they came from (or go to) the attribute */
    bool head_dirty;    /* changed since it was written */
    uint8_t head[SUMS_HEAD * 8];
};

/* Open object name in dirfd: to read it, to change it (both -ENOENT if
 * absent) or to write it (made if absent). name must outlive the handle. */
int sums_open(int dirfd, const char *name, enum sums_how how, struct sums_obj *o);
void sums_close(struct sums_obj *o);
/* Sync the object and its checksums. */
int sums_sync(struct sums_obj *o);
/* Remove the checksums an object's attribute holds (fd: the object, which
 * the caller is emptying): 0, or a negative errno. */
int sums_clear_head(int fd);
/* Remove the checksum file of object name (after the object went). */
void sums_unlink(int dirfd, const char *name);

/* Record the checksums of the blocks that data (len bytes at object
 * offset off, whose chunks have the little-endian CRC32Cs crcs, already
 * checked) will change; call before writing the data. */
int sums_before_write(struct sums_obj *o, uint64_t off, const uint8_t *data, uint32_t len,
                      const uint8_t *crcs);
/* The same before a truncate to size, and before punching a hole. */
int sums_before_resize(struct sums_obj *o, uint64_t size);
int sums_before_punch(struct sums_obj *o, uint64_t off, uint64_t len);

/* Check the blocks from block first whose bytes (up to the object's size)
 * start at buf: 0, or -EIO with *bad_off the offset of the first block
 * that matches neither of its checksums. crc_out[i] (if not NULL) gets
 * block first+i's CRC32C. */
int sums_verify(struct sums_obj *o, uint64_t first, uint32_t n, const uint8_t *buf,
                uint32_t *crc_out, uint64_t *bad_off);

/* The entries of blocks [first, first + n) into ents (8 bytes each: the
 * block's CRC32C and the one before it, little-endian; zeros: none). */
int sums_entries(struct sums_obj *o, uint64_t first, uint32_t n, uint8_t *ents);

/* After an unclean stop (recovery.c): give every block of the
 * object that matches neither of its checksums the checksum of what it
 * holds now. *healed gets how many did, *first_off the first one's offset.
 * The caller syncs. */
int sums_heal(struct sums_obj *o, uint64_t *healed, uint64_t *first_off);

#endif
