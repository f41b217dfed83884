/*
 * The client's metadata cache under MDT leases (docs/architecture.md,
 * "Metadata leases"). Never installed.
 *
 * While a lease on an inode is valid, lookups of names in it (a directory)
 * and its attributes are answered here without asking the MDT. A lease is
 * valid until the MDT revokes it over the revocation channel (a thread per
 * cache running LEASE_POLL), until its time runs out (counted from when the
 * request that got it was sent), and only while that channel is up: when it
 * breaks, or the MDT's instance changes, everything cached is dropped
 * before anything else happens.
 *
 * A cached lookup checks search permission on the directory as the MDT
 * would. Only the mount turns the cache on: it talks to the MDT on behalf
 * of one machine's kernel, where caching pays. There is one channel per
 * MDT (of those in the map when the cache started, at most MDC_MAX_MDTS),
 * and each MDT's leases count only while its channel is up: an inode's
 * attributes are leased by its own MDT, the names of a directory by the
 * MDT holding each (a striped directory's shard). Built on the transport
 * core (conn.h) alone.
 */
#ifndef STRIA_CLIENT_MDCACHE_H
#define STRIA_CLIENT_MDCACHE_H

#include "conn.h"

#include <stdbool.h>
#include <stdint.h>

#define MDC_MAX_MDTS 256

struct mdc;

/* Start caching for fs (its revocation channel connects in the background). */
int mdc_start(stria_fs_t *fs);
/* Stop the channel and free the cache; fs->mdc becomes NULL. */
void mdc_stop(stria_fs_t *fs);

/* What the cache's owner hears when MDT mdt revokes write-behind's grant
 * id (0: that MDT's channel broke, whatever it granted is void). Called by
 * the channel's thread, which waits for it to return before it
 * acknowledges. */
typedef void (*mdc_revoked_fn)(stria_fs_t *fs, uint32_t mdt, uint64_t id);
/* Register fn (write-behind, when it starts; NULL: none). */
void mdc_on_revoke(struct mdc *m, mdc_revoked_fn fn);
/* What the cache's owner hears of every inode whose lease an MDT revoked
 * (stria_on_lease_changed; what: STRIA_REVOKED_NAMES or 0): called by the
 * channel's thread, after the cache dropped what it held of ino and before
 * it acknowledges. Once mdc_on_change has returned, no call of the fn it
 * replaced is under way. */
typedef void (*mdc_changed_fn)(uint64_t ino, unsigned what, void *arg);
void mdc_on_change(struct mdc *m, mdc_changed_fn fn, void *arg);

/* The cache without its revocation channel (mdc_start and mdc_stop are
 * these plus the thread; tests use them alone). A cache made here answers
 * nothing of an MDT until mdc_heard has brought its instance; it uses the
 * leases of MDTs 0..nmdt-1. mdc_create returns NULL when out of memory;
 * mdc_destroy frees the cache. */
struct mdc *mdc_create(stria_fs_t *fs, uint32_t nmdt);
void mdc_destroy(struct mdc *m);
/* Take in a LEASE_POLL reply from MDT mdt: its instance (a new one drops
 * everything cached) and n revocations (revokes: n pairs of little-endian
 * inode and generation; inode 0 is write-behind's grant, passed on to the
 * mdc_on_revoke callback), kinds their first nkinds kinds (proto.h's
 * LEASE_POLL; one missing is 0). */
void mdc_heard(struct mdc *m, uint32_t mdt, uint64_t instance, const uint8_t *revokes, uint32_t n,
               const uint8_t *kinds, uint32_t nkinds);
/* The MDT a reply came from, by the instance its leases name; -1 when no
 * channel hears that instance (the reply's leases are then not used). */
int mdc_reply_mdt(struct mdc *m, uint64_t instance);

/* The clock leases are counted on: take it before sending the request. */
int64_t mdc_clock_ms(void);

/* Answer from the cache, when cred may search parent and the lease of MDT
 * mdt (the one holding name: route.h's cl_name_mdt) on parent is valid: 0
 * and *out if parent holds name (whose lease is valid too); -ENOENT if it
 * does not and every name of parent on mdt is cached (a directory this
 * client made, changed since only by this client); else -EAGAIN (ask the
 * MDT). name is one component. */
int mdc_lookup(struct mdc *m, uint64_t parent, uint32_t mdt, const char *name,
               const struct proto_cred *cred, struct proto_attr *out);
/* mdc_lookup, and cred may also remove the name (proto_cred_may_delete).
 * Records whose leases ran out still count here if they were valid when
 * the exclusive hold on their MDT began (mdc_exclusive): no other client
 * changed them since. */
