/* Unit tests for how a watch (agent/watch.c) reads its object before it
 * watches it, against a stand-in for the HTTP client (http_start() and its
 * neighbours are defined here, so agent/http.c is not linked): the Node is
 * read with a list by name (fieldSelector metadata.name=<node>), which
 * Gardener's node-agent authorizer allows while the Node does not exist yet
 * (a GET of it is refused then); an empty list is "missing", a Node in it is
 * delivered as ADDED; a refused list falls back to a GET until the
 * permissions are learnt anew (watch_resync(), or a refused GET); the
 * Secret is read with a GET as before; 410 re-reads with the same verb. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/http.h"
#include "../../agent/watch.h"

/* ---- the stand-in HTTP client ------------------------------------------- */

static struct {
	unsigned started;
	char method[8], path[256], query[512];
	bool watch;
	kube_line_cb on_line;
	http_done_cb done;
	void *userdata;
	struct http_request req;
	bool active;
} fake;

static uint64_t fake_now = 1000000;

uint64_t now_ms(void)
{
	return fake_now;
}

/* The API server's gate (apigate.h), as the test sets it. */
static uint64_t fake_gate_at;

uint64_t http_gate_at(const struct http_client *c)
{
	(void)c;
	return fake_gate_at;
}

uint64_t http_due(const struct http_client *c, uint64_t wake_at)
{
	(void)c;
	return fake_gate_at > wake_at ? fake_gate_at : wake_at;
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
	(void)payload;
	(void)content_type;
	assert_false(fake.active);
	fake.started++;
	snprintf(fake.method, sizeof(fake.method), "%s", method);
	snprintf(fake.path, sizeof(fake.path), "%s", path);
	snprintf(fake.query, sizeof(fake.query), "%s", query ? query : "");
	fake.watch = watch;
	fake.on_line = on_line;
	fake.done = done;
	fake.userdata = userdata;
	free(fake.req.path);
	fake.req = (struct http_request){ .path = strdup(path), .method = method, .last_activity_ms = fake_now };
	fake.active = true;
	*ret = &fake.req;
	return 0;
}

/* Ends the request under way with status and body (a one-shot answer). */
static void answer(long status, const char *body)
{
	assert_true(fake.active);
	fake.active = false;
	fake.req.result = CURLE_OK;
	fake.req.status = status;
	fake.req.body = body ? strdup(body) : NULL;
	fake.req.body_len = body ? strlen(body) : 0;
	fake.done(&fake.req, fake.userdata);
	free(fake.req.body);
	fake.req.body = NULL;
}

/* Ends the request under way as the gate took it: no answer at all
 * (status 0: nobody serving), or a starting server's status. */
static void answer_gate(long status)
{
	assert_true(fake.active);
	fake.active = false;
	fake.req.result = status ? CURLE_OK : CURLE_COULDNT_CONNECT;
	fake.req.status = status;
	fake.req.gate_took = true;
	fake.done(&fake.req, fake.userdata);
}

/* ---- the owner's callbacks ---------------------------------------------- */

static struct {
	unsigned objects, missing;
	enum kube_event_type type;
	char name[64], uid[64];
} seen;

static void on_object(struct watch *w, enum kube_event_type type, const struct kube_secret *s,
		      const struct kube_node *n, void *userdata)
{
	(void)w;
	(void)userdata;
	seen.objects++;
	seen.type = type;
	snprintf(seen.name, sizeof(seen.name), "%s", n ? n->name : s->name);
	snprintf(seen.uid, sizeof(seen.uid), "%s", n && n->uid ? n->uid : "");
}

static void on_missing(struct watch *w, void *userdata)
{
	(void)w;
	(void)userdata;
	seen.missing++;
}

static const struct watch_ops ops = { .on_object = on_object, .on_missing = on_missing };

static struct config cfg;
static struct http_client client;

static int setup(void **state)
{
	(void)state;
	free(fake.req.path);
	memset(&fake, 0, sizeof(fake));
	memset(&seen, 0, sizeof(seen));
	fake_gate_at = 0;
	cfg = (struct config){ .resync_interval_ms = 36000000, .watch_idle_timeout_ms = 120000,
			       .response_max = 1 << 20 };
	client = (struct http_client){ .cfg = &cfg };
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(fake.req.path);
	fake.req.path = NULL;
	return 0;
}

