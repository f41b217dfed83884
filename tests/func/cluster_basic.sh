#!/usr/bin/env bash
# The whole-cluster test of issue 2: a 1 GiB file striped -c 4 -S 4M lands a
# quarter on each OST, reads back identical, and survives SIGKILL of every
# daemon followed by `stria up`. Also: the CLI's namespace commands, config
# discovery, idempotent `stria up`, refusing a different cluster, and the
# management service marking a dead storage daemon offline; `stria up`
# names a daemon that cannot start, even while another process forges its
# READY=1.
. "$(dirname "$0")/lib.sh"

step "stria up"
cluster_up --osts 4
"$STRIA" up --dir "$DIR" | grep -q "running stria-stord" || fail "second stria up should find it running"
"$STRIA" status | grep -q "OST0003.*online" || fail "status does not show OST0003 online"

step "refuses a different cluster and a foreign directory"
if "$STRIA" up --dir "$DIR" --osts 2 2>"$T/err"; then fail "accepted --osts 2 on a 4-OST cluster"; fi
grep -q "holds a cluster with 1 MDT(s) and 4 OST(s)" "$T/err" || fail "unclear refusal: $(cat "$T/err")"
mkdir -p "$T/foreign" && echo hi > "$T/foreign/file"
if "$STRIA" up --dir "$T/foreign" 2>"$T/err"; then fail "accepted a non-empty foreign dir"; fi
grep -q "holds no Stria cluster" "$T/err" || fail "unclear refusal: $(cat "$T/err")"

step "config discovery: no flags, STRIA_CONF, --conf"
"$STRIA" ls stria:/ >/dev/null || fail "stria ls without flags"
STRIA_CONF="$CONF" "$STRIA" ls stria:/ >/dev/null || fail "STRIA_CONF"
if STRIA_CONF="$T/nope.conf" "$STRIA" ls stria:/ 2>/dev/null; then fail "bogus STRIA_CONF accepted"; fi
if "$STRIA" --conf "$T/nope.conf" ls stria:/ 2>/dev/null; then fail "bogus --conf accepted"; fi

step "a wrong cluster key, and a missing one, are named"
# Another cluster's key: the servers refuse it; the CLI says the key does
# not match and which file it came from.
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/other.key"
chmod 600 "$T/other.key"
sed "s|^key_file = .*|key_file = $T/other.key|" "$CONF" >"$T/wrongkey.conf"
if "$STRIA" --conf "$T/wrongkey.conf" ls stria:/ 2>"$T/err"; then fail "a wrong key was accepted"; fi
cat "$T/err"
grep -q "cluster key does not match" "$T/err" || fail "a wrong key is not called one: $(cat "$T/err")"
grep -qF "$T/other.key" "$T/err" || fail "the wrong key's file is not named: $(cat "$T/err")"
# A key file that is not there: named, with why it cannot be read.
sed "s|^key_file = .*|key_file = $T/gone.key|" "$CONF" >"$T/nokey.conf"
if "$STRIA" --conf "$T/nokey.conf" ls stria:/ 2>"$T/err"; then fail "a missing key was accepted"; fi
cat "$T/err"
grep -qF "cannot read the cluster key file $T/gone.key" "$T/err" ||
    fail "a missing key file is not named: $(cat "$T/err")"

step "namespace commands"
"$STRIA" mkdir -p stria:/a/b/c
"$STRIA" ls stria:/a | grep -qx b || fail "ls"
"$STRIA" mv stria:/a/b stria:/a/b2
"$STRIA" stat stria:/a/b2/c | grep -q "directory" || fail "stat after mv"
if "$STRIA" rm stria:/a 2>/dev/null; then fail "rm of a directory without -r"; fi
"$STRIA" rm -r stria:/a
if "$STRIA" stat stria:/a 2>/dev/null; then fail "rm -r left /a"; fi

step "new single-stripe files rotate over the OSTs"
"$STRIA" mkdir stria:/spread
echo sample > "$T/small"
for i in 1 2 3 4 5 6 7 8; do "$STRIA" cp "$T/small" "stria:/spread/f$i"; done
osts=$(for i in 1 2 3 4 5 6 7 8; do "$STRIA" getstripe "stria:/spread/f$i" | awk '/obdidx/ {getline; print $1}'; done | sort -u | wc -l)
[ "$osts" -eq 4 ] || fail "8 new files landed on $osts OST(s), want all 4"
"$STRIA" rm -r stria:/spread

