#!/bin/bash
# 033-exec-unitcheck: cloud-config-exec's SystemdUnitsReady condition and its
# restartedUnits/stoppedUnits (cloud-config-exec/unitcheck.c, units.c) in
# result.json, against a real systemd 252 in a throw-away nspawn box
# (tests/lib/sdbox.sh, as 030): a unit whose restart fails -> False,
# "b.service: failed", the apply fails at step units and reports the unit it
# did restart; fixed -> True, AllUnitsHealthy; a unit with enable: false is
# stopped and reported; a unit stopped by hand is found by the next run (the
# timer's) as "inactive but should be enabled", with no OSC change; a oneshot
# that finished is healthy. 032 takes it from result.json to the Node.
source "$TESTS_DIR/lib/common.sh"
require_root
for t in systemd-nspawn debootstrap nsenter unshare; do
	command -v "$t" >/dev/null || skip_all "needs $t (scripts/install-deps: systemd-container debootstrap)"
done
CCE=$B/cloud-config-exec
[ -x "$CCE" ] || { fail "$CCE not built"; finish; exit 1; }

SDBOX=$TESTS_DIR/lib/sdbox.sh
W=$(scratch)
export SDBOX_STATE=/var/tmp/node-agent-sdbox-033-$$
export SDBOX_SRC=$W
on_exit "'$SDBOX' down"
if ! env_lines=$("$SDBOX" up); then
	fail "the nspawn box boots"
	finish
	exit 1
fi
eval "$env_lines"
ok "the nspawn box boots ($(cat "$SDBOX_STATE/timings"))"
ctl() { "$SDBOX" ctl "$@"; }
ST=$SDBOX_ROOT/var/lib/cloud-config-exec
echo '{}' >"$W/config.json"
apply() {
	"$CCE" --root "$SDBOX_ROOT" --systemd --config "$W/config.json" --log stderr apply "$1" 2>"$W/log"
	rc=$?
	cat "$W/log" >>"$W/all.log"
}
res() { python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$ST/result.json" "$1"; }

# osc B_EXEC [D]: a.service runs; b.service runs B_EXEC (Type=oneshot for
# /bin/false: its restart job fails); o.service is a oneshot that exits 0;
# with D, d.service has enable: false.
osc() {
	local btype=simple
	[ "$1" = /bin/false ] && btype=oneshot
	cat <<-EOF
	spec:
	  units:
	  - name: a.service
	    content: |
	      [Service]
	      ExecStart=/bin/sleep infinity
	      [Install]
	      WantedBy=multi-user.target
	  - name: b.service
	    content: |
	      [Service]
	      Type=$btype
	      ExecStart=$1
	      [Install]
	      WantedBy=multi-user.target
	  - name: o.service
	    content: |
	      [Service]
	      Type=oneshot
	      ExecStart=/bin/true
	      [Install]
	      WantedBy=multi-user.target
	EOF
	if [ -n "${2:-}" ]; then
		cat <<-EOF
		  - name: d.service
		    enable: false
		    content: |
		      [Service]
		      ExecStart=/bin/sleep infinity
		EOF
	fi
}

osc /bin/false >"$W/v1.yaml"
apply "$W/v1.yaml"
check "a unit that fails: the apply fails at step units" [ "$rc:$(res 'd["failedStep"]')" = 1:units ]
check "  ... SystemdUnitsReady False, UnhealthyUnits, the unit named" \
	[ "$(res 'd["unitsReady"]["status"], d["unitsReady"]["reason"], d["unitsReady"]["message"]')" = "('False', 'UnhealthyUnits', 'b.service: failed')" ]
check "  ... restartedUnits: the units whose restart was done" \
	[ "$(res 'd.get("restartedUnits")')" = "['a.service', 'o.service']" ]
check "  ... checkedAt is now" python3 -c 'import sys, time; sys.exit(0 if abs(time.time() - int(sys.argv[1])) < 60 else 1)' \
	"$(res 'd["unitsReady"]["checkedAt"]')"

osc "/bin/sleep infinity" d >"$W/v2.yaml"
apply "$W/v2.yaml"
check "fixed: the apply succeeds" [ "$rc" -eq 0 ]
check "  ... True, AllUnitsHealthy (a finished oneshot, a disabled stopped unit are fine)" \
	[ "$(res 'd["unitsReady"]["status"], d["unitsReady"]["reason"], d["unitsReady"]["message"]')" = "('True', 'AllUnitsHealthy', 'All systemd units from the operating system config are running as expected.')" ]
# v1 was never applied, so every unit is new to this apply and restarts.
check "  ... restartedUnits a, b, o; stoppedUnits d.service" \
	[ "$(res 'd.get("restartedUnits"), d.get("stoppedUnits")')" = "(['a.service', 'b.service', 'o.service'], ['d.service'])" ]

# The same OSC again (the timer's run): nothing changed, nothing written.
before=$(stat -c %Y.%i "$ST/result.json")
sleep 1
apply "$W/v2.yaml"
check "a run that finds the same state does not rewrite result.json" \
	[ "$rc:$(stat -c %Y.%i "$ST/result.json")" = "0:$before" ]

# Stopped by hand: the next run, without any OSC change, reports it.
ctl stop a.service
apply "$W/v2.yaml"
check "a unit stopped by hand: the next run reports it" \
	[ "$(res 'd["unitsReady"]["status"], d["unitsReady"]["message"]')" = "('False', 'a.service: inactive but should be enabled')" ]
check "  ... shown by cloud-config-exec status" grep -qx "SystemdUnitsReady: False (UnhealthyUnits): a.service: inactive but should be enabled" \
	<("$CCE" --root "$SDBOX_ROOT" --config "$W/config.json" --log stderr status 2>/dev/null)
check "  ... the apply itself still succeeds" [ "$rc:$(res 'd["success"]')" = 0:True ]
check_not "no sanitizer report from cloud-config-exec" grep -q "Sanitizer" "$W/all.log"
[ "$_fail" -eq 0 ] || { echo "--- cloud-config-exec"; tail -n 40 "$W/all.log"; }
finish
