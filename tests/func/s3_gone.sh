#!/usr/bin/env bash
# What the export policy "deleted" builds on (issue 22), against s3rver with
# Debian's aws as the independent client: files archived and then removed
# in Stria leave tombstones on their MDTs (libstria's stria_hsm_gone_list),
# and each object is deleted through a storage host (stria_s3_delete) only
# while S3 still holds the version Stria archived; a rename, a file never
# archived and a file kept leave nothing to delete.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
s3_usable || { echo "SKIP: $S3_WHY"; exit 77; }

S() { "$STRIA" --conf "$CONF" "$@"; }
GONE="$BUILD/tests/hsm_gone"
objects() { awss3 s3 ls s3://data/p/ | awk '{print $4}' | sort | tr '\n' ' '; }

step "an S3 server, a cluster of two MDTs, a repository striped over both"
s3_up
awss3 s3 mb s3://data >/dev/null
cluster_up --mdts 2 --osts 2 --no-mount
# stria-mgmtd's policy engine forgets, every 10 s, the tombstones no
# repository's export policy deletes (this one's is none): it would take
# them between this test's listing and its deletes.
mgmtd_set policy_interval 0
S mkdir -c 2 /data
S repo add /data s3://data/p --endpoint "$S3_ENDPOINT" >/dev/null || fail "repo add"

step "six files archived, one of them released; then one rewritten in S3 by someone else"
for i in 1 2 3 4 5 6; do
    head -c $((i * 1000)) /dev/urandom >"$T/f$i"
    S cp "$T/f$i" stria:/data/f$i
done
S hsm archive /data >/dev/null || fail "hsm archive /data"
S hsm release /data/f2 >/dev/null || fail "hsm release /data/f2"
[ "$(objects)" = "f1 f2 f3 f4 f5 f6 " ] || fail "objects after the archive: $(objects)"
echo other >"$T/other"
awss3 s3 cp --quiet "$T/other" s3://data/p/f3
S cp "$T/f1" stria:/data/local

step "removed in Stria: f1, f2 (released), f3 (rewritten in S3), f6 renamed over by f5, local; f4 renamed"
S rm /data/f1 /data/f2 /data/f3 /data/local
S mv /data/f5 /data/f6
S mv /data/f4 /data/f4b
[ "$("$GONE" "$CONF" data list | tail -n 1)" = "mdts=2 seen=4 left=4" ] ||
    fail "not four tombstones: $("$GONE" "$CONF" data list)"
[ "$(objects)" = "f1 f2 f3 f4 f5 f6 " ] || fail "a listing deleted objects: $(objects)"

step "the objects deleted by their etag, the tombstones dropped"
out=$("$GONE" "$CONF" data)
sed 's/^/   /' <<<"$out"
for k in f1 f2 f6; do
    grep -q " key=p/$k delete=0$" <<<"$out" || fail "p/$k was not deleted"
done
grep -q " key=p/f3 delete=ESTALE$" <<<"$out" || fail "p/f3, rewritten in S3, was not kept"
tail -n 1 <<<"$out" | grep -qx "mdts=2 seen=4 left=0" || fail "tombstones left"
[ "$(objects)" = "f3 f4 f5 " ] || fail "objects after the deletes: $(objects)"
awss3 s3 cp --quiet s3://data/p/f3 "$T/got" && cmp -s "$T/got" "$T/other" ||
    fail "p/f3 is not the other writer's object"

step "nothing left to do, until another file goes"
[ "$("$GONE" "$CONF" data)" = "mdts=2 seen=0 left=0" ] || fail "a second run found work"
S rm /data/f4b
out=$("$GONE" "$CONF" data)
grep -q " key=p/f4 delete=0$" <<<"$out" || fail "p/f4 was not deleted: $out"
[ "$(objects)" = "f3 f5 " ] || fail "objects at the end: $(objects)"
echo "PASS"
