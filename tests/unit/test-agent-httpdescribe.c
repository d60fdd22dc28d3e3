/* Unit tests for http_describe_failure() (agent/http.c): a connection that
 * timed out before it was made (what a firewall or systemd's IP filter
 * dropping the packets looks like) names the host and what to check; a
 * timeout after the connection keeps curl's text. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../agent/http.h"

static void authority(void **state)
{
	(void)state;
	char b[64];
	http_url_authority("https://api.shoot.example:6443/api/v1/nodes?watch=1", b, sizeof(b));
	assert_string_equal(b, "api.shoot.example:6443");
	http_url_authority("https://u:p@10.0.2.2/x", b, sizeof(b));
	assert_string_equal(b, "10.0.2.2");
	http_url_authority("https://[2001:db8::1]:443", b, sizeof(b));
	assert_string_equal(b, "[2001:db8::1]:443");
	http_url_authority(NULL, b, sizeof(b));
	assert_string_equal(b, "");
}

static void connect_timeout(void **state)
{
	(void)state;
	char url[] = "https://10.0.2.2:6443/api/v1/namespaces/kube-system/secrets/osc";
	struct http_request r = { .url = url, .result = CURLE_OPERATION_TIMEDOUT, .connect_timeout = true };
	snprintf(r.errbuf, sizeof(r.errbuf), "Failed to connect to 10.0.2.2 port 6443 after 10000 ms: Timeout was reached");
	char b[512];
	http_describe_failure(&r, b, sizeof(b));
	assert_string_equal(b, "connection to 10.0.2.2:6443 timed out: check the network path / firewall to the API "
			       "server (Failed to connect to 10.0.2.2 port 6443 after 10000 ms: Timeout was reached)");
	/* Connected, then the answer was late: curl's text only. */
	r.connect_timeout = false;
	snprintf(r.errbuf, sizeof(r.errbuf), "Operation timed out after 3000 milliseconds with 0 bytes received");
	http_describe_failure(&r, b, sizeof(b));
	assert_string_equal(b, "Operation timed out after 3000 milliseconds with 0 bytes received");
}

/* A dead peer ends a connection within HTTP_DEAD_PEER_S: 3 keepalive
 * probes (Linux's 9 took 120 s) and TCP_USER_TIMEOUT for unacknowledged
 * data; the watch idle timer no longer has to (watchIdleMs 720 s). */
static void keepalive(void **state)
{
	(void)state;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(http_tune_socket(fd), 0);
	int v = 0;
	socklen_t len = sizeof(v);
	assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &v, &len), 0);
	assert_int_equal(v, 3);
	unsigned u = 0;
	len = sizeof(u);
	assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &u, &len), 0);
	assert_int_equal(u, 60000);
	assert_int_equal(HTTP_DEAD_PEER_S, 60);
	close(fd);
	/* Not a TCP socket: an error, which the curl callback ignores. */
	assert_true(http_tune_socket(-1) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(authority),
		cmocka_unit_test(connect_timeout),
		cmocka_unit_test(keepalive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
