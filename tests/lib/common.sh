# Shared helpers for tests/integration/*.sh: TAP-ish results and scratch dirs.
# Source it; then call ok/fail/check and finally `finish`.
set -uo pipefail
: "${B:?B must point at the build directory}"
TESTS_DIR=${TESTS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
_pass=0 _fail=0
_cleanups=()

ok()   { echo "ok - $*"; _pass=$((_pass + 1)); }
fail() { echo "not ok - $*"; _fail=$((_fail + 1)); }
# check "description" command args...: ok when the command succeeds.
check() { local d=$1; shift; if "$@"; then ok "$d"; else fail "$d"; fi; }
# check_not "description" command args...: ok when the command fails.
check_not() { local d=$1; shift; if "$@"; then fail "$d"; else ok "$d"; fi; }
skip_all() { echo "SKIP: $*"; exit 77; }
# sanitized BIN: BIN is a make check-sanitize build (ASan runtime linked in).
sanitized() { { nm "$1"; nm -D "$1"; } 2>/dev/null | grep __asan_init >/dev/null; }
require_root() { [ "$(id -u)" -eq 0 ] || skip_all "needs root (sshd, chown, namespaces)"; }
# wait_for SECONDS CMD...: polls CMD every 0.1 s until it succeeds or
# SECONDS have passed.
wait_for() {
	local n=$(($1 * 10)) i
	shift
	for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.1; done
	return 1
}
# sized CI SOAK: a campaign's size (kills, rounds, outage seconds...). CI
# runs the CI size; `make soak` (TEST_SIZE=soak) the long one. One parameter
# for every campaign, so a soak run is one command and CI stays in its time.
sized() { if [ "${TEST_SIZE:-ci}" = soak ]; then echo "$2"; else echo "$1"; fi; }
source "$TESTS_DIR/lib/netretry.sh"
# dump TITLE CMD...: the end of CMD's output as TAP comments.
dump() { echo "# --- $1"; shift; "$@" 2>&1 | tail -n "${DUMP_LINES:-40}" | sed 's/^/#   /'; }

# Runs registered cleanups in reverse order on exit.
on_exit() { _cleanups+=("$*"); }
_run_cleanups() {
	local i
	for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do eval "${_cleanups[$i]}" >/dev/null 2>&1 || true; done
}
trap _run_cleanups EXIT
# A test killed by SIGTERM/SIGINT (timeout, ^C) still cleans up.
trap 'exit 143' TERM
trap 'exit 130' INT

# scratch: a fresh directory removed on exit. Usually called as d=$(scratch),
# i.e. in a subshell whose on_exit list is lost, so the directory is also
# recorded in a file that the parent's exit trap reads.
_scratch_list=$(mktemp "${TMPDIR:-/tmp}/na-test-scratch.XXXXXX")
on_exit "while read -r d; do rm -rf \"\$d\"; done <'$_scratch_list'; rm -f '$_scratch_list'"
scratch() { local d; d=$(mktemp -d "${TMPDIR:-/tmp}/na-test.XXXXXX"); echo "$d" >>"$_scratch_list"; echo "$d"; }

# gardener_root DIR: DIR becomes a root with two accounts in etc/passwd and
# etc/group, root and gardener (uid and gid 1700), and gardener's home,
# owned by it.
gardener_root() {
	local r=$1
	mkdir -p "$r/etc" "$r/home/gardener"
	printf 'root:x:0:0:root:/root:/bin/sh\ngardener:x:1700:1700::/home/gardener:/bin/sh\n' >"$r/etc/passwd"
	printf 'root:x:0:\ngardener:x:1700:\n' >"$r/etc/group"
	chown 1700:1700 "$r/home/gardener"
}

finish() {
	echo "$_pass passed, $_fail failed"
	[ "$_fail" -eq 0 ]
}
