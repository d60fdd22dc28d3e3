#!/bin/bash
# node-agent's Lease (agent/lease.c) judged the way gardenlet judges it: the
# check below is a port of CheckNodeAgentLeases (gardener/gardener
# pkg/gardenlet/controller/shoot/care/health.go). It fails before the agent
# runs (no Lease), passes while it runs, and fails within 40 s of a SIGKILL.
# On the way: the Lease's content (holderIdentity, leaseDurationSeconds 40,
# the Node as controller owner with its uid), create by POST, renewal by an
# update (PUT of the Lease read, its resourceVersion the precondition; the
# stand-in refuses a PATCH as Gardener's node-agent authorizer does), no PATCH, 500s retried and logged
# once per state change, a Lease written by someone else (409, re-read,
# taken over as gardener-node-agent does, logged once), and the write rate:
# at most 3 a minute in the steady state.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
[ -x "$AGENT" ] || skip_all "node-agent is not built"

S=$(scratch)
ROOT=$S/root
mkdir -p "$ROOT/var/lib/cloud-config-exec"
printf 'spec:\n  files:\n  - path: /etc/hello\n    content:\n      inline:\n        data: "v1"\n' >"$S/v1.yaml"
KUBE_OSC=$S/v1.yaml kube_start "$S" || { fail "test API server starts"; finish; exit 1; }
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
AGENT_CONF=$S/agent.json
agent_config "$AGENT_CONF" '{"lease": {"enabled": true}}'
LEASE=gardener-node-agent-$KUBE_NODE

# gardenlet_check: exit 0 when every node passes, else 1 with gardenlet's
# message.
gardenlet_check() {
	kctl GET "/leases?namespace=kube-system" | python3 -c '
import datetime, json, sys
leases, nodes = json.load(sys.stdin)["items"], sys.argv[1:]
def micro_time(s):  # metav1.MicroTime (RFC 3339, microseconds) or metav1.Time
    for f in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.datetime.strptime(s, f).replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            pass
    raise ValueError(s)
prefix = "gardener-node-agent-"                       # gardenerutils.NodeLeasePrefix
by_node = {}
for lease in leases:
    if lease["metadata"]["name"].startswith(prefix):
        by_node[lease["metadata"]["name"].replace(prefix, "")] = lease   # strings.ReplaceAll
now = datetime.datetime.now(datetime.timezone.utc)
for node in nodes:
    lease = by_node.get(node)
    if lease is None:
        print("gardener-node-agent is not running on node \"%s\"" % node); sys.exit(1)
    spec = lease["spec"]
    if micro_time(spec["renewTime"]) + datetime.timedelta(seconds=spec["leaseDurationSeconds"]) < now:
        print("gardener-node-agent stopped running on node \"%s\"" % node); sys.exit(1)
print("ok")' "$KUBE_NODE"
}
gardenlet_ok() { gardenlet_check >/dev/null; }
lease_json() { kctl GET "/leases?namespace=kube-system" | jget "[l for l in d['items'] if l['metadata']['name'] == '$LEASE'][0]"; }
# wait_for SECONDS CMD...: polls CMD every 0.5 s.
wait_for() {
	local i n=$(($1 * 2))
	shift
	for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
	return 1
}

msg=$(gardenlet_check)
check "gardenlet check fails before the agent runs ($msg)" [ "$msg" = "gardener-node-agent is not running on node \"$KUBE_NODE\"" ]

T0=$(now)
agent_start
check "gardenlet check passes once the agent runs" wait_for 15 gardenlet_check
L=$(lease_json)
uid=$(kctl GET "/node?name=$KUBE_NODE" | jget "d['metadata']['uid']")
check "Lease: holderIdentity is the Lease's name (as gardener-node-agent sets it)" \
	[ "$(jget "d['spec']['holderIdentity']" <<<"$L")" = "$LEASE" ]
