/*
 * `stria up`, `stria down`, `stria status`: a whole cluster on one machine.
 *
 * `stria up --dir DIR` keeps everything of the cluster under DIR (local.c
 * lays it out). It starts whatever is not running (so it is idempotent,
 * and after a crash it restarts exactly what died; proc.c starts and
 * stops the daemons), waits until every target is online, and points
 * ~/.config/stria/client.conf at DIR's client.conf so that later commands
 * find the cluster without flags. Without --dir, `stria down` and `stria
 * status` act on the cluster of the client.conf every other command would
 * use (cli_conf_path), so that with two clusters $STRIA_CONF and --conf
 * choose, not the last `up`.
 *
 * Then it mounts the cluster with stria-fuse (mount.c; at DIR/mnt unless
 * told otherwise); `stria down` unmounts the cluster's mounts before it
 * stops the daemons, since a mount whose daemons are gone only returns
 * errors. A mount is optional unless asked for: without stria-fuse or
 * /dev/fuse the cluster still comes up.
 */
#include "args.h"
#include "commands.h"
#include "connect.h"
#include "local.h"
#include "mount.h"
#include "proc.h"

#include "../common/util.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define UP_WAIT_MS     20000
#define UP_MAX_STARTED (2 + LOCAL_MAX_MDTS) /* mgmtd, the metads, stord */

/* The daemons this `stria up` started. Each is told to say READY=1 on a
 * datagram socket of ours ($NOTIFY_SOCKET, the protocol of systemd's
 * Type=notify units, which the daemons speak once they serve): the map
 * may still call online the targets of a daemon that was just stopped,
 * before its heartbeats are missed, so targets online is not enough. A
 * child that exits instead is reported at once, with the end of its log,
 * rather than as targets not online after UP_WAIT_MS. */
struct started {
    int n;
    struct {
        pid_t pid;
        int fd; /* our end of its $NOTIFY_SOCKET; -1 once it said READY=1 */
        char name[32];
        char log[CLI_PATH_MAX + 64];
    } d[UP_MAX_STARTED];
};

/* A datagram socket for a daemon's readiness, bound to an abstract name
 * the kernel picks (autobind: unique, not guessable in advance), put in
 * *name as $NOTIFY_SOCKET writes it ("@..."); -errno if none. */
static int ready_socket(char *name, size_t len)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    socklen_t al = sizeof(a);
    int rc = 0;
    int on = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) < 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof(sa_family_t)) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) < 0)
        rc = -errno;
    else if (al <= offsetof(struct sockaddr_un, sun_path) + 1 || a.sun_path[0] != '\0')
        rc = -EINVAL;
    size_t n = al - offsetof(struct sockaddr_un, sun_path) - 1;
    if (rc == 0 && (n + 2 > len || memchr(a.sun_path + 1, '\0', n)))
        rc = -ENAMETOOLONG;
    if (rc) {
        close(fd);
        return rc;
    }
    name[0] = '@';
    memcpy(name + 1, a.sun_path + 1, n);
    name[n + 1] = '\0';
    return fd;
}

/* The next datagram on fd into msg (NUL-terminated), with the pid the
 * kernel vouches for as its sender (SO_PASSCRED; 0 if none came): the
 * length, or -1 when none is waiting. */
static ssize_t recv_from_pid(int fd, char *msg, size_t cap, pid_t *pid)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(struct ucred))];
    } ctl;
    struct iovec iov = {msg, cap - 1};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl, .msg_controllen = sizeof(ctl)};
    ssize_t got = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    if (got < 0)
        return -1;
    msg[got] = '\0';
    *pid = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
            c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
            struct ucred u;
            memcpy(&u, CMSG_DATA(c), sizeof(u));
            *pid = u.pid;
        }
    return got;
}

/* Whether every daemon this command started has said READY=1. Only the
 * daemon's own word counts: the socket's abstract name can be read from
 * /proc/net/unix by anyone on the node, who could otherwise say it. */
static bool all_ready(struct started *st)
{
    bool all = true;
    for (int i = 0; i < st->n; i++) {
        char msg[256];
        pid_t from;
        /* A bounded number a call: a process flooding the socket must not
         * keep us here past UP_WAIT_MS. */
        for (int k = 0;
             k < 64 && st->d[i].fd >= 0 && recv_from_pid(st->d[i].fd, msg, sizeof(msg), &from) >= 0;
             k++) {
            if (from != st->d[i].pid)
                continue;
            if (strncmp(msg, "READY=1", 7) == 0 || strstr(msg, "\nREADY=1")) {
                close(st->d[i].fd);
                st->d[i].fd = -1;
            }
        }
        all = all && st->d[i].fd < 0;
    }
    return all;
}

static void started_free(struct started *st)
{
    for (int i = 0; i < st->n; i++)
        if (st->d[i].fd >= 0)
            close(st->d[i].fd);
    st->n = 0;
}

