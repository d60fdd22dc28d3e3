#!/bin/bash
# The installed system, booted: `make install` into a throw-away Debian 12
# tree (tests/lib/sdbox.sh, with openssh-server and the programs' libraries),
# units enabled, booted with systemd-nspawn. From inside the box it proves:
#  - systemd-sysusers/-tmpfiles made the users and directories at boot;
#  - a desired state dropped into /var/lib/node-agent starts cloud-config-exec
#    through the path unit (its files, its unit and its user appear), and the
#    timer is scheduled;
#  - sshd, with the drop-in, logs in through authkeys-cmd (the user's
#    authorized_keys moved away), refuses an unknown key, and still accepts a
#    local break-glass key from another user's authorized_keys;
#  - node-agent, configured by gardener-node-agent's stock user data only
#    (root's files handed over by LoadCredential=), gets its client
#    certificate through a CSR with the bootstrap token, the executor removes
#    the token once the Node is registered; against the test API server run
#    in the box's network namespace, it reaches READY, runs as node-agent with no capabilities,
#    NoNewPrivs and Seccomp: 2, and its desired state reaches the Node;
#  - each sandbox forbids: the agent writing /etc (in the running agent's
#    mount namespace, and in a probe unit with the agent's exact sandbox),
#    the executor opening an AF_INET socket (probe unit with its sandbox).
# Run: ONLY=055 make check-integration (root). The rootfs is debootstrapped once
# (~60 s) and cached as a tar in /var/cache/node-agent-sdbox (SDBOX_CACHE=0 to
# not write the cache); later runs take ~20 s.
source "$TESTS_DIR/lib/common.sh"

SDBOX=$TESTS_DIR/lib/sdbox.sh
TOP=$(cd "$TESTS_DIR/.." && pwd)
KEYS=$TESTS_DIR/fixtures/keys

# --setup ROOTFS: called by sdbox.sh (SDBOX_SETUP) between debootstrap and boot.
if [ "${1:-}" = --setup ]; then
	R=$2
	set -e
	make -s -C "$TOP" B="$B" DESTDIR="$R" PREFIX=/usr install >/dev/null
	if [ ! -e "$R/usr/sbin/node-agent" ] && [ -n "${NODE_AGENT_BIN:-}" ]; then
		install -m 0755 "$NODE_AGENT_BIN" "$R/usr/sbin/node-agent"  # development aid
	fi
	# node-agent is enabled after boot, once its token is readable by it.
	systemctl --root="$R" enable cloud-config-exec.path cloud-config-exec.timer ssh.service >/dev/null 2>&1
	install -d -m 0755 "$R/etc/node-agent"
	install -m 0644 "$S/config.json" "$R/etc/node-agent/config.json"
	install -m 0644 "$S/pki/ca.crt" "$R/etc/node-agent/ca.crt"
	install -m 0640 "$S/token" "$R/etc/node-agent/token"
	# gardener-node-agent's stock user data, root's as Gardener writes it
	# (gardener.md 4.2): node-agent reads it through LoadCredential=.
	install -d -m 0700 "$R/var/lib/gardener-node-agent" "$R/var/lib/gardener-node-agent/credentials"
	install -m 0600 "$S/gna-config.yaml" "$R/var/lib/gardener-node-agent/config-v1.149.3.yaml"
	install -m 0640 "$S/pki/ca.crt" "$R/var/lib/gardener-node-agent/cluster-ca.crt"
	printf 'machine-055\n' >"$R/var/lib/gardener-node-agent/machine-name"
	printf 'abcdef.0123456789abcdef' >"$R/var/lib/gardener-node-agent/credentials/bootstrap-token"
	chmod 0640 "$R/var/lib/gardener-node-agent/machine-name" "$R/var/lib/gardener-node-agent/credentials/bootstrap-token"
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
for p in cloud-config-exec authkeys-cmd; do
	[ -x "$B/$p" ] || skip_all "$p is not built yet ($B/$p)"
done
# The booted system runs the installed binaries under the units' own
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
export SDBOX_STATE=/var/tmp/node-agent-sdbox-055-$$
export SDBOX_SRC=$S
export SDBOX_INCLUDE=openssh-server,libcurl4,libcjson1,libseccomp2,libyaml-0-2,libxxhash0,libssl3
export SDBOX_CACHE=${SDBOX_CACHE-1}
[ "$SDBOX_CACHE" = 0 ] && unset SDBOX_CACHE
export SDBOX_SETUP="bash '$0' --setup \"\$1\""

