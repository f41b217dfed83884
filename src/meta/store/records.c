/*
 * The store's records (store.h): inodes, directory entries, xattrs,
 * symlink targets, intents and pending inodes, their keys and encodings,
 * and what the walk cache is told of each change. Every change is noted in
 * its request's meta_touched (the transaction's meta_req) so that no
 * operation can forget one.
 */
#include "env.h"

#include "../../common/log.h"
#include "../../common/util.h"
#include "wcache.h"
#include "../../proto/layout.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What a batch's own writes (its deferred directories) run for. */
static const struct meta_req no_req;
#define INODE_REC_VERSION 3

static int note(struct meta_txn *t, uint64_t ino);

static uint64_t name_cookie(const char *name, size_t len)
{
    /* 62 bits: cookie + 1 stays positive as a FUSE directory offset, with
     * room below for the offsets of "." and "..". */
    return util_hash64(name, len) >> 2;
}

/* Write the directory records the batch deferred. */
int meta_store_flush_deferred(struct meta_store *s, MDB_txn *txn)
{
    struct meta_txn t = {txn, s, &no_req, false, false, 0};
    int rc = 0;
    s->defer_txn = NULL;
    for (uint32_t i = 0; i < s->ndefer && !rc; i++)
        rc = meta_inode_put(&t, &s->defer[i]);
    s->ndefer = 0;
    return rc;
}

/* Note ino in the request's list; its index there, or -1. */
static int note(struct meta_txn *t, uint64_t ino)
{
    struct meta_touched *m = t->req->touched;
    if (!m)
        return -1;
    for (uint32_t i = 0; i < m->n; i++)
        if (m->ino[i] == ino) {
            m->wseq[i] = t->store->wseq;
            return (int)i;
        }
    if (m->n < META_TOUCHED_MAX) {
        m->has_attr[m->n] = false;
        m->wseq[m->n] = t->store->wseq;
        m->ino[m->n++] = ino;
        return (int)m->n - 1;
    }
    m->overflow = true;
    return -1;
}

void meta_inode_attr(const struct meta_inode *in, struct proto_attr *a)
{
    a->ino = in->ino;
    a->mode = in->mode;
    /* A striped directory's subdirectories are counted per shard; like
     * btrfs, it says 1 ("not counted") rather than a part of the count. */
    a->nlink = S_ISDIR(in->mode) && in->dstripe ? 1 : in->nlink;
    a->uid = in->uid;
    a->gid = in->gid;
    a->size = in->size;
    a->blocks = (in->size + 511) / 512;
    a->atime_ns = in->atime_ns;
    a->mtime_ns = in->mtime_ns;
    a->ctime_ns = in->ctime_ns;
    a->rdev = in->rdev;
    a->dstripe = in->dstripe;
}

/* Call fn on every record of dbi in key order; a non-zero return stops the
 * walk and is returned. */
static int walk_db(struct meta_txn *t, MDB_dbi dbi,
                   int (*fn)(void *arg, const MDB_val *k, const MDB_val *v), void *arg)
{
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, dbi, &cur));
    if (rc)
        return rc;
    MDB_val k, v;
    int mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    while (mrc == 0 && (rc = fn(arg, &k, &v)) == 0)
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    mdb_cursor_close(cur);
    if (rc == 0 && mrc != MDB_NOTFOUND)
        rc = mdb_err(mrc);
    return rc;
}

/* Get or delete the record under a 64-bit key (big-endian, so keys sort
 * as numbers). */
static int get_u64(struct meta_txn *t, MDB_dbi dbi, uint64_t key, MDB_val *val)
{
    uint8_t kb[8];
    be64(kb, key);
    MDB_val k = {8, kb};
    return mdb_err(mdb_get(t->txn, dbi, &k, val));
}

/* Every change to the store goes through del_rec or put_rec, which mark
 * the transaction written (run_batch must know). */
static int del_rec(struct meta_txn *t, MDB_dbi dbi, const void *key, size_t klen)
{
    MDB_val k = {klen, (void *)key};
    t->wrote = true;
    return mdb_err(mdb_del(t->txn, dbi, &k, NULL));
}

