/*
 * Data-on-MDT pieces for the striped I/O of io.c (io_dom.c). Never
 * installed.
 */
#ifndef STRIA_CLIENT_IO_DOM_H
#define STRIA_CLIENT_IO_DOM_H

#include "io.h"

/* What a Data-on-MDT request's -ESTALE becomes in io.c, apart from an
 * OST's (a fence): the file's layout is no longer the one used, or (if it
 * still is) the file's own state (superseded). Never leaves the client's
 * I/O. */
#define DOM_MOVED (-100000)

/* Piece lp of file ino's Data-on-MDT component (of generation gen), to or
 * from its MDT: 0, DOM_MOVED, or a negative errno. */
int io_dom_piece(stria_fs_t *fs, uint64_t ino, const struct layout_piece *lp, uint8_t gen,
                 bool write, uint8_t *buf);
/* Zeros over [a, b) of component c (on an MDT) of file ino. */
int io_dom_zero(stria_fs_t *fs, uint64_t ino, const struct layout_comp *c, uint64_t a, uint64_t b);

#endif
