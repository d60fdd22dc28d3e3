#!/bin/bash
# Disk faults under cloud-config-exec (the only writer of the node's files,
# authorized_keys and the key snapshot), in a scratch root:
#
#  1. every write step fails once: an apply of v2 over an applied v1 is run
#     once per write step (open for writing, write, chown, chmod, fsync,
#     rename, mkdir, ...; counted by tests/lib/faultfs.c, LD_PRELOAD) with
#     that step failing with ENOSPC, then again with EIO;
#  2. a full file system: a small tmpfs over the root's /etc, filled up;
#     then a full tmpfs under the executor's state directory (snapshot);
#  3. a read-only file system: a read-only bind mount over /etc.
#
# After each fault ("survived" = all of these held):
#  - every file is the old or the new version, never anything else, and no
#    temporary file is left; authorized_keys likewise;
#  - the key snapshot is the previous one (same bytes) or a complete new
#    one, and authkeys-cmd serves exactly the old or exactly the new keys;
#  - a failed run exits non-zero, says so on stderr, and its result record
#    says success=false for the new checksum (or, when writing the result
#    itself failed, is still the previous record); a run that exits 0 has
#    applied all of v2;
#  - the next run, with the fault gone, converges to exactly what a
#    fault-free apply produces.
# Mounts happen in a private mount namespace; nothing outside the scratch
# root is touched. Prints "disk-faults: <class> N cases, M survived".
if [ "$(id -u)" -eq 0 ] && [ -z "${NA_PRIVATE_MNT:-}" ]; then
	exec env NA_PRIVATE_MNT=1 unshare -m --propagation private -- bash "$0" "$@"
fi
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
require_root
SO=$B/tools/faultfs.so
[ -f "$SO" ] || skip_all "faultfs.so not built ($SO)"
[ -x "$CCE" ] || skip_all "cloud-config-exec not built"
command -v ssh-keygen >/dev/null || skip_all "ssh-keygen not installed"

W=$(scratch)
K=$TESTS_DIR/fixtures/keys
echo '{"ssh": {"createUser": false}}' >"$W/config.json"
cat "$K/gardener-current.pub" "$K/gardener-previous.pub" >"$W/keys1"
ssh-keygen -q -t ed25519 -N '' -C third@node-agent-test -f "$W/third"
cat "$K/gardener-current.pub" "$W/third.pub" >"$W/keys2"
python3 "$GEN_OSC" --files 4 --keys "$W/keys1" >"$W/v1.json"
python3 "$GEN_OSC" --files 4 --version 2 --drop 3 --keys "$W/keys2" >"$W/v2.json"
V2SUM=$(sha256sum <"$W/v2.json" | cut -d' ' -f1)

run_cce() { # ROOT OSC [env...]: prints nothing, returns the exit status; stderr in $W/err
	local r=$1 osc=$2
	shift 2
	env "$@" "$CCE" --root "$r" --config "$W/config.json" --no-systemd --log stderr apply "$osc" \
		>/dev/null 2>"$W/err"
}
akc() { "$B/authkeys-cmd" --root "$1" gardener 2>/dev/null | sort; }
ST=var/lib/cloud-config-exec
# content ROOT: path, type, mode, owner and content hash of everything but
# the executor's records that carry times (result, state, snapshot).
content() {
	python3 - "$1" "$ST" <<-'EOF'
	import hashlib, os, stat, sys
	root, st = sys.argv[1], sys.argv[2]
	skip = {"./%s/%s" % (st, n) for n in ("result.json", "state.json", "authkeys.snap", "revoked-keys.krl", "revocations")}
	out = []
	for d, dirs, files in os.walk(root):
	    dirs.sort()
	    for n in sorted(dirs + files):
	        full = os.path.join(d, n)
	        rel = "." + full[len(root):]
	        if rel in skip:
	            continue
	        s = os.lstat(full)
	        h = "-"
	        if stat.S_ISREG(s.st_mode):
	            h = hashlib.sha256(open(full, "rb").read()).hexdigest()[:16]
	        out.append("%s|%o|%o|%d:%d|%s" % (rel, stat.S_IFMT(s.st_mode), stat.S_IMODE(s.st_mode), s.st_uid, s.st_gid, h))
	print("\n".join(sorted(out)))
	EOF
}

