# A real node for the tests: a Debian 12 VM (its own kernel, systemd as PID
# 1, unified cgroup v2 with BPF, its own hostname) under qemu, in a private
# network namespace. Facts and pitfalls: ../shared/notes/real-node-vm.md.
# Source after common.sh (and kube.sh: the namespace is kube_netns's).
#
#   vm_require                 skip unless qemu, debootstrap and mkfs.ext4 are there
#   vm_fetch                   the debootstrap tarball into $VM_CACHE_DIR
#                              (network: call it outside any private namespace)
#   vm_image                   builds the image once (or reuses it while
#                              vm_configure and the package list are unchanged): the
#                              tarball from vm_fetch, tree configured,
#                              ext4 image by mkfs.ext4 -d (no loop device) in
#                              $VM_IMAGE_DIR; sets VM_IMG VM_KERNEL VM_INITRD VM_KEY
#   vm_accel                   prints the qemu accelerator arguments: KVM only
#                              where it really runs stock kernels (not kvm-pvm)
#   vm_boot DIR [APPEND]       boots a snapshot of the image (the image stays
#                              pristine) inside the current network namespace:
#                              the guest is 10.0.2.15 and reaches this
#                              namespace's 127.0.0.1 as 10.0.2.2, nothing else;
#                              ssh forwarded from 127.0.0.1:$VM_SSH_PORT; waits
#                              for ssh against a deadline; sets VM_PID VM_DIR
#   vm_ssh CMD...              runs CMD in the guest as root
#   vm_copy FILE GUESTPATH     copies a file into the guest
#   vm_stop                    poweroff, wait for qemu's pid (deadline), else kill
#
# qemu is stopped by pid on exit. The guest sees no outside network: the
# image carries every package the tests install (the .deb's dependencies).

