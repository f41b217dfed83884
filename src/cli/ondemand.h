/*
 * stria ondemand (ondemand.c, the coordinator) and its node agent
 * (ondemand_node.c, what each node runs over ssh as `stria ondemand node
 * PHASE`). The agent's record of where a node's instance lives is read by
 * the coordinator too, for staging on the node it runs on.
 */
#ifndef STRIA_CLI_ONDEMAND_H
#define STRIA_CLI_ONDEMAND_H

#include <stddef.h>

#define OD_NAME_MAX 32

/* stria ondemand node PHASE ... (argv[0] "node"). */
int ondemand_node(int argc, char **argv);
/* This node's instance of name: its directory and mount point. 0, or
 * -ENOENT when it has none here. */
int ondemand_record_read(const char *name, char *dir, size_t dlen, char *mnt, size_t mlen);

#endif
