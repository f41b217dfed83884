/*
 * The node agent of stria ondemand (ondemand.h): what `stria ondemand
 * node PHASE` does on one node, run there over ssh by the coordinator. It
 * writes the key and the configs under DATA_DIR/stria-NAME, starts the
 * node's daemons (as `stria up` does, with proc.c), waits for every target
 * (on the first node), mounts (mount.c), stops, and keeps the node's
 * record of where its instance lives.
 */
#include "ondemand.h"

#include "args.h"
#include "commands.h"
#include "local.h"
#include "mount.h"
#include "proc.h"

#include "../common/util.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stria/stria.h>
#include <unistd.h>

#define OD_WAIT_MS 30000 /* targets online */

/* ---- what a node keeps: where its instance of NAME lives ---- */

/* The record of instance name on this node: /run/stria (root) or the
 * user's runtime or state directory. */
static void record_path(const char *name, char *buf, size_t len)
{
    const char *rt = getenv("XDG_RUNTIME_DIR"), *home = getenv("HOME");
    if (geteuid() == 0)
        snprintf(buf, len, "/run/stria/ondemand-%s", name);
    else if (rt && *rt)
        snprintf(buf, len, "%s/stria/ondemand-%s", rt, name);
    else
        snprintf(buf, len, "%s/.local/state/stria/ondemand-%s", home && *home ? home : "/tmp",
                 name);
}

int ondemand_record_read(const char *name, char *dir, size_t dlen, char *mnt, size_t mlen)
{
    char path[PATH_MAX], *text = NULL;
    record_path(name, path, sizeof(path));
    int rc = util_read_file(path, 16384, &text, NULL);
    if (rc)
        return rc;
    char *nl = strchr(text, '\n');
    if (!nl || nl == text) {
        free(text);
        return -EINVAL;
    }
    *nl = 0;
    char *m = nl + 1, *end = strchr(m, '\n');
    if (end)
        *end = 0;
    snprintf(dir, dlen, "%s", text);
    snprintf(mnt, mlen, "%s", m);
    free(text);
    return 0;
}

static int record_write(const char *name, const char *dir, const char *mnt)
{
    char path[PATH_MAX], text[2 * PATH_MAX + 4];
    record_path(name, path, sizeof(path));
    char *slash = strrchr(path, '/');
    *slash = 0;
    int rc = util_mkdir_p(path, 0700);
    *slash = '/';
    int n = snprintf(text, sizeof(text), "%s\n%s\n", dir, mnt);
    return rc ? rc : util_write_file_atomic(path, text, (size_t)n, 0600);
}

/* ---- the node agent ---- */

struct node_args {
    const char *name, *data, *mnt, *mgmt, *self;
    int index, nodes, mdts, port, timeout_s, want_osts;
    bool stripe_all, cleanup;
    const char *root_owner; /* setup: "UID:GID:MODE", "-" for what stays */
};

static int write_file(const char *dir, const char *rel, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    int rc = util_write_file_atomic(path, text, strlen(text), 0644);
    if (rc)
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(-rc));
    return rc;
}

