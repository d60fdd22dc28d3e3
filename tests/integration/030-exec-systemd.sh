#!/bin/bash
# 030-exec-systemd: the systemd half of cloud-config-exec (cloud-config-exec/units.c,
# systemd.c) against a real systemd 252, PID 1 of a throw-away Debian 12 booted in
# systemd-nspawn (tests/lib/sdbox.sh). The real program runs on the host, through the
# box's dbus-daemon (DBUS_SYSTEM_BUS_ADDRESS) with --root /proc/LEADER/root --systemd
# (seccomp on), and proves that:
#   a changed unit is restarted (ActiveEnterTimestampMonotonic moves), an unchanged one
#   is not; a dropped unit of ours is stopped, disabled and removed with its drop-ins;
#   a drop-in-only OS unit is restarted, not removed, and keeps foreign drop-ins;
#   enable/disable symlinks are right; filePaths and restart requests (with and without
#   ".service") restart, requests after the rest; gardener-user units are never written;
#   gardener-node-agent's own unit, running on the node, is stopped and disabled;
#   a failing unit and a job past its deadline are reported by name; a re-apply is a no-op.
# The box's state lives in /var/tmp (never the git tree); it is torn down and the test
# checks that no process, cgroup or rootfs is left. The freshly bootstrapped rootfs is
# kept as a tar in $B/sdbox-cache (later runs: ~5 s instead of ~40 s).
source "$TESTS_DIR/lib/common.sh"
require_root
for t in systemd-nspawn debootstrap nsenter unshare; do
	command -v "$t" >/dev/null || skip_all "needs $t (scripts/install-deps: systemd-container debootstrap)"
done
CCE=$B/cloud-config-exec
TOOL=$B/tools/units-apply
for x in "$CCE" "$TOOL"; do [ -x "$x" ] || { fail "$x not built"; finish; exit 1; }; done

SDBOX=$TESTS_DIR/lib/sdbox.sh
W=$(scratch)
export SDBOX_STATE=/var/tmp/node-agent-sdbox-$$
export SDBOX_SRC=$W
on_exit "'$SDBOX' down"
t0=$(date +%s%N)
if ! env_lines=$("$SDBOX" up); then
	fail "the nspawn box boots"
	finish
	exit 1
fi
eval "$env_lines"
ok "the nspawn box boots ($(cat "$SDBOX_STATE/timings"), leader $SDBOX_LEADER)"
box_name=$(cat "$SDBOX_STATE/name")
SYS=$SDBOX_ROOT/etc/systemd/system

ctl() { "$SDBOX" ctl "$@"; }
ts() { ctl show -p ActiveEnterTimestampMonotonic --value "$1"; }
prop() { ctl show -p "$2" --value "$1"; }

# apply NEW [ARGS...]: cloud-config-exec apply NEW (it keeps the last applied OSC itself,
# below the root). Log in $W/log, exit status in $rc.
ST=$SDBOX_ROOT/var/lib/cloud-config-exec
echo '{}' >"$W/config.json"
cce() { "$CCE" --root "$SDBOX_ROOT" --systemd --config "$W/config.json" --log stderr "$@"; }
record() {
	cat "$W/log" >>"$W/all.log"
	grep -o 'apply took [0-9.]* ms' "$W/log" >>"$W/apply_ms" || true
}
apply() {
	local new=$1
	shift
	local t=$(date +%s%N)
	cce "$@" apply "$new" 2>"$W/log"
	rc=$?
	echo "apply took $(( ($(date +%s%N) - t) / 1000000 )) ms" >>"$W/log"
	record
	return "$rc"
}
# apply_desired OSC UNIT...: as node-agent hands it over: desired.json with a restart request.
apply_desired() {
	local osc=$1
	shift
	mkdir -p "$SDBOX_ROOT/var/lib/node-agent"
	python3 - "$osc" "$SDBOX_ROOT/var/lib/node-agent/desired.json" "$@" <<'PY'
import hashlib, json, sys
osc = open(sys.argv[1], "rb").read()
d = {"version": 1, "checksum": hashlib.sha256(osc).hexdigest(), "osc": osc.decode(),
     "restart": {"id": "restart-1", "units": sys.argv[3:]}, "generation": 1}
open(sys.argv[2], "w").write(json.dumps(d))
PY
	local t=$(date +%s%N)
	cce apply-desired 2>"$W/log"
	rc=$?
	echo "apply took $(( ($(date +%s%N) - t) / 1000000 )) ms" >>"$W/log"
	record
	return "$rc"
}
# The changed units cloud-config-exec reported in result.json, space-separated.
changed() { python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1])).get("changedUnits") or []))' "$ST/result.json"; }
result_error() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("error") or "")' "$ST/result.json"; }

