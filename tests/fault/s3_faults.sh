#!/usr/bin/env bash
# Data repositories when S3 or a daemon fails (issue 22, point 8):
# - wrong credentials, a missing bucket, an object deleted under a released
#   file, an unreachable endpoint: the reader gets an error within the I/O
#   timeout, the storage host logs one line naming the object and S3's
#   error (never the secret), and `stria hsm state` says lost where the
#   object is gone;
# - kill -9 of stria-stord, stria-metad and stria-mgmtd in the middle of a restore
#   and of an archive: after `stria up` the operation goes on or is run
#   again, nothing local is lost, and no file is marked archived without
#   its whole object.
set -euo pipefail
. "$(cd "$(dirname "$0")/../func" && pwd)/lib.sh"

S() { "$STRIA" --conf "$CONF" "$@"; }
state() { S hsm state "$1" | sed 's/^[^:]*: //'; }
restart() { "$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up after a kill"; }
# kill9 NAME...: SIGKILL the cluster's daemons NAME* and wait (bounded) until
# each is gone or a zombie: a process still dying would count as running.
kill9() {
    local f p n
    for n in "$@"; do
        for f in "$DIR"/run/"$n"*.pid; do
            p=$(cat "$f")
            kill -9 "$p" 2>/dev/null || true
            for _ in $(seq 100); do
                [ -e "/proc/$p" ] || break
                awk '{ exit !($3 == "Z" || $3 == "X") }' "/proc/$p/stat" 2>/dev/null && break
                sleep 0.1
            done
        done
    done
}
# running PID WHAT: say whether the operation PID was still running when the
# kill that follows landed (a kill after its end would test nothing).
running() {
    if kill -0 "$1" 2>/dev/null; then
        echo "   $2 was running when the kill landed"
    else
        echo "   $2 had already ended before the kill"
    fi
}

step "an S3 server behind a SigV4 check; credentials in a file the storage hosts read at every request"
s3_up
s3_sigcheck_up # s3rver checks no signature; S3 (and this proxy) do
mkdir -p "$T/aws"
printf '[default]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n' >"$T/aws/credentials"
export AWS_SHARED_CREDENTIALS_FILE="$T/aws/credentials"
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
awss3 s3 mb s3://bkt >/dev/null
for f in a c d; do head -c 300000 /dev/urandom >"$T/$f"; done
head -c $((128 << 20)) /dev/urandom >"$T/big"
for f in a c d big; do awss3 s3 cp --quiet "$T/$f" "s3://bkt/p/$f"; done
cluster_up --osts 4 --no-mount
S mkdir /r
S repo add /r s3://bkt/p --endpoint "$S3_ENDPOINT" >/dev/null || fail "repo add"

step "wrong credentials: an I/O error, one log line naming the object, no secret"
printf '[default]\naws_access_key_id = S3RVER\naws_secret_access_key = notTheSecret42\n' >"$T/aws/credentials"
start=$SECONDS
S cp stria:/r/a "$T/got" 2>"$T/err" && fail "a read with wrong credentials succeeded"
[ $((SECONDS - start)) -lt 30 ] || fail "the failed read took $((SECONDS - start)) s"
grep -h "s3://bkt/p/a" "$DIR"/log/stord*.log | grep -qE "SignatureDoesNotMatch|InvalidAccessKeyId" ||
    fail "no storage host log line names s3://bkt/p/a and S3's error"
grep -rq "notTheSecret42" "$DIR/log" "$T/err" && fail "the secret was written to a log"
printf '[default]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n' >"$T/aws/credentials"
S cp stria:/r/a "$T/got" && cmp -s "$T/got" "$T/a" || fail "the read after the key was fixed"

