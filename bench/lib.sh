# Shared by the bench scripts (sourced, with SRC set; bench_setup sets BUILD).

# bench_setup NARGS BUILD_DIR BIN...: what every bench script checks first:
# one argument, the build directory (BUILD, absolute), and each BIN built
# there. RESULTS is where the scripts append their output.
bench_setup() {
    local name n=$1 dir=${2:-} bin
    name=$(basename "$0")
    shift 2 || shift $#
    if [ "$n" -ne 1 ]; then
        echo "usage: bench/$name BUILD_DIR" >&2
        exit 2
    fi
    BUILD=$(cd "$dir" && pwd)
    RESULTS="$SRC/bench/results"
    for bin in "$@"; do
        if [ ! -x "$BUILD/$bin" ]; then
            echo "$name: $BUILD/$bin is missing; build first (make build)" >&2
            exit 2
        fi
    done
}

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.3f", a / b; else printf "-" }'
}

# bench_dir NAME: a fresh temporary directory in TMP, the cluster's place in
# CL, and HOME inside it: `stria up` links ~/.config/stria/client.conf to
# the new cluster, and that must stay away from the user's own.
bench_dir() {
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    CL="$TMP/cluster"
    export HOME="$TMP/home"
    mkdir -p "$HOME"
}

# bench_remove WHO: stop the cluster in CL (saying so on failure, as WHO)
# and remove TMP.
bench_remove() {
    if [ -d "$CL" ] && ! "$BUILD/stria" down --dir "$CL" >"$TMP/down.out" 2>&1; then
        echo "$1: stria down --dir $CL failed:" >&2
        cat "$TMP/down.out" >&2
    fi
    rm -rf "$TMP"
}

# ---- instruction counts (callgrind), for bench_mdt.sh and bench_dne.sh ----

# cg_daemon CLUSTER NAME OUT: the cluster's daemon NAME (metad, metad1, ...,
# stord) gives way to the same under callgrind, dumping to OUT.*; its pid in
# CG_PID, its output in OUT.log. Only the serving of requests (the event
# loop's reading of them, conn_event, and the workers' req_serve, with what
# they call) is counted: the once-a-tick work (sync, recovery,
# heartbeats) costs the same whether requests come or not, and under
# callgrind's slowdown it would be charged to 50 times fewer of them; a
# connection's handshake (an HMAC) is paid once per client connection, and
# a phase whose threads open their connections would charge it to their
# first few requests.
cg_daemon() {
    local pid
    pid=$(cat "$1/run/$2.pid")
    kill "$pid" 2>/dev/null || true # gone already after an earlier round
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    valgrind --tool=callgrind --toggle-collect=conn_event --toggle-collect=req_serve --callgrind-out-file="$3" \
        "$BUILD/stria-${2%%[0-9]*}" --config "$1/conf/$2.conf" >"$3.log" 2>&1 &
    CG_PID=$!
}

# cg_ready CONF: wait (a minute at most) until every MDT of CONF answers.
cg_ready() {
    for _ in $(seq 1 300); do
        "$BUILD/stria" --conf "$1" stats >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}

# cg_hook FILE PID...: a bench_meta --hook that zeroes every PID's counters
# before a phase and dumps them after it (one file per dump).
cg_hook() {
    local f=$1
    shift
    {
        echo '#!/bin/sh'
        echo 'case "$1" in'
        echo "begin) for p in $*; do callgrind_control -z \$p >/dev/null 2>&1; done ;;"
        echo "end) for p in $*; do callgrind_control -d \"\$2\" \$p >/dev/null 2>&1; done ;;"
        echo 'esac'
    } >"$f"
    chmod +x "$f"
}

# cg_total PHASE DUMP...: the instructions of every dump of PHASE (each
# names its phase in "desc: Trigger: dump PHASE" and sums in "summary:").
cg_total() {
    local ph=$1 total=0 f t
    shift
    for f in "$@"; do
        [ -e "$f" ] || continue
        [ "$(sed -n 's/^desc: Trigger: dump \(.*\)$/\1/p' "$f" | head -1)" = "$ph" ] || continue
        t=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
        total=$((total + t))
    done
    echo "$total"
}

# fuse_unmount NAME: unmount $TMP/mnt-stria and $TMP/mnt-pt (lazily, so
# that a hung daemon cannot block it) and wait up to 10 s for the FUSE
# daemons serving them to exit, saying so (as NAME) if one does not.
fuse_unmount() {
    local pids m
    pids=$(pgrep -f -- "$TMP/mnt-" || true)
    for m in "$TMP/mnt-stria" "$TMP/mnt-pt"; do
        if mountpoint -q "$m" 2>/dev/null && ! fusermount3 -uz "$m"; then
            echo "$1: fusermount3 -uz $m failed" >&2
        fi
    done
    for _ in $(seq 50); do
        pids=$(for p in $pids; do kill -0 "$p" 2>/dev/null && echo "$p"; done)
        [ -z "$pids" ] && break
        sleep 0.2
    done
    if [ -n "$pids" ]; then
        echo "$1: still running 10 s after unmount: $(ps -o pid=,args= -p "${pids//$'\n'/,}")" >&2
    fi
}

# The closing lines of a benchmark: each column i in "$@" that failed
# (FAILED[i], named NAME[i]), the time and the load. Fails if any did.
bench_done() {
    local status=0 i
    for i in "$@"; do
        if [ -n "${FAILED[i]:-}" ]; then
            echo "FAILED on ${NAME[i]}: ${FAILED[i]}"
            status=1
        fi
    done
    echo
    echo "== done, $(date -u '+%H:%M:%S UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
    return "$status"
}
