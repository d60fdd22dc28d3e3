#!/bin/bash
# node-agent's healthz and metrics listener (agent/httpd.c, agent/metrics.c)
# on its default ports 2751 and 2752 (gardener-node-agent's), in a private
# network namespace: /healthz and /readyz, /metrics in the Prometheus text
# format with the applied checksum and generation, the apply result, API
# requests by verb and code, watch connects and Lease renewals; wrong paths,
# methods and ports; then the bad inputs: a head larger than 1 KiB (431),
# binary garbage (400), 20 silent connections and a byte-a-second trickle
# (closed at the 3 s deadline, the listener serves again afterwards), 200
# scrapes without memory growth; build_info, process_* and per-listener
# counts; the metrics after a restart of the agent; an IPv6 listener;
# readyz following the last contact; SIGHUP with healthPort 0 turns it off.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require

W=$(scratch)
printf 'spec:\n  files:\n  - path: /etc/hello\n    permissions: 420\n    content:\n      inline:\n        data: "metrics 1"\n' >"$W/v1.yaml"
if ! agent_e2e_setup "$W/v1.yaml" '{"lease": {"enabled": true}}'; then
	fail "agent applies the first OSC"
	dump_logs
	finish
	exit 1
fi
ok "agent applies the first OSC"

# get PORT PATH [METHOD]: prints the status, then the body (5 s deadline).
get() {
	python3 - "$@" <<'PY'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
c.request(sys.argv[3] if len(sys.argv) > 3 else "GET", sys.argv[2])
r = c.getresponse()
print(r.status)
sys.stdout.write(r.read().decode())
PY
}
check "healthz: 200 ok" [ "$(get 2751 /healthz | tr '\n' ' ')" = "200 ok " ]
check "readyz: 200 after the first contact" [ "$(get 2751 /readyz | sed -n 1p)" = 200 ]

sum=$(sha256 "$W/v1.yaml")
get 2752 /metrics >"$W/metrics"
gen=$(jget "d['generation']" <"$(desired_file)")
# The text format: a TYPE before the samples of each family; sample lines
# are "name{labels} value" and nothing else.
check "metrics: valid Prometheus text format" python3 - "$W/metrics" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[0] == "200", lines[0]
label = r'[a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*"'
sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{%s(,%s)*\})? -?[0-9.e+]+$' % (label, label))
typed, ok = set(), True
for l in lines[1:]:
    if not l or l.startswith("# HELP "):
        continue
    if l.startswith("# TYPE "):
        typed.add(l.split()[2])
        continue
    m = sample.match(l)
    if not m or m.group(1) not in typed:
        print("bad line:", l)
        ok = False
sys.exit(0 if ok else 1)
PY
if command -v promtool >/dev/null; then
	check "metrics: promtool check metrics finds nothing" sh -c "tail -n +2 '$W/metrics' | promtool check metrics"
else
	echo "# promtool not installed: its lint not run (the format check above stands)"
