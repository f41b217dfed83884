#!/usr/bin/env bash
# Issue 25: one stria-metad and one stria-stord each hold 10,000 concurrent
# authenticated clients, none refused, every one answered, and an idle
# connection costs kilobytes and no thread of its own; peers that never
# authenticate are closed by the handshake timeout while a real client
# that comes at the same time is served. Against stria-metad every client
# then also opens a revocation channel, as a mount's cache does, and all of
# them wait in a long poll at once: that costs no thread per client either.
#
# CONNS (default 10000) clients per daemon; MAX_THREADS (1000) the most
# threads a daemon may have while it holds them; MAX_KB (64) the most
# resident memory per held connection.
. "$(dirname "$0")/lib.sh"

CONNS=${CONNS:-10000}
RAW=200
MAX_THREADS=${MAX_THREADS:-1000}
MAX_KB=${MAX_KB:-64}
HANDSHAKE_MS=1000

# The daemons inherit this shell's open-file limit from `stria up`, and
# flood needs one descriptor per connection too.
need=$((CONNS + RAW + 200))
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt "$need" ]; then
    fail "the hard open-file limit is $hard; $CONNS connections need $need (ulimit -Hn, limits.conf)"
fi
if [ "$hard" = unlimited ]; then ulimit -n "$need"; else ulimit -n "$hard"; fi

cluster_up --osts 1 --no-mount
port() { awk -F= -v k="$1" '$1 == k {print $2}' "$DIR/stria.cluster"; }
META_PORT=$(port meta_port)
STOR_PORT=$(port stor_port)

# Room for every client (the default max_connections is 4096).
daemon_set stord max_connections $((CONNS + RAW + 100))
metad_set max_connections $((CONNS + RAW + 100))

# Every figure is measured and printed before the test fails on any:
# problem records a failure, the end of the test reports them all.
PROBLEMS=()
problem() {
    echo "FAIL: $*" >&2
    PROBLEMS+=("$*")
}

# val LINE KEY: the value of KEY=... in flood's summary line.
val() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }

# hold NAME PORT [--poll]: CONNS clients held by daemon NAME, figures
# printed and checked.
hold() {
    local name=$1 port=$2 poll=${3:-} pid line rc=0
    pid=$(daemon_pid "$name")
    step "stria-$name (pid $pid, open-file limit $(awk '/^Max open files/ {print $4}' "/proc/$pid/limits")): $CONNS clients at once"
    line=$("$BUILD/tests/flood" 127.0.0.1 "$port" "$DIR/cluster.key" "$CONNS" --pid "$pid" $poll) || rc=$?
    echo "   $line"
    [ -n "$line" ] || fail "flood against stria-$name printed nothing (exit $rc)"
    echo "   stria-$name: $(val "$line" connected) of $CONNS connected in $(val "$line" connect_s) s," \
        "$(val "$line" answered) answered in $(val "$line" ping_s) s;" \
        "RSS $(val "$line" rss_before_kb) -> $(val "$line" rss_held_kb) kB held" \
        "($(val "$line" kb_per_conn) kB per connection) -> $(val "$line" rss_closed_kb) kB closed;" \
        "threads $(val "$line" threads_before) -> $(val "$line" threads_held) held" \
        "-> $(val "$line" threads_closed) closed"
    kill -0 "$pid" 2>/dev/null || fail "stria-$name died under $CONNS clients"
    if [ "$(val "$line" threads_held)" -le 0 ] || [ "$(val "$line" rss_held_kb)" -le 0 ]; then
        problem "stria-$name: no figures from /proc/$pid/status"
    fi
    [ "$rc" -eq 0 ] || problem "stria-$name: not every client was connected and answered (exit $rc)"
    awk -v k="$(val "$line" kb_per_conn)" -v m="$MAX_KB" 'BEGIN { exit !(k >= 0 && k <= m) }' ||
        problem "stria-$name: $(val "$line" kb_per_conn) kB per idle connection (at most $MAX_KB)"
    [ "$(val "$line" threads_held)" -le "$MAX_THREADS" ] ||
        problem "stria-$name: $(val "$line" threads_held) threads for $CONNS connections (at most $MAX_THREADS)"
    if [ -n "$poll" ]; then
        echo "   stria-$name: $(val "$line" polls) of $CONNS revocation channels' long polls answered;" \
            "threads $(val "$line" threads_polls) while they all waited"
        [ "$(val "$line" polls)" = "$CONNS" ] ||
            problem "stria-$name: $(val "$line" polls) of $CONNS long polls answered"
        [ "$(val "$line" threads_polls)" -gt 0 ] && [ "$(val "$line" threads_polls)" -le "$MAX_THREADS" ] ||
            problem "stria-$name: $(val "$line" threads_polls) threads while $CONNS long polls waited (at most $MAX_THREADS)"
    fi
}

hold metad "$META_PORT" --poll
hold stord "$STOR_PORT"

step "stria-metad: $RAW peers that never authenticate, closed within ${HANDSHAKE_MS} ms + slack"
metad_set handshake_timeout_ms "$HANDSHAKE_MS"
pid=$(daemon_pid metad)
rc=0
line=$("$BUILD/tests/flood" 127.0.0.1 "$META_PORT" "$DIR/cluster.key" 100 --raw "$RAW" \
    --raw-wait 10 --pid "$pid") || rc=$?
echo "   $line"
echo "   $(val "$line" raw_closed) of $RAW closed, the first after $(val "$line" raw_first_s) s," \
    "the last after $(val "$line" raw_last_s) s; $(val "$line" answered) and" \
    "$(val "$line" answered_again) of 100 clients answered meanwhile and after;" \
    "daemon threads $(val "$line" threads_before) -> $(val "$line" threads_held) while they were there"
kill -0 "$pid" 2>/dev/null || fail "stria-metad died"
[ "$rc" -eq 0 ] || problem "peers that never authenticate: exit $rc"
awk -v f="$(val "$line" raw_first_s)" -v h="$HANDSHAKE_MS" 'BEGIN { exit !(f >= h / 1000 * 0.9) }' ||
    problem "a peer was closed after $(val "$line" raw_first_s) s, before its handshake timeout"

step "the cluster still serves"
STRIA_CONF=$CONF "$STRIA" stats >/dev/null || fail "stria stats after the flood"
for d in mgmtd metad stord; do
    kill -0 "$(daemon_pid $d)" || fail "$d died"
done
! grep -lE "AddressSanitizer|SIGSEGV|Segmentation fault|Assertion|Aborted" "$DIR"/log/*.log ||
    fail "a daemon log shows a crash"
[ ${#PROBLEMS[@]} -eq 0 ] || fail "${#PROBLEMS[@]} problem(s): $(printf '%s; ' "${PROBLEMS[@]}")"
echo PASS
