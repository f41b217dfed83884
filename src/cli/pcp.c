/*
 * stria pcp: a parallel copy between a global path and a Stria mount (or
 * any two paths every node sees), with every node of a node file taking
 * a share, as BeeOND's beeond-cp (docs/operations.md, "Staging").
 *
 * The coordinator walks the sources and makes a plan: directories and
 * symbolic links it makes itself; regular files are cut into chunks of at
 * most --chunk bytes (large files split, so one file's bandwidth is every
 * node's), and the chunks are dealt to the workers by size. A worker is
 * this same program as `stria pcp node`, run over ssh on each node of
 * --nodefile (or here, without one), with its share on stdin; it copies
 * its chunks with --jobs threads, fsyncs each, and says "done ID" for
 * each. The coordinator writes every done chunk to a journal, so a copy
 * that was interrupted goes on where it stopped when run again with the
 * same arguments (the plan is the same if the sources did not change; a
 * journal of another plan is not used). At the end it sets the files'
 * modes and times, and prints what it did. This file is the coordinator;
 * the worker is pcp_node.c.
 */
#include "pcp.h"

#include "args.h"
#include "commands.h"
#include "connect.h"
#include "nodes.h"
#include "paths.h"
#include "proc.h"

#include "../common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <stria/stria.h>
#include <unistd.h>

#define PCP_CHUNK (64ull << 20)

/* ---- the plan ---- */

enum { E_DIR, E_LINK, E_FILE };

struct ent {
    int kind;
    char *src, *dst;
    mode_t mode;
    struct timespec mtime;
    uint64_t size;
};

struct chunk {
    uint32_t ent;
    uint64_t off, len;
    bool done;
    int worker;
};

struct plan {
    struct ent *e;
    size_t ne, cap_e;
    struct chunk *c;
    size_t nc, cap_c;
    uint64_t bytes, files;
    uint64_t chunk;
};

static int add_ent(struct plan *p, int kind, const char *src, const char *dst,
                   const struct stat *st)
{
    if (p->ne == p->cap_e) {
        size_t cap = p->cap_e ? p->cap_e * 2 : 256;
        struct ent *v = realloc(p->e, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        p->e = v;
        p->cap_e = cap;
    }
    struct ent *x = &p->e[p->ne];
    *x = (struct ent){kind,        strdup(src),          strdup(dst), st->st_mode & 07777,
                      st->st_mtim, (uint64_t)st->st_size};
    if (!x->src || !x->dst)
        return -ENOMEM;
    p->ne++;
    if (kind != E_FILE)
        return 0;
    p->files++;
    p->bytes += x->size;
    for (uint64_t off = 0; off < x->size || off == 0; off += p->chunk) {
        if (p->nc == p->cap_c) {
            size_t cap = p->cap_c ? p->cap_c * 2 : 1024;
            struct chunk *v = realloc(p->c, cap * sizeof(*v));
            if (!v)
                return -ENOMEM;
            p->c = v;
            p->cap_c = cap;
        }
        uint64_t len = x->size - off < p->chunk ? x->size - off : p->chunk;
        p->c[p->nc++] = (struct chunk){(uint32_t)(p->ne - 1), off, len, false, 0};
        if (x->size == 0)
            break;
    }
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Plan the copy of src to dst (which does not exist yet, or is replaced). */
static int walk(struct plan *p, const char *src, const char *dst)
{
    struct stat st;
    if (lstat(src, &st) < 0) {
        fprintf(stderr, "stria pcp: %s: %s\n", src, strerror(errno));
        return -errno;
    }
    if (S_ISLNK(st.st_mode) || S_ISREG(st.st_mode))
        return add_ent(p, S_ISLNK(st.st_mode) ? E_LINK : E_FILE, src, dst, &st);
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "stria pcp: %s: not a file, directory or link; skipped\n", src);
        return 0;
    }
    int rc = add_ent(p, E_DIR, src, dst, &st);
    DIR *d = rc ? NULL : opendir(src);
    if (!rc && !d) {
        fprintf(stderr, "stria pcp: %s: %s\n", src, strerror(errno));
        return -errno;
    }
    /* Names sorted: the same sources make the same plan. */
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **v = realloc(names, cap * sizeof(*v));
            if (!v) {
                rc = -ENOMEM;
                break;
            }
            names = v;
        }
        if (!(names[n] = strdup(de->d_name)))
            rc = -ENOMEM;
        else
            n++;
    }
    if (d)
        closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), cmp_name);
    for (size_t i = 0; i < n; i++) {
        char s[PATH_MAX], t[PATH_MAX];
        if (!rc && (snprintf(s, sizeof(s), "%s/%s", src, names[i]) >= (int)sizeof(s) ||
                    snprintf(t, sizeof(t), "%s/%s", dst, names[i]) >= (int)sizeof(t))) {
            fprintf(stderr, "stria pcp: %s/%s: path too long\n", src, names[i]);
            rc = -ENAMETOOLONG;
        }
        if (!rc)
            rc = walk(p, s, t);
        free(names[i]);
    }
    free(names);
    return rc;
}

