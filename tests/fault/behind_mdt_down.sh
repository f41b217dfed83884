#!/usr/bin/env bash
# Unlinks written behind while one of two MDTs is down (issue 25).
# Two stria-metad processes, MDT0 and MDT1. A mount removes files of a
# directory on MDT0, the unlinks queued behind and held back 3 s
# (STRIA_TEST_WB_DELAY_MS), and stria-metad of MDT0 is killed -9 before
# they go. The mount then removes files of a directory on MDT1: those
# unlinks are not held behind MDT0's, which wait for MDT0: another mount
# lists the directory on MDT1 empty while MDT0 is still down (the sender
# served them, and the revocation of the first mount's grant on MDT1
# waited for them only). A fresh client could not reach the directory
# then: the root's inode is on MDT0. The second mount knows the path
# from leases of a minute taken before. When MDT0 is back, its unlinks are made: none
# failed, and fsck is clean.
set -euo pipefail
. "$(cd "$(dirname "$0")/../func" && pwd)/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: FUSE not usable here: $FUSE_WHY"
    exit 77
fi
N=10

step "two MDTs in two processes; a mount that holds its unlinks back 3 s"
cluster_up --mdts 2 --metads 2 --osts 1 --no-mount
S() { "$STRIA" --conf "$CONF" "$@"; }
daemon_set metad lease_ms 60000
daemon_set metad1 lease_ms 60000
wait_for 30 S stats || fail "the MDTs did not come back"
S mkdir -i 0 /d0
# A directory on MDT1 whose name the striped root holds on MDT1 too (a
# plain mkdir puts the directory where its name lives): reached with MDT0
# down.
d1=
for i in $(seq 40); do
    S mkdir "/q$i" || fail "mkdir /q$i"
    if S getdirstripe "/q$i" | grep -q "lmv_stripe_offset: 1 "; then
        d1=q$i
        break
    fi
done
[ -n "$d1" ] || fail "no name of /q1../q40 lives on MDT1"
# Mount B first: its first requests would take mount A's grants.
mount_stria "$T/b" entry_timeout=0,attr_timeout=0
B=$(realpath "$T/b")
ls -l "$B/$d1" >/dev/null
STRIA_TEST_WB_DELAY_MS=3000 mount_stria "$T/m"
M=$(realpath "$T/m")
mstat() { getfattr --absolute-names --only-values -n stria.mount.stats "$M" | tr ' ' '\n' |
    awk -F= -v k="$1" '$1 == k { print $2 }'; }
for d in d0 "$d1"; do
    for i in $(seq 1 "$N"); do echo "$i" >"$M/$d/f$i"; done
    ls -l "$M/$d" >/dev/null
done
sleep 0.5 # the handles released

step "unlinks for MDT0 queued, then its stria-metad killed -9"
behind0=$(mstat unlinks_behind)
for i in $(seq 1 "$N"); do rm "$M/d0/f$i"; done
[ $(($(mstat unlinks_behind) - behind0)) -eq "$N" ] || fail "the unlinks in d0 were not written behind"
[ "$(mstat unlinks_sent)" -lt "$(mstat unlinks_behind)" ] || fail "the unlinks in d0 went before the kill"
kill -9 "$(daemon_pid metad)"

step "unlinks for MDT1 go while MDT0 is down"
for i in $(seq 1 "$N"); do timeout -k 5 30 rm "$M/$d1/f$i" || fail "rm of $d1/f$i"; done
[ $(($(mstat unlinks_behind) - behind0)) -eq $((2 * N)) ] || fail "the unlinks in $d1 were not written behind"
d1_empty() {
    local out
    out=$(timeout -k 5 20 ls -A "$B/$d1") && [ -z "$out" ]
}
wait_for 30 d1_empty || fail "mount B still lists $d1 with MDT0 down: $(ls -A "$B/$d1" | head -3)"
# (Mount A's counters wait: any call of it to MDT0, which has its root,
# waits for its unlinks queued before, as they wait for MDT0.)

step "MDT0 back: its unlinks are made"
"$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up after the kill"
all_sent() { [ "$(mstat unlinks_sent)" = "$(mstat unlinks_behind)" ]; }
wait_for 60 all_sent || fail "unlinks still unanswered 60 s after MDT0 came back"
[ -z "$(S ls /d0)" ] || fail "names left in /d0: $(S ls /d0 | head -3)"
[ "$(mstat unlinks_failed)" = 0 ] || fail "$(mstat unlinks_failed) unlinks written behind failed"
out=$(S fsck) || fail "fsck failed: $out"

step "an MDT down past the mount's timeout: every unlink queued for it fails"
# Mount C gives up on an MDT after 4 s (-o timeout=4) and holds each batch
# back 1 s; its unlinks go in two batches (the sender takes the first as
# it comes), and all of them fail with EIO, none is left waiting.
sleep 1.5 # the other clients took the grant: C asks again
STRIA_TEST_WB_DELAY_MS=1000 mount_stria "$T/c" timeout=4
C=$(realpath "$T/c")
cstat() { getfattr --absolute-names --only-values -n stria.mount.stats "$C" | tr ' ' '\n' |
    awk -F= -v k="$1" '$1 == k { print $2 }'; }
mkdir "$C/d0/late"
for i in $(seq 1 "$N"); do echo "$i" >"$C/d0/late/g$i"; done
ls -l "$C/d0/late" >/dev/null
sleep 0.5
behind0=$(cstat unlinks_behind)
for i in $(seq 1 "$N"); do rm "$C/d0/late/g$i"; done
[ $(($(cstat unlinks_behind) - behind0)) -eq "$N" ] || fail "mount C did not unlink behind"
kill -9 "$(daemon_pid metad)"
sleep 10 # two batches, 1 s back each, past the 4 s
gave_up=$(grep -c "write-behind unlink of 'g[0-9]*' .* failed: -EIO" "$DIR"/log/stria-fuse-2.log || true)
[ "$gave_up" = "$N" ] || fail "mount C logged $gave_up unlinks given up, want $N: $(tail -3 "$DIR"/log/stria-fuse-2.log)"
"$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up after the second kill"
[ "$(cstat unlinks_failed)" = "$N" ] || fail "mount C counts $(cstat unlinks_failed) unlinks failed, want $N"
[ "$(S ls /d0/late | wc -l)" = "$N" ] || fail "the files whose unlinks failed are not all there: $(S ls /d0/late)"
echo "PASS: behind_mdt_down"
