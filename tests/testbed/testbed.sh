#!/usr/bin/env bash
# tests/testbed/testbed.sh: a Stria cluster on six "hosts" of this machine,
# each a network namespace of its own, joined by a bridge (docs/testbed.md).
#
#   testbed.sh up DIR          make the hosts, write every config as an
#                              operator would, start the daemons, mount the
#                              clients at DIR/mnt/cli1 and DIR/mnt/cli2
#   testbed.sh down DIR        unmount, stop everything, remove the hosts
#   testbed.sh exec DIR HOST CMD...   run CMD on HOST (its network only)
#   testbed.sh cut DIR HOST    take HOST's link down (a cable pulled)
#   testbed.sh heal DIR HOST   and up again
#   testbed.sh kill DIR HOST DAEMON / start DIR HOST DAEMON
#
# Hosts: meta (stria-mgmtd and stria-metad, MDT 0), stor1..stor3
# (stria-stord, OSTs 0..2), cli1 and cli2 (stria-fuse mounts). Addresses
# 10.201.N.x/24 exist only inside these namespaces; the bridge lives in a
# namespace of its own, so nothing is added to the machine's own network.
# Needs root (ip netns, mounts). BUILD: the build directory.
set -euo pipefail

BUILD=${BUILD:?BUILD must point at the build directory}
HOSTS=(meta stor1 stor2 stor3 cli1 cli2)
declare -A ADDR_LAST=([meta]=1 [stor1]=11 [stor2]=12 [stor3]=13 [cli1]=21 [cli2]=22)

die() { echo "testbed: $*" >&2; exit 1; }

# The run's names, kept in DIR/testbed.env by up.
load() {
    DIR=$(cd "$1" && pwd)
    [ -f "$DIR/testbed.env" ] || die "$DIR holds no test bed"
    . "$DIR/testbed.env"
}
ns() { echo "${PFX}-$1"; }
addr() { echo "10.201.${NET}.${ADDR_LAST[$1]}"; }
on() { # HOST CMD...: CMD in HOST's network namespace, the machine's mounts
    local h=$1
    shift
    nsenter --net="/run/netns/$(ns "$h")" -- "$@"
}

write_configs() {
    local e="$DIR/etc" mgmt
    mgmt="$(addr meta):7400"
    mkdir -p "$e"/{meta,stor1,stor2,stor3,cli1,cli2}
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$DIR/cluster.key"
    chmod 600 "$DIR/cluster.key"
    for h in "${HOSTS[@]}"; do cp "$DIR/cluster.key" "$e/$h/cluster.key"; done
    cat >"$e/meta/mgmtd.conf" <<EOF
listen = $(addr meta):7400
key_file = $e/meta/cluster.key
data_dir = $DIR/data/meta/mgmt
fsname = bed
offline_after_ms = 3000
log_level = info
EOF
    cat >"$e/meta/metad.conf" <<EOF
listen = $(addr meta):7401
mgmt = $mgmt
key_file = $e/meta/cluster.key
node = meta
mdt = 0:$DIR/data/meta/mdt0
heartbeat_ms = 500
EOF
    for i in 1 2 3; do
        cat >"$e/stor$i/stord.conf" <<EOF
listen = $(addr stor$i):7402
mgmt = $mgmt
key_file = $e/stor$i/cluster.key
node = stor$i
ost = $((i - 1)):$DIR/data/stor$i/ost$((i - 1))
heartbeat_ms = 500
EOF
    done
    for c in cli1 cli2; do
        cat >"$e/$c/client.conf" <<EOF
mgmt = $mgmt
key_file = cluster.key
timeout_ms = ${TESTBED_TIMEOUT_MS:-5000}
EOF
    done
}

# start HOST DAEMON (mgmtd, metad, stord): in the background on HOST.
start_daemon() {
    local h=$1 d=$2 conf
    conf="$DIR/etc/$h/$d.conf"
    mkdir -p "$DIR/log"
    # nsenter execs the daemon, so $! is its pid. Through the function "on"
    # it would be a subshell's, and killing that would orphan the daemon.
    nsenter --net="/run/netns/$(ns "$h")" -- "$BUILD/stria-$d" --config "$conf" \
        >>"$DIR/log/$h-$d.log" 2>&1 &
    echo $! >"$DIR/run/$h-$d.pid"
}

kill_daemon() { # HOST DAEMON [SIGNAL]
    local f="$DIR/run/$1-$2.pid"
    [ -f "$f" ] || return 0
    kill "-${3:-TERM}" "$(cat "$f")" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$(cat "$f")" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
}

