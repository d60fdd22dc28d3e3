#!/bin/bash
# Health repair (agent/health.c), as gardener-node-agent's health-check
# controller does it, without root in the agent: a fake kubelet healthz on
# 127.0.0.1:10248 (this test's own network namespace). Healthy: nothing.
# HTTP 500 for longer than health.unhealthyMs: a restart request for
# kubelet.service in desired.json, carried out and reported by the executor,
# Events on the Node; no second repair within health.repairIntervalMs. A
# healthz that accepts and never answers is unhealthy through the probe's
# deadline while the Secret watch keeps applying. The kubelet's Ready
# condition flapping: an Event. A probe URL off loopback: a config error.
# Issue 36: with repairIntervalMs = unhealthyMs (the defaults' ratio, as
# gardener-node-agent) both units are restarted after each spell.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require

UNHEALTHY_MS=2000
# Long enough that the checks between the first repair and the "held back"
# check (the executor's run, three Events) fit in it on a loaded machine:
# with 7 s a run of 7 s under load made the second repair legitimate.
REPAIR_MS=20000
W=$(scratch)
osc() {
	cat <<-EOF
	spec:
	  files:
	  - path: /etc/hello
	    permissions: 420
	    content:
	      inline:
	        data: "$1"
	  units:
	  - name: kubelet.service
	    enable: true
	    content: |
	      [Service]
	      ExecStart=/bin/true
	EOF
}
osc v1 >"$W/v1.yaml"

S=$(scratch)
ROOT=$S/root
install -d -m 0755 "$ROOT" "$ROOT/etc" "$ROOT/home" "$ROOT/var" "$ROOT/var/lib" "$ROOT/opt"

# The fake kubelet: its answer comes from $S/kubelet.mode (ok, fail, hang);
# every request is logged with its time.
echo ok >"$S/kubelet.mode"
python3 - "$S/kubelet.mode" "$S/kubelet.log" <<-'EOF' &
	import socket, socketserver, sys, time
	mode_file, log_file = sys.argv[1], sys.argv[2]
	class H(socketserver.BaseRequestHandler):
	    def handle(self):
	        self.request.settimeout(30)
	        data = b""
	        try:
	            while b"\r\n\r\n" not in data:
	                chunk = self.request.recv(4096)
	                if not chunk:
	                    return
	                data += chunk
	        except OSError:
	            return
	        mode = open(mode_file).read().strip()
	        with open(log_file, "a") as f:
	            f.write("%.3f %s %s\n" % (time.time(), mode, data.split(b"\r\n")[0].decode()))
	        if mode == "hang":
	            try:  # accepted, read, never answered: until the client goes
	                while self.request.recv(4096):
	                    pass
	            except OSError:
	                pass
	            return
	        code, body = (200, b"ok") if mode == "ok" else (500, b"[-]syncloop failed\nhealthz check failed\n")
	        self.request.sendall(b"HTTP/1.1 %d X\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (code, len(body), body))
	class S(socketserver.ThreadingTCPServer):
	    allow_reuse_address = True
	    daemon_threads = True
	S(("127.0.0.1", 10248), H).serve_forever()
EOF
on_exit "kill $!"
for ((i = 0; i < 50; i++)); do curl -s -o /dev/null http://127.0.0.1:10248/healthz && break; sleep 0.1; done
: >"$S/kubelet.log"

KUBE_OSC=$W/v1.yaml kube_start "$S" || { fail "test API server starts"; finish; exit 1; }
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
AGENT_CONF=$S/agent.json

# A probe that would leave the node: refused at load time, with the key.
agent_config "$AGENT_CONF" '{"health": {"enabled": true, "kubeletUrl": "http://10.250.0.5:10248/healthz"}}'
out=$("$AGENT" --config "$AGENT_CONF" --check-config 2>&1)
check "a non-loopback kubeletUrl is a config error" \
	grep -q 'health.kubeletUrl: probes go to loopback only.*"http://10.250.0.5:10248/healthz"' <<<"$out"

agent_config "$AGENT_CONF" '{"events": {"enabled": true},
	"health": {"enabled": true, "intervalMs": 500, "timeoutMs": 1000, "unhealthyMs": '$UNHEALTHY_MS', "repairIntervalMs": '$REPAIR_MS',
	           "readyToggles": 3, "readyWindowMs": 60000}}'
out=$("$AGENT" --config "$AGENT_CONF" --check-config 2>&1)
check "--check-config shows the health settings" \
	grep -q "health repair: kubelet probe http://127.0.0.1:10248/healthz, containerd probe its socket (cloud-config-exec-containerd-probe.timer's verdicts)" <<<"$out"

