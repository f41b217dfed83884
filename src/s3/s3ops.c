/*
 * The calls of s3.h, each one request (s3.c) or, for s3_get_many, a
 * set of requests on this thread's curl multi handle.
 *
 * What S3 returns is checked, not trusted: a ranged GET must bring exactly
 * the bytes asked for, from an object whose ETag is the one asked for (S3
 * answers 412 to If-Match, and servers that ignore the header are caught
 * by the ETag of the reply); a PUT or a part must come back with the MD5
 * of what was sent as its ETag; a conditional DELETE HEADs the object
 * first, for servers that ignore If-Match on a DELETE. Query parameters
 * are written in sorted order, each with its '=', which is SigV4's
 * canonical query string.
 *
 * A version of an object is found by its etag in ListObjectVersions with
 * the key as the prefix: the key itself sorts before every longer key it
 * is a prefix of, so the listing is read only until another key shows.
 */
#include "s3/s3.h"
#include "s3/s3int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

static bool clean(const char *s)
{
    for (; s && *s; s++)
        if ((unsigned char)*s < 0x20 || *s == '"' || *s == '<' || *s == '>' || *s == '&')
            return false;
    return true;
}

/* Pages of ListObjectVersions (of up to 1000 entries) read at most for
 * one key: a key rewritten more often than that is not worth the wait. */
#define VERSION_PAGES 16
#define KEY_MAX       1024

static int check_key(const char *key, struct s3_err *err)
{
    if (!key || !key[0] || strlen(key) > KEY_MAX) {
        s3_errf(err, "invalid S3 key (empty or longer than 1024 bytes)");
        return -EINVAL;
    }
    return 0;
}

static int add_header(struct s3_req *r, const char *fmt, const char *v)
{
    char h[S3_UPLOAD_MAX + 64];
    snprintf(h, sizeof(h), fmt, v);
    struct curl_slist *n = curl_slist_append(r->hdrs, h);
    if (!n)
        return -ENOMEM;
    r->hdrs = n;
    return 0;
}

/* Start r as method on key (NULL: the bucket) with query. */
static int req_init(struct s3_req *r, const char *method, const struct s3_target *t,
                    const char *key, const char *query, struct s3_err *err)
{
    memset(r, 0, sizeof(*r));
    r->method = method;
    int rc = s3_url(t, key, query, r->url, sizeof(r->url));
    if (rc < 0)
        s3_errf(err, "%s s3://%s/%s: cannot make a URL of endpoint %s (%s)", method,
                t->bucket ? t->bucket : "", key ? key : "", t->endpoint ? t->endpoint : "(AWS)",
                rc == -EINVAL ? "no scheme or no bucket" : "too long");
    return rc;
}

int s3_list(const struct s3_target *t, const char *prefix, const char *start_after, unsigned max,
            int (*cb)(const struct s3_entry *e, void *arg), void *arg, bool *more,
            struct s3_err *err)
{
    char q[4096] = "", num[16];
    struct s3_req r;
    int rc;

    if (more)
        *more = false;
    if (max < 1 || max > 1000)
        max = 1000;
    snprintf(num, sizeof(num), "%u", max);
    /* Sorted: list-type, max-keys, prefix, start-after. */
    if ((rc = s3_query_param(q, sizeof(q), "list-type", "2")) < 0 ||
        (rc = s3_query_param(q, sizeof(q), "max-keys", num)) < 0 ||
        (prefix && prefix[0] && (rc = s3_query_param(q, sizeof(q), "prefix", prefix)) < 0) ||
        (start_after && start_after[0] &&
         (rc = s3_query_param(q, sizeof(q), "start-after", start_after)) < 0)) {
        s3_errf(err, "LIST s3://%s/%s: prefix or start key too long", t->bucket, prefix);
        return -EINVAL;
    }
    if ((rc = req_init(&r, "GET", t, NULL, q, err)) < 0)
        return rc;
    rc = s3_perform(&r, t, prefix ? prefix : "", err);
    if (rc == 0) {
        rc = s3xml_list(r.body, r.body_len, cb, arg, more);
        if (rc == -EIO)
            s3_errf(err, "LIST s3://%s/%s: the listing is not a ListBucketResult", t->bucket,
                    prefix ? prefix : "");
    }
    s3_req_done(&r);
    return rc;
}

