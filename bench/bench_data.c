/*
 * bench_data: the data-path workloads of issue 6 on one file system, so
 * that bench_data.sh can run each on Stria and on its baselines in the
 * same run and print ratios.
 *
 *   bench_data (--stria CONF | --dir DIR) seq     [--size 4G] [--block 4M] [--threads N]
 *   bench_data (--stria CONF | --dir DIR) dataset [--files 100000] [--file-size 64K] [--threads N]
 *   bench_data (--stria CONF | --dir DIR) burst   [--writers 8] [--shard 512M] [--block 4M]
 *   bench_data (--stria CONF | --dir DIR) small   --phase write|read|clean --tag NAME
 *                                                 [--files 100000] [--threads 1] [--stats CONF]
 *
 * --stria goes through libstria (files made with --count and --stripe-size,
 * 4 and 4M unless told; with --cache, the metadata cache and write-behind
 * on, as a program keeping one client may have them and the mount has);
 * --dir through system calls on a directory: the local disk, a FUSE
 * mount, a GlusterFS mount.
 *
 * seq:     one file of --size; thread t of N writes the t-th of N contiguous
 *          ranges in --block calls, each thread fsyncs and closes its handle;
 *          then, after the page cache is dropped, the same threads read it
 *          back and check every block's stamp. Time: first open to last close.
 * dataset: --files files of --file-size in one directory, made first (not
 *          timed); the cache is dropped; then N threads open, read whole and
 *          close them in one random order (a fixed seed), checking each.
 * burst:   --writers threads each write a file of --shard of its own, fsync
 *          and close it, all at once: a checkpoint. Time: start to last close.
 * small:   one phase per run (bench_small.sh alternates them with the
 *          baseline's): write makes --files files of --file-size in 64
 *          directories under bench-small-TAG (open O_CREAT, write, close);
 *          read drops the cache and opens, reads and closes them in one
 *          random order; clean removes them. With --stats (or --stria) the
 *          cluster's MDT and storage requests during the phase are counted
 *          and printed per file.
 *
 * Buffers hold pseudo-random bytes made once; each 4 KiB starts with the
 * number of its block (or file), which reads check.
 *
 * Each result is one line "RESULT <mode> <metric> <value>" for the script,
 * after a line for people. Files made are removed at the end. Nothing here
 * asserts speed; a failed call or a wrong byte exits 1.
 */
#include <stria/stria.h>

#include "bench_common.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STAMP_EVERY 4096u

static struct {
    stria_fs_t *fs;  /* --stria */
    const char *dir; /* --dir */
    int32_t count;
    uint32_t stripe_size;
    const char *warm; /* seq --warm: the source behind a FUSE passthrough */
} B;

/* One open file of either kind. */
struct file {
    stria_file_t *sf;
    int fd;
};

static void die(const char *what, const char *path, int rc)
{
    fprintf(stderr, "bench_data: %s %s: %s\n", what, path, strerror(-rc));
    exit(1);
}

/* A path of the file system under test: libstria's or DIR's. */
static void path_of(char *out, size_t len, const char *rel)
{
    if (B.fs)
        snprintf(out, len, "/%s", rel);
    else
        snprintf(out, len, "%s/%s", B.dir, rel);
}

static int f_create(const char *path, struct file *f, int32_t count)
{
    if (B.fs) {
        int rc = stria_setstripe(B.fs, path, count, B.stripe_size, -1);
        if (rc && rc != -EEXIST)
            return rc;
        return stria_open(B.fs, path, O_WRONLY, 0, &f->sf);
    }
    f->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    return f->fd < 0 ? -errno : 0;
}

static int f_open(const char *path, int flags, struct file *f)
{
    if (B.fs)
        return stria_open(B.fs, path, flags, 0, &f->sf);
    f->fd = open(path, flags | O_CLOEXEC);
    return f->fd < 0 ? -errno : 0;
}

static ssize_t f_pwrite(struct file *f, const void *buf, size_t len, uint64_t off)
{
    if (B.fs)
        return stria_pwrite(f->sf, buf, len, (off_t)off);
    ssize_t n = pwrite(f->fd, buf, len, (off_t)off);
    return n < 0 ? -errno : n;
}

static ssize_t f_pread(struct file *f, void *buf, size_t len, uint64_t off)
{
    if (B.fs)
        return stria_pread(f->sf, buf, len, (off_t)off);
    ssize_t n = pread(f->fd, buf, len, (off_t)off);
    return n < 0 ? -errno : n;
}

