/*
 * Config loading from one option table (config.h). Parsing is strict: an
 * unknown key, a value out of bounds or a line that is not "key = value" is
 * an error naming the file and line, so a typo never silently becomes a
 * default.
 */
#include "config.h"

#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define FIELD(conf, opt) ((char *)(conf) + (opt)->offset)

static const struct cfg_option *find_opt(const struct cfg_table *t, const char *key)
{
    for (size_t i = 0; i < t->nopts; i++)
        if (strcmp(t->opts[i].name, key) == 0)
            return &t->opts[i];
    return NULL;
}

static int set_value(const struct cfg_option *o, void *conf, const char *value, char *err,
                     size_t errlen)
{
    void *f = FIELD(conf, o);
    switch (o->type) {
    case CFG_STR: {
        char *s = strdup(value);
        if (!s)
            return -ENOMEM;
        free(*(char **)f);
        *(char **)f = s;
        return 0;
    }
    case CFG_INT: {
        int64_t v;
        if (util_parse_i64(value, &v)) {
            snprintf(err, errlen, "%s: '%s' is not an integer", o->name, value);
            return -EINVAL;
        }
        if (v < o->min || v > o->max) {
            snprintf(err, errlen, "%s: %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]", o->name,
                     v, o->min, o->max);
            return -ERANGE;
        }
        *(int64_t *)f = v;
        return 0;
    }
    case CFG_SIZE: {
        uint64_t v;
        if (util_parse_size(value, &v)) {
            snprintf(err, errlen, "%s: '%s' is not a size (e.g. 4096, 4K, 1M, 2G)", o->name, value);
            return -EINVAL;
        }
        if (v < (uint64_t)o->min || v > (uint64_t)o->max) {
            snprintf(err, errlen, "%s: %" PRIu64 " is outside [%" PRId64 ", %" PRId64 "]", o->name,
                     v, o->min, o->max);
            return -ERANGE;
        }
        *(uint64_t *)f = v;
        return 0;
    }
    case CFG_BOOL: {
        bool v;
        if (!strcmp(value, "true") || !strcmp(value, "yes") || !strcmp(value, "1"))
            v = true;
        else if (!strcmp(value, "false") || !strcmp(value, "no") || !strcmp(value, "0"))
            v = false;
        else {
            snprintf(err, errlen, "%s: '%s' is not true/false", o->name, value);
            return -EINVAL;
        }
        *(bool *)f = v;
        return 0;
    }
    case CFG_ADDR: {
        struct cfg_addr *a = f;
        if (util_parse_hostport(value, a->host, sizeof(a->host), &a->port)) {
            snprintf(err, errlen, "%s: '%s' is not host:port", o->name, value);
            return -EINVAL;
        }
        return 0;
    }
    case CFG_LIST: {
        struct cfg_list *l = f;
        if (l->count >= 1024) {
            snprintf(err, errlen, "%s: too many entries", o->name);
            return -E2BIG;
        }
        char **items = realloc(l->items, sizeof(char *) * (size_t)(l->count + 1));
        if (!items)
            return -ENOMEM;
        l->items = items;
        if (!(items[l->count] = strdup(value)))
            return -ENOMEM;
        l->count++;
        return 0;
    }
    }
    return -EINVAL;
}

int cfg_defaults(const struct cfg_table *t, void *conf)
{
    char err[256];
    for (size_t i = 0; i < t->nopts; i++) {
        const struct cfg_option *o = &t->opts[i];
        if (!o->def || o->type == CFG_LIST)
            continue;
        int rc = set_value(o, conf, o->def, err, sizeof(err));
        if (rc) {
            fprintf(stderr, "%s: bad built-in default: %s\n", t->program, err);
            return rc;
        }
    }
    return 0;
}

int cfg_set(const struct cfg_table *t, void *conf, const char *key, const char *value, char *err,
            size_t errlen)
{
    const struct cfg_option *o = find_opt(t, key);
    if (!o) {
        snprintf(err, errlen, "unknown option '%s' (see %s --help)", key, t->program);
        return -ENOENT;
    }
    return set_value(o, conf, value, err, errlen);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

int cfg_load_file(const struct cfg_table *t, void *conf, const char *path, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    int rc = util_read_file(path, 1 << 20, &text, &len);
    if (rc) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(-rc));
        return rc;
    }
    if (strlen(text) != len) {
        int nul_line = 1;
        for (const char *q = text; *q; q++)
            nul_line += *q == '\n';
        snprintf(err, errlen, "%s:%d: holds a NUL byte; not a config file", path, nul_line);
        rc = -EINVAL;
        goto out;
    }
    int lineno = 0;
    /* strsep, not strtok: empty lines must count for line numbers. */
    for (char *rest = text, *line; (line = strsep(&rest, "\n"));) {
        lineno++;
        char *s = trim(line);
        if (!*s || *s == '#' || *s == ';')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, errlen, "%s:%d: expected 'key = value', got '%.60s'", path, lineno, s);
            rc = -EINVAL;
            goto out;
        }
        *eq = '\0';
        char *key = trim(s), *value = trim(eq + 1);
        for (const char *p = value; *p; p++) {
            if (!isprint((unsigned char)*p)) {
                snprintf(err, errlen, "%s:%d: value of '%s' holds a control character", path,
                         lineno, key);
                rc = -EINVAL;
                goto out;
            }
        }
        char e2[256];
        rc = cfg_set(t, conf, key, value, e2, sizeof(e2));
        if (rc) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, e2);
            goto out;
        }
    }
