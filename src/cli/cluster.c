/*
 * `stria up`, `stria down`, `stria status`: a whole cluster on one machine.
 *
 * `stria up --dir DIR` keeps everything of the cluster under DIR: the
 * shared key, one config per daemon (the same files an operator writes on
 * real nodes), the targets' data, logs and pid files, and the client.conf
 * that clients use. It starts whatever is not running (so it is idempotent,
 * and after a crash it restarts exactly what died), waits until every
 * target is online, and points ~/.config/stria/client.conf at DIR's
 * client.conf so that later commands find the cluster without flags.
 * Without --dir, `stria down` and `stria status` act on the cluster of
 * the client.conf every other command would use (cli_conf_path), so that
 * with two clusters $STRIA_CONF and --conf choose, not the last `up`.
 *
 * Then it mounts the cluster with stria-fuse (at DIR/mnt unless told
 * otherwise) and writes the mount point to DIR/run/mount; `stria down`
 * unmounts what that file names before it stops the daemons, since a
 * mount whose daemons are gone only returns errors. A mount is optional
 * unless asked for: without stria-fuse or /dev/fuse the cluster still
 * comes up. stria-fuse runs with -f, detached from us, so that what it
 * says while it serves goes to DIR/log/stria-fuse.log like the daemons'
 * output. Every wait on a child (stria-fuse, fusermount3) is bounded, so a
 * stuck mount never hangs `stria up` or `stria down`.
 */
#include "args.h"
#include "commands.h"
#include "connect.h"
#include "paths.h"

#include "../common/auth.h"
#include "../common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MARKER     "stria.cluster"
#define UP_WAIT_MS 20000

#define FUSE_BIN       "stria-fuse"
#define MOUNT_RECORD   "run/mount" /* mount points, one per line */
#define FUSE_LOG       "log/stria-fuse.log"
#define MOUNT_WAIT_MS  30000 /* for stria-fuse to mount, or to exit failing */
#define UMOUNT_WAIT_MS 10000
#define FUSE_EXIT_MS   5000 /* for stria-fuse to exit after the unmount */
#define FUSE_PIDS_MAX  16

/* Cluster directories are kept short enough for every path built from them. */
#define CL_DIR_MAX 1024

struct cluster {
    char dir[CL_DIR_MAX];
    char fsname[32];
    int mdts, osts;
    int metads; /* stria-metad processes; MDT i is served by metad i mod metads */
    int mgmt_port, meta_port, stor_port;
};

#define MAX_METADS 16
#define MAX_MDTS   64

enum svc { SVC_MGMT, SVC_META, SVC_STOR, SVC_N };
static const char *svc_bin[SVC_N] = {"stria-mgmtd", "stria-metad", "stria-stord"};
static const char *svc_name[SVC_N] = {"mgmtd", "metad", "stord"};

static void default_dir(char *buf, size_t len)
{
    const char *x = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    if (x && *x)
        snprintf(buf, len, "%s/stria/local", x);
    else
        snprintf(buf, len, "%s/.local/share/stria/local", home && *home ? home : "/tmp");
}

/* The directory a client.conf lies in, following links: a `stria up`
 * cluster's directory if the conf is one's. */
static void conf_dir(const char *conf, char *buf, size_t len)
{
    char real[PATH_MAX], copy[CLI_PATH_MAX];
    snprintf(copy, sizeof(copy), "%s", realpath(conf, real) ? real : conf);
    snprintf(buf, len, "%s", dirname(copy));
}

/* The directory of the `stria up` cluster a command acts on: --dir, else
 * that of the client.conf the command resolves (cli_conf_path: --conf,
 * $STRIA_CONF, the link), else the default. *conf gets the client.conf
 * that chose it, or "" when none did. */
static void pick_dir(const char *given, char *buf, size_t len, char *conf, size_t conf_len)
{
    conf[0] = '\0';
    if (given) {
        snprintf(buf, len, "%s", given);
        return;
    }
    if (cli_conf_path(conf, conf_len, NULL) == 0) {
        conf_dir(conf, buf, len);
        return;
    }
    conf[0] = '\0';
    default_dir(buf, len);
}

/* Ports for the daemons: n consecutive ones that bind now, outside the
 * kernel's ephemeral range, so that a daemon restarted later does not find
 * its port taken by some client's outgoing connection (a stria-metad
 * listens on one port per MDT). */
static int free_ports(int n)
{
    unsigned lo = 32768, hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%u %u", &lo, &hi) != 2)
            lo = 32768, hi = 60999;
        fclose(f);
    }
    /* Below the ephemeral range if it leaves room, else above it. */
    unsigned from = 10000, to = lo > 10000 + 1000 ? lo : 10000;
    if (to - from < 1000) {
        from = hi + 1;
        to = 65535;
    }
    uint32_t seed;
    if (auth_random(&seed, sizeof(seed)))
        seed = (uint32_t)getpid();
    for (int attempt = 0; attempt < 200; attempt++) {
        seed = seed * 1103515245u + 12345u;
        unsigned base = from + (seed >> 8) % (to - from - (unsigned)n);
        int fds[MAX_MDTS], got = 0;
        for (; got < n; got++) {
            fds[got] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            struct sockaddr_in a = {.sin_family = AF_INET,
                                    .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                                    .sin_port = htons((uint16_t)(base + (unsigned)got))};
            if (fds[got] < 0 || bind(fds[got], (struct sockaddr *)&a, sizeof(a)) < 0) {
                if (fds[got] >= 0)
                    close(fds[got]);
                break;
            }
        }
        for (int i = 0; i < got; i++)
            close(fds[i]);
        if (got == n)
            return (int)base;
    }
    return -1;
}

