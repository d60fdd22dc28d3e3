#!/bin/bash
# Registry mirrors' readinessProbe (issue 25, item 8): node-agent probes a
# registry of the OSC's criConfig with readinessProbe: true (the executor
# has no network) and cloud-config-exec writes its hosts.toml only once
# every host answered, as gardener-node-agent's addRegistryToContainerdFunc
# (containerd.go). Against the TLS test API server in a private network
# namespace, a scratch root, and a tiny HTTP server on loopback as the
# mirror: a registry without the flag is written at once; one whose mirror
# does not answer is not written, the run fails in step containerd naming
# it, the Node is not annotated, the agent logs the wait once; once the
# mirror answers (any HTTP status: 404 here) it is written, the run
# succeeds and the Node is annotated. A changed configuration is probed
# again and keeps the previous hosts.toml meanwhile. An https mirror is
# verified against the registry's own caCerts (a relative path, the file
# written by the same OSC): one signed by that CA answers, one signed by
# another CA never does. Needs containerd (for `containerd --version` /
# `config dump`). 14-25 s.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require
command -v containerd >/dev/null || skip_all "containerd not installed"
# The executor's lines go to exec.log too (the loop's stand-in for the path
# unit; the shared one logs to the journal only).
exec_once() {
	"$EXEC" --root "$ROOT" --config "$AGENT_CONF" --no-systemd --log=stderr apply-desired </dev/null >>"$S/exec.log" 2>&1
	echo "exec rc=$? at $(date +%s.%N)" >>"$S/exec.log"
}

ANN=checksum/cloud-config-data
annotated() { kube_wait_annotation "$@" >/dev/null; }
# osc FILE PORT: fast.example (no readinessProbe, mirror on 5301, never
# asked) and slow.example:5000 (readinessProbe: true, mirror on PORT)
osc() {
	cat >"$1" <<-EOF
	apiVersion: extensions.gardener.cloud/v1alpha1
	kind: OperatingSystemConfig
	spec:
	  files:
	  - path: /etc/hello
	    permissions: 420
	    content: {inline: {data: "hello $2"}}
	  criConfig:
	    name: containerd
	    containerd:
	      registries:
	      - upstream: fast.example
	        hosts:
	        - url: http://127.0.0.1:5301
	      - upstream: slow.example:5000
	        readinessProbe: true
	        hosts:
	        - url: http://127.0.0.1:$2/v2
	EOF
}
mirror_start() { # mirror_start PORT: answers 404 to GET /v2 (an empty directory)
	python3 -m http.server "$1" --bind 127.0.0.1 --directory "$S/www" >>"$S/mirror.log" 2>&1 &
	MIRROR_PID=$!
	on_exit "kill $MIRROR_PID 2>/dev/null; wait $MIRROR_PID 2>/dev/null"
}
result_says() { # result_says CHECKSUM SUCCESS [STEP]
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["checksum"] == sys.argv[2] and str(d["success"]) == sys.argv[3] and (len(sys.argv) < 5 or d.get("failedStep") == sys.argv[4])))' \
		"$(result_file)" "$@" 2>/dev/null
}
FAST=etc/containerd/certs.d/fast.example/hosts.toml
SLOW=etc/containerd/certs.d/slow.example:5000/hosts.toml

W=$(scratch)
osc "$W/v1.yaml" 5302
osc "$W/v2.yaml" 5303
sum1=$(sha256 "$W/v1.yaml")
sum2=$(sha256 "$W/v2.yaml")

S=$(scratch)
ROOT=$S/root
install -d -m 0755 "$ROOT" "$ROOT/etc" "$ROOT/var" "$ROOT/var/lib" "$S/www"
KUBE_OSC=$W/v1.yaml kube_start "$S" || { fail "test API server starts"; finish; exit 1; }
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
AGENT_CONF=$S/agent.json
agent_config "$AGENT_CONF"
exec_loop_start
T0=$(now)
agent_start

# 1. The mirror of slow.example:5000 does not answer (nothing listens).
if ! wait_for 20 result_says "$sum1" False containerd; then
	fail "a registry whose mirror does not answer fails the run in step containerd"
	dump_logs
	finish
	exit 1
fi
ok "a registry whose mirror does not answer fails the run in step containerd"
check "  ... result.json names it as waiting for its readinessProbe" \
	grep -q 'waiting for their readinessProbe.*slow.example:5000' "$(result_file)"
check "  ... its hosts.toml is not written" [ ! -e "$ROOT/$SLOW" ]
check "  ... the registry without readinessProbe is written at once" grep -qF '[host."http://127.0.0.1:5301"]' "$ROOT/$FAST"
check "  ... the rest of the OSC applies" [ "$(cat "$ROOT/etc/hello")" = "hello 5302" ]
check "  ... the Node is not annotated" [ -z "$(kube_annotation $ANN)" ]
check "  ... desired.json lists no ready registry" \
	[ "$(jget "len(d.get('readyRegistries', []))" <"$(desired_file)")" = 0 ]
check "  ... the executor logs the wait" grep -q 'Registry slow.example:5000 waits for its readinessProbe' "$S/exec.log"
# Let the agent retry (every 2 s) before the mirror comes up.
sleep 2.5
check "  ... the agent logs the unanswered mirror once, though it asks again" \
	[ "$(grep -c 'Registry slow.example:5000 waits: its host http://127.0.0.1:5302/v2 does not answer' "$S/agent.log")" = 1 ]

# 2. The mirror comes up: the next try sees it answer (404 counts).
T1=$(now)
mirror_start 5302
check "once the mirror answers, its hosts.toml is written and the Node annotated" \
	annotated $ANN "$sum1" "$T1" 15
