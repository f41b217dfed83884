/*
 * libstria: configuration, connections, the cluster map, and every
 * metadata call of the public API (stria.h).
 *
 * Connections are pooled per target and lent to one thread at a time, so
 * the library is thread-safe without a global lock. Reply strings point
 * into a connection's buffer, so each call copies what it needs before
 * returning its connection. A request that fails on a pooled connection
 * (the server restarted since it was last used) is retried once on a fresh
 * one: the failed attempt never reached a live server.
 */
#include "client.h"

#include "../common/log.h"
#include "../common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define O(n, t, lo, hi, d, req, h)                                                                 \
    {                                                                                              \
#n, t, lo, hi, d, req, h, offsetof(struct client_conf, n)                                  \
    }
static const struct cfg_option client_options[] = {
    O(mgmt, CFG_ADDR, 0, 0, NULL, true, "host:port of stria-mgmtd"),
    O(key_file, CFG_STR, 0, 0, NULL, true,
      "the cluster's shared key file (relative paths: from this file's directory)"),
    O(connect_timeout_ms, CFG_INT, 100, 600000, "5000", false,
      "give up connecting to a server after this long"),
    O(io_depth, CFG_INT, 1, 64, "8", false, "data requests in flight per storage connection"),
};
#undef O
static const struct cfg_table client_table = {"client.conf", "Stria client configuration",
                                              client_options, ARRAY_SIZE(client_options)};

/* ---- credentials ---- */

static __thread bool cred_set;
static __thread struct proto_cred thread_cred;

int stria_set_thread_cred(uid_t uid, gid_t gid, int ngroups, const gid_t *groups)
{
    if (ngroups < 0)
        return -EINVAL;
    thread_cred.uid = uid;
    thread_cred.gid = gid;
    thread_cred.ngroups = (uint32_t)MIN(ngroups, (int)PROTO_MAX_GROUPS);
    for (uint32_t i = 0; i < thread_cred.ngroups; i++)
        thread_cred.groups[i] = groups[i];
    cred_set = true;
    return 0;
}

void stria_clear_thread_cred(void)
{
    cred_set = false;
}

void cl_cred(struct proto_cred *c)
{
    if (cred_set) {
        *c = thread_cred;
        return;
    }
    c->uid = geteuid();
    c->gid = getegid();
    gid_t g[PROTO_MAX_GROUPS];
    int n = getgroups(PROTO_MAX_GROUPS, g);
    if (n < 0)
        n = 0; /* more groups than a credential carries: primary only */
    c->ngroups = (uint32_t)n;
    for (int i = 0; i < n; i++)
        c->groups[i] = g[i];
}

/* ---- configuration ---- */

int stria_conf_find(char *buf, size_t len)
{
    const char *env = getenv("STRIA_CONF");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return access(buf, R_OK) == 0 ? 0 : -ENOENT;
    }
    const char *home = getenv("HOME");
    if (home && *home) {
        snprintf(buf, len, "%s/.config/stria/client.conf", home);
        if (access(buf, R_OK) == 0)
            return 0;
    }
    snprintf(buf, len, "/etc/stria/client.conf");
    return access(buf, R_OK) == 0 ? 0 : -ENOENT;
}

static void ct_init(struct ctarget *t, uint8_t kind, uint32_t index, const char *host,
                    uint16_t port)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_init(&t->lock, NULL);
    t->kind = kind;
    t->index = index;
    snprintf(t->host, sizeof(t->host), "%s", host);
    t->port = port;
    t->state = MAP_ONLINE;
}

static void ct_drain(struct ctarget *t)
{
    for (int i = 0; i < t->nidle; i++)
        net_close(t->idle[i]);
    t->nidle = 0;
}

