/*
 * The Stria wire protocol.
 *
 * Every message is a fixed 56-byte little-endian header, a payload encoded
 * field by field with the bounds-checked cursors below, then raw bulk data
 * (file contents) that receivers read straight into its destination.
 *
 * Header layout (offsets in bytes):
 *   0 magic u32 "STRA"   4 version u16   6 opcode u16   8 flags u32
 *  12 status i32 (negative errno in replies)            16 reqid u64
 *  24 client_id u64      32 seq u64      40 payload_len u32
 *  44 bulk_len u32       48 reserved u32 52 hdr_crc u32 (CRC32C of bytes 0..51)
 *
 * Every message is declared once, in PROTO_MESSAGES below, with its request
 * and reply fields; the table generates opcodes, names, C structs and
 * codecs. Fields are only ever appended: decoders ignore trailing bytes they
 * do not know, so an older peer can read a newer peer's messages.
 */
#ifndef STRIA_PROTO_H
#define STRIA_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_MAGIC       0x41525453u /* "STRA" little-endian */
#define PROTO_VERSION     4
#define PROTO_MIN_VERSION 4 /* the oldest a server speaks */
#define PROTO_HDR_LEN     56
#define PROTO_FLAG_REPLY  1u
/* A change sent again after its connection broke (protocol.md, "Resending"). */
#define PROTO_FLAG_RESEND 2u
/* A change's slot (1..65535, 0: none) is the flags' upper 16 bits: the
 * client uses it for no other change until this one is answered. */
#define PROTO_TAG_SHIFT  16
#define PROTO_HDR_TAG(h) ((uint16_t)((h)->flags >> PROTO_TAG_SHIFT))

/* Per-direction maxima, checked before anything is allocated. */
/* A request holds a whole xattr value (64 KiB) besides its other fields. */
#define PROTO_MAX_REQ_PAYLOAD (128u << 10)
#define PROTO_MAX_REP_PAYLOAD (1u << 20)
#define PROTO_MAX_BULK        (16u << 20)
#define PROTO_MAX_STR         4096u /* paths, symlink targets */
#define PROTO_MAX_NAME        255u  /* one path component */
#define PROTO_MAX_XATTR       (64u << 10)
#define PROTO_MAX_GROUPS      32u   /* supplementary groups carried in a credential */
#define PROTO_MAX_TARGETS     256u  /* targets per node in a heartbeat */
#define PROTO_MAX_LEASES      8u    /* lease entries in one metadata reply */
#define PROTO_MAX_REVOKES     4096u /* revocations in one LEASE_POLL reply */

struct proto_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t opcode;
    uint32_t flags;
    int32_t status;
    uint64_t reqid;
    uint64_t client_id;
    uint64_t seq;
    uint32_t payload_len;
    uint32_t bulk_len;
};

void proto_hdr_encode(const struct proto_hdr *h, uint8_t out[PROTO_HDR_LEN]);
/* Returns 0, -EBADMSG (magic or checksum), -EPROTO (version) or -EMSGSIZE
 * (payload or bulk above the maximum for that direction: replies may carry
 * larger payloads than requests). */
int proto_hdr_decode(const uint8_t in[PROTO_HDR_LEN], struct proto_hdr *h);

/* Encoding cursor over a caller-owned buffer. The first failure sticks in
 * err (-EMSGSIZE) and every later put is a no-op; check err once at the end. */
struct proto_enc {
    uint8_t *buf;
    size_t cap, len;
    int err;
};
/* Decoding cursor; a read past the end or an oversized length sets err
 * (-EBADMSG) and yields zeros. Decoded strings and blobs point into buf. */
struct proto_dec {
    const uint8_t *buf;
    size_t len, off;
    int err;
};

static inline void proto_enc_init(struct proto_enc *e, void *buf, size_t cap)
{
    e->buf = buf;
    e->cap = cap;
    e->len = 0;
    e->err = 0;
}
static inline void proto_dec_init(struct proto_dec *d, const void *buf, size_t len)
{
    d->buf = buf;
    d->len = len;
    d->off = 0;
    d->err = 0;
}

/* A string or blob as decoded: not NUL-terminated, points into the message. */
struct proto_str {
    const char *p;
    uint32_t len;
};
struct proto_blob {
    const uint8_t *p;
    uint32_t len;
};

/* Copy a decoded string into buf as a C string; -ENAMETOOLONG if it does not
 * fit, -EINVAL if it holds a NUL byte. */
int proto_str_copy(const struct proto_str *s, char *buf, size_t buflen);
static inline struct proto_str proto_str_c(const char *s);

/* The caller's identity, checked by the metadata service. */
struct proto_cred {
    uint32_t uid, gid;
    uint32_t ngroups;
    uint32_t groups[PROTO_MAX_GROUPS];
};

/* Little-endian integers at p (blobs whose entries the codecs do not know). */
uint64_t proto_le64(const uint8_t *p);
void proto_put_le64(uint8_t *p, uint64_t v);
uint32_t proto_le32(const uint8_t *p);
void proto_put_le32(uint8_t *p, uint32_t v);

/* Whether c is gid or has it among its groups. */
bool proto_cred_in_group(const struct proto_cred *c, uint32_t gid);
/* The permission rule of the MDT, which a client's cache applies too: may
 * c access an inode of mode, uid and gid for mask (4 read, 2 write, 1
 * execute or search)? Root may do anything but execute a file no one may. */
