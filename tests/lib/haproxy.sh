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
	cat >"$dir/haproxy.cfg" <<-EOF
	global
	    maxconn 4096
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

haproxy_stop() {
	[ -n "${HAPROXY_PID:-}" ] || return 0
	kill "$HAPROXY_PID" 2>/dev/null
	wait "$HAPROXY_PID" 2>/dev/null
	HAPROXY_PID=
}
