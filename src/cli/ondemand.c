/*
 * stria ondemand: a file system on the nodes of a job, for the life of the
 * job, as BeeOND builds one (docs/operations.md, "On-demand file systems").
 *
 * The coordinator (start, status, stop) reaches every node of the node
 * file over ssh, in parallel, and runs this same program there as the node
 * agent (`stria ondemand node ...`), which does what `stria up` does for a
 * machine, for that node's share: it writes the key and the configs under
 * DATA_DIR/stria-NAME, starts its daemons (stria-mgmtd on the first node,
 * a stria-metad on each of the first MDTS nodes, a stria-stord serving
 * DATA_DIR on every node), mounts, and unmounts and stops them again. The
 * node records where its instance lives (ondemand_record), so that status
 * and stop need only the node file.
 *
 * This file is the coordinator; the agent is ondemand_node.c.
 *
 * start goes in phases, each on its nodes at once and each bounded in
 * time: the management service; every other daemon; the first node waits
 * until every target is online; every node mounts. A node that cannot be
 * reached or fails a phase is named with what it said, and what was
 * started is stopped again (unless --keep-going). Everything is idempotent:
 * a daemon that runs is left running, a mount that answers is kept.
 */
#include "ondemand.h"

#include "args.h"
#include "commands.h"
#include "local.h"
#include "mount.h"
#include "nodes.h"
#include "proc.h"

#include "../common/auth.h"
#include "../common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stria/stria.h>
#include <dirent.h>
#include <unistd.h>

#define OD_FANOUT   64    /* ssh sessions at once */
#define OD_PHASE_MS 60000 /* the longest a phase may take on a node */

/* ---- the coordinator ---- */

struct od {
    char **nodes;
    int n;
    const char *ssh_opts, *remote, *name, *data, *mnt;
    const char *nodefile, *stage_in, *stage_out, *endpoint;
    int mdts, port, timeout_s;
    /* --owner and --mode: the root's, as "UID:GID:MODE" (octal; "-" for
     * one not given) for the setup phase; empty: left as made, root's and
     * 0755. */
    char root_owner[64];
    bool stripe_all, keep_going, cleanup, verbose;
    bool *lost; /* with --keep-going: nodes left out after they failed */
    char key[65];
};

/* s in single quotes for a remote shell. */
static void quote(char *out, size_t cap, size_t *at, const char *s)
{
    if (*at + 2 < cap)
        out[(*at)++] = '\'';
    for (; *s && *at + 5 < cap; s++) {
        if (*s == '\'') {
            memcpy(out + *at, "'\\''", 4);
            *at += 4;
        } else
            out[(*at)++] = *s;
    }
    if (*at + 2 < cap)
        out[(*at)++] = '\'';
    if (*at + 1 < cap)
        out[(*at)++] = ' ';
    out[*at] = 0;
}

struct job {
    int node;
    pid_t pid;
    uint64_t t0; /* when its ssh started: each node has the whole bound */
    int out_fd;  /* a temporary file with what ssh and the agent said */
    int status;
    bool done;
};

/* Run the node agent's phase on nodes[i] for every i in idx[0..k), at most
 * OD_FANOUT at once, each within OD_PHASE_MS; with the key on stdin.
 * Returns how many failed, after naming each with what it said. */
