#!/bin/bash
# In-place updates (GEP-31), node-agent's half (agent/nodeupdate.c), on the
# stand-in API server acting as machine-controller-manager: while the
# executor reports inPlaceUpdate state "waiting", desired.json has no
# readyForUpdate, the Node gets no update-result label and keeps the old
# checksum annotation; once "MCM" sets the Node condition InPlaceUpdate with
# reason ReadyForUpdate, the agent (by its Node watch) writes readyForUpdate
# true; "successful" becomes the label update-result=successful with the
# new checksum; an OS update "running" puts the version into
# node-agent.gardener.cloud/updating-operating-system-version; "failed"
# becomes update-result=failed with the reason in
# node.machine.sapcloud.io/update-failed-reason and no checksum; a
# restarted agent derives the same from the Node and result.json. Before
# the label "successful", the Pods left on the Node are deleted, those of
# other Nodes untouched, and a delete that fails holds the label back
# until a retry succeeds (agent/podsweep.c, gardener's deleteRemainingPods).
# The
# executor here is a stand-in that writes result.json as lib/node/result.h
# describes it (the real executor's steps are tested on its side).
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require

S=$(scratch)
ROOT=$S/root
install -d -m 0755 "$ROOT" "$ROOT/etc" "$ROOT/home" "$ROOT/var" "$ROOT/var/lib" "$ROOT/opt"
osc() { printf 'spec:\n  files:\n  - path: /etc/hello\n    permissions: 420\n    content:\n      inline:\n        data: "v%s"\n' "$1"; }
osc 1 >"$S/v1.yaml"
KUBE_OSC=$S/v1.yaml kube_start "$S" || { fail "test API server starts"; finish; exit 1; }
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
AGENT_CONF=$S/agent.json
agent_config "$AGENT_CONF" '{"timeouts": {"watchIdleMs": 120000}, "events": {"enabled": true}}'
kctl POST /node '{"name": "'"$KUBE_NODE"'"}' >/dev/null

# The stand-in executor: result.json for desired.json's checksum and
# generation; $S/inplace (absent: no in-place update) says what the update
# does once the Node is ready for it: {"kinds": [...], "outcome":
# "successful"|"failed"|"running", "reason": "...", "os": "<version>"}.
install -d -m 0755 "$ROOT/var/lib/cloud-config-exec"
cat >"$S/exec" <<-EOF
#!/bin/bash
exec python3 "$TESTS_DIR/lib/inplace-exec.py" "$ROOT/var/lib/cloud-config-exec/result.json" "$ROOT/var/lib/node-agent/desired.json" "$S/inplace"
EOF
chmod +x "$S/exec"
EXEC=$S/exec
exec_loop_start

