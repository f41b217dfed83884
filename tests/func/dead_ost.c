/*
 * Writes to a file whose OST's daemon was killed (tests/fault/dead_ost.sh).
 *
 * One client (one stria_fs_t) writes to PATH, whose only stripe is on the
 * OST to be killed, then waits for the script to kill its stria-stord.
 * Then writers started at different times, and an fsync, must each fail
 * with EIO (the documented error) within 1.6 x TIMEOUT_MS of their own
 * start (one timeout, not two). The client keeps writing, as an
 * application that retries would, until the script has restarted the
 * daemon; the first write after that must succeed (a target that is back
 * is used again at once).
 *
 * The script and this program meet by files in FLAGDIR: this one makes
 * "ready" and "gave-up", the script "killed", "restarting" (from then on
 * a write may find the daemon back) and "restarted" (it listens).
 *
 * Usage: dead_ost CLIENT_CONF PATH TIMEOUT_MS FLAGDIR
 */
#include "stria/stria.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define WRITERS 4
#define CHUNK   (64 << 10)

static const char *flagdir;
static stria_file_t *file;
static int timeout_ms;
static char chunk[CHUNK];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static void flag_make(const char *name)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", flagdir, name);
    FILE *f = fopen(p, "w");
    if (f)
        fclose(f);
}

/* Wait (at most 120 s) for the script's flag. */
static bool flag_wait(const char *name, void (*meanwhile)(void))
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", flagdir, name);
    for (int i = 0; i < 1200; i++) {
        if (access(p, F_OK) == 0)
            return true;
        if (meanwhile)
            meanwhile();
        else
            sleep_s(0.1);
    }
    return false;
}

struct writer {
    int i;
    double delay, took;
    int rc;
};

/* Start after w->delay seconds, then one write (the last one an fsync). */
static void *writer_main(void *arg)
{
    struct writer *w = arg;
    sleep_s(w->delay);
    double t0 = now_s();
    if (w->i < WRITERS) {
        ssize_t n = stria_pwrite(file, chunk, CHUNK, (off_t)(w->i + 1) * CHUNK);
        w->rc = n < 0 ? (int)n : 0;
    } else {
        w->rc = stria_fsync(file);
    }
    w->took = now_s() - t0;
    return NULL;
}

/* Writes of 4 MiB in a loop from before the kill: the one the kill
 * catches on its way fails with EIO, within one timeout. */
static volatile int busy_stop;
static int busy_rc, busy_writes;
static double busy_took;
static void *busy_main(void *arg)
{
    (void)arg;
    size_t len = 4 << 20;
    char *buf = malloc(len);
    if (!buf)
        return NULL;
    memset(buf, 'b', len);
    while (!busy_stop) {
        double t0 = now_s();
        ssize_t n = stria_pwrite(file, buf, len, 1 << 20);
        busy_writes++;
        if (n < 0) {
            busy_rc = (int)n;
            busy_took = now_s() - t0;
            break;
        }
    }
    free(buf);
    return NULL;
}

/* A write while the daemon is down: EIO, within one timeout. */
static int down_writes, down_slow;
static void write_while_down(void)
{
    double t0 = now_s();
    ssize_t n = stria_pwrite(file, chunk, CHUNK, 0);
    double took = now_s() - t0;
    down_writes++;
    CHECK(n == -EIO, "a write while the daemon is down gave %zd (%s), want -EIO", n,
          n < 0 ? strerror((int)-n) : "success");
    if (took > 1.6 * timeout_ms / 1000.0)
        down_slow++;
    sleep_s(0.1);
}