cmd_up() {
    [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, mounts)"
    mkdir -p "$1"
    DIR=$(cd "$1" && pwd)
    [ ! -f "$DIR/testbed.env" ] || die "$DIR holds a test bed already (testbed.sh down $DIR)"
    # Names unique to this run: namespaces "sbPID-host", subnet from PID.
    PFX="sb$$"
    NET=$(($$ % 200 + 10))
    echo "PFX=$PFX NET=$NET" >"$DIR/testbed.env"
    mkdir -p "$DIR/run" "$DIR/mnt/cli1" "$DIR/mnt/cli2" "$DIR/log"
    ip netns add "$(ns sw)"
    ip -n "$(ns sw)" link add br0 type bridge
    ip -n "$(ns sw)" link set br0 up
    for h in "${HOSTS[@]}"; do
        ip netns add "$(ns "$h")"
        ip -n "$(ns "$h")" link set lo up
        ip link add "p$$$h" type veth peer name eth0 netns "$(ns "$h")"
        ip link set "p$$$h" netns "$(ns sw)"
        ip -n "$(ns sw)" link set "p$$$h" master br0 up
        ip -n "$(ns "$h")" addr add "$(addr "$h")/24" dev eth0
        ip -n "$(ns "$h")" link set eth0 up
    done
    write_configs
    start_daemon meta mgmtd
    start_daemon meta metad
    for i in 1 2 3; do start_daemon "stor$i" stord; done
    # Up when a client on cli1 sees 1 MDT and 3 OSTs online, and the MDT
    # has heard of them too (it places a file over all three).
    local ok= c="$DIR/etc/cli1/client.conf" stripes
    for _ in $(seq 1 150); do
        if on cli1 "$BUILD/stria" --conf "$c" status 2>/dev/null | grep -c "online" | grep -qx 4 &&
            on cli1 "$BUILD/stria" --conf "$c" setstripe -c -1 /.testbed-probe >/dev/null 2>&1; then
            stripes=$(on cli1 "$BUILD/stria" --conf "$c" getstripe /.testbed-probe |
                grep -cE '^[[:space:]]+[0-9]+[[:space:]]+[0-9]+' || true)
            on cli1 "$BUILD/stria" --conf "$c" rm /.testbed-probe
            if [ "$stripes" = 3 ]; then
                ok=1
                break
            fi
        fi
        sleep 0.2
    done
    [ -n "$ok" ] || die "the cluster did not come up (logs in $DIR/log)"
    for c in cli1 cli2; do
        on "$c" "$BUILD/stria-fuse" -o "conf=$DIR/etc/$c/client.conf" "$DIR/mnt/$c" \
            >>"$DIR/log/$c-fuse.log" 2>&1 || die "cannot mount on $c"
    done
    echo "test bed up in $DIR: meta $(addr meta), stor1..3, cli1 and cli2 at $DIR/mnt/cli{1,2}"
}

cmd_down() {
    load "$1"
    for c in cli1 cli2; do
        fusermount3 -u -z "$DIR/mnt/$c" 2>/dev/null || umount -l "$DIR/mnt/$c" 2>/dev/null || true
    done
    for f in "$DIR"/run/*.pid; do
        [ -f "$f" ] || continue
        local b
        b=$(basename "$f" .pid)
        kill_daemon "${b%%-*}" "${b#*-}"
    done
    pkill -f "stria-fuse -o conf=$DIR/etc/" 2>/dev/null || true
    # Whatever still runs in a namespace of the test bed goes too.
    for h in "${HOSTS[@]}" sw; do
        ip netns pids "$(ns "$h")" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    done
    for h in "${HOSTS[@]}" sw; do ip netns del "$(ns "$h")" 2>/dev/null || true; done
    rm -f "$DIR/testbed.env"
    echo "test bed in $DIR down"
}

[ $# -ge 2 ] || { sed -n '2,20p' "$0"; exit 2; }
cmd=$1
shift
case $cmd in
up) cmd_up "$1" ;;
down) cmd_down "$1" ;;
exec) load "$1"; h=$2; shift 2; on "$h" "$@" ;;
cut) load "$1"; ip -n "$(ns "$2")" link set eth0 down ;;
heal) load "$1"; ip -n "$(ns "$2")" link set eth0 up ;;
kill) load "$1"; kill_daemon "$2" "$3" "${4:-KILL}" ;;
start) load "$1"; start_daemon "$2" "$3" ;;
*) die "unknown command $cmd (up, down, exec, cut, heal, kill, start)" ;;
esac
