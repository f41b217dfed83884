/*
 * bench_passthrough: a FUSE passthrough of a local directory, the ceiling
 * any FUSE file system reaches on this machine.
 *
 * bench_fuse.sh mounts it beside stria-fuse and runs the same workloads on
 * both, so that stria-fuse is measured against what FUSE itself costs (the
 * trips through the kernel and /dev/fuse, the copies, the thread hand-offs)
 * and not only against the local disk. It is built for benchmarking and
 * nothing else: every request runs as the daemon's user (no setfsuid), and
 * only the operations the benchmarks use exist (no links, symlinks, xattrs,
 * locks; rename, for dbench's load).
 *
 * Method: libfuse's low-level API. Each FUSE inode is a struct node; the
 * node's address is its FUSE inode number (the source root is
 * FUSE_ROOT_ID). A directory's node holds an O_PATH descriptor of the
 * source directory, which lookup, create, mkdir, unlink and rmdir use as
 * their parent. Any other file's node holds a file handle
 * (name_to_handle_at) and is reopened with open_by_handle_at when needed,
 * so that tens of thousands of files known to the kernel do not need as
 * many descriptors: the benchmark creates 50,000, and a process may not be
 * allowed that many (here the hard limit is 20,000, and root cannot raise
 * it without CAP_SYS_RESOURCE). Where handles do not work, every node
 * holds an O_PATH descriptor instead, and the limit applies. A hash table
 * keyed by the source's (st_dev, st_ino) makes two lookups of one file the
 * same node, and counts the kernel's lookups so that forget frees the node
 * at zero. A file handle does not keep its inode: once the last name of a
 * file goes (unlink, or a rename over it), the source may give its inode
 * number to a new file while the kernel still holds the old node, so the
 * node leaves the table then (detached) and is freed at its forget;
 * otherwise a lookup of the new file would find the old node, whose handle
 * is stale (ESTALE). Open files and directories are ordinary descriptors in fi->fh.
 * Nothing else may rename or replace files in the source while it is
 * mounted.
 *
 * Settings match stria-fuse's defaults, so that the two differ only in what
 * happens behind /dev/fuse: a pool of up to 16 threads (8 kept idle),
 * max_write 1 MiB (libfuse 3.14 derives max_pages from it), the page cache
 * on (no direct_io) without the kernel's writeback cache (-o
 * writeback_cache=1 turns it on, as for stria-fuse), the same capabilities asked for, entry
 * and attribute timeouts of 1 s. No splice: data is copied, as stria-fuse
 * must copy it to the network.
 */
#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define TIMEOUT_S    1.0
#define MAX_WRITE    (1u << 20)
#define MIN_BUCKET   1024u
#define MAX_THREADS  16 /* stria-fuse's pool */
#define IDLE_THREADS 8

struct node {
    struct node *next;      /* hash chain */
    int fd;                 /* O_PATH descriptor of the source inode, or -1 */
    struct file_handle *fh; /* how to reopen it when fd is -1 */
    dev_t dev;
    ino_t ino;
    uint64_t nlookup; /* the kernel's references; 0 frees the node */
    bool detached;    /* its file is gone: out of the table, waiting for forget */
};

struct pt {
    struct node root;
    int mount_fd;         /* the source root, opened for open_by_handle_at */
    bool handles;         /* file handles work on the source */
    int writeback;        /* ask for the kernel's writeback cache */
    pthread_mutex_t lock; /* guards the table and every nlookup */
    struct node **bucket;
    size_t nbucket, count;
};

/* An open directory: the stream and the entry that did not fit last time. */
struct dirh {
    DIR *dp;
    off_t off;
    struct dirent *pending;
};

static pthread_key_t buf_key;

/*
 * A per-thread buffer of at least len bytes for read and readdir replies,
 * so the hot path does not allocate. Owned by the thread; freed when it
 * exits. NULL if out of memory.
 */
