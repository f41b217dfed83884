#!/usr/bin/env bash
# bench/bench_data.sh BUILD_DIR: the fast data path (issue 6), Stria beside
# its baselines in one run, as ratios; a table on stdout and a PNG chart.
#
# In a temporary directory, on one disk: a 4-OST cluster (one MDT) mounted
# with stria-fuse, a FUSE passthrough of a local directory (what a FUSE file
# system that only forwards to the disk gets), and a plain local directory.
# Then:
#  1. sequential write (fsync included) and read of DATA_SEQ_SIZE (4G) in
#     4 MiB calls, with 1 and 2 client threads: libstria (files striped
#     -c 4 -S 4M) beside fio on the local disk (psync, bs=4M, end_fsync=1;
#     2 threads: two jobs, each writing and reading half the size);
#  2. the same in 1 MiB calls through the stria mount, beside the same
#     through the passthrough, and beside a read through the passthrough
#     whose source is in memory (the FUSE ceiling for reads); then
#     DATA_SMALL_SIZE (256M) in 4 KiB and 64 KiB calls, which the mount
#     gathers into larger writes;
#  3. a dataset: DATA_FILES (100,000) files of 64 KiB read in one random
#     order by 2 threads after the cache is dropped, in files/s: libstria
#     and the mount beside the local directory (the mount also beside the
#     passthrough);
#  4. a checkpoint burst: 8 writers each writing a 512 MiB shard of its own
#     (DATA_SHARD) at once and fsyncing: libstria and the mount beside the
#     local directory.
# Every stria figure comes with its baseline from the same run; the table
# gives both and the ratio, which gnuplot draws into
# bench/results/last-run-data.png (when gnuplot is installed). The output is
# appended to bench/results/last-run-data.txt. On any exit a trap unmounts
# both mounts (lazily), stops the cluster and removes the directory.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/lib.sh"
bench_setup $# "${1:-}" stria stria-fuse bench/bench_data bench/bench_passthrough

DATA_SEQ_SIZE=${DATA_SEQ_SIZE:-4G}
DATA_FILES=${DATA_FILES:-100000}
DATA_WRITERS=${DATA_WRITERS:-8}
DATA_SHARD=${DATA_SHARD:-512M}
DATA_CG_SIZE=${DATA_CG_SIZE:-256M}
DATA_SMALL_SIZE=${DATA_SMALL_SIZE:-256M}
STEP_TIMEOUT=${STEP_TIMEOUT:-1800}
BD="$BUILD/bench/bench_data"

if ! command -v fio >/dev/null 2>&1; then
    echo "bench_data.sh: fio is not installed (scripts/bootstrap.sh installs it)" >&2
    exit 2
fi
if ! command -v fusermount3 >/dev/null 2>&1 || ! { : <>/dev/fuse; } 2>/dev/null; then
    echo "bench_data.sh: FUSE mounts are not possible here (fuse3, /dev/fuse)" >&2
    exit 2
fi

bench_dir stria-bench-data
MNT="$TMP/mnt"
PT="$TMP/pt"
LOCAL="$TMP/local"
mkdir -p "$MNT" "$PT" "$TMP/ptsrc" "$LOCAL"

