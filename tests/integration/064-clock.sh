#!/bin/bash
# The clock around a key's expiry. The system clock is never touched (other
# tests share it): cloud-config-exec is dynamically linked, so libfaketime
# (faketime(1), scripts/install-deps) moves its clock; authkeys-cmd is
# static-pie, which libfaketime cannot reach, so it runs on the real clock
# with keys that expire a few seconds ahead (its decision at exactly
# expiry-1/expiry/expiry+1 is covered by tests/unit/test-authkeys-cmd.c on
# the pure function). Keys in one key document: A expires in 10 minutes, B
# never, C a few seconds from now. Cases ("survived" = the assertion held):
#  - real clock: C is printed before its expiry and not after, without any
#    executor run (authkeys-cmd's own check);
#  - the executor's clock at A's expiry - 1 s keeps A, at + 1 s drops it;
#  - a jump forward by an hour: the executor drops A (and C) from
#    authorized_keys and the snapshot, B stays;
#  - the jump back to the real time: A, still valid by the document, is
#    back in authorized_keys and served again (expiry is a function of the
#    clock; a wrong-forward clock locks a key out early, never in late);
#  - a jump backward by an hour: C, expired in real time, looks valid to the
#    executor and is written again, but with its expiry-time in the past
#    (sshd refuses it) and authkeys-cmd on the real clock never prints it.
# Prints "clock: N cases, M survived".
# Sanitizer builds run the real-clock cases only: libfaketime and ASan's
# allocator deadlock (ASan's malloc asks for the time, libfaketime's
# clock_gettime initialises itself with dlsym, whose error path mallocs:
# the executor hung for good in one run here).
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
require_root
command -v faketime >/dev/null || skip_all "faketime not installed (scripts/install-deps)"
command -v ssh-keygen >/dev/null || skip_all "ssh-keygen not installed"

W=$(scratch)
R=$W/root
gardener_root "$R"
echo '{"ssh": {"createUser": false}}' >"$W/config.json"
for k in a b c; do ssh-keygen -q -t ed25519 -N '' -C "key-$k" -f "$W/key-$k"; done
blob() { cut -d' ' -f2 "$W/key-$1.pub"; }
T=$(date +%s)
UA=$((T + 600))
UC=$((T + 6))
doc=$(printf '[{"user":"gardener","type":"ssh-ed25519","publicKey":"%s","comment":"key-a","until":%s},{"user":"gardener","type":"ssh-ed25519","publicKey":"%s","comment":"key-b"},{"user":"gardener","type":"ssh-ed25519","publicKey":"%s","comment":"key-c","until":%s}]' \
	"$(blob a)" "$UA" "$(blob b)" "$(blob c)" "$UC")
printf 'spec:\n  files:\n  - path: /var/lib/node-agent/authorized-keys.json\n    permissions: 420\n    content:\n      inline:\n        encoding: b64\n        data: "%s"\n' \
	"$(printf '%s' "$doc" | base64 -w0)" >"$W/osc.yaml"
AK=$R/home/gardener/.ssh/authorized_keys
served() { "$B/authkeys-cmd" --root "$R" gardener 2>/dev/null | grep -o 'key-[abc]' | sort | tr '\n' ' '; }
in_ak() { grep -o 'key-[abc]' "$AK" | sort | tr '\n' ' '; }
# keys_at SPEC: the executor's timer run with its clock at SPEC (faketime -f).
keys_at() { faketime -f "$1" "$CCE" --root "$R" --config "$W/config.json" --no-systemd --log stderr keys 2>>"$W/exec.log"; }
at() { date -u -d "@$1" '+@%Y-%m-%d %H:%M:%S'; }

n=0 good=0
# case_ DESC CMD...: a check, counted (by the failure count: check itself
# always returns 0).
case_() {
	local f=$_fail
	n=$((n + 1))
	check "$@"
	[ "$_fail" -eq "$f" ] && good=$((good + 1))
}

cce "$R" apply "$W/osc.yaml" 2>"$W/apply.log" || { fail "apply"; cat "$W/apply.log"; finish; exit 1; }
case_ "real clock, before C's expiry: A, B, C served" [ "$(served)" = "key-a key-b key-c " ]
check "authorized_keys carries sshd's expiry-time for A and C" [ "$(grep -c 'expiry-time="' "$AK")" -eq 2 ]
while (($(date +%s) < UC + 1)); do sleep 0.5; done
case_ "real clock, after C's expiry: C no longer served, with no executor run" [ "$(served)" = "key-a key-b " ]

if sanitized "$CCE"; then
	echo "# sanitizer build: the executor's clock cases need libfaketime, which deadlocks with ASan; make check runs them"
	echo "clock: $n cases, $good survived"
	finish
	exit
fi

keys_at "$(at $((UA - 1)))"
case_ "executor at A's expiry - 1 s: A kept in authorized_keys ($(in_ak))" bash -c "grep -q key-a '$AK'"
keys_at "$(at $((UA + 1)))"
case_ "executor at A's expiry + 1 s: A dropped from authorized_keys ($(in_ak))" bash -c "! grep -q key-a '$AK'"

keys_at "+1h"
case_ "jump forward 1 h: authorized_keys holds B only ($(in_ak))" [ "$(in_ak)" = "key-b " ]
case_ "jump forward 1 h: the snapshot serves B only ($(served))" [ "$(served)" = "key-b " ]

keys_at "+0"
case_ "jump back to the real time: A back in authorized_keys ($(in_ak))" [ "$(in_ak)" = "key-a key-b " ]
case_ "jump back to the real time: A served again, C not ($(served))" [ "$(served)" = "key-a key-b " ]

keys_at "-1h"
cline=$(grep 'key-c' "$AK")
cexp=$(grep -o 'expiry-time="[0-9]*Z"' <<<"$cline" | grep -o '[0-9]\{14\}')
case_ "jump backward 1 h: C written again, but with its expiry-time in the past ($cexp)" \
	bash -c "[ -n '$cexp' ] && [ \$(date -u -d '${cexp:0:8} ${cexp:8:2}:${cexp:10:2}:${cexp:12:2}' +%s) -le $UC ]"
case_ "jump backward 1 h: authkeys-cmd (real clock) never prints C ($(served))" bash -c "! '$B/authkeys-cmd' --root '$R' gardener 2>/dev/null | grep -q key-c"
keys_at "+0"
case_ "and back: C gone from authorized_keys again ($(in_ak))" [ "$(in_ak)" = "key-a key-b " ]
echo "clock: $n cases, $good survived"
finish