static int f_fsync(struct file *f)
{
    if (B.fs)
        return stria_fsync(f->sf);
    return fsync(f->fd) < 0 ? -errno : 0;
}

static int f_close(struct file *f)
{
    if (B.fs)
        return stria_close(f->sf);
    return close(f->fd) < 0 ? -errno : 0;
}

static int f_unlink(const char *path)
{
    if (B.fs)
        return stria_unlink(B.fs, path);
    return unlink(path) < 0 ? -errno : 0;
}

static int f_mkdir(const char *path)
{
    int rc = B.fs ? stria_mkdir(B.fs, path, 0755) : (mkdir(path, 0755) < 0 ? -errno : 0);
    return rc == -EEXIST ? 0 : rc;
}

static int f_rmdir(const char *path)
{
    if (B.fs)
        return stria_rmdir(B.fs, path);
    return rmdir(path) < 0 ? -errno : 0;
}

/* Pseudo-random bytes, made once per buffer: making them for every block
 * would cost the writer more than fio spends on its buffers. */
static void randomize(uint8_t *buf, size_t len)
{
    uint64_t x = 0x9e3779b97f4a7c15ull ^ (uintptr_t)buf;
    for (size_t i = 0; i + 8 <= len; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(buf + i, &x, 8);
    }
}

/* Make every 4 KiB of buf start with tag (which block or file it is). */
static void stamp(uint8_t *buf, size_t len, uint64_t tag)
{
    for (size_t o = 0; o + 8 <= len; o += STAMP_EVERY)
        memcpy(buf + o, &tag, 8);
}

static bool stamped(const uint8_t *buf, size_t len, uint64_t tag)
{
    for (size_t o = 0; o + 8 <= len; o += STAMP_EVERY)
        if (memcmp(buf + o, &tag, 8))
            return false;
    return true;
}

static void *xmalloc(size_t n)
{
    void *p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
    if (!p) {
        fprintf(stderr, "bench_data: out of memory\n");
        exit(1);
    }
    return p;
}

/* ---- seq and burst: threads over byte ranges of files ---- */

struct range {
    const char *path;
    uint64_t off, len, block;
    bool write, create;
    int32_t count;
    double fsync_s; /* how long its fsync took */
};

static void *range_main(void *arg)
{
    struct range *r = arg;
    uint8_t *buf = xmalloc(r->block);
    randomize(buf, r->block);
    struct file f;
    int rc = r->create ? f_create(r->path, &f, r->count)
                       : f_open(r->path, r->write ? O_WRONLY : O_RDONLY, &f);
    if (rc)
        die(r->write ? "open for writing" : "open for reading", r->path, rc);
    for (uint64_t done = 0; done < r->len;) {
        uint64_t off = r->off + done;
        size_t len = (size_t)(r->len - done < r->block ? r->len - done : r->block);
        if (r->write)
            stamp(buf, len, off / r->block);
        ssize_t n = r->write ? f_pwrite(&f, buf, len, off) : f_pread(&f, buf, len, off);
        if (n != (ssize_t)len)
            die(r->write ? "pwrite" : "pread", r->path, n < 0 ? (int)n : -EIO);
        if (!r->write && !stamped(buf, len, off / r->block)) {
            fprintf(stderr, "bench_data: %s: wrong data at %" PRIu64 "\n", r->path, off);
            exit(1);
        }
        done += len;
    }
    double t0 = now_s();
    if (r->write && (rc = f_fsync(&f)))
        die("fsync", r->path, rc);
    r->fsync_s = now_s() - t0;
    if ((rc = f_close(&f)))
        die("close", r->path, rc);
    free(buf);
    return NULL;
}

/* Run n ranges on n threads; the seconds from start to the last end. */
static double run_ranges(struct range *r, int n)
{
    pthread_t th[n];
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, range_main, &r[i])) {
            fprintf(stderr, "bench_data: cannot start a thread\n");
            exit(1);
        }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    return now_s() - t0;
}

static void report(const char *mode, const char *metric, double v, const char *unit,
                   const char *how)
{
    printf("  %-8s %-10s %12.1f %s  (%s)\n", mode, metric, v, unit, how);
    printf("RESULT %s %s %.1f\n", mode, metric, v);
    fflush(stdout);
}