/* While the daemon restarts: keep writing, whatever it gives. */
static void write_while_restarting(void)
{
    stria_pwrite(file, chunk, CHUNK, 0);
    sleep_s(0.05);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s CLIENT_CONF PATH TIMEOUT_MS FLAGDIR\n", argv[0]);
        return 2;
    }
    timeout_ms = atoi(argv[3]);
    flagdir = argv[4];
    memset(chunk, 'x', sizeof(chunk));
    stria_fs_t *fs;
    int rc = stria_connect(argv[1], &fs);
    if (rc) {
        fprintf(stderr, "connect: %s\n", strerror(-rc));
        return 2;
    }
    /* O_DSYNC: no write is gathered (stria.h), so each write's own result
     * says whether the OST took it; a gathered write's failure would come
     * with the handle's next call instead. */
    if ((rc = stria_open(fs, argv[2], O_RDWR | O_DSYNC, 0, &file))) {
        fprintf(stderr, "open %s: %s\n", argv[2], strerror(-rc));
        return 2;
    }
    CHECK(stria_pwrite(file, chunk, CHUNK, 0) == CHUNK, "the first write failed");
    CHECK(stria_fsync(file) == 0, "the first fsync failed");
    pthread_t busy;
    pthread_create(&busy, NULL, busy_main, NULL);
    flag_make("ready");
    if (!flag_wait("killed", NULL)) {
        fprintf(stderr, "FAIL: the daemon was never killed\n");
        return 1;
    }
    busy_stop = 1;
    pthread_join(busy, NULL);
    printf("   a writer busy at the kill: %s after %.2f s (%d writes)\n",
           busy_rc ? strerror(-busy_rc) : "success", busy_took, busy_writes);
    CHECK(busy_rc == -EIO, "the write the kill caught gave %d (%s), want -EIO", busy_rc,
          strerror(-busy_rc));
    CHECK(busy_took <= 1.6 * timeout_ms / 1000.0,
          "the write the kill caught took %.2f s, more than 1.6 x timeout_ms", busy_took);

    /* Writers starting at once and while the first ones wait, and an
     * fsync: each fails with EIO after at most one timeout. */
    double limit = 1.6 * timeout_ms / 1000.0;
    struct writer w[WRITERS + 1];
    pthread_t th[WRITERS + 1];
    for (int i = 0; i <= WRITERS; i++) {
        w[i] = (struct writer){.i = i, .delay = i * 0.3 * timeout_ms / 1000.0};
        pthread_create(&th[i], NULL, writer_main, &w[i]);
    }
    for (int i = 0; i <= WRITERS; i++) {
        pthread_join(th[i], NULL);
        printf("   %s %d (started after %.1f s): %s after %.2f s (timeout %.1f s)\n",
               i < WRITERS ? "writer" : "fsync", i, w[i].delay,
               w[i].rc ? strerror(-w[i].rc) : "success", w[i].took, timeout_ms / 1000.0);
        CHECK(w[i].rc == -EIO, "%s %d gave %d (%s), want -EIO", i < WRITERS ? "writer" : "fsync", i,
              w[i].rc, strerror(-w[i].rc));
        CHECK(w[i].took <= limit, "%s %d took %.2f s, more than 1.6 x timeout_ms (%.2f s)",
              i < WRITERS ? "writer" : "fsync", i, w[i].took, limit);
    }

    /* Without O_DSYNC a small write may be gathered and acknowledged at
     * once; its failure then comes with the handle's fsync: EIO, within
     * one timeout. */
    stria_file_t *g = NULL;
    CHECK(stria_open(fs, argv[2], O_RDWR, 0, &g) == 0, "open without O_DSYNC");
    if (g) {
        ssize_t gn = stria_pwrite(g, chunk, 4096, 0);
        CHECK(gn == 4096 || gn == -EIO, "a small write gave %zd, want 4096 or -EIO", gn);
        double g0 = now_s();
        int grc = stria_fsync(g);
        double gtook = now_s() - g0;
        printf("   a small write, then fsync: %s, then %s after %.2f s\n",
               gn < 0 ? strerror((int)-gn) : "acknowledged", grc ? strerror(-grc) : "success",
               gtook);
        CHECK(grc == -EIO, "fsync after a small write gave %d (%s), want -EIO", grc,
              strerror(-grc));
        CHECK(gtook <= limit, "that fsync took %.2f s, more than 1.6 x timeout_ms", gtook);
        stria_close(g);
    }

    /* Keep writing until the daemon is back; then the next write works. */
    flag_make("gave-up");
    if (!flag_wait("restarting", write_while_down) ||
        !flag_wait("restarted", write_while_restarting)) {
        fprintf(stderr, "FAIL: the daemon was never restarted\n");
        return 1;
    }
    printf("   %d writes while the daemon was down, %d slower than 1.6 x timeout_ms\n", down_writes,
           down_slow);
    CHECK(down_slow == 0, "%d writes while down took more than 1.6 x timeout_ms", down_slow);
    double t0 = now_s();
    ssize_t n = stria_pwrite(file, chunk, CHUNK, 0);
    printf("   the first write after the restart: %s after %.2f s\n",
           n < 0 ? strerror((int)-n) : "success", now_s() - t0);
    CHECK(n == CHUNK, "the first write after the daemon came back gave %zd (%s)", n,
          n < 0 ? strerror((int)-n) : "short");
    CHECK(stria_fsync(file) == 0, "fsync after the daemon came back failed");
    stria_close(file);
    stria_disconnect(fs);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
