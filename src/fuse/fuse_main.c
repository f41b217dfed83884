/*
 * stria-fuse: mount a Stria cluster.
 *
 *   stria-fuse [-f] [-d] [-o conf=FILE,attr_timeout=S,entry_timeout=S,...] MOUNTPOINT
 *
 * The cluster is reached before mounting, so a wrong conf, key or address
 * is reported to whoever ran the command; then the mount is made, the
 * process daemonizes (unless -f) and serves requests on a pool of threads
 * with 1 MiB reads and writes. Run with -f by a systemd unit of
 * Type=notify (contrib/systemd/stria-fuse@.service), it says READY=1 once
 * mounted, so units ordered after it find the file system there.
 */
#include "fuse_ops.h"
#include "fuse_reply.h"
#include "fuse_tab.h"

#include "../common/daemon.h"
#include "../common/log.h"
#include "../common/mounts.h"
#include "../common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fuse.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_IO (1u << 20)

/* ---- session ---- */

/* The read-ahead asked for, in KiB (0: the kernel's own). */
static unsigned sf_read_ahead_kb;

/* The kernel gives a FUSE mount 128 KiB of read-ahead and sends READs no
 * larger, about two at a time; a sequential read then waits on round trips
 * to the OSTs between them. The read-ahead is a setting of the mount's
 * backing device (/sys/class/bdi/MAJOR:MINOR/read_ahead_kb), which only
 * root may change. Found through /proc/self/mountinfo, not stat(): a stat
 * of the mount point would be a request to this very process, whose loop
 * has not started. Returns 0 or a negative errno. */
static int set_read_ahead(const char *mountpoint, unsigned kb)
{
    struct mount_table mt;
    int rc = mount_table_read(NULL, &mt);
    if (rc)
        return rc;
    const struct mount_ent *m = mount_table_top(&mt, mountpoint);
    char path[128];
    if (m)
        snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", m->dev);
    mount_table_free(&mt);
    if (!m)
        return -ENOENT;
    FILE *ra = fopen(path, "w");
    if (!ra)
        return -errno;
    rc = fprintf(ra, "%u\n", kb) < 0 ? -EIO : 0;
    if (fclose(ra) && !rc)
        rc = -errno;
    return rc;
}

static void sf_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    conn->max_write = MAX_IO;
    /* The kernel keeps the smaller of this and the read-ahead set_read_ahead
     * gave the mount's backing device, which may be the larger. */
    conn->max_readahead = MAX(MAX_IO, sf_read_ahead_kb * 1024u);
    conn->want |= conn->capable &
                  (FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_AUTO_INVAL_DATA | FUSE_CAP_READDIRPLUS |
                   FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_PARALLEL_DIROPS | FUSE_CAP_ASYNC_READ);
    /* Not HANDLE_KILLPRIV(_V2): the kernel clears setuid/setgid on
     * write and truncate itself (a mode SETATTR the MDT allows writers). */
    conn->want &= ~(unsigned)FUSE_CAP_HANDLE_KILLPRIV;
#ifdef FUSE_CAP_HANDLE_KILLPRIV_V2
    conn->want &= ~(unsigned)FUSE_CAP_HANDLE_KILLPRIV_V2;
#endif
    /* Writeback caching: the kernel gathers writes and keeps several WRITE
     * requests in flight; it writes dirty data back before every flush
     * (close), so close-to-open across mounts holds. */
    if (sf.writeback)
        conn->want |= conn->capable & FUSE_CAP_WRITEBACK_CACHE;
    else
        conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
    /* Not ASYNC_DIO: the kernel waits for an asynchronous O_DIRECT request
     * without letting a signal end the wait, and sends it no INTERRUPT, so
     * a direct read of a frozen OST could only end at the timeout. Each
     * direct request of at most max_read is one synchronous request. */
    conn->want &= ~(unsigned)FUSE_CAP_ASYNC_DIO;
}

