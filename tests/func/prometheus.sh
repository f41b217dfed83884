#!/usr/bin/env bash
# The daemons' request counters as Prometheus scrapes them: a cluster whose
# mgmtd, metad (two MDTs) and stord serve GET /metrics on loopback, scraped
# every second by Debian's prometheus; after some I/O its query API must
# show the MDTs' OPENs, every target up, and the wait histogram usable by
# histogram_quantile. Garbage, a silent peer, an oversized head and other
# methods and paths sent to a metrics port get their status codes, and the
# daemon keeps serving. Skipped (77) when prometheus is not installed.
. "$(dirname "$0")/lib.sh"
PROM=$(command -v prometheus || true)
[ -n "$PROM" ] || { echo "SKIP: prometheus is missing (Debian: prometheus)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is missing"; exit 77; }

cluster_up --mdts 2 --osts 2 --no-mount

step "each daemon restarted with a metrics port"
declare -A MPORT
next=23011
for d in mgmtd metad stord; do
    MPORT[$d]=$(free_port "$next") || fail "no free port for $d's metrics"
    next=$((MPORT[$d] + 17))
    echo "metrics = 127.0.0.1:${MPORT[$d]}" >>"$DIR/conf/$d.conf"
    pid=$(daemon_pid "$d")
    kill "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && fail "stria-$d did not stop"
done
"$STRIA" up --dir "$DIR" --no-mount >/dev/null || fail "stria up with metrics ports"
export STRIA_CONF=$CONF
wait_for 30 "$STRIA" stats || fail "the MDTs do not answer after the restart"

PROM_PID=
trap 'rc=$?; set +e; [ -n "$PROM_PID" ] && { kill -9 "$PROM_PID"; wait "$PROM_PID"; } 2>/dev/null; (exit $rc); teardown' EXIT

metrics() { curl -fsS --max-time 5 "http://127.0.0.1:$1/metrics"; }
for d in mgmtd metad stord; do
    wait_for 10 metrics "${MPORT[$d]}" || fail "stria-$d serves no /metrics"
    type=$(curl -fsS --max-time 5 -o /dev/null -w '%{content_type}' "http://127.0.0.1:${MPORT[$d]}/metrics")
    [[ $type == "text/plain; version=0.0.4"* ]] || fail "stria-$d: Content-Type '$type'"
done

step "some I/O"
head -c 300000 /dev/urandom >"$T/f"
"$STRIA" mkdir stria:/prom
for i in 1 2 3 4 5; do
    "$STRIA" cp "$T/f" "stria:/prom/f$i" || fail "cp f$i"
    "$STRIA" cp "stria:/prom/f$i" "$T/back" || fail "cp back f$i"
done
metrics "${MPORT[metad]}" >"$T/metad.txt"
grep -q '^stria_requests_total{daemon="stria-metad",target="MDT000[01]",op="OPEN"} [1-9]' "$T/metad.txt" ||
    fail "no OPEN counted at the metad: $(grep requests_total "$T/metad.txt")"
grep -q '^stria_request_wait_seconds_bucket{daemon="stria-metad",target="MDT0001",.*le="+Inf"}' "$T/metad.txt" ||
    fail "no wait histogram of MDT0001 at the metad"
metrics "${MPORT[stord]}" >"$T/stord.txt"
grep -q '^stria_requests_total{daemon="stria-stord",op="WRITE"} [1-9]' "$T/stord.txt" ||
    fail "no WRITE counted at the stord: $(grep requests_total "$T/stord.txt")"

