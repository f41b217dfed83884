/*
 * Internals shared by the files of the S3 client (s3.c: requests and
 * errors; s3creds.c: credentials; s3ops.c: the calls of s3.h). Not for
 * the movers: they see s3.h only.
 */
#ifndef STRIA_S3INT_H
#define STRIA_S3INT_H

#include <curl/curl.h>
#include <time.h>

#include "s3/s3.h"

/* At most this many ranged GETs of one s3_get_many are in flight. */
#define S3_STREAMS_MAX 64
/* A URL: endpoint, bucket, a key of up to 1024 bytes encoded, a query. */
#define S3_URL_MAX 8192

/* Credentials, read at every call; wiped after it. */
struct s3_creds {
    char access[256];
    char secret[256];
    char token[4096];
};

/* Per thread: handles kept so that connections are reused. */
struct s3_tls {
    CURL *easy;
    CURLM *multi;
    CURL *many[S3_STREAMS_MAX];
};

/* One HTTP request and what came back. */
struct s3_req {
    const char *method; /* GET HEAD PUT POST DELETE */
    char url[S3_URL_MAX];
    struct curl_slist *hdrs;
    const void *up; /* PUT or POST body */
    size_t up_len, up_pos;
    void *dst; /* a 2xx body goes here when set (else into body) */
    size_t dst_cap, dst_got;
    bool overflow;
    char *body; /* 2xx XML or an error's body, NUL-terminated */
    size_t body_len, body_cap;
    char etag[S3_ETAG_MAX];
    uint64_t length;
    bool has_length;
    time_t last_modified;
    long status;
    CURL *h;
    char errbuf[CURL_ERROR_SIZE];
};

struct s3_tls *s3_tls(void);
void s3_xml_init(void);
void s3_errf(struct s3_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* MD5 of buf as 32 hex digits and as base64 (Content-MD5). */
void s3_md5(const void *buf, size_t len, char hex[33], char b64[25]);
const char *s3_region(const struct s3_target *t);
/* The URL of key (NULL: the bucket) with an encoded query (or NULL). */
int s3_url(const struct s3_target *t, const char *key, const char *query, char *url, size_t cap);
/* Append name=value (value percent-encoded) to the query q of cap bytes. */
int s3_query_param(char *q, size_t cap, const char *name, const char *value);
/* 0 and c filled, or -EACCES with err's text when there are none. */
int s3_creds_get(struct s3_creds *c, struct s3_err *err);

/* Configure h for r (after r's method, url, headers and bodies are set). */
int s3_req_setup(struct s3_req *r, CURL *h, const struct s3_target *t, const struct s3_creds *c);
/* 0 for a 2xx reply, else the errno of the failure with err's text. */
int s3_req_result(struct s3_req *r, CURLcode cc, const struct s3_target *t, const char *key,
                  struct s3_err *err);
/* Run r on this thread's easy handle: s3_req_setup, perform, s3_req_result. */
int s3_perform(struct s3_req *r, const struct s3_target *t, const char *key, struct s3_err *err);
/* Free what r holds (its headers and body). */
void s3_req_done(struct s3_req *r);

/* What s3_find_version looks for in a listing of versions. */
struct s3_pick {
    const char *key;  /* exactly this key */
    const char *etag; /* without quotes */
    char *version;    /* cap bytes: the id of the version found */
    size_t cap;
};
/* s3_pick_version's answers besides 0 (read on) and a negative errno. */
#define S3_PICK_FOUND 1
#define S3_PICK_PAST  2
/* The callback of s3xml_versions for s3_find_version (pk: its s3_pick):
 * S3_PICK_FOUND once a version (never a delete marker) of exactly pk->key
 * has the etag pk->etag, its id copied to pk->version; S3_PICK_PAST at a
 * key after pk->key (keys are listed in order, so no version of pk->key
 * follows); -ENAMETOOLONG if the id does not fit in pk->cap. */
int s3_pick_version(const struct s3_version *v, void *pk);

#endif
