/*
 * stria-stord: serves object storage targets (OSTs).
 *
 * An OST is a directory on a local file system holding one file per
 * object, named by (inode, component, stripe) and fanned out over 256
 * subdirectories by inode (DESIGN §5): the local file system provides
 * allocation, sparse files and crash recovery. Objects are created by
 * their first write; a missing object reads as a hole.
 *
 * Each OST counts the bytes its objects occupy (scanned at start-up, kept
 * up to date on every write, truncate and destroy), so `stria df` shows
 * what each OST holds even when several OSTs share one disk.
 */
#include "../common/config.h"
#include "../common/daemon.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../net/hb.h"
#include "../net/net.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define MAX_OSTS        256
#define MAX_OBJECT_SIZE (1ull << 50)

struct stord_conf {
    struct daemon_conf d;
    struct cfg_list ost;
};

static const struct cfg_option stord_options[] = {
    DAEMON_BASE_OPTIONS(struct stord_conf, "7402"),
    DAEMON_NODE_OPTIONS(struct stord_conf),
    {"ost", CFG_LIST, 0, 0, NULL, true,
     "an object storage target to serve, as INDEX:DIRECTORY; repeat for each OST",
     offsetof(struct stord_conf, ost)},
};

static const struct cfg_table stord_table = {"stria-stord",
                                             "Stria storage service: serves object storage targets",
                                             stord_options, ARRAY_SIZE(stord_options)};

struct ost {
    uint32_t index;
    char path[4096];
    int dirfd;
    _Atomic uint64_t used;
    _Atomic uint64_t objects;
};

struct stord {
    struct ost *osts[MAX_OSTS];
    int nosts;
};

static struct ost *find_ost(struct stord *s, uint32_t index)
{
    for (int i = 0; i < s->nosts; i++)
        if (s->osts[i]->index == index)
            return s->osts[i];
    return NULL;
}

static void object_name(char *buf, size_t len, uint64_t ino, uint32_t comp, uint32_t stripe)
{
    unsigned fan = (unsigned)((ino ^ (ino >> 8) ^ (ino >> 16)) & 0xff);
    snprintf(buf, len, "objects/%02x/%016" PRIx64 ".%u.%u", fan, ino, comp, stripe);
}

static uint64_t obj_bytes(const struct stat *st)
{
    return (uint64_t)st->st_blocks * 512;
}

static void account(struct ost *o, uint64_t before, uint64_t after)
{
    if (after >= before) {
        atomic_fetch_add(&o->used, after - before);
        return;
    }
    /* Never below zero: an object put there behind the server's back
     * (which stria fsck removes) was never counted. */
    uint64_t cur = atomic_load(&o->used), next;
    do
        next = cur > before - after ? cur - (before - after) : 0;
    while (!atomic_compare_exchange_weak(&o->used, &cur, next));
}

/* Open an OST, creating its layout on first use; refuse a directory that
 * belongs to another OST index. */