static int free_port(void)
{
    return free_ports(1);
}

static int write_text(const char *dir, const char *name, const char *text, mode_t mode)
{
    char path[CLI_PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int rc = util_write_file_atomic(path, text, strlen(text), mode);
    if (rc)
        fprintf(stderr, "stria up: cannot write %s: %s\n", path, strerror(-rc));
    return rc;
}

static int load_marker(const char *dir, struct cluster *c)
{
    char path[CLI_PATH_MAX + 64], *text = NULL;
    snprintf(path, sizeof(path), "%s/%s", dir, MARKER);
    int rc = util_read_file(path, 4096, &text, NULL);
    if (rc)
        return rc;
    memset(c, 0, sizeof(*c));
    snprintf(c->dir, sizeof(c->dir), "%s", dir);
    int got = 0;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        sscanf(l, "metads=%d", &c->metads);
        got += sscanf(l, "fsname=%31s", c->fsname) + sscanf(l, "mdts=%d", &c->mdts) +
               sscanf(l, "osts=%d", &c->osts) + sscanf(l, "mgmt_port=%d", &c->mgmt_port) +
               sscanf(l, "meta_port=%d", &c->meta_port) + sscanf(l, "stor_port=%d", &c->stor_port);
    }
    free(text);
    if (c->metads < 1) /* before several metads */
        c->metads = 1;
    if (c->mdts < 1 || c->mdts > MAX_MDTS || c->metads > c->mdts || c->metads > MAX_METADS)
        return -EINVAL;
    return got == 6 ? 0 : -EINVAL;
}

/* `stria up` without --dir: the cluster whose client.conf --conf or
 * $STRIA_CONF names, if it is a `stria up` cluster's, into buf. The link
 * is not followed: without --dir, up means the default directory. */
static bool named_dir(char *buf, size_t len)
{
    char conf[CLI_PATH_MAX];
    enum cli_conf_src src;
    struct cluster c;
    if (cli_conf_path(conf, sizeof(conf), &src) < 0 ||
        (src != CLI_CONF_OPTION && src != CLI_CONF_ENV))
        return false;
    conf_dir(conf, buf, len);
    return load_marker(buf, &c) == 0;
}

/* "metad" for the first stria-metad, "metad1", "metad2"... after it. */
static void svc_inst(enum svc s, int j, char *buf, size_t len)
{
    if (j)
        snprintf(buf, len, "%s%d", svc_name[s], j);
    else
        snprintf(buf, len, "%s", svc_name[s]);
}

static int instances(const struct cluster *c, enum svc s)
{
    return s == SVC_META ? c->metads : 1;
}

/* Lay out a new cluster directory: marker, key, configs, client.conf. */
static int create_cluster(struct cluster *c)
{
    int rc = util_mkdir_p(c->dir, 0755);
    if (rc) {
        fprintf(stderr, "stria up: cannot create %s: %s\n", c->dir, strerror(-rc));
        return rc;
    }
    c->mgmt_port = free_port();
    c->stor_port = free_port();
    if (c->mgmt_port < 0 || c->stor_port < 0)
        return -EADDRNOTAVAIL;
    char sub[CLI_PATH_MAX + 64], text[16384];
    const char *dirs[] = {"conf", "log", "run", "mgmt"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(sub, sizeof(sub), "%s/%s", c->dir, dirs[i]);
        if ((rc = util_mkdir_p(sub, 0755)))
            return rc;
    }
    snprintf(sub, sizeof(sub), "%s/cluster.key", c->dir);
    if ((rc = auth_key_generate(sub))) {
        fprintf(stderr, "stria up: cannot write %s: %s\n", sub, strerror(-rc));
        return rc;
    }
    snprintf(text, sizeof(text),
             "# Written by `stria up`: the daemons of this cluster use these configs.\n"
             "listen = 127.0.0.1:%d\nkey_file = %s/cluster.key\ndata_dir = %s/mgmt\n"
             "fsname = %s\n",
             c->mgmt_port, c->dir, c->dir, c->fsname);
    if ((rc = write_text(c->dir, "conf/mgmtd.conf", text, 0644)))
        return rc;
    /* MDT i goes to stria-metad i mod metads, which listens on one port per
     * MDT from its listen port on. */
    for (int j = 0; j < c->metads; j++) {
        int mine = (c->mdts - j + c->metads - 1) / c->metads;
        int port = free_ports(mine);
        if (port < 0)
            return -EADDRNOTAVAIL;
        if (j == 0)
            c->meta_port = port;
        char name[32], conf[64];
        svc_inst(SVC_META, j, name, sizeof(name));
        int n = snprintf(text, sizeof(text),
                         "# Written by `stria up`.\nlisten = 127.0.0.1:%d\nmgmt = 127.0.0.1:%d\n"
                         "key_file = %s/cluster.key\nnode = local-%s\nheartbeat_ms = 500\n"
                         "root_mdts = %d\n",
                         port, c->mgmt_port, c->dir, name, c->mdts);
        for (int i = j; i < c->mdts && n < (int)sizeof(text) - 200; i += c->metads)
            n += snprintf(text + n, sizeof(text) - (size_t)n, "mdt = %d:%s/mdt%d\n", i, c->dir, i);
        snprintf(conf, sizeof(conf), "conf/%s.conf", name);
        if ((rc = write_text(c->dir, conf, text, 0644)))
            return rc;
    }
    int n = snprintf(text, sizeof(text),
                     "# Written by `stria up`.\nlisten = 127.0.0.1:%d\nmgmt = 127.0.0.1:%d\n"
                     "key_file = %s/cluster.key\nnode = local-stor\nheartbeat_ms = 500\n",
                     c->stor_port, c->mgmt_port, c->dir);
    for (int i = 0; i < c->osts && n < (int)sizeof(text) - 200; i++)
        n += snprintf(text + n, sizeof(text) - (size_t)n, "ost = %d:%s/ost%d\n", i, c->dir, i);
    if ((rc = write_text(c->dir, "conf/stord.conf", text, 0644)))
        return rc;
    snprintf(text, sizeof(text),
             "# Client configuration of the cluster in this directory (`stria up`).\n"
             "mgmt = 127.0.0.1:%d\nkey_file = cluster.key\n",
             c->mgmt_port);
    if ((rc = write_text(c->dir, "client.conf", text, 0644)))
        return rc;
    /* The marker last: a directory without it is not a finished cluster. */
    snprintf(text, sizeof(text),
             "stria-cluster 1\nfsname=%s\nmdts=%d\nosts=%d\nmgmt_port=%d\nmeta_port=%d\n"
             "stor_port=%d\nmetads=%d\n",
             c->fsname, c->mdts, c->osts, c->mgmt_port, c->meta_port, c->stor_port, c->metads);
    return write_text(c->dir, MARKER, text, 0644);
}

