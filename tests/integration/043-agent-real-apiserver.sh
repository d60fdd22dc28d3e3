#!/bin/bash
# node-agent + cloud-config-exec (--no-systemd, scratch root) against the
# REAL kube-apiserver v1.20.2 and etcd 3.4 (tests/lib/realkube.sh), one
# server for every phase, in a private network namespace, with RBAC alone
# (no Gardener authorizer: what a non-Gardener cluster or an operator's own
# identity has). The rights are the Roles and ClusterRoles printed in
# node-agent(8), section Permissions, applied as printed (rk_man_roles: the
# YAML of the man page source, its placeholders replaced by this test's
# names) and bound to both identities the agent uses here: the client
# certificate it gets through the CSR API, then a ServiceAccount token.
# Phases: the join (bootstrap token, CSR approved and signed by the test,
# the first OSC applied before the Node exists, the search by the hostname
# label, the Node registered, annotated, the Lease created, Events); a
# Secret update, the SystemdUnitsReady condition, a serial rollout (the
# serial Lease taken and given back); a checksum mismatch refused; a restart
# request consumed; the switch to a ServiceAccount token and its rotation
# (the old token made invalid); the idle request rate with the Lease renewed
# by update (the real server's bookmarks come about once a minute:
# watchIdleMs 75 s); etcd compaction + an API server restart with an update
# made during the outage (applied within 2 s of the agent's first request
# after readiness, that request within the gate's 15 s cap; measured); a
# fresh start that makes no request answered 410; an in-place update and its
# Pod sweep (the executor a stand-in as in 078; Pods bound to the Node by
# spec.nodeName, no kubelet). Then the audit log must hold no 403 for any
# identity the agent used (those received while this test's API server was
# starting, before its RBAC is loaded, are counted apart), and it prints
# how many requests were made. Last, the Role without `watch`: one clear
# log line naming it.
# Every OSC version carries a file from a Secret (content.secretRef), the
# token sync of gardener-node-agent's configuration and a unit whose
# filePaths name /etc/hello, so every rule of the Roles is used.
# Skips (saying why) without a kube-apiserver binary (tests/tools/kube-apiserver),
# etcd or openssl. IDLE_SECONDS (default 75) sets the idle window.
source "$TESTS_DIR/lib/common.sh"
# A Node name that differs from the machine's (as on AWS), as in 049.
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
install -d -m 0755 "$ROOT" "$ROOT/etc" "$ROOT/home" "$ROOT/var" "$ROOT/var/lib" "$ROOT/opt"
t_begin=$(date +%s)
if ! rk_start "$S"; then
	fail "etcd and kube-apiserver start"
	finish
	exit 1
fi
ok "etcd and kube-apiserver $("$RK_BIN" --version | cut -d' ' -f2) ready after $(($(date +%s) - t_begin)) s"
ANN=checksum/cloud-config-data
SA=node-agent
SAUSER=system:serviceaccount:kube-system:$SA
# A machine name of real length (55 characters; the CN is 89).
MACHINE=shoot--i512345--prod-eu1-workerpool1-z1-7d9f6c8b4-x2k9p
CN=gardener.cloud:node-agent:machine:$MACHINE
BTUSER=system:bootstrap:abcdef
LEASE=/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/gardener-node-agent-$KUBE_NODE
SERIAL='{"reconciliation.osc.node-agent.gardener.cloud/serial": "true"}'

