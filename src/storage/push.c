/*
 * HSM_PUSH (push.h): the export of a file's bytes to S3 from a storage
 * host. A part's stripe units live on several OSTs, most of them on other
 * hosts, so the stord reads them as any client would: through an embedded
 * libstria of its own cluster (the static stria_client), configured by a
 * client.conf it writes at start and connected at the first push that
 * needs it. The bytes are read in pieces into one buffer of at most
 * PUSH_MAX_PART, summed with MD5 on the way (the reply's md5, which the
 * caller checks against S3's etag), and sent as one part or one object.
 *
 * Never here: a secret in a log line or a reply (the S3 client's reasons
 * carry none); a part larger than PUSH_MAX_PART in memory.
 */
#include "push.h"

#include "mover.h"

#include "../client/io.h"
#include "../common/daemon.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../proto/layout.h"

#include <stria/stria.h>

#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define READ_PIECE (16u << 20) /* one io_rw */
#define MAX_PARTS  10000u

/* The embedded client, one per process. */
static struct {
    pthread_mutex_t lock;
    char conf[4200];
    stria_fs_t *fs;
} P = {.lock = PTHREAD_MUTEX_INITIALIZER};

int push_start(struct stord *s, const char *mgmt_host, uint16_t mgmt_port, const char *key_path)
{
    if (!s->nosts)
        return 0;
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/hsm", s->osts[0]->path);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        int rc = -errno;
        log_error("cannot create %s for the movers' client: %s", dir, log_err(rc));
        return rc;
    }
    if ((size_t)snprintf(P.conf, sizeof(P.conf), "%s/client.conf", dir) >= sizeof(P.conf))
        return -ENAMETOOLONG;
    return daemon_client_conf(P.conf, "stria-stord's movers (HSM_PUSH reads files through it)",
                              mgmt_host, mgmt_port, key_path);
}

void push_stop(void)
{
    pthread_mutex_lock(&P.lock);
    if (P.fs)
        stria_disconnect(P.fs);
    P.fs = NULL;
    pthread_mutex_unlock(&P.lock);
}

/* The embedded client, connected at the first call. */
static int client(stria_fs_t **fs)
{
    int rc = 0;
    pthread_mutex_lock(&P.lock);
    if (!P.fs && !P.conf[0])
        rc = -ENXIO; /* no OST, no client.conf */
    else if (!P.fs && (rc = stria_connect(P.conf, &P.fs)))
        log_error("movers: cannot connect to the cluster with %s: %s", P.conf, log_err(rc));
    *fs = P.fs;
    pthread_mutex_unlock(&P.lock);
    return rc;
}

/* Read file ino's [off, off + len) into buf and its MD5 into md5. */
static int read_file(uint64_t ino, const struct layout *l, uint64_t off, size_t len, uint8_t *buf,
                     uint8_t md5[16])
{
    stria_fs_t *fs;
    int rc = client(&fs);
    if (rc)
        return rc;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || !EVP_DigestInit_ex(ctx, EVP_md5(), NULL)) {
        EVP_MD_CTX_free(ctx);
        return -ENOMEM;
    }
    for (size_t at = 0; at < len && !rc;) {
        size_t n = MIN((size_t)READ_PIECE, len - at);
        if (!(rc = io_rw(fs, ino, l, false, buf + at, n, off + at)) &&
            !EVP_DigestUpdate(ctx, buf + at, n))
            rc = -EIO;
        at += n;
    }
    unsigned mdlen = 0;
    if (!rc && !EVP_DigestFinal_ex(ctx, md5, &mdlen))
        rc = -EIO;
    EVP_MD_CTX_free(ctx);
    if (rc)
        log_error("export: cannot read ino=%" PRIx64 " [%" PRIu64 ", +%zu) through the cluster: %s",
                  ino, off, len, log_err(rc));
    return rc;
}

/* COMPLETE's parts, repeated {U32 number, STR etag}, into parts[] with
 * their etags copied into tags (S3_ETAG_MAX each). Returns the count, or
 * -EINVAL if malformed. */
static int parts_decode(const struct proto_blob *b, struct s3_part **parts, char **tags)
{
    struct proto_dec d;
    proto_dec_init(&d, b->p, b->len);
    unsigned n = 0, cap = 0;
    *parts = NULL;
    *tags = NULL;
    int rc = 0;
    while (d.off < d.len && !rc) {
        uint32_t num;
        struct proto_str et;
        proto_get_U32(&d, &num);
        proto_get_STR(&d, &et);
        if (d.err || num < 1 || num > MAX_PARTS || n == MAX_PARTS) {
            rc = -EINVAL;
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            struct s3_part *np = realloc(*parts, cap * sizeof(**parts));
            char *nt = np ? realloc(*tags, (size_t)cap * S3_ETAG_MAX) : NULL;
            if (np)
                *parts = np;
            if (nt)
                *tags = nt;
            if (!np || !nt) {
                rc = -ENOMEM;
                break;
            }
        }
        if (proto_str_copy(&et, *tags + (size_t)n * S3_ETAG_MAX, S3_ETAG_MAX) || !et.len)
            rc = -EINVAL;
        (*parts)[n++].number = num;
    }
    if (!rc && !n)
        rc = -EINVAL;
    if (rc) {
        free(*parts);
        free(*tags);
        *parts = NULL;
        *tags = NULL;
        return rc;
    }
    for (unsigned i = 0; i < n; i++) /* tags may have moved while growing */
        (*parts)[i].etag = *tags + (size_t)i * S3_ETAG_MAX;
    return (int)n;
}

