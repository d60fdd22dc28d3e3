/* Unit tests for lib/kube/nodeevent.c: the core/v1 Event node-agent records on
 * its Node. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "nodeevent.h"

static void body(void **state)
{
	_cleanup_free_ char *b = nodeevent_body("node-1", "uid-1", false, "OSCApplied", "applied \"x\"", 1795658462);
	assert_non_null(b);
	assert_string_equal(
		b, "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"generateName\":\"node-1.\",\"namespace\":"
		   "\"default\"},\"involvedObject\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"node-1\",\"uid\":"
		   "\"uid-1\"},\"type\":\"Normal\",\"reason\":\"OSCApplied\",\"message\":\"applied \\\"x\\\"\",\"source\":"
		   "{\"component\":\"node-agent\",\"host\":\"node-1\"},\"firstTimestamp\":\"2026-11-26T02:01:02Z\","
		   "\"lastTimestamp\":\"2026-11-26T02:01:02Z\",\"count\":1,\"reportingComponent\":\"node-agent\","
		   "\"reportingInstance\":\"node-1\"}");
	/* A long message is cut; no uid: no uid field; Warning. */
	char msg[NODEEVENT_MESSAGE_MAX * 2];
	memset(msg, 'm', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	_cleanup_free_ char *w = nodeevent_body("n", NULL, true, "OSCRefused", msg, 0);
	assert_non_null(w);
	assert_non_null(strstr(w, "\"type\":\"Warning\""));
	assert_null(strstr(w, "\"uid\""));
	char want[NODEEVENT_MESSAGE_MAX + 16];
	memset(want, 'm', NODEEVENT_MESSAGE_MAX);
	memcpy(want + NODEEVENT_MESSAGE_MAX, "\",", 3);
	assert_non_null(strstr(w, want));
}

/* The longest Node name (253): the whole name in involvedObject, source and
 * reportingInstance; generateName "<node>." (the API server cuts a
 * generateName to 58 characters before its 5 random ones: the Event's name
 * stays within 63). */
static void longest_node(void **state)
{
	char node[254], want[300];
	memset(node, 'n', 253);
	node[253] = '\0';
	node[63] = node[127] = node[191] = '.';
	_cleanup_free_ char *b = nodeevent_body(node, "uid-1", false, "OSCApplied", "applied", 0);
	assert_non_null(b);
	snprintf(want, sizeof(want), "\"generateName\":\"%s.\"", node);
	assert_non_null(strstr(b, want));
	snprintf(want, sizeof(want), "\"kind\":\"Node\",\"name\":\"%s\"", node);
	assert_non_null(strstr(b, want));
	snprintf(want, sizeof(want), "\"reportingInstance\":\"%s\"", node);
	assert_non_null(strstr(b, want));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(body),
		cmocka_unit_test(longest_node),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
