#!/bin/bash
# cloud-config-exec and containerd (Debian's containerd package, run by hand
# with its own root, state and socket below a scratch dir, never the host's):
# the OSC's criConfig becomes /etc/containerd/config.toml and
# certs.d/<upstream>/hosts.toml in a scratch root; the real containerd
# starts with that configuration and answers `ctr version`, and its
# effective configuration (`containerd config dump`) has SystemdCgroup,
# the sandbox image, config_path and the CNI dir; a re-apply writes nothing
# and restarts nothing; a changed registry rewrites hosts.toml only and
# restarts nothing; a changed cgroupDriver rewrites the file and restarts
# containerd; a dropped registry loses its hosts.toml; plugins (gVisor,
# Kata) become tables containerd reads, a later remove drops one, and one
# that would set what node-agent renders itself fails the step "containerd"
# (config.toml untouched) without holding back the other files;
# containerd.service gets gardener-node-agent's PATH drop-in
# 30-env_config.conf and /var/bin/containerruntimes exists while the OSC has
# a criConfig, and the drop-in goes with the criConfig.
# Issue 21: a key containerd 1.6's TOML parser refuses ("]" in a table
# header) is refused up front naming it; a config.toml containerd refuses
# for another reason (a value of the wrong type) is caught by the
# executor's own `containerd config dump` of the candidate: the old file
# stays, containerd is not restarted, result.json says why; every input of
# the osc fuzz corpus whose criConfig the renderer accepts loads in the
# real containerd. Issue 27: a no-op re-apply does not exec containerd
# (its --version is cached per binary in state.json); a changed binary
# (ctime) is asked again. Issue 36: the file there decides the version (no
# containerd --version for a version 2 file); a GPU image's own
# config.toml (tests/fixtures/containerd/gpu-image-1.6.toml: an nvidia
# runtime as the default, CDI, an import, a plugin table, an array of
# tables) is patched as gardener-node-agent patches it: all of it
# survives every apply, the real containerd loads and starts with it, a
# plugin's values replace the keys of the table they name (each whole), a
# re-apply writes nothing and asks containerd nothing, and dropping the
# criConfig brings the image's file back byte for byte.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
source "$TESTS_DIR/lib/kube.sh"
require_root
command -v containerd >/dev/null && command -v ctr >/dev/null || skip_all "containerd not installed"
command -v strace >/dev/null || skip_all "strace not installed"
RENDER=$B/tools/render-cri
kube_netns "$@"

W=$(scratch)
exec_init "$W"
R=$W/root
ST=$R/var/lib/cloud-config-exec

osc() { # osc FILE DRIVER EXTRA-REGISTRY-YAML PLUGINS-YAML
	cat >"$1" <<EOT
spec:
  files:
  - path: /etc/na-test/plain.conf
    permissions: 420
    content: {inline: {data: "plain $2\n"}}
  criConfig:
    name: containerd
    cgroupDriver: $2
    containerd:
      sandboxImage: 127.0.0.1:5000/pause:3.10
      registries:
      - upstream: 127.0.0.1:5000
        server: http://127.0.0.1:5000
        hosts:
        - url: http://127.0.0.1:5001
          capabilities: [pull, resolve]
$3
$4
EOT
}
osc "$W/v1.yaml" systemd "      - upstream: docker.io
        hosts:
        - url: https://mirror.example
          caCerts: [/etc/containerd/certs.d/docker.io/ca.pem]" ""
osc "$W/v2.yaml" cgroupfs "" ""
osc "$W/v3.yaml" cgroupfs "" "      plugins:
      - path: [io.containerd.grpc.v1.cri, containerd, runtimes, runsc]
        values: {runtime_type: io.containerd.runsc.v1, options: {TypeUrl: io.containerd.runsc.v1.options, ConfigPath: /etc/containerd/runsc.toml}}
      - path: [io.containerd.grpc.v1.cri, containerd, runtimes, kata]
        values: {runtime_type: io.containerd.kata.v2, privileged_without_host_devices: true, pod_annotations: [io.katacontainers.x, io.katacontainers.y]}
      - path: [io.containerd.grpc.v1.cri, containerd, runtimes, kata]
        op: remove"
