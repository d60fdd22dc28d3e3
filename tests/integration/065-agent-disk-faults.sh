#!/bin/bash
# Disk faults under node-agent's one write, desired.json (cloud-config-exec's
# writes are 061's). The agent runs as a daemon with the executor loop beside
# it, in a scratch root:
#
#  1. each write step of the desired.json write (open of the temporary,
#     write, fchmod, fsync, rename, fsync of the directory; counted by
#     tests/lib/faultfs.c, LD_PRELOAD) fails once, with ENOSPC and with EIO,
#     while a new Secret version arrives;
#  2. a full file system: a small tmpfs as the agent's state directory,
#     filled up, then space freed;
#  3. a read-only file system: that tmpfs remounted read-only, then
#     read-write again;
#  4. node-agent --once on the full file system.
#
# After each fault ("survived" = all of these held):
#  - the agent said so: a log line naming desired.json and the errno;
#  - desired.json is the previous version byte for byte or, only when the
#    rename had happened (the directory fsync failed), the complete new one;
#    no temporary is left;
#  - the Node is not annotated with a version that was not written;
#  - with the fault gone, the agent retries by itself (no new event comes):
#    the new version is applied and annotated;
#  - --once exits 1 (the apply failed) and patches nothing.
# Mounts happen in a private mount namespace on the scratch root.
# Prints "agent-disk-faults: <class> N cases, M survived".
if [ "$(id -u)" -eq 0 ] && [ -z "${NA_PRIVATE_MNT:-}" ]; then
	exec env NA_PRIVATE_MNT=1 unshare -m --propagation private -- bash "$0" "$@"
fi
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require
SO=$B/tools/faultfs.so
[ -f "$SO" ] || skip_all "faultfs.so not built ($SO)"

ANN=checksum/cloud-config-data
RECOVER=${RECOVER_SECONDS:-45} # the write retry's backoff cap (30 s) plus the work

hello_e2e disk
STATE=$ROOT/var/lib/node-agent

# publish N: version N of the OSC is the Secret; prints its checksum.
publish() {
	hello_osc "$1" >"$W/v$1.yaml"
	kube_secret "$W/v$1.yaml" >/dev/null
	sha256 "$W/v$1.yaml"
}

# intact OLD NEW: desired.json is OLD's bytes, or NEW's when the rename
# happened (NEW empty: only OLD counts); no temporary is left.
intact() {
	local old=$1 new=$2
	if ls -A "$STATE" | grep -q '^\.#'; then
		echo "  temporary left: $(ls -A "$STATE" | grep '^\.#' | tr '\n' ' ')"
		return 1
	fi
	cmp -s "$STATE/desired.json" "$old" && return 0
	[ -n "$new" ] && [ "$(desired_checksum)" = "$new" ] && return 0
	echo "  desired.json is neither the previous nor the new version: $(head -c 120 "$STATE/desired.json" | tr -c '[:print:]' '?')"
	return 1
}

# annotated_since T SUM: the Node carried SUM at some instant after T.
annotated_since() { kube_wait_annotation $ANN "$2" "$1" 0 >/dev/null; }

# agent_faulty ENV...: starts the agent daemon under faultfs with ENV (path
# calls count when they name desired.json or its temporary). At debug
# level: a failed write is logged once when the failures start (issue 35),
# its retries at debug, where this test counts them.
agent_faulty() {
	env LD_PRELOAD="$SO" FAULTFS_PATH=desired.json "$@" \
		"$AGENT" --root "$ROOT" --config "$AGENT_CONF" --log-level debug </dev/null >>"$S/agent.log" 2>&1 &
	AGENT_PID=$!
	on_exit "kill $AGENT_PID 2>/dev/null; wait $AGENT_PID 2>/dev/null"
}

# failures_since MARK: how many times the agent said it could not write
# desired.json, and why ($msg), after log line MARK.
failures_since() {
	tail -n +"$(($1 + 1))" "$S/agent.log" | grep -F "cannot write /var/lib/node-agent/desired.json" | grep -cF ": $msg"
}
# wait_failures MARK N: waits up to 10 s for N such lines.
wait_failures() {
	local i
	for ((i = 0; i < 50; i++)); do
		[ "$(failures_since "$1")" -ge "$2" ] && return 0
		sleep 0.2
	done
	return 1
}

# ---- 1: each write step fails ------------------------------------------------
# The steps of one desired.json write, counted on a fault-free run. A
# failed write also unlinks its temporary; that clean-up is left out of the
# count (FAULTFS_OPS), so a lasting fault does not also strand temporaries.
agent_stop
OPS=open,write,chmod,fsync,rename
v=$((v + 1))
t0=$(now)
sum=$(publish $v)
: >"$W/steps.log"
agent_faulty FAULTFS_OPS=$OPS FAULTFS_LOG="$W/steps.log"
kube_wait_annotation $ANN "$sum" "$t0" 20 >/dev/null || { fail "the counting run applies version $v"; dump_logs; }
agent_stop
nsteps=$(wc -l <"$W/steps.log")
renamed=$(awk '$2 == "rename" { print $1; exit }' "$W/steps.log")
check "one desired.json write has write steps to fail ($nsteps: $(awk '{print $2}' "$W/steps.log" | tr '\n' ' '))" \
	[ "$nsteps" -ge 5 -a -n "$renamed" ]

