#!/usr/bin/env bash
# Four MDTs in two stria-metad processes, as `stria up --mdts 4 --metads 2`
# lays them out: the striped root, mkdir -c/-i, getdirstripe, the default
# stripe of new subdirectories, 100,000 files spread within 10% over four
# MDTs, and striped mkdir/rmdir while a stria-metad is killed with SIGKILL
# and restarted: afterwards nothing is half made, no record is left behind
# on any MDT, and fsck is clean; with a stria-metad down, `stria stats`
# names its MDTs and shows the others', and a mount keeps what the other
# MDTs leased.
. "$(dirname "$0")/lib.sh"
cluster_up --mdts 4 --metads 2 --osts 2 --no-mount

# Inode records over all MDTs, from the heartbeat's figures.
inodes_used() {
    "$STRIA" df -i | awk '/MDT[0-9]+_UUID/ { n += $3 } END { print n }'
}

step "the root is striped over the four MDTs, served by two processes"
"$STRIA" getdirstripe / >"$T/gds"
grep -q "lmv_stripe_count: 4 lmv_stripe_offset: 0 lmv_hash_type: fnv_1a_64" "$T/gds" ||
    fail "root stripe: $(cat "$T/gds")"
[ "$(ls "$DIR"/run/metad*.pid | wc -l)" -eq 2 ] || fail "want two stria-metad pid files"
"$STRIA" status | grep -c "MDT000[0-3] .*online" | grep -qx 4 || fail "not four MDTs online"

step "mkdir -c and -i, getdirstripe, setdirstripe -D"
"$STRIA" mkdir -c 2 -i 3 /two
"$STRIA" getdirstripe /two >"$T/gds"
grep -q "lmv_stripe_count: 2 lmv_stripe_offset: 3" "$T/gds" || fail "/two: $(cat "$T/gds")"
[ "$(sed -n '/mdtidx/,$p' "$T/gds" | tail -n +2 | tr -d ' ' | paste -sd,)" = "3,0" ] ||
    fail "/two's shards: $(cat "$T/gds")"
"$STRIA" mkdir -c 9 /nine 2>"$T/err" && fail "mkdir -c 9 on 4 MDTs succeeded"
grep -q "Invalid argument" "$T/err" || fail "mkdir -c 9: $(cat "$T/err")"
rc=0
"$STRIA" mkdir -c x /x 2>/dev/null || rc=$?
[ $rc -eq 2 ] || fail "mkdir -c x gave exit $rc, want 2 (usage)"
"$STRIA" setdirstripe -D -c -1 /two
"$STRIA" mkdir /two/sub /two/sub/deeper
for d in /two/sub /two/sub/deeper; do
    "$STRIA" getdirstripe "$d" | grep -q "lmv_stripe_count: 4" || fail "$d did not inherit -D"
done
"$STRIA" getdirstripe /two | grep -q "default: lmv_stripe_count: -1" || fail "no default shown"
"$STRIA" setdirstripe -c 2 /made-by-setdirstripe
"$STRIA" getdirstripe /made-by-setdirstripe | grep -q "lmv_stripe_count: 2" ||
    fail "setdirstripe -c 2 did not make a striped directory"
echo data >"$T/f"
"$STRIA" cp "$T/f" stria:/two/sub/deeper/file
"$STRIA" cp stria:/two/sub/deeper/file "$T/g"
cmp -s "$T/f" "$T/g" || fail "a file three striped directories down reads back wrong"
"$STRIA" mv /two/sub/deeper/file /two/sub/deeper/file2 2>/dev/null || true
"$STRIA" rm -r /two /made-by-setdirstripe
"$STRIA" ls / | grep -q . && fail "/ not empty after rm -r: $("$STRIA" ls /)"