exec_loop_start
t=$(now)
agent_start
kube_wait_annotation checksum/cloud-config-data "$(sha256 "$W/v1.yaml")" "$t" 20 >/dev/null ||
	{ fail "agent applies the first OSC"; dump_logs; finish; exit 1; }

events() { kctl GET "/events?namespace=default" | jget "[(e['type'], e['reason'], e['message']) for e in d['items']]"; }
restart_id() { jget "(d.get('restart') or {}).get('id')" <"$(desired_file)"; }
restart_units() { jget "(d.get('restart') or {}).get('units')" <"$(desired_file)"; }
probes() { wc -l <"$S/kubelet.log"; }
at_least() { [ "$(probes)" -ge "$1" ]; }

# Healthy: probed every intervalMs, nothing else.
check "the kubelet is probed (healthy)" wait_for 20 at_least 3
check "  ... no restart request" [ -z "$(restart_id)" ]
kv() { python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); print(d["healthy"], d.get("serverVersion"), d.get("error"))' \
	"$ROOT/var/lib/node-agent/kubelet-health.json" 2>/dev/null; }
check "  ... its verdict written for the executor's in-place update (kubelet-health.json)" test "$(kv)" = "True ok None"
check "  ... nothing logged as unhealthy" sh -c "! grep -q 'unhealthy' '$S/agent.log'"

# HTTP 500: a restart request after unhealthyMs, once.
echo fail >"$S/kubelet.mode"
t0=$(now)
mark=$(log_mark)
has_health_request() { [[ "$(restart_id)" == health-kubelet.service-* ]]; }
check "500: a restart request for kubelet.service in desired.json" wait_for 20 has_health_request
check "  ... the verdict for the executor says so" test "$(kv)" = "False None HTTP status 500"
t1=$(now)
id1=$(restart_id)
check "  ... for kubelet.service only" [ "$(restart_units)" = '["kubelet.service"]' ]
check "  ... not before unhealthyMs ($(python3 -c "print('%.1f' % ($t1 - $t0))") s >= $((UNHEALTHY_MS / 1000)) s)" \
	python3 -c "import sys; sys.exit(0 if $t1 - $t0 >= $UNHEALTHY_MS / 1000 - 0.1 else 1)"
executed() { [ "$(result_field "d.get('restartId')")" = "$id1" ]; }
check "  ... the executor carried it out (result.json restartId)" wait_for 20 executed
check "  ... logged: unhealthy, restart requested" wait_log "kubelet unhealthy for more than 2s (HTTP status 500); requesting a restart of kubelet.service" "$mark" 5
ev_has() { events | grep -qF -- "$1"; }
check "  ... Event: Kubelet is unhealthy (Warning, reason kubelet)" \
	wait_for 20 ev_has '["Warning", "kubelet", "Kubelet is unhealthy, health check error: HTTP status 500"]'
check "  ... Event: restarting it" \
	wait_for 20 ev_has '["Warning", "kubelet", "Kubelet is unhealthy for more than 2s, restarting it. Health check error: HTTP status 500"]'
check "  ... Event: health repair done (Normal)" \
	wait_for 20 ev_has "[\"Normal\", \"kubelet\", \"health repair done: kubelet.service restarted by cloud-config-exec (request $id1)\"]"

# Still 500: the limit holds (one repair per repairIntervalMs), logged once.
check "still unhealthy: the next repair is held back by repairIntervalMs" \
	wait_log "not restarting kubelet.service again for another" "$mark" 10
sleep 1
check "  ... no second request" [ "$(restart_id)" = "$id1" ]
check "  ... one restart decision, one hold logged" \
	[ "$(tail -n +"$((mark + 1))" "$S/agent.log" | grep -c 'requesting a restart')/$(tail -n +"$((mark + 1))" "$S/agent.log" | grep -c 'not restarting kubelet.service again')" = 1/1 ]

# Healthy again.
mark=$(log_mark)
echo ok >"$S/kubelet.mode"
check "healthy again: logged" wait_log "kubelet is healthy again" "$mark" 5
check "  ... Event: Kubelet is healthy" wait_for 20 ev_has '["Normal", "kubelet", "Kubelet is healthy"]'

# A healthz that accepts and never answers: unhealthy through the deadline;
# the Secret watch goes on applying meanwhile.
mark=$(log_mark)
echo hang >"$S/kubelet.mode"
check "hanging healthz: unhealthy after the probe's timeout" wait_log "kubelet is unhealthy: " "$mark" 5
check "  ... as a timeout" sh -c "tail -n +$((mark + 1)) '$S/agent.log' | grep 'kubelet is unhealthy: ' | grep -qi 'timeout\|timed out'"
osc v2 >"$W/v2.yaml"
t=$(kube_secret "$W/v2.yaml" | jget "d['t']")
ta=$(kube_wait_annotation checksum/cloud-config-data "$(sha256 "$W/v2.yaml")" "$t" 20)
check "  ... a new OSC is applied meanwhile ($(python3 -c "print('%.1f' % (${ta:-0} - $t))") s)" \
	python3 -c "import sys; sys.exit(0 if 0 < ${ta:-0} - $t < 5 else 1)"
