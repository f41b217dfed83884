#!/usr/bin/env bash
# OST pools (issue 24), with lctl's and lfs's words, on a cluster of two
# MDTs and five OSTs:
# - stria pool new/add/remove/destroy/list, and every mistake refused in
#   words with nothing changed (bad names, another file system, unknown or
#   duplicate OSTs, a pool not there, destroying a pool with OSTs, a user);
# - setstripe -p on a directory and per component (-p carrying over as in
#   lfs, -p none stopping it): every file's objects land on the pool's
#   OSTs only (getstripe's obdidx), on either MDT; an unknown pool is
#   refused naming it; getstripe prints lmm_pool and -p;
# - df --pool lists the pool's OSTs and sums them;
# - the pools survive a restart of stria-mgmtd, and a pool made a moment
#   before a file is already the file's.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: changing pools is root's"
    exit 77
fi
S() { "$STRIA" --conf "$CONF" "$@"; }
# The OSTs of a file's objects, one line.
osts() { S getstripe "$1" | awk '/obdidx/ { t = 1; next } t && NF == 4 { print $1 }' | sort -n | paste -sd' '; }
# Every OST of every file under DIR is one of the given ones.
only_on() {
    local d=$1 f o
    shift
    for f in $(S ls "$d"); do
        for o in $(osts "$d/$f"); do
            [[ " $* " == *" $o "* ]] || fail "$d/$f has an object on OST $o, outside the pool ($*)"
        done
    done
}
usage() { # usage CMD...: exits 2
    local rc=0
    S "$@" 2>"$T/err" >/dev/null || rc=$?
    [ $rc -eq 2 ] || fail "'$*' gave exit $rc, want 2: $(cat "$T/err")"
}
refused() { # refused WORDS CMD...: exits 1 saying WORDS
    local words=$1 rc=0
    shift
    S "$@" 2>"$T/err" >/dev/null || rc=$?
    [ $rc -eq 1 ] || fail "'$*' gave exit $rc, want 1: $(cat "$T/err")"
    grep -qF -- "$words" "$T/err" || fail "'$*' did not say '$words': $(cat "$T/err")"
}

step "a cluster of two MDTs and five OSTs"
cluster_up --mdts 2 --osts 5 --fsname pfs --no-mount
[ "$(S pool list)" = "Pools from pfs:" ] || fail "pools at start: $(S pool list)"

step "pool new, add, list, as lctl and lfs"
S pool new pfs.fast | grep -qx "Pool pfs.fast created" || fail "pool new"
S pool add pfs.fast OST0001 pfs-OST0003_UUID >"$T/out" || fail "pool add"
grep -qx "OST pfs-OST0001_UUID added to pool pfs.fast" "$T/out" || fail "pool add said: $(cat "$T/out")"
S pool_new pfs.slow >/dev/null || fail "pool_new (lctl's name)"
S pool add pfs.slow 'pfs-OST[0-4/2]' >/dev/null || fail "pool add of a range"
S pool list pfs >"$T/out"
printf 'Pools from pfs:\npfs.fast\npfs.slow\n' | diff - "$T/out" || fail "pool list pfs"
S pool_list pfs.slow >"$T/out"
printf 'Pool: pfs.slow\npfs-OST0000_UUID\npfs-OST0002_UUID\npfs-OST0004_UUID\n' | diff - "$T/out" ||
    fail "pool list pfs.slow"