/* The node's configs and key (read from stdin, 64 hex digits). */
static int node_prepare(const struct node_args *a, const char *dir)
{
    char sub[PATH_MAX], text[8192];
    const char *dirs[] = {"conf", "log", "run", "mgmt", "ost"};
    int rc = util_mkdir_p(dir, 0700);
    for (size_t i = 0; !rc && i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(sub, sizeof(sub), "%s/%s", dir, dirs[i]);
        rc = util_mkdir_p(sub, 0755);
    }
    if (rc) {
        fprintf(stderr, "cannot create %s: %s\n", dir, strerror(-rc));
        return rc;
    }
    char key[80] = "";
    size_t got = fread(key, 1, sizeof(key) - 1, stdin);
    key[got] = 0;
    key[strcspn(key, "\r\n")] = 0;
    if (strlen(key) != 64 || strspn(key, "0123456789abcdef") != 64) {
        fprintf(stderr, "no cluster key on stdin (64 hex digits)\n");
        return -EINVAL;
    }
    snprintf(sub, sizeof(sub), "%s/cluster.key", dir);
    /* The first node keeps the key its instance has (a start run again
     * must not lock out the daemons that run) and tells the coordinator,
     * which gives it to the others. */
    char *old = NULL;
    if (a->index == 0 && util_read_file(sub, 1024, &old, NULL) == 0 && strlen(old) >= 64 &&
        strspn(old, "0123456789abcdef") == 64) {
        memcpy(key, old, 64);
        key[64] = 0;
    }
    free(old);
    snprintf(text, sizeof(text), "%s\n", key);
    if ((rc = util_write_file_atomic(sub, text, strlen(text), 0600)))
        return rc;
    if (a->index == 0)
        printf("key %s\n", key);
    snprintf(text, sizeof(text),
             "# Written by `stria ondemand` for %s; rewritten at each start.\n"
             "listen = 0.0.0.0:%d\nkey_file = %s/cluster.key\ndata_dir = %s/mgmt\nfsname = %s\n"
             "offline_after_ms = 3000\n",
             a->name, a->port, dir, dir, a->name);
    if (a->index == 0 && (rc = write_file(dir, "conf/mgmtd.conf", text)))
        return rc;
    int n = snprintf(text, sizeof(text),
                     "# Written by `stria ondemand`.\nlisten = 0.0.0.0:%d\nadvertise = %s\n"
                     "mgmt = %s:%d\nkey_file = %s/cluster.key\nnode = %s\nheartbeat_ms = 500\n"
                     "root_mdts = %d\n",
                     a->port + 2, a->self, a->mgmt, a->port, dir, a->self, a->mdts);
    bool meta = false;
    for (int i = a->index; i < a->mdts && n < (int)sizeof(text) - 300; i += a->nodes) {
        n += snprintf(text + n, sizeof(text) - (size_t)n, "mdt = %d:%s/mdt%d\n", i, dir, i);
        meta = true;
    }
    if (meta && (rc = write_file(dir, "conf/metad.conf", text)))
        return rc;
    snprintf(text, sizeof(text),
             "# Written by `stria ondemand`: this node's share of the data is in %s.\n"
             "listen = 0.0.0.0:%d\nadvertise = %s\nmgmt = %s:%d\nkey_file = %s/cluster.key\n"
             "node = %s\nheartbeat_ms = 500\nost = %d:%s/ost\n",
             dir, a->port + 1, a->self, a->mgmt, a->port, dir, a->self, a->index, dir);
    if ((rc = write_file(dir, "conf/stord.conf", text)))
        return rc;
    snprintf(text, sizeof(text),
             "# The on-demand file system %s (`stria ondemand`).\nmgmt = %s:%d\n"
             "key_file = cluster.key\n"
             "# Scratch: a node that is gone fails its I/O soon rather than after 100 s.\n"
             "timeout_ms = %d\n",
             a->name, a->mgmt, a->port, a->timeout_s * 1000);
    if ((rc = write_file(dir, "client.conf", text)))
        return rc;
    return record_write(a->name, dir, a->mnt);
}

static const char *const svc[] = {"mgmtd", "metad", "stord"};

/* Start daemon k of the node if it has a config and does not run. */
static int node_start_one(const char *dir, int k)
{
    char bindir[PATH_MAX], bin[PATH_MAX + 32], conf[PATH_MAX + 32], log[PATH_MAX + 32],
        pidf[PATH_MAX + 32];
    snprintf(conf, sizeof(conf), "%s/conf/%s.conf", dir, svc[k]);
    snprintf(log, sizeof(log), "%s/log/%s.log", dir, svc[k]);
    snprintf(pidf, sizeof(pidf), "%s/run/%s.pid", dir, svc[k]);
    if (access(conf, F_OK) || proc_running(pidf, local_svc_bin[k]))
        return 0;
    proc_bin_dir(bindir, sizeof(bindir));
    snprintf(bin, sizeof(bin), "%s/%s", bindir, local_svc_bin[k]);
    pid_t pid = 0;
    int rc = proc_start(bin, conf, log, pidf, NULL, &pid);
    if (rc == 0)
        printf("started %s pid %d\n", local_svc_bin[k], (int)pid);
    return rc;
}

/* Wait (bounded) until want_mdts MDTs and want_osts OSTs are online. */
static int node_wait(const char *dir, int want_mdts, int want_osts)
{
    char conf[PATH_MAX + 32];
    snprintf(conf, sizeof(conf), "%s/client.conf", dir);
    uint64_t deadline = util_now_mono_ns() + (uint64_t)OD_WAIT_MS * 1000000ull;
    int mdt = 0, ost = 0;
    while (util_now_mono_ns() < deadline) {
        stria_fs_t *fs;
        if (stria_connect(conf, &fs) == 0) {
            struct stria_target *t;
            size_t n;
            mdt = ost = 0;
            if (stria_targets(fs, &t, &n) == 0) {
                for (size_t i = 0; i < n; i++) {
                    mdt += t[i].online && t[i].kind[0] == 'M';
                    ost += t[i].online && t[i].kind[0] == 'O';
                }
                free(t);
            }
            stria_disconnect(fs);
            if (mdt >= want_mdts && ost >= want_osts) {
                usleep(1200 * 1000); /* a heartbeat round: the MDTs learn the OSTs */
                return 0;
            }
        }
        usleep(200 * 1000);
    }
    fprintf(stderr, "only %d of %d MDTs and %d of %d OSTs online after %d s (logs in %s/log)\n",
            mdt, want_mdts, ost, want_osts, OD_WAIT_MS / 1000, dir);
    return -ETIMEDOUT;
}

