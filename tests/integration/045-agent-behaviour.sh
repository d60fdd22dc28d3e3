#!/bin/bash
# node-agent on its own against the TLS test API server, with a stand-in for
# cloud-config-exec (a loop answering desired.json with result.json as told
# by $S/exec-mode: ok, fail or none), in a private network namespace and a
# scratch root: --check-config, --once exit codes (0 applied, 1 apply failed
# or timed out, 2 bad config, 3 API down), the SSH host keys annotation, the
# Secret-name label, restart requests (valid and invalid), bearer token
# rotation, the bootstrap token fallback, SIGHUP with a broken config,
# SIGTERM within a second, and idle: no request but the two watches.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
kube_netns "$@"
AGENT=$B/node-agent
[ -x "$AGENT" ] || skip_all "node-agent is not built"

S=$(scratch)
ROOT=$S/root
mkdir -p "$ROOT/var/lib/cloud-config-exec" "$ROOT/etc/ssh"
osc() { printf 'spec:\n  files:\n  - path: /etc/hello\n    content:\n      inline:\n        data: "v%s"\n' "$1"; }
osc 1 >"$S/v1.yaml"
KUBE_OSC=$S/v1.yaml kube_start "$S" \
	--token "rotated-token=system:serviceaccount:kube-system:rotated" \
	--secret-reader system:serviceaccount:kube-system:rotated \
	--node-admin system:serviceaccount:kube-system:rotated || { fail "test API server starts"; finish; exit 1; }
ssh-keygen -q -t ed25519 -N '' -C root@test -f "$ROOT/etc/ssh/ssh_host_ed25519_key"

config() { # FILE [JSON merged over the defaults]
	python3 - "$1" "${2:-{\}}" <<-'EOF'
	import json, os, sys
	e = os.environ
	c = {"apiServer": {"server": e["KUBE_API"], "caFile": e["KUBE_PKI"] + "/ca.crt", "tokenFile": e["KUBE_DIR"] + "/token"},
	     "node": {"name": e["KUBE_NODE"], "kubernetesVersion": "1.31.1"},
	     "osc": {"secretName": e["KUBE_SECRET"]},
	     "timeouts": {"connectMs": 1000, "requestMs": 3000, "watchIdleMs": 75000, "applyMs": 3000},
	     "lease": {"enabled": False}, "events": {"enabled": False}}
	for k, v in json.loads(sys.argv[2]).items():
	    c.setdefault(k, {}).update(v)
	    for kk in [kk for kk, vv in c[k].items() if vv is None]:
	        del c[k][kk]
	json.dump(c, open(sys.argv[1], "w"))
	os.chmod(sys.argv[1], 0o600)
	EOF
}
export KUBE_API KUBE_DIR KUBE_PKI KUBE_NODE KUBE_SECRET
CONF=$S/agent.json
config "$CONF"

# The stand-in executor.
echo ok >"$S/exec-mode"
python3 - "$ROOT" "$S/exec-mode" <<-'EOF' &
import json, os, sys, time
root, modef = sys.argv[1:]
des = root + "/var/lib/node-agent/desired.json"
res = root + "/var/lib/cloud-config-exec/result.json"
done = None
while True:
    time.sleep(0.05)
    try:
        d = json.load(open(des))
        mode = open(modef).read().strip()
    except Exception:
        continue
    if mode == "none" or (d["generation"], mode) == done:
        continue
    r = {"version": 1, "checksum": d["checksum"], "generation": d["generation"], "success": mode == "ok",
         "changedUnits": [], "finishedAt": int(time.time())}
    if mode != "ok":
        r.update(failedStep="files", error="stand-in failure")
    if "restart" in d:
        r["restartId"] = d["restart"]["id"]
    open(res + ".tmp", "w").write(json.dumps(r))
    os.rename(res + ".tmp", res)
    done = (d["generation"], mode)
