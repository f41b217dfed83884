#!/usr/bin/env bash
# `stria ondemand` against four nodes that are reached only over ssh
# (sshnodes.sh: a network and mount namespace each, an sshd each; docs/
# testbed.md), exactly as against a job's nodes:
#  1. a node file naming a node that does not exist: start fails, names
#     it, and stops what it had started on the others; with --keep-going
#     it comes up on the others;
#  2. start on four nodes (2 MDTs, striped over every OST), from the first
#     node, as a job's prolog would; again: nothing changes (idempotent);
#     with a data set staged in by every node (stria pcp);
#  3. every node writes its own shard (fsync); every node reads every
#     shard back; status shows each node's daemons and mount; stop with
#     --stage-out, and start again: the data is still there;
#  4. one node's daemons are killed mid-job: the file system is scratch,
#     as BeeOND's: what is striped over that node fails with EIO, within
#     the I/O timeout, what is not still reads;
#  5. stop --cleanup: every mount and daemon gone, every node's data
#     removed; stop again: nothing to do.
# Prints the start and stop times. Exits 77 (skipped, loudly) without root,
# network namespaces, sshd or a usable /dev/fuse.
set -euo pipefail
BUILD=${BUILD:?BUILD must point at the build directory}
HERE=$(cd "$(dirname "$0")" && pwd)
skip() { echo "SKIPPED: ondemand on ssh nodes: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root"
[ -x /usr/sbin/sshd ] || skip "no /usr/sbin/sshd (Debian's openssh-server)"
ip netns add "odprobe$$" 2>/dev/null || skip "cannot make network namespaces"
ip netns del "odprobe$$"
[ -c /dev/fuse ] && [ -w /dev/fuse ] && command -v fusermount3 >/dev/null || skip "no usable /dev/fuse"

TB=$(mktemp -d "${TMPDIR:-/tmp}/stria-od.XXXXXX")
DATA="$TB/data"
MNT="$TB/mnt"
cleanup() {
    local rc=$?
    set +e
    "$HERE/sshnodes.sh" down "$TB/bed" >/dev/null 2>&1
    if [ $rc -ne 0 ]; then
        echo "---- node logs (test failed) ----"
        tail -n 12 "$TB"/bed/nodes/*/stria-*/log/*.log 2>/dev/null
    fi
    rm -rf "$TB"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
node() { "$HERE/sshnodes.sh" exec "$TB/bed" "$@"; }
# The Stria programs running on node $1 (by the node's network namespace).
stria_procs() {
    local pfx
    pfx=$(. "$TB/bed/nodes.env" && echo "$PFX")
    ip netns pids "$pfx-$1" | xargs -r ps -o comm= -p 2>/dev/null | grep '^stria' || true
}
od() { # od NODE ARGS...: stria ondemand on NODE with the bed's ssh options
    local n=$1
    shift
    node "$n" "$BUILD/stria" ondemand "$@" --nodefile "$NF" --ssh "$SSHOPT"
}

step "a wrong --owner or --mode is refused before any node is touched"
for bad in "--owner x" "--owner 5:" "--owner 4294967295:1" "--owner -:1" "--owner 1:2:3" \
    "--mode 9" "--mode -" "--mode 17777"; do
    # shellcheck disable=SC2086 # $bad is an option and its value
    if out=$("$BUILD/stria" ondemand start --data-dir "$DATA" --mount "$MNT" $bad 2>&1); then
        fail "start $bad was accepted: $out"
    fi
    grep -qE -- "--owner is UID:GID|--mode is an octal mode" <<<"$out" || fail "start $bad: $out"
done
echo node >"$TB/nodefile"
for bad in "--owner 1:1" "--mode 0700"; do
    # shellcheck disable=SC2086
    if out=$("$BUILD/stria" ondemand status --nodefile "$TB/nodefile" --mount "$MNT" $bad 2>&1); then
        fail "status $bad was accepted: $out"
    fi
    grep -q -- "--owner and --mode are for start" <<<"$out" || fail "status $bad: $out"
done

step "four nodes with an sshd each"
"$HERE/sshnodes.sh" up "$TB/bed" 4 "$DATA" >/dev/null
NF="$TB/bed/nodefile"
SSHOPT=$(cat "$TB/bed/ssh/options")

step "a node that does not exist: named, and the others stopped again"
cp "$NF" "$TB/badnodes"
echo "nosuchnode.invalid" >>"$TB/badnodes"
out=$(node od1 "$BUILD/stria" ondemand start --nodefile "$TB/badnodes" --ssh "$SSHOPT" \
    --data-dir "$DATA" --mount "$MNT" 2>&1) && fail "start with a missing node succeeded"
grep -q "on node nosuchnode.invalid failed" <<<"$out" || fail "the missing node is not named: $out"
grep -q "stopping what was started" <<<"$out" || fail "start did not stop what it started: $out"
for n in od1 od2; do
    [ -z "$(stria_procs "$n")" ] || fail "$(stria_procs "$n") still run on $n after the failed start"
    node "$n" grep -q " $MNT " /proc/self/mounts && fail "$n is still mounted after the failed start"
done

step "--keep-going: it comes up without the missing node"
out=$(node od1 "$BUILD/stria" ondemand start --nodefile "$TB/badnodes" --ssh "$SSHOPT" \
    --data-dir "$DATA" --mount "$MNT" --keep-going --timeout 5 2>&1) || fail "start --keep-going: $out"
grep -q "going on without node nosuchnode.invalid" <<<"$out" || fail "the node left out is not named: $out"
grep -q "ondemand: 4 nodes;" <<<"$out" || fail "start --keep-going did not come up on 4 nodes: $out"
node od4 sh -c "echo kept > '$MNT/kg' && cat '$MNT/kg'" | grep -q kept || fail "od4 cannot use it"
od od1 stop --cleanup >/dev/null || fail "stop after --keep-going"

step "start on four nodes from the first, as a prolog would, staging a data set in"
G="$TB/global" # outside DATA: every node sees it, as a global file system
mkdir -p "$G/set/train"
for i in $(seq 1 40); do head -c $((i * 3001)) /dev/urandom >"$G/set/train/s$i"; done
head -c 50000000 /dev/urandom >"$G/set/big.bin"
out=$(od od1 start --data-dir "$DATA" --mount "$MNT" --mdts 2 --stripe-all --timeout 5 \
    --stage-in "$G/set") || fail "start: $out"
echo "   $out"
START_S=$(sed -n 's/.*started in \([0-9.]*\) s.*/\1/p' <<<"$out")
grep -q "pcp: 41 files" <<<"$out" || fail "stage-in did not copy 41 files: $out"
[ "$(grep -cE '^  10\.202\.[0-9]+\.1[1-4] +[1-9][0-9]* chunks' <<<"$out")" = 4 ] ||
    fail "not every node took a share of the stage-in: $out"
node od3 diff -r "$G/set" "$MNT" || fail "the staged-in data set differs on od3"
out=$(od od1 start --data-dir "$DATA" --mount "$MNT" --mdts 2 --stripe-all --timeout 5 \
    --owner 65534:65534 --mode 0750) || fail "start again: $out"
[ "$(node od3 stat -c %u:%g:%a "$MNT")" = 65534:65534:750 ] ||
    fail "--owner 65534:65534 --mode 0750: od3 sees the root as $(node od3 stat -c %u:%g:%a "$MNT")"


step "every node writes its shard; every node reads every shard"
for i in 1 2 3 4; do
    node "od$i" sh -c "head -c 8000000 /dev/urandom > '$MNT/shard$i' && sync '$MNT/shard$i'" ||
        fail "od$i cannot write its shard"
done
sums=$(node od1 sh -c "cd '$MNT' && md5sum shard1 shard2 shard3 shard4")
for i in 1 2 3 4; do
    [ "$(node "od$i" sh -c "cd '$MNT' && md5sum shard1 shard2 shard3 shard4")" = "$sums" ] ||
        fail "od$i reads other bytes"
done
node od2 "$BUILD/stria" --conf "$DATA/stria-ondemand/client.conf" getstripe /shard1 | grep -qE "stripe_count: +4" ||
    fail "--stripe-all: shard1 is not striped over the 4 OSTs"
st=$(od od3 status) || fail "status: $st"
[ "$(grep -c 'stria-stord  running' <<<"$st")" = 4 ] || fail "status does not show 4 stords: $st"
[ "$(grep -c 'stria-metad  running' <<<"$st")" = 2 ] || fail "status does not show 2 metads: $st"
[ "$(grep -c "mount .*$MNT  mounted" <<<"$st")" = 4 ] || fail "status does not show 4 mounts: $st"

step "stop with --stage-out, then start again: the data was kept"
out=$(od od1 stop --stage-out "$TB/out") || fail "stop --stage-out: $out"
diff -r "$G/set/train" "$TB/out/train" || fail "stage-out: train differs"
[ "$(cd "$TB/out" && md5sum shard1 shard2 shard3 shard4)" = "$sums" ] || fail "stage-out: the shards differ"
node od2 grep -q " $MNT " /proc/self/mounts && fail "od2 is still mounted after stop"
out=$(od od1 start --data-dir "$DATA" --mount "$MNT" --mdts 2 --timeout 5) || fail "start after stop: $out"
[ "$(node od4 sh -c "cd '$MNT' && md5sum shard1 shard2 shard3 shard4")" = "$sums" ] ||
    fail "after a stop and a start the shards differ"

step "a node's daemons die mid-job: what is on it fails, within the timeout"
node od1 sh -c "head -c 100000 /dev/urandom > '$MNT/small' && sync '$MNT/small'"
"$HERE/sshnodes.sh" kill "$TB/bed" od4
t0=$(date +%s%N)
# Through libstria: the mount's page cache holds what od2 read before.
node od2 "$BUILD/stria" --conf "$DATA/stria-ondemand/client.conf" cp stria:/shard3 "$TB/got" \
    2>/dev/null && fail "a file striped over the dead node read"
t1=$(date +%s%N)
echo "   reading a file striped over it: EIO after $(((t1 - t0) / 1000000)) ms"
st=$(od od1 status) && fail "status says all is well with a dead node"
grep -q "NOT RUNNING" <<<"$st" || fail "status does not show the dead daemon: $st"

step "stop --cleanup: nothing left on any node"
out=$(od od1 stop --cleanup) || fail "stop: $out"
STOP_S=$(sed -n 's/.*in \([0-9.]*\) s.*/\1/p' <<<"$out")
for i in 1 2 3 4; do
    node "od$i" grep -q " $MNT " /proc/self/mounts && fail "od$i is still mounted"
    [ -z "$(ls -A "$TB/bed/nodes/od$i")" ] || fail "od$i's data is still there"
done
for i in 1 2 3 4; do
    [ -z "$(stria_procs "od$i")" ] || fail "$(stria_procs "od$i") still run on od$i"
done
od od1 stop | grep -q "stopped" || fail "a second stop failed"
echo "start ${START_S} s, stop ${STOP_S} s (4 nodes)"
echo "PASS"
