/*
 * stria-stord: serves object storage targets (OSTs).
 *
 * An OST is a directory on a local file system holding one file per
 * object, named by (inode, component, stripe) and fanned out over 256
 * subdirectories by inode (DESIGN §5): the local file system provides
 * allocation, sparse files and crash recovery. Objects are created by
 * their first write; a missing object reads as a hole.
 *
 * Every object has a CRC32C per 32 KiB block beside it (sums.h): a write's
 * data is checked against the client's checksums on receipt, every read
 * checks the blocks it touches, and SCRUB checks them all.
 *
 * This file is the service: its configuration table, main, the request
 * handlers (decode, check, call the store, encode the reply) and the
 * heartbeats. The objects themselves are the store's (store.h), the
 * crash recovery epochs recovery.h's; neither calls back up into here.
 */
#include "../common/config.h"
#include "../common/daemon.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../net/hb.h"
#include "../net/metrics.h"
#include "../net/net.h"
#include "../proto/csum.h"
#include "../proto/ids.h"
#include "fence.h"
#include "mover.h"
#include "push.h"
#include "recovery.h"
#include "store.h"
#include "sums.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_OBJECT_SIZE (1ull << 50)

struct stord_conf {
    struct daemon_conf d;
    struct cfg_list ost;
    uint64_t direct_io_min;
    uint64_t writeback_min;
    uint64_t sendfile_min;
    int64_t sync_interval;
    int64_t mover_threads;
    int64_t mover_streams;
};

static const struct cfg_option stord_options[] = {
    DAEMON_BASE_OPTIONS(struct stord_conf, "7402"),
    DAEMON_NODE_OPTIONS(struct stord_conf),
    {"ost", CFG_LIST, 0, 0, NULL, true,
     "an object storage target to serve, as INDEX:DIRECTORY; repeat for each OST",
     offsetof(struct stord_conf, ost)},
    {"direct_io_min", CFG_SIZE, 0, 64 << 20, "0", false,
     "a write of at least this many bytes, 4 KiB-aligned, that arrives while another write to "
     "its OST is in progress goes around the page cache (O_DIRECT; 0: never): a checkpoint "
     "burst then reaches the disks without a copy into memory (measure first: on a disk that "
     "writes back as fast, writeback_min alone is faster)",
     offsetof(struct stord_conf, direct_io_min)},
    {"writeback_min", CFG_SIZE, 0, 64 << 20, "512K", false,
     "a buffered write of at least this many bytes starts on its way to the disk as soon as it "
     "is in the page cache (sync_file_range; 0: the kernel decides when): a stream's final "
     "fsync then finds its data already written",
     offsetof(struct stord_conf, writeback_min)},
    {"sendfile_min", CFG_SIZE, 0, 64 << 20, "32K", false,
     "a read of at least this many bytes of whole checksum blocks goes from the page cache "
     "straight to the socket (sendfile; 0: never), unread by the OST: the client checks the "
     "blocks' kept checksums and asks again for a checked read if one fails",
     offsetof(struct stord_conf, sendfile_min)},
    {"sync_interval", CFG_INT, 1, 3600, "30", false,
     "seconds between the syncs that bound what an unclean stop leaves to check: after a "
     "crash of the host, the objects changed since the last of them have their checksums "
     "checked and, where a block's write reached the disk only in part, summed again",
     offsetof(struct stord_conf, sync_interval)},
    {"mover_threads", CFG_INT, 0, 64, "2", false,
     "threads that fetch, after a read of a released file has its own range from S3, the rest "
     "of the file's objects on this host (0: only what readers and restores ask for)",
     offsetof(struct stord_conf, mover_threads)},
    {"mover_streams", CFG_INT, 1, 64, "8", false,
     "ranged GETs (of up to 8 MiB) in flight per object being restored from S3: more streams "
     "fill a fast link from a distant endpoint, at 8 MiB of memory each",
     offsetof(struct stord_conf, mover_streams)},
};

static const struct cfg_table stord_table = {"stria-stord",
                                             "Stria storage service: serves object storage targets",
                                             stord_options, ARRAY_SIZE(stord_options)};

/* ---- handlers ---- */

