/*
 * The object store of stria-stord: the OSTs a daemon serves and the
 * files of their objects (docs/architecture.md, "Storage").
 *
 * An OST is a directory on a local file system holding one file per
 * object, named by (inode, component, stripe) through src/proto/ids.h and
 * fanned out over 256 subdirectories by inode. Objects are created by
 * their first write; a missing object reads as a hole. Each OST counts
 * the bytes its objects occupy. Every change goes through the object's
 * lock and its checksums (sums.h), and is noted for crash recovery
 * (recovery.h) first.
 */
#ifndef STRIA_STORAGE_STORE_H
#define STRIA_STORAGE_STORE_H

#include "ost.h"
#include "sums.h"

#include "../proto/proto.h"

#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define MAX_OSTS  256
#define OBJ_LOCKS 256

struct mover;  /* mover.h */
struct fences; /* fence.h */

/* The OSTs one daemon serves and how it writes and reads them; filled by
 * the service (stord.c) at start-up, then only read. */
struct stord {
    struct ost *osts[MAX_OSTS];
    int nosts;
    /* An object's data and checksums change together: a write, truncate or
     * punch holds its lock exclusively, a read or scrub shared. */
    pthread_rwlock_t locks[OBJ_LOCKS];
    uint64_t direct_io_min; /* 0: never O_DIRECT */
    uint64_t writeback_min; /* 0: never start writeback early */
    uint64_t sendfile_min;  /* 0: every read is read and checked here */
    struct mover *mover;    /* the S3 movers (mover.h) */
    struct fences *fences;  /* fences and write stamps of migrations (fence.h) */
};

/* The lock of object (ino, comp, stripe) of OST ost: one of OBJ_LOCKS,
 * by hash. Owned by s. */
pthread_rwlock_t *ost_obj_lock(struct stord *s, uint32_t ost, uint64_t ino, uint32_t comp,
                               uint32_t stripe);
/* The OST of s with this index, or NULL. */
struct ost *ost_find(struct stord *s, uint32_t index);

/* Open the OST in directory path, creating its layout on first use;
 * refuse a directory that belongs to another OST index. Counts what its
 * objects occupy and, after an unclean stop, runs its crash recovery.
 * Returns 0 and *out (close with ost_close, then free), or a negative
 * errno (logged). */
int ost_open(const char *path, uint32_t index, struct ost **out);
/* An orderly stop of o, once nothing is served (recovery_stop), and its
 * directory closed; o itself is the caller's to free. */
void ost_close(struct ost *o);
/* o's figures for OSTATFS and heartbeats. Returns 0 or a negative errno. */
int ost_stat(struct ost *o, struct proto_tstat *t);

/* The changes of object name (proto_obj_name) of o: each takes the
 * object's lock lk (ost_obj_lock) exclusively and counts the bytes it
 * occupies again; a write, truncate or punch also takes o's epoch and is
 * noted for crash recovery first. Each returns 0 or a negative errno. */

/* Write q's data (data, len: already checked against q->crcs) at
 * q->offset, making the object if it is missing. direct: around the page
 * cache (O_DIRECT, if the file system takes it); writeback: start the
 * range's writeback at once. */
int ost_write(struct ost *o, const char *name, pthread_rwlock_t *lk,
              const struct proto_write_req *q, const uint8_t *data, uint32_t len, bool direct,
              bool writeback);
/* Cut or extend to size; a missing object is left alone (already empty). */
int ost_truncate(struct ost *o, const char *name, pthread_rwlock_t *lk, uint64_t size);
/* Deallocate [q->offset, q->offset + q->len); a missing object is left
 * alone (already a hole). */
int ost_punch(struct ost *o, const char *name, pthread_rwlock_t *lk,
              const struct proto_punch_req *q);
/* Remove the object, its checksums and its restore state (hsmstate.h);
 * a missing one is not an error. */
int ost_destroy(struct ost *o, const char *name, pthread_rwlock_t *lk);

/* Read [off, off + len) of an object (so: open, its lock held shared by
 * the caller) into buf, which has room for the blocks around it, and
 * check those blocks. *at: where in buf the range starts; *got: how much
 * of it the object holds; crcs: its chunks' CRC32Cs (4 bytes each, for
 * *got bytes). -EIO on a checksum mismatch (logged). */
int ost_read_checked(struct ost *o, const char *name, struct sums_obj *so, uint64_t off,
                     uint32_t len, uint8_t *buf, uint32_t *at, uint32_t *got, uint8_t *crcs);

/* One of o's 256 fan-out directories, open to list (closedir); NULL with
 * *rc. */
DIR *ost_fan_open(struct ost *o, uint32_t fan, int *rc);
/* Is d_name (in fan-out directory fan) an object, named as this server
 * names them: <inode hex>.<component>.<stripe>, nothing else? Then its
 * path from the OST's directory goes to name. */
bool ost_fan_object(uint32_t fan, const char *d_name, uint64_t *ino, uint32_t *comp,
                    uint32_t *stripe, char name[96]);
/* An object as LISTOBJ lists them, {U64 ino, U32 comp, U32 stripe},
 * into e: false, with e as it was, when it does not fit. */
bool ost_list_put(struct proto_enc *e, uint64_t ino, uint32_t comp, uint32_t stripe);

#endif
