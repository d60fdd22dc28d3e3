# SELinux on the VM node (issue 37), sourced by vm.sh: the node boots
# straight into enforcing mode with Debian's refpolicy, so every scenario of
# 080 runs the package's policy for real. What an image needs for that is
# what docs/image-building.md ("SELinux") tells image builders:
#  - the packages selinux-policy-default (policycoreutils, selinux-utils)
#    and auditd (ausearch; without it the records go to the kernel log);
#  - the tree labelled at build time: setfiles with the tree's own
#    file_contexts before `mkfs.ext4 -d`, which copies security.selinux
#    like any other extended attribute (a first-boot relabel, the
#    /.autorelabel way, costs minutes of emulation under TCG);
#  - the kernel arguments security=selinux selinux=1 enforcing=1 (Debian's
#    kernel starts AppArmor otherwise), and /etc/selinux/config saying
#    enforcing for a node that boots without them.
#
#   VM_SELINUX            enforcing (default) or permissive: a permissive
#                         node logs what a policy would deny and denies
#                         nothing (how the figures of issue 37 were taken)
#   vm_selinux_label TREE labels the unpacked tree (vm_image calls it)
#   vm_selinux_append     prints the kernel arguments (vm_boot adds them)
#   vm_selinux_denials    prints, from the guest's audit log (every boot of
#                         the run: auditd keeps the file), the AVC, USER_AVC
#                         and SELINUX_ERR records that name one of the
#                         project's types, as subject or as object
#   vm_selinux_rules      reads such records, prints each distinct denial
#                         once, the permissions of a pair together:
#                         "source target:class { perms }"
#   vm_selinux_check WHAT a check: no such record so far (the distinct
#                         rules and the first records as comments if any)
#   vm_selinux_boot_check        checks: the mode from the boot on, the
#                                image's labels
#   vm_selinux_install_check PKG checks: the module loaded, every file of
#                                the package labelled as the file contexts say
#   vm_selinux_domains_check     checks: node-agent runs in node_agent_t
#   vm_selinux_labels_check WHAT PATH...  check: each PATH (recursively)
#                                labelled as the file contexts say

VM_SELINUX=${VM_SELINUX:-enforcing}
# The module's types: its domains, their entry points and files.
VM_SELINUX_TYPES='node_agent_[a-z_]*_t|node_agent_t|cloud_config_[a-z_]*_t|authkeys_cmd_[a-z_]*_t|authkeys_cmd_t'

vm_selinux_label() {
	local r=$1
	sed -i "s/^SELINUX=.*/SELINUX=$VM_SELINUX/" "$r/etc/selinux/config"
	setfiles -r "$r" "$r/etc/selinux/default/contexts/files/file_contexts" "$r" || return 1
}

vm_selinux_append() {
	local e=1
	[ "$VM_SELINUX" = enforcing ] || e=0
	echo "security=selinux selinux=1 enforcing=$e"
}

vm_selinux_denials() {
	VM_SSH_TIMEOUT=120 vm_ssh 'ausearch --input-logs -r -m AVC,USER_AVC,SELINUX_ERR 2>/dev/null' |
		grep -E "avc: +denied|SELINUX_ERR" | grep -E "($VM_SELINUX_TYPES)"
}

vm_selinux_rules() {
	awk 'function field(k,   v) { if (match($0, " " k "=[^ ]*")) { v = substr($0, RSTART + length(k) + 2, RLENGTH - length(k) - 2); sub(/^[^:]*:[^:]*:/, "", v); sub(/:.*/, "", v); return v } return "?" }
		/avc: +denied/ { match($0, /\{[^}]*\}/); n = split(substr($0, RSTART + 1, RLENGTH - 2), p, " ")
			k = field("scontext") " " field("tcontext") ":" field("tclass"); keys[k] = 1
			for (i = 1; i <= n; i++) perm[k, p[i]] = 1; next }
		/SELINUX_ERR/ { op = "?"; if (match($0, / op=[^ ]*/)) op = substr($0, RSTART + 4, RLENGTH - 4)
			keys["SELINUX_ERR " op " " field("oldcontext") "->" field("newcontext")] = 1 }
		END { for (k in keys) { s = ""
				for (kp in perm) { split(kp, x, SUBSEP); if (x[1] == k) s = s " " x[2] }
				print k (s == "" ? "" : " {" s " }") } }' | sort
}

vm_selinux_check() {
	local f
	f=$(mktemp "${TMPDIR:-/tmp}/na-selinux.XXXXXX")
	vm_selinux_denials >"$f"
	if [ -s "$f" ]; then
		fail "SELinux ($VM_SELINUX): no AVC denial or SELINUX_ERR of the project's domains $1 ($(wc -l <"$f") records, $(vm_selinux_rules <"$f" | wc -l) distinct)"
		vm_selinux_rules <"$f" | sed 's/^/#   /'
		head -n 20 "$f" | sed 's/^/#   /'
		[ -z "${VM_DIAG_DIR:-}" ] || { mkdir -p "$VM_DIAG_DIR" && cp "$f" "$VM_DIAG_DIR/selinux-denials.txt"; }
	else
		ok "SELinux ($VM_SELINUX): no AVC denial or SELINUX_ERR of the project's domains $1"
	fi
	rm -f "$f"
}

vm_selinux_boot_check() {
	local mode want=Enforcing
	[ "$VM_SELINUX" = enforcing ] || want=Permissive
	mode=$(vm_ssh getenforce 2>&1)
	check "guest: SELinux $mode from the boot on, auditd running, the image labelled at build time ($(vm_ssh 'stat -c %C /usr/sbin/sshd' 2>&1))" \
		sh -c '[ "$1" = "$2" ] && case "$3" in *:sshd_exec_t:*) exit 0 ;; *) exit 1 ;; esac' sh "$mode" "$want" \
		"$(vm_ssh 'systemctl -q is-active auditd.service && stat -c %C /usr/sbin/sshd' 2>&1)"
}

vm_selinux_install_check() {
	local wrong
	check "guest: the postinst loaded the node_agent module" vm_ssh 'semodule -l | grep -qx node_agent'
	# restorecon -n -v names every file whose label differs from its file
	# context (and changes nothing).
	wrong=$(vm_ssh "dpkg-query -L $1 | restorecon -n -v -f - 2>&1")
	check "guest: every file of $1 labelled as the file contexts say ($(printf '%s' "$wrong" | head -3 | tr '\n' ';'))" \
		test -z "$wrong"
}

vm_selinux_domains_check() {
	local d
	d=$(vm_ssh 'ps -C node-agent -o label= | sort -u' 2>&1)
	check "guest: node-agent runs in node_agent_t ($d)" test "$d" = system_u:system_r:node_agent_t:s0
}

vm_selinux_labels_check() {
	local what=$1 wrong
	shift
	wrong=$(vm_ssh "restorecon -R -n -v $* 2>&1")
	check "guest: $what labelled as the file contexts say ($(printf '%s' "$wrong" | head -3 | tr '\n' ';'))" \
		test -z "$wrong"
}
