#!/usr/bin/env bash
# An OST out of reach (issue 5). OST 1 runs in a second stria-stord, as on a
# storage host of its own; the client waits at most timeout_ms = 3000.
#
# - frozen (SIGSTOP: connections open, no answers, as a host cut off): a
#   read of a file on OST 1 fails with EIO after the timeout instead of
#   hanging; files on OST 0 stay readable and writable meanwhile;
# - thawed: the file reads again;
# - killed and restarted within the timeout: a read started while it was
#   down waits and succeeds;
# - mgmtd marks it offline after offline_after_ms and online again.
# Prints how long each case took, for the issue's note.
set -euo pipefail
. "$(cd "$(dirname "$0")/../func" && pwd)/lib.sh"

STOR2_PID=
stop_stor2() {
    if [ -n "$STOR2_PID" ]; then
        kill -CONT "$STOR2_PID" 2>/dev/null || true
        kill -9 "$STOR2_PID" 2>/dev/null || true
        wait "$STOR2_PID" 2>/dev/null || true
        STOR2_PID=
    fi
}
trap 'rc=$?; set +e; stop_stor2; (exit $rc); teardown' EXIT

step "a cluster whose OST 1 is a stria-stord of its own"
cluster_up --osts 1 --no-mount
port=$(free_port 21000) || fail "no free port for the second stria-stord"
sed -e "s|^listen = .*|listen = 127.0.0.1:$port|" -e "s|^node = .*|node = stor2|" \
    -e "s|^ost = .*|ost = 1:$DIR/ost1|" "$DIR/conf/stord.conf" >"$DIR/conf/stord2.conf"
start_stor2() {
    "$BUILD/stria-stord" --config "$DIR/conf/stord2.conf" >>"$DIR/log/stord2.log" 2>&1 &
    STOR2_PID=$!
}
start_stor2
C2="$T/client.conf"
sed "s|^key_file = .*|key_file = $DIR/cluster.key|" "$CONF" >"$C2"
echo "timeout_ms = 3000" >>"$C2"
S() { "$STRIA" --conf "$C2" "$@"; }
two_osts() { [ "$(S df | grep -c "OST")" = 2 ]; }
wait_for 30 two_osts || fail "OST 1 never joined"
# The MDT learns of OST 1 from its next cluster map, a moment after the
# management service lists it; until then -i 1 is only a hint it cannot
# follow (as Lustre's stripe offset), and the file lands on OST 0.
mdt_places_on_1() {
    S setstripe -c 1 -i 1 /probe >/dev/null || return 1
    local on1=0
    S getstripe /probe | grep -qE '^[[:space:]]+1[[:space:]]' && on1=1
    S rm /probe >/dev/null
    [ "$on1" = 1 ]
}
wait_for 30 mdt_places_on_1 || fail "the MDT never placed a file on OST 1"

head -c $((6 << 20)) /dev/urandom >"$T/data"
S setstripe -c 1 -i 0 /on0 >/dev/null
S setstripe -c 1 -i 1 /on1 >/dev/null
S cp "$T/data" stria:/on0
S cp "$T/data" stria:/on1
S getstripe /on1 | grep -qE '^[[:space:]]+1[[:space:]]' || fail "/on1 is not on OST 1"

step "OST 1 frozen: its file fails with EIO after the timeout; OST 0 works"
kill -STOP "$STOR2_PID"
t0=$(date +%s.%N)
if S cp stria:/on1 "$T/x" 2>"$T/err"; then fail "a read from a frozen OST succeeded"; fi
t1=$(date +%s.%N)
cat "$T/err"
grep -q "Input/output error" "$T/err" || fail "the frozen OST's read did not fail with EIO"
echo "   frozen OST: EIO after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s (timeout 3 s)"
S cp stria:/on0 "$T/y" && cmp "$T/data" "$T/y" || fail "OST 0's file is unreadable meanwhile"
S setstripe -c 1 -i 0 /new0 >/dev/null
S cp "$T/data" stria:/new0 || fail "OST 0 took no write meanwhile"

