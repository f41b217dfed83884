#!/usr/bin/env bash
# bench/bench_ls.sh BUILD_DIR: `ls -l` of one big directory (issue 25).
#
# Issue 25 asks that `ls -l` of a directory of 1,000,000 entries finish in
# seconds on one MDT and faster on four, and that other clients' requests
# keep their latency while it runs. In a temporary directory on one disk:
#
# - the baseline, once: LS_FILES empty files in a local directory (ext4
#   top-directory flag, made by xargs touch), listed directly and through
#   bench_passthrough (the FUSE ceiling, bench_fuse.sh) mounted over it;
# - for each N in LS_MDTS: a cluster of N MDTs and one OST, a directory
#   /ls (plain on MDT 0 for N=1, striped over all N MDTs otherwise) holding
#   LS_FILES empty files made through libstria by LS_THREADS threads
#   (bench_storm --make --size 0), and stria-fuse mounted on it.
#
# Each timed listing starts from a fresh mount (stria-fuse is unmounted
# and mounted again: its own metadata cache goes too) and a dropped page
# cache (which here empties the MDT's too): `ls -f DIR | wc -l` (names
# only) and `ls -l DIR > /dev/null`. Around each stria listing the MDTs'
# request counters (`stria stats`) are read; the script prints READDIRs
# and entries per READDIR, and every other kind of MDT request per entry
# (GETATTR and LOOKUP should be near 0: readdirplus brings attributes with
# the entries). Ratios are of rates: stria / passthrough and stria /
# local (above 1: stria is faster), and N MDTs / the first N.
#
# Then the same listing through libstria, `stria ls -l /ls` (READDIR plus,
# sorted by name), timed and its MDT requests counted the same way.
#
# Then another client (bench_storm --watch: its own libstria connection)
# stats a file in another directory, /other on MDT 0, once a millisecond:
# for LS_IDLE seconds alone, then during a second `ls -l` (fresh mount,
# cache dropped); the script prints its p50, p99 and max latency in both
# and the ratio of the p99s.
#
# Env: LS_FILES (1000000), LS_MDTS ("1 4"), LS_THREADS (8, the creators),
# LS_IDLE (5 s), LS_STEP_TIMEOUT (1800 s for any one step). Root is needed
# to drop the page cache (else the script says so and lists warm). On any
# exit a trap stops the watcher, unmounts both mounts (lazily), stops the
# cluster and deletes the directory. Output: stdout, appended to
# bench/results/last-run-ls.txt.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/lib.sh"
bench_setup $# "${1:-}" stria stria-fuse bench/bench_passthrough bench/bench_storm
if ! command -v fusermount3 >/dev/null 2>&1; then
    echo "bench_ls.sh: fusermount3 is not installed (package fuse3)" >&2
    exit 2
fi
if ! { : <>/dev/fuse; } 2>/dev/null; then
    echo "bench_ls.sh: /dev/fuse cannot be opened for reading and writing" >&2
    exit 2
fi

LS_FILES=${LS_FILES:-1000000}
LS_MDTS=${LS_MDTS:-"1 4"}
LS_THREADS=${LS_THREADS:-8}
LS_IDLE=${LS_IDLE:-5}
LS_STEP_TIMEOUT=${LS_STEP_TIMEOUT:-1800}

WATCH_PID=
DROPPED=yes
declare -A ROW # summary: ROW[N,field]

