#!/bin/bash
# units/: lint and score the systemd units without a running systemd, and
# check the sysusers.d/tmpfiles.d entries and the sshd drop-in offline.
#  - `systemd-analyze verify` in a staging root (distro units copied in,
#    stub binaries for ExecStart=): ANY output fails, because unknown keys and
#    bad values are only warnings with rc 0;
#  - `systemd-analyze security --offline=yes` exposure thresholds
#    (node-agent <= 1.5, cloud-config-exec <= 1.5, see docs/security.md "Hardening");
#  - systemd-sysusers/-tmpfiles --root create the users and directories with
#    the exact owners and modes;
#  - sshd -T with the drop-in: the command, its user, and the default
#    AuthorizedKeysFile (break-glass keys) are in effect.
#
# systemd-analyze touches /run/systemd/systemd-units-load even with --root:
# as root, the script re-runs itself in a private mount namespace with a
# tmpfs /run, so the host's /run is never written.
if [ "$(id -u)" -eq 0 ] && [ -z "${NA_PRIVATE_RUN:-}" ]; then
	exec env NA_PRIVATE_RUN=1 unshare -m --propagation private -- \
		bash -c 'mount -t tmpfs -o mode=755 na-test-run /run && exec bash "$0"' "$0"
fi
source "$TESTS_DIR/lib/common.sh"
command -v systemd-analyze >/dev/null || skip_all "systemd-analyze not installed"

U=$TESTS_DIR/../units
NA_MAX=${NA_MAX:-15}            # exposure x10 (--threshold scale): 1.5
EXEC_MAX=${EXEC_MAX:-15}
PULL_MAX=${PULL_MAX:-16} # network is its purpose: PrivateNetwork=no, AF_INET* (1.6)
W=$(scratch)

# stage ROOT [DROPIN]: a root with the distro units, ours and stub binaries.
stage() {
	local r=$1
	mkdir -p "$r/usr/lib/systemd" "$r/etc/systemd/system"
	cp -a /usr/lib/systemd/system "$r/usr/lib/systemd/"
	cp "$U"/*.service "$U"/*.path "$U"/*.timer "$r/etc/systemd/system/"
	if [ -n "${2:-}" ]; then
		mkdir -p "$r/etc/systemd/system/node-agent.service.d"
		cp "$2" "$r/etc/systemd/system/node-agent.service.d/api-server.conf"
	fi
	grep -ho '^Exec\(Start\|Reload\)=[-+!@:]*[^ ]*' "$r"/etc/systemd/system/*.service |
		sed 's/^Exec[A-Za-z]*=[-+!@:]*//' | sort -u |
		while read -r b; do install -D -m 0755 /dev/null "$r$b"; done
}
units=(node-agent.service node-agent.path cloud-config-exec.service cloud-config-exec.path cloud-config-exec.timer
	cloud-config-exec-pull@example.service cloud-config-exec-kubelet-data-volume.service
	cloud-config-exec-os-update.service)

# verify_quiet ROOT: rc 0 and no output at all.
verify_quiet() {
	local out rc=0
	out=$(cd "$1/etc/systemd/system" && systemd-analyze verify --man=no --root="$1" "${units[@]}" 2>&1) || rc=$?
	if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
		printf '%s\n' "$out" | sed 's/^/#   /'
		return 1
	fi
}

# score ROOT UNIT: the one-decimal exposure level.
score() {
	systemd-analyze security --offline=yes --root="$1" "$2" 2>/dev/null |
		sed -n 's/.*level for [^:]*: \([0-9.]*\).*/\1/p'
}

# under ROOT UNIT MAX: exposure x10 <= MAX.
under() {
	systemd-analyze security --offline=yes --root="$1" --threshold="$3" "$2" >/dev/null 2>&1
}

# check_score ROOT UNIT MAX LABEL
check_score() {
	local s
	s=$(score "$1" "$2")
	check "$4 exposure $s <= $(($3 / 10)).$(($3 % 10))" under "$1" "$2" "$3"
}

stage "$W/plain"
check "systemd-analyze verify: no output for ${units[*]}" verify_quiet "$W/plain"
stage "$W/dropin" "$U/node-agent.service.d/api-server.conf.example"
check "systemd-analyze verify: no output with the api-server drop-in" verify_quiet "$W/dropin"

# The check itself must be able to fail: a typo in a key is only a warning.
stage "$W/typo"
sed -i 's/^ProtectSystem=/ProtectSytem=/' "$W/typo/etc/systemd/system/node-agent.service"
check_not "systemd-analyze verify: a misspelt key fails the check" verify_quiet "$W/typo"

