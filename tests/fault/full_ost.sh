#!/usr/bin/env bash
# A full OST (issue 5): OST 1 lives on a 96 MiB tmpfs (and OST 0 on a tmpfs
# of its own, so that what other tests write to the disk does not move
# the mount's df, which a step below counts). A file striped onto
# it fills it: the write fails with ENOSPC (and says so), what was written
# before is intact, the other OST still takes data, and once the MDT hears
# that OST 1 is nearly full, new files are no longer placed on it, not even
# those asking for it.
# Needs root (mount); skipped (ctest code 77) without it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../func" && pwd)
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: full_ost needs root to mount a small tmpfs"
    exit 77
fi
. "$HERE/lib.sh"

SMALL="$DIR/ost1"
OTHER="$DIR/ost0"
# The tmpfs go before the daemons' teardown (lazily: stria-stord may
# still hold files on them), keeping the test's exit status for teardown.
trap 'rc=$?; set +e; umount -l "$SMALL" "$OTHER" 2>/dev/null; (exit $rc); teardown' EXIT

step "a cluster whose OST 1 has 96 MiB"
cluster_up --osts 2 --no-mount
S() { "$STRIA" --conf "$CONF" "$@"; }
# stria-stord stops; OSTs 1 and 0 (empty yet) move onto tmpfs; stria up
# starts stria-stord again.
pid=$(daemon_pid stord)
kill "$pid"
wait_for 20 bash -c "! kill -0 $pid" || fail "stria-stord did not stop"
mount -t tmpfs -o size=96m tmpfs "$SMALL" || fail "cannot mount a tmpfs on $SMALL"
mount -t tmpfs -o size=256m tmpfs "$OTHER" || fail "cannot mount a tmpfs on $OTHER"
"$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up did not restart stria-stord"
wait_for 30 S df || fail "the OSTs did not come back"

head -c $((8 << 20)) /dev/urandom >"$T/a"
head -c $((160 << 20)) /dev/zero >"$T/big"
S mkdir /full
S setstripe -c 1 -i 1 /full/a >/dev/null || fail "cannot place a file on OST 1"
S cp "$T/a" stria:/full/a || fail "8 MiB onto OST 1 failed"
S getstripe /full/a | grep -qE '^[[:space:]]+1[[:space:]]' || fail "/full/a is not on OST 1"

step "filling OST 1 fails with ENOSPC"
S setstripe -c 1 -i 1 /full/big >/dev/null
if S cp "$T/big" stria:/full/big 2>"$T/cp.err"; then
    fail "160 MiB fitted on a 96 MiB OST"
fi
cat "$T/cp.err"
grep -q "No space left on device" "$T/cp.err" || fail "the error does not say ENOSPC"

step "what was written before is intact"
S cp stria:/full/a "$T/a.back" || fail "cannot read /full/a back"
cmp "$T/a" "$T/a.back" || fail "/full/a changed when OST 1 filled"

step "removed through a mount, a file's space is free at once: to a write and to df"
# The mount removes a file's objects behind the unlink's reply; a write
# that meets the full OST meanwhile, and a df, wait for them.
if fuse_usable; then
    mount_stria "$T/m"
    S setstripe -c 1 -i 1 /full/again >/dev/null
    rm "$T/m/full/big" || fail "rm of /full/big through the mount"
    cp "$T/a" "$T/m/full/again" || fail "8 MiB onto OST 1 right after the rm of /full/big failed"
    cmp "$T/a" "$T/m/full/again" || fail "/full/again reads otherwise"
    before=$(df -B1 --output=avail "$T/m" | tail -n 1)
    rm "$T/m/full/again" || fail "rm of /full/again through the mount"
    after=$(df -B1 --output=avail "$T/m" | tail -n 1)
    echo "   df: $before bytes free before the rm of 8 MiB, $after after"
    [ "$after" -ge $((before + (6 << 20))) ] || fail "df right after the rm shows $after bytes free, $before before"
else
    echo "   (FUSE not usable here: $FUSE_WHY; this step is left out)"
    S rm /full/big
fi

step "OST 0 still takes data"
S setstripe -c 1 -i 0 /full/zero >/dev/null
S cp "$T/a" stria:/full/zero || fail "OST 0 refused a write"
S cp stria:/full/zero "$T/zero.back" && cmp "$T/a" "$T/zero.back" || fail "/full/zero differs"

step "new files go to OST 0 only, once OST 1 is known to be full"
# Fill OST 1 to under 64 MiB free (the MDT's threshold) with local data.
head -c $((40 << 20)) /dev/zero >"$SMALL/ballast" || true
on_1() { S getstripe "$1" | grep -qE '^[[:space:]]+1[[:space:]]'; }
# As Lustre does, a file asking for a full OST as its first gets the next
# one that can take it. Free space weighs placement already, so only a file
# asking for OST 1 shows that the MDT has heard that it is full.
forced_elsewhere() {
    S rm -f /full/forced 2>/dev/null || true
    S setstripe -c 1 -i 1 /full/forced >/dev/null && ! on_1 /full/forced
}
wait_for 30 forced_elsewhere || { S df; fail "the MDT still places files on the full OST 1"; }
# It may have held on a map from before the rm above freed space on OST 1
# (0 MiB free), which the next heartbeats replace with the space after the
# rm and then after the ballast. Once those have passed (heartbeats every
# 500 ms), the MDT must still refuse OST 1.
sleep 2
wait_for 30 forced_elsewhere || { S df; fail "the MDT places files on the full OST 1 again"; }
for i in 1 2 3 4 5 6 7 8; do
    S setstripe -c 1 "/full/new$i" >/dev/null || fail "cannot create /full/new$i"
    if on_1 "/full/new$i"; then fail "/full/new$i was placed on the full OST 1"; fi
done
S df | tee "$T/df.out"
echo "PASS: full_ost"