int stria_connect(const char *conf, stria_fs_t **out)
{
    stria_fs_t *fs = calloc(1, sizeof(*fs));
    if (!fs)
        return -ENOMEM;
    int rc;
    if (conf)
        snprintf(fs->conf_path, sizeof(fs->conf_path), "%s", conf);
    else if ((rc = stria_conf_find(fs->conf_path, sizeof(fs->conf_path)))) {
        free(fs);
        return rc;
    }
    char err[512], keypath[8300];
    if ((rc = cfg_defaults(&client_table, &fs->conf)) ||
        (rc = cfg_load_file(&client_table, &fs->conf, fs->conf_path, err, sizeof(err))) ||
        (rc = cfg_check_required(&client_table, &fs->conf, err, sizeof(err)))) {
        log_error("%s", err);
        goto fail;
    }
    if (fs->conf.key_file[0] == '/') {
        snprintf(keypath, sizeof(keypath), "%s", fs->conf.key_file);
    } else {
        /* Relative to where the file really is (~/.config/... is a link). */
        char dir[4096], *real = realpath(fs->conf_path, NULL);
        snprintf(dir, sizeof(dir), "%s", real ? real : fs->conf_path);
        free(real);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof(dir), ".");
        snprintf(keypath, sizeof(keypath), "%s/%s", dir, fs->conf.key_file);
    }
    if ((rc = auth_key_load(keypath, &fs->key, err, sizeof(err)))) {
        log_error("%s", err);
        goto fail;
    }
    auth_random(&fs->client_id, sizeof(fs->client_id));
    pthread_rwlock_init(&fs->map_lock, NULL);
    ct_init(&fs->mgmt, PROTO_NODE_MGMT, 0, fs->conf.mgmt.host, fs->conf.mgmt.port);
    if ((rc = cl_refresh_map(fs)))
        goto fail;
    *out = fs;
    return 0;
fail:
    cfg_free(&client_table, &fs->conf);
    free(fs);
    return rc;
}

static void free_slots(struct ctarget **v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (v[i]) {
            ct_drain(v[i]);
            free(v[i]);
        }
    }
    free(v);
}

void stria_disconnect(stria_fs_t *fs)
{
    if (!fs)
        return;
    ct_drain(&fs->mgmt);
    free_slots(fs->mdt, fs->nmdt_slots);
    free_slots(fs->ost, fs->nost_slots);
    cfg_free(&client_table, &fs->conf);
    free(fs);
}

/* ---- connections ---- */

static struct ctarget *slot(stria_fs_t *fs, uint8_t kind, uint32_t index)
{
    if (kind == PROTO_NODE_MGMT)
        return &fs->mgmt;
    struct ctarget **v = kind == PROTO_NODE_META ? fs->mdt : fs->ost;
    uint32_t n = kind == PROTO_NODE_META ? fs->nmdt_slots : fs->nost_slots;
    return index < n ? v[index] : NULL;
}

static int lease_once(stria_fs_t *fs, uint8_t kind, uint32_t index, struct lease *l)
{
    pthread_rwlock_rdlock(&fs->map_lock);
    struct ctarget *t = slot(fs, kind, index);
    pthread_rwlock_unlock(&fs->map_lock);
    if (!t)
        return -ENXIO;
    char host[256];
    uint16_t port;
    pthread_mutex_lock(&t->lock);
    l->t = t;
    l->gen = t->gen;
    l->c = t->nidle ? t->idle[--t->nidle] : NULL;
    snprintf(host, sizeof(host), "%s", t->host);
    port = t->port;
    pthread_mutex_unlock(&t->lock);
    l->reused = l->c != NULL;
    if (l->c)
        return 0;
    return net_connect(host, port, &fs->key, fs->client_id, "libstria",
                       (int)fs->conf.connect_timeout_ms, &l->c);
}

int cl_get(stria_fs_t *fs, uint8_t kind, uint32_t index, struct lease *l)
{
    int rc = lease_once(fs, kind, index, l);
    if (rc == 0 || kind == PROTO_NODE_MGMT || rc == -EACCES)
        return rc;
    /* Unknown or unreachable: the map may have moved on. */
    if (cl_refresh_map(fs) == 0)
        rc = lease_once(fs, kind, index, l);
    if (rc == -ENXIO)
        log_warn("no %s%04x in the cluster map", kind == PROTO_NODE_META ? "MDT" : "OST", index);
    return rc;
}