/* Read DIR/bench-seq back into the page cache after the drop (seq
 * --warm): behind a passthrough of DIR, the read that follows then costs
 * its source a memory copy and no disk, which shows what the kernel's FUSE
 * path alone allows. Returns false if it could not be read. */
static bool warm_source(uint64_t size)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/bench-seq", B.warm);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return false;
    char *buf = malloc(1u << 20);
    uint64_t got = 0;
    ssize_t n = 1;
    while (buf && got < size && (n = read(fd, buf, 1u << 20)) > 0)
        got += (uint64_t)n;
    free(buf);
    close(fd);
    return got == size;
}

static void run_seq(uint64_t size, uint64_t block, int threads)
{
    char path[4096];
    path_of(path, sizeof(path), "bench-seq");
    f_unlink(path);
    struct range r[threads];
    uint64_t per = (size / (uint64_t)threads + block - 1) / block * block;
    for (int i = 0; i < threads; i++) {
        uint64_t off = (uint64_t)i * per;
        r[i] =
            (struct range){path,    off,  off >= size ? 0 : (size - off < per ? size - off : per),
                           block,   true, false,
                           B.count, 0};
    }
    struct file f;
    int rc = f_create(path, &f, B.count); /* made once, before the clock */
    if (rc || (rc = f_close(&f)))
        die("create", path, rc);
    double dt = run_ranges(r, threads);
    char how[128];
    double fs = 0;
    for (int i = 0; i < threads; i++)
        fs = r[i].fsync_s > fs ? r[i].fsync_s : fs;
    snprintf(how, sizeof(how), "%d thread(s), %" PRIu64 " MiB, fsync included: %.2f of %.2f s",
             threads, size >> 20, fs, dt);
    report("seq", "write", (double)size / (1 << 20) / dt, "MiB/s", how);
    bool dropped = drop_caches();
    if (B.warm && !warm_source(size)) {
        fprintf(stderr, "bench_data: cannot read %s/bench-seq back into memory\n", B.warm);
        exit(1);
    }
    for (int i = 0; i < threads; i++)
        r[i].write = false;
    dt = run_ranges(r, threads);
    snprintf(how, sizeof(how), "%d thread(s), cache %s%s, every 4 KiB stamp checked", threads,
             dropped ? "dropped" : "NOT dropped (no root)",
             B.warm ? ", source read back into memory" : "");
    report("seq", "read", (double)size / (1 << 20) / dt, "MiB/s", how);
    if ((rc = f_unlink(path)))
        die("unlink", path, rc);
}

static void run_burst(int writers, uint64_t shard, uint64_t block)
{
    struct range r[writers];
    char paths[writers][4096];
    for (int i = 0; i < writers; i++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "bench-shard-%d", i);
        path_of(paths[i], sizeof(paths[i]), rel);
        f_unlink(paths[i]);
        r[i] = (struct range){paths[i], 0, shard, block, true, true, B.count, 0};
    }
    double dt = run_ranges(r, writers);
    char how[128];
    snprintf(how, sizeof(how), "%d writers x %" PRIu64 " MiB, each fsynced", writers, shard >> 20);
    report("burst", "write", (double)shard * (double)writers / (1 << 20) / dt, "MiB/s", how);
    for (int i = 0; i < writers; i++)
        f_unlink(paths[i]);
}

/* ---- dataset: many small files read in random order ---- */

static struct {
    uint32_t files, file_size;
    uint32_t *order;
    _Atomic uint32_t next;
    bool make;
} D;

static void ds_path(char *out, size_t len, uint32_t i)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "bench-ds/%03u/f%07u", i % 256, i);
    path_of(out, len, rel);
}

static void *ds_main(void *arg)
{
    (void)arg;
    uint8_t *buf = xmalloc(D.file_size);
    randomize(buf, D.file_size);
    for (;;) {
        uint32_t k = atomic_fetch_add(&D.next, 1);
        if (k >= D.files)
            break;
        uint32_t i = D.make ? k : D.order[k];
        char path[4096];
        ds_path(path, sizeof(path), i);
        struct file f;
        int rc;
        if (D.make) {
            stamp(buf, D.file_size, i);
            if ((rc = f_create(path, &f, 1)))
                die("create", path, rc);
            ssize_t n = f_pwrite(&f, buf, D.file_size, 0);
            if (n != (ssize_t)D.file_size)
                die("write", path, n < 0 ? (int)n : -EIO);
        } else {
            if ((rc = f_open(path, O_RDONLY, &f)))
                die("open", path, rc);
            ssize_t n = f_pread(&f, buf, D.file_size, 0);
            if (n != (ssize_t)D.file_size || !stamped(buf, D.file_size, i)) {
                fprintf(stderr, "bench_data: %s: short or wrong (%zd bytes)\n", path, n);
                exit(1);
            }
        }
        if ((rc = f_close(&f)))
            die("close", path, rc);
    }
    free(buf);
    return NULL;
}

