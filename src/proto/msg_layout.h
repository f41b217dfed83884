/*
 * The messages of layouts, part of the wire protocol (proto.h, which
 * includes this inside its message definitions: it uses proto.h's field
 * kinds and is never included alone): a file's stripes (GETSTRIPE,
 * SETSTRIPE, LAYOUT_INTENT) and a directory's (SETDIRSTRIPE), the bytes
 * of a Data-on-MDT component (DOM_WRITE, DOM_READ), and online migration
 * with the fences it puts on the old objects (MIGRATE, FENCE).
 */
#ifndef STRIA_PROTO_MSG_LAYOUT_H
#define STRIA_PROTO_MSG_LAYOUT_H

/* GETSTRIPE: a file's layout, or a directory's default (dir_* fields, and
 * layout: its composite template, no components if it has none), and a
 * directory's stripe over MDTs (dstripe) and the default for new
 * subdirectories (ddefault: proto_dstripe's count and start, count 0xffff
 * all MDTs, start 0xffff the entry's MDT; 0 none). */
#define MSG_GETSTRIPE_REQ(F) F(CRED, cred) F(U64, ino)
#define MSG_GETSTRIPE_REP(F)                                                                       \
    F(U8, is_dir)                                                                                  \
    F(LAYOUT, layout)                                                                              \
    F(I32, dir_count) F(U32, dir_size) F(I32, dir_offset) F(U64, dstripe) F(U64, ddefault)
/* SETSTRIPE: on a directory its default; on a file that holds no data yet,
 * a new layout. count -1: all OSTs; offset -1: allocator's choice. With
 * components in comps (each pending: what it asks for), a composite
 * layout instead: a directory keeps it as its template (and count, size
 * and offset as the defaults the template leaves); a file gets it with
 * the components from offset 0 instantiated. */
#define MSG_SETSTRIPE_REQ(F)                                                                       \
    F(CRED, cred) F(U64, ino) F(I32, count) F(U32, size) F(I32, offset) F(LAYOUT, comps)
#define MSG_SETSTRIPE_REP(F) F(LAYOUT, layout) F(LEASES, leases)
/* LAYOUT_INTENT: a write is about to reach end: instantiate the pending
 * components of file ino that start before it (write permission, as a
 * write). Reply: the layout now. Made twice, it is made once. */
#define MSG_LAYOUT_INTENT_REQ(F) F(CRED, cred) F(U64, ino) F(U64, end)
#define MSG_LAYOUT_INTENT_REP(F) F(LAYOUT, layout) F(LEASES, leases)
/* SETDIRSTRIPE: the default stripe of new subdirectories of a directory
 * (count 0: none, -1: all MDTs; start -1: the entry's MDT). */
#define MSG_SETDIRSTRIPE_REQ(F) F(CRED, cred) F(U64, ino) F(I32, count) F(I32, start)
#define MSG_SETDIRSTRIPE_REP(F) F(LEASES, leases)
/* DOM_WRITE: the request's bulk at offset of file ino's Data-on-MDT
 * component, with one CRC32C per chunk as WRITE's (-EIO if the bulk does
 * not match them, -EBADMSG if crcs has the wrong length); -EFBIG past the
 * component's end, -EINVAL for what is not a regular file, -ESTALE for
 * a file without one (see gen below) or a superseded one, -EBUSY for a
 * released one. As a SETSIZE in the same step, the
 * file grows to offset + the bulk's length at least and its mtime becomes
 * mtime_ns (0: now): no size report follows. With zero and no bulk:
 * [offset, offset + zero) reads as zeros afterwards and the size stays (a
 * punch). A file whose last link went while a client keeps it open has no
 * inode but keeps its bytes until its DESTROYED: they are read and written
 * as they are, sizes aside. Made twice, made once. gen: the generation
 * of the component in the sender's layout (layout.h): once the file was
 * migrated to a layout whose first component is another, or none of type
 * mdt, -ESTALE (the sender fetches the layout and goes on with it); a
 * migration's copy writes into the generation it makes. */
