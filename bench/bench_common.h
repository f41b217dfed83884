/*
 * Small helpers the benchmark programs share (header only: each program is
 * one file and links nothing else for them).
 */
#ifndef STRIA_BENCH_COMMON_H
#define STRIA_BENCH_COMMON_H

#include <fcntl.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

/* Seconds on the monotonic clock. */
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Drop the kernel's page cache so reads come from the disk (here also the
 * storage targets', which run on this machine). Returns true if it was
 * dropped; sync(2) first, since only clean pages are dropped. Needs root. */
static inline bool drop_caches(void)
{
    sync();
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = write(fd, "3", 1) == 1;
    close(fd);
    return ok;
}

#endif