/* ---- FUSE_HANDLE_KILLPRIV_V2 ----
 * Without it the kernel asks for security.capability (a GETXATTR) before
 * every write, to learn whether the write must drop file capabilities:
 * two requests per small write. With it the kernel marks an inode checked
 * (S_NOSEC) and leaves dropping setuid and setgid to the file system. The
 * libfuse of Debian 12 (3.14) cannot ask for it and passes on none of the
 * flags that come with it, so the mount reads and writes /dev/fuse through
 * fuse_session_custom_io: the INIT reply asks for it when the kernel
 * offers it, and each WRITE's FUSE_WRITE_KILL_SUIDGID is noted for the
 * worker that serves it (libfuse serves a request in the thread that read
 * it). The other two places the kernel then leaves to us need no flag: an
 * O_TRUNC open and a truncate by a caller other than root drop the bits on
 * the MDT (meta/ops.c). architecture.md, "The mount". */
/* The INIT request, until it is answered; whether it offered V2. Written
 * before any other request can come, read by every reply. */
static _Atomic uint64_t init_unique;
static _Atomic bool init_offers_v2;

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
    (void)userdata;
    ssize_t n = read(fd, buf, len);
    const struct fuse_in_header *h = buf;
    sf_write_kills_privs = false;
    if (n < (ssize_t)sizeof(*h))
        return n;
    if (h->opcode == FUSE_INIT && n >= (ssize_t)(sizeof(*h) + sizeof(struct fuse_init_in))) {
        const struct fuse_init_in *in = (const void *)(h + 1);
        atomic_store(&init_offers_v2,
                     in->major == 7 && in->minor >= 33 && (in->flags & FUSE_HANDLE_KILLPRIV_V2));
        atomic_store(&init_unique, h->unique);
    } else if (h->opcode == FUSE_WRITE &&
               n >= (ssize_t)(sizeof(*h) + sizeof(struct fuse_write_in))) {
        const struct fuse_write_in *w = (const void *)(h + 1);
        sf_write_kills_privs = (w->write_flags & FUSE_WRITE_KILL_SUIDGID) != 0;
    }
    return n;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
    (void)userdata;
    uint64_t init = atomic_load(&init_unique);
    if (init && count >= 2 && iov[0].iov_len >= sizeof(struct fuse_out_header) &&
        iov[1].iov_len >= offsetof(struct fuse_init_out, flags) + sizeof(uint32_t)) {
        const struct fuse_out_header *o = iov[0].iov_base;
        if (o->unique == init) {
            atomic_store(&init_unique, 0);
            if (o->error == 0 && atomic_load(&init_offers_v2))
                ((struct fuse_init_out *)iov[1].iov_base)->flags |= FUSE_HANDLE_KILLPRIV_V2;
        }
    }
    return writev(fd, iov, count);
}

static void sf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    (void)ino, (void)nlookup;
    fuse_reply_none(req); /* inode numbers need no table to resolve */
}

static void sf_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
    (void)count, (void)forgets;
    fuse_reply_none(req);
}

/* read_ahead_kb when not given: 1024, said quietly if refused. */
#define RA_DEFAULT INT_MIN

struct sf_opts {
    char *conf;
    char *log;
    double attr_timeout, entry_timeout;
    int writeback;
    int write_behind;
    int direct_writes;
    int mdcache;
    int wb;
    int create_behind;
    int cache_dirs;
    int killpriv;
    int read_ahead_kb;
    double timeout;
    int help;
};

#define SF_OPT(t, p)                                                                               \
    {                                                                                              \
        t, offsetof(struct sf_opts, p), 1                                                          \
    }
static const struct fuse_opt sf_opt_spec[] = {
    SF_OPT("conf=%s", conf),
    SF_OPT("log=%s", log),
    SF_OPT("attr_timeout=%lf", attr_timeout),
    SF_OPT("entry_timeout=%lf", entry_timeout),
    SF_OPT("writeback_cache=%d", writeback),
    SF_OPT("write_behind=%d", write_behind),
    SF_OPT("direct_writes=%d", direct_writes),
    SF_OPT("mdcache=%d", mdcache),
    SF_OPT("wb_unlink=%d", wb),
    SF_OPT("create_behind=%d", create_behind),
    SF_OPT("cache_dirs=%d", cache_dirs),
    SF_OPT("killpriv_v2=%d", killpriv),
    SF_OPT("read_ahead_kb=%d", read_ahead_kb),
    SF_OPT("timeout=%lf", timeout),
    SF_OPT("--help", help),
    SF_OPT("-h", help),
    FUSE_OPT_END,
};

