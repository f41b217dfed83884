/*
 * What the operations of stria-fuse share above the inode table
 * (fuse_reply.c): entries and attributes for the kernel, with what this
 * mount's handles wrote and have not reported, and those reports.
 */
#ifndef STRIA_FUSE_REPLY_H
#define STRIA_FUSE_REPLY_H

#include "fuse_req.h"

/* Reply an entry for attributes the MDT returned (and note them). */
void sf_reply_entry(fuse_req_t req, const struct stria_attr *a);
/* sf_reply_entry when rc is 0, else the error. */
void sf_reply_entry_rc(fuse_req_t req, int rc, const struct stria_attr *a);
/* Report to the MDT what this mount's handles of ino wrote and have not
 * reported (before a truncate or an fsync), once their writes on the way
 * have landed; a write-behind failure of handle f (NULL: none) comes
 * first, as tab_wb_wait's. */
int sf_report_local(uint64_t ino, stria_file_t *f);
/* Fill a fuse_entry_param for a, without noting it (see sf_entry). */
void sf_fill_entry(const struct stria_attr *a, struct fuse_entry_param *e);
/* Note that the kernel was given entry e (filled from a). */
void sf_note_entry(const struct stria_attr *a, const struct fuse_entry_param *e);
/* Fill a fuse_entry_param for a; notes the attributes. */
void sf_entry(const struct stria_attr *a, struct fuse_entry_param *e);
/* Raise a->size to what this mount's open handles wrote (unreported yet). */
void sf_merge_local(struct stria_attr *a);
/* The attributes of ino, merged with what this mount's open handles wrote. */
int sf_getattr(uint64_t ino, struct stria_attr *a);

/* Set while a worker serves a WRITE whose caller lacks CAP_FSETID, under
 * FUSE_HANDLE_KILLPRIV_V2 (fuse_main.c: libfuse 3.14 drops the flag). */
extern __thread bool sf_write_kills_privs;
/* Such a write drops setuid, and setgid where the group may execute. */
int sf_write_drop_privs(fuse_req_t req, uint64_t ino);
#endif