check "  ... /etc/hello is v2" [ "$(cat "$ROOT/etc/hello")" = v2 ]
second() { [[ "$(restart_id)" == health-kubelet.service-* && "$(restart_id)" != "$id1" ]]; }
check "  ... repaired again once repairIntervalMs has passed" wait_for $((REPAIR_MS / 1000 + 20)) second
t2=$(now)
check "  ... not before ($(python3 -c "print('%.1f' % ($t2 - $t1))") s >= $((REPAIR_MS / 1000)) s after the first)" \
	python3 -c "import sys; sys.exit(0 if $t2 - $t1 >= $REPAIR_MS / 1000 - 0.2 else 1)"
hung=$(grep -c " hang " "$S/kubelet.log")
check "  ... the hanging probes were made ($hung)" [ "$hung" -ge 2 ]
echo ok >"$S/kubelet.mode"

metrics=$(curl -s http://127.0.0.1:2752/metrics)
check "metrics: repairs requested and done" \
	grep -q 'node_agent_health_repairs_total{unit="kubelet.service",state="requested"} 2' <<<"$metrics"
check "metrics: probe results" \
	grep -qE 'node_agent_health_probes_total\{unit="kubelet.service",result="unhealthy"\} [1-9]' <<<"$metrics"

# Ready flapping: 3 NotReady -> Ready changes within the window: an Event.
ready() { kctl POST /node '{"name": "'"$KUBE_NODE"'", "status": {"conditions": [{"type": "Ready", "status": "'"$1"'", "reason": "KubeletReady"}]}}' >/dev/null; }
mark=$(log_mark)
for s in False True False True; do ready $s; done
sleep 1
# (the Event list must be read: a failed read is a failure, not "none")
no_flap_event() { local e; e=$(events) || return 1; ! grep -q 'toggled between' <<<"$e"; }
check "2 Ready toggles: no flapping Event" no_flap_event
ready False
ready True
check "3 Ready toggles in the window: a Warning Event" \
	wait_for 20 ev_has '["Warning", "kubelet", "Kubelet toggled between NotReady and Ready at least 3 times in a 1m0s time window. Rebooting the node might help"]'
check "  ... logged" wait_log "kubelet toggled between NotReady and Ready 3 times within 1m0s" "$mark" 5

# Issue 25 item 7: containerd's socket probe (cloud-config-exec probe-
# containerd, 076) writes containerd-health.json into the executor's state
# directory; with a criConfig in the OSC the agent takes its verdicts as
# gardener-node-agent takes Version()'s: Events with containerd.go's texts,
# a restart of containerd.service after unhealthyMs. Verdicts are written
# here by hand every 0.5 s (the timer's 30 s, shortened).
osc v3 >"$W/v3.yaml"
printf '  criConfig:\n    name: containerd\n' >>"$W/v3.yaml"
t=$(kube_secret "$W/v3.yaml" | jget "d['t']")
kube_wait_annotation checksum/cloud-config-data "$(sha256 "$W/v3.yaml")" "$t" 30 >/dev/null
check "an OSC with a criConfig is applied" test $? -eq 0
VERDICT=$ROOT/var/lib/cloud-config-exec/containerd-health.json
verdicts() { # verdicts HEALTHY: a fresh one every 0.5 s until killed
	while :; do
		if [ "$1" = true ]; then
			printf '{"version": 1, "healthy": true, "checkedAt": %s, "serverVersion": "1.6.20~ds1"}\n' "$(date +%s)"
		else
			printf '{"version": 1, "healthy": false, "checkedAt": %s, "error": "ctr version at /run/containerd/containerd.sock failed"}\n' "$(date +%s)"
		fi >"$VERDICT.tmp" && mv "$VERDICT.tmp" "$VERDICT"
		sleep 0.5
	done
}
mark=$(log_mark)
verdicts false &
VPID=$!
on_exit "kill $VPID 2>/dev/null"
has_ctrd_request() { [[ "$(restart_id)" == health-containerd.service-* ]]; }
check "socket verdicts unhealthy: a restart request for containerd.service" wait_for 30 has_ctrd_request
check "  ... for containerd.service only" [ "$(restart_units)" = '["containerd.service"]' ]
idc=$(restart_id)
executed_c() { [ "$(result_field "d.get('restartId')")" = "$idc" ]; }
check "  ... the executor carried it out" wait_for 20 executed_c
check "  ... logged, naming the socket probe" \
	wait_log "containerd is unhealthy: ctr version at /run/containerd/containerd.sock failed at its socket" "$mark" 5
check "  ... Event: Containerd is unhealthy (containerd.go's text)" \
	wait_for 20 ev_has '["Warning", "containerd", "Containerd is unhealthy: ctr version at /run/containerd/containerd.sock failed"]'
check "  ... Event: restarting it" \
	wait_for 20 ev_has '["Warning", "containerd", "Containerd is unhealthy for more than 2s, restarting it: ctr version at /run/containerd/containerd.sock failed"]'
check "  ... held back afterwards (never a restart loop)" \
	wait_log "not restarting containerd.service again for another" "$mark" 10
check "  ... one restart request" [ "$(restart_id)" = "$idc" ]
kill $VPID; wait $VPID 2>/dev/null
verdicts true &
VPID=$!
on_exit "kill $VPID 2>/dev/null"
check "healthy verdicts: Event Containerd is healthy" wait_for 20 ev_has '["Normal", "containerd", "Containerd is healthy"]'
kill $VPID; wait $VPID 2>/dev/null

# Issue 36: gardener-node-agent's cadence. With repairIntervalMs equal to
# unhealthyMs (the defaults' ratio: 60 s and 60 s), a unit that stays
# unhealthy is restarted after each spell of unhealthyMs, containerd and
# the kubelet alike, whatever the last apply's outcome (before, a failed
# apply stopped both repairs); each restart is carried out by the executor.
# Every apply fails meanwhile (a criConfig plugin the containerd step
# refuses; the units step, and so the restarts, still run), and the agent
# restarts: the kubelet is still repaired (the node was configured once).
osc v4 >"$W/v4.yaml"
printf '  criConfig:\n    name: containerd\n    cgroupDriver: systemd\n    containerd:\n      plugins:\n      - path: [io.containerd.grpc.v1.cri, containerd, runtimes, runc, options]\n        values: {BinaryName: /x}\n' >>"$W/v4.yaml"
t=$(kube_secret "$W/v4.yaml" | jget "d['t']")
failed_cri() { [ "$(result_field "d.get('failedStep')")" = containerd ]; }
check "cadence: the applies fail meanwhile (a refused criConfig plugin)" wait_for 30 failed_cri
agent_stop
agent_config "$AGENT_CONF" '{"events": {"enabled": true},
	"health": {"enabled": true, "intervalMs": 500, "timeoutMs": 1000, "unhealthyMs": '$UNHEALTHY_MS', "repairIntervalMs": '$UNHEALTHY_MS'}}'