int s3_head(const struct s3_target *t, const char *key, uint64_t *size, int64_t *mtime_ns,
            char *etag, struct s3_err *err)
{
    struct s3_req r;
    int rc;

    if ((rc = check_key(key, err)) < 0 || (rc = req_init(&r, "HEAD", t, key, NULL, err)) < 0)
        return rc;
    rc = s3_perform(&r, t, key, err);
    if (rc == 0) {
        if (size)
            *size = r.has_length ? r.length : 0;
        if (mtime_ns)
            *mtime_ns = r.last_modified > 0 ? (int64_t)r.last_modified * 1000000000LL : 0;
        if (etag)
            snprintf(etag, S3_ETAG_MAX, "%s", r.etag);
    }
    s3_req_done(&r);
    return rc;
}

/* A ranged GET of [off, off + len) of version (NULL or "": the current
 * object) into buf. */
static int get_init(struct s3_req *r, const struct s3_target *t, const char *key,
                    const char *if_match, const char *version, uint64_t off, void *buf, size_t len,
                    struct s3_err *err)
{
    char range[64], q[3 * S3_VERSION_MAX + 16] = "";
    int rc;

    if (version && version[0] && s3_query_param(q, sizeof(q), "versionId", version) < 0) {
        s3_errf(err, "GET s3://%s/%s: version id too long", t->bucket, key);
        return -EINVAL;
    }
    if ((rc = req_init(r, "GET", t, key, q, err)) < 0)
        return rc;
    snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
    if ((rc = add_header(r, "Range: %s", range)) < 0 ||
        (if_match && if_match[0] && (rc = add_header(r, "If-Match: \"%s\"", if_match)) < 0))
        return rc;
    r->dst = buf;
    r->dst_cap = len;
    return 0;
}

/* What a GET that S3 answered with 2xx must also be. */
static int get_check(const struct s3_req *r, const struct s3_target *t, const char *key,
                     const char *if_match, uint64_t off, size_t len, struct s3_err *err)
{
    if (if_match && if_match[0] && r->etag[0] && strcmp(r->etag, if_match) != 0) {
        s3_errf(err, "GET s3://%s/%s: the object's etag is %s, not %s (it changed)", t->bucket, key,
                r->etag, if_match);
        return -ESTALE;
    }
    if (r->dst_got != len || (r->status != 206 && off != 0)) {
        s3_errf(err, "GET s3://%s/%s: %zu bytes came of the %zu at %" PRIu64 " (HTTP %ld)",
                t->bucket, key, r->dst_got, len, off, r->status);
        return -EIO;
    }
    return 0;
}

/* An etag as a caller gives it (quotes around it or not) into want as S3's
 * headers give it, without quotes; -EINVAL if empty, too long or unsafe. */
static int etag_arg(const char *what, const struct s3_target *t, const char *key, const char *etag,
                    char want[S3_ETAG_MAX], struct s3_err *err)
{
    size_t n = etag ? strlen(etag) : 0;
    if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"')
        etag++, n -= 2;
    if (n == 0 || n >= S3_ETAG_MAX) {
        s3_errf(err, "%s s3://%s/%s: no etag, or one too long", what, t->bucket ? t->bucket : "",
                key);
        return -EINVAL;
    }
    memcpy(want, etag, n);
    want[n] = '\0';
    if (!clean(want)) {
        s3_errf(err, "%s s3://%s/%s: bad etag", what, t->bucket ? t->bucket : "", key);
        return -EINVAL;
    }
    return 0;
}

static int bad_etag(const char *what, const struct s3_target *t, const char *key, bool ok,
                    struct s3_err *err)
{
    if (!ok)
        s3_errf(err, "%s s3://%s/%s: bad etag", what, t->bucket ? t->bucket : "", key ? key : "");
    return ok ? 0 : -EINVAL;
}

int s3_get(const struct s3_target *t, const char *key, const char *if_match, const char *version,
           uint64_t off, void *buf, size_t len, struct s3_err *err)
{
    struct s3_req r;
    int rc;

    if ((rc = check_key(key, err)) < 0 || (rc = bad_etag("GET", t, key, clean(if_match), err)) < 0)
        return rc;
    if (len == 0)
        return 0;
    rc = get_init(&r, t, key, if_match, version, off, buf, len, err);
    if (rc == 0)
        rc = s3_perform(&r, t, key, err);
    if (rc == 0)
        rc = get_check(&r, t, key, if_match, off, len, err);
    s3_req_done(&r);
    return rc;
}

