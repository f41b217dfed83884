/*
 * stria cp: a file between the local disk and the cluster, or within it.
 *
 * Each end of the copy is a local file or a cluster file (struct cp_end),
 * read and written through the same few calls, so the four directions are
 * one loop. cp moves data in 8 MiB chunks with pread/pwrite on both sides
 * (libstria spreads each chunk over the file's stripes in parallel) and
 * fsyncs the destination before it returns, so a copy that exits 0 is
 * durable. It never follows the source's layout, owner, mode or times:
 * only the data. Bare paths are local here, unlike in other commands.
 */
#include "args.h"
#include "commands.h"
#include "connect.h"
#include "paths.h"

#include "../common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CP_CHUNK (8u << 20)

/* One side of a copy: a local file or a cluster file. */
struct cp_end {
    int is_stria;
    char path[CLI_PATH_MAX];
    int fd;
    stria_file_t *f;
};

struct cp_opts {
    int verbose, set_layout;
    int32_t count;
    uint32_t size;
};

static const char *end_prefix(const struct cp_end *e)
{
    return e->is_stria ? "stria:" : "";
}

static void end_error(const char *what, const struct cp_end *e, int rc)
{
    fprintf(stderr, "stria cp: %s%s%s: %s\n", what, end_prefix(e), e->path, strerror(-rc));
}

static ssize_t end_pread(struct cp_end *e, void *buf, size_t len, off_t off)
{
    if (e->is_stria)
        return stria_pread(e->f, buf, len, off);
    ssize_t n;
    while ((n = pread(e->fd, buf, len, off)) < 0 && errno == EINTR)
        ;
    return n < 0 ? -errno : n;
}

