#!/bin/bash
# The TLS test API server (tests/lib/kube-apiserver.py) against the responses
# recorded from a real kube-apiserver v1.20 (shared notes,
# kube-api-responses.md): exact Status bodies, watch framing, bookmarks,
# 410 inside a 200 watch, merge-patch, and every scripted fault the agent's
# end-to-end tests rely on. If this fails, the agent tests prove nothing.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
kube_netns "$@"
command -v curl >/dev/null || skip_all "curl missing (scripts/install-deps installs it)"

S=$(scratch)
printf 'spec:\n  files:\n  - path: /etc/x\n    content:\n      inline:\n        data: aGVsbG8=\n        encoding: b64\n' >"$S/osc.yaml"
KUBE_OSC=$S/osc.yaml kube_start "$S" --bookmark-interval 1 || { fail "server starts"; finish; exit; }
ok "server starts"

P=$KUBE_PKI
N=$KUBE_API/api/v1/nodes
SEC=$KUBE_API/api/v1/namespaces/kube-system/secrets
# A non-curl User-Agent: the real server pretty-prints for curl.
c() { curl -sS -A node-agent-test --cacert "$P/ca.crt" "$@"; }
cn() { c --cert "$P/client.crt" --key "$P/client.key" "$@"; }
ct() { c -H "Authorization: Bearer $KUBE_TOKEN" "$@"; }
code() { c -o /dev/null -w '%{http_code}' "$@"; }
same() { [ "$1" = "$2" ] || { echo "  got:  $1"; echo "  want: $2"; return 1; }; }

# --- authentication and authorization, exact bodies
check "node identity reads its Node" same "$(cn -o /dev/null -w '%{http_code}' "$N/$KUBE_NODE")" 200
check "bad bearer token: 401 body" same "$(c -H 'Authorization: Bearer nope' "$N/$KUBE_NODE")" \
	'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}'
check "bootstrap token with wrong secret: 401" same "$(code -H 'Authorization: Bearer abcdef.ffffffffffffffff' "$N")" 401
check "anonymous: 403 body" same "$(c "$N/$KUBE_NODE")" \
	'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodes \"'"$KUBE_NODE"'\" is forbidden: User \"system:anonymous\" cannot get resource \"nodes\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"name":"'"$KUBE_NODE"'","kind":"nodes"},"code":403}'
check "bootstrap token lists nodes: 403 body" same "$(c -H 'Authorization: Bearer abcdef.0123456789abcdef' "$N")" \
	'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodes is forbidden: User \"system:bootstrap:abcdef\" cannot list resource \"nodes\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"kind":"nodes"},"code":403}'
check "node identity may not read the Secret: 403 body" same "$(cn "$SEC/$KUBE_SECRET")" \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"secrets \\\"$KUBE_SECRET\\\" is forbidden: User \\\"system:node:$KUBE_NODE\\\" cannot get resource \\\"secrets\\\" in API group \\\"\\\" in the namespace \\\"kube-system\\\": no relationship found between node '$KUBE_NODE' and this object\",\"reason\":\"Forbidden\",\"details\":{\"name\":\"$KUBE_SECRET\",\"kind\":\"secrets\"},\"code\":403}"
check "node identity, missing Secret: 403, not 404" same "$(cn "$SEC/does-not-exist")" \
	'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"secrets \"does-not-exist\" is forbidden: User \"system:node:'"$KUBE_NODE"'\" cannot get resource \"secrets\" in API group \"\" in the namespace \"kube-system\": no relationship found between node '"'$KUBE_NODE'"' and this object","reason":"Forbidden","details":{"name":"does-not-exist","kind":"secrets"},"code":403}'
check "node identity lists secrets: 403 body" same "$(cn "$SEC")" \
	'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"secrets is forbidden: User \"system:node:'"$KUBE_NODE"'\" cannot list resource \"secrets\" in API group \"\" in the namespace \"kube-system\": No Object name found","reason":"Forbidden","details":{"kind":"secrets"},"code":403}'
