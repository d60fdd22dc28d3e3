#!/bin/bash
# No dead ends (issue 35): each state file the executor keeps, damaged, has
# an answer that a test shows, on a scratch root with the real programs:
#  - state.json: rebuilt from last-applied.yaml (the damaged one kept as
#    state.json.damaged), the apply goes on, and a file the next OSC drops
#    is still removed (the ownership record survives);
#  - result.json: status says it is unreadable and that the next run
#    writes it anew, which the next run does;
#  - the key snapshot: rewritten by the next run from the managed keys
#    (authkeys-cmd serves again);
#  - the KRL: never overwritten; the keys step fails with one line naming
#    the file and `cloud-config-exec revoke --replace`, which repairs it;
#    a KRL changed with ssh-keygen -k -u is treated the same (the
#    operator's revocation is never silently undone), and moved into
#    /etc/node-agent/revoked-keys.d it stays revoked after --replace;
#  - desired.json: the run fails into result.json (step "desired") with
#    the command that repairs it, and status never says "pending: nothing";
#  - the operator's revoked keys: merged by every run, lifted when their
#    file goes, a bad file refused with its name and line (nothing lifted).
# ssh-keygen -Q (OpenSSH's own KRL reader) judges every KRL.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
require_root
command -v ssh-keygen >/dev/null || skip_all "ssh-keygen not installed"

W=$(scratch)
exec_init "$W"
R=$W/root
ST=$R/var/lib/cloud-config-exec
KRL=$ST/revoked-keys.krl
mkdir -p "$R/etc" "$R/home/gardener/.ssh" "$R/var/lib/node-agent"
printf 'root:x:0:0:root:/root:/bin/sh\ngardener:x:1700:1700::/home/gardener:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\ngardener:x:1700:\n' >"$R/etc/group"
chown -R 1700:1700 "$R/home/gardener"
for k in g op hand; do ssh-keygen -q -t ed25519 -N '' -C "dmg-$k" -f "$W/$k" </dev/null; done
fp() { ssh-keygen -lf "$W/$1.pub" | awk '{print $2}'; }
revoked() { local o; o=$(ssh-keygen -Q -f "$KRL" "$W/$1.pub" 2>/dev/null); [[ $o == *": REVOKED" ]]; }
python3 "$GEN_OSC" --files 3 --keys "$W/g.pub" >"$W/v1.json"
python3 "$GEN_OSC" --files 3 --drop 2 --keys "$W/g.pub" >"$W/v2.json"
run() { cce "$R" "$@" >>"$W/cce.log" 2>&1; }
status() { cce "$R" status 2>/dev/null; }
akc() { "$B/authkeys-cmd" --root "$R" gardener 2>/dev/null; }
# and_then CMD... -- CMD...: both succeed (a step, then what it must give).
and_then() {
	local a=()
	while [ "$1" != -- ]; do a+=("$1"); shift; done
	shift
	"${a[@]}" && "$@"
}
serves() { akc | grep -q ssh-ed25519; }
status_ok() { status >/dev/null; }
has() { grep -q -- "$2" <<<"$1"; }
check "apply v1 (3 files, Gardener's key)" run apply "$W/v1.json"
check "  ... authkeys-cmd serves the key from the snapshot" serves

# --- state.json
F2=$(python3 -c 'import json,sys; print([f["path"] for f in json.load(open(sys.argv[1]))["spec"]["files"]][2])' "$W/v1.json")
check "the file v2 drops exists ($F2)" test -e "$R$F2"
printf '{"owned": [' >"$ST/state.json"
out=$(status)
check "state.json damaged: status says the next run rebuilds it" \
	has "$out" "^pending: .*state.json is damaged (not what the executor writes): the next run .* rebuilds it from last-applied.yaml"
check "state.json damaged: apply v2 goes on" run apply "$W/v2.json"
check "  ... the damaged file kept as state.json.damaged, a new state.json written" \
	sh -c 'test "$(cat "$1/state.json.damaged")" = "{\"owned\": [" && python3 -m json.tool "$1/state.json" >/dev/null' sh "$ST"
check "  ... said once, naming the file and what it was rebuilt from" \
	grep -q 'state.json is damaged (.*): moved to state.json.damaged and rebuilt from last-applied.yaml' "$W/cce.log"
check_not "  ... the file v2 dropped is removed (ownership rebuilt from the last applied OSC)" test -e "$R$F2"
check "  ... status: success" status_ok

