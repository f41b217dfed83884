/*
 * stria fsck [--repair]: check every MDT's namespace (meta/fsck.h), as
 * e2fsck or Lustre's lfsck would, and with --repair fix what it found.
 *
 * Exit status: 0 when every MDT is consistent (or was fully repaired), 1
 * when a problem remains or an MDT did not answer, 2 for bad usage.
 */
#include "args.h"
#include "commands.h"
#include "connect.h"

#include "../common/util.h"
#include "../proto/xrefs.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_CAP (64u << 10)

/* ---- objects no file owns, and fences of files that are gone ---- */

/* What is known of an inode that OST objects name. */
enum { INO_OWNED = 1, INO_GONE, INO_UNKNOWN };
struct ino_state {
    uint64_t ino;
    int state;
};

static int *ino_state(struct util_table *t, uint64_t ino)
{
    struct ino_state *s = util_table_find(t, sizeof(*s), ino, true);
    return s ? &s->state : NULL;
}

/* What ost_orphans counts. */
struct orphan_count {
    uint64_t objects, orphans, removed, unknown;
    uint64_t fences, stale, forgotten; /* stale: fences of files that are gone */
    bool partial;
};

/* Whether no MDT has inode ino (and none keeps it pending): 1 or 0,
 * asking once per inode; -ENOMEM. */
static int ino_gone(stria_fs_t *fs, struct util_table *known, uint64_t ino, struct orphan_count *c)
{
    int *st = ino_state(known, ino);
    if (!st)
        return -ENOMEM;
    if (!*st) {
        struct stat sb;
        int src = stria_stat_ino(fs, ino, &sb);
        *st = src == 0 ? INO_OWNED : src == -ENOENT ? INO_GONE : INO_UNKNOWN;
    }
    c->unknown += *st == INO_UNKNOWN;
    return *st == INO_GONE;
}

/* The objects of one fan-out directory of OST ost that no file owns:
 * reported, and with repair removed. */
static int fan_objects(stria_fs_t *fs, struct util_table *known, uint32_t ost, uint32_t fan,
                       bool repair, struct orphan_count *c)
{
    struct stria_object *o;
    size_t n;
    int more;
    int rc = stria_ost_objects(fs, ost, fan, &o, &n, &more);
    if (rc)
        return rc;
    c->partial |= more != 0;
    for (size_t k = 0; k < n && rc >= 0; k++) {
        c->objects++;
        if ((rc = ino_gone(fs, known, o[k].ino, c)) <= 0)
            continue;
        if (++c->orphans <= 100)
            printf("OST%04" PRIx32 ": object %" PRIx64 ".%u.%u: no file owns it%s\n", ost, o[k].ino,
                   o[k].comp, o[k].stripe, repair ? " (removed)" : "");
        if (repair && stria_ost_destroy(fs, ost, &o[k]) == 0)
            c->removed++;
    }
    free(o);
    return rc < 0 ? rc : 0;
}

/* The fences migrations left on OST ost of files of one fan-out
 * directory that are gone (a FORGET that never came): reported, and with
 * repair dropped. */
static int fan_fences(stria_fs_t *fs, struct util_table *known, uint32_t ost, uint32_t fan,
                      bool repair, struct orphan_count *c)
{
    struct stria_object *o;
    size_t n;
    int more;
    int rc = stria_ost_fences(fs, ost, fan, &o, &n, &more);
    if (rc)
        return rc;
    c->partial |= more != 0;
    for (size_t k = 0; k < n && rc >= 0; k++) {
        c->fences++;
        if ((rc = ino_gone(fs, known, o[k].ino, c)) <= 0)
            continue;
        if (++c->stale <= 100)
            printf("OST%04" PRIx32 ": fence of %" PRIx64 ".%u.%u: its file is gone%s\n", ost,
                   o[k].ino, o[k].comp, o[k].stripe, repair ? " (dropped)" : "");
        /* All of the inode's at once; the next of them finds none left. */
        if (repair && stria_ost_forget_fences(fs, ost, o[k].ino) == 0)
            c->forgotten++;
    }
    free(o);
    return rc < 0 ? rc : 0;
}

/* Every object of every OST whose inode no MDT has (and none keeps pending
 * for a client that still has the file open), and every fence of such an
 * inode: reported, and with repair removed. Returns what remains of them,
 * or a negative errno. */
