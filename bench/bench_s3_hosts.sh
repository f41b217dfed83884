#!/usr/bin/env bash
# bench/bench_s3_hosts.sh BUILD_DIR: what moving data to and from S3 gains
# from 1, 2 and 3 storage hosts (issue 22), on the test bed
# (tests/testbed/testbed.sh, docs/testbed.md) with its s3 host running
# s3rver. For each K: a test bed of K storage hosts, a SIZE_MB object put
# there with Debian's aws from cli1, `stria repo add` of it into a
# directory striped over all K OSTs, then three times: with the links as
# they are; with every storage host's link (and cli1's) limited to
# RATE_MBIT by tc tbf; and with only their traffic with the s3 host
# limited to RATE_MBIT (htb), as nodes whose way to S3 is slower than
# their fabric. Each time:
# - aws s3 cp of the object to the local disk from cli1 (the baseline);
# - `stria hsm restore` of the released file from cli1 (each storage host
#   fetches its own OST's stripes), its bytes compared with the original,
#   and what s3rver, the stords, the rest of the machine and the disk
#   were busy with meanwhile; then the file is released again;
# - except with the whole links limited (where cli1's own link bounds
#   anything it reads or writes): the first read of the released file
#   through cli1's mount (cat), compared, released again; and aws s3 cp's
#   upload of the bytes from cli1 beside `stria hsm archive` of a new file
#   holding them (the object's size checked with aws).
# Prints MiB/s, the ratio to K=1 and to aws; output also goes to
# bench/results/last-run-s3-hosts.txt.
#
# On one machine every host shares its cores and its disk, and s3rver is
# one Node.js process: without a limit the figures show what bounds that
# (the CPU and disk figures say which); with a limit each host is bound by
# its own link, as storage hosts on a network are, and the figures should
# grow with K until s3rver binds.
#
# Needs root (network namespaces, tc, FUSE mounts of the test bed); exits
# 77 with a message otherwise. Every test bed, s3rver and qdisc it makes is
# gone on any exit (testbed.sh down removes the namespaces and with them
# the qdiscs).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/lib.sh"
bench_setup $# "${1:-}" stria stria-stord stria-metad stria-mgmtd stria-fuse
SIZE_MB=${SIZE_MB:-1024}
RATE_MBIT=${RATE_MBIT:-400}
KS=${KS:-1 2 3}
OUT="$RESULTS/last-run-s3-hosts.txt"
TB="$SRC/tests/testbed/testbed.sh"
S3RVER="$SRC/tests/s3/node_modules/.bin/s3rver"

