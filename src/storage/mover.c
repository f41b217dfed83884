/*
 * The movers of stria-stord (mover.h): HSM_PULL, S3_LIST, S3_HEAD,
 * S3_DELETE.
 *
 * A pull fills one object from S3, a batch at a time: under the object's
 * pull mutex (one of PULL_LOCKS, by hash) it loads the restore state
 * (hsmstate.h), starting over if the state is missing, damaged or of
 * another etag or geometry; picks the next units the state lacks (whole
 * units, about streams * 8 MiB of them); fetches them by ranged GETs with
 * If-Match (s3_get_many, streams in flight), writes them through ost_write
 * with the chunks' CRC32Cs as a client would, fsyncs the object, and only
 * then sets the units' bits, durably. Between batches the mutex is let go,
 * so a reader's pull of the range it waits for slips in between the
 * batches of a background fill, and never fetches what another pull
 * already made durable.
 *
 * When the object changed in S3 since the import (412 to If-Match), the
 * pull looks once for the version that still has the recorded etag (a
 * versioned bucket keeps it) and reads that version, still with If-Match,
 * for the rest of the pull. Without one it fails as before: the reader
 * gets EIO, never bytes of two versions.
 *
 * Never here: a unit's bit before its bytes are durable; an object taken
 * as restored without a state of the same etag and geometry; a secret in
 * a log line (the S3 client's reasons carry none).
 */
#include "mover.h"

#include "hsmstate.h"

#include "../common/log.h"
#include "../common/util.h"
#include "../proto/csum.h"
#include "../proto/ids.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RANGE_MAX  (8u << 20) /* the largest single GET */
#define PULL_LOCKS 256
#define BATCH_MAX  1024 /* units, and ranges, of one batch */
#define QUEUE_MAX  4096 /* background fills waiting */

/* One object to fill, as a request named it; owned by whoever runs it. */
struct pull {
    uint32_t ost;
    uint64_t ino;
    uint32_t comp;
    struct hsm_geom g;
    struct mover_target mt;
    char key[PROTO_MAX_S3_KEY + 1];
    struct pull *next; /* in the background queue */
};

struct mover {
    struct stord *s;
    unsigned streams;
    pthread_mutex_t locks[PULL_LOCKS];
    pthread_mutex_t qlock;
    pthread_cond_t qcv;
    struct pull *head, *tail;
    unsigned queued;
    atomic_bool stop;
    unsigned nthreads;
    pthread_t *threads;
};

/* What one pull did. */
struct pull_out {
    uint64_t fetched;
    bool complete;
    int s3rc; /* an S3 failure (logged), its reason in err */
    struct s3_err err;
    bool looked;                  /* for a version of the pull's etag, once */
    char version[S3_VERSION_MAX]; /* the one read ("": the current object) */
};

/* A round of ranged GETs, and the buffer they land in. */
struct round {
    unsigned n;
    size_t used;
    uint64_t off[BATCH_MAX], obj[BATCH_MAX];
    size_t len[BATCH_MAX];
    void *buf[BATCH_MAX];
    bool done[BATCH_MAX];
    uint64_t ks[BATCH_MAX];
    uint8_t *data; /* data_cap bytes, made for the first batch that needs them */
    size_t data_cap;
};

int mover_target(struct mover_target *mt, const struct proto_str *endpoint,
                 const struct proto_str *region, const struct proto_str *bucket, uint8_t vhost)
{
    if (proto_str_copy(endpoint, mt->endpoint, sizeof(mt->endpoint)) ||
        proto_str_copy(region, mt->region, sizeof(mt->region)) ||
        proto_str_copy(bucket, mt->bucket, sizeof(mt->bucket)) || !mt->bucket[0])
        return -EINVAL;
    mt->t = (struct s3_target){mt->endpoint, mt->region, mt->bucket, vhost != 0};
    return 0;
}

static pthread_mutex_t *pull_lock(struct mover *m, const struct pull *p)
{
    uint64_t h =
        util_mix64(p->ino ^ ((uint64_t)p->ost << 40) ^ ((uint64_t)p->comp << 20) ^ p->g.stripe);
    return &m->locks[h % PULL_LOCKS];
}

