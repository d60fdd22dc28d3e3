/* Unit tests for cloud-config-exec/unitcheck.c: the SystemdUnitsReady
 * condition from observed unit states, with gardener-node-agent's strings
 * (pkg/nodeagent/controller/systemdunitcheck/reconciler.go). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cloud-config-exec/unitcheck.h"

#define S 1000000ull
#define NOW (1763740800ull * S)

static char content[] = "[Service]\nExecStart=/bin/true\n";

static struct osc_unit unit(const char *name, int enable, bool with_content)
{
	return (struct osc_unit){ .name = (char *)(uintptr_t)name, .enable = enable,
				  .content = with_content ? content : NULL };
}

static struct unitcheck_observed seen(const char *active, const char *sub, uint64_t since_s)
{
	struct unitcheck_observed o = { .loaded = true };
	snprintf(o.probe.active_state, sizeof(o.probe.active_state), "%s", active);
	snprintf(o.probe.sub_state, sizeof(o.probe.sub_state), "%s", sub);
	o.probe.state_change_usec = NOW - since_s * S;
	snprintf(o.probe.service_type, sizeof(o.probe.service_type), "simple");
	return o;
}

static void check(struct osc_unit *units, size_t n, struct unitcheck_observed *obs, bool ready, const char *reason,
		  const char *message)
{
	struct osc osc = { .units = units, .n_units = n };
	struct result_units_ready c = {};
	assert_int_equal(unitcheck_evaluate(&osc, obs, NOW, UNITCHECK_STUCK_USEC, &c), 0);
	assert_true(c.present);
	assert_int_equal(c.ready, ready);
	assert_string_equal(c.reason, reason);
	assert_string_equal(c.message, message);
	assert_int_equal(c.checked_at, (time_t)(NOW / S));
	free(c.message);
}

static void all_healthy(void **state)
{
	struct osc_unit u[] = { unit("a.service", -1, true), unit("b.service", 0, true) };
	struct unitcheck_observed o[] = { seen("active", "running", 100), seen("inactive", "dead", 100) };
	check(u, 2, o, true, "AllUnitsHealthy",
	      "All systemd units from the operating system config are running as expected.");
	/* No units at all: healthy too. */
	check(u, 0, o, true, "AllUnitsHealthy",
	      "All systemd units from the operating system config are running as expected.");
}

static void unhealthy_states(void **state)
{
	struct osc_unit u[] = {
		unit("a.service", -1, true),  /* failed */
		unit("b.service", 0, true),   /* active but disabled */
		unit("c.service", 1, false),  /* not loaded */
		unit("d.service", -1, true),  /* stuck activating */
		unit("e.service", -1, true),  /* inactive (simple) */
		unit("f.service", 0, true),   /* failed but disabled: fine (#14733) */
		unit("g.service", -1, false), /* no content, enable unset: not "enabled" */
	};
	struct unitcheck_observed o[] = {
		seen("failed", "failed", 10),	 seen("active", "running", 10), { .loaded = false },
		seen("activating", "start", 301), seen("inactive", "dead", 10),	seen("failed", "failed", 10),
		seen("inactive", "dead", 10),
	};
	check(u, 7, o, false, "UnhealthyUnits",
	      "a.service: failed; b.service: active but should be disabled; c.service: not loaded; "
	      "d.service: stuck in activating for 5m1s; e.service: inactive but should be enabled");
}

static void progressing_and_exceptions(void **state)
{
	struct osc_unit u[] = { unit("a.service", -1, true), unit("b.service", -1, true), unit("c.service", -1, true),
				unit("d.timer", 1, true), unit("gardener-user.service", -1, true),
				unit("e.service", -1, true) };
	struct unitcheck_observed o[] = { seen("deactivating", "stop-sigterm", 3725), seen("activating", "auto-restart", 999),
					  seen("inactive", "dead", 5), seen("active", "waiting", 5),
					  { .loaded = false }, seen("inactive", "dead", 5) };
	/* c: a oneshot; e: triggered by d.timer; gardener-user is superseded. */
	snprintf(o[2].probe.service_type, sizeof(o[2].probe.service_type), "oneshot");
	o[5].probe.triggered = true;
	/* a is stuck; make it progressing by a short time first. */
	o[0].probe.state_change_usec = NOW - 90 * S;
	check(u, 6, o, true, "ProgressingUnits", "a.service: deactivating for 1m30s");
	o[0].probe.state_change_usec = NOW - 3725 * S;
	check(u, 6, o, false, "UnhealthyUnits", "a.service: stuck in deactivating for 1h2m5s");
}

static void durations_like_go(void **state)
{
	char b[48];
	assert_string_equal(unitcheck_format_duration(0, b, sizeof(b)), "0s");
	assert_string_equal(unitcheck_format_duration(45, b, sizeof(b)), "45s");
	assert_string_equal(unitcheck_format_duration(360, b, sizeof(b)), "6m0s");
	assert_string_equal(unitcheck_format_duration(3600, b, sizeof(b)), "1h0m0s");
}

static void long_message_is_cut(void **state)
{
	enum { N = 300 };
	struct osc_unit *u = calloc(N, sizeof(*u));
	struct unitcheck_observed *o = calloc(N, sizeof(*o));
	char (*names)[40] = calloc(N, 40);
	for (int i = 0; i < N; i++) {
		snprintf(names[i], 40, "unit-with-a-long-name-%03d.service", i);
		u[i] = unit(names[i], 1, true);
		o[i] = seen("failed", "failed", 1);
	}
	struct osc osc = { .units = u, .n_units = N };
	struct result_units_ready c = {};
	assert_int_equal(unitcheck_evaluate(&osc, o, NOW, UNITCHECK_STUCK_USEC, &c), 0);
	assert_false(c.ready);
	assert_true(strlen(c.message) <= RESULT_CONDITION_MESSAGE_MAX);
	assert_true(strlen(c.message) > RESULT_CONDITION_MESSAGE_MAX - 60);
	assert_memory_equal(c.message, "unit-with-a-long-name-000.service: failed; ", 43);
	free(c.message);
	free(u);
	free(o);
	free(names);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(all_healthy),
		cmocka_unit_test(unhealthy_states),
		cmocka_unit_test(progressing_and_exceptions),
		cmocka_unit_test(durations_like_go),
		cmocka_unit_test(long_message_is_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
