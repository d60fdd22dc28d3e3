/* Unit tests for agent/metrics.c and the address parser of agent/httpd.c:
 * the state of an earlier run picked up at start shows in /metrics (the
 * desired generation and the result: issue 24's "wiped on restart"), the
 * apply duration has sub-second resolution, /readyz follows the last
 * contact within the window, build_info and the process_* metrics are
 * there, the listener counts carry a label per listener, and the page is
 * in the text format (a TYPE before every family's samples, sample lines
 * "name{labels} value"). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/httpd.h"
#include "../../agent/metrics.h"

#define SUM "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* The value of the sample line starting with "name " (or "name{...} "
 * given whole), or NULL. */
static const char *sample(const char *page, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = page; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, name, n) == 0 && p[n] == ' ')
			return p + n + 1;
	return NULL;
}

static char *render(const struct metrics *m)
{
	struct httpd_body b = {};
	metrics_render(m, &b);
	assert_false(b.overflow);
	httpd_printf(&b, "%s", ""); /* NUL-terminate an empty page too */
	return b.buf;
}

/* Every sample's family has a TYPE line before it; samples are
 * name{label="v",...} value. */
static void assert_format(const char *page)
{
	regex_t re;
	assert_int_equal(regcomp(&re,
				 "^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"\\\\]*\""
				 "(,[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"\\\\]*\")*\\})? -?[0-9.e+]+$",
				 REG_EXTENDED),
			 0);
	char typed[4096] = " ";
	char *copy = strdup(page), *save = NULL;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (strncmp(l, "# HELP ", 7) == 0)
			continue;
		if (strncmp(l, "# TYPE ", 7) == 0) {
			char name[128];
			assert_int_equal(sscanf(l + 7, "%127s", name), 1);
			strncat(typed, name, sizeof(typed) - strlen(typed) - 2);
			strcat(typed, " ");
			continue;
		}
		regmatch_t mt[2];
		if (regexec(&re, l, 2, mt, 0) != 0)
			fail_msg("bad line: %s", l);
		char name[130] = " ";
		snprintf(name + 1, sizeof(name) - 2, "%.*s", (int)(mt[1].rm_eo - mt[1].rm_so), l);
		strcat(name, " ");
		if (!strstr(typed, name))
			fail_msg("no TYPE before: %s", l);
	}
	free(copy);
	regfree(&re);
}

static void restored_after_restart(void **state)
{
	(void)state;
	struct metrics m;
	metrics_init(&m);
	/* What agent_start() does with desired.json and result.json of an
	 * earlier run. */
	metrics_restore(&m, 2, SUM);
	struct result res = { .generation = 2, .success = true, .finished_at = 1000 };
	memcpy(res.checksum, SUM, sizeof(res.checksum));
	metrics_set_result(&m, &res);
	char *page = render(&m);
	assert_format(page);
	assert_int_equal(strncmp(sample(page, "node_agent_desired_generation"), "2\n", 2), 0);
	assert_int_equal(strncmp(sample(page, "node_agent_applied_generation"), "2\n", 2), 0);
	assert_int_equal(strncmp(sample(page, "node_agent_apply_success"), "1\n", 2), 0);
	assert_non_null(sample(page, "node_agent_applied_info{checksum=\"" SUM "\"}"));
	/* Written by an earlier process: no duration for it. */
	assert_null(sample(page, "node_agent_apply_duration_seconds"));
	free(page);
}

static void duration_sub_second(void **state)
{
	(void)state;
	struct metrics m;
	metrics_init(&m);
	metrics_set_desired(&m, 3, SUM);
	struct result res = { .generation = 3, .success = false, .finished_at = time(NULL) };
	memcpy(res.checksum, SUM, sizeof(res.checksum));
	metrics_set_result(&m, &res);
	/* Read at once: well under a second, and not rounded to 0 or 1. */
	assert_true(m.apply_seconds >= 0 && m.apply_seconds < 1.0);
	char *page = render(&m);
	const char *v = sample(page, "node_agent_apply_duration_seconds");
	assert_non_null(v);
	assert_non_null(strchr(v, '.')); /* milliseconds: "0.001" */
	assert_true(strchr(v, '.') < strchr(v, '\n'));
	assert_int_equal(strncmp(sample(page, "node_agent_apply_success"), "0\n", 2), 0);
	free(page);
}