/* The restore state of object name for geometry g into st: the one kept,
 * or (may_start) a new empty one after the object was truncated. An
 * object without a state of this very etag and geometry may hold anything
 * (a release whose client died before destroying it, another version):
 * it never counts. Without may_start such an object is left alone
 * (-ECANCELED): it was destroyed, or taken over, since the pull began. */
static int state_ready(struct ost *o, const char *name, pthread_rwlock_t *lk,
                       const struct hsm_geom *g, bool may_start, struct hsm_state *st)
{
    int rc = hsm_state_load(o->dirfd, name, st);
    bool same = rc == 0 && hsm_geom_same(&st->g, g);
    if (same) {
        struct stat sb;
        if (!st->have || fstatat(o->dirfd, name, &sb, 0) == 0)
            return 0;
        log_warn("restore state of ost=%u object=%s outlived its object: fetched again", o->index,
                 name);
    } else if (rc && rc != -ENOENT && rc != -EUCLEAN) {
        return rc;
    }
    hsm_state_free(st);
    if (!may_start)
        return -ECANCELED;
    if (rc == 0 && !same)
        log_info("restore of ost=%u object=%s starts over: etag or layout changed", o->index, name);
    if ((rc = hsm_state_unlink(o->dirfd, name)) || (rc = ost_truncate(o, name, lk, 0)))
        return rc;
    return hsm_state_create(o->dirfd, name, g, st);
}

/* Write len bytes at object offset off as a client's WRITE would come:
 * with the CRC32C of each chunk, checked and stored by the store. */
static int write_piece(struct stord *s, struct ost *o, const char *name, pthread_rwlock_t *lk,
                       const struct pull *p, uint64_t off, const uint8_t *data, size_t len)
{
    uint8_t crcs[(RANGE_MAX / PROTO_CSUM_BLOCK + 2) * 4];
    struct proto_write_req q = {
        .ost = p->ost, .ino = p->ino, .comp = p->comp, .stripe = p->g.stripe, .offset = off};
    proto_csum_fill(off, data, (uint32_t)len, crcs);
    q.crcs = (struct proto_blob){crcs, 4 * proto_csum_chunks(off, (uint32_t)len)};
    bool writeback = s->writeback_min && len >= s->writeback_min;
    return ost_write(o, name, lk, &q, data, (uint32_t)len, false, writeback);
}

/* The round's ranged GETs, of the pull's version once one is known. */
/* Append to a reason, cut to fit. */
static void err_add(struct s3_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void err_add(struct s3_err *e, const char *fmt, ...)
{
    size_t n = strnlen(e->text, sizeof(e->text) - 1);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->text + n, sizeof(e->text) - n, fmt, ap);
    va_end(ap);
}

static int round_get(struct mover *m, const struct pull *p, struct round *r, struct pull_out *out)
{
    memset(r->done, 0, sizeof(bool) * r->n);
    int rc = s3_get_many(&p->mt.t, p->key, p->g.etag, out->version, r->n, r->off, r->len, r->buf,
                         r->done, m->streams, &out->err);
    if (rc && out->version[0]) {
        /* A version deleted since the listing: the key still has an
         * object, so the file is not lost (which -ENOENT would say). */
        if (rc == -ENOENT)
            rc = -ESTALE;
        err_add(&out->err, " (reading version=%s)", out->version);
    }
    return rc;
}

/* After a 412: the version of p's key that still has the pull's etag into
 * out->version, or -ESTALE with out->err saying why none can be read.
 * Never another errno: a reader must see the object changed, not lost. */
static int find_version(const struct ost *o, const char *name, const struct pull *p,
                        struct pull_out *out)
{
    struct s3_err e = {{0}};
    const char *why;

    out->looked = true;
    int rc = s3_find_version(&p->mt.t, p->key, p->g.etag, out->version, sizeof(out->version), &e);
    if (rc == 0) {
        log_info("restore ost=%u object=%s: s3://%s/%s changed in S3; reading its version=%s "
                 "of etag=%s",
                 o->index, name, p->mt.bucket, p->key, out->version, p->g.etag);
        return 0;
    }
    out->version[0] = '\0';
    if (rc == -EOPNOTSUPP)
        why = "bucket not versioned or the server cannot list versions";
    else if (rc == -ENOENT)
        why = "no version of the key has the imported etag any more";
    else
        why = "the versions could not be listed";
    err_add(&out->err, "; no older version to read: %s (%s)", why, e.text);
    return -ESTALE;
}

