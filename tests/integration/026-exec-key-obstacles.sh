#!/bin/bash
# Issue 12: nothing the login user plants in ~/.ssh keeps a rotated-out key
# working. A real OpenSSH sshd reads ~gardener/.ssh/authorized_keys itself
# (AuthorizedKeysFile left at its default, as units/sshd_config.d does; no
# AuthorizedKeysCommand here, so the file is the only source and a login
# proves what it holds). For each obstacle (the file over the 1 MiB ceiling
# with the wanted lines first, a write lease held by a process of the user,
# a FIFO, a directory, a file of another user, a symlink, ~/.ssh a symlink):
# apply current+previous, plant, apply current only; then the rotated-out
# key is refused by sshd, the current key logs in, the run succeeded and
# what could not be read was moved aside, not deleted. Also: ssh.exclusive
# over a huge file and an authorized_keys2 holding the old key, a home the executor must refuse (the run fails with the
# user and the reason in result.json), a failing files step that does not
# hold back the rotation, and crash temporaries cleaned (only
# ours: regular, the user's or root's, the exact name pattern).
# Issue 21: every rotation above also runs with the names taken (the user
# hard-links a file of theirs to every predictable moved-aside name, the
# UTC second and -1..-99, for the seconds around the run: what blocked the
# move before); sshd also checks the executor's KRL (RevokedKeys, as the
# shipped drop-in), which must hold the rotated-out key after each rotation.
# And when the home really cannot be written (~/.ssh a read-only bind mount,
# so sshd still reads the old file): the run fails naming it in
# result.json, yet sshd refuses the rotated-out key at once (KRL), the
# current key logs in, and the next run that can write removes the line;
# in exclusive mode too.
# Runs in private mount + network namespaces (lo only; scratch passwd,
# group and shadow bind-mounted over /etc's; a tmpfs on /run for sshd).
if [ -z "${CCE_KO_IN_NS:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (sshd, namespaces)"; exit 77; }
	[ -x /usr/sbin/sshd ] && command -v ssh >/dev/null && command -v unshare >/dev/null ||
		{ echo "SKIP: needs openssh-server, openssh-client, unshare"; exit 77; }
	CCE_KO_IN_NS=1 exec unshare --mount --propagation private --net -- bash "$0" "$@"
fi
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
source "$TESTS_DIR/lib/sshd.sh"

ip link set lo up
W=$(scratch)
chmod 0755 "$W"
exec_init "$W"
R=$W/root
ST=$R/var/lib/cloud-config-exec
K=$TESTS_DIR/fixtures/keys
UID_G=1500
H=$R/home/gardener
AK=$H/.ssh/authorized_keys
mkdir -p "$R/etc" "$H"
printf 'root:x:0:0:root:/root:/bin/sh\ngardener:x:%d:%d::/home/gardener:/bin/sh\n' $UID_G $UID_G >"$R/etc/passwd"
printf 'root:x:0:\ngardener:x:%d:\n' $UID_G >"$R/etc/group"
chown $UID_G:$UID_G "$H"
chmod 0755 "$H"

# sshd's view of the same user: its home is the scratch root's.
cp /etc/passwd /etc/group /etc/shadow "$W/"
echo "gardener:x:$UID_G:$UID_G::$H:/bin/sh" >>"$W/passwd"
echo "gardener:x:$UID_G:" >>"$W/group"
echo "gardener:*:19000:0:99999:7:::" >>"$W/shadow" # '*': not locked for UsePAM no
for f in passwd group shadow; do mount --bind "$W/$f" "/etc/$f"; done
mount -t tmpfs -o mode=0755 na-cce-ko-run /run
install -d -m 0755 /run/sshd

for k in gardener-current gardener-previous; do install -m 0600 "$K/$k" "$W/$k"; done
cat "$K/gardener-current.pub" "$K/gardener-previous.pub" >"$W/keys1"
cat "$K/gardener-current.pub" >"$W/keys2"
python3 "$GEN_OSC" --files 1 --keys "$W/keys1" >"$W/v1.json"
python3 "$GEN_OSC" --files 1 --keys "$W/keys2" >"$W/v2.json"
PREV=$(cut -d' ' -f2 "$K/gardener-previous.pub")

