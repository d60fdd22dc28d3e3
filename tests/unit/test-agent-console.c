/* Unit tests for agent/console.c: why the node cannot join, on the console
 * (a pipe here): each new kind of reason once, two lines, gardener-node-
 * agent's hint for an API server that does not answer; the same kind again
 * prints nothing; "joined" only after a warning; nothing after the join;
 * off (fd -1) prints nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "../../agent/console.h"
#include "../../agent/http.h"

#define SERVER "https://api.shoot--i512345--prod-eu1.example.com"

/* What the console got since the last call. */
static const char *drain(int fd)
{
	static char buf[8192];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void reasons(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	struct console c;
	console_init(&c, p[1]);

	/* Nobody answers: the request's failure and Gardener's hint. */
	char url[] = SERVER "/apis/certificates.k8s.io/v1/certificatesigningrequests";
	struct http_request r = { .url = url, .result = CURLE_COULDNT_CONNECT };
	snprintf(r.errbuf, sizeof(r.errbuf), "Failed to connect to api port 443: Connection refused");
	console_request(&c, &r, false, SERVER);
	const char *out = drain(p[0]);
	assert_non_null(strstr(out, "node-agent: WARNING: the node cannot join the cluster: no answer from the API "
				    "server at " SERVER ": "));
	assert_non_null(strstr(out, "\nnode-agent: Node may fail to join the cluster - check network configuration "
				    "and API server endpoint " SERVER "\n"));
	assert_int_equal(c.printed, 1);
	/* every retry: nothing */
	console_request(&c, &r, false, SERVER);
	assert_string_equal(drain(p[0]), "");

	/* An HTTP answer to the bootstrap token: the credentials duty decides
	 * (a 401 of a restarting server is no reason). */
	struct http_request a = { .url = url, .status = 401 };
	console_request(&c, &a, false, SERVER);
	assert_string_equal(drain(p[0]), "");

	/* What the credentials duty gave up on: new kind, printed once. */
	console_creds(&c, 0, "", "");
	assert_string_equal(drain(p[0]), "");
	console_creds(&c, 1, "csr-denied", "CSR node-agent-csr-x denied: reason \"RequestDenied\", message \"no\nmachine\"");
	out = drain(p[0]);
	assert_non_null(strstr(out, "the node cannot join the cluster: CSR node-agent-csr-x denied: reason "
				    "\"RequestDenied\", message \"no?machine\"\n"));
	assert_non_null(strstr(out, "check the bootstrap token and the approval"));
	console_creds(&c, 1, "csr-denied", "again"); /* the same failure */
	console_creds(&c, 2, "csr-denied", "denied once more"); /* the same kind */
	assert_string_equal(drain(p[0]), "");
	/* node-agent's own credential refused */
	a.status = 403;
	console_request(&c, &a, true, SERVER);
	assert_non_null(strstr(drain(p[0]), "refuses node-agent's credential"));
	assert_int_equal(c.printed, 3);

	/* Joined: said once; then nothing more. */
	console_joined(&c, SERVER);
	assert_string_equal(drain(p[0]), "node-agent: joined the cluster: the API server at " SERVER
					 " answers node-agent\n");
	console_joined(&c, SERVER);
	console_request(&c, &r, true, SERVER);
	console_creds(&c, 3, "csr-timeout", "later");
	assert_string_equal(drain(p[0]), "");

	/* Joined without a warning: nothing at all. */
	console_init(&c, p[1]);
	console_joined(&c, SERVER);
	assert_string_equal(drain(p[0]), "");
	/* Off. */
	console_init(&c, -1);
	console_request(&c, &r, false, SERVER);
	console_creds(&c, 1, "csr-denied", "x");
	console_joined(&c, SERVER);
	assert_int_equal(c.printed, 0);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reasons),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