bool proto_cred_may(const struct proto_cred *c, uint32_t mode, uint32_t uid, uint32_t gid,
                    unsigned mask);
/* The mode bits a write or truncate drops when its caller lacks
 * CAP_FSETID, as Linux's: set-user-ID, and set-group-ID where the group
 * may execute. */
uint32_t proto_mode_kill_privs(uint32_t mode);
/* May c remove (or rename away) a name holding an inode owned by
 * victim_uid from the directory of dmode, duid and dgid? Write and search
 * on it, and with its sticky bit set, c owns it or the victim (or is root). */
bool proto_cred_may_delete(const struct proto_cred *c, uint32_t dmode, uint32_t duid, uint32_t dgid,
                           uint32_t victim_uid);

/* File attributes as the metadata service reports them. */
struct proto_attr {
    uint64_t ino;
    uint32_t mode, nlink, uid, gid;
    uint64_t size, blocks;
    int64_t atime_ns, mtime_ns, ctime_ns;
    uint64_t rdev;
    uint64_t dstripe; /* directories: proto_dstripe, 0 plain */
};

/*
 * A directory's stripe over MDTs (DESIGN §4, Lustre DNE): its entries are
 * spread by a hash of their name over `count` MDTs, shard k on MDT
 * (start + k) mod nmdt, where nmdt is how many MDTs the file system had
 * when the directory was made. A plain directory (count 0 or 1) keeps its
 * entries on the MDT of its inode. Packed into 64 bits on the wire and on
 * disk: count | start << 16 | nmdt << 32 | hash << 48.
 */
#define PROTO_DS_HASH_FNV  1u
#define PROTO_DS_MAX_COUNT 4096u
struct proto_dstripe {
    uint16_t count, start, nmdt;
    uint8_t hash;
};
static inline uint64_t proto_ds_pack(struct proto_dstripe d)
{
    return d.count | (uint64_t)d.start << 16 | (uint64_t)d.nmdt << 32 | (uint64_t)d.hash << 48;
}
static inline struct proto_dstripe proto_ds_unpack(uint64_t v)
{
    struct proto_dstripe d = {(uint16_t)v, (uint16_t)(v >> 16), (uint16_t)(v >> 32),
                              (uint8_t)(v >> 48)};
    return d;
}
/* Whether a packed stripe is one the code knows (0, plain, is). */
bool proto_ds_valid(uint64_t v);
/* The MDT of shard k. */
uint32_t proto_ds_shard_mdt(uint64_t ds, uint32_t k);
/* The MDT that holds name in a directory of stripe ds whose inode is on
 * MDT home. */
uint32_t proto_ds_name_mdt(uint64_t ds, uint32_t home, const char *name, size_t len);
/* The number of shards (1 for a plain directory). */
static inline uint32_t proto_ds_count(uint64_t ds)
{
    uint32_t c = (uint16_t)ds;
    return c ? c : 1;
}

/*
 * A layout: a list of components (PFL, Lustre's composite layouts), each
 * covering [start, end) of the file with its own stripe size, count and
 * ordered target groups. Objects are named (inode, component index, stripe
 * index) on the OST of the group. The components are contiguous from 0
 * and the last ends at LAYOUT_END_EOF.
 *
 * A component is instantiated (its OSTs chosen) when the file is created
 * if it starts at 0, else when a write first reaches it (LAYOUT_INTENT); until
 * then it is pending (LAYOUT_F_PENDING): it has no objects, reads of it are
 * holes, and its fields say what it asks for: stripe_count (0: the
 * directory's or file system's default, LAYOUT_COUNT_ALL: every usable
 * OST), stripe_size (0: the default) and groups[0] the first OST wanted
 * (LAYOUT_ANY_OST: any). A directory's composite default is such a
 * layout with every component pending.
 *
 * A first component of type LAYOUT_TYPE_MDT (Data-on-MDT) keeps its
 * bytes in the store of the file's MDT (groups[0]), not on an OST: one
 * stripe as large as the component, which ends at LAYOUT_DOM_MAX at most.
 *
 * A component may name an OST pool (pool, NUL-terminated, "" none;
 * LAYOUT_F_POOL in its type says the name follows on the wire): its
 * stripes are allocated among the pool's OSTs only.
 */
#define LAYOUT_MAX_COMP    4
#define LAYOUT_MAX_STRIPES 256
#define LAYOUT_TYPE_OST    0
#define LAYOUT_TYPE_MDT    1
#define LAYOUT_DOM_MAX     (1u << 30) /* Lustre's largest dom_stripesize */
#define LAYOUT_TYPE_MASK   0x00ffu
#define LAYOUT_POOL_MAX    15 /* Lustre's LOV_MAXPOOLNAME */
/* In any component's type: a pool name follows it on the wire. */
#define LAYOUT_F_POOL 0x2000u
/* In any component's type: not instantiated yet (above). */
#define LAYOUT_F_PENDING 0x4000u
/* In the first component's type: the file is released (its data is in S3
 * only; proto.h's HSM messages), as Lustre's LOV_PATTERN_F_RELEASED. */
#define LAYOUT_F_RELEASED 0x8000u
/* In any component's type: the generation of its objects (0 to 15). An
 * object is named by (inode, component id, stripe), and a component's id
 * is its index plus LAYOUT_MAX_COMP times its generation, so a migration
 * (stria migrate) writes a file's data into objects of the next
 * generation while the old ones still hold it. */
