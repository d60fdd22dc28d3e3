/* Unit tests for lib/kube/nodeevent.c: the core/v1 Event node-agent records on
 * its Node. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "nodeevent.h"

static void body(void **state)
{
	struct nodeevent e = { .node = "node-1", .node_uid = "uid-1", .reason = "OSCApplied", .message = "applied \"x\"",
			       .count = 1, .first = 1795658462, .last = 1795658462 };
	_cleanup_free_ char *b = nodeevent_body(&e);
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
	struct nodeevent e2 = { .node = "n", .warning = true, .reason = "OSCRefused", .message = msg };
	_cleanup_free_ char *w = nodeevent_body(&e2);
	assert_non_null(w);
	assert_non_null(strstr(w, "\"type\":\"Warning\""));
	assert_null(strstr(w, "\"uid\""));
	char want[NODEEVENT_MESSAGE_MAX + 16];
	memset(want, 'm', NODEEVENT_MESSAGE_MAX);
	memcpy(want + NODEEVENT_MESSAGE_MAX, "\",", 3);
	assert_non_null(strstr(w, want));
}

/* A series (client-go's EventCorrelator): a name of ours, the count, the
 * first and the last time; its repeats as a strategic merge patch. */
static void series(void **state)
{
	(void)state;
	char name[NODEEVENT_NAME_MAX + 1];
	assert_int_equal(nodeevent_name("node-1", 0x1873c2a9f00d1234ull, name, sizeof(name)), 0);
	assert_string_equal(name, "node-1.1873c2a9f00d1234");
	struct nodeevent e = { .node = "node-1", .warning = true, .reason = "kubelet", .message = "lost",
			       .name = name, .count = 28, .first = 1795658462, .last = 1795658462 + 540 };
	_cleanup_free_ char *b = nodeevent_body(&e);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"metadata\":{\"name\":\"node-1.1873c2a9f00d1234\",\"namespace\":\"default\"}"));
	assert_non_null(strstr(b, "\"firstTimestamp\":\"2026-11-26T02:01:02Z\",\"lastTimestamp\":\"2026-11-26T02:10:02Z\",\"count\":28"));
	_cleanup_free_ char *p = nodeevent_patch(29, 1795658462 + 570, "lost");
	assert_string_equal(p, "{\"count\":29,\"lastTimestamp\":\"2026-11-26T02:10:32Z\",\"message\":\"lost\"}");
	/* A name that would not be a DNS subdomain name's length. */
	char node[250];
	memset(node, 'a', sizeof(node) - 1);
	node[sizeof(node) - 1] = '\0';
	assert_int_equal(nodeevent_name(node, 0x1873c2a9f00d1234ull, name, sizeof(name)), -ENAMETOOLONG);
}

/* The longest Node name (253): the whole name in involvedObject, source and
 * reportingInstance; generateName "<node>." (the API server cuts a
 * generateName to 58 characters before its 5 random ones: the Event's name
 * stays within 63). */
static void longest_node(void **state)
{
	(void)state;
	char node[254], want[300];
	memset(node, 'n', 253);
	node[253] = '\0';
	node[63] = node[127] = node[191] = '.';
	struct nodeevent e = { .node = node, .node_uid = "uid-1", .reason = "OSCApplied", .message = "applied",
			       .count = 1 };
	_cleanup_free_ char *b = nodeevent_body(&e);
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
		cmocka_unit_test(series),
		cmocka_unit_test(longest_node),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
