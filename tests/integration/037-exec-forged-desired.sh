#!/bin/bash
# Issue 21: root's executor refuses every field of desired.json beyond what
# an OSC and the stock user data allow (cloud-config-exec/bounds.h), as a
# compromised node-agent would forge them. The real cloud-config-exec in a
# scratch root (--no-systemd) first applies a good desired.json (a file,
# gardener's key, a synced token the OSC's gardener-node-agent configuration
# names, the kubelet's bootstrap from the stock token); then each forged
# field on its own: the run fails (exit 1), result.json says failedStep
# validate and names the field and the value, the journal line too, and
# nothing outside the state directory changed (tree_state: /etc/passwd kept,
# nothing written in a unit directory), nothing in the state directory but
# result.json (state.json, the KRL, the key snapshot untouched). Finally the
# good document still applies.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
require_root
[ -x "$CCE" ] || skip_all "cloud-config-exec is not built"

W=$(scratch)
exec_init "$W"
R=$W/root
ST=$R/var/lib/cloud-config-exec
GNA=$R/var/lib/gardener-node-agent
K=$TESTS_DIR/fixtures/keys
gardener_root "$R"
printf 'root:*:19000:0:99999:7:::\ngardener:*:19000:0:99999:7:::\n' >"$R/etc/shadow"
mkdir -p "$R/etc/systemd/system" "$R/run/systemd/system" "$R/etc/sudoers.d" "$GNA/credentials" \
	"$R/var/lib/node-agent"
printf 'abcdef.0123456789abcdef\n' >"$GNA/credentials/bootstrap-token"
echo "cluster CA" >"$GNA/cluster-ca.crt"

# osc SYNC-PATH...: an OSC with one file, gardener's key and
# gardener-node-agent's configuration naming each SYNC-PATH in syncConfigs.
osc() {
	local cfg='apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: NodeAgentConfiguration\ncontrollers:\n  token:\n    syncConfigs:\n'
	local i=0 p
	for p in "$@"; do
		cfg+="    - secretName: s$i\\n      path: $p\\n"
		i=$((i + 1))
	done
	cat <<-YAML
	apiVersion: extensions.gardener.cloud/v1alpha1
	kind: OperatingSystemConfig
	spec:
	  files:
	  - path: /var/lib/gardener-node-agent/config-v1.149.3.yaml
	    permissions: 384
	    content:
	      inline:
	        data: "$cfg"
	  - path: /etc/na-forged/a.conf
	    content:
	      inline:
	        data: "a"
	  - path: /var/lib/gardener-user-authorized-keys
	    content:
	      inline:
	        data: "$(cat "$K/gardener-current.pub")"
	YAML
}
osc /var/lib/otelcol/auth-token >"$W/v1.yaml"
# An OSC whose configuration itself names forbidden places: still refused.
osc /var/lib/otelcol/auth-token /etc/systemd/system/evil.service /etc/passwd /var/lib/cloud-config-exec/state.json \
	>"$W/v2.yaml"

KB_OK='"server": "https://api.example.com:443", "caFile": "/var/lib/gardener-node-agent/cluster-ca.crt",
	"tokenFile": "/var/lib/gardener-node-agent/credentials/bootstrap-token"'
TOK_OK='{"path": "/var/lib/otelcol/auth-token", "token": "otel-token-1"}'
gen=1
# put OSC JSON: desired.json for OSC with the members of JSON, next generation.
put() {
	gen=$((gen + 1))
	desired_json "$1" "$gen" "$2" >"$R/var/lib/node-agent/desired.json"
}

put "$W/v1.yaml" '{"kubeletBootstrap": {'"$KB_OK"', "nodeRegistered": false}, "tokens": ['"$TOK_OK"']}'
check "the good desired.json applies" cce "$R" apply-desired 2>"$W/good.log"
check "... the synced token written" test "$(cat "$R/var/lib/otelcol/auth-token" 2>/dev/null)" = otel-token-1
check "... the bootstrap kubeconfig written" test -s "$R/var/lib/kubelet/kubeconfig-bootstrap"
check "... the key applied" grep -q "$(cut -d' ' -f2 "$K/gardener-current.pub")" "$R/home/gardener/.ssh/authorized_keys"
for f in state.json revoked-keys.krl authkeys.snap; do
	check "... $f in the state directory" test -s "$ST/$f"
done

# The state directory: every file but result.json, with its hash.
state_sum() { (cd "$ST" && find . -mindepth 1 -path ./result.json -prune -o -printf '%p %s %i %T@\n' | sort &&
	find . -type f ! -name result.json -exec sha256sum {} + | sort) | sha256sum; }
passwd_sum=$(sha256sum <"$R/etc/passwd")

# forged NAME OSC JSON EXPECT: desired.json for OSC with the forged JSON is
# refused: exit 1, result.json failedStep validate with EXPECT in its error,
# the same in the log, and nothing changed outside result.json.
forged() {
	local name=$1 osc=$2 json=$3 expect=$4 before sbefore rc
	put "$osc" "$json"
	before=$(tree_hash "$R")
	sbefore=$(state_sum)
	cce "$R" apply-desired >"$W/$name.out" 2>"$W/$name.log"
	rc=$?
	check "$name: refused (exit $rc)" test $rc -eq 1
	check "$name: result.json: failedStep validate, names the field and the value" python3 - "$ST/result.json" \
		"$gen" "$expect" <<-'PY'
	import json, sys
	r = json.load(open(sys.argv[1]))
	sys.exit(not (r["success"] is False and r["failedStep"] == "validate" and r["generation"] == int(sys.argv[2])
	              and ("desired.json refused: " + sys.argv[3].replace("\\", "")) in r["error"]))
	PY
	check "$name: one error line says so" test "$(grep -c "desired.json refused: $expect" "$W/$name.log")" = 1
	check "$name: nothing changed below the root" test "$(tree_hash "$R")" = "$before"
	check "$name: nothing in the state directory but result.json" test "$(state_sum)" = "$sbefore"
	check "$name: /etc/passwd kept" test "$(sha256sum <"$R/etc/passwd")" = "$passwd_sum"
}

