# Helpers for end-to-end tests of node-agent + cloud-config-exec against the
# TLS test API server. Source after common.sh and kube.sh.
#
#   agent_require             skip unless node-agent and cloud-config-exec are built
#   agent_config FILE [JSON]  writes the agent's config (JSON deep-merged over
#                             the defaults below)
#   agent_start [ARGS]        starts node-agent --root $ROOT --config $AGENT_CONF
#   agent_stop                SIGTERM, wait (returns how many ms it took in $AGENT_STOP_MS)
#   exec_loop_start           the stand-in for the systemd path unit (see there)
#   exec_once                 runs cloud-config-exec once (like the timer)
#   desired_checksum / result_field EXPR / agent_rss_kb
#
# Layout: $S scratch, $ROOT the scratch root (--root), state below it.

AGENT=${AGENT:-$B/node-agent}
EXEC=${EXEC:-$B/cloud-config-exec}

agent_require() {
	[ -x "$AGENT" ] || skip_all "node-agent is not built yet ($AGENT missing)"
	[ -x "$EXEC" ] || skip_all "cloud-config-exec is not built yet ($EXEC missing)"
}

sha256() { sha256sum "$1" | cut -d' ' -f1; }

agent_config() {
	local file=$1 extra=${2:-'{}'}
	python3 - "$file" "$extra" <<-'EOF'
	import json, os, sys
	def merge(a, b):
	    for k, v in b.items():
	        if isinstance(v, dict) and isinstance(a.get(k), dict):
	            merge(a[k], v)
	        elif v is None:
	            a.pop(k, None)
	        else:
	            a[k] = v
	    return a
	env = os.environ
	cfg = {
	    "apiServer": {"server": env["KUBE_API"], "caFile": env["KUBE_PKI"] + "/ca.crt",
	                  "tokenFile": env["KUBE_DIR"] + "/token"},
	    "node": {"name": env["KUBE_NODE"], "kubernetesVersion": "1.31.1"},
	    "osc": {"secretNamespace": "kube-system", "secretName": env["KUBE_SECRET"],
	            "followSecretNameLabel": False},
	    "ssh": {"loginUser": "gardener", "createUser": False},
	    "paths": {"stateDir": "/var/lib/node-agent", "execStateDir": "/var/lib/cloud-config-exec",
	              "snapshot": "/var/lib/cloud-config-exec/authkeys.snap"},
	    # watchIdleMs above the bookmark interval of a real API server (about
	    # 60 s; the stand-in's default too), so a config that works here
	    # works against tests/lib/realkube.sh as well
	    "timeouts": {"connectMs": 1000, "requestMs": 3000, "watchIdleMs": 75000,
	                 "resyncMs": 300000, "applyMs": 10000},
	    "limits": {"responseMaxBytes": 4194304},
	    "lease": {"enabled": False},  # on in 044-agent-lease.sh; off here, so request counts stay as they were
	    "events": {"enabled": False},  # on in 048-agent-rollout.sh, for the same reason
	    "health": {"enabled": False},  # on in 066-agent-health.sh (a probe of 127.0.0.1:10248 per OSC with kubelet.service)
	}
	merge(cfg, json.loads(sys.argv[2]))
	with open(sys.argv[1], "w") as f:
	    json.dump(cfg, f, indent=2)
	os.chmod(sys.argv[1], 0o600)
	EOF
}

agent_start() {
	"$AGENT" --root "$ROOT" --config "$AGENT_CONF" --log-level "${AGENT_LOG_LEVEL:-info}" "$@" \
		</dev/null >>"$S/agent.log" 2>&1 &
	AGENT_PID=$!
	on_exit "kill $AGENT_PID 2>/dev/null; wait $AGENT_PID 2>/dev/null"
}

agent_stop() {
	local t0 i
	[ -n "${AGENT_PID:-}" ] || return 0
	t0=$(date +%s%N)
	kill -TERM "$AGENT_PID" 2>/dev/null
	for ((i = 0; i < 300; i++)); do
		kill -0 "$AGENT_PID" 2>/dev/null || break
		sleep 0.01
	done
	AGENT_STOP_MS=$((($(date +%s%N) - t0) / 1000000))
	wait "$AGENT_PID" 2>/dev/null
	AGENT_RC=$?
	AGENT_PID=
}

# In production a systemd path unit (units/cloud-config-exec.path) starts
# cloud-config-exec when desired.json changes. Tests have no systemd, so this
# loop stands in for it: it polls desired.json's mtime every 50 ms and runs
# the executor once per change (and once at start when the file exists).
exec_loop_start() {
	(
		last=
		while :; do
			m=$(stat -c "%i %y" "$ROOT/var/lib/node-agent/desired.json" 2>/dev/null)
			if [ -n "$m" ] && [ "$m" != "$last" ]; then
				last=$m
				exec_once
			fi
			sleep 0.05
		done
	) &
	EXEC_LOOP_PID=$!
	on_exit "kill $EXEC_LOOP_PID 2>/dev/null; wait $EXEC_LOOP_PID 2>/dev/null"
}

