/*
 * The client API against a live cluster: what a program sees of file data.
 * Striped writes and reads at odd offsets and lengths; holes read as zeros;
 * truncate down and up; O_TRUNC; O_APPEND; reads past the end; two clients
 * with close-to-open consistency; several threads writing one file;
 * objects removed when the last link goes (seen in the OSTs' usage);
 * xattrs, symlinks, hard links and rename through the API; special files
 * (stria_mknod) and their types, numbers and errors; 4 KiB writes and
 * reads leaving as 1 MiB requests (gathering, read-ahead). With a second
 * argument, that shell command (which restarts daemons) runs while both
 * clients hold pooled connections, and both must carry on. With two more,
 * shell commands that freeze and thaw the MDT's daemon: no byte of a fresh
 * handle may land on the OSTs before the MDT knows the file has objects,
 * also when two threads write it at once; and a timeout lowered after
 * connections were pooled holds for them.
 *
 * Usage: libstria_api CLIENT_CONF [RESTART_COMMAND [FREEZE_MDT THAW_MDT]]
 */
#include "stria/stria.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))

#include "check.h"

static stria_fs_t *fs, *fs2;

static uint8_t byte_at(uint64_t off, int seed)
{
    return (uint8_t)((off * 2654435761u) >> 13) ^ (uint8_t)seed;
}

static void fill(uint8_t *b, size_t len, uint64_t off, int seed)
{
    for (size_t i = 0; i < len; i++)
        b[i] = byte_at(off + i, seed);
}

static uint64_t ost_used(void)
{
    struct stria_target *t;
    size_t n;
    uint64_t used = 0;
    if (stria_targets(fs, &t, &n) == 0) {
        for (size_t i = 0; i < n; i++)
            if (t[i].kind[0] == 'O')
                used += t[i].bytes_used;
        free(t);
    }
    return used;
}

static void striped_io(void)
{
    /* 3 stripes of 64 KiB: odd offsets cross many stripe units. */
    CHECK(stria_setstripe(fs, "/io", 3, 64 << 10, -1) == 0, "setstripe");
    stria_file_t *f;
    CHECK(stria_open(fs, "/io", O_RDWR, 0, &f) == 0, "open");
    size_t len = (5 << 20) + 12345;
    uint8_t *w = malloc(len), *r = malloc(len);
    fill(w, len, 777, 1);
    CHECK(stria_pwrite(f, w, len, 777) == (ssize_t)len, "pwrite");
    memset(r, 0xaa, len);
    CHECK(stria_pread(f, r, 777, 0) == 777, "read the leading hole");
    for (int i = 0; i < 777; i++)
        if (r[i]) {
            CHECK(0, "hole byte %d = %d", i, r[i]);
            break;
        }
    for (size_t off = 777, step = 65536 - 7; off < 777 + len; off += step) {
        size_t n = MIN(step, 777 + len - off);
        CHECK(stria_pread(f, r, n, (off_t)off) == (ssize_t)n, "pread at %zu", off);
        CHECK(memcmp(r, w + (off - 777), n) == 0, "data at %zu", off);
    }
    CHECK(stria_pread(f, r, 100, (off_t)(777 + len)) == 0, "read at EOF gives 0");
    CHECK(stria_pread(f, r, 100, (off_t)(777 + len - 10)) == 10, "short read at the end");
    /* Truncate down into the middle of a stripe unit, then up: the cut
     * bytes must read as zeros, not as the old data. */
    CHECK(stria_ftruncate(f, 100000) == 0, "truncate down");
    CHECK(stria_ftruncate(f, 300000) == 0, "truncate up");
    struct stat st;
    CHECK(stria_fstat(f, &st) == 0 && st.st_size == 300000, "size after truncates: %ld",
          (long)st.st_size);
    CHECK(stria_pread(f, r, 300000, 0) == 300000, "read after truncates");
    bool ok = memcmp(r + 777, w, 100000 - 777) == 0;
    for (int i = 100000; i < 300000 && ok; i++)
        ok = r[i] == 0;
    CHECK(ok, "truncated range does not read as zeros");
    CHECK(stria_close(f) == 0, "close");
    /* O_TRUNC empties it. */
    CHECK(stria_open(fs, "/io", O_RDWR | O_TRUNC, 0, &f) == 0, "open O_TRUNC");
    CHECK(stria_fstat(f, &st) == 0 && st.st_size == 0, "size after O_TRUNC");
    CHECK(stria_pread(f, r, 100, 0) == 0, "read after O_TRUNC");
    CHECK(stria_pwrite(f, "abc", 3, 0) == 3, "write after O_TRUNC");
    CHECK(stria_close(f) == 0, "close");
    CHECK(stria_open(fs, "/io", O_WRONLY | O_APPEND, 0, &f) == 0, "open O_APPEND");
    CHECK(stria_pwrite(f, "def", 3, 0) == 3, "append");
    CHECK(stria_close(f) == 0, "close");
    CHECK(stria_open(fs, "/io", O_RDONLY, 0, &f) == 0, "reopen");
    CHECK(stria_pread(f, r, 10, 0) == 6 && memcmp(r, "abcdef", 6) == 0, "append result");
    CHECK(stria_pwrite(f, "x", 1, 0) == -EBADF, "write on O_RDONLY gives EBADF");
    stria_close(f);
    free(w);
    free(r);
}

