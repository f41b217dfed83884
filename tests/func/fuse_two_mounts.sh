#!/usr/bin/env bash
# Two mounts of one cluster: data written and closed on one is what an open
# on the other reads (close-to-open), after a rewrite of the same size and
# after a truncate too; a rename on one is seen on the other once the entry
# timeout has passed; a listing the kernel keeps is dropped when either
# mount changes the directory.
. "$(dirname "$0")/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: FUSE not usable here: $FUSE_WHY"
    exit 77
fi

# Every command that touches a mount is bounded: a hung mount fails the test.
t() { timeout -k 5 60 "$@"; }
# A failed check is reported and counted; the test goes on (each step sets
# the file's content afresh on mount 1), so one run shows every failure.
failures=0
bad() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
# same_bytes WANT GOT WHAT: GOT (on a mount) holds exactly the bytes of WANT.
same_bytes() { t cmp "$1" "$2" || bad "$2 differs from what was written ($3)"; }
# size_is FILE SIZE WHAT: stat shows SIZE, at once or within the attribute
# timeout (a stat may lag that long, as documented); later is a failure.
size_is() {
    local got
    got=$(t stat -c %s "$1") || { bad "stat $1 failed ($3)"; return; }
    [ "$got" != "$2" ] || return 0
    sleep 1.2
    got=$(t stat -c %s "$1") || { bad "stat $1 failed ($3)"; return; }
    if [ "$got" = "$2" ]; then
        echo "note: stat $1 showed the new size only after the attribute timeout ($3)"
    else
        bad "stat $1 gives size $got, want $2, also after the 1 s attribute timeout ($3)"
    fi
}

cluster_up --no-mount
# Both with stria-fuse's default cache times (attr_timeout=1, entry_timeout=1
# seconds): those are the documented times within which a stat or a name on
# one mount may lag behind the other. Data must not lag: close-to-open holds
# whatever the timeouts are, so the checks below do not wait.
mount_stria "$T/m1"
mount_stria "$T/m2"
M1=$(realpath "$T/m1")
M2=$(realpath "$T/m2")

step "write and close on mount 1, open and read on mount 2"
head -c 3000000 /dev/urandom >"$T/a"
t cp "$T/a" "$M1/f"
same_bytes "$T/a" "$M2/f" "new file"
size_is "$M2/f" 3000000 "new file"

step "rewritten in place with other bytes of the same size"
head -c 3000000 /dev/urandom >"$T/b"
t dd if="$T/b" of="$M1/f" bs=1M conv=notrunc status=none
same_bytes "$T/b" "$M2/f" "same size, rewritten in place (no truncate)"
size_is "$M2/f" 3000000 "same size, rewritten in place"

step "rewritten by cp (truncate, write) with other bytes of the same size"
head -c 3000000 /dev/urandom >"$T/c"
t cp "$T/c" "$M1/f"
same_bytes "$T/c" "$M2/f" "same size, rewritten by cp"
size_is "$M2/f" 3000000 "same size, rewritten by cp"

step "a few bytes changed in the middle"
printf 'XXXXXXXX' | t dd of="$M1/f" bs=1 seek=1500000 conv=notrunc status=none
printf 'XXXXXXXX' | dd of="$T/c" bs=1 seek=1500000 conv=notrunc status=none
same_bytes "$T/c" "$M2/f" "8 bytes rewritten at 1500000"

step "truncated on mount 1"
t truncate -s 1000000 "$M1/f"
head -c 1000000 "$T/c" >"$T/c1"
same_bytes "$T/c1" "$M2/f" "truncated to 1000000"
size_is "$M2/f" 1000000 "truncated to 1000000"
t truncate -s 2000000 "$M1/f"
cp "$T/c1" "$T/c2" && truncate -s 2000000 "$T/c2"
same_bytes "$T/c2" "$M2/f" "extended by truncate to 2000000 (zeros after 1000000)"
size_is "$M2/f" 2000000 "extended by truncate to 2000000"