void cl_put(struct lease *l, bool broken)
{
    struct ctarget *t = l->t;
    if (!l->c)
        return;
    pthread_mutex_lock(&t->lock);
    if (!broken && l->gen == t->gen && t->nidle < CT_IDLE_MAX) {
        t->idle[t->nidle++] = l->c;
        l->c = NULL;
    } else if (broken) {
        /* The server likely restarted: its other idle connections are as
         * dead as this one, and a retry must not pick one of them. */
        ct_drain(t);
    }
    pthread_mutex_unlock(&t->lock);
    net_close(l->c);
    l->c = NULL;
}

static int update_slots(struct ctarget ***v, uint32_t *n, const struct map_target *m)
{
    if (m->index >= *n) {
        uint32_t nn = m->index + 1;
        struct ctarget **nv = realloc(*v, nn * sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        memset(nv + *n, 0, (nn - *n) * sizeof(*nv));
        *v = nv;
        *n = nn;
    }
    struct ctarget *t = (*v)[m->index];
    if (!t) {
        if (!(t = malloc(sizeof(*t))))
            return -ENOMEM;
        ct_init(t, m->kind, m->index, m->host, m->port);
        (*v)[m->index] = t;
    }
    pthread_mutex_lock(&t->lock);
    if (strcmp(t->host, m->host) || t->port != m->port) {
        snprintf(t->host, sizeof(t->host), "%s", m->host);
        t->port = m->port;
        t->gen++;
        ct_drain(t);
    }
    t->state = m->state;
    pthread_mutex_unlock(&t->lock);
    return 0;
}

/* Fetch the map into m (the caller frees it). */
static int get_map(stria_fs_t *fs, struct cluster_map *m, char *fsname, size_t fslen)
{
    struct lease l;
    int rc;
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((rc = cl_get(fs, PROTO_NODE_MGMT, 0, &l)))
            return rc;
        struct proto_get_map_req q = {0};
        struct proto_get_map_rep r;
        bool transport = false;
        rc = net_call_get_map(l.c, &q, &r, NULL, 0, NULL, 0, NULL, &transport);
        if (rc == 0) {
            m->epoch = r.epoch;
            rc = map_decode(r.map.p, r.map.len, m);
            if (fsname && proto_str_copy(&r.fsname, fsname, fslen))
                snprintf(fsname, fslen, "stria");
        }
        bool retry = transport && l.reused;
        cl_put(&l, transport);
        if (!retry)
            break;
    }
    return rc;
}

int cl_refresh_map(stria_fs_t *fs)
{
    struct cluster_map m = {0};
    char fsname[64];
    int rc = get_map(fs, &m, fsname, sizeof(fsname));
    if (rc)
        return rc;
    pthread_rwlock_wrlock(&fs->map_lock);
    fs->epoch = m.epoch;
    snprintf(fs->fsname, sizeof(fs->fsname), "%s", fsname);
    uint32_t osts = 0;
    for (uint32_t i = 0; i < m.n && rc == 0; i++) {
        if (m.t[i].kind == PROTO_NODE_META)
            rc = update_slots(&fs->mdt, &fs->nmdt_slots, &m.t[i]);
        else if (m.t[i].kind == PROTO_NODE_STOR) {
            rc = update_slots(&fs->ost, &fs->nost_slots, &m.t[i]);
            osts++;
        }
    }
    fs->ost_count = osts;
    pthread_rwlock_unlock(&fs->map_lock);
    map_free(&m);
    return rc;
}

/* ---- metadata calls ---- */

/* The MDT holding an inode (the top 16 bits of its number). */
static uint32_t ino_mdt(uint64_t ino)
{
    return (uint32_t)(ino >> 48);
}

#define ROOT_INO 1ull

static int check_path(const char *path)
{
    if (!path)
        return -EFAULT;
    if (strlen(path) > PROTO_MAX_STR)
        return -ENAMETOOLONG;
    return 0;
}

