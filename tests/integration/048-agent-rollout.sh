#!/bin/bash
# Paced rollouts (agent/rollout.c): the Node annotation
# node-agent.gardener.cloud/reconciliation-delay holds back an OSC change
# that would restart units, as gardener-node-agent does; the first apply, a
# change that restarts nothing (a file no unit depends on) and a restart
# request do not wait; a malformed delay is logged once and the last valid
# one stays in force (GNA's delayer.fetch); "0s" lets changes through at once.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require

DELAY=8
ANN=checksum/cloud-config-data
DELAY_ANN=node-agent.gardener.cloud/reconciliation-delay
W=$(scratch)
# osc KUBELET_CONF MOTD: /etc/kubelet.conf is in kubelet.service's filePaths,
# /etc/motd in no unit's.
osc() {
	cat <<-EOF
	spec:
	  files:
	  - path: /etc/kubelet.conf
	    permissions: 420
	    content:
	      inline:
	        data: "$1"
	  - path: /etc/motd
	    permissions: 420
	    content:
	      inline:
	        data: "$2"
	  units:
	  - name: kubelet.service
	    enable: true
	    content: |
	      [Service]
	      ExecStart=/bin/true
	    filePaths:
	    - /etc/kubelet.conf
	EOF
}
osc k1 m1 >"$W/v1.yaml"
elapsed() { python3 -c "print('%.1f' % ($1 - $2))"; }
# publish FILE: the Secret's new version; prints the time.
publish() { kube_secret "$1" | jget "d['t']"; }
set_delay() { kctl POST /node '{"name": "'"$KUBE_NODE"'", "annotations": {"'"$DELAY_ANN"'": "'"$1"'"}}' >/dev/null; }

# The Node carries the delay before the agent starts: the first apply ignores it.
S=$(scratch)
ROOT=$S/root
install -d -m 0755 "$ROOT" "$ROOT/etc" "$ROOT/home" "$ROOT/var" "$ROOT/var/lib" "$ROOT/opt"
KUBE_OSC=$W/v1.yaml kube_start "$S" --bookmark-interval 60 || { fail "test API server starts"; finish; exit 1; }
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
AGENT_CONF=$S/agent.json
agent_config "$AGENT_CONF" '{"timeouts": {"watchIdleMs": 120000}, "events": {"enabled": true}}' # few wake-ups of its own
set_delay "${DELAY}s"
exec_loop_start
# systemd's notify socket, to see STATUS=
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        log.write(s.recv(4096).decode() + "\n")' "$S/notify" "$S/notify.log" &
on_exit "kill $!"
for ((i = 0; i < 50; i++)); do [ -S "$S/notify" ] && break; sleep 0.1; done
t=$(now)
NOTIFY_SOCKET=$S/notify agent_start
ta=$(kube_wait_annotation $ANN "$(sha256 "$W/v1.yaml")" "$t" 20)
check "first apply: not delayed ($(elapsed "${ta:-0}" "$t") s < ${DELAY} s)" \
	python3 -c "import sys; sys.exit(0 if 0 < ${ta:-0} - $t < $DELAY - 0.5 else 1)"
check "the delay annotation is read" wait_log "reconciliation delay ${DELAY}000 ms" 0 10

# Only /etc/motd: no unit restarts, applied at once.
osc k1 m2 >"$W/v2.yaml"
t=$(publish "$W/v2.yaml")
ta=$(kube_wait_annotation $ANN "$(sha256 "$W/v2.yaml")" "$t" 20)
check "a file no unit depends on: applied at once ($(elapsed "${ta:-0}" "$t") s < ${DELAY} s)" \
	python3 -c "import sys; sys.exit(0 if 0 < ${ta:-0} - $t < $DELAY - 0.5 else 1)"
check "  ... logged as restarting no unit" grep -q "restarts no unit: written without waiting" "$S/agent.log"

# /etc/kubelet.conf: kubelet.service restarts, so the change waits; a restart
# request meanwhile goes through with the OSC in force.
osc k2 m2 >"$W/v3.yaml"
mark=$(log_mark)
t=$(publish "$W/v3.yaml")
check "a change that restarts kubelet.service is held" \
	wait_log "restarts units (file /etc/kubelet.conf (filePaths of kubelet.service) changed): held" "$mark" 5
