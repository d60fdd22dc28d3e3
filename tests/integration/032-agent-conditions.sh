#!/bin/bash
# The SystemdUnitsReady Node condition and the unit Events (agent/conditions.c,
# agent/events.c) on the stand-in API server: the condition cloud-config-exec
# hands over in result.json (unitsReady; 033 shows the real executor writing
# it against a real systemd) is patched into nodes/<n>/status with a strategic
# merge patch that leaves the kubelet's conditions alone; False names the
# failed unit; a fix turns it True (new lastTransitionTime); a new message
# with the same status keeps lastTransitionTime; an unchanged condition
# (timer re-run, agent restart) writes nothing; restartedUnits/stoppedUnits
# become SystemDUnitRestart/SystemDUnitStop Events with gardener-node-agent's
# message. The executor here is a stand-in that writes result.json.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require

S=$(scratch)
ROOT=$S/root
install -d -m 0755 "$ROOT" "$ROOT/etc" "$ROOT/home" "$ROOT/var" "$ROOT/var/lib" "$ROOT/opt"
cat >"$S/v1.yaml" <<-'EOF'
spec:
  files:
  - path: /etc/hello
    permissions: 420
    content:
      inline:
        data: "v1"
  units:
  - name: a.service
    content: |
      [Service]
      ExecStart=/bin/true
EOF
KUBE_OSC=$S/v1.yaml kube_start "$S" || { fail "test API server starts"; finish; exit 1; }
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
AGENT_CONF=$S/agent.json
agent_config "$AGENT_CONF" '{"timeouts": {"watchIdleMs": 120000}, "events": {"enabled": true}}'
# The kubelet's condition, which the agent's patch must leave alone.
kctl POST /node '{"name": "'"$KUBE_NODE"'"}' >/dev/null
admin() { curl -sS --cacert "$KUBE_PKI/ca.crt" -H "Authorization: Bearer admin-token" "$@"; }
admin -X PATCH -H "Content-Type: application/strategic-merge-patch+json" \
	--data '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"kubelet is posting ready status"}]}}' \
	"$KUBE_API/api/v1/nodes/$KUBE_NODE/status" >/dev/null

# A stand-in executor: it writes result.json in one go as cloud-config-exec
# does (success for the desired checksum and generation), plus what
# $S/report holds for the systemd half.
cat >"$S/exec" <<-EOF
#!/bin/bash
exec python3 "$S/report.py" "$ROOT/var/lib/cloud-config-exec/result.json" "$S/report" "$ROOT/var/lib/node-agent/desired.json"
EOF
chmod +x "$S/exec"
install -d -m 0755 "$ROOT/var/lib/cloud-config-exec"
cat >"$S/report.py" <<-'EOF'
import json, os, sys, time
res, rep = sys.argv[1], json.load(open(sys.argv[2]))
if len(sys.argv) > 3:
    des = json.load(open(sys.argv[3]))
    d = {"version": 1, "checksum": des["checksum"], "generation": des["generation"], "success": True,
         "changedUnits": [], "finishedAt": int(time.time())}
else:
    d = json.load(open(res))
    d.pop("restartedUnits", None)
    d.pop("stoppedUnits", None)
d.update(rep)
if "unitsReady" in d:
    d["unitsReady"].setdefault("checkedAt", int(time.time()))
tmp = res + ".tmp"
open(tmp, "w").write(json.dumps(d))
os.rename(tmp, res)
EOF
# report JSON: what the systemd half says from now on (and rewrite result.json
# now, as a timer run that finds a new state would).
report() {
	printf '%s' "$1" >"$S/report"
	python3 "$S/report.py" "$ROOT/var/lib/cloud-config-exec/result.json" "$S/report"
}
EXEC=$S/exec
FAILED='"unitsReady": {"status": "False", "reason": "UnhealthyUnits", "message": "a.service: failed"}'
printf '{%s, "restartedUnits": ["a.service", "b.service"], "stoppedUnits": ["c.timer"]}' "$FAILED" >"$S/report"
exec_loop_start
cond() { kctl GET "/node?name=$KUBE_NODE" | jget "[c for c in d.get('status', {}).get('conditions', []) if c['type'] == '$1']"; }
field() { cond SystemdUnitsReady | jget "d[0]['$1'] if d else ''"; }
wait_field() { # wait_field FIELD VALUE [TIMEOUT]
	local i
	for ((i = 0; i < ${3:-20} * 5; i++)); do
		[ "$(field "$1")" = "$2" ] && return 0
		sleep 0.2
	done
	return 1
}
status_patches() { kube_count "$1" 'e["method"] == "PATCH" and e["path"].endswith("/status") and e["user"] != "admin"'; }

