#!/usr/bin/env bash
# bench/bench_small.sh BUILD_DIR: small files (issue 24), each Stria figure
# beside its baseline from the same run.
#
# SMALL_FILES files of SMALL_SIZE (100,000 of 64 KiB) are written (open
# O_CREAT, write, close) and then read back (open, read, close, in one
# random order, after the page cache is dropped), through libstria with 1
# and 2 threads beside the local disk, and through the mount beside the
# FUSE passthrough (and the local disk). Every pair runs alternated,
# SMALL_ROUNDS times (2): stria, baseline, stria, baseline. Each Stria phase
# also counts the requests the MDT and the storage servers served per file.
# The local directory and the passthrough's source carry the ext4
# top-directory flag (chattr +T), as in bench_meta. Then the same pairs
# again with Data-on-MDT: the root's default becomes
# `setstripe -E SIZE -L mdt -E -1 -c 1` (SIZE: SMALL_SIZE rounded up to
# 64 KiB), so each file's bytes are kept by the MDT (SMALL_DOM=0 skips
# these; SMALL_PLAIN=0 skips the pairs before them), and once more through
# libstria with its metadata cache and write-behind on (bench_data --cache:
# small files' bytes sent behind their close, as the mount does). On any exit a trap
# unmounts both mounts, stops the cluster and deletes the directory.
# Output: stdout, appended to bench/results/last-run-small.txt.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/lib.sh"
bench_setup $# "${1:-}" stria bench/bench_data
SMALL_FILES=${SMALL_FILES:-100000}
SMALL_SIZE=${SMALL_SIZE:-64K}
SMALL_ROUNDS=${SMALL_ROUNDS:-2}
FUSE=1
if [ ! -x "$BUILD/stria-fuse" ] || [ ! -x "$BUILD/bench/bench_passthrough" ] ||
    ! command -v fusermount3 >/dev/null 2>&1 || ! { : <>/dev/fuse; } 2>/dev/null; then
    FUSE=0
fi

declare -A SUM N
STATUS=0

# One phase of bench_data small on a target; adds its rate to SUM[KEY]
# and prints its request counts.
phase() { # KEY PHASE THREADS TAG TARGET-ARGS...
    local key=$1 ph=$2 th=$3 tag=$4 out rate
    shift 4
    out=$("$BUILD/bench/bench_data" "$@" small --phase "$ph" --threads "$th" --tag "$tag" \
        --files "$SMALL_FILES" --file-size "$SMALL_SIZE") || {
        echo "  $key $ph: FAILED"
        STATUS=1
        return 0
    }
    rate=$(awk -v p="$ph" '$1 == "RESULT" && $3 == p { print $4 }' <<<"$out")
    printf '  %-22s %-5s %10s files/s' "$key" "$ph" "$rate"
    if grep -q 'requests per file' <<<"$out"; then
        printf '   %s' "$(sed -n 's/^  requests per file: //p' <<<"$out")"
    fi
    echo
    SUM[$key,$ph]=$(awk -v a="${SUM[$key,$ph]:-0}" -v b="$rate" 'BEGIN { print a + b }')
    N[$key,$ph]=$((${N[$key,$ph]:-0} + 1))
}

clean() { # TAG TARGET-ARGS...
    local tag=$1
    shift
    "$BUILD/bench/bench_data" "$@" small --phase clean --tag "$tag" --files "$SMALL_FILES" \
        >/dev/null 2>&1 || true
}

# Alternate stria and its baseline: write, write, read, read, then clean.
pair() { # THREADS SKEY BKEY "SARGS" "BARGS"
    local th=$1 sk=$2 bk=$3 r tag
    local -a sa ba
    read -r -a sa <<<"$4"
    read -r -a ba <<<"$5"
    for r in $(seq 1 "$SMALL_ROUNDS"); do
        tag="t$th-r$r"
        phase "$sk" write "$th" "$tag" "${sa[@]}"
        phase "$bk" write "$th" "$tag" "${ba[@]}"
        phase "$sk" read "$th" "$tag" "${sa[@]}"
        phase "$bk" read "$th" "$tag" "${ba[@]}"
        clean "$tag" "${sa[@]}"
        clean "$tag" "${ba[@]}"
    done
}

mean() { awk -v s="${SUM[$1]:-0}" -v n="${N[$1]:-0}" 'BEGIN { if (n) printf "%.0f", s / n; else print 0 }'; }

cleanup() {
    local rc=$? m
    set +e
    for m in "$TMP/mnt-stria" "$TMP/mnt-pt"; do
        mountpoint -q "$m" 2>/dev/null && fusermount3 -uz "$m"
    done
    bench_remove bench_small.sh
    return "$rc"
}