void cl_to_stat(const struct proto_attr *a, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = a->ino;
    st->st_mode = a->mode;
    st->st_nlink = a->nlink;
    st->st_uid = a->uid;
    st->st_gid = a->gid;
    st->st_size = (off_t)a->size;
    st->st_blocks = (blkcnt_t)a->blocks;
    st->st_blksize = 1 << 20;
    st->st_rdev = a->rdev;
    st->st_atim.tv_sec = a->atime_ns / 1000000000;
    st->st_atim.tv_nsec = a->atime_ns % 1000000000;
    st->st_mtim.tv_sec = a->mtime_ns / 1000000000;
    st->st_mtim.tv_nsec = a->mtime_ns % 1000000000;
    st->st_ctim.tv_sec = a->ctime_ns / 1000000000;
    st->st_ctim.tv_nsec = a->ctime_ns % 1000000000;
}

static int lookup(stria_fs_t *fs, const char *path, bool follow, struct proto_attr *attr)
{
    int rc = check_path(path);
    if (rc)
        return rc;
    struct proto_lookup_req q = {.parent = ROOT_INO, .path = proto_str_c(path), .follow = follow};
    struct proto_lookup_rep r;
    cl_cred(&q.cred);
    return MDT_CALL(fs, 0, lookup, &q, &r, *attr = r.attr);
}

int stria_stat(stria_fs_t *fs, const char *path, struct stat *st)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    if (rc == 0)
        cl_to_stat(&a, st);
    return rc;
}

int stria_lstat(stria_fs_t *fs, const char *path, struct stat *st)
{
    struct proto_attr a;
    int rc = lookup(fs, path, false, &a);
    if (rc == 0)
        cl_to_stat(&a, st);
    return rc;
}

int stria_mkdir(stria_fs_t *fs, const char *path, mode_t mode)
{
    int rc = check_path(path);
    if (rc)
        return rc;
    struct proto_mkdir_req q = {.parent = ROOT_INO, .path = proto_str_c(path), .mode = mode};
    struct proto_mkdir_rep r;
    cl_cred(&q.cred);
    return MDT_CALL(fs, 0, mkdir, &q, &r, (void)0);
}

int stria_rmdir(stria_fs_t *fs, const char *path)
{
    int rc = check_path(path);
    if (rc)
        return rc;
    struct proto_rmdir_req q = {.parent = ROOT_INO, .path = proto_str_c(path)};
    struct proto_rmdir_rep r;
    cl_cred(&q.cred);
    return MDT_CALL(fs, 0, rmdir, &q, &r, (void)0);
}

/* Remove the objects of a file whose last link went away. A failure leaves
 * orphan objects (space, not data, is lost); log it and carry on. */
static void destroy_objects(stria_fs_t *fs, uint64_t ino, const struct layout *l)
{
    int rc = io_objects(fs, ino, l, IO_DESTROY, 0);
    if (rc)
        log_warn("inode %llx: could not remove all objects: %s", (unsigned long long)ino,
                 log_err(rc));
}

int stria_unlink(stria_fs_t *fs, const char *path)
{
    int rc = check_path(path);
    if (rc)
        return rc;
    struct proto_unlink_req q = {.parent = ROOT_INO, .path = proto_str_c(path)};
    struct proto_unlink_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    rc = MDT_CALL(fs, 0, unlink, &q, r, (void)0);
    if (rc == 0 && r->destroy)
        destroy_objects(fs, r->ino, &r->layout);
    free(r);
    return rc;
}

int stria_rename(stria_fs_t *fs, const char *from, const char *to, unsigned flags)
{
    int rc = check_path(from);
    if (rc || (rc = check_path(to)))
        return rc;
    struct proto_rename_req q = {.sparent = ROOT_INO,
                                 .spath = proto_str_c(from),
                                 .dparent = ROOT_INO,
                                 .dpath = proto_str_c(to),
                                 .flags = flags};
    struct proto_rename_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    rc = MDT_CALL(fs, 0, rename, &q, r, (void)0);
    if (rc == 0 && r->destroy)
        destroy_objects(fs, r->replaced, &r->layout);
    free(r);
    return rc;
}