static void close_to_open(void)
{
    stria_file_t *a, *b;
    CHECK(stria_open(fs, "/cto", O_CREAT | O_RDWR, 0644, &a) == 0, "create");
    CHECK(stria_pwrite(a, "first", 5, 0) == 5, "write");
    CHECK(stria_close(a) == 0, "close");
    CHECK(stria_open(fs2, "/cto", O_RDONLY, 0, &b) == 0, "open on client 2");
    char buf[16] = {0};
    CHECK(stria_pread(b, buf, sizeof(buf), 0) == 5 && !memcmp(buf, "first", 5),
          "client 2 sees the closed data");
    stria_close(b);
    struct stat st;
    CHECK(stria_stat(fs2, "/cto", &st) == 0 && st.st_size == 5, "client 2 sees the size");
}

struct wr {
    int id, rc;
};

static void *writer(void *arg)
{
    struct wr *w = arg;
    stria_file_t *f;
    uint8_t buf[100000];
    if ((w->rc = stria_open(fs, "/mt", O_WRONLY, 0, &f)))
        return NULL;
    for (int k = 0; k < 8 && !w->rc; k++) {
        uint64_t off = (uint64_t)(k * 4 + w->id) * sizeof(buf);
        fill(buf, sizeof(buf), off, 5);
        if (stria_pwrite(f, buf, sizeof(buf), (off_t)off) != (ssize_t)sizeof(buf))
            w->rc = -EIO;
    }
    if (!w->rc)
        w->rc = stria_close(f);
    return NULL;
}

/* After the daemons restart, clients with stale pooled connections carry on. */
static void survive_restart(const char *cmd)
{
    stria_file_t *f;
    char buf[8] = {0};
    CHECK(stria_setstripe(fs, "/restart", 4, 64 << 10, -1) == 0, "setstripe");
    CHECK(stria_open(fs, "/restart", O_RDWR, 0, &f) == 0, "open");
    CHECK(stria_pwrite(f, "before", 6, 0) == 6 && stria_fsync(f) == 0, "write");
    CHECK(system(cmd) == 0, "restart command failed: %s", cmd);
    CHECK(stria_pread(f, buf, 6, 0) == 6 && !memcmp(buf, "before", 6), "read after restart");
    CHECK(stria_pwrite(f, "after!", 6, 6) == 6, "write after restart");
    int frc = stria_fsync(f), crc = stria_close(f);
    CHECK(frc == 0 && crc == 0, "fsync and close after restart: %d %d", frc, crc);
    struct stat st;
    CHECK(stria_stat(fs2, "/restart", &st) == 0 && st.st_size == 12, "size via the other client");
    CHECK(stria_unlink(fs2, "/restart") == 0, "unlink via the other client");
}

static void threads(void)
{
    CHECK(stria_setstripe(fs, "/mt", 2, 128 << 10, -1) == 0, "setstripe");
    pthread_t t[4];
    struct wr w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct wr){i, 0};
        pthread_create(&t[i], NULL, writer, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].rc == 0, "writer %d: %d", i, w[i].rc);
    }
    size_t len = 32 * 100000;
    uint8_t *r = malloc(len), *want = malloc(len);
    fill(want, len, 0, 5);
    stria_file_t *f;
    CHECK(stria_open(fs2, "/mt", O_RDONLY, 0, &f) == 0, "open");
    CHECK(stria_pread(f, r, len, 0) == (ssize_t)len, "read all");
    CHECK(memcmp(r, want, len) == 0, "4 threads' writes");
    stria_close(f);
    free(r);
    free(want);
}

struct first {
    stria_file_t *f;
    ssize_t rc;
};

static void *first_write(void *arg)
{
    struct first *w = arg;
    char b[4096] = {1};
    w->rc = stria_pwrite(w->f, b, sizeof(b), 0);
    return NULL;
}

/* A fresh handle's first write tells the MDT that objects may exist before
 * its data goes, so an unlink anywhere removes them. With the MDT frozen
 * that mark cannot be made: a second thread's write while the first one's
 * mark is on its way must wait for it and fail with it, not go to the OSTs
 * unannounced (which an unlink would then leave behind). */