skip() { echo "bench_s3_hosts: skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, tc, FUSE mounts)"
[ -x "$S3RVER" ] || skip "$S3RVER is missing (scripts/bootstrap.sh)"
[ -x /usr/bin/aws ] || skip "Debian's aws (/usr/bin/aws) is missing (scripts/bootstrap.sh)"
command -v tc >/dev/null || skip "tc is missing (package iproute2)"
if ! [ -c /dev/fuse ] || ! [ -w /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
    skip "no usable /dev/fuse (the test bed mounts its clients)"
fi
[[ "$SIZE_MB" =~ ^[1-9][0-9]*$ ]] || { echo "bench_s3_hosts: SIZE_MB is a number of MiB" >&2; exit 2; }

bench_dir stria-bench-s3h
DISK=$(basename "$(df -P "$TMP" | awk 'NR == 2 { print $1 }')")
BED="" # the test bed of the K being measured: TMP/bedK, a new one for each K
# run sets BED in a subshell: whatever bed is still up goes.
cleanup() {
    local rc=$? b
    set +e
    for b in "$TMP"/bed*; do
        [ -f "$b/testbed.env" ] && "$TB" down "$b" >/dev/null 2>&1
    done
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# aws and the stords sign with s3rver's keys; HOME (bench_dir) has no ~/.aws.
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_DEFAULT_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE
export BUILD
# A restore window (64 MiB per object) behind a slow link takes seconds.
export TESTBED_TIMEOUT_MS=${TESTBED_TIMEOUT_MS:-30000}

X() { "$TB" exec "$BED" "$@"; } # X HOST CMD...
S() { X cli1 "$BUILD/stria" --conf "$BED/etc/cli1/client.conf" "$@"; }
AWS() { X cli1 /usr/bin/aws --endpoint-url "$EP" "$@"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
mibs() { awk -v m="$1" -v s="$2" 'BEGIN { printf "%.1f", (s > 0 ? m / s : 0) }'; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
fail() { echo "bench_s3_hosts: $*" >&2; exit 1; }

# cpu_snap: a line "pid ticks class" per process (user + system ticks),
# then "machine BUSY TOTAL" (/proc/stat, every core). Classes: s3rver,
# stord, bed (the bed's other processes: the CLI, metad, mgmtd, the fuse
# mounts), kthread (the kernel's threads), others (the rest of the
# machine). The shell taking the snapshot is left out. Then the disk of
# TMP (which holds the OSTs and s3rver's data): "disk SECTORS_READ
# SECTORS_WRITTEN MS_DOING_IO" (/proc/diskstats), and "uptime SECONDS".
cpu_snap() {
    local p st cls n
    local -a w
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" != "$BASHPID" ] || continue
        read -r st 2>/dev/null <"$p/stat" || continue
        read -ra w <<<"${st##*) }"
        if ((w[6] & 0x200000)); then # PF_KTHREAD
            cls=kthread
        elif [ "${p#/proc/}" = "$S3PID" ]; then
            cls=s3rver
        elif [[ " $STPIDS " == *" ${p#/proc/} "* ]]; then
            cls=stord
        else
            cls=others
            for n in "${BEDNS[@]}"; do
                if [ "$p/ns/net" -ef "$n" ]; then
                    cls=bed
                    break
                fi
            done
        fi
        echo "${p#/proc/} $((w[11] + w[12])) $cls"
    done
    awk '/^cpu / { t = $2+$3+$4+$5+$6+$7+$8+$9; print "machine", t - $5 - $6, t }' /proc/stat
    awk -v d="$DISK" '$3 == d { print "disk", $6, $10, $13 }' /proc/diskstats
    awk '{ print "uptime", $1 }' /proc/uptime
}
# cpu_delta BEFORE AFTER: what each class and the machine used between two
# snapshots, in % of one core: "s3rver stord bed kthread others machine",
# then the disk's MiB/s read and written and its utilization (the share
# of the time it had I/O in flight). A process that started in between
# counts whole; one that ended in between (a compiler's) only in machine.
cpu_delta() {
    awk -v n="$(nproc)" '
        FNR == NR && $1 == "machine" { mb = $2; mt = $3; next }
        FNR == NR && $1 == "disk" { r0 = $2; w0 = $3; io0 = $4; next }
        FNR == NR && $1 == "uptime" { u0 = $2; next }
        FNR == NR { t0[$1] = $2; next }
        $1 == "machine" { db = $2 - mb; dt = $3 - mt; next }
        $1 == "disk" { dr = $2 - r0; dw = $3 - w0; dio = $4 - io0; disk = 1; next }
        $1 == "uptime" { du = $2 - u0; next }
        { x = $2 - ($1 in t0 ? t0[$1] : 0); d[$3] += (x < 0 ? $2 : x) }
        END {
            f = dt > 0 ? 100 * n / dt : 0
            printf "%.0f%% %.0f%% %.0f%% %.0f%% %.0f%% %.0f%%", d["s3rver"] * f, d["stord"] * f,
                d["bed"] * f, d["kthread"] * f, d["others"] * f, db * f
            if (disk && du > 0)
                printf " %.0f/%.0f %.0f%%\n", dr / 2048 / du, dw / 2048 / du, dio / 10 / du
            else
                printf " - -\n"
        }' "$1" "$2"
}

# bed_up K: a test bed of K storage hosts and an s3 host; the object in a
# bucket; /data linked to it and striped over all K OSTs.
bed_up() {
    local k=$1 n
    BED="$TMP/bed$k"
    STOR_HOSTS=$k TESTBED_S3=1 "$TB" up "$BED" >"$TMP/up.out" 2>&1 ||
        { cat "$TMP/up.out"; fail "the test bed with $k storage hosts did not come up"; }
    EP="http://$("$TB" addr "$BED" s3):4568"
    AWS s3 mb s3://bench >/dev/null
    AWS s3 cp --quiet "$TMP/obj.bin" s3://bench/data/obj.bin
    S mkdir /data
    S setstripe -c -1 -S 4M /data
    S repo add /data s3://bench/data --endpoint "$EP" >/dev/null
    n=$(S getstripe /data/obj.bin | grep -cE '^[[:space:]]+[0-9]+[[:space:]]+[0-9]+' || true)
    [ "$n" = "$k" ] || fail "/data/obj.bin has $n stripes, not $k"
    S3PID=$(cat "$BED/run/s3-s3rver.pid")
    STPIDS=$(cat "$BED"/run/stor*-stord.pid | tr '\n' ' ')
    BEDNS=("/run/netns/$(sed -n 's/^PFX=\([^ ]*\).*/\1/p' "$BED/testbed.env")"-*)
}

# limit K MBIT|off: every storage host's link and cli1's.
limit() {
    local i
    for i in $(seq 1 "$1"); do "$TB" rate "$BED" "stor$i" "$2"; done
    "$TB" rate "$BED" cli1 "$2"
}
# s3limit K MBIT|off: only every storage host's and cli1's way to S3.
s3limit() {
    local i
    for i in $(seq 1 "$1"); do "$TB" s3rate "$BED" "stor$i" "$2"; done
    "$TB" s3rate "$BED" cli1 "$2"
}

# timed CMD...: run CMD (its output dropped), print its seconds.
timed() {
    local t0 t1
    t0=$(now)
    "$@" >/dev/null
    t1=$(now)
    secs "$t0" "$t1"
}
cat_mount() { cat "$BED/mnt/cli1/data/obj.bin" >/dev/null; }

# one K LABEL ALL: the baseline and the restore, and with ALL=1 also the
# first read through cli1's mount and the archive beside aws's upload; a
# row of the table in ROWS ("-" for what was not measured).
one() {
    local k=$1 label=$2 all=$3 aws_s rest_s cpu read_s=- up_s=- arch_s=- f
    drop
    aws_s=$(timed AWS s3 cp --quiet s3://bench/data/obj.bin "$TMP/aws.bin")
    [ "$(stat -c %s "$TMP/aws.bin")" = $((SIZE_MB << 20)) ] || fail "aws downloaded a short object"
    rm -f "$TMP/aws.bin"

    S hsm state /data/obj.bin | grep -q released || fail "/data/obj.bin is not released before the restore"
    drop
    cpu_snap >"$TMP/cpu0"
    rest_s=$(timed S hsm restore /data/obj.bin)
    cpu_snap >"$TMP/cpu1"
    cpu=$(cpu_delta "$TMP/cpu0" "$TMP/cpu1")
    cmp -s "$TMP/obj.bin" "$BED/mnt/cli1/data/obj.bin" || fail "the restored file differs from the object"
    S hsm release /data/obj.bin
    if [ "$all" = 1 ]; then
        # The first read: a program reading the released file from its start.
        drop
        read_s=$(timed cat_mount)
        cmp -s "$TMP/obj.bin" "$BED/mnt/cli1/data/obj.bin" || fail "the first read differs from the object"
        S hsm release /data/obj.bin
        # Archive: a new file of the same bytes, beside aws's upload of them.
        f="up-$label.bin"
        cp "$TMP/obj.bin" "$BED/mnt/cli1/data/$f"
        drop
        up_s=$(timed AWS s3 cp --quiet "$TMP/obj.bin" "s3://bench/aws/$f")
        drop
        arch_s=$(timed S hsm archive "/data/$f")
        S hsm state "/data/$f" | grep -q archived || fail "/data/$f is not archived after the archive"
        [ "$(AWS s3api head-object --bucket bench --key "data/$f" --query ContentLength --output text)" = \
            $((SIZE_MB << 20)) ] || fail "s3://bench/data/$f is not $SIZE_MB MiB after the archive"
        S rm "/data/$f" >/dev/null
    fi
    echo "$label $k $rest_s $(mibs "$SIZE_MB" "$rest_s") $aws_s $(mibs "$SIZE_MB" "$aws_s") $cpu $read_s $up_s $arch_s" >>"$ROWS"
    printf '  %-12s K=%s  restore %6.2f s %7.1f MiB/s   aws %6.2f s %7.1f MiB/s\n' \
        "$label" "$k" "$rest_s" "$(mibs "$SIZE_MB" "$rest_s")" "$aws_s" "$(mibs "$SIZE_MB" "$aws_s")"
    if [ "$all" = 1 ]; then
        printf '  %-12s K=%s  first read %6.2f s %7.1f MiB/s   archive %6.2f s %7.1f MiB/s   aws upload %6.2f s %7.1f MiB/s\n' \
            "$label" "$k" "$read_s" "$(mibs "$SIZE_MB" "$read_s")" "$arch_s" "$(mibs "$SIZE_MB" "$arch_s")" \
            "$up_s" "$(mibs "$SIZE_MB" "$up_s")"
    fi
    echo "$cpu" | { read -r a b c d e f g h
        echo "      CPU: s3rver $a, stords $b, the bed's other processes $c, kernel threads $d, others $e, machine $f of $(($(nproc) * 100))%;" \
            "disk $DISK: $g MiB/s read/written, busy $h"; }
}

run() {
    echo "bench_s3_hosts: $(date -u +%FT%TZ), commit $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)," \
        "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "test bed: K storage hosts (one stria-stord, one OST each), s3rver on host s3, clients cli1/cli2;" \
        "a ${SIZE_MB} MiB object, stripe size 4 MiB over all K OSTs; page cache dropped before each timed step"
    echo "${RATE_MBIT}Mbit: tc tbf at ${RATE_MBIT} Mbit/s each way on every storage host's link and on cli1's (aws's baseline)"
    echo "s3:${RATE_MBIT}Mbit: only each storage host's and cli1's traffic with the s3 host at ${RATE_MBIT} Mbit/s each way" \
        "(htb), the cluster's network as it is: nodes that reach S3 through a slower way than their fabric"
    echo
    head -c $((SIZE_MB << 20)) /dev/urandom >"$TMP/obj.bin"
    ROWS="$TMP/rows"
    : >"$ROWS"
    local k
    for k in $KS; do
        echo "-- K=$k storage hosts"
        bed_up "$k"
        one "$k" unlimited 1
        limit "$k" "$RATE_MBIT"
        one "$k" "${RATE_MBIT}Mbit" 0
        limit "$k" off
        s3limit "$k" "$RATE_MBIT"
        one "$k" "s3:${RATE_MBIT}Mbit" 1
        s3limit "$k" off
        "$TB" down "$BED" >/dev/null
        rm -rf "$BED"
    done
    echo
    echo "restore: stria hsm restore from cli1; aws: aws s3 cp of the object to the local disk from cli1"
    echo "vs K=1: restore MiB/s over the same link's K=1; vs aws: aws's time / restore's (above 1: faster)"
    echo "read: the first read (cat) of the released file through cli1's mount, vs aws: aws's download time / the read's"
    echo "archive: stria hsm archive of a new file of the same bytes, vs aws: aws s3 cp's upload time from cli1 / the archive's"
    echo "CPU during the restore, in % of one core: s3rver (Node); the K stria-stords; bed: the test bed's" \
        "other processes (the CLI, metad, mgmtd, fuse); kthr: kernel threads; others: the rest of the machine;" \
        "machine: every core ($(($(nproc) * 100))% = all busy, also interrupts and processes that ended meanwhile)"
    echo "disk: $DISK (the OSTs, s3rver's objects, aws's copy), MiB/s read/written during the restore, and busy:" \
        "the share of that time it had I/O in flight"
    echo
    printf '%-12s %1s %9s %7s %6s %9s %6s %7s %7s %5s %5s %7s %7s %10s %5s\n' link K "restore s" "MiB/s" "vs K=1" \
        "aws MiB/s" "vs aws" s3rver stords bed kthr others machine "disk r/w" busy
    awk '{ if (!($1 in base)) base[$1] = $4
           printf "%-12s %1s %9s %7s %6.2f %9s %6.2f %7s %7s %5s %5s %7s %7s %10s %5s\n", $1, $2, $3, $4, $4 / base[$1], $6, $5 / $3, $7, $8, $9, $10, $11, $12, $13, $14 }' \
        "$ROWS"
    echo
    printf '%-12s %1s %10s %7s %6s %9s %7s %6s %11s\n' link K "read MiB/s" "vs aws" "vs K=1" "archive s" "MiB/s" "vs aws" "aws up MiB/s"
    awk -v m="$SIZE_MB" '$15 != "-" {
           r = m / $15; if (!($1 in base)) base[$1] = r
           printf "%-12s %1s %10.1f %7.2f %6.2f %9.2f %7.1f %6.2f %11.1f\n", $1, $2, r, $5 / $15, r / base[$1], $17, m / $17, $16 / $17, m / $16 }' \
        "$ROWS"
    echo
    echo "done $(date -u +%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
}

# The subshell keeps HOME and the test beds' variables to itself; a run
# that fails or is stopped leaves the last complete one's results.
mkdir -p "$RESULTS"
(run) 2>&1 | tee "$TMP/out"
cp "$TMP/out" "$OUT"