static double ds_round(int threads, bool make)
{
    D.make = make;
    atomic_store(&D.next, 0);
    pthread_t th[threads];
    double t0 = now_s();
    for (int i = 0; i < threads; i++)
        if (pthread_create(&th[i], NULL, ds_main, NULL)) {
            fprintf(stderr, "bench_data: cannot start a thread\n");
            exit(1);
        }
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    return now_s() - t0;
}

static void run_dataset(uint32_t files, uint32_t file_size, int threads)
{
    D.files = files;
    D.file_size = file_size;
    char path[4096];
    path_of(path, sizeof(path), "bench-ds");
    int rc = f_mkdir(path);
    for (uint32_t d = 0; d < 256 && !rc; d++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "bench-ds/%03u", d);
        path_of(path, sizeof(path), rel);
        rc = f_mkdir(path);
    }
    if (rc)
        die("mkdir", path, rc);
    double made = ds_round(threads, true);
    printf("  (dataset: %u files of %u KiB made in %.1f s, not timed)\n", files, file_size >> 10,
           made);
    D.order = malloc(files * sizeof(*D.order));
    if (!D.order)
        exit(1);
    for (uint32_t i = 0; i < files; i++)
        D.order[i] = i;
    uint64_t x = 88172645463325252ull; /* one fixed shuffle: every backend reads the same order */
    for (uint32_t i = files - 1; i > 0; i--) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint32_t j = (uint32_t)(x % (i + 1));
        uint32_t t = D.order[i];
        D.order[i] = D.order[j];
        D.order[j] = t;
    }
    bool dropped = drop_caches();
    double dt = ds_round(threads, false);
    char how[128];
    snprintf(how, sizeof(how), "%d thread(s), random order, cache %s", threads,
             dropped ? "dropped" : "NOT dropped (no root)");
    report("dataset", "files/s", files / dt, "files/s", how);
    report("dataset", "read", (double)files * file_size / (1 << 20) / dt, "MiB/s", how);
    for (uint32_t i = 0; i < files; i++) {
        ds_path(path, sizeof(path), i);
        f_unlink(path);
    }
    for (uint32_t d = 0; d < 256; d++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "bench-ds/%03u", d);
        path_of(path, sizeof(path), rel);
        f_rmdir(path);
    }
    path_of(path, sizeof(path), "bench-ds");
    f_rmdir(path);
    free(D.order);
}

/* ---- small: create, write and close (then open, read and close) many
 * small files, each phase a run of its own so the script can alternate
 * them with the baseline's ---- */

static void usage(FILE *to);

static struct {
    uint32_t files, file_size;
    const char *tag;
    uint32_t *order;
    _Atomic uint32_t next;
    int phase; /* 0 write, 1 read */
} S;

static void sm_path(char *out, size_t len, uint32_t i)
{
    char rel[96];
    snprintf(rel, sizeof(rel), "bench-small-%s/%02u/f%07u", S.tag, i % 64, i);
    path_of(out, len, rel);
}

