/*
 * HSM_PUSH, the export half of the movers (docs/architecture.md, "Data
 * repositories"): multipart uploads (create, part, complete, abort) and
 * single PUTs of a file's bytes, read through an embedded libstria client
 * of the stord's own cluster, so that each storage host uploads parts in
 * parallel with the others.
 */
#ifndef STRIA_STORAGE_PUSH_H
#define STRIA_STORAGE_PUSH_H

#include "store.h"

#include "../net/server.h"

/* The largest part, or single PUT, a push holds in memory. */
#define PUSH_MAX_PART (64u << 20)

/* Set up s's pushes: the client configuration the embedded client will
 * use (mgmt, and the cluster key file key_path, absolute) is written to
 * the first OST's hsm/client.conf; the client connects at the first push
 * that reads the file system. Returns 0 or a negative errno (logged). */
int push_start(struct stord *s, const char *mgmt_host, uint16_t mgmt_port, const char *key_path);
/* Disconnect the embedded client, if it connected. */
void push_stop(void);

/* The handler (ctx: the struct stord). */
int push_h_push(void *ctx, struct net_req *req, struct net_rep *rep);

#endif
