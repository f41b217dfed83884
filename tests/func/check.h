/*
 * The whole-cluster C tests check many things and report every failure,
 * not just the first: CHECK prints where and why, and counts.
 */
#ifndef STRIA_CHECK_H
#define STRIA_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#endif
