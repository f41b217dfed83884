/*
 * Extended attributes, and the virtual attribute stria.layout (as CephFS
 * offers ceph.file.layout):
 *
 *   getfattr -n stria.layout FILE   stripe_count=4 stripe_size=4194304 osts=0,1,2,3
 *   getfattr -n stria.layout DIR    stripe_count=4 stripe_size=4194304 stripe_offset=-1
 *   setfattr -n stria.layout -v "stripe_count=4 stripe_size=4M" DIR (or an empty file)
 *   setfattr -n stria.layout -v "-E 1M -c 1 -E -1 -c -1" DIR (a composite layout;
 *   getfattr gives a composite layout back in these words)
 *
 * stria.layout is not listed by listxattr, so copying tools do not carry
 * one cluster's placement to another file system.
 *
 * stria.mount.stats, read on any path of a mount, gives that mount's own
 * counters (not listed either):
 *
 *   getfattr -n stria.mount.stats /mnt/stria
 *     unlinks_behind=N unlinks_sent=N unlinks_failed=N wb_grants=N
 *     unlinks_batched=N unlink_batches=N
 *     writes_gathered=N gathers_sent=N reads=N read_bytes=N direct_writes=N
 *     dom_behind=N dom_behind_landed=N dom_behind_lost=N
 *     creates_behind=N creates_failed=N creates_differed=N
 *     lookup_bytes=N lookup_bytes_used=N
 */
#include "fuse_ops.h"

#include "../common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAYOUT_XATTR "stria.layout"
#define STATS_XATTR  "stria.mount.stats"
/* File capabilities are not supported: the kernel asks for this before
 * writes, and the answer needs no round trip. */
#define CAPS_XATTR "security.capability"

static int format_layout(uint64_t ino, char *buf, size_t len)
{
    struct stria_layout *l = malloc(sizeof(*l));
    if (!l)
        return -ENOMEM;
    int rc = stria_getstripe_ino(sf.fs, ino, l), n = 0;
    if (rc == 0 && (l->ncomp > 1 || (l->is_dir && l->ncomp))) {
        /* A composite layout, in the words setfattr takes back. */
        n = stria_comps_format(l, buf, len);
        if (n < 0)
            rc = n;
    } else if (rc == 0 && l->is_dir) {
        n = snprintf(buf, len, "stripe_count=%d stripe_size=%u stripe_offset=%d",
                     l->dir_stripe_count, l->dir_stripe_size, l->dir_stripe_offset);
    } else if (rc == 0) {
        n = snprintf(buf, len, "stripe_count=%u stripe_size=%u osts=", l->comp[0].stripe_count,
                     l->comp[0].stripe_size);
        for (uint32_t i = 0; i < l->comp[0].stripe_count && n < (int)len; i++)
            n += snprintf(buf + n, len - (size_t)n, "%s%u", i ? "," : "", l->comp[0].ost[i]);
    }
    free(l);
    return rc ? rc : MIN(n, (int)len - 1);
}