# The debootstrap tarball is per checkout (under the build directory, so a
# clean checkout, as in CI, fetches its own and never depends on what an
# earlier run left); point VM_CACHE_DIR elsewhere to share one.
VM_CACHE_DIR=${VM_CACHE_DIR:-$B/vm-cache}
VM_IMAGE_DIR=${VM_IMAGE_DIR:-$B/vm}
VM_SUITE=bookworm
VM_MIRROR=${VM_MIRROR:-http://deb.debian.org/debian}
# Runtime libraries of node-agent's .deb (no network in the guest to fetch
# them), containerd for the kubelet scenario, SELinux (vm-selinux.sh).
VM_INCLUDE=systemd,systemd-sysv,udev,dbus,openssh-server,iproute2,curl,ca-certificates,linux-image-amd64,libcjson1,libxxhash0,libyaml-0-2,libseccomp2,libcurl4,containerd,selinux-policy-default,policycoreutils,selinux-utils,auditd
VM_SSH_PORT=${VM_SSH_PORT:-2222}
VM_MEM=${VM_MEM:-1024}

vm_log() { echo "# vm: $*" >&2; }
# The node enforces SELinux: the labelling and the kernel arguments.
source "$(dirname "${BASH_SOURCE[0]}")/vm-selinux.sh"

vm_require() {
	local t
	for t in qemu-system-x86_64 debootstrap mkfs.ext4 ssh ssh-keygen; do
		command -v "$t" >/dev/null || skip_all "needs $t (scripts/install-deps: qemu-system-x86 debootstrap)"
	done
}

# The accelerator: /dev/kvm here may be kvm-pvm (a paravirtual KVM that runs
# only PVM-enabled guest kernels; Debian's hangs after "Probing EDD"), so
# KVM only with a VMX/SVM module loaded and no kvm_pvm; else TCG.
vm_accel() {
	if [ -z "${VM_FORCE_TCG:-}" ] && [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ] &&
		{ [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then
		echo "-accel kvm -cpu host"
	else
		echo "-accel tcg,tb-size=256 -cpu max"
	fi
}

# The debootstrap tree as a tarball in $VM_CACHE_DIR, keyed by suite and
# package list, with its SHA-256 beside it (a damaged or half-written
# tarball is never used). vm_fetch makes it: it needs the network, so it
# runs outside any private namespace (080 calls it before kube_netns,
# scripts/test-all at its start), each debootstrap tried again on a mirror
# failure (net_retry). vm_tarball, inside the namespace, only finds it.
vm_tarball_path() {
	local key
	key=$(printf '%s %s' "$VM_SUITE" "$VM_INCLUDE" | sha256sum | cut -c1-12)
	echo "$VM_CACHE_DIR/debootstrap-$VM_SUITE-$key.tar"
}
vm_tarball_ok() {
	[ -f "$1" ] && [ -f "$1.sha256" ] && [ "$(sha256sum <"$1" | cut -d' ' -f1)" = "$(cat "$1.sha256")" ]
}
_vm_debootstrap() { # TAR: one try, leaving nothing behind on failure
	local tar=$1 tmp rc=0
	tmp=$(mktemp -d "$VM_CACHE_DIR/tree.XXXXXX")
	debootstrap --variant=minbase --include="$VM_INCLUDE" "$VM_SUITE" "$tmp/root" "$VM_MIRROR" \
		>"$VM_CACHE_DIR/debootstrap.log" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ]; then
		tail -5 "$VM_CACHE_DIR/debootstrap.log" | sed 's/^/#   /' >&2
	else
		rm -rf "$tmp/root/var/cache/apt/archives/"*.deb
		tar -C "$tmp/root" -cpf "$tar.tmp" . && sha256sum <"$tar.tmp" | cut -d' ' -f1 >"$tar.sha256" &&
			mv "$tar.tmp" "$tar" || rc=1
	fi
	rm -rf "$tmp" "$tar.tmp"
	return "$rc"
}
vm_fetch() {
	mkdir -p "$VM_CACHE_DIR"
	# One fetch at a time per cache: a second waits and then finds it.
	(
		flock 9
		_vm_fetch
	) 9>"$VM_CACHE_DIR/.lock"
}
_vm_fetch() {
	local tar t0=$SECONDS
	tar=$(vm_tarball_path)
	vm_tarball_ok "$tar" && return 0
	rm -f "$tar" "$tar.sha256"
	vm_log "debootstrap $VM_SUITE from $VM_MIRROR into $tar"
	net_retry "debootstrap $VM_SUITE from $VM_MIRROR (log: $VM_CACHE_DIR/debootstrap.log)" _vm_debootstrap "$tar" ||
		return 1
	vm_log "debootstrap done in $((SECONDS - t0)) s"
}
vm_tarball() {
	local tar
	tar=$(vm_tarball_path)
	if ! vm_tarball_ok "$tar"; then
		vm_log "no verified debootstrap tarball $tar: vm_fetch makes it, outside the private network namespace"
		return 1
	fi
	echo "$tar"
}

# Configures the unpacked tree: root login by the test's key only, static
# address, networkd + wait-online, no first-boot prompt, a serial console.
vm_configure() {
	local r=$1
	echo node >"$r/etc/hostname"
	printf '127.0.0.1 localhost\n127.0.1.1 node\n' >"$r/etc/hosts"
	printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' >"$r/etc/fstab"
	mkdir -p "$r/etc/systemd/network" "$r/root/.ssh"
	cat >"$r/etc/systemd/network/10-eth.network" <<-'EOF'
	[Match]
	Type=ether
	[Network]
	Address=10.0.2.15/24
	Gateway=10.0.2.2
	EOF
	: >"$r/etc/resolv.conf"
	ln -sf /lib/systemd/system/systemd-networkd.service "$r/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
	mkdir -p "$r/etc/systemd/system/network-online.target.wants"
	ln -sf /lib/systemd/system/systemd-networkd-wait-online.service \
		"$r/etc/systemd/system/network-online.target.wants/systemd-networkd-wait-online.service"
	ln -sf /dev/null "$r/etc/systemd/system/systemd-firstboot.service"
	ln -sf /dev/null "$r/etc/systemd/system/apt-daily.timer"
	ln -sf /dev/null "$r/etc/systemd/system/apt-daily-upgrade.timer"
	# man-db's trigger rebuilds its index on every install, upgrade and
	# purge: tens of seconds under TCG for nothing a test looks at.
	rm -f "$r/var/lib/man-db/auto-update"
	# Boot time under TCG: udev loads a module for every device it finds,
	# each load tens of seconds of emulation at boot (kvm alone took 24 s:
	# -cpu max offers VMX). None of these serve a node test; qemu runs with
	# -nodefaults (no VGA, CD-ROM, floppy or parallel port) besides.
	printf 'blacklist %s\n' kvm kvm_intel kvm_amd cfg80211 pcspkr parport parport_pc sr_mod cdrom floppy \
		joydev serio_raw bochs drm drm_kms_helper ttm >"$r/etc/modprobe.d/vm-test.conf"
	ln -sf /dev/null "$r/etc/systemd/system/e2scrub_reap.service"
	# containerd is for the kubelet scenario: not started unless asked.
	rm -f "$r/etc/systemd/system/multi-user.target.wants/containerd.service"
	cp "$VM_IMAGE_DIR/id_ed25519.pub" "$r/root/.ssh/authorized_keys"
	chmod 0700 "$r/root/.ssh"
	chmod 0600 "$r/root/.ssh/authorized_keys"
	printf 'PermitRootLogin prohibit-password\nUseDNS no\n' >"$r/etc/ssh/sshd_config.d/10-vm.conf"
	# Host keys made now: the image is shared by every boot of a run.
	rm -f "$r"/etc/ssh/ssh_host_*
	ssh-keygen -q -t ed25519 -N '' -C root@node -f "$r/etc/ssh/ssh_host_ed25519_key"
	echo 'root:*' | chpasswd -R "$r" -e 2>/dev/null || true
	# Deterministic machine-id per image: systemd would otherwise generate
	# one at every (snapshot) boot.
	systemd-machine-id-setup --root="$r" >/dev/null 2>&1 || true
}

# Builds the image, or reuses it when vm.sh has not changed since.
vm_image() {
	local tar key stamp tree t0
	t0=$(date +%s)
	# Rebuilt when what goes into it changes (not on every edit of vm.sh).
	key=$( (declare -f vm_configure vm_selinux_label; echo "$VM_SUITE $VM_INCLUDE $VM_SELINUX") | sha256sum | cut -c1-16)
	VM_IMG=$VM_IMAGE_DIR/node.img
	stamp=$VM_IMAGE_DIR/stamp
	if [ -f "$VM_IMG" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$key" ]; then
		VM_KERNEL=$VM_IMAGE_DIR/vmlinuz VM_INITRD=$VM_IMAGE_DIR/initrd.img VM_KEY=$VM_IMAGE_DIR/id_ed25519
		vm_log "image reused ($VM_IMG)"
		return 0
	fi
	rm -rf "$VM_IMAGE_DIR"
	mkdir -p "$VM_IMAGE_DIR"
	ssh-keygen -q -t ed25519 -N '' -C vm-test -f "$VM_IMAGE_DIR/id_ed25519"
	tar=$(vm_tarball) || return 1
	tree=$VM_IMAGE_DIR/tree
	mkdir -p "$tree"
	tar -C "$tree" -xpf "$tar" || return 1
	vm_configure "$tree"
	vm_selinux_label "$tree" || return 1
	cp "$(ls "$tree"/boot/vmlinuz-* | tail -1)" "$VM_IMAGE_DIR/vmlinuz"
	cp "$(ls "$tree"/boot/initrd.img-* | tail -1)" "$VM_IMAGE_DIR/initrd.img"
	mkfs.ext4 -q -F -L node -d "$tree" "$VM_IMG" 2G || return 1
	rm -rf "$tree"
	echo "$key" >"$stamp"
	VM_KERNEL=$VM_IMAGE_DIR/vmlinuz VM_INITRD=$VM_IMAGE_DIR/initrd.img VM_KEY=$VM_IMAGE_DIR/id_ed25519
	vm_log "image built in $(($(date +%s) - t0)) s ($(du -sh --apparent-size "$VM_IMG" | cut -f1) apparent, $(du -sh "$VM_IMG" | cut -f1) allocated)"
}

# VM_SSH_TIMEOUT (seconds): a deadline for the whole command.
vm_ssh() {
	${VM_SSH_TIMEOUT:+timeout $VM_SSH_TIMEOUT} ssh -q -i "$VM_KEY" -p "$VM_SSH_PORT" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o ConnectTimeout=10 -o BatchMode=yes -o ServerAliveInterval=5 -o ServerAliveCountMax=6 root@127.0.0.1 "$@"
}

vm_copy() { vm_ssh "cat >'$2'" <"$1"; }

# vm_boot DIR [KERNEL-ARGS]: boots and waits for ssh (deadline VM_BOOT_SECONDS,
# default 240 s under TCG); prints the seconds to ssh into VM_BOOT_S.
# VM_DRIVES: more qemu -drive arguments (disks for a scenario).
vm_boot() {
	VM_DIR=$1
	local append="root=/dev/vda rw console=ttyS0 $(vm_selinux_append) ${2:-}" t0 deadline
	mkdir -p "$VM_DIR"
	t0=$(date +%s.%N)
	# shellcheck disable=SC2046,SC2086 # vm_accel's words, VM_DRIVES' arguments
	qemu-system-x86_64 $(vm_accel) -m "$VM_MEM" -smp 2 -display none -nodefaults \
		-kernel "$VM_KERNEL" -initrd "$VM_INITRD" -append "$append" \
		-drive "file=$VM_IMG,format=raw,if=virtio,snapshot=${VM_SNAPSHOT:-on}" ${VM_DRIVES:-} \
		-netdev "user,id=n0,net=10.0.2.0/24,host=10.0.2.2,hostfwd=tcp:127.0.0.1:$VM_SSH_PORT-:22" \
		-device virtio-net-pci,netdev=n0 \
		-serial "file:$VM_DIR/console.log" -monitor none >"$VM_DIR/qemu.log" 2>&1 &
	VM_PID=$!
	on_exit "vm_kill $VM_PID"
	if vm_wait_ssh "${VM_BOOT_SECONDS:-240}"; then
		VM_BOOT_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
		return 0
	fi
	vm_log "no ssh within ${VM_BOOT_SECONDS:-240} s; console tail:"
	tail -n 30 "$VM_DIR/console.log" | sed 's/^/#   /' >&2
	return 1
}

# vm_wait_ssh SECONDS: until ssh answers (slirp accepts the TCP connection
# before the guest does: a deadline, not a count of tries).
vm_wait_ssh() {
	local deadline=$(($(date +%s) + $1))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		kill -0 "$VM_PID" 2>/dev/null || return 1
		VM_SSH_TIMEOUT=15 vm_ssh true 2>/dev/null && return 0
		sleep 1
	done
	return 1
}

vm_kill() { kill "$1" 2>/dev/null && wait "$1" 2>/dev/null; true; }

# Poweroff (the guest flushes nothing: the disk is a snapshot), wait for
# qemu's pid; kill it after the deadline.
vm_stop() {
	local i
	vm_ssh 'systemctl poweroff --no-block' >/dev/null 2>&1 || true
	for ((i = 0; i < 300; i++)); do kill -0 "$VM_PID" 2>/dev/null || break; sleep 0.1; done
	vm_kill "$VM_PID"
}
