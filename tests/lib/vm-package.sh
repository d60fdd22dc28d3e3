# 080's scenario 6: every package transition with sshd watching (issue 35).
# Source after vm.sh and deb.sh; 080 calls the functions below at its hooks.
#
# The guest's sshd is the one Debian 12 ships, with its own unit, and the
# test never restarts or reloads it: only the maintainer scripts do. Three
# keys are tried from the host after each transition:
#  - root's image key (the image's /root/.ssh/authorized_keys): always;
#  - the gardener key (the OSC's /var/lib/gardener-user-authorized-keys,
#    written by the executor into ~gardener and the key snapshot): always
#    (after a remove or purge through the authorized_keys the executor wrote,
#    which is the node's configuration and stays);
#  - a revoked key: its copy sits in root's own authorized_keys (as a
#    break-glass key an operator then revokes), and the operator revokes it
#    in /etc/node-agent/revoked-keys.d before the first install: refused
#    whenever the package is installed (or removed: the KRL and the drop-in
#    stay together), let in only once a purge took both (and reloaded sshd).
# Transitions: install (080's), upgrade (080's scenario 6 part, to the 9.9.9
# repack), then here: downgrade to the built version, reinstall, remove,
# purge (with logins from the host all through it), install after the purge
# under the package's OLD name (node-agent 0.1.0, deb_repack), and the
# upgrade from the old name to kube-node-agent with the transitional package.
#
#   vmpkg_prepare          keys and the extra packages (host side)
#   vmpkg_osc_files        the OSC's file entries for the gardener key (hello)
#   vmpkg_before_install   the revoked key in root's authorized_keys and the
#                          operator's revocation (guest, before the install)
#   vmpkg_logins LABEL [gone]  the three logins, checked (gone: after a purge)
#   vmpkg_transitions      downgrade ... old name -> new name, the purge facts
#   vmpkg_report           the table of logins and apt's times

VMPKG_TABLE=
VMPKG_COST=
vmpkg_prepare() {
	VMPKG_V=$(dpkg-deb -f "$DEB" Version)
	ssh-keygen -q -t ed25519 -N '' -C gardener-vm -f "$S/pkg-gardener" </dev/null
	ssh-keygen -q -t ed25519 -N '' -C revoked-breakglass -f "$S/pkg-revoked" </dev/null
	VMPKG_OLD_DEB=$(deb_repack "$DEB" 0.1.0 "$S" "$DEB_OLD_PACKAGE") && VMPKG_TRANS_DEB=$(deb_transitional "$DEB")
}

vmpkg_osc_files() {
	printf '  - path: /var/lib/gardener-user-authorized-keys\n    permissions: 420\n    content:\n      inline:\n        encoding: b64\n        data: %s\n' \
		"$(base64 -w0 <"$S/pkg-gardener.pub")"
}

vmpkg_before_install() {
	vm_copy "$S/pkg-revoked.pub" /root/pkg-revoked.pub
	vm_copy "$VMPKG_OLD_DEB" "/root/${VMPKG_OLD_DEB##*/}"
	vm_copy "$VMPKG_TRANS_DEB" "/root/${VMPKG_TRANS_DEB##*/}"
	vm_ssh 'cat /root/pkg-revoked.pub >>/root/.ssh/authorized_keys &&
		install -d -m 0755 /etc/node-agent/revoked-keys.d &&
		install -m 0644 /root/pkg-revoked.pub /etc/node-agent/revoked-keys.d/breakglass-2026.pub'
	check "before the package: the key to revoke logs in as root (its copy in root's authorized_keys)" \
		vmpkg_login "$S/pkg-revoked" root
}

# vmpkg_login KEY USER: a new ssh login from the host with KEY alone.
vmpkg_login() {
	timeout 60 ssh -q -i "$1" -p "$VM_SSH_PORT" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o ConnectTimeout=10 -o BatchMode=yes -o IdentitiesOnly=yes -o PreferredAuthentications=publickey \
		"$2@127.0.0.1" true </dev/null 2>/dev/null
}

vmpkg_logins() {
	local label=$1 gone=${2:-} root=refused g=refused rev=refused
	vmpkg_login "$VM_KEY" root && root=ok
	vmpkg_login "$S/pkg-gardener" gardener && g=ok
	vmpkg_login "$S/pkg-revoked" root && rev=ok
	VMPKG_TABLE+="| $label | $root | $g | $rev |"$'\n'
	check "$label: root's image key logs in ($root)" test "$root" = ok
	check "$label: the gardener key logs in ($g)" test "$g" = ok
	if [ -z "$gone" ]; then
		check "$label: the revoked key is refused, its copy in root's authorized_keys included ($rev)" test "$rev" = refused
	else
		check "$label: no KRL in force once the package is gone: the revoked key's copy logs in ($rev)" test "$rev" = ok
	fi
}

