/*
 * The mount manager: stria-fuse mounts of a `stria up` cluster.
 *
 * mnt_mount starts stria-fuse with -f, detached from us (proc.c), so that
 * what it says while it serves goes to DIR/log/stria-fuse.log like the
 * daemons' output (daemonized, it would send it to /dev/null), and waits,
 * bounded, until mountinfo shows the mount or the process exits. The
 * mount point goes to DIR/run/mount; unmounting (for `stria down`) takes
 * what that file names and any other stria mount of DIR/client.conf,
 * unmounts lazily when busy, and sees each stria-fuse exit. A mount is
 * found by its source in mountinfo, which stria-fuse sets to the canonical
 * client.conf. Every wait on a child (stria-fuse, fusermount3) is bounded,
 * so a stuck mount never hangs `stria up` or `stria down`.
 */
#include "mount.h"

#include "paths.h"
#include "proc.h"

#include "../common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MOUNT_RECORD   "run/mount" /* mount points, one per line */
#define FUSE_LOG       "log/stria-fuse.log"
#define MOUNT_WAIT_MS  30000 /* for stria-fuse to mount, or to exit failing */
#define UMOUNT_WAIT_MS 10000
#define FUSE_EXIT_MS   5000 /* for stria-fuse to exit after the unmount */
#define FUSE_PIDS_MAX  16

/*
 * Start stria-fuse (argv, which has -f) and wait at most MOUNT_WAIT_MS for
 * mnt to become a stria mount. In the foreground, in a session of its own
 * and in "/" as it would be as a daemon, it keeps out_fd as its stdout and
 * stderr: daemonized, it would send what it says once it serves (an OST
 * out of reach, resends) to /dev/null. Returns 0 once mnt is mounted; its
 * exit status if it exits first (128+N if signal N killed it, 127 if it
 * could not be run); -ETIMEDOUT after killing it; or a negative errno.
 */
static int start_fuse(char *const argv[], int out_fd, const char *mnt)
{
    fflush(NULL); /* what we printed comes before what it prints to out_fd */
    pid_t pid = proc_spawn(argv, out_fd, "/", NULL);
    if (pid < 0)
        return pid;
    uint64_t deadline = util_now_mono_ns() + (uint64_t)MOUNT_WAIT_MS * 1000000ull;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0 && errno != EINTR)
            return -errno;
        struct mount_table ms;
        bool there = false;
        if (cli_mounts_read(&ms) == 0) {
            there = cli_mount_at(&ms, mnt) != NULL;
            mount_table_free(&ms);
        }
        if (there)
            return 0;
        if (util_now_mono_ns() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            return -ETIMEDOUT;
        }
        usleep(20 * 1000);
    }
}

/* DIR/client.conf, canonical when it can be: what a mount's source shows. */
static void client_conf(const char *dir, char *buf, size_t len)
{
    char path[CLI_PATH_MAX + 32], real[PATH_MAX];
    snprintf(path, sizeof(path), "%s/client.conf", dir);
    snprintf(buf, len, "%s", realpath(path, real) ? real : path);
}