static int del_u64(struct meta_txn *t, MDB_dbi dbi, uint64_t key)
{
    uint8_t kb[8];
    be64(kb, key);
    return del_rec(t, dbi, kb, 8);
}

/* With MDB_NOOVERWRITE, a key already there is -EEXIST, changes nothing,
 * and leaves the record found in *old (if old). */
static int put_rec_old(struct meta_txn *t, MDB_dbi dbi, const void *key, size_t klen,
                       const void *val, size_t vlen, unsigned flags, MDB_val *old)
{
    MDB_val k = {klen, (void *)key}, v = {vlen, (void *)val};
    int rc = mdb_put(t->txn, dbi, &k, &v, flags);
    if (rc != MDB_KEYEXIST)
        t->wrote = true; /* any other failure spoils the transaction */
    else if (old)
        *old = v;
    return mdb_err(rc);
}

static int put_rec(struct meta_txn *t, MDB_dbi dbi, const void *key, size_t klen, const void *val,
                   size_t vlen, unsigned flags)
{
    return put_rec_old(t, dbi, key, klen, val, vlen, flags, NULL);
}

static int put_u64(struct meta_txn *t, MDB_dbi dbi, uint64_t key, const void *val, size_t vlen)
{
    uint8_t kb[8];
    be64(kb, key);
    return put_rec(t, dbi, kb, 8, val, vlen, 0);
}

int meta_inode_decode(const void *buf, size_t len, struct meta_inode *out)
{
    struct proto_dec d;
    proto_dec_init(&d, buf, len);
    uint8_t ver;
    meta_inode_clear(out);
    proto_get_U8(&d, &ver);
    proto_get_U64(&d, &out->ino);
    proto_get_U32(&d, &out->mode);
    proto_get_U32(&d, &out->uid);
    proto_get_U32(&d, &out->gid);
    proto_get_U32(&d, &out->nlink);
    proto_get_U64(&d, &out->size);
    proto_get_I64(&d, &out->atime_ns);
    proto_get_I64(&d, &out->mtime_ns);
    proto_get_I64(&d, &out->ctime_ns);
    proto_get_U64(&d, &out->rdev);
    proto_get_U32(&d, &out->flags);
    proto_get_U64(&d, &out->parent);
    proto_get_I32(&d, &out->dcount);
    proto_get_U32(&d, &out->dsize);
    proto_get_I32(&d, &out->doffset);
    if (S_ISREG(out->mode))
        proto_get_LAYOUT(&d, &out->layout);
    /* Version 2 added the stripe of a directory over MDTs, version 3 its
     * composite default layout (a template, every component pending). */
    if (ver >= 2 && S_ISDIR(out->mode)) {
        proto_get_U64(&d, &out->dstripe);
        proto_get_U64(&d, &out->ddefault);
        /* Version 2 writes the owner of a seal only when there is one. */
        if (ver >= 3 || (!d.err && d.off < d.len))
            proto_get_U64(&d, &out->seal);
        if (ver >= 3)
            proto_get_LAYOUT(&d, &out->layout);
    }
    if (d.err || ver < 1 || ver > INODE_REC_VERSION || !proto_ds_valid(out->dstripe))
        return -EUCLEAN;
    return 0;
}

/* Note in the request's list that in changed, and to what. */
static void note_attr(struct meta_txn *t, const struct meta_inode *in)
{
    int i = note(t, in->ino);
    if (i >= 0) {
        meta_inode_attr(in, &t->req->touched->attr[i]);
        t->req->touched->has_attr[i] = true;
    }
}

/* The batch's deferred record of ino, or NULL. */
static struct meta_inode *deferred(struct meta_txn *t, uint64_t ino)
{
    struct meta_store *s = t->store;
    if (s->defer_txn != t->txn)
        return NULL;
    for (uint32_t i = 0; i < s->ndefer; i++)
        if (s->defer[i].ino == ino)
            return &s->defer[i];
    return NULL;
}

/* Copy a directory's record: its layout is its default's template, at
 * most a few components (struct layout is 4 KiB at full size). */
static void dir_copy(struct meta_inode *to, const struct meta_inode *from)
{
    memcpy(to, from, offsetof(struct meta_inode, layout));
    layout_copy(&to->layout, &from->layout);
}

