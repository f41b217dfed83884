#!/usr/bin/env bash
# Online migration (issue 24, point 5): stria migrate rewrites a file's
# data into a new layout while it is read and written, and swaps the
# layouts atomically:
# - the data reads back the same in the new layout (getstripe says it),
#   directories are walked and paths come from stdin (find | migrate);
# - a reader reading all along reads the file whole, never holes;
# - writers during the copy: every write is in the file afterwards,
#   whether the migration succeeded or left it as it was (with a message);
# - a handle opened before the migration writes and reads through it
#   after (its objects' dead fences send it to the new layout);
# - a migrated file removed (stria rm, or through the mount) leaves none
#   of its fences on any OST;
# - kill -9 of the migrator, of stria-metad and of stria-stord in the
#   middle of a migration: the file is whole in its old or its new
#   layout, a later migration cleans up, and fsck is clean;
# - fsck --repair drops a fence of a file that is gone (its FORGET lost).
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: $FUSE_WHY"
    exit 77
fi
S() { "$STRIA" --conf "$CONF" "$@"; }
PW="$BUILD/tests/pwrite_at"
count() { S getstripe -c "$1"; }
objects() { find "$DIR"/ost*/objects -type f ! -name '*.c' | wc -l; }
fences() { find "$DIR"/ost*/fence -name "$1.*" | wc -l; } # of inode $1 (16 hex digits)
no_fences() { [ "$(fences "$1")" = 0 ]; }

step "a cluster of 4 OSTs and a mount"
cluster_up --osts 4 --no-mount
migrate_stale_short # so that a dead migrator's record goes stale in seconds
mount_stria "$T/m"
head -c $((48 << 20)) /dev/urandom >"$T/a"

step "a file migrates from 1 to 4 stripes and reads back the same"
S cp -c 1 "$T/a" stria:/a
S migrate -c 4 -S 1M /a || fail "stria migrate -c 4"
[ "$(count /a)" = 4 ] || fail "the layout is not 4 stripes: $(count /a)"
cmp "$T/m/a" "$T/a" || fail "a differs after its migration"
[ "$(objects)" = 4 ] || fail "$(objects) objects on the OSTs, not 4 (the old one stays?)"
S migrate -E 4M -c 1 -E -1 -c 2 /a || fail "stria migrate -E"
[ "$(S getstripe --component-count /a)" = 2 ] || fail "not two components"
cmp "$T/m/a" "$T/a" || fail "a differs after its second migration"

step "directories are walked, and paths come from stdin"
S mkdir /d
for i in 1 2 3; do head -c $((i * 300000)) /dev/urandom >"$T/s$i"; S cp -c 1 "$T/s$i" stria:/d/s$i; done
S migrate -c 2 /d || fail "migrate of a directory"
for i in 1 2 3; do
    [ "$(count /d/s$i)" = 2 ] || fail "/d/s$i not migrated"
    cmp "$T/m/d/s$i" "$T/s$i" || fail "/d/s$i differs"
done
S find /d -type f -stripe-count 2 | S migrate -c 3 || fail "find | migrate"
[ "$(S find /d -type f -stripe-count 3 | wc -l)" = 3 ] || fail "find | migrate missed files"
S migrate -c 2 /nonexistent 2>"$T/err" && fail "a missing path was taken"
grep -q "No such file" "$T/err" || fail "no reason for a missing path: $(cat "$T/err")"

step "a migrated file removed takes its fences with it, on every OST"
for i in 1 2 3; do
    fino[$i]=$(printf %016x "$(stat -c %i "$T/m/d/s$i")")
    # Dead ones of its first two layouts: one object, then two.
    [ "$(fences "${fino[$i]}")" -ge 3 ] || fail "/d/s$i has $(fences "${fino[$i]}") fences, not 3"
done
S rm /d/s1
no_fences "${fino[1]}" || fail "/d/s1 removed, but $(fences "${fino[1]}") of its fences stay"
rm "$T/m/d/s2" # through the mount, whose unlink may end after rm returns
wait_for 10 no_fences "${fino[2]}" || fail "/d/s2 removed, but its fences stay"
[ "$(fences "${fino[3]}")" -ge 3 ] || fail "/d/s3 lost its fences with its neighbours"

step "a reader reads the file whole all along"
(
    for i in $(seq 30); do
        cmp -s "$T/m/a" "$T/a" || { echo "read $i differs" >"$T/reader.err"; exit 1; }
        echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
    done
) &
reader=$!
for c in 2 4 1 3; do S migrate -c $c /a || fail "migrate -c $c under a reader"; done
wait $reader || fail "the reader: $(cat "$T/reader.err" 2>/dev/null)"

