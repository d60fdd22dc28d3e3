# Helpers for tests against the REAL kube-apiserver v1.20.2 (binary from
# tests/tools/kube-apiserver) with etcd 3.4 (Debian's etcd-server), both on
# 127.0.0.1 inside the test's private network namespace (call kube_netns
# from kube.sh first). Source after common.sh and kube.sh.
#
#   rk_require                  skip unless a binary and etcd are there (says why)
#   rk_start DIR                own CA (mkcerts.sh), etcd, kube-apiserver with
#                               Node,RBAC, NodeRestriction, bootstrap token
#                               auth, TokenRequest, a Metadata audit log; waits
#                               until ready (RBAC bootstrap roles included).
#                               Sets KUBE_API KUBE_DIR KUBE_PKI RK_AUDIT.
#                               With RK_WEBHOOK=1 (set before): also Gardener's
#                               node-agent authorizer (tests/lib/nodeagent-authz.py,
#                               HTTPS on 127.0.0.1:$RK_WEBHOOK_PORT) and
#                               --authorization-mode=Node,Webhook,RBAC, as a
#                               shoot's kube-apiserver asks gardener-resource-
#                               manager before RBAC; RK_WEBHOOK_MACHINES="M=N ..."
#                               stands for the Machines' node labels (default:
#                               Node named like the machine). Sets RK_AUTHZ_LOG
#                               (one JSON line per decision). RK_WEBHOOK_TTL
#                               (default 1ms): the API server's cache of allowed
#                               decisions (a real server's default is 5m).
#                               RK_TOKENS=FILE: more lines for --token-auth-file
#                               (token,user,uid,"group,...").
#   rk_authz_denied USER        the webhook's "deny" lines for that user (none: exit 1)
#   rk_stop_apiserver / rk_start_apiserver    (restart, e.g. after compaction)
#   rk_kill_apiserver           SIGKILL: an outage from that instant, no drain
#   rk_compact                  compacts etcd at its current revision
#   rk METHOD PATH [JSON]       curl as the static admin (system:masters);
#                               prints the body, sets RK_CODE to the status
#   rk_apply PATH JSON          POST to the collection PATH, PUT to PATH/name on 409
#   rk_sa NS NAME               creates a ServiceAccount
#   rk_sa_token NS NAME [SECS]  prints a token for it (TokenRequest)
#   rk_node NAME                creates a Node (pool worker-a, its OSC Secret $KUBE_SECRET)
#   rk_secret NS NAME FILE [auto|wrong|none] [ANNOTATIONS-JSON]   the OSC Secret
#                               (osc.yaml and the checksum/data-script annotation,
#                               plus those given), created or replaced in one write
#   rk_role NS NAME RULES-JSON  / rk_clusterrole NAME RULES-JSON
#   rk_bind NS|"" ROLE-KIND ROLE SUBJECT-JSON   RoleBinding or ClusterRoleBinding
#   rk_bootstrap_token ID SECRET [GROUPS]       the bootstrap token Secret
#   rk_annotation KEY [NODE]    the Node's annotation KEY
#   rk_audit USER               "time code verb uri" of that user's finished requests
#   rk_audit_forbidden USER...  every finished request of these users (exact
#                               names): prints "requests N: verb n, ...", then
#                               "starting N" (403s received while an API server
#                               of this test was starting: launched, RBAC not
#                               loaded yet; rk_start_apiserver records the
#                               windows in $KUBE_DIR/starts; each follows
#                               as "  time 403 verb uri user"), then one
#                               "time 403 verb uri user" line per other 403
#   rk_man_roles MAP SUBJECTS   the Roles and ClusterRoles printed in node-agent(8)
#                               (section Permissions) as printed, placeholders
#                               replaced from MAP (JSON: {"<osc.secretName>": "x",
#                               "<token-sync Secrets>": ["a", "b"], ...}; one
#                               missing fails, naming it), each bound to SUBJECTS
#                               (a JSON list) by a (Cluster)RoleBinding of its name
#   rk_wait_csr PREFIX SECONDS  prints the name of the one CSR named PREFIX*
#   rk_csr_approve NAME         approves it as Gardener's approver would (RK_CODE)
#   rk_csr_sign NAME CRT        signs its request with the cluster CA (openssl, 30
#                               days, client auth) into CRT and issues it (RK_CODE)
#
# Everything started is stopped by pid on exit.