/* The record of ino leaves the deferred ones (a put or delete supersedes). */
static void undefer(struct meta_txn *t, uint64_t ino)
{
    struct meta_inode *d = deferred(t, ino);
    if (d) {
        struct meta_store *s = t->store;
        dir_copy(d, &s->defer[--s->ndefer]);
    }
}

static void dir_sum(const struct meta_inode *in, struct wcache_dir *d)
{
    d->ino = in->ino;
    d->parent = in->parent;
    d->dstripe = in->dstripe;
    d->mode = in->mode;
    d->uid = in->uid;
    d->gid = in->gid;
}

static bool same_sum(const struct wcache_dir *a, const struct wcache_dir *b)
{
    return a->ino == b->ino && a->parent == b->parent && a->dstripe == b->dstripe &&
           a->mode == b->mode && a->uid == b->uid && a->gid == b->gid;
}

/* Before the leader writes directory record in: tell the walk cache if
 * what walks see of it changes. When the cache holds nothing of it, the
 * record on disk says what a reader might be about to add. */
static void wc_dir_put(struct meta_txn *t, const struct meta_inode *in)
{
    if (!S_ISDIR(in->mode))
        return;
    struct wcache *wc = t->store->wc;
    struct wcache_dir now, was;
    dir_sum(in, &now);
    if (wcache_peek_dir(wc, in->ino, &was)) {
        if (!same_sum(&was, &now))
            wcache_changed_dir(wc, in->ino);
        return;
    }
    struct meta_inode old;
    MDB_val v;
    int rc = get_u64(t, t->store->inodes, in->ino, &v);
    if (rc == -ENOENT)
        return; /* a new directory: nothing was known of it */
    if (rc == 0 && meta_inode_decode(v.mv_data, v.mv_size, &old) == 0 && S_ISDIR(old.mode)) {
        dir_sum(&old, &was);
        if (same_sum(&was, &now))
            return;
    }
    wcache_changed_dir(wc, in->ino);
}

/* The record a summary stands for, zero but for what it holds. */
static void dir_unsum(const struct wcache_dir *d, struct meta_inode *in)
{
    meta_inode_clear(in);
    in->ino = d->ino;
    in->parent = d->parent;
    in->dstripe = d->dstripe;
    in->mode = d->mode;
    in->uid = d->uid;
    in->gid = d->gid;
}

int meta_walk_dir(struct meta_txn *t, uint64_t ino, struct meta_inode *out, bool *full)
{
    struct wcache_dir d;
    if (wcache_dir(t->store->wc, ino, &d)) {
        dir_unsum(&d, out);
        *full = false;
        return 0;
    }
    *full = true;
    int rc = meta_inode_get(t, ino, out);
    if (rc == 0 && S_ISDIR(out->mode)) {
        dir_sum(out, &d);
        wcache_add_dir(t->store->wc, t->reader, t->wc_gen, &d);
    }
    return rc;
}

void meta_store_wcache_counts(struct meta_store *s, uint64_t *hits, uint64_t *drops)
{
    wcache_counts(s->wc, hits, drops);
}

int meta_dir_touched(struct meta_txn *t, const struct meta_inode *dir)
{
    struct meta_store *s = t->store;
    struct meta_inode *d = deferred(t, dir->ino);
    if (!S_ISDIR(dir->mode) || (!d && (s->defer_txn != t->txn || s->ndefer == DEFER_MAX)))
        return meta_inode_put(t, dir);
    wc_dir_put(t, dir);
    if (!d)
        d = &s->defer[s->ndefer++];
    dir_copy(d, dir);
    note_attr(t, dir);
    t->wrote = true;
    return 0;
}

int meta_inode_get(struct meta_txn *t, uint64_t ino, struct meta_inode *out)
{
    const struct meta_inode *d = deferred(t, ino);
    if (d) {
        dir_copy(out, d);
        return 0;
    }
    MDB_val v;
    int rc = get_u64(t, t->store->inodes, ino, &v);
    if (rc)
        return rc;
    if (meta_inode_decode(v.mv_data, v.mv_size, out) || out->ino != ino) {
        log_error("MDT%04x inode %llx: corrupt record", t->store->mdt, (unsigned long long)ino);
        return -EUCLEAN;
    }
    return 0;
}