/* "stripe_count=N stripe_size=S[KMG] stripe_offset=O", any subset, any order. */
static int parse_layout(const char *value, size_t size, int32_t *count, uint32_t *ssize,
                        int32_t *offset)
{
    char buf[256];
    if (size >= sizeof(buf))
        return -EINVAL;
    memcpy(buf, value, size);
    buf[size] = '\0';
    *count = 0, *ssize = 0, *offset = -1;
    char *save = NULL;
    for (char *tok = strtok_r(buf, " \t\n,", &save); tok; tok = strtok_r(NULL, " \t\n,", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return -EINVAL;
        *eq = '\0';
        const char *v = eq + 1;
        int64_t i;
        uint64_t z;
        if (!strcmp(tok, "stripe_count") && util_parse_i64(v, &i) == 0 && i >= -1 && i <= 256)
            *count = (int32_t)i;
        else if (!strcmp(tok, "stripe_size") && util_parse_size(v, &z) == 0 && z < (1ull << 32))
            *ssize = (uint32_t)z;
        else if (!strcmp(tok, "stripe_offset") && util_parse_i64(v, &i) == 0 && i >= -1 &&
                 i < 65536)
            *offset = (int32_t)i;
        else
            return -EINVAL;
    }
    return 0;
}

/* "-E 1M -c 1 -E -1 -c -1": a composite layout, as setstripe -E takes. */
static int set_comps(fuse_ino_t ino, const char *value, size_t size)
{
    char buf[512], *argv[64];
    int argc = 0;
    if (size >= sizeof(buf))
        return -EINVAL;
    memcpy(buf, value, size);
    buf[size] = '\0';
    char *save = NULL;
    for (char *tok = strtok_r(buf, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
        if (argc == (int)(sizeof(argv) / sizeof(argv[0])))
            return -EINVAL;
        argv[argc++] = tok;
    }
    struct stria_comp_spec comps[STRIA_MAX_COMPONENTS];
    unsigned n;
    if (stria_comps_parse(argc, argv, comps, STRIA_MAX_COMPONENTS, &n, NULL, 0))
        return -EINVAL;
    return stria_setstripe_comps_ino(sf.fs, ino, n, comps);
}

static void sf_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                        size_t size, int flags)
{
    sf_cred(req);
    if (!strcmp(name, CAPS_XATTR)) {
        fuse_reply_err(req, EOPNOTSUPP);
        return;
    }
    if (!strcmp(name, LAYOUT_XATTR)) {
        int rc = size > 1 && value[0] == '-' ? set_comps(ino, value, size) : 0;
        if (size <= 1 || value[0] != '-') {
            int32_t count, offset;
            uint32_t ssize;
            rc = parse_layout(value, size, &count, &ssize, &offset);
            if (rc == 0)
                rc = stria_setstripe_ino(sf.fs, ino, count, ssize, offset);
        }
        sf_reply_err(req, rc);
        return;
    }
    sf_reply_err(req, stria_setxattr_ino(sf.fs, ino, name, value, size, flags));
}

static void sf_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    char small[4096];
    char *buf = small;
    ssize_t n;
    if (!strcmp(name, CAPS_XATTR)) {
        fuse_reply_err(req, ENODATA);
        return;
    }
    sf_cred(req);
    if (!strcmp(name, LAYOUT_XATTR)) {
        n = format_layout(ino, small, sizeof(small));
    } else if (!strcmp(name, STATS_XATTR)) {
        struct stria_unlink_stats w;
        struct stria_io_stats io;
        uint64_t reads, rbytes, behind, landed, lost, made, mk_failed, mk_differed, lb, lb_used;
        stria_unlink_behind_stats(sf.fs, &w);
        stria_io_stats(sf.fs, &io);
        stria_dom_behind_stats(sf.fs, &behind, &landed, &lost);
        stria_create_behind_stats(sf.fs, &made, &mk_failed, &mk_differed);
        sf_read_stats(&reads, &rbytes);
        stria_lookup_bytes_stats(sf.fs, &lb, &lb_used);
        n = snprintf(small, sizeof(small),
                     "unlinks_behind=%llu unlinks_sent=%llu unlinks_failed=%llu wb_grants=%llu "
                     "unlinks_batched=%llu unlink_batches=%llu writes_gathered=%llu "
                     "gathers_sent=%llu reads=%llu read_bytes=%llu "
                     "direct_writes=%llu dom_behind=%llu dom_behind_landed=%llu "
                     "dom_behind_lost=%llu creates_behind=%llu creates_failed=%llu "
                     "creates_differed=%llu lookup_bytes=%llu lookup_bytes_used=%llu",
                     (unsigned long long)w.queued, (unsigned long long)w.sent,
                     (unsigned long long)w.failed, (unsigned long long)w.grants,
                     (unsigned long long)w.batched, (unsigned long long)w.batches,
                     (unsigned long long)io.writes_gathered, (unsigned long long)io.gathers_sent,
                     (unsigned long long)reads, (unsigned long long)rbytes,
                     (unsigned long long)sf_direct_writes(), (unsigned long long)behind,
                     (unsigned long long)landed, (unsigned long long)lost, (unsigned long long)made,
                     (unsigned long long)mk_failed, (unsigned long long)mk_differed,
                     (unsigned long long)lb, (unsigned long long)lb_used);
    } else {
        if (size > sizeof(small) && !(buf = malloc(size))) {
            fuse_reply_err(req, ENOMEM);
            return;
        }
        n = stria_getxattr_ino(sf.fs, ino, name, buf, size);
    }
    if (n < 0)
        sf_reply_err(req, (int)n);
    else if (size == 0)
        fuse_reply_xattr(req, (size_t)n);
    else if ((size_t)n > size)
        fuse_reply_err(req, ERANGE);
    else
        fuse_reply_buf(req, buf, (size_t)n);
    if (buf != small)
        free(buf);
}

static void sf_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    char *buf = size ? malloc(size) : NULL;
    if (size && !buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    sf_cred(req);
    ssize_t n = stria_listxattr_ino(sf.fs, ino, buf, size);
    if (n < 0)
        sf_reply_err(req, (int)n);
    else if (size == 0)
        fuse_reply_xattr(req, (size_t)n);
    else
        fuse_reply_buf(req, buf, (size_t)n);
    free(buf);
}

static void sf_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
    sf_cred(req);
    if (!strcmp(name, LAYOUT_XATTR)) {
        fuse_reply_err(req, EPERM); /* a layout can be changed, not removed */
        return;
    }
    sf_reply_err(req, stria_removexattr_ino(sf.fs, ino, name));
}

void sf_ops_xattr(struct fuse_lowlevel_ops *ops)
{
    ops->setxattr = sf_setxattr;
    ops->getxattr = sf_getxattr;
    ops->listxattr = sf_listxattr;
    ops->removexattr = sf_removexattr;
}
