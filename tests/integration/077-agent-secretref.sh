#!/bin/bash
# Files from a Secret (content.secretRef; issue 25, item 5): node-agent and
# cloud-config-exec against the TLS test API server, in a private network
# namespace and a scratch root. The agent GETs the Secret a secretRef file
# names (kube-system, data[dataKey] as the raw bytes, as gardener-node-agent's
# getFileContentData) and the executor writes it with the OSC's mode; a
# change of that Secret is picked up when the OSC Secret is delivered again;
# a Secret that is missing fails that file alone (result.json: step files,
# naming it; the Node is not annotated with the new checksum; the other files
# apply; what is on disk stays) until it appears; a Secret deleted later
# leaves the last good bytes on disk and fails the run. About 25 s.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require

ANN=checksum/cloud-config-data
annotated() { kube_wait_annotation "$@" >/dev/null; }
b64() { printf '%s' "$1" | base64 -w0; }
# secret NAME KEY VALUE: creates or updates Secret kube-system/NAME
secret() {
	kctl POST /secret "{\"namespace\": \"kube-system\", \"name\": \"$1\", \"data\": {\"$2\": \"$(b64 "$3")\"}}" >/dev/null
}
# osc N [with-b]: /etc/hello inline "hello N", /etc/pki/a.crt from etcd-ca/ca.crt
# (0640), with-b: /etc/pki/b.key from late-secret/tls.key
osc() {
	cat <<-EOF
	apiVersion: extensions.gardener.cloud/v1alpha1
	kind: OperatingSystemConfig
	spec:
	  files:
	  - path: /etc/hello
	    permissions: 420
	    content:
	      inline:
	        data: hello $1
	  - path: /etc/pki/a.crt
	    permissions: 416
	    content:
	      secretRef:
	        name: etcd-ca
	        dataKey: ca.crt
	EOF
	[ "${2:-}" = with-b ] && cat <<-EOF
	  - path: /etc/pki/b.key
	    content:
	      secretRef:
	        name: late-secret
	        dataKey: tls.key
	EOF
	return 0
}
# touch_osc N: the OSC Secret delivered again (an unrelated annotation changes)
touch_osc() {
	kctl POST /secret "$(python3 -c 'import json,sys; print(json.dumps({"namespace": "kube-system", "name": sys.argv[1], "oscFile": sys.argv[2], "annotations": {"test/touch": sys.argv[3]}}))' "$KUBE_SECRET" "$1" "$2")" >/dev/null
}
content_is() { [ "$(cat "$ROOT/$1" 2>/dev/null)" = "$2" ]; }
result_is() { [ "$(result_field "$1")" = "$2" ]; }
gets() { kube_count "$1" "e['method'] == 'GET' and e['path'].startswith('/api/v1/namespaces/kube-system/secrets/$2')"; }

W=$(scratch)
osc 1 >"$W/v1.yaml"
osc 2 with-b >"$W/v2.yaml"
sum1=$(sha256 "$W/v1.yaml")
sum2=$(sha256 "$W/v2.yaml")

# The API server first, with the referenced Secret; then the agent.
S=$(scratch)
ROOT=$S/root
install -d -m 0755 "$ROOT" "$ROOT/etc" "$ROOT/var" "$ROOT/var/lib"
KUBE_OSC=$W/v1.yaml kube_start "$S" || { fail "test API server starts"; finish; exit 1; }
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
secret etcd-ca ca.crt "cert v1"
AGENT_CONF=$S/agent.json
agent_config "$AGENT_CONF"
exec_loop_start
T0=$(now)
agent_start
if ! kube_wait_annotation $ANN "$sum1" "$T0" 20 >/dev/null; then
	fail "the OSC with a secretRef file is applied and annotated"
	dump_logs
	finish
	exit 1
fi
ok "the OSC with a secretRef file is applied and annotated (no longer refused)"
check "the file holds data[ca.crt] of Secret kube-system/etcd-ca" content_is etc/pki/a.crt "cert v1"
check "  ... with the OSC's permissions (416 = 0640), root's" [ "$(stat -c '%a %u %g' "$ROOT/etc/pki/a.crt" 2>/dev/null)" = "640 0 0" ]
check "  ... read with one GET of that Secret by name" [ "$(gets "$T0" etcd-ca)" -ge 1 ]
check "desired.json carries it in secretFiles (base64)" \
	[ "$(jget "d['secretFiles'][0]['path'] + ' ' + d['secretFiles'][0]['data']" <"$(desired_file)")" = "/etc/pki/a.crt $(b64 "cert v1")" ]
