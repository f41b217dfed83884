/*
 * Released files (hsm.c): their data is in S3 only, and the storage hosts
 * that hold their stripes fetch it back (HSM_PULL) before it is read or
 * written. Never installed.
 *
 * Built on the transport core and striped object I/O; file handles
 * (file.c) call it before they touch a released layout, and the public
 * stria_hsm_* calls (repo.c) build on it.
 */
#ifndef STRIA_CLIENT_HSM_H
#define STRIA_CLIENT_HSM_H

#include "conn.h"

/* Where a released file's data is: its repository's bucket and its
 * object, loaded once (HSM_GET, REPO) and kept by the handle. */
struct hsm_src;

/*
 * Make [off, off + len) of file ino (layout *l, size bytes) readable. If
 * *l is not released: nothing. Else the storage hosts holding the units of
 * that range fetch them first, and the rest of their objects after, in the
 * background; with all, every unit of every object before this returns,
 * in windows, calling fn with the bytes of the file done so far. When
 * every object holds its data the MDT is told (HSM_SET RESTORED) and *l
 * loses its flag. *src caches the source (NULL: load it; free it with
 * hsm_src_free). S3's failures are logged once and answered -EIO, with
 * their text in why; an object gone from S3 marks the file lost.
 */
int hsm_fetch(stria_fs_t *fs, uint64_t ino, struct layout *l, uint64_t size, uint64_t off,
              uint64_t len, bool all, struct hsm_src **src, stria_progress_fn fn, void *arg,
              char *why, size_t whylen);
void hsm_src_free(struct hsm_src *s);
/* hsm_fetch of all of file ino, whose layout and size are asked for. */
int hsm_restore_ino(stria_fs_t *fs, uint64_t ino, stria_progress_fn fn, void *arg, char *why,
                    size_t whylen);

/* Run fn(arg) on n threads at most (HSM_PARALLEL), each taking work
 * from arg until none is left; on the caller's alone when n is 1 or no
 * thread starts. Returns when all are done. */
void hsm_workers(unsigned n, void *(*fn)(void *), void *arg);

/* A decoded string into dst (cap bytes), cut to fit, NUL-terminated. */
void hsm_copy_str(char *dst, size_t cap, const struct proto_str *s);

/* A repository's S3 target from its conf lines; the strings live in buf. */
struct hsm_target {
    char endpoint[512], region[128], bucket[256];
    bool vhost;
};
int hsm_target_parse(const char *conf, size_t len, struct hsm_target *t);
/* The conf of repository dir (REPO GET on MDT 0) into buf (cap bytes). */
int hsm_repo_conf(stria_fs_t *fs, uint64_t dir, char *buf, size_t cap, size_t *len);
/* The OST that serves S3 calls for this client: the first that answers. */
int hsm_any_ost(stria_fs_t *fs, uint32_t *ost);
/* Tell ino's MDT that the object of etag in repository repo is gone from
 * S3 (HSM_SET LOST; -ESTALE if the record holds another etag). */
int hsm_mark_lost(stria_fs_t *fs, uint64_t ino, uint64_t repo, const char *etag);
/* stria_hsm_archive; moved: to key, even when the file has a key in repo
 * already (it was renamed, and its object follows its name). */
int hsm_archive(stria_fs_t *fs, uint64_t ino, uint64_t repo, const struct stria_s3_target *t,
                const char *key, bool moved, stria_progress_fn fn, void *arg, char *why,
                size_t whylen);
/* Take the files HSM_IMPORT superseded (of repository repo, 0: any) at
 * least age_ms ago, on every MDT: their objects destroyed, their inodes
 * dropped; at most HSM_REAP_PASS_MAX per MDT per call. *reaped counts
 * them. */
#define HSM_REAP_PASS_MAX 100000u
int hsm_reap(stria_fs_t *fs, uint64_t repo, uint64_t age_ms, uint64_t *reaped);
/* The S3 target fields of a mover's request q from a stria_s3_target t. */
#define TARGET_FIELDS(q, t)                                                                        \
    do {                                                                                           \
        (q).endpoint = proto_str_c((t)->endpoint ? (t)->endpoint : "");                            \
        (q).region = proto_str_c((t)->region ? (t)->region : "");                                  \
        (q).bucket = proto_str_c((t)->bucket ? (t)->bucket : "");                                  \
        (q).vhost = (t)->vhost != 0;                                                               \
    } while (0)

#endif
