/*
 * The messages of data repositories on S3, part of the wire protocol
 * (proto.h, which includes this inside its message definitions: it uses
 * proto.h's field kinds and is never included alone).
 */
#ifndef STRIA_PROTO_MSG_HSM_H
#define STRIA_PROTO_MSG_HSM_H

/*
 * Data repositories on S3 (docs/architecture.md, "Data repositories").
 *
 * A file's HSM state lives with its inode on its MDT. State bits are those
 * of Lustre's `lfs hsm_state`; DIRTY is derived: an archived file whose
 * size or mtime is no longer what was archived. A released file's layout
 * carries LAYOUT_F_RELEASED in its first component's type, so that every
 * opener learns it with the layout and fetches before it reads.
 */
#define HSM_EXISTS       0x1u
#define HSM_DIRTY        0x2u
#define HSM_RELEASED     0x4u
#define HSM_ARCHIVED     0x8u
#define HSM_LOST         0x40u
#define PROTO_MAX_S3_KEY 1024u
/* HSM_GET: the HSM record of a regular file (state 0 and repo 0: none),
 * the archived copy's size and mtime, and the file's attributes now. */
#define MSG_HSM_GET_REQ(F) F(CRED, cred) F(U64, ino)
#define MSG_HSM_GET_REP(F)                                                                         \
    F(U32, state)                                                                                  \
    F(U64, repo)                                                                                   \
    F(STR, key) F(STR, etag) F(U64, arch_size) F(I64, arch_mtime_ns) F(U64, gen) F(ATTR, attr)
/* HSM_SET, op one of HSM_OP_*, by the file's owner or root (RESTORED and
 * LOST: by anyone who may read it, -EACCES otherwise):
 * ARCHIVED: the whole object key (etag) in repository repo holds the file
 *   as it was at size and mtime_ns; -EBUSY if the file's size or mtime
 *   differ now (it changed during the copy). Clears LOST.
 * RELEASE: the file's data may go from the OSTs: -EPERM unless archived
 *   and not dirty. Sets RELEASED and the layout's flag; the reply's layout
 *   names the objects the caller then destroys. A released file: nothing.
 * RESTORED: every object holds the data of etag again: clears RELEASED
 *   (-ESTALE if etag is no longer the record's).
 * LOST: the object of etag is gone from S3 (-ESTALE as for RESTORED). */
enum { HSM_OP_ARCHIVED = 1, HSM_OP_RELEASE, HSM_OP_RESTORED, HSM_OP_LOST };
#define MSG_HSM_SET_REQ(F)                                                                         \
    F(CRED, cred)                                                                                  \
    F(U64, ino) F(U8, op) F(U64, repo) F(STR, key) F(STR, etag) F(U64, size) F(I64, mtime_ns)
#define MSG_HSM_SET_REP(F) F(U32, state) F(ATTR, attr) F(LAYOUT, layout) F(LEASES, leases)
/* HSM_IMPORT: make name in parent the released copy of object key (etag,
 * size, mtime_ns) of repository repo, with parent's default layout and
 * mode (regular file bits), stamped with sync generation gen. When the
 * name exists: a file of the same key and etag is only stamped
 * (UNCHANGED); with HSM_IMPORT_CHANGED one of another etag that is not
 * dirty and has one link is superseded (UPDATED): the name takes a new
 * inode, released, for the new object, with the old one's owner and mode
 * (the reply's attr and layout), and the old inode stays nameless with
 * its data for those who opened it, until HSM_REAP; else KEPT (dirty
 * here, hard-linked, or not from this repository, or not a regular
 * file). */
#define HSM_IMPORT_CHANGED 1u
enum { HSM_IMPORTED = 0, HSM_UNCHANGED, HSM_UPDATED, HSM_KEPT };
#define MSG_HSM_IMPORT_REQ(F)                                                                      \
    F(CRED, cred)                                                                                  \
    F(U64, parent)                                                                                 \
    F(STR, name)                                                                                   \
    F(U64, repo)                                                                                   \
    F(STR, key) F(STR, etag) F(U64, size) F(I64, mtime_ns) F(U32, mode) F(U64, gen) F(U8, flags)
#define MSG_HSM_IMPORT_REP(F) F(U8, result) F(ATTR, attr) F(LAYOUT, layout) F(LEASES, leases)
/* REPO: the file system's repositories, kept by MDT 0, each a directory
 * inode and an opaque configuration (the CLI's "key=value" lines; never a
 * secret). op ADD (-EEXIST if dir has one), SET (replace), DEL (-ENOENT if
 * none), changes by root only; LIST: repos holds every one as repeated
 * {U64 dir, U32 len, len bytes}; GET: dir's alone, the same way. */
enum { REPO_OP_ADD = 1, REPO_OP_SET, REPO_OP_DEL, REPO_OP_LIST, REPO_OP_GET };
#define PROTO_MAX_REPO_CONF 4096u
#define MSG_REPO_REQ(F)     F(CRED, cred) F(U8, op) F(U64, dir) F(BLOB, conf)
#define MSG_REPO_REP(F)     F(BLOB, repos)
/* HSM_GONE: the MDT's tombstones, each the object {repo, key, etag} of an
 * archived or released (not lost) file destroyed here (its last link
 * went), by id (rising by one per tombstone, per MDT, never reused). Root
 * only (-EPERM). op LIST: those after id after, at most max (1..1000,
 * -EINVAL), as repeated {U64 id, U64 repo, STR key, STR etag} in id
 * order, fewer when the reply would pass its limit; more: there are
 * others after the last; count: how many. DROP: those of ids in
 * (after, upto] go (one: after = id - 1, upto = id; every one up to n:
 * after = 0, upto = n); count: how many went. Each op made twice is made
 * once. */