fi
metric() { grep -E "^$1 " "$W/metrics" | awk '{print $NF}'; }
check "metrics: applied checksum" [ "$(metric "node_agent_applied_info\{checksum=\"$sum\"\}")" = 1 ]
check "metrics: applied generation = desired generation ($gen)" \
	[ "$(metric node_agent_applied_generation)" = "$gen" -a "$(metric node_agent_desired_generation)" = "$gen" ]
check "metrics: apply result success" [ "$(metric node_agent_apply_success)" = 1 ]
check "metrics: API requests by verb and code (GET 200, PATCH 200)" \
	[ "$(metric 'node_agent_api_requests_total\{verb="GET",code="200"\}')" -ge 2 -a \
	  "$(metric 'node_agent_api_requests_total\{verb="PATCH",code="200"\}')" -ge 1 ]
check "metrics: watch connects by resource" [ "$(metric 'node_agent_watch_connects_total\{resource="secrets"\}')" -ge 1 ]
check "metrics: Lease renewals" [ "$(metric node_agent_lease_renewals_total)" -ge 1 ]
check "metrics: not on the health port (404)" [ "$(get 2751 /metrics | sed -n 1p)" = 404 ]
check "healthz: not on the metrics port (404)" [ "$(get 2752 /healthz | sed -n 1p)" = 404 ]
check "POST: 405" [ "$(get 2751 /healthz POST | sed -n 1p)" = 405 ]
check "HEAD: 200, no body" [ "$(get 2751 /healthz HEAD | tr '\n' ' ')" = "200 " ]

# raw PORT: sends stdin's bytes, prints the status line (or "closed").
raw() {
	python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
try:
    s.sendall(sys.stdin.buffer.read())
    r = s.recv(4096)
except OSError:
    r = b""
print(r.split(b"\r\n")[0].decode() if r else "closed")' "$1"
}
check "a head larger than 1 KiB: 431" \
	[ "$(python3 -c 'import sys; sys.stdout.write("GET /healthz HTTP/1.1\r\nX: " + "a" * 2000)' | raw 2751)" = "HTTP/1.1 431 Request Header Fields Too Large" ]
check "binary garbage: 400" [ "$(printf '\x00\x01\x02\r\n\r\n' | raw 2751)" = "HTTP/1.1 400 Bad Request" ]
check "a bad request line: 400" [ "$(printf 'GET healthz HTTP/1.1\r\n\r\n' | raw 2751)" = "HTTP/1.1 400 Bad Request" ]

# 20 silent connections and one trickling a byte a second: all closed by
# the agent at its 3 s deadline (8 s allowed under load), none kept open.
python3 - >"$W/slow" <<'PY'
import socket, time
t0 = time.time()
socks = []
for i in range(20):
    try:
        socks.append(socket.create_connection(("127.0.0.1", 2751), timeout=1))
    except OSError:
        pass
tr = socket.create_connection(("127.0.0.1", 2752), timeout=1)
closed = 0
for s in socks:
    s.settimeout(max(0.1, t0 + 8 - time.time()))
    try:
        if s.recv(100) == b"":
            closed += 1
    except ConnectionResetError:
        closed += 1
    except OSError:
        pass
msg, trickle_closed = b"GET /metrics HTTP/1.1\r\n", False
for i in range(len(msg)):
    try:
        tr.send(msg[i:i + 1])
        time.sleep(1)
    except OSError:
        trickle_closed = True
        break
print(len(socks), closed, "%.1f" % (time.time() - t0), trickle_closed)
PY
read -r n closed secs trickle <"$W/slow"
check "20 silent connections: all closed by the agent ($closed of $n, ${secs} s)" [ "$closed" -eq "$n" ]
check "a trickling client is closed at the deadline" [ "$trickle" = True ]
check "  ... and the listener serves again" [ "$(get 2751 /healthz | sed -n 1p)" = 200 ]

rss0=$(agent_rss_kb)
python3 -c '
import http.client
for i in range(200):
    c = http.client.HTTPConnection("127.0.0.1", 2752, timeout=5)
    c.request("GET", "/metrics")
    assert c.getresponse().read()
    c.close()'
rss1=$(agent_rss_kb)
echo "# VmRSS before/after 200 scrapes: $rss0 / $rss1 kB"
if sanitized "$AGENT"; then
	# ASan keeps freed memory in its quarantine: RSS says nothing there;
	# LeakSanitizer checks for leaks when the agent exits.
	echo "# sanitizer build: VmRSS not judged (ASan quarantine)"
else
	check "200 scrapes: VmRSS grows less than 512 kB" [ $((rss1 - rss0)) -lt 512 ]
fi

check "metrics: build_info and process_* (resident memory, CPU, open fds, start time)" \
	[ "$(grep -cE '^(node_agent_build_info\{version="[^"]+"\}|process_(resident_memory_bytes|cpu_seconds_total|open_fds|start_time_seconds)) ' "$W/metrics")" = 5 ]
check "metrics: responses counted per listener" \
	grep -qE '^node_agent_http_responses_total\{listener="healthz"\} [1-9]' "$W/metrics"
dur=$(metric node_agent_apply_duration_seconds)
check "metrics: apply duration with sub-second resolution ($dur s)" grep -qE '^[0-9]+\.[0-9]{3}$' <<<"$dur"

# A restart of the agent (every package upgrade does one) keeps what the
# metrics say about the apply: picked up from desired.json and result.json.
agent_stop
mark=$(log_mark)
agent_start
wait_log "serving metrics" "$mark" 10
get 2752 /metrics >"$W/metrics"
check "after a restart: applied generation $gen, desired generation $gen" \
	[ "$(metric node_agent_applied_generation)" = "$gen" -a "$(metric node_agent_desired_generation)" = "$gen" ]
check "after a restart: apply_success 1, applied checksum" \
	[ "$(metric node_agent_apply_success)" = 1 -a "$(metric "node_agent_applied_info\{checksum=\"$sum\"\}")" = 1 ]
ready200() { [ "$(get 2751 /readyz 2>/dev/null | sed -n 1p)" = 200 ]; }
check "after a restart: readyz 200 once the API server answered" wait_for 10 ready200

# IPv6: bindAddress "[::1]" (where the namespace has IPv6 loopback).
if ip -6 addr show dev lo 2>/dev/null | grep -q '::1/128'; then
	agent_config "$AGENT_CONF" '{"lease": {"enabled": true}, "server": {"bindAddress": "[::1]"}}'
	mark=$(log_mark)
	kill -HUP "$AGENT_PID"
	wait_log "serving metrics on http://[::1]:2752/" "$mark" 10
	check "bindAddress [::1]: healthz served on IPv6 loopback" python3 -c '
import http.client
c = http.client.HTTPConnection("::1", 2751, timeout=5)
c.request("GET", "/healthz")
assert c.getresponse().status == 200'
	agent_config "$AGENT_CONF" '{"lease": {"enabled": true}}'
	mark=$(log_mark)
	kill -HUP "$AGENT_PID"
	wait_log "serving metrics on http://127.0.0.1:2752/" "$mark" 10
else
	echo "# no IPv6 loopback in the namespace: [::1] not tried"
fi

# readyz follows the last contact: with the API server down it turns 503
# once the window (watchIdleMs + requestMs, here 2 s) has passed, and 200
# again when the server answers.
agent_config "$AGENT_CONF" '{"lease": {"enabled": true}, "timeouts": {"watchIdleMs": 1000, "requestMs": 1000}}'
mark=$(log_mark)
kill -HUP "$AGENT_PID"
wait_log "reloading configuration" "$mark" 10
wait_for 10 ready200
kctl POST /down >/dev/null
not_ready() { [ "$(get 2751 /readyz 2>/dev/null | sed -n 1p)" = 503 ]; }
check "readyz: 503 once the API server has not answered for the window" wait_for 15 not_ready
out=$(get 2751 /readyz)
check "  ... saying for how long ($(sed -n 2p <<<"$out"))" grep -q "no contact with the API server for [0-9]* s (more than 2 s)" <<<"$out"
get 2752 /metrics >"$W/metrics"
check "  ... node_agent_ready 0" [ "$(metric node_agent_ready)" = 0 ]
kctl POST /up >/dev/null
check "readyz: 200 again once the API server answers" wait_for 15 ready200

# Off switch: SIGHUP with healthPort 0.
agent_config "$AGENT_CONF" '{"lease": {"enabled": true}, "server": {"healthPort": 0}}'
mark=$(log_mark)
kill -HUP "$AGENT_PID"
wait_log "reloading configuration" "$mark" 10
sleep 0.5
check "healthPort 0: nothing listens on 2751" \
	python3 -c 'import socket, sys
try:
    socket.create_connection(("127.0.0.1", 2751), timeout=2)
except ConnectionRefusedError:
    sys.exit(0)
sys.exit(1)'
check "  ... metrics still served" [ "$(get 2752 /metrics | sed -n 1p)" = 200 ]
check "the agent is alive (the seccomp filter allows the listener)" kill -0 "$AGENT_PID"

[ "$_fail" -eq 0 ] || dump_logs
finish
