/*
 * The `stria` command-line tool: what all of its files share.
 *
 * src/cli is layered; a file includes the headers of modules below it,
 * never above (docs/architecture.md, "The CLI"):
 *
 *   main.c                       the command table, global options, help
 *   cluster.c namespace.c cp.c   the subcommands, one file per family
 *   stripe.c stats.c fsck.c      (commands.h declares them for main)
 *   repo.c hsm.c
 *   repos.c   (repos.h)          the data repositories' registry; uses paths, args
 *   mount.c   (mount.h)          the mount manager; uses paths, proc
 *   local.c   (local.h)          a `stria up` cluster's directory; uses connect
 *   proc.c    (proc.h)           the process supervisor
 *   connect.c (connect.h)        which cluster, and connecting; uses paths, args
 *   paths.c   (paths.h)          path arguments, stria mounts, tree walks; uses args
 *   args.c    (args.h)           options, usage errors, error reports
 *   cli.h                        exit codes and limits
 */
#ifndef STRIA_CLI_H
#define STRIA_CLI_H

/* Exit codes of every subcommand. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Longest cluster or local path the tool handles, NUL included. */
#define CLI_PATH_MAX 4096

#endif
