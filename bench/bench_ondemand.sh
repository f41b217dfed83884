#!/usr/bin/env bash
# bench/bench_ondemand.sh BUILD_DIR: on-demand file systems (issue 23) on
# nodes reached over ssh (tests/testbed/sshnodes.sh: a network and mount
# namespace and an sshd each), in one run:
# - start and stop of a 4-node file system (3 times; the median), beside
#   the floor any ssh-driven start pays: one `ssh NODE true` to every node
#   at once;
# - aggregate checkpoint write with 1, 2 and 4 nodes: every node writes a
#   shard of SHARD_MB and fsyncs it, at once, into the mount, beside the
#   same writes into each node's own DATA directory (the local disk);
# - stage-in of STAGE_MB (16 files) with 1, 2 and 4 nodes (stria pcp),
#   beside cp -r of it into the mount from one node (each file fsynced, as
#   pcp does).
# Everything shares this machine's 2 cores and one disk: the note says
# what bounds what. Output also in bench/results/last-run-ondemand.txt.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/lib.sh"
bench_setup $# "${1:-}" stria stria-stord stria-fuse
SHARD_MB=${SHARD_MB:-256}
STAGE_MB=${STAGE_MB:-2048}
OUT="$RESULTS/last-run-ondemand.txt"
[ "$(id -u)" -eq 0 ] || { echo "bench_ondemand: needs root (namespaces, mounts)"; exit 77; }
[ -x /usr/sbin/sshd ] || { echo "bench_ondemand: needs /usr/sbin/sshd (openssh-server)"; exit 77; }

TB=$(mktemp -d "${TMPDIR:-/tmp}/stria-bench-od.XXXXXX")
DATA="$TB/data"
MNT="$TB/mnt"
NODES="$SRC/tests/testbed/sshnodes.sh"
cleanup() {
    set +e
    "$NODES" down "$TB/bed" >/dev/null 2>&1
    rm -rf "$TB"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

node() { "$NODES" exec "$TB/bed" "$@"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
mibs() { awk -v m="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.1f", m / s; else printf "-" }'; }
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

"$NODES" up "$TB/bed" 4 "$DATA" >/dev/null
SSHOPT=$(cat "$TB/bed/ssh/options")
head -n 1 "$TB/bed/nodefile" >"$TB/nodes1"
head -n 2 "$TB/bed/nodefile" >"$TB/nodes2"
cp "$TB/bed/nodefile" "$TB/nodes4"
od() { # od NODEFILE ARGS...
    local nf=$1
    shift
    node od1 "$BUILD/stria" ondemand "$@" --nodefile "$nf" --ssh "$SSHOPT"
}
mkdir -p "$TB/global/set"
for i in $(seq 1 16); do head -c $((STAGE_MB / 16 << 20)) /dev/urandom >"$TB/global/set/f$i"; done
sync

{
    echo "bench_ondemand: $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); nodes: network and mount namespaces with an sshd each, on this one machine"
    echo
    echo "-- start and stop of a 4-node file system (2 MDTs, striped over every OST)"
    starts=() stops=() floors=()
    for r in 1 2 3; do
        t0=$(now)
        # shellcheck disable=SC2086
        for a in $(cat "$TB/nodes4"); do node od1 ssh $SSHOPT -o BatchMode=yes "$a" true & done
        wait
        floors+=("$(secs "$t0" "$(now)")")
        out=$(od "$TB/nodes4" start --data-dir "$DATA" --mount "$MNT" --mdts 2 --stripe-all)
        starts+=("$(sed -n 's/.*started in \([0-9.]*\) s.*/\1/p' <<<"$out")")
        out=$(od "$TB/nodes4" stop --cleanup)
        stops+=("$(sed -n 's/.* in \([0-9.]*\) s$/\1/p' <<<"$out")")
    done
    fl=$(median3 "${floors[@]}")
    st=$(median3 "${starts[@]}")
    sp=$(median3 "${stops[@]}")
    echo "ssh true to 4 nodes at once: ${floors[*]} s (median $fl s)"
    echo "start: ${starts[*]} s (median $st s, $(ratio "$st" "$fl") x the ssh floor)"
    echo "stop --cleanup: ${stops[*]} s (median $sp s)"
    echo
    echo "-- aggregate checkpoint write: every node a ${SHARD_MB} MiB shard, fsync, at once"
    for k in 1 2 4; do
        od "$TB/nodes$k" start --data-dir "$DATA" --mount "$MNT" --stripe-all >/dev/null
        t0=$(now)
        for i in $(seq 1 "$k"); do
            node "od$i" dd if=/dev/zero of="$MNT/shard$i" bs=4M count=$((SHARD_MB / 4)) conv=fsync status=none &
        done
        wait
        tf=$(secs "$t0" "$(now)")
        t0=$(now)
        for i in $(seq 1 "$k"); do
            node "od$i" dd if=/dev/zero of="$DATA/local-shard" bs=4M count=$((SHARD_MB / 4)) conv=fsync status=none &
        done
        wait
        tl=$(secs "$t0" "$(now)")
        for i in $(seq 1 "$k"); do node "od$i" rm -f "$DATA/local-shard"; done
        od "$TB/nodes$k" stop --cleanup >/dev/null
        echo "$k node(s): stria $(mibs $((k * SHARD_MB)) "$tf") MiB/s ($tf s), local disks $(mibs $((k * SHARD_MB)) "$tl") MiB/s ($tl s), ratio $(ratio "$tl" "$tf")"
    done
    echo
    echo "-- stage-in of ${STAGE_MB} MiB (16 files) with stria pcp"
    for k in 1 2 4; do
        od "$TB/nodes$k" start --data-dir "$DATA" --mount "$MNT" --stripe-all >/dev/null
        sync
        t0=$(now)
        node od1 sh -c "cp -r '$TB/global/set' '$MNT/cp-set' && sync '$MNT'/cp-set/*"
        tc=$(secs "$t0" "$(now)")
        node od1 rm -rf "$MNT/cp-set"
        t0=$(now)
        node od1 "$BUILD/stria" pcp --quiet --nodefile "$TB/nodes$k" --ssh "$SSHOPT" "$TB/global/set" "$MNT/" >/dev/null
        tp=$(secs "$t0" "$(now)")
        node od2 cmp -s "$TB/global/set/f16" "$MNT/set/f16" 2>/dev/null || node od1 cmp -s "$TB/global/set/f16" "$MNT/set/f16" ||
            { echo "stage-in: f16 differs"; exit 1; }
        od "$TB/nodes$k" stop --cleanup >/dev/null
        echo "$k node(s): pcp $(mibs "$STAGE_MB" "$tp") MiB/s ($tp s), cp -r from one node $(mibs "$STAGE_MB" "$tc") MiB/s ($tc s), ratio $(ratio "$tc" "$tp")"
    done
    echo
    echo "done $(date -u +%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
} 2>&1 | tee "$OUT.new"
mv "$OUT.new" "$OUT"
