#!/bin/bash
# In-place updates (GEP-31) in cloud-config-exec on a scratch root
# (--no-systemd): an OSC shaped as gardenlet writes it for an in-place pool
# (spec.inPlaceUpdates, status.inPlaceUpdates.osUpdate; gardener
# docs/extensions/resources/operatingsystemconfig.md) with a real OS update
# script that stages a new /etc/os-release, "applied" by the test's reboot
# (a new boot id below the root, the staged file moved in, the executor run
# again as after a boot). Checks: nothing applied while the Node is not
# ReadyForUpdate (state waiting, success false), the script run once with
# its args, state running until the reboot, successful after it; a
# rolled-back update (the reboot keeps the old version) failed with
# gardener-node-agent's reason, for good, the script not run again; a CPU
# manager policy change removes /var/lib/kubelet/cpu_manager_state, and
# waits for the kubelet's /healthz (node-agent's verdicts) after it.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
require_root

W=$(scratch)
exec_init "$W"
R=$W/root
ST=$R/var/lib/cloud-config-exec
D=$R/var/lib/node-agent/desired.json
mkdir -p "$R/etc" "$R/var/lib/node-agent" "$R/var/lib/kubelet" "$R/proc/sys/kernel/random"
echo "boot-1" >"$R/proc/sys/kernel/random/boot_id"
printf 'NAME="Garden Linux"\nPRETTY_NAME="Garden Linux 1592.1"\n' >"$R/etc/os-release"

# The update script: records its call, stages the new os-release (applied
# by the "reboot").
cat >"$W/update.sh" <<'SH'
#!/bin/sh
echo "$*" >>"$(dirname "$0")/calls"
printf 'NAME="Garden Linux"\nPRETTY_NAME="Garden Linux %s"\n' "$2" >"$1/etc/os-release.staged"
SH
chmod 755 "$W/update.sh"

# osc VERSION MARKER CPU_POLICY > file
osc() {
	python3 - "$@" "$W/update.sh" "$R" <<-'PY'
	import json, sys
	ver, marker, cpu, script, root = sys.argv[1:6]
	kc = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	      "cpuManagerPolicy: %s\nevictionHard:\n  memory.available: 100Mi\n"
	      "kubeReserved:\n  cpu: 80m\n  memory: 1Gi\n" % cpu)
	print(json.dumps({
	  "apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "OperatingSystemConfig",
	  "spec": {"inPlaceUpdates": {"operatingSystemVersion": ver, "kubelet": "1.31.2"},
	           "files": [{"path": "/var/lib/kubelet/config/kubelet", "permissions": 384, "content": {"inline": {"data": kc}}},
	                     {"path": "/etc/marker", "permissions": 420, "content": {"inline": {"data": marker + "\n"}}}]},
	  "status": {"inPlaceUpdates": {"osUpdate": {"command": script, "args": [root, ver]}}}}))
	PY
}
run() { cce "$R" apply-desired 2>>"$W/log"; }
res() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$ST/result.json" "$1"; }
reboot() {
	echo "boot-$1" >"$R/proc/sys/kernel/random/boot_id"
	if [ "$2" = apply ] && [ -e "$R/etc/os-release.staged" ]; then mv "$R/etc/os-release.staged" "$R/etc/os-release"; fi
	rm -f "$R/etc/os-release.staged"
}

osc 1592.1 v1 none >"$W/v1.json"
desired_json "$W/v1.json" 1 >"$D"
check "first apply (no last applied OSC: not in-place)" run
check "first apply: success, no inPlaceUpdate" test "$(res 'r["success"], "inPlaceUpdate" in r')" = "(True, False)"

# OS update to 1592.2: waits for ReadyForUpdate.
osc 1592.2 v2 none >"$W/v2.json"
desired_json "$W/v2.json" 2 >"$D"
check "not ready: the run exits 0" run
check "not ready: state waiting, kinds [os-version], failedStep inplace-waiting" \
	test "$(res 'r["success"], r["failedStep"], r["inPlaceUpdate"]["state"], r["inPlaceUpdate"]["kinds"]')" = \
	"(False, 'inplace-waiting', 'waiting', ['os-version'])"
check "not ready: nothing of the OSC applied" grep -qx v1 "$R/etc/marker"
check_not "not ready: the update script did not run" test -e "$W/calls"

desired_json "$W/v2.json" 3 '{"inPlaceUpdate": {"readyForUpdate": true}}' >"$D"
check "ready: the run exits 0 (reboot pending)" run
check "ready: files applied" grep -qx v2 "$R/etc/marker"
check "ready: the update script ran once with its args" test "$(cat "$W/calls")" = "$R 1592.2"
check "ready: state running, osVersion desired/running, failedStep inplace-os-update" \
	test "$(res 'r["success"], r["failedStep"], r["inPlaceUpdate"]["state"], r["inPlaceUpdate"]["osVersion"]')" = \
	"(False, 'inplace-os-update', 'running', {'desired': '1592.2', 'running': '1592.1'})"