static void ready_window(void **state)
{
	(void)state;
	struct metrics m;
	metrics_init(&m);
	m.ready_window_ms = 150000;
	assert_false(metrics_ready(&m, 1000)); /* never */
	m.last_contact_ms = 1000;
	assert_true(metrics_ready(&m, 1000));
	assert_true(metrics_ready(&m, 151000));
	assert_false(metrics_ready(&m, 151001)); /* stale: 503 again */
	/* A Lease renewal is contact too. */
	struct lease l = { .last_renew_ms = 100000 };
	m.lease = &l;
	assert_true(metrics_ready(&m, 250000));
	assert_false(metrics_ready(&m, 250001));
}

static void process_and_build_info(void **state)
{
	(void)state;
	struct metrics m;
	metrics_init(&m);
	struct httpd h = { .served = { 3, 5 }, .dropped = { 1, 0 } };
	m.httpd = &h;
	char *page = render(&m);
	assert_format(page);
	assert_non_null(strstr(page, "\nnode_agent_build_info{version=\""));
	assert_non_null(sample(page, "process_cpu_seconds_total"));
	assert_non_null(sample(page, "process_start_time_seconds"));
	assert_true(strtod(sample(page, "process_start_time_seconds"), NULL) > 1.6e9);
	assert_true(strtoll(sample(page, "process_resident_memory_bytes"), NULL, 10) > 0);
	assert_true(strtoll(sample(page, "process_open_fds"), NULL, 10) >= 3);
	assert_non_null(strstr(page, "# TYPE process_cpu_seconds_total counter\n"));
	assert_int_equal(strncmp(sample(page, "node_agent_http_responses_total{listener=\"healthz\"}"), "3\n", 2), 0);
	assert_int_equal(strncmp(sample(page, "node_agent_http_responses_total{listener=\"metrics\"}"), "5\n", 2), 0);
	assert_int_equal(strncmp(sample(page, "node_agent_http_dropped_total{listener=\"healthz\"}"), "1\n", 2), 0);
	free(page);
}

static void listen_addresses(void **state)
{
	(void)state;
	struct sockaddr_storage sa;
	socklen_t len;
	assert_int_equal(httpd_parse_address("127.0.0.1", 2751, &sa, &len), 0);
	assert_int_equal(sa.ss_family, AF_INET);
	assert_int_equal(len, sizeof(struct sockaddr_in));
	assert_int_equal(ntohs(((struct sockaddr_in *)&sa)->sin_port), 2751);
	assert_int_equal(httpd_parse_address("::1", 2752, &sa, &len), 0);
	assert_int_equal(sa.ss_family, AF_INET6);
	assert_int_equal(len, sizeof(struct sockaddr_in6));
	assert_int_equal(ntohs(((struct sockaddr_in6 *)&sa)->sin6_port), 2752);
	assert_int_equal(httpd_parse_address("[::1]", 1, &sa, &len), 0);
	assert_int_equal(sa.ss_family, AF_INET6);
	assert_true(IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&sa)->sin6_addr));
	assert_int_equal(httpd_parse_address("[::1", 1, &sa, &len), -EINVAL);
	assert_int_equal(httpd_parse_address("[]", 1, &sa, &len), -EINVAL);
	assert_int_equal(httpd_parse_address("localhost", 1, &sa, &len), -EINVAL);
	assert_int_equal(httpd_parse_address("[127.0.0.1]", 1, &sa, &len), -EINVAL);
	assert_int_equal(httpd_parse_address("", 1, &sa, &len), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(restored_after_restart), cmocka_unit_test(duration_sub_second),
		cmocka_unit_test(ready_window),		  cmocka_unit_test(process_and_build_info),
		cmocka_unit_test(listen_addresses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
