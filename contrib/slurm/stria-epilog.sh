#!/bin/bash
# Slurm Epilog: stop the on-demand Stria file system of a job that asked
# for one (contrib/slurm/README.md), on every node, and remove its data.
#
# The job's first node runs `stria ondemand stop --cleanup` over ssh on
# every node. The other nodes wait (STOP_WAIT seconds at most) until their
# share is gone, so that Slurm gives none of them to the next job with
# this job's daemons still on it; if it is still there then (the first
# node was lost, or could not reach them), a node stops its own share.
# Each node then removes the empty mount point, and the job's data
# directory if a failed start left it. The epilog fails (and Slurm drains
# the node) only if this node still holds the job's file system at the end.
HERE=$(dirname "$(readlink -f "$0")")
# shellcheck source=stria-slurm-common.sh
. "$HERE/stria-slurm-common.sh"

load_conf
conf_rc=$?
job_asks || exit 0
[ -n "$NODE" ] || { echo "stria-epilog.sh: run it as the Epilog of slurmd (no SLURMD_NODENAME)" >&2; exit 1; }
[ $conf_rc -eq 0 ] || { say "error=\"$CONF_ERR\""; exit 0; } # then the prolog started nothing
job_nodes || FIRST= # then every node stops its own share
cleanup=--cleanup

if [ "$NODE" = "$FIRST" ]; then
    # Stage-out is the job script's (stria pcp, with the user's rights):
    # the prolog refuses jobs that ask for it here, so none gets here;
    # should one, its data stays on the nodes for the administrator.
    job_staging
    if [ -n "$STAGE_OUT" ]; then
        say "error=\"stage-out to $STAGE_OUT is the job script's (stria pcp); data left in $DATA_DIR/stria-$NAME\""
        cleanup=
    fi
    if write_nodefile; then
        t0=$(date +%s%N)
        if ondemand stop $cleanup; then
            say "stopped seconds=$(awk "BEGIN{printf \"%.2f\", ($(date +%s%N) - $t0) / 1e9}")"
        else
            say "error=\"stria ondemand stop failed; each node stops its own share\""
        fi
    fi
elif [ -n "$FIRST" ]; then
    # The first node stops it; wait for that.
    for _ in $(seq 1 $((STOP_WAIT * 2))); do
        local_gone && break
        sleep 0.5
    done
fi

if ! local_gone; then
    say "error=\"still here after the first node's stop; stopping this node's share\""
    out=$("$STRIA" ondemand node stop --name "$NAME" $cleanup 2>&1)
    while IFS= read -r l; do [ -n "$l" ] && say "node-stop: $l"; done <<<"$out"
fi
# What a failed start leaves (it stops without --cleanup, and then no
# stop knows the directory): this node's DATA_DIR/stria-jobID.
if [ -n "$cleanup" ] && local_gone && [ -e "$DATA_DIR/stria-$NAME" ]; then
    rm -rf -- "${DATA_DIR:?}/stria-$NAME" && say "removed=$DATA_DIR/stria-$NAME"
fi
rmdir "$MOUNT" 2>/dev/null
rm -f "$NODEFILE"
if ! local_gone; then
    say "error=\"the file system of job $JOB still runs on this node\""
    exit 1
fi
exit 0