static void usage(const char *prog)
{
    printf("Usage: %s [-f] [-d] [-o OPTIONS] MOUNTPOINT\n\n"
           "Mount a Stria cluster.\n\n"
           "Stria options (-o):\n"
           "  conf=FILE           client.conf of the cluster (default: $STRIA_CONF,\n"
           "                      ~/.config/stria/client.conf, /etc/stria/client.conf)\n"
           "  attr_timeout=SECS   how long the kernel trusts attributes (default 1.0)\n"
           "  entry_timeout=SECS  how long the kernel trusts names (default 1.0)\n"
           "  writeback_cache=0|1 let the kernel gather writes (default 0): faster writes,\n"
           "                      but the kernel then keeps its own file sizes, and size\n"
           "                      changes made through other mounts go unseen\n"
           "  write_behind=0|1    acknowledge a buffered write before it reaches the OSTs\n"
           "                      and send it meanwhile (default 1): a failure is then\n"
           "                      reported by the next write, close or fsync of the file\n"
           "  direct_writes=0|1   write-only opens write around the kernel's page cache\n"
           "                      (default 1): a large write costs a quarter less CPU;\n"
           "                      ignored with writeback_cache=1\n"
           "  mdcache=0|1         answer lookups and stats from names and attributes\n"
           "                      the MDT leased to this mount (default 1); a change\n"
           "                      anywhere revokes the lease before it is acknowledged\n"
           "  wb_unlink=0|1       with mdcache, acknowledge unlinks of files at once and\n"
           "                      send them behind, while no other client uses the MDT\n"
           "                      (default 1); one still queued is lost if this mount dies\n"
           "  create_behind=0|1   with wb_unlink and write_behind, make small files here\n"
           "                      and send each create with its bytes, while no other\n"
           "                      client uses the MDT (default 1); one not yet sent is\n"
           "                      lost if this mount dies\n"
           "  cache_dirs=0|1      with mdcache, let the kernel keep listings of\n"
           "                      directories and list them again from memory\n"
           "                      until a change anywhere changes their names\n"
           "                      (default 1)\n"
           "  killpriv_v2=0|1     let the mount, not the kernel, drop setuid and setgid on\n"
           "                      write (default 1): spares a GETXATTR per write\n"
           "  read_ahead_kb=KIB   how far the kernel reads ahead of a sequential reader,\n"
           "                      in READs of up to 1 MiB (default 1024; 0: the kernel's\n"
           "                      128); needs root, else the kernel's stays\n"
           "  timeout=SECS        how long I/O waits for an unreachable OST before it\n"
           "                      fails with EIO (default: client.conf's timeout_ms, 100)\n"
           "  log=FILE            append what the mount logs once it serves (an OST out\n"
           "                      of reach, resends) to FILE; without it a mount that\n"
           "                      goes to the background (no -f) logs nowhere\n\n"
           "Files are consistent close-to-open between mounts: data written and closed\n"
           "on one mount is seen by an open on another. Within the timeouts above a stat\n"
           "or a name on another mount may still show the older state.\n\n"
           "General options:\n"
           "  -f                  stay in the foreground\n"
           "  -d                  debug output (implies -f)\n"
           "  -o allow_other,default_permissions,ro,...   as for any FUSE file system\n"
           "\nUnmount with `fusermount3 -u MOUNTPOINT` (or `umount`, as root).\n",
           prog);
}

