/*
 * write_behind: what a mount's write-behind must keep (fuse_write_behind.sh).
 *
 * The mount at MNT holds every acknowledged write back for seconds
 * (STRIA_TEST_WRITE_DELAY_MS). All checks happen in this one process while
 * the writes are on their way: closing any descriptor of the file (also a
 * child's copy) would wait for them. A second client, libstria with CONF,
 * stands for the rest of the cluster.
 *
 * Usage: write_behind MNT CONF
 */
#include "check.h"

#include <stria/stria.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LEN (1 << 20)

static stria_fs_t *fs;

/* What the cluster holds of path (libstria): its first LEN bytes into buf;
 * returns how many there are, or -1. */
static ssize_t cluster_read(const char *path, char *buf)
{
    stria_file_t *f;
    if (stria_open(fs, path, O_RDONLY, 0, &f))
        return -1;
    ssize_t n = stria_pread(f, buf, LEN, 0);
    stria_close(f);
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: write_behind MNT CONF\n");
        return 2;
    }
    if (stria_connect(argv[2], &fs)) {
        fprintf(stderr, "write_behind: cannot connect with %s\n", argv[2]);
        return 2;
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
    n = cluster_read("/a", seen);
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
    n = cluster_read("/b", seen);
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
    n = cluster_read("/a", seen);
    CHECK(n == LEN && memcmp(seen, data, LEN) == 0,
          "overlapping writes landed out of order (%zd bytes)", n);

    stria_disconnect(fs);
    free(data);
    free(seen);
    if (failures)
        fprintf(stderr, "write_behind: %d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
