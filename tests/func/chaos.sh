#!/usr/bin/env bash
# Chaos on four MDTs in two stria-metad processes: three clients run random
# creates, mkdirs (plain and striped), renames between shards, hard links,
# unlinks and rmdirs (tests/func/chaos.c) while a stria-metad, picked at
# random, is killed with SIGKILL at random moments and restarted. The
# clients check every answer against a model of what was acknowledged and,
# at the end, the whole namespace and every link count. Then fsck must be
# clean, and once everything is removed no inode record may be left on any
# MDT. CHAOS_SECONDS (default 20) and SEED (default random, printed) repeat
# a run.
. "$(dirname "$0")/lib.sh"
cluster_up --mdts 4 --metads 2 --osts 1 --no-mount
SECS=${CHAOS_SECONDS:-20}
SEED=${SEED:-$RANDOM}
echo "seed $SEED, $SECS s"

inodes_used() {
    "$STRIA" df -i | awk '/MDT[0-9]+_UUID/ { n += $3 } END { print n }'
}
sleep 1.2
base=$(inodes_used)

"$BUILD/tests/chaos" "$CONF" "$SECS" "$SEED" 3 >"$T/chaos.out" 2>&1 &
worker=$!
RANDOM=$SEED
kills=0
end=$((SECONDS + SECS - 3))
while [ $SECONDS -lt $end ] && kill -0 $worker 2>/dev/null; do
    sleep "0.$((RANDOM % 8 + 2))"
    if [ $((RANDOM % 2)) -eq 0 ]; then victim=metad; else victim=metad1; fi
    kill -9 "$(daemon_pid $victim)" 2>/dev/null || true
    kills=$((kills + 1))
    sleep "0.$((RANDOM % 5 + 1))"
    "$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "restart of $victim"
    wait_for 20 "$STRIA" stats || fail "MDTs do not answer after restarting $victim"
done
wait $worker || { cat "$T/chaos.out"; fail "the namespace does not match what was acknowledged (seed $SEED)"; }
cat "$T/chaos.out"
echo "$kills SIGKILLs of a stria-metad during the run"
[ $kills -ge 2 ] || fail "only $kills kills: the run was too short to mean anything"

step "fsck is clean on every MDT, once recovery has ended every open operation"
settled() { "$STRIA" fsck 2>&1 | grep -q "still open" && return 1; return 0; }
wait_for 20 settled || fail "cross-MDT operations still open 20 s later: $("$STRIA" fsck)"
if ! "$STRIA" fsck >"$T/fsck"; then
    sleep 2
    "$STRIA" fsck >"$T/fsck2" && echo "(a second fsck, 2 s later, is clean)"
    for d in $("$STRIA" ls /chaos); do echo "/chaos/$d:"; "$STRIA" ls -l "/chaos/$d" | sed 's/^/  /'; done
    for d in $("$STRIA" ls /chaos); do for n in $("$STRIA" ls "/chaos/$d"); do
        "$STRIA" stat "/chaos/$d/$n" | grep -E "Inode" | sed "s|^|  /chaos/$d/$n |"; done; done
    fail "stria fsck found problems: $(cat "$T/fsck")"
fi

step "removing everything leaves no record behind"
"$STRIA" rm -r /chaos
inodes_back() { [ "$(inodes_used)" -eq "$base" ]; }
wait_for 20 inodes_back ||
    fail "inode records: $(inodes_used), want $base (seed $SEED): $("$STRIA" df -i)"
echo PASS