RK_ETCD_PORT=2379
RK_API_PORT=6443
RK_ADMIN_TOKEN=rk-admin-token-0123456789
RK_WEBHOOK_PORT=${RK_WEBHOOK_PORT:-6446}

rk_require() {
	command -v etcd >/dev/null || skip_all "etcd missing (apt-get install etcd-server; scripts/install-deps)"
	command -v curl >/dev/null || skip_all "curl missing"
	local why
	if ! RK_BIN=$("$TESTS_DIR/tools/kube-apiserver" --no-build 2>"${TMPDIR:-/tmp}/rk-why.$$"); then
		why=$(cat "${TMPDIR:-/tmp}/rk-why.$$")
		rm -f "${TMPDIR:-/tmp}/rk-why.$$"
		skip_all "no kube-apiserver: $why"
	fi
	rm -f "${TMPDIR:-/tmp}/rk-why.$$"
}

rk_start() {
	local dir=$1
	KUBE_DIR=$dir
	KUBE_PKI=$dir/pki
	KUBE_API=https://127.0.0.1:$RK_API_PORT
	RK_AUDIT=$dir/audit.log
	"$TESTS_DIR/lib/mkcerts.sh" "$KUBE_PKI" "$KUBE_NODE" || { echo "mkcerts failed" >&2; return 1; }
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$KUBE_PKI/sa.key" 2>/dev/null
	openssl pkey -in "$KUBE_PKI/sa.key" -pubout -out "$KUBE_PKI/sa.pub" 2>/dev/null
	printf '%s,admin,admin-uid,system:masters\n' "$RK_ADMIN_TOKEN" >"$dir/tokens.csv"
	[ -z "${RK_TOKENS:-}" ] || cat "$RK_TOKENS" >>"$dir/tokens.csv"
	cat >"$dir/audit-policy.yaml" <<-EOF
	apiVersion: audit.k8s.io/v1
	kind: Policy
	rules:
	- level: Metadata
	EOF
	mkdir -p "$dir/etcd" "$dir/certs"
	etcd --name rk --data-dir "$dir/etcd" \
		--listen-client-urls "http://127.0.0.1:$RK_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$RK_ETCD_PORT" \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster rk=http://127.0.0.1:2380 --log-level warn >"$dir/etcd.log" 2>&1 &
	RK_ETCD_PID=$!
	on_exit "kill $RK_ETCD_PID; wait $RK_ETCD_PID"
	local i
	for ((i = 0; i < 100; i++)); do
		curl -sf "http://127.0.0.1:$RK_ETCD_PORT/health" >/dev/null && break
		kill -0 "$RK_ETCD_PID" 2>/dev/null || break
		sleep 0.1
	done
	curl -sf "http://127.0.0.1:$RK_ETCD_PORT/health" >/dev/null || {
		echo "etcd did not start:" >&2
		tail -n 20 "$dir/etcd.log" >&2
		return 1
	}
	on_exit 'rk_stop_apiserver'
	if [ "${RK_WEBHOOK:-0}" = 1 ]; then
		rk_start_webhook || return 1
	fi
	rk_start_apiserver
}

# The node-agent authorizer webhook (see the header), by pid.
rk_start_webhook() {
	local dir=$KUBE_DIR m args=()
	RK_AUTHZ_LOG=$dir/authz.log
	printf '%s\n' "$RK_ADMIN_TOKEN" >"$dir/admin-token"
	chmod 0600 "$dir/admin-token"
	for m in ${RK_WEBHOOK_MACHINES:-}; do args+=(--machine "$m"); done
	python3 "$TESTS_DIR/lib/nodeagent-authz.py" --listen "127.0.0.1:$RK_WEBHOOK_PORT" \
		--cert "$KUBE_PKI/server.crt" --key "$KUBE_PKI/server.key" --server "$KUBE_API" \
		--ca "$KUBE_PKI/ca.crt" --token-file "$dir/admin-token" --log "$RK_AUTHZ_LOG" "${args[@]}" \
		>"$dir/authz.out" 2>&1 &
	RK_WEBHOOK_PID=$!
	on_exit "kill $RK_WEBHOOK_PID; wait $RK_WEBHOOK_PID"
	cat >"$dir/authz-webhook.kubeconfig" <<-EOF
	apiVersion: v1
	kind: Config
	clusters:
	- name: node-agent-authorizer
	  cluster:
	    server: https://127.0.0.1:$RK_WEBHOOK_PORT/authorize
	    certificate-authority: $KUBE_PKI/ca.crt
	users:
	- name: kube-apiserver
	  user: {}
	contexts:
	- name: webhook
	  context:
	    cluster: node-agent-authorizer
	    user: kube-apiserver
	current-context: webhook
	EOF
	local i
	for ((i = 0; i < 100; i++)); do
		grep -q listening "$dir/authz.out" 2>/dev/null && return 0
		kill -0 "$RK_WEBHOOK_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "node-agent authorizer webhook did not start:" >&2
	cat "$dir/authz.out" >&2
	return 1
}

