#!/bin/bash
# The kubelet data volume (gardener-node-agent's bootstrap,
# pkg/nodeagent/bootstrap/kubelet_data_volume.go) on loop devices: sparse
# files in a scratch dir, attached with losetup, gardener-node-agent's
# configuration with bootstrap.kubeletDataVolumeSize under a scratch --root
# (its /var/lib/kubelet is where the volume is mounted), in a private mount
# namespace. Of three devices of that size, one with a DOS partition table,
# one with a file system and a blank one, only the blank one is formatted
# (ext4, label KUBEDEV, quota), /var/lib/kubelet's content is copied onto it
# and it is mounted there with prjquota; the other two keep every byte; one
# of another size is not looked at; without --data-volume-allow-loop loop
# devices are not disks (lsblk's TYPE) and nothing is touched; a second run
# formats nothing. A kernel without CONFIG_QUOTA (this CI's) cannot mount
# Gardener's ext4 with the quota feature: then the mount checks become the
# failure the step must report.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
require_root
for c in losetup unshare blkid mkfs.ext4 mkfs.ext2 findmnt python3; do
	command -v $c >/dev/null || skip_all "$c not installed"
done
if [ -z "${NA_IN_MNTNS:-}" ]; then
	rm -f "$_scratch_list"
	trap - EXIT
	NA_IN_MNTNS=1 exec unshare -m --propagation private -- bash "$0" "$@"
fi
losetup -f >/dev/null 2>&1 || skip_all "no free loop device (losetup -f)"

W=$(scratch)
exec_init "$W"
R=$W/root
# An odd size no real disk of this machine has: 96 MiB + 12 KiB.
SIZE=$((96 * 1024 * 1024 + 12288))
mkdir -p "$R/var/lib/gardener-node-agent" "$R/var/lib/kubelet/pki"
echo "kept" >"$R/var/lib/kubelet/pki/kubelet.crt"
chmod 0600 "$R/var/lib/kubelet/pki/kubelet.crt"
cat >"$R/var/lib/gardener-node-agent/config-v1.150.0.yaml" <<EOT
apiVersion: nodeagent.config.gardener.cloud/v1alpha1
kind: NodeAgentConfiguration
bootstrap:
  kubeletDataVolumeSize: $SIZE
EOT

LOOPS=()
attach() { # attach FILE VAR: the loop device into VAR (not in a subshell: LOOPS must keep it)
	local d
	d=$(losetup -f --show "$1") || return 1
	LOOPS+=("$d")
	printf -v "$2" %s "$d"
}
cleanup_loops() {
	umount "$R/var/lib/kubelet" 2>/dev/null
	for d in "${LOOPS[@]}"; do losetup -d "$d" 2>/dev/null; done
}
on_exit cleanup_loops

truncate -s $SIZE "$W/pt.img" "$W/fs.img" "$W/blank.img"
truncate -s $((SIZE + 4096)) "$W/other.img"
# a DOS partition table (one Linux partition), no file system on the disk
python3 - "$W/pt.img" <<'PY'
import struct, sys
mbr = bytearray(512)
mbr[446:462] = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", 2048, 16384)
mbr[510:512] = b"\x55\xaa"
with open(sys.argv[1], "r+b") as f:
    f.write(mbr)
PY
mkfs.ext2 -q -F "$W/fs.img" >/dev/null
attach "$W/pt.img" PT && attach "$W/fs.img" FS && attach "$W/blank.img" BL && attach "$W/other.img" OT ||
	skip_all "cannot attach loop devices"
echo "# devices: pt=$PT fs=$FS blank=$BL other=$OT"
check "blkid -p sees the partition table" sh -c "blkid -p -o export '$PT' | grep -qx PTTYPE=dos"
# Gardener's -O quota needs a kernel with CONFIG_QUOTA to mount: probe it
truncate -s 16M "$W/q.img"
mkfs.ext4 -q -F -O quota "$W/q.img" >/dev/null 2>&1
mkdir -p "$W/q"
QUOTA=0
if attach "$W/q.img" Q && mount -t ext4 "$Q" "$W/q" 2>/dev/null; then
	QUOTA=1
	umount "$W/q"
