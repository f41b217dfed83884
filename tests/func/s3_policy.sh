#!/usr/bin/env bash
# The policy engine of stria-mgmtd (issue 22): with no command run, a
# repository's export policy archives new and changed files once they are
# quiet for export_delay, its sync_interval brings new, changed and deleted
# objects into the namespace, release_after releases files not read, and
# the export policy "deleted" removes the objects of files removed here
# (not one rewritten in S3 since), and a renamed file's object follows it.
# Also the same passes run by hand: stria repo export [--now].
set -euo pipefail
. "$(dirname "$0")/lib.sh"

S() { "$STRIA" --conf "$CONF" "$@"; }
state() { S hsm state "$1" | sed 's/^[^:]*: //'; }
# until_state FILE STATE SECONDS: wait (bounded) until FILE is in STATE.
until_state() {
    local i
    for i in $(seq $(($3 * 5))); do
        [ "$(state "$1")" = "$2" ] && return 0
        sleep 0.2
    done
    fail "$1: state '$(state "$1")' after $3 s, want '$2'"
}
ARCHIVED="(0x00000009) exists archived, archive_id:1"
RELEASED="(0x0000000d) released exists archived, archive_id:1"

step "an S3 server, a cluster, and no policy engine yet"
s3_up
awss3 s3 mb s3://runs >/dev/null
cluster_up --osts 2 --no-mount
mgmtd_set policy_interval 0
S mkdir /ckpt
S repo add /ckpt s3://runs/job1 --endpoint "$S3_ENDPOINT" --no-import \
    --export-policy new,changed --export-delay 1h >/dev/null || fail "repo add"
S repo list | grep -q "export=new,changed sync_interval=0 export_delay=3600" ||
    fail "repo list does not show the export settings: $(S repo list)"

step "stria repo export: a pass by hand, waiting for quiet files or not"
head -c 3000000 /dev/urandom >"$T/a"
S cp "$T/a" stria:/ckpt/a || fail "cp a"
S repo export /ckpt | grep -q "exported 0 files.*1 waiting" || fail "a file just written was exported"
S repo export /ckpt --now | grep -q "exported 1 files" || fail "repo export --now did not export a"
[ "$(state /ckpt/a)" = "$ARCHIVED" ] || fail "a is not archived: $(state /ckpt/a)"
awss3 s3 cp --quiet s3://runs/job1/a "$T/got" && cmp -s "$T/got" "$T/a" || fail "the export of a differs"
S repo export /ckpt --now | grep -q "exported 0 files" || fail "a clean file was exported again"
S mkdir /plain
out=$(S repo export /plain 2>&1) && fail "export of a non-repository succeeded"
grep -q "no repository is linked there" <<<"$out" || fail "export of a non-repository: $out"

step "the engine, every second: new files are exported once quiet for 2 s"
mgmtd_set policy_interval 1
S repo policy /ckpt --export-delay 2 >/dev/null || fail "repo policy --export-delay"
S mkdir /ckpt/step-1
for i in 1 2 3; do
    head -c $((i * 700000)) /dev/urandom >"$T/s$i"
    S cp "$T/s$i" "stria:/ckpt/step-1/shard$i" || fail "cp shard$i"
done
until_state /ckpt/step-1/shard3 "$ARCHIVED" 30
for i in 1 2 3; do
    until_state "/ckpt/step-1/shard$i" "$ARCHIVED" 10
    awss3 s3 cp --quiet "s3://runs/job1/step-1/shard$i" "$T/got" && cmp -s "$T/got" "$T/s$i" ||
        fail "the engine's export of shard$i differs"
done
grep -q "policy /ckpt: exported" "$DIR/log/mgmtd.log" || fail "mgmtd logged no export"

step "a changed file is dirty, then exported again"
head -c 123456 /dev/urandom >"$T/s1b"
S cp "$T/s1b" stria:/ckpt/step-1/shard1 || fail "overwrite shard1"
until_state /ckpt/step-1/shard1 "$ARCHIVED" 30
awss3 s3 cp --quiet s3://runs/job1/step-1/shard1 "$T/got" && cmp -s "$T/got" "$T/s1b" ||
    fail "the changed shard1 was not exported again"

step "export policy deleted: a file removed here takes its object with it"
S repo policy /ckpt --export-policy new,changed,deleted >/dev/null || fail "repo policy deleted"
awss3 s3 ls s3://runs/job1/step-1/shard1 >/dev/null || fail "shard1's object is not there"
S rm /ckpt/step-1/shard1 || fail "rm shard1"
for i in $(seq 150); do
    awss3 s3 ls s3://runs/job1/step-1/shard1 >/dev/null 2>&1 || break
    sleep 0.2
