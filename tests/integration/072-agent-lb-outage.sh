#!/bin/bash
# An API server restart seen directly and through a TCP load balancer
# (Debian's haproxy in TCP mode on loopback, tests/lib/haproxy.sh), against
# the REAL kube-apiserver v1.20.2 (tests/lib/realkube.sh) in a private
# network namespace. While the API server is down, haproxy accepts each
# connection and then closes it (as a cloud load balancer or Istio's SNI
# gateway in front of a shoot's API server does); directly, the connection
# is refused. Either way the agent's watch must retry fast and without
# growing its backoff (agent/watch.c REFUSED_CAP_MS: a wait uniformly in
# [1, 1000] ms per watch), so that an update made during the outage (through
# a second API server on another port, which the agent cannot reach) is
# applied within 2 s of the API server being ready again (issue 22.4):
# checked on the median of the ROUNDS per way, each run within 5 s.
# ROUNDS outages per way (default 2; ROUNDS=6 for the figures in
# docs/testing.md, "API server restart behind a load balancer"); prints each delay.
# Skips (saying why) without a kube-apiserver binary, etcd or haproxy.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
source "$TESTS_DIR/lib/realkube.sh"
source "$TESTS_DIR/lib/haproxy.sh"
kube_netns "$@"
agent_require
rk_require
haproxy_require

ROUNDS=${ROUNDS:-2}
S=$(scratch)
ROOT=$S/root
install -d -m 0755 "$ROOT" "$ROOT/etc" "$ROOT/var" "$ROOT/var/lib" "$ROOT/var/lib/cloud-config-exec"
t_begin=$(date +%s)
if ! rk_start "$S"; then
	fail "etcd and kube-apiserver start"
	finish
	exit 1
fi
ok "etcd and kube-apiserver ready after $(($(date +%s) - t_begin)) s"
if haproxy_start "$S/haproxy" 6445 "127.0.0.1:$RK_API_PORT"; then
	ok "haproxy $(haproxy -v | head -1 | cut -d' ' -f3) in TCP mode on $HAPROXY_URL in front of $KUBE_API"
else
	fail "haproxy starts"
	finish
	exit 1
fi
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$KUBE_PKI/ca.crt" "$HAPROXY_URL/version")
check "the API server answers through haproxy (/version: $code)" test "$code" = 200

ANN=checksum/cloud-config-data
SA=node-agent
SUBJ='{"kind":"ServiceAccount","name":"'$SA'","namespace":"kube-system"}'
hello() { printf 'spec:\n  files:\n  - path: /etc/hello\n    permissions: 420\n    content:\n      inline:\n        data: "lb %s"\n' "$1" >"$S/v$1.yaml"; }
setup_ok=true
rk_node "$KUBE_NODE" || setup_ok=false
rk_sa kube-system $SA || setup_ok=false
rk_role kube-system node-agent '[{"apiGroups":[""],"resources":["secrets"],"verbs":["get","watch"],"resourceNames":["'$KUBE_SECRET'"]}]' || setup_ok=false
rk_bind kube-system Role node-agent "$SUBJ" || setup_ok=false
rk_clusterrole node-agent '[{"apiGroups":[""],"resources":["nodes"],"verbs":["get","watch","patch"],"resourceNames":["'$KUBE_NODE'"]}]' || setup_ok=false
rk_bind "" ClusterRole node-agent "$SUBJ" || setup_ok=false
t=$(rk_sa_token kube-system $SA 7200) && [ -n "$t" ] || setup_ok=false
printf '%s' "$t" >"$KUBE_DIR/token"
chmod 0600 "$KUBE_DIR/token"
v=1
hello $v
rk_secret kube-system "$KUBE_SECRET" "$S/v$v.yaml" || setup_ok=false
check "identity (SA token, narrow RBAC), Node and Secret" $setup_ok
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
for way in direct haproxy; do
	server=$KUBE_API
	[ "$way" = haproxy ] && server=$HAPROXY_URL
	agent_config "$S/agent-$way.json" '{"apiServer": {"server": "'"$server"'"}, "timeouts": {"watchIdleMs": 75000}}'
done
AGENT_CONF=$S/agent-direct.json
exec_loop_start
update() { v=$((v + 1)); hello $v; rk_secret kube-system "$KUBE_SECRET" "$S/v$v.yaml"; }

