/*
 * libFuzzer target: the XML replies of S3 (src/s3/s3xml.c). The same input
 * goes to every s3xml_* function, as a listing, an InitiateMultipartUpload
 * and a CompleteMultipartUpload result, and an error; the strings a
 * listing hands to its callback must be NUL-terminated and in bounds.
 */
#include "s3/s3.h"

#include <stdint.h>
#include <string.h>

static int touch(const struct s3_entry *e, void *arg)
{
    size_t *sum = arg;
    *sum += strlen(e->key) + strlen(e->etag) + (size_t)e->size;
    return *sum == 42; /* now and then stop a listing early */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char id[S3_UPLOAD_MAX], etag[S3_ETAG_MAX], code[64], msg[256], tiny[4];
    size_t sum = 0;
    bool more;

    s3xml_list((const char *)data, size, touch, &sum, &more);
    s3xml_list((const char *)data, size, NULL, NULL, NULL);
    s3xml_upload_id((const char *)data, size, id, sizeof(id));
    s3xml_upload_id((const char *)data, size, tiny, sizeof(tiny));
    s3xml_etag((const char *)data, size, etag, sizeof(etag));
    s3xml_etag((const char *)data, size, tiny, sizeof(tiny));
    if (s3xml_error((const char *)data, size, code, sizeof(code), msg, sizeof(msg)) == 0)
        sum += strlen(code) + strlen(msg);
    s3xml_error((const char *)data, size, tiny, sizeof(tiny), tiny, 1);
    return 0;
}