# An OS unit shipped by the "distribution", with a drop-in by its admin: the OSC only
# adds a drop-in to it.
cat >"$SDBOX_ROOT/usr/lib/systemd/system/osunit.service" <<'EOF'
[Service]
ExecStart=/bin/sleep infinity
[Install]
WantedBy=multi-user.target
EOF
mkdir -p "$SYS/osunit.service.d"
printf '[Service]\nEnvironment=ADMIN=1\n' >"$SYS/osunit.service.d/50-admin.conf"
ctl daemon-reload
ctl start osunit.service

svc() { # svc NAME [extra [Service] line] -> a unit body (sleep infinity, enabled)
	printf '      [Unit]\n      Description=%s\n      [Service]\n      ExecStart=/bin/sleep infinity\n' "$1"
	[ -z "${2:-}" ] || printf '      %s\n' "$2"
	printf '      [Install]\n      WantedBy=multi-user.target\n'
}
unit() { # unit NAME [extra] -> an OSC unit entry with content
	printf '  - name: %s\n    content: |\n' "$1"
	svc "$1" "${2:-}"
}
file() { # file PATH CONTENT -> an OSC file entry
	printf '  - path: %s\n    permissions: 0644\n    content:\n      inline:\n        data: "%s"\n' "$1" "$2"
}

{
	echo 'spec:'
	echo '  files:'
	file /etc/filep.conf one
	echo '  units:'
	unit keep.service
	unit change.service 'Environment=V=1'
	unit dropme.service
	printf '    dropIns:\n    - name: 10-x.conf\n      content: |\n        [Service]\n        Environment=X=1\n'
	unit stopme.service
	unit filep.service
	printf '    filePaths: [/etc/filep.conf]\n'
	unit req.service
	unit req2.service
	unit req3.service
	printf '  - name: osunit.service\n    dropIns:\n    - name: 10-ours.conf\n      content: |\n        [Service]\n        Environment=OURS=1\n'
	unit gardener-user.service
	printf '  - name: gardener-user.path\n    command: start\n    content: |\n      [Path]\n      PathChanged=/var/lib/gardener-user-authorized-keys\n'
} >"$W/v1.yaml"
UNITS="keep change dropme stopme filep req req2 req3 osunit"

# ---- first apply: everything is new
apply "$W/v1.yaml"
check "first apply succeeds" test "$rc" -eq 0
check "first apply changed every unit but gardener-user ($(changed))" test "$(changed)" = \
	"change.service dropme.service filep.service keep.service osunit.service req.service req2.service req3.service stopme.service"
all_active=1
for u in $UNITS; do
	[ "$(prop $u.service ActiveState)" = active ] || { all_active=0; echo "# $u.service: $(prop $u.service ActiveState)"; }
done
check "every unit is active after the first apply" test "$all_active" -eq 1
check "unit files are written 0644" test "$(stat -c %a "$SYS/keep.service")" = 644
check "drop-in dir is 0755" test "$(stat -c %a "$SYS/dropme.service.d")" = 755
check "keep.service is enabled (symlink in multi-user.target.wants)" \
	test "$(readlink "$SYS/multi-user.target.wants/keep.service")" = /etc/systemd/system/keep.service
check "systemctl is-enabled stopme.service says enabled" test "$(ctl is-enabled stopme.service)" = enabled
check "our drop-in is active on the OS unit" test "$(prop osunit.service Environment)" = "OURS=1 ADMIN=1"
check_not "gardener-user.service is never written" test -e "$SYS/gardener-user.service"
check_not "gardener-user.path is never written" test -e "$SYS/gardener-user.path"
check "gardener-user.path is not loaded" test "$(prop gardener-user.path LoadState)" = not-found
check "a new unit is restarted as 'new unit'" grep -q "Restarted keep.service (new unit): done in" "$W/log"
check "the plan is logged with the superseded units" grep -q "Units: restart: .*; superseded: gardener-user.path gardener-user.service" "$W/log"