static long ost_orphans(stria_fs_t *fs, struct util_table *known, bool repair)
{
    struct stria_target *t;
    size_t nt;
    int rc = stria_targets(fs, &t, &nt);
    if (rc)
        return rc;
    struct orphan_count c = {0};
    for (size_t i = 0; i < nt; i++) {
        if (strcmp(t[i].kind, "OST") || !t[i].online)
            continue;
        for (uint32_t fan = 0; fan < 256 && !rc; fan++)
            if (!(rc = fan_objects(fs, known, t[i].index, fan, repair, &c)))
                rc = fan_fences(fs, known, t[i].index, fan, repair, &c);
        if (rc == -ENOMEM)
            break;
        if (rc) {
            fprintf(stderr, "stria fsck: OST%04" PRIx32 ": %s\n", t[i].index, strerror(-rc));
            c.partial = true;
            rc = 0;
        }
    }
    free(t);
    if (rc)
        return rc;
    printf("OSTs: %" PRIu64 " objects, %" PRIu64 " that no file owns (orphans)", c.objects,
           c.orphans);
    if (repair)
        printf("; %" PRIu64 " removed", c.removed);
    if (c.unknown)
        printf("; %" PRIu64 " whose inode could not be asked about", c.unknown);
    printf("%s\n", c.partial ? "; the listing is partial" : "");
    if (c.fences) {
        printf("OSTs: %" PRIu64 " fences of migrations, %" PRIu64 " of files that are gone",
               c.fences, c.stale);
        if (repair)
            printf("; %" PRIu64 " dropped", c.forgotten);
        printf("\n");
    }
    return (long)(c.orphans - c.removed + (c.stale - c.forgotten));
}

/* The repairs the check across MDTs asks of each MDT, encoded for FSCK. */
struct fixes {
    struct {
        uint8_t *buf;
        size_t len;
    } * v;
    size_t n;
    bool full;
};

#define FIXES_CAP (64u << 10)

static void add_fix(void *arg, uint32_t pos, const struct xfix *x)
{
    struct fixes *fx = arg;
    if (pos >= fx->n)
        return;
    if (!fx->v[pos].buf && !(fx->v[pos].buf = malloc(FIXES_CAP))) {
        fx->full = true;
        return;
    }
    struct proto_enc e;
    proto_enc_init(&e, fx->v[pos].buf + fx->v[pos].len, FIXES_CAP - fx->v[pos].len);
    xfix_put(&e, x);
    if (e.err)
        fx->full = true;
    else
        fx->v[pos].len += e.len;
}

static void say_line(void *arg, const char *line)
{
    (void)arg;
    fputs(line, stdout);
}

