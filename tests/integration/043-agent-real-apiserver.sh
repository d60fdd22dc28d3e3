#!/bin/bash
# node-agent + cloud-config-exec (--no-systemd, scratch root) against the
# REAL kube-apiserver v1.20.2 and etcd 3.4 (tests/lib/realkube.sh), one
# server for every phase, in a private network namespace. The agent's only
# credential is a service-account token (TokenRequest) bound to exactly the
# RBAC it needs: secrets get+watch, nodes get+watch+patch and nodes/status
# patch, by name.
# Phases: first apply and annotation; a Secret update; a checksum mismatch
# refused; a restart request consumed; token rotation (the old token made
# invalid); the idle request rate (the real server's bookmarks come about
# once a minute: watchIdleMs 75 s); etcd compaction + an API server restart
# with an update made during the outage (applied within 2 s of readiness,
# measured); a fresh start that makes no request answered 410; the Role
# without `watch`: one clear log line naming it.
# Skips (saying why) without a kube-apiserver binary (tests/tools/kube-apiserver)
# or etcd. IDLE_SECONDS (default 75) sets the idle window.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
source "$TESTS_DIR/lib/realkube.sh"
kube_netns "$@"
agent_require
rk_require

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
SUBJ='{"kind":"ServiceAccount","name":"'$SA'","namespace":"kube-system"}'
SECRET_RULES='[{"apiGroups":[""],"resources":["secrets"],"verbs":["get","watch"],"resourceNames":["'$KUBE_SECRET'"]}]'
NODE_RULES='[{"apiGroups":[""],"resources":["nodes"],"verbs":["get","list","watch","patch"],"resourceNames":["'$KUBE_NODE'"]},{"apiGroups":[""],"resources":["nodes/status"],"verbs":["patch"],"resourceNames":["'$KUBE_NODE'"]}]'

hello() { printf 'spec:\n  files:\n  - path: /etc/hello\n    permissions: 420\n    content:\n      inline:\n        data: "real %s"\n' "$1" >"$S/v$1.yaml"; }
new_token() { # writes a fresh TokenRequest token into $KUBE_DIR/token (atomically)
	local t
	t=$(rk_sa_token kube-system $SA 3600) && [ -n "$t" ] || return 1
	printf '%s' "$t" >"$KUBE_DIR/token.new"
	chmod 0600 "$KUBE_DIR/token.new"
	mv "$KUBE_DIR/token.new" "$KUBE_DIR/token"
}
setup_ok=true
rk_node "$KUBE_NODE" || setup_ok=false
rk_sa kube-system $SA || setup_ok=false
rk_role kube-system node-agent "$SECRET_RULES" || setup_ok=false
rk_bind kube-system Role node-agent "$SUBJ" || setup_ok=false
rk_clusterrole node-agent "$NODE_RULES" || setup_ok=false
rk_bind "" ClusterRole node-agent "$SUBJ" || setup_ok=false
new_token || setup_ok=false
v=1
hello $v
rk_secret kube-system "$KUBE_SECRET" "$S/v$v.yaml" || setup_ok=false
check "identities (SA token by TokenRequest, narrow Role and ClusterRole), Node and Secret created" $setup_ok
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
AGENT_CONF=$S/agent.json
# watchIdleMs above the real server's bookmark interval (about 60 s).
agent_config "$AGENT_CONF" '{"timeouts": {"watchIdleMs": 75000}}'
exec_loop_start

# applied VERSION [SECONDS]: the Node shows version VERSION's checksum and
# /etc/hello has it.
applied() {
	rk_wait_annotation $ANN "$(sha256 "$S/v$1.yaml")" "${2:-20}" >/dev/null &&
		[ "$(cat "$ROOT/etc/hello" 2>/dev/null)" = "real $1" ]
}
not_logged() { ! grep -qF -- "$1" "$S/agent.log"; }
not_logged_since() { ! tail -n +"$(($2 + 1))" "$S/agent.log" | grep -qF -- "$1"; }
update() { v=$((v + 1)); hello $v; rk_secret kube-system "$KUBE_SECRET" "$S/v$v.yaml"; }

# --- 1. first apply, annotation
agent_start
if ! applied 1; then
	fail "first apply: file written, Node annotated"
	dump_logs
	finish
	exit 1
fi
ok "first apply: file written, Node annotated (checksum $(sha256 "$S/v1.yaml" | cut -c1-12)...)"

# --- 2. update
update
check "Secret update: applied and annotated" applied $v

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

# --- 5. token rotation: the ServiceAccount is re-created (new uid), which
# makes every earlier token invalid; the new one goes into the token file.
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
idle=$(python3 -c 'import json, sys, datetime
t0, t1 = float(sys.argv[2]), float(sys.argv[3])
ids = set()
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("user", {}).get("username") != sys.argv[4]:
        continue
    t = datetime.datetime.strptime(e["requestReceivedTimestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    if t0 <= t < t1:
        ids.add(e["auditID"])
print(len(ids))' "$RK_AUDIT" "$t0" "$t1" "$SAUSER")
rate=$(python3 -c "print(round($idle * 60 / ($t1 - $t0), 2))")
echo "# idle: $idle requests in ${IDLE} s = $rate requests/min"
check "idle: $rate requests/min over ${IDLE} s (<= 1: only watches that end at their timeout)" \
	python3 -c "import sys; sys.exit(0 if $rate <= 1 else 1)"
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
rk_start_apiserver
ready=$RK_READY_AT
if t_applied=$(rk_wait_annotation $ANN "$(sha256 "$S/v$v.yaml")" 30); then
	d=$(python3 -c "print(round($t_applied - $ready, 2))")
	echo "# outage: update applied $d s after the API server was ready again"
	if python3 -c "import sys; sys.exit(0 if $d <= 2 else 1)"; then
		ok "outage: the update made during it applied within 2 s of readiness ($d s)"
	else
		fail "outage: the update made during it applied within 2 s of readiness ($d s)"
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

# --- 9. the Role without `watch` on the Secret: one clear line
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
