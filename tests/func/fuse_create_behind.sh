#!/usr/bin/env bash
# Files created behind (architecture.md, "Files created behind"): a mount
# holding its MDT's write-behind grant makes a small file in its cache (a
# number from the range the MDT handed it, the attributes the MDT would
# give) and sends the create with the file's bytes, several files to one
# DOM_WRITES.
# - On mount D, after one ordinary create (which shows the directory's
#   layout), the next N files cost no OPEN: the MDT served none while they
#   were made; files copied with cp -p (chown, chmod, utimens of each) are
#   created behind too.
# Mount A holds every behind send back 1 s (STRIA_TEST_WRITE_DELAY_MS) and
# keeps no attributes in the kernel, so the checks below run while creates
# are still on their way:
# - a file written with a shell redirection (open, write, close: no stat)
#   has not reached the MDT when its close returned;
# - A's own stat of a file on its way shows it whole (it waits for it);
# - mount B lists the files and reads their bytes, mode and owner at once
#   (its request takes A's grant back, and A sends what it holds first);
# - under a setgid directory the files get the directory's group, as the
#   MDT gives them, and no create was made otherwise than A said;
# - a file removed at once, and an empty one, leave fsck clean;
# - creates still on the mount when stria-metad is killed are made by the
#   next process (the ranges they use are on disk), none failing;
# - with create_behind=0 (mount C) every create is an OPEN again;
# - while an unlink is on its way (mount E holds its unlinks back 1 s), a
#   create of another name is made behind, and one of the name being
#   unlinked goes the ordinary way, after the unlink.
. "$(dirname "$0")/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: FUSE not usable here: $FUSE_WHY"
    exit 77
fi

t() { timeout -k 5 60 "$@"; }
S() { "$STRIA" --conf "$CONF" "$@"; }
# OPENs MDT0000 served since it started (STATS passes no gate: it leaves
# A its grant).
opens() { S stats | awk '/^MDT[0-9]+/ { m = $1 } m == "MDT0000" && $1 == "OPEN" { print $2; exit }'; }
N=40

cluster_up --no-mount
S setstripe -E 64K -L mdt -E -1 -c 1 / || fail "setstripe of the root failed"
mount_stria "$T/d"
STRIA_TEST_WRITE_DELAY_MS=1000 mount_stria "$T/a" attr_timeout=0,entry_timeout=0
mount_stria "$T/b"
A=$(realpath "$T/a")
B=$(realpath "$T/b")
D=$(realpath "$T/d")
for i in $(seq 1 $N); do head -c $((1000 * i)) /dev/urandom >"$T/src$i"; done

step "after one create, $N more cost no OPEN"
t mkdir "$D/n"
t cp "$T/src1" "$D/n/first" # an OPEN: the grant, a range, the layout
made0=$(mount_counter "$D" creates_behind)
open0=$(opens)
for i in $(seq 1 $N); do t cp "$T/src$i" "$D/n/f$i"; done
open1=$(opens)
made1=$(mount_counter "$D" creates_behind)
echo "   OPENs served meanwhile: $((open1 - open0)); creates behind: $((made1 - made0))"
[ $((made1 - made0)) -eq $N ] || fail "$((made1 - made0)) of $N creates were made behind"
[ $((open1 - open0)) -eq 0 ] || fail "the MDT served $((open1 - open0)) OPENs while $N files were created behind"
for i in $(seq 1 $N); do
    t cmp "$T/src$i" "$B/n/f$i" || fail "mount B read other bytes of n/f$i than mount D wrote"
done

step "cp -p's chown, chmod and utimens of each file leave the next creates behind"
sleep 1.5 # B's reads took D's grant: D asks again
t cp "$T/src1" "$D/n/again"
made0=$(mount_counter "$D" creates_behind)
for i in $(seq 1 10); do t cp -p "$T/src$i" "$D/n/p$i"; done
[ $(($(mount_counter "$D" creates_behind) - made0)) -eq 10 ] ||
    fail "$(($(mount_counter "$D" creates_behind) - made0)) of 10 files copied with cp -p were created behind"