check "token reads the Secret" same "$(ct -o /dev/null -w '%{http_code}' "$SEC/$KUBE_SECRET")" 200
sec=$(ct "$SEC/$KUBE_SECRET")
check "Secret data osc.yaml is the file, base64" same "$(jget "d['data']['osc.yaml']" <<<"$sec" | base64 -d | sha256sum | cut -d' ' -f1)" "$(sha256sum <"$S/osc.yaml" | cut -d' ' -f1)"
check "checksum/data-script is sha256 hex of osc.yaml" same "$(jget "d['metadata']['annotations']['checksum/data-script']" <<<"$sec")" "$(sha256sum <"$S/osc.yaml" | cut -d' ' -f1)"
check "authorized GET of a missing Secret: 404 body" same "$(ct "$SEC/nope")" \
	'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"secrets \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"secrets"},"code":404}'
kctl POST /policy '{"revokeSecret": "system:serviceaccount:kube-system:node-agent"}' >/dev/null
check "revoked token: 403 body (RBAC, no node reason)" same "$(ct "$SEC/$KUBE_SECRET")" \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"secrets \\\"$KUBE_SECRET\\\" is forbidden: User \\\"system:serviceaccount:kube-system:node-agent\\\" cannot get resource \\\"secrets\\\" in API group \\\"\\\" in the namespace \\\"kube-system\\\"\",\"reason\":\"Forbidden\",\"details\":{\"name\":\"$KUBE_SECRET\",\"kind\":\"secrets\"},\"code\":403}"
kctl POST /policy '{"allowSecret": "system:serviceaccount:kube-system:node-agent"}' >/dev/null
check "pretty-printed for a curl User-Agent, like the real server" \
	bash -c "curl -sS --cacert '$P/ca.crt' --cert '$P/client.crt' --key '$P/client.key' '$N/$KUBE_NODE' | grep -q '^  \"kind\": \"Node\"'"

# --- merge-patch
mp() { cn -X PATCH -H "Content-Type: ${CT:-application/merge-patch+json}" --data-binary "$2" "$N/$1"; }
check "PATCH with application/json: 415 body" same "$(CT=application/json mp "$KUBE_NODE" '{}')" \
	'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"415: Unsupported Media Type","reason":"UnsupportedMediaType","details":{},"code":415}'
check "PATCH another node: 403 body" same "$(kctl POST /node '{"name":"node-2"}' >/dev/null; mp node-2 '{"metadata":{"annotations":{"a":"b"}}}')" \
	'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodes \"node-2\" is forbidden: node \"'"$KUBE_NODE"'\" is not allowed to modify node \"node-2\"","reason":"Forbidden","details":{"name":"node-2","kind":"nodes"},"code":403}'
check "PATCH a node-restriction label: 403 body" same "$(mp "$KUBE_NODE" '{"metadata":{"labels":{"node-restriction.kubernetes.io/pool":"x"}}}')" \
	'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodes \"'"$KUBE_NODE"'\" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/pool","reason":"Forbidden","details":{"name":"'"$KUBE_NODE"'","kind":"nodes"},"code":403}'
