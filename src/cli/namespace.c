/*
 * stria mkdir, ls, stat, rm, mv and cp, and the path-argument parsing
 * every command shares.
 *
 * libstria has no working directory: every path starts at the cluster's
 * root. So a path argument is resolved here, lexically ("." and ".." and
 * repeated slashes), before it is handed over. Each command carries on
 * with its next argument after a failure, reports it as
 * "stria CMD: PATH: reason" and exits 1 at the end.
 *
 * A local path inside a stria FUSE mount names the same file as the part
 * below the mount point does in the cluster, so it is translated here and
 * the command still talks to the cluster directly (striped I/O, layouts)
 * rather than through the mount. The mount is found in mountinfo by the
 * longest mount point holding the path, with the path resolved by
 * realpath(3) up to its last component (which may not exist yet, and
 * which is not followed if it is a symlink); when the mount does not
 * answer (its stria-fuse is gone), the path is matched as written. Only
 * when some stria mount exists is anything resolved, so without one bare
 * paths behave exactly as before.
 *
 * cp moves data in 8 MiB chunks with pread/pwrite on both sides (libstria
 * spreads each chunk over the file's stripes in parallel) and fsyncs the
 * destination before it returns, so a copy that exits 0 is durable. It
 * never follows the source's layout, owner, mode or times: only the data.
 */
#include "args.h"
#include "commands.h"
#include "connect.h"
#include "paths.h"

#include "../common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- paths ---- */

/* Make in absolute and resolve "//", "." and ".." (never above /). */
static int path_normalize(const char *in, char *out, size_t len)
{
    size_t n = 0;
    if (len < 2)
        return -ENAMETOOLONG;
    out[n++] = '/';
    while (*in) {
        while (*in == '/')
            in++;
        size_t clen = strcspn(in, "/");
        if (clen == 0 || (clen == 1 && in[0] == '.')) {
            in += clen;
            continue;
        }
        if (clen == 2 && in[0] == '.' && in[1] == '.') {
            while (n > 1 && out[n - 1] != '/')
                n--;
            if (n > 1)
                n--;
            in += clen;
            continue;
        }
        if (n + (n > 1) + clen + 1 > len)
            return -ENAMETOOLONG;
        if (n > 1)
            out[n++] = '/';
        memcpy(out + n, in, clen);
        n += clen;
        in += clen;
    }
    out[n] = '\0';
    return 0;
}

/* ---- stria mounts ---- */

int cli_mounts_read(struct mount_table *m)
{
    const char *path = getenv("STRIA_MOUNTINFO");
    return mount_table_read(path && *path ? path : NULL, m);
}

const struct mount_ent *cli_mount_at(const struct mount_table *m, const char *point)
{
    const struct mount_ent *top = mount_table_top(m, point);
    return top && strcmp(top->fstype, CLI_MOUNT_TYPE) == 0 ? top : NULL;
}

/* This process's mounts, read once: they do not change under a command. */
static const struct mount_table *mounts(void)
{
    static struct mount_table m;
    static bool loaded, any_stria;
    if (!loaded) {
        loaded = true;
        if (cli_mounts_read(&m) < 0)
            m = (struct mount_table){0};
        for (size_t i = 0; i < m.n; i++)
            any_stria |= strcmp(m.v[i].fstype, CLI_MOUNT_TYPE) == 0;
    }
    return any_stria ? &m : NULL;
}

/* The file system on top at canonical path p, if it is a stria mount;
 * *rest is then the part of p below its mount point ("" or "/..."). */
static const struct mount_ent *stria_mount_of(const struct mount_table *m, const char *p,
                                              const char **rest)
{
    const struct mount_ent *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < m->n; i++) {
        size_t l = strlen(m->v[i].point);
        if (strcmp(m->v[i].point, "/") == 0)
            l = 0;
        else if (strncmp(p, m->v[i].point, l) != 0 || (p[l] != '\0' && p[l] != '/'))
            continue;
        /* ">=": of two mounts at one point the later one is on top. */
        if (!best || l >= best_len) {
            best = &m->v[i];
            best_len = l;
        }
    }
    if (!best || strcmp(best->fstype, CLI_MOUNT_TYPE) != 0)
        return NULL;
    *rest = p + best_len;
    return best;
}

/* realpath(3) of abs's directory with its last component appended as it
 * is: that name may not exist yet, and a symlink there is the file meant. */
static bool resolve_parent(const char *abs, char *out)
{
    char dir[CLI_PATH_MAX];
    size_t n = strlen(abs);
    if (n >= sizeof(dir))
        return false;
    memcpy(dir, abs, n + 1);
    char *slash = strrchr(dir, '/');
    const char *base = slash + 1;
    if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        return realpath(abs, out) != NULL;
    if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (!realpath(dir, out))
        return false;
    size_t dl = strlen(out);
    if (dl + 1 + strlen(base) + 1 > PATH_MAX)
        return false;
    snprintf(out + dl, PATH_MAX - dl, "%s%s", dl > 1 ? "/" : "", base);
    return true;
}

