#!/usr/bin/env bash
# Changes sent again after a broken connection run once (issue 5): the MDT
# drops the connection instead of answering every 4th change it served
# (STRIA_TEST_DROP_REPLY_EVERY, a test hook), so the client sends the
# change again with the same sequence number and the MDT answers from its
# reply cache. Every mkdir, create, rename, unlink and rmdir must succeed:
# no EEXIST, no ENOENT, and each is made once (fsck is clean).
set -euo pipefail
. "$(cd "$(dirname "$0")/../func" && pwd)/lib.sh"

step "a cluster whose MDT drops every 4th reply to a change"
STRIA_TEST_DROP_REPLY_EVERY=4 cluster_up --osts 1 --no-mount
S() { "$STRIA" --conf "$CONF" "$@"; }
for i in $(seq 1 30); do
    S mkdir "/d$i" || fail "mkdir /d$i"
    S setstripe -c 1 "/d$i/f" >/dev/null || fail "create /d$i/f"
    S mv "/d$i/f" "/d$i/g" || fail "rename /d$i/f"
    S rm "/d$i/g" || fail "unlink /d$i/g"
    S rm -r "/d$i" || fail "rmdir /d$i"
done
[ -z "$(S ls /)" ] || { S ls /; fail "the namespace is not empty"; }
drops=$(grep -c "dropping the connection instead of the reply" "$DIR/log/metad.log" || true)
answered=$(grep -c "answered a resent request from its reply" "$DIR/log/metad.log" || true)
echo "   $drops replies dropped, $answered resends answered from the reply cache"
[ "$drops" -ge 30 ] || fail "the test hook dropped only $drops replies"
[ "$answered" -ge "$drops" ] || fail "only $answered of $drops resends came from the reply cache"
S fsck >/dev/null || fail "fsck after the resends"
echo "PASS: resend"
