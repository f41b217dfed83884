/*
 * Composite layouts as users write them (stria.h): `lfs setstripe`'s
 * component options, parsed once for the CLI and the mount's stria.layout
 * attribute, and a layout printed back in the same words.
 */
#include <stria/stria.h>

#include "../common/util.h"
#include "../proto/layout.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t cap, const char *fmt, ...)
{
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

/* A pool's name as the CLI takes it: the layout's rule, and no dot, since
 * FSNAME.POOL splits at the first. */
static bool pool_name_ok(const char *s)
{
    return layout_pool_name_ok(s, true) && !strchr(s, '.');
}

/* -E's END: a size (K, M, G, T), or -1 / eof for the end of file. */
static int parse_end(const char *s, uint64_t *end)
{
    if (!strcmp(s, "-1") || !strcasecmp(s, "eof"))
        return *end = UINT64_MAX, 0;
    return util_parse_size(s, end) < 0 || *end == 0 ? -EINVAL : 0;
}

int stria_comps_parse(int argc, char *const *argv, struct stria_comp_spec *out, unsigned max,
                      unsigned *n, char *why, size_t whylen)
{
    unsigned k = 0;
    uint64_t start = 0;
    if (why && whylen)
        why[0] = 0;
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i], *arg = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(opt, "-E") && strcmp(opt, "-c") && strcmp(opt, "-S") && strcmp(opt, "-i") &&
            strcmp(opt, "-p") && strcmp(opt, "-L"))
            return bad(why, whylen, "unknown option '%s' in a composite layout", opt);
        if (!arg)
            return bad(why, whylen, "%s needs a value", opt);
        i++;
        if (!strcmp(opt, "-E")) {
            if (k == max)
                return bad(why, whylen, "at most %u components", max);
            struct stria_comp_spec *c = &out[k];
            /* -c, -S and -p carry over from the component before, as lfs's. */
            *c = k && !out[k - 1].on_mdt ? out[k - 1] : (struct stria_comp_spec){.first_ost = -1};
            c->first_ost = -1;
            if (parse_end(arg, &c->end))
                return bad(why, whylen, "invalid component end '%s' (a size, or -1 for EOF)", arg);
            if (c->end <= start)
                return bad(why, whylen, "component end %s is not after the one before", arg);
            if (c->end != UINT64_MAX && c->end % (64u << 10))
                return bad(why, whylen, "component end %s is not a multiple of 64K", arg);
            start = c->end;
            k++;
            continue;
        }
        if (k == 0)
            return bad(why, whylen, "%s before the first -E", opt);
        struct stria_comp_spec *c = &out[k - 1];
        int64_t v;
        uint64_t u;
        if (!strcmp(opt, "-c")) {
            if (util_parse_i64(arg, &v) < 0 || v < -1 || v > STRIA_MAX_STRIPES)
                return bad(why, whylen, "invalid stripe count '%s' (-1 all, 0 default, 1..%d)", arg,
                           STRIA_MAX_STRIPES);
            c->stripe_count = (int32_t)v;
        } else if (!strcmp(opt, "-S")) {
            if (util_parse_size(arg, &u) < 0 || u % (64u << 10) || u > (1u << 30))
                return bad(why, whylen, "invalid stripe size '%s' (a multiple of 64K up to 1G)",
                           arg);
            c->stripe_size = (uint32_t)u;
        } else if (!strcmp(opt, "-L")) {
            /* mdt: Data-on-MDT, the first component only (lfs's -L). */
            if (!strcmp(arg, "raid0")) {
                c->on_mdt = 0;
                continue;
            }
            if (strcmp(arg, "mdt"))
                return bad(why, whylen, "-L takes mdt or raid0, not '%s'", arg);
            if (k != 1)
                return bad(why, whylen, "only the first component may be -L mdt");
            if (c->end > (1u << 30))
                return bad(why, whylen, "a -L mdt component ends at 1G at most");
            c->on_mdt = 1;
            c->stripe_count = 1;
            c->stripe_size = 0;
            c->pool[0] = 0;
        } else if (!strcmp(opt, "-p")) {
            /* [FSNAME.]POOL, as lfs takes it (the caller checks FSNAME);
             * none: no pool, not the one before. */
            const char *dot = strchr(arg, '.'), *pool = dot ? dot + 1 : arg;
            if (!strcmp(pool, "none"))
                pool = "";
            if (strlen(pool) >= sizeof(c->pool) || !pool_name_ok(pool))
                return bad(why, whylen,
                           "invalid pool name '%s' (up to %zu of A-Z a-z 0-9 _ -, or none)", arg,
                           sizeof(c->pool) - 1);
            snprintf(c->pool, sizeof(c->pool), "%s", pool);
        } else {
            if (util_parse_i64(arg, &v) < 0 || v < -1 || v > INT32_MAX)
                return bad(why, whylen, "invalid OST index '%s' (-1 for any)", arg);
            c->first_ost = (int32_t)v;
        }
    }
    if (k == 0)
        return bad(why, whylen, "no component (-E END ...)");
    if (out[k - 1].end != UINT64_MAX)
        return bad(why, whylen, "the last component must end at EOF (-E -1)");
    *n = k;
    return 0;
}

/* "1M", "64K", "EOF": what -E takes back. */
static int put_size(char *buf, size_t cap, uint64_t v)
{
    if (v == UINT64_MAX)
        return snprintf(buf, cap, "EOF");
    static const char units[] = "KMGT";
    int u = -1;
    while (u < 3 && v && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    return u < 0 ? snprintf(buf, cap, "%" PRIu64, v)
                 : snprintf(buf, cap, "%" PRIu64 "%c", v, units[u]);
}

int stria_comps_format(const struct stria_layout *l, char *buf, size_t cap)
{
    size_t n = 0;
    if (cap)
        buf[0] = 0;
    for (uint32_t i = 0; i < l->ncomp && i < STRIA_MAX_COMPONENTS; i++) {
        char end[32], size[32];
        put_size(end, sizeof(end), l->comp[i].end);
        put_size(size, sizeof(size), l->comp[i].stripe_size);
        int32_t count =
            l->comp[i].stripe_count == UINT32_MAX ? -1 : (int32_t)l->comp[i].stripe_count;
        /* A first OST only where one was asked for: an instantiated
         * component's own would pin a copy of the layout there. */
        char ost[24] = "";
        if (!l->comp[i].init && l->comp[i].first_ost >= 0)
            snprintf(ost, sizeof(ost), " -i %d", l->comp[i].first_ost);
        int w = l->comp[i].on_mdt
                    ? snprintf(buf + n, n < cap ? cap - n : 0, "%s-E %s -L mdt", i ? " " : "", end)
                    : snprintf(buf + n, n < cap ? cap - n : 0, "%s-E %s -c %d -S %s%s",
                               i ? " " : "", end, count, size, ost);
        if (w < 0)
            return -EINVAL;
        n += (size_t)w;
        /* The pool only when there is one, and none when one stops. */
        const char *pool = l->comp[i].pool[0]            ? l->comp[i].pool
                           : i && l->comp[i - 1].pool[0] ? "none"
                                                         : NULL;
        if (pool) {
            w = snprintf(buf + n, n < cap ? cap - n : 0, " -p %.15s", pool);
            if (w < 0)
                return -EINVAL;
            n += (size_t)w;
        }
    }
    return n < cap ? (int)n : -ERANGE;
}
