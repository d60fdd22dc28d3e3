#!/bin/bash
# The join and the certificate renewal through the CSR API while the REAL
# kube-apiserver v1.20.2 (tests/lib/realkube.sh, Gardener's node-agent
# authorizer as its webhook) restarts at random instants, reached through
# haproxy (tests/lib/haproxy.sh) as a shoot's node reaches it, with a
# 55-character machine name and a Node name that differs from it. A
# restarted kube-apiserver answers the bootstrap token with 401 until its
# caches are synced: the agent must keep its CSR (no second one), go on
# within a second of the server serving, and say each condition once.
# tests/lib/rk-csr-signer.py approves and issues (as Gardener's approver and
# kube-controller-manager's signer: 0.5 s after it sees a CSR, certificates
# of LIFETIME s, so a renewal comes within the round). Per round: the agent starts without a
# certificate, the API server (and every other round haproxy too) is
# restarted at a random instant of the join; then at a random instant
# around the renewal. Checked per restart: the certificate in use (client.pem
# written) at most 2 s after readiness (the server's first /readyz 200 in
# its audit log after the restart; when haproxy restarted too, the first
# that passed haproxy); no log line said twice in the round.
# Then in-place updates with a node-agent CA rotation, the API server
# restarted at a random instant of each (see there; IP_ROUNDS=$(sized 1 4)).
# At the end: every CSR issued is one the agent installed, none pending.
# ROUNDS=${ROUNDS:-$(sized 3 12)}. Prints each delay.
# Skips (saying why) without a kube-apiserver binary, etcd or haproxy.
source "$TESTS_DIR/lib/common.sh"
KUBE_NODE=ip-10-250-17-203.eu-central-1.compute.internal
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
source "$TESTS_DIR/lib/realkube.sh"
source "$TESTS_DIR/lib/haproxy.sh"
kube_netns "$@"
agent_require
rk_require
haproxy_require
python3 -c 'import cryptography' 2>/dev/null || skip_all "python3-cryptography missing"

ROUNDS=${ROUNDS:-$(sized 3 12)}
LIFETIME=${LIFETIME:-30}
MACHINE=shoot--i512345--prod-eu1-workerpool1-z1-7d9f6c8b4-x2k9p
S=$(scratch)
ROOT=$S/root
install -d -m 0755 "$ROOT" "$ROOT/etc" "$ROOT/var" "$ROOT/var/lib" "$ROOT/var/lib/cloud-config-exec"
t_begin=$(date +%s)
RK_WEBHOOK=1
RK_WEBHOOK_MACHINES="$MACHINE=$KUBE_NODE"
if ! rk_start "$S"; then
	fail "etcd and kube-apiserver start"
	finish
	exit 1
fi
if ! haproxy_start "$S/haproxy" 6445 "127.0.0.1:$RK_API_PORT"; then
	fail "haproxy starts"
	finish
	exit 1
fi
ok "etcd, kube-apiserver (Node,Webhook,RBAC) and haproxy ready after $(($(date +%s) - t_begin)) s"
CN=gardener.cloud:node-agent:machine:$MACHINE
CSRS=/apis/certificates.k8s.io/v1/certificatesigningrequests
PEM=$ROOT/var/lib/node-agent/client.pem
printf 'spec:\n  files:\n  - path: /etc/hello\n    permissions: 420\n    content:\n      inline:\n        data: "restarts"\n' >"$S/v1.yaml"
setup_ok=true
rk_secret kube-system "$KUBE_SECRET" "$S/v1.yaml" || setup_ok=false
rk_bootstrap_token abcdef 0123456789abcdef || setup_ok=false
rk_bind "" ClusterRole system:node-bootstrapper \
	'{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"system:bootstrappers"}' || setup_ok=false
check "OSC Secret, bootstrap token, system:node-bootstrapper binding; machine ${#MACHINE} characters, Node $KUBE_NODE" $setup_ok
python3 "$TESTS_DIR/lib/rk-csr-signer.py" --server "$KUBE_API" --ca "$KUBE_PKI/ca.crt" --ca-cert "$KUBE_PKI/ca.crt" \
	--ca-key "$KUBE_PKI/ca.key" --token-file "$KUBE_DIR/admin-token" --lifetime "$LIFETIME" --delay 0.5 >"$S/signer.log" 2>&1 &
SIGNER_PID=$!
on_exit "kill $SIGNER_PID; wait $SIGNER_PID"
BT=$S/bootstrap-token
printf 'abcdef.0123456789abcdef\n' >"$BT"
chmod 0600 "$BT"
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
AGENT_CONF=$S/agent.json
agent_config "$AGENT_CONF" '{"apiServer": {"server": "'"$HAPROXY_URL"'", "tokenFile": null, "bootstrapTokenFile": "'"$BT"'"},
	"node": {"machineName": "'$MACHINE'"}, "timeouts": {"csrMs": 240000}}'

