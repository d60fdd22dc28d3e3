#!/bin/bash
# A desired.json the executor's path unit did not act on (PathChanged= drops
# a change made while the executor runs, systemd#5770, and systemd has missed
# others: agent/pickup.h).
#  1. The executor: a new generation written while it runs is applied in the
#     same run (stopped at an exact write step with faultfs.so's STOP, the
#     new desired.json written, continued); a run with no change applies
#     once.
#  2. The agent: with the stand-in path unit gone, a new OSC's desired.json
#     is never picked up; PICKUP_FIRST_MS (15 s) later the agent writes the
#     same bytes again (new inode, same generation), a path unit that sees
#     that change runs the executor, and the Node gets the checksum.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
source "$TESTS_DIR/lib/exec.sh"
kube_netns "$@"
agent_require
SO=$B/tools/faultfs.so
[ -f "$SO" ] || skip_all "faultfs.so not built ($SO)"

osc() { printf 'spec:\n  files:\n  - path: /etc/pickup/version\n    permissions: 420\n    content:\n      inline:\n        data: "%s"\n' "$1"; }
# put_desired ROOT OSCFILE GENERATION: desired.json, replaced atomically.
put_desired() {
	mkdir -p "$1/var/lib/node-agent"
	desired_json "$2" "$3" >"$1/var/lib/node-agent/desired.json.tmp" &&
		mv "$1/var/lib/node-agent/desired.json.tmp" "$1/var/lib/node-agent/desired.json"
}

# --- 1. the executor -----------------------------------------------------------
X=$(scratch)
exec_init "$X"
XR=$X/root
osc 1 >"$X/v1.yaml"
osc 2 >"$X/v2.yaml"
put_desired "$XR" "$X/v1.yaml" 1
LD_PRELOAD=$SO FAULTFS_OPS=rename FAULTFS_PATH=version FAULTFS_FAIL=1 FAULTFS_ERRNO=STOP FAULTFS_LOG=$X/faultfs.log \
	"$CCE" --root "$XR" --config "$X/config.json" --no-systemd --log stderr apply-desired 2>"$X/run.log" &
xpid=$!
on_exit "kill -CONT $xpid 2>/dev/null; kill $xpid 2>/dev/null"
stopped() { [ "$(awk '{print $3}' "/proc/$xpid/stat" 2>/dev/null)" = T ]; }
check "the executor stops at the rename of /etc/pickup/version (faultfs STOP)" wait_for 10 stopped
put_desired "$XR" "$X/v2.yaml" 2
kill -CONT "$xpid"
wait "$xpid"
xrc=$?
check "a new generation written during the run: the run exits 0 ($xrc)" test "$xrc" -eq 0
check "  ... and applied it: /etc/pickup/version is 2" test "$(cat "$XR/etc/pickup/version" 2>/dev/null)" = 2
check "  ... result.json names generation 2" \
	test "$(jget "d['generation']" <"$XR/var/lib/cloud-config-exec/result.json")" = 2
check "  ... logged" grep -q "desired.json changed during the run (generation 1 -> 2): applying again" "$X/run.log"
check "  ... two applies in the one run" test "$(grep -c 'Applying OSC' "$X/run.log")" = 2
cce "$XR" apply-desired 2>"$X/run2.log"
check "a run with nothing new applies once" \
	test "$(grep -c 'Applying OSC' "$X/run2.log")/$(grep -c 'applying again' "$X/run2.log")" = 1/0

# --- 2. the agent --------------------------------------------------------------
W=$(scratch)
osc a >"$W/a.yaml"
osc b >"$W/b.yaml"
if ! agent_e2e_setup "$W/a.yaml"; then
	fail "agent applies the first OSC"
	dump_logs
	finish
	exit 1
fi
ok "agent applies the first OSC"
gen1=$(jget "d['generation']" <"$(desired_file)")
# The path unit misses the next write.
kill "$EXEC_LOOP_PID"
wait "$EXEC_LOOP_PID" 2>/dev/null
mark=$(log_mark)
t=$(kube_secret "$W/b.yaml" | jget "d['t']")
written() { [ "$(desired_checksum)" = "$(sha256 "$W/b.yaml")" ]; }
check "the new OSC is written to desired.json" wait_for 10 written
gen2=$(jget "d['generation']" <"$(desired_file)")
ino=$(stat -c %i "$(desired_file)")
# When the agent wrote it (the file's mtime): the test sees the write later
# on a loaded machine, and PICKUP_FIRST_MS counts from the write.
t0=$(python3 -c 'import os, sys; print("%.6f" % os.stat(sys.argv[1]).st_mtime)' "$(desired_file)")
cp "$(desired_file)" "$W/desired-before"
# A path unit that sees the next change of desired.json (a new inode).
(
	while [ "$(stat -c %i "$(desired_file)" 2>/dev/null)" = "$ino" ]; do sleep 0.05; done
	exec_once
) &
watcher=$!
on_exit "kill $watcher 2>/dev/null"
check "not picked up: the agent writes desired.json again" \
	wait_log "executor has not reported generation $gen2 " "$mark" 25
t1=$(now)
check "  ... after PICKUP_FIRST_MS ($(python3 -c "print('%.1f' % ($t1 - $t0))") s >= 14 s)" \
	python3 -c "import sys; sys.exit(0 if $t1 - $t0 >= 14 else 1)"
check "  ... the same bytes (generation $gen2 kept)" wait_for 5 cmp -s "$W/desired-before" "$(desired_file)"
check "  ... as a new file (inode $ino -> $(stat -c %i "$(desired_file)"))" \
	test "$(stat -c %i "$(desired_file)")" != "$ino"
ta=$(kube_wait_annotation checksum/cloud-config-data "$(sha256 "$W/b.yaml")" "$t" 20)
check "  ... the executor ran on that change and the Node has the checksum" test -n "$ta"
check "  ... /etc/pickup/version is b" test "$(cat "$ROOT/etc/pickup/version" 2>/dev/null)" = b
check "  ... logged as picked up" wait_log "executor picked up generation $gen2 after 1 rewrite(s) of desired.json" "$mark" 5
check_not "a generation picked up at once was never written again (generation $gen1)" \
	grep -q "executor has not reported generation $gen1 " "$S/agent.log"
agent_stop
check "the agent exits cleanly (rc $AGENT_RC)" test "$AGENT_RC" -eq 0
check_not "  ... with no sanitizer report in its log" grep -q "Sanitizer" "$S/agent.log"

[ "$_fail" -eq 0 ] || dump_logs
finish
