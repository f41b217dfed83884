/*
 * Fences and write stamps of the objects of one stria-stord (fence.h).
 *
 * The fences are few (the objects of the files being migrated, and the
 * dead ones of files migrated): a list under a mutex, and a count that
 * keeps the path of every write free of it while there are none. On disk
 * each is a file fence/<inode hex>.<component>.<stripe> of its OST whose
 * text is "<id hex> <dead>", written and synced before the reply.
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

struct fence {
    uint32_t ost, comp, stripe;
    uint64_t ino, id;
    bool dead;
    struct fence *next;
};

struct fences {
    uint64_t instance;
    _Atomic uint64_t stamps[STAMPS];
    pthread_rwlock_t slots[OBJ_LOCKS];
    pthread_mutex_t lock;
    struct fence *list;
    _Atomic uint32_t n;
};

static uint32_t obj_hash(uint32_t ost, uint64_t ino, uint32_t comp, uint32_t stripe)
{
    return (uint32_t)util_mix64(ino ^ ((uint64_t)ost << 40) ^ ((uint64_t)comp << 20) ^ stripe);
}

static struct fence *find(struct fences *f, uint32_t ost, uint64_t ino, uint32_t comp,
                          uint32_t stripe)
{
    for (struct fence *x = f->list; x; x = x->next)
        if (x->ost == ost && x->ino == ino && x->comp == comp && x->stripe == stripe)
            return x;
    return NULL;
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
        *x = (struct fence){o->index, comp, stripe, ino, id, dead != 0, f->list};
        f->list = x;
        f->n++;
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
    for (struct fence *x = f->list, *n; x; x = n) {
        n = x->next;
        free(x);
    }
    free(f);
    s->fences = NULL;
}

int fence_begin(struct stord *s, uint32_t ost, uint64_t ino, uint32_t comp, uint32_t stripe,
                bool write, struct fence_pass *p)
{
    struct fences *f = s->fences;
    p->hash = obj_hash(ost, ino, comp, stripe);
    p->slot = &f->slots[p->hash % OBJ_LOCKS];
    pthread_rwlock_rdlock(p->slot);
    if (!atomic_load(&f->n))
        return 0;
    pthread_mutex_lock(&f->lock);
    struct fence *x = find(f, ost, ino, comp, stripe);
    bool stop = x && (write || x->dead);
    pthread_mutex_unlock(&f->lock);
    if (stop) {
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

/* Set, clear or kill q's fence (under its slot, held exclusively). */
static int change(struct fences *f, struct ost *o, const struct proto_fence_req *q)
{
    pthread_mutex_lock(&f->lock);
    struct fence *x = find(f, q->ost, q->ino, q->comp, q->stripe);
    int rc = 0;
    if (q->op == FENCE_CLEAR) {
        if (x && !x->dead && (q->id == 0 || x->id == q->id || x->id == 0)) {
            if (!(rc = persist(o, x, true))) {
                for (struct fence **pp = &f->list; *pp; pp = &(*pp)->next)
                    if (*pp == x) {
                        *pp = x->next;
                        break;
                    }
                free(x);
                f->n--;
            }
        }
    } else if (x && x->id != q->id && x->id != 0) {
        rc = -EBUSY; /* another migration's */
    } else if (x && x->dead && q->op == FENCE_SET) {
        rc = -ESTALE; /* migrated already */
    } else {
        bool fresh = !x;
        if (fresh && !(x = calloc(1, sizeof(*x)))) {
            rc = -ENOMEM;
        } else {
            struct fence was = fresh ? (struct fence){0} : *x;
            *x = (struct fence){q->ost,
                                q->comp,
                                q->stripe,
                                q->ino,
                                q->id,
                                q->op == FENCE_DEAD || (!fresh && was.dead),
                                fresh ? NULL : x->next};
            if ((rc = persist(o, x, false))) {
                if (fresh)
                    free(x);
                else
                    *x = was;
            } else if (fresh) {
                x->next = f->list;
                f->list = x;
                f->n++;
            }
        }
    }
    pthread_mutex_unlock(&f->lock);
    return rc;
}

int fence_h_fence(void *ctx, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = ctx;
    struct fences *f = s->fences;
    struct proto_fence_req q;
    if (proto_dec_fence_req(&req->dec, &q))
        return -EBADMSG;
    if (q.op < FENCE_STAMP || q.op > FENCE_DEAD)
        return -EINVAL;
    struct ost *o = ost_find(s, q.ost);
    if (!o)
        return -ENXIO;
    uint32_t h = obj_hash(q.ost, q.ino, q.comp, q.stripe);
    pthread_rwlock_t *slot = &f->slots[h % OBJ_LOCKS];
    /* Exclusively: every change of the object that passed its fence
     * check has finished and moved the stamp. */
    pthread_rwlock_wrlock(slot);
    int rc = q.op == FENCE_STAMP ? 0 : change(f, o, &q);
    struct proto_fence_rep r = {.instance = f->instance,
                                .stamp = atomic_load(&f->stamps[h % STAMPS])};
    char name[96];
    proto_obj_name(name, sizeof(name), q.ino, q.comp, q.stripe);
    struct stat st;
    if (!rc && fstatat(o->dirfd, name, &st, 0) == 0) {
        r.exists = 1;
        r.size = (uint64_t)st.st_size;
    } else if (!rc && errno != ENOENT) {
        rc = -errno;
    }
    pthread_rwlock_unlock(slot);
    if (q.op != FENCE_STAMP)
        log_info("OST%04x: fence %s of %016" PRIx64 ".%u.%u (migration %" PRIx64 "): %s", o->index,
                 q.op == FENCE_SET     ? "set"
                 : q.op == FENCE_CLEAR ? "cleared"
                                       : "dead",
                 q.ino, q.comp, q.stripe, q.id, rc ? log_err(rc) : "done");
    return rc ? rc : proto_enc_fence_rep(&rep->enc, &r);
}