/* The last line of the file at path that has text, into buf ("" if none). */
static void last_line(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0])
            snprintf(buf, len, "%s", line);
    }
    fclose(f);
}

/* Whether a daemon this command started has exited; reported if so. */
static bool one_exited(const struct started *st)
{
    for (int i = 0; i < st->n; i++) {
        int status;
        if (waitpid(st->d[i].pid, &status, WNOHANG) != st->d[i].pid)
            continue;
        char why[32], tail[512];
        if (WIFEXITED(status))
            snprintf(why, sizeof(why), "exit status %d", WEXITSTATUS(status));
        else
            snprintf(why, sizeof(why), "signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        last_line(st->d[i].log, tail, sizeof(tail));
        fprintf(stderr, "stria up: %s (pid %d) exited at start (%s); the end of %s:\n  %s\n",
                st->d[i].name, (int)st->d[i].pid, why, st->d[i].log, tail[0] ? tail : "(empty)");
        return true;
    }
    return false;
}

/* Wait until every target of the cluster is online in the map; settle:
 * then give the MDTs a heartbeat round to learn of OSTs that have just
 * come online (an MDT that alone restarted fetches the whole map when it
 * starts). */
static int wait_online(const struct local_cluster *c, bool settle, struct started *st)
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
            if (mdt == c->mdts && ost == c->osts && all_ready(st)) {
                if (settle)
                    usleep(1200 * 1000);
                return 0;
            }
        }
        last = rc;
        if (one_exited(st))
            return -ESRCH;
        usleep(100 * 1000);
    }
    for (int i = 0; i < st->n; i++)
        if (st->d[i].fd >= 0)
            fprintf(stderr, "stria up: %s (pid %d) has not said it serves (READY=1)\n",
                    st->d[i].name, (int)st->d[i].pid);
    fprintf(stderr, "stria up: not up after %d s (%s); see the logs in %s/log\n", UP_WAIT_MS / 1000,
            last ? strerror(-last) : "targets offline or daemons not ready", c->dir);
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

/* The pid of daemon j of kind s if it runs, else 0. */
static pid_t running_pid(const struct local_cluster *c, enum local_svc s, int j)
{
    char pidf[CLI_PATH_MAX + 64];
    if (local_pid_path(c, s, j, pidf, sizeof(pidf)) < 0)
        return 0;
    return proc_running(pidf, local_svc_bin[s]);
}

static int start_service(const struct local_cluster *c, enum local_svc s, int j, const char *bindir,
                         struct started *st)
{
    char bin[CLI_PATH_MAX + 64], conf[CLI_PATH_MAX + 64], log[CLI_PATH_MAX + 64],
        pidf[CLI_PATH_MAX + 64], name[32];
    local_svc_name(s, j, name, sizeof(name));
    snprintf(bin, sizeof(bin), "%s/%s", bindir, local_svc_bin[s]);
    snprintf(conf, sizeof(conf), "%s/conf/%s.conf", c->dir, name);
    snprintf(log, sizeof(log), "%s/log/%s.log", c->dir, name);
    local_pid_path(c, s, j, pidf, sizeof(pidf));
    pid_t pid = 0;
    char sock[64];
    int fd = st->n < UP_MAX_STARTED ? ready_socket(sock, sizeof(sock)) : -1;
    /* The child gets our socket or none: never a service manager's that
     * started this command. */
    int rc = proc_start(bin, conf, log, pidf, fd >= 0 ? sock : NULL, &pid);
    if (pid > 0)
        printf("started %-12s pid %d  log %s\n", local_svc_bin[s], (int)pid, log);
    if (pid > 0 && fd >= 0) {
        st->d[st->n].pid = pid;
        st->d[st->n].fd = fd;
        snprintf(st->d[st->n].name, sizeof(st->d[st->n].name), "%s", local_svc_bin[s]);
        snprintf(st->d[st->n].log, sizeof(st->d[st->n].log), "%s", log);
        st->n++;
    } else if (fd >= 0) {
        close(fd);
    }
    return rc;
}

