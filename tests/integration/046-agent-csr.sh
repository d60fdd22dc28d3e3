#!/bin/bash
# node-agent's client certificate through the CertificateSigningRequest API,
# against the test API server's CSRs, Gardener-like approver and authorizer
# (a bootstrap token may only create and get CSRs), in a private network
# namespace: the round trip with the bootstrap token (name, subject, signer,
# usages, expirationSeconds; client.pem 0600; the Secret then read with the
# certificate), renewal at 80-88 % with the current certificate and a new
# key, and bad outcomes each with one clear line and no client.pem: denied,
# never approved, a certificate for another CN, another key, expired, another
# CA; Gardener's approver denying a bootstrap requester whose Node exists and
# an unknown Machine; an expired client.pem at start replaced through the
# bootstrap token, and without a bootstrap token one clear error.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
kube_netns "$@"
AGENT=$B/node-agent
[ -x "$AGENT" ] || skip_all "node-agent is not built"
command -v openssl >/dev/null || skip_all "openssl(1) missing"

S=$(scratch)
# Real-shaped: the pool's second machine; the first one's Node (not there yet)
MACHINE2=${KUBE_MACHINE%?????}q7m2p NODE_M1=ip-10-250-17-204.eu-central-1.compute.internal
ROOT=$S/root
mkdir -p "$ROOT/var/lib/cloud-config-exec"
printf 'spec:\n  files:\n  - path: /etc/hello\n    content:\n      inline:\n        data: "v1"\n' >"$S/v1.yaml"
KUBE_OSC=$S/v1.yaml kube_start "$S" --machine "$KUBE_MACHINE=$NODE_M1" --machine "$MACHINE2" \
	--secret-reader group:gardener.cloud:node-agents --node-admin group:gardener.cloud:node-agents \
	--bookmark-interval 3 ||
	{ fail "test API server starts"; finish; exit 1; }
# Gardener's node-agent authorizer: a bootstrap token reads no Secret.
kctl POST /policy '{"revokeSecret": "group:system:bootstrappers"}' >/dev/null
BT=$S/bootstrap-token
printf 'abcdef.0123456789abcdef\n' >"$BT"
PEM=$ROOT/var/lib/node-agent/client.pem
CN=gardener.cloud:node-agent:machine:$KUBE_MACHINE

config() { # MACHINE [JSON merged into "timeouts"]
	python3 - "$S/agent.json" "$1" "${2:-{\}}" <<-'PY'
	import json, os, sys
	e = os.environ
	c = {"apiServer": {"server": e["KUBE_API"], "caFile": e["KUBE_PKI"] + "/ca.crt",
	                   "bootstrapTokenFile": e["BT"]},
	     "node": {"name": e["KUBE_NODE"], "machineName": sys.argv[2]},
	     "osc": {"secretName": e["KUBE_SECRET"]},
	     "timeouts": {"connectMs": 1000, "requestMs": 3000, "watchIdleMs": 10000, "csrMs": 4000}}
	c["timeouts"].update(json.loads(sys.argv[3]))
	json.dump(c, open(sys.argv[1], "w"))
	os.chmod(sys.argv[1], 0o600)
	PY
}
export KUBE_API KUBE_DIR KUBE_PKI KUBE_NODE KUBE_SECRET BT MACHINE2


start() { # [LOG]: a fresh agent, its log in $S/LOG, its stdout (the console's) in $S/LOG.console
	LOG=$S/${1:-agent}.log
	: >"$LOG"
	"$AGENT" --root "$ROOT" --config "$S/agent.json" </dev/null >"$S/${1:-agent}.console" 2>>"$LOG" &
	APID=$!
	on_exit "kill $APID 2>/dev/null"
}
stop() { kill "$APID" 2>/dev/null; wait "$APID" 2>/dev/null; }
logged() { wait_for "${2:-20}" grep -q -- "$1" "$LOG"; }
csrs() { kctl GET /csrs; }
mode() { kctl POST /csr-mode "$1" >/dev/null; }
# csr_reqs USER WATCH [STATUS]: how many CSR requests by USER the server logged,
# watches (WATCH True) or GETs by name (False), with STATUS when given.
csr_reqs() {
	kctl GET /log | python3 -c '
import json, sys
u, w, st = sys.argv[1], sys.argv[2] == "True", sys.argv[3:]
print(sum(1 for r in json.load(sys.stdin)["requests"]
          if r["user"] == u and r["method"] == "GET" and "/certificatesigningrequests" in r["path"]
          and r["watch"] == w and (w or "/certificatesigningrequests/" in r["path"])
          and (not st or str(r["status"]) == st[0])))' "$@"
}
issued_ms() { sed -n 's/.*client certificate issued after \([0-9]*\) ms.*/\1/p' "$LOG" | head -1; }

