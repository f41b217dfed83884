/*
 * Calls for `stria fsck` and `stria scrub` on the storage side: list an OST's
 * objects and its fences, look an inode up by number, remove an object no
 * file owns and the fences of a file that is gone, check the checksums of an
 * OST's objects. The cluster's targets and OST pools
 * (`stria df`, `stria pool`), and the file system's capacity (statfs).
 *
 * stria_targets always asks every server: `stria df` and the admin
 * commands act on what it says. stria_statfs, which a mount's every df and
 * statvfs calls, keeps its answer for client.conf's statfs_max_age_ms
 * (Lustre's statfs_max_age), so that a stream of them costs one round of
 * requests a second rather than one each.
 */
#include "admin.h"
#include "inode.h"

#include "../common/util.h"
#include "../proto/layout.h"

#include <sys/statvfs.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OST_CALL(fs, ost, lname, q, r, use) TARGET_CALL(fs, PROTO_NODE_STOR, ost, lname, q, r, use)

/* LISTOBJ of one fan-out directory of OST ost: its objects, or its
 * inodes' fences. */
static int list_objects(stria_fs_t *fs, uint32_t ost, uint32_t fan, uint8_t fences,
                        struct stria_object **out, size_t *n, int *more)
{
    struct proto_listobj_req q = {.ost = ost, .fan = fan, .fences = fences};
    struct proto_listobj_rep r;
    *out = NULL;
    *n = 0;
    *more = 0;
    int drc = 0;
    int rc = OST_CALL(fs, ost, listobj, &q, &r, ({
                          size_t count = r.objects.len / 16;
                          struct stria_object *v = calloc(count ? count : 1, sizeof(*v));
                          struct proto_dec d;
                          proto_dec_init(&d, r.objects.p, r.objects.len);
                          for (size_t i = 0; v && i < count; i++) {
                              proto_get_U64(&d, &v[i].ino);
                              proto_get_U32(&d, &v[i].comp);
                              proto_get_U32(&d, &v[i].stripe);
                          }
                          drc = !v ? -ENOMEM : d.err ? -EPROTO : 0;
                          if (drc)
                              free(v);
                          else {
                              *out = v;
                              *n = count;
                              *more = r.more;
                          }
                      }));
    return rc ? rc : drc;
}

int stria_ost_objects(stria_fs_t *fs, uint32_t ost, uint32_t fan, struct stria_object **out,
                      size_t *n, int *more)
{
    return list_objects(fs, ost, fan, 0, out, n, more);
}

int stria_ost_fences(stria_fs_t *fs, uint32_t ost, uint32_t fan, struct stria_object **out,
                     size_t *n, int *more)
{
    return list_objects(fs, ost, fan, 1, out, n, more);
}

int stria_ost_forget_fences(stria_fs_t *fs, uint32_t ost, uint64_t ino)
{
    struct proto_fence_req q = {.ost = ost, .ino = ino, .op = FENCE_FORGET};
    struct proto_fence_rep r;
    return OST_CALL(fs, ost, fence, &q, &r, (void)0);
}

int stria_ost_destroy(stria_fs_t *fs, uint32_t ost, const struct stria_object *o)
{
    struct proto_destroy_req q = {.ost = ost, .ino = o->ino, .comp = o->comp, .stripe = o->stripe};
    struct proto_destroy_rep r;
    return OST_CALL(fs, ost, destroy, &q, &r, (void)0);
}

int stria_ost_scrub(stria_fs_t *fs, uint32_t ost, uint32_t fan, struct stria_scrub_report *out)
{
    struct proto_scrub_req q = {.ost = ost, .fan = fan};
    struct proto_scrub_rep r;
    memset(out, 0, sizeof(*out));
    int drc = 0;
    cl_long_call = true; /* one fan-out directory of a large OST takes long */
    int rc = OST_CALL(fs, ost, scrub, &q, &r, ({
                          size_t count = r.bad.len / 24;
                          out->objects = r.objects;
                          out->blocks = r.blocks;
                          out->bytes = r.bytes;
                          out->bad_blocks = r.bad_blocks;
                          if (count && !(out->bad = calloc(count, sizeof(*out->bad))))
                              drc = -ENOMEM;
                          for (size_t i = 0; out->bad && i < count; i++) {
                              const uint8_t *e = r.bad.p + 24 * i;
                              out->bad[i].obj.ino = proto_le64(e);
                              out->bad[i].obj.comp = proto_le32(e + 8);
                              out->bad[i].obj.stripe = proto_le32(e + 12);
                              out->bad[i].offset = proto_le64(e + 16);
                          }
                          out->nbad = out->bad ? count : 0;
                      }));
    cl_long_call = false;
    return rc ? rc : drc;
}

