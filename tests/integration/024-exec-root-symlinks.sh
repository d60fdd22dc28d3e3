#!/bin/bash
# cloud-config-exec on a root with the directory symlinks real images have:
# merged /usr (lib -> usr/lib, sbin -> usr/sbin, Debian 12) and an
# image-style opt -> var/opt and home -> var/home. OSC files under /lib,
# /sbin and /opt are written through those root-made links, inside the
# root (an absolute target too); a no-op re-apply writes nothing; a dropped
# file is removed through the link. Links anyone but root could have made
# (a user's link, a link in a world- or group-writable directory) are still
# refused and nothing is written through them, inside or outside the root.
# The unit directory may sit behind a root-made link as well (the .d
# directories below it are opened strictly). The walk to the home follows
# root's home -> var/home; the home and ~/.ssh are opened strictly.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
require_root
command -v strace >/dev/null || skip_all "strace not installed"
command -v ssh-keygen >/dev/null || skip_all "ssh-keygen not installed"

W=$(scratch)
exec_init "$W"
R=$W/root
ST=$R/var/lib/cloud-config-exec
UID_G=1500

mkdir -p "$R/usr/lib" "$R/usr/sbin" "$R/usr/bin" "$R/var/home/gardener" "$R/etc"
ln -s usr/lib "$R/lib"
ln -s usr/sbin "$R/sbin"
ln -s usr/bin "$R/bin"
ln -s var/opt "$R/opt" # dangling until the first file under /opt
ln -s var/home "$R/home"
# An absolute link whose target is a path on the host: it must resolve below
# the root ($R$HOSTDIR), never at $HOSTDIR itself.
HOSTDIR=$W/hostside
mkdir -p "$HOSTDIR"
ln -s "$HOSTDIR" "$R/data"
printf 'root:x:0:0:root:/root:/bin/sh\ngardener:x:%d:%d::/home/gardener:/bin/sh\n' $UID_G $UID_G >"$R/etc/passwd"
printf 'root:x:0:\ngardener:x:%d:\n' $UID_G >"$R/etc/group"
chown $UID_G:$UID_G "$R/var/home/gardener"
ssh-keygen -q -t ed25519 -N '' -C k@test -f "$W/key" </dev/null

links() { for l in lib sbin bin opt home data; do printf '%s -> %s\n' "$l" "$(readlink "$R/$l")"; done; }
links_before=$(links)

# osc FILE PATH... : an OSC with one small file per PATH (mode 0644, 0755
# for /sbin), plus the gardener keys.
osc() {
	local out=$1
	shift
	python3 - "$W/key.pub" "$@" >"$out" <<'EOF'
import base64, json, sys
keys = open(sys.argv[1]).read()
files = [{"path": p, "permissions": 0o755 if p.startswith("/sbin/") else 0o644,
          "content": {"inline": {"data": "# %s\n" % p}}} for p in sys.argv[2:]]
files.append({"path": "/var/lib/gardener-user-authorized-keys", "permissions": 0o644,
              "content": {"inline": {"encoding": "b64", "data": base64.b64encode(keys.encode()).decode()}}})
print(json.dumps({"spec": {"files": files}}))
EOF
}
P_LIB=/lib/modules-load.d/na-test.conf
P_SBIN=/sbin/na-test-helper
P_OPT=/opt/na-test/tool.conf
P_DATA=/data/na-test.conf
P_ETC=/etc/na-test/plain.conf
osc "$W/v1.json" $P_LIB $P_SBIN $P_OPT $P_DATA $P_ETC
osc "$W/v2.json" $P_SBIN $P_OPT $P_DATA $P_ETC

# --- apply through the root-made links
cce "$R" apply "$W/v1.json" 2>"$W/v1.log"
check "apply through root-made directory links succeeds" test $? -eq 0
check "/lib/... written to usr/lib/..." grep -qx "# $P_LIB" "$R/usr/lib/modules-load.d/na-test.conf"
check "/sbin/... written to usr/sbin/..., mode 0755" test "$(stat -c %a "$R/usr/sbin/na-test-helper")" = 755
check "/opt/... (dangling opt -> var/opt) created as var/opt/..." grep -qx "# $P_OPT" "$R/var/opt/na-test/tool.conf"
check "created directories 0755 root" test "$(stat -c '%a %u' "$R/var/opt/na-test")" = "755 0"
check "absolute link resolved inside the root" grep -qx "# $P_DATA" "$R$HOSTDIR/na-test.conf"
check "nothing written at the absolute target on the host" test -z "$(ls -A "$HOSTDIR")"
check "plain path unaffected" grep -qx "# $P_ETC" "$R/etc/na-test/plain.conf"
check "the links are left as they were" test "$links_before" = "$(links)"
check "files through links recorded as ours (by their OSC path)" grep -q "$P_LIB" "$ST/state.json"
check "result: success" grep -q '"success":[[:space:]]*true' "$ST/result.json"

# --- above the home, root's link home -> var/home is followed (otherwise a
# dropped key would stay in the real ~/.ssh); the home and below are strict
check "home under a root-made link: keys written to var/home/gardener/.ssh" \
	grep -q "$(cut -d' ' -f2 "$W/key.pub")" "$R/var/home/gardener/.ssh/authorized_keys"
check "home under a root-made link: the user's, 0600" \
	test "$(stat -c '%a %u' "$R/var/home/gardener/.ssh/authorized_keys")" = "600 $UID_G"
check "the keys reach the snapshot" test -s "$R/var/lib/cloud-config-exec/authkeys.snap"