/* Fetch the round's ranges and write them into the object. Returns a
 * local failure; an S3 one goes to out. */
static int round_flush(struct mover *m, struct ost *o, const char *name, pthread_rwlock_t *lk,
                       const struct pull *p, struct round *r, struct pull_out *out)
{
    if (!r->n)
        return 0;
    int rc = round_get(m, p, r, out);
    if (rc == -ESTALE && !out->looked && (rc = find_version(o, name, p, out)) == 0)
        rc = round_get(m, p, r, out);
    if (rc) {
        out->s3rc = rc;
        log_error("restore ost=%u object=%s from s3://%s/%s failed: %s", o->index, name,
                  p->mt.bucket, p->key, out->err.text);
        return 0;
    }
    for (unsigned i = 0; i < r->n && !rc; i++) {
        rc = write_piece(m->s, o, name, lk, p, r->obj[i], r->buf[i], r->len[i]);
        out->fetched += r->len[i];
    }
    r->n = 0;
    r->used = 0;
    return rc;
}

/* Fetch units r->ks[0..nk) into the object, in rounds of at most the
 * round's buffer, merging pieces that follow each other in both the file
 * and the object into GETs of up to RANGE_MAX. */
static int fetch_units(struct mover *m, struct ost *o, const char *name, pthread_rwlock_t *lk,
                       const struct pull *p, struct round *r, unsigned nk, size_t cap,
                       struct pull_out *out)
{
    int rc = 0;
    r->n = 0;
    r->used = 0;
    for (unsigned i = 0; i < nk && !rc && !out->s3rc; i++) {
        struct hsm_unit u = hsm_unit_at(&p->g, r->ks[i]);
        for (uint64_t at = 0; at < u.len && !rc && !out->s3rc;) {
            size_t len = (size_t)MIN((uint64_t)RANGE_MAX, u.len - at);
            if (r->n && r->off[r->n - 1] + r->len[r->n - 1] == u.file_off + at &&
                r->obj[r->n - 1] + r->len[r->n - 1] == u.obj_off + at &&
                r->len[r->n - 1] + len <= RANGE_MAX && r->used + len <= cap) {
                r->len[r->n - 1] += len; /* C == 1: the next unit follows on */
            } else {
                if (r->n == BATCH_MAX || r->used + len > cap) {
                    if ((rc = round_flush(m, o, name, lk, p, r, out)) || out->s3rc)
                        break;
                }
                r->off[r->n] = u.file_off + at;
                r->obj[r->n] = u.obj_off + at;
                r->len[r->n] = len;
                r->buf[r->n] = r->data + r->used;
                r->n++;
            }
            r->used += len;
            at += len;
        }
    }
    if (!rc && !out->s3rc)
        rc = round_flush(m, o, name, lk, p, r, out);
    return rc;
}

/* The object's data and checksums on disk (as OSYNC). */
static int sync_object(struct ost *o, const char *name)
{
    struct sums_obj so;
    int rc = sums_open(o->dirfd, name, SUMS_READ, &so);
    if (rc)
        return rc;
    rc = sums_sync(&so);
    sums_close(&so);
    return rc;
}

/* Fill the units [k_lo, k_hi) of p's object that it lacks, batch by
 * batch; may_start: it may start the object over (state_ready). Returns a
 * local failure (logged); S3's go to out. */
