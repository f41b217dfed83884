/*
 * Gathering of small sequential writes (gather.c; stria.h, "Gathering and
 * read-ahead", says what a caller sees). Never installed.
 *
 * Sits on striped I/O (io_rw), below the file handles whose writes it
 * gathers: it holds a handle only as an opaque pointer, and asks the
 * handle layer through the two calls it registers at gather_init.
 */
#ifndef STRIA_CLIENT_GATHER_H
#define STRIA_CLIENT_GATHER_H

#include "conn.h"

struct io_mk;

/* Before a gathered buffer of f lands: tell the MDT, once per handle, that
 * f's file may have objects. 0 or a negative errno (the buffer then fails). */
typedef int (*gather_mark_fn)(stria_file_t *f);
/* A gathered write of f failed to land: keep rc for f's next call. */
typedef void (*gather_error_fn)(stria_file_t *f, int rc);

/* Start gathering for fs (fs->gather); 0 or -ENOMEM. */
int gather_init(stria_fs_t *fs, gather_mark_fn mark, gather_error_fn error);
/* Send everything gathered, stop the thread, free (stria_disconnect). */
void gather_fini(stria_fs_t *fs);
/* Copy what it can of a write of f (inode ino, layout l, which must stay
 * valid until f's buffers are drained) at off into ino's buffer, sending
 * buffers it fills (their failures kept on f). Returns the bytes taken
 * from the front of buf (0: none; the caller writes the rest itself after
 * gather_before_write) or a negative errno. */
ssize_t gather_write(stria_fs_t *fs, stria_file_t *f, uint64_t ino, const struct layout *l,
                     const void *buf, size_t len, uint64_t off);
/* Before a write of [off, end) of ino that is not gathered: ino's filling
 * buffer goes first, and any being sent that overlaps lands first. */
void gather_before_write(stria_fs_t *fs, uint64_t ino, uint64_t off, uint64_t end);
/* Before anything else of ino (read, size report, truncate, close): send
 * what was gathered for it so far and wait until it has landed. */
void gather_drain(stria_fs_t *fs, uint64_t ino);
/* gather_drain, but not for what was written behind (a flush, a close). */
void gather_drain_own(stria_fs_t *fs, uint64_t ino);
/* Wait for what was written behind for ino (0: any inode) so far; at once
 * when called while this thread sends a buffer (the MDT calls a send
 * makes). Whether there was any. */
bool gather_drain_behind(stria_fs_t *fs, uint64_t ino);
/* Take len bytes at off of f's inode ino, all inside one piece of its
 * Data-on-MDT component (on MDT mdt), behind: copied (with layout l) into
 * a buffer that a sender thread sends, which the flush and close of f
 * do not wait for (the caller holds mdt's write-behind grant: wb.h).
 * Returns len, or 0 when no buffer is free (the caller writes them). */
ssize_t gather_behind(stria_fs_t *fs, stria_file_t *f, uint64_t ino, const struct layout *l,
                      uint32_t mdt, const void *buf, size_t len, uint64_t off);
/* What the writes behind for mdt not landed yet may grow its records by,
 * at most (the sum of their ends). */
uint64_t gather_behind_bytes(stria_fs_t *fs, uint32_t mdt);
/* File ino (f's, layout l, on MDT mdt) created behind as mk says: its
 * create queued as a behind buffer, which the file's first bytes join
 * while it waits (gather_behind), and which every wait for the file's
 * buffers waits for. 0, or -EAGAIN (no buffer: create it the ordinary
 * way). */
/* While every buffer is taken and some are on their way: wait until one
 * is free (a writer behind would otherwise write the ordinary way, and
 * wait longer). Call holding no lock of wb.c. */
void gather_wait_free(stria_fs_t *fs);
/* Wait for every create queued so far (gather_create) to be sent. */
bool gather_drain_creates(stria_fs_t *fs);
int gather_create(stria_fs_t *fs, stria_file_t *f, uint64_t ino, const struct layout *l,
                  uint32_t mdt, const struct io_mk *mk);
/* f closes: its bytes written behind go on without it (a failure is
 * logged and counted, nobody is left to tell). */
void gather_detach(stria_fs_t *fs, stria_file_t *f);
void gather_set(stria_fs_t *fs, bool on);
bool gather_on(stria_fs_t *fs);
/* Writes gathered and buffers sent; behind: writes taken behind, those
 * landed (failures included), those failed after their handle closed. */
void gather_stats(stria_fs_t *fs, uint64_t *writes, uint64_t *sends, uint64_t behind[3]);

#endif