static int node_stop(const struct node_args *a)
{
    char dir[PATH_MAX], mnt[PATH_MAX], pidf[PATH_MAX + 32], path[PATH_MAX];
    int rc = ondemand_record_read(a->name, dir, sizeof(dir), mnt, sizeof(mnt));
    if (rc == -ENOENT) {
        printf("no on-demand file system %s here\n", a->name);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "cannot read the record of %s: %s\n", a->name, strerror(-rc));
        return rc;
    }
    mnt_unmount_all(dir);
    rmdir(mnt); /* the mount point start made, if nothing else is in it */
    for (int k = 2; k >= 0; k--) {
        snprintf(pidf, sizeof(pidf), "%s/run/%s.pid", dir, svc[k]);
        pid_t pid = proc_stop(pidf, local_svc_bin[k]);
        if (pid)
            printf("stopped %s pid %d\n", local_svc_bin[k], (int)pid);
    }
    if (a->cleanup) {
        char *argv[] = {(char *)"/bin/rm", (char *)"-rf", "--", dir, NULL};
        rc = proc_run_bounded(argv, 2, 600000);
        if (rc) {
            fprintf(stderr, "cannot remove %s (rm: %d)\n", dir, rc);
            return -EIO;
        }
        printf("removed %s\n", dir);
        /* Kept without --cleanup: a later start finds its data, and a
         * later stop --cleanup removes it. */
        record_path(a->name, path, sizeof(path));
        unlink(path);
    }
    return 0;
}

static int node_status(const struct node_args *a)
{
    char dir[PATH_MAX], mnt[PATH_MAX], pidf[PATH_MAX + 32];
    int rc = ondemand_record_read(a->name, dir, sizeof(dir), mnt, sizeof(mnt));
    if (rc == -ENOENT) {
        printf("  not running here\n");
        return 3;
    }
    if (rc)
        return rc;
    int down = 0;
    for (int k = 0; k < 3; k++) {
        char conf[PATH_MAX + 32];
        snprintf(conf, sizeof(conf), "%s/conf/%s.conf", dir, svc[k]);
        if (access(conf, F_OK))
            continue;
        snprintf(pidf, sizeof(pidf), "%s/run/%s.pid", dir, svc[k]);
        pid_t pid = proc_running(pidf, local_svc_bin[k]);
        if (pid)
            printf("  %-12s running pid %d\n", local_svc_bin[k], (int)pid);
        else
            printf("  %-12s NOT RUNNING (log %s/log/%s.log)\n", local_svc_bin[k], dir, svc[k]);
        down += !pid;
    }
    mnt_show(dir);
    printf("  data         %s\n", dir);
    return down ? 4 : 0;
}

const char *ondemand_owner_field(const char *s, int base, char sep, long long max, long long *v)
{
    char *end = (char *)s;
    if (*s == '-') {
        *v = -1;
        end++;
    } else {
        errno = 0;
        *v = strtoll(s, &end, base);
        if (end == s || errno || *v < 0 || *v > max)
            return NULL;
    }
    return *end == sep ? end + (sep != 0) : NULL;
}

static int root_owner_parse(const char *s, long long *uid, long long *gid, long long *mode)
{
    if (!(s = ondemand_owner_field(s, 10, ':', ONDEMAND_ID_MAX, uid)) ||
        !(s = ondemand_owner_field(s, 10, ':', ONDEMAND_ID_MAX, gid)) ||
        !ondemand_owner_field(s, 8, 0, 07777, mode))
        return -EINVAL;
    return (*uid < 0) != (*gid < 0) ? -EINVAL : 0;
}

/* On the first node, before any node mounts: the root's default layout
 * (--stripe-all) and its owner and mode (--owner, --mode). */
static int node_setup(const char *dir, const struct node_args *a)
{
    long long uid = -1, gid = -1, mode = -1;
    if (a->root_owner && root_owner_parse(a->root_owner, &uid, &gid, &mode)) {
        fprintf(stderr, "setup: --root-owner '%s' is not UID:GID:MODE\n", a->root_owner);
        return -EINVAL;
    }
    if (!a->stripe_all && uid < 0 && mode < 0)
        return 0;
    char conf[PATH_MAX + 32];
    snprintf(conf, sizeof(conf), "%s/client.conf", dir);
    stria_fs_t *fs;
    int rc = stria_connect(conf, &fs);
    if (rc) {
        fprintf(stderr, "setup: cannot reach the file system: %s\n", strerror(-rc));
        return rc;
    }
    if (a->stripe_all && (rc = stria_setstripe(fs, "/", -1, 0, -1)))
        fprintf(stderr, "cannot stripe the root over every OST: %s\n", strerror(-rc));
    if (rc == 0 && uid >= 0 && (rc = stria_chown(fs, "/", (uid_t)uid, (gid_t)gid)))
        fprintf(stderr, "cannot give the root to %lld:%lld: %s\n", uid, gid, strerror(-rc));
    if (rc == 0 && mode >= 0 && (rc = stria_chmod(fs, "/", (mode_t)mode)))
        fprintf(stderr, "cannot set the root's mode to %llo: %s\n", mode, strerror(-rc));
    stria_disconnect(fs);
    return rc;
}

