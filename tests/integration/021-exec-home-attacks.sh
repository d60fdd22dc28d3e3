#!/bin/bash
# cloud-config-exec writing ~gardener/.ssh/authorized_keys as root while the
# user has planted something: .ssh as a symlink to an /etc-like directory,
# authorized_keys as a symlink or a hard link to a victim file, a FIFO, a
# directory, a regular file where .ssh should be, the home itself a symlink,
# wrong owners. For each case: the apply succeeds when what was planted in
# ~/.ssh could be moved aside or replaced, and fails (failedStep keys) when
# the home itself is unusable (the keys still go to the snapshot); the
# victim's checksum is unchanged, not one byte outside the
# home changed (tree state of everything but the home and the executor's own
# records, and the OSC's key file that the new OSC changes), no victim
# content leaks into authorized_keys, and nothing is
# written through a link.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
require_root
command -v ssh-keygen >/dev/null || skip_all "ssh-keygen not installed"

W=${KEEP_DIR:-$(scratch)}
exec_init "$W"
R=$W/root
K=$TESTS_DIR/fixtures/keys
UID_G=1500
mkdir -p "$R/etc" "$R/home/gardener" "$R/etc/victim-dir"
printf 'root:x:0:0:root:/root:/bin/sh\ngardener:x:%d:%d::/home/gardener:/bin/sh\n' $UID_G $UID_G >"$R/etc/passwd"
printf 'root:x:0:\ngardener:x:%d:\n' $UID_G >"$R/etc/group"
chown $UID_G:$UID_G "$R/home/gardener"
chmod 0755 "$R/home/gardener"
VICTIM=$R/etc/victim-dir/shadow
printf 'root:$6$VICTIMSECRET$hash:19000:0:99999:7:::\n' >"$VICTIM"
chmod 0640 "$VICTIM"
ssh-keygen -q -t ed25519 -N '' -C rotated@test -f "$W/rotated" </dev/null
cat "$K/gardener-current.pub" "$K/gardener-previous.pub" >"$W/keys1"
cat "$W/rotated.pub" "$K/gardener-current.pub" >"$W/keys2"
python3 "$GEN_OSC" --files 2 --keys "$W/keys1" >"$W/v1.json"
python3 "$GEN_OSC" --files 2 --keys "$W/keys2" >"$W/v2.json"
CUR=$(cut -d' ' -f2 "$K/gardener-current.pub")
ROT=$(cut -d' ' -f2 "$W/rotated.pub")

H=$R/home/gardener
AK=$H/.ssh/authorized_keys
outside() {
	(cd "$R" && find . -path ./home/gardener -prune -o -path ./var/lib/cloud-config-exec -prune -o \
		-path ./var/lib/gardener-user-authorized-keys -prune -o -print0 | sort -z |
		xargs -0 stat -c '%n|%F|%a|%u:%g|%s|%i|%y' | grep -v '^\./var/lib|'; find . -path ./home/gardener -prune -o \
		-path ./var/lib/cloud-config-exec -prune -o -path ./var/lib/gardener-user-authorized-keys -prune -o \
		-type f -print0 | sort -z | xargs -0 sha256sum)
}
# (ctime is left out: replacing a planted hard link drops the victim's link
# count, which moves its ctime; content, mtime, mode, owner and inode prove
# that nothing was written to it.)
victim_sum() { sha256sum <"$VICTIM"; stat -c '%i %s %a %u:%g %y' "$VICTIM"; ls -A "$R/etc/victim-dir" | sha256sum; }

# Baseline: a normal apply, then reset the keys to v1 before each case.
check "baseline apply" cce "$R" apply "$W/v1.json"
check "baseline: keys written" grep -q "$CUR" "$AK"
check "baseline: ~/.ssh 0700 owned by the user" test "$(stat -c '%a %u' "$H/.ssh")" = "0700 $UID_G" -o \
	"$(stat -c '%a %u' "$H/.ssh")" = "700 $UID_G"
check "baseline: authorized_keys 0600 owned by the user" test "$(stat -c '%a %u:%g' "$AK")" = "600 $UID_G:$UID_G"

