/*
 * The namespace messages of the wire protocol: LOOKUP, GETATTR, SETATTR,
 * OPEN, MKDIR, the removals (msg_remove.h), RENAME, LINK, SYMLINK and
 * READLINK (proto.h, which includes this inside its message definitions:
 * it uses proto.h's field kinds and types and is never included alone).
 */
#ifndef STRIA_PROTO_MSG_NS_H
#define STRIA_PROTO_MSG_NS_H

/* Metadata. Path-taking requests name a start directory and a relative
 * path of one or more components; the MDT resolves all but the last
 * (following symlinks inside the file system) with search permission
 * checks, then applies the operation to the last component. */
/* dom_len (appended): how many of a regular file's first bytes the client
 * takes with the lookup, as OPEN's dom_len says (0: none); a client asks
 * when it expects to open what it looks up (a dataset read through the
 * mount: the kernel looks a name up before it opens it). */
#define MSG_LOOKUP_REQ(F) F(CRED, cred) F(U64, parent) F(STR, path) F(U8, follow) F(U32, dom_len)
/* remote: the name holds an inode of another MDT, of which attr says only
 * ino and the type in mode; ask its MDT for the rest. layout: a regular
 * file's (none otherwise), so that a client holding the lease can open
 * the file for reading without asking again (version 3, appended).
 * dom_crcs (appended): the CRCs of the bytes sent as the reply's bulk, as
 * OPEN's are, when dom_len asked for them and the inode is this MDT's;
 * empty otherwise. */
#define MSG_LOOKUP_REP(F)                                                                          \
    F(ATTR, attr) F(LEASES, leases) F(U8, remote) F(LAYOUT, layout) F(BLOB, dom_crcs)
#define MSG_GETATTR_REQ(F) F(CRED, cred) F(U64, ino)
#define MSG_GETATTR_REP(F) F(ATTR, attr) F(LEASES, leases)
/* valid: SETATTR_* bits below. */
#define MSG_SETATTR_REQ(F)                                                                         \
    F(CRED, cred)                                                                                  \
    F(U64, ino)                                                                                    \
    F(U32, valid)                                                                                  \
    F(U32, mode) F(U32, uid) F(U32, gid) F(U64, size) F(I64, atime_ns) F(I64, mtime_ns)
#define MSG_SETATTR_REP(F) F(ATTR, attr) F(U64, old_size) F(LAYOUT, layout) F(LEASES, leases)
/* OPEN: open or create the last component; flags are Linux open(2) flags.
 * stripe_*: the layout for a file created here: count and size 0 inherit
 * the directory's default, offset -1 lets the allocator choose. marked: a
 * file this open created for writing is already marked as one whose
 * objects may exist (what a first SETSIZE would do), so its writer sends
 * no SETSIZE before its first write. dom_len: how many of the file's first
 * bytes the client takes with the open (0: none; at most
 * PROTO_OPEN_DOM_MAX): an open that reads (not O_WRONLY) of a regular file
 * whose first component is on its MDT gets the component's bytes below the
 * file's size, at most dom_len of them, as the reply's bulk, with one
 * CRC32C per chunk in dom_crcs (as DOM_READ's, from offset 0), so that
 * open, read and close of a small file are one round trip. No bulk:
 * dom_crcs empty (none asked for, none to send, or a resent OPEN answered
 * from the reply kept for it, which never holds the bytes).
 * wb (appended: absent from an older peer): in the request, one byte,
 * PROTO_OPEN_WANT_WB asking, for an open that creates the file, for the
 * write-behind grant as UNLINK's want_wb does; in the reply to one that
 * created it, PROTO_OPEN_WB_LEN bytes (proto_open_wb_put): the grant's
 * term in ms (0: refused) and number, and how many bytes the MDT's
 * Data-on-MDT records could still grow by when it was given (dom_max less
 * what they hold). With PROTO_OPEN_WANT_INOS too, the reply also hands
 * the client a range of inode numbers of this MDT to make files with
 * (DOM_WRITES' creates; the MDT keeps the client's last two ranges),
 * given with or without the grant; none when the MDT cannot spare one.
 * A resent OPEN answered from its kept reply has none. With
 * PROTO_OPEN_INOS_IDLE as well, the client says it uses no range it has
 * not used for an hour: the MDT may then forget its ranges once they are
 * unchanged for META_DLG_KEEP_NS (a client of before that bit asks
 * without it, and its ranges are kept). */