#define MSG_DOM_WRITE_REQ(F)                                                                       \
    F(CRED, cred) F(U64, ino) F(U64, offset) F(I64, mtime_ns) F(BLOB, crcs) F(U32, zero) F(U8, gen)
#define MSG_DOM_WRITE_REP(F) F(ATTR, attr) F(LEASES, leases)
/* DOM_WRITES: several DOM_WRITEs of one client to this MDT in one request
 * and one commit (a client's small files written behind their close:
 * docs/architecture.md, "Small files written behind"). items holds 1 to
 * PROTO_MAX_DOM_WRITES entries {U64 ino, U64 offset, I64 mtime_ns, U32
 * len, U8 gen, BLOB crcs} (proto_dom_writes_item_put/get), each a
 * DOM_WRITE of the next len bytes of the request's bulk, in order, with
 * the request's cred; their lengths, each above 0, add up to the bulk's.
 * results holds, for each item in order, {I32 status, BLOB reply}
 * (proto_result_put/get): the DOM_WRITE's encoded reply when status is 0,
 * empty otherwise. The items are made in order in one transaction; one
 * that fails changes nothing and the others are made all the same.
 * Made twice, made once, as DOM_WRITE: a client whose answer was lost
 * sends the request again whole. A list that does not parse, is empty or
 * too long, or does not match the bulk: -EINVAL, nothing done.
 * creates (appended: absent from an older peer) makes files written
 * behind their create (docs/architecture.md, "Files created behind"):
 * entries {U16 item, U64 parent, STR name, U32 mode, U32 flags, CRED cred}
 * (proto_dom_create_put/get), in the order of their items, each making
 * name in directory parent a new regular file numbered as item's ino, as
 * an OPEN with O_CREAT | O_EXCL, flags (O_ACCMODE) and mode by cred
 * would, before the item's bytes are written; such an item may have no
 * bytes (len 0). The number must be one of the client's ranges
 * (PROTO_OPEN_WANT_INOS) not used before, else -ESTALE; a name that holds
 * that number already is a create made before (a resend), and is not made
 * again. A create item's reply in results is an OPEN's (its attr, layout,
 * leases, created and marked), not a DOM_WRITE's; an item after it that
 * writes the file it failed to make fails as it did. A list that does not parse or names an item
 * twice or out of order: -EINVAL, nothing done. */
#define PROTO_MAX_DOM_WRITES  32
#define MSG_DOM_WRITES_REQ(F) F(CRED, cred) F(BLOB, items) F(TBLOB, creates)
struct proto_dom_create {
    uint16_t item;
    uint64_t parent;
    struct proto_str name;
    uint32_t mode, flags;
    struct proto_cred cred;
};
void proto_dom_create_put(struct proto_enc *e, const struct proto_dom_create *c);
/* The next entry of d (a DOM_WRITES creates list): 0, or -EBADMSG. */
int proto_dom_create_get(struct proto_dec *d, struct proto_dom_create *c);
#define MSG_DOM_WRITES_REP(F) F(BLOB, results)
struct proto_dom_writes_item {
    uint64_t ino, offset;
    int64_t mtime_ns;
    uint32_t len;
    uint8_t gen;
    struct proto_blob crcs;
};
void proto_dom_writes_item_put(struct proto_enc *e, const struct proto_dom_writes_item *it);
/* The next item of d (a DOM_WRITES list): 0, or -EBADMSG. */
int proto_dom_writes_item_get(struct proto_dec *d, struct proto_dom_writes_item *it);
/* DOM_READ: [offset, offset + len) of the component as the reply's bulk,
 * short at the component's end, zeros where nothing was written, with
 * CRCs as READ's; -EIO when the store's copy fails its checksum; gen and
 * -ESTALE as DOM_WRITE's. */
