/*
 * The Prometheus exposition (src/net/metrics.c): the text it makes for
 * known figures, every line of it checked against the format's grammar as
 * a scraper parses it, and the responder's reading of HTTP requests.
 */
#include "net/metrics.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define LABEL_MAX 256

static bool name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

/* A metric or label name at *p; moves past it. */
static size_t take_name(const char **p)
{
    const char *s = *p;
    if (!name_char(*s, true))
        return 0;
    while (name_char(*s, false))
        s++;
    size_t n = (size_t)(s - *p);
    *p = s;
    return n;
}

/* The value of a sample: a float as Go's ParseFloat reads it, or +Inf. */
static bool is_value(const char *s)
{
    if (!strcmp(s, "+Inf") || !strcmp(s, "-Inf") || !strcmp(s, "NaN"))
        return true;
    char *end;
    strtod(s, &end);
    return end != s && *end == '\0';
}

/* One sample line "name{k="v",...} value": its name (into name) and the
 * value of label le (into le, LABEL_MAX bytes; "" if none), or a failure
 * naming the line. */
static void parse_sample(const char *line, char *name, size_t cap, char *le, double *value)
{
    const char *p = line;
    size_t n = take_name(&p);
    if (!n || n >= cap)
        fail_msg("bad metric name: %s", line);
    memcpy(name, line, n);
    name[n] = '\0';
    le[0] = '\0';
    if (*p == '{') {
        p++;
        while (*p != '}') {
            const char *k = p;
            size_t kn = take_name(&p);
            if (!kn || p[0] != '=' || p[1] != '"')
                fail_msg("bad label in: %s", line);
            p += 2;
            char v[LABEL_MAX];
            size_t vn = 0;
            while (*p != '"') {
                if (!*p || *p == '\n' || vn + 1 >= sizeof(v))
                    fail_msg("unterminated label value in: %s", line);
                if (*p == '\\') {
                    p++;
                    if (*p != '\\' && *p != '"' && *p != 'n')
                        fail_msg("bad escape in: %s", line);
                }
                v[vn++] = *p++;
            }
            v[vn] = '\0';
            p++;
            if (kn == 2 && !memcmp(k, "le", 2))
                memcpy(le, v, vn + 1);
            if (*p == ',')
                p++;
            else if (*p != '}')
                fail_msg("labels not separated in: %s", line);
        }
        p++;
    }
    if (*p != ' ' || !is_value(p + 1))
        fail_msg("bad value in: %s", line);
    *value = strcmp(p + 1, "+Inf") ? strtod(p + 1, NULL) : 1e300;
}

/* Whether sample name belongs to family fam of type type. */
static bool of_family(const char *name, const char *fam, const char *type)
{
    size_t n = strlen(fam);
    if (strncmp(name, fam, n))
        return false;
    if (!name[n])
        return true;
    return !strcmp(type, "histogram") && (!strcmp(name + n, "_bucket") ||
                                          !strcmp(name + n, "_sum") || !strcmp(name + n, "_count"));
}

/* Every line of text as a scraper reads it: HELP and TYPE once per family
 * before its samples, samples only of the family declared last, a
 * histogram's buckets rising to +Inf, which equals its _count. Returns the
 * number of samples. */
