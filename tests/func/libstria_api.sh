#!/usr/bin/env bash
# The client API's data semantics against a live cluster.
. "$(dirname "$0")/lib.sh"
cluster_up --osts 4
restart="kill -9 \$(cat '$DIR/run/stord.pid') \$(cat '$DIR/run/metad.pid') && sleep 0.3 && '$STRIA' up --dir '$DIR' >/dev/null"
freeze="kill -STOP \$(cat '$DIR/run/metad.pid')"
thaw="kill -CONT \$(cat '$DIR/run/metad.pid')"
# Never leave the MDT frozen for the teardown.
trap 'rc=$?; set +e; kill -CONT "$(cat "$DIR/run/metad.pid")" 2>/dev/null; (exit $rc); teardown' EXIT
"$BUILD/tests/libstria_api" "$CONF" "$restart" "$freeze" "$thaw"
