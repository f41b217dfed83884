/*
 * What src/client's other modules use of admin.c (cluster information,
 * statistics, fsck and scrub calls). Never installed.
 */
#ifndef STRIA_CLIENT_ADMIN_H
#define STRIA_CLIENT_ADMIN_H

#include "conn.h"

#include <sys/statvfs.h>

/* stria_statfs with its own bound on the answer's age: the one kept if it
 * was asked for less than max_age_ms ago, else fresh figures from every
 * server (kept in turn). max_age_ms 0: always fresh, for callers that act
 * on free space (tiering's keep_free). A thread that finds another asking
 * waits for that answer rather than asking too. Returns 0 or a negative
 * errno (-EINTR: the caller was interrupted, cl_set_cancel). */
int cl_statfs(stria_fs_t *fs, struct statvfs *st, int64_t max_age_ms);

#endif