/*
 * If the local path arg lies inside a stria mount, write its cluster path
 * to out, set *mount and return 1; return 0 if it does not, or a negative
 * errno.
 */
static int mount_path(const char *arg, char *out, size_t len, const struct mount_ent **mount)
{
    const struct mount_table *m = mounts();
    char abs[CLI_PATH_MAX], canon[PATH_MAX], cwd[CLI_PATH_MAX], joined[2 * CLI_PATH_MAX];
    const struct mount_ent *mt = NULL;
    const char *rest = "";

    if (!m || !*arg)
        return 0;
    if (arg[0] == '/') {
        if (strlen(arg) >= sizeof(abs))
            return -ENAMETOOLONG;
        strcpy(abs, arg);
    } else {
        if (!getcwd(cwd, sizeof(cwd)))
            return 0;
        if (cli_path_join(cwd, arg, abs, sizeof(abs)) < 0)
            return -ENAMETOOLONG;
    }
    /* The name itself; else a symlink's target, if that is in a mount;
     * else, if neither resolves, the path as written (a mount whose
     * stria-fuse is gone, or missing directories for mkdir -p). */
    bool resolved = false;
    if (resolve_parent(abs, canon)) {
        resolved = true;
        mt = stria_mount_of(m, canon, &rest);
    }
    if (!mt && realpath(abs, canon)) {
        resolved = true;
        mt = stria_mount_of(m, canon, &rest);
    }
    if (!mt && !resolved && path_normalize(abs, canon, sizeof(canon)) == 0)
        mt = stria_mount_of(m, canon, &rest);
    if (!mt)
        return 0;
    snprintf(joined, sizeof(joined), "%s/%s", mt->root, rest);
    int rc = path_normalize(joined, out, len);
    if (rc < 0)
        return rc;
    if (mount)
        *mount = mt;
    return 1;
}

const char *cli_mount_conf(const char *arg)
{
    char path[CLI_PATH_MAX];
    const struct mount_ent *mt;
    if (strncmp(arg, "stria:", 6) == 0 || mount_path(arg, path, sizeof(path), &mt) <= 0)
        return NULL;
    return mt->source;
}

/* ---- path arguments ---- */

int cli_path(const char *arg, char *out, size_t len, int *is_stria)
{
    if (strncmp(arg, "stria:", 6) == 0) {
        *is_stria = 1;
        return path_normalize(arg + 6, out, len);
    }
    int rc = mount_path(arg, out, len, NULL);
    *is_stria = rc > 0;
    if (rc != 0)
        return rc < 0 ? rc : 0;
    if (strlen(arg) >= len)
        return -ENAMETOOLONG;
    strcpy(out, arg);
    return 0;
}

int cli_stria_path(const char *cmd, const char *arg, char *out, size_t len)
{
    int is_stria;
    int rc = cli_path(arg, out, len, &is_stria);
    if (rc == 0 && !is_stria) {
        if (arg[0] != '/') {
            fprintf(stderr,
                    "stria %s: %s: not a cluster path; write /%s or stria:/%s, or a path "
                    "inside a stria mount\n",
                    cmd, arg, arg, arg);
            return -EINVAL;
        }
        rc = path_normalize(arg, out, len);
    }
    if (rc < 0)
        cli_error(cmd, arg, rc);
    return rc;
}

int cli_path_join(const char *dir, const char *name, char *out, size_t len)
{
    size_t dl = strlen(dir);
    int slash = dl > 0 && dir[dl - 1] != '/';
    int n = snprintf(out, len, "%s%s%s", dir, slash ? "/" : "", name);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* How output names an argument: as written when it is a path in a stria
 * mount, else by its cluster path. */
static const char *shown_name(const char *arg, const char *path)
{
    return cli_mount_conf(arg) ? arg : path;
}

/* The last component of path, ignoring trailing slashes, into buf. */
static const char *base_name(const char *path, char *buf, size_t len)
{
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/')
        start--;
    snprintf(buf, len, "%.*s", (int)(end - start), path + start);
    return buf;
}

/* ---- shared by ls, stat and rm ---- */

struct dent {
    char *name;
    unsigned char type;
};

struct dlist {
    struct dent *v;
    size_t n, cap;
};

static int dlist_add(struct dlist *l, const char *name, unsigned char type)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        struct dent *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return -ENOMEM;
    l->v[l->n++] = (struct dent){copy, type};
    return 0;
}

static void dlist_free(struct dlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
    *l = (struct dlist){0};
}