static void *sm_main(void *arg)
{
    (void)arg;
    uint8_t *buf = xmalloc(S.file_size);
    randomize(buf, S.file_size);
    for (;;) {
        uint32_t k = atomic_fetch_add(&S.next, 1);
        if (k >= S.files)
            break;
        uint32_t i = S.phase == 0 ? k : S.order[k];
        char path[4096];
        sm_path(path, sizeof(path), i);
        struct file f;
        int rc;
        if (S.phase == 0) {
            /* What an application does: open(O_CREAT), write, close; the
             * directory's default layout, no setstripe. */
            stamp(buf, S.file_size, i);
            if (B.fs)
                rc = stria_open(B.fs, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, &f.sf);
            else if ((f.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
                rc = -errno;
            else
                rc = 0;
            if (rc)
                die("create", path, rc);
            ssize_t n = f_pwrite(&f, buf, S.file_size, 0);
            if (n != (ssize_t)S.file_size)
                die("write", path, n < 0 ? (int)n : -EIO);
        } else {
            if ((rc = f_open(path, O_RDONLY, &f)))
                die("open", path, rc);
            /* One call for more than the file: the reply says where it ends. */
            ssize_t n = f_pread(&f, buf, S.file_size, 0);
            if (n != (ssize_t)S.file_size || !stamped(buf, S.file_size, i)) {
                fprintf(stderr, "bench_data: %s: short or wrong (%zd bytes)\n", path, n);
                exit(1);
            }
        }
        if ((rc = f_close(&f)))
            die("close", path, rc);
    }
    free(buf);
    return NULL;
}

/* Requests served by every MDT and every storage server of the cluster
 * (from their counters; a server with several OSTs counts once). */
struct reqs {
    uint64_t mdt, ost;
    char mdt_ops[256];
};

static void count_reqs(stria_fs_t *fs, struct reqs *r, const struct reqs *before)
{
    memset(r, 0, sizeof(*r));
    struct stria_target *t = NULL;
    size_t nt = 0;
    if (stria_targets(fs, &t, &nt))
        return;
    char seen[64][300];
    size_t nseen = 0;
    struct {
        char op[16];
        uint64_t n;
    } ops[64];
    size_t nops = 0;
    for (size_t i = 0; i < nt; i++) {
        bool mdt = !strcmp(t[i].kind, "MDT");
        if (!mdt) {
            char key[300];
            snprintf(key, sizeof(key), "%s:%u", t[i].host, t[i].port);
            bool dup = false;
            for (size_t j = 0; j < nseen && !dup; j++)
                dup = !strcmp(seen[j], key);
            if (dup || nseen == 64)
                continue;
            snprintf(seen[nseen++], sizeof(seen[0]), "%s", key);
        }
        struct stria_op_stats *st = NULL;
        size_t n = 0;
        uint64_t up;
        int rc = mdt ? stria_mdt_stats(fs, t[i].index, &st, &n, &up)
                     : stria_ost_stats(fs, t[i].index, &st, &n, &up);
        for (size_t j = 0; rc == 0 && j < n; j++) {
            if (!strcmp(st[j].op, "LEASE_POLL") || !strcmp(st[j].op, "STATS") ||
                !strcmp(st[j].op, "STATFS") || !strcmp(st[j].op, "HEARTBEAT"))
                continue; /* the cache's channel and this counting itself */
            *(mdt ? &r->mdt : &r->ost) += st[j].count;
            if (!mdt)
                continue;
            size_t k = 0;
            while (k < nops && strcmp(ops[k].op, st[j].op))
                k++;
            if (k == nops && nops < 64) {
                snprintf(ops[nops].op, sizeof(ops[0].op), "%s", st[j].op);
                ops[nops++].n = 0;
            }
            if (k < nops)
                ops[k].n += st[j].count;
        }
        free(st);
    }
    free(t);
    /* The MDT's requests by kind, as the difference from before. */
    size_t o = 0;
    for (size_t k = 0; k < nops; k++) {
        uint64_t was = 0;
        const char *p = before ? strstr(before->mdt_ops, ops[k].op) : NULL;
        if (p && p[strlen(ops[k].op)] == '=')
            was = strtoull(p + strlen(ops[k].op) + 1, NULL, 10);
        if (ops[k].n > was && o < sizeof(r->mdt_ops))
            o += (size_t)snprintf(r->mdt_ops + o, sizeof(r->mdt_ops) - o, "%s%s=%" PRIu64,
                                  o ? " " : "", ops[k].op, before ? ops[k].n - was : ops[k].n);
    }
}

static void run_small(const char *phase, uint32_t files, uint32_t file_size, int threads,
                      const char *tag, const char *stats_conf)
{
    S.files = files;
    S.file_size = file_size;
    S.tag = tag;
    char path[4096], rel[96];
    if (!strcmp(phase, "clean")) {
        for (uint32_t i = 0; i < files; i++) {
            sm_path(path, sizeof(path), i);
            f_unlink(path);
        }
        for (uint32_t d = 0; d <= 64; d++) {
            if (d < 64)
                snprintf(rel, sizeof(rel), "bench-small-%s/%02u", tag, d);
            else
                snprintf(rel, sizeof(rel), "bench-small-%s", tag);
            path_of(path, sizeof(path), rel);
            f_rmdir(path);
        }
        return;
    }
    S.phase = strcmp(phase, "write") ? 1 : 0;
    if (S.phase && strcmp(phase, "read")) {
        usage(stderr);
        exit(2);
    }
    int rc = 0;
    if (S.phase == 0) {
        snprintf(rel, sizeof(rel), "bench-small-%s", tag);
        path_of(path, sizeof(path), rel);
        rc = f_mkdir(path);
        for (uint32_t d = 0; d < 64 && !rc; d++) {
            snprintf(rel, sizeof(rel), "bench-small-%s/%02u", tag, d);
            path_of(path, sizeof(path), rel);
            rc = f_mkdir(path);
        }
        if (rc)
            die("mkdir", path, rc);
    } else {
        S.order = malloc(files * sizeof(*S.order));
        if (!S.order)
            exit(1);
        for (uint32_t i = 0; i < files; i++)
            S.order[i] = i;
        uint64_t x = 88172645463325252ull; /* one fixed shuffle for every backend */
        for (uint32_t i = files - 1; i > 0; i--) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            uint32_t j = (uint32_t)(x % (i + 1));
            uint32_t t = S.order[i];
            S.order[i] = S.order[j];
            S.order[j] = t;
        }
    }
    bool dropped = S.phase ? drop_caches() : false;
    stria_fs_t *sfs = B.fs;
    if (!sfs && stats_conf && (rc = stria_connect(stats_conf, &sfs))) {
        fprintf(stderr, "bench_data: cannot connect with %s: %s\n", stats_conf, strerror(-rc));
        exit(1);
    }
    struct reqs r0, r1;
    if (sfs)
        count_reqs(sfs, &r0, NULL);
    atomic_store(&S.next, 0);
    pthread_t th[threads];
    double t0 = now_s();
    for (int i = 0; i < threads; i++)
        if (pthread_create(&th[i], NULL, sm_main, NULL)) {
            fprintf(stderr, "bench_data: cannot start a thread\n");
            exit(1);
        }
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    double dt = now_s() - t0;
    char how[160];
    if (S.phase == 0)
        snprintf(how, sizeof(how), "%d thread(s), %u files of %u KiB: open(O_CREAT), write, close",
                 threads, files, file_size >> 10);
    else
        snprintf(how, sizeof(how), "%d thread(s), %u files, random order, cache %s", threads, files,
                 dropped ? "dropped" : "NOT dropped (no root)");
    report("small", phase, files / dt, "files/s", how);
    if (sfs) {
        count_reqs(sfs, &r1, &r0);
        printf("  requests per file: MDT %.2f (%s), OST servers %.2f\n",
               (double)(r1.mdt - r0.mdt) / files, r1.mdt_ops, (double)(r1.ost - r0.ost) / files);
        printf("RESULT small mdt_per_file %.2f\n", (double)(r1.mdt - r0.mdt) / files);
        printf("RESULT small ost_per_file %.2f\n", (double)(r1.ost - r0.ost) / files);
        if (sfs != B.fs)
            stria_disconnect(sfs);
    }
    free(S.order);
}

/* ---- options ---- */

static uint64_t size_arg(const char *s, const char *name, uint64_t max)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm')
        mul = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g')
        mul = 1ull << 30, end++;
    if (errno || *end || v == 0 || v > max / mul) {
        fprintf(stderr, "bench_data: bad %s '%s' (1..%" PRIu64 ", suffix K, M or G)\n", name, s,
                max);
        exit(2);
    }
    return v * mul;
}