# GlusterFS, the peer of issue 6: two bricks on this disk in one
# distributed volume, served by a glusterd of our own (its state under
# $TMP/gl, bound to 127.0.0.1) and mounted with its FUSE client. Gluster
# refuses 127.0.0.1 and localhost as brick hosts, so the bricks are named by
# this machine's host name, which must resolve to a loopback address. Sets
# GL to the mount, or says why there is none.
GL=""
gluster_up() {
    local host g="$TMP/gl"
    if ! command -v glusterd >/dev/null 2>&1; then
        echo "glusterfs: not installed (scripts/bootstrap.sh installs glusterfs-server)"
        return 0
    fi
    host=$(hostname)
    if ! getent hosts "$host" | awk '{ print $1 }' | grep -q '^127\.'; then
        echo "glusterfs: skipped: the host name $host does not resolve to a loopback address"
        return 0
    fi
    if ss -Hltn 'sport = :24007' | grep -q .; then
        echo "glusterfs: skipped: port 24007 is taken (another glusterd?)"
        return 0
    fi
    mkdir -p "$g/wd" "$g/b1" "$g/b2" "$g/mnt" "$g/log"
    cat >"$g/glusterd.vol" <<VOL
volume management
    type mgmt/glusterd
    option working-directory $g/wd
    option transport-type socket
    option transport.socket.bind-address 127.0.0.1
    option transport.socket.listen-port 24007
    option glusterd-sockfile $g/glusterd.socket
    option event-threads 1
end-volume
VOL
    GLS=(gluster --glusterd-sock="$g/glusterd.socket" --mode=script)
    timeout 30 glusterd -f "$g/glusterd.vol" -p "$g/glusterd.pid" -l "$g/log/glusterd.log" \
        --log-level=WARNING &&
        for _ in $(seq 50); do [ -S "$g/glusterd.socket" ] && break; sleep 0.2; done &&
        timeout 60 "${GLS[@]}" volume create bench "$host:$g/b1" "$host:$g/b2" force >/dev/null &&
        timeout 60 "${GLS[@]}" volume start bench >/dev/null &&
        timeout 60 glusterfs --volfile-server=127.0.0.1 --volfile-id=bench \
            --log-file="$g/log/client.log" "$g/mnt" &&
        for _ in $(seq 50); do grep -q " $g/mnt fuse" /proc/self/mounts && break; sleep 0.2; done
    if grep -q " $g/mnt fuse" /proc/self/mounts; then
        GL="$g/mnt"
        echo "glusterfs: $(glusterfs --version | head -1), volume of 2 bricks ($host:$g/b1, b2)"
    else
        echo "glusterfs: could not start a volume here; see $g/log (kept until the exit)"
    fi
}
gluster_down() {
    local g="$TMP/gl"
    [ -d "$g" ] || return 0
    grep -q " $g/mnt fuse" /proc/self/mounts && umount -l "$g/mnt" 2>/dev/null
    [ -S "$g/glusterd.socket" ] &&
        timeout 30 gluster --glusterd-sock="$g/glusterd.socket" --mode=script volume stop bench \
            >/dev/null 2>&1
    pkill -f "$g/" 2>/dev/null || true
}

cleanup() {
    local m
    gluster_down
    for m in "$MNT" "$PT"; do
        if grep -q " $m fuse" /proc/self/mounts 2>/dev/null; then
            timeout -k 2 10 fusermount3 -uz "$m" >/dev/null 2>&1 || true
        fi
    done
    bench_remove bench_data.sh
}
trap cleanup EXIT
trap 'exit 130' INT TERM

OUT="$RESULTS/last-run-data.txt"
mkdir -p "$RESULTS"
exec > >(tee -a "$OUT") 2>&1

echo "== bench_data.sh, $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) cores, kernel $(uname -r)"
echo "sizes: seq $DATA_SEQ_SIZE, dataset $DATA_FILES x 64 KiB, burst $DATA_WRITERS x $DATA_SHARD"
"$BUILD/stria" up --dir "$TMP/cluster" --osts 4 --no-mount >/dev/null
CONF="$TMP/cluster/client.conf"
timeout 60 "$BUILD/stria-fuse" -o "conf=$CONF" "$MNT"
timeout 60 "$BUILD/bench/bench_passthrough" -o "source=$TMP/ptsrc" "$PT"
gluster_up

# Rows of the table: name, stria figure, baseline figure, baseline's name.
ROWS=()
row() { # NAME STRIA BASE BASENAME TARGET (issue 6's least ratio, - for none)
    ROWS+=("$1|$2|$3|$4|$5")
    printf '  %-34s %10s %10s %-12s %s\n' "$1" "$2" "$3" "$4" "$(ratio "$2" "$3")"
}
# "met", "NOT met" or "" for ratio R against target T.
verdict() { awk -v r="$1" -v t="$2" 'BEGIN { if (t == "-" || r == "-") print ""; else print (r + 0 >= t + 0 ? "met" : "NOT met") }'; }

# One bench_data run; prints its human lines, returns "metric=value ...".
run_bd() { # OUTFILE ARGS...
    local out=$1
    shift
    timeout -k 10 "$STEP_TIMEOUT" "$BD" "$@" >"$out" 2>&1 || {
        cat "$out" >&2
        echo "bench_data.sh: bench_data $* failed" >&2
        exit 1
    }
    grep -v '^RESULT' "$out" | sed 's/^/  /' >&2
}
result() { awk -v m="$2" -v k="$3" '$1 == "RESULT" && $2 == m && $3 == k { print $4 }' "$1"; }
# A row from two bench_data outputs: NAME MODE METRIC STRIA_OUT BASE_OUT BASENAME TARGET.
vs() { row "$1" "$(result "$4" "$2" "$3")" "$(result "$5" "$2" "$3")" "$6" "$7"; }

