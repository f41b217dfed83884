/*
 * bench_io: sequential streaming throughput of libstria against the local disk.
 *
 * One file of --size bytes is written through libstria with the given
 * striping, in --block sized stria_pwrite calls, then fsynced and closed;
 * after the page cache is dropped (when /proc/sys/vm/drop_caches is
 * writable, which also drops the storage targets' cache since they run on
 * this machine) it is read back in --block sized stria_pread calls and
 * every byte is checked. The same sequence with open/pwrite/fsync/pread on
 * a file in --local DIR is the baseline, measured in the same run, each
 * step right after its stria twin; the table gives both rates and their
 * ratio (stria / local). A benchmark never reports a bare time, and this
 * one asserts nothing about speed.
 *
 * The data is one pseudo-random buffer generated once; before each block
 * is written (or checked) the block's index is stamped into the first 8
 * bytes of every 4 KiB, so a block landing at the wrong offset is caught.
 */
#include <stria/stria.h>

#include "bench_common.h"

#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STAMP_EVERY 4096u

struct opts {
    const char *conf;
    const char *path;
    const char *local;
    uint64_t size;
    uint64_t block;
    int32_t count;
    uint32_t stripe_size;
};

/* One backend's view of a file, so stria and local run the same loop. */
struct backend {
    const char *name;
    int (*open_write)(void *ctx, const char *path);
    int (*open_read)(void *ctx, const char *path);
    ssize_t (*pwrite)(void *ctx, const void *buf, size_t len, off_t off);
    ssize_t (*pread)(void *ctx, void *buf, size_t len, off_t off);
    int (*fsync)(void *ctx);
    int (*close)(void *ctx);
};

struct result {
    double write_mibs;
    double read_mibs;
};

static void fill_pattern(uint8_t *buf, size_t len)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(buf + i, &x, 8);
    }
    for (; i < len; i++)
        buf[i] = (uint8_t)(i * 31u + 7u);
}

static void stamp(uint8_t *buf, size_t len, uint64_t blockno)
{
    for (size_t o = 0; o + 8 <= len; o += STAMP_EVERY)
        memcpy(buf + o, &blockno, 8);
}

/* ---- libstria backend ---- */

struct stria_ctx {
    stria_fs_t *fs;
    stria_file_t *f;
};

static int st_open_write(void *ctx, const char *path)
{
    struct stria_ctx *c = ctx;
    return stria_open(c->fs, path, O_WRONLY, 0, &c->f);
}

static int st_open_read(void *ctx, const char *path)
{
    struct stria_ctx *c = ctx;
    return stria_open(c->fs, path, O_RDONLY, 0, &c->f);
}

static ssize_t st_pwrite(void *ctx, const void *buf, size_t len, off_t off)
{
    return stria_pwrite(((struct stria_ctx *)ctx)->f, buf, len, off);
}

static ssize_t st_pread(void *ctx, void *buf, size_t len, off_t off)
{
    return stria_pread(((struct stria_ctx *)ctx)->f, buf, len, off);
}

static int st_fsync(void *ctx)
{
    return stria_fsync(((struct stria_ctx *)ctx)->f);
}

static int st_close(void *ctx)
{
    struct stria_ctx *c = ctx;
    int rc = stria_close(c->f);
    c->f = NULL;
    return rc;
}

static const struct backend stria_backend = {"stria",  st_open_write, st_open_read, st_pwrite,
                                             st_pread, st_fsync,      st_close};

/* ---- local file system backend ---- */

struct local_ctx {
    int fd;
};

static int lo_open_write(void *ctx, const char *path)
{
    struct local_ctx *c = ctx;
    c->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    return c->fd < 0 ? -errno : 0;
}

static int lo_open_read(void *ctx, const char *path)
{
    struct local_ctx *c = ctx;
    c->fd = open(path, O_RDONLY | O_CLOEXEC);
    return c->fd < 0 ? -errno : 0;
}

static ssize_t lo_pwrite(void *ctx, const void *buf, size_t len, off_t off)
{
    ssize_t n = pwrite(((struct local_ctx *)ctx)->fd, buf, len, off);
    return n < 0 ? -errno : n;
}