PORT=2222
sshd_start "$PORT" <<EOF
LogLevel DEBUG1
RevokedKeys $ST/revoked-keys.krl
EOF

login() { ssh_login gardener "$1"; } # login KEY: a full ssh connection as gardener
# as_user CMD...: as the login user (run /usr/bin/python3: a pyenv shim
# below /root is not the user's to run)
as_user() { setpriv --reuid=$UID_G --regid=$UID_G --clear-groups "$@"; }
result_ok() { python3 -c "import json, sys; sys.exit(json.load(open('$ST/result.json'))['success'] is not True)"; }

check "apply current+previous" cce "$R" apply "$W/v1.json" 2>/dev/null
check "the previous key logs in before the rotation" login gardener-previous
check "the current key logs in" login gardener-current

# The rotated-out key is in the executor's KRL (what sshd checks first).
revoked() { [[ $(ssh-keygen -Q -f "$ST/revoked-keys.krl" "$K/gardener-previous.pub" 2>/dev/null) == *": REVOKED" ]]; }

# Each case starts from a node that trusts both keys: the KRL is emptied
# (root's state, as tmpfiles.d creates it) since the previous key, once
# rotated out, stays revoked when it comes back as the PREVIOUS key.
reset() {
	rm -rf "$H/.ssh" "$H"/.ssh.node-agent-moved-* "$H/other" "$H/planted"
	rm -f "$ST/revocations"
	[ -d "$ST" ] && : >"$ST/revoked-keys.krl"
	cce "$R" apply "$W/v1.json" >/dev/null 2>&1
	grep -q "$PREV" "$AK" || fail "reset: previous key not in authorized_keys"
	revoked && fail "reset: previous key still revoked"
}

# The names-taken obstacle: as the user, a file of theirs hard-linked to
# every name the executor used to try when moving something aside
# (<name>.node-agent-moved-<UTC second> and -1..-99) for the seconds from
# 2 s before to 60 s after now, in ~/.ssh (authorized_keys, authorized_keys2)
# and in the home (.ssh). Hard links cost no inode. Prints the link count.
plant_names() {
	as_user /usr/bin/python3 - "$H" <<'PY'
import os, sys, time
home = sys.argv[1]
plant = os.path.join(home, "planted")
if not os.path.exists(plant):
    with open(plant, "w") as f:
        f.write("mine\n")
t0 = int(time.time())
dirs = [(home, [".ssh"])]
ssh = os.path.join(home, ".ssh")
if os.path.isdir(ssh) and not os.path.islink(ssh):
    dirs.append((ssh, ["authorized_keys", "authorized_keys2"]))
for d, names in dirs:
    for name in names:
        for t in range(t0 - 2, t0 + 61):
            ts = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t))
            for a in range(100):
                n = "%s.node-agent-moved-%s%s" % (name, ts, "-%d" % a if a else "")
                try:
                    os.link(plant, os.path.join(d, n))
                except FileExistsError:
                    pass
print(os.stat(plant).st_nlink)
PY
}
# The names the executor picks now: "-<16 hex>" after the UTC second.
HEX16=$(printf '[0-9a-f]%.0s' $(seq 16))
MV="node-agent-moved-*Z-$HEX16"

# rotate NAME MOVED-GLOB: apply the rotated OSC after the obstacle was
# planted; the run succeeds, sshd refuses the rotated-out key and takes
# the current one, and (MOVED-GLOB not empty) what was there was moved aside.
rotate() {
	local name=$1 moved=$2 links
	links=$(plant_names)
	check "$name: names taken: $links hard links on the predictable names" test "${links:-0}" -gt 6000
	timeout 60 "$CCE" --root "$R" --config "$W/config.json" --no-systemd --log stderr apply "$W/v2.json" \
		>"$W/$name.log" 2>&1
	local rc=$?
	check "$name: rotation applied (rc $rc)" test $rc -eq 0
	check "$name: result.json says success" result_ok
	check "$name: authorized_keys a regular file of the user's, 0600" \
		test "$(stat -c '%F %a %u' "$AK")" = "regular file 600 $UID_G"
	check_not "$name: the rotated-out key is gone from authorized_keys" grep -q "$PREV" "$AK"
	check_not "$name: sshd refuses the rotated-out key" login gardener-previous
	check "$name: the current key logs in" login gardener-current
	check "$name: the rotated-out key is in the KRL" revoked
	check "$name: the planted names are untouched" test "$(stat -c %h "$H/planted")" = "$links"
	if [ -n "$moved" ]; then
		# shellcheck disable=SC2086
		check "$name: what was there was moved aside, not deleted" bash -c "ls -d $moved >/dev/null 2>&1"
		check "$name: the log says where it went" grep -q "moved aside to ~gardener/" "$W/$name.log"
	fi
}

