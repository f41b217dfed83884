/*
 * read_race: a reader beside a writer of the same blocks (concurrent_writes.sh).
 *
 * An OST sends a large read of whole blocks straight from its page cache,
 * after letting go of the object's lock, with the checksums the blocks had
 * then (stord.c, read_unread). A write landing meanwhile changes pages on
 * their way: the client's check must catch that and ask again for a read
 * the OST checks, so that no read ever returns a mix of two writes, nor
 * fails.
 *
 * The file has PIECES pieces of 1 MiB. The writer rewrites them over and
 * over, each write one piece of one byte value; the reader reads whole
 * pieces, each of which must hold one value. Both stop after passes passes
 * of the reader or max_s seconds, whichever comes first.
 *
 * Usage: read_race CONF PATH PASSES MAX_S
 */
#include "check.h"

#include <stria/stria.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PIECE  (1 << 20)
#define PIECES 8

static stria_fs_t *fs;
static const char *path;
static atomic_bool stop;
static long writes;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *writer(void *arg)
{
    (void)arg;
    stria_file_t *f;
    uint8_t *buf = malloc(PIECE);
    int rc = buf ? stria_open(fs, path, O_WRONLY, 0, &f) : -1;
    CHECK(rc == 0, "writer: open %s: %d", path, rc);
    for (unsigned g = 1; rc == 0 && !atomic_load(&stop); g++) {
        for (int k = 0; k < PIECES && !atomic_load(&stop); k++) {
            memset(buf, (int)(1 + (g * PIECES + (unsigned)k) % 255), PIECE);
            ssize_t w = stria_pwrite(f, buf, PIECE, (off_t)k * PIECE);
            CHECK(w == PIECE, "writer: write of piece %d: %zd", k, w);
            if (w != PIECE)
                rc = -1;
            writes++;
        }
    }
    if (buf && rc == 0)
        stria_close(f);
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: read_race CONF PATH PASSES MAX_S\n");
        return 2;
    }
    path = argv[2];
    long passes = atol(argv[3]);
    double max_s = atof(argv[4]);
    int rc = stria_connect(argv[1], &fs);
    if (rc) {
        fprintf(stderr, "read_race: connect: %d\n", rc);
        return 1;
    }
    /* The whole file first, so the reader sees its full size. */
    uint8_t *buf = malloc(PIECE);
    stria_file_t *f;
    if (!buf || (rc = stria_open(fs, path, O_RDWR | O_CREAT | O_TRUNC, 0644, &f))) {
        fprintf(stderr, "read_race: create %s: %d\n", path, rc);
        return 1;
    }
    memset(buf, 1, PIECE);
    for (int k = 0; k < PIECES; k++)
        CHECK(stria_pwrite(f, buf, PIECE, (off_t)k * PIECE) == PIECE, "first write of %d", k);
    CHECK(stria_fsync(f) == 0, "fsync");
    CHECK(stria_close(f) == 0, "close");

    pthread_t w;
    pthread_create(&w, NULL, writer, NULL);
    rc = stria_open(fs, path, O_RDONLY, 0, &f);
    CHECK(rc == 0, "reader: open: %d", rc);
    long reads = 0, torn = 0;
    double end = now_s() + max_s;
    for (long p = 0; rc == 0 && p < passes && now_s() < end && failures < 10; p++) {
        for (int k = 0; k < PIECES; k++) {
            ssize_t r = stria_pread(f, buf, PIECE, (off_t)k * PIECE);
            CHECK(r == PIECE, "read of piece %d: %zd", k, r);
            reads++;
            if (r != PIECE)
                continue;
            size_t i = 1;
            while (i < PIECE && buf[i] == buf[0])
                i++;
            if (i < PIECE) {
                torn++;
                CHECK(0, "piece %d mixes two writes: %u at 0, %u at %zu", k, buf[0], buf[i], i);
            }
        }
    }
    atomic_store(&stop, true);
    pthread_join(w, NULL);
    if (rc == 0)
        stria_close(f);
    printf("read_race: %ld reads of 1 MiB beside %ld writes, %ld torn\n", reads, writes, torn);
    free(buf);
    stria_disconnect(fs);
    return failures ? 1 : 0;
}
