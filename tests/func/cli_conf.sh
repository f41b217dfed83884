#!/usr/bin/env bash
# Two `stria up` clusters on one account (issue 21, item 4). The last
# `stria up` rewrites ~/.config/stria/client.conf, so with STRIA_CONF set
# every command must still use the cluster STRIA_CONF names, and --conf
# must beat both; otherwise `stria status` or `stria down` acts on the
# wrong cluster. Cluster alpha has one OST and beta two, so df tells them
# apart as well as the file system name.
. "$(dirname "$0")/lib.sh"

DIR2="$T/cluster2"
# lib.sh's teardown stops $DIR; stop the second cluster first. set +e: a
# failed test's status, handed on with (exit $rc), must not end the trap.
trap 'rc=$?; set +e; "$STRIA" down --dir "$DIR2" >/dev/null 2>&1
      for f in "$DIR2"/run/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true; done
      (exit $rc); teardown' EXIT

step "alpha in $DIR, then beta in $DIR2: the link points at beta"
cluster_up --no-mount --fsname alpha --osts 1
"$STRIA" up --dir "$DIR2" --no-mount --fsname beta --osts 2 >/dev/null || fail "stria up of beta"
CONF2="$DIR2/client.conf"
[ "$(readlink "$HOME/.config/stria/client.conf")" = "$CONF2" ] || fail "the link does not point at beta"
"$STRIA" --conf "$CONF" mkdir stria:/only-in-alpha || fail "mkdir in alpha"

# status_of [GLOBAL_OPTS]: `stria status` into $T/out.
status_of() { "$STRIA" "$@" status >"$T/out" 2>&1 || { cat "$T/out"; fail "stria $* status failed"; }; }

step "without STRIA_CONF: the link (beta)"
status_of
grep -q "file system 'beta'" "$T/out" || fail "status without STRIA_CONF: $(cat "$T/out")"

step "STRIA_CONF names alpha: every command uses alpha"
export STRIA_CONF="$CONF"
status_of
grep -q "file system 'alpha'" "$T/out" || fail "status shows another cluster: $(cat "$T/out")"
grep -q "local cluster 'alpha' in $DIR\$" "$T/out" || fail "status shows beta's processes: $(cat "$T/out")"
"$STRIA" df >"$T/out" || fail "df"
grep -q "^alpha-OST0000_UUID" "$T/out" || fail "df shows another cluster: $(cat "$T/out")"
if grep -q "OST0001" "$T/out"; then fail "df shows beta's two OSTs: $(cat "$T/out")"; fi
"$STRIA" ls / | grep -qx only-in-alpha || fail "ls / is not alpha's root"
"$STRIA" stats >/dev/null || fail "stats"
if [ "$(id -u)" -eq 0 ]; then "$STRIA" fsck >/dev/null || fail "fsck of alpha"; fi

step "--conf beats STRIA_CONF"
status_of --conf "$CONF2"
grep -q "file system 'beta'" "$T/out" || fail "status --conf beta: $(cat "$T/out")"
"$STRIA" --conf "$CONF2" df | grep -q "^beta-OST0001_UUID" || fail "df --conf beta"
if "$STRIA" --conf "$CONF2" ls / | grep -qx only-in-alpha; then fail "ls --conf beta shows alpha"; fi

step "stria down with STRIA_CONF stops alpha, not beta"
"$STRIA" down >"$T/out" 2>&1 || { cat "$T/out"; fail "stria down"; }
grep -q "cluster 'alpha' in $DIR is down" "$T/out" || fail "down stopped another cluster: $(cat "$T/out")"
unset STRIA_CONF
"$STRIA" --conf "$CONF2" status | grep -q "OST0001 .*online" || fail "beta is not up any more"
"$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "alpha does not come back"

echo PASS
