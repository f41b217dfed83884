#!/usr/bin/env bash
# bench/bench_s3.sh BUILD_DIR: data repositories on S3 (issue 22), beside
# Debian's aws against the same S3 server (s3rver on 127.0.0.1), in one run:
# - import of 10,000 objects (stria repo add): objects/s;
# - a 2 GiB object: aws s3 cp to the local disk; the first read of the
#   released file through the mount (or libstria without FUSE); stria hsm
#   restore of it: each with its ratio to aws;
# - archive of a 2 GiB file (stria hsm archive) beside aws s3 cp's upload.
# s3rver is one Node.js process: on this machine it, not the movers, is
# the likely bound (the note says what the run showed). Output also goes to
# bench/results/last-run-s3.txt.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/lib.sh"
bench_setup $# "${1:-}" stria stria-stord
OBJECTS=${OBJECTS:-10000}
BIG_MIB=${BIG_MIB:-2048}
OUT="$RESULTS/last-run-s3.txt"

bench_dir stria-bench-s3
S3RVER="$SRC/tests/s3/node_modules/.bin/s3rver"
[ -x "$S3RVER" ] || { echo "bench_s3: $S3RVER is missing (scripts/bootstrap.sh)" >&2; exit 2; }
S3PID=""
cleanup() {
    [ -n "${MNT:-}" ] && fusermount3 -uz "$MNT" 2>/dev/null || true
    [ -n "$S3PID" ] && kill "$S3PID" 2>/dev/null || true
    bench_remove bench_s3
}
trap cleanup EXIT

port=24868
while ss -Hltn "sport = :$port" | grep -q .; do port=$((port + 17)); done
mkdir -p "$TMP/s3"
NODE_OPTIONS=--openssl-legacy-provider "$S3RVER" -d "$TMP/s3" -a 127.0.0.1 -p "$port" --silent \
    >"$TMP/s3rver.log" 2>&1 &
S3PID=$!
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_DEFAULT_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true
EP="http://127.0.0.1:$port"
for _ in $(seq 100); do curl -s -o /dev/null --max-time 1 "$EP/" && break; sleep 0.2; done
aws() { /usr/bin/aws --endpoint-url "$EP" "$@"; }
aws s3 mb s3://bench >/dev/null

"$BUILD/stria" up --dir "$CL" --osts 4 >"$TMP/up.out" 2>&1 || { cat "$TMP/up.out"; exit 1; }
S() { "$BUILD/stria" --conf "$CL/client.conf" "$@"; }
MNT=""
if [ -f "$CL/run/mount" ]; then MNT=$(cat "$CL/run/mount"); fi
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
now() { date +%s.%N; }
mibs() { awk -v m="$1" -v s="$2" 'BEGIN { printf "%.1f", (s > 0 ? m / s : 0) }'; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }

{
    echo "bench_s3: $(date -u +%FT%TZ), $(nproc) cores, s3rver on $EP, 4 OSTs in one stria-stord"
    echo
    echo "-- import of $OBJECTS objects"
    mkdir -p "$TMP/objs"
    head -c $((OBJECTS * 4096)) /dev/urandom >"$TMP/blob"
    (cd "$TMP/objs" && split -b 4096 -a 6 -d "$TMP/blob" o)
    rm "$TMP/blob"
    aws s3 cp --recursive --quiet "$TMP/objs" s3://bench/objs/
    rm -rf "$TMP/objs"
    S mkdir /objs
    t0=$(now)
    S repo add /objs s3://bench/objs --endpoint "$EP" | tail -n 1
    t1=$(now)
    echo "stria repo add: $OBJECTS objects in $(secs "$t0" "$t1") s = $(awk -v n="$OBJECTS" -v s="$(secs "$t0" "$t1")" 'BEGIN { printf "%.0f", n / s }') objects/s"

    echo
    echo "-- a ${BIG_MIB} MiB object: aws s3 cp to the local disk, first read through Stria, restore"
    head -c $((BIG_MIB << 20)) /dev/urandom >"$TMP/big"
    aws s3 cp --quiet "$TMP/big" s3://bench/big/big.bin
    rm -f "$TMP/big"
    S mkdir /big
    S setstripe -c -1 -S 4M /big
    S repo add /big s3://bench/big --endpoint "$EP" >/dev/null
    drop
    t0=$(now)
    aws s3 cp --quiet s3://bench/big/big.bin "$TMP/aws.bin"
    t1=$(now)
    aws_dl=$(secs "$t0" "$t1")
    rm -f "$TMP/aws.bin"
    echo "aws s3 cp (download): $aws_dl s, $(mibs "$BIG_MIB" "$aws_dl") MiB/s"
    drop
    t0=$(now)
    if [ -n "$MNT" ]; then
        how="cat through the mount"
        cat "$MNT/big/big.bin" >/dev/null
    else
        how="stria cp to /dev/null (no FUSE here)"
        S cp stria:/big/big.bin /dev/null
    fi
    t1=$(now)
    first=$(secs "$t0" "$t1")
    echo "first read of the released file ($how): $first s, $(mibs "$BIG_MIB" "$first") MiB/s, ratio to aws $(ratio "$aws_dl" "$first")"
    # Restore needs it released again.
    for _ in $(seq 600); do
        S hsm state /big/big.bin | grep -q released || break
        S hsm restore /big/big.bin >/dev/null 2>&1 || true
        sleep 0.1
    done
    S hsm release /big/big.bin
    drop
    t0=$(now)
    S hsm restore /big/big.bin >/dev/null
    t1=$(now)
    rest=$(secs "$t0" "$t1")
    echo "stria hsm restore: $rest s, $(mibs "$BIG_MIB" "$rest") MiB/s, ratio to aws $(ratio "$aws_dl" "$rest")"

    echo
    echo "-- archive of a ${BIG_MIB} MiB file beside aws s3 cp's upload"
    head -c $((BIG_MIB << 20)) /dev/urandom >"$TMP/up"
    S mkdir /big/out
    S cp "$TMP/up" stria:/big/out/ckpt.bin
    drop
    t0=$(now)
    aws s3 cp --quiet "$TMP/up" s3://bench/aws-up.bin
    t1=$(now)
    aws_up=$(secs "$t0" "$t1")
    rm -f "$TMP/up"
    echo "aws s3 cp (upload): $aws_up s, $(mibs "$BIG_MIB" "$aws_up") MiB/s"
    drop
    t0=$(now)
    S hsm archive /big/out/ckpt.bin >/dev/null
    t1=$(now)
    arch=$(secs "$t0" "$t1")
    echo "stria hsm archive: $arch s, $(mibs "$BIG_MIB" "$arch") MiB/s, ratio to aws $(ratio "$aws_up" "$arch")"
    echo
    echo "s3rver's CPU time over the run: $(ps -o times= -p "$S3PID" | tr -d ' ') s"
} 2>&1 | tee "$OUT"
