#!/bin/bash
# Image files on a booted node: the build tree installed (make install) into
# 055's Debian 12 tree (tests/lib/sdbox.sh, the same cached rootfs), with
# Debian's containerd, ctr and docker-registry (the host's binaries, libc
# only) as units in the box, booted with systemd-nspawn in its own network
# namespace: every byte of registry traffic stays on the box's loopback.
# A kubelet stand-in (a shell script) in images built here with umoci is
# pushed into the box's registry and removed from containerd; then a
# desired state whose OSC has /opt/bin/kubelet as content.imageRef (through a
# registry mirror in criConfig: the upstream does not resolve) and a unit
# running it is dropped in. Through the real units: cloud-config-exec.path ->
# cloud-config-exec.service (no network) -> cloud-config-exec-pull@REF.service
# (ctr, network, no capability) -> the executor checks the digests, writes
# the binary, starts the unit. Checked: the unit is active and runs the
# binary, which matches the image; the pull unit ran with its sandbox; a new
# tag replaces the binary and restarts the unit; the registry stopped: the
# step "images" fails through the pull unit's failed job, the old binary and
# unit stay; the image file dropped from the OSC is removed.
# Run: ONLY=057 make check-integration (root; 10-20 s with 055's cached rootfs).
source "$TESTS_DIR/lib/common.sh"

source "$TESTS_DIR/lib/sdbox-test.sh"
TOP=$(cd "$TESTS_DIR/.." && pwd)
KEYS=$TESTS_DIR/fixtures/keys

