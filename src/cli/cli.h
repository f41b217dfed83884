/*
 * The `stria` command-line tool: what its files share.
 *
 * main.c owns the global options, the command table, help and usage
 * errors; every other file implements subcommands. A subcommand gets argv
 * with argv[0] set to its own name and returns the process exit code:
 * CLI_OK, CLI_FAIL when an operation failed, CLI_USAGE for bad arguments.
 */
#ifndef STRIA_CLI_H
#define STRIA_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "stria/stria.h"

#include "../common/mounts.h"

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Longest cluster or local path the tool handles, NUL included. */
#define CLI_PATH_MAX 4096

/* The value of the global --conf option, or NULL when it was not given. */
extern const char *cli_conf;

/* ---- subcommands (argv[0] is the subcommand's name) ---- */

/* cluster.c */
int cmd_up(int argc, char **argv);
int cmd_down(int argc, char **argv);
int cmd_status(int argc, char **argv);

/* namespace.c */
int cmd_mkdir(int argc, char **argv);
int cmd_setdirstripe(int argc, char **argv);
int cmd_getdirstripe(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_mv(int argc, char **argv);
int cmd_cp(int argc, char **argv);

/* stripe.c */
int cmd_setstripe(int argc, char **argv);
int cmd_getstripe(int argc, char **argv);
int cmd_df(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_fsck(int argc, char **argv);
int cmd_scrub(int argc, char **argv);

/* ---- helpers (main.c) ---- */

/* Where the client.conf of a command came from (cli_conf_path). */
enum cli_conf_src {
    CLI_CONF_OPTION, /* --conf */
    CLI_CONF_MOUNT,  /* the stria mount the path operands lie in */
    CLI_CONF_ENV,    /* $STRIA_CONF */
    CLI_CONF_LINK,   /* ~/.config/stria/client.conf, which `stria up` links */
    CLI_CONF_ETC,    /* /etc/stria/client.conf */
};

/*
 * The one rule for which cluster a command works on: the client.conf it
 * uses, into buf. In order: --conf; the client.conf of the stria mount the
 * command's path operands (argv[optind..], so call it after option parsing)
 * lie in; $STRIA_CONF; ~/.config/stria/client.conf; /etc/stria/client.conf.
 * *src (when not NULL) says which. Returns 0; -ENOENT when none of the last
 * three is readable (or $STRIA_CONF names a file that is not); -EXDEV,
 * having said why on stderr, when operands lie in mounts of two clusters;
 * -ENAMETOOLONG.
 */
int cli_conf_path(char *buf, size_t len, enum cli_conf_src *src);

/*
 * Connect with the client.conf cli_conf_path picks. Call it after option
 * parsing. On failure prints why and what to do to stderr and returns the
 * negative errno. Free *fs with stria_disconnect.
 */
int cli_connect(stria_fs_t **fs);
/* cli_connect, then the indices of the cluster's MDTs in *mdts (n of them,
 * malloc'd). On failure prints why, leaves nothing open and returns the
 * negative errno. */
int cli_connect_mdts(stria_fs_t **fs, uint32_t **mdts, size_t *n);

/*
 * getopt_long for a subcommand, with no long options: "--help" is handled
 * by main before the command runs. Options may follow operands. On an
 * unknown option or a missing value prints "stria CMD: ..." and returns '?'.
 */
int cli_getopt(int argc, char **argv, const char *optstring);

/*
 * Print "stria CMD: <message>" (when fmt is not NULL), then CMD's usage
 * line and a pointer to `stria CMD --help`, to stderr. Returns CLI_USAGE.
 */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "stria CMD: PATH: <strerror(-rc)>" to stderr. */
void cli_error(const char *cmd, const char *path, int rc);

/* ---- paths (namespace.c) ---- */

/*
 * Parse a path argument. "stria:/a/b" and "stria:a/b" name the cluster
 * path /a/b: *is_stria is set to 1 and out gets the path made absolute,
 * with "//", "." and ".." resolved. A local path inside a stria mount
 * (absolute, or relative to the working directory) is a cluster path too:
 * *is_stria 1 and out gets the path below the mount point ("/" at the
 * mount point itself). Any other argument is copied to out unchanged with
 * *is_stria 0; whether such a bare path means the cluster (most commands,
 * see cli_stria_path) or the local disk (cp) is the caller's choice.
 * Returns 0 or -ENAMETOOLONG.
 */
int cli_path(const char *arg, char *out, size_t len, int *is_stria);

/*
 * A path argument of a command that only works on the cluster: "stria:...",
 * a path inside a stria mount, or a bare path starting with '/' (which,
 * outside every stria mount, is a cluster path). Writes the normalised
 * cluster path to out. On a bad argument prints "stria CMD: ..." and
 * returns a negative errno.
 */
int cli_stria_path(const char *cmd, const char *arg, char *out, size_t len);

/*
 * A command with no options and one or more PATH arguments: connect, and
 * run fn on each argument (arg) as a cluster path (path); fn reports its
 * own errors and returns CLI_OK or CLI_FAIL. Returns CLI_FAIL if any did.
 */
int cli_each_path(int argc, char **argv,
                  int (*fn)(stria_fs_t *fs, const char *cmd, const char *arg, const char *path));

/*
 * The client.conf of the stria mount that the local path arg lies in (the
 * mount's source in mountinfo), or NULL when arg is a "stria:" path or not
 * inside a stria mount. The string lives until the process exits.
 */
const char *cli_mount_conf(const char *arg);

/* ---- stria mounts (namespace.c) ---- */

/* The type a stria FUSE mount has in mountinfo. */
#define CLI_MOUNT_TYPE "fuse.stria"

/*
 * Read every mount of this process's mount namespace (mount_table_read)
 * from /proc/self/mountinfo, or from the file $STRIA_MOUNTINFO names, for
 * tests. Free m with mount_table_free.
 */
int cli_mounts_read(struct mount_table *m);

/*
 * The mount on top at exactly point (absolute, canonical) if it is a
 * stria mount, else NULL. The result points into m.
 */
const struct mount_ent *cli_mount_at(const struct mount_table *m, const char *point);

/* Join a directory and a name into out; returns 0 or -ENAMETOOLONG. */
int cli_path_join(const char *dir, const char *name, char *out, size_t len);

/* ---- layouts (stripe.c) ---- */

/* Parse a -c/-S value; on a bad one print why with the usage and return
 * CLI_USAGE, else 0. A stripe size is a multiple of 64 KiB below 4 GiB
 * (0: the default); a count is -1 (all OSTs), 0 (the default) or 1..256. */
int cli_parse_stripe_count(const char *cmd, const char *arg, int32_t *out);
int cli_parse_stripe_size(const char *cmd, const char *arg, uint32_t *out);

/* Report a failed stria_setstripe on path, explaining the usual causes. */
void cli_stripe_error(const char *cmd, const char *path, int rc);

#endif
