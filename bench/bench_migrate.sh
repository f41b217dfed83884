#!/usr/bin/env bash
# bench/bench_migrate.sh BUILD_DIR: migration and rebalancing (issue 24),
# each figure beside its baseline from the same run.
#
# On a fresh 4-OST cluster:
# 1. stria migrate of one MIG_SIZE file (2G) between 1 and 4 stripes,
#    beside `stria cp` of the same file within the cluster (the same bytes
#    read and written once), alternated MIG_ROUNDS times (2): MiB/s and
#    migrate / cp.
# 2. stria rebalance of MIG_SIZE in 64 MiB files all on OST0000, beside
#    stria cp of the same files: MiB/s and the ratio.
# 3. What training I/O keeps: bench_io (sequential write then read of a
#    1 GiB file over the 4 OSTs, caches dropped) alone, then while a
#    rebalance like 2's runs with --max-bandwidth MIG_BW (100M), then
#    while it runs without a limit: each rate and its fraction of the one
#    alone.
# On any exit the cluster stops and its directory goes.
# Output: stdout, appended to bench/results/last-run-migrate.txt.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/lib.sh"
bench_setup $# "${1:-}" stria bench/bench_io
MIG_SIZE=${MIG_SIZE:-2G}
MIG_ROUNDS=${MIG_ROUNDS:-2}
MIG_BW=${MIG_BW:-100M}

cleanup() {
    local rc=$?
    bench_remove bench_migrate.sh
    return "$rc"
}

S() { "$BUILD/stria" --conf "$CL/client.conf" "$@"; }
now() { date +%s.%N; }
mibs() { awk -v b="$1" -v t0="$2" -v t1="$3" 'BEGIN { printf "%.1f", b / 1048576 / (t1 - t0) }'; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }

# bench_io's read (or write) MiB/s of libstria, from its output.
io_rate() { awk -v t="$1" '$1 == t && $2 == "stria" { print $3; exit }' "$2"; }

# Fill OST0000 with the rebalance's files again (from $TMP/part).
pin_all() {
    S rm -r /pinned >/dev/null 2>&1 || true
    S mkdir /pinned
    S setstripe -c 1 -i 0 /pinned
    for i in $(seq 1 "$NPARTS"); do S cp "$TMP/part" stria:/pinned/p$i >/dev/null; done
}

run() {
    bench_dir stria-bench-migrate
    trap cleanup EXIT
    "$BUILD/stria" up --dir "$CL" --osts 4 --no-mount >/dev/null
    bytes=$(numfmt --from=iec "$MIG_SIZE")
    echo "== bench_migrate: $MIG_SIZE, 4 OSTs, $(date -u +%FT%TZ), commit $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?')"
    head -c "$bytes" /dev/urandom >"$TMP/src"
    S cp -c 1 "$TMP/src" stria:/m >/dev/null

    echo "-- 1. one file: stria migrate beside stria cp within the cluster (MiB/s)"
    local r c sum_m=0 sum_c=0
    for r in $(seq 1 "$MIG_ROUNDS"); do
        for c in 4 1; do
            drop
            t0=$(now); S cp stria:/m stria:/copy >/dev/null; t1=$(now)
            S rm /copy
            cp_rate=$(mibs "$bytes" "$t0" "$t1")
            drop
            t0=$(now); S migrate --no-progress -c $c /m; t1=$(now)
            mig_rate=$(mibs "$bytes" "$t0" "$t1")
            printf "  round %d, to %d stripe(s): migrate %8.1f  cp %8.1f  ratio %s\n" "$r" "$c" \
                "$mig_rate" "$cp_rate" "$(ratio "$mig_rate" "$cp_rate")"
            sum_m=$(awk -v a="$sum_m" -v b="$mig_rate" 'BEGIN { print a + b }')
            sum_c=$(awk -v a="$sum_c" -v b="$cp_rate" 'BEGIN { print a + b }')
        done
    done
    echo "  mean: migrate / cp = $(ratio "$sum_m" "$sum_c")"

    echo "-- 2. rebalance of $MIG_SIZE in 64 MiB files on OST0000, beside stria cp of them"
    S rm /m # one file as large as all the parts would stay where it is
    NPARTS=$((bytes / (64 << 20)))
    head -c $((64 << 20)) "$TMP/src" >"$TMP/part"
    pin_all
    drop
    t0=$(now)
    for i in $(seq 1 "$NPARTS"); do S cp stria:/pinned/p$i stria:/copy$i >/dev/null; done
    t1=$(now)
    for i in $(seq 1 "$NPARTS"); do S rm /copy$i; done
    cp_rate=$(mibs $((NPARTS << 26)) "$t0" "$t1")
    drop
    S rebalance >"$TMP/rb"
    moved=$(sed -n 's/.* moved, \([0-9]*\) MiB in \([0-9.]*\) s.*/\1 \2/p' "$TMP/rb")
    rb_rate=$(awk -v m="${moved% *}" -v s="${moved#* }" 'BEGIN { if (s > 0) printf "%.1f", m / s; else print 0 }')
    echo "  rebalance: ${moved% *} MiB moved at $rb_rate MiB/s; stria cp of the files $cp_rate MiB/s; ratio $(ratio "$rb_rate" "$cp_rate")"
    tail -1 "$TMP/rb" | sed 's/^/  /'

    echo "-- 3. what training I/O keeps while a rebalance runs (bench_io, 1 GiB over 4 OSTs)"
    mkdir -p "$TMP/local"
    io() { "$BUILD/bench/bench_io" --conf "$CL/client.conf" --local "$TMP/local" --path /train \
        --size 1G --block 4M --count 4 --stripe-size 1M >"$TMP/io.out" 2>&1; S rm /train >/dev/null 2>&1 || true; }
    drop; io
    alone_w=$(io_rate write "$TMP/io.out"); alone_r=$(io_rate read "$TMP/io.out")
    echo "  alone:                     write $alone_w MiB/s, read $alone_r MiB/s"
    for bw in "$MIG_BW" none; do
        pin_all
        drop
        if [ "$bw" = none ]; then S rebalance >"$TMP/rb" & else S rebalance --max-bandwidth "$bw" >"$TMP/rb" & fi
        rbpid=$!
        sleep 0.5
        io
        wait $rbpid || true
        w=$(io_rate write "$TMP/io.out"); rd=$(io_rate read "$TMP/io.out")
        printf "  rebalance at %-6s         write %s MiB/s (%s of alone), read %s MiB/s (%s of alone)\n" \
            "$bw" "$w" "$(ratio "$w" "$alone_w")" "$rd" "$(ratio "$rd" "$alone_r")"
        tail -1 "$TMP/rb" | sed 's/^/    /'
    done
}

mkdir -p "$SRC/bench/results"
run 2>&1 | tee -a "$SRC/bench/results/last-run-migrate.txt"
