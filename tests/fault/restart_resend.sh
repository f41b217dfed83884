#!/usr/bin/env bash
# Changes sent again to an MDT that restarted run once (issue 5): every
# stria-metad exits right after it made every 6th change and before it
# answered (STRIA_TEST_DIE_BEFORE_REPLY_EVERY, a test hook), the way a
# crash at the worst moment would. A watcher starts what died again; the
# client sends the change again to the new process, which finds the reply
# it kept in the change's own transaction and answers from it. Every
# mkdir, create, rename, unlink and rmdir must succeed (no EEXIST,
# no ENOENT), on 2 MDTs so that cross-MDT operations are among them, and
# each is made once: fsck is clean and the namespace is what the script
# says.
set -euo pipefail
. "$(cd "$(dirname "$0")/../func" && pwd)/lib.sh"

step "2 MDTs in 2 stria-metad processes that exit after every 6th change, before its reply"
export STRIA_TEST_DIE_BEFORE_REPLY_EVERY=6
cluster_up --osts 1 --mdts 2 --metads 2 --no-mount
S() { "$STRIA" --conf "$CONF" "$@"; }

# The watcher: start again whatever died, for as long as the test runs.
watch_daemons() {
    local end=$((SECONDS + 240))
    while [ $SECONDS -lt $end ]; do
        for f in "$DIR"/run/*.pid; do
            if ! kill -0 "$(cat "$f")" 2>/dev/null; then
                "$STRIA" up --dir "$DIR" --no-mount >/dev/null 2>&1 || true
                break
            fi
        done
        sleep 0.1
    done
}
watch_daemons &
WATCHER=$!
trap 'kill $WATCHER 2>/dev/null || true; teardown' EXIT

step "24 rounds of changes, each acknowledged once"
S mkdir -c 2 /w || fail "mkdir -c 2 /w"
for i in $(seq 1 24); do
    S mkdir "/w/d$i" || fail "mkdir /w/d$i"
    S setstripe -c 1 "/w/d$i/f" >/dev/null || fail "create /w/d$i/f"
    S setstripe -c 1 "/w/d$i/e" >/dev/null || fail "create /w/d$i/e"
    S mv "/w/d$i/f" "/w/g$i" || fail "rename /w/d$i/f to /w/g$i"
    S rm "/w/d$i/e" || fail "unlink /w/d$i/e"
    S rm -r "/w/d$i" || fail "rmdir /w/d$i"
done
kill $WATCHER 2>/dev/null || true
wait $WATCHER 2>/dev/null || true
"$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up after the rounds"

step "what the rounds made, and only that"
want=$(for i in $(seq 1 24); do echo "g$i"; done | sort)
got=$(S ls /w | sort)
[ "$got" = "$want" ] || { diff <(echo "$want") <(echo "$got") | head; fail "the namespace is not what the rounds made"; }
deaths=$(cat "$DIR"/log/metad*.log | grep -c "exiting after a change was made" || true)
kept=$(cat "$DIR"/log/metad*.log | grep -c "answered a resent request from its kept reply" || true)
echo "   stria-metad exited $deaths times before a reply; $kept resends answered from kept replies"
[ "$deaths" -ge 12 ] || fail "the test hook made the MDTs exit only $deaths times"
[ "$kept" -ge "$deaths" ] || fail "only $kept of $deaths resends were answered from kept replies"
S fsck >/dev/null || fail "fsck after the restarts"
echo "PASS: restart_resend"