int s3_get_many(const struct s3_target *t, const char *key, const char *if_match,
                const char *version, unsigned n, const uint64_t *off, const size_t *len,
                void *const *buf, bool *done, unsigned streams, struct s3_err *err)
{
    struct s3_tls *tls = s3_tls();
    struct s3_req *reqs = NULL;
    int slot_of[S3_STREAMS_MAX];
    struct s3_creds c;
    unsigned next = 0, active = 0;
    int first = 0, rc;

    for (unsigned i = 0; i < n; i++)
        done[i] = false;
    if ((rc = check_key(key, err)) < 0 || (rc = bad_etag("GET", t, key, clean(if_match), err)) < 0)
        return rc;
    if (n == 0)
        return 0;
    if (!tls)
        return -ENOMEM;
    if ((rc = s3_creds_get(&c, err)) < 0)
        return rc;
    if (streams < 1)
        streams = 1;
    if (streams > S3_STREAMS_MAX)
        streams = S3_STREAMS_MAX;
    if (streams > n)
        streams = n;
    reqs = calloc(streams, sizeof(*reqs));
    if (!reqs || (!tls->multi && !(tls->multi = curl_multi_init()))) {
        rc = -ENOMEM;
        goto out;
    }
    for (unsigned s = 0; s < streams; s++)
        slot_of[s] = -1;
    while ((next < n && first == 0) || active > 0) {
        for (unsigned s = 0; s < streams && next < n && first == 0; s++) {
            if (slot_of[s] >= 0)
                continue;
            unsigned i = next++;
            if (len[i] == 0) {
                done[i] = true;
                continue;
            }
            if (!tls->many[s] && !(tls->many[s] = curl_easy_init())) {
                first = -ENOMEM;
                break;
            }
            rc = get_init(&reqs[s], t, key, if_match, version, off[i], buf[i], len[i], err);
            if (rc == 0)
                rc = s3_req_setup(&reqs[s], tls->many[s], t, &c);
            if (rc == 0) {
                curl_easy_setopt(tls->many[s], CURLOPT_PRIVATE, (void *)&reqs[s]);
                if (curl_multi_add_handle(tls->multi, tls->many[s]) != CURLM_OK)
                    rc = -ENOMEM;
            }
            if (rc < 0) {
                s3_req_done(&reqs[s]);
                first = rc;
                break;
            }
            slot_of[s] = (int)i;
            active++;
        }
        int running = 0, left;
        CURLMsg *m;
        curl_multi_perform(tls->multi, &running);
        while ((m = curl_multi_info_read(tls->multi, &left))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            struct s3_req *r = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
            unsigned s = (unsigned)(r - reqs), i = (unsigned)slot_of[s];
            struct s3_err mine, *e = first ? &mine : err;
            rc = s3_req_result(r, m->data.result, t, key, e);
            if (rc == 0)
                rc = get_check(r, t, key, if_match, off[i], len[i], e);
            curl_multi_remove_handle(tls->multi, m->easy_handle);
            s3_req_done(r);
            slot_of[s] = -1;
            active--;
            if (rc == 0)
                done[i] = true;
            else if (first == 0)
                first = rc;
        }
        if (first && active > 0) {
            /* Fail fast: the ranges still in flight are dropped. */
            for (unsigned s = 0; s < streams; s++)
                if (slot_of[s] >= 0) {
                    curl_multi_remove_handle(tls->multi, tls->many[s]);
                    s3_req_done(&reqs[s]);
                    slot_of[s] = -1;
                }
            active = 0;
        }
        if (active > 0)
            curl_multi_poll(tls->multi, NULL, 0, 1000, NULL);
    }
    rc = first;
out:
    for (unsigned s = 0; tls && s < streams && s < S3_STREAMS_MAX; s++)
        if (tls->many[s]) {
            curl_easy_setopt(tls->many[s], CURLOPT_PASSWORD, "");
            curl_easy_setopt(tls->many[s], CURLOPT_HTTPHEADER, NULL);
        }
    free(reqs);
    OPENSSL_cleanse(&c, sizeof(c));
    return rc;
}

