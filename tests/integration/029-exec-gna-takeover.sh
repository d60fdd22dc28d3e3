#!/bin/bash
# cloud-config-exec taking over a node that gardener-node-agent configured
# (scratch root, --no-systemd): gardener-node-agent's own units
# (gardener-node-agent.service, gardener-node-init.service) are superseded,
# never written; its binary (an imageRef file) is never written; and its
# /var/lib/gardener-node-agent/last-applied-osc.yaml is adopted as the
# last-applied record when the executor has none of its own, so only units
# whose definition differs restart (not containerd and the kubelet). Without
# that file, or with a malformed one, every unit restarts (a full apply).
# The kubelet's bootstrap kubeconfig from desired.json: written 0600 from the
# bootstrap token, removed with the token once the Node is registered, not
# written when the kubelet has its own kubeconfig. Synced tokens from
# desired.json: 0640, written only when they differ or are gone (the path
# is one the OSC's gardener-node-agent configuration names: bounds.h).
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
require_root
[ -x "$CCE" ] || skip_all "cloud-config-exec is not built"

W=$(scratch)
exec_init "$W"
R=$W/root
GNA=$R/var/lib/gardener-node-agent

# osc VERSION-OF-a.service: an OSC as Gardener publishes it (abridged):
# containerd with a drop-in only, the kubelet, gardener-node-agent's unit,
# config and binary, and one unit that changes.
osc() {
	cat <<-YAML
	apiVersion: extensions.gardener.cloud/v1alpha1
	kind: OperatingSystemConfig
	metadata: {}
	spec:
	  files:
	  - path: /var/lib/gardener-node-agent/config-v1.149.3.yaml
	    permissions: 384
	    content:
	      inline:
	        data: "apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: NodeAgentConfiguration\ncontrollers:\n  token:\n    syncConfigs:\n    - secretName: shoot-access-otelcol\n      path: /var/lib/otelcol/auth-token\n"
	  - path: /opt/bin/gardener-node-agent
	    permissions: 493
	    content:
	      imageRef:
	        image: europe-docker.pkg.dev/gardener-project/releases/gardener/node-agent:v1.149.3
	        filePathInImage: /gardener-node-agent
	  - path: /etc/na-takeover/a.conf
	    content:
	      inline:
	        data: "a $1"
	  units:
	  - name: containerd.service
	    dropIns:
	    - name: 11-exec_config.conf
	      content: "[Service]\nExecStart=\nExecStart=/usr/bin/containerd --config=/etc/containerd/config.toml\n"
	  - name: kubelet.service
	    enable: true
	    command: start
	    content: "[Service]\nExecStart=/opt/bin/kubelet\n"
	  - name: gardener-node-agent.service
	    enable: true
	    content: "[Service]\nExecStart=/opt/bin/gardener-node-agent --config-dir=/var/lib/gardener-node-agent\n"
	    filePaths:
	    - /var/lib/gardener-node-agent/config-v1.149.3.yaml
	    - /opt/bin/gardener-node-agent
	  - name: na-takeover-a.service
	    enable: true
	    command: start
	    content: "[Service]\nExecStart=/bin/echo $1\n"
	    filePaths:
	    - /etc/na-takeover/a.conf
	YAML
}
osc 1 >"$W/v1.yaml"
osc 2 >"$W/v2.yaml"

# plan_is ROOT OSC LINE: `check` prints exactly that units line.
plan_is() { cce "$1" check "$2" 2>/dev/null | grep -qx -- "$3"; }

# --- no record at all: a full apply (what taking over costs without adoption)
check "without any last-applied record every unit would restart" \
	plan_is "$R" "$W/v2.yaml" 'units: restart: containerd.service kubelet.service na-takeover-a.service; superseded: gardener-node-agent.service'

# --- gardener-node-agent applied v1 before (its record, written as it does,
# and the unit files and drop-ins it wrote)
mkdir -p "$GNA" "$R/etc/systemd/system/containerd.service.d"
cp "$W/v1.yaml" "$GNA/last-applied-osc.yaml"
chmod 0600 "$GNA/last-applied-osc.yaml"
printf '[Service]\nExecStart=\nExecStart=/usr/bin/containerd --config=/etc/containerd/config.toml\n' \
	>"$R/etc/systemd/system/containerd.service.d/11-exec_config.conf"
printf '[Service]\nExecStart=/opt/bin/kubelet\n' >"$R/etc/systemd/system/kubelet.service"
printf '[Service]\nExecStart=/bin/echo 1\n' >"$R/etc/systemd/system/na-takeover-a.service"
cce "$R" check "$W/v2.yaml" >"$W/check.out" 2>"$W/check.log"
check "check: only the unit whose definition differs restarts ($(grep '^units:' "$W/check.out"))" \
	grep -qx 'units: restart: na-takeover-a.service; superseded: gardener-node-agent.service; unchanged: 2' "$W/check.out"
check "... and says where the record came from" \
	grep -q "adopting gardener-node-agent's /var/lib/gardener-node-agent/last-applied-osc.yaml (3 files, 4 units)" "$W/check.log"
check "apply on the taken-over node succeeds" cce "$R" apply "$W/v2.yaml" 2>"$W/apply.log"
check "... the plan restarts only the changed unit" \
	grep -q "Units: restart: na-takeover-a.service; superseded: gardener-node-agent.service; unchanged: 2" "$W/apply.log"