# vmpkg_apt LABEL COMMAND: COMMAND (apt-get ...) in the guest's /root, its
# time noted; returns its status.
vmpkg_apt() {
	local t rc
	t=$(date +%s.%N)
	VM_SSH_TIMEOUT=600 vm_ssh "cd /root && DEBIAN_FRONTEND=noninteractive $2" >>"$S/vmpkg-apt.log" 2>&1
	rc=$?
	VMPKG_COST+="$1: $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s; "
	return $rc
}

# pkg_status PACKAGE: "<version> <db:Status-Abbrev>" in the guest.
vmpkg_status() { vm_ssh "dpkg-query -W -f '\${Version} \${db:Status-Abbrev}' $1 2>/dev/null"; }

vmpkg_transitions() {
	local v=$VMPKG_V deb=kube-node-agent.deb st
	# Downgrade (from 080's 9.9.9) and reinstall: postinst configure with
	# an old version again, the drop-in and the KRL in place throughout.
	vmpkg_apt "downgrade" "apt-get install -y -q --allow-downgrades ./$deb"
	st=$(vmpkg_status kube-node-agent)
	check "downgrade 9.9.9 -> $v with apt-get ($st)" test "$st" = "$v ii "
	vmpkg_logins "downgrade 9.9.9 -> $v"
	vmpkg_apt "reinstall" "apt-get install -y -q --reinstall ./$deb"
	check "reinstall $v with apt-get ($(vmpkg_status kube-node-agent))" test "$(vmpkg_status kube-node-agent)" = "$v ii "
	vmpkg_logins "reinstall"
	# Remove: conffiles and state stay, so the drop-in and its KRL stay
	# together; authkeys-cmd is gone (the keys it served fail, the users'
	# own authorized_keys serve).
	vmpkg_apt "remove" "apt-get remove -y -q kube-node-agent"
	st=$(vm_ssh 'dpkg-query -W -f "\${db:Status-Abbrev}" kube-node-agent; echo
		test -e /etc/ssh/sshd_config.d/50-node-agent.conf && echo drop-in
		test -e /var/lib/cloud-config-exec/revoked-keys.krl && echo krl
		test -e /usr/libexec/node-agent/authkeys-cmd && echo authkeys-cmd' 2>&1 | tr '\n' ' ')
	check "remove: rc, the sshd drop-in and the KRL stay, authkeys-cmd gone ($st)" test "$st" = "rc  drop-in krl "
	vmpkg_logins "remove"

	# Purge (from "rc": the postrm's purge alone), new logins from the host
	# all the while (each a new connection, so each meets the sshd of that
	# moment); what the purge left is read in the purging session.
	vm_copy "$VM_KEY" /root/.vm-test-key
	: >"$S/purge-logins"
	(
		while [ ! -e "$S/purge.done" ]; do
			for k in "$VM_KEY root" "$S/pkg-gardener gardener"; do
				set -- $k
				if vmpkg_login "$1" "$2"; then r=ok; else r=FAILED; fi
				echo "$(date +%s.%N) $2 $r" >>"$S/purge-logins"
			done
		done
	) &
	local loop=$!
	local t
	t=$(date +%s.%N)
	VM_SSH_TIMEOUT=600 vm_ssh 'chmod 0600 /root/.vm-test-key
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -q kube-node-agent >/root/purge.log 2>&1; echo "rc $?"
		echo "status $(dpkg-query -W -f "\${Status}" kube-node-agent 2>/dev/null)"
		grep -qxs -e node-agent -e cloud-config-exec /proc/[0-9]*/comm && echo "process left"
		echo "loadstate $(systemctl show -p LoadState --value node-agent.service node-agent.path cloud-config-exec.service cloud-config-exec.path cloud-config-exec.timer | grep . | sort -u | tr "\n" " ")"
		for f in /lib/systemd/system/*node-agent* /lib/systemd/system/*cloud-config-exec* /etc/systemd/system/*node-agent* \
			/etc/systemd/system/*/*node-agent* /etc/systemd/system/*/*cloud-config-exec* \
			/var/lib/systemd/deb-systemd-helper-enabled/*node-agent* /var/lib/systemd/deb-systemd-helper-enabled/*/*node-agent* \
			/etc/ssh/sshd_config.d/50-node-agent.conf /var/lib/node-agent /var/lib/cloud-config-exec /etc/node-agent/config.json.example \
			/usr/libexec/node-agent; do
			[ -e "$f" ] && echo "left $f"
		done
		semodule -l 2>/dev/null | grep -qx node_agent && echo "left SELinux module node_agent"
		echo "etc $(cd /etc/node-agent && find . -type f | sort | tr "\n" " ")"
		echo "users $(getent passwd node-agent node-agent-authkeys | cut -d: -f1 | tr "\n" " ")"
		sshd -t && echo "sshd-t ok"
		ssh -q -i /root/.vm-test-key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes root@127.0.0.1 true && echo "login ok"
		journalctl -q --no-pager -u ssh.service -n 8 | sed "s/^/journal /"' >"$S/purge.facts" 2>&1
	VMPKG_COST+="purge: $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s; "
	touch "$S/purge.done"
	wait "$loop"
	sed 's/^/# purge: /' "$S/purge.facts"
	fact() { grep -qx -- "$1" "$S/purge.facts"; }
	check "purge: apt-get purge kube-node-agent returned 0" fact "rc 0"
	check "purge: kube-node-agent not installed any more ($(grep '^status' "$S/purge.facts"))" sh -c '! grep -q "^status install ok installed" "$1"' sh "$S/purge.facts"
	check_not "purge: no node-agent or cloud-config-exec process left" fact "process left"
	check "purge: no unit loaded ($(grep '^loadstate' "$S/purge.facts"))" fact "loadstate not-found "
	check_not "purge: no unit file, drop-in, deb-systemd-helper state, sshd drop-in, state directory, config example, SELinux module ($(grep '^left' "$S/purge.facts" | tr '\n' ' '))" \
		grep -q '^left' "$S/purge.facts"
	check "purge: in /etc/node-agent only the operator's file stays ($(grep '^etc' "$S/purge.facts"))" \
		fact "etc ./revoked-keys.d/breakglass-2026.pub "
	check "purge: the system users stay (Debian practice; $(grep '^users' "$S/purge.facts"))" fact "users node-agent node-agent-authkeys "
	check "purge: sshd's configuration valid (sshd -t), sshd never restarted by the test" fact "sshd-t ok"
	check "purge: a new login with root's image key from inside the guest, right after the purge" fact "login ok"
	local n_ok n_bad
	n_ok=$(grep -c ' ok$' "$S/purge-logins")
	n_bad=$(grep -c FAILED "$S/purge-logins")
	check "during the purge: $n_ok new logins (root's image key, the gardener key) from the host, $n_bad refused" \
		sh -c '[ "$1" -ge 2 ] && [ "$2" -eq 0 ]' sh "$n_ok" "$n_bad"
	[ "$n_bad" -eq 0 ] || sed 's/^/#   /' "$S/purge-logins"
	VMPKG_TABLE+="| during the purge | $(grep -c ' root ok$' "$S/purge-logins") ok | $(grep -c ' gardener ok$' "$S/purge-logins") ok | - |"$'\n'
	vmpkg_logins "purge" gone

	# Install after the purge, under the package's old name (what a node
	# of 0.1.0 has): the operator's revocation, kept in /etc by the purge,
	# is in force again from the install on.
	vmpkg_apt "install node-agent 0.1.0" "apt-get install -y -q ./${VMPKG_OLD_DEB##*/}"
	check "install after the purge, the old name: node-agent 0.1.0 ($(vmpkg_status node-agent))" \
		test "$(vmpkg_status node-agent)" = "0.1.0 ii "
	vmpkg_logins "install after purge (node-agent 0.1.0)"
	# From the old name to the new: both packages, as a repository's
	# dist-upgrade would take them.
	vmpkg_apt "upgrade from the old name" "apt-get install -y -q ./$deb ./${VMPKG_TRANS_DEB##*/}"
	st=$(vm_ssh "dpkg-query -W -f '\${Package} \${Version} \${db:Status-Abbrev}|' kube-node-agent node-agent
		dpkg -S /etc/ssh/sshd_config.d/50-node-agent.conf | cut -d: -f1
		dpkg-query -W -f '\${Conffiles}' node-agent | grep . | grep -vc ' obsolete\$' || true" 2>&1 | tr '\n' ' ')
	# (dpkg keeps the old conffiles listed as obsolete under node-agent; its
	# purge leaves a conffile another package owns alone, and it has no
	# maintainer script: 055 purges it.)
	check "node-agent 0.1.0 -> kube-node-agent $v + the transitional node-agent $v; the drop-in is kube-node-agent's, node-agent's conffiles all obsolete ($st)" \
		test "$st" = "kube-node-agent $v ii |node-agent $v ii |kube-node-agent 0 "
	vmpkg_logins "node-agent 0.1.0 -> kube-node-agent $v"
}

vmpkg_report() {
	echo "# package transitions, new logins from the host (root's image key | gardener key | revoked key):"
	printf '%s' "$VMPKG_TABLE" | sed 's/^/#   /'
	echo "# apt in the guest: $VMPKG_COST"
}
