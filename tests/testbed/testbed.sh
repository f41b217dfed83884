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
#   testbed.sh rate DIR HOST MBIT|off   limit HOST's link to MBIT Mbit/s
#                              each way (tc tbf), or lift the limit
#   testbed.sh s3rate DIR HOST MBIT|off   limit only what HOST sends to
#                              and receives from the s3 host (its way to
#                              S3), leaving the cluster's network as it is
#   testbed.sh addr DIR HOST   print HOST's address
#
# Hosts: meta (stria-mgmtd and stria-metad, MDT 0), stor1..stor3
# (stria-stord, OSTs 0..2), cli1 and cli2 (stria-fuse mounts). Addresses
# 10.201.N.x/24 exist only inside these namespaces; the bridge lives in a
# namespace of its own, so nothing is added to the machine's own network.
# Needs root (ip netns, mounts). BUILD: the build directory.
# At up: STOR_HOSTS=K (1..3, default 3) makes only stor1..storK (OSTs
# 0..K-1); TESTBED_S3=1 adds a host s3 (.31) running s3rver (tests/s3) on
# its address, port 4568, and gives the stords its credentials.
set -euo pipefail

BUILD=${BUILD:?BUILD must point at the build directory}
declare -A ADDR_LAST=([meta]=1 [stor1]=11 [stor2]=12 [stor3]=13 [cli1]=21 [cli2]=22 [s3]=31)
S3_PORT=4568
S3RVER="$(cd "$(dirname "$0")/.." && pwd)/s3/node_modules/.bin/s3rver"

die() { echo "testbed: $*" >&2; exit 1; }

# HOSTS and STORS from STOR (the number of storage hosts) and S3 (0 or 1).
set_hosts() {
    local i
    STORS=()
    for i in $(seq 1 "$STOR"); do STORS+=("stor$i"); done
    HOSTS=(meta "${STORS[@]}" cli1 cli2)
    [ "$S3" = 1 ] && HOSTS+=(s3)
    return 0
}

# The run's names and shape, kept in DIR/testbed.env by up. A bed made
# before STOR and S3 were recorded has three storage hosts and no s3.
load() {
    DIR=$(cd "$1" && pwd)
    [ -f "$DIR/testbed.env" ] || die "$DIR holds no test bed"
    STOR=3 S3=0
    . "$DIR/testbed.env"
    set_hosts
}
ns() { echo "${PFX}-$1"; }
addr() {
    [[ " ${HOSTS[*]} " == *" $1 "* ]] || die "no host $1 here (hosts: ${HOSTS[*]})"
    echo "10.201.${NET}.${ADDR_LAST[$1]}"
}
on() { # HOST CMD...: CMD in HOST's network namespace, the machine's mounts
    local h=$1
    shift
    nsenter --net="/run/netns/$(ns "$h")" -- "$@"
}