static void mark_before_data(const char *freeze, const char *thaw)
{
    stria_fs_t *fs3;
    stria_file_t *f;
    CHECK(stria_connect(getenv("STRIA_TEST_CONF"), &fs3) == 0, "connect");
    CHECK(stria_set_io_timeout(fs3, 1000) == 0, "timeout");
    /* Made first without write access: a create for writing is marked by
     * the OPEN itself (small_file_requests), an open of an existing file is
     * not. */
    CHECK(stria_open(fs3, "/marked", O_CREAT | O_RDONLY, 0644, &f) == 0 && stria_close(f) == 0,
          "create");
    CHECK(stria_open(fs3, "/marked", O_WRONLY | O_TRUNC, 0644, &f) == 0, "open");
    CHECK(system(freeze) == 0, "%s", freeze);
    struct first w = {f, 0};
    pthread_t t;
    pthread_create(&t, NULL, first_write, &w);
    struct timespec pause = {0, 300 * 1000000};
    nanosleep(&pause, NULL); /* the first write is waiting for the MDT */
    char b[4096] = {2};
    ssize_t second = stria_pwrite(f, b, sizeof(b), 1 << 20);
    pthread_join(t, NULL);
    CHECK(system(thaw) == 0, "%s", thaw);
    CHECK(w.rc < 0, "the first write succeeded with the MDT frozen (%zd)", w.rc);
    CHECK(second < 0,
          "a write reached the OSTs while the handle's first write was still telling the MDT "
          "(it returned %zd)",
          second);
    stria_close(f);
    stria_disconnect(fs3);
}

struct timed_mkdir {
    stria_fs_t *fs;
    int rc;
    _Atomic bool done;
};

static void *mkdir_thread(void *arg)
{
    struct timed_mkdir *m = arg;
    m->rc = stria_mkdir(m->fs, "/timeout-probe", 0755);
    atomic_store(&m->done, true);
    return NULL;
}

/* stria_set_io_timeout reaches connections already in the pool: a client
 * that used the MDT under the default timeout (100 s) and then lowered it
 * to 1 s gets an error from a frozen MDT within seconds. The call is
 * watched for 30 s (thirty times its timeout), then the MDT is thawed, so
 * the check ends either way. */
static void timeout_reaches_pool(const char *freeze, const char *thaw)
{
    stria_fs_t *fs4;
    struct stat st;
    CHECK(stria_connect(getenv("STRIA_TEST_CONF"), &fs4) == 0, "connect");
    CHECK(stria_stat(fs4, "/", &st) == 0, "stat: pools an MDT connection");
    CHECK(stria_set_io_timeout(fs4, 1000) == 0, "timeout");
    CHECK(system(freeze) == 0, "%s", freeze);
    struct timed_mkdir m = {fs4, 0, false};
    pthread_t t;
    pthread_create(&t, NULL, mkdir_thread, &m);
    for (int i = 0; i < 300 && !atomic_load(&m.done); i++) {
        struct timespec tick = {0, 100 * 1000000};
        nanosleep(&tick, NULL);
    }
    bool ended = atomic_load(&m.done);
    CHECK(system(thaw) == 0, "%s", thaw);
    pthread_join(t, NULL);
    CHECK(ended, "a call on a pooled connection outlived 30 s with a 1 s timeout");
    CHECK(m.rc < 0, "mkdir succeeded with the MDT frozen (%d)", m.rc);
    stria_rmdir(fs4, "/timeout-probe"); /* if it was made after the thaw */
    stria_disconnect(fs4);
}

static void objects_removed(void)
{
    uint64_t before = ost_used();
    CHECK(stria_setstripe(fs, "/big", 4, 1 << 20, -1) == 0, "setstripe");
    stria_file_t *f;
    size_t len = 16 << 20;
    uint8_t *b = calloc(1, len);
    memset(b, 1, len);
    CHECK(stria_open(fs, "/big", O_WRONLY, 0, &f) == 0, "open");
    CHECK(stria_pwrite(f, b, len, 0) == (ssize_t)len, "write");
    CHECK(stria_close(f) == 0, "close");
    uint64_t during = ost_used();
    CHECK(during >= before + len, "OSTs hold the data: %lu -> %lu", (unsigned long)before,
          (unsigned long)during);
    CHECK(stria_link(fs, "/big", "/big-link") == 0, "link");
    CHECK(stria_unlink(fs, "/big") == 0, "unlink one name");
    CHECK(ost_used() >= before + len, "data kept while a link remains");
    /* Rename over the last name frees the objects too. */
    CHECK(stria_mkdir(fs, "/d", 0755) == 0, "mkdir");
    stria_open(fs, "/d/small", O_CREAT | O_WRONLY, 0644, &f);
    stria_close(f);
    CHECK(stria_rename(fs, "/d/small", "/big-link", 0) == 0, "rename over");
    CHECK(ost_used() < before + 1024 * 1024, "objects freed: %lu -> %lu", (unsigned long)before,
          (unsigned long)ost_used());
    CHECK(stria_rename(fs, "/big-link", "/d/x", RENAME_NOREPLACE) == 0, "rename noreplace");
    CHECK(stria_unlink(fs, "/d/x") == 0 && stria_rmdir(fs, "/d") == 0, "cleanup");
    free(b);
}

