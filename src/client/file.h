/*
 * File handles (file.c, and file_ra.c for reads; the stria_file_t calls
 * of stria.h). Never installed.
 *
 * A handle is the layout and the size an open learnt, what its writes did
 * not yet report to the MDT, its read-ahead buffer and a failure kept for
 * its next call. Writes go through gathering (gather.h) and striped I/O
 * (io.h); size reports, truncates and times go to the MDT (inode.h,
 * ns.h). The public namespace calls (api.c) open through cl_open.
 */
#ifndef STRIA_CLIENT_FILE_H
#define STRIA_CLIENT_FILE_H

#include "conn.h"

/* Open (or create) path under parent; an empty path opens parent itself.
 * count/size/offset choose a new file's layout (0, 0, -1: inherit). attr,
 * if not NULL, receives the attributes the MDT returned. */
int cl_open(stria_fs_t *fs, uint64_t parent, const char *path, int flags, mode_t mode,
            int32_t count, uint32_t size, int32_t offset, stria_file_t **out,
            struct proto_attr *attr);
/* What gathering asks of a handle (gather_init's gather_mark_fn and
 * gather_error_fn): mark its file as having objects, keep a failure. */
int cl_file_mark(stria_file_t *f);
void cl_file_set_error(stria_file_t *f, int rc);

#endif
