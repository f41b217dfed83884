/*
 * Which cluster a command works on, and connecting to it.
 *
 * One rule for every command (cli_conf_path), so that `stria status`,
 * `stria df` and `stria ls` never disagree about the cluster: --conf, the
 * stria mount the path operands lie in, $STRIA_CONF, the link `stria up`
 * writes, /etc.
 */
#ifndef STRIA_CLI_CONNECT_H
#define STRIA_CLI_CONNECT_H

#include "cli.h"

#include <stddef.h>
#include <stdint.h>

#include "stria/stria.h"

/* The value of the global --conf option, or NULL when it was not given. */
extern const char *cli_conf;

/* The running command's arguments (argv[0] its name), whose operands
 * cli_conf_path looks at. main calls it before the command runs. */
void cli_connect_init(int argc, char **argv);

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
 * malloc'd, the caller frees). On failure prints why, leaves nothing open
 * and returns the negative errno. */
int cli_connect_mdts(stria_fs_t **fs, uint32_t **mdts, size_t *n);

/*
 * A command with no options and one or more PATH arguments: connect, and
 * run fn on each argument (arg) as a cluster path (path); fn reports its
 * own errors and returns CLI_OK or CLI_FAIL. Returns CLI_FAIL if any did.
 */
int cli_each_path(int argc, char **argv,
                  int (*fn)(stria_fs_t *fs, const char *cmd, const char *arg, const char *path));

#endif
