#!/bin/bash
# node-agent --check-config as the service would see it (agent/checkconfig.c):
# every setting with its source (config file, stock data, default); files
# the service user cannot read (a token 0600 root, a directory it cannot
# enter, the configuration file itself) fail the check although root can
# read them, checked in a child that drops to the user (here: nobody, via
# --service-user); stock user data with a machine name but no bootstrap
# token, no client.pem and no kubeconfig has no usable credential and
# fails, and passes once a bootstrap token is there; run as another user,
# it says it cannot check. No network, no API server.
source "$TESTS_DIR/lib/common.sh"
require_root
AGENT=$B/node-agent
getent passwd nobody >/dev/null || skip_all "needs the user nobody"

W=$(scratch)
chmod 0755 "$W" # mktemp -d makes 0700: nobody could enter nothing
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$W/ca.key" -out "$W/ca.crt" \
	-days 1 -subj /CN=ca 2>/dev/null
chmod 0644 "$W/ca.crt"
printf 'token\n' >"$W/token"
chmod 0600 "$W/token"
cat >"$W/c.json" <<EOF
{"apiServer": {"server": "https://127.0.0.1:6443", "caFile": "$W/ca.crt", "tokenFile": "$W/token"},
 "osc": {"secretName": "osc"}, "node": {"name": "n1"}, "paths": {"stateDir": "$W/state"}}
EOF
chmod 0644 "$W/c.json"

cc() { "$AGENT" --check-config --service-user nobody --config "$@" >"$W/out" 2>&1; echo $? >"$W/rc"; }
rc() { cat "$W/rc"; }

cc "$W/c.json"
check "a token root can read but the service user cannot: not OK (exit $(rc))" \
	sh -c "[ $(rc) = 1 ] && grep -q 'configuration NOT OK' '$W/out'"
check "  ... naming the file and the user" \
	grep -q "problem: apiServer.tokenFile \"$W/token\": not readable by the service user nobody: Permission denied" "$W/out"
check "  ... checked as that user" grep -q '^service user: nobody (uid [0-9]*): checked what it can read' "$W/out"

chmod 0644 "$W/token"
cc "$W/c.json"
check "readable by the service user: configuration OK (exit $(rc))" sh -c "[ $(rc) = 0 ] && tail -1 '$W/out' | grep -qx 'configuration OK'"
check "every setting with its source: the file's" grep -qE '^  apiServer.tokenFile +[^ ]+/token +config file$' "$W/out"
check "  ... and the defaults" grep -qE '^  osc.secretNamespace +kube-system +default$' "$W/out"
check "  ... all $(grep -c '^  [a-zA-Z]*\.[a-zA-Z]* ' "$W/out") of them (node-agent.conf(5))" \
	[ "$(grep -cE '^  [a-zA-Z]+\.[a-zA-Z]+ ' "$W/out")" -ge 45 ]
check "the credential in use is named" grep -q "^credential: bearer token from $W/token" "$W/out"
check "a /tmp path is flagged as hidden from the unit (PrivateTmp=)" \
	sh -c "case '$W' in /tmp/*) grep -q 'warning: apiServer.caFile .*PrivateTmp=yes' '$W/out';; *) true;; esac"

# A directory the user cannot enter.
mkdir -m 0700 "$W/private"
cp "$W/token" "$W/private/token"
sed "s|$W/token|$W/private/token|" "$W/c.json" >"$W/c2.json"
chmod 0644 "$W/c2.json"
cc "$W/c2.json"
check "a token in a directory the service user cannot enter: not OK" \
	sh -c "[ $(rc) = 1 ] && grep -q 'apiServer.tokenFile \"$W/private/token\": not readable by the service user nobody' '$W/out'"

# The configuration file itself.
chmod 0600 "$W/c.json"
cc "$W/c.json"
check "a configuration file only root can read: not OK" \
	sh -c "[ $(rc) = 1 ] && grep -q 'the configuration file \"$W/c.json\": not readable by the service user nobody' '$W/out'"
chmod 0644 "$W/c.json"

# Run as another user: it cannot check, and says so (not OK for the rest).
if command -v setpriv >/dev/null; then
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$AGENT" --check-config --service-user daemon --config "$W/c.json" >"$W/out" 2>&1
	check "run as another user: says it cannot check what the service user can read" \
		grep -q '^service user: daemon; cannot check what it can read (run --check-config as root or as daemon)' "$W/out"
fi

# Stock user data: a machine name (a client certificate through a CSR) but
# no bootstrap token, no client.pem and no kubeconfig.
G=$W/gna
mkdir -p "$G/credentials" "$W/state2"
cp "$W/ca.crt" "$G/cluster-ca.crt"
M=shoot--i512345--prod-eu1-workerpool1-z1-7d9f6-x2k9p # a real machine name's length
printf '%s\n' "$M" >"$G/machine-name"
cat >"$G/config-v1.149.3.yaml" <<EOF
apiVersion: nodeagent.config.gardener.cloud/v1alpha1
kind: NodeAgentConfiguration
apiServer:
  server: https://127.0.0.1:6443
  caFile: /var/lib/gardener-node-agent/cluster-ca.crt
controllers:
  operatingSystemConfig:
    secretName: osc-stock
EOF
cat >"$W/stock.json" <<EOF
{"gardener": {"nodeAgentDir": "$G"}, "node": {"name": "n1"}, "paths": {"stateDir": "$W/state2"}}
EOF
chmod 0644 "$W/stock.json"
cc "$W/stock.json"
check "stock data without any usable credential: not OK (exit $(rc))" \
	sh -c "[ $(rc) = 1 ] && grep -q 'problem: no usable credential' '$W/out'"
check "  ... the settings from stock data say so" grep -qE '^  apiServer.server +https://127.0.0.1:6443 +stock data' "$W/out"
check "  ... and osc.secretName" grep -qE '^  osc.secretName +osc-stock +stock data' "$W/out"
printf 'abcdef.0123456789abcdef' >"$G/credentials/bootstrap-token"
cc "$W/stock.json"
check "  ... with a bootstrap token: OK (exit $(rc))" sh -c "[ $(rc) = 0 ] && grep -q '^credential: client certificate for machine $M' '$W/out'"

[ "$_fail" -eq 0 ] || cat "$W/out"
finish