check "  ... hosts.toml names the mirror" grep -qF '[host."http://127.0.0.1:5302/v2"]' "$ROOT/$SLOW"
check "  ... the run succeeds" result_says "$sum1" True
check "  ... desired.json lists slow.example:5000 with its hosts.toml's SHA-256" \
	[ "$(jget "d['readyRegistries'][0]['upstream'] + ' ' + d['readyRegistries'][0]['sha256']" <"$(desired_file)")" = "slow.example:5000 $(sha256 "$ROOT/$SLOW")" ]
check "  ... the mirror was asked with a plain GET of its URL (answered 404, which counts)" grep -q '"GET /v2 HTTP/1.1" 404' "$S/mirror.log"
check "  ... the executor logs the write" grep -q "Registry slow.example:5000 answered node-agent's readinessProbe: writing its hosts.toml" "$S/exec.log"

# 3. A changed configuration (another mirror port, nothing there) is probed
# again; the previous hosts.toml stays meanwhile.
T2=$(now)
kube_secret "$W/v2.yaml" >/dev/null
check "a changed registry waits again for its new mirror (step containerd)" \
	wait_for 15 result_says "$sum2" False containerd
check "  ... the previous hosts.toml stays" grep -qF '[host."http://127.0.0.1:5302/v2"]' "$ROOT/$SLOW"
check "  ... the Node keeps the previous checksum" [ "$(kube_annotation $ANN)" = "$sum1" ]

# 4. An https mirror with a CA the OSC writes next to its hosts.toml
# (caCerts relative to certs.d/<upstream>, as Gardener reads them): the
# agent verifies the mirror against that CA (the test API server's, whose
# certificate names 127.0.0.1); slow.example:5000 back on the mirror that
# answers.
python3 -c '
import http.server, ssl, sys
s = http.server.HTTPServer(("127.0.0.1", 5304), http.server.SimpleHTTPRequestHandler)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain(sys.argv[1], sys.argv[2])
s.socket = c.wrap_socket(s.socket, server_side=True)
s.serve_forever()' "$KUBE_PKI/server.crt" "$KUBE_PKI/server.key" >>"$S/mirror-tls.log" 2>&1 &
TLS_PID=$!
on_exit "kill $TLS_PID 2>/dev/null; wait $TLS_PID 2>/dev/null"
osc "$W/v3.yaml" 5302
cat >>"$W/v3.yaml" <<-EOF
	      - upstream: tls.example
	        readinessProbe: true
	        hosts:
	        - url: https://127.0.0.1:5304
	          caCerts: [ca.crt]
	EOF
python3 - "$W/v3.yaml" "$KUBE_PKI/ca.crt" <<-'EOF'
	import base64, sys
	y = open(sys.argv[1]).read()
	ca = base64.b64encode(open(sys.argv[2], "rb").read()).decode()
	y = y.replace("  criConfig:", "  - path: /etc/containerd/certs.d/tls.example/ca.crt\n    permissions: 420\n"
	              "    content: {inline: {encoding: b64, data: %s}}\n  criConfig:" % ca, 1)
	open(sys.argv[1], "w").write(y)
	EOF
sum3=$(sha256 "$W/v3.yaml")
T3=$(now)
kube_secret "$W/v3.yaml" >/dev/null
check "an https mirror verified against the registry's own caCerts: written, Node annotated" \
	annotated $ANN "$sum3" "$T3" 20
check "  ... its hosts.toml names the CA" grep -qxF '  ca = ["ca.crt"]' "$ROOT/etc/containerd/certs.d/tls.example/hosts.toml"
check "  ... the agent reached it over TLS" grep -q '"GET / HTTP/1.1" 200' "$S/mirror-tls.log"

# 5. A mirror whose certificate that CA did not sign never counts as
# answering (the TLS handshake fails before any HTTP status).
python3 -c '
import http.server, ssl, sys
s = http.server.HTTPServer(("127.0.0.1", 5305), http.server.SimpleHTTPRequestHandler)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain(sys.argv[1], sys.argv[2])
s.socket = c.wrap_socket(s.socket, server_side=True)
s.serve_forever()' "$KUBE_PKI/server-other-ca.crt" "$KUBE_PKI/server-other-ca.key" >>"$S/mirror-tls2.log" 2>&1 &
TLS2_PID=$!
on_exit "kill $TLS2_PID 2>/dev/null; wait $TLS2_PID 2>/dev/null"
cp "$W/v3.yaml" "$W/v4.yaml"
cat >>"$W/v4.yaml" <<-EOF
	      - upstream: other-ca.example
	        readinessProbe: true
	        hosts:
	        - url: https://127.0.0.1:5305
	          caCerts: [/etc/containerd/certs.d/tls.example/ca.crt]
	EOF
sum4=$(sha256 "$W/v4.yaml")
kube_secret "$W/v4.yaml" >/dev/null
check "a mirror whose certificate the CA does not sign is not ready (step containerd)" \
	wait_for 15 result_says "$sum4" False containerd
check "  ... its hosts.toml is not written" [ ! -e "$ROOT/etc/containerd/certs.d/other-ca.example/hosts.toml" ]
check "  ... the agent says why (the certificate)" grep -q 'Registry other-ca.example waits: its host https://127.0.0.1:5305 does not answer (.*[Cc]ertificate' "$S/agent.log"

check_not "no sanitizer report in the agent's or the executor's log" \
	grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$S/agent.log" "$S/exec.log"

[ "$_fail" -eq 0 ] || dump_logs
finish