fi
[ $QUOTA = 1 ] || echo "# this kernel cannot mount ext4 with the quota feature (no CONFIG_QUOTA): the mount checks are replaced by the failure they must give"
sum() { sha256sum "$W/pt.img" "$W/fs.img" "$W/other.img" | cut -c1-64 | tr '\n' ' '; }
sum0=$(sum)

# --- loop devices are not disks (Gardener: lsblk TYPE="disk"): nothing touched
cce "$R" kubelet-data-volume 2>"$W/a0.log"
check "without --data-volume-allow-loop: fails (no disk of that size)" test $? -eq 1
check "  ... saying so" grep -q "No unformatted disk of $SIZE bytes" "$W/a0.log"
check "  ... the blank device still blank" sh -c "blkid -p '$BL' >/dev/null; test \$? -eq 2"

# --- the blank one of the size, and only it
cce "$R" --data-volume-allow-loop kubelet-data-volume 2>"$W/a1.log"
rc=$?
if [ $QUOTA = 1 ]; then
	check "with loop devices allowed: succeeds" test $rc -eq 0
else
	check "with loop devices allowed: formats, then the mount fails (exit 1) naming mount" sh -c \
		"test $rc -eq 1 && grep -q '/usr/bin/mount failed' '$W/a1.log'"
fi
check "  ... the blank device formatted ext4 KUBEDEV" sh -c "blkid -p -o export '$BL' | grep -qx TYPE=ext4 &&
	blkid -p -o export '$BL' | grep -qx LABEL=KUBEDEV"
check "  ... with the quota feature" sh -c "dumpe2fs -h '$BL' 2>/dev/null | grep -q 'features:.*quota' || ! command -v dumpe2fs >/dev/null"
check "  ... the partition-table device refused, named" grep -q "/dev/${PT#/dev/} .*has a partition table" "$W/a1.log"
check "  ... the file-system device refused, named" grep -q "/dev/${FS#/dev/} .*has a file system" "$W/a1.log"
check "  ... neither changed, nor the device of another size (every byte)" test "$(sum)" = "$sum0"
if [ $QUOTA = 1 ]; then
	check "  ... mounted on <root>/var/lib/kubelet" test "$(findmnt -n -o SOURCE "$R/var/lib/kubelet")" = "$BL"
	check "  ... with prjquota and errors=remount-ro" sh -c "findmnt -n -o OPTIONS '$R/var/lib/kubelet' | grep -q prjquota &&
		findmnt -n -o OPTIONS '$R/var/lib/kubelet' | grep -q errors=remount-ro"
	check "  ... /var/lib/kubelet's content copied onto it, mode kept" \
		test "$(cat "$R/var/lib/kubelet/pki/kubelet.crt")$(stat -c %a "$R/var/lib/kubelet/pki/kubelet.crt")" = kept600
fi
check "  ... no temporary mount point left" test -z "$(ls -A "$R/run" 2>/dev/null)"
check "  ... nothing left mounted below the root but the volume" test "$(findmnt -rn -o TARGET | grep -c "^$R/run")" -eq 0

# --- again: already there, nothing formatted
cce "$R" --data-volume-allow-loop kubelet-data-volume 2>"$W/a2.log"
check "second run: succeeds" test $? -eq 0
check_not "  ... formats nothing" grep -q 'Formatting' "$W/a2.log"
[ $QUOTA = 0 ] || check "  ... the mount stays" test "$(findmnt -n -o SOURCE "$R/var/lib/kubelet")" = "$BL"
check "  ... says it is there" grep -q "already has the ext4 file system KUBEDEV\|A device labelled KUBEDEV exists" "$W/a2.log"
check "  ... the other devices still untouched" test "$(sum)" = "$sum0"

# --- an apply with the size configured: under systemd it would start
# cloud-config-exec-kubelet-data-volume.service first; without, it says so
# and goes on (the verb is run by hand)
printf 'spec:\n  files:\n  - path: /etc/na-test/a.conf\n    permissions: 420\n    content: {inline: {data: "a"}}\n' >"$W/osc.yaml"
cce "$R" apply "$W/osc.yaml" 2>"$W/a3.log"
check "apply without systemd: succeeds" test $? -eq 0
check "  ... saying the volume is not formatted here" grep -q "kubeletDataVolumeSize is $SIZE, but without systemd" "$W/a3.log"
check "  ... the OSC applied" test -s "$R/etc/na-test/a.conf"

finish