static const char empty_list[] = "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"900\"},"
				 "\"items\":[]}";
static const char node_list[] = "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"900\"},"
				"\"items\":[{\"metadata\":{\"name\":\"node-1\",\"uid\":\"u-1\",\"resourceVersion\":\"812\"}}]}";
static const char node_obj[] = "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-1\",\"uid\":\"u-1\","
			       "\"resourceVersion\":\"812\"}}";

static void expect_list(void)
{
	assert_string_equal(fake.method, "GET");
	assert_string_equal(fake.path, "/api/v1/nodes");
	assert_string_equal(fake.query, "fieldSelector=metadata.name%3Dnode-1");
	assert_false(fake.watch);
}

static const char secret_obj[] = "{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"osc\","
				 "\"namespace\":\"kube-system\",\"resourceVersion\":\"77\"},\"data\":{}}";

static void expect_secret_get(void)
{
	assert_string_equal(fake.method, "GET");
	assert_string_equal(fake.path, "/api/v1/namespaces/kube-system/secrets/osc");
	assert_string_equal(fake.query, "");
	assert_false(fake.watch);
}

static void expect_get(void)
{
	assert_string_equal(fake.method, "GET");
	assert_string_equal(fake.path, "/api/v1/nodes/node-1");
	assert_string_equal(fake.query, "");
	assert_false(fake.watch);
}

static void expect_watch_from_now(void)
{
	assert_string_equal(fake.path, "/api/v1/nodes");
	assert_true(fake.watch);
	assert_non_null(strstr(fake.query, "watch=1&fieldSelector=metadata.name%3Dnode-1"));
	assert_null(strstr(fake.query, "resourceVersion="));
}

/* Before the kubelet registers the Node: a list by name, no GET; empty is
 * "missing" (an answer: reconcile() need not wait), then a watch without a
 * version, which delivers the Node as ADDED once it is created. */
static void node_absent_listed(void **state)
{
	(void)state;
	struct watch w;
	assert_int_equal(watch_init(&w, &client, KUBE_KIND_NODE, NULL, "node-1", false, &ops, NULL), 0);
	watch_tick(&w, fake_now);
	assert_int_equal(fake.started, 1);
	expect_list();
	answer(200, empty_list);
	assert_int_equal(seen.missing, 1);
	assert_int_equal(seen.objects, 0);
	assert_true(w.synced);
	assert_int_equal(w.state, WATCH_NEED_WATCH);
	assert_int_equal(w.denied, 0);
	watch_tick(&w, fake_now);
	assert_int_equal(fake.started, 2);
	expect_watch_from_now();
	watch_done(&w);
}

/* The Node exists: the list's item is delivered as ADDED (uid for the
 * Lease's owner), the watch starts without a version, as after a GET. */
static void node_present_listed(void **state)
{
	(void)state;
	struct watch w;
	assert_int_equal(watch_init(&w, &client, KUBE_KIND_NODE, NULL, "node-1", false, &ops, NULL), 0);
	watch_tick(&w, fake_now);
	expect_list();
	answer(200, node_list);
	assert_int_equal(seen.objects, 1);
	assert_int_equal(seen.type, KUBE_EVENT_ADDED);
	assert_string_equal(seen.name, "node-1");
	assert_string_equal(seen.uid, "u-1");
	assert_int_equal(seen.missing, 0);
	assert_true(w.synced);
	assert_string_equal(w.rv, ""); /* never the read's version */
	watch_tick(&w, fake_now);
	expect_watch_from_now();
	/* 410 on the watch: re-read at once, again with a list. */
	answer(410, NULL);
	assert_int_equal(w.state, WATCH_NEED_GET);
	watch_tick(&w, fake_now);
	expect_list();
	answer(200, node_list);
	assert_int_equal(seen.objects, 2);
	watch_done(&w);
}

/* RBAC without list on nodes: the list is answered 403, the Node is read
 * with a GET at once (logged once), and GETs stay until watch_resync(). */
