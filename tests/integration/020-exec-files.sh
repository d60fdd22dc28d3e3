#!/bin/bash
# cloud-config-exec in a scratch root (--root, --no-systemd): apply, no-op
# re-apply (zero writes, proven by strace and by inode/mtime/ctime of every
# file), one changed file (exactly one write), dropped files (ours removed,
# foreign ones kept), planted symlinks in a path (a user's link, a link in a
# world-writable directory), bad OSCs (rejected, tree unchanged), check
# (writes nothing), status, exit codes; image files (content.imageRef)
# without containerd: the step "images" fails naming each image, the rest
# is applied, nothing is created or written over, check lists them, and a
# changed image reference that cannot be fetched restarts nothing.
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
"$CCE" --root "$R" --config "$W/config.json" status >"$W/status" 2>/dev/null
check "status: the last run in local time with its age, no epoch seconds" \
	grep -qE '^last run: finished [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} [A-Za-z0-9+-]+ \([0-9]+ (s|min) ago\)$' "$W/status"
check "status: a failed apply as FAILED with its step and the error" \
	sh -c "grep -q '^result: FAILED in step [a-z-]* for ' '$W/status' && grep -q '^error: .' '$W/status'"
check "status: a failed apply is not called unfinished, and its retry is pending" \
	sh -c "! grep -qi 'unfinished\|did not finish\|interrupted' '$W/status' && grep -q '^pending: the failed apply' '$W/status'"
# The package's tmpfiles.d creates the KRL empty (for sshd's RevokedKeys).
[ -e "$ST/revoked-keys.krl" ] && mv "$ST/revoked-keys.krl" "$W/krl.saved"
: >"$ST/revoked-keys.krl"
check "status: an empty KRL is 'none revoked', not damaged" \
	sh -c "'$CCE' --root '$R' --config '$W/config.json' status 2>/dev/null | grep -q '^revoked keys: none (empty KRL'"
rm -f "$ST/revoked-keys.krl"
[ -e "$W/krl.saved" ] && mv "$W/krl.saved" "$ST/revoked-keys.krl"