static int pid_path(const struct cluster *c, enum svc s, int j, char *buf, size_t len)
{
    char name[32];
    svc_inst(s, j, name, sizeof(name));
    return snprintf(buf, len, "%s/run/%s.pid", c->dir, name) >= (int)len ? -ENAMETOOLONG : 0;
}

/* The pid of a running service, or 0. Checks the process is really ours. */
static pid_t running_pid(const struct cluster *c, enum svc s, int j)
{
    char path[CLI_PATH_MAX + 64], *text = NULL;
    pid_path(c, s, j, path, sizeof(path));
    if (util_read_file(path, 64, &text, NULL))
        return 0;
    pid_t pid = (pid_t)atoi(text);
    free(text);
    if (pid <= 0 || kill(pid, 0) < 0)
        return 0;
    char cmdpath[64], cmd[512] = "";
    snprintf(cmdpath, sizeof(cmdpath), "/proc/%d/cmdline", (int)pid);
    FILE *f = fopen(cmdpath, "r");
    if (f) {
        size_t n = fread(cmd, 1, sizeof(cmd) - 1, f);
        cmd[n] = '\0';
        fclose(f);
    }
    /* A recycled pid running something else is not our daemon. */
    if (!strstr(cmd, svc_bin[s]))
        return 0;
    /* A zombie child of ours counts as gone. */
    char statpath[64], st[256] = "";
    snprintf(statpath, sizeof(statpath), "/proc/%d/stat", (int)pid);
    if ((f = fopen(statpath, "r"))) {
        if (!fgets(st, sizeof(st), f))
            st[0] = '\0';
        fclose(f);
        char *rp = strrchr(st, ')');
        if (rp && rp[1] == ' ' && rp[2] == 'Z')
            return 0;
    }
    return pid;
}

/* Start argv[0] (a path) in a session of its own, with stdin from
 * /dev/null, stdout and stderr to out_fd and no other descriptor (a daemon
 * must not hold our caller's pipes open), in directory wd (NULL: ours).
 * Returns its pid or a negative errno; 127 is its exit status if it could
 * not be run. */
static pid_t spawn(char *const argv[], int out_fd, const char *wd)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid < 0 ? -errno : pid;
    setsid();
    int in = open("/dev/null", O_RDONLY);
    if (in < 0 || dup2(in, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0 ||
        (wd && chdir(wd) < 0))
        _exit(127);
    close_range(3, ~0u, 0);
    execv(argv[0], argv);
    _exit(127);
}

static int start_service(const struct cluster *c, enum svc s, int j, const char *bindir)
{
    char bin[CLI_PATH_MAX + 64], conf[CLI_PATH_MAX + 64], log[CLI_PATH_MAX + 64],
        pidf[CLI_PATH_MAX + 64], name[32];
    svc_inst(s, j, name, sizeof(name));
    snprintf(bin, sizeof(bin), "%s/%s", bindir, svc_bin[s]);
    snprintf(conf, sizeof(conf), "%s/conf/%s.conf", c->dir, name);
    snprintf(log, sizeof(log), "%s/log/%s.log", c->dir, name);
    pid_path(c, s, j, pidf, sizeof(pidf));
    if (access(bin, X_OK) < 0) {
        fprintf(stderr, "stria up: cannot run %s: %s\n", bin, strerror(errno));
        return -errno;
    }
    int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out < 0) {
        fprintf(stderr, "stria up: cannot open %s: %s\n", log, strerror(errno));
        return -errno;
    }
    char *const argv[] = {bin, "--config", conf, NULL};
    pid_t pid = spawn(argv, out, NULL);
    close(out);
    if (pid < 0)
        return pid;
    char text[32];
    snprintf(text, sizeof(text), "%d\n", (int)pid);
    int rc = util_write_file_atomic(pidf, text, strlen(text), 0644);
    printf("started %-12s pid %d  log %s\n", svc_bin[s], (int)pid, log);
    return rc;
}

static void bin_dir(char *buf, size_t len)
{
    char self[CLI_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        snprintf(buf, len, "/usr/local/bin");
        return;
    }
    self[n] = '\0';
    snprintf(buf, len, "%s", dirname(self));
}

