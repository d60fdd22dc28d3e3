#!/bin/bash
# The installed system, booted: the Debian package (debian/, built by
# tests/lib/deb.sh) installed with `apt-get install ./kube-node-agent_*.deb` into a
# throw-away Debian tree (tests/lib/sdbox.sh, with openssh-server and the
# programs' libraries) the way an image build does it (in the tree, nothing
# running), booted with systemd-nspawn. Debian 12 here; 056 runs the same on
# Debian 13 (SDBOX_SUITE=trixie: OpenSSH 10, sshd-session, systemd 257).
# From inside the box it proves:
#  - the package's postinst made the users and directories (sysusers,
#    tmpfiles) and enabled the path unit and the timer;
#  - a desired state dropped into /var/lib/node-agent starts cloud-config-exec
#    through the path unit (its files, its unit and its user appear), and the
#    timer is scheduled;
#  - sshd, with the drop-in, logs in through authkeys-cmd (the user's
#    authorized_keys moved away), refuses an unknown key, and still accepts a
#    local break-glass key from another user's authorized_keys;
#  - node-agent, configured by gardener-node-agent's stock user data only
#    (root's files handed over by LoadCredential=; no /etc/node-agent/config.json
#    at all, the Node named as the box's hostname) and started by the stock
#    gardener-node-init.service through the package's drop-in (its init.sh,
#    which would download gardener-node-agent, never runs), gets its client
#    certificate through a CSR with the bootstrap token, the executor removes
#    the token once the Node is registered; against the test API server run
#    in the box's network namespace, it reaches READY, runs as node-agent with no capabilities,
#    NoNewPrivs and Seccomp: 2, and its desired state reaches the Node;
#  - each sandbox forbids: the agent writing /etc (in the running agent's
#    mount namespace, and in a probe unit with the agent's exact sandbox),
#    the executor opening an AF_INET socket (probe unit with its sandbox);
#  - the package's life cycle on the running system: purge (units stopped,
#    state gone, users and everyone's authorized_keys kept), the previous
#    version installed under the package's old name node-agent (path and
#    timer started, node-agent not), the upgrade to kube-node-agent with its
#    .deb alone (apt removes node-agent: the agent restarted all the same;
#    the old package retired through the transitional one, state kept),
#    purge again leaving the tree as it was before that install (file list
#    and /etc contents compared).
# Run: ONLY=055 make check-integration (root). The rootfs is debootstrapped once
# (~60 s; the suite's package set is tests/lib/sdbox.sh's) and cached as a
# tar in $B/sdbox-cache; later runs take ~20 s.
source "$TESTS_DIR/lib/common.sh"

source "$TESTS_DIR/lib/sdbox-test.sh"
TOP=$(cd "$TESTS_DIR/.." && pwd)
KEYS=$TESTS_DIR/fixtures/keys

# --setup ROOTFS: called by sdbox.sh (SDBOX_SETUP) between debootstrap and boot.
if [ "${1:-}" = --setup ]; then
	R=$2
	set -e
	# As an image build installs it: apt-get in the tree, where nothing runs
	# (the postinst enables the units and starts none).
	cp "$S/debs/$DEB_NAME" "$R/tmp/"
	chroot "$R" /bin/sh -c "cd /tmp && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ./$DEB_NAME" \
		>"$S/apt-image.log" 2>&1 || { cat "$S/apt-image.log" >&2; exit 1; }
	rm -f "$R/tmp/$DEB_NAME"
	systemctl --root="$R" is-enabled node-agent.service cloud-config-exec.path cloud-config-exec.timer \
		>"$S/enabled-by-package" 2>&1 || true
	# node-agent is started after boot, once its token is readable by it.
	systemctl --root="$R" disable node-agent.service node-agent.path >/dev/null 2>&1
	systemctl --root="$R" enable ssh.service >/dev/null 2>&1
	install -m 0644 "$S/pki/ca.crt" "$R/etc/node-agent/ca.crt"
	install -m 0640 "$S/token" "$R/etc/node-agent/token"
	# gardener-node-agent's stock user data, root's as Gardener writes it
	# (gardener.md 4.2): node-agent reads it through LoadCredential=.
	install -d -m 0700 "$R/var/lib/gardener-node-agent" "$R/var/lib/gardener-node-agent/credentials"
	install -m 0600 "$S/gna-config.yaml" "$R/var/lib/gardener-node-agent/config-v1.149.3.yaml"
	install -m 0640 "$S/pki/ca.crt" "$R/var/lib/gardener-node-agent/cluster-ca.crt"
	printf '%s\n' "$KUBE_MACHINE" >"$R/var/lib/gardener-node-agent/machine-name"
	printf 'abcdef.0123456789abcdef' >"$R/var/lib/gardener-node-agent/credentials/bootstrap-token"
	chmod 0640 "$R/var/lib/gardener-node-agent/machine-name" "$R/var/lib/gardener-node-agent/credentials/bootstrap-token"
	# ... and gardener-node-init.service as the user data writes it
	# (tests/fixtures/units/), with an init.sh that would download
	# gardener-node-agent: it only leaves a mark. The package's drop-in must
	# keep it from running. containerd.service, which the unit requires, is
	# in every Gardener image: a stand-in here.
	install -m 0644 "$TESTS_DIR/fixtures/units/gardener-node-init.service" "$R/etc/systemd/system/"
	printf '#!/bin/sh\ntouch /var/lib/gardener-node-agent/init-sh-ran\nexit 1\n' >"$R/var/lib/gardener-node-agent/init.sh"
	chmod 0755 "$R/var/lib/gardener-node-agent/init.sh"
	printf '[Unit]\nDescription=containerd (stand-in)\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n' \
		>"$R/etc/systemd/system/containerd.service"
	install -d -m 0700 "$R/root/keys"
	install -m 0600 "$KEYS/gardener-current" "$KEYS/gardener-previous" "$R/root/keys/"
	# A local admin whose own authorized_keys (not the snapshot) holds the
	# break-glass key.
	useradd --root "$R" -m -s /bin/sh breakglass
	install -d -m 0700 "$R/home/breakglass/.ssh"
	install -m 0600 "$KEYS/gardener-previous.pub" "$R/home/breakglass/.ssh/authorized_keys"
	chroot "$R" chown -R breakglass:breakglass /home/breakglass/.ssh
	# Probe units: the installed units with only Type= and ExecStart= changed.
	for u in node-agent cloud-config-exec; do
		sed -e "s|^ExecStart=.*|ExecStart=/usr/local/sbin/na-probe $u|" -e 's/^Type=.*/Type=oneshot/' \
			-e '/^WatchdogSec=/d' -e '/^NotifyAccess=/d' -e '/^\[Install\]/,$d' \
			"$R/lib/systemd/system/$u.service" >"$R/etc/systemd/system/na-probe-$u.service"
	done
	# ... and one whose credential directory does not exist (not a Gardener node).
	sed -e 's|^ExecStart=.*|ExecStart=/usr/local/sbin/na-probe node-agent-nodir|' \
		-e 's|^LoadCredential=gardener-node-agent:.*|LoadCredential=gardener-node-agent:/var/lib/no-such-dir|' \
		"$R/etc/systemd/system/na-probe-node-agent.service" >"$R/etc/systemd/system/na-probe-node-agent-nodir.service"
	install -m 0755 "$S/na-probe" "$R/usr/local/sbin/na-probe"
	exit 0
