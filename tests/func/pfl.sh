#!/usr/bin/env bash
# Composite layouts (PFL, issue 24): a directory with lfs's
# `setstripe -E 256K -c 1 -E 1M -c 2 -E -1 -c -1` default, through the CLI
# (libstria) and the mount:
# - files take the template, their first component instantiated and the
#   others as writes reach them (getstripe's lcme_flags), and read back
#   whole across component ends, holes and truncates;
# - a handle opened on a second mount before another client wrote into a
#   component it knew as empty reads what was written, not a hole;
# - the mount's stria.layout gives the layout in setstripe's words and
#   takes them back;
# - posix_compare and random_ops run in such a directory, files growing
#   across component ends with writes, truncates, holes and mmap.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: $FUSE_WHY"
    exit 77
fi
S() { "$STRIA" --conf "$CONF" "$@"; }
flags() { S getstripe "$1" | sed -n 's/.*lcme_flags: *//p' | tr '\n' ' '; }

step "a cluster of 4 OSTs, two mounts, a directory with a composite default"
cluster_up --osts 4 --no-mount
mount_stria "$T/m" allow_other,default_permissions
mount_stria "$T/m2"
S mkdir /pfl
S setstripe -E 256K -c 1 -E 1M -c 2 -E -1 -c -1 /pfl || fail "setstripe -E"
[ "$(S getstripe --component-count /pfl)" = 3 ] || fail "the directory has no 3 components"
[ "$(S getstripe -c /pfl)" = -1 ] || fail "getstripe -c of the directory's last component"
S setstripe -E 100K -c 1 -E -1 /x 2>"$T/err" && fail "an end off 64K was taken"
grep -q "multiple of 64K" "$T/err" || fail "no reason given: $(cat "$T/err")"
S setstripe -E 1M -c 1 -E 2M -c 2 /x 2>/dev/null && fail "a layout not ending at EOF was taken"
S setstripe -c 1 -E -1 /x 2>/dev/null && fail "-c before the first -E was taken"

step "files instantiate their components as writes reach them"
head -c $((3 << 20)) /dev/urandom >"$T/big"
head -c 100000 /dev/urandom >"$T/small"
cp "$T/small" "$T/m/pfl/small"
[ "$(flags /pfl/small)" = "init 0 0 " ] || fail "small: components $(flags /pfl/small)"
S cp "$T/big" stria:/pfl/big || fail "stria cp big"
[ "$(flags /pfl/big)" = "init init init " ] || fail "big: components $(flags /pfl/big)"
[ "$(S getstripe -c /pfl/big)" = 4 ] || fail "big's last component is not over 4 OSTs"
cmp "$T/m/pfl/big" "$T/big" || fail "big read through the mount differs"
cmp "$T/m/pfl/small" "$T/small" || fail "small read through the mount differs"

step "stria find selects by size, layout and OST"
S mkdir /pfl/sub
S cp "$T/small" stria:/pfl/sub/tiny
[ "$(S find /pfl -type f -size +1M)" = /pfl/big ] || fail "find -size +1M: $(S find /pfl -type f -size +1M)"
[ "$(S find /pfl -type f -size -1000K | sort | tr '\n' ' ')" = "/pfl/small /pfl/sub/tiny " ] ||
    fail "find -size -1000K: $(S find /pfl -type f -size -1000K)"