int cmd_fsck(int argc, char **argv)
{
    int repair = 0, c;
    static const struct option longopts[] = {{"repair", no_argument, NULL, 'r'},
                                             {NULL, 0, NULL, 0}};
    optind = 0; /* GNU getopt: start afresh */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+r", longopts, NULL)) != -1) {
        if (c != 'r')
            return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        repair = 1;
    }
    if (optind != argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    stria_fs_t *fs;
    uint32_t *mdt;
    size_t nm;
    if (cli_connect_mdts(&fs, &mdt, &nm) < 0)
        return CLI_FAIL;
    char *text = malloc(TEXT_CAP);
    int status = CLI_OK;
    struct proto_blob *lists = calloc(nm ? nm : 1, sizeof(*lists));
    size_t nlists = 0;
    bool partial = false;
    uint64_t open_ops = 0;
    struct fixes fx = {0};
    if (!text || !lists) {
        fprintf(stderr, "stria fsck: out of memory\n");
        status = CLI_FAIL;
        goto out;
    }
    for (size_t i = 0; i < nm; i++) {
        struct stria_fsck_report r;
        int rc = stria_mdt_fsck(fs, mdt[i], repair, &r, text, TEXT_CAP);
        if (rc < 0) {
            fprintf(stderr, "stria fsck: MDT%04" PRIx32 ": %s\n", mdt[i],
                    rc == -EPERM ? "only root may check or repair the namespace" : strerror(-rc));
            status = CLI_FAIL;
            continue;
        }
        uint64_t found = r.dangling + r.orphans + r.bad_nlink + r.bad_parent + r.corrupt;
        printf("MDT%04" PRIx32 ": %" PRIu64 " inodes, %" PRIu64 " entries\n", mdt[i], r.inodes,
               r.entries);
        fputs(text, stdout);
        printf("MDT%04" PRIx32 ": %" PRIu64 " dangling entries, %" PRIu64 " orphan inodes, %" PRIu64
               " wrong link counts, %" PRIu64 " wrong parents, %" PRIu64 " corrupt records",
               mdt[i], r.dangling, r.orphans, r.bad_nlink, r.bad_parent, r.corrupt);
        if (r.open_ops)
            printf("; %" PRIu64 " cross-MDT operation(s) still open", r.open_ops);
        if (repair)
            printf("; %" PRIu64 " repaired\n", r.fixed);
        else
            printf("%s\n", found ? " (run with --repair to fix)" : "");
        if (found > (repair ? r.fixed : 0))
            status = CLI_FAIL;
        /* Every MDT's list at its MDT's position, empty or not. */
        lists[i] = (struct proto_blob){r.refs, (uint32_t)r.refs_len};
        nlists = i + 1;
        partial |= r.refs_full != 0;
        open_ops += r.open_ops;
    }
    if (nm > 1 && status == CLI_OK) {
        /* What no MDT can check alone: names and inodes across MDTs. */
        struct xrefs_found x;
        fx.n = nlists;
        fx.v = calloc(nlists, sizeof(*fx.v));
        int rc =
            fx.v ? xrefs_check(lists, nlists, &x, say_line, repair ? add_fix : NULL, &fx) : -ENOMEM;
        uint64_t all = x.dangling + x.orphans + x.bad_nlink + x.named_twice;
        if (rc)
            fprintf(stderr, "stria fsck: the cross-MDT references do not decode: %s\n",
                    strerror(-rc));
        printf("across MDTs: %" PRIu64 " dangling entries, %" PRIu64 " orphan inodes, %" PRIu64
               " wrong link counts, %" PRIu64 " directories named twice%s\n",
               x.dangling, x.orphans, x.bad_nlink, x.named_twice,
               partial ? "; some MDT's list was too long, so this check is partial" : "");
        uint64_t fixed = 0;
        if (rc == 0 && all && repair && open_ops) {
            /* An operation in flight may look half done: not repaired. */
            printf("across MDTs: not repaired while %" PRIu64 " cross-MDT operation(s) are open; "
                   "run again in a moment\n",
                   open_ops);
        } else if (rc == 0 && all && repair) {
            for (size_t i = 0; i < nlists; i++) {
                if (!fx.v[i].len)
                    continue;
                struct stria_fsck_report r;
                int frc = stria_mdt_fsck_fixes(fs, mdt[i], 1, fx.v[i].buf, fx.v[i].len, &r, text,
                                               TEXT_CAP);
                if (frc < 0) {
                    fprintf(stderr, "stria fsck: MDT%04" PRIx32 ": %s\n", mdt[i], strerror(-frc));
                    continue;
                }
                fputs(text, stdout);
                fixed += r.fixed;
                free(r.refs);
            }
            printf("across MDTs: %" PRIu64 " repaired%s\n", fixed,
                   fx.full ? "; more than one run repairs: run again" : "");
        } else if (all) {
            printf("across MDTs: run with --repair to fix\n");
        }
        if (rc || all > fixed)
            status = CLI_FAIL;
    }
    /* Migrations under way, and those whose migrator died (stale): what
     * they left goes with a cleanup, which --repair makes. */
    uint64_t migrating = 0, stale = 0, cleaned = 0;
    for (size_t i = 0; i < nlists; i++) {
        struct proto_dec d;
        struct xref x;
        proto_dec_init(&d, lists[i].p, lists[i].len);
        while (xref_get(&d, &x) == 0) {
            if (x.kind != XREF_MIGRATION)
                continue;
            migrating++;
            if (!x.stale)
                continue;
            stale++;
            int mrc = repair ? stria_migrate_recover(fs, x.ino) : 0;
            cleaned += repair && mrc == 0;
            printf("inode %" PRIx64 ": a migration whose migrator died%s\n", x.ino,
                   !repair ? " (stria fsck --repair, or stria migrate of the file, cleans up)"
                   : mrc   ? ": cleanup failed"
                           : ": cleaned up");
        }
    }
    if (migrating)
        printf("migrations: %" PRIu64 " under way, %" PRIu64 " stale\n", migrating - stale, stale);
    if (stale > cleaned)
        status = CLI_FAIL;
    if (status == CLI_OK) {
        /* Objects of files removed while open stay until their client's
         * last close: the MDTs list those as pending. */
        struct util_table known = {0};
        for (size_t i = 0; i < nlists; i++) {
            struct proto_dec d;
            struct xref x;
            proto_dec_init(&d, lists[i].p, lists[i].len);
            while (xref_get(&d, &x) == 0) {
                int *st = x.kind == XREF_PENDING ? ino_state(&known, x.ino) : NULL;
                if (st)
                    *st = INO_OWNED;
            }
        }
        long left = ost_orphans(fs, &known, repair != 0);
        util_table_free(&known);
        if (left < 0)
            fprintf(stderr, "stria fsck: OSTs: %s\n", strerror((int)-left));
        if (left)
            status = CLI_FAIL;
    }
out:
    for (size_t i = 0; fx.v && i < fx.n; i++)
        free(fx.v[i].buf);
    free(fx.v);
    for (size_t i = 0; lists && i < nlists; i++)
        free((void *)lists[i].p);
    free(lists);
    free(text);
    free(mdt);
    stria_disconnect(fs);
    return status;
}

