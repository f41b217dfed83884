/*
 * The walk cache of one MDT store (docs/architecture.md, "The walk
 * cache"): what a path walk needs of the directories it passes through,
 * kept in memory so that a walk does not read two B-tree records per
 * component. It holds two facts, both about directories only:
 *
 *   name: (dir, name) -> child, an entry of dir that names a directory;
 *   dir:  ino -> the summary of directory ino (type and permission bits,
 *         owner, parent, stripe over MDTs).
 *
 * The store (store.c) is its only user and keeps it true:
 *  - Only the batch leader writes the store, and it reports every change
 *    that can make a fact false (an entry of a directory removed or
 *    replaced, a directory's summary changed or its record deleted) with
 *    wcache_changed_*() before it makes it. From then until the batch ends
 *    (wcache_batch_end) nobody uses or adds facts: the cache is "busy".
 *    The end drops the changed facts (all of them when asked: a batch
 *    thrown away may have added facts that never came to be).
 *  - A read-only snapshot may be older than a fact the leader replaced, so
 *    a reader adds a fact only if the generation it took (wcache_gen)
 *    before its snapshot began is still current: every change and every
 *    batch end moves it.
 *  - Adding a name never makes a fact false, so creates and mkdirs keep the
 *    cache warm.
 *
 * Each table is direct-mapped: a new fact replaces whatever shared its
 * slot. Names longer than WCACHE_NAME_MAX are not cached. Thread-safe.
 */
#ifndef STRIA_META_WCACHE_H
#define STRIA_META_WCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WCACHE_NAME_MAX 46

struct wcache;

/* What a walk needs of a directory it passes through. */
struct wcache_dir {
    uint64_t ino, parent, dstripe;
    uint32_t mode, uid, gid;
};

/* A cache of slots name and dir slots each (powers of two); NULL on
 * failure. The caller frees it with wcache_destroy. */
struct wcache *wcache_create(uint32_t slots);
void wcache_destroy(struct wcache *c);

/* The generation a reader takes before its snapshot begins. */
uint64_t wcache_gen(struct wcache *c);

/* Look a fact up: true and *child (or *out) when cached and not busy. */
bool wcache_name(struct wcache *c, uint64_t dir, const char *name, size_t len, uint64_t *child);
bool wcache_dir(struct wcache *c, uint64_t ino, struct wcache_dir *out);
/* The leader's look at a cached summary, busy or not (is it changing?). */
bool wcache_peek_dir(struct wcache *c, uint64_t ino, struct wcache_dir *out);

/* Add a fact read from the store. A reader passes the generation it took
 * (reader true); the leader passes reader false, and adds only what its
 * batch has not changed (the cache is busy once it has). */
void wcache_add_name(struct wcache *c, bool reader, uint64_t gen, uint64_t dir, const char *name,
                     size_t len, uint64_t child);
void wcache_add_dir(struct wcache *c, bool reader, uint64_t gen, const struct wcache_dir *d);

/* The leader is about to change a fact (see above). */
void wcache_changed_name(struct wcache *c, uint64_t dir, const char *name, size_t len);
void wcache_changed_dir(struct wcache *c, uint64_t ino);

/* The batch is over: committed (flush_all false) or thrown away, in whole
 * or in part (flush_all true). */
void wcache_batch_end(struct wcache *c, bool flush_all);

/* Counters for tests: lookups answered and facts dropped. */
void wcache_counts(struct wcache *c, uint64_t *hits, uint64_t *drops);

#endif
