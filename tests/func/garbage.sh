#!/usr/bin/env bash
# Garbage bytes and a wrong key sent to each daemon, then normal work; and
# peers that never authenticate, sending a byte at a time, to a stria-stord
# with a short handshake timeout and few connection slots.
. "$(dirname "$0")/lib.sh"
cluster_up --osts 2
port() { awk -F= -v k="$1" '$1 == k {print $2}' "$DIR/stria.cluster"; }

HANDSHAKE_MS=1000
SLOTS=12
slow_port=$(free_port 21011) || fail "no free port for a second stria-stord"
sed -e "s|^listen = .*|listen = 127.0.0.1:$slow_port|" -e "s|^node = .*|node = slow|" \
    -e "/^ost = /d" "$DIR/conf/stord.conf" >"$DIR/conf/stord-slow.conf"
printf 'ost = 2:%s\nhandshake_timeout_ms = %s\nmax_connections = %s\n' "$DIR/ost2" \
    "$HANDSHAKE_MS" "$SLOTS" >>"$DIR/conf/stord-slow.conf"
"$BUILD/stria-stord" --config "$DIR/conf/stord-slow.conf" >>"$DIR/log/stord-slow.log" 2>&1 &
SLOW_PID=$!
trap 'rc=$?; set +e; kill -9 "$SLOW_PID" 2>/dev/null; wait "$SLOW_PID" 2>/dev/null; (exit $rc); teardown' EXIT
listening() { ss -Hltn "sport = :$slow_port" | grep -q .; }
wait_for 30 listening || fail "the second stria-stord never listened"

"$BUILD/tests/garbage" 127.0.0.1 "$(port mgmt_port)" "$(port meta_port)" "$(port stor_port)" \
    "$CONF" "$DIR/cluster.key" "$slow_port" "$HANDSHAKE_MS" "$SLOTS"
step "every daemon still running, refusals logged with a reason"
for d in mgmtd metad stord; do
    kill -0 "$(daemon_pid $d)" || fail "$d died"
    grep -q 'auth refused .*reason="wrong cluster key"' "$DIR/log/$d.log" || fail "$d did not log the wrong key"
done
kill -0 "$SLOW_PID" || fail "the second stria-stord died"
echo PASS
