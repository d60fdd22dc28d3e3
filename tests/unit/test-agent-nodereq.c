/* Unit tests for agent/nodereq.c: the restart request and the key document
 * as the Node's annotations carry them, event after event: a new value is a
 * new request (with a new id), the same value again is not, unless the
 * annotation was removed in between; an empty or invalid value is marked
 * for removal and leaves the request in force alone; the key document is
 * taken only when enabled and not oversized; a health repair replaces the
 * request in force. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "desired.h"
#include "kube.h"
#include "log.h"
#include "../../agent/nodereq.h"

#define NF "NODE=node-a"

static struct kube_node node(char *rv, char *restart, char *keys)
{
	return (struct kube_node){ .resource_version = rv, .restart_services = restart, .authorized_keys = keys };
}

static char rv1[] = "1", rv2[] = "2", rv3[] = "3", rv4[] = "4", rv5[] = "5";

static void restart_requests(void **state)
{
	struct nodereq q = {};
	char kubelet[] = "kubelet", two[] = "kubelet,containerd", empty[] = " , ", bad[] = "a/b";
	struct kube_node n = node(rv1, NULL, NULL);
	nodereq_update(&q, &n, false, NF);
	assert_null(q.restart_units);
	assert_false(q.restart_invalid);

	n = node(rv2, kubelet, NULL);
	nodereq_update(&q, &n, false, NF);
	assert_non_null(q.restart_units);
	assert_string_equal(q.restart_units[0], "kubelet.service");
	assert_null(q.restart_units[1]);
	assert_string_equal(q.restart_value, "kubelet");
	char id[NODE_RESTART_ID_MAX];
	memcpy(id, q.restart_id, sizeof(id));
	assert_true(id[0]);
	assert_true(nodereq_restart_done(&q, id));
	assert_false(nodereq_restart_done(&q, NULL));
	assert_false(nodereq_restart_done(&q, "other"));

	/* The same value in a later version: the same request. */
	n = node(rv3, kubelet, NULL);
	nodereq_update(&q, &n, false, NF);
	assert_string_equal(q.restart_id, id);

	/* Removed, then set again: a new request. */
	n = node(rv4, NULL, NULL);
	nodereq_update(&q, &n, false, NF);
	assert_null(q.restart_value);
	assert_non_null(q.restart_units); /* stays in force until replaced */
	n = node(rv5, kubelet, NULL);
	nodereq_update(&q, &n, false, NF);
	assert_string_not_equal(q.restart_id, id);
	memcpy(id, q.restart_id, sizeof(id));

	/* Empty and invalid values: marked, the request in force kept. */
	n = node(rv1, empty, NULL);
	nodereq_update(&q, &n, false, NF);
	assert_true(q.restart_invalid);
	assert_string_equal(q.restart_id, id);
	n = node(rv2, bad, NULL);
	nodereq_update(&q, &n, false, NF);
	assert_true(q.restart_invalid);
	assert_string_equal(q.restart_value, "a/b");
	n = node(rv3, two, NULL);
	nodereq_update(&q, &n, false, NF);
	assert_false(q.restart_invalid);
	assert_string_equal(q.restart_units[1], "containerd.service");
	n = node(rv4, NULL, NULL);
	nodereq_update(&q, &n, false, NF);
	assert_false(q.restart_invalid);

	/* A repair replaces it. */
	char **units = calloc(2, sizeof(*units));
	assert_non_null(units);
	units[0] = strdup("x.service");
	nodereq_set_restart(&q, units, "health-1");
	assert_ptr_equal(q.restart_units, units);
	assert_string_equal(q.restart_id, "health-1");
	assert_true(nodereq_restart_done(&q, "health-1"));
	nodereq_done(&q);
	assert_null(q.restart_units);
}

static void key_document(void **state)
{
	struct nodereq q = {};
	char doc[] = "{\"keys\": []}";
	struct kube_node n = node(rv1, NULL, doc);
	nodereq_update(&q, &n, false, NF); /* not enabled */
	assert_null(q.key_document);
	nodereq_update(&q, &n, true, NF);
	assert_string_equal(q.key_document, doc);
	assert_ptr_not_equal(q.key_document, doc);

	char *big = malloc(DESIRED_KEY_DOCUMENT_MAX + 2);
	assert_non_null(big);
	memset(big, 'x', DESIRED_KEY_DOCUMENT_MAX + 1);
	big[DESIRED_KEY_DOCUMENT_MAX + 1] = '\0';
	n = node(rv2, NULL, big);
	nodereq_update(&q, &n, true, NF);
	assert_string_equal(q.key_document, doc); /* ignored */
	free(big);

	n = node(rv3, NULL, NULL);
	nodereq_update(&q, &n, true, NF);
	assert_null(q.key_document);
	nodereq_done(&q);
}

int main(void)
{
	log_open("test-agent-nodereq", LOG_TARGET_STDERR);
	log_set_max_level(LOG_WARNING);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(restart_requests),
		cmocka_unit_test(key_document),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