mtime() { stat -c %.Y "$PEM" 2>/dev/null || echo 0; }
# ready_after T [USER_AGENT]: the first /readyz 200 in the audit log after T
# (of that client only, if given; the audit log is written behind the
# requests: read until it is there).
ready_after() {
	local i r
	for ((i = 0; i < 50; i++)); do
		r=$(python3 -c 'import json, sys
from datetime import datetime
after = float(sys.argv[2])
ua = sys.argv[3] if len(sys.argv) > 3 else ""
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("stage") != "ResponseComplete" or not e.get("requestURI", "").startswith("/readyz"):
        continue
    if ua and not e.get("userAgent", "").startswith(ua):
        continue
    ts = datetime.fromisoformat(e["stageTimestamp"].replace("Z", "+00:00")).timestamp()
    if ts > after and e.get("responseStatus", {}).get("code") == 200:
        print("%.6f" % ts)
        break' "$RK_AUDIT" "$@")
		[ -n "$r" ] && { echo "$r"; return 0; }
		sleep 0.1
	done
	echo none
}
# restart [haproxy]: the API server (and haproxy) killed and started (a
# crash: SIGTERM would have v1.20 drain its requests for up to 60 s first);
# sets T_DOWN (when it went down) and READY (the server's readiness).
# When haproxy restarts, readiness is the first /readyz 200 that passed
# it (a poll every 0.1 s through haproxy, user agent 082-via-haproxy): a
# node behind the load balancer cannot see the server before haproxy passes
# its connections again (haproxy holds a refused one for its retries).
restart() {
	local poller=
	T_DOWN=$(now)
	[ "${1:-}" = haproxy ] && haproxy_stop
	kill -KILL "$RK_API_PID" 2>/dev/null
	wait "$RK_API_PID" 2>/dev/null
	RK_API_PID=
	if [ "${1:-}" = haproxy ]; then
		haproxy_start "$S/haproxy" 6445 "127.0.0.1:$RK_API_PORT" >/dev/null
		via_haproxy_ready &
		poller=$!
	fi
	rk_start_apiserver || return 1
	if [ -n "$poller" ]; then
		wait "$poller"
		READY=$(ready_after "$T_DOWN" 082-via-haproxy)
	else
		READY=$(ready_after "$T_DOWN")
	fi
}
# via_haproxy_ready: polls /readyz through haproxy until 200 (at most 90 s).
via_haproxy_ready() {
	local i
	for ((i = 0; i < 900; i++)); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' -m 2 -A 082-via-haproxy --cacert "$KUBE_PKI/ca.crt" \
			-H "Authorization: Bearer $RK_ADMIN_TOKEN" "$HAPROXY_URL/readyz")" = 200 ] && return 0
		sleep 0.1
	done
	return 1
}
# after_restart WHAT BEFORE-MTIME: the certificate written after the
# restart, at most 2 s after readiness (or before the restart: not counted).
delays=()
after_restart() {
	local what=$1 before=$2 m d
	if ! wait_for 60 sh -c '[ "$(stat -c %.Y "$1" 2>/dev/null || echo 0)" != "$2" ]' sh "$PEM" "$before"; then
		fail "$what: a certificate within 60 s of the restart"
		return
	fi
	m=$(mtime)
	if python3 -c "import sys; sys.exit(0 if $m < $T_DOWN else 1)"; then
		ok "$what: the certificate came before the restart"
		return
	fi
	since_ready "$what: certificate in use" "$m" 2 delays
}
# since_ready WHAT T MAX ARRAY: checks that T came at most MAX s after the
# restarted server's readiness; the delay goes into ARRAY.
since_ready() {
	local -n _into=$4
	local d
	d=$(python3 -c "print('%.2f' % ($2 - $READY))" 2>/dev/null || echo none)
	_into+=("$d")
	check "$1 $d s after readiness (<= $3 s)" python3 -c "import sys; sys.exit(0 if -5 < $d <= $3 else 1)"
}
# repeats FROM: lines of the CSR duty (agent/credentials.c) since line FROM
# said more than once.
repeats() { tail -n +"$(($1 + 1))" "$S/agent.log" | grep -E "CSR|bootstrap token|client certificate" | sort | uniq -d; }
T0=$(date +%s)
el() { echo "# $(($(date +%s) - T0)) s: $*"; }

: >"$S/agent.log"
for ((r = 1; r <= ROUNDS; r++)); do
	way=
	((r % 2 == 0)) && way=haproxy
	rm -f "$PEM"
	mark=$(log_mark)
	agent_start
	# the join: connecting, the POST, 0.5 s pending (the signer's delay),
	# issued, installed
	sleep "$(python3 -c 'import random; print("%.2f" % random.uniform(0, 0.8))')"
	restart $way || { fail "round $r: the API server restarts"; break; }
	el "round $r: restarted for the join"
	after_restart "round $r, join, restart ${way:-direct}" 0
	rep=$(repeats "$mark")
	check "round $r, join: no line said twice${rep:+ ($(echo "$rep" | head -3 | cut -c1-160 | tr '\n' '|'))}" test -z "$rep"
	# the renewal: at 80-88 % of LIFETIME; the restart at a random instant
	# from 1 s before to 1 s after it
	at=$(grep -o 'renewal at [0-9]*' "$S/agent.log" | tail -1 | cut -d' ' -f3)
	before=$(mtime)
	mark=$(log_mark)
	sleep "$(python3 -c "import random, time; print('%.2f' % max(0, $at + random.uniform(-1, 1) - time.time()))")"
	el "round $r: renewal due"
	restart $way || { fail "round $r: the API server restarts"; break; }
	el "round $r: restarted for the renewal"
	after_restart "round $r, renewal, restart ${way:-direct}" "$before"
	rep=$(repeats "$mark")
	check "round $r, renewal: no line said twice${rep:+ ($(echo "$rep" | head -3 | cut -c1-160 | tr '\n' '|'))}" test -z "$rep"
	agent_stop
done
echo "# readiness -> certificate in use: ${delays[*]} s"

# --- in-place updates (GEP-31) through restarts --------------------------------
# The Node registered, the agent with its certificate; per round an OS update
# with a node-agent CA rotation (tests/lib/inplace-exec.py as the executor):
# machine-controller-manager's condition InPlaceUpdate/ReadyForUpdate, then
# the API server (every other round haproxy too) killed and restarted at a
# random instant of the update (0-1 s after the condition: the agent writes
# readyForUpdate, the executor reports "successful", the agent renews its
# certificate with a CSR, deletes the Pods left on the Node, labels it).
# Checked per round: converges (update-result=successful and the checksum,
# the new certificate in use, the Pods deleted), no line of the duties
# involved said twice; at the end no CSR left behind (below), no key of a
# CSR in flight kept, no sweep stopped half-way. IP_ROUNDS=$(sized 1 4).
IP_ROUNDS=${IP_ROUNDS:-$(sized 1 4)}
ip_ok=true
rk_node "$KUBE_NODE" >/dev/null || ip_ok=false
rk_sa default default >/dev/null || ip_ok=false
rk_sa kube-system default >/dev/null || ip_ok=false
check "in-place: the Node registered, ServiceAccounts for its Pods" $ip_ok
printf '#!/bin/sh\nexec python3 "%s" "%s" "%s" "%s"\n' "$TESTS_DIR/lib/inplace-exec.py" \
	"$ROOT/var/lib/cloud-config-exec/result.json" "$ROOT/var/lib/node-agent/desired.json" "$S/inplace" >"$S/exec-ip"
chmod +x "$S/exec-ip"
EXEC=$S/exec-ip exec_loop_start
agent_start
check "in-place: the agent (its certificate kept) applies the OSC on its Node" \
	eval 'rk_wait_annotation checksum/cloud-config-data "$(sha256 "$S/v1.yaml")" 60 >/dev/null'
label() { rk GET "/api/v1/nodes/$KUBE_NODE" | jget "d['metadata'].get('labels', {}).get('node.machine.sapcloud.io/update-result', '')"; }
pods_left() { rk GET "/api/v1/pods?fieldSelector=spec.nodeName%3D$KUBE_NODE" | jget "len([p for p in d['items'] if not p['metadata'].get('deletionTimestamp')])"; }
pod() { rk POST "/api/v1/namespaces/$1/pods" '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "'"$2"'"}, "spec": {"nodeName": "'"$KUBE_NODE"'", "automountServiceAccountToken": false, "containers": [{"name": "c", "image": "pause"}]}}' >/dev/null; }
ip_repeats() { tail -n +"$(($1 + 1))" "$S/agent.log" | grep -E "in-place|Pod|CSR|bootstrap token|certificate" | sort | uniq -d; }
ip_delays=()
for ((r = 1; r <= IP_ROUNDS; r++)); do
	way=
	((r % 2 == 0)) && way=haproxy
	printf 'spec:\n  files:\n  - path: /etc/hello\n    permissions: 420\n    content:\n      inline:\n        data: "in-place %s"\n' "$r" >"$S/ip$r.yaml"
	printf '{"kinds": ["os-version", "node-agent-ca-rotation"], "outcome": "successful", "os": "1877.%s"}' "$r" >"$S/inplace"
	mark=$(log_mark)
	rk_secret kube-system "$KUBE_SECRET" "$S/ip$r.yaml" >/dev/null
	wait_log "waits for the Node condition InPlaceUpdate" "$mark" 30 || fail "in-place round $r: the update waits for the drain"
	# machine-controller-manager drained the node: what is left on it
	pod kube-system "calico-node-r$r"
	pod default "web-r$r"
	rk PATCH "/api/v1/nodes/$KUBE_NODE/status" '{"status": {"conditions": [{"type": "InPlaceUpdate", "status": "True", "reason": "ReadyForUpdate", "message": "set by the test as machine-controller-manager", "lastTransitionTime": "'"$(date -u +%Y-%m-%dT%H:%M:%SZ)"'"}]}}' >/dev/null
	sleep "$(python3 -c 'import random; print("%.2f" % random.uniform(0, 1))')"
	before=$(label)
	restart $way || { fail "in-place round $r: the API server restarts"; break; }
	el "in-place round $r: restarted"
	if ! wait_for 60 eval '[ "$(label)" = successful ]'; then
		fail "in-place round $r: update-result=successful within 60 s of the restart"
		dump "the agent's log" tail -n +"$((mark + 1))" "$S/agent.log"
		continue
	fi
	if [ "$before" = successful ]; then
		ok "in-place round $r: the update was over before the restart"
	else
		since_ready "in-place round $r, restart ${way:-direct}: update-result=successful" "$(now)" 20 ip_delays
	fi
	check "  ... the checksum annotated" [ "$(rk_annotation checksum/cloud-config-data)" = "$(sha256 "$S/ip$r.yaml")" ]
	check "  ... the new certificate in use first" wait_log "the new client certificate is in use" "$mark" 1
	check "  ... the Pods left on the Node deleted" [ "$(pods_left)" = 0 ]
	rep=$(ip_repeats "$mark")
	check "  ... no line said twice${rep:+ ($(echo "$rep" | head -3 | cut -c1-160 | tr '\n' '|'))}" test -z "$rep"
	# machine-controller-manager moves on: the condition first (while it
	# says ReadyForUpdate, a label removed is the agent's to put back)
	rk PATCH "/api/v1/nodes/$KUBE_NODE/status" '{"status": {"conditions": [{"type": "InPlaceUpdate", "status": "True", "reason": "UpdateSuccessful", "message": "by the test", "lastTransitionTime": "'"$(date -u +%Y-%m-%dT%H:%M:%SZ)"'"}]}}' >/dev/null
	rk PATCH "/api/v1/nodes/$KUBE_NODE" '{"metadata": {"labels": {"node.machine.sapcloud.io/update-result": null}}}' >/dev/null
done
echo "# in-place: readiness -> update-result=successful: ${ip_delays[*]} s"
check "in-place: no key of a CSR in flight left behind" test ! -e "$ROOT/var/lib/node-agent/csr-pending.pem"
check_not "in-place: no Pod sweep stopped half-way" grep -q "deleting the Pods on Node .* stopped" "$S/agent.log"
agent_stop
# No CSR left behind: the signer issues every CSR it sees, so each CSR must
# be one whose certificate the agent installed ("CSR <name>: client
# certificate issued" in its log), and none may be pending.
rk GET "$CSRS" >"$S/csrs.json"
grep -o 'CSR node-agent-csr-[^:]*: client certificate issued' "$S/agent.log" | cut -d' ' -f2 | tr -d : >"$S/installed"
python3 - "$S/csrs.json" "$S/installed" >"$S/csr-check" <<-'PY'
	import json, sys
	items = [c for c in json.load(open(sys.argv[1]))["items"] if c["metadata"]["name"].startswith("node-agent-csr-")]
	used = set(open(sys.argv[2]).read().split())
	bad = [c["metadata"]["name"] + (" issued, never used" if (c.get("status") or {}).get("certificate") else " pending")
	       for c in items if c["metadata"]["name"] not in used]
	print(len(items), len(used), "; ".join(bad))
	PY
read -r n_csr n_used orphans <"$S/csr-check"
check "no CSR left behind: $n_csr CSRs, $n_used certificates installed ($((ROUNDS * 2)) restarts' and $IP_ROUNDS in-place updates' worth), each CSR one of them${orphans:+ ($orphans)}" \
	test -z "$orphans" -a "$n_csr" = "$n_used"
[ -z "$orphans" ] || dump "the agent's CSR lines" grep -E "CSR|certificate" "$S/agent.log"
# Gardener's authorizer lets a node-agent certificate get and create CSRs,
# not watch them: the renewal's watch is refused once, then it is read.
denied_other() { rk_authz_denied "$CN" | grep -v "^watch certificates.k8s.io certificatesigningrequests "; }
check_not "the webhook denied the certificate's identity nothing but the renewal's CSR watch" denied_other
check_not "no sanitizer report in the agent's log" grep -l 'Sanitizer\|runtime error' "$S/agent.log"
echo "# CSR restart test took $(($(date +%s) - t_begin)) s"
finish
