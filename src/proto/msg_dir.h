/*
 * The directory-listing messages of the wire protocol: READDIR, its
 * entries and what READDIR plus adds to them (proto.h, which includes this
 * inside its message definitions: it uses proto.h's field kinds and types
 * and is never included alone).
 */
#ifndef STRIA_PROTO_MSG_DIR_H
#define STRIA_PROTO_MSG_DIR_H

/* READDIR: entries is a sequence of (U64 ino, U64 next_cookie, U8 type,
 * STR name), each followed when plus is set by its ATTR and U8 xabsent:
 * bit i set when the inode has no xattr named proto_xattr_known's i-th
 * name (0 for an inode of another MDT); cookie 0 starts; a cookie stays
 * valid while entries come and go. Cookies are below 2^62. */
#define MSG_READDIR_REQ(F) F(CRED, cred) F(U64, ino) F(U64, cookie) F(U32, max_bytes) F(U8, plus)
#define MSG_READDIR_REP(F) F(U8, eof) F(U32, count) F(BLOB, entries)

/* A READDIR entry. */
struct proto_dirent {
    uint64_t ino;
    uint64_t next_cookie; /* pass back in READDIR to continue after this entry */
    uint8_t type;         /* DT_REG, DT_DIR, DT_LNK, ... */
    struct proto_str name;
};
void proto_put_dirent(struct proto_enc *e, const struct proto_dirent *v);
void proto_get_dirent(struct proto_dec *d, struct proto_dirent *v);
/* What READDIR plus adds to an entry: its attributes and xabsent. */
void proto_put_dirplus(struct proto_enc *e, const struct proto_attr *a, uint8_t xabsent);
void proto_get_dirplus(struct proto_dec *d, struct proto_attr *a, uint8_t *xabsent);

/* Xattr names that tools ask of every file (`ls -l`: security.selinux and
 * the POSIX ACLs; security.capability at exec), which READDIR plus says
 * are absent: the index of name among them, or -1. */
#define PROTO_XATTR_KNOWN 4
extern const char *const proto_xattr_known_names[PROTO_XATTR_KNOWN];
int proto_xattr_known(const char *name);

#endif