check "  ... STATUS says what is held until when" \
	grep -qE "^STATUS=.*; OSC $(sha256 "$W/v3.yaml" | cut -c1-12) held until [0-9]{2}:[0-9]{2}:[0-9]{2} UTC \(reconciliation delay ${DELAY} s\)" "$S/notify.log"
kctl POST /node '{"name":"'"$KUBE_NODE"'","annotations":{"worker.gardener.cloud/restart-systemd-services":"kubelet"}}' >/dev/null
tr=$(kube_wait_annotation worker.gardener.cloud/restart-systemd-services "" "$t" 20)
check "a restart request during the hold: executed at once ($(elapsed "${tr:-0}" "$t") s)" \
	python3 -c "import sys; sys.exit(0 if 0 < ${tr:-0} - $t < $DELAY - 0.5 else 1)"
check "  ... with the OSC in force" [ "$(desired_checksum)" = "$(sha256 "$W/v2.yaml")" ]
ta=$(kube_wait_annotation $ANN "$(sha256 "$W/v3.yaml")" "$t" 30)
check "the held change applied after the delay ($(elapsed "${ta:-0}" "$t") s >= ${DELAY} s)" \
	python3 -c "import sys; sys.exit(0 if $DELAY - 0.5 <= ${ta:-0} - $t < $DELAY + 4 else 1)"

# A malformed delay: one log line, the last valid delay stays.
mark=$(log_mark)
set_delay "five minutes"
check "malformed delay: logged" wait_log "\"five minutes\": not a duration" "$mark" 10
kctl POST /node '{"name":"'"$KUBE_NODE"'","labels":{"x":"y"}}' >/dev/null # another Node event, same value
sleep 1
check "  ... once" [ "$(tail -n +"$((mark + 1))" "$S/agent.log" | grep -c "not a duration")" -eq 1 ]
osc k3 m2 >"$W/v4.yaml"
mark=$(log_mark)
t=$(publish "$W/v4.yaml")
check "  ... and the last valid delay stays in force" wait_log "held for the reconciliation delay, ${DELAY} s more" "$mark" 5
ta=$(kube_wait_annotation $ANN "$(sha256 "$W/v4.yaml")" "$t" 30)
# Nothing else happens meanwhile: the agent must wake up by itself when the delay ends.
check "  ... applied when it ends, not at the next unrelated wake-up ($(elapsed "${ta:-0}" "$t") s)" \
	python3 -c "import sys; sys.exit(0 if $DELAY - 0.5 <= ${ta:-0} - $t < $DELAY + 4 else 1)"

# "0s": no wait.
set_delay 0s
wait_log "reconciliation delay 0 ms" 0 10
osc k4 m2 >"$W/v5.yaml"
t=$(publish "$W/v5.yaml")
ta=$(kube_wait_annotation $ANN "$(sha256 "$W/v5.yaml")" "$t" 20)
check "delay 0s: a unit change applied at once ($(elapsed "${ta:-0}" "$t") s)" \
	python3 -c "import sys; sys.exit(0 if 0 < ${ta:-0} - $t < $DELAY - 0.5 else 1)"

# Node Events: each applied OSC, and a refused one.
kube_secret "$W/v5.yaml" wrong >/dev/null
events() { kctl GET "/events?namespace=default" | jget "[(e['involvedObject']['name'], e['type'], e['reason'], e['message']) for e in d['items']]"; }
check "Events: OSCApplied on the Node for each version, with its checksum" \
	python3 -c 'import json, sys
ev = json.loads(sys.argv[1])
sums = set(m.split()[3] for n, t, r, m in ev if r == "OSCApplied" and n == sys.argv[2] and t == "Normal")
sys.exit(0 if all(s[:12] in sums for s in sys.argv[3:]) else 1)' "$(events)" "$KUBE_NODE" \
	"$(sha256 "$W/v1.yaml")" "$(sha256 "$W/v3.yaml")" "$(sha256 "$W/v5.yaml")"
wait_ev() { events | grep -q "OSCRefused"; }
check "Events: OSCRefused (Warning) for a checksum mismatch" wait_for 10 wait_ev
refused_why() { events | grep -q 'Warning", "OSCRefused", "Secret [a-z0-9-]* refused: annotation checksum/data-script [0-9a-f]* does not match osc.yaml'; }
check "  ... saying why" refused_why

[ "$_fail" -eq 0 ] || dump_logs
finish