static void list_refused_falls_back_to_get(void **state)
{
	(void)state;
	struct watch w;
	assert_int_equal(watch_init(&w, &client, KUBE_KIND_NODE, NULL, "node-1", false, &ops, NULL), 0);
	watch_tick(&w, fake_now);
	expect_list();
	answer(403, "{\"kind\":\"Status\",\"code\":403}");
	assert_int_equal(w.state, WATCH_NEED_GET);
	assert_true(w.denied & WATCH_DENIED_LIST);
	assert_int_equal(w.wake_at, fake_now);
	assert_false(backoff_failing(&w.fail));
	watch_tick(&w, fake_now);
	expect_get();
	answer(200, node_obj);
	assert_int_equal(seen.objects, 1);
	assert_string_equal(seen.uid, "u-1");
	watch_tick(&w, fake_now);
	expect_watch_from_now();
	answer(410, NULL);
	watch_tick(&w, fake_now);
	expect_get(); /* still refused: no list tried again */
	answer(404, "{\"kind\":\"Status\",\"code\":404}");
	assert_int_equal(seen.missing, 1);
	watch_tick(&w, fake_now);
	expect_watch_from_now();
	/* New credentials or SIGHUP: the list is tried again. */
	watch_resync(&w);
	assert_false(w.denied & WATCH_DENIED_LIST);
	watch_tick(&w, fake_now);
	expect_list();
	answer(200, empty_list);
	assert_int_equal(seen.missing, 2);
	watch_done(&w);
}

/* A credential that reads no Node at all (the bootstrap token before the
 * certificate): list and GET refused; the next try (after the backoff) is
 * a list again, not a GET that Gardener's authorizer would refuse. */
static void get_refused_too_lists_again(void **state)
{
	(void)state;
	struct watch w;
	assert_int_equal(watch_init(&w, &client, KUBE_KIND_NODE, NULL, "node-1", false, &ops, NULL), 0);
	watch_tick(&w, fake_now);
	expect_list();
	answer(403, NULL);
	watch_tick(&w, fake_now);
	expect_get();
	answer(403, NULL);
	assert_int_equal(w.state, WATCH_NEED_GET);
	assert_true(w.wake_at > fake_now);
	assert_false(w.denied & WATCH_DENIED_LIST);
	assert_true(w.denied & WATCH_DENIED_GET);
	fake_now = w.wake_at;
	watch_tick(&w, fake_now);
	expect_list();
	answer(200, node_list);
	assert_int_equal(seen.objects, 1);
	assert_int_equal(w.denied, 0);
	watch_done(&w);
}

/* An answer that is no NodeList is an error (backoff), not "missing". */
static void list_invalid(void **state)
{
	(void)state;
	struct watch w;
	assert_int_equal(watch_init(&w, &client, KUBE_KIND_NODE, NULL, "node-1", false, &ops, NULL), 0);
	watch_tick(&w, fake_now);
	answer(200, "{\"kind\":\"SecretList\",\"items\":[]}");
	assert_int_equal(seen.missing, 0);
	assert_int_equal(seen.objects, 0);
	assert_false(w.synced);
	assert_int_equal(w.state, WATCH_NEED_GET);
	assert_true(w.wake_at > fake_now);
	watch_done(&w);
}

/* The Secret is still read with a GET by name. */
static void secret_still_get(void **state)
{
	(void)state;
	struct watch w;
	assert_int_equal(watch_init(&w, &client, KUBE_KIND_SECRET, "kube-system", "osc", false, &ops, NULL), 0);
	watch_tick(&w, fake_now);
	assert_string_equal(fake.path, "/api/v1/namespaces/kube-system/secrets/osc");
	assert_string_equal(fake.query, "");
	answer(404, NULL);
	assert_int_equal(seen.missing, 1);
	watch_done(&w);
}

/* What the API server's gate takes (nobody serving, a starting server)
 * is no failure of the watch's own: no back-off of its own, no denial; the
 * next try waits for the gate (http_due()) and goes as soon as it opens. */
