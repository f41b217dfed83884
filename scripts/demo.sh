#!/usr/bin/env bash
# `make demo`: bring up a local cluster and run the checkpoint-and-dataset demo.
# Usage: scripts/demo.sh BUILD_DIR CLUSTER_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
DIR=$2
STRIA="$BUILD/stria"
echo "== stria up --dir $DIR"
"$STRIA" up --dir "$DIR"
echo
echo "== stria df -h"
"$STRIA" --conf "$DIR/client.conf" df -h
# A demo run from before leaves /demo behind: start clean.
if "$STRIA" --conf "$DIR/client.conf" stat stria:/demo >/dev/null 2>&1; then
    "$STRIA" --conf "$DIR/client.conf" rm -r stria:/demo
fi
echo
echo "== stria-demo (libstria)"
"$BUILD/stria-demo" --conf "$DIR/client.conf"
echo
echo "== what the OSTs hold now: stria df -h"
"$STRIA" --conf "$DIR/client.conf" df -h
echo
echo "== stria getstripe stria:/demo/ckpt/step-100/rank-00.pt"
"$STRIA" --conf "$DIR/client.conf" getstripe stria:/demo/ckpt/step-100/rank-00.pt
if awk -v m="$DIR/mnt" '$5 == m && / - fuse\.stria / {f = 1} END {exit !f}' /proc/self/mountinfo; then
    echo
    echo "== the same files through the POSIX mount at $DIR/mnt"
    ls -l "$DIR/mnt/demo/ckpt/step-100"
    sha256sum "$DIR/mnt/demo/ckpt/step-100/rank-00.pt"
fi
cat <<MSG

The cluster keeps running. Try, from any shell:
  $STRIA ls -l stria:/demo/ckpt/step-100
  $STRIA status
  $STRIA down --dir $DIR        # stop it (data stays in $DIR)
MSG