int stria_stat_ino(stria_fs_t *fs, uint64_t ino, struct stat *st)
{
    struct proto_attr a;
    int rc = cl_getattr(fs, ino, &a);
    if (rc == 0) {
        cl_merge_times(fs, &a);
        cl_to_stat(&a, st);
    }
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

/* The ops blob of a STATS reply, as the public struct, with the waits
 * blob's figures (the same opcodes; empty from an older server). */
static int decode_stats(const struct proto_blob *b, const struct proto_tblob *waits,
                        struct stria_op_stats **ops, size_t *n)
{
    _Static_assert(STRIA_STAT_BUCKETS == PROTO_STAT_BUCKETS, "one histogram on both sides");
    if (b->len % PROTO_STAT_LEN || waits->len % PROTO_WAIT_LEN)
        return -EPROTO;
    size_t count = b->len / PROTO_STAT_LEN, nwaits = waits->len / PROTO_WAIT_LEN;
    struct stria_op_stats *v = calloc(count ? count : 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p = b->p + i * PROTO_STAT_LEN;
        snprintf(v[i].op, sizeof(v[i].op), "%s", proto_op_name((uint16_t)(p[0] | p[1] << 8)));
        v[i].count = proto_le64(p + 2);
        v[i].errors = proto_le64(p + 10);
        v[i].total_ns = proto_le64(p + 18);
        v[i].max_ns = proto_le64(p + 26);
        for (unsigned k = 0; k < PROTO_STAT_BUCKETS; k++)
            v[i].hist[k] = proto_le64(p + 34 + 8 * k);
        for (size_t j = 0; j < nwaits; j++) {
            const uint8_t *w = waits->p + j * PROTO_WAIT_LEN;
            if (w[0] != p[0] || w[1] != p[1])
                continue;
            v[i].wait_ns = proto_le64(w + 2);
            v[i].wait_max_ns = proto_le64(w + 10);
            for (unsigned k = 0; k < PROTO_STAT_BUCKETS; k++)
                v[i].wait_hist[k] = proto_le64(w + 18 + 8 * k);
            break;
        }
    }
    *ops = v;
    *n = count;
    return 0;
}

/* The clients blob of a STATS reply, as the public struct (*v NULL when
 * it is empty). */
static int decode_clients(const struct proto_tblob *b, struct stria_client_stats **v, size_t *n)
{
    _Static_assert(sizeof((*v)->ip) == PROTO_CLIENT_IP, "one address length on both sides");
    if (b->len % PROTO_CLIENT_LEN)
        return -EPROTO;
    size_t count = b->len / PROTO_CLIENT_LEN;
    if (count && !(*v = calloc(count, sizeof(**v))))
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p = b->p + i * PROTO_CLIENT_LEN;
        struct stria_client_stats *c = &(*v)[i];
        c->client_id = proto_le64(p);
        c->requests = proto_le64(p + 8);
        c->service_ns = proto_le64(p + 16);
        c->wait_ns = proto_le64(p + 24);
        memcpy(c->ip, p + 32, PROTO_CLIENT_IP);
        c->ip[PROTO_CLIENT_IP - 1] = '\0'; /* whatever the server sent */
    }
    *n = count;
    return 0;
}

/* A STATS reply as the public structs (clients: NULL when not wanted). */
static int decode_reply(const struct proto_stats_rep *r, struct stria_op_stats **ops, size_t *n,
                        uint64_t *uptime_ns, struct stria_client_stats **clients, size_t *nclients)
{
    int rc = decode_stats(&r->ops, &r->waits, ops, n);
    if (rc == 0 && clients && (rc = decode_clients(&r->clients, clients, nclients))) {
        free(*ops);
        *ops = NULL;
        *n = 0;
    }
    *uptime_ns = r->uptime_ns;
    return rc;
}

int stria_server_stats(stria_fs_t *fs, int ost, uint32_t index, struct stria_op_stats **ops,
                       size_t *n, uint64_t *uptime_ns, struct stria_client_stats **clients,
                       size_t *nclients)
{
    *ops = NULL;
    *n = 0;
    if (clients) {
        *clients = NULL;
        *nclients = 0;
    }
    struct proto_stats_req q;
    struct proto_stats_rep r;
    int drc = 0;
    int rc = ost ? TARGET_CALL(fs, PROTO_NODE_STOR, index, stats, &q, &r,
                               drc = decode_reply(&r, ops, n, uptime_ns, clients, nclients))
                 : MDT_CALL(fs, index, stats, &q, &r,
                            drc = decode_reply(&r, ops, n, uptime_ns, clients, nclients));
    return rc ? rc : drc;
}