/* A digest of the plan: names, sizes, mtimes and chunking. */
static void plan_id(const struct plan *p, char out[33])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char md[16];
    unsigned len = 0;
    EVP_DigestInit_ex(ctx, EVP_md5(), NULL);
    EVP_DigestUpdate(ctx, &p->chunk, sizeof(p->chunk));
    for (size_t i = 0; i < p->ne; i++) {
        const struct ent *e = &p->e[i];
        int64_t t = (int64_t)e->mtime.tv_sec * 1000000000 + e->mtime.tv_nsec;
        EVP_DigestUpdate(ctx, &e->kind, sizeof(e->kind));
        EVP_DigestUpdate(ctx, e->src, strlen(e->src) + 1);
        EVP_DigestUpdate(ctx, e->dst, strlen(e->dst) + 1);
        EVP_DigestUpdate(ctx, &e->size, sizeof(e->size));
        EVP_DigestUpdate(ctx, &t, sizeof(t));
    }
    EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
    for (int i = 0; i < 16; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
}

/* ---- the coordinator ---- */

static volatile sig_atomic_t interrupted;
static void on_signal(int sig)
{
    interrupted = sig;
}

struct runner {
    int node; /* -1: here */
    pid_t pid;
    int out_fd;
    off_t seen;
    char partial[256];
    size_t plen;
    int status;
    bool done;
    uint64_t chunks, bytes;
};

static void set_times(const struct plan *p)
{
    /* Deepest first, so a directory's time is set after its entries. */
    for (size_t i = p->ne; i-- > 0;) {
        const struct ent *e = &p->e[i];
        struct timespec ts[2] = {{0, UTIME_OMIT}, e->mtime};
        if (e->kind != E_LINK)
            chmod(e->dst, e->mode);
        utimensat(AT_FDCWD, e->dst, ts, AT_SYMLINK_NOFOLLOW);
    }
}

static const struct option pcp_opts[] = {
    {"nodefile", required_argument, NULL, 'f'}, {"ssh", required_argument, NULL, 's'},
    {"stria", required_argument, NULL, 'r'},    {"jobs", required_argument, NULL, 'j'},
    {"chunk", required_argument, NULL, 'c'},    {"journal", required_argument, NULL, 'J'},
    {"quiet", no_argument, NULL, 'q'},          {"endpoint", required_argument, NULL, 'e'},
    {"region", required_argument, NULL, 'R'},   {NULL, 0, NULL, 0}};

