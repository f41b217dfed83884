#!/usr/bin/env bash
# Unlinks written behind whose replies are lost are made once (issue 25).
# A mount sends the unlinks it wrote behind several to an UNLINKS request,
# each with a slot of its own. Here the MDT drops the connection instead of
# answering every 3rd UNLINKS (STRIA_TEST_DROP_REPLY_EVERY with
# STRIA_TEST_DROP_REPLY_OP, test hooks). The mount then sends that
# request's unlinks again one by one, as resends, and the MDT answers those
# it made from the replies it kept with them: none fails, every name goes,
# and every file's objects go, which the mount learns of only from those
# replies.
set -euo pipefail
. "$(cd "$(dirname "$0")/../func" && pwd)/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: FUSE not usable here: $FUSE_WHY"
    exit 77
fi
N=600

step "a cluster whose MDT drops the connection instead of every 3rd UNLINKS reply"
STRIA_TEST_DROP_REPLY_EVERY=3 STRIA_TEST_DROP_REPLY_OP=UNLINKS cluster_up --osts 1 --no-mount
S() { "$STRIA" --conf "$CONF" "$@"; }
objects() { S fsck | sed -n 's/^OSTs: \([0-9]*\) objects.*/\1/p'; }
objects0=$(objects)
# Each batch is held back 20 ms, so that the unlinks rm makes meanwhile
# gather into UNLINKS requests whatever the machine's load (a sender that
# keeps up sends them one by one, and the hook then has nothing to drop).
STRIA_TEST_WB_DELAY_MS=20 mount_stria "$T/m"
mkdir "$T/m/w"
for i in $(seq 1 "$N"); do echo "$i" >"$T/m/w/f$i"; done
ls "$T/m/w" >/dev/null

step "remove $N files through the mount, the unlinks written behind"
timeout -k 5 60 rm -f "$T/m/w"/f* || fail "rm through the mount"
timeout -k 5 60 sync "$T/m/w" || fail "sync of the directory (waits for the unlinks behind)"
# Every queued unlink answered: bounded.
mstat() { getfattr --absolute-names --only-values -n stria.mount.stats "$T/m" | tr ' ' '\n' |
    awk -F= -v k="$1" '$1 == k { print $2 }'; }
all_sent() { [ "$(mstat unlinks_sent)" = "$(mstat unlinks_behind)" ]; }
wait_for 60 all_sent || fail "queued unlinks still unanswered after 60 s"
stats=$(getfattr --absolute-names --only-values -n stria.mount.stats "$T/m")
lost=$(grep -c "dropping the connection instead of the reply.*op=UNLINKS" "$DIR/log/metad.log" || true)
kept=$(grep -c "answered a resent request from its \(kept reply\|reply cache\).*op=UNLINK " "$DIR/log/metad.log" || true)
echo "   $stats"
echo "   $lost UNLINKS replies lost, $kept unlinks answered from their kept replies"
[ "$lost" -ge 1 ] || fail "no UNLINKS lost its reply: the test hook did nothing"
[ "$kept" -ge 1 ] || fail "no unlink of a lost UNLINKS was answered from its kept reply"
[ -z "$(ls -A "$T/m/w")" ] || fail "names left: $(ls -A "$T/m/w" | head -3)"
[ -z "$(S ls /w)" ] || fail "another client still lists: $(S ls /w | head -3)"
if grep "write-behind unlink .* failed" "$DIR"/log/stria-fuse-*.log; then
    fail "an unlink written behind failed"
fi
echo "$stats" | grep -q "unlinks_failed=0" || fail "the mount counts failed unlinks: $stats"

step "every file's objects are gone, and fsck is clean"
df "$T/m" >/dev/null # waits for the objects removed behind
[ "$(objects)" = "$objects0" ] ||
    fail "the OSTs hold $(objects) objects, $objects0 before the $N files"
S fsck >/dev/null || fail "fsck after the unlinks"

step "unlinks queued while stria-metad restarts are made by the next process"
# Mount K holds each batch back 1.5 s: its sender meets no MDT, and waits
# for one as any call waits for its target (client.conf's timeout_ms).
STRIA_TEST_WB_DELAY_MS=1500 mount_stria "$T/k"
kstat() { getfattr --absolute-names --only-values -n stria.mount.stats "$T/k" | tr ' ' '\n' |
    awk -F= -v k="$1" '$1 == k { print $2 }'; }
mkdir "$T/k/r"
for i in $(seq 1 20); do echo "$i" >"$T/k/r/f$i"; done
ls "$T/k/r" >/dev/null
sleep 0.5 # the handles released
behind0=$(kstat unlinks_behind)
timeout -k 5 30 rm -f "$T/k/r"/f* || fail "rm through mount K"
[ $(($(kstat unlinks_behind) - behind0)) -eq 20 ] || fail "mount K did not unlink the 20 files behind"
[ "$(kstat unlinks_sent)" -lt "$(kstat unlinks_behind)" ] || fail "the unlinks were sent before the kill"
kill -9 "$(daemon_pid metad)"
sleep 2 # the sender wakes to a dead MDT
"$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up after the kill"
timeout -k 5 60 sync "$T/k/r" || fail "sync of the directory after the restart"
[ -z "$(S ls /r)" ] || fail "names left after the restart: $(S ls /r | head -3)"
[ "$(kstat unlinks_failed)" = 0 ] || fail "$(kstat unlinks_failed) unlinks written behind failed across the restart"
S fsck >/dev/null || fail "fsck after the restart"
echo "PASS: resend_behind"