# --- result.json
echo 'not json' >"$ST/result.json"
out=$(status)
check_not "result.json damaged: status fails" status_ok
check "  ... and says it is unreadable" has "$out" "^result: .*result.json unreadable"
check "  ... and that the next run writes it anew" has "$out" "^pending: .*result.json is written anew by the next run"
check "  ... the next run writes it: status succeeds" and_then run apply "$W/v2.json" -- status_ok

# --- the key snapshot
echo garbage >"$ST/authkeys.snap"
check_not "snapshot damaged: authkeys-cmd serves nothing from it" serves
check "  ... the next run (same OSC) writes it again: the key is served" and_then run apply "$W/v2.json" -- serves

# --- the operator's revoked keys
mkdir -p "$R/etc/node-agent/revoked-keys.d"
cp "$W/op.pub" "$R/etc/node-agent/revoked-keys.d/alice.pub"
check "an operator's revoked key (revoked-keys.d): merged by the next run" and_then run apply "$W/v2.json" -- revoked op
check "  ... recorded as an operator revocation" grep -q "^$(fp op) operator " "$ST/revocations"
printf 'ssh-ed25519 AAAA-not-base64 x\n' >"$R/etc/node-agent/revoked-keys.d/typo"
rm "$R/etc/node-agent/revoked-keys.d/alice.pub"
check_not "a bad operator file: the run fails" run apply "$W/v2.json"
check "  ... naming the file and the line" grep -q 'revoked-keys.d/typo: line 1' "$W/cce.log"
check "  ... and lifting none of the operator's revocations" revoked op
rm "$R/etc/node-agent/revoked-keys.d/typo"
run apply "$W/v2.json"
check_not "the file gone: the revocation is lifted by the next run" revoked op

# --- the KRL: changed by hand (ssh-keygen -k -u), then damaged
cp "$KRL" "$W/krl.before"
ssh-keygen -q -k -u -f "$KRL" "$W/hand.pub" 2>/dev/null
check "ssh-keygen -k -u revoked a key by hand" revoked hand
cp "$KRL" "$W/krl.hand"
check_not "KRL changed by hand: the run fails" run apply "$W/v2.json"
check "  ... the KRL is left as it is (the hand revocation stays in force)" cmp -s "$KRL" "$W/krl.hand"
check "  ... one line naming the file and the command" \
	grep -q 'revoked-keys.krl was changed outside cloud-config-exec .*run `cloud-config-exec revoke --replace`' "$W/cce.log"
out=$(status)
check "  ... status: FAILED in step keys" has "$out" "^result: FAILED in step keys"
check "  ... every run fails the same way until it is resolved" \
	has "$out" "^pending: the failed apply; every run fails the same way until the revoked-keys list is resolved"
check_not "  ... not 'tried again'" has "$out" "tried again"
cp "$W/hand.pub" "$R/etc/node-agent/revoked-keys.d/hand.pub"
check "the key moved to revoked-keys.d, cloud-config-exec revoke --replace" run revoke --replace
check "  ... the hand revocation is still in force" revoked hand
check "  ... now the operator's" grep -q "^$(fp hand) operator " "$ST/revocations"
check "  ... the next apply succeeds" run apply "$W/v2.json"
printf 'SSHKRL\n\0garbage' >"$KRL"
check_not "KRL damaged: the run fails, naming it" run apply "$W/v2.json"
check "  ... left as it is" test "$(head -c 6 "$KRL")" = SSHKRL
check "  ... cloud-config-exec revoke --replace writes it from the records and revoked-keys.d" \
	and_then run revoke --replace -- revoked hand
check "  ... the next apply succeeds" run apply "$W/v2.json"

# --- desired.json
desired_json "$W/v2.json" 7 >"$R/var/lib/node-agent/desired.json"
check "apply-desired of a good desired.json" run apply-desired
echo '{"version": 1, "checksum": "00"' >"$R/var/lib/node-agent/desired.json"
check_not "desired.json damaged: apply-desired fails" run apply-desired
check "  ... into result.json: step desired" grep -q '"failedStep":[[:space:]]*"desired"' "$ST/result.json"
check "  ... with the command that repairs it" grep -q "systemctl restart node-agent" "$ST/result.json"
out=$(status)
check_not "  ... status: not 'pending: nothing'" has "$out" "^pending: nothing$"
check "  ... status says what repairs it" \
	has "$out" "^pending: nothing can be applied until node-agent writes .*desired.json anew (systemctl restart node-agent)"
desired_json "$W/v2.json" 8 >"$R/var/lib/node-agent/desired.json"
check "node-agent's new desired.json: the next run succeeds, status too" and_then run apply-desired -- status_ok
[ "$_fail" -eq 0 ] || tail -25 "$W/cce.log" | sed "s/^/#   /"
finish
