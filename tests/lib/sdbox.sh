#!/bin/bash
# sdbox.sh - boot a throw-away Debian with a real systemd as PID 1 of its own
# systemd-nspawn container, so that sd-bus tests and systemctl can talk to a
# real manager without touching the host (../shared/notes/systemd-in-nspawn.md).
#
#   eval "$(sdbox.sh up)"   boot; prints export lines: SDBOX_LEADER, SDBOX_ROOT,
#                           DBUS_SYSTEM_BUS_ADDRESS (the box's dbus-daemon, usable
#                           from the host with sd_bus_open_system())
#   sdbox.sh env            print those export lines again
#   sdbox.sh ctl ARGS...    systemctl inside the box
#   sdbox.sh sh CMD...      run CMD inside the box (its /, its PID namespace)
#   sdbox.sh down           poweroff, kill leftovers, remove cgroups and rootfs
#   sdbox.sh fetch          only debootstrap the tree into the cache (network)
#
# Environment:
#   SDBOX_STATE    directory for rootfs, pids and logs (default $PWD/.sdbox);
#                  one box per state directory, so parallel boxes need their own.
#                  Keep it outside the git tree (e.g. /var/tmp/node-agent-sdbox-$$).
#   SDBOX_SRC      host directory bind-mounted read-only at /src (default $PWD)
#   SDBOX_INCLUDE  extra debootstrap packages, comma-separated, beyond the
#                  suite's set below (which already runs the project's
#                  binaries and its package); a box with extras gets a tree
#                  of its own
#   SDBOX_CACHE_DIR  where the debootstrapped trees are kept as tars, one per
#                  suite, mirror and package set (default $B/sdbox-cache under
#                  a test run, else /var/cache/node-agent-sdbox); a box
#                  unpacks its tree from there (~2 s instead of ~40 s).
#   SDBOX_MIRROR   Debian mirror (default http://deb.debian.org/debian)
#   SDBOX_SUITE    default bookworm
#   SDBOX_KEEP_ROOTFS=1  down leaves the unpacked tree for the next up
#   SDBOX_SETUP    a command run on the host as `sh -c "$SDBOX_SETUP" setup ROOTFS`
#                  after the tree exists and before it boots (install files,
#                  enable units); up fails when it fails
#
# Needs root, and: apt-get install -y --no-install-recommends systemd-container
# debootstrap debian-archive-keyring. Host unit files, /run and cgroups outside
# our own sdbox-NAME cgroup are never touched.
set -euo pipefail

STATE=${SDBOX_STATE:-$PWD/.sdbox}
ROOTFS=$STATE/rootfs
MIRROR=${SDBOX_MIRROR:-http://deb.debian.org/debian}
SUITE=${SDBOX_SUITE:-bookworm}
# Each suite's tree has one package set, so that every box of a suite boots
# the same cached tree (one debootstrap per suite and checkout, made before
# the tests by tests/fetch): systemd and dbus, sshd, and the package's
# Depends, so that apt-get needs no network in the box (trixie renamed two
# libraries in the 64-bit time_t transition; the new ones provide the old
# names). trixie also gets its refpolicy and setools: the package's SELinux
# module, built on Debian 12, is linked into that policy store and checked.
case $SUITE in
bookworm) SUITE_INCLUDE=openssh-server,libcurl4,libcjson1,libseccomp2,libyaml-0-2,libxxhash0,libssl3 ;;
trixie) SUITE_INCLUDE=openssh-server,libcurl4t64,libcjson1,libseccomp2,libyaml-0-2,libxxhash0,libssl3t64,selinux-policy-default,setools ;;
*) SUITE_INCLUDE= ;;
esac
INCLUDE=systemd,dbus${SUITE_INCLUDE:+,$SUITE_INCLUDE}${SDBOX_INCLUDE:+,$SDBOX_INCLUDE}
# Under a test run ($B set) the cache is per checkout, in the build
# directory: a clean checkout (CI) makes its own trees and never depends on
# what an earlier run left.
CACHE_DIR=${SDBOX_CACHE_DIR:-${B:+$B/sdbox-cache}}
CACHE_DIR=${CACHE_DIR:-/var/cache/node-agent-sdbox}

source "$(dirname "${BASH_SOURCE[0]}")/netretry.sh"

