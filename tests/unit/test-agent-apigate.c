/* Unit tests for the API server's gate (agent/apigate.h): nobody serving
 * closes it for every duty, one probe at a time goes at the back-off's
 * slots, the first answer opens it (or, a starting server's 403/429/5xx,
 * keeps it closed at the starting pace), the revived window, and its log:
 * one line when a condition starts (not for a single refused attempt), one
 * when it ends, none per attempt. */
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

#include "../../agent/apigate.h"
#include "log.h"

/* The log lines (stderr, at info and above) written since mark. */
static char logfile[] = "/tmp/test-agent-apigate.XXXXXX";
static int log_fd = -1;

static unsigned lines_matching(const char *what)
{
	char buf[65536];
	ssize_t n = pread(log_fd, buf, sizeof(buf) - 1, 0);
	assert_true(n >= 0);
	buf[n] = '\0';
	unsigned k = 0;
	for (char *p = buf; (p = strstr(p, what)); p++)
		k++;
	return k;
}

static unsigned lines(void)
{
	return lines_matching("\n");
}

static int setup(void **state)
{
	(void)state;
	log_fd = mkstemp(logfile);
	assert_true(log_fd >= 0);
	if (!getenv("KEEP_LOG"))
		unlink(logfile);
	assert_true(dup2(log_fd, STDERR_FILENO) == STDERR_FILENO);
	log_open("test-agent-apigate", LOG_TARGET_STDERR);
	return 0;
}

static bool admit(struct apigate *g, uint64_t now)
{
	bool probe;
	return apigate_admit(g, now, &probe);
}

static void outage_then_back(void **state)
{
	(void)state;
	struct apigate g;
	apigate_init(&g, "https://api.shoot--proj--name.example.internal:443/");
	assert_string_equal(g.server, "api.shoot--proj--name.example.internal:443");
	assert_int_equal(apigate_at(&g), 0);
	bool probe;
	assert_true(apigate_admit(&g, 1000, &probe));
	assert_false(probe);
	/* Any other failure in UP is the duty's. */
	assert_false(apigate_failed(&g, false, false, "timed out after the handshake", 1000));
	assert_false(apigate_answer(&g, 500, false, 1000));
	assert_false(apigate_answer(&g, 403, false, 1000));
	/* Nobody serving: closed for everybody; not logged yet. */
	unsigned before = lines();
	assert_true(apigate_failed(&g, true, false, "Connection refused", 1000));
	assert_int_equal(g.state, APIGATE_DOWN);
	assert_true(apigate_at(&g) > 1000 && apigate_at(&g) <= 1500);
	assert_false(admit(&g, 1000));
	assert_int_equal(lines(), before);
	/* A request in flight before also fails: taken, still not logged
	 * (one condition, whose second attempt it is, at the same instant). */
	/* The slot: one probe; the others wait while it is in flight. */
	uint64_t t = apigate_at(&g);
	assert_true(apigate_admit(&g, t, &probe));
	assert_true(probe);
	assert_int_equal(apigate_at(&g), UINT64_MAX);
	assert_false(admit(&g, t + 100000));
	/* The probe fails too: the condition is logged, once. */
	assert_true(apigate_failed(&g, true, true, "Connection refused", t + 10));
	assert_int_equal(lines_matching("unreachable since"), 1);
	assert_int_equal(g.conditions, 1);
	/* Two minutes of it: nothing more logged, at most 15 s between slots. */
	t += 10;
	unsigned attempts = 2;
	while (t < 121000) {
		t = apigate_at(&g);
		assert_true(apigate_admit(&g, t, &probe) && probe);
		assert_true(apigate_failed(&g, true, true, "Connection refused", t));
		attempts++;
		assert_true(apigate_at(&g) - t <= 15000);
	}
	assert_int_equal(lines_matching("unreachable since"), 1);
	assert_int_equal(lines(), before + 1);
	/* The server answers: open for everybody, the end logged with the
	 * count and the duration. */
	t = apigate_at(&g);
	assert_true(apigate_admit(&g, t, &probe) && probe);
	assert_false(apigate_answer(&g, 200, true, t));
	assert_int_equal(g.state, APIGATE_UP);
	assert_int_equal(apigate_at(&g), 0);
	assert_int_equal(lines_matching("serves again after"), 1);
	char want[64];
	snprintf(want, sizeof(want), "%u failed attempt(s)", attempts);
	assert_int_equal(lines_matching(want), 1);
	assert_int_equal(lines(), before + 2);
}

