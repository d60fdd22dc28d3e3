#!/bin/bash
# Revocation that sticks (cloud-config-exec/revoke.h): cloud-config-exec
# writes an OpenSSH KRL of the keys that rotated out of Gardener's key file,
# the key-document keys whose `until` passed and those revoked explicitly
# ("revoked": true); the KRL never shrinks by accident (refused sources,
# lost records, an older OSC naming a key as previous); ssh-keygen -Q agrees
# with lib/ssh/krl.c's writer and reader for every key; and a real sshd with
# RevokedKeys refuses a revoked key found in a user's OWN authorized_keys
# (not written by node-agent) while the current key logs in.
# Runs in private mount + network namespaces (lo only), with scratch
# passwd/group/shadow bind-mounted for the sshd user; cloud-config-exec
# works in a scratch root. Nothing on the host is modified.
if [ -z "${KRL_TEST_IN_NS:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (sshd, namespaces)"; exit 77; }
	[ -x /usr/sbin/sshd ] && command -v ssh >/dev/null && command -v unshare >/dev/null ||
		{ echo "SKIP: needs openssh-server, openssh-client, unshare"; exit 77; }
	KRL_TEST_IN_NS=1 exec unshare --mount --propagation private --net -- bash "$0" "$@"
fi
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
source "$TESTS_DIR/lib/sshd.sh"
MKKRL=$B/tools/mkkrl
[ -x "$MKKRL" ] && [ -x "$CCE" ] || { echo "not ok - build $MKKRL and $CCE first"; exit 1; }

ip link set lo up
W=$(scratch)
exec_init "$W"
R=$W/root
ST=$R/var/lib/cloud-config-exec
KRL=$ST/revoked-keys.krl
mkdir -p "$R/etc" "$R/home/gardener/.ssh"
printf 'root:x:0:0:root:/root:/bin/sh\ngardener:x:1700:1700::/home/gardener:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\ngardener:x:1700:\n' >"$R/etc/group"
chown -R 1700:1700 "$R/home/gardener"

keys="g0 g1 g2 g3 g4 dv de dx own opk"
for k in $keys; do ssh-keygen -q -t ed25519 -N '' -C "krl-$k" -f "$W/$k" </dev/null; done
ssh-keygen -q -t rsa -b 2048 -N '' -C krl-rsa -f "$W/rsa" </dev/null
fp() { ssh-keygen -lf "$W/$1.pub" | awk '{print $2}'; }
blob() { cut -d' ' -f2 "$W/$1.pub"; }
now=$(date +%s)
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }

# osc NAME GARDENER-KEYS... [-- DOCUMENT]: an OSC with Gardener's key file
# (current first) and optionally a key document.
osc() {
	local name=$1 doc=
	shift
	: >"$W/$name.keys"
	while [ $# -gt 0 ]; do
		[ "$1" = -- ] && { doc=$2; break; }
		cat "$W/$1.pub" >>"$W/$name.keys"
		shift
	done
	python3 "$GEN_OSC" --files 1 --keys "$W/$name.keys" >"$W/$name.base.json"
	python3 - "$W/$name.base.json" "$doc" >"$W/$name.json" <<'PY'
import base64, json, sys
osc = json.load(open(sys.argv[1]))
if sys.argv[2]:
    osc["spec"]["files"].append({"path": "/var/lib/node-agent/authorized-keys.json", "permissions": 0o600,
        "content": {"inline": {"encoding": "b64", "data": base64.b64encode(open(sys.argv[2], "rb").read()).decode()}}})
print(json.dumps(osc))
PY
}
apply() { cce "$R" apply "$W/$1.json" 2>>"$W/cce.log"; }
# revoked KEY: ssh-keygen -Q says REVOKED (it exits 1 then)
revoked() { local o; o=$(ssh-keygen -Q -f "$KRL" "$W/$1.pub" 2>/dev/null); [[ $o == *": REVOKED" ]]; }
all_revoked() { local k; for k; do revoked "$k" || return 1; done; }
# agree: for every key, ssh-keygen -Q and the reader (mkkrl --dump) agree
agree() {
	local k dump
	dump=$("$MKKRL" --dump "$KRL") || return 1
	for k in $keys rsa; do
		if revoked "$k"; then
			grep -qxF "$(fp "$k")" <<<"$dump" || { echo "# $k: ssh-keygen REVOKED, reader no"; return 1; }
		else
			[[ $(ssh-keygen -Q -f "$KRL" "$W/$k.pub" 2>/dev/null) == *": ok" ]] || { echo "# $k: ssh-keygen error"; return 1; }
			! grep -qxF "$(fp "$k")" <<<"$dump" || { echo "# $k: reader revoked, ssh-keygen ok"; return 1; }
		fi
	done
}

# --- the writer alone: ssh-keygen -Q agrees with mkkrl for keys of two types
printf '%s\n%s\n' "$(fp g0)" "$(fp rsa)" | "$MKKRL" "$W/direct.krl"
check "lib/ssh/krl.c KRL: ssh-keygen -Q finds both listed keys REVOKED" \
	bash -c "ssh-keygen -Q -f '$W/direct.krl' '$W/g0.pub' '$W/rsa.pub' | grep -c ': REVOKED$' | grep -qx 2"
check "lib/ssh/krl.c KRL: and the others not" \
	bash -c "ssh-keygen -Q -f '$W/direct.krl' '$W/g1.pub' '$W/own.pub' | grep -c ': ok$' | grep -qx 2"
"$MKKRL" "$W/empty.krl" </dev/null
check "an empty KRL from lib/ssh/krl.c: ssh-keygen -Q accepts it, nothing revoked" \
	bash -c "ssh-keygen -Q -f '$W/empty.krl' '$W/g0.pub' >/dev/null"

# --- rotation: g0 rotates out when g2 arrives
osc v1 g1 g0
mkdir -p "$ST" && : >"$KRL" # what node-agent.tmpfiles creates before the first apply
check "first apply writes the KRL" apply v1
check "... over the empty file tmpfiles.d made, without calling it damaged" bash -c "! grep -q 'is not a KRL' '$W/cce.log'"
check "KRL 0644 root:root" test "$(stat -c '%a %u:%g' "$KRL")" = "644 0:0"
check "first KRL: valid, nothing revoked" test "$("$MKKRL" --dump "$KRL" | wc -l)" -eq 1
osc v2 g2 g1
apply v2
check "rotation: the previous-previous key g0 is revoked" revoked g0
check_not "rotation: current g2 is not revoked" revoked g2
check_not "rotation: previous g1 is not revoked" revoked g1
check "the revocation is logged with its reason" grep -q "Key $(fp g0) revoked (dropped)" "$W/cce.log"
osc v3 g3 g2
apply v3
check "next rotation: g1 revoked too, g0 still" all_revoked g1 g0
check "ssh-keygen -Q and the reader agree" agree
v=$("$MKKRL" --dump "$KRL" | head -1)
apply v3
check "same OSC again: KRL not rewritten (same version)" test "$v" = "$("$MKKRL" --dump "$KRL" | head -1)"

# --- the key document: an expired grant and an explicit revocation
cat >"$W/doc1.json" <<EOF
[{"user": "gardener", "type": "ssh-ed25519", "publicKey": "$(blob dv)", "until": "$(iso $((now + 86400)))"},
 {"user": "gardener", "type": "ssh-ed25519", "publicKey": "$(blob de)", "until": "$(iso $((now - 60)))"},
 {"user": "gardener", "type": "ssh-ed25519", "publicKey": "$(blob dx)", "revoked": true}]
EOF
osc v4 g3 g2 -- "$W/doc1.json"
check "apply with a key document" apply v4
check "document: the key whose until passed is revoked" revoked de
check "document: the explicitly revoked key is revoked" revoked dx
check_not "document: the valid grant is not" revoked dv
check "document: the revoked entry is not written to authorized_keys" \
	bash -c "! grep -q '$(blob dx)' '$R/home/gardener/.ssh/authorized_keys'"
check "ssh-keygen -Q and the reader agree" agree

# --- never shrinking: a refused source, lost records, an older OSC
printf '[{"user": "gardener", "type": "ssh-ed25519", "publicKey": "AAAA-broken"}]' >"$W/bad.json"
osc v5 g3 g2 -- "$W/bad.json"
apply v5
check "refused key document: every revocation stays" \
	all_revoked g0 g1 de dx
rm "$ST/revocations"
osc v6 g3 g2
apply v6
check "records lost: the KRL's hashes are kept" \
	all_revoked g0 g1 de dx
check "... as \"kept\"" grep -q "$(fp dx) kept" "$ST/revocations"
osc old g2 g1
apply old
check "an older OSC naming g1 as the previous key: g1 stays revoked" revoked g1
printf 'garbage' >"$KRL"
check_not "a damaged KRL is not overwritten silently: the run fails" apply v6
check "... the KRL is left as it is" test "$(cat "$KRL")" = garbage
cce "$R" revoke --replace 2>>"$W/cce.log"
check "... cloud-config-exec revoke --replace writes it anew, valid again" bash -c "'$MKKRL' --dump '$KRL' >/dev/null"

# --- lifting: only a re-grant as current
cat >"$W/doc2.json" <<EOF
[{"user": "gardener", "type": "ssh-ed25519", "publicKey": "$(blob de)", "until": "$(iso $((now + 86400)))"},
 {"user": "gardener", "type": "ssh-ed25519", "publicKey": "$(blob dx)", "revoked": false}]
EOF
cat >"$W/doc-dx.json" <<EOF
[{"user": "gardener", "type": "ssh-ed25519", "publicKey": "$(blob dx)", "revoked": true}]
EOF
osc v7 g3 g2 -- "$W/doc-dx.json"
apply v7 # dx explicit again (the records were lost above)
osc v8 g1 g3 -- "$W/doc2.json"
apply v8
check_not "re-granted with a new until: the expired key's revocation is lifted" revoked de
check_not "re-issued as Gardener's current key: lifted" revoked g1
check "explicitly revoked: never lifted by a grant" revoked dx
check "... and that conflict is logged" grep -q "$(fp dx) is revoked explicitly but still granted" "$W/cce.log"
check "g0 stays revoked" revoked g0
check "ssh-keygen -Q and the reader agree" agree

# --- certificate authorities: per-user CA lines in the key document
for k in ca ca2 ca3 uk; do ssh-keygen -q -t ed25519 -N '' -C "krl-$k" -f "$W/$k" </dev/null; done
echo "krldave:x:61101:61101::/home/krldave:/bin/sh" >>"$R/etc/passwd"
cat >"$W/doc3.json" <<EOF
[{"user": "krldave", "type": "ssh-ed25519", "publicKey": "$(blob ca)", "certAuthority": true,
  "principals": ["krldave", "ops"], "comment": "team-ca"},
 {"user": "krldave", "type": "ssh-ed25519", "publicKey": "$(blob ca3)", "certAuthority": true, "comment": "old-ca"},
 {"user": "gardener", "type": "ssh-ed25519", "publicKey": "$(blob ca3)", "revoked": true},
 {"user": "gardener", "type": "ssh-ed25519", "publicKey": "$(blob dx)", "revoked": true}]
EOF
osc v9 g1 g3 -- "$W/doc3.json"
check "apply with CA entries" apply v9
check "attribution: Gardener's current key logged with its source" \
	grep -q "Key $(fp g1) of gardener in snapshot generation [0-9]*: from gardener-user-authorized-keys current" "$W/cce.log"
check "attribution: ... and the previous one" \
	grep -q "Key $(fp g3) of gardener in snapshot generation [0-9]*: from gardener-user-authorized-keys previous" "$W/cce.log"
check "attribution: a CA with its key-document entry" grep -q \
	"Key $(fp ca) of krldave in snapshot generation [0-9]*: from /var/lib/node-agent/authorized-keys.json\[0\] (certificate authority)" "$W/cce.log"
cce "$R" status >"$W/status" 2>/dev/null
check "status: key sources with generation and entry" \
	grep -q "^  gardener-user-authorized-keys current gardener $(fp g1) until -" "$W/status"
check "status: a CA with its principals" \
	grep -q "^  /var/lib/node-agent/authorized-keys.json\[0\] krldave $(fp ca) until - cert-authority principals=krldave,ops" "$W/status"
check "status: managed keys with their source" grep -q "^managed key of krldave: $(fp ca) until - from /var/lib/node-agent/authorized-keys.json\[0\]" "$W/status"
check "status: the KRL's entries with their reasons" grep -q "^  $(fp ca3) explicit since 20" "$W/status"
check "status: the KRL's size and version" grep -q "^revoked keys: [0-9]* (KRL version [0-9]*)" "$W/status"
check "a revoked CA key is in the KRL" revoked ca3
check_not "the trusted CA is not" revoked ca
AKC_OUT=$("$B/authkeys-cmd" --root "$R" krldave "$(fp uk)" ssh-ed25519-cert-v01@openssh.com AAAA 2>/dev/null)
check "authkeys-cmd: a certificate type gets the user's cert-authority lines" \
	test "$(grep -c '^cert-authority' <<<"$AKC_OUT")" -eq 2
check "... rendered with principals=" grep -qF "cert-authority,principals=\"krldave,ops\" ssh-ed25519 $(blob ca) team-ca" <<<"$AKC_OUT"
check "authkeys-cmd: the plain key type with the same %f gets nothing" \
	test -z "$("$B/authkeys-cmd" --root "$R" krldave "$(fp uk)" ssh-ed25519 2>/dev/null)"
# cert NAME CA PRINCIPALS VALIDITY [SERIAL]: a certificate of uk, NAME-cert.pub
cert() {
	cp "$W/uk.pub" "$W/$1.pub"
	ssh-keygen -q -s "$W/$2" -I "id-$1" -n "$3" -V "$4" -z "${5:-7}" "$W/$1.pub" 2>/dev/null
}
cert c_ok ca krldave -5m:+1h 42
cert c_ops ca ops -5m:+1h
cert c_exp ca krldave 20200101:20200102
cert c_other ca mallory -5m:+1h
cert c_ca2 ca2 krldave -5m:+1h
cert c_ca3 ca3 krldave -5m:+1h

# --- a real sshd with RevokedKeys, a user's own authorized_keys
mount -t tmpfs -o mode=0755 na-krl-run /run
install -d -m 0755 /run/sshd /run/krl /run/krl/home
cp /etc/passwd /etc/group /etc/shadow "$W/"
echo "krldave:x:61101:61101::/run/krl/home/krldave:/bin/sh" >>"$W/passwd"
echo "krldave:x:61101:" >>"$W/group"
echo "krldave:*:19000:0:99999:7:::" >>"$W/shadow"
for f in passwd group shadow; do mount --bind "$W/$f" "/etc/$f"; done
install -d -m 0700 -o 61101 -g 61101 /run/krl/home/krldave /run/krl/home/krldave/.ssh
cat "$W/g0.pub" "$W/g3.pub" "$W/own.pub" "$W/opk.pub" >/run/krl/home/krldave/.ssh/authorized_keys
# The operator revokes a key on this node (issue 35): revoked-keys.d, merged
# into the KRL at once by `cloud-config-exec revoke`.
mkdir -p "$R/etc/node-agent/revoked-keys.d"
cp "$W/opk.pub" "$R/etc/node-agent/revoked-keys.d/left-the-team.pub"
cce "$R" revoke 2>>"$W/cce.log"
chown 61101:61101 /run/krl/home/krldave/.ssh/authorized_keys
chmod 0600 /run/krl/home/krldave/.ssh/authorized_keys
cp -p "$KRL" /run/krl/revoked.krl
cp -p "$ST/authkeys.snap" /run/krl/authkeys.snap
install -m 0755 "$B/authkeys-cmd" /run/krl/authkeys-cmd
PORT=2222
sshd_start "$PORT" <<EOF
AuthorizedKeysFile .ssh/authorized_keys
RevokedKeys /run/krl/revoked.krl
AuthorizedKeysCommand /run/krl/authkeys-cmd --snapshot /run/krl/authkeys.snap %u %f %t %k
AuthorizedKeysCommandUser nobody
LogLevel VERBOSE
EOF
login() { ssh_login krldave "$1"; }
check "sshd: the current key logs in from the user's own authorized_keys" login g3
check "sshd: an unrelated key of the user's own logs in" login own
check_not "sshd: the rotated-out key in the user's own authorized_keys is refused" login g0
check "sshd logged the refusal as revoked by the KRL" grep -q "revoked by file /run/krl/revoked.krl" "$W/sshd.log"
check_not "sshd: a key the operator revoked in revoked-keys.d, in the user's own authorized_keys, is refused" login opk
# login_cert NAME: uk with the certificate NAME-cert.pub
login_cert() { ssh_login krldave uk true -o CertificateFile="$W/$1-cert.pub"; }
check_not "sshd: the certificate's key alone is no login" login uk
check "sshd: a certificate signed by the user's CA logs in (through authkeys-cmd)" login_cert c_ok
check "sshd logged the certificate's key id and serial" \
	grep -q 'Accepted publickey for krldave .*ID id-c_ok (serial 42) CA ED25519' "$W/sshd.log"
check "sshd: a certificate for another listed principal (ops) logs in" login_cert c_ops
check_not "sshd: an expired certificate is refused" login_cert c_exp
check "... as expired" grep -q "Certificate invalid: expired" "$W/sshd.log"
check_not "sshd: a certificate for a principal not listed is refused" login_cert c_other
check "... for its principal" grep -q "Certificate does not contain an authorized principal" "$W/sshd.log"
check_not "sshd: a certificate signed by another CA is refused" login_cert c_ca2
check "... after sshd saw it" grep -q "Failed publickey for krldave .*ID id-c_ca2 " "$W/sshd.log"
n_rev=$(grep -c "revoked by file /run/krl/revoked.krl" "$W/sshd.log")
check_not "sshd: a certificate whose CA is in the KRL is refused" login_cert c_ca3
check "... sshd says the CA key is revoked" test "$(grep -c "revoked by file /run/krl/revoked.krl" "$W/sshd.log")" -gt "$n_rev"
: >/run/krl/revoked.krl
check "an empty RevokedKeys file (what tmpfiles.d creates): the key logs in" login g0
rm /run/krl/revoked.krl
check_not "a missing RevokedKeys file: sshd refuses every key (why it must always exist)" login g3

rm -r "$R/etc/node-agent/revoked-keys.d" # lifted by the next run

# --- the bound: KRL_ENTRIES_MAX (1,024) entries, explicit revocations last out
mkdir "$W/many"
for i in $(seq 1022); do ssh-keygen -q -t ed25519 -N '' -C "m$i" -f "$W/many/k$i" </dev/null; done
# krldave keeps its two grants (doc3: dropping them all would be a shrink
# the guard refuses, failing the run), so the document holds its maximum of
# 1,024 entries: 1,022 new explicit revocations, which with doc3's two
# (never lifted) fill the KRL's bound.
python3 - "$W/many" "$W/doc3.json" >"$W/doc-many.json" <<'PY'
import json, sys
print(json.dumps([{"user": "gardener", "type": "ssh-ed25519", "revoked": True,
                   "publicKey": open("%s/k%d.pub" % (sys.argv[1], i)).read().split()[1]} for i in range(1, 1023)]
                 + [e for e in json.load(open(sys.argv[2])) if e["user"] == "krldave"]))
PY
osc many g1 g3 -- "$W/doc-many.json"
check "1,022 new explicit revocations (with 2 earlier ones the bound) in one document: applied" apply many
check "the KRL holds exactly 1,024 keys" test "$("$MKKRL" --dump "$KRL" | wc -l)" -eq 1025
check_not "the dropped revocations went first (g0)" revoked g0
check "the new explicit ones are all there" all_revoked many/k1 many/k512 many/k1022 dx ca3
check "the eviction is logged" grep -q "More than 1024 revoked keys" "$W/cce.log"

finish
