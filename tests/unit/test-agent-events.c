/* Unit tests for the Events duty (agent/events.c) against a stand-in for
 * the HTTP client (http_start() and its neighbours are defined here): an
 * Event is a series, as client-go's EventCorrelator keeps them
 * (tools/record/events_cache.go): the first occurrence a POST under a name
 * of ours, repeats a PATCH of its count and lastTimestamp at most every
 * EVENTS_SERIES_MIN_MS; a 404 on the PATCH creates it again under the same
 * name, a 409 on the POST patches it, a 403 on the PATCH makes each repeat
 * a new Event; what the API server's gate takes waits and is not counted;
 * three failures of a write drop it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/events.h"
#include "../../agent/http.h"

/* ---- the stand-in HTTP client ------------------------------------------- */

static struct {
	unsigned started;
	char method[8], path[320], body[2048];
	http_done_cb done;
	void *userdata;
	struct http_request req;
	bool active;
	uint64_t gate_at;
} fake;

static uint64_t fake_now = 1000000;

uint64_t now_ms(void)
{
	return fake_now;
}

uint64_t http_due(const struct http_client *c, uint64_t wake_at)
{
	(void)c;
	return fake.gate_at > wake_at ? fake.gate_at : wake_at;
}

bool http_gate_took(const struct http_request *req)
{
	return req->gate_took;
}

void http_describe_failure(const struct http_request *req, char *buf, size_t len)
{
	snprintf(buf, len, "HTTP %ld", req->status);
}

void http_cancel(struct http_request *req)
{
	(void)req;
	fake.active = false;
}

int http_start(struct http_client *c, const char *method, const char *path, const char *query, const char *payload,
	       const char *content_type, bool watch, kube_line_cb on_line, http_done_cb done, void *userdata,
	       struct http_request **ret)
{
	(void)c;
	(void)query;
	(void)watch;
	(void)on_line;
	assert_false(fake.active);
	assert_string_equal(content_type, strcmp(method, "PATCH") == 0 ? "application/strategic-merge-patch+json"
								      : "application/json");
	fake.started++;
	snprintf(fake.method, sizeof(fake.method), "%s", method);
	snprintf(fake.path, sizeof(fake.path), "%s", path);
	snprintf(fake.body, sizeof(fake.body), "%s", payload);
	fake.done = done;
	fake.userdata = userdata;
	fake.req = (struct http_request){ .method = method };
	fake.active = true;
	*ret = &fake.req;
	return 0;
}

/* Ends the request under way with status (gate: the gate took it). */
static void answer(long status, bool gate)
{
	assert_true(fake.active);
	fake.active = false;
	fake.req.result = status ? CURLE_OK : CURLE_COULDNT_CONNECT;
	fake.req.status = status;
	fake.req.gate_took = gate;
	fake.done(&fake.req, fake.userdata);
}

/* The number in "count":N of the last body. */
static long body_count(void)
{
	const char *p = strstr(fake.body, "\"count\":");
	assert_non_null(p);
	return strtol(p + 8, NULL, 10);
}

/* The name of the last POST's Event. */
static const char *body_name(void)
{
	static char name[300];
	const char *p = strstr(fake.body, "\"metadata\":{\"name\":\"");
	assert_non_null(p);
	p += strlen("\"metadata\":{\"name\":\"");
	size_t n = strcspn(p, "\"");
	snprintf(name, sizeof(name), "%.*s", (int)n, p);
	return name;
}

static struct events ev;

static int setup(void **state)
{
	(void)state;
	memset(&fake, 0, sizeof(fake));
	fake_now = 1000000;
	assert_int_equal(events_init(&ev, (struct http_client *)&fake, "machine-shoot--garden--a-worker-z1-5c9f"), 0);
	events_set_node(&ev, "0b5a3e0c-1f2d-4e5f-8a9b-0c1d2e3f4a5b");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	events_done(&ev);
	return 0;
}

static void lost_ip(void)
{
	events_emit(&ev, true, "kubelet", "Node status does neither have an internal nor an external IP, try to recover "
					  "from last known internal IP: %s", "10.250.0.7");
}

