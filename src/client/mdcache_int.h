/*
 * The metadata cache, inside: what mdcache.c (the records and names, and
 * what replies and revocations do to them) and mdc_chan.c (the
 * revocation channels) share. Nothing else includes this file.
 */
#ifndef STRIA_CLIENT_MDCACHE_INT_H
#define STRIA_CLIENT_MDCACHE_INT_H

#include "mdcache.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define BUCKETS         (1u << 16)
#define NEW_DIRS        1024
#define MDC_LISTED      65536
#define MDC_LISTED_WAYS 4

struct crec;  /* a record (mdcache.c) */
struct cname; /* a name (mdcache.c) */

/* The revocation channel to one MDT. */
struct mdc_chan {
    struct mdc *m;
    uint32_t mdt;
    uint64_t instance; /* the MDT's lease table the channel talks to; 0: none */
    pthread_t thread;
    bool started;
    struct net_conn *conn;
};

struct mdc {
    stria_fs_t *fs;
    pthread_mutex_t lock;
    uint32_t nchan; /* MDTs 0..nchan-1 have a channel; others' leases are not used */
    struct mdc_chan chan[MDC_MAX_MDTS];
    uint64_t next_epoch;
    struct crec *rec[BUCKETS];
    struct cname *names[BUCKETS];
    uint32_t nrec, nnames;
    /* Directories made here whose parts on some MDTs were not leased by
     * the MKDIR's reply (mdc_new_dir); a later one takes the slot. */
    struct new_dir {
        uint64_t ino, mdts; /* bit k: the part on MDT k */
    } new_dirs[NEW_DIRS];
    /* What listings said of their entries' well-known xattrs (READDIR
     * plus's xabsent), leased or not: trusted for MDC_LISTED_MS, as the
     * kernel trusts the attributes that came with them for its
     * attr_timeout. Sets of MDC_LISTED_WAYS by inode; a new entry takes
     * the slot that ends first. */
    struct listed {
        uint64_t ino;
        int64_t until_ms;
        uint8_t absent;
    } listed[MDC_LISTED];
    mdc_revoked_fn revoked; /* write-behind's (mdc_on_revoke), or NULL */
    /* The owner's (mdc_on_change), or NULL; change_lock is held while it
     * is called and while it is set, so that once it is unset no call of
     * it is under way. */
    pthread_mutex_t change_lock;
    mdc_changed_fn changed;
    void *changed_arg;
    bool stop; /* the channels end */
};

/* Forget every record and name (under m->lock, or with the cache to
 * oneself: mdc_destroy). */
void mdc_drop_all(struct mdc *m);

#endif