static int pull_range(struct mover *m, const struct pull *p, uint64_t k_lo, uint64_t k_hi,
                      bool may_start, struct pull_out *out)
{
    struct stord *s = m->s;
    struct ost *o = ost_find(s, p->ost);
    char name[PROTO_OBJ_NAME_MAX];
    proto_obj_name(name, sizeof(name), p->ino, p->comp, p->g.stripe);
    pthread_rwlock_t *lk = ost_obj_lock(s, p->ost, p->ino, p->comp, p->g.stripe);
    pthread_mutex_t *mu = pull_lock(m, p);
    size_t cap = (size_t)m->streams * RANGE_MAX;
    struct round *r = calloc(1, sizeof(*r));
    int rc = r ? 0 : -ENOMEM;
    for (uint64_t k = k_lo; !rc && !out->s3rc;) {
        pthread_mutex_lock(mu);
        struct hsm_state st;
        if ((rc = state_ready(o, name, lk, &p->g, may_start, &st))) {
            pthread_mutex_unlock(mu);
            break;
        }
        may_start = false;
        out->complete = st.have == st.n;
        unsigned nk = 0;
        uint64_t bytes = 0;
        for (; k < k_hi && nk < BATCH_MAX; k++) {
            if (hsm_bit(st.bitmap, k))
                continue;
            uint64_t len = hsm_unit_at(&p->g, k).len;
            if (nk && bytes + len > cap)
                break;
            r->ks[nk++] = k;
            bytes += len;
        }
        /* A buffer as large as the batch needs, up to cap (a unit larger
         * than cap goes in several rounds). */
        size_t want = (size_t)MIN((uint64_t)cap, bytes);
        if (nk && r->data_cap < want) {
            free(r->data);
            r->data_cap = (r->data = malloc(want)) ? want : 0;
            if (!r->data)
                rc = -ENOMEM;
        }
        if (nk && !rc && !(rc = fetch_units(m, o, name, lk, p, r, nk, r->data_cap, out)) &&
            !out->s3rc && !(rc = sync_object(o, name))) {
            for (unsigned i = 0; i < nk; i++)
                hsm_bit_set(st.bitmap, r->ks[i]);
            st.have += nk;
            if (!(rc = hsm_state_store_bits(o->dirfd, name, &st)))
                out->complete = st.have == st.n;
            else if (rc == -ENOENT && (rc = ost_destroy(o, name, lk)) == 0)
                rc = -ECANCELED; /* destroyed meanwhile: undo what this batch made */
        }
        hsm_state_free(&st);
        pthread_mutex_unlock(mu);
        if (rc || !nk || atomic_load(&m->stop))
            break;
    }
    if (rc == -ECANCELED) {
        log_info("restore of ost=%u object=%s stopped: the object was destroyed", o->index, name);
        rc = 0;
    }
    if (rc)
        log_error("restore ost=%u object=%s from s3://%s/%s failed here: %s", o->index, name,
                  p->mt.bucket, p->key, log_err(rc));
    if (r)
        free(r->data);
    free(r);
    return rc;
}

/* ---- the background fill ---- */

/* Queue p (taken) for a filler, unless its object is queued already. */
static void queue_fill(struct mover *m, struct pull *p)
{
    pthread_mutex_lock(&m->qlock);
    bool dup = false;
    for (struct pull *x = m->head; x && !dup; x = x->next)
        dup = x->ost == p->ost && x->ino == p->ino && x->comp == p->comp &&
              hsm_geom_same(&x->g, &p->g);
    if (!dup && m->nthreads && m->queued < QUEUE_MAX && !atomic_load(&m->stop)) {
        p->next = NULL;
        if (m->tail)
            m->tail->next = p;
        else
            m->head = p;
        m->tail = p;
        m->queued++;
        p = NULL;
        pthread_cond_signal(&m->qcv);
    }
    pthread_mutex_unlock(&m->qlock);
    free(p);
}

static void *filler(void *arg)
{
    struct mover *m = arg;
    pthread_mutex_lock(&m->qlock);
    while (!atomic_load(&m->stop)) {
        struct pull *p = m->head;
        if (!p) {
            pthread_cond_wait(&m->qcv, &m->qlock);
            continue;
        }
        m->head = p->next;
        if (!m->head)
            m->tail = NULL;
        m->queued--;
        pthread_mutex_unlock(&m->qlock);
        struct pull_out out = {0};
        pull_range(m, p, 0, hsm_units(&p->g), false, &out);
        free(p);
        pthread_mutex_lock(&m->qlock);
    }
    pthread_mutex_unlock(&m->qlock);
    return NULL;
}

int mover_start(struct stord *s, unsigned threads, unsigned streams)
{
    struct mover *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->s = s;
    m->streams = streams ? streams : 1;
    for (int i = 0; i < PULL_LOCKS; i++)
        pthread_mutex_init(&m->locks[i], NULL);
    pthread_mutex_init(&m->qlock, NULL);
    pthread_cond_init(&m->qcv, NULL);
    int rc = s3_global_init();
    if (rc) {
        log_error("cannot set up the S3 client: %s", log_err(rc));
        free(m);
        return rc;
    }
    if (threads && !(m->threads = calloc(threads, sizeof(pthread_t)))) {
        free(m);
        return -ENOMEM;
    }
    for (; m->nthreads < threads; m->nthreads++) {
        if ((rc = -pthread_create(&m->threads[m->nthreads], NULL, filler, m))) {
            log_error("cannot start a mover thread: %s", log_err(rc));
            s->mover = m;
            mover_stop(s);
            return rc;
        }
    }
    s->mover = m;
    return 0;
}

