# A real OpenSSH sshd for the tests that log in (010, 011, 026): one way to
# configure, start and reach it. Needs common.sh ($W, check, on_exit).
#
# sshd_start PORT: writes $W/sshd_config from the lines common to every test
# (own host key and pid file, loopback only, no PAM, no passwords) followed
# by the test's own lines read from stdin; checks it with `sshd -t`, starts
# sshd in the foreground (log in $W/sshd.log, pid in $SSHD) and waits until
# it listens.
sshd_start() {
	SSHD_PORT=$1
	ssh-keygen -q -t ed25519 -N '' -f "$W/hostkey"
	{
		cat <<EOF
HostKey $W/hostkey
PidFile $W/sshd.pid
ListenAddress 127.0.0.1
Port $SSHD_PORT
UsePAM no
StrictModes yes
PasswordAuthentication no
KbdInteractiveAuthentication no
EOF
		cat
	} >"$W/sshd_config"
	install -d -m 0755 /run/sshd
	check "sshd -t accepts the configuration" /usr/sbin/sshd -t -f "$W/sshd_config"
	/usr/sbin/sshd -D -f "$W/sshd_config" -E "$W/sshd.log" 2>"$W/sshd.stderr" &
	SSHD=$!
	on_exit "kill $SSHD"
	for _ in $(seq 100); do
		ss -ltn | grep -q "127.0.0.1:$SSHD_PORT " && return 0
		sleep 0.1
	done
	echo "# sshd did not listen on 127.0.0.1:$SSHD_PORT within 10 s" >&2
	return 1
}

# ssh_login USER KEY [COMMAND [SSH-OPTION...]]: one full ssh connection to
# the sshd of sshd_start with the private key $W/KEY only; prints the
# command's output, returns its status (255: refused).
ssh_login() {
	local user=$1 key=$2 cmd=${3:-true}
	shift $(($# < 3 ? $# : 3))
	timeout 30 ssh -F /dev/null -p "$SSHD_PORT" -i "$W/$key" -o IdentitiesOnly=yes -o BatchMode=yes \
		-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
		-o KexAlgorithms=curve25519-sha256 -o ConnectTimeout=20 "$@" "$user@127.0.0.1" "$cmd" \
		2>/dev/null </dev/null
}