rv0=$(cn "$N/$KUBE_NODE" | jget "d['metadata']['resourceVersion']")
r=$(mp "$KUBE_NODE" '{"metadata":{"annotations":{"checksum/cloud-config-data":"abc","x":"1"},"labels":{"worker.gardener.cloud/kubernetes-version":"1.31.1"}}}')
rv1=$(jget "d['metadata']['resourceVersion']" <<<"$r")
check "merge-patch returns the Node with the new annotation" same "$(jget "d['metadata']['annotations']['checksum/cloud-config-data']" <<<"$r")" abc
check "merge-patch keeps the other annotations" same "$(jget "d['metadata']['annotations']['node.alpha.kubernetes.io/ttl']" <<<"$r")" 0
check "merge-patch bumps the resourceVersion" test "$rv1" -gt "$rv0"
r=$(mp "$KUBE_NODE" '{"metadata":{"annotations":{"x":null}}}')
check "null removes an annotation (RFC 7386)" same "$(jget "d['metadata']['annotations'].get('x')" <<<"$r")" ""
rv2=$(jget "d['metadata']['resourceVersion']" <<<"$r")
r=$(mp "$KUBE_NODE" '{"metadata":{"annotations":{"checksum/cloud-config-data":"abc"}}}')
check "a no-op patch does not bump the resourceVersion" same "$(jget "d['metadata']['resourceVersion']" <<<"$r")" "$rv2"
check "patch with a stale resourceVersion: 409" same "$(cn -o /dev/null -w '%{http_code}' -X PATCH -H 'Content-Type: application/merge-patch+json' --data-binary '{"metadata":{"resourceVersion":"1","annotations":{"y":"1"}}}' "$N/$KUBE_NODE")" 409
check "patch that is not JSON: 400" same "$(cn -o /dev/null -w '%{http_code}' -X PATCH -H 'Content-Type: application/merge-patch+json' --data-binary '{"metadata":' "$N/$KUBE_NODE")" 400
check "an invalid label value: 422" same "$(cn -o /dev/null -w '%{http_code}' -X PATCH -H 'Content-Type: application/merge-patch+json' --data-binary '{"metadata":{"labels":{"a":"-bad-"}}}' "$N/$KUBE_NODE")" 422
check "annotation history recorded the patch" same "$(kctl GET "/annotation-history?node=$KUBE_NODE&key=checksum%2Fcloud-config-data" | jget "d[-1]['value']")" abc

# --- watch
W="$N?watch=1&fieldSelector=metadata.name%3D$KUBE_NODE&allowWatchBookmarks=true"
ts=$(date +%s.%N)
cn -D "$S/h" -N "$W&timeoutSeconds=5" >"$S/w0" &
wpid=$!
sleep 0.5
kctl POST /node '{"name":"'"$KUBE_NODE"'","annotations":{"w":"1"}}' >/dev/null
kctl POST /node '{"name":"node-2","annotations":{"w":"1"}}' >/dev/null
wait $wpid
rc=$?
t1=$(date +%s.%N)
check "watch without RV ends cleanly at timeoutSeconds" same "$rc" 0
check "  ... after about 5 s" python3 -c "import sys; sys.exit(not 4.9 < $t1 - $ts < 6.5)"
check "watch is HTTP 200, chunked, application/json" bash -c "grep -qi '^HTTP/1.1 200' '$S/h' && grep -qi '^Transfer-Encoding: chunked' '$S/h' && grep -qi '^Content-Type: application/json' '$S/h'"
check "watch without RV starts with a synthetic ADDED" same "$(head -1 "$S/w0" | jget "d['type']")" ADDED
check "then MODIFIED for our node only" same "$(grep -v BOOKMARK "$S/w0" | sed -n 2p | jget "d['type'] + ' ' + d['object']['metadata']['name'] + ' ' + d['object']['metadata']['annotations']['w']")" "MODIFIED $KUBE_NODE 1"
check "no event for the other node" bash -c "! grep -q '\"name\":\"node-2\"' '$S/w0'"
bm=$(grep '"BOOKMARK"' "$S/w0" | tail -1)
rvb=$(jget "d['object']['metadata']['resourceVersion']" <<<"$bm")
check "BOOKMARK has the recorded v1.20 shape" same "$bm" \
	"{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"$rvb\",\"creationTimestamp\":null},\"spec\":{},\"status\":{\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":0}},\"nodeInfo\":{\"machineID\":\"\",\"systemUUID\":\"\",\"bootID\":\"\",\"kernelVersion\":\"\",\"osImage\":\"\",\"containerRuntimeVersion\":\"\",\"kubeletVersion\":\"\",\"kubeProxyVersion\":\"\",\"operatingSystem\":\"\",\"architecture\":\"\"}}}}"