reset() {
	rm -rf "$H/.ssh"
	mkdir -m 0700 "$H/.ssh"
	chown $UID_G:$UID_G "$H/.ssh"
	cce "$R" apply "$W/v1.json" >/dev/null 2>&1
	chown $UID_G:$UID_G "$H"
}

# attack NAME SETUP-COMMANDS [RC]: plant, apply v2 (which must try to write
# the keys; exit status RC, 0 by default), then prove the victim and
# everything outside the home unchanged.
attack() {
	local name=$1 setup=$2 want=${3:-0}
	reset
	eval "$setup"
	local vs os
	vs=$(victim_sum)
	os=$(outside)
	timeout 30 "$CCE" --root "$R" --config "$W/config.json" --no-systemd --log stderr apply "$W/v2.json" \
		>"$W/$name.log" 2>&1
	local rc=$?
	check "$name: apply exits $want (rc $rc)" test $rc -eq "$want"
	check "$name: victim unchanged" test "$vs" = "$(victim_sum)"
	[ "$vs" = "$(victim_sum)" ] || diff <(echo "$vs") <(victim_sum)
	local os2
	os2=$(outside)
	check "$name: nothing outside the home changed" test "$os" = "$os2"
	[ "$os" = "$os2" ] || diff <(echo "$os") <(echo "$os2") | head -5
	check "$name: the snapshot carries the new key" grep -aq "$ROT" "$R/var/lib/cloud-config-exec/authkeys.snap"
	if [ -f "$AK" ] && [ ! -L "$AK" ]; then
		check_not "$name: no victim content in authorized_keys" grep -q VICTIMSECRET "$AK"
	fi
}

attack ssh-symlink 'rm -rf "$H/.ssh"; ln -s "$R/etc/victim-dir" "$H/.ssh"'
check "ssh-symlink: refused and logged" grep -q "symlink" "$W/ssh-symlink.log"
check "ssh-symlink: the link moved aside, untouched" test "$(readlink "$H"/.ssh.node-agent-moved-*)" = "$R/etc/victim-dir"
check "ssh-symlink: a real ~/.ssh with the new keys" bash -c "test -d '$H/.ssh' -a ! -L '$H/.ssh' && grep -q '$ROT' '$AK'"
rm -f "$H"/.ssh.node-agent-moved-*
check "ssh-symlink: no file created in the victim dir" test "$(ls "$R/etc/victim-dir")" = shadow

attack ak-symlink 'rm -f "$AK"; ln -s "$VICTIM" "$AK"'
check "ak-symlink: link replaced by a regular file" test -f "$AK" -a ! -L "$AK"
check "ak-symlink: new keys written" grep -q "$ROT" "$AK"
check "ak-symlink: 0600, the user's" test "$(stat -c '%a %u:%g %h' "$AK")" = "600 $UID_G:$UID_G 1"

attack ak-hardlink 'rm -f "$AK"; ln "$VICTIM" "$AK"'
check "ak-hardlink: replaced by a file of its own (1 link)" test "$(stat -c %h "$AK")" = 1
check "ak-hardlink: victim has one link again" test "$(stat -c %h "$VICTIM")" = 1
check "ak-hardlink: new keys written" grep -q "$ROT" "$AK"
check "ak-hardlink: victim owner/mode untouched" test "$(stat -c '%a %u' "$VICTIM")" = "640 0"

attack ak-fifo 'rm -f "$AK"; mkfifo "$AK"; chown $UID_G "$AK"'
check "ak-fifo: replaced by a regular file" test -f "$AK"
check "ak-fifo: new keys written" grep -q "$ROT" "$AK"

attack ak-directory 'rm -f "$AK"; mkdir "$AK"; chown $UID_G "$AK"'
check "ak-directory: directory moved aside, nothing written into it" test -d "$AK".node-agent-moved-* -a -z "$(ls -A "$AK".node-agent-moved-*)"
check "ak-directory: replaced by a file with the new keys" grep -q "$ROT" "$AK"
check "ak-directory: logged with where it went" grep -q "(a directory) moved aside to ~gardener/.ssh/authorized_keys.node-agent-moved-" "$W/ak-directory.log"

