#!/usr/bin/env bash
# A server that stops answering holds no one forever (issue 5):
#
# - a frozen stria-metad (SIGSTOP: its connections open, no answers):
#   libstria's metadata calls fail with EIO after timeout_ms (3 s here)
#   instead of hanging; thawed, they work again;
# - through the mount (timeout 100 s): a mkdir waiting on the frozen MDT,
#   and an fsync and reads (direct and cached) waiting on a frozen OST, end soon after a signal rather
#   than at the timeout, and the mount works once the servers thaw. (The
#   signal is SIGTERM: a background job ignores SIGINT. Ctrl-C sends the
#   foreground job SIGINT, which the kernel handles alike.)
# Prints how long each wait lasted, for the issue's note.
set -euo pipefail
. "$(cd "$(dirname "$0")/../func" && pwd)/lib.sh"

FROZEN=()
thaw_all() {
    local p
    for p in ${FROZEN[@]+"${FROZEN[@]}"}; do kill -CONT "$p" 2>/dev/null || true; done
    FROZEN=()
}
trap 'rc=$?; set +e; thaw_all; (exit $rc); teardown' EXIT
# Frozen once every thread has stopped: kill returns before, and a thread
# busy in the kernel stops only when its call returns (bounded: 10 s).
freeze() {
    kill -STOP "$1"
    FROZEN+=("$1")
    stopped() { ! grep -h '^State:' /proc/"$1"/task/*/status | grep -qv 'T (stopped)'; }
    wait_for 10 stopped "$1" || fail "pid $1 did not stop"
}
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
# signal_ends PID WHAT: a second after it started, SIGTERM the background
# job PID waiting on a frozen server; it must end within 20 s (the mount's
# timeout is 100 s). Says how long it took.
signal_ends() {
    local pid=$1 what=$2 t0
    sleep 1
    t0=$(date +%s%N)
    kill -TERM "$pid"
    for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && fail "$what still waits 20 s after SIGTERM"
    echo "   $what ended $(ms_since "$t0") ms after SIGTERM"
    wait "$pid" 2>/dev/null || true
}

step "a cluster; a client.conf with timeout_ms = 3000"
cluster_up --osts 1 --no-mount
sed -e '/^timeout_ms/d' "$CONF" >"$DIR/short.conf"
echo "timeout_ms = 3000" >>"$DIR/short.conf"
S() { "$STRIA" --conf "$DIR/short.conf" "$@"; }
S mkdir /before || fail "mkdir /before"
METAD=$(daemon_pid metad)
STORD=$(daemon_pid stord)

step "stria-metad frozen: a mkdir fails with EIO after the timeout"
freeze "$METAD"
t0=$(date +%s%N)
if out=$(timeout 60 "$STRIA" --conf "$DIR/short.conf" mkdir /frozen 2>&1); then
    fail "mkdir succeeded on a frozen MDT"
fi
took=$(ms_since "$t0")
echo "   $out (after $took ms)"
grep -q "Input/output error" <<<"$out" || fail "mkdir on a frozen MDT: want EIO, got: $out"
[ "$took" -lt 30000 ] || fail "mkdir on a frozen MDT waited $took ms: the timeout is 3000"
thaw_all
S mkdir /after || fail "mkdir after the MDT thawed"

if ! fuse_usable; then
    echo "SKIPPED: the mount's interrupts: $FUSE_WHY"
    exit 77
fi
step "through the mount (timeout 100 s): a signal ends a wait on a frozen server"
MNT="$T/mnt"
mount_stria "$MNT"
freeze "$METAD"
mkdir "$MNT/interrupted" 2>"$T/mkdir.err" &
signal_ends $! "mkdir on a frozen MDT"
thaw_all
mkdir "$MNT/after2" || fail "mkdir through the mount after the MDT thawed"

dd if=/dev/zero of="$MNT/ckpt" bs=1M count=4 status=none || fail "write before the freeze"
freeze "$STORD"
dd if=/dev/zero of="$MNT/ckpt" bs=1M count=4 conv=notrunc,fsync status=none 2>"$T/dd.err" &
signal_ends $! "a write and fsync (dd conv=fsync) on a frozen OST"
thaw_all
# Frozen for seconds, the OST may have been marked offline: new files find
# a place once it is back in the map.
wait_for 30 dd if=/dev/zero of="$MNT/ckpt2" bs=1M count=4 conv=fsync status=none ||
    fail "write and fsync through the mount after the OST thawed"

freeze "$STORD"
for mode in direct cached; do
    if [ $mode = direct ]; then
        dd if="$MNT/ckpt2" of=/dev/null bs=1M iflag=direct status=none 2>/dev/null &
    else
        echo 1 >/proc/sys/vm/drop_caches 2>/dev/null || true
        cat "$MNT/ckpt2" >/dev/null 2>&1 &
    fi
    signal_ends $! "a $mode read on a frozen OST"
done
thaw_all
echo "PASS: interrupt"
