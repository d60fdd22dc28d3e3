#!/bin/bash
# Serial rollouts (agent/serial.c, agent/rollout.c): with the OSC Secret's
# annotation reconciliation.osc.node-agent.gardener.cloud/serial: "true",
# three agents apply a change that restarts units one after another through
# the Lease kube-system/<Secret name>, as gardener-node-agent does
# (gardener/gardener pkg/nodeagent/controller/operatingsystemconfig/
# serial.go): the executors' apply intervals never overlap, the Lease is
# released at the end; a change that restarts nothing goes everywhere at
# once; a valid Lease of someone else is respected until it expires; a
# holder killed by SIGKILL keeps the pool waiting until its Lease expires
# (renewTime moved 10 minutes back here, instead of waiting them), then the
# others take it over, and the killed agent, restarted, annotates its Node.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require

N=3
APPLY_S=1.5 # each apply of the stand-in executor takes this long
ANN=checksum/cloud-config-data
SERIAL=reconciliation.osc.node-agent.gardener.cloud/serial
NP=shoot--i512345--prod-eu1-workerpool1-z1-7d9f6-x2k9 # the Nodes: $NP1 $NP2 $NP3 (as their machines)
S=$(scratch)
# osc KUBELET MOTD: /etc/kubelet.conf restarts kubelet.service, /etc/motd nothing.
osc() {
	printf 'spec:\n  files:\n  - path: /etc/kubelet.conf\n    permissions: 420\n    content:\n      inline:\n        data: "%s"\n' "$1"
	printf '  - path: /etc/motd\n    permissions: 420\n    content:\n      inline:\n        data: "%s"\n' "$2"
	printf '  units:\n  - name: kubelet.service\n    content: "[Service]\\nExecStart=/bin/true\\n"\n    filePaths:\n    - /etc/kubelet.conf\n'
}
osc k1 m1 >"$S/v1.yaml"
KUBE_OSC=$S/v1.yaml kube_start "$S" --bookmark-interval 60 --node ${NP}1 --node ${NP}2 --node ${NP}3 ||
	{ fail "test API server starts"; finish; exit 1; }
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
# publish FILE: the Secret's new version, in serial mode; prints the time.
publish() {
	kctl POST /secret "$(python3 -c 'import json,sys; print(json.dumps({"namespace": "kube-system", "name": sys.argv[1], "oscFile": sys.argv[2], "annotations": {sys.argv[3]: "true"}}))' "$KUBE_SECRET" "$1" "$SERIAL")" | jget "d['t']"
}
publish "$S/v1.yaml" >/dev/null

# The stand-in executor, one thread per node: each apply takes APPLY_S and
# is logged as "start|end NODE CHECKSUM TIME" in $S/applies.
python3 - "$S" "$N" "$APPLY_S" <<'PY' &
import json, os, sys, threading, time
s, n, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
log = open(s + "/applies", "a", buffering=1)
def run(i):
    d, done = "%s/r%d/var/lib/" % (s, i), None
    while True:
        time.sleep(0.05)
        try:
            des = json.load(open(d + "node-agent/desired.json"))
        except Exception:
            continue
        key = (des["generation"], des.get("restart", {}).get("id"))
        if key == done:
            continue
        log.write("start %d %s %.3f\n" % (i, des["checksum"], time.time()))
        try:  # $S/hold: a longer apply while the test picks a holder to kill
            time.sleep(float(open(s + "/hold").read()))
        except (OSError, ValueError):
            time.sleep(hold)
        r = {"version": 1, "checksum": des["checksum"], "generation": des["generation"], "success": True,
             "changedUnits": [], "finishedAt": int(time.time())}
        open(d + "cloud-config-exec/result.json.tmp", "w").write(json.dumps(r))
        os.rename(d + "cloud-config-exec/result.json.tmp", d + "cloud-config-exec/result.json")
        log.write("end %d %s %.3f\n" % (i, des["checksum"], time.time()))
        done = key
for i in range(1, n + 1):
    threading.Thread(target=run, args=(i,), daemon=True).start()
while True:
    time.sleep(3600)
PY
on_exit "kill $!"

declare -A PIDS
start_agent() {
	"$AGENT" --root "$S/r$1" --config "$S/a$1.json" </dev/null >>"$S/agent$1.log" 2>&1 &
	PIDS[$1]=$!
	on_exit "kill ${PIDS[$1]} 2>/dev/null"
}
for ((i = 1; i <= N; i++)); do
	install -d -m 0755 "$S/r$i/var/lib/cloud-config-exec"
	agent_config "$S/a$i.json" '{"node": {"name": "'$NP$i'"}, "timeouts": {"watchIdleMs": 120000}}'
	start_agent $i
