#!/bin/bash
# kill -9 of node-agent at random instants (cloud-config-exec's own crash
# test is 022). KILL_RUNS times: publish a new Secret version, start the
# agent, SIGKILL it after a random 0..KILL_MAX_MS ms (spread over start-up,
# the GET, the checksum check and the desired.json write). After each kill
# ("survived" = all of these held):
#  - desired.json is absent (never written yet) or a complete document:
#    valid JSON whose checksum is the SHA-256 of its osc bytes and is one
#    of the versions published so far (never torn, never a mix);
#  - every CHECK_EVERY-th kill, cloud-config-exec accepts it (apply-desired
#    exits 0), i.e. the real consumer agrees.
# At the end a normal agent run converges: the last version is applied and
# annotated, and no temporary file is left in the agent's state directory
# (the agent removes those of an interrupted write when it starts).
# Random instants may or may not land inside the short write, so a second,
# deterministic phase kills the agent exactly before each write step of one
# desired.json write in turn (tests/lib/faultfs.c, FAULTFS_ERRNO=KILL) and
# checks the same things; at least one of those kills must leave a temporary
# behind (the write really was interrupted midway).
# Prints "agent-kill: N kills, M survived, W of them mid-write ...".
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require

KILL_RUNS=${KILL_RUNS:-$(sized 60 200)} # CI, make soak
KILL_MAX_MS=${KILL_MAX_MS:-400}
CHECK_EVERY=${CHECK_EVERY:-10}
ANN=checksum/cloud-config-data
# A few hundred KiB of OSC, so the write of desired.json takes a while.
osc() {
	printf 'spec:\n  files:\n'
	for f in 1 2 3 4; do
		printf '  - path: /etc/kill/f%s\n    permissions: 420\n    content:\n      inline:\n        encoding: b64\n        data: "%s"\n' \
			"$f" "$(head -c 60000 /dev/urandom | base64 -w0)"
	done
	printf '  - path: /etc/kill/version\n    permissions: 420\n    content:\n      inline:\n        data: "%s"\n' "$1"
}
W=$(scratch)
S=$W
ROOT=$S/root
mkdir -p "$ROOT"
osc 0 >"$W/v0.yaml"
KUBE_OSC=$W/v0.yaml kube_start "$S" || { fail "test API server starts"; finish; exit 1; }
export KUBE_API KUBE_PKI KUBE_DIR KUBE_NODE KUBE_SECRET
AGENT_CONF=$S/agent.json
agent_config "$AGENT_CONF" '{}'
DESIRED=$(desired_file)
sha256 "$W/v0.yaml" >"$W/published"

# valid: desired.json is absent or complete and one of the published versions.
valid() {
	[ -e "$DESIRED" ] || return 0
	python3 - "$DESIRED" "$W/published" <<-'EOF'
	import hashlib, json, sys
	d = json.load(open(sys.argv[1]))
	published = set(open(sys.argv[2]).read().split())
	ok = hashlib.sha256(d["osc"].encode()).hexdigest() == d["checksum"] and d["checksum"] in published
	sys.exit(0 if ok else 1)
	EOF
}

n=0 good=0 midwrite=0 written=0 consumer=0
for ((i = 1; i <= KILL_RUNS; i++)); do
	osc "$i" >"$W/cur.yaml"
	kube_secret "$W/cur.yaml" >/dev/null
	sha256 "$W/cur.yaml" >>"$W/published"
	before=$(stat -c %i "$DESIRED" 2>/dev/null)
	"$AGENT" --root "$ROOT" --config "$AGENT_CONF" --log-level warning </dev/null >>"$S/agent.log" 2>&1 &
	pid=$!
	sleep "$(awk -v r=$RANDOM -v m="$KILL_MAX_MS" 'BEGIN { printf "%.3f", (r % (m + 1)) / 1000 }')"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	n=$((n + 1))
	ls "$ROOT/var/lib/node-agent"/.#desired.json.* >/dev/null 2>&1 && midwrite=$((midwrite + 1))
	[ "$(stat -c %i "$DESIRED" 2>/dev/null)" != "$before" ] && written=$((written + 1))
	why=
	valid || why="desired.json torn or unknown: $(head -c 120 "$DESIRED" | tr -c '[:print:]' '?')"
	if [ -z "$why" ] && ((i % CHECK_EVERY == 0)) && [ -e "$DESIRED" ]; then
		if exec_once && tail -1 "$S/exec.log" | grep -q 'rc=0'; then
			consumer=$((consumer + 1))
		else
			why="cloud-config-exec refused desired.json: $(tail -3 "$S/exec.log" | tr '\n' ' ')"
		fi
	fi
	if [ -z "$why" ]; then good=$((good + 1)); else fail "kill $i: $why"; fi