static bool same_file(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    if (strcmp(a, b) == 0)
        return true;
    return realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

/* A mount point made absolute and canonical, without touching the mount
 * itself (whose stria-fuse may be gone): realpath of its parent. */
static int canon_mount_point(const char *given, char *out)
{
    char abs[CLI_PATH_MAX], cwd[CLI_PATH_MAX];
    if (strlen(given) >= sizeof(abs))
        return -ENAMETOOLONG;
    if (given[0] == '/')
        memcpy(abs, given, strlen(given) + 1);
    else if (!getcwd(cwd, sizeof(cwd)) || cli_path_join(cwd, given, abs, sizeof(abs)) < 0)
        return -ENAMETOOLONG;
    size_t n = strlen(abs);
    while (n > 1 && abs[n - 1] == '/')
        abs[--n] = '\0';
    char *slash = strrchr(abs, '/');
    char base[NAME_MAX + 1];
    if (strlen(slash + 1) > NAME_MAX)
        return -ENAMETOOLONG;
    snprintf(base, sizeof(base), "%s", slash + 1);
    if (slash == abs)
        abs[1] = '\0';
    else
        *slash = '\0';
    if (!realpath(abs, out))
        return -errno;
    if (!base[0] || !strcmp(base, ".") || !strcmp(base, "..")) {
        if (cli_path_join(out, base, abs, sizeof(abs)) < 0)
            return -ENAMETOOLONG;
        return realpath(abs, out) ? 0 : -errno;
    }
    size_t dl = strlen(out);
    if (dl + 1 + strlen(base) >= PATH_MAX)
        return -ENAMETOOLONG;
    snprintf(out + dl, PATH_MAX - dl, "%s%s", dl > 1 ? "/" : "", base);
    /* A symlink to the mount point: the kernel mounts on its target. */
    struct stat st;
    if (lstat(out, &st) == 0 && S_ISLNK(st.st_mode)) {
        snprintf(abs, sizeof(abs), "%s", out);
        if (!realpath(abs, out))
            return -errno;
    }
    return 0;
}

/* The stria-fuse processes serving mnt (run with mnt as an argument). */
static int fuse_pids(const char *mnt, pid_t *pids, int max)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    int n = 0;
    if (!d)
        return 0;
    while (n < max && (de = readdir(d))) {
        char path[300], cmd[8192];
        pid_t pid = (pid_t)atoi(de->d_name);
        if (pid <= 0 || pid == getpid())
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t len = read(fd, cmd, sizeof(cmd) - 1);
        close(fd);
        if (len <= 0)
            continue;
        cmd[len] = '\0';
        const char *arg0 = strrchr(cmd, '/') ? strrchr(cmd, '/') + 1 : cmd;
        if (strcmp(arg0, MNT_FUSE_BIN) != 0)
            continue;
        for (const char *a = cmd + strlen(cmd) + 1; a < cmd + len; a += strlen(a) + 1) {
            if (strcmp(a, mnt) == 0) {
                pids[n++] = pid;
                break;
            }
        }
    }
    closedir(d);
    return n;
}

/* Wait (bounded) for the stria-fuse processes of an unmounted mount to
 * exit, as they do once the kernel lets go; then make them. */
static void reap_fuse(const char *who, const pid_t *pids, int n)
{
    for (int round = 0; round < 3; round++) {
        int ms = round == 0 ? FUSE_EXIT_MS : 2000;
        uint64_t deadline = util_now_mono_ns() + (uint64_t)ms * 1000000ull;
        bool all_gone;
        do {
            all_gone = true;
            for (int i = 0; i < n; i++)
                all_gone &= proc_gone(pids[i]);
            if (all_gone)
                return;
            usleep(50 * 1000);
        } while (util_now_mono_ns() < deadline);
        for (int i = 0; i < n; i++) {
            if (proc_gone(pids[i]))
                continue;
            if (round < 2)
                fprintf(stderr,
                        "stria %s: %s (pid %d) still running %d s after the unmount; "
                        "sending %s\n",
                        who, MNT_FUSE_BIN, (int)pids[i], ms / 1000,
                        round == 0 ? "SIGTERM" : "SIGKILL");
            kill(pids[i], round == 0 ? SIGTERM : SIGKILL);
        }
    }
}

/* fusermount3 -u[z] mnt, its messages into msg; umount2(2) without it. */
static int fusermount(const char *mnt, bool lazy, char *msg, size_t len)
{
    char prog[CLI_PATH_MAX], flag[4];
    msg[0] = '\0';
    if (!proc_find_prog("fusermount3", prog, sizeof(prog))) {
        if (umount2(mnt, lazy ? MNT_DETACH : 0) == 0)
            return 0;
        snprintf(msg, len, "umount: %s: %s", mnt, strerror(errno));
        return errno == EBUSY ? -EBUSY : -errno;
    }
    snprintf(flag, sizeof(flag), "-u%s", lazy ? "z" : "");
    char *argv[] = {prog, flag, (char *)mnt, NULL};
    FILE *out = tmpfile();
    if (!out)
        return -errno;
    int rc = proc_run_bounded(argv, fileno(out), UMOUNT_WAIT_MS);
    rewind(out);
    size_t n = fread(msg, 1, len - 1, out);
    msg[n] = '\0';
    while (n > 0 && msg[n - 1] == '\n')
        msg[--n] = '\0';
    fclose(out);
    if (rc == -ETIMEDOUT)
        snprintf(msg, len, "fusermount3 -u %s did not finish in %d s", mnt, UMOUNT_WAIT_MS / 1000);
    if (rc == 0)
        return 0;
    return strstr(msg, "busy") ? -EBUSY : rc < 0 ? rc : -EIO;
}

