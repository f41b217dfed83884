/*
 * The movers of stria-stord (docs/architecture.md, "Data repositories"):
 * each storage host moves the bytes of its own OSTs' stripes between S3 and
 * its objects, so import and export bandwidth grows with the hosts.
 *
 * HSM_PULL restores an object from S3 by ranged GETs (If-Match its etag),
 * written through the OST's own write path (checksums, crash recovery and
 * scrub cover restored data as written data), recording each unit in the
 * object's restore state (hsmstate.h) once durable; S3_LIST and S3_HEAD
 * list and look up objects for the MDT side and the CLI; S3_DELETE
 * deletes an object of a file destroyed in Stria, only while its etag is
 * the one recorded. HSM_PUSH (the export) is push.h's.
 */
#ifndef STRIA_STORAGE_MOVER_H
#define STRIA_STORAGE_MOVER_H

#include "store.h"

#include "../net/server.h"
#include "../s3/s3.h"

/* An S3 target as a request names it, copied out of the request. */
struct mover_target {
    char endpoint[1024];
    char region[128];
    char bucket[256];
    struct s3_target t; /* points into the above */
};
/* Copy a request's target fields into mt. -EINVAL if one is too long or
 * the bucket is empty. */
int mover_target(struct mover_target *mt, const struct proto_str *endpoint,
                 const struct proto_str *region, const struct proto_str *bucket, uint8_t vhost);

/* Start the movers of s: threads background fillers (0: none; a pull
 * asking for the rest in the background then gets it only when asked
 * again), streams ranged GETs in flight per pull. Sets s->mover. Returns
 * 0 or a negative errno (logged). */
int mover_start(struct stord *s, unsigned threads, unsigned streams);
/* Stop the background fillers (each finishes the batch it is on), free. */
void mover_stop(struct stord *s);

/* The handlers (ctx: the struct stord). */
int mover_h_pull(void *ctx, struct net_req *req, struct net_rep *rep);
int mover_h_list(void *ctx, struct net_req *req, struct net_rep *rep);
int mover_h_head(void *ctx, struct net_req *req, struct net_rep *rep);
int mover_h_delete(void *ctx, struct net_req *req, struct net_rep *rep);

#endif
