#!/usr/bin/env bash
# Writes to OSTs whose stria-stord was killed (issue 21, item 6). OSTs 1
# and 2 run in a stria-stord of their own, as on a storage host of its own;
# the file is striped over both; the client's timeout_ms is 2000.
#
# - kill -9: writes and an fsync through libstria fail with EIO (what
#   docs/operations.md promises), each within 1.6 x timeout_ms of its
#   start: one timeout, not two;
# - another cluster's stria-stord on the address (its key not ours): writes
#   still fail with EIO, not EACCES;
# - restarted: the same client's next write succeeds (no failure state
#   kept from before).
# The C side is tests/func/dead_ost.c.
set -euo pipefail
. "$(cd "$(dirname "$0")/../func" && pwd)/lib.sh"

TIMEOUT_MS=2000
STOR2_PID=
WRITER_PID=
stop_all() {
    [ -n "$WRITER_PID" ] && kill -9 "$WRITER_PID" 2>/dev/null || true
    if [ -n "$STOR2_PID" ]; then
        kill -9 "$STOR2_PID" 2>/dev/null || true
        wait "$STOR2_PID" 2>/dev/null || true
        STOR2_PID=
    fi
}
trap 'rc=$?; set +e; stop_all; (exit $rc); teardown' EXIT

step "a cluster whose OSTs 1 and 2 are a stria-stord of their own"
cluster_up --osts 1 --no-mount
port=$(free_port 21003) || fail "no free port for the second stria-stord"
sed -e "s|^listen = .*|listen = 127.0.0.1:$port|" -e "s|^node = .*|node = stor2|" \
    -e "s|^ost = .*|ost = 1:$DIR/ost1\nost = 2:$DIR/ost2|" "$DIR/conf/stord.conf" >"$DIR/conf/stord2.conf"
start_stor2() {
    "$BUILD/stria-stord" --config "$DIR/conf/stord2.conf" >>"$DIR/log/stord2.log" 2>&1 &
    STOR2_PID=$!
}
listening() { ss -Hltn "sport = :$port" | grep -q .; }
start_stor2
C2="$T/client.conf"
sed "s|^key_file = .*|key_file = $DIR/cluster.key|" "$CONF" >"$C2"
echo "timeout_ms = $TIMEOUT_MS" >>"$C2"
S() { "$STRIA" --conf "$C2" "$@"; }
three_osts() { [ "$(S df | grep -c "OST")" = 3 ]; }
wait_for 30 three_osts || fail "OSTs 1 and 2 never joined"
# The MDT learns of OST 1 from its next cluster map (see offline_ost.sh).
mdt_places_on_12() {
    S setstripe -c 2 -i 1 /probe >/dev/null || return 1
    local on=0
    S getstripe /probe | grep -qE '^[[:space:]]+2[[:space:]]' && on=1
    S rm /probe >/dev/null
    [ "$on" = 1 ]
}
wait_for 30 mdt_places_on_12 || fail "the MDT never placed a file on OSTs 1 and 2"
S setstripe -c 2 -i 1 -S 64K /on12 >/dev/null
S getstripe /on12 | grep -qE '^[[:space:]]+1[[:space:]]' &&
    S getstripe /on12 | grep -qE '^[[:space:]]+2[[:space:]]' || { S getstripe /on12; fail "/on12 is not on OSTs 1 and 2"; }

step "the daemon of OSTs 1 and 2 killed: writes fail with EIO within one timeout"
FLAGS="$T/flags"
mkdir -p "$FLAGS"
"$BUILD/tests/dead_ost" "$C2" /on12 "$TIMEOUT_MS" "$FLAGS" &
WRITER_PID=$!
# A flag, or the writer gone (it failed before making it).
flag_or_gone() { [ -e "$FLAGS/$1" ] || ! kill -0 "$WRITER_PID" 2>/dev/null; }
wait_for 60 flag_or_gone ready && [ -e "$FLAGS/ready" ] || fail "the writer never got ready"
kill -9 "$STOR2_PID"
wait "$STOR2_PID" 2>/dev/null || true
STOR2_PID=
touch "$FLAGS/killed"
wait_for 60 flag_or_gone gave-up && [ -e "$FLAGS/gave-up" ] || fail "the writers never gave up"

# Writes go on failing meanwhile (dead_ost checks them) until "restarting".
sleep 2

# Another cluster's stria-stord takes the address (as on nodes that run
# on-demand file systems one after another): it refuses this client's key,
# and the writes meanwhile must still fail with EIO, not EACCES.
step "another cluster's stria-stord on the address: writes still fail with EIO"
keylen=$(tr -d '\n' <"$DIR/cluster.key" | wc -c)
head -c $((keylen / 2)) /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/other.key"
chmod 600 "$T/other.key"
mkdir -p "$T/other1" "$T/other2"
sed -e "s|^key_file = .*|key_file = $T/other.key|" -e "s|^node = .*|node = other|" \
    -e "s|^mgmt = .*|mgmt = 127.0.0.1:1|" -e "s|^ost = 1:.*|ost = 1:$T/other1|" \
    -e "s|^ost = 2:.*|ost = 2:$T/other2|" "$DIR/conf/stord2.conf" >"$DIR/conf/other.conf"
grep -q "^ost = 1:$T/other1" "$DIR/conf/other.conf" || fail "the other stria-stord's config still names our OSTs"
"$BUILD/stria-stord" --config "$DIR/conf/other.conf" >>"$DIR/log/other.log" 2>&1 &
STOR2_PID=$!
wait_for 30 listening || fail "the other cluster's stria-stord never listened"
sleep 2
kill -9 "$STOR2_PID"
wait "$STOR2_PID" 2>/dev/null || true
STOR2_PID=
touch "$FLAGS/restarting"

step "restarted: the same client's next write succeeds"
start_stor2
wait_for 30 listening || fail "the restarted stria-stord never listened"
touch "$FLAGS/restarted"
rc=0
wait "$WRITER_PID" || rc=$?
WRITER_PID=
[ "$rc" = 0 ] || fail "dead_ost reported failures"
echo "PASS: dead_ost"
