/*
 * Fences and write stamps of the objects of one stria-stord (fence.h).
 *
 * Every write, read, truncate and punch looks its object up here, so the
 * fences are a hash table by obj_hash() of 64 Ki buckets, a multiple of
 * OBJ_LOCKS: all the fences of a bucket share one slot lock, which the
 * lookup holds anyway (fence_begin), so it takes no other lock and walks
 * one short chain; a change of a bucket holds its slot exclusively. A
 * count keeps every I/O off the buckets while there are no fences at
 * all. An index by OST and inode, under a mutex no I/O takes, finds a
 * file's fences for FORGET and a fan-out directory's for LISTOBJ. On
 * disk each fence is a file fence/<inode hex>.<component>.<stripe> of
 * its OST whose text is "<id hex> <dead>", written and synced before the
 * reply.
 *
 * When a fence goes. A live one goes with its migration: CLEAR when the
 * copy starts again or is undone, or it turns dead after the swap. A
 * dead one lasts as long as its file, because nothing else bounds who
 * may still use the old layout: a handle opened before the swap keeps
 * it as long as it is open (io.c asks for the new layout on each call's
 * -ESTALE, but never replaces the handle's), and without the fence its
 * write would make the destroyed object again (objects are made by their
 * first write) where no reader looks, and its read would find holes.
 * Once the file is gone (its last link went and its objects were
 * destroyed) every layout it had names orphans, and inode numbers are
 * never reused: then FORGET drops every fence of the file, sent to every
 * OST by whoever destroyed its objects (client/migrate.c), or by stria
 * fsck --repair for a file no MDT has (fence_list finds them). A DESTROY
 * of an object never drops fences: the migrator destroys the old objects
 * of a file that lives on, as an undo does the new ones and a release all
 * of them.
 */
#include "fence.h"

#include "../common/log.h"
#include "../common/util.h"
#include "../proto/ids.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STAMPS (1u << 16)
/* A chain of 16 at a million fences; 512 KiB of pointers. */
#define BUCKETS (1u << 16)
_Static_assert(BUCKETS % OBJ_LOCKS == 0, "a bucket's fences must share one slot");

struct fence {
    uint32_t ost, comp, stripe;
    uint64_t ino, id;
    bool dead;
    struct fence *next;     /* in its bucket, under its slot */
    struct fence *ino_next; /* among its inode's, under the index's lock */
};

struct fences {
    uint64_t instance;
    _Atomic uint64_t stamps[STAMPS];
    pthread_rwlock_t slots[OBJ_LOCKS];
    struct fence *buckets[BUCKETS]; /* by obj_hash; each under its slot */
    _Atomic uint32_t n;
    /* The same fences by OST and inode (ino_bucket), for FORGET and
     * LISTOBJ; its lock is taken after a slot, never before. */
    pthread_mutex_t lock;
    struct fence *by_ino[BUCKETS];
};

static uint32_t obj_hash(uint32_t ost, uint64_t ino, uint32_t comp, uint32_t stripe)
{
    return (uint32_t)util_mix64(ino ^ ((uint64_t)ost << 40) ^ ((uint64_t)comp << 20) ^ stripe);
}

static pthread_rwlock_t *slot_of(struct fences *f, uint32_t h)
{
    return &f->slots[h % OBJ_LOCKS];
}

/* The index's bucket of inode ino of OST ost: 256 per fan-out directory
 * of objects, so that a directory's fences are found together. */
static uint32_t ino_bucket(uint32_t ost, uint64_t ino)
{
    return proto_obj_fan(ino) << 8 | (uint32_t)(util_mix64(ino ^ ((uint64_t)ost << 40)) & 0xff);
}
_Static_assert(BUCKETS == 256 * 256, "ino_bucket fills the index");

/* The fence of an object of hash h, or NULL (its slot held). */
static struct fence *find(struct fences *f, uint32_t h, uint32_t ost, uint64_t ino, uint32_t comp,
                          uint32_t stripe)
{
    for (struct fence *x = f->buckets[h % BUCKETS]; x; x = x->next)
        if (x->ost == ost && x->ino == ino && x->comp == comp && x->stripe == stripe)
            return x;
    return NULL;
}