int meta_inode_encode(const struct meta_inode *in, void *buf, size_t cap)
{
    struct proto_enc e;
    uint8_t ver = INODE_REC_VERSION;
    proto_enc_init(&e, buf, cap);
    proto_put_U8(&e, &ver);
    proto_put_U64(&e, &in->ino);
    proto_put_U32(&e, &in->mode);
    proto_put_U32(&e, &in->uid);
    proto_put_U32(&e, &in->gid);
    proto_put_U32(&e, &in->nlink);
    proto_put_U64(&e, &in->size);
    proto_put_I64(&e, &in->atime_ns);
    proto_put_I64(&e, &in->mtime_ns);
    proto_put_I64(&e, &in->ctime_ns);
    proto_put_U64(&e, &in->rdev);
    proto_put_U32(&e, &in->flags);
    proto_put_U64(&e, &in->parent);
    proto_put_I32(&e, &in->dcount);
    proto_put_U32(&e, &in->dsize);
    proto_put_I32(&e, &in->doffset);
    if (S_ISREG(in->mode))
        proto_put_LAYOUT(&e, &in->layout);
    if (S_ISDIR(in->mode)) {
        proto_put_U64(&e, &in->dstripe);
        proto_put_U64(&e, &in->ddefault);
        proto_put_U64(&e, &in->seal);
        proto_put_LAYOUT(&e, &in->layout);
    }
    return e.err ? e.err : (int)e.len;
}

int meta_inode_put(struct meta_txn *t, const struct meta_inode *in)
{
    uint8_t buf[META_INODE_REC_MAX];
    int len = meta_inode_encode(in, buf, sizeof(buf));
    if (len < 0)
        return len;
    wc_dir_put(t, in);
    undefer(t, in->ino);
    note_attr(t, in);
    return put_u64(t, t->store->inodes, in->ino, buf, (size_t)len);
}

int meta_inode_del(struct meta_txn *t, uint64_t ino)
{
    int i = note(t, ino);
    if (i >= 0)
        t->req->touched->has_attr[i] = false;
    /* Only a cached directory's deletion is reported: a reader may still
     * add an uncached one's summary from an older snapshot, but a deleted
     * directory was empty, so a walk through it ends in ENOENT. */
    struct wcache_dir was;
    if (wcache_peek_dir(t->store->wc, ino, &was))
        wcache_changed_dir(t->store->wc, ino);
    undefer(t, ino);
    return del_u64(t, t->store->inodes, ino);
}

int meta_alloc_ino(struct meta_txn *t, uint64_t *ino)
{
    struct meta_store *s = t->store;
    /* Only write transactions of a batch allocate; reserve_inos ran. */
    if (s->ino_next >= s->ino_limit)
        return -ENOSPC;
    *ino = proto_ino_make(s->mdt, s->ino_next++);
    return 0;
}

static size_t dentry_key(uint8_t *kb, uint64_t parent, const char *name, size_t len)
{
    be64(kb, parent);
    be64(kb + 8, name_cookie(name, len));
    memcpy(kb + 16, name, len);
    return 16 + len;
}

int meta_dentry_get(struct meta_txn *t, uint64_t parent, const char *name, uint64_t *ino,
                    uint8_t *type)
{
    uint8_t kb[16 + PROTO_MAX_NAME];
    size_t len = strlen(name);
    if (len > PROTO_MAX_NAME)
        return -ENAMETOOLONG;
    MDB_val k = {dentry_key(kb, parent, name, len), kb}, v;
    int rc = mdb_err(mdb_get(t->txn, t->store->dentries, &k, &v));
    if (rc)
        return rc;
    if (v.mv_size != 9)
        return -EUCLEAN;
    *ino = rd_be64(v.mv_data);
    if (type)
        *type = ((uint8_t *)v.mv_data)[8];
    return 0;
}

/* Does an entry's value name a directory (or is it one nobody can read,
 * which a walk-cache fact may still stand for)? */
static bool names_dir(const MDB_val *v)
{
    return v->mv_size != 9 || ((const uint8_t *)v->mv_data)[8] == DT_DIR;
}