static int run_phase(struct od *o, const char *phase, const int *idx, int k, const char *extra,
                     const char *extra2)
{
    struct job *j = calloc((size_t)k, sizeof(*j));
    if (!j)
        return k;
    int failed = 0, started = 0, running = 0;
    /* A stop that removes data may take as long as rm -rf does there. */
    uint64_t bound_ns =
        (uint64_t)(extra && !strcmp(extra, "--cleanup") ? 10 * OD_PHASE_MS : OD_PHASE_MS) *
        1000000ull;
    signal(SIGCHLD, SIG_DFL); /* an inherited SIG_IGN would reap them for us */
    while (started < k || running) {
        while (started < k && running < OD_FANOUT) {
            struct job *x = &j[started];
            x->node = idx[started++];
            char cmd[8192];
            size_t at = 0;
            cmd[0] = 0;
            char num[5][16];
            snprintf(num[0], 16, "%d", x->node);
            snprintf(num[1], 16, "%d", o->n);
            snprintf(num[2], 16, "%d", o->mdts);
            snprintf(num[3], 16, "%d", o->port);
            snprintf(num[4], 16, "%d", o->timeout_s);
            const char *args[] = {o->remote,    "ondemand",
                                  "node",       phase,
                                  "--name",     o->name,
                                  "--data-dir", o->data ? o->data : "-",
                                  "--mount",    o->mnt ? o->mnt : "-",
                                  "--mgmt",     o->nodes[0],
                                  "--self",     o->nodes[x->node],
                                  "--index",    num[0],
                                  "--nodes",    num[1],
                                  "--mdts",     num[2],
                                  "--port",     num[3],
                                  "--timeout",  num[4]};
            for (size_t a = 0; a < sizeof(args) / sizeof(args[0]); a++)
                quote(cmd, sizeof(cmd), &at, args[a]);
            if (extra)
                quote(cmd, sizeof(cmd), &at, extra);
            if (extra2)
                quote(cmd, sizeof(cmd), &at, extra2);
            char outf[] = "/tmp/stria-od-out-XXXXXX";
            x->out_fd = mkostemp(outf, O_CLOEXEC);
            x->t0 = util_now_mono_ns();
            if (x->out_fd >= 0)
                unlink(outf);
            /* ssh's own options first: the first value of an option wins. */
            char *argv[64];
            int ac = 0;
            char opts[1024];
            argv[ac++] = (char *)"ssh";
            snprintf(opts, sizeof(opts), "%s", o->ssh_opts ? o->ssh_opts : "");
            for (char *save = NULL, *t = strtok_r(opts, " \t", &save); t && ac < 50;
                 t = strtok_r(NULL, " \t", &save))
                argv[ac++] = t;
            argv[ac++] = (char *)"-o";
            argv[ac++] = (char *)"BatchMode=yes";
            argv[ac++] = (char *)"-o";
            argv[ac++] = (char *)"ConnectTimeout=10";
            argv[ac++] = o->nodes[x->node];
            argv[ac++] = cmd;
            argv[ac] = NULL;
            /* The key on stdin, through a pipe of its own. */
            int kp[2] = {-1, -1};
            if (x->out_fd >= 0 && pipe2(kp, O_CLOEXEC) == 0 && write(kp[1], o->key, 64) != 64) {
                close(kp[0]);
                close(kp[1]);
                kp[0] = kp[1] = -1;
            }
            if (kp[1] >= 0)
                close(kp[1]);
            x->pid = x->out_fd < 0 || kp[0] < 0 ? -1 : fork();
            if (x->pid == 0) {
                dup2(kp[0], 0);
                dup2(x->out_fd, 1);
                dup2(x->out_fd, 2);
                setpgid(0, 0);
                execvp("ssh", argv);
                _exit(127);
            }
            if (kp[0] >= 0)
                close(kp[0]);
            if (x->pid < 0) {
                x->done = true;
                x->status = -1;
            } else
                running++;
        }
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p < 0 && errno == ECHILD) {
            /* None left to wait for (reaped by someone else): done. */
            for (int i = 0; i < started; i++)
                if (!j[i].done && j[i].pid > 0) {
                    j[i].done = true;
                    j[i].status = 255;
                    running--;
                }
            continue;
        }
        if (p <= 0) {
            uint64_t now = util_now_mono_ns();
            for (int i = 0; i < started; i++)
                if (!j[i].done && j[i].pid > 0 && now - j[i].t0 > bound_ns)
                    kill(-j[i].pid, SIGKILL);
            usleep(20 * 1000);
            continue;
        }
        for (int i = 0; i < started; i++)
            if (j[i].pid == p && !j[i].done) {
                j[i].done = true;
                j[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                running--;
            }
    }
    for (int i = 0; i < k; i++) {
        struct job *x = &j[i];
        char buf[4096] = "";
        ssize_t got = x->out_fd >= 0 ? pread(x->out_fd, buf, sizeof(buf) - 1, 0) : 0;
        buf[got > 0 ? got : 0] = 0;
        bool bad = x->status != 0;
        if (bad && o->lost)
            o->lost[x->node] = true;
        /* The first node's key, which the other nodes get: a whole line
         * "key HEX", never shown. */
        for (char *kl = buf; (kl = strstr(kl, "key ")); kl += 4) {
            if ((kl != buf && kl[-1] != '\n') || strspn(kl + 4, "0123456789abcdef") != 64 ||
                (kl[68] && kl[68] != '\n'))
                continue;
            if (!bad && !strcmp(phase, "mgmt"))
                memcpy(o->key, kl + 4, 64);
            memset(kl, ' ', 68);
            kl[0] = '\n';
        }
        if (bad && !strcmp(phase, "status") && (x->status == 3 || x->status == 4)) {
            failed++;
            fprintf(stderr, "stria ondemand: node %s: %s\n", o->nodes[x->node],
                    x->status == 3 ? "the file system is not there" : "a daemon is not running");
        } else if (bad) {
            failed++;
            fprintf(stderr, "stria ondemand: %s on node %s failed (%s %d)%s\n", phase,
                    o->nodes[x->node], x->status == 255 ? "ssh:" : "exit", x->status,
                    got > 0 ? "; it said:" : "");
        }
        if (bad || o->verbose || !strcmp(phase, "status")) {
            if (!strcmp(phase, "status"))
                printf("%s:\n", o->nodes[x->node]);
            char *save = NULL;
            for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
                fprintf(bad && strcmp(phase, "status") ? stderr : stdout, "  %s\n", l);
        }
        if (x->out_fd >= 0)
            close(x->out_fd);
    }
    free(j);
    return failed;
}

