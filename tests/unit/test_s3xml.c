/*
 * The S3 client's reading of ListObjectVersions replies (src/s3/s3xml.c):
 * documents as S3 sends them (its namespace, quoted etags, delete markers
 * between versions, a truncated page with its markers), and what a server
 * that is not S3 may send instead; then which version s3_find_version
 * takes from them (s3_pick_version). No server is needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "s3/s3.h"
#include "s3/s3int.h"

#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define HEAD                                                                                       \
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"                                                 \
    "<ListVersionsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
#define OWNER                                                                                      \
    "<Owner><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID></Owner>"

/* A page of versions of data/a.bin as S3 lists them, newest first: it was
 * deleted (the marker), and had two versions before; then a key that
 * data/a.bin is a prefix of. The page ends mid-listing. */
static const char page[] = HEAD
    "<Name>bkt</Name><Prefix>data/a.bin</Prefix><KeyMarker></KeyMarker>"
    "<VersionIdMarker></VersionIdMarker><NextKeyMarker>data/a.bin.old</NextKeyMarker>"
    "<NextVersionIdMarker>Rb_l2T8UHDkFEwCgJjhlgPOZC0qJ.vpD</NextVersionIdMarker>"
    "<MaxKeys>4</MaxKeys><IsTruncated>true</IsTruncated>"
    "<DeleteMarker><Key>data/a.bin</Key><VersionId>8hEuXWpVgvGQaaFBxoJ.GxD6SJUfXSNp</VersionId>"
    "<IsLatest>true</IsLatest><LastModified>2026-11-20T10:00:00.000Z</LastModified>" OWNER
    "</DeleteMarker>"
    "<Version><Key>data/a.bin</Key><VersionId>3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY</VersionId>"
    "<IsLatest>false</IsLatest><LastModified>2026-11-19T10:00:00.000Z</LastModified>"
    "<ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag><Size>434234</Size>"
    "<StorageClass>STANDARD</StorageClass>" OWNER "</Version>"
    "<Version><Key>data/a.bin</Key><VersionId>null</VersionId><IsLatest>false</IsLatest>"
    "<LastModified>2026-11-18T10:00:00.000Z</LastModified>"
    "<ETag>&quot;0fd8f7c8a1f4de1a2f6d5e0c1c6b9a2d-3&quot;</ETag><Size>17000000</Size>"
    "<StorageClass>STANDARD</StorageClass>" OWNER "</Version>"
    "<Version><Key>data/a.bin.old</Key><VersionId>Rb_l2T8UHDkFEwCgJjhlgPOZC0qJ.vpD</VersionId>"
    "<IsLatest>true</IsLatest><LastModified>2026-11-17T10:00:00.000Z</LastModified>"
    "<ETag>&quot;d41d8cd98f00b204e9800998ecf8427e&quot;</ETag><Size>434234</Size>"
    "<StorageClass>STANDARD</StorageClass>" OWNER "</Version>"
    "</ListVersionsResult>";

/* What a callback saw: copies, since the strings live one call long. */
struct seen {
    unsigned n, stop_at;
    struct {
        char key[64], vid[64], etag[64];
        bool latest, marker;
        uint64_t size;
    } v[8];
};

static int keep(const struct s3_version *v, void *arg)
{
    struct seen *s = arg;
    assert_true(s->n < 8);
    snprintf(s->v[s->n].key, sizeof(s->v[0].key), "%s", v->key);
    snprintf(s->v[s->n].vid, sizeof(s->v[0].vid), "%s", v->version_id);
    snprintf(s->v[s->n].etag, sizeof(s->v[0].etag), "%s", v->etag);
    s->v[s->n].latest = v->latest;
    s->v[s->n].marker = v->delete_marker;
    s->v[s->n].size = v->size;
    s->n++;
    return s->n == s->stop_at ? 7 : 0;
}