#define LAYOUT_GEN_SHIFT 8
#define LAYOUT_GEN_MASK  0x0f00u
#define LAYOUT_END_EOF   UINT64_MAX
#define LAYOUT_COUNT_ALL 0xffffu
#define LAYOUT_ANY_OST   UINT32_MAX
struct layout_comp {
    uint64_t start, end;
    uint32_t stripe_size;
    uint16_t stripe_count;
    uint16_t type;
    char pool[LAYOUT_POOL_MAX + 1];
    uint32_t groups[LAYOUT_MAX_STRIPES];
};
struct layout {
    uint16_t ncomp;
    struct layout_comp comp[LAYOUT_MAX_COMP];
};

/* Statistics of one target (MDT or OST). */
struct proto_tstat {
    uint32_t index;
    uint64_t bytes_total, bytes_used, bytes_avail;
    uint64_t inodes_total, inodes_used;
};
struct proto_tstats {
    uint32_t n;
    struct proto_tstat t[PROTO_MAX_TARGETS];
};

/*
 * Metadata leases (docs/architecture.md, "Metadata leases"). A lease on an
 * inode lets one client cache the inode's attributes and, for a directory,
 * its names, until the MDT revokes it or ms milliseconds after the client
 * sent the request. gen numbers the inode's state: every change moves it
 * forward; a reply to a change says the state before (gen_before) and after
 * (gen), so the client that made the change can update its cache instead
 * of dropping it. ms 0: no lease (forget what is cached for ino). instance
 * names the MDT process that granted: leases die with it. A change's reply
 * also carries the attributes of what it changed (has_attr), so that the
 * changer can go on answering from its cache.
 */
struct proto_lease {
    uint64_t ino, gen_before, gen;
    uint32_t ms;
    uint8_t has_attr;
    struct proto_attr attr;
};
struct proto_leases {
    uint64_t instance;
    uint32_t n;
    struct proto_lease l[PROTO_MAX_LEASES];
};

/* Node kinds in the cluster map. */
enum { PROTO_NODE_MGMT = 0, PROTO_NODE_META = 1, PROTO_NODE_STOR = 2 };

/* Field kinds and their C types. */
typedef uint8_t proto_ct_U8;
typedef uint16_t proto_ct_U16;
typedef uint32_t proto_ct_U32;
typedef uint64_t proto_ct_U64;
typedef int32_t proto_ct_I32;
typedef int64_t proto_ct_I64;
typedef struct proto_str proto_ct_STR;
typedef struct proto_blob proto_ct_BLOB;
/* A blob appended to a message after it first shipped: a message that ends
 * before it (an older peer's) decodes it as empty and absent, and an
 * absent one is encoded as nothing, so it round-trips. */
struct proto_tblob {
    const uint8_t *p;
    uint32_t len;
    bool absent;
};
typedef struct proto_tblob proto_ct_TBLOB;
typedef struct proto_cred proto_ct_CRED;
typedef struct proto_attr proto_ct_ATTR;
typedef struct layout proto_ct_LAYOUT;
typedef struct proto_tstats proto_ct_TSTATS;
typedef struct proto_leases proto_ct_LEASES;

void proto_put_U8(struct proto_enc *e, const uint8_t *v);
void proto_put_U16(struct proto_enc *e, const uint16_t *v);
void proto_put_U32(struct proto_enc *e, const uint32_t *v);
void proto_put_U64(struct proto_enc *e, const uint64_t *v);
void proto_put_I32(struct proto_enc *e, const int32_t *v);
void proto_put_I64(struct proto_enc *e, const int64_t *v);
void proto_put_STR(struct proto_enc *e, const struct proto_str *v);
void proto_put_BLOB(struct proto_enc *e, const struct proto_blob *v);
void proto_put_TBLOB(struct proto_enc *e, const struct proto_tblob *v);
void proto_put_CRED(struct proto_enc *e, const struct proto_cred *v);
void proto_put_ATTR(struct proto_enc *e, const struct proto_attr *v);
void proto_put_LAYOUT(struct proto_enc *e, const struct layout *v);
void proto_put_TSTATS(struct proto_enc *e, const struct proto_tstats *v);
void proto_put_LEASES(struct proto_enc *e, const struct proto_leases *v);
void proto_get_U8(struct proto_dec *d, uint8_t *v);
void proto_get_U16(struct proto_dec *d, uint16_t *v);
void proto_get_U32(struct proto_dec *d, uint32_t *v);
void proto_get_U64(struct proto_dec *d, uint64_t *v);
void proto_get_I32(struct proto_dec *d, int32_t *v);
void proto_get_I64(struct proto_dec *d, int64_t *v);
void proto_get_STR(struct proto_dec *d, struct proto_str *v);
void proto_get_BLOB(struct proto_dec *d, struct proto_blob *v);
void proto_get_TBLOB(struct proto_dec *d, struct proto_tblob *v);
void proto_get_CRED(struct proto_dec *d, struct proto_cred *v);
void proto_get_ATTR(struct proto_dec *d, struct proto_attr *v);
void proto_get_LAYOUT(struct proto_dec *d, struct layout *v);
void proto_get_TSTATS(struct proto_dec *d, struct proto_tstats *v);
void proto_get_LEASES(struct proto_dec *d, struct proto_leases *v);
/* One result of a list reply (UNLINKS, DOM_WRITES): {I32 status, BLOB
 * rep}, rep the item's reply encoded as its single request's. */
