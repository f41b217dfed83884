/*
 * Crash recovery of an OST's checksums (docs/architecture.md, "Crash
 * safety of the checksums").
 *
 * An object's checksums are written before its data, and the page cache
 * keeps the two together while the host runs; a power loss can leave a
 * block that matches none of its entries. So time runs in epochs of
 * sync_interval, each with a log of the objects already on disk that it
 * changed; a start after a crash of the host checks those, and the
 * objects made since the oldest log's epoch, and sums again the blocks no
 * entry describes (sums_heal). The design is told in recovery.c.
 *
 * The object store (store.h) calls these: at an OST's start and orderly
 * stop, and before each change of an object. They use sums.h alone.
 */
#ifndef STRIA_STORAGE_RECOVERY_H
#define STRIA_STORAGE_RECOVERY_H

#include "ost.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Read this boot of the host's id (the kernel's boot_id), once, before
 * any OST is opened. */
void recovery_boot_load(void);

/* The object names a recovery checks (each at most 95 bytes). The owner
 * frees v. */
struct recovery_names {
    char (*v)[96];
    size_t n, cap;
};

/* At an OST's start, before anything changes it: remove its orderly-stop
 * mark (durably: a crash from here on is an unclean stop) and read its
 * logs. *since: the oldest log's epoch (0: none); *check: the names the
 * logs hold (the caller frees check->v, also on failure); *recovering:
 * whether the stop before was a crash of the host, so that the objects
 * changed since *since are to be checked too (recovery_scan_add). Returns
 * 0 or a negative errno (logged). */
int recovery_start(struct ost *o, int64_t *since, struct recovery_names *check, bool *recovering);
/* An object (name: objects/XX/NAME) found by the start's scan of o, with
 * its stat: its name goes to check if it changed since since. Returns 0
 * or -ENOMEM. */
int recovery_scan_add(struct recovery_names *check, int64_t since, const char *name,
                      const struct stat *st);
/* Check the objects names holds (sorted here), summing again each block
 * that no entry describes (logged at warning). */
void recovery_check(struct ost *o, struct recovery_names *names, int64_t since);

/* Begin a new epoch on o: its log on disk, then a sync of everything
 * before it; then the log before it goes. Returns 0 or a negative errno
 * (the caller logs it). */
int recovery_epoch_begin(struct ost *o);
/* Before a change of object name (st: its stat; NULL: unknown): its name
 * in the epoch's log, on disk, if it was last changed before the epoch.
 * The caller holds o->epoch_lock shared. Returns 0 or a negative errno
 * (logged): the change must then not be made. */
int recovery_note_change(struct ost *o, const char *name, const struct stat *st);
/* An orderly stop, once nothing is served: all on disk, the mark that
 * says so (a start then checks nothing), and the log closed. */
void recovery_stop(struct ost *o);

#endif