static void a_single_failure_is_no_condition(void **state)
{
	(void)state;
	struct apigate g;
	apigate_init(&g, "https://127.0.0.1:6443");
	unsigned before = lines();
	assert_true(apigate_failed(&g, true, false, "Connection refused", 1000));
	uint64_t t = apigate_at(&g);
	bool probe;
	assert_true(apigate_admit(&g, t, &probe) && probe);
	assert_false(apigate_answer(&g, 404, true, t)); /* an answer: it serves */
	assert_int_equal(g.state, APIGATE_UP);
	assert_int_equal(lines(), before);
}

/* A restarting kube-apiserver: nobody serving, then 403 "RBAC: clusterrole
 * not found", 500 and 429 until it is ready: not a missing permission, the
 * starting pace (at most 1 s apart for 10 s, 2 s for 20 s), one start line
 * and one end line. */
static void starting_server(void **state)
{
	(void)state;
	struct apigate g;
	apigate_init(&g, "https://127.0.0.1:6443");
	unsigned before = lines(), starts = lines_matching("unreachable since"), ends = lines_matching("serves again");
	assert_true(apigate_failed(&g, true, false, "Empty reply from server", 0));
	bool probe;
	uint64_t t = 0;
	for (int i = 0; i < 10; i++) { /* 60 s or so of nobody */
		t = apigate_at(&g);
		assert_true(apigate_admit(&g, t, &probe));
		assert_true(apigate_failed(&g, true, probe, "Empty reply from server", t));
	}
	assert_int_equal(lines_matching("unreachable since"), starts + 1);
	/* Its first answers: 403 (RBAC not loaded yet), taken by the gate. */
	t = apigate_at(&g);
	assert_true(apigate_admit(&g, t, &probe));
	assert_true(apigate_answer(&g, 403, probe, t));
	assert_int_equal(g.state, APIGATE_STARTING);
	uint64_t first_answer = t;
	assert_true(apigate_at(&g) - t <= 500); /* the starting pace from its base */
	for (int i = 0; i < 20; i++) {
		t = apigate_at(&g);
		assert_true(apigate_admit(&g, t, &probe));
		assert_true(apigate_answer(&g, i % 2 ? 500 : 429, probe, t));
		assert_true(apigate_at(&g) - t <= (t - first_answer < 10000 ? 1000u : t - first_answer < 20000 ? 2000u
													      : 15000u));
	}
	/* Past the revived window a 403 is a verdict: it serves. */
	while ((t = apigate_at(&g)) < first_answer + APIGATE_REVIVED_MS) {
		assert_true(apigate_admit(&g, t, &probe));
		assert_true(apigate_answer(&g, 503, probe, t));
	}
	assert_true(apigate_admit(&g, t, &probe));
	assert_false(apigate_answer(&g, 403, probe, t));
	assert_int_equal(g.state, APIGATE_UP);
	assert_int_equal(lines(), before + 2);
	assert_int_equal(lines_matching("serves again after"), ends + 1);
}

/* Within the revived window after an outage: a 500 or 403 right after the
 * first success sends the gate back to STARTING, quietly (the end was
 * logged; no new start for the same restart). */
static void revived_window(void **state)
{
	(void)state;
	struct apigate g;
	apigate_init(&g, "https://127.0.0.1:6443");
	bool probe;
	assert_true(apigate_failed(&g, true, false, "Connection refused", 0));
	uint64_t t = apigate_at(&g);
	assert_true(apigate_admit(&g, t, &probe));
	assert_true(apigate_failed(&g, true, probe, "Connection refused", t));
	t = apigate_at(&g);
	assert_true(apigate_admit(&g, t, &probe));
	assert_false(apigate_answer(&g, 200, probe, t)); /* back */
	unsigned before = lines();
	assert_true(apigate_answer(&g, 403, false, t + 100)); /* RBAC not quite loaded */
	assert_int_equal(g.state, APIGATE_STARTING);
	uint64_t u = apigate_at(&g);
	assert_true(apigate_admit(&g, u, &probe));
	assert_true(apigate_answer(&g, 503, probe, u));
	u = apigate_at(&g);
	assert_true(apigate_admit(&g, u, &probe));
	assert_false(apigate_answer(&g, 200, probe, u));
	assert_int_equal(lines(), before);
	/* Long after: a 500 is the duty's own again. */
	assert_false(apigate_answer(&g, 500, false, t + APIGATE_REVIVED_MS + 1));
	assert_int_equal(g.state, APIGATE_UP);
	/* A probe cancelled by its duty frees the slot. */
	assert_true(apigate_failed(&g, true, false, "Connection refused", 100000));
	u = apigate_at(&g);
	assert_true(apigate_admit(&g, u, &probe) && probe);
	assert_false(admit(&g, u));
	apigate_probe_gone(&g);
	assert_true(admit(&g, u));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(outage_then_back),
		cmocka_unit_test(a_single_failure_is_no_condition),
		cmocka_unit_test(starting_server),
		cmocka_unit_test(revived_window),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