step "grown on mount 1 (cp of a larger file)"
head -c 4000000 /dev/urandom >"$T/c4"
t cp "$T/c4" "$M1/f"
same_bytes "$T/c4" "$M2/f" "grown to 4000000 by cp"
size_is "$M2/f" 4000000 "grown to 4000000 by cp"

step "and the other way: write on mount 2, read on mount 1"
head -c 777777 /dev/urandom >"$T/d"
t cp "$T/d" "$M2/g"
same_bytes "$T/d" "$M1/g" "written on mount 2"
size_is "$M1/g" 777777 "written on mount 2"

step "a rename on mount 1 is seen on mount 2 after the entry timeout"
# For this part only, mount 2 again with 0.1 s timeouts so the test need not
# wait out the 1 s defaults.
t fusermount3 -u "$M2" || fail "fusermount3 -u $M2 (not busy) failed"
mount_stria "$T/m2" entry_timeout=0.1,attr_timeout=0.1
t mkdir "$M1/dir1" "$M1/dir2"
t cp "$T/a" "$M1/dir1/h"
t cp "$T/b" "$M1/e"
# Mount 2 looks the names up first, so it has them cached.
t stat "$M2/f" "$M2/dir1/h" "$M2/e" >/dev/null || bad "mount 2 does not see the new files"
if t stat "$M2/renamed" >/dev/null 2>&1; then bad "mount 2 sees 'renamed' before it exists"; fi
t mv "$M1/f" "$M1/renamed"
t mv "$M1/dir1/h" "$M1/dir2/h"
t mv "$M1/g" "$M1/e" # over an existing name mount 2 has cached
sleep 0.3
seen_after() { # NAME: seen now, or only later, or never
    if t stat "$1" >/dev/null 2>&1; then return 0; fi
    if wait_for 5 t stat "$1"; then
        bad "$1 appeared on mount 2 only after more than 0.3 s (entry_timeout=0.1)"
    else
        bad "$1 never appeared on mount 2 (waited 5 s)"
    fi
}
gone_after() {
    if ! t stat "$1" >/dev/null 2>&1; then return 0; fi
    if wait_for 5 sh -c "! stat '$1'"; then
        bad "$1 vanished from mount 2 only after more than 0.3 s (entry_timeout=0.1)"
    else
        bad "$1 still there on mount 2 after 5 s"
    fi
}
seen_after "$M2/renamed"
gone_after "$M2/f"
same_bytes "$T/c4" "$M2/renamed" "renamed on mount 1"
seen_after "$M2/dir2/h"
gone_after "$M2/dir1/h"
same_bytes "$T/a" "$M2/dir2/h" "moved across directories on mount 1"
gone_after "$M2/g"
same_bytes "$T/d" "$M2/e" "renamed over a name mount 2 had looked up"
size_is "$M2/e" 777777 "renamed over a name mount 2 had looked up"
t ls "$M2" >"$T/ls2" || bad "ls $M2 failed"
grep -qx renamed "$T/ls2" || bad "ls on mount 2 does not list 'renamed': $(tr '\n' ' ' <"$T/ls2")"
if grep -qx f "$T/ls2"; then bad "ls on mount 2 still lists 'f': $(tr '\n' ' ' <"$T/ls2")"; fi