static void names(void)
{
    char buf[64];
    CHECK(stria_symlink(fs, "cto", "/lnk") == 0, "symlink");
    CHECK(stria_readlink(fs, "/lnk", buf, sizeof(buf)) == 3 && !memcmp(buf, "cto", 3), "readlink");
    struct stat st;
    CHECK(stria_stat(fs, "/lnk", &st) == 0 && S_ISREG(st.st_mode), "stat follows");
    CHECK(stria_lstat(fs, "/lnk", &st) == 0 && S_ISLNK(st.st_mode), "lstat does not");
    CHECK(stria_setxattr(fs, "/cto", "user.tag", "v1", 2, 0) == 0, "setxattr");
    CHECK(stria_getxattr(fs, "/cto", "user.tag", buf, sizeof(buf)) == 2, "getxattr");
    CHECK(stria_getxattr(fs, "/cto", "user.none", buf, sizeof(buf)) == -ENODATA, "ENODATA");
    CHECK(stria_listxattr(fs, "/cto", buf, sizeof(buf)) == 9, "listxattr");
    CHECK(stria_removexattr(fs, "/cto", "user.tag") == 0, "removexattr");
    CHECK(stria_chmod(fs, "/cto", 0600) == 0 && stria_stat(fs, "/cto", &st) == 0 &&
              (st.st_mode & 0777) == 0600,
          "chmod");
    struct timespec ts[2] = {{1000, 5}, {2000, 7}};
    CHECK(stria_utimens(fs, "/cto", ts) == 0 && stria_stat(fs, "/cto", &st) == 0 &&
              st.st_mtim.tv_sec == 2000 && st.st_atim.tv_sec == 1000,
          "utimens");
    CHECK(stria_mkdir(fs, "/cto/x", 0755) == -ENOTDIR, "ENOTDIR");
    stria_dir_t *d;
    CHECK(stria_opendir(fs, "/cto", &d) == -ENOTDIR, "opendir of a file");
    stria_file_t *f;
    CHECK(stria_open(fs, "/", O_RDONLY, 0, &f) == 0, "open /");
    CHECK(stria_pread(f, buf, 1, 0) == -EISDIR, "read a directory");
    stria_close(f);
    struct statvfs sv;
    CHECK(stria_statfs(fs, &sv) == 0 && sv.f_blocks > 0 && sv.f_files > 0, "statfs");
}

/* Calls on a handle: times set on it survive its close (cp -p, tar -x);
 * a file's mtime is its last write's, not its close's; ftruncate is
 * checked against how the handle was opened, not the mode. */
static void descriptor_calls(void)
{
    stria_file_t *f;
    struct stat st;
    CHECK(stria_open(fs, "/fdt", O_CREAT | O_WRONLY | O_TRUNC, 0644, &f) == 0, "create /fdt");
    CHECK(stria_pwrite(f, "0123456789", 10, 0) == 10, "write /fdt");
    struct timespec ts[2] = {{1000, 5}, {981173106, 123456789}};
    CHECK(stria_futimens(f, ts) == 0, "futimens");
    CHECK(stria_close(f) == 0, "close /fdt");
    CHECK(stria_stat(fs2, "/fdt", &st) == 0 && st.st_mtim.tv_sec == 981173106 &&
              st.st_mtim.tv_nsec == 123456789 && st.st_atim.tv_sec == 1000 && st.st_size == 10,
          "times set before close: mtime %lld atime %lld size %lld", (long long)st.st_mtim.tv_sec,
          (long long)st.st_atim.tv_sec, (long long)st.st_size);

    CHECK(stria_open(fs, "/fdt", O_WRONLY, 0, &f) == 0, "open /fdt");
    CHECK(stria_pwrite(f, "abc", 3, 10) == 3, "write /fdt again");
    struct timespec wrote;
    clock_gettime(CLOCK_REALTIME, &wrote);
    sleep(2);
    CHECK(stria_close(f) == 0, "close /fdt");
    CHECK(stria_stat(fs2, "/fdt", &st) == 0 && st.st_size == 13 &&
              st.st_mtim.tv_sec >= wrote.tv_sec - 1 && st.st_mtim.tv_sec <= wrote.tv_sec + 1,
          "mtime %lld is not the write's (%lld; the close came 2 s later)",
          (long long)st.st_mtim.tv_sec, (long long)wrote.tv_sec);

    /* A user's file created with mode 0: its O_RDWR handle may truncate. */
    CHECK(stria_mkdir(fs, "/fdw", 0777) == 0 && stria_chmod(fs, "/fdw", 01777) == 0, "mkdir /fdw");
    gid_t nogroups[1] = {65534};
    CHECK(stria_set_thread_cred(65534, 65534, 1, nogroups) == 0, "act as 65534");
    CHECK(stria_open(fs, "/fdw/m0", O_CREAT | O_EXCL | O_RDWR, 0, &f) == 0, "create mode 0");
    CHECK(stria_ftruncate(f, 100) == 0, "ftruncate of a mode-0 file through its O_RDWR handle");
    CHECK(stria_pwrite(f, "x", 1, 200) == 1, "write a mode-0 file through its handle");
    CHECK(stria_ftruncate(f, 10) == 0, "ftruncate down");
    CHECK(stria_fstat(f, &st) == 0 && st.st_size == 10, "size %lld after ftruncate to 10",
          (long long)st.st_size);
    CHECK(stria_close(f) == 0, "close mode-0 file");
    CHECK(stria_truncate(fs, "/fdw/m0", 5) == -EACCES, "truncate by name of a mode-0 file");
    stria_clear_thread_cred();
}

