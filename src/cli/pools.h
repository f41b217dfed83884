/*
 * OST pools as the CLI names them: FSNAME.POOL, as lctl and lfs take
 * them. What `stria pool` (pools.c) and the pool options of setstripe and
 * df (stripe.c) share.
 */
#ifndef STRIA_CLI_POOLS_H
#define STRIA_CLI_POOLS_H

#include "cli.h"

#include <stria/stria.h>

#include <stddef.h>
#include <stdint.h>

/*
 * Find the pool that arg names ("[FSNAME.]POOL") in fs. On success
 * returns CLI_OK with its OSTs in *osts (malloc'd, free() it; may be
 * NULL) and their number in *n (either may be NULL). Otherwise prints
 * why ("stria CMD: pool 'FSNAME.POOL' does not exist", a file system that
 * is not fs's, a bad name) and returns CLI_USAGE or CLI_FAIL.
 */
int cli_pool_find(stria_fs_t *fs, const char *cmd, const char *arg, uint32_t **osts, size_t *n);

#endif