static char *thread_buf(size_t len)
{
    struct tbuf {
        size_t cap;
        char data[];
    } *b = pthread_getspecific(buf_key);
    if (b && b->cap >= len)
        return b->data;
    size_t cap = len < MAX_WRITE ? MAX_WRITE : len;
    struct tbuf *nb = realloc(b, sizeof(*nb) + cap);
    if (!nb)
        return NULL;
    nb->cap = cap;
    pthread_setspecific(buf_key, nb);
    return nb->data;
}

static struct pt *pt_of(fuse_req_t req)
{
    return fuse_req_userdata(req);
}

static struct node *node_of(fuse_req_t req, fuse_ino_t ino)
{
    if (ino == FUSE_ROOT_ID)
        return &pt_of(req)->root;
    return (struct node *)(uintptr_t)ino;
}

static size_t hash(dev_t dev, ino_t ino, size_t nbucket)
{
    uint64_t h = ((uint64_t)dev * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)ino * 0xff51afd7ed558ccdull);
    return (size_t)(h ^ (h >> 29)) & (nbucket - 1);
}

/* Called with pt->lock held. Doubling keeps chains short; a failed
 * doubling only makes them longer. */
static void table_grow(struct pt *pt)
{
    size_t n = pt->nbucket * 2;
    struct node **b = calloc(n, sizeof(*b));
    if (!b)
        return;
    for (size_t i = 0; i < pt->nbucket; i++) {
        struct node *x = pt->bucket[i], *next;
        for (; x; x = next) {
            next = x->next;
            size_t h = hash(x->dev, x->ino, n);
            x->next = b[h];
            b[h] = x;
        }
    }
    free(pt->bucket);
    pt->bucket = b;
    pt->nbucket = n;
}

static struct node *table_find(struct pt *pt, dev_t dev, ino_t ino)
{
    struct node *n = pt->bucket[hash(dev, ino, pt->nbucket)];
    while (n && (n->dev != dev || n->ino != ino))
        n = n->next;
    return n;
}

static void node_free(struct node *n)
{
    if (n->fd >= 0)
        close(n->fd);
    free(n->fh);
    free(n);
}

/*
 * A new node for the file st describes, name in parent_fd; fd, if not -1,
 * is that file already open. Directories (and everything, when handles do
 * not work, or on another file system than the source root) keep an O_PATH
 * descriptor; other files keep a file handle. Returns 0 or a negative errno.
 */