# hello N: version N of the OSC in $S/vN.yaml: /etc/hello "real N", which
# hello.service names; gardener-node-agent's configuration with a token
# sync; a file from the Secret etcd-ca.
GNACFG=$(printf 'apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: NodeAgentConfiguration\ncontrollers:\n  token:\n    syncConfigs:\n    - secretName: gardener-opentelemetry-collector\n      path: /var/lib/otelcol/auth-token\n' | base64 -w0)
hello() {
	{
		printf 'spec:\n  files:\n  - path: /etc/hello\n    permissions: 420\n    content:\n      inline:\n        data: "real %s"\n' "$1"
		printf '  - path: /var/lib/gardener-node-agent/config-v1.149.4.yaml\n    permissions: 384\n    content:\n      inline:\n        encoding: b64\n        data: %s\n' "$GNACFG"
		printf '  - path: /etc/pki/etcd-ca.crt\n    permissions: 416\n    content:\n      secretRef:\n        name: etcd-ca\n        dataKey: ca.crt\n'
		printf '  units:\n  - name: hello.service\n    enable: true\n    content: |\n      [Service]\n      ExecStart=/bin/true\n    filePaths:\n    - /etc/hello\n'
	} >"$S/v$1.yaml"
}
new_token() { # writes a fresh TokenRequest token into $KUBE_DIR/token (atomically)
	local t
	t=$(rk_sa_token kube-system $SA 3600) && [ -n "$t" ] || return 1
	printf '%s' "$t" >"$KUBE_DIR/token.new"
	chmod 0600 "$KUBE_DIR/token.new"
	mv "$KUBE_DIR/token.new" "$KUBE_DIR/token"
}
setup_ok=true
rk_sa kube-system $SA || setup_ok=false
rk_bootstrap_token abcdef 0123456789abcdef || setup_ok=false
rk_bind "" ClusterRole system:node-bootstrapper \
	'{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"system:bootstrappers"}' || setup_ok=false
rk_apply /api/v1/namespaces/kube-system/secrets '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"gardener-opentelemetry-collector","namespace":"kube-system"},"data":{"token":"'"$(printf otel-token-1 | base64 -w0)"'"}}' || setup_ok=false
rk_apply /api/v1/namespaces/kube-system/secrets '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"etcd-ca","namespace":"kube-system"},"data":{"ca.crt":"'"$(printf 'etcd ca 1' | base64 -w0)"'"}}' || setup_ok=false
v=1
hello $v
rk_secret kube-system "$KUBE_SECRET" "$S/v$v.yaml" || setup_ok=false
check "bootstrap token, system:node-bootstrapper, ServiceAccount, the OSC Secret and the Secrets it names; no Node yet" $setup_ok
ROLE_VALUES='{"<osc.secretName>": "'$KUBE_SECRET'", "<token-sync Secrets>": "gardener-opentelemetry-collector",
	"<the OSC'"'"'s content.secretRef names>": "etcd-ca", "<node.name>": "'$KUBE_NODE'"}'
SUBJECTS='[{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "'$CN'"},
	{"kind": "ServiceAccount", "name": "'$SA'", "namespace": "kube-system"}]'
if roles=$(rk_man_roles "$ROLE_VALUES" "$SUBJECTS" 2>&1); then
	ok "the Roles of node-agent(8) applied as printed and bound: $(echo "$roles" | tr '\n' ';')"
else
	fail "the Roles of node-agent(8) applied as printed: $roles"
	finish
	exit 1
fi
BT=$S/bootstrap-token
printf 'abcdef.0123456789abcdef\n' >"$BT"
chmod 0600 "$BT"
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
AGENT_CONF=$S/agent.json
# watchIdleMs above the real server's bookmark interval (about 60 s).
agent_config "$AGENT_CONF" '{"apiServer": {"tokenFile": null, "bootstrapTokenFile": "'"$BT"'"},
	"node": {"machineName": "'$MACHINE'"}, "timeouts": {"watchIdleMs": 75000, "csrMs": 60000},
	"lease": {"enabled": true}, "events": {"enabled": true}}'
exec_loop_start

