/*
 * libstria internals shared by client.c (connections, map, metadata) and
 * io.c (striped data I/O). Never installed.
 */
#ifndef STRIA_CLIENT_H
#define STRIA_CLIENT_H

#include "../common/auth.h"
#include "../common/config.h"
#include "../net/net.h"
#include "../proto/ids.h"
#include "../proto/layout.h"
#include "../proto/map.h"
#include "mdcache.h"
#include "wb.h"
#include "stria/stria.h"

#include <pthread.h>
#include <stdatomic.h>

#define CT_IDLE_MAX  16
#define CL_DS_SLOTS  4096
#define CL_PFX_SLOTS 1024
#define CL_PFX_PATH  240

/* A server target as the client knows it, with its idle connections. */
struct ctarget {
    uint8_t kind;
    uint32_t index;
    pthread_mutex_t lock;
    char host[256];
    uint16_t port;
    uint8_t state;
    uint64_t gen; /* bumped when the address changes */
    struct net_conn *idle[CT_IDLE_MAX];
    int nidle;
    /* Out of reach since (0: answering): a target out of reach for
     * conf.timeout_ms is written off, and each request to it makes one
     * short try (a connect of at most a second) and fails with EIO if that
     * fails, instead of waiting the timeout again. */
    int64_t down_since_ns;
};

struct client_conf {
    struct cfg_addr mgmt;
    char *key_file;
    int64_t connect_timeout_ms;
    int64_t io_depth;
    int64_t timeout_ms;
};

struct stria_fs {
    char conf_path[4096];
    char key_path[8300]; /* the key file conf.key_file names, resolved */
    struct client_conf conf;
    struct auth_key key;
    uint64_t client_id;
    char fsname[64];
    struct ctarget mgmt;
    pthread_rwlock_t map_lock;
    uint64_t epoch;
    struct ctarget **mdt, **ost; /* by index; never freed while fs lives */
    uint32_t nmdt_slots, nost_slots;
    uint32_t ost_count; /* OSTs in the map */
    uint32_t mdt_count; /* MDTs in the map (atomic) */
    /* Stripes of directories over MDTs (route.c), which never change. */
    pthread_mutex_t ds_lock;
    struct cl_ds {
        uint64_t ino, dstripe;
    } ds[CL_DS_SLOTS];
    /* Directories that paths crossing MDTs led to lately (route.c). */
    struct cl_pfx {
        uint64_t start, dir;
        int64_t expires_ns;
        char path[CL_PFX_PATH];
    } pfx[CL_PFX_SLOTS];
    struct gather *gather; /* gathering of small writes (gather.c) */
    /* Bumped by every write, truncate and punch through this client:
     * read-ahead buffers filled before are stale. */
    _Atomic uint64_t write_epoch;
    _Atomic int ra_bufs; /* read-ahead buffers allocated (RA_MAX_BUFS) */
    _Atomic uint64_t ra_fills, ra_hits;
    void (*removed_fn)(stria_fs_t *fs, struct stria_removed *rm, void *arg);
    void *removed_arg; /* stria_start_unlink_behind's */
    struct mdc *mdc;   /* metadata cache (mdcache.h); NULL unless the mount turned it on */
    struct wb *wb;     /* write-behind unlink (wb.h); NULL unless the mount turned it on */
};

/* ---- routing over MDTs (route.c) ---- */

struct cl_dirbatch;

/* Remember the stripe of a directory whose attributes a reply carried. */
void cl_learn(stria_fs_t *fs, const struct proto_attr *a);
/* The MDT holding name (len bytes) in directory dir. */
uint32_t cl_name_mdt(stria_fs_t *fs, uint64_t dir, const char *name, size_t len);
/* The stripe of directory dir over MDTs (0: plain), asked for if unknown. */
int cl_dir_stripe(stria_fs_t *fs, uint64_t dir, uint64_t *dstripe);

/* Where a path-taking request goes: parent and path as sent, to mdt. */
struct cl_route {
    uint64_t parent;
    const char *path;
    uint32_t mdt;
    uint64_t from; /* the request's own start and path */
    const char *whole;
    bool cached; /* parent came from the prefix cache */
    int tries;
    char last[PROTO_MAX_STR + 1]; /* what path points into when rerouted */
};
void cl_route(stria_fs_t *fs, uint64_t parent, const char *path, struct cl_route *rt);
/* Whether to send the request again after it returned *rc: the MDT said
 * EREMOTE, or a cached route led astray. Then all but the last component
 * are walked here, one MDT at a time, and the last is sent from the
 * directory it is in; a failed walk's error goes to *rc. */