check "systemd_unit_state() reads what systemctl shows" test "$("$TOOL" --state keep.service)" = \
	"keep.service active loaded $(ts keep.service)"
check "systemd_unit_state() loads a unit nothing refers to" test "$("$TOOL" --state never.service)" = \
	"never.service inactive not-found 0"

declare -A before
for u in $UNITS; do before[$u]=$(ts $u.service); done

# ---- re-apply: nothing at all
apply "$W/v1.yaml"
check "re-apply succeeds" test "$rc" -eq 0
check "re-apply changes nothing (log: Units: unchanged: 9, nothing changed)" \
	bash -c "grep -q 'Units: superseded: gardener-user.path gardener-user.service; unchanged: 9$' '$W/log' && grep -q 'nothing changed' '$W/log'"
check_not "re-apply writes, starts or stops no unit" grep -qE 'Wrote unit|Restarted|Stopped|Enabled|Disabled|Removed' "$W/log"
check_not "re-apply does not daemon-reload" grep -q daemon-reload "$W/log"
moved=""
for u in $UNITS; do [ "$(ts $u.service)" = "${before[$u]}" ] || moved="$moved $u"; done
check "re-apply restarts nothing${moved:+ (moved:$moved)}" test -z "$moved"

# ---- a node gardener-node-agent configured before: its copies of the superseded
# gardener-user units are on disk, enabled and armed. They are stopped and disabled
# (the path unit would run the script that overwrites authorized_keys), never
# rewritten or removed; the next apply leaves them alone.
printf '# written by gardener-node-agent\n[Path]\nPathChanged=/var/lib/gardener-user-authorized-keys\n[Install]\nWantedBy=multi-user.target\n' \
	>"$SYS/gardener-user.path"
printf '# written by gardener-node-agent\n[Service]\nType=oneshot\nExecStart=/bin/true\n' >"$SYS/gardener-user.service"
cp "$SYS/gardener-user.path" "$W/gnu.path"
ctl daemon-reload
ctl enable --now gardener-user.path 2>/dev/null
check "GNA's gardener-user.path is armed before" test "$(prop gardener-user.path ActiveState)" = active
apply "$W/v1.yaml"
check "apply on the GNA node succeeds" test "$rc" -eq 0
check "GNA's gardener-user.path is stopped" test "$(prop gardener-user.path ActiveState)" = inactive
check "GNA's gardener-user.path is disabled" test "$(ctl is-enabled gardener-user.path)" = disabled
check "GNA's gardener-user.path is neither rewritten nor removed" cmp -s "$SYS/gardener-user.path" "$W/gnu.path"
check "the log says so" grep -q "gardener-user.path: superseded by cloud-config-exec's native SSH key handling; the copy found on disk is stopped and disabled" "$W/log"
moved=""
for u in $UNITS; do [ "$(ts $u.service)" = "${before[$u]}" ] || moved="$moved $u"; done
check "nothing else is restarted${moved:+ (moved:$moved)}" test -z "$moved"
apply "$W/v1.yaml"
check "the next apply leaves them alone" bash -c "! grep -q 'gardener-user.path: superseded' '$W/log' && grep -q 'nothing changed' '$W/log'"

# ---- gardener-node-agent itself runs on that node (enabled, active), and the OSC
# carries its unit as every Gardener OSC does: stopped and disabled, never
# rewritten or removed; nothing else restarts; the OSC's copy is never written.
printf '# written by gardener-node-agent bootstrap\n[Service]\nExecStart=/bin/sleep infinity\n[Install]\nWantedBy=multi-user.target\n' \
	>"$SYS/gardener-node-agent.service"
