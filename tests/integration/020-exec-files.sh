#!/bin/bash
# cloud-config-exec in a scratch root (--root, --no-systemd): apply, no-op
# re-apply (zero writes, proven by strace and by inode/mtime/ctime of every
# file), one changed file (exactly one write), dropped files (ours removed,
# foreign ones kept), planted symlinks in a path, bad OSCs (rejected, tree
# unchanged), check (writes nothing), status, exit codes.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
require_root
command -v strace >/dev/null || skip_all "strace not installed"

W=$(scratch)
exec_init "$W"
R=$W/root
ST=$R/var/lib/cloud-config-exec
python3 "$GEN_OSC" --files 20 --units 5 >"$W/v1.json"
python3 "$GEN_OSC" --files 20 --units 5 --version 2 --change 3 >"$W/v2.json"
python3 "$GEN_OSC" --files 20 --units 5 --version 2 --change 3 --drop 4,1 >"$W/v3.json"

# A file that exists before the first apply: the OSC overwrites it, but it
# is not ours, so dropping it from the OSC must not delete it.
mkdir -p "$R/etc/na-test/dir1"
echo "pre-existing" >"$R/etc/na-test/dir1/f1.conf"
echo "unrelated" >"$R/etc/na-test/unrelated"

# --- first apply
check "first apply succeeds" cce "$R" apply "$W/v1.json"
check "file content as in the OSC" grep -q "file 7 version 1" "$R/etc/na-test/dir2/f7.conf"
check "b64 file decoded" grep -q "file 1 version 1" "$R/etc/na-test/dir1/f1.conf"
check "mode from permissions (0644)" test "$(stat -c %a "$R/etc/na-test/dir1/f1.conf")" = 644
check "mode from permissions (0600)" test "$(stat -c %a "$R/etc/na-test/dir0/f0.conf")" = 600
check "parent dirs 0755" test "$(stat -c %a "$R/etc/na-test/dir3")" = 755
check "unit file written" test -s "$R/etc/systemd/system/na-test-u2.service"
check "result: success" grep -q '"success":[[:space:]]*true' "$ST/result.json"
check "last-applied record" grep -q "^# cloud-config-exec last-applied sha256=$(sha256sum <"$W/v1.json" | cut -d' ' -f1)" "$ST/last-applied.yaml"
check "pre-existing file not recorded as ours" bash -c "! grep -q 'dir1/f1.conf' '$ST/state.json'"
check "created file recorded as ours" grep -q 'dir4/f4.conf' "$ST/state.json"
check "state dir 0755" test "$(stat -c %a "$ST")" = 755
chmod 0777 "$ST"
cce "$R" apply "$W/v1.json" 2>/dev/null
check "a world-writable state dir is fixed to 0755" test "$(stat -c %a "$ST")" = 755
check "status says success" bash -c "'$CCE' --root '$R' --config '$W/config.json' status | grep -q 'result: success'"

# --- one run at a time: a second run waits for the lock on the state dir
flock "$ST" -c 'sleep 2' &
lockpid=$!
sleep 0.3
t0=$(date +%s%N)
cce "$R" apply "$W/v1.json" 2>"$W/lock.log"
rc=$?
t1=$(date +%s%N)
wait $lockpid
check "a concurrent run waits for the lock and succeeds" test $rc -eq 0 -a $(( (t1 - t0) / 1000000 )) -ge 1200
check "waiting is logged" grep -q "Waiting for another cloud-config-exec run" "$W/lock.log"