static int node_make(struct pt *pt, int parent_fd, const char *name, int fd, const struct stat *st,
                     struct node **out)
{
    struct node *n = calloc(1, sizeof(*n));
    if (!n)
        return -ENOMEM;
    n->fd = -1;
    n->dev = st->st_dev;
    n->ino = st->st_ino;
    if (S_ISDIR(st->st_mode) || !pt->handles || st->st_dev != pt->root.dev) {
        n->fd = openat(parent_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (n->fd < 0) {
            int rc = -errno;
            free(n);
            return rc;
        }
    } else {
        union {
            struct file_handle fh;
            char space[sizeof(struct file_handle) + MAX_HANDLE_SZ];
        } h = {.fh.handle_bytes = MAX_HANDLE_SZ};
        int mount_id;
        int r = fd >= 0 ? name_to_handle_at(fd, "", &h.fh, &mount_id, AT_EMPTY_PATH)
                        : name_to_handle_at(parent_fd, name, &h.fh, &mount_id, 0);
        n->fh = r < 0 ? NULL : malloc(sizeof(struct file_handle) + h.fh.handle_bytes);
        if (!n->fh) {
            int rc = r < 0 ? -errno : -ENOMEM;
            free(n);
            return rc;
        }
        memcpy(n->fh, &h, sizeof(struct file_handle) + h.fh.handle_bytes);
    }
    *out = n;
    return 0;
}

/*
 * Fill e for name in the directory parent_fd and count one kernel lookup
 * of its node, making the node if it is new. fd, if not -1, is the file
 * already open (by create). Returns 0 or a negative errno.
 */
static int lookup_entry(struct pt *pt, int parent_fd, const char *name, int fd,
                        struct fuse_entry_param *e)
{
    memset(e, 0, sizeof(*e));
    int r = fd >= 0 ? fstat(fd, &e->attr) : fstatat(parent_fd, name, &e->attr, AT_SYMLINK_NOFOLLOW);
    if (r < 0)
        return -errno;
    pthread_mutex_lock(&pt->lock);
    struct node *n = table_find(pt, e->attr.st_dev, e->attr.st_ino);
    if (n)
        n->nlookup++;
    pthread_mutex_unlock(&pt->lock);
    if (!n) {
        /* Made outside the lock; another thread may have made it meanwhile. */
        struct node *fresh = NULL;
        int rc = node_make(pt, parent_fd, name, fd, &e->attr, &fresh);
        if (rc)
            return rc;
        pthread_mutex_lock(&pt->lock);
        n = table_find(pt, fresh->dev, fresh->ino);
        if (n) {
            n->nlookup++;
        } else {
            n = fresh;
            n->nlookup = 1;
            size_t h = hash(n->dev, n->ino, pt->nbucket);
            n->next = pt->bucket[h];
            pt->bucket[h] = n;
            if (++pt->count > pt->nbucket)
                table_grow(pt);
        }
        pthread_mutex_unlock(&pt->lock);
        if (n != fresh)
            node_free(fresh);
    }
    e->ino = (fuse_ino_t)(uintptr_t)n;
    e->attr_timeout = TIMEOUT_S;
    e->entry_timeout = TIMEOUT_S;
    return 0;
}

static void forget_one(struct pt *pt, fuse_ino_t ino, uint64_t nlookup)
{
    if (ino == FUSE_ROOT_ID)
        return;
    struct node *n = (struct node *)(uintptr_t)ino;
    pthread_mutex_lock(&pt->lock);
    n->nlookup = nlookup < n->nlookup ? n->nlookup - nlookup : 0;
    if (n->nlookup) {
        pthread_mutex_unlock(&pt->lock);
        return;
    }
    if (!n->detached) {
        struct node **p = &pt->bucket[hash(n->dev, n->ino, pt->nbucket)];
        while (*p != n)
            p = &(*p)->next;
        *p = n->next;
        pt->count--;
    }
    pthread_mutex_unlock(&pt->lock);
    node_free(n);
}

/*
 * The file st described has lost its last name: take its node, if any, out
 * of the table (forget frees it), so that its inode number, once reused,
 * makes a node of its own.
 */
static void node_gone(struct pt *pt, const struct stat *st)
{
    pthread_mutex_lock(&pt->lock);
    struct node **p = &pt->bucket[hash(st->st_dev, st->st_ino, pt->nbucket)];
    while (*p && ((*p)->dev != st->st_dev || (*p)->ino != st->st_ino))
        p = &(*p)->next;
    if (*p) {
        (*p)->detached = true;
        *p = (*p)->next;
        pt->count--;
    }
    pthread_mutex_unlock(&pt->lock);
}

/* The path through which an O_PATH descriptor can be opened for real. */
static void proc_path(char *buf, size_t len, int fd)
{
    snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/*
 * A new descriptor of n's source file, opened with flags (O_PATH to reach
 * attributes); the caller closes it. -1 with errno on failure.
 */
static int node_open(struct pt *pt, struct node *n, int flags)
{
    if (n->fd < 0)
        return open_by_handle_at(pt->mount_fd, n->fh, flags | O_CLOEXEC);
    char path[64];
    proc_path(path, sizeof(path), n->fd);
    return open(path, flags | O_CLOEXEC);
}

static void pt_init(void *userdata, struct fuse_conn_info *conn)
{
    struct pt *pt = userdata;
    /* Whole 1 MiB application writes in one request, as stria-fuse asks;
     * libfuse sets max_pages to match when the kernel offers it. The kernel
     * caps readahead at what it offers (128 KiB by default), as for any
     * FUSE file system. */
    conn->max_write = MAX_WRITE;
    conn->max_readahead = MAX_WRITE;
    conn->want |= conn->capable & (FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_AUTO_INVAL_DATA |
                                   FUSE_CAP_PARALLEL_DIROPS | FUSE_CAP_ASYNC_READ);
#ifdef FUSE_CAP_HANDLE_KILLPRIV_V2
    conn->want |= conn->capable & FUSE_CAP_HANDLE_KILLPRIV_V2;
#endif
    if (pt->writeback)
        conn->want |= conn->capable & FUSE_CAP_WRITEBACK_CACHE;
    else
        conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
}

/*
 * The flags to open a source file with. Under the writeback cache the
 * kernel may read a page of a file open for writing only (to fill what a
 * write leaves partial), and it positions appends itself.
 */
static int open_flags(const struct pt *pt, int flags)
{
    flags = (flags | O_CLOEXEC) & ~O_NOFOLLOW;
    if (pt->writeback) {
        if ((flags & O_ACCMODE) == O_WRONLY)
            flags = (flags & ~O_ACCMODE) | O_RDWR;
        flags &= ~O_APPEND;
    }
    return flags;
}

static void pt_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct fuse_entry_param e;
    int rc = lookup_entry(pt_of(req), node_of(req, parent)->fd, name, -1, &e);
    if (rc)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_entry(req, &e);
}

static void pt_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    forget_one(pt_of(req), ino, nlookup);
    fuse_reply_none(req);
}