# outage: one restart with an update made meanwhile; sets D to the delay
# from readiness to the Node's annotation (or "none"). Not in a subshell:
# rk_stop_apiserver must wait for the API server it stops (by pid).
outage() {
	rk_stop_apiserver
	RK_API_PORT=6444 KUBE_API=https://127.0.0.1:6444 rk_start_apiserver
	RK_API_PORT=6444 KUBE_API=https://127.0.0.1:6444 update
	RK_API_PORT=6444 KUBE_API=https://127.0.0.1:6444 rk_stop_apiserver
	rk_start_apiserver
	local ready=$RK_READY_AT t
	READY=$ready
	if t=$(rk_wait_annotation $ANN "$(sha256 "$S/v$v.yaml")" 40); then
		D=$(python3 -c "print('%.2f' % ($t - $ready))")
	else
		D=none
	fi
}

# refused_after READY: the agent identity's requests the API server answered
# 403 after READY (epoch s), from the audit log (written asynchronously:
# read a second later; a watch counts when its stream starts): how many,
# the last one's time after READY, and its first 2xx after READY.
refused_after() {
	sleep 1
	python3 - "$RK_AUDIT" "system:serviceaccount:kube-system:$SA" "$1" <<-'PY'
	import datetime, json, sys
	def ts(s):
	    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
	ready, n, last, ok = float(sys.argv[3]), 0, None, None
	for l in open(sys.argv[1]):
	    e = json.loads(l)
	    if e.get("stage") not in ("ResponseStarted", "ResponseComplete") or e.get("user", {}).get("username") != sys.argv[2]:
	        continue
	    t, code = ts(e["requestReceivedTimestamp"]), e.get("responseStatus", {}).get("code", 0)
	    if t < ready:
	        continue
	    if code == 403:
	        n, last = n + 1, t
	    elif 200 <= code < 300 and ok is None:
	        ok = t
	print("the API server refused the agent's identity %d times after readiness, the last %s s after it; first 2xx %s s after it"
	      % (n, "-" if last is None else "%.2f" % (last - ready), "-" if ok is None else "%.2f" % (ok - ready)))
	PY
}

for way in direct haproxy; do
	server=$KUBE_API
	[ "$way" = haproxy ] && server=$HAPROXY_URL
	AGENT_CONF=$S/agent-$way.json
	agent_start
	if ! rk_wait_annotation $ANN "$(sha256 "$S/v$v.yaml")" 30 >/dev/null; then
		fail "$way: the agent applies the current OSC"
		dump_logs
		break
	fi
	ok "$way: agent running through $server"
	delays=()
	for ((r = 1; r <= ROUNDS; r++)); do
		mark=$(log_mark)
		outage
		d=$D
		delays+=("$d")
		# Each run within 5 s (the full backoff gave 8.7 and 19.9 s
		# behind haproxy); the 2 s goal is checked on the median below,
		# so that one run slowed by a loaded machine does not fail it.
		if [ "$d" != none ] && python3 -c "import sys; sys.exit(0 if $d <= 5 else 1)"; then
			ok "$way, outage $r: the update made during it applied $d s after the API server was ready"
		else
			fail "$way, outage $r: the update made during it applied $d s after the API server was ready (<= 5 s)"
		fi
		if [ "$d" = none ] || python3 -c "import sys; sys.exit(0 if $d > 2. else 1)"; then
			echo "# $way, outage $r: over 2 s; the agent since the outage began:"
			tail -n +"$((mark + 1))" "$S/agent.log" | tail -n 30
			# Whose time: the API server's authorization of the agent's
			# identity lags behind /readyz on a loaded machine (its Role
			# and RoleBinding informers), and the agent retries a 403
			# fast only for REVIVED_MS after the outage (agent/watch.c).
			echo "# $way, outage $r: $(refused_after "$READY")"
		fi
	done
	echo "# $way: readiness -> update applied: ${delays[*]} s"
	med=$(python3 -c 'import statistics, sys; v = [float(x) for x in sys.argv[1:] if x != "none"]; print(statistics.median(v) if len(v) == len(sys.argv) - 1 else 99)' "${delays[@]}")
	check "$way: median $med s <= 2 s (the issue's goal)" python3 -c "import sys; sys.exit(0 if $med <= 2 else 1)"
	agent_stop
done
[ "$(cat "$ROOT/etc/hello" 2>/dev/null)" = "lb $v" ] || fail "/etc/hello holds the last version ($v)"
check_not "no sanitizer report in the agent's log" grep -l 'Sanitizer\|runtime error' "$S/agent.log"
echo "# load-balancer outage test took $(($(date +%s) - t_begin)) s"
finish