check "every line is one JSON object" python3 -c "import json,sys; [json.loads(l) for l in open('$S/w0')]"
rvm=$(grep -v BOOKMARK "$S/w0" | sed -n 2p | jget "d['object']['metadata']['resourceVersion']")
cn -N "$N?watch=1&fieldSelector=metadata.name%3D$KUBE_NODE&timeoutSeconds=2" >"$S/wnb"
check "no bookmarks unless asked" same "$(jlines "d['type']" <"$S/wnb")" ADDED

kctl POST /node '{"name":"'"$KUBE_NODE"'","annotations":{"w":"2"}}' >/dev/null
cn -N "$W&resourceVersion=$rv0&timeoutSeconds=1" >"$S/w1"
check "watch from an RV replays newer events, no ADDED" same "$(jlines "d['type']" <"$S/w1" | sort -u | tr '\n' ' ')" "BOOKMARK MODIFIED "
check "  ... in order, ending with the latest" same "$(grep MODIFIED "$S/w1" | tail -1 | jget "d['object']['metadata']['annotations']['w']")" 2

kctl POST /expire >/dev/null
floor=$(kctl GET /healthz | jget "d['rv']")
check "RV older than the history: one ERROR 410 event inside a 200" same "$(cn -w '%{http_code}' -N "$W&resourceVersion=$rvm&timeoutSeconds=5")" \
	"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: $rvm ($floor)\",\"reason\":\"Expired\",\"code\":410}}
200"
check "watch from the current RV after expiry works" same "$(cn -o /dev/null -w '%{http_code}' -N "$W&resourceVersion=$floor&timeoutSeconds=1")" 200

# Secret watch by name, with a changed checksum
sw="$SEC?watch=1&fieldSelector=metadata.name%3D$KUBE_SECRET&allowWatchBookmarks=true&timeoutSeconds=5"
ct -N "$sw" >"$S/w2" &
wpid=$!
sleep 0.5
printf 'spec: {}\n' >"$S/osc2.yaml"
kube_secret "$S/osc2.yaml" wrong >/dev/null
wait $wpid
check "Secret watch: ADDED, then MODIFIED" same "$(grep -v BOOKMARK "$S/w2" | jlines "d['type']" | tr '\n' ' ')" "ADDED MODIFIED "
check "  ... with the wrong checksum as asked" bash -c "[ \"\$(grep MODIFIED '$S/w2' | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"object\"][\"metadata\"][\"annotations\"][\"checksum/data-script\"])')\" != \"\$(sha256sum <'$S/osc2.yaml' | cut -d' ' -f1)\" ]"
check "Secret watch without a name: 403 for the token" same "$(ct -o /dev/null -w '%{http_code}' "$SEC?watch=1")" 403

