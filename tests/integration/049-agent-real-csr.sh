#!/bin/bash
# node-agent's client certificate through the CSR API of the REAL
# kube-apiserver v1.20.2 (tests/lib/realkube.sh), in a private network
# namespace. The agent starts with only a bootstrap token (a bootstrap token
# Secret in kube-system; its group system:bootstrappers bound to the built-in
# ClusterRole system:node-bootstrapper) and its machine name. The test acts as
# Gardener's approver (PUT .../approval, as the admin) and as the signer of
# kubernetes.io/kube-apiserver-client (PUT .../status with a certificate
# signed by the cluster CA with openssl: the CA the real server's
# --client-ca-file trusts, as kube-controller-manager's signer uses it).
# The certificate's identity (User gardener.cloud:node-agent:machine:<m>,
# Group gardener.cloud:node-agents) is authorized as on a Gardener shoot:
# by Gardener's node-agent authorizer (tests/lib/nodeagent-authz.py, a
# SubjectAccessReview webhook asked before RBAC: Node,Webhook,RBAC), no RBAC
# binding of its own. The agent keeps its Lease (renewed by update; the
# authorizer allows no patch), sends Events, syncs a token Secret
# (gardener-opentelemetry-collector, one the authorizer allows), reads the
# Secret of a content.secretRef file (etcd-ca, allowed as the OSC names it). Checked: the CSR as the server stores it, the
# certificate installed (0600), the OSC applied by cloud-config-exec
# (--no-systemd, scratch root) and the Node annotated, every request of the
# certificate's identity allowed, the bootstrap token never reading the
# Secret. Prints the CSR round trip (created -> certificate installed), from
# the audit log and from the agent's own measure; the agent awaits its
# CSR with a watch by name (no GET), issued -> in use under 1.5 s. v1.20 ignores
# spec.expirationSeconds (the signer here issues 30 days).
# The Node is created only once the first OSC is applied, as the kubelet
# registers it on a new machine: until then Gardener's authorizer refuses
# every Lease request and every GET of the Node (authorizer.go getNode); the
# agent reads its Node with a list by name (allowed: empty) and watches it,
# so the audit log holds not a single 403 for the certificate's identity.
# RENEW_S (default 70) is how long the Lease is judged by gardenlet's check;
# RENEW_S=600 is the 10-minute proof (opt-in, not in CI): renewals seen,
# the largest gap between renewTimes and the 403 count are printed.
# The OSC Secret asks for serial rollouts (annotation reconciliation.osc.
# node-agent.gardener.cloud/serial) from the start: the agent asks nothing
# about the serial Lease kube-system/<Secret> before its Node exists (it
# would be refused), applies the first OSC without it (nothing in force),
# and a later change that restarts a unit takes the Lease (created with the
# Secret as owner, holder the node), is applied, and gives it back (update,
# holder null): the authorizer allows a node-agent that Lease because the
# Node's label worker.gardener.cloud/gardener-node-agent-secret-name names
# it (authorizeLease).
# SystemdUnitsReady: the executor here runs without systemd (--no-systemd:
# there is no systemd on the test machine outside an nspawn box, and booting
# one, as 030/033/055 do, would make this test heavy), so it computes no
# unitsReady; the test writes the condition into result.json as the real
# executor writes it (033 proves that against systemd 252), and checks what
# only this test can: the agent's strategic merge patch of nodes/<n>/status
# is allowed by Gardener's authorizer (subresource status of the own Node)
# and the condition lands on the Node next to the kubelet's.
# Skips (saying why) without a kube-apiserver binary or etcd.
source "$TESTS_DIR/lib/common.sh"
# A Node name that differs from the machine's (the machine's hostname, as on
# AWS); the machine name as machine-controller-manager makes it, 55
# characters (../shared/notes/gardener-names.md): the CN is 89.
KUBE_NODE=${KUBE_NODE:-ip-10-250-17-203.eu-central-1.compute.internal}
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
source "$TESTS_DIR/lib/realkube.sh"
kube_netns "$@"
agent_require
rk_require
command -v openssl >/dev/null || skip_all "openssl(1) missing"

