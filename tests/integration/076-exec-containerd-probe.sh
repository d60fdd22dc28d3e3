#!/bin/bash
# Issue 25 item 7: `cloud-config-exec probe-containerd` against a real
# containerd (Debian's, in a scratch root): healthy with its version; a
# containerd that is stopped (SIGSTOP: the socket accepts, nothing answers)
# is unhealthy within the probe's deadline; healthy again after SIGCONT; a
# containerd that is gone with its socket is unhealthy. The verdict is
# <execStateDir>/containerd-health.json, which node-agent takes
# (lib/node/ctrdhealth.h; the agent side is in 066-agent-health).
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
require_root
command -v containerd >/dev/null && command -v ctr >/dev/null || skip_all "containerd not installed"

W=$(scratch)
exec_init "$W"
R=$W/root
V=$R/var/lib/cloud-config-exec/containerd-health.json
D=$W/ctd
mkdir -p "$D"
# A containerd of its own: no CRI plugin, nothing of the host's.
printf 'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n' >"$D/config.toml"
containerd --config "$D/config.toml" --root "$D/root" --state "$D/state" --address "$D/sock" >"$D/log" 2>&1 &
CPID=$!
on_exit "kill -CONT $CPID 2>/dev/null; kill $CPID 2>/dev/null; wait $CPID 2>/dev/null"
wait_for 20 bash -c "[ -S '$D/sock' ] && ctr --address '$D/sock' version >/dev/null 2>&1" || dump "containerd" cat "$D/log"

probe() { cce "$R" --containerd-address "$D/sock" probe-containerd 2>>"$W/probe.log"; }
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$V" "$1"; }

probe
check "healthy: exit 0, the verdict written 0644" test $? -eq 0 -a "$(stat -c %a "$V")" = 644
check "healthy: true, with containerd's own version" \
	test "$(field healthy)" = True -a "$(field serverVersion)" = "$(containerd --version | awk '{print $3}')"
check "healthy: checkedAt is now" python3 -c 'import json,sys,time; sys.exit(abs(json.load(open(sys.argv[1]))["checkedAt"] - time.time()) > 30)' "$V"
check "healthy: logged once" grep -q "containerd at $D/sock is healthy (version" "$W/probe.log"

kill -STOP $CPID
t0=$(date +%s%N)
probe
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
echo "# probe of a stopped containerd took $ms ms"
check "stopped (SIGSTOP): unhealthy, exit 0" test "$(field healthy)" = False
check "stopped: the error names the socket" bash -c "grep -q 'containerd at $D/sock\|ctr version at $D/sock' '$V'"
check "stopped: within the probe's 10 s deadline" test "$ms" -lt 12000
check "stopped: the change logged as a warning" grep -q "containerd is unhealthy:" "$W/probe.log"
kill -CONT $CPID

probe
check "continued: healthy again" test "$(field healthy)" = True

kill $CPID; wait $CPID 2>/dev/null
rm -f "$D/sock"
probe
check "gone (no socket): unhealthy" test "$(field healthy)" = False
check "gone: no serverVersion" test -z "$(field serverVersion)"
check "the verdict parses as the agent reads it (strict keys)" \
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(set(d) - {"version","healthy","checkedAt","serverVersion","error"} != set() or d["version"] != 1)' "$V"

# The verb is refused with an argument, and --help names it.
"$CCE" probe-containerd extra >/dev/null 2>&1
check "probe-containerd takes no argument (exit 2)" test $? -eq 2
check "--help names probe-containerd" bash -c "'$CCE' --help | grep -q probe-containerd"
dump "probe log" cat "$W/probe.log"
finish