static void series(void **state)
{
	(void)state;
	lost_ip();
	assert_int_equal(events_tick(&ev, fake_now), UINT64_MAX);
	assert_string_equal(fake.method, "POST");
	assert_string_equal(fake.path, "/api/v1/namespaces/default/events");
	char name[300];
	snprintf(name, sizeof(name), "%s", body_name());
	assert_true(strncmp(name, "machine-shoot--garden--a-worker-z1-5c9f.", 40) == 0);
	assert_int_equal(body_count(), 1);
	answer(201, false);
	/* Every 30 s for 5 min: one series, a PATCH per repeat (30 s apart:
	 * more than EVENTS_SERIES_MIN_MS). */
	for (int i = 2; i <= 10; i++) {
		fake_now += 30000;
		lost_ip();
		events_tick(&ev, fake_now);
		assert_string_equal(fake.method, "PATCH");
		char want[400];
		snprintf(want, sizeof(want), "/api/v1/namespaces/default/events/%s", name);
		assert_string_equal(fake.path, want);
		assert_int_equal(body_count(), i);
		assert_non_null(strstr(fake.body, "\"lastTimestamp\":"));
		answer(200, false);
	}
	assert_int_equal(fake.started, 10);
	/* Faster repeats: coalesced, at most one PATCH per 10 s. */
	fake_now += 30000;
	lost_ip();
	events_tick(&ev, fake_now);
	answer(200, false);
	for (int i = 0; i < 5; i++) {
		fake_now += 1000;
		lost_ip();
		assert_int_equal(events_tick(&ev, fake_now), fake_now - (i + 1) * 1000 + EVENTS_SERIES_MIN_MS);
	}
	unsigned started = fake.started;
	fake_now += EVENTS_SERIES_MIN_MS;
	events_tick(&ev, fake_now);
	assert_int_equal(fake.started, started + 1);
	assert_int_equal(body_count(), 16);
	answer(200, false);
	/* Another message: another Event. */
	events_emit(&ev, false, "kubelet", "Updated the lost internal IP address of node status to the previous known: "
					   "10.250.0.7 ");
	events_tick(&ev, fake_now);
	assert_string_equal(fake.method, "POST");
	assert_string_not_equal(body_name(), name);
	answer(201, false);
}

static void gone_conflict_denied(void **state)
{
	(void)state;
	lost_ip();
	events_tick(&ev, fake_now);
	char name[300];
	snprintf(name, sizeof(name), "%s", body_name());
	/* The POST reached the server, its answer did not: 409 next time. */
	answer(409, false);
	events_tick(&ev, fake_now);
	assert_string_equal(fake.method, "PATCH");
	answer(200, false);
	/* The API server dropped it (its event TTL): created again under
	 * its name, with the count so far. */
	fake_now += 30000;
	lost_ip();
	events_tick(&ev, fake_now);
	assert_string_equal(fake.method, "PATCH");
	answer(404, false);
	events_tick(&ev, fake_now);
	assert_string_equal(fake.method, "POST");
	assert_string_equal(body_name(), name);
	assert_int_equal(body_count(), 2);
	answer(201, false);
	/* No patch permission: each repeat a new Event (said once). */
	fake_now += 30000;
	lost_ip();
	events_tick(&ev, fake_now);
	answer(403, false);
	events_tick(&ev, fake_now);
	assert_string_equal(fake.method, "POST");
	assert_string_not_equal(body_name(), name);
	answer(201, false);
	assert_true(ev.no_patch);
	fake_now += 30000;
	lost_ip();
	events_tick(&ev, fake_now);
	assert_string_equal(fake.method, "POST");
	answer(201, false);
}

static void gate_and_failures(void **state)
{
	(void)state;
	lost_ip();
	/* The API server does not serve: no write before its gate opens. */
	fake.gate_at = fake_now + 7000;
	assert_int_equal(events_tick(&ev, fake_now), fake_now + 7000);
	assert_int_equal(fake.started, 0);
	fake.gate_at = 0;
	/* What the gate takes is not counted against the series. */
	for (int i = 0; i < 5; i++) {
		events_tick(&ev, fake_now);
		answer(0, true);
	}
	assert_int_equal(ev.dropped, 0);
	/* Its own failures are, and back off: three, then dropped. */
	for (int i = 0; i < 3; i++) {
		uint64_t next = events_tick(&ev, fake_now);
		if (next != UINT64_MAX) {
			fake_now = next;
			events_tick(&ev, fake_now);
		}
		answer(500, false);
	}
	assert_int_equal(ev.dropped, 1);
	assert_int_equal(events_tick(&ev, fake_now + 3600000), UINT64_MAX); /* nothing pending */
	/* The next occurrence tries again (a POST: it was never created). */
	lost_ip();
	uint64_t next = events_tick(&ev, fake_now);
	fake_now = next == UINT64_MAX ? fake_now : next;
	events_tick(&ev, fake_now);
	assert_string_equal(fake.method, "POST");
	assert_int_equal(body_count(), 2);
	answer(201, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(series, setup, teardown),
		cmocka_unit_test_setup_teardown(gone_conflict_denied, setup, teardown),
		cmocka_unit_test_setup_teardown(gate_and_failures, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