static int versions(const char *xml, struct seen *s, bool *more, char *nk, size_t nk_cap, char *nv,
                    size_t nv_cap)
{
    memset(s->v, 0, sizeof(s->v));
    s->n = 0;
    return s3xml_versions(xml, strlen(xml), keep, s, more, nk, nk_cap, nv, nv_cap);
}

static void test_page(void **state)
{
    (void)state;
    struct seen s = {0};
    char nk[64], nv[64];
    bool more = false;

    assert_int_equal(versions(page, &s, &more, nk, sizeof(nk), nv, sizeof(nv)), 0);
    assert_int_equal(s.n, 4);
    /* In the order of the document, the delete marker first. */
    assert_true(s.v[0].marker);
    assert_true(s.v[0].latest);
    assert_string_equal(s.v[0].key, "data/a.bin");
    assert_string_equal(s.v[0].vid, "8hEuXWpVgvGQaaFBxoJ.GxD6SJUfXSNp");
    assert_string_equal(s.v[0].etag, "");
    assert_false(s.v[1].marker);
    assert_false(s.v[1].latest);
    assert_string_equal(s.v[1].vid, "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY");
    assert_string_equal(s.v[1].etag, "fba9dede5f27731c9771645a39863328");
    assert_int_equal(s.v[1].size, 434234);
    assert_string_equal(s.v[2].vid, "null");
    assert_string_equal(s.v[2].etag, "0fd8f7c8a1f4de1a2f6d5e0c1c6b9a2d-3");
    assert_int_equal(s.v[2].size, 17000000);
    assert_string_equal(s.v[3].key, "data/a.bin.old");
    assert_string_equal(s.v[3].etag, "d41d8cd98f00b204e9800998ecf8427e");
    assert_true(more);
    assert_string_equal(nk, "data/a.bin.old");
    assert_string_equal(nv, "Rb_l2T8UHDkFEwCgJjhlgPOZC0qJ.vpD");
    /* Without a callback or markers wanted, the same page is read. */
    assert_int_equal(s3xml_versions(page, strlen(page), NULL, NULL, NULL, NULL, 0, NULL, 0), 0);
}

static void test_stop(void **state)
{
    (void)state;
    struct seen s = {.stop_at = 2};
    bool more = true;

    assert_int_equal(versions(page, &s, &more, NULL, 0, NULL, 0), 7);
    assert_int_equal(s.n, 2);
    assert_false(more);
}

static void test_empty(void **state)
{
    (void)state;
    static const char empty[] =
        HEAD "<Name>bkt</Name><Prefix>no/such</Prefix><KeyMarker/><VersionIdMarker/>"
             "<MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListVersionsResult>";
    struct seen s = {0};
    char nk[8] = "x", nv[8] = "y";
    bool more = true;

    assert_int_equal(versions(empty, &s, &more, nk, sizeof(nk), nv, sizeof(nv)), 0);
    assert_int_equal(s.n, 0);
    assert_false(more);
    assert_string_equal(nk, "");
    assert_string_equal(nv, "");
}

/* What a server that does not list versions may answer with a 200. */
static void test_not_versions(void **state)
{
    (void)state;
    static const char *docs[] = {
        "<?xml version=\"1.0\"?><ListBucketResult "
        "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<Name>bkt</Name><IsTruncated>false</IsTruncated></ListBucketResult>",
        "<?xml version=\"1.0\"?><Error><Code>NotImplemented</Code><Message>A header you provided "
        "implies functionality that is not implemented</Message></Error>",
        "<html><body>502 Bad Gateway</body></html>",
        "not xml at all",
        "<ListVersionsResult><Version><Key>a</Key>", /* cut short */
        "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e \"v\">]><ListVersionsResult>"
        "<Version><Key>&e;</Key><VersionId>1</VersionId><Size>1</Size></Version>"
        "</ListVersionsResult>",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        struct seen s = {0};
        bool more = true;
        assert_int_equal(versions(docs[i], &s, &more, NULL, 0, NULL, 0), -EIO);
        assert_int_equal(s.n, 0);
        assert_false(more);
    }
    assert_int_equal(s3xml_versions(NULL, 0, keep, NULL, NULL, NULL, 0, NULL, 0), -EIO);
    assert_int_equal(s3xml_versions(page, 0, keep, NULL, NULL, NULL, 0, NULL, 0), -EIO);
}