/* A removal an unlink sent behind brings back: its objects go now. */
static void removed_now(stria_fs_t *fs, stria_removed_t *rm, void *arg)
{
    (void)arg;
    stria_removed_finish(fs, rm);
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: bench_data (--stria CONF | --dir DIR) MODE [options]\n"
            "  seq     [--size 4G] [--block 4M] [--threads 1] [--warm SOURCE_DIR]\n"
            "  dataset [--files 100000] [--file-size 64K] [--threads 2]\n"
            "  burst   [--writers 8] [--shard 512M] [--block 4M]\n"
            "  small   --phase write|read|clean --tag NAME [--files 100000] [--file-size 64K]\n"
            "          [--threads 1] [--stats CONF: count the cluster's requests per file]\n"
            "  through libstria: [--count 4] [--stripe-size 4M] for the files it makes,\n"
            "          [--cache] the metadata cache and write-behind on, as the mount has them\n");
}

int main(int argc, char **argv)
{
    const char *conf = NULL;
    uint64_t size = 4ull << 30, block = 4u << 20, shard = 512u << 20, file_size = 64u << 10;
    uint64_t files = 100000, threads = 0, writers = 8;
    const char *phase = NULL, *tag = "0", *stats_conf = NULL;
    bool cache = false;
    B.count = 4;
    B.stripe_size = 4u << 20;
    static const struct option lo[] = {
        {"stria", 1, NULL, 'S'},     {"dir", 1, NULL, 'D'},         {"size", 1, NULL, 's'},
        {"block", 1, NULL, 'b'},     {"threads", 1, NULL, 't'},     {"files", 1, NULL, 'f'},
        {"file-size", 1, NULL, 'z'}, {"writers", 1, NULL, 'w'},     {"shard", 1, NULL, 'h'},
        {"count", 1, NULL, 'c'},     {"stripe-size", 1, NULL, 'p'}, {"help", 0, NULL, 'H'},
        {"cache", 0, NULL, 'K'},     {"warm", 1, NULL, 'W'},        {"phase", 1, NULL, 'P'},
        {"tag", 1, NULL, 'T'},       {"stats", 1, NULL, 'C'},       {NULL, 0, NULL, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (ch) {
        case 'S':
            conf = optarg;
            break;
        case 'D':
            B.dir = optarg;
            break;
        case 's':
            size = size_arg(optarg, "--size", 1ull << 40);
            break;
        case 'b':
            block = size_arg(optarg, "--block", 64u << 20);
            break;
        case 't':
            threads = size_arg(optarg, "--threads", 64);
            break;
        case 'f':
            files = size_arg(optarg, "--files", 10000000);
            break;
        case 'z':
            file_size = size_arg(optarg, "--file-size", 64u << 20);
            break;
        case 'w':
            writers = size_arg(optarg, "--writers", 256);
            break;
        case 'h':
            shard = size_arg(optarg, "--shard", 1ull << 40);
            break;
        case 'c':
            B.count = (int32_t)size_arg(optarg, "--count", 256);
            break;
        case 'p':
            B.stripe_size = (uint32_t)size_arg(optarg, "--stripe-size", 1u << 30);
            break;
        case 'W':
            B.warm = optarg;
            break;
        case 'P':
            phase = optarg;
            break;
        case 'T':
            tag = optarg;
            break;
        case 'C':
            stats_conf = optarg;
            break;
        case 'K':
            cache = true;
            break;
        case 'H':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1 || !conf == !B.dir) {
        usage(stderr);
        return 2;
    }
    const char *mode = argv[optind];
    if (B.warm && (conf || strcmp(mode, "seq"))) {
        fprintf(stderr, "bench_data: --warm is for seq through --dir (a passthrough)\n");
        return 2;
    }
    if (conf) {
        int rc = stria_connect(conf, &B.fs);
        if (rc) {
            fprintf(stderr, "bench_data: cannot connect with %s: %s\n", conf, strerror(-rc));
            return 1;
        }
        /* What a program that keeps one client for its life may turn on,
         * as the mount does: leases, unlinks and small files' bytes behind. */
        if (cache && ((rc = stria_start_mdcache(B.fs)) ||
                      (rc = stria_start_unlink_behind(B.fs, removed_now, NULL)))) {
            fprintf(stderr, "bench_data: cannot start the cache: %s\n", strerror(-rc));
            return 1;
        }
    } else if (cache) {
        fprintf(stderr, "bench_data: --cache is for --stria\n");
        return 2;
    }
    if (!strcmp(mode, "seq"))
        run_seq(size, block, threads ? (int)threads : 1);
    else if (!strcmp(mode, "dataset"))
        run_dataset((uint32_t)files, (uint32_t)file_size, threads ? (int)threads : 2);
    else if (!strcmp(mode, "burst"))
        run_burst((int)writers, shard, block);
    else if (!strcmp(mode, "small") && phase)
        run_small(phase, (uint32_t)files, (uint32_t)file_size, threads ? (int)threads : 1, tag,
                  stats_conf);
    else {
        usage(stderr);
        return 2;
    }
    if (B.fs)
        stria_disconnect(B.fs);
    return 0;
}
