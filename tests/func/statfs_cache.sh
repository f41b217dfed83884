#!/usr/bin/env bash
# statfs is kept for client.conf's statfs_max_age_ms (Lustre's
# statfs_max_age): statfs_cache (libstria) counts the servers' STATFS and
# OSTATFS around calls within the age, after it, with the option at 0 and
# from threads at once. A value outside 0..60000 or not a number is
# refused with the option named. Through a mount (where /dev/fuse works),
# two `stat -f` within a second cost the MDT one STATFS, and one after it
# another.
. "$(dirname "$0")/lib.sh"
S() { "$STRIA" --conf "$CONF" "$@"; }
cluster_up --osts 2 --no-mount

# Beside client.conf, whose key_file may be relative to its directory.
conf_with() {
    local f="$DIR/client-$1.conf"
    { cat "$CONF"; echo "statfs_max_age_ms = $1"; } >"$f"
    echo "$f"
}

step "libstria: kept within the age, asked after it, always with 0, once for many threads"
"$BUILD/tests/statfs_cache" "$CONF" "$(conf_with 0)" "$(conf_with 60000)" || fail "statfs_cache"

step "a value that is not a number or out of 0..60000 is refused, naming the option"
for v in soon -1 60001 1.5; do
    f=$(conf_with "$v")
    if "$STRIA" --conf "$f" df >"$T/out" 2>&1; then fail "statfs_max_age_ms = $v was taken"; fi
    grep -q "statfs_max_age_ms" "$T/out" || fail "statfs_max_age_ms = $v: $(cat "$T/out")"
done

if ! fuse_usable; then
    echo "(no mount here: $FUSE_WHY)"
    echo PASS
    exit 0
fi
t() { timeout -k 5 60 "$@"; }
statfs_count() { S stats | awk '$1 == "STATFS" { print $2; exit }'; }
# Each `stria stats` asks for the targets' figures itself: its own STATFS
# is counted by the next one.
r1=$(statfs_count)
r2=$(statfs_count)
own=$((r2 - r1))

step "the mount: two stat -f within the age, one STATFS; after it, another"
mount_stria "$T/m"
t stat -f "$T/m" >/dev/null || fail "stat -f"
sleep 1.2
a=$(statfs_count)
t stat -f "$T/m" >/dev/null && t stat -f "$T/m" >/dev/null || fail "stat -f"
b=$(statfs_count)
[ $((b - a - own)) -eq 1 ] || fail "two stat -f within 1 s sent $((b - a - own)) STATFS, want 1"
sleep 1.2
t stat -f "$T/m" >/dev/null || fail "stat -f"
c=$(statfs_count)
[ $((c - b - own)) -eq 1 ] || fail "a stat -f after 1.2 s sent $((c - b - own)) STATFS, want 1"

step "a mount with statfs_max_age_ms = 0: every stat -f asks"
CONF=$(conf_with 0) mount_stria "$T/m0"
a=$(statfs_count)
for i in 1 2 3; do t stat -f "$T/m0" >/dev/null || fail "stat -f"; done
b=$(statfs_count)
[ $((b - a - own)) -eq 3 ] || fail "three stat -f sent $((b - a - own)) STATFS, want 3"
echo PASS