step "write 1 GiB striped -c 4 -S 4M"
"$STRIA" mkdir stria:/ckpt
"$STRIA" setstripe -c 4 -S 4M stria:/ckpt
"$STRIA" getstripe stria:/ckpt | grep -q "stripe_count:  4" || fail "directory default"
head -c 1073741824 /dev/urandom > "$T/big"
used_before=$("$STRIA" df | awk '/OST/ {s += $3} END {print s}')
"$STRIA" cp "$T/big" stria:/ckpt/shard0
"$STRIA" getstripe stria:/ckpt/shard0 | tee "$T/gs"
[ "$(grep -c '^[[:space:]]*[0-3][[:space:]]' "$T/gs")" -eq 4 ] || fail "getstripe shows 4 stripes"
[ "$("$STRIA" stat stria:/ckpt/shard0 | awk '/Size:/ {print $2}')" = 1073741824 ] || fail "size"

step "each OST received a quarter (stria df)"
"$STRIA" df | tee "$T/df"
awk -v before="$used_before" '/OST/ {
        kib = $3; q = 262144;            # a quarter of 1 GiB in KiB
        if (kib < q * 0.97 || kib > q * 1.03 + before) { print "OST " $1 " holds " kib " KiB"; bad = 1 }
     } END { exit bad }' "$T/df" || fail "uneven distribution"

step "read back identical"
"$STRIA" cp stria:/ckpt/shard0 "$T/back"
cmp "$T/big" "$T/back" || fail "data differs"
rm -f "$T/back"

step "kill -9 every daemon, stria up again, read again"
for d in stord metad mgmtd; do kill -9 "$(daemon_pid $d)"; done
sleep 0.5
# Run as a service manager would: each daemon must say READY=1 to stria
# up's own socket, never to the manager's.
NOTIFY_SOCKET=@outer-manager "$STRIA" up --dir "$DIR" | grep -q "started stria-metad" || fail "restart"
for d in stord metad mgmtd; do
    tr '\0' '\n' <"/proc/$(daemon_pid $d)/environ" | grep -q "^NOTIFY_SOCKET=@outer-manager$" &&
        fail "stria-$d was given the outer manager's NOTIFY_SOCKET"
done
"$STRIA" cp stria:/ckpt/shard0 "$T/back"
cmp "$T/big" "$T/back" || fail "data differs after kill -9"
rm -f "$T/back"

step "a dead storage daemon is marked offline, and online again"
kill -9 "$(daemon_pid stord)"
wait_for 20 sh -c "'$STRIA' status | grep -q 'OST0000.*OFFLINE'" || fail "OST0000 never went offline"
"$STRIA" df | grep -q "offline" || fail "df does not show the offline OSTs"
"$STRIA" up --dir "$DIR" >/dev/null
wait_for 20 sh -c "'$STRIA' status | grep -q 'OST0000.*online'" || fail "OST0000 never came back"

step "a daemon that cannot listen is named at once; a port held a moment is waited for"
port=$(sed -n 's/^listen = 127\.0\.0\.1://p' "$DIR/conf/stord.conf")
[ -n "$port" ] || fail "no listen port in stord.conf"
pid=$(daemon_pid stord)
kill "$pid"
wait_for 10 sh -c "! kill -0 $pid 2>/dev/null" || fail "stria-stord did not stop"
# hold_port SECONDS: listen on stord's port that long (its pid file lets
# teardown's sweep kill it should the test fail meanwhile).
cat >"$DIR/hold_port.py" <<'PY'
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
print("listening", flush=True)
time.sleep(float(sys.argv[2]))
PY
hold_port() {
    python3 "$DIR/hold_port.py" "$port" "$1" >"$T/holder.out" &
    echo $! >"$DIR/run/holder.pid"
    wait_for 10 grep -q listening "$T/holder.out" || fail "the port holder did not start"
}
# forge_ready PID: say READY=1 on every readiness socket of process PID
# (their abstract names are in /proc/net/unix for anyone to read) until it
# exits, at most 30 s: only the daemon's own word may count.
cat >"$DIR/forge_ready.py" <<'PY'
import os, socket, sys, time
pid, sent, end = sys.argv[1], 0, time.time() + 30
while time.time() < end and os.path.exists("/proc/" + pid):
    try:
        inodes = {os.readlink("/proc/%s/fd/%s" % (pid, fd))[8:-1] for fd in os.listdir("/proc/%s/fd" % pid)}
        with open("/proc/net/unix") as f:
            names = [l.split()[7] for l in f if len(l.split()) > 7 and l.split()[6] in inodes]
    except OSError:
        break
    for n in names:
        if n.startswith("@"):
            try:
                socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"READY=1", "\0" + n[1:])
                sent += 1
            except OSError:
                pass
    time.sleep(0.05)
