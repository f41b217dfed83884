/*
 * stria-demo: what `make demo` shows. Through libstria it writes a
 * checkpoint the way a training job does (several ranks each dumping a
 * shard of the model at once, striped over every OST, fsynced) and a
 * dataset of small sample files, reads both back in the way training
 * reads them (shards in parallel, samples in random order), verifies every
 * byte, and prints throughput and file rates.
 *
 * Usage: stria-demo [--conf FILE] [--ranks N] [--shard-mib M] [--samples K]
 */
#include "stria/stria.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static stria_fs_t *fs;
static int ranks = 4, shard_mib = 256, samples = 5000;
#define SAMPLE_SIZE (64 << 10)
#define BLOCK       (4 << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Deterministic content, so a reader can verify without a copy. */
static void pattern(uint8_t *buf, size_t len, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i + 8 <= len; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(buf + i, &x, 8);
    }
}

struct rank {
    int id, rc;
    bool write;
};

static void *rank_main(void *arg)
{
    struct rank *r = arg;
    char path[128];
    snprintf(path, sizeof(path), "/demo/ckpt/step-100/rank-%02d.pt", r->id);
    uint8_t *buf = malloc(BLOCK), *want = malloc(BLOCK);
    stria_file_t *f;
    r->rc = stria_open(fs, path, r->write ? O_CREAT | O_TRUNC | O_WRONLY : O_RDONLY, 0644, &f);
    for (long off = 0; !r->rc && off < (long)shard_mib << 20; off += BLOCK) {
        pattern(want, BLOCK, (uint64_t)r->id << 32 | (uint64_t)off);
        if (r->write) {
            ssize_t n = stria_pwrite(f, want, BLOCK, off);
            r->rc = n == BLOCK ? 0 : n < 0 ? (int)n : -EIO;
        } else {
            ssize_t n = stria_pread(f, buf, BLOCK, off);
            r->rc = n == BLOCK ? (memcmp(buf, want, BLOCK) ? -EILSEQ : 0) : n < 0 ? (int)n : -EIO;
        }
    }
    if (!r->rc && r->write)
        r->rc = stria_fsync(f);
    if (f && !r->rc)
        r->rc = stria_close(f);
    free(buf);
    free(want);
    return NULL;
}

static int checkpoint(bool write, double *secs)
{
    pthread_t t[64];
    struct rank r[64];
    double t0 = now();
    for (int i = 0; i < ranks; i++) {
        r[i] = (struct rank){i, 0, write};
        pthread_create(&t[i], NULL, rank_main, &r[i]);
    }
    int rc = 0;
    for (int i = 0; i < ranks; i++) {
        pthread_join(t[i], NULL);
        if (r[i].rc && !rc)
            rc = r[i].rc;
    }
    *secs = now() - t0;
    return rc;
}

static int dataset(bool write, double *secs)
{
    uint8_t *buf = malloc(SAMPLE_SIZE), *want = malloc(SAMPLE_SIZE);
    int *order = malloc(sizeof(int) * (size_t)samples), rc = 0;
    for (int i = 0; i < samples; i++)
        order[i] = i;
    srand(7);
    for (int i = samples - 1; !write && i > 0; i--) {
        int j = rand() % (i + 1), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    double t0 = now();
    for (int k = 0; k < samples && !rc; k++) {
        int i = order[k];
        char path[128];
        snprintf(path, sizeof(path), "/demo/data/shard-%02d/sample-%06d.bin", i % 16, i);
        pattern(want, SAMPLE_SIZE, 0xda7a0000ull + (uint64_t)i);
        stria_file_t *f;
        if ((rc = stria_open(fs, path, write ? O_CREAT | O_TRUNC | O_WRONLY : O_RDONLY, 0644, &f)))
            break;
        ssize_t n =
            write ? stria_pwrite(f, want, SAMPLE_SIZE, 0) : stria_pread(f, buf, SAMPLE_SIZE, 0);
        if (n != SAMPLE_SIZE)
            rc = n < 0 ? (int)n : -EIO;
        else if (!write && memcmp(buf, want, SAMPLE_SIZE))
            rc = -EILSEQ;
        int crc = stria_close(f);
        if (!rc)
            rc = crc;
    }
    *secs = now() - t0;
    free(buf);
    free(want);
    free(order);
    return rc;
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "stria-demo: %s: %s\n", what, strerror(-rc));
    return 1;
}