# v1 applied: the base every case starts from.
BASE=$W/base
gardener_root "$BASE"
run_cce "$BASE" "$W/v1.json" || { fail "v1 applies"; cat "$W/err"; finish; exit 1; }
content "$BASE" >"$W/base.content"
BASE_SNAP=$(sha256sum <"$BASE/$ST/authkeys.snap" | cut -d' ' -f1)
BASE_RESULT=$(sha256sum <"$BASE/$ST/result.json" | cut -d' ' -f1)
akc "$BASE" >"$W/keys.old"
# v2 applied without faults: the reference every case must converge to.
REF=$W/ref
cp -a "$BASE" "$REF"
rm -f "$W/steps.log"
run_cce "$REF" "$W/v2.json" LD_PRELOAD="$SO" FAULTFS_LOG="$W/steps.log" || { fail "v2 applies"; cat "$W/err"; finish; exit 1; }
content "$REF" >"$W/ref.content"
akc "$REF" >"$W/keys.new"
STEPS=$(wc -l <"$W/steps.log")
check "the old and the new key sets differ (the test can tell them apart)" \
	bash -c "[ -s '$W/keys.old' ] && [ -s '$W/keys.new' ] && ! cmp -s '$W/keys.old' '$W/keys.new'"
check "v1 -> v2 has write steps to fail ($STEPS: $(awk '{print $2}' "$W/steps.log" | sort | uniq -c | awk '{printf "%s %s ", $1, $2}'))" \
	[ "$STEPS" -ge 20 ]

# allowed R: every path is as in base or as in ref (per path), no temporaries.
allowed() {
	local r=$1
	content "$r" >"$W/now.content"
	python3 - "$W/base.content" "$W/ref.content" "$W/now.content" <<-'EOF'
	import sys
	def load(p):
	    d = {}
	    for line in open(p):
	        path, rest = line.rstrip("\n").split("|", 1)
	        d[path] = rest
	    return d
	base, ref, now = (load(p) for p in sys.argv[1:4])
	bad = []
	for p in set(base) | set(ref) | set(now):
	    if "/.#" in p:
	        bad.append("temporary left: " + p)
	    elif now.get(p) not in (base.get(p), ref.get(p)):
	        bad.append("%s: %s (old %s, new %s)" % (p, now.get(p), base.get(p), ref.get(p)))
	for b in bad[:5]:
	    print("   ", b)
	sys.exit(1 if bad else 0)
	EOF
}

# survived NAME ROOT RC: the assertions above; prints why not.
survived() {
	local name=$1 r=$2 rc=$3 why=()
	if [ "$rc" -ne 0 ] && ! grep -qiE 'fail|error|cannot|could not|refus' "$W/err"; then
		why+=("failed (rc $rc) without saying so on stderr")
	fi
	allowed "$r" >"$W/why" || why+=("a file is neither old nor new: $(head -3 "$W/why" | tr '\n' ' ')")
	akc "$r" >"$W/keys.now"
	if ! cmp -s "$W/keys.now" "$W/keys.old" && ! cmp -s "$W/keys.now" "$W/keys.new"; then
		why+=("authkeys-cmd serves neither the old nor the new keys: $(wc -l <"$W/keys.now") lines")
	fi
	local snap
	snap=$(sha256sum <"$r/$ST/authkeys.snap" | cut -d' ' -f1)
	if [ "$snap" != "$BASE_SNAP" ] && ! cmp -s "$W/keys.now" "$W/keys.new"; then
		why+=("the snapshot changed but does not serve the new keys")
	fi
	if [ "$rc" -ne 0 ] && diff -q "$W/ref.content" <(content "$r") >/dev/null && cmp -s "$W/keys.now" "$W/keys.new"; then
		: # failed after everything was in place (the last directory fsync): either record is true
	elif [ "$rc" -ne 0 ]; then
		local res
		res=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["checksum"], d["success"], d.get("failedStep"))' \
			"$r/$ST/result.json" 2>&1)
		if [ "$res" != "$V2SUM False ${res##* }" ] || [ "${res##* }" = None ]; then
			[ "$(sha256sum <"$r/$ST/result.json" | cut -d' ' -f1)" = "$BASE_RESULT" ] ||
				why+=("failed (rc $rc) but the result record says: $res")
		fi

	elif ! diff -q "$W/ref.content" <(content "$r") >/dev/null || ! cmp -s "$W/keys.now" "$W/keys.new"; then
		why+=("exit 0 although v2 is not fully applied")
	fi
	# The next run, without the fault, converges.
	run_cce "$r" "$W/v2.json"
	local rc2=$?
	[ "$rc2" -eq 0 ] || why+=("the next run failed (rc $rc2): $(head -c 300 "$W/err")")
	diff -q "$W/ref.content" <(content "$r") >/dev/null || why+=("the next run did not converge to v2")
	akc "$r" >"$W/keys.now"
	cmp -s "$W/keys.now" "$W/keys.new" || why+=("after the next run authkeys-cmd does not serve the new keys")
	if [ "${#why[@]}" -eq 0 ]; then
		return 0
	fi
	fail "$name"
	printf '    %s\n' "${why[@]}"
	return 1
}

