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
        tail -n 30 "$DIR"/log/*.log || true
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