int meta_walk_name(struct meta_txn *t, uint64_t dir, const char *name, uint64_t *ino, uint8_t *type)
{
    struct wcache *wc = t->store->wc;
    size_t len = strlen(name);
    if (wcache_name(wc, dir, name, len, ino)) {
        *type = DT_DIR;
        return 0;
    }
    int rc = meta_dentry_get(t, dir, name, ino, type);
    if (rc == 0 && *type == DT_DIR)
        wcache_add_name(wc, t->reader, t->wc_gen, dir, name, len, *ino);
    return rc;
}

static int dentry_put(struct meta_txn *t, uint64_t parent, const char *name, uint64_t ino,
                      uint8_t type, unsigned flags, MDB_val *old)
{
    uint8_t kb[16 + PROTO_MAX_NAME], vb[9];
    size_t len = strlen(name);
    if (len > PROTO_MAX_NAME)
        return -ENAMETOOLONG;
    be64(vb, ino);
    vb[8] = type;
    note(t, parent);
    size_t klen = dentry_key(kb, parent, name, len);
    if (flags & MDB_NOOVERWRITE) /* adding a name never changes a walk-cache fact */
        return put_rec_old(t, t->store->dentries, kb, klen, vb, 9, flags, old);
    /* Replacing one: through a cursor, to see what it named in the same
     * search. */
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, t->store->dentries, &cur));
    if (rc)
        return rc;
    MDB_val k = {klen, kb}, v, nv = {9, vb};
    int found = mdb_cursor_get(cur, &k, &v, MDB_SET);
    if (found == 0 && names_dir(&v))
        wcache_changed_name(t->store->wc, parent, name, len);
    t->wrote = true;
    rc = mdb_err(mdb_cursor_put(cur, &k, &nv, found == 0 ? MDB_CURRENT : 0));
    mdb_cursor_close(cur);
    return rc;
}

int meta_dentry_add(struct meta_txn *t, uint64_t parent, const char *name, uint64_t ino,
                    uint8_t type)
{
    return dentry_put(t, parent, name, ino, type, MDB_NOOVERWRITE, NULL);
}

int meta_dentry_add_or_get(struct meta_txn *t, uint64_t parent, const char *name, uint64_t *ino,
                           uint8_t type)
{
    MDB_val old;
    int rc = dentry_put(t, parent, name, *ino, type, MDB_NOOVERWRITE, &old);
    if (rc != -EEXIST)
        return rc;
    if (old.mv_size != 9)
        return -EUCLEAN;
    *ino = rd_be64(old.mv_data);
    return 1;
}

int meta_dentry_set(struct meta_txn *t, uint64_t parent, const char *name, uint64_t ino,
                    uint8_t type)
{
    return dentry_put(t, parent, name, ino, type, 0, NULL);
}

int meta_dentry_del(struct meta_txn *t, uint64_t parent, const char *name)
{
    uint8_t kb[16 + PROTO_MAX_NAME];
    size_t len = strlen(name);
    if (len > PROTO_MAX_NAME)
        return -ENAMETOOLONG;
    note(t, parent);
    /* Through a cursor, to see what the entry named (one search, as
     * mdb_del makes): removing a directory's entry changes a fact of the
     * walk cache. */
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, t->store->dentries, &cur));
    if (rc)
        return rc;
    MDB_val k = {dentry_key(kb, parent, name, len), kb}, v;
    if ((rc = mdb_err(mdb_cursor_get(cur, &k, &v, MDB_SET))) == 0) {
        if (names_dir(&v))
            wcache_changed_name(t->store->wc, parent, name, len);
        t->wrote = true;
        rc = mdb_err(mdb_cursor_del(cur, 0));
    }
    mdb_cursor_close(cur);
    return rc;
}

