# A fake journal for the tests that check what a program logs (source after
# common.sh). Only in a private mount namespace with a tmpfs on /run: it binds
# the journal's real socket path there.
#   fake_journal LOG   binds /run/systemd/journal/socket (0666) and appends
#                      every datagram to LOG as one line, its newlines turned
#                      into '|' ("MESSAGE=...|PRIORITY=6|...|"); returns once
#                      the socket is bound; stopped on exit
fake_journal() {
	local log=$1 i
	install -d -m 0755 /run/systemd/journal
	python3 - "$log" >/dev/null 2>&1 <<'PY' &
import os, socket, sys
p = "/run/systemd/journal/socket"
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(p)
os.chmod(p, 0o666)
with open(sys.argv[1], "ab", buffering=0) as f:
    while True:
        f.write(s.recv(1 << 16).replace(b"\n", b"|") + b"\n")
PY
	on_exit "kill $!"
	for i in $(seq 100); do
		[ -S /run/systemd/journal/socket ] && return 0
		sleep 0.05
	done
	echo "not ok - fake journal socket not bound"
	return 1
}