run() {
    bench_dir stria-bench-small
    local L="$TMP/local" PTSRC="$TMP/pt-source" M1="$TMP/mnt-stria" M2="$TMP/mnt-pt"
    mkdir -p "$L" "$PTSRC" "$M1" "$M2"
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    echo "== Stria small-file benchmark, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "commit:  $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)"
    echo "machine: $(uname -sr), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "disk:    $TMP on $(df -PT "$TMP" | awk 'NR == 2 { print $1 " (" $2 ")" }')"
    echo "files:   $SMALL_FILES of $SMALL_SIZE, $SMALL_ROUNDS alternated rounds per pair"
    "$BUILD/stria" up --dir "$CL" --osts 4 --no-mount >/dev/null
    local CONF="$CL/client.conf"
    if chattr +T "$L" "$PTSRC" 2>/dev/null; then
        echo "local:   $L (ext4 top-directory flag set, also on the passthrough's source)"
    else
        echo "local:   $L (no ext4 top-directory flag: creates may slow each other)"
    fi
    if [ "$FUSE" = 1 ]; then
        timeout 60 "$BUILD/stria-fuse" -o conf="$CONF" "$M1" && mountpoint -q "$M1" || FUSE=0
        timeout 60 "$BUILD/bench/bench_passthrough" -o source="$PTSRC" "$M2" &&
            mountpoint -q "$M2" || FUSE=0
    fi
    [ "$FUSE" = 1 ] || echo "(no FUSE here, or a mount failed: the mount's pairs are skipped)"
    echo

    if [ "${SMALL_PLAIN:-1}" = 1 ]; then
        echo "== libstria, 1 thread, beside the local disk"
        pair 1 libstria-1 local-1 "--stria $CONF" "--dir $L"
        echo "== libstria, 2 threads, beside the local disk"
        pair 2 libstria-2 local-2 "--stria $CONF" "--dir $L"
        if [ "$FUSE" = 1 ]; then
            echo "== the mount, 1 thread, beside the FUSE passthrough"
            pair 1 mount-1 passthrough-1 "--dir $M1 --stats $CONF" "--dir $M2"
        fi
        echo
    fi
    if [ "${SMALL_DOM:-1}" = 1 ]; then
        local bytes dom_end
        bytes=$(numfmt --from=iec "${SMALL_SIZE^^}")
        dom_end=$(((bytes + 65535) / 65536 * 64))K
        "$BUILD/stria" --conf "$CONF" setstripe -E "$dom_end" -L mdt -E -1 -c 1 / >/dev/null
        echo "== Data-on-MDT (setstripe -E $dom_end -L mdt -E -1 -c 1 on the root)"
        pair 1 dom-libstria-1 local-1d "--stria $CONF" "--dir $L"
        pair 1 dom-cache-1 local-1d "--stria $CONF --cache" "--dir $L"
        pair 2 dom-libstria-2 local-2d "--stria $CONF" "--dir $L"
        if [ "$FUSE" = 1 ]; then
            pair 1 dom-mount-1 passthrough-1d "--dir $M1 --stats $CONF" "--dir $M2"
        fi
        echo
    fi

    echo "== results (files/s, mean of $SMALL_ROUNDS rounds; ratio = stria / baseline)"
    printf '%-8s %-11s %-14s %10s %10s %7s  %s\n' phase stria baseline stria baseline ratio target
    local ph s t
    for ph in write read; do
        for s in "libstria-1 local-1" "libstria-2 local-2" "mount-1 passthrough-1" "mount-1 local-1" \
            "dom-libstria-1 local-1d" "dom-cache-1 local-1d" "dom-libstria-2 local-2d" \
            "dom-mount-1 passthrough-1d" \
            "dom-mount-1 local-1d"; do
            set -- $s
            [ "${N[$1,$ph]:-0}" -gt 0 ] || continue
            case "$1,$2,$ph" in
            *libstria-*,*,write | dom-cache-*,*,write) t=">= 10000 files/s per thread" ;;
            *libstria-*,*,read | dom-cache-*,*,read) t=">= 0.8" ;;
            *mount-1,passthrough-1*,*) t=">= 0.8" ;;
            *) t="" ;;
            esac
            printf '%-8s %-11s %-14s %10s %10s %7s  %s\n' "$ph" "$1" "$2" "$(mean "$1,$ph")" \
                "$(mean "$2,$ph")" "$(ratio "$(mean "$1,$ph")" "$(mean "$2,$ph")")" "$t"
        done
    done
    echo
    echo "== done, $(date -u '+%H:%M:%S UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
    return "$STATUS"
}

RESULTS="$SRC/bench/results"
mkdir -p "$RESULTS"
(run) 2>&1 | tee -a "$RESULTS/last-run-small.txt"