write_configs() {
    local e="$DIR/etc" mgmt
    mgmt="$(addr meta):7400"
    for h in "${HOSTS[@]}"; do mkdir -p "$e/$h"; done
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
    for i in $(seq 1 "$STOR"); do
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

# start HOST DAEMON (mgmtd, metad, stord; s3rver on s3): in the
# background on HOST.
start_daemon() {
    local h=$1 d=$2 conf
    conf="$DIR/etc/$h/$d.conf"
    mkdir -p "$DIR/log"
    # nsenter execs the daemon (env execs in turn), so $! is its pid.
    # Through the function "on" it would be a subshell's, and killing that
    # would orphan the daemon.
    if [ "$d" = s3rver ]; then
        mkdir -p "$DIR/data/s3"
        # s3rver's continuation tokens use DES, in OpenSSL's legacy provider.
        nsenter --net="/run/netns/$(ns "$h")" -- env NODE_OPTIONS=--openssl-legacy-provider \
            "$S3RVER" -d "$DIR/data/s3" -a "$(addr s3)" -p "$S3_PORT" --silent \
            >>"$DIR/log/$h-$d.log" 2>&1 &
    elif [ "$d" = stord ] && [ "$S3" = 1 ]; then
        # The movers sign with the daemon's environment: s3rver's keys.
        nsenter --net="/run/netns/$(ns "$h")" -- env AWS_ACCESS_KEY_ID=S3RVER \
            AWS_SECRET_ACCESS_KEY=S3RVER AWS_DEFAULT_REGION=us-east-1 \
            "$BUILD/stria-$d" --config "$conf" >>"$DIR/log/$h-$d.log" 2>&1 &
    else
        nsenter --net="/run/netns/$(ns "$h")" -- "$BUILD/stria-$d" --config "$conf" \
            >>"$DIR/log/$h-$d.log" 2>&1 &
    fi
    echo $! >"$DIR/run/$h-$d.pid"
}

# rate_clear CMD HOST MBIT: lift HOST's limits; then, unless MBIT is off
# (status 1), check it and set PORT (HOST's port of the bridge) and BURST.
rate_clear() {
    addr "$2" >/dev/null
    PORT="p${PFX#sb}$2"
    tc -n "$(ns "$2")" qdisc del dev eth0 root 2>/dev/null || true
    tc -n "$(ns sw)" qdisc del dev "$PORT" root 2>/dev/null || true
    [ "$3" = off ] && return 1
    [[ "$3" =~ ^[1-9][0-9]{0,5}$ ]] || die "$1: MBIT is a whole number of Mbit/s, or off"
    BURST=$(($3 * 1000000 / 8 / 100))
    [ "$BURST" -ge 65536 ] || BURST=65536
}

# rate HOST MBIT|off: HOST's link at MBIT Mbit/s each way, as a slower
# NIC would be: tbf on the host's eth0 (what it sends) and on its port of
# the bridge (what it receives). Bursts of 10 ms, queues of at most 50 ms.
# The qdiscs go with the namespaces at down.
set_rate() {
    local h=$1 m=$2 port burst
    rate_clear rate "$h" "$m" || return 0
    port=$PORT burst=$BURST
    tc -n "$(ns "$h")" qdisc add dev eth0 root tbf rate "${m}mbit" burst "$burst" latency 50ms
    tc -n "$(ns sw)" qdisc add dev "$port" root tbf rate "${m}mbit" burst "$burst" latency 50ms
}

# s3rate HOST MBIT|off: HOST's way to S3 at MBIT Mbit/s each way, the rest
# of its link as it is: a cluster's nodes reach S3 through a gateway or an
# uplink slower than the fabric between them. htb on the host's eth0 with
# what goes to the s3 host in a class of its own, and the same on the
# host's port of the bridge for what comes from it. Replaces a rate.
set_s3rate() {
    local h=$1 m=$2 port burst s3 d
    s3=$(addr s3)
    rate_clear s3rate "$h" "$m" || return 0
    port=$PORT burst=$BURST
    for d in "$(ns "$h") eth0 dst" "$(ns sw) $port src"; do
        set -- $d
        tc -n "$1" qdisc add dev "$2" root handle 1: htb default 20
        tc -n "$1" class add dev "$2" parent 1: classid 1:10 htb rate "${m}mbit" ceil "${m}mbit" \
            burst "$burst" cburst "$burst" quantum 65536
        tc -n "$1" class add dev "$2" parent 1: classid 1:20 htb rate 100gbit ceil 100gbit quantum 65536
        tc -n "$1" filter add dev "$2" parent 1: protocol ip prio 1 u32 match ip "$3" "$s3/32" flowid 1:10
    done
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
    STOR=${STOR_HOSTS:-3}
    S3=${TESTBED_S3:-0}
    [[ "$STOR" =~ ^[1-3]$ ]] || die "STOR_HOSTS is 1, 2 or 3"
    [[ "$S3" =~ ^[01]$ ]] || die "TESTBED_S3 is 0 or 1"
    [ "$S3" = 0 ] || [ -x "$S3RVER" ] || die "$S3RVER is missing (scripts/bootstrap.sh)"
    set_hosts
    # Names unique to this run: namespaces "sbPID-host", subnet from PID.
    PFX="sb$$"
    NET=$(($$ % 200 + 10))
    echo "PFX=$PFX NET=$NET STOR=$STOR S3=$S3" >"$DIR/testbed.env"
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
    [ "$S3" = 0 ] || start_daemon s3 s3rver
    start_daemon meta mgmtd
    start_daemon meta metad
    for h in "${STORS[@]}"; do start_daemon "$h" stord; done
    # Up when a client on cli1 sees 1 MDT and every OST online, and the MDT
    # has heard of them too (it places a file over all of them).
    local ok= c="$DIR/etc/cli1/client.conf" stripes
    for _ in $(seq 1 150); do
        if on cli1 "$BUILD/stria" --conf "$c" status 2>/dev/null | grep -c "online" | grep -qx "$((STOR + 1))" &&
            on cli1 "$BUILD/stria" --conf "$c" setstripe -c -1 /.testbed-probe >/dev/null 2>&1; then
            stripes=$(on cli1 "$BUILD/stria" --conf "$c" getstripe /.testbed-probe |
                grep -cE '^[[:space:]]+[0-9]+[[:space:]]+[0-9]+' || true)
            on cli1 "$BUILD/stria" --conf "$c" rm /.testbed-probe
            if [ "$stripes" = "$STOR" ]; then
                ok=1
                break
            fi
        fi
        sleep 0.2
    done
    [ -n "$ok" ] || die "the cluster did not come up (logs in $DIR/log)"
    if [ "$S3" = 1 ]; then
        # Any HTTP answer (even 403) means it listens.
        ok=
        for _ in $(seq 1 150); do
            if on cli1 curl -s -o /dev/null --max-time 1 "http://$(addr s3):$S3_PORT/"; then
                ok=1
                break
            fi
            sleep 0.2
        done
        [ -n "$ok" ] || die "s3rver did not answer on $(addr s3):$S3_PORT (logs in $DIR/log)"
    fi
    for c in cli1 cli2; do
        on "$c" "$BUILD/stria-fuse" -o "conf=$DIR/etc/$c/client.conf" "$DIR/mnt/$c" \
            >>"$DIR/log/$c-fuse.log" 2>&1 || die "cannot mount on $c"
    done
    local s3=
    [ "$S3" = 0 ] || s3=", s3rver at http://$(addr s3):$S3_PORT"
    echo "test bed up in $DIR: meta $(addr meta), stor1..$STOR, cli1 and cli2 at $DIR/mnt/cli{1,2}$s3"
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

[ $# -ge 2 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2; }
cmd=$1
shift
case $cmd in
up) cmd_up "$1" ;;
down) cmd_down "$1" ;;
exec) load "$1"; h=$2; shift 2; on "$h" "$@" ;;
rate) load "$1"; set_rate "$2" "${3:?rate DIR HOST MBIT|off}" ;;
s3rate) load "$1"; set_s3rate "$2" "${3:?s3rate DIR HOST MBIT|off}" ;;
addr) load "$1"; addr "$2" ;;
cut) load "$1"; ip -n "$(ns "$2")" link set eth0 down ;;
heal) load "$1"; ip -n "$(ns "$2")" link set eth0 up ;;
kill) load "$1"; kill_daemon "$2" "$3" "${4:-KILL}" ;;
start) load "$1"; start_daemon "$2" "$3" ;;
*) die "unknown command $cmd (up, down, exec, cut, heal, kill, start, rate, s3rate, addr)" ;;
esac