static int ost_open(const char *path, uint32_t index, struct ost **out)
{
    int rc = util_mkdir_p(path, 0700);
    if (rc) {
        log_error("OST%04x: cannot create %s: %s", index, path, log_err(rc));
        return rc;
    }
    struct ost *o = calloc(1, sizeof(*o));
    if (!o)
        return -ENOMEM;
    o->index = index;
    snprintf(o->path, sizeof(o->path), "%s", path);
    o->dirfd = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    if (o->dirfd < 0) {
        rc = -errno;
        free(o);
        return rc;
    }
    char idfile[4200], *text = NULL, want[32];
    snprintf(idfile, sizeof(idfile), "%s/ost_index", path);
    snprintf(want, sizeof(want), "%u\n", index);
    rc = util_read_file(idfile, 64, &text, NULL);
    if (rc == -ENOENT) {
        rc = util_write_file_atomic(idfile, want, strlen(want), 0600);
    } else if (rc == 0 && strcmp(text, want)) {
        log_error("%s holds OST %s, not OST %u; refusing to serve it", path, text, index);
        rc = -EINVAL;
    }
    free(text);
    if (rc)
        goto fail;
    mkdirat(o->dirfd, "objects", 0700);
    char sub[32];
    for (int i = 0; i < 256; i++) {
        snprintf(sub, sizeof(sub), "objects/%02x", i);
        if (mkdirat(o->dirfd, sub, 0700) < 0 && errno != EEXIST) {
            rc = -errno;
            log_error("OST%04x: cannot create %s/%s: %s", index, path, sub, log_err(rc));
            goto fail;
        }
    }
    /* Count what the objects occupy. */
    for (int i = 0; i < 256; i++) {
        snprintf(sub, sizeof(sub), "objects/%02x", i);
        int dfd = openat(o->dirfd, sub, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
        if (!d) {
            if (dfd >= 0)
                close(dfd);
            continue;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
            struct stat st;
            if (de->d_name[0] == '.' || fstatat(dfd, de->d_name, &st, 0) < 0)
                continue;
            o->used += obj_bytes(&st);
            o->objects++;
        }
        closedir(d);
    }
    *out = o;
    return 0;
fail:
    close(o->dirfd);
    free(o);
    return rc;
}

static int ost_stat(struct ost *o, struct proto_tstat *t)
{
    struct statvfs v;
    if (fstatvfs(o->dirfd, &v) < 0)
        return -errno;
    t->index = o->index;
    t->bytes_used = atomic_load(&o->used);
    t->bytes_avail = (uint64_t)v.f_bavail * v.f_frsize;
    t->bytes_total = t->bytes_used + t->bytes_avail;
    t->inodes_used = atomic_load(&o->objects);
    t->inodes_total = t->inodes_used + v.f_favail;
    return 0;
}

/* ---- handlers ---- */

#define DECODE(lname)                                                                              \
    struct proto_##lname##_req q;                                                                  \
    if (proto_dec_##lname##_req(&req->dec, &q))                                                    \
        return -EBADMSG;                                                                           \
    struct ost *o = find_ost(s, q.ost);                                                            \
    if (!o)                                                                                        \
        return -ENXIO;                                                                             \
    char name[96];                                                                                 \
    object_name(name, sizeof(name), q.ino, q.comp, q.stripe)

static int h_write(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    (void)rep;
    DECODE(write);
    if (q.offset > MAX_OBJECT_SIZE || req->bulk_len > MAX_OBJECT_SIZE - q.offset)
        return -EFBIG;
    int fd = openat(o->dirfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    struct stat st;
    uint64_t before = 0;
    bool created = false;
    if (fstat(fd, &st) == 0) {
        before = obj_bytes(&st);
        created = st.st_size == 0 && st.st_blocks == 0;
    }
    int rc = 0;
    const uint8_t *b = req->bulk;
    uint64_t off = q.offset;
    uint32_t left = req->bulk_len;
    while (left) {
        ssize_t n = pwrite(fd, b, left, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            break;
        }
        b += n;
        off += (uint64_t)n;
        left -= (uint32_t)n;
    }
    if (fstat(fd, &st) == 0)
        account(o, before, obj_bytes(&st));
    if (created && rc == 0)
        atomic_fetch_add(&o->objects, 1);
    close(fd);
    if (rc)
        log_warn("write failed ost=%u object=%s offset=%" PRIu64 ": %s", o->index, name, q.offset,
                 log_err(rc));
    return rc;
}

static int h_read(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    DECODE(read);
    if (q.len > PROTO_MAX_BULK)
        return -EINVAL;
    int fd = openat(o->dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno; /* never written: a hole */
    uint8_t *buf = net_scratch(req, q.len);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    uint32_t got = 0;
    int rc = 0;
    while (got < q.len) {
        ssize_t n = pread(fd, buf + got, q.len - got, (off_t)(q.offset + got));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            break;
        }
        if (n == 0)
            break;
        got += (uint32_t)n;
    }
    close(fd);
    if (rc)
        return rc;
    rep->bulk = buf;
    rep->bulk_len = got;
    return 0;
}

static int h_truncate(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    (void)rep;
    DECODE(truncate);
    if (q.size > MAX_OBJECT_SIZE)
        return -EFBIG;
    int fd = openat(o->dirfd, name, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno; /* a missing object is already empty */
    struct stat st;
    uint64_t before = fstat(fd, &st) == 0 ? obj_bytes(&st) : 0;
    int rc = ftruncate(fd, (off_t)q.size) < 0 ? -errno : 0;
    if (fstat(fd, &st) == 0)
        account(o, before, obj_bytes(&st));
    close(fd);
    return rc;
}

static int h_destroy(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    (void)rep;
    DECODE(destroy);
    struct stat st;
    if (fstatat(o->dirfd, name, &st, 0) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (unlinkat(o->dirfd, name, 0) < 0)
        return errno == ENOENT ? 0 : -errno;
    account(o, obj_bytes(&st), 0);
    uint64_t n = atomic_load(&o->objects);
    while (n && !atomic_compare_exchange_weak(&o->objects, &n, n - 1))
        ;
    return 0;
}

static int h_punch(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    (void)rep;
    DECODE(punch);
    /* Nothing can live past the largest object: clamp there. */
    if (q.len == 0 || q.offset >= MAX_OBJECT_SIZE)
        return 0;
    if (q.len > MAX_OBJECT_SIZE - q.offset)
        q.len = MAX_OBJECT_SIZE - q.offset;
    int fd = openat(o->dirfd, name, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno; /* nothing there: already a hole */
    struct stat st;
    uint64_t before = fstat(fd, &st) == 0 ? obj_bytes(&st) : 0;
    int rc = 0;
    if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)q.offset, (off_t)q.len) <
        0)
        rc = -errno;
    if (fstat(fd, &st) == 0)
        account(o, before, obj_bytes(&st));
    close(fd);
    return rc;
}

static int h_osync(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    (void)rep;
    DECODE(osync);
    int fd = openat(o->dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    int rc = fdatasync(fd) < 0 ? -errno : 0;
    close(fd);
    return rc;
}
#undef DECODE

/* The objects of one fan-out directory, for stria fsck. */
static int h_listobj(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    struct proto_listobj_req q;
    if (proto_dec_listobj_req(&req->dec, &q))
        return -EBADMSG;
    struct ost *o = find_ost(s, q.ost);
    if (!o)
        return -ENXIO;
    if (q.fan > 255)
        return -EINVAL;
    uint32_t cap = PROTO_MAX_REP_PAYLOAD - 64;
    uint8_t *buf = net_scratch(req, cap);
    if (!buf)
        return -ENOMEM;
    char sub[32];
    snprintf(sub, sizeof(sub), "objects/%02x", q.fan);
    int dfd = openat(o->dirfd, sub, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        int rc = -errno;
        if (dfd >= 0)
            close(dfd);
        return rc;
    }
    struct proto_listobj_rep r = {.more = 0};
    struct proto_enc e;
    proto_enc_init(&e, buf, cap);
    struct dirent *de;
    while ((de = readdir(d))) {
        uint64_t ino;
        uint32_t comp, stripe;
        char tail;
        /* <inode hex>.<component>.<stripe>, nothing else */
        if (sscanf(de->d_name, "%16" SCNx64 ".%u.%u%c", &ino, &comp, &stripe, &tail) != 3)
            continue;
        char want[96];
        object_name(want, sizeof(want), ino, comp, stripe);
        size_t sl = strlen(sub);
        if (strncmp(want, sub, sl) || want[sl] != '/' || strcmp(want + sl + 1, de->d_name))
            continue; /* not a name this server would give: not one of its objects */
        size_t before = e.len;
        proto_put_U64(&e, &ino);
        proto_put_U32(&e, &comp);
        proto_put_U32(&e, &stripe);
        if (e.err) {
            e.len = before;
            e.err = 0;
            r.more = 1;
            break;
        }
    }
    closedir(d);
    r.objects = (struct proto_blob){buf, (uint32_t)e.len};
    return proto_enc_listobj_rep(&rep->enc, &r);
}

static int h_ostatfs(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    (void)req;
    struct proto_ostatfs_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->targets.n = (uint32_t)s->nosts;
    int rc = 0;
    for (int i = 0; i < s->nosts && !rc; i++)
        rc = ost_stat(s->osts[i], &r->targets.t[i]);
    if (!rc)
        rc = proto_enc_ostatfs_rep(&rep->enc, r);
    free(r);
    return rc;
}

static int h_ping(void *p, struct net_req *req, struct net_rep *rep)
{
    (void)p, (void)req, (void)rep;
    return 0;
}

static int hb_stats(void *p, struct proto_tstats *out)
{
    struct stord *s = p;
    out->n = (uint32_t)s->nosts;
    for (int i = 0; i < s->nosts; i++) {
        int rc = ost_stat(s->osts[i], &out->t[i]);
        if (rc)
            return rc;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static struct stord_conf conf; /* lives as long as the process */
    struct auth_key key;
    int rc = daemon_start(&stord_table, &conf, &conf.d, argc, argv, &key);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (conf.ost.count > MAX_OSTS) {
        fprintf(stderr, "stria-stord: at most %d OSTs per daemon\n", MAX_OSTS);
        return 2;
    }
    struct stord *s = calloc(1, sizeof(*s));
    if (!s)
        return 1;
    for (int i = 0; i < conf.ost.count; i++) {
        uint32_t index;
        const char *path;
        if (util_parse_target(conf.ost.items[i], &index, &path)) {
            fprintf(stderr, "stria-stord: ost '%s' is not INDEX:DIRECTORY\n", conf.ost.items[i]);
            return 2;
        }
        if (find_ost(s, index)) {
            fprintf(stderr, "stria-stord: OST %u is listed twice\n", index);
            return 2;
        }
        if ((rc = ost_open(path, index, &s->osts[s->nosts])))
            return 1;
        s->nosts++;
    }
    char node[256], adv[256];
    daemon_names(&conf.d, node, sizeof(node), adv, sizeof(adv));
    struct net_server_opts so = {.host = conf.d.listen.host,
                                 .port = conf.d.listen.port,
                                 .key = &key,
                                 .max_conns = (int)conf.d.max_connections,
                                 .ctx = s};
    so.handlers[PROTO_OP_PING] = h_ping;
    so.handlers[PROTO_OP_WRITE] = h_write;
    so.handlers[PROTO_OP_READ] = h_read;
    so.handlers[PROTO_OP_TRUNCATE] = h_truncate;
    so.handlers[PROTO_OP_DESTROY] = h_destroy;
    so.handlers[PROTO_OP_OSYNC] = h_osync;
    so.handlers[PROTO_OP_PUNCH] = h_punch;
    so.handlers[PROTO_OP_OSTATFS] = h_ostatfs;
    so.handlers[PROTO_OP_LISTOBJ] = h_listobj;
    struct net_server *srv;
    if ((rc = net_server_start(&so, &srv)))
        return 1;
    struct hb_opts ho = {.mgmt_host = conf.d.mgmt.host,
                         .mgmt_port = conf.d.mgmt.port,
                         .key = &key,
                         .kind = PROTO_NODE_STOR,
                         .node = node,
                         .host = adv,
                         .port = net_server_port(srv),
                         .interval_ms = (int)conf.d.heartbeat_ms,
                         .stats = hb_stats,
                         .ctx = s};
    struct hb *hb;
    if ((rc = hb_start(&ho, &hb)))
        return 1;
    for (int i = 0; i < s->nosts; i++)
        log_info("serving OST%04x dir=%s objects=%" PRIu64 " used=%" PRIu64, s->osts[i]->index,
                 s->osts[i]->path, (uint64_t)s->osts[i]->objects, (uint64_t)s->osts[i]->used);
    log_info("listening on %s:%u advertise=%s node=%s", conf.d.listen.host, net_server_port(srv),
             adv, node);
    int sig = daemon_wait(0, NULL, NULL);
    log_info("signal %d: stopping", sig);
    hb_stop(hb);
    net_server_stop(srv);
    for (int i = 0; i < s->nosts; i++) {
        close(s->osts[i]->dirfd);
        free(s->osts[i]);
    }
    free(s);
    cfg_free(&stord_table, &conf);
    return 0;
}