int stria_link(stria_fs_t *fs, const char *existing, const char *newpath)
{
    struct proto_attr a;
    int rc = check_path(newpath);
    if (rc || (rc = lookup(fs, existing, false, &a)))
        return rc;
    struct proto_link_req q = {.ino = a.ino, .dparent = ROOT_INO, .dpath = proto_str_c(newpath)};
    struct proto_link_rep r;
    cl_cred(&q.cred);
    return MDT_CALL(fs, ino_mdt(a.ino), link, &q, &r, (void)0);
}

int stria_symlink(stria_fs_t *fs, const char *target, const char *linkpath)
{
    int rc = check_path(linkpath);
    if (rc || (rc = check_path(target)))
        return rc;
    struct proto_symlink_req q = {
        .parent = ROOT_INO, .path = proto_str_c(linkpath), .target = proto_str_c(target)};
    struct proto_symlink_rep r;
    cl_cred(&q.cred);
    return MDT_CALL(fs, 0, symlink, &q, &r, (void)0);
}

ssize_t stria_readlink(stria_fs_t *fs, const char *path, char *buf, size_t len)
{
    struct proto_attr a;
    int rc = lookup(fs, path, false, &a);
    if (rc)
        return rc;
    struct proto_readlink_req q = {.ino = a.ino};
    struct proto_readlink_rep r;
    size_t n = 0;
    cl_cred(&q.cred);
    rc = MDT_CALL(fs, ino_mdt(a.ino), readlink, &q, &r, ({
                      n = MIN(len, (size_t)r.target.len);
                      memcpy(buf, r.target.p, n);
                  }));
    return rc ? rc : (ssize_t)n;
}

int cl_setattr(stria_fs_t *fs, uint64_t ino, struct proto_setattr_req *q,
               struct proto_setattr_rep *r)
{
    q->ino = ino;
    cl_cred(&q->cred);
    int rc = MDT_CALL(fs, ino_mdt(ino), setattr, q, r, (void)0);
    /* Shrinking: cut the objects to what the new size implies. */
    if (rc == 0 && (q->valid & SETATTR_SIZE) && q->size < r->old_size && r->layout.ncomp)
        rc = io_objects(fs, ino, &r->layout, IO_TRUNCATE, q->size);
    return rc;
}

static int setattr_path(stria_fs_t *fs, const char *path, bool follow, struct proto_setattr_req *q)
{
    struct proto_attr a;
    int rc = lookup(fs, path, follow, &a);
    if (rc)
        return rc;
    struct proto_setattr_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    rc = cl_setattr(fs, a.ino, q, r);
    free(r);
    return rc;
}

int stria_truncate(stria_fs_t *fs, const char *path, off_t size)
{
    if (size < 0)
        return -EINVAL;
    struct proto_setattr_req q = {.valid = SETATTR_SIZE, .size = (uint64_t)size};
    return setattr_path(fs, path, true, &q);
}

int stria_chmod(stria_fs_t *fs, const char *path, mode_t mode)
{
    struct proto_setattr_req q = {.valid = SETATTR_MODE, .mode = mode};
    return setattr_path(fs, path, true, &q);
}

int stria_chown(stria_fs_t *fs, const char *path, uid_t uid, gid_t gid)
{
    struct proto_setattr_req q = {0};
    if (uid != (uid_t)-1) {
        q.valid |= SETATTR_UID;
        q.uid = uid;
    }
    if (gid != (gid_t)-1) {
        q.valid |= SETATTR_GID;
        q.gid = gid;
    }
    return setattr_path(fs, path, true, &q);
}

static void set_time(struct proto_setattr_req *q, const struct timespec *ts, uint32_t bit,
                     uint32_t now_bit, int64_t *field)
{
    if (!ts || ts->tv_nsec == UTIME_NOW) {
        q->valid |= now_bit;
    } else if (ts->tv_nsec != UTIME_OMIT) {
        q->valid |= bit;
        *field = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
    }
}

int stria_utimens(stria_fs_t *fs, const char *path, const struct timespec times[2])
{
    struct proto_setattr_req q = {0};
    set_time(&q, times ? &times[0] : NULL, SETATTR_ATIME, SETATTR_ATIME_NOW, &q.atime_ns);
    set_time(&q, times ? &times[1] : NULL, SETATTR_MTIME, SETATTR_MTIME_NOW, &q.mtime_ns);
    if (!q.valid)
        return 0;
    return setattr_path(fs, path, true, &q);
}

