#!/usr/bin/env bash
# Rebalancing (issue 24, point 6): an OST filled by files pinned to it is
# flagged by stria df and drained by stria rebalance while other files are
# written; every file reads back the same, and the OSTs end within the
# threshold. A rebalance killed (kill -9) in the middle leaves every file
# whole, and running it again finishes the job. Bad arguments are refused.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
S() { "$STRIA" --conf "$CONF" "$@"; }

step "a cluster of 4 OSTs, one of them filled"
cluster_up --osts 4 --no-mount
migrate_stale_short # so that the migration a kill cuts goes stale in seconds
S mkdir /full /other
S setstripe -c 1 -i 0 /full
for i in $(seq 1 16); do
    head -c $((3 << 20)) /dev/urandom >"$T/f$i"
    S cp "$T/f$i" stria:/full/f$i
done
S df >"$T/df"
grep -q "out of balance" "$T/df" || fail "df does not flag the full OST: $(cat "$T/df")"
grep -q "^  OST0000 +" "$T/df" || fail "df does not name OST0000 as fuller: $(cat "$T/df")"
S df --threshold 1000 | grep -q "out of balance" && fail "df flags within a threshold of 1000%"
S rebalance --threshold 0 2>/dev/null && fail "a threshold of 0 was taken"
S rebalance --max-bandwidth fast 2>/dev/null && fail "a bandwidth 'fast' was taken"
S rebalance / /full 2>/dev/null && fail "two paths were taken"

step "a dry run moves nothing"
S rebalance -n >"$T/dry"
grep -q "to move" "$T/dry" || fail "dry run: $(cat "$T/dry")"
[ "$(S getstripe -i /full/f1)" = 0 ] || fail "a dry run moved f1"

step "rebalance drains OST0000 while other files are written"
(
    for i in $(seq 1 20); do
        head -c 1000000 /dev/urandom >"$T/o$i"
        S cp "$T/o$i" stria:/other/o$i || exit 1
    done
) &
writer=$!
S rebalance -v --max-bandwidth 40M >"$T/rb" || fail "rebalance: $(cat "$T/rb")"
cat "$T/rb" | tail -1
wait $writer || fail "the writer failed during the rebalance"
S df >"$T/df"
grep -q "out of balance" "$T/df" && fail "still out of balance: $(cat "$T/df")"
for i in $(seq 1 16); do
    S cp stria:/full/f$i "$T/back" && cmp -s "$T/back" "$T/f$i" || fail "f$i differs after the rebalance"
done
for i in $(seq 1 20); do
    S cp stria:/other/o$i "$T/back" && cmp -s "$T/back" "$T/o$i" || fail "o$i differs"
done

step "a rebalance killed in the middle: every file whole, the next run finishes"
S migrate -c 1 -i 0 /full # all back onto OST0000
head -c $((8 << 20)) /dev/urandom >"$T/big"
S setstripe -c 1 -i 0 /full/big
S cp "$T/big" stria:/full/big
"$STRIA" --conf "$CONF" rebalance >/dev/null 2>&1 & # $! the process itself
rb=$!
sleep 0.1
daemon_pause stord
sleep 0.3
kill -9 $rb 2>/dev/null || true
wait $rb 2>/dev/null || true
daemon_resume
for i in $(seq 1 16); do
    S cp stria:/full/f$i "$T/back" && cmp -s "$T/back" "$T/f$i" || fail "f$i differs after the kill"
done
S cp stria:/full/big "$T/back" && cmp -s "$T/back" "$T/big" || fail "big differs after the kill"
S rebalance >"$T/rb" 2>&1 || {
    # The file whose migration the kill cut is someone else's until stale.
    grep -q "someone else" "$T/rb" || fail "rebalance after the kill: $(cat "$T/rb")"
    sleep $((MIGRATE_STALE + 1))
    S rebalance >"$T/rb" 2>&1 || fail "rebalance after the stale wait: $(cat "$T/rb")"
}
S df | grep -q "out of balance" && fail "out of balance after the second run"
S cp stria:/full/big "$T/back" && cmp -s "$T/back" "$T/big" || fail "big differs at the end"
# The migration the kill cut, if the second run did not need its file:
# stale by now, fsck says so and --repair cleans up after it.
if ! S fsck >"$T/fsck"; then
    grep -q "migrator died" "$T/fsck" || { cat "$T/fsck"; fail "fsck"; }
    S fsck --repair >/dev/null || fail "fsck --repair"
    S fsck >"$T/fsck" || { cat "$T/fsck"; fail "fsck after --repair"; }
fi
for i in $(seq 1 16); do
    S cp stria:/full/f$i "$T/back" && cmp -s "$T/back" "$T/f$i" || fail "f$i differs at the end"
done
grep -q " 0 that no file owns" "$T/fsck" || fail "orphans: $(cat "$T/fsck")"
echo "PASS: rebalance"
