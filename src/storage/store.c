/*
 * The object store of stria-stord (store.h).
 *
 * An object is one file under its OST's directory, at the name
 * proto_obj_name gives it (objects/XX/<inode hex>.<component>.<stripe>),
 * beside its checksums (sums.h). An object's data and checksums change
 * together: a change holds the object's lock (one of OBJ_LOCKS striped
 * rwlocks) exclusively, a read or scrub shared, and every change takes
 * its OST's epoch lock shared and is noted in the epoch's log first
 * (recovery.h), so that a crash of the host leaves nothing unchecked.
 * Each OST counts the bytes its objects occupy: scanned at start-up, kept
 * up to date on every write, truncate and destroy, so `stria df` shows
 * what each OST holds even when several OSTs share one disk.
 *
 * A destroyed object is not unlinked but emptied and moved to the OST's
 * pool/ directory (up to POOL_MAX), and a write that makes a new object
 * takes one from there with a rename: allocating an inode costs the local
 * file system far more than a rename (ext4 without a journal scans every
 * inode freed in the last minutes of a block group on each allocation),
 * and a dataset or checkpoint rewritten after its old one went is where
 * small files are made most. A pooled file is empty and carries no
 * checksums; nothing but this file looks in pool/.
 *
 * Never here: decoding requests or encoding replies (stord.c does).
 */
#include "store.h"

#include "hsmstate.h"
#include "recovery.h"

#include "../common/crc.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../proto/csum.h"
#include "../proto/ids.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <dirent.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define POOL_DIR "pool"
#define POOL_MAX 65536u

pthread_rwlock_t *ost_obj_lock(struct stord *s, uint32_t ost, uint64_t ino, uint32_t comp,
                               uint32_t stripe)
{
    uint64_t h = util_mix64(ino ^ ((uint64_t)ost << 40) ^ ((uint64_t)comp << 20) ^ stripe);
    return &s->locks[h % OBJ_LOCKS];
}