#define DECODE(lname)                                                                              \
    struct proto_##lname##_req q;                                                                  \
    if (proto_dec_##lname##_req(&req->dec, &q))                                                    \
        return -EBADMSG;                                                                           \
    struct ost *o = ost_find(s, q.ost);                                                            \
    if (!o)                                                                                        \
        return -ENXIO;                                                                             \
    char name[96];                                                                                 \
    proto_obj_name(name, sizeof(name), q.ino, q.comp, q.stripe);                                   \
    pthread_rwlock_t *lk = ost_obj_lock(s, q.ost, q.ino, q.comp, q.stripe)

static int h_write(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    (void)rep;
    DECODE(write);
    if (q.offset > MAX_OBJECT_SIZE || req->bulk_len > MAX_OBJECT_SIZE - q.offset)
        return -EFBIG;
    uint64_t bad;
    int rc = proto_csum_check(q.offset, req->bulk, req->bulk_len, &q.crcs, NULL, &bad);
    if (rc == -EBADMSG)
        return rc;
    if (rc) {
        log_error("checksum mismatch on receipt ost=%u object=%s offset=%" PRIu64 " peer=%s",
                  o->index, name, bad, req->peer);
        return rc;
    }
    /* A write that meets others on its OST (a checkpoint burst) skips the
     * page cache when it is large and aligned; a lone stream keeps it,
     * since its writes then return before the disk has them. */
    int others = atomic_fetch_add(&o->writing, 1);
    bool direct = s->direct_io_min && others > 0 && !atomic_load(&o->no_direct) &&
                  req->bulk_len >= s->direct_io_min && q.offset % 4096 == 0 &&
                  req->bulk_len % 4096 == 0 && (uintptr_t)req->bulk % 4096 == 0;
    bool writeback = s->writeback_min && req->bulk_len >= s->writeback_min;
    struct fence_pass fp;
    if (!(rc = fence_begin(s, q.ost, q.ino, q.comp, q.stripe, true, &fp))) {
        rc = ost_write(o, name, lk, &q, req->bulk, req->bulk_len, direct, writeback);
        fence_end(s, &fp, rc == 0);
        if (rc)
            log_warn("write failed ost=%u object=%s offset=%" PRIu64 ": %s", o->index, name,
                     q.offset, log_err(rc));
    }
    atomic_fetch_sub(&o->writing, 1);
    return rc;
}

/* Send [off, off + len) of the object from the page cache, unread, with
 * the kept checksums of its blocks for the client to check: 1 if done
 * (the reply is encoded and so->fd handed to the server), 0 if the range
 * does not qualify (not whole blocks, or a block without a checksum). */
static int read_unread(struct sums_obj *so, uint64_t off, uint32_t len, struct net_rep *rep)
{
    if (off % PROTO_CSUM_BLOCK || off >= so->size)
        return 0;
    uint32_t want = (uint32_t)MIN((uint64_t)len, so->size - off);
    if (want % PROTO_CSUM_BLOCK && off + want != so->size)
        return 0;
    uint32_t n = proto_csum_chunks(off, want);
    enum { MAXB = PROTO_MAX_BULK / PROTO_CSUM_BLOCK };
    uint8_t ents[MAXB * 8], crcs[MAXB * 4], alt[MAXB * 4];
    if (n > MAXB || sums_entries(so, off / PROTO_CSUM_BLOCK, n, ents))
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!proto_le32(ents + 8 * i))
            return 0; /* a block without a checksum: read and send it here */
        memcpy(crcs + 4 * i, ents + 8 * i, 4);
        memcpy(alt + 4 * i, ents + 8 * i + 4, 4); /* 0: no earlier CRC */
    }
    struct proto_read_rep r = {.crcs = {crcs, 4 * n}, .alt = {alt, 4 * n}};
    int rc = proto_enc_read_rep(&rep->enc, &r);
    if (rc)
        return rc;
    rep->bulk_in_file = true;
    rep->bulk_fd = so->fd;
    rep->bulk_off = off;
    rep->bulk_len = want;
    so->fd = -1;
    return 1;
}