# The API server's PKI and token exist before boot (they go into the tree).
"$TESTS_DIR/lib/mkcerts.sh" "$S/pki" "$KUBE_NODE" >/dev/null 2>&1 || { fail "mkcerts"; finish; exit 1; }
printf '%s' "$KUBE_TOKEN" >"$S/token"
python3 - "$S/config.json" "$KUBE_NODE" "$KUBE_SECRET" <<'PY'
import json, sys
# Only stock user data: server, CA, Secret, machine name and bootstrap token
# come from /var/lib/gardener-node-agent; the client certificate from a CSR.
json.dump({"node": {"name": sys.argv[2]},
           "gardener": {"nodeAgentDir": "/var/lib/gardener-node-agent"},
           "osc": {"followSecretNameLabel": False},
           "ssh": {"loginUser": "gardener", "sudoers": ""},
           "timeouts": {"connectMs": 2000, "requestMs": 5000, "applyMs": 20000}},
          open(sys.argv[1], "w"), indent=1)
PY
# The stock config names the version the Node label must get: node.kubernetesVersion
# is not in config.json, so only this root-only file can provide it.
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

on_exit "'$SDBOX' down"
if ! env_lines=$("$SDBOX" up 2>"$S/sdbox.log"); then
	sed 's/^/#   /' "$S/sdbox.log" | tail -30
	fail "the box boots with everything installed"
	finish
	exit 1
fi
eval "$env_lines"
ok "the box boots with everything installed ($(cat "$SDBOX_STATE/timings"))"
BOX=$SDBOX_ROOT
ctl() { "$SDBOX" ctl "$@"; }
box() { "$SDBOX" sh "$@"; }
# boxn CMD...: like box, and in the box's network namespace (sdbox sh is not).
boxn() { nsenter -t "$SDBOX_LEADER" -m -p -n -- env -u DBUS_SYSTEM_BUS_ADDRESS "$@"; }
# wait_for SECONDS CMD...: polls CMD every 0.1 s.
wait_for() {
	local n=$(($1 * 10)) i
	shift
	for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.1; done
	return 1
}
dump() { echo "# --- $1"; shift; "$@" 2>&1 | tail -n 25 | sed 's/^/#   /'; }
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
	nsenter -t "$SDBOX_LEADER" -n -- python3 "$TESTS_DIR/lib/kube-apiserver.py" serve \
		--pki "$S/pki" --listen 127.0.0.1:6443 --control "$KUBE_CONTROL" \
		--token "$KUBE_TOKEN=$sa" --token admin-token=admin --admin admin \
		--secret-reader "$sa" --node-admin "$sa" --node "$KUBE_NODE" \
		--bootstrap-token abcdef.0123456789abcdef --machine machine-055 \
		--secret-reader group:gardener.cloud:node-agents --node-admin group:gardener.cloud:node-agents \
		--secret "kube-system/$KUBE_SECRET=$S/osc2.json" --ready-file "$S/ready" \
		>"$S/server.log" 2>&1 &
	kpid=$!
	on_exit "kill $kpid; wait $kpid"
	kctl() { nsenter -t "$SDBOX_LEADER" -n -- python3 "$TESTS_DIR/lib/kube-apiserver.py" ctl "$@"; }
	check "test API server up in the box's network namespace" wait_for 10 test -e "$S/ready"
	box chgrp node-agent /etc/node-agent/token
	t0=$(now)
	ctl enable --now node-agent.service >/dev/null 2>&1
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
	if kube_wait_annotation checksum/cloud-config-data "$sum2" "$t0" 30 >/dev/null; then
		ok "node-agent -> desired.json -> path unit -> cloud-config-exec -> Node annotated with the checksum"
	else
		fail "Node annotated with the OSC's checksum after the apply"
		dump "node-agent journal" box journalctl -q --no-pager -u node-agent.service
		dump "cloud-config-exec journal" box journalctl -q --no-pager -u cloud-config-exec.service
		dump "API server log" cat "$S/server.log"
	fi
	journal_has() { box journalctl -q --no-pager -u node-agent.service | grep -q -- "$1"; }
	api_log_has() { kctl GET /log | grep -q -- "$1"; }
	check "client certificate through a CSR with the stock bootstrap token ($(box journalctl -q --no-pager -u node-agent.service | grep -o 'client certificate issued after [0-9]* ms' | head -1))" \
		journal_has 'client certificate issued'
	check "... client.pem 0600 node-agent in its state directory only ($(box stat -c '%a %U' /var/lib/node-agent/client.pem 2>&1))" \
		test "$(box stat -c '%a %U' /var/lib/node-agent/client.pem 2>/dev/null)" = "600 node-agent"
	check "... requests then made as gardener.cloud:node-agent:machine:machine-055" \
		api_log_has '"user": "gardener.cloud:node-agent:machine:machine-055"'
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
	check "the agent stayed up (no restart)" test "$(ctl show -p NRestarts --value node-agent.service)" = 0
fi

# --- the sandboxes, exactly as installed, with a probe as ExecStart -------------
probe() { # UNIT KEY: the probe's answer for KEY
	sed -n "s/^$2: //p" "$BOX/var/lib/$1/probe.out" 2>/dev/null
}
ctl start na-probe-node-agent.service na-probe-cloud-config-exec.service na-probe-node-agent-nodir.service \
	>/dev/null 2>&1
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
finish
