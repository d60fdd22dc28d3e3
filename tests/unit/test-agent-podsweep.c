/* Unit tests for agent/podsweep.c (gardener's deleteRemainingPods): a
 * wanted sweep lists the Node's Pods by field selector and deletes each one
 * after the other; 404 counts as deleted; a failed delete does not stop the
 * others but fails the round, which is tried again (list and all) after a
 * backoff; a failed list likewise; not wanted any more cancels. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "log.h"
#include "../../agent/podsweep.h"

static char requests[8][160];
static unsigned n_requests;
static int start_result;
static unsigned rounds_ok, rounds_failed;
static char last_why[400];

static int fake_start(struct podsweep *ps, const char *method, const char *path, const char *query)
{
	(void)ps;
	if (start_result < 0)
		return start_result;
	snprintf(requests[n_requests % 8], sizeof(requests[0]), "%s %s%s%s", method, path, query ? "?" : "",
		 query ? query : "");
	n_requests++;
	return 0;
}

static const char *last_request(void)
{
	return n_requests ? requests[(n_requests - 1) % 8] : "";
}

static void on_round(void *userdata, bool ok, const char *why)
{
	(void)userdata;
	if (ok)
		rounds_ok++;
	else {
		rounds_failed++;
		snprintf(last_why, sizeof(last_why), "%s", why);
	}
}

static const char *node = "node-1";
static const char *LIST = "{\"kind\":\"PodList\",\"items\":["
			  "{\"metadata\":{\"name\":\"calico-node-abc\",\"namespace\":\"kube-system\"},"
			  "\"spec\":{\"nodeName\":\"node-1\"}},"
			  "{\"metadata\":{\"name\":\"other\",\"namespace\":\"shop\"},\"spec\":{\"nodeName\":\"node-2\"}},"
			  "{\"metadata\":{\"name\":\"web-0\",\"namespace\":\"shop\"},\"spec\":{\"nodeName\":\"node-1\"}}]}";

static void setup(struct podsweep *ps)
{
	n_requests = 0;
	start_result = 0;
	rounds_ok = rounds_failed = 0;
	last_why[0] = '\0';
	podsweep_init(ps, NULL, &node, on_round, NULL);
	ps->start = fake_start;
}

static void sweep(void **state)
{
	struct podsweep ps;
	setup(&ps);
	assert_int_equal(podsweep_tick(&ps, 100), UINT64_MAX); /* not wanted: nothing */
	assert_int_equal(n_requests, 0);
	podsweep_want(&ps, true, NULL, 100);
	assert_false(podsweep_finished(&ps));
	assert_int_equal(podsweep_tick(&ps, 100), UINT64_MAX);
	assert_string_equal(last_request(), "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1");
	podsweep_want(&ps, true, NULL, 110); /* wanted again: nothing new */
	assert_int_equal(n_requests, 1);
	podsweep_listed(&ps, 200, LIST, strlen(LIST), NULL, 120);
	/* Ours only, one after the other. */
	assert_int_equal(n_requests, 2);
	assert_string_equal(last_request(), "DELETE /api/v1/namespaces/kube-system/pods/calico-node-abc");
	podsweep_deleted(&ps, 200, NULL, 130);
	assert_string_equal(last_request(), "DELETE /api/v1/namespaces/shop/pods/web-0");
	assert_false(podsweep_finished(&ps));
	podsweep_deleted(&ps, 404, "not found", 140); /* gone meanwhile: fine */
	assert_true(podsweep_finished(&ps));
	assert_int_equal(rounds_ok, 1);
	assert_int_equal(ps.deleted, 1);
	assert_int_equal(ps.gone, 1);
	assert_int_equal(n_requests, 3);
	assert_int_equal(podsweep_tick(&ps, 10000), UINT64_MAX); /* done: nothing more */
	/* The owner takes it: not wanted; a later update sweeps again. */
	podsweep_want(&ps, false, NULL, 150);
	assert_false(podsweep_finished(&ps));
	podsweep_want(&ps, true, NULL, 160);
	podsweep_tick(&ps, 160);
	assert_string_equal(last_request(), "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1");
	const char *empty = "{\"kind\":\"PodList\",\"items\":[]}";
	podsweep_listed(&ps, 200, empty, strlen(empty), NULL, 170);
	assert_true(podsweep_finished(&ps)); /* none left: done at once */
	assert_int_equal(rounds_ok, 2);
	podsweep_done(&ps);
}