static int all_nodes(const struct od *o, int **idx)
{
    *idx = malloc(sizeof(**idx) * (size_t)o->n);
    if (!*idx)
        return -ENOMEM;
    for (int i = 0; i < o->n; i++)
        (*idx)[i] = i;
    return 0;
}

/* Copy the entries of directory from (or from itself, a file) into
 * directory to with stria pcp, every node taking a share. Runs here: this
 * node must see both (a node of the job, with the file system mounted). */
static int stage(struct od *o, const char *what, const char *from, const char *to)
{
    struct stat st;
    if (!strncmp(from, "s3://", 5) || !strncmp(to, "s3://", 5)) {
        /* The storage hosts move the bytes (stria pcp with S3), told by
         * this node's client of the file system. */
        char dir[PATH_MAX], mnt[PATH_MAX], conf[PATH_MAX + 16];
        if (ondemand_record_read(o->name, dir, sizeof(dir), mnt, sizeof(mnt)) == 0) {
            snprintf(conf, sizeof(conf), "%s/client.conf", dir);
            setenv("STRIA_CONF", conf, 1);
        }
        char *av[] = {(char *)"pcp",        (char *)from,        (char *)to,
                      (char *)"--endpoint", (char *)o->endpoint, NULL};
        printf("%s: %s -> %s\n", what, from, to);
        fflush(stdout);
        return cmd_pcp(o->endpoint ? 5 : 3, av);
    }
    if (stat(from, &st) < 0 || util_mkdir_p(to, 0755) < 0) {
        fprintf(stderr,
                "stria ondemand: %s: %s: %s (staging runs on the node that runs this "
                "command, which must see both)\n",
                what, stat(from, &st) < 0 ? from : to, strerror(errno));
        return CLI_FAIL;
    }
    char **argv = calloc(4096 + 16, sizeof(*argv));
    char **names = NULL;
    int ac = 0, nn = 0;
    if (!argv)
        return CLI_FAIL;
    argv[ac++] = (char *)"pcp";
    argv[ac++] = (char *)"--nodefile";
    argv[ac++] = (char *)o->nodefile;
    argv[ac++] = (char *)"--stria";
    argv[ac++] = (char *)o->remote;
    if (o->ssh_opts) {
        argv[ac++] = (char *)"--ssh";
        argv[ac++] = (char *)o->ssh_opts;
    }
    int rc = 0;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(from);
        struct dirent *de;
        if (!d)
            rc = -errno;
        while (d && (de = readdir(d)) && rc == 0) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            if (nn == 4096) {
                rc = -E2BIG; /* pcp walks what is below them */
                break;
            }
            char **v = realloc(names, (size_t)(nn + 1) * sizeof(*v));
            if (!v || asprintf(&v[nn], "%s/%s", from, de->d_name) < 0) {
                if (v)
                    names = v;
                rc = -ENOMEM;
                break;
            }
            names = v;
            argv[ac++] = names[nn++];
        }
        if (d)
            closedir(d);
    } else {
        argv[ac++] = (char *)from;
    }
    argv[ac++] = (char *)to;
    int ret = CLI_OK;
    if (rc == -E2BIG) {
        fprintf(stderr,
                "stria ondemand: %s: %s has more than 4096 entries at its top: stage a "
                "directory above it\n",
                what, from);
        ret = CLI_FAIL;
    } else if (rc) {
        fprintf(stderr, "stria ondemand: %s: cannot read %s: %s\n", what, from, strerror(-rc));
        ret = CLI_FAIL;
    } else if (S_ISDIR(st.st_mode) && nn == 0) {
        printf("%s: %s is empty: nothing to copy\n", what, from);
    } else {
        printf("%s: %s -> %s\n", what, from, to);
        fflush(stdout);
        ret = cmd_pcp(ac, argv);
    }
    for (int i = 0; i < nn; i++)
        free(names[i]);
    free(names);
    free(argv);
    return ret;
}