/* Read what runner r said since last time: count its done chunks. */
static void drain(struct runner *r, struct plan *p, FILE *journal, uint64_t *done_bytes)
{
    char buf[4096];
    for (;;) {
        ssize_t got = pread(r->out_fd, buf, sizeof(buf), r->seen);
        if (got <= 0)
            return;
        r->seen += got;
        for (ssize_t i = 0; i < got; i++) {
            char ch = buf[i];
            if (ch != '\n') {
                if (r->plen < sizeof(r->partial) - 1)
                    r->partial[r->plen++] = ch;
                continue;
            }
            r->partial[r->plen] = 0;
            uint64_t id;
            if (sscanf(r->partial, "done %" SCNu64, &id) == 1 && id < p->nc && !p->c[id].done) {
                p->c[id].done = true;
                *done_bytes += p->c[id].len;
                r->chunks++;
                r->bytes += p->c[id].len;
                if (journal)
                    fprintf(journal, "%" PRIu64 "\n", id);
            } else if (strncmp(r->partial, "done ", 5)) {
                fprintf(stderr, "stria pcp: %s%s\n", r->node < 0 ? "" : "node: ", r->partial);
            }
            r->plen = 0;
        }
    }
}

/* S3 and Stria: the storage hosts move the bytes (docs/operations.md,
 * "Data repositories on S3"), every one its own stripes at once. From S3:
 * the directory is linked to the prefix (or already is), its listing is
 * imported, and every file restored; to S3: linked without an import,
 * then archived. What the repository commands say is what this says. */
static int s3_copy(const char *src, const char *dst, bool from_s3, const char *endpoint,
                   const char *region)
{
    const char *dir = from_s3 ? dst : src, *url = from_s3 ? src : dst;
    struct stat st;
    bool cluster_path = !strncmp(dir, "stria:", 6);
    if (from_s3 && !cluster_path && util_mkdir_p(dir, 0755) < 0) {
        fprintf(stderr, "stria pcp: cannot make %s: %s\n", dir, strerror(errno));
        return CLI_FAIL;
    }
    if (!cluster_path && (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))) {
        fprintf(stderr, "stria pcp: %s is not a directory in Stria\n", dir);
        return CLI_FAIL;
    }
    stria_fs_t *fs;
    char path[4096];
    struct stria_repo *v = NULL;
    size_t n = 0;
    bool linked = false;
    if (cli_stria_path("pcp", dir, path, sizeof(path)) < 0 || cli_connect(&fs) < 0)
        return CLI_FAIL;
    if (stria_repo_load(fs, &v, &n) == 0)
        for (size_t i = 0; i < n && !linked; i++)
            if (!strcmp(v[i].path, path)) {
                char want[1400];
                snprintf(want, sizeof(want), "s3://%s/%s", v[i].bucket, v[i].prefix);
                size_t ul = strlen(url);
                linked = !strncmp(want, url, ul) && (!want[ul] || !strcmp(want + ul, "/"));
                if (!linked) {
                    fprintf(stderr, "stria pcp: %s is linked to %s already (stria repo list)\n",
                            dir, want);
                    free(v);
                    stria_disconnect(fs);
                    return CLI_FAIL;
                }
            }
    free(v);
    stria_disconnect(fs);
    char *av[16];
    int ac = 0, rc;
    av[ac++] = (char *)"repo";
    av[ac++] = (char *)(linked ? "import" : "add");
    av[ac++] = (char *)dir;
    if (!linked) {
        av[ac++] = (char *)url;
        if (endpoint) {
            av[ac++] = (char *)"--endpoint";
            av[ac++] = (char *)endpoint;
        }
        if (region) {
            av[ac++] = (char *)"--region";
            av[ac++] = (char *)region;
        }
        if (!from_s3)
            av[ac++] = (char *)"--no-import";
    }
    av[ac] = NULL;
    if ((from_s3 || !linked) && (rc = cmd_repo(ac, av)) != CLI_OK)
        return rc;
    char *hv[] = {(char *)"hsm", (char *)(from_s3 ? "restore" : "archive"), (char *)dir, NULL};
    return cmd_hsm(3, hv);
}

