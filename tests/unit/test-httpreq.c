/* Unit tests for lib/kube/httpreq.c: request heads as Prometheus and the
 * kubelet's probes send them, incremental arrival, and what is refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "httpreq.h"

static void good(void **state)
{
	static const char prom[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:2752\r\nUser-Agent: Prometheus/2.53.0\r\n"
				   "Accept-Encoding: gzip\r\n\r\n";
	struct httpreq r;
	assert_int_equal(httpreq_parse(prom, strlen(prom), &r), 0);
	assert_int_equal(r.method, HTTPREQ_GET);
	assert_string_equal(r.path, "/metrics");
	assert_int_equal(r.minor, 1);
	/* Every prefix: "need more". */
	for (size_t n = 0; n < strlen(prom); n++)
		assert_int_equal(httpreq_parse(prom, n, &r), -EAGAIN);

	static const char head[] = "HEAD /readyz?verbose HTTP/1.0\n\n";
	assert_int_equal(httpreq_parse(head, strlen(head), &r), 0);
	assert_int_equal(r.method, HTTPREQ_HEAD);
	assert_string_equal(r.path, "/readyz");
	assert_int_equal(r.minor, 0);

	static const char post[] = "POST /healthz HTTP/1.1\r\n\r\n";
	assert_int_equal(httpreq_parse(post, strlen(post), &r), 0);
	assert_int_equal(r.method, HTTPREQ_OTHER);
}

static void bad(void **state)
{
	static const char *const inval[] = {
		"GET healthz HTTP/1.1\r\n", "GET /x HTTP/2.0\r\n",   "GET  /x HTTP/1.1\r\n", "GET /x HTTP/1.1 \r\n",
		"G\"T /x HTTP/1.1\r\n",     "GET /x\x01 HTTP/1.1\r\n", "\r\n",               "GET /x\x00",
		"GET /x HTTP/1.1\r\r\n",    "GET\t/x HTTP/1.1\r\n",   "ABCDEFGHIJKLMNOPQ /x HTTP/1.1\r\n",
	};
	struct httpreq r;
	for (size_t i = 0; i < ELEMENTSOF(inval); i++) {
		size_t n = strlen(inval[i]);
		if (strcmp(inval[i], "GET /x\x00") == 0)
			n = 7;
		assert_int_equal(httpreq_parse(inval[i], n, &r), -EINVAL);
	}
	/* Too long: a path and a head. */
	char buf[HTTPREQ_MAX + 16];
	memset(buf, 'a', sizeof(buf));
	memcpy(buf, "GET /", 5);
	memcpy(buf + 5 + HTTPREQ_PATH_MAX + 1, " HTTP/1.1\r\n\r\n", 13);
	assert_int_equal(httpreq_parse(buf, 5 + HTTPREQ_PATH_MAX + 1 + 13, &r), -EMSGSIZE);
	memset(buf, 'a', sizeof(buf));
	memcpy(buf, "GET / HTTP/1.1\r\nX: ", 19);
	assert_int_equal(httpreq_parse(buf, HTTPREQ_MAX - 1, &r), -EAGAIN);
	assert_int_equal(httpreq_parse(buf, HTTPREQ_MAX, &r), -EMSGSIZE);
	assert_int_equal(httpreq_parse(buf, sizeof(buf), &r), -EMSGSIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good),
		cmocka_unit_test(bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
