/*
 * Shared daemon start-up and main loop (daemon.h).
 *
 * The readiness protocol of systemd's Type=notify units is a datagram of
 * "KEY=VALUE" lines to the AF_UNIX socket named by $NOTIFY_SOCKET (a path,
 * or an abstract name written with a leading '@'). It is spoken here
 * directly, not through libsystemd, so the daemons link nothing more and
 * behave the same without systemd: no variable, no message.
 */
#include "daemon.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static struct {
    bool read;
    struct sockaddr_un addr;
    socklen_t len; /* 0: no service manager listening */
} notify;

/* Take $NOTIFY_SOCKET once, out of the environment. */
static void notify_init(void)
{
    if (notify.read)
        return;
    notify.read = true;
    const char *e = getenv("NOTIFY_SOCKET");
    size_t n = e ? strlen(e) : 0;
    if (n >= 2 && n < sizeof(notify.addr.sun_path) && (e[0] == '/' || e[0] == '@')) {
        notify.addr.sun_family = AF_UNIX;
        memcpy(notify.addr.sun_path, e, n);
        if (e[0] == '@')
            notify.addr.sun_path[0] = '\0';
        notify.len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (e[0] == '/'));
    } else if (e) {
        log_warn("NOTIFY_SOCKET='%s' is not a socket path; not telling the service manager", e);
    }
    unsetenv("NOTIFY_SOCKET");
}

int daemon_notify(const char *state)
{
    notify_init();
    if (!notify.len)
        return 0;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&notify.addr,
               notify.len) < 0) {
        rc = -errno;
        /* `stria up` listens only until READY=1; a manager that is gone
         * since has nothing to be told. */
        if (rc == -ECONNREFUSED || rc == -ENOENT)
            log_debug("the service manager no longer listens for %s", state);
        else
            log_warn("cannot tell the service manager %s: %s", state, log_err(rc));
    }
    close(fd);
    return rc;
}

int daemon_start(const struct cfg_table *t, void *conf, const struct daemon_conf *d, int argc,
                 char **argv, struct auth_key *key)
{
    int rc = cfg_main_args(t, conf, argc, argv);
    if (rc)
        return rc;
    enum log_level lvl;
    if (log_level_parse(d->log_level, &lvl)) {
        fprintf(stderr, "%s: log_level '%s' is not error/warn/info/debug\n", t->program,
                d->log_level);
        return -1;
    }
    log_init(t->program, lvl);
    char err[512];
    if (auth_key_load(d->key_file, key, err, sizeof(err))) {
        fprintf(stderr, "%s: %s\n", t->program, err);
        return -1;
    }
    notify_init();
    util_block_signals();
    /* Every client is a descriptor: take all the kernel allows. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl))
            log_warn("cannot raise the open-file limit: %s", strerror(errno));
    }
    int conns = daemon_max_conns(d);
    if (conns < d->max_connections)
        log_info("max_connections=%lld, but the open-file limit allows %d connections "
                 "(raise it: ulimit -n, or LimitNOFILE= in the systemd unit)",
                 (long long)d->max_connections, conns);
    return 0;
}

#define FILES_RESERVED 1024 /* descriptors kept for a daemon's own files */

int daemon_max_conns(const struct daemon_conf *d)
{
    struct rlimit rl;
    int64_t n = d->max_connections;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        int64_t room = (int64_t)rl.rlim_cur - FILES_RESERVED;
        if (room < 16)
            room = 16;
        if (n > room)
            n = room;
    }
    return (int)n;
}

void daemon_names(const struct daemon_conf *d, char *node, size_t nodelen, char *adv, size_t advlen)
{
    if (d->node)
        snprintf(node, nodelen, "%s", d->node);
    else
        util_hostname(node, nodelen);
    if (d->advertise)
        snprintf(adv, advlen, "%s", d->advertise);
    else if (strcmp(d->listen.host, "0.0.0.0") && strcmp(d->listen.host, "::"))
        snprintf(adv, advlen, "%s", d->listen.host);
    else
        util_hostname(adv, advlen);
}

int daemon_wait(int tick_ms, void (*tick)(void *arg), void *arg)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    struct timespec ts = {tick_ms / 1000, (long)(tick_ms % 1000) * 1000000};
    daemon_notify("READY=1\nSTATUS=serving");
    for (;;) {
        int sig = tick ? sigtimedwait(&set, NULL, &ts) : sigwaitinfo(&set, NULL);
        if (sig > 0) {
            daemon_notify("STOPPING=1");
            return sig;
        }
        if (tick)
            tick(arg);
    }
}

int daemon_client_conf(const char *path, const char *who, const char *host, uint16_t port,
                       const char *key_path)
{
    /* A wildcard listener is reached on loopback. */
    if (!host[0] || !strcmp(host, "0.0.0.0") || !strcmp(host, "::"))
        host = "127.0.0.1";
    char text[4800];
    int n = snprintf(text, sizeof(text),
                     "# The client of %s.\n"
                     "# Written by the daemon at each start; changes are lost.\n"
                     "mgmt = %s:%u\nkey_file = %s\n",
                     who, host, port, key_path);
    if (n < 0 || (size_t)n >= sizeof(text))
        return -ENAMETOOLONG;
    int rc = util_write_file_atomic(path, text, (size_t)n, 0600);
    if (rc)
        log_error("cannot write %s: %s", path, log_err(rc));
    return rc;
}
