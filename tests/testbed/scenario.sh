#!/usr/bin/env bash
# The short scenario CI runs on the test bed (testbed.sh; docs/testbed.md):
# six hosts in network namespaces, two FUSE clients.
#
#  1. a checkpoint shard written and fsynced on cli1 reads back on cli2;
#  2. 100 dataset samples written on cli1 read back on cli2;
#  3. stor2's link goes down: a file on its OST fails with EIO within the
#     timeout, files on other OSTs are read and written; link up: it reads;
#  4. each daemon type (stria-stord on stor3, stria-metad, stria-mgmtd) is
#     SIGKILLed during a checkpoint write and restarted a second later: the
#     write completes, is fsynced, and reads back the same on cli2;
#  5. each is SIGKILLed during a metadata storm of 400 creates and
#     restarted: the storm carries on, and every create it acknowledged is
#     there.
# Prints what each fault did and how long recovery took. Exits 77 (skipped,
# loudly) without root, network namespaces or a usable /dev/fuse.
set -euo pipefail
BUILD=${BUILD:?BUILD must point at the build directory}
HERE=$(cd "$(dirname "$0")" && pwd)
skip() { echo "SKIPPED: testbed scenario: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root"
ip netns add "sbprobe$$" 2>/dev/null || skip "cannot make network namespaces"
ip netns del "sbprobe$$"
[ -c /dev/fuse ] && [ -w /dev/fuse ] && command -v fusermount3 >/dev/null || skip "no usable /dev/fuse"

TB=$(mktemp -d "${TMPDIR:-/tmp}/stria-testbed.XXXXXX")
T="$TB/tmp"
mkdir -p "$T"
cleanup() {
    local rc=$?
    set +e
    [ -n "${STORM:-}" ] && kill "$STORM" 2>/dev/null
    "$HERE/testbed.sh" down "$TB" >/dev/null 2>&1
    if [ $rc -ne 0 ]; then
        echo "---- test bed logs (scenario failed) ----"
        tail -n 15 "$TB"/log/*.log
    fi
    rm -rf "$TB"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

TESTBED_TIMEOUT_MS=4000 "$HERE/testbed.sh" up "$TB"
M1="$TB/mnt/cli1"
M2="$TB/mnt/cli2"
S1() { "$HERE/testbed.sh" exec "$TB" cli1 "$BUILD/stria" --conf "$TB/etc/cli1/client.conf" "$@"; }

step "1. a checkpoint shard over 3 OSTs: written on cli1, read on cli2"
S1 mkdir /ckpt
S1 setstripe -c 3 -S 1M /ckpt
head -c $((24 << 20)) /dev/urandom >"$T/shard"
dd if="$T/shard" of="$M1/ckpt/shard0" bs=4M conv=fsync status=none
cmp "$T/shard" "$M2/ckpt/shard0" || fail "cli2 reads another shard"
[ "$(S1 getstripe /ckpt/shard0 | grep -cE '^[[:space:]]+[0-9]+[[:space:]]+[0-9]+')" = 3 ] ||
    fail "the shard is not striped over 3 OSTs"

step "2. 100 dataset samples of 64 KiB: written on cli1, read on cli2"
mkdir "$M1/data"
for i in $(seq 1 100); do head -c 65536 /dev/urandom >"$M1/data/s$i"; done
(cd "$M1/data" && cat s*) | md5sum >"$T/sum1"
(cd "$M2/data" && cat s*) | md5sum >"$T/sum2"
cmp "$T/sum1" "$T/sum2" || fail "cli2 reads other samples"

step "3. stor2 (OST 1) cut off: its file fails with EIO, the others work"
S1 setstripe -c 1 -i 0 /on0 >/dev/null
S1 setstripe -c 1 -i 1 /on1 >/dev/null
head -c $((1 << 20)) /dev/urandom >"$T/one"
cp "$T/one" "$M1/on0"
cp "$T/one" "$M1/on1"
"$HERE/testbed.sh" cut "$TB" stor2
t0=$(now)
if cat "$M2/on1" >/dev/null 2>"$T/err"; then fail "a file on a cut-off OST was read"; fi
grep -q "Input/output error" "$T/err" || { cat "$T/err"; fail "not EIO"; }
echo "   read of a file on OST 1: EIO after $(since "$t0") s (timeout 4 s)"
cmp "$T/one" "$M2/on0" || fail "OST 0's file is unreadable meanwhile"
S1 setstripe -c 1 -i 2 /on2 >/dev/null
cp "$T/one" "$M1/on2" && cmp "$T/one" "$M2/on2" || fail "OST 2 took no write meanwhile"
"$HERE/testbed.sh" heal "$TB" stor2
t0=$(now)
for _ in $(seq 1 50); do cmp -s "$T/one" "$M2/on1" && break; sleep 0.2; done
cmp "$T/one" "$M2/on1" || fail "OST 1's file is unreadable after the link came back"
echo "   link back: the file reads again after $(since "$t0") s"

# kill_restart HOST DAEMON: SIGKILL it 0.3 s from now, start it again 1 s
# later; the time from the kill to the restart goes to $T/down.
kill_restart() {
    local pid
    sleep 0.3
    pid=$(cat "$TB/run/$1-$2.pid")
    "$HERE/testbed.sh" kill "$TB" "$1" "$2" KILL
    ! kill -0 "$pid" 2>/dev/null || fail "$2 on $1 (pid $pid) still runs after SIGKILL"
    sleep 1
    "$HERE/testbed.sh" start "$TB" "$1" "$2"
}

# settled WHAT: wait (30 s at most) until the MDT places a file over all
# three OSTs again. A restarted mgmtd knows every target as offline until
# it heartbeats; a step that kills it again before then tests a cluster
# that had not recovered from the step before, not the step's own fault.
settled() {
    local stripes
    for _ in $(seq 1 150); do
        if S1 setstripe -c -1 /.settle-probe >/dev/null 2>&1; then
            stripes=$(S1 getstripe /.settle-probe | grep -cE '^[[:space:]]+[0-9]+[[:space:]]+[0-9]+' || true)
            S1 rm /.settle-probe >/dev/null 2>&1 || true
            [ "$stripes" = 3 ] && return 0
        fi
        sleep 0.2
    done
    fail "the cluster did not settle $1"
}

n=0
for victim in "stor3 stord" "meta metad" "meta mgmtd"; do
    n=$((n + 1))
    set -- $victim
    step "4.$n. $2 on $1 SIGKILLed during a checkpoint write, restarted 1 s later"
    head -c $((48 << 20)) /dev/urandom >"$T/shard1"
    t0=$(now)
    dd if="$T/shard1" of="$M1/ckpt/k$n" bs=1M conv=fsync status=none 2>"$T/dd.err" &
    writer=$!
    kill_restart "$1" "$2"
    wait "$writer" || { cat "$T/dd.err"; fail "the checkpoint write failed across a restart of $2"; }
    echo "   48 MiB written and fsynced $(since "$t0") s after it began"
    cmp "$T/shard1" "$M2/ckpt/k$n" || fail "the shard written across a restart of $2 reads back otherwise"
    settled "after a restart of $2"

    step "5.$n. $2 on $1 SIGKILLed during a metadata storm, restarted 1 s later"
    mkdir "$M1/storm$n"
    (
        for i in $(seq 1 400); do
            if touch "$M1/storm$n/f$i" 2>/dev/null; then echo "ok $i"; else echo "failed $i"; fi
        done
    ) >"$T/storm.log" &
    STORM=$!
    t0=$(now)
    kill_restart "$1" "$2"
    wait "$STORM"
    STORM=
    ok=$(grep -c "^ok" "$T/storm.log" || true)
    bad=$(grep -c "^failed" "$T/storm.log" || true)
    echo "   storm: $ok of 400 creates acknowledged, $bad failed, done $(since "$t0") s after it began"
    # A create in flight at the kill is sent again and answered once.
    [ "$ok" -eq 400 ] || fail "$bad creates failed across a restart of $2"
    for i in $(grep "^ok" "$T/storm.log" | cut -d' ' -f2); do
        [ -e "$M2/storm$n/f$i" ] || fail "acknowledged create f$i is missing after a restart of $2"
    done
    settled "after a restart of $2"
done
cmp "$T/shard" "$M2/ckpt/shard0" || fail "the first shard changed"
echo "PASS: testbed scenario"