print("forged", sent)
PY
hold_port 60
"$STRIA" up --dir "$DIR" --no-mount >"$T/up.out" 2>&1 &
up=$!
python3 "$DIR/forge_ready.py" "$up" >"$T/forged.out"
if wait "$up"; then
    fail "stria up succeeded with stria-stord's port $port held (forged: $(cat "$T/forged.out"))"
fi
grep -q "^forged [1-9]" "$T/forged.out" || fail "no READY=1 was forged: $(cat "$T/forged.out")"
cat "$T/up.out"
grep -q "stria-stord (pid [0-9]*) exited at start" "$T/up.out" ||
    fail "stria up did not name the daemon that exited"
grep -q "cannot listen on 127.0.0.1:$port: Address already in use" "$T/up.out" ||
    fail "stria up did not show why stria-stord exited"
kill "$(cat "$DIR/run/holder.pid")"
wait
logged=$(stat -c %s "$DIR/log/stord.log") # the stord that exited said it waited too
# Held until the new stria-stord says it waits for the port, then let go:
# a fixed hold raced stria up's start on a busy machine.
hold_port 60
"$STRIA" up --dir "$DIR" --no-mount >"$T/up.out" 2>&1 &
up=$!
waits() { tail -c +$((logged + 1)) "$DIR/log/stord.log" | grep -q "127.0.0.1:$port is in use; trying again"; }
wait_for 30 waits || fail "the new stria-stord did not wait for its port: $(cat "$T/up.out")"
kill "$(cat "$DIR/run/holder.pid")"
wait "$up" || fail "stria up with the port let go while stria-stord waited: $(cat "$T/up.out")"
wait

step "stria stats counts the MDT's requests"
# The metadata daemon restarted above, so its counters start from zero.
"$STRIA" mkdir stria:/stats-a
"$STRIA" mkdir stria:/stats-b
"$STRIA" stats >"$T/stats" || fail "stria stats failed"
grep -q '^MDT0000 (up ' "$T/stats" || fail "stria stats shows no MDT0000: $(cat "$T/stats")"
mkdirs=$(awk '$1 == "MKDIR" {print $2}' "$T/stats")
[ "${mkdirs:-0}" -eq 2 ] || fail "stria stats counts ${mkdirs:-no} MKDIR, want 2: $(cat "$T/stats")"
# Beside the service times, the waits; under the table, who sent them.
grep -q ' wait_mean_us  *wait_p99_us$' "$T/stats" || fail "stria stats shows no waits: $(cat "$T/stats")"
grep -Eq '^  [0-9a-f]{16} +[0-9]+ .* 127\.0\.0\.1$' "$T/stats" ||
    fail "stria stats names no busy client: $(cat "$T/stats")"
# stria top, off a terminal: COUNT views one after the other.
"$STRIA" mkdir stria:/stats-c
"$STRIA" top -n 2 -i 1 >"$T/top" || fail "stria top -n 2 failed"
[ "$(grep -c '^stria top: ' "$T/top")" = 2 ] || fail "stria top -n 2 did not show 2 views: $(cat "$T/top")"
grep -Eq '^MDT0000: [0-9.]+ ops/s, wait [0-9.]+ us, service [0-9.]+ us$' "$T/top" ||
    fail "stria top shows no MDT0000 line: $(cat "$T/top")"
