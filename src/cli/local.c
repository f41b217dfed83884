/*
 * A cluster on this machine: the layout of a `stria up` directory.
 *
 * local_create writes everything a cluster needs before any daemon runs:
 * ports that bind now (outside the ephemeral range, so a daemon restarted
 * later finds its port free), the key, each daemon's config and the
 * client.conf, and the marker last, so a directory without it is never
 * mistaken for a cluster. Nothing here starts or stops a process (proc.c)
 * or touches a mount (mount.c). Which cluster a command means without
 * --dir follows the one rule of connect.c, so it is always the cluster
 * the other commands would talk to.
 */
#include "local.h"

#include "connect.h"

#include "../common/auth.h"
#include "../common/util.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const local_svc_bin[LOCAL_NSVC] = {"stria-mgmtd", "stria-metad", "stria-stord"};
static const char *const svc_name[LOCAL_NSVC] = {"mgmtd", "metad", "stord"};

void local_default_dir(char *buf, size_t len)
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

void local_pick_dir(const char *given, char *buf, size_t len, char *conf, size_t conf_len)
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
    local_default_dir(buf, len);
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
        int fds[LOCAL_MAX_MDTS], got = 0;
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

int local_load(const char *dir, struct local_cluster *c)
{
    char path[CLI_PATH_MAX + 64], *text = NULL;
    snprintf(path, sizeof(path), "%s/%s", dir, LOCAL_MARKER);
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
    if (c->mdts < 1 || c->mdts > LOCAL_MAX_MDTS || c->metads > c->mdts ||
        c->metads > LOCAL_MAX_METADS)
        return -EINVAL;
    return got == 6 ? 0 : -EINVAL;
}

bool local_named_dir(char *buf, size_t len)
{
    char conf[CLI_PATH_MAX];
    enum cli_conf_src src;
    struct local_cluster c;
    if (cli_conf_path(conf, sizeof(conf), &src) < 0 ||
        (src != CLI_CONF_OPTION && src != CLI_CONF_ENV))
        return false;
    conf_dir(conf, buf, len);
    return local_load(buf, &c) == 0;
}

void local_svc_name(enum local_svc s, int j, char *buf, size_t len)
{
    if (j)
        snprintf(buf, len, "%s%d", svc_name[s], j);
    else
        snprintf(buf, len, "%s", svc_name[s]);
}

int local_instances(const struct local_cluster *c, enum local_svc s)
{
    return s == LOCAL_META ? c->metads : 1;
}

int local_create(struct local_cluster *c)
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
        local_svc_name(LOCAL_META, j, name, sizeof(name));
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
    return write_text(c->dir, LOCAL_MARKER, text, 0644);
}

int local_pid_path(const struct local_cluster *c, enum local_svc s, int j, char *buf, size_t len)
{
    char name[32];
    local_svc_name(s, j, name, sizeof(name));
    return snprintf(buf, len, "%s/run/%s.pid", c->dir, name) >= (int)len ? -ENAMETOOLONG : 0;
}

void local_link_conf(const struct local_cluster *c)
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

void local_unlink_conf(const struct local_cluster *c)
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
