#!/usr/bin/env bash
# What a power loss can leave on an OST's disk (architecture.md, "Crash
# safety of the checksums"): a block whose data changed while its checksum
# entry did not reach the disk. Simulated here by killing stria-stord (-9)
# and putting the entries back as they were before the last write. The
# start after such an unclean stop sums again the blocks of the objects
# that can hold one: an object already on disk when its epoch began (found
# through the epoch's log, even with its mtime put back too) and an object
# made in the epoch (found by its mtime). A block damaged in an object that
# no write touched still fails its check; and after a kill of the daemon
# alone (the host ran on) or an orderly stop, nothing is summed again.
set -euo pipefail
. "$(cd "$(dirname "$0")/../func" && pwd)/lib.sh"

INTERVAL=3
step "a cluster with one OST beginning an epoch every $INTERVAL s"
cluster_up --osts 1 --no-mount
S() { "$STRIA" --conf "$CONF" "$@"; }
stop_stord() { # SIGNAL
    local pid
    pid=$(daemon_pid stord)
    kill "-$1" "$pid"
    wait_for 20 bash -c "! kill -0 $pid" || fail "stria-stord did not stop"
}
start_stord() {
    "$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up did not start stria-stord"
    wait_for 30 S df || fail "the OST did not come back"
}
# The newest epoch's log, and a wait (bounded) for the next one to have
# begun whole: its log the only one left, which also means its sync is done.
logs() { find "$DIR/ost0" -maxdepth 1 -name 'dirty.*' -printf '%f\n' | sort -t. -k2n; }
epoch() { logs | tail -1; }
begun_after() { [ "$(logs)" != "$1" ] && [ "$(logs | wc -l)" = 1 ]; }
next_epoch() {
    wait_for $((INTERVAL * 4)) begun_after "$(epoch)" || fail "no new epoch began"
}
obj() { # the object file of a one-stripe cluster file
    local ino
    ino=$(S getstripe "$1" | awk '$1 ~ /^[0-9]+$/ && NF == 4 { print $3; exit }')
    [ -n "$ino" ] || fail "no object listed for $1"
    ls "$DIR"/ost0/objects/*/"$(printf '%016x' "$ino")".0.0
}
sums() { getfattr --absolute-names -n user.stria.c -e hex "$1" | awk -F= '/user.stria.c/ { print $2 }'; }

stop_stord TERM
[ -f "$DIR/ost0/clean" ] || fail "an orderly stop left no mark"
echo "sync_interval = $INTERVAL" >>"$DIR/conf/stord.conf"
start_stord
[ -f "$DIR/ost0/clean" ] && fail "the orderly-stop mark stayed while the OST is served"
grep -q "unclean stop" "$DIR/log/stord.log" && fail "an orderly stop was taken for an unclean one"
head -c 1000000 /dev/urandom >"$T/old"
head -c 4096 /dev/urandom >"$T/patch"
head -c 200000 /dev/urandom >"$T/fresh"
cp "$T/old" "$T/new"
dd if="$T/patch" of="$T/new" bs=1 seek=40000 conv=notrunc status=none

# A round: files old and quiet written (cp syncs them) two epochs back,
# then, just after an epoch began, old rewritten in part (4 KiB into block
# 1), fresh made, and stria-stord killed before the next epoch. A round
# that a new epoch overtakes is done again (at most three).
round_ok=false
for r in 1 2 3; do
    S cp "$T/old" "stria:/old$r"
    S cp "$T/old" "stria:/quiet$r"
    OLD=$(obj "/old$r") QUIET=$(obj "/quiet$r")
    next_epoch
    next_epoch
    e=$(epoch)
    old_sums=$(sums "$OLD")
    old_mtime=$(stat -c %y "$OLD")
    "$BUILD/tests/pwrite_at" "$CONF" "/old$r" 40000 "$T/patch" || fail "the write in place failed"
    S cp "$T/fresh" "stria:/fresh$r"
    FRESH=$(obj "/fresh$r")
    stop_stord KILL
    [ "$(epoch)" = "$e" ] && { round_ok=true; break; }
    echo "(an epoch began within the round; again)"
    start_stord
done
$round_ok || fail "three rounds overtaken by a new epoch"
grep -q "objects/.*$(basename "$OLD")" "$DIR/ost0/$e" || fail "the epoch's log does not name the object rewritten"

step "the disk as a power loss may leave it: new data, old entries (and an old mtime)"
# A power loss restarts the host: the logs were written in another boot.
sed -i '1s/^boot .*/boot 00000000-0000-0000-0000-000000000000/' "$DIR"/ost0/dirty.*
# A log's tail torn by the crash, and lines that are no object's, are passed over.
printf 'objects/../../../../%s\nobjects/0\0garbage\n%0300d\nobjects/ab/00000000000' \
    "$T/old" 7 >>"$DIR/ost0/$e"
setfattr -n user.stria.c -v "$old_sums" "$OLD"
touch -d "$old_mtime" "$OLD"
# The made object: its first block changed after the write whose entry
# reached the disk. (Each change here keeps the file's mtime, as the disk
# would.)
# The byte becomes its complement: a fixed byte would match the random
# data at that offset once in 256 runs, and the damage would be none.
damage() { # FILE OFFSET
    local m b
    m=$(stat -c %y "$1")
    b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    [ -n "$b" ] || fail "$1 has no byte at $2"
    printf "\\$(printf '%03o' $((255 - b)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
    touch -d "$m" "$1"
}
damage "$FRESH" 100
# The quiet object rots: no write touched it, so nothing may hide that.
damage "$QUIET" 500000
cmp -s "$T/old" "$QUIET" && fail "the quiet object did not change"

step "the start after the unclean stop sums again what a write left, and only that"
start_stord
grep -q "OST0000: unclean stop: checked" "$DIR/log/stord.log" ||
    fail "stria-stord did not check after an unclean stop"
grep -q "object objects/.*$(basename "$OLD"): 1 block(s) from offset 32768 held data no checksum" \
    "$DIR/log/stord.log" || fail "the rewritten block of the object on disk was not summed again"
grep -q "object objects/.*$(basename "$FRESH"): 1 block(s) from offset 0 held" "$DIR/log/stord.log" ||
    fail "the block of the made object was not summed again"
grep -q "$(basename "$QUIET")" "$DIR/log/stord.log" && fail "the untouched object was summed again"
S cp "stria:/old$r" "$T/back" || fail "the rewritten file does not read"
cmp "$T/new" "$T/back" || fail "the rewritten file reads wrong"
cp "$T/fresh" "$T/fresh.want"
damage "$T/fresh.want" 100
S cp "stria:/fresh$r" "$T/fresh.back" || fail "the made file does not read"
cmp "$T/fresh.want" "$T/fresh.back" || fail "the made file reads wrong"
if S cp "stria:/quiet$r" "$T/quiet.back" 2>/dev/null; then
    fail "a rotten block of an untouched object was read"
fi

step "killed while the host ran on: a damaged block is not summed again"
S cp "$T/fresh" stria:/late
LATE=$(obj /late)
stop_stord KILL
damage "$LATE" 70000
: >"$DIR/log/stord.log"
start_stord
grep -q "OST0000: unclean stop without a restart of the host: nothing to check" \
    "$DIR/log/stord.log" || fail "a kill without a reboot was not told apart"
grep -q "summed again" "$DIR/log/stord.log" && fail "a kill without a reboot summed blocks again"
if S cp stria:/late "$T/late.bad" 2>/dev/null; then
    fail "a damaged block was read after a kill without a reboot"
fi

step "after an orderly stop, nothing is summed again"
stop_stord TERM
[ -f "$DIR/ost0/clean" ] || fail "an orderly stop left no mark"
damage "$FRESH" 150000
: >"$DIR/log/stord.log"
start_stord
grep -q "unclean stop" "$DIR/log/stord.log" && fail "an orderly stop was taken for an unclean one"
if S cp "stria:/fresh$r" "$T/fresh.bad" 2>/dev/null; then
    fail "a block damaged after an orderly stop was read"
fi
echo "PASS: power_loss"
