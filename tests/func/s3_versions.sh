#!/usr/bin/env bash
# A file being read keeps the version it opened (issue 22, point 5), with
# s3rver on 127.0.0.1 and Debian's aws rewriting objects under Stria:
# - a restored file open through the mount while its object changes in S3
#   and `stria repo sync` takes the change: the open file goes on giving
#   the old bytes to its end, a new open gives the new ones;
# - a released file open while its object changes: s3rver keeps no old
#   versions, so its reads fail with EIO, never give the new object's
#   bytes (on a versioned bucket the storage hosts read the old version);
# - the old files are freed after keep_old, and fsck finds nothing left.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
s3_usable || { echo "SKIP: $S3_WHY"; exit 77; }
fuse_usable || { echo "SKIP: $FUSE_WHY"; exit 77; }

S() { "$STRIA" --conf "$CONF" "$@"; }
M="$T/mnt"
# until_same FILE WANT: wait (10 s at most) until FILE reads as WANT, which
# takes the mount's entry timeout after a name changed elsewhere.
until_same() {
    local i
    for i in $(seq 1 40); do
        cmp -s "$1" "$2" && return 0
        sleep 0.25
    done
    return 1
}

step "an S3 server, a cluster and its mount, a repository of two 8 MiB objects"
s3_up
awss3 s3 mb s3://data >/dev/null
cluster_up --osts 2 --no-mount
mgmtd_set policy_interval 0
head -c $((8 << 20)) /dev/urandom >"$T/a1"
head -c $((8 << 20)) /dev/urandom >"$T/a2"
head -c $((8 << 20)) /dev/urandom >"$T/b1"
head -c $((6 << 20)) /dev/urandom >"$T/b2"
awss3 s3 cp --quiet "$T/a1" s3://data/v/a
awss3 s3 cp --quiet "$T/b1" s3://data/v/b
S mkdir /data
S repo add /data s3://data/v --endpoint "$S3_ENDPOINT" --import-policy new,changed \
    >/dev/null || fail "repo add"
mount_stria "$M"

step "a restored file open while its object changes keeps the old bytes"
S hsm restore /data/a >/dev/null || fail "hsm restore a"
exec 3<"$M/data/a"
dd bs=1M count=2 iflag=fullblock status=none <&3 >"$T/got_a" || fail "first read of a"
awss3 s3 cp --quiet "$T/a2" s3://data/v/a
out=$(S repo sync /data) || fail "repo sync: $out"
grep -q " 1 updated" <<<"$out" || fail "sync did not take the changed object: $out"
cat <&3 >>"$T/got_a" || fail "the rest of a through the open descriptor"
exec 3<&-
cmp -s "$T/got_a" "$T/a1" || fail "the open file did not keep its version"
until_same "$M/data/a" "$T/a2" || fail "a new open of a does not give the new object"

step "a released file open while its object changes: EIO, never the new bytes"
exec 4<"$M/data/b"
awss3 s3 cp --quiet "$T/b2" s3://data/v/b
out=$(S repo sync /data) || fail "repo sync: $out"
grep -q " 1 updated" <<<"$out" || fail "sync did not take the changed object: $out"
if dd bs=1M count=1 status=none <&4 >"$T/got_b" 2>"$T/err_b"; then
    fail "the old released file gave $(stat -c %s "$T/got_b") bytes of a version S3 no longer has"
fi
grep -q "Input/output error" "$T/err_b" || fail "not EIO: $(cat "$T/err_b")"
exec 4<&-
grep -q "cannot list versions\|not versioned" "$DIR"/log/stord*.log ||
    fail "no log line says why the old version could not be read"
until_same "$M/data/b" "$T/b2" || fail "a new open of b does not give the new object"

step "the old files stay for keep_old, then go; fsck finds nothing left"
S fsck >"$T/fsck" || fail "fsck with two superseded files: $(cat "$T/fsck")"
out=$(S repo sync /data) || fail "repo sync: $out"
grep -q "superseded files freed" <<<"$out" && fail "freed before keep_old: $out"
S repo policy /data --keep-old 0 >/dev/null || fail "repo policy --keep-old 0"
S repo list | grep -q "keep_old=0" || fail "repo list does not show keep_old"
out=$(S repo sync /data) || fail "repo sync: $out"
grep -q ": 2 superseded files freed" <<<"$out" || fail "the old files were not freed: $out"
S fsck >"$T/fsck" || fail "fsck after freeing: $(cat "$T/fsck")"
grep -q " 0 orphan" "$T/fsck" || fail "fsck: $(cat "$T/fsck")"
S repo policy /data --keep-old 1x >/dev/null 2>&1 && fail "--keep-old 1x was taken"
cmp -s "$M/data/a" "$T/a2" && cmp -s "$M/data/b" "$T/b2" || fail "the new files changed"
echo "PASS"
