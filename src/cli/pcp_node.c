/*
 * The worker of stria pcp (pcp.h): the chunks of its share, read from
 * stdin, copied with a few threads; each chunk is fsynced before it is
 * said done, so the coordinator's journal never counts what a crash loses.
 */
#include "pcp.h"

#include "args.h"

#include "../common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PCP_BUF (4u << 20)

/* A path with %, tab and newline escaped, for a line of a share. */
void pcp_put_path(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '%' || *s == '\t' || *s == '\n')
            fprintf(f, "%%%02x", (unsigned char)*s);
        else
            fputc(*s, f);
    }
}

static void get_path(char *s)
{
    char *o = s;
    for (; *s; s++) {
        unsigned v;
        if (*s == '%' && sscanf(s + 1, "%2x", &v) == 1) {
            *o++ = (char)v;
            s += 2;
        } else
            *o++ = *s;
    }
    *o = 0;
}

/* ---- the worker: stria pcp node ---- */

struct task {
    uint64_t id, off, len, size;
    mode_t mode;
    char *src, *dst;
};

struct worker {
    struct task *t;
    size_t n;
    size_t next;
    int failed;
    pthread_mutex_t lock;
};

static int mkdir_parents(char *path)
{
    char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0;
    *slash = 0;
    int rc = util_mkdir_p(path, 0755);
    *slash = '/';
    return rc;
}

static int copy_task(struct task *t, char *buf)
{
    int rc = 0, in = open(t->src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -errno;
    mkdir_parents(t->dst);
    /* Writable by us while copying (another chunk, another node, a rerun
     * may open it after it exists); its own mode is set at the end. */
    int out = open(t->dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    struct stat was;
    if (out < 0 && errno == EACCES && stat(t->dst, &was) == 0 &&
        chmod(t->dst, (was.st_mode & 07777) | 0200) == 0)
        out = open(t->dst, O_WRONLY | O_CLOEXEC);
    if (out < 0) {
        rc = -errno;
        close(in);
        return rc;
    }
    struct stat st;
    if (fstat(out, &st) == 0 && (uint64_t)st.st_size != t->size && ftruncate(out, (off_t)t->size))
        rc = -errno;
    for (uint64_t at = 0; !rc && at < t->len;) {
        size_t want = t->len - at < PCP_BUF ? (size_t)(t->len - at) : PCP_BUF;
        ssize_t got = pread(in, buf, want, (off_t)(t->off + at));
        if (got < 0) {
            rc = -errno;
            break;
        }
        if (got == 0) {
            rc = -ESTALE; /* the source shrank under the copy */
            break;
        }
        for (ssize_t w = 0; w < got && !rc;) {
            ssize_t n = pwrite(out, buf + w, (size_t)(got - w), (off_t)(t->off + at) + w);
            if (n < 0)
                rc = -errno;
            else
                w += n;
        }
        at += (uint64_t)got;
    }
    if (!rc && fsync(out) < 0)
        rc = -errno;
    if (close(out) < 0 && !rc)
        rc = -errno;
    close(in);
    return rc;
}

static void *work(void *arg)
{
    struct worker *w = arg;
    char *buf = malloc(PCP_BUF);
    for (;;) {
        pthread_mutex_lock(&w->lock);
        size_t i = w->next < w->n ? w->next++ : w->n;
        pthread_mutex_unlock(&w->lock);
        if (i == w->n)
            break;
        struct task *t = &w->t[i];
        int rc = buf ? copy_task(t, buf) : -ENOMEM;
        pthread_mutex_lock(&w->lock);
        if (rc) {
            printf("error %" PRIu64 " %s -> %s [%" PRIu64 ", +%" PRIu64 "): %s\n", t->id, t->src,
                   t->dst, t->off, t->len, strerror(-rc));
            w->failed++;
        } else
            printf("done %" PRIu64 "\n", t->id);
        fflush(stdout);
        pthread_mutex_unlock(&w->lock);
    }
    free(buf);
    return NULL;
}

/* Lines "ID OFF LEN SIZE MODE\tSRC\tDST" on stdin. */
int pcp_node(int jobs)
{
    struct worker w = {.lock = PTHREAD_MUTEX_INITIALIZER};
    size_t cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t n;
    while ((n = getline(&line, &lcap, stdin)) > 0) {
        line[strcspn(line, "\n")] = 0;
        char *a = strchr(line, '\t'), *b = a ? strchr(a + 1, '\t') : NULL;
        struct task t;
        unsigned mode;
        if (!b || sscanf(line, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %o", &t.id, &t.off,
                         &t.len, &t.size, &mode) != 5) {
            fprintf(stderr, "a malformed line in the share\n");
            free(line);
            return CLI_FAIL;
        }
        *a = *b = 0;
        get_path(a + 1);
        get_path(b + 1);
        t.mode = (mode_t)mode;
        t.src = strdup(a + 1);
        t.dst = strdup(b + 1);
        if (w.n == cap) {
            cap = cap ? cap * 2 : 256;
            struct task *v = realloc(w.t, cap * sizeof(*v));
            if (!v) {
                free(line);
                return CLI_FAIL;
            }
            w.t = v;
        }
        w.t[w.n++] = t;
    }
    free(line);
    pthread_t th[64];
    int started = 0;
    for (int i = 0; i < jobs && i < 64; i++)
        if (pthread_create(&th[started], NULL, work, &w) == 0)
            started++;
    if (!started)
        work(&w);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    for (size_t i = 0; i < w.n; i++) {
        free(w.t[i].src);
        free(w.t[i].dst);
    }
    free(w.t);
    return w.failed ? CLI_FAIL : CLI_OK;
}