log() { printf '[sdbox %s] %s\n' "$(date +%T)" "$*" >&2; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
leader() { cat "$STATE/leader"; }

# The cgroup directories we create: our own sdbox-NAME below the named
# systemd hierarchy and the unified one (hybrid hosts, tested), or below the
# root of a pure cgroup v2 host (untested: no such host here).
cgroup_dirs() {
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		echo "/sys/fs/cgroup/$1"
	else
		for h in systemd unified; do
			if [ -d "/sys/fs/cgroup/$h" ]; then echo "/sys/fs/cgroup/$h/$1"; fi
		done
	fi
}

print_env() {
	echo "export SDBOX_LEADER=$(leader)"
	echo "export SDBOX_ROOT=/proc/$(leader)/root"
	echo "export DBUS_SYSTEM_BUS_ADDRESS=unix:path=/proc/$(leader)/root/run/dbus/system_bus_socket"
}

# The cached tree of this suite and package set: a tar in $CACHE_DIR.
tree_tar() {
	local key
	key=$(printf '%s %s %s' "$SUITE" "$MIRROR" "$INCLUDE" | sha256sum | cut -c1-12)
	echo "$CACHE_DIR/rootfs-$SUITE-$key.tar"
}

# One debootstrap into DIR; a failed one leaves no tree behind.
debootstrap_once() {
	if ! debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$1" "$MIRROR" \
		>"$CACHE_DIR/debootstrap-$SUITE.log" 2>&1; then
		tail -5 "$CACHE_DIR/debootstrap-$SUITE.log" | sed 's/^/#   /' >&2
		rm -rf "$1"
		return 1
	fi
}

# fetch: the tree into the cache unless it is there (network: outside any
# private namespace). One fetch per tree at a time: boxes booting side by
# side wait for the first one's tar (written aside and renamed).
fetch() {
	local tar tmp t0
	tar=$(tree_tar)
	mkdir -p "$CACHE_DIR"
	exec 8>"$tar.lock"
	flock 8
	if [ ! -f "$tar" ]; then
		t0=$(now_ms)
		tmp=$(mktemp -d "$CACHE_DIR/tree.XXXXXX")
		log "debootstrap $SUITE ($INCLUDE) from $MIRROR"
		if ! net_retry "debootstrap $SUITE from $MIRROR (log: $CACHE_DIR/debootstrap-$SUITE.log)" \
			debootstrap_once "$tmp/root"; then
			rm -rf "$tmp"
			exec 8>&-
			return 1
		fi
		echo sdbox >"$tmp/root/etc/hostname" # debootstrap copied the host's
		ln -sf /dev/null "$tmp/root/etc/systemd/system/console-getty.service"
		rm -rf "$tmp/root/var/cache/apt/archives/"*.deb
		tar -C "$tmp/root" -cpf "$tmp/tar" . && mv -f "$tmp/tar" "$tar"
		rm -rf "$tmp"
		log "cached the tree in $tar ($(($(now_ms) - t0)) ms)"
	fi
	exec 8>&-
	[ -f "$tar" ]
}

# Fills $ROOTFS from the cached tree (fetched first if need be).
make_rootfs() {
	local tar
	fetch || return 1
	tar=$(tree_tar)
	log "unpacking $tar"
	mkdir -p "$ROOTFS" && tar -C "$ROOTFS" -xpf "$tar"
}

up() {
	local name t0 t1 t2 st i c d
	mkdir -p "$STATE"
	if [ -e "$STATE/nspawn.pid" ]; then
		log "a box is already up in $STATE (run down first)"
		exit 1
	fi
	name=sdbox$$
	t0=$(now_ms)
	if [ ! -x "$ROOTFS/lib/systemd/systemd" ]; then
		rm -rf "$ROOTFS"
		make_rootfs
	fi
	if [ -n "${SDBOX_SETUP:-}" ]; then
		if ! sh -c "$SDBOX_SETUP" setup "$ROOTFS" >&2; then log "SDBOX_SETUP failed"; exit 1; fi
	fi
	t1=$(now_ms)
	echo "$name" >"$STATE/name"
	for d in $(cgroup_dirs "sdbox-$name"); do mkdir -p "$d"; done
	rm -f "$STATE/leader"
	# A private mount namespace with a tmpfs on /run, so nspawn's
	# /run/systemd/nspawn/* never lands on the host's disk-backed /run; the
	# launcher moves into our cgroup first, so that nspawn --keep-unit makes
	# payload/ and supervisor/ below it instead of at the cgroup root.
	setsid unshare --mount --propagation private -- /bin/sh -c '
		for d in $0; do echo $$ >"$d/cgroup.procs"; done
		mount -t tmpfs -o mode=755 sdbox-run /run
		exec systemd-nspawn --quiet --register=no --keep-unit --private-network \
			--link-journal=no --console=read-only --machine="$1" \
			-D "$2" --bind-ro="$3":/src -b' \
		"$(cgroup_dirs "sdbox-$name" | tr '\n' ' ')" "$name" "$ROOTFS" "${SDBOX_SRC:-$PWD}" \
		</dev/null >"$STATE/console.log" 2>&1 &
	echo $! >"$STATE/nspawn.pid"
	# The box's PID 1 is the child of nspawn whose comm is "systemd".
	for i in $(seq 1 300); do
		for c in $(ps -o pid= --ppid "$(cat "$STATE/nspawn.pid")" 2>/dev/null); do
			if [ "$(cat "/proc/$c/comm" 2>/dev/null)" = systemd ]; then echo "$c" >"$STATE/leader"; fi
		done
		if [ -s "$STATE/leader" ] && [ -S "/proc/$(leader)/root/run/dbus/system_bus_socket" ]; then break; fi
		if ! kill -0 "$(cat "$STATE/nspawn.pid")" 2>/dev/null; then
			log "nspawn exited"; cat "$STATE/console.log" >&2; exit 1
		fi
		sleep 0.1
	done
	if [ ! -s "$STATE/leader" ]; then log "the box did not come up"; cat "$STATE/console.log" >&2; exit 1; fi
	st=$(timeout 60 nsenter -t "$(leader)" -m -p -- systemctl is-system-running --wait || true)
	case "$st" in
	running) ;;
	degraded) nsenter -t "$(leader)" -m -p -- systemctl --no-pager --failed >&2 ;;
	*) log "box state '$st'"; cat "$STATE/console.log" >&2; exit 1 ;;
	esac
	t2=$(now_ms)
	echo "rootfs_ms=$((t1 - t0)) boot_ms=$((t2 - t1))" >"$STATE/timings"
	log "rootfs $((t1 - t0)) ms, boot $((t2 - t1)) ms, state=$st leader=$(leader)"
	print_env
}

