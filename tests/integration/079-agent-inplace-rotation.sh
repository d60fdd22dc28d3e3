#!/bin/bash
# An in-place CA rotation (kinds node-agent-ca-rotation, kubelet-ca-rotation)
# on the stand-in API server with Gardener's CSR approver: node-agent holds a
# client certificate from the CSR API (bootstrap token); after the drain
# handshake and the executor's "successful" it requests a new certificate
# with the current one (gardener's requestNewKubeConfigForNodeAgent), the
# old one in use until the new one is issued and verified, and only then
# sets update-result=successful and the checksum annotation (after deleting
# the Pods left on the Node, none here). The executor is
# the stand-in of tests/lib/inplace-exec.py.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require
command -v openssl >/dev/null || skip_all "openssl(1) missing"

S=$(scratch)
ROOT=$S/root
install -d -m 0755 "$ROOT" "$ROOT/etc" "$ROOT/home" "$ROOT/var" "$ROOT/var/lib" "$ROOT/opt"
install -d -m 0755 "$ROOT/var/lib/cloud-config-exec"
osc() { printf 'spec:\n  files:\n  - path: /etc/hello\n    permissions: 420\n    content:\n      inline:\n        data: "v%s"\n' "$1"; }
osc 1 >"$S/v1.yaml"
KUBE_OSC=$S/v1.yaml kube_start "$S" --machine "$KUBE_MACHINE=$KUBE_NODE" \
	--secret-reader group:gardener.cloud:node-agents --node-admin group:gardener.cloud:node-agents ||
	{ fail "test API server starts"; finish; exit 1; }
kctl POST /policy '{"revokeSecret": "group:system:bootstrappers"}' >/dev/null
# No Node before the bootstrap (Gardener's approver refuses the bootstrap
# token once the machine's Node exists).
kctl POST /node '{"name": "'"$KUBE_NODE"'", "delete": true}' >/dev/null
kctl POST /csr-mode '{"mode": "gardener", "lifetime": 3600}' >/dev/null
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
BT=$S/bootstrap-token
printf 'abcdef.0123456789abcdef\n' >"$BT"
PEM=$ROOT/var/lib/node-agent/client.pem
CN=gardener.cloud:node-agent:machine:$KUBE_MACHINE
AGENT_CONF=$S/agent.json
python3 - "$AGENT_CONF" "$BT" <<-'PY'
	import json, os, sys
	e = os.environ
	c = {"apiServer": {"server": e["KUBE_API"], "caFile": e["KUBE_PKI"] + "/ca.crt", "bootstrapTokenFile": sys.argv[2]},
	     "node": {"name": e["KUBE_NODE"], "machineName": e["KUBE_MACHINE"]},
	     "osc": {"secretName": e["KUBE_SECRET"]},
	     "timeouts": {"connectMs": 1000, "requestMs": 3000, "watchIdleMs": 120000, "csrMs": 10000}}
	json.dump(c, open(sys.argv[1], "w"))
	os.chmod(sys.argv[1], 0o600)
	PY

cat >"$S/exec" <<-EOF
#!/bin/bash
exec python3 "$TESTS_DIR/lib/inplace-exec.py" "$ROOT/var/lib/cloud-config-exec/result.json" "$ROOT/var/lib/node-agent/desired.json" "$S/inplace"
EOF
chmod +x "$S/exec"
EXEC=$S/exec
exec_loop_start
fp() { openssl x509 -in "$PEM" -noout -fingerprint -sha256 2>/dev/null; }
cn_csrs() { kctl GET /csrs | jget "sum(o['spec']['username'] == '$CN' for o in d.values())"; }

tb=$(date +%s)
agent_start
check "a client certificate from the bootstrap token" wait_log "client certificate issued" 0 20
fp1=$(fp)
# The kubelet registers the Node (after the bootstrap: Gardener's approver
# refuses the bootstrap token once the Node exists).
t0=$(now)
kctl POST /node '{"name": "'"$KUBE_NODE"'"}' >/dev/null
check "the OSC applied with it" kube_wait_annotation checksum/cloud-config-data "$(sha256 "$S/v1.yaml")" "$t0" 20
check "  ... the Node labelled node-role.kubernetes.io/worker=\"\" (node-agent.conf with a machine name)" \
	[ "$(kctl GET "/node?name=$KUBE_NODE" | jget "d['metadata'].get('labels', {}).get('node-role.kubernetes.io/worker', 'absent')")" = "" ]

printf '{"kinds": ["kubelet-ca-rotation", "node-agent-ca-rotation"], "outcome": "successful"}' >"$S/inplace"
osc 2 >"$S/v2.yaml"
m=$(log_mark)
kube_secret "$S/v2.yaml" >/dev/null
check "the CA rotation waits for the handshake" wait_log "waits for the Node condition InPlaceUpdate" "$m"
check "  ... no CSR yet" [ "$(cn_csrs)" = 0 ]
kctl POST /node '{"name": "'"$KUBE_NODE"'", "status": {"conditions": [{"type": "InPlaceUpdate", "status": "True", "reason": "ReadyForUpdate"}]}}' >/dev/null
check "ReadyForUpdate: update-result=successful" \
	wait_for 20 eval '[ "$(kube_label node.machine.sapcloud.io/update-result)" = successful ]'
check "  ... a new certificate requested with the current one (a CSR by $CN)" [ "$(cn_csrs)" = 1 ]
check "  ... and in use: client.pem replaced" [ -n "$(fp)" -a "$(fp)" != "$fp1" ]
# The order in the agent's log: the new certificate in use, then the label.
check "  ... the label only after the new certificate was in use" python3 - "$S/agent.log" "$m" <<-'PY'
	import sys
	lines = open(sys.argv[1]).read().splitlines()[int(sys.argv[2]):]
	inuse = next(i for i, l in enumerate(lines) if "the new client certificate is in use" in l)
	label = next(i for i, l in enumerate(lines) if "patching Node" in l and "update-result" in l)
	sys.exit(0 if inuse < label else 1)
	PY
# gardener's performInPlaceUpdate: the rotation, then deleteRemainingPods,
# then the label (agent/podsweep.c).
check "  ... the Pods on the Node deleted after the new certificate, before the label" python3 - "$S/agent.log" "$m" <<-'PY'
	import sys
	lines = open(sys.argv[1]).read().splitlines()[int(sys.argv[2]):]
	inuse = next(i for i, l in enumerate(lines) if "the new client certificate is in use" in l)
	swept = next(i for i, l in enumerate(lines) if "deleted the 0 Pod(s) remaining on Node" in l)
	label = next(i for i, l in enumerate(lines) if "patching Node" in l and "update-result" in l)
	sys.exit(0 if inuse < swept < label else 1)
	PY
check "  ... the checksum annotated" [ "$(kube_annotation checksum/cloud-config-data)" = "$(sha256 "$S/v2.yaml")" ]

agent_stop
echo "# in-place rotation test body took $(($(date +%s) - tb)) s"
check "the agent exits cleanly (rc $AGENT_RC)" [ "$AGENT_RC" -eq 0 ]
check_not "  ... with no sanitizer report in its log" grep -q "Sanitizer" "$S/agent.log"

[ "$_fail" -eq 0 ] || dump_logs
finish