void mover_stop(struct stord *s)
{
    struct mover *m = s->mover;
    if (!m)
        return;
    pthread_mutex_lock(&m->qlock);
    atomic_store(&m->stop, true);
    pthread_cond_broadcast(&m->qcv);
    pthread_mutex_unlock(&m->qlock);
    for (unsigned i = 0; i < m->nthreads; i++)
        pthread_join(m->threads[i], NULL);
    while (m->head) {
        struct pull *p = m->head;
        m->head = p->next;
        free(p);
    }
    free(m->threads);
    free(m);
    s->mover = NULL;
}

/* ---- handlers ---- */

/* The reason text of a reply: S3's, or none. */
static struct proto_str why_of(const struct s3_err *err, int s3rc)
{
    return s3rc ? proto_str_c(err->text) : proto_str_c("");
}

int mover_h_pull(void *ctx, struct net_req *req, struct net_rep *rep)
{
    struct stord *s = ctx;
    struct mover *m = s->mover;
    struct proto_hsm_pull_req q;
    if (proto_dec_hsm_pull_req(&req->dec, &q))
        return -EBADMSG;
    if (!ost_find(s, q.ost))
        return -ENXIO;
    struct pull *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    *p = (struct pull){.ost = q.ost, .ino = q.ino, .comp = q.comp};
    p->g = (struct hsm_geom){.file_size = q.file_size,
                             .comp_start = q.comp_start,
                             .stripe_size = q.stripe_size,
                             .stripe_count = q.stripe_count,
                             .stripe = q.stripe};
    if (mover_target(&p->mt, &q.endpoint, &q.region, &q.bucket, q.vhost) ||
        proto_str_copy(&q.key, p->key, sizeof(p->key)) || !p->key[0] ||
        proto_str_copy(&q.etag, p->g.etag, sizeof(p->g.etag)) || !hsm_geom_valid(&p->g)) {
        log_warn("HSM_PULL from %s: malformed target, key, etag or layout", req->peer);
        free(p);
        return -EINVAL;
    }
    uint64_t lo, hi;
    hsm_units_meeting(&p->g, q.offset, q.len, &lo, &hi);
    struct pull_out out = {0};
    int rc = pull_range(m, p, lo, hi, true, &out);
    if (!rc && !out.s3rc && (q.flags & HSM_PULL_ALL))
        rc = pull_range(m, p, 0, hsm_units(&p->g), true, &out);
    if (!rc && !out.s3rc && !out.complete && (q.flags & HSM_PULL_BACKGROUND))
        queue_fill(m, p);
    else
        free(p);
    if (rc)
        return rc;
    struct proto_hsm_pull_rep r = {.complete = out.complete,
                                   .fetched = out.fetched,
                                   .s3err = out.s3rc,
                                   .why = why_of(&out.err, out.s3rc)};
    return proto_enc_hsm_pull_rep(&rep->enc, &r);
}

/* S3_LIST's reply entries, encoded as they come until the reply is full. */
struct list_acc {
    struct proto_enc e;
    bool full;
};

static int list_one(const struct s3_entry *x, void *arg)
{
    struct list_acc *a = arg;
    size_t before = a->e.len;
    struct proto_str key = proto_str_c(x->key), etag = proto_str_c(x->etag ? x->etag : "");
    uint64_t size = x->size;
    int64_t mtime = x->mtime_ns;
    proto_put_STR(&a->e, &key);
    proto_put_U64(&a->e, &size);
    proto_put_I64(&a->e, &mtime);
    proto_put_STR(&a->e, &etag);
    if (!a->e.err)
        return 0;
    a->e.len = before;
    a->e.err = 0;
    a->full = true;
    return 1; /* stops the listing: the rest is for the next request */
}

