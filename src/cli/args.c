/*
 * Arguments and error reports shared by the subcommands.
 *
 * Every message names the command ("stria CMD: ...") and goes to stderr;
 * a usage error also prints the command's usage line, which comes from
 * main's command table through the lookup main registers, so this module
 * never depends on the table. Layout values are checked before anything
 * is sent, so the most common mistake (a stripe size that is not a
 * multiple of 64K) gets a message that says so instead of a bare "Invalid
 * argument".
 */
#include "args.h"

#include "stria/stria.h"

#include "../common/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define STRIPE_ALIGN (64u * 1024)

static const char *(*synopsis)(const char *cmd);

void cli_usage_init(const char *(*fn)(const char *cmd))
{
    synopsis = fn;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "stria %s: ", cmd);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    const char *args = synopsis ? synopsis(cmd) : NULL;
    if (args)
        fprintf(stderr, "usage: stria %s %s\n", cmd, args);
    fprintf(stderr, "Try 'stria %s --help' for more.\n", cmd);
    return CLI_USAGE;
}

void cli_error(const char *cmd, const char *path, int rc)
{
    fprintf(stderr, "stria %s: %s: %s\n", cmd, path, strerror(-rc));
}

int cli_getopt(int argc, char **argv, const char *optstring)
{
    static const struct option none[] = {{NULL, 0, NULL, 0}};
    return cli_getopt_long(argc, argv, optstring, none);
}

int cli_getopt_long(int argc, char **argv, const char *optstring, const struct option *longopts)
{
    char spec[64];

    /* A leading ':' makes getopt report a missing value as ':' and stay quiet. */
    snprintf(spec, sizeof(spec), ":%s", optstring);
    opterr = 0;
    int c = getopt_long(argc, argv, spec, longopts, NULL);
    if (c == ':') {
        if (optopt)
            fprintf(stderr, "stria %s: option -%c needs a value\n", argv[0], optopt);
        else
            fprintf(stderr, "stria %s: option %s needs a value\n", argv[0], argv[optind - 1]);
        return '?';
    }
    if (c == '?') {
        if (optopt)
            fprintf(stderr, "stria %s: unknown option -%c\n", argv[0], optopt);
        else
            fprintf(stderr, "stria %s: unknown option %s\n", argv[0], argv[optind - 1]);
    }
    return c;
}

int cli_parse_stripe_count(const char *cmd, const char *arg, int32_t *out)
{
    int64_t v;
    if (util_parse_i64(arg, &v) < 0 || v < -1 || v > STRIA_MAX_STRIPES)
        return cli_usage_error(cmd,
                               "invalid stripe count '%s' (-1 for all OSTs, 0 for the default, "
                               "or 1..%d)",
                               arg, STRIA_MAX_STRIPES);
    *out = (int32_t)v;
    return 0;
}

int cli_parse_stripe_size(const char *cmd, const char *arg, uint32_t *out)
{
    uint64_t v;
    if (util_parse_size(arg, &v) < 0)
        return cli_usage_error(cmd, "invalid stripe size '%s' (a number with K, M or G)", arg);
    if (v % STRIPE_ALIGN || v > UINT32_MAX)
        return cli_usage_error(cmd, "stripe size must be a multiple of 64K below 4G, not %s", arg);
    *out = (uint32_t)v;
    return 0;
}

void cli_stripe_error(const char *cmd, const char *path, int rc)
{
    const char *why = "";
    if (rc == -EINVAL)
        why = " (check the count against the number of OSTs and the offset against their "
              "indexes: stria df)";
    else if (rc == -EEXIST || rc == -ENOTEMPTY)
        why = " (the file already holds data, so its layout can no longer change)";
    fprintf(stderr, "stria %s: %s: %s%s\n", cmd, path, strerror(-rc), why);
}

mode_t cli_umask(void)
{
    mode_t m = umask(0);
    umask(m);
    return m;
}