bool cl_route_again(stria_fs_t *fs, struct cl_route *rt, int *rc);
/* Walk all but the last component of rt's path here. */
int cl_reroute(stria_fs_t *fs, struct cl_route *rt);
/* Resolve a whole path here (following a final symlink if asked). */
int cl_resolve(stria_fs_t *fs, uint64_t start, const char *path, bool follow,
               struct proto_attr *out);
/* One READDIR batch of a directory striped over MDTs, merged in cookie
 * order (cl_readdir calls it). */
int cl_readdir_striped(stria_fs_t *fs, uint64_t ino, uint64_t ds, uint64_t cookie, bool plus,
                       uint8_t *buf, uint32_t cap, struct cl_dirbatch *out);

/* A connection lent by a target's pool. */
struct lease {
    struct ctarget *t;
    struct net_conn *c;
    uint64_t gen;
    bool reused; /* came from the idle pool (may be stale) */
};

/* Borrow a connection to target (kind, index); refreshes the map once if
 * the target is unknown. Returns 0 or negative errno: -EIO when the
 * target is written off (ctarget.down_since_ns) and its one try failed.
 * Inside a retrying call (cl_retry_init) no try outlasts its deadline. */
int cl_get(stria_fs_t *fs, uint8_t kind, uint32_t index, struct lease *l);
/* Return it; broken connections are closed. */
void cl_put(struct lease *l, bool broken);
/* The target of l has not answered since since_ns (monotonic). */
void cl_silent_since(struct lease *l, int64_t since_ns);

/* Storage I/O keeps trying an unreachable target (a server restarting, a
 * host cut off) until conf.timeout_ms has passed since it began, then
 * fails with EIO: one deadline for the whole call, set before its first
 * try, which every try's waits respect. */
struct cl_retry {
    int64_t start_ns, deadline_ns;
    int delay_ms;
    int64_t outer_ns; /* the thread's deadline before this call's */
};
void cl_retry_init(stria_fs_t *fs, struct cl_retry *r);
/* The call is over: its deadline no longer bounds the thread's tries. */
void cl_retry_end(struct cl_retry *r);
/* Does rc (transport: a connection broke) say the target was out of reach? */
bool cl_unreachable(int rc, bool transport);
/* After a failure rc: true (having slept a backoff) to try again; false to
 * give up, with *rc turned into EIO when the target stayed out of reach,
 * or EINTR when the caller was interrupted (cl_set_cancel). */
bool cl_retry_again(struct cl_retry *r, int *rc, bool transport, const char *what);
/* The calling thread's request may be abandoned when *flag becomes true
 * (the mount's FUSE interrupts); NULL: never. Returns the flag it
 * replaces, to be put back. */
const volatile int *cl_set_cancel(const volatile int *flag);
bool cl_cancelled(void);
/* Fetch the cluster map from mgmt and update targets. */
int cl_refresh_map(stria_fs_t *fs);

/* The opcode of each typed call, by its lower-case name (TARGET_CALL). */
#define CL_OP_ENUM(NAME, num, lname) CL_OP_##lname = num,
enum cl_op { PROTO_MESSAGES(CL_OP_ENUM) };
#undef CL_OP_ENUM
/* May a request of this kind be sent again when its first sending may or
 * may not have been served (a connection broke under it)? Reads, and
 * changes that come out the same when made twice. */
bool cl_op_resendable(enum cl_op op);
/* Does this request of a kind that is not resendable change anything? An
 * OPEN only with O_CREAT or O_TRUNC; any other, yes. */
bool cl_open_changes(const struct proto_open_req *q);
static inline bool cl_req_changes(const void *q)
{
    (void)q;
    return true;
}
#define CL_REQ_CHANGES(q)                                                                          \
    _Generic((q), struct proto_open_req *: cl_open_changes,                                       \
             const struct proto_open_req *: cl_open_changes, default: cl_req_changes)(q)
/* A slot for a change in flight to an MDT (PROTO_HDR_TAG), unique in this
 * process until given back; waits while every slot is in use. */
uint16_t cl_tag_get(void);
void cl_tag_put(uint16_t tag);
/* The calling thread is sending a change again (TARGET_CALL). */
extern __thread bool cl_replaying;
/* The calling thread's calls may take longer than timeout_ms to be
 * answered (SCRUB of a large directory, FSCK of a large MDT): no reply
 * timeout for them. */
