/*
 * libstria's transport core, the bottom layer of src/client (conn.c).
 * Never installed.
 *
 * The file system handle, the targets of the cluster map and their pools
 * of idle connections, the calling thread's credentials and cancel flag,
 * and the typed calls to a target (TARGET_CALL, MDT_CALL) with their
 * retries, deadlines and slots for changes. Every other module of
 * src/client builds on this one; it calls none of them. Where a layer above
 * must act around an MDT call (write-behind, the metadata cache), it
 * registers a hook in struct stria_fs when it starts.
 */
#ifndef STRIA_CLIENT_CONN_H
#define STRIA_CLIENT_CONN_H

#include "../common/auth.h"
#include "../common/config.h"
#include "../net/net.h"
#include "../proto/ids.h"
#include "../proto/layout.h"
#include "../proto/map.h"
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
    int64_t statfs_max_age_ms;
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
    /* Bumped by every write, truncate and punch through this client, as
     * it begins and once it has landed: read-ahead buffers (and the bytes
     * an open brought) filled before are stale. */
    _Atomic uint64_t write_epoch;
    _Atomic int ra_bufs; /* read-ahead buffers allocated (RA_MAX_BUFS) */
    _Atomic uint64_t ra_fills, ra_hits;
    void (*removed_fn)(stria_fs_t *fs, struct stria_removed *rm, void *arg);
    void *removed_arg; /* stria_start_unlink_behind's */
    /* stria_on_lease_revoked's callback, which the cache calls through
     * an adapter (stria_on_lease_changed's has the kind too). */
    void (*revoked_fn)(uint64_t ino, void *arg);
    void *revoked_arg;
    struct mdc *mdc;   /* metadata cache (mdcache.h); NULL unless the mount turned it on */
    struct peek *peek; /* bytes lookups bring (peek.h); with mdc */
    struct wb *wb;     /* write-behind unlink (wb.h); NULL unless the mount turned it on */
    struct reap *reap; /* objects removed behind (reap.h); NULL unless the mount turned it on */
    /* Hooks of the layers above, set while they run (NULL: not running). */
    void (*before_mdt_call)(stria_fs_t *fs); /* MDT_CALL waits for it (wb.c: queued unlinks) */
    /* A change's outcome on MDT mdt is unknown (mdc_chan.c). */
    void (*mdt_conn_broke)(stria_fs_t *fs, uint32_t mdt);
    bool (*tmpl_dir)(stria_fs_t *fs, uint64_t ino); /* a create template is of ino (wb.c) */
    /* Removals still on their way from here (client.c): wait for them;
     * how many files there were. */
    unsigned (*flush_removals)(stria_fs_t *fs);
    _Atomic uint64_t freed_gen; /* bumped when objects of removed files went (ns.c) */
    /* Bumped before and after every change this client asks an MDT for
     * but an OPEN: what a create learnt of its directory (a new file's
     * layout, wb.h's templates) holds only while it stays. */
    _Atomic uint64_t ns_epoch;
    /* stria_statfs's last answer (admin.c), kept conf.statfs_max_age_ms;
     * one thread at a time asks the servers, the others wait for it. */
    pthread_mutex_t statfs_lock;
    pthread_cond_t statfs_cond;
    bool statfs_asking;
    uint64_t statfs_at_ns; /* monotonic, when the kept answer was asked for; 0: none */
    uint64_t statfs_gen;   /* bumped with each answer kept */
    struct statvfs statfs_kept;
};

/* Load conf (NULL: stria_conf_find's) into fs, load the cluster key and
 * fetch the cluster map (stria_connect). Returns 0 or a negative errno;
 * on failure nothing is left to free. */
int cl_conn_open(stria_fs_t *fs, const char *conf);
/* Close every pooled connection and free the configuration (not fs). */
void cl_conn_close(stria_fs_t *fs);

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
/* Fetch the map into m (the caller frees it with map_free); fsname, if
 * not NULL, gets the file system's name. */
int cl_get_map(stria_fs_t *fs, struct cluster_map *m, char *fsname, size_t fslen);

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
/* Whether change op (its request q) may change what a create in some
 * directory gets (the directory's mode, group or default layout): bumps
 * fs->ns_epoch. Not an OPEN, a new name, an unlink, nor a SETATTR or
 * xattr change of an inode that is neither a directory the cache knows
 * nor one a template is of (fs->tmpl_dir); any other change, yes. */
bool cl_ns_change(stria_fs_t *fs, enum cl_op op, const void *q);
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
    TARGET_CALL_BULK(fs, kind, index, lname, q, r, NULL, 0, NULL, 0, NULL, use)
/* TARGET_CALL with a request bulk (bulk, blen) and room for a reply's
 * (dst, cap; *got its length). */
#define TARGET_CALL_BULK(fs, kind, index, lname, q, r, bulk, blen, dst, cap, got, use)             \
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
                rc_ = net_call_##lname(l_.c, q, r, bulk, blen, dst, cap, got, &tr_);               \
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
                /* A change may have happened; or, answered as a resend, it happened               \
                 * where reads since the break may have seen the state before it. */               \
                if ((tr_ || (rc_ == 0 && resend_)) && (kind) == PROTO_NODE_META &&                 \
                    (fs)->mdt_conn_broke)                                                          \
                    (fs)->mdt_conn_broke(fs, (uint32_t)(index));                                   \
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

/* Call an MDT, after what fs->before_mdt_call waits for: this client's
 * queued unlinks (wb.c), so its operations stay in order. */
#define MDT_CALL(fs, mdt, lname, q, r, use) MDT_CALL_BULK(fs, mdt, lname, q, r, NULL, 0, NULL, use)
/* MDT_CALL with room for a reply's bulk (dst, cap; *got its length). */
#define MDT_CALL_BULK(fs, mdt, lname, q, r, dst, cap, got, use)                                    \
    ({                                                                                             \
        if ((fs)->before_mdt_call)                                                                 \
            (fs)->before_mdt_call(fs);                                                             \
        bool nsch_ = cl_ns_change(fs, CL_OP_##lname, q);                                           \
        if (nsch_)                                                                                 \
            atomic_fetch_add(&(fs)->ns_epoch, 1);                                                  \
        int mrc_ =                                                                                 \
            TARGET_CALL_BULK(fs, PROTO_NODE_META, mdt, lname, q, r, NULL, 0, dst, cap, got, use);  \
        if (nsch_)                                                                                 \
            atomic_fetch_add(&(fs)->ns_epoch, 1);                                                  \
        mrc_;                                                                                      \
    })

/* The calling thread's credentials (stria_set_thread_cred, else the
 * process's). */
void cl_cred(struct proto_cred *c);
/* Within one library call, the process's credentials read once (three
 * syscalls) rather than at each request and check the call makes:
 * cl_cred_hold at its start (whether it held them: a thread's own, set
 * with stria_set_thread_cred, stay as they are), cl_cred_release(held)
 * before it returns. */
bool cl_cred_hold(void);
void cl_cred_release(bool held);

#endif