void proto_result_put(struct proto_enc *e, int32_t status, struct proto_blob rep);
int proto_result_get(struct proto_dec *d, int32_t *status, struct proto_blob *rep);

/* ---- The message table ----------------------------------------------- */

/* HELLO: server -> client when a connection opens (no reply expected).
 * nonce is the authentication challenge. */
#define MSG_HELLO_REQ(F) F(U16, min_version) F(U16, max_version) F(BLOB, nonce) F(U64, server_id)
#define MSG_HELLO_REP(F)
/* AUTH: client -> server, the answer; a non-zero reply status closes it. */
#define MSG_AUTH_REQ(F) F(U16, version) F(BLOB, mac) F(STR, name)
#define MSG_AUTH_REP(F) F(U16, version)
#define MSG_PING_REQ(F)
#define MSG_PING_REP(F)

/* HEARTBEAT: metad/stord -> mgmtd every heartbeat interval; registers the
 * node on first contact. host:port is where the node serves. */
#define MSG_HEARTBEAT_REQ(F)                                                                       \
    F(U8, kind) F(STR, node) F(STR, host) F(U16, port) F(U64, incarnation) F(TSTATS, targets)
#define MSG_HEARTBEAT_REP(F) F(U64, epoch)
/* GET_MAP: the cluster map, encoded by map.h into a blob. */
#define MSG_GET_MAP_REQ(F)
#define MSG_GET_MAP_REP(F) F(U64, epoch) F(STR, fsname) F(BLOB, map)
/* POOL: change the OST pools of file system fsname (root only): op NEW or
 * DESTROY pool (DESTROY of a pool that still has OSTs: ENOTEMPTY), ADD or
 * REMOVE the OSTs in osts (U32 indices, little-endian) to or from it. All
 * or nothing. Reply: the map's epoch after the change; the pools reach
 * everyone in GET_MAP. Not resent after its connection broke: an ADD made
 * twice answers EEXIST. */
enum { PROTO_POOL_NEW = 1, PROTO_POOL_ADD, PROTO_POOL_REMOVE, PROTO_POOL_DESTROY };
#define MSG_POOL_REQ(F) F(CRED, cred) F(U8, op) F(STR, fsname) F(STR, pool) F(BLOB, osts)
#define MSG_POOL_REP(F) F(U64, epoch)

#include "msg_ns.h"
#include "msg_dir.h"
#include "msg_layout.h"
#define MSG_SETXATTR_REQ(F)    F(CRED, cred) F(U64, ino) F(STR, name) F(BLOB, value) F(U32, flags)
#define MSG_SETXATTR_REP(F)    F(LEASES, leases)
#define MSG_GETXATTR_REQ(F)    F(CRED, cred) F(U64, ino) F(STR, name)
#define MSG_GETXATTR_REP(F)    F(BLOB, value)
#define MSG_LISTXATTR_REQ(F)   F(CRED, cred) F(U64, ino)
#define MSG_LISTXATTR_REP(F)   F(BLOB, names)
#define MSG_REMOVEXATTR_REQ(F) F(CRED, cred) F(U64, ino) F(STR, name)
#define MSG_REMOVEXATTR_REP(F) F(LEASES, leases)
/* SETSIZE: a writer reports the end of what it wrote; the MDT keeps the
 * maximum and updates mtime. */
#define MSG_SETSIZE_REQ(F) F(CRED, cred) F(U64, ino) F(U64, size) F(I64, mtime_ns)
#define MSG_SETSIZE_REP(F) F(ATTR, attr) F(LEASES, leases)
/* STATFS: the MDT's figures, its released files (their sizes, their
 * count), and its Data-on-MDT bytes: what its records hold and what they
 * may hold (its dom_max; 0: Data-on-MDT is off there). */
#define MSG_STATFS_REQ(F)
#define MSG_STATFS_REP(F)                                                                          \
    F(TSTATS, targets)                                                                             \
    F(U64, released_bytes) F(U64, released_files) F(U64, dom_bytes) F(U64, dom_max)
/* SYNC: make every acknowledged metadata change durable. */
#define MSG_SYNC_REQ(F)
#define MSG_SYNC_REP(F)
/* LEASE_POLL: a client's revocation channel (one connection per MDT).
 * acked: the sequence number of the last revocation the client has
 * applied (its cache no longer uses those leases). The MDT answers when it
 * has revocations for the client, or after about a second with none:
 * revokes holds (U64 ino, U64 gen) pairs numbered from first; kinds
 * (appended: an older MDT sends none) one byte each, PROTO_REVOKE_NAMES
 * when only the names of directory ino changed (and with them its times
 * and link count: never its mode, owner or xattrs), 0 for any other
 * change; a revocation without a byte is 0. bye: the client drops every
 * lease it holds and leaves. */
