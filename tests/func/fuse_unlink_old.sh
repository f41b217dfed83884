#!/usr/bin/env bash
# Files older than their leases are removed behind too (architecture.md,
# "Write-behind unlink", "Files older than their leases"), as a training
# job does when it writes a new checkpoint and removes the oldest. A mount
# decides an unlink alone from what its cache holds of the name, the file
# and the directory. The file's lease runs out lease_ms after it was given
# (5 s here), but while the mount holds its MDT's write-behind grant
# without a break since before that, no other client's request ran there,
# so what it cached still holds. This test makes files, keeps writing new
# ones in the same directory until the first ones' leases and the grant's
# term have run out, while the management daemon's policy engine asks the
# MDT for repositories and tombstones every second, and removes the old
# ones:
# - every unlink is written behind (but perhaps the first, which renews
#   the grant under the same number): the policy engine's reads did not
#   take the grant;
# - so is every unlink of an rm -rf after a quiet spell, when the MDT
#   forgot the directory's lease record: one listing under the grant
#   brings its names back;
# - another client then finds none of them, and no object is left.
# Before, every unlink of a file older than lease_ms went to the MDT and
# waited, and the policy engine took the grant every policy_interval.
. "$(dirname "$0")/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: FUSE not usable here: $FUSE_WHY"
    exit 77
fi

N=300
BIG=5000 # names of 30 bytes: more than a READDIR of 64 KiB holds
LEASE_MS=5000
t() { timeout -k 5 60 "$@"; }
S() { "$STRIA" --conf "$CONF" "$@"; }
stat1() {
    getfattr --only-values -n stria.mount.stats "$1" 2>/dev/null | tr ' ' '\n' |
        awk -F= -v k="$2" '$1 == k { print $2 }'
}
# The objects the OSTs hold (stria fsck counts them).
ost_objects() { S fsck | sed -n 's/^OSTs: \([0-9]*\) objects.*/\1/p'; }
objects_back() { [ "$(ost_objects)" = "$objects0" ]; }
# all_behind WHICH [COUNT]: since behind0 and grants0, all of the COUNT
# (N) unlinks but the first were written behind, under the same grant, and
# none failed.
all_behind() {
    local behind grants n=${2:-$N}
    behind=$(($(stat1 "$M" unlinks_behind) - behind0))
    grants=$(stat1 "$M" wb_grants)
    echo "   $behind of $n unlinks written behind; grants $grants0 -> $grants"
    [ "$behind" -ge $((n - 1)) ] || fail "only $behind of $n unlinks $1 were written behind"
    [ "$grants" = "$grants0" ] || fail "the grant was taken and given again ($grants0 -> $grants grants)"
    [ "$(stat1 "$M" unlinks_failed)" = 0 ] || fail "$(stat1 "$M" unlinks_failed) unlinks written behind failed"
}

cluster_up --no-mount
metad_set lease_ms "$LEASE_MS"
mgmtd_set policy_interval 1
mount_stria "$T/m"
M="$T/m"

step "make $N files, then new ones until the first ones' leases and the grant's term ran out"
t mkdir "$M/d" || fail "mkdir"
objects0=$(ost_objects)
for i in $(seq "$N"); do echo "$i" >"$M/d/f$i" || fail "create f$i"; done
grants0=$(stat1 "$M" wb_grants)
[ "$grants0" -ge 1 ] || fail "the creates brought no write-behind grant"
# A new file every 0.2 s keeps the directory's lease; after twice the
# lease the old files' leases and the grant's term have run out, and the
# policy engine has asked the MDT several times meanwhile.
end=$((SECONDS + 2 * LEASE_MS / 1000 + 1))
k=0
while [ "$SECONDS" -lt "$end" ]; do
    k=$((k + 1))
    echo new >"$M/d/new$k" || fail "create new$k"
    sleep 0.2
done
echo "   $k new files meanwhile"
grep -q "policy: every 1 s" "$DIR/log/mgmtd.log" || fail "the policy engine does not run every second"