static const char *op_name(uint8_t op)
{
    static const char *names[] = {"?", "create", "part", "complete", "put", "abort"};
    return op <= PUSH_ABORT ? names[op] : "?";
}

int push_h_push(void *ctx, struct net_req *req, struct net_rep *rep)
{
    (void)ctx;
    struct proto_hsm_push_req q;
    if (proto_dec_hsm_push_req(&req->dec, &q))
        return -EBADMSG;
    struct mover_target mt;
    char key[PROTO_MAX_S3_KEY + 1], upload[S3_UPLOAD_MAX];
    if (mover_target(&mt, &q.endpoint, &q.region, &q.bucket, q.vhost) ||
        proto_str_copy(&q.key, key, sizeof(key)) || !key[0] ||
        proto_str_copy(&q.upload_id, upload, sizeof(upload)))
        return -EINVAL;
    bool reads = q.op == PUSH_PART || q.op == PUSH_PUT;
    bool needs_upload = q.op == PUSH_PART || q.op == PUSH_COMPLETE || q.op == PUSH_ABORT;
    if (q.op < PUSH_CREATE || q.op > PUSH_ABORT || (needs_upload && !upload[0]) ||
        (q.op == PUSH_PART && (q.part < 1 || q.part > MAX_PARTS || q.len == 0)) ||
        (reads &&
         (q.len > PUSH_MAX_PART || q.offset > UINT64_MAX - q.len || layout_validate(&q.layout)))) {
        log_warn("HSM_PUSH from %s: malformed %s of s3://%s/%s", req->peer, op_name(q.op),
                 mt.bucket, key);
        return -EINVAL;
    }
    struct s3_err err = {{0}};
    char etag[S3_ETAG_MAX] = "";
    uint8_t md5[16];
    bool has_md5 = false;
    int rc = 0;
    switch (q.op) {
    case PUSH_CREATE:
        rc = s3_mpu_create(&mt.t, key, upload, &err);
        break;
    case PUSH_ABORT:
        rc = s3_mpu_abort(&mt.t, key, upload, &err);
        break;
    case PUSH_PART:
    case PUSH_PUT: {
        uint64_t off = q.op == PUSH_PUT ? 0 : q.offset;
        uint8_t *buf = malloc(q.len ? q.len : 1);
        if (!buf)
            return -ENOMEM;
        int lrc = read_file(q.ino, &q.layout, off, q.len, buf, md5);
        if (lrc) {
            free(buf);
            return lrc;
        }
        has_md5 = true;
        if (q.op == PUSH_PART)
            rc = s3_mpu_part(&mt.t, key, upload, q.part, buf, q.len, etag, &err);
        else
            rc = s3_put(&mt.t, key, buf, q.len, etag, &err);
        free(buf);
        break;
    }
    case PUSH_COMPLETE: {
        struct s3_part *parts;
        char *tags;
        int n = parts_decode(&q.parts, &parts, &tags);
        if (n < 0) {
            log_warn("HSM_PUSH from %s: malformed parts to complete s3://%s/%s", req->peer,
                     mt.bucket, key);
            return n;
        }
        rc = s3_mpu_complete(&mt.t, key, upload, parts, (unsigned)n, etag, &err);
        free(parts);
        free(tags);
        uint64_t size = 0;
        int64_t mtime;
        char tag2[S3_ETAG_MAX];
        if (!rc && !(rc = s3_head(&mt.t, key, &size, &mtime, tag2, &err)) && size != q.size) {
            rc = -EIO;
            /* Cut to the line's room (a key is up to 1 KiB). */
            if (snprintf(err.text, sizeof(err.text),
                         "s3://%s/%.200s holds %" PRIu64 " bytes after its upload, not %" PRIu64,
                         mt.bucket, key, size, q.size) < 0)
                err.text[0] = 0;
        }
        break;
    }
    }
    if (rc)
        log_error("export (%s) to s3://%s/%s failed: %s", op_name(q.op), mt.bucket, key, err.text);
    struct proto_hsm_push_rep r = {
        .upload_id = proto_str_c(q.op == PUSH_CREATE && !rc ? upload : ""),
        .etag = proto_str_c(rc ? "" : etag),
        .md5 = {md5, has_md5 && !rc ? 16 : 0},
        .s3err = rc,
        .why = proto_str_c(rc ? err.text : ""),
    };
    return proto_enc_hsm_push_rep(&rep->enc, &r);
}