static void pt_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
    for (size_t i = 0; i < count; i++)
        forget_one(pt_of(req), forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
}

/* The kernel passes fi only for a regular file open on this mount. */
static void pt_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct node *n = node_of(req, ino);
    struct stat st;
    int r;
    if (fi) {
        r = fstat((int)fi->fh, &st);
    } else if (n->fd >= 0) {
        r = fstatat(n->fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
    } else {
        int fd = node_open(pt_of(req), n, O_PATH);
        r = fd < 0 ? -1 : fstat(fd, &st);
        if (fd >= 0)
            close(fd);
    }
    if (r < 0)
        fuse_reply_err(req, errno);
    else
        fuse_reply_attr(req, &st, TIMEOUT_S);
}

/* Apply one setattr to the file whose O_PATH descriptor is fd; 0 or -1. */
static int set_attrs(int fd, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
    char path[64];
    proc_path(path, sizeof(path), fd);
    if ((to_set & FUSE_SET_ATTR_MODE) && chmod(path, attr->st_mode) < 0)
        return -1;
    if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
        uid_t uid = (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
        gid_t gid = (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;
        if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
            return -1;
    }
    /* fi comes with an ftruncate; for a directory fi->fh would be a struct dirh,
     * but a directory never gets a size. */
    if ((to_set & FUSE_SET_ATTR_SIZE) &&
        (fi ? ftruncate((int)fi->fh, attr->st_size) : truncate(path, attr->st_size)) < 0)
        return -1;
    if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
                  FUSE_SET_ATTR_MTIME_NOW)) {
        struct timespec tv[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_OMIT}};
        if (to_set & FUSE_SET_ATTR_ATIME_NOW)
            tv[0].tv_nsec = UTIME_NOW;
        else if (to_set & FUSE_SET_ATTR_ATIME)
            tv[0] = attr->st_atim;
        if (to_set & FUSE_SET_ATTR_MTIME_NOW)
            tv[1].tv_nsec = UTIME_NOW;
        else if (to_set & FUSE_SET_ATTR_MTIME)
            tv[1] = attr->st_mtim;
        if (utimensat(AT_FDCWD, path, tv, 0) < 0)
            return -1;
    }
    return 0;
}

static void pt_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
    struct node *n = node_of(req, ino);
    int fd = n->fd >= 0 ? n->fd : node_open(pt_of(req), n, O_PATH);
    int r = fd < 0 ? -1 : set_attrs(fd, attr, to_set, fi);
    int err = errno;
    if (fd >= 0 && fd != n->fd)
        close(fd);
    if (r < 0)
        fuse_reply_err(req, err);
    else
        pt_getattr(req, ino, NULL);
}

static void pt_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    struct node *p = node_of(req, parent);
    struct fuse_entry_param e;
    int rc =
        mkdirat(p->fd, name, mode) < 0 ? -errno : lookup_entry(pt_of(req), p->fd, name, -1, &e);
    if (rc)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_entry(req, &e);
}