/* ---- stria scrub [--ost N] ---- */

/* Scrub one OST: every fan-out directory; bad blocks named on stdout.
 * Returns the bad blocks found, or a negative errno. */
static long scrub_ost(stria_fs_t *fs, uint32_t ost)
{
    uint64_t objects = 0, blocks = 0, bytes = 0, bad = 0;
    for (uint32_t fan = 0; fan < 256; fan++) {
        struct stria_scrub_report r;
        int rc = stria_ost_scrub(fs, ost, fan, &r);
        if (rc) {
            fprintf(stderr, "stria scrub: OST%04" PRIx32 ": %s\n", ost, strerror(-rc));
            return rc;
        }
        objects += r.objects;
        blocks += r.blocks;
        bytes += r.bytes;
        bad += r.bad_blocks;
        for (size_t i = 0; i < r.nbad; i++)
            printf("OST%04" PRIx32 ": checksum mismatch: inode %#" PRIx64 " component %" PRIu32
                   " stripe %" PRIu32 " object offset %" PRIu64 "\n",
                   ost, r.bad[i].obj.ino, r.bad[i].obj.comp, r.bad[i].obj.stripe, r.bad[i].offset);
        free(r.bad);
    }
    printf("OST%04" PRIx32 ": %" PRIu64 " objects, %" PRIu64 " bytes in %" PRIu64
           " blocks checked, %" PRIu64 " bad\n",
           ost, objects, bytes, blocks, bad);
    return (long)bad;
}

int cmd_scrub(int argc, char **argv)
{
    long only = -1;
    int c;
    static const struct option longopts[] = {{"ost", required_argument, NULL, 'o'},
                                             {NULL, 0, NULL, 0}};
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+o:", longopts, NULL)) != -1) {
        char *end;
        if (c != 'o')
            return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        errno = 0;
        only = strtol(optarg, &end, 0);
        if (errno || *end || end == optarg || only < 0 || only > 0xffff)
            return cli_usage_error(argv[0], "--ost wants an OST index, not '%s'", optarg);
    }
    if (optind != argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    stria_fs_t *fs;
    if (cli_connect(&fs) < 0)
        return CLI_FAIL;
    struct stria_target *t;
    size_t nt;
    int rc = stria_targets(fs, &t, &nt);
    if (rc) {
        fprintf(stderr, "stria scrub: cannot list the targets: %s\n", strerror(-rc));
        stria_disconnect(fs);
        return CLI_FAIL;
    }
    int status = CLI_OK;
    bool found = false;
    for (size_t i = 0; i < nt; i++) {
        if (strcmp(t[i].kind, "OST") || (only >= 0 && t[i].index != (uint32_t)only))
            continue;
        found = true;
        if (!t[i].online) {
            fprintf(stderr, "stria scrub: OST%04" PRIx32 " is offline: not checked\n", t[i].index);
            status = CLI_FAIL;
            continue;
        }
        if (scrub_ost(fs, t[i].index) != 0)
            status = CLI_FAIL;
    }
    if (!found) {
        fprintf(stderr, "stria scrub: no OST %ld in this cluster\n", only);
        status = CLI_FAIL;
    }
    free(t);
    stria_disconnect(fs);
    return status;
}
