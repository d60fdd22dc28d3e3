#!/bin/bash
# node-agent and TLS: the server restarts with a certificate from another CA,
# then with one for the wrong host name: the agent refuses both (the server
# logs failed handshakes, nothing is fetched), keeps the last good state, and
# recovers when the right certificate is back. Client-certificate auth: after
# SIGHUP with a config that has only the node's certificate, the agent is
# system:node:<node>; the Node authorizer refuses it the Secret (403) until
# a "relationship" exists, then it works with that identity. An http:// server
# is refused by --check-config.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require

ANN=checksum/cloud-config-data
RECOVER=${RECOVER_SECONDS:-75}
hello_e2e tls '{}'

# publish: a new version of the Secret; its time in $T_PUB (no subshell: v counts)
publish() {
	v=$((v + 1))
	hello_osc $v >"$W/v$v.yaml"
	T_PUB=$(kube_secret "$W/v$v.yaml" | jget "d['t']")
}
applied() { # NAME SINCE
	if kube_wait_annotation $ANN "$(sha256 "$W/v$v.yaml")" "$2" "$RECOVER" >/dev/null; then
		ok "$1"
	else
		fail "$1"
		dump_logs
	fi
	good=$(hello_state)
}

for mode in other-ca wrong-host; do
	# Count from the moment the server is back with the bad certificate
	# (the reply's time), not from before the restart: a watch the agent
	# opens in between is a request made to the good server.
	t0=$(kctl POST /restart '{"tls":"'$mode'"}' | jget "d['t']")
	publish
	# other-ca: the client aborts the handshake (server logs "TLS");
	# wrong-host: the handshake completes, the client checks the name and
	# hangs up before sending a request (server logs "CLOSED").
	wait_hit "$t0" "e['method'] in ('TLS', 'CLOSED')"
	sleep 5
	n_tls=$(kube_count "$t0" "e['method'] in ('TLS', 'CLOSED')")
	n_http=$(kube_count "$t0" "e['method'] not in ('TLS', 'CLOSED', '-')")
	check "$mode: the agent tried and refused the server ($n_tls connections without a request)" [ "$n_tls" -ge 1 ]
	check "$mode: and it backed off ($n_tls handshakes, <= 30)" [ "$n_tls" -le 30 ]
	if [ "$n_http" -eq 0 ]; then ok "$mode: not one HTTP request got through"; else
		fail "$mode: not one HTTP request got through"; kube_requests "$t0"; fi
	if [ "$(hello_state)" = "$good" ]; then ok "$mode: last good state in force"; else fail "$mode: last good state in force"; fi
	t0=$(now)
	kctl POST /restart '{"tls":"good"}' >/dev/null
	applied "$mode: recovers with the right certificate, applies the version published meanwhile" "$t0"
done

# Client certificate only (no token), via SIGHUP.
agent_config "$AGENT_CONF" '{"apiServer": {"tokenFile": null, "clientCertificateFile": "'"$KUBE_PKI"'/client.crt", "clientKeyFile": "'"$KUBE_PKI"'/client.key"}}'
t0=$(now)
kill -HUP "$AGENT_PID"
kctl POST /reset-watches >/dev/null
sleep 3
check "SIGHUP: the agent is still running" kill -0 "$AGENT_PID"
check "client certificate: requests come from system:node:$KUBE_NODE" \
	[ "$(kube_count "$t0" "e['user'] == 'system:node:$KUBE_NODE'")" -ge 1 ]
check "client certificate: the Node authorizer refuses the Secret (403)" \
	[ "$(kube_count "$t0" "e['user'] == 'system:node:$KUBE_NODE' and '/secrets' in e['path'] and e['status'] == 403")" -ge 1 ]
if [ "$(hello_state)" = "$good" ]; then ok "403 for the node identity: last good state in force"; else fail "403 for the node identity: last good state in force"; fi
kctl POST /policy '{"allowSecret":"system:node:'"$KUBE_NODE"'"}' >/dev/null
publish
t0=$T_PUB
applied "client certificate with a relationship to the Secret: applied and annotated" "$t0"
check "  ... the Node patched by system:node:$KUBE_NODE" \
	[ "$(kube_count "$t0" "e['method'] == 'PATCH' and e['status'] == 200 and e['user'] == 'system:node:$KUBE_NODE'")" -ge 1 ]

# https only
agent_config "$W/http.json" '{"apiServer": {"server": "http://127.0.0.1:6443"}}'
check_not "--check-config refuses an http:// server" "$AGENT" --check-config --config "$W/http.json"
check "--check-config accepts the test config" "$AGENT" --check-config --config "$AGENT_CONF"

[ "$_fail" -eq 0 ] || dump_logs
finish