static int check_exposition(const char *text, size_t len)
{
    assert_true(len > 0 && text[len - 1] == '\n');
    char fam[128] = "", type[16] = "", seen[4096] = " ";
    double last_bucket = -1, inf = -1;
    int samples = 0;
    const char *p = text;
    while (p < text + len) {
        const char *nl = memchr(p, '\n', (size_t)(text + len - p));
        assert_non_null(nl);
        char line[1024];
        size_t n = (size_t)(nl - p);
        assert_true(n > 0 && n < sizeof(line));
        memcpy(line, p, n);
        line[n] = '\0';
        p = nl + 1;
        if (!strncmp(line, "# HELP ", 7)) {
            const char *q = line + 7;
            size_t fn = take_name(&q);
            assert_true(fn > 0 && fn < sizeof(fam) && *q == ' ');
            memcpy(fam, line + 7, fn);
            fam[fn] = '\0';
            char key[140];
            snprintf(key, sizeof(key), " %s ", fam);
            if (strstr(seen, key))
                fail_msg("family %s declared twice", fam);
            strncat(seen, key + 1, sizeof(seen) - strlen(seen) - 1);
            type[0] = '\0';
            continue;
        }
        if (!strncmp(line, "# TYPE ", 7)) {
            char name[128];
            assert_int_equal(sscanf(line + 7, "%127s %15s", name, type), 2);
            assert_string_equal(name, fam);
            assert_true(!strcmp(type, "counter") || !strcmp(type, "gauge") ||
                        !strcmp(type, "histogram"));
            if (!strcmp(type, "counter"))
                assert_true(strlen(fam) > 6 && !strcmp(fam + strlen(fam) - 6, "_total"));
            continue;
        }
        assert_true(line[0] != '#');
        char name[128], le[LABEL_MAX];
        double v;
        parse_sample(line, name, sizeof(name), le, &v);
        if (!type[0] || !of_family(name, fam, type))
            fail_msg("sample outside its family (%s): %s", fam, line);
        samples++;
        size_t nn = strlen(name);
        if (nn > 7 && !strcmp(name + nn - 7, "_bucket")) {
            assert_true(le[0]);
            assert_true(v >= 0);
            if (!strcmp(le, "+Inf")) {
                inf = v;
                assert_true(v >= last_bucket);
                last_bucket = -1;
            } else {
                if (last_bucket >= 0 && v < last_bucket)
                    fail_msg("buckets fall: %s", line);
                last_bucket = v;
            }
        } else if (nn > 6 && !strcmp(name + nn - 6, "_count")) {
            if (inf != v)
                fail_msg("_count is not the +Inf bucket: %s", line);
        }
    }
    return samples;
}

/* Figures as a metad's MDT and a stord would give them. */
static void figures(struct net_server_figures *f)
{
    memset(f, 0, 2 * sizeof(*f));
    f[0].uptime_ns = 12500000000ull;
    f[0].connections = 7;
    f[0].queued = 2;
    f[0].parked = 9;
    f[1].workers = 5;
    struct net_op_figures *o = &f[0].ops[PROTO_OP_OPEN];
    o->count = 5;
    o->errors = 1;
    o->service_ns = 5 * 40000;
    o->wait_ns = 5 * 3000;
    o->service_hist[6] = 5; /* 32..64 us */
    o->wait_hist[2] = 4;
    o->wait_hist[PROTO_STAT_BUCKETS - 1] = 1; /* past every bound */
    f[0].ops[PROTO_OP_GETATTR].count = 2;
    f[0].ops[PROTO_OP_GETATTR].service_hist[0] = 2;
    f[0].ops[PROTO_OP_GETATTR].wait_hist[0] = 2;
    f[1].uptime_ns = 1000;
    f[1].ops[PROTO_OP_WRITE].count = 3;
    f[1].ops[PROTO_OP_WRITE].service_hist[10] = 3;
    f[1].ops[PROTO_OP_WRITE].wait_hist[0] = 3;
}

