#!/usr/bin/env bash
# bench/bench_dne.sh BUILD_DIR: metadata rates of one directory striped over
# 1, 2 and 4 MDTs (Lustre calls this DNE), beside the local file system.
#
# For each MDT count N (DNE_MDTS, default "1 2 4") it starts a cluster of N
# MDTs, each in a stria-metad of its own (so each MDT has its own process,
# threads and store, as on real nodes), and runs bench_meta: DNE_FILES
# (200,000) empty files created, stat'ed and unlinked in one directory
# striped over the N MDTs by DNE_THREADS (4) client threads per MDT through
# libstria, and the same on the local file system right after each phase.
# Then it restarts the N stria-metad under callgrind and repeats the three
# phases with DNE_CG_FILES (4,000) files, once with one client thread and
# once with DNE_CG_THREADS (16) per MDT, to count the instructions all N daemons'
# request threads execute per operation: alone, and saturated. Output goes to
# stdout and is appended to bench/results/last-run-dne.txt. On any exit
# every cluster stops and the temporary directory goes.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/lib.sh"
bench_setup $# "${1:-}" stria stria-metad bench/bench_meta
DNE_MDTS=${DNE_MDTS:-1 2 4}
DNE_FILES=${DNE_FILES:-200000}
DNE_THREADS=${DNE_THREADS:-4}
DNE_CG_FILES=${DNE_CG_FILES:-4000}
DNE_CG_THREADS=${DNE_CG_THREADS:-16}
CREATE_TARGET=20000
CG=1
command -v valgrind >/dev/null 2>&1 && command -v callgrind_control >/dev/null 2>&1 || CG=

VG_PIDS=()
CLUSTERS=()
cleanup() {
    local rc=$?
    for p in "${VG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${VG_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    for c in "${CLUSTERS[@]}"; do "$BUILD/stria" down --dir "$c" >/dev/null 2>&1 || true; done
    rm -rf "$TMP"
    exit $rc
}
bench_dir stria-bench-dne
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$RESULTS" "$TMP/local"
exec > >(tee -a "$RESULTS/last-run-dne.txt") 2>&1

echo "== Stria striped-directory (DNE) scaling, $(date -u '+%Y-%m-%d %H:%M:%S') UTC"
echo "commit:  $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)"
echo "machine: $(uname -sr), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "files:   $DNE_FILES in one directory striped over N MDTs, $DNE_THREADS client threads per MDT;" \
    "instructions over $DNE_CG_FILES files, 1 thread and $DNE_CG_THREADS per MDT"

# The row of bench_meta's final table for a phase: stria, local, ratio.
row() { awk -v p="$2" '$1 ~ /^[0-9]+$/ && $2 == p && NF == 5 { print $3, $4, $5 }' "$1"; }

# metad instance j's name in a `stria up` cluster.
inst() { if [ "$1" -eq 0 ]; then echo metad; else echo "metad$1"; fi; }

declare -A RATE INSTR
for n in $DNE_MDTS; do
    cl="$TMP/c$n"
    CLUSTERS+=("$cl")
    echo
    echo "== $n MDT(s), $n stria-metad"
    "$BUILD/stria" up --dir "$cl" --mdts "$n" --metads "$n" --osts 1 --no-mount >"$TMP/up$n.out" 2>&1 ||
        { cat "$TMP/up$n.out"; exit 1; }
    "$BUILD/bench/bench_meta" --conf "$cl/client.conf" --local "$TMP/local" --files "$DNE_FILES" \
        --threads $((DNE_THREADS * n)) --mdts "$n" >"$TMP/meta$n.out" 2>&1 || { cat "$TMP/meta$n.out"; exit 1; }
    grep -E "^ +threads=" "$TMP/meta$n.out" || true
    for ph in create stat unlink; do RATE[$n,$ph]=$(row "$TMP/meta$n.out" "$ph"); done

    if [ -n "$CG" ]; then
        # Each stria-metad gives way to the same under callgrind, once per
        # client thread count: 1 (every create a batch of its own) and
        # DNE_CG_THREADS per MDT (16: the daemons saturated, so that
        # requests queue and share a commit, as in a metadata storm; per
        # MDT, so that N MDTs are compared at the same load on each, as
        # 16 threads over 4 MDTs would leave each with 4).
        for th in 1 $((DNE_CG_THREADS * n)); do
            pids=()
            for j in $(seq 0 $((n - 1))); do
                cg_daemon "$cl" "$(inst "$j")" "$TMP/cg$n-$th-$j.out"
                pids+=("$CG_PID")
                VG_PIDS+=("$CG_PID")
            done
            cg_ready "$cl/client.conf" || { echo "bench_dne.sh: stria-metad under callgrind never answered"; exit 1; }
            cg_hook "$TMP/hook$n-$th" "${pids[@]}"
            rm -rf "$TMP/local"/*
            "$BUILD/bench/bench_meta" --conf "$cl/client.conf" --local "$TMP/local" \
                --files "$DNE_CG_FILES" --threads "$th" --mdts "$n" --hook "$TMP/hook$n-$th" \
                >"$TMP/cgmeta$n-$th.out" 2>&1 || { cat "$TMP/cgmeta$n-$th.out"; exit 1; }
            # Sum each phase's dumps over the N daemons.
            for ph in create stat unlink; do
                INSTR[$n,$((th > 1 ? DNE_CG_THREADS : 1)),$ph]=$(($(cg_total "$ph" "$TMP"/cg$n-$th-*.out.*) / DNE_CG_FILES))
            done
            for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
            VG_PIDS=()
        done
    fi
    "$BUILD/stria" down --dir "$cl" >/dev/null 2>&1 || true
done

echo
echo "== $DNE_FILES files, $DNE_THREADS threads per MDT: ops/s (stria, local, stria/local) and" \
    "instructions per op of all stria-metad request threads with 1 client thread and $DNE_CG_THREADS per MDT"
printf "%-5s %-7s %12s %12s %8s %12s %12s  %s\n" MDTs phase "stria ops/s" "local ops/s" ratio \
    "instr/op 1t" "instr/op ${DNE_CG_THREADS}t/MDT" "target (${DNE_CG_THREADS}t/MDT)"
for n in $DNE_MDTS; do
    for ph in create stat unlink; do
        read -r s l r <<<"${RATE[$n,$ph]:-- - -}"
        i1=${INSTR[$n,1,$ph]:--}
        ins=${INSTR[$n,$DNE_CG_THREADS,$ph]:--}
        tgt=
        if [ "$ph" = create ] && [ "$ins" != - ]; then
            if [ "$ins" -lt "$CREATE_TARGET" ]; then tgt="< $CREATE_TARGET met"; else tgt="< $CREATE_TARGET not met"; fi
        fi
        printf "%-5s %-7s %12s %12s %8s %12s %12s  %s\n" "$n" "$ph" "$s" "$l" "$r" "$i1" "$ins" "$tgt"
    done
done
one=${RATE[1,create]:-}
for n in $DNE_MDTS; do
    [ -n "$one" ] || break
    read -r s1 _ <<<"${RATE[1,create]}"
    read -r sn _ <<<"${RATE[$n,create]}"
    echo "create with $n MDT(s): $(ratio "$sn" "$s1") x the rate of 1 MDT"
done
echo
echo "== done, $(date -u '+%H:%M:%S') UTC; load average $(cut -d' ' -f1-3 /proc/loadavg)"
