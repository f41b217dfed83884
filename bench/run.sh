#!/usr/bin/env bash
# bench/run.sh BUILD_DIR: run every Stria benchmark against a fresh local cluster.
#
# Starts a 4-OST cluster in a temporary directory (removed with the cluster
# on any exit), runs bench_io and bench_meta with their local-disk
# baselines in the same temporary directory (so on the same disk as the
# OSTs), adds fio as a second local baseline when it is installed, and
# writes everything to stdout and to bench/results/last-run.txt. Then, as a
# second part, bench_fuse.sh (stria-fuse against a FUSE passthrough and the
# local disk, on a cluster of its own) when this machine can mount FUSE file
# systems; otherwise it says why the part was skipped. Then bench_mdt.sh
# (the MDT's instructions per operation, under callgrind), bench_s3.sh
# (data repositories on S3 beside aws) and, last and as root only,
# bench_s3_hosts.sh (restore with 1, 2 and 3 storage hosts on the test bed).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/lib.sh"
bench_setup $# "${1:-}" stria bench/bench_io bench/bench_meta

# The standard run; the environment may shrink it for a quick look.
IO_SIZE=${IO_SIZE:-2G}
IO_BLOCK=${IO_BLOCK:-4M}
IO_COUNT=${IO_COUNT:-4}
IO_STRIPE=${IO_STRIPE:-4M}
META_FILES=${META_FILES:-100000}
META_THREADS=${META_THREADS:-1,2}

