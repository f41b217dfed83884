/*
 * stria migrate: rewrite files' data into a new layout online, as lfs
 * migrate does (docs/architecture.md, "Migration"). The layout options
 * are setstripe's; without any, the file system's default layout. Paths
 * come as arguments (directories are walked) or, without any, one per
 * line on standard input, so that `stria find /x -ost 3 | stria migrate
 * -c 2` drains an OST.
 */
#include "args.h"
#include "commands.h"
#include "connect.h"
#include "paths.h"

#include "../common/util.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct run {
    const char *cmd;
    stria_fs_t *fs;
    unsigned n;
    struct stria_comp_spec comps[STRIA_MAX_COMPONENTS];
    bool bar, verbose;
    size_t files, failed;
    uint64_t bytes;
    const char *path;
    uint64_t size;
};

static void on_progress(uint64_t done, void *arg)
{
    struct run *r = arg;
    if (!r->bar)
        return;
    int pct = r->size ? (int)(MIN(done, r->size) * 100 / r->size) : 100;
    fprintf(stderr, "\r%s: %s: %" PRIu64 "/%" PRIu64 " MiB [%3d%%]", r->cmd, r->path, done >> 20,
            r->size >> 20, pct);
}

static void migrate_file(struct run *r, const char *path, const struct stat *st)
{
    char why[256] = "";
    r->path = path;
    r->size = (uint64_t)st->st_size;
    int rc = stria_migrate(r->fs, path, r->n, r->comps, on_progress, r, why, sizeof(why));
    if (r->bar)
        fputc('\n', stderr);
    if (rc) {
        fprintf(stderr, "%s: %s: %s\n", r->cmd, path, why[0] ? why : strerror(-rc));
        r->failed++;
        return;
    }
    r->files++;
    r->bytes += (uint64_t)st->st_size;
    if (r->verbose)
        printf("%s\n", path);
}

static int on_file(const char *path, const struct stat *st, void *arg)
{
    migrate_file(arg, path, st);
    return 0; /* a file that fails is counted; the others still move */
}

static void migrate_arg(struct run *r, const char *arg)
{
    char path[CLI_PATH_MAX];
    if (cli_stria_path(r->cmd, arg, path, sizeof(path)) < 0)
        r->failed++;
    else
        cli_walk_files(r->fs, r->cmd, path, on_file, r, &r->failed);
}

int cmd_migrate(int argc, char **argv)
{
    static struct run r; /* the components are large */
    memset(&r, 0, sizeof(r));
    r.cmd = argv[0];
    r.bar = isatty(2) != 0;
    /* The layout options, up to the first path: setstripe's, -E or not. */
    char *opts[2 + 2 * 4 * 6];
    int nopt = 0, k = 1;
    bool composite = false;
    for (; k < argc; k++) {
        if (!strcmp(argv[k], "-v")) {
            r.verbose = true;
            continue;
        }
        if (!strcmp(argv[k], "--no-progress")) {
            r.bar = false;
            continue;
        }
        bool opt = !strcmp(argv[k], "-E") || !strcmp(argv[k], "-c") || !strcmp(argv[k], "-S") ||
                   !strcmp(argv[k], "-i") || !strcmp(argv[k], "-p") || !strcmp(argv[k], "--pool") ||
                   !strcmp(argv[k], "-L");
        if (!opt)
            break;
        if (k + 1 == argc)
            return cli_usage_error(argv[0], "%s needs a value", argv[k]);
        if (nopt + 4 > (int)(sizeof(opts) / sizeof(opts[0])))
            return cli_usage_error(argv[0], "too many layout options");
        composite |= !strcmp(argv[k], "-E");
        if (!composite && nopt == 0) {
            opts[nopt++] = "-E";
            opts[nopt++] = "-1";
        }
        opts[nopt++] = !strcmp(argv[k], "--pool") ? "-p" : argv[k];
        opts[nopt++] = argv[++k];
    }
    if (argc > k && argv[k][0] == '-' && argv[k][1])
        return cli_usage_error(argv[0], "unknown option '%s'", argv[k]);
    if (nopt == 0) {
        opts[nopt++] = "-E";
        opts[nopt++] = "-1";
    }
    char why[256];
    if (stria_comps_parse(nopt, opts, r.comps, STRIA_MAX_COMPONENTS, &r.n, why, sizeof(why)))
        return cli_usage_error(argv[0], "%s", why);
    if (cli_connect(&r.fs) < 0)
        return CLI_FAIL;
    if (k < argc) {
        for (; k < argc; k++)
            migrate_arg(&r, argv[k]);
    } else {
        /* Paths one per line, as stria find prints them. */
        char line[CLI_PATH_MAX];
        while (fgets(line, sizeof(line), stdin)) {
            line[strcspn(line, "\n")] = 0;
            if (line[0])
                migrate_arg(&r, line);
        }
    }
    stria_disconnect(r.fs);
    if (r.verbose || r.failed)
        fprintf(stderr, "%s: %zu file(s), %" PRIu64 " MiB migrated; %zu failed\n", argv[0], r.files,
                r.bytes >> 20, r.failed);
    return r.failed ? CLI_FAIL : CLI_OK;
}
