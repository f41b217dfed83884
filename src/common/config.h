/*
 * Declarative configuration. Each daemon (and the client) describes its
 * options once, in a table of struct cfg_option: name, type, bounds, default
 * and help. The same table loads INI-style files ("key = value", '#'
 * comments), applies --set overrides, prints --help and prints the commented
 * template config shipped in conf/. Values land in a caller-owned struct
 * at each option's offset.
 */
#ifndef STRIA_CONFIG_H
#define STRIA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum cfg_type {
    CFG_STR,  /* char *, malloc'd, freed by cfg_free */
    CFG_INT,  /* int64_t, bounds checked */
    CFG_SIZE, /* uint64_t, accepts K/M/G/T suffixes, bounds checked */
    CFG_BOOL, /* bool: true/false/yes/no/1/0 */
    CFG_ADDR, /* struct cfg_addr: "host:port" */
    CFG_LIST, /* struct cfg_list: the key may repeat; each line adds an item */
};

struct cfg_addr {
    char host[256];
    uint16_t port;
};

struct cfg_list {
    char **items;
    int count;
};

struct cfg_option {
    const char *name;
    enum cfg_type type;
    int64_t min, max; /* CFG_INT and CFG_SIZE */
    const char *def;  /* default in file syntax; NULL: no default */
    bool required;    /* loading fails if never set */
    const char *help;
    size_t offset;
};

struct cfg_table {
    const char *program;     /* "stria-stord" */
    const char *description; /* one line */
    const struct cfg_option *opts;
    size_t nopts;
};

/* Apply every default. Returns 0 or -EINVAL (a bad default is a bug). */
int cfg_defaults(const struct cfg_table *t, void *conf);
/* Set one option from text. On error writes a message into err. */
int cfg_set(const struct cfg_table *t, void *conf, const char *key, const char *value, char *err,
            size_t errlen);
/* Load a file; errors name the file and line. Returns 0 or negative errno. */
int cfg_load_file(const struct cfg_table *t, void *conf, const char *path, char *err,
                  size_t errlen);
/* Check required options were given. */
int cfg_check_required(const struct cfg_table *t, const void *conf, char *err, size_t errlen);
void cfg_print_help(const struct cfg_table *t, FILE *f);
void cfg_print_template(const struct cfg_table *t, FILE *f);
/* Free every string and list the table owns in conf. */
void cfg_free(const struct cfg_table *t, void *conf);

/*
 * The command line every daemon shares:
 *   --config FILE, --set key=value (repeatable), --help, --print-template.
 * Returns 0 to run, 1 when the caller should exit 0 (help printed), or -1
 * when it should exit 2 (an error was printed to stderr).
 */
int cfg_main_args(const struct cfg_table *t, void *conf, int argc, char **argv);

#endif
