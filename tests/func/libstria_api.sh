#!/usr/bin/env bash
# The client API's data semantics against a live cluster.
. "$(dirname "$0")/lib.sh"
cluster_up --osts 4
restart="kill -9 \$(cat '$DIR/run/stord.pid') \$(cat '$DIR/run/metad.pid') && sleep 0.3 && '$STRIA' up --dir '$DIR' >/dev/null"
# Frozen once every thread of stria-metad has stopped (state T), which a
# thread busy in the kernel (a commit's write under load) reaches only
# when its call returns; bounded to 10 s, and said if it never does. (Run
# by system(3): sh, not bash.)
freeze="p=\$(cat '$DIR/run/metad.pid') && kill -STOP \$p && i=0 && while [ \$i -lt 100 ]; do \
grep -h '^State:' /proc/\$p/task/*/status | grep -qv 'T (stopped)' || exit 0; \
i=\$((i + 1)); sleep 0.1; done; echo 'stria-metad did not stop' >&2; exit 1"
thaw="kill -CONT \$(cat '$DIR/run/metad.pid')"
# Never leave the MDT frozen for the teardown.
trap 'rc=$?; set +e; kill -CONT "$(cat "$DIR/run/metad.pid")" 2>/dev/null; (exit $rc); teardown' EXIT
"$BUILD/tests/libstria_api" "$CONF" "$restart" "$freeze" "$thaw"
