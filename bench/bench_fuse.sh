#!/usr/bin/env bash
# bench/bench_fuse.sh BUILD_DIR: stria-fuse against a FUSE passthrough and the local disk.
#
# In a temporary directory: a 4-OST cluster with stria-fuse mounted on it,
# bench_passthrough (a minimal FUSE file system, the ceiling for any FUSE
# file system here) mounted over a local directory, and a plain local
# directory, all on one disk. On each of the three, in the same run: a
# sequential write and read with 1 MiB blocks (fio, or dd without it), then
# bench_fsops's create, stat and unlink of empty files in one directory.
# Prints the rates and the ratios stria/passthrough and stria/local, never
# a bare time. With FUSE_MDTS=4 the cluster has four MDTs and the metadata
# part runs twice on stria, in a plain directory on MDT 0 and in one
# striped over every MDT, and prints striped/plain too (issue 25);
# FUSE_IO=0 leaves out the data part. FUSE_RANKS="1 2" runs the metadata
# part with 1 and then 2 ranks (threads of bench_fsops, each with
# FUSE_META_FILES files, as mdtest -n does: in one shared directory, or with
# FUSE_RANKS_DIR=own each in its own) and prints the aggregate rates and
# their ratio to the first count. On any exit a trap unmounts both
# (lazily, so that a hung daemon cannot block it), stops the cluster and
# deletes the directory. The output goes to stdout and is appended to
# bench/results/last-run-fuse.txt.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/lib.sh"
bench_setup $# "${1:-}" stria stria-fuse bench/bench_passthrough bench/bench_fsops
if ! command -v fusermount3 >/dev/null 2>&1; then
    echo "bench_fuse.sh: fusermount3 is not installed (package fuse3)" >&2
    exit 2
fi
if ! { : <>/dev/fuse; } 2>/dev/null; then
    echo "bench_fuse.sh: /dev/fuse cannot be opened for reading and writing" >&2
    exit 2
fi

# The standard run; the environment may shrink it for a quick look.
FUSE_IO_SIZE=${FUSE_IO_SIZE:-2G}
FUSE_META_FILES=${FUSE_META_FILES:-50000}
FUSE_CHECK_SIZE=${FUSE_CHECK_SIZE:-512M}
FUSE_MDTS=${FUSE_MDTS:-1}
FUSE_IO=${FUSE_IO:-1}
FUSE_RANKS=${FUSE_RANKS:-1}
FUSE_RANKS_DIR=${FUSE_RANKS_DIR:-shared}
# Longest any one step may take before its target counts as hung.
FUSE_STEP_TIMEOUT=${FUSE_STEP_TIMEOUT:-900}
IO_BYTES=$(numfmt --from=iec "$FUSE_IO_SIZE")
read -r -a RANKS <<<"$FUSE_RANKS"
[ "${#RANKS[@]}" -gt 0 ] || RANKS=(x)
for k in "${RANKS[@]}"; do
    if ! [[ $k =~ ^([1-9]|[1-5][0-9]|6[0-4])$ ]]; then
        echo "bench_fuse.sh: FUSE_RANKS=\"$FUSE_RANKS\": each must be a rank count from 1 to 64" >&2
        exit 2
    fi
done
case $FUSE_RANKS_DIR in
shared) OWN=() ;;
own) OWN=(own) ;;
*)
    echo "bench_fuse.sh: FUSE_RANKS_DIR is shared or own, not $FUSE_RANKS_DIR" >&2
    exit 2
    ;;
esac
CHECK_BYTES=$(numfmt --from=iec "$FUSE_CHECK_SIZE")

# The targets, in the order each step visits them (a fourth, stria's
# striped directory, with several MDTs: metadata only).
NAME=(local passthrough stria striped)
declare -a DIR FAILED
declare -A RATE # RATE[op,target]: the first rank count's; RATE[op,target,ranks]: each