# rk_authz_denied USER-SUBSTRING: prints the webhook's deny decisions for it.
# rk_authz_denied USER [LAG_FROM LAG_S]: the webhook's denials of USER
# (printed; fails when none). With LAG_FROM (epoch s, when the Node was
# created) a Lease denied "no node" within LAG_S after it is the webhook's
# cache lag (as gardener-resource-manager's): printed as such, not counted.
rk_authz_denied() {
	python3 -c 'import json,sys
f = 0
lag_from = float(sys.argv[3]) if len(sys.argv) > 3 else None
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["decision"] != "deny" or sys.argv[2] not in (e.get("user") or ""):
        continue
    what = " ".join(str(x) for x in (e["verb"], e.get("group") or "", e.get("resource") or e.get("path"), e.get("namespace") or "", e.get("name") or "", "--", e["reason"]))
    if lag_from is not None and e.get("resource") == "leases" and e["reason"].startswith("no node for") and lag_from - 1 <= e.get("time", 0) <= lag_from + float(sys.argv[4]):
        print("(the cache lag, %.1f s after the Node) %s" % (e["time"] - lag_from, what))
        continue
    print(what); f = 1
sys.exit(0 if f else 1)' "$RK_AUTHZ_LOG" "$@"
}

rk_start_apiserver() {
	local dir=$KUBE_DIR authz=(--authorization-mode=Node,RBAC)
	# No caching of decisions: every request is judged against the cluster
	# as it is (a Node created a moment ago, a label changed).
	[ -z "${RK_WEBHOOK_PID:-}" ] || authz=(--authorization-mode=Node,Webhook,RBAC
		--authorization-webhook-config-file="$dir/authz-webhook.kubeconfig" --authorization-webhook-version=v1
		--authorization-webhook-cache-authorized-ttl=${RK_WEBHOOK_TTL:-1ms} --authorization-webhook-cache-unauthorized-ttl=1ms)
	local launched
	launched=$(now)
	"$RK_BIN" --etcd-servers="http://127.0.0.1:$RK_ETCD_PORT" \
		--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=$RK_API_PORT --insecure-port=0 \
		--tls-cert-file="$KUBE_PKI/server.crt" --tls-private-key-file="$KUBE_PKI/server.key" \
		--client-ca-file="$KUBE_PKI/ca.crt" --cert-dir="$dir/certs" \
		"${authz[@]}" --enable-admission-plugins=NodeRestriction \
		--token-auth-file="$dir/tokens.csv" --enable-bootstrap-token-auth \
		--service-account-key-file="$KUBE_PKI/sa.pub" --service-account-signing-key-file="$KUBE_PKI/sa.key" \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--api-audiences=https://kubernetes.default.svc.cluster.local \
		--service-cluster-ip-range=10.96.0.0/16 \
		--audit-log-path="$RK_AUDIT" --audit-policy-file="$dir/audit-policy.yaml" \
		--logtostderr=true --v=0 >>"$dir/apiserver.log" 2>&1 &
	RK_API_PID=$!
	rk_wait_ready 90 || return 1
	echo "$launched $RK_READY_AT" >>"$dir/starts"
}

rk_stop_apiserver() {
	[ -n "${RK_API_PID:-}" ] || return 0
	kill "$RK_API_PID" 2>/dev/null
	wait "$RK_API_PID" 2>/dev/null
	RK_API_PID=
}

