#!/usr/bin/env bash
# Data repositories on S3 (issue 22), against a real S3 server (s3rver on
# 127.0.0.1) with Debian's aws as the independent client:
# - import 10,000 objects written by `aws s3 cp`, list them, read a random
#   hundred and a 1 GiB object, and compare them with the originals;
# - archive a 1 GiB file and a directory of 1,000 small ones, fetch them
#   back with aws and compare, release, read again, the state at each step;
# - sync with the import policy: a new, a changed and a deleted object; a
#   file changed after its archive is dirty; tiering releases by policy.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

S() { "$STRIA" --conf "$CONF" "$@"; }
state() { S hsm state "$1" | sed 's/^[^:]*: //'; }
expect_state() {
    local got
    got=$(state "$1")
    [ "$got" = "$2" ] || fail "$1: state '$got', want '$2'"
}

step "an S3 server and a cluster whose storage hosts hold its credentials"
s3_up
awss3 s3 mb s3://data >/dev/null
cluster_up --osts 4 --no-mount
# The passes run here by hand; the engine (s3_policy.sh) stays out of their way.
mgmtd_set policy_interval 0

step "10,000 objects written by aws s3 cp"
mkdir -p "$T/src/train"
head -c $((10000 * 1024)) /dev/urandom >"$T/blob"
(cd "$T/src/train" && split -b 1024 -a 5 -d "$T/blob" s)
rm "$T/blob"
mkdir -p "$T/src/train/sub/deeper"
head -c 70000 /dev/urandom >"$T/src/train/sub/deeper/nested.bin"
awss3 s3 cp --recursive --quiet "$T/src/train" s3://data/train/ || fail "aws s3 cp --recursive"

step "stria repo add imports the listing as released files"
S mkdir /data
out=$(S repo add /data s3://data/train --endpoint "$S3_ENDPOINT" \
    --import-policy new,changed,deleted) || fail "repo add: $out"
echo "   $out" | tail -n 1
grep -q "10001 objects: 10001 new" <<<"$out" || fail "repo add did not import 10001 objects"
S repo list | grep -q "^/data  s3://data/train/" || fail "repo list does not show /data"
n=$(S ls /data | wc -l)
[ "$n" -eq 10001 ] || fail "ls /data shows $n names, want 10001 (10000 files and sub)"
S stat /data/s04242 | grep -q "Size: 1024" || fail "an imported file has not the object's size"
expect_state /data/s04242 "(0x0000000d) released exists archived, archive_id:1"
S df | grep -q "^released: 10001 files" || fail "stria df does not show 10001 released files"

step "a random hundred read through libstria match the originals"
for i in $(shuf -i 0-9999 -n 100); do
    f=$(printf "s%05d" "$i")
    S cp "stria:/data/$f" "$T/got" || fail "cp stria:/data/$f"
    cmp -s "$T/got" "$T/src/train/$f" || fail "/data/$f differs from its object"
done
S cp stria:/data/sub/deeper/nested.bin "$T/got" && cmp -s "$T/got" "$T/src/train/sub/deeper/nested.bin" ||
    fail "a nested object differs"

MNT=""
if fuse_usable; then
    step "released files read through the mount"
    mount_stria "$T/mnt"
    MNT="$T/mnt"
    for f in s00100 s09999; do
        cmp -s "$T/mnt/data/$f" "$T/src/train/$f" || fail "$f read through the mount differs"
    done
else
    echo "   (no mount here: $FUSE_WHY)"
fi

step "a 1 GiB object: imported by sync, read, compared"
head -c $((1 << 30)) /dev/urandom >"$T/big"
awss3 s3 cp --quiet "$T/big" s3://data/train/big.bin || fail "aws s3 cp big.bin"
S repo sync /data | grep -q " 1 new" || fail "sync did not import big.bin"
S cp stria:/data/big.bin "$T/got" || fail "cp stria:/data/big.bin"
cmp -s "$T/got" "$T/big" || fail "big.bin differs from its object"
rm -f "$T/got"
expect_state /data/big.bin "(0x00000009) exists archived, archive_id:1"

