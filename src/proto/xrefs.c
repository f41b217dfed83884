/* Cross-MDT references for fsck (xrefs.h). */
#include "xrefs.h"

#include "../common/util.h"
#include "ids.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xref_put(struct proto_enc *e, const struct xref *x)
{
    proto_put_U8(e, &x->kind);
    if (x->kind == XREF_PENDING) {
        proto_put_U64(e, &x->ino);
    } else if (x->kind == XREF_MIGRATION) {
        proto_put_U64(e, &x->ino);
        proto_put_U8(e, &x->stale);
    } else if (x->kind == XREF_NAME) {
        proto_put_U64(e, &x->parent);
        proto_put_U64(e, &x->ino);
        proto_put_U8(e, &x->type);
        proto_put_STR(e, &x->name);
    } else {
        proto_put_U64(e, &x->ino);
        proto_put_U32(e, &x->nlink);
        proto_put_U8(e, &x->type);
        proto_put_U32(e, &x->local_refs);
        proto_put_U8(e, &x->shard);
    }
}

int xref_get(struct proto_dec *d, struct xref *x)
{
    if (d->off >= d->len)
        return -1;
    memset(x, 0, sizeof(*x));
    proto_get_U8(d, &x->kind);
    if (x->kind == XREF_PENDING) {
        proto_get_U64(d, &x->ino);
    } else if (x->kind == XREF_MIGRATION) {
        proto_get_U64(d, &x->ino);
        proto_get_U8(d, &x->stale);
    } else if (x->kind == XREF_NAME) {
        proto_get_U64(d, &x->parent);
        proto_get_U64(d, &x->ino);
        proto_get_U8(d, &x->type);
        proto_get_STR(d, &x->name);
    } else if (x->kind == XREF_INODE) {
        proto_get_U64(d, &x->ino);
        proto_get_U32(d, &x->nlink);
        proto_get_U8(d, &x->type);
        proto_get_U32(d, &x->local_refs);
        proto_get_U8(d, &x->shard);
    } else {
        return -EBADMSG;
    }
    return d->err ? -EBADMSG : 0;
}

void xfix_put(struct proto_enc *e, const struct xfix *x)
{
    proto_put_U8(e, &x->kind);
    proto_put_U64(e, &x->ino);
    proto_put_U64(e, &x->parent);
    proto_put_U64(e, &x->value);
    proto_put_STR(e, &x->name);
}

int xfix_get(struct proto_dec *d, struct xfix *x)
{
    if (d->off >= d->len)
        return -1;
    proto_get_U8(d, &x->kind);
    proto_get_U64(d, &x->ino);
    proto_get_U64(d, &x->parent);
    proto_get_U64(d, &x->value);
    proto_get_STR(d, &x->name);
    if (d->err || x->kind < XFIX_DROP || x->kind > XFIX_NLINK)
        return -EBADMSG;
    return 0;
}

/* What the lists say of one inode. */
struct seen {
    uint64_t ino;
    bool listed; /* its own MDT listed it (not a shard) */
    bool shard;  /* another MDT listed a shard of it */
    uint8_t type;
    uint32_t nlink;
    uint64_t refs; /* names: local ones on its MDT, and remote ones */
    uint32_t mdt;  /* the position of the list of its own MDT */
};

int xrefs_check(const struct proto_blob *lists, size_t n, struct xrefs_found *out,
                void (*say)(void *arg, const char *line),
                void (*fix)(void *arg, uint32_t mdt, const struct xfix *x), void *arg)
{
    struct util_table t = {0};
    char line[512];
    int rc = 0;
    memset(out, 0, sizeof(*out));
    /* First the inodes, then the names that hold them. */
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        for (size_t i = 0; i < n && rc == 0; i++) {
            struct proto_dec d;
            struct xref x;
            proto_dec_init(&d, lists[i].p, lists[i].len);
            int g;
            while ((g = xref_get(&d, &x)) == 0) {
                if ((x.kind != XREF_NAME && x.kind != XREF_INODE) ||
                    (pass == 0) != (x.kind == XREF_INODE))
                    continue;
                struct seen *s = util_table_find(&t, sizeof(*s), x.ino, true);
                if (!s) {
                    rc = -ENOMEM;
                    break;
                }
                if (pass == 0 && x.shard) {
                    s->shard = true;
                } else if (pass == 0) {
                    s->listed = true;
                    s->mdt = (uint32_t)i;
                    s->type = x.type;
                    s->nlink = x.nlink;
                    s->refs += x.local_refs;
                } else if (!s->listed) {
                    out->dangling++;
                    snprintf(line, sizeof(line),
                             "dangling entry '%.*s' in %" PRIx64 ": names inode %" PRIx64
                             ", which MDT%04x does not have\n",
                             (int)x.name.len, x.name.p, x.parent, x.ino, proto_ino_mdt(x.ino));
                    say(arg, line);
                    if (fix) {
                        /* The name lives on the MDT whose list this is. */
                        struct xfix f = {XFIX_DROP, x.ino, x.parent, 0, x.name};
                        fix(arg, (uint32_t)i, &f);
                    }
                } else {
                    s->refs++;
                }
            }
            if (g == -EBADMSG && rc == 0)
                rc = -EBADMSG;
        }
    }
    for (size_t j = 0; j < t.cap && rc == 0; j++) {
        struct seen *s = util_table_at(&t, j);
        if (!s)
            continue;
        line[0] = '\0';
        if (!s->listed)
            continue; /* a shard of a directory its MDT checked alone */
        struct xfix f = {0, s->ino, 0, 0, {NULL, 0}};
        if (s->refs == 0 && s->ino != PROTO_ROOT_INO) {
            out->orphans++;
            f.kind = XFIX_ADOPT;
            snprintf(line, sizeof(line), "orphan inode %" PRIx64 ": no name on any MDT holds it\n",
                     s->ino);
        } else if (s->type == DT_DIR && s->refs > 1 && s->ino != PROTO_ROOT_INO) {
            out->named_twice++;
            snprintf(line, sizeof(line), "directory %" PRIx64 ": named by %" PRIu64 " entries\n",
                     s->ino, s->refs);
        } else if (s->type != DT_DIR && s->nlink != s->refs) {
            out->bad_nlink++;
            f.kind = XFIX_NLINK;
            f.value = s->refs;
            snprintf(line, sizeof(line),
                     "inode %" PRIx64 ": link count %u, but %" PRIu64 " names on all MDTs\n",
                     s->ino, s->nlink, s->refs);
        }
        if (line[0])
            say(arg, line);
        if (fix && f.kind)
            fix(arg, s->mdt, &f);
    }
    util_table_free(&t);
    return rc;
}