step "writers during the copy: every write lands, migrated or not"
cp "$T/a" "$T/model"
head -c 65536 /dev/urandom >"$T/w"
(
    for i in $(seq 0 39); do
        "$PW" "$CONF" /a $((i * 1048576 + 4096)) "$T/w" || exit 1
        sleep 0.05
    done
) &
writer=$!
for i in $(seq 0 39); do
    dd if="$T/w" of="$T/model" bs=4096 seek=$((i * 256 + 1)) conv=notrunc status=none
done
ok=0 busy=0
for c in 4 2 3 1 4; do
    if S migrate -c $c /a 2>"$T/err"; then ok=$((ok + 1)); else
        grep -q "left as it was" "$T/err" || fail "migrate under a writer: $(cat "$T/err")"
        busy=$((busy + 1))
    fi
done
wait $writer || fail "the writer failed"
echo "migrations under the writer: $ok done, $busy left as they were"
S cp stria:/a "$T/back"
cmp "$T/back" "$T/model" || fail "a write was lost under migration"

step "a handle opened before a migration writes and reads after it"
exec 7<>"$T/m/a"
S migrate -c 2 /a || fail "migrate with a handle open"
printf 'HELLO' >&7 || fail "a write through the old handle"
exec 7>&-
printf 'HELLO' | dd of="$T/model" bs=1 conv=notrunc status=none
S cp stria:/a "$T/back"
cmp "$T/back" "$T/model" || fail "the old handle's write is not in the file"

step "Data-on-MDT files migrate to the OSTs and back, and between component sizes"
S mkdir /dom
S setstripe -E 64K -L mdt -E -1 -c 1 /dom
head -c 40000 /dev/urandom >"$T/d1"
head -c $((3 << 20)) /dev/urandom >"$T/d2"
cp "$T/d1" "$T/m/dom/d1"
cp "$T/d2" "$T/m/dom/d2"
[ "$(S find /dom -type f -L mdt | wc -l)" = 2 ] || fail "the files are not on the MDT"
dom_used() { S df | awk '/^Data-on-MDT/ { getline; print $2; exit }'; }
for f in d1 d2; do
    S migrate -c 2 /dom/$f || fail "migrate of $f off the MDT"
    [ "$(S getstripe --component-count /dom/$f)" = 1 ] || fail "$f keeps a component on the MDT"
    cmp "$T/m/dom/$f" "$T/$f" || fail "$f differs on the OSTs"
    S migrate -E 128K -L mdt -E -1 -c 2 /dom/$f || fail "migrate of $f onto the MDT"
    [ "$(S find /dom/$f -L mdt)" = /dom/$f ] || fail "$f is not on the MDT"
    cmp "$T/m/dom/$f" "$T/$f" || fail "$f differs on the MDT (128K)"
    S migrate -E 64K -L mdt -E -1 -c 3 /dom/$f || fail "migrate of $f to a smaller component"
    cmp "$T/m/dom/$f" "$T/$f" || fail "$f differs on the MDT (64K)"
done
S rm -f /dom/d1
S migrate -c 1 /dom/d2 || fail "migrate of d2 off the MDT again"
[ "$(dom_used)" = 0 ] || fail "the MDT keeps $(dom_used) of Data-on-MDT bytes with no file there"

step "writes into a Data-on-MDT file during its migrations all land"
cp "$T/d2" "$T/model"
S migrate -E 64K -L mdt -E -1 -c 2 /dom/d2 || fail "migrate of d2 onto the MDT"
head -c 4096 /dev/urandom >"$T/w4"
(
    for i in $(seq 0 29); do
        "$PW" "$CONF" /dom/d2 $(((i % 15) * 4096 + (i / 15) * 1048576)) "$T/w4" || exit 1
        sleep 0.03
    done
) &
writer=$!
for i in $(seq 0 29); do
    dd if="$T/w4" of="$T/model" bs=1 seek=$(((i % 15) * 4096 + (i / 15) * 1048576)) \
        conv=notrunc status=none
done
ok=0 busy=0
for spec in "-c 2" "-E 128K -L mdt -E -1 -c 1" "-c 3" "-E 64K -L mdt -E -1 -c 4" "-c 1"; do
    # shellcheck disable=SC2086
    if S migrate $spec /dom/d2 2>"$T/err"; then ok=$((ok + 1)); else
        grep -q "left as it was" "$T/err" || fail "migrate $spec under a writer: $(cat "$T/err")"
        busy=$((busy + 1))
    fi