fio_seq() { # JOBS DIRECTION -> MiB/s
    local jobs=$1 d=$2 bytes per
    bytes=$(numfmt --from=iec "$DATA_SEQ_SIZE")
    per=$((bytes / jobs))
    [ "$d" = read ] && { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }
    timeout -k 10 "$STEP_TIMEOUT" fio --name=seq --directory="$LOCAL" --rw="$d" --bs=4M \
        --size="$per" --numjobs="$jobs" --end_fsync=1 --ioengine=psync --fallocate=none \
        --group_reporting --output-format=terse --terse-version=3 >"$TMP/fio.out"
    awk -F';' -v d="$d" '$1 == "3" { printf "%.1f", (d == "read" ? $7 : $48) / 1024 }' \
        "$TMP/fio.out"
}

echo
echo "== 1. sequential, 4 MiB calls: libstria (-c 4 -S 4M) beside fio on the local disk"
for t in 1 2; do
    run_bd "$TMP/seq$t" --stria "$CONF" seq --size "$DATA_SEQ_SIZE" --block 4M --threads "$t"
    fw=$(fio_seq "$t" write)
    fr=$(fio_seq "$t" read)
    rm -f "$LOCAL"/seq.*
    row "seq write, $t thread(s) (MiB/s)" "$(result "$TMP/seq$t" seq write)" "$fw" fio 0.9
    row "seq read, $t thread(s) (MiB/s)" "$(result "$TMP/seq$t" seq read)" "$fr" fio 0.9
    [ "$t" = 1 ] && FIO_READ1=$fr LIB_READ1=$(result "$TMP/seq$t" seq read)
done

echo
echo "== 2. sequential, 1 MiB calls, through the mount beside the passthrough"
run_bd "$TMP/mseq" --dir "$MNT" seq --size "$DATA_SEQ_SIZE" --block 1M
run_bd "$TMP/pseq" --dir "$PT" seq --size "$DATA_SEQ_SIZE" --block 1M
vs "mount seq write (MiB/s)" seq write "$TMP/mseq" "$TMP/pseq" passthrough 0.9
vs "mount seq read (MiB/s)" seq read "$TMP/mseq" "$TMP/pseq" passthrough 0.9
# The FUSE ceiling for reads here: the passthrough once more, its source
# read back into memory after the drop, so that a READ costs it a copy
# from memory and no disk (if the memory holds it: the 4 GiB fit the test
# machine's 24 GiB). The mount makes as many copies (from its socket, to
# the kernel, to the reader) and also waits for the disk and the network:
# with the same read-ahead (1 MiB, both mounts' default) it should not
# read faster than this.
run_bd "$TMP/pwseq" --dir "$PT" seq --size "$DATA_SEQ_SIZE" --block 1M --warm "$TMP/ptsrc"
vs "mount seq read vs FUSE ceiling (MiB/s)" seq read "$TMP/mseq" "$TMP/pwseq" "pt, memory" -
if [ -n "$GL" ]; then
    run_bd "$TMP/gseq" --dir "$GL" seq --size "$DATA_SEQ_SIZE" --block 1M
    vs "mount seq write vs gluster (MiB/s)" seq write "$TMP/mseq" "$TMP/gseq" glusterfs 2
    vs "mount seq read vs gluster (MiB/s)" seq read "$TMP/mseq" "$TMP/gseq" glusterfs 2
    # What twice GlusterFS's read asks of the mount, beside the local
    # disk's own read (fio, one thread, section 1), libstria's read with
    # no FUSE at all (section 1) and the FUSE ceiling.
    g2=$(awk -v g="$(result "$TMP/gseq" seq read)" 'BEGIN { printf "%.1f", 2 * g }')
    echo "  (2 x glusterfs's read is $g2 MiB/s: $(ratio "$g2" "$FIO_READ1") of the local disk's" \
        "read by fio, $(ratio "$g2" "$LIB_READ1") of libstria's own read,"
    echo "   $(ratio "$g2" "$(result "$TMP/pwseq" seq read)") of the FUSE ceiling)"