# An outage that starts at once: SIGKILL, no drain (SIGTERM keeps serving
# the open watch streams for about 60 s while refusing new connections).
rk_kill_apiserver() {
	[ -n "${RK_API_PID:-}" ] || return 0
	kill -KILL "$RK_API_PID" 2>/dev/null
	wait "$RK_API_PID" 2>/dev/null
	RK_API_PID=
}

# rk_wait_ready SECONDS: /readyz answers 200 and RBAC's bootstrap roles are
# in (before that, everything but system:masters gets 403 "clusterrole ...
# not found"). Sets RK_READY_AT (epoch seconds, fractional).
rk_wait_ready() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		kill -0 "$RK_API_PID" 2>/dev/null || break
		if [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$KUBE_PKI/ca.crt" \
			-H "Authorization: Bearer $RK_ADMIN_TOKEN" "$KUBE_API/readyz")" = 200 ] &&
			[ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$KUBE_PKI/ca.crt" \
				"$KUBE_API/version")" = 200 ]; then
			RK_READY_AT=$(now)
			return 0
		fi
		sleep 0.1
	done
	echo "kube-apiserver did not become ready:" >&2
	tail -n 30 "$KUBE_DIR/apiserver.log" >&2
	return 1
}

rk_compact() {
	local rev
	rev=$(curl -s -X POST "http://127.0.0.1:$RK_ETCD_PORT/v3/kv/range" -d '{"key":"AA=="}' |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])') || return 1
	curl -sf -X POST "http://127.0.0.1:$RK_ETCD_PORT/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null
}

rk() {
	local method=$1 path=$2 body=${3:-} out
	out=$(mktemp "${TMPDIR:-/tmp}/rk.XXXXXX")
	local args=(-s -o "$out" -w '%{http_code}' --cacert "$KUBE_PKI/ca.crt" -H "Authorization: Bearer $RK_ADMIN_TOKEN"
		-A node-agent-test -X "$method")
	if [ -n "$body" ]; then
		local ct=application/json
		[ "$method" = PATCH ] && ct=application/merge-patch+json
		args+=(-H "Content-Type: $ct" --data-binary "$body")
	fi
	RK_CODE=$(curl "${args[@]}" "$KUBE_API$path")
	cat "$out"
	rm -f "$out"
	[[ "$RK_CODE" == 2* ]]
}

rk_apply() {
	local path=$1 json=$2 name
	rk POST "$path" "$json" >/dev/null && return 0
	[ "$RK_CODE" = 409 ] || { echo "POST $path: $RK_CODE" >&2; return 1; }
	name=$(jget "d['metadata']['name']" <<<"$json")
	rk PUT "$path/$name" "$json" >/dev/null || { echo "PUT $path/$name: $RK_CODE" >&2; return 1; }
}

rk_sa() { rk_apply "/api/v1/namespaces/$1/serviceaccounts" "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"$2\"}}"; }

rk_sa_token() {
	rk POST "/api/v1/namespaces/$1/serviceaccounts/$2/token" \
		"{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\",\"spec\":{\"audiences\":[\"https://kubernetes.default.svc.cluster.local\"],\"expirationSeconds\":${3:-3600}}}" |
		jget "d['status']['token']"
}

rk_node() {
	rk_apply /api/v1/nodes "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$1\",\"labels\":{\"kubernetes.io/hostname\":\"$1\",\"worker.gardener.cloud/pool\":\"worker-a\",\"worker.gardener.cloud/gardener-node-agent-secret-name\":\"$KUBE_SECRET\"}}}"
}

