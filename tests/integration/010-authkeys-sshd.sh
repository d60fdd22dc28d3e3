#!/bin/bash
# authkeys-cmd behind a real OpenSSH sshd (Debian's), as sshd_config wires it:
#   AuthorizedKeysCommand <dir>/authkeys-cmd --snapshot <snap> %u %f %t %k
# Everything runs inside private mount + network namespaces: lo only (no port
# collisions), a private tmpfs on /run (root-owned 0755, as sshd's safe_path
# wants for the helper; /tmp is 1777 and would be refused), scratch copies of
# /etc/passwd, /etc/group and /etc/shadow with the test users bind-mounted over
# the real ones, and a fake journal socket that records what the helper logs.
# Nothing on the host is modified. Needs root (sshd, setuid to the
# AuthorizedKeysCommandUser, namespaces).
if [ -z "${AKC_TEST_IN_NS:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (sshd, namespaces)"; exit 77; }
	[ -x /usr/sbin/sshd ] && command -v ssh >/dev/null && command -v unshare >/dev/null ||
		{ echo "SKIP: needs openssh-server, openssh-client, unshare"; exit 77; }
	AKC_TEST_IN_NS=1 exec unshare --mount --propagation private --net -- bash "$0" "$@"
fi

source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/sshd.sh"
source "$TESTS_DIR/lib/journal.sh"

AKC=$B/authkeys-cmd
MKSNAP=$B/tools/mksnapshot
[ -x "$AKC" ] && [ -x "$MKSNAP" ] || { echo "not ok - build $AKC and $MKSNAP first"; exit 1; }

ip link set lo up
W=$(scratch)
D=/run/na-akc-test
SNAP=$D/authkeys.snap
PORT=2222

# --- the private /run: helper dir, privsep dir, fake journal ----------------
mount -t tmpfs -o mode=0755 na-akc-run /run
install -d -m 0755 /run/sshd "$D" "$D/home"
install -m 0755 "$AKC" "$D/authkeys-cmd"
JLOG=$W/journal.log
fake_journal "$JLOG" || exit 1

# --- users: scratch copies of passwd/group/shadow -------------------------
cp /etc/passwd /etc/group /etc/shadow "$W/"
uid=61001
for u in akcalice akcbob akccarol; do
	install -d -m 0755 -o "$uid" -g "$uid" "$D/home/$u"
	echo "$u:x:$uid:$uid::$D/home/$u:/bin/sh" >>"$W/passwd"
	echo "$u:x:$uid:" >>"$W/group"
	echo "$u:*:19000:0:99999:7:::" >>"$W/shadow" # '*': not locked for UsePAM no
	uid=$((uid + 1))
done
for f in passwd group shadow; do mount --bind "$W/$f" "/etc/$f"; done
getent passwd akcalice >/dev/null || { echo "not ok - test users not visible"; exit 1; }

# --- keys and snapshots ---------------------------------------------------
for k in ka ka2 kf ke kb kr kx; do ssh-keygen -q -t ed25519 -N '' -C "akc-$k" -f "$W/$k"; done
fp() { ssh-keygen -lf "$W/$1.pub" | awk '{print $2}'; }
blob() { awk '{print $2}' "$W/$1.pub"; }
now=$(date +%s)
# entry USER KEY EXPIRY [OPTIONS]: one mksnapshot TSV line
entry() {
	local line
	line=$(cat "$W/$2.pub")
	[ -n "${4:-}" ] && line="$4 $line"
	printf '%s\t%s\t%s\t%s\n' "$1" "$(fp "$2")" "$3" "$line"
}
all_entries() {
	entry akcalice ka 0
	entry akcalice ka2 0
	entry akcalice kf 4102358400 'expiry-time="20991231000000Z"'
	entry akcalice ke $((now - 60)) # expired: the helper alone must drop it
	entry akcbob kb 0
	entry root kr 0
}
write_snapshot() { "$MKSNAP" --generation "$1" "$SNAP"; }
all_entries | write_snapshot 1 || { echo "not ok - mksnapshot"; exit 1; }
cp -p "$SNAP" "$W/good.snap"

# --- sshd -----------------------------------------------------------------
sshd_start "$PORT" <<EOF
AuthorizedKeysFile none
AuthorizedKeysCommand $D/authkeys-cmd --snapshot $SNAP %u %f %t %k
AuthorizedKeysCommandUser nobody
LogLevel DEBUG3
EOF