/* Unmount a stria mount, lazily if it is busy, and see its stria-fuse exit. */
static int unmount_one(const char *who, const char *mnt)
{
    pid_t pids[FUSE_PIDS_MAX];
    char msg[1024];
    int n = fuse_pids(mnt, pids, FUSE_PIDS_MAX);
    int rc = fusermount(mnt, false, msg, sizeof(msg));
    bool lazy = rc == -EBUSY;
    if (lazy) {
        printf("%s is busy (open files or a shell inside it); unmounted lazily: it disappears "
               "when the last user lets go\n",
               mnt);
        rc = fusermount(mnt, true, msg, sizeof(msg));
    }
    if (rc < 0)
        fprintf(stderr, "stria %s: cannot unmount %s: %s\n", who, mnt,
                msg[0] ? msg : strerror(-rc));
    else
        printf("unmounted %s%s\n", mnt, lazy ? " (lazily)" : "");
    reap_fuse(who, pids, n);
    return rc;
}

/* The mount points recorded in DIR/run/mount, as one string of lines;
 * NULL if none. Free with free(). */
static char *recorded_mounts(const char *dir)
{
    char path[CLI_PATH_MAX + 32], *text = NULL;
    snprintf(path, sizeof(path), "%s/%s", dir, MOUNT_RECORD);
    if (util_read_file(path, 1 << 20, &text, NULL) < 0)
        return NULL;
    return text;
}

/* Whether mnt is a line of the recorded text. */
static bool recorded(const char *text, const char *mnt)
{
    size_t ml = strlen(mnt);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, mnt, ml) == 0 && (l[ml] == '\n' || l[ml] == '\0'))
            return true;
    return false;
}

static void record_mount(const char *dir, const char *mnt)
{
    char path[CLI_PATH_MAX + 32];
    char *text = recorded_mounts(dir);
    if (!recorded(text, mnt)) {
        size_t tl = text ? strlen(text) : 0, ml = strlen(mnt);
        char *all = malloc(tl + ml + 2);
        if (all) {
            memcpy(all, text ? text : "", tl);
            memcpy(all + tl, mnt, ml);
            memcpy(all + tl + ml, "\n", 2);
            snprintf(path, sizeof(path), "%s/%s", dir, MOUNT_RECORD);
            int rc = util_write_file_atomic(path, all, tl + ml + 1, 0644);
            if (rc < 0)
                fprintf(stderr, "stria up: cannot record the mount in %s: %s\n", path,
                        strerror(-rc));
            free(all);
        }
    }
    free(text);
}

/* Whether a stria mount still answers: a dead one (its stria-fuse gone)
 * fails with ENOTCONN. Only looked at when no stria-fuse of ours serves it,
 * so a live but slow mount is never waited on. */
static bool mount_alive(const char *mnt)
{
    pid_t pid;
    struct stat st;
    if (fuse_pids(mnt, &pid, 1) > 0)
        return true;
    return !(stat(mnt, &st) < 0 && errno == ENOTCONN);
}

/* Print what stria-fuse wrote to its log since offset, indented. */
static void show_log(const char *log, off_t from)
{
    char buf[2048];
    int fd = open(log, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    if (end - from > (off_t)sizeof(buf) - 1)
        from = end - (off_t)sizeof(buf) + 1;
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, from);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    char *save = NULL;
    for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        fprintf(stderr, "  %s\n", l);
}