done
wait $writer || fail "the writer failed"
echo "Data-on-MDT migrations under the writer: $ok done, $busy left as they were"
S cp stria:/dom/d2 "$T/back"
cmp "$T/back" "$T/model" || fail "a write into the Data-on-MDT range was lost under migration"
S fsck >"$T/fsck" 2>&1 || fail "fsck after the Data-on-MDT migrations: $(cat "$T/fsck")"

step "kill -9 of the migrator: the file stays whole, the next migration cleans up"
head -c $((256 << 20)) /dev/urandom >"$T/big"
S cp -c 1 "$T/big" stria:/big
# The storage daemon stopped (SIGSTOP) holds the migrator in its copy.
"$STRIA" --conf "$CONF" migrate -c 4 /big & # $! the migrator itself, not a subshell
mig=$!
sleep 0.1
daemon_pause stord
sleep 0.2
kill -9 $mig 2>/dev/null || true
wait $mig 2>/dev/null || true
daemon_resume
# At once: the dead migrator's record is not stale yet (MIGRATE_STALE s
# after its last PROGRESS), and the file whole.
S migrate -c 2 /big 2>"$T/err" && echo "(the migration had finished)" || {
    grep -q "someone else" "$T/err" || fail "a live record was not said busy: $(cat "$T/err")"
    S fsck >"$T/fsck" || fail "fsck fails on a migration under way: $(cat "$T/fsck")"
    grep -q "migrations: 1 under way, 0 stale" "$T/fsck" || fail "fsck: $(cat "$T/fsck")"
    cmp "$T/m/big" "$T/big" || fail "big differs after its migrator died"
    echo "waiting for the dead migration to go stale"
    sleep $((MIGRATE_STALE + 1))
    S fsck >"$T/fsck" && fail "fsck passes a stale migration: $(cat "$T/fsck")"
    grep -q "migrator died" "$T/fsck" || fail "fsck does not say: $(cat "$T/fsck")"
    S fsck --repair >"$T/fsck" || fail "fsck --repair: $(cat "$T/fsck")"
    grep -q "cleaned up" "$T/fsck" || fail "fsck --repair did not clean up: $(cat "$T/fsck")"
    cmp "$T/m/big" "$T/big" || fail "big differs after fsck's cleanup"
    S migrate -c 2 /big || fail "migrate after a dead migrator"
}
[ "$(count /big)" = 2 ] || fail "big is not in its new layout"
cmp "$T/m/big" "$T/big" || fail "big differs"

# A fence of a file that is gone, whose FORGET never came: the restart of
# stria-stord below loads it, and fsck --repair drops it.
gone_ino=0000ffffffff0001
ost_dirs=("$DIR"/ost*)
echo "1 1" >"${ost_dirs[0]}/fence/$gone_ino.0.0"

for d in metad stord; do
    step "kill -9 of stria-$d in the middle of a migration"
    S migrate -c 3 /big >"$T/mig.out" 2>&1 &
    mig=$!
    sleep 0.1
    daemon_pause stord
    kill -9 "$(daemon_pid $d)"
    daemon_resume
    sleep 1
    "$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up after killing $d"
    wait $mig && echo "migrated across the restart" || echo "not migrated: $(tail -1 "$T/mig.out")"
    cmp "$T/m/big" "$T/big" || fail "big differs after stria-$d died"
    case "$(count /big)" in 2 | 3) ;; *) fail "big's layout is neither: $(count /big)" ;; esac
done

step "fsck is clean, and no object or fence is left behind"
sleep $((MIGRATE_STALE + 1)) # a migration the restarts cut goes stale, then the next cleans up
S fsck --repair >"$T/fsck" || true
grep -q "fence of ${gone_ino#0000}.0.0: its file is gone (dropped)" "$T/fsck" ||
    fail "fsck --repair: $(cat "$T/fsck")"
no_fences $gone_ino || fail "fsck --repair left the fence of a file that is gone"
S migrate -c 4 /big || fail "the last migration"
S fsck >"$T/fsck" || { cat "$T/fsck"; fail "fsck"; }
grep -q " 0 that no file owns" "$T/fsck" || fail "orphans: $(cat "$T/fsck")"
big_objects=$(find "$DIR"/ost*/objects -name "$(printf %016x "$(stat -c %i "$T/m/big")").*" ! -name '*.c' | wc -l)
[ "$big_objects" = 4 ] || fail "big has $big_objects objects on the OSTs, not 4"
echo "PASS: migrate"
