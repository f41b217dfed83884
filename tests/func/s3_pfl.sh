#!/usr/bin/env bash
# Repository files in composite layouts (issues 22 and 24), with s3rver and
# Debian's aws: an object imported into a directory whose default has
# three components (256K, 1M, EOF) is read lazily, restored, archived,
# released and read again, every component's stripes fetched or pushed by
# its own storage hosts, and always compared with the original; and a
# Data-on-MDT directory, whose imported files keep their bytes on OSTs
# and whose own files archive, release and read again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
s3_usable || { echo "SKIP: $S3_WHY"; exit 77; }

S() { "$STRIA" --conf "$CONF" "$@"; }
flags() { S getstripe "$1" | sed -n 's/.*lcme_flags: *//p' | tr '\n' ' '; }

step "an S3 server, a cluster of 4 OSTs, a composite directory linked to a prefix"
s3_up
awss3 s3 mb s3://data >/dev/null
cluster_up --osts 4 --no-mount
mgmtd_set policy_interval 0
S mkdir /pfl
S setstripe -E 256K -c 1 -E 1M -c 2 -E -1 -c -1 /pfl || fail "setstripe -E"
head -c $((5 << 20)) /dev/urandom >"$T/obj"
head -c 200000 /dev/urandom >"$T/small"
awss3 s3 cp --quiet "$T/obj" s3://data/p/obj
awss3 s3 cp --quiet "$T/small" s3://data/p/small
S repo add /pfl s3://data/p --endpoint "$S3_ENDPOINT" >/dev/null || fail "repo add"
[ "$(flags /pfl/obj)" = "init 0 0 " ] || fail "imported obj: components $(flags /pfl/obj)"

step "a lazy read fetches every component; the file is whole"
S cp stria:/pfl/obj "$T/got" && cmp "$T/got" "$T/obj" || fail "obj read lazily differs"
S cp stria:/pfl/small "$T/got" && cmp "$T/got" "$T/small" || fail "small read lazily differs"
S hsm restore /pfl/obj >/dev/null || fail "hsm restore"
[ "$(flags /pfl/obj)" = "init init init " ] || fail "restored obj: components $(flags /pfl/obj)"
S hsm state /pfl/obj | grep -q "released" && fail "obj still released"

step "archive, release and read again a file written in the composite layout"
head -c $((3 << 20)) /dev/urandom >"$T/w"
S cp "$T/w" stria:/pfl/w || fail "cp w"
S hsm archive /pfl/w >/dev/null || fail "hsm archive"
awss3 s3 cp --quiet s3://data/p/w "$T/back" && cmp "$T/back" "$T/w" || fail "w in S3 differs"
S hsm release /pfl/w >/dev/null || fail "hsm release"
S cp stria:/pfl/w "$T/got" && cmp "$T/got" "$T/w" || fail "w read back differs"
step "Data-on-MDT: imported files take the OST components; a DoM file archives, releases, reads"
S mkdir /dom
S setstripe -E 64K -L mdt -E -1 -c 2 /dom || fail "setstripe -L mdt"
awss3 s3 cp --quiet "$T/small" s3://data/d/imp
S repo add /dom s3://data/d --endpoint "$S3_ENDPOINT" >/dev/null || fail "repo add /dom"
S getstripe /dom/imp | grep -q "lmm_pattern: *mdt" && fail "an imported file has an mdt component"
S cp stria:/dom/imp "$T/got" && cmp "$T/got" "$T/small" || fail "imp read lazily differs"
S cp "$T/small" stria:/dom/mine || fail "cp mine"
S getstripe /dom/mine | grep -q "lmm_pattern: *mdt" || fail "mine has no mdt component"
S hsm archive /dom/mine >/dev/null || fail "hsm archive mine"
awss3 s3 cp --quiet s3://data/d/mine "$T/back" && cmp "$T/back" "$T/small" || fail "mine in S3 differs"
S hsm release /dom/mine >/dev/null || fail "hsm release mine"
S find /dom -L released >"$T/found"
grep -qx /dom/mine "$T/found" && ! grep -qx /dom/imp "$T/found" ||
    fail "find -L released: $(cat "$T/found")"
S find /dom -L mdt | grep -qx /dom/imp && fail "find -L mdt lists the imported file"
S cp stria:/dom/mine "$T/got" && cmp "$T/got" "$T/small" || fail "mine read after release differs"
S fsck >"$T/fsck" || fail "fsck: $(cat "$T/fsck")"
echo "PASS"
