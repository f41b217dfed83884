/*
 * s3tool: every call of src/s3/s3.h from the command line, for the tests
 * (tests/func/s3_client.sh) and for a person poking at an endpoint.
 *
 *   s3tool BUCKET COMMAND ARGS...
 *
 * The endpoint is $S3_ENDPOINT, the region $AWS_DEFAULT_REGION, and
 * $S3_VHOST=1 addresses the bucket virtual-hosted. A failure prints
 * "s3tool: CMD failed: rc=ENAME (-N): TEXT" on stderr and exits 1.
 */
#include "s3/s3.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct s3_target T;
static const char *cmd;

static int fail(int rc, const struct s3_err *e)
{
    fprintf(stderr, "s3tool: %s failed: rc=%s (%d): %s\n", cmd, strerrorname_np(-rc), rc,
            e ? e->text : "");
    return 1;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: s3tool BUCKET COMMAND ARGS...\n"
            "  creds\n"
            "  list PREFIX START_AFTER MAX      one page: KEY SIZE MTIME_NS ETAG, then more=0|1\n"
            "  listall PREFIX MAX               every page: KEY lines, then pages=N keys=N\n"
            "  head KEY                         size=N mtime_ns=N etag=E\n"
            "  get KEY OFF LEN OUT [IF_MATCH [VERSION]]  one ranged GET into OUT\n"
            "  getmany KEY NRANGES STREAMS OUT [IF_MATCH [VERSION]]  the whole object (its\n"
            "                                   current size) in NRANGES\n"
            "  versions KEY ETAG                version=ID of KEY's version whose etag is ETAG\n"
            "  put KEY FILE                     etag=E\n"
            "  mpu KEY FILE PART_BYTES PARALLEL etag=E parts=N\n"
            "  delete KEY\n"
            "  deleteif KEY ETAG                delete only while the object's etag is ETAG\n"
            "Environment: S3_ENDPOINT, AWS_DEFAULT_REGION, S3_VHOST=1, AWS credentials.\n");
    exit(2);
}

static int print_entry(const struct s3_entry *e, void *arg)
{
    (void)arg;
    printf("%s %" PRIu64 " %" PRId64 " %s\n", e->key, e->size, e->mtime_ns, e->etag);
    return 0;
}

struct page {
    char last[2048];
    unsigned n;
};

static int keep_last(const struct s3_entry *e, void *arg)
{
    struct page *p = arg;
    printf("%s\n", e->key);
    snprintf(p->last, sizeof(p->last), "%s", e->key);
    p->n++;
    return 0;
}

static void *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    char *buf = NULL;

    if (fd < 0 || fstat(fd, &st) < 0) {
        perror(path);
        exit(1);
    }
    buf = malloc(st.st_size ? (size_t)st.st_size : 1);
    size_t got = 0;
    while (buf && got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r <= 0) {
            perror(path);
            exit(1);
        }
        got += (size_t)r;
    }
    close(fd);
    *len = got;
    return buf;
}

static void write_file(const char *path, const void *buf, size_t len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f || fwrite(buf, 1, len, f) != len || (f != stdout && fclose(f) != 0)) {
        perror(path);
        exit(1);
    }
}

struct mpu {
    const char *key, *upload_id;
    const char *buf;
    size_t len, part;
    unsigned nparts, next;
    char (*etags)[S3_ETAG_MAX];
    int rc;
    struct s3_err err;
    pthread_mutex_t lock;
};

static void *mpu_worker(void *arg)
{
    struct mpu *m = arg;
    for (;;) {
        pthread_mutex_lock(&m->lock);
        unsigned i = m->rc ? m->nparts : m->next++;
        pthread_mutex_unlock(&m->lock);
        if (i >= m->nparts)
            return NULL;
        size_t off = (size_t)i * m->part, l = m->len - off < m->part ? m->len - off : m->part;
        struct s3_err e;
        int rc = s3_mpu_part(&T, m->key, m->upload_id, i + 1, m->buf + off, l, m->etags[i], &e);
        if (rc < 0) {
            pthread_mutex_lock(&m->lock);
            if (!m->rc) {
                m->rc = rc;
                m->err = e;
            }
            pthread_mutex_unlock(&m->lock);
        }
    }
}

static int do_mpu(const char *key, const char *path, size_t part, unsigned parallel)
{
    struct mpu m = {.key = key, .part = part, .lock = PTHREAD_MUTEX_INITIALIZER};
    char upload_id[S3_UPLOAD_MAX], etag[S3_ETAG_MAX];
    pthread_t th[64];
    struct s3_err e;
    int rc;

    m.buf = read_file(path, &m.len);
    m.nparts = (unsigned)((m.len + part - 1) / part);
    if (m.nparts == 0 || part == 0 || parallel < 1 || parallel > 64)
        usage();
    if ((rc = s3_mpu_create(&T, key, upload_id, &e)) < 0)
        return fail(rc, &e);
    m.upload_id = upload_id;
    m.etags = calloc(m.nparts, S3_ETAG_MAX);
    for (unsigned i = 0; i < parallel; i++)
        pthread_create(&th[i], NULL, mpu_worker, &m);
    for (unsigned i = 0; i < parallel; i++)
        pthread_join(th[i], NULL);
    if (m.rc) {
        s3_mpu_abort(&T, key, upload_id, &e);
        return fail(m.rc, &m.err);
    }
    struct s3_part *parts = calloc(m.nparts, sizeof(*parts));
    for (unsigned i = 0; i < m.nparts; i++)
        parts[i] = (struct s3_part){.number = i + 1, .etag = m.etags[i]};
    rc = s3_mpu_complete(&T, key, upload_id, parts, m.nparts, etag, &e);
    free(parts);
    free(m.etags);
    free((void *)m.buf);
    if (rc < 0)
        return fail(rc, &e);
    printf("etag=%s parts=%u\n", etag, m.nparts);
    return 0;
}

