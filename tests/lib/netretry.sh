# net_retry for the scripts that fetch from a network (scripts/install-deps,
# tests/lib/vm.sh, tests/lib/sdbox.sh): source it.
#
# net_retry WHAT CMD...: a network fetch (a Debian mirror, say) tried up to
# NET_TRIES times (default 4) with a growing pause (15, 45, 90 s), since
# mirrors hiccup; the last failure is one clear line naming WHAT. CMD must be
# safe to run again (it cleans up after itself).
net_retry() {
	local what=$1 try pauses=(15 45 90) tries=${NET_TRIES:-4}
	shift
	for ((try = 1; ; try++)); do
		"$@" && return 0
		if [ "$try" -ge "$tries" ]; then
			echo "error: $what failed $tries times; check the network and the mirror (VM_MIRROR, SDBOX_MIRROR)" >&2
			return 1
		fi
		echo "# $what failed (try $try of $tries), trying again in ${pauses[try - 1]:-90} s" >&2
		sleep "${pauses[try - 1]:-90}"
	done
}
