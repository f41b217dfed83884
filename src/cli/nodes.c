/*
 * Node files (nodes.h).
 */
#include "nodes.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool host_name(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 255 || s[0] == '-')
        return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:[]") == n;
}

int nodes_read(const char *cmd, const char *path, char ***v, int *n)
{
    *v = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        int rc = -errno;
        fprintf(stderr, "stria %s: cannot read the node file %s: %s\n", cmd, path, strerror(-rc));
        return rc;
    }
    char line[512];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        char *s = line + strspn(line, " \t");
        s[strcspn(s, " \t\r\n#")] = 0;
        if (!*s)
            continue;
        if (!host_name(s)) {
            fprintf(stderr, "stria %s: %s: '%s' is not a host name\n", cmd, path, s);
            rc = -EINVAL;
            break;
        }
        bool dup = false;
        for (int i = 0; i < *n && !dup; i++)
            dup = !strcmp((*v)[i], s);
        if (dup)
            continue;
        if (*n == NODES_MAX) {
            fprintf(stderr, "stria %s: more than %d nodes in %s\n", cmd, NODES_MAX, path);
            rc = -E2BIG;
            break;
        }
        char **nv = realloc(*v, (size_t)(*n + 1) * sizeof(*nv));
        if (!nv) {
            rc = -ENOMEM;
            break;
        }
        *v = nv;
        if (!(nv[*n] = strdup(s))) {
            rc = -ENOMEM;
            break;
        }
        (*n)++;
    }
    fclose(f);
    if (rc == 0 && *n == 0) {
        fprintf(stderr, "stria %s: %s names no node\n", cmd, path);
        rc = -EINVAL;
    }
    if (rc) {
        nodes_free(*v, *n);
        *v = NULL;
        *n = 0;
    }
    return rc;
}

void nodes_free(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}