t0=$(now)
agent_start
check "False with the failed unit named" wait_field message "a.service: failed"
check "  ... status False, reason UnhealthyUnits" \
	[ "$(field status) $(field reason)" = "False UnhealthyUnits" ]
check "  ... sent as a strategic merge patch of nodes/<n>/status" \
	[ "$(kube_count "$t0" 'e["method"] == "PATCH" and e["path"] == "/api/v1/nodes/'"$KUBE_NODE"'/status" and e["contentType"] == "application/strategic-merge-patch+json" and e["status"] == 200')" -ge 1 ]
check "  ... the kubelet's Ready condition is still there" [ "$(cond Ready | jget "d[0]['reason']")" = KubeletReady ]
ltt1=$(field lastTransitionTime)
check "  ... lastTransitionTime and lastHeartbeatTime set (RFC 3339, seconds)" \
	python3 -c 'import sys, re; sys.exit(0 if all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", x) for x in sys.argv[1:]) else 1)' \
	"$ltt1" "$(field lastHeartbeatTime)"

events() { kctl GET "/events?namespace=default" | jget "[(e['involvedObject']['name'], e['type'], e['reason'], e['message']) for e in d['items']]"; }
has_event() { events | grep -qF "$1"; }
check "Event SystemDUnitRestart for each restarted unit" \
	wait_for 10 has_event '"Normal", "SystemDUnitRestart", "processed restart of unit b.service"'
check "  ... and a.service" has_event '"Normal", "SystemDUnitRestart", "processed restart of unit a.service"'
check "Event SystemDUnitStop for the stopped unit" has_event '"Normal", "SystemDUnitStop", "processed stop of unit c.timer"'
check "  ... next to OSCApplied" has_event '"OSCApplied"'

# The same status, another message: lastTransitionTime stays.
sleep 1.1 # the times have seconds: a new transition would show
report '{"unitsReady": {"status": "False", "reason": "UnhealthyUnits", "message": "a.service: failed; d.service: not loaded"}}'
check "same status, new message: patched" wait_field message "a.service: failed; d.service: not loaded"
check "  ... lastTransitionTime unchanged" [ "$(field lastTransitionTime)" = "$ltt1" ]

# A run that finds the same state: nothing is written.
t=$(now)
report '{"unitsReady": {"status": "False", "reason": "UnhealthyUnits", "message": "a.service: failed; d.service: not loaded"}}'
sleep 1.5
check "an unchanged condition is not written again" [ "$(status_patches "$t")" -eq 0 ]

# Fixed: True, a new lastTransitionTime.
report '{"unitsReady": {"status": "True", "reason": "AllUnitsHealthy", "message": "All systemd units from the operating system config are running as expected."}}'
check "fixed: True, AllUnitsHealthy" wait_field reason AllUnitsHealthy
check "  ... status True" [ "$(field status)" = True ]
check "  ... lastTransitionTime moved" [ "$(field lastTransitionTime)" != "$ltt1" ]

# An agent restart finds the Node's condition equal: no write.
agent_stop
t=$(now)
agent_start
check "restarted agent watches its Node again" wait_hit "$t" 'e["watch"] and "/nodes" in e["path"] and e["user"] != "admin"'
sleep 1.5
check "  ... and writes no condition it already finds on the Node" [ "$(status_patches "$t")" -eq 0 ]

# The condition removed behind the agent's back (an admin's JSON merge patch
# replaces the whole list; that is why the agent sends a strategic one).
admin -X PATCH -H "Content-Type: application/merge-patch+json" \
	--data '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"kubelet is posting ready status"}]}}' \
	"$KUBE_API/api/v1/nodes/$KUBE_NODE/status" >/dev/null
check "a condition removed by someone else is written again" wait_field reason AllUnitsHealthy
check "  ... next to the kubelet's" [ "$(cond Ready | jget "d[0]['reason']")" = KubeletReady ]

agent_stop
check "the agent exits cleanly (rc $AGENT_RC)" [ "$AGENT_RC" -eq 0 ]
check_not "  ... with no sanitizer report in its log" grep -q "Sanitizer" "$S/agent.log"

[ "$_fail" -eq 0 ] || dump_logs
finish