/* ---- directories ---- */

#define DIR_BATCH (256u << 10)

struct stria_dir {
    stria_fs_t *fs;
    uint64_t ino;
    uint64_t cookie;
    bool eof;
    uint8_t *buf;
    uint32_t len, off, left;
};

int stria_opendir(stria_fs_t *fs, const char *path, stria_dir_t **out)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    if (rc)
        return rc;
    if (!S_ISDIR(a.mode))
        return -ENOTDIR;
    stria_dir_t *d = calloc(1, sizeof(*d));
    if (!d || !(d->buf = malloc(DIR_BATCH))) {
        free(d);
        return -ENOMEM;
    }
    d->fs = fs;
    d->ino = a.ino;
    *out = d;
    return 0;
}

static int fill(stria_dir_t *d)
{
    struct proto_readdir_req q = {.ino = d->ino, .cookie = d->cookie, .max_bytes = DIR_BATCH};
    struct proto_readdir_rep r;
    cl_cred(&q.cred);
    return MDT_CALL(d->fs, ino_mdt(d->ino), readdir, &q, &r, ({
                        memcpy(d->buf, r.entries.p, r.entries.len);
                        d->len = r.entries.len;
                        d->off = 0;
                        d->left = r.count;
                        d->eof = r.eof;
                    }));
}

int stria_readdir(stria_dir_t *d, struct stria_dirent *ent)
{
    while (d->left == 0) {
        if (d->eof)
            return 0;
        int rc = fill(d);
        if (rc)
            return rc;
        if (d->left == 0 && !d->eof)
            return -EIO; /* the server made no progress */
    }
    struct proto_dec dec;
    struct proto_dirent de;
    proto_dec_init(&dec, d->buf + d->off, d->len - d->off);
    proto_get_dirent(&dec, &de);
    if (dec.err)
        return -EPROTO;
    d->off += (uint32_t)dec.off;
    d->left--;
    d->cookie = de.next_cookie;
    ent->ino = de.ino;
    ent->type = de.type;
    memcpy(ent->name, de.name.p, de.name.len);
    ent->name[de.name.len] = '\0';
    return 1;
}

void stria_closedir(stria_dir_t *d)
{
    if (!d)
        return;
    free(d->buf);
    free(d);
}

/* ---- xattrs ---- */

int stria_setxattr(stria_fs_t *fs, const char *path, const char *name, const void *value,
                   size_t size, int flags)
{
    struct proto_attr a;
    if (size > PROTO_MAX_XATTR)
        return -E2BIG;
    int rc = lookup(fs, path, true, &a);
    if (rc)
        return rc;
    struct proto_setxattr_req q = {.ino = a.ino,
                                   .name = proto_str_c(name),
                                   .value = {value, (uint32_t)size},
                                   .flags = (uint32_t)flags};
    struct proto_setxattr_rep r;
    cl_cred(&q.cred);
    return MDT_CALL(fs, ino_mdt(a.ino), setxattr, &q, &r, (void)0);
}

ssize_t stria_getxattr(stria_fs_t *fs, const char *path, const char *name, void *value, size_t size)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    if (rc)
        return rc;
    struct proto_getxattr_req q = {.ino = a.ino, .name = proto_str_c(name)};
    struct proto_getxattr_rep r;
    ssize_t n = 0;
    cl_cred(&q.cred);
    rc = MDT_CALL(fs, ino_mdt(a.ino), getxattr, &q, &r, ({
                      n = r.value.len;
                      if (size && r.value.len > size)
                          n = -ERANGE;
                      else if (size)
                          memcpy(value, r.value.p, r.value.len);
                  }));
    return rc ? rc : n;
}

