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
 *
 * Every object has a CRC32C per 32 KiB block beside it (sums.h): a write's
 * data is checked against the client's checksums on receipt, every read
 * checks the blocks it touches, and SCRUB checks them all.
 */
#include "../common/config.h"
#include "../common/crc.h"
#include "../proto/ids.h"
#include "../common/daemon.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../net/hb.h"
#include "../net/net.h"
#include "../proto/csum.h"
#include "sums.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <inttypes.h>
#include <pthread.h>
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
    uint64_t direct_io_min;
    uint64_t writeback_min;
    uint64_t sendfile_min;
    int64_t sync_interval;
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
    _Atomic int writing;      /* writes in progress */
    _Atomic bool no_direct;   /* its file system refused O_DIRECT */
    _Atomic bool direct_seen; /* a write went around the page cache (logged once) */
    _Atomic bool early_seen;  /* a write started its writeback at once (logged once) */
    /* Crash safety of the checksums (below): a change takes epoch_lock
     * shared, the switch to a new epoch exclusively. */
    pthread_rwlock_t epoch_lock;
    pthread_mutex_t log_lock; /* appends to the epoch's log */
    int log_fd;               /* the epoch's log; -1: none */
    int64_t epoch_ns;         /* objects last changed before it were on disk at its start */
};

#define OBJ_LOCKS 256

struct stord {
    struct ost *osts[MAX_OSTS];
    int nosts;
    /* An object's data and checksums change together: a write, truncate or
     * punch holds its lock exclusively, a read or scrub shared. */
    pthread_rwlock_t locks[OBJ_LOCKS];
    uint64_t direct_io_min; /* 0: never O_DIRECT */
    uint64_t writeback_min; /* 0: never start writeback early */
    uint64_t sendfile_min;  /* 0: every read is read and checked here */
};

static pthread_rwlock_t *obj_lock(struct stord *s, uint32_t ost, uint64_t ino, uint32_t comp,
                                  uint32_t stripe)
{
    uint64_t h = util_mix64(ino ^ ((uint64_t)ost << 40) ^ ((uint64_t)comp << 20) ^ stripe);
    return &s->locks[h % OBJ_LOCKS];
}

static struct ost *find_ost(struct stord *s, uint32_t index)
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

/* ---- crash safety of the checksums ----
 *
 * An object's checksums are written before its data, and the page cache
 * keeps the two together while the host runs. A power loss can leave on
 * disk a block that matches none of its entries: written twice since its
 * data last reached the disk, or with only some of its pages written back.
 * Such a block would answer EIO for good, bytes an earlier fsync made
 * durable with it. So each OST bounds which objects can hold one:
 *
 *  - Time runs in epochs of sync_interval. An epoch starts with its log
 *    (dirty.NS, NS its start in ns) made durable, then a syncfs of the
 *    OST's file system: what changed before the epoch is then on disk.
 *  - An object last changed (mtime) before the epoch began was on disk as
 *    it is: its first change in the epoch appends its name to the log,
 *    durably, before the change. Its mtime then lies in the epoch, so
 *    later changes need nothing.
 *  - An object made in the epoch has an mtime in it on disk whenever any
 *    of its data is (ext4 orders a new block's data before the inode that
 *    points at it).
 *  - The log of the epoch before goes once the sync that ended it is done.
 *  - An orderly stop syncs and leaves a file "clean". A start without it,
 *    after a restart of the host (each log names the boot it was written
 *    in), checks every object named in a log or changed since the oldest
 *    log's epoch, and gives each block that matches none of its entries
 *    the checksum of what it holds (sums_heal), logged at warning. Those
 *    bytes were never synced: a crash may leave them old or new, and now
 *    they read as they are; the objects no log names and no recent change
 *    touched keep every check. A kill of the daemon alone (same boot)
 *    checks nothing: the page cache kept data and entries together, so a
 *    failing block there is damage and must stay visible.
 *
 * What it costs: a syncfs per OST every sync_interval, on the main thread,
 * and a small synced append the first time in an epoch that an object
 * already on disk changes (a checkpoint's new files, or a dataset's, need
 * none). At a start after a crash, a read of what changed in the last
 * epoch or two. */
