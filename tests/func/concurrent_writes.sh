#!/usr/bin/env bash
# Large writes on the OSTs, both ways they can go:
#  - buffered, with their writeback started at once (writeback_min, the
#    default): one stream of 1 MiB calls, read back with the cache dropped;
#  - around the page cache (O_DIRECT) when writes meet on an OST
#    (direct_io_min, set to 512K here): 4 threads of bench_data each write
#    a quarter of a file striped over 4 OSTs in 1 MiB calls, then 8 writers
#    of a shard each.
# Every block is checked on reading, and fsync finds the files whole.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

step "a cluster of 4 OSTs"
cluster_up --osts 4 --no-mount
step "one stream of 1 MiB calls: buffered, its writeback started at once"
"$BUILD/bench/bench_data" --stria "$CONF" seq --size 64M --block 1M --threads 1 ||
    fail "a lone stream did not read back as written"
grep -q "start their writeback at once" "$DIR/log/stord.log" ||
    fail "no write started its writeback early: writeback_min was not tested"

step "a reader beside a writer of the same blocks: no read is torn, none fails"
# Reads of whole blocks go from the OST's page cache unread (sendfile_min);
# a write racing the send makes the client ask again for a checked read.
"$BUILD/tests/read_race" "$CONF" /race 400 60 >"$T/race.out" 2>"$T/race.err" ||
    { cat "$T/race.out" "$T/race.err"; fail "a read beside a writer was torn or failed"; }
cat "$T/race.out"
echo "  reads asked again after a failed check: $(grep -c "asking for a checked read" "$T/race.err")"
grep -v "asking for a checked read" "$T/race.err" | grep -i "error\|mismatch" &&
    fail "the race left errors"

step "direct_io_min = 512K: the storage daemon restarted with it"
pid=$(daemon_pid stord)
kill "$pid"
wait_for 10 bash -c "! kill -0 $pid" || fail "stria-stord did not stop"
echo "direct_io_min = 512K" >>"$DIR/conf/stord.conf"
"$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up did not restart stria-stord"
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