step "with the kernel's caches off, each mount's lease cache is coherent at once"
# entry_timeout=0,attr_timeout=0: every stat reaches stria-fuse, which
# answers from the names and attributes the MDT leased to it. A change on
# the other mount revokes those leases before it returns, so no check here
# waits at all.
for m in "$M1" "$M2"; do t fusermount3 -u "$m" || fail "fusermount3 -u $m failed"; done
mount_stria "$T/m1" entry_timeout=0,attr_timeout=0
mount_stria "$T/m2" entry_timeout=0,attr_timeout=0
t mkdir "$M1/lease"
# Mount 1 made lease/ and knows all its names, so it answers that a name is
# absent without asking; a name made on mount 2 must still show at once.
if t stat "$M1/lease/n" >/dev/null 2>&1; then bad "lease/n exists before anyone made it"; fi
t touch "$M2/lease/n"
t stat "$M1/lease/n" >/dev/null 2>&1 || bad "lease/n made on mount 2, absent on mount 1"
t rm "$M1/lease/n"
# And one that mount 1 renames into a directory it made, over an exchange.
t mkdir "$M1/lease/sub"
t touch "$M1/lease/y"
t mv "$M1/lease/y" "$M1/lease/sub/z"
t stat "$M1/lease/sub/z" >/dev/null 2>&1 || bad "lease/sub/z (renamed there on mount 1) absent on mount 1"
t rm "$M1/lease/sub/z"
t rmdir "$M1/lease/sub"
t touch "$M1/lease/x"
mode_is() { # FILE MODE WHAT
    local got
    got=$(t stat -c %a "$1") || { bad "stat $1 failed ($3)"; return; }
    [ "$got" = "$2" ] || bad "$1 has mode $got, want $2 ($3)"
}
for round in 1 2 3; do
    t stat "$M2/lease/x" >/dev/null || bad "mount 2 does not see lease/x (round $round)"
    t chmod 60$round "$M1/lease/x"
    mode_is "$M2/lease/x" 60$round "chmod on mount 1, round $round"
    t chmod 64$round "$M2/lease/x"
    mode_is "$M1/lease/x" 64$round "chmod on mount 2, round $round"
done
# `ls -l` asks for security.selinux of every file; a mount answers that a
# file has none from its lease, so an xattr set on the other mount must
# revoke that at once, both ways, as removing it must.
xattr_is() { # FILE VALUE WHAT (VALUE "-": none)
    local got
    got=$(t getfattr --only-values -n security.selinux "$1" 2>/dev/null) || got=-
    [ "$got" = "$2" ] || bad "$1: security.selinux is '$got', want '$2' ($3)"
}
xattr_is "$M2/lease/x" - "before anyone set it"
xattr_is "$M2/lease/x" - "asked again: from mount 2's lease"
t setfattr -n security.selinux -v one "$M1/lease/x" || bad "setfattr on mount 1 failed"
xattr_is "$M2/lease/x" one "set on mount 1"
t setfattr -x security.selinux "$M2/lease/x" || bad "setfattr -x on mount 2 failed"
xattr_is "$M1/lease/x" - "removed on mount 2"
xattr_is "$M1/lease/x" - "asked again: from mount 1's lease"
t setfattr -n security.selinux -v two "$M1/lease/x" || bad "setfattr on mount 1 failed"
xattr_is "$M1/lease/x" two "set again on mount 1, read there"
xattr_is "$M2/lease/x" two "set again on mount 1, read on mount 2"
t stat "$M2/lease/x" >/dev/null
t rm "$M1/lease/x"
if t stat "$M2/lease/x" >/dev/null 2>&1; then bad "lease/x removed on mount 1, still there on mount 2"; fi
t touch "$M1/lease/x"
t stat "$M2/lease/x" >/dev/null 2>&1 || bad "lease/x made again on mount 1, not there on mount 2"
t mv "$M1/lease/x" "$M1/lease/y"
if t stat "$M2/lease/x" >/dev/null 2>&1; then bad "lease/x renamed on mount 1, still there on mount 2"; fi
t stat "$M2/lease/y" >/dev/null 2>&1 || bad "lease/y (renamed on mount 1) not there on mount 2"
t chmod 700 "$M2/lease"
mode_is "$M1/lease" 700 "chmod of a directory on mount 2"
t rm "$M2/lease/y"
t rmdir "$M2/lease"
if t stat "$M1/lease" >/dev/null 2>&1; then bad "lease/ removed on mount 2, still there on mount 1"; fi

