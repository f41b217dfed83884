/*
 * The path library: path arguments and the stria mounts they lie in.
 *
 * libstria has no working directory: every path starts at the cluster's
 * root. So a path argument is resolved here, lexically ("." and ".." and
 * repeated slashes), before it is handed over.
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
 * paths behave exactly as before. Nothing here talks to a cluster but
 * the walks (cli_walk_files), which read its directories through libstria
 * with one path buffer for the whole walk, so that a deep tree costs no
 * more than its open directories.
 */
#include "paths.h"

#include "args.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- paths ---- */

int cli_path_normalize(const char *in, char *out, size_t len)
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
    if (!mt && !resolved && cli_path_normalize(abs, canon, sizeof(canon)) == 0)
        mt = stria_mount_of(m, canon, &rest);
    if (!mt)
        return 0;
    snprintf(joined, sizeof(joined), "%s/%s", mt->root, rest);
    int rc = cli_path_normalize(joined, out, len);
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
        return cli_path_normalize(arg + 6, out, len);
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
        rc = cli_path_normalize(arg, out, len);
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

const char *cli_shown_name(const char *arg, const char *path)
{
    return cli_mount_conf(arg) ? arg : path;
}

const char *cli_base_name(const char *path, char *buf, size_t len)
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

/* ---- walks ---- */

struct walk {
    stria_fs_t *fs;
    const char *cmd;
    cli_walk_fn fn;
    void *arg;
    size_t errors;
    char path[CLI_PATH_MAX]; /* where the walk is */
};

static void walk_error(struct walk *w, const char *path, int rc)
{
    cli_error(w->cmd, path, rc);
    w->errors++;
}

/* The files at w->path, len bytes long, whose lstat is st. Returns 0 or
 * what fn stopped the walk with. */
static int walk_at(struct walk *w, size_t len, const struct stat *st)
{
    if (S_ISREG(st->st_mode))
        return w->fn(w->path, st, w->arg);
    if (!S_ISDIR(st->st_mode))
        return 0;
    stria_dir_t *d;
    int rc = stria_opendir(w->fs, w->path, &d);
    if (rc) {
        if (rc != -ENOENT) /* gone since its parent was listed */
            walk_error(w, w->path, rc);
        return 0;
    }
    bool slash = w->path[len - 1] != '/'; /* the root ends in one */
    struct stria_dirent e;
    int stop = 0;
    while (!stop && (rc = stria_readdir(d, &e)) == 1) {
        if (e.type != DT_REG && e.type != DT_DIR && e.type != DT_UNKNOWN)
            continue;
        size_t n = strlen(e.name), end = len + slash + n;
        if (end >= sizeof(w->path)) {
            fprintf(stderr, "stria %s: %s%s%s: %s\n", w->cmd, w->path, slash ? "/" : "", e.name,
                    strerror(ENAMETOOLONG));
            w->errors++;
            continue;
        }
        if (slash)
            w->path[len] = '/';
        memcpy(w->path + len + slash, e.name, n + 1);
        struct stat cst;
        int crc = stria_lstat(w->fs, w->path, &cst);
        if (crc == 0)
            stop = walk_at(w, end, &cst);
        else if (crc != -ENOENT)
            walk_error(w, w->path, crc);
        w->path[len] = '\0';
    }
    stria_closedir(d);
    if (!stop && rc < 0)
        walk_error(w, w->path, rc);
    return stop;
}

int cli_walk_files(stria_fs_t *fs, const char *cmd, const char *path, cli_walk_fn fn, void *arg,
                   size_t *errors)
{
    struct walk w = {.fs = fs, .cmd = cmd, .fn = fn, .arg = arg};
    size_t len = strlen(path);
    struct stat st;
    int rc = len == 0 ? -ENOENT : len >= sizeof(w.path) ? -ENAMETOOLONG : 0, stop = 0;
    if (rc == 0) {
        memcpy(w.path, path, len + 1);
        if ((rc = stria_lstat(fs, path, &st)) == 0)
            stop = walk_at(&w, len, &st);
    }
    if (rc)
        walk_error(&w, path, rc);
    if (errors)
        *errors += w.errors;
    return stop;
}