/* PUT of buf (an object or a part) with its Content-MD5, ETag checked. */
static int put_md5(const struct s3_target *t, const char *key, const char *query, const void *buf,
                   size_t len, char *etag, struct s3_err *err)
{
    char hex[33], b64[25];
    struct s3_req r;
    int rc;

    if ((rc = req_init(&r, "PUT", t, key, query, err)) < 0)
        return rc;
    s3_md5(buf, len, hex, b64);
    if ((rc = add_header(&r, "Content-MD5: %s", b64)) < 0 ||
        (rc = add_header(&r, "Content-Type: %s", "application/octet-stream")) < 0)
        goto out;
    r.up = buf;
    r.up_len = len;
    rc = s3_perform(&r, t, key, err);
    if (rc == 0 && strcmp(r.etag, hex) != 0) {
        s3_errf(err, "PUT s3://%s/%s: S3's etag %s is not the MD5 %s of the %zu bytes sent",
                t->bucket, key, r.etag[0] ? r.etag : "(none)", hex, len);
        rc = -EIO;
    }
    if (rc == 0 && etag)
        snprintf(etag, S3_ETAG_MAX, "%s", r.etag);
out:
    s3_req_done(&r);
    return rc;
}

int s3_put(const struct s3_target *t, const char *key, const void *buf, size_t len, char *etag,
           struct s3_err *err)
{
    int rc = check_key(key, err);
    return rc < 0 ? rc : put_md5(t, key, NULL, buf, len, etag, err);
}

int s3_mpu_create(const struct s3_target *t, const char *key, char *upload_id, struct s3_err *err)
{
    struct s3_req r;
    int rc;

    if ((rc = check_key(key, err)) < 0 || (rc = req_init(&r, "POST", t, key, "uploads=", err)) < 0)
        return rc;
    if ((rc = add_header(&r, "Content-Type: %s", "application/octet-stream")) == 0)
        rc = s3_perform(&r, t, key, err);
    if (rc == 0 && s3xml_upload_id(r.body, r.body_len, upload_id, S3_UPLOAD_MAX) < 0) {
        s3_errf(err, "POST s3://%s/%s?uploads: no UploadId in the reply", t->bucket, key);
        rc = -EIO;
    }
    s3_req_done(&r);
    return rc;
}

static int upload_query(char *q, size_t cap, unsigned number, const char *upload_id)
{
    char num[16];
    int rc = 0;

    q[0] = '\0';
    if (number) {
        snprintf(num, sizeof(num), "%u", number);
        rc = s3_query_param(q, cap, "partNumber", num);
    }
    return rc < 0 ? rc : s3_query_param(q, cap, "uploadId", upload_id);
}

int s3_mpu_part(const struct s3_target *t, const char *key, const char *upload_id, unsigned number,
                const void *buf, size_t len, char *etag, struct s3_err *err)
{
    char q[3 * S3_UPLOAD_MAX + 64];
    int rc = check_key(key, err);

    if (rc < 0)
        return rc;
    if (number < 1 || number > 10000 || !upload_id || !upload_id[0] ||
        upload_query(q, sizeof(q), number, upload_id) < 0) {
        s3_errf(err, "PUT s3://%s/%s: part %u or upload id out of range", t->bucket, key, number);
        return -EINVAL;
    }
    return put_md5(t, key, q, buf, len, etag, err);
}

int s3_mpu_complete(const struct s3_target *t, const char *key, const char *upload_id,
                    const struct s3_part *parts, unsigned n, char *etag, struct s3_err *err)
{
    char q[3 * S3_UPLOAD_MAX + 64];
    char *xml = NULL;
    size_t cap, used = 0;
    struct s3_req r;
    int rc = check_key(key, err);

    if (rc < 0)
        return rc;
    if (n < 1 || n > 10000 || !upload_id || upload_query(q, sizeof(q), 0, upload_id) < 0) {
        s3_errf(err, "POST s3://%s/%s: %u parts or upload id out of range", t->bucket, key, n);
        return -EINVAL;
    }
    cap = 64 + (size_t)n * (S3_ETAG_MAX + 64);
    if (!(xml = malloc(cap)))
        return -ENOMEM;
    used = (size_t)snprintf(xml, cap, "<CompleteMultipartUpload>");
    for (unsigned i = 0; i < n; i++) {
        if (!parts[i].etag || !clean(parts[i].etag) || strlen(parts[i].etag) >= S3_ETAG_MAX) {
            s3_errf(err, "POST s3://%s/%s: bad etag of part %u", t->bucket, key, parts[i].number);
            free(xml);
            return -EINVAL;
        }
        used += (size_t)snprintf(xml + used, cap - used,
                                 "<Part><PartNumber>%u</PartNumber><ETag>\"%s\"</ETag></Part>",
                                 parts[i].number, parts[i].etag);
    }
    used += (size_t)snprintf(xml + used, cap - used, "</CompleteMultipartUpload>");
    if ((rc = req_init(&r, "POST", t, key, q, err)) < 0) {
        free(xml);
        return rc;
    }
    r.up = xml;
    r.up_len = used;
    if ((rc = add_header(&r, "Content-Type: %s", "application/xml")) == 0)
        rc = s3_perform(&r, t, key, err);
    if (rc == 0) {
        char code[64], msg[256];
        /* S3 may answer 200 and then an <Error> (the reply is streamed). */
        if (s3xml_error(r.body, r.body_len, code, sizeof(code), msg, sizeof(msg)) == 0) {
            s3_errf(err, "POST s3://%s/%s: %s: %s (HTTP 200)", t->bucket, key, code, msg);
            rc = -EIO;
        } else if (s3xml_etag(r.body, r.body_len, etag ? etag : code,
                              etag ? S3_ETAG_MAX : sizeof(code)) < 0) {
            s3_errf(err, "POST s3://%s/%s: no ETag in the reply", t->bucket, key);
            rc = -EIO;
        }
    }
    s3_req_done(&r);
    free(xml);
    return rc;
}