done
# all_applied SUM TIMEOUT: every Node carries SUM; prints the seconds waited.
all_applied() {
	python3 - "$1" "$N" "$2" "$NP" <<-'PY'
	import json, sys, time, urllib.request
	want, n, timeout, np = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
	t0 = time.time()
	while time.time() - t0 < timeout:
	    if all(json.load(urllib.request.urlopen("http://127.0.0.1:6444/node?name=%s%d" % (np, i)))["metadata"]
	           .get("annotations", {}).get("checksum/cloud-config-data") == want for i in range(1, n + 1)):
	        print("%.1f" % (time.time() - t0))
	        sys.exit(0)
	    time.sleep(0.1)
	sys.exit(1)
	PY
}
# overlap SUM: prints how many pairs of applies of SUM overlap in time.
overlap() { # CHECKSUM [NODE-NOT-COUNTED]
	python3 - "$S/applies" "$1" "${2:-}" <<-'PY'
	import sys
	iv = {}
	for line in open(sys.argv[1]):
	    what, node, sum_, t = line.split()
	    if sum_ == sys.argv[2] and node != sys.argv[3]:
	        iv.setdefault(node, [None, None])[0 if what == "start" else 1] = float(t)
	iv = [v for v in iv.values() if None not in v]
	print(sum(1 for a in iv for b in iv if a is not b and a[0] < b[1] and b[0] < a[1]) // 2, len(iv))
	PY
}
lease() { kctl GET "/leases?namespace=kube-system" | jget "[l['spec'] for l in d['items'] if l['metadata']['name'] == '$KUBE_SECRET']"; }
holder() { kctl GET "/leases?namespace=kube-system" | jget "([l['spec'].get('holderIdentity') for l in d['items'] if l['metadata']['name'] == '$KUBE_SECRET'] or [None])[0]"; }
alllogs() { cat "$S"/agent?.log; }

took=$(all_applied "$(sha256 "$S/v1.yaml")" 15)
check "first apply on all three nodes, at once, no Lease for a first apply ($took s)" [ -n "$took" ]
check "  ... and no serial Lease taken" [ -z "$(lease | jget "d[0] if d else None")" ]

# A unit change: one node after the other.
osc k2 m1 >"$S/v2.yaml"
t=$(publish "$S/v2.yaml")
took=$(all_applied "$(sha256 "$S/v2.yaml")" 40)
check "unit change in serial mode: applied on all three ($took s)" [ -n "$took" ]
read -r ov n2 <<<"$(overlap "$(sha256 "$S/v2.yaml")")"
check "  ... one node at a time ($ov overlapping applies of $n2)" [ "$ov:$n2" = 0:3 ]
check "  ... the others waited for their turn" grep -q "waiting for this node's turn (serial rollout Lease)" "$S"/agent?.log
check "  ... and said who held the Lease" grep -qE "serial rollout: Lease kube-system/$KUBE_SECRET is held by \"$NP[1-3]\"" "$S"/agent?.log
check "  ... Lease named like the Secret, owned by it, 600 s, released at the end" python3 -c '
import json, sys
spec, lease = json.loads(sys.argv[1]), json.loads(sys.argv[2])
l = [x for x in lease["items"] if x["metadata"]["name"] == sys.argv[3]][0]
o = l["metadata"]["ownerReferences"][0]
sys.exit(0 if o["kind"] == "Secret" and o["name"] == sys.argv[3] and o["controller"] and
         not any(spec[0].get(k) for k in ("holderIdentity", "leaseDurationSeconds", "renewTime", "acquireTime")) else 1)' \
	"$(lease)" "$(kctl GET "/leases?namespace=kube-system")" "$KUBE_SECRET"
check "  ... taken with holderIdentity = node name and 600 s" grep -q 'took Lease kube-system/'"$KUBE_SECRET"' (holder "'$NP'[1-3]", 600 s)' "$S/agent1.log" "$S/agent2.log" "$S/agent3.log"

# A change that restarts nothing: everywhere at once, no Lease.
t=$(now)
osc k2 m2 >"$S/v3.yaml"
publish "$S/v3.yaml" >/dev/null
took=$(all_applied "$(sha256 "$S/v3.yaml")" 20)
read -r ov n3 <<<"$(overlap "$(sha256 "$S/v3.yaml")")"
check "a change that restarts nothing: all three at once ($took s, $ov overlapping pairs among $n3 applies)" [ "$ov" -ge 1 ]
check "  ... without a single Lease request" [ "$(kube_count "$t" "'leases/$KUBE_SECRET' in e['path']")" -eq 0 ]

# Someone else's valid Lease is respected until it expires (6 s here).
hold_s=6
t=$(now)
kctl POST /lease "$(python3 -c 'import datetime, json, sys
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
print(json.dumps({"namespace": "kube-system", "name": sys.argv[1], "spec": {"holderIdentity": "someone-else",
      "leaseDurationSeconds": int(sys.argv[2]), "acquireTime": now, "renewTime": now}}))' "$KUBE_SECRET" $hold_s)" >/dev/null
osc k3 m2 >"$S/v4.yaml"
# The holder must still hold when the polling below (slow on a loaded
# machine) finds it: its apply takes 6 s instead of APPLY_S until the kill.
echo 6 >"$S/hold"
publish "$S/v4.yaml" >/dev/null
# The first to take it over is killed while it holds it.
victim=
for ((i = 0; i < 200; i++)); do
	h=$(holder)
	if [ -n "$h" ] && [ "$h" != someone-else ]; then victim=${h#$NP}; break; fi
	sleep 0.1
done
tk=$(now)
[ -n "$victim" ] && { kill -KILL "${PIDS[$victim]}"; wait "${PIDS[$victim]}"; } 2>/dev/null
rm -f "$S/hold"
check "a foreign Lease: respected until it expired ($(python3 -c "print('%.1f' % ($tk - $t))") s >= $hold_s s)" \
	python3 -c "import sys; sys.exit(0 if '$victim' and $tk - $t >= $hold_s - 0.2 else 1)"
check "  ... logged with its holder" grep -q 'is held by "someone-else"' "$S/agent1.log"
check "  ... then taken over (\"not renewed in time\")" grep -q "of \"someone-else\" was not renewed in time" "$S"/agent?.log
# The killed holder's Lease stays valid: nobody else applies meanwhile.
sleep 3
others_done() {
	local i n=0
	for ((i = 1; i <= N; i++)); do
		[ "$i" = "$victim" ] && continue
		[ "$(kube_annotation $ANN $NP$i)" = "$(sha256 "$S/v4.yaml")" ] && n=$((n + 1))
	done
	echo $n
}
check "a holder killed by SIGKILL: the pool waits while its Lease is valid" [ "$(others_done)" = 0 ]
check "  ... the Lease is still $NP$victim's" [ "$(holder)" = "$NP$victim" ]
# Ten minutes later, as the others see it.

kctl POST /lease "$(python3 -c 'import datetime, json, sys
t = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=601)
print(json.dumps({"namespace": "kube-system", "name": sys.argv[1], "spec": {"renewTime": t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}}))' "$KUBE_SECRET")" >/dev/null
wait_others() { local i; for ((i = 0; i < 300; i++)); do [ "$(others_done)" = $((N - 1)) ] && return 0; sleep 0.1; done; return 1; }
check "  ... once it expired, the others took it over and applied" wait_others
check "  ... logged as a takeover of $NP$victim's Lease" grep -q "of \"$NP$victim\" was not renewed in time" "$S"/agent?.log
# The killed holder's own apply is not counted: the stand-in executor goes
# on with it for its 6 s after the agent died (as a real executor run would),
# and the test expires the Lease after 3 s instead of 600.
read -r ov n4 <<<"$(overlap "$(sha256 "$S/v4.yaml")" "$victim")"
check "  ... one at a time among the others ($ov overlapping applies of $n4)" [ "$ov" = 0 ]
check "  ... the dead node is not annotated" [ "$(kube_annotation $ANN "$NP$victim")" != "$(sha256 "$S/v4.yaml")" ]
start_agent "$victim"
took=$(all_applied "$(sha256 "$S/v4.yaml")" 20)
check "the killed agent, restarted: its Node gets the checksum too ($took s)" [ -n "$took" ]
release_done() { local i; for ((i = 0; i < 100; i++)); do [ -z "$(holder)" ] && return 0; sleep 0.1; done; return 1; }
check "  ... and the Lease ends up free" release_done

if [ "$_fail" -ne 0 ]; then
	for ((i = 1; i <= N; i++)); do echo "--- agent$i.log"; tail -n 25 "$S/agent$i.log"; done
	echo "--- applies"; cat "$S/applies"
	echo "--- lease"; lease
fi
finish