step "archive a 1 GiB file and a directory of 1,000 small ones"
S mkdir /data/out
S cp "$T/big" stria:/data/out/ckpt.bin || fail "cp ckpt.bin in"
mkdir -p "$T/small"
head -c $((1000 * 3000)) /dev/urandom >"$T/blob"
(cd "$T/small" && split -b 3000 -a 4 -d "$T/blob" f)
rm "$T/blob"
S mkdir /data/out/small
if [ -n "$MNT" ]; then
    # One cp through the mount rather than 1,000 launches of stria cp.
    cp "$T"/small/* "$MNT/data/out/small/" || fail "cp the small files in through the mount"
else
    for f in "$T"/small/*; do
        S cp "$f" "stria:/data/out/small/" || fail "cp $f in"
    done
fi
expect_state /data/out/ckpt.bin "(0x00000000)"
S hsm archive /data/out || fail "hsm archive /data/out"
expect_state /data/out/ckpt.bin "(0x00000009) exists archived, archive_id:1"
expect_state /data/out/small/f0500 "(0x00000009) exists archived, archive_id:1"
awss3 s3 cp --quiet s3://data/train/out/ckpt.bin "$T/back" || fail "aws s3 cp of the archive"
cmp -s "$T/back" "$T/big" || fail "the archived ckpt.bin differs"
rm -f "$T/back"
mkdir -p "$T/smallback"
awss3 s3 cp --recursive --quiet s3://data/train/out/small "$T/smallback" || fail "aws s3 cp small"
diff -r "$T/small" "$T/smallback" >/dev/null || fail "the archived small files differ"

step "release, then read again"
S hsm release /data/out/ckpt.bin || fail "hsm release ckpt.bin"
S hsm release /data/out/small || fail "hsm release small"
expect_state /data/out/ckpt.bin "(0x0000000d) released exists archived, archive_id:1"
S df -h | grep -q "^released:" || fail "df does not show released files"
S cp stria:/data/out/ckpt.bin "$T/got" || fail "read the released ckpt.bin"
cmp -s "$T/got" "$T/big" || fail "ckpt.bin read back after release differs"
rm -f "$T/got" "$T/big"
S hsm restore /data/out/small || fail "hsm restore small"
expect_state /data/out/small/f0007 "(0x00000009) exists archived, archive_id:1"
S cp stria:/data/out/small/f0007 "$T/got" && cmp -s "$T/got" "$T/small/f0007" ||
    fail "a restored small file differs"

step "a file changed after its archive is dirty, and archived again"
S cp "$T/small/f0001" stria:/data/out/small/f0002 || fail "overwrite f0002"
expect_state /data/out/small/f0002 "(0x0000000b) exists dirty archived, archive_id:1"
S hsm release /data/out/small/f0002 2>/dev/null && fail "a dirty file was released"
S hsm archive /data/out/small/f0002 || fail "archive the changed f0002"
expect_state /data/out/small/f0002 "(0x00000009) exists archived, archive_id:1"
awss3 s3 cp --quiet s3://data/train/out/small/f0002 "$T/got" && cmp -s "$T/got" "$T/small/f0001" ||
    fail "the archive of the changed f0002 is not its new data"

step "sync: a new, a changed and a deleted object"
echo "brand new" >"$T/new.txt"
awss3 s3 cp --quiet "$T/new.txt" s3://data/train/new.txt
head -c 2048 /dev/urandom >"$T/changed"
awss3 s3 cp --quiet "$T/changed" s3://data/train/s00010
awss3 s3 rm --quiet s3://data/train/s00011
out=$(S repo sync /data) || fail "repo sync: $out"
echo "   $out"
grep -q " 1 new, 1 updated, " <<<"$out" || fail "sync did not take the new and the changed object"
grep -q " 1 removed" <<<"$out" || fail "sync did not remove the deleted object's file"
S cp stria:/data/new.txt "$T/got" && cmp -s "$T/got" "$T/new.txt" || fail "new.txt differs"
S cp stria:/data/s00010 "$T/got" && cmp -s "$T/got" "$T/changed" || fail "the changed object was not taken"
S stat /data/s00011 >/dev/null 2>&1 && fail "the deleted object's file is still there"

step "tiering: release what was not read for a while"
S repo policy /data --release-after 1s >/dev/null || fail "repo policy"
sleep 2
S repo policy /data --apply | grep -q "released [1-9]" || fail "repo policy --apply released nothing"
S repo list | grep -q "release_after=1" || fail "repo list does not show the policy"

step "remove the link: refused while a file is released, unless --force; the files stay"
echo "one object" >"$T/one.txt"
awss3 s3 cp --quiet "$T/one.txt" s3://data/one/x.txt
S mkdir /one
S repo add /one s3://data/one --endpoint "$S3_ENDPOINT" >/dev/null || fail "repo add /one"
out=$(S repo remove /one 2>&1) && fail "repo remove unlinked /one with a released file: $out"
grep -q "1 released file(s) (/one/x.txt)" <<<"$out" || fail "repo remove /one: $out"
grep -q "stria hsm restore /one" <<<"$out" || fail "repo remove /one does not say what to do: $out"
S repo list | grep -q "^/one " || fail "a refused repo remove unlinked /one"
S hsm restore /one >/dev/null || fail "hsm restore /one"
S repo remove /one || fail "repo remove /one with nothing released"
S cp stria:/one/x.txt "$T/got" && cmp -s "$T/got" "$T/one.txt" || fail "/one/x.txt after the unlink"
out=$(S repo remove /data 2>&1) && fail "repo remove unlinked /data with released files: $out"
grep -q "released file(s)" <<<"$out" || fail "repo remove /data: $out"
S repo remove /data --bogus >/dev/null 2>&1 && fail "repo remove took an unknown option"
S repo remove --force /data || fail "repo remove --force"
S repo list | grep -q "^/data " && fail "repo list still shows /data"
S stat /data/new.txt >/dev/null || fail "the files went with the link"
echo "PASS"
