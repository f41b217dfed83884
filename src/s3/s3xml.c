/*
 * The XML replies of S3 (ListObjectsV2, ListObjectVersions,
 * InitiateMultipartUpload, CompleteMultipartUpload, Error), read with
 * libxml2.
 *
 * A reply is whatever the endpoint sent, so every function here must be
 * safe on any bytes: the parser never touches the network
 * (XML_PARSE_NONET), never loads a DTD and never substitutes entities; a
 * document that declares a DTD at all is refused, since S3 never sends
 * one and entity definitions are how XML bombs are built. Text is taken
 * only from the text and CDATA children of an element (never by expanding
 * entity references), into bounded buffers; anything too long is an error.
 * Elements are matched by local name, whatever their namespace.
 */
#include "s3/s3.h"
#include "s3/s3int.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

/* S3 keys are at most 1024 bytes of UTF-8. */
#define KEY_MAX 1024

static xmlDocPtr parse(const char *xml, size_t len)
{
    if (!xml || len == 0 || len > INT_MAX)
        return NULL;
    xmlDocPtr doc = xmlReadMemory(xml, (int)len, NULL, NULL,
                                  XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (doc && (doc->intSubset || doc->extSubset)) {
        xmlFreeDoc(doc);
        return NULL;
    }
    return doc;
}

static bool is(const xmlNode *n, const char *name)
{
    return n && n->type == XML_ELEMENT_NODE && n->name && strcmp((const char *)n->name, name) == 0;
}

/* The first child element of n called name, or NULL. */
static xmlNode *child(const xmlNode *n, const char *name)
{
    for (xmlNode *c = n ? n->children : NULL; c; c = c->next)
        if (is(c, name))
            return c;
    return NULL;
}

/* The text of n (its text and CDATA children) into buf of cap bytes;
 * -ENAMETOOLONG if it does not fit, -ENOENT if n is NULL. */
static int text(const xmlNode *n, char *buf, size_t cap)
{
    size_t used = 0;

    if (!n)
        return -ENOENT;
    if (cap == 0)
        return -ENAMETOOLONG;
    for (const xmlNode *c = n->children; c; c = c->next) {
        if (c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE)
            continue;
        if (!c->content)
            continue;
        size_t l = strlen((const char *)c->content);
        if (l >= cap - used)
            return -ENAMETOOLONG;
        memcpy(buf + used, c->content, l);
        used += l;
    }
    buf[used] = '\0';
    return 0;
}

/* An etag without its quotes (S3 sends "hex" or "hex-N"). */
static int etag_text(const xmlNode *n, char *buf, size_t cap)
{
    int rc = text(n, buf, cap);
    if (rc < 0)
        return rc;
    size_t j = 0;
    for (size_t i = 0; buf[i]; i++)
        if (buf[i] != '"')
            buf[j++] = buf[i];
    buf[j] = '\0';
    return 0;
}

/* "2023-05-01T12:34:56.789Z" (ISO 8601 in UTC, as S3 writes it). */
static int parse_time(const char *s, int64_t *ns)
{
    struct tm tm = {0};
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    long frac = 0, scale = 1000000000L;

    if (!p)
        return -EINVAL;
    if (*p == '.') {
        p++;
        for (int digits = 0; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 9) {
                scale /= 10;
                frac += (*p - '0') * scale;
            }
    }
    if (*p == 'Z')
        p++;
    if (*p)
        return -EINVAL;
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || t < 0 || t > (time_t)(INT64_MAX / 1000000000L) - 1)
        return -EINVAL;
    *ns = (int64_t)t * 1000000000L + frac;
    return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
    char *end;

    if (!*s || *s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end)
        return -EINVAL;
    *v = x;
    return 0;
}

int s3xml_list(const char *xml, size_t len, int (*cb)(const struct s3_entry *e, void *arg),
               void *arg, bool *more)
{
    char key[KEY_MAX + 1], etag[S3_ETAG_MAX], num[32], when[64], trunc[16];
    xmlDocPtr doc = parse(xml, len);
    xmlNode *root;
    int rc = 0;

    if (more)
        *more = false;
    if (!doc)
        return -EIO;
    root = xmlDocGetRootElement(doc);
    if (!is(root, "ListBucketResult")) {
        rc = -EIO;
        goto out;
    }
    for (xmlNode *c = root->children; c; c = c->next) {
        if (!is(c, "Contents"))
            continue;
        struct s3_entry e = {.key = key, .etag = etag};
        if (text(child(c, "Key"), key, sizeof(key)) < 0 || !key[0] ||
            text(child(c, "Size"), num, sizeof(num)) < 0 || parse_u64(num, &e.size) < 0 ||
            text(child(c, "LastModified"), when, sizeof(when)) < 0 ||
            parse_time(when, &e.mtime_ns) < 0) {
            rc = -EIO;
            goto out;
        }
        if (etag_text(child(c, "ETag"), etag, sizeof(etag)) < 0)
            etag[0] = '\0';
        if (cb) {
            rc = cb(&e, arg);
            if (rc)
                goto out;
        }
    }
    if (more && text(child(root, "IsTruncated"), trunc, sizeof(trunc)) == 0)
        *more = strcmp(trunc, "true") == 0;
out:
    xmlFreeDoc(doc);
    return rc;
}

/* One <Version> or <DeleteMarker> of a ListVersionsResult into v, whose
 * strings are key, vid and etag (of KEY_MAX + 1, S3_VERSION_MAX and
 * S3_ETAG_MAX bytes); -EBADMSG if it lacks what every entry has. */
