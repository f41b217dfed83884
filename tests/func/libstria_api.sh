#!/usr/bin/env bash
# The client API's data semantics against a live cluster.
. "$(dirname "$0")/lib.sh"
cluster_up --osts 4
"$BUILD/tests/libstria_api" "$CONF"