static int read_object(struct stord *s, struct ost *o, const char *name, pthread_rwlock_t *lk,
                       const struct proto_read_req *qp, struct net_req *req, struct net_rep *rep)
{
    struct proto_read_req q = *qp;
    pthread_rwlock_rdlock(lk);
    struct sums_obj so;
    int rc = sums_open(o->dirfd, name, SUMS_READ, &so);
    if (rc) {
        pthread_rwlock_unlock(lk);
        if (rc != -ENOENT)
            return rc;
        struct proto_read_rep none = {.crcs = {NULL, 0}}; /* never written: a hole */
        return proto_enc_read_rep(&rep->enc, &none);
    }
    if (s->sendfile_min && q.len >= s->sendfile_min && !(q.flags & PROTO_READ_CHECKED)) {
        rc = read_unread(&so, q.offset, q.len, rep);
        if (rc) {
            sums_close(&so);
            pthread_rwlock_unlock(lk);
            return rc < 0 ? rc : 0;
        }
    }
    uint32_t nchunks = proto_csum_chunks(q.offset, q.len);
    uint8_t *buf = net_scratch(req, q.len + 2 * PROTO_CSUM_BLOCK + 4 * nchunks);
    uint32_t at = 0, got = 0;
    if (!buf)
        rc = -ENOMEM;
    else
        rc = ost_read_checked(o, name, &so, q.offset, q.len, buf, &at, &got,
                              buf + q.len + 2 * PROTO_CSUM_BLOCK);
    sums_close(&so);
    pthread_rwlock_unlock(lk);
    if (rc)
        return rc;
    rep->bulk = buf + at;
    rep->bulk_len = got;
    struct proto_read_rep r = {
        .crcs = {buf + q.len + 2 * PROTO_CSUM_BLOCK, 4 * proto_csum_chunks(q.offset, got)}};
    return proto_enc_read_rep(&rep->enc, &r);
}

static int h_read(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    DECODE(read);
    if (q.len > PROTO_MAX_BULK)
        return -EINVAL;
    /* A dead fence: its file has another layout, which the client asks
     * for. Held through the read, which a fence turning dead waits for,
     * so no read finds the object destroyed after its check. */
    struct fence_pass fp;
    int rc = fence_begin(s, q.ost, q.ino, q.comp, q.stripe, false, &fp);
    if (rc)
        return rc;
    rc = read_object(s, o, name, lk, &q, req, rep);
    fence_end(s, &fp, false);
    return rc;
}

static int h_truncate(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    (void)rep;
    DECODE(truncate);
    if (q.size > MAX_OBJECT_SIZE)
        return -EFBIG;
    /* A missing object is already empty. */
    struct fence_pass fp;
    int rc = fence_begin(s, q.ost, q.ino, q.comp, q.stripe, true, &fp);
    if (!rc) {
        rc = ost_truncate(o, name, lk, q.size);
        fence_end(s, &fp, rc == 0);
    }
    return rc;
}

static int h_destroy(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    (void)rep;
    DECODE(destroy);
    if (q.more.len % PROTO_DESTROY_ENTRY || q.more.len / PROTO_DESTROY_ENTRY >= PROTO_MAX_DESTROY)
        return -EINVAL;
    int first = ost_destroy(o, name, lk);
    for (uint32_t i = 0; i < q.more.len / PROTO_DESTROY_ENTRY; i++) {
        const uint8_t *e = q.more.p + PROTO_DESTROY_ENTRY * i;
        uint64_t ino = proto_le64(e);
        uint32_t comp = proto_le32(e + 8), stripe = proto_le32(e + 12);
        proto_obj_name(name, sizeof(name), ino, comp, stripe);
        int rc = ost_destroy(o, name, ost_obj_lock(s, q.ost, ino, comp, stripe));
        first = first ? first : rc;
    }
    return first;
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
    /* Nothing there: already a hole. */
    struct fence_pass fp;
    int rc = fence_begin(s, q.ost, q.ino, q.comp, q.stripe, true, &fp);
    if (!rc) {
        rc = ost_punch(o, name, lk, &q);
        fence_end(s, &fp, rc == 0);
    }
    return rc;
}

static int h_osync(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    (void)rep;
    DECODE(osync);
    (void)lk; /* a sync changes nothing a reader sees */
    struct sums_obj so;
    int rc = sums_open(o->dirfd, name, SUMS_READ, &so);
    if (rc)
        return rc == -ENOENT ? 0 : rc;
    rc = sums_sync(&so);
    sums_close(&so);
    return rc;
}

/* The OST of a request about one of its 256 fan-out directories; NULL
 * with *rc for an unknown OST or directory. */