/* Read a whole directory first: removing entries while reading could skip some. */
static int dlist_read(stria_fs_t *fs, const char *path, struct dlist *l)
{
    stria_dir_t *d;
    struct stria_dirent ent;
    int rc = stria_opendir(fs, path, &d);
    if (rc < 0)
        return rc;
    while ((rc = stria_readdir(d, &ent)) > 0)
        if ((rc = dlist_add(l, ent.name, ent.type)) < 0)
            break;
    stria_closedir(d);
    if (rc < 0)
        dlist_free(l);
    return rc;
}

static int dent_cmp(const void *a, const void *b)
{
    return strcmp(((const struct dent *)a)->name, ((const struct dent *)b)->name);
}

/* "drwxr-xr-x" for a mode. */
static void mode_string(mode_t m, char s[11])
{
    static const char rwx[] = "rwxrwxrwx";
    s[0] = S_ISDIR(m)    ? 'd'
           : S_ISLNK(m)  ? 'l'
           : S_ISCHR(m)  ? 'c'
           : S_ISBLK(m)  ? 'b'
           : S_ISFIFO(m) ? 'p'
           : S_ISSOCK(m) ? 's'
                         : '-';
    for (int i = 0; i < 9; i++)
        s[1 + i] = (m & (0400 >> i)) ? rwx[i] : '-';
    if (m & S_ISUID)
        s[3] = (m & S_IXUSR) ? 's' : 'S';
    if (m & S_ISGID)
        s[6] = (m & S_IXGRP) ? 's' : 'S';
    if (m & S_ISVTX)
        s[9] = (m & S_IXOTH) ? 't' : 'T';
    s[10] = '\0';
}

/* A symlink's target into buf (always NUL-terminated), or "?" if unreadable. */
static const char *link_target(stria_fs_t *fs, const char *path, char *buf, size_t len)
{
    ssize_t n = stria_readlink(fs, path, buf, len - 1);
    if (n < 0)
        return "?";
    buf[(size_t)n < len - 1 ? (size_t)n : len - 1] = '\0';
    return buf;
}

static mode_t current_umask(void)
{
    mode_t m = umask(0);
    umask(m);
    return m;
}

/* ---- mkdir ---- */

/* mkdir -p: create each missing component; an existing directory is fine. */
static int mkdir_parents(stria_fs_t *fs, const char *path, mode_t mode)
{
    char buf[CLI_PATH_MAX];
    mode_t parent_mode = (0777 & ~current_umask()) | S_IWUSR | S_IXUSR;
    struct stat st;

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        int rc = stria_mkdir(fs, buf, saved ? parent_mode : mode);
        /* EEXIST, or EACCES on a parent we may not write but that exists. */
        if (rc < 0 && stria_stat(fs, buf, &st) == 0)
            rc = S_ISDIR(st.st_mode) ? 0 : (saved ? -ENOTDIR : -EEXIST);
        if (rc < 0)
            return rc;
        if (!saved)
            return 0;
        *p = saved;
    }
}

static int parse_mode(const char *s, mode_t *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 8);
    if (!*s || *end || errno || v > 07777)
        return -EINVAL;
    *out = (mode_t)v;
    return 0;
}

/* An MDT count (-1: all) or index (-1: any) for -c and -i. */
static int parse_mdt_arg(const char *cmd, const char *opt, const char *arg, int32_t *out)
{
    int64_t v;
    if (util_parse_i64(arg, &v) < 0 || v < -1 || v > 4095)
        return cli_usage_error(cmd, "%s wants -1..4095, not '%s'", opt, arg);
    *out = (int32_t)v;
    return 0;
}

/* mkdir, and setdirstripe without -D: make directories, striped over MDTs
 * when -c says so. */
static int make_dirs(int argc, char **argv, bool striping_only)
{
    int parents = 0, c, ret = CLI_OK;
    mode_t mode = 0777 & ~current_umask();
    int32_t count = 0, start = -1;
    bool dflt = false;
    stria_fs_t *fs;

    while ((c = cli_getopt(argc, argv, striping_only ? "c:i:m:D" : "pm:c:i:")) != -1) {
        switch (c) {
        case 'p':
            parents = 1;
            break;
        case 'm':
            if (parse_mode(optarg, &mode) < 0)
                return cli_usage_error(argv[0], "invalid mode '%s' (octal, e.g. 0755)", optarg);
            break;
        case 'c':
            if (parse_mdt_arg(argv[0], "-c", optarg, &count))
                return CLI_USAGE;
            break;
        case 'i':
            if (parse_mdt_arg(argv[0], "-i", optarg, &start))
                return CLI_USAGE;
            break;
        case 'D':
            dflt = true;
            break;
        default:
            return cli_usage_error(argv[0], NULL);
        }
    }
    if (optind == argc)
        return cli_usage_error(argv[0], "missing PATH");
    if (striping_only && !dflt && count == 0)
        return cli_usage_error(argv[0], "-c COUNT is needed (or -D for a default)");
    if (parents && (count || start >= 0))
        return cli_usage_error(argv[0], "-p makes plain directories; leave out -c and -i");
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    for (int i = optind; i < argc; i++) {
        char path[CLI_PATH_MAX];
        if (cli_stria_path(argv[0], argv[i], path, sizeof(path)) < 0) {
            ret = CLI_FAIL;
            continue;
        }
        int rc;
        if (dflt)
            rc = stria_setdirstripe(fs, path, count, start);
        else if (parents)
            rc = mkdir_parents(fs, path, mode);
        else if (count || start >= 0)
            rc = stria_mkdir_striped(fs, path, mode, count, start);
        else
            rc = stria_mkdir(fs, path, mode);
        if (rc < 0) {
            cli_error(argv[0], path, rc);
            if (rc == -EINVAL && (count || start >= 0))
                fprintf(stderr,
                        "%s: -c and -i must name MDTs that exist (stria df -i lists "
                        "them)\n",
                        argv[0]);
            ret = CLI_FAIL;
        }
    }
    stria_disconnect(fs);
    return ret;
}

