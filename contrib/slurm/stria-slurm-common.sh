# shellcheck shell=bash disable=SC2034
# What stria-prolog.sh and stria-epilog.sh share (contrib/slurm/README.md):
# the site's settings, whether a job asks for an on-demand file system, its
# nodes, its name and ports, and one way to say what happened.
#
# Slurm runs the prolog and epilog as root with an environment of its own
# (SLURM_JOB_ID, SLURM_NODELIST or SLURM_JOB_NODELIST, SLURMD_NODENAME,
# SLURM_JOB_CONSTRAINTS, SLURM_JOB_COMMENT, SLURM_JOB_UID, ...) and no PATH.
# Sourced, not run.

PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
umask 022

JOB=${SLURM_JOB_ID:?not run by Slurm: no SLURM_JOB_ID}
NODE=${SLURMD_NODENAME:-}
CONF=${STRIA_ONDEMAND_CONF:-/etc/stria/ondemand.conf}

# ---- the settings: defaults, then the site's file (see ondemand.conf.example) ----
STRIA=stria
FEATURE=stria
DATA_DIR=
MOUNT="/mnt/stria/$JOB"
MDTS=1
STRIPE_ALL=yes
TIMEOUT=30
SSH_OPTS=
PORT_BASE=20000
PORT_STRIDE=8
PORT_SLOTS=1500
STATE_DIR=/run/stria/slurm
LOG_FILE=/var/log/stria/slurm-ondemand.log
DRAIN_FAILED_NODES=no
STOP_WAIT=120

# One line per event: on stderr (slurmd logs it when a script fails), in
# LOG_FILE and in syslog; job= and node= for whoever greps.
say() {
    local line="stria-slurm: job=$JOB node=${NODE:-?} $*"
    echo "$line" >&2
    if [ -n "$LOG_FILE" ]; then
        mkdir -p "$(dirname "$LOG_FILE")" 2>/dev/null
        echo "$(date '+%Y-%m-%dT%H:%M:%S') $line" >>"$LOG_FILE" 2>/dev/null
    fi
    logger -t stria-slurm -- "job=$JOB node=${NODE:-?} $*" 2>/dev/null || true
}

# Does the job ask? Its constraint expression names FEATURE as a word
# ("stria", "stria&gpu", "[stria|x]", "stria*4").
job_asks() {
    local w
    for w in $(printf '%s' "${SLURM_JOB_CONSTRAINTS:-}" | tr '&|,[]()*:' '         '); do
        [ "$w" = "$FEATURE" ] && return 0
    done
    return 1
}

# Read the site's settings. The file is a shell fragment run as root, so
# it must belong to root and be writable by nobody else.
load_conf() {
    [ -f "$CONF" ] || { CONF_ERR="no settings file $CONF"; return 1; }
    local uid mode
    read -r uid mode < <(stat -L -c '%u %a' "$CONF") || { CONF_ERR="cannot stat $CONF"; return 1; }
    if [ "$uid" != 0 ] || (((8#$mode) & 8#022)); then
        CONF_ERR="$CONF must belong to root and be writable by root only (uid $uid, mode $mode)"
        return 1
    fi
    # shellcheck disable=SC1090
    . "$CONF" || { CONF_ERR="$CONF has an error"; return 1; }
    local v
    for v in MDTS TIMEOUT PORT_BASE PORT_STRIDE PORT_SLOTS STOP_WAIT; do
        case "${!v}" in '' | *[!0-9]*) CONF_ERR="$v=${!v} in $CONF is not a number"; return 1 ;; esac
    done
    case "$DATA_DIR" in /*) ;; *) CONF_ERR="DATA_DIR in $CONF must be an absolute path (the nodes' local disk)"; return 1 ;; esac
    case "$MOUNT" in /*) ;; *) CONF_ERR="MOUNT in $CONF must be an absolute path"; return 1 ;; esac
    if [ "$MDTS" -lt 1 ] || [ $((MDTS + 2)) -gt "$PORT_STRIDE" ]; then
        CONF_ERR="MDTS=$MDTS needs PORT_STRIDE >= MDTS + 2 (mgmt, storage, one port per MDT)"
        return 1
    fi
    if [ $((PORT_BASE + PORT_SLOTS * PORT_STRIDE)) -gt 65000 ] || [ "$PORT_SLOTS" -lt 1 ]; then
        CONF_ERR="PORT_BASE + PORT_SLOTS * PORT_STRIDE must stay below 65000"
        return 1
    fi
    # A file system per job: its name and its ports, from the job id, so
    # that jobs sharing a node do not collide (unless their ids are a
    # multiple of PORT_SLOTS apart and they run at the same time).
    NAME="job$JOB"
    PORT=$((PORT_BASE + (JOB % PORT_SLOTS) * PORT_STRIDE))
    NODEFILE="$STATE_DIR/$NAME.nodes"
    return 0
}

# The job's nodes, the first one first: NODES, and FIRST. (Slurm 22.05
# gives the prolog SLURM_NODELIST; later ones SLURM_JOB_NODELIST too.)
job_nodes() {
    local list=${SLURM_JOB_NODELIST:-${SLURM_NODELIST:-}}
    [ -n "$list" ] || { say "error=\"no SLURM_JOB_NODELIST or SLURM_NODELIST\""; return 1; }
    NODES=$(scontrol show hostnames "$list") && [ -n "$NODES" ] ||
        { say "error=\"scontrol show hostnames $list failed\""; return 1; }
    FIRST=$(printf '%s\n' "$NODES" | head -n 1)
}

# NODES into NODEFILE, the node file of `stria ondemand`.
write_nodefile() {
    mkdir -p "$STATE_DIR" && printf '%s\n' "$NODES" >"$NODEFILE.tmp" && mv "$NODEFILE.tmp" "$NODEFILE" ||
        { say "error=\"cannot write $NODEFILE\""; return 1; }
}

# What the job asked for in its comment (--comment "stria-stage-in=SRC
# stria-stage-out=DST"): STAGE_IN and STAGE_OUT.
job_staging() {
    STAGE_IN=
    STAGE_OUT=
    local w
    for w in ${SLURM_JOB_COMMENT:-}; do
        case "$w" in
        stria-stage-in=*) STAGE_IN=${w#stria-stage-in=} ;;
        stria-stage-out=*) STAGE_OUT=${w#stria-stage-out=} ;;
        esac
    done
}

# stria ondemand SUB with the job's name and the site's ssh options; its
# output, line by line, through say.
ondemand() {
    local sub=$1 out rc
    shift
    out=$("$STRIA" ondemand "$sub" --nodefile "$NODEFILE" --name "$NAME" ${SSH_OPTS:+--ssh "$SSH_OPTS"} \
        "$@" 2>&1)
    rc=$?
    OD_OUT=$out
    while IFS= read -r l; do
        [ -n "$l" ] && say "ondemand-$sub: $l"
    done <<<"$out"
    return $rc
}

# Is this node's share of the job's file system gone? The node agent
# answers 0 (running) or 4 (a daemon down) while it holds an instance of
# NAME, 3 when it holds none; a stria that does not run holds none.
local_gone() {
    "$STRIA" ondemand node status --name "$NAME" >/dev/null 2>&1
    case $? in 0 | 4) return 1 ;; *) return 0 ;; esac
}