[ "$(t stat -c %Y "$D/n/p4")" = "$(stat -c %Y "$T/src4")" ] || fail "cp -p's times were not kept"

step "a close does not wait for its create, and a stat waits for it"
t mkdir "$A/d"
sleep 1.5 # B's reads took D's grant; A asks for its own
t cp "$T/src1" "$A/d/first"
made0=$(mount_counter "$A" creates_behind)
# printf, a builtin: open, write, close, no stat (which would wait for the
# file). Six files: their creates and bytes fit in the 16 buffers held-back
# sends wait in (past them a create goes the ordinary way).
for i in $(seq 1 6); do printf "%0${i}00d" 0 >"$T/txt$i"; done
for i in $(seq 1 6); do printf "%0${i}00d" 0 >"$A/d/f$i"; done
[ $(($(mount_counter "$A" creates_behind) - made0)) -eq 6 ] || fail "$(($(mount_counter "$A" creates_behind) - made0)) of 6 creates on mount A were made behind"
# Held back 1 s: had a close waited, every write would have landed.
[ "$(mount_counter "$A" dom_behind_landed)" -lt "$(mount_counter "$A" dom_behind)" ] ||
    fail "every write behind had landed: the closes waited for their creates"
[ "$(t stat -c %s "$A/d/f6")" = 600 ] || fail "mount A's stat of a file created behind is $(stat -c %s "$A/d/f6") bytes"

step "another mount lists and reads them at once"
[ "$(t ls "$B/d" | wc -l)" = 7 ] || fail "mount B lists $(ls "$B/d" | wc -l) names, want 7"
for i in $(seq 1 6); do
    t cmp "$T/txt$i" "$B/d/f$i" || fail "mount B read other bytes of f$i than mount A wrote"
done
[ "$(t stat -c "%a %u %g %s" "$B/d/f3")" = "$(stat -c "%a %u %g %s" "$T/txt3")" ] ||
    fail "f3 is '$(stat -c '%a %u %g %s' "$B/d/f3")' on mount B"
[ "$(mount_counter "$A" creates_failed)" = 0 ] || fail "creates failed: $(mount_counter "$A" creates_failed)"

step "under a setgid directory the files get its group"
t mkdir "$A/sg"
t chgrp daemon "$A/sg"
t chmod 2775 "$A/sg"
sleep 1.5 # B's listing took the grant: A asks again after a second
t cp "$T/src1" "$A/sg/first"
made0=$(mount_counter "$A" creates_behind)
for i in 1 2 3; do t cp "$T/src$i" "$A/sg/g$i"; done
[ $(($(mount_counter "$A" creates_behind) - made0)) -eq 3 ] || fail "the files under the setgid directory were not created behind"
[ "$(t stat -c %G "$B/sg/g2")" = daemon ] || fail "g2 has group $(stat -c %G "$B/sg/g2"), not the directory's"
[ "$(t stat -c %G "$A/sg/g3")" = daemon ] || fail "mount A said g3 has group $(stat -c %G "$A/sg/g3")"
[ "$(mount_counter "$A" creates_differed)" = 0 ] || fail "the MDT made $(mount_counter "$A" creates_differed) files otherwise than mount A said"

step "a file removed at once, and an empty one, leave fsck clean"
sleep 1.5
t cp "$T/src1" "$A/d/again"
made0=$(mount_counter "$A" creates_behind)
t cp "$T/src2" "$A/d/gone"
t touch "$A/d/empty"
[ $(($(mount_counter "$A" creates_behind) - made0)) -eq 2 ] || fail "gone and empty were not created behind"
t rm "$A/d/gone"
t sync "$A/d"
[ ! -e "$B/d/gone" ] || fail "a file removed at once is there on mount B"
[ "$(t stat -c %s "$B/d/empty")" = 0 ] || fail "the empty file is not there on mount B"
out=$(S fsck) || fail "fsck failed: $out"
grep -q "0 dangling entries, 0 orphan inodes, 0 wrong link counts" <<<"$out" || fail "fsck: $out"