fi

require_root
for t in systemd-nspawn debootstrap nsenter unshare; do
	command -v "$t" >/dev/null || skip_all "needs $t (scripts/install-deps: systemd-container debootstrap)"
done
for t in dpkg-buildpackage dh fakeroot; do
	command -v "$t" >/dev/null || skip_all "needs $t to build the package (scripts/install-deps: dpkg-dev debhelper fakeroot)"
done
[ -f /usr/share/selinux/devel/Makefile ] || skip_all "needs selinux-policy-dev to build the package"
# The package is always a production build (debian/rules); the sanitizer pass
# (make check-sanitize) skips this test so that it does not boot twice:
# the booted system runs the installed binaries under the units' own
# system-call filters, which the sanitizer runtimes' extra calls (LeakSanitizer's
# ptrace at exit among them) do not pass: the executor's run through the path
# unit then ends in a sanitizer failure, not in ours. `make check` boots the
# production build; the sanitizer build runs every other test.
if sanitized "$B/cloud-config-exec"; then
	skip_all "sanitizer build: the installed units' seccomp filters exclude the sanitizer runtime (make check runs this test on the production build)"
fi
source "$TESTS_DIR/lib/kube.sh"

S=$(scratch)
export S
export SDBOX_SUITE=${SDBOX_SUITE:-bookworm}
export SDBOX_STATE=/var/tmp/node-agent-sdbox-055-$SDBOX_SUITE-$$
export SDBOX_SRC=$S
export SDBOX_SETUP="bash '$0' --setup \"\$1\""

# The package (debian/changelog's version) and the one before it (the
# upgrade's starting point): the same package relabelled as node-agent
# 0.1.0, the package's name and version before the rename (the maintainer
# scripts' path from the old name is what is tested).
source "$TESTS_DIR/lib/deb.sh"
mkdir -p "$S/debs"
t0=$(date +%s)
DEB=$(deb_build 2>"$S/deb-build.log") || {
	sed 's/^/#   /' "$S/deb-build.log" | tail -30
	fail "the package builds"
	finish
	exit 1
}
cp "$DEB" "$(deb_transitional "$DEB")" "$S/debs/"
TRANS_NAME=$(basename "$(deb_transitional "$DEB")")
OLD_DEB=$(deb_repack "$DEB" 0.1.0 "$S/debs" "$DEB_OLD_PACKAGE") || { fail "repack as node-agent 0.1.0"; finish; exit 1; }
DEB_NAME=${DEB##*/} OLD_NAME=${OLD_DEB##*/}
DEB_VERSION=$(dpkg-deb -f "$DEB" Version)
export DEB_NAME
echo "# packages: $DEB_NAME, $OLD_NAME ($(($(date +%s) - t0)) s)"

# The API server's PKI and token exist before boot (they go into the tree).
"$TESTS_DIR/lib/mkcerts.sh" "$S/pki" "$KUBE_NODE" >/dev/null 2>&1 || { fail "mkcerts"; finish; exit 1; }
printf '%s' "$KUBE_TOKEN" >"$S/token"
# No node-agent config file: only stock user data. Server, CA, Secret,
# machine name and bootstrap token come from /var/lib/gardener-node-agent
# (the package's default when /etc/node-agent/config.json is absent); the
# client certificate from a CSR; the Node's name is the hostname.
# The stock config names the version the Node label must get: only this
# root-only file can provide it.
cat >"$S/gna-config.yaml" <<GNA
apiVersion: nodeagent.config.gardener.cloud/v1alpha1
kind: NodeAgentConfiguration
apiServer:
  server: https://127.0.0.1:6443
  caFile: /var/lib/gardener-node-agent/cluster-ca.crt
controllers:
  operatingSystemConfig:
    secretName: $KUBE_SECRET
    kubernetesVersion: 1.33.2
GNA
cat >"$S/na-probe" <<'PROBE'
#!/bin/bash
# na-probe UNIT: what the sandbox of UNIT allows, one "name: result" line each.
case $1 in node-agent) out=/var/lib/node-agent/probe.out ;; node-agent-nodir) out=/var/lib/node-agent/probe-nodir.out ;;
*) out=/var/lib/cloud-config-exec/probe.out ;; esac
{
	echo "uid: $(id -u)"
	echo "credentials: $(ls "${CREDENTIALS_DIRECTORY:-/nonexistent}" 2>/dev/null | tr '\n' ' ')"
	if cat /var/lib/gardener-node-agent/machine-name >/dev/null 2>&1; then echo "gna-dir: readable"
	else echo "gna-dir: unreadable"; fi
	grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status | tr -d '\t' | sed 's/:/: /'
	if echo x 2>/dev/null >/etc/na-probe-etc; then echo "write-etc: allowed"; rm -f /etc/na-probe-etc
	else echo "write-etc: denied"; fi
	if echo x 2>/dev/null >/usr/na-probe-usr; then echo "write-usr: allowed"; rm -f /usr/na-probe-usr
	else echo "write-usr: denied"; fi
	for d in /home /root; do
		if mkdir "$d/na-probe-dir" 2>/dev/null; then rmdir "$d/na-probe-dir"; echo "write-${d#/}: allowed"
		else echo "write-${d#/}: denied"; fi
	done
	if ls -A /home 2>/dev/null | grep -q .; then echo "see-home: yes"; else echo "see-home: no"; fi
	if cat /etc/ssh/ssh_host_ed25519_key >/dev/null 2>&1; then echo "host-private-key: readable"
	else echo "host-private-key: unreadable"; fi
	if err=$( { exec 3<>/dev/tcp/127.0.0.1/22; } 2>&1 ); then echo "inet-socket: connected"
	else echo "inet-socket: failed (${err##*: })"; fi
} >"$out.tmp" 2>&1
mv "$out.tmp" "$out"
PROBE

sdbox_boot "with everything installed"
state=$(ctl is-system-running 2>/dev/null)
check "system state is running (got '$state')" test "$state" = running
[ "$state" = running ] || dump "failed units" ctl --failed