int s3_mpu_abort(const struct s3_target *t, const char *key, const char *upload_id,
                 struct s3_err *err)
{
    char q[3 * S3_UPLOAD_MAX + 64];
    struct s3_req r;
    int rc = check_key(key, err);

    if (rc < 0)
        return rc;
    if (!upload_id || upload_query(q, sizeof(q), 0, upload_id) < 0) {
        s3_errf(err, "DELETE s3://%s/%s: upload id out of range", t->bucket, key);
        return -EINVAL;
    }
    if ((rc = req_init(&r, "DELETE", t, key, q, err)) < 0)
        return rc;
    rc = s3_perform(&r, t, key, err);
    s3_req_done(&r);
    return rc;
}

int s3_delete(const struct s3_target *t, const char *key, struct s3_err *err)
{
    struct s3_req r;
    int rc;

    if ((rc = check_key(key, err)) < 0 || (rc = req_init(&r, "DELETE", t, key, NULL, err)) < 0)
        return rc;
    rc = s3_perform(&r, t, key, err);
    /* A missing key is not an error; a missing bucket is. */
    if (rc == -ENOENT && r.body && strstr(r.body, "<Code>NoSuchKey</Code>"))
        rc = 0;
    s3_req_done(&r);
    return rc;
}

int s3_delete_if(const struct s3_target *t, const char *key, const char *etag, struct s3_err *err)
{
    char want[S3_ETAG_MAX], now[S3_ETAG_MAX];
    struct s3_req r;
    int rc;

    if ((rc = check_key(key, err)) < 0 || (rc = etag_arg("DELETE", t, key, etag, want, err)) < 0)
        return rc;
    rc = s3_head(t, key, NULL, NULL, now, err);
    if (rc == 0 && strcmp(now, want) != 0) {
        s3_errf(err, "DELETE s3://%s/%s: the object's etag is %s, not %s (it changed): kept",
                t->bucket, key, now, want);
        return -ESTALE;
    }
    /* Not found: the key, or the bucket, which the DELETE tells apart. */
    if (rc < 0 && rc != -ENOENT)
        return rc;
    if ((rc = req_init(&r, "DELETE", t, key, NULL, err)) < 0)
        return rc;
    if ((rc = add_header(&r, "If-Match: \"%s\"", want)) == 0)
        rc = s3_perform(&r, t, key, err);
    /* S3 answers NoSuchKey to an If-Match of a key not there. */
    if (rc == -ENOENT && r.body && strstr(r.body, "<Code>NoSuchKey</Code>"))
        rc = 0;
    s3_req_done(&r);
    return rc;
}

int s3_pick_version(const struct s3_version *v, void *arg)
{
    const struct s3_pick *pk = arg;
    int order = strcmp(v->key, pk->key);

    if (order > 0)
        return S3_PICK_PAST;
    /* A key before it: a server that listed more than the prefix. */
    if (order < 0 || v->delete_marker || strcmp(v->etag, pk->etag) != 0)
        return 0;
    size_t n = strlen(v->version_id);
    if (n >= pk->cap)
        return -ENAMETOOLONG;
    memcpy(pk->version, v->version_id, n + 1);
    return S3_PICK_FOUND;
}

/* Whether a failed listing says the server cannot list versions at all. */
static bool cannot_list(const struct s3_req *r, char *code, size_t cap)
{
    if (s3xml_error(r->body, r->body_len, code, cap, NULL, 0) < 0)
        snprintf(code, cap, "no error code");
    return r->status == 405 || r->status == 501 || strcmp(code, "MethodNotAllowed") == 0 ||
           strcmp(code, "NotImplemented") == 0;
}