ssize_t stria_listxattr(stria_fs_t *fs, const char *path, char *list, size_t size)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    if (rc)
        return rc;
    struct proto_listxattr_req q = {.ino = a.ino};
    struct proto_listxattr_rep r;
    ssize_t n = 0;
    cl_cred(&q.cred);
    rc = MDT_CALL(fs, ino_mdt(a.ino), listxattr, &q, &r, ({
                      n = r.names.len;
                      if (size && r.names.len > size)
                          n = -ERANGE;
                      else if (size)
                          memcpy(list, r.names.p, r.names.len);
                  }));
    return rc ? rc : n;
}

int stria_removexattr(stria_fs_t *fs, const char *path, const char *name)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    if (rc)
        return rc;
    struct proto_removexattr_req q = {.ino = a.ino, .name = proto_str_c(name)};
    struct proto_removexattr_rep r;
    cl_cred(&q.cred);
    return MDT_CALL(fs, ino_mdt(a.ino), removexattr, &q, &r, (void)0);
}

/* ---- layouts ---- */

int stria_getstripe(stria_fs_t *fs, const char *path, struct stria_layout *out)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    if (rc)
        return rc;
    struct proto_getstripe_req q = {.ino = a.ino};
    struct proto_getstripe_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    rc = MDT_CALL(fs, ino_mdt(a.ino), getstripe, &q, r, (void)0);
    if (rc == 0) {
        memset(out, 0, sizeof(*out));
        out->is_dir = r->is_dir;
        out->dir_stripe_count = r->dir_count;
        out->dir_stripe_size = r->dir_size;
        out->dir_stripe_offset = r->dir_offset;
        out->ncomp = r->layout.ncomp;
        for (uint32_t i = 0; i < r->layout.ncomp && i < STRIA_MAX_COMPONENTS; i++) {
            const struct layout_comp *c = &r->layout.comp[i];
            out->comp[i].start = c->start;
            out->comp[i].end = c->end;
            out->comp[i].stripe_size = c->stripe_size;
            out->comp[i].stripe_count = c->stripe_count;
            for (uint32_t s = 0; s < c->stripe_count; s++)
                out->comp[i].ost[s] = map_group_ost(c->groups[s]);
        }
    }
    free(r);
    return rc;
}

int stria_setstripe(stria_fs_t *fs, const char *path, int32_t count, uint32_t size, int32_t offset)
{
    struct proto_attr a;
    int rc = lookup(fs, path, true, &a);
    if (rc == -ENOENT) {
        /* A new, empty file with this layout. */
        struct proto_open_req q = {.parent = ROOT_INO,
                                   .path = proto_str_c(path),
                                   .flags = O_CREAT | O_EXCL | O_WRONLY,
                                   .mode = 0666 & ~0u,
                                   .stripe_count = count ? count : 0,
                                   .stripe_size = size,
                                   .stripe_offset = offset};
        mode_t um = umask(0);
        umask(um);
        q.mode = 0666 & ~um;
        struct proto_open_rep *r = malloc(sizeof(*r));
        if (!r)
            return -ENOMEM;
        cl_cred(&q.cred);
        rc = MDT_CALL(fs, 0, open, &q, r, (void)0);
        free(r);
        return rc;
    }
    if (rc)
        return rc;
    struct proto_setstripe_req q = {.ino = a.ino, .count = count, .size = size, .offset = offset};
    struct proto_setstripe_rep *r = malloc(sizeof(*r));
    if (!r)
        return -ENOMEM;
    cl_cred(&q.cred);
    rc = MDT_CALL(fs, ino_mdt(a.ino), setstripe, &q, r, (void)0);
    free(r);
    return rc;
}

/* ---- cluster ---- */

int stria_cluster_info(stria_fs_t *fs, char *fsname, size_t len, uint64_t *epoch)
{
    int rc = cl_refresh_map(fs);
    if (rc)
        return rc;
    pthread_rwlock_rdlock(&fs->map_lock);
    if (fsname)
        snprintf(fsname, len, "%s", fs->fsname);
    if (epoch)
        *epoch = fs->epoch;
    pthread_rwlock_unlock(&fs->map_lock);
    return 0;
}