static struct ost *fan_ost(struct stord *s, uint32_t ost, uint32_t fan, int *rc)
{
    struct ost *o = ost_find(s, ost);
    *rc = !o ? -ENXIO : fan > 255 ? -EINVAL : 0;
    return *rc ? NULL : o;
}

/* SCRUB: check every block of every object of one fan-out directory. */
static int h_scrub(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    struct proto_scrub_req q;
    if (proto_dec_scrub_req(&req->dec, &q))
        return -EBADMSG;
    int rc = 0;
    struct ost *o = fan_ost(s, q.ost, q.fan, &rc);
    if (!o)
        return rc;
    const uint32_t win = 32 * PROTO_CSUM_BLOCK, cap = 24 * 1024;
    uint8_t *buf = net_scratch(req, win + cap);
    if (!buf)
        return -ENOMEM;
    uint8_t *bad = buf + win;
    DIR *d = ost_fan_open(o, q.fan, &rc);
    if (!d)
        return rc;
    struct proto_scrub_rep r = {0};
    uint32_t nbad = 0;
    struct dirent *de;
    while ((de = readdir(d)) && !rc) {
        uint64_t ino;
        uint32_t comp, stripe;
        char name[96];
        if (!ost_fan_object(q.fan, de->d_name, &ino, &comp, &stripe, name))
            continue;
        pthread_rwlock_t *lk = ost_obj_lock(s, q.ost, ino, comp, stripe);
        pthread_rwlock_rdlock(lk);
        struct sums_obj so;
        int orc = sums_open(o->dirfd, name, SUMS_READ, &so);
        if (orc) {
            pthread_rwlock_unlock(lk);
            if (orc != -ENOENT)
                rc = orc;
            continue;
        }
        r.objects++;
        for (uint64_t at = 0; at < so.size && !rc;) {
            uint32_t len = (uint32_t)MIN((uint64_t)win, so.size - at);
            if (util_pread_zero(so.fd, buf, len, at))
                memset(buf, 0, len); /* unreadable: its blocks fail their checks */
            uint32_t nb = (len + PROTO_CSUM_BLOCK - 1) / PROTO_CSUM_BLOCK;
            /* Each block by itself, to name every bad one. */
            for (uint32_t i = 0; i < nb; i++) {
                uint64_t boff;
                r.blocks++;
                if (sums_verify(&so, at / PROTO_CSUM_BLOCK + i, 1,
                                buf + (size_t)i * PROTO_CSUM_BLOCK, NULL, &boff) != -EIO)
                    continue;
                r.bad_blocks++;
                log_error("scrub: checksum mismatch ost=%u object=%s offset=%" PRIu64, o->index,
                          name, boff);
                if ((nbad + 1) * 24 <= cap) {
                    uint8_t *e = bad + nbad++ * 24;
                    proto_put_le64(e, ino);
                    proto_put_le32(e + 8, comp);
                    proto_put_le32(e + 12, stripe);
                    proto_put_le64(e + 16, boff);
                }
            }
            r.bytes += len;
            at += len;
        }
        sums_close(&so);
        pthread_rwlock_unlock(lk);
    }
    closedir(d);
    if (rc)
        return rc;
    r.bad = (struct proto_blob){bad, nbad * 24};
    return proto_enc_scrub_rep(&rep->enc, &r);
}
#undef DECODE

/* The objects of one fan-out directory, as LISTOBJ lists them, into e. */
static int list_objects(struct ost *o, uint32_t fan, struct proto_enc *e, bool *more)
{
    int rc = 0;
    DIR *d = ost_fan_open(o, fan, &rc);
    if (!d)
        return rc;
    *more = false;
    struct dirent *de;
    while ((de = readdir(d))) {
        uint64_t ino;
        uint32_t comp, stripe;
        char name[96];
        if (!ost_fan_object(fan, de->d_name, &ino, &comp, &stripe, name))
            continue; /* not a name this server would give: not one of its objects */
        if (!ost_list_put(e, ino, comp, stripe)) {
            *more = true;
            break;
        }
    }
    closedir(d);
    return 0;
}

/* The objects of one fan-out directory, or its inodes' fences, for stria
 * fsck. */