# a plugin that sets what node-agent renders itself (the runc options): refused
osc "$W/v4.yaml" cgroupfs "" "      plugins:
      - path: [io.containerd.grpc.v1.cri, containerd, runtimes, runc, options]
        values: {BinaryName: /usr/local/bin/runc}"

# --- first apply: config.toml, hosts.toml, containerd restarted
check "first apply succeeds" cce "$R" apply "$W/v1.yaml" 2>"$W/a1.log"
CFG=$R/etc/containerd/config.toml
check "config.toml written 0644" test "$(stat -c %a "$CFG" 2>/dev/null)" = 644
check "config version 2 for containerd 1.x" grep -qx 'version = 2' "$CFG"
check "SystemdCgroup = true" grep -qx '  SystemdCgroup = true' "$CFG"
check "imports conf.d" grep -qxF 'imports = ["/etc/containerd/conf.d/*.toml"]' "$CFG"
check "conf.d and certs.d created 0755" test "$(stat -c %a "$R/etc/containerd/conf.d")$(stat -c %a "$R/etc/containerd/certs.d")" = 755755
H=$R/etc/containerd/certs.d/127.0.0.1:5000/hosts.toml
check "hosts.toml of the registry" grep -qxF '[host."http://127.0.0.1:5001"]' "$H"
check "hosts.toml server" grep -qxF 'server = "http://127.0.0.1:5000"' "$H"
check "hosts.toml with the CA" grep -qxF '  ca = ["/etc/containerd/certs.d/docker.io/ca.pem"]' "$R/etc/containerd/certs.d/docker.io/hosts.toml"
check "containerd restart planned" grep -q 'Units:.*containerd.service' "$W/a1.log"
# Gardener's addContainerdEnvironmentDropIn (containerd.go): the drop-in with
# the runtimes dir before the PATH the executor runs with (--root: its $PATH),
# byte for byte, and the directory itself
printf '[Service]\nEnvironment="PATH=/var/bin/containerruntimes:%s"\n' "$PATH" >"$W/env.expected"
check "drop-in 30-env_config.conf: Gardener's bytes" cmp "$W/env.expected" "$R/etc/systemd/system/containerd.service.d/30-env_config.conf"
check "/var/bin/containerruntimes created 0755" test "$(stat -c %a "$R/var/bin/containerruntimes" 2>/dev/null)" = 755
check "drop-in named in the plan" grep -q 'containerd.service.*30-env_config.conf\|Wrote unit containerd.service' "$W/a1.log"

# --- the real containerd accepts the file
D=$W/ctd
mkdir -p "$D"
check "containerd config dump reads it" bash -c "containerd --config '$CFG' config dump >'$W/dump.toml' 2>'$W/dump.err'"
check "in effect: SystemdCgroup = true" grep -qE '^ *SystemdCgroup = true' "$W/dump.toml"
check "in effect: sandbox image" grep -qF 'sandbox_image = "127.0.0.1:5000/pause:3.10"' "$W/dump.toml"
check "in effect: registry config_path" grep -qF 'config_path = "/etc/containerd/certs.d"' "$W/dump.toml"
check "in effect: CNI bin dir" grep -qF 'bin_dir = "/opt/cni/bin"' "$W/dump.toml"
check "in effect: runc stays io.containerd.runc.v2" grep -qF 'runtime_type = "io.containerd.runc.v2"' "$W/dump.toml"
containerd --config "$CFG" --root "$D/root" --state "$D/state" --address "$D/sock" >"$D/log" 2>&1 &
CPID=$!
on_exit "kill $CPID; wait $CPID"
for _ in $(seq 100); do [ -S "$D/sock" ] && ctr --address "$D/sock" version >/dev/null 2>&1 && break; sleep 0.2; done
check "containerd started with it answers ctr version" bash -c "ctr --address '$D/sock' version | grep -q 'Server:'"
kill $CPID; wait $CPID 2>/dev/null

