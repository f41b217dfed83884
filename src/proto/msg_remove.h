/*
 * The removal messages of the wire protocol: UNLINK, UNLINKS (several
 * unlinks in one request) with its lists, RMDIR, and DESTROYED, which
 * tells an MDT that a removed file's objects are gone (proto.h, which
 * includes this inside its message definitions: it uses proto.h's field
 * kinds and types and is never included alone).
 */
#ifndef STRIA_PROTO_MSG_REMOVE_H
#define STRIA_PROTO_MSG_REMOVE_H

/* UNLINK: gone != 0 when the last link went (layout and size then hold a
 * regular file's layout and size); destroy != 0 when objects may exist: the client then
 * removes them, at once or after the file's last close. want_wb asks for the
 * write-behind grant (docs/architecture.md, "Write-behind unlink"): wb_ms is
 * its term (0: refused) and wb_id its number, which its revocation names. */
#define MSG_UNLINK_REQ(F) F(CRED, cred) F(U64, parent) F(STR, path) F(U8, want_wb)
#define MSG_UNLINK_REP(F)                                                                          \
    F(U64, ino)                                                                                    \
    F(U8, destroy)                                                                                 \
    F(LAYOUT, layout) F(U8, gone) F(U64, size) F(LEASES, leases) F(U32, wb_ms) F(U64, wb_id)
/* UNLINKS: several unlinks of one client in one request, which the MDT
 * commits together (as far as its batch allows): items holds 1 to
 * PROTO_MAX_UNLINKS entries {U64 parent, U64 seq, U16 tag, STR path}
 * (proto_unlinks_item_put/get), each an UNLINK of path from parent with
 * the request's cred and its own slot (tag, seq: 0 for none). results
 * holds, for each item in order, {I32 status, BLOB reply}: the UNLINK's
 * encoded reply when status is 0, empty otherwise. Each item's reply is
 * kept under its slot as an UNLINK's, so an item whose answer was lost
 * is sent again as an UNLINK RESEND; an UNLINKS is never resent. A list
 * that does not parse, is empty or too long, or names one seq twice:
 * -EINVAL, nothing done. */
#define PROTO_MAX_UNLINKS  64
#define MSG_UNLINKS_REQ(F) F(CRED, cred) F(U8, want_wb) F(BLOB, items)
#define MSG_UNLINKS_REP(F) F(BLOB, results)
#define MSG_RMDIR_REQ(F)   F(CRED, cred) F(U64, parent) F(STR, path)
#define MSG_RMDIR_REP(F)   F(LEASES, leases)

/* One item of an UNLINKS request's list. */
struct proto_unlinks_item {
    uint64_t parent, seq;
    uint16_t tag;
    struct proto_str path;
};
void proto_unlinks_item_put(struct proto_enc *e, const struct proto_unlinks_item *it);
/* The next item of d (an UNLINKS list): 0, or -EBADMSG. */
int proto_unlinks_item_get(struct proto_dec *d, struct proto_unlinks_item *it);

/* DESTROYED: a client removed the objects of inode ino, whose last link
 * went (UNLINK or RENAME said destroy), and of each inode in more (u64s,
 * little-endian, fewer than PROTO_MAX_DESTROYED; -EINVAL otherwise): the
 * MDT forgets that they were pending (stria fsck then no longer keeps
 * them from being orphans), all in one commit. */
#define PROTO_MAX_DESTROYED  64
#define MSG_DESTROYED_REQ(F) F(CRED, cred) F(U64, ino) F(BLOB, more)
#define MSG_DESTROYED_REP(F)

#endif