# --setup ROOTFS: called by sdbox.sh between the rootfs and the boot.
if [ "${1:-}" = --setup ]; then
	R=$2
	set -e
	make -s -C "$TOP" B="$B" DESTDIR="$R" PREFIX=/usr install >"$S/install.log" 2>&1 ||
		{ cat "$S/install.log" >&2; exit 1; }
	systemctl --root="$R" enable cloud-config-exec.path >/dev/null 2>&1
	install -m 0755 /usr/bin/containerd /usr/bin/ctr /usr/bin/docker-registry "$R/usr/bin/"
	cat >"$R/etc/systemd/system/containerd.service" <<-'EOF'
	[Unit]
	Description=containerd (Debian's binary)
	[Service]
	Type=notify
	ExecStart=/usr/bin/containerd
	Delegate=yes
	KillMode=process
	[Install]
	WantedBy=multi-user.target
	EOF
	cat >"$R/etc/na-registry.yml" <<-'EOF'
	version: 0.1
	log: {level: error}
	storage:
	  filesystem: {rootdirectory: /var/lib/na-registry}
	http:
	  addr: 127.0.0.1:5000
	EOF
	cat >"$R/etc/systemd/system/na-registry.service" <<-'EOF'
	[Unit]
	Description=docker-registry on the box's loopback
	[Service]
	ExecStart=/usr/bin/docker-registry serve /etc/na-registry.yml
	[Install]
	WantedBy=multi-user.target
	EOF
	systemctl --root="$R" enable containerd.service na-registry.service >/dev/null 2>&1
	install -m 0600 "$S/images.tar" "$R/root/images.tar"
	exit 0
fi

require_root
for t in systemd-nspawn debootstrap nsenter unshare containerd ctr docker-registry umoci; do
	command -v "$t" >/dev/null || skip_all "needs $t (scripts/install-deps)"
done
[ -x "$B/cloud-config-exec" ] || skip_all "no build in $B"
if sanitized "$B/cloud-config-exec"; then
	skip_all "sanitizer build: the installed units' seccomp filters exclude the sanitizer runtime (as 055)"
fi

S=$(scratch)
export S
export SDBOX_SUITE=bookworm
export SDBOX_STATE=/var/tmp/node-agent-sdbox-057-$$
export SDBOX_SRC=$S
# The suite's package set (tests/lib/sdbox.sh): 055's cached tree.
export SDBOX_SETUP="bash '$0' --setup \"\$1\""

# --- the kubelet stand-ins, built here
L=$S/layout
umoci init --layout "$L"
mkimg() { # mkimg TAG
	umoci new --image "$L:$1"
	umoci unpack --image "$L:$1" "$S/b-$1" >/dev/null
	printf '#!/bin/sh\n# kubelet stand-in %s\nsleep infinity\n' "$1" >"$S/b-$1/rootfs/kubelet"
	chmod 755 "$S/b-$1/rootfs/kubelet"
	cp "$S/b-$1/rootfs/kubelet" "$S/kubelet-$1"
	umoci repack --image "$L:$1" "$S/b-$1"
}
mkimg v1
mkimg v2
mkimg v3
tar -C "$L" -cf "$S/images.tar" .

t0=$(date +%s%N)
sdbox_boot "with the build tree, containerd and the registry"
check "containerd and the registry are active in the box" \
	wait_for 30 boxn bash -c 'ctr version >/dev/null 2>&1 && exec 3<>/dev/tcp/127.0.0.1/5000' 2>/dev/null

# Into the box's registry, then out of containerd: the node must pull.
boxn ctr images import --base-name 127.0.0.1:5000/kubelet /root/images.tar >/dev/null 2>&1
for t in v1 v2 v3; do boxn ctr images push --plain-http 127.0.0.1:5000/kubelet:$t >/dev/null 2>&1; done
boxn ctr images rm 127.0.0.1:5000/kubelet:v1 127.0.0.1:5000/kubelet:v2 127.0.0.1:5000/kubelet:v3 >/dev/null 2>&1
check "images pushed to the box's registry, none left in containerd" \
	sh -c "test -z \"\$(nsenter -t $SDBOX_LEADER -m -p -n ctr images ls -q)\" &&
		nsenter -t $SDBOX_LEADER -m -p -n bash -c 'exec 3<>/dev/tcp/127.0.0.1/5000; printf \"GET /v2/kubelet/tags/list HTTP/1.0\r\n\r\n\" >&3; cat <&3' | grep -q v3"

# osc FILE TAG [no-image]
osc() {
	local img=""
	[ -z "${3:-}" ] && img='
   {"path": "/opt/bin/kubelet", "permissions": 493,
    "content": {"imageRef": {"image": "registry.example:5000/kubelet:'$2'", "filePathInImage": "/kubelet"}}},'
	cat >"$1" <<EOF
{"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "OperatingSystemConfig",
 "spec": {"type": "debian", "purpose": "reconcile",
  "files": [$img
   {"path": "/var/lib/gardener-user-authorized-keys", "permissions": 384,
    "content": {"inline": {"data": "$(cat "$KEYS/gardener-current.pub")\n"}}}],
  "units": [
   {"name": "na-kubelet.service", "command": "start", "enable": true, "filePaths": ["/opt/bin/kubelet"],
    "content": "[Unit]\nDescription=kubelet stand-in\n[Service]\nExecStart=/opt/bin/kubelet\n[Install]\nWantedBy=multi-user.target\n"}],
  "criConfig": {"name": "containerd", "cgroupDriver": "systemd",
   "containerd": {"registries": [{"upstream": "registry.example:5000", "hosts": [{"url": "http://127.0.0.1:5000"}]}]}}}}
EOF
}
gen=0
drop() { # drop OSC: desired.json as node-agent writes it; waits for the result
	gen=$((gen + 1))
	local sum
	sum=$(sha256sum "$1" | cut -d' ' -f1)
	python3 - "$1" "$gen" >"$BOX/var/lib/node-agent/.desired.json.tmp" <<-'PY'
	import hashlib, json, sys
	osc = open(sys.argv[1]).read()
	print(json.dumps({"version": 1, "checksum": hashlib.sha256(osc.encode()).hexdigest(),
	                  "osc": osc, "generation": int(sys.argv[2])}))
	PY
	"$SDBOX" sh chown node-agent:node-agent /var/lib/node-agent/.desired.json.tmp
	"$SDBOX" sh mv /var/lib/node-agent/.desired.json.tmp /var/lib/node-agent/desired.json
	wait_for 120 sh -c "grep -q '\"checksum\":[[:space:]]*\"$sum\"' '$BOX/var/lib/cloud-config-exec/result.json' 2>/dev/null &&
		test \"\$('$SDBOX' ctl is-active cloud-config-exec.service)\" != activating"
}
PULL1='cloud-config-exec-pull@registry.example:5000-kubelet:v1.service'
mainpid() { ctl show -p MainPID --value na-kubelet.service; }
binary_is() { cmp -s "$BOX/opt/bin/kubelet" "$S/kubelet-$1"; }

# --- first apply: pulled through the pull unit, written, started
osc "$S/v1.json" v1
t1=$(date +%s%N)
if drop "$S/v1.json"; then ok "desired.json (kubelet v1 as an image file) -> cloud-config-exec ran"
else fail "desired.json (kubelet v1 as an image file) -> cloud-config-exec ran"; fi
echo "# bench: drop-in to result, first pull through the units: $((($(date +%s%N) - t1) / 1000000)) ms"
if ! check "... result.json says success" grep -q '"success":[[:space:]]*true' "$BOX/var/lib/cloud-config-exec/result.json"; then
	dump "result" cat "$BOX/var/lib/cloud-config-exec/result.json"
	dump "journal" "$SDBOX" sh journalctl -q --no-pager -u cloud-config-exec.service -u "$PULL1"
fi
check "... the executor started the pull unit $PULL1 (Result=success)" \
	test "$(ctl show -p Result --value "$PULL1")" = success
check "... which pulled through the mirror in hosts.toml (registry.example does not resolve)" \
	sh -c "nsenter -t $SDBOX_LEADER -m -p -n ctr images ls -q | grep -qx registry.example:5000/kubelet:v1"
check "... /opt/bin/kubelet matches the image's file, mode 755" \
	sh -c "cmp -s '$BOX/opt/bin/kubelet' '$S/kubelet-v1' && test \"\$(stat -c %a '$BOX/opt/bin/kubelet')\" = 755"
check "... na-kubelet.service is active" test "$(ctl is-active na-kubelet.service)" = active
pid1=$(mainpid)
check "... and runs the binary (its MainPID's script is /opt/bin/kubelet)" \
	sh -c "'$SDBOX' sh cat /proc/$pid1/cmdline | tr '\0' ' ' | grep -q '^/bin/sh /opt/bin/kubelet'"
check "cloud-config-exec.service still has no network (PrivateNetwork=yes, AF_UNIX)" \
	sh -c "test \"\$('$SDBOX' ctl show -p PrivateNetwork --value cloud-config-exec.service)\" = yes &&
		'$SDBOX' ctl show -p RestrictAddressFamilies --value cloud-config-exec.service | grep -qx AF_UNIX"
check "the pull unit: no capability, AF_UNIX AF_INET AF_INET6 only" \
	sh -c "test -z \"\$('$SDBOX' ctl show -p CapabilityBoundingSet --value '$PULL1')\" &&
		test \"\$('$SDBOX' ctl show -p RestrictAddressFamilies --value '$PULL1')\" = 'AF_INET AF_INET6 AF_UNIX'"

# --- a new tag: replaced, the unit restarted
osc "$S/v2.json" v2
drop "$S/v2.json"
check "new tag v2: success" grep -q '"success":[[:space:]]*true' "$BOX/var/lib/cloud-config-exec/result.json"
check "... the binary is v2" binary_is v2
check "... na-kubelet.service restarted (new MainPID) and active" \
	sh -c "test \"\$('$SDBOX' ctl show -p MainPID --value na-kubelet.service)\" != '$pid1' &&
		test \"\$('$SDBOX' ctl is-active na-kubelet.service)\" = active"
pid2=$(mainpid)

# --- the registry stopped: the pull unit fails, nothing else changes
ctl stop na-registry.service
osc "$S/v3.json" v3
drop "$S/v3.json"
RES=$BOX/var/lib/cloud-config-exec/result.json
check "registry down, tag v3: the step images fails" grep -q '"failedStep":[[:space:]]*"images"' "$RES"
check "... naming the image and the pull unit's failed job" \
	grep -q 'registry.example:5000/kubelet:v3 for /opt/bin/kubelet: pull failed: cloud-config-exec-pull@registry.example:5000-kubelet:v3.service: job failed' "$RES"
check "... the failed pull unit is reset, not left in systemctl --failed" \
	sh -c "! '$SDBOX' ctl --failed --no-legend | grep -q cloud-config-exec-pull@"
check "... the v2 binary kept, the unit not restarted" \
	sh -c "cmp -s '$BOX/opt/bin/kubelet' '$S/kubelet-v2' && test \"\$('$SDBOX' ctl show -p MainPID --value na-kubelet.service)\" = '$pid2'"
ctl start na-registry.service

# --- the image file dropped from the OSC: ours, removed
osc "$S/none.json" v2 no-image
drop "$S/none.json"
check "image file dropped from the OSC: success, /opt/bin/kubelet removed" \
	sh -c "grep -q '\"success\":[[:space:]]*true' '$RES' && test ! -e '$BOX/opt/bin/kubelet'"
echo "# 057 total: $((($(date +%s%N) - t0) / 1000000)) ms after the images were built"
finish
