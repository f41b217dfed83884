/*
 * write_behind: what a mount's write-behind must keep (fuse_write_behind.sh).
 *
 * The mount at MNT holds every acknowledged write back for seconds
 * (STRIA_TEST_WRITE_DELAY_MS). All checks happen in this one process while
 * the writes are on their way: closing any descriptor of the file (also a
 * child's copy) would wait for them. A second client, libstria with CONF,
 * stands for the rest of the cluster.
 *
 * Small writes that continue one another are gathered (fuse_tab.c) and
 * sent later as one: the same checks hold for them, and the mount's
 * counters (stria.mount.stats) say how many sends they cost.
 *
 * With --idle, on a mount without the delay: small overwrites of a file
 * kept open, one every 100 ms and each continuing the last, reach the
 * cluster by themselves while they go on (a buffer is sent 1 s after its
 * first write). Overwrites, because other clients learn a file's new size
 * only from its close or fsync.
 *
 * With --hold FILE: write "kept" over the start of FILE, say "ready" and
 * keep the descriptor open (no close, hence no flush) for up to 60 s, for
 * a mount to be stopped meanwhile.
 *
 * Usage: write_behind [--idle] MNT CONF | write_behind --hold FILE
 */
#include "check.h"

#include <stria/stria.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define LEN   (1 << 20)
#define SMALL 4096

static stria_fs_t *fs;

/* What the cluster holds of path (libstria): its first len bytes into buf;
 * returns how many there are, or -1. */
static ssize_t cluster_read(const char *path, char *buf, size_t len)
{
    stria_file_t *f;
    if (stria_open(fs, path, O_RDONLY, 0, &f))
        return -1;
    ssize_t n = stria_pread(f, buf, len, 0);
    stria_close(f);
    return n;
}

/* The mount's count of gathered buffers sent so far (stria.mount.stats). */
static long long gathers_sent(const char *mnt)
{
    char s[512];
    ssize_t n = getxattr(mnt, "stria.mount.stats", s, sizeof(s) - 1);
    if (n < 0)
        return -1;
    s[n] = '\0';
    const char *p = strstr(s, "gathers_sent=");
    return p ? atoll(p + strlen("gathers_sent=")) : -1;
}

/* Write len bytes of data at off in SMALL pieces; whether all went. */
static bool write_small(int fd, const char *data, size_t len, off_t off)
{
    for (size_t i = 0; i < len; i += SMALL)
        if (pwrite(fd, data + i, SMALL, off + (off_t)i) != SMALL)
            return false;
    return true;
}

/* --idle: small overwrites of a file held open, on a mount without the
 * delay, must reach the cluster without a close or fsync, also while more
 * of them keep coming. */
static int idle_send(const char *mnt)
{
    char path[4096], seen[SMALL];
    snprintf(path, sizeof(path), "%s/idle", mnt);
    memset(seen, 'o', SMALL);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, seen, SMALL) == SMALL && close(fd) == 0, "write %s: %s", path,
          strerror(errno));
    fd = open(path, O_WRONLY);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    if (fd < 0)
        return 1;
    memset(seen, 'i', SMALL);
    bool there = false;
    for (int i = 0; i < 40 && !there; i++) { /* 40 writes of 100 bytes, 100 ms apart */
        CHECK(pwrite(fd, seen, 100, i * 100) == 100, "overwrite %s: %s", path, strerror(errno));
        char got[100];
        there = cluster_read("/idle", got, sizeof(got)) == 100 && memcmp(got, seen, 100) == 0;
        usleep(100 * 1000);
    }
    CHECK(there, "4 s of small overwrites of a file held open never reached the cluster");
    close(fd);
    return failures ? 1 : 0;
}