int meta_dir_iterate(struct meta_txn *t, uint64_t dir, uint64_t cookie, meta_dirent_cb cb,
                     void *arg)
{
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, t->store->dentries, &cur));
    if (rc)
        return rc;
    uint8_t kb[16];
    be64(kb, dir);
    be64(kb + 8, cookie);
    MDB_val k = {16, kb}, v;
    int mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (mrc == 0) {
        if (k.mv_size < 17 || rd_be64(k.mv_data) != dir)
            break;
        if (v.mv_size != 9) {
            rc = -EUCLEAN;
            break;
        }
        const uint8_t *kp = k.mv_data;
        rc = cb(arg, rd_be64(v.mv_data), ((uint8_t *)v.mv_data)[8], (const char *)kp + 16,
                k.mv_size - 16, rd_be64(kp + 8) + 1);
        if (rc)
            break;
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    if (rc == 1)
        rc = 0;
    if (rc == 0 && mrc && mrc != MDB_NOTFOUND)
        rc = mdb_err(mrc);
    return rc;
}

static int first_entry_cb(void *arg, uint64_t ino, uint8_t type, const char *name, size_t len,
                          uint64_t next)
{
    (void)ino, (void)type, (void)name, (void)len, (void)next;
    *(int *)arg = 0;
    return 1;
}

int meta_dir_is_empty(struct meta_txn *t, uint64_t dir)
{
    int empty = 1;
    int rc = meta_dir_iterate(t, dir, 0, first_entry_cb, &empty);
    return rc ? rc : empty;
}

struct scan_arg {
    struct meta_txn *t;
    union {
        meta_scan_dentry_cb dentry;
        meta_scan_inode_cb inode;
        meta_scan_intent_cb intent;
        int (*pending)(void *arg, uint64_t ino);
    } cb;
    void *arg;
    struct meta_inode *in;
};

static int dentry_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    struct scan_arg *a = arg;
    char name[PROTO_MAX_NAME + 1];
    if (k->mv_size < 17 || k->mv_size > 16 + PROTO_MAX_NAME || v->mv_size != 9)
        return -EUCLEAN;
    memcpy(name, (const uint8_t *)k->mv_data + 16, k->mv_size - 16);
    name[k->mv_size - 16] = '\0';
    return a->cb.dentry(a->arg, rd_be64(k->mv_data), name, rd_be64(v->mv_data),
                        ((const uint8_t *)v->mv_data)[8]);
}

int meta_dentry_scan(struct meta_txn *t, meta_scan_dentry_cb cb, void *arg)
{
    struct scan_arg a = {.t = t, .cb.dentry = cb, .arg = arg};
    return walk_db(t, t->store->dentries, dentry_rec, &a);
}

static int inode_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    struct scan_arg *a = arg;
    (void)v;
    if (k->mv_size != 8)
        return -EUCLEAN;
    uint64_t ino = rd_be64(k->mv_data);
    /* Decoded through the one reader, which reports corruption. */
    int grc = meta_inode_get(a->t, ino, a->in);
    return a->cb.inode(a->arg, ino, grc == 0 ? a->in : NULL);
}

int meta_inode_scan(struct meta_txn *t, meta_scan_inode_cb cb, void *arg)
{
    struct scan_arg a = {.t = t, .cb.inode = cb, .arg = arg, .in = malloc(sizeof(*a.in))};
    int rc = a.in ? walk_db(t, t->store->inodes, inode_rec, &a) : -ENOMEM;
    free(a.in);
    return rc;
}

static size_t xattr_key(uint8_t *kb, uint64_t ino, const char *name)
{
    size_t len = strlen(name);
    be64(kb, ino);
    memcpy(kb + 8, name, len);
    return 8 + len;
}

int meta_xattr_get(struct meta_txn *t, uint64_t ino, const char *name, MDB_val *val)
{
    uint8_t kb[8 + PROTO_MAX_NAME];
    if (strlen(name) > PROTO_MAX_NAME)
        return -ERANGE;
    MDB_val k = {xattr_key(kb, ino, name), kb};
    return mdb_err(mdb_get(t->txn, t->store->xattrs, &k, val));
}

int meta_xattr_put(struct meta_txn *t, uint64_t ino, const char *name, const void *v, size_t len)
{
    uint8_t kb[8 + PROTO_MAX_NAME];
    if (strlen(name) > PROTO_MAX_NAME)
        return -ERANGE;
    return put_rec(t, t->store->xattrs, kb, xattr_key(kb, ino, name), v, len, 0);
}