static void stop_service(const struct local_cluster *c, enum local_svc s, int j)
{
    char pidf[CLI_PATH_MAX + 64];
    local_pid_path(c, s, j, pidf, sizeof(pidf));
    pid_t pid = proc_stop(pidf, local_svc_bin[s]);
    if (pid)
        printf("stopped %-12s pid %d\n", local_svc_bin[s], (int)pid);
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
            if (mdts < 1 || mdts > LOCAL_MAX_MDTS)
                return cli_usage_error("up", "--mdts wants 1..%d", LOCAL_MAX_MDTS);
            break;
        case 'k':
            metads = atoi(optarg);
            if (metads < 1 || metads > LOCAL_MAX_METADS)
                return cli_usage_error("up", "--metads wants 1..%d", LOCAL_MAX_METADS);
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
    struct local_cluster cl = {0};
    char dbuf[CLI_PATH_MAX];
    if (dir)
        snprintf(dbuf, sizeof(dbuf), "%s", dir);
    else if (!local_named_dir(dbuf, sizeof(dbuf)))
        local_default_dir(dbuf, sizeof(dbuf));
    if (dbuf[0] != '/') {
        char cwd[LOCAL_DIR_MAX], rel[LOCAL_DIR_MAX];
        if (strlen(dbuf) >= sizeof(rel))
            return cli_usage_error("up", "directory path too long");
        memcpy(rel, dbuf, strlen(dbuf) + 1);
        if (!getcwd(cwd, sizeof(cwd)) ||
            snprintf(dbuf, sizeof(dbuf), "%s/%s", cwd, rel) >= (int)sizeof(dbuf))
            return cli_usage_error("up", "directory path too long");
    }
    if (strlen(dbuf) >= LOCAL_DIR_MAX)
        return cli_usage_error("up", "--dir must be shorter than %d characters", LOCAL_DIR_MAX);
    int rc = local_load(dbuf, &cl);
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
        memcpy(cl.dir, dbuf, strlen(dbuf) + 1); /* shorter than LOCAL_DIR_MAX: checked above */
        snprintf(cl.fsname, sizeof(cl.fsname), "%s", fsname);
        cl.mdts = mdts ? mdts : 1;
        cl.metads = metads ? metads : 1;
        cl.osts = osts ? osts : 4;
        if ((rc = local_create(&cl)))
            return CLI_FAIL;
        printf("created cluster '%s' in %s: %d MDT, %d OSTs\n", cl.fsname, cl.dir, cl.mdts,
               cl.osts);
    } else {
        fprintf(stderr, "stria up: %s/%s is damaged (%s); not touching it\n", dbuf, LOCAL_MARKER,
                strerror(-rc));
        return CLI_FAIL;
    }
    char bindir[CLI_PATH_MAX];
    proc_bin_dir(bindir, sizeof(bindir));
    /* One exited daemon is waited for and reported (one_exited), which an
     * inherited SIG_IGN for SIGCHLD would prevent. */
    signal(SIGCHLD, SIG_DFL);
    bool settle = false; /* a storage or management service started */
    struct started st = {0};
    for (int s = 0; s < LOCAL_NSVC; s++)
        for (int j = 0; j < local_instances(&cl, (enum local_svc)s); j++) {
            pid_t pid = running_pid(&cl, (enum local_svc)s, j);
            if (pid) {
                printf("running %-12s pid %d\n", local_svc_bin[s], (int)pid);
                continue;
            }
            if ((rc = start_service(&cl, (enum local_svc)s, j, bindir, &st))) {
                started_free(&st);
                return CLI_FAIL;
            }
            settle = settle || s != LOCAL_META;
            if (s == LOCAL_MGMT)
                usleep(100 * 1000);
        }
    rc = wait_online(&cl, settle, &st);
    started_free(&st);
    if (rc)
        return CLI_FAIL;
    local_link_conf(&cl);
    if (!no_mount && (rc = mnt_mount(cl.dir, mount_at)) < 0) {
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
    local_pick_dir(dir, dbuf, sizeof(dbuf), conf, sizeof(conf));
    struct local_cluster cl;
    int rc = local_load(dbuf, &cl);
    if (rc) {
        fprintf(stderr, "stria down: no Stria cluster in %s (%s)%s%s%s\n", dbuf, strerror(-rc),
                conf[0] ? ", where the client.conf " : "", conf, conf[0] ? " lies" : "");
        return CLI_FAIL;
    }
    mnt_unmount_all(cl.dir);
    stop_service(&cl, LOCAL_STOR, 0);
    for (int j = 0; j < cl.metads; j++)
        stop_service(&cl, LOCAL_META, j);
    stop_service(&cl, LOCAL_MGMT, 0);
    local_unlink_conf(&cl);
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
    struct local_cluster cl;
    char dbuf[CLI_PATH_MAX], conf[CLI_PATH_MAX + 32];
    local_pick_dir(dir, dbuf, sizeof(dbuf), conf, sizeof(conf));
    bool local = local_load(dbuf, &cl) == 0;
    if (local) {
        printf("local cluster '%s' in %s\n", cl.fsname, cl.dir);
        for (int s = 0; s < LOCAL_NSVC; s++)
            for (int j = 0; j < local_instances(&cl, (enum local_svc)s); j++) {
                pid_t pid = running_pid(&cl, (enum local_svc)s, j);
                char name[48];
                snprintf(name, sizeof(name), "%s%s%.0d", local_svc_bin[s], j ? "#" : "", j);
                if (pid)
                    printf("  %-12s running  pid %d\n", name, (int)pid);
                else
                    printf("  %-12s stopped\n", name);
            }
        mnt_show(cl.dir);
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
