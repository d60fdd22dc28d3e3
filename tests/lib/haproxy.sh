# A TCP load balancer in front of an API server, as shoot nodes reach theirs
# (a cloud load balancer, Istio's SNI gateway): Debian's haproxy in TCP mode
# on loopback (inside the test's network namespace: call kube_netns from
# kube.sh first). While the backend is down it accepts the connection and
# then closes it, which is what a node sees during an API server restart.
# Source after common.sh.
#
#   haproxy_require                 skip unless haproxy(1) is there (says why)
#   haproxy_start DIR PORT BACKEND  haproxy on 127.0.0.1:PORT forwarding to
#                                   BACKEND (host:port), by pid (stopped on exit);
#                                   sets HAPROXY_URL (https://127.0.0.1:PORT),
#                                   HAPROXY_PID
#   haproxy_stop                    stops it (by pid)
#   haproxy_conns                   prints how many client connections its
#                                   frontend accepted so far (stot of "show
#                                   stat" on its stats socket, $HAPROXY_SOCK):
#                                   every connection attempt of the agents
#   haproxy_backend off|on          takes the backend out (and ends the
#                                   sessions through it: an outage as the
#                                   nodes see one, the API server itself
#                                   serving on) or puts it back
#
# TLS passes through: the API server's certificate must name 127.0.0.1 (the
# PKI of mkcerts.sh does), whatever the port.

haproxy_require() {
	command -v haproxy >/dev/null || skip_all "haproxy missing (apt-get install haproxy; scripts/install-deps)"
}

haproxy_start() {
	local dir=$1 port=$2 backend=$3
	mkdir -p "$dir"
	# retries 3 (redispatch off): a refused backend connection is tried
	# again, then the client's connection is closed, as a cloud LB does.
	HAPROXY_SOCK=$dir/haproxy.sock
	cat >"$dir/haproxy.cfg" <<-EOF
	global
	    maxconn ${HAPROXY_MAXCONN:-4096}
	    stats socket $HAPROXY_SOCK mode 600 level admin
	defaults
	    mode tcp
	    retries 3
	    timeout connect 1s
	    timeout client 1h
	    timeout server 1h
	frontend api
	    bind 127.0.0.1:$port
	    default_backend api
	backend api
	    server api $backend
	EOF
	haproxy -c -q -f "$dir/haproxy.cfg" >"$dir/haproxy.log" 2>&1 || { cat "$dir/haproxy.log" >&2; return 1; }
	haproxy -db -f "$dir/haproxy.cfg" >>"$dir/haproxy.log" 2>&1 &
	HAPROXY_PID=$!
	on_exit 'haproxy_stop'
	HAPROXY_URL=https://127.0.0.1:$port
	local i
	for ((i = 0; i < 50; i++)); do
		ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && return 0
		kill -0 "$HAPROXY_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "haproxy did not start:" >&2
	cat "$dir/haproxy.log" >&2
	return 1
}

# haproxy_cmd COMMAND: one command on the stats socket; prints the answer.
haproxy_cmd() {
	python3 - "$HAPROXY_SOCK" "$1" <<-'PY'
	import socket, sys
	s = socket.socket(socket.AF_UNIX)
	s.connect(sys.argv[1])
	s.sendall(sys.argv[2].encode() + b"\n")
	out = b""
	while True:
	    b = s.recv(65536)
	    if not b:
	        break
	    out += b
	sys.stdout.write(out.decode())
	PY
}

haproxy_conns() {
	# "show stat" CSV: pxname,svname,qcur,qmax,scur,smax,slim,stot,...
	haproxy_cmd "show stat" | awk -F, '$1 == "api" && $2 == "FRONTEND" {print $8}'
}

haproxy_backend() {
	case $1 in
	off) haproxy_cmd "disable server api/api" >/dev/null && haproxy_cmd "shutdown sessions server api/api" >/dev/null ;;
	on) haproxy_cmd "enable server api/api" >/dev/null ;;
	*) return 2 ;;
	esac
}

haproxy_stop() {
	[ -n "${HAPROXY_PID:-}" ] || return 0
	kill "$HAPROXY_PID" 2>/dev/null
	wait "$HAPROXY_PID" 2>/dev/null
	HAPROXY_PID=
}