step "thawed: the file reads again"
kill -CONT "$STOR2_PID"
S cp stria:/on1 "$T/z" && cmp "$T/data" "$T/z" || fail "OST 1's file is unreadable after the thaw"

step "killed and restarted within the timeout: the read waits and succeeds"
kill -9 "$STOR2_PID"
wait "$STOR2_PID" 2>/dev/null || true
STOR2_PID=
t0=$(date +%s.%N)
S cp stria:/on1 "$T/w" 2>"$T/err2" &
reader=$!
sleep 1
start_stor2
wait "$reader" || { cat "$T/err2"; fail "a read across a restart of its OST failed"; }
t1=$(date +%s.%N)
cmp "$T/data" "$T/w" || fail "the read across the restart returned other data"
echo "   restarted OST: the read finished after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"

step "mgmtd marks a dead OST offline, and online when it returns"
stop_stor2
wait_for 30 bash -c "'$STRIA' --conf '$C2' df | grep -q 'OST0001.*offline\|offline.*OST0001\|OST:1.*OFFLINE\|OFFLINE.*OST:1'" ||
    { S df; S status || true; fail "OST 1 never shown offline"; }
start_stor2
wait_for 30 bash -c "! '$STRIA' --conf '$C2' df | grep -qi 'offline'" || { S df; fail "OST 1 never back online"; }
S cp stria:/on1 "$T/v" && cmp "$T/data" "$T/v" || fail "OST 1's file is unreadable when back online"

step "mgmtd killed and restarted while both OSTs are silent: they stay online until offline_after_ms"
# Both stria-stords stopped: no heartbeat reaches the new mgmtd. It must
# hand out the map it had (both OSTs online), so that creates go on, and
# mark them offline only after offline_after_ms (12 s here) of silence.
# A client asks each online OST for its statistics (stria up's wait, df,
# status): the stopped ones cost it its timeout, 1 s here.
echo "offline_after_ms = 12000" >>"$DIR/conf/mgmtd.conf"
echo "timeout_ms = 1000" >>"$CONF"
C3="$T/client3.conf"
sed "s|^timeout_ms = .*|timeout_ms = 1000|" "$C2" >"$C3"
daemon_pause stord
kill -STOP "$STOR2_PID"
kill -9 "$(daemon_pid mgmtd)"
t0=$SECONDS
"$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up after killing mgmtd"
"$STRIA" --conf "$C3" status >"$T/status.txt" || true
cat "$T/status.txt"
[ $((SECONDS - t0)) -lt 10 ] || fail "the check came too late to tell (took $((SECONDS - t0)) s)"
grep -q OFFLINE "$T/status.txt" && fail "a restarted mgmtd shows a silent OST offline at once"
# The MDT fetches the new mgmtd's map after its next heartbeat; a create
# then finds both OSTs online (with every OST offline it fails: ENOSPC).
wait_for 5 "$STRIA" --conf "$C3" stats || fail "the MDT does not answer"
"$STRIA" --conf "$C3" setstripe -c 1 -i 1 /after_mgmtd >/dev/null ||
    fail "a create right after mgmtd's restart failed"
[ $((SECONDS - t0)) -lt 11 ] || fail "the create came too late to tell (took $((SECONDS - t0)) s)"
wait_for 30 bash -c "'$STRIA' --conf '$C3' status | grep -q 'OST.*OFFLINE'" ||
    { "$STRIA" --conf "$C3" status; fail "a silent OST was never marked offline after mgmtd's restart"; }
echo "   silent OSTs marked offline $((SECONDS - t0)) s after mgmtd's restart (offline_after_ms 12 s)"
daemon_resume
kill -CONT "$STOR2_PID"
wait_for 30 bash -c "! '$STRIA' --conf '$C2' df | grep -qi 'offline'" || { S df; fail "the OSTs never came back online"; }
echo "PASS: offline_ost"
