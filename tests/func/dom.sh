#!/usr/bin/env bash
# Data-on-MDT (issue 24): a directory whose default keeps the first 64 KiB
# of every file on its MDT, then one stripe to 1 MiB, then every OST
# (`setstripe -E 64K -L mdt -E 1M -c 1 -E -1 -c -1`), through libstria
# and the mount:
# - a small file is written and read with no request to any OST, and its
#   write needs no size report (stria stats -s counts the requests);
# - files that cross into the OST components read back whole, through
#   truncates and holes, from a second mount too;
# - getstripe, getfattr stria.layout and find say where the bytes are;
# - an open that reads brings a small file's bytes: open, read and close are
#   one OPEN, through libstria and the mount (no DOM_READ), and a write or
#   truncate through another handle is seen; a resent OPEN, answered from
#   the reply cache without the bytes, reads them with DOM_READ;
# - df shows what the MDT keeps; a metad with dom_max = 0 makes new files
#   with their data on OSTs and refuses to grow its records (ENOSPC);
# - posix_compare and random_ops run in such a directory.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: $FUSE_WHY"
    exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: this test needs root (allow_other)"
    exit 77
fi
S() { "$STRIA" --conf "$CONF" "$@"; }
# The MDT's count of one kind of request, since it started.
count() { S stats | awk -v op="$1" '$1 == op { n = $2 } END { print n + 0 }'; }
# Restart stria-metad with the environment given (VAR=VALUE...).
metad_restart() {
    local pid i
    pid=$(daemon_pid metad)
    kill "$pid" 2>/dev/null || true
    for i in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && fail "stria-metad did not stop"
    env "$@" "$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up after stopping metad"
    wait_for 30 S stats || fail "the MDT did not come back"
}

step "a cluster of 4 OSTs, two mounts, a directory with a Data-on-MDT default"
cluster_up --osts 4 --no-mount
mount_stria "$T/m" allow_other,default_permissions
mount_stria "$T/m2"
S mkdir /dom
S setstripe -E 64K -L mdt -E 1M -c 1 -E -1 -c -1 /dom || fail "setstripe -L mdt"
S getstripe /dom | grep -q "lmm_pattern: *mdt" || fail "getstripe does not show the mdt component"
S setstripe -E 64K -c 1 -E 1M -L mdt -E -1 /x 2>"$T/err" && fail "-L mdt on a second component"
grep -q "only the first component" "$T/err" || fail "no reason: $(cat "$T/err")"
S setstripe -E 2G -L mdt -E -1 /x 2>/dev/null && fail "a 2G mdt component was taken"

step "small files: no OST request, no size report"
head -c 50000 /dev/urandom >"$T/s"
# The counters since start, before and after: a window of time (stats -i)
# would miss a request on a loaded machine.
S stats -s >"$T/stats0"
for i in $(seq 10); do S cp "$T/s" "stria:/dom/s$i"; done
S stats -s >"$T/stats"
sent() { echo $(($(awk -v op="$1" '$1 == op { n += $2 } END { print n + 0 }' "$T/stats") - \
    $(awk -v op="$1" '$1 == op { n += $2 } END { print n + 0 }' "$T/stats0"))); }
[ "$(sent DOM_WRITE)" -eq 10 ] || fail "$(sent DOM_WRITE) DOM_WRITEs, not 10: $(grep -E 'DOM|WRITE' "$T/stats")"
[ "$(sent SETSIZE)" -eq 0 ] || fail "$(sent SETSIZE) size reports sent"
[ "$(sent WRITE)" -eq 0 ] && [ "$(sent READ)" -eq 0 ] ||
    fail "OST requests for small files: $(sent WRITE) WRITEs, $(sent READ) READs"
for i in $(seq 10); do cmp "$T/m/dom/s$i" "$T/s" || fail "s$i differs through the mount"; done
[ "$(S getstripe -c /dom/s1)" = 0 ] || true
[ "$(stat -c %s "$T/m2/dom/s3")" = 50000 ] || fail "the second mount sees another size"
cp "$T/s" "$T/m/dom/viamount"
cmp "$T/m2/dom/viamount" "$T/s" || fail "written through the mount, read through the other, differs"

step "open, read and close of a small file: one OPEN, no DOM_READ"
head -c 40000 /dev/urandom >"$T/o"
S cp "$T/o" stria:/dom/o
S cp "$T/o" stria:/dom/o2
opens=$(count OPEN) reads=$(count DOM_READ)
"$BUILD/tests/dom_open" "$CONF" /dom/o "$T/o" r || fail "dom_open r"
[ "$(count OPEN)" = $((opens + 1)) ] || fail "not one OPEN: $((opens)) -> $(count OPEN)"
[ "$(count DOM_READ)" = "$reads" ] || fail "libstria read the bytes its open brought again"
# The bytes' CRCs are taken from the reply before its connection goes
# back: overwritten there at once, they still match (another thread's
# call used to overwrite them now and then).
STRIA_TEST_POISON_REPLIES=1 "$BUILD/tests/dom_open" "$CONF" /dom/o "$T/o" r || fail "dom_open r, replies overwritten"
[ "$(count DOM_READ)" = "$reads" ] || fail "the open's bytes failed their CRCs once its reply was overwritten"
cmp "$T/m/dom/o2" "$T/o" || fail "o2 differs through the mount"
[ "$(count DOM_READ)" = "$reads" ] || fail "the mount read the bytes its open brought again"
"$BUILD/tests/dom_open" "$CONF" /dom/o "$T/o" stale || fail "a write or truncate through another handle was not seen"