int mnt_mount(const char *dir, const char *given)
{
    char want[CLI_PATH_MAX + 8], mnt[PATH_MAX], conf[PATH_MAX], prog[CLI_PATH_MAX];
    char log[CLI_PATH_MAX + 32], opts[PATH_MAX + 64], msg[1024];
    struct mount_table ms;
    int rc;

    snprintf(want, sizeof(want), "%s/mnt", dir);
    if (given)
        snprintf(want, sizeof(want), "%s", given);
    if ((rc = util_mkdir_p(want, 0755)) < 0 || (rc = canon_mount_point(want, mnt)) < 0) {
        fprintf(stderr, "stria up: cannot mount at %s: %s\n", want, strerror(-rc));
        return rc;
    }
    client_conf(dir, conf, sizeof(conf));
    if (cli_mounts_read(&ms) == 0) {
        const struct mount_ent *m = cli_mount_at(&ms, mnt);
        bool ours = m && same_file(m->source, conf), alive = ours && mount_alive(mnt);
        if (m && !ours)
            fprintf(stderr,
                    "stria up: cannot mount at %s: it is a stria mount of another "
                    "cluster (%s) already\n",
                    mnt, m->source);
        mount_table_free(&ms);
        if (m && !ours)
            return -EBUSY;
        if (alive) {
            printf("mounted   %s (already)\n", mnt);
            record_mount(dir, mnt);
            return 0;
        }
        if (ours) {
            printf("%s is a dead stria mount (its %s is gone); mounting it again\n", mnt,
                   MNT_FUSE_BIN);
            if (fusermount(mnt, true, msg, sizeof(msg)) < 0) {
                fprintf(stderr, "stria up: cannot unmount the dead mount %s: %s\n", mnt, msg);
                return -EBUSY;
            }
        }
    }
    if (!proc_find_prog(MNT_FUSE_BIN, prog, sizeof(prog))) {
        fprintf(stderr,
                "stria up: cannot mount at %s: %s is not installed (not next to stria, not in "
                "$PATH); it is built when libfuse3 (libfuse3-dev) is installed\n",
                mnt, MNT_FUSE_BIN);
        return -ENOENT;
    }
    int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
    } else if (errno != EACCES || geteuid() == 0) {
        /* A user may still mount through the setuid fusermount3. */
        rc = -errno;
        fprintf(stderr,
                "stria up: cannot mount at %s: /dev/fuse: %s (load the module: modprobe fuse; "
                "in a container, run it with --device /dev/fuse --cap-add SYS_ADMIN)\n",
                mnt, strerror(-rc));
        return rc;
    }
    if (strchr(conf, ',')) {
        fprintf(stderr, "stria up: cannot mount: the path %s has a ',', which -o cannot carry\n",
                conf);
        return -EINVAL;
    }
    snprintf(opts, sizeof(opts), "conf=%s%s", conf,
             geteuid() == 0 ? ",allow_other,default_permissions" : "");
    snprintf(log, sizeof(log), "%s/%s", dir, FUSE_LOG);
    int logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (logfd < 0) {
        rc = -errno;
        fprintf(stderr, "stria up: cannot open %s: %s\n", log, strerror(-rc));
        return rc;
    }
    off_t from = lseek(logfd, 0, SEEK_END);
    char fg_flag[] = "-f", opt_flag[] = "-o";
    char *argv[] = {prog, fg_flag, opt_flag, opts, mnt, NULL};
    rc = start_fuse(argv, logfd, mnt);
    close(logfd);
    if (rc != 0) {
        if (rc == -ETIMEDOUT)
            fprintf(stderr, "stria up: %s did not mount %s within %d s; stopped it\n", MNT_FUSE_BIN,
                    mnt, MOUNT_WAIT_MS / 1000);
        else if (rc == 127)
            fprintf(stderr, "stria up: cannot run %s\n", prog);
        else
            fprintf(stderr, "stria up: %s could not mount %s (exit %d); it said:\n", MNT_FUSE_BIN,
                    mnt, rc);
        show_log(log, from);
        /* Half-done (a timeout): leave nothing mounted behind. */
        if (cli_mounts_read(&ms) == 0) {
            if (cli_mount_at(&ms, mnt))
                unmount_one("up", mnt);
            mount_table_free(&ms);
        }
        return rc < 0 ? rc : -EIO;
    }
    bool there = false;
    if (cli_mounts_read(&ms) == 0) {
        there = cli_mount_at(&ms, mnt) != NULL;
        mount_table_free(&ms);
    }
    if (!there) {
        fprintf(stderr, "stria up: %s exited 0 but %s is not a %s mount; it said:\n", MNT_FUSE_BIN,
                mnt, CLI_MOUNT_TYPE);
        show_log(log, from);
        return -EIO;
    }
    record_mount(dir, mnt);
    /* The kernel's first look at the root, now, while nothing else uses
     * the mount. Until one of its GETATTRs is taken, the kernel holds the
     * root as mode 0 owned by root, and it throws a GETATTR's reply away
     * when a revocation dropped the root's attributes on the way (another
     * client's create there): a first create by another user at such a
     * moment was refused (EACCES). Once taken, such a loss leaves the
     * attributes of this look, not none. After the record: a mount that
     * hangs here is still one `stria down` knows. */
    struct stat root_st;
    if (stat(mnt, &root_st) != 0)
        fprintf(stderr, "stria up: %s mounted, but a stat of it failed: %s\n", mnt,
                strerror(errno));
    pid_t pid;
    if (fuse_pids(mnt, &pid, 1) > 0)
        printf("mounted   %s with %s pid %d  log %s\n", mnt, MNT_FUSE_BIN, (int)pid, log);
    else
        printf("mounted   %s with %s  log %s\n", mnt, MNT_FUSE_BIN, log);
    return 0;
}