S=$(scratch)
ROOT=$S/root
install -d -m 0755 "$ROOT" "$ROOT/etc" "$ROOT/var" "$ROOT/var/lib" "$ROOT/var/lib/cloud-config-exec"
t_begin=$(date +%s)
MACHINE=shoot--i512345--prod-eu1-workerpool1-z1-7d9f6c8b4-x2k9p
RK_WEBHOOK=1
RK_WEBHOOK_MACHINES="$MACHINE=$KUBE_NODE"
if ! rk_start "$S"; then
	fail "etcd and kube-apiserver start"
	finish
	exit 1
fi
ok "etcd and kube-apiserver $("$RK_BIN" --version | cut -d' ' -f2) ready after $(($(date +%s) - t_begin)) s"

CN=gardener.cloud:node-agent:machine:$MACHINE
BTUSER=system:bootstrap:abcdef
CSRS=/apis/certificates.k8s.io/v1/certificatesigningrequests
PEM=$ROOT/var/lib/node-agent/client.pem
ANN=checksum/cloud-config-data
SERIAL='{"reconciliation.osc.node-agent.gardener.cloud/serial": "true"}'
# osc N: /etc/hello "csr N", which restarts hello.service (filePaths), and
# the token sync's configuration.
osc() {
	printf 'spec:\n  files:\n  - path: /etc/hello\n    permissions: 420\n    content:\n      inline:\n        data: "csr %s"\n' "$1"
	printf '  - path: /var/lib/gardener-node-agent/config-v1.149.4.yaml\n    permissions: 384\n    content:\n      inline:\n'
	printf '        encoding: b64\n        data: %s\n' "$(printf 'apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: NodeAgentConfiguration\ncontrollers:\n  token:\n    syncConfigs:\n    - secretName: gardener-opentelemetry-collector\n      path: /var/lib/otelcol/auth-token\n    syncPeriod: 12h\n' | base64 -w0)"
	# a file from a Secret (content.secretRef): the authorizer allows its GET
	# (secretRefNamesFromOSCSecret), the agent hands its bytes to the executor
	printf '  - path: /etc/pki/etcd-ca.crt\n    permissions: 416\n    content:\n      secretRef:\n        name: etcd-ca\n        dataKey: ca.crt\n'
	printf '  units:\n  - name: hello.service\n    enable: true\n    content: |\n      [Service]\n      ExecStart=/bin/true\n    filePaths:\n    - /etc/hello\n'
}
osc 1 >"$S/v1.yaml"
osc 2 >"$S/v2.yaml"

setup_ok=true
rk_secret kube-system "$KUBE_SECRET" "$S/v1.yaml" auto "$SERIAL" || setup_ok=false
rk_bootstrap_token abcdef 0123456789abcdef || setup_ok=false
rk_bind "" ClusterRole system:node-bootstrapper \
	'{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"system:bootstrappers"}' || setup_ok=false
rk_apply /api/v1/namespaces/kube-system/secrets '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"gardener-opentelemetry-collector","namespace":"kube-system"},"data":{"token":"'"$(printf otel-token-1 | base64 -w0)"'"}}' || setup_ok=false
rk_apply /api/v1/namespaces/kube-system/secrets '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"etcd-ca","namespace":"kube-system"},"data":{"ca.crt":"'"$(printf 'etcd ca 1' | base64 -w0)"'"}}' || setup_ok=false
check "OSC Secret (serial), token Secret, secretRef'd Secret, bootstrap token Secret, system:node-bootstrapper binding, no Node yet; no RBAC for the certificate's identity (the webhook decides)" $setup_ok