# --- 1. the round trip -------------------------------------------------------
config "$KUBE_MACHINE"
# The approver decides 0.5 s after the create: a 2 s poll would see the
# certificate 2 s after the create at the earliest, the watch at once.
mode '{"mode": "gardener", "lifetime": 12, "delay": 0.5}'
t0=$(now)
start rt
if logged "client certificate issued" 30; then
	# the first key, read at once: the renewal is due ~10 s later, which
	# the checks below can outlast on a loaded machine
	key1=$(openssl pkey -in "$PEM" -pubout 2>/dev/null | sha256sum)
	ok "CSR round trip: $(sed -n 's/.*\(client certificate issued after [0-9]* ms\).*/\1/p' "$LOG")"
else
	fail "CSR round trip"
	dump "agent log" cat "$LOG"
fi
check "client.pem is 0600 in the state directory ($(stat -c %a "$PEM" 2>&1))" test "$(stat -c %a "$PEM" 2>/dev/null)" = 600
check "... and holds the certificate and its key" sh -c 'grep -q "BEGIN CERTIFICATE" "$1" && grep -q "BEGIN PRIVATE KEY" "$1"' sh "$PEM"
check "... and nowhere else: no other key file below the root" \
	test "$(grep -rl 'PRIVATE KEY' "$ROOT" 2>/dev/null)" = "$PEM"
csrs >"$S/csrs.json"
first=$(jget 'sorted(d.values(), key=lambda o: o["metadata"]["creationTimestamp"])[0]' <"$S/csrs.json")
fieldof() { printf '%s' "$first" | jget "$1"; }
check "CSR name node-agent-csr-<43 base64url> ($(fieldof 'd["metadata"]["name"]'))" \
	sh -c 'printf "%s" "$1" | grep -Eqx "node-agent-csr-[A-Za-z0-9_-]{43}"' sh "$(fieldof 'd["metadata"]["name"]')"
check "CSR signer, usages, expirationSeconds as gardener-node-agent's" test \
	"$(fieldof '[d["spec"]["signerName"], d["spec"]["usages"], d["spec"]["expirationSeconds"]]')" = \
	'["kubernetes.io/kube-apiserver-client", ["digital signature", "key encipherment", "client auth"], 2592000]'
check "CSR created with the bootstrap token ($(fieldof 'd["spec"]["username"]'))" \
	test "$(fieldof 'd["spec"]["username"]')" = system:bootstrap:abcdef
subj=$(fieldof 'd["spec"]["request"]' | base64 -d | openssl req -noout -subject -nameopt RFC2253 2>&1)
check "CSR subject O=gardener.cloud:node-agents CN=$CN ($subj)" \
	test "$subj" = "subject=CN=$CN,O=gardener.cloud:node-agents"
check "CSR key is ECDSA P-256" sh -c 'printf "%s" "$1" | base64 -d | openssl req -noout -text | grep -q "NIST CURVE: P-256"' \
	sh "$(fieldof 'd["spec"]["request"]')"
check "the Secret is then read with the certificate (user $CN, 200)" wait_for 20 sh -c \
	'python3 "$1" ctl GET /log | python3 -c "import json,sys; sys.exit(not any(r[\"user\"] == \"$2\" and \"/secrets/\" in r[\"path\"] and r[\"status\"] == 200 for r in json.load(sys.stdin)[\"requests\"]))"' \
	sh "$TESTS_DIR/lib/kube-apiserver.py" "$CN"
check "the bootstrap token got no Secret (403 only)" sh -c \
	'python3 "$1" ctl GET /log | python3 -c "import json,sys; sys.exit(any(r[\"user\"] == \"system:bootstrap:abcdef\" and \"/secrets/\" in r[\"path\"] and r[\"status\"] == 200 for r in json.load(sys.stdin)[\"requests\"]))"' \
	sh "$TESTS_DIR/lib/kube-apiserver.py"
check "issuance seen through a watch on the CSR by name (bootstrap token, $(csr_reqs system:bootstrap:abcdef True 200) watch, $(csr_reqs system:bootstrap:abcdef False) GET by name)" \
	test "$(csr_reqs system:bootstrap:abcdef True 200)" -ge 1 -a "$(csr_reqs system:bootstrap:abcdef False)" = 0
check "... the certificate used $(issued_ms) ms after the create (approval at 500 ms; a 2 s poll: >= 2000)" \
	test "$(issued_ms)" -lt 2000
# --- 2. renewal (12 s lifetime: due after 9.6 .. 10.6 s) ----------------------
if wait_for 30 sh -c 'test "$(python3 "$1" ctl GET /csrs | python3 -c "import json,sys; print(sum(o[\"spec\"][\"username\"] == sys.argv[1] for o in json.load(sys.stdin).values()))" "$2")" -ge 1' \
	sh "$TESTS_DIR/lib/kube-apiserver.py" "$CN" && wait_for 10 sh -c 'test "$(grep -c "client certificate issued" "$1")" -ge 2' sh "$LOG"; then
	ok "renewed before expiry with the current certificate (CSR by $CN)"
else
	fail "renewal with the current certificate"
	dump "agent log" cat "$LOG"
