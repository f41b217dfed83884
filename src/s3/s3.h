/*
 * S3 as the movers speak it (docs/architecture.md, "Data repositories"):
 * libcurl with its built-in AWS Signature Version 4, libxml2 for the
 * replies. Credentials are read where the AWS tools read them, at every
 * call (so that rotated keys are taken up): $AWS_ACCESS_KEY_ID,
 * $AWS_SECRET_ACCESS_KEY and $AWS_SESSION_TOKEN, else the profile
 * $AWS_PROFILE (or "default") of $AWS_SHARED_CREDENTIALS_FILE (or
 * ~/.aws/credentials). $AWS_CA_BUNDLE names the CA certificates for HTTPS.
 * No secret is ever logged or returned in an error text.
 *
 * Every call returns 0 or a negative errno: -ENOENT (NoSuchKey,
 * NoSuchBucket, 404), -EACCES (InvalidAccessKeyId, SignatureDoesNotMatch,
 * AccessDenied, no credentials), -ESTALE (412: the object's etag is not the
 * one asked for), -EHOSTUNREACH (connection refused, no route, DNS),
 * -ETIMEDOUT, -EIO (anything else); and writes a one-line reason naming the
 * object and S3's error code and message into err (s3_err, may be NULL).
 */
#ifndef STRIA_S3_H
#define STRIA_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a bucket is: endpoint "http[s]://host[:port]" (NULL or "": AWS's
 * https://s3.REGION.amazonaws.com), region (NULL or "": us-east-1),
 * vhost: address the bucket as bucket.host (virtual-hosted) instead of
 * host/bucket (path style). */
struct s3_target {
    const char *endpoint;
    const char *region;
    const char *bucket;
    bool vhost;
};

/* The reason of a failure, for one log line or a CLI message. */
struct s3_err {
    char text[512];
};

/* One object of a listing. Strings point into the listing's storage. */
struct s3_entry {
    const char *key;
    uint64_t size;
    int64_t mtime_ns;
    const char *etag; /* without quotes */
};

/* One entry of a listing of versions: a version of key, or a delete marker
 * (which has no etag and no size). Strings point into the listing's
 * storage. */
struct s3_version {
    const char *key;
    const char *version_id;
    const char *etag; /* without quotes; "" for a delete marker */
    bool latest;
    bool delete_marker;
    uint64_t size;
};

#define S3_ETAG_MAX   128
#define S3_UPLOAD_MAX 1024
/* S3 does not bound version ids; its own are 32 bytes, MinIO's 36. */
#define S3_VERSION_MAX 256

/* Once per process, before any thread calls the rest (curl_global_init). */
int s3_global_init(void);

/* Whether credentials are to be found (for a clear error before work). */
int s3_creds_check(struct s3_err *err);

/* ListObjectsV2 of up to max (1..1000) keys under prefix after start_after
 * (NULL: from the first): cb is called for each entry in order (a non-zero
 * return stops the listing and is returned); *more is set when the
 * listing goes on after the last entry given. Memory is that of one page. */
int s3_list(const struct s3_target *t, const char *prefix, const char *start_after, unsigned max,
            int (*cb)(const struct s3_entry *e, void *arg), void *arg, bool *more,
            struct s3_err *err);

/* HeadObject. etag: S3_ETAG_MAX bytes, without quotes. */
int s3_head(const struct s3_target *t, const char *key, uint64_t *size, int64_t *mtime_ns,
            char *etag, struct s3_err *err);

/* The version id of the version of key whose etag is etag (quotes around
 * it or not) into version (cap bytes), from ListObjectVersions with key as
 * the prefix, a bounded number of pages; delete markers never match.
 * -ENOENT when no version of key has that etag (an unversioned bucket
 * lists only the current object; a missing bucket is -ENOENT too),
 * -EOPNOTSUPP when the server cannot list versions (405, 501, or a reply
 * that is not a ListVersionsResult), -ENAMETOOLONG when the id does not
 * fit in cap, -EINVAL for an empty etag. */
int s3_find_version(const struct s3_target *t, const char *key, const char *etag, char *version,
                    size_t cap, struct s3_err *err);