# The bandwidth of fio's one job, in MiB/s, from --output-format=terse
# (version 3: read KiB/s is field 7, write KiB/s field 48).
fio_mibs() { # DIRECTION FILE
    awk -F';' -v d="$1" '$1 == "3" { printf "%.1f", (d == "read" ? $7 : $48) / 1024 }' "$2"
}

# Only clean pages are dropped, hence the sync. The storage targets run on
# this machine, so this also empties their cache. Returns 1 if not root.
drop_caches() {
    timeout "$FUSE_STEP_TIMEOUT" sync
    { echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null
}

# Run CMD with a time limit. On failure, record why against target I (whose
# later steps are then skipped), say so on fd 3 (run's stdout, whatever
# CMD's output is redirected to), and return 1.
step() { # I WHAT CMD...
    local i=$1 what=$2 rc=0
    shift 2
    timeout -k 10 "$FUSE_STEP_TIMEOUT" "$@" || rc=$?
    [ "$rc" -eq 0 ] && return 0
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        FAILED[i]="$what: no answer within ${FUSE_STEP_TIMEOUT}s, killed"
    else
        FAILED[i]="$what: exit status $rc"
    fi
    echo "  ${NAME[i]}: FAILED: ${FAILED[i]}" >&3
    return 1
}

now() { date +%s.%N; }
mibs_since() { # T0 BYTES
    awk -v t0="$1" -v t1="$(now)" -v b="$2" 'BEGIN { printf "%.1f", b / 1048576 / (t1 - t0) }'
}

# Sequential write (fsync at the end, included) or read of the data file
# on target I, in 1 MiB blocks; sets RATE[DIRECTION,I] in MiB/s.
seq_io() { # DIRECTION I
    local d=$1 i=$2 f="${DIR[$2]}/bench_fuse.dat" t0
    [ -n "${FAILED[i]:-}" ] && return 0
    if [ -n "$FIO" ]; then
        step "$i" "fio $d" fio --name=seq --filename="$f" --rw="$d" --bs=1M --size="$FUSE_IO_SIZE" \
            --end_fsync=1 --ioengine=psync --fallocate=none --output-format=terse \
            --terse-version=3 >"$TMP/fio-$d-$i.out" || return 0
        RATE[$d,$i]=$(fio_mibs "$d" "$TMP/fio-$d-$i.out")
    else
        t0=$(now)
        if [ "$d" = write ]; then
            step "$i" "dd write" dd if=/dev/zero of="$f" bs=1M count=$((IO_BYTES >> 20)) \
                conv=fsync status=none || return 0
        else
            step "$i" "dd read" dd if="$f" of=/dev/null bs=1M status=none || return 0
        fi
        RATE[$d,$i]=$(mibs_since "$t0" "$IO_BYTES")
    fi
    printf '  %-5s %-12s %10s MiB/s\n' "$d" "${NAME[i]}" "${RATE[$d,$i]}"
}

# Untimed: is what a FUSE mount reads back what was written? The timed
# data cannot be checked (fio's buffers are not reproducible), so a second
# file of FUSE_CHECK_SIZE is written with fio's per-block checksums (block
# offset included) and read back after dropping the page cache; without
# fio, zeros are written and compared. Also checks the timed file's size.
check_data() { # I
    local i=$1 f="${DIR[$1]}/bench_fuse.check" size
    size=$(stat -c %s "${DIR[i]}/bench_fuse.dat" 2>/dev/null || echo missing)
    if [ "$size" != "$IO_BYTES" ]; then
        FAILED[i]="data file is $size bytes, wrote $IO_BYTES"
        echo "  ${NAME[i]}: FAILED: ${FAILED[i]}"
        return 0
    fi
    if [ -n "$FIO" ]; then
        local args=(--name=check --filename="$f" --rw=write --bs=1M --size="$FUSE_CHECK_SIZE"
            --ioengine=psync --end_fsync=1 --fallocate=none --verify=crc32c --verify_fatal=1
            --verify_state_save=0)
        step "$i" "check: write" fio "${args[@]}" --do_verify=0 >"$TMP/check-$i.out" 2>&1 &&
            { drop_caches || true; } &&
            step "$i" "check: read back (fio verify)" fio "${args[@]}" --verify_only=1 \
                >>"$TMP/check-$i.out" 2>&1
    else
        step "$i" "check: write" dd if=/dev/zero of="$f" bs=1M count=$((CHECK_BYTES >> 20)) \
            conv=fsync status=none >"$TMP/check-$i.out" 2>&1 &&
            { drop_caches || true; } &&
            step "$i" "check: read back (cmp with zeros)" cmp -n "$CHECK_BYTES" "$f" /dev/zero \
                >>"$TMP/check-$i.out" 2>&1
    fi
    if [ -n "${FAILED[i]:-}" ]; then
        grep -iE 'verify|bad|err|differ|EOF' "$TMP/check-$i.out" | head -5 | sed 's/^/    /'
    else
        echo "  ${NAME[i]}: $FUSE_CHECK_SIZE written and read back correctly"
    fi
    rm -f "$f"
}

# Mount target I with CMD (which returns once mounted); on failure say why
# and skip that target.
mount_fuse() { # I CMD...
    local i=$1 m="${*: -1}"
    shift
    if timeout 60 "$@" >"$TMP/mount-$i.out" 2>&1 && mountpoint -q "$m"; then
        echo "mounted: ${NAME[i]} on $m: $*"
    else
        FAILED[i]="mount: $* did not mount"
        echo "mount:   ${NAME[i]}: FAILED: ${FAILED[i]}"
        sed 's/^/    /' "$TMP/mount-$i.out"
    fi
}

# On any exit of run: unmount, stop the cluster, remove everything made.
cleanup() {
    local rc=$?
    set +e # do every step, whatever fails
    fuse_unmount bench_fuse.sh
    bench_remove bench_fuse.sh
    return "$rc"
}

run() {
    bench_dir stria-bench-fuse
    local L="$TMP/local" PTSRC="$TMP/pt-source" M1="$TMP/mnt-stria" M2="$TMP/mnt-pt"
    mkdir -p "$L" "$PTSRC" "$M1" "$M2"
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    DIR=("$L" "$M2" "$M1")
    FIO=$(command -v fio || true)
    exec 3>&1

    echo "== Stria FUSE benchmark, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "commit:  $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)"
    echo "machine: $(uname -sr), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)," \
        "load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "disk:    $TMP on $(df -PT "$TMP" | awk 'NR == 2 { print $1 " (" $2 ")" }')" \
        "- the OSTs, the MDT, the passthrough's source and the local directory"
    # The tree may be rebuilt between runs without a commit: say which build this is.
    echo "built:   $(cd "$BUILD" && stat -L -c '%n %y' stria-fuse libstria.so stria-metad stria-stord |
        awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, substr($3, 1, 8) }') UTC"
    echo "fuse:    $("$BUILD/bench/bench_passthrough" -V 2>&1 | head -1)," \
        "kernel max_pages_limit $(cat /proc/sys/fs/fuse/max_pages_limit 2>/dev/null || echo '?')"
    if [ -n "$FIO" ]; then
        echo "tools:   $(fio --version) (psync engine, buffered, fallocate=none)"
    else
        echo "tools:   dd (fio is not installed)"
    fi
    echo

    "$BUILD/stria" up --dir "$CL" --osts 4 --mdts "$FUSE_MDTS" --no-mount
    echo
    # Both mount commands return once the mount is in place.
    mount_fuse 2 "$BUILD/stria-fuse" -o conf="$CL/client.conf" "$M1"
    mount_fuse 1 "$BUILD/bench/bench_passthrough" -o source="$PTSRC" "$M2"
    if [ "$FUSE_MDTS" -gt 1 ]; then
        # The root is striped over every MDT: the plain directory is made so,
        # on MDT 0, and both hand their stripe down to bench_fsops's directory.
        "$BUILD/stria" --conf "$CL/client.conf" mkdir -c 1 -i 0 /plain
        "$BUILD/stria" --conf "$CL/client.conf" setdirstripe -D -c 1 -i 0 /plain
        "$BUILD/stria" --conf "$CL/client.conf" mkdir -c "$FUSE_MDTS" /striped
        "$BUILD/stria" --conf "$CL/client.conf" setdirstripe -D -c "$FUSE_MDTS" /striped
        DIR[2]="$M1/plain"
        DIR[3]="$M1/striped"
        [ -n "${FAILED[2]:-}" ] && FAILED[3]=${FAILED[2]}
        echo "stria:   $FUSE_MDTS MDTs; 'stria' is a plain directory on MDT 0, 'striped' one over all $FUSE_MDTS"
    fi
    echo "local:   $L"
    # See bench/README.md (bench_meta): ext4 without a journal slows creates
    # next to recent unlinks; the top-directory flag sends each run's fresh
    # directory to a fresh block group, in both local trees.
    if chattr +T "$L" "$PTSRC" 2>/dev/null; then
        echo "         (local and passthrough source: ext4 top-directory flag set)"
    else
        echo "         (no ext4 top-directory flag: metadata runs may slow each other)"
    fi
    echo

    local i d dropped= meta=(0 1 2)
    [ "$FUSE_MDTS" -gt 1 ] && meta=(0 1 2 3)
    if [ "$FUSE_IO" = 1 ]; then
        echo "== sequential I/O: $FUSE_IO_SIZE in 1 MiB blocks, fsync at the end of the write"
        for i in 0 1 2; do
            seq_io write "$i"
        done
        for i in 0 1 2; do
            if [ -z "${FAILED[i]:-}" ]; then
                if drop_caches; then dropped=${dropped:-yes}; else dropped=no; fi
            fi
            seq_io read "$i"
        done
        case $dropped in
        yes) echo "  (page cache dropped before each read)" ;;
        no) echo "  (page cache NOT dropped: not root; reads may come from memory)" ;;
        esac
        echo
        echo "== data check (untimed)"
        for i in 1 2; do
            if [ -z "${FAILED[i]:-}" ]; then
                check_data "$i"
            fi
        done
        for i in 0 1 2; do
            if [ -z "${FAILED[i]:-}" ]; then
                step "$i" "rm data file" rm -f "${DIR[i]}/bench_fuse.dat" || true
            fi
        done
        echo
    fi

    local k where=
    if [ "${#RANKS[@]}" -gt 1 ] || [ "${RANKS[0]}" -ne 1 ]; then
        if [ -n "${OWN[*]}" ]; then
            where=", with ${FUSE_RANKS// / and } ranks, each in a subdirectory of its own"
        else
            where=", with ${FUSE_RANKS// / and } ranks, disjoint names"
        fi
        where+=" (files per rank; rates are the sum)"
    fi
    echo "== metadata: create, stat, unlink of $FUSE_META_FILES empty files in one directory$where"
    for k in "${RANKS[@]}"; do
        [ -n "$where" ] && echo "  -- $k rank$([ "$k" -gt 1 ] && echo s)"
        for i in "${meta[@]}"; do
            [ -n "${FAILED[i]:-}" ] && continue
            if step "$i" "bench_fsops${where:+ ($k ranks)}" "$BUILD/bench/bench_fsops" "${DIR[i]}" \
                "$FUSE_META_FILES" "$k" "${OWN[@]}" >"$TMP/fsops-$i-$k.out"; then
                for d in create stat unlink; do
                    RATE[$d,$i,$k]=$(awk -v p="$d" '$1 == p { print $2 }' "$TMP/fsops-$i-$k.out")
                    [ "$k" = "${RANKS[0]}" ] && RATE[$d,$i]=${RATE[$d,$i,$k]}
                    printf '  %-6s %-12s %10s ops/s\n' "$d" "${NAME[i]}" "${RATE[$d,$i,$k]}"
                done
            fi
        done
    done
    echo

    echo "== results (pt = bench_passthrough, the FUSE ceiling on this machine)"
    printf '%-7s %-6s %11s %11s %11s %9s %9s %11s  %s\n' test unit local passthrough stria \
        pt/local stria/pt stria/local "target stria/pt"
    local unit target r
    for d in write read create stat unlink; do
        case $d in
        write | read) unit=MiB/s target=0.7 ;;
        *) unit=ops/s target=0.5 ;;
        esac
        r=$(ratio "${RATE[$d,2]:-0}" "${RATE[$d,1]:-0}")
        printf '%-7s %-6s %11s %11s %11s %9s %9s %11s  %s\n' "$d" "$unit" "${RATE[$d,0]:--}" \
            "${RATE[$d,1]:--}" "${RATE[$d,2]:--}" "$(ratio "${RATE[$d,1]:-0}" "${RATE[$d,0]:-0}")" \
            "$r" "$(ratio "${RATE[$d,2]:-0}" "${RATE[$d,0]:-0}")" \
            ">= $target $(awk -v r="$r" -v t="$target" 'BEGIN {
                if (r == "-") print "(no figure)"; else if (r >= t) print "(met)"; else print "(not met)" }')"
    done
    echo "(targets of the FUSE client: stria at least 0.7 of the passthrough for data, 0.5 for metadata)"
    if [ "$FUSE_MDTS" -gt 1 ]; then
        echo
        printf '%-7s %-6s %11s %11s %11s %11s %13s\n' test unit passthrough "stria plain" "striped" \
            striped/pt striped/plain
        for d in create stat unlink; do
            printf '%-7s %-6s %11s %11s %11s %11s %13s\n' "$d" ops/s "${RATE[$d,1]:--}" \
                "${RATE[$d,2]:--}" "${RATE[$d,3]:--}" "$(ratio "${RATE[$d,3]:-0}" "${RATE[$d,1]:-0}")" \
                "$(ratio "${RATE[$d,3]:-0}" "${RATE[$d,2]:-0}")"
        done
        echo "(issue 25's goal: a directory striped over $FUSE_MDTS MDTs at least as fast as a plain one)"
    fi
    if [ "${#RANKS[@]}" -gt 1 ]; then
        local k0=${RANKS[0]} hdr=() row
        echo
        echo "== ranks: aggregate ops/s, and the ratio to $k0 rank$([ "$k0" -gt 1 ] && echo s)" \
            "(each rank $FUSE_META_FILES files, $([ -n "${OWN[*]}" ] && echo "a directory each" ||
                echo "one shared directory"))"
        for i in "${meta[@]}"; do hdr+=("${NAME[i]}"); done
        for i in "${meta[@]}"; do hdr+=("${NAME[i]:0:5}/$k0"); done
        [ "$FUSE_MDTS" -gt 1 ] && hdr+=(striped/plain)
        printf '%-7s %5s' test ranks
        printf ' %11s' "${hdr[@]}"
        echo
        for d in create stat unlink; do
            for k in "${RANKS[@]}"; do
                row=()
                for i in "${meta[@]}"; do row+=("${RATE[$d,$i,$k]:--}"); done
                for i in "${meta[@]}"; do row+=("$(ratio "${RATE[$d,$i,$k]:-0}" "${RATE[$d,$i,$k0]:-0}")"); done
                [ "$FUSE_MDTS" -gt 1 ] && row+=("$(ratio "${RATE[$d,3,$k]:-0}" "${RATE[$d,2,$k]:-0}")")
                printf '%-7s %5s' "$d" "$k"
                printf ' %11s' "${row[@]}"
                echo
            done
        done
        echo "(issue 25's goal: unlink's aggregate rate grows with ranks; the kernel serialises creates"
        echo " and unlinks in one directory on its lock, on every file system: FUSE_RANKS_DIR=own lifts it)"
    fi
    bench_done "${meta[@]}"
}

mkdir -p "$RESULTS"
# The subshell keeps run's traps and HOME to itself; tee keeps a copy.
(run) 2>&1 | tee -a "$RESULTS/last-run-fuse.txt"