step "creates on their way when stria-metad is killed are made by the next one"
sleep 1.5 # fsck took A's grant: A asks again
t mkdir "$A/r"
t cp "$T/src1" "$A/r/first"
made0=$(mount_counter "$A" creates_behind)
for i in 1 2 3; do printf "%0${i}00d" 0 >"$A/r/k$i"; done
[ $(($(mount_counter "$A" creates_behind) - made0)) -eq 3 ] || fail "the files before the kill were not created behind"
# Mount A holds its sends back 1 s: the creates are still on the mount.
landed=$(mount_counter "$A" dom_behind_landed)
behind=$(mount_counter "$A" dom_behind)
kill -9 "$(daemon_pid metad)"
[ "$landed" -lt "$behind" ] || fail "every create had landed before the kill ($landed of $behind)"
"$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up after the kill"
t sync "$A/r" # sends them, to the new process
for i in 1 2 3; do
    t cmp "$T/txt$i" "$B/r/k$i" || fail "k$i, created behind before the kill, reads wrong on mount B"
done
[ "$(mount_counter "$A" creates_failed)" = 0 ] || fail "$(mount_counter "$A" creates_failed) creates failed across the restart"
out=$(S fsck) || fail "fsck failed: $out"
grep -q "0 dangling entries, 0 orphan inodes, 0 wrong link counts" <<<"$out" || fail "fsck: $out"

step "with create_behind=0 every create is an OPEN"
mount_stria "$T/c" create_behind=0
C=$(realpath "$T/c")
t mkdir "$C/e"
t cp "$T/src1" "$C/e/first"
open0=$(opens)
for i in $(seq 1 10); do t cp "$T/src$i" "$C/e/f$i"; done
[ $(($(opens) - open0)) -eq 10 ] || fail "mount C sent $(($(opens) - open0)) OPENs for 10 creates"
[ "$(mount_counter "$C" creates_behind)" = 0 ] || fail "mount C created $(mount_counter "$C" creates_behind) files behind"
step "an unlink on its way holds back a create of its own name only"
# Mount E holds its unlinks back 1 s (STRIA_TEST_WB_DELAY_MS).
STRIA_TEST_WB_DELAY_MS=1000 mount_stria "$T/e"
E=$(realpath "$T/e")
sleep 1.5 # C's OPENs took the grant: E asks for its own
t mkdir "$E/u"
t cp "$T/src1" "$E/u/first"
t cp "$T/src2" "$E/u/old"
sleep 0.5 # old's handle released
unl0=$(mount_counter "$E" unlinks_behind)
t rm "$E/u/old"
[ $(($(mount_counter "$E" unlinks_behind) - unl0)) -eq 1 ] || fail "mount E did not unlink old behind"
made0=$(mount_counter "$E" creates_behind)
# Three other names: pending unlinks are counted by a hash of the name in
# 256 slots, so one of them may share old's slot (and go the ordinary way).
for n in new1 new2 new3; do t cp "$T/src3" "$E/u/$n"; done
others=$(($(mount_counter "$E" creates_behind) - made0))
[ "$others" -ge 2 ] || fail "$others of 3 other names were created behind while old's unlink was on its way"
t cp "$T/src4" "$E/u/old"
[ $(($(mount_counter "$E" creates_behind) - made0)) -eq "$others" ] || fail "old was created behind while its unlink was on its way"
t sync "$E/u"
t cmp "$T/src4" "$B/u/old" || fail "mount B reads another old than mount E wrote after its unlink"
for n in new1 new2 new3; do
    t cmp "$T/src3" "$B/u/$n" || fail "mount B reads another $n than mount E wrote"
done
out=$(S fsck) || fail "fsck failed: $out"
grep -q "0 dangling entries, 0 orphan inodes, 0 wrong link counts" <<<"$out" || fail "fsck: $out"
echo "PASS"
