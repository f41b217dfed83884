#!/usr/bin/env bash
# stria pcp without nodes (one copier here; tests/testbed/ondemand.sh runs
# it on four nodes): a tree of directories, a link, an empty file, small
# files and files larger than a chunk, into the Stria mount and back out;
# the same bytes, modes and times; a copy that failed halfway goes on from
# its journal; from and to S3 through the storage hosts; bad arguments
# are refused.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

fuse_usable || { echo "SKIPPED: pcp needs the mount: $FUSE_WHY"; exit 77; }
step "a cluster, mounted (its storage hosts with the S3 server's credentials)"
S3=""
if s3_usable; then
    s3_up
    S3=1
fi
cluster_up --osts 3 --no-mount
mount_stria "$T/mnt"

step "a tree: directories, a link, an empty file, small and chunk-sized files"
src="$T/src/set"
mkdir -p "$src/a/b" "$src/empty-dir"
head -c 5000000 /dev/urandom >"$src/a/big1"        # 5 chunks of 1M
head -c 3145728 /dev/urandom >"$src/a/b/big2"      # exactly 3 chunks
: >"$src/a/empty"
for i in $(seq 1 50); do head -c $((i * 997)) /dev/urandom >"$src/a/b/s$i"; done
ln -s a/big1 "$src/link"
chmod 640 "$src/a/big1"
touch -d "2020-01-02 03:04:05" "$src/a/b/s7"

step "into the mount, 1M chunks, 3 jobs"
out=$("$STRIA" pcp --chunk 1M --jobs 3 "$src" "$T/mnt/") || fail "pcp in: $out"
echo "   $out"
grep -q "^pcp: 53 files" <<<"$out" || fail "pcp did not count 53 files"
diff -r "$src" "$T/mnt/set" || fail "the copy in differs"
[ "$(readlink "$T/mnt/set/link")" = a/big1 ] || fail "the link is not a link to a/big1"
[ "$(stat -c %a "$T/mnt/set/a/big1")" = 640 ] || fail "big1's mode is not 640"
[ "$(stat -c %Y "$T/mnt/set/a/b/s7")" = "$(stat -c %Y "$src/a/b/s7")" ] || fail "s7's mtime differs"
[ -d "$T/mnt/set/empty-dir" ] || fail "the empty directory is missing"

step "and back out, into an existing directory"
mkdir -p "$T/back"
"$STRIA" pcp --quiet "$T/mnt/set" "$T/back" >/dev/null || fail "pcp out"
diff -r "$src" "$T/back/set" || fail "the copy out differs"

step "a copy that fails halfway goes on from its journal when run again"
mkdir -p "$T/src/two/x" "$T/src/two/y"
for i in 1 2 3; do head -c 3000000 /dev/urandom >"$T/src/two/x/f$i"; done
for i in 1 2; do head -c 2000000 /dev/urandom >"$T/src/two/y/g$i"; done
mkdir -p "$T/mnt/two"
echo "in the way" >"$T/mnt/two/y" # y cannot be made: its files fail
export XDG_STATE_HOME="$T/state"
out=$("$STRIA" pcp --chunk 1M "$T/src/two" "$T/mnt/" 2>&1) && fail "a copy with an obstacle succeeded"
grep -q "cannot make $T/mnt/two/y" <<<"$out" || fail "the obstacle is not named: $out"
grep -q "4 of 13 chunks and 1 directories or links not copied" <<<"$out" ||
    fail "the failed copy does not say what is left: $out"
ls "$T/state/stria/"pcp-*.journal >/dev/null || fail "no journal after a failed copy"
cmp -s "$T/src/two/x/f2" "$T/mnt/two/x/f2" || fail "x/f2 was not copied by the failed run"
rm "$T/mnt/two/y"
out=$("$STRIA" pcp --chunk 1M "$T/src/two" "$T/mnt/") || fail "pcp again: $out"
grep -q "resuming: 9 of 13 chunks done before" <<<"$out" || fail "the second run did not resume: $out"
diff -r "$T/src/two" "$T/mnt/two" || fail "the resumed copy differs"
ls "$T/state/stria/"pcp-*.journal >/dev/null 2>&1 && fail "a finished copy left its journal"

step "from and to S3: the storage hosts move the bytes"
if [ -n "$S3" ]; then
    awss3 s3 mb s3://stage >/dev/null
    awss3 s3 cp --recursive --quiet "$src/a" s3://stage/in/ || fail "aws s3 cp in"
    out=$("$STRIA" pcp s3://stage/in "$T/mnt/froms3" --endpoint "$S3_ENDPOINT" 2>&1) ||
        fail "pcp from s3: $out"
    diff -r "$src/a" "$T/mnt/froms3" || fail "the copy from S3 differs"
    "$STRIA" hsm state "$T/mnt/froms3/big1" | grep -q "released" && fail "pcp from S3 left big1 released"
    # Again: linked already, nothing new.
    "$STRIA" pcp s3://stage/in "$T/mnt/froms3" >/dev/null 2>&1 || fail "pcp from s3 again"
    "$STRIA" pcp s3://other/x "$T/mnt/froms3" 2>/dev/null && fail "pcp into a directory linked elsewhere"
    mkdir -p "$T/mnt/tos3/d"
    cp "$src/a/big1" "$T/mnt/tos3/d/"
    "$STRIA" pcp "$T/mnt/tos3" s3://stage/out --endpoint "$S3_ENDPOINT" >/dev/null || fail "pcp to s3"
    awss3 s3 cp --quiet s3://stage/out/d/big1 "$T/got" && cmp -s "$T/got" "$src/a/big1" ||
        fail "the copy to S3 differs"
else
    echo "   (skipped: $S3_WHY)"
fi

step "bad arguments"
"$STRIA" pcp "$src" 2>/dev/null && fail "pcp with one argument"
"$STRIA" pcp "$src/a/big1" "$src/a/empty" "$T/nodir-$$/x" 2>/dev/null && fail "pcp of two into a non-directory"
"$STRIA" pcp --chunk 3k "$src" "$T/x" 2>/dev/null && fail "a chunk of 3k"
"$STRIA" pcp --nodefile "$T/none" "$src" "$T/x" 2>/dev/null && fail "a missing node file"
"$STRIA" pcp stria:/x "$T/x" 2>/dev/null && fail "a stria: path"
"$STRIA" pcp s3://a/b s3://c/d 2>/dev/null && fail "S3 to S3"
"$STRIA" pcp --endpoint http://127.0.0.1:1 "$src" "$T/x" 2>/dev/null && fail "--endpoint without S3"
echo "PASS"
