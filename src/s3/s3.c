/*
 * The S3 client of the movers (s3.h): one HTTP request per call, signed by
 * libcurl's own AWS SigV4 (CURLOPT_AWS_SIGV4), replies read by s3xml.c.
 *
 * Method: each thread keeps one easy handle (and, for s3_get_many, one
 * multi handle with its easy handles) in a pthread key, so that the
 * thousands of ranged GETs of a restore reuse their connections; handles
 * are reset, not remade, between calls. Every request carries
 * x-amz-content-sha256: UNSIGNED-PAYLOAD, which curl 7.88 then signs as
 * the payload hash (it would otherwise hash only POSTFIELDS, and so sign a
 * PUT body it streams as if it were empty); bodies are protected by their
 * Content-MD5 instead, and the ETag S3 returns is checked against it.
 * Keys are percent-encoded here (all but A-Za-z0-9-_.~ and '/') and curl
 * is told to leave the path as it is, so the canonical URI curl signs is
 * the one S3 computes.
 *
 * It must never: log or return a secret (error texts name the object, S3's
 * code and message and the HTTP status), hang on a dead endpoint (a 5 s
 * connect timeout and a low-speed limit), or write past a caller's buffer.
 */
#include "s3/s3.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "s3/s3int.h"

#define CONNECT_TIMEOUT_MS 5000L
/* A transfer slower than this many bytes/s for this long has stalled. */
#define LOW_SPEED_BYTES 1024L
#define LOW_SPEED_SECS  15L
/* Replies that are read whole (XML, error bodies) are at most this big. */
#define BODY_MAX (16u << 20)

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_free(void *p)
{
    struct s3_tls *t = p;
    if (!t)
        return;
    for (unsigned i = 0; i < S3_STREAMS_MAX; i++)
        if (t->many[i]) {
            if (t->multi)
                curl_multi_remove_handle(t->multi, t->many[i]);
            curl_easy_cleanup(t->many[i]);
        }
    if (t->multi)
        curl_multi_cleanup(t->multi);
    if (t->easy)
        curl_easy_cleanup(t->easy);
    free(t);
}

static void tls_init(void)
{
    pthread_key_create(&tls_key, tls_free);
}