/* --hold: see the top. */
static int hold(const char *path)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0 || pwrite(fd, "kept", 4, 0) != 4) {
        fprintf(stderr, "write_behind --hold %s: %s\n", path, strerror(errno));
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    sleep(60);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--hold"))
        return hold(argv[2]);
    bool idle = argc == 4 && !strcmp(argv[1], "--idle");
    if (idle) {
        argv++;
        argc--;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: write_behind [--idle] MNT CONF | write_behind --hold FILE\n");
        return 2;
    }
    if (stria_connect(argv[2], &fs)) {
        fprintf(stderr, "write_behind: cannot connect with %s\n", argv[2]);
        return 2;
    }
    if (idle) {
        int rc = idle_send(argv[1]);
        stria_disconnect(fs);
        return rc;
    }
    char a[4096], b[4096];
    snprintf(a, sizeof(a), "%s/a", argv[1]);
    snprintf(b, sizeof(b), "%s/b", argv[1]);
    char *data = malloc(LEN), *seen = NULL;
    if (!data || posix_memalign((void **)&seen, 4096, LEN))
        return 2;
    for (size_t i = 0; i < LEN; i++)
        data[i] = (char)(i * 131 + i / 4096);

    /* 1. Acknowledged, not yet on the OSTs: this mount reads it anyway. */
    int fd = open(a, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "create %s: %s", a, strerror(errno));
    CHECK(write(fd, data, LEN) == LEN, "write %s: %s", a, strerror(errno));
    ssize_t n;
    /* A fresh handle, the page cache dropped: the read must wait for it. */
    int rfd = open(a, O_RDONLY);
    CHECK(rfd >= 0, "open %s: %s", a, strerror(errno));
    CHECK(posix_fadvise(rfd, 0, 0, POSIX_FADV_DONTNEED) == 0, "fadvise: %s", strerror(errno));
    memset(seen, 0, LEN);
    n = pread(rfd, seen, LEN, 0);
    CHECK(n == LEN && memcmp(seen, data, LEN) == 0,
          "a read through another handle (%zd bytes) missed the acknowledged write", n);
    close(rfd);
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == LEN, "fstat of a: %lld bytes, not %d",
          (long long)st.st_size, LEN);
    CHECK(close(fd) == 0, "close of a: %s", strerror(errno));
    n = cluster_read("/a", seen, LEN);
    CHECK(n == LEN && memcmp(seen, data, LEN) == 0,
          "another client reads a otherwise after its close (%zd bytes)", n);

    /* 2. A truncate while the writes are on their way: they must not land
     * after it. */
    fd = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "create %s: %s", b, strerror(errno));
    CHECK(write(fd, data, LEN) == LEN, "write %s: %s", b, strerror(errno));
    CHECK(truncate(b, 0) == 0, "truncate %s: %s", b, strerror(errno));
    CHECK(close(fd) == 0, "close of b: %s", strerror(errno));
    CHECK(stat(b, &st) == 0 && st.st_size == 0, "b is %lld bytes after its truncate",
          (long long)st.st_size);
    n = cluster_read("/b", seen, LEN);
    CHECK(n == 0, "another client reads %zd bytes of b after its truncate", n);

    /* 3. Overlapping writes land in the order they were acknowledged. */
    fd = open(a, O_WRONLY);
    CHECK(fd >= 0, "open %s: %s", a, strerror(errno));
    memset(seen, 'x', 8192);
    CHECK(pwrite(fd, seen, 8192, 4096) == 8192, "pwrite over a: %s", strerror(errno));
    memset(seen, 'y', 4096);
    CHECK(pwrite(fd, seen, 4096, 8192) == 4096, "pwrite over a again: %s", strerror(errno));
    CHECK(close(fd) == 0, "close of a: %s", strerror(errno));
    memset(data + 4096, 'x', 8192);
    memset(data + 8192, 'y', 4096);
    n = cluster_read("/a", seen, LEN);
    CHECK(n == LEN && memcmp(seen, data, LEN) == 0,
          "overlapping writes landed out of order (%zd bytes)", n);

    /* 4. Small writes are gathered: 64 of them are one send, which a read
     * through another handle waits for; fsync sends what followed. */
    char c[4096];
    snprintf(c, sizeof(c), "%s/c", argv[1]);
    long long sent0 = gathers_sent(argv[1]);
    CHECK(sent0 >= 0, "no gathers_sent in %s's stria.mount.stats", argv[1]);
    fd = open(c, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "create %s: %s", c, strerror(errno));
    CHECK(write_small(fd, data, 64 * SMALL, 0), "small writes to c: %s", strerror(errno));
    CHECK(fstat(fd, &st) == 0 && st.st_size == 64 * SMALL, "fstat of c: %lld bytes, not %d",
          (long long)st.st_size, 64 * SMALL);
    rfd = open(c, O_RDONLY);
    CHECK(rfd >= 0, "open %s: %s", c, strerror(errno));
    CHECK(posix_fadvise(rfd, 0, 0, POSIX_FADV_DONTNEED) == 0, "fadvise: %s", strerror(errno));
    memset(seen, 0, LEN);
    n = pread(rfd, seen, LEN, 0);
    CHECK(n == 64 * SMALL && memcmp(seen, data, (size_t)n) == 0,
          "a read through another handle (%zd bytes) missed gathered writes", n);
    close(rfd);
    CHECK(gathers_sent(argv[1]) == sent0 + 1, "64 small writes took %lld sends, not 1",
          gathers_sent(argv[1]) - sent0);
    CHECK(write_small(fd, data + 64 * SMALL, 16 * SMALL, 64 * SMALL), "more small writes: %s",
          strerror(errno));
    CHECK(fsync(fd) == 0, "fsync of c: %s", strerror(errno));
    n = cluster_read("/c", seen, LEN);
    CHECK(n == 80 * SMALL && memcmp(seen, data, (size_t)n) == 0,
          "after fsync another client reads %zd bytes of c (or other bytes), not the %d gathered",
          n, 80 * SMALL);
    CHECK(close(fd) == 0, "close of c: %s", strerror(errno));

    /* 5. A truncate cuts gathered writes, and a write after it extends the
     * file with a hole. */
    fd = open(c, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0, "open %s: %s", c, strerror(errno));
    CHECK(write_small(fd, data, 8 * SMALL, 0), "small writes to c: %s", strerror(errno));
    CHECK(ftruncate(fd, SMALL + 100) == 0, "ftruncate of c: %s", strerror(errno));
    CHECK(pwrite(fd, data, SMALL, 2 * SMALL) == SMALL, "write past the cut: %s", strerror(errno));
    CHECK(close(fd) == 0, "close of c: %s", strerror(errno));
    char *want = calloc(1, 3 * SMALL);
    if (!want)
        return 2;
    memcpy(want, data, SMALL + 100);
    memcpy(want + 2 * SMALL, data, SMALL);
    n = cluster_read("/c", seen, LEN);
    CHECK(n == 3 * SMALL && memcmp(seen, want, 3 * SMALL) == 0,
          "gathered writes and a truncate: another client reads %zd bytes, or other bytes", n);

    /* 6. Small overwrites land in the order they were acknowledged: within
     * one handle (a rewrite ends the gather) and across two handles (one's
     * write over the other's gathered bytes sends those first). */
    fd = open(c, O_WRONLY | O_TRUNC);
    int fd2 = open(c, O_WRONLY);
    CHECK(fd >= 0 && fd2 >= 0, "open %s twice: %s", c, strerror(errno));
    char piece[SMALL];
    const char order[][2] = {{'s', 0}, {'t', 1}, {'u', 0}, {'p', 2}, {'q', 2}, {'r', 3}};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        memset(piece, order[i][0], SMALL);
        int w = (order[i][0] == 'q') ? fd2 : fd; /* q: the second handle */
        CHECK(pwrite(w, piece, SMALL, order[i][1] * SMALL) == SMALL, "pwrite %c: %s", order[i][0],
              strerror(errno));
    }
    CHECK(close(fd2) == 0 && close(fd) == 0, "close of c: %s", strerror(errno));
    n = cluster_read("/c", seen, LEN);
    CHECK(n == 4 * SMALL && seen[0] == 'u' && seen[SMALL] == 't' && seen[2 * SMALL] == 'q' &&
              seen[3 * SMALL] == 'r' && seen[4 * SMALL - 1] == 'r',
          "small overwrites landed out of order: %zd bytes, %c%c%c%c", n, seen[0], seen[SMALL],
          seen[2 * SMALL], seen[3 * SMALL]);
    free(want);

    stria_disconnect(fs);
    free(data);
    free(seen);
    if (failures)
        fprintf(stderr, "write_behind: %d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
