/*
 * The registry of data repositories (repos.h).
 */
#include "repos.h"
#include "args.h"
#include "paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int repo_parse(struct repo *r)
{
    char addressing[32] = "";
    r->conf[r->len] = 0;
    r->path[0] = r->bucket[0] = r->prefix[0] = r->endpoint[0] = r->region[0] = 0;
    stria_repo_value(r->conf, r->len, "path", r->path, sizeof(r->path));
    stria_repo_value(r->conf, r->len, "bucket", r->bucket, sizeof(r->bucket));
    stria_repo_value(r->conf, r->len, "prefix", r->prefix, sizeof(r->prefix));
    stria_repo_value(r->conf, r->len, "endpoint", r->endpoint, sizeof(r->endpoint));
    stria_repo_value(r->conf, r->len, "region", r->region, sizeof(r->region));
    stria_repo_value(r->conf, r->len, "addressing", addressing, sizeof(addressing));
    r->vhost = !strcmp(addressing, "virtual");
    r->t = (struct stria_s3_target){r->endpoint, r->region, r->bucket, r->vhost};
    return r->path[0] && r->bucket[0] ? 0 : -EINVAL;
}

int repos_load(stria_fs_t *fs, struct repo **v, size_t *n)
{
    size_t cap = 1 << 20, len = 0;
    uint8_t *buf = malloc(cap);
    *v = NULL;
    *n = 0;
    if (!buf)
        return -ENOMEM;
    int rc = stria_repo_call(fs, STRIA_REPO_LIST, 0, NULL, 0, buf, cap, &len);
    size_t count = 0;
    for (size_t at = 0; rc == 0 && at + 12 <= len;) {
        uint32_t l = (uint32_t)buf[at + 8] | (uint32_t)buf[at + 9] << 8 |
                     (uint32_t)buf[at + 10] << 16 | (uint32_t)buf[at + 11] << 24;
        if (l > len - at - 12 || l > 4096) {
            rc = -EBADMSG;
            break;
        }
        struct repo *nv = realloc(*v, (count + 1) * sizeof(**v));
        if (!nv) {
            rc = -ENOMEM;
            break;
        }
        *v = nv;
        struct repo *r = &nv[count];
        memset(r, 0, sizeof(*r));
        for (int i = 7; i >= 0; i--)
            r->dir = r->dir << 8 | buf[at + (size_t)i];
        memcpy(r->conf, buf + at + 12, l);
        r->len = l;
        if (repo_parse(r) == 0)
            count++;
        at += 12 + l;
    }
    free(buf);
    if (rc) {
        free(*v);
        *v = NULL;
        return rc;
    }
    *n = count;
    return 0;
}

/* Whether p is dir or below it. */
static bool below(const char *dir, const char *p)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return p[0] == '/';
    return !strncmp(dir, p, n) && (p[n] == 0 || p[n] == '/');
}

const struct repo *repo_for(const struct repo *v, size_t n, const char *p)
{
    const struct repo *best = NULL;
    for (size_t i = 0; i < n; i++)
        if (below(v[i].path, p) && (!best || strlen(v[i].path) > strlen(best->path)))
            best = &v[i];
    return best;
}

int repo_set(struct repo *r, const char *name, const char *value)
{
    char out[sizeof(r->conf)];
    size_t o = 0, nl = strlen(name);
    for (size_t at = 0; at < r->len;) {
        const char *line = r->conf + at;
        const char *end = memchr(line, '\n', r->len - at);
        size_t ll = end ? (size_t)(end - line) : r->len - at;
        at += ll + 1;
        if (ll > nl && !memcmp(line, name, nl) && line[nl] == '=')
            continue;
        if (o + ll + 1 >= sizeof(out))
            return -E2BIG;
        memcpy(out + o, line, ll);
        o += ll;
        out[o++] = '\n';
    }
    if (value) {
        int w = snprintf(out + o, sizeof(out) - o, "%s=%s\n", name, value);
        if (w < 0 || (size_t)w >= sizeof(out) - o)
            return -E2BIG;
        o += (size_t)w;
    }
    memcpy(r->conf, out, o);
    r->len = o;
    return repo_parse(r);
}

int repo_key(const struct repo *r, const char *p, char *key, size_t cap)
{
    size_t n = strlen(r->path);
    const char *rel = p + (n == 1 ? 1 : n);
    while (*rel == '/')
        rel++;
    int w = snprintf(key, cap, "%s%s", r->prefix, rel);
    return w < 0 || (size_t)w >= cap || !*rel ? -ENAMETOOLONG : 0;
}

int repo_find(stria_fs_t *fs, const char *cmd, const char *arg, struct repo **v, struct repo **out)
{
    char path[CLI_PATH_MAX];
    size_t n;
    *v = NULL;
    if (cli_stria_path(cmd, arg, path, sizeof(path)) < 0)
        return CLI_FAIL;
    int rc = repos_load(fs, v, &n);
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
