#!/bin/bash
# The hostname changes under the running agent (agent/hostname.c; Gardener's
# pkg/nodeagent/controller/hostnamecheck/): in a private UTS namespace (the
# host's name is never touched) and network namespace, the agent starts as
# "ip-10-0-1-2" while the kubelet's Node is "ip-10-0-1-2.ec2.internal" (what
# AWS's `hostnamectl set-hostname $(hostname -f)` does), so it finds no Node
# and annotates nothing. Then:
#  1. `hostname IP-10-0-1-2.EC2.internal`: the agent follows the new
#     (lowercased) name at once (poll() on /proc/sys/kernel/hostname),
#     without restarting, and annotates that Node;
#  2. another name whose Node has another name but the kubernetes.io/hostname
#     label: found by the label and annotated;
#  3. as under the unit (ProcSubset=pid hides /proc/sys): /proc/sys masked,
#     the change is seen by the 30 s check.
source "$TESTS_DIR/lib/common.sh"
if [ -z "${NA_IN_NETNS:-}" ]; then
	command -v unshare >/dev/null || skip_all "unshare(1) missing"
	require_root
	rm -f "$_scratch_list"
	trap - EXIT
	NA_IN_NETNS=1 exec unshare -n --uts -- bash "$0" "$@"
fi
hostname ip-10-0-1-2 || skip_all "cannot set the hostname in a private UTS namespace"
export KUBE_NODE=ip-10-0-1-2.ec2.internal
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require

W=$(scratch)
printf 'spec:\n  files:\n  - path: /etc/hello\n    permissions: 420\n    content:\n      inline:\n        data: "hello"\n' >"$W/v1.yaml"
S=$(scratch)
ROOT=$S/root
install -d -m 0755 "$ROOT" "$ROOT/etc" "$ROOT/home" "$ROOT/var" "$ROOT/var/lib" "$ROOT/opt"
KUBE_OSC=$W/v1.yaml kube_start "$S" || { fail "test API server starts"; finish; exit 1; }
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
AGENT_CONF=$S/agent.json
# node.name left out: the hostname, as on a Gardener node.
agent_config "$AGENT_CONF" '{"node": {"name": null}}'
SUM=$(sha256 "$W/v1.yaml")
exec_loop_start
agent_start --log-level debug

# The OSC is applied, but there is no Node by the name or the label.
applied() { [ "$(result_field "d['success'] and d['checksum']")" = "$SUM" ]; }
check "OSC applied while no Node has the hostname" wait_for 20 applied
wait_log "following the hostname through poll() on /proc/sys/kernel/hostname" 0 5 ||
	fail "the agent watches /proc/sys/kernel/hostname"
wait_hit 0 'e["path"].startswith("/api/v1/nodes") and "labelSelector=kubernetes.io%2Fhostname%3Dip-10-0-1-2" in e["path"]' 15
check "no Node found: not annotated" test -z "$(kube_annotation checksum/cloud-config-data)"

# 1. the name the kubelet registered under.
mark=$(log_mark)
t0=$(now)
hostname IP-10-0-1-2.EC2.internal
t=$(kube_wait_annotation checksum/cloud-config-data "$SUM" "$t0" 10)
check "hostname changed: the Node of the new name annotated" test -n "$t"
[ -n "$t" ] && echo "# annotated $(python3 -c "print('%.0f' % ((float('$t') - float('$t0')) * 1000))") ms after the change"
check "... logged once" wait_log "hostname changed from ip-10-0-1-2 to ip-10-0-1-2.ec2.internal: following Node ip-10-0-1-2.ec2.internal" "$mark" 5
check "... the agent did not restart" kill -0 "$AGENT_PID"
check "... no exit logged" test "$(grep -c 'starting:' "$S/agent.log")" = 1

# 2. a Node named otherwise, found by its kubernetes.io/hostname label.
kctl POST /node '{"name": "machine-abc", "labels": {"kubernetes.io/hostname": "renamed-host"}}' >/dev/null
mark=$(log_mark)
t0=$(now)
hostname renamed-host
r=$(kctl GET "/wait-annotation?node=machine-abc&key=checksum%2Fcloud-config-data&value=$SUM&since=$t0&timeout=15")
check "renamed: the Node with label kubernetes.io/hostname=renamed-host annotated" test "$(jget "d['ok']" <<<"$r")" = true
check "... found by the label" wait_log "Node renamed-host does not exist; Node machine-abc has label kubernetes.io/hostname=renamed-host: following it" "$mark" 5

# 3. as under the unit: no /proc/sys, the 30 s check.
agent_stop
mark=$(log_mark)
hostname ip-10-0-1-2
unshare -m -- sh -c 'mount -t tmpfs -o ro none /proc/sys && exec "$@"' sh \
	"$AGENT" --root "$ROOT" --config "$AGENT_CONF" --log-level debug </dev/null >>"$S/agent.log" 2>&1 &
AGENT_PID=$!
on_exit "kill $AGENT_PID 2>/dev/null; wait $AGENT_PID 2>/dev/null"
check "without /proc/sys: the timer" wait_log "checking the hostname every 30 s" "$mark" 10
wait_log "Node ip-10-0-1-2 does not exist" "$mark" 10 ||
	wait_hit "$(now)" '"labelSelector=kubernetes.io%2Fhostname%3Dip-10-0-1-2" in e["path"]' 10
kctl POST /node "{\"name\": \"$KUBE_NODE\", \"annotations\": {\"checksum/cloud-config-data\": null}}" >/dev/null
t0=$(now)
hostname ip-10-0-1-2.ec2.internal
t=$(kube_wait_annotation checksum/cloud-config-data "$SUM" "$t0" 40)
check "without /proc/sys: the change is seen within 30 s and the Node annotated" test -n "$t"
[ -n "$t" ] && echo "# annotated $(python3 -c "print('%.1f' % (float('$t') - float('$t0')))") s after the change (timer)"
agent_stop
check "SIGTERM: exit 0" test "$AGENT_RC" = 0

[ "$_fail" -eq 0 ] || dump_logs
finish