int cmd_mkdir(int argc, char **argv)
{
    return make_dirs(argc, argv, false);
}

int cmd_setdirstripe(int argc, char **argv)
{
    return make_dirs(argc, argv, true);
}

static int getdirstripe_one(stria_fs_t *fs, const char *cmd, const char *arg, const char *path)
{
    struct stria_layout l;
    (void)arg;
    int rc = stria_getstripe(fs, path, &l);
    if (rc == 0 && !l.is_dir)
        rc = -ENOTDIR;
    if (rc < 0) {
        cli_error(cmd, path, rc);
        return CLI_FAIL;
    }
    /* As lfs getdirstripe: the count, the first MDT, the hash, then every
     * shard's MDT. */
    printf("%s\nlmv_stripe_count: %u lmv_stripe_offset: %u lmv_hash_type: %s\n", path, l.mdt_count,
           l.mdt_start, l.mdt_count > 1 ? "fnv_1a_64" : "none");
    if (l.mdt_count > 1) {
        printf("mdtidx\n");
        for (uint32_t k = 0; k < l.mdt_count; k++)
            printf("%6u\n", (l.mdt_start + k) % l.mdt_nmdt);
    }
    if (l.mdt_default_count)
        printf("default: lmv_stripe_count: %d lmv_stripe_offset: %d\n", l.mdt_default_count,
               l.mdt_default_start);
    return CLI_OK;
}

int cmd_getdirstripe(int argc, char **argv)
{
    return cli_each_path(argc, argv, getdirstripe_one);
}

/* ---- ls ---- */

struct ls_opts {
    int all, lng;
};