# --- scripted faults
kctl POST /fault '{"type":"500","count":2,"match":"/nodes/"}' >/dev/null
check "fault 500 x2, then 200" same "$(for i in 1 2 3; do code --cert "$P/client.crt" --key "$P/client.key" "$N/$KUBE_NODE"; echo; done | tr '\n' ' ')" "500 500 200 "
kctl POST /fault '{"type":"429","retryAfter":3}' >/dev/null
cn -D "$S/h429" "$N/$KUBE_NODE" >"$S/b429"
check "fault 429 carries Retry-After" grep -qi '^Retry-After: 3' "$S/h429"
check "  ... and a TooManyRequests Status" same "$(jget "d['reason'] + ' ' + str(d['details']['retryAfterSeconds'])" <"$S/b429")" "TooManyRequests 3"
kctl POST /fault '{"type":"reset","match":"watch=1"}' >/dev/null
cn -N "$W&timeoutSeconds=5" >/dev/null 2>&1
check "fault reset mid-watch: the client sees a broken transfer" test $? -ne 0
cn -N "$W&timeoutSeconds=20" >"$S/w3" 2>/dev/null &
wpid=$!
sleep 0.5
kctl POST /reset-watches >/dev/null
t0=$(date +%s)
wait $wpid
rc=$?
check "reset-watches breaks an open watch at once" bash -c "[ $rc -ne 0 ] && [ $(($(date +%s) - t0)) -le 2 ]"
kctl POST /fault '{"type":"hang","count":-1}' >/dev/null
check "fault hang: request times out" same "$(cn -o /dev/null -w '%{http_code}' --max-time 1 "$N/$KUBE_NODE"; echo " $?")" "000 28"
kctl POST /clear-faults >/dev/null
check "clear-faults: answered again" same "$(code --cert "$P/client.crt" --key "$P/client.key" "$N/$KUBE_NODE")" 200
kctl POST /fault '{"type":"blackhole"}' >/dev/null
check "fault blackhole: not even a TLS handshake" same "$(cn -o /dev/null -w '%{http_code}' --max-time 1 "$N/$KUBE_NODE"; echo " $?")" "000 28"
kctl POST /fault '{"type":"oversize","bytes":8388608}' >/dev/null
check "fault oversize: 8 MiB body, chunked" same "$(cn -o /dev/null -w '%{size_download}' "$N/$KUBE_NODE")" 8388608
kctl POST /fault '{"type":"oversize","bytes":67108864,"chunked":false}' >/dev/null
check "fault oversize with Content-Length 64 MiB: a capped client gives up" same "$(cn -o /dev/null --max-filesize 1048576 "$N/$KUBE_NODE"; echo $?)" 63
kctl POST /fault '{"type":"badjson"}' >/dev/null
check_not "fault badjson: body is not JSON" bash -c "curl -sS -A t --cacert '$P/ca.crt' --cert '$P/client.crt' --key '$P/client.key' '$N/$KUBE_NODE' | python3 -c 'import json,sys; json.load(sys.stdin)' 2>/dev/null"

# --- listener down/up, TLS
kctl POST /down >/dev/null
cn -o /dev/null "$N/$KUBE_NODE" 2>/dev/null
check "down: connection refused" same "$?" 7
kctl POST /up >/dev/null
check "up: answered again" same "$(code --cert "$P/client.crt" --key "$P/client.key" "$N/$KUBE_NODE")" 200
kctl POST /restart '{"tls":"other-ca"}' >/dev/null
cn -o /dev/null "$N/$KUBE_NODE" 2>/dev/null
check "restart with a certificate from another CA: verification fails" same "$?" 60
check "  ... and the server logged the failed handshake" bash -c "kctl() { python3 '$TESTS_DIR/lib/kube-apiserver.py' ctl \"\$@\"; }; kctl GET /log | grep -q '\"method\": \"TLS\"'"
kctl POST /restart '{"tls":"wrong-host"}' >/dev/null
cn -o /dev/null "$N/$KUBE_NODE" 2>/dev/null
check "wrong hostname in the certificate: verification fails" same "$?" 60
kctl POST /restart '{"tls":"good"}' >/dev/null
check "good certificate again" same "$(code --cert "$P/client.crt" --key "$P/client.key" "$N/$KUBE_NODE")" 200
check_not "client certificate from another CA is refused" \
	curl -sS -A t --cacert "$P/ca.crt" --cert "$P/client-other-ca.crt" --key "$P/client-other-ca.key" -o /dev/null "$N/$KUBE_NODE"

# --- request log
n=$(kube_count 0 "e['path'].startswith('/api/v1/nodes') and e['status'] == 200")
check "request log records requests with status ($n)" test "$n" -gt 10
check "request log marks watches" test "$(kube_count 0 "e['watch']")" -gt 5

finish