# --- sysusers, tmpfiles ------------------------------------------------------
na_uid=$(box getent passwd node-agent | cut -d: -f3)
akc_uid=$(box getent passwd node-agent-authkeys | cut -d: -f3)
check "sysusers at boot: node-agent ($na_uid) and node-agent-authkeys ($akc_uid) exist" \
	test -n "$na_uid" -a -n "$akc_uid"
check "tmpfiles at boot: /var/lib/node-agent 700 node-agent:node-agent" \
	test "$(box stat -c '%a %U:%G' /var/lib/node-agent)" = "700 node-agent:node-agent"
check "tmpfiles at boot: /var/lib/cloud-config-exec 755 root:root" \
	test "$(box stat -c '%a %U:%G' /var/lib/cloud-config-exec)" = "755 root:root"
check "apt-get install ./$DEB_NAME in the tree enabled node-agent.service, the path unit and the timer ($(tr '\n' ' ' <"$S/enabled-by-package"))" \
	test "$(tr '\n' ' ' <"$S/enabled-by-package")" = "enabled enabled enabled "
check "cloud-config-exec.path is active" test "$(ctl is-active cloud-config-exec.path)" = active
check "cloud-config-exec.timer is active" test "$(ctl is-active cloud-config-exec.timer)" = active
check "the timer is scheduled (systemctl list-timers)" \
	sh -c "'$SDBOX' ctl list-timers --no-legend | grep -q 'cloud-config-exec.timer.*cloud-config-exec.service'"
check "ssh.service is active, with the drop-in" \
	sh -c "test \"\$('$SDBOX' ctl is-active ssh.service)\" = active &&
		'$SDBOX' sh sshd -T -C user=gardener,host=h,addr=127.0.0.1 |
		grep -qx 'authorizedkeyscommand /usr/libexec/node-agent/authkeys-cmd %u %f %t %k'"