step "mistakes: a clear error, and nothing changed"
before=$(S pool list pfs.fast; S pool list pfs.slow)
usage pool new fast                      # no FSNAME.
usage pool new pfs.a.b                   # a dot in the pool's name
usage pool new pfs.sixteen-chars-xx      # too long
usage pool add pfs.fast                  # no OST
usage pool add pfs.fast OST0002 'OST[1-2]' # OST0002 twice
usage pool add pfs.fast OSTzz
usage pool frobnicate pfs.fast
refused "is not this cluster's" pool new other.fast
refused "already exists" pool new pfs.fast
refused "does not exist" pool add pfs.nosuch OST0000
refused "pfs-OST0009_UUID is not part of file system pfs" pool add pfs.fast OST0002 OST0009
refused "is not of file system" pool add pfs.fast other-OST0002_UUID
refused "pfs-OST0001_UUID is already in pool pfs.fast" pool add pfs.fast OST0000 OST0001
refused "pfs-OST0002_UUID is not in pool pfs.fast" pool remove pfs.fast OST0001 OST0002
refused "is not empty" pool destroy pfs.fast
refused "does not exist" pool destroy pfs.nosuch
refused "does not exist" pool list pfs.nosuch
if command -v setpriv >/dev/null; then
    # A user with a client.conf and key of its own (the cluster's are root's).
    mkdir -p "$T/user"
    key=$(sed -nE 's/^key_file *= *//p' "$CONF")
    [[ "$key" == /* ]] || key="$(dirname "$CONF")/$key"
    cp "$key" "$T/user/key"
    sed -E "s|^key_file *=.*|key_file = $T/user/key|" "$CONF" >"$T/user/client.conf"
    chown -R 65534:65534 "$T/user"
    chmod 755 "$T"
    rc=0
    setpriv --reuid=65534 --regid=65534 --clear-groups "$STRIA" --conf "$T/user/client.conf" \
        pool new pfs.mine 2>"$T/err" || rc=$?
    [ $rc -eq 1 ] && grep -q "only root" "$T/err" || fail "a user made a pool: $rc $(cat "$T/err")"
fi
[ "$(S pool list pfs.fast; S pool list pfs.slow)" = "$before" ] || fail "a refused change changed pools"
[ "$(S pool list | wc -l)" = 3 ] || fail "pools after mistakes: $(S pool list)"

step "setstripe -p on a directory: files on the pool's OSTs only, on both MDTs"
S mkdir /fast
S setstripe -c 1 -p fast /fast || fail "setstripe -p"
[ "$(S getstripe -p /fast)" = fast ] || fail "getstripe -p /fast: $(S getstripe -p /fast)"
head -c 300000 /dev/urandom >"$T/small"
for i in $(seq 12); do S cp "$T/small" "stria:/fast/f$i"; done
only_on /fast 1 3
[ "$(for i in $(seq 12); do osts /fast/f$i; done | sort -u | paste -sd' ')" = "1 3" ] ||
    fail "files in /fast did not use both of the pool's OSTs"
S getstripe /fast/f1 | grep -q "^lmm_pool: *fast$" || fail "no lmm_pool: $(S getstripe /fast/f1)"
S cp stria:/fast/f7 "$T/back" && cmp "$T/small" "$T/back" || fail "f7 reads back wrong"
S mkdir -c 1 -i 1 /m1
S getdirstripe /m1 | grep -q "lmv_stripe_offset: 1" || fail "/m1 is not on MDT 1"
S setstripe -c -1 --pool pfs.slow /m1 || fail "setstripe --pool FSNAME.POOL"
for i in $(seq 6); do S cp "$T/small" "stria:/m1/f$i"; done
only_on /m1 0 2 4
[ "$(osts /m1/f1)" = "0 2 4" ] || fail "-c -1 in slow: $(osts /m1/f1)"
S setstripe -c 2 -p pfs.fast /one-file || fail "setstripe -p on a new file"
[ "$(osts /one-file)" = "1 3" ] || fail "/one-file: $(osts /one-file)"
refused "pool 'pfs.nosuch' does not exist" setstripe -p nosuch /nofile
S stat /nofile 2>/dev/null && fail "a refused setstripe made /nofile"
refused "is not this cluster's" setstripe -p other.fast /nofile

step "components: each within its pool; -p carries over; -p none stops it"
S mkdir /pfl /carry
S setstripe -E 1M -c 1 -p fast -E -1 -c 2 -p slow /pfl || fail "setstripe -E -p"
head -c $((3 << 20)) /dev/urandom >"$T/big"
for i in 1 2 3; do S cp "$T/big" "stria:/pfl/b$i"; done
for i in 1 2 3; do
    S getstripe "/pfl/b$i" >"$T/gs"
    [ "$(grep -c 'lcme_flags: *init' "$T/gs")" = 2 ] || fail "b$i: not both components instantiated"
    [ "$(grep -o 'lmm_pool: *[a-z]*' "$T/gs" | awk '{print $2}' | paste -sd' ')" = "fast slow" ] ||
        fail "b$i pools: $(cat "$T/gs")"
    first=$(awk '/obdidx/ { n++; next } n == 1 && NF == 4 { print $1 }' "$T/gs" | paste -sd' ')
    second=$(awk '/obdidx/ { n++; next } n == 2 && NF == 4 { print $1 }' "$T/gs" | sort -n | paste -sd' ')
    [[ "$first" == 1 || "$first" == 3 ]] || fail "b$i's first component on $first, not in fast"
    for o in $second; do [[ " 0 2 4 " == *" $o "* ]] || fail "b$i's second component on $o"; done
done
S cp stria:/pfl/b2 "$T/back" && cmp "$T/big" "$T/back" || fail "b2 reads back wrong"
S setstripe -E 1M -c 1 -p fast -E 2M -E -1 -p none /carry || fail "setstripe -E with -p none"
S getstripe /carry | grep -o 'lmm_pool: *[a-z]*' | awk '{print $2}' | paste -sd' ' >"$T/out"
[ "$(cat "$T/out")" = "fast fast" ] || fail "-p does not carry over as lfs's: $(cat "$T/out")"

step "find -pool: the files with a component in the pool"
[ "$(S find /fast -type f -pool fast | wc -l)" = 12 ] || fail "find -pool fast in /fast"
[ "$(S find /pfl -type f -pool pfs.slow | wc -l)" = 3 ] || fail "find -pool pfs.slow in /pfl"
[ -z "$(S find /fast -pool slow)" ] || fail "find -pool slow found files in /fast"

step "df --pool: the pool's OSTs, and their sum"
S df --pool pfs.slow >"$T/df"
[ "$(grep -o 'pfs-OST[0-9a-f]*' "$T/df" | paste -sd' ')" = "pfs-OST0000 pfs-OST0002 pfs-OST0004" ] ||
    fail "df --pool slow lists: $(cat "$T/df")"
grep -q "pfs-MDT0000_UUID" "$T/df" || fail "df --pool lacks the MDTs (lfs shows them)"
sum=$(awk '/OST[0-9a-f]+_UUID/ { t += $2 } END { print t }' "$T/df")
[ "$(awk '/^filesystem_summary:/ { print $2 }' "$T/df")" = "$sum" ] || fail "df --pool summary: $(cat "$T/df")"
[ "$(S df -p fast | grep -c 'OST[0-9a-f]*_UUID')" = 2 ] || fail "df -p fast"
refused "does not exist" df -p nosuch

step "remove and destroy; a pool made just before a file is the file's"
S pool remove pfs.slow OST0004 | grep -qx "OST pfs-OST0004_UUID removed from pool pfs.slow" ||
    fail "pool remove"
S pool new pfs.late >/dev/null && S pool add pfs.late OST0004 >/dev/null
S setstripe -c 1 -p late /late-file || fail "setstripe -p late"
[ "$(osts /late-file)" = 4 ] || fail "/late-file on $(osts /late-file), not the new pool's OST 4"
S pool remove pfs.late OST0004 >/dev/null
S pool destroy pfs.late | grep -qx "Pool pfs.late destroyed" || fail "pool destroy"
S pool list | grep -q late && fail "pfs.late is still listed"

step "the pools survive a restart of stria-mgmtd"
pid=$(daemon_pid mgmtd)
kill -9 "$pid"
# Until it is gone or a zombie: stria up leaves a daemon whose pid still
# runs alone, and under load a killed one may still run for a moment.
dead() {
    local st
    st=$(ps -o stat= -p "$1" 2>/dev/null) || true
    [ -z "$st" ] || [ "${st:0:1}" = Z ]
}
wait_for 10 dead "$pid" || fail "mgmtd $pid did not die"
"$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up after killing mgmtd"
wait_for 20 S pool list pfs.fast || fail "mgmtd did not come back"
printf 'Pools from pfs:\npfs.fast\npfs.slow\n' | diff - <(S pool list) || fail "pools after restart"
S pool list pfs.slow | tail -n +2 | paste -sd' ' >"$T/out"
[ "$(cat "$T/out")" = "pfs-OST0000_UUID pfs-OST0002_UUID" ] || fail "slow after restart: $(cat "$T/out")"
S mkdir /after
S setstripe -c 1 -p slow /after
for i in $(seq 6); do S cp "$T/small" "stria:/after/f$i"; done
only_on /after 0 2
echo PASS
