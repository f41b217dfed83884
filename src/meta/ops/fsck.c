/*
 * Consistency check of one MDT (fsck.h).
 *
 * Two scans in one transaction. The entry scan counts, per inode, the
 * entries naming it (and, per directory, its subdirectories and the
 * directory last seen holding it) in an open-addressing table, and notes
 * dangling entries. The inode scan compares each inode with its counts.
 * Repairs are collected during the scans and applied after them: LMDB
 * cursors must not see the database change under them.
 */
#include "fsck.h"
#include "../../proto/layout.h"
#include "../../proto/xrefs.h"
#include "../store/dom_rec.h"
#include "../store/mig_rec.h"
#include "core.h"

#include "../../common/log.h"
#include "../../common/util.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LOST_FOUND "lost+found"
#define MAX_FIXES  (1u << 20) /* repairs one run applies; run again for more */

struct count {
    uint64_t ino; /* 0: free slot */
    uint64_t refs, subdirs, holder;
};

struct fix {
    enum {
        FIX_DROP_ENTRY,
        FIX_NLINK,
        FIX_PARENT,
        FIX_ADOPT,
        FIX_XDROP,
        FIX_DOM_DROP,
        FIX_MIG_DROP
    } kind;
    uint64_t ino, parent, value;
    char name[PROTO_MAX_NAME + 1];
};

struct fsck {
    struct meta_fsck_report *r;
    uint32_t mdt;
    struct util_table counts; /* of struct count */
    struct fix *fixes;
    size_t nfix, capfix;
    bool repair;
    uint32_t mig_stale_ms; /* the report's, or the default */
    int err;               /* out of memory while collecting */
};

static void say(struct fsck *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct fsck *f, const char *fmt, ...)
{
    struct meta_fsck_report *r = f->r;
    if (!r->text || r->text_len + 1 >= r->text_cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->text + r->text_len, r->text_cap - r->text_len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= r->text_cap - r->text_len) {
        r->text[r->text_len] = '\0'; /* a cut line is dropped whole */
        r->text_cap = r->text_len;   /* and nothing more is written */
        return;
    }
    r->text_len += (size_t)n;
}

/* ---- the count table ---- */

static struct count *count_of(struct fsck *f, uint64_t ino, bool create)
{
    struct count *c = util_table_find(&f->counts, sizeof(*c), ino, create);
    if (!c && create)
        f->err = -ENOMEM;
    return c;
}

static void add_fix(struct fsck *f, const struct fix *x)
{
    if (!f->repair || f->nfix >= MAX_FIXES)
        return;
    if (f->nfix == f->capfix) {
        size_t cap = f->capfix ? f->capfix * 2 : 64;
        struct fix *v = realloc(f->fixes, cap * sizeof(*v));
        if (!v) {
            f->err = -ENOMEM;
            return;
        }
        f->fixes = v;
        f->capfix = cap;
    }
    f->fixes[f->nfix++] = *x;
}

/* ---- the scans ---- */

/* What the entry scan reads with: entries come sorted by directory, so
 * each directory is looked up once. */
struct scan {
    struct fsck *f;
    struct meta_txn *t;
    struct meta_inode *in; /* a buffer for the inode an entry names */
    uint64_t last_parent;
    bool last_parent_ok;
};

/* A cross-MDT reference for the client's check (xrefs.h). */
static void add_ref(struct fsck *f, const struct xref *x)
{
    struct meta_fsck_report *r = f->r;
    if (!r->refs || r->refs_full)
        return;
    struct proto_enc e;
    proto_enc_init(&e, r->refs + r->refs_len, r->refs_cap - r->refs_len);
    xref_put(&e, x);
    if (e.err)
        r->refs_full = true;
    else
        r->refs_len += e.len;
}