step "a missing bucket: repo add says so and links nothing"
S mkdir /r2
S repo add /r2 s3://nosuchbucket/x --endpoint "$S3_ENDPOINT" 2>"$T/err" && fail "repo add of a missing bucket"
grep -q "NoSuchBucket" "$T/err" || { cat "$T/err"; fail "repo add does not say NoSuchBucket"; }
S repo list | grep -q "^/r2 " && fail "a repository was linked to a missing bucket"

step "an object deleted under a released file: an error, and the file is lost"
awss3 s3 rm --quiet s3://bkt/p/c
S cp stria:/r/c "$T/got" 2>/dev/null && fail "a read of a deleted object succeeded"
state /r/c | grep -q " lost" || fail "hsm state of /r/c is '$(state /r/c)', not lost"

step "kill -9 of stria-stord in the middle of a restore: restore again completes"
# The interrupted restore waits for the dead host for its client's
# timeout_ms before it gives up: 5 s here rather than the default 100.
sed -e '/^timeout_ms/d' "$CONF" >"$DIR/short.conf"
echo "timeout_ms = 5000" >>"$DIR/short.conf"
"$STRIA" --conf "$DIR/short.conf" hsm restore /r/big >"$T/restore.out" 2>&1 &
pid=$!
sleep 1
running $pid "the restore"
kill9 stord
if wait $pid; then echo "   the restore went on"; else echo "   the interrupted restore gave up"; fi
restart
S hsm restore /r/big || fail "restore after the kill"
state /r/big | grep -q "^(0x00000009) exists archived" || fail "big is '$(state /r/big)' after its restore"
S cp stria:/r/big "$T/got" && cmp -s "$T/got" "$T/big" || fail "big differs after the interrupted restore"

for victim in metad mgmtd; do
    step "kill -9 of stria-$victim in the middle of a restore"
    S hsm release /r/big || fail "release big"
    S hsm restore /r/big >/dev/null 2>&1 &
    pid=$!
    sleep 1
    running $pid "the restore"
    kill9 "$victim"
    restart
    wait $pid || S hsm restore /r/big || fail "restore after the $victim kill"
    S cp stria:/r/big "$T/got" && cmp -s "$T/got" "$T/big" || fail "big differs after the $victim kill"
done

for victim in stord metad mgmtd; do
    step "kill -9 of stria-$victim in the middle of an archive: never archived without its object"
    S cp "$T/big" "stria:/r/out-$victim" || fail "cp out-$victim in"
    S hsm archive "/r/out-$victim" >/dev/null 2>&1 &
    pid=$!
    sleep 1.5
    running $pid "the archive"
    kill9 "$victim"
    restart
    if wait $pid; then
        echo "   the archive went on after the restart"
    else
        st=$(state "/r/out-$victim")
        case "$st" in *archived*) fail "out-$victim is marked archived after a failed archive" ;; esac
        S hsm archive "/r/out-$victim" || fail "archive again after the kill"
    fi
    state "/r/out-$victim" | grep -q "^(0x00000009) exists archived" || fail "out-$victim is not archived"
    awss3 s3 cp --quiet "s3://bkt/p/out-$victim" "$T/got" && cmp -s "$T/got" "$T/big" ||
        fail "the archive of out-$victim is not the file"
    S cp "stria:/r/out-$victim" "$T/got" && cmp -s "$T/got" "$T/big" || fail "out-$victim changed locally"
done

step "an unreachable endpoint: an I/O error within the timeout, one log line"
S hsm release /r/d >/dev/null 2>&1 || true
s3_down
start=$SECONDS
S cp stria:/r/d "$T/got" 2>/dev/null && fail "a read with S3 down succeeded"
[ $((SECONDS - start)) -lt 60 ] || fail "the failed read took $((SECONDS - start)) s"
grep -h "s3://bkt/p/d" "$DIR"/log/stord*.log | grep -qiE "connect|unreachable|refused" ||
    fail "no storage host log line names s3://bkt/p/d and the connection failure"
S fsck >/dev/null || fail "fsck after the faults"
echo "PASS"