/* FIFOs, devices and sockets: made with their type and number, listed by
 * type, renamed, linked and removed; devices are root's; none opens. */
static void specials(void)
{
    struct stat st;
    stria_file_t *f;
    dev_t dev = makedev(8, 17);
    bool root = geteuid() == 0;
    CHECK(stria_mkdir(fs, "/spec", 0777) == 0, "mkdir /spec");
    CHECK(stria_mknod(fs, "/spec/fifo", S_IFIFO | 0640, 0) == 0, "mknod fifo");
    CHECK(stria_mknod(fs, "/spec/sock", S_IFSOCK | 0755, 0) == 0, "mknod socket");
    int want = root ? 0 : -EPERM;
    CHECK(stria_mknod(fs, "/spec/blk", S_IFBLK | 0660, dev) == want, "mknod block device");
    CHECK(stria_mknod(fs, "/spec/chr", S_IFCHR | 0666, makedev(1, 3)) == want,
          "mknod character device");
    CHECK(stria_mknod(fs, "/spec/reg", 0644, 0) == 0, "mknod with type 0: a regular file");
    CHECK(stria_stat(fs, "/spec/fifo", &st) == 0 && st.st_mode == (S_IFIFO | 0640) &&
              st.st_rdev == 0 && st.st_nlink == 1 && st.st_size == 0,
          "stat fifo: mode %o rdev %lx", st.st_mode, (unsigned long)st.st_rdev);
    CHECK(stria_stat(fs, "/spec/sock", &st) == 0 && st.st_mode == (S_IFSOCK | 0755), "stat socket");
    if (root) {
        CHECK(stria_stat(fs, "/spec/blk", &st) == 0 && st.st_mode == (S_IFBLK | 0660) &&
                  st.st_rdev == dev,
              "stat block device: mode %o rdev %lx", st.st_mode, (unsigned long)st.st_rdev);
        CHECK(stria_stat(fs, "/spec/chr", &st) == 0 && major(st.st_rdev) == 1 &&
                  minor(st.st_rdev) == 3,
              "stat character device");
    }
    CHECK(stria_stat(fs, "/spec/reg", &st) == 0 && st.st_mode == (S_IFREG | 0644), "stat reg");
    CHECK(stria_mknod(fs, "/spec/fifo", S_IFIFO | 0644, 0) == -EEXIST, "EEXIST");
    CHECK(stria_mknod(fs, "/spec/d", S_IFDIR | 0755, 0) == -EPERM, "S_IFDIR: EPERM");
    CHECK(stria_mknod(fs, "/spec/l", S_IFLNK | 0777, 0) == -EINVAL, "S_IFLNK: EINVAL");
    /* Someone else: no devices, but FIFOs. */
    gid_t g = 1000;
    stria_set_thread_cred(1000, 1000, 1, &g);
    CHECK(stria_mknod(fs, "/spec/uchr", S_IFCHR | 0644, makedev(1, 3)) == -EPERM,
          "a device by a user: EPERM");
    CHECK(stria_mknod(fs, "/spec/ufifo", S_IFIFO | 0644, 0) == 0, "a FIFO by a user");
    stria_clear_thread_cred();
    CHECK(stria_stat(fs, "/spec/ufifo", &st) == 0 && st.st_uid == 1000, "the user's FIFO");

    /* Nothing to open through the library. */
    CHECK(stria_open(fs, "/spec/fifo", O_RDONLY, 0, &f) == -ENXIO, "open fifo: ENXIO");
    CHECK(stria_open(fs, "/spec/sock", O_RDWR, 0, &f) == -ENXIO, "open socket: ENXIO");
    CHECK(stria_open(fs, "/spec/fifo", O_WRONLY | O_TRUNC, 0, &f) == -ENXIO,
          "O_TRUNC open of a fifo: ENXIO");
    CHECK(stria_truncate(fs, "/spec/fifo", 0) == -EINVAL, "truncate fifo: EINVAL");

    /* Attributes, links, renames, readdir types, removal. */
    CHECK(stria_chmod(fs, "/spec/fifo", 0600) == 0 && stria_chown(fs, "/spec/fifo", 7, 8) == 0,
          "chmod, chown");
    struct timespec ts[2] = {{1000, 5}, {2000, 7}};
    CHECK(stria_utimens(fs, "/spec/fifo", ts) == 0, "utimens");
    CHECK(stria_stat(fs, "/spec/fifo", &st) == 0 && st.st_mode == (S_IFIFO | 0600) &&
              st.st_uid == 7 && st.st_gid == 8 && st.st_mtim.tv_sec == 2000,
          "attributes kept");
    CHECK(stria_link(fs, "/spec/fifo", "/spec/fifo2") == 0, "link");
    CHECK(stria_stat(fs, "/spec/fifo2", &st) == 0 && st.st_nlink == 2 && S_ISFIFO(st.st_mode),
          "two links");
    CHECK(stria_rename(fs, "/spec/reg", "/spec/fifo2", 0) == 0, "rename a file over a fifo");
    CHECK(stria_stat(fs, "/spec/fifo", &st) == 0 && st.st_nlink == 1, "one link left");
    CHECK(stria_rename(fs, "/spec/sock", "/spec/fifo2", 0) == 0, "rename a socket over a file");
    CHECK(stria_mkdir(fs, "/spec/dd", 0755) == 0, "mkdir /spec/dd");
    CHECK(stria_rename(fs, "/spec/fifo", "/spec/dd", 0) == -EISDIR, "fifo onto a dir: EISDIR");
    CHECK(stria_rename(fs, "/spec/dd", "/spec/fifo", 0) == -ENOTDIR, "dir onto a fifo: ENOTDIR");
    CHECK(stria_rmdir(fs, "/spec/dd") == 0, "rmdir /spec/dd");
    struct {
        const char *name;
        unsigned char type;
        bool seen;
    } want_types[] = {{"fifo", DT_FIFO, false},
                      {"fifo2", DT_SOCK, false},
                      {"blk", DT_BLK, !root},
                      {"chr", DT_CHR, !root},
                      {"ufifo", DT_FIFO, false}};
    stria_dir_t *d;
    struct stria_dirent de;
    int n = 0, rc;
    CHECK(stria_opendir(fs, "/spec", &d) == 0, "opendir");
    while ((rc = stria_readdir(d, &de)) == 1 && n++ < 100)
        for (size_t i = 0; i < sizeof(want_types) / sizeof(want_types[0]); i++)
            if (!strcmp(de.name, want_types[i].name)) {
                CHECK(de.type == want_types[i].type, "d_type of %s: %u, want %u", de.name, de.type,
                      want_types[i].type);
                want_types[i].seen = true;
            }
    stria_closedir(d);
    CHECK(rc == 0 && n == (root ? 5 : 3), "readdir: %d names", n);
    for (size_t i = 0; i < sizeof(want_types) / sizeof(want_types[0]); i++)
        CHECK(want_types[i].seen, "readdir lists %s", want_types[i].name);
    const char *all[] = {"/spec/fifo", "/spec/fifo2", "/spec/blk", "/spec/chr", "/spec/ufifo"};
    for (size_t i = 0; i < 5; i++)
        CHECK(stria_unlink(fs, all[i]) == 0 || (!root && i >= 2 && i <= 3), "unlink %s", all[i]);
    CHECK(stria_rmdir(fs, "/spec") == 0, "rmdir /spec");
}

