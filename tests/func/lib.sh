# Shared harness for whole-cluster tests: a cluster of our own in a fresh
# temporary directory, torn down on every exit (pass or fail, or a signal).
# Usage: . lib.sh; cluster_up [--osts N]; ...; (teardown is automatic)
set -euo pipefail

BUILD=${BUILD:?BUILD must point at the build directory}
STRIA="$BUILD/stria"
T=$(mktemp -d "${TMPDIR:-/tmp}/stria-test.XXXXXX")
DIR="$T/cluster"
# A private HOME so the test never touches the user's ~/.config/stria.
export HOME="$T/home"
mkdir -p "$HOME"
unset STRIA_CONF

teardown() {
    local rc=$?
    unmount_stria_all # before the daemons stop and before rm -rf walks into a mount
    if [ -f "$DIR/stria.cluster" ]; then
        "$STRIA" down --dir "$DIR" >/dev/null 2>&1 || true
    fi
    # Anything still alive from this cluster (after kill -9 games) goes too.
    for f in "$DIR"/run/*.pid; do
        [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
    done
    # Sanitizer builds: a daemon's report goes to its log, and fails the test.
    if [ -d "$DIR/log" ] && grep -lE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$DIR"/log/*.log 2>/dev/null; then
        echo "FAIL: sanitizer report in a daemon log"
        rc=1
    fi
    if [ $rc -ne 0 ] && [ -d "$DIR/log" ]; then
        echo "---- daemon logs (test failed) ----"
        grep -h " error " "$DIR"/log/*.log | head -n 20 || true
        tail -n 30 "$DIR"/log/*.log || true
        # STRIA_KEEP_LOGS=DIR keeps every log of a failed run there.
        if [ -n "${STRIA_KEEP_LOGS:-}" ]; then
            mkdir -p "$STRIA_KEEP_LOGS" && cp -r "$DIR/log" "$STRIA_KEEP_LOGS/" &&
                echo "(logs kept in $STRIA_KEEP_LOGS/log)"
        fi
    fi
    rm -rf "$T"
    exit $rc
}
trap teardown EXIT
trap 'exit 130' INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

cluster_up() {
    "$STRIA" up --dir "$DIR" "$@" || fail "stria up failed"
    CONF="$DIR/client.conf"
}

# free_port FIRST: a loopback port from FIRST on (steps of 17) that nothing
# listens on (ss is iproute2's), for a daemon a test starts beside the
# cluster; fails when there is none.
free_port() {
    local p
    for p in $(seq "$1" 17 29000); do
        if ! ss -Hltn "sport = :$p" | grep -q .; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

# The pid of one daemon of the cluster.
daemon_pid() { cat "$DIR/run/$1.pid"; }

# Wait (bounded) until a command succeeds.
wait_for() {
    local secs=$1; shift
    local end=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $end ] || return 1
        sleep 0.2
    done
}

# ---- FUSE mounts (stria-fuse) ----
# Mounts made by mount_stria; teardown unmounts them (lazily, so a busy one
# cannot stop it) before anything else and sees their stria-fuse exit.
STRIA_MOUNTS=()

# fuse_usable: true if stria-fuse can mount here; otherwise false with the
# reason in FUSE_WHY. Tests skip with exit 77 when it is false.
fuse_usable() {
    FUSE_WHY=""
    if [ ! -e /dev/fuse ]; then
        FUSE_WHY="/dev/fuse is missing"
    elif ! (: <>/dev/fuse) 2>/dev/null; then
        FUSE_WHY="/dev/fuse cannot be opened for reading and writing"
    elif ! command -v fusermount3 >/dev/null 2>&1; then
        FUSE_WHY="fusermount3 is missing (package fuse3)"
    elif [ ! -x "$BUILD/stria-fuse" ]; then
        FUSE_WHY="$BUILD/stria-fuse is not built (it needs libfuse3-dev)"
    fi
    [ -z "$FUSE_WHY" ]
}

# mount_stria MNT [EXTRA_OPTS]: mount the cluster (after cluster_up) at MNT
# with stria-fuse -o conf=$CONF[,EXTRA_OPTS]. stria-fuse returns once the
# mount is ready; what it says goes to $DIR/log/stria-fuse-N.log.
mount_stria() {
    local mnt=$1 extra=${2:-} log
    mkdir -p "$mnt" "$DIR/log"
    mnt=$(realpath "$mnt")
    log="$DIR/log/stria-fuse-${#STRIA_MOUNTS[@]}.log"
    STRIA_MOUNTS+=("$mnt")
    if ! timeout -k 5 60 "$BUILD/stria-fuse" -o "conf=$CONF${extra:+,$extra}" "$mnt" >"$log" 2>&1; then
        cat "$log" >&2
        fail "stria-fuse -o conf=$CONF${extra:+,$extra} $mnt failed"
    fi
    is_stria_mount "$mnt" || fail "stria-fuse returned but $mnt is not a fuse.stria mount"
}

# is_stria_mount MNT: whether MNT (absolute, canonical) is a stria mount now.
is_stria_mount() {
    awk -v m="$1" '$2 == m && $3 == "fuse.stria" { found = 1 } END { exit !found }' /proc/self/mounts
}

# stria_fuse_pids MNT: the stria-fuse processes serving MNT (by their arguments).
stria_fuse_pids() {
    local p args
    for p in /proc/[0-9]*; do
        args=$(tr '\0' '\n' 2>/dev/null <"$p/cmdline") || continue
        if [ "$(head -n 1 <<<"$args")" = "$BUILD/stria-fuse" ] && grep -qxF -- "$1" <<<"$args"; then
            echo "${p#/proc/}"
        fi
    done
    return 0
}

# Unmount (lazily) every mount_stria mount and make its stria-fuse exit.
unmount_stria_all() {
    local m pids i
    for m in ${STRIA_MOUNTS[@]+"${STRIA_MOUNTS[@]}"}; do
        if is_stria_mount "$m"; then
            timeout -k 2 10 fusermount3 -uz "$m" >/dev/null 2>&1 || true
        fi
        for i in $(seq 50); do
            pids=$(stria_fuse_pids "$m")
            [ -n "$pids" ] || break
            sleep 0.1
        done
        if [ -n "$pids" ]; then
            echo "teardown: stria-fuse for $m still running after the unmount; killing $pids" >&2
            kill -9 $pids 2>/dev/null || true
        fi
    done
    STRIA_MOUNTS=()
}