int meta_xattr_del(struct meta_txn *t, uint64_t ino, const char *name)
{
    uint8_t kb[8 + PROTO_MAX_NAME];
    if (strlen(name) > PROTO_MAX_NAME)
        return -ERANGE;
    return del_rec(t, t->store->xattrs, kb, xattr_key(kb, ino, name));
}

static int xattr_walk(struct meta_txn *t, uint64_t ino, bool del,
                      int (*cb)(void *arg, const char *name, size_t len), void *arg)
{
    MDB_cursor *cur;
    int rc = mdb_err(mdb_cursor_open(t->txn, t->store->xattrs, &cur));
    if (rc)
        return rc;
    uint8_t kb[8];
    be64(kb, ino);
    MDB_val k = {8, kb}, v;
    int mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (mrc == 0 && k.mv_size > 8 && rd_be64(k.mv_data) == ino) {
        if (del) {
            /* Re-seek after each delete rather than trust the cursor. */
            t->wrote = true;
            if ((rc = mdb_err(mdb_cursor_del(cur, 0))))
                break;
            k.mv_size = 8;
            k.mv_data = kb;
            mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
            continue;
        }
        if ((rc = cb(arg, (const char *)k.mv_data + 8, k.mv_size - 8)))
            break;
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return rc;
}

int meta_xattr_list(struct meta_txn *t, uint64_t ino,
                    int (*cb)(void *arg, const char *name, size_t len), void *arg)
{
    return xattr_walk(t, ino, false, cb, arg);
}

int meta_xattr_del_all(struct meta_txn *t, uint64_t ino)
{
    return xattr_walk(t, ino, true, NULL, NULL);
}

int meta_symlink_get(struct meta_txn *t, uint64_t ino, MDB_val *target)
{
    return get_u64(t, t->store->links, ino, target);
}

int meta_symlink_put(struct meta_txn *t, uint64_t ino, const char *target, size_t len)
{
    return put_u64(t, t->store->links, ino, target, len);
}

int meta_symlink_del(struct meta_txn *t, uint64_t ino)
{
    int rc = del_u64(t, t->store->links, ino);
    return rc == -ENOENT ? 0 : rc;
}

int meta_intent_put(struct meta_txn *t, uint64_t txid, const void *rec, size_t len)
{
    return put_u64(t, t->store->intents, txid, rec, len);
}

int meta_intent_get(struct meta_txn *t, uint64_t txid, MDB_val *val)
{
    return get_u64(t, t->store->intents, txid, val);
}

int meta_intent_del(struct meta_txn *t, uint64_t txid)
{
    return del_u64(t, t->store->intents, txid);
}

static int intent_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    struct scan_arg *a = arg;
    return k->mv_size == 8 ? a->cb.intent(a->arg, rd_be64(k->mv_data), v->mv_data, v->mv_size)
                           : -EUCLEAN;
}

int meta_intent_scan(struct meta_txn *t, meta_scan_intent_cb cb, void *arg)
{
    struct scan_arg a = {.t = t, .cb.intent = cb, .arg = arg};
    return walk_db(t, t->store->intents, intent_rec, &a);
}

int meta_pending_put(struct meta_txn *t, uint64_t ino)
{
    return put_u64(t, t->store->pending, ino, "", 0);
}

int meta_pending_del(struct meta_txn *t, uint64_t ino)
{
    int rc = del_u64(t, t->store->pending, ino);
    return rc == -ENOENT ? 0 : rc;
}

int meta_pending_has(struct meta_txn *t, uint64_t ino)
{
    MDB_val v;
    int rc = get_u64(t, t->store->pending, ino, &v);
    return rc == 0 ? 1 : rc == -ENOENT ? 0 : rc;
}

static int pending_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    struct scan_arg *a = arg;
    (void)v;
    return k->mv_size == 8 ? a->cb.pending(a->arg, rd_be64(k->mv_data)) : 0;
}

int meta_pending_scan(struct meta_txn *t, int (*cb)(void *arg, uint64_t ino), void *arg)
{
    struct scan_arg a = {.t = t, .cb.pending = cb, .arg = arg};
    return walk_db(t, t->store->pending, pending_rec, &a);
}