/* Requests of kind op (e.g. "WRITE") the storage servers received so
 * far: each server counted once, however many OSTs it serves. */
static uint64_t ost_requests(const char *op)
{
    struct stria_target *t;
    size_t n;
    uint64_t sum = 0;
    if (stria_targets(fs, &t, &n))
        return 0;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i; j++)
            seen |= t[j].kind[0] == 'O' && t[j].port == t[i].port && !strcmp(t[j].host, t[i].host);
        if (t[i].kind[0] != 'O' || seen)
            continue;
        struct stria_op_stats *ops;
        size_t nops;
        uint64_t up;
        if (stria_ost_stats(fs, t[i].index, &ops, &nops, &up) == 0) {
            for (size_t k = 0; k < nops; k++)
                if (!strcmp(ops[k].op, op))
                    sum += ops[k].count;
            free(ops);
        }
    }
    free(t);
    return sum;
}

/* Requests of kind op the MDTs served so far. */
static uint64_t mdt_requests(const char *op)
{
    struct stria_target *t;
    size_t n;
    uint64_t sum = 0;
    if (stria_targets(fs, &t, &n))
        return 0;
    for (size_t i = 0; i < n; i++) {
        struct stria_op_stats *ops;
        size_t nops;
        uint64_t up;
        if (t[i].kind[0] == 'M' && stria_mdt_stats(fs, t[i].index, &ops, &nops, &up) == 0) {
            for (size_t k = 0; k < nops; k++)
                if (!strcmp(ops[k].op, op))
                    sum += ops[k].count;
            free(ops);
        }
    }
    free(t);
    return sum;
}

/* A small file written whole (open O_CREAT, write, close) costs the MDT
 * its OPEN and one SETSIZE, at the close: the OPEN that creates a file for
 * writing marks it as having objects, so no SETSIZE goes before the first
 * write. The mark still does its work: objects written by a handle whose
 * open created the file go with an unlink from another client, and the
 * size and mtime are the MDT's after the close. */
