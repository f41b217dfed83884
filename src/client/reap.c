/*
 * Objects of removed files, removed behind (reap.h).
 *
 * A removal the MDT answered needs its objects gone and the MDT told
 * (DESTROYED), or the inode stays pending; nothing a program sees waits on
 * it but free space. So the mount's unlinks hand their removals here and
 * reply at once: a queue under one mutex, and one thread that takes up to
 * PROTO_MAX_DESTROYED of them when that many are queued or the oldest is
 * REAP_AGE_MS old, and removes them as a batch (cl_destroyed_begin/_end):
 * one DESTROY per OST, one DESTROYED per MDT, where each file cost one of
 * each. Free space is what a program could miss, so stria_statfs and a
 * write that fails with ENOSPC wait for the queue first (reap_flush), and
 * stria_disconnect empties it. A file whose removal fails stays pending on
 * its MDT, as with cl_destroy.
 */
#include "reap.h"

#include "../common/util.h"
#include "gather.h"
#include "migrate.h"
#include "ns.h"
#include "wb.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define REAP_AGE_MS 200
#define REAP_MAX    4096 /* files queued at most; past it, removals are made at once */

struct reap_item {
    struct reap_item *next;
    uint64_t ino;
    int64_t at_ms; /* queued, monotonic */
    uint32_t nobj;
    struct io_obj obj[];
};

struct reap {
    stria_fs_t *fs;
    pthread_mutex_t lock;
    pthread_cond_t work; /* items, a flush or stop for the thread */
    pthread_cond_t done; /* a batch was removed */
    struct reap_item *head, *tail;
    uint32_t queued;
    uint64_t taken, finished; /* items the thread took, and removed */
    uint64_t added;           /* items ever queued */
    uint64_t flush_upto;      /* a flush waits for items up to this many added */
    bool stop;
    pthread_t thread;
    struct cl_destroyed_batch batch; /* the thread's */
};

static int64_t now_ms(void)
{
    return (int64_t)(util_now_mono_ns() / 1000000);
}

static void *reap_main(void *arg)
{
    struct reap *r = arg;
    /* Its MDT calls follow a gather_drain of the file they are about: they
     * need not wait for every byte written behind, which a sender waiting
     * for this queue (a write that met ENOSPC) could hold. */
    wb_pass_behind(true);
    pthread_mutex_lock(&r->lock);
    for (;;) {
        bool due =
            r->head && (r->queued >= PROTO_MAX_DESTROYED || r->stop || r->flush_upto > r->taken ||
                        now_ms() - r->head->at_ms >= REAP_AGE_MS);
        if (!due) {
            if (r->stop)
                break;
            struct timespec ts;
            util_deadline(&ts, CLOCK_MONOTONIC, r->head ? REAP_AGE_MS / 4 : 1000);
            pthread_cond_timedwait(&r->work, &r->lock, &ts);
            continue;
        }
        struct reap_item *batch = NULL, **tail = &batch;
        uint32_t n = 0;
        while (r->head && n < PROTO_MAX_DESTROYED) {
            struct reap_item *it = r->head;
            r->head = it->next;
            it->next = NULL;
            *tail = it;
            tail = &it->next;
            n++;
        }
        if (!r->head)
            r->tail = NULL;
        r->queued -= n;
        r->taken += n;
        pthread_mutex_unlock(&r->lock);
        cl_destroyed_begin(r->fs, &r->batch);
        for (struct reap_item *it = batch, *next; it; it = next) {
            next = it->next;
            cl_destroyed_add(&r->batch, it->ino, it->obj, it->nobj);
            free(it);
        }
        cl_destroyed_end(&r->batch);
        pthread_mutex_lock(&r->lock);
        r->finished += n;
        pthread_cond_broadcast(&r->done);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int reap_start(stria_fs_t *fs)
{
    if (fs->reap)
        return 0;
    struct reap *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->fs = fs;
    pthread_mutex_init(&r->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->work, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&r->done, NULL);
    int rc = pthread_create(&r->thread, NULL, reap_main, r);
    if (rc) {
        pthread_cond_destroy(&r->done);
        pthread_cond_destroy(&r->work);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return -rc;
    }
    fs->reap = r;
    return 0;
}

void reap_later(stria_fs_t *fs, const struct stria_removed *rm)
{
    struct reap *r = fs->reap;
    if (!rm->destroy)
        return;
    size_t nobj = io_objects_of(rm->ino, &rm->layout, NULL, 0);
    struct reap_item *it = NULL;
    if (r && !cl_migrated(&rm->layout) && nobj <= CL_BATCH_OBJECTS)
        it = malloc(sizeof(*it) + nobj * sizeof(it->obj[0]));
    if (!it) {
        cl_destroy(fs, rm);
        return;
    }
    gather_drain(fs, rm->ino); /* or a send would make the objects again */
    it->next = NULL;
    it->ino = rm->ino;
    it->at_ms = now_ms();
    it->nobj = (uint32_t)io_objects_of(rm->ino, &rm->layout, it->obj, nobj);
    pthread_mutex_lock(&r->lock);
    bool room = r->queued < REAP_MAX && !r->stop;
    if (room) {
        if (r->tail)
            r->tail->next = it;
        else
            r->head = it;
        r->tail = it;
        r->queued++;
        r->added++;
        if (r->queued == PROTO_MAX_DESTROYED)
            pthread_cond_signal(&r->work);
    }
    pthread_mutex_unlock(&r->lock);
    if (!room) {
        free(it);
        cl_destroy(fs, rm);
    }
}

unsigned reap_flush(stria_fs_t *fs)
{
    struct reap *r = fs->reap;
    /* The thread waiting for its own queue would wait for ever. */
    if (!r || pthread_equal(pthread_self(), r->thread))
        return 0;
    pthread_mutex_lock(&r->lock);
    uint64_t upto = r->added, from = r->finished;
    if (upto > r->flush_upto) {
        r->flush_upto = upto;
        pthread_cond_signal(&r->work);
    }
    while (r->finished < upto)
        pthread_cond_wait(&r->done, &r->lock);
    pthread_mutex_unlock(&r->lock);
    return upto > from ? (unsigned)(upto - from) : 0;
}

void reap_stop(stria_fs_t *fs)
{
    struct reap *r = fs->reap;
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->stop = true;
    pthread_cond_signal(&r->work);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL); /* it removes what is queued first */
    pthread_cond_destroy(&r->done);
    pthread_cond_destroy(&r->work);
    pthread_mutex_destroy(&r->lock);
    fs->reap = NULL;
    free(r);
}