extern __thread bool cl_long_call;

/*
 * Call a target (kind, index): borrow a connection, run the typed call, let
 * `use` copy what it needs out of the reply, return the connection.
 * An MDT or OST out of reach is tried again until conf.timeout_ms (then
 * EIO): always while the request could not be sent; after a connection
 * broke under it, if it is resendable or a change to an MDT: a change
 * carries a slot (cl_tag_get) and keeps its sequence number when sent
 * again, and the MDT answers a change it made from the reply it kept
 * (store.h, "Reply records"), also after a restart. Once at once on a
 * fresh connection when a pooled one turns out dead. The management
 * service is not waited for: the map it serves is a cache.
 */
#define TARGET_CALL(fs, kind, index, lname, q, r, use)                                             \
    ({                                                                                             \
        int rc_ = 0;                                                                               \
        struct cl_retry rty_;                                                                      \
        cl_retry_init(fs, &rty_);                                                                  \
        bool change_ = !cl_op_resendable(CL_OP_##lname) && CL_REQ_CHANGES(q);                      \
        uint16_t tag_ = change_ && (kind) == PROTO_NODE_META ? cl_tag_get() : 0;                   \
        /* The seq after the slot: the changes of one slot then have rising seqs. */               \
        uint64_t seq_ = net_next_seq();                                                            \
        bool resend_ = false;                                                                      \
        for (int try_ = 0;; try_++) {                                                              \
            struct lease l_;                                                                       \
            bool tr_ = false, sent_ = false;                                                       \
            if ((rc_ = cl_get(fs, kind, index, &l_)) == 0) {                                       \
                sent_ = true;                                                                      \
                l_.c->seq = seq_;                                                                  \
                l_.c->tag = tag_;                                                                  \
                l_.c->resend = resend_;                                                            \
                cl_replaying = resend_; /* leases in a kept reply are old: cl_note skips them */   \
                if (cl_long_call)                                                                  \
                    net_set_timeout(l_.c, 0);                                                      \
                rc_ = net_call_##lname(l_.c, q, r, NULL, 0, NULL, 0, NULL, &tr_);                  \
                if (cl_long_call && !tr_)                                                          \
                    tr_ = net_set_timeout(l_.c, (int)(fs)->conf.timeout_ms) != 0;                  \
                if (rc_ == 0) {                                                                    \
                    use;                                                                           \
                }                                                                                  \
                cl_replaying = false;                                                              \
                bool again_ = tr_ && l_.reused && try_ == 0 && !cl_cancelled();                    \
                /* Sent, perhaps served: a change goes again as a resend. */                       \
                if (tr_ && tag_)                                                                   \
                    resend_ = true;                                                                \
                cl_put(&l_, tr_);                                                                  \
                if (tr_ && (kind) == PROTO_NODE_META && (fs)->mdc)                                 \
                    mdc_forget_all((fs)->mdc); /* a change may or may not have happened */         \
                if (again_)                                                                        \
                    continue;                                                                      \
            }                                                                                      \
            if (rc_ == 0 || (kind) == PROTO_NODE_MGMT || (sent_ && change_ && !tag_) ||            \
                !cl_retry_again(&rty_, &rc_, tr_ || !sent_, #lname))                               \
                break;                                                                             \
        }                                                                                          \
        cl_retry_end(&rty_);                                                                       \
        if (tag_)                                                                                  \
            cl_tag_put(tag_);                                                                      \
        rc_;                                                                                       \
    })

/* Call an MDT, after this client's queued unlinks: its operations stay in
 * order. */
#define MDT_CALL(fs, mdt, lname, q, r, use)                                                        \
    ({                                                                                             \
        if ((fs)->wb)                                                                              \
            wb_flush(fs);                                                                          \
        TARGET_CALL(fs, PROTO_NODE_META, mdt, lname, q, r, use);                                   \
    })

/*
 * A path-taking request sent where its path leads (route.c): the request's
 * parent field PF and path field PTH are set from the route, and after an
 * EREMOTE the path is walked here and the request sent once more. Gives
 * EREMOTE still when the last component's own inode lives elsewhere.
 */
#define ROUTED_CALL(fs, from_, path_, PF, PTH, lname, q, r, use)                                   \
    ({                                                                                             \
        struct cl_route rt_;                                                                       \
        int rc2_;                                                                                  \
        cl_route(fs, from_, path_, &rt_);                                                          \
        do {                                                                                       \
            (q)->PF = rt_.parent;                                                                  \
            (q)->PTH = proto_str_c(rt_.path);                                                      \
            rc2_ = MDT_CALL(fs, rt_.mdt, lname, q, r, use);                                        \
        } while (cl_route_again(fs, &rt_, &rc2_));                                                 \
        rc2_;                                                                                      \
    })

/* The calling thread's credentials (stria_set_thread_cred, else the
 * process's). */
void cl_cred(struct proto_cred *c);
void cl_to_stat(const struct proto_attr *a, struct stat *st);
/* SETATTR on an inode; a shrinking size also cuts the objects. */
int cl_setattr(stria_fs_t *fs, uint64_t ino, struct proto_setattr_req *q,
               struct proto_setattr_rep *r);

/* ---- inode-level namespace calls (ns.c; stria.h's inode level wraps them) ----
 * parent/ino are Stria inode numbers; paths are relative to parent (one
 * name for the mount). Each returns 0 or a negative errno. */

/* What removing a name left to do (stria_removed_t): when gone is set, the
 * inode's last link went; a regular file's objects (layout) go with its
 * last close. */
struct stria_removed {
    uint64_t ino;
    uint8_t gone;    /* the inode's last link went */
    uint8_t destroy; /* and it may have objects */
    uint64_t size;   /* its size then, as the MDT knew it */
    struct layout layout;
};
struct cl_dirbatch {
    uint32_t len, count;
    bool eof;
};

int cl_lookup(stria_fs_t *fs, uint64_t parent, const char *path, bool follow,
              struct proto_attr *out);
int cl_getattr(stria_fs_t *fs, uint64_t ino, struct proto_attr *out);
int cl_mkdir(stria_fs_t *fs, uint64_t parent, const char *path, mode_t mode,
             struct proto_attr *out);
/* count, start: the stripe over MDTs (stria_mkdir_striped). */
int cl_mkdir_striped(stria_fs_t *fs, uint64_t parent, const char *path, mode_t mode, int32_t count,
                     int32_t start, struct proto_attr *out);
int cl_setdirstripe(stria_fs_t *fs, uint64_t ino, int32_t count, int32_t start);
int cl_rmdir(stria_fs_t *fs, uint64_t parent, const char *path);
int cl_unlink(stria_fs_t *fs, uint64_t parent, const char *path, struct stria_removed *rm);
int cl_rename(stria_fs_t *fs, uint64_t sparent, const char *spath, uint64_t dparent,
              const char *dpath, unsigned flags, struct stria_removed *rm);
int cl_link(stria_fs_t *fs, uint64_t ino, uint64_t dparent, const char *dpath,
            struct proto_attr *out);
int cl_symlink(stria_fs_t *fs, uint64_t parent, const char *path, const char *target,
               struct proto_attr *out);
/* A FIFO, device, socket or regular file (MKNOD; mode includes the type,
 * rdev a device's number). */
int cl_mknod(stria_fs_t *fs, uint64_t parent, const char *path, mode_t mode, dev_t rdev,
             struct proto_attr *out);
ssize_t cl_readlink(stria_fs_t *fs, uint64_t ino, char *buf, size_t len);
/* One READDIR batch into buf (entries as proto_get_dirent reads them, each
 * followed by its ATTR when plus). */
int cl_readdir(stria_fs_t *fs, uint64_t ino, uint64_t cookie, bool plus, uint8_t *buf, uint32_t cap,
               struct cl_dirbatch *out);
int cl_setxattr(stria_fs_t *fs, uint64_t ino, const char *name, const void *value, size_t size,
                int flags);
ssize_t cl_getxattr(stria_fs_t *fs, uint64_t ino, const char *name, void *value, size_t size);
ssize_t cl_listxattr(stria_fs_t *fs, uint64_t ino, char *list, size_t size);
int cl_removexattr(stria_fs_t *fs, uint64_t ino, const char *name);
int cl_getstripe(stria_fs_t *fs, uint64_t ino, struct stria_layout *out);
int cl_setstripe(stria_fs_t *fs, uint64_t ino, int32_t count, uint32_t size, int32_t offset);
/* Tell the MDT that ino is at least size bytes long (the MDT keeps the
 * maximum) and, if mtime_ns, its mtime; out (if not NULL) gets the result.
 * layout: the file's (from an open handle), for the metadata cache, or NULL. */
int cl_setsize(stria_fs_t *fs, uint64_t ino, uint64_t size, int64_t mtime_ns,
               const struct layout *layout, struct proto_attr *out);
/* Let the metadata cache (if on) follow a reply (struct mdc_update): a
 * name in parent now holds child (0: removed or unknown); the name in
 * parent2 changed too; attr: the attributes of attr->ino now. */
void cl_note(stria_fs_t *fs, int64_t sent, const struct proto_leases *leases, uint64_t parent,
             const char *name, uint64_t child, uint64_t parent2, const char *name2,
             const struct proto_attr *attr);
/* cl_note of a reply that also brings attr->ino's layout. */
void cl_note_layout(stria_fs_t *fs, int64_t sent, const struct proto_leases *leases,
                    uint64_t parent, const char *name, const struct proto_attr *attr,
                    const struct layout *layout);
/* Remove the objects of a file whose last link went (if rm->destroy). */
void cl_destroy(stria_fs_t *fs, const struct stria_removed *rm);
/* Set atime (or mtime) in q from a timespec (NULL, UTIME_NOW, UTIME_OMIT). */
void cl_set_time(struct proto_setattr_req *q, const struct timespec *ts, bool atime);
/* The process's umask, read without changing it. */
mode_t cl_umask(void);

/* Open (or create) path under parent; an empty path opens parent itself.
 * count/size/offset choose a new file's layout (0, 0, -1: inherit). attr,
 * if not NULL, receives the attributes the MDT returned. */
int cl_open(stria_fs_t *fs, uint64_t parent, const char *path, int flags, mode_t mode,
            int32_t count, uint32_t size, int32_t offset, stria_file_t **out,
            struct proto_attr *attr);
/* ---- gathering of small sequential writes (gather.c; stria.h says what) ---- */

/* Per-handle state gather.c reads (io.c owns the handle). */
uint64_t cl_file_ino_of(const stria_file_t *f);
stria_fs_t *cl_file_fs(const stria_file_t *f);
const struct layout *cl_file_layout(const stria_file_t *f);
/* A gathered write of f failed to land: keep rc for f's next call. */
void cl_file_set_error(stria_file_t *f, int rc);
/* Tell the MDT, once per handle, that f's file may have objects: before
 * its first byte lands. */
int cl_file_mark(stria_file_t *f);

int gather_init(stria_fs_t *fs);
/* Send everything gathered, stop the thread, free (stria_disconnect). */
void gather_fini(stria_fs_t *fs);
/* Copy what it can of a write of f at off into ino's buffer, sending
 * buffers it fills (their failures kept on f). Returns the bytes taken
 * from the front of buf (0: none; the caller writes the rest itself after
 * gather_before_write) or a negative errno. */
ssize_t gather_write(stria_file_t *f, const void *buf, size_t len, uint64_t off);
/* Before a write of [off, end) of ino that is not gathered: ino's filling
 * buffer goes first, and any being sent that overlaps lands first. */
void gather_before_write(stria_fs_t *fs, uint64_t ino, uint64_t off, uint64_t end);
/* Before anything else of ino (read, size report, truncate, close): send
 * what was gathered for it so far and wait until it has landed. */
void gather_drain(stria_fs_t *fs, uint64_t ino);
void gather_set(stria_fs_t *fs, bool on);
bool gather_on(stria_fs_t *fs);
void gather_stats(stria_fs_t *fs, uint64_t *writes, uint64_t *sends);

/* Striped data I/O over a layout (io.c). write: buf -> objects; read:
 * objects -> buf, holes zero-filled. Returns 0 or negative errno. */
int io_rw(stria_fs_t *fs, uint64_t ino, const struct layout *l, bool write, void *buf, size_t len,
          uint64_t off);
/* Send one small storage request to each object of the layout: TRUNCATE to
 * the object size that file size `size` implies, DESTROY, or OSYNC. */
enum io_obj_op { IO_TRUNCATE, IO_DESTROY, IO_SYNC };
int io_objects(stria_fs_t *fs, uint64_t ino, const struct layout *l, enum io_obj_op op,
               uint64_t size);
/* Deallocate a file range on every object it touches. */
int io_punch(stria_fs_t *fs, uint64_t ino, const struct layout *l, uint64_t off, uint64_t len);

#endif
