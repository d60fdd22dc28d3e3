/* Unit tests for agent/conditions.c (the SystemdUnitsReady patch: when, and
 * the exact request body), the Node parser's reading of the condition
 * (lib/kube/kube.c) and the unit Events of agent/events.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/conditions.h"
#include "../../agent/events.h"
#include "cleanup.h"
#include "kube.h"
#include "result.h"

#define T0 1763740800 /* 2025-11-21T16:00:00Z */

static void differ(void **state)
{
	assert_true(conditions_differ(NULL, NULL, NULL, true, "AllUnitsHealthy", "m"));
	assert_false(conditions_differ("True", "AllUnitsHealthy", "m", true, "AllUnitsHealthy", "m"));
	assert_true(conditions_differ("False", "AllUnitsHealthy", "m", true, "AllUnitsHealthy", "m"));
	assert_true(conditions_differ("True", "ProgressingUnits", "m", true, "AllUnitsHealthy", "m"));
	assert_true(conditions_differ("True", "AllUnitsHealthy", "m2", true, "AllUnitsHealthy", "m"));
}

static void body_keeps_transition_while_status_holds(void **state)
{
	/* Same status: the Node's lastTransitionTime stays, the heartbeat moves. */
	_cleanup_free_ char *b = conditions_patch_body("False", "2020-01-02T03:04:05Z", false, "UnhealthyUnits",
						       "a.service: failed", T0);
	assert_non_null(b);
	assert_string_equal(b, "{\"status\":{\"conditions\":[{\"type\":\"SystemdUnitsReady\",\"status\":\"False\","
			       "\"reason\":\"UnhealthyUnits\",\"message\":\"a.service: failed\","
			       "\"lastHeartbeatTime\":\"2025-11-21T16:00:00Z\","
			       "\"lastTransitionTime\":\"2020-01-02T03:04:05Z\"}]}}");
	/* Status changes (or no condition yet): the transition is the check's time. */
	_cleanup_free_ char *c = conditions_patch_body("False", "2020-01-02T03:04:05Z", true, "AllUnitsHealthy",
						       "ok \"quoted\"", T0);
	assert_non_null(strstr(c, "\"lastTransitionTime\":\"2025-11-21T16:00:00Z\""));
	assert_non_null(strstr(c, "\"message\":\"ok \\\"quoted\\\"\""));
	_cleanup_free_ char *d = conditions_patch_body(NULL, NULL, true, "AllUnitsHealthy", "m", T0);
	assert_non_null(strstr(d, "\"status\":\"True\""));
	assert_non_null(strstr(d, "\"lastTransitionTime\":\"2025-11-21T16:00:00Z\""));
}

static void node_parser_reads_condition(void **state)
{
	const char *doc = "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"5\"},"
			  "\"status\":{\"conditions\":["
			  "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":7},"
			  "{\"type\":\"SystemdUnitsReady\",\"status\":\"False\",\"reason\":\"UnhealthyUnits\","
			  "\"message\":\"x.service: failed\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}";
	struct kube_node n;
	assert_int_equal(kube_node_parse(doc, strlen(doc), &n, NULL), 0);
	assert_string_equal(n.units_ready_status, "False");
	assert_string_equal(n.units_ready_reason, "UnhealthyUnits");
	assert_string_equal(n.units_ready_message, "x.service: failed");
	assert_string_equal(n.units_ready_transition, "2026-01-01T00:00:00Z");
	kube_node_done(&n);
	/* Malformed entry or status: the Node still parses, condition absent. */
	const char *bad[] = {
		"{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":{\"conditions\":[{\"type\":"
		"\"SystemdUnitsReady\",\"status\":true,\"reason\":\"r\",\"message\":\"m\",\"lastTransitionTime\":\"t\"}]}}",
		"{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":{\"conditions\":{}}}",
		"{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":[]}",
		"{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":{\"conditions\":[{\"type\":"
		"\"SystemdUnitsReady\",\"status\":\"True\",\"reason\":\"r\",\"message\":\"m\"}]}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(kube_node_parse(bad[i], strlen(bad[i]), &n, NULL), 0);
		assert_null(n.units_ready_status);
		assert_null(n.units_ready_transition);
		kube_node_done(&n);
	}
}

static void set_node_and_result(void **state)
{
	struct conditions c;
	assert_int_equal(conditions_init(&c, NULL, "n1"), 0);
	char msg[] = "a.service: failed";
	struct result_units_ready r = { .present = true, .ready = false, .reason = "UnhealthyUnits", .message = msg,
					.checked_at = T0 };
	conditions_set_result(&c, &r);
	assert_true(c.want_present);
	assert_int_equal(c.want_at, T0);
	/* The same condition checked later keeps its first time. */
	r.checked_at = T0 + 600;
	conditions_set_result(&c, &r);
	assert_int_equal(c.want_at, T0);
	char st[] = "False", re[] = "UnhealthyUnits", ltt[] = "2026-01-01T00:00:00Z";
	struct kube_node n = { .units_ready_status = st, .units_ready_reason = re, .units_ready_message = msg,
			       .units_ready_transition = ltt };
	conditions_set_node(&c, &n);
	assert_true(c.node_known);
	assert_false(conditions_differ(c.have_status, c.have_reason, c.have_message, c.want_ready, c.want_reason,
				       c.want_message));
	/* Nothing due: no request is started (http is NULL here). */
	assert_true(conditions_tick(&c, 1) == UINT64_MAX);
	conditions_set_node(&c, NULL);
	assert_false(c.node_known);
	conditions_set_result(&c, NULL);
	assert_false(c.want_present);
	conditions_done(&c);
	/* Off: every call is a no-op. */
	struct conditions off = {};
	conditions_set_result(&off, &r);
	assert_false(off.want_present);
	assert_true(conditions_tick(&off, 1) == UINT64_MAX);
}

static void unit_events(void **state)
{
	struct events e;
	assert_int_equal(events_init(&e, NULL, "n1"), 0);
	char a[] = "a.service", b[] = "b.service", c[] = "c.service", d[] = "d.service", x[] = "x.timer";
	char *few[] = { a, b, NULL }, *many[] = { a, b, c, d, NULL }, *stopped[] = { x, NULL };
	struct result res = { .restarted_units = few, .stopped_units = stopped };
	events_units(&e, &res);
	/* One series each (agent/events.h), in the order emitted. */
	assert_true(e.series[2].used && !e.series[3].used);
	assert_string_equal(e.series[0].reason, "SystemDUnitRestart");
	assert_string_equal(e.series[0].message, "processed restart of unit a.service");
	assert_false(e.series[0].warning);
	assert_string_equal(e.series[1].message, "processed restart of unit b.service");
	assert_string_equal(e.series[2].reason, "SystemDUnitStop");
	assert_string_equal(e.series[2].message, "processed stop of unit x.timer");
	res = (struct result){ .restarted_units = many };
	events_units(&e, &res);
	assert_true(e.series[3].used && !e.series[4].used);
	assert_string_equal(e.series[3].message, "processed restart of 4 units: a.service, b.service, c.service, d.service");
	/* The same units again: the same series, its count 2. */
	res = (struct result){ .restarted_units = few };
	events_units(&e, &res);
	assert_false(e.series[4].used);
	assert_int_equal(e.series[0].count, 2);
	res = (struct result){};
	events_units(&e, &res);
	assert_false(e.series[4].used);
	events_done(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(differ),
		cmocka_unit_test(body_keeps_transition_while_status_holds),
		cmocka_unit_test(node_parser_reads_condition),
		cmocka_unit_test(set_node_and_result),
		cmocka_unit_test(unit_events),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
