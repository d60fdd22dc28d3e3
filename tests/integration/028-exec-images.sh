#!/bin/bash
# Image files (content.imageRef) through a real containerd and a real
# registry, all Debian packages, on loopback in a private network namespace:
# containerd run by hand (own root, state and socket below a scratch dir,
# never the host's), docker-registry plain HTTP and with TLS (a CA given in
# hosts.toml), images built here with umoci holding stand-in binaries and
# pushed with ctr. The executor pulls through its puller with the hosts.toml
# the OSC's criConfig wrote (a mirror for an upstream that does not
# resolve), copies the file out with its digests checked, and:
# first pull; same image again (0 writes, no containerd); new tag (binary
# replaced, unit restarted); registry down (step "images" fails naming the
# image, old binary kept, SSH keys and other files still applied); a
# missing image holds back every unit change and file removal as
# gardener-node-agent does, until the image is there; content
# not matching its digest; containerd not running; a path in the image
# that is a symlink, a directory, missing; an OSC path in a user-writable
# directory; TLS registry with its CA in hosts.toml; the image file dropped
# from the OSC: removed (it is ours), its record gone. Issue 21: a
# single-manifest image whose config says linux/s390x is refused on this
# node naming both platforms (old binary kept); a decompression bomb (a
# file of BOMB_MB MiB of zeros, ~1/1000 of it compressed) is copied out with
# the executor's peak RSS bounded (streamed: pipe buffer, inflate window,
# tar header), the figure printed.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
source "$TESTS_DIR/lib/kube.sh"
require_root
for c in containerd ctr docker-registry umoci openssl; do
	command -v $c >/dev/null || skip_all "$c not installed"
done
kube_netns "$@"

W=$(scratch)
exec_init "$W"
R=$W/root
ST=$R/var/lib/cloud-config-exec
gardener_root "$R"
K=$TESTS_DIR/fixtures/keys
D=$W/ctd
mkdir -p "$D"
SOCK=$D/sock
CTR=(ctr --address "$SOCK")
cci() { cce "$R" --containerd-address "$SOCK" "$@"; }