int stria_mdt_stats(stria_fs_t *fs, uint32_t mdt, struct stria_op_stats **ops, size_t *n,
                    uint64_t *uptime_ns)
{
    return stria_server_stats(fs, 0, mdt, ops, n, uptime_ns, NULL, NULL);
}

int stria_ost_stats(stria_fs_t *fs, uint32_t ost, struct stria_op_stats **ops, size_t *n,
                    uint64_t *uptime_ns)
{
    return stria_server_stats(fs, 1, ost, ops, n, uptime_ns, NULL, NULL);
}

int stria_mdt_fsck(stria_fs_t *fs, uint32_t mdt, int repair, struct stria_fsck_report *out,
                   char *text, size_t cap)
{
    return stria_mdt_fsck_fixes(fs, mdt, repair, NULL, 0, out, text, cap);
}

int stria_mdt_fsck_fixes(stria_fs_t *fs, uint32_t mdt, int repair, const void *fixes, size_t len,
                         struct stria_fsck_report *out, char *text, size_t cap)
{
    memset(out, 0, sizeof(*out));
    if (text && cap)
        text[0] = '\0';
    if (len > PROTO_MAX_REQ_PAYLOAD - 1024)
        return -E2BIG;
    struct proto_fsck_req q = {.repair = repair != 0, .fixes = {fixes, (uint32_t)len}};
    struct proto_fsck_rep r;
    cl_cred(&q.cred);
    cl_long_call = true; /* a large MDT takes long to walk */
    int rc = MDT_CALL(fs, mdt, fsck, &q, &r, ({
                          out->inodes = r.inodes;
                          out->entries = r.entries;
                          out->dangling = r.dangling;
                          out->orphans = r.orphans;
                          out->bad_nlink = r.bad_nlink;
                          out->bad_parent = r.bad_parent;
                          out->corrupt = r.corrupt;
                          out->fixed = r.fixed;
                          out->open_ops = r.open_ops;
                          if (r.refs.len && (out->refs = malloc(r.refs.len))) {
                              memcpy(out->refs, r.refs.p, r.refs.len);
                              out->refs_len = r.refs.len;
                          }
                          out->refs_full = r.refs_full || (r.refs.len && !out->refs);
                          if (text && cap) {
                              size_t len = r.text.len < cap - 1 ? r.text.len : cap - 1;
                              memcpy(text, r.text.p, len);
                              text[len] = '\0';
                          }
                      }));
    cl_long_call = false;
    return rc;
}