static const struct option node_opts[] = {{"name", required_argument, NULL, 'n'},
                                          {"data-dir", required_argument, NULL, 'd'},
                                          {"mount", required_argument, NULL, 'm'},
                                          {"mgmt", required_argument, NULL, 'g'},
                                          {"self", required_argument, NULL, 's'},
                                          {"index", required_argument, NULL, 'i'},
                                          {"nodes", required_argument, NULL, 'N'},
                                          {"mdts", required_argument, NULL, 'M'},
                                          {"port", required_argument, NULL, 'p'},
                                          {"stripe-all", no_argument, NULL, 'S'},
                                          {"cleanup", no_argument, NULL, 'c'},
                                          {"timeout", required_argument, NULL, 't'},
                                          {"want-osts", required_argument, NULL, 'W'},
                                          {"root-owner", required_argument, NULL, 'R'},
                                          {NULL, 0, NULL, 0}};

/* stria ondemand node PHASE ...: what a node does, run over ssh. PHASE:
 * mgmt (prepare, start the management service), daemons (prepare, start
 * the others), wait (every target online), setup, mount, status, stop. */
int ondemand_node(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("ondemand", "node takes a phase");
    const char *phase = argv[1];
    struct node_args a = {.name = "ondemand", .port = 7400, .nodes = 1, .mdts = 1, .timeout_s = 30};
    int c;
    optind = 1;
    opterr = 1;
    while ((c = getopt_long(argc - 1, argv + 1, "", node_opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            a.name = optarg;
            break;
        case 'd':
            a.data = optarg;
            break;
        case 'm':
            a.mnt = optarg;
            break;
        case 'g':
            a.mgmt = optarg;
            break;
        case 's':
            a.self = optarg;
            break;
        case 'i':
            a.index = atoi(optarg);
            break;
        case 'N':
            a.nodes = atoi(optarg);
            break;
        case 'M':
            a.mdts = atoi(optarg);
            break;
        case 'p':
            a.port = atoi(optarg);
            break;
        case 'S':
            a.stripe_all = true;
            break;
        case 'c':
            a.cleanup = true;
            break;
        case 'W':
            a.want_osts = atoi(optarg);
            break;
        case 'R':
            a.root_owner = optarg;
            break;
        case 't':
            a.timeout_s = atoi(optarg);
            if (a.timeout_s < 1 || a.timeout_s > 3600)
                return cli_usage_error("ondemand", "--timeout is 1 to 3600 seconds");
            break;
        default:
            return cli_usage_error("ondemand", NULL);
        }
    }
    if (!strcmp(phase, "stop"))
        return node_stop(&a) ? CLI_FAIL : CLI_OK;
    if (!strcmp(phase, "status"))
        return node_status(&a);
    char dir[PATH_MAX], mnt[PATH_MAX];
    if (!strcmp(phase, "mgmt") || !strcmp(phase, "daemons")) {
        if (!a.data || !a.mnt || !a.mgmt || !a.self || a.nodes < 1 || a.index < 0 ||
            a.index >= a.nodes || a.mdts < 1)
            return cli_usage_error("ondemand", "node %s: missing arguments", phase);
        snprintf(dir, sizeof(dir), "%s/stria-%s", a.data, a.name);
        if (node_prepare(&a, dir))
            return CLI_FAIL;
        bool mgmt = !strcmp(phase, "mgmt");
        for (int k = mgmt ? 0 : 1; k < (mgmt ? 1 : 3); k++)
            if (node_start_one(dir, k))
                return CLI_FAIL;
        return CLI_OK;
    }
    if (ondemand_record_read(a.name, dir, sizeof(dir), mnt, sizeof(mnt))) {
        fprintf(stderr, "no on-demand file system %s here (start it first)\n", a.name);
        return CLI_FAIL;
    }
    if (!strcmp(phase, "wait"))
        return node_wait(dir, a.mdts, a.want_osts > 0 ? a.want_osts : a.nodes) ? CLI_FAIL : CLI_OK;
    if (!strcmp(phase, "mount"))
        return mnt_mount(dir, mnt) ? CLI_FAIL : CLI_OK;
    if (!strcmp(phase, "setup"))
        return node_setup(dir, &a) ? CLI_FAIL : CLI_OK;
    return cli_usage_error("ondemand", "unknown node phase '%s'", phase);
}