/* Put x in its bucket and the index (its slot held exclusively). */
static void link_fence(struct fences *f, struct fence *x)
{
    struct fence **b = &f->buckets[obj_hash(x->ost, x->ino, x->comp, x->stripe) % BUCKETS];
    x->next = *b;
    *b = x;
    pthread_mutex_lock(&f->lock);
    b = &f->by_ino[ino_bucket(x->ost, x->ino)];
    x->ino_next = *b;
    *b = x;
    pthread_mutex_unlock(&f->lock);
    atomic_fetch_add(&f->n, 1);
}

/* Take x out of its bucket and the index, and free it (its slot held
 * exclusively). */
static void unlink_fence(struct fences *f, struct fence *x)
{
    struct fence **pp = &f->buckets[obj_hash(x->ost, x->ino, x->comp, x->stripe) % BUCKETS];
    while (*pp != x)
        pp = &(*pp)->next;
    *pp = x->next;
    pthread_mutex_lock(&f->lock);
    for (pp = &f->by_ino[ino_bucket(x->ost, x->ino)]; *pp != x;)
        pp = &(*pp)->ino_next;
    *pp = x->ino_next;
    pthread_mutex_unlock(&f->lock);
    atomic_fetch_sub(&f->n, 1);
    free(x);
}

static void fence_name(char *buf, size_t len, uint64_t ino, uint32_t comp, uint32_t stripe)
{
    snprintf(buf, len, "fence/%016" PRIx64 ".%u.%u", ino, comp, stripe);
}