int stria_targets(stria_fs_t *fs, struct stria_target **out, size_t *n)
{
    struct cluster_map m = {0};
    int rc = cl_get_map(fs, &m, NULL, 0);
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
    const struct map_target *asked = NULL; /* the server ts came from */
    bool have = false;
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
            /* One server answers for all its targets: ask it once. */
            bool same = asked && asked->kind == t->kind && asked->port == t->port &&
                        !strcmp(asked->host, t->host);
            if (o->online && !same) {
                asked = t;
                have = fresh_stats(fs, t, ts) == 0;
            }
            if (o->online && have) {
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

int stria_mdt_dom(stria_fs_t *fs, uint32_t mdt, uint64_t *bytes, uint64_t *max)
{
    *bytes = *max = 0;
    struct lease l;
    int rc = cl_get(fs, PROTO_NODE_META, mdt, &l);
    if (rc)
        return rc;
    bool transport = false;
    struct proto_statfs_req q = {0};
    struct proto_statfs_rep *r = malloc(sizeof(*r));
    rc = r ? net_call_statfs(l.c, &q, r, NULL, 0, NULL, 0, NULL, &transport) : -ENOMEM;
    if (rc == 0) {
        *bytes = r->dom_bytes;
        *max = r->dom_max;
    }
    free(r);
    cl_put(&l, transport);
    return rc;
}

int stria_pools(stria_fs_t *fs, struct stria_pool **out, size_t *n)
{
    struct cluster_map m = {0};
    int rc = cl_get_map(fs, &m, NULL, 0);
    if (rc)
        return rc;
    /* One block: the pools, then their OSTs. */
    size_t osts = 0;
    for (uint32_t i = 0; i < m.npools; i++)
        osts += m.pools[i].n;
    struct stria_pool *v = malloc(sizeof(*v) * (m.npools ? m.npools : 1) + sizeof(uint32_t) * osts);
    if (!v) {
        map_free(&m);
        return -ENOMEM;
    }
    uint32_t *o = (uint32_t *)(v + (m.npools ? m.npools : 1));
    for (uint32_t i = 0; i < m.npools; i++) {
        memset(&v[i], 0, sizeof(v[i]));
        snprintf(v[i].name, sizeof(v[i].name), "%s", m.pools[i].name);
        v[i].nost = m.pools[i].n;
        v[i].ost = o;
        memcpy(o, m.pools[i].ost, sizeof(uint32_t) * m.pools[i].n);
        o += m.pools[i].n;
    }
    *out = v;
    *n = m.npools;
    map_free(&m);
    return 0;
}

static int pool_call(stria_fs_t *fs, uint8_t op, const char *pool, const uint32_t *osts, size_t n)
{
    if (!pool || !layout_pool_name_ok(pool, false) || n > MAP_MAX_TARGETS || (n && !osts))
        return -EINVAL;
    char fsname[64];
    int rc = stria_cluster_info(fs, fsname, sizeof(fsname), NULL);
    if (rc)
        return rc;
    uint8_t *blob = malloc(n ? n * 4 : 1);
    if (!blob)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        proto_put_le32(blob + 4 * i, osts[i]);
    struct proto_pool_req q = {.op = op,
                               .fsname = proto_str_c(fsname),
                               .pool = proto_str_c(pool),
                               .osts = {blob, (uint32_t)(n * 4)}};
    struct proto_pool_rep r;
    cl_cred(&q.cred);
    rc = TARGET_CALL(fs, PROTO_NODE_MGMT, 0, pool, &q, &r, (void)0);
    free(blob);
    return rc;
}

int stria_pool_new(stria_fs_t *fs, const char *pool)
{
    return pool_call(fs, PROTO_POOL_NEW, pool, NULL, 0);
}

int stria_pool_destroy(stria_fs_t *fs, const char *pool)
{
    return pool_call(fs, PROTO_POOL_DESTROY, pool, NULL, 0);
}

int stria_pool_add(stria_fs_t *fs, const char *pool, const uint32_t *osts, size_t n)
{
    return n ? pool_call(fs, PROTO_POOL_ADD, pool, osts, n) : -EINVAL;
}

int stria_pool_remove(stria_fs_t *fs, const char *pool, const uint32_t *osts, size_t n)
{
    return n ? pool_call(fs, PROTO_POOL_REMOVE, pool, osts, n) : -EINVAL;
}

/* The file system's capacity, from fresh figures of every target. */
static int statfs_ask(stria_fs_t *fs, struct statvfs *st)
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

int cl_statfs(stria_fs_t *fs, struct statvfs *st, int64_t max_age_ms)
{
    uint64_t max_ns = (uint64_t)max_age_ms * 1000000;
    pthread_mutex_lock(&fs->statfs_lock);
    uint64_t gen = fs->statfs_gen;
    for (;;) {
        /* Young enough, or the answer of the asking we waited for. */
        if (max_ns && fs->statfs_at_ns &&
            (util_now_mono_ns() - fs->statfs_at_ns < max_ns || fs->statfs_gen != gen)) {
            *st = fs->statfs_kept;
            pthread_mutex_unlock(&fs->statfs_lock);
            return 0;
        }
        if (!max_ns || !fs->statfs_asking)
            break;
        if (cl_cancelled()) {
            pthread_mutex_unlock(&fs->statfs_lock);
            return -EINTR;
        }
        struct timespec ts;
        util_deadline(&ts, CLOCK_MONOTONIC, 100); /* to see an interrupt */
        pthread_cond_timedwait(&fs->statfs_cond, &fs->statfs_lock, &ts);
    }
    /* This thread asks; those that come meanwhile wait for its answer
     * (unless they want their own: max_age_ms 0). */
    bool asker = max_ns != 0;
    if (asker)
        fs->statfs_asking = true;
    pthread_mutex_unlock(&fs->statfs_lock);
    uint64_t at = util_now_mono_ns();
    struct statvfs fresh;
    int rc = statfs_ask(fs, &fresh);
    pthread_mutex_lock(&fs->statfs_lock);
    if (rc == 0 && at >= fs->statfs_at_ns) {
        fs->statfs_kept = fresh;
        fs->statfs_at_ns = at;
        fs->statfs_gen++;
    }
    if (asker) {
        /* After a failure a waiter asks in turn: this thread's error may
         * be its own (an interrupt). */
        fs->statfs_asking = false;
        pthread_cond_broadcast(&fs->statfs_cond);
    }
    pthread_mutex_unlock(&fs->statfs_lock);
    if (rc == 0)
        *st = fresh;
    return rc;
}

int stria_statfs(stria_fs_t *fs, struct statvfs *st)
{
    /* Space that files removed here still hold is free to the program that
     * removed them (df after rm): the unlinks queued behind go first, then
     * the objects queued behind (a removal makes the kept answer stale). */
    if (fs->flush_removals)
        fs->flush_removals(fs);
    return cl_statfs(fs, st, fs->conf.statfs_max_age_ms);
}