/* The kernel holds the directory's lock over an unlink or a rename in it,
 * so nothing changes name between the fstatat and the call. */
static void pt_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    int pfd = node_of(req, parent)->fd;
    struct stat st;
    bool known = fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (unlinkat(pfd, name, 0) < 0) {
        fuse_reply_err(req, errno);
        return;
    }
    if (known && st.st_nlink <= 1)
        node_gone(pt_of(req), &st);
    fuse_reply_err(req, 0);
}

static void pt_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    fuse_reply_err(req, unlinkat(node_of(req, parent)->fd, name, AT_REMOVEDIR) < 0 ? errno : 0);
}

/* A node is its source inode (a handle, or an O_PATH descriptor, which
 * follows the file): a rename changes no node. */
static void pt_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
    int pfd = node_of(req, parent)->fd, nfd = node_of(req, newparent)->fd;
    struct stat from, to;
    /* A file renamed over loses its name (not with RENAME_EXCHANGE, nor onto itself). */
    bool replaced = !(flags & RENAME_EXCHANGE) &&
                    fstatat(nfd, newname, &to, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(to.st_mode) &&
                    to.st_nlink <= 1 && fstatat(pfd, name, &from, AT_SYMLINK_NOFOLLOW) == 0 &&
                    (from.st_dev != to.st_dev || from.st_ino != to.st_ino);
    if (renameat2(pfd, name, nfd, newname, flags) < 0) {
        fuse_reply_err(req, errno);
        return;
    }
    if (replaced)
        node_gone(pt_of(req), &to);
    fuse_reply_err(req, 0);
}

static void pt_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
    struct node *p = node_of(req, parent);
    int fd = openat(p->fd, name, open_flags(pt_of(req), fi->flags) | O_CREAT, mode);
    if (fd < 0) {
        fuse_reply_err(req, errno);
        return;
    }
    struct fuse_entry_param e;
    int rc = lookup_entry(pt_of(req), p->fd, name, fd, &e);
    if (rc) {
        close(fd);
        fuse_reply_err(req, -rc);
        return;
    }
    fi->fh = (uint64_t)fd;
    if (fuse_reply_create(req, &e, fi) != 0) {
        /* The kernel gave up on the request: it holds neither file nor node. */
        close(fd);
        forget_one(pt_of(req), e.ino, 1);
    }
}

static void pt_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct pt *pt = pt_of(req);
    int fd = node_open(pt, node_of(req, ino), open_flags(pt, fi->flags) & ~(O_CREAT | O_EXCL));
    if (fd < 0) {
        fuse_reply_err(req, errno);
        return;
    }
    fi->fh = (uint64_t)fd;
    if (fuse_reply_open(req, fi) != 0)
        close(fd);
}

static void pt_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)ino;
    char *buf = thread_buf(size);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    ssize_t n = pread((int)fi->fh, buf, size, off);
    if (n < 0)
        fuse_reply_err(req, errno);
    else
        fuse_reply_buf(req, buf, (size_t)n);
}

static void pt_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    (void)ino;
    ssize_t n = pwrite((int)fi->fh, buf, size, off);
    if (n < 0)
        fuse_reply_err(req, errno);
    else
        fuse_reply_write(req, (size_t)n);
}

static void pt_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    /* What close(2) of the caller's descriptor would do to the source. */
    int fd = dup((int)fi->fh);
    fuse_reply_err(req, fd < 0 ? errno : close(fd) < 0 ? errno : 0);
}

static void pt_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    close((int)fi->fh);
    fuse_reply_err(req, 0);
}

static void pt_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)ino;
    int fd = (int)fi->fh;
    fuse_reply_err(req, (datasync ? fdatasync(fd) : fsync(fd)) < 0 ? errno : 0);
}