BT=$S/bootstrap-token
printf 'abcdef.0123456789abcdef\n' >"$BT"
chmod 0600 "$BT"
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
AGENT_CONF=$S/agent.json
agent_config "$AGENT_CONF" '{"apiServer": {"tokenFile": null, "bootstrapTokenFile": "'"$BT"'"},
	"node": {"machineName": "'$MACHINE'"}, "timeouts": {"csrMs": 60000},
	"lease": {"enabled": true}, "events": {"enabled": true}}'
exec_loop_start

# the approver and signer: waits for node-agent's CSR, approves it, signs it.
csr_get() { rk GET "$CSRS/$1"; }
t_agent=$(now)
agent_start
if ! csr_name=$(rk_wait_csr node-agent-csr- 30); then
	fail "one CSR node-agent-csr-* created within 30 s ($csr_name)"
	dump_logs
	finish
	exit 1
fi
csr_get "$csr_name" >"$S/csr.json"
field() { jget "$1" <"$S/csr.json"; }
fieldq() { field "$1" >/dev/null; }
check "CSR $csr_name created by the bootstrap token ($(field 'd["spec"]["username"]'))" \
	test "$(field 'd["spec"]["username"]')" = "$BTUSER"
check "... in group system:bootstrappers" fieldq '"system:bootstrappers" in d["spec"]["groups"] or sys.exit(1)'
check "... signer, usages as gardener-node-agent's ($(field '[d["spec"]["signerName"], d["spec"]["usages"]]'))" \
	test "$(field '[d["spec"]["signerName"], d["spec"]["usages"]]')" = \
	'["kubernetes.io/kube-apiserver-client", ["digital signature", "key encipherment", "client auth"]]'
field 'd["spec"]["request"]' | base64 -d >"$S/req.pem"
subj=$(openssl req -in "$S/req.pem" -noout -subject -nameopt RFC2253 2>&1)
check "... subject CN=$CN,O=gardener.cloud:node-agents ($subj)" \
	test "$subj" = "subject=CN=$CN,O=gardener.cloud:node-agents"

# approve (the admin, as Gardener's approver would)
rk_csr_approve "$csr_name"
check "CSR approved (PUT .../approval: $RK_CODE)" test "$RK_CODE" = 200
# sign (the signer of kubernetes.io/kube-apiserver-client: the cluster CA)
rk_csr_sign "$csr_name" "$S/issued.crt"
check "certificate signed by the cluster CA with openssl" test -s "$S/issued.crt"
check "certificate issued (PUT .../status: $RK_CODE)" test "$RK_CODE" = 200

if wait_log "client certificate issued" 0 30; then
	ok "agent: $(grep -o 'CSR [^ ]*: client certificate issued after [0-9]* ms' "$S/agent.log" | head -1)"
else
	fail "agent installs the issued certificate"
	dump_logs
fi
check "client.pem 0600 in the state directory ($(stat -c %a "$PEM" 2>&1))" test "$(stat -c %a "$PEM" 2>/dev/null)" = 600
check "... holding the issued certificate" sh -c 'test "$(openssl x509 -in "$1" -noout -fingerprint -sha256)" = "$(openssl x509 -in "$2" -noout -fingerprint -sha256)"' sh "$PEM" "$S/issued.crt"

# the kubelet's part: the Node registers once the first OSC is applied
for ((i = 0; i < 300; i++)); do [ "$(cat "$ROOT/etc/hello" 2>/dev/null)" = "csr 1" ] && break; sleep 0.1; done
check "first OSC applied before the Node exists (no serial Lease needed: nothing in force)" \
	test "$(cat "$ROOT/etc/hello" 2>/dev/null)" = "csr 1"
t_node=$(now)
rk_node "$KUBE_NODE"
check "the Node registers (as the kubelet would; label $KUBE_SECRET names the OSC Secret)" test "$RK_CODE" = 201
if t_ann=$(rk_wait_annotation $ANN "$(sha256 "$S/v1.yaml")" 30); then
	ok "OSC read with the certificate, applied, Node annotated ($(python3 -c "print(round($t_ann - $t_agent, 2))") s after the agent started)"