check "Lease: leaseDurationSeconds 40" [ "$(jget "d['spec']['leaseDurationSeconds']" <<<"$L")" = 40 ]
check "Lease: controller owner reference to the Node with its uid" \
	[ "$(jget "[(r['kind'], r['name'], r['uid'], r['controller']) for r in d['metadata']['ownerReferences']]" <<<"$L")" = \
	  "[[\"Node\", \"$KUBE_NODE\", \"$uid\", true]]" ]
check "Lease: renewTime is a MicroTime" \
	grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$' <<<"$(jget "d['spec']['renewTime']" <<<"$L")"
check "created: GET 404, then POST 201" \
	[ "$(kube_requests "$T0" "'/leases' in e['path']" | awk '{print $2, $3}' | head -2 | tr '\n' ' ')" = "GET 404 POST 201 " ]

# The next renewal meets two 500s and, behind them, a Lease someone else wrote.
mark=$(log_mark)
kctl POST /fault '{"type": "500", "count": 2, "match": "PUT /apis/coordination.k8s.io"}' >/dev/null
kctl POST /lease '{"name": "'"$LEASE"'", "spec": {"holderIdentity": "someone-else"}}' >/dev/null
check "someone else's Lease: logged with its holder" wait_log "is held by \"someone-else\"" "$mark" 30
check "  ... and taken over" wait_for 10 [ "$(lease_json | jget "d['spec']['holderIdentity']")" = "$LEASE" ]
check "500s: the failure logged" wait_log "renewal of Lease kube-system/$LEASE failed: HTTP 500" "$mark" 5
check "  ... the recovery logged, with the count" wait_log "renewed again after 2 failed attempt(s)" "$mark" 10
check "  ... the failure logged once, not per retry" \
	[ "$(tail -n +"$((mark + 1))" "$S/agent.log" | grep -c "renewal of Lease.*failed")" -eq 1 ]
check "someone else's write: a 409, then a GET" \
	[ "$(kube_count "$T0" "'/leases/' in e['path'] and e['method'] == 'PUT' and e['status'] == 409")" -ge 1 ]
check "gardenlet check passed throughout" gardenlet_ok

# One more renewal: the steady state is one PUT per 20 s, no read.
t1=$(now)
wait_for 25 [ "$(kube_count "$t1" "'/leases/' in e['path'] and e['method'] == 'PUT' and e['status'] == 200")" -ge 1 ]
t2=$(now)
writes=$(kube_count "$T0" "'/leases' in e['path'] and e['method'] in ('PUT', 'PATCH', 'POST')")
reads=$(kube_count "$T0" "'/leases' in e['path'] and e['method'] == 'GET'")
secs=$(python3 -c "print(int($t2 - $T0))")
echo "# $writes Lease writes (2 answered 500, 1 409) and $reads reads in $secs s"
# Writes a minute in the steady state: 3; the 500 retries and the 409 add 3.
check "at most 3 writes a minute in the steady state ($writes in $secs s)" \
	[ "$writes" -le $((secs * 3 / 60 + 1 + 3)) ]
check "reads only at the start and after the 409 ($reads)" [ "$reads" -le 2 ]
check "never a PATCH of a Lease (the authorizer allows none)" \
	[ "$(kube_count "$T0" "'/leases' in e['path'] and e['method'] == 'PATCH'")" -eq 0 ]

# SIGKILL: gardenlet's verdict flips within 40 s of the death.
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
tk=$(now)
AGENT_PID=
check "right after the kill the Lease still counts" gardenlet_ok
for ((i = 0; i < 100; i++)); do
	msg=$(gardenlet_check) || break
	sleep 0.5
done
td=$(python3 -c "print('%.1f' % ($(now) - $tk))")
check "gardenlet check fails within 40 s of SIGKILL (${td} s: $msg)" \
	[ "$msg" = "gardener-node-agent stopped running on node \"$KUBE_NODE\"" -a "${td%.*}" -le 40 ]

[ "$_fail" -eq 0 ] || dump_logs
finish