static int od_stop(struct od *o)
{
    if (o->stage_out) {
        char dir[PATH_MAX], mnt[PATH_MAX];
        if (ondemand_record_read(o->name, dir, sizeof(dir), mnt, sizeof(mnt))) {
            fprintf(stderr,
                    "stria ondemand: --stage-out runs on a node of the file system (this "
                    "one has none named %s)\n",
                    o->name);
            return CLI_FAIL;
        }
        if (stage(o, "stage-out", mnt, o->stage_out) != CLI_OK) {
            fprintf(stderr, "stria ondemand: stage-out failed: the file system is left running "
                            "(stop again, with or without --stage-out)\n");
            return CLI_FAIL;
        }
    }
    int *idx;
    if (all_nodes(o, &idx))
        return CLI_FAIL;
    uint64_t t0 = util_now_mono_ns();
    int failed = run_phase(o, "stop", idx, o->n, o->cleanup ? "--cleanup" : NULL, NULL);
    free(idx);
    if (failed)
        return CLI_FAIL;
    printf("stopped the on-demand file system %s on %d nodes%s in %.2f s\n", o->name, o->n,
           o->cleanup ? "; its data is removed" : "", (double)(util_now_mono_ns() - t0) / 1e9);
    return CLI_OK;
}

static int od_start(struct od *o)
{
    int *idx;
    if (all_nodes(o, &idx))
        return CLI_FAIL;
    uint64_t t0 = util_now_mono_ns();
    /* Setup before mount: a mount's first look at the root is then at its
     * final owner and mode (see mnt_mount). A change of them once every
     * node mounts would have to reach every node's kernel, and a create on
     * one node while another's changes the root can meet the kernel's
     * attributes of the root from before the change (docs/operations.md,
     * "On-demand file systems"). */
    const char *phases[] = {"mgmt", "daemons", "wait", "setup", "mount"};
    int failed = 0, left = o->n;
    char want[32] = "";
    bool *lost = o->keep_going ? calloc((size_t)o->n, sizeof(*lost)) : NULL;
    o->lost = lost;
    for (size_t p = 0; p < sizeof(phases) / sizeof(phases[0]) && !failed; p++) {
        bool first_only = p == 0 || p == 2 || p == 3;
        /* With --keep-going, the nodes that failed are left out. */
        int k = 0;
        for (int i = 0; i < o->n; i++)
            if (!lost || !lost[i])
                idx[k++] = i;
        if (p == 2)
            snprintf(want, sizeof(want), "--want-osts=%d", k);
        /* Only a node that fails to serve or to mount is left out. */
        o->lost = p == 1 || p == 4 ? lost : NULL;
        char owner[80];
        snprintf(owner, sizeof(owner), "--root-owner=%s", o->root_owner);
        failed = run_phase(o, phases[p], idx, first_only ? 1 : k,
                           p == 3 && o->stripe_all ? "--stripe-all" : NULL,
                           p == 2                       ? want
                           : p == 3 && o->root_owner[0] ? owner
                                                        : NULL);
        if (failed && lost && (p == 1 || p == 4)) {
            /* Go on without those nodes, unless one serves an MDT. */
            failed = 0;
            for (int i = 0; i < o->n; i++)
                if (lost[i] && (i < o->mdts || i == 0)) {
                    fprintf(stderr,
                            "stria ondemand: node %s serves an MDT: cannot go on without "
                            "it\n",
                            o->nodes[i]);
                    failed = 1;
                }
        }
    }
    for (int i = 0; lost && i < o->n; i++)
        if (lost[i]) {
            left--;
            fprintf(stderr, "stria ondemand: going on without node %s (--keep-going)\n",
                    o->nodes[i]);
        }
    o->lost = NULL;
    free(lost);
    free(idx);
    double dt = (double)(util_now_mono_ns() - t0) / 1e9;
    if (!failed && o->stage_in && stage(o, "stage-in", o->stage_in, o->mnt) != CLI_OK)
        failed = 1;
    if (failed) {
        if (!o->keep_going) {
            fprintf(stderr, "stria ondemand: stopping what was started\n");
            o->cleanup = false;
            od_stop(o);
        }
        return CLI_FAIL;
    }
    printf("on-demand file system %s: %d nodes; mgmt on %s, %d MDT%s on the first %d node%s, an "
           "OST on every node, mounted at %s on every node; started in %.2f s\n",
           o->name, left, o->nodes[0], o->mdts, o->mdts > 1 ? "s" : "",
           o->mdts < o->n ? o->mdts : o->n, (o->mdts < o->n ? o->mdts : o->n) > 1 ? "s" : "",
           o->mnt, dt);
    return CLI_OK;
}

