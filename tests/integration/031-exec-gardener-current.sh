#!/bin/bash
# cloud-config-exec (--no-systemd, scratch root) with what a current Gardener
# (v1.149, Kubernetes 1.33) publishes for a worker pool:
# tests/fixtures/osc/gardener-v1.149-worker.yaml (see the README there).
# `check` accepts it and lists what an apply does; `apply` writes every
# inline file with Gardener's modes, every unit and the extension's drop-in,
# renders containerd's config from criConfig, supersedes
# gardener-node-agent's and gardener-user's units (never written) and never
# writes gardener-node-agent's binary. The other image files (kubelet, the
# OpenTelemetry collector) need containerd: without it the images step fails
# (expected; containerd's address points at a socket that does not exist, so
# the host's containerd is never asked); files are still applied, but every
# unit is held back as gardener-node-agent holds it back (reconciler.go).
# With the two files in place (stand-ins recorded in images.json, as after
# an earlier pull) the next apply writes the units. A further apply changes
# nothing.
# ctr (grpc) waits 10 s for a socket that is not there, per image and apply:
# as root, the script re-runs itself in a private mount namespace where
# /usr/bin/ctr is a stub that fails at once, as ctr does without containerd.
if [ "$(id -u)" -eq 0 ] && [ -z "${NA_PRIVATE_CTR:-}" ] && [ -e /usr/bin/ctr ]; then
	exec env NA_PRIVATE_CTR=1 unshare -m --propagation private -- bash -c '
		stub=$(mktemp "${TMPDIR:-/tmp}/na-ctr.XXXXXX") && chmod 0755 "$stub" &&
		printf "#!/bin/sh\necho \"ctr: failed to dial: no containerd (test stub)\" >&2\nexit 1\n" >"$stub" &&
		mount --bind "$stub" /usr/bin/ctr && rm -f "$stub" && exec bash "$0"' "$0"
fi
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
require_root
[ -x "$CCE" ] || skip_all "cloud-config-exec is not built"

W=$(scratch)
exec_init "$W"
R=$W/root
OSC=$TESTS_DIR/fixtures/osc/gardener-v1.149-worker.yaml
NOSOCK=(--containerd-address "$W/no-containerd.sock")
result_field() { python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); v = eval(sys.argv[2])
print(json.dumps(v) if isinstance(v, (list, dict)) else v)' "$R/var/lib/cloud-config-exec/result.json" "$1"; }

out=$(cce "$R" "${NOSOCK[@]}" check "$OSC" 2>&1)
rc=$?
check "check: valid (rc $rc): $(grep -o '[0-9]* files, [0-9]* units: valid' <<<"$out")" \
	grep -q '^17 files, 14 units: valid$' <<<"$out"
check "check: gardener-node-agent's and gardener-user's units superseded" \
	grep -q 'superseded: gardener-node-agent.service gardener-user.path gardener-user.service$' <<<"$out"
check "check: the three image files named, not materialised" \
	test "$(grep -c '^image   /opt/bin/\(kubelet\|gardener-node-agent\|opentelemetry-collector\):' <<<"$out")" = 3
check "check: wrote nothing" test -z "$(cd "$R" && find . -mindepth 1 ! -path './var/lib/cloud-config-exec*' | head -1)"

cce "$R" "${NOSOCK[@]}" apply "$OSC" 2>"$W/apply.log"
rc=$?
check "apply: rc 1, failed step images only (no containerd)" \
	test "$rc $(result_field 'd["failedStep"]')" = "1 images"
check "... the error names the kubelet's and the collector's images, not gardener-node-agent's" \
	sh -c 'case "$1" in *hyperkube*opentelemetry-collector*) case "$1" in *node-agent:*) exit 1 ;; esac ;; *) exit 1 ;; esac' \
	sh "$(result_field 'd["error"]')"
modes=$(cd "$R" && stat -c '%n %a' var/lib/kubelet/config/kubelet var/lib/kubelet/ca.crt \
	var/lib/gardener-node-agent/config-v1.149.3.yaml var/lib/gardener-node-agent/cluster-ca.crt \
	var/lib/opentelemetry-collector/config/config var/lib/opentelemetry-collector/ca.crt \
	var/lib/opentelemetry-collector/kubeconfig var/lib/sshd-ensurer/run.sh opt/bin/mtu-customizer.sh \
	etc/systemd/journald.conf etc/sysctl.d/99-k8s-general.conf etc/systemd/containerd.conf \
	var/lib/gardener-user-authorized-keys var/lib/gardener-user/run.sh 2>&1 | tr '\n' ' ')
