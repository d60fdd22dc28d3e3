#!/bin/bash
# Who got in with what, and a single certificate revoked by serial, with a
# real sshd. cloud-config-exec applies an OSC with Gardener's key file and a
# key document (a plain key, and a CA entry with "revokedSerials"); sshd
# asks authkeys-cmd (%u %f %t %k) with the snapshot and checks the KRL
# (RevokedKeys) that cloud-config-exec wrote. Checked:
#  - attribution: for each login, sshd's "Accepted publickey ... SHA256:X"
#    line leads to ONE authkeys-cmd journal line (FINGERPRINT=X) naming the
#    source: the OSC checksum, the Secret, the key-document entry or
#    Gardener's current/previous key; for a certificate its key id and
#    serial (read from %k) and the CA entry;
#  - the snapshot format: version 2 with sources, a version 1 snapshot
#    still served (without sources);
#  - serial revocation: the KRL's certificate section revokes serial 13 of
#    the CA; ssh-keygen -Q agrees with the writer and the reader; a
#    certificate with serial 13 is refused by sshd, serial 42 of the same
#    CA logs in; an older OSC without the serial does not lift it.
# Runs in private mount + network namespaces (lo only) with scratch
# passwd/group/shadow bind-mounted; nothing on the host is modified.
if [ -z "${ATTR_TEST_IN_NS:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (sshd, namespaces)"; exit 77; }
	[ -x /usr/sbin/sshd ] && command -v ssh >/dev/null && command -v unshare >/dev/null ||
		{ echo "SKIP: needs openssh-server, openssh-client, unshare"; exit 77; }
	ATTR_TEST_IN_NS=1 exec unshare --mount --propagation private --net -- bash "$0" "$@"
fi
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
source "$TESTS_DIR/lib/journal.sh"
MKKRL=$B/tools/mkkrl
MKSNAP=$B/tools/mksnapshot
[ -x "$MKKRL" ] && [ -x "$MKSNAP" ] && [ -x "$CCE" ] || { echo "not ok - build the tools and $CCE first"; exit 1; }

ip link set lo up
W=$(scratch)
exec_init "$W"
echo '{"osc": {"secretNamespace": "kube-system", "secretName": "cloud-config-worker-a"}}' >"$W/config.json"
R=$W/root
ST=$R/var/lib/cloud-config-exec
mkdir -p "$R/etc" "$R/home/gardener/.ssh" "$ST"
printf 'root:x:0:0:root:/root:/bin/sh\ngardener:x:61200:61200::/home/gardener:/bin/sh\nattrdave:x:61201:61201::/home/attrdave:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\ngardener:x:61200:\nattrdave:x:61201:\n' >"$R/etc/group"
chown -R 61200:61200 "$R/home/gardener"
: >"$ST/revoked-keys.krl" # what node-agent.tmpfiles creates

for k in g0 g1 dk ca uk; do ssh-keygen -q -t ed25519 -N '' -C "attr-$k" -f "$W/$k" </dev/null; done
fp() { ssh-keygen -lf "$W/$1.pub" | awk '{print $2}'; }
blob() { cut -d' ' -f2 "$W/$1.pub"; }
# cert NAME SERIAL: a certificate of uk for attrdave signed by ca
cert() {
	cp "$W/uk.pub" "$W/$1.pub"
	ssh-keygen -q -s "$W/ca" -I "id-$1" -n attrdave -V -5m:+1h -z "$2" "$W/$1.pub" 2>/dev/null
}
cert c42 42
cert c13 13
cert c14 14

# osc NAME DOC: Gardener's file (g1 current, g0 previous) and the document
osc() {
	cat "$W/g1.pub" "$W/g0.pub" >"$W/$1.keys"
	python3 "$GEN_OSC" --files 1 --keys "$W/$1.keys" >"$W/$1.base.json"
	python3 - "$W/$1.base.json" "$2" >"$W/$1.json" <<'PY'
import base64, json, sys
osc = json.load(open(sys.argv[1]))
osc["spec"]["files"].append({"path": "/var/lib/node-agent/authorized-keys.json", "permissions": 0o600,
    "content": {"inline": {"encoding": "b64", "data": base64.b64encode(open(sys.argv[2], "rb").read()).decode()}}})
print(json.dumps(osc))
PY
}
cat >"$W/doc1.json" <<EOF
[{"user": "attrdave", "type": "ssh-ed25519", "publicKey": "$(blob ca)", "certAuthority": true,
  "principals": ["attrdave"], "revokedSerials": [13, "18446744073709551615"], "comment": "team-ca"},
 {"user": "attrdave", "type": "ssh-ed25519", "publicKey": "$(blob dk)", "comment": "dave-laptop"}]