int cmd_pcp(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "node")) {
        int jobs = argc >= 4 && !strcmp(argv[2], "--jobs") ? atoi(argv[3]) : 4;
        return pcp_node(jobs < 1 ? 1 : jobs);
    }
    const char *nodefile = NULL, *ssh_opts = "", *journal_path = NULL, *endpoint = NULL,
               *region = NULL;
    char remote[PATH_MAX];
    proc_bin_dir(remote, sizeof(remote));
    strncat(remote, "/stria", sizeof(remote) - strlen(remote) - 1);
    const char *rprog = remote;
    int jobs = 4, c;
    bool quiet = false;
    int64_t v;
    struct plan p = {.chunk = PCP_CHUNK};
    optind = 1;
    opterr = 1;
    while ((c = getopt_long(argc, argv, "", pcp_opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            nodefile = optarg;
            break;
        case 's':
            ssh_opts = optarg;
            break;
        case 'r':
            rprog = optarg;
            break;
        case 'J':
            journal_path = optarg;
            break;
        case 'q':
            quiet = true;
            break;
        case 'e':
            endpoint = optarg;
            break;
        case 'R':
            region = optarg;
            break;
        case 'j':
            if (util_parse_i64(optarg, &v) < 0 || v < 1 || v > 64)
                return cli_usage_error("pcp", "--jobs is 1 to 64");
            jobs = (int)v;
            break;
        case 'c': {
            uint64_t sz;
            if (util_parse_size(optarg, &sz) < 0 || sz < (1u << 20) || sz > (1ull << 36) ||
                sz % (1u << 20))
                return cli_usage_error("pcp", "--chunk is a multiple of 1M, 1M to 64G");
            p.chunk = sz;
            break;
        }
        default:
            return cli_usage_error("pcp", NULL);
        }
    }
    if (argc - optind < 2)
        return cli_usage_error("pcp", "pcp takes SRC... DST");
    char dst[PATH_MAX];
    snprintf(dst, sizeof(dst), "%s", argv[argc - 1]);
    while (strlen(dst) > 1 && dst[strlen(dst) - 1] == '/')
        dst[strlen(dst) - 1] = 0;
    int nsrc = argc - optind - 1;
    bool s3_src = !strncmp(argv[optind], "s3://", 5), s3_dst = !strncmp(argv[argc - 1], "s3://", 5);
    if (s3_src || s3_dst) {
        if (argc - optind != 2 || (s3_src && s3_dst))
            return cli_usage_error("pcp", "with S3, pcp takes one s3://BUCKET/PREFIX and one "
                                          "directory in Stria");
        return s3_copy(argv[optind], argv[argc - 1], s3_src, endpoint, region);
    }
    if (endpoint || region)
        return cli_usage_error("pcp", "--endpoint and --region are for s3:// copies");
    for (int i = optind; i < argc; i++)
        if (!strncmp(argv[i], "stria:", 6) || !strncmp(argv[i], "s3://", 5))
            return cli_usage_error("pcp",
                                   "pcp copies between paths every node sees (a global "
                                   "file system, a Stria mount), or with S3 one prefix "
                                   "and one directory; '%s' is not one",
                                   argv[i]);
    struct stat dst_st;
    bool dst_dir = stat(dst, &dst_st) == 0 && S_ISDIR(dst_st.st_mode);
    if (nsrc > 1 && !dst_dir)
        return cli_usage_error("pcp", "with several sources, DST must be a directory");
    int rc = 0;
    for (int i = optind; i < argc - 1 && !rc; i++) {
        char t[PATH_MAX], s[PATH_MAX];
        int w = snprintf(s, sizeof(s), "%s", argv[i]);
        while (strlen(s) > 1 && s[strlen(s) - 1] == '/')
            s[strlen(s) - 1] = 0;
        const char *base = strrchr(s, '/') ? strrchr(s, '/') + 1 : s;
        if (w < (int)sizeof(s))
            w = snprintf(t, sizeof(t), "%s%s%s", dst, dst_dir && strcmp(dst, "/") ? "/" : "",
                         dst_dir ? base : "");
        if (w >= (int)sizeof(t)) {
            fprintf(stderr, "stria pcp: %s: path too long\n", argv[i]);
            rc = -ENAMETOOLONG;
        } else
            rc = walk(&p, s, t);
    }
    if (rc)
        return CLI_FAIL;
    char **nodes = NULL;
    int nnodes = 0;
    if (nodefile && nodes_read("pcp", nodefile, &nodes, &nnodes))
        return CLI_FAIL;
    /* The journal: the plan's id, then the done chunks' ids. */
    char id[33], jpath[PATH_MAX + 64];
    plan_id(&p, id);
    if (journal_path)
        snprintf(jpath, sizeof(jpath), "%s", journal_path);
    else {
        const char *st = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
        char dir[PATH_MAX];
        if (st && *st)
            snprintf(dir, sizeof(dir), "%s/stria", st);
        else
            snprintf(dir, sizeof(dir), "%s/.local/state/stria", home && *home ? home : "/tmp");
        util_mkdir_p(dir, 0700);
        snprintf(jpath, sizeof(jpath), "%s/pcp-%s.journal", dir, id);
    }
    uint64_t done_bytes = 0, resumed = 0;
    char *text = NULL;
    if (util_read_file(jpath, 1u << 30, &text, NULL) == 0 && !strncmp(text, id, 32)) {
        for (char *save = NULL, *l = strtok_r(text + 32, "\n", &save); l;
             l = strtok_r(NULL, "\n", &save)) {
            uint64_t k = strtoull(l, NULL, 10);
            if (k < p.nc && !p.c[k].done) {
                p.c[k].done = true;
                done_bytes += p.c[k].len;
                resumed++;
            }
        }
    }
    free(text);
    /* Done chunks count only while their file is there, as large as the
     * plan says (each chunk's copier sized it): a destination removed or
     * replaced since the journal was written is copied again. */
    for (size_t k = 0; k < p.nc && resumed; k++) {
        const struct ent *e = &p.e[p.c[k].ent];
        struct stat now;
        if (p.c[k].done && (stat(e->dst, &now) < 0 || (uint64_t)now.st_size != e->size)) {
            p.c[k].done = false;
            done_bytes -= p.c[k].len;
            resumed--;
        }
    }
    FILE *journal = fopen(jpath, resumed ? "a" : "w");
    if (journal && !resumed)
        fprintf(journal, "%s\n", id);
    if (journal)
        fflush(journal);
    if (resumed && !quiet)
        printf("resuming: %" PRIu64 " of %zu chunks done before (journal %s)\n", resumed, p.nc,
               jpath);
    /* Directories and links here, first. One that cannot be made is
     * said, and the rest is copied (the files below it fail too). */
    size_t ent_failed = 0;
    for (size_t i = 0; i < p.ne; i++) {
        const struct ent *e = &p.e[i];
        int erc = 0;
        struct stat dst_now;
        if (e->kind == E_DIR && !(erc = util_mkdir_p(e->dst, 0755)) &&
            (stat(e->dst, &dst_now) < 0 || !S_ISDIR(dst_now.st_mode)))
            erc = -ENOTDIR;
        /* A directory a former run left read-only takes entries again. */
        if (e->kind == E_DIR && !erc && (dst_now.st_mode & 0700) != 0700)
            chmod(e->dst, (dst_now.st_mode & 07777) | 0700);
        if (e->kind == E_DIR && erc)
            fprintf(stderr, "stria pcp: cannot make %s: %s\n", e->dst, strerror(-erc));
        else if (e->kind == E_LINK) {
            char target[PATH_MAX];
            ssize_t n = readlink(e->src, target, sizeof(target) - 1);
            if (n < 0)
                erc = -errno;
            else {
                target[n] = 0;
                unlink(e->dst);
                if (symlink(target, e->dst) < 0)
                    erc = -errno;
            }
            if (erc)
                fprintf(stderr, "stria pcp: cannot link %s: %s\n", e->dst, strerror(-erc));
        }
        ent_failed += erc != 0;
    }
    /* The chunks left, dealt to the workers by size (the least loaded
     * takes the next, largest first as the plan goes). */
    int nw = nnodes ? nnodes : 1;
    struct runner *r = calloc((size_t)nw, sizeof(*r));
    FILE **share = calloc((size_t)nw, sizeof(*share));
    uint64_t *load = calloc((size_t)nw, sizeof(*load));
    if (!r || !share || !load)
        rc = -ENOMEM;
    for (int i = 0; i < nw && !rc; i++) {
        r[i].node = nnodes ? i : -1;
        if (!(share[i] = tmpfile()))
            rc = -errno;
    }
    for (size_t k = 0; k < p.nc && !rc; k++) {
        if (p.c[k].done)
            continue;
        int best = 0;
        for (int i = 1; i < nw; i++)
            if (load[i] < load[best])
                best = i;
        load[best] += p.c[k].len + 65536; /* a file costs more than its bytes */
        const struct ent *e = &p.e[p.c[k].ent];
        fprintf(share[best], "%zu %" PRIu64 " %" PRIu64 " %" PRIu64 " %o\t", k, p.c[k].off,
                p.c[k].len, e->size, (unsigned)e->mode);
        pcp_put_path(share[best], e->src);
        fputc('\t', share[best]);
        pcp_put_path(share[best], e->dst);
        fputc('\n', share[best]);
    }
    uint64_t t0 = util_now_mono_ns();
    int running = 0;
    signal(SIGCHLD, SIG_DFL); /* an inherited SIG_IGN would reap them for us */
    char jobs_s[16];
    snprintf(jobs_s, sizeof(jobs_s), "%d", jobs);
    for (int i = 0; i < nw && !rc; i++) {
        fflush(share[i]);
        rewind(share[i]);
        char outf[] = "/tmp/stria-pcp-XXXXXX";
        r[i].out_fd = mkostemp(outf, O_CLOEXEC);
        if (r[i].out_fd < 0) {
            rc = -errno;
            break;
        }
        unlink(outf);
        char cmd[PATH_MAX + 64], opts[1024];
        char *av[64];
        int ac = 0;
        if (nnodes) {
            snprintf(cmd, sizeof(cmd), "'%s' pcp node --jobs %d", rprog, jobs);
            av[ac++] = (char *)"ssh";
            snprintf(opts, sizeof(opts), "%s", ssh_opts);
            for (char *save = NULL, *t = strtok_r(opts, " \t", &save); t && ac < 50;
                 t = strtok_r(NULL, " \t", &save))
                av[ac++] = t;
            av[ac++] = (char *)"-o";
            av[ac++] = (char *)"BatchMode=yes";
            av[ac++] = nodes[i];
            av[ac++] = cmd;
        } else {
            av[ac++] = (char *)"/proc/self/exe";
            av[ac++] = (char *)"pcp";
            av[ac++] = (char *)"node";
            av[ac++] = (char *)"--jobs";
            av[ac++] = jobs_s;
        }
        av[ac] = NULL;
        r[i].pid = fork();
        if (r[i].pid == 0) {
            dup2(fileno(share[i]), 0);
            dup2(r[i].out_fd, 1);
            dup2(r[i].out_fd, 2);
            setpgid(0, 0);
            execvp(av[0], av);
            _exit(127);
        }
        if (r[i].pid < 0)
            rc = -errno;
        else
            running++;
    }
    bool bar = !quiet && isatty(1);
    uint64_t last_bar = 0;
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    bool killed = false;
    while (running) {
        if (interrupted && !killed) {
            /* What the workers said done is in the journal; the rest
             * stops here and is copied again by the next run. */
            for (int i = 0; i < nw; i++)
                if (r[i].pid > 0 && !r[i].done)
                    kill(-r[i].pid, SIGTERM);
            killed = true;
        }
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid < 0 && errno == ECHILD) {
            for (int i = 0; i < nw; i++)
                if (r[i].pid > 0 && !r[i].done) {
                    drain(&r[i], &p, journal, &done_bytes);
                    r[i].done = true;
                    r[i].status = 255;
                }
            running = 0;
            break;
        }
        for (int i = 0; i < nw; i++)
            if (r[i].pid > 0 && !r[i].done) {
                drain(&r[i], &p, journal, &done_bytes);
                if (r[i].pid == pid) {
                    r[i].done = true;
                    r[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                    running--;
                }
            }
        if (journal)
            fflush(journal);
        uint64_t now = util_now_mono_ns();
        if (bar && now - last_bar > 250000000ull) {
            double dt = (double)(now - t0) / 1e9;
            printf("\rstria pcp: %" PRIu64 "/%" PRIu64 " MiB [%3d%%] %.0f MiB/s  ",
                   done_bytes >> 20, p.bytes >> 20,
                   p.bytes ? (int)(done_bytes * 100 / p.bytes) : 100,
                   dt > 0 ? (double)(done_bytes >> 20) / dt : 0.0);
            fflush(stdout);
            last_bar = now;
        }
        if (pid <= 0)
            usleep(50 * 1000);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (bar)
        putchar('\n');
    int failed = 0;
    for (int i = 0; i < nw; i++) {
        if (r[i].pid > 0)
            drain(&r[i], &p, journal, &done_bytes);
        if (r[i].pid > 0 && r[i].status) {
            failed++;
            fprintf(stderr, "stria pcp: %s%s failed (%s %d)\n", nnodes ? "node " : "the copier",
                    nnodes ? nodes[i] : "", r[i].status == 255 && nnodes ? "ssh:" : "exit",
                    r[i].status);
        }
        if (r[i].out_fd > 0)
            close(r[i].out_fd);
        if (share && share[i])
            fclose(share[i]);
    }
    size_t left = 0;
    for (size_t k = 0; k < p.nc; k++)
        left += !p.c[k].done;
    double dt = (double)(util_now_mono_ns() - t0) / 1e9;
    if (!rc && !left && !ent_failed) {
        set_times(&p);
        if (journal) {
            fclose(journal);
            journal = NULL;
        }
        unlink(jpath);
        printf("pcp: %" PRIu64 " files, %.1f MiB by %d %s in %.2f s (%.1f MiB/s)\n", p.files,
               (double)p.bytes / 1048576.0, nw, nnodes ? (nw > 1 ? "nodes" : "node") : "copier", dt,
               dt > 0 ? (double)p.bytes / 1048576.0 / dt : 0.0);
        if (nnodes > 1 && !quiet)
            for (int i = 0; i < nw; i++)
                printf("  %-24s %" PRIu64 " chunks, %.1f MiB\n", nodes[i], r[i].chunks,
                       (double)r[i].bytes / 1048576.0);
    } else {
        fprintf(stderr,
                "stria pcp: %zu of %zu chunks and %zu directories or links not copied; run the "
                "same command again to go on (journal %s)\n",
                left, p.nc, ent_failed, jpath);
        rc = rc ? rc : -EIO;
    }
    if (journal)
        fclose(journal);
    free(r);
    free(share);
    free(load);
    nodes_free(nodes, nnodes);
    for (size_t i = 0; i < p.ne; i++) {
        free(p.e[i].src);
        free(p.e[i].dst);
    }
    free(p.e);
    free(p.c);
    return rc ? CLI_FAIL : CLI_OK;
}
