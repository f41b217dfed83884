/*
 * Routing over MDTs (route.c). Never installed.
 *
 * Which MDT a request about a name goes to (the directory's own, or the
 * shard of a striped directory that hash(name) picks), the prefix cache of
 * paths that crossed MDTs, walks of a path one component at a time when an
 * MDT answers EREMOTE, and READDIR of a striped directory merged over its
 * shards. Built on the transport core and the inode calls (inode.h: a walk
 * asks GETATTR and READLINK, and the stripes learnt from replies live
 * there); the calls on names (ns.h) and opens (file.h) are routed with
 * ROUTED_CALL.
 */
#ifndef STRIA_CLIENT_ROUTE_H
#define STRIA_CLIENT_ROUTE_H

#include "conn.h"
#include "inode.h"

/* What one READDIR batch holds (cl_readdir, cl_readdir_striped). */
struct cl_dirbatch {
    uint32_t len, count;
    bool eof;
};

/* The MDT holding name (len bytes) in directory dir. */
uint32_t cl_name_mdt(stria_fs_t *fs, uint64_t dir, const char *name, size_t len);
/* The stripe of directory dir over MDTs (0: plain), asked for if unknown. */
int cl_dir_stripe(stria_fs_t *fs, uint64_t dir, uint64_t *dstripe);

/* Where a path-taking request goes: parent and path as sent, to mdt. */
struct cl_route {
    uint64_t parent;
    const char *path;
    uint32_t mdt;
    uint64_t from; /* the request's own start and path */
    const char *whole;
    bool cached; /* parent came from the prefix cache */
    int tries;
    char last[PROTO_MAX_STR + 1]; /* what path points into when rerouted */
};
void cl_route(stria_fs_t *fs, uint64_t parent, const char *path, struct cl_route *rt);
/* Whether to send the request again after it returned *rc: the MDT said
 * EREMOTE, or a cached route led astray. Then all but the last component
 * are walked here, one MDT at a time, and the last is sent from the
 * directory it is in; a failed walk's error goes to *rc. */
bool cl_route_again(stria_fs_t *fs, struct cl_route *rt, int *rc);
/* Walk all but the last component of rt's path here. */
int cl_reroute(stria_fs_t *fs, struct cl_route *rt);
/* Resolve a whole path here (following a final symlink if asked). */
int cl_resolve(stria_fs_t *fs, uint64_t start, const char *path, bool follow,
               struct proto_attr *out);
/* One READDIR batch of a directory striped over MDTs, merged in cookie
 * order (cl_readdir calls it). With keep (an open directory's; *keep
 * NULL at first), each shard's batch is kept in *keep for the next
 * call, which asks again only the shards whose batch ran out; free it
 * with cl_shards_free. */
struct cl_shards;
int cl_readdir_striped(stria_fs_t *fs, uint64_t ino, uint64_t ds, uint64_t cookie, bool plus,
                       uint8_t *buf, uint32_t cap, struct cl_dirbatch *out,
                       struct cl_shards **keep);
void cl_shards_free(struct cl_shards *st);

/*
 * A path-taking request sent where its path leads (route.c): the request's
 * parent field PF and path field PTH are set from the route, and after an
 * EREMOTE the path is walked here and the request sent once more. Gives
 * EREMOTE still when the last component's own inode lives elsewhere.
 */
#define ROUTED_CALL(fs, from_, path_, PF, PTH, lname, q, r, use)                                   \
    ROUTED_CALL_BULK(fs, from_, path_, PF, PTH, lname, q, r, NULL, 0, NULL, use)
/* ROUTED_CALL with room for a reply's bulk (MDT_CALL_BULK). */
#define ROUTED_CALL_BULK(fs, from_, path_, PF, PTH, lname, q, r, dst, cap, got, use)               \
    ({                                                                                             \
        struct cl_route rt_;                                                                       \
        int rc2_;                                                                                  \
        cl_route(fs, from_, path_, &rt_);                                                          \
        do {                                                                                       \
            (q)->PF = rt_.parent;                                                                  \
            (q)->PTH = proto_str_c(rt_.path);                                                      \
            rc2_ = MDT_CALL_BULK(fs, rt_.mdt, lname, q, r, dst, cap, got, use);                    \
        } while (cl_route_again(fs, &rt_, &rc2_));                                                 \
        rc2_;                                                                                      \
    })

#endif
