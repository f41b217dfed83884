/*
 * What every subcommand does with its arguments: option parsing, usage
 * errors, one-line error reports, and the layout values that setstripe,
 * mkdir and cp share.
 */
#ifndef STRIA_CLI_ARGS_H
#define STRIA_CLI_ARGS_H

#include "cli.h"

#include <stdint.h>
#include <sys/types.h>

/*
 * How cli_usage_error finds a command's synopsis (the part of its usage
 * line after the name), or NULL for a command that prints its own. main
 * sets it from its command table before a command runs.
 */
void cli_usage_init(const char *(*synopsis)(const char *cmd));

/*
 * getopt_long for a subcommand, with no long options: "--help" is handled
 * by main before the command runs. Options may follow operands. On an
 * unknown option or a missing value prints "stria CMD: ..." and returns '?'.
 */
int cli_getopt(int argc, char **argv, const char *optstring);
/* cli_getopt with long options too (each with a short one as its val). */
struct option;
int cli_getopt_long(int argc, char **argv, const char *optstring, const struct option *longopts);

/*
 * Print "stria CMD: <message>" (when fmt is not NULL), then CMD's usage
 * line and a pointer to `stria CMD --help`, to stderr. Returns CLI_USAGE.
 */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "stria CMD: PATH: <strerror(-rc)>" to stderr. */
void cli_error(const char *cmd, const char *path, int rc);

/* Parse a -c/-S value; on a bad one print why with the usage and return
 * CLI_USAGE, else 0. A stripe size is a multiple of 64 KiB below 4 GiB
 * (0: the default); a count is -1 (all OSTs), 0 (the default) or 1..256. */
int cli_parse_stripe_count(const char *cmd, const char *arg, int32_t *out);
int cli_parse_stripe_size(const char *cmd, const char *arg, uint32_t *out);

/* Report a failed stria_setstripe on path, explaining the usual causes. */
void cli_stripe_error(const char *cmd, const char *path, int rc);

/* The process's umask, left as it is: what a new file's mode loses. */
mode_t cli_umask(void);

#endif