ready_in_desired() { jget "d.get('inPlaceUpdate', {}).get('readyForUpdate', False)" <"$(desired_file)"; }
# mcm REASON|"": the InPlaceUpdate condition as machine-controller-manager
# sets it (the whole conditions list: the stand-in merges JSON).
mcm() {
	if [ -n "$1" ]; then
		kctl POST /node '{"name": "'"$KUBE_NODE"'", "status": {"conditions": [{"type": "InPlaceUpdate", "status": "True", "reason": "'"$1"'", "message": "by the test"}]}}' >/dev/null
	else
		kctl POST /node '{"name": "'"$KUBE_NODE"'", "status": {"conditions": []}}' >/dev/null
	fi
}
# view: the Node's in-place fields in one request (python is what costs on
# a loaded machine): V_RESULT (label update-result), V_REASON, V_OS (the two
# annotations), V_SUM (checksum/cloud-config-data).
view() {
	IFS=$'\x1f' read -r V_RESULT V_REASON V_OS V_SUM <<<"$(kctl GET "/node?name=$KUBE_NODE" | python3 -c '
import json, sys
m = json.load(sys.stdin)["metadata"]
l, a = m.get("labels", {}), m.get("annotations", {})
print("\x1f".join(["=" + l.get("node.machine.sapcloud.io/update-result", ""),
                    "=" + a.get("node.machine.sapcloud.io/update-failed-reason", ""),
                    "=" + a.get("node-agent.gardener.cloud/updating-operating-system-version", ""),
                    "=" + a.get("checksum/cloud-config-data", "")]))')"
	V_RESULT=${V_RESULT#=} V_REASON=${V_REASON#=} V_OS=${V_OS#=} V_SUM=${V_SUM#=}
}
wait_view() { # wait_view TIMEOUT TEST-EXPR: polls view until TEST-EXPR holds
	local i
	for ((i = 0; i < $1 * 4; i++)); do
		view
		eval "$2" && return 0
		sleep 0.25
	done
	return 1
}
wait_label() { wait_view "${2:-20}" '[ "$V_RESULT" = '"$1"' ]'; }
sum() { sha256 "$1"; }

t0=$(now)
tb=$(date +%s)
agent_start
check "no in-place update: the OSC is applied and annotated as before" \
	kube_wait_annotation checksum/cloud-config-data "$(sum "$S/v1.yaml")" "$t0" 20

# An OS update: the executor waits for the handshake.
printf '{"kinds": ["os-version"], "outcome": "successful", "os": "1877.3"}' >"$S/inplace"
osc 2 >"$S/v2.yaml"
m=$(log_mark)
kube_secret "$S/v2.yaml" >/dev/null
check "the executor's \"waiting\" is logged" wait_log "waits for the Node condition InPlaceUpdate with reason ReadyForUpdate" "$m"
check_not "  ... not as a failure" grep -q "executor failed to apply checksum $(sum "$S/v2.yaml" | cut -c1-12)" "$S/agent.log"
check "  ... desired.json: not ready for the update" [ "$(ready_in_desired)" = false ]
view
check "  ... no update-result label" [ -z "$V_RESULT" ]
check "  ... the checksum annotation stays at the old OSC" [ "$V_SUM" = "$(sum "$S/v1.yaml")" ]

# What machine-controller-manager's drain leaves on the node (a DaemonSet
# pod, a pod with local storage), and a pod of another node.
pod() { kctl POST /pod '{"namespace": "'"$1"'", "name": "'"$2"'", "node": "'"$3"'"}' >/dev/null; }
pods() { kctl GET /pods | jget "' '.join(sorted(d))"; }
pod kube-system calico-node-x2b9k "$KUBE_NODE"
pod shop web-0 "$KUBE_NODE"
pod shop web-1 node-other
# machine-controller-manager drained the node.
t=$(now)
m=$(log_mark)
mcm ReadyForUpdate
check "ReadyForUpdate: update-result=successful" wait_label successful 20
t_label=$(kube_wait_annotation checksum/cloud-config-data "$(sum "$S/v2.yaml")" "$t" 5)
check "  ... the Pods on the Node deleted, the other Node's untouched" [ "$(pods)" = "shop/web-1" ]
check "  ... listed by field selector spec.nodeName across all namespaces" \
	[ "$(kube_count "$t" 'e["method"] == "GET" and e["path"] == "/api/v1/pods?fieldSelector=spec.nodeName%3D'"$KUBE_NODE"'" and e["status"] == 200')" -eq 1 ]
check "  ... each deleted once, before the label was set" \
	python3 -c 'import json, subprocess, sys
log = json.loads(subprocess.check_output(["python3", sys.argv[1], "ctl", "GET", "/log?since=" + sys.argv[2]]))["requests"]
d = [e for e in log if e["method"] == "DELETE"]
paths = sorted(e["path"] for e in d)
sys.exit(not (paths == ["/api/v1/namespaces/kube-system/pods/calico-node-x2b9k", "/api/v1/namespaces/shop/pods/web-0"]
              and all(e["status"] == 200 and e["end"] <= float(sys.argv[3]) for e in d)))' "$_kube_py" "$t" "$t_label"
check "  ... logged" wait_log "deleted the 2 Pod(s) remaining on Node $KUBE_NODE" "$m" 1
check "  ... the handshake is logged" wait_log "Node has condition InPlaceUpdate with reason ReadyForUpdate" "$m" 1
check "  ... desired.json said readyForUpdate true" [ "$(ready_in_desired)" = true ]
check "  ... the new checksum annotated (same patch)" [ "$V_SUM" = "$(sum "$S/v2.yaml")" ]
check "  ... by the Node watch, not by polling: no GET or list of the Node" \
	[ "$(kube_count "$t" 'e["method"] == "GET" and not e["watch"] and ("/nodes/" in e["path"] or "/nodes?" in e["path"]) and e["user"] != "admin"')" -eq 0 ]

# MCM moves on and removes the label; the agent does not put it back.
mcm UpdateSuccessful
kctl POST /node '{"name": "'"$KUBE_NODE"'", "labels": {"node.machine.sapcloud.io/update-result": null}}' >/dev/null
check "  ... desired.json: readyForUpdate false again" wait_for 10 eval '[ "$(ready_in_desired)" = false ]'
sleep 0.5
view
check "  ... the label MCM removed is not put back" [ -z "$V_RESULT" ]

# An OS update that runs (the annotation), then fails (label, reason).
printf '{"kinds": ["os-version"], "outcome": "running", "os": "1877.4"}' >"$S/inplace"
osc 3 >"$S/v3.yaml"
kube_secret "$S/v3.yaml" >/dev/null
check "the next update waits" wait_for 10 eval '[ "$(result_field "d.get(\"inPlaceUpdate\", {}).get(\"state\")")" = waiting ]'
mcm ReadyForUpdate
check "running an OS update: updating-operating-system-version=1877.4" wait_view 10 '[ "$V_OS" = 1877.4 ]'
REASON='OS update might have failed and rolled back to the previous version. Desired version: "1877.4", Current version: "1443.3"'
python3 -c 'import json,sys; print(json.dumps({"kinds": ["os-version"], "outcome": "failed", "os": "1877.4", "reason": sys.argv[1]}))' "$REASON" >"$S/inplace"
m=$(log_mark)
# a new run of the executor (as after the reboot): touch desired.json's inode
exec_once
check "failed: update-result=failed" wait_label failed 20
check "  ... with the reason in node.machine.sapcloud.io/update-failed-reason" [ "$V_REASON" = "$REASON" ]
check "  ... the attempted version stays annotated" [ "$V_OS" = 1877.4 ]
check "  ... no checksum annotation for the failed OSC" [ "$V_SUM" = "$(sum "$S/v2.yaml")" ]
check "  ... logged as an error" wait_log "in-place update (os-version) failed: OS update might have failed" "$m" 1

# A restarted agent derives the same from the Node and result.json: no new
# patch; then the retry succeeds (the label "failed" is a handshake too).
agent_stop
t=$(now)
agent_start
check "restarted agent watches its Node again" wait_hit "$t" 'e["watch"] and "/nodes" in e["path"] and e["user"] != "admin"'
sleep 0.5
check "  ... and patches nothing it already finds on the Node" \
	[ "$(kube_count "$t" 'e["method"] == "PATCH" and e["path"] == "/api/v1/nodes/'"$KUBE_NODE"'"')" -eq 0 ]
printf '{"kinds": ["os-version"], "outcome": "successful", "os": "1877.4"}' >"$S/inplace"
mcm ""
# A Pod left on the Node whose first two deletes fail (500): the label
# waits (the second round comes 1-2 s after the first, the third 2-4 s
# after that: the view below has seconds to see "failed").
pod kube-system calico-node-q7m2p "$KUBE_NODE"
kctl POST /fault '{"type": "500", "match": "DELETE /api/v1/namespaces/", "count": 2}' >/dev/null
m=$(log_mark)
exec_once
check "a failed Pod delete is logged, the label not set" wait_log "cannot delete the Pods remaining on Node $KUBE_NODE" "$m" 10
view
check "  ... update-result still failed" [ "$V_RESULT" = failed ]
check "the retry succeeds: update-result=successful (label failed counts as ready)" wait_label successful 20
check "  ... after the Pod was deleted by a later round" [ "$(pods)" = "shop/web-1" ]
check "  ... three rounds: two deletes refused, the third deleted it" \
	[ "$(kube_count "$t" 'e["method"] == "DELETE" and e["path"].endswith("/calico-node-q7m2p")')" -eq 3 ]
check "  ... the reason and the version annotation removed (same patch)" [ -z "$V_REASON$V_OS" ]
check "  ... the checksum annotated" [ "$V_SUM" = "$(sum "$S/v3.yaml")" ]

# The update's reboot: an OS update "running" when the agent stops (the
# reboot), "successful" once it is back. The Pods are deleted once this
# run has settled its desired state, and a rewrite of desired.json while
# they are listed (a restart request on the Node; the list made slow) does
# not stop that: one sweep, one list answered, no "stopped" line (before,
# a sweep started on the result the earlier run left, and each rewrite
# cancelled it, aborting its list: "the Node moved on").
printf '{"kinds": ["os-version"], "outcome": "running", "os": "1877.5"}' >"$S/inplace"
osc 5 >"$S/v5.yaml"
kube_secret "$S/v5.yaml" >/dev/null
wait_for 10 eval '[ "$(result_field "d.get(\"inPlaceUpdate\", {}).get(\"state\")")" = waiting ]'
kctl POST /node '{"name": "'"$KUBE_NODE"'", "labels": {"node.machine.sapcloud.io/update-result": null}}' >/dev/null
mcm ReadyForUpdate
check "an OS update running" wait_view 20 '[ "$V_OS" = 1877.5 ]'
agent_stop
printf '{"kinds": ["os-version"], "outcome": "successful", "os": "1877.5"}' >"$S/inplace"
pod kube-system calico-node-r4t8w "$KUBE_NODE"
kctl POST /fault '{"type": "slow", "seconds": 2.5, "match": "GET /api/v1/pods"}' >/dev/null
t=$(now)
m=$(log_mark)
agent_start
check "  ... the agent back after the reboot: the Pods on the Node are listed" \
	wait_log "deleting the Pods remaining on Node $KUBE_NODE" "$m" 20
kctl POST /node '{"name": "'"$KUBE_NODE"'", "annotations": {"worker.gardener.cloud/restart-systemd-services": "kubelet"}}' >/dev/null
check "  ... update-result=successful" wait_label successful 20
check "  ... the Pod deleted" [ "$(pods)" = "shop/web-1" ]
check "  ... one sweep: started once, never stopped" sh -c \
	'test "$(tail -n +$(($2 + 1)) "$1" | grep -c "deleting the Pods remaining on Node")" = 1 &&
	 ! tail -n +$(($2 + 1)) "$1" | grep -q "deleting the Pods on Node .* stopped"' sh "$S/agent.log" "$m"
check "  ... one list, answered 200, after desired.json was written again during it" python3 -c '
import json, os, subprocess, sys
log = json.loads(subprocess.check_output(["python3", sys.argv[1], "ctl", "GET", "/log?since=" + sys.argv[2]]))["requests"]
l = [e for e in log if e["method"] == "GET" and e["path"].startswith("/api/v1/pods?")]
d = json.load(open(sys.argv[3]))
sys.exit(not (len(l) == 1 and l[0]["status"] == 200 and "restart" in d and os.stat(sys.argv[3]).st_mtime < l[0]["end"]))' \
	"$_kube_py" "$t" "$(desired_file)"

# A Node named with 253 characters, the longest the API allows (four labels
# of a DNS subdomain), served by a second agent: watched and patched by that
# name, its Event named within 63 characters (the server cuts generateName)
# for the whole name, and no Lease: gardener-node-agent-<node> would be 273
# characters; one error names the name and the limit.
L63=ip-10-250-17-203-eu-central-1-compute-internal-0123456789abcdef
N253=$L63.$L63.$L63.${L63%??}
R2=$S/root253
install -d -m 0755 "$R2/var/lib/cloud-config-exec"
kctl POST /node '{"name": "'"$N253"'"}' >/dev/null
KUBE_NODE=$N253 agent_config "$S/agent253.json" '{"timeouts": {"watchIdleMs": 120000}, "events": {"enabled": true}, "lease": {"enabled": true}}'
printf '#!/bin/sh\nexec python3 "%s" "%s" "%s" "%s"\n' "$TESTS_DIR/lib/inplace-exec.py" "$R2/var/lib/cloud-config-exec/result.json" \
	"$R2/var/lib/node-agent/desired.json" "$S/no-inplace" >"$S/exec253"
chmod +x "$S/exec253"
ROOT=$R2 EXEC=$S/exec253 exec_loop_start
t=$(now)
"$AGENT" --root "$R2" --config "$S/agent253.json" </dev/null >>"$S/agent253.log" 2>&1 &
A253=$!
on_exit "kill $A253 2>/dev/null; wait $A253 2>/dev/null"
if KUBE_NODE=$N253 kube_wait_annotation checksum/cloud-config-data "$(sum "$S/v5.yaml")" "$t" 20 >/dev/null; then
	ok "a Node name of ${#N253} characters: watched, the OSC applied, the Node annotated"
else
	fail "a Node name of ${#N253} characters: watched, the OSC applied, the Node annotated"
	dump "its agent's log" cat "$S/agent253.log"
fi
check "  ... its Event for the whole name, named within 63 characters" wait_for 10 python3 -c '
import json, subprocess, sys
ev = json.loads(subprocess.check_output(["python3", sys.argv[1], "ctl", "GET", "/events?namespace=default"]))["items"]
sys.exit(not any(e["involvedObject"]["name"] == sys.argv[2] and e["reason"] == "OSCApplied" and len(e["metadata"]["name"]) <= 63
                 for e in ev))' "$_kube_py" "$N253"
check "  ... no Lease, one error naming the name and the limit" \
	test "$(grep -c "node name \"$N253\" gives no valid Lease name (gardener-node-agent-<node>, at most 253 bytes)" "$S/agent253.log")" = 1
check_not "  ... no request refused" grep -q "HTTP 4[0-9][0-9]" "$S/agent253.log"
kill "$A253"
wait "$A253" 2>/dev/null

agent_stop
echo "# in-place test body took $(($(date +%s) - tb)) s"
check "the agent exits cleanly (rc $AGENT_RC)" [ "$AGENT_RC" -eq 0 ]
check_not "  ... with no sanitizer report in its log" grep -q "Sanitizer" "$S/agent.log"

[ "$_fail" -eq 0 ] || dump_logs
finish