exec_once() {
	"$EXEC" --root "$ROOT" --config "$AGENT_CONF" --no-systemd apply-desired </dev/null >>"$S/exec.log" 2>&1
	echo "exec rc=$? at $(date +%s.%N)" >>"$S/exec.log"
}

desired_file() { echo "$ROOT/var/lib/node-agent/desired.json"; }
result_file() { echo "$ROOT/var/lib/cloud-config-exec/result.json"; }
desired_checksum() { [ -e "$(desired_file)" ] && jget "d['checksum']" <"$(desired_file)"; }
# result_field EXPR: evaluates EXPR over result.json (d)
result_field() { [ -e "$(result_file)" ] && jget "$1" <"$(result_file)"; }
agent_rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/${1:-$AGENT_PID}/status"; }

# agent_e2e_setup OSCFILE [CONFIG-JSON] [SERVER-ARGS...]: scratch, server
# with the Secret from OSCFILE, config, executor loop, agent; waits until the
# Node carries the checksum (returns 1 after 20 s).
agent_e2e_setup() {
	local osc=$1 extra=${2:-'{}'}
	shift 2 || shift $#
	S=$(scratch)
	ROOT=$S/root
	# the base directories of an installed system, with their usual modes
	install -d -m 0755 "$ROOT" "$ROOT/etc" "$ROOT/home" "$ROOT/var" "$ROOT/var/lib" "$ROOT/opt"
	KUBE_OSC=$osc kube_start "$S" "$@" || return 1
	export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
	AGENT_CONF=$S/agent.json
	agent_config "$AGENT_CONF" "$extra"
	exec_loop_start
	T_START=$(now)
	agent_start
	kube_wait_annotation checksum/cloud-config-data "$(sha256 "$osc")" "$T_START" 20 >/dev/null
}

# The start of the API fault tests (041, 042): one file, /etc/hello, that says
# "WORD N" in version N.
#   hello_osc N                  prints version N of that OSC
#   hello_state                  desired checksum, /etc/hello, the Node's annotation
#   hello_e2e WORD [CONFIG-JSON] [SERVER-ARGS...]
#                                version 1 in $W/v1.yaml through agent_e2e_setup
#                                (the test ends there when it fails); sets v=1 and
#                                good=$(hello_state)
hello_osc() {
	printf 'spec:\n  files:\n  - path: /etc/hello\n    permissions: 420\n    content:\n      inline:\n        data: "%s %s"\n' \
		"$HELLO_WORD" "$1"
}
hello_state() { echo "$(desired_checksum) $(cat "$ROOT/etc/hello" 2>/dev/null) $(kube_annotation checksum/cloud-config-data)"; }
hello_e2e() {
	HELLO_WORD=$1
	shift
	W=$(scratch)
	v=1
	hello_osc $v >"$W/v1.yaml"
	if ! agent_e2e_setup "$W/v1.yaml" "$@"; then
		fail "agent applies the first OSC"
		dump_logs
		finish
		exit 1
	fi
	ok "agent applies the first OSC"
	good=$(hello_state)
}

# wait_hit SINCE FILTER [TIMEOUT]: waits until the request log has an entry
# matching FILTER (the agent ran into the fault); false after TIMEOUT (20 s).
wait_hit() {
	local i
	for ((i = 0; i < ${3:-20} * 5; i++)); do
		[ "$(kube_count "$1" "$2")" -ge 1 ] && return 0
		sleep 0.2
	done
	return 1
}

# log_mark: the agent log's current line count, for wait_log.
log_mark() { wc -l <"$S/agent.log"; }

# wait_log TEXT MARK [TIMEOUT]: waits until the agent logged TEXT (a fixed
# string) after line MARK; false after TIMEOUT (20 s).
wait_log() {
	local i
	for ((i = 0; i < ${3:-20} * 5; i++)); do
		tail -n +"$(($2 + 1))" "$S/agent.log" | grep -qF -- "$1" && return 0
		sleep 0.2
	done
	return 1
}

# dump_logs: for failures, the tails of every log.
dump_logs() {
	echo "--- agent.log"; tail -n 40 "$S/agent.log" 2>/dev/null
	echo "--- exec.log"; tail -n 20 "$S/exec.log" 2>/dev/null
	echo "--- requests"; kube_requests 0 | tail -n 30
	echo "--- journal (node-agent, cloud-config-exec)"
	journalctl -q --no-pager -n 30 -t node-agent -t cloud-config-exec --since "-5min" 2>/dev/null
}