rk_secret() {
	local json ann='{}'
	[ -z "${5:-}" ] || ann=$5
	json=$(python3 -c 'import base64, hashlib, json, sys
ns, name, f, mode, extra = sys.argv[1:6]
b = open(f, "rb").read()
s = hashlib.sha256(b).hexdigest()
if mode == "wrong":
    s = hashlib.sha256(b + b"tampered").hexdigest()
md = {"name": name, "namespace": ns, "labels": {"gardener.cloud/role": "operating-system-config",
                                                "worker.gardener.cloud/pool": "worker-a"}}
md["annotations"] = json.loads(extra)
if mode != "none":
    md["annotations"]["checksum/data-script"] = s
print(json.dumps({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": md,
                  "data": {"osc.yaml": base64.b64encode(b).decode()}}))' "$1" "$2" "$3" "${4:-auto}" "$ann")
	rk_apply "/api/v1/namespaces/$1/secrets" "$json"
}

rk_role() {
	rk_apply "/apis/rbac.authorization.k8s.io/v1/namespaces/$1/roles" \
		"{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\",\"metadata\":{\"name\":\"$2\",\"namespace\":\"$1\"},\"rules\":$3}"
}
rk_clusterrole() {
	rk_apply /apis/rbac.authorization.k8s.io/v1/clusterroles \
		"{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"$1\"},\"rules\":$2}"
}
rk_bind() {
	local ns=$1 kind=$2 role=$3 subj=$4
	if [ -n "$ns" ]; then
		rk_apply "/apis/rbac.authorization.k8s.io/v1/namespaces/$ns/rolebindings" \
			"{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"$role\",\"namespace\":\"$ns\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"$kind\",\"name\":\"$role\"},\"subjects\":[$subj]}"
	else
		rk_apply /apis/rbac.authorization.k8s.io/v1/clusterrolebindings \
			"{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"$role\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"$kind\",\"name\":\"$role\"},\"subjects\":[$subj]}"
	fi
}

rk_bootstrap_token() {
	rk_apply /api/v1/namespaces/kube-system/secrets \
		"{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"type\":\"bootstrap.kubernetes.io/token\",\"metadata\":{\"name\":\"bootstrap-token-$1\",\"namespace\":\"kube-system\"},\"stringData\":{\"token-id\":\"$1\",\"token-secret\":\"$2\",\"usage-bootstrap-authentication\":\"true\",\"auth-extra-groups\":\"${3:-system:bootstrappers:worker-a}\"}}"
}

rk_annotation() { rk GET "/api/v1/nodes/${2:-$KUBE_NODE}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"].get("annotations", {}).get(sys.argv[1], ""))' "$1"; }

# rk_wait_annotation KEY VALUE SECONDS [NODE]: polls (every 0.1 s) until the
# Node's annotation KEY is VALUE; prints the time it saw it.
rk_wait_annotation() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		[ "$(rk_annotation "$1" "${4:-}")" = "$2" ] && { now; return 0; }
		sleep 0.1
	done
	return 1
}

# rk_audit USER-SUBSTRING: "stage code verb uri" per ResponseComplete event of that user.
rk_audit() {
	python3 -c 'import json,sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("stage") != "ResponseComplete" or sys.argv[2] not in e.get("user", {}).get("username", ""):
        continue
    print(e.get("requestReceivedTimestamp"), e.get("responseStatus", {}).get("code"), e.get("verb"), e.get("requestURI"))' "$RK_AUDIT" "$1"
}

rk_audit_forbidden() {
	python3 - "$RK_AUDIT" "$KUBE_DIR/starts" "$@" <<-'EOF'
	import collections, datetime, json, sys
	audit, starts, users = sys.argv[1], sys.argv[2], set(sys.argv[3:])
	windows = []
	try:
	    for l in open(starts):
	        a, b = l.split()
	        windows.append((float(a), float(b)))
	except OSError:
	    pass
	def t(s):
	    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
	verbs, starting, denied, n = collections.Counter(), [], [], 0
	for l in open(audit):
	    e = json.loads(l)
	    user = e.get("user", {}).get("username", "")
	    if e.get("stage") != "ResponseComplete" or user not in users:
	        continue
	    n += 1
	    verbs[e.get("verb")] += 1
	    if e.get("responseStatus", {}).get("code") != 403:
	        continue
	    at = t(e["requestReceivedTimestamp"])
	    line = f'{e["requestReceivedTimestamp"]} 403 {e.get("verb")} {e.get("requestURI")} {user}'
	    if any(a <= at <= b for a, b in windows):
	        starting.append(line)
	    else:
	        denied.append(line)
	print(f"requests {n}: " + ", ".join(f"{v} {c}" for v, c in sorted(verbs.items())))
	print(f"starting {len(starting)}" + "".join(f"\n  {l}" for l in starting))
	print("\n".join(denied))
	EOF
}