# login USER KEY [COMMAND]: a full ssh connection; prints the command's output
login() { ssh_login "$@"; }
# akc ARGS...: the helper as sshd runs it (as nobody, stdin /dev/null); stdout only
akc() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$D/authkeys-cmd" --snapshot "$SNAP" "$@" </dev/null; }

# --- logins ---------------------------------------------------------------
check "login with a key from the snapshot" test "$(login akcalice ka 'id -un')" = akcalice
check "sshd ran the helper and accepted the key" \
	grep -q "AuthorizedKeysCommand command \"$D/authkeys-cmd .*akcalice $(fp ka)" "$W/sshd.log"
check "sshd logged Accepted publickey for akcalice" \
	grep -q "Accepted publickey for akcalice from 127.0.0.1.*$(fp ka)" "$W/sshd.log"
check "login with a key carrying a future expiry-time=\"...Z\"" login akcalice kf
check_not "no login with an expired key (dropped by the helper)" login akcalice ke
check_not "no login with another user's key" login akcalice kb
check "that key does log in its own user" login akcbob kb
check_not "no login with a key in no snapshot" login akcalice kx
check_not "no login for a user without keys" login akccarol ka
check_not "no login for an unknown user" login akcnosuchuser ka
check "sshd never ran the helper for the unknown user" \
	bash -c "grep -q 'Invalid user akcnosuchuser' '$W/sshd.log' && ! grep -q 'authkeys-cmd .*akcnosuchuser' '$W/sshd.log'"
check_not "root is not served (its key is in the snapshot)" login root kr

# Removed key: works, is dropped from the snapshot, no longer works.
check "second key logs in before removal" login akcalice ka2
all_entries | grep -v "$(fp ka2)" | write_snapshot 2
check_not "removed key no longer logs in" login akcalice ka2
check "the remaining key still logs in" login akcalice ka

# Corrupt snapshots: one flipped byte in alice's record, a torn file, a bad header.
corrupt() { # corrupt OFFSET_EXPR: flips one byte of a copy of the good snapshot
	python3 - "$W/good.snap" "$SNAP" "$1" <<'PY'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
off = d.find(sys.argv[3].encode()) if not sys.argv[3].isdigit() else int(sys.argv[3])
d[off] ^= 0x20
open(sys.argv[2], "wb").write(bytes(d))
PY
}
cp -p "$W/good.snap" "$SNAP"
check "restored snapshot logs in again" login akcalice ka
corrupt akc-ka
check_not "no login with one flipped byte in the key's record" login akcalice ka
check "a damaged record is logged as snapshot-corrupt" grep -q "REASON=snapshot-corrupt|" "$JLOG"
corrupt 20
check_not "no login with a damaged header" login akcalice ka
head -c 1000 "$W/good.snap" >"$SNAP"
check_not "no login with a truncated snapshot" login akcalice ka
check "a rejected snapshot is logged with its reason" grep -q "REASON=snapshot-rejected|.*SNAPSHOT_ERROR=file size" "$JLOG"
cp -p "$W/good.snap" "$SNAP"
chown nobody "$SNAP"
check_not "no login when the snapshot is not owned by root" login akcalice ka
chown root "$SNAP"
chmod 0666 "$SNAP"
check_not "no login when the snapshot is world-writable" login akcalice ka
chmod 0644 "$SNAP"
check "good snapshot again, login works" login akcalice ka

# --- the helper's output, as sshd gets it ---------------------------------
out=$(akc akcalice "$(fp ka)")
check "the fingerprint form prints exactly one key, the right one" test "$out" = "$(cat "$W/ka.pub")"
check "with matching %t %k too" test "$(akc akcalice "$(fp ka)" ssh-ed25519 "$(blob ka)")" = "$(cat "$W/ka.pub")"
check "with another key's %k: nothing" test -z "$(akc akcalice "$(fp ka)" ssh-ed25519 "$(blob kb)")"
check "with a wrong %t: nothing" test -z "$(akc akcalice "$(fp ka)" ssh-rsa "$(blob ka)")"
check "another user's fingerprint: nothing" test -z "$(akc akcalice "$(fp kb)")"
out=$(akc akcalice)
check "the user form prints the user's 3 valid keys" test "$(printf '%s\n' "$out" | wc -l)" -eq 3
check "... with the future key's expiry-time for sshd" grep -qx "expiry-time=\"20991231000000Z\" $(cat "$W/kf.pub")" <<<"$out"
check_not "... and never the expired key" grep -q "$(blob ke)" <<<"$out"
check "root: nothing" test -z "$(akc root)"
check "root with --allow-root: its key" test "$(akc --allow-root root)" = "$(cat "$W/kr.pub")"
check "--root resolves the snapshot below a directory" \
	test "$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$D/authkeys-cmd" --root "$D" --snapshot /authkeys.snap akcbob)" = "$(cat "$W/kb.pub")"

