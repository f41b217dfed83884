#!/usr/bin/env bash
# contrib/slurm's prolog and epilog under Debian's Slurm (slurm-wlm 22.05):
# slurmctld on a fifth node (od5, the controller and login node), a slurmd
# on each of four nodes od1..od4 (sshnodes.sh: a network and mount
# namespace each, an sshd each), munge, PrologFlags=Alloc, the prolog and
# epilog of contrib/slurm. Jobs are submitted as user nobody.
#  1. a batch job with --constraint=stria on 4 nodes: inside it, every node
#     writes a shard and reads every shard through the mount, which is the
#     job user's; after it, nothing of it is left on any node;
#  2. a job that does not ask gets none;
#  3. an interactive srun that asks gets one (PrologFlags=Alloc), stopped
#     after it;
#  4. a job that asks the prolog for stage-in (the job script's) is cancelled with a
#     message in its stderr file; no node is drained;
#  5. a node whose share cannot start: the job is cancelled and says which
#     node, the others are stopped again, that node alone is drained.
#
# What is real: slurmctld, slurmd, slurmstepd, munged, sbatch, srun and
# scontrol as Debian ships them; the prolog and epilog run by slurmd as
# root; `stria ondemand` over ssh between the nodes. What stands in: the
# nodes are namespaces of one machine (one kernel, one hostname, one
# munged for all, node names resolved by an /etc/hosts bound over the
# nodes' own), a cgroup tmpfs on each node's /sys/fs/cgroup (slurmd
# refuses to start without one, and `ip netns` gives each node a /sys of
# its own), and a wrapper that points the scripts at a settings file in
# the test's directory instead of /etc/stria/ondemand.conf.
# Exits 77 (skipped, loudly) without root, network namespaces, sshd,
# /dev/fuse, or Slurm and munge (scripts/bootstrap.sh installs them).
set -euo pipefail
BUILD=${BUILD:?BUILD must point at the build directory}
BUILD=$(cd "$BUILD" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
skip() { echo "SKIPPED: slurm prolog/epilog: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root"
[ -x /usr/sbin/sshd ] || skip "no /usr/sbin/sshd (Debian's openssh-server)"
for p in slurmctld slurmd slurmstepd sbatch srun scontrol munged mungekey; do
    command -v "$p" >/dev/null || skip "no $p (Debian's slurm-wlm and munge: scripts/bootstrap.sh)"
done
ip netns add "slprobe$$" 2>/dev/null || skip "cannot make network namespaces"
ip netns del "slprobe$$"
[ -c /dev/fuse ] && [ -w /dev/fuse ] && command -v fusermount3 >/dev/null || skip "no usable /dev/fuse"

T0=$(date +%s)
TB=$(mktemp -d "${TMPDIR:-/tmp}/stria-slurm.XXXXXX")
chmod 755 "$TB" # the job user reaches its job directory and munge's socket
DATA="$TB/data"
# Each node's own (sshnodes.sh: a private tmpfs on /run/stria), as /mnt is.
MNT=/run/stria/mnt
cleanup() {
    local rc=$?
    set +e
    "$HERE/sshnodes.sh" down "$TB/bed" >/dev/null 2>&1
    if [ $rc -ne 0 ]; then
        echo "---- logs (test failed) ----"
        tail -n 30 "$TB"/log/stria-slurm.log "$TB"/slurm/log/*.log 2>/dev/null
        tail -n 8 "$TB"/bed/nodes/*/stria-*/log/*.log 2>/dev/null
    fi
    rm -rf "$TB"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
node() { "$HERE/sshnodes.sh" exec "$TB/bed" "$@"; }
# Slurm's commands on the login node od5: as root, and as the job user.
sl() { node od5 env SLURM_CONF="$TB/slurm/slurm.conf" "$@"; }
user() { node od5 setpriv --reuid=65534 --regid=65534 --clear-groups env SLURM_CONF="$TB/slurm/slurm.conf" "$@"; }
stria_procs() {
    local pfx
    pfx=$(. "$TB/bed/nodes.env" && echo "$PFX")
    ip netns pids "$pfx-$1" | xargs -r ps -o comm= -p 2>/dev/null |
        grep -E '^stria(-mgmtd|-metad|-stord|-fuse)?$' || true
}
state() { sl scontrol show job "$1" -o | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
# wait_job ID STATE SECONDS
wait_job() {
    local s=
    for _ in $(seq 1 $(($3 * 5))); do
        s=$(state "$1")
        [ "$s" = "$2" ] && return 0
        case "$s" in COMPLETED | CANCELLED | FAILED | TIMEOUT | NODE_FAIL) break ;; esac
        sleep 0.2
    done
    fail "job $1 is $s, not $2, after $3 s ($(sl scontrol show job "$1" | grep -E 'Reason|ExitCode' | tr -s ' '))"
}
nodes_state() { sl sinfo -h -N -o '%N=%t' | sort | tr '\n' ' '; }
# Nothing of job $1 on any node: daemons, mount, data, mount point.
nothing_left() {
    local i
    for i in 1 2 3 4; do
        [ -z "$(stria_procs "od$i")" ] || fail "$(stria_procs "od$i" | tr '\n' ' ')still run on od$i after job $1"
        node "od$i" grep -q " $MNT/$1 " /proc/self/mounts && fail "od$i still mounts job $1's file system"
        node "od$i" test -e "$MNT/$1" && fail "od$i still has job $1's mount point"
        [ ! -e "$TB/bed/nodes/od$i/stria-job$1" ] || fail "od$i still holds job $1's data"
    done
    return 0
}

step "five nodes (od5: controller and login node), an sshd each"
"$HERE/sshnodes.sh" up "$TB/bed" 5 "$DATA" >/dev/null
mkdir -p "$TB/etc" "$TB/munge" "$TB/slurm/state" "$TB/slurm/log" "$TB/log" "$TB/jobs"
{
    echo "127.0.0.1 localhost $(hostname)"
    for i in 1 2 3 4 5; do echo "$("$HERE/sshnodes.sh" addr "$TB/bed" "od$i") od$i"; done
} >"$TB/etc/hosts"
for i in 1 2 3 4 5; do
    node "od$i" mount --bind "$TB/etc/hosts" /etc/hosts
done
for i in 1 2 3 4; do
    node "od$i" sh -c 'mount -t tmpfs -o size=1m,mode=755 cgroup_root /sys/fs/cgroup &&
        mkdir /sys/fs/cgroup/systemd && mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd'
done
chown 65534:65534 "$TB/jobs"

step "munge and Slurm: slurmctld on od5, slurmd on od1..od4"
mungekey -c -k "$TB/munge/munge.key"
node od5 munged --key-file="$TB/munge/munge.key" --socket="$TB/munge/sock" --pid-file="$TB/munge/pid" \
    --log-file="$TB/munge/log" --seed-file="$TB/munge/seed"
# The settings of the scripts, and the scripts as slurmd runs them (no
# arguments: a wrapper names the settings).
cat >"$TB/etc/ondemand.conf" <<EOF
STRIA=$BUILD/stria
DATA_DIR=$DATA
MOUNT="$MNT/\$SLURM_JOB_ID"
MDTS=2
TIMEOUT=5
SSH_OPTS="$(cat "$TB/bed/ssh/options")"
LOG_FILE=$TB/log/stria-slurm.log
DRAIN_FAILED_NODES=yes
STOP_WAIT=30
EOF
chmod 644 "$TB/etc/ondemand.conf"
for s in prolog epilog; do
    printf '#!/bin/sh\nexport STRIA_ONDEMAND_CONF=%s\nexec %s\n' "$TB/etc/ondemand.conf" \
        "$REPO/contrib/slurm/stria-$s.sh" >"$TB/etc/$s.sh"
    chmod 755 "$TB/etc/$s.sh"
done
cat >"$TB/slurm/slurm.conf" <<EOF
ClusterName=striatest
SlurmctldHost=$(hostname -s)($("$HERE/sshnodes.sh" addr "$TB/bed" od5))
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$TB/munge/sock
StateSaveLocation=$TB/slurm/state
SlurmdSpoolDir=$TB/slurm/spool-%n
SlurmctldPidFile=$TB/slurm/slurmctld.pid
SlurmdPidFile=$TB/slurm/slurmd-%n.pid
SlurmctldLogFile=$TB/slurm/log/slurmctld.log
SlurmdLogFile=$TB/slurm/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
MpiDefault=none
ReturnToService=2
Prolog=$TB/etc/prolog.sh
Epilog=$TB/etc/epilog.sh
PrologFlags=Alloc
PrologEpilogTimeout=120
KillWait=5
MinJobAge=600
NodeName=od[1-4] CPUs=2 RealMemory=100 Features=stria State=UNKNOWN
PartitionName=test Nodes=od[1-4] Default=YES MaxTime=10 State=UP
EOF
node od5 slurmctld -f "$TB/slurm/slurm.conf"
for i in 1 2 3 4; do
    node "od$i" slurmd -f "$TB/slurm/slurm.conf" -N "od$i"
done
up=
for _ in $(seq 1 100); do
    [ "$(nodes_state 2>/dev/null)" = "od1=idle od2=idle od3=idle od4=idle " ] && up=1 && break
    sleep 0.2
done
[ -n "$up" ] || fail "the slurmds are not idle: $(nodes_state)"
T_UP=$(($(date +%s) - T0))

step "a batch job asks (--constraint=stria, 4 nodes): every node writes and reads through the mount"
cat >"$TB/jobs/ask.sh" <<EOF
#!/bin/bash
set -e
export M=$MNT/\$SLURM_JOB_ID
echo "owner \$(stat -c %U:%a "\$M") type \$(grep " \$M " /proc/self/mounts | cut -d' ' -f3)"
srun -N4 -n4 bash -c 'head -c 4000000 /dev/urandom >"\$M/shard-\$SLURMD_NODENAME" && sync "\$M/shard-\$SLURMD_NODENAME" && echo "wrote \$SLURMD_NODENAME"'
srun -N4 -n4 bash -c 'cd "\$M" && echo "sum \$(cat shard-od1 shard-od2 shard-od3 shard-od4 | md5sum | cut -c1-32) on \$SLURMD_NODENAME"'
EOF
cat >"$TB/jobs/none.sh" <<EOF
#!/bin/bash
[ -e $MNT/\$SLURM_JOB_ID ] && echo "a mount point" || echo "no mount point"
sleep 3
EOF
cat >"$TB/jobs/inter.sh" <<EOF
#!/bin/bash
M=$MNT/\$SLURM_JOB_ID
echo \$SLURM_JOB_ID >"\$M/from-\$SLURMD_NODENAME" && sync
for _ in \$(seq 1 50); do [ "\$(ls "\$M" | wc -l)" = 2 ] && break; sleep 0.2; done
echo "job \$SLURM_JOB_ID \$SLURMD_NODENAME sees \$(ls "\$M" | tr '\n' ' ')"
EOF
chmod 755 "$TB"/jobs/*.sh
A=$(user sbatch --parsable -D "$TB/jobs" -N4 --constraint=stria -o a.out ask.sh)
wait_job "$A" COMPLETED 120
out=$(cat "$TB/jobs/a.out")
grep -q "owner nobody:700 type fuse.stria" <<<"$out" || fail "the mount is not the job user's stria mount: $out"
[ "$(grep -c '^wrote od' <<<"$out")" = 4 ] || fail "not every node wrote its shard: $out"
[ "$(grep '^sum ' <<<"$out" | cut -d' ' -f2 | sort -u | wc -l)" = 1 ] &&
    [ "$(grep -c '^sum ' <<<"$out")" = 4 ] || fail "the nodes read different bytes: $out"
grep -q "job=$A node=od1 ondemand-start: on-demand file system job$A: 4 nodes" "$TB/log/stria-slurm.log" ||
    fail "the prolog did not say what it started"
nothing_left "$A"
[ "$(nodes_state)" = "od1=idle od2=idle od3=idle od4=idle " ] || fail "nodes after job $A: $(nodes_state)"
echo "   $(sed -n "s/.*job=$A .*started in \([0-9.]*\) s.*/prolog: started in \1 s/p; s/.*job=$A .*stopped seconds=\(.*\)/epilog: stopped in \1 s/p" "$TB/log/stria-slurm.log" | tr '\n' ' ')"

step "a job that does not ask gets none"
B=$(user sbatch --parsable -D "$TB/jobs" -N4 -o b.out none.sh)
wait_job "$B" RUNNING 30
for i in 1 2 3 4; do
    [ -z "$(stria_procs "od$i")" ] || fail "stria runs on od$i for a job that did not ask"
done
wait_job "$B" COMPLETED 30
grep -q "no mount point" "$TB/jobs/b.out" || fail "job $B has a mount point: $(cat "$TB/jobs/b.out")"
grep -q "job=$B " "$TB/log/stria-slurm.log" && fail "the scripts acted for job $B, which did not ask"

step "an interactive srun that asks gets one"
out=$(user srun -D "$TB/jobs" -N2 --constraint=stria ./inter.sh 2>&1) || fail "srun: $out"
C=$(sed -n 's/^job \([0-9]*\) .*/\1/p' <<<"$out" | head -1)
[ "$(grep -c "sees from-od[1-4] from-od[1-4] $" <<<"$out")" = 2 ] || fail "the srun's tasks do not share a mount: $out"
wait_job "$C" COMPLETED 60
nothing_left "$C"

step "a job that asks the prolog for stage-in: cancelled, told why, no node drained"
D=$(user sbatch --parsable -D "$TB/jobs" -N2 --constraint=stria --comment "stria-stage-in=/global/in" \
    -o d.out none.sh)
wait_job "$D" CANCELLED 60
grep -q "stage-in (stria-stage-in=/global/in) is not done by the prolog" "$TB/jobs/d.out" ||
    fail "job $D's stderr does not say why: $(cat "$TB/jobs/d.out" 2>&1)"
grep -q "a mount point" "$TB/jobs/d.out" && fail "job $D ran"
nothing_left "$D"
[ "$(nodes_state)" = "od1=idle od2=idle od3=idle od4=idle " ] || fail "nodes after job $D: $(nodes_state)"

step "a node cannot start its share: the job is cancelled, names it, the others stop; that node is drained"
E=$(user sbatch --parsable -H -D "$TB/jobs" -N4 --constraint=stria -o e.out none.sh)
touch "$TB/bed/nodes/od3/stria-job$E" # od3's DATA_DIR/stria-jobE cannot be made
sl scontrol release "$E"
wait_job "$E" CANCELLED 90
grep -q "on node od3 failed" "$TB/jobs/e.out" || fail "job $E's stderr does not name od3: $(cat "$TB/jobs/e.out" 2>&1)"
grep -q "a mount point" "$TB/jobs/e.out" && fail "job $E ran"
rm -f "$TB/bed/nodes/od3/stria-job$E"
nothing_left "$E"
sl sinfo -h -R -o '%N %E' | grep -q "^od3 stria ondemand: job $E failed to start here" ||
    fail "od3 is not drained: $(sl sinfo -h -R -o '%N %E')"
[ "$(nodes_state)" = "od1=idle od2=idle od3=drain od4=idle " ] || fail "nodes after job $E: $(nodes_state)"

echo "slurm up in ${T_UP} s; whole test $(($(date +%s) - T0)) s"
echo "PASS"