static const struct option od_opts[] = {{"nodefile", required_argument, NULL, 'f'},
                                        {"data-dir", required_argument, NULL, 'd'},
                                        {"mount", required_argument, NULL, 'm'},
                                        {"mdts", required_argument, NULL, 'M'},
                                        {"stripe-all", no_argument, NULL, 'S'},
                                        {"ssh", required_argument, NULL, 's'},
                                        {"keep-going", no_argument, NULL, 'k'},
                                        {"cleanup", no_argument, NULL, 'c'},
                                        {"name", required_argument, NULL, 'n'},
                                        {"port", required_argument, NULL, 'p'},
                                        {"stria", required_argument, NULL, 'r'},
                                        {"verbose", no_argument, NULL, 'v'},
                                        {"timeout", required_argument, NULL, 't'},
                                        {"stage-in", required_argument, NULL, 'I'},
                                        {"stage-out", required_argument, NULL, 'O'},
                                        {"endpoint", required_argument, NULL, 'E'},
                                        {"owner", required_argument, NULL, 'o'},
                                        {"mode", required_argument, NULL, 'D'},
                                        {NULL, 0, NULL, 0}};

int cmd_ondemand(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("ondemand", "missing a subcommand (start, status, stop)");
    const char *sub = argv[1];
    if (!strcmp(sub, "node"))
        return ondemand_node(argc - 1, argv + 1);
    if (strcmp(sub, "start") && strcmp(sub, "status") && strcmp(sub, "stop"))
        return cli_usage_error("ondemand", "unknown subcommand '%s'", sub);
    struct od o = {.name = "ondemand", .mdts = 1, .port = 7400, .timeout_s = 30};
    const char *nodefile = NULL;
    char remote[PATH_MAX];
    proc_bin_dir(remote, sizeof(remote));
    strncat(remote, "/stria", sizeof(remote) - strlen(remote) - 1);
    o.remote = remote;
    int c;
    int64_t v;
    long long uid = -1, gid = -1, mode = -1;
    optind = 1;
    opterr = 1;
    while ((c = getopt_long(argc - 1, argv + 1, "", od_opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            nodefile = optarg;
            break;
        case 'o': {
            const char *g = ondemand_owner_field(optarg, 10, ':', ONDEMAND_ID_MAX, &uid);
            if (!g || !ondemand_owner_field(g, 10, 0, ONDEMAND_ID_MAX, &gid) || uid < 0 || gid < 0)
                return cli_usage_error("ondemand", "--owner is UID:GID, two numbers");
            break;
        }
        case 'D':
            if (!ondemand_owner_field(optarg, 8, 0, 07777, &mode) || mode < 0)
                return cli_usage_error("ondemand", "--mode is an octal mode, 0 to 7777");
            break;
        case 'I':
            o.stage_in = optarg;
            break;
        case 'E':
            o.endpoint = optarg;
            break;
        case 'O':
            o.stage_out = optarg;
            break;
        case 'd':
            o.data = optarg;
            break;
        case 'm':
            o.mnt = optarg;
            break;
        case 'S':
            o.stripe_all = true;
            break;
        case 's':
            o.ssh_opts = optarg;
            break;
        case 'k':
            o.keep_going = true;
            break;
        case 'c':
            o.cleanup = true;
            break;
        case 't':
            if (util_parse_i64(optarg, &v) < 0 || v < 1 || v > 3600)
                return cli_usage_error("ondemand", "--timeout is 1 to 3600 seconds");
            o.timeout_s = (int)v;
            break;
        case 'n':
            o.name = optarg;
            break;
        case 'r':
            o.remote = optarg;
            break;
        case 'v':
            o.verbose = true;
            break;
        case 'M':
            if (util_parse_i64(optarg, &v) < 0 || v < 1 || v > LOCAL_MAX_MDTS)
                return cli_usage_error("ondemand", "--mdts is 1 to %d", LOCAL_MAX_MDTS);
            o.mdts = (int)v;
            break;
        case 'p':
            if (util_parse_i64(optarg, &v) < 0 || v < 1 || v > 65000 - 2 - LOCAL_MAX_MDTS)
                return cli_usage_error("ondemand", "--port is 1 to %d", 65000 - 2 - LOCAL_MAX_MDTS);
            o.port = (int)v;
            break;
        default:
            return cli_usage_error("ondemand", NULL);
        }
    }
    if (optind < argc - 1)
        return cli_usage_error("ondemand", "unexpected argument '%s'", argv[optind + 1]);
    if (!nodefile)
        return cli_usage_error("ondemand", "%s needs --nodefile FILE", sub);
    if (strlen(o.name) >= OD_NAME_MAX ||
        strspn(o.name, "abcdefghijklmnopqrstuvwxyz0123456789-_") != strlen(o.name) || !o.name[0])
        return cli_usage_error("ondemand", "--name is up to 31 of a-z, 0-9, - and _");
    if ((uid >= 0 || mode >= 0) && strcmp(sub, "start"))
        return cli_usage_error("ondemand", "--owner and --mode are for start");
    if (uid >= 0 || mode >= 0) {
        char m[24] = "-";
        if (mode >= 0)
            snprintf(m, sizeof(m), "%llo", mode);
        if (uid >= 0)
            snprintf(o.root_owner, sizeof(o.root_owner), "%lld:%lld:%s", uid, gid, m);
        else
            snprintf(o.root_owner, sizeof(o.root_owner), "-:-:%s", m);
    }
    if (!strcmp(sub, "start")) {
        if (!o.data || !o.mnt || o.data[0] != '/' || o.mnt[0] != '/')
            return cli_usage_error("ondemand", "start needs --data-dir DIR and --mount DIR, "
                                               "absolute paths on every node");
        if (o.keep_going && o.mdts > 1)
            fprintf(stderr, "stria ondemand: note: with --keep-going an MDT node that fails "
                            "still stops the start\n");
    } else if (o.data || o.mnt || o.stripe_all || o.mdts != 1 || o.stage_in ||
               (o.stage_out && strcmp(sub, "stop"))) {
        return cli_usage_error("ondemand",
                               "%s takes --nodefile, --name, --ssh and --stria "
                               "(the nodes know the rest)%s",
                               sub, strcmp(sub, "stop") ? "" : ", --stage-out and --cleanup");
    }
    o.nodefile = nodefile;
    int ret = CLI_FAIL;
    if (nodes_read("ondemand", nodefile, &o.nodes, &o.n) == 0) {
        if (!strcmp(sub, "start")) {
            char keyf[] = "/tmp/stria-od-keygen-XXXXXX";
            int fd = mkstemp(keyf);
            char *text = NULL;
            if (fd >= 0)
                close(fd);
            if (fd >= 0 && auth_key_generate(keyf) == 0 &&
                util_read_file(keyf, 1024, &text, NULL) == 0 && strlen(text) >= 64) {
                memcpy(o.key, text, 64);
                ret = od_start(&o);
            } else
                fprintf(stderr, "stria ondemand: cannot make a cluster key\n");
            free(text);
            unlink(keyf);
        } else if (!strcmp(sub, "stop")) {
            ret = od_stop(&o);
        } else {
            int *idx;
            if (all_nodes(&o, &idx) == 0) {
                ret = run_phase(&o, "status", idx, o.n, NULL, NULL) ? CLI_FAIL : CLI_OK;
                free(idx);
            }
        }
    }
    nodes_free(o.nodes, o.n);
    return ret;
}