rk_man_roles() {
	local out path json
	out=$(python3 - "$TESTS_DIR/lib" "$TESTS_DIR/../man/node-agent.8" "$1" "$2" <<-'EOF'
	import json, sys
	sys.path.insert(0, sys.argv[1])
	import manpage, yaml
	page, values, subjects = manpage.Page(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
	docs = manpage.roles(page)
	if not docs:
	    sys.exit(f"{sys.argv[2]}: no Role printed in section Permissions")
	for line, text in docs:
	    text, missing = manpage.substitute(text, values)
	    if missing:
	        sys.exit(f"{sys.argv[2]}:{line}: the printed Roles use {', '.join(missing)}, which the test has no value for")
	    for o in yaml.safe_load_all(text):
	        if not o:
	            continue
	        kind, md = o["kind"], o["metadata"]
	        ns = md.get("namespace")
	        base = "/apis/rbac.authorization.k8s.io/v1"
	        coll = f"{base}/namespaces/{ns}/roles" if kind == "Role" else f"{base}/clusterroles"
	        print(f"{coll}\t{json.dumps(o)}\t{kind} {ns + '/' if ns else ''}{md['name']}")
	        bkind = "RoleBinding" if kind == "Role" else "ClusterRoleBinding"
	        bmd = {"name": md["name"], **({"namespace": ns} if ns else {})}
	        b = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": bkind, "metadata": bmd,
	             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": md["name"]},
	             "subjects": subjects}
	        bcoll = f"{base}/namespaces/{ns}/rolebindings" if ns else f"{base}/clusterrolebindings"
	        print(f"{bcoll}\t{json.dumps(b)}\t{bkind} {ns + '/' if ns else ''}{md['name']}")
	EOF
	) || { echo "$out" >&2; return 1; }
	while IFS=$'\t' read -r path json label; do
		rk_apply "$path" "$json" || return 1
		echo "$label"
	done <<<"$out"
}

rk_wait_csr() {
	local i names
	for ((i = 0; i < $2 * 10; i++)); do
		names=$(rk GET /apis/certificates.k8s.io/v1/certificatesigningrequests |
			jget '" ".join(o["metadata"]["name"] for o in d["items"] if o["metadata"]["name"].startswith("'"$1"'"))')
		[ -n "$names" ] && break
		sleep 0.1
	done
	[ -n "$names" ] && [[ "$names" != *" "* ]] || return 1
	echo "$names"
}

rk_csr_approve() {
	local csr
	csr=$(rk GET "/apis/certificates.k8s.io/v1/certificatesigningrequests/$1") || return 1
	csr=$(python3 -c 'import json, sys
o = json.loads(sys.stdin.read())
o.setdefault("status", {})["conditions"] = [{"type": "Approved", "status": "True",
    "reason": "NodeAgentTestApprover", "message": "approved by the test (tests/lib/realkube.sh)"}]
print(json.dumps(o))' <<<"$csr")
	rk PUT "/apis/certificates.k8s.io/v1/certificatesigningrequests/$1/approval" "$csr" >/dev/null
}

rk_csr_sign() {
	local name=$1 crt=$2 csr ext
	csr=$(rk GET "/apis/certificates.k8s.io/v1/certificatesigningrequests/$name") || return 1
	ext=$(mktemp "${TMPDIR:-/tmp}/rk-ext.XXXXXX")
	printf 'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\nbasicConstraints=critical,CA:FALSE\n' >"$ext"
	jget 'd["spec"]["request"]' <<<"$csr" | base64 -d |
		openssl x509 -req -CA "$KUBE_PKI/ca.crt" -CAkey "$KUBE_PKI/ca.key" -set_serial "0x$(openssl rand -hex 12)" \
			-days 30 -sha256 -extfile "$ext" -out "$crt" 2>"$crt.err"
	rm -f "$ext"
	[ -s "$crt" ] || { cat "$crt.err" >&2; return 1; }
	csr=$(python3 -c 'import base64, json, sys
o = json.loads(sys.stdin.read())
o.setdefault("status", {})["certificate"] = base64.b64encode(open(sys.argv[1], "rb").read()).decode()
print(json.dumps(o))' "$crt" <<<"$csr")
	rk PUT "/apis/certificates.k8s.io/v1/certificatesigningrequests/$name/status" "$csr" >/dev/null
}