"$STRIA" top -n 0 2>/dev/null && fail "stria top -n 0 was accepted"
# Over an interval, only what happened in it: no MKDIR.
"$STRIA" stats -i 1 >"$T/stats" || fail "stria stats -i 1 failed"
grep -q '^MDT0000 (over ' "$T/stats" || fail "stria stats -i 1 shows no interval: $(cat "$T/stats")"
if grep -q '^MKDIR' "$T/stats"; then fail "stria stats -i 1 counts the earlier MKDIRs"; fi
"$STRIA" stats -i 0 2>/dev/null && fail "stria stats -i 0 was accepted"
# -s: the storage server's requests too, once for its four OSTs: a 64 KiB
# file written whole is one WRITE there (and one OPEN, one SETSIZE here).
head -c 65536 /dev/urandom >"$T/small"
"$STRIA" stats -s >"$T/stats0" || fail "stria stats -s failed"
"$STRIA" cp "$T/small" stria:/stats-a/small
"$STRIA" stats -s >"$T/stats" || fail "stria stats -s failed"
[ "$(grep -c '^storage server .*OST0000 OST0001 OST0002 OST0003 (up ' "$T/stats")" -eq 1 ] ||
    fail "stria stats -s shows no single table for the storage server: $(cat "$T/stats")"
count() { awk -v op="$1" '$1 == op { n += $2 } END { print n + 0 }' "$2"; }
for op in WRITE OPEN SETSIZE; do
    n=$(($(count $op "$T/stats") - $(count $op "$T/stats0")))
    [ "$n" -eq 1 ] || fail "stria stats -s counts $n $op for one small file, want 1: $(cat "$T/stats")"
done
"$STRIA" rm -r stria:/stats-a stria:/stats-b

step "stria fsck finds the namespace consistent after all this"
# (Each kind of damage and its repair is unit_test_meta's test_fsck.)
"$STRIA" fsck >"$T/fsck" || fail "stria fsck found problems: $(cat "$T/fsck")"
grep -q "^MDT0000: 0 dangling entries, 0 orphan inodes, 0 wrong link counts" "$T/fsck" ||
    fail "stria fsck says: $(cat "$T/fsck")"
"$STRIA" fsck --repair | grep -q "; 0 repaired" || fail "stria fsck --repair repaired something"
"$STRIA" fsck --bogus 2>/dev/null && fail "stria fsck --bogus was accepted"

step "stria fsck finds OST objects that no file owns, and --repair removes them"
# What a client that died between removing a file and its objects leaves:
# an object of an inode no MDT has, where the OST keeps its objects.
ino=abcde
fan=$(printf '%02x' $(( (0x$ino ^ (0x$ino >> 8) ^ (0x$ino >> 16)) & 0xff )))
printf 'lost' >"$DIR/ost1/objects/$fan/$(printf '%016x' 0x$ino).0.0"
"$STRIA" cp stria:/ckpt/shard0 "$T/shard0.before"
if "$STRIA" fsck >"$T/fsck"; then fail "stria fsck missed an orphan object: $(cat "$T/fsck")"; fi
grep -q "^OST0001: object $ino.0.0: no file owns it" "$T/fsck" || fail "fsck says: $(cat "$T/fsck")"
grep -q "^OSTs: .* 1 that no file owns" "$T/fsck" || fail "fsck says: $(cat "$T/fsck")"
"$STRIA" fsck --repair | grep -q "1 removed" || fail "stria fsck --repair did not remove it"
"$STRIA" fsck >"$T/fsck" || fail "still not clean after --repair: $(cat "$T/fsck")"
"$STRIA" cp stria:/ckpt/shard0 "$T/shard0.after"
cmp -s "$T/shard0.before" "$T/shard0.after" || fail "a real file changed in the repair"

step "rm frees the OSTs"
"$STRIA" rm stria:/ckpt/shard0
used_after=$("$STRIA" df | awk '/OST/ {s += $3} END {print s}')
[ "$used_after" -le $((used_before + 1024)) ] || fail "objects not removed: $used_after KiB used"

echo "PASS"