/* An entry without what every entry has, or with a field too long, spoils
 * the page: taking the rest would skip a version unseen. */
static void test_bad_entries(void **state)
{
    (void)state;
    char longid[S3_VERSION_MAX + 10], doc[2048];
    memset(longid, 'v', sizeof(longid) - 1);
    longid[sizeof(longid) - 1] = '\0';
    const char *entries[] = {
        "<Version><Key>k</Key><VersionId>%s</VersionId><ETag>\"e\"</ETag><Size>1</Size></Version>",
        "<Version><Key>k</Key><ETag>\"e\"</ETag><Size>1</Size></Version>%s",
        "<Version><Key>k</Key><VersionId></VersionId><Size>1</Size></Version>%s",
        "<Version><Key></Key><VersionId>1</VersionId><Size>1</Size></Version>%s",
        "<Version><Key>k</Key><VersionId>1</VersionId><ETag>\"e\"</ETag></Version>%s",
        "<Version><Key>k</Key><VersionId>1</VersionId><Size>-1</Size></Version>%s",
        "<DeleteMarker><VersionId>1</VersionId></DeleteMarker>%s",
    };
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        char entry[1024];
        struct seen s = {0};
        snprintf(entry, sizeof(entry), entries[i], i == 0 ? longid : "");
        snprintf(doc, sizeof(doc),
                 HEAD "<Version><Key>k</Key><VersionId>0</VersionId><Size>1</Size></Version>"
                      "%s</ListVersionsResult>",
                 entry);
        assert_int_equal(versions(doc, &s, NULL, NULL, 0, NULL, 0), -EBADMSG);
        assert_int_equal(s.n, 1); /* the good one before it was seen */
    }
    /* The longest id that fits is taken whole. */
    longid[S3_VERSION_MAX - 1] = '\0';
    snprintf(doc, sizeof(doc),
             HEAD "<Version><Key>k</Key><VersionId>%s</VersionId><Size>1</Size></Version>"
                  "</ListVersionsResult>",
             longid);
    assert_int_equal(s3xml_versions(doc, strlen(doc), NULL, NULL, NULL, NULL, 0, NULL, 0), 0);
}

/* Markers longer than the caller's buffers are refused, not cut. */
static void test_marker_caps(void **state)
{
    (void)state;
    struct seen s = {0};
    char nk[8] = "x", nv[64] = "y";

    assert_int_equal(versions(page, &s, NULL, nk, sizeof(nk), nv, sizeof(nv)), -ENAMETOOLONG);
    assert_string_equal(nk, "");
    assert_int_equal(versions(page, &s, NULL, nv, sizeof(nv), nk, sizeof(nk)), -ENAMETOOLONG);
    assert_string_equal(nk, "");
    assert_int_equal(versions(page, &s, NULL, nk, 0, NULL, 0), -ENAMETOOLONG);
}

/* The page with bytes changed at random: an answer, strings in bounds. */
static int touch(const struct s3_version *v, void *arg)
{
    size_t *sum = arg;
    assert_true(strlen(v->key) <= 1024);
    assert_true(strlen(v->version_id) < S3_VERSION_MAX);
    assert_true(strlen(v->etag) < S3_ETAG_MAX);
    *sum += strlen(v->key) + strlen(v->version_id) + strlen(v->etag);
    return 0;
}