struct s3_tls *s3_tls(void)
{
    pthread_once(&tls_once, tls_init);
    struct s3_tls *t = pthread_getspecific(tls_key);
    if (t)
        return t;
    t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    if (pthread_setspecific(tls_key, t) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

int s3_global_init(void)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return -EIO;
    pthread_once(&tls_once, tls_init);
    s3_xml_init();
    return 0;
}

/* ---- MD5 ---- */

void s3_md5(const void *buf, size_t len, char hex[33], char b64[25])
{
    unsigned char d[16];
    unsigned int dl = 0;
    static const char x[] = "0123456789abcdef";

    EVP_Digest(buf, len, d, &dl, EVP_md5(), NULL);
    for (int i = 0; i < 16; i++) {
        hex[2 * i] = x[d[i] >> 4];
        hex[2 * i + 1] = x[d[i] & 15];
    }
    hex[32] = '\0';
    EVP_EncodeBlock((unsigned char *)b64, d, 16);
}

/* ---- URLs ---- */

/* Append s percent-encoded as S3 wants (slash kept when keep_slash). */
static int enc_append(char *out, size_t cap, size_t *used, const char *s, bool keep_slash)
{
    static const char x[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                     (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.' || *p == '~' ||
                     (keep_slash && *p == '/');
        if (*used + (plain ? 1 : 3) >= cap)
            return -ENAMETOOLONG;
        if (plain) {
            out[(*used)++] = (char)*p;
        } else {
            out[(*used)++] = '%';
            out[(*used)++] = x[*p >> 4];
            out[(*used)++] = x[*p & 15];
        }
    }
    out[*used] = '\0';
    return 0;
}

static int raw_append(char *out, size_t cap, size_t *used, const char *s)
{
    size_t l = strlen(s);
    if (*used + l >= cap)
        return -ENAMETOOLONG;
    memcpy(out + *used, s, l + 1);
    *used += l;
    return 0;
}

const char *s3_region(const struct s3_target *t)
{
    return t->region && t->region[0] ? t->region : "us-east-1";
}

int s3_url(const struct s3_target *t, const char *key, const char *query, char *url, size_t cap)
{
    char def[128];
    const char *ep = t->endpoint, *rest;
    size_t used = 0, hl;
    int rc;

    if (!t->bucket || !t->bucket[0])
        return -EINVAL;
    if (!ep || !ep[0]) {
        snprintf(def, sizeof(def), "https://s3.%s.amazonaws.com", s3_region(t));
        ep = def;
    }
    rest = strstr(ep, "://");
    if (!rest)
        return -EINVAL;
    rest += 3;
    hl = strlen(rest);
    while (hl > 0 && rest[hl - 1] == '/')
        hl--;
    if (used + (size_t)(rest - ep) + hl + strlen(t->bucket) + 3 >= cap)
        return -ENAMETOOLONG;
    memcpy(url, ep, (size_t)(rest - ep));
    used = (size_t)(rest - ep);
    if (t->vhost) {
        rc = raw_append(url, cap, &used, t->bucket);
        if (rc == 0)
            rc = raw_append(url, cap, &used, ".");
        if (rc < 0)
            return rc;
        memcpy(url + used, rest, hl);
        used += hl;
        url[used] = '\0';
    } else {
        memcpy(url + used, rest, hl);
        used += hl;
        url[used] = '\0';
        if ((rc = raw_append(url, cap, &used, "/")) < 0 ||
            (rc = raw_append(url, cap, &used, t->bucket)) < 0)
            return rc;
    }
    if (key) {
        if ((rc = raw_append(url, cap, &used, "/")) < 0 ||
            (rc = enc_append(url, cap, &used, key, true)) < 0)
            return rc;
    } else if (t->vhost && (rc = raw_append(url, cap, &used, "/")) < 0) {
        return rc;
    }
    if (query && query[0] &&
        ((rc = raw_append(url, cap, &used, "?")) < 0 ||
         (rc = raw_append(url, cap, &used, query)) < 0))
        return rc;
    return 0;
}

int s3_query_param(char *q, size_t cap, const char *name, const char *value)
{
    size_t used = strlen(q);
    int rc;
    if (used && (rc = raw_append(q, cap, &used, "&")) < 0)
        return rc;
    if ((rc = raw_append(q, cap, &used, name)) < 0 || (rc = raw_append(q, cap, &used, "=")) < 0)
        return rc;
    return enc_append(q, cap, &used, value ? value : "", false);
}

/* ---- one request ---- */

static size_t on_header(char *b, size_t size, size_t n, void *arg)
{
    struct s3_req *r = arg;
    size_t len = size * n, l = len;
    char line[S3_ETAG_MAX + 64];

    while (l > 0 && (b[l - 1] == '\r' || b[l - 1] == '\n'))
        l--;
    if (l >= sizeof(line))
        return len; /* no header we read is that long */
    memcpy(line, b, l);
    line[l] = '\0';
    if (strncmp(line, "HTTP/", 5) == 0) {
        /* A new response (after 100 Continue, say): forget the last one's. */
        r->etag[0] = '\0';
        r->has_length = false;
        r->last_modified = -1;
        return len;
    }
    char *colon = strchr(line, ':');
    if (!colon)
        return len;
    *colon = '\0';
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    if (strcasecmp(line, "ETag") == 0) {
        size_t j = 0;
        for (char *p = v; *p && j + 1 < sizeof(r->etag); p++)
            if (*p != '"')
                r->etag[j++] = *p;
        r->etag[j] = '\0';
    } else if (strcasecmp(line, "Content-Length") == 0) {
        char *end;
        unsigned long long x = strtoull(v, &end, 10);
        if (end != v) {
            r->length = x;
            r->has_length = true;
        }
    } else if (strcasecmp(line, "Last-Modified") == 0) {
        r->last_modified = curl_getdate(v, NULL);
    }
    return len;
}

static size_t on_body(char *b, size_t size, size_t n, void *arg)
{
    struct s3_req *r = arg;
    size_t len = size * n;
    long status = 0;

    curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300 && r->dst) {
        if (len > r->dst_cap - r->dst_got) {
            r->overflow = true;
            return CURL_WRITEFUNC_ERROR;
        }
        memcpy((char *)r->dst + r->dst_got, b, len);
        r->dst_got += len;
        return len;
    }
    /* An XML reply or an error's body, kept whole up to BODY_MAX. */
    if (r->body_len + len > BODY_MAX)
        return len; /* the rest of an oversized body is dropped */
    if (r->body_len + len + 1 > r->body_cap) {
        size_t cap = r->body_cap ? r->body_cap : 4096;
        while (cap < r->body_len + len + 1)
            cap *= 2;
        char *nb = realloc(r->body, cap);
        if (!nb)
            return CURL_WRITEFUNC_ERROR;
        r->body = nb;
        r->body_cap = cap;
    }
    memcpy(r->body + r->body_len, b, len);
    r->body_len += len;
    r->body[r->body_len] = '\0';
    return len;
}

static size_t on_read(char *b, size_t size, size_t n, void *arg)
{
    struct s3_req *r = arg;
    size_t len = size * n, left = r->up_len - r->up_pos;
    if (len > left)
        len = left;
    memcpy(b, (const char *)r->up + r->up_pos, len);
    r->up_pos += len;
    return len;
}

static int seek_read(void *arg, curl_off_t off, int origin)
{
    struct s3_req *r = arg;
    if (origin != SEEK_SET || off < 0 || (size_t)off > r->up_len)
        return CURL_SEEKFUNC_FAIL;
    r->up_pos = (size_t)off;
    return CURL_SEEKFUNC_OK;
}

int s3_req_setup(struct s3_req *r, CURL *h, const struct s3_target *t, const struct s3_creds *c)
{
    char sigv4[160];
    int rc = 0;

    curl_easy_reset(h);
    r->h = h;
    r->etag[0] = '\0';
    r->last_modified = -1;
    r->errbuf[0] = '\0';
    snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", s3_region(t));
    r->hdrs = curl_slist_append(r->hdrs, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    if (c->token[0]) {
        char tok[sizeof(c->token) + 32];
        snprintf(tok, sizeof(tok), "X-Amz-Security-Token: %s", c->token);
        r->hdrs = curl_slist_append(r->hdrs, tok);
        OPENSSL_cleanse(tok, sizeof(tok));
    }
    if (!r->hdrs)
        return -ENOMEM;
    const char *ca = getenv("AWS_CA_BUNDLE");
    if (ca && ca[0])
        curl_easy_setopt(h, CURLOPT_CAINFO, ca);
    curl_easy_setopt(h, CURLOPT_URL, r->url);
    curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, LOW_SPEED_BYTES);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, LOW_SPEED_SECS);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4);
    curl_easy_setopt(h, CURLOPT_USERNAME, c->access);
    curl_easy_setopt(h, CURLOPT_PASSWORD, c->secret);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, r->hdrs);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, r->errbuf);
    if (strcmp(r->method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (strcmp(r->method, "PUT") == 0) {
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, r);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, seek_read);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, r);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->up_len);
    } else if (strcmp(r->method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->up ? (const char *)r->up : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->up_len);
    } else if (strcmp(r->method, "DELETE") == 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    return rc;
}