EOF
osc v1 "$W/doc1.json"
check "apply with a CA entry revoking serial 13" cce "$R" apply "$W/v1.json" 2>"$W/cce.log"
SUM=$(sha256sum <"$W/v1.json" | cut -d' ' -f1)
KRL=$ST/revoked-keys.krl
revoked() { [[ $(ssh-keygen -Q -f "$KRL" "$W/$1" 2>/dev/null) == *": REVOKED" ]]; }
check "ssh-keygen -Q: serial 13 of the CA is revoked" revoked c13-cert.pub
check_not "ssh-keygen -Q: serial 42 is not" revoked c42-cert.pub
check_not "ssh-keygen -Q: nor the CA key itself" revoked ca.pub
check "the reader agrees: serials 13 and 2^64-1 of the CA" \
	test "$("$MKKRL" --dump "$KRL" | grep -c "^serial $(blob ca) \(13\|18446744073709551615\)$")" -eq 2
check "the revocation is logged" grep -q "Certificate serial 13 of CA $(fp ca) revoked (explicit)" "$W/cce.log"
cce "$R" status >"$W/status" 2>/dev/null
check "status lists the serials" grep -qx "  CA $(fp ca) serial 13" "$W/status"
check "the snapshot is format version 2" bash -c "cmp -s -n 9 '$ST/authkeys.snap' <(printf 'NASNAPv\n\x02')"

# --- an older OSC (no revokedSerials) does not lift the serial -------------
cat >"$W/doc0.json" <<EOF
[{"user": "attrdave", "type": "ssh-ed25519", "publicKey": "$(blob ca)", "certAuthority": true,
  "principals": ["attrdave"], "comment": "team-ca"},
 {"user": "attrdave", "type": "ssh-ed25519", "publicKey": "$(blob dk)", "comment": "dave-laptop"}]
EOF
osc v0 "$W/doc0.json"
cce "$R" apply "$W/v0.json" 2>>"$W/cce.log"
check "an OSC without the serial: still revoked" revoked c13-cert.pub
cce "$R" apply "$W/v1.json" 2>>"$W/cce.log"

# --- a real sshd ---------------------------------------------------------
mount -t tmpfs -o mode=0755 na-attr-run /run
install -d -m 0755 /run/sshd /run/attr /run/attr/home
JLOG=$W/journal.log
fake_journal "$JLOG" || exit 1
cp /etc/passwd /etc/group /etc/shadow "$W/"
for u in gardener:61200 attrdave:61201; do
	install -d -m 0755 -o "${u#*:}" -g "${u#*:}" "/run/attr/home/${u%:*}"
	echo "${u%:*}:x:${u#*:}:${u#*:}::/run/attr/home/${u%:*}:/bin/sh" >>"$W/passwd"
	echo "${u%:*}:x:${u#*:}:" >>"$W/group"
	echo "${u%:*}:*:19000:0:99999:7:::" >>"$W/shadow"