int main(int argc, char **argv)
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct sf_opts o = {.attr_timeout = 1.0,
                        .entry_timeout = 1.0,
                        .writeback = 0,
                        .write_behind = 1,
                        .create_behind = 1,
                        .direct_writes = 1,
                        .mdcache = 1,
                        .wb = 1,
                        .cache_dirs = 1,
                        .killpriv = 1,
                        .read_ahead_kb = RA_DEFAULT};
    struct fuse_cmdline_opts co = {0};
    struct fuse_loop_config *lc = NULL;
    int rc = 1, log_fd = -1;
    log_init("stria-fuse", LOG_WARN);
    if (fuse_opt_parse(&args, &o, sf_opt_spec, NULL) == -1)
        goto usage_error;
    if (o.help) {
        usage(argv[0]);
        rc = 0;
        goto done;
    }
    if (fuse_parse_cmdline(&args, &co) != 0)
        goto usage_error;
    if (!co.mountpoint) {
        fprintf(stderr, "stria-fuse: no mount point (try --help)\n");
        goto usage_error;
    }
    if (o.attr_timeout < 0 || o.entry_timeout < 0 || o.attr_timeout > 3600 ||
        o.entry_timeout > 3600) {
        fprintf(stderr, "stria-fuse: timeouts are seconds in 0..3600\n");
        goto usage_error;
    }
    bool ra_asked = o.read_ahead_kb != RA_DEFAULT;
    if (!ra_asked)
        o.read_ahead_kb = 1024;
    if (o.read_ahead_kb < 0 || o.read_ahead_kb > 65536) {
        fprintf(stderr, "stria-fuse: read_ahead_kb is KiB in 0..65536\n");
        goto usage_error;
    }
    sf_read_ahead_kb = (unsigned)o.read_ahead_kb;
    if (o.timeout != 0 && (o.timeout < 0.5 || o.timeout > 3600)) {
        fprintf(stderr, "stria-fuse: timeout is seconds in 0.5..3600\n");
        goto usage_error;
    }
    /* Opened now, so a bad path is the caller's error, not a silent loss. */
    if (o.log && (log_fd = open(o.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640)) < 0) {
        fprintf(stderr, "stria-fuse: log=%s: %s\n", o.log, strerror(errno));
        goto usage_error;
    }
    char found[4096];
    const char *conf = o.conf;
    if (!conf) {
        if (stria_conf_find(found, sizeof(found))) {
            fprintf(stderr, "stria-fuse: no client.conf (looked for %s); use -o conf=FILE\n",
                    found);
            goto usage_error;
        }
        conf = found;
    }
    if (!realpath(conf, sf.conf)) {
        fprintf(stderr, "stria-fuse: %s: %s\n", conf, strerror(errno));
        goto usage_error;
    }
    sf.attr_timeout = o.attr_timeout;
    sf.entry_timeout = o.entry_timeout;
    sf.writeback = o.writeback != 0;
    sf.write_behind = o.write_behind != 0;
    sf.direct_writes = o.direct_writes != 0 && !sf.writeback;
    const char *delay = getenv("STRIA_TEST_WRITE_DELAY_MS");
    sf.wb_test_delay_ms = delay ? (unsigned)strtoul(delay, NULL, 10) : 0;
    /* With default_permissions the kernel checks like a local file system
     * before asking us (e.g. a touch by a writer who is not the owner). */
    for (int i = 1; i < argc; i++)
        if (strstr(argv[i], "default_permissions"))
            sf.kernel_checks = true;
    if ((rc = stria_connect(sf.conf, &sf.fs))) {
        fprintf(stderr, "stria-fuse: cannot reach the cluster of %s: %s\n", sf.conf, strerror(-rc));
        return 1;
    }
    if (o.timeout)
        stria_set_io_timeout(sf.fs, (int)(o.timeout * 1000));
    rc = 1;
    /* The mount shows as type fuse.stria with the conf as its source, which
     * is how `stria` finds the cluster behind a path inside the mount. */
    char fsopt[4200];
    snprintf(fsopt, sizeof(fsopt), "-osubtype=stria,fsname=%s", sf.conf);
    fuse_opt_add_arg(&args, fsopt);
    struct fuse_lowlevel_ops ops = {
        .init = sf_init, .forget = sf_forget, .forget_multi = sf_forget_multi};
    sf_ops_ns(&ops);
    sf_ops_file(&ops);
    sf_ops_dir(&ops);
    sf_ops_xattr(&ops);
    tab_init();
    sf.se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
    if (!sf.se)
        goto out;
    if (fuse_set_signal_handlers(sf.se) != 0)
        goto out_session;
    if (fuse_session_mount(sf.se, co.mountpoint) != 0)
        goto out_signals;
    if (o.killpriv) {
        static const struct fuse_custom_io io = {.writev = io_writev, .read = io_read};
        if (fuse_session_custom_io(sf.se, &io, fuse_session_fd(sf.se)))
            log_warn("FUSE_HANDLE_KILLPRIV_V2 not asked for: every write costs a GETXATTR");
    }
    int ra = o.read_ahead_kb ? set_read_ahead(co.mountpoint, (unsigned)o.read_ahead_kb) : 0;
    /* Not root: unless asked for, the kernel's read-ahead is no surprise. */
    if (ra)
        log_msg(ra_asked || ra != -EACCES ? LOG_WARN : LOG_INFO,
                "read-ahead left at the kernel's default: %s", log_err(ra));
    fuse_daemonize(co.foreground);
    /* Mounted: requests queue in the kernel until the loop below takes them. */
    daemon_notify("READY=1\nSTATUS=mounted");
    /* The log goes on where the daemon's stderr (now /dev/null) went. */
    if (log_fd >= 0) {
        dup2(log_fd, STDERR_FILENO);
        close(log_fd);
        log_fd = -1;
    }
    /* After the fork: the cache's thread must live in the daemon. */
    bool mdcache = false;
    if (o.mdcache && !(mdcache = (rc = stria_start_mdcache(sf.fs)) == 0))
        log_warn("metadata cache off: %s", log_err(rc));
    /* The kernel's copies of what another client changed go before the
     * change is acknowledged; its kept listings (cache_dirs) need that. */
    if (mdcache && (rc = stria_on_lease_changed(sf.fs, sf_revoked, NULL)))
        log_warn("the kernel's cache is not told of other clients' changes: %s", log_err(rc));
    sf.cache_dirs = o.cache_dirs && mdcache && rc == 0;
    if (mdcache && o.wb && (rc = stria_start_unlink_behind(sf.fs, sf_wb_removed, NULL)))
        log_warn("write-behind unlink off: %s", log_err(rc));
    /* The objects of a file unlinked here go behind its reply, in batches. */
    if ((rc = stria_start_destroy_behind(sf.fs)))
        log_warn("objects of removed files are removed before each unlink's reply: %s",
                 log_err(rc));
    /* Without write-behind every write lands before its reply, gathered
     * ones too: libstria gathers none. */
    if (!sf.write_behind)
        stria_set_write_gather(sf.fs, 0);
    if (!o.create_behind || !sf.write_behind)
        stria_set_create_behind(sf.fs, 0);
    lc = fuse_loop_cfg_create();
    fuse_loop_cfg_set_max_threads(lc, 16);
    fuse_loop_cfg_set_idle_threads(lc, 8);
    if (co.singlethread)
        rc = fuse_session_loop(sf.se);
    else
        rc = fuse_session_loop_mt(sf.se, lc);
    /* libfuse ends the loop with the signal that stopped it: SIGTERM from
     * `systemctl stop` or kill, SIGINT, SIGHUP. That is an orderly stop
     * (the mount goes below), so exit 0, or systemd marks the unit failed. */
    if (rc == SIGTERM || rc == SIGINT || rc == SIGHUP)
        rc = 0;
    fuse_loop_cfg_destroy(lc);
    daemon_notify("STOPPING=1");
    /* The session goes before libstria: the cache's thread must stop
     * telling it of revocations first. */
    if (mdcache)
        stria_on_lease_changed(sf.fs, NULL, NULL);
    /* Files still open (stopped by a signal, no release came): what
     * libstria gathered for them goes at stria_disconnect. */
    fuse_session_unmount(sf.se);
out_signals:
    fuse_remove_signal_handlers(sf.se);
out_session:
    fuse_session_destroy(sf.se);
out:
    stria_disconnect(sf.fs);
    rc = rc ? 1 : 0;
done:
    if (log_fd >= 0)
        close(log_fd);
    free(co.mountpoint);
    free(o.conf);
    free(o.log);
    fuse_opt_free_args(&args);
    return rc;
usage_error:
    rc = 2;
    goto done;
}