static int end_pwrite_full(struct cp_end *e, const char *buf, size_t len, off_t off)
{
    while (len > 0) {
        ssize_t n;
        if (e->is_stria) {
            n = stria_pwrite(e->f, buf, len, off);
        } else if ((n = pwrite(e->fd, buf, len, off)) < 0) {
            if (errno == EINTR)
                continue;
            n = -errno;
        }
        if (n < 0)
            return (int)n;
        if (n == 0)
            return -EIO;
        buf += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

static int end_fstat(struct cp_end *e, struct stat *st)
{
    if (e->is_stria)
        return stria_fstat(e->f, st);
    return fstat(e->fd, st) < 0 ? -errno : 0;
}

static int end_stat(stria_fs_t *fs, const struct cp_end *e, struct stat *st)
{
    if (e->is_stria)
        return stria_stat(fs, e->path, st);
    return stat(e->path, st) < 0 ? -errno : 0;
}

static int end_open(stria_fs_t *fs, struct cp_end *e, int flags)
{
    mode_t mode = 0666 & ~cli_umask();
    if (e->is_stria)
        return stria_open(fs, e->path, flags, mode, &e->f);
    e->fd = open(e->path, flags | O_CLOEXEC, mode);
    return e->fd < 0 ? -errno : 0;
}

/* Close, and for the destination fsync first; returns the first error. */
static int end_close(struct cp_end *e, int sync)
{
    int rc = 0;
    if (e->is_stria && e->f) {
        rc = sync ? stria_fsync(e->f) : 0;
        int rc2 = stria_close(e->f);
        rc = rc ? rc : rc2;
        e->f = NULL;
    } else if (!e->is_stria && e->fd >= 0) {
        if (sync && fsync(e->fd) < 0)
            rc = -errno;
        if (close(e->fd) < 0 && rc == 0)
            rc = -errno;
        e->fd = -1;
    }
    return rc;
}

static int cp_parse(int argc, char **argv, struct cp_opts *o, struct cp_end *src,
                    struct cp_end *dst)
{
    int c, rc;
    while ((c = cli_getopt(argc, argv, "vc:S:")) != -1) {
        switch (c) {
        case 'v':
            o->verbose = 1;
            break;
        case 'c':
            if ((rc = cli_parse_stripe_count(argv[0], optarg, &o->count)) != 0)
                return rc;
            o->set_layout = 1;
            break;
        case 'S':
            if ((rc = cli_parse_stripe_size(argv[0], optarg, &o->size)) != 0)
                return rc;
            o->set_layout = 1;
            break;
        default:
            return cli_usage_error(argv[0], NULL);
        }
    }
    if (argc - optind != 2)
        return cli_usage_error(argv[0], "expected SRC and DST");
    if (cli_path(argv[optind], src->path, sizeof(src->path), &src->is_stria) < 0 ||
        cli_path(argv[optind + 1], dst->path, sizeof(dst->path), &dst->is_stria) < 0)
        return cli_usage_error(argv[0], "path too long");
    if (!src->is_stria && !dst->is_stria)
        return cli_usage_error(argv[0], "both paths are local; write the cluster side as "
                                        "stria:/PATH or as a path inside a stria mount "
                                        "(use cp(1) for local copies)");
    if (o->set_layout && !dst->is_stria)
        return cli_usage_error(argv[0], "-c and -S apply only to a cluster destination");
    return CLI_OK;
}

static int cp_open_src(stria_fs_t *fs, struct cp_end *src, struct stat *st)
{
    int rc = end_open(fs, src, O_RDONLY);
    if (rc == 0)
        rc = end_fstat(src, st);
    if (rc == 0 && !S_ISREG(st->st_mode))
        rc = S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
    if (rc < 0) {
        end_error("", src, rc);
        return CLI_FAIL;
    }
    if (!src->is_stria)
        posix_fadvise(src->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return CLI_OK;
}

/* If DST is a directory, copy into it under the source's name; refuse to
 * copy a file onto itself, which O_TRUNC would destroy. */
static int cp_resolve_dst(stria_fs_t *fs, struct cp_end *dst, const struct cp_end *src,
                          const struct stat *src_st)
{
    char name[256], dir[CLI_PATH_MAX];
    struct stat st;
    int rc = end_stat(fs, dst, &st);
    if (rc == 0 && S_ISDIR(st.st_mode)) {
        snprintf(dir, sizeof(dir), "%s", dst->path);
        rc = cli_path_join(dir, cli_base_name(src->path, name, sizeof(name)), dst->path,
                           sizeof(dst->path));
        if (rc < 0) {
            end_error("", dst, rc);
            return CLI_FAIL;
        }
        rc = end_stat(fs, dst, &st);
    }
    if (rc == 0 && src->is_stria && dst->is_stria && st.st_ino == src_st->st_ino) {
        fprintf(stderr, "stria cp: stria:%s and stria:%s are the same file\n", src->path,
                dst->path);
        return CLI_FAIL;
    }
    if (rc < 0 && rc != -ENOENT) {
        end_error("", dst, rc);
        return CLI_FAIL;
    }
    return CLI_OK;
}

static int cp_open_dst(stria_fs_t *fs, struct cp_end *dst, const struct cp_opts *o)
{
    char shown[CLI_PATH_MAX + 8];
    int rc;
    snprintf(shown, sizeof(shown), "%s%s", end_prefix(dst), dst->path);
    /* Creates the file with this layout, or re-lays an existing empty one. */
    if (o->set_layout && (rc = stria_setstripe(fs, dst->path, o->count, o->size, -1)) < 0) {
        cli_stripe_error("cp", shown, rc);
        if (rc == -EEXIST || rc == -ENOTEMPTY)
            fprintf(stderr, "stria cp: remove %s first to copy with a new layout\n", shown);
        return CLI_FAIL;
    }
    rc = end_open(fs, dst, O_WRONLY | O_CREAT | O_TRUNC);
    if (rc < 0) {
        cli_error("cp", shown, rc);
        return CLI_FAIL;
    }
    return CLI_OK;
}

static int cp_data(struct cp_end *src, struct cp_end *dst, uint64_t *copied)
{
    char *buf = malloc(CP_CHUNK);
    int ret = CLI_OK;
    off_t off = 0;

    if (!buf) {
        fprintf(stderr, "stria cp: %s\n", strerror(ENOMEM));
        return CLI_FAIL;
    }
    for (;;) {
        ssize_t n = end_pread(src, buf, CP_CHUNK, off);
        if (n == 0)
            break;
        if (n < 0) {
            end_error("reading ", src, (int)n);
            ret = CLI_FAIL;
            break;
        }
        int rc = end_pwrite_full(dst, buf, (size_t)n, off);
        if (rc < 0) {
            end_error("writing ", dst, rc);
            ret = CLI_FAIL;
            break;
        }
        off += n;
    }
    free(buf);
    *copied = (uint64_t)off;
    return ret;
}

static void cp_summary(const struct cp_end *src, const struct cp_end *dst, uint64_t bytes,
                       uint64_t ns)
{
    char size[32], rate[32];
    double secs = (double)ns / 1e9;
    uint64_t bps = secs > 0 ? (uint64_t)((double)bytes / secs) : 0;
    fprintf(stderr, "stria cp: %s%s -> %s%s: %" PRIu64 " bytes (%s) in %.2f s, %s/s\n",
            end_prefix(src), src->path, end_prefix(dst), dst->path, bytes,
            util_fmt_size(bytes, size, sizeof(size)), secs, util_fmt_size(bps, rate, sizeof(rate)));
}

int cmd_cp(int argc, char **argv)
{
    struct cp_opts o = {0};
    struct cp_end src = {.fd = -1}, dst = {.fd = -1};
    struct stat st;
    stria_fs_t *fs;
    uint64_t copied = 0, start = 0;

    int ret = cp_parse(argc, argv, &o, &src, &dst);
    if (ret != CLI_OK)
        return ret;
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    ret = cp_open_src(fs, &src, &st);
    if (ret == CLI_OK)
        ret = cp_resolve_dst(fs, &dst, &src, &st);
    if (ret == CLI_OK)
        ret = cp_open_dst(fs, &dst, &o);
    if (ret == CLI_OK) {
        start = util_now_mono_ns();
        ret = cp_data(&src, &dst, &copied);
    }
    int rc = end_close(&dst, ret == CLI_OK);
    if (rc < 0 && ret == CLI_OK) {
        end_error("syncing ", &dst, rc);
        ret = CLI_FAIL;
    }
    end_close(&src, 0);
    if (ret == CLI_OK && o.verbose)
        cp_summary(&src, &dst, copied, util_now_mono_ns() - start);
    stria_disconnect(fs);
    return ret;
}