cp "$SYS/gardener-node-agent.service" "$W/gna.service"
ctl daemon-reload
ctl enable --now gardener-node-agent.service 2>/dev/null
check "GNA's gardener-node-agent.service runs before" test "$(prop gardener-node-agent.service ActiveState)" = active
{
	cat "$W/v1.yaml"
	printf '  - name: gardener-node-agent.service\n    enable: true\n    content: |\n      [Service]\n      ExecStart=/opt/bin/gardener-node-agent --config-dir=/var/lib/gardener-node-agent\n'
} >"$W/v1-gna.yaml"
apply "$W/v1-gna.yaml"
check "apply with gardener-node-agent's unit in the OSC succeeds" test "$rc" -eq 0
check "gardener-node-agent.service is stopped" test "$(prop gardener-node-agent.service ActiveState)" = inactive
check "gardener-node-agent.service is disabled" test "$(ctl is-enabled gardener-node-agent.service)" = disabled
check "... neither rewritten nor removed" cmp -s "$SYS/gardener-node-agent.service" "$W/gna.service"
check "the log says so" grep -q "gardener-node-agent.service: superseded by node-agent and cloud-config-exec, which do gardener-node-agent's work; the copy found on disk is stopped and disabled" "$W/log"
moved=""
for u in $UNITS; do [ "$(ts $u.service)" = "${before[$u]}" ] || moved="$moved $u"; done
check "nothing else is restarted${moved:+ (moved:$moved)}" test -z "$moved"
apply "$W/v1.yaml"
check_not "back to v1: no unit written, restarted or stopped" grep -qE 'Wrote unit|Restarted|Stopped' "$W/log"

# ---- v2 through desired.json: change one, drop two, disable one, change a file that
# one unit lists in filePaths, and a restart request for two unchanged units
{
	echo 'spec:'
	echo '  files:'
	file /etc/filep.conf two
	echo '  units:'
	unit keep.service
	unit change.service 'Environment=V=2'
	printf '  - name: stopme.service\n    enable: false\n    content: |\n'
	svc stopme.service
	unit filep.service
	printf '    filePaths: [/etc/filep.conf]\n'
	unit req.service
	unit req2.service
	unit req3.service
} >"$W/v2.yaml"
apply_desired "$W/v2.yaml" req.service req2.service nope.service
check "v2 apply succeeds (a requested unit that does not exist does not fail it)" test "$rc" -eq 0
check "the missing requested unit is logged as a warning" grep -q "nope.service: requested restart failed: unit not found" "$W/log"
check "v2 reports exactly the touched units ($(changed))" test "$(changed)" = \
	"change.service dropme.service filep.service osunit.service req.service req2.service stopme.service"
check "changed unit is restarted (timestamp moved)" test "$(ts change.service)" -gt "${before[change]}"
check "changed unit runs the new definition" test "$(prop change.service Environment)" = V=2
check "unchanged unit is not restarted" test "$(ts keep.service)" = "${before[keep]}"
check "unchanged unit not in the restart request is not restarted" test "$(ts req3.service)" = "${before[req3]}"
check "unchanged unit still enabled" test "$(ctl is-enabled keep.service)" = enabled
check "filePaths hit restarts filep.service" test "$(ts filep.service)" -gt "${before[filep]}"
check "restart request restarts req.service" test "$(ts req.service)" -gt "${before[req]}"
check "restart request restarts req2.service" test "$(ts req2.service)" -gt "${before[req2]}"
check "restart requests run after the other jobs" test "$(ts req.service)" -gt "$(ts change.service)"
check "result.json records the executed restart request" grep -q '"restartId":[[:space:]]*"restart-1"' "$ST/result.json"
check "enable: false stops stopme.service" test "$(prop stopme.service ActiveState)" = inactive
check "enable: false disables stopme.service" test "$(ctl is-enabled stopme.service)" = disabled
check_not "stopme.service's wants symlink is gone" test -L "$SYS/multi-user.target.wants/stopme.service"
check "dropped unit is stopped" test "$(prop dropme.service ActiveState)" = inactive
check "dropped unit is no longer known" test "$(prop dropme.service LoadState)" = not-found
check_not "dropped unit file is removed" test -e "$SYS/dropme.service"
check_not "dropped unit's drop-in dir is removed" test -e "$SYS/dropme.service.d"
check_not "dropped unit's wants symlink is removed" test -L "$SYS/multi-user.target.wants/dropme.service"
check "drop-in-only OS unit is restarted" test "$(ts osunit.service)" -gt "${before[osunit]}"
check "drop-in-only OS unit is still active" test "$(prop osunit.service ActiveState)" = active
check "OS unit file is not removed" test -f "$SDBOX_ROOT/usr/lib/systemd/system/osunit.service"
check_not "our drop-in on the OS unit is removed" test -e "$SYS/osunit.service.d/10-ours.conf"
check "the admin's drop-in stays" test -f "$SYS/osunit.service.d/50-admin.conf"
check "OS unit runs without our drop-in" test "$(prop osunit.service Environment)" = ADMIN=1
plan_line=$(grep -o 'Units: .*' "$W/log")
check "the plan is logged ($plan_line)" test "$plan_line" = \
	"Units: restart: change.service filep.service osunit.service; stop: stopme.service; remove: dropme.service; restart requested: nope.service req.service req2.service; unchanged: 4"