enum { HSM_GONE_LIST = 1, HSM_GONE_DROP };
#define HSM_GONE_MAX        1000u
#define MSG_HSM_GONE_REQ(F) F(CRED, cred) F(U8, op) F(U64, after) F(U32, max) F(U64, upto)
#define MSG_HSM_GONE_REP(F) F(BLOB, entries) F(U8, more) F(U64, count)
/* HSM_REAP: the files HSM_IMPORT superseded, nameless, kept for the
 * readers that opened them. Root only (-EPERM). op LIST: the first after
 * inode after, of repository repo (0: any), superseded at least age_ms
 * ago: ino (0: none), its layout, objects (1: objects may exist, to be
 * destroyed before DROP). DROP: superseded inode ino goes for good, with
 * no tombstone (its key holds the object that took its name); -ENOENT if
 * there is no such superseded inode. Each op made twice is made once. */
enum { HSM_REAP_LIST = 1, HSM_REAP_DROP };
#define MSG_HSM_REAP_REQ(F)                                                                        \
    F(CRED, cred) F(U8, op) F(U64, repo) F(U64, after) F(U64, age_ms) F(U64, ino)
#define MSG_HSM_REAP_REP(F) F(U64, ino) F(LAYOUT, layout) F(U8, objects)

/* Movers on the storage hosts (stria-stord) speak S3 with their own
 * credentials. Each request names its S3 target: endpoint URL, region,
 * bucket and addressing (vhost 1: bucket.host, 0: host/bucket). S3
 * failures are not the reply's status but s3err (a negative errno:
 * -ENOENT no such key or bucket, -EACCES refused credentials, -ESTALE the
 * object's etag changed, -EHOSTUNREACH unreachable, -ETIMEDOUT, -EIO) and
 * why, a line naming the object and S3's error. */
#define PROTO_S3_TARGET(F) F(STR, endpoint) F(STR, region) F(STR, bucket) F(U8, vhost)
/* HSM_PULL: fetch into object (ino, comp, stripe) of ost the bytes of S3
 * object key (etag) that the file's layout puts there: a component from
 * comp_start of stripe_size and stripe_count, the file file_size long.
 * The units meeting [offset, offset + len) of the file first; with
 * HSM_PULL_ALL every unit before the reply, with HSM_PULL_BACKGROUND the
 * rest after it. complete: the object holds every unit. */
#define HSM_PULL_ALL        1u
#define HSM_PULL_BACKGROUND 2u
#define MSG_HSM_PULL_REQ(F)                                                                        \
    F(U32, ost)                                                                                    \
    F(U64, ino)                                                                                    \
    F(U32, comp)                                                                                   \
    F(U32, stripe)                                                                                 \
    F(U64, comp_start)                                                                             \
    F(U32, stripe_size)                                                                            \
    F(U16, stripe_count)                                                                           \
    F(U64, file_size)                                                                              \
    PROTO_S3_TARGET(F) F(STR, key) F(STR, etag) F(U64, offset) F(U64, len) F(U8, flags)
#define MSG_HSM_PULL_REP(F) F(U8, complete) F(U64, fetched) F(I32, s3err) F(STR, why)
/* HSM_PUSH, op one of PUSH_*: CREATE a multipart upload of key (reply
 * upload_id); PART: read [offset, offset + len) of file ino of layout
 * (through the cluster) and upload it as part number part (reply etag,
 * md5 its 16-byte MD5, checked against S3's etag); COMPLETE the upload
 * from parts, repeated {U32 number, STR etag}, then check the object's
 * size is size (reply etag); PUT: the file's [0, len) as one object (reply
 * etag); ABORT the upload. */
enum { PUSH_CREATE = 1, PUSH_PART, PUSH_COMPLETE, PUSH_PUT, PUSH_ABORT };
#define MSG_HSM_PUSH_REQ(F)                                                                        \
    F(U8, op)                                                                                      \
    PROTO_S3_TARGET(F)                                                                             \
    F(STR, key)                                                                                    \
    F(STR, upload_id)                                                                              \
    F(U32, part)                                                                                   \
    F(U64, ino) F(LAYOUT, layout) F(U64, offset) F(U64, len) F(BLOB, parts) F(U64, size)
#define MSG_HSM_PUSH_REP(F) F(STR, upload_id) F(STR, etag) F(BLOB, md5) F(I32, s3err) F(STR, why)
/* S3_LIST: up to max (<= 1000) objects under prefix after key
 * start_after, as repeated {STR key, U64 size, I64 mtime_ns, STR etag};
 * more: the listing goes on after the last one. */
#define MSG_S3_LIST_REQ(F) PROTO_S3_TARGET(F) F(STR, prefix) F(STR, start_after) F(U32, max)
#define MSG_S3_LIST_REP(F) F(BLOB, entries) F(U8, more) F(I32, s3err) F(STR, why)
/* S3_HEAD: one object's size, mtime and etag. */
#define MSG_S3_HEAD_REQ(F) PROTO_S3_TARGET(F) F(STR, key)
#define MSG_S3_HEAD_REP(F) F(U64, size) F(I64, mtime_ns) F(STR, etag) F(I32, s3err) F(STR, why)
/* S3_DELETE: delete object key only if its etag is still etag (never
 * empty): the mover HEADs it first and sends DELETE with If-Match, so an
 * object someone rewrote since is left alone (s3err -ESTALE). A key not
 * there is success (already gone); a missing bucket is -ENOENT. */
#define MSG_S3_DELETE_REQ(F) PROTO_S3_TARGET(F) F(STR, key) F(STR, etag)
#define MSG_S3_DELETE_REP(F) F(I32, s3err) F(STR, why)

#endif