/* One page of ListObjectVersions of key from the markers kmark and vmark
 * ("": the first page), read through s3_pick_version; the markers of the
 * next page replace them. Returns s3_pick_version's answer, 0 at the end
 * of the page, or the failure. */
static int versions_page(const struct s3_target *t, const char *key, char kmark[KEY_MAX + 1],
                         char vmark[S3_VERSION_MAX], struct s3_pick *pk, bool *more,
                         struct s3_err *err)
{
    const char *b = t->bucket ? t->bucket : "";
    char q[S3_URL_MAX] = "", code[64];
    struct s3_req r;
    int rc;

    /* Sorted: key-marker, prefix, version-id-marker, versions. */
    if ((kmark[0] && s3_query_param(q, sizeof(q), "key-marker", kmark) < 0) ||
        s3_query_param(q, sizeof(q), "prefix", key) < 0 ||
        (vmark[0] && s3_query_param(q, sizeof(q), "version-id-marker", vmark) < 0) ||
        s3_query_param(q, sizeof(q), "versions", "") < 0) {
        s3_errf(err, "LIST VERSIONS s3://%s/%s: the key is too long for a query", b, key);
        return -ENAMETOOLONG;
    }
    if ((rc = req_init(&r, "GET", t, NULL, q, err)) < 0)
        return rc;
    rc = s3_perform(&r, t, key, err);
    if (rc < 0 && cannot_list(&r, code, sizeof(code))) {
        s3_errf(err, "LIST VERSIONS s3://%s/%s: the server cannot list versions (%s, HTTP %ld)", b,
                key, code, r.status);
        rc = -EOPNOTSUPP;
    } else if (rc == 0) {
        rc = s3xml_versions(r.body, r.body_len, s3_pick_version, pk, more, kmark, KEY_MAX + 1,
                            vmark, S3_VERSION_MAX);
        if (rc == -EIO) {
            s3_errf(err,
                    "LIST VERSIONS s3://%s/%s: the server cannot list versions (its reply is not "
                    "a ListVersionsResult, HTTP %ld)",
                    b, key, r.status);
            rc = -EOPNOTSUPP;
        } else if (rc == -EBADMSG) {
            s3_errf(err,
                    "LIST VERSIONS s3://%s/%s: an entry of the listing lacks its key, "
                    "version id or size, or has one too long",
                    b, key);
            rc = -EIO;
        } else if (rc == -ENAMETOOLONG) {
            s3_errf(err, "LIST VERSIONS s3://%s/%s: a version id is too long to keep", b, key);
        }
    }
    s3_req_done(&r);
    return rc;
}

int s3_find_version(const struct s3_target *t, const char *key, const char *etag, char *version,
                    size_t cap, struct s3_err *err)
{
    char want[S3_ETAG_MAX], kmark[KEY_MAX + 1] = "", vmark[S3_VERSION_MAX] = "";
    struct s3_pick pk = {.key = key, .etag = want, .version = version, .cap = cap};
    const char *b = t->bucket ? t->bucket : "";
    bool more = true;
    unsigned page;
    int rc;

    if ((rc = check_key(key, err)) < 0 ||
        (rc = etag_arg("LIST VERSIONS", t, key, etag, want, err)) < 0)
        return rc;
    if (!version || cap == 0) {
        s3_errf(err, "LIST VERSIONS s3://%s/%s: no room for a version id", b, key);
        return -EINVAL;
    }
    version[0] = '\0';
    for (page = 0; page < VERSION_PAGES && more; page++) {
        rc = versions_page(t, key, kmark, vmark, &pk, &more, err);
        if (rc == S3_PICK_FOUND)
            return 0;
        if (rc < 0)
            return rc;
        if (rc == S3_PICK_PAST)
            more = false;
        else if (more && !kmark[0]) {
            s3_errf(err, "LIST VERSIONS s3://%s/%s: the listing goes on without a NextKeyMarker", b,
                    key);
            return -EIO;
        }
    }
    if (more)
        s3_errf(err, "LIST VERSIONS s3://%s/%s: no version of etag %s among the first %u pages", b,
                key, want, VERSION_PAGES);
    else
        s3_errf(err,
                "LIST VERSIONS s3://%s/%s: no version has etag %s (the bucket is not versioned, "
                "or that version was deleted)",
                b, key, want);
    return -ENOENT;
}
