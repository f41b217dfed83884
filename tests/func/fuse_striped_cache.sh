#!/usr/bin/env bash
# A directory striped over four MDTs keeps the mount's metadata cache as a
# plain one does (issue 25): through a mount whose kernel caches nothing
# (entry_timeout=0, attr_timeout=0, so every lookup and stat reaches
# stria-fuse), creating, stat-ing twice and removing files there sends one
# OPEN per file, one unlink per file (written behind, several to a request)
# and almost no LOOKUP or GETATTR, over all four MDTs, as `stria stats`
# counts them. Then
# the same mount stays right while a second mount creates, grows, renames
# and removes names there: every shard's MDT revokes what the first cached.
# And the directory's mtime and ctime move with a change in any shard, and
# stay where chmod and touch -d leave them, as ext4's do. And a restart of
# the MDTs, which drops everything the mount cached, leaves it answering
# lookups in its root again.
. "$(dirname "$0")/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: FUSE not usable here: $FUSE_WHY"
    exit 77
fi
t() { timeout -k 5 60 "$@"; }
N=1000
BOUND=20 # LOOKUPs and GETATTRs a phase may send (the directory, a few races)

cluster_up --mdts 4 --osts 2 --no-mount
# Leases of 30 s, not 10: the remove below counts on the leases the
# creates took, and on a loaded machine (make asan beside other tests) the
# steps between took more than 10 s, so the first files' leases ran out
# and half the unlinks went to the MDTs the ordinary way.
LEASE_S=30
metad_set lease_ms $((LEASE_S * 1000))
"$STRIA" mkdir -c 4 /s
"$STRIA" setdirstripe -D -c 4 /s
mount_stria "$T/a" entry_timeout=0,attr_timeout=0
mount_stria "$T/b" entry_timeout=0,attr_timeout=0
A=$(realpath "$T/a")
B=$(realpath "$T/b")