#define MSG_DOM_READ_REQ(F) F(CRED, cred) F(U64, ino) F(U64, offset) F(U32, len) F(U8, gen)
#define MSG_DOM_READ_REP(F) F(BLOB, crcs)
/* MIGRATE: the steps of an online migration of file ino (stria migrate;
 * docs/architecture.md, "Migration"), each by its op:
 * - BEGIN: layout is the template of the new layout (as SETSTRIPE's
 *   comps); the MDT keeps a migration record {id, old layout, new
 *   layout} and answers them with the file's size. The new layout's
 *   components below the size are instantiated, in the next generation
 *   of objects (LAYOUT_GEN_MASK). -EBUSY while another migration of the
 *   file is alive; one that made no PROGRESS for stale_ms is taken
 *   over (the reply's stale then says so, and old/new are the dead
 *   one's, for the caller to clean up first: BEGIN again after an ABORT
 *   of it). The owner or root only; a regular file; -EBUSY if released.
 *   A Data-on-MDT component keeps its bytes in the MDT's one record of
 *   the file, on either side: the copy writes only what the new
 *   component holds past the old one's end.
 * - PROGRESS: the migration of id is alive (the copy goes on). A
 *   migrator sends it at most every stale_ms / 6, before it writes.
 * - SWAP: the file's layout becomes the new one, atomically, unless it
 *   changed since BEGIN (a component instantiated: -ESTALE). The record
 *   stays (state SWAPPED) until DONE, so that the old objects are not
 *   forgotten before they are destroyed; the file's Data-on-MDT record
 *   keeps what the new layout's component holds. Data-on-MDT bytes
 *   changed since BEGIN (the MDT notes it; no fence stops them): no swap,
 *   the state stays COPYING and the record is cut back to the old
 *   component, for the caller to copy again.
 * - DONE: the old objects are gone: the record goes.
 * - ABORT: the record of id goes (before SWAP only), and the file's
 *   Data-on-MDT record is cut back to its old component.
 * - STATE: the record, if any (-ENOENT if none; read permission).
 * Every op but BEGIN and STATE names the migration's id (-ESTALE if it
 * is not the file's any more). A stale migration may be aborted or done
 * by anyone who may write the file (a writer waiting on its fences).
 * Every reply's stale_ms is the MDT's migrate_stale_ms (appended within
 * version 4). */
enum {
    MIGRATE_BEGIN = 1,
    MIGRATE_PROGRESS,
    MIGRATE_SWAP,
    MIGRATE_DONE,
    MIGRATE_ABORT,
    MIGRATE_STATE
};
enum { MIGRATE_COPYING = 1, MIGRATE_SWAPPED = 2 };
#define MSG_MIGRATE_REQ(F) F(CRED, cred) F(U64, ino) F(U8, op) F(U64, id) F(LAYOUT, layout)
#define MSG_MIGRATE_REP(F)                                                                         \
    F(U64, id)                                                                                     \
    F(U8, state)                                                                                   \
    F(U8, stale) F(U64, size) F(LAYOUT, old) F(LAYOUT, layout) F(LEASES, leases) F(U32, stale_ms)
/* FENCE: one object's part in a migration (MIGRATE), by op:
 * - STAMP: the object's write stamp (it changes with every write,
 *   truncate or punch that finished; instance: the daemon's, whose
 *   restart changes every stamp), its size and whether it exists.
 * - SET: from now on writes, truncates and punches of the object answer
 *   -ESTALE (its file is being given another layout); the stamp after
 *   every write in progress finished.
 * - CLEAR: the fence of migration id goes (id 0: any).
 * - DEAD: the object's file has its new layout: reads answer -ESTALE as
 *   well, and the fence stays after the object is destroyed, so that a
 *   handle with the old layout learns of the new one rather than reading
 *   holes or making the object again.
 * - FORGET: file ino is gone (its last link went and its objects were
 *   destroyed): every fence of it on the OST goes, dead or not. comp,
 *   stripe and id are not looked at.
 * Fences are kept on disk (fence/ beside objects/). */
enum { FENCE_STAMP = 1, FENCE_SET, FENCE_CLEAR, FENCE_DEAD, FENCE_FORGET };
#define MSG_FENCE_REQ(F) F(U32, ost) F(U64, ino) F(U32, comp) F(U32, stripe) F(U8, op) F(U64, id)
#define MSG_FENCE_REP(F) F(U64, instance) F(U64, stamp) F(U64, size) F(U8, exists)

#endif