/* One ranged GET of [off, off + len) into buf, only if the object's etag
 * is if_match (NULL: any), of the version version (NULL or "": the
 * current object); -EIO if fewer bytes came. */
int s3_get(const struct s3_target *t, const char *key, const char *if_match, const char *version,
           uint64_t off, void *buf, size_t len, struct s3_err *err);

/* Several ranged GETs of one object at once, at most streams in flight
 * (curl's multi interface): range i is [off[i], off[i] + len[i]) into
 * buf[i]; if_match and version as for s3_get. Returns the first failure;
 * done[i] says which ranges arrived. */
int s3_get_many(const struct s3_target *t, const char *key, const char *if_match,
                const char *version, unsigned n, const uint64_t *off, const size_t *len,
                void *const *buf, bool *done, unsigned streams, struct s3_err *err);

/* PutObject of buf with its Content-MD5; etag receives S3's. */
int s3_put(const struct s3_target *t, const char *key, const void *buf, size_t len, char *etag,
           struct s3_err *err);

/* Multipart upload: create (upload_id: S3_UPLOAD_MAX bytes), one part
 * (number 1..10000, its Content-MD5 sent; etag receives S3's), complete
 * from n parts in order (etag receives the object's), abort. */
int s3_mpu_create(const struct s3_target *t, const char *key, char *upload_id, struct s3_err *err);
int s3_mpu_part(const struct s3_target *t, const char *key, const char *upload_id, unsigned number,
                const void *buf, size_t len, char *etag, struct s3_err *err);
struct s3_part {
    unsigned number;
    const char *etag;
};
int s3_mpu_complete(const struct s3_target *t, const char *key, const char *upload_id,
                    const struct s3_part *parts, unsigned n, char *etag, struct s3_err *err);
int s3_mpu_abort(const struct s3_target *t, const char *key, const char *upload_id,
                 struct s3_err *err);

/* DeleteObject (a missing key is not an error, as in S3). */
int s3_delete(const struct s3_target *t, const char *key, struct s3_err *err);
/* DeleteObject of key only while its etag is etag (quotes around it or
 * not): a HeadObject first, then the DELETE with If-Match (which S3
 * honours, and a server that ignores it is still guarded by the HEAD).
 * -ESTALE when the object has another etag (it is left alone); a key not
 * there is success, a missing bucket -ENOENT; -EINVAL for an empty etag. */
int s3_delete_if(const struct s3_target *t, const char *key, const char *etag, struct s3_err *err);

/* ---- XML replies (s3xml.c), apart so that a fuzzer can feed them ---- */

/* A ListObjectsV2 result: cb per <Contents>, *more from <IsTruncated>. */
int s3xml_list(const char *xml, size_t len, int (*cb)(const struct s3_entry *e, void *arg),
               void *arg, bool *more);
/* A ListVersionsResult: cb per <Version> and <DeleteMarker>, in the order
 * of the document (a non-zero return stops and is returned); *more from
 * <IsTruncated>, and the markers to list on from (NULL: not wanted) into
 * next_key and next_vid ("" when absent). -EIO when the document is not a
 * ListVersionsResult, -EBADMSG when one of its entries lacks a key or a
 * version id or has a field too long, -ENAMETOOLONG when a marker does not
 * fit in its cap. */
int s3xml_versions(const char *xml, size_t len, int (*cb)(const struct s3_version *v, void *arg),
                   void *arg, bool *more, char *next_key, size_t key_cap, char *next_vid,
                   size_t vid_cap);
/* <UploadId> of an InitiateMultipartUploadResult (cap bytes). */
int s3xml_upload_id(const char *xml, size_t len, char *upload_id, size_t cap);
/* <ETag> of a CompleteMultipartUploadResult, quotes removed. */
int s3xml_etag(const char *xml, size_t len, char *etag, size_t cap);
/* <Code> and <Message> of an <Error>; 0 if found. */
int s3xml_error(const char *xml, size_t len, char *code, size_t code_cap, char *msg,
                size_t msg_cap);

#endif