forged kb-token-passwd "$W/v1.yaml" '{"kubeletBootstrap": {"server": "https://api.example.com:443",
	"caFile": "/var/lib/gardener-node-agent/cluster-ca.crt", "tokenFile": "/etc/passwd", "nodeRegistered": true}}' \
	"kubeletBootstrap.tokenFile '/etc/passwd': not the stock bootstrap token file"
forged kb-token-other "$W/v1.yaml" '{"kubeletBootstrap": {"server": "https://api.example.com:443",
	"caFile": "/var/lib/gardener-node-agent/cluster-ca.crt", "tokenFile": "/etc/shadow", "nodeRegistered": false}}' \
	"kubeletBootstrap.tokenFile '/etc/shadow'"
forged kb-ca "$W/v1.yaml" '{"kubeletBootstrap": {"server": "https://api.example.com:443",
	"caFile": "/etc/shadow", "tokenFile": "/var/lib/gardener-node-agent/credentials/bootstrap-token",
	"nodeRegistered": false}}' "kubeletBootstrap.caFile '/etc/shadow': not the stock cluster CA file"
forged token-not-named "$W/v1.yaml" '{"tokens": [{"path": "/var/lib/other/token", "token": "x"}]}' \
	"tokens\[0\].path '/var/lib/other/token': not a path the OSC's gardener-node-agent configuration names"
forged token-unit-dir "$W/v1.yaml" '{"tokens": ['"$TOK_OK"', {"path": "/etc/systemd/system/evil.service", "token": "[Service]"}]}' \
	"tokens\[1\].path '/etc/systemd/system/evil.service': below a systemd unit directory"
forged token-run-unit-dir "$W/v1.yaml" '{"tokens": [{"path": "/run/systemd/system/evil.service", "token": "x"}]}' \
	"tokens\[0\].path '/run/systemd/system/evil.service': below a systemd unit directory"
forged token-state "$W/v1.yaml" '{"tokens": [{"path": "/var/lib/cloud-config-exec/state.json", "token": "{}"}]}' \
	"tokens\[0\].path '/var/lib/cloud-config-exec/state.json': below the executor's state directory"
forged token-krl "$W/v1.yaml" '{"tokens": [{"path": "/var/lib/cloud-config-exec/revoked-keys.krl", "token": ""}]}' \
	"tokens\[0\].path '/var/lib/cloud-config-exec/revoked-keys.krl': below the executor's state directory"
forged token-passwd "$W/v1.yaml" '{"tokens": [{"path": "/etc/passwd", "token": "evil::0:0::/:/bin/sh"}]}' \
	"tokens\[0\].path '/etc/passwd': below an account database"
forged token-sudoers "$W/v1.yaml" '{"tokens": [{"path": "/etc/sudoers.d/evil", "token": "ALL ALL=(ALL) NOPASSWD: ALL"}]}' \
	"tokens\[0\].path '/etc/sudoers.d/evil': below an account database"
# Named by the OSC's own configuration, still refused.
forged osc-named-unit-dir "$W/v2.yaml" '{"tokens": [{"path": "/etc/systemd/system/evil.service", "token": "x"}]}' \
	"tokens\[0\].path '/etc/systemd/system/evil.service': below a systemd unit directory"
forged osc-named-passwd "$W/v2.yaml" '{"tokens": [{"path": "/etc/passwd", "token": "x"}]}' \
	"tokens\[0\].path '/etc/passwd': below an account database"
forged osc-named-state "$W/v2.yaml" '{"tokens": [{"path": "/var/lib/cloud-config-exec/state.json", "token": "x"}]}' \
	"tokens\[0\].path '/var/lib/cloud-config-exec/state.json': below the executor's state directory"
forged restart-template "$W/v1.yaml" '{"restart": {"id": "r1", "units": ["kubelet.service", "getty@.service"]}}' \
	"restart.units\[1\] 'getty@.service': a template, not a unit that can be restarted"

# A unit name that is no name at all: refused by the parser already (the
# document is not applied; no result for it).
put "$W/v1.yaml" '{"restart": {"id": "r2", "units": ["../../etc/passwd"]}}'
before=$(tree_hash "$R")
cce "$R" apply-desired >/dev/null 2>"$W/restart-path.log"
rc=$?
check "restart-path: refused (exit $rc)" test $rc -ne 0
check "restart-path: one clear line" grep -q "desired.json rejected: restart.units" "$W/restart-path.log"
check "restart-path: nothing changed below the root" test "$(tree_hash "$R")" = "$before"

check "no unit file anywhere" test -z "$(find "$R/etc/systemd/system" "$R/run/systemd/system" -mindepth 1)"
check "the bootstrap token is still there" test -s "$GNA/credentials/bootstrap-token"

put "$W/v1.yaml" '{"kubeletBootstrap": {'"$KB_OK"', "nodeRegistered": false}, "tokens": ['"$TOK_OK"']}'
check "the good desired.json still applies afterwards" cce "$R" apply-desired 2>"$W/good2.log"
check "... result.json success" python3 -c "
import json, sys; sys.exit(json.load(open('$ST/result.json'))['success'] is not True)"
finish