# --- same OSC again: nothing written, no restart
before=$(tree_state "$R"; stat -c '%n %i %y %z' "$ST"/*)
strace_cce "$W/s2.strace" "$R" apply "$W/v1.yaml" 2>"$W/a2.log"
check "re-apply succeeds" test $? -eq 0
after=$(tree_state "$R"; stat -c '%n %i %y %z' "$ST"/*)
check "re-apply: no file touched (inode, mtime, ctime, content)" test "$before" = "$after"
n=$(count_fs_writes "$W/s2.strace")
echo "# writes on the no-op re-apply: $n"
check "re-apply: zero write-opens/renames/unlinks/mkdirs (strace)" test "$n" -eq 0
check "re-apply: containerd --version not run again (cached in state.json)" \
	bash -c "! grep -q 'execve(\"[^\"]*containerd\"' '$W/s2.strace'"
check "  ... the cache names the binary and its version" grep -q '"version":[[:space:]]*"containerd ' "$ST/state.json"
strace -f -qq -e trace=execve -o "$W/s2x.strace" "$CCE" --root "$R" --config "$W/config.json" --no-systemd \
	--log stderr apply "$W/v1.yaml" 2>/dev/null
check "re-apply: no exec of containerd at all (strace execve)" \
	bash -c "! grep -E 'execve\(\"[^\"]*/containerd\"' '$W/s2x.strace'"
check_not "re-apply: containerd not restarted" grep -q 'Units:.*containerd.service' "$W/a2.log"

# --- only a registry changes: hosts.toml rewritten, containerd not restarted
sed 's|http://127.0.0.1:5001|http://127.0.0.1:5002|' "$W/v1.yaml" >"$W/v1b.yaml"
check "registry change applies" cce "$R" apply "$W/v1b.yaml" 2>"$W/a2b.log"
check "  ... hosts.toml rewritten" grep -qxF '[host."http://127.0.0.1:5002"]' "$H"
check_not "  ... containerd not restarted (it reads hosts.toml at each pull)" grep -q 'Units:.*containerd.service' "$W/a2b.log"

# --- cgroupfs, one registry dropped
ino=$(stat -c %i "$CFG")
check "second apply succeeds" cce "$R" apply "$W/v2.yaml" 2>"$W/a3.log"
check "SystemdCgroup = false" grep -qx '  SystemdCgroup = false' "$CFG"
check "config.toml replaced (new inode)" test "$(stat -c %i "$CFG")" != "$ino"
check "containerd restarted after the change" grep -q 'Units:.*containerd.service' "$W/a3.log"
check_not "dropped registry: hosts.toml removed" test -e "$R/etc/containerd/certs.d/docker.io/hosts.toml"
check "kept registry: hosts.toml stays" test -s "$H"

# --- config drifted on disk: rewritten and containerd restarted
echo "# edited" >>"$CFG"
check "drift: apply succeeds" cce "$R" apply "$W/v2.yaml" 2>"$W/a4.log"
check_not "drift: edit undone" grep -q '# edited' "$CFG"
check "drift: containerd restarted" grep -q 'Units:.*containerd.service' "$W/a4.log"

# --- plugins (gVisor, Kata as Gardener's extensions write them): tables of
# their own, a later remove drops an earlier one; the real containerd takes it
check "plugins: apply succeeds" cce "$R" apply "$W/v3.yaml" 2>"$W/a5.log"
check "  ... runsc table rendered" grep -qxF '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc]' "$CFG"
check "  ... nested options table" grep -qxF '  ConfigPath = "/etc/containerd/runsc.toml"' "$CFG"
check_not "  ... kata removed by the later remove" grep -q kata "$CFG"
check "  ... containerd restarted for it" grep -q 'Units:.*containerd.service' "$W/a5.log"
check "  ... containerd config dump reads it" bash -c "containerd --config '$CFG' config dump >'$W/dump3.toml' 2>'$W/dump3.err'"
check "  ... in effect: runsc's runtime_type and options" sh -c "grep -qF 'runtime_type = \"io.containerd.runsc.v1\"' '$W/dump3.toml' &&
	grep -qF 'ConfigPath = \"/etc/containerd/runsc.toml\"' '$W/dump3.toml'"
check "  ... runc still there with SystemdCgroup = false" grep -qE '^ *SystemdCgroup = false' "$W/dump3.toml"
sum3=$(sha256sum <"$CFG")
check_not "plugin setting runc's options (rendered by node-agent): apply fails" cce "$R" apply "$W/v4.yaml" 2>"$W/a6.log"
check "  ... failed step containerd named" grep -q '"failedStep":[[:space:]]*"containerd"' "$ST/result.json"
check "  ... reason in the result" grep -q 'plugins\[0\]: plugins.io.containerd.grpc.v1.cri.containerd.runtimes.runc.options is set by node-agent itself too' "$ST/result.json"
check "  ... config.toml left as it was" test "$(sha256sum <"$CFG")" = "$sum3"
check "  ... other files still applied" grep -q 'plain cgroupfs' "$R/etc/na-test/plain.conf"

# --- issue 21: what containerd cannot read never replaces what it reads
osc "$W/v5.yaml" cgroupfs "" "      plugins:
      - path: [io.containerd.grpc.v1.cri, containerd, runtimes, \"a]b\"]
        values: {runtime_type: io.containerd.runc.v2}"
sum5=$(sha256sum <"$CFG")
check_not "plugin path component with ']': apply fails" cce "$R" apply "$W/v5.yaml" 2>"$W/a7.log"
check "  ... refused up front, naming the component" grep -q "plugins\[0\].path\[3\]: 'a\]b' has a byte outside" "$ST/result.json"
check "  ... config.toml left as it was" test "$(sha256sum <"$CFG")" = "$sum5"
check_not "  ... containerd not restarted" grep -q 'Units:.*containerd.service' "$W/a7.log"
osc "$W/v6.yaml" cgroupfs "" "      plugins:
      - path: [io.containerd.grpc.v1.cri, containerd, runtimes, gvisor]
        values: {runtime_type: true}"
check_not "a value containerd cannot decode (bool for a string): apply fails" cce "$R" apply "$W/v6.yaml" 2>"$W/a8.log"
check "  ... containerd's own config dump refused the candidate" grep -q 'containerd refuses the rendered /etc/containerd/config.toml' "$ST/result.json"
check "  ... its reason in the journal" grep -q "Can't convert true(bool) to string" "$W/a8.log"
check "  ... config.toml left as it was" test "$(sha256sum <"$CFG")" = "$sum5"
check_not "  ... no candidate left behind" test -e "$R/etc/containerd/.config.toml.node-agent-candidate"
check_not "  ... containerd not restarted" grep -q 'Units:.*containerd.service' "$W/a8.log"

# --- the version cache follows the binary: a changed one is asked again
# (a copy of containerd under another name stands for an upgrade: the cache
# holds /usr/bin/containerd's stamp, so only a touch of that file would
# show it, and the host's binary is left alone; the unit test covers the
# decision, here the executor sees a changed state.json stamp)
python3 - "$ST/state.json" <<'PY'
import json, sys
p = sys.argv[1]
s = json.load(open(p))
s["containerd"]["binary"] = "0:0:0:0.0:0.0"
json.dump(s, open(p, "w"))
PY
# (a version 2 file there tells the version without asking containerd:
# without one, the binary is asked)
mv "$CFG" "$W/cfg.kept"
strace -f -qq -e trace=execve -o "$W/s9.strace" "$CCE" --root "$R" --config "$W/config.json" --no-systemd \
	--log stderr apply "$W/v3.yaml" 2>/dev/null
check "stale cache stamp: containerd --version run again" grep -qE 'execve\("[^"]*/containerd", \["containerd", "--version"' "$W/s9.strace"
check "  ... and the cache holds the real stamp again" bash -c "! grep -q '0:0:0:0.0:0.0' '$ST/state.json'"
strace -f -qq -e trace=execve -o "$W/s9b.strace" "$CCE" --root "$R" --config "$W/config.json" --no-systemd \
	--log stderr apply "$W/v2.yaml" 2>/dev/null
check "a version 2 file there: containerd not asked its version (the file says it)" \
	bash -c "! grep -qE 'execve\(\"[^\"]*/containerd\", \[\"containerd\", \"--version\"' '$W/s9b.strace'"
check "  ... asked only to load the changed text (config dump)" grep -qE '"config", "dump"' "$W/s9b.strace"

# --- every criConfig the renderer accepts loads in the real containerd:
# the osc fuzz corpus (with its crafted "]", "[" and odd-key seeds)
corpus=$TESTS_DIR/fuzz/corpus/osc
total=0 rendered=0 refused=0
: >"$W/corpus-refused"
for f in "$corpus"/*; do
	total=$((total + 1))
	"$RENDER" 1.6.20 "$f" >"$W/c.toml" 2>/dev/null || continue
	rendered=$((rendered + 1))
	if ! containerd --config "$W/c.toml" config dump >/dev/null 2>"$W/c.err"; then
		refused=$((refused + 1))
		echo "$f: $(head -c 300 "$W/c.err")" >>"$W/corpus-refused"
	fi
done
echo "# corpus: $total inputs, $rendered with a criConfig the renderer accepts, $refused of them refused by containerd"
cat "$W/corpus-refused"
check "corpus: some criConfigs rendered" test "$rendered" -ge 20
check "corpus: containerd loads every one the renderer accepts" test "$refused" -eq 0
check "corpus: the crafted ']' and '[' seeds are refused by the renderer" bash -c \
	"for s in b89de943890fcada9a780c2a3888289aac3c4a07 6766c5e0e32ef425a51d043e21783cdfd90dc324 \
		d5f90fed2e8efef3c438fc4c43a21d39f1b3d06a e31f64ac1d662e553ca70500f4b1a687442fff1f; do
		'$RENDER' 1.6.20 '$corpus/'\$s >/dev/null 2>&1; test \$? -eq 4 || exit 1; done"
check "corpus: the odd-but-allowed keys seed renders" bash -c \
	"'$RENDER' 1.6.20 '$corpus/acb90c26d6efdaca4dade90ea718f80c0d2ef47b' >/dev/null"

# --- the criConfig goes: the drop-in goes with it (containerd.service is an
# OS unit: only our drop-in is removed)
printf 'spec:\n  files:\n  - path: /etc/na-test/plain.conf\n    permissions: 420\n    content: {inline: {data: "plain\\n"}}\n' >"$W/v9.yaml"
check "no criConfig: apply succeeds" cce "$R" apply "$W/v9.yaml" 2>"$W/a9.log"
check_not "  ... drop-in 30-env_config.conf removed" test -e "$R/etc/systemd/system/containerd.service.d/30-env_config.conf"
check_not "  ... config.toml gone: the root had none before node-agent" test -e "$CFG"

# --- issue 36: a GPU image's own config.toml is patched, never replaced
G=$W/gpu
exec_init "$G"
GR=$G/root
GCFG=$GR/etc/containerd/config.toml
mkdir -p "$GR/etc/containerd"
cp "$TESTS_DIR/fixtures/containerd/gpu-image-1.6.toml" "$GCFG"
cce_g() { "$CCE" --root "$GR" --config "$G/config.json" --no-systemd --log stderr "$@"; }
strace -f -qq -e trace=execve -o "$G/s1.strace" "$CCE" --root "$GR" --config "$G/config.json" --no-systemd \
	--log stderr apply "$W/v3.yaml" 2>"$G/a1.log"
check "GPU image: apply succeeds" grep -q 'Applied OSC' "$G/a1.log"
check "  ... the image's file kept before the first patch" cmp -s "$TESTS_DIR/fixtures/containerd/gpu-image-1.6.toml" \
	"$GR/var/lib/cloud-config-exec/containerd-config.image.toml"
check "  ... containerd not asked its version (the file is version 2)" \
	bash -c "! grep -qE '\"containerd\", \"--version\"' '$G/s1.strace'"
check "  ... containerd loaded the patched text before it replaced the file" grep -qE '"config", "dump"' "$G/s1.strace"
for k in 'version = 2' '  default_runtime_name = "nvidia"' '  BinaryName = "/usr/bin/nvidia-container-runtime"' \
	'  enable_cdi = true' '  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]' 'oom_score = -999' \
	'[plugins."io.containerd.monitor.v1.cgroups"]' '[[proxy_plugins_list]]' '  weight = 1.5' \
	'imports = ["/etc/containerd/gpu.d/*.toml", "/etc/containerd/conf.d/*.toml"]' \
	'  config_path = "/etc/containerd/certs.d"' '  SystemdCgroup = false' '  sandbox_image = "127.0.0.1:5000/pause:3.10"' \
	'[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc]'; do
	check "  ... has: $k" grep -qxF "$k" "$GCFG"
done
containerd --config "$GCFG" config dump >"$G/dump.toml" 2>"$G/dump.err"
check "  ... the real containerd loads it" test $? -eq 0
check "  ... in effect: the nvidia runtime and its binary" grep -qF 'BinaryName = "/usr/bin/nvidia-container-runtime"' "$G/dump.toml"
check "  ... in effect: nvidia the default runtime" grep -qF 'default_runtime_name = "nvidia"' "$G/dump.toml"
check "  ... in effect: the runsc plugin" grep -qF 'runtime_type = "io.containerd.runsc.v1"' "$G/dump.toml"
GD=$G/ctd
mkdir -p "$GD"
containerd --config "$GCFG" --root "$GD/root" --state "$GD/state" --address "$GD/sock" >"$GD/log" 2>&1 &
GPID=$!
on_exit "kill $GPID 2>/dev/null; wait $GPID 2>/dev/null"
wait_for 20 bash -c "[ -S '$GD/sock' ] && ctr --address '$GD/sock' version >/dev/null 2>&1"
check "  ... containerd started with it answers ctr version" bash -c "ctr --address '$GD/sock' version | grep -q 'Server:'"
check "  ... and its CRI plugin loaded" bash -c "ctr --address '$GD/sock' plugins ls | grep -q 'io.containerd.grpc.v1 *cri .*ok'"
kill $GPID; wait $GPID 2>/dev/null
before=$(stat -c '%i %y %z' "$GCFG")
strace -f -qq -e trace=execve -o "$G/s2.strace" "$CCE" --root "$GR" --config "$G/config.json" --no-systemd \
	--log stderr apply "$W/v3.yaml" 2>"$G/a2.log"
check "  ... re-apply: the file untouched" test "$before" = "$(stat -c '%i %y %z' "$GCFG")"
check "  ... re-apply: containerd not run at all" bash -c "! grep -qE 'execve\(\"[^\"]*/containerd\"' '$G/s2.strace'"
# gardener-node-agent unmarshals a plugin's values into the table: each key
# they name is replaced whole, the table's other keys stay
osc "$W/g2.yaml" cgroupfs "" "      plugins:
      - path: [io.containerd.grpc.v1.cri, containerd, runtimes, nvidia]
        values: {options: {BinaryName: /usr/local/nvidia/toolkit/nvidia-container-runtime}}"
check "  ... a plugin on the nvidia runtime applies" cce_g apply "$W/g2.yaml" 2>"$G/a3.log"
check "  ... its options replaced whole (BinaryName new, SystemdCgroup of nvidia gone), runsc of the last OSC gone" bash -c "
	python3 - '$GCFG' <<'PY'
import sys, tomllib
d = tomllib.load(open(sys.argv[1], 'rb'))
nv = d['plugins']['io.containerd.grpc.v1.cri']['containerd']['runtimes']['nvidia']
assert nv['options'] == {'BinaryName': '/usr/local/nvidia/toolkit/nvidia-container-runtime'}, nv
assert nv['privileged_without_host_devices'] is False and nv['runtime_type'] == 'io.containerd.runc.v2', nv
assert 'runsc' not in d['plugins']['io.containerd.grpc.v1.cri']['containerd']['runtimes']
PY"
check "  ... the real containerd loads it" bash -c "containerd --config '$GCFG' config dump >/dev/null 2>&1"
check "the criConfig goes: apply succeeds" cce_g apply "$W/v9.yaml" 2>"$G/a4.log"
check "  ... the image's config.toml back byte for byte" cmp -s "$TESTS_DIR/fixtures/containerd/gpu-image-1.6.toml" "$GCFG"
check "  ... containerd restarted for it" grep -q 'Units:.*containerd.service\|restart.*containerd' "$G/a4.log"
check "  ... the kept copy gone" test ! -e "$GR/var/lib/cloud-config-exec/containerd-config.image.toml"
check "a criConfig again: the image's keys are kept again" cce_g apply "$W/v3.yaml" 2>"$G/a5.log"
check "  ... nvidia runtime there" grep -qxF '  BinaryName = "/usr/bin/nvidia-container-runtime"' "$GCFG"

finish
