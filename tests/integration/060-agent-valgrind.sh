#!/bin/bash
# node-agent, the long-lived daemon, over a scripted session against the TLS
# test API server: Secret updates (each applied by cloud-config-exec and
# annotated), Node changes, watch resets (reconnects), a forgotten watch
# history (410 and a re-GET), and configuration reloads by SIGHUP.
#
#  1. under valgrind (memcheck, --leak-check=full,
#     --errors-for-leak-kinds=definite,indirect, --error-exitcode=99): no
#     invalid access, no definite or indirect leak at exit. valgrind 3.19
#     does not implement seccomp(2) (syscall 317: "unhandled amd64-linux
#     syscall", the filter cannot be loaded), so this run uses the
#     documented debugging option --no-sandbox; the native run below keeps
#     the filter on;
#  2. natively, a longer session: VmRSS sampled after each quarter; the
#     growth from the first to the last sample must stay under RSS_SLACK_KB.
#
# Counts what happened from the server's request log and prints
# "agent-valgrind: N events ..." lines.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require
command -v valgrind >/dev/null || skip_all "valgrind not installed (scripts/install-deps)"
# valgrind cannot run an ASan binary; make check-sanitize has LeakSanitizer
# at every exit instead.
if sanitized "$B/node-agent"; then
	skip_all "sanitizer build: valgrind and ASan exclude each other (LeakSanitizer checks leaks there)"
fi

ANN=checksum/cloud-config-data
VG_ROUNDS=${VG_ROUNDS:-$(sized 12 35)}   # Secret versions under valgrind (CI, make soak)
RSS_ROUNDS=${RSS_ROUNDS:-$(sized 40 100)} # Secret versions natively
RSS_SLACK_KB=${RSS_SLACK_KB:-1024} # allowed VmRSS growth, first to last sample
osc() { printf 'spec:\n  files:\n  - path: /etc/hello\n    permissions: 420\n    content:\n      inline:\n        data: "hello %s %s"\n' "$1" "$(head -c 200 /dev/zero | tr '\0' x)"; }
W=$(scratch)
VG_LOG=$W/valgrind.log
# The wrapper keeps agent.sh's agent_start: AGENT is whatever it execs.
cat >"$W/agent-vg" <<EOF
#!/bin/sh
exec valgrind -q --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \\
	--error-exitcode=99 --track-fds=no --num-callers=30 --log-file="$VG_LOG" "$B/node-agent" --no-sandbox "\$@"
EOF
chmod +x "$W/agent-vg"

# session ROUNDS: the script; prints nothing, counts into EVENTS, samples
# VmRSS into RSS[] after each quarter. Returns 1 when a version was not
# annotated in time.
session() {
	local rounds=$1 i t0 sum q=$(( $1 / 4 ))
	EVENTS=0 RELOADS=0 RESETS=0 RSS=()
	for ((i = 1; i <= rounds; i++)); do
		osc "$i" >"$W/cur.yaml"
		sum=$(sha256 "$W/cur.yaml")
		t0=$(kube_secret "$W/cur.yaml" | jget "d['t']")
		EVENTS=$((EVENTS + 1))
		if ! kube_wait_annotation $ANN "$sum" "$t0" "${WAIT:-30}" >/dev/null; then
			echo "# version $i was not annotated within ${WAIT:-30}s"
			return 1
		fi
		# A Node change the agent must look at and ignore.
		kctl POST /node '{"name": "'"$KUBE_NODE"'", "annotations": {"test/round": "'$i'"}}' >/dev/null
		EVENTS=$((EVENTS + 1))
		if ((i % 5 == 0)); then
			kctl POST /reset-watches >/dev/null
			RESETS=$((RESETS + 1))
		fi
		if ((i % 11 == 0)); then
			kctl POST /expire >/dev/null
			kctl POST /reset-watches >/dev/null
			RESETS=$((RESETS + 1))
		fi
		if ((i == rounds / 3 || i == 2 * rounds / 3)); then
			# A reload with a changed configuration (another idle deadline).
			agent_config "$AGENT_CONF" '{"timeouts": {"watchIdleMs": '$((9000 + i))'}}'
			kill -HUP "$AGENT_PID"
			RELOADS=$((RELOADS + 1))
		fi
		if ((q > 0 && i % q == 0)); then
			RSS+=("$(agent_rss_kb)")
		fi
	done
	return 0
}

