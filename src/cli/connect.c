/*
 * The client.conf a command uses, and the connection made with it.
 *
 * Path operands inside a stria mount carry their cluster with them (the
 * mount's source in mountinfo is its client.conf), so they come right
 * after --conf; then libstria's own search (stria_conf_find). Every
 * command, the cluster commands included, asks cli_conf_path, so none
 * follows the ~/.config link when $STRIA_CONF says otherwise. Nothing
 * here may print to stdout: commands' output is for scripts.
 */
#include "connect.h"

#include "args.h"
#include "paths.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *cli_conf;

/* The running command's arguments, for cli_conf_path to find its mount. */
static int cmd_argc;
static char **cmd_argv;

void cli_connect_init(int argc, char **argv)
{
    cmd_argc = argc;
    cmd_argv = argv;
}

static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (strcmp(a, b) == 0)
        return true;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/*
 * The client.conf of the stria mount the running command's path operands
 * lie in, into *conf (NULL if none). Option parsing has permuted the
 * operands to argv[optind..]. Returns -EXDEV, having said why, when they
 * lie in mounts of different clusters.
 */
static int operands_conf(const char **conf)
{
    const char *first = NULL;
    *conf = NULL;
    for (int i = optind; i < cmd_argc; i++) {
        const char *c = cli_mount_conf(cmd_argv[i]);
        if (!c)
            continue;
        if (*conf && strcmp(c, *conf) != 0) {
            fprintf(stderr,
                    "stria %s: %s and %s are in mounts of different clusters (%s, %s); one "
                    "command works on one cluster\n",
                    cmd_argv[0], first, cmd_argv[i], *conf, c);
            return -EXDEV;
        }
        *conf = c;
        first = first ? first : cmd_argv[i];
    }
    return 0;
}

int cli_conf_path(char *buf, size_t len, enum cli_conf_src *src)
{
    const char *mconf = NULL;
    enum cli_conf_src from;
    int rc = operands_conf(&mconf);
    if (rc < 0)
        return rc;
    if (cli_conf && mconf && !same_file(cli_conf, mconf))
        fprintf(stderr,
                "stria %s: note: using --conf %s, not %s, the client.conf of the stria "
                "mount the paths are in\n",
                cmd_argv[0], cli_conf, mconf);
    if (cli_conf || mconf) {
        from = cli_conf ? CLI_CONF_OPTION : CLI_CONF_MOUNT;
        if (snprintf(buf, len, "%s", cli_conf ? cli_conf : mconf) >= (int)len)
            return -ENAMETOOLONG;
    } else {
        /* libstria's own search: $STRIA_CONF, the link, /etc. */
        const char *env = getenv("STRIA_CONF");
        char link[CLI_PATH_MAX];
        const char *home = getenv("HOME");
        snprintf(link, sizeof(link), "%s/.config/stria/client.conf", home ? home : "");
        rc = stria_conf_find(buf, len);
        from = env && *env ? CLI_CONF_ENV : strcmp(buf, link) == 0 ? CLI_CONF_LINK : CLI_CONF_ETC;
        if (rc < 0)
            return rc;
    }
    if (src)
        *src = from;
    return 0;
}

int cli_connect(stria_fs_t **fs)
{
    char path[CLI_PATH_MAX];
    enum cli_conf_src src;
    int rc = cli_conf_path(path, sizeof(path), &src);
    if (rc == -ENOENT) {
        fprintf(stderr, "stria: no client.conf found ($STRIA_CONF, ~/.config/stria/client.conf, "
                        "/etc/stria/client.conf); run `stria up` or pass --conf FILE\n");
        return rc;
    }
    if (rc < 0)
        return rc;
    rc = stria_connect(path, fs);
    if (rc == 0)
        return 0;
    /* The key named by the client.conf: unreadable, or not the cluster's. */
    char key[CLI_PATH_MAX];
    bool have_key = stria_conf_key_file(path, key, sizeof(key)) == 0;
    if (src == CLI_CONF_MOUNT)
        snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s",
                 " (the client.conf of the stria mount)");
    if (have_key && access(key, R_OK) < 0) {
        fprintf(stderr, "stria: cannot read the cluster key file %s (key_file in %s): %s\n", key,
                path, strerror(errno));
        return rc;
    }
    if (have_key && rc == -EACCES) {
        fprintf(stderr,
                "stria: the cluster key does not match: the servers refused the key in %s "
                "(key_file in %s)\n",
                key, path);
        return rc;
    }
    fprintf(stderr, "stria: cannot connect using %s: %s; run `stria up` or pass --conf FILE\n",
            path, strerror(-rc));
    return rc;
}

int cli_connect_mdts(stria_fs_t **fs, uint32_t **mdts, size_t *n)
{
    *mdts = NULL;
    *n = 0;
    int rc = cli_connect(fs);
    if (rc < 0)
        return rc;
    struct stria_target *t = NULL;
    size_t nt = 0;
    if ((rc = stria_targets(*fs, &t, &nt)) == 0 && !(*mdts = calloc(nt ? nt : 1, sizeof(**mdts))))
        rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < nt; i++)
        if (strcmp(t[i].kind, "MDT") == 0)
            (*mdts)[(*n)++] = t[i].index;
    free(t);
    if (rc < 0) {
        fprintf(stderr, "stria %s: cannot read the cluster's targets: %s\n", cmd_argv[0],
                strerror(-rc));
        stria_disconnect(*fs);
        *fs = NULL;
    }
    return rc;
}

int cli_each_path(int argc, char **argv,
                  int (*fn)(stria_fs_t *fs, const char *cmd, const char *arg, const char *path))
{
    int ret = CLI_OK;
    stria_fs_t *fs;

    if (cli_getopt(argc, argv, "") != -1)
        return cli_usage_error(argv[0], NULL);
    if (optind == argc)
        return cli_usage_error(argv[0], "missing PATH");
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    for (int i = optind; i < argc; i++) {
        char path[CLI_PATH_MAX];
        if (cli_stria_path(argv[0], argv[i], path, sizeof(path)) < 0 ||
            fn(fs, argv[0], argv[i], path) != CLI_OK)
            ret = CLI_FAIL;
    }
    stria_disconnect(fs);
    return ret;
}
