/*
 * Log lines go to stderr, which daemons started by `stria up` have redirected
 * to a file. Each line is formatted into a stack buffer and written with one
 * write(2) so lines from different threads never interleave.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static const char *log_component = "stria";
static enum log_level log_max = LOG_INFO;
static const char *level_names[] = {"error", "warn", "info", "debug"};

void log_init(const char *component, enum log_level level)
{
    log_component = component;
    log_max = level;
}

int log_level_parse(const char *s, enum log_level *out)
{
    for (int i = 0; i <= LOG_DEBUG; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -EINVAL;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level > log_max)
        return;
    char line[1024];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line),
                     "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, level_names[level], log_component);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

bool log_limit_pass(struct log_limit *l, int64_t period_ms, uint64_t *held)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    int64_t next = __atomic_load_n(&l->next_ms, __ATOMIC_ACQUIRE);
    /* One thread wins the period; the others count themselves held. */
    if (now < next || !__atomic_compare_exchange_n(&l->next_ms, &next, now + period_ms, false,
                                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        __atomic_fetch_add(&l->held, 1, __ATOMIC_RELAXED);
        return false;
    }
    *held = __atomic_exchange_n(&l->held, 0, __ATOMIC_RELAXED);
    return true;
}

const char *log_err(int rc)
{
    static __thread char buf[96];
    int e = rc < 0 ? -rc : rc;
    const char *name = strerrorname_np(e);
    snprintf(buf, sizeof(buf), "-%s (%s)", name ? name : "E?", strerror(e));
    return buf;
}
