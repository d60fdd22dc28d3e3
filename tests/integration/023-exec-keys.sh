#!/bin/bash
# cloud-config-exec and SSH keys in a scratch root: the login user created
# like Gardener (useradd -mU through --prefix: home, private group) with its
# sudoers entry; Gardener's key file (current + previous) reconciled into
# authorized_keys next to the user's own keys; exclusive mode; the shrink
# guard (an empty key set is refused unless the desired state says
# sshAccess=false); the expiring-key document (expiry-time="...Z", expired
# keys dropped, the `keys` purge), keys of other users only in the snapshot,
# never root; authkeys-cmd answering from the snapshot.
# Runs in a private mount namespace with scratch copies of the host's
# /etc/passwd, group, shadow and gshadow bind-mounted over them, and checks
# that those stay untouched: useradd must only ever see the scratch root.
if [ "$(id -u)" -eq 0 ] && [ -z "${NA_PRIVATE_ETC:-}" ]; then
	exec env NA_PRIVATE_ETC=1 unshare -m --propagation private -- bash "$0" "$@"
fi
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
require_root
[ -x /usr/sbin/useradd ] || skip_all "useradd not installed"
command -v ssh-keygen >/dev/null || skip_all "ssh-keygen not installed"

W=$(scratch)
mkdir -p "$W/hostetc"
for f in passwd group shadow gshadow; do
	cp -p "/etc/$f" "$W/hostetc/$f"
	mount --bind "$W/hostetc/$f" "/etc/$f"