fi
key2=$(openssl pkey -in "$PEM" -pubout 2>/dev/null | sha256sum)
check "... with a new key, swapped in place" test "$key1" != "$key2"
check "... without a restart (one process, no error)" sh -c 'kill -0 "$1" && ! grep -q "<err>\|error" "$2"' sh "$APID" "$LOG"
check "... the watch refused to the certificate (Gardener's node-agent authorizer): logged, then read by GET every 2 s ($(csr_reqs "$CN" True 403) watch 403, $(csr_reqs "$CN" False 200) GET)" \
	sh -c 'grep -q "cannot watch it (HTTP 403" "$1" && test "$2" -ge 1 -a "$3" -ge 1' sh "$LOG" \
	"$(csr_reqs "$CN" True 403)" "$(csr_reqs "$CN" False 200)"
# The test signer backdates notBefore by 5 s: lifetime 12 + 5 s.
renew=$(sed -n 's/.*valid until \([0-9]*\), renewal at \([0-9]*\).*/\1 \2/p' "$LOG" | head -1)
check "renewal point at 80-88 % of the lifetime ($renew)" python3 -c '
import sys; na, at = map(int, sys.argv[1].split()); nb = na - 17
f = (at - nb) / (na - nb); sys.exit(not 0.75 <= f <= 0.9)' "$renew"
stop

# --- 2b. killed (SIGKILL) while its CSR is pending: the restarted agent
# resumes that CSR (its key kept in csr-pending.pem), makes no second one.
rm -f "$PEM"
mode '{"mode": "gardener", "lifetime": 3600, "delay": 4}'
n0=$(csrs | jget 'len(d)')
start pending
check "a new CSR sent; its key kept in csr-pending.pem, 0600" wait_for 10 sh -c \
	'test "$(python3 "$1" ctl GET /csrs | python3 -c "import json,sys; print(len(json.load(sys.stdin)))")" -gt "$2" &&
	 test "$(stat -c %a "$3" 2>/dev/null)" = 600 && head -1 "$3" | grep -q "^# CSR node-agent-csr-"' \
	sh "$TESTS_DIR/lib/kube-apiserver.py" "$n0" "$ROOT/var/lib/node-agent/csr-pending.pem"
kill -KILL "$APID"
wait "$APID" 2>/dev/null
start pending2
check "... killed before the approval and started again: the same CSR resumed" logged "resuming the request of an earlier run" 10
check "... and issued" logged "client certificate issued" 20
check "... exactly one CSR for the two runs ($(($(csrs | jget 'len(d)') - n0)))" test "$(csrs | jget 'len(d)')" = $((n0 + 1))
check "... its key file removed once issued" test ! -e "$ROOT/var/lib/node-agent/csr-pending.pem"
stop

# --- 3. bad outcomes, each one clear line, no client.pem -----------------------
bad() { # DESCRIPTION MODE EXPECTED-LOG-SUBSTRING [MACHINE]
	rm -f "$PEM"
	mode "{\"mode\": \"$2\"}"
	config "${4:-$KUBE_MACHINE}"
	start "bad-$2"
	if logged "$3" 20; then
		ok "$1: $(grep -o "CSR [^ ]*: .*" "$LOG" | grep -- "$3" | head -1 | cut -c1-200)"
	else
		fail "$1"
		dump "agent log" cat "$LOG"
	fi
	check "... no client.pem" test ! -e "$PEM"
	check "... said on the console: $(head -1 "$S/bad-$2.console" | cut -c1-90)..." \
		wait_for 5 grep -q "^node-agent: WARNING: the node cannot join the cluster: CSR node-agent-csr-" "$S/bad-$2.console"
	stop
}
bad "denied CSR" deny 'denied, reason "RequestDenied"'
bad "failed CSR" fail 'failed, reason "SignerValidationFailure"'
bad "never approved" never "not issued within 4 s"
bad "certificate for another CN" wrong-cn "issued certificate refused: subject CN is"
bad "certificate for another key" wrong-key "issued certificate refused: the certificate is not for our key"
bad "expired certificate" expired "issued certificate refused: expired"
bad "the node's clock an hour behind the signer's" future "issued certificate refused: not valid before .* (3[56][0-9][0-9] s from now; clock off?)"
bad "certificate from another CA" other-ca "issued certificate refused: does not chain to the cluster CA"
bad "unknown Machine (Gardener's approver)" gardener 'machine "'"${KUBE_MACHINE%?????}"'zz9zz" does not exist' "${KUBE_MACHINE%?????}zz9zz"
kctl POST /node '{"name": "'"$NODE_M1"'"}' >/dev/null
bad "bootstrap token once the Node exists (Gardener's approver)" gardener "already bootstrapped"
kctl POST /node '{"name": "'"$NODE_M1"'", "delete": true}' >/dev/null

