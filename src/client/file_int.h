/*
 * File handles, inside: what file.c (open, writes, size reports, close)
 * and file_ra.c (reads and their read-ahead) share. Nothing else
 * includes this file.
 */
#ifndef STRIA_CLIENT_FILE_INT_H
#define STRIA_CLIENT_FILE_INT_H

#include "file.h"
#include "io.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct hsm_src;

struct stria_file {
    stria_fs_t *fs;
    uint64_t ino;
    int flags;
    bool is_dir;
    struct layout layout;
    pthread_mutex_t lock;
    uint64_t size;      /* as the MDT last said, or as we extended it */
    uint64_t wrote_end; /* end of the furthest byte this handle wrote */
    uint64_t mdt_end;   /* end of its furthest write that the MDT took with its size (DoM) */
    /* The write-behind grant of MDT wb_mdt this handle's open created the
     * file under (0: none): only such a file, which no other client can
     * have seen since, has bytes written behind (file.c, dom_behind). */
    uint64_t wb_grant;
    uint32_t wb_mdt;
    enum { MARK_NONE, MARK_BUSY, MARK_DONE } mark; /* the MDT knows objects may exist */
    pthread_cond_t marked;                         /* a mark in flight ended */
    bool dirty;                                    /* written since the last size report */
    int64_t wrote_ns;   /* when this handle last wrote: the mtime its report sets */
    uint64_t write_gen; /* bumped by every write: a report covers those before it */
    bool orphan;        /* unlinked while open: the MDT has no inode any more */
    int gerr;           /* a gathered write of this handle failed: its next call says so */
    /* Read-ahead (stria.h): the piece [ra_off, ra_off + ra_len) fetched at
     * write epoch ra_epoch, and where the last read ended. Bytes the open
     * brought (ra_off 0) that stop at the file's end within its
     * Data-on-MDT component go on as zeros to ra_zeros: the open's view of
     * the component (else ra_zeros is ra_off + ra_len). */
    pthread_mutex_t ra_lock;
    char *ra_buf;
    uint64_t ra_off, ra_len, ra_zeros, ra_epoch, read_end;
    /* A released file (hsm.h): where its data is, loaded at its first use. */
    pthread_mutex_t hsm_lock;
    struct hsm_src *hsm;
};

/* What a read-ahead buffer holds at most: one request's piece. */
#define RA_CAP IO_PIECE_MAX

/* file.c: make f's layout hold what the MDT has of [off, end) (write:
 * instantiating it); 0 or a negative errno. */
int file_learn(stria_file_t *f, uint64_t off, uint64_t end, bool write);
/* file.c: a handle of the inode a describes, opened with flags (layout
 * set apart). */
void file_init(stria_file_t *f, stria_fs_t *fs, int flags, const struct proto_attr *a);
/* file_create.c: cl_open's create of name in parent (on MDT mdt) made
 * here, f its handle, when the cache, the grant and a template allow
 * (wb_create_begin): whether it was. */
bool file_create_behind(stria_fs_t *fs, uint64_t parent, uint32_t mdt, const char *name, int flags,
                        mode_t mode, const struct proto_cred *cred, stria_file_t *f,
                        struct proto_attr *attr);
/* An ordinary create in parent on mdt under grant, sent at ns_epoch
 * ns_ep, made a file of layout l: the template of the next ones, if l
 * has nothing on an OST and no change of this client came since. */
void file_create_learnt(stria_fs_t *fs, uint32_t mdt, uint64_t parent, uint64_t grant,
                        uint64_t ns_ep, const struct layout *l);
/* file.c: bring a released file's [off, off + len) (all: everything) back
 * from S3 first; 0 or a negative errno. */
int file_fetch_released(stria_file_t *f, uint64_t off, uint64_t len, bool all);

/* file_ra.c: a read-ahead buffer of RA_CAP bytes for a handle of fs, or
 * NULL (too many handles have one); the caller frees it by file_ra_put,
 * which takes NULL too. */
char *file_ra_get(stria_fs_t *fs);
void file_ra_put(stria_fs_t *fs, char *b);
/* file_ra.c: whether the got bytes at buf (NULL: none) that a reply
 * brought of inode ino (by: "open", "lookup"), whose size and layout l
 * it gave, may be read: the file's first bytes, all in its Data-on-MDT
 * component and below its size, matching their CRCs. A reply without
 * them (none asked for or to send, a resent OPEN answered from the reply
 * kept for it) brings none; bytes that fail their check are logged and
 * dropped, and the read asks the MDT (DOM_READ). */
bool file_ra_took(uint64_t ino, uint64_t size, const struct layout *l, const char *buf,
                  uint32_t got, const struct proto_blob *crcs, const char *by);
/* file_ra.c: f, a handle not yet shared, reads the got first bytes of
 * its file from buf (a read-ahead buffer, f's from now), as they were at
 * this client's write epoch epoch; f->size and f->layout are those the
 * bytes were read with. */
void file_ra_adopt(stria_file_t *f, char *buf, uint32_t got, uint64_t epoch);
/* peek.c: hand f, just opened for reading from the metadata cache, the
 * bytes its lookup brought (peek.h), if they are still the file's. */
void peek_open(stria_file_t *f);
/* file_ra.c: the got bytes at ra (from file_ra_get, or NULL) that f's
 * open (reply r, sent at write epoch epoch) brought: f's read-ahead
 * buffer keeps them if they may be read, else they are freed. */
void file_ra_opened(stria_file_t *f, const struct proto_open_rep *r, char *ra, uint32_t got,
                    uint64_t epoch);

#endif