# Only clean pages are dropped, hence the sync. Says what it did.
drop_caches() {
    sync
    if { echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
        echo "  (page cache dropped before reading)"
    else
        echo "  (page cache NOT dropped: not root; reads may come from memory)"
    fi
}

# The bandwidth of fio's one job, in MiB/s, from --output-format=terse
# (version 3: read KiB/s is field 7, write KiB/s field 48).
fio_mibs() { # DIRECTION FILE
    awk -F';' -v d="$1" '$1 == "3" { printf "%.1f", (d == "read" ? $7 : $48) / 1024 }' "$2"
}

# A column of bench_io's table: stria (2) or local (3) MiB/s of a test.
io_col() { # TEST COLUMN FILE
    awk -v t="$1" -v c="$2" '$1 == t && NF == 4 { print $c }' "$3"
}

# On any exit of run: stop the cluster, remove everything it made.
cleanup() {
    local rc=$?
    bench_remove run.sh
    return "$rc"
}

run() {
    bench_dir stria-bench
    mkdir -p "$TMP/local" "$TMP/fio"
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    echo "== Stria benchmarks, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "commit:  $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)"
    echo "machine: $(uname -sr), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)," \
        "load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "disk:    $TMP on $(df -PT "$TMP" | awk 'NR == 2 { print $1 " (" $2 ")" }')" \
        "- the OSTs, the MDT and every local baseline"
    echo

    # libstria only: no FUSE mount beside it.
    "$BUILD/stria" up --dir "$CL" --osts 4 --no-mount
    echo

    echo "== bench_io: sequential $IO_SIZE in $IO_BLOCK blocks, stripe count $IO_COUNT," \
        "stripe size $IO_STRIPE"
    "$BUILD/bench/bench_io" --conf "$CL/client.conf" --path /bench/big --size "$IO_SIZE" \
        --block "$IO_BLOCK" --count "$IO_COUNT" --stripe-size "$IO_STRIPE" \
        --local "$TMP/local" | tee "$TMP/bench_io.out"
    echo

    if command -v fio >/dev/null 2>&1; then
        echo "== fio: the same sequential pattern on the local disk (second baseline)"
        local fio_args=(--name=seq --bs="$IO_BLOCK" --size="$IO_SIZE" --end_fsync=1
            --directory="$TMP/fio" --output-format=terse --terse-version=3)
        fio "${fio_args[@]}" --rw=write >"$TMP/fio-write.out"
        drop_caches
        fio "${fio_args[@]}" --rw=read >"$TMP/fio-read.out"
        rm -f "$TMP"/fio/*
        local fw fr sw sr lw lr
        fw=$(fio_mibs write "$TMP/fio-write.out")
        fr=$(fio_mibs read "$TMP/fio-read.out")
        sw=$(io_col write 2 "$TMP/bench_io.out")
        sr=$(io_col read 2 "$TMP/bench_io.out")
        lw=$(io_col write 3 "$TMP/bench_io.out")
        lr=$(io_col read 3 "$TMP/bench_io.out")
        printf '\n%-8s %14s %14s %14s %12s\n' test "stria MiB/s" "local MiB/s" "fio MiB/s" "stria/fio"
        printf '%-8s %14s %14s %14s %12s\n' write "$sw" "$lw" "$fw" "$(ratio "$sw" "$fw")"
        printf '%-8s %14s %14s %14s %12s\n' read "$sr" "$lr" "$fr" "$(ratio "$sr" "$fr")"
        echo "(fio: one job, psync engine, buffered, end_fsync=1)"
    else
        echo "== fio: not installed, second baseline skipped"
    fi
    echo

    echo "== bench_meta: $META_FILES empty files, threads $META_THREADS"
    "$BUILD/bench/bench_meta" --conf "$CL/client.conf" --files "$META_FILES" \
        --threads "$META_THREADS" --local "$TMP/local"
    echo
    echo "== done, $(date -u '+%H:%M:%S UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
}

# Why the FUSE part cannot run here, or nothing if it can.
fuse_skip_reason() {
    if [ "${BENCH_FUSE:-1}" = 0 ]; then
        echo "BENCH_FUSE=0"
    elif [ ! -x "$BUILD/stria-fuse" ]; then
        echo "$BUILD/stria-fuse is not built"
    elif [ ! -x "$BUILD/bench/bench_passthrough" ] || [ ! -x "$BUILD/bench/bench_fsops" ]; then
        echo "$BUILD/bench/bench_passthrough or bench_fsops is not built"
    elif ! command -v fusermount3 >/dev/null 2>&1; then
        echo "fusermount3 is not installed (package fuse3)"
    elif ! { : <>/dev/fuse; } 2>/dev/null; then
        echo "/dev/fuse cannot be opened for reading and writing (no FUSE here, or no permission)"
    fi
}

mkdir -p "$RESULTS"
# The subshell keeps run's traps and HOME to itself; tee keeps a copy.
(run) 2>&1 | tee "$RESULTS/last-run.txt"

# The FUSE part starts once the first cluster is down and its files are gone.
echo
skip=$(fuse_skip_reason)
if [ -z "$skip" ]; then
    echo "== FUSE part: bench/bench_fuse.sh (output also in bench/results/last-run-fuse.txt)" |
        tee -a "$RESULTS/last-run.txt"
    "$SRC/bench/bench_fuse.sh" "$BUILD"
else
    echo "== FUSE part skipped: $skip" | tee -a "$RESULTS/last-run.txt"
fi

# The MDT's instructions per operation, under callgrind.
echo
if command -v valgrind >/dev/null 2>&1 && command -v callgrind_control >/dev/null 2>&1; then
    echo "== MDT part: bench/bench_mdt.sh (output also in bench/results/last-run-mdt.txt)" |
        tee -a "$RESULTS/last-run.txt"
    "$SRC/bench/bench_mdt.sh" "$BUILD"
else
    echo "== MDT part skipped: valgrind is not installed" | tee -a "$RESULTS/last-run.txt"
fi

# Data repositories on S3, beside aws against the same s3rver.
echo
if [ -x "$SRC/tests/s3/node_modules/.bin/s3rver" ] && [ -x /usr/bin/aws ]; then
    echo "== S3 part: bench/bench_s3.sh (output also in bench/results/last-run-s3.txt)" |
        tee -a "$RESULTS/last-run.txt"
    "$SRC/bench/bench_s3.sh" "$BUILD"
else
    echo "== S3 part skipped: s3rver or Debian's aws is missing (scripts/bootstrap.sh)" |
        tee -a "$RESULTS/last-run.txt"
fi

# Restore with 1, 2 and 3 storage hosts, on the test bed: network
# namespaces and tc, so root only.
echo
if [ "${BENCH_S3_HOSTS:-1}" = 0 ]; then
    echo "== S3 hosts part skipped: BENCH_S3_HOSTS=0" | tee -a "$RESULTS/last-run.txt"
elif [ "$(id -u)" -ne 0 ]; then
    echo "== S3 hosts part skipped: needs root (network namespaces, tc, the test bed's mounts)" |
        tee -a "$RESULTS/last-run.txt"
elif [ ! -x "$SRC/tests/s3/node_modules/.bin/s3rver" ] || [ ! -x /usr/bin/aws ]; then
    echo "== S3 hosts part skipped: s3rver or Debian's aws is missing (scripts/bootstrap.sh)" |
        tee -a "$RESULTS/last-run.txt"
else
    echo "== S3 hosts part: bench/bench_s3_hosts.sh (output also in bench/results/last-run-s3-hosts.txt)" |
        tee -a "$RESULTS/last-run.txt"
    rc=0
    "$SRC/bench/bench_s3_hosts.sh" "$BUILD" || rc=$?
    # 77: it could not run here, and said why.
    if [ "$rc" -eq 77 ]; then
        echo "== S3 hosts part skipped (see above)" | tee -a "$RESULTS/last-run.txt"
    elif [ "$rc" -ne 0 ]; then
        exit "$rc"
    fi
fi

# An on-demand file system on four ssh nodes of the test bed: root only.
echo
if [ "${BENCH_ONDEMAND:-1}" = 0 ]; then
    echo "== on-demand part skipped: BENCH_ONDEMAND=0" | tee -a "$RESULTS/last-run.txt"
else
    echo "== on-demand part: bench/bench_ondemand.sh (output also in bench/results/last-run-ondemand.txt)" |
        tee -a "$RESULTS/last-run.txt"
    rc=0
    "$SRC/bench/bench_ondemand.sh" "$BUILD" || rc=$?
    if [ "$rc" -eq 77 ]; then
        echo "== on-demand part skipped (see above)" | tee -a "$RESULTS/last-run.txt"
    elif [ "$rc" -ne 0 ]; then
        exit "$rc"
    fi
fi
