/*
 * Objects of removed files, removed behind (reap.c): a caller that has
 * nothing to wait for once the MDT forgot a name (the mount's unlink)
 * hands the removal here, and one thread removes the objects of up to
 * PROTO_MAX_DESTROYED files at a time with one DESTROY per OST and one
 * DESTROYED per MDT (ns.h's batch), within REAP_AGE_MS.
 */
#ifndef STRIA_CLIENT_REAP_H
#define STRIA_CLIENT_REAP_H

#include "conn.h"

/* Start the thread (stria_start_destroy_behind). */
int reap_start(stria_fs_t *fs);
/* Queue rm's objects (rm stays the caller's); with no thread, a full
 * queue, or a file cl_destroy must handle alone, remove them now. */
void reap_later(stria_fs_t *fs, const struct stria_removed *rm);
/* Until what was queued before the call is removed; returns how many
 * files that was (0: nothing was queued). */
unsigned reap_flush(stria_fs_t *fs);
/* Remove what is queued and stop the thread (stria_disconnect). */
void reap_stop(stria_fs_t *fs);

#endif
