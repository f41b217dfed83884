/*
 * stria fsck [--repair]: check every MDT's namespace (meta/fsck.h), as
 * e2fsck or Lustre's lfsck would, and with --repair fix what it found.
 *
 * Exit status: 0 when every MDT is consistent (or was fully repaired), 1
 * when a problem remains or an MDT did not answer, 2 for bad usage.
 */
#include "cli.h"

#include "../proto/xrefs.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_CAP (64u << 10)

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
        if (r.refs)
            lists[nlists++] = (struct proto_blob){r.refs, (uint32_t)r.refs_len};
        partial |= r.refs_full != 0;
    }
    if (nm > 1 && status == CLI_OK) {
        /* What no MDT can check alone: names and inodes across MDTs. */
        struct xrefs_found x;
        int rc = xrefs_check(lists, nlists, &x, say_line, NULL);
        uint64_t all = x.dangling + x.orphans + x.bad_nlink + x.named_twice;
        if (rc)
            fprintf(stderr, "stria fsck: the cross-MDT references do not decode: %s\n",
                    strerror(-rc));
        printf("across MDTs: %" PRIu64 " dangling entries, %" PRIu64 " orphan inodes, %" PRIu64
               " wrong link counts, %" PRIu64 " directories named twice%s%s\n",
               x.dangling, x.orphans, x.bad_nlink, x.named_twice,
               all ? " (reported only: --repair does not fix these yet)" : "",
               partial ? "; some MDT's list was too long, so this check is partial" : "");
        if (rc || all)
            status = CLI_FAIL;
    }
out:
    for (size_t i = 0; lists && i < nlists; i++)
        free((void *)lists[i].p);
    free(lists);
    free(text);
    free(mdt);
    stria_disconnect(fs);
    return status;
}