/* Point ~/.config/stria/client.conf at this cluster's client.conf. */
static void link_conf(const struct cluster *c)
{
    const char *home = getenv("HOME");
    if (!home || !*home)
        return;
    char dir[CLI_PATH_MAX], link[CLI_PATH_MAX + 32], target[CLI_PATH_MAX + 32];
    snprintf(dir, sizeof(dir), "%s/.config/stria", home);
    snprintf(link, sizeof(link), "%s/client.conf", dir);
    snprintf(target, sizeof(target), "%s/client.conf", c->dir);
    struct stat st;
    if (lstat(link, &st) == 0 && !S_ISLNK(st.st_mode)) {
        printf("note: %s is your own file; left alone. Use --conf %s or STRIA_CONF.\n", link,
               target);
        return;
    }
    util_mkdir_p(dir, 0755);
    unlink(link);
    if (symlink(target, link) < 0)
        printf("note: cannot link %s: %s\n", link, strerror(errno));
}

static void unlink_conf(const struct cluster *c)
{
    const char *home = getenv("HOME");
    char link[CLI_PATH_MAX + 32], target[CLI_PATH_MAX + 32], want[CLI_PATH_MAX + 32];
    snprintf(link, sizeof(link), "%s/.config/stria/client.conf", home ? home : "");
    snprintf(want, sizeof(want), "%s/client.conf", c->dir);
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n > 0) {
        target[n] = '\0';
        if (!strcmp(target, want))
            unlink(link);
    }
}

/* Wait until every target of the cluster is online in the map; settle:
 * then give the MDTs a heartbeat round to learn of OSTs that have just
 * come online (an MDT that alone restarted fetches the whole map when it
 * starts). */
static int wait_online(const struct cluster *c, bool settle)
{
    char conf[CLI_PATH_MAX + 32];
    snprintf(conf, sizeof(conf), "%s/client.conf", c->dir);
    uint64_t deadline = util_now_mono_ns() + (uint64_t)UP_WAIT_MS * 1000000ull;
    int last = 0;
    while (util_now_mono_ns() < deadline) {
        stria_fs_t *fs;
        int rc = stria_connect(conf, &fs);
        if (rc == 0) {
            struct stria_target *t;
            size_t n;
            int mdt = 0, ost = 0;
            if ((rc = stria_targets(fs, &t, &n)) == 0) {
                for (size_t i = 0; i < n; i++) {
                    if (t[i].online && t[i].kind[0] == 'M' && (int)t[i].index < c->mdts)
                        mdt++;
                    if (t[i].online && t[i].kind[0] == 'O' && (int)t[i].index < c->osts)
                        ost++;
                }
                free(t);
            }
            stria_disconnect(fs);
            if (mdt == c->mdts && ost == c->osts) {
                if (settle)
                    usleep(1200 * 1000);
                return 0;
            }
        }
        last = rc;
        usleep(100 * 1000);
    }
    fprintf(stderr, "stria up: targets not online after %d s (%s); see the logs in %s/log\n",
            UP_WAIT_MS / 1000, last ? strerror(-last) : "some offline", c->dir);
    return -ETIMEDOUT;
}

/* True if dir does not exist or holds nothing. */
static bool dir_is_empty(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT;
    struct dirent *de;
    bool empty = true;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            empty = false;
    closedir(d);
    return empty;
}

/* ---- the FUSE mount ---- */

/* A program next to this binary, else in $PATH; its path into buf. */
static bool find_prog(const char *name, char *buf, size_t len)
{
    char dir[CLI_PATH_MAX];
    bin_dir(dir, sizeof(dir));
    if (snprintf(buf, len, "%s/%s", dir, name) < (int)len && access(buf, X_OK) == 0)
        return true;
    return util_find_in_path(name, buf, len);
}

/*
 * Run argv[0] (a path) with stdin from /dev/null and stdout and stderr to
 * out_fd, and wait at most ms for it. Returns its exit status, 128+N if
 * signal N killed it, 127 if it could not be run, -ETIMEDOUT (after
 * killing it) or a negative errno.
 */
static int run_bounded(char *const argv[], int out_fd, int ms)
{
    fflush(NULL); /* what we printed comes before what it prints to out_fd */
    pid_t pid = spawn(argv, out_fd, NULL);
    if (pid < 0)
        return pid;
    int st;
    uint64_t deadline = util_now_mono_ns() + (uint64_t)ms * 1000000ull;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -errno;
        if (util_now_mono_ns() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            return -ETIMEDOUT;
        }
        usleep(20 * 1000);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

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
    pid_t pid = spawn(argv, out_fd, "/");
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
static void client_conf(const struct cluster *c, char *buf, size_t len)
{
    char path[CL_DIR_MAX + 32], real[PATH_MAX];
    snprintf(path, sizeof(path), "%s/client.conf", c->dir);
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
        if (strcmp(arg0, FUSE_BIN) != 0)
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

/* Whether pid is gone (or a zombie, which no longer serves anything). */
static bool pid_gone(pid_t pid)
{
    char path[64], st[256] = "";
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return true;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return true;
    if (!fgets(st, sizeof(st), f))
        st[0] = '\0';
    fclose(f);
    char *rp = strrchr(st, ')');
    return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
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
                all_gone &= pid_gone(pids[i]);
            if (all_gone)
                return;
            usleep(50 * 1000);
        } while (util_now_mono_ns() < deadline);
        for (int i = 0; i < n; i++) {
            if (pid_gone(pids[i]))
                continue;
            if (round < 2)
                fprintf(stderr,
                        "stria %s: %s (pid %d) still running %d s after the unmount; "
                        "sending %s\n",
                        who, FUSE_BIN, (int)pids[i], ms / 1000, round == 0 ? "SIGTERM" : "SIGKILL");
            kill(pids[i], round == 0 ? SIGTERM : SIGKILL);
        }
    }
}

