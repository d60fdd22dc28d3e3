# Helpers for the tests that boot a box with tests/lib/sdbox.sh (055, 056,
# 057). Source after common.sh, with SDBOX_STATE and the other SDBOX_*
# settings exported.
SDBOX=$TESTS_DIR/lib/sdbox.sh

# sdbox_boot WHAT: boots the box (down again at exit) and reports
# "the box boots WHAT"; a box that does not boot ends the test.
sdbox_boot() {
	local env_lines
	on_exit "'$SDBOX' down"
	if ! env_lines=$("$SDBOX" up 2>"$S/sdbox.log"); then
		sed 's/^/#   /' "$S/sdbox.log" | tail -30
		fail "the box boots $1"
		finish
		exit 1
	fi
	eval "$env_lines"
	ok "the box boots $1 ($(cat "$SDBOX_STATE/timings"))"
	BOX=$SDBOX_ROOT
}
# ctl ARGS...: systemctl in the box; box CMD...: CMD in the box.
ctl() { "$SDBOX" ctl "$@"; }
box() { "$SDBOX" sh "$@"; }
# boxn CMD...: like box, and in the box's network namespace (sdbox sh is not).
boxn() { nsenter -t "$SDBOX_LEADER" -m -p -n -- env -u DBUS_SYSTEM_BUS_ADDRESS "$@"; }
