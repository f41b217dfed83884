#!/usr/bin/env bash
# The mount that `stria up` makes logs to DIR/log/stria-fuse.log (issue 21,
# item 7): what stria-fuse warns about once it serves (an MDT or OST out
# of reach, resends) must land there, appended, not in /dev/null. A mount
# made by hand (or by mount(8) or systemd) that goes to the background
# logs to its -o log=FILE; a log it cannot open is refused at once.
. "$(dirname "$0")/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: FUSE not usable here: $FUSE_WHY"
    exit 77
fi

LOG="$DIR/log/stria-fuse.log"

cluster_up --no-mount
echo "a line from before" >"$LOG"

step "stria up mounts the cluster"
"$STRIA" up --dir "$DIR" >"$T/up.out" 2>&1 || { cat "$T/up.out"; fail "stria up with a mount"; }
MNT=$(realpath "$DIR/mnt")
is_stria_mount "$MNT" || fail "$MNT is not mounted: $(cat "$T/up.out")"
timeout -k 5 30 sh -c "echo hello > '$MNT/file'" || fail "cannot write through the mount"

# A stria-metad killed under the mount: its metadata cache loses the
# channel the MDT revokes leases on, and stria-fuse warns at once. (An OST
# killed under a read is not used here: whether that read logs "out of
# reach" depends on when libstria writes the OST off.)
step "a second mount, in the background, with -o log=FILE"
LOG2="$T/m2.log"
echo "a line from before" >"$LOG2"
mkdir -p "$T/m2"
M2=$(realpath "$T/m2")
STRIA_MOUNTS+=("$M2")
timeout -k 5 60 "$BUILD/stria-fuse" -o "conf=$DIR/client.conf,log=$LOG2" "$M2" ||
    fail "stria-fuse -o log=$LOG2 failed"
is_stria_mount "$M2" || fail "$M2 is not mounted"
timeout -k 5 30 cat "$M2/file" >/dev/null || fail "cannot read through the second mount"
mkdir -p "$T/m3"
if "$BUILD/stria-fuse" -o "conf=$DIR/client.conf,log=$T/no/such/dir/x.log" "$T/m3" 2>"$T/m3.err"; then
    fail "stria-fuse took a log it cannot open"
fi
grep -q "log=$T/no/such/dir/x.log" "$T/m3.err" || fail "no clear error for a bad log=: $(cat "$T/m3.err")"

step "kill -9 stria-metad under the mount"
kill -9 "$(daemon_pid metad)"

step "the mount's warning is in $LOG"
wait_for 10 grep -q "warn stria-fuse: metadata cache: revocation channel to MDT0000 lost" "$LOG" ||
    fail "no warning of the lost MDT in $LOG: $(cat "$LOG")"
head -n 1 "$LOG" | grep -qx "a line from before" || fail "$LOG was not appended to"
wait_for 10 grep -q "warn stria-fuse: metadata cache: revocation channel to MDT0000 lost" "$LOG2" ||
    fail "no warning of the lost MDT in the second mount's $LOG2: $(cat "$LOG2")"
head -n 1 "$LOG2" | grep -qx "a line from before" || fail "$LOG2 was not appended to"

echo PASS