step "a directory another mount made is listed once; then new names there need no LOOKUP"
# Mount 1 did not make fill/, so it cannot know a name is absent there
# from its own creates: its first lookup of a name there lists the
# directory (one READDIR), and the names it makes after need no LOOKUP
# while its lease holds, as in own/, which it made. (With entry_timeout=0
# the kernel also looks up the directory's own name at each create: those
# LOOKUPs are the same in both.) Every answer must stay right.
mdt_sent() { "$STRIA" stats | awk -v k="$1" '$1 == k && $2 ~ /^[0-9]+$/ { s += $2 } END { print s + 0 }'; }
t mkdir "$M2/fill" "$M1/own"
for i in 1 2 3 4 5 6; do echo "$i" >"$M2/fill/old$i"; done
r0=$(mdt_sent READDIR)
t stat "$M1/fill/old1" >/dev/null || bad "fill/old1 made on mount 2, absent on mount 1"
creates_lookups() { # DIR: LOOKUPs 40 creates in DIR sent
    local l0
    l0=$(mdt_sent LOOKUP)
    for i in $(seq 1 40); do : >"$1/new$i" || bad "create $1/new$i"; done
    echo $(($(mdt_sent LOOKUP) - l0))
}
in_fill=$(creates_lookups "$M1/fill")
r1=$(mdt_sent READDIR)
in_own=$(creates_lookups "$M1/own")
echo "   40 creates: $in_fill LOOKUPs in fill/ (mount 2's), $in_own in own/; $((r1 - r0)) READDIRs"
[ "$in_fill" -le $((in_own + 3)) ] ||
    bad "40 creates in fill/ sent $in_fill LOOKUPs, in own/ $in_own: fill/ was not completed"
[ $((r1 - r0)) -ge 1 ] || bad "mount 1 never listed fill/"
t rm -r "$M1/own"
[ "$(t cat "$M1/fill/old3")" = 3 ] || bad "fill/old3, known from the listing, reads wrong on mount 1"
if t stat "$M1/fill/none" >/dev/null 2>&1; then bad "fill/none exists on mount 1"; fi
echo late >"$M2/fill/late"
[ "$(t cat "$M1/fill/late" 2>/dev/null)" = late ] || bad "fill/late made on mount 2, not on mount 1"
t rm "$M2/fill/old2"
t sync "$M2/fill"
if t stat "$M1/fill/old2" >/dev/null 2>&1; then bad "fill/old2 removed on mount 2, still on mount 1"; fi
t rm "$M1/fill/old4"
if t stat "$M1/fill/old4" >/dev/null 2>&1; then bad "fill/old4 removed on mount 1, still there"; fi
[ "$(ls "$M1/fill" | sort | tr '\n' ' ')" = "$(ls "$M2/fill" | sort | tr '\n' ' ')" ] ||
    bad "the mounts list fill/ differently"
t rm -r "$M1/fill"

