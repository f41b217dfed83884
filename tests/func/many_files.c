/*
 * 100,000 files created, listed and removed in one directory through
 * libstria. Creation runs on two threads, as a metadata storm would.
 * With MDTS > 1 the directory is striped over that many MDTs, and the
 * files must spread over them within 10% of an even share (a file's inode
 * number names its MDT).
 *
 * Usage: many_files CLIENT_CONF [COUNT [MDTS]]
 */
#include "stria/stria.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DIRPATH  "/many"
#define MAX_MDTS 64
static stria_fs_t *fs;
static int count, mdts = 1;
static long per_mdt[MAX_MDTS];

struct worker {
    int first, n, rc;
    int (*op)(int i);
};

static int create_one(int i)
{
    char p[64];
    snprintf(p, sizeof(p), DIRPATH "/file-%07d", i);
    stria_file_t *f;
    int rc = stria_open(fs, p, O_CREAT | O_EXCL | O_WRONLY, 0644, &f);
    return rc ? rc : stria_close(f);
}

static int unlink_one(int i)
{
    char p[64];
    snprintf(p, sizeof(p), DIRPATH "/file-%07d", i);
    return stria_unlink(fs, p);
}

static void *work(void *arg)
{
    struct worker *w = arg;
    for (int i = w->first; i < w->first + w->n && !w->rc; i++)
        w->rc = w->op(i);
    return NULL;
}

static int run(int (*op)(int))
{
    struct worker w[2] = {{0, count / 2, 0, op}, {count / 2, count - count / 2, 0, op}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, &w[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return w[0].rc ? w[0].rc : w[1].rc;
}

/* Count entries and check each name appears once. */
static int list(int *seen_count)
{
    unsigned char *seen = calloc((size_t)count, 1);
    stria_dir_t *d;
    int rc = stria_opendir(fs, DIRPATH, &d), n = 0;
    if (rc)
        return rc;
    memset(per_mdt, 0, sizeof(per_mdt));
    struct stria_dirent de;
    while ((rc = stria_readdir(d, &de)) == 1) {
        if (!strcmp(de.name, ".") || !strcmp(de.name, ".."))
            continue;
        if ((de.ino >> 48) < MAX_MDTS)
            per_mdt[de.ino >> 48]++;
        int i;
        if (sscanf(de.name, "file-%d", &i) != 1 || i < 0 || i >= count || seen[i]) {
            fprintf(stderr, "unexpected or repeated entry '%s'\n", de.name);
            rc = -1;
            break;
        }
        seen[i] = 1;
        n++;
    }
    stria_closedir(d);
    free(seen);
    *seen_count = n;
    return rc < 0 ? rc : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CLIENT_CONF [COUNT]\n", argv[0]);
        return 2;
    }
    count = argc > 2 ? atoi(argv[2]) : 100000;
    mdts = argc > 3 ? atoi(argv[3]) : 1;
    if (count < 1 || mdts < 1 || mdts > MAX_MDTS) {
        fprintf(stderr, "%s: COUNT >= 1 and MDTS 1..%d\n", argv[0], MAX_MDTS);
        return 2;
    }
    int rc = stria_connect(argv[1], &fs), n = 0;
    if (rc) {
        fprintf(stderr, "connect: %s\n", strerror(-rc));
        return 1;
    }
    if ((rc = mdts > 1 ? stria_mkdir_striped(fs, DIRPATH, 0755, mdts, -1)
                       : stria_mkdir(fs, DIRPATH, 0755))) {
        fprintf(stderr, "mkdir: %s\n", strerror(-rc));
        return 1;
    }
    printf("creating %d files\n", count);
    if ((rc = run(create_one))) {
        fprintf(stderr, "create: %s\n", strerror(-rc));
        return 1;
    }
    if ((rc = list(&n)) || n != count) {
        fprintf(stderr, "listing: rc=%d, %d of %d entries\n", rc, n, count);
        return 1;
    }
    printf("listed %d entries, each once\n", n);
    if (mdts > 1) {
        /* Every MDT of the stripe within 10% of count / mdts, none outside. */
        double even = (double)count / mdts;
        int bad = 0, on = 0;
        for (int m = 0; m < MAX_MDTS; m++) {
            if (!per_mdt[m])
                continue;
            on++;
            printf("MDT%04x: %ld files (%+.1f%% of an even share)\n", m, per_mdt[m],
                   100.0 * ((double)per_mdt[m] - even) / even);
            bad |= per_mdt[m] < 0.9 * even || per_mdt[m] > 1.1 * even;
        }
        if (bad || on != mdts) {
            fprintf(stderr, "files on %d MDTs, want %d each within 10%% of %.0f\n", on, mdts, even);
            return 1;
        }
    }
    if ((rc = stria_rmdir(fs, DIRPATH)) != -ENOTEMPTY) {
        fprintf(stderr, "rmdir of a full directory gave %d, want -ENOTEMPTY\n", rc);
        return 1;
    }
    if ((rc = run(unlink_one))) {
        fprintf(stderr, "unlink: %s\n", strerror(-rc));
        return 1;
    }
    if ((rc = list(&n)) || n != 0) {
        fprintf(stderr, "after removal: rc=%d, %d entries left\n", rc, n);
        return 1;
    }
    if ((rc = stria_rmdir(fs, DIRPATH))) {
        fprintf(stderr, "rmdir: %s\n", strerror(-rc));
        return 1;
    }
    stria_disconnect(fs);
    printf("PASS\n");
    return 0;
}
