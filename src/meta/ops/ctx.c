/*
 * The context of one MDT (ctx.h): the root of a new file system made the
 * same way on every MDT of its stripe, and what a previous run left.
 */
#include "ctx.h"
#include "alloc.h"
#include "intent.h"
#include "../store/mig_rec.h"

#include "../../common/log.h"
#include "../../common/util.h"
#include "../../proto/layout.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
struct root_arg {
    struct meta_ctx *c;
    uint32_t root_mdts;
};

static int root_txn(struct meta_txn *t, void *arg)
{
    struct root_arg *a = arg;
    struct meta_inode root;
    int rc = meta_inode_get(t, PROTO_ROOT_INO, &root);
    if (rc != -ENOENT)
        return rc;
    memset(&root, 0, sizeof(root));
    root.ino = PROTO_ROOT_INO;
    root.mode = S_IFDIR | 0755;
    root.nlink = 2;
    root.atime_ns = root.mtime_ns = root.ctime_ns = meta_now_ns();
    root.parent = PROTO_ROOT_INO;
    root.dcount = a->c->default_count;
    root.dsize = a->c->default_size;
    root.doffset = -1;
    /* Every MDT of the root's stripe makes its shard the same way on its
     * first start, so a fresh file system needs no cross-MDT step. */
    if (a->root_mdts > 1) {
        struct proto_dstripe ds = {(uint16_t)a->root_mdts, 0, (uint16_t)a->root_mdts,
                                   PROTO_DS_HASH_FNV};
        root.dstripe = proto_ds_pack(ds);
    }
    if (meta_store_mdt(t->store) != 0)
        root.flags |= META_F_SHARD;
    return meta_inode_put(t, &root);
}

int meta_ctx_init(struct meta_ctx *ctx, struct meta_store *store, int32_t default_count,
                  uint32_t default_size, uint32_t root_mdts)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->store = store;
    ctx->mdt = meta_store_mdt(store);
    ctx->nmdt = root_mdts ? root_mdts : 1;
    ctx->default_count = default_count;
    ctx->default_size = default_size;
    ctx->dom_max = META_DOM_MAX_DEFAULT;
    ctx->mig_stale_ms = META_MIG_STALE_MS_DEFAULT;
    pthread_mutex_init(&ctx->alloc_lock, NULL);
    pthread_mutex_init(&ctx->xlock, NULL);
    pthread_cond_init(&ctx->xdone, NULL);
    meta_store_set_owner(store, ctx);
    ctx->rng = util_now_real_ns();
    ctx->rr_next = (uint32_t)meta_rng_next(&ctx->rng);
    int rc = meta_holds_load(ctx);
    if (rc || (ctx->mdt == 0 && (rc = meta_rlock_load(ctx))))
        return rc;
    if (ctx->mdt >= (root_mdts ? root_mdts : 1))
        return 0;
    struct root_arg a = {ctx, root_mdts};
    return meta_store_write(store, NULL, root_txn, &a);
}

void meta_ctx_destroy(struct meta_ctx *ctx)
{
    pthread_mutex_destroy(&ctx->alloc_lock);
    pthread_cond_destroy(&ctx->xdone);
    meta_ctx_free_pools(ctx);
    free(ctx->xbusy);
    ctx->xbusy = NULL;
}