static int on_entry(void *arg, uint64_t parent, const char *name, uint64_t ino, uint8_t type)
{
    struct scan *sc = arg;
    struct fsck *f = sc->f;
    f->r->entries++;
    if (proto_ino_mdt(ino) != f->mdt) {
        struct xref x = {.kind = XREF_NAME,
                         .parent = parent,
                         .ino = ino,
                         .type = type,
                         .name = proto_str_c(name)};
        add_ref(f, &x);
    }
    if (parent != sc->last_parent) {
        sc->last_parent = parent;
        sc->last_parent_ok = meta_inode_get(sc->t, parent, sc->in) == 0 && S_ISDIR(sc->in->mode);
    }
    bool parent_ok = sc->last_parent_ok;
    bool local = proto_ino_mdt(ino) == f->mdt;
    int irc = local ? meta_inode_get(sc->t, ino, sc->in) : 0;
    if (!parent_ok || (local && irc == -ENOENT)) {
        f->r->dangling++;
        say(f, "dangling entry '%s' in %" PRIx64 ": %s %" PRIx64 "\n", name, parent,
            parent_ok ? "names missing inode" : "its directory is missing; names", ino);
        struct fix x = {.kind = FIX_DROP_ENTRY, .parent = parent};
        snprintf(x.name, sizeof(x.name), "%s", name);
        add_fix(f, &x);
        return 0;
    }
    struct count *c = count_of(f, ino, true);
    if (c) {
        c->refs++;
        c->holder = parent;
    }
    if (type == DT_DIR) {
        struct count *p = count_of(f, parent, true);
        if (p)
            p->subdirs++;
    }
    return f->err;
}

static int on_inode(void *arg, uint64_t ino, const struct meta_inode *in)
{
    struct scan *sc = arg;
    struct fsck *f = sc->f;
    f->r->inodes++;
    if (!in) {
        f->r->corrupt++;
        say(f, "inode %" PRIx64 ": record cannot be decoded (left as it is)\n", ino);
        return 0;
    }
    struct count *c = count_of(f, ino, false);
    uint64_t refs = c ? c->refs : 0, subdirs = c ? c->subdirs : 0;
    /* A directory's entry may live on another MDT: a shard's always does,
     * and so may that of a directory under a striped or remote parent. */
    bool dir = S_ISDIR(in->mode), root = ino == PROTO_ROOT_INO;
    bool named_far = dir && !root && (in->flags & META_F_SHARD);
    if (dir && !root && !named_far) {
        named_far = proto_ino_mdt(in->parent) != f->mdt;
        if (!named_far && meta_inode_get(sc->t, in->parent, sc->in) == 0)
            named_far = sc->in->dstripe != 0;
    }
    /* What other MDTs may name, for the client to join (xrefs.h). */
    if (!root && (named_far || (in->flags & META_F_REMOTE_NAMES) || (dir && in->dstripe))) {
        struct xref x = {.kind = XREF_INODE,
                         .ino = ino,
                         .nlink = in->nlink,
                         .type = (uint8_t)IFTODT(in->mode),
                         .local_refs = (uint32_t)refs,
                         .shard = (in->flags & META_F_SHARD) != 0};
        add_ref(f, &x);
    }
    if (root)
        refs = 1; /* named by the file system itself */
    if (refs == 0 && named_far) {
        refs = 1; /* checked across MDTs */
        c = count_of(f, ino, true);
        if (c)
            c->holder = in->parent;
    }
    if (f->err)
        return f->err;
    if (!S_ISDIR(in->mode) && (in->flags & META_F_REMOTE_NAMES))
        return 0; /* names on other MDTs too: not countable here (yet) */
    if (refs == 0 && (in->flags & META_F_SUPERSEDED))
        return f->err; /* nameless on purpose, for its readers, until HSM_REAP */
    if (refs == 0) {
        f->r->orphans++;
        say(f, "orphan inode %" PRIx64 " (mode %o, %" PRIu64 " bytes): no entry names it\n", ino,
            in->mode, in->size);
        struct fix x = {.kind = FIX_ADOPT, .ino = ino};
        add_fix(f, &x);
        return f->err;
    }
    if (S_ISDIR(in->mode)) {
        uint64_t want = 2 + subdirs;
        if (in->nlink != want) {
            f->r->bad_nlink++;
            say(f, "directory %" PRIx64 ": link count %u, want %" PRIu64 "\n", ino, in->nlink,
                want);
            add_fix(f, &(struct fix){.kind = FIX_NLINK, .ino = ino, .value = want});
        }
        uint64_t holder = ino == PROTO_ROOT_INO ? PROTO_ROOT_INO : c->holder;
        if (refs > 1 && ino != PROTO_ROOT_INO) {
            f->r->bad_parent++;
            say(f, "directory %" PRIx64 ": named by %" PRIu64 " entries (left as it is)\n", ino,
                refs);
        } else if (in->parent != holder && ino != PROTO_ROOT_INO) {
            f->r->bad_parent++;
            say(f, "directory %" PRIx64 ": parent %" PRIx64 ", but %" PRIx64 " holds it\n", ino,
                in->parent, holder);
            add_fix(f, &(struct fix){.kind = FIX_PARENT, .ino = ino, .value = holder});
        }
    } else if (in->nlink != refs) {
        f->r->bad_nlink++;
        say(f, "inode %" PRIx64 ": link count %u, but %" PRIu64 " entries name it\n", ino,
            in->nlink, refs);
        add_fix(f, &(struct fix){.kind = FIX_NLINK, .ino = ino, .value = refs});
    }
    return f->err;
}