int mover_h_list(void *ctx, struct net_req *req, struct net_rep *rep)
{
    (void)ctx;
    struct proto_s3_list_req q;
    if (proto_dec_s3_list_req(&req->dec, &q))
        return -EBADMSG;
    struct mover_target mt;
    char prefix[PROTO_MAX_S3_KEY + 1], after[PROTO_MAX_S3_KEY + 1];
    if (q.max < 1 || q.max > 1000 ||
        mover_target(&mt, &q.endpoint, &q.region, &q.bucket, q.vhost) ||
        proto_str_copy(&q.prefix, prefix, sizeof(prefix)) ||
        proto_str_copy(&q.start_after, after, sizeof(after)))
        return -EINVAL;
    /* Room for the rest of the reply: more, s3err, why (<= 512). */
    uint32_t cap = PROTO_MAX_REP_PAYLOAD - 1024;
    uint8_t *buf = net_scratch(req, cap);
    if (!buf)
        return -ENOMEM;
    struct list_acc a = {.full = false};
    proto_enc_init(&a.e, buf, cap);
    struct s3_err err = {{0}};
    bool more = false;
    int rc = s3_list(&mt.t, prefix, after[0] ? after : NULL, q.max, list_one, &a, &more, &err);
    if (rc == 1 && a.full)
        rc = 0, more = true;
    if (rc < 0)
        log_error("list of s3://%s/%s failed: %s", mt.bucket, prefix, err.text);
    struct proto_s3_list_rep r = {.entries = {buf, (uint32_t)a.e.len},
                                  .more = more,
                                  .s3err = rc < 0 ? rc : 0,
                                  .why = why_of(&err, rc < 0 ? rc : 0)};
    return proto_enc_s3_list_rep(&rep->enc, &r);
}

int mover_h_head(void *ctx, struct net_req *req, struct net_rep *rep)
{
    (void)ctx;
    struct proto_s3_head_req q;
    if (proto_dec_s3_head_req(&req->dec, &q))
        return -EBADMSG;
    struct mover_target mt;
    char key[PROTO_MAX_S3_KEY + 1];
    if (mover_target(&mt, &q.endpoint, &q.region, &q.bucket, q.vhost) ||
        proto_str_copy(&q.key, key, sizeof(key)) || !key[0])
        return -EINVAL;
    struct s3_err err = {{0}};
    char etag[S3_ETAG_MAX] = "";
    struct proto_s3_head_rep r = {0};
    int rc = s3_head(&mt.t, key, &r.size, &r.mtime_ns, etag, &err);
    /* A missing object is an answer, not a failure worth a log line. */
    if (rc < 0 && rc != -ENOENT)
        log_error("head of s3://%s/%s failed: %s", mt.bucket, key, err.text);
    r.etag = proto_str_c(rc ? "" : etag);
    r.s3err = rc;
    r.why = why_of(&err, rc);
    return proto_enc_s3_head_rep(&rep->enc, &r);
}

int mover_h_delete(void *ctx, struct net_req *req, struct net_rep *rep)
{
    (void)ctx;
    struct proto_s3_delete_req q;
    if (proto_dec_s3_delete_req(&req->dec, &q))
        return -EBADMSG;
    struct mover_target mt;
    char key[PROTO_MAX_S3_KEY + 1], etag[S3_ETAG_MAX];
    if (mover_target(&mt, &q.endpoint, &q.region, &q.bucket, q.vhost) ||
        proto_str_copy(&q.key, key, sizeof(key)) || !key[0] ||
        proto_str_copy(&q.etag, etag, sizeof(etag)) || !etag[0]) {
        log_warn("S3_DELETE from %s: malformed target, key or etag", req->peer);
        return -EINVAL;
    }
    struct s3_err err = {{0}};
    int rc = s3_delete_if(&mt.t, key, etag, &err);
    if (rc == 0)
        log_info("deleted s3://%s/%s etag=%s (or it was gone)", mt.bucket, key, etag);
    else if (rc == -ESTALE)
        log_info("kept s3://%s/%s: %s", mt.bucket, key, err.text);
    else
        log_error("delete of s3://%s/%s failed: %s", mt.bucket, key, err.text);
    struct proto_s3_delete_rep r = {.s3err = rc, .why = why_of(&err, rc)};
    return proto_enc_s3_delete_rep(&rep->enc, &r);
}