# --- the registries: plain HTTP on :5000, TLS on :5443 with our own CA
reg() { # reg NAME PORT [TLS]
	local tls=""
	[ -n "${3:-}" ] && tls="
  tls:
    certificate: $W/srv.pem
    key: $W/srv.key"
	cat >"$W/$1.yml" <<EOT
version: 0.1
log: {level: error}
storage:
  filesystem: {rootdirectory: $W/$1-data}
http:
  addr: 127.0.0.1:$2$tls
EOT
	docker-registry serve "$W/$1.yml" >"$W/$1.log" 2>&1 &
	echo $!
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=na-test-ca \
	-keyout "$W/ca.key" -out "$W/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
	-keyout "$W/srv.key" -out "$W/srv.csr" 2>/dev/null
openssl x509 -req -in "$W/srv.csr" -CA "$W/ca.pem" -CAkey "$W/ca.key" -CAcreateserial -days 2 \
	-extfile <(printf 'subjectAltName=IP:127.0.0.1\n') -out "$W/srv.pem" 2>/dev/null
RP=$(reg plain 5000)
on_exit "kill $RP"
TP=$(reg tls 5443 tls)
on_exit "kill $TP"
containerd --root "$D/root" --state "$D/state" --address "$SOCK" >"$D/log" 2>&1 &
CPID=$!
on_exit "kill $CPID; wait $CPID"
for _ in $(seq 150); do
	"${CTR[@]}" version >/dev/null 2>&1 && curl -sf http://127.0.0.1:5000/v2/ >/dev/null &&
		curl -sf --cacert "$W/ca.pem" https://127.0.0.1:5443/v2/ >/dev/null && break
	sleep 0.2
done
check "containerd and both registries up" "${CTR[@]}" version >/dev/null

# --- images: kubelet v1, v2; a bad one with /klink (symlink) and /kdir
L=$W/layout
umoci init --layout "$L"
mkimg() { # mkimg TAG SCRIPT
	umoci new --image "$L:$1"
	umoci unpack --image "$L:$1" "$W/b-$1" >/dev/null
	(cd "$W/b-$1/rootfs" && eval "$2")
	umoci repack --image "$L:$1" "$W/b-$1"
}
mkimg v1 'printf "#!/bin/sh\necho kubelet v1\n" >kubelet; chmod 755 kubelet'
mkimg v2 'printf "#!/bin/sh\necho kubelet v2\n" >kubelet; chmod 755 kubelet'
mkimg v3 'printf "#!/bin/sh\necho kubelet v3\n" >kubelet; chmod 755 kubelet'
mkimg bad 'ln -s /bin/sh klink; mkdir kdir; echo x >kdir/x'
mkimg s390x 'printf "#!/bin/sh\necho kubelet s390x\n" >kubelet; chmod 755 kubelet'
umoci config --image "$L:s390x" --architecture s390x
BOMB_MB=${BOMB_MB:-256}
mkimg bomb "head -c ${BOMB_MB}M /dev/zero >kubelet; chmod 755 kubelet"
rm -rf "$W/b-bomb"
tar -C "$L" -cf "$W/images.tar" .
"${CTR[@]}" images import --base-name 127.0.0.1:5000/kubelet "$W/images.tar" >/dev/null
for t in v1 v2 v3 bad s390x bomb; do
	"${CTR[@]}" images push --plain-http 127.0.0.1:5000/kubelet:$t >/dev/null
	"${CTR[@]}" images tag 127.0.0.1:5000/kubelet:$t 127.0.0.1:5443/kubelet:$t >/dev/null
done
# ctr speaks plain HTTP to 127.0.0.1 unless a hosts.toml says https.
mkdir -p "$W/pushhosts/127.0.0.1:5443"
printf 'server = "https://127.0.0.1:5443"\n\n[host."https://127.0.0.1:5443"]\n  capabilities = ["pull","resolve","push"]\n  ca = ["%s"]\n' \
	"$W/ca.pem" >"$W/pushhosts/127.0.0.1:5443/hosts.toml"
"${CTR[@]}" images push --hosts-dir "$W/pushhosts" 127.0.0.1:5443/kubelet:v1 >/dev/null
rm -rf "$L" "$W/images.tar"
for t in v1 v2 v3 bad s390x bomb; do "${CTR[@]}" images rm 127.0.0.1:5000/kubelet:$t 127.0.0.1:5443/kubelet:$t >/dev/null; done
check "images pushed, nothing left in containerd" test -z "$("${CTR[@]}" images ls -q)"

# osc FILE IMAGE PATH-IN-IMAGE KEYFILE [EXTRA-FILES [EXTRA-UNITS [KUBELET-ARGS]]]
osc() {
	cat >"$1" <<EOT
spec:
  files:
  - path: /opt/bin/kubelet
    permissions: 493
    content: {imageRef: {image: "$2", filePathInImage: "$3"}}
  - path: /var/lib/gardener-user-authorized-keys
    permissions: 420
    content: {inline: {encoding: b64, data: "$(base64 -w0 <"$4")"}}
  - path: /etc/na-test/plain.conf
    permissions: 420
    content: {inline: {data: "plain for $2"}}
${5:-}
  units:
  - name: na-kubelet.service
    content: |
      [Service]
      ExecStart=/opt/bin/kubelet${7:-}
    filePaths: [/opt/bin/kubelet]
${6:-}
  criConfig:
    name: containerd
    cgroupDriver: systemd
    containerd:
      registries:
      - upstream: registry.example:5000
        hosts:
        - url: http://127.0.0.1:5000
      - upstream: 127.0.0.1:5443
        hosts:
        - url: https://127.0.0.1:5443
          caCerts: [$W/ca.pem]
EOT
}
KCUR=$K/gardener-current.pub
KPREV=$K/gardener-previous.pub
AK=$R/home/gardener/.ssh/authorized_keys
KB=$R/opt/bin/kubelet
RES=$ST/result.json

# --- first pull, through the mirror in hosts.toml
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
osc "$W/v1.yaml" registry.example:5000/kubelet:v1 /kubelet "$KCUR"
t0=$(date +%s%N)
cci apply "$W/v1.yaml" 2>"$W/a1.log"
check "first apply succeeds" test $? -eq 0
echo "# bench: first apply with the pull: $(ms $t0) ms"
check "kubelet copied out of the image" grep -q 'echo kubelet v1' "$KB"
check "  ... with the OSC's mode 0755" test "$(stat -c %a "$KB")" = 755
check "pulled through the mirror of hosts.toml (upstream does not resolve)" \
	bash -c "'${CTR[0]}' --address '$SOCK' images ls -q | grep -qx registry.example:5000/kubelet:v1"
check "digest recorded in images.json" grep -q '"digest":[[:space:]]*"sha256:' "$ST/images.json"
check "unit naming it restarted" grep -q 'restart:.*na-kubelet.service' "$W/a1.log"
check "keys applied" grep -q "$(cut -d' ' -f2 "$KCUR")" "$AK"
check "no temporary left" test "$(ls -A "$R/opt/bin")" = kubelet
cp "$KB" "$W/kubelet-v1"

# --- same image again: nothing written, containerd not even asked
before=$(tree_state "$R"; stat -c '%n %i %y %z' "$ST"/*)
strace_cce "$W/s2.strace" "$R" --containerd-address "$SOCK" apply "$W/v1.yaml" 2>"$W/a2.log"
check "re-apply succeeds" test $? -eq 0
after=$(tree_state "$R"; stat -c '%n %i %y %z' "$ST"/*)
check "re-apply: no file touched" test "$before" = "$after"
check "re-apply: zero writes (strace)" test "$(count_fs_writes "$W/s2.strace")" -eq 0
check_not "re-apply: ctr not run" grep -q 'execve("/usr/bin/ctr"' "$W/s2.strace"
check_not "re-apply: no restart" grep -q 'restart:.*na-kubelet.service' "$W/a2.log"
# opened read-only for the writer check (a read lease), never read
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -e trace=openat,read,close,fcntl \
	-o "$W/s2r.strace" "$CCE" --root "$R" --config "$W/config.json" --no-systemd --log stderr \
	--containerd-address "$SOCK" apply "$W/v1.yaml" 2>/dev/null
kb_reads() { # the calls on the fd of kubelet while it is open: lease, reads
	awk '/openat\(.*"kubelet", O_RDONLY/ { split($0, a, "= "); fd = a[2] + 0; open = 1; next }
	     open && $0 ~ "close\\(" fd "\\)" { open = 0 }
	     open && $0 ~ "(read|fcntl)\\(" fd "," { print $2 $3 $4 }' "$1"
}
check "re-apply: the intact binary opened only for the writer check (read lease)" \
	bash -c "$(declare -f kb_reads); kb_reads '$W/s2r.strace' | grep -q '^fcntl('"
check_not "re-apply: the intact binary not read (its identity is the one recorded)" \
	bash -c "$(declare -f kb_reads); kb_reads '$W/s2r.strace' | grep -q '^read('"
check "  ... the identity in images.json" grep -q '"identity":[[:space:]]*"[0-9]*:[0-9]*:[0-9]*:' "$ST/images.json"

# --- an edit in place that keeps the size and the times: the identity changes (ctime), so it is hashed
mtime=$(stat -c %y "$KB")
printf 'X' | dd of="$KB" bs=1 seek=2 conv=notrunc 2>/dev/null
touch -d "$mtime" "$KB"
check "same-size edit, mtime put back: re-apply rewrites the binary" cci apply "$W/v1.yaml" 2>"$W/a2b.log"
check "  ... it is v1 again" cmp -s "$KB" "$W/kubelet-v1"
check "  ... and the unit restarts" grep -q 'restart:.*na-kubelet.service' "$W/a2b.log"

# --- issue 36: a writer with a shared writable mapping. The kernel stamps
# the times when a clean page is first written, not when a page already
# dirty changes again: the writer dirties a page (bytes unchanged), the
# executor hashes the file, the writer changes the byte through the same
# page (no time changes). The identity taken while a writer had the file
# open for writing is not trusted, so the next run hashes it again.
python3 - "$KB" "$W/mm" <<'PY' &
import mmap, os, sys, time
f = open(sys.argv[1], "r+b")
m = mmap.mmap(f.fileno(), 0)
m[2:3] = m[2:3]
open(sys.argv[2] + ".ready", "w").close()
while not os.path.exists(sys.argv[2] + ".go"): time.sleep(0.01)
m[2:3] = b"Y"
open(sys.argv[2] + ".done", "w").close()
while not os.path.exists(sys.argv[2] + ".end"): time.sleep(0.01)
PY
MM=$!
wait_for 10 test -e "$W/mm.ready"
check "mapping writer, page dirty: re-apply succeeds (file hashed, same bytes)" cci apply "$W/v1.yaml" 2>"$W/a2m.log"
touch "$W/mm.go"
wait_for 10 test -e "$W/mm.done"
check "  ... byte changed through the dirty page" bash -c "! cmp -s '$KB' '$W/kubelet-v1'"
check "  ... next re-apply hashes it (identity taken with a writer not trusted): v1 again" \
	bash -c "'$CCE' --root '$R' --config '$W/config.json' --no-systemd --log stderr --containerd-address '$SOCK' \
		apply '$W/v1.yaml' 2>'$W/a2n.log' && cmp -s '$KB' '$W/kubelet-v1'"
touch "$W/mm.end"
wait $MM

# --- issue 36: a file system with 1-second time stamps (ext4 with 128-byte
# inodes): a same-size write in the same second as the executor's keeps the
# identity; one recorded in the second of its ctime is not trusted.
if command -v mkfs.ext4 >/dev/null && losetup -f >/dev/null 2>&1; then
	truncate -s 8M "$W/sec.img"
	mkfs.ext4 -q -F -I 128 "$W/sec.img" >/dev/null 2>&1
	mount -o loop "$W/sec.img" "$R/opt/bin"
	on_exit "umount '$R/opt/bin' 2>/dev/null"
	same_second=
	for try in 1 2 3 4 5; do
		rm -f "$R/opt/bin/kubelet"
		cci apply "$W/v1.yaml" 2>"$W/a2s.log" || break
		c0=$(stat -c %Z "$KB")
		printf 'Z' | dd of="$KB" bs=1 seek=2 conv=notrunc 2>/dev/null
		[ "$(stat -c %Z "$KB")" = "$c0" ] && { same_second=$try; break; }
	done
	check "1-second stamps: a same-size write in the executor's second (try ${same_second:-none})" test -n "$same_second"
	check "  ... the next re-apply hashes and rewrites it: v1 again" \
		bash -c "'$CCE' --root '$R' --config '$W/config.json' --no-systemd --log stderr --containerd-address '$SOCK' \
			apply '$W/v1.yaml' 2>/dev/null && cmp -s '$KB' '$W/kubelet-v1'"
	umount "$R/opt/bin"
	cci apply "$W/v1.yaml" 2>/dev/null
else
	echo "# skip: 1-second time stamps (no mkfs.ext4 or loop device)"
fi

# --- issue 36: a deleted kubelet: check predicts the copy and the restart,
# apply does exactly that (one plan; tests/lib/exec.sh check_is_apply)
rm -f "$KB"
CIA_ARGS="--containerd-address $SOCK" check_is_apply "$R" "$W/v1.yaml" "deleted /opt/bin/kubelet"
check "  ... predicted: copied out again, its unit restarted" bash -c "
	grep -q '^image   /opt/bin/kubelet: .*rewritten' '$CIA_CHECK' && grep -q '^units: restart: na-kubelet.service' '$CIA_CHECK'"
check "  ... done: v1 there again" cmp -s "$KB" "$W/kubelet-v1"

# --- a new tag replaces the binary and restarts the unit
osc "$W/v2.yaml" registry.example:5000/kubelet:v2 /kubelet "$KCUR"
ino=$(stat -c %i "$KB")
t0=$(date +%s%N)
cci apply "$W/v2.yaml" 2>"$W/a3.log"
check "new tag applies" test $? -eq 0
echo "# bench: image file update (pull, digests, copy): $(ms $t0) ms"
sed -i 's/plain for registry.example:5000\/kubelet:v2/plain changed/' "$W/v2.yaml"
t0=$(date +%s%N)
cci apply "$W/v2.yaml" 2>/dev/null
echo "# bench: plain file update, same image: $(ms $t0) ms"
check "  ... binary replaced" grep -q 'echo kubelet v2' "$KB"
check "  ... atomically (new inode)" test "$(stat -c %i "$KB")" != "$ino"
check "  ... unit restarted" grep -q 'restart:.*na-kubelet.service' "$W/a3.log"

# --- registry down: the step fails, old binary kept, keys rotate anyway
kill $RP; wait $RP 2>/dev/null
osc "$W/v3.yaml" registry.example:5000/kubelet:v3 /kubelet "$KPREV"
cci apply "$W/v3.yaml" 2>"$W/a4.log"
check "registry down: apply fails (exit 1)" test $? -eq 1
check "  ... in the step images" grep -q '"failedStep":[[:space:]]*"images"' "$RES"
check "  ... naming the image and the pull" grep -q 'registry.example:5000/kubelet:v3 for /opt/bin/kubelet: pull failed' "$RES"
check "  ... old binary kept" grep -q 'echo kubelet v2' "$KB"
check "  ... keys still rotated" bash -c "grep -q '$(cut -d' ' -f2 "$KPREV")' '$AK' && ! grep -q '$(cut -d' ' -f2 "$KCUR")' '$AK'"
check "  ... other files still applied" grep -q 'plain for registry.example:5000/kubelet:v3' "$R/etc/na-test/plain.conf"
check_not "  ... the unit is not restarted onto the old binary" grep -q 'restart:.*na-kubelet.service' "$W/a4.log"
RP=$(reg plain 5000)
on_exit "kill $RP"
for _ in $(seq 100); do curl -sf http://127.0.0.1:5000/v2/ >/dev/null && break; sleep 0.1; done
check "registry back: the same OSC now applies" cci apply "$W/v3.yaml" 2>"$W/a4b.log"
check "  ... v3 in place" grep -q 'echo kubelet v3' "$KB"
check "  ... and now the unit restarts" grep -q 'restart:.*na-kubelet.service' "$W/a4b.log"

# --- a missing image holds back what gardener-node-agent holds back
# (reconciler.go returns after applyChangedImageRefFiles fails: no unit
# written, removed or restarted, no dropped file removed, no last-applied);
# files, keys and the other steps still apply, the run fails in "images"
GONE="  - path: /etc/na-test/gone.conf
    permissions: 420
    content: {inline: {data: dropped later}}"
osc "$W/v3g.yaml" registry.example:5000/kubelet:v3 /kubelet "$KPREV" "$GONE"
check "held back: a file to drop later applies" cci apply "$W/v3g.yaml" 2>/dev/null
EXTRA="  - name: na-extra.service
    content: |
      [Service]
      ExecStart=/bin/true"
osc "$W/v9.yaml" registry.example:5000/kubelet:v9 /kubelet "$KCUR" "" "$EXTRA" " --v=2"
unit_before=$(sha256sum <"$R/etc/systemd/system/na-kubelet.service")
last_before=$(sha256sum <"$ST/last-applied.yaml")
cci apply "$W/v9.yaml" 2>"$W/a9.log"
check "missing image (kubelet:v9 never pushed): apply fails (exit 1)" test $? -eq 1
check "  ... in the step images" grep -q '"failedStep":[[:space:]]*"images"' "$RES"
check "  ... naming the image and what is held back" \
	grep -q 'registry.example:5000/kubelet:v9 for /opt/bin/kubelet: .*held back until it is written: units na-extra.service na-kubelet.service' "$RES"
check "  ... the changed kubelet unit not rewritten" test "$(sha256sum <"$R/etc/systemd/system/na-kubelet.service")" = "$unit_before"
check "  ... the new unit not written" test ! -e "$R/etc/systemd/system/na-extra.service"
check "  ... the plan says held back" grep -q 'Units: held back: na-extra.service na-kubelet.service' "$W/a9.log"
check_not "  ... nothing restarted" grep -q 'Units: .*restart:' "$W/a9.log"
check "  ... the dropped file kept while its units are held back" test -e "$R/etc/na-test/gone.conf"
check "  ... last-applied.yaml unchanged" test "$(sha256sum <"$ST/last-applied.yaml")" = "$last_before"
check "  ... old binary kept" grep -q 'echo kubelet v3' "$KB"
check "  ... other files still applied" grep -q 'plain for registry.example:5000/kubelet:v9' "$R/etc/na-test/plain.conf"
check "  ... keys still rotated" bash -c "grep -q '$(cut -d' ' -f2 "$KCUR")' '$AK' && ! grep -q '$(cut -d' ' -f2 "$KPREV")' '$AK'"
cci apply "$W/v9.yaml" 2>"$W/a9b.log"
check "  ... a retry holds back the same" sh -c 'test $1 -eq 1 && grep -q "Units: held back: na-extra.service na-kubelet.service" "$2"' sh $? "$W/a9b.log"
osc "$W/v3h.yaml" registry.example:5000/kubelet:v3 /kubelet "$KCUR" "" "$EXTRA" " --v=2"
cci apply "$W/v3h.yaml" 2>"$W/a9c.log"
check "image there again: the held-back changes apply" test $? -eq 0
check "  ... kubelet unit rewritten and restarted" sh -c 'grep -q -- "--v=2" "$1" && grep -q "restart:.*na-kubelet.service" "$2"' \
	sh "$R/etc/systemd/system/na-kubelet.service" "$W/a9c.log"
check "  ... the new unit written" test -s "$R/etc/systemd/system/na-extra.service"
check "  ... the dropped file removed" test ! -e "$R/etc/na-test/gone.conf"

# --- content that does not match its digest (a layer changed in containerd's store)
layer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][-1]["digest"].split(":")[1])' \
	"$D/root/io.containerd.content.v1.content/blobs/sha256/$("${CTR[@]}" images ls | awk '$1=="registry.example:5000/kubelet:v3"{print $3}' | cut -d: -f2)")
BLOB=$D/root/io.containerd.content.v1.content/blobs/sha256/$layer
cp "$BLOB" "$W/blob.orig"
printf 'X' | dd of="$BLOB" bs=1 seek=20 conv=notrunc 2>/dev/null
echo tampered >"$KB" # drift: the file has to be copied out again
cci apply "$W/v3.yaml" 2>"$W/a5.log"
check "digest mismatch: apply fails" test $? -eq 1
check "  ... saying so" grep -q 'does not match its digest' "$RES"
check "  ... nothing written from it" grep -qx tampered "$KB"
cp "$W/blob.orig" "$BLOB"
check "store repaired: drift undone" cci apply "$W/v3.yaml" 2>/dev/null
check "  ... v3 back" grep -q 'echo kubelet v3' "$KB"

# --- a path in the image that is a symlink, a directory, missing; a user-writable directory
for p in /klink /kdir /nope; do
	osc "$W/bad.yaml" registry.example:5000/kubelet:bad $p "$KPREV"
	cci apply "$W/bad.yaml" 2>"$W/bad-${p#/}.log"
	check "path $p in the image: apply fails" test $? -eq 1
	case $p in
	/nope) check "  ... not in the image" grep -q '/nope is not in the image' "$RES" ;;
	*) check "  ... not a regular file" grep -q "$p in the image is not a regular file" "$RES" ;;
	esac
	check "  ... old binary kept" grep -q 'echo kubelet v3' "$KB"
done
mkdir -p "$R/opt/shared"
chmod 1777 "$R/opt/shared"
osc "$W/uw.yaml" registry.example:5000/kubelet:v3 /kubelet "$KPREV" "  - path: /opt/shared/tool
    permissions: 493
    content: {imageRef: {image: registry.example:5000/kubelet:v3, filePathInImage: /kubelet}}"
cci apply "$W/uw.yaml" 2>"$W/uw.log"
check "OSC path in a world-writable directory: refused" grep -q 'the directory of /opt/shared/tool is writable by a user' "$RES"
check "  ... not written" test ! -e "$R/opt/shared/tool"

# --- a single manifest for another platform: refused as containerd's
# unpacker refuses it under gardener-node-agent
osc "$W/s390x.yaml" registry.example:5000/kubelet:s390x /kubelet "$KPREV"
cci apply "$W/s390x.yaml" 2>"$W/s390x.log"
check "image for linux/s390x: apply fails" test $? -eq 1
check "  ... naming both platforms" grep -q 'the image is for linux/s390x, this node is linux/amd64' "$RES"
check "  ... old binary kept" grep -q 'echo kubelet v3' "$KB"
check "  ... no temporary left" test "$(ls -A "$R/opt/bin")" = kubelet

# --- a decompression bomb: memory stays bounded (streamed to disk)
osc "$W/bomb.yaml" registry.example:5000/kubelet:bomb /kubelet "$KPREV"
/usr/bin/time -f '%M' -o "$W/bomb.rss" "$CCE" --root "$R" --config "$W/config.json" --no-systemd --log stderr \
	--containerd-address "$SOCK" apply "$W/bomb.yaml" 2>"$W/bomb.log"
check "bomb image ($BOMB_MB MiB file): applies" test $? -eq 0
check "  ... the whole file copied out" test "$(stat -c %s "$KB")" -eq $((BOMB_MB << 20))
rss=$(tail -1 "$W/bomb.rss")
echo "# bench: peak RSS of cloud-config-exec (and its ctr children) copying a $BOMB_MB MiB file out: $((rss / 1024)) MiB"
check "  ... peak RSS below 64 MiB (was twice the file)" test "$rss" -lt $((64 * 1024))

# --- TLS registry with its CA in hosts.toml
osc "$W/tls.yaml" 127.0.0.1:5443/kubelet:v1 /kubelet "$KPREV"
cci apply "$W/tls.yaml" 2>"$W/tls.log"
check "TLS registry, CA from hosts.toml: applies" test $? -eq 0
check "  ... v1 from the TLS registry" grep -q 'echo kubelet v1' "$KB"

# --- disk full while the new binary is written: old or new, never torn
SO=$B/tools/faultfs.so
if [ -f "$SO" ]; then
	osc "$W/v2b.yaml" registry.example:5000/kubelet:v2 /kubelet "$KPREV"
	LD_PRELOAD=$SO FAULTFS_OPS=open,write FAULTFS_LOG=$W/steps.log cci apply "$W/v2b.yaml" 2>/dev/null
	step=$(awk '/open .*\.#kubelet\./ { t = 1 } t && $2 == "write" { print $1; exit }' "$W/steps.log")
	cci apply "$W/tls.yaml" 2>/dev/null
	v1sum=$(sha256sum <"$KB")
	LD_PRELOAD=$SO FAULTFS_OPS=open,write FAULTFS_FAIL=${step:-0} cci apply "$W/v2b.yaml" 2>"$W/enospc.log"
	check "ENOSPC writing the binary (write step ${step:-?}): apply fails" test $? -eq 1
	check "  ... the old binary intact" test "$(sha256sum <"$KB")" = "$v1sum"
	check "  ... no temporary left" test "$(ls -A "$R/opt/bin")" = kubelet
	check "  ... reason named" grep -q 'cannot write /opt/bin/kubelet' "$RES"
fi

# --- containerd not running
kill $CPID; wait $CPID 2>/dev/null
osc "$W/v2b.yaml" registry.example:5000/kubelet:v2 /kubelet "$KPREV"
cci apply "$W/v2b.yaml" 2>"$W/a6.log"
check "containerd down: apply fails" test $? -eq 1
check "  ... containerd named" grep -q 'containerd not running' "$RES"
check "  ... old binary kept" grep -q 'echo kubelet v1' "$KB"

# --- the OSC drops the image file: ours (created by the images step), so
# removed like any dropped file, and its record goes (no containerd needed)
check "the image file is recorded as owned" grep -q '"/opt/bin/kubelet"' "$ST/state.json"
cat >"$W/drop.yaml" <<EOT
spec:
  files:
  - path: /var/lib/gardener-user-authorized-keys
    permissions: 420
    content: {inline: {encoding: b64, data: "$(base64 -w0 <"$KPREV")"}}
EOT
cci apply "$W/drop.yaml" 2>"$W/drop.log"
check "OSC without the image file: applies (containerd down)" test $? -eq 0
check "  ... the image file removed" test ! -e "$KB"
check "  ... no longer owned, no record" sh -c '! grep -q "/opt/bin/kubelet" "$1" && ! grep -q "/opt/bin/kubelet" "$2"' \
	sh "$ST/state.json" "$ST/images.json"

finish
