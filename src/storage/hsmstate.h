/*
 * The restore state of an object being filled from S3 (HSM_PULL; see
 * docs/architecture.md, "Data repositories"): which stripe units of the
 * object hold the S3 object's bytes, kept durable beside the OST's objects
 * so that a restore killed in the middle resumes where it stopped.
 *
 * The geometry: within a component starting at comp_start of stripe size
 * S and count C, stripe unit u covers file bytes [comp_start + u*S, +S)
 * and is held by stripe u % C at object offset (u / C) * S. Object
 * (ino, comp, stripe) holds units stripe, stripe + C, ...: its k-th unit
 * is u = stripe + k*C, at object offset k*S. Only units below file_size
 * exist (for a component that ends before the file, pass its end).
 *
 * The sidecar: OSTDIR/hsm/XX/<object's file name>, outside objects/, so
 * that listings, scrub, fsck and the object count never take it for an
 * object. A header of HSM_STATE_HDR bytes (magic, version, etag and
 * geometry, guarded by a CRC32C) and a bitmap of the object's units, bit k
 * set once unit k's bytes are durable in the object. Bits only ever go
 * from 0 to 1, and only after the object's fsync, so a torn write of the
 * bitmap loses at most some progress, never marks missing data.
 */
#ifndef STRIA_STORAGE_HSMSTATE_H
#define STRIA_STORAGE_HSMSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HSM_STATE_HDR      256u
#define HSM_STATE_VERSION  1u
#define HSM_STATE_ETAG_MAX 128u /* S3_ETAG_MAX, terminator included */

/* Where an object's units come from, as HSM_PULL names them. */
struct hsm_geom {
    char etag[HSM_STATE_ETAG_MAX];
    uint64_t file_size;
    uint64_t comp_start;
    uint32_t stripe_size;
    uint16_t stripe_count;
    uint32_t stripe;
};

/* One unit of an object: file bytes [file_off, +len) at object offset
 * obj_off. */
struct hsm_unit {
    uint64_t file_off;
    uint64_t obj_off;
    uint64_t len;
};

/* Whether g is a geometry a pull can use (sizes in bounds, stripe below
 * count, an etag). */
bool hsm_geom_valid(const struct hsm_geom *g);
/* How many units object g holds. */
uint64_t hsm_units(const struct hsm_geom *g);
/* Unit k of object g (k < hsm_units(g)). */
struct hsm_unit hsm_unit_at(const struct hsm_geom *g, uint64_t k);
/* The units of object g meeting file range [off, off + len): k in
 * [*lo, *hi) (empty: *lo == *hi). */
void hsm_units_meeting(const struct hsm_geom *g, uint64_t off, uint64_t len, uint64_t *lo,
                       uint64_t *hi);
/* Whether two geometries describe the same bytes (etag included). */
bool hsm_geom_same(const struct hsm_geom *a, const struct hsm_geom *b);

/* The sidecar's header into out (HSM_STATE_HDR bytes). */
void hsm_state_encode(const struct hsm_geom *g, uint8_t out[HSM_STATE_HDR]);
/* Decode a whole sidecar of len bytes: the geometry into g and *bitmap
 * pointing into buf at hsm_units(g) bits. -EUCLEAN if it is not one this
 * version wrote intact (wrong magic, version, CRC, geometry or length, or
 * bits set past the last unit). */
int hsm_state_decode(const uint8_t *buf, size_t len, struct hsm_geom *g, const uint8_t **bitmap);
/* The bitmap's length in bytes for n units. */
static inline size_t hsm_bitmap_len(uint64_t n)
{
    return (size_t)((n + 7) / 8);
}
static inline bool hsm_bit(const uint8_t *bm, uint64_t k)
{
    return bm[k / 8] & (1u << (k % 8));
}
static inline void hsm_bit_set(uint8_t *bm, uint64_t k)
{
    bm[k / 8] |= (uint8_t)(1u << (k % 8));
}

/* ---- the sidecar file, relative to an OST's directory dirfd ---- */

/* An object's restore state as loaded. bitmap is malloc'ed, freed by
 * hsm_state_free. */
struct hsm_state {
    struct hsm_geom g;
    uint64_t n;      /* units */
    uint64_t have;   /* bits set */
    uint8_t *bitmap; /* hsm_bitmap_len(n) bytes */
};

/* The sidecar path of object name (proto_obj_name's "objects/XX/NAME"). */
void hsm_state_path(const char *obj_name, char *out, size_t len);
/* Load object name's state: 0, -ENOENT if it has none, -EUCLEAN if it is
 * damaged (logged), or another negative errno. */
int hsm_state_load(int dirfd, const char *obj_name, struct hsm_state *st);
/* Make a new, empty state g for object name, durable, replacing any. */
int hsm_state_create(int dirfd, const char *obj_name, const struct hsm_geom *g,
                     struct hsm_state *st);
/* Make st's bitmap durable (bits only ever set). */
int hsm_state_store_bits(int dirfd, const char *obj_name, const struct hsm_state *st);
/* Remove object name's state, if any (durably). Returns 0 or a negative
 * errno; a missing one is not an error. */
int hsm_state_unlink(int dirfd, const char *obj_name);
void hsm_state_free(struct hsm_state *st);

#endif