# --- over the ceiling: the wanted lines first, then over a MiB of comments
reset
as_user /usr/bin/python3 - "$AK" <<'PY'
import sys
with open(sys.argv[1], "a") as f:
    for i in range(20000):
        f.write("# %s\n" % ("x" * 52))
PY
size_before=$(stat -c %s "$AK")
check "huge: the planted file is over 1 MiB" test "$size_before" -gt 1048576
check "huge: before the fix's run, sshd takes the previous key from it" login gardener-previous
rotate huge "$AK.$MV"
check "huge: the moved-aside file is whole" test "$(stat -c %s "$AK".$MV)" -eq "$size_before"

# --- a write lease held by a process of the user (SIGIO ignored)
reset
# setpriv itself, not as_user: a shell function in the background is a
# subshell, and $! would be that subshell, not the leaseholder.
setpriv --reuid=$UID_G --regid=$UID_G --clear-groups /usr/bin/python3 - "$AK" >"$W/lease.out" 2>&1 <<'PY' &
import fcntl, os, signal, sys, time
signal.signal(signal.SIGIO, signal.SIG_IGN)
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.fcntl(fd, getattr(fcntl, "F_SETLEASE", 1024), fcntl.F_WRLCK)
print("leased", flush=True)
time.sleep(300)
PY
LEASE=$!
on_exit "kill $LEASE 2>/dev/null"
for _ in $(seq 100); do grep -q leased "$W/lease.out" && break; sleep 0.1; done
check "lease: the user's process holds a write lease" grep -q leased "$W/lease.out"
check "lease: /proc/locks shows it" grep -q "LEASE.*WRITE" /proc/locks
rotate lease "$AK.$MV"
check "lease: logged as leased" grep -q "leased by another process" "$W/lease.log"
kill "$LEASE" 2>/dev/null
wait "$LEASE" 2>/dev/null

# --- a FIFO, a directory, a file of another user, a symlink
reset
rm -f "$AK"; as_user mkfifo "$AK"
rotate fifo "$AK.$MV"
check "fifo: moved aside as it was" test -p "$AK".$MV

reset
rm -f "$AK"; as_user mkdir "$AK"; cp "$W/keys1" "$AK/inside"
rotate directory "$AK.$MV"
check "directory: moved aside with its content" cmp -s "$W/keys1" "$AK".$MV/inside

reset
chown 4242:4242 "$AK"
rotate other-owner "$AK.$MV"
check "other-owner: moved aside, owner kept" test "$(stat -c %u "$AK".$MV)" = 4242

reset
as_user cp "$AK" "$H/.ssh/mine"; rm -f "$AK"; as_user ln -s mine "$AK"
check "symlink: sshd follows the link to the previous key" login gardener-previous
rotate symlink ""
check "symlink: the link's target is left alone" grep -q "$PREV" "$H/.ssh/mine"

reset
as_user mkdir "$H/other"; as_user cp "$AK" "$H/other/authorized_keys"
rm -rf "$H/.ssh"; as_user ln -s other "$H/.ssh"
check "ssh-symlink: sshd follows ~/.ssh to the previous key" login gardener-previous
rotate ssh-symlink "$H/.ssh.$MV"
check "ssh-symlink: ~/.ssh is a directory again" test -d "$H/.ssh" -a ! -L "$H/.ssh"
check "ssh-symlink: the moved link still points where it did" test "$(readlink "$H"/.ssh.$MV)" = other

