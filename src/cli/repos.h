/*
 * The file system's data repositories as the CLI sees them (repos.c): the
 * registry MDT 0 keeps (stria_repo_call), each entry a directory and its
 * "key=value" lines, and which repository a cluster path belongs to.
 */
#ifndef STRIA_CLI_REPOS_H
#define STRIA_CLI_REPOS_H

#include "cli.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stria/stria.h>

struct repo {
    uint64_t dir;
    char conf[4097];
    size_t len;
    /* Values of conf, for convenience. */
    char path[CLI_PATH_MAX];
    char bucket[256], prefix[1025], endpoint[512], region[128];
    bool vhost;
    struct stria_s3_target t; /* points into the fields above */
};

/* Fill r's values from r->conf. Returns 0 or -EINVAL (no bucket or path). */
int repo_parse(struct repo *r);
/* Every repository (*v malloc'd, n of them). */
int repos_load(stria_fs_t *fs, struct repo **v, size_t *n);
/* The repository linked at path argument arg of command cmd: CLI_OK with
 * *out in *v (which the caller frees, also on failure), or CLI_FAIL after
 * saying why. */
int repo_find(stria_fs_t *fs, const char *cmd, const char *arg, struct repo **v, struct repo **out);
/* The repository whose path holds cluster path p (the longest), or NULL. */
const struct repo *repo_for(const struct repo *v, size_t n, const char *p);
/* Set name=value in r's conf (replacing it), then r's values again. */
int repo_set(struct repo *r, const char *name, const char *value);
/* The object key of cluster path p in r: its prefix and p's path below r. */
int repo_key(const struct repo *r, const char *p, char *key, size_t cap);

#endif