/* The errno of an S3 error code or, without one, of the HTTP status. */
static int map_status(const char *code, long status)
{
    static const struct {
        const char *code;
        int err;
    } codes[] = {
        {"NoSuchKey", -ENOENT},          {"NoSuchBucket", -ENOENT},
        {"NoSuchUpload", -ENOENT},       {"NotFound", -ENOENT},
        {"InvalidAccessKeyId", -EACCES}, {"SignatureDoesNotMatch", -EACCES},
        {"AccessDenied", -EACCES},       {"ExpiredToken", -EACCES},
        {"InvalidToken", -EACCES},       {"PreconditionFailed", -ESTALE},
        {"RequestTimeout", -ETIMEDOUT},
    };
    for (size_t i = 0; code && i < sizeof(codes) / sizeof(codes[0]); i++)
        if (strcmp(code, codes[i].code) == 0)
            return codes[i].err;
    switch (status) {
    case 404:
        return -ENOENT;
    case 401:
    case 403:
        return -EACCES;
    case 412:
        return -ESTALE;
    case 408:
    case 504:
        return -ETIMEDOUT;
    default:
        return -EIO;
    }
}

int s3_req_result(struct s3_req *r, CURLcode cc, const struct s3_target *t, const char *key,
                  struct s3_err *err)
{
    const char *b = t->bucket ? t->bucket : "";
    const char *k = key ? key : "";
    long status = 0;