#define PROTO_REVOKE_NAMES    1u
#define MSG_LEASE_POLL_REQ(F) F(U64, acked) F(U8, bye)
#define MSG_LEASE_POLL_REP(F) F(U64, instance) F(U64, first) F(BLOB, revokes) F(TBLOB, kinds)
/* STATS: what a server's requests cost since it started (every server
 * answers it). uptime_ns, then ops: per kind of request served at least
 * once, PROTO_STAT_LEN bytes {u16 opcode, u64 count, u64 errors,
 * u64 total_ns, u64 max_ns, u64 hist[PROTO_STAT_BUCKETS]}, where hist[i]
 * counts requests served in [2^(i-1), 2^i) microseconds (hist[0]: under
 * 1 us; the last bucket has no upper bound). Times are the handler's, from
 * a decoded request to its encoded reply, less the time it waited.
 * Appended: waits, per kind in ops, PROTO_WAIT_LEN bytes {u16 opcode,
 * u64 total_ns, u64 max_ns, u64 hist[PROTO_STAT_BUCKETS]}: how long its
 * requests waited before their service began (queued for the MDT's group
 * commit, or for a server's workers); clients, the busiest (most requests
 * since the server started) of them, PROTO_CLIENT_LEN bytes each {u64
 * client_id, u64 requests, u64 service_ns, u64 wait_ns, char
 * ip[PROTO_CLIENT_IP] (its last connection's address, NUL-padded)}. */
#define PROTO_STAT_BUCKETS 24u
#define PROTO_STAT_LEN     (2u + 8u * (4u + PROTO_STAT_BUCKETS))
#define PROTO_WAIT_LEN     (2u + 8u * (2u + PROTO_STAT_BUCKETS))
#define PROTO_CLIENT_IP    48u
#define PROTO_CLIENT_LEN   (8u * 4u + PROTO_CLIENT_IP)
#define PROTO_STAT_CLIENTS 16u /* the busiest clients a STATS reply names */
/* FSCK: check one MDT's namespace (meta/fsck.h), and with repair fix it;
 * root only. text: one line per finding, the first that fit. */
#define PROTO_MAX_FSCK_TEXT (64u << 10)
/* refs: the MDT's cross-MDT references (xrefs.h); refs_full: not all fit. */
#define PROTO_MAX_FSCK_REFS (PROTO_MAX_REP_PAYLOAD - PROTO_MAX_FSCK_TEXT - 1024)
#define MSG_FSCK_REQ(F)     F(CRED, cred) F(U8, repair) F(BLOB, fixes)
#define MSG_FSCK_FOUND(F)                                                                          \
    F(U64, dangling) F(U64, orphans) F(U64, bad_nlink) F(U64, bad_parent) F(U64, corrupt)
#define MSG_FSCK_REP(F)                                                                            \
    F(U64, inodes)                                                                                 \
    F(U64, entries)                                                                                \
    MSG_FSCK_FOUND(F) F(U64, fixed) F(BLOB, text) F(U64, open_ops) F(BLOB, refs) F(U8, refs_full)
#define MSG_STATS_REQ(F)
#define MSG_STATS_REP(F) F(U64, uptime_ns) F(BLOB, ops) F(TBLOB, waits) F(TBLOB, clients)
/* SHARD: MDT -> MDT, a step of a cross-MDT operation (docs/architecture.md,
 * "Cross-MDT operations"), op one of PROTO_SHARD_*: ALLOC a new inode number
 * of the receiving MDT (ino); PUT the inode record rec (an MDT's own
 * encoding) there; DEL inode ino there, which must hold no entries and, if
 * a directory, be sealed by txid (or arg 1: a record an unfinished mkdir
 * made, never sealed); SEAL a directory's record for txid against new
 * entries if it holds none (else ENOTEMPTY; EBUSY while another txid holds
 * the seal), UNSEAL it if txid holds the seal (else nothing); ATTR: copy a
 * striped directory's attributes (owner, mode, defaults) from rec onto its
 * shard there, its ctime where later than the shard's, and its atime with
 * arg bit PROTO_SHARD_ATTR_ATIME, its mtime with PROTO_SHARD_ATTR_MTIME
 * (they were set: otherwise a shard's times are its own names', which a
 * client merges). The reply says the record's owner (uid)
 * and stripe (dstripe). Every step but ALLOC may be repeated and changes nothing the second time.
 * Root only. */
enum {
    PROTO_SHARD_ALLOC = 1,
    PROTO_SHARD_PUT,
    PROTO_SHARD_DEL,
    PROTO_SHARD_SEAL,
    PROTO_SHARD_UNSEAL,
    PROTO_SHARD_ATTR,
    PROTO_SHARD_PARENT,
    PROTO_SHARD_SETPARENT,
    PROTO_SHARD_LOCK,
    PROTO_SHARD_UNLOCK
};
#define PROTO_SHARD_ATTR_ATIME 1u
#define PROTO_SHARD_ATTR_MTIME 2u
/* PARENT: a directory's parent (reply ino) and stripe; SETPARENT: make arg
 * its parent; LOCK, UNLOCK: the file system's rename lock on MDT 0 for
 * txid (LOCK answers EBUSY while another holds it; a lock lapses after 30 s),
 * which every move of a directory to another parent takes first. */
#define MSG_SHARD_REQ(F) F(CRED, cred) F(U64, txid) F(U8, op) F(U64, ino) F(BLOB, rec) F(U64, arg)
/* XNAME: MDT -> MDT, a step of a cross-MDT rename, link or unlink, op one
 * of PROTO_XNAME_*: HOLD name in dir for txid (no other change may touch it
 * until COMMIT or RELEASE) after checking that inode ino of type may take
 * it with cred (flags: RENAME_NOREPLACE); the reply says what the name
 * holds now (ino 0: nothing). COMMIT: point the name at ino and let go.
 * RELEASE: let go. LINK_ADD, LINK_DROP: add or drop a link of inode ino,
 * once per txid (a repeat does nothing; the drop's reply says whether the
 * inode went, with its layout); LINK_UNDO: undo txid's LINK_ADD if it
 * happened; FORGET: forget txid. */
