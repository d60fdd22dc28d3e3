/* Unit tests for agent/mirrors.c (issue 25, item 8): which registries the
 * readinessProbe duty follows, what each answer does (every host in one
 * try, any HTTP status counts, a failure restarts the try after
 * MIRRORS_RETRY_MS), that a verdict survives an unchanged configuration
 * and not a changed one, and what it hands the executor for an OSC. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/mirrors.h"
#include "cleanup.h"
#include "criconfig.h"
#include "desired.h"
#include "osc.h"

#define STATE "/var/lib/node-agent"

#define REGS(a_url)                                                                                                  \
	"spec:\n"                                                                                                    \
	"  criConfig:\n"                                                                                             \
	"    name: containerd\n"                                                                                     \
	"    containerd:\n"                                                                                          \
	"      registries:\n"                                                                                        \
	"      - upstream: a.example:5000\n"                                                                         \
	"        readinessProbe: true\n"                                                                             \
	"        hosts:\n"                                                                                           \
	"        - url: " a_url "\n"                                                                                 \
	"        - url: http://10.0.0.2:5000\n"                                                                      \
	"      - upstream: b.example\n"                                                                              \
	"        hosts:\n"                                                                                           \
	"        - url: http://10.0.0.3\n"                                                                           \
	"      - upstream: c.example\n"                                                                              \
	"        readinessProbe: false\n"                                                                            \
	"        hosts:\n"                                                                                           \
	"        - url: http://10.0.0.4\n"

static const char osc1[] = REGS("http://10.0.0.1:5000");
static const char osc2[] = REGS("https://10.0.0.9:5000"); /* a.example changed */
static const char none[] = "spec:\n  files: []\n";

static void follow_and_answers(void **state)
{
	(void)state;
	struct mirrors m = {};
	assert_int_equal(mirrors_follow(&m, osc1, strlen(osc1), STATE, "node-1", NULL), 0);
	assert_int_equal(m.n, 1); /* only the registry with readinessProbe: true */
	assert_string_equal(m.entries[0].upstream, "a.example:5000");
	assert_int_equal(m.entries[0].n_hosts, 2);
	assert_false(m.entries[0].ready);

	struct desired_ready_registry *rr = NULL;
	size_t n = 9;
	assert_int_equal(mirrors_desired(&m, osc1, strlen(osc1), STATE, "node-1", &rr, &n), 0);
	assert_int_equal(n, 0);
	assert_null(rr);

	/* No client attached: nothing starts, the deadline is now. */
	assert_true(mirrors_tick(&m, 1000) <= 1000);

	/* The first host answers (a 404 is an answer), the second not: the
	 * try ends, the next one starts with the first host within 2 s (the
	 * back-off's first ceiling, full jitter). */
	m.changed = false;
	mirrors_answer(&m, 0, 404, NULL, 1000);
	assert_int_equal(m.entries[0].host, 1);
	assert_false(m.entries[0].ready);
	mirrors_answer(&m, 0, 0, "Connection refused", 1100);
	assert_int_equal(m.entries[0].host, 0);
	assert_true(m.entries[0].next_at > 1100 && m.entries[0].next_at <= 1100 + MIRRORS_RETRY_MS);
	assert_false(m.entries[0].ready);
	assert_false(m.changed);
	assert_int_equal(mirrors_desired(&m, osc1, strlen(osc1), STATE, "node-1", &rr, &n), 0);
	assert_int_equal(n, 0);

	/* Both answer in one try: ready, and the loop is told. */
	mirrors_answer(&m, 0, 503, NULL, 3100);
	mirrors_answer(&m, 0, 200, NULL, 3200);
	assert_true(m.entries[0].ready);
	assert_true(m.changed);
	assert_int_equal(mirrors_tick(&m, 3300), UINT64_MAX); /* nothing more to ask */
	assert_int_equal(mirrors_desired(&m, osc1, strlen(osc1), STATE, "node-1", &rr, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rr[0].upstream, "a.example:5000");
	/* The digest is that of the hosts.toml the executor renders. */
	struct osc model;
	struct osc_error oerr = {};
	assert_int_equal(osc_parse(osc1, strlen(osc1), STATE, &model, &oerr), 0);
	char digest[65];
	assert_int_equal(cri_hosts_digest(&model.cri.registries[0], digest), 0);
	assert_string_equal(model.cri.registries[0].upstream, "a.example:5000");
	assert_true(model.cri.registries[0].readiness_probe);
	assert_false(model.cri.registries[1].readiness_probe);
	assert_string_equal(rr[0].sha256, digest);
	osc_done(&model);
	free(rr);

	/* An older OSC held back by a rollout, where a.example is another
	 * configuration: not listed for it (its digest differs). */
	assert_int_equal(mirrors_desired(&m, osc2, strlen(osc2), STATE, "node-1", &rr, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(mirrors_desired(&m, none, strlen(none), STATE, "node-1", &rr, &n), 0);
	assert_int_equal(n, 0);

	/* The same OSC again keeps the verdict; a changed configuration is
	 * probed again. */
	assert_int_equal(mirrors_follow(&m, osc1, strlen(osc1), STATE, "node-1", NULL), 0);
	assert_true(m.entries[0].ready);
	assert_int_equal(mirrors_follow(&m, osc2, strlen(osc2), STATE, "node-1", NULL), 0);
	assert_false(m.entries[0].ready);
	assert_true(mirrors_tick(&m, 5000) <= 5000);
	assert_int_equal(mirrors_follow(&m, none, strlen(none), STATE, "node-1", NULL), 0);
	assert_int_equal(m.n, 0);
	mirrors_done(&m);
}

static void unreadable_ca_is_a_failed_try(void **state)
{
	(void)state;
	static const char osc[] = "spec:\n"
				  "  criConfig:\n"
				  "    name: containerd\n"
				  "    containerd:\n"
				  "      registries:\n"
				  "      - upstream: a.example\n"
				  "        readinessProbe: true\n"
				  "        hosts:\n"
				  "        - url: https://10.0.0.1\n"
				  "          caCerts: [ca.crt]\n";
	struct mirrors m = {};
	/* A client is needed for a try to start; the CA file is read
	 * first and does not exist below this root. */
	struct http_client fake = {};
	assert_int_equal(mirrors_follow(&m, osc, strlen(osc), STATE, "node-1", "/nonexistent-mirrors-root"), 0);
	m.http = &fake;
	uint64_t next = mirrors_tick(&m, 1000);
	assert_null(m.entries[0].req);
	assert_false(m.entries[0].ready);
	assert_true(m.entries[0].warned);
	assert_true(next > 1000 && next <= 1000 + MIRRORS_RETRY_MS);
	m.http = NULL;
	mirrors_done(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(follow_and_answers),
		cmocka_unit_test(unreadable_ca_is_a_failed_try),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
