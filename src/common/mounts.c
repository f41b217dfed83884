/* This process's mounts; see mounts.h. */
#include "mounts.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decode mountinfo's octal escapes ("\040" for a space) in place. */
static void mountinfo_unescape(char *s)
{
    char *w = s;
    for (; *s; s++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
            s[3] >= '0' && s[3] <= '7') {
            *w++ = (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
            s += 3;
        } else {
            *w++ = *s;
        }
    }
    *w = '\0';
}

/* Split one mountinfo line in place; false if it is not one.
 * "36 35 98:0 /root /point opts - fstype source superopts" */
static bool mountinfo_parse(char *line, struct mount_ent *m)
{
    char *save = NULL, *f[5];
    for (int i = 0; i < 5; i++)
        if (!(f[i] = strtok_r(i ? NULL : line, " ", &save)))
            return false;
    char *tok;
    while ((tok = strtok_r(NULL, " ", &save)) && strcmp(tok, "-") != 0)
        ; /* optional fields, up to the separator */
    char *fstype = tok ? strtok_r(NULL, " ", &save) : NULL;
    char *source = fstype ? strtok_r(NULL, " ", &save) : NULL;
    if (!source)
        return false;
    mountinfo_unescape(f[3]);
    mountinfo_unescape(f[4]);
    mountinfo_unescape(fstype);
    mountinfo_unescape(source);
    *m = (struct mount_ent){
        .point = f[4], .root = f[3], .fstype = fstype, .source = source, .dev = f[2]};
    return true;
}

int mount_table_read(const char *path, struct mount_table *m)
{
    int rc = 0;
    size_t cap = 0, len = 0, lines = 0;
    char buf[4096];

    *m = (struct mount_table){0};
    /* /proc files have no size: read until EOF. */
    FILE *f = fopen(path ? path : "/proc/self/mountinfo", "re");
    if (!f)
        return -errno;
    for (size_t n; (n = fread(buf, 1, sizeof(buf), f)) > 0;) {
        if (len + n + 1 > cap) {
            cap = 2 * (len + n + 1);
            char *t = realloc(m->text, cap);
            if (!t) {
                rc = -ENOMEM;
                goto out;
            }
            m->text = t;
        }
        memcpy(m->text + len, buf, n);
        len += n;
    }
    if (ferror(f)) {
        rc = -EIO;
        goto out;
    }
    if (!m->text)
        goto out;
    m->text[len] = '\0';
    for (size_t i = 0; i < len; i++)
        lines += m->text[i] == '\n';
    if (!(m->v = calloc(lines + 1, sizeof(*m->v)))) {
        rc = -ENOMEM;
        goto out;
    }
    char *save = NULL;
    for (char *l = strtok_r(m->text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        if (m->n <= lines && mountinfo_parse(l, &m->v[m->n]))
            m->n++;
out:
    fclose(f);
    if (rc < 0)
        mount_table_free(m);
    return rc;
}

void mount_table_free(struct mount_table *m)
{
    free(m->v);
    free(m->text);
    *m = (struct mount_table){0};
}

const struct mount_ent *mount_table_top(const struct mount_table *m, const char *point)
{
    const struct mount_ent *top = NULL;
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->v[i].point, point) == 0)
            top = &m->v[i];
    return top;
}