now() { date +%s.%N; }
since() { awk -v t0="$1" -v t1="$(now)" 'BEGIN { printf "%.3f", t1 - t0 }'; }
per_s() { awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", n / s; else printf "-" }'; }

# Only clean pages are dropped, hence the sync; without root the listings
# run warm, and the header of each says so.
drop_caches() {
    timeout "$LS_STEP_TIMEOUT" sync
    if ! { echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
        DROPPED=no
    fi
}

# MOUNTPOINT CMD...: mount (the command returns once mounted) or fail.
mount_fuse() {
    local m=$1
    shift
    if ! timeout 60 "$@" "$m" >"$TMP/mount.out" 2>&1 || ! mountpoint -q "$m"; then
        echo "bench_ls.sh: $* $m did not mount:" >&2
        sed 's/^/    /' "$TMP/mount.out" >&2
        return 1
    fi
}

unmount() { # MOUNTPOINT
    mountpoint -q "$1" 2>/dev/null || return 0
    fusermount3 -u "$1" 2>/dev/null || fusermount3 -uz "$1"
}

# The stria mount, fresh: nothing cached in the kernel or in stria-fuse.
remount_stria() {
    unmount "$M"
    mount_fuse "$M" "$BUILD/stria-fuse" -o conf="$CONF"
}

# Every MDT's count of each kind of request, summed: "KIND COUNT" lines.
mdt_counts() {
    timeout 60 "$BUILD/stria" --conf "$CONF" stats |
        awk '$1 ~ /^[A-Z][A-Z_0-9]*$/ && $2 ~ /^[0-9]+$/ { n[$1] += $2 }
             END { for (k in n) print k, n[k] }' | sort
}

# BEFORE AFTER: the requests between two mdt_counts, "KIND COUNT", most first.
mdt_delta() {
    join -a 2 -e 0 -o 0,1.2,2.2 "$1" "$2" | awk '$3 - $2 > 0 { print $1, $3 - $2 }' | sort -k2,2nr
}

# Time `ls` of DIR (its arguments in LS_ARGS) into TIME, the names it
# counted into NAMES (ls -f: the entries, "." and ".." too).
time_ls() { # DIR names|long
    local t0
    drop_caches
    t0=$(now)
    if [ "$2" = names ]; then
        NAMES=$(timeout "$LS_STEP_TIMEOUT" ls -f "$1" | wc -l)
    else
        timeout "$LS_STEP_TIMEOUT" ls -l "$1" >/dev/null
    fi
    TIME=$(since "$t0")
}

# WHAT DIR: one `ls -f | wc -l` and one `ls -l` of DIR on a baseline.
baseline_ls() {
    time_ls "$2" names
    printf '  %-12s ls -f | wc -l %8.3f s %10s entries/s  (%s names)\n' "$1" "$TIME" \
        "$(per_s "$LS_FILES" "$TIME")" "$NAMES"
    ROW[$1,names]=$(per_s "$LS_FILES" "$TIME")
    time_ls "$2" long
    printf '  %-12s ls -l         %8.3f s %10s entries/s\n' "$1" "$TIME" "$(per_s "$LS_FILES" "$TIME")"
    ROW[$1,long]=$(per_s "$LS_FILES" "$TIME")
}

# The MDT requests a listing took: READDIRs and entries each, then every
# other kind per entry. Sets ROW[N,readdir], ROW[N,per_readdir], ROW[N,attr].
print_requests() { # N DELTA_FILE
    local rd
    rd=$(awk '$1 == "READDIR" { print $2 }' "$2")
    rd=${rd:-0}
    printf '    MDT requests: READDIR %s (%s entries each)' "$rd" "$(per_s "$LS_FILES" "$rd")"
    # Not the listing's: the mount's lease channel, and stria stats itself.
    awk -v n="$LS_FILES" '$1 != "READDIR" && $1 != "STATS" && $1 != "LEASE_POLL" {
        printf ", %s %s (%.3f per entry)", $1, $2, $2 / n }' "$2"
    echo
    ROW[$1,readdir]=$rd
    ROW[$1,per_readdir]=$(per_s "$LS_FILES" "$rd")
    ROW[$1,attr]=$(awk -v n="$LS_FILES" '$1 == "GETATTR" || $1 == "LOOKUP" { s += $2 }
        END { printf "%.3f", s / n }' "$2")
}

# The watcher: another client stats /other/f0 once a millisecond. With
# SECONDS it runs that long in the foreground; without, in the background
# until stop_watch. Its RESULT lines go to FILE.
watcher() { # FILE [SECONDS]
    local args=(--stria "$CONF" --watch /other/f0)
    if [ -n "${2:-}" ]; then
        timeout "$LS_STEP_TIMEOUT" "$BUILD/bench/bench_storm" "${args[@]}" --seconds "$2" \
            >"$1" 2>"$1.err"
        return
    fi
    "$BUILD/bench/bench_storm" "${args[@]}" >"$1" 2>"$1.err" &
    WATCH_PID=$!
    for _ in $(seq 300); do
        grep -q watching "$1.err" && return 0
        kill -0 "$WATCH_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "bench_ls.sh: the watcher did not start: $(cat "$1.err")" >&2
    return 1
}

stop_watch() {
    [ -n "$WATCH_PID" ] || return 0
    kill -TERM "$WATCH_PID" 2>/dev/null || true
    wait "$WATCH_PID" || echo "    (the watcher exited with an error: $(tail -1 "$TMP/watch-busy.err"))"
    WATCH_PID=
}

wr() { awk -v k="$1" '$1 == "RESULT" && $2 == "watch" && $3 == k { print $4 }' "$2"; }

one_cluster() { # N
    local n=$1 d0 t0
    CL="$TMP/cluster-$n"
    CONF="$CL/client.conf"
    echo "== $n MDT(s), 1 OST"
    "$BUILD/stria" up --dir "$CL" --mdts "$n" --osts 1 --no-mount >"$TMP/up.out" 2>&1 ||
        { cat "$TMP/up.out"; return 1; }
    if [ "$n" -gt 1 ]; then
        "$BUILD/stria" --conf "$CONF" setdirstripe -c "$n" /ls
        "$BUILD/stria" --conf "$CONF" mkdir -c 1 -i 0 /other
        d0="striped over all $n MDTs"
    else
        "$BUILD/stria" --conf "$CONF" mkdir /ls
        "$BUILD/stria" --conf "$CONF" mkdir /other
        d0="plain, on MDT 0"
    fi
    t0=$(now)
    timeout "$LS_STEP_TIMEOUT" "$BUILD/bench/bench_storm" --stria "$CONF" --dir /ls \
        --files "$LS_FILES" --size 0 --threads "$LS_THREADS" --make
    echo "  /ls $d0: $LS_FILES empty files made through libstria in $(since "$t0") s" \
        "($LS_THREADS threads)"
    "$BUILD/bench/bench_storm" --stria "$CONF" --dir /other --files 1 --size 0 --make 2>/dev/null

    remount_stria
    mdt_counts >"$TMP/c0"
    time_ls "$M/ls" names
    mdt_counts >"$TMP/c1"
    mdt_delta "$TMP/c0" "$TMP/c1" >"$TMP/d-names"
    printf '  %-12s ls -f | wc -l %8.3f s %10s entries/s  (%s names)  vs passthrough %s  vs local %s\n' \
        stria "$TIME" "$(per_s "$LS_FILES" "$TIME")" "$NAMES" \
        "$(ratio "$(per_s "$LS_FILES" "$TIME")" "${ROW[passthrough,names]}")" \
        "$(ratio "$(per_s "$LS_FILES" "$TIME")" "${ROW[local,names]}")"
    ROW[$n,names]=$(per_s "$LS_FILES" "$TIME")
    [ "$NAMES" -eq $((LS_FILES + 2)) ] || echo "    WRONG: $NAMES names, expected $((LS_FILES + 2))"
    print_requests "$n" "$TMP/d-names"
    ROW[$n,names_readdir]=${ROW[$n,readdir]}

    remount_stria
    mdt_counts >"$TMP/c0"
    time_ls "$M/ls" long
    mdt_counts >"$TMP/c1"
    mdt_delta "$TMP/c0" "$TMP/c1" >"$TMP/d-long"
    ROW[$n,long]=$(per_s "$LS_FILES" "$TIME")
    ROW[$n,long_s]=$TIME
    printf '  %-12s ls -l         %8.3f s %10s entries/s  vs passthrough %s  vs local %s\n' stria \
        "$TIME" "${ROW[$n,long]}" "$(ratio "${ROW[$n,long]}" "${ROW[passthrough,long]}")" \
        "$(ratio "${ROW[$n,long]}" "${ROW[local,long]}")"
    print_requests "$n" "$TMP/d-long"

    # The same listing through libstria, without FUSE: `stria ls -l` (a
    # READDIR plus a batch, sorted by name as ls sorts).
    mdt_counts >"$TMP/c0"
    drop_caches
    t0=$(now)
    NAMES=$(timeout "$LS_STEP_TIMEOUT" "$BUILD/stria" --conf "$CONF" ls -l /ls | wc -l)
    TIME=$(since "$t0")
    mdt_counts >"$TMP/c1"
    mdt_delta "$TMP/c0" "$TMP/c1" >"$TMP/d-cli"
    ROW[$n,cli]=$(per_s "$LS_FILES" "$TIME")
    printf '  %-12s stria ls -l   %8.3f s %10s entries/s  vs passthrough ls -l %s  vs local %s\n' \
        libstria "$TIME" "${ROW[$n,cli]}" "$(ratio "${ROW[$n,cli]}" "${ROW[passthrough,long]}")" \
        "$(ratio "${ROW[$n,cli]}" "${ROW[local,long]}")"
    [ "$NAMES" -eq "$LS_FILES" ] || echo "    WRONG: $NAMES lines, expected $LS_FILES"
    print_requests "cli$n" "$TMP/d-cli" # (its own keys: the summary shows the mount's)

    # Another client, alone and then during a second ls -l.
    watcher "$TMP/watch-idle" "$LS_IDLE" || echo "    (the idle watcher failed: $(tail -1 "$TMP/watch-idle.err"))"
    remount_stria
    drop_caches
    watcher "$TMP/watch-busy"
    t0=$(now)
    timeout "$LS_STEP_TIMEOUT" ls -l "$M/ls" >/dev/null
    ROW[$n,long2_s]=$(since "$t0")
    stop_watch
    local f
    for f in p50_ms p99_ms max_ms ops; do
        ROW[$n,idle_$f]=$(wr "$f" "$TMP/watch-idle")
        ROW[$n,busy_$f]=$(wr "$f" "$TMP/watch-busy")
    done
    printf '  another client stat()s /other/f0 (MDT 0) every ms: p50 / p99 / max in ms\n'
    printf '    idle (%s s, %s stats):   %8s %8s %8s\n' "$LS_IDLE" "${ROW[$n,idle_ops]}" \
        "${ROW[$n,idle_p50_ms]}" "${ROW[$n,idle_p99_ms]}" "${ROW[$n,idle_max_ms]}"
    printf '    during ls -l (%s stats): %8s %8s %8s   p99 during/idle %s; that ls -l took %s s\n' \
        "${ROW[$n,busy_ops]}" "${ROW[$n,busy_p50_ms]}" "${ROW[$n,busy_p99_ms]}" \
        "${ROW[$n,busy_max_ms]}" "$(ratio "${ROW[$n,busy_p99_ms]}" "${ROW[$n,idle_p99_ms]}")" \
        "${ROW[$n,long2_s]}"

    unmount "$M"
    bench_stop
    echo
}

# Stop the cluster in CL (if any) and forget it; TMP stays.
bench_stop() {
    if [ -n "${CL:-}" ] && [ -d "$CL" ] &&
        ! "$BUILD/stria" down --dir "$CL" >"$TMP/down.out" 2>&1; then
        echo "bench_ls.sh: stria down --dir $CL failed:" >&2
        cat "$TMP/down.out" >&2
    fi
    rm -rf "$CL"
    CL=
}

# On any exit of run: stop the watcher, unmount, stop the cluster, remove
# everything made.
cleanup() {
    local rc=$?
    set +e # do every step, whatever fails
    if [ -n "$WATCH_PID" ]; then
        kill -TERM "$WATCH_PID" 2>/dev/null
        wait "$WATCH_PID" 2>/dev/null
    fi
    fuse_unmount bench_ls.sh
    bench_remove bench_ls.sh
    return "$rc"
}

run() {
    bench_dir stria-bench-ls
    CL=
    M="$TMP/mnt-stria"
    local L="$TMP/local" MPT="$TMP/mnt-pt" t0 n first=
    mkdir -p "$L" "$M" "$MPT"
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    echo "== Stria ls -l of a big directory, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "commit:  $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)"
    echo "machine: $(uname -sr), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "disk:    $TMP on $(df -PT "$TMP" | awk 'NR == 2 { print $1 " (" $2 ")" }')" \
        "- the MDTs, the OST and the local directory"
    echo "files:   $LS_FILES empty files in one directory; MDT counts: $LS_MDTS"
    echo

    # The baseline. See bench/README.md (bench_meta) for the flag.
    chattr +T "$L" 2>/dev/null || true
    mkdir "$L/ls"
    t0=$(now)
    (cd "$L/ls" && seq -f 'f%.0f' 0 $((LS_FILES - 1)) | xargs touch)
    echo "== baseline: $LS_FILES empty files in $L/ls (xargs touch, $(since "$t0") s)"
    mount_fuse "$MPT" "$BUILD/bench/bench_passthrough" -o source="$L"
    baseline_ls local "$L/ls"
    baseline_ls passthrough "$MPT/ls"
    unmount "$MPT"
    rm -rf "$L/ls" # its blocks are not the clusters' business
    echo

    for n in $LS_MDTS; do
        one_cluster "$n"
        first=${first:-$n}
    done
    [ "$DROPPED" = yes ] || echo "(NOT root: the page cache was NOT dropped, every listing ran warm)"

    echo "== summary, $(date -u '+%H:%M:%S UTC'): $LS_FILES entries; rates are entries/s," \
        "ratios are of rates (above 1: stria faster)"
    printf '%-5s %10s %10s %7s %7s %8s %8s %10s %8s %8s %8s %7s\n' mdts "ls-f/s" "ls-l/s" vs_pt \
        vs_local "vs_${first}mdt" readdirs ent/rdir getattr+ p99_idle p99_ls during
    printf '%-5s %10s %10s %7s %7s %8s %8s %10s %8s %8s %8s %7s\n' "" "" "" "" "" "" "(ls -l)" \
        "" "lookup/e" ms ms /idle
    for n in $LS_MDTS; do
        printf '%-5s %10s %10s %7s %7s %8s %8s %10s %8s %8s %8s %7s\n' "$n" "${ROW[$n,names]:--}" \
            "${ROW[$n,long]:--}" "$(ratio "${ROW[$n,long]:-0}" "${ROW[passthrough,long]}")" \
            "$(ratio "${ROW[$n,long]:-0}" "${ROW[local,long]}")" \
            "$(ratio "${ROW[$n,long]:-0}" "${ROW[$first,long]:-0}")" "${ROW[$n,readdir]:--}" \
            "${ROW[$n,per_readdir]:--}" "${ROW[$n,attr]:--}" "${ROW[$n,idle_p99_ms]:--}" \
            "${ROW[$n,busy_p99_ms]:--}" "$(ratio "${ROW[$n,busy_p99_ms]:-0}" "${ROW[$n,idle_p99_ms]:-0}")"
    done
    for n in $LS_MDTS; do
        printf '%-5s stria ls -l (libstria): %s entries/s, %s of local ls -l, %s of %s MDT(s)\n' "$n" \
            "${ROW[$n,cli]:--}" "$(ratio "${ROW[$n,cli]:-0}" "${ROW[local,long]}")" \
            "$(ratio "${ROW[$n,cli]:-0}" "${ROW[$first,cli]:-0}")" "$first"
    done
    printf '%-5s %10s %10s\n' local "${ROW[local,names]}" "${ROW[local,long]}"
    printf '%-5s %10s %10s\n' pt "${ROW[passthrough,names]}" "${ROW[passthrough,long]}"
}

RESULTS="$SRC/bench/results"
mkdir -p "$RESULTS"
(run) 2>&1 | tee -a "$RESULTS/last-run-ls.txt"