check "files with Gardener's modes (0600 kubelet config, 0640 cluster CA, 0400 collector config and CA, ...)" test "$modes" = \
	"var/lib/kubelet/config/kubelet 600 var/lib/kubelet/ca.crt 644 var/lib/gardener-node-agent/config-v1.149.3.yaml 600 var/lib/gardener-node-agent/cluster-ca.crt 640 var/lib/opentelemetry-collector/config/config 400 var/lib/opentelemetry-collector/ca.crt 400 var/lib/opentelemetry-collector/kubeconfig 600 var/lib/sshd-ensurer/run.sh 755 opt/bin/mtu-customizer.sh 755 etc/systemd/journald.conf 644 etc/sysctl.d/99-k8s-general.conf 644 etc/systemd/containerd.conf 644 var/lib/gardener-user-authorized-keys 644 var/lib/gardener-user/run.sh 755 "
check "b64 content decoded (kubelet config, cgroupDriver systemd)" grep -qx 'cgroupDriver: systemd' "$R/var/lib/kubelet/config/kubelet"
check "the mtu script keeps its tabs" grep -q "$(printf '\t')ip link set" "$R/opt/bin/mtu-customizer.sh"
check "no image file written (/opt/bin/kubelet, gardener-node-agent, opentelemetry-collector)" \
	test ! -e "$R/opt/bin/kubelet" -a ! -e "$R/opt/bin/gardener-node-agent" -a ! -e "$R/opt/bin/opentelemetry-collector"
U=$R/etc/systemd/system
# As gardener-node-agent (reconciler.go returns when applyChangedImageRefFiles
# fails): no unit written while an image file is missing
check "... every unit held back while the image files are missing" test -z "$(ls -A "$U" 2>/dev/null)"
check "... the error says so" sh -c 'case "$1" in *"held back until it is written: units "*kubelet.service*) ;; *) exit 1 ;; esac' \
	sh "$(result_field 'd["error"]')"
# The two image files in place, as containerd had copied them out before
# (images.json records reference and SHA-256, so no containerd is asked):
# the next apply writes the units
python3 - "$R" "$OSC" <<'PY'
import hashlib, json, os, re, sys
root, osc = sys.argv[1], open(sys.argv[2]).read()
rec = {}
for path, mode in (("/opt/bin/kubelet", 0o755), ("/opt/bin/opentelemetry-collector", 0o700)):
    image = re.search(r"- path: " + re.escape(path) + r"\n(?:.*\n){3}\s+image: (\S+)", osc).group(1)
    data = ("#!/bin/sh\n# stand-in for " + path + "\n").encode()
    os.makedirs(root + "/opt/bin", exist_ok=True)
    with open(root + path, "wb") as f:
        f.write(data)
    os.chmod(root + path, mode)
    rec[path] = {"image": image, "digest": "sha256:" + "0" * 64, "sha256": hashlib.sha256(data).hexdigest()}
json.dump(rec, open(root + "/var/lib/cloud-config-exec/images.json", "w"))
PY
cce "$R" "${NOSOCK[@]}" apply "$OSC" 2>"$W/apply1b.log"
rc=$?
check "with the image files in place: rc 0 (rc $rc)" test "$rc" -eq 0
units=$(cd "$U" && ls | tr '\n' ' ')
check "units written: $units" test "$units" = \
	"containerd-logrotate.service containerd-logrotate.timer containerd.service.d custom-mtu.service kubelet.service opentelemetry-collector-healthcheck.service opentelemetry-collector-healthcheck.timer opentelemetry-collector.service sshd-ensurer.service "
check "... gardener-node-agent.service and gardener-user.* never written" \
	test ! -e "$U/gardener-node-agent.service" -a ! -e "$U/gardener-user.service" -a ! -e "$U/gardener-user.path"
check "... the OS extension's containerd drop-in (status.extensionUnits)" grep -qx 'LimitNOFILE=1048576' "$U/containerd.service.d/override.conf"
check "... gardener-node-agent's PATH drop-in with the criConfig (containerd.go)" \
	grep -qx "Environment=\"PATH=/var/bin/containerruntimes:$PATH\"" "$U/containerd.service.d/30-env_config.conf"
check "... the kubelet unit as published (continuation lines, the version label)" \
	grep -q -- '--node-labels=worker.gardener.cloud/kubernetes-version=1.33.4 \\$' "$U/kubelet.service"
if command -v containerd >/dev/null; then
	check "criConfig: containerd config with SystemdCgroup and the pause:3.10 sandbox image" \
		sh -c 'grep -q "SystemdCgroup = true" "$1" && grep -q "pause:3.10" "$1"' sh "$R/etc/containerd/config.toml"
fi
before=$(tree_hash "$R")
cce "$R" "${NOSOCK[@]}" apply "$OSC" 2>"$W/apply2.log"
check "a second apply writes nothing (tree unchanged)" test "$(tree_hash "$R")" = "$before"
# (a no-op writes no result.json either: it still holds the apply before)
check "... and restarts no unit (nothing changed, no restart planned)" \
	sh -c 'grep -q "Applied OSC .* (nothing changed)" "$1" && ! grep -q "Units: .*restart" "$1"' sh "$W/apply2.log"
finish
