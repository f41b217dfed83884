#!/usr/bin/env bash
# 100,000 files created, listed and removed in one directory.
. "$(dirname "$0")/lib.sh"
cluster_up --osts 2
"$BUILD/tests/many_files" "$CONF" "${COUNT:-100000}"