# --- 1. each write step fails once
for err in ENOSPC EIO; do
	n=0 good=0 failed_runs=0
	for ((step = 1; step <= STEPS; step++)); do
		R=$W/case
		rm -rf "$R"
		cp -a "$BASE" "$R"
		run_cce "$R" "$W/v2.json" LD_PRELOAD="$SO" FAULTFS_FAIL=$step FAULTFS_ERRNO=$err
		rc=$?
		[ "$rc" -ne 0 ] && failed_runs=$((failed_runs + 1))
		n=$((n + 1))
		what=$(sed -n "${step}p" "$W/steps.log" | cut -d' ' -f2-3)
		survived "$err at write step $step ($what), rc $rc" "$R" "$rc" && good=$((good + 1))
	done
	check "$err at each of the $n write steps: all survived ($good); $failed_runs runs reported the failure" [ "$good" -eq "$n" ]
	echo "disk-faults: $err-at-step $n cases, $good survived"
done

# --- 2. a full file system
full_case() { # NAME DIR-IN-ROOT SIZE
	local name=$1 sub=$2 size=$3 R=$W/full
	rm -rf "$R"
	cp -a "$BASE" "$R"
	# The tmpfs gets a copy of what was there, then a filler takes the rest.
	cp -a "$R/$sub" "$W/saved"
	mount -t tmpfs -o "size=$size,mode=0755" tmpfs "$R/$sub" || return 2
	cp -a "$W/saved/." "$R/$sub/"
	rm -rf "$W/saved"
	dd if=/dev/zero of="$R/$sub/.filler" bs=4k 2>/dev/null
	sync
	run_cce "$R" "$W/v2.json"
	local rc=$?
	grep -q 'No space left on device' "$W/err" || fail "$name: stderr names ENOSPC: $(head -c 300 "$W/err")"
	rm -f "$R/$sub/.filler"
	# The filler is gone: "space returns" is the convergence check's run.
	local ok=0
	if [ "$rc" -eq 0 ]; then
		fail "$name: the apply reported success on a full file system"
	elif survived "$name (rc $rc)" "$R" "$rc"; then
		ok=1
		ok "$name: failed (rc $rc), old state intact, converged once space returned"
	fi
	umount "$R/$sub"
	return $((1 - ok))
}
n=0 good=0
full_case "ENOSPC: full /etc (the OSC's files)" etc 512k && good=$((good + 1)); n=$((n + 1))
full_case "ENOSPC: full state directory (result, key snapshot)" "$ST" 64k && good=$((good + 1)); n=$((n + 1))
full_case "ENOSPC: full home (authorized_keys)" home 64k && good=$((good + 1)); n=$((n + 1))
echo "disk-faults: full-fs $n cases, $good survived"

# --- 3. a read-only file system
n=0 good=0
for sub in etc "$ST" home; do
	R=$W/ro
	rm -rf "$R"
	cp -a "$BASE" "$R"
	mount --bind "$R/$sub" "$R/$sub" && mount -o remount,bind,ro "$R/$sub" || { fail "read-only bind mount"; continue; }
	run_cce "$R" "$W/v2.json"
	rc=$?
	umount "$R/$sub"
	n=$((n + 1))
	if [ "$rc" -eq 0 ]; then
		fail "EROFS on /$sub: the apply reported success"
	elif survived "EROFS on /$sub (rc $rc)" "$R" "$rc"; then
		good=$((good + 1))
		ok "EROFS on /$sub: failed (rc $rc), old state intact, converged once writable"
	fi
done
echo "disk-faults: read-only $n cases, $good survived"

finish