step "remove them: all but the first unlink are written behind"
behind0=$(stat1 "$M" unlinks_behind)
t find "$M/d" -name 'f*' -delete || fail "remove"
t sync "$M/d" # fsync of the directory: the queued unlinks are made
all_behind "of files older than their leases"

step "make $N more in another directory, $BIG in a third, and leave them alone longer than the lease"
# Nothing touches the directories meanwhile: the MDT forgets their lease
# records, and the next reply brings the mount's cache a new generation of
# each, which drops its names. The first unlink (sent the ordinary way:
# the grant's term ran out) renews the grant; the next lists the directory
# once under it, and the rest are decided from the cache. The third takes
# several READDIRs to list: before, a listing that did not fit one was of
# no use, and every unlink there went to the MDT.
t mkdir "$M/q" "$M/big" || fail "mkdir /q /big"
for i in $(seq "$N"); do echo "$i" >"$M/q/f$i" || fail "create q/f$i"; done
(cd "$M/big" && t touch $(seq -f 'file-with-a-longer-name-%g' "$BIG")) || fail "create $BIG files in /big"
sleep $((2 * LEASE_MS / 1000 + 1))
grants0=$(stat1 "$M" wb_grants)

step "rm -rf of that directory: all but the first unlink are written behind"
behind0=$(stat1 "$M" unlinks_behind)
t rm -rf "$M/q" || fail "rm -rf /q"
all_behind "after a quiet spell"

step "rm -rf of the directory of $BIG: all but the first unlink are written behind"
behind0=$(stat1 "$M" unlinks_behind)
grants0=$(stat1 "$M" wb_grants)
t rm -rf "$M/big" || fail "rm -rf /big"
all_behind "of a big directory after a quiet spell" "$BIG"

step "another client finds none of them, and their objects are gone"
[ -z "$(S ls /d | grep '^f')" ] || fail "stria ls /d still lists: $(S ls /d | grep '^f' | head -3)"
if S stat /q >/dev/null 2>&1; then fail "/q is still there for another client"; fi
t rm -r "$M/d" || fail "rm -r of the new files"
wait_for 20 objects_back ||
    fail "the OSTs hold $(ost_objects) objects, $objects0 before the creates"

step "an unlink refused after its name left the cache is made at once"
# A mount whose every unlink behind is refused at the last moment, as when
# the grant it was decided under went meanwhile: the unlink is made the
# ordinary way before the call returns, with the name's count held until
# then (a create behind of it would overtake it), and let go after.
STRIA_TEST_WB_REFUSE_UNLINKS=1 mount_stria "$T/r"
R="$T/r"
t mkdir "$R/r" || fail "mkdir /r"
S setstripe -E 64K -L mdt -E -1 -c 1 /r || fail "setstripe /r" # small files made behind
for i in $(seq 20); do echo "$i" >"$R/r/f$i" || fail "create r/f$i"; done
# Five past the Data-on-MDT component: objects on an OST, which the
# removals the refused unlinks bring must destroy.
for i in $(seq 5); do head -c 100000 /dev/zero >>"$R/r/f$i" || fail "grow r/f$i"; done
t sync "$R/r"
[ "$(ost_objects)" -gt "$objects0" ] || fail "the grown files have no objects on the OSTs"
behind0=$(stat1 "$R" unlinks_behind)
t find "$R/r" -name 'f*' -delete || fail "remove on the refusing mount"
[ "$(stat1 "$R" unlinks_behind)" = "$behind0" ] || fail "an unlink was queued on the refusing mount"
[ -z "$(S ls /r)" ] || fail "another client still finds: $(S ls /r | head -3)"
for i in $(seq 20); do echo "again $i" >"$R/r/f$i" || fail "create r/f$i again"; done
t sync "$R/r"
[ "$(t cat "$M/r/f7")" = "again 7" ] || fail "another mount reads r/f7 as: $(t cat "$M/r/f7")"
t rm -r "$R/r" || fail "rm -r /r"
wait_for 20 objects_back ||
    fail "the OSTs hold $(ost_objects) objects after the refused unlinks, $objects0 before"
echo "PASS"