fi
# Small calls: each is one FUSE request; the mount gathers them into
# writes of up to 1 MiB to the OSTs (fuse_tab.c).
for b in 4K 64K; do
    run_bd "$TMP/ms$b" --dir "$MNT" seq --size "$DATA_SMALL_SIZE" --block "$b"
    run_bd "$TMP/ps$b" --dir "$PT" seq --size "$DATA_SMALL_SIZE" --block "$b"
    vs "mount $b writes (MiB/s)" seq write "$TMP/ms$b" "$TMP/ps$b" passthrough -
    if [ -n "$GL" ]; then
        run_bd "$TMP/gs$b" --dir "$GL" seq --size "$DATA_SMALL_SIZE" --block "$b"
        vs "mount $b writes vs gluster (MiB/s)" seq write "$TMP/ms$b" "$TMP/gs$b" glusterfs -
    fi
done

echo
echo "== 3. dataset: $DATA_FILES files of 64 KiB, random order, 2 threads"
run_bd "$TMP/dl" --dir "$LOCAL" dataset --files "$DATA_FILES" --threads 2
run_bd "$TMP/ds" --stria "$CONF" dataset --files "$DATA_FILES" --threads 2
run_bd "$TMP/dm" --dir "$MNT" dataset --files "$DATA_FILES" --threads 2
run_bd "$TMP/dp" --dir "$PT" dataset --files "$DATA_FILES" --threads 2
vs "dataset, libstria (files/s)" dataset files/s "$TMP/ds" "$TMP/dl" local 0.5
vs "dataset, mount (files/s)" dataset files/s "$TMP/dm" "$TMP/dl" local -
vs "dataset, mount vs passthrough (files/s)" dataset files/s "$TMP/dm" "$TMP/dp" passthrough -
if [ -n "$GL" ]; then
    run_bd "$TMP/dg" --dir "$GL" dataset --files "$DATA_FILES" --threads 2
    vs "dataset, libstria vs gluster (files/s)" dataset files/s "$TMP/ds" "$TMP/dg" glusterfs 2
    vs "dataset, mount vs gluster (files/s)" dataset files/s "$TMP/dm" "$TMP/dg" glusterfs 2
fi

echo
echo "== 4. checkpoint burst: $DATA_WRITERS writers x $DATA_SHARD, each fsynced"
run_bd "$TMP/bl" --dir "$LOCAL" burst --writers "$DATA_WRITERS" --shard "$DATA_SHARD"
run_bd "$TMP/bs" --stria "$CONF" burst --writers "$DATA_WRITERS" --shard "$DATA_SHARD"
run_bd "$TMP/bm" --dir "$MNT" burst --writers "$DATA_WRITERS" --shard "$DATA_SHARD"
vs "burst, libstria (MiB/s)" burst write "$TMP/bs" "$TMP/bl" local -
vs "burst, mount (MiB/s)" burst write "$TMP/bm" "$TMP/bl" local -
if [ -n "$GL" ]; then
    run_bd "$TMP/bg" --dir "$GL" burst --writers "$DATA_WRITERS" --shard "$DATA_SHARD"
    vs "burst, libstria vs gluster (MiB/s)" burst write "$TMP/bs" "$TMP/bg" glusterfs 2
    vs "burst, mount vs gluster (MiB/s)" burst write "$TMP/bm" "$TMP/bg" glusterfs 2
fi