# expired_pem MACHINE: client.pem with a key and an expired certificate for
# MACHINE, signed by the cluster CA (the test signer's own code).
expired_pem() {
	python3 - "$TESTS_DIR/lib/kube-apiserver.py" "$KUBE_PKI" "$PEM" "$1" <<-'PY'
	import importlib.util, sys, types
	sys.dont_write_bytecode = True  # the repository tracks tests/lib/__pycache__
	spec = importlib.util.spec_from_file_location("kapi", sys.argv[1])
	k = importlib.util.module_from_spec(spec)
	spec.loader.exec_module(k)
	key, req = k.na_request(sys.argv[4])
	st = types.SimpleNamespace(args=types.SimpleNamespace(pki=sys.argv[2]))
	open(sys.argv[3], "wb").write(k.sign_csr(st, req, "expired", 0) + key)
	PY
	chmod 0600 "$PEM"
}

# --- 4. an expired client.pem at start ----------------------------------------
# every CSR watch refused (403): the bootstrap token's CSR is polled
mode '{"mode": "gardener", "watch": false, "delay": 0.5}'
expired_pem "$MACHINE2"
config "$MACHINE2"
start expired
if logged "not usable: expired" && logged "client certificate issued" 20; then
	ok "an expired client.pem at start: one line, a new certificate through the bootstrap token"
else
	fail "expired client.pem replaced through the bootstrap token"
	dump "agent log" cat "$LOG"
fi
check "... with every CSR watch refused: logged once, issued by the 2 s GET poll ($(issued_ms) ms)" \
	sh -c 'test "$(grep -c "cannot watch it (HTTP 403" "$1")" = 1 && test "$2" -ge 1900' sh "$LOG" "$(issued_ms)"
stop
expired_pem "$MACHINE2"
mv "$BT" "$BT.gone"
start nobt
check "expired and no bootstrap token: one clear error naming the file and why" \
	logged "bootstrap token file $BT is not usable: No such file or directory; waiting for one"
# the token file comes back: tried at once (a local look every 2 s), no restart
mv "$BT.gone" "$BT"
check "... the token file back: tried within 2 s, a certificate issued" logged "client certificate issued" 10
check "... the wait said once, nothing per look" \
	test "$(grep -c "waiting for one\|next attempt" "$LOG")" = 1
check "... the console said why, once, then that the node joined" wait_for 10 python3 -c '
import sys
l = open(sys.argv[1]).read().splitlines()
sys.exit(not (len(l) == 3 and "cannot join the cluster: no client certificate, and the bootstrap token file" in l[0]
              and "check the bootstrap token" in l[1] and l[2].startswith("node-agent: joined the cluster")))' "$S/nobt.console"
check "... and the agent keeps running (last good state stays)" kill -0 "$APID"
stop
mv "$BT" "$BT.gone"
# a token file the agent cannot use (a directory here: the test runs as
# root, whom no mode stops): named once, with the reason
expired_pem "$MACHINE2"
mkdir "$BT"
start badbt
check "expired and a bootstrap token file that cannot be read: named once with why" \
	logged "bootstrap token file $BT not usable: not a regular file"
sleep 3
check "... once ($(grep -c "not usable: not a regular file" "$LOG") lines in 3 s: the transport's and the CSR's)" \
	test "$(grep -c "not usable: not a regular file" "$LOG")" -le 2
stop
rmdir "$BT"
# expired, and a bootstrap token the server no longer knows (its Secret
# deleted; systemd's copy of the file still there): 401. A restarting API
# server answers 401 too until its caches are synced, so the CSR is tried
# again within a second for a quarter of csrMs (1 s here; 60 s by default);
# refused longer, one error naming what is needed, no 2 s polling with the
# dead token, retries backing off (30 s doubling to 10 min, half jitter: the
# next attempt 15-30 s later).
expired_pem "$MACHINE2"
printf 'zzzzzz.0123456789abcdef\n' >"$BT"
chmod 0600 "$BT"
t401=$(now)
start dead
check "expired and a dead bootstrap token (401): one clear error naming what is needed" \
	logged "has refused the bootstrap token for 1 s (HTTP 401"
