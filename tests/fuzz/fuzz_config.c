/*
 * libFuzzer target: the config file parser over a table with one option
 * of every type. The input is written to a file and loaded.
 */
#include "common/config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct conf {
    char *s;
    int64_t i;
    uint64_t z;
    bool b;
    struct cfg_addr a;
    struct cfg_list l;
};

#define O(n, t, lo, hi, d)                                                                         \
    {                                                                                              \
#n, t, lo, hi, d, false, "help", offsetof(struct conf, n)                                  \
    }
static const struct cfg_option opts[] = {
    O(s, CFG_STR, 0, 0, "x"),   O(i, CFG_INT, -5, 5, "1"),   O(z, CFG_SIZE, 0, 1 << 30, "1K"),
    O(b, CFG_BOOL, 0, 0, "no"), O(a, CFG_ADDR, 0, 0, "h:1"), O(l, CFG_LIST, 0, 0, NULL),
};
static const struct cfg_table table = {"fuzz", "fuzz", opts, sizeof(opts) / sizeof(opts[0])};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/stria-fuzz-config-%d", (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    struct conf c = {0};
    char err[256];
    cfg_defaults(&table, &c);
    cfg_load_file(&table, &c, path, err, sizeof(err));
    cfg_free(&table, &c);
    unlink(path);
    return 0;
}
