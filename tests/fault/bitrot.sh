#!/usr/bin/env bash
# A byte flipped in an object file on an OST's disk (issue 5): reading the
# file fails with EIO (the client's check of the OST's unread send fails,
# and the checked read it asks for then) and the OST logs the object and
# offset; stria scrub
# finds the block (exit 1) and names the file's inode; the other OST scrubs
# clean; rewriting the file heals it.
set -euo pipefail
. "$(cd "$(dirname "$0")/../func" && pwd)/lib.sh"

step "a cluster with a 3 MB file on OST 1"
cluster_up --osts 2 --no-mount
S() { "$STRIA" --conf "$CONF" "$@"; }
head -c 3000000 /dev/urandom >"$T/data"
S setstripe -c 1 -i 1 /f >/dev/null
S cp "$T/data" stria:/f
S cp stria:/f "$T/back" && cmp "$T/data" "$T/back" || fail "the file does not read back"
S scrub >"$T/scrub0.out" || { cat "$T/scrub0.out"; fail "scrub of a clean cluster failed"; }
grep -q "OST0001: 1 objects, 3000000 bytes in 92 blocks checked, 0 bad" "$T/scrub0.out" ||
    { cat "$T/scrub0.out"; fail "scrub did not check the file's 92 blocks"; }

step "one byte flips on disk"
obj=$(ls "$DIR"/ost1/objects/*/*.0.0)
ino=$(basename "$obj" | cut -d. -f1)
old=$(dd if="$obj" bs=1 skip=1000000 count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
printf "\\x$(printf %02x $((old ^ 0xff)))" | dd of="$obj" bs=1 seek=1000000 conv=notrunc 2>/dev/null
cmp -s "$T/data" "$obj" && fail "the byte did not change"

step "reading the file fails with EIO, and the OST says where"
if S cp stria:/f "$T/bad" 2>"$T/cp.err"; then fail "a damaged block was read"; fi
grep -q "Input/output error" "$T/cp.err" || { cat "$T/cp.err"; fail "not EIO"; }
# The 1 MiB read came first from the OST's cache, unread (sendfile_min):
# the client's check failed and it asked again for a checked read.
grep -q "asking for a checked read" "$T/cp.err" ||
    { cat "$T/cp.err"; fail "the unread send of the damaged block was not checked by the client"; }
# Block 30 (32 KiB blocks) holds byte 1,000,000.
grep -q "checksum mismatch ost=1 object=objects/.*/$ino.0.0 offset=983040" "$DIR/log/stord.log" ||
    fail "the OST's log does not name the object and offset"

step "stria scrub finds it"
if S scrub >"$T/scrub1.out" 2>&1; then cat "$T/scrub1.out"; fail "scrub passed a damaged block"; fi
cat "$T/scrub1.out"
grep -q "OST0001: checksum mismatch: inode 0x${ino#"${ino%%[!0]*}"} component 0 stripe 0 object offset 983040" \
    "$T/scrub1.out" || fail "scrub does not name the block"
grep -q "OST0001: 1 objects, 3000000 bytes in 92 blocks checked, 1 bad" "$T/scrub1.out" ||
    fail "scrub's summary is wrong"
S scrub --ost 0 >/dev/null || fail "OST 0 has no damage but scrub --ost 0 failed"
S scrub --ost 7 2>/dev/null && fail "scrub --ost 7 of a 2-OST cluster passed"
S scrub --ost x 2>/dev/null && fail "scrub --ost x passed"
[ "$(S scrub --ost x >/dev/null 2>&1; echo $?)" = 2 ] || fail "scrub --ost x is not a usage error"

step "rewriting the file heals it"
S cp "$T/data" stria:/f
S cp stria:/f "$T/back2" && cmp "$T/data" "$T/back2" || fail "the rewritten file does not read back"
S scrub >/dev/null || fail "scrub still fails after the rewrite"
echo "PASS: bitrot"