attack ssh-is-file 'rm -rf "$H/.ssh"; echo mine >"$H/.ssh"; chown $UID_G "$H/.ssh"'
check "ssh-is-file: the file moved aside, untouched" test "$(cat "$H"/.ssh.node-agent-moved-*)" = mine
check "ssh-is-file: logged" grep -q "not a directory: moved aside" "$W/ssh-is-file.log"
rm -f "$H"/.ssh.node-agent-moved-*

attack home-symlink 'mv "$H" "$H.real"; ln -s "$R/etc/victim-dir" "$H"' 1
check "home-symlink: result names the step, the user and the reason" \
	grep -q '"error":.*keys of gardener: .*home directory is a symlink' "$R/var/lib/cloud-config-exec/result.json"
check "home-symlink: refused and logged" grep -q "home directory is a symlink" "$W/home-symlink.log"
check "home-symlink: no .ssh in the victim dir" test ! -e "$R/etc/victim-dir/.ssh"
rm -f "$H"; mv "$H.real" "$H"

attack ak-symlink-dangling 'rm -f "$AK"; ln -s "$R/etc/victim-dir/newfile" "$AK"'
check "ak-symlink-dangling: no file created at the link target" test ! -e "$R/etc/victim-dir/newfile"

attack wrong-owners 'chown 0:0 "$H/.ssh"; chmod 0755 "$H/.ssh"; printf "%s\n" "ssh-ed25519 AAAAplanted other" >"$AK"; chown 4242:4242 "$AK"; chmod 0644 "$AK"'
check "wrong-owners: ~/.ssh fixed to the user, 0700" test "$(stat -c '%a %u:%g' "$H/.ssh")" = "700 $UID_G:$UID_G"
check "wrong-owners: authorized_keys fixed to the user, 0600" test "$(stat -c '%a %u:%g' "$AK")" = "600 $UID_G:$UID_G"
check "wrong-owners: a file owned by someone else is not read into ours" bash -c "! grep -q AAAAplanted '$AK'"
check "wrong-owners: the other user's file moved aside, untouched" test "$(stat -c "%u %a" "$AK".node-agent-moved-*)" = "4242 644"

attack home-other-owner 'chown 4242 "$H"' 1
check "home-other-owner: refused and logged" grep -q "owned by another user" "$W/home-other-owner.log"
chown $UID_G "$H"

# A file the user makes huge for nothing (sparse): not read, moved aside
# (kept for the user), the managed keys written to a new file.
attack ak-sparse-huge 'rm -f "$AK"; truncate -s 2M "$AK"; chown $UID_G:$UID_G "$AK"'
check "ak-sparse-huge: moved aside whole" test "$(stat -c %s "$AK".node-agent-moved-*)" -eq 2097152
check "ak-sparse-huge: new keys written" grep -q "$ROT" "$AK"
check "ak-sparse-huge: logged" grep -q "larger than the ceiling" "$W/ak-sparse-huge.log"

# A root-owned file moved to authorized_keys by the user (a private key root
# left in the home): only its key lines reach the user's file.
attack ak-root-secret 'rm -f "$AK"; { echo "-----BEGIN OPENSSH PRIVATE KEY-----"; echo "ROOTSECRETLINE"; echo "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGhW6nRj4zTgIvQ+OvMsGXhP5cp3q6aBt1cP3wS0bW6Q root-key"; } >"$AK"; chown 0:0 "$AK"; chmod 0600 "$AK"'
check "ak-root-secret: no secret line carried into the user's file" bash -c "! grep -q -e ROOTSECRETLINE -e 'BEGIN OPENSSH' '$AK'"
check "ak-root-secret: its key line kept" grep -q root-key "$AK"
check "ak-root-secret: now the user's, 0600" test "$(stat -c '%a %u:%g' "$AK")" = "600 $UID_G:$UID_G"

# A user's own key survives every normal apply; the FIFO case did not hang.
reset
echo "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGhW6nRj4zTgIvQ+OvMsGXhP5cp3q6aBt1cP3wS0bW6Q user-own" >>"$AK"
cce "$R" apply "$W/v2.json" 2>/dev/null
check "user's own key kept across a key rotation" grep -q user-own "$AK"
check "rotated key in, previous out" bash -c "grep -q '$ROT' '$AK' && ! grep -q '$(cut -d' ' -f2 "$K/gardener-previous.pub")' '$AK'"
finish