# --- no-op re-apply: zero writes
before=$(tree_state "$R"; stat -c '%n %i %y %z' "$ST"/*)
strace_cce "$W/noop.strace" "$R" apply "$W/v1.json" 2>"$W/noop.log"
check "re-apply succeeds" test $? -eq 0
after=$(tree_state "$R"; stat -c '%n %i %y %z' "$ST"/*)
check "re-apply: no file touched (inode, mtime, ctime, content)" test "$before" = "$after"
n=$(count_fs_writes "$W/noop.strace")
echo "# writes on the no-op re-apply: $n"
check "re-apply: zero write-opens/renames/unlinks/mkdirs (strace)" test "$n" -eq 0
check "re-apply logs 'nothing changed'" grep -q "nothing changed" "$W/noop.log"

# --- one changed file: exactly one OSC file written
before=$(tree_state "$R")
strace_cce "$W/one.strace" "$R" apply "$W/v2.json" 2>"$W/one.log"
check "apply v2 succeeds" test $? -eq 0
after=$(tree_state "$R")
changed=$(diff <(grep '|regular file|' <<<"$before") <(grep '|regular file|' <<<"$after") | grep -c '^>')
check "exactly one file changed on disk ($changed)" test "$changed" -eq 1
renames=$(grep -E 'rename' "$W/one.strace" | grep -v ' = -1 ' |
	grep -vcE '"(state\.json|last-applied\.yaml|result\.json|authkeys\.snap)"\)')
check "exactly one rename besides the executor's own records ($renames)" test "$renames" -eq 1
check "the changed file has the new content" grep -q "file 3 version 2" "$R/etc/na-test/dir3/f3.conf"
check "log names the written file" grep -q "FILE=\|File /etc/na-test/dir3/f3.conf written" "$W/one.log"
check "unit of the changed file is planned for restart" grep -q "restart:.*na-test-u3.service" "$W/one.log"

# --- drop files: ours removed, the pre-existing one stays
check "apply v3 succeeds" cce "$R" apply "$W/v3.json"
check "dropped file we created is removed" test ! -e "$R/etc/na-test/dir4/f4.conf"
check "dropped file we did not create stays" test -e "$R/etc/na-test/dir1/f1.conf"
check "unrelated file stays" test -e "$R/etc/na-test/unrelated"
check "removed file no longer owned" bash -c "! grep -q 'dir4/f4.conf' '$ST/state.json'"

# --- bad OSCs: rejected, nothing on the node changes
before=$(tree_hash "$R")
la_before=$(sha256sum <"$ST/last-applied.yaml")
for bad in "$TESTS_DIR"/../tests/fixtures/osc/bad/*.yaml; do
	cce "$R" apply "$bad" 2>"$W/bad.log"
	rc=$?
	check "rejected with exit 1: $(basename "$bad")" test $rc -eq 1
done
printf '{"spec": {"files": [{"path": "/var/lib/cloud-config-exec/state.json", "content": {"inline": {"data": "x"}}}]}}\n' >"$W/own.json"
printf '{"spec": {"files": [{"path": "/etc/systemd/system/x.service", "content": {"inline": {"data": "x"}}}]}}\n' >"$W/unitdir.json"
printf '{"spec": {"files": [' >"$W/truncated.json"
printf '{"spec": {"files": [{"path": "/etc/x", "content": {"inline": {"encoding": "b64", "data": "!!"}}}]}}\n' >"$W/b64.json"
for bad in own unitdir truncated b64; do
	cce "$R" apply "$W/$bad.json" 2>"$W/bad.log"
	check "rejected with exit 1: $bad" test $? -eq 1
done
check "bad OSCs: tree unchanged" test "$before" = "$(tree_hash "$R")"
check "bad OSCs: last-applied unchanged" test "$la_before" = "$(sha256sum <"$ST/last-applied.yaml")"
check "result records the failure" grep -q '"success":[[:space:]]*false' "$ST/result.json"
check "status exits 1 after a failure" bash -c "! '$CCE' --root '$R' --config '$W/config.json' status >/dev/null"

# --- check: reports, writes nothing (not even the state dir)
before=$(tree_state "$R"; stat -c '%n %i %y %z' "$ST"/*)
out=$(strace_cce "$W/check.strace" "$R" check "$W/v1.json" 2>/dev/null)
check "check succeeds" test $? -eq 0
check "check reports the file it would write" grep -q "write   /etc/na-test/dir4/f4.conf" <<<"$out"
check "check writes nothing" test "$(count_fs_writes "$W/check.strace")" -eq 0
check "check: tree unchanged" test "$before" = "$(tree_state "$R"; stat -c '%n %i %y %z' "$ST"/*)"

# --- a symlink planted in a path is never followed
V=$W/victim
mkdir -p "$V"
rm -rf "$R/etc/na-test/dir2"
ln -s "$V" "$R/etc/na-test/dir2"
cce "$R" apply "$W/v1.json" 2>"$W/link.log"
check "apply through a planted symlink fails" test $? -eq 1
check "nothing written into the symlink's target" test -z "$(ls -A "$V")"
check "the failure names the file" grep -q "dir2/f" "$W/link.log"
rm "$R/etc/na-test/dir2"
check "after removing the link the apply completes" cce "$R" apply "$W/v1.json"
check "the foreign file came back with OSC content, dropped one restored" test -e "$R/etc/na-test/dir4/f4.conf"

# --- usage errors
"$CCE" --bogus >/dev/null 2>&1
check "unknown option: exit 2" test $? -eq 2
"$CCE" --root "$R" --config "$W/config.json" apply >/dev/null 2>&1
check "apply without FILE: exit 2" test $? -eq 2
"$CCE" --root "$R" --config "$W/missing.json" status >/dev/null 2>&1
check "explicit missing config: exit 2" test $? -eq 2
check "--help" bash -c "'$CCE' --help | grep -q apply-desired"
check "--version" bash -c "'$CCE' --version | grep -q cloud-config-exec"
finish