done
host_sum=$(cat "$W"/hostetc/* | sha256sum)

exec_init "$W"
R=$W/root
ST=$R/var/lib/cloud-config-exec
K=$TESTS_DIR/fixtures/keys
mkdir -p "$R/etc" "$R/home/alice"
printf 'root:x:0:0:root:/root:/bin/sh\ntoor:x:0:0:root alias:/root:/bin/sh\nalice:x:1600:1600::/home/alice:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\nalice:x:1600:\n' >"$R/etc/group"
printf 'root:*:19000:0:99999:7:::\nalice:*:19000:0:99999:7:::\n' >"$R/etc/shadow"
printf 'root:*::\nalice:!::\n' >"$R/etc/gshadow"
chmod 0640 "$R/etc/shadow" "$R/etc/gshadow"
chown 1600:1600 "$R/home/alice"

cat "$K/gardener-current.pub" "$K/gardener-previous.pub" >"$W/keys1"
: >"$W/empty"
CUR=$(cut -d' ' -f2 "$K/gardener-current.pub")
PREV=$(cut -d' ' -f2 "$K/gardener-previous.pub")
python3 "$GEN_OSC" --files 2 --keys "$W/keys1" >"$W/v1.json"
python3 "$GEN_OSC" --files 2 --keys "$W/empty" >"$W/empty.json"
AK=$R/home/gardener/.ssh/authorized_keys
akc() { "$B/authkeys-cmd" --root "$R" "$@" 2>/dev/null; }

# --- the user, sudoers, keys
# the entry an earlier version wrote under its own name (upgrade)
mkdir -p "$R/etc/sudoers.d"
printf 'gardener ALL=(ALL) NOPASSWD:ALL\n' >"$R/etc/sudoers.d/99-gardener"
chmod 0440 "$R/etc/sudoers.d/99-gardener"
check "apply with Gardener's key file" cce "$R" apply "$W/v1.json"
check_not "the earlier name 99-gardener removed (it held our entry)" test -e "$R/etc/sudoers.d/99-gardener"
check "user created in the scratch root" grep -q '^gardener:x:' "$R/etc/passwd"
check "private group created" grep -q '^gardener:x:' "$R/etc/group"
check "home created and owned by the user" test "$(stat -c %U "$R/home/gardener" 2>/dev/null)" != root -a \
	"$(stat -c %u "$R/home/gardener")" = "$(grep '^gardener:' "$R/etc/passwd" | cut -d: -f3)"
check "host's passwd/group/shadow untouched" test "$host_sum" = "$(cat "$W"/hostetc/* | sha256sum)"
check "sudoers entry 0440" test "$(stat -c %a "$R/etc/sudoers.d/99-gardener-user")" = 440
check "sudoers content" grep -qx 'gardener ALL=(ALL) NOPASSWD:ALL' "$R/etc/sudoers.d/99-gardener-user"
check "current key in authorized_keys" grep -q "$CUR" "$AK"
check "previous key in authorized_keys" grep -q "$PREV" "$AK"
check "snapshot root-owned 0644" test "$(stat -c '%a %u' "$ST/authkeys.snap")" = "644 0"
check "authkeys-cmd serves both keys from the snapshot" test "$(akc gardener | grep -c ssh-ed25519)" -eq 2
check "no-op re-apply writes nothing" bash -c "
	ASAN_OPTIONS=detect_leaks=0 strace -f -qq -e trace=openat,rename,renameat,renameat2,unlinkat,mkdirat -o '$W/k.strace' \
		'$CCE' --root '$R' --config '$W/config.json' --no-systemd --log journal apply '$W/v1.json' &&
	! grep -E 'O_WRONLY|O_RDWR|O_CREAT|rename|unlink|mkdir' '$W/k.strace' | grep -vq ' = -1 '"

# --- the user's own key survives; exclusive mode reproduces Gardener's overwrite
echo "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGhW6nRj4zTgIvQ+OvMsGXhP5cp3q6aBt1cP3wS0bW6Q user-own" >>"$AK"
cce "$R" apply "$W/v1.json" 2>/dev/null
check "user's own key kept" grep -q user-own "$AK"
echo '{"ssh": {"exclusive": true}}' >"$W/config.json"
cce "$R" apply "$W/v1.json" 2>/dev/null
check "exclusive: user's own key removed" bash -c "! grep -q user-own '$AK'"
check "exclusive: managed keys still there" test "$(grep -c ssh-ed25519 "$AK")" -eq 2
echo '{}' >"$W/config.json"

# --- shrink guard
cce "$R" apply "$W/empty.json" 2>"$W/empty.log"
check "empty key set: apply still succeeds" test $? -eq 0
check "empty key set refused, logged" grep -q "Refusing the new key set of gardener" "$W/empty.log"
check "empty key set: keys kept in authorized_keys" grep -q "$CUR" "$AK"
check "empty key set: keys kept in the snapshot" test "$(akc gardener | grep -c ssh-ed25519)" -eq 2
mkdir -p "$R/var/lib/node-agent"
desired() { # desired OSC-FILE SSHACCESS(true|false) [RESTART-ID UNIT]
	if [ $# -gt 3 ]; then
		desired_json "$1" 7 '{"sshAccess": '"$2"', "restart": {"id": "'"$3"'", "units": ["'"$4"'"]}}'
	else
		desired_json "$1" 7 '{"sshAccess": '"$2"'}'
	fi
}
desired "$W/empty.json" false >"$R/var/lib/node-agent/desired.json"
check "apply-desired with sshAccess=false" cce "$R" apply-desired
check "SSH disabled: managed keys removed" bash -c "! grep -q '$CUR' '$AK'"
check "SSH disabled: snapshot empty for gardener" test -z "$(akc gardener)"
check "result records generation 7" grep -q '"generation":[[:space:]]*7' "$ST/result.json"
desired "$W/empty.json" true | sed 's/"generation": 7/"generation": 8/; s/"checksum": "./"checksum": "0/' \
	>"$R/var/lib/node-agent/desired.json"
cce "$R" apply-desired 2>"$W/badsum.log"
check "desired state with a wrong checksum is refused" test $? -eq 1
check "checksum refusal logged" grep -qi "checksum" "$W/badsum.log"

# --- a restart request is executed once and reported by its id
desired "$W/empty.json" false restart-1 na-test-u0.service >"$R/var/lib/node-agent/desired.json"
check "apply-desired with a restart request" cce "$R" apply-desired
check "result names the executed restart request" grep -q '"restartId":[[:space:]]*"restart-1"' "$ST/result.json"
before=$(stat -c '%i %y' "$ST/result.json")
cce "$R" apply-desired 2>"$W/restart2.log"
check "same request again: not re-executed, result.json not rewritten" test "$before" = "$(stat -c '%i %y' "$ST/result.json")"
rm "$R/var/lib/node-agent/desired.json"
check "apply-desired without a desired state exits 0" cce "$R" apply-desired

# --- the expiring-key document: in the OSC at ssh.keyDocumentPath
cce "$R" apply "$W/v1.json" 2>/dev/null
ssh-keygen -q -t ed25519 -N '' -C soon -f "$W/soon" </dev/null
ssh-keygen -q -t ed25519 -N '' -C later -f "$W/later" </dev/null
ssh-keygen -q -t ed25519 -N '' -C old -f "$W/old" </dev/null
ssh-keygen -q -t ed25519 -N '' -C alice -f "$W/alice" </dev/null
now=$(date +%s)
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
blob() { cut -d' ' -f2 "$1.pub"; }
cat >"$W/doc.json" <<EOF2
[{"user": "gardener", "type": "ssh-ed25519", "publicKey": "$(blob "$W/soon")", "comment": "soon", "until": "$(iso $((now + 4)))"},
 {"user": "gardener", "type": "ssh-ed25519", "publicKey": "$(blob "$W/later")", "comment": "later", "until": "$(iso $((now + 86400)))"},
 {"user": "gardener", "type": "ssh-ed25519", "publicKey": "$(blob "$W/old")", "comment": "old", "until": "$(iso $((now - 60)))"},
 {"user": "alice", "type": "ssh-ed25519", "publicKey": "$(blob "$W/alice")", "comment": "alice"},
 {"user": "bob", "type": "ssh-ed25519", "publicKey": "$(blob "$W/alice")", "comment": "nobody"},
 {"user": "root", "type": "ssh-ed25519", "publicKey": "$(blob "$W/alice")", "comment": "root"},
 {"user": "toor", "type": "ssh-ed25519", "publicKey": "$(blob "$W/alice")", "comment": "toor"}]
EOF2
python3 - "$W/v1.json" "$W/doc.json" >"$W/doc-osc.json" <<'PY'
import base64, json, sys
osc = json.load(open(sys.argv[1]))
osc["spec"]["files"].append({"path": "/var/lib/node-agent/authorized-keys.json", "permissions": 0o600,
    "content": {"inline": {"encoding": "b64", "data": base64.b64encode(open(sys.argv[2], "rb").read()).decode()}}})
print(json.dumps(osc))
PY
check "apply with a key document" cce "$R" apply "$W/doc-osc.json"
check "key with expiry written with expiry-time=\"...Z\"" grep -q "^expiry-time=\"$(date -u -d "@$((now + 86400))" +%Y%m%d%H%M%S)Z\" ssh-ed25519 $(blob "$W/later")" "$AK"
check "expired key not written" bash -c "! grep -q '$(blob "$W/old")' '$AK'"
check "Gardener's keys still there" grep -q "$CUR" "$AK"
check "alice's key only in the snapshot" test "$(akc alice | grep -c "$(blob "$W/alice")")" -eq 1
check "alice's home untouched" test -z "$(ls -A "$R/home/alice")"
check "no key served for a user that does not exist" test -z "$(akc bob)"
check "root's keys not even in the snapshot (authkeys-cmd --allow-root finds none)" test -z "$(akc --allow-root root)"
check "nor those of a uid-0 alias (toor)" test -z "$(akc --allow-root toor)"
check "soon-expiring key served now" test "$(akc gardener | grep -c "$(blob "$W/soon")")" -eq 1
sleep 5
cce "$R" keys 2>"$W/purge.log"
check "keys verb succeeds" test $? -eq 0
check "purge: expired key dropped from authorized_keys" bash -c "! grep -q '$(blob "$W/soon")' '$AK'"
check "purge: logged as expired" grep -q "expired, dropped" "$W/purge.log"
check "purge: still-valid keys kept" grep -q "$(blob "$W/later")" "$AK"
check "purge: snapshot no longer has it" test "$(akc gardener | grep -c "$(blob "$W/soon")")" -eq 0
check "purge is not a refused shrink" bash -c "! grep -q Refusing '$W/purge.log'"

# --- a malformed key document keeps the last good keys
printf '[{"user": "gardener", "type": "ssh-ed25519", "publicKey": "AAAA-broken"}]' >"$W/bad-doc.json"
python3 - "$W/v1.json" "$W/bad-doc.json" >"$W/bad-doc-osc.json" <<'PY'
import base64, json, sys
osc = json.load(open(sys.argv[1]))
osc["spec"]["files"].append({"path": "/var/lib/node-agent/authorized-keys.json", "permissions": 0o600,
    "content": {"inline": {"encoding": "b64", "data": base64.b64encode(open(sys.argv[2], "rb").read()).decode()}}})
print(json.dumps(osc))
PY
cce "$R" apply "$W/bad-doc-osc.json" 2>"$W/bad-doc.log"
check "malformed key document: the run fails (exit 1)" test $? -eq 1
check "malformed key document: rejected and logged" grep -q "Key document .* rejected" "$W/bad-doc.log"
check "malformed key document: last good keys kept" grep -q "$(blob "$W/later")" "$AK"
check "malformed key document: result.json says success false, failedStep keys, user and source" python3 -c "
import json, sys; r = json.load(open('$ST/result.json'))
sys.exit(not (r['success'] is False and r['failedStep'] == 'keys' and
    'keys of gardener: key document /var/lib/node-agent/authorized-keys.json rejected' in r['error']))"
check "malformed key document: the OSC's files were still written" test -s "$R/var/lib/node-agent/authorized-keys.json"
# A malformed line in Gardener's key file: the same.
{ cat "$K/gardener-current.pub"; echo "ssh-ed25519 AAAA-broken previous"; } >"$W/bad-keys"
python3 "$GEN_OSC" --files 2 --keys "$W/bad-keys" >"$W/bad-keys.json"
cce "$R" apply "$W/bad-keys.json" 2>"$W/bad-keys.log"
check "malformed Gardener key file: the run fails (exit 1)" test $? -eq 1
check "malformed Gardener key file: result names user, source and reason" python3 -c "
import json, sys; r = json.load(open('$ST/result.json'))
sys.exit(not (r['success'] is False and r['failedStep'] == 'keys' and
    'keys of gardener: key source /var/lib/gardener-user-authorized-keys rejected: ' in r['error']))"
check "malformed Gardener key file: last good keys kept" grep -q "$(blob "$W/later")" "$AK"
check "host's passwd/group/shadow still untouched" test "$host_sum" = "$(cat "$W"/hostetc/* | sha256sum)"
finish
