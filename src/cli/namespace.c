/*
 * stria mkdir, setdirstripe, getdirstripe, ls, stat, rm and mv: the
 * namespace commands.
 *
 * Path arguments are resolved by the path library (paths.c) into cluster
 * paths, which go to libstria as they are. Each command carries on with
 * its next argument after a failure, reports it as "stria CMD: PATH:
 * reason" and exits 1 at the end. Output names an argument as it was
 * written when it is a path in a stria mount, else by its cluster path.
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

/* ---- shared by ls, stat and rm ---- */

struct dent {
    char *name;
    unsigned char type;
    bool has_attr; /* attr came with the listing */
    struct stria_attr attr;
};

struct dlist {
    struct dent *v;
    size_t n, cap;
};

/* attr: the entry's attributes, or NULL. */
static int dlist_add(struct dlist *l, const char *name, unsigned char type,
                     const struct stria_attr *attr)
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
    l->v[l->n++] = (struct dent){copy, type, attr != NULL, attr ? *attr : (struct stria_attr){0}};
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
        if ((rc = dlist_add(l, ent.name, ent.type, NULL)) < 0)
            break;
    stria_closedir(d);
    if (rc < 0)
        dlist_free(l);
    return rc;
}

/* Directory ino whole, with each entry's attributes as READDIR plus brings
 * them in its batches: ls -l then costs a request a batch, not one an
 * entry. An entry whose inode is on another MDT comes without them. */
static int dlist_read_plus(stria_fs_t *fs, uint64_t ino, struct dlist *l)
{
    stria_dir_t *d;
    int rc = stria_opendir_ino(fs, ino, &d);
    if (rc < 0)
        return rc;
    struct stria_direntplus *e = malloc(sizeof(*e));
    uint64_t cookie = 0;
    rc = e ? 0 : -ENOMEM;
    while (e && (rc = stria_readdir_at(d, cookie, 1, e)) > 0) {
        if ((rc = dlist_add(l, e->d.name, e->d.type, e->attr.nlink ? &e->attr : NULL)) < 0)
            break;
        cookie = e->next_cookie;
    }
    free(e);
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

/* ---- mkdir ---- */

/* mkdir -p: create each missing component; an existing directory is fine. */
static int mkdir_parents(stria_fs_t *fs, const char *path, mode_t mode)
{
    char buf[CLI_PATH_MAX];
    mode_t parent_mode = (0777 & ~cli_umask()) | S_IWUSR | S_IXUSR;
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

/* A striped mkdir failed with EIO: say which MDTs the cluster map calls
 * offline, since the directory needs every MDT it spans. Asked within
 * OFFLINE_ASK_MS, not the mounts' timeout. */
#define OFFLINE_ASK_MS 3000

static void name_offline_mdts(stria_fs_t *fs, const char *cmd)
{
    struct stria_target *t = NULL;
    size_t n = 0;
    int keep = stria_io_timeout(fs);
    if (keep > OFFLINE_ASK_MS)
        stria_set_io_timeout(fs, OFFLINE_ASK_MS);
    if (stria_targets(fs, &t, &n) == 0)
        for (size_t i = 0; i < n; i++)
            if (!strcmp(t[i].kind, "MDT") && !t[i].online)
                fprintf(stderr,
                        "stria %s: MDT%04" PRIx32
                        " is offline; a striped directory needs every MDT "
                        "it spans (stria df -i shows them)\n",
                        cmd, t[i].index);
    free(t);
    stria_set_io_timeout(fs, keep);
}

/* mkdir, and setdirstripe without -D: make directories, striped over MDTs
 * when -c says so. */
static int make_dirs(int argc, char **argv, bool striping_only)
{
    int parents = 0, c, ret = CLI_OK;
    mode_t mode = 0777 & ~cli_umask();
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
                        "stria %s: -c and -i must name MDTs that exist (stria df -i lists "
                        "them)\n",
                        argv[0]);
            if (rc == -EIO && !dflt && (count || start >= 0))
                name_offline_mdts(fs, argv[0]);
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

static int ls_entry(stria_fs_t *fs, const char *dir, const struct dent *de, const struct ls_opts *o)
{
    char joined[CLI_PATH_MAX], path[CLI_PATH_MAX];
    struct stat st;
    const char *name = de->name;

    if (!o->lng) {
        puts(name);
        return CLI_OK;
    }
    /* Normalising turns "dir/." and "dir/.." (from -a) into real paths. */
    int rc = cli_path_join(dir, name, joined, sizeof(joined));
    if (rc == 0)
        rc = cli_path_normalize(joined, path, sizeof(path));
    if (rc == 0 && de->has_attr)
        stria_attr_to_stat(&de->attr, &st);
    else if (rc == 0)
        rc = stria_lstat(fs, path, &st);
    if (rc < 0) {
        cli_error("ls", rc == -ENAMETOOLONG ? name : path, rc);
        return CLI_FAIL;
    }
    print_long(fs, path, name, &st);
    return CLI_OK;
}

/* Directory path, whose inode is ino. */
static int ls_dir(stria_fs_t *fs, const char *path, uint64_t ino, const struct ls_opts *o)
{
    struct dlist l = {0};
    int ret = CLI_OK;
    int rc = o->lng ? dlist_read_plus(fs, ino, &l) : dlist_read(fs, path, &l);
    if (rc == 0 && o->all && (rc = dlist_add(&l, ".", DT_DIR, NULL)) == 0)
        rc = dlist_add(&l, "..", DT_DIR, NULL);
    if (rc < 0) {
        cli_error("ls", path, rc);
        dlist_free(&l);
        return CLI_FAIL;
    }
    if (l.n)
        qsort(l.v, l.n, sizeof(*l.v), dent_cmp);
    for (size_t i = 0; i < l.n; i++)
        if (o->all || l.v[i].name[0] != '.')
            ret |= ls_entry(fs, path, &l.v[i], o);
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
    return ls_dir(fs, path, (uint64_t)st.st_ino, o);
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
        ret |= ls_arg(fs, path, cli_shown_name(argv[i], path), &o, argc - optind > 1, &printed);
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
    print_stat(fs, path, cli_shown_name(arg, path), &st);
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
        cli_path_join(dst, cli_base_name(src, name, sizeof(name)), into, sizeof(into)) == 0)
        to = into;
    int rc = stria_rename(fs, src, to, 0);
    if (rc < 0)
        fprintf(stderr, "stria mv: %s -> %s: %s\n", src, to, strerror(-rc));
    stria_disconnect(fs);
    return rc < 0 ? CLI_FAIL : CLI_OK;
}