static void small_file_requests(void)
{
    enum { FILES = 16, LEN = 64 << 10 };
    uint8_t *buf = malloc(1 << 20), *got = malloc(LEN);
    if (!buf || !got)
        return;
    fill(buf, 1 << 20, 0, 9);
    CHECK(stria_mkdir(fs, "/small", 0755) == 0, "mkdir /small");
    uint64_t o0 = mdt_requests("OPEN"), s0 = mdt_requests("SETSIZE");
    for (int i = 0; i < FILES; i++) {
        char p[64];
        stria_file_t *f;
        snprintf(p, sizeof(p), "/small/f%d", i);
        CHECK(stria_open(fs, p, O_CREAT | O_WRONLY | O_TRUNC, 0644, &f) == 0, "create %s", p);
        CHECK(stria_pwrite(f, buf, LEN, 0) == LEN, "write %s", p);
        CHECK(stria_close(f) == 0, "close %s", p);
    }
    uint64_t opens = mdt_requests("OPEN") - o0, sizes = mdt_requests("SETSIZE") - s0;
    printf("   %d small files written: %llu OPEN, %llu SETSIZE at the MDT\n", FILES,
           (unsigned long long)opens, (unsigned long long)sizes);
    CHECK(opens == FILES, "%llu OPEN requests for %d files", (unsigned long long)opens, FILES);
    CHECK(sizes == FILES, "%llu SETSIZE requests for %d files, not one each (at the close)",
          (unsigned long long)sizes, FILES);
    for (int i = 0; i < FILES; i++) {
        char p[64];
        struct stat st;
        stria_file_t *g;
        snprintf(p, sizeof(p), "/small/f%d", i);
        CHECK(stria_stat(fs2, p, &st) == 0 && st.st_size == LEN, "size of %s on the other client",
              p);
        CHECK(stria_open(fs2, p, O_RDONLY, 0, &g) == 0, "open %s on the other client", p);
        CHECK(stria_pread(g, got, LEN, 0) == LEN && memcmp(got, buf, LEN) == 0, "read back %s", p);
        stria_close(g);
        CHECK(stria_unlink(fs, p) == 0, "unlink %s", p);
    }
    /* Data that landed before any size report still goes with an unlink
     * from elsewhere (1 MiB: sent at once, not gathered). */
    uint64_t before = ost_used();
    stria_file_t *f;
    CHECK(stria_open(fs, "/small/open", O_CREAT | O_WRONLY, 0644, &f) == 0, "create /small/open");
    CHECK(stria_pwrite(f, buf, 1 << 20, 0) == 1 << 20, "write 1 MiB");
    CHECK(ost_used() >= before + (1 << 20), "the OSTs hold the data before the close");
    CHECK(stria_unlink(fs2, "/small/open") == 0, "unlink on the other client");
    CHECK(ost_used() < before + (1 << 20),
          "objects of a file unlinked before its writer's first size report stayed: %lu -> %lu",
          (unsigned long)before, (unsigned long)ost_used());
    stria_close(f); /* its size report finds no inode */
    CHECK(stria_rmdir(fs, "/small") == 0, "rmdir /small");
    free(buf);
    free(got);
}

/* Small sequential stria_pwrite calls leave as stripe-piece requests
 * (gathering), small sequential reads are served by read-ahead, and
 * neither changes a byte: read back through another client after close,
 * after a truncate of gathered bytes, and through a handle whose
 * read-ahead a write of this client made stale. */
