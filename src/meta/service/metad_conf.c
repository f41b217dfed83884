/*
 * stria-metad's option table (metad_conf.h). The bounds are the table's:
 * a value outside them, or not of the option's type, stops the daemon at
 * start-up with the option named, before any MDT is served.
 */
#include "metad_conf.h"

#include "../../common/util.h"

#include <stddef.h>
#include <stdint.h>

#define O(n, t, lo, hi, d, req, h)                                                                 \
    {                                                                                              \
#n, t, lo, hi, d, req, h, offsetof(struct mdt_service_conf, n)                             \
    }
static const struct cfg_option metad_options[] = {
    DAEMON_BASE_OPTIONS(struct mdt_service_conf, "7401"),
    DAEMON_NODE_OPTIONS(struct mdt_service_conf),
    O(mdt, CFG_LIST, 0, 0, NULL, true,
      "a metadata target to serve, as INDEX:DIRECTORY; repeat for more. The n-th (from 0) "
      "listens on the listen port + n (any free port when that is 0)"),
    O(root_mdts, CFG_INT, 1, 4096, "1", false,
      "MDTs 0..N-1 the root directory of a new file system is striped over (every "
      "stria-metad of the file system must say the same)"),
    O(sync_interval_ms, CFG_INT, 10, 60000, "1000", false,
      "flush committed metadata to disk at least this often (fsync forces it at once)"),
    O(lmdb_map_size, CFG_SIZE, 16 << 20, INT64_MAX, "16G", false,
      "largest size the MDT's LMDB database may grow to"),
    O(default_stripe_count, CFG_INT, -1, 256, "1", false,
      "stripe count of new files where no directory says otherwise (-1: all OSTs)"),
    O(default_stripe_size, CFG_SIZE, 65536, 1 << 30, "1M", false,
      "stripe size of new files where no directory says otherwise (multiple of 64K)"),
    O(lease_ms, CFG_INT, 0, 600000, "10000", false,
      "how long a client may cache names and attributes without hearing from the MDT "
      "(0: no caching); a change waits at most this long for an unreachable client"),
    O(dom_max, CFG_SIZE, 0, INT64_MAX, "8G", false,
      "most bytes of file data each MDT keeps (Data-on-MDT, setstripe -L mdt): a write "
      "past it answers ENOSPC; 0 turns Data-on-MDT off there (new files keep their data "
      "on OSTs)"),
    /* At least a second: migrators report every sixth of it, between
     * copies of 8 MiB. At most ten minutes: a writer that meets a dead
     * migrator's fences waits that long. */
    O(migrate_stale_ms, CFG_INT, 1000, 600000, "30000", false,
      "an online migration (stria migrate, stria rebalance) whose migrator has not reported "
      "for this long is taken for dead: the next migration of the file, a writer waiting on "
      "it or stria fsck --repair undoes or finishes it. Migrators learn it from the MDT and "
      "report every sixth of it"),
};
#undef O

const struct cfg_table metad_table = {"stria-metad",
                                      "Stria metadata service: serves metadata targets",
                                      metad_options, ARRAY_SIZE(metad_options)};
