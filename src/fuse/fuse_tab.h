/*
 * The inode table of stria-fuse (fuse_tab.c): per inode, this mount's open
 * handles, the attributes the kernel was last told, the objects of a file
 * unlinked while open, and the writes acknowledged before they landed
 * (write-behind). It stands on fuse_req.h only.
 */
#ifndef STRIA_FUSE_TAB_H
#define STRIA_FUSE_TAB_H

#include "fuse_req.h"

/* ---- the inode table ---- */
void tab_init(void);
/* The kernel has been told these attributes. */
void tab_note(const struct stria_attr *a);
/* Whether the kernel's picture of ino still matches a (then the page cache
 * may be kept across this open); notes a either way. */
bool tab_unchanged(const struct stria_attr *a);
void tab_open(uint64_t ino, stria_file_t *f);
/* Forget handle f of ino; returns the removal to finish (objects to
 * destroy) if this was the last handle of an unlinked file, else NULL.
 * The caller frees it. */
stria_removed_t *tab_close(uint64_t ino, stria_file_t *f);
/* The furthest end any open handle of ino wrote without reporting it to
 * the MDT yet; 0 if none (open says whether any handle is open; wrote_ns,
 * if not NULL, gets when the last of those writes was made, 0 if none). */
uint64_t tab_local_size(uint64_t ino, bool *open, int64_t *wrote_ns);
/* ino lost its last link: if handles are open here, keep rm (the table
 * owns it now) for the last close and return true (the caller must not
 * destroy now). */
bool tab_orphan(stria_removed_t *rm);
/* Attributes of an unlinked-but-open inode (nlink 0), if it is one. */
bool tab_orphan_attr(uint64_t ino, struct stria_attr *a);
/* Cut the objects of an unlinked-but-open inode to size (0 if it is not
 * one: the MDT has done it). */
int tab_orphan_truncate(uint64_t ino, uint64_t size);
/* Call fn on every open handle of ino, under the table lock: fn must not
 * block (no RPCs). */
void tab_each(uint64_t ino, void (*fn)(stria_file_t *f, void *arg), void *arg);

/* Write-behind: a write may be acknowledged to the kernel before it is
 * sent, and is then tracked here until it lands. tab_wb_begin waits until
 * no tracked write of ino overlaps [off, off + len) and, if behind and
 * there is room, tracks this one (*slot >= 0: reply first, then write,
 * then tab_wb_end); *slot -1: write, then reply. It returns, instead, an
 * earlier write-behind failure of handle f not yet reported. tab_wb_end
 * ends a tracked write with its result, which f's next write, flush or
 * fsync reports. tab_wb_wait waits until no write of ino is tracked
 * (-EINTR if the caller is interrupted), then returns and clears f's
 * unreported failure (none asked for when f is NULL). Tracked writes count
 * in tab_local_size. */
int tab_wb_begin(uint64_t ino, stria_file_t *f, uint64_t off, uint64_t len, bool behind, int *slot);
void tab_wb_end(int slot, int rc);
/* Before a write of f that may bypass tab_wb_begin: f's earlier
 * write-behind failure (which that write reports instead), else 1 when a
 * tracked write of ino overlaps [off, off + len), else 0. */
int tab_wb_busy(uint64_t ino, stria_file_t *f, uint64_t off, uint64_t len);
int tab_wb_wait(uint64_t ino, stria_file_t *f);

/* The mode the kernel was last told for ino, if it was told any. */
bool tab_mode(uint64_t ino, uint32_t *mode);
#endif