bool mdc_lookup_victim(struct mdc *m, uint64_t parent, uint32_t mdt, const char *name,
                       const struct proto_cred *cred, struct proto_attr *out);
/* Directory dir's names on MDT mdt are leased here, but not its mode and
 * owner (a reply about one of its names leases the names alone), while
 * its own MDT's channel hears, and the part holds name with what it
 * holds leased, or is complete and lacks it: a GETATTR of it would let
 * mdc_lookup answer name. */
bool mdc_perm_missing(struct mdc *m, uint64_t dir, uint32_t mdt, const char *name);
/* This client holds MDT mdt's write-behind grant without a break since
 * since_ms, until until_ms at least: no other client's request ran there
 * meanwhile (every one passes the MDT's gate, which takes the grant back
 * first). until_ms 0: the hold ended, or may have. wb.c says so when a
 * grant comes, and before it acknowledges a revocation. */
void mdc_exclusive(struct mdc *m, uint32_t mdt, int64_t since_ms, int64_t until_ms);
bool mdc_getattr(struct mdc *m, uint64_t ino, struct proto_attr *out);
/* What MDT mdt leases of ino: mdc_getattr's for ino's own MDT; for another
 * (a striped directory's shard) the shard's record, whose times and link
 * count are the shard's own. */
bool mdc_getattr_at(struct mdc *m, uint64_t ino, uint32_t mdt, struct proto_attr *out);
/* The lease MDT mdt holds for this client on ino, if valid: that MDT's
 * instance and the lease's generation. A generation moves with every
 * change of ino there, and is never given again by that instance, so an
 * equal pair later says nothing changed in between. */
bool mdc_lease_gen(struct mdc *m, uint64_t ino, uint32_t mdt, uint64_t *instance, uint64_t *gen);
/* An xattr the MDT said ino does not have, answered here while ino's
 * lease holds the state it was asked under. Only well-known names that
 * tools ask of every file (security.selinux by `ls -l`, the POSIX ACLs,
 * security.capability) are kept. mdc_xattr_absent says whether name is
 * known absent now, and otherwise sets *gen to the state to pass to
 * mdc_note_xattr_absent once the MDT answers (0: nothing will be kept).
 * A change to ino anywhere, this client's too, moves its state and
 * forgets them. */
bool mdc_xattr_absent(struct mdc *m, uint64_t ino, const char *name, uint64_t *gen);
/* A listing (READDIR plus) said ino has none of the well-known xattrs of
 * bits absent (proto_xattr_known). Kept for MDC_LISTED_MS with no lease,
 * as the kernel keeps the attributes that came with it; this client's
 * own change to ino's xattrs, or a revocation of its lease, forgets it.
 * Kept as long as ino's lease holds its state when the cache's
 * mdc_listing_seq, taken before the READDIR was sent, is seq still:
 * nothing that could change an xattr was heard or made since. */
#define MDC_LISTED_MS 1000
uint64_t mdc_listing_seq(struct mdc *m);
void mdc_note_listed(struct mdc *m, uint64_t ino, uint8_t absent, uint64_t seq);
void mdc_note_xattr_absent(struct mdc *m, uint64_t ino, const char *name, uint64_t gen);
/* This client is changing ino's xattrs: forget what the cache holds of
 * ino (before the request is sent; the change's reply leases it again). */
void mdc_xattr_changed(struct mdc *m, uint64_t ino);
/* What an open of ino for reading needs, when its lease is valid and a
 * reply brought its layout (at most 3 components of 8 stripes in all,
 * none pending with a pool): its attributes and layout (without pools). */
bool mdc_open_layout(struct mdc *m, uint64_t ino, struct proto_attr *attr, struct layout *out);
/* Whether the cache keeps layout l for such opens. */
bool mdc_layout_fits(const struct layout *l);
/* This client just made directory ino: its part on MDT mdt is empty, so
 * every name of it there is cached (until that MDT's lease on it goes).
 * When that lease is not held (a shard another MDT made), the part is
 * remembered instead (a table of the last 1,024 such directories, MDTs
 * below 64), for mdc_new_shard. */
void mdc_new_dir(struct mdc *m, uint64_t ino, uint32_t mdt);
/* Whether ino's part on mdt was remembered by mdc_new_dir and not taken
 * yet; true once. The caller may then complete it: it may be worth two
 * requests once a name is looked up there, not at mkdir (a tree of
 * directories, mdtest -D, creates none in most). */