static void print_long(stria_fs_t *fs, const char *path, const char *name, const struct stat *st)
{
    char mode[11], when[32], target[CLI_PATH_MAX];
    struct tm tm;

    mode_string(st->st_mode, mode);
    localtime_r(&st->st_mtim.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
    printf("%s %3lu %5u %5u %12lld %s %s", mode, (unsigned long)st->st_nlink, (unsigned)st->st_uid,
           (unsigned)st->st_gid, (long long)st->st_size, when, name);
    if (S_ISLNK(st->st_mode))
        printf(" -> %s", link_target(fs, path, target, sizeof(target)));
    putchar('\n');
}

static int ls_entry(stria_fs_t *fs, const char *dir, const char *name, const struct ls_opts *o)
{
    char joined[CLI_PATH_MAX], path[CLI_PATH_MAX];
    struct stat st;

    if (!o->lng) {
        puts(name);
        return CLI_OK;
    }
    /* Normalising turns "dir/." and "dir/.." (from -a) into real paths. */
    int rc = cli_path_join(dir, name, joined, sizeof(joined));
    if (rc == 0)
        rc = path_normalize(joined, path, sizeof(path));
    if (rc == 0)
        rc = stria_lstat(fs, path, &st);
    if (rc < 0) {
        cli_error("ls", rc == -ENAMETOOLONG ? name : path, rc);
        return CLI_FAIL;
    }
    print_long(fs, path, name, &st);
    return CLI_OK;
}

static int ls_dir(stria_fs_t *fs, const char *path, const struct ls_opts *o)
{
    struct dlist l = {0};
    int ret = CLI_OK;
    int rc = dlist_read(fs, path, &l);
    if (rc == 0 && o->all && (rc = dlist_add(&l, ".", DT_DIR)) == 0)
        rc = dlist_add(&l, "..", DT_DIR);
    if (rc < 0) {
        cli_error("ls", path, rc);
        dlist_free(&l);
        return CLI_FAIL;
    }
    if (l.n)
        qsort(l.v, l.n, sizeof(*l.v), dent_cmp);
    for (size_t i = 0; i < l.n; i++)
        if (o->all || l.v[i].name[0] != '.')
            ret |= ls_entry(fs, path, l.v[i].name, o);
    dlist_free(&l);
    return ret;
}

/* One argument: a directory's entries (under a "path:" header when there
 * are several arguments, after a blank line if anything came before), or
 * just the file itself. With -l a symlink to a directory is shown as the
 * link, as ls(1) does. */
static int ls_arg(stria_fs_t *fs, const char *path, const char *shown, const struct ls_opts *o,
                  int header, int *printed)
{
    struct stat st;
    int rc = o->lng ? stria_lstat(fs, path, &st) : stria_stat(fs, path, &st);
    if (rc < 0) {
        cli_error("ls", shown, rc);
        return CLI_FAIL;
    }
    if (!S_ISDIR(st.st_mode)) {
        *printed = 1;
        if (o->lng)
            print_long(fs, path, shown, &st);
        else
            puts(shown);
        return CLI_OK;
    }
    if (header)
        printf("%s%s:\n", *printed ? "\n" : "", shown);
    *printed = 1;
    return ls_dir(fs, path, o);
}

int cmd_ls(int argc, char **argv)
{
    struct ls_opts o = {0};
    int c, ret = CLI_OK, printed = 0;
    stria_fs_t *fs;

    while ((c = cli_getopt(argc, argv, "la")) != -1) {
        switch (c) {
        case 'l':
            o.lng = 1;
            break;
        case 'a':
            o.all = 1;
            break;
        default:
            return cli_usage_error(argv[0], NULL);
        }
    }
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    if (optind == argc)
        ret = ls_arg(fs, "/", "/", &o, 0, &printed);
    for (int i = optind; i < argc; i++) {
        char path[CLI_PATH_MAX];
        if (cli_stria_path(argv[0], argv[i], path, sizeof(path)) < 0) {
            ret = CLI_FAIL;
            continue;
        }
        ret |= ls_arg(fs, path, shown_name(argv[i], path), &o, argc - optind > 1, &printed);
    }
    stria_disconnect(fs);
    return ret;
}

/* ---- stat ---- */

static const char *type_name(const struct stat *st)
{
    mode_t m = st->st_mode;
    if (S_ISREG(m))
        return st->st_size ? "regular file" : "regular empty file";
    if (S_ISDIR(m))
        return "directory";
    if (S_ISLNK(m))
        return "symbolic link";
    if (S_ISFIFO(m))
        return "fifo";
    if (S_ISSOCK(m))
        return "socket";
    if (S_ISCHR(m))
        return "character special file";
    if (S_ISBLK(m))
        return "block special file";
    return "weird file";
}

static void print_time(const char *label, const struct timespec *ts)
{
    char date[32], zone[8];
    struct tm tm;

    localtime_r(&ts->tv_sec, &tm);
    strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm);
    strftime(zone, sizeof(zone), "%z", &tm);
    printf("%s: %s.%09ld %s\n", label, date, (long)ts->tv_nsec, zone);
}

static void print_stat(stria_fs_t *fs, const char *path, const char *shown, const struct stat *st)
{
    char mode[11], target[CLI_PATH_MAX];
    const struct passwd *pw = getpwuid(st->st_uid);
    const struct group *gr = getgrgid(st->st_gid);

    if (S_ISLNK(st->st_mode))
        printf("  File: %s -> %s\n", shown, link_target(fs, path, target, sizeof(target)));
    else
        printf("  File: %s\n", shown);
    printf("  Size: %-10lld\tBlocks: %-10lld IO Block: %-6ld %s\n", (long long)st->st_size,
           (long long)st->st_blocks, (long)st->st_blksize, type_name(st));
    printf(" Inode: %-10llu\tLinks: %lu\n", (unsigned long long)st->st_ino,
           (unsigned long)st->st_nlink);
    mode_string(st->st_mode, mode);
    printf("Access: (%04o/%s)  Uid: (%5u/%8s)   Gid: (%5u/%8s)\n", (unsigned)(st->st_mode & 07777),
           mode, (unsigned)st->st_uid, pw ? pw->pw_name : "UNKNOWN", (unsigned)st->st_gid,
           gr ? gr->gr_name : "UNKNOWN");
    print_time("Access", &st->st_atim);
    print_time("Modify", &st->st_mtim);
    print_time("Change", &st->st_ctim);
}

static int stat_one(stria_fs_t *fs, const char *cmd, const char *arg, const char *path)
{
    struct stat st;
    int rc = stria_lstat(fs, path, &st);
    if (rc < 0) {
        cli_error(cmd, path, rc);
        return CLI_FAIL;
    }
    print_stat(fs, path, shown_name(arg, path), &st);
    return CLI_OK;
}

int cmd_stat(int argc, char **argv)
{
    return cli_each_path(argc, argv, stat_one);
}

/* ---- rm ---- */

struct rm_opts {
    int recursive, force;
};

static int rm_tree(stria_fs_t *fs, const char *path, const struct rm_opts *o);