check "the attempt is recorded in state.json" grep -q '"osAttempted":.*"1592.2"' "$ST/state.json"
run
check "a second run in the same boot does not run the script again" test "$(wc -l <"$W/calls")" -eq 1
check "... and still reports running" test "$(res 'r["inPlaceUpdate"]["state"]')" = running

reboot 2 apply
check "after the reboot: the run exits 0" run
check "after the reboot: successful, success true" \
	test "$(res 'r["success"], r["inPlaceUpdate"]["state"], r["inPlaceUpdate"]["osVersion"]["running"]')" = \
	"(True, 'successful', '1592.2')"
check "after the reboot: the script was not run again" test "$(wc -l <"$W/calls")" -eq 1
check "after the reboot: last-applied is v2" grep -q "sha256=" "$ST/last-applied.yaml"
check "last-applied holds the v2 OSC" grep -q 1592.2 "$ST/last-applied.yaml"

# OS update to 1592.3 that rolls back.
osc 1592.3 v3 none >"$W/v3.json"
desired_json "$W/v3.json" 4 '{"inPlaceUpdate": {"readyForUpdate": true}}' >"$D"
run
check "1592.3: running" test "$(res 'r["inPlaceUpdate"]["state"]')" = running
reboot 3 rollback
run
check_not "rolled back: the run fails (exit 1)" run
want='OS update might have failed and rolled back to the previous version. Desired version: "1592.3", Current version: "1592.2"'
check "rolled back: failed with gardener-node-agent's reason" \
	test "$(res 'r["success"], r["inPlaceUpdate"]["state"], r["inPlaceUpdate"]["reason"]')" = "(False, 'failed', '$want')"
check "rolled back: the script ran once for 1592.3" test "$(grep -c 1592.3 "$W/calls")" -eq 1
check "rolled back: last-applied still v2" grep -q 1592.2 "$ST/last-applied.yaml"
check "status shows the failed in-place update and its reason" \
	bash -c "'$CCE' --root '$R' --config '$W/config.json' status | grep -q 'in-place update: failed (os-version), OS 1592.2 running, 1592.3 desired'"

# A CPU manager policy change (from v2, the last applied; OS as running).
echo '{"policyName":"none"}' >"$R/var/lib/kubelet/cpu_manager_state"
osc 1592.2 v4 static >"$W/v4.json"
desired_json "$W/v4.json" 5 >"$D"
run
check "cpu policy: waiting, kinds [kubelet-cpu-manager-policy]" \
	test "$(res 'r["inPlaceUpdate"]["state"], r["inPlaceUpdate"]["kinds"]')" = "('waiting', ['kubelet-cpu-manager-policy'])"
check "cpu policy: the state file stays while waiting" test -e "$R/var/lib/kubelet/cpu_manager_state"
desired_json "$W/v4.json" 6 '{"inPlaceUpdate": {"readyForUpdate": true}}' >"$D"
# Issue 36: the kubelet's health after the change is its /healthz, as
# gardener-node-agent's checkKubeletHealth, from node-agent's probe
# (kubelet-health.json in its state directory; written here by hand):
# unhealthy for ~3 s after the restart, then healthy.
V=$R/var/lib/node-agent/kubelet-health.json
verdict() { printf '%s\n' "$1" >"$V.tmp" && mv "$V.tmp" "$V"; }
verdict '{"version": 1, "healthy": false, "checkedAt": 1, "error": "HTTP status 500"}'
( end=$(($(date +%s) + 3)); while [ "$(date +%s)" -lt "$end" ]; do
	verdict "{\"version\": 1, \"healthy\": false, \"checkedAt\": $(date +%s), \"error\": \"HTTP status 500\"}"; sleep 0.3; done
	while [ ! -e "$W/vw.stop" ]; do
	verdict "{\"version\": 1, \"healthy\": true, \"checkedAt\": $(date +%s), \"serverVersion\": \"ok\"}"; sleep 0.3; done ) &
VW=$!
on_exit "touch '$W/vw.stop'; wait $VW 2>/dev/null"
t0=$(date +%s%N)
check "cpu policy: ready, applied" run
t1=$(date +%s%N)
touch "$W/vw.stop"; wait $VW 2>/dev/null
check "  ... the kubelet's /healthz waited for (node-agent's verdicts), not systemd's state" \
	grep -q "In-place update: the kubelet is healthy (its /healthz, node-agent's probe at" "$W/log"
check "  ... through the unhealthy ones ($(( (t1 - t0) / 1000000 )) ms >= 2 s)" test $(( (t1 - t0) / 1000000 )) -ge 2000
check "cpu policy: the state file removed" test ! -e "$R/var/lib/kubelet/cpu_manager_state"
check "cpu policy: successful" test "$(res 'r["success"], r["inPlaceUpdate"]["state"]')" = "(True, 'successful')"
check "no OS update for it" test "$(wc -l <"$W/calls")" -eq 2
finish