step "stria ls -l of a striped directory takes the attributes with the entries"
"$STRIA" mkdir -c 4 /lsl
"$STRIA" mkdir -i 2 /lsl/on2
for i in $(seq 1 40); do "$STRIA" cp "$T/f" "stria:/lsl/f$i"; done
count() { awk -v op="$1" '$1 == op { n += $2 } END { print n + 0 }' "$2"; }
"$STRIA" stats >"$T/s0"
"$STRIA" ls -l /lsl >"$T/lsl"
"$STRIA" stats >"$T/s1"
[ "$(grep -c '^-rw-r--r-- .* 5 .* f[0-9]*$' "$T/lsl")" -eq 40 ] || fail "stria ls -l /lsl: $(cat "$T/lsl")"
grep -q '^drwxr-xr-x .* on2$' "$T/lsl" || fail "stria ls -l /lsl shows no on2: $(cat "$T/lsl")"
per=$(($(count LOOKUP "$T/s1") - $(count LOOKUP "$T/s0") + $(count GETATTR "$T/s1") - $(count GETATTR "$T/s0")))
[ "$per" -lt 20 ] || fail "stria ls -l of 41 entries sent $per LOOKUPs and GETATTRs"
"$STRIA" rm -r /lsl

step "100,000 files in one directory striped over 4 MDTs"
"$BUILD/tests/many_files" "$CONF" "${COUNT:-100000}" 4

step "striped mkdir and rmdir while stria-metad#1 is killed with SIGKILL"
sleep 1.2 # the heartbeat's figures catch up
base=$(inodes_used)
"$STRIA" mkdir /k
(
    # Until told to stop (bounded), so the kills land in the middle of it.
    for i in $(seq 1 3000); do
        [ -e "$T/stop" ] && break
        "$STRIA" mkdir -c 4 "/k/d$i" 2>/dev/null || true
        [ $((i % 3)) -eq 0 ] && { "$STRIA" rm -r "/k/d$((i - 1))" 2>/dev/null || true; }
    done
) &
worker=$!
for round in 1 2 3; do
    sleep 0.$((RANDOM % 6 + 2))
    kill -9 "$(daemon_pid metad1)"
    sleep 0.3
    "$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "restart after kill -9 (round $round)"
    # The map still says online from before the kill: wait for the new one.
    wait_for 20 "$STRIA" stats || fail "MDTs do not answer after the restart (round $round)"
done
sleep 0.5
touch "$T/stop"
wait $worker
# Every directory that exists is whole: listable, striped over four.
for d in $("$STRIA" ls /k); do
    "$STRIA" getdirstripe "/k/$d" | grep -q "lmv_stripe_count: 4" || fail "/k/$d is not whole"
    "$STRIA" ls "/k/$d" >/dev/null || fail "/k/$d cannot be listed"
done
echo "$("$STRIA" ls /k | wc -l) directories survived"
"$STRIA" rm -r /k
# Open intents finish within a few ticks; then nothing is left anywhere.
inodes_back() { [ "$(inodes_used)" -eq "$base" ]; }
wait_for 20 inodes_back ||
    fail "inode records: $(inodes_used), want $base (a cross-MDT step was lost): $("$STRIA" df -i)"
"$STRIA" fsck >"$T/fsck" || fail "stria fsck found problems: $(cat "$T/fsck")"
grep -q "^across MDTs: 0 dangling entries, 0 orphan inodes, 0 wrong link counts" "$T/fsck" ||
    fail "fsck did not check across MDTs: $(cat "$T/fsck")"
"$STRIA" fsck --repair >"$T/fsck" || fail "fsck --repair on a clean file system: $(cat "$T/fsck")"
grep -q "open cross-MDT operation finished" "$DIR"/log/metad*.log && echo "(recovery ran, as the logs show)"