#define LOG_PREFIX   "dirty."
#define CLEAN_FILE   "clean"
#define BOOT_LINE    "boot "
#define LOG_PREALLOC (256 << 10) /* ~7,000 names: appends rarely need a block */

/* This boot of the host (the kernel's boot_id; "" if unknown), read at
 * start-up. A log written in this boot says that its OST's page cache
 * outlived the stop, data and entries together: then nothing a crash of
 * the host leaves can be there, and a block failing its check is damage,
 * not to be summed again. */
static char boot[64];

static void boot_load(void)
{
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, boot, sizeof(boot) - 1) : -1;
    if (fd >= 0)
        close(fd);
    boot[n > 0 ? n : 0] = '\0';
    boot[strcspn(boot, "\n")] = '\0';
    if (!boot[0])
        log_warn("the host's boot id is unknown: every unclean stop counts as a crash of the host");
}

static int64_t ts_ns(const struct timespec *t)
{
    return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static void log_name(char *buf, size_t len, int64_t epoch)
{
    snprintf(buf, len, LOG_PREFIX "%" PRId64, epoch);
}

/* The object names a recovery checks (each at most 95 bytes). */
struct names {
    char (*v)[96];
    size_t n, cap;
};

/* Whether name is an object's: objects/XX/INODE.COMP.STRIPE, INODE 16
 * hex digits (what proto_obj_name makes; a log's line torn by a crash, or
 * anything else, is not). */
static bool object_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n < 31 || n >= 96 || strncmp(name, "objects/", 8) || name[10] != '/' || name[27] != '.')
        return false;
    for (size_t i = 8; i < 27; i++)
        if (i != 10 && !((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    int dots = 0;
    for (size_t i = 27; i < n; i++) {
        if (name[i] == '.' && i + 1 < n && name[i - 1] != '.')
            dots++;
        else if (name[i] < '0' || name[i] > '9')
            return false;
    }
    return dots == 2;
}

static int names_add(struct names *l, const char *name)
{
    if (!object_name_ok(name))
        return 0; /* not an object's */
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        void *v = realloc(l->v, cap * sizeof(*l->v));
        if (!v)
            return -ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    snprintf(l->v[l->n++], sizeof(*l->v), "%s", name);
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The first line of a log: the boot it was written in. */
static int boot_line(char *buf, size_t len)
{
    return snprintf(buf, len, BOOT_LINE "%s\n", boot);
}

/* Whether a name in an OST's directory is a log, and of which epoch. */
static bool log_epoch(const char *name, int64_t *e)
{
    return !strncmp(name, LOG_PREFIX, strlen(LOG_PREFIX)) &&
           !util_parse_i64(name + strlen(LOG_PREFIX), e) && *e > 0;
}

/* o's directory, to list (its own descriptor: o->dirfd stays as it is). */
static DIR *ost_dir(struct ost *o)
{
    int dfd = openat(o->dirfd, ".", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d && dfd >= 0)
        close(dfd);
    return d;
}

/* The logs in o's directory: the oldest epoch into *oldest (0: none), the
 * names they hold into names, and whether one of them was written in
 * another boot of the host (or says none). */
static int logs_read(struct ost *o, int64_t *oldest, struct names *names, bool *rebooted)
{
    *oldest = 0;
    *rebooted = false;
    DIR *d = ost_dir(o);
    if (!d)
        return -errno;
    char want[96];
    size_t wl = (size_t)boot_line(want, sizeof(want));
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        int64_t e;
        if (!log_epoch(de->d_name, &e))
            continue;
        if (!*oldest || e < *oldest)
            *oldest = e;
        char path[sizeof(o->path) + sizeof(de->d_name) + 2], *text = NULL;
        snprintf(path, sizeof(path), "%s/%s", o->path, de->d_name);
        if ((rc = util_read_file(path, 1u << 30, &text, NULL)))
            break;
        if (!boot[0] || strncmp(text, want, wl))
            *rebooted = true;
        for (char *line = strtok(text, "\n"); line && !rc; line = strtok(NULL, "\n"))
            rc = names_add(names, line);
        free(text);
    }
    closedir(d);
    return rc;
}

/* Remove the logs of epochs before keep. */
static void logs_drop(struct ost *o, int64_t keep)
{
    DIR *d = ost_dir(o);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        int64_t e;
        if (log_epoch(de->d_name, &e) && e < keep)
            unlinkat(o->dirfd, de->d_name, 0);
    }
    if (d)
        closedir(d);
}

/* Begin a new epoch on o: its log on disk, then a sync of everything
 * before it; then the log before it goes. */
static int epoch_begin(struct ost *o)
{
    int64_t e = (int64_t)util_now_real_ns() - 1000000000; /* file times may lag */
    if (e <= o->epoch_ns)
        e = o->epoch_ns + 1;
    char name[64];
    log_name(name, sizeof(name), e);
    int fd = openat(o->dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    /* Room for its appends now: on a full disk, a truncate or punch (which
     * frees space) must not fail for want of a block for its log line. */
    (void)fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, LOG_PREALLOC);
    char line[96];
    int rc = util_write_full(fd, line, (size_t)boot_line(line, sizeof(line)));
    if (rc || fsync(fd) < 0 || fsync(o->dirfd) < 0) {
        rc = rc ? rc : -errno;
        close(fd);
        unlinkat(o->dirfd, name, 0);
        return rc;
    }
    pthread_rwlock_wrlock(&o->epoch_lock);
    int old_fd = o->log_fd;
    o->log_fd = fd;
    o->epoch_ns = e;
    pthread_rwlock_unlock(&o->epoch_lock);
    if (old_fd >= 0)
        close(old_fd);
    if (syncfs(o->dirfd) < 0)
        return -errno; /* the old log stays: a recovery checks its epoch too */
    logs_drop(o, e);
    return 0;
}

/* Before the first change in the epoch of an object last changed (at
 * mtime) before it: its name in the log, on disk. Under epoch_lock. */
static int note_change(struct ost *o, const char *name, const struct stat *st)
{
    if (o->log_fd < 0)
        return 0;
    /* An mtime ahead of the clock (set back since) proves nothing. */
    int64_t m = st ? ts_ns(&st->st_mtim) : 0;
    if (m >= o->epoch_ns && m <= (int64_t)util_now_real_ns() + 1000000000)
        return 0;
    char line[128];
    int n = snprintf(line, sizeof(line), "%s\n", name);
    pthread_mutex_lock(&o->log_lock);
    int rc = util_write_full(o->log_fd, line, (size_t)n);
    if (rc == 0 && fdatasync(o->log_fd) < 0)
        rc = -errno;
    pthread_mutex_unlock(&o->log_lock);
    if (rc)
        log_error("OST%04x: cannot log a change of %s for crash recovery: %s", o->index, name,
                  log_err(rc));
    return rc;
}

/* At a start after an unclean stop: check the objects that can hold a
 * block no entry describes (names: sorted here), and sum those again. */
static void recover(struct ost *o, struct names *names, int64_t since)
{
    if (names->n)
        qsort(names->v, names->n, sizeof(*names->v), name_cmp);
    uint64_t objects = 0, blocks = 0;
    for (size_t i = 0; i < names->n; i++) {
        if (i && !strcmp(names->v[i], names->v[i - 1]))
            continue;
        struct sums_obj so;
        int rc = sums_open(o->dirfd, names->v[i], SUMS_CHANGE, &so);
        if (rc == -ENOENT)
            continue;
        uint64_t healed = 0, first = 0;
        if (rc == 0) {
            if ((rc = sums_heal(&so, &healed, &first)) == 0 && healed)
                rc = sums_sync(&so);
            sums_close(&so);
        }
        if (rc == 0)
            objects++;
        if (rc)
            log_error("OST%04x: cannot check object %s after an unclean stop: %s", o->index,
                      names->v[i], log_err(rc));
        else if (healed)
            log_warn("OST%04x: object %s: %" PRIu64 " block(s) from offset %" PRIu64
                     " held data no checksum described after an unclean stop (a write not yet "
                     "synced, cut short); summed again as they are",
                     o->index, names->v[i], healed, first);
        blocks += healed;
    }
    log_info("OST%04x: unclean stop: checked %" PRIu64 " object(s) changed since %" PRId64
             ".%09" PRId64 ", %" PRIu64 " block(s) summed again",
             o->index, objects, since / 1000000000, since % 1000000000, blocks);
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
    /* Without the mark of an orderly stop, the objects its logs name or
     * that changed since its oldest log's epoch are checked (above). The
     * mark goes first: a crash from here on is an unclean stop. */
    bool clean = unlinkat(o->dirfd, CLEAN_FILE, 0) == 0;
    if ((!clean && errno != ENOENT) || (clean && fsync(o->dirfd) < 0)) {
        rc = -errno;
        log_error("OST%04x: cannot remove %s/" CLEAN_FILE ": %s", index, path, log_err(rc));
        goto fail;
    }
    int64_t since = 0;
    struct names check = {0};
    bool rebooted = false;
    if ((rc = logs_read(o, &since, &check, &rebooted))) {
        log_error("OST%04x: cannot read its crash recovery logs: %s", index, log_err(rc));
        free(check.v);
        goto fail;
    }
    /* Killed, but the host kept running: its page cache kept data and
     * entries together, and there is nothing to sum again. */
    if (!clean && since && !rebooted)
        log_info("OST%04x: unclean stop without a restart of the host: nothing to check", index);
    bool recovering = !clean && since && rebooted;
    /* Count what the objects occupy. */
    for (int i = 0; i < 256; i++) {
        proto_obj_fan_dir(sub, sizeof(sub), (unsigned)i);
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
            size_t nl = strlen(de->d_name);
            if (nl > 2 && !strcmp(de->d_name + nl - 2, ".c"))
                continue; /* an object's checksums */
            o->used += obj_bytes(&st);
            o->objects++;
            if (recovering && ts_ns(&st.st_mtim) >= since) {
                char name[sizeof(sub) + sizeof(de->d_name) + 1];
                snprintf(name, sizeof(name), "%s/%s", sub, de->d_name);
                if ((rc = names_add(&check, name)))
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
        recover(o, &check, since);
    free(check.v);
    if ((rc = epoch_begin(o))) {
        log_error("OST%04x: cannot begin its first sync epoch in %s: %s", index, path, log_err(rc));
        goto fail;
    }
    *out = o;
    return 0;
fail:
    if (o->log_fd >= 0)
        close(o->log_fd);
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
    proto_obj_name(name, sizeof(name), q.ino, q.comp, q.stripe);                                   \
    pthread_rwlock_t *lk = obj_lock(s, q.ost, q.ino, q.comp, q.stripe)

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
    int rc = sums_open(o->dirfd, name, how, &so);
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
    rc = note_change(o, name, have ? &st : NULL);
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
    struct write_arg a = {&q, req->bulk, req->bulk_len, o, name, false, false};
    a.direct = s->direct_io_min && others > 0 && !atomic_load(&o->no_direct) &&
               req->bulk_len >= s->direct_io_min && q.offset % 4096 == 0 &&
               req->bulk_len % 4096 == 0 && (uintptr_t)req->bulk % 4096 == 0;
    a.writeback = s->writeback_min && req->bulk_len >= s->writeback_min;
    if ((rc = change_object(o, name, lk, SUMS_WRITE, write_fn, &a)))
        log_warn("write failed ost=%u object=%s offset=%" PRIu64 ": %s", o->index, name, q.offset,
                 log_err(rc));
    atomic_fetch_sub(&o->writing, 1);
    return rc;
}

/* Read [off, off + len) of an object into buf, which has room for the
 * blocks around it, and check those blocks. *at: where in buf the range
 * starts; *got: how much of it the object holds; crcs: its chunks' CRC32Cs
 * (4 bytes each, for *got bytes). -EIO on a checksum mismatch (logged). */
static int read_checked(struct ost *o, const char *name, struct sums_obj *so, uint64_t off,
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

static int h_read(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    DECODE(read);
    if (q.len > PROTO_MAX_BULK)
        return -EINVAL;
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
        rc = read_checked(o, name, &so, q.offset, q.len, buf, &at, &got,
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

static int truncate_fn(struct sums_obj *so, void *arg)
{
    uint64_t size = *(uint64_t *)arg;
    int rc = sums_before_resize(so, size);
    return rc ? rc : ftruncate(so->fd, (off_t)size) < 0 ? -errno : 0;
}

static int h_truncate(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    (void)rep;
    DECODE(truncate);
    if (q.size > MAX_OBJECT_SIZE)
        return -EFBIG;
    /* A missing object is already empty. */
    return change_object(o, name, lk, SUMS_CHANGE, truncate_fn, &q.size);
}

static int h_destroy(void *p, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = p;
    (void)rep;
    DECODE(destroy);
    struct stat st;
    pthread_rwlock_wrlock(lk);
    int rc = 0;
    if (fstatat(o->dirfd, name, &st, 0) < 0 || unlinkat(o->dirfd, name, 0) < 0)
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
    return change_object(o, name, lk, SUMS_CHANGE, punch_fn, &q);
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
    struct ost *o = find_ost(s, ost);
    *rc = !o ? -ENXIO : fan > 255 ? -EINVAL : 0;
    return *rc ? NULL : o;
}

/* One of o's 256 fan-out directories, open to list; NULL with *rc. */
static DIR *fan_open(struct ost *o, uint32_t fan, int *rc)
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

/* Is d_name (in fan-out directory fan) an object, named as this server
 * names them: <inode hex>.<component>.<stripe>, nothing else? Then its
 * path from the OST's directory goes to name. */
static bool fan_object(uint32_t fan, const char *d_name, uint64_t *ino, uint32_t *comp,
                       uint32_t *stripe, char name[96])
{
    char tail, sub[32];
    if (sscanf(d_name, "%16" SCNx64 ".%u.%u%c", ino, comp, stripe, &tail) != 3)
        return false; /* its checksums (.c), or a stranger */
    proto_obj_name(name, PROTO_OBJ_NAME_MAX, *ino, *comp, *stripe);
    proto_obj_fan_dir(sub, sizeof(sub) - 1, fan);
    size_t sl = strlen(sub);
    sub[sl++] = '/';
    sub[sl] = '\0';
    return !strncmp(name, sub, sl) && !strcmp(name + sl, d_name);
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
    DIR *d = fan_open(o, q.fan, &rc);
    if (!d)
        return rc;
    struct proto_scrub_rep r = {0};
    uint32_t nbad = 0;
    struct dirent *de;
    while ((de = readdir(d)) && !rc) {
        uint64_t ino;
        uint32_t comp, stripe;
        char name[96];
        if (!fan_object(q.fan, de->d_name, &ino, &comp, &stripe, name))
            continue;
        pthread_rwlock_t *lk = obj_lock(s, q.ost, ino, comp, stripe);
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

/* The objects of one fan-out directory, for stria fsck. */
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
    DIR *d = fan_open(o, q.fan, &rc);
    if (!d)
        return rc;
    struct proto_listobj_rep r = {.more = 0};
    struct proto_enc e;
    proto_enc_init(&e, buf, cap);
    struct dirent *de;
    while ((de = readdir(d))) {
        uint64_t ino;
        uint32_t comp, stripe;
        char name[96];
        if (!fan_object(q.fan, de->d_name, &ino, &comp, &stripe, name))
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

/* Every sync_interval: a new epoch on each OST (crash safety, above). */
static void epoch_tick(void *arg)
{
    struct stord *s = arg;
    for (int i = 0; i < s->nosts; i++) {
        int rc = epoch_begin(s->osts[i]);
        if (rc)
            log_error("OST%04x: cannot sync for crash recovery (a crash would check more): %s",
                      s->osts[i]->index, log_err(rc));
    }
}

/* An orderly stop, once nothing is served: all on disk, and the mark that
 * says so (a start then checks nothing). */
static void ost_close(struct ost *o)
{
    int rc = syncfs(o->dirfd) < 0 ? -errno : 0;
    if (rc == 0) {
        int fd = openat(o->dirfd, CLEAN_FILE, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || fsync(fd) < 0 || fsync(o->dirfd) < 0)
            rc = -errno;
        if (fd >= 0)
            close(fd);
    }
    if (rc)
        log_error("OST%04x: stopped without its orderly-stop mark (its next start checks what "
                  "changed lately): %s",
                  o->index, log_err(rc));
    if (o->log_fd >= 0)
        close(o->log_fd);
    close(o->dirfd);
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
    boot_load();
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
    int sig = daemon_wait((int)conf.sync_interval * 1000, epoch_tick, s);
    log_info("signal %d: stopping", sig);
    hb_stop(hb);
    net_server_stop(srv);
    for (int i = 0; i < s->nosts; i++) {
        ost_close(s->osts[i]);
        free(s->osts[i]);
    }
    free(s);
    cfg_free(&stord_table, &conf);
    return 0;
}
