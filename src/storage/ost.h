/*
 * An OST as stria-stord holds it: its directory, what its objects occupy,
 * and the state of its crash recovery epoch. A type only, shared by the
 * object store (store.h), which opens, changes and counts an OST, and by
 * crash recovery (recovery.h), which keeps its epoch's log; neither
 * includes the other's header for it.
 */
#ifndef STRIA_STORAGE_OST_H
#define STRIA_STORAGE_OST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct ost {
    uint32_t index;
    char path[4096];
    int dirfd;
    _Atomic uint64_t used;
    _Atomic uint64_t objects;
    _Atomic int writing;      /* writes in progress */
    _Atomic bool no_direct;   /* its file system refused O_DIRECT */
    _Atomic bool direct_seen; /* a write went around the page cache (logged once) */
    _Atomic bool early_seen;  /* a write started its writeback at once (logged once) */
    /* Crash safety of the checksums (recovery.h): a change takes epoch_lock
     * shared, the switch to a new epoch exclusively. */
    pthread_rwlock_t epoch_lock;
    pthread_mutex_t log_lock; /* appends to the epoch's log */
    int log_fd;               /* the epoch's log; -1: none */
    int64_t epoch_ns;         /* objects last changed before it were on disk at its start */
    /* Destroyed objects kept, empty, for new objects to take (store.c):
     * pool/<id hex>, ids in pool[0..npool). */
    pthread_mutex_t pool_lock;
    uint64_t *pool;
    _Atomic uint32_t npool;
    uint64_t pool_next; /* the next id to give */
};

#endif
