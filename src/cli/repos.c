/*
 * The repository a command names (repos.h).
 */
#include "repos.h"
#include "args.h"
#include "paths.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int repo_find(stria_fs_t *fs, const char *cmd, const char *arg, struct stria_repo **v,
              struct stria_repo **out)
{
    char path[CLI_PATH_MAX];
    size_t n;
    *v = NULL;
    if (cli_stria_path(cmd, arg, path, sizeof(path)) < 0)
        return CLI_FAIL;
    int rc = stria_repo_load(fs, v, &n);
    if (rc) {
        cli_error(cmd, arg, rc);
        return CLI_FAIL;
    }
    for (size_t i = 0; i < n; i++)
        if (!strcmp((*v)[i].path, path)) {
            *out = &(*v)[i];
            return CLI_OK;
        }
    fprintf(stderr, "stria %s: %s: no repository is linked there (see stria repo list)\n", cmd,
            arg);
    return CLI_FAIL;
}