[ "$(S find /pfl -stripe-count 4)" = /pfl/big ] || fail "find -stripe-count 4"
[ "$(S find /pfl -stripe-count -2 -type f | wc -l)" = 2 ] || fail "find -stripe-count -2"
[ "$(S find /pfl -component-count 3 -type f | wc -l)" = 3 ] || fail "find -component-count 3"
[ "$(S find /pfl -maxdepth 1 -type d)" = "/pfl
/pfl/sub" ] || fail "find -maxdepth 1 -type d: $(S find /pfl -maxdepth 1 -type d)"
[ "$(S find /pfl -name 'ti*')" = /pfl/sub/tiny ] || fail "find -name"
small_ost=$(S getstripe /pfl/small | awk '/obdidx/ {getline; print $1; exit}')
S find /pfl -ost "$small_ost" | grep -qx /pfl/small || fail "find -ost $small_ost misses small"
S find /pfl -ost "OST000$small_ost" | grep -qx /pfl/small || fail "find -ost OST000$small_ost"
[ "$(S find "$T/m/pfl" -size +1M)" = "$T/m/pfl/big" ] || fail "find through a mount path"
S find /pfl -size 1x 2>/dev/null && fail "find took -size 1x"
S find /pfl -ost banana 2>/dev/null && fail "find took -ost banana"
S find /nonexistent 2>/dev/null && fail "find of a missing path succeeded"
[ "$(S find /pfl -mtime -1 -type f | wc -l)" = 3 ] || fail "find -mtime -1"
[ -z "$(S find /pfl -mtime +1)" ] || fail "find -mtime +1 found new files"
S rm /pfl/sub/tiny && S rm -r /pfl/sub 2>/dev/null || S rm /pfl/sub 2>/dev/null || true

step "holes, writes past component ends and truncates"
cp "$T/small" "$T/local"
cp "$T/small" "$T/m/pfl/h"
for at in 300000 1048000 2500000; do
    dd if="$T/big" of="$T/local" bs=1000 count=70 seek=$((at / 1000)) conv=notrunc status=none
    dd if="$T/big" of="$T/m/pfl/h" bs=1000 count=70 seek=$((at / 1000)) conv=notrunc status=none
done
cmp "$T/m/pfl/h" "$T/local" || fail "h differs after writes across component ends"
truncate -s 600000 "$T/local" "$T/m/pfl/h"
truncate -s 5000000 "$T/local" "$T/m/pfl/h"
cmp "$T/m/pfl/h" "$T/local" || fail "h differs after truncates"
S cp stria:/pfl/h "$T/got" && cmp "$T/got" "$T/local" || fail "h through libstria differs"

step "a handle open on a second mount sees a component another client filled"
cp "$T/small" "$T/m/pfl/late"
exec 3<"$T/m2/pfl/late"
dd if="$T/big" of="$T/m/pfl/late" bs=1M count=2 seek=1 conv=notrunc status=none
sleep 1.2 # the second mount's attribute timeout
dd bs=1M skip=1 count=2 status=none <&3 >"$T/got" || fail "read through the old handle"
exec 3<&-
head -c $((2 << 20)) "$T/big" | cmp - "$T/got" || fail "the old handle read a hole"

step "stria.layout through the mount"
v=$(getfattr --only-values -n stria.layout "$T/m/pfl")
[ "$v" = "-E 256K -c 1 -S 0 -E 1M -c 2 -S 0 -E EOF -c -1 -S 0" ] ||
    fail "stria.layout of the directory: $v"
mkdir "$T/m/pfl2"
setfattr -n stria.layout -v "-E 1M -c 1 -E -1 -c 2" "$T/m/pfl2" || fail "setfattr stria.layout"
[ "$(S getstripe --component-count /pfl2)" = 2 ] || fail "setfattr did not set two components"
setfattr -n stria.layout -v "-E 1M -c 1" "$T/m/pfl2" 2>/dev/null && fail "a bad layout was taken"

step "posix_compare in the composite directory"
mkdir -p "$T/local_pc"
timeout -k 10 600 "$BUILD/tests/posix_compare" "$T/m/pfl/pc" "$T/local_pc/pc" || fail "posix_compare"

step "random_ops in the composite directory, 10000 operations"
mkdir -p "$T/m/pfl/r"
timeout -k 10 600 "$BUILD/tests/random_ops" "$T/m/pfl/r" 10000 ${RANDOM_OPS_SEED:-} ||
    fail "random_ops"
S getstripe --component-count /pfl/r >/dev/null || fail "getstripe of r"
echo PASS