step "unlinks mount 1 sends behind are seen by mount 2 at once"
# A burst of unlinks on mount 1: the first asks the MDT for the write-behind
# grant, the rest are acknowledged before they are sent. Any request of
# mount 2 revokes the grant first and waits until mount 1 has sent them.
# Mount 1 holds each batch back for a second (STRIA_TEST_WB_DELAY_MS), so
# mount 2's look comes while the unlinks are still queued.
t fusermount3 -u "$M1" || fail "fusermount3 -u $M1 failed"
STRIA_TEST_WB_DELAY_MS=1000 mount_stria "$T/m1" entry_timeout=0,attr_timeout=0
t mkdir "$M1/wb"
(cd "$M1/wb" && t touch $(seq -f 'f%g' 1 200)) || bad "touch of 200 files in wb/ failed"
[ "$(t ls "$M2/wb" | wc -l)" = 200 ] || bad "mount 2 does not list the 200 files of wb/"
# Mount 2's requests just took the grant from mount 1, which does not ask
# for it again for a second (wb.c, WB_BACKOFF).
sleep 1.1
(cd "$M1/wb" && t rm $(seq -f 'f%g' 1 200)) || bad "rm of 200 files in wb/ failed"
left=$(t ls "$M2/wb" | wc -l)
[ "$left" = 0 ] || bad "mount 2 still lists $left of the 200 files mount 1 removed"
stats=$(t getfattr --only-values -n stria.mount.stats "$M1") || bad "no stria.mount.stats on mount 1"
behind=$(sed -n 's/.*unlinks_behind=\([0-9]*\).*/\1/p' <<<"$stats")
failed=$(sed -n 's/.*unlinks_failed=\([0-9]*\).*/\1/p' <<<"$stats")
[ "${behind:-0}" -gt 0 ] || bad "mount 1 sent no unlink behind ($stats)"
[ "${failed:-1}" = 0 ] || bad "the MDT refused unlinks mount 1 had acknowledged ($stats)"
# Mount 1's own later operations come after its queued unlinks.
(cd "$M1/wb" && t touch $(seq -f 'g%g' 1 50) && t rm $(seq -f 'g%g' 1 50) && t touch g7) ||
    bad "touch, rm and touch again of 50 files in wb/ failed on mount 1"
[ "$(t ls "$M1/wb")" = g7 ] || bad "mount 1 lists $(t ls "$M1/wb" | tr '\n' ' ')in wb/, want g7 only"
[ "$(t ls "$M2/wb")" = g7 ] || bad "mount 2 lists $(t ls "$M2/wb" | tr '\n' ' ')in wb/, want g7 only"
t rm "$M2/wb/g7"
t rmdir "$M1/wb" || bad "rmdir wb/ on mount 1 failed after mount 2 emptied it"

step "the kernel keeps a listing until a change anywhere makes it old"
# READDIRs all MDTs served so far.
readdirs() { "$STRIA" stats | awk '$1 == "READDIR" && $2 ~ /^[0-9]+$/ { s += $2 } END { print s + 0 }'; }
# Mount 4 trusts names and attributes for a minute: what it lists after
# another mount's change can come only from the lease's revocation, which
# says the directory's names changed before the change is acknowledged
# (sf_revoked), so that the next opendir drops the kernel's listing.
mount_stria "$T/m4" attr_timeout=60,entry_timeout=60
M4=$(realpath "$T/m4")
t mkdir "$M1/kept"
(cd "$M1/kept" && t touch $(seq -f 'k%g' 1 20)) || bad "touch of 20 files in kept/ failed"
[ "$(t ls "$M4/kept" | wc -l)" = 20 ] || bad "mount 4 does not list the 20 files of kept/"
r0=$(readdirs)
[ "$(t ls "$M4/kept" | wc -l)" = 20 ] || bad "mount 4 does not list the 20 files of kept/ again"
r1=$(readdirs)
echo "   listed again: $((r1 - r0)) READDIRs"
[ "$r1" = "$r0" ] || bad "listing kept/ again sent $((r1 - r0)) READDIRs, want none (cache_dirs)"
t stat "$M4/kept" >/dev/null || bad "stat kept/ on mount 4 failed"
t touch "$M2/kept/new" || bad "touch kept/new on mount 2 failed"
# A create elsewhere changes only the directory's names: mount 4's kernel
# keeps its attributes (dropping them would let it throw away a GETATTR
# reply on its way: architecture.md, "A dropped reply"), so a stat there
# sends nothing, while the listing is still fresh.
g0=$(mdt_sent GETATTR)
t stat "$M4/kept" >/dev/null || bad "stat kept/ on mount 4 failed"
g1=$(mdt_sent GETATTR)
[ "$g1" = "$g0" ] ||
    bad "a stat of kept/ on mount 4 after a create on mount 2 sent $((g1 - g0)) GETATTRs, want none"
