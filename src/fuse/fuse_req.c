/*
 * What every request handler of stria-fuse stands on: the mount's settings
 * (sf), the caller's identity, interrupts, error replies and the mount's
 * own counters. It calls nothing else of the mount.
 */
#include "fuse_req.h"

#include "../common/util.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

struct sfuse sf;

/* ---- per-request identity ---- */

/* Groups come from /proc (fuse_req_getgroups): cache them per thread for a
 * second, keyed by pid, uid and gid, since one process makes many calls. */
struct cred_cache {
    pid_t pid;
    uid_t uid;
    gid_t gid;
    uint64_t at_ns;
    int n;
    gid_t groups[32];
};
static __thread struct cred_cache cc;

void sf_cred(fuse_req_t req)
{
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    uint64_t now = util_now_mono_ns();
    if (ctx->pid != cc.pid || ctx->uid != cc.uid || ctx->gid != cc.gid ||
        now - cc.at_ns > 1000000000ull) {
        int n = ctx->uid == 0 ? 0 : fuse_req_getgroups(req, 32, cc.groups);
        cc.n = n < 0 ? 0 : n > 32 ? 32 : n;
        cc.pid = ctx->pid;
        cc.uid = ctx->uid;
        cc.gid = ctx->gid;
        cc.at_ns = now;
    }
    stria_set_thread_cred(ctx->uid, ctx->gid, cc.n, cc.groups);
}

/* ---- interrupts ----
 * A process blocked on the mount can be interrupted (a signal, or killed):
 * the kernel sends INTERRUPT for a request it waits on, and the request
 * stops waiting for an unreachable or silent server and fails with EINTR
 * (stria_set_thread_cancel). */
static __thread const volatile int *intr_flag;
static void on_interrupt(fuse_req_t req, void *data)
{
    (void)req;
    *(volatile int *)data = 1;
}

void sf_intr_begin(fuse_req_t req, volatile int *flag)
{
    *flag = 0;
    intr_flag = flag;
    stria_set_thread_cancel(flag);
    fuse_req_interrupt_func(req, on_interrupt, (void *)flag);
}

void sf_intr_end(fuse_req_t req)
{
    fuse_req_interrupt_func(req, NULL, NULL); /* waits for a callback running */
    stria_set_thread_cancel(NULL);
    intr_flag = NULL;
}

bool sf_cancelled(void)
{
    return intr_flag && *intr_flag;
}

void sf_reply_err(fuse_req_t req, int rc)
{
    fuse_reply_err(req, rc < 0 ? -rc : rc);
}

/* ---- counters, for stria.mount.stats ---- */

/* What the kernel asked to read: the average READ shows its read-ahead. */
static _Atomic uint64_t reads_served, read_bytes;
/* WRITEs served on write-only handles, which bypass the page cache. */
static _Atomic uint64_t direct_writes;

void sf_count_read(uint64_t bytes)
{
    atomic_fetch_add_explicit(&reads_served, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&read_bytes, bytes, memory_order_relaxed);
}

void sf_count_direct_write(void)
{
    atomic_fetch_add_explicit(&direct_writes, 1, memory_order_relaxed);
}

void sf_read_stats(uint64_t *reads, uint64_t *bytes)
{
    *reads = atomic_load_explicit(&reads_served, memory_order_relaxed);
    *bytes = atomic_load_explicit(&read_bytes, memory_order_relaxed);
}

uint64_t sf_direct_writes(void)
{
    return atomic_load_explicit(&direct_writes, memory_order_relaxed);
}