# applied VERSION [SECONDS]: the Node shows version VERSION's checksum and
# /etc/hello has it.
applied() {
	rk_wait_annotation $ANN "$(sha256 "$S/v$1.yaml")" "${2:-20}" >/dev/null &&
		[ "$(cat "$ROOT/etc/hello" 2>/dev/null)" = "real $1" ]
}
not_logged() { ! grep -qF -- "$1" "$S/agent.log"; }
not_logged_since() { ! tail -n +"$(($2 + 1))" "$S/agent.log" | grep -qF -- "$1"; }
update() { v=$((v + 1)); hello $v; rk_secret kube-system "$KUBE_SECRET" "$S/v$v.yaml" auto "${1:-}"; }
# lap WHAT: how long WHAT took since the last lap (what the phases cost)
lap() { local t; t=$(now); echo "# $1 took $(python3 -c "print(round($t - $lap_at, 1))") s"; lap_at=$t; }

# --- 1. the join: a CSR with the bootstrap token, the first OSC before
# the Node exists, then the Node as the kubelet registers it
lap_at=$(now)
agent_start
if ! csr_name=$(rk_wait_csr node-agent-csr- 30); then
	fail "join: the agent's CSR created with the bootstrap token"
	dump_logs
	finish
	exit 1
fi
rk_csr_approve "$csr_name"
approved=$RK_CODE
rk_csr_sign "$csr_name" "$S/issued.crt"
check "join: CSR $csr_name approved ($approved) and issued ($RK_CODE) by the test" [ "$approved:$RK_CODE" = 200:200 ]
check "join: the agent takes the certificate" wait_log "client certificate issued" 0 30
for ((i = 0; i < 300; i++)); do [ "$(cat "$ROOT/etc/hello" 2>/dev/null)" = "real 1" ] && break; sleep 0.1; done
check "join: the first OSC applied with the certificate before the Node exists" \
	[ "$(cat "$ROOT/etc/hello" 2>/dev/null)" = "real 1" ]
rk_node "$KUBE_NODE"
if ! applied 1 30; then
	fail "join: the Node registered (as the kubelet would) and annotated"
	dump_logs
	finish
	exit 1
fi
ok "join: the Node registered (as the kubelet would) and annotated (checksum $(sha256 "$S/v1.yaml" | cut -c1-12)...)"
lease_renewed() { rk GET "$LEASE" | jget 'd["spec"]["renewTime"]' >/dev/null; }
check "join: the Lease created and renewed (renewTime set)" wait_for 30 lease_renewed
check "join: the token Secret synced and the secretRef'd file written" \
	[ "$(cat "$ROOT/var/lib/otelcol/auth-token" 2>/dev/null):$(cat "$ROOT/etc/pki/etcd-ca.crt" 2>/dev/null)" = "otel-token-1:etcd ca 1" ]
lap "the join (CSR, first apply, Node, Lease)"

# --- 2. update
update
check "Secret update: applied and annotated" applied $v

# --- 2a. a serial rollout: this change restarts hello.service, so the
# agent takes the Lease named like the Secret, applies, and gives it back
lap_at=$(now)
mark=$(log_mark)
update "$SERIAL"
check "serial rollout: applied and annotated" applied $v
check "serial rollout: the serial Lease taken" wait_log "serial rollout: took Lease" "$mark" 1
check "serial rollout: ... and given back" wait_log "serial rollout: released Lease" "$mark" 10
lap "the serial rollout"

# --- 2b. the SystemdUnitsReady condition (agent/conditions.c; 032 has the
# details): the real server takes the agent's strategic merge patch of
# nodes/<n>/status (RBAC nodes/status patch) and merges it by type.
rk PATCH "/api/v1/nodes/$KUBE_NODE/status" '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"stand-in kubelet"}]}}' >/dev/null
python3 - "$ROOT/var/lib/cloud-config-exec/result.json" <<'EOF'
import json, os, sys, time
d = json.load(open(sys.argv[1]))
d["unitsReady"] = {"status": "False", "reason": "UnhealthyUnits", "message": "kubelet.service: failed", "checkedAt": int(time.time())}
open(sys.argv[1] + ".tmp", "w").write(json.dumps(d))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
EOF
conds() { rk GET "/api/v1/nodes/$KUBE_NODE" | jget "sorted((c['type'], c['status'], c.get('reason', '')) for c in d.get('status', {}).get('conditions', []))"; }
want='[["Ready", "True", "KubeletReady"], ["SystemdUnitsReady", "False", "UnhealthyUnits"]]'
for ((i = 0; i < 100; i++)); do [ "$(conds)" = "$want" ] && break; sleep 0.1; done
check "SystemdUnitsReady: the real server accepts the agent's nodes/status patch, next to Ready" [ "$(conds)" = "$want" ]

