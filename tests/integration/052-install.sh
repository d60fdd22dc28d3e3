#!/bin/bash
# make install / uninstall into a scratch DESTDIR: the exact file list, owners
# and modes (sshd demands a root-owned helper in root-owned, not group- or
# world-writable directories), paths substituted for PREFIX, and nothing left
# behind by uninstall.
source "$TESTS_DIR/lib/common.sh"
TOP=$(cd "$TESTS_DIR/.." && pwd)
W=$(scratch)

# expected PREFIX: the file list install must write, relative to DESTDIR.
expected() {
	local p=$1 sysd tmpf sysu
	sysd=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
	tmpf=$(pkg-config --variable=tmpfilesdir systemd 2>/dev/null || echo /usr/lib/tmpfiles.d)
	sysu=$(pkg-config --variable=sysusersdir systemd 2>/dev/null || echo /usr/lib/sysusers.d)
	[ -e "$TOP/agent/main.c" ] && echo "$p/sbin/node-agent"
	[ -e "$TOP/cloud-config-exec/main.c" ] && echo "$p/sbin/cloud-config-exec"
	[ -e "$TOP/authkeys-cmd/main.c" ] && echo "$p/libexec/node-agent/authkeys-cmd"
	for m in "$TOP"/man/*.8; do [ -e "$m" ] && echo "$p/share/man/man8/${m##*/}"; done
	for m in "$TOP"/man/*.5; do [ -e "$m" ] && echo "$p/share/man/man5/${m##*/}"; done
	for u in node-agent.service node-agent.path cloud-config-exec.service cloud-config-exec.path cloud-config-exec.timer \
		cloud-config-exec-pull@.service cloud-config-exec-kubelet-data-volume.service \
		cloud-config-exec-containerd-probe.service cloud-config-exec-containerd-probe.timer \
		cloud-config-exec-os-update.service; do
		echo "$sysd/$u"
	done
	echo "$sysd/gardener-node-init.service.d/50-node-agent.conf"
	echo "$tmpf/node-agent.conf"
	echo "$sysu/node-agent.conf"
	echo /etc/ssh/sshd_config.d/50-node-agent.conf
	echo /etc/node-agent/config.json.example
	echo "$p/share/node-agent/examples/api-server.conf.example"
	for f in te if fc; do echo "$p/share/node-agent/selinux/node_agent.$f"; done
}

# run PREFIX: install, check, uninstall, check.
run() {
	local p=$1 D=$W/dest-${1//\//_} f bad
	mkdir -p "$D"
	if ! make -s -C "$TOP" B="$B" DESTDIR="$D" PREFIX="$p" install >"$W/install.log" 2>&1; then
		sed 's/^/#   /' "$W/install.log"
		fail "PREFIX=$p: make install"
		return
	fi
	ok "PREFIX=$p: make install DESTDIR=..."
	(cd "$D" && find . -type f -o -type l | sed 's|^\.||' | sort) >"$W/got"
	expected "$p" | sort >"$W/want"
	if cmp -s "$W/got" "$W/want"; then
		ok "PREFIX=$p: installed exactly $(wc -l <"$W/want") files"
	else
		diff "$W/want" "$W/got" | sed 's/^/#   /'
		fail "PREFIX=$p: installed file list"
	fi
	# programs: 0755, and when installed as root, root-owned
	for f in "$p/sbin/node-agent" "$p/sbin/cloud-config-exec" "$p/libexec/node-agent/authkeys-cmd"; do
		[ -e "$D$f" ] || continue
		check "PREFIX=$p: $f is 0755$([ "$(id -u)" -eq 0 ] && echo ' root:root')" \
			test "$(stat -c '%a' "$D$f")" = 755 -a \( "$(id -u)" -ne 0 -o "$(stat -c '%u:%g' "$D$f")" = 0:0 \)
	done
	# the helper's directories, as sshd's safe_path() walks them (up to DESTDIR)
	bad=$(d=$(dirname "$D$p/libexec/node-agent/authkeys-cmd")
		while [ "${#d}" -ge "${#D}" ]; do
			find "$d" -maxdepth 0 \( -perm /022 -o ! -uid "$(id -u)" \) -print
			d=$(dirname "$d")
		done)
	check "PREFIX=$p: helper's directories not group/world-writable${bad:+ ($bad)}" test -z "$bad"
	bad=$(cd "$D" && find . -type f ! -path './*bin/*' ! -path './*libexec/*' ! -perm 0644 -printf '%m %p\n')
	check "PREFIX=$p: every other file is 0644${bad:+ ($bad)}" test -z "$bad"
	check "PREFIX=$p: ExecStart= points at $p/sbin" \
		grep -qx "ExecStart=$p/sbin/node-agent" "$D$(pkg-config --variable=systemdsystemunitdir systemd)/node-agent.service"
	check "PREFIX=$p: sshd drop-in points at $p/libexec/node-agent/authkeys-cmd" \
		grep -qx "AuthorizedKeysCommand $p/libexec/node-agent/authkeys-cmd %u %f %t %k" \
		"$D/etc/ssh/sshd_config.d/50-node-agent.conf"
	check "PREFIX=$p: SELinux file contexts name $p/libexec/node-agent/authkeys-cmd" \
		grep -q "^$p/libexec/node-agent/authkeys-cmd[[:space:]]" "$D$p/share/node-agent/selinux/node_agent.fc"
	check "PREFIX=$p: config.json.example is valid JSON" \
		python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$D/etc/node-agent/config.json.example"

	if ! make -s -C "$TOP" B="$B" DESTDIR="$D" PREFIX="$p" uninstall >"$W/uninstall.log" 2>&1; then
		sed 's/^/#   /' "$W/uninstall.log"
		fail "PREFIX=$p: make uninstall"
		return
	fi
	left=$(cd "$D" && find . -type f -o -type l)
	check "PREFIX=$p: uninstall leaves no file${left:+ ($left)}" test -z "$left"
	left=$(cd "$D" && find . -type d \( -path "./etc/node-agent" -o -path ".$p/libexec/node-agent" -o -path ".$p/share/node-agent" -o -name gardener-node-init.service.d \))
	check "PREFIX=$p: uninstall removes node-agent's own directories${left:+ ($left)}" test -z "$left"
}

run /usr
run /usr/local
finish