enum {
    PROTO_XNAME_HOLD = 1,
    PROTO_XNAME_COMMIT,
    PROTO_XNAME_RELEASE,
    PROTO_XNAME_LINK_ADD,
    PROTO_XNAME_LINK_DROP,
    PROTO_XNAME_LINK_UNDO,
    PROTO_XNAME_FORGET
};
#define MSG_XNAME_REQ(F)                                                                           \
    F(CRED, cred)                                                                                  \
    F(U64, txid) F(U8, op) F(U64, dir) F(STR, name) F(U64, ino) F(U8, type) F(U32, flags)
#define MSG_XNAME_REP(F)                                                                           \
    F(U64, ino)                                                                                    \
    F(U8, type) F(U32, uid) F(U8, gone) F(U8, destroy) F(LAYOUT, layout) F(U64, size) F(ATTR, attr)
#define MSG_SHARD_REP(F) F(U64, ino) F(U32, uid) F(U64, dstripe)

/* MKNOD: a special file (FIFO, character or block device, Unix socket)
 * or, as mknod(2) allows, a plain regular file: mode's type bits S_IFIFO,
 * S_IFCHR, S_IFBLK, S_IFSOCK or S_IFREG (0 is S_IFREG); rdev the device
 * number (glibc's dev_t), kept for devices only. Other types: EINVAL
 * (S_IFDIR: EPERM, as Linux); a device by anyone but root: EPERM. */
#define MSG_MKNOD_REQ(F) F(CRED, cred) F(U64, parent) F(STR, path) F(U32, mode) F(U64, rdev)
#define MSG_MKNOD_REP(F) F(ATTR, attr) F(LEASES, leases)

/* The messages of data repositories on S3 (HSM_*, REPO, the movers'). */
#include "msg_hsm.h"

/* Storage: one object of one file on one OST. */
/* WRITE's crcs and READ's: a CRC32C of each chunk of the bulk (csum.h).
 * A READ's reply may instead come straight from the OST's cache, unread
 * by it: then alt is not empty, and each chunk is a whole block (or the
 * object's last) that must match its CRC in crcs or in alt (the block's
 * CRC before its last write). A READ with flags PROTO_READ_CHECKED is
 * always read and checked by the OST (protocol.md, "Version 4"). */
#define PROTO_READ_CHECKED 1u
#define MSG_WRITE_REQ(F)                                                                           \
    F(U32, ost) F(U64, ino) F(U32, comp) F(U32, stripe) F(U64, offset) F(BLOB, crcs)
#define MSG_WRITE_REP(F)
#define MSG_READ_REQ(F)                                                                            \
    F(U32, ost) F(U64, ino) F(U32, comp) F(U32, stripe) F(U64, offset) F(U32, len) F(U8, flags)
#define MSG_READ_REP(F)     F(BLOB, crcs) F(BLOB, alt)
#define MSG_TRUNCATE_REQ(F) F(U32, ost) F(U64, ino) F(U32, comp) F(U32, stripe) F(U64, size)
#define MSG_TRUNCATE_REP(F)
/* DESTROY: remove an object (ost, ino, comp, stripe), and each object of
 * the same OST in more: entries of PROTO_DESTROY_ENTRY bytes {u64 ino,
 * u32 comp, u32 stripe}, little-endian, fewer than PROTO_MAX_DESTROY
 * (-EINVAL otherwise). An object already gone is no error; the first
 * failure is the reply's, after every object was tried. */
#define PROTO_MAX_DESTROY   64
#define PROTO_DESTROY_ENTRY 16
#define MSG_DESTROY_REQ(F)  F(U32, ost) F(U64, ino) F(U32, comp) F(U32, stripe) F(BLOB, more)
#define MSG_DESTROY_REP(F)
#define MSG_OSYNC_REQ(F) F(U32, ost) F(U64, ino) F(U32, comp) F(U32, stripe)
#define MSG_OSYNC_REP(F)
/* PUNCH: deallocate [offset, offset + len) of an object (reads as zeros). */
#define MSG_PUNCH_REQ(F)                                                                           \
    F(U32, ost) F(U64, ino) F(U32, comp) F(U32, stripe) F(U64, offset) F(U64, len)
#define MSG_PUNCH_REP(F)
#define MSG_OSTATFS_REQ(F)
#define MSG_OSTATFS_REP(F) F(TSTATS, targets)
/* LISTOBJ: the objects of one of an OST's 256 fan-out directories, as
 * repeated {U64 ino, U32 comp, U32 stripe}; more: not all fit. fences 1:
 * instead the objects of inodes of that directory that the OST keeps a
 * fence of (FENCE), whether they exist or not. */
#define MSG_LISTOBJ_REQ(F) F(U32, ost) F(U32, fan) F(U8, fences)
#define MSG_LISTOBJ_REP(F) F(BLOB, objects) F(U8, more)
/* SCRUB: check the checksum of every block of the objects of one of an
 * OST's 256 fan-out directories. bad: the blocks that failed (at most
 * 1024), each ino u64, comp u32, stripe u32, offset u64, little-endian. */