step "garbage to a metrics port"
# status PORT BYTES: the status code the port answers BYTES (printf %b) with.
status() {
    (
        exec 3<>"/dev/tcp/127.0.0.1/$1"
        printf '%b' "$2" >&3
        IFS= read -r -t 10 line <&3 && echo "${line:9:3}"
    ) 2>/dev/null || true
}
mp=${MPORT[metad]}
[ "$(status "$mp" '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03')" = 400 ] || fail "a TLS hello: no 400"
[ "$(status "$mp" 'POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc')" = 405 ] || fail "POST: no 405"
[ "$(status "$mp" 'GET /admin HTTP/1.1\r\n\r\n')" = 404 ] || fail "another path: no 404"
[ "$(status "$mp" "GET /metrics HTTP/1.1\r\nX: $(head -c 6000 /dev/zero | tr '\0' a)\r\n\r\n")" = 431 ] ||
    fail "an oversized head: no 431"
start=$SECONDS
exec 3<>"/dev/tcp/127.0.0.1/$mp" # a peer that says nothing
IFS= read -r -t 10 line <&3 || true
exec 3<&-
[[ $line == "HTTP/1.1 408"* ]] || fail "a silent peer: '$line', want 408"
[ $((SECONDS - start)) -le 5 ] || fail "a silent peer held the responder $((SECONDS - start)) s"
head -c 100000 /dev/urandom >"$T/junk"
(exec 3<>"/dev/tcp/127.0.0.1/$mp"; cat "$T/junk" >&3; timeout 5 cat <&3 >/dev/null) 2>/dev/null || true
kill -0 "$(daemon_pid metad)" || fail "stria-metad died of garbage on its metrics port"
metrics "$mp" >/dev/null || fail "no /metrics after the garbage"
"$STRIA" stats >/dev/null || fail "the MDTs do not answer after the garbage"

step "prometheus scrapes every daemon"
PPORT=$(free_port 24011) || fail "no free port for prometheus"
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: stria
    static_configs:
      - targets: ['127.0.0.1:${MPORT[mgmtd]}', '127.0.0.1:${MPORT[metad]}', '127.0.0.1:${MPORT[stord]}']
EOF
"$PROM" --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
    --web.listen-address="127.0.0.1:$PPORT" >"$T/prometheus.log" 2>&1 &
PROM_PID=$!
# query EXPR: the API's JSON answer to an instant query.
query() { curl -fsS --max-time 5 -G "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1"; }
# value JSON: the first result's value, or nothing.
value() { python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'; }
opens=
for _ in $(seq 30); do
    kill -0 "$PROM_PID" 2>/dev/null || { cat "$T/prometheus.log"; fail "prometheus exited"; }
    opens=$(query 'sum(stria_requests_total{daemon="stria-metad",op="OPEN"})' 2>/dev/null | value 2>/dev/null) || true
    [ -n "$opens" ] && break
    sleep 1
done
[ -n "$opens" ] || { tail -n 20 "$T/prometheus.log"; fail "prometheus never had stria_requests_total"; }
awk -v n="$opens" 'BEGIN { exit !(n >= 10) }' || fail "prometheus counts $opens OPENs at the MDTs, want 10 or more"
# Each target's first scrape comes in its own turn, and on a loaded
# machine one may time out (1 s): every daemon up once in the last 30 s,
# waited for as long as the first OPENs were.
ups=
for _ in $(seq 30); do
    ups=$(query 'sum(max_over_time(up{job="stria"}[30s]))' 2>/dev/null | value 2>/dev/null) || true
    [ "$ups" = 3 ] && break
    sleep 1
done
[ "$ups" = 3 ] || fail "$ups of 3 daemons scraped: $(query 'up' || true)"
targets=$(query 'count(count by (target) (last_over_time(stria_uptime_seconds{daemon="stria-metad"}[30s])))' | value)
[ "$targets" = 2 ] || fail "the metad reports $targets MDTs, want 2"
q=$(query 'histogram_quantile(0.99, sum by (le) (stria_request_wait_seconds_bucket{daemon="stria-metad"}))')
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["status"]=="success" and d["data"]["result"], d' <<<"$q" ||
    fail "histogram_quantile over the wait histogram: $q"
echo "prometheus: $opens OPENs, $ups daemons up"
echo PASS