sleep 8
n401=$(kctl GET /log | python3 -c '
import json, sys
t0 = float(sys.argv[1])
print(sum(1 for r in json.load(sys.stdin)["requests"]
          if r.get("status") == 401 and "/certificatesigningrequests" in r["path"] and r.get("t", 0) >= t0))' "$t401")
check "... the error once ($(grep -c "refused the bootstrap token" "$LOG")), naming a new bootstrap token or a valid certificate" \
	sh -c 'test "$(grep -c "refused the bootstrap token" "$1")" = 1 &&
		grep -q "Needed: a new bootstrap token in .* or a valid client certificate" "$1"' sh "$LOG"
check "... CSR requests answered 401 in 8 s: $n401, those of the first second (<= 8), not one every 2 s after" \
	test "$n401" -ge 2 -a "$n401" -le 8
check "... the same CSR all along: one named (the 401s were POSTs of one key)" \
	test "$(grep -o "CSR node-agent-csr-[^: ]*" "$LOG" | sort -u | wc -l)" = 1
check "... nothing logged per retry (no \"reading it failed\")" sh -c '! grep -q "reading it failed" "$1"' sh "$LOG"
check "... the console said why, once" test "$(grep -c "cannot join the cluster: the API server has refused the bootstrap token for 1 s" "$S/dead.console")" = 1
check "... and the agent keeps running" kill -0 "$APID"
stop
mv "$BT.gone" "$BT"

# nobody listening at the API server's address: the console says so at once,
# once (gardener-node-agent's bootstrap test and hint), not per retry
KUBE_API=https://127.0.0.1:6449 config "$MACHINE2"
start unreachable
wait_for 10 grep -q "^node-agent: WARNING: the node cannot join the cluster: no answer from the API server at https://127.0.0.1:6449: " \
	"$S/unreachable.console"
check "no API server: the console says why ($(head -1 "$S/unreachable.console" | cut -c 1-150)...)" grep -q \
	"^node-agent: WARNING: the node cannot join the cluster: no answer from the API server at https://127.0.0.1:6449: " \
	"$S/unreachable.console"
check "... with gardener-node-agent's hint" grep -qx "node-agent: Node may fail to join the cluster - check network configuration and API server endpoint https://127.0.0.1:6449" "$S/unreachable.console"
sleep 2
check "... once, not per retry" test "$(wc -l <"$S/unreachable.console")" = 2
stop
config "$MACHINE2"
check "stdout carries nothing but those lines (the log goes to stderr, to the journal under systemd)" \
	sh -c '! cat "$@" | grep -v "^node-agent: "' sh "$S"/*.console

# --- 5. stock user data only, and a Node that does not exist yet ----------------
# gardener.nodeAgentDir alone: server, CA, Secret, machine name and bootstrap
# token come from the stock files; the OSC is handed over before the Node
# exists, with kubeletBootstrap (nodeRegistered false) so the executor writes
# the kubelet's bootstrap kubeconfig; once the Node appears (watched), the
# desired state says registered and the Node is annotated.
G=$S/gna
mkdir -p "$G/credentials"
cp "$KUBE_PKI/ca.crt" "$G/cluster-ca.crt"
printf 'abcdef.0123456789abcdef' >"$G/credentials/bootstrap-token"
printf '%s\n' "$MACHINE2" >"$G/machine-name"
printf 'eu-west-1a\n' >"$G/zone"
cat >"$G/config-v1.149.3.yaml" <<-GNA
	apiVersion: nodeagent.config.gardener.cloud/v1alpha1
	kind: NodeAgentConfiguration
	apiServer:
	  server: $KUBE_API
	  caFile: /var/lib/gardener-node-agent/cluster-ca.crt
	controllers:
	  operatingSystemConfig:
	    secretName: $KUBE_SECRET
	    kubernetesVersion: 1.33.2
	GNA
printf '{"gardener": {"nodeAgentDir": "%s"}, "node": {"name": "node-late"}, "timeouts": {"connectMs": 1000, "requestMs": 3000}}\n' "$G" >"$S/agent.json"
rm -f "$PEM" "$ROOT/var/lib/node-agent/desired.json"
start stock
DES=$ROOT/var/lib/node-agent/desired.json
kb() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])).get("kubeletBootstrap"); print(d and json.dumps([d["server"], d["caFile"], d["tokenFile"], d["nodeRegistered"]]))' "$DES" 2>/dev/null; }
want='["'$KUBE_API'", "'$G'/cluster-ca.crt", "'$G'/credentials/bootstrap-token", false]'
if wait_for 30 sh -c 'test "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])).get(\"kubeletBootstrap\") or {}; print(d.get(\"nodeRegistered\"))" "$1" 2>/dev/null)" = False' sh "$DES"; then
	ok "stock data only, no Node yet: the OSC is handed over with kubeletBootstrap ($(kb))"
else
	fail "desired.json before the Node exists"
	dump "agent log" cat "$LOG"
fi
check "... naming the host paths of the stock CA and token, not the agent's copies" test "$(kb)" = "$want"
kctl POST /node '{"name": "node-late"}' >/dev/null
check "the Node appears (watched): nodeRegistered true in the desired state" \
	wait_for 20 sh -c 'grep -q "\"nodeRegistered\":[[:space:]]*true" "$1"' sh "$DES"
python3 - "$DES" "$ROOT/var/lib/cloud-config-exec/result.json" <<-'PY'
	import json, os, sys, time
	d = json.load(open(sys.argv[1]))
	r = {"version": 1, "checksum": d["checksum"], "generation": d["generation"], "success": True,
	     "changedUnits": [], "finishedAt": int(time.time())}
	open(sys.argv[2] + ".tmp", "w").write(json.dumps(r))
	os.rename(sys.argv[2] + ".tmp", sys.argv[2])
	PY
check "... and annotated once the executor reports success" \
	wait_for 20 sh -c 'test -n "$(python3 "$1" ctl GET "/node?name=node-late" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"metadata\"].get(\"annotations\", {}).get(\"checksum/cloud-config-data\", \"\"))")"' \
	sh "$TESTS_DIR/lib/kube-apiserver.py"
check "... with the kubernetes-version label from the stock config (1.33.2)" \
	test "$(kube_label worker.gardener.cloud/kubernetes-version node-late)" = 1.33.2
has_labels() { kctl GET "/node?name=node-late" | python3 -c '
import json, sys
l = json.load(sys.stdin)["metadata"].get("labels", {})
sys.exit(not (l.get("node-role.kubernetes.io/worker") == "" and l.get("topology.kubernetes.io/zone") == "eu-west-1a"))'; }
check "... and labelled node-role.kubernetes.io/worker=\"\" and topology.kubernetes.io/zone from the zone file" \
	wait_for 20 has_labels
# A patch upgrade: the OSC now carries gardener-node-agent's config for 1.33.3.
{
	cat "$S/v1.yaml"
	printf '  - path: /var/lib/gardener-node-agent/config-v1.149.4.yaml\n    permissions: 384\n    content:\n      inline:\n'
	printf '        encoding: b64\n        data: %s\n' "$(printf 'apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: NodeAgentConfiguration\ncontrollers:\n  operatingSystemConfig:\n    kubernetesVersion: 1.33.3\n' | base64 -w0)"
} >"$S/v2.yaml"
old_sum=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["checksum"])' "$DES")
kube_secret "$S/v2.yaml" >/dev/null
check "the new OSC is handed over" wait_for 20 sh -c 'test "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"checksum\"])" "$1")" != "$2"' sh "$DES" "$old_sum"
python3 - "$DES" "$ROOT/var/lib/cloud-config-exec/result.json" <<-'PY'
	import json, os, sys, time
	d = json.load(open(sys.argv[1]))
	r = {"version": 1, "checksum": d["checksum"], "generation": d["generation"], "success": True,
	     "changedUnits": [], "finishedAt": int(time.time())}
	open(sys.argv[2] + ".tmp", "w").write(json.dumps(r))
	os.rename(sys.argv[2] + ".tmp", sys.argv[2])
	PY
label_is() { test "$(kube_label worker.gardener.cloud/kubernetes-version node-late)" = "$1"; }
check "kubernetes-version label from gardener-node-agent's config in the OSC (1.33.3), not the static one" \
	wait_for 20 label_is 1.33.3
# SIGHUP (systemctl reload) with stock data: the agent reloads under its
# seccomp filter (reading the stock directory used dup(), not on the
# allow-list: the reload was killed by SIGSYS).
kill -HUP "$APID"
check "SIGHUP with stock data: configuration reloaded" logged "reloading configuration from"
sleep 1
check "  ... and the agent is still running (not killed by its seccomp filter)" kill -0 "$APID"

# Token sync: the OSC's config names two token Secrets; one has a token, the
# other none (one clear line, nothing handed over for it). Both are token
# Secrets Gardener's node-agent authorizer lets a node-agent read
# (gardener/gardener pkg/resourcemanager/webhook/nodeagentauthorizer/
# authorizer.go authorizeSecret: gardener-valitail,
# gardener-opentelemetry-collector, shoot-access-kube-controller-manager,
# shoot-access-kube-scheduler, shoot-access-cluster-admin).
kctl POST /secret "{\"namespace\": \"kube-system\", \"name\": \"gardener-opentelemetry-collector\", \"osc\": \"\", \"checksum\": \"none\", \"data\": {\"token\": \"$(printf 'otel-token-1' | base64 -w0)\"}}" >/dev/null
kctl POST /secret '{"namespace": "kube-system", "name": "gardener-valitail", "osc": "", "checksum": "none", "data": {"other": "eA=="}}' >/dev/null
{
	cat "$S/v1.yaml"
	printf '  - path: /var/lib/gardener-node-agent/config-v1.149.4.yaml\n    permissions: 384\n    content:\n      inline:\n'
	printf '        encoding: b64\n        data: %s\n' "$(printf 'apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: NodeAgentConfiguration\ncontrollers:\n  operatingSystemConfig:\n    kubernetesVersion: 1.33.3\n  token:\n    syncConfigs:\n    - secretName: gardener-opentelemetry-collector\n      path: /var/lib/otelcol/auth-token\n    - secretName: gardener-valitail\n      path: /var/lib/x/token\n    syncPeriod: 12h\n' | base64 -w0)"
} >"$S/v3.yaml"
kube_secret "$S/v3.yaml" >/dev/null
tokens_are() { test "$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])).get("tokens")))' "$DES" 2>/dev/null)" = "$1"; }
check "token sync: the token Secret's token is handed over for its path" \
	wait_for 20 tokens_are '[{"path": "/var/lib/otelcol/auth-token", "token": "otel-token-1"}]'
check "... a token Secret without \"token\": one clear line" \
	logged 'token sync: Secret kube-system/gardener-valitail for /var/lib/x/token: no key "token"'
check "... logged once" test "$(grep -c 'Secret kube-system/gardener-valitail' "$LOG")" = 1

# A newer gardener-node-agent config through the OSC, without a restart.
# osc_with VERSION YAML: v1's OSC plus config-VERSION.yaml holding YAML.
osc_with() {
	cat "$S/v1.yaml"
	printf '  - path: /var/lib/gardener-node-agent/config-%s.yaml\n    permissions: 384\n    content:\n      inline:\n' "$1"
	printf '        encoding: b64\n        data: %s\n' "$(printf 'apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: NodeAgentConfiguration\n%s' "$2" | base64 -w0)"
}
applied() { # reports the desired state's checksum as applied by the executor
	python3 - "$DES" "$ROOT/var/lib/cloud-config-exec/result.json" <<-'PY'
	import json, os, sys, time
	d = json.load(open(sys.argv[1]))
	r = {"version": 1, "checksum": d["checksum"], "generation": d["generation"], "success": True,
	     "changedUnits": [], "finishedAt": int(time.time())}
	open(sys.argv[2] + ".tmp", "w").write(json.dumps(r))
	os.rename(sys.argv[2] + ".tmp", sys.argv[2])
	PY
}
des_sum() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["checksum"])' "$DES" 2>/dev/null; }
tokens3='[{"path": "/var/lib/otelcol/auth-token", "token": "otel-token-1"}]'
# A malformed newest config (a wrong type): one clear line, the OSC itself is
# applied, token sync and the version label keep the last good settings.
osc_with v1.149.5 $'apiServer:\n  server: [5]\ncontrollers:\n  operatingSystemConfig:\n    kubernetesVersion: 1.34.0\n' >"$S/v4.yaml"
old_sum=$(des_sum)
kube_secret "$S/v4.yaml" >/dev/null
check "a malformed gardener-node-agent config in the OSC: one clear line" \
	logged "gardener-node-agent's configuration in the OSC is malformed: apiServer.server: expected a string"
check "... the OSC is still handed over" wait_for 20 sh -c 'test "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"checksum\"])" "$1")" != "$2"' sh "$DES" "$old_sum"
applied
check "... token sync keeps the last good settings" tokens_are "$tokens3"
check "... and the kubernetes-version label stays 1.33.3" label_is 1.33.3
check "... logged once" test "$(grep -c "configuration in the OSC is malformed" "$LOG")" = 1
# A newer one naming another OSC Secret: followed once that OSC is applied.
printf 'spec:\n  files:\n  - path: /etc/hello\n    content:\n      inline:\n        data: "from-osc-next"\n' >"$S/next.yaml"
KUBE_SECRET=osc-next kube_secret "$S/next.yaml" >/dev/null
# It also names the API server as localhost, with a CA bundle of the
# cluster CA and another one: the client is set up again.
cat "$KUBE_PKI/ca.crt" "$KUBE_PKI/other-ca.crt" >"$S/bundle.pem"
bundle=$(base64 -w0 <"$S/bundle.pem")
osc_with v1.150.0 $'apiServer:\n  server: '"${KUBE_API/127.0.0.1/localhost}"$'\n  caBundle: '"$bundle"$'\ncontrollers:\n  operatingSystemConfig:\n    secretName: osc-next\n    kubernetesVersion: 1.33.3\n  token:\n    syncConfigs:\n    - secretName: gardener-opentelemetry-collector\n      path: /var/lib/otelcol/auth-token\n' >"$S/v5.yaml"
old_sum=$(des_sum)
kube_secret "$S/v5.yaml" >/dev/null
check "a newer gardener-node-agent config through the OSC is handed over" wait_for 20 sh -c 'test "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"checksum\"])" "$1")" != "$2"' sh "$DES" "$old_sum"
check "... not followed before it is applied" sh -c '! grep -q "configuration in the OSC .*: now" "$1"' sh "$LOG"
applied
check "... once applied, its secretName is followed without a restart (logged)" \
	logged "osc.secretName \"$KUBE_SECRET\" -> \"osc-next\""
check "... and the server and CA bundle (written to the state directory)" \
	sh -c 'grep -q "now apiServer.caFile .* -> \"$1\", apiServer.server \"$2\" -> \"$3\", osc.secretName" "$4" && cmp -s "$1" "$5"' \
	sh "$ROOT/var/lib/node-agent/gna-cluster-ca.crt" "$KUBE_API" "${KUBE_API/127.0.0.1/localhost}" "$LOG" "$S/bundle.pem"
check "... the other Secret's OSC is handed over (through the new connection)" wait_for 20 grep -q from-osc-next "$DES"
check "... logged once" test "$(grep -c 'osc.secretName ".*" -> "osc-next"' "$LOG")" = 1
check "... the same agent process (no restart)" kill -0 "$APID"
stop

# --- 5b. the Node found by the kubernetes.io/hostname label ----------------------
# The kubelet registered the Node under another name than node.name (a cloud
# hostname override); its kubernetes.io/hostname label is this host's name,
# lowercased. As gardener-node-agent, the agent lists Nodes with that label
# selector (never all Nodes) while the Node by name is missing, follows the
# one it finds, and annotates it.
host=$(hostname | tr 'A-Z' 'a-z')
if [[ ! $host =~ ^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$ ]]; then
	echo "# skipped: the hostname \"$host\" is no label value"
else
	printf '{"gardener": {"nodeAgentDir": "%s"}, "node": {"name": "node-by-name"}, "timeouts": {"connectMs": 1000, "requestMs": 3000}}\n' "$G" >"$S/agent.json"
	kctl POST /node "{\"name\": \"node-by-label\", \"labels\": {\"kubernetes.io/hostname\": \"$host\"}}" >/dev/null
	kctl POST /node '{"name": "node-other-host", "labels": {"kubernetes.io/hostname": "another-host"}}' >/dev/null
	kube_secret "$S/v1.yaml" >/dev/null # no newer gardener-node-agent config to follow here
	t_list=$(now) # sub-second: the previous agent's last list may fall in the same second
	start bylabel
	check "Node node-by-name missing: Node node-by-label found by label kubernetes.io/hostname=$host (logged)" \
		logged "Node node-by-name does not exist; Node node-by-label has label kubernetes.io/hostname=$host: following it"
	if wait_for 20 sh -c 'grep -q "nodeRegistered\"[[:space:]]*:[[:space:]]*true" "$1"' sh "$DES"; then
		applied
		check "... and annotated once the executor reports success" \
			wait_for 20 sh -c 'test -n "$(python3 "$1" ctl GET "/node?name=node-by-label" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"metadata\"].get(\"annotations\", {}).get(\"checksum/cloud-config-data\", \"\"))")"' \
			sh "$TESTS_DIR/lib/kube-apiserver.py"
	else
		fail "the desired state says the Node (found by label) is registered"
	fi
	grep -q "checksum/cloud-config-data" <<<"$(kctl GET /node?name=node-by-label)" || dump "agent log" cat "$LOG"
	check "... the other host's Node untouched" test -z "$(kube_annotation checksum/cloud-config-data node-other-host)"
	lists=$(kctl GET "/log?since=$t_list" | python3 -c '
import json, sys
for e in json.load(sys.stdin)["requests"]:
    p = e.get("path", "")
    if e.get("method") == "GET" and p.startswith("/api/v1/nodes?") and "watch=1" not in p:
        print(p)' | sort -u)
	# (and by name: the watch reads its Node with a list by name, agent/watch.c)
	check "... Nodes only listed with the label selector or by name, never all ($(echo $lists | cut -c1-160))" \
		sh -c 'echo "$1" | grep -q "labelSelector=kubernetes.io%2Fhostname%3D" &&
			! echo "$1" | grep -v "labelSelector=kubernetes.io%2Fhostname%3D\|fieldSelector=metadata.name%3Dnode-by-"' sh "$lists"
	check "... logged once" test "$(grep -c 'has label kubernetes.io/hostname' "$LOG")" = 1
	stop
	kctl POST /node '{"name": "node-by-label", "delete": true}' >/dev/null
	kctl POST /node '{"name": "node-other-host", "delete": true}' >/dev/null
fi

# --- 6. a node migrating from gardener-node-agent keeps its identity -----------
# Its credentials/kubeconfig (certificate and key embedded) is adopted: no
# bootstrap token, no CSR.
python3 - "$TESTS_DIR/lib/kube-apiserver.py" "$KUBE_PKI" "$G/credentials/kubeconfig" "$KUBE_API" <<-'PY'
	import base64, importlib.util, os, sys, types
	sys.dont_write_bytecode = True
	spec = importlib.util.spec_from_file_location("kapi", sys.argv[1])
	k = importlib.util.module_from_spec(spec)
	spec.loader.exec_module(k)
	key, req = k.na_request(os.environ["MACHINE2"])
	st = types.SimpleNamespace(args=types.SimpleNamespace(pki=sys.argv[2]))
	cert = k.sign_csr(st, req, "gardener", 3600)
	b = lambda x: base64.b64encode(x).decode()
	open(sys.argv[3], "w").write(
	    "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority: /var/lib/gardener-node-agent/cluster-ca.crt\n"
	    "    server: %s\n  name: node-agent\ncontexts:\n- context:\n    cluster: node-agent\n    user: node-agent\n"
	    "  name: node-agent\ncurrent-context: node-agent\nkind: Config\npreferences: {}\nusers:\n- name: node-agent\n"
	    "  user:\n    client-certificate-data: %s\n    client-key-data: %s\n" % (sys.argv[4], b(cert), b(key)))
	PY
rm -f "$PEM" "$G/credentials/bootstrap-token"
n_csrs=$(csrs | jget 'len(d)')
start adopt
check "gardener-node-agent's kubeconfig adopted" logged "adopted gardener-node-agent's client certificate"
check "... client.pem written, 0600" test "$(stat -c %a "$PEM" 2>/dev/null)" = 600
check "... and used: requests as $MACHINE2 succeed" wait_for 20 sh -c 'grep -q "Secret .* verified" "$1"' sh "$LOG"
check "... without any new CSR" test "$(csrs | jget 'len(d)')" = "$n_csrs"
stop
# Under the sanitizer build, leaks and errors show at exit in the logs.
check_not "no sanitizer report in any agent log" grep -l 'Sanitizer\|runtime error' "$S"/*.log
finish