else
	fail "OSC applied and Node annotated with the certificate"
	dump_logs
fi
check "/etc/hello written by cloud-config-exec" test "$(cat "$ROOT/etc/hello" 2>/dev/null)" = "csr 1"
check "the file from Secret etcd-ca (content.secretRef) written, 0640" \
	test "$(cat "$ROOT/etc/pki/etcd-ca.crt" 2>/dev/null) $(stat -c %a "$ROOT/etc/pki/etcd-ca.crt" 2>/dev/null)" = "etcd ca 1 640"

# A serial rollout under the webhook: v2 restarts hello.service.
SLEASE=/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/$KUBE_SECRET
mark=$(log_mark)
rk_secret kube-system "$KUBE_SECRET" "$S/v2.yaml" auto "$SERIAL"
check "serial rollout: the agent takes Lease kube-system/$KUBE_SECRET" wait_log "serial rollout: took Lease" "$mark" 30
if rk_wait_annotation $ANN "$(sha256 "$S/v2.yaml")" 30 >/dev/null; then
	ok "serial rollout: v2 applied and the Node annotated"
else
	fail "serial rollout: v2 applied and the Node annotated"
	dump_logs
fi
check "... and gives the Lease back" wait_log "serial rollout: released Lease" "$mark" 30
rk GET "$SLEASE" >"$S/slease.json"
sl=$(jget '[d["spec"].get("holderIdentity"), [o["kind"] + "/" + o["name"] for o in d["metadata"].get("ownerReferences", [])]]' <"$S/slease.json")
check "the serial Lease: no holder left, owned by the OSC Secret ($sl)" test "$sl" = "[null, [\"Secret/$KUBE_SECRET\"]]"
check_not "no failed serial Lease request in the agent's log" grep -q "serial rollout Lease .*retrying" "$S/agent.log"
echo "# the agent on its Node before it existed: $(grep -m3 -i "node $KUBE_NODE\|NODE=$KUBE_NODE" "$S/agent.log" | cut -c1-200 | tr '\n' '|')"

# SystemdUnitsReady under the webhook (see the header: the executor has no
# systemd here). The kubelet's Ready first, then the executor's condition.
rk PATCH "/api/v1/nodes/$KUBE_NODE/status" '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"stand-in kubelet"}]}}' >/dev/null
python3 - "$ROOT/var/lib/cloud-config-exec/result.json" <<-'PY'
	import json, os, sys, time
	d = json.load(open(sys.argv[1]))
	d["unitsReady"] = {"status": "True", "reason": "AllUnitsHealthy",
	                   "message": "All systemd units from the operating system config are running as expected.",
	                   "checkedAt": int(time.time())}
	open(sys.argv[1] + ".tmp", "w").write(json.dumps(d))
	os.rename(sys.argv[1] + ".tmp", sys.argv[1])
	PY
conds() { rk GET "/api/v1/nodes/$KUBE_NODE" | jget "sorted((c['type'], c['status'], c.get('reason', '')) for c in d.get('status', {}).get('conditions', []))"; }
want='[["Ready", "True", "KubeletReady"], ["SystemdUnitsReady", "True", "AllUnitsHealthy"]]'
for ((i = 0; i < 100; i++)); do [ "$(conds)" = "$want" ] && break; sleep 0.1; done
check "SystemdUnitsReady True lands on the Node next to Ready ($(conds))" [ "$(conds)" = "$want" ]