# --- a desired state dropped in: the path unit runs the executor --------------
cat >"$S/osc1.json" <<EOF
{"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "OperatingSystemConfig",
 "spec": {"type": "debian", "purpose": "reconcile",
  "files": [
   {"path": "/etc/na-boot/hello.conf", "permissions": 420,
    "content": {"inline": {"data": "dropped in by hand\n"}}},
   {"path": "/var/lib/gardener-user-authorized-keys", "permissions": 384,
    "content": {"inline": {"data": "$(cat "$KEYS/gardener-current.pub")\n"}}}],
  "units": [
   {"name": "na-boot-probe.service", "command": "start", "enable": true,
    "content": "[Unit]\nDescription=started by cloud-config-exec\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}]}}
EOF
mkdesired() { # OSC GENERATION > desired.json
	python3 - "$1" "$2" <<-'PY'
	import hashlib, json, sys
	osc = open(sys.argv[1]).read()
	print(json.dumps({"version": 1, "checksum": hashlib.sha256(osc.encode()).hexdigest(),
	                  "osc": osc, "generation": int(sys.argv[2])}))
	PY
}
sum1=$(sha256sum "$S/osc1.json" | cut -d' ' -f1)
mkdesired "$S/osc1.json" 1 >"$BOX/var/lib/node-agent/.desired.json.tmp"
box chown node-agent:node-agent /var/lib/node-agent/.desired.json.tmp
box chmod 0600 /var/lib/node-agent/.desired.json.tmp
box mv /var/lib/node-agent/.desired.json.tmp /var/lib/node-agent/desired.json
result_is() { grep -q "\"checksum\":[[:space:]]*\"$1\"" "$BOX/var/lib/cloud-config-exec/result.json" 2>/dev/null; }
if wait_for 30 result_is "$sum1"; then
	ok "desired.json dropped in -> cloud-config-exec ran (result.json names its checksum)"
else
	fail "desired.json dropped in -> cloud-config-exec ran"
	dump "journal" box journalctl -q --no-pager -u cloud-config-exec.service -u cloud-config-exec.path
fi
check "... started through the path unit (TriggeredBy, Result=success)" \
	sh -c "'$SDBOX' ctl show -p TriggeredBy -p Result cloud-config-exec.service | tr '\n' ' ' |
		grep -q 'TriggeredBy=.*cloud-config-exec.path.*Result=success\|Result=success.*TriggeredBy=.*cloud-config-exec.path'"
check "... result.json says success" grep -q '"success":[[:space:]]*true' "$BOX/var/lib/cloud-config-exec/result.json"
check "... the OSC's file appeared: /etc/na-boot/hello.conf" \
	test "$(cat "$BOX/etc/na-boot/hello.conf" 2>/dev/null)" = "dropped in by hand"
check "... the OSC's unit was started over D-Bus from the sandbox: na-boot-probe.service active" \
	test "$(ctl is-active na-boot-probe.service)" = active
check "... the login user gardener was created (useradd inside the sandbox)" box sh -c "getent passwd gardener >/dev/null"
check "... the key snapshot exists" test -s "$BOX/var/lib/cloud-config-exec/authkeys.snap"
grep -q '"success":[[:space:]]*true' "$BOX/var/lib/cloud-config-exec/result.json" 2>/dev/null ||
	dump "journal" box journalctl -q --no-pager -u cloud-config-exec.service

# --- sshd + authkeys-cmd ----------------------------------------------------
login() { # USER KEY: runs `id -un` over ssh to 127.0.0.1 inside the box
	boxn ssh -i "/root/keys/$2" -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no \
		-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5 "$1@127.0.0.1" id -un 2>&1
}
ak=/home/gardener/.ssh/authorized_keys
box sh -c "[ -e $ak ] && mv $ak $ak.moved-away-by-test || true"
out=$(login gardener gardener-current)
check "ssh gardener@127.0.0.1 through authkeys-cmd (authorized_keys moved away): '$out'" test "$out" = gardener
box sh -c "[ -e $ak.moved-away-by-test ] && mv $ak.moved-away-by-test $ak || true"
check "sshd's journal: the key was accepted for gardener" \
	sh -c "'$SDBOX' sh journalctl -q --no-pager -u ssh.service | grep -q 'Accepted publickey for gardener'"
# OpenSSH >= 9.8 (Debian 13: 10.0): the listener only execs sshd-session per
# connection, and sshd-session's privileged monitor runs the
# AuthorizedKeysCommand; the accepted key is logged by it.
sshv=$(box sh -c 'ssh -V 2>&1')
echo "# $SDBOX_SUITE: $sshv, $(box systemctl --version | head -1)"
if box test -x /usr/lib/openssh/sshd-session; then
	check "sshd-session (${sshv%%,*}) logged the login through authkeys-cmd" \
		sh -c "'$SDBOX' sh journalctl -q --no-pager -u ssh.service -t sshd-session | grep -q 'Accepted publickey for gardener'"
fi
out=$(login gardener gardener-previous)
check_not "a key that is in neither the snapshot nor authorized_keys is refused" test "$out" = gardener
out=$(login breakglass gardener-previous)
check "break-glass: breakglass's own authorized_keys still works: '$out'" test "$out" = breakglass

# Drift repair by a plain start (what the timer does), in the sandbox: a
# ~/.ssh the user loosened goes back to 0700 (chmod of a user-owned
# directory: needs CAP_FOWNER).
box chmod 0755 /home/gardener/.ssh
ctl start cloud-config-exec.service >/dev/null 2>&1
check "a timer-style run repairs ~gardener/.ssh 0755 -> $(box stat -c %a /home/gardener/.ssh)" \
	test "$(box stat -c %a /home/gardener/.ssh)" = 700

# --- node-agent against the test API server in the box's network namespace ----
if [ ! -x "$BOX/usr/sbin/node-agent" ]; then
	echo "# node-agent is not built yet: its checks are skipped (not counted)"
else
	cp "$S/osc1.json" "$S/osc2.json"
	sed -i 's|dropped in by hand|written by node-agent|' "$S/osc2.json"
	sum2=$(sha256sum "$S/osc2.json" | cut -d' ' -f1)
	sa=system:serviceaccount:kube-system:node-agent
	# The node-agent default node name: the box's hostname.
	KUBE_NODE=$(nsenter -t "$SDBOX_LEADER" -u -- hostname | tr 'A-Z' 'a-z')
	nsenter -t "$SDBOX_LEADER" -n -- python3 "$TESTS_DIR/lib/kube-apiserver.py" serve \
		--pki "$S/pki" --listen 127.0.0.1:6443 --control "$KUBE_CONTROL" \
		--token "$KUBE_TOKEN=$sa" --token admin-token=admin --admin admin \
		--secret-reader "$sa" --node-admin "$sa" --node "$KUBE_NODE" \
		--bootstrap-token abcdef.0123456789abcdef --machine "$KUBE_MACHINE" \
		--secret-reader group:gardener.cloud:node-agents --node-admin group:gardener.cloud:node-agents \
		--secret "kube-system/$KUBE_SECRET=$S/osc2.json" --ready-file "$S/ready" \
		>"$S/server.log" 2>&1 &
	kpid=$!
	on_exit "kill $kpid; wait $kpid"
	kctl() { nsenter -t "$SDBOX_LEADER" -n -- python3 "$TESTS_DIR/lib/kube-apiserver.py" ctl "$@"; }
	check "test API server up in the box's network namespace" wait_for 10 test -e "$S/ready"
	box chgrp node-agent /etc/node-agent/token
	t0=$(now)
	# What the user data's script does with gardener-node-init.service
	# (command start, enable true): enable it and start it. node-agent.service
	# is disabled and stopped until then: only the drop-in can start it.
	check "gardener-node-init.service carries the package's drop-in" \
		sh -c "'$SDBOX' ctl show -p DropInPaths --value gardener-node-init.service | grep -q /gardener-node-init.service.d/50-node-agent.conf"
	check "node-agent.service disabled and inactive before" \
		test "$(ctl is-enabled node-agent.service) $(ctl is-active node-agent.service)" = "disabled inactive"
	ctl enable gardener-node-init.service >/dev/null 2>&1
	ctl restart gardener-node-init.service >/dev/null 2>&1
	check "gardener-node-init.service ran (Result=success) and disabled itself, as gardener-node-agent's bootstrap does" \
		test "$(ctl show -p Result --value gardener-node-init.service) $(ctl is-enabled gardener-node-init.service)" = "success disabled"
	check "node-agent.service is active (READY=1 via sd_notify)" \
		wait_for 30 sh -c "test \"\$('$SDBOX' ctl is-active node-agent.service)\" = active"
	pid=$(ctl show -p MainPID --value node-agent.service)
	st=$(box cat "/proc/$pid/status" 2>/dev/null)
	field() { awk -v k="$1:" '$1 == k { print $2 }' <<<"$st"; }
	check "node-agent runs as node-agent (uid $(field Uid))" test "$(field Uid)" = "$na_uid"
	check "node-agent has no capabilities (CapEff $(field CapEff), CapPrm $(field CapPrm), CapBnd $(field CapBnd))" \
		test "$(field CapEff)$(field CapPrm)$(field CapBnd)" = 000000000000000000000000000000000000000000000000
	check "node-agent: NoNewPrivs 1, Seccomp 2 (got $(field NoNewPrivs), $(field Seccomp))" \
		test "$(field NoNewPrivs) $(field Seccomp)" = "1 2"
	# systemctl reload (ExecReload= SIGHUP; RELOADING=1 ... READY=1): the
	# same process re-reads its configuration.
	if ctl reload node-agent.service >"$S/reload.log" 2>&1; then
		ok "systemctl reload node-agent.service succeeds"
	else
		fail "systemctl reload node-agent.service succeeds"; dump "reload" cat "$S/reload.log"
		dump "node-agent journal" box journalctl -q --no-pager -u node-agent.service
	fi
	reloaded() { box journalctl -q --no-pager -u node-agent.service | grep -q 'reloading configuration from'; }
	check "  ... the same process (pid $pid) reloaded its configuration and is active" \
		sh -c "test \"\$('$SDBOX' ctl show -p MainPID --value node-agent.service) \$('$SDBOX' ctl is-active node-agent.service)\" = '$pid active'"
	check "  ... its journal says so" wait_for 10 reloaded
	if kube_wait_annotation checksum/cloud-config-data "$sum2" "$t0" 30 >/dev/null; then
		ok "node-agent -> desired.json -> path unit -> cloud-config-exec -> Node annotated with the checksum"
	else
		fail "Node annotated with the OSC's checksum after the apply"
		dump "node-agent journal" box journalctl -q --no-pager -u node-agent.service
		dump "cloud-config-exec journal" box journalctl -q --no-pager -u cloud-config-exec.service
		dump "the path unit" box sh -c 'systemctl status --no-pager cloud-config-exec.path;
			journalctl -q --no-pager -o short-precise -u cloud-config-exec.path -u cloud-config-exec.service |
			tail -n 8; ls -la --time-style=full-iso /var/lib/node-agent'
		dump "API server log" cat "$S/server.log"
	fi
	journal_has() { box journalctl -q --no-pager -u node-agent.service | grep -q -- "$1"; }
	api_log_has() { kctl GET /log | grep -q -- "$1"; }
	check "client certificate through a CSR with the stock bootstrap token ($(box journalctl -q --no-pager -u node-agent.service | grep -o 'client certificate issued after [0-9]* ms' | head -1))" \
		journal_has 'client certificate issued'
	check "... client.pem 0600 node-agent in its state directory only ($(box stat -c '%a %U' /var/lib/node-agent/client.pem 2>&1))" \
		test "$(box stat -c '%a %U' /var/lib/node-agent/client.pem 2>/dev/null)" = "600 node-agent"
	check "... requests then made as gardener.cloud:node-agent:machine:$KUBE_MACHINE" \
		api_log_has '"user": "gardener.cloud:node-agent:machine:'"$KUBE_MACHINE"'"'
	check "the Node is registered: the executor removed the bootstrap token" \
		wait_for 20 box test ! -e /var/lib/gardener-node-agent/credentials/bootstrap-token
	check "... and wrote no kubelet bootstrap kubeconfig" box test ! -e /var/lib/kubelet/kubeconfig-bootstrap
	check "Node label kubernetes-version 1.33.2 from the root-only stock config via LoadCredential= ($(kube_label worker.gardener.cloud/kubernetes-version))" \
		test "$(kube_label worker.gardener.cloud/kubernetes-version)" = 1.33.2
	check "... the agent's OSC file content is on the node" \
		test "$(cat "$BOX/etc/na-boot/hello.conf" 2>/dev/null)" = "written by node-agent"
	# The running agent's own mount namespace: /etc read-only even for root.
	# try DIR: "allowed" or "denied" for root writing DIR in the agent's mount namespace
	try() {
		[ -n "$pid" ] && [ "$pid" != 0 ] || return 0
		box nsenter -t "$pid" -m -- sh -c \
			'if echo x 2>/dev/null >"$1/na-probe"; then rm -f "$1/na-probe"; echo allowed; else echo denied; fi' sh "$1"
	}
	check "in node-agent's mount namespace, /etc is not writable, even as root ($(try /etc))" \
		test "$(try /etc)" = denied
	check "... while its state directory is (control: $(try /var/lib/node-agent))" \
		test "$(try /var/lib/node-agent)" = allowed
	check "no /etc/node-agent/config.json: --check-config names the stock data as the configuration" \
		sh -c "test ! -e '$BOX/etc/node-agent/config.json' &&
			'$SDBOX' sh /usr/sbin/node-agent --check-config | grep -q 'gardener.nodeAgentDir by default'"
	check "the agent stayed up (no restart)" test "$(ctl show -p NRestarts --value node-agent.service)" = 0
	check "gardener-node-agent never downloaded or started: init.sh never ran, no binary, no unit" \
		test ! -e "$BOX/var/lib/gardener-node-agent/init-sh-ran" -a ! -e "$BOX/opt/bin/gardener-node-agent" -a \
		"$(ctl show -p LoadState --value gardener-node-agent.service)" = not-found
fi

# --- the sandboxes, exactly as installed, with a probe as ExecStart -------------
probe() { # UNIT KEY: the probe's answer for KEY
	sed -n "s/^$2: //p" "$BOX/var/lib/$1/probe.out" 2>/dev/null
}
ctl start na-probe-node-agent.service na-probe-cloud-config-exec.service na-probe-node-agent-nodir.service \
	>/dev/null 2>&1
# A probe unit that did not run: say why, from systemd, and start it once
# more; a second failure fails the checks below. (CI saw a node-agent probe
# fail before ExecStart twice. The unit then had RuntimeDirectory=, shared by
# both node-agent probes and the running agent: a probe's stop removes
# /run/node-agent while the next one may be mounting it. The agent never
# used that directory and the unit no longer has it.)
for p in node-agent:probe cloud-config-exec:probe node-agent-nodir:probe-nodir; do
	u=${p%%:*} out=$BOX/var/lib/${u%-nodir}/${p#*:}.out
	[ -s "$out" ] && continue
	echo "# na-probe-$u.service did not run; systemd says:"
	ctl status na-probe-$u.service 2>&1 | tail -n 12 | sed 's/^/#   /'
	box journalctl -q --no-pager -u na-probe-$u.service 2>&1 | tail -n 12 | sed 's/^/#   /'
	ctl reset-failed na-probe-$u.service >/dev/null 2>&1
	ctl start na-probe-$u.service >/dev/null 2>&1
done
check "control: an AF_INET connection to sshd works outside the sandboxes" \
	boxn bash -c 'exec 3<>/dev/tcp/127.0.0.1/22'
check "agent sandbox: runs as node-agent" test "$(probe node-agent uid)" = "$na_uid"
check "agent sandbox: CapEff/CapBnd 0 ($(probe node-agent CapEff)/$(probe node-agent CapBnd))" \
	test "$(probe node-agent CapEff)$(probe node-agent CapBnd)" = 00000000000000000000000000000000
check "agent sandbox: write to /etc denied" test "$(probe node-agent write-etc)" = denied
check "agent sandbox: /home hidden" test "$(probe node-agent see-home)" = no
check "agent sandbox: host private key unreadable" test "$(probe node-agent host-private-key)" = unreadable
check "agent sandbox: AF_INET allowed (to localhost): $(probe node-agent inet-socket)" \
	test "$(probe node-agent inet-socket)" = connected
check "executor sandbox: CapBnd is chown+dac_override+fowner ($(probe cloud-config-exec CapBnd))" \
	test "$(probe cloud-config-exec CapBnd)" = 000000000000000b
check "executor sandbox: Seccomp 2, NoNewPrivs 1" \
	test "$(probe cloud-config-exec Seccomp) $(probe cloud-config-exec NoNewPrivs)" = "2 1"
check "executor sandbox: AF_INET socket fails: $(probe cloud-config-exec inet-socket)" \
	sh -c 'test -n "$1" && test "$1" != connected' sh "$(probe cloud-config-exec inet-socket)"
check "executor sandbox: write to /etc allowed (control)" test "$(probe cloud-config-exec write-etc)" = allowed
check "executor sandbox: write to /usr denied" test "$(probe cloud-config-exec write-usr)" = denied
check "executor sandbox: write to /home allowed (useradd -m, ~/.ssh)" test "$(probe cloud-config-exec write-home)" = allowed
check "executor sandbox: write to /root denied" test "$(probe cloud-config-exec write-root)" = denied
check "agent sandbox: write to /home denied" test "$(probe node-agent write-home)" = denied
# Stock user data through LoadCredential=: flattened copies, the root-only
# originals stay out of reach; no directory, no failed start.
creds=$(probe node-agent credentials)
check "agent sandbox: stock files as credentials ($creds)" sh -c 'case "$1" in
	*gardener-node-agent_cluster-ca.crt*gardener-node-agent_config-v1.149.3.yaml*gardener-node-agent_machine-name*) ;;
	*) exit 1 ;; esac' sh "$creds"
check "agent sandbox: /var/lib/gardener-node-agent itself unreadable" \
	test "$(probe node-agent gna-dir)" = unreadable
nodir=$(sed -n 's/^credentials: //p' "$BOX/var/lib/node-agent/probe-nodir.out" 2>/dev/null)
check "agent sandbox without the directory: starts, only the fallback credential ('$nodir')" \
	test "$nodir" = "gardener-node-agent "

# apt-get inside the box (no network: every Depends is in the tree); the
# packages are in /src/debs (SDBOX_SRC).
boxapt() { box env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o Dpkg::Use-Pty=0 "$@" >>"$S/apt.log" 2>&1; }

# --- SELinux: the package's module in the box's own refpolicy ------------------
# (Debian 13 only: 051 checks Debian 12's on the host.) SELinux is not enabled
# in this kernel, so the postinst must not have loaded the module; with a
# stub selinuxenabled that says yes, postinst loads it and a remove keeps it.
# OpenSSH >= 9.8 runs the AuthorizedKeysCommand from sshd-session, not from
# the listener: the assertions prove that Debian 13's policy labels
# sshd-session sshd_exec_t and runs it in sshd_t (no transition), so the
# module's sshd_t -> authkeys_cmd_t transition is the one that applies.
if box test -x /usr/bin/sesearch -a -d /var/lib/selinux/default; then
	has_module() { "$SDBOX" sh semodule -l 2>/dev/null | grep -q '^node_agent$'; }
	check_not "postinst left SELinux alone: selinuxenabled is false here, node_agent not in the store" has_module
	# The maintainer scripts' SELinux branch, for real: a selinuxenabled that
	# says yes (first in PATH), then postinst (reinstall) must load the module
	# into the store (semodule -i writes the store and the policy file; with
	# SELinux off it loads nothing into the kernel).
	# (apt runs dpkg with its own PATH, DPkg::Path, without /usr/local.)
	printf '#!/bin/sh\nexit 0\n' >"$BOX/usr/local/sbin/selinuxenabled"
	chmod 0755 "$BOX/usr/local/sbin/selinuxenabled"
	SEPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	if box env PATH=$SEPATH DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Path=$SEPATH install --reinstall "/src/debs/$DEB_NAME" >"$S/semodule.log" 2>&1 &&
		has_module; then
		ok "postinst with SELinux enabled: semodule -i loaded the Debian 12-built node_agent.pp into $SDBOX_SUITE's refpolicy ($(box dpkg-query -W -f '${Version}' selinux-policy-default))"
	else
		fail "postinst with SELinux enabled loads node_agent.pp"; dump "apt" cat "$S/semodule.log"
	fi
	fc=$BOX/etc/selinux/default/contexts/files/file_contexts
	check "file contexts: /usr/lib/openssh/sshd-session is sshd_exec_t" \
		grep -q '^/usr/lib/openssh/sshd-session[[:space:]].*:sshd_exec_t:' "$fc"
	check "file contexts: the module's authkeys-cmd is authkeys_cmd_exec_t" \
		grep -q '^/usr/libexec/node-agent/authkeys-cmd[[:space:]].*authkeys_cmd_exec_t' "$fc"
	# The labels the module's Debian 13 rules are for, as the box's libselinux
	# resolves them.
	for pt in /usr/bin/containerd=dockerd_exec_t /run/containerd/containerd.sock=container_runtime_t \
		/etc/systemd/system/kubelet.service=kubernetes_unit_t /var/lib/kubelet/config/kubelet=container_var_lib_t \
		/etc/containerd/config.toml=container_config_t /lib/systemd/system/cloud-config-exec-kubelet-data-volume.service=node_agent_unit_t; do
		t=$(box matchpathcon "${pt%%=*}" 2>/dev/null | awk '{ split($2, c, ":"); print c[3] }')
		check "$SDBOX_SUITE file contexts: ${pt%%=*} is ${pt#*=} ($t)" test "$t" = "${pt#*=}"
	done
	cp "$TESTS_DIR/lib/sesearch-batch.py" "$S/"
	P=$(ls "$BOX"/etc/selinux/default/policy/policy.* | sort -V | tail -1)
	box python3 /src/sesearch-batch.py "/etc/selinux/default/policy/${P##*/}" >"$S/se.out" 2>&1 <<-'ASSERT'
	want -A -s sshd_t -t sshd_exec_t -c file -p execute_no_trans
	deny -T -s sshd_t -t sshd_exec_t -c process
	want -T -s sshd_t -t authkeys_cmd_exec_t -c process
	want -A -s sshd_t -t authkeys_cmd_t -c process -p transition
	want -A -s authkeys_cmd_t -t authkeys_cmd_exec_t -c file -p entrypoint
	want -A -s authkeys_cmd_t -t sshd_t -c fifo_file -p write
	want -A -s authkeys_cmd_t -t sshd_t -c fd -p use
	want -A -s authkeys_cmd_t -t cloud_config_exec_var_lib_t -c file -p read
	deny -A -s authkeys_cmd_t -c capability
	deny -A -s authkeys_cmd_t -c tcp_socket,udp_socket -p create,name_connect
	deny -A -s authkeys_cmd_t -t node_agent_var_lib_t
	want -A -s node_agent_t -t http_port_t -c tcp_socket -p name_connect
	deny -A -s node_agent_t -c capability
	deny -A -s cloud_config_exec_t -c tcp_socket,udp_socket -p name_connect,name_bind,create
	# NoNewPrivileges=yes units need nnp_transition for their domains
	want -A -s init_t -t cloud_config_probe_t -c process2 -p nnp_transition
	want -A -s init_t -t cloud_config_pull_t -c process2 -p nnp_transition
	want -A -s init_t -t cloud_config_datavol_t -c process2 -p nnp_transition
	want -A -s cloud_config_exec_t -t useradd_t -c process2 -p nnp_transition
	# Debian 13's container, docker and kubernetes modules label containerd
	# (dockerd_t, its socket container_runtime_t), /etc/containerd, the
	# kubelet's directory and units otherwise: the module's optional block
	want -A -s cloud_config_exec_t -t dockerd_t -c unix_stream_socket -p connectto
	want -A -s cloud_config_pull_t -t dockerd_t -c unix_stream_socket -p connectto
	want -A -s cloud_config_probe_t -t dockerd_t -c unix_stream_socket -p connectto
	want -A -s cloud_config_exec_t -t container_runtime_t -c sock_file -p write
	want -A -s cloud_config_exec_t -t kubernetes_unit_t -c file -p create,write,rename
	want -A -s cloud_config_exec_t -t kubernetes_unit_t -c service -p start,enable
	want -A -s cloud_config_exec_t -t container_engine_unit_t -c service -p start,stop
	want -A -s cloud_config_exec_t -t container_var_lib_t -c file -p create,write
	want -A -s cloud_config_exec_t -t container_config_t -c file -p create,write
	want -A -s cloud_config_datavol_t -t container_var_lib_t -c dir -p mounton,relabelto
	want -A -s node_agent_t -t tmpfs_t -c file -p read
	want -T -s cloud_config_os_update_t -t bin_t -c process -D initrc_t
	confined node_agent_t cloud_config_exec_t cloud_config_pull_t cloud_config_probe_t cloud_config_datavol_t cloud_config_os_update_t authkeys_cmd_t
	ASSERT
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "$SDBOX_SUITE policy: ${line#ok }" ;;
		"not ok "*) fail "$SDBOX_SUITE policy: ${line#not ok }" ;;
		*) echo "$line" ;;
		esac
	done <"$S/se.out"
	grep -q '^ok ' "$S/se.out" || fail "sesearch-batch.py in the box produced no results: $(head -3 "$S/se.out")"
	# remove keeps the module: the sshd drop-in and the KRL it names stay
	# until the purge, and sshd may read the KRL only by its type (the purge
	# unloads it: 080's purge, on an enforcing node)
	box env PATH=$SEPATH DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Path=$SEPATH remove kube-node-agent >"$S/semodule.log" 2>&1
	check "postrm (remove) with SELinux enabled: node_agent stays loaded" has_module
	rm -f "$BOX/usr/local/sbin/selinuxenabled"
	# back to the state before, for the life cycle below (SELinux off again)
	boxapt install "/src/debs/$DEB_NAME" || fail "reinstall after the SELinux check"
	ctl start node-agent.service >/dev/null 2>&1
fi

# --- the package's life cycle on the running system ---------------------------
# snapshot FILE: every path in the box's root file system (one file system:
# not /proc, /sys, /dev, /run, /tmp; not /src) except logs, caches and apt/dpkg's own
# bookkeeping, with a checksum for each regular file under /etc except the
# account databases (the system users stay by design, see debian/postrm).
# The running services' temporary files (fsx.c's ".#<name>.<random>", renamed
# into place a moment later) are not part of any state.
snapshot() {
	box sh -c 'find / -xdev \( -path /src -o -path /var/log -o -path /var/cache -o -path /var/lib/apt -o -path /var/lib/dpkg \
			-o -path /var/lib/systemd/timers -o -path /var/lib/systemd/catalog -o -path /var/tmp -o -name ".#*" \) -prune -o -print |
		sort
		find /etc -xdev -type f ! -name ".#*" ! -name passwd ! -name group ! -name shadow ! -name gshadow \
			! -name "passwd-" ! -name "group-" ! -name "shadow-" ! -name "gshadow-" ! -name ld.so.cache -print0 |
			sort -z | xargs -0 md5sum' >"$1"
}
t_life=$(date +%s)
ctl start node-agent.service >/dev/null 2>&1 || true
if boxapt purge kube-node-agent; then
	ok "apt-get purge kube-node-agent on the running system (node-agent $(ctl is-active node-agent.service) afterwards)"
else
	fail "apt-get purge kube-node-agent"; dump "apt" tail -20 "$S/apt.log"
fi
check "purge: no node-agent process left" sh -c "! '$SDBOX' sh pgrep -x node-agent >/dev/null"
check "purge: units gone (node-agent.service, path, timer not loaded)" \
	sh -c "for u in node-agent.service cloud-config-exec.path cloud-config-exec.timer; do
		test \"\$('$SDBOX' ctl show -p LoadState --value \$u)\" = not-found || exit 1; done"
check "purge: /var/lib/node-agent and /var/lib/cloud-config-exec removed" \
	test ! -e "$BOX/var/lib/node-agent" -a ! -e "$BOX/var/lib/cloud-config-exec"
check "purge: the sshd drop-in and the config example removed, sshd still active" \
	sh -c "test ! -e '$BOX/etc/ssh/sshd_config.d/50-node-agent.conf' -a ! -e '$BOX/etc/node-agent/config.json.example' &&
		test \"\$('$SDBOX' ctl is-active ssh.service)\" = active"
check "purge: the admin's files in /etc/node-agent stay (token)" \
	test -e "$BOX/etc/node-agent/token"
check "purge: everyone's authorized_keys stay (gardener's from the OSC, breakglass's)" \
	test -s "$BOX/home/gardener/.ssh/authorized_keys" -a -s "$BOX/home/breakglass/.ssh/authorized_keys"
check "purge: the system users stay (Debian practice; a reinstall keeps their ids)" \
	sh -c "'$SDBOX' sh getent passwd node-agent node-agent-authkeys | wc -l | grep -qx 2"
check "purge: deb-systemd-helper's state for the units is gone" \
	sh -c "! ls '$BOX/var/lib/systemd/deb-systemd-helper-enabled' 2>/dev/null | grep -q -e node-agent -e cloud-config-exec"

snapshot "$S/before-install"
if boxapt install "/src/debs/$OLD_NAME"; then
	ok "apt-get install the previous version under the old name ($OLD_NAME) on the running system"
else
	fail "apt-get install $OLD_NAME"; dump "apt" tail -20 "$S/apt.log"
fi
check "previous version: path unit and timer enabled and started (running system)" \
	sh -c "test \"\$('$SDBOX' ctl is-active cloud-config-exec.path cloud-config-exec.timer | tr '\n' ' ')\" = 'active active '"
check "previous version: node-agent.service enabled, not started (it needs its config first)" \
	test "$(ctl is-enabled node-agent.service) $(ctl is-active node-agent.service)" = "enabled inactive"
check "previous version: users and state directories back (700 node-agent, 755 root)" \
	test "$(box stat -c '%a %U' /var/lib/node-agent /var/lib/cloud-config-exec | tr '\n' ' ')" = "700 node-agent 755 root "
check "previous version: the users kept their ids ($na_uid, $akc_uid)" \
	test "$(box id -u node-agent) $(box id -u node-agent-authkeys)" = "$na_uid $akc_uid"
pid1=
if [ -x "$BOX/usr/sbin/node-agent" ] && [ -n "${kpid:-}" ]; then
	# The purge took client.pem with the state directory, and the executor
	# removed the bootstrap token once the Node was registered: without a
	# credential the agent never becomes READY (and `systemctl start` waits
	# TimeoutStartSec). Give it the stock token back.
	printf 'abcdef.0123456789abcdef' >"$BOX/var/lib/gardener-node-agent/credentials/bootstrap-token"
	chmod 0640 "$BOX/var/lib/gardener-node-agent/credentials/bootstrap-token"
	ctl start node-agent.service >/dev/null 2>&1
	if wait_for 30 sh -c "test \"\$('$SDBOX' ctl is-active node-agent.service)\" = active"; then
		pid1=$(ctl show -p MainPID --value node-agent.service)
	fi
	check "previous version: node-agent started by hand and READY (pid $pid1)" test -n "$pid1"
fi
if boxapt install "/src/debs/$DEB_NAME"; then
	ok "upgrade from the old name to $DEB_NAME with apt-get install of its .deb alone (no conffile prompt)"
else
	fail "upgrade to $DEB_NAME"; dump "apt" tail -20 "$S/apt.log"
fi
check "upgrade: dpkg has kube-node-agent $DEB_VERSION installed" \
	test "$(box dpkg-query -W -f '${Version} ${Status}' kube-node-agent)" = "$DEB_VERSION install ok installed"
# apt removed the old package (Breaks) and left it "rc": its own postrm,
# whose purge deletes the state directories, is still dpkg's to run. The
# postinst says so and how to retire it: the transitional package first
# (its maintainer scripts replace the old ones), then purge.
old_st=$(box dpkg-query -W -f '${db:Status-Abbrev}' node-agent 2>&1)
check "upgrade: apt removed node-agent (rc: '$old_st'); the postinst warned not to purge it as it is" \
	sh -c '[ "$1" = "rc " ] && grep -q "the old package node-agent is removed but not purged" "$2"' sh "$old_st" "$S/apt.log"
check "upgrade: the sshd drop-in and the config example are kube-node-agent's ($(box dpkg -S /etc/ssh/sshd_config.d/50-node-agent.conf /etc/node-agent/config.json.example 2>&1 | cut -d: -f1 | tr '\n' ' '))" \
	test "$(box dpkg -S /etc/ssh/sshd_config.d/50-node-agent.conf /etc/node-agent/config.json.example 2>&1 | cut -d: -f1 | tr '\n' ' ')" = "kube-node-agent kube-node-agent "
if boxapt install "/src/debs/$TRANS_NAME" && boxapt purge node-agent; then
	ok "the old name retired as the postinst says: the transitional $TRANS_NAME installed, then purged"
else
	fail "the transitional $TRANS_NAME installed, then purged"; dump "apt" tail -20 "$S/apt.log"
fi
check "  ... node-agent not installed ($(box dpkg-query -W -f '${db:Status-Abbrev}' node-agent 2>&1)); the state directories and the sshd drop-in stay" \
	sh -c "'$SDBOX' sh dpkg-query -W -f '\${db:Status-Abbrev}' node-agent 2>/dev/null | grep -qx 'un ' &&
		test -e '$BOX/var/lib/cloud-config-exec/revoked-keys.krl' -a -d '$BOX/var/lib/node-agent' -a -e '$BOX/etc/ssh/sshd_config.d/50-node-agent.conf'"
if [ -n "$pid1" ]; then
	pid2=$(ctl show -p MainPID --value node-agent.service)
	check "upgrade: the running node-agent was restarted (pid $pid1 -> $pid2) and is active" \
		sh -c "test '$pid2' != '$pid1' -a '$pid2' != 0 && test \"\$('$SDBOX' ctl is-active node-agent.service)\" = active"
fi
out=$(login gardener gardener-current)
check "upgrade: ssh login through authkeys-cmd still works: '$out'" test "$out" = gardener
# The token the test gave back above goes again once the Node is registered
# (the executor's run after the restarted agent's hand-over). That run must
# be over before the reinstall's snapshots, or its work (the token removed,
# a temporary file) is counted as the reinstall's; and the purge must not
# race it, or the token is a trace the purge left.
if [ -n "$pid1" ]; then
	check "the executor removed the given-back bootstrap token again" \
		wait_for 60 test ! -e "$BOX/var/lib/gardener-node-agent/credentials/bootstrap-token"
fi
# The containerd probe's timer, started again by the installs after the
# purge, gives its first verdict when it first fires; that file is the
# timer's, not the reinstall's.
check "upgrade: the containerd probe's timer gave its first verdict" \
	wait_for 60 test -e "$BOX/var/lib/cloud-config-exec/containerd-health.json"
# executor_idle: no executor run or probe under way (the path unit and the
# timers may start one).
executor_idle() { ! ctl is-active -q cloud-config-exec.service cloud-config-exec-containerd-probe.service; }
# The probe runs every 30 s and logs only a change of its verdict (issue
# 35): systemd's own three lines a run ("Starting", "Deactivated
# successfully", "Finished": 8,640 a day) are below the unit's
# LogLevelMax=notice. Three more runs with the same verdict: no new line.
probe_lines() {
	box journalctl --sync 2>/dev/null
	box journalctl -q --no-pager -u cloud-config-exec-containerd-probe.service | wc -l
}
wait_for 60 executor_idle || fail "the probe's run did not end"
n0=$(probe_lines)
for i in 1 2 3; do ctl start cloud-config-exec-containerd-probe.service || fail "probe run $i"; done
n1=$(probe_lines)
check "containerd probe: three more runs with the same verdict add no journal line ($n0 -> $n1)" test "$n1" -eq "$n0"
dump "the probe's journal" box journalctl -q --no-pager -u cloud-config-exec-containerd-probe.service
# The maintainer scripts are idempotent: configuring the same version again
# changes nothing and fails nowhere.
wait_for 60 executor_idle || fail "the executor's run before the reinstall did not end"
snapshot "$S/before-reinstall"
if boxapt install --reinstall "/src/debs/$DEB_NAME"; then ok "apt-get install --reinstall (postinst again)"; else fail "reinstall"; fi
wait_for 60 executor_idle || fail "the executor's run after the reinstall did not end"
snapshot "$S/after-reinstall"
units=$(ctl is-active node-agent.service cloud-config-exec.path cloud-config-exec.timer | tr '\n' ' ')
if cmp -s "$S/before-reinstall" "$S/after-reinstall" && [ "$units" = "active active active " ]; then
	ok "reinstall: the same file list and /etc contents, node-agent, path and timer still active"
else
	fail "reinstall: the same file list and /etc contents, node-agent, path and timer still active ($units)"
	dump "what the reinstall changed" diff "$S/before-reinstall" "$S/after-reinstall"
fi
if boxapt purge kube-node-agent; then ok "apt-get purge kube-node-agent again"; else fail "apt-get purge kube-node-agent again"; fi
snapshot "$S/after-purge"
# /var/lib/kubelet is the kubelet's: the executor creates it for the
# bootstrap kubeconfig when the agent (restarted above with the token given
# back) writes desired.json before its Node GET answered, and removes only
# the kubeconfig and the token once the Node is known (kubelet.h). The box
# has no kubelet, so whether it exists is timing; the purge must not touch it.
sed -i '\|^/var/lib/kubelet$|d' "$S/before-install" "$S/after-purge"
if cmp -s "$S/before-install" "$S/after-purge"; then
	ok "purge leaves no trace: the tree's $(grep -c '^/' "$S/after-purge") paths and /etc's checksums as before the install"
else
	diff "$S/before-install" "$S/after-purge" | head -30 | sed 's/^/#   /'
	fail "purge leaves no trace (file list and /etc contents before install = after purge)"
fi
echo "# package life cycle: $(( $(date +%s) - t_life )) s"

finish