# Requests of each kind since the MDTs started: "MDT KIND COUNT" lines.
counts() { "$STRIA" stats | awk '/^MDT[0-9]+/ { m = $1 } $1 ~ /^[A-Z_]+$/ && $2 ~ /^[0-9]+$/ { print m, $1, $2 }'; }
# KIND [MDT]: how many more were sent between snapshots $1 and $2.
sent() { # BEFORE AFTER KIND [MDT]
    awk -v k="$3" -v m="${4:-}" 'FNR == NR { if ($2 == k && (m == "" || $1 == m)) b += $3; next }
        $2 == k && (m == "" || $1 == m) { a += $3 } END { print a - b }' "$1" "$2"
}
at_most() { # BEFORE AFTER KIND LIMIT PHASE
    local n
    n=$(sent "$1" "$2" "$3")
    echo "   $5: $3=$n"
    [ "$n" -le "$4" ] || fail "$5 sent $n ${3}s, want at most $4"
}
# Requests of KIND all storage servers served since they started.
ost_count() { "$STRIA" stats -s | awk -v k="$1" '/^storage server/ { o = 1 } /^MDT/ { o = 0 } o && $1 == k && $2 ~ /^[0-9]+$/ { s += $2 } END { print s + 0 }'; }
# The objects the OSTs hold, as stria fsck counts them.
ost_objects() { "$STRIA" fsck | sed -n 's/^OSTs: \([0-9]*\) objects.*/\1/p'; }
mount_stat() { t getfattr --absolute-names --only-values -n stria.mount.stats "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

step "a directory made through the mount in /s is striped over the four MDTs"
t mkdir "$A/s/d"
"$STRIA" getdirstripe /s/d | grep -q "lmv_stripe_count: 4" || fail "/s/d is not striped over 4"

step "create $N files: one OPEN each, no LOOKUP of the names not yet there"
objects0=$(ost_objects)
counts >"$T/c0"
for ((i = 0; i < N; i++)); do : >"$A/s/d/f$i" || fail "create f$i"; done
counts >"$T/c1"
[ "$(sent "$T/c0" "$T/c1" OPEN)" -eq "$N" ] || fail "create sent $(sent "$T/c0" "$T/c1" OPEN) OPENs, want $N"
for m in MDT0000 MDT0001 MDT0002 MDT0003; do
    [ "$(sent "$T/c0" "$T/c1" OPEN "$m")" -gt $((N / 8)) ] || fail "few creates reached $m: not striped"
done
at_most "$T/c0" "$T/c1" LOOKUP "$BOUND" create
at_most "$T/c0" "$T/c1" GETATTR "$BOUND" create

step "ls -l asks no MDT for each file's security.selinux: the listing said it has none"
# ls -l asks every entry for security.selinux; READDIR plus says which
# well-known xattrs each entry has not, and the mount answers from that
# for a second. (First: a listing the kernel keeps brings no such word, and
# a later ls -l from it asks about each file whose word went and whose
# lease does not say: a cost the issue's note records.)
counts >"$T/x0"
t ls -l "$A/s/d" >"$T/long" || fail "ls -l of /s/d"
counts >"$T/x1"
[ "$(grep -c ' f[0-9]*$' "$T/long")" -eq "$N" ] || fail "ls -l listed $(grep -c ' f[0-9]*$' "$T/long") files, want $N"
at_most "$T/x0" "$T/x1" GETXATTR "$BOUND" "ls -l"
t setfattr -n security.selinux -v label "$A/s/d/f7" || fail "setfattr on f7"
[ "$(t getfattr --only-values -n security.selinux "$A/s/d/f7")" = label ] ||
    fail "f7's security.selinux, set through this mount after the listing, is not read back"

step "ls -f lists each of the $N files once, asking each shard about once"
# Each shard's batch is kept between the batches of one listing: the four
# shards' 250 names each fit one READDIR apiece, where merging afresh for
# every batch asked all four again for each. (Here the kernel lists from
# the copy ls -l left: none at all.)
counts >"$T/l0"
t ls -f "$A/s/d" | grep '^f' | sort >"$T/names" || fail "ls -f of /s/d"
counts >"$T/l1"
[ "$(wc -l <"$T/names")" -eq "$N" ] || fail "ls -f listed $(wc -l <"$T/names") names, want $N"
[ "$(sort -u "$T/names" | wc -l)" -eq "$N" ] || fail "ls -f listed a name twice"
at_most "$T/l0" "$T/l1" READDIR 6 "ls -f"

step "stat each file twice: answered by the mount"
for ((i = 0; i < N; i++)); do
    [ -f "$A/s/d/f$i" ] && [ -f "$A/s/d/f$i" ] || fail "stat f$i"
done
counts >"$T/c2"
at_most "$T/c1" "$T/c2" LOOKUP "$BOUND" stat
at_most "$T/c1" "$T/c2" GETATTR "$BOUND" stat

step "remove them: written behind, several to an UNLINKS request, their objects removed in batches"
behind0=$(mount_stat "$A" unlinks_behind)
batched0=$(mount_stat "$A" unlinks_batched)
batches0=$(mount_stat "$A" unlink_batches)
destroy0=$(ost_count DESTROY)
(cd "$A/s/d" && t find . -name 'f*' -delete) || fail "remove"
t sync "$A/s/d" # fsync of the directory waits for the queued unlinks (syncfs does not reach a FUSE mount)
counts >"$T/c3"
behind=$(($(mount_stat "$A" unlinks_behind) - behind0))
batched=$(($(mount_stat "$A" unlinks_batched) - batched0))
batches=$(($(mount_stat "$A" unlink_batches) - batches0))
singles=$(sent "$T/c2" "$T/c3" UNLINK)
requests=$(sent "$T/c2" "$T/c3" UNLINKS)
echo "   remove: UNLINK=$singles, UNLINKS=$requests carrying $batched, written behind: $behind"
# Each name goes once: alone, or as an item of an UNLINKS request, which
# the MDTs counted as the mount did. Batches form of what is queued when
# the sender looks, so their size depends on the load; fewer requests than
# names is what they promise.
[ $((singles + batched)) -eq "$N" ] || fail "remove sent $singles UNLINKs and $batched unlinks in UNLINKS requests, want $N in all"
[ "$requests" -eq "$batches" ] || fail "the MDTs served $requests UNLINKS requests, the mount sent $batches"
[ $((singles + requests)) -lt "$N" ] || fail "remove sent $((singles + requests)) requests for $N unlinks: none batched"
[ "$behind" -ge $((N * 9 / 10)) ] || fail "only $behind of $N unlinks were written behind"
at_most "$T/c2" "$T/c3" LOOKUP "$BOUND" remove
at_most "$T/c2" "$T/c3" GETATTR "$BOUND" remove
[ -z "$(ls -A "$B/s/d")" ] || fail "mount b still lists: $(ls -A "$B/s/d" | head -3)"
# Every file created for writing has an object. A batch of unlinks
# behind (as many as were queued when the sender took them, up to 64)
# removes its files' objects with one DESTROY per OST (2 here) and tells
# their MDTs with at least one DESTROYED: so never more DESTROYs than twice
# the DESTROYEDs, where one per file (1,000) was many more. How many
# batches there are depends on the load (55 DESTROYs here when quiet, 302
# beside other tests).
destroys=$(($(ost_count DESTROY) - destroy0))
destroyeds=$(sent "$T/c2" "$T/c3" DESTROYED)
echo "   remove: DESTROY=$destroys, DESTROYED=$destroyeds for $N files"
[ "$destroys" -gt 0 ] && [ "$destroys" -lt "$N" ] && [ "$destroys" -le $((2 * destroyeds)) ] ||
    fail "removing $N files sent $destroys DESTROYs and $destroyeds DESTROYEDs: their objects were not removed in batches"
[ "$(ost_objects)" = "$objects0" ] ||
    fail "the OSTs hold $(ost_objects) objects after the removal, $objects0 before the creates"

step "a monitor's stria stats leaves the mount its grant: the next unlink still goes behind"
# STATS sees no file, so it does not pass the MDT's write-behind gate:
# before, it took the grant back, and the mount did not ask again for a
# second (the next unlink went to the MDT and waited).
t mkdir "$A/p" || fail "mkdir /p"
for i in 0 1; do : >"$A/p/h$i" || fail "create h$i"; done
# Mount b's listing above took mount a's grants, and a asks again only a
# second later (WB_BACKOFF): then rm h0 takes MDT 0's grant.
sleep 1.5
t rm "$A/p/h0" || fail "rm h0"
behind0=$(mount_stat "$A" unlinks_behind)
counts >/dev/null
t rm "$A/p/h1" || fail "rm h1"
[ "$(mount_stat "$A" unlinks_behind)" -eq $((behind0 + 1)) ] ||
    fail "the unlink after a stria stats was not written behind: the monitor took the grant"

step "removed without write-behind: one UNLINK each, their objects removed behind in batches"
# A mount without write-behind unlink waits for each UNLINK's reply, and
# hands the objects to libstria's queue; a df through it waits for them.
mount_stria "$T/c" wb_unlink=0
C=$(realpath "$T/c")
for ((i = 0; i < 200; i++)); do : >"$C/s/d/g$i" || fail "create g$i through mount c"; done
counts >"$T/r0"
destroy0=$(ost_count DESTROY)
(cd "$C/s/d" && t find . -name 'g*' -delete) || fail "remove through mount c"
t df "$C" >/dev/null || fail "df of mount c"
counts >"$T/r1"
destroys=$(($(ost_count DESTROY) - destroy0))
echo "   remove: UNLINK=$(sent "$T/r0" "$T/r1" UNLINK), DESTROYED=$(sent "$T/r0" "$T/r1" DESTROYED), DESTROY=$destroys for 200 files"
[ "$(sent "$T/r0" "$T/r1" UNLINK)" -eq 200 ] || fail "remove sent $(sent "$T/r0" "$T/r1" UNLINK) UNLINKs, want 200"
# The queue takes up to 64 files, or what 200 ms brought: each batch one
# DESTROY per OST and at least one DESTROYED.
destroyeds=$(sent "$T/r0" "$T/r1" DESTROYED)
[ "$destroys" -gt 0 ] && [ "$destroys" -lt 200 ] && [ "$destroyeds" -lt 200 ] &&
    [ "$destroys" -le $((2 * destroyeds)) ] ||
    fail "removing 200 files sent $destroys DESTROYs and $destroyeds DESTROYEDs: not in batches"
[ "$(ost_objects)" = "$objects0" ] ||
    fail "after the removal and a df the OSTs hold $(ost_objects) objects, $objects0 before the creates"

step "another mount's changes are seen at once, on every shard"
names=(n0 n1 n2 n3 n4 n5 n6 n7 n8 n9 n10 n11)
for n in "${names[@]}"; do
    [ ! -e "$A/s/d/$n" ] || fail "$n exists before it was made"
done
for n in "${names[@]}"; do printf 'hello' >"$B/s/d/$n"; done
for n in "${names[@]}"; do
    [ "$(stat -c %s "$A/s/d/$n" 2>/dev/null)" = 5 ] || fail "mount a does not see $n made on b"
done
for n in "${names[@]}"; do printf 'hello, world' >>"$B/s/d/$n"; done
for n in "${names[@]}"; do
    [ "$(stat -c %s "$A/s/d/$n")" = 17 ] || fail "mount a sees $n at $(stat -c %s "$A/s/d/$n") bytes, want 17"
done
for n in "${names[@]}"; do t mv "$B/s/d/$n" "$B/s/d/r$n"; done
for n in "${names[@]}"; do
    [ ! -e "$A/s/d/$n" ] || fail "mount a still sees $n renamed on b"
    [ -f "$A/s/d/r$n" ] || fail "mount a does not see r$n renamed on b"
done
for n in "${names[@]}"; do rm "$B/s/d/r$n"; done
for n in "${names[@]}"; do
    [ ! -e "$A/s/d/r$n" ] || fail "mount a still sees r$n removed on b"
done
for n in "${names[@]}"; do : >"$A/s/d/$n"; done # a's creates, after b's
for n in "${names[@]}"; do
    [ -f "$B/s/d/$n" ] || fail "mount b does not see $n made on a"
done

step "the kernel keeps the striped directory's listing until a name changes on any shard"
# Mount k trusts names and attributes for a minute, so what it lists after
# another mount's change comes only from stria-fuse's answer at opendir:
# keep the kernel's copy while every shard's lease is the one it was when
# the copy was read (stria_dir_version), and drop it when a shard revoked
# its lease for a name's change.
mount_stria "$T/k" attr_timeout=60,entry_timeout=60
K=$(realpath "$T/k")
t ls "$K/s/d" >/dev/null || fail "ls of /s/d through mount k"
counts >"$T/k0"
t ls "$K/s/d" >/dev/null || fail "ls of /s/d through mount k, again"
counts >"$T/k1"
echo "   listed again: READDIR=$(sent "$T/k0" "$T/k1" READDIR) GETATTR=$(sent "$T/k0" "$T/k1" GETATTR)"
[ "$(sent "$T/k0" "$T/k1" READDIR)" -eq 0 ] ||
    fail "listing /s/d again through mount k sent $(sent "$T/k0" "$T/k1" READDIR) READDIRs, want none"
for n in "${names[@]}"; do # twelve names reach every shard
    : >"$B/s/d/k$n"
    t ls "$K/s/d" | grep -qx "k$n" || fail "mount k does not list k$n, made on b"
done
# Once mount k's leases have run out (lease_ms), a change in a shard
# sends it no revocation: the version it takes again at the next opendir
# must tell.
t ls "$K/s/d" >/dev/null
sleep $((LEASE_S + 1))
for n in "${names[@]}"; do rm "$B/s/d/k$n"; done
t sync "$B/s/d" # fsync of the directory: the unlinks written behind are made
left=$(t ls "$K/s/d" | grep -c '^kn' || true)
[ "$left" = 0 ] || fail "mount k still lists $left of the names removed on b after its leases ran out"
t fusermount3 -u "$K" || fail "fusermount3 -u $K failed"

step "the directory's mtime and ctime follow a change in any shard, as ext4's do"
mtime() { stat -c %y "$1"; }
ctime() { stat -c %z "$1"; }
# Each name lands on the shard its hash picks: twelve reach all four.
for n in "${names[@]}"; do
    m0=$(mtime "$A/s/d")
    : >"$A/s/d/m$n"
    [ "$(mtime "$A/s/d")" != "$m0" ] || fail "creating m$n left the mtime at $m0"
    [ "$(ctime "$A/s/d")" = "$(mtime "$A/s/d")" ] || fail "creating m$n: ctime $(ctime "$A/s/d")"
done
for n in "${names[@]}"; do # another client's changes, seen by mount a and by libstria
    m0=$(mtime "$A/s/d")
    rm "$B/s/d/m$n"
    t sync "$B/s/d" # fsync of the directory: the unlink written behind is made
    [ "$(mtime "$A/s/d")" != "$m0" ] || fail "removing m$n on b left a's mtime at $m0"
    [ "$("$STRIA" stat /s/d | sed -n 's/^Modify: //p')" = "$(mtime "$A/s/d")" ] ||
        fail "libstria's mtime $("$STRIA" stat /s/d | sed -n 's/^Modify: //p') is not the mount's"
done
m0=$(mtime "$A/s/d")
c0=$(ctime "$A/s/d")
t chmod 0700 "$A/s/d"
[ "$(mtime "$B/s/d")" = "$m0" ] || fail "chmod moved the mtime from $m0 to $(mtime "$B/s/d")"
[ "$(ctime "$B/s/d")" != "$c0" ] || fail "chmod left the ctime at $c0"
t touch -a "$A/s/d"
[ "$(mtime "$B/s/d")" = "$m0" ] || fail "touch -a moved the mtime from $m0 to $(mtime "$B/s/d")"
t touch -m -d "2020-02-02 02:02:02" "$A/s/d"
[ "$(stat -c %Y "$B/s/d")" = "$(date -d "2020-02-02 02:02:02" +%s)" ] ||
    fail "the mtime set in the past reads $(mtime "$B/s/d") on b"
t chmod 0755 "$A/s/d"
: >"$A/s/d/after"
[ "$(stat -c %Y "$B/s/d")" -ge "$(date -d "1 minute ago" +%s)" ] ||
    fail "a create after the mtime was set left it at $(mtime "$B/s/d")"
step "after its MDTs restart, the mount answers lookups in its root again"
# A restart drops everything cached. The kernel never looks up the
# mount's root again, so before, the root's mode and owner stayed unknown
# and every lookup of a name in it went to the MDT from then on, until
# something asked for the root's attributes.
metad_set lease_ms $((LEASE_S * 1000)) # restarts stria-metad
# Until three stats in a row send no LOOKUP (bounded): each channel drops
# what its MDT leased when it sees the restart (on a loaded machine, after
# a stat or two may have been answered from what was cached before) and
# again when it opens. Before, the root's lookups never stopped.
quiet=0
for i in $(seq 40); do
    counts >"$T/w0"
    stat "$A/s/d/after" >/dev/null || fail "stat of /s/d/after after the restart"
    counts >"$T/w1"
    if [ "$(sent "$T/w0" "$T/w1" LOOKUP)" -eq 0 ]; then
        quiet=$((quiet + 1))
        [ "$quiet" -ge 3 ] && break
    else
        quiet=0
    fi
    sleep 0.3
done
counts >"$T/e0"
for i in $(seq 10); do stat "$A/s/d/after" >/dev/null || fail "stat of /s/d/after"; done
counts >"$T/e1"
at_most "$T/e0" "$T/e1" LOOKUP 2 "10 stats after the restart"
step "done"