# --- exclusive mode: a huge file, the user's own line gone too
reset
echo "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGhW6nRj4zTgIvQ+OvMsGXhP5cp3q6aBt1cP3wS0bW6Q user-own" >>"$AK"
as_user /usr/bin/python3 -c "
import sys
with open(sys.argv[1], 'a') as f: f.write(('#' * 1023 + '\n') * 1100)" "$AK"
cp "$K/gardener-previous.pub" "$H/.ssh/authorized_keys2"; chown $UID_G:$UID_G "$H/.ssh/authorized_keys2"
echo '{"ssh": {"exclusive": true}}' >"$W/config.json"
rotate exclusive-huge "$AK.$MV"
check "exclusive-huge: only the managed key" test "$(grep -c . "$AK")" -eq 1
check "exclusive: authorized_keys2 (sshd reads it too) moved aside" \
	bash -c "test ! -e '$H/.ssh/authorized_keys2' && grep -q '$PREV' '$H'/.ssh/authorized_keys2.$MV"
echo '{}' >"$W/config.json"

# --- crash temporaries: ours removed, anything else with the name kept
reset
as_user sh -c "echo ours >'$H/.ssh/.#authorized_keys.0123456789abcdef'"
echo ours-root >"$H/.ssh/.#authorized_keys.fedcba9876543210"
echo victim >"$W/victim"
ln -s "$W/victim" "$H/.ssh/.#authorized_keys.1111111111111111"
echo other >"$H/.ssh/.#authorized_keys.2222222222222222"; chown 4242 "$H/.ssh/.#authorized_keys.2222222222222222"
as_user mkdir "$H/.ssh/.#authorized_keys.3333333333333333"
as_user sh -c "echo near >'$H/.ssh/.#authorized_keys.0123456789ABCDEF'; echo near >'$H/.ssh/.#authorized_keys.0123'"
cce "$R" apply "$W/v1.json" 2>"$W/temps.log"
check "temps: the user's temporary removed" test ! -e "$H/.ssh/.#authorized_keys.0123456789abcdef"
check "temps: root's temporary removed" test ! -e "$H/.ssh/.#authorized_keys.fedcba9876543210"
check "temps: removal logged" grep -q "Removed ~gardener/.ssh/.#authorized_keys.0123456789abcdef" "$W/temps.log"
check "temps: a symlink with the name left alone, its target too" \
	test -L "$H/.ssh/.#authorized_keys.1111111111111111" -a "$(cat "$W/victim")" = victim
check "temps: another user's file with the name left alone" \
	test "$(stat -c %u "$H/.ssh/.#authorized_keys.2222222222222222")" = 4242
check "temps: a directory with the name left alone" test -d "$H/.ssh/.#authorized_keys.3333333333333333"
check "temps: names off the pattern left alone" \
	test -e "$H/.ssh/.#authorized_keys.0123456789ABCDEF" -a -e "$H/.ssh/.#authorized_keys.0123"

# --- a files step that fails does not hold back the rotation
reset
echo "not a directory" >"$R/etc/blocked"
python3 "$GEN_OSC" --files 1 --prefix /etc/blocked --keys "$W/keys2" >"$W/v3.json"
timeout 60 "$CCE" --root "$R" --config "$W/config.json" --no-systemd --log stderr apply "$W/v3.json" \
	>"$W/files-fail.log" 2>&1
check "files-fail: the run fails (exit 1)" test $? -eq 1
check "files-fail: result.json: failedStep files" python3 -c "
import json, sys; r = json.load(open('$ST/result.json'))
sys.exit(not (r['success'] is False and r['failedStep'] == 'files'))"
check_not "files-fail: the keys were rotated all the same: sshd refuses the old key" login gardener-previous
check "files-fail: the current key logs in" login gardener-current
rm -f "$R/etc/blocked"

# --- a home the executor must refuse: the run fails and says why
reset
chown 4242 "$H"
timeout 60 "$CCE" --root "$R" --config "$W/config.json" --no-systemd --log stderr apply "$W/v2.json" \
	>"$W/home-refused.log" 2>&1
check "home-refused: the run fails (exit 1)" test $? -eq 1
check "home-refused: result.json: success false, failedStep keys, user and reason" python3 -c "
import json, sys; r = json.load(open('$ST/result.json'))
sys.exit(not (r['success'] is False and r['failedStep'] == 'keys' and
    'keys of gardener: ~gardener/.ssh/authorized_keys not updated: home directory is owned by another user' in r['error']))"
