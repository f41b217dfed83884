/*
 * stria ondemand (ondemand.c, the coordinator) and its node agent
 * (ondemand_node.c, what each node runs over ssh as `stria ondemand node
 * PHASE`). The agent's record of where a node's instance lives is read by
 * the coordinator too, for staging on the node it runs on.
 */
#ifndef STRIA_CLI_ONDEMAND_H
#define STRIA_CLI_ONDEMAND_H

#include <stddef.h>
#include <stdint.h>

#define OD_NAME_MAX 32

/* stria ondemand node PHASE ... (argv[0] "node"). */
int ondemand_node(int argc, char **argv);
/* The largest owner --owner takes: (uid_t)-1 is chown's "leave it". */
#define ONDEMAND_ID_MAX (UINT32_MAX - 1)
/* One field of an owner and mode: a number in base up to max, or "-"
 * (*v -1), followed by sep (0: the end). Returns what follows sep, or
 * NULL when s is not such a field. */
const char *ondemand_owner_field(const char *s, int base, char sep, long long max, long long *v);
/* This node's instance of name: its directory and mount point. 0, or
 * -ENOENT when it has none here. */
int ondemand_record_read(const char *name, char *dir, size_t dlen, char *mnt, size_t mlen);

#endif