# gardener-node-init.service exactly as Gardener's stock user data writes it
# (tests/fixtures/units/, from gardener/gardener pkg/component/extensions/
# operatingsystemconfig/nodeinit/nodeinit.go), with our drop-in where make
# install puts it.
node_init() { # ROOT [DROPIN]
	local r=$1 d
	d=$r/usr/lib/systemd/system/gardener-node-init.service.d
	cp "$TESTS_DIR/fixtures/units/gardener-node-init.service" "$r/etc/systemd/system/"
	mkdir -p "$d"
	cp "${2:-$U/gardener-node-init.service.d/50-node-agent.conf}" "$d/50-node-agent.conf"
	[ -e "$r/usr/lib/systemd/system/containerd.service" ] ||
		printf '[Service]\nExecStart=/usr/bin/containerd\n' >"$r/usr/lib/systemd/system/containerd.service"
	for b in /var/lib/gardener-node-agent/init.sh /usr/bin/systemctl /usr/bin/containerd; do
		[ -e "$r$b" ] || install -D -m 0755 /dev/null "$r$b"
	done
}
node_init "$W/plain"
units+=(gardener-node-init.service)
check "systemd-analyze verify: no output for gardener-node-init.service as Gardener writes it + our drop-in" verify_quiet "$W/plain"
sed 's/^ExecStartPost=/ExecStartPots=/' "$U/gardener-node-init.service.d/50-node-agent.conf" >"$W/typo.conf"
stage "$W/typo2"
node_init "$W/typo2" "$W/typo.conf"
check_not "systemd-analyze verify: a misspelt key in the drop-in fails the check" verify_quiet "$W/typo2"
check "gardener-node-init drop-in: ExecStart= reset, then node-agent.service (re)started; EnvironmentFile= reset" \
	python3 - "$U/gardener-node-init.service.d/50-node-agent.conf" <<-'PY'
	import sys
	lines = [l.strip() for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")]
	ex = [l for l in lines if l.startswith("ExecStart=")]
	sys.exit(not (ex[0] == "ExecStart=" and any("restart node-agent.service" in l for l in ex[1:])
	              and "EnvironmentFile=" in lines and not any("init.sh" in l or "gardener-node-agent" in l for l in ex)))
	PY

check_score "$W/plain" node-agent.service "$NA_MAX" "node-agent.service"
check_score "$W/dropin" node-agent.service "$NA_MAX" "node-agent.service + api-server.conf"
check_score "$W/plain" cloud-config-exec.service "$EXEC_MAX" "cloud-config-exec.service"
# A real node (issue 23): the API server is a load balancer's name, so the
# shipped unit has no address filter (it stays an opt-in drop-in); without
# configuration the unit is skipped by ExecCondition= and exit 78 is not
# restarted; READY does not wait for the API server, so TimeoutStartSec is
# short; node-agent.path starts it when a configuration exists (PathExists=:
# PathChanged= missed the stock user data written into a new directory).
check "node-agent.service: no IP address filter (a real node's API server is not on localhost)" \
	sh -c '! grep -q "^IPAddress" "$1" && grep -qx "IPAddressDeny=any" "$2"' sh \
	"$U/node-agent.service" "$U/node-agent.service.d/api-server.conf.example"
check "node-agent.service: ExecCondition=--config-present, RestartPreventExitStatus=78, TimeoutStartSec=90s" \
	sh -c 'grep -qx "ExecCondition=+/usr/sbin/node-agent --config-present" "$1" &&
		grep -qx "RestartPreventExitStatus=78" "$1" && grep -qx "TimeoutStartSec=90s" "$1"' sh "$U/node-agent.service"
check "node-agent.path: PathExists= on config.json, PathExistsGlob= on the stock config-<version>.yaml" \
	sh -c 'grep -qx "PathExists=/etc/node-agent/config.json" "$1" &&
		grep -qx "PathExistsGlob=/var/lib/gardener-node-agent/config\*.yaml" "$1" && ! grep -q "^PathChanged" "$1" &&
		grep -qx "Unit=node-agent.service" "$1"' sh "$U/node-agent.path"
# The pull unit has network (its purpose) and nothing else: no capability.
check_score "$W/plain" cloud-config-exec-pull@example.service "$PULL_MAX" \
	"cloud-config-exec-pull@.service"
check "cloud-config-exec.service keeps no network; the pull unit gets only AF_INET*, no capability" \
	sh -c 'grep -qx PrivateNetwork=yes "$1" && grep -qx RestrictAddressFamilies=AF_UNIX "$1" &&
		grep -qx "CapabilityBoundingSet=" "$2" && grep -qx "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6" "$2" &&
		grep -q "^ExecStart=/usr/bin/ctr .* images pull .* -- %I\$" "$2"' sh \
	"$U/cloud-config-exec.service" "$U/cloud-config-exec-pull@.service"
# ... and the threshold check can fail: an unhardened copy scores 9.6.
printf '[Service]\nExecStart=/usr/sbin/node-agent\n' >"$W/plain/etc/systemd/system/bare.service"
check_not "threshold rejects an unhardened unit (exposure $(score "$W/plain" bare.service))" \
	under "$W/plain" bare.service "$NA_MAX"

check "node-agent.service: stock user data as a credential, with the fallback a missing directory needs" \
	sh -c 'grep -qx "LoadCredential=gardener-node-agent:/var/lib/gardener-node-agent" "$1" &&
		grep -q "^SetCredential=gardener-node-agent:" "$1"' sh "$U/node-agent.service"
check "node-agent.service: systemctl reload sends SIGHUP to the main process (ExecReload=)" \
	grep -qx 'ExecReload=/bin/kill -HUP \$MAINPID' "$U/node-agent.service"
check "timer: periodic (OnUnitInactiveSec=) with RandomizedDelaySec=" \
	sh -c 'grep -q "^OnUnitInactiveSec=" "$1" && grep -q "^RandomizedDelaySec=" "$1"' sh "$U/cloud-config-exec.timer"
check "path unit watches /var/lib/node-agent/desired.json" \
	grep -qx 'PathChanged=/var/lib/node-agent/desired.json' "$U/cloud-config-exec.path"

# sysusers + tmpfiles against an empty root.
S=$W/sys
mkdir -p "$S/etc" "$S/var/lib"
if systemd-sysusers --root="$S" "$U/node-agent.sysusers" >"$W/sysusers.log" 2>&1; then
	ok "systemd-sysusers --root accepts node-agent.sysusers"
else
	fail "systemd-sysusers: $(cat "$W/sysusers.log")"
fi
for u in node-agent node-agent-authkeys; do
	check "user $u: system uid, nologin shell" \
		awk -F: -v u="$u" '$1 == u && $3 > 0 && $3 < 1000 && $7 == "/usr/sbin/nologin" { f = 1 } END { exit !f }' \
		"$S/etc/passwd"
done
na_uid=$(awk -F: '$1 == "node-agent" { print $3 }' "$S/etc/passwd")
na_gid=$(awk -F: '$1 == "node-agent" { print $3 }' "$S/etc/group")
if systemd-tmpfiles --root="$S" --create "$U/node-agent.tmpfiles" >"$W/tmpfiles.log" 2>&1; then
	ok "systemd-tmpfiles --root --create accepts node-agent.tmpfiles"
else
	fail "systemd-tmpfiles: $(cat "$W/tmpfiles.log")"
fi
check "/var/lib/node-agent is 700 node-agent:node-agent ($(stat -c '%a %u:%g' "$S/var/lib/node-agent" 2>&1))" \
	test "$(stat -c '%a %u:%g' "$S/var/lib/node-agent" 2>/dev/null)" = "700 $na_uid:$na_gid"
check "/var/lib/cloud-config-exec is 755 root:root ($(stat -c '%a %u:%g' "$S/var/lib/cloud-config-exec" 2>&1))" \
	test "$(stat -c '%a %u:%g' "$S/var/lib/cloud-config-exec" 2>/dev/null)" = "755 0:0"
check "sshd's RevokedKeys file exists from the start: empty, 644 root:root" \
	test "$(stat -c '%a %u:%g %s' "$S/var/lib/cloud-config-exec/revoked-keys.krl" 2>/dev/null)" = "644 0:0 0"

# sshd: the drop-in parses and is in effect together with the default
# AuthorizedKeysFile. sshd wants /run/sshd (here on the private /run).
if [ -n "${NA_PRIVATE_RUN:-}" ] && [ -x /usr/sbin/sshd ]; then
	ssh-keygen -q -t ed25519 -N '' -f "$W/hostkey"
	mkdir -p "$W/sshd_config.d"
	cp "$U/sshd_config.d/50-node-agent.conf" "$W/sshd_config.d/"
	printf 'Include %s/sshd_config.d/*.conf\nHostKey %s/hostkey\nUsePAM yes\n' "$W" "$W" >"$W/sshd_config"
	mkdir -p -m 0755 /run/sshd        # the private tmpfs /run from above
	/usr/sbin/sshd -T -f "$W/sshd_config" -C user=gardener,host=h,addr=127.0.0.1 >"$W/sshd-T" 2>&1
	check "sshd -T: AuthorizedKeysCommand with %u %f %t %k" \
		grep -qx 'authorizedkeyscommand /usr/libexec/node-agent/authkeys-cmd %u %f %t %k' "$W/sshd-T"
	check "sshd -T: AuthorizedKeysCommandUser node-agent-authkeys" \
		grep -qx 'authorizedkeyscommanduser node-agent-authkeys' "$W/sshd-T"
	check "sshd -T: AuthorizedKeysFile default stays (break-glass keys)" \
		grep -qx 'authorizedkeysfile .ssh/authorized_keys .ssh/authorized_keys2' "$W/sshd-T"
	check "sshd -T: RevokedKeys names the executor's KRL" \
		grep -qx 'revokedkeys /var/lib/cloud-config-exec/revoked-keys.krl' "$W/sshd-T"
else
	echo "# sshd drop-in check skipped: needs root and /usr/sbin/sshd"
fi
finish