static ssize_t lo_pread(void *ctx, void *buf, size_t len, off_t off)
{
    ssize_t n = pread(((struct local_ctx *)ctx)->fd, buf, len, off);
    return n < 0 ? -errno : n;
}

static int lo_fsync(void *ctx)
{
    return fsync(((struct local_ctx *)ctx)->fd) < 0 ? -errno : 0;
}

static int lo_close(void *ctx)
{
    struct local_ctx *c = ctx;
    int rc = close(c->fd) < 0 ? -errno : 0;
    c->fd = -1;
    return rc;
}

static const struct backend local_backend = {"local",  lo_open_write, lo_open_read, lo_pwrite,
                                             lo_pread, lo_fsync,      lo_close};

/* ---- the measured sequence ---- */

static void fail(const char *backend, const char *what, const char *path, long long rc)
{
    fprintf(stderr, "bench_io: %s: %s %s: %s\n", backend, what, path, strerror((int)-rc));
}

/* Bytes of block i: block-sized except perhaps the last. */
static size_t block_len(const struct opts *o, uint64_t i)
{
    uint64_t off = i * o->block;
    return (size_t)(o->size - off < o->block ? o->size - off : o->block);
}

/*
 * Write the whole file through b, fsync and close it; returns 0 and
 * *mibs, or a negative errno (already reported). The stria file must
 * exist (setstripe made it); the local one is created. pat is the
 * block-sized pattern buffer.
 */
static int write_file(const struct backend *b, void *ctx, const char *path, const struct opts *o,
                      uint8_t *pat, double *mibs)
{
    uint64_t nblocks = (o->size + o->block - 1) / o->block;
    double t0 = now_s();
    int rc = b->open_write(ctx, path);
    if (rc) {
        fail(b->name, "open for writing", path, rc);
        return rc;
    }
    for (uint64_t i = 0; i < nblocks; i++) {
        size_t len = block_len(o, i);
        stamp(pat, len, i);
        ssize_t n = b->pwrite(ctx, pat, len, (off_t)(i * o->block));
        if (n != (ssize_t)len) {
            rc = n < 0 ? (int)n : -EIO;
            fail(b->name, "pwrite", path, rc);
            b->close(ctx);
            return rc;
        }
    }
    if ((rc = b->fsync(ctx))) {
        fail(b->name, "fsync", path, rc);
        b->close(ctx);
        return rc;
    }
    if ((rc = b->close(ctx))) {
        fail(b->name, "close", path, rc);
        return rc;
    }
    double dt = now_s() - t0;
    *mibs = (double)o->size / (1 << 20) / dt;
    printf("  write %-5s %8.1f MiB/s  (%" PRIu64 " MiB in %.2f s, fsync and close included)\n",
           b->name, *mibs, o->size >> 20, dt);
    fflush(stdout);
    return 0;
}

/*
 * Read the whole file back through b and check every byte against the
 * pattern; returns 0 and *mibs, or a negative errno (already reported).
 * rbuf is a block-sized buffer. Checking is not I/O: its time is left out.
 */
static int read_file(const struct backend *b, void *ctx, const char *path, const struct opts *o,
                     uint8_t *pat, uint8_t *rbuf, double *mibs)
{
    uint64_t nblocks = (o->size + o->block - 1) / o->block;
    double tcheck = 0, t0 = now_s();
    int rc = b->open_read(ctx, path);
    if (rc) {
        fail(b->name, "open for reading", path, rc);
        return rc;
    }
    for (uint64_t i = 0; i < nblocks; i++) {
        uint64_t off = i * o->block;
        size_t len = block_len(o, i);
        ssize_t n = b->pread(ctx, rbuf, len, (off_t)off);
        if (n != (ssize_t)len) {
            if (n >= 0)
                fprintf(stderr, "bench_io: %s: short read at %" PRIu64 ": %zd of %zu bytes\n",
                        b->name, off, n, len);
            else
                fail(b->name, "pread", path, n);
            b->close(ctx);
            return n < 0 ? (int)n : -EIO;
        }
        double c0 = now_s();
        stamp(pat, len, i);
        if (memcmp(rbuf, pat, len) != 0) {
            size_t k = 0;
            while (rbuf[k] == pat[k])
                k++;
            fprintf(stderr,
                    "bench_io: %s: data mismatch at byte %" PRIu64 " (block %" PRIu64
                    "): read 0x%02x, wrote 0x%02x\n",
                    b->name, off + k, i, rbuf[k], pat[k]);
            b->close(ctx);
            return -EIO;
        }
        tcheck += now_s() - c0;
    }
    if ((rc = b->close(ctx))) {
        fail(b->name, "close", path, rc);
        return rc;
    }
    double dt = now_s() - t0 - tcheck;
    *mibs = (double)o->size / (1 << 20) / dt;
    printf("  read  %-5s %8.1f MiB/s  (%" PRIu64 " MiB in %.2f s; %.2f s of checking left out)\n",
           b->name, *mibs, o->size >> 20, dt, tcheck);
    fflush(stdout);
    return 0;
}