check "desired.json is the agent's own (0600)" [ "$(stat -c %a "$(desired_file)")" = 600 ]

# A change of the Secret: read again when the OSC Secret is delivered again.
secret etcd-ca ca.crt "cert v2"
T1=$(now)
touch_osc "$W/v1.yaml" 1
check "a change of the Secret is written once the OSC Secret is delivered again" \
	wait_for 10 content_is etc/pki/a.crt "cert v2"
check "  ... the run succeeds (generation 2), the annotation stays" sh -c 'wait_ok() { for i in $(seq 50); do
		python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d[\"success\"] and d[\"generation\"] >= 2))" "$1" && return 0; sleep 0.1; done; return 1; }
	wait_ok "$1" && [ "$2" = "$3" ]' sh "$(result_file)" "$(kube_annotation $ANN)" "$sum1"

# A new OSC whose second secretRef names a Secret that does not exist yet.
T2=$(now)
kube_secret "$W/v2.yaml" >/dev/null
check "a missing Secret fails the run in step files" wait_for 15 sh -c \
	'[ "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d[\"checksum\"], d[\"success\"], d.get(\"failedStep\"))" "$1")" = "$2 False files" ]' \
	sh "$(result_file)" "$sum2"
check "  ... result.json names the file, the Secret and the key" \
	sh -c 'grep -q "/etc/pki/b.key (Secret kube-system/late-secret, key tls.key)" "$1"' sh "$(result_file)"
check "  ... the agent got 404 for it" [ "$(kube_count "$T2" "e['path'].endswith('/secrets/late-secret') and e['status'] == 404")" -ge 1 ]
check "  ... the other files apply (the inline file, the secretRef file whose Secret is there)" \
	sh -c '[ "$(cat "$1/etc/hello")" = "hello 2" ] && [ "$(cat "$1/etc/pki/a.crt")" = "cert v2" ]' sh "$ROOT"
check "  ... the file is not written" [ ! -e "$ROOT/etc/pki/b.key" ]
check "  ... the Node is not annotated with the new checksum" [ "$(kube_annotation $ANN)" = "$sum1" ]

# The Secret appears: read again at once when the OSC Secret is delivered
# (without that, on the agent's retry every 10 s: test-agent-secretref),
# then applied and annotated.
secret late-secret tls.key "key v1"
touch_osc "$W/v2.yaml" 1
check "once the Secret exists, the file is written and the Node annotated" \
	annotated $ANN "$sum2" "$T2" 25
check "  ... its bytes, 0600 (permissions not given)" \
	sh -c '[ "$(cat "$1/etc/pki/b.key")" = "key v1" ] && [ "$(stat -c %a "$1/etc/pki/b.key")" = 600 ]' sh "$ROOT"

# The Secret is deleted: the last good bytes stay on disk, the run fails.
kctl POST /secret '{"namespace": "kube-system", "name": "etcd-ca", "delete": true}' >/dev/null
touch_osc "$W/v2.yaml" 2
check "a Secret deleted later fails the run (step files) ..." wait_for 15 sh -c \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d[\"success\"] is False and d.get(\"failedStep\") == \"files\" and \"a.crt\" in d.get(\"error\", \"\")))" "$1"' \
	sh "$(result_file)"
check "  ... and leaves its last good bytes on disk" content_is etc/pki/a.crt "cert v2"
check "  ... the agent logged it once, naming the file, the Secret and the key" \
	[ "$(grep -c 'files from a Secret: /etc/pki/a.crt from Secret kube-system/etcd-ca key "ca.crt": the Secret does not exist (404)' "$S/agent.log")" = 1 ]

check_not "no sanitizer report in the agent's or the executor's log" \
	grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$S/agent.log" "$S/exec.log"

[ "$_fail" -eq 0 ] || dump_logs
finish