#define MSG_SCRUB_REQ(F) F(U32, ost) F(U32, fan)
#define MSG_SCRUB_REP(F)                                                                           \
    F(U64, objects) F(U64, blocks) F(U64, bytes) F(U64, bad_blocks) F(BLOB, bad)

/*
 * Flags of a message (the table's last column).
 *
 * PROTO_F_CHANGE: a metadata change a client may have to send again after
 * its connection broke. The client gives it a slot (PROTO_HDR_TAG) and
 * resends it as a RESEND; the MDT keeps its reply under that slot, in the
 * transaction of the change, and answers a resend from it (protocol.md,
 * "Resending"). A message without it is a read, or comes out the same when
 * made twice, and is simply sent again.
 */
#define PROTO_F_CHANGE 1u
/* PROTO_F_ITEMS: a message that carries changes with slots of their own
 * (UNLINKS): never resent as a whole, its items are sent again one by one
 * as resends, and the MDT keeps each one's reply under its slot. */
#define PROTO_F_ITEMS 2u

/* X(A, NAME, opcode, lower-case name, flags): every message, once. Adding
 * a message is adding a row here (and its MSG_*_REQ/REP fields above). */
#define PROTO_MESSAGE_TABLE(X, A)                                                                  \
    X(A, HELLO, 1, hello, 0)                                                                       \
    X(A, AUTH, 2, auth, 0)                                                                         \
    X(A, PING, 3, ping, 0)                                                                         \
    X(A, HEARTBEAT, 10, heartbeat, 0)                                                              \
    X(A, GET_MAP, 11, get_map, 0)                                                                  \
    X(A, POOL, 12, pool, 0)                                                                        \
    X(A, LOOKUP, 20, lookup, 0)                                                                    \
    X(A, GETATTR, 21, getattr, 0)                                                                  \
    X(A, SETATTR, 22, setattr, PROTO_F_CHANGE)                                                     \
    X(A, OPEN, 23, open, PROTO_F_CHANGE) /* a change with O_CREAT or O_TRUNC */                    \
    X(A, MKDIR, 24, mkdir, PROTO_F_CHANGE)                                                         \
    X(A, UNLINK, 25, unlink, PROTO_F_CHANGE)                                                       \
    X(A, RMDIR, 26, rmdir, PROTO_F_CHANGE)                                                         \
    X(A, RENAME, 27, rename, PROTO_F_CHANGE)                                                       \
    X(A, LINK, 28, link, PROTO_F_CHANGE)                                                           \
    X(A, SYMLINK, 29, symlink, PROTO_F_CHANGE)                                                     \
    X(A, READLINK, 30, readlink, 0)                                                                \
    X(A, READDIR, 31, readdir, 0)                                                                  \
    X(A, GETSTRIPE, 32, getstripe, 0)                                                              \
    X(A, SETSTRIPE, 33, setstripe, PROTO_F_CHANGE)                                                 \
    X(A, SETXATTR, 34, setxattr, PROTO_F_CHANGE)                                                   \
    X(A, GETXATTR, 35, getxattr, 0)                                                                \
    X(A, LISTXATTR, 36, listxattr, 0)                                                              \
    X(A, REMOVEXATTR, 37, removexattr, PROTO_F_CHANGE)                                             \
    X(A, SETSIZE, 38, setsize, 0) /* the MDT keeps the larger size */                              \
    X(A, STATFS, 39, statfs, 0)                                                                    \
    X(A, SYNC, 40, sync, 0)                                                                        \
    X(A, LEASE_POLL, 41, lease_poll, 0)                                                            \
    X(A, STATS, 42, stats, 0)                                                                      \
    X(A, FSCK, 43, fsck, 0) /* a repair made twice finds nothing the second time */                \
    X(A, SETDIRSTRIPE, 44, setdirstripe, PROTO_F_CHANGE)                                           \
    X(A, SHARD, 45, shard, 0)                                                                      \
    X(A, XNAME, 46, xname, 0)                                                                      \
    X(A, DESTROYED, 47, destroyed, 0) /* forgetting twice is forgetting */                         \
    X(A, MKNOD, 48, mknod, PROTO_F_CHANGE)                                                         \
    X(A, HSM_GET, 49, hsm_get, 0)                                                                  \
    X(A, HSM_SET, 50, hsm_set, 0) /* each op made twice is made once */                            \
    X(A, HSM_IMPORT, 51, hsm_import, PROTO_F_CHANGE)                                               \
    X(A, REPO, 52, repo, PROTO_F_CHANGE)                                                           \
    X(A, HSM_GONE, 53, hsm_gone, 0)           /* each op made twice is made once */                \
    X(A, HSM_REAP, 54, hsm_reap, 0)           /* each op made twice is made once */                \
    X(A, LAYOUT_INTENT, 55, layout_intent, 0) /* made twice, made once */                          \
    X(A, DOM_WRITE, 56, dom_write, 0)         /* made twice, made once */                          \
    X(A, DOM_READ, 57, dom_read, 0)                                                                \
    X(A, MIGRATE, 58, migrate, PROTO_F_CHANGE)                                                     \
    X(A, UNLINKS, 59, unlinks, PROTO_F_ITEMS)                                                      \
    X(A, WRITE, 60, write, 0)                                                                      \
    X(A, READ, 61, read, 0)                                                                        \
    X(A, TRUNCATE, 62, truncate, 0)                                                                \
    X(A, DESTROY, 63, destroy, 0)                                                                  \
    X(A, OSYNC, 64, osync, 0)                                                                      \
    X(A, OSTATFS, 65, ostatfs, 0)                                                                  \
    X(A, PUNCH, 66, punch, 0)                                                                      \
    X(A, LISTOBJ, 67, listobj, 0)                                                                  \
    X(A, SCRUB, 68, scrub, 0)                                                                      \
    X(A, HSM_PULL, 69, hsm_pull, 0)                                                                \
    X(A, HSM_PUSH, 70, hsm_push, 0)                                                                \
    X(A, S3_LIST, 71, s3_list, 0)                                                                  \
    X(A, S3_HEAD, 72, s3_head, 0)                                                                  \
    X(A, S3_DELETE, 73, s3_delete, 0)                                                              \
    X(A, FENCE, 74, fence, 0)           /* each op made twice is made once */                      \
    X(A, DOM_WRITES, 75, dom_writes, 0) /* made twice, made once: DOM_WRITEs */