/* Ask a server for fresh figures of its targets. */
static int fresh_stats(stria_fs_t *fs, const struct map_target *m, struct proto_tstats *ts)
{
    struct lease l;
    int rc = cl_get(fs, m->kind, m->index, &l);
    if (rc)
        return rc;
    bool transport = false;
    if (m->kind == PROTO_NODE_META) {
        struct proto_statfs_req q = {0};
        struct proto_statfs_rep *r = malloc(sizeof(*r));
        rc = r ? net_call_statfs(l.c, &q, r, NULL, 0, NULL, 0, NULL, &transport) : -ENOMEM;
        if (rc == 0)
            *ts = r->targets;
        free(r);
    } else {
        struct proto_ostatfs_req q = {0};
        struct proto_ostatfs_rep *r = malloc(sizeof(*r));
        rc = r ? net_call_ostatfs(l.c, &q, r, NULL, 0, NULL, 0, NULL, &transport) : -ENOMEM;
        if (rc == 0)
            *ts = r->targets;
        free(r);
    }
    cl_put(&l, transport);
    return rc;
}

int stria_targets(stria_fs_t *fs, struct stria_target **out, size_t *n)
{
    struct cluster_map m = {0};
    int rc = get_map(fs, &m, NULL, 0);
    if (rc)
        return rc;
    struct stria_target *v = calloc(m.n ? m.n : 1, sizeof(*v));
    struct proto_tstats *ts = malloc(sizeof(*ts));
    if (!v || !ts) {
        free(v);
        free(ts);
        map_free(&m);
        return -ENOMEM;
    }
    size_t k = 0;
    /* MDTs first, then OSTs, each by index, as lfs df lists them. */
    for (int pass = 0; pass < 2; pass++) {
        uint8_t kind = pass == 0 ? PROTO_NODE_META : PROTO_NODE_STOR;
        for (uint32_t idx = 0, seen = 0; seen < map_count(&m, kind); idx++) {
            const struct map_target *t = map_find(&m, kind, idx);
            if (!t)
                continue;
            seen++;
            struct stria_target *o = &v[k++];
            snprintf(o->kind, sizeof(o->kind), "%s", pass == 0 ? "MDT" : "OST");
            o->index = t->index;
            o->online = t->state == MAP_ONLINE;
            snprintf(o->node, sizeof(o->node), "%s", t->node);
            snprintf(o->host, sizeof(o->host), "%s", t->host);
            o->port = t->port;
            o->heartbeat_age_ms = t->age_ms;
            struct proto_tstat s = t->stat;
            if (o->online && fresh_stats(fs, t, ts) == 0) {
                for (uint32_t j = 0; j < ts->n; j++)
                    if (ts->t[j].index == t->index)
                        s = ts->t[j];
            }
            o->bytes_total = s.bytes_total;
            o->bytes_used = s.bytes_used;
            o->bytes_avail = s.bytes_avail;
            o->inodes_total = s.inodes_total;
            o->inodes_used = s.inodes_used;
        }
    }
    free(ts);
    map_free(&m);
    *out = v;
    *n = k;
    return 0;
}

int stria_statfs(stria_fs_t *fs, struct statvfs *st)
{
    struct stria_target *v;
    size_t n;
    int rc = stria_targets(fs, &v, &n);
    if (rc)
        return rc;
    uint64_t total = 0, avail = 0, free_ = 0, files = 0, ffree = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].kind[0] == 'O') {
            total += v[i].bytes_total;
            avail += v[i].bytes_avail;
            free_ += v[i].bytes_total - MIN(v[i].bytes_used, v[i].bytes_total);
        } else {
            files += v[i].inodes_total;
            ffree += v[i].inodes_total - MIN(v[i].inodes_used, v[i].inodes_total);
        }
    }
    free(v);
    memset(st, 0, sizeof(*st));
    st->f_bsize = 1 << 20;
    st->f_frsize = 4096;
    st->f_blocks = total / 4096;
    st->f_bfree = free_ / 4096;
    st->f_bavail = avail / 4096;
    st->f_files = files;
    st->f_ffree = ffree;
    st->f_favail = ffree;
    st->f_namemax = PROTO_MAX_NAME;
    return 0;
}