static int version_entry(const xmlNode *c, struct s3_version *v, char *key, char *vid, char *etag)
{
    char num[32], latest[16];

    *v = (struct s3_version){.key = key, .version_id = vid, .etag = etag};
    v->delete_marker = is(c, "DeleteMarker");
    etag[0] = '\0';
    if (text(child(c, "Key"), key, KEY_MAX + 1) < 0 || !key[0] ||
        text(child(c, "VersionId"), vid, S3_VERSION_MAX) < 0 || !vid[0])
        return -EBADMSG;
    if (text(child(c, "IsLatest"), latest, sizeof(latest)) == 0)
        v->latest = strcmp(latest, "true") == 0;
    if (v->delete_marker)
        return 0;
    /* A version without an etag can match nothing; one too long is wrong. */
    if (child(c, "ETag") && etag_text(child(c, "ETag"), etag, S3_ETAG_MAX) < 0)
        return -EBADMSG;
    if (text(child(c, "Size"), num, sizeof(num)) < 0 || parse_u64(num, &v->size) < 0)
        return -EBADMSG;
    return 0;
}

/* The text of root/name into buf (NULL: not wanted), "" when absent. */
static int marker(const xmlNode *root, const char *name, char *buf, size_t cap)
{
    if (!buf)
        return 0;
    if (cap == 0)
        return -ENAMETOOLONG;
    int rc = text(child(root, name), buf, cap);
    if (rc < 0)
        buf[0] = '\0'; /* a part of one that is too long is no marker */
    return rc == -ENOENT ? 0 : rc;
}

int s3xml_versions(const char *xml, size_t len, int (*cb)(const struct s3_version *v, void *arg),
                   void *arg, bool *more, char *next_key, size_t key_cap, char *next_vid,
                   size_t vid_cap)
{
    char key[KEY_MAX + 1], vid[S3_VERSION_MAX], etag[S3_ETAG_MAX], trunc[16];
    xmlDocPtr doc = parse(xml, len);
    xmlNode *root;
    int rc = 0;

    if (more)
        *more = false;
    if (next_key && key_cap)
        next_key[0] = '\0';
    if (next_vid && vid_cap)
        next_vid[0] = '\0';
    if (!doc)
        return -EIO;
    root = xmlDocGetRootElement(doc);
    if (!is(root, "ListVersionsResult")) {
        rc = -EIO;
        goto out;
    }
    for (xmlNode *c = root->children; c; c = c->next) {
        if (!is(c, "Version") && !is(c, "DeleteMarker"))
            continue;
        struct s3_version v;
        if ((rc = version_entry(c, &v, key, vid, etag)) < 0)
            goto out;
        if (cb && (rc = cb(&v, arg)))
            goto out;
    }
    if ((rc = marker(root, "NextKeyMarker", next_key, key_cap)) < 0 ||
        (rc = marker(root, "NextVersionIdMarker", next_vid, vid_cap)) < 0)
        goto out;
    if (more && text(child(root, "IsTruncated"), trunc, sizeof(trunc)) == 0)
        *more = strcmp(trunc, "true") == 0;
out:
    xmlFreeDoc(doc);
    return rc;
}

/* The text of root/name of a document whose root is called root_name. */
static int one_field(const char *xml, size_t len, const char *root_name, const char *name,
                     char *buf, size_t cap, bool etag)
{
    xmlDocPtr doc = parse(xml, len);
    int rc;

    if (!doc)
        return -EIO;
    xmlNode *root = xmlDocGetRootElement(doc);
    xmlNode *n = is(root, root_name) ? child(root, name) : NULL;
    rc = etag ? etag_text(n, buf, cap) : text(n, buf, cap);
    if (rc == 0 && !buf[0])
        rc = -EIO;
    xmlFreeDoc(doc);
    return rc < 0 ? -EIO : 0;
}

int s3xml_upload_id(const char *xml, size_t len, char *upload_id, size_t cap)
{
    return one_field(xml, len, "InitiateMultipartUploadResult", "UploadId", upload_id, cap, false);
}

int s3xml_etag(const char *xml, size_t len, char *etag, size_t cap)
{
    return one_field(xml, len, "CompleteMultipartUploadResult", "ETag", etag, cap, true);
}

/* Copy the text of n into buf, cut to fit (an error's words are for people). */
static void text_cut(const xmlNode *n, char *buf, size_t cap)
{
    size_t used = 0;

    if (cap == 0)
        return;
    for (const xmlNode *c = n ? n->children : NULL; c && used + 1 < cap; c = c->next) {
        if ((c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE) || !c->content)
            continue;
        size_t l = strlen((const char *)c->content);
        if (l > cap - 1 - used)
            l = cap - 1 - used;
        memcpy(buf + used, c->content, l);
        used += l;
    }
    buf[used] = '\0';
    /* One line: no control characters from the wire. */
    for (size_t i = 0; i < used; i++)
        if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
            buf[i] = ' ';
}

int s3xml_error(const char *xml, size_t len, char *code, size_t code_cap, char *msg, size_t msg_cap)
{
    xmlDocPtr doc = parse(xml, len);
    int rc = -EIO;

    if (code && code_cap)
        code[0] = '\0';
    if (msg && msg_cap)
        msg[0] = '\0';
    if (!doc)
        return -EIO;
    xmlNode *root = xmlDocGetRootElement(doc);
    if (is(root, "Error") && child(root, "Code")) {
        if (code)
            text_cut(child(root, "Code"), code, code_cap);
        if (msg)
            text_cut(child(root, "Message"), msg, msg_cap);
        rc = 0;
    }
    xmlFreeDoc(doc);
    return rc;
}

void s3_xml_init(void)
{
    xmlInitParser();
}
