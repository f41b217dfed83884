#!/usr/bin/env bash
# bench/bench_storm.sh BUILD_DIR: a metadata storm (issue 25). N simulated
# ranks, each its own libstria client with its own connections, stat,
# open, read 64 KiB and close files of one directory at the same moment
# (bench_storm), for N in STORM_RANKS (100 1000 10000), on a cluster of 1
# MDT and on one of 4 MDTs with the directory striped over all 4. Each run
# prints ops/s, p50, p99 and max latency of one op (stat + open + read +
# close of a file), the spread between ranks (slowest / fastest), the
# ranks that could not connect, and each daemon's peak memory (VmHWM);
# the baseline is the same cluster's run at the smallest N, and the goal
# (issue 25) is at least 0.8 of it at 10,000 ranks with no op over 1 s.
# STORM_FILES files (1000) of 64 KiB; STORM_PER_RANK ops per rank (10).
# Raises kernel.pid_max and the open-file limit for the run (each rank is
# a thread, libstria adds one, and each server thread is one more) and
# puts them back on exit. Output: stdout, appended to
# bench/results/last-run-storm.txt.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/lib.sh"
bench_setup $# "${1:-}" stria bench/bench_storm
STORM_RANKS=${STORM_RANKS:-"100 1000 10000"}
STORM_FILES=${STORM_FILES:-1000}
STORM_PER_RANK=${STORM_PER_RANK:-10}
PID_MAX=$(cat /proc/sys/kernel/pid_max)

cleanup() {
    local rc=$?
    set +e
    echo "$PID_MAX" >/proc/sys/kernel/pid_max 2>/dev/null
    bench_remove bench_storm.sh
    return "$rc"
}

# peak RSS (VmHWM, MiB) of each daemon of the cluster in CL
daemon_memory() {
    local f pid name
    for f in "$CL"/run/*.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        name=$(basename "$f" .pid)
        awk -v n="$name" '/^VmHWM/ { printf "%s %.0f MiB  ", n, $2 / 1024 }' \
            "/proc/$pid/status" 2>/dev/null || true
    done
}

storm() { # MDTS
    local mdts=$1 n out conf base="" r
    bench_dir stria-bench-storm
    "$BUILD/stria" up --dir "$CL" --mdts "$mdts" --osts 2 --no-mount >/dev/null
    conf="$CL/client.conf"
    if [ "$mdts" -gt 1 ]; then
        "$BUILD/stria" --conf "$conf" setdirstripe -c "$mdts" /storm
    else
        "$BUILD/stria" --conf "$conf" mkdir /storm
    fi
    "$BUILD/bench/bench_storm" --stria "$conf" --dir /storm --files "$STORM_FILES" --make
    echo "== $mdts MDT(s), /storm striped over $mdts, $STORM_FILES files of 64 KiB"
    printf '%7s %9s %8s %8s %9s %7s %8s %7s  %s\n' ranks ops/s p50_ms p99_ms max_ms spread \
        refused vs_min "daemon peak memory"
    for n in $STORM_RANKS; do
        out=$("$BUILD/bench/bench_storm" --stria "$conf" --dir /storm --files "$STORM_FILES" \
            --ranks "$n" --per-rank "$STORM_PER_RANK" 2>"$TMP/storm.err") || true
        r() { awk -v k="$1" '$1 == "RESULT" && $3 == k { print $4 }' <<<"$out"; }
        local ops
        ops=$(r ops_per_s)
        [ -n "$base" ] || base=$ops
        printf '%7s %9s %8s %8s %9s %7s %8s %7s  %s\n' "$n" "${ops:--}" "$(r p50_ms)" "$(r p99_ms)" \
            "$(r max_ms)" "$(r rank_spread)" "$(r connect_failed)" "$(ratio "$ops" "$base")" \
            "$(daemon_memory)"
        if [ "$(r op_failed)" != 0 ] || [ -z "$ops" ]; then
            echo "        ($(r op_failed) ops failed; $(grep -v '^rank' "$TMP/storm.err" | tail -2 | tr '\n' ' '))"
        fi
    done
    echo
    bench_remove bench_storm.sh
}

run() {
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    echo 4194304 >/proc/sys/kernel/pid_max 2>/dev/null || echo "(kernel.pid_max stays $PID_MAX)"
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    echo "== Stria metadata storm, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "commit:  $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)"
    echo "machine: $(uname -sr), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "ranks:   $STORM_RANKS, $STORM_PER_RANK ops each (stat + open + read 64 KiB + close)"
    echo
    storm 1
    storm 4
    echo "== done, $(date -u '+%H:%M:%S UTC'); vs_min = ops/s / ops/s at the smallest N"
}

RESULTS="$SRC/bench/results"
mkdir -p "$RESULTS"
(run) 2>&1 | tee -a "$RESULTS/last-run-storm.txt"