check "home-refused: the snapshot still carries the current key only" bash -c \
	"'$B/authkeys-cmd' --root '$R' gardener 2>/dev/null | grep -q '$(cut -d' ' -f2 "$K/gardener-current.pub")' &&
	! '$B/authkeys-cmd' --root '$R' gardener 2>/dev/null | grep -q '$PREV'"
check "home-refused: the rotated-out key is in the KRL all the same" revoked
chown $UID_G "$H"

# --- issue 21: a home that really cannot be written while sshd still reads
# it (~/.ssh a read-only bind mount), names taken as well: the run fails and
# says so, but the rotated-out key is revoked in the same run, so sshd
# refuses it although the file still holds it; the current key logs in; the
# first run that can write removes the line. Normal, then exclusive mode.
# stuck NAME CONFIG: one such case with CONFIG as the executor's config.
stuck() {
	local name=$1 config=$2 links
	echo '{}' >"$W/config.json"
	reset
	echo "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGhW6nRj4zTgIvQ+OvMsGXhP5cp3q6aBt1cP3wS0bW6Q user-own" >>"$AK"
	echo "$config" >"$W/config.json"
	links=$(plant_names)
	mount --bind -o ro "$H/.ssh" "$H/.ssh" || { fail "$name: cannot bind-mount ~/.ssh read-only"; return; }
	timeout 60 "$CCE" --root "$R" --config "$W/config.json" --no-systemd --log stderr apply "$W/v2.json" \
		>"$W/$name.log" 2>&1
	check "$name: the run fails (exit 1)" test $? -eq 1
	check "$name: result.json: failedStep keys, the user and why" python3 -c "
import json, sys; r = json.load(open('$ST/result.json'))
sys.exit(not (r['success'] is False and r['failedStep'] == 'keys' and
    'keys of gardener: ~gardener/.ssh/authorized_keys not updated: cannot replace ~/.ssh/authorized_keys' in r['error']
    and 'Read-only file system' in r['error']))"
	check "$name: the file still holds the rotated-out key" grep -q "$PREV" "$AK"
	check "$name: the rotated-out key is in the KRL" revoked
	check_not "$name: sshd refuses the rotated-out key" login gardener-previous
	check "$name: the current key logs in" login gardener-current
	check "$name: state.json: managed = the desired key only, the dropped one stale" python3 -c "
import json, sys; s = json.load(open('$ST/state.json'))
m = [k['line'] for k in s['managedKeys']['gardener']]; st = [k['line'] for k in s['staleKeys']['gardener']]
sys.exit(not (len(m) == 1 and '$PREV' not in m[0] and len(st) == 1 and '$PREV' in st[0]))"
	check "$name: status names the dropped key still in the file" bash -c "cce_status | grep -q \"dropped key of gardener: $PREV_FP \""
	umount "$H/.ssh"
	check "$name: the planted names are untouched" test "$(stat -c %h "$H/planted")" = "$links"
	cce "$R" apply "$W/v2.json" >"$W/$name-fixed.log" 2>&1
	check "$name: once writable, the next run succeeds" result_ok
	check_not "$name: ... and removes the rotated-out key's line" grep -q "$PREV" "$AK"
	check "$name: ... and it stays revoked" revoked
	check "$name: ... and no stale keys are left in state.json" python3 -c "
import json, sys; sys.exit('staleKeys' in json.load(open('$ST/state.json')))"
}
PREV_FP=$(ssh-keygen -lf "$K/gardener-previous.pub" | cut -d' ' -f2)
cce_status() { "$CCE" --root "$R" --config "$W/config.json" --no-systemd --log stderr status 2>/dev/null; }
export -f cce_status
export CCE R W
stuck stuck-ro '{}'
check "stuck-ro: the user's own line is kept (not exclusive)" grep -q "user-own" "$AK"
stuck stuck-ro-exclusive '{"ssh": {"exclusive": true}}'
check_not "stuck-ro-exclusive: the user's own line is gone once writable" grep -q "user-own" "$AK"
echo '{}' >"$W/config.json"
finish
