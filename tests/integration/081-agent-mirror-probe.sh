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
# again and keeps the previous hosts.toml meanwhile. Needs containerd
# (for `containerd --version` / `config dump`). About 15 s.
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
check "  ... the executor logs the write" grep -q "Registry slow.example:5000 answered node-agent's readinessProbe: writing" "$S/exec.log"

# 3. A changed configuration (another mirror port, nothing there) is probed
# again; the previous hosts.toml stays meanwhile.
T2=$(now)
kube_secret "$W/v2.yaml" >/dev/null
check "a changed registry waits again for its new mirror (step containerd)" \
	wait_for 15 result_says "$sum2" False containerd
check "  ... the previous hosts.toml stays" grep -qF '[host."http://127.0.0.1:5302/v2"]' "$ROOT/$SLOW"
check "  ... the Node keeps the previous checksum" [ "$(kube_annotation $ANN)" = "$sum1" ]

check_not "no sanitizer report in the agent's or the executor's log" \
	grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$S/agent.log" "$S/exec.log"

[ "$_fail" -eq 0 ] || dump_logs
finish
