#!/usr/bin/env bash
# The client API's data semantics against a live cluster.
. "$(dirname "$0")/lib.sh"
cluster_up --osts 4
restart="kill -9 \$(cat '$DIR/run/stord.pid') \$(cat '$DIR/run/metad.pid') && sleep 0.3 && '$STRIA' up --dir '$DIR' >/dev/null"
"$BUILD/tests/libstria_api" "$CONF" "$restart"
