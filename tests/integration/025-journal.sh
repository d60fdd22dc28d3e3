#!/bin/bash
# What cloud-config-exec and node-agent log reaches the journal, through the
# native protocol client every program uses (lib/base/log.c, lib/base/journal.c): one
# datagram per entry with MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, CODE_FILE,
# ERRNO and the caller's fields, sent after cloud-config-exec's seccomp filter
# is on (the socket is opened before it). 010 checks authkeys-cmd's entries.
# Runs in a private mount namespace with a tmpfs on /run and a fake journal
# socket (tests/lib/journal.sh); nothing on the host is touched.
if [ -z "${JOURNAL_TEST_IN_NS:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (namespaces)"; exit 77; }
	command -v unshare >/dev/null || { echo "SKIP: needs unshare"; exit 77; }
	JOURNAL_TEST_IN_NS=1 exec unshare --mount --propagation private -- bash "$0" "$@"
fi
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
source "$TESTS_DIR/lib/journal.sh"
[ -x "$CCE" ] || { echo "not ok - build $CCE first"; exit 1; }

W=$(scratch)
exec_init "$W"
mount -t tmpfs -o mode=0755 na-journal-run /run
J=$W/journal.log
fake_journal "$J" || exit 1

# journal_has TEXT...: one entry holds every TEXT ("FIELD=value|"), within
# 5 s (the fake journal writes a datagram out after the sender may have
# exited).
journal_has() {
	local line t i
	for i in $(seq 50); do
		while IFS= read -r line; do
			for t in "$@"; do [[ "$line" == *"$t"* ]] || continue 2; done
			return 0
		done <"$J"
		sleep 0.1
	done
	return 1
}

printf 'spec:\n  files:\n  - path: /etc/na-journal\n    content:\n      inline:\n        data: hello\n' >"$W/osc.yaml"
sum=$(sha256sum <"$W/osc.yaml" | cut -d' ' -f1)
cce_j() { "$CCE" --root "$W/root" --config "$W/config.json" --no-systemd "$@"; }

check "cloud-config-exec applies under its seccomp filter" cce_j --log journal apply "$W/osc.yaml"
check "journal: the apply, with identifier, priority, code location and checksum" \
	journal_has "MESSAGE=Applied OSC ${sum:0:12}|" "PRIORITY=6|" "SYSLOG_IDENTIFIER=cloud-config-exec|" \
	"CODE_FILE=cloud-config-exec/" "CHECKSUM=$sum|"
check "journal: the file step" journal_has "MESSAGE=File /etc/na-journal written" "SYSLOG_IDENTIFIER=cloud-config-exec|"

printf 'spec:\n  files: 7\n' >"$W/bad.yaml"
check_not "a rejected OSC fails" cce_j --log journal apply "$W/bad.yaml"
check "journal: the rejection, at error priority with ERRNO" \
	journal_has "MESSAGE=OSC rejected: spec.files: expected a list" "PRIORITY=3|" "ERRNO=22|" \
	"SYSLOG_IDENTIFIER=cloud-config-exec|"

# A journal entry sent after the --log stderr run marks the point by which
# anything that run sent would have been written out.
check_not "--log stderr: fails on a missing file" cce_j --log stderr apply "$W/missing.yaml"
check_not "a later run fails on another missing file" cce_j --log journal apply "$W/marker.yaml"
check "journal: the later run's error" journal_has "MESSAGE=Cannot open $W/marker.yaml"
check_not "--log stderr: nothing sent to the journal" grep -q "missing.yaml" "$J"

# node-agent's entries take the same path (a configuration error, logged
# before anything else runs).
if [ -x "$B/node-agent" ]; then
	check_not "node-agent refuses a missing configuration" "$B/node-agent" --root "$W/root" \
		--config "$W/missing.json" --once
	check "journal: node-agent's error, with identifier and priority" \
		journal_has "MESSAGE=no configuration: neither $W/missing.json nor Gardener's stock user data" "PRIORITY=3|" \
		"SYSLOG_IDENTIFIER=node-agent|"
fi

finish
