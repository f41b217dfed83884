/*
 * Crash recovery of an OST's checksums (recovery.h).
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
 * epoch or two.
 *
 * Never here: serving requests, or counting what objects occupy (store.c);
 * this file calls sums.h alone.
 */
#include "recovery.h"

#include "sums.h"

#include "../common/log.h"
#include "../common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

void recovery_boot_load(void)
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

static int names_add(struct recovery_names *l, const char *name)
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
static int logs_read(struct ost *o, int64_t *oldest, struct recovery_names *names, bool *rebooted)
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
int recovery_epoch_begin(struct ost *o)
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
int recovery_note_change(struct ost *o, const char *name, const struct stat *st)
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
void recovery_check(struct ost *o, struct recovery_names *names, int64_t since)
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

int recovery_start(struct ost *o, int64_t *since, struct recovery_names *check, bool *recovering)
{
    uint32_t index = o->index;
    const char *path = o->path;
    int rc;
    /* Without the mark of an orderly stop, the objects its logs name or
     * that changed since its oldest log's epoch are checked (above). The
     * mark goes first: a crash from here on is an unclean stop. */
    bool clean = unlinkat(o->dirfd, CLEAN_FILE, 0) == 0;
    if ((!clean && errno != ENOENT) || (clean && fsync(o->dirfd) < 0)) {
        rc = -errno;
        log_error("OST%04x: cannot remove %s/" CLEAN_FILE ": %s", index, path, log_err(rc));
        return rc;
    }
    bool rebooted = false;
    if ((rc = logs_read(o, since, check, &rebooted))) {
        log_error("OST%04x: cannot read its crash recovery logs: %s", index, log_err(rc));
        return rc;
    }
    /* Killed, but the host kept running: its page cache kept data and
     * entries together, and there is nothing to sum again. */
    if (!clean && *since && !rebooted)
        log_info("OST%04x: unclean stop without a restart of the host: nothing to check", index);
    *recovering = !clean && *since && rebooted;
    return 0;
}

int recovery_scan_add(struct recovery_names *check, int64_t since, const char *name,
                      const struct stat *st)
{
    return ts_ns(&st->st_mtim) >= since ? names_add(check, name) : 0;
}

void recovery_stop(struct ost *o)
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
}
