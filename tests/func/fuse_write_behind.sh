#!/usr/bin/env bash
# Write-behind through the mount (stria-fuse -o write_behind, the default):
# a buffered write is acknowledged before it reaches the OSTs. The mount
# here holds every such write back 3 s (STRIA_TEST_WRITE_DELAY_MS), and
# tests/func/write_behind.c checks, while the data is still on its way,
# that a read through a fresh handle of the mount (page cache dropped) and
# a stat see it, that a truncate cannot be overtaken by it, and that
# overlapping writes land in order; the same for small writes, which the
# mount gathers into larger ones. (Each check fails with its wait taken
# out of stria-fuse: tried by hand.)
# A second mount (no delay, timeout 1 s) writes while the only OST is
# frozen: the failure of the acknowledged write, large or gathered, is
# reported by close(2). On it, small overwrites of a file held open reach
# the cluster without a close while they go on, and a mount stopped by
# SIGTERM with a file still open sends what it gathered before it exits.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: $FUSE_WHY"
    exit 77
fi
FROZEN=""
trap 'rc=$?; set +e; [ -n "$FROZEN" ] && kill -CONT "$FROZEN"; [ -n "${HOLD_PID:-}" ] && kill "$HOLD_PID" 2>/dev/null; (exit $rc); teardown' EXIT
t() { timeout -k 5 60 "$@"; }
S() { "$STRIA" --conf "$CONF" "$@"; }

step "a cluster of one OST; a mount whose writes land 3 s after their reply"
cluster_up --osts 1 --no-mount
export STRIA_TEST_WRITE_DELAY_MS=3000
mount_stria "$T/m"
unset STRIA_TEST_WRITE_DELAY_MS
M="$T/m"
head -c 1048576 /dev/urandom >"$T/src"

step "write_behind: read, stat, truncate and overwrite while writes are on their way"
# Each send waits 3 s, and some checks wait for several in a row.
timeout -k 5 150 "$BUILD/tests/write_behind" "$M" "$CONF" || fail "write_behind"

# dd of a new file NAME in blocks of BS through m2 while the only OST is
# frozen must fail, and by a later write or the close (the open touches no
# OST); after the thaw the same dd works.
# Every thread of the OST must have stopped before the dd begins.
all_stopped() {
    local s st
    for s in /proc/"$pid"/task/*/stat; do
        st=$(sed 's/.*) //' "$s" 2>/dev/null | cut -d' ' -f1)
        [ "$st" = T ] || [ "$st" = t ] || return 1
    done
}
frozen_dd() { # NAME BS
    kill -STOP "$pid"
    FROZEN=$pid
    wait_for 10 all_stopped || fail "stria-stord $pid did not stop on SIGSTOP"
    local t0=$SECONDS
    if t dd if="$T/src" of="$T/m2/$1" bs="$2" status=none 2>"$T/dd.err"; then
        # What to look at when this happens: how long the dd took, what the
        # mount sent, and whether the bytes reached the OST after all.
        echo "   dd took $((SECONDS - t0)) s; OST threads: $(cat /proc/"$pid"/task/*/stat | sed 's/.*) //' | cut -d' ' -f1 | sort | uniq -c | tr '\n' ' ')"
        getfattr --only-values -n stria.mount.stats "$T/m2" 2>&1 | head -n 40 || true
        kill -CONT "$pid"
        FROZEN=""
        sleep 3
        cmp "$T/m2/$1" "$T/src" && echo "   after the thaw the file reads whole" ||
            echo "   after the thaw the file does not read whole"
        fail "dd bs=$2 through a frozen OST succeeded: an acknowledged write's failure went unreported"
    fi
    kill -CONT "$pid"
    FROZEN=""
    echo "   dd said: $(cat "$T/dd.err")"
    if grep -q "failed to open" "$T/dd.err"; then
        fail "dd bs=$2 failed at its open, not at a write or close"
    fi
    # Until its next heartbeat the OST may still count as down.
    wait_for 30 dd if="$T/src" of="$T/m2/$1" bs="$2" status=none || fail "dd bs=$2 after the thaw"
    t cmp "$T/m2/$1" "$T/src" || fail "$1 reads otherwise after the thaw"
}

step "the OST frozen: an acknowledged write's failure is reported by close"
mount_stria "$T/m2" timeout=1
pid=$(daemon_pid stord)
frozen_dd frozen-1m 1M

step "the OST frozen: a gathered write's failure is reported by close"
frozen_dd frozen-4k 4k

step "small overwrites of a file held open reach the cluster by themselves"
t "$BUILD/tests/write_behind" --idle "$T/m2" "$CONF" || fail "write_behind --idle"

step "a mount stopped with a file open sends what it gathered"
fpid=$(stria_fuse_pids "$(realpath "$T/m2")")
[ -n "$fpid" ] || fail "no stria-fuse serves $T/m2"
head -c 8192 /dev/zero | tr '\0' o >"$T/m2/held"
# The holder's write is gathered and acknowledged, its file stays open (a
# close would send it); the signal comes well within the 1 s after which
# the buffer would be sent anyway.
coproc "$BUILD/tests/write_behind" --hold "$T/m2/held"
HOLD_PID=$COPROC_PID
read -r -t 30 ready <&"${COPROC[0]}" && [ "$ready" = ready ] || fail "write_behind --hold"
kill -TERM $fpid
wait_for 30 sh -c "! kill -0 $fpid 2>/dev/null" || fail "stria-fuse did not exit on SIGTERM"
kill "$HOLD_PID" 2>/dev/null || true
wait "$HOLD_PID" 2>/dev/null || true
S cp stria:/held "$T/held.out" || fail "stria cp stria:/held"
[ "$(head -c 4 "$T/held.out")" = kept ] ||
    fail "a write acknowledged before SIGTERM was lost: the file starts with $(head -c 4 "$T/held.out")"
echo "PASS: fuse_write_behind"