t ls "$M4/kept" | grep -qx new || bad "mount 4 does not list kept/new, created on mount 2"
# With a handle on the directory open on mount 4, a READDIR read before a
# change could land in the kernel's copy after it: then the attributes
# go too, so the kernel compares the mtime at the next listing.
exec 8<"$M4/kept"
t stat "$M4/kept" >/dev/null # the listing just read left the atime stale
t touch "$M2/kept/while-open" || bad "touch kept/while-open on mount 2 failed"
g0=$(mdt_sent GETATTR)
t stat "$M4/kept" >/dev/null || bad "stat kept/ on mount 4 failed"
g1=$(mdt_sent GETATTR)
exec 8<&-
echo "   a stat on mount 4 with a handle open there, after a create on mount 2: $((g1 - g0)) GETATTRs"
[ "$g1" -gt "$g0" ] ||
    bad "a create on mount 2 while a handle on kept/ was open on mount 4 left its attributes there"
t ls "$M4/kept" | grep -qx while-open || bad "mount 4 does not list kept/while-open"
t mv "$M2/kept/k1" "$M2/kept/moved" || bad "mv on mount 2 failed"
t rm "$M2/kept/k2" || bad "rm on mount 2 failed"
t sync "$M2/kept" # fsync of the directory: the unlinks mount 2 wrote behind have reached the MDT
t ls "$M4/kept" >"$T/kept4"
grep -qx moved "$T/kept4" && ! grep -qx k1 "$T/kept4" && ! grep -qx k2 "$T/kept4" ||
    bad "mount 4 lists $(tr '\n' ' ' <"$T/kept4")after mount 2 renamed k1 and removed k2"
# This mount's own changes drop the kernel's copy at once.
t rm "$M4/kept/k3" && t touch "$M4/kept/mine" || bad "rm and touch on mount 4 failed"
t ls "$M4/kept" >"$T/kept4"
grep -qx mine "$T/kept4" && ! grep -qx k3 "$T/kept4" ||
    bad "mount 4 lists $(tr '\n' ' ' <"$T/kept4")after its own rm of k3 and touch of mine"
t fusermount3 -u "$M4" || bad "fusermount3 -u $M4 failed"
# With cache_dirs=0 every listing asks the MDT.
mount_stria "$T/m3" cache_dirs=0
M3=$(realpath "$T/m3")
t ls "$M3/kept" >/dev/null
r0=$(readdirs)
t ls "$M3/kept" >/dev/null
r1=$(readdirs)
[ "$r1" -gt "$r0" ] || bad "with cache_dirs=0, listing kept/ again sent no READDIR"
t fusermount3 -u "$M3" || bad "fusermount3 -u $M3 failed"

step "a file removed while open keeps its objects out of fsck's orphans until its last close"
head -c 300000 /dev/urandom >"$M1/held"
exec 7<"$M1/held"
t rm "$M1/held"
"$STRIA" fsck >"$T/fsck" || bad "fsck calls the open, removed file's objects orphans: $(cat "$T/fsck")"
objects=$(sed -n 's/^OSTs: \([0-9]*\) objects.*/\1/p' "$T/fsck")
[ "${objects:-0}" -ge 1 ] || bad "fsck counted no objects while the removed file is open: $(cat "$T/fsck")"
exec 7<&-
gone() { [ "$("$STRIA" fsck | sed -n 's/^OSTs: \([0-9]*\) objects.*/\1/p')" -lt "$objects" ]; }
wait_for 10 gone || bad "the removed file's objects stay after its last close: $("$STRIA" fsck)"
"$STRIA" fsck >"$T/fsck" || bad "fsck after the last close: $(cat "$T/fsck")"

[ $failures -eq 0 ] || fail "$failures check(s) failed"
echo PASS