static void test_text(void **state)
{
    (void)state;
    struct net_server_figures f[2];
    figures(f);
    struct net_metrics_source v[2] = {{"stria-metad", "MDT0000", NULL},
                                      {"stria-stord", NULL, NULL}};
    char *text;
    size_t len;
    assert_int_equal(net_metrics_text(v, f, 2, &text, &len), 0);
    assert_int_equal(strlen(text), len);
    /* 5 gauges x 2, 3 ops x 2 counters, 3 ops x 2 histograms x (24 + 2). */
    assert_int_equal(check_exposition(text, len), 10 + 6 + 3 * 2 * (PROTO_STAT_BUCKETS + 2));
    const char *want[] = {
        "stria_uptime_seconds{daemon=\"stria-metad\",target=\"MDT0000\"} 12.500\n",
        "stria_connections{daemon=\"stria-metad\",target=\"MDT0000\"} 7\n",
        "stria_requests_queued{daemon=\"stria-metad\",target=\"MDT0000\"} 2\n",
        "stria_requests_parked{daemon=\"stria-metad\",target=\"MDT0000\"} 9\n",
        "stria_workers{daemon=\"stria-stord\"} 5\n",
        "stria_requests_total{daemon=\"stria-metad\",target=\"MDT0000\",op=\"OPEN\"} 5\n",
        "stria_request_errors_total{daemon=\"stria-metad\",target=\"MDT0000\",op=\"OPEN\"} 1\n",
        "stria_requests_total{daemon=\"stria-stord\",op=\"WRITE\"} 3\n",
        /* 32..64 us is under 64 us, not under 32 */
        "stria_request_service_seconds_bucket{daemon=\"stria-metad\",target=\"MDT0000\","
        "op=\"OPEN\",le=\"3.2e-05\"} 0\n",
        "stria_request_service_seconds_bucket{daemon=\"stria-metad\",target=\"MDT0000\","
        "op=\"OPEN\",le=\"6.4e-05\"} 5\n",
        "stria_request_service_seconds_sum{daemon=\"stria-metad\",target=\"MDT0000\","
        "op=\"OPEN\"} 0.000200000\n",
        /* the unbounded bucket only in +Inf */
        "stria_request_wait_seconds_bucket{daemon=\"stria-metad\",target=\"MDT0000\","
        "op=\"OPEN\",le=\"4.194304\"} 4\n",
        "stria_request_wait_seconds_bucket{daemon=\"stria-metad\",target=\"MDT0000\","
        "op=\"OPEN\",le=\"+Inf\"} 5\n",
        "# TYPE stria_request_wait_seconds histogram\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(text, want[i]))
            fail_msg("missing: %s", want[i]);
    free(text);
}

/* A label value that needs escaping stays one well-formed line. */
static void test_escape(void **state)
{
    (void)state;
    struct net_server_figures f[2];
    figures(f);
    struct net_metrics_source v[1] = {{"stria-\"x\"", "MDT\\0\n", NULL}};
    char *text;
    size_t len;
    assert_int_equal(net_metrics_text(v, f, 1, &text, &len), 0);
    check_exposition(text, len);
    assert_non_null(strstr(text, "{daemon=\"stria-\\\"x\\\"\",target=\"MDT\\\\0\\n\"}"));
    free(text);
}

/* No server has served anything yet: families without samples, still valid. */
static void test_empty(void **state)
{
    (void)state;
    static struct net_server_figures f;
    struct net_metrics_source v = {"stria-mgmtd", NULL, NULL};
    char *text;
    size_t len;
    assert_int_equal(net_metrics_text(&v, &f, 1, &text, &len), 0);
    assert_int_equal(check_exposition(text, len), 5); /* the gauges */
    free(text);
}

static int request(const char *s)
{
    return net_metrics_request(s, strlen(s));
}

static void test_request(void **state)
{
    (void)state;
    assert_int_equal(request("GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n"), 200);
    assert_int_equal(request("GET /metrics HTTP/1.0\n\n"), 200);
    assert_int_equal(request("GET /metrics?x=1 HTTP/1.1\r\n\r\n"), 200);
    assert_int_equal(request("GET / HTTP/1.1\r\n\r\n"), 404);
    assert_int_equal(request("GET /metricsx HTTP/1.1\r\n\r\n"), 404);
    assert_int_equal(request("POST /metrics HTTP/1.1\r\n\r\n"), 405);
    assert_int_equal(request("HEAD /metrics HTTP/1.1\r\n\r\n"), 405);
    /* incomplete: wait for more */
    assert_int_equal(request(""), 0);
    assert_int_equal(request("GE"), 0);
    assert_int_equal(request("GET /metrics HTTP/1.1\r\n"), 0);
    assert_int_equal(request("GET /metrics HTTP/1.1\r\nHost: x\r\n"), 0);
    /* garbage, told at once */
    assert_int_equal(request("\x16\x03\x01"), 400); /* a TLS hello */
    assert_int_equal(request("get /metrics HTTP/1.1\r\n\r\n"), 400);
    assert_int_equal(request(" GET"), 400);
    assert_int_equal(request("GET metrics HTTP/1.1\r\n\r\n"), 400);
    assert_int_equal(request("GET /metrics\r\n\r\n"), 400);
    assert_int_equal(request("GET /metrics HTTP/2.0\r\n\r\n"), 400);
    assert_int_equal(request("GET /met rics HTTP/1.1\r\n\r\n"), 400);
    assert_int_equal(request("GET  /metrics HTTP/1.1\r\n\r\n"), 400);
    assert_int_equal(request("GET /metrics HTTP/1.1 \r\n\r\n"), 400);
    assert_int_equal(request("ABCDEFGHIJKLMNOPQRSTUVWXYZ /"), 400);
    assert_int_equal(net_metrics_request("GET /\0 HTTP/1.1\r\n\r\n", 20), 400);
    /* too long without an end */
    char big[NET_METRICS_REQ_MAX + 1];
    memset(big, 'a', sizeof(big));
    memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
    assert_int_equal(net_metrics_request(big, sizeof(big) - 1), 431);
    memcpy(big, "GET /", 5);
    assert_int_equal(net_metrics_request(big, sizeof(big) - 1), 431);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