struct ost *ost_find(struct stord *s, uint32_t index)
{
    for (int i = 0; i < s->nosts; i++)
        if (s->osts[i]->index == index)
            return s->osts[i];
    return NULL;
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

static void pool_name(char *buf, size_t len, uint64_t id)
{
    snprintf(buf, len, POOL_DIR "/%016" PRIx64, id);
}

/* Load the pool left by an earlier run (ids above every one seen); files
 * past POOL_MAX, or not empty (a crash while one was being emptied), go. */
static void pool_load(struct ost *o)
{
    pthread_mutex_init(&o->pool_lock, NULL);
    mkdirat(o->dirfd, POOL_DIR, 0700);
    int dfd = openat(o->dirfd, POOL_DIR, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char *end;
        uint64_t id = strtoull(de->d_name, &end, 16);
        struct stat st;
        bool keep = !*end && fstatat(dfd, de->d_name, &st, 0) == 0 && st.st_size == 0 &&
                    st.st_blocks == 0 && o->npool < POOL_MAX;
        if (keep && !o->pool && !(o->pool = malloc(POOL_MAX * sizeof(*o->pool))))
            keep = false;
        if (!keep) {
            unlinkat(dfd, de->d_name, 0);
            continue;
        }
        o->pool[o->npool++] = id;
        if (id >= o->pool_next)
            o->pool_next = id + 1;
    }
    closedir(d);
}

/* Make object name from a pooled file, if there is one: 0 when it is there
 * now, -ENOENT when the pool is empty (the caller creates it), -EEXIST if
 * the object exists already. Under the object's lock. */
static int pool_take(struct ost *o, const char *name)
{
    pthread_mutex_lock(&o->pool_lock);
    if (!o->npool) {
        pthread_mutex_unlock(&o->pool_lock);
        return -ENOENT;
    }
    uint64_t id = o->pool[--o->npool];
    pthread_mutex_unlock(&o->pool_lock);
    char pn[64];
    pool_name(pn, sizeof(pn), id);
    int rc = 0;
    if (renameat2(o->dirfd, pn, o->dirfd, name, RENAME_NOREPLACE) < 0)
        rc = -errno;
    if (rc == 0) {
        /* Its times are a new object's, so recovery sees it as one
         * (changed in this epoch). */
        utimensat(o->dirfd, name, NULL, 0);
        return 0;
    }
    if (rc == -EEXIST) { /* give it back */
        pthread_mutex_lock(&o->pool_lock);
        o->pool[o->npool++] = id;
        pthread_mutex_unlock(&o->pool_lock);
        return rc;
    }
    unlinkat(o->dirfd, pn, 0); /* not what we thought: create instead */
    return -ENOENT;
}

/* Empty object name and move it into the pool: 0, or -ENOSPC when the
 * pool is full (the caller unlinks it), another error if it failed (the
 * object is then left for the caller to unlink). Under the object's lock;
 * its checksum file is the caller's. */
static int pool_give(struct ost *o, const char *name)
{
    pthread_mutex_lock(&o->pool_lock);
    bool room = o->npool < POOL_MAX && (o->pool || (o->pool = malloc(POOL_MAX * sizeof(*o->pool))));
    uint64_t id = o->pool_next++;
    pthread_mutex_unlock(&o->pool_lock);
    if (!room)
        return -ENOSPC;
    int fd = openat(o->dirfd, name, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (ftruncate(fd, 0) < 0)
        rc = -errno;
    else
        rc = sums_clear_head(fd);
    close(fd);
    char pn[64];
    pool_name(pn, sizeof(pn), id);
    if (rc == 0 && renameat(o->dirfd, name, o->dirfd, pn) < 0)
        rc = -errno;
    if (rc)
        return rc;
    pthread_mutex_lock(&o->pool_lock);
    if (o->npool < POOL_MAX) {
        o->pool[o->npool++] = id;
        id = 0;
    }
    pthread_mutex_unlock(&o->pool_lock);
    if (id) /* filled meanwhile */
        unlinkat(o->dirfd, pn, 0);
    return 0;
}

int ost_open(const char *path, uint32_t index, struct ost **out)
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
    o->log_fd = -1;
    /* The switch to a new epoch must not wait behind a stream of changes
     * (glibc's rwlocks prefer readers unless told). */
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&o->epoch_lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    pthread_mutex_init(&o->log_lock, NULL);
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
        proto_obj_fan_dir(sub, sizeof(sub), (unsigned)i);
        if (mkdirat(o->dirfd, sub, 0700) < 0 && errno != EEXIST) {
            rc = -errno;
            log_error("OST%04x: cannot create %s/%s: %s", index, path, sub, log_err(rc));
            goto fail;
        }
    }
    pool_load(o);
    /* Without the mark of an orderly stop, the objects its logs name or
     * that changed since its oldest log's epoch are checked (recovery.h). */
    int64_t since = 0;
    struct recovery_names check = {0};
    bool recovering = false;
    if ((rc = recovery_start(o, &since, &check, &recovering))) {
        free(check.v);
        goto fail;
    }
    /* Count what the objects occupy. */
    for (int i = 0; i < 256; i++) {
        int err;
        DIR *d = ost_fan_open(o, (uint32_t)i, &err);
        if (!d)
            continue;
        int dfd = dirfd(d);
        proto_obj_fan_dir(sub, sizeof(sub), (unsigned)i);
        struct dirent *de;
        while ((de = readdir(d))) {
            struct stat st;
            if (de->d_name[0] == '.' || fstatat(dfd, de->d_name, &st, 0) < 0)
                continue;
            size_t nl = strlen(de->d_name);
            if (nl > 2 && !strcmp(de->d_name + nl - 2, ".c"))
                continue; /* an object's checksums */
            o->used += obj_bytes(&st);
            o->objects++;
            if (recovering) {
                char name[sizeof(sub) + sizeof(de->d_name) + 1];
                snprintf(name, sizeof(name), "%s/%s", sub, de->d_name);
                if ((rc = recovery_scan_add(&check, since, name, &st)))
                    recovering = false; /* out of memory: logged below */
            }
        }
        closedir(d);
    }
    if (rc) {
        log_error("OST%04x: cannot check what an unclean stop left: %s", index, log_err(rc));
        free(check.v);
        goto fail;
    }
    if (recovering)
        recovery_check(o, &check, since);
    free(check.v);
    if ((rc = recovery_epoch_begin(o))) {
        log_error("OST%04x: cannot begin its first sync epoch in %s: %s", index, path, log_err(rc));
        goto fail;
    }
    *out = o;
    return 0;
fail:
    if (o->log_fd >= 0)
        close(o->log_fd);
    close(o->dirfd);
    free(o->pool);
    free(o);
    return rc;
}

void ost_close(struct ost *o)
{
    recovery_stop(o);
    close(o->dirfd);
    free(o->pool);
    o->pool = NULL;
}

int ost_stat(struct ost *o, struct proto_tstat *t)
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

/* Change object name of o under its lock: fn(so, arg) makes the change
 * (how: SUMS_WRITE makes the object if it is missing, SUMS_CHANGE leaves a
 * missing one alone, answering 0). The bytes it occupies are counted
 * again, and a new object once. */
