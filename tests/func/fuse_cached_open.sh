#!/usr/bin/env bash
# Opening a file for reading through the mount costs no MDT round trip when
# a lookup under a valid lease brought its layout (docs/architecture.md,
# "Metadata leases"): a dataset's files are looked up, then opened. The
# files are written by another client (the CLI, through libstria), as a
# dataset is; after that client rewrites one, the mount reads the new bytes.
# Once the leases have run out, a lookup through the mount of a
# Data-on-MDT file brings its bytes when the mount has lately opened what
# it looked up, and the open and read that follow send nothing; a stat of
# many files soon stops bringing any; bytes a lookup brought are never read
# after the file changed, here or elsewhere.
# The mount raises its read-ahead (-o read_ahead_kb), and a large file reads
# back whole through the larger READs that brings. Write-only opens bypass
# the page cache (-o direct_writes), and readers still see what they wrote.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: $FUSE_WHY"
    exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: this test needs root (a mount's read-ahead, dropping the page cache)"
    exit 77
fi
t() { timeout -k 5 60 "$@"; }
S() { "$STRIA" --conf "$CONF" "$@"; }
opens() { S stats | awk '$1 == "OPEN" { print $2; exit }'; }
# The MDT's count of requests of kind $1 (0: none yet).
served() { S stats | awk -v op="$1" '$1 == op { n = $2 } END { print n + 0 }'; }
stat_of() { t getfattr --only-values -n stria.mount.stats "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

step "a cluster whose leases last 2 s; 40 files written by the CLI"
cluster_up --osts 2 --no-mount
# The mount trusts a lease for 7/8 of it.
metad_set lease_ms 2000
S mkdir /ds
for i in $(seq 1 40); do
    head -c 65536 /dev/urandom >"$T/f$i"
    S cp "$T/f$i" "stria:/ds/f$i" || fail "stria cp f$i"
done
mount_stria "$T/m"

step "read through the mount: a lookup, then an open without a round trip"
before=$(opens)
for i in $(seq 1 40); do
    t cmp "$T/f$i" "$T/m/ds/f$i" || fail "f$i reads back otherwise through the mount"
done
after=$(opens)
echo "   MDT OPENs for 40 reads through the mount: $((after - before))"
[ $((after - before)) -le 2 ] || fail "$((after - before)) opens reached the MDT; want none"

step "rewritten by the CLI: the mount reads the new bytes"
head -c 100000 /dev/urandom >"$T/new"
S cp "$T/new" stria:/ds/f7 || fail "stria cp over f7"
t cmp "$T/new" "$T/m/ds/f7" || fail "the mount read f7's old bytes after a rewrite elsewhere"

step "Data-on-MDT files read after the leases ran out: one MDT request a file"
S mkdir /dom
S setstripe -E 64K -L mdt -E -1 -c 1 /dom
for i in $(seq 1 30); do
    head -c $((30000 + i * 997)) /dev/urandom >"$T/d$i"
    S cp "$T/d$i" "stria:/dom/d$i" || fail "stria cp d$i"
done
sleep 2
echo 3 >/proc/sys/vm/drop_caches
l0=$(served LOOKUP) o0=$(served OPEN) r0=$(served DOM_READ) u0=$(stat_of "$T/m" lookup_bytes_used)
for i in $(seq 1 30); do
    t cmp "$T/d$i" "$T/m/dom/d$i" || fail "d$i reads back otherwise through the mount"
done
l1=$(served LOOKUP) o1=$(served OPEN) r1=$(served DOM_READ) u1=$(stat_of "$T/m" lookup_bytes_used)
echo "   30 reads: $((l1 - l0)) LOOKUPs, $((o1 - o0)) OPENs, $((r1 - r0)) DOM_READs;" \
    "$((u1 - u0)) read the bytes their lookup brought"
[ $((l1 - l0)) -ge 30 ] || fail "$((l1 - l0)) LOOKUPs for 30 files: were the leases still valid?"
[ $((o1 - o0 + r1 - r0)) -le 2 ] || fail "$((o1 - o0)) OPENs and $((r1 - r0)) DOM_READs; want 2 at most"
[ $((u1 - u0)) -ge 28 ] || fail "only $((u1 - u0)) of 30 opens read the bytes their lookup brought"

step "a stat of many files soon stops bringing their bytes"
sleep 2
echo 3 >/proc/sys/vm/drop_caches
b0=$(stat_of "$T/m" lookup_bytes) l0=$(served LOOKUP)
for i in $(seq 1 30); do
    t stat -c %s "$T/m/dom/d$i" >/dev/null
done
b1=$(stat_of "$T/m" lookup_bytes) l1=$(served LOOKUP)
echo "   30 stats: $((l1 - l0)) LOOKUPs, $((b1 - b0)) of which brought bytes"
[ $((l1 - l0)) -ge 30 ] || fail "$((l1 - l0)) LOOKUPs for 30 stats: were the leases still valid?"
# The 8 kept, then the 8 pushed out unused, bring the score to nothing.
[ $((b1 - b0)) -le 16 ] || fail "$((b1 - b0)) of 30 stats' lookups brought bytes; want 16 at most"

step "bytes a lookup brought are not read once the file changed"
sleep 2
echo 3 >/proc/sys/vm/drop_caches
for i in 1 2 3 4; do
    t cmp "$T/d$i" "$T/m/dom/d$i" || fail "d$i reads back otherwise through the mount"
done
b0=$(stat_of "$T/m" lookup_bytes)
t stat "$T/m/dom/d6" "$T/m/dom/d7" >/dev/null
[ "$(stat_of "$T/m" lookup_bytes)" -gt "$b0" ] || fail "no lookup brought bytes: the step tests nothing"
# Elsewhere (the CLI): the same size, other bytes.
head -c "$(stat -c %s "$T/d6")" /dev/urandom >"$T/d6"
S cp "$T/d6" stria:/dom/d6 || fail "stria cp over d6"
t cmp "$T/d6" "$T/m/dom/d6" || fail "the mount read the bytes d6's lookup brought before a rewrite elsewhere"
# That open asked the MDT (the rewrite took the lease back); so does the
# next one, the old bytes still kept.
echo 3 >/proc/sys/vm/drop_caches
t cmp "$T/d6" "$T/m/dom/d6" || fail "a second open read the bytes d6's lookup brought before a rewrite elsewhere"
# Here: the first bytes overwritten through the mount, its pages then dropped.
printf 'written here' | t dd of="$T/m/dom/d7" conv=notrunc status=none
printf 'written here' | dd of="$T/d7" conv=notrunc status=none
sync "$T/m/dom/d7"
echo 3 >/proc/sys/vm/drop_caches
t cmp "$T/d7" "$T/m/dom/d7" || fail "the mount read the bytes d7's lookup brought before its own write"

# The read-ahead of a mount is its backing device's; mountpoint -d names it.
ra_of() { cat "/sys/class/bdi/$(mountpoint -d "$1")/read_ahead_kb"; }
step "read-ahead: 1024 KiB by default, as asked, or the kernel's with 0"
[ "$(ra_of "$T/m")" = 1024 ] || fail "the mount's read-ahead is $(ra_of "$T/m") KiB, not 1024"
mount_stria "$T/m4" read_ahead_kb=4096
[ "$(ra_of "$T/m4")" = 4096 ] || fail "read_ahead_kb=4096 gave $(ra_of "$T/m4") KiB"
mount_stria "$T/m0" read_ahead_kb=0
[ "$(ra_of "$T/m0")" = 128 ] || fail "read_ahead_kb=0 gave $(ra_of "$T/m0") KiB, not the kernel's 128"
for bad in -1 65537 x; do
    mkdir -p "$T/mbad"
    rc=0
    t "$BUILD/stria-fuse" -o "conf=$CONF,read_ahead_kb=$bad" "$T/mbad" >"$T/bad.out" 2>&1 || rc=$?
    [ "$rc" = 2 ] || fail "read_ahead_kb=$bad: exit $rc, want 2: $(cat "$T/bad.out")"
    ! grep -q " $T/mbad fuse" /proc/self/mounts || fail "read_ahead_kb=$bad mounted anyway"
done

step "a 24 MiB file reads back whole, in larger READs with more read-ahead"
# stria.mount.stats counts the READs a mount served and their bytes.
avg_read() { # MNT: read big through MNT, cache dropped; print its average READ in bytes
    local r0 b0 r1 b1
    r0=$(stat_of "$1" reads) b0=$(stat_of "$1" read_bytes)
    echo 3 >/proc/sys/vm/drop_caches
    t cmp "$T/big" "$1/big" >&2 || fail "a large file reads back otherwise through $1"
    r1=$(stat_of "$1" reads) b1=$(stat_of "$1" read_bytes)
    [ "$r1" -gt "$r0" ] || fail "no READ reached $1 (reads $r0 -> $r1)"
    echo $(((b1 - b0) / (r1 - r0)))
}
head -c $((24 << 20)) /dev/urandom >"$T/big"
t cp "$T/big" "$T/m/big"
sync
a0=$(avg_read "$T/m0") a1=$(avg_read "$T/m") a4=$(avg_read "$T/m4")
echo "   average READ: $a0 bytes at the kernel's read-ahead, $a1 at 1024 KiB, $a4 at 4096 KiB"
[ "$a0" -le $((128 << 10)) ] || fail "READs of $a0 bytes on average with the kernel's 128 KiB"
[ "$a1" -gt $((256 << 10)) ] || fail "READs of $a1 bytes on average with 1 MiB of read-ahead"
[ "$a4" -gt $((256 << 10)) ] || fail "READs of $a4 bytes on average with 4 MiB of read-ahead"
step "write-only opens write around the page cache; a reader then sees their bytes"
# The kernel tells the mount a WRITE's open flags; direct_writes in
# stria.mount.stats counts those of write-only handles, which the mount
# opened with direct I/O (kernels since 6.6 keep no page of them anyway).
mount_stria "$T/mp" direct_writes=0
head -c $((4 << 20)) /dev/urandom >"$T/w1"
head -c $((4 << 20)) /dev/urandom >"$T/w2"
d0=$(stat_of "$T/m" direct_writes)
t dd if="$T/w1" of="$T/m/w" bs=1M status=none
d1=$(stat_of "$T/m" direct_writes)
[ $((d1 - d0)) -ge 4 ] || fail "4 MiB written write-only: $((d1 - d0)) direct WRITEs, want 4 or more"
exec 4<>"$T/m/rw"
cat "$T/w1" >&4
exec 4>&-
[ "$(stat_of "$T/m" direct_writes)" = "$d1" ] || fail "a read-write handle wrote around the page cache"
t dd if="$T/w1" of="$T/mp/wp" bs=1M status=none
[ "$(stat_of "$T/mp" direct_writes)" = 0 ] || fail "direct_writes=0 still wrote around the page cache"
# A reader holding the file's pages in the cache, then a write-only
# handle writing 1 MiB at 1 MiB: the reader, and a new one, see it.
t cmp "$T/w1" "$T/m/w" || fail "a file written write-only reads back otherwise"
exec 3<"$T/m/w" # opened while the pages are cached: kept
t dd if="$T/w2" of="$T/m/w" bs=64K seek=16 skip=16 count=16 conv=notrunc status=none
head -c $((1 << 20)) "$T/w1" >"$T/w3"
head -c $((2 << 20)) "$T/w2" | tail -c $((1 << 20)) >>"$T/w3"
tail -c $((2 << 20)) "$T/w1" >>"$T/w3"
t cmp "$T/w3" "$T/m/w" || fail "a new reader saw the page cache's old bytes after a write-only handle wrote"
t cmp "$T/w3" - <&3 || fail "an open reader saw old bytes after a write-only handle wrote"
exec 3<&-
echo "PASS: fuse_cached_open"