static void test_garbage(void **state)
{
    (void)state;
    char doc[sizeof(page)], nk[16], nv[16];
    size_t sum = 0;

    rng_seed(22);
    for (int i = 0; i < 3000; i++) {
        memcpy(doc, page, sizeof(page));
        for (int k = 0; k < 1 + (int)rng_below(8); k++)
            doc[rng_below(sizeof(page) - 1)] = (char)rng_below(256);
        size_t len = 1 + rng_below(sizeof(page) - 1);
        int rc = s3xml_versions(doc, len, touch, &sum, NULL, nk, sizeof(nk), nv, sizeof(nv));
        assert_true(rc == 0 || rc == -EIO || rc == -EBADMSG || rc == -ENAMETOOLONG);
        assert_true(strlen(nk) < sizeof(nk) && strlen(nv) < sizeof(nv));
    }
}

/* s3_pick_version over the page, as s3_find_version reads it. */
static int pick(const char *key, const char *etag, char *version, size_t cap)
{
    struct s3_pick pk = {.key = key, .etag = etag, .version = version, .cap = cap};
    version[0] = '\0';
    return s3xml_versions(page, strlen(page), s3_pick_version, &pk, NULL, NULL, 0, NULL, 0);
}

static void test_pick(void **state)
{
    (void)state;
    char v[S3_VERSION_MAX];

    /* An older version, behind the delete marker that is the latest. */
    assert_int_equal(pick("data/a.bin", "fba9dede5f27731c9771645a39863328", v, sizeof(v)),
                     S3_PICK_FOUND);
    assert_string_equal(v, "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY");
    /* A multipart etag; the version written before versioning was on. */
    assert_int_equal(pick("data/a.bin", "0fd8f7c8a1f4de1a2f6d5e0c1c6b9a2d-3", v, sizeof(v)),
                     S3_PICK_FOUND);
    assert_string_equal(v, "null");
    /* The etag of a longer key is not one of this key's: the listing has
     * gone past the key when it shows. */
    assert_int_equal(pick("data/a.bin", "d41d8cd98f00b204e9800998ecf8427e", v, sizeof(v)),
                     S3_PICK_PAST);
    assert_string_equal(v, "");
    /* The longer key itself: the entries of the shorter one are skipped. */
    assert_int_equal(pick("data/a.bin.old", "d41d8cd98f00b204e9800998ecf8427e", v, sizeof(v)),
                     S3_PICK_FOUND);
    assert_string_equal(v, "Rb_l2T8UHDkFEwCgJjhlgPOZC0qJ.vpD");
    assert_int_equal(pick("data/a.bin.old", "fba9dede5f27731c9771645a39863328", v, sizeof(v)), 0);
    /* A delete marker has no etag, and is never taken for a version. */
    assert_int_equal(pick("data/a.bin", "", v, sizeof(v)), S3_PICK_PAST);
    assert_string_equal(v, "");
    /* No such etag, no such key; an etag is compared whole. */
    assert_int_equal(pick("data/a.bin", "fba9dede5f27731c9771645a3986332", v, sizeof(v)),
                     S3_PICK_PAST);
    assert_int_equal(pick("data/a", "fba9dede5f27731c9771645a39863328", v, sizeof(v)),
                     S3_PICK_PAST);
    assert_int_equal(pick("data/b", "fba9dede5f27731c9771645a39863328", v, sizeof(v)), 0);
    /* An id longer than the caller keeps is refused, not cut. */
    assert_int_equal(pick("data/a.bin", "fba9dede5f27731c9771645a39863328", v, 33), -ENAMETOOLONG);
    assert_int_equal(pick("data/a.bin", "fba9dede5f27731c9771645a39863328", v, 34), S3_PICK_FOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page),        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_empty),       cmocka_unit_test(test_not_versions),
        cmocka_unit_test(test_bad_entries), cmocka_unit_test(test_marker_caps),
        cmocka_unit_test(test_garbage),     cmocka_unit_test(test_pick),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
