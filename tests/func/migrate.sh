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
# - kill -9 of the migrator, of stria-metad and of stria-stord in the
#   middle of a migration: the file is whole in its old or its new
#   layout, a later migration cleans up, and fsck is clean.
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

step "fsck is clean, and no object is left behind"
sleep $((MIGRATE_STALE + 1)) # a migration the restarts cut goes stale, then the next cleans up
S fsck --repair >/dev/null || true
S migrate -c 4 /big || fail "the last migration"
S fsck >"$T/fsck" || { cat "$T/fsck"; fail "fsck"; }
grep -q " 0 that no file owns" "$T/fsck" || fail "orphans: $(cat "$T/fsck")"
big_objects=$(find "$DIR"/ost*/objects -name "$(printf %016x "$(stat -c %i "$T/m/big")").*" ! -name '*.c' | wc -l)
[ "$big_objects" = 4 ] || fail "big has $big_objects objects on the OSTs, not 4"
echo "PASS: migrate"