/* ino is being migrated into a layout with a Data-on-MDT component: its
 * record holds the copy's bytes. */
static bool copied_into(struct meta_txn *t, uint64_t ino)
{
    struct meta_mig *m = malloc(sizeof(*m));
    bool yes = m && meta_mig_get(t, ino, m) == 0 && m->state == MIGRATE_COPYING &&
               layout_dom_size(&m->layout);
    free(m);
    return yes;
}

/* A Data-on-MDT record (dom_rec.h) nothing reads any more: of an inode
 * that is gone and not pending (no client keeps the file open), or whose
 * layout has no mdt component. An orphan; the repair drops it. */
static int on_dom(void *arg, uint64_t ino, uint64_t len)
{
    struct scan *sc = arg;
    struct fsck *f = sc->f;
    const char *why = NULL;
    int rc = meta_inode_get(sc->t, ino, sc->in);
    if (rc == -ENOENT) {
        if ((rc = meta_pending_has(sc->t, ino)) < 0)
            return rc;
        why = rc ? NULL : "no such inode";
    } else if (rc == 0 && (!S_ISREG(sc->in->mode) || !layout_dom_size(&sc->in->layout))) {
        why = copied_into(sc->t, ino) ? NULL : "its layout has no mdt component";
    } else if (rc && rc != -EUCLEAN) {
        return rc; /* an inode that cannot be decoded is counted as corrupt */
    }
    if (!why)
        return 0;
    f->r->orphans++;
    say(f, "orphan Data-on-MDT record of inode %" PRIx64 " (%" PRIu64 " bytes): %s\n", ino, len,
        why);
    add_fix(f, &(struct fix){.kind = FIX_DOM_DROP, .ino = ino});
    return f->err;
}

/* A migration record (mig_rec.h): of an inode that is gone, an orphan
 * the repair drops (the objects it names are orphans of the OSTs then);
 * else listed for the client (xrefs.h), which says which are stale and,
 * with --repair, cleans up after their migrators. */
static int on_mig(void *arg, uint64_t ino, const struct meta_mig *m)
{
    struct scan *sc = arg;
    struct fsck *f = sc->f;
    int rc = meta_inode_get(sc->t, ino, sc->in);
    if (rc == -ENOENT || !m) {
        f->r->orphans++;
        say(f, "orphan migration record of inode %" PRIx64 ": %s\n", ino,
            m ? "no such inode" : "it does not decode");
        add_fix(f, &(struct fix){.kind = FIX_MIG_DROP, .ino = ino});
        return f->err;
    }
    if (rc && rc != -EUCLEAN)
        return rc;
    struct xref x = {.kind = XREF_MIGRATION,
                     .ino = ino,
                     .stale = meta_mig_stale(m, meta_now_ns(), f->mig_stale_ms)};
    add_ref(f, &x);
    return f->err;
}

/* ---- repairs ---- */

/* /lost+found, made (mode 0700, root's) if missing. */
/* The name of this MDT's lost+found in the root: "lost+found", or with a
 * number after it when the root is striped and that name lives elsewhere. */
static int lost_found_name(struct meta_txn *t, char *name, size_t len)
{
    struct meta_inode *root = malloc(sizeof(*root));
    if (!root)
        return -ENOMEM;
    int rc = meta_inode_get(t, PROTO_ROOT_INO, root);
    uint32_t mdt = meta_store_mdt(t->store);
    for (int i = 0; rc == 0; i++) {
        if (i == 0)
            snprintf(name, len, "%s", LOST_FOUND);
        else
            snprintf(name, len, "%s-%d", LOST_FOUND, i);
        if (proto_ds_name_mdt(root->dstripe, 0, name, strlen(name)) == mdt)
            break;
        if (i == 100000)
            rc = -ENOSPC;
    }
    free(root);
    return rc;
}