# With a timeout of 3 s: a request to a dead MDT waits for it to come
# back for that long (the mounts' 100 s by default) before it fails.
{ cat "$CONF"; echo "timeout_ms = 3000"; } >"$DIR/short.conf"
# Requests of KIND that MDT served since it started, or nothing when stats
# does not show that MDT (stats exits 1 while an MDT does not answer; the
# others' figures are still shown).
served() {
    { "$STRIA" --conf "$DIR/short.conf" stats 2>/dev/null || true; } |
        awk -v m="$1" -v k="$2" '/^MDT[0-9]+/ { t = $1; seen = seen || t == m } t == m && $1 == k { n = $2 }
            END { if (seen) print n + 0 }'
}
if fuse_usable; then
    step "a mount keeps what MDT0 leased while stria-metad#1 dies"
    # A directory whose name the striped root holds on MDT0 (a plain mkdir
    # puts the directory where its name lives).
    p0=
    for i in $(seq 40); do
        "$STRIA" mkdir "/p$i" || fail "mkdir /p$i"
        if "$STRIA" getdirstripe "/p$i" | grep -q "lmv_stripe_offset: 0 "; then
            p0=/p$i
            break
        fi
    done
    [ -n "$p0" ] || fail "no name of /p1../p40 lives on MDT0"
    # Leases of a minute on MDT0 (and MDT2): the 10 s default can run out
    # between the grant and the last stat on a loaded machine.
    metad_set lease_ms 60000
    mount_stria "$T/m" entry_timeout=0,attr_timeout=0
    echo x >"$T/m$p0/f" || fail "write $p0/f"
    for i in 1 2 3; do timeout -k 5 30 stat "$T/m$p0/f" >/dev/null || fail "stat $p0/f"; done
    before=$(served MDT0000 LOOKUP)
    kill -9 "$(daemon_pid metad1)"
    sleep 1 # the mount's channels to MDT1 and MDT3 break
    for i in $(seq 10); do
        timeout -k 5 30 stat "$T/m$p0/f" >/dev/null || fail "stat $p0/f after the kill"
    done
    after=$(served MDT0000 LOOKUP)
    [[ "$before" =~ ^[0-9]+$ && "$after" =~ ^[0-9]+$ ]] ||
        fail "stats did not show MDT0000's LOOKUPs: '$before', '$after'"
    echo "   10 stats after the kill: $((after - before)) LOOKUPs on MDT0"
    # Before, the lost channels dropped MDT0's leases too: a LOOKUP of each
    # name again.
    [ $((after - before)) -eq 0 ] || fail "10 stats sent $((after - before)) LOOKUPs to MDT0 after MDT1 went"
    unmount_stria_all
else
    echo "SKIPPED (this step): FUSE not usable here: $FUSE_WHY"
    kill -9 "$(daemon_pid metad1)"
fi

step "stria stats names the MDTs of a stria-metad that is down, and shows the others"
# Bounded below the mounts' timeout (100 s), which stats used to wait out.
timeout 60 "$STRIA" stats >"$T/stats" 2>/dev/null && fail "stats succeeded with stria-metad#1 down"
grep -q "^MDT0001: no answer" "$T/stats" || fail "stats did not name MDT0001: $(cat "$T/stats")"
grep -q "^MDT0000 (up" "$T/stats" || fail "stats did not show MDT0000: $(cat "$T/stats")"
step "a striped mkdir that fails for a stria-metad down names its MDTs"
named=false
for i in $(seq 20); do # until the map calls them offline (5 s without a heartbeat)
    "$STRIA" --conf "$DIR/short.conf" mkdir -c 4 /off 2>"$T/err" &&
        fail "mkdir -c 4 succeeded with stria-metad#1 down"
    if grep -q "^stria mkdir: MDT0001 is offline" "$T/err"; then
        named=true
        break
    fi
    sleep 1
done
$named || fail "mkdir -c 4 did not name MDT0001: $(cat "$T/err")"
grep -q "^stria mkdir: MDT0000 is offline" "$T/err" && fail "mkdir -c 4 called MDT0000 offline: $(cat "$T/err")"
"$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "restart after the kill"
wait_for 20 "$STRIA" stats || fail "MDTs do not answer after the restart"
echo PASS