# --- check: reports, writes nothing (not even the state dir)
before=$(tree_state "$R"; stat -c '%n %i %y %z' "$ST"/*)
out=$(strace_cce "$W/check.strace" "$R" check "$W/v1.json" 2>/dev/null)
check "check succeeds" test $? -eq 0
check "check reports the file it would write" grep -q "write   /etc/na-test/dir4/f4.conf" <<<"$out"
check "check writes nothing" test "$(count_fs_writes "$W/check.strace")" -eq 0
check "check: tree unchanged" test "$before" = "$(tree_state "$R"; stat -c '%n %i %y %z' "$ST"/*)"

# --- a symlink planted in a path is never followed. (Only a link root alone
# can have made, root's own in a directory no one else may write, is
# followed, inside the root: 024.) Planted by a user: the link is the
# user's, or its directory is writable by others.
V=$W/victim
mkdir -p "$V"
rm -rf "$R/etc/na-test/dir2"
ln -s "$V" "$R/etc/na-test/dir2"
chown -h 1500:1500 "$R/etc/na-test/dir2"
cce "$R" apply "$W/v1.json" 2>"$W/link.log"
check "apply through a user's symlink fails" test $? -eq 1
check "nothing written into the symlink's target" test -z "$(ls -A "$V")"
check "nothing written at the target inside the root" test ! -e "$R$V"
check "the failure names the file" grep -q "dir2/f" "$W/link.log"
chown -h 0:0 "$R/etc/na-test/dir2"
chmod 1777 "$R/etc/na-test"
cce "$R" apply "$W/v1.json" 2>"$W/link.log"
check "apply through a symlink in a world-writable directory fails" test $? -eq 1
check "nothing written into the symlink's target" test -z "$(ls -A "$V")"
check "nothing written at the target inside the root" test ! -e "$R$V"
chmod 0755 "$R/etc/na-test"
rm "$R/etc/na-test/dir2"
check "after removing the link the apply completes" cce "$R" apply "$W/v1.json"
check "the foreign file came back with OSC content, dropped one restored" test -e "$R/etc/na-test/dir4/f4.conf"

# --- image files (content.imageRef) without containerd (027 has the real one)
# imgosc FILE REF: kubelet from image REF (absent on disk), gardener-node-agent
# from an image (present on disk), an inline file, and a unit whose filePaths
# name the kubelet image file. No containerd answers: the step "images" fails
# naming each image, everything else is applied, no image file is touched.
I=$W/img
mkdir -p "$I/root/opt/bin"
exec_init "$I"
echo "node-agent from the OS image" >"$I/root/opt/bin/gardener-node-agent"
chmod 0700 "$I/root/opt/bin/gardener-node-agent"
imgosc() {
	cat >"$1" <<-EOF
	apiVersion: extensions.gardener.cloud/v1alpha1
	kind: OperatingSystemConfig
	spec:
	  files:
	  - path: /opt/bin/kubelet
	    permissions: 493
	    content:
	      imageRef:
	        image: $2
	        filePathInImage: /kubelet
	  - path: /opt/bin/gardener-node-agent
	    permissions: 493
	    content:
	      imageRef:
	        image: europe-docker.pkg.dev/gardener-project/releases/gardener/node-agent:v1.110.0
	        filePathInImage: /gardener-node-agent
	  - path: /etc/na-img/inline.conf
	    content:
	      inline:
	        data: inline
	  units:
	  - name: na-img-kubelet.service
	    content: |
	      [Service]
	      ExecStart=/opt/bin/kubelet
	    filePaths:
	    - /opt/bin/kubelet
	EOF
}
imgosc "$I/i1.yaml" hyperkube:v1.31.1
imgosc "$I/i2.yaml" hyperkube:v1.31.2
IR=$I/root
NOCTD=(--containerd-address "$I/no-containerd.sock")
gna_before=$(stat -c '%i %a %s %y' "$IR/opt/bin/gardener-node-agent")
cce "$IR" "${NOCTD[@]}" apply "$I/i1.yaml" 2>"$I/i1.log"
check "containerd not running: the apply fails (exit 1)" test $? -eq 1
check "  ... in the step images" grep -q '"failedStep":[[:space:]]*"images"' "$IR/var/lib/cloud-config-exec/result.json"
check "  ... naming the image and the reason" grep -q 'hyperkube:v1.31.1 for /opt/bin/kubelet: ctr images ls failed (containerd not running?)' "$IR/var/lib/cloud-config-exec/result.json"
check "  ... but not gardener-node-agent's binary: superseded, never pulled" bash -c "! grep -q 'gardener-node-agent' '$IR/var/lib/cloud-config-exec/result.json' && grep -q \"Image file /opt/bin/gardener-node-agent .* not written: gardener-node-agent's binary, superseded\" '$I/i1.log'"
check "the inline file next to them is written" grep -qx inline "$IR/etc/na-img/inline.conf"
check "an absent image file is not created" test ! -e "$IR/opt/bin/kubelet"
check "a present image file is not written over (inode, mode, size, mtime)" \
	test "$gna_before" = "$(stat -c '%i %a %s %y' "$IR/opt/bin/gardener-node-agent")"
check "no temporary left next to the image files" test -z "$(ls -A "$IR/opt/bin" | grep -v '^gardener-node-agent$')"
check "the absent image file is recorded as ours (the images step creates it), the OS image's is not" \
	bash -c "grep -q /opt/bin/kubelet '$IR/var/lib/cloud-config-exec/state.json' && ! grep -q /opt/bin/gardener-node-agent '$IR/var/lib/cloud-config-exec/state.json'"
check "each image file is reported once at notice level" test "$(grep -c "comes from image" "$I/i1.log")" -eq 2
check "  ... naming path, image and path in image" grep -q "File '/opt/bin/kubelet' comes from image 'hyperkube:v1.31.1' (path '/kubelet'): copied out of the image through containerd" "$I/i1.log"
out=$("$CCE" --root "$IR" --config "$I/config.json" --no-systemd --log stderr check "$I/i2.yaml" 2>/dev/null)
check "check lists the image files" grep -q "^image   /opt/bin/kubelet: from image 'hyperkube:v1.31.2' (path '/kubelet')" <<<"$out"
check "check marks a changed image reference as changed" grep -q "^changed /opt/bin/kubelet\$" <<<"$out"
# The failed images step held the apply back (gardener-node-agent's
# reconciler.go writes no last-applied then): check compares with nothing
# applied, so the image file that did not change counts as new too
# (files_plan_compute's image rules: tests/unit/test-exec-files.c).
check "a failed images step writes no last-applied.yaml" test ! -e "$IR/var/lib/cloud-config-exec/last-applied.yaml"
check "  ... so check counts every image file as changed" grep -q '^changed /opt/bin/gardener-node-agent$' <<<"$out"
check "check never plans a write of an image file" bash -c "! grep -q '^write   /opt/bin/' <<<'$out'"
cce "$IR" "${NOCTD[@]}" apply "$I/i2.yaml" 2>"$I/i2.log"
check "a new image reference without containerd fails (exit 1)" test $? -eq 1
check_not "  ... and does not restart the unit onto the old file" grep -q "restart:.*na-img-kubelet.service" "$I/i2.log"
check "  ... still without creating the file" test ! -e "$IR/opt/bin/kubelet"
printf 'spec:\n  files:\n  - {path: /etc/na-img/inline.conf, content: {inline: {data: inline}}}\n' >"$I/i3.yaml"
cce "$IR" "${NOCTD[@]}" apply "$I/i3.yaml" 2>"$I/i3.log"
check "dropping the image files applies (exit 0)" test $? -eq 0
check "a dropped image file the OS image provided is not removed" test "$gna_before" = "$(stat -c '%i %a %s %y' "$IR/opt/bin/gardener-node-agent")"
printf 'spec:\n  files:\n  - {path: /etc/x, content: {secretRef: {name: s, dataKey: k}}}\n' >"$I/secret.yaml"
cce "$IR" apply "$I/secret.yaml" 2>"$I/secret.log"
check "a secretRef file without its bytes (apply FILE: no desired.json) fails the run (exit 1)" test $? -eq 1
check "  ... naming the file, the Secret and the key" grep -q "/etc/x (Secret kube-system/s, key k) not read by node-agent" "$I/secret.log"
check "  ... and does not write it" test ! -e "$IR/etc/x"

# --- issue 36: one plan for check and apply. Every OSC fixture applied to
# a fresh root and again, then the drift cases on the Gardener worker (an
# edited kubelet config, a chmod 666 unit, an edited drop-in): check's
# prediction is exactly what apply did (check_is_apply, tests/lib/exec.sh).
# Image files are there already with their record (an image's kubelet
# copied out before), so the images step needs no containerd here; 028
# deletes the kubelet under a real containerd.
seed_images() { # seed_images ROOT OSC: every image file there, recorded as copied out
	python3 - "$1" "$2" <<-'PY'
	import hashlib, json, os, sys, yaml
	root, osc = sys.argv[1], yaml.safe_load(open(sys.argv[2]))
	rec, spec = {}, osc.get("spec", {})
	files = spec.get("files", []) + (osc.get("status") or {}).get("extensionFiles", [])
	for f in files:
	    ref = f.get("content", {}).get("imageRef")
	    if not ref or f["path"] == "/opt/bin/gardener-node-agent":
	        continue
	    data = ("#!/bin/sh\necho %s\n" % ref["image"]).encode()
	    p = root + f["path"]
	    os.makedirs(os.path.dirname(p), exist_ok=True)
	    open(p, "wb").write(data)
	    os.chmod(p, f.get("permissions", 0o644))
	    rec[f["path"]] = {"image": ref["image"], "digest": "sha256:" + "0" * 64,
	                      "sha256": hashlib.sha256(data).hexdigest(), "identity": ""}
	os.makedirs(root + "/var/lib/cloud-config-exec", exist_ok=True)
	json.dump(rec, open(root + "/var/lib/cloud-config-exec/images.json", "w"))
	PY
}
P=$W/plan
for f in "$TESTS_DIR"/fixtures/osc/*.yaml "$TESTS_DIR"/fixtures/osc/*.json; do
	n=$(basename "$f")
	rm -rf "$P" && exec_init "$P"
	seed_images "$P/root" "$f"
	check_is_apply "$P/root" "$f" "$n, first apply"
	check_is_apply "$P/root" "$f" "$n, again"
	check "$n, again: nothing to write" bash -c "! grep -qE '^(write|remove|containerd write) ' '$CIA_CHECK'"
done
rm -rf "$P" && exec_init "$P"
G=$TESTS_DIR/fixtures/osc/gardener-worker.yaml
seed_images "$P/root" "$G"
cce "$P/root" apply "$G" 2>/dev/null
echo "maxPods: 7" >>"$P/root/var/lib/kubelet/config/kubelet"
check_is_apply "$P/root" "$G" "edited kubelet config"
check "  ... predicted: rewrite it, restart the kubelet" bash -c "grep -qx 'write   /var/lib/kubelet/config/kubelet' '$CIA_CHECK' &&
	grep -qx 'units: restart: kubelet.service; superseded: gardener-user.path gardener-user.service; unchanged: 5' '$CIA_CHECK'"
chmod 666 "$P/root/etc/systemd/system/kubelet.service"
check_is_apply "$P/root" "$G" "chmod 666 unit"
check "  ... predicted: its mode fixed, no restart" bash -c "grep -q '^unit    kubelet.service: mode (' '$CIA_CHECK' &&
	grep -qx 'units: superseded: gardener-user.path gardener-user.service; unchanged: 6' '$CIA_CHECK'"
check "  ... done: 0644 again" test "$(stat -c %a "$P/root/etc/systemd/system/kubelet.service")" = 644
echo "# edited" >>"$P/root/etc/systemd/system/kubelet.service.d/12-os-tuning.conf"
check_is_apply "$P/root" "$G" "edited drop-in"
check "  ... predicted: rewritten, the kubelet restarted (drift)" \
	grep -q '^unit    kubelet.service: write,restart,drift (files on disk differ from the OSC)' "$CIA_CHECK"
check "  ... done: the drop-in as the OSC has it" bash -c "! grep -q '# edited' '$P/root/etc/systemd/system/kubelet.service.d/12-os-tuning.conf'"
check_is_apply "$P/root" "$TESTS_DIR/fixtures/osc/gardener-worker-v2.yaml" "the next version (changes and drops)"

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