done
for f in passwd group shadow; do mount --bind "$W/$f" "/etc/$f"; done
cp -p "$KRL" /run/attr/revoked.krl
cp -p "$ST/authkeys.snap" /run/attr/authkeys.snap
install -m 0755 "$B/authkeys-cmd" /run/attr/authkeys-cmd
ssh-keygen -q -t ed25519 -N '' -f "$W/hostkey"
PORT=2222
cat >"$W/sshd_config" <<EOF
HostKey $W/hostkey
PidFile $W/sshd.pid
ListenAddress 127.0.0.1
Port $PORT
UsePAM no
StrictModes yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AuthorizedKeysFile none
RevokedKeys /run/attr/revoked.krl
AuthorizedKeysCommand /run/attr/authkeys-cmd --snapshot /run/attr/authkeys.snap %u %f %t %k
AuthorizedKeysCommandUser nobody
LogLevel VERBOSE
EOF
/usr/sbin/sshd -D -f "$W/sshd_config" -E "$W/sshd.log" 2>"$W/sshd.stderr" &
SSHD=$!
on_exit "kill $SSHD"
for _ in $(seq 100); do ss -ltn | grep -q "127.0.0.1:$PORT " && break; sleep 0.1; done
# login USER KEY [CERT]
login() {
	ssh -F /dev/null -p "$PORT" -i "$W/$2" ${3:+-o CertificateFile="$W/$3-cert.pub"} -o IdentitiesOnly=yes \
		-o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
		-o KexAlgorithms=curve25519-sha256 -o ConnectTimeout=10 "$1@127.0.0.1" true 2>/dev/null
}
# traced USER KEY SOURCE...: sshd's last "Accepted publickey for USER" names
# a fingerprint; authkeys-cmd's line for that fingerprint names the source
traced() {
	local user=$1 f line
	shift
	f=$(grep "Accepted publickey for $user " "$W/sshd.log" | tail -1 | grep -o 'SHA256:[A-Za-z0-9+/]*' | head -1)
	[ "$f" = "$(fp "$1")" ] || { echo "# sshd accepted '$f', not $1"; return 1; }
	shift
	line=$(grep "USER=$user|.*REASON=served|.*FINGERPRINT=$f|" "$JLOG" | tail -1)
	[ -n "$line" ] || { echo "# no authkeys-cmd line for $f"; return 1; }
	for want; do grep -qF -- "$want" <<<"$line" || { echo "# missing '$want' in: $line"; return 1; }; done
}
SRC="KEY_SOURCE=osc=$SUM secret=kube-system/cloud-config-worker-a entry="
check "sshd: Gardener's current key logs in (through authkeys-cmd)" login gardener g1
check "... traced to Gardener's current key of this OSC and Secret" traced gardener g1 \
	"${SRC}gardener-user-authorized-keys current|" "KEY_FINGERPRINT=$(fp g1)|"
check "sshd: the previous key logs in" login gardener g0
check "... traced to Gardener's previous key" traced gardener g0 "${SRC}gardener-user-authorized-keys previous|"
check "sshd: a key-document key logs in" login attrdave dk
check "... traced to its document entry" traced attrdave dk "${SRC}/var/lib/node-agent/authorized-keys.json[1]|"
check "sshd: certificate serial 42 of the CA logs in" login attrdave uk c42
check "sshd logged its key id and serial" grep -q "Accepted publickey for attrdave .*ID id-c42 (serial 42) CA ED25519 $(fp ca)" "$W/sshd.log"
check "... traced: the CA's entry, the certificate's key id and serial" traced attrdave uk \
	"${SRC}/var/lib/node-agent/authorized-keys.json[0]|" "KEY_FINGERPRINT=$(fp ca)|" "CERT_KEY_ID=id-c42|" \
	"CERT_SERIAL=42|"
check "... and the message says so" grep -q "served certificate authority $(fp ca) for user \"attrdave\" from osc=$SUM .*: certificate id \"id-c42\" serial 42" "$JLOG"
check_not "sshd: certificate serial 13 of the same CA is refused" login attrdave uk c13
check "... as revoked by the KRL" grep -q "revoked by file /run/attr/revoked.krl" "$W/sshd.log"
check "sshd: serial 14 (never revoked) logs in" login attrdave uk c14
check_not "journal: no key material" grep -qE "$(blob dk)|$(blob uk)|$(blob ca)" "$JLOG"

# --- an old (version 1) snapshot is still served, without sources --------
printf 'attrdave\t%s\t0\t%s\n' "$(fp dk)" "$(cat "$W/dk.pub")" | "$MKSNAP" --format 1 /run/attr/authkeys.snap
check "sshd: a version 1 snapshot still serves" login attrdave dk
check "... logged with an unknown source" grep -q "USER=attrdave|.*FINGERPRINT=$(fp dk)|.*KEY_SOURCE=unknown|" "$JLOG"

finish
