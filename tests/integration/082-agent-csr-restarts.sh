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
# its audit log after the restart); no log line said twice in the round.
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
# ready_after T: the first /readyz 200 in the audit log after T (the audit
# log is written behind the requests: read until it is there).
ready_after() {
	local i r
	for ((i = 0; i < 50; i++)); do
		r=$(python3 -c 'import json, sys
from datetime import datetime
after = float(sys.argv[2])
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("stage") != "ResponseComplete" or not e.get("requestURI", "").startswith("/readyz"):
        continue
    ts = datetime.fromisoformat(e["stageTimestamp"].replace("Z", "+00:00")).timestamp()
    if ts > after and e.get("responseStatus", {}).get("code") == 200:
        print("%.6f" % ts)
        break' "$RK_AUDIT" "$1")
		[ -n "$r" ] && { echo "$r"; return 0; }
		sleep 0.1
	done
	echo none
}
# restart [haproxy]: the API server (and haproxy) killed and started (a
# crash: SIGTERM would have v1.20 drain its requests for up to 60 s first);
# sets T_DOWN (when it went down) and READY (the server's readiness).
restart() {
	T_DOWN=$(now)
	[ "${1:-}" = haproxy ] && haproxy_stop
	kill -KILL "$RK_API_PID" 2>/dev/null
	wait "$RK_API_PID" 2>/dev/null
	RK_API_PID=
	[ "${1:-}" = haproxy ] && haproxy_start "$S/haproxy" 6445 "127.0.0.1:$RK_API_PORT" >/dev/null
	rk_start_apiserver || return 1
	READY=$(ready_after "$T_DOWN")
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
	d=$(python3 -c "print('%.2f' % ($m - $READY))" 2>/dev/null || echo none)
	delays+=("$d")
	check "$what: certificate in use $d s after readiness (<= 2 s)" \
		python3 -c "import sys; sys.exit(0 if -5 < $d <= 2 else 1)"
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
check "no CSR left behind: $n_csr CSRs, $n_used certificates installed ($((ROUNDS * 2)) rounds' worth), each CSR one of them${orphans:+ ($orphans)}" \
	test -z "$orphans" -a "$n_csr" = "$n_used"
[ -z "$orphans" ] || dump "the agent's CSR lines" grep -E "CSR|certificate" "$S/agent.log"
# Gardener's authorizer lets a node-agent certificate get and create CSRs,
# not watch them: the renewal's watch is refused once, then it is read.
denied_other() { rk_authz_denied "$CN" | grep -v "^watch certificates.k8s.io certificatesigningrequests "; }
check_not "the webhook denied the certificate's identity nothing but the renewal's CSR watch" denied_other
check_not "no sanitizer report in the agent's log" grep -l 'Sanitizer\|runtime error' "$S/agent.log"
echo "# CSR restart test took $(($(date +%s) - t_begin)) s"
finish
