/*
 * libstria internals shared by client.c (connections, map, metadata) and
 * io.c (striped data I/O). Never installed.
 */
#ifndef STRIA_CLIENT_H
#define STRIA_CLIENT_H

#include "../common/auth.h"
#include "../common/config.h"
#include "../net/net.h"
#include "../proto/layout.h"
#include "../proto/map.h"
#include "stria/stria.h"

#include <pthread.h>

#define CT_IDLE_MAX 16

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
};

struct client_conf {
    struct cfg_addr mgmt;
    char *key_file;
    int64_t connect_timeout_ms;
    int64_t io_depth;
};

struct stria_fs {
    char conf_path[4096];
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
};

/* A connection lent by a target's pool. */
struct lease {
    struct ctarget *t;
    struct net_conn *c;
    uint64_t gen;
    bool reused; /* came from the idle pool (may be stale) */
};

/* Borrow a connection to target (kind, index); refreshes the map once if
 * the target is unknown. Returns 0 or negative errno. */
int cl_get(stria_fs_t *fs, uint8_t kind, uint32_t index, struct lease *l);
/* Return it; broken connections are closed. */
void cl_put(struct lease *l, bool broken);
/* Fetch the cluster map from mgmt and update targets. */
int cl_refresh_map(stria_fs_t *fs);

/*
 * Call an MDT: borrow a connection, run the typed call, let `use` copy
 * what it needs out of the reply, return the connection. Retries once on
 * a fresh connection when a pooled one turns out dead.
 */
#define MDT_CALL(fs, mdt, lname, q, r, use)                                                        \
    ({                                                                                             \
        int rc_ = 0;                                                                               \
        for (int try_ = 0; try_ < 2; try_++) {                                                     \
            struct lease l_;                                                                       \
            if ((rc_ = cl_get(fs, PROTO_NODE_META, mdt, &l_)))                                     \
                break;                                                                             \
            bool tr_ = false;                                                                      \
            rc_ = net_call_##lname(l_.c, q, r, NULL, 0, NULL, 0, NULL, &tr_);                      \
            if (rc_ == 0) {                                                                        \
                use;                                                                               \
            }                                                                                      \
            bool again_ = tr_ && l_.reused;                                                        \
            cl_put(&l_, tr_);                                                                      \
            if (!again_)                                                                           \
                break;                                                                             \
        }                                                                                          \
        rc_;                                                                                       \
    })

/* The calling thread's credentials (stria_set_thread_cred, else the
 * process's). */
void cl_cred(struct proto_cred *c);
void cl_to_stat(const struct proto_attr *a, struct stat *st);
/* SETATTR on an inode; a shrinking size also cuts the objects. */
int cl_setattr(stria_fs_t *fs, uint64_t ino, struct proto_setattr_req *q,
               struct proto_setattr_rep *r);

/* Striped data I/O over a layout (io.c). write: buf -> objects; read:
 * objects -> buf, holes zero-filled. Returns 0 or negative errno. */
int io_rw(stria_fs_t *fs, uint64_t ino, const struct layout *l, bool write, void *buf, size_t len,
          uint64_t off);
/* Send one small storage request to each object of the layout: TRUNCATE to
 * the object size that file size `size` implies, DESTROY, or OSYNC. */
enum io_obj_op { IO_TRUNCATE, IO_DESTROY, IO_SYNC };
int io_objects(stria_fs_t *fs, uint64_t ino, const struct layout *l, enum io_obj_op op,
               uint64_t size);

#endif