# --- 1. valgrind
osc 0 >"$W/v0.yaml"
AGENT=$W/agent-vg
# valgrind starts slowly: agent_e2e_setup's 20 s may not be enough.
if ! agent_e2e_setup "$W/v0.yaml" '{}' --bookmark-interval 2 &&
	! kube_wait_annotation $ANN "$(sha256 "$W/v0.yaml")" "$T_START" 60 >/dev/null; then
	fail "node-agent under valgrind applies the first OSC"
	dump_logs
	cat "$VG_LOG"
	finish
	exit 1
fi
ok "node-agent under valgrind (--no-sandbox) applies the first OSC"
T0=$(now)
WAIT=60 session "$VG_ROUNDS"
check "valgrind session: every one of $VG_ROUNDS Secret versions applied and annotated" [ $? -eq 0 ]
check "the agent was still running at the end" kill -0 "$AGENT_PID"
n_watch=$(kube_count "$T0" "e['watch']")
n_patch=$(kube_count "$T0" "e['method'] == 'PATCH'")
n_get=$(kube_count "$T0" "e['method'] == 'GET' and not e['watch']")
agent_stop
# Each of the agent's patches comes back to it as a Node event, too.
echo "agent-valgrind: $((EVENTS + n_patch)) watch events ($EVENTS Secret updates + Node changes, $n_patch from its own patches), $RESETS watch resets, $RELOADS SIGHUP reloads; the agent made $n_watch watch requests, $n_get GETs, $n_patch patches"
check "reloads logged" bash -c "[ \$(grep -c 'reloading configuration' '$S/agent.log') -eq $RELOADS ]"
check "valgrind exit status $AGENT_RC (99 = errors or definite/indirect leaks)" [ "$AGENT_RC" -eq 0 ]
check "valgrind reports no error" bash -c "! grep -qE 'Invalid (read|write|free)|uninitialised|definitely lost: [1-9]|indirectly lost: [1-9]' '$VG_LOG'"
if [ "$_fail" -ne 0 ]; then
	echo "--- valgrind log"
	head -n 80 "$VG_LOG"
	dump_logs
fi
kill "$EXEC_LOOP_PID" 2>/dev/null
wait "$EXEC_LOOP_PID" 2>/dev/null
kill "$KUBE_PID" 2>/dev/null
wait "$KUBE_PID" 2>/dev/null

# --- 2. native: VmRSS over a longer session
AGENT=$B/node-agent
osc 0 >"$W/n0.yaml"
if ! agent_e2e_setup "$W/n0.yaml" '{}' --bookmark-interval 2; then
	fail "native node-agent applies the first OSC"
	dump_logs
	finish
	exit 1
fi
rss0=$(agent_rss_kb)
session "$RSS_ROUNDS"
check "native session: every one of $RSS_ROUNDS Secret versions applied and annotated" [ $? -eq 0 ]
echo "agent-rss: $EVENTS events, $RESETS watch resets, $RELOADS reloads; VmRSS kB at start $rss0, after each quarter: ${RSS[*]}"
growth=$(( ${RSS[-1]:-0} - ${RSS[0]:-0} ))
check "VmRSS flat: ${growth} kB from the first to the last quarter (<= $RSS_SLACK_KB)" \
	[ "${#RSS[@]}" -ge 4 -a "$growth" -le "$RSS_SLACK_KB" ]
agent_stop
check "native agent exits 0 on SIGTERM" [ "$AGENT_RC" -eq 0 ]
finish
