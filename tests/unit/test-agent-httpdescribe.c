/* Unit tests for http_describe_failure() (agent/http.c): a connection that
 * timed out before it was made (what a firewall or systemd's IP filter
 * dropping the packets looks like) names the host and what to check; a
 * timeout after the connection keeps curl's text. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(authority),
		cmocka_unit_test(connect_timeout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