static void gate_paces_the_retry(void **state)
{
	(void)state;
	struct watch w;
	assert_int_equal(watch_init(&w, &client, KUBE_KIND_SECRET, "kube-system", "osc", false, &ops, NULL), 0);
	watch_tick(&w, fake_now);
	expect_secret_get();
	answer_gate(0);
	assert_int_equal(w.state, WATCH_NEED_GET);
	assert_int_equal(w.wake_at, fake_now);
	assert_false(backoff_failing(&w.fail));
	assert_true(w.failing);
	/* The gate holds it: nothing starts, the deadline is the gate's. */
	fake_gate_at = fake_now + 7000;
	unsigned started = fake.started;
	assert_int_equal(watch_tick(&w, fake_now), fake_now + 7000);
	assert_int_equal(fake.started, started);
	/* The gate opens (the probe of another duty got an answer): at once. */
	fake_gate_at = 0;
	fake_now += 100;
	watch_tick(&w, fake_now);
	expect_secret_get();
	answer(200, secret_obj);
	assert_false(w.failing);
	watch_tick(&w, fake_now);
	/* A starting server's 403 on the watch (the gate's, within its
	 * revived window): no missing permission, read again at once. */
	answer_gate(403);
	assert_int_equal(w.state, WATCH_NEED_GET);
	assert_int_equal(w.wake_at, fake_now);
	assert_int_equal(w.denied, 0);
	watch_done(&w);
}

/* The watch's own failures (a 500 once the server serves) back off with
 * full jitter from 0.5 s, doubling every second of the condition's age
 * (never sooner than Retry-After), and a read that works ends the
 * condition. */
static void own_failures_back_off(void **state)
{
	(void)state;
	struct watch w;
	assert_int_equal(watch_init(&w, &client, KUBE_KIND_SECRET, "kube-system", "osc", false, &ops, NULL), 0);
	watch_tick(&w, fake_now);
	answer(500, NULL);
	assert_true(backoff_failing(&w.fail));
	assert_true(w.wake_at > fake_now && w.wake_at <= fake_now + 500);
	/* 4 s later the ceiling is 0.5 s * 2^4, 30 s later at the cap. */
	fake_now += 4000;
	watch_tick(&w, fake_now);
	answer(500, NULL);
	assert_int_equal(w.fail.attempts, 2);
	assert_true(backoff_limit(&w.fail, fake_now) == 8000);
	assert_true(backoff_limit(&w.fail, fake_now + 26000) == 30000);
	/* Retry-After: 20 s. */
	fake_now = w.wake_at;
	watch_tick(&w, fake_now);
	fake.req.retry_after = 20;
	answer(429, NULL);
	assert_true(w.wake_at >= fake_now + 20000);
	fake_now = w.wake_at;
	watch_tick(&w, fake_now);
	answer(200, secret_obj);
	assert_false(backoff_failing(&w.fail));
	watch_done(&w);
}

/* A Role without watch (403 on the watch, not the gate's): the verb is
 * denied, the object read with a GET at once, the next watch after the
 * refused watch's back-off. */
static void watch_denied_reads_then_waits(void **state)
{
	(void)state;
	struct watch w;
	assert_int_equal(watch_init(&w, &client, KUBE_KIND_SECRET, "kube-system", "osc", false, &ops, NULL), 0);
	watch_tick(&w, fake_now);
	answer(200, secret_obj);
	watch_tick(&w, fake_now);
	answer(403, NULL);
	assert_true(w.denied & WATCH_DENIED_WATCH);
	assert_int_equal(w.state, WATCH_NEED_GET);
	assert_int_equal(w.wake_at, fake_now);
	watch_tick(&w, fake_now);
	expect_secret_get();
	answer(200, secret_obj);
	assert_int_equal(w.state, WATCH_NEED_WATCH);
	assert_true(w.wake_at > fake_now && w.wake_at <= fake_now + 500);
	watch_done(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(node_absent_listed, setup, teardown),
		cmocka_unit_test_setup_teardown(node_present_listed, setup, teardown),
		cmocka_unit_test_setup_teardown(list_refused_falls_back_to_get, setup, teardown),
		cmocka_unit_test_setup_teardown(get_refused_too_lists_again, setup, teardown),
		cmocka_unit_test_setup_teardown(list_invalid, setup, teardown),
		cmocka_unit_test_setup_teardown(secret_still_get, setup, teardown),
		cmocka_unit_test_setup_teardown(gate_paces_the_retry, setup, teardown),
		cmocka_unit_test_setup_teardown(own_failures_back_off, setup, teardown),
		cmocka_unit_test_setup_teardown(watch_denied_reads_then_waits, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
