/*
 * dom_open: read a Data-on-MDT file through libstria the way a dataset
 * loader does, for tests/func/dom.sh, which counts the MDT's requests
 * around it (an open that reads brings the bytes: no DOM_READ).
 *
 * Usage: dom_open CONF PATH LOCAL_FILE MODE
 *   r      open read-only, read the whole file with one stria_pread, close
 *   rw     the same with O_CREAT | O_RDWR: a change, whose reply the MDT
 *          keeps for a resend (which brings no bytes)
 *   stale  open read-only (the bytes come with it), then through a second
 *          handle write "STRIA" at 0 and truncate to 1000 bytes: each read
 *          of the first handle after must see the change, not the bytes
 *          its open brought
 *   behind with the metadata cache and write-behind on, as a program that
 *          keeps one client does, create PATH/b1 .. PATH/b20 by their whole
 *          paths (PATH a directory) with LOCAL_FILE's bytes, then read
 *          them back: their bytes must have been taken behind their close
 *          (stria_dom_behind_stats), and must all have landed by the end
 * Exit 0 when every read gave what it should, 1 otherwise.
 */
#include <stria/stria.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CAP (1 << 20)

static int fail(const char *what, int rc)
{
    fprintf(stderr, "dom_open: %s: %s\n", what, strerror(rc < 0 ? -rc : rc ? rc : EIO));
    return 1;
}

/* Read all of f (want bytes) and compare with exp. */
static int check(stria_file_t *f, const char *exp, size_t want, const char *when)
{
    static char got[CAP];
    ssize_t n = stria_pread(f, got, CAP, 0);
    if (n < 0)
        return fail(when, (int)n);
    if ((size_t)n != want || memcmp(got, exp, want) != 0) {
        fprintf(stderr, "dom_open: %s: read %zd bytes, not the %zu expected\n", when, n, want);
        return 1;
    }
    return 0;
}

#define BEHIND_FILES 20

/* Mode behind: whole-path creates written behind, then read back. */
static int behind(stria_fs_t *fs, const char *dir, const char *exp, size_t len)
{
    int rc;
    if ((rc = stria_start_mdcache(fs)) || (rc = stria_start_unlink_behind(fs, NULL, NULL)))
        return fail("start the cache and write-behind", rc);
    char path[4096];
    stria_file_t *f;
    for (int i = 1; i <= BEHIND_FILES; i++) {
        snprintf(path, sizeof(path), "%s/b%d", dir, i);
        if ((rc = stria_open(fs, path, O_CREAT | O_WRONLY | O_TRUNC, 0644, &f)))
            return fail(path, rc);
        ssize_t n = stria_pwrite(f, exp, len, 0);
        if (n != (ssize_t)len)
            return fail("write", n < 0 ? (int)n : -EIO);
        if ((rc = stria_close(f)))
            return fail("close", rc);
    }
    uint64_t taken, landed, lost;
    stria_dom_behind_stats(fs, &taken, &landed, &lost);
    if (taken == 0) {
        fprintf(stderr, "dom_open: no write of %d files created by whole path went behind\n",
                BEHIND_FILES);
        return 1;
    }
    for (int i = 1; i <= BEHIND_FILES; i++) {
        snprintf(path, sizeof(path), "%s/b%d", dir, i);
        if ((rc = stria_open(fs, path, O_RDONLY, 0, &f)))
            return fail(path, rc);
        int bad = check(f, exp, len, path);
        stria_close(f);
        if (bad)
            return 1;
    }
    stria_dom_behind_stats(fs, &taken, &landed, &lost);
    if (landed != taken || lost) {
        fprintf(stderr, "dom_open: %llu writes behind, %llu landed, %llu lost\n",
                (unsigned long long)taken, (unsigned long long)landed, (unsigned long long)lost);
        return 1;
    }
    printf("dom_open: %llu of %d files' writes went behind their close\n",
           (unsigned long long)taken, BEHIND_FILES);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: dom_open CONF PATH LOCAL_FILE r|rw|stale|behind\n");
        return 2;
    }
    static char exp[CAP];
    int fd = open(argv[3], O_RDONLY);
    ssize_t len = fd >= 0 ? read(fd, exp, sizeof(exp)) : -1;
    if (len < 0)
        return fail(argv[3], -errno);
    close(fd);
    const char *mode = argv[4];
    stria_fs_t *fs;
    int rc = stria_connect(argv[1], &fs);
    if (rc)
        return fail("connect", rc);
    if (strcmp(mode, "behind") == 0) {
        int bad = behind(fs, argv[2], exp, (size_t)len);
        stria_disconnect(fs);
        return bad;
    }
    stria_file_t *f, *w = NULL;
    int flags = strcmp(mode, "rw") == 0 ? O_CREAT | O_RDWR : O_RDONLY;
    if ((rc = stria_open(fs, argv[2], flags, 0644, &f))) {
        stria_disconnect(fs);
        return fail(argv[2], rc);
    }
    int bad = 0;
    if (strcmp(mode, "stale") != 0) {
        bad = check(f, exp, (size_t)len, "read");
    } else if ((rc = stria_open(fs, argv[2], O_RDWR, 0, &w)) ||
               stria_pwrite(w, "STRIA", 5, 0) != 5) {
        bad = fail("write through a second handle", rc);
    } else {
        memcpy(exp, "STRIA", 5);
        bad = check(f, exp, (size_t)len, "read after a write through another handle");
        if (!bad && (rc = stria_ftruncate(w, 1000)))
            bad = fail("truncate through a second handle", rc);
        /* The first handle knows the size its open saw: the rest reads as
         * the zeros the truncate left. */
        memset(exp + 1000, 0, (size_t)len - 1000);
        if (!bad)
            bad = check(f, exp, (size_t)len, "read after a truncate through another handle");
    }
    if (w && (rc = stria_close(w)) && !bad)
        bad = fail("close", rc);
    if ((rc = stria_close(f)) && !bad)
        bad = fail("close", rc);
    stria_disconnect(fs);
    return bad;
}
