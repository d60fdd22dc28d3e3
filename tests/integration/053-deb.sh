#!/bin/bash
# The Debian package kube-node-agent and the transitional package of its old
# name, node-agent (debian/, scripts/build-deb, `make deb`): `make deb
# B=<dir>` builds them (and leaves <dir>'s other files alone) with
# dpkg-buildpackage from a copy of the tree, lintian reports no error or
# warning (and does fail on a broken package), it ships exactly what
# `make install PREFIX=/usr` installs plus the compiled SELinux module and
# Debian's own files, /etc files are conffiles, the maintainer scripts parse
# and carry debhelper's sysusers/tmpfiles/systemd snippets, and authkeys-cmd
# is static; the transitional package holds only its doc files and pulls
# the new one in, which Breaks/Replaces the old name. Booted install, upgrade
# and purge: 055 (Debian 12) and 056 (Debian 13); every transition with
# sshd watching: 080 (a Debian 12 VM).
source "$TESTS_DIR/lib/common.sh"
TOP=$(cd "$TESTS_DIR/.." && pwd)
for t in dpkg-buildpackage dh lintian fakeroot; do
	command -v "$t" >/dev/null || skip_all "needs $t (scripts/install-deps: dpkg-dev debhelper lintian fakeroot)"
done
[ -f /usr/share/selinux/devel/Makefile ] || skip_all "needs selinux-policy-dev"
# The package is always a production build (debian/rules): the sanitizer
# pass of scripts/test-all has nothing to add here.
sanitized "$B/cloud-config-exec" && skip_all "sanitizer build: the package is built from the source, not from $B (make check runs this test)"
W=$(scratch)

t0=$(date +%s)
# Through `make deb B=<dir>` with a file of its own in <dir>: B= reaches
# debian/rules through MAKEFLAGS unless build-deb clears it, and the
# rules' clean would remove the directory.
mkdir -p "$W/b"
echo keep >"$W/b/marker"
if make -s -C "$TOP" deb B="$W/b" >"$W/build-deb.log" 2>&1 && mv "$W/b/deb" "$W/out"; then
	ok "make deb (scripts/build-deb): dpkg-buildpackage -us -uc -b and lintian (no error, no warning) in $(($(date +%s) - t0)) s"
else
	sed 's/^/#   /' "$W/build-deb.log" | tail -40
	fail "scripts/build-deb: package builds and lintian is clean"
	finish
	exit 1
fi
grep -v '^running with root privileges' "$W/out/lintian.txt" | sed 's/^/#   lintian: /'
check "make deb B=<dir> leaves the other files in <dir> alone" test "$(cat "$W/b/marker" 2>/dev/null)" = keep
DEB=$(ls "$W"/out/kube-node-agent_*.deb)
TDEB=$(ls "$W"/out/node-agent_*_all.deb)
check "two packages (and the debug symbols): kube-node-agent_*_$(dpkg --print-architecture).deb and the transitional node-agent_*_all.deb ($(cd "$W/out" && ls *.deb | tr '\n' ' '))" \
	test "$(cd "$W/out" && ls *.deb | grep -vc -- -dbgsym_)" = 2 -a -n "$DEB" -a -n "$TDEB"
check "the checkout stays clean (built in a copy)" \
	test -z "$(cd "$TOP" && git status --porcelain --ignored=matching debian 2>/dev/null)"

# The file list: make install's, plus what Debian adds.
mkdir -p "$W/mi"
make -s -C "$TOP" B="$B" DESTDIR="$W/mi" PREFIX=/usr install >"$W/mi.log" 2>&1 || { sed 's/^/#   /' "$W/mi.log"; fail "make install"; }
(cd "$W/mi" && find . ! -type d | sed 's|^\.||') >"$W/want.raw"
# dh_installman compresses man pages
sed 's|^\(/usr/share/man/.*\)$|\1.gz|' "$W/want.raw" >"$W/want"
printf '%s\n' /usr/share/selinux/default/node_agent.pp /usr/share/doc/kube-node-agent/changelog.gz \
	/usr/share/doc/kube-node-agent/copyright /usr/share/lintian/overrides/kube-node-agent >>"$W/want"
sort -o "$W/want" "$W/want"
dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\.||' | sort >"$W/got"
if cmp -s "$W/want" "$W/got"; then
	ok "the package holds make install's $(wc -l <"$W/want.raw") files + the SELinux module + Debian's 3 ($(wc -l <"$W/got") files)"
else
	diff "$W/want" "$W/got" | sed 's/^/#   /'
	fail "package file list = make install's + node_agent.pp + doc/copyright/overrides"