static int change_object(struct ost *o, const char *name, pthread_rwlock_t *lk, enum sums_how how,
                         int (*fn)(struct sums_obj *so, void *arg), void *arg)
{
    pthread_rwlock_rdlock(&o->epoch_lock);
    pthread_rwlock_wrlock(lk);
    struct sums_obj so;
    /* A new object comes from the pool when it can. */
    int rc = sums_open(o->dirfd, name, how == SUMS_WRITE && o->npool ? SUMS_CHANGE : how, &so);
    if (rc == -ENOENT && how == SUMS_WRITE) {
        pool_take(o, name);
        rc = sums_open(o->dirfd, name, how, &so);
    }
    so.how = how;
    if (rc) {
        pthread_rwlock_unlock(lk);
        pthread_rwlock_unlock(&o->epoch_lock);
        return rc == -ENOENT && how == SUMS_CHANGE ? 0 : rc;
    }
    struct stat st;
    uint64_t before = 0;
    bool created = false, have = fstat(so.fd, &st) == 0;
    if (have) {
        before = obj_bytes(&st);
        created = how == SUMS_WRITE && st.st_size == 0 && st.st_blocks == 0;
    }
    rc = recovery_note_change(o, name, have ? &st : NULL);
    if (rc == 0)
        rc = fn(&so, arg);
    if (fstat(so.fd, &st) == 0)
        account(o, before, obj_bytes(&st));
    if (created && rc == 0)
        atomic_fetch_add(&o->objects, 1);
    sums_close(&so);
    pthread_rwlock_unlock(lk);
    pthread_rwlock_unlock(&o->epoch_lock);
    return rc;
}

struct write_arg {
    const struct proto_write_req *q;
    const uint8_t *data;
    uint32_t len;
    struct ost *o;
    const char *name;
    bool direct;    /* around the page cache (direct_io_min) */
    bool writeback; /* start its writeback at once (writeback_min) */
};

static int write_fn(struct sums_obj *so, void *arg)
{
    struct write_arg *a = arg;
    int rc = sums_before_write(so, a->q->offset, a->data, a->len, a->q->crcs.p);
    if (rc)
        return rc;
    if (a->direct) {
        /* Its own descriptor: the checksums' reads of partial blocks need
         * the buffered one. Linux keeps the two coherent. */
        int dfd = openat(a->o->dirfd, a->name, O_WRONLY | O_DIRECT | O_CLOEXEC);
        if (dfd >= 0) {
            if (!atomic_exchange(&a->o->direct_seen, true))
                log_info("OST%04x: concurrent large writes go around the page cache (O_DIRECT)",
                         a->o->index);
            rc = util_pwrite_full(dfd, a->data, a->len, a->q->offset);
            close(dfd);
            if (rc != -EINVAL)
                return rc;
            atomic_store(&a->o->no_direct, true); /* it opens, but will not write */
        } else if (errno == EINVAL && !atomic_exchange(&a->o->no_direct, true)) {
            log_info("OST%04x: its file system refuses O_DIRECT: every write is buffered",
                     a->o->index);
        }
    }
    if ((rc = util_pwrite_full(so->fd, a->data, a->len, a->q->offset)))
        return rc;
    /* Hand the range to the disk now rather than when the kernel's dirty
     * limits say so: the disk works while the next pieces cross the
     * network, and the fsync at the end of a stream has little left to
     * write. Only a start: durability is still the fsync's (OSYNC). */
    if (a->writeback &&
        sync_file_range(so->fd, (off_t)a->q->offset, a->len, SYNC_FILE_RANGE_WRITE) == 0 &&
        !atomic_exchange(&a->o->early_seen, true))
        log_info("OST%04x: large writes start their writeback at once (writeback_min)",
                 a->o->index);
    return 0;
}

int ost_write(struct ost *o, const char *name, pthread_rwlock_t *lk,
              const struct proto_write_req *q, const uint8_t *data, uint32_t len, bool direct,
              bool writeback)
{
    struct write_arg a = {q, data, len, o, name, direct, writeback};
    return change_object(o, name, lk, SUMS_WRITE, write_fn, &a);
}