# --- 3. checksum mismatch
good=$v
mark=$(log_mark)
hello 100
rk_secret kube-system "$KUBE_SECRET" "$S/v100.yaml" wrong
check "checksum mismatch: refused with a log line" wait_log "does not match the SHA-256" "$mark"
check "checksum mismatch: last good state kept (file and annotation)" \
	[ "$(cat "$ROOT/etc/hello")" = "real $good" -a "$(rk_annotation $ANN)" = "$(sha256 "$S/v$good.yaml")" ]
update
check "after the mismatch: the next good version applies" applied $v

# --- 4. restart request
rk PATCH "/api/v1/nodes/$KUBE_NODE" '{"metadata":{"annotations":{"worker.gardener.cloud/restart-systemd-services":"hello.service"}}}' >/dev/null
check "restart request: the annotation is consumed (removed by the agent's patch)" \
	rk_wait_annotation worker.gardener.cloud/restart-systemd-services "" 20 >/dev/null

# --- 5. a ServiceAccount token instead of the certificate (the bearer
# token comes first), then its rotation: the ServiceAccount is re-created
# (new uid), which makes every earlier token invalid; the new one goes into
# the token file.
lap_at=$(now)
agent_stop
new_token
agent_config "$AGENT_CONF" '{"timeouts": {"watchIdleMs": 75000}, "lease": {"enabled": true}, "events": {"enabled": true}}'
agent_start
update
check "ServiceAccount token: the next version applies" applied $v
lap "the switch to the ServiceAccount token"
rk DELETE "/api/v1/namespaces/kube-system/serviceaccounts/$SA" >/dev/null
rk_sa kube-system $SA
new_token
newuid=$(rk GET "/api/v1/namespaces/kube-system/serviceaccounts/$SA" | jget "d['metadata']['uid']")
update
check "token rotation: the next version applies with the new token" applied $v
n=$(rk_audit "$SAUSER" | grep -c " PATCH \| patch ") || true
uidn=$(python3 -c 'import json,sys
print(sum(1 for l in open(sys.argv[1]) for e in [json.loads(l)]
          if e.get("stage") == "ResponseComplete" and e.get("user", {}).get("uid") == sys.argv[2]
          and e.get("verb") == "patch" and e.get("responseStatus", {}).get("code") == 200))' "$RK_AUDIT" "$newuid")
check "token rotation: the audit log shows a patch by the new token's identity (uid $newuid): $uidn" [ "$uidn" -ge 1 ]

# --- 6. idle: no request but the two long watches
IDLE=${IDLE_SECONDS:-75}
sleep 2
t0=$(now)
sleep "$IDLE"
t1=$(now)
sleep 1 # the audit log is written asynchronously
read -r idle renewals <<<"$(python3 -c 'import json, sys, datetime
t0, t1 = float(sys.argv[2]), float(sys.argv[3])
ids, renewals = set(), 0
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("user", {}).get("username") != sys.argv[4]:
        continue
    t = datetime.datetime.strptime(e["requestReceivedTimestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    if not t0 <= t < t1:
        continue
    if "/leases/" in e.get("requestURI", ""):
        renewals += e.get("stage") == "ResponseComplete" and e.get("verb") == "update" and e.get("responseStatus", {}).get("code") == 200
        continue
    ids.add(e["auditID"])
print(len(ids), renewals)' "$RK_AUDIT" "$t0" "$t1" "$SAUSER")"
rate=$(python3 -c "print(round($idle * 60 / ($t1 - $t0), 2))")
echo "# idle: $idle requests in ${IDLE} s = $rate requests/min, and $renewals Lease renewals"
check "idle: $rate requests/min over ${IDLE} s besides the Lease (<= 1: only watches that end at their timeout)" \
	python3 -c "import sys; sys.exit(0 if $rate <= 1 else 1)"
check "idle: the Lease renewed by update (PUT, 200) under the Roles: $renewals in ${IDLE} s (every 20 s)" \
	[ "$renewals" -ge $((IDLE / 25)) ]
check "idle: no watch dropped as silent (bookmarks arrive within watchIdleMs)" \
	not_logged "not even a bookmark"

# --- 7. outage: the API server stops; an update is made meanwhile (by a
# second API server on another port: the agent cannot reach it); etcd is
# compacted; the API server comes back. The agent's watch resumes from a
# compacted version (410): it must re-read at once.
mark=$(log_mark)
rk_stop_apiserver
RK_API_PORT=6444 KUBE_API=https://127.0.0.1:6444 rk_start_apiserver
RK_API_PORT=6444 KUBE_API=https://127.0.0.1:6444 update
RK_API_PORT=6444 KUBE_API=https://127.0.0.1:6444 rk_stop_apiserver
check "outage: etcd compacted" rk_compact
t_up=$(now)
rk_start_apiserver
ready=$RK_READY_AT
# After an outage this long the agent's gate probes at most every 15 s
# (agent/apigate.h, issue 35: one attempt per node per 5 s at most after
# 30 s), so its first request may come up to that long after readiness;
# from that request on, the update is applied within 2 s. Its first request
# to the restarted server is its first since that server was started;
# readiness is when the test saw /readyz answer,
# which under load can come after that request (then it counts as 0 s).
first_after() { # EPOCH: the agent's first request received at or after it
	# (the audit log is written behind the requests: read until it is there)
	local i r
	for ((i = 0; i < 50; i++)); do
		r=$(first_after_once "$1")
		[ -n "$r" ] && { echo "$r"; return 0; }
		sleep 0.2
	done
}
first_after_once() { # of either identity (certificate or ServiceAccount)
	rk_audit node-agent | python3 -c 'import datetime, sys
t0 = float(sys.argv[1])
for line in sys.stdin:
    t = datetime.datetime.fromisoformat(line.split()[0].replace("Z", "+00:00")).timestamp()
    if t >= t0:
        print("%.6f" % t)
        break' "$1"
}
if t_applied=$(rk_wait_annotation $ANN "$(sha256 "$S/v$v.yaml")" 30); then
	d=$(python3 -c "print(round($t_applied - $ready, 2))")
	t_first=$(first_after "$t_up")
	d1=$(python3 -c "print(round(max(0, ${t_first:-1e12} - $ready), 2))")
	d2=$(python3 -c "print(round($t_applied - max(${t_first:-0}, $ready), 2))")
	echo "# outage: update applied $d s after the API server was ready again (its first request $d1 s after readiness, applied $d2 s after it)"
	if python3 -c "import sys; sys.exit(0 if $d1 <= 15 and $d2 <= 2 else 1)"; then
		ok "outage: the update made during it applied within 2 s of the agent's first request after readiness, which came within the gate's 15 s ($d1 s, $d2 s)"
	else
		fail "outage: the update made during it applied within 2 s of the agent's first request after readiness, which came within the gate's 15 s ($d1 s, $d2 s)"
		echo "# the API server was ready at $(date -d "@$ready" +%T.%N); the agent since the outage:"
		tail -n +"$((mark + 1))" "$S/agent.log" | tail -n 40
	fi
else
	fail "outage: the update made during it applied within 30 s"
	dump_logs
fi
check "outage: the expired watch was re-read (410 logged)" wait_log "expired" "$mark" 1

# --- 8. a fresh start makes no request answered 410: after another
# restart of the API server, the Secret and the Node (unchanged since) carry
# versions older than the new watch cache, so a watch from the GET's version
# would get one.
agent_stop
rk_stop_apiserver
rk_start_apiserver
mark=$(log_mark)
t_fresh=$(now)
agent_start
sleep 4
check "fresh start: no 410 (no \"expired\" in the agent's log)" not_logged_since "expired" "$mark"
update
check "fresh start: applies the next version" applied $v
check "fresh start: no 410 in the audit log" [ "$(rk_audit "$SAUSER" | awk -v t="$(date -u -d "@${t_fresh%.*}" +%Y-%m-%dT%H:%M:%S)" '$1 >= t && $2 == 410' | wc -l)" -eq 0 ]
check "the Node read with a list by name under RBAC (list with resourceNames: 200), never refused" \
	sh -c 'grep -q " 200 list /api/v1/nodes?fieldSelector=metadata.name%3D$2\$" "$1" && ! grep -q " 403 list /api/v1/nodes" "$1"' \
	sh "$(rk_audit "$SAUSER" >"$S/audit-sa.txt"; echo "$S/audit-sa.txt")" "$KUBE_NODE"

# --- 9. an in-place update and its Pod sweep (gardener's
# deleteRemainingPods) under the Roles. The executor is the stand-in of 078
# (tests/lib/inplace-exec.py: it reports the update's state); the Pods are
# bound to Nodes by spec.nodeName (no kubelet: a delete leaves them
# terminating, with a deletionTimestamp).
lap_at=$(now)
kill "$EXEC_LOOP_PID" 2>/dev/null
wait "$EXEC_LOOP_PID" 2>/dev/null
printf '#!/bin/bash\nexec python3 "%s" "%s" "%s" "%s"\n' "$TESTS_DIR/lib/inplace-exec.py" \
	"$ROOT/var/lib/cloud-config-exec/result.json" "$ROOT/var/lib/node-agent/desired.json" "$S/inplace" >"$S/exec"
chmod +x "$S/exec"
EXEC=$S/exec
exec_loop_start
pod() { rk_apply "/api/v1/namespaces/$1/pods" '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"'"$2"'","namespace":"'"$1"'"},"spec":{"nodeName":"'"$3"'","automountServiceAccountToken":false,"containers":[{"name":"c","image":"registry.k8s.io/pause:3.9"}]}}'; }
terminating() { rk GET "/api/v1/namespaces/$1/pods/$2" | jget "'yes' if d['metadata'].get('deletionTimestamp') else 'no'"; }
result_label() { rk GET "/api/v1/nodes/$KUBE_NODE" | jget "d['metadata'].get('labels', {}).get('node.machine.sapcloud.io/update-result', '')"; }
setup_ok=true
rk_sa kube-system default && rk_sa default default || setup_ok=false
pod kube-system calico-node-x2b9k "$KUBE_NODE" && pod default web-0 "$KUBE_NODE" && pod default web-1 node-other || setup_ok=false
check "in-place: two Pods on the Node, one on another" $setup_ok
printf '{"kinds": ["os-version"], "outcome": "successful", "os": "1877.3"}' >"$S/inplace"
mark=$(log_mark)
update
if wait_log "waits for the Node condition InPlaceUpdate with reason ReadyForUpdate" "$mark" 20; then
	ok "in-place: the executor waits for the drain"
else
	fail "in-place: the executor waits for the drain"
	dump "agent since the update" tail -n +"$((mark + 1))" "$S/agent.log"
	dump "executor" cat "$S/exec.log"
fi
rk PATCH "/api/v1/nodes/$KUBE_NODE/status" '{"status":{"conditions":[{"type":"InPlaceUpdate","status":"True","reason":"ReadyForUpdate","message":"drained by the test (machine-controller-manager)"}]}}' >/dev/null
labelled() { [ "$(result_label)" = successful ]; }
check "in-place: update-result=successful" wait_for 30 labelled
check "in-place: ... with the new checksum" [ "$(rk_annotation $ANN)" = "$(sha256 "$S/v$v.yaml")" ]
check "in-place: the Pods on the Node deleted first (terminating), the other Node's untouched" \
	[ "$(terminating kube-system calico-node-x2b9k) $(terminating default web-0) $(terminating default web-1)" = "yes yes no" ]
check "in-place: ... logged" wait_log "deleted the 2 Pod(s) remaining on Node $KUBE_NODE" "$mark" 1
lap "the in-place update"

# --- the Roles as printed: not one request refused
sleep 1 # the audit log is written asynchronously
rk_audit_forbidden "$BTUSER" "$CN" "$SAUSER" >"$S/forbidden.txt"
echo "# under the Roles of node-agent(8), $(head -1 "$S/forbidden.txt")"
echo "# 403s while the API server was starting (its RBAC not loaded yet; not counted): $(sed -n 2p "$S/forbidden.txt" | cut -d' ' -f2)"
grep '^  ' "$S/forbidden.txt" | sed 's/^  /#   /'
tail -n +3 "$S/forbidden.txt" | sed '/^$/d; /^  /d; s/^/# refused: /'
check "the Roles of node-agent(8) as printed: no request of the bootstrap token, the certificate or the ServiceAccount refused (403)" \
	[ -z "$(tail -n +3 "$S/forbidden.txt" | sed '/^$/d; /^  /d')" ]
rk_audit "$CN" >"$S/audit-cn.txt"
rk_audit "$SAUSER" >"$S/audit-sa2.txt"
check "the Roles were used: the label search (list nodes by label), the Lease updated (PUT), an Event created, Pods listed and deleted" \
	sh -c 'grep -q " 200 list /api/v1/nodes?labelSelector=" "$1" && grep -q " 200 update /apis/coordination.k8s.io/" "$2" &&
		grep -q " 201 create /api/v1/namespaces/default/events" "$1" && grep -q " 200 list /api/v1/pods?" "$2" &&
		grep -q " 200 delete /api/v1/namespaces/default/pods/web-0" "$2"' sh "$S/audit-cn.txt" "$S/audit-sa2.txt"

# --- 10. the Role without `watch` on the Secret: one clear line
agent_stop
rk_role kube-system node-agent '[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"],"resourceNames":["'$KUBE_SECRET'"]}]'
# until the authorizer has the new Role: the agent's token may no longer watch
watch_code() {
	curl -s -o /dev/null -w '%{http_code}' --cacert "$KUBE_PKI/ca.crt" -H "Authorization: Bearer $(cat "$KUBE_DIR/token")" \
		"$KUBE_API/api/v1/namespaces/kube-system/secrets?watch=1&fieldSelector=metadata.name%3D$KUBE_SECRET&timeoutSeconds=1"
}
for ((i = 0; i < 50; i++)); do [ "$(watch_code)" = 403 ] && break; sleep 0.2; done
check "no watch permission: the Role change is in force" [ "$(watch_code)" = 403 ]
mark=$(log_mark)
agent_start
line="no watch permission on secrets kube-system/$KUBE_SECRET: updates arrive only by a GET before each new try of the watch (backing off to every 300 s)"
if ! wait_log "$line" "$mark" 20; then
	fail "no watch permission: logged"
	tail -n +"$((mark + 1))" "$S/agent.log" | tail -n 20
else
	ok "no watch permission: logged"
fi
sleep 3
n=$(tail -n +"$((mark + 1))" "$S/agent.log" | grep -cF -- "$line")
check "no watch permission: logged once ($n)" [ "$n" -eq 1 ]
check "no watch permission: the Secret was still read (annotation kept)" \
	[ "$(rk_annotation $ANN)" = "$(sha256 "$S/v$v.yaml")" ]
agent_stop
echo "# real-apiserver test took $(($(date +%s) - t_begin)) s"
finish