/*
 * Call fn for every mount point of the cluster: those recorded in
 * DIR/run/mount (mounted or not) and any other stria mount of its
 * client.conf (made by hand or by mount(8)), each once. m is the stria
 * mount there now, NULL if none is.
 */
static void for_each_mount(const char *dir, void (*fn)(const char *mnt, const struct mount_ent *m))
{
    char conf[PATH_MAX];
    struct mount_table ms = {0};
    char *text = recorded_mounts(dir), *save = NULL;
    client_conf(dir, conf, sizeof(conf));
    cli_mounts_read(&ms);
    char *copy = text ? strdup(text) : NULL;
    for (char *l = copy ? strtok_r(copy, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
        const struct mount_ent *m = cli_mount_at(&ms, l);
        fn(l, m && same_file(m->source, conf) ? m : NULL);
    }
    for (size_t i = 0; i < ms.n; i++) {
        const struct mount_ent *m = &ms.v[i];
        if (strcmp(m->fstype, CLI_MOUNT_TYPE) == 0 && cli_mount_at(&ms, m->point) == m &&
            !recorded(text, m->point) && same_file(m->source, conf))
            fn(m->point, m);
    }
    free(copy);
    free(text);
    mount_table_free(&ms);
}

static void unmount_cb(const char *mnt, const struct mount_ent *m)
{
    if (m)
        unmount_one("down", mnt);
}

void mnt_unmount_all(const char *dir)
{
    char path[CLI_PATH_MAX + 32];
    for_each_mount(dir, unmount_cb);
    snprintf(path, sizeof(path), "%s/%s", dir, MOUNT_RECORD);
    unlink(path);
}

static void status_cb(const char *mnt, const struct mount_ent *m)
{
    pid_t pid;
    if (!m)
        printf("  %-12s %s  not mounted\n", "mount", mnt);
    else if (fuse_pids(mnt, &pid, 1) > 0)
        printf("  %-12s %s  mounted  %s pid %d\n", "mount", mnt, MNT_FUSE_BIN, (int)pid);
    else if (mount_alive(mnt))
        printf("  %-12s %s  mounted\n", "mount", mnt);
    else
        printf("  %-12s %s  DEAD: its %s is gone; `stria up` mounts it again\n", "mount", mnt,
               MNT_FUSE_BIN);
}

void mnt_show(const char *dir)
{
    char *text = recorded_mounts(dir);
    bool any = text && *text;
    struct mount_table ms;
    char conf[PATH_MAX];
    client_conf(dir, conf, sizeof(conf));
    if (!any && cli_mounts_read(&ms) == 0) {
        for (size_t i = 0; i < ms.n; i++)
            any |= strcmp(ms.v[i].fstype, CLI_MOUNT_TYPE) == 0 && same_file(ms.v[i].source, conf);
        mount_table_free(&ms);
    }
    free(text);
    if (any)
        for_each_mount(dir, status_cb);
    else
        printf("  %-12s none (`stria up --dir %s` mounts it at %s/mnt)\n", "mount", dir, dir);
}