echo "== 5. CPU: instructions per MiB moved and heap allocations (callgrind), $DATA_CG_SIZE written and read"
# Calls to the heap allocator in a callgrind profile (every call site
# names its callee with cfn=, compressed to "(id)" after its first use).
cg_mallocs() {
    awk 'function name(s) { # "(id) name" defines id; "(id)" refers to it
             if (match(s, /^\([0-9]+\) /)) { nm[substr(s, 1, RLENGTH - 1)] = substr(s, RLENGTH + 1); return substr(s, RLENGTH + 1) }
             return (s in nm) ? nm[s] : s }
         /^fn=/ { infn = name(substr($0, 4)); next }
         /^cfn=/ { cur = name(substr($0, 5)); next }
         /^calls=/ { if (cur ~ /^(malloc|calloc|realloc|posix_memalign|aligned_alloc)$/ && infn !~ /^CRYPTO_/) { split(substr($0, 7), a, " "); n += a[1] } cur = "" }
         END { print n + 0 }' "$@"
}
cg_instr() { awk '/^(summary|totals):/ { print $2; exit }' "$1"; }
if command -v valgrind >/dev/null 2>&1; then
    CG_MIB=$(($(numfmt --from=iec "$DATA_CG_SIZE") >> 20))
    # The storage daemon under callgrind, counting its request threads only.
    cg_daemon "$TMP/cluster" stord "$TMP/cg-stord"
    CGS=$CG_PID
    for _ in $(seq 300); do
        [ "$("$BUILD/stria" --conf "$CONF" df 2>/dev/null | grep -c OST)" -ge 4 ] &&
            "$BUILD/stria" --conf "$CONF" setstripe -c 4 /cg-probe >/dev/null 2>&1 &&
            "$BUILD/stria" --conf "$CONF" rm /cg-probe >/dev/null 2>&1 && break
        sleep 0.2
    done
    # The client: only inside libstria's calls (the benchmark's own filling
    # and checking of buffers is left out).
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg-client" \
        --toggle-collect=stria_open --toggle-collect=stria_pwrite --toggle-collect=stria_pread \
        --toggle-collect=stria_fsync --toggle-collect=stria_close \
        "$BD" --stria "$CONF" seq --size "$DATA_CG_SIZE" --block 4M >"$TMP/cg-client.log" 2>&1 ||
        { cat "$TMP/cg-client.log"; exit 1; }
    kill "$CGS"
    wait "$CGS" 2>/dev/null || true
    "$BUILD/stria" up --dir "$TMP/cluster" --no-mount >/dev/null
    moved=$((2 * CG_MIB))
    ci=$(cg_instr "$TMP/cg-client")
    si=$(cg_instr "$TMP/cg-stord")
    cm=$(cg_mallocs "$TMP/cg-client")
    sm=$(cg_mallocs "$TMP/cg-stord")
    calls=$((2 * CG_MIB / 4))
    printf '  %-8s %14s %12s %12s\n' side instructions "instr/MiB" "allocations"
    printf '  %-8s %14s %12s %12s\n' client "$ci" "$((ci / moved))" "$cm"
    printf '  %-8s %14s %12s %12s\n' stord "$si" "$((si / moved))" "$sm"
    echo "  ($moved MiB moved in $calls calls of 4 MiB. client: inside libstria's calls only;"
    echo "   stord: its request threads. allocations: calls to malloc and friends, but for"
    echo "   OpenSSL's own in the handshakes; a fixed number per connection and open file,"
    echo "   none per request, so it does not grow with DATA_CG_SIZE)"
    echo "RESULT cpu client_instr_per_mib $((ci / moved))"
    echo "RESULT cpu stord_instr_per_mib $((si / moved))"
else
    echo "  skipped: valgrind is not installed"
fi

echo
echo "== summary: stria beside its baseline in this run (ratio = stria / baseline)"
printf '%-40s %10s %10s %-12s %7s %7s %s\n' workload stria baseline "(which)" ratio target ""
: >"$TMP/chart.dat"
for r in "${ROWS[@]}"; do
    IFS='|' read -r name s b bn target <<<"$r"
    q=$(ratio "$s" "$b")
    printf '%-40s %10s %10s %-12s %7s %7s %s\n' "$name" "$s" "$b" "$bn" "$q" "$target" \
        "$(verdict "$q" "$target")"
    printf '"%s"\t%s\t%s\n' "${name% (*}" "$q" "${target/-/NaN}" >>"$TMP/chart.dat"
done
if command -v gnuplot >/dev/null 2>&1; then
    gnuplot <<EOF
set terminal pngcairo size 1200,640 noenhanced
set rmargin 20
set bmargin 10
set output "$RESULTS/last-run-data.png"
set title "Stria data path beside its baselines, $(date -u '+%Y-%m-%d') ($(nproc) cores): ratio stria / baseline"
set style fill solid 0.8
set boxwidth 0.6
set yrange [0:*]
set xtics rotate by -30
set grid ytics
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2
set key top left
plot "$TMP/chart.dat" using 0:2:xtic(1) with boxes title "stria / baseline", \\
     "" using 0:3 with points pt 7 ps 1.5 lc rgb "red" title "issue 6 target"
EOF
    echo "chart: bench/results/last-run-data.png"
else
    echo "chart: none (gnuplot is not installed; scripts/bootstrap.sh installs it)"
fi
echo "== done, $(date -u '+%H:%M') UTC; load average $(cut -d' ' -f1-3 /proc/loadavg)"
