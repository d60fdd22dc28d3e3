# Helpers for tests that talk to the TLS test API server
# (tests/lib/kube-apiserver.py). Source after common.sh.
#
#   kube_netns "$@"         first thing in a test: re-runs the script in a
#                           private network namespace (lo up), so the fixed
#                           ports 6443/6444 never collide with anything
#   kube_start DIR [ARGS]   certificates into DIR/pki, tokens, the server
#                           ($KUBE_NODE, Secret kube-system/$KUBE_SECRET when
#                           KUBE_OSC names a file); stopped on exit
#   kctl METHOD PATH [JSON] the control interface (prints the JSON answer)
#   jget EXPR               evaluates a Python expression over the JSON on
#                           stdin, bound to d; prints str() of it, or "" for None
#
# Identities the server knows after kube_start:
#   $KUBE_TOKEN   system:serviceaccount:kube-system:node-agent: may get/watch
#                 the named Secret and get/watch/patch Nodes
#   $KUBE_PKI/client.{crt,key}   system:node:$KUBE_NODE (group system:nodes)
#   admin-token   admin (everything)

KUBE_API=${KUBE_API:-https://127.0.0.1:6443}
KUBE_CONTROL=${KUBE_CONTROL:-127.0.0.1:6444}
# Real-shaped names (../shared/notes/gardener-names.md): a machine name of
# real length and a Node name that differs from it (AWS names Nodes so).
KUBE_NODE=${KUBE_NODE:-ip-10-250-17-203.eu-central-1.compute.internal}
KUBE_MACHINE=${KUBE_MACHINE:-shoot--i512345--prod-eu1-workerpool1-z1-7d9f6-x2k9p}
KUBE_SECRET=${KUBE_SECRET:-gardener-node-agent-worker-a-0123456789abcdef}
KUBE_TOKEN=${KUBE_TOKEN:-agent-token-0123456789}
export KUBE_CONTROL KUBE_MACHINE
_kube_py=$TESTS_DIR/lib/kube-apiserver.py

kube_netns() {
	if [ -z "${NA_IN_NETNS:-}" ]; then
		command -v unshare >/dev/null || skip_all "unshare(1) missing"
		require_root
		rm -f "$_scratch_list"
		trap - EXIT
		NA_IN_NETNS=1 exec unshare -n -- bash "$0" "$@"
	fi
	ip link set lo up || skip_all "cannot bring lo up in a private network namespace"
}

kctl() { python3 "$_kube_py" ctl "$@"; }

jget() { python3 -c 'import json,sys
d = json.load(sys.stdin)
v = eval(sys.argv[1])
print("" if v is None else (json.dumps(v) if isinstance(v, (dict, list, bool)) else v))' "$1"; }

# jlines EXPR: like jget, once per line (a watch stream).
jlines() { python3 -c 'import json,sys
for line in sys.stdin:
    d = json.loads(line)
    v = eval(sys.argv[1])
    print("" if v is None else v)' "$1"; }

# now: the time as the server sees it (same clock: same machine).
now() { python3 -c 'import time; print("%.6f" % time.time())'; }

kube_start() {
	local dir=$1
	shift
	KUBE_DIR=$dir
	KUBE_PKI=$dir/pki
	"$TESTS_DIR/lib/mkcerts.sh" "$KUBE_PKI" "$KUBE_NODE" || { echo "mkcerts failed" >&2; return 1; }
	printf '%s' "$KUBE_TOKEN" >"$dir/token"
	chmod 0600 "$dir/token"
	local sa=system:serviceaccount:kube-system:node-agent
	local args=(--pki "$KUBE_PKI" --listen "${KUBE_API#https://}" --control "$KUBE_CONTROL"
		--token "$KUBE_TOKEN=$sa" --token "admin-token=admin" --admin admin
		--secret-reader "$sa" --node-admin "$sa"
		--bootstrap-token abcdef.0123456789abcdef --secret-reader group:system:bootstrappers
		--node "$KUBE_NODE" --ready-file "$dir/ready")
	if [ -n "${KUBE_OSC:-}" ]; then
		args+=(--secret "kube-system/$KUBE_SECRET=$KUBE_OSC")
	fi
	rm -f "$dir/ready"
	python3 "$_kube_py" serve "${args[@]}" "$@" >"$dir/server.log" 2>&1 &
	KUBE_PID=$!
	on_exit "kill $KUBE_PID; wait $KUBE_PID"
	local i
	for ((i = 0; i < 100; i++)); do
		[ -e "$dir/ready" ] && return 0
		kill -0 "$KUBE_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "test API server did not start:" >&2
	cat "$dir/server.log" >&2
	return 1
}

# kube_secret FILE [CHECKSUM]: creates/updates the OSC Secret from FILE;
# CHECKSUM is auto (correct, default), wrong or none. Prints the answer.
kube_secret() {
	local file=$1 sum=${2:-auto}
	kctl POST /secret "$(python3 -c 'import json,sys; print(json.dumps({"namespace": "kube-system", "name": sys.argv[1], "oscFile": sys.argv[2], "checksum": sys.argv[3]}))' "$KUBE_SECRET" "$file" "$sum")"
}

# kube_annotation KEY [NODE]: prints the Node's annotation KEY ("" if absent).
kube_annotation() { kctl GET "/node?name=${2:-$KUBE_NODE}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"].get("annotations", {}).get(sys.argv[1], ""))' "$1"; }

# kube_label KEY [NODE]
kube_label() { kctl GET "/node?name=${2:-$KUBE_NODE}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"].get("labels", {}).get(sys.argv[1], ""))' "$1"; }

# kube_wait_annotation KEY VALUE SINCE TIMEOUT: waits until the Node's
# annotation KEY was set to VALUE (removed, when VALUE is "") at or after
# SINCE; prints the time it was set.
kube_wait_annotation() {
	local r v="value=$(urlenc "$2")"
	[ -n "$2" ] || v=absent=1
	r=$(kctl GET "/wait-annotation?node=$KUBE_NODE&key=$(urlenc "$1")&$v&since=$3&timeout=$4") || return 1
	[ "$(jget "d['ok']" <<<"$r")" = true ] || return 1
	jget "d['t']" <<<"$r"
}

urlenc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }

# kube_requests SINCE [FILTER]: prints "t method status watch path" lines of
# the request log since SINCE; FILTER is a Python expression over e.
kube_requests() {
	kctl GET "/log?since=$1" | python3 -c 'import json,sys
f = sys.argv[1]
for e in json.load(sys.stdin)["requests"]:
    if eval(f):
        print("%.3f %s %s %s %s" % (e["t"], e["method"], e["status"], "watch" if e["watch"] else "-", e["path"]))' "${2:-True}"
}

# kube_count SINCE [FILTER]: how many requests match.
kube_count() { kube_requests "$@" | wc -l; }
