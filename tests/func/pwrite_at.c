/*
 * pwrite_at: write a local file's bytes into a cluster file at an offset,
 * in place (no truncate, no sync), through libstria (power_loss.sh).
 *
 * Usage: pwrite_at CONF PATH OFFSET LOCAL_FILE
 */
#include <stria/stria.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: pwrite_at CONF PATH OFFSET LOCAL_FILE\n");
        return 2;
    }
    char *end;
    long long off = strtoll(argv[3], &end, 10);
    if (*end || off < 0) {
        fprintf(stderr, "pwrite_at: bad offset %s\n", argv[3]);
        return 2;
    }
    static char buf[1 << 20];
    int fd = open(argv[4], O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
    if (n < 0) {
        fprintf(stderr, "pwrite_at: %s: %s\n", argv[4], strerror(errno));
        return 1;
    }
    close(fd);
    stria_fs_t *fs;
    stria_file_t *f;
    int rc = stria_connect(argv[1], &fs);
    if (rc) {
        fprintf(stderr, "pwrite_at: connect: %s\n", strerror(-rc));
        return 1;
    }
    ssize_t w = -1;
    if ((rc = stria_open(fs, argv[2], O_WRONLY, 0, &f)) == 0) {
        w = stria_pwrite(f, buf, (size_t)n, (off_t)off);
        rc = stria_close(f);
    }
    stria_disconnect(fs);
    if (rc || w != n) {
        fprintf(stderr, "pwrite_at: %s: %s\n", argv[2], strerror(rc ? -rc : w < 0 ? (int)-w : EIO));
        return 1;
    }
    return 0;
}