# For each step, twice: a lasting fault (that step and every later one
# fail), under which the agent must report, keep the previous version and
# retry with backoff; then a passing fault (only that call fails), from
# which it must recover by itself, with no new event to wake it.
for e in ENOSPC EIO; do
	case $e in ENOSPC) msg="No space left on device" ;; EIO) msg="Input/output error" ;; esac
	n=0 good=0
	for ((k = 1; k <= nsteps; k++)); do
		n=$((n + 1))
		cp "$STATE/desired.json" "$W/old.json"
		v=$((v + 1))
		t0=$(now)
		sum=$(publish $v)
		# Once the rename is done, the new version is in place.
		new=
		[ "$k" -gt "$renamed" ] && new=$sum
		why=
		mark=$(log_mark)
		agent_faulty FAULTFS_OPS=$OPS FAULTFS_FAIL="$k+" FAULTFS_ERRNO="$e"
		if ! wait_failures "$mark" 2; then
			why="lasting fault: not reported and retried (want 2 log lines \"cannot write /var/lib/node-agent/desired.json ...: $msg\" in 10 s)"
		elif ! intact "$W/old.json" "$new"; then
			why="lasting fault: desired.json"
		elif [ -z "$new" ] && [ "$(kube_annotation $ANN)" = "$sum" ]; then
			why="lasting fault: the Node is annotated with version $v, which was never written"
		fi
		agent_stop
		cp "$STATE/desired.json" "$W/old.json"
		mark=$(log_mark)
		agent_faulty FAULTFS_OPS=$OPS FAULTFS_FAIL="$k" FAULTFS_ERRNO="$e"
		if [ -n "$why" ]; then
			:
		elif [ -z "$new" ] && ! wait_failures "$mark" 1; then
			why="passing fault: not reported"
		elif ! kube_wait_annotation $ANN "$sum" "$t0" "$RECOVER" >/dev/null; then
			why="passing fault: no recovery (version $v not annotated within ${RECOVER}s)"
		elif [ "$(cat "$ROOT/etc/hello")" != "disk $v" ]; then
			why="passing fault: version $v is not on disk"
		elif ! intact "$STATE/desired.json" ""; then
			why="passing fault: after the recovery"
		fi
		agent_stop
		if [ -z "$why" ]; then good=$((good + 1)); else
			fail "$e at write step $k ($(sed -n "${k}p" "$W/steps.log" | cut -d' ' -f2)): $why"
			dump_logs
		fi
	done
	echo "agent-disk-faults: $e at each write step: $n cases, $good survived"
	check "$e at each of the $n write steps of desired.json: reported, previous version kept, retried, recovered ($good of $n)" \
		[ "$good" -eq "$n" ]
done

# ---- 2, 3: a full and a read-only file system ---------------------------------
# The state directory becomes a small tmpfs (the agent's state copied over).
cp -a "$STATE" "$W/state.saved"
if ! mount -t tmpfs -o size=256k,mode=0700 na-agent-state "$STATE"; then
	fail "a tmpfs for the state directory"
	finish
	exit 1
fi
on_exit "umount -l '$STATE'"
cp -a "$W/state.saved/." "$STATE/"
agent_start --log-level debug # the retries are logged at debug (see agent_faulty)

# fault NAME BREAK MEND: publishes a new version after BREAK; the agent must
# report ($msg) and retry, keep desired.json, not annotate; after MEND (no
# new event) it must apply and annotate the new version.
fault() {
	local name=$1 why=
	cp "$STATE/desired.json" "$W/old.json"
	eval "$2"
	v=$((v + 1))
	t0=$(now)
	mark=$(log_mark)
	sum=$(publish $v)
	if ! wait_failures "$mark" 2; then
		why="not reported and retried (want 2 log lines \"cannot write /var/lib/node-agent/desired.json ...: $msg\" in 10 s)"
	elif ! intact "$W/old.json" ""; then
		why="desired.json under the fault"
	elif [ "$(kube_annotation $ANN)" = "$sum" ]; then
		why="the Node is annotated with version $v, which was never written"
	fi
	eval "$3"
	if [ -n "$why" ]; then
		:
	elif ! kube_wait_annotation $ANN "$sum" "$t0" "$RECOVER" >/dev/null; then
		why="no recovery: version $v not annotated within ${RECOVER}s of the fault's end"
	elif [ "$(cat "$ROOT/etc/hello")" != "disk $v" ]; then
		why="version $v is not on disk"
	fi
	if [ -z "$why" ]; then ok "$name: reported, previous version kept, retried, recovered"; else
		fail "$name: $why"
		dump_logs
	fi
}
fill() { dd if=/dev/zero of="$STATE/filler" bs=4k 2>/dev/null; sync; }

msg="No space left on device"
fault "full file system" fill 'rm -f "$STATE/filler"'
msg="Read-only file system"
fault "read-only file system" 'mount -o remount,ro "$STATE"' 'mount -o remount,rw "$STATE"'

# ---- 4: --once on a full file system -------------------------------------------
# The executor's result is about the previous version: --once must not take
# it for the new one's.
agent_stop
fill
cp "$STATE/desired.json" "$W/old.json"
v=$((v + 1))
sum=$(publish $v)
"$AGENT" --root "$ROOT" --config "$AGENT_CONF" --once </dev/null >"$W/once.log" 2>&1
rc=$?
check "--once on a full file system exits 1, the apply failed ($rc)" [ "$rc" -eq 1 ]
check "--once says why ($(grep -F "not written within" "$W/once.log"))" \
	grep -qF "not written within" "$W/once.log"
check "--once keeps desired.json" intact "$W/old.json" ""
check_not "--once does not annotate the version it could not write" [ "$(kube_annotation $ANN)" = "$sum" ]
rm -f "$STATE/filler"
"$AGENT" --root "$ROOT" --config "$AGENT_CONF" --once </dev/null >"$W/once.log" 2>&1
rc=$?
check "--once with space again exits 0 ($rc) and annotates version $v" \
	[ "$rc" -eq 0 -a "$(kube_annotation $ANN)" = "$sum" ]
finish
