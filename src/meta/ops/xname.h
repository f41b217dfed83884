/*
 * Names between MDTs, the coordinator's side: a rename whose target name
 * or inodes live on another MDT, an unlink of a remote entry, a link to
 * another MDT's inode, each as an intent driven by XNAME steps
 * (xname_step.h is the other side).
 */
#ifndef STRIA_META_OPS_XNAME_H
#define STRIA_META_OPS_XNAME_H

#include "intent.h"

/* rename whose names or inodes span MDTs: the source name is here. */
struct meta_xmv {
    uint64_t sdir, ddir, sino;
    bool lock; /* a directory to another parent: the rename lock first */
    char sname[PROTO_MAX_NAME + 1], dname[PROTO_MAX_NAME + 1];
    uint8_t stype;
    uint32_t dmdt, flags;
};
int meta_xrename(const struct meta_req *rq, const struct proto_cred *cred, struct meta_xmv *m,
                 struct proto_rename_rep *out);
/* unlink of a name here whose inode is on another MDT. */
int meta_xunlink(const struct meta_req *rq, const struct proto_cred *cred, uint64_t dir,
                 const char *name, uint64_t ino, struct proto_unlink_rep *out);
/* link of another MDT's inode to a name here. */
int meta_xlink(const struct meta_req *rq, const struct proto_cred *cred, uint64_t ino, uint64_t dir,
               const char *name, struct proto_link_rep *out);

/* Run a name intent (xname.c) to its end; 0 when it is gone. */
int meta_xname_finish(const struct meta_req *rq, uint64_t txid, struct meta_intent *x, bool quiet);

#endif