/* Keep x on its OST's disk (dead or not), or forget it there (gone). */
static int persist(struct ost *o, const struct fence *x, bool gone)
{
    char name[64], tmp[72], text[40];
    fence_name(name, sizeof(name), x->ino, x->comp, x->stripe);
    if (gone) {
        if (unlinkat(o->dirfd, name, 0) && errno != ENOENT)
            return -errno;
        return 0;
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp", name);
    int n = snprintf(text, sizeof(text), "%" PRIx64 " %d\n", x->id, x->dead ? 1 : 0);
    int fd = openat(o->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    int rc = write(fd, text, (size_t)n) == n && fsync(fd) == 0 ? 0 : -EIO;
    close(fd);
    if (!rc && renameat(o->dirfd, tmp, o->dirfd, name))
        rc = -errno;
    if (!rc) {
        int dfd = openat(o->dirfd, "fence", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
    return rc;
}

static int load_ost(struct fences *f, struct ost *o)
{
    if (mkdirat(o->dirfd, "fence", 0700) && errno != EEXIST)
        return -errno;
    int dfd = openat(o->dirfd, "fence", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return -errno;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        uint64_t ino, id;
        uint32_t comp, stripe;
        int dead;
        char tail;
        if (sscanf(de->d_name, "%16" SCNx64 ".%u.%u%c", &ino, &comp, &stripe, &tail) != 3)
            continue; /* ".", "..", a .tmp a crash left */
        char text[40] = "";
        int fd = openat(dfd, de->d_name, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n <= 0 || sscanf(text, "%" SCNx64 " %d", &id, &dead) != 2) {
            log_warn("OST%04x: fence %s unreadable: kept as a fence of any migration", o->index,
                     de->d_name);
            id = 0;
            dead = 0;
        }
        struct fence *x = calloc(1, sizeof(*x));
        if (!x) {
            closedir(d);
            return -ENOMEM;
        }
        *x = (struct fence){
            .ost = o->index, .comp = comp, .stripe = stripe, .ino = ino, .id = id, .dead = dead};
        link_fence(f, x); /* alone: no request is served yet */
    }
    closedir(d);
    return 0;
}

int fence_init(struct stord *s)
{
    struct fences *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->instance = util_instance_id();
    for (int i = 0; i < OBJ_LOCKS; i++)
        pthread_rwlock_init(&f->slots[i], NULL);
    pthread_mutex_init(&f->lock, NULL);
    s->fences = f;
    for (int i = 0; i < s->nosts; i++) {
        int rc = load_ost(f, s->osts[i]);
        if (rc) {
            log_error("OST%04x: cannot load its fences: %s", s->osts[i]->index, log_err(rc));
            return rc;
        }
    }
    if (f->n)
        log_info("%u object fence(s) of migrations", (unsigned)f->n);
    return 0;
}

void fence_fini(struct stord *s)
{
    struct fences *f = s->fences;
    if (!f)
        return;
    for (uint32_t b = 0; b < BUCKETS; b++)
        for (struct fence *x = f->buckets[b], *n; x; x = n) {
            n = x->next;
            free(x);
        }
    for (int i = 0; i < OBJ_LOCKS; i++)
        pthread_rwlock_destroy(&f->slots[i]);
    pthread_mutex_destroy(&f->lock);
    free(f);
    s->fences = NULL;
}

int fence_begin(struct stord *s, uint32_t ost, uint64_t ino, uint32_t comp, uint32_t stripe,
                bool write, struct fence_pass *p)
{
    struct fences *f = s->fences;
    p->hash = obj_hash(ost, ino, comp, stripe);
    p->slot = slot_of(f, p->hash);
    pthread_rwlock_rdlock(p->slot);
    if (!atomic_load_explicit(&f->n, memory_order_relaxed))
        return 0; /* and none of this object can come while its slot is held */
    const struct fence *x = find(f, p->hash, ost, ino, comp, stripe);
    if (x && (write || x->dead)) {
        pthread_rwlock_unlock(p->slot);
        return -ESTALE;
    }
    return 0;
}

void fence_end(struct stord *s, struct fence_pass *p, bool changed)
{
    if (changed)
        atomic_fetch_add(&s->fences->stamps[p->hash % STAMPS], 1);
    pthread_rwlock_unlock(p->slot);
}

/* Clear q's fence, unless it is dead or another migration's (its slot
 * held exclusively). */
static int clear(struct fences *f, struct ost *o, struct fence *x, const struct proto_fence_req *q)
{
    if (!x || x->dead || (q->id != 0 && x->id != q->id && x->id != 0))
        return 0;
    int rc = persist(o, x, true);
    if (!rc)
        unlink_fence(f, x);
    return rc;
}

/* Set q's fence, or make it dead (its slot held exclusively). */
static int set(struct fences *f, struct ost *o, struct fence *x, const struct proto_fence_req *q)
{
    if (x && x->id != q->id && x->id != 0)
        return -EBUSY; /* another migration's */
    if (x && x->dead && q->op == FENCE_SET)
        return -ESTALE; /* migrated already */
    struct fence now = {.ost = q->ost,
                        .comp = q->comp,
                        .stripe = q->stripe,
                        .ino = q->ino,
                        .id = q->id,
                        .dead = q->op == FENCE_DEAD || (x && x->dead)};
    /* On disk first: a fence the reply promises outlives a crash. */
    int rc = persist(o, &now, false);
    if (rc)
        return rc;
    if (x) {
        x->id = now.id;
        x->dead = now.dead;
        return 0;
    }
    if (!(x = malloc(sizeof(*x)))) {
        persist(o, &now, true);
        return -ENOMEM;
    }
    *x = now;
    link_fence(f, x);
    return 0;
}

/* STAMP, SET, CLEAR or DEAD of one object of o. */
static int fence_object(struct fences *f, struct ost *o, const struct proto_fence_req *q,
                        struct proto_fence_rep *r)
{
    uint32_t h = obj_hash(q->ost, q->ino, q->comp, q->stripe);
    pthread_rwlock_t *slot = slot_of(f, h);
    /* Exclusively: every change of the object that passed its fence
     * check has finished and moved the stamp. */
    pthread_rwlock_wrlock(slot);
    struct fence *x = find(f, h, q->ost, q->ino, q->comp, q->stripe);
    int rc = q->op == FENCE_STAMP ? 0 : q->op == FENCE_CLEAR ? clear(f, o, x, q) : set(f, o, x, q);
    r->stamp = atomic_load(&f->stamps[h % STAMPS]);
    char name[96];
    proto_obj_name(name, sizeof(name), q->ino, q->comp, q->stripe);
    struct stat st;
    if (!rc && fstatat(o->dirfd, name, &st, 0) == 0) {
        r->exists = 1;
        r->size = (uint64_t)st.st_size;
    } else if (!rc && errno != ENOENT) {
        rc = -errno;
    }
    pthread_rwlock_unlock(slot);
    if (q->op != FENCE_STAMP)
        log_info("OST%04x: fence %s of %016" PRIx64 ".%u.%u (migration %" PRIx64 "): %s", o->index,
                 q->op == FENCE_SET     ? "set"
                 : q->op == FENCE_CLEAR ? "cleared"
                                        : "dead",
                 q->ino, q->comp, q->stripe, q->id, rc ? log_err(rc) : "done");
    return rc;
}

/* The object of a fence of inode ino of OST ost, if there is one. */
static bool first_of(struct fences *f, uint32_t ost, uint64_t ino, uint32_t *comp, uint32_t *stripe)
{
    pthread_mutex_lock(&f->lock);
    struct fence *x = f->by_ino[ino_bucket(ost, ino)];
    while (x && (x->ost != ost || x->ino != ino))
        x = x->ino_next;
    if (x) {
        *comp = x->comp;
        *stripe = x->stripe;
    }
    pthread_mutex_unlock(&f->lock);
    return x != NULL;
}

/* FORGET: file ino is gone, and every fence of it on o with it, on disk
 * first. One at a time, each under its slot, which is taken before the
 * index's lock. Returns how many went, or a negative errno. */
static int forget(struct fences *f, struct ost *o, uint64_t ino)
{
    uint32_t comp, stripe;
    int n = 0;
    while (atomic_load(&f->n) && first_of(f, o->index, ino, &comp, &stripe)) {
        uint32_t h = obj_hash(o->index, ino, comp, stripe);
        pthread_rwlock_wrlock(slot_of(f, h));
        struct fence *x = find(f, h, o->index, ino, comp, stripe); /* or a CLEAR took it */
        int rc = x ? persist(o, x, true) : 0;
        if (x && !rc) {
            unlink_fence(f, x);
            n++;
        }
        pthread_rwlock_unlock(slot_of(f, h));
        if (rc) {
            log_error("OST%04x: fence of %016" PRIx64 ".%u.%u not removed: %s", o->index, ino, comp,
                      stripe, log_err(rc));
            return rc;
        }
    }
    if (n)
        log_info("OST%04x: %d fence(s) of %016" PRIx64 " dropped: its file is gone", o->index, n,
                 ino);
    return n;
}

int fence_apply(struct stord *s, const struct proto_fence_req *q, struct proto_fence_rep *r)
{
    struct fences *f = s->fences;
    if (q->op < FENCE_STAMP || q->op > FENCE_FORGET)
        return -EINVAL;
    struct ost *o = ost_find(s, q->ost);
    if (!o)
        return -ENXIO;
    *r = (struct proto_fence_rep){.instance = f->instance};
    if (q->op != FENCE_FORGET)
        return fence_object(f, o, q, r);
    int n = forget(f, o, q->ino);
    return n < 0 ? n : 0;
}

void fence_list(struct stord *s, const struct ost *o, uint32_t fan, struct proto_enc *e, bool *more)
{
    struct fences *f = s->fences;
    *more = false;
    pthread_mutex_lock(&f->lock);
    for (uint32_t b = fan << 8; b < (fan + 1) << 8 && !*more; b++)
        for (struct fence *x = f->by_ino[b]; x && !*more; x = x->ino_next)
            if (x->ost == o->index)
                *more = !ost_list_put(e, x->ino, x->comp, x->stripe);
    pthread_mutex_unlock(&f->lock);
}

int fence_h_fence(void *ctx, struct net_req *req, struct net_rep *rep)
{
    struct proto_fence_req q;
    struct proto_fence_rep r;
    if (proto_dec_fence_req(&req->dec, &q))
        return -EBADMSG;
    int rc = fence_apply(ctx, &q, &r);
    return rc ? rc : proto_enc_fence_rep(&rep->enc, &r);
}
