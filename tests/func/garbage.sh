#!/usr/bin/env bash
# Garbage bytes and a wrong key sent to each daemon, then normal work.
. "$(dirname "$0")/lib.sh"
cluster_up --osts 2
port() { awk -F= -v k="$1" '$1 == k {print $2}' "$DIR/stria.cluster"; }
"$BUILD/tests/garbage" 127.0.0.1 "$(port mgmt_port)" "$(port meta_port)" "$(port stor_port)" \
    "$CONF" "$DIR/cluster.key"
step "every daemon still running, refusals logged with a reason"
for d in mgmtd metad stord; do
    kill -0 "$(daemon_pid $d)" || fail "$d died"
    grep -q 'auth refused .*reason="wrong cluster key"' "$DIR/log/$d.log" || fail "$d did not log the wrong key"
done
echo PASS
