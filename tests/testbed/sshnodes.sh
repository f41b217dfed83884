#!/usr/bin/env bash
# tests/testbed/sshnodes.sh: bare "nodes" for `stria ondemand`, each a
# network namespace with an sshd (Debian's openssh-server) and a mount
# namespace of its own, joined by a bridge, as the nodes of a job are
# (docs/testbed.md, "Nodes for on-demand file systems"). Nothing of Stria
# runs on them until `stria ondemand` starts it over ssh.
#
#   sshnodes.sh up DIR N DATA    make nodes od1..odN (N <= 8): each binds
#                                DIR/nodes/odI over DATA (the same path on
#                                every node, a disk of its own) and has a
#                                private /run/stria; keys in DIR/ssh, the
#                                node file in DIR/nodefile, ssh options for
#                                `stria ondemand --ssh` in DIR/ssh/options
#   sshnodes.sh down DIR         stop everything on the nodes, remove them
#   sshnodes.sh exec DIR NODE CMD...   run CMD on NODE (its network and mounts)
#   sshnodes.sh kill DIR NODE    SIGKILL every process of NODE but its sshd
#   sshnodes.sh addr DIR NODE    print NODE's address
#
# Addresses 10.202.M.x/24 exist only inside the namespaces. Needs root.
set -euo pipefail

die() { echo "sshnodes: $*" >&2; exit 1; }

load() {
    DIR=$(cd "$1" && pwd)
    [ -f "$DIR/nodes.env" ] || die "$DIR holds no nodes"
    . "$DIR/nodes.env"
}
ns() { echo "${PFX}-$1"; }
addr() { echo "10.202.${NET}.$((10 + ${1#od}))"; }
sshd_pid() { cat "$DIR/run/sshd-$1.pid" 2>/dev/null; }
# CMD on NODE: in its sshd's mount namespace and its network namespace.
on() {
    local n=$1 pid
    shift
    pid=$(sshd_pid "$n") || die "$n has no sshd"
    nsenter -t "$pid" -m -n -- "$@"
}

cmd_up() {
    [ "$(id -u)" -eq 0 ] || die "needs root (network and mount namespaces)"
    [ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd is missing (Debian's openssh-server)"
    local n=$2 data=$3 i h
    [ "$n" -ge 1 ] && [ "$n" -le 8 ] || die "N is 1 to 8"
    case "$data" in /*) ;; *) die "DATA must be an absolute path" ;; esac
    mkdir -p "$1"
    DIR=$(cd "$1" && pwd)
    [ ! -f "$DIR/nodes.env" ] || die "$DIR holds nodes already (sshnodes.sh down $DIR)"
    PFX="od$$"
    NET=$(($$ % 200 + 20))
    echo "PFX=$PFX NET=$NET N=$n DATA=$data" >"$DIR/nodes.env"
    mkdir -p "$DIR/run" "$DIR/log" "$DIR/ssh" "$data" /run/sshd
    chmod 700 "$DIR/ssh"
    ssh-keygen -q -t ed25519 -N "" -f "$DIR/ssh/host_ed25519" -C "sshnodes host"
    ssh-keygen -q -t ed25519 -N "" -f "$DIR/ssh/id_ed25519" -C "sshnodes user"
    cp "$DIR/ssh/id_ed25519.pub" "$DIR/ssh/authorized_keys"
    echo "-i $DIR/ssh/id_ed25519 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR" \
        >"$DIR/ssh/options"
    : >"$DIR/nodefile"
    ip netns add "$(ns sw)"
    ip -n "$(ns sw)" link add br0 type bridge
    ip -n "$(ns sw)" link set br0 up
    for i in $(seq 1 "$n"); do
        h="od$i"
        ip netns add "$(ns "$h")"
        ip -n "$(ns "$h")" link set lo up
        ip link add "q$$$i" type veth peer name eth0 netns "$(ns "$h")"
        ip link set "q$$$i" netns "$(ns sw)"
        ip -n "$(ns sw)" link set "q$$$i" master br0 up
        ip -n "$(ns "$h")" addr add "$(addr "$h")/24" dev eth0
        ip -n "$(ns "$h")" link set eth0 up
        mkdir -p "$DIR/nodes/$h"
        cat >"$DIR/ssh/sshd-$h.conf" <<EOF
ListenAddress $(addr "$h")
Port 22
HostKey $DIR/ssh/host_ed25519
PidFile $DIR/run/sshd-$h.pid
AuthorizedKeysFile $DIR/ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
EOF
        # Its own mounts: DATA is this node's disk, /run/stria its own.
        ip netns exec "$(ns "$h")" unshare -m --propagation private sh -c "
            mkdir -p /run/stria && mount -t tmpfs -o size=16m tmpfs /run/stria &&
            mount --bind '$DIR/nodes/$h' '$data' &&
            exec /usr/sbin/sshd -D -e -f '$DIR/ssh/sshd-$h.conf'" >>"$DIR/log/sshd-$h.log" 2>&1 &
        addr "$h" >>"$DIR/nodefile"
    done
    # Up when every sshd answers a command.
    local opts
    opts=$(cat "$DIR/ssh/options")
    for i in $(seq 1 "$n"); do
        h="od$i"
        local ok=
        for _ in $(seq 1 100); do
            # shellcheck disable=SC2086
            if [ -f "$DIR/run/sshd-$h.pid" ] &&
                ip netns exec "$(ns od1)" ssh $opts -o BatchMode=yes -o ConnectTimeout=2 \
                    "$(addr "$h")" true 2>/dev/null; then
                ok=1
                break
            fi
            sleep 0.1
        done
        [ -n "$ok" ] || die "the sshd of $h does not answer (log: $DIR/log/sshd-$h.log)"
    done
    echo "nodes up in $DIR: od1..od$n ($(head -1 "$DIR/nodefile") ...), node file $DIR/nodefile"
}

cmd_down() {
    load "$1"
    local i h pid
    for i in $(seq 1 "$N"); do
        h="od$i"
        pid=$(sshd_pid "$h" || true)
        # FUSE mounts of the node first: they live in its mount namespace.
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            nsenter -t "$pid" -m -- sh -c \
                "grep ' fuse.stria ' /proc/self/mounts | cut -d' ' -f2 | xargs -r -n1 umount -l" \
                2>/dev/null || true
        fi
    done
    for h in $(seq 1 "$N" | sed 's/^/od/') sw; do
        ip netns pids "$(ns "$h")" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    done
    for h in $(seq 1 "$N" | sed 's/^/od/') sw; do ip netns del "$(ns "$h")" 2>/dev/null || true; done
    rm -f "$DIR/nodes.env"
    echo "nodes in $DIR down"
}

cmd_kill() {
    load "$1"
    local pid self
    self=$(sshd_pid "$2") || die "$2 has no sshd"
    for pid in $(ip netns pids "$(ns "$2")"); do
        [ "$pid" = "$self" ] || kill -9 "$pid" 2>/dev/null || true
    done
}

[ $# -ge 2 ] || { sed -n '2,21p' "$0"; exit 2; }
case "$1" in
up) [ $# -eq 4 ] || die "up DIR N DATA"; cmd_up "$2" "$3" "$4" ;;
down) cmd_down "$2" ;;
exec) load "$2"; shift 2; n=$1; shift; on "$n" "$@" ;;
kill) cmd_kill "$2" "$3" ;;
addr) load "$2"; addr "$3" ;;
*) die "unknown command $1" ;;
esac