/* fusermount3 -u[z] mnt, its messages into msg; umount2(2) without it. */
static int fusermount(const char *mnt, bool lazy, char *msg, size_t len)
{
    char prog[CLI_PATH_MAX], flag[4];
    msg[0] = '\0';
    if (!find_prog("fusermount3", prog, sizeof(prog))) {
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
    int rc = run_bounded(argv, fileno(out), UMOUNT_WAIT_MS);
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
static char *recorded_mounts(const struct cluster *c)
{
    char path[CLI_PATH_MAX + 32], *text = NULL;
    snprintf(path, sizeof(path), "%s/%s", c->dir, MOUNT_RECORD);
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

static void record_mount(const struct cluster *c, const char *mnt)
{
    char path[CLI_PATH_MAX + 32];
    char *text = recorded_mounts(c);
    if (!recorded(text, mnt)) {
        size_t tl = text ? strlen(text) : 0, ml = strlen(mnt);
        char *all = malloc(tl + ml + 2);
        if (all) {
            memcpy(all, text ? text : "", tl);
            memcpy(all + tl, mnt, ml);
            memcpy(all + tl + ml, "\n", 2);
            snprintf(path, sizeof(path), "%s/%s", c->dir, MOUNT_RECORD);
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

/*
 * Mount the cluster at given (NULL: DIR/mnt) with stria-fuse, unless a
 * live stria mount of it is there already, and record the mount point.
 * Returns 0, or a negative errno after saying why on stderr.
 */
static int mount_cluster(const struct cluster *c, const char *given)
{
    char want[CLI_PATH_MAX + 8], mnt[PATH_MAX], conf[PATH_MAX], prog[CLI_PATH_MAX];
    char log[CLI_PATH_MAX + 32], opts[PATH_MAX + 64], msg[1024];
    struct mount_table ms;
    int rc;

    snprintf(want, sizeof(want), "%s/mnt", c->dir);
    if (given)
        snprintf(want, sizeof(want), "%s", given);
    if ((rc = util_mkdir_p(want, 0755)) < 0 || (rc = canon_mount_point(want, mnt)) < 0) {
        fprintf(stderr, "stria up: cannot mount at %s: %s\n", want, strerror(-rc));
        return rc;
    }
    client_conf(c, conf, sizeof(conf));
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
            record_mount(c, mnt);
            return 0;
        }
        if (ours) {
            printf("%s is a dead stria mount (its %s is gone); mounting it again\n", mnt, FUSE_BIN);
            if (fusermount(mnt, true, msg, sizeof(msg)) < 0) {
                fprintf(stderr, "stria up: cannot unmount the dead mount %s: %s\n", mnt, msg);
                return -EBUSY;
            }
        }
    }
    if (!find_prog(FUSE_BIN, prog, sizeof(prog))) {
        fprintf(stderr,
                "stria up: cannot mount at %s: %s is not installed (not next to stria, not in "
                "$PATH); it is built when libfuse3 (libfuse3-dev) is installed\n",
                mnt, FUSE_BIN);
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
    snprintf(log, sizeof(log), "%s/%s", c->dir, FUSE_LOG);
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
            fprintf(stderr, "stria up: %s did not mount %s within %d s; stopped it\n", FUSE_BIN,
                    mnt, MOUNT_WAIT_MS / 1000);
        else if (rc == 127)
            fprintf(stderr, "stria up: cannot run %s\n", prog);
        else
            fprintf(stderr, "stria up: %s could not mount %s (exit %d); it said:\n", FUSE_BIN, mnt,
                    rc);
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
        fprintf(stderr, "stria up: %s exited 0 but %s is not a %s mount; it said:\n", FUSE_BIN, mnt,
                CLI_MOUNT_TYPE);
        show_log(log, from);
        return -EIO;
    }
    record_mount(c, mnt);
    pid_t pid;
    if (fuse_pids(mnt, &pid, 1) > 0)
        printf("mounted   %s with %s pid %d  log %s\n", mnt, FUSE_BIN, (int)pid, log);
    else
        printf("mounted   %s with %s  log %s\n", mnt, FUSE_BIN, log);
    return 0;
}

int cmd_up(int argc, char **argv)
{
    static const struct option opts[] = {{"dir", required_argument, NULL, 'd'},
                                         {"mdts", required_argument, NULL, 'm'},
                                         {"metads", required_argument, NULL, 'k'},
                                         {"osts", required_argument, NULL, 'o'},
                                         {"fsname", required_argument, NULL, 'f'},
                                         {"no-mount", no_argument, NULL, 'n'},
                                         {"mount", required_argument, NULL, 'M'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *dir = NULL, *fsname = "stria", *mount_at = NULL;
    int mdts = 0, osts = 0, metads = 0, c;
    bool no_mount = false;
    optind = 1;
    opterr = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            dir = optarg;
            break;
        case 'm':
            mdts = atoi(optarg);
            if (mdts < 1 || mdts > MAX_MDTS)
                return cli_usage_error("up", "--mdts wants 1..%d", MAX_MDTS);
            break;
        case 'k':
            metads = atoi(optarg);
            if (metads < 1 || metads > MAX_METADS)
                return cli_usage_error("up", "--metads wants 1..%d", MAX_METADS);
            break;
        case 'o':
            osts = atoi(optarg);
            if (osts < 1 || osts > 64)
                return cli_usage_error("up", "--osts wants 1..64");
            break;
        case 'f':
            fsname = optarg;
            break;
        case 'n':
            no_mount = true;
            break;
        case 'M':
            if (!*optarg)
                return cli_usage_error("up", "--mount wants a directory");
            mount_at = optarg;
            break;
        case 'h':
            printf(
                "Usage: stria up [--dir DIR] [--mdts N [--metads K]] [--osts M] [--fsname NAME]\n"
                "                [--mount MNT | --no-mount]\n\n"
                "Start a cluster on this machine: one stria-mgmtd, K stria-metad serving\n"
                "the MDTs and one stria-stord serving the OSTs, all on 127.0.0.1, all state\n"
                "under DIR (default: the cluster whose client.conf --conf or $STRIA_CONF\n"
                "names, else $XDG_DATA_HOME/stria/local or ~/.local/share/stria/local).\n"
                "Runs again safely: it starts only what is not running. Writes DIR/client.conf\n"
                "and links ~/.config/stria/client.conf to it, so later commands need no flags.\n"
                "Once the targets are online it mounts the cluster with stria-fuse (as root\n"
                "with allow_other,default_permissions) and records the mount point in\n"
                "DIR/run/mount for `stria down`; a mount already there is left alone. Without\n"
                "stria-fuse or /dev/fuse it says so and carries on unmounted.\n"
                "  --mdts N     metadata targets (default 1, at most 64); the root directory\n"
                "               is striped over all of them\n"
                "  --metads K   stria-metad processes serving them (default 1): MDT i is\n"
                "               served by process i mod K\n"
                "  --osts M     object storage targets (default 4, at most 64)\n"
                "  --fsname N   file system name (default stria)\n"
                "  --mount MNT  mount at MNT (default DIR/mnt), created if missing; failing\n"
                "               to mount is then an error (exit 1)\n"
                "  --no-mount   do not mount\n");
            return CLI_OK;
        default:
            return cli_usage_error("up", NULL);
        }
    }
    if (optind < argc)
        return cli_usage_error("up", "unexpected argument '%s'", argv[optind]);
    if (mount_at && no_mount)
        return cli_usage_error("up", "--mount and --no-mount exclude each other");
    struct cluster cl = {0};
    char dbuf[CLI_PATH_MAX];
    if (dir)
        snprintf(dbuf, sizeof(dbuf), "%s", dir);
    else if (!named_dir(dbuf, sizeof(dbuf)))
        default_dir(dbuf, sizeof(dbuf));
    if (dbuf[0] != '/') {
        char cwd[CL_DIR_MAX], rel[CL_DIR_MAX];
        if (strlen(dbuf) >= sizeof(rel))
            return cli_usage_error("up", "directory path too long");
        memcpy(rel, dbuf, strlen(dbuf) + 1);
        if (!getcwd(cwd, sizeof(cwd)) ||
            snprintf(dbuf, sizeof(dbuf), "%s/%s", cwd, rel) >= (int)sizeof(dbuf))
            return cli_usage_error("up", "directory path too long");
    }
    if (strlen(dbuf) >= CL_DIR_MAX)
        return cli_usage_error("up", "--dir must be shorter than %d characters", CL_DIR_MAX);
    int rc = load_marker(dbuf, &cl);
    if (rc == 0) {
        if ((mdts && mdts != cl.mdts) || (osts && osts != cl.osts) ||
            (metads && metads != cl.metads)) {
            fprintf(stderr,
                    "stria up: %s holds a cluster with %d MDT(s) and %d OST(s), not the %d and "
                    "%d asked for.\nRun `stria up --dir %s` to use it, or `stria down --dir %s` "
                    "and remove it first.\n",
                    dbuf, cl.mdts, cl.osts, mdts ? mdts : cl.mdts, osts ? osts : cl.osts, dbuf,
                    dbuf);
            return CLI_FAIL;
        }
    } else if (rc == -ENOENT) {
        if (!dir_is_empty(dbuf)) {
            fprintf(stderr,
                    "stria up: %s is not empty and holds no Stria cluster; choose "
                    "another --dir\n",
                    dbuf);
            return CLI_FAIL;
        }
        if (metads > (mdts ? mdts : 1))
            return cli_usage_error("up", "--metads %d is more than the %d MDT(s)", metads,
                                   mdts ? mdts : 1);
        if (strlen(fsname) > 31 || !*fsname || strchr(fsname, ' ') || strchr(fsname, '/'))
            return cli_usage_error("up", "--fsname wants 1-31 characters, no spaces or '/'");
        memcpy(cl.dir, dbuf, strlen(dbuf) + 1); /* shorter than CL_DIR_MAX: checked above */
        snprintf(cl.fsname, sizeof(cl.fsname), "%s", fsname);
        cl.mdts = mdts ? mdts : 1;
        cl.metads = metads ? metads : 1;
        cl.osts = osts ? osts : 4;
        if ((rc = create_cluster(&cl)))
            return CLI_FAIL;
        printf("created cluster '%s' in %s: %d MDT, %d OSTs\n", cl.fsname, cl.dir, cl.mdts,
               cl.osts);
    } else {
        fprintf(stderr, "stria up: %s/%s is damaged (%s); not touching it\n", dbuf, MARKER,
                strerror(-rc));
        return CLI_FAIL;
    }
    char bindir[CLI_PATH_MAX];
    bin_dir(bindir, sizeof(bindir));
    bool settle = false; /* a storage or management service started */
    for (int s = 0; s < SVC_N; s++)
        for (int j = 0; j < instances(&cl, (enum svc)s); j++) {
            pid_t pid = running_pid(&cl, (enum svc)s, j);
            if (pid) {
                printf("running %-12s pid %d\n", svc_bin[s], (int)pid);
                continue;
            }
            if ((rc = start_service(&cl, (enum svc)s, j, bindir)))
                return CLI_FAIL;
            settle = settle || s != SVC_META;
            if (s == SVC_MGMT)
                usleep(100 * 1000);
        }
    if ((rc = wait_online(&cl, settle)))
        return CLI_FAIL;
    link_conf(&cl);
    if (!no_mount && (rc = mount_cluster(&cl, mount_at)) < 0) {
        if (mount_at)
            return CLI_FAIL;
        fprintf(stderr, "stria up: carrying on without a mount (--no-mount skips it); the "
                        "cluster is usable with the stria commands and libstria\n");
    }
    printf("cluster '%s' is up: %d MDT, %d OSTs, mgmt 127.0.0.1:%d\n"
           "client config: %s/client.conf (linked from ~/.config/stria/client.conf)\n",
           cl.fsname, cl.mdts, cl.osts, cl.mgmt_port, cl.dir);
    return CLI_OK;
}

/*
 * Call fn for every mount point of the cluster: those recorded in
 * DIR/run/mount (mounted or not) and any other stria mount of its
 * client.conf (made by hand or by mount(8)), each once. m is the stria
 * mount there now, NULL if none is.
 */
static void for_each_mount(const struct cluster *c,
                           void (*fn)(const struct cluster *c, const char *mnt,
                                      const struct mount_ent *m))
{
    char conf[PATH_MAX];
    struct mount_table ms = {0};
    char *text = recorded_mounts(c), *save = NULL;
    client_conf(c, conf, sizeof(conf));
    cli_mounts_read(&ms);
    char *copy = text ? strdup(text) : NULL;
    for (char *l = copy ? strtok_r(copy, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
        const struct mount_ent *m = cli_mount_at(&ms, l);
        fn(c, l, m && same_file(m->source, conf) ? m : NULL);
    }
    for (size_t i = 0; i < ms.n; i++) {
        const struct mount_ent *m = &ms.v[i];
        if (strcmp(m->fstype, CLI_MOUNT_TYPE) == 0 && cli_mount_at(&ms, m->point) == m &&
            !recorded(text, m->point) && same_file(m->source, conf))
            fn(c, m->point, m);
    }
    free(copy);
    free(text);
    mount_table_free(&ms);
}

static void unmount_cb(const struct cluster *c, const char *mnt, const struct mount_ent *m)
{
    (void)c;
    if (m)
        unmount_one("down", mnt);
}

/* Unmount every mount of the cluster and forget them. */
static void unmount_all(const struct cluster *c)
{
    char path[CLI_PATH_MAX + 32];
    for_each_mount(c, unmount_cb);
    snprintf(path, sizeof(path), "%s/%s", c->dir, MOUNT_RECORD);
    unlink(path);
}

static void status_cb(const struct cluster *c, const char *mnt, const struct mount_ent *m)
{
    pid_t pid;
    (void)c;
    if (!m)
        printf("  %-12s %s  not mounted\n", "mount", mnt);
    else if (fuse_pids(mnt, &pid, 1) > 0)
        printf("  %-12s %s  mounted  %s pid %d\n", "mount", mnt, FUSE_BIN, (int)pid);
    else if (mount_alive(mnt))
        printf("  %-12s %s  mounted\n", "mount", mnt);
    else
        printf("  %-12s %s  DEAD: its %s is gone; `stria up` mounts it again\n", "mount", mnt,
               FUSE_BIN);
}

/* The lines of `stria status` about the cluster's mounts. */
static void show_mounts(const struct cluster *c)
{
    char *text = recorded_mounts(c);
    bool any = text && *text;
    struct mount_table ms;
    char conf[PATH_MAX];
    client_conf(c, conf, sizeof(conf));
    if (!any && cli_mounts_read(&ms) == 0) {
        for (size_t i = 0; i < ms.n; i++)
            any |= strcmp(ms.v[i].fstype, CLI_MOUNT_TYPE) == 0 && same_file(ms.v[i].source, conf);
        mount_table_free(&ms);
    }
    free(text);
    if (any)
        for_each_mount(c, status_cb);
    else
        printf("  %-12s none (`stria up --dir %s` mounts it at %s/mnt)\n", "mount", c->dir, c->dir);
}

static int stop_service(const struct cluster *c, enum svc s, int j)
{
    pid_t pid = running_pid(c, s, j);
    char pidf[CLI_PATH_MAX + 64];
    pid_path(c, s, j, pidf, sizeof(pidf));
    if (!pid) {
        unlink(pidf);
        return 0;
    }
    kill(pid, SIGTERM);
    for (int i = 0; i < 100 && running_pid(c, s, j); i++) {
        waitpid(pid, NULL, WNOHANG);
        usleep(100 * 1000);
    }
    if (running_pid(c, s, j)) {
        fprintf(stderr, "stria down: %s (pid %d) ignored SIGTERM for 10 s; killing it\n",
                svc_bin[s], (int)pid);
        kill(pid, SIGKILL);
        usleep(100 * 1000);
    }
    unlink(pidf);
    printf("stopped %-12s pid %d\n", svc_bin[s], (int)pid);
    return 0;
}

int cmd_down(int argc, char **argv)
{
    static const struct option opts[] = {{"dir", required_argument, NULL, 'd'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *dir = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'd')
            dir = optarg;
        else if (c == 'h') {
            printf("Usage: stria down [--dir DIR]\n\nStop the cluster `stria up` started in DIR "
                   "(default: the one whose client.conf\nthe command uses: --conf, else "
                   "$STRIA_CONF, else ~/.config/stria/client.conf).\nData stays in "
                   "DIR; `stria up --dir DIR` starts it again.\n"
                   "First it unmounts the cluster's stria mounts (those in DIR/run/mount and any\n"
                   "other of DIR/client.conf) with fusermount3 -u; a busy mount is unmounted\n"
                   "lazily (fusermount3 -uz) and disappears when its last user lets go.\n");
            return CLI_OK;
        } else
            return cli_usage_error("down", NULL);
    }
    char dbuf[CLI_PATH_MAX], conf[CLI_PATH_MAX];
    pick_dir(dir, dbuf, sizeof(dbuf), conf, sizeof(conf));
    struct cluster cl;
    int rc = load_marker(dbuf, &cl);
    if (rc) {
        fprintf(stderr, "stria down: no Stria cluster in %s (%s)%s%s%s\n", dbuf, strerror(-rc),
                conf[0] ? ", where the client.conf " : "", conf, conf[0] ? " lies" : "");
        return CLI_FAIL;
    }
    unmount_all(&cl);
    stop_service(&cl, SVC_STOR, 0);
    for (int j = 0; j < cl.metads; j++)
        stop_service(&cl, SVC_META, j);
    stop_service(&cl, SVC_MGMT, 0);
    unlink_conf(&cl);
    printf("cluster '%s' in %s is down\n", cl.fsname, cl.dir);
    return CLI_OK;
}

int cmd_status(int argc, char **argv)
{
    static const struct option opts[] = {{"dir", required_argument, NULL, 'd'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *dir = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'd')
            dir = optarg;
        else if (c == 'h') {
            printf("Usage: stria status [--dir DIR]\n\nShow the cluster's targets as the "
                   "management service sees them (node, address, state, last heartbeat)\nand, "
                   "for a cluster started by `stria up`, its local processes and mounts. The\n"
                   "cluster: DIR's, else that of the client.conf the command uses (--conf,\n"
                   "else $STRIA_CONF, else ~/.config/stria/client.conf).\n");
            return CLI_OK;
        } else
            return cli_usage_error("status", NULL);
    }
    struct cluster cl;
    char dbuf[CLI_PATH_MAX], conf[CLI_PATH_MAX + 32];
    pick_dir(dir, dbuf, sizeof(dbuf), conf, sizeof(conf));
    bool local = load_marker(dbuf, &cl) == 0;
    if (local) {
        printf("local cluster '%s' in %s\n", cl.fsname, cl.dir);
        for (int s = 0; s < SVC_N; s++)
            for (int j = 0; j < instances(&cl, (enum svc)s); j++) {
                pid_t pid = running_pid(&cl, (enum svc)s, j);
                char name[48];
                snprintf(name, sizeof(name), "%s%s%.0d", svc_bin[s], j ? "#" : "", j);
                if (pid)
                    printf("  %-12s running  pid %d\n", name, (int)pid);
                else
                    printf("  %-12s stopped\n", name);
            }
        show_mounts(&cl);
    }
    stria_fs_t *fs;
    int rc;
    /* The client.conf that chose the cluster; with --dir (unless --conf
     * says otherwise) or for the default directory, the cluster's own. */
    if (local && !(dir && cli_conf)) {
        if (!conf[0])
            snprintf(conf, sizeof(conf), "%s/client.conf", cl.dir);
        rc = stria_connect(conf, &fs);
        if (rc) {
            fprintf(stderr, "stria status: management service unreachable: %s\n", strerror(-rc));
            return CLI_FAIL;
        }
    } else if (cli_connect(&fs)) {
        return CLI_FAIL;
    }
    char fsname[64];
    uint64_t epoch = 0;
    struct stria_target *t;
    size_t n;
    if ((rc = stria_cluster_info(fs, fsname, sizeof(fsname), &epoch)) ||
        (rc = stria_targets(fs, &t, &n))) {
        fprintf(stderr, "stria status: %s\n", strerror(-rc));
        stria_disconnect(fs);
        return CLI_FAIL;
    }
    printf("file system '%s', map epoch %llu\n", fsname, (unsigned long long)epoch);
    printf("%-10s %-16s %-24s %-8s %s\n", "TARGET", "NODE", "ADDRESS", "STATE", "HEARTBEAT");
    for (size_t i = 0; i < n; i++) {
        char name[16], addr[300], age[32];
        snprintf(name, sizeof(name), "%s%04x", t[i].kind, t[i].index);
        snprintf(addr, sizeof(addr), "%s:%u", t[i].host, t[i].port);
        if (t[i].heartbeat_age_ms == UINT64_MAX)
            snprintf(age, sizeof(age), "never since mgmt start");
        else
            snprintf(age, sizeof(age), "%.1f s ago", (double)t[i].heartbeat_age_ms / 1000.0);
        printf("%-10s %-16s %-24s %-8s %s\n", name, t[i].node, addr,
               t[i].online ? "online" : "OFFLINE", age);
    }
    free(t);
    stria_disconnect(fs);
    return CLI_OK;
}