static void failures(void **state)
{
	struct podsweep ps;
	setup(&ps);
	podsweep_want(&ps, true, NULL, 1000);
	podsweep_tick(&ps, 1000);
	/* A delete refused: the next is still tried, the round fails. */
	podsweep_listed(&ps, 200, LIST, strlen(LIST), NULL, 1000);
	podsweep_deleted(&ps, 403, "403 Forbidden: pod does not belong to node", 1000);
	assert_string_equal(last_request(), "DELETE /api/v1/namespaces/shop/pods/web-0");
	podsweep_deleted(&ps, 200, NULL, 1000);
	assert_false(podsweep_finished(&ps));
	assert_int_equal(rounds_failed, 1);
	assert_non_null(strstr(last_why, "Pod kube-system/calico-node-abc: 403 Forbidden"));
	/* Again after the backoff (2 s, half of it jittered), list and all. */
	uint64_t next = podsweep_tick(&ps, 1000);
	assert_true(next > 1000 + PODSWEEP_RETRY_BASE_MS / 2 - 1 && next <= 1000 + PODSWEEP_RETRY_BASE_MS);
	unsigned before = n_requests;
	assert_int_equal(podsweep_tick(&ps, next - 1), next);
	assert_int_equal(n_requests, before);
	podsweep_tick(&ps, next);
	assert_string_equal(last_request(), "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1");
	/* The list fails (no answer): the backoff doubles. */
	podsweep_listed(&ps, 0, NULL, 0, "connection refused", next);
	assert_int_equal(rounds_failed, 2);
	assert_non_null(strstr(last_why, "listing the Pods failed: connection refused"));
	uint64_t next2 = podsweep_tick(&ps, next);
	assert_true(next2 > next + PODSWEEP_RETRY_BASE_MS && next2 <= next + 2 * PODSWEEP_RETRY_BASE_MS);
	/* A list that does not parse: failed, naming the field. */
	podsweep_tick(&ps, next2);
	podsweep_listed(&ps, 200, "{\"kind\":\"Status\"}", 17, NULL, next2);
	assert_int_equal(rounds_failed, 3);
	assert_non_null(strstr(last_why, "kind"));
	/* A request that cannot start: failed too, not stuck. */
	uint64_t next3 = podsweep_tick(&ps, next2);
	start_result = -ENOKEY;
	podsweep_tick(&ps, next3);
	assert_int_equal(rounds_failed, 4);
	/* Then it works. */
	start_result = 0;
	uint64_t next4 = podsweep_tick(&ps, next3);
	podsweep_tick(&ps, next4);
	podsweep_listed(&ps, 200, LIST, strlen(LIST), NULL, next4);
	podsweep_deleted(&ps, 200, NULL, next4);
	podsweep_deleted(&ps, 200, NULL, next4);
	assert_true(podsweep_finished(&ps));
	assert_int_equal(rounds_ok, 1);
	assert_int_equal(ps.failures, 0);
	podsweep_done(&ps);
}

static void cancelled(void **state)
{
	struct podsweep ps;
	setup(&ps);
	podsweep_want(&ps, true, NULL, 5);
	podsweep_tick(&ps, 5);
	podsweep_listed(&ps, 200, LIST, strlen(LIST), NULL, 5);
	assert_int_equal(ps.phase, PODSWEEP_DELETING);
	/* The Node moved on (the condition gone): stopped, nothing told. */
	podsweep_want(&ps, false, NULL, 6);
	assert_int_equal(ps.phase, PODSWEEP_IDLE);
	assert_null(ps.pods);
	/* A late answer is ignored. */
	podsweep_deleted(&ps, 200, NULL, 7);
	podsweep_listed(&ps, 200, LIST, strlen(LIST), NULL, 7);
	assert_int_equal(ps.phase, PODSWEEP_IDLE);
	assert_int_equal(rounds_ok + rounds_failed, 0);
	podsweep_done(&ps);
}

int main(void)
{
	log_open("test-agent-podsweep", LOG_TARGET_STDERR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sweep),
		cmocka_unit_test(failures),
		cmocka_unit_test(cancelled),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