/* Drop the page cache before a read and say whether it worked. */
static void before_read(const char *name)
{
    bool dropped = drop_caches();
    printf("  (page cache %s before reading %s)\n",
           dropped ? "dropped" : "NOT dropped: no root, reads may come from memory", name);
    fflush(stdout);
}

static void usage(FILE *to)
{
    fprintf(to, "usage: bench_io --conf FILE --local DIR [--path /bench/big] [--size 2G]\n"
                "                [--block 4M] [--count 4] [--stripe-size 4M]\n"
                "Writes then reads one file through libstria and the same file in DIR\n"
                "(the baseline), and prints MiB/s of both and their ratio.\n");
}

int main(int argc, char **argv)
{
    struct opts o = {.path = "/bench/big",
                     .size = 2ull << 30,
                     .block = 4u << 20,
                     .count = 4,
                     .stripe_size = 4u << 20};
    static const struct option longopts[] = {{"conf", required_argument, NULL, 'f'},
                                             {"path", required_argument, NULL, 'p'},
                                             {"size", required_argument, NULL, 's'},
                                             {"block", required_argument, NULL, 'b'},
                                             {"count", required_argument, NULL, 'c'},
                                             {"stripe-size", required_argument, NULL, 'S'},
                                             {"local", required_argument, NULL, 'l'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int opt;
    uint64_t v;
    while ((opt = getopt_long(argc, argv, "f:p:s:b:c:S:l:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'f':
            o.conf = optarg;
            break;
        case 'p':
            o.path = optarg;
            break;
        case 's':
            if (util_parse_size(optarg, &o.size) || o.size == 0) {
                fprintf(stderr, "bench_io: bad --size %s\n", optarg);
                return 2;
            }
            break;
        case 'b':
            if (util_parse_size(optarg, &o.block) || o.block == 0 || o.block > (1u << 30)) {
                fprintf(stderr, "bench_io: bad --block %s (1 byte to 1G)\n", optarg);
                return 2;
            }
            break;
        case 'c':
            o.count = atoi(optarg);
            if (o.count == 0 || o.count < -1) {
                fprintf(stderr, "bench_io: bad --count %s (-1 for all OSTs)\n", optarg);
                return 2;
            }
            break;
        case 'S':
            if (util_parse_size(optarg, &v) || v == 0 || v > UINT32_MAX || v % (64u << 10)) {
                fprintf(stderr, "bench_io: bad --stripe-size %s (a multiple of 64K)\n", optarg);
                return 2;
            }
            o.stripe_size = (uint32_t)v;
            break;
        case 'l':
            o.local = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc || !o.local || o.path[0] != '/') {
        usage(stderr);
        return 2;
    }

    /* A closed stdout (| head) must not stop us before the clean-up. */
    signal(SIGPIPE, SIG_IGN);
    int rc = 0, status = 1;
    stria_fs_t *fs = NULL;
    uint8_t *pat = NULL, *rbuf = NULL;
    bool made_parent = false, stria_file = false, local_file = false;
    char parent[PATH_MAX], local_path[PATH_MAX];
    snprintf(parent, sizeof(parent), "%s", o.path);
    char *slash = strrchr(parent, '/');
    if (slash == parent)
        slash[1] = '\0';
    else
        *slash = '\0';
    snprintf(local_path, sizeof(local_path), "%s/bench_io-%d.dat", o.local, (int)getpid());

    if ((rc = stria_connect(o.conf, &fs))) {
        fprintf(stderr, "bench_io: cannot connect with %s: %s\n", o.conf ? o.conf : "(default)",
                strerror(-rc));
        goto out;
    }
    pat = aligned_alloc(4096, (o.block + 4095) / 4096 * 4096);
    rbuf = aligned_alloc(4096, (o.block + 4095) / 4096 * 4096);
    if (!pat || !rbuf) {
        fprintf(stderr, "bench_io: out of memory for two %" PRIu64 " byte buffers\n", o.block);
        goto out;
    }
    fill_pattern(pat, o.block);

    printf("bench_io: %" PRIu64 " MiB in %" PRIu64 " KiB blocks; stria %s stripe count %d "
           "size %u KiB; local %s\n",
           o.size >> 20, o.block >> 10, o.path, o.count, o.stripe_size >> 10, local_path);
    fflush(stdout);

    /* The stria file: fresh, with the asked-for layout. */
    if (strcmp(parent, "/") != 0) {
        rc = stria_mkdir(fs, parent, 0755);
        if (rc && rc != -EEXIST) {
            fprintf(stderr, "bench_io: stria mkdir %s: %s\n", parent, strerror(-rc));
            goto out;
        }
        made_parent = rc == 0;
    }
    rc = stria_unlink(fs, o.path);
    if (rc && rc != -ENOENT) {
        fprintf(stderr, "bench_io: stria unlink %s: %s\n", o.path, strerror(-rc));
        goto out;
    }
    if ((rc = stria_setstripe(fs, o.path, o.count, o.stripe_size, -1))) {
        fprintf(stderr, "bench_io: stria setstripe %s: %s\n", o.path, strerror(-rc));
        goto out;
    }
    stria_file = true;

    /* Each stria step runs right beside its baseline step, so that both
     * see the same load from whatever else shares the machine. */
    struct result rs, rl;
    struct stria_ctx sc = {fs, NULL};
    struct local_ctx lc = {-1};
    local_file = true;
    if ((rc = write_file(&stria_backend, &sc, o.path, &o, pat, &rs.write_mibs)) ||
        (rc = write_file(&local_backend, &lc, local_path, &o, pat, &rl.write_mibs)))
        goto out;
    before_read("stria");
    if ((rc = read_file(&stria_backend, &sc, o.path, &o, pat, rbuf, &rs.read_mibs)))
        goto out;
    before_read("local");
    if ((rc = read_file(&local_backend, &lc, local_path, &o, pat, rbuf, &rl.read_mibs)))
        goto out;

    printf("\n%-8s %14s %14s %8s\n", "test", "stria MiB/s", "local MiB/s", "ratio");
    printf("%-8s %14.1f %14.1f %8.3f\n", "write", rs.write_mibs, rl.write_mibs,
           rs.write_mibs / rl.write_mibs);
    printf("%-8s %14.1f %14.1f %8.3f\n", "read", rs.read_mibs, rl.read_mibs,
           rs.read_mibs / rl.read_mibs);
    printf("(ratio = stria / local; write time includes fsync and close)\n");
    status = 0;
out:
    if (local_file && unlink(local_path) < 0 && errno != ENOENT) {
        fprintf(stderr, "bench_io: unlink %s: %s\n", local_path, strerror(errno));
        status = 1;
    }
    if (stria_file && (rc = stria_unlink(fs, o.path)) && rc != -ENOENT) {
        fprintf(stderr, "bench_io: stria unlink %s: %s\n", o.path, strerror(-rc));
        status = 1;
    }
    if (made_parent && (rc = stria_rmdir(fs, parent)) && rc != -ENOTEMPTY)
        fprintf(stderr, "bench_io: stria rmdir %s: %s\n", parent, strerror(-rc));
    if (fs)
        stria_disconnect(fs);
    free(pat);
    free(rbuf);
    return status;
}