done
echo "agent-kill: $n kills, $good survived; $written after the new desired.json was in place, $midwrite mid-write (a temporary left), the rest before the write; $consumer checked by cloud-config-exec"
check "kill -9 at $n random instants: desired.json never torn ($good of $n)" [ "$good" -eq "$n" ]
check "the instants straddle the write: $written after it, $((n - written - midwrite)) before, $midwrite mid-write" \
	[ "$written" -ge 1 -a $((n - written - midwrite)) -ge 1 ]

# run_steps I [FAULTFS-ENV...]: publishes version I and runs the agent under
# faultfs (path calls count when they name desired.json or its temporary;
# calls on fds always count) until it dies or,
# at most 15 s later, is killed.
run_steps() {
	local i=$1 t
	shift
	osc "$i" >"$W/cur.yaml"
	kube_secret "$W/cur.yaml" >/dev/null
	sha256 "$W/cur.yaml" >>"$W/published"
	env LD_PRELOAD="$B/tools/faultfs.so" FAULTFS_PATH=desired.json "$@" \
		"$AGENT" --root "$ROOT" --config "$AGENT_CONF" --log-level warning </dev/null >>"$S/agent.log" 2>&1 &
	pid=$!
	for ((t = 0; t < 150; t++)); do
		kill -0 "$pid" 2>/dev/null || break
		[ "$(desired_checksum)" = "$(sha256 "$W/cur.yaml")" ] && [ -z "${FAULTFS_FAIL_RUN:-}" ] && break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

# The write steps of one desired.json write, counted once, then a kill
# just before each of them.
i=$((KILL_RUNS + 1))
: >"$W/steps.log"
run_steps "$i" FAULTFS_LOG="$W/steps.log"
nsteps=$(wc -l <"$W/steps.log")
check "one desired.json write has write steps to kill at ($nsteps: $(awk '{print $2}' "$W/steps.log" | sort | uniq -c | tr -s ' \n' ' '))" \
	[ "$nsteps" -ge 3 ]
sgood=0 smid=0
for ((k = 1; k <= nsteps; k++)); do
	i=$((i + 1))
	FAULTFS_FAIL_RUN=1 run_steps "$i" FAULTFS_FAIL="$k" FAULTFS_ERRNO=KILL
	if valid; then sgood=$((sgood + 1)); else fail "kill before write step $k: desired.json torn or unknown"; fi
	# A leftover temporary would add a clean-up step to the next run and
	# shift the numbering: keep one aside for the convergence run below.
	for tmp in "$ROOT/var/lib/node-agent"/.#desired.json.*; do
		[ -e "$tmp" ] || continue
		smid=$((smid + 1))
		leftover=$(basename "$tmp")
		mv "$tmp" "$W/$leftover"
	done
done
[ -n "${leftover:-}" ] && mv "$W/$leftover" "$ROOT/var/lib/node-agent/"
echo "agent-kill: $nsteps kills at exact write steps, $sgood survived, $smid of them mid-write (a temporary left)"
check "kill -9 before each of the $nsteps write steps: desired.json never torn ($sgood of $nsteps)" \
	[ "$sgood" -eq "$nsteps" ]
check "the step kills interrupt the write midway ($smid left a temporary)" [ "$smid" -ge 1 ]

# Convergence: a normal run applies and annotates the last version.
exec_loop_start
T_START=$(now)
agent_start
if kube_wait_annotation $ANN "$(sha256 "$W/cur.yaml")" "$T_START" 30 >/dev/null; then
	ok "the next run converges: version $i applied and annotated"
else
	fail "the next run converges"
	dump_logs
fi
check "applied content is the last version" [ "$(cat "$ROOT/etc/kill/version" 2>/dev/null)" = "$i" ]
left=$(ls -A "$ROOT/var/lib/node-agent" | grep -c '^\.#')
check "no temporary left in the agent's state directory after the next run ($left; one was there before it)" [ "$left" -eq 0 ]
agent_stop
finish