static int h_listobj(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    struct proto_listobj_req q;
    if (proto_dec_listobj_req(&req->dec, &q))
        return -EBADMSG;
    int rc = 0;
    struct ost *o = fan_ost(s, q.ost, q.fan, &rc);
    if (!o)
        return rc;
    uint32_t cap = PROTO_MAX_REP_PAYLOAD - 64;
    uint8_t *buf = net_scratch(req, cap);
    if (!buf)
        return -ENOMEM;
    struct proto_enc e;
    proto_enc_init(&e, buf, cap);
    bool more = false;
    if (q.fences)
        fence_list(s, o, q.fan, &e, &more);
    else if ((rc = list_objects(o, q.fan, &e, &more)))
        return rc;
    struct proto_listobj_rep r = {.objects = {buf, (uint32_t)e.len}, .more = more};
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

/* Every sync_interval: a new epoch on each OST (recovery.h). */
static void epoch_tick(void *arg)
{
    struct stord *s = arg;
    for (int i = 0; i < s->nosts; i++) {
        int rc = recovery_epoch_begin(s->osts[i]);
        if (rc)
            log_error("OST%04x: cannot sync for crash recovery (a crash would check more): %s",
                      s->osts[i]->index, log_err(rc));
    }
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
    if (conf.direct_io_min % 4096) {
        fprintf(stderr, "stria-stord: direct_io_min must be a multiple of 4K\n");
        free(s);
        return 2;
    }
    recovery_boot_load();
    s->direct_io_min = conf.direct_io_min;
    s->writeback_min = conf.writeback_min;
    s->sendfile_min = conf.sendfile_min;
    for (int i = 0; i < OBJ_LOCKS; i++)
        pthread_rwlock_init(&s->locks[i], NULL);
    for (int i = 0; i < conf.ost.count; i++) {
        uint32_t index;
        const char *path;
        if (util_parse_target(conf.ost.items[i], &index, &path)) {
            fprintf(stderr, "stria-stord: ost '%s' is not INDEX:DIRECTORY\n", conf.ost.items[i]);
            return 2;
        }
        if (ost_find(s, index)) {
            fprintf(stderr, "stria-stord: OST %u is listed twice\n", index);
            return 2;
        }
        if ((rc = ost_open(path, index, &s->osts[s->nosts])))
            return 1;
        s->nosts++;
    }
    if (fence_init(s))
        return 1;
    char node[256], adv[256];
    daemon_names(&conf.d, node, sizeof(node), adv, sizeof(adv));
    struct net_server_opts so = {.host = conf.d.listen.host,
                                 .port = conf.d.listen.port,
                                 .key = &key,
                                 .max_conns = daemon_max_conns(&conf.d),
                                 .max_workers = (int)conf.d.workers,
                                 .handshake_ms = (int)conf.d.handshake_timeout_ms,
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
    so.handlers[PROTO_OP_SCRUB] = h_scrub;
    so.handlers[PROTO_OP_HSM_PULL] = mover_h_pull;
    so.handlers[PROTO_OP_S3_LIST] = mover_h_list;
    so.handlers[PROTO_OP_S3_HEAD] = mover_h_head;
    so.handlers[PROTO_OP_S3_DELETE] = mover_h_delete;
    so.handlers[PROTO_OP_HSM_PUSH] = push_h_push;
    so.handlers[PROTO_OP_FENCE] = fence_h_fence;
    char key_path[PATH_MAX];
    if (!realpath(conf.d.key_file, key_path))
        snprintf(key_path, sizeof(key_path), "%s", conf.d.key_file);
    if (mover_start(s, (unsigned)conf.mover_threads, (unsigned)conf.mover_streams) ||
        push_start(s, conf.d.mgmt.host, conf.d.mgmt.port, key_path))
        return 1;
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
    struct net_metrics *metrics = NULL;
    struct net_metrics_source ms = {"stria-stord", NULL, srv};
    if (conf.d.metrics.port &&
        net_metrics_start(conf.d.metrics.host, conf.d.metrics.port, &ms, 1, &metrics))
        return 1;
    int sig = daemon_wait((int)conf.sync_interval * 1000, epoch_tick, s);
    log_info("signal %d: stopping", sig);
    net_metrics_stop(metrics);
    hb_stop(hb);
    net_server_stop(srv);
    push_stop();
    mover_stop(s);
    fence_fini(s);
    for (int i = 0; i < s->nosts; i++) {
        ost_close(s->osts[i]);
        free(s->osts[i]);
    }
    free(s);
    cfg_free(&stord_table, &conf);
    return 0;
}
