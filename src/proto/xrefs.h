/*
 * Cross-MDT references, for `stria fsck` (docs/operations.md): what each
 * MDT cannot check alone. An MDT's FSCK reply lists, in refs:
 *   kind 1, a name that holds another MDT's inode:
 *           U64 parent, U64 ino, U8 type, STR name
 *   kind 2, an inode whose names may live on other MDTs (a file moved or
 *           linked there, a directory under a parent elsewhere or striped,
 *           a striped directory, a shard of one):
 *           U64 ino, U32 nlink, U8 type, U32 local_refs, U8 shard
 * The client joins every MDT's list: a name whose inode its MDT does not
 * list is dangling; a listed inode no name holds is an orphan; a file's
 * link count must be the names that hold it; a shard needs its directory.
 */
#ifndef STRIA_XREFS_H
#define STRIA_XREFS_H

#include "proto.h"

/*   kind 3, a file whose last name went while its objects stay until the
 *           client that removed it destroys them (maybe at its last close):
 *           U64 ino
 *   kind 4, a file with a migration under way (stria migrate), stale when
 *           its migrator has not been heard of for the MDT's
 *           migrate_stale_ms: what it left (objects, fences) waits for a
 *           cleanup:
 *           U64 ino, U8 stale */
enum { XREF_NAME = 1, XREF_INODE = 2, XREF_PENDING = 3, XREF_MIGRATION = 4 };

struct xref {
    uint8_t kind;
    uint64_t parent, ino;
    uint8_t type, shard, stale;
    uint32_t nlink, local_refs;
    struct proto_str name;
};

/* Append one record; the encoder's error says when it no longer fits. */
void xref_put(struct proto_enc *e, const struct xref *x);
/* The next record of a list; -1 at its end, -EBADMSG if it is garbage. */
int xref_get(struct proto_dec *d, struct xref *x);

struct xrefs_found {
    uint64_t dangling, orphans, bad_nlink, named_twice;
};

/* A repair one MDT makes for the check (FSCK's fixes): DROP the name
 * (parent, name) if it still holds ino; ADOPT orphan ino into the MDT's
 * lost+found; NLINK: set file ino's link count to value. */
enum { XFIX_DROP = 1, XFIX_ADOPT = 2, XFIX_NLINK = 3 };
struct xfix {
    uint8_t kind;
    uint64_t ino, parent, value;
    struct proto_str name;
};
void xfix_put(struct proto_enc *e, const struct xfix *x);
int xfix_get(struct proto_dec *d, struct xfix *x);

/* Check n MDTs' lists; each finding is one line to say(arg, line), and
 * the repair for it goes to fix(arg, mdt, fix) when fix is set. */
int xrefs_check(const struct proto_blob *lists, size_t n, struct xrefs_found *out,
                void (*say)(void *arg, const char *line),
                void (*fix)(void *arg, uint32_t mdt, const struct xfix *x), void *arg);

#endif
