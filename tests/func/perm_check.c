/*
 * perm_check: what an unprivileged user may and may not do under DIR.
 *
 * Run as root. The parent (root) builds fixtures in a fresh directory under DIR:
 * root-owned files and directories with the modes below, a sticky 01777 directory with
 * other users' files in it, a 0777 directory. A forked child drops to uid/gid 65534
 * (setgroups(0), setresgid, setresuid) and checks each expectation; the results must be
 * what Linux does on a local file system (run it against a directory in /tmp to see).
 * The child reaches the fixtures through a directory fd opened before it dropped
 * privileges, so directories above DIR (a 0700 mktemp -d) do not get in the way.
 * Afterwards the parent checks that refused operations changed nothing.
 *
 * Usage: perm_check DIR        Exit: 0 all as expected, 1 a check failed, 2 setup error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#define NOBODY 65534 /* the unprivileged user and group */
#define OTHER  12345 /* yet another user, owner of a file in the sticky directory */

static int checks, failures;
static int base = -1; /* the fixture directory */

static const char *ename(int e)
{
    if (!e)
        return "success";
    const char *n = strerrorname_np(e);
    return n ? n : "E?";
}

/* One expectation: rc from a call, and the errno wanted (0: success). */
static void expect(const char *what, long rc, int want)
{
    int got = rc < 0 ? errno : 0;
    checks++;
    if (got == want) {
        printf("ok   %s: %s\n", what, want ? ename(want) : "allowed");
        return;
    }
    failures++;
    printf("FAIL %s: expected %s, got %s%s%s\n", what, want ? ename(want) : "success",
           rc < 0 ? "-1 " : "success", rc < 0 ? ename(got) : "",
           rc < 0 ? "" : " (the operation was allowed)");
}

