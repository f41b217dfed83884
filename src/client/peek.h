/*
 * Bytes a lookup brings (LOOKUP's dom_len, peek.c): the kernel looks a
 * name up before it opens it, so a dataset read through the mount, once
 * the leases on its names have run out, costs a LOOKUP and an OPEN per
 * file. When this client has lately opened for reading what it looked up,
 * its lookups take a Data-on-MDT file's first bytes with them, and the
 * open that follows (answered from the metadata cache) reads them: one
 * round trip per file. Bytes are kept a short while, for the inode's
 * state they were read in (its lease's generation), and this client's
 * writes since void them, as they void an open's.
 */
#ifndef STRIA_CLIENT_PEEK_H
#define STRIA_CLIENT_PEEK_H

#include "conn.h"
#include "io.h"

#include <stdbool.h>
#include <stdint.h>

struct peek;
struct proto_lookup_rep;

/* With the metadata cache (mdc_start, mdc_stop): 0 or -ENOMEM. */
int peek_start(stria_fs_t *fs);
void peek_stop(stria_fs_t *fs);

/* The most bytes a lookup takes: a read-ahead buffer's (file_int.h). */
#define PEEK_CAP IO_PIECE_MAX

/* Before a lookup of one name: a buffer of PEEK_CAP bytes for the bytes it
 * should take with it (NULL: it asks for none), and this client's write
 * epoch as it is sent. */
char *peek_want(stria_fs_t *fs, uint64_t *epoch);
/* A buffer from peek_want that no reply filled (the lookup failed). */
void peek_drop(stria_fs_t *fs, char *buf);
/* After it: keep the got bytes at buf (from peek_want, or NULL) that
 * reply r brought, checked against their CRCs here, while the reply is
 * still the caller's; buf is peek's from here on (freed if not kept). A
 * regular file's lookup without bytes is remembered too: an open for
 * reading of it soon after says asking would have paid. */
void peek_took(stria_fs_t *fs, const struct proto_lookup_rep *r, char *buf, uint32_t got,
               uint64_t epoch);

#endif
