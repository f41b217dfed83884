#!/usr/bin/env bash
# Concurrent writers, as in a checkpoint burst: 4 threads of bench_data
# each write a quarter of a file striped over 4 OSTs in 1 MiB calls, so the
# OSTs see writes meet and send them around the page cache (O_DIRECT, see
# direct_io_min); then the file is read back with the cache dropped and
# every block checked. Also 8 writers of a shard each.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

step "a cluster of 4 OSTs"
cluster_up --osts 4 --no-mount
step "4 threads write 256 MiB of one file in 1 MiB calls; read back and checked"
"$BUILD/bench/bench_data" --stria "$CONF" seq --size 256M --block 1M --threads 4 ||
    fail "concurrent writes did not read back as written"
grep -q "go around the page cache" "$DIR/log/stord.log" ||
    fail "no write went around the page cache: the concurrent path was not tested"
step "8 writers of 32 MiB shards at once"
"$BUILD/bench/bench_data" --stria "$CONF" burst --writers 8 --shard 32M ||
    fail "the burst failed"
S() { "$STRIA" --conf "$CONF" "$@"; }
S fsck >/dev/null || fail "fsck after the writes"
echo "PASS: concurrent_writes"