echo fail >"$S/kubelet.mode"
mark=$(log_mark)
t0=$(now)
agent_start
verdicts false &
VPID=$!
on_exit "kill $VPID 2>/dev/null"
repairs_done() { tail -n +"$((mark + 1))" "$S/agent.log" | grep -c "health repair done: cloud-config-exec restarted $1"; }
three_each() { [ "$(repairs_done kubelet.service)" -ge 3 ] && [ "$(repairs_done containerd.service)" -ge 3 ]; }
check "cadence: both units restarted again and again while they stay unhealthy" wait_for 60 three_each
t1=$(now)
kill $VPID; wait $VPID 2>/dev/null
echo ok >"$S/kubelet.mode"
gaps() { # the times between one unit's restarts carried out, in s (from the
	# request ids, health-<unit>-<unix time>.<n>, in "health repair done")
	tail -n +"$((mark + 1))" "$S/agent.log" | python3 -c '
import re, sys
ts = [int(m.group(1)) for l in sys.stdin for m in [re.search(r"\(request health-" + sys.argv[1] + r"-(\d+)\.\d+\)", l)] if m]
print(" ".join(str(b - a) for a, b in zip(ts, ts[1:])))' "$1"
}
kg=$(gaps kubelet.service) cg=$(gaps containerd.service)
echo "# cadence: kubelet restarts every [$kg] s, containerd every [$cg] s (unhealthyMs $((UNHEALTHY_MS / 1000)) s), $(python3 -c "print('%.1f' % ($t1 - $t0))") s for three each"
# (whole seconds: a gap of unhealthyMs may read one less)
no_early() { [ "$(wc -w <<<"$1")" -ge 2 ] || return 1; for g in $1; do [ "$g" -ge $((UNHEALTHY_MS / 1000 - 1)) ] || return 1; done; }
check "  ... never sooner than unhealthyMs apart (kubelet: $kg)" no_early "$kg"
check "  ... never sooner than unhealthyMs apart (containerd: $cg)" no_early "$cg"

[ "$_fail" -eq 0 ] || dump_logs
finish
