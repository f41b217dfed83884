#!/usr/bin/env bash
# Opening a file for reading through the mount costs no MDT round trip when
# a lookup under a valid lease brought its layout (docs/architecture.md,
# "Metadata leases"): a dataset's files are looked up, then opened. The
# files are written by another client (the CLI, through libstria), as a
# dataset is; after that client rewrites one, the mount reads the new bytes.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: $FUSE_WHY"
    exit 77
fi
t() { timeout -k 5 60 "$@"; }
S() { "$STRIA" --conf "$CONF" "$@"; }
opens() { S stats | awk '$1 == "OPEN" { print $2; exit }'; }

step "a cluster; 40 files written by the CLI"
cluster_up --osts 2 --no-mount
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
echo "PASS: fuse_cached_open"