/* Remove one entry of a directory being emptied. */
static int rm_child(stria_fs_t *fs, const char *path, unsigned char type, const struct rm_opts *o)
{
    struct stat st;
    if (type == DT_UNKNOWN && stria_lstat(fs, path, &st) == 0 && S_ISDIR(st.st_mode))
        type = DT_DIR;
    if (type == DT_DIR)
        return rm_tree(fs, path, o);
    int rc = stria_unlink(fs, path);
    if (rc < 0 && !(rc == -ENOENT && o->force)) {
        cli_error("rm", path, rc);
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* Empty a directory depth first, then remove it. */
static int rm_tree(stria_fs_t *fs, const char *path, const struct rm_opts *o)
{
    struct dlist l = {0};
    int ret = CLI_OK;
    int rc = dlist_read(fs, path, &l);
    if (rc < 0) {
        if (rc == -ENOENT && o->force)
            return CLI_OK;
        cli_error("rm", path, rc);
        return CLI_FAIL;
    }
    for (size_t i = 0; i < l.n; i++) {
        char child[CLI_PATH_MAX];
        if ((rc = cli_path_join(path, l.v[i].name, child, sizeof(child))) < 0) {
            cli_error("rm", path, rc);
            ret = CLI_FAIL;
            continue;
        }
        ret |= rm_child(fs, child, l.v[i].type, o);
    }
    dlist_free(&l);
    /* A failure below leaves the directory non-empty: that was reported already. */
    if (ret == CLI_OK && (rc = stria_rmdir(fs, path)) < 0 && !(rc == -ENOENT && o->force)) {
        cli_error("rm", path, rc);
        ret = CLI_FAIL;
    }
    return ret;
}

static int rm_arg(stria_fs_t *fs, const char *path, const struct rm_opts *o)
{
    struct stat st;
    int rc = stria_lstat(fs, path, &st);
    if (rc == -ENOENT && o->force)
        return CLI_OK;
    if (rc < 0) {
        cli_error("rm", path, rc);
        return CLI_FAIL;
    }
    if (!S_ISDIR(st.st_mode))
        return rm_child(fs, path, DT_REG, o);
    if (strcmp(path, "/") == 0) {
        fprintf(stderr, "stria rm: refusing to remove the root directory /\n");
        return CLI_FAIL;
    }
    if (!o->recursive) {
        fprintf(stderr, "stria rm: %s: %s (rm -r removes it and everything in it)\n", path,
                strerror(EISDIR));
        return CLI_FAIL;
    }
    return rm_tree(fs, path, o);
}

int cmd_rm(int argc, char **argv)
{
    struct rm_opts o = {0};
    int c, ret = CLI_OK;
    stria_fs_t *fs;

    while ((c = cli_getopt(argc, argv, "rRf")) != -1) {
        switch (c) {
        case 'r':
        case 'R':
            o.recursive = 1;
            break;
        case 'f':
            o.force = 1;
            break;
        default:
            return cli_usage_error(argv[0], NULL);
        }
    }
    if (optind == argc)
        return o.force ? CLI_OK : cli_usage_error(argv[0], "missing PATH");
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    for (int i = optind; i < argc; i++) {
        char path[CLI_PATH_MAX];
        if (cli_stria_path(argv[0], argv[i], path, sizeof(path)) < 0)
            ret = CLI_FAIL;
        else
            ret |= rm_arg(fs, path, &o);
    }
    stria_disconnect(fs);
    return ret;
}

/* ---- mv ---- */

int cmd_mv(int argc, char **argv)
{
    char src[CLI_PATH_MAX], dst[CLI_PATH_MAX], into[CLI_PATH_MAX], name[256];
    struct stat st;
    stria_fs_t *fs;

    if (cli_getopt(argc, argv, "") != -1)
        return cli_usage_error(argv[0], NULL);
    if (argc - optind != 2)
        return cli_usage_error(argv[0], "expected SRC and DST");
    if (cli_stria_path(argv[0], argv[optind], src, sizeof(src)) < 0 ||
        cli_stria_path(argv[0], argv[optind + 1], dst, sizeof(dst)) < 0)
        return CLI_USAGE;
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    /* Like mv(1): an existing directory as DST means "into it". */
    const char *to = dst;
    if (stria_stat(fs, dst, &st) == 0 && S_ISDIR(st.st_mode) &&
        cli_path_join(dst, base_name(src, name, sizeof(name)), into, sizeof(into)) == 0)
        to = into;
    int rc = stria_rename(fs, src, to, 0);
    if (rc < 0)
        fprintf(stderr, "stria mv: %s -> %s: %s\n", src, to, strerror(-rc));
    stria_disconnect(fs);
    return rc < 0 ? CLI_FAIL : CLI_OK;
}

/* ---- cp ---- */

#define CP_CHUNK (8u << 20)

/* One side of a copy: a local file or a cluster file. */
struct cp_end {
    int is_stria;
    char path[CLI_PATH_MAX];
    int fd;
    stria_file_t *f;
};

struct cp_opts {
    int verbose, set_layout;
    int32_t count;
    uint32_t size;
};

static const char *end_prefix(const struct cp_end *e)
{
    return e->is_stria ? "stria:" : "";
}

static void end_error(const char *what, const struct cp_end *e, int rc)
{
    fprintf(stderr, "stria cp: %s%s%s: %s\n", what, end_prefix(e), e->path, strerror(-rc));
}

static ssize_t end_pread(struct cp_end *e, void *buf, size_t len, off_t off)
{
    if (e->is_stria)
        return stria_pread(e->f, buf, len, off);
    ssize_t n;
    while ((n = pread(e->fd, buf, len, off)) < 0 && errno == EINTR)
        ;
    return n < 0 ? -errno : n;
}

static int end_pwrite_full(struct cp_end *e, const char *buf, size_t len, off_t off)
{
    while (len > 0) {
        ssize_t n;
        if (e->is_stria) {
            n = stria_pwrite(e->f, buf, len, off);
        } else if ((n = pwrite(e->fd, buf, len, off)) < 0) {
            if (errno == EINTR)
                continue;
            n = -errno;
        }
        if (n < 0)
            return (int)n;
        if (n == 0)
            return -EIO;
        buf += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

static int end_fstat(struct cp_end *e, struct stat *st)
{
    if (e->is_stria)
        return stria_fstat(e->f, st);
    return fstat(e->fd, st) < 0 ? -errno : 0;
}

static int end_stat(stria_fs_t *fs, const struct cp_end *e, struct stat *st)
{
    if (e->is_stria)
        return stria_stat(fs, e->path, st);
    return stat(e->path, st) < 0 ? -errno : 0;
}

static int end_open(stria_fs_t *fs, struct cp_end *e, int flags)
{
    mode_t mode = 0666 & ~current_umask();
    if (e->is_stria)
        return stria_open(fs, e->path, flags, mode, &e->f);
    e->fd = open(e->path, flags | O_CLOEXEC, mode);
    return e->fd < 0 ? -errno : 0;
}

/* Close, and for the destination fsync first; returns the first error. */
static int end_close(struct cp_end *e, int sync)
{
    int rc = 0;
    if (e->is_stria && e->f) {
        rc = sync ? stria_fsync(e->f) : 0;
        int rc2 = stria_close(e->f);
        rc = rc ? rc : rc2;
        e->f = NULL;
    } else if (!e->is_stria && e->fd >= 0) {
        if (sync && fsync(e->fd) < 0)
            rc = -errno;
        if (close(e->fd) < 0 && rc == 0)
            rc = -errno;
        e->fd = -1;
    }
    return rc;
}

static int cp_parse(int argc, char **argv, struct cp_opts *o, struct cp_end *src,
                    struct cp_end *dst)
{
    int c, rc;
    while ((c = cli_getopt(argc, argv, "vc:S:")) != -1) {
        switch (c) {
        case 'v':
            o->verbose = 1;
            break;
        case 'c':
            if ((rc = cli_parse_stripe_count(argv[0], optarg, &o->count)) != 0)
                return rc;
            o->set_layout = 1;
            break;
        case 'S':
            if ((rc = cli_parse_stripe_size(argv[0], optarg, &o->size)) != 0)
                return rc;
            o->set_layout = 1;
            break;
        default:
            return cli_usage_error(argv[0], NULL);
        }
    }
    if (argc - optind != 2)
        return cli_usage_error(argv[0], "expected SRC and DST");
    if (cli_path(argv[optind], src->path, sizeof(src->path), &src->is_stria) < 0 ||
        cli_path(argv[optind + 1], dst->path, sizeof(dst->path), &dst->is_stria) < 0)
        return cli_usage_error(argv[0], "path too long");
    if (!src->is_stria && !dst->is_stria)
        return cli_usage_error(argv[0], "both paths are local; write the cluster side as "
                                        "stria:/PATH or as a path inside a stria mount "
                                        "(use cp(1) for local copies)");
    if (o->set_layout && !dst->is_stria)
        return cli_usage_error(argv[0], "-c and -S apply only to a cluster destination");
    return CLI_OK;
}

static int cp_open_src(stria_fs_t *fs, struct cp_end *src, struct stat *st)
{
    int rc = end_open(fs, src, O_RDONLY);
    if (rc == 0)
        rc = end_fstat(src, st);
    if (rc == 0 && !S_ISREG(st->st_mode))
        rc = S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
    if (rc < 0) {
        end_error("", src, rc);
        return CLI_FAIL;
    }
    if (!src->is_stria)
        posix_fadvise(src->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return CLI_OK;
}

/* If DST is a directory, copy into it under the source's name; refuse to
 * copy a file onto itself, which O_TRUNC would destroy. */
static int cp_resolve_dst(stria_fs_t *fs, struct cp_end *dst, const struct cp_end *src,
                          const struct stat *src_st)
{
    char name[256], dir[CLI_PATH_MAX];
    struct stat st;
    int rc = end_stat(fs, dst, &st);
    if (rc == 0 && S_ISDIR(st.st_mode)) {
        snprintf(dir, sizeof(dir), "%s", dst->path);
        rc = cli_path_join(dir, base_name(src->path, name, sizeof(name)), dst->path,
                           sizeof(dst->path));
        if (rc < 0) {
            end_error("", dst, rc);
            return CLI_FAIL;
        }
        rc = end_stat(fs, dst, &st);
    }
    if (rc == 0 && src->is_stria && dst->is_stria && st.st_ino == src_st->st_ino) {
        fprintf(stderr, "stria cp: stria:%s and stria:%s are the same file\n", src->path,
                dst->path);
        return CLI_FAIL;
    }
    if (rc < 0 && rc != -ENOENT) {
        end_error("", dst, rc);
        return CLI_FAIL;
    }
    return CLI_OK;
}

static int cp_open_dst(stria_fs_t *fs, struct cp_end *dst, const struct cp_opts *o)
{
    char shown[CLI_PATH_MAX + 8];
    int rc;
    snprintf(shown, sizeof(shown), "%s%s", end_prefix(dst), dst->path);
    /* Creates the file with this layout, or re-lays an existing empty one. */
    if (o->set_layout && (rc = stria_setstripe(fs, dst->path, o->count, o->size, -1)) < 0) {
        cli_stripe_error("cp", shown, rc);
        if (rc == -EEXIST || rc == -ENOTEMPTY)
            fprintf(stderr, "stria cp: remove %s first to copy with a new layout\n", shown);
        return CLI_FAIL;
    }
    rc = end_open(fs, dst, O_WRONLY | O_CREAT | O_TRUNC);
    if (rc < 0) {
        cli_error("cp", shown, rc);
        return CLI_FAIL;
    }
    return CLI_OK;
}

static int cp_data(struct cp_end *src, struct cp_end *dst, uint64_t *copied)
{
    char *buf = malloc(CP_CHUNK);
    int ret = CLI_OK;
    off_t off = 0;

    if (!buf) {
        fprintf(stderr, "stria cp: %s\n", strerror(ENOMEM));
        return CLI_FAIL;
    }
    for (;;) {
        ssize_t n = end_pread(src, buf, CP_CHUNK, off);
        if (n == 0)
            break;
        if (n < 0) {
            end_error("reading ", src, (int)n);
            ret = CLI_FAIL;
            break;
        }
        int rc = end_pwrite_full(dst, buf, (size_t)n, off);
        if (rc < 0) {
            end_error("writing ", dst, rc);
            ret = CLI_FAIL;
            break;
        }
        off += n;
    }
    free(buf);
    *copied = (uint64_t)off;
    return ret;
}

static void cp_summary(const struct cp_end *src, const struct cp_end *dst, uint64_t bytes,
                       uint64_t ns)
{
    char size[32], rate[32];
    double secs = (double)ns / 1e9;
    uint64_t bps = secs > 0 ? (uint64_t)((double)bytes / secs) : 0;
    fprintf(stderr, "stria cp: %s%s -> %s%s: %" PRIu64 " bytes (%s) in %.2f s, %s/s\n",
            end_prefix(src), src->path, end_prefix(dst), dst->path, bytes,
            util_fmt_size(bytes, size, sizeof(size)), secs, util_fmt_size(bps, rate, sizeof(rate)));
}

int cmd_cp(int argc, char **argv)
{
    struct cp_opts o = {0};
    struct cp_end src = {.fd = -1}, dst = {.fd = -1};
    struct stat st;
    stria_fs_t *fs;
    uint64_t copied = 0, start = 0;

    int ret = cp_parse(argc, argv, &o, &src, &dst);
    if (ret != CLI_OK)
        return ret;
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    ret = cp_open_src(fs, &src, &st);
    if (ret == CLI_OK)
        ret = cp_resolve_dst(fs, &dst, &src, &st);
    if (ret == CLI_OK)
        ret = cp_open_dst(fs, &dst, &o);
    if (ret == CLI_OK) {
        start = util_now_mono_ns();
        ret = cp_data(&src, &dst, &copied);
    }
    int rc = end_close(&dst, ret == CLI_OK);
    if (rc < 0 && ret == CLI_OK) {
        end_error("syncing ", &dst, rc);
        ret = CLI_FAIL;
    }
    end_close(&src, 0);
    if (ret == CLI_OK && o.verbose)
        cp_summary(&src, &dst, copied, util_now_mono_ns() - start);
    stria_disconnect(fs);
    return ret;
}