int ost_read_checked(struct ost *o, const char *name, struct sums_obj *so, uint64_t off,
                     uint32_t len, uint8_t *buf, uint32_t *at, uint32_t *got, uint8_t *crcs)
{
    *at = *got = 0;
    if (off >= so->size || len == 0)
        return 0;
    uint32_t want = (uint32_t)MIN((uint64_t)len, so->size - off);
    uint64_t first = off / PROTO_CSUM_BLOCK, from = first * PROTO_CSUM_BLOCK;
    uint64_t to = MIN(so->size, (off + want + PROTO_CSUM_BLOCK - 1) / PROTO_CSUM_BLOCK *
                                    (uint64_t)PROTO_CSUM_BLOCK);
    uint32_t n = (uint32_t)((to - from + PROTO_CSUM_BLOCK - 1) / PROTO_CSUM_BLOCK);
    int rc = util_pread_zero(so->fd, buf, to - from, from);
    if (rc)
        return rc;
    uint32_t bcrc[PROTO_MAX_BULK / PROTO_CSUM_BLOCK + 2];
    uint64_t bad;
    rc = sums_verify(so, first, n, buf, bcrc, &bad);
    if (rc == -EIO)
        log_error("checksum mismatch ost=%u object=%s offset=%" PRIu64 " (block of %u bytes)",
                  o->index, name, bad, PROTO_CSUM_BLOCK);
    if (rc)
        return rc;
    *at = (uint32_t)(off - from);
    *got = want;
    /* A chunk that is a whole block has the block's CRC already. */
    for (uint64_t c = off; c < off + want;) {
        uint32_t cl = proto_csum_chunk_len(c, (uint32_t)(off + want - c));
        uint64_t b = c / PROTO_CSUM_BLOCK;
        bool whole = c % PROTO_CSUM_BLOCK == 0 &&
                     c + cl == MIN(so->size, (b + 1) * (uint64_t)PROTO_CSUM_BLOCK);
        uint32_t v = whole ? bcrc[b - first] : crc32c(0, buf + (c - from), cl);
        proto_put_le32(crcs, v);
        crcs += 4;
        c += cl;
    }
    return 0;
}

static int truncate_fn(struct sums_obj *so, void *arg)
{
    uint64_t size = *(uint64_t *)arg;
    int rc = sums_before_resize(so, size);
    return rc ? rc : ftruncate(so->fd, (off_t)size) < 0 ? -errno : 0;
}

int ost_truncate(struct ost *o, const char *name, pthread_rwlock_t *lk, uint64_t size)
{
    return change_object(o, name, lk, SUMS_CHANGE, truncate_fn, &size);
}

int ost_destroy(struct ost *o, const char *name, pthread_rwlock_t *lk)
{
    struct stat st;
    pthread_rwlock_wrlock(lk);
    /* The restore state goes first: an object left without one is never
     * taken as restored, a state left without its object would be. */
    int rc = hsm_state_unlink(o->dirfd, name);
    if (rc) {
        pthread_rwlock_unlock(lk);
        return rc;
    }
    if (fstatat(o->dirfd, name, &st, 0) < 0)
        rc = errno == ENOENT ? 1 : -errno;
    else if (pool_give(o, name) && unlinkat(o->dirfd, name, 0) < 0)
        rc = errno == ENOENT ? 1 : -errno;
    sums_unlink(o->dirfd, name);
    pthread_rwlock_unlock(lk);
    if (rc)
        return rc > 0 ? 0 : rc;
    account(o, obj_bytes(&st), 0);
    uint64_t n = atomic_load(&o->objects);
    while (n && !atomic_compare_exchange_weak(&o->objects, &n, n - 1))
        ;
    return 0;
}

static int punch_fn(struct sums_obj *so, void *arg)
{
    const struct proto_punch_req *q = arg;
    int rc = sums_before_punch(so, q->offset, q->len);
    if (rc == 0 && fallocate(so->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)q->offset,
                             (off_t)q->len) < 0)
        rc = -errno;
    return rc;
}

int ost_punch(struct ost *o, const char *name, pthread_rwlock_t *lk,
              const struct proto_punch_req *q)
{
    return change_object(o, name, lk, SUMS_CHANGE, punch_fn, (void *)q);
}

DIR *ost_fan_open(struct ost *o, uint32_t fan, int *rc)
{
    char sub[32];
    proto_obj_fan_dir(sub, sizeof(sub), fan);
    int dfd = openat(o->dirfd, sub, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        *rc = -errno;
        if (dfd >= 0)
            close(dfd);
    }
    return d;
}

bool ost_fan_object(uint32_t fan, const char *d_name, uint64_t *ino, uint32_t *comp,
                    uint32_t *stripe, char name[96])
{
    char tail;
    if (sscanf(d_name, "%16" SCNx64 ".%u.%u%c", ino, comp, stripe, &tail) != 3)
        return false; /* its checksums (.c), or a stranger */
    proto_obj_name(name, PROTO_OBJ_NAME_MAX, *ino, *comp, *stripe);
    /* Named in full as it would be, after its "objects/FF/". */
    return proto_obj_fan(*ino) == fan && !strcmp(name + sizeof("objects/ff/") - 1, d_name);
}

bool ost_list_put(struct proto_enc *e, uint64_t ino, uint32_t comp, uint32_t stripe)
{
    size_t before = e->len;
    proto_put_U64(e, &ino);
    proto_put_U32(e, &comp);
    proto_put_U32(e, &stripe);
    if (!e->err)
        return true;
    e->len = before;
    e->err = 0;
    return false;
}
