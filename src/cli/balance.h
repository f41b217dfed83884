/*
 * How evenly the OSTs are filled: what `stria df` flags and `stria
 * rebalance` (rebalance.c) evens out. An OST's fill is its used bytes
 * over its total; it is out of balance when its fill differs from the
 * mean fill of the online OSTs by more than threshold percent of that
 * mean (relative, so that a cluster a tenth full and one nine tenths full
 * are judged alike).
 */
#ifndef STRIA_CLI_BALANCE_H
#define STRIA_CLI_BALANCE_H

#include <stria/stria.h>

#include <stdbool.h>
#include <stddef.h>

#define BALANCE_THRESHOLD_DEFAULT 20.0

/* The mean fill of the online OSTs of t (0 if none). */
double balance_mean(const struct stria_target *t, size_t n);
/* t's fill (used / total; 0 for an OST reporting no size). */
double balance_fill(const struct stria_target *t);
/* How far t's fill is from mean, in percent of mean (+ fuller). */
double balance_off(const struct stria_target *t, double mean);
/* Print, after df's table, each online OST out of balance (nothing when
 * none is). */
void balance_report(const struct stria_target *t, size_t n, double threshold);

#endif