static void gather_and_readahead(void)
{
    enum { SMALL = 4096, LEN = 8 << 20 };
    uint8_t *buf = malloc(LEN), *got = malloc(LEN);
    struct stria_io_stats io0, io1;
    stria_file_t *f, *g;
    if (!buf || !got)
        return;
    fill(buf, LEN, 0, 7);
    CHECK(stria_setstripe(fs, "/gather", 4, 1 << 20, -1) == 0, "setstripe /gather");
    CHECK(stria_open(fs, "/gather", O_WRONLY, 0, &f) == 0, "open /gather");
    uint64_t w0 = ost_requests("WRITE");
    stria_io_stats(fs, &io0);
    for (size_t off = 0; off < LEN; off += SMALL)
        CHECK(stria_pwrite(f, buf + off, SMALL, (off_t)off) == SMALL, "4 KiB write at %zu", off);
    CHECK(stria_close(f) == 0, "close /gather");
    uint64_t writes = ost_requests("WRITE") - w0;
    stria_io_stats(fs, &io1);
    printf("   %d writes of 4 KiB: %llu WRITE requests at the OSTs, %llu gathered, %llu sends\n",
           LEN / SMALL, (unsigned long long)writes,
           (unsigned long long)(io1.writes_gathered - io0.writes_gathered),
           (unsigned long long)(io1.gathers_sent - io0.gathers_sent));
    /* One per 1 MiB stripe unit; a buffer sent by age (1 s) may split one. */
    CHECK(writes >= LEN / (1 << 20) && writes <= LEN / (1 << 20) + 4,
          "%d writes of 4 KiB became %llu WRITE requests, not %d of 1 MiB", LEN / SMALL,
          (unsigned long long)writes, LEN / (1 << 20));
    CHECK(io1.writes_gathered - io0.writes_gathered == LEN / SMALL, "gathered %llu of %d writes",
          (unsigned long long)(io1.writes_gathered - io0.writes_gathered), LEN / SMALL);

    /* Close-to-open: the second client reads it back 4 KiB at a time. */
    uint64_t r0 = ost_requests("READ");
    stria_io_stats(fs2, &io0);
    CHECK(stria_open(fs2, "/gather", O_RDONLY, 0, &g) == 0, "open /gather on the second client");
    memset(got, 0, LEN);
    for (size_t off = 0; off < LEN; off += SMALL)
        CHECK(stria_pread(g, got + off, SMALL, (off_t)off) == SMALL, "4 KiB read at %zu", off);
    CHECK(memcmp(got, buf, LEN) == 0, "the second client read other bytes than were written");
    stria_close(g);
    uint64_t reads = ost_requests("READ") - r0;
    stria_io_stats(fs2, &io1);
    printf("   %d reads of 4 KiB: %llu READ requests, %llu read-ahead fills, %llu hits\n",
           LEN / SMALL, (unsigned long long)reads,
           (unsigned long long)(io1.readahead_fills - io0.readahead_fills),
           (unsigned long long)(io1.readahead_hits - io0.readahead_hits));
    CHECK(reads <= LEN / (1 << 20) + 4, "%d reads of 4 KiB became %llu READ requests", LEN / SMALL,
          (unsigned long long)reads);

    /* Gathered bytes read back through the writing handle, then cut. */
    CHECK(stria_open(fs, "/gather", O_RDWR | O_TRUNC, 0, &f) == 0, "open /gather O_TRUNC");
    for (size_t off = 0; off < 64 * SMALL; off += SMALL)
        CHECK(stria_pwrite(f, buf + off, SMALL, (off_t)off) == SMALL, "write at %zu", off);
    CHECK(stria_pread(f, got, 64 * SMALL, 0) == 64 * SMALL && !memcmp(got, buf, 64 * SMALL),
          "the writing handle did not read its gathered bytes back");
    for (size_t off = 64 * SMALL; off < 96 * SMALL; off += SMALL)
        CHECK(stria_pwrite(f, buf + off, SMALL, (off_t)off) == SMALL, "write at %zu", off);
    CHECK(stria_ftruncate(f, 10 * SMALL + 100) == 0, "ftruncate of gathered bytes");
    CHECK(stria_pwrite(f, buf, SMALL, 20 * SMALL) == SMALL, "write past the cut");
    CHECK(stria_close(f) == 0, "close after the truncate");
    uint8_t *want = calloc(1, 21 * SMALL);
    if (want) {
        memcpy(want, buf, 10 * SMALL + 100);
        memcpy(want + 20 * SMALL, buf, SMALL);
        CHECK(stria_open(fs2, "/gather", O_RDONLY, 0, &g) == 0, "reopen on the second client");
        memset(got, 0xee, 21 * SMALL + 10);
        ssize_t n = 0, r;
        while ((r = stria_pread(g, got + n, SMALL, n)) > 0)
            n += r;
        CHECK(n == 21 * SMALL && !memcmp(got, want, 21 * SMALL),
              "after a truncate of gathered writes the second client read %zd bytes, or others", n);
        stria_close(g);
        free(want);
    }

    /* Read-ahead is dropped by a write of this client through another handle. */
    CHECK(stria_open(fs, "/gather", O_RDONLY, 0, &g) == 0, "open a reader");
    CHECK(stria_open(fs, "/gather", O_WRONLY, 0, &f) == 0, "open a writer");
    CHECK(stria_pread(g, got, SMALL, 0) == SMALL && !memcmp(got, buf, SMALL), "first read");
    uint8_t fresh[SMALL];
    memset(fresh, 'z', SMALL);
    CHECK(stria_pwrite(f, fresh, SMALL, SMALL) == SMALL, "overwrite behind the reader");
    CHECK(stria_pread(g, got, SMALL, SMALL) == SMALL && !memcmp(got, fresh, SMALL),
          "a read after this client's write saw read-ahead from before it");
    stria_close(f);
    stria_close(g);
    stria_unlink(fs, "/gather");
    free(buf);
    free(got);
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3 && argc != 5)
        return fprintf(stderr, "usage: %s CLIENT_CONF [RESTART_COMMAND [FREEZE_MDT THAW_MDT]]\n",
                       argv[0]),
               2;
    setenv("STRIA_TEST_CONF", argv[1], 1);
    if (stria_connect(argv[1], &fs) || stria_connect(argv[1], &fs2))
        return fprintf(stderr, "connect failed\n"), 1;
    printf("== striped I/O, holes, truncate, O_TRUNC, O_APPEND\n");
    striped_io();
    printf("== close-to-open between two clients\n");
    close_to_open();
    printf("== four threads writing one file\n");
    threads();
    printf("== objects removed with the last link\n");
    objects_removed();
    printf("== names, xattrs, attributes\n");
    names();
    printf("== calls on a handle: futimens, the mtime of the last write, ftruncate\n");
    descriptor_calls();
    printf("== special files\n");
    specials();
    printf("== small sequential writes gathered, small sequential reads read ahead\n");
    gather_and_readahead();
    printf("== a small file written whole: one OPEN and one SETSIZE\n");
    small_file_requests();
    if (argc == 5) {
        printf("== no data before the MDT knows of it, two threads on one handle\n");
        mark_before_data(argv[3], argv[4]);
        printf("== a lowered timeout reaches pooled connections\n");
        timeout_reaches_pool(argv[3], argv[4]);
    }
    if (argc >= 3) {
        printf("== daemons restarted under two live clients\n");
        survive_restart(argv[2]);
    }
    stria_disconnect(fs);
    stria_disconnect(fs2);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
