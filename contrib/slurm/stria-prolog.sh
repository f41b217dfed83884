#!/bin/bash
# Slurm Prolog (PrologFlags=Alloc): an on-demand Stria file system on the
# job's nodes, for jobs that ask with --constraint=stria (contrib/slurm/
# README.md).
#
# Slurm runs it on every node of the job at allocation; only the job's
# first node acts: it runs `stria ondemand start` over ssh on every node,
# and gives the mount's root to the job's user. Slurm starts the batch
# script when the first node's prolog is done; salloc and srun wait for
# every node's prolog.
#
# On failure it stops what was started, says why (the job's stderr file,
# LOG_FILE, syslog) and cancels the job, then exits 0: a nonzero exit
# would drain this node and hold the job, although the fault may be
# another node's or the job's own. Only if the job cannot be cancelled
# does it exit 1, so that Slurm never runs the job without its file
# system. DRAIN_FAILED_NODES=yes drains the nodes that failed to start.
HERE=$(dirname "$(readlink -f "$0")")
# shellcheck source=stria-slurm-common.sh
. "$HERE/stria-slurm-common.sh"

# Tell the job's user, in the job's stderr file (batch jobs only), as the
# user: the job never starts, so the line stays there.
tell_user() {
    local info path
    info=$(scontrol show job "$JOB" 2>/dev/null) || return 0
    grep -q 'BatchFlag=1' <<<"$info" || return 0
    path=$(sed -n 's/^ *StdErr=//p' <<<"$info" | head -n 1)
    [ -n "$path" ] || return 0
    path=${path//%N/$(hostname -s)}
    setpriv --reuid="$SLURM_JOB_UID" --regid="$SLURM_JOB_GID" --init-groups -- \
        sh -c 'printf "%s\n" "$2" >>"$1"' sh "$path" "$1" 2>/dev/null || true
}

fail() {
    local why=$1 n
    say "error=\"$why\""
    # A failed start has stopped what it started; the nodes it names may
    # be drained. After a start, stop.
    if [ -n "${STARTING:-}" ] && [ -z "${STARTED:-}" ] && [ "$DRAIN_FAILED_NODES" = yes ]; then
        for n in $(sed -n 's/^stria ondemand: [a-z]* on node \([^ ]*\) failed.*/\1/p' <<<"${OD_OUT:-}"); do
            grep -qxF "$n" "$NODEFILE" || continue
            scontrol update NodeName="$n" State=DRAIN Reason="stria ondemand: job $JOB failed to start here" &&
                say "drained=$n"
        done
    fi
    [ -z "${STARTED:-}" ] || ondemand stop --cleanup >/dev/null
    [ -z "${NODEFILE:-}" ] || rm -f "$NODEFILE"
    tell_user "stria: job $JOB asked for an on-demand file system (--constraint=$FEATURE), which could not be started: $why. The job is cancelled. (Details: ${LOG_FILE:-syslog} on node $NODE.)"
    if scancel "$JOB"; then
        # The cancel reaches this node's slurmd, which revokes the job's
        # launch credential, in the next moments; the job must not start
        # in between.
        sleep 2
        say "cancelled=yes"
        exit 0
    fi
    say "cancelled=no error=\"scancel failed; failing the prolog instead (Slurm drains $NODE)\""
    exit 1
}

load_conf
conf_rc=$?
job_asks || exit 0
[ -n "$NODE" ] || { echo "stria-prolog.sh: run it as the Prolog of slurmd (no SLURMD_NODENAME)" >&2; exit 1; }
job_nodes || fail "the job's node list is unknown"
[ "$NODE" = "$FIRST" ] || exit 0 # the first node starts it everywhere
[ $conf_rc -eq 0 ] || fail "$CONF_ERR"
write_nodefile || fail "cannot write $NODEFILE"

# Staging is the job's own: a prolog or epilog runs as root, and would
# copy what the job's user may not read (or write where it may not). A
# job that asks for it here is refused, not run without its data, and is
# told to run `stria pcp` in its script, with its own rights.
job_staging
pcp_hint="run stria pcp in the job script instead (contrib/slurm/README.md, Staging)"
[ -z "$STAGE_IN" ] || fail "stage-in (stria-stage-in=$STAGE_IN) is not done by the prolog: $pcp_hint"
[ -z "$STAGE_OUT" ] || fail "stage-out (stria-stage-out=$STAGE_OUT) is not done by the epilog: $pcp_hint"

nodes=$(wc -l <"$NODEFILE")
say "start nodes=$nodes name=$NAME port=$PORT data=$DATA_DIR mount=$MOUNT mdts=$MDTS"
# The root of the file system is the job user's (and nobody else's: jobs
# of other users may share the nodes), from before any node mounts it: a
# chown once every node has mounted could meet a node's kernel still
# holding the root as it was (docs/operations.md, "On-demand file systems").
[[ ${SLURM_JOB_UID:-} =~ ^[0-9]+$ && ${SLURM_JOB_GID:-} =~ ^[0-9]+$ ]] ||
    fail "slurmd gave no numeric SLURM_JOB_UID/SLURM_JOB_GID ('${SLURM_JOB_UID:-}:${SLURM_JOB_GID:-}')"
args=(--data-dir "$DATA_DIR" --mount "$MOUNT" --mdts "$MDTS" --port "$PORT" --timeout "$TIMEOUT"
    --owner "$SLURM_JOB_UID:$SLURM_JOB_GID" --mode 0700)
[ "$STRIPE_ALL" = yes ] && args+=(--stripe-all)
STARTING=1
# The reason: the first node named as failed, and the first thing it said.
ondemand start "${args[@]}" || fail "stria ondemand start failed: $(awk '/ failed /{
    sub(/^stria ondemand: /, ""); said = sub(/; it said:$/, ""); r = $0
    if (said && (getline l) > 0) { sub(/^ +/, "", l); r = r ": " l }
    print r; exit }' <<<"$OD_OUT")"
STARTED=1
say "started user=${SLURM_JOB_USER:-$SLURM_JOB_UID}"
exit 0
