/*
 * Online migration, the client's side (migrate.c): the copy, the fences
 * of the old objects and the cleanup after a migrator that died.
 */
#ifndef STRIA_CLIENT_MIGRATE_H
#define STRIA_CLIENT_MIGRATE_H

#include "conn.h"

/* Migrate file ino into a layout from template tmpl (stria_migrate). */
int cl_migrate(stria_fs_t *fs, uint64_t ino, const struct layout *tmpl, stria_progress_fn fn,
               void *arg, char *why, size_t whylen);
/* If file ino has a migration whose migrator is gone (stale), undo it
 * (before its swap) or finish it (after): io.c calls this while its
 * objects stay fenced. 0 also when there is none. When the MDT has a
 * record, *stale_ms (if stale_ms is not NULL) gets the MDT's stale time:
 * how long the fences of a dead migrator may stay. */
int cl_migrate_recover(stria_fs_t *fs, uint64_t ino, uint32_t *stale_ms);
/* File ino, of layout l, is gone and its objects destroyed: if it was
 * migrated, every online OST forgets the fences its migrations left
 * (FENCE FORGET). One try each; what a failure leaves (logged), stria
 * fsck --repair removes. */
void cl_migrate_forget(stria_fs_t *fs, uint64_t ino, const struct layout *l);
/* Whether l was migrated (a component's objects carry a generation), so
 * that earlier layouts' objects may be left to forget. */
bool cl_migrated(const struct layout *l);

#endif
