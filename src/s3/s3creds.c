/*
 * Credentials, found where the AWS tools find them, at every call (so that
 * keys rotated on disk or in the environment are taken up without a
 * restart): $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY (with
 * $AWS_SESSION_TOKEN), else the profile $AWS_PROFILE (or "default") of
 * $AWS_SHARED_CREDENTIALS_FILE (or ~/.aws/credentials).
 *
 * The file is INI as botocore reads it: [section] lines, "name = value"
 * lines, blank lines, and comment lines starting with '#' or ';'; names
 * and values are trimmed. A secret never leaves this file except into the
 * caller's struct, and is never part of an error text.
 */
#include "s3/s3.h"
#include "s3/s3int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
        s++;
    size_t l = strlen(s);
    while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\r' || s[l - 1] == '\n'))
        s[--l] = '\0';
    return s;
}

static int set(char *dst, size_t cap, const char *v)
{
    size_t l = strlen(v);
    if (l >= cap)
        return -ENAMETOOLONG;
    memcpy(dst, v, l + 1);
    return 0;
}

/* Read profile of path into c: 0, -ENOENT (no file or no such profile),
 * -EINVAL (a value too long). */
static int read_file(const char *path, const char *profile, struct s3_creds *c)
{
    FILE *f = fopen(path, "re");
    char line[8192];
    bool in = false, found = false;
    int rc = 0;

    if (!f)
        return -ENOENT;
    while (fgets(line, sizeof(line), f)) {
        char *s = trim(line);
        if (!*s || *s == '#' || *s == ';')
            continue;
        if (*s == '[') {
            char *end = strchr(s, ']');
            if (!end)
                continue;
            *end = '\0';
            in = strcmp(trim(s + 1), profile) == 0;
            found |= in;
            continue;
        }
        if (!in)
            continue;
        char *eq = strchr(s, '=');
        if (!eq)
            continue;
        *eq = '\0';
        char *name = trim(s), *value = trim(eq + 1);
        if (strcasecmp(name, "aws_access_key_id") == 0)
            rc = set(c->access, sizeof(c->access), value);
        else if (strcasecmp(name, "aws_secret_access_key") == 0)
            rc = set(c->secret, sizeof(c->secret), value);
        else if (strcasecmp(name, "aws_session_token") == 0)
            rc = set(c->token, sizeof(c->token), value);
        if (rc < 0)
            break;
    }
    OPENSSL_cleanse(line, sizeof(line));
    fclose(f);
    if (rc < 0)
        return -EINVAL;
    return found ? 0 : -ENOENT;
}

int s3_creds_get(struct s3_creds *c, struct s3_err *err)
{
    const char *a = getenv("AWS_ACCESS_KEY_ID"), *s = getenv("AWS_SECRET_ACCESS_KEY");
    const char *tok = getenv("AWS_SESSION_TOKEN");
    char path[4096];
    int rc;

    memset(c, 0, sizeof(*c));
    if (a && a[0] && s && s[0]) {
        if (set(c->access, sizeof(c->access), a) < 0 || set(c->secret, sizeof(c->secret), s) < 0 ||
            (tok && set(c->token, sizeof(c->token), tok) < 0)) {
            s3_errf(err, "the AWS credentials in the environment are too long");
            OPENSSL_cleanse(c, sizeof(*c));
            return -EACCES;
        }
        return 0;
    }
    const char *file = getenv("AWS_SHARED_CREDENTIALS_FILE");
    const char *home = getenv("HOME");
    if (file && file[0])
        snprintf(path, sizeof(path), "%s", file);
    else if (home && home[0])
        snprintf(path, sizeof(path), "%s/.aws/credentials", home);
    else
        path[0] = '\0';
    const char *profile = getenv("AWS_PROFILE");
    if (!profile || !profile[0])
        profile = "default";
    rc = path[0] ? read_file(path, profile, c) : -ENOENT;
    if (rc == -EINVAL) {
        s3_errf(err, "profile %s of %s: a value is too long", profile, path);
        rc = -EACCES;
    } else if (rc == 0 && (!c->access[0] || !c->secret[0])) {
        s3_errf(err, "profile %s of %s has no aws_access_key_id or aws_secret_access_key", profile,
                path);
        rc = -EACCES;
    } else if (rc < 0) {
        s3_errf(err,
                "no AWS credentials: neither AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                "nor profile %s in %s",
                profile, path[0] ? path : "~/.aws/credentials");
        rc = -EACCES;
    }
    if (rc < 0)
        OPENSSL_cleanse(c, sizeof(*c));
    return rc;
}

int s3_creds_check(struct s3_err *err)
{
    struct s3_creds c;
    int rc = s3_creds_get(&c, err);
    OPENSSL_cleanse(&c, sizeof(c));
    return rc;
}