/* A property that must hold. */
static void check(const char *what, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void check(const char *what, bool ok, const char *fmt, ...)
{
    checks++;
    if (ok) {
        printf("ok   %s\n", what);
        return;
    }
    failures++;
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    printf("FAIL %s: %s\n", what, detail);
}

static int put(const char *name, mode_t mode, uid_t uid, gid_t gid, const char *content)
{
    int fd = openat(base, name, O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd < 0)
        return -1;
    ssize_t n = (ssize_t)strlen(content);
    int rc = write(fd, content, (size_t)n) == n ? 0 : -1;
    if (close(fd))
        rc = -1;
    if (!rc && fchownat(base, name, uid, gid, 0))
        rc = -1;
    if (!rc && fchmodat(base, name, mode, 0))
        rc = -1;
    return rc;
}

static int dir(const char *name, mode_t mode, uid_t uid, gid_t gid)
{
    if (mkdirat(base, name, 0700) || fchownat(base, name, uid, gid, 0) ||
        fchmodat(base, name, mode, 0))
        return -1;
    return 0;
}

/* The fixtures, as root. */
static int setup(void)
{
    if (dir("ro_dir", 0755, 0, 0) || put("ro_dir/file", 0644, 0, 0, "ro_dir file\n") ||
        put("secret", 0600, 0, 0, "secret\n") || put("pub_ro", 0644, 0, 0, "public\n") ||
        put("pub_rw", 0666, 0, 0, "writable\n") ||
        put("grp_r", 0640, 0, NOBODY, "group may read\n") ||
        put("grp_none", 0604, 0, NOBODY, "group may not read\n") || dir("sticky", 01777, 0, 0) ||
        put("sticky/root_file", 0666, 0, 0, "root's\n") ||
        put("sticky/other_file", 0666, OTHER, OTHER, "other's\n") || dir("open_dir", 0777, 0, 0) ||
        dir("priv", 0700, 0, 0) || put("priv/f", 0644, 0, 0, "private\n") ||
        dir("search_only", 0711, 0, 0) || put("search_only/f", 0644, 0, 0, "findable\n") ||
        put("suid_w", 06777, 0, 0, "setuid\n") || put("suid_t", 06777, 0, 0, "setuid\n") ||
        put("suid_o", 06777, 0, 0, "setuid\n"))
        return -1;
    return 0;
}

static ssize_t slurp(int dfd, const char *name, char *buf, size_t len)
{
    int fd = openat(dfd, name, O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    int e = errno;
    close(fd);
    errno = e;
    if (n >= 0)
        buf[n] = 0;
    return n;
}

/* truncate(2) of name under the fixture directory, to 1 byte. */
static int truncateat_helper(const char *name)
{
    int fd = openat(base, name, O_WRONLY);
    if (fd < 0)
        return -1;
    int rc = ftruncate(fd, 1);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* Everything the unprivileged child checks; relative to the fixture directory. */
static void child_checks(void)
{
    char buf[256];
    struct stat st = {0};
    struct timespec ts[2] = {{1000000000, 0}, {1000000000, 0}};

    /* A 0755 directory of root's. */
    expect("create in a 0755 root dir", openat(base, "ro_dir/new", O_CREAT | O_WRONLY, 0644),
           EACCES);
    expect("mkdir in a 0755 root dir", mkdirat(base, "ro_dir/sub", 0755), EACCES);
    expect("symlink in a 0755 root dir", symlinkat("x", base, "ro_dir/link"), EACCES);
    expect("unlink from a 0755 root dir", unlinkat(base, "ro_dir/file", 0), EACCES);
    expect("rename out of a 0755 root dir", renameat(base, "ro_dir/file", base, "open_dir/took"),
           EACCES);
    expect("hard link into a 0755 root dir", linkat(base, "pub_rw", base, "ro_dir/l", 0), EACCES);

    /* A 0600 file of root's. */
    expect("open a 0600 root file for reading", openat(base, "secret", O_RDONLY), EACCES);
    expect("access(R_OK) on a 0600 root file", faccessat(base, "secret", R_OK, 0), EACCES);
    expect("stat a 0600 root file", fstatat(base, "secret", &st, 0), 0);

    /* A 0644 file of root's. */
    expect("open a 0644 root file for writing", openat(base, "pub_ro", O_WRONLY), EACCES);
    expect("open a 0644 root file O_RDWR", openat(base, "pub_ro", O_RDWR), EACCES);
    expect("open a 0644 root file O_WRONLY|O_CREAT",
           openat(base, "pub_ro", O_WRONLY | O_CREAT, 0644), EACCES);
    expect("open a 0644 root file O_RDONLY|O_TRUNC", openat(base, "pub_ro", O_RDONLY | O_TRUNC),
           EACCES);
    expect("truncate a 0644 root file", truncate("pub_ro", 0), EACCES);
    expect("access(W_OK) on a 0644 root file", faccessat(base, "pub_ro", W_OK, 0), EACCES);
    ssize_t n = slurp(base, "pub_ro", buf, sizeof(buf));
    expect("read a 0644 root file", n, 0);
    check("a 0644 root file reads right", n >= 0 && !strcmp(buf, "public\n"), "read '%s'",
          n >= 0 ? buf : "");
    expect("set a user.* xattr on a 0644 root file", setxattr("pub_ro", "user.x", "v", 1, 0),
           EACCES);
    expect("utimensat(NULL) on a 0644 root file", utimensat(base, "pub_ro", NULL, 0), EACCES);
    expect("utimensat(explicit times) on a 0644 root file", utimensat(base, "pub_ro", ts, 0),
           EPERM);
    expect("chmod a root file", fchmodat(base, "pub_ro", 0666, 0), EPERM);
    expect("chown a root file to self", fchownat(base, "pub_ro", NOBODY, NOBODY, 0), EPERM);

    /* A 0666 file of root's: writable by all. */
    int fd = openat(base, "pub_rw", O_WRONLY | O_TRUNC);
    expect("open a 0666 root file for writing", fd, 0);
    if (fd >= 0) {
        expect("write a 0666 root file", write(fd, "changed\n", 8) == 8 ? 0 : -1, 0);
        close(fd);
    }
    n = slurp(base, "pub_rw", buf, sizeof(buf));
    check("a 0666 root file reads back what was written", n >= 0 && !strcmp(buf, "changed\n"),
          "read '%s'", n >= 0 ? buf : "");
    expect("utimensat(NULL) on a 0666 root file (write access suffices)",
           utimensat(base, "pub_rw", NULL, 0), 0);
    expect("chmod a 0666 root file", fchmodat(base, "pub_rw", 0600, 0), EPERM);

    /* Group bits: they apply to the group even when "other" would allow more. */
    n = slurp(base, "grp_r", buf, sizeof(buf));
    expect("read a 0640 file of our group", n, 0);
    expect("read a 0604 file of our group (group bits deny)", openat(base, "grp_none", O_RDONLY),
           EACCES);

    /* A sticky 01777 directory. */
    expect("unlink root's file in a sticky dir", unlinkat(base, "sticky/root_file", 0), EPERM);
    expect("unlink another user's file in a sticky dir", unlinkat(base, "sticky/other_file", 0),
           EPERM);
    expect("rename another user's file in a sticky dir",
           renameat(base, "sticky/other_file", base, "sticky/moved"), EPERM);
    fd = openat(base, "sticky/mine", O_CREAT | O_EXCL | O_WRONLY, 0644);
    expect("create my file in a sticky dir", fd, 0);
    if (fd >= 0)
        close(fd);
    expect("rename my file over another user's in a sticky dir",
           renameat(base, "sticky/mine", base, "sticky/other_file"), EPERM);
    expect("unlink my file in a sticky dir", unlinkat(base, "sticky/mine", 0), 0);

    /* A 0777 directory: everything, and what is made there is ours. */
    fd = openat(base, "open_dir/f", O_CREAT | O_EXCL | O_RDWR, 0644);
    expect("create in a 0777 dir", fd, 0);
    if (fd >= 0) {
        expect("write my file", write(fd, "mine\n", 5) == 5 ? 0 : -1, 0);
        expect("fstat my file", fstat(fd, &st), 0);
        check("my new file is owned by 65534:65534", st.st_uid == NOBODY && st.st_gid == NOBODY,
              "owned by %u:%u", st.st_uid, st.st_gid);
        expect("close my file", close(fd), 0);
    }
    n = slurp(base, "open_dir/f", buf, sizeof(buf));
    check("my file reads back", n == 5 && !strcmp(buf, "mine\n"), "read %zd bytes '%s'", n,
          n >= 0 ? buf : "");
    expect("stat my file", fstatat(base, "open_dir/f", &st, 0), 0);
    check("stat shows my file owned by 65534:65534", st.st_uid == NOBODY && st.st_gid == NOBODY,
          "owned by %u:%u", st.st_uid, st.st_gid);
    expect("chmod my file", fchmodat(base, "open_dir/f", 0600, 0), 0);
    expect("chown my file to root", fchownat(base, "open_dir/f", 0, 0, 0), EPERM);
    expect("chown my file to myself", fchownat(base, "open_dir/f", NOBODY, NOBODY, 0), 0);
    expect("utimensat(explicit) on my file", utimensat(base, "open_dir/f", ts, 0), 0);
    expect("set a user.* xattr on my file", setxattr("open_dir/f", "user.mine", "v", 1, 0), 0);
    expect("mkdir in a 0777 dir", mkdirat(base, "open_dir/d", 0755), 0);
    expect("stat my dir", fstatat(base, "open_dir/d", &st, 0), 0);
    check("my new dir is owned by 65534:65534", st.st_uid == NOBODY && st.st_gid == NOBODY,
          "owned by %u:%u", st.st_uid, st.st_gid);
    expect("rename in a 0777 dir", renameat(base, "open_dir/f", base, "open_dir/d/g"), 0);
    expect("unlink in a 0777 dir", unlinkat(base, "open_dir/d/g", 0), 0);
    expect("rmdir in a 0777 dir", unlinkat(base, "open_dir/d", AT_REMOVEDIR), 0);

    /* Search permission. */
    expect("stat a file under a 0700 root dir", fstatat(base, "priv/f", &st, 0), EACCES);
    expect("open a file under a 0700 root dir", openat(base, "priv/f", O_RDONLY), EACCES);
    expect("list a 0700 root dir", openat(base, "priv", O_RDONLY | O_DIRECTORY), EACCES);
    expect("stat a file under a 0711 root dir", fstatat(base, "search_only/f", &st, 0), 0);
    n = slurp(base, "search_only/f", buf, sizeof(buf));
    expect("read a 0644 file under a 0711 root dir", n, 0);
    expect("list a 0711 root dir", openat(base, "search_only", O_RDONLY | O_DIRECTORY), EACCES);

    /* A write, a truncate or an O_TRUNC open by a user without CAP_FSETID
     * drops set-user-ID, and set-group-ID where the group may execute. */
    fd = openat(base, "suid_w", O_WRONLY);
    expect("open a 06777 root file for writing", fd, 0);
    expect("write it", fd < 0 ? -1 : pwrite(fd, "w", 1, 0), 0);
    if (fd >= 0)
        close(fd);
    expect("truncate another", truncateat_helper("suid_t"), 0);
    fd = openat(base, "suid_o", O_WRONLY | O_TRUNC);
    expect("open a third with O_TRUNC", fd, 0);
    if (fd >= 0)
        close(fd);
    const char *privs[] = {"suid_w", "suid_t", "suid_o"};
    for (int i = 0; i < 3; i++) {
        char what[64];
        snprintf(what, sizeof(what), "%s lost setuid and setgid", privs[i]);
        bool got = fstatat(base, privs[i], &st, 0) == 0;
        check(what, got && (st.st_mode & 07777) == 0777, "mode %o", got ? st.st_mode & 07777 : 0);
    }
}

/* After the child: what it was refused must be as it was. */
static void parent_checks(void)
{
    char buf[256];
    struct stat st = {0};
    ssize_t n = slurp(base, "secret", buf, sizeof(buf));
    check("root: the 0600 file is intact", n >= 0 && !strcmp(buf, "secret\n"), "read '%s'",
          n >= 0 ? buf : "");
    n = slurp(base, "pub_ro", buf, sizeof(buf));
    check("root: the 0644 file is intact", n >= 0 && !strcmp(buf, "public\n"), "read '%s'",
          n >= 0 ? buf : "");
    int r = fstatat(base, "pub_ro", &st, 0);
    check("root: the 0644 file kept its mode and owner",
          !r && (st.st_mode & 07777) == 0644 && st.st_uid == 0 && st.st_gid == 0,
          "stat %d mode %04o owner %u:%u", r, st.st_mode & 07777, st.st_uid, st.st_gid);
    check("root: the sticky dir still holds root's file",
          !fstatat(base, "sticky/root_file", &st, 0), "stat: %s", strerror(errno));
    check("root: the sticky dir still holds the other user's file",
          !fstatat(base, "sticky/other_file", &st, 0) && st.st_uid == OTHER, "stat: %s, owner %u",
          strerror(errno), st.st_uid);
    check("root: the 0755 dir still holds its file", !fstatat(base, "ro_dir/file", &st, 0),
          "stat: %s", strerror(errno));
    check("root: nothing was created in the 0755 dir",
          fstatat(base, "ro_dir/new", &st, 0) && errno == ENOENT, "ro_dir/new exists");
}

static int rm_one(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return (type == FTW_DP ? rmdir(p) : unlink(p)) ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: perm_check DIR   (as root)\n");
        return 2;
    }
    if (geteuid() != 0) {
        fprintf(stderr, "perm_check: must run as root (it drops to %d in a child)\n", NOBODY);
        return 2;
    }
    umask(022);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/perm_check.%d", argv[1], (int)getpid());
    if (mkdir(path, 0755) || chmod(path, 0755)) {
        fprintf(stderr, "perm_check: mkdir %s: %s\n", path, strerror(errno));
        return 2;
    }
    base = open(path, O_RDONLY | O_DIRECTORY);
    if (base < 0 || setup()) {
        fprintf(stderr, "perm_check: setting up the fixtures in %s: %s\n", path, strerror(errno));
        return 2;
    }
    printf("perm_check: fixtures in %s; the child runs as %d:%d\n", path, NOBODY, NOBODY);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        gid_t g = NOBODY;
        if (setgroups(0, &g) || setresgid(NOBODY, NOBODY, NOBODY) ||
            setresuid(NOBODY, NOBODY, NOBODY)) {
            printf("FAIL dropping privileges: %s\n", strerror(errno));
            _exit(2);
        }
        if (geteuid() != NOBODY || getegid() != NOBODY || getgroups(0, NULL) != 0) {
            printf("FAIL still privileged after dropping\n");
            _exit(2);
        }
        /* Path-based calls (truncate, setxattr) go from here. */
        if (fchdir(base)) {
            printf("FAIL fchdir to the fixtures as %d: %s\n", NOBODY, strerror(errno));
            _exit(2);
        }
        child_checks();
        printf("child: %d check(s), %d failed\n", checks, failures);
        fflush(stdout);
        _exit(failures ? 1 : 0);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
        printf("FAIL perm_check: the unprivileged child did not finish (status 0x%x)\n", status);
        failures++;
    } else if (WEXITSTATUS(status) == 1) {
        failures++;
    }
    parent_checks();
    if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS))
        fprintf(stderr, "perm_check: warning: could not remove %s: %s\n", path, strerror(errno));
    if (failures) {
        printf("FAIL perm_check: see the FAIL lines above\n");
        return 1;
    }
    printf("PASS perm_check\n");
    return 0;
}
