#!/usr/bin/env bash
# Small files written behind their close (architecture.md, "Small files
# written behind"): a mount holding its MDT's write-behind grant takes a
# write into a file's Data-on-MDT component at once, and its flush and
# close do not wait for the MDT. Only a file made under the grant the
# mount still holds is written so: no other client can have seen it. Mount
# A holds every such send back 3 s (STRIA_TEST_WRITE_DELAY_MS) and keeps no
# attributes in the kernel (attr_timeout=0), so each check below runs while
# the bytes are still on their way:
# - a close did not wait (its bytes had not landed when it returned: the
#   mount's dom_behind and dom_behind_landed counters);
# - mount B reads the bytes at once (its open takes A's grant back, and A
#   sends what it holds first);
# - A's own stat shows the size, and a rewrite with O_TRUNC reads back new;
# - a file B already read and keeps in its cache, rewritten in place by A,
#   reads new on B at once (A's close waits: the file was not made under
#   A's grant, and B's lease on it must be taken back first);
# - a file removed at once leaves nothing in the MDT's records (a check
#   against leaks: two mechanisms keep it so, see the step);
# - with a small dom_max, the room the grant carries keeps every write
#   behind from meeting ENOSPC: writes that do not fit fail at their close,
#   none is lost after it.
. "$(dirname "$0")/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: FUSE not usable here: $FUSE_WHY"
    exit 77
fi

t() { timeout -k 5 60 "$@"; }
S() { "$STRIA" --conf "$CONF" "$@"; }
# The KiB the MDT's Data-on-MDT records hold (stria df).
dom_used() { S df | awk '$1 == "stria-MDT0000" && NF == 4 { print $2 }'; }

cluster_up --no-mount
S setstripe -E 64K -L mdt -E -1 -c 1 / || fail "setstripe of the root failed"
STRIA_TEST_WRITE_DELAY_MS=3000 mount_stria "$T/a" attr_timeout=0
mount_stria "$T/b"
A=$(realpath "$T/a")
B=$(realpath "$T/b")
for i in 1 2 3 4; do head -c 65536 /dev/urandom >"$T/src$i"; done

step "a close does not wait for the bytes of a small file"
t mkdir "$A/d"
t cp "$T/src1" "$A/d/warm" # its open asks for the grant
before=$(mount_counter "$A" dom_behind)
t cp "$T/src1" "$A/d/f1"
after=$(mount_counter "$A" dom_behind)
landed=$(mount_counter "$A" dom_behind_landed)
[ "$after" -gt "$before" ] || fail "the write was not taken behind (dom_behind $before, then $after)"
# Held back 3 s: had the close waited, every write would have landed.
[ "$landed" -lt "$after" ] || fail "the close waited for its bytes ($landed of $after landed)"

step "another mount reads them at once"
t cp "$T/src2" "$A/d/f2"
t cmp "$T/src2" "$B/d/f2" || fail "mount B read other bytes than mount A wrote and closed"

step "this mount sees their size, and a rewrite"
t cp "$T/src3" "$A/d/f3"
[ "$(t stat -c %s "$A/d/f3")" = 65536 ] || fail "mount A's stat does not show what it wrote"
printf hello >"$A/d/f4"
[ "$(t stat -c %s "$A/d/f4")" = 5 ] || fail "mount A's stat of a 5-byte file is wrong"
t cp "$T/src1" "$A/d/f3"
t cmp "$T/src1" "$A/d/f3" || fail "a rewrite with O_TRUNC read back wrong on mount A"
t cmp "$T/src1" "$B/d/f3" || fail "a rewrite with O_TRUNC read back wrong on mount B"

step "a file removed at once leaves nothing on the MDT"
# The unlink waits for the file's bytes written behind first (its own
# MDT call, or stria_unlink_behind), and the removal's DESTROYED would
# clean up after a late one too. The record goes with that DESTROYED,
# which the mount sends behind the unlink (within a second or so).
used=$(dom_used)
sleep 1.5 # the df took the grant back: A's create below asks again
t cp "$T/src2" "$A/d/gone"
t unlink "$A/d/gone" # unlink(2) alone: no stat before it
dom_back() { [ "$(dom_used)" = "$used" ]; }
wait_for 20 dom_back || fail "the MDT holds $(dom_used) KiB after a write and rm, $used before"
[ "$(mount_counter "$A" dom_behind_lost)" = 0 ] || fail "a write behind was lost: $(mount_counter "$A" dom_behind_lost)"

step "a file another mount keeps in its cache, rewritten in place"
t cp "$T/src1" "$A/d/kept"
t cmp "$T/src1" "$B/d/kept" || fail "mount B read other bytes than mount A wrote (kept)"
# B's open took the grant back; A asks again after a second (WB_BACKOFF),
# with its next create, and holds it again when it rewrites the file.
sleep 1.5
t cp "$T/src2" "$A/d/regrant"
t dd if="$T/src4" of="$A/d/kept" conv=notrunc status=none
t cmp "$T/src4" "$B/d/kept" || fail "mount B read its cached bytes after mount A's rewrite and close"

step "with little room, no write behind meets ENOSPC"
# Mount C holds its sends back 0.3 s: a write behind that met ENOSPC would
# fail after its close, lost.
metad_set dom_max 20M
STRIA_TEST_WRITE_DELAY_MS=300 mount_stria "$T/c"
C=$(realpath "$T/c")
made=0 refused=0
for i in $(seq 1 500); do
    if t cp "$T/src2" "$C/d/room$i" 2>"$T/cp.err"; then
        made=$((made + 1))
    else
        grep -q "No space left" "$T/cp.err" || fail "cp failed otherwise than ENOSPC: $(cat "$T/cp.err")"
        refused=$i
        break
    fi
done
[ "$refused" -gt 0 ] || fail "500 files of 64 KiB fit in dom_max = 20M"
[ "$(mount_counter "$C" dom_behind)" -gt 0 ] || fail "mount C wrote nothing behind"
[ "$(mount_counter "$C" dom_behind_lost)" = 0 ] || fail "a write behind was lost: $(mount_counter "$C" dom_behind_lost)"
for i in $(seq 1 "$made"); do
    t cmp -s "$T/src2" "$A/d/room$i" || fail "room$i, whose close succeeded, reads back wrong"
done
echo "made $made files, the next refused; $(mount_counter "$C" dom_behind) writes behind on mount C"
echo "PASS"
