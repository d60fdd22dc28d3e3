/* Unit tests for agent/serial.c: when the serial rollout duty may ask for
 * its Lease. Gardener's node-agent authorizer (gardener/gardener
 * pkg/resourcemanager/webhook/nodeagentauthorizer/authorizer.go,
 * authorizeLease) refuses every Lease request of a node-agent whose Node
 * does not exist and allows only gardener-node-agent-<node> and the Lease
 * named by the Node's label worker.gardener.cloud/gardener-node-agent-secret-name:
 * no request is started before that, one is once it holds. The requests are
 * only started (counted by the HTTP client), never sent: nothing listens. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../agent/http.h"
#include "../../agent/serial.h"
#include "config.h"

struct fixture {
	struct config cfg;
	struct http_client http;
	struct serial s;
	char dir[64];
	char token[96];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_int_equal(config_defaults(&f->cfg), 0);
	snprintf(f->dir, sizeof(f->dir), "/tmp/test-agent-serial.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->token, sizeof(f->token), "%s/token", f->dir);
	FILE *t = fopen(f->token, "w");
	assert_non_null(t);
	fputs("test-token\n", t);
	fclose(t);
	free(f->cfg.server);
	free(f->cfg.token_file);
	f->cfg.server = strdup("https://127.0.0.1:1");
	f->cfg.token_file = strdup(f->token);
	assert_non_null(f->cfg.server);
	assert_non_null(f->cfg.token_file);
	assert_int_equal(http_client_init(&f->http, &f->cfg), 0);
	serial_init(&f->s, &f->http, "node-1");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	serial_done(&f->s);
	http_client_done(&f->http);
	config_done(&f->cfg);
	unlink(f->token);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* A serial Secret and a change that wants the Lease, but no Node: nothing
 * is asked (not even the check for a Lease of ours from before a restart);
 * the Node appears: the Lease is read. */
static void waits_for_the_node(void **state)
{
	struct fixture *f = *state;
	serial_set_secret(&f->s, "kube-system", "osc-secret-worker-a", "uid-1", true);
	serial_want(&f->s, true);
	assert_false(serial_node_allows(&f->s));
	assert_int_equal(serial_tick(&f->s, 1000), UINT64_MAX);
	assert_int_equal(f->http.n_requests, 0);
	/* Seen as missing (a 404 on the Node): still nothing. */
	serial_set_node(&f->s, false, NULL);
	assert_int_equal(serial_tick(&f->s, 2000), UINT64_MAX);
	assert_int_equal(f->http.n_requests, 0);
	/* The Node is there, labelled with this Secret's name. */
	serial_set_node(&f->s, true, "osc-secret-worker-a");
	assert_true(serial_node_allows(&f->s));
	uint64_t next = serial_tick(&f->s, 3000);
	assert_int_equal(f->http.n_requests, 1);
	assert_non_null(f->s.req);
	assert_int_equal(next, 3000 + SERIAL_REQUEST_MS);
	/* The Node deleted: the request under way ends on its own, no new one. */
	serial_set_node(&f->s, false, NULL);
	assert_false(serial_node_allows(&f->s));
}

/* The label names another Secret: the authorizer would refuse this Lease,
 * so it is not asked for; the label changes to this Secret: it is, at once. */
static void label_names_another_secret(void **state)
{
	struct fixture *f = *state;
	serial_set_secret(&f->s, "kube-system", "osc-secret-worker-a", "uid-1", true);
	serial_want(&f->s, true);
	serial_set_node(&f->s, true, "osc-secret-worker-b");
	assert_false(serial_node_allows(&f->s));
	assert_int_equal(serial_tick(&f->s, 1000), UINT64_MAX);
	assert_int_equal(f->http.n_requests, 0);
	serial_set_node(&f->s, true, "osc-secret-worker-a");
	serial_tick(&f->s, 1001);
	assert_int_equal(f->http.n_requests, 1);
}

/* Held when the label moved on to another Secret: the Lease is still given
 * back (RBAC allows it; Gardener's authorizer answers 403, and the hold is
 * dropped then). Before the Node exists, not even that. */
static void held_is_given_back(void **state)
{
	struct fixture *f = *state;
	const char lease[] = "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":"
			     "{\"name\":\"osc-secret-worker-a\",\"namespace\":\"kube-system\",\"resourceVersion\":\"5\"},"
			     "\"spec\":{\"holderIdentity\":\"node-1\",\"leaseDurationSeconds\":600}}";
	serial_set_secret(&f->s, "kube-system", "osc-secret-worker-a", "uid-1", true);
	f->s.check = false;
	f->s.held = true;
	f->s.obj = strdup(lease);
	assert_non_null(f->s.obj);
	f->s.obj_len = strlen(lease);
	snprintf(f->s.rv, sizeof(f->s.rv), "5");
	serial_want(&f->s, false);
	assert_int_equal(serial_tick(&f->s, 1000), UINT64_MAX);
	assert_int_equal(f->http.n_requests, 0);
	serial_set_node(&f->s, true, "osc-secret-worker-b");
	assert_false(serial_node_allows(&f->s));
	serial_tick(&f->s, 1001);
	assert_int_equal(f->http.n_requests, 1);
	assert_int_equal(f->s.step, SERIAL_RELEASE);
}

/* Plain RBAC: a Node without the label; its existence is enough. */
static void no_label_is_enough(void **state)
{
	struct fixture *f = *state;
	serial_set_secret(&f->s, "kube-system", "osc-secret-worker-a", "uid-1", true);
	serial_set_node(&f->s, true, NULL);
	assert_true(serial_node_allows(&f->s));
	serial_want(&f->s, true);
	serial_tick(&f->s, 1000);
	assert_int_equal(f->http.n_requests, 1);
}

/* Not in serial mode: nothing is asked, Node or not. */
static void off_asks_nothing(void **state)
{
	struct fixture *f = *state;
	serial_set_node(&f->s, true, "osc-secret-worker-a");
	serial_set_secret(&f->s, "kube-system", "osc-secret-worker-a", "uid-1", false);
	serial_want(&f->s, true);
	assert_int_equal(serial_tick(&f->s, 1000), UINT64_MAX);
	assert_int_equal(f->http.n_requests, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(waits_for_the_node, setup, teardown),
		cmocka_unit_test_setup_teardown(label_names_another_secret, setup, teardown),
		cmocka_unit_test_setup_teardown(held_is_given_back, setup, teardown),
		cmocka_unit_test_setup_teardown(no_label_is_enough, setup, teardown),
		cmocka_unit_test_setup_teardown(off_asks_nothing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