# --- no-op re-apply and check: the same walk finds every file unchanged
before=$(tree_state "$R")
strace_cce "$W/noop.strace" "$R" apply "$W/v1.json" 2>"$W/noop.log"
check "re-apply succeeds" test $? -eq 0
check "re-apply: tree unchanged" test "$before" = "$(tree_state "$R")"
n=$(count_fs_writes "$W/noop.strace")
check "re-apply: zero writes through the links (strace: $n)" test "$n" -eq 0
out=$("$CCE" --root "$R" --config "$W/config.json" --no-systemd --log stderr check "$W/v1.json" 2>/dev/null)
check_not "check: nothing to write" grep -q '^write' <<<"$out"

# --- a dropped file is removed through the link
check "apply v2 (drops $P_LIB)" cce "$R" apply "$W/v2.json"
check "dropped file removed from usr/lib" test ! -e "$R/usr/lib/modules-load.d/na-test.conf"
check "other files through links stay" test -e "$R/usr/sbin/na-test-helper" -a -e "$R/var/opt/na-test/tool.conf"

# --- links anyone but root could have made: refused, nothing written
V=$W/victim # outside the root
mkdir -p "$V" "$R/etc/victim"
# plant NAME LINK-PATH TARGET OSC-PATH [SETUP]: a link, then an apply of an
# OSC whose file goes through it. The apply fails, names the file, and
# writes nothing at the target (inside or outside the root).
plant() {
	local name=$1 link=$2 target=$3 path=$4 setup=${5:-}
	mkdir -p "$(dirname "$R/$link")"
	ln -s "$target" "$R/$link"
	eval "$setup"
	osc "$W/$name.json" $P_SBIN $P_OPT $P_DATA $P_ETC "$path"
	local os
	os=$(tree_state "$R")
	cce "$R" apply "$W/$name.json" 2>"$W/$name.log"
	check "$name: apply fails (exit 1)" test $? -eq 1
	check "$name: the failure names the file" grep -qF "$path" "$W/$name.log"
	check "$name: nothing written outside the root" test -z "$(ls -A "$V")"
	check "$name: nothing written in the root's victim dir" test -z "$(ls -A "$R/etc/victim")"
	check "$name: nothing created below the root" test ! -e "$R$V"
	check "$name: no file or directory changed" test "$os" = "$(tree_state "$R")"
	rm -f "$R/$link"
}
plant user-link srv/cfg ../etc/victim /srv/cfg/evil.conf "chown -h $UID_G:$UID_G '$R/srv/cfg'"
plant user-link-abs srv/cfg "$V" /srv/cfg/evil.conf "chown -h $UID_G:$UID_G '$R/srv/cfg'"
plant world-dir srv/shared/cfg ../../etc/victim /srv/shared/cfg/evil.conf "chmod 1777 '$R/srv/shared'"
plant group-dir srv/team/cfg ../../etc/victim /srv/team/cfg/evil.conf "chmod 0775 '$R/srv/team'"
plant user-dir srv/u/cfg ../../etc/victim /srv/u/cfg/evil.conf "chown $UID_G '$R/srv/u'"
# Under a root-made link, the walk meets a user's link further down.
mkdir -p "$R/usr/lib/na-user" && chown $UID_G "$R/usr/lib/na-user"
plant user-link-below-lib usr/lib/na-user/cfg ../../../etc/victim /lib/na-user/cfg/evil.conf
check "links still refused: the OSC files from before are intact" grep -qx "# $P_SBIN" "$R/usr/sbin/na-test-helper"
check "the root's links unchanged after all of it" test "$links_before" = "$(links)"

# --- unit files: the unit directory reached through a root-made link
# (etc/systemd -> ../usr/etc-systemd) is written; through a user's link not.
# (Every apply so far created etc/systemd/system as a directory.)
rm -rf "$R/etc/systemd"
mkdir -p "$R/usr/etc-systemd"
ln -s ../usr/etc-systemd "$R/etc/systemd"
unit_osc() {
	python3 - "$1" >"$2" <<'EOF'
import json, sys
print(json.dumps({"spec": {"files": [{"path": "/etc/na-test/plain.conf", "permissions": 0o644,
    "content": {"inline": {"data": "# /etc/na-test/plain.conf\n"}}}],
    "units": [{"name": sys.argv[1], "content": "[Service]\nExecStart=/bin/true\n",
               "dropIns": [{"name": "10-x.conf", "content": "[Service]\nNice=1\n"}]}]}}))
EOF
}
unit_osc na-link.service "$W/unit1.json"
cce "$R" apply "$W/unit1.json" 2>"$W/unit1.log"
check "unit apply through a root-made etc/systemd link succeeds" test $? -eq 0
check "unit file written to usr/etc-systemd/system" test -s "$R/usr/etc-systemd/system/na-link.service"
check "drop-in written below it" test -s "$R/usr/etc-systemd/system/na-link.service.d/10-x.conf"
check "etc/systemd is still the link" test -L "$R/etc/systemd"
rm "$R/etc/systemd"
mkdir -p "$R/etc/victim-systemd"
ln -s ../etc/victim-systemd "$R/etc/systemd"
chown -h $UID_G:$UID_G "$R/etc/systemd"
unit_osc na-evil.service "$W/unit2.json"
cce "$R" apply "$W/unit2.json" 2>"$W/unit2.log"
check "unit apply through a user's etc/systemd link fails" test $? -eq 1
check "nothing written at that link's target" test -z "$(ls -A "$R/etc/victim-systemd")"
rm "$R/etc/systemd"

finish