fi
bad=$(dpkg-deb -c "$DEB" | awk '$2 != "root/root" { print $6 }')
check "every file root:root${bad:+ ($bad)}" test -z "$bad"
check "programs 0755" sh -c "dpkg-deb -c '$DEB' | grep -E ' \./usr/(sbin/node-agent|sbin/cloud-config-exec|libexec/node-agent/authkeys-cmd)\$' | awk '{print \$1}' | sort -u | grep -qx -- -rwxr-xr-x"

mkdir -p "$W/ctl"
dpkg-deb -e "$DEB" "$W/ctl"
check "conffiles: the sshd drop-in and the config example" \
	test "$(sort "$W/ctl/conffiles" | tr '\n' ' ')" = "/etc/node-agent/config.json.example /etc/ssh/sshd_config.d/50-node-agent.conf "
# On a Gardener node the stock user data is the whole configuration (055
# boots it): the package ships no config.json, and its unit does not wait
# for one.
unit=$(find "$W/mi" -path '*/systemd/system/node-agent.service' | head -1)
check "no /etc/node-agent/config.json shipped; node-agent.service (${unit#"$W/mi"}) needs none" \
	sh -c "test -n '$unit' && ! grep -q '^Condition.*config' '$unit' && ! grep -qx /etc/node-agent/config.json '$W/got'"
for s in preinst postinst prerm postrm; do
	[ -e "$W/ctl/$s" ] && check "$s parses (sh -n)" sh -n "$W/ctl/$s"
done
check "postinst: systemd-sysusers before systemd-tmpfiles (the directories' owner exists)" \
	sh -c "grep -n -e 'systemd-sysusers ' -e 'systemd-tmpfiles ' '$W/ctl/postinst' | head -2 | tr '\n' ' ' | grep -q 'sysusers.*tmpfiles'"
check "postinst enables node-agent.service, the paths and the timer" \
	sh -c "for u in node-agent.service node-agent.path cloud-config-exec.path cloud-config-exec.timer; do grep -q \"deb-systemd-helper enable '\$u'\" '$W/ctl/postinst' || exit 1; done"
check "postinst starts the paths and timers only on a running system, never node-agent.service" \
	sh -c "for u in cloud-config-exec.path cloud-config-exec.timer cloud-config-exec-containerd-probe.timer; do
			grep \"deb-systemd-invoke \\\$_dh_action \" '$W/ctl/postinst' | grep -q \"'\$u'\" || exit 1; done &&
		! grep -q \"deb-systemd-invoke \\\$_dh_action.*node-agent.service\" '$W/ctl/postinst' &&
		grep -q \"deb-systemd-invoke try-restart 'node-agent.service'\" '$W/ctl/postinst'"
check "postinst loads the SELinux module only under selinuxenabled" \
	grep -q 'selinuxenabled &&' "$W/ctl/postinst"
check "postrm purge removes the two state directories (after reloading sshd), no home or authorized_keys" \
	sh -c "grep -q 'rm -rf \"\${DPKG_ROOT:-}/var/lib/node-agent\" \"\${DPKG_ROOT:-}/var/lib/cloud-config-exec\"\$' '$W/ctl/postrm' &&
		! grep -v '^[[:space:]]*#' '$W/ctl/postrm' | grep -q -e authorized_keys -e /home -e userdel -e deluser"
# sshd and its KRL go together (issue 35: a purge locked everyone out): the
# KRL exists before the drop-in that names it is unpacked, is filled before
# sshd is reloaded with it, and goes only after sshd was reloaded without it.
check "preinst creates the empty KRL before dpkg unpacks the sshd drop-in" \
	grep -q 'install -m 0644 -o root -g root /dev/null "$d/revoked-keys.krl"' "$W/ctl/preinst"
check "postinst brings the KRL up to date (cloud-config-exec revoke) before it reloads sshd" \
	sh -c "awk '/cloud-config-exec --log stderr revoke/ { r = NR } /deb-systemd-invoke reload ssh.service/ { if (r && r < NR) ok = 1 } END { exit !ok }' '$W/ctl/postinst'"
check "postrm purge reloads sshd (and waits for it) before the state with the KRL goes" \
	sh -c "awk '/^purge\\)/ { p = 1 } p && /^[[:space:]]*sshd_reload_settled\$/ { r = NR } p && /rm -rf .*cloud-config-exec/ { if (r && r < NR) ok = 1; exit } END { exit !ok }' '$W/ctl/postrm'"
