#!/usr/bin/env bash
# bench/bench_mdt.sh BUILD_DIR: the metadata side's instructions per operation.
#
# Starts a cluster in a temporary directory, then restarts its stria-metad
# under valgrind's callgrind, which counts the instructions every thread of
# the daemon executes (repeatable where times are not). bench_meta then
# creates, stats and unlinks MDT_FILES empty files in one directory through
# libstria with MDT_THREADS client threads; around each phase its --hook zeroes the
# daemon's counters and dumps them (callgrind_control), and this script
# divides the phase's instruction total by its operations. The same phases
# run on the local file system as bench_meta's baseline, and the ops/s of
# both are printed, but under callgrind the daemon runs tens of times
# slower: read rates from bench/run.sh, instructions from here. The total
# includes everything the daemon did during the phase (its heartbeat and
# flush ticks, the clients' LEASE_POLL), which over a phase of thousands of
# operations is a small share. Output goes to stdout and is appended to
# bench/results/last-run-mdt.txt. On any exit the cluster stops and the
# directory goes. MDT_KEEP=DIR keeps the callgrind dumps there, for
# callgrind_annotate.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/lib.sh"
bench_setup $# "${1:-}" stria stria-metad bench/bench_meta
for tool in valgrind callgrind_control; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "bench_mdt.sh: $tool is not installed (package valgrind)" >&2
        exit 2
    fi
done
MDT_FILES=${MDT_FILES:-5000}
# Client threads. Under callgrind the daemon's threads run one at a time,
# so more clients do not grow its group-commit batches here; they only add
# switching (4 threads measured 50,654 per create against 43,706 for one).
MDT_THREADS=${MDT_THREADS:-1}
# Server-side instructions per create the metadata-scale issue asks for.
CREATE_TARGET=20000

VG_PID=
cleanup() {
    local rc=$?
    [ -n "$VG_PID" ] && kill "$VG_PID" 2>/dev/null && wait "$VG_PID" 2>/dev/null
    bench_remove bench_mdt.sh
    exit $rc
}
trap cleanup EXIT INT TERM

bench_dir stria-bench-mdt
mkdir -p "$RESULTS"
exec > >(tee -a "$RESULTS/last-run-mdt.txt") 2>&1

echo "== Stria MDT instruction count, $(date -u '+%Y-%m-%d %H:%M:%S') UTC"
echo "commit:  $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)"
echo "machine: $(uname -sr), $(nproc) cores; $(valgrind --version)"
echo "files:   $MDT_FILES in one directory, $MDT_THREADS client threads"
"$BUILD/stria" up --dir "$CL" --no-mount >"$TMP/up.out" 2>&1 || {
    cat "$TMP/up.out"
    exit 1
}
CONF="$CL/client.conf"

# The cluster's stria-metad gives way to the same under callgrind.
cg_daemon "$CL" metad "$TMP/cg.out"
VG_PID=$CG_PID
cg_ready "$CONF" || { echo "bench_mdt.sh: stria-metad under callgrind never answered"; cat "$TMP/cg.out.log"; exit 1; }
cg_hook "$TMP/hook" "$VG_PID"
mkdir -p "$TMP/local"
"$BUILD/bench/bench_meta" --conf "$CONF" --local "$TMP/local" --files "$MDT_FILES" \
    --threads "$MDT_THREADS" --hook "$TMP/hook" >"$TMP/meta.out" 2>&1 || { cat "$TMP/meta.out"; exit 1; }
cat "$TMP/meta.out"

echo
echo "== instructions executed by stria-metad per operation (callgrind, all threads)"
printf "%-8s %10s %16s %12s  %s\n" phase ops instructions "instr/op" target
for phase in create stat unlink; do
    total=$(cg_total "$phase" "$TMP"/cg.out.*)
    per=$(awk -v t="$total" -v n="$MDT_FILES" 'BEGIN { printf "%.0f", t / n }')
    tgt=
    if [ "$phase" = create ]; then
        if [ "$per" -lt "$CREATE_TARGET" ]; then tgt="< $CREATE_TARGET (met)"; else tgt="< $CREATE_TARGET (not met)"; fi
    fi
    printf "%-8s %10s %16s %12s  %s\n" "$phase" "$MDT_FILES" "$total" "$per" "$tgt"
done
if [ -n "${MDT_KEEP:-}" ]; then
    mkdir -p "$MDT_KEEP" && cp "$TMP"/cg.out.* "$MDT_KEEP"/
    echo "(callgrind dumps kept in $MDT_KEEP: callgrind_annotate FILE)"
fi
echo
echo "== done, $(date -u '+%H:%M:%S') UTC"