out:
    free(text);
    return rc;
}

int cfg_check_required(const struct cfg_table *t, const void *conf, char *err, size_t errlen)
{
    for (size_t i = 0; i < t->nopts; i++) {
        const struct cfg_option *o = &t->opts[i];
        if (!o->required)
            continue;
        const char *f = (const char *)conf + o->offset;
        bool set = true;
        if (o->type == CFG_STR)
            set = *(char *const *)f != NULL && **(char *const *)f != '\0';
        else if (o->type == CFG_LIST)
            set = ((const struct cfg_list *)f)->count > 0;
        else if (o->type == CFG_ADDR)
            set = ((const struct cfg_addr *)f)->port != 0;
        if (!set) {
            snprintf(err, errlen, "option '%s' is required: %s", o->name, o->help);
            return -EINVAL;
        }
    }
    return 0;
}

static const char *type_name(enum cfg_type t)
{
    static const char *n[] = {"string", "integer", "size", "bool", "host:port", "list"};
    return n[t];
}

void cfg_print_help(const struct cfg_table *t, FILE *f)
{
    fprintf(f, "Usage: %s --config FILE [--set key=value ...]\n%s\n\n", t->program, t->description);
    fprintf(f, "  --config FILE      load options from FILE (key = value lines)\n"
               "  --set key=value    override one option after the file\n"
               "  --print-template   print a commented config with every option\n"
               "  --help             this text\n\nOptions:\n");
    for (size_t i = 0; i < t->nopts; i++) {
        const struct cfg_option *o = &t->opts[i];
        fprintf(f, "  %-22s %-9s %s", o->name, type_name(o->type), o->help);
        if (o->type == CFG_INT || o->type == CFG_SIZE)
            fprintf(f, " [%" PRId64 "..%" PRId64 "]", o->min, o->max);
        if (o->def)
            fprintf(f, " (default: %s)", o->def);
        if (o->required)
            fprintf(f, " (required)");
        fputc('\n', f);
    }
}

void cfg_print_template(const struct cfg_table *t, FILE *f)
{
    fprintf(f, "# %s configuration\n# %s\n# Generated by `%s --print-template`.\n", t->program,
            t->description, t->program);
    for (size_t i = 0; i < t->nopts; i++) {
        const struct cfg_option *o = &t->opts[i];
        fprintf(f, "\n# %s (%s%s)", o->help, type_name(o->type),
                o->type == CFG_LIST ? ", may repeat" : "");
        if (o->type == CFG_INT || o->type == CFG_SIZE)
            fprintf(f, " range %" PRId64 "..%" PRId64, o->min, o->max);
        fputc('\n', f);
        if (o->required)
            fprintf(f, "%s = \n", o->name);
        else
            fprintf(f, "#%s = %s\n", o->name, o->def ? o->def : "");
    }
}

void cfg_free(const struct cfg_table *t, void *conf)
{
    for (size_t i = 0; i < t->nopts; i++) {
        const struct cfg_option *o = &t->opts[i];
        void *f = FIELD(conf, o);
        if (o->type == CFG_STR) {
            free(*(char **)f);
            *(char **)f = NULL;
        } else if (o->type == CFG_LIST) {
            struct cfg_list *l = f;
            for (int j = 0; j < l->count; j++)
                free(l->items[j]);
            free(l->items);
            l->items = NULL;
            l->count = 0;
        }
    }
}

int cfg_main_args(const struct cfg_table *t, void *conf, int argc, char **argv)
{
    char err[512];
    if (cfg_defaults(t, conf))
        return -1;
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            cfg_print_help(t, stdout);
            return 1;
        }
        if (!strcmp(argv[i], "--print-template")) {
            cfg_print_template(t, stdout);
            return 1;
        }
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc) {
            file = argv[++i];
            if (cfg_load_file(t, conf, file, err, sizeof(err))) {
                fprintf(stderr, "%s: %s\n", t->program, err);
                return -1;
            }
        } else if (!strcmp(argv[i], "--set") && i + 1 < argc) {
            char *kv = argv[++i], *eq = strchr(kv, '=');
            if (!eq) {
                fprintf(stderr, "%s: --set wants key=value, got '%s'\n", t->program, kv);
                return -1;
            }
            *eq = '\0';
            int rc = cfg_set(t, conf, kv, eq + 1, err, sizeof(err));
            *eq = '=';
            if (rc) {
                fprintf(stderr, "%s: %s\n", t->program, err);
                return -1;
            }
        } else {
            fprintf(stderr, "%s: unknown argument '%s' (try --help)\n", t->program, argv[i]);
            return -1;
        }
    }
    if (cfg_check_required(t, conf, err, sizeof(err))) {
        fprintf(stderr, "%s: %s%s\n", t->program, err, file ? "" : " (no --config given)");
        return -1;
    }
    return 0;
}
