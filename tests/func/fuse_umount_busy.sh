#!/usr/bin/env bash
# `stria down` with a file open on the mount: it must still stop the
# cluster, unmount lazily and say so, and never hang.
. "$(dirname "$0")/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: FUSE not usable here: $FUSE_WHY"
    exit 77
fi

# The holder must not outlive a failure: it would keep ctest waiting on its
# output and stria-fuse serving a detached mount.
holder=""
fail() {
    [ -z "$holder" ] || kill "$holder" 2>/dev/null || true
    echo "FAIL: $*" >&2
    exit 1
}
# alive PID: running, not a zombie waiting to be reaped.
alive() {
    local st
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

cluster_up --no-mount
mount_stria "$T/mnt"
MNT=$(realpath "$T/mnt")
fuse_pids=$(stria_fuse_pids "$MNT")
[ -n "$fuse_pids" ] || fail "no stria-fuse process found for $MNT"
daemons=$(cat "$DIR"/run/*.pid)

step "a background process holds a file on the mount open"
timeout -k 5 30 sh -c "echo held > '$MNT/file'" || fail "cannot write $MNT/file"
# exec: the holder is the sleeping process itself, with the file as fd 3.
(
    exec 3<"$MNT/file"
    exec sleep 300
) </dev/null >/dev/null 2>&1 &
holder=$!
# Until the exec, fd 3 may be one the test inherited (ctest's log): wait
# for it to be the file on the mount.
wait_for 10 sh -c "[ \"\$(readlink /proc/$holder/fd/3)\" = '$MNT/file' ]" || true
[ "$(readlink "/proc/$holder/fd/3")" = "$MNT/file" ] || fail "fd 3 of the holder is $(readlink "/proc/$holder/fd/3")"

step "stria down"
rc=0
timeout -k 5 90 "$STRIA" down --dir "$DIR" >"$T/down.out" 2>&1 || rc=$?
cat "$T/down.out"
[ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "stria down hung (killed by timeout after 90 s)"
[ $rc -eq 0 ] || fail "stria down exited $rc"
grep -qi "lazily" "$T/down.out" || fail "stria down did not say it unmounted $MNT lazily"
grep -qF "$MNT" "$T/down.out" || fail "stria down did not name the mount point $MNT"

step "the mount is gone, the daemons are stopped"
if is_stria_mount "$MNT"; then fail "$MNT is still mounted"; fi
for p in $daemons; do
    if alive "$p"; then fail "daemon pid $p still running after stria down"; fi
done
if ls "$DIR"/run/*.pid >/dev/null 2>&1; then fail "pid files left: $(ls "$DIR"/run/*.pid)"; fi
# stria-fuse may only stay while the file is held; it must not outlive the holder.
kill "$holder" 2>/dev/null || true
wait_for 10 sh -c "! { $(declare -f alive); alive $holder; }" ||
    fail "the holder (pid $holder) does not die: stuck in the file system?"
wait "$holder" 2>/dev/null || true
holder=""
for p in $fuse_pids; do
    wait_for 15 sh -c "! { $(declare -f alive); alive $p; }" ||
        fail "stria-fuse (pid $p) still running after the holder let go"
done

echo PASS
