#!/bin/bash
# The lost InternalIP (agent/internalip.c; Gardener's
# pkg/nodeagent/controller/healthcheck/kubelet.go ensureNodeInternalIP):
# the Node's status loses all its addresses; the agent sets the last
# InternalIP it saw again through nodes/<name>/status when an interface of
# this (network namespace's) host holds it, with gardener-node-agent's
# Events; it does not while no interface holds it, and does as soon as one
# does (IPv4 through SIOCGIFCONF); IPv6 through /proc/self/net/if_inet6.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require

W=$(scratch)
printf 'spec:\n  files:\n  - path: /etc/hello\n    permissions: 420\n    content:\n      inline:\n        data: "hello"\n' >"$W/v1.yaml"
if ! agent_e2e_setup "$W/v1.yaml" '{"events": {"enabled": true},
	"health": {"enabled": true, "kubeletUrl": "", "containerdUrl": "", "intervalMs": 1000}}'; then
	fail "agent applies the first OSC"
	dump_logs
	finish
	exit 1
fi
ok "agent applies the first OSC"

addresses() { kctl GET "/node?name=$KUBE_NODE" | jget "d['status'].get('addresses')"; }
set_addresses() { kctl POST /node "{\"name\": \"$KUBE_NODE\", \"status\": {\"addresses\": $1}}" >/dev/null; }
events() { kctl GET "/events?namespace=default" | jget "[(e['type'], e['reason'], e['message']) for e in d['items']]"; }
ev_has() { events | grep -qF -- "$1"; }
is_addr() { [ "$(addresses)" = "[{\"type\": \"InternalIP\", \"address\": \"$1\"}]" ]; }

# 1. the kubelet's InternalIP (127.0.0.1, on lo) is lost.
check "Node has the stand-in kubelet's InternalIP" test "$(kctl GET "/node?name=$KUBE_NODE" | jget "d['status']['addresses'][0]['address']")" = 127.0.0.1
sleep 0.5 # the watch delivered the Node (the agent remembers 127.0.0.1)
set_addresses '[{"type": "Hostname", "address": "'"$KUBE_NODE"'"}]'
check "addresses lost: InternalIP 127.0.0.1 set again" wait_for 10 is_addr 127.0.0.1
check "... Warning Event as gardener-node-agent's" wait_for 5 ev_has '["Warning", "kubelet", "Node status does neither have an internal nor an external IP, try to recover from last known internal IP: 127.0.0.1"]'
check "... Normal Event as gardener-node-agent's" wait_for 5 ev_has '["Normal", "kubelet", "Updated the lost internal IP address of node status to the previous known: 127.0.0.1 "]'
check "... through PATCH nodes/$KUBE_NODE/status" test "$(kube_count 0 "e['method'] == 'PATCH' and e['path'] == '/api/v1/nodes/$KUBE_NODE/status' and e['status'] == 200")" -ge 1

# 2. an address no interface holds: not set; then the interface has it.
set_addresses '[{"type": "InternalIP", "address": "192.0.2.9"}]'
sleep 0.5
mark=$(log_mark)
t0=$(now)
set_addresses '[]'
check "not held: logged" wait_log "no interface holds 192.0.2.9" "$mark" 10
sleep 2.5 # two more checks
check "not held: not set" test "$(addresses)" = "[]"
check "... no patch" test "$(kube_count "$t0" "e['method'] == 'PATCH' and e['path'].endswith('/status') and e['status'] == 200")" = 0
ip addr add 192.0.2.9/32 dev lo
check "the interface holds it now: set at the next check" wait_for 5 is_addr 192.0.2.9

# 3. IPv6 (if_inet6).
if ip -6 addr add 2001:db8::9/128 dev lo nodad 2>/dev/null; then
	set_addresses '[{"type": "InternalIP", "address": "2001:db8::9"}]'
	sleep 0.5
	set_addresses '[]'
	check "IPv6: InternalIP 2001:db8::9 set again" wait_for 10 is_addr 2001:db8::9
else
	echo "# skipped IPv6: no IPv6 in this network namespace"
fi

# 4. an ExternalIP alone is an address: nothing is done.
t0=$(now)
set_addresses '[{"type": "ExternalIP", "address": "198.51.100.1"}]'
sleep 2.5
check "ExternalIP only: left alone" test "$(kube_count "$t0" "e['method'] == 'PATCH' and e['path'].endswith('/status')")" = 0

agent_stop
check "SIGTERM: exit 0" test "$AGENT_RC" = 0
[ "$_fail" -eq 0 ] || dump_logs
finish