#define PROTO_OPEN_DOM_MAX   (1u << 20)
#define PROTO_OPEN_WANT_WB   1u
#define PROTO_OPEN_WANT_INOS 2u
#define PROTO_OPEN_INOS_IDLE 4u
#define PROTO_OPEN_WB_LEN    32
#define PROTO_OPEN_WB_LEN_V1 20
#define MSG_OPEN_REQ(F)                                                                            \
    F(CRED, cred)                                                                                  \
    F(U64, parent)                                                                                 \
    F(STR, path)                                                                                   \
    F(U32, flags)                                                                                  \
    F(U32, mode)                                                                                   \
    F(I32, stripe_count) F(U32, stripe_size) F(I32, stripe_offset) F(U32, dom_len) F(TBLOB, wb)
#define MSG_OPEN_REP(F)                                                                            \
    F(ATTR, attr)                                                                                  \
    F(LAYOUT, layout)                                                                              \
    F(U8, created)                                                                                 \
    F(U64, old_size) F(LEASES, leases) F(U8, marked) F(BLOB, dom_crcs) F(TBLOB, wb)
/* MKDIR: dir_count is how many MDTs to stripe the new directory over (0:
 * as the parent's default for new directories says, -1: all), dir_start
 * the MDT of its first shard and inode (-1: the MDT of its entry). */
#define MSG_MKDIR_REQ(F)                                                                           \
    F(CRED, cred) F(U64, parent) F(STR, path) F(U32, mode) F(I32, dir_count) F(I32, dir_start)
#define MSG_MKDIR_REP(F) F(ATTR, attr) F(LEASES, leases)
#include "msg_remove.h"
/* RENAME flags: Linux RENAME_NOREPLACE / RENAME_EXCHANGE. It goes to the
 * MDT of the source name; dmdt is the MDT the client found the destination
 * name on (the two may differ: a cross-MDT rename, which that MDT runs). */
#define MSG_RENAME_REQ(F)                                                                          \
    F(CRED, cred)                                                                                  \
    F(U64, sparent) F(STR, spath) F(U64, dparent) F(STR, dpath) F(U32, flags) F(U32, dmdt)
#define MSG_RENAME_REP(F)                                                                          \
    F(U64, replaced) F(U8, destroy) F(LAYOUT, layout) F(U8, gone) F(U64, size) F(LEASES, leases)
#define MSG_LINK_REQ(F)     F(CRED, cred) F(U64, ino) F(U64, dparent) F(STR, dpath)
#define MSG_LINK_REP(F)     F(ATTR, attr) F(LEASES, leases)
#define MSG_SYMLINK_REQ(F)  F(CRED, cred) F(U64, parent) F(STR, path) F(STR, target)
#define MSG_SYMLINK_REP(F)  F(ATTR, attr) F(LEASES, leases)
#define MSG_READLINK_REQ(F) F(CRED, cred) F(U64, ino)
#define MSG_READLINK_REP(F) F(STR, target)

/* OPEN's reply wb (proto_open_rep): written into out, and read back from
 * b: 0, or -ENODATA when b is absent or empty (no grant, room unknown),
 * -EBADMSG when it has another length than PROTO_OPEN_WB_LEN or (from a
 * peer of before ranges: no range) PROTO_OPEN_WB_LEN_V1. */
struct proto_open_wb {
    uint32_t ms;       /* the grant's term (0: refused) */
    uint64_t id;       /* its number */
    uint64_t dom_room; /* what the Data-on-MDT records may still grow by */
    uint64_t ino_lo;   /* a range of inode numbers for this client (0: none) */
    uint32_t ino_n;    /* its length */
};
void proto_open_wb_put(uint8_t out[PROTO_OPEN_WB_LEN], const struct proto_open_wb *w);
int proto_open_wb_get(const struct proto_tblob *b, struct proto_open_wb *w);

#endif