/* The table without its flags, X(NAME, opcode, lower-case name), and with
 * them, X(NAME, opcode, lower-case name, flags). */
#define PROTO_X_NAMES(X, NAME, num, lname, flags) X(NAME, num, lname)
#define PROTO_X_FLAGS(X, NAME, num, lname, flags) X(NAME, num, lname, flags)
#define PROTO_MESSAGES(X)                         PROTO_MESSAGE_TABLE(PROTO_X_NAMES, X)
#define PROTO_MESSAGES_FLAGS(X)                   PROTO_MESSAGE_TABLE(PROTO_X_FLAGS, X)

#define SETATTR_MODE      1u
#define SETATTR_UID       2u
#define SETATTR_GID       4u
#define SETATTR_SIZE      8u
#define SETATTR_ATIME     16u
#define SETATTR_MTIME     32u
#define SETATTR_ATIME_NOW 64u
#define SETATTR_MTIME_NOW 128u
/* The caller's kernel already checked the times change (a FUSE mount with
 * default_permissions): a writer may set them, as for "now" (touch). */
#define SETATTR_TIMES_CHECKED 256u
/* The caller changes the size through a descriptor it opened for writing
 * (ftruncate): write permission was checked at the open, as the kernel
 * checks a local file's, so a mode that forbids writing since is no bar. */
#define SETATTR_WRITER 512u

enum proto_op {
#define PROTO_X_ENUM(NAME, num, lname) PROTO_OP_##NAME = num,
    PROTO_MESSAGES(PROTO_X_ENUM)
#undef PROTO_X_ENUM
        PROTO_OP_MAX = 128
};

#define PROTO_X_FIELD(kind, fname) proto_ct_##kind fname;
#define PROTO_X_STRUCT(NAME, num, lname)                                                           \
    struct proto_##lname##_req {                                                                   \
        MSG_##NAME##_REQ(PROTO_X_FIELD) uint8_t unused_;                                           \
    };                                                                                             \
    struct proto_##lname##_rep {                                                                   \
        MSG_##NAME##_REP(PROTO_X_FIELD) uint8_t unused_;                                           \
    };                                                                                             \
    int proto_enc_##lname##_req(struct proto_enc *e, const struct proto_##lname##_req *m);         \
    int proto_dec_##lname##_req(struct proto_dec *d, struct proto_##lname##_req *m);               \
    int proto_enc_##lname##_rep(struct proto_enc *e, const struct proto_##lname##_rep *m);         \
    int proto_dec_##lname##_rep(struct proto_dec *d, struct proto_##lname##_rep *m);
PROTO_MESSAGES(PROTO_X_STRUCT)
#undef PROTO_X_STRUCT

/* "OPEN" for a known opcode, NULL otherwise. */
const char *proto_op_name(uint16_t opcode);

/* What generic code (a server's dispatcher) needs to decode a request and
 * encode a reply of one kind without naming its types: the sizes of its C
 * structs and codecs over void pointers, generated from the table. */
struct proto_codec {
    const char *name;
    uint32_t flags; /* PROTO_F_* */
    size_t req_size, rep_size;
    int (*dec_req)(struct proto_dec *d, void *req);
    int (*enc_rep)(struct proto_enc *e, const void *rep);
};
/* The codec of opcode, or NULL for one not in the table. Static storage. */
const struct proto_codec *proto_codec(uint16_t opcode);
/* The flags of opcode (0 for one not in the table). */
uint32_t proto_op_flags(uint16_t opcode);

/* Room for the request or the reply of any message, for a dispatcher that
 * decodes into one on its stack. */
#define PROTO_X_ANY_REQ(NAME, num, lname) struct proto_##lname##_req lname;
#define PROTO_X_ANY_REP(NAME, num, lname) struct proto_##lname##_rep lname;
union proto_any_req {
    PROTO_MESSAGES(PROTO_X_ANY_REQ)
};
union proto_any_rep {
    PROTO_MESSAGES(PROTO_X_ANY_REP)
};
#undef PROTO_X_ANY_REQ
#undef PROTO_X_ANY_REP

static inline struct proto_str proto_str_c(const char *s)
{
    struct proto_str r = {s, 0};
    if (s)
        while (s[r.len])
            r.len++;
    return r;
}

#endif