# ---- a restart request without ".service" (units-apply: the desired state only carries
# full names; units_plan_compute() accepts both, as gardener-node-agent >= 1.92)
r3=$(ts req3.service)
"$TOOL" --root "$SDBOX_ROOT" --old "$W/v2.yaml" --restart req3 "$W/v2.yaml" >"$W/out" 2>"$W/log"
check "restart request 'req3' (no suffix) restarts req3.service" test "$(ts req3.service)" -gt "$r3"
check "and nothing else" test "$(sed -n 's/^changed: *//p' "$W/out")" = req3.service

# ---- a failing unit and a job past its deadline are reported by name; others go on
for u in keep change filep req req2 osunit; do before[$u]=$(ts $u.service); done
{
	cat "$W/v2.yaml"
	printf '  - name: bad.service\n    content: |\n      [Service]\n      Type=oneshot\n      ExecStart=/bin/false\n'
	printf '  - name: slow.service\n    content: |\n      [Service]\n      Type=oneshot\n      ExecStart=/bin/sleep 60\n'
	unit new.service
} >"$W/v3.yaml"
apply "$W/v3.yaml" --job-timeout-ms 2000
check "an apply with a failing unit exits 1" test "$rc" -eq 1
err=$(result_error)
echo "# result.json error: $err"
check "result.json names bad.service and its job result" grep -q "bad.service: restart failed (job result 'failed')" <<<"$err"
check "result.json names slow.service and the deadline" grep -q "slow.service: restart timed out after 2000 ms" <<<"$err"
check "result.json: failed step 'units', success false" \
	grep -q '"failedStep":[[:space:]]*"units"' "$ST/result.json"
check "the healthy new unit is still started" test "$(prop new.service ActiveState)" = active
check "the failing apply did not restart unchanged units" test "$(ts keep.service)" = "${before[keep]}"
check "the unit's failure is logged once, naming the unit" test "$(grep -c '^cloud-config-exec: bad.service: restart failed' "$W/log")" -eq 1

# ---- units that the failed apply wrote do not leak when the next OSC lacks them: they
# are recorded as ours before they are written (state.json ownedUnits), and the plan
# counts the record (units_plan_compute_owned). Gardener #10972 is this leak.
check "the ownership record lists the failed apply's units" grep -q '/etc/systemd/system/bad.service' "$ST/state.json"
apply "$W/v2.yaml"
check "back to v2 after the failed v3 succeeds" test "$rc" -eq 0
left=""
for u in bad slow new; do [ ! -e "$SYS/$u.service" ] || left="$left $u"; done
check "units left by the failed apply are removed${left:+ (left:$left)}" test -z "$left"
check "a unit left by the failed apply is stopped" test "$(prop new.service ActiveState)" = inactive
s=$(prop slow.service ActiveState)
check "the late job's unit is stopped too ($s)" test "$s" = inactive
check "new.service's wants symlink is removed" test ! -L "$SYS/multi-user.target.wants/new.service"
check "the log says why" grep -q 'Units: remove: bad.service new.service slow.service; unchanged: 7' "$W/log"
check "units v2 has are untouched by it" test "$(ts keep.service)" = "${before[keep]}"
check_not "the ownership record no longer lists them" grep -q '/etc/systemd/system/bad.service' "$ST/state.json"