done
awss3 s3 ls s3://runs/job1/step-1/shard1 >/dev/null 2>&1 && fail "shard1's object stayed in S3"
grep -q "deleted 1 objects" "$DIR/log/mgmtd.log" || fail "mgmtd logged no delete"
awss3 s3 ls s3://runs/job1/step-1/shard2 >/dev/null || fail "shard2's object went too"
# An object rewritten in S3 since it was archived is someone else's now.
echo "not Stria's" >"$T/other"
awss3 s3 cp --quiet "$T/other" s3://runs/job1/step-1/shard3
S rm /ckpt/step-1/shard3 || fail "rm shard3"
for i in $(seq 150); do
    grep -q "shard3 was rewritten in S3 since it was archived: left alone" "$DIR/log/mgmtd.log" && break
    sleep 0.2
done
awss3 s3 cp --quiet s3://runs/job1/step-1/shard3 "$T/got" && cmp -s "$T/got" "$T/other" ||
    fail "an object rewritten in S3 was deleted"

step "a renamed file: its object follows its name"
head -c 50000 /dev/urandom >"$T/mv"
S cp "$T/mv" stria:/ckpt/mv-src || fail "cp mv-src"
until_state /ckpt/mv-src "$ARCHIVED" 30
S mv /ckpt/mv-src /ckpt/step-1/mv-dst || fail "mv"
for i in $(seq 150); do
    awss3 s3 ls s3://runs/job1/mv-src >/dev/null 2>&1 || break
    sleep 0.2
done
awss3 s3 ls s3://runs/job1/mv-src >/dev/null 2>&1 && fail "the old name's object stayed"
awss3 s3 cp --quiet s3://runs/job1/step-1/mv-dst "$T/got" && cmp -s "$T/got" "$T/mv" ||
    fail "the renamed file's object is not under its new name"
S hsm state -v /ckpt/step-1/mv-dst | grep -q "key: job1/step-1/mv-dst" || fail "the record keeps the old key"
S repo policy /ckpt --export-policy new,changed >/dev/null

step "sync_interval: objects new, changed and deleted in S3 reach the namespace"
S repo policy /ckpt --sync-interval 1 --import-policy new,changed,deleted >/dev/null ||
    fail "repo policy --sync-interval"
echo "from elsewhere" >"$T/ext"
awss3 s3 cp --quiet "$T/ext" s3://runs/job1/ext.txt
for i in $(seq 150); do
    S stat /ckpt/ext.txt >/dev/null 2>&1 && break
    sleep 0.2
done
S cp stria:/ckpt/ext.txt "$T/got" && cmp -s "$T/got" "$T/ext" || fail "the new object did not arrive"
echo "changed elsewhere" >"$T/ext2"
awss3 s3 cp --quiet "$T/ext2" s3://runs/job1/step-1/shard2
for i in $(seq 150); do
    [ "$(S stat /ckpt/step-1/shard2 | sed -n 's/.*Size: \([0-9]*\).*/\1/p')" = 18 ] && break
    sleep 0.2
done
S cp stria:/ckpt/step-1/shard2 "$T/got" && cmp -s "$T/got" "$T/ext2" ||
    fail "the changed object did not replace shard2"
awss3 s3 rm --quiet s3://runs/job1/step-1/shard2
for i in $(seq 150); do
    S stat /ckpt/step-1/shard2 >/dev/null 2>&1 || break
    sleep 0.2
done
S stat /ckpt/step-1/shard2 >/dev/null 2>&1 && fail "the deleted object's file stayed"

step "import policy without changed: an object rewritten in S3 keeps its file"
S repo policy /ckpt --sync-interval 0 --import-policy new,deleted >/dev/null || fail "repo policy"
echo "rewritten elsewhere" >"$T/ext3"
awss3 s3 cp --quiet "$T/ext3" s3://runs/job1/ext.txt
S repo sync /ckpt >/dev/null || fail "repo sync"
S cp stria:/ckpt/ext.txt "$T/got" && cmp -s "$T/got" "$T/ext" ||
    fail "a file whose object changed in S3 was removed or replaced without the changed policy"

step "release_after: files not read for 2 s are released by the engine"
S repo policy /ckpt --release-after 2s >/dev/null || fail "repo policy --release-after"
until_state /ckpt/a "$RELEASED" 30
S cp stria:/ckpt/a "$T/got" && cmp -s "$T/got" "$T/a" || fail "a read back after the engine released it"
S repo policy /ckpt --release-after 0 >/dev/null
