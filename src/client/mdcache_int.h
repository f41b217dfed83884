/*
 * The metadata cache, inside: what mdcache.c (the records and names, and
 * what replies and revocations do to them), mdc_complete.c (directories
 * whose every name is cached) and mdc_chan.c (the revocation channels)
 * share. Nothing else includes this file.
 */
#ifndef STRIA_CLIENT_MDCACHE_INT_H
#define STRIA_CLIENT_MDCACHE_INT_H

#include "mdcache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define BUCKETS         (1u << 16)
#define NEW_DIRS        1024
#define MDC_LISTED      65536
#define MDC_LISTED_WAYS 4

struct cname; /* a name (mdcache.c) */

#define MDC_LAYOUT_COMPS   3
#define MDC_LAYOUT_STRIPES 8

/* A record: what one MDT leased this client of one inode. */
struct crec {
    uint64_t ino, gen, revoked, epoch;
    uint32_t mdt;            /* whose lease: the inode's own MDT, or a shard's */
    uint64_t complete_epoch; /* = epoch: every name of this directory is cached */
    uint64_t changes;        /* this client's changes to its names seen (mdc_fill_end) */
    int64_t fill_next_ms;    /* no mdc_fill_begin before (of at most fill_batches) */
    uint8_t fill_batches;    /* the READDIRs the try that set it could take */
    int64_t expiry_ms;
    bool have_attr; /* attr is current */
    bool have_perm; /* attr's mode, uid and gid are (changes to names keep them) */
    struct proto_attr attr;
    /* A regular file's layout, when it has at most MDC_LAYOUT_COMPS
     * components of MDC_LAYOUT_STRIPES stripes in all, none of them a
     * pending one with a pool (a dataset's files: one component, or a
     * Data-on-MDT one and one or two after it): an open for reading then
     * needs no round trip. Good for as long as the lease. */
    bool have_layout;
    /* Well-known xattrs (proto_xattr_known) the MDT said the inode does not
     * have, while its state was xattr_gen: `ls -l` asks for
     * security.selinux of every entry, and nearly no file has one. */
    uint8_t xattr_absent;
    uint64_t xattr_gen;
    struct {
        uint8_t ncomp;
        struct {
            uint64_t start, end;
            uint32_t stripe_size;
            uint16_t stripe_count, type;
        } c[MDC_LAYOUT_COMPS];
        uint32_t groups[MDC_LAYOUT_STRIPES]; /* each component's in turn */
    } lay;
    struct crec *next;
};

/* The revocation channel to one MDT. */
struct mdc_chan {
    struct mdc *m;
    uint32_t mdt;
    uint64_t instance; /* the MDT's lease table the channel talks to; 0: none */
    /* When this cache last forgot what the MDT leased (mdc_forget_mdt):
     * a reply to a request sent then or before leases nothing. */
    int64_t forgot_ms;
    /* mdc_exclusive's hold: read without the lock (victim lookups) */
    _Atomic int64_t excl_since_ms, excl_until_ms;
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
    /* Moves with every revocation heard, xattr change of this client and
     * drop of everything (mdc_listing_seq). */
    uint64_t xseq;
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
/* mdc_forget_mdt under m->lock. */
void mdc_forget_mdt_locked(struct mdc *m, uint32_t mdt);

/* Under m->lock: ino's record of MDT mdt, or NULL; whether a record's
 * lease holds at now; store name (len bytes) in directory parent as
 * holding child (false: no room, and parent is incomplete now). */
struct crec *mdc_rec_find(struct mdc *m, uint64_t ino, uint32_t mdt);
bool mdc_rec_valid(const struct mdc *m, const struct crec *r, int64_t now);
bool mdc_name_put(struct mdc *m, struct crec *parent, const char *name, size_t len, uint64_t child);
uint32_t mdc_hash_ino(uint64_t ino);
/* Whether the MDT would answer a lookup of name by its entries alone: not
 * "." or "..", and short enough (else it says ENAMETOOLONG). */
bool mdc_ordinary_name(const char *name, size_t len);

/* mdcache.c, under m->lock: the record holding ino's attributes (its own
 * MDT's), or NULL; forget what r held (attributes and, for a directory,
 * its names). */
struct crec *mdc_home_find(struct mdc *m, uint64_t ino);
void mdc_rec_drop(struct mdc *m, struct crec *r);
/* mdc_xattr.c, under m->lock: forget what a listing said of ino. */
void mdc_listed_forget(struct mdc *m, uint64_t ino);

#endif