check "gardener-node-agent.service is never written" test ! -e "$R/etc/systemd/system/gardener-node-agent.service"
check "its binary (imageRef) is never written" test ! -e "$R/opt/bin/gardener-node-agent"
check "its config (an inline file) is written, for node-agent's stock data" \
	test "$(stat -c %a "$GNA/config-v1.149.3.yaml" 2>/dev/null)" = 600
check "gardener-node-agent's record is left as it was" cmp -s "$GNA/last-applied-osc.yaml" "$W/v1.yaml"
check "our own record exists now" test -s "$R/var/lib/cloud-config-exec/last-applied.yaml"
osc 3 >"$W/v3.yaml"
cp "$W/v3.yaml" "$GNA/last-applied-osc.yaml"
check "from then on our record counts, not gardener-node-agent's" \
	plan_is "$R" "$W/v2.yaml" 'units: superseded: gardener-node-agent.service; unchanged: 3'
mentions_adoption() { cce "$R" check "$W/v2.yaml" 2>&1 | grep -q adopting; }
check_not "... and it is not mentioned" mentions_adoption

# --- the kubelet's bootstrap kubeconfig through desired.json (kubeletBootstrap)
mkdir -p "$GNA/credentials" "$R/var/lib/node-agent"
printf 'abcdef.0123456789abcdef\n' >"$GNA/credentials/bootstrap-token"
desired() { # REGISTERED(true|false) GENERATION
	desired_json "$W/v2.yaml" "$2" '{"kubeletBootstrap": {"server": "https://api.example.com:443",
		"caFile": "/var/lib/gardener-node-agent/cluster-ca.crt",
		"tokenFile": "/var/lib/gardener-node-agent/credentials/bootstrap-token", "nodeRegistered": '"$1"'}}' \
		>"$R/var/lib/node-agent/desired.json"
}
KB=$R/var/lib/kubelet/kubeconfig-bootstrap
desired false 1
check "apply-desired before the Node is registered succeeds" cce "$R" apply-desired 2>"$W/kb.log"
check "kubeconfig-bootstrap written, 0600 ($(stat -c %a "$KB" 2>&1))" test "$(stat -c %a "$KB" 2>/dev/null)" = 600
check "... as gardener-node-agent writes it: user kubelet-bootstrap, the token, server, CA file" sh -c '
	grep -q "^    token: \"abcdef.0123456789abcdef\"$" "$1" && grep -q "^    server: \"https://api.example.com:443\"$" "$1" &&
	grep -q "^    certificate-authority: \"/var/lib/gardener-node-agent/cluster-ca.crt\"$" "$1" &&
	grep -q "^- name: kubelet-bootstrap$" "$1"' sh "$KB"
desired true 2
check "once the Node is registered: apply-desired succeeds" cce "$R" apply-desired 2>"$W/kb2.log"
check "... kubeconfig-bootstrap removed" test ! -e "$KB"
check "... and the bootstrap token with it" test ! -e "$GNA/credentials/bootstrap-token"
check "... both logged" test "$(grep -c 'Node registered: removed' "$W/kb2.log")" = 2
printf 'abcdef.0123456789abcdef\n' >"$GNA/credentials/bootstrap-token"
mkdir -p "$R/var/lib/kubelet" && echo real >"$R/var/lib/kubelet/kubeconfig-real"
desired false 3
cce "$R" apply-desired 2>/dev/null
check "the kubelet has its own kubeconfig: no bootstrap kubeconfig" test ! -e "$KB"

# --- token sync through desired.json: written 0640, only when it differs, again
# when removed on the node
desired_json "$W/v2.yaml" 9 '{"tokens": [{"path": "/var/lib/otelcol/auth-token", "token": "otel-token-1"}]}' \
	>"$R/var/lib/node-agent/desired.json"
TOK=$R/var/lib/otelcol/auth-token
check "token sync: apply-desired succeeds" cce "$R" apply-desired 2>"$W/tok.log"
check "... the token is written, 0640 ($(stat -c %a "$TOK" 2>&1))" \
	test "$(stat -c %a "$TOK" 2>/dev/null)-$(cat "$TOK" 2>/dev/null)" = "640-otel-token-1"
ino=$(stat -c %i "$TOK")
cce "$R" apply-desired 2>/dev/null
check "... not rewritten when unchanged" test "$(stat -c %i "$TOK")" = "$ino"
rm -f "$TOK"
cce "$R" apply-desired 2>/dev/null
check "... written again after it was removed on the node" test "$(cat "$TOK" 2>/dev/null)" = otel-token-1

# --- a malformed record of gardener-node-agent: not trusted, a full apply
R2=$W/root2
mkdir -p "$R2/var/lib/gardener-node-agent"
printf 'spec:\n  units: {oops\n' >"$R2/var/lib/gardener-node-agent/last-applied-osc.yaml"
"$CCE" --root "$R2" --config "$W/config.json" --no-systemd --log stderr check "$W/v2.yaml" >"$W/check2.out" 2>"$W/check2.log"
check "a malformed gardener-node-agent record: one warning, full apply" \
	bash -c "grep -q \"gardener-node-agent's /var/lib/gardener-node-agent/last-applied-osc.yaml does not parse; doing a full apply\" '$W/check2.log' && grep -qx 'units: restart: containerd.service kubelet.service na-takeover-a.service; superseded: gardener-node-agent.service' '$W/check2.out'"
finish