EOF
FAKE=$!
on_exit "kill $FAKE"
ANN=checksum/cloud-config-data
sum() { sha256sum "$1" | cut -d' ' -f1; }
# wait_ann KEY VALUE [SECONDS]: until the Node's annotation KEY is VALUE ("" = absent).
wait_ann() {
	local i
	for ((i = 0; i < ${3:-10} * 10; i++)); do
		[ "$(kube_annotation "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
once() { "$AGENT" --once --root "$ROOT" --config "${1:-$CONF}" >>"$S/once.log" 2>&1; echo $?; }

# --- --check-config
check "--check-config accepts the config" "$AGENT" --check-config --config "$CONF"
config "$S/bad.json" '{"osc": {"secretName": null}}'
out=$("$AGENT" --check-config --config "$S/bad.json" 2>&1)
check "--check-config names a missing key" grep -q "osc.secretName: required" <<<"$out"
config "$S/noca.json" '{"apiServer": {"caFile": "/nonexistent/ca.crt"}}'
out=$("$AGENT" --check-config --config "$S/noca.json" 2>&1)
check "--check-config names an unreadable CA file" grep -q 'apiServer.caFile "/nonexistent/ca.crt"' <<<"$out"
echo '{"apiServer": {"caFile": 1}}' >"$S/type.json"
out=$("$AGENT" --check-config --config "$S/type.json" 2>&1)
check "--check-config: wrong type, with file and key" [ "$out" = "$S/type.json: apiServer.caFile: expected a string" ]

# --- --once
check "--once: 0 when applied" [ "$(once)" = 0 ]
check "--once: the Node carries the checksum" [ "$(kube_annotation $ANN)" = "$(sum "$S/v1.yaml")" ]
check "--once: and the kubernetes-version label" [ "$(kube_label worker.gardener.cloud/kubernetes-version)" = 1.31.1 ]
hk=$(cut -d' ' -f1,2 "$ROOT/etc/ssh/ssh_host_ed25519_key.pub")
check "--once: the SSH host key is published without its comment" [ "$(kube_annotation node-agent.gardener.cloud/ssh-host-keys)" = "$hk" ]
check "desired.json is 0600" [ "$(stat -c %a "$ROOT/var/lib/node-agent/desired.json")" = 600 ]
generation() { jget "d['generation']" <"$ROOT/var/lib/node-agent/desired.json"; }
gen=$(generation)
rc=$(once)
check "--once again: 0 (rc $rc), desired.json not rewritten (generation $(generation), was $gen)" \
	[ "$rc" = 0 -a "$(generation)" = "$gen" ]
osc 2 >"$S/v2.yaml"
kube_secret "$S/v2.yaml" >/dev/null
echo fail >"$S/exec-mode"
check "--once: 1 when the apply fails" [ "$(once)" = 1 ]
check "--once: a failed apply leaves the annotation" [ "$(kube_annotation $ANN)" = "$(sum "$S/v1.yaml")" ]
grep -q 'failed to apply checksum .* at step files: stand-in failure' "$S/once.log"
check "--once: the failing step is logged" [ $? = 0 ]
# A new version, so that no result (the failure of v2 above) exists for it yet.
osc 22 >"$S/v22.yaml"
kube_secret "$S/v22.yaml" >/dev/null
echo none >"$S/exec-mode"
t0=$(date +%s%N)
rc=$(once)
ms=$((($(date +%s%N) - t0) / 1000000))
check "--once: 1 when no result comes within applyMs (${ms} ms)" [ "$rc" = 1 -a "$ms" -ge 2900 -a "$ms" -lt 8000 ]
echo ok >"$S/exec-mode"
check "--once: 2 for a bad config" [ "$(once "$S/bad.json")" = 2 ]
config "$S/down.json" '{"apiServer": {"server": "https://127.0.0.1:6999"}}'
check "--once: 3 when the API server is unreachable" [ "$(once "$S/down.json")" = 3 ]
# A connection whose packets are dropped (a firewall, systemd's IP filter;
# here a listener with a full accept queue, which drops the SYNs) times out:
# the log names the host and what to check.
python3 - 6998 >"$S/fullq.out" <<-'EOF' &
import socket, sys, time
p = int(sys.argv[1])
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", p)); s.listen(0)
cs = []
for _ in range(3):
    c = socket.socket(); c.setblocking(False); c.connect_ex(("127.0.0.1", p)); cs.append(c)
print("ready", flush=True)
time.sleep(3600)
EOF
on_exit "kill $!"
wait_for 10 grep -q ready "$S/fullq.out"
config "$S/dropped.json" '{"apiServer": {"server": "https://127.0.0.1:6998"}}'
"$AGENT" --root "$ROOT" --config "$S/dropped.json" --once >"$S/dropped.log" 2>&1
check "--once: 3 when the connection times out" [ $? = 3 ]
check "  ... and the log names the host and what to check" grep -q \
	'connection to 127.0.0.1:6998 timed out: check the network path / firewall to the API server' "$S/dropped.log"
# READY=1 does not wait for the API server (a package upgrade's try-restart
# and a boot must not hang on it): it comes once the loop runs; STATUS= says
# there was no contact.
python3 - "$S/notify0" "$S/notify0.log" <<-'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        log.write(s.recv(4096).decode() + "\n")
EOF
on_exit "kill $!"
wait_for 5 test -S "$S/notify0"
t0=$(date +%s%N)
NOTIFY_SOCKET=$S/notify0 "$AGENT" --root "$ROOT" --config "$S/dropped.json" >"$S/dropped-daemon.log" 2>&1 &
pid0=$!
wait_for 10 grep -qx READY=1 "$S/notify0.log"
ms=$((($(date +%s%N) - t0) / 1000000))
check "READY=1 while the API server is unreachable (after $ms ms, < 5000)" grep -qx READY=1 "$S/notify0.log"
check "  ... STATUS= says there was no API contact" grep -q '^STATUS=.*no API contact yet' "$S/notify0.log"
kill $pid0
wait $pid0
# No configuration at all: one line naming the file, the stock user data and
# the example, exit 78 (the unit's RestartPreventExitStatus=), and
# --config-present (the unit's ExecCondition=) says the same with exit 1.
"$AGENT" --root "$ROOT" --config "$S/none.json" >"$S/noconf.log" 2>&1
check "no configuration: exit 78 (EX_CONFIG)" [ $? = 78 ]
check "  ... one line naming the file, the stock user data and the example" grep -q \
	"no configuration: neither $S/none.json nor Gardener's stock user data (/var/lib/gardener-node-agent/config-<version>.yaml) exists; write one (example: /etc/node-agent/config.json.example)" \
	"$S/noconf.log"
out=$("$AGENT" --config-present --config "$S/none.json" 2>&1)
rc=$?
check "--config-present: 1 without configuration ($rc), with the reason" \
	sh -c '[ "$1" = 1 ] && printf "%s\n" "$2" | grep -q "^no configuration: "' sh "$rc" "$out"
check "--config-present: 0 with one" "$AGENT" --config-present --config "$CONF"
kube_secret "$S/v1.yaml" >/dev/null

# --- the daemon, with a stand-in for systemd's notify socket
python3 - "$S/notify" "$S/notify.log" <<-'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        log.write(s.recv(4096).decode() + "\n")
EOF
on_exit "kill $!"
for ((i = 0; i < 50; i++)); do [ -S "$S/notify" ] && break; sleep 0.1; done
NOTIFY_SOCKET=$S/notify WATCHDOG_USEC=400000 "$AGENT" --root "$ROOT" --config "$CONF" >"$S/agent.log" 2>&1 &
PID=$!
on_exit "kill $PID"
t0=$(now)
osc 3 >"$S/v3.yaml"
sleep 1
kube_secret "$S/v3.yaml" >"$S/answer"
t0=$(jget "d['t']" <"$S/answer")
echo "# v3: $(jget "d['checksum']" <"$S/answer") local $(sum "$S/v3.yaml")"
check "daemon: a new Secret version is annotated" wait_ann $ANN "$(sum "$S/v3.yaml")" 10

# Secret-name label: switches to another Secret.
osc 4 >"$S/v4.yaml"
KUBE_SECRET=other-osc kube_secret "$S/v4.yaml" >/dev/null
t0=$(now)
kctl POST /node '{"name": "'"$KUBE_NODE"'", "labels": {"worker.gardener.cloud/gardener-node-agent-secret-name": "other-osc"}}' >/dev/null
check "label: the Secret it names is applied" wait_ann $ANN "$(sum "$S/v4.yaml")" 10
check "label: and watched by name" [ "$(kube_count "$t0" "e['watch'] and 'metadata.name%3Dother-osc' in e['path']")" -ge 1 ]

# Restart requests.
t0=$(now)
kctl POST /node '{"name": "'"$KUBE_NODE"'", "annotations": {"worker.gardener.cloud/restart-systemd-services": "kubelet,containerd.service"}}' >/dev/null
check "restart: the annotation is removed after the executor ran it" \
	wait_ann worker.gardener.cloud/restart-systemd-services "" 10
check "restart: desired.json carried the units" \
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["restart"]["units"] != ["kubelet.service", "containerd.service"])' \
	"$ROOT/var/lib/node-agent/desired.json"
t0=$(now)
kctl POST /node '{"name": "'"$KUBE_NODE"'", "annotations": {"worker.gardener.cloud/restart-systemd-services": "kubelet;reboot"}}' >/dev/null
check "restart: an invalid request is removed too" \
	wait_ann worker.gardener.cloud/restart-systemd-services "" 10
check "restart: and logged" grep -q 'invalid unit name "kubelet;reboot"' "$S/agent.log"

# Token rotation: the next request uses the new token.
printf 'rotated-token' >"$S/token.new"
mv "$S/token.new" "$S/token"
t0=$(now)
kctl POST /reset-watches >/dev/null
sleep 2
check "token file re-read: requests come as the rotated identity" \
	[ "$(kube_count "$t0" "e['user'] == 'system:serviceaccount:kube-system:rotated'")" -ge 1 ]
check "  ... and none with the old one" \
	[ "$(kube_count "$t0" "e['user'] == 'system:serviceaccount:kube-system:node-agent'")" -eq 0 ]
check "the token never appears in the log" bash -c "! grep -q 'rotated-token\|$KUBE_TOKEN' '$S/agent.log'"

# SIGHUP with a broken config: keeps running with the old one.
cp "$CONF" "$S/agent.json.good"
echo '{"apiServer": {"server": 42}}' >"$CONF"
kill -HUP $PID
sleep 1
check "SIGHUP with a broken config: still running" kill -0 $PID
check "  ... and says why" grep -q 'keeping the old one: .*apiServer.server: expected a string' "$S/agent.log"
# systemctl reload (ExecReload=) waits for READY=1 after RELOADING=1: both
# come for a reload that failed too, or the unit would stay "reloading".
check "SIGHUP: sd_notify RELOADING=1 with MONOTONIC_USEC, then READY=1" python3 -c '
import sys
l = open(sys.argv[1]).read().split("\n")
i = l.index("RELOADING=1")
assert l[i + 1].startswith("MONOTONIC_USEC=") and int(l[i + 1].split("=")[1]) > 0
assert "READY=1" in l[i + 2:]' "$S/notify.log"
cp "$S/agent.json.good" "$CONF"

# An outage that ends with the watch history forgotten (a restarted API
# server): a refused connection is retried within a second without growing
# the backoff, and the 410 that follows is re-read at once. (The Secret is
# other-osc by now: the label switched it.)
kctl POST /down >/dev/null
sleep 4
kctl POST /expire >/dev/null
t_before=$(now)
# The server's own time of /up: a re-read that comes before this shell
# takes its next timestamp (the agent retries within a second) counts too.
t0=$(kctl POST /up | jget "d['t']")
sleep 4
gap=$(kube_requests "$t_before" "not e['watch'] and e['path'].startswith('/api/v1/namespaces/kube-system/secrets/')" |
	head -n 1 | awk -v t0="$t0" '{ printf "%.2f", $1 - t0 }')
check "after an outage: the Secret re-read ${gap:-never} s after the server was back (<= 2.5)" \
	python3 -c "import sys; sys.exit(0 if '$gap' and float('$gap') <= 2.5 else 1)"

# Idle: nothing but the two watches.
sleep 2
t0=$(now)
sleep "${IDLE_SECONDS:-8}"
n=$(kube_count "$t0" "not e['watch']")
check "idle: no request besides the watches ($n)" [ "$n" -eq 0 ]
echo "# idle VmRSS $(awk '/VmRSS/{print $2}' /proc/$PID/status) kB, RssAnon $(awk '/RssAnon/{print $2}' /proc/$PID/status) kB"

check "sd_notify: READY=1" grep -qx READY=1 "$S/notify.log"
check "sd_notify: STATUS= names the applied checksum" grep -q "^STATUS=applied $(sum "$S/v4.yaml" | cut -c1-12)" "$S/notify.log"
n=$(grep -cx WATCHDOG=1 "$S/notify.log")
check "sd_notify: WATCHDOG=1 at half of WATCHDOG_USEC ($n pings)" [ "$n" -ge 20 ]

# SIGTERM: exit 0 within a second.
t0=$(date +%s%N)
kill -TERM $PID
wait $PID
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check "SIGTERM: exit 0 (rc $rc) within a second ($ms ms)" [ "$rc" = 0 -a "$ms" -lt 1000 ]

# Bootstrap token when there is no token file.
config "$S/boot.json" '{"apiServer": {"tokenFile": "/nonexistent/token", "bootstrapTokenFile": "'"$S"'/bootstrap"}}'
printf 'abcdef.0123456789abcdef\n' >"$S/bootstrap"
t0=$(now)
once "$S/boot.json" >/dev/null
check "bootstrap token: used when the token file is missing" \
	[ "$(kube_count "$t0" "e['user'] == 'system:bootstrap:abcdef' and '/secrets/' in e['path'] and e['status'] == 200")" -ge 1 ]

[ "$_fail" -eq 0 ] || { echo "--- agent.log"; tail -40 "$S/agent.log"; echo "--- once.log"; tail -20 "$S/once.log"; }
finish