# The Lease under the webhook, judged as gardenlet's CheckNodeAgentLeases
# (pkg/gardenlet/controller/shoot/care/health.go) judges it: present and
# renewTime + leaseDurationSeconds not past, at every sample for RENEW_S s.
LEASE=gardener-node-agent-$KUBE_NODE
lease_fresh() {
	rk GET "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/$LEASE" | python3 -c '
import datetime, json, sys
s = json.load(sys.stdin)["spec"]
t = datetime.datetime.strptime(s["renewTime"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
age = (datetime.datetime.now(datetime.timezone.utc) - t).total_seconds()
print("%.1f %s" % (age, s["renewTime"]))
sys.exit(0 if age < s["leaseDurationSeconds"] and s["holderIdentity"] == sys.argv[1] else 1)' "$LEASE"
}
RENEW_S=${RENEW_S:-70}
for ((i = 0; i < 300; i++)); do lease_fresh >/dev/null 2>&1 && break; sleep 0.1; done
t_end=$(($(date +%s) + RENEW_S))
samples=0 bad=0 oldest=0
: >"$S/renewtimes"
while [ "$(date +%s)" -lt "$t_end" ]; do
	if out=$(lease_fresh 2>/dev/null); then
		age=${out%% *}
		echo "${out#* }" >>"$S/renewtimes"
		oldest=$(python3 -c "print(max($oldest, $age))")
	else
		bad=$((bad + 1))
	fi
	samples=$((samples + 1))
	sleep 2
done
renewals=$(python3 -c 'import datetime, sys
ts = sorted({datetime.datetime.strptime(l.strip(), "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() for l in open(sys.argv[1]) if l.strip()})
gaps = [b - a for a, b in zip(ts, ts[1:])]
print("%d renewTimes seen, largest gap between them %.1f s" % (len(ts), max(gaps) if gaps else 0))' "$S/renewtimes")
check "Lease $LEASE fresh (gardenlet's check) at each of $samples samples over $RENEW_S s (oldest renewTime seen ${oldest} s; failed: $bad; $renewals)" \
	[ "$bad" -eq 0 -a "$samples" -gt 0 ]
check "token synced from gardener-opentelemetry-collector and written" \
	test "$(cat "$ROOT/var/lib/otelcol/auth-token" 2>/dev/null)" = otel-token-1

sleep 1 # the audit log is written asynchronously
rk_audit "$CN" >"$S/audit-cn.txt"
check "the Lease was created (201) and renewed by update (PUT, 200), under the webhook" \
	sh -c 'grep -q " 201 create /apis/coordination.k8s.io/v1/namespaces/kube-system/leases" "$1" &&
		grep -q " 200 update /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/$2" "$1"' sh "$S/audit-cn.txt" "$LEASE"
check_not "... never patched" grep -q " patch /apis/coordination.k8s.io" "$S/audit-cn.txt"
check "the serial Lease: read (404), created (201), given back by update (200) under the webhook" \
	sh -c 'grep -q " 404 get $2\$" "$1" && test "$(grep -c " 201 create /apis/coordination.k8s.io/v1/namespaces/kube-system/leases\$" "$1")" = 2 &&
		grep -q " 200 update $2\$" "$1"' sh "$S/audit-cn.txt" "$SLEASE"
check "the SystemdUnitsReady condition patched (nodes/<n>/status, 200)" \
	grep -q " 200 patch /api/v1/nodes/$KUBE_NODE/status" "$S/audit-cn.txt"
check "Events created under the webhook (201, $(grep -c " 201 create /api/v1/namespaces/default/events\$" "$S/audit-cn.txt"))" \
	grep -q " 201 create /api/v1/namespaces/default/events\$" "$S/audit-cn.txt"
check "the token Secret read (200)" grep -q " 200 get /api/v1/namespaces/kube-system/secrets/gardener-opentelemetry-collector" "$S/audit-cn.txt"
check "the secretRef'd Secret read (200, Gardener's authorizer: secretRefNamesFromOSCSecret)" \
	grep -q " 200 get /api/v1/namespaces/kube-system/secrets/etcd-ca" "$S/audit-cn.txt"
echo "# requests of the certificate's identity by verb and status: $(awk '{print $3, $2}' "$S/audit-cn.txt" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
# Not a single 403: the Node is read with a list by name before it exists
# (a GET would be refused: authorizer.go getNode, "no node for <machine>
# found"), every other request is one the authorizer allows.
echo "# 403s for the certificate's identity in the audit log: $(grep -c " 403 " "$S/audit-cn.txt")"
echo "# Lease renewals in the audit log (200 update of $LEASE): $(grep -c " 200 update /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/$LEASE\$" "$S/audit-cn.txt")"
# Except the Lease's first requests while the webhook's cache has not seen
# the new Node (Gardener's decides on gardener-resource-manager's cache
# too): the agent asks again quietly for 10 s (agent/lease.c AUTHZ_LAG_MS).
node_created=$(rk GET "/api/v1/nodes/$KUBE_NODE" | jget "d['metadata']['creationTimestamp']")
node_created=$(date -d "$node_created" +%s)
lease_403_lag() { # the audit lines that are not such a 403
	python3 -c 'import datetime, sys
t0 = float(sys.argv[1])
for line in open(sys.argv[2]):
    ts, code, verb, uri = line.split()[:4]
    t = datetime.datetime.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()
    if code == "403" and "/leases" in uri and t0 - 1 <= t <= t0 + 11:
        print("# the cache lag, %d s after the Node: %s" % (t - t0, line.strip()), file=sys.stderr)
        continue
    print(line, end="")' "$node_created" "$S/audit-cn.txt"
}
check_not "no 403 for the certificate's identity in the audit log (Node, serial Lease, Lease, conditions, Events, tokens)" \
	sh -c "awk '\$2 == 403 {print; f=1} END {exit !f}'" < <(lease_403_lag)
check_not "the webhook denied it nothing" rk_authz_denied "$CN" "$node_created" 11
node_gets_before() { # AUDIT NODE T: requests for the Node by GET before time T
	python3 -c 'import datetime, sys
for l in open(sys.argv[1]):
    f = l.split()
    t = datetime.datetime.strptime(f[0], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    if f[2:4] == ["get", "/api/v1/nodes/" + sys.argv[2]] and t < float(sys.argv[3]):
        print(l, end="")' "$@"
}
check "the Node was read with a list by name (200) before it existed" \
	grep -q " 200 list /api/v1/nodes?fieldSelector=metadata.name%3D$KUBE_NODE\$" "$S/audit-cn.txt"
check "... and never with a GET then" test -z "$(node_gets_before "$S/audit-cn.txt" "$KUBE_NODE" "$t_node")"
check "the webhook decided its requests (allow lines in its log)" grep -q '"decision": "allow"' "$RK_AUTHZ_LOG"
rk_audit "$BTUSER" >"$S/audit-bt.txt"
echo "# 403s for the bootstrap token in the audit log: $(grep -c " 403 " "$S/audit-bt.txt")"
# The bootstrap token is for the CSR alone: nothing else is asked with it.
grep -v " /apis/certificates.k8s.io/v1/certificatesigningrequests" "$S/audit-bt.txt" | head -5 | sed 's/^/# bootstrap token: /'
check_not "the bootstrap token was used for nothing but its CSR (no 403: no Secret, Node or Lease asked)" \
	grep -v " /apis/certificates.k8s.io/v1/certificatesigningrequests" "$S/audit-bt.txt"
check "the certificate's identity read the Secret (200)" grep -q " 200 [a-z]* /api/v1/namespaces/kube-system/secrets" "$S/audit-cn.txt"
check "... and patched its Node (200)" grep -q " 200 patch /api/v1/nodes/$KUBE_NODE" "$S/audit-cn.txt"
check_not "... and was never refused otherwise (Gardener's authorizer is enough)" awk '$2 >= 400 && $2 != 404 && $2 != 409 {print; f=1} END {exit !f}' "$S/audit-cn.txt"
check_not "the bootstrap token never read a Secret or a Node" grep -E ' 2[0-9][0-9] [a-z]+ /api/v1/(namespaces/kube-system/secrets|nodes)' "$S/audit-bt.txt"
check "the bootstrap token created the CSR (201)" grep -q " 201 create $CSRS" "$S/audit-bt.txt"
check "... and awaited it with a watch on that CSR (system:node-bootstrapper allows it)" \
	grep -q " 200 watch $CSRS?.*fieldSelector=metadata.name%3D$csr_name" "$S/audit-bt.txt"
check_not "... never reading it with GET" grep -q " [0-9]* get $CSRS/" "$S/audit-bt.txt"
# Both credentials valid (the bootstrap token Secret is still there): once
# the agent holds its certificate it never uses the bootstrap token again.
bt_after=$(python3 -c 'import datetime, sys
ts = lambda l: datetime.datetime.strptime(l.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
first = min(ts(l) for l in open(sys.argv[1]))
print(sum(1 for l in open(sys.argv[2]) if ts(l) > first))' "$S/audit-cn.txt" "$S/audit-bt.txt")
check "the bootstrap token (still valid) not used once the certificate is ($bt_after requests after the first with the certificate)" \
	test "$bt_after" = 0

# the round trip: CSR created (audit: the create's request time) -> certificate
# installed (the first request with the certificate's identity)
rt=$(python3 - "$RK_AUDIT" "$CN" "$BTUSER" <<-'PY'
	import datetime, json, sys
	def ts(s):
	    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
	created = first = approved = issued = None
	for l in open(sys.argv[1]):
	    e = json.loads(l)
	    if e.get("stage") != "ResponseComplete":
	        continue
	    u, t, uri = e.get("user", {}).get("username", ""), ts(e["requestReceivedTimestamp"]), e.get("requestURI", "")
	    if u == sys.argv[3] and e.get("verb") == "create" and "certificatesigningrequests" in uri and created is None:
	        created = t
	    if "certificatesigningrequests" in uri and uri.endswith("/approval") and approved is None:
	        approved = t
	    if "certificatesigningrequests" in uri and uri.endswith("/status") and issued is None:
	        issued = t
	    if u == sys.argv[2] and first is None:
	        first = t
	print("%.2f %.2f %.2f" % (first - created, approved - created, first - issued))
	PY
)
read -r rt_total rt_approve rt_pickup <<<"$rt"
echo "# CSR round trip (real kube-apiserver, audit log): created -> first request with the certificate ${rt_total} s" \
	"(the test's approval after ${rt_approve} s; issued -> in use ${rt_pickup} s, the agent watches its CSR)"
check "CSR round trip measured ($rt_total s, within the agent's csrMs 60 s)" \
	python3 -c "import sys; sys.exit(not 0 < $rt_total < 60)"
check "issued -> in use $rt_pickup s: seen through the watch, not a 2 s poll" \
	python3 -c "import sys; sys.exit(not 0 <= $rt_pickup < 1.5)"
# The webhook is in force: with the agent's certificate a PATCH of its Lease
# and a read of another node's Lease are refused (403), as on a shoot.
cert_req() {
	curl -s -o /dev/null -w '%{http_code}' --cacert "$KUBE_PKI/ca.crt" --cert "$PEM" -X "$1" \
		-H 'Content-Type: application/merge-patch+json' ${3:+--data-binary "$3"} "$KUBE_API$2"
}
check "with the certificate: PATCH of its own Lease refused (403)" \
	test "$(cert_req PATCH "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/$LEASE" '{}')" = 403
check "... GET of another node's Lease refused (403)" \
	test "$(cert_req GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/gardener-node-agent-other)" = 403
check "... GET of another Secret refused (403)" \
	test "$(cert_req GET /api/v1/namespaces/kube-system/secrets/bootstrap-token-abcdef)" = 403
# The in-place update's writes (agent/nodeupdate.c), as the agent's Node
# patch sends them: allowed for the own Node (Gardener's authorizer allows
# patch of the own Node, fields not looked at), refused for another.
IP_FAILED='{"metadata":{"labels":{"node.machine.sapcloud.io/update-result":"failed"},"annotations":{"node.machine.sapcloud.io/update-failed-reason":"OS update might have failed","node-agent.gardener.cloud/updating-operating-system-version":"1877.4"}}}'
IP_OK='{"metadata":{"labels":{"node.machine.sapcloud.io/update-result":"successful"},"annotations":{"node.machine.sapcloud.io/update-failed-reason":null,"node-agent.gardener.cloud/updating-operating-system-version":null}}}'
check "in-place update: update-result=failed, reason and OS version annotations on its own Node (200)" \
	test "$(cert_req PATCH "/api/v1/nodes/$KUBE_NODE" "$IP_FAILED")" = 200
check "... update-result=successful, both annotations removed (200)" \
	test "$(cert_req PATCH "/api/v1/nodes/$KUBE_NODE" "$IP_OK")" = 200
check "... the label on the Node" test "$(rk GET "/api/v1/nodes/$KUBE_NODE" | jget "d['metadata']['labels'].get('node.machine.sapcloud.io/update-result')")" = successful
check "... the same on another Node refused (403)" \
	test "$(cert_req PATCH /api/v1/nodes/other-node "$IP_OK")" = 403
# deleteRemainingPods (agent/podsweep.c) as the agent sends it: the list
# of its Node's Pods by field selector and a DELETE of each, allowed by
# Gardener's authorizer (authorizePod) for Pods bound to its Node only.
# Pods as the scheduler binds them (no kubelet here: a deleted Pod keeps
# its deletionTimestamp, as it would until the kubelet confirms).
rk_sa kube-system default || fail "ServiceAccount kube-system/default"
podj() { printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"kube-system"},"spec":{"nodeName":"%s","automountServiceAccountToken":false,"containers":[{"name":"c","image":"pause"}]}}' "$1" "$2"; }
rk POST /api/v1/namespaces/kube-system/pods "$(podj ds-mine "$KUBE_NODE")" >/dev/null
c1=$RK_CODE
rk POST /api/v1/namespaces/kube-system/pods "$(podj ds-other other-node)" >/dev/null
check "Pods on its Node and on another created ($c1, $RK_CODE)" test "$c1/$RK_CODE" = 201/201
plist=$(curl -s --cacert "$KUBE_PKI/ca.crt" --cert "$PEM" "$KUBE_API/api/v1/pods?fieldSelector=spec.nodeName%3D$KUBE_NODE")
check "with the certificate: list of Pods with spec.nodeName=$KUBE_NODE allowed, its Pod only" \
	test "$(jget "' '.join(o['metadata']['name'] for o in d.get('items', []))" <<<"$plist")" = ds-mine
check "... DELETE of its Node's Pod allowed (200)" \
	test "$(cert_req DELETE /api/v1/namespaces/kube-system/pods/ds-mine)" = 200
check "... DELETE of another Node's Pod refused (403)" \
	test "$(cert_req DELETE /api/v1/namespaces/kube-system/pods/ds-other)" = 403
check "... the one deleted (deletionTimestamp), the other not" \
	test "$(rk GET /api/v1/namespaces/kube-system/pods/ds-mine | jget "bool(d['metadata'].get('deletionTimestamp'))")/$(rk GET /api/v1/namespaces/kube-system/pods/ds-other | jget "bool(d['metadata'].get('deletionTimestamp'))")" = true/false
agent_stop
check_not "no sanitizer report in the agent's log" grep -l 'Sanitizer\|runtime error' "$S/agent.log"
echo "# real-apiserver CSR test took $(($(date +%s) - t_begin)) s"
finish
