/*
 * The subcommands that main's command table runs. Each gets argv with
 * argv[0] set to its own name and returns the process's exit code:
 * CLI_OK, CLI_FAIL when an operation failed, CLI_USAGE for bad arguments.
 * Only main.c calls them; each family's file includes this header to have
 * its definitions checked against it.
 */
#ifndef STRIA_CLI_COMMANDS_H
#define STRIA_CLI_COMMANDS_H

#include "cli.h"

/* cluster.c: a whole cluster on this machine */
int cmd_up(int argc, char **argv);
int cmd_down(int argc, char **argv);
int cmd_status(int argc, char **argv);

/* namespace.c: directories and names */
int cmd_mkdir(int argc, char **argv);
int cmd_setdirstripe(int argc, char **argv);
int cmd_getdirstripe(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_mv(int argc, char **argv);

/* cp.c: copies between the local disk and the cluster */
int cmd_cp(int argc, char **argv);

/* stripe.c: layouts and capacity */
int cmd_setstripe(int argc, char **argv);
int cmd_migrate(int argc, char **argv);
int cmd_rebalance(int argc, char **argv);
int cmd_getstripe(int argc, char **argv);
int cmd_df(int argc, char **argv);

/* find.c: select files as lfs find */
int cmd_find(int argc, char **argv);

/* pools.c: OST pools */
int cmd_pool(int argc, char **argv);

/* stats.c: what servers' requests cost, and who sends them */
int cmd_stats(int argc, char **argv);
int cmd_top(int argc, char **argv);

/* fsck.c: checking the namespace and the data */
int cmd_fsck(int argc, char **argv);
int cmd_scrub(int argc, char **argv);

/* repo.c, hsm.c: data repositories on S3 */
int cmd_repo(int argc, char **argv);
int cmd_hsm(int argc, char **argv);

/* ondemand.c: a file system on a job's nodes, over ssh */
int cmd_ondemand(int argc, char **argv);
/* pcp.c: a copy with every node of a node file taking a share */
int cmd_pcp(int argc, char **argv);

#endif