static void pt_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct dirh *d = calloc(1, sizeof(*d));
    int fd = openat(node_of(req, ino)->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!d || fd < 0 || !(d->dp = fdopendir(fd))) {
        int err = d ? errno : ENOMEM;
        if (fd >= 0)
            close(fd);
        free(d);
        fuse_reply_err(req, err);
        return;
    }
    fi->fh = (uint64_t)(uintptr_t)d;
    if (fuse_reply_open(req, fi) != 0) {
        closedir(d->dp);
        free(d);
    }
}

static void pt_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    (void)ino;
    struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
    char *buf = thread_buf(size);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    if (off != d->off) {
        seekdir(d->dp, off);
        d->pending = NULL;
        d->off = off;
    }
    size_t used = 0;
    for (;;) {
        if (!d->pending) {
            errno = 0;
            d->pending = readdir(d->dp);
            if (!d->pending) {
                if (errno && used == 0) {
                    fuse_reply_err(req, errno);
                    return;
                }
                break;
            }
        }
        struct dirent *de = d->pending;
        struct stat st = {.st_ino = de->d_ino, .st_mode = (mode_t)de->d_type << 12};
        size_t len = fuse_add_direntry(req, buf + used, size - used, de->d_name, &st, de->d_off);
        if (len > size - used)
            break; /* keep it for the next call */
        used += len;
        d->off = de->d_off;
        d->pending = NULL;
    }
    fuse_reply_buf(req, buf, used);
}

static void pt_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
    closedir(d->dp);
    free(d);
    fuse_reply_err(req, 0);
}