# ---- the next apply fixes bad.service; drift: an edited unit file is rewritten and
# its unit restarted although the OSC did not change it
{
	cat "$W/v2.yaml"
	printf '  - name: bad.service\n    content: |\n      [Service]\n      Type=oneshot\n      ExecStart=/bin/true\n'
	unit new.service
} >"$W/v4.yaml"
printf '[Service]\nExecStart=/bin/sleep 1000\n' >"$SYS/keep.service"
before_keep=$(ts keep.service)
apply "$W/v4.yaml"
check "the repaired apply succeeds" test "$rc" -eq 0
check "drifted keep.service is rewritten" grep -q 'sleep infinity' "$SYS/keep.service"
check "drifted keep.service is restarted" test "$(ts keep.service)" -gt "$before_keep"
check "the drift is logged" grep -q "keep.service: files on disk differed from the OSC, rewritten" "$W/log"

# ---- back to v2: the units of v4 go
apply "$W/v2.yaml"
check "dropping bad and new succeeds" test "$rc" -eq 0
left=""
for u in bad new; do [ ! -e "$SYS/$u.service" ] || left="$left $u"; done
check "their unit files are removed${left:+ (left:$left)}" test -z "$left"

failed_units=$(ctl --failed --plain --no-legend | awk '{print $1}' | tr '\n' ' ')
check "no failed unit is left behind${failed_units:+ ($failed_units)}" test -z "$failed_units"

# ---- containerd's PATH drop-in (gardener-node-agent's containerd.go,
# addContainerdEnvironmentDropIn): with a criConfig, containerd.service gets
# 30-env_config.conf with the runtimes dir before the PATH every service of
# this manager gets (read over the bus, as gardener-node-agent's own
# os.Getenv("PATH") is), and systemd applies it; without, it goes again
{
	cat "$W/v2.yaml"
	unit containerd.service
	printf '  criConfig:\n    name: containerd\n'
} >"$W/v6.yaml"
apply "$W/v6.yaml"
mpath=$(ctl show-environment | sed -n 's/^PATH=//p')
echo "# the box manager's PATH: $mpath"
check "criConfig: containerd.service has 30-env_config.conf with the manager's PATH" \
	test "$(cat "$SYS/containerd.service.d/30-env_config.conf" 2>/dev/null)" = "$(printf '[Service]\nEnvironment="PATH=/var/bin/containerruntimes:%s"' "$mpath")"
check "  ... systemd reads it (Environment of the running unit)" \
	sh -c "'$SDBOX' ctl show -p Environment --value containerd.service | grep -qF 'PATH=/var/bin/containerruntimes:$mpath'"
check "  ... /var/bin/containerruntimes exists" test -d "$SDBOX_ROOT/var/bin/containerruntimes"
apply "$W/v2.yaml"
check "without the criConfig: the drop-in goes with the unit" test ! -e "$SYS/containerd.service.d/30-env_config.conf"

# ---- numbers for the report
echo "# box: $(cat "$SDBOX_STATE/timings")"
echo "# job latencies (ms): $(grep -E '(Restarted|Stopped) .*: done in' "$W/all.log" | grep -o 'done in [0-9.]* ms' | awk '{print $3}' | sort -n | tr '\n' ' ')"
echo "# daemon-reload (ms): $(grep -o 'daemon-reload done in [0-9.]* ms' "$W/all.log" | awk '{print $4}' | tr '\n' ' ')"
echo "# apply wall time incl. exec (ms): $(awk '{print $3}' "$W/apply_ms" | tr '\n' ' ')"

# ---- teardown leaves nothing behind
"$SDBOX" down 2>/dev/null
leftover=""
[ ! -e "/proc/$SDBOX_LEADER" ] || leftover="$leftover leader-process"
for d in /sys/fs/cgroup/systemd/sdbox-$box_name /sys/fs/cgroup/unified/sdbox-$box_name /sys/fs/cgroup/sdbox-$box_name; do
	[ ! -d "$d" ] || leftover="$leftover $d"
done
[ ! -e "$SDBOX_STATE" ] || leftover="$leftover $SDBOX_STATE"
! grep -q "$SDBOX_STATE" /proc/self/mountinfo || leftover="$leftover mount"
check "teardown leaves no process, cgroup, mount or rootfs${leftover:+ (left:$leftover)}" test -z "$leftover"
echo "# total $(( ($(date +%s%N) - t0) / 1000000 )) ms"
finish