static int lost_found(struct meta_txn *t, uint64_t *out)
{
    uint8_t type;
    char lf[64];
    int rc = lost_found_name(t, lf, sizeof(lf));
    if (rc)
        return rc;
    rc = meta_dentry_get(t, PROTO_ROOT_INO, lf, out, &type);
    if (rc != -ENOENT)
        return rc == 0 && type != DT_DIR ? -ENOTDIR : rc;
    struct meta_inode *in = malloc(sizeof(*in)), *root = malloc(sizeof(*root));
    if (!in || !root) {
        free(in);
        free(root);
        return -ENOMEM;
    }
    meta_inode_clear(in);
    if ((rc = meta_alloc_ino(t, &in->ino)) || (rc = meta_inode_get(t, PROTO_ROOT_INO, root)))
        goto out;
    in->mode = S_IFDIR | 0700;
    in->nlink = 2;
    in->parent = PROTO_ROOT_INO;
    in->atime_ns = in->mtime_ns = in->ctime_ns = (int64_t)util_now_real_ns();
    root->nlink++;
    root->mtime_ns = root->ctime_ns = in->mtime_ns;
    if ((rc = meta_inode_put(t, in)) ||
        (rc = meta_dentry_add(t, PROTO_ROOT_INO, lf, in->ino, DT_DIR)) ||
        (rc = meta_inode_put(t, root)))
        goto out;
    *out = in->ino;
out:
    free(in);
    free(root);
    return rc;
}

static int apply(struct fsck *f, struct meta_txn *t, const struct fix *x)
{
    struct meta_inode *in = malloc(sizeof(*in));
    if (!in)
        return -ENOMEM;
    int rc = 0;
    switch (x->kind) {
    case FIX_DROP_ENTRY:
        rc = meta_dentry_del(t, x->parent, x->name);
        break;
    case FIX_NLINK:
    case FIX_PARENT:
        if ((rc = meta_inode_get(t, x->ino, in)))
            break;
        if (x->kind == FIX_NLINK)
            in->nlink = (uint32_t)x->value;
        else
            in->parent = x->value;
        rc = meta_inode_put(t, in);
        break;
    case FIX_ADOPT: {
        uint64_t lf;
        char name[32];
        if ((rc = lost_found(t, &lf)) || (rc = meta_inode_get(t, x->ino, in)))
            break;
        snprintf(name, sizeof(name), "#%" PRIx64, x->ino);
        if ((rc = meta_dentry_add(t, lf, name, x->ino, (uint8_t)IFTODT(in->mode))))
            break;
        if (S_ISDIR(in->mode)) {
            in->parent = lf;
            struct meta_inode *d = malloc(sizeof(*d));
            if (!d) {
                rc = -ENOMEM;
                break;
            }
            if ((rc = meta_inode_get(t, lf, d)) == 0) {
                d->nlink++;
                rc = meta_inode_put(t, d);
            }
            free(d);
        } else {
            in->nlink = 1;
        }
        if (rc == 0)
            rc = meta_inode_put(t, in);
        if (rc == 0) {
            char lf[64];
            lost_found_name(t, lf, sizeof(lf));
            say(f, "  linked as /%s/%s\n", lf, name);
        }
        break;
    }
    case FIX_DOM_DROP:
        if ((rc = meta_dom_del(t, x->ino)) == 0)
            say(f, "  removed the Data-on-MDT record of inode %" PRIx64 "\n", x->ino);
        break;
    case FIX_MIG_DROP:
        if ((rc = meta_mig_del(t, x->ino)) == 0)
            say(f, "  removed the migration record of inode %" PRIx64 "\n", x->ino);
        break;
    case FIX_XDROP: {
        /* A name whose inode its MDT does not have (stria fsck's check
         * across MDTs), if it still holds that inode. */
        uint64_t ino;
        uint8_t type;
        if (meta_dentry_get(t, x->parent, x->name, &ino, &type) || ino != x->ino)
            break;
        if ((rc = meta_dentry_del(t, x->parent, x->name)))
            break;
        if (type == DT_DIR && meta_inode_get(t, x->parent, in) == 0 && in->nlink > 2) {
            in->nlink--;
            rc = meta_inode_put(t, in);
        }
        if (rc == 0)
            say(f, "  removed the name '%s' in %" PRIx64 "\n", x->name, x->parent);
        break;
    }
    }
    free(in);
    return rc;
}

