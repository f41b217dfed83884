/*
 * How evenly the OSTs are filled (balance.h).
 */
#include "balance.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static bool is_ost(const struct stria_target *t)
{
    return t->online && !strncmp(t->kind, "OST", sizeof(t->kind)) && t->bytes_total;
}

double balance_fill(const struct stria_target *t)
{
    return t->bytes_total ? (double)t->bytes_used / (double)t->bytes_total : 0;
}

double balance_mean(const struct stria_target *t, size_t n)
{
    double sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (is_ost(&t[i])) {
            sum += balance_fill(&t[i]);
            k++;
        }
    return k ? sum / (double)k : 0;
}

double balance_off(const struct stria_target *t, double mean)
{
    return mean > 0 ? (balance_fill(t) - mean) * 100.0 / mean : 0;
}

void balance_report(const struct stria_target *t, size_t n, double threshold)
{
    double mean = balance_mean(t, n);
    bool head = false;
    for (size_t i = 0; i < n; i++) {
        double off = is_ost(&t[i]) ? balance_off(&t[i], mean) : 0;
        if (off <= threshold && off >= -threshold)
            continue;
        if (!head) {
            printf("\nout of balance (fill more than %.0f%% from the mean, %.2f%%; stria "
                   "rebalance evens it):\n",
                   threshold, mean * 100);
            head = true;
        }
        /* Not df's row names (FSNAME-OSTxxxx_UUID): scripts that read
         * those by name must not find these. */
        printf("  OST%04" PRIx32 " %+.0f%% (%.2f%% full)\n", t[i].index, off,
               balance_fill(&t[i]) * 100);
    }
}