int main(int argc, char **argv)
{
    const char *conf = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--conf") && i + 1 < argc)
            conf = argv[++i];
        else if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
            ranks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--shard-mib") && i + 1 < argc)
            shard_mib = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
            samples = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: %s [--conf FILE] [--ranks N] [--shard-mib M] "
                    "[--samples K]\n",
                    argv[0]);
            return 2;
        }
    }
    if (ranks < 1 || ranks > 64 || shard_mib < 4 || samples < 1)
        return fprintf(stderr, "stria-demo: ranks 1..64, shard-mib >= 4, samples >= 1\n"), 2;
    int rc = stria_connect(conf, &fs);
    if (rc)
        return fail("connect (is a cluster up? `stria up`)", rc);
    struct stria_layout lay;
    if (stria_stat(fs, "/demo", &(struct stat){0}) == 0)
        return fprintf(stderr, "stria-demo: /demo exists already; remove it with `stria rm -r "
                               "stria:/demo`\n"),
               1;
    stria_mkdir(fs, "/demo", 0755);
    stria_mkdir(fs, "/demo/ckpt", 0755);
    /* Checkpoints: stripe over every OST, 4 MiB units (lfs setstripe -c -1 -S 4M). */
    if ((rc = stria_setstripe(fs, "/demo/ckpt", -1, 4 << 20, -1)))
        return fail("setstripe /demo/ckpt", rc);
    stria_mkdir(fs, "/demo/ckpt/step-100", 0755);
    stria_mkdir(fs, "/demo/data", 0755);
    for (int i = 0; i < 16; i++) {
        char p[64];
        snprintf(p, sizeof(p), "/demo/data/shard-%02d", i);
        stria_mkdir(fs, p, 0755);
    }
    double mib = (double)ranks * shard_mib, w, r, dw, dr;
    printf("checkpoint: %d ranks each write a %d MiB shard at once, striped over all OSTs\n", ranks,
           shard_mib);
    if ((rc = checkpoint(true, &w)))
        return fail("checkpoint write", rc);
    printf("  wrote    %7.0f MiB in %6.2f s  = %7.1f MiB/s (fsync included)\n", mib, w, mib / w);
    if ((rc = checkpoint(false, &r)))
        return fail("checkpoint read", rc);
    printf("  read     %7.0f MiB in %6.2f s  = %7.1f MiB/s, every byte verified\n", mib, r,
           mib / r);
    stria_getstripe(fs, "/demo/ckpt/step-100/rank-00.pt", &lay);
    printf("  layout of rank-00.pt: %u stripes of %u KiB on OSTs", lay.comp[0].stripe_count,
           lay.comp[0].stripe_size >> 10);
    for (uint32_t i = 0; i < lay.comp[0].stripe_count; i++)
        printf(" %u", lay.comp[0].ost[i]);
    printf("\ndataset: %d samples of %d KiB in 16 directories\n", samples, SAMPLE_SIZE >> 10);
    if ((rc = dataset(true, &dw)))
        return fail("dataset write", rc);
    printf("  created  %7d files in %6.2f s  = %7.0f files/s\n", samples, dw, samples / dw);
    if ((rc = dataset(false, &dr)))
        return fail("dataset read", rc);
    printf("  read     %7d files in %6.2f s  = %7.0f files/s (random order, open+read+close, "
           "verified)\n",
           samples, dr, samples / dr);
    stria_disconnect(fs);
    return 0;
}