step "a library's creates by whole path are written behind their close, several in one DOM_WRITES"
S mkdir /dom/behind
batches=$(count DOM_WRITES)
# Each send held back 200 ms: the files closed meanwhile go together.
STRIA_TEST_WRITE_DELAY_MS=200 "$BUILD/tests/dom_open" "$CONF" /dom/behind "$T/o" behind ||
    fail "dom_open behind"
[ "$(count DOM_WRITES)" -gt "$batches" ] || fail "no DOM_WRITES carried the files written behind"
for i in 1 7 20; do
    cmp "$T/m2/dom/behind/b$i" "$T/o" || fail "b$i, written behind, differs through the mount"
done

step "a resent OPEN brings no bytes: the read asks for them"
metad_restart STRIA_TEST_DROP_REPLY_EVERY=1
head -c 40000 /dev/urandom >"$T/o"
S cp "$T/o" stria:/dom/o
reads=$(count DOM_READ)
"$BUILD/tests/dom_open" "$CONF" /dom/o "$T/o" rw || fail "dom_open rw after a resend"
grep -q "answered a resent request from its reply cache .* op=OPEN" "$DIR/log/metad.log" ||
    fail "no OPEN was answered from the reply cache"
[ "$(count DOM_READ)" -ge $((reads + 1)) ] || fail "no DOM_READ after the resent OPEN"
metad_restart

step "df shows the MDT's Data-on-MDT bytes; find -L mdt finds the files"
used=$(S df | awk '/^Data-on-MDT/ { on = 1; next } on && /-MDT0000 / { print $2 }')
[ -n "$used" ] && [ "$used" -ge 500 ] || fail "df: $(S df)"
S df -h | grep -Eq -- "-MDT0000 +[0-9.]+[KMG]? +8.0G " || fail "df -h: $(S df -h)"
S find /dom -L mdt >"$T/found"
grep -qx /dom/s1 "$T/found" && grep -qx /dom/o "$T/found" || fail "find -L mdt: $(cat "$T/found")"
S find /dom -L mdt -size +1M | grep -q . && fail "find -L mdt -size +1M found small files"

step "dom_max = 0: new files keep their data on OSTs, the records do not grow"
echo "dom_max = 0" >>"$DIR/conf/metad.conf"
metad_restart
S cp "$T/o" stria:/dom/onost || fail "cp with Data-on-MDT off"
S getstripe /dom/onost | grep -q "lmm_pattern: *mdt" && fail "a file made with dom_max 0 has an mdt component"
S find /dom -L mdt | grep -qx /dom/onost && fail "find -L mdt lists /dom/onost"
S find /dom -L raid0 | grep -qx /dom/onost || fail "find -L raid0 does not list /dom/onost"
cmp "$T/m/dom/onost" "$T/o" || fail "onost differs through the mount"
S df | grep -Eq -- "-MDT0000 .* off " || fail "df does not say Data-on-MDT is off: $(S df)"
S cp "$T/o" stria:/dom/o 2>"$T/err" && fail "a Data-on-MDT file grew past dom_max 0"
grep -q "No space left" "$T/err" || fail "no ENOSPC: $(cat "$T/err")"
grep -q "Data-on-MDT full" "$DIR/log/metad.log" || fail "the MDT did not log dom_max"
sed -i '/^dom_max = 0$/d' "$DIR/conf/metad.conf"
metad_restart
S cp "$T/o" stria:/dom/o || fail "cp with Data-on-MDT on again"

step "files across the components: holes, truncates, a second mount"
head -c $((3 << 20)) /dev/urandom >"$T/big"
S cp "$T/big" stria:/dom/big || fail "cp big"
cmp "$T/m/dom/big" "$T/big" || fail "big differs through the mount"
S getstripe /dom/big | grep -c "lcme_flags: *init" | grep -qx 3 || fail "big: not 3 components"
cp "$T/s" "$T/local"
cp "$T/s" "$T/m/dom/h"
for at in 10000 60000 70000 1040000 2000000; do
    dd if="$T/big" of="$T/local" bs=1000 count=9 seek=$((at / 1000)) conv=notrunc status=none
    dd if="$T/big" of="$T/m/dom/h" bs=1000 count=9 seek=$((at / 1000)) conv=notrunc status=none
done
cmp "$T/m/dom/h" "$T/local" || fail "h differs after writes across components"
truncate -s 30000 "$T/local" "$T/m/dom/h"
truncate -s 100000 "$T/local" "$T/m/dom/h"
cmp "$T/m/dom/h" "$T/local" || fail "h differs after truncates"
sleep 1.2
cmp "$T/m2/dom/h" "$T/local" || fail "h differs through the second mount"
S rm /dom/big /dom/h || fail "rm"

step "stria.layout and find"
v=$(getfattr --only-values -n stria.layout "$T/m/dom")
[ "${v%% -E 1M*}" = "-E 64K -L mdt" ] || fail "stria.layout: $v"
mkdir "$T/m/dom2"
setfattr -n stria.layout -v "-E 128K -L mdt -E -1 -c 2" "$T/m/dom2" || fail "setfattr -L mdt"
S getstripe /dom2 | grep -q "lmm_pattern: *mdt" || fail "setfattr did not make an mdt component"

step "posix_compare in the Data-on-MDT directory"
mkdir -p "$T/local_pc"
timeout -k 10 600 "$BUILD/tests/posix_compare" "$T/m/dom/pc" "$T/local_pc/pc" || fail "posix_compare"

step "random_ops in the Data-on-MDT directory, 10000 operations"
mkdir -p "$T/m/dom/r"
timeout -k 10 600 "$BUILD/tests/random_ops" "$T/m/dom/r" 10000 ${RANDOM_OPS_SEED:-} ||
    fail "random_ops"
S fsck >"$T/fsck" || fail "fsck: $(cat "$T/fsck")"
echo PASS
