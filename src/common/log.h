/*
 * Logging: one line per event, "time level component: message key=value".
 * Thread-safe (a single write(2) per line). The level and the component
 * name are process-wide and set once at start-up.
 */
#ifndef STRIA_LOG_H
#define STRIA_LOG_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

/* Set the process name shown on every line and the most verbose level printed. */
void log_init(const char *component, enum log_level level);
/* Parse "error", "warn", "info" or "debug"; returns -EINVAL for anything else. */
int log_level_parse(const char *s, enum log_level *out);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "-ENOSPC (No space left on device)" for rc < 0; a static or thread-local string. */
const char *log_err(int rc);

/* A line that a storm of requests could repeat thousands of times a
 * second (a peer down under every chmod) is printed at most once a period:
 * one log_limit per kind of line, zero-initialised, shared by threads. */
struct log_limit {
    int64_t next_ms; /* on the monotonic clock: the next line may go then */
    uint64_t held;   /* lines held back since the last one printed */
};
/* Whether a line limited by l may be printed now (at most one a period_ms);
 * if so, *held is how many were held back since the one before, which the
 * line should say. */
bool log_limit_pass(struct log_limit *l, int64_t period_ms, uint64_t *held);

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