static void pt_statfs(fuse_req_t req, fuse_ino_t ino)
{
    struct node *n = node_of(req, ino);
    struct statvfs sv;
    if (fstatvfs(n->fd >= 0 ? n->fd : pt_of(req)->mount_fd, &sv) < 0)
        fuse_reply_err(req, errno);
    else
        fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops pt_ops = {
    .init = pt_init,
    .lookup = pt_lookup,
    .forget = pt_forget,
    .forget_multi = pt_forget_multi,
    .getattr = pt_getattr,
    .setattr = pt_setattr,
    .mkdir = pt_mkdir,
    .unlink = pt_unlink,
    .rmdir = pt_rmdir,
    .rename = pt_rename,
    .create = pt_create,
    .open = pt_open,
    .read = pt_read,
    .write = pt_write,
    .flush = pt_flush,
    .release = pt_release,
    .fsync = pt_fsync,
    .opendir = pt_opendir,
    .readdir = pt_readdir,
    .releasedir = pt_releasedir,
    .statfs = pt_statfs,
};

/*
 * Whether file handles work on the source (they need CAP_DAC_READ_SEARCH,
 * and a file system that makes them). Tried once, on the root.
 */
static bool handles_work(struct pt *pt)
{
    union {
        struct file_handle fh;
        char space[sizeof(struct file_handle) + MAX_HANDLE_SZ];
    } h = {.fh.handle_bytes = MAX_HANDLE_SZ};
    int mount_id;
    if (name_to_handle_at(pt->root.fd, "", &h.fh, &mount_id, AT_EMPTY_PATH) < 0)
        return false;
    int fd = open_by_handle_at(pt->mount_fd, &h.fh, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* Without handles, every known file holds a descriptor: allow as many as we may. */
static void raise_nofile(void)
{
    struct rlimit rl = {.rlim_cur = 1 << 20, .rlim_max = 1 << 20};
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
        return;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

struct cli {
    char *source;
    int writeback;
};

static const struct fuse_opt cli_opts[] = {
    {"source=%s", offsetof(struct cli, source), 0},
    {"writeback_cache=%d", offsetof(struct cli, writeback), 0},
    FUSE_OPT_END};

static void usage(const char *prog)
{
    printf("usage: %s [-f] -o source=DIR[,writeback_cache=0|1][,fuse options] MOUNTPOINT\n"
           "A FUSE passthrough of DIR, for benchmarks only (see bench/README.md).\n"
           "  writeback_cache=0|1  let the kernel gather writes (default 0, as stria-fuse)\n\n",
           prog);
}

int main(int argc, char **argv)
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct cli cli = {.writeback = 0};
    struct fuse_cmdline_opts opts = {0};
    struct pt pt = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct fuse_session *se = NULL;
    struct fuse_loop_config *cfg = NULL;
    int status = 1;
    pt.root.fd = -1;
    pt.mount_fd = -1;

    if (fuse_opt_parse(&args, &cli, cli_opts, NULL) != 0 || fuse_parse_cmdline(&args, &opts) != 0)
        goto out;
    if (opts.show_help) {
        usage(argv[0]);
        fuse_cmdline_help();
        fuse_lowlevel_help();
        status = 0;
        goto out;
    }
    if (opts.show_version) {
        printf("bench_passthrough, libfuse %s\n", fuse_pkgversion());
        status = 0;
        goto out;
    }
    if (!opts.mountpoint || !cli.source) {
        usage(argv[0]);
        fprintf(stderr, "bench_passthrough: need -o source=DIR and a mount point\n");
        goto out;
    }

    struct stat st;
    pt.root.fd = open(cli.source, O_PATH | O_DIRECTORY | O_CLOEXEC);
    pt.mount_fd = open(cli.source, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pt.root.fd < 0 || pt.mount_fd < 0 || fstat(pt.root.fd, &st) < 0) {
        fprintf(stderr, "bench_passthrough: source %s: %s\n", cli.source, strerror(errno));
        goto out;
    }
    pt.writeback = cli.writeback != 0;
    pt.root.dev = st.st_dev;
    pt.root.ino = st.st_ino;
    pt.nbucket = MIN_BUCKET;
    pt.bucket = calloc(pt.nbucket, sizeof(*pt.bucket));
    if (!pt.bucket || pthread_key_create(&buf_key, free) != 0) {
        fprintf(stderr, "bench_passthrough: out of memory\n");
        goto out;
    }
    /* The kernel has applied the caller's umask to every mode it sends. */
    umask(0);
    pt.handles = handles_work(&pt);
    if (!pt.handles) {
        int err = errno;
        raise_nofile();
        struct rlimit rl = {0};
        getrlimit(RLIMIT_NOFILE, &rl);
        fprintf(stderr,
                "bench_passthrough: no file handles on %s (%s): one descriptor per file, "
                "so at most about %llu files at once\n",
                cli.source, strerror(err), (unsigned long long)rl.rlim_cur);
    }

    se = fuse_session_new(&args, &pt_ops, sizeof(pt_ops), &pt);
    if (!se)
        goto out;
    if (fuse_set_signal_handlers(se) != 0)
        goto out;
    if (fuse_session_mount(se, opts.mountpoint) != 0)
        goto out_signals;
    /* Without -f, the parent returns here once the mount is in place. */
    fuse_daemonize(opts.foreground);
    int rc;
    if (opts.singlethread) {
        rc = fuse_session_loop(se);
    } else {
        cfg = fuse_loop_cfg_create();
        if (!cfg) {
            rc = -ENOMEM;
        } else {
            fuse_loop_cfg_set_clone_fd(cfg, (unsigned)opts.clone_fd);
            fuse_loop_cfg_set_max_threads(cfg, MAX_THREADS);
            fuse_loop_cfg_set_idle_threads(cfg, IDLE_THREADS);
            rc = fuse_session_loop_mt(se, cfg);
        }
    }
    status = rc == 0 ? 0 : 1;
    fuse_session_unmount(se);
out_signals:
    fuse_remove_signal_handlers(se);
out:
    if (se)
        fuse_session_destroy(se);
    if (cfg)
        fuse_loop_cfg_destroy(cfg);
    for (size_t i = 0; i < pt.nbucket; i++) {
        struct node *n = pt.bucket[i], *next;
        for (; n; n = next) {
            next = n->next;
            node_free(n);
        }
    }
    free(pt.bucket);
    if (pt.root.fd >= 0)
        close(pt.root.fd);
    if (pt.mount_fd >= 0)
        close(pt.mount_fd);
    free(opts.mountpoint);
    free(cli.source);
    fuse_opt_free_args(&args);
    return status;
}
