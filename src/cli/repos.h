/*
 * The file system's data repositories as the CLI finds them: libstria
 * keeps the registry's entries (struct stria_repo); this finds the one a
 * command's PATH argument names.
 */
#ifndef STRIA_CLI_REPOS_H
#define STRIA_CLI_REPOS_H

#include "cli.h"

#include <stria/stria.h>

/* The repository linked at path argument arg of command cmd: CLI_OK with
 * *out in *v (which the caller frees, also on failure), or CLI_FAIL after
 * saying why. */
int repo_find(stria_fs_t *fs, const char *cmd, const char *arg, struct stria_repo **v,
              struct stria_repo **out);

#endif