int main(int argc, char **argv)
{
    struct s3_err e = {""};
    int rc;

    if (argc < 3)
        usage();
    T.bucket = argv[1];
    T.endpoint = getenv("S3_ENDPOINT");
    T.region = getenv("AWS_DEFAULT_REGION");
    T.vhost = getenv("S3_VHOST") && strcmp(getenv("S3_VHOST"), "1") == 0;
    cmd = argv[2];
    argc -= 3;
    argv += 3;
    if (s3_global_init() < 0)
        return fail(-EIO, NULL);

    if (strcmp(cmd, "creds") == 0) {
        rc = s3_creds_check(&e);
        return rc < 0 ? fail(rc, &e) : 0;
    } else if (strcmp(cmd, "list") == 0 && argc == 3) {
        bool more;
        rc = s3_list(&T, argv[0], argv[1], (unsigned)atoi(argv[2]), print_entry, NULL, &more, &e);
        if (rc < 0)
            return fail(rc, &e);
        printf("more=%d\n", more);
    } else if (strcmp(cmd, "listall") == 0 && argc == 2) {
        struct page p = {"", 0};
        unsigned pages = 0, keys = 0;
        bool more = true;
        /* Bounded: a million pages is more than any test lists. */
        while (more && pages < 1000000) {
            p.n = 0;
            rc = s3_list(&T, argv[0], p.last, (unsigned)atoi(argv[1]), keep_last, &p, &more, &e);
            if (rc < 0)
                return fail(rc, &e);
            pages++;
            keys += p.n;
            if (p.n == 0)
                break;
        }
        printf("pages=%u keys=%u\n", pages, keys);
    } else if (strcmp(cmd, "head") == 0 && argc == 1) {
        uint64_t size;
        int64_t mtime;
        char etag[S3_ETAG_MAX];
        if ((rc = s3_head(&T, argv[0], &size, &mtime, etag, &e)) < 0)
            return fail(rc, &e);
        printf("size=%" PRIu64 " mtime_ns=%" PRId64 " etag=%s\n", size, mtime, etag);
    } else if (strcmp(cmd, "versions") == 0 && argc == 2) {
        char version[S3_VERSION_MAX];
        if ((rc = s3_find_version(&T, argv[0], argv[1], version, sizeof(version), &e)) < 0)
            return fail(rc, &e);
        printf("version=%s\n", version);
    } else if (strcmp(cmd, "get") == 0 && argc >= 4 && argc <= 6) {
        size_t len = strtoull(argv[2], NULL, 10);
        char *buf = malloc(len ? len : 1);
        rc = s3_get(&T, argv[0], argc >= 5 ? argv[4] : NULL, argc == 6 ? argv[5] : NULL,
                    strtoull(argv[1], NULL, 10), buf, len, &e);
        if (rc < 0)
            return fail(rc, &e);
        write_file(argv[3], buf, len);
        free(buf);
    } else if (strcmp(cmd, "getmany") == 0 && argc >= 4 && argc <= 6) {
        uint64_t size;
        unsigned n = (unsigned)atoi(argv[1]);
        if (n < 1 || n > 100000)
            usage();
        if ((rc = s3_head(&T, argv[0], &size, NULL, NULL, &e)) < 0)
            return fail(rc, &e);
        char *buf = malloc(size ? size : 1);
        uint64_t *off = calloc(n, sizeof(*off));
        size_t *len = calloc(n, sizeof(*len));
        void **bufs = calloc(n, sizeof(*bufs));
        bool *done = calloc(n, sizeof(*done));
        uint64_t step = (size + n - 1) / n;
        for (unsigned i = 0; i < n; i++) {
            off[i] = (uint64_t)i * step < size ? (uint64_t)i * step : size;
            len[i] = off[i] + step <= size ? step : size - off[i];
            bufs[i] = buf + off[i];
        }
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        rc = s3_get_many(&T, argv[0], argc >= 5 ? argv[4] : NULL, argc == 6 ? argv[5] : NULL, n,
                         off, len, bufs, done, (unsigned)atoi(argv[2]), &e);
        clock_gettime(CLOCK_MONOTONIC, &b);
        unsigned ndone = 0;
        for (unsigned i = 0; i < n; i++)
            ndone += done[i];
        if (rc < 0) {
            fprintf(stderr, "s3tool: %u of %u ranges arrived\n", ndone, n);
            return fail(rc, &e);
        }
        write_file(argv[3], buf, size);
        fprintf(stderr, "ranges=%u done=%u seconds=%.3f\n", n, ndone,
                (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
        free(buf);
        free(off);
        free(len);
        free(bufs);
        free(done);
    } else if (strcmp(cmd, "put") == 0 && argc == 2) {
        size_t len;
        char etag[S3_ETAG_MAX];
        void *buf = read_file(argv[1], &len);
        rc = s3_put(&T, argv[0], buf, len, etag, &e);
        free(buf);
        if (rc < 0)
            return fail(rc, &e);
        printf("etag=%s\n", etag);
    } else if (strcmp(cmd, "mpu") == 0 && argc == 4) {
        return do_mpu(argv[0], argv[1], strtoull(argv[2], NULL, 10), (unsigned)atoi(argv[3]));
    } else if (strcmp(cmd, "delete") == 0 && argc == 1) {
        if ((rc = s3_delete(&T, argv[0], &e)) < 0)
            return fail(rc, &e);
    } else if (strcmp(cmd, "deleteif") == 0 && argc == 2) {
        if ((rc = s3_delete_if(&T, argv[0], argv[1], &e)) < 0)
            return fail(rc, &e);
    } else {
        usage();
    }
    return 0;
}
