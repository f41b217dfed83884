#!/usr/bin/env bash
# The FUSE mount against POSIX: the same calls on the mount and on a local
# directory must give the same results (posix_compare), an unprivileged user
# gets what Linux gives it (perm_check), and 100,000 random operations agree
# with an in-memory model after every step (random_ops). All three run even
# if one fails, so one run reports everything.
. "$(dirname "$0")/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: FUSE not usable here: $FUSE_WHY"
    exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: FUSE not usable here: this test needs root (allow_other, perm_check)"
    exit 77
fi

cluster_up --no-mount
mount_stria "$T/mnt" allow_other,default_permissions
mkdir -p "$T/local"
failed=""

step "posix_compare $T/mnt/x $T/local/x"
timeout -k 10 900 "$BUILD/tests/posix_compare" "$T/mnt/x" "$T/local/x" || failed="$failed posix_compare($?)"

step "perm_check on the mount"
timeout -k 10 300 "$BUILD/tests/perm_check" "$T/mnt" || failed="$failed perm_check($?)"

step "random_ops on the mount, 100000 operations"
mkdir -p "$T/mnt/r"
# random_ops gives up by itself after 15 minutes; timeout is for a hung call.
timeout -k 10 1000 "$BUILD/tests/random_ops" "$T/mnt/r" 100000 ${RANDOM_OPS_SEED:-} ||
    failed="$failed random_ops($?)"

[ -z "$failed" ] || fail "failed:$failed"
echo PASS
