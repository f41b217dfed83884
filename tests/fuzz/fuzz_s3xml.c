/*
 * libFuzzer target: the XML replies of S3 (src/s3/s3xml.c). The same input
 * goes to every s3xml_* function, as a listing, a listing of versions, an
 * InitiateMultipartUpload and a CompleteMultipartUpload result, and an
 * error; the strings a listing hands to its callback must be
 * NUL-terminated and in bounds, and so must the markers, whatever their
 * caps.
 */
#include "s3/s3.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int touch(const struct s3_entry *e, void *arg)
{
    size_t *sum = arg;
    *sum += strlen(e->key) + strlen(e->etag) + (size_t)e->size;
    return *sum == 42; /* now and then stop a listing early */
}

static int touch_version(const struct s3_version *v, void *arg)
{
    size_t *sum = arg;
    if (strlen(v->version_id) >= S3_VERSION_MAX || strlen(v->etag) >= S3_ETAG_MAX)
        abort();
    *sum += strlen(v->key) + strlen(v->version_id) + strlen(v->etag) + (size_t)v->size + v->latest +
            v->delete_marker;
    return *sum == 42;
}

/* The markers of a page of versions into buffers of key_cap and vid_cap:
 * a string within its cap, whether the page was taken or not. */
static void versions(const uint8_t *data, size_t size, size_t key_cap, size_t vid_cap, size_t *sum)
{
    char key[1025], vid[S3_VERSION_MAX];
    bool more;

    memset(key, 'k', sizeof(key));
    memset(vid, 'v', sizeof(vid));
    s3xml_versions((const char *)data, size, touch_version, sum, &more, key, key_cap, vid, vid_cap);
    if (strnlen(key, key_cap) >= key_cap || strnlen(vid, vid_cap) >= vid_cap)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char id[S3_UPLOAD_MAX], etag[S3_ETAG_MAX], code[64], msg[256], tiny[4];
    size_t sum = 0;
    bool more;

    s3xml_list((const char *)data, size, touch, &sum, &more);
    s3xml_list((const char *)data, size, NULL, NULL, NULL);
    versions(data, size, 1025, S3_VERSION_MAX, &sum);
    versions(data, size, 1, 2, &sum);
    s3xml_versions((const char *)data, size, NULL, NULL, NULL, NULL, 0, NULL, 0);
    s3xml_upload_id((const char *)data, size, id, sizeof(id));
    s3xml_upload_id((const char *)data, size, tiny, sizeof(tiny));
    s3xml_etag((const char *)data, size, etag, sizeof(etag));
    s3xml_etag((const char *)data, size, tiny, sizeof(tiny));
    if (s3xml_error((const char *)data, size, code, sizeof(code), msg, sizeof(msg)) == 0)
        sum += strlen(code) + strlen(msg);
    s3xml_error((const char *)data, size, tiny, sizeof(tiny), tiny, 1);
    return 0;
}
