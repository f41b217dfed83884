/*
 * Directories whose records span MDTs: mkdir of one whose inode or shards
 * live elsewhere, rmdir of one, as intents run over SHARD steps.
 */
#ifndef STRIA_META_OPS_XDIR_H
#define STRIA_META_OPS_XDIR_H

#include "intent.h"

/* mkdir of a directory whose inode is on another MDT (owner) or whose
 * entries are striped (rec.dstripe). rec: the new inode, ino still 0. */
struct meta_xmk {
    uint64_t dir;
    char name[PROTO_MAX_NAME + 1];
    uint32_t owner;
    struct meta_inode rec;
};
int meta_xmkdir(const struct meta_req *rq, const struct proto_cred *cred, struct meta_xmk *x,
                struct proto_attr *out);

/* rmdir of a directory whose records live on other MDTs: its inode there,
 * or shards (dstripe, when its inode is here). */
struct meta_xrm {
    uint64_t dir;
    char name[PROTO_MAX_NAME + 1];
    uint64_t ino;
    uint64_t dstripe;
    bool ask_owner; /* the sticky bit: may remove only if it owns the (remote) victim */
};
int meta_xrmdir(const struct meta_req *rq, const struct proto_cred *cred, struct meta_xrm *x);

#endif