/* Open cross-MDT operations and names held for them: while there are any,
 * what spans MDTs may look half done (it is, until recovery ends it). */
static int on_intent(void *arg, uint64_t txid, const void *rec, size_t len)
{
    struct fsck *f = arg;
    (void)txid;
    /* Every record but another MDT's finished step. */
    if (len && *(const uint8_t *)rec != XK_APPLIED && *(const uint8_t *)rec != XK_RLOCK)
        f->r->open_ops++;
    return 0;
}

static int on_pending(void *arg, uint64_t ino)
{
    struct fsck *f = arg;
    struct xref x = {.kind = XREF_PENDING, .ino = ino};
    f->r->pending++;
    add_ref(f, &x);
    return 0;
}

static int fsck_txn(struct meta_txn *t, void *arg)
{
    struct fsck *f = arg;
    int irc = meta_intent_scan(t, on_intent, f);
    if (irc || (irc = meta_pending_scan(t, on_pending, f)))
        return irc;
    struct scan sc = {f, t, malloc(sizeof(struct meta_inode)), 0, false};
    if (!sc.in)
        return -ENOMEM;
    int rc = meta_dentry_scan(t, on_entry, &sc);
    /* The inode scan reads parents into sc.in too. */
    if (rc == 0)
        rc = meta_inode_scan(t, on_inode, &sc);
    if (rc == 0)
        rc = meta_dom_scan(t, on_dom, &sc);
    if (rc == 0)
        rc = meta_mig_scan(t, on_mig, &sc);
    free(sc.in);
    if (rc == 0)
        rc = f->err;
    for (size_t i = 0; rc == 0 && i < f->nfix; i++) {
        if ((rc = apply(f, t, &f->fixes[i])) == 0)
            f->r->fixed++;
    }
    /* Repairs the check across MDTs asked this MDT to make (xrefs.h). */
    struct proto_dec d;
    struct xfix xf;
    proto_dec_init(&d, f->r->xfixes, f->r->xfixes_len);
    while (rc == 0 && f->repair && xfix_get(&d, &xf) == 0) {
        struct fix x = {.ino = xf.ino, .parent = xf.parent, .value = xf.value};
        x.kind = xf.kind == XFIX_DROP ? FIX_XDROP : xf.kind == XFIX_ADOPT ? FIX_ADOPT : FIX_NLINK;
        if (proto_str_copy(&xf.name, x.name, sizeof(x.name)))
            continue;
        say(f, "across MDTs: %s inode %" PRIx64 "\n",
            xf.kind == XFIX_DROP    ? "dangling name of"
            : xf.kind == XFIX_ADOPT ? "orphan"
                                    : "link count of",
            xf.ino);
        if ((rc = apply(f, t, &x)) == 0)
            f->r->fixed++;
    }
    return rc;
}

int meta_fsck(struct meta_store *s, bool repair, struct meta_fsck_report *report)
{
    char *text = report->text;
    size_t cap = report->text_cap;
    uint8_t *refs = report->refs;
    size_t refs_cap = report->refs_cap;
    const uint8_t *xfixes = report->xfixes;
    size_t xfixes_len = report->xfixes_len;
    uint32_t mig_stale_ms = report->mig_stale_ms;
    memset(report, 0, sizeof(*report));
    report->mig_stale_ms = mig_stale_ms;
    report->xfixes = xfixes;
    report->xfixes_len = xfixes_len;
    report->text = text;
    report->text_cap = cap;
    report->refs = refs;
    report->refs_cap = refs_cap;
    if (text && cap)
        text[0] = '\0';
    struct fsck f = {.r = report,
                     .mdt = meta_store_mdt(s),
                     .repair = repair,
                     .mig_stale_ms = mig_stale_ms ? mig_stale_ms : META_MIG_STALE_MS_DEFAULT};
    int rc =
        repair ? meta_store_write(s, NULL, fsck_txn, &f) : meta_store_read(s, NULL, fsck_txn, &f);
    if (rc)
        report->fixed = 0; /* the transaction did not commit */
    if (repair && rc == 0 && f.nfix == MAX_FIXES)
        say(&f, "more to repair than one run does: run again\n");
    util_table_free(&f.counts);
    free(f.fixes);
    return rc;
}