# Exit status 0 and silence on stderr in every failure.
status_quiet() { # runs the helper with ARGS; ok when exit 0, empty stdout and stderr
	"$D/authkeys-cmd" "$@" >"$W/o" 2>"$W/e" </dev/null
	local rc=$?
	[ "$rc" -eq 0 ] && [ ! -s "$W/o" ] && [ ! -s "$W/e" ]
}
check "missing snapshot: exit 0, no output, no stderr" status_quiet --snapshot "$D/none.snap" akcalice
corrupt akc-ka
check "corrupt snapshot: exit 0, no output, no stderr" status_quiet --snapshot "$SNAP" akcalice
cp -p "$W/good.snap" "$SNAP"
check "bad arguments: exit 0, no output, no stderr" status_quiet --snapshot "$SNAP" a b c d e
check "unknown option: exit 0, no output, no stderr" status_quiet --bogus akcalice

# synthetic USER COUNT: COUNT random ed25519 keys of USER as mksnapshot lines
synthetic() {
	python3 - "$1" "$2" <<'PY'
import base64, hashlib, os, struct, sys
def s(b): return struct.pack(">I", len(b)) + b
for i in range(int(sys.argv[2])):
    blob = s(b"ssh-ed25519") + s(os.urandom(32))
    fp = "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    print("%s\t%s\t0\tssh-ed25519 %s big-%d" % (sys.argv[1], fp, base64.b64encode(blob).decode(), i))
PY
}
# A user with 2,000 keys (~180 KB of output, more than a pipe holds) and
# one with 50,000 (a lookup that takes milliseconds, for the deadline).
{ all_entries; synthetic akcbig 2000; synthetic akchuge 50000; } | write_snapshot 3
check "2,000 keys of one user are all printed, whole lines" \
	test "$(akc akcbig | grep -c '^ssh-ed25519 [A-Za-z0-9+/=]* big-[0-9]*$')" -eq 2000
# sshd closing the pipe early (older sshd did): EPIPE, exit 0, not SIGPIPE.
"$D/authkeys-cmd" --snapshot "$SNAP" akcbig </dev/null 2>/dev/null | head -c 100 >/dev/null
check "a reader that goes away early: exit 0" test "${PIPESTATUS[0]}" -eq 0
check "50,000 keys of one user are all printed" test "$(akc akchuge | wc -l)" -eq 50000
check "a 1 ms deadline ends that lookup: exit 0, no output, no stderr" \
	status_quiet --deadline-ms 1 --snapshot "$SNAP" akchuge
# While it waits for a reader the process shows its seccomp filter.
"$D/authkeys-cmd" --snapshot "$SNAP" akcbig </dev/null > >(sleep 2) &
HPID=$!
sleep 0.5
check "the running helper is under a seccomp filter with no_new_privs" \
	grep -qzP 'NoNewPrivs:\t1\n(.|\n)*Seccomp:\t2\n' "/proc/$HPID/status"
wait "$HPID"

# --- the journal ------------------------------------------------------------
check "journal: served decision with structured fields" \
	grep -q "USER=akcalice|KEYS_SERVED=1|KEYS_EXPIRED=0|REASON=served|SNAPSHOT_GENERATION=1|FINGERPRINT=$(fp ka)|" "$JLOG"
check "journal: root refusal" grep -q "USER=root|.*REASON=root-refused" "$JLOG"
check "journal: expired key" grep -q "USER=akcalice|KEYS_SERVED=0|KEYS_EXPIRED=1|REASON=expired|" "$JLOG"
check "journal: entries carry SYSLOG_IDENTIFIER and PRIORITY" grep -q "PRIORITY=6|SYSLOG_IDENTIFIER=authkeys-cmd|" "$JLOG"
check_not "journal: no key material logged" grep -qE "$(blob ka)|$(blob kb)|$(blob kr)" "$JLOG"
check_not "sshd's stderr got nothing from the helper" grep -q authkeys-cmd "$W/sshd.stderr"

finish