bool mdc_new_shard(struct mdc *m, uint64_t ino, uint32_t mdt);
/* Completing a directory's part on MDT mdt that no reply of its making
 * leased: take the epoch of that MDT's lease on ino (0: none) after a
 * request granted it, then list the shard; if it was empty,
 * mdc_shard_empty marks it complete, and does so only if the lease is
 * still the same one (any change on it since was revoked, and moved the
 * epoch). */
uint64_t mdc_shard_epoch(struct mdc *m, uint64_t ino, uint32_t mdt);
bool mdc_shard_empty(struct mdc *m, uint64_t ino, uint32_t mdt, uint64_t epoch);

/* Completing from a listing a directory's part on MDT mdt that this client
 * did not make, when a lookup there finds a name not cached (cl_lookup):
 * READDIRs that list the whole part (one for a lookup; at most
 * MDC_FILL_BATCHES for an unlink behind, cl_fill_dir), and the names made
 * in it later need no LOOKUP while the lease holds.
 * mdc_fill_begin says whether to try a listing of batches READDIRs: only
 * while the lease on that part is valid and the part is not complete, and
 * not again within MDC_FILL_MS of the last try (nor within MDC_FILL_BIG_MS
 * of one whose listing did not fit the READDIRs it took), unless that try
 * could take fewer READDIRs than this one; so a directory that other
 * clients keep changing, or a big one, costs at most a listing a second,
 * or every ten. It fills *f. mdc_fill_end takes each READDIR's reply
 * (plain: its eof, its entries, count of them) in order, and takes its
 * names while the lease and this client's changes to the part's names are
 * still as they were at mdc_fill_begin: 1 when it listed the rest of the
 * part (eof), 0 when there is more to list from *next, -1 when the listing
 * is of no use (a change between). Several READDIRs are not one snapshot:
 * the caller marks the part complete (mdc_fill_complete) only if nobody
 * else can have changed it between them (cl_fill_dir: the write-behind
 * grant held throughout). */
#define MDC_FILL_BATCHES 16
#define MDC_FILL_MS      1000
#define MDC_FILL_BIG_MS  10000
struct mdc_fill {
    uint64_t ino, epoch, changes;
    uint32_t mdt;
};
bool mdc_fill_begin(struct mdc *m, uint64_t ino, uint32_t mdt, uint32_t batches,
                    struct mdc_fill *f);
int mdc_fill_end(struct mdc *m, const struct mdc_fill *f, bool eof, const uint8_t *entries,
                 uint32_t len, uint32_t count, uint64_t *next);
/* The listing f (mdc_fill_end said 1) is of the whole part: mark it
 * complete if the lease and this client's changes are still as they were.
 * Whether it is. */
bool mdc_fill_complete(struct mdc *m, const struct mdc_fill *f);

/* What a reply said, for the cache to follow. */
struct mdc_update {
    int64_t sent_ms;                   /* mdc_clock_ms() before sending */
    const struct proto_leases *leases; /* the reply's */
    /* A name in parent that now holds child (0: removed, or unknown);
     * parent 0 when the request named more than one component. */
    uint64_t parent;
    const char *name;
    uint64_t child;
    /* A rename's target: name in parent moved to name2 in parent2, which
     * now holds what name held (exchange: the two swapped). */
    uint64_t parent2;
    const char *name2;
    bool exchange;
    const struct proto_attr *attr; /* attributes of attr->ino, or NULL */
    const struct layout *layout;   /* attr->ino's layout (a regular file), or NULL */
};
void mdc_update(struct mdc *m, const struct mdc_update *u);
/* This client unlinked name (holding child, on MDT mdt) from parent and
 * has not told the MDT yet (wb.h): the name goes, and the directory's
 * times move. */
void mdc_unlinked(struct mdc *m, uint64_t parent, uint32_t mdt, const char *name, uint64_t child);
/* Whether name is surely not in parent's part on mdt (complete, leased)
 * and cred may add names there (write and search); if so, this client
 * creates it behind (wb.h) as child, not told to the MDT yet: the name
 * holds child from now, and the directory's times move, and *dir holds
 * the attributes that say who may add names (mode, owner, group). child's
 * own record comes with the MDT's reply; until then a lookup of it asks
 * the MDT, which waits for the create. */
bool mdc_create_new(struct mdc *m, uint64_t parent, uint32_t mdt, const char *name,
                    const struct proto_cred *cred, uint64_t child, struct proto_attr *dir);
/* A change on MDT mdt whose outcome is unknown (its connection broke),
 * or mdt's channel lost: forget what mdt leased. Every other MDT revokes
 * through its own channel what a change there does to its records (a
 * cross-MDT step's client is the coordinating MDT, not this one). */
void mdc_forget_mdt(struct mdc *m, uint32_t mdt);

#endif