    if (cc != CURLE_OK) {
        int rc;
        switch (cc) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
            rc = -EHOSTUNREACH;
            break;
        case CURLE_OPERATION_TIMEDOUT:
            rc = -ETIMEDOUT;
            break;
        case CURLE_OUT_OF_MEMORY:
            rc = -ENOMEM;
            break;
        default:
            rc = -EIO;
        }
        if (r->overflow)
            s3_errf(err, "%s s3://%s/%s: the reply is longer than the %zu bytes asked for",
                    r->method, b, k, r->dst_cap);
        else
            s3_errf(err, "%s s3://%s/%s: %s (curl %d: %s)", r->method, b, k,
                    r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc), (int)cc,
                    curl_easy_strerror(cc));
        return rc;
    }
    curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
    r->status = status;
    if (status >= 200 && status < 300)
        return 0;

    char code[64] = "", msg[256] = "";
    if (r->body_len == 0 ||
        s3xml_error(r->body, r->body_len, code, sizeof(code), msg, sizeof(msg)) < 0) {
        /* HEAD replies have no body; others may come from a proxy. */
        snprintf(code, sizeof(code), "%s",
                 status == 404   ? "NotFound"
                 : status == 403 ? "Forbidden"
                 : status == 412 ? "PreconditionFailed"
                                 : "HTTP error");
        msg[0] = '\0';
    }
    int rc = map_status(code, status);
    s3_errf(err, "%s s3://%s/%s: %s%s%s (HTTP %ld)", r->method, b, k, code, msg[0] ? ": " : "", msg,
            status);
    return rc;
}

void s3_req_done(struct s3_req *r)
{
    curl_slist_free_all(r->hdrs);
    r->hdrs = NULL;
    free(r->body);
    r->body = NULL;
    r->body_len = r->body_cap = 0;
}

int s3_perform(struct s3_req *r, const struct s3_target *t, const char *key, struct s3_err *err)
{
    struct s3_creds c;
    struct s3_tls *tls = s3_tls();
    int rc;

    if (!tls)
        return -ENOMEM;
    rc = s3_creds_get(&c, err);
    if (rc < 0)
        return rc;
    if (!tls->easy && !(tls->easy = curl_easy_init())) {
        rc = -ENOMEM;
        goto out;
    }
    rc = s3_req_setup(r, tls->easy, t, &c);
    if (rc < 0)
        goto out;
    rc = s3_req_result(r, curl_easy_perform(tls->easy), t, key, err);
out:
    /* The handle keeps a copy of the secret until its next reset. */
    if (tls->easy) {
        curl_easy_setopt(tls->easy, CURLOPT_PASSWORD, "");
        curl_easy_setopt(tls->easy, CURLOPT_HTTPHEADER, NULL);
    }
    OPENSSL_cleanse(&c, sizeof(c));
    return rc;
}
