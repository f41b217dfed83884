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
PAUSED_PIDS=() # daemon_pause's, for teardown

teardown() {
    local rc=$?
    daemon_resume     # a daemon left stopped would hang the unmount and stria down
    unmount_stria_all # before the daemons stop and before rm -rf walks into a mount
    s3_down
    if [ -f "$DIR/stria.cluster" ]; then
        "$STRIA" down --dir "$DIR" >/dev/null 2>&1 || true
    fi
    # Anything still alive from this cluster (after kill -9 games) goes too:
    # a pid whose command line names this cluster's directory. A pid file of
    # a daemon that stopped may name another test's process by now (pids
    # come round again within minutes on a busy machine).
    local f pid real
    real=$(realpath "$DIR" 2>/dev/null || echo "$DIR")
    for f in "$DIR"/run/*.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -e "$DIR/" -e "$real/"; then
            kill -9 "$pid" 2>/dev/null || true
        fi
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
step() { echo "== [${SECONDS}s] $*"; }

cluster_up() {
    "$STRIA" up --dir "$DIR" "$@" || fail "stria up failed"
    CONF="$DIR/client.conf"
}

# daemon_set NAME KEY VALUE: set an option of the cluster's daemon NAME
# (mgmtd, metad, stord) in its config and restart it (the other daemons
# find it again by themselves).
daemon_set() {
    local pid i
    echo "$2 = $3" >>"$DIR/conf/$1.conf"
    pid=$(daemon_pid "$1")
    kill "$pid" 2>/dev/null || true
    for i in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && fail "stria-$1 did not stop"
    "$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up after changing $1.conf"
}

mgmtd_set() { daemon_set mgmtd "$@"; }

# metad_set KEY VALUE: the same for stria-metad, once its MDT answers again.
metad_set() {
    daemon_set metad "$@"
    wait_for 30 "$STRIA" --conf "$CONF" stats || fail "the MDT did not come back"
}

# migrate_stale_short: the cluster's migrations go stale after
# MIGRATE_STALE (3) seconds without a word from their migrator rather than
# 30 (stria-metad's migrate_stale_ms), for tests that wait for a dead
# migrator's record to go stale.
migrate_stale_short() {
    MIGRATE_STALE=3
    metad_set migrate_stale_ms $((MIGRATE_STALE * 1000))
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

# daemon_pause NAME stops daemon NAME (SIGSTOP), so that a test can act
# while it hangs; daemon_resume continues every daemon paused so (those
# killed meanwhile are gone: nothing to do). Teardown resumes them too, so
# a test that fails while one is stopped still comes down.
daemon_pause() {
    local pid
    pid=$(daemon_pid "$1")
    PAUSED_PIDS+=("$pid")
    kill -STOP "$pid"
}
daemon_resume() {
    local pid
    for pid in "${PAUSED_PIDS[@]}"; do
        kill -CONT "$pid" 2>/dev/null || true
    done
    PAUSED_PIDS=()
}

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
# mount is ready; what it says, before and after, goes to
# $DIR/log/stria-fuse-N.log.
# mount_counter MNT KEY: one counter of the mount's stria.mount.stats
# (empty when it cannot be read).
mount_counter() {
    getfattr --only-values -n stria.mount.stats "$1" 2>/dev/null | tr ' ' '\n' |
        awk -F= -v k="$2" '$1 == k { print $2 }'
}

mount_stria() {
    local mnt=$1 extra=${2:-} log
    mkdir -p "$mnt" "$DIR/log"
    mnt=$(realpath "$mnt")
    log="$DIR/log/stria-fuse-${#STRIA_MOUNTS[@]}.log"
    STRIA_MOUNTS+=("$mnt")
    # What the mount says once it serves goes to the same log (shown when
    # the test fails), unless the test names a log of its own.
    case ",$extra," in
    *,log=*) ;;
    *) extra="${extra:+$extra,}log=$log" ;;
    esac
    if ! timeout -k 5 60 "$BUILD/stria-fuse" -o "conf=$CONF${extra:+,$extra}" "$mnt" >>"$log" 2>&1; then
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
# Builtins only: three processes forked for each of /proc's entries took
# seconds, at every teardown's unmount and every turn of its wait.
stria_fuse_pids() {
    local p a args
    for p in /proc/[0-9]*; do
        mapfile -d '' -t args 2>/dev/null <"$p/cmdline" || continue
        [ "${args[0]-}" = "$BUILD/stria-fuse" ] || continue
        for a in "${args[@]:1}"; do
            if [ "$a" = "$1" ]; then
                echo "${p#/proc/}"
                break
            fi
        done
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

# ---- S3 (issue 22): s3rver from tests/s3, Debian's aws as the client ----
S3_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../s3" && pwd)"
S3RVER="$S3_DIR/node_modules/.bin/s3rver"
S3_PIDS=()

# s3_usable: true if s3rver, node and Debian's aws are here; otherwise false
# with the reason in S3_WHY (tests skip with exit 77). /usr/bin/aws by its
# path: another `aws` (pyenv's, say) may come first in PATH.
s3_usable() {
    S3_WHY=""
    if ! command -v node >/dev/null 2>&1; then
        S3_WHY="node is missing (scripts/bootstrap.sh installs nodejs)"
    elif [ ! -x "$S3RVER" ]; then
        S3_WHY="$S3RVER is missing (scripts/bootstrap.sh runs npm ci in tests/s3)"
    elif [ ! -x /usr/bin/aws ]; then
        S3_WHY="/usr/bin/aws is missing (Debian's awscli)"
    fi
    [ -z "$S3_WHY" ]
}

# s3_up [S3RVER_ARGS...]: start s3rver on 127.0.0.1 at a free port with its
# data under $T, wait (bounded) until it answers, and export the endpoint
# and its credentials for s3tool and aws. With --key and --cert among the
# arguments it speaks HTTPS. teardown stops it.
s3_up() {
    local port scheme=http a n=${#S3_PIDS[@]}
    s3_usable || fail "$S3_WHY"
    for a in "$@"; do [ "$a" = --cert ] && scheme=https; done
    port=$(free_port 24568) || fail "no free port for s3rver"
    mkdir -p "$T/s3rver-$n"
    # s3rver's continuation tokens use DES, which Node 17+ keeps in
    # OpenSSL's legacy provider.
    NODE_OPTIONS=--openssl-legacy-provider "$S3RVER" -d "$T/s3rver-$n" -a 127.0.0.1 -p "$port" --silent "$@" >"$T/s3rver-$n.log" 2>&1 &
    S3_PIDS+=($!)
    # Any HTTP answer (even 403) means it listens.
    if ! wait_for 30 curl -sk -o /dev/null --max-time 2 "$scheme://127.0.0.1:$port/"; then
        cat "$T/s3rver-$n.log" >&2
        fail "s3rver did not answer on $scheme://127.0.0.1:$port"
    fi
    export S3_ENDPOINT="$scheme://127.0.0.1:$port" S3_PORT=$port
    export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_DEFAULT_REGION=us-east-1
    export AWS_EC2_METADATA_DISABLED=true
    unset AWS_PROFILE AWS_SESSION_TOKEN AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE
}

# awss3 ARGS...: Debian's aws against the s3rver of s3_up (s3 and s3api).
awss3() {
    /usr/bin/aws --endpoint-url "$S3_ENDPOINT" "$@"
}

# Stop every s3rver (and helper) of s3_up; teardown calls it.
s3_down() {
    local p i
    for p in ${S3_PIDS[@]+"${S3_PIDS[@]}"}; do
        kill "$p" 2>/dev/null || true
    done
    for p in ${S3_PIDS[@]+"${S3_PIDS[@]}"}; do
        for i in $(seq 50); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$p" 2>/dev/null || true
    done
    S3_PIDS=()
}

# s3_sigcheck_up: put tests/s3/sigv4_check.py in front of the s3rver of the
# last s3_up (s3rver does not compute SigV4 signatures; the proxy does, as
# S3 would, and answers SignatureDoesNotMatch) and point S3_ENDPOINT at it.
s3_sigcheck_up() {
    local port
    port=$(free_port 25568) || fail "no free port for sigv4_check.py"
    SIGV4_KEYS="$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" /usr/bin/python3 "$S3_DIR/sigv4_check.py" \
        "$port" "$S3_PORT" >"$T/sigv4_check.log" 2>&1 &
    S3_PIDS+=($!)
    wait_for 20 curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$port/" ||
        fail "sigv4_check.py did not answer on port $port"
    export S3_ENDPOINT="http://127.0.0.1:$port"
}