deps=$(dpkg-deb -f "$DEB" Depends)
check "Depends: runtime libraries, no -dev package ($deps)" sh -c "! echo '$deps' | grep -q -- '-dev'"
check "Built-Using names the static authkeys-cmd's glibc, libseccomp, xxhash" \
	sh -c "dpkg-deb -f '$DEB' Built-Using | grep -q 'glibc (=.*libseccomp (=.*xxhash (='"
mkdir -p "$W/x"
dpkg-deb -x "$DEB" "$W/x"
check "authkeys-cmd is static (no PT_INTERP, no NEEDED)" \
	sh -c "! readelf -lW '$W/x/usr/libexec/node-agent/authkeys-cmd' | grep -q INTERP && ! readelf -dW '$W/x/usr/libexec/node-agent/authkeys-cmd' | grep -q NEEDED"
v=$(dpkg-deb -f "$DEB" Version)
check "--version of the three programs says the package's version $v" \
	test "$("$W/x/usr/sbin/node-agent" --version) | $("$W/x/usr/sbin/cloud-config-exec" --version) | $("$W/x/usr/libexec/node-agent/authkeys-cmd" --version | cut -d' ' -f1-2)" = "node-agent $v | cloud-config-exec $v | authkeys-cmd $v"
enabled=$(grep -o "deb-systemd-helper enable '[^']*'" "$W/ctl/postinst" | cut -d"'" -f2 | sort | tr '\n' ' ')
desc=$(dpkg-deb -f "$DEB" Description | tr '\n' ' ')
check "the description names every unit the postinst enables ($enabled)" \
	sh -c 'for u in $1; do case "$2" in *"$u"*) ;; *) exit 1 ;; esac; done' sh "$enabled" "$desc"
check "node_agent.pp is a policy module (magic 0xf97cff8f, SEPOL_MODULE_PACKAGE_MAGIC)" \
	sh -c "head -c 4 '$W/x/usr/share/selinux/default/node_agent.pp' | od -An -tx1 | tr -d ' ' | grep -qx 8fff7cf9"
echo "# Installed-Size: $(dpkg-deb -f "$DEB" Installed-Size) KiB, .deb $(stat -c %s "$DEB") bytes"

# The old name (debian/control; the Debian wiki's RenamingPackages): the
# new package takes the old one's files (Replaces) and makes apt upgrade
# or remove it (Breaks), below the first renamed version; the transitional
# package is what apt upgrades node-agent to. 0.1.1 stays the bound (the
# first version under the new name) in every later version.
v=$(dpkg-deb -f "$DEB" Version)
check "kube-node-agent Breaks and Replaces node-agent (<< 0.1.1~) ($(dpkg-deb -f "$DEB" Breaks); $(dpkg-deb -f "$DEB" Replaces))" \
	test "$(dpkg-deb -f "$DEB" Breaks)|$(dpkg-deb -f "$DEB" Replaces)" = "node-agent (<< 0.1.1~)|node-agent (<< 0.1.1~)"
check "transitional node-agent $v: Architecture all, Section oldlibs, Depends kube-node-agent (>= $v) ($(dpkg-deb -f "$TDEB" Depends))" \
	test "$(dpkg-deb -f "$TDEB" Version Architecture Section Depends | tr '\n' '|')" = "Version: $v|Architecture: all|Section: oldlibs|Depends: kube-node-agent (>= $v)|"
check "transitional node-agent: its doc files only, no maintainer script ($(dpkg-deb -c "$TDEB" | awk '$1 !~ /^d/ { print $6 }' | tr '\n' ' '))" \
	sh -c "test \"\$(dpkg-deb -c '$TDEB' | awk '\$1 !~ /^d/ { print \$6 }' | tr '\n' ' ')\" = './usr/share/doc/node-agent/changelog.gz ./usr/share/doc/node-agent/copyright ' &&
		mkdir -p '$W/tctl' && dpkg-deb -e '$TDEB' '$W/tctl' && test -z \"\$(ls '$W/tctl' | grep -v -e '^control\$' -e '^md5sums\$')\""

# lintian must be able to fail: the same package without its copyright file.
rm -rf "$W/broken" && dpkg-deb -R "$DEB" "$W/broken" && rm -f "$W/broken/usr/share/doc/kube-node-agent/copyright"
dpkg-deb -b "$W/broken" "$W/broken.deb" >/dev/null 2>&1
check_not "lintian fails a package without copyright (the verdict can fail)" \
	sh -c "lintian --fail-on error,warning '$W/broken.deb' >/dev/null 2>&1"
finish