down() {
	local p l name d i
	p=$(cat "$STATE/nspawn.pid" 2>/dev/null || true)
	if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
		kill -TERM "$p"  # nspawn turns this into SIGRTMIN+3: a clean poweroff
		for i in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$p" 2>/dev/null; then log "nspawn hung, SIGKILL"; kill -KILL "$p"; sleep 0.5; fi
	fi
	# nspawn gone but the box's init orphaned (nspawn was SIGKILLed)? Killing
	# a PID namespace's init kills every process in it.
	l=$(cat "$STATE/leader" 2>/dev/null || true)
	if [ -n "$l" ] && [ "$(cat "/proc/$l/comm" 2>/dev/null)" = systemd ] &&
		[ "$(readlink "/proc/$l/root")" != / ]; then
		log "orphaned box init $l, SIGKILL"; kill -KILL "$l"
		for i in $(seq 1 100); do [ -e "/proc/$l" ] || break; sleep 0.1; done
	fi
	name=$(cat "$STATE/name" 2>/dev/null || true)
	if [ -n "$name" ]; then
		for d in $(cgroup_dirs "sdbox-$name"); do
			if [ -d "$d" ]; then find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
			if [ -d "$d" ]; then log "cgroup $d still busy: $(cat "$d/cgroup.procs")"; fi
		done
	fi
	rm -f "$STATE/nspawn.pid" "$STATE/leader" "$STATE/name" "$STATE/.#rootfs.lck"
	if [ -z "${SDBOX_KEEP_ROOTFS:-}" ]; then
		rm -rf "$ROOTFS" "$STATE/console.log" "$STATE/debootstrap.log" "$STATE/timings"
		rmdir "$STATE" 2>/dev/null || true
	fi
	log "down"
}

case "${1:-}" in
up) up ;;
fetch) fetch ;;
env) print_env ;;
sh) shift; exec nsenter -t "$(leader)" -m -p -- env -u DBUS_SYSTEM_BUS_ADDRESS "$@" ;;
ctl) shift; exec nsenter -t "$(leader)" -m -p -- env -u DBUS_SYSTEM_BUS_ADDRESS systemctl --no-pager "$@" ;;
down) down ;;
*) echo "usage: $0 up|fetch|env|down|sh CMD...|ctl ARGS..." >&2; exit 2 ;;
esac
