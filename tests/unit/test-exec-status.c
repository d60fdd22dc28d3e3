/* Unit tests for cloud-config-exec/status.c, the `status` page: local
 * times with the zone and the age (not epoch seconds), a failed apply shown
 * as failed with its step and error (not "unfinished"), an interrupted
 * apply told apart from a failed one, what is pending (a newer desired
 * state, a restart request not executed), and the exit status. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../cloud-config-exec/status.h"

#define SUM_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SUM_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
/* 2026-11-26 12:00:00 UTC */
#define T0 ((time_t)1795694400)

static char *page(const struct status_view *v, time_t now, int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	*ret = status_print(f, v, now);
	fclose(f);
	return buf;
}

static int setup(void **state)
{
	(void)state;
	setenv("TZ", "CET-1", 1); /* fixed offset, no DST: the same on every machine */
	tzset();
	return 0;
}

static void success_local_time(void **state)
{
	(void)state;
	struct result res = { .generation = 4, .success = true, .finished_at = T0 };
	memcpy(res.checksum, SUM_A, 65);
	struct desired d = { .generation = 4 };
	memcpy(d.checksum, SUM_A, 65);
	struct status_view v = { .exec_state_dir = "/var/lib/cloud-config-exec", .state_dir = "/var/lib/node-agent",
				 .applied_checksum = SUM_A, .res = &res, .desired = &d };
	int rc;
	char *p = page(&v, T0 + 185, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(p, "last run: finished 2026-11-26 13:00:00 CET (3 min ago)\n"));
	assert_non_null(strstr(p, "result: success for " SUM_A " (generation 4)\n"));
	assert_non_null(strstr(p, "pending: nothing\n"));
	assert_null(strstr(p, "1795694400")); /* no raw epoch */
	free(p);
}

static void failed_not_unfinished(void **state)
{
	(void)state;
	char step[] = "units", error[] = "start of a.service failed";
	struct result res = { .generation = 5, .success = false, .finished_at = T0, .failed_step = step,
			      .error = error };
	memcpy(res.checksum, SUM_B, 65);
	struct desired d = { .generation = 5 };
	memcpy(d.checksum, SUM_B, 65);
	/* A failed apply leaves its progress record: it is retried, not
	 * "unfinished". */
	struct state st = { .progress_steps = STATE_STEP_FILES };
	memcpy(st.progress_checksum, SUM_B, 65);
	struct status_view v = { .exec_state_dir = "/x", .state_dir = "/y", .applied_checksum = SUM_A, .res = &res,
				 .desired = &d, .st = &st, .timer_hint = "the next run" };
	int rc;
	char *p = page(&v, T0 + 7200 + 300, &rc);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(p, "(2 h 5 min ago)"));
	assert_non_null(strstr(p, "result: FAILED in step units for " SUM_B " (generation 5)\nerror: start of a.service failed\n"));
	assert_non_null(strstr(p, "pending: the failed apply of bbbbbbbbbbbb (steps it got through: files) is tried again by the next run\n"));
	assert_null(strstr(p, "interrupted"));
	assert_null(strstr(p, "unfinished"));
	assert_non_null(strstr(p, "last applied: " SUM_A "\n"));
	free(p);
}

/* issue 35: a failure that every run repeats until someone acts is never
 * "tried again" nor "nothing": the damaged desired.json (the run's result
 * says so, status names who writes it anew), a KRL changed by hand. */
static void failures_that_need_a_person(void **state)
{
	(void)state;
	char step[] = "desired", error[] = "/y/desired.json rejected: not valid JSON; node-agent writes it anew";
	struct result res = { .success = false, .finished_at = T0, .failed_step = step, .error = error };
	struct status_view v = { .exec_state_dir = "/x", .state_dir = "/y", .applied_checksum = SUM_A, .res = &res,
				 .desired_problem = "not valid JSON", .timer_hint = "the next run" };
	int rc;
	char *p = page(&v, T0 + 60, &rc);
	assert_int_equal(rc, 1);
	assert_null(strstr(p, "pending: nothing\n"));
	assert_null(strstr(p, "tried again"));
	assert_non_null(strstr(p, "pending: nothing can be applied until node-agent writes /y/desired.json anew "
				  "(systemctl restart node-agent)\n"));
	free(p);

	char kstep[] = "keys", kerror[] = "/x/revoked-keys.krl was changed outside cloud-config-exec (by hand, "
					   "ssh-keygen -k?) or is damaged: ... run `cloud-config-exec revoke --replace`";
	struct result kres = { .generation = 5, .success = false, .finished_at = T0, .failed_step = kstep,
			       .error = kerror };
	memcpy(kres.checksum, SUM_B, 65);
	struct state st = { .progress_steps = STATE_STEP_FILES | STATE_STEP_UNITS };
	memcpy(st.progress_checksum, SUM_B, 65);
	struct status_view kv = { .exec_state_dir = "/x", .state_dir = "/y", .applied_checksum = SUM_A, .res = &kres,
				  .st = &st, .timer_hint = "the next run" };
	p = page(&kv, T0 + 60, &rc);
	assert_int_equal(rc, 1);
	assert_null(strstr(p, "tried again"));
	assert_non_null(strstr(p, "pending: the failed apply; every run fails the same way until the revoked-keys list "
				  "is resolved as the error says (cloud-config-exec revoke --replace)\n"));
	free(p);

	/* result.json unreadable: who writes it anew, not "no result.json". */
	struct desired d = { .generation = 6 };
	memcpy(d.checksum, SUM_B, 65);
	struct status_view rv = { .exec_state_dir = "/x", .state_dir = "/y", .res_problem = "not valid JSON",
				  .desired = &d, .timer_hint = "the next run" };
	p = page(&rv, T0, &rc);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(p, "pending: /x/result.json is written anew by the next run\n"));
	assert_null(strstr(p, "no result.json"));
	free(p);
}

static void interrupted_and_pending(void **state)
{
	(void)state;
	struct result res = { .generation = 4, .success = true, .finished_at = T0 };
	memcpy(res.checksum, SUM_A, 65);
	char unit[] = "kubelet.service", id[] = "r-1";
	char *units[] = { unit, NULL };
	struct desired d = { .generation = 6, .restart_id = id, .restart_units = units };
	memcpy(d.checksum, SUM_B, 65);
	struct state st = { .progress_steps = STATE_STEP_FILES | STATE_STEP_UNITS };
	memcpy(st.progress_checksum, SUM_B, 65);
	struct status_view v = { .exec_state_dir = "/x", .state_dir = "/y", .res = &res, .desired = &d, .st = &st };
	int rc;
	char *p = page(&v, T0 + 10, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(p, "pending: desired state generation 6 (checksum bbbbbbbbbbbb) not applied yet\n"));
	assert_non_null(strstr(p, "pending: an apply of bbbbbbbbbbbb was interrupted after the steps: files, units; the next run resumes it\n"));
	assert_non_null(strstr(p, "pending: restart request r-1 (kubelet.service) not executed yet\n"));
	assert_non_null(strstr(p, "(10 s ago)"));
	free(p);
}

static void never_ran(void **state)
{
	(void)state;
	struct status_view v = { .exec_state_dir = "/x", .state_dir = "/y", .exec_dir_missing = true };
	int rc;
	char *p = page(&v, T0, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(p, "last run: never (no /x)\n"));
	assert_non_null(strstr(p, "desired state: none"));
	free(p);
	v.exec_dir_missing = false;
	v.res_problem = "unknown key \"x\"";
	p = page(&v, T0, &rc);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(p, "result: /x/result.json unreadable: unknown key \"x\"\n"));
	free(p);
}

static void ages(void **state)
{
	(void)state;
	char b[64];
	status_fmt_age(T0, T0 + 59, b, sizeof(b));
	assert_string_equal(b, "59 s ago");
	status_fmt_age(T0, T0 + 86400 * 3, b, sizeof(b));
	assert_string_equal(b, "3 days ago");
	status_fmt_age(T0, T0 + 86400, b, sizeof(b));
	assert_string_equal(b, "1 day ago");
	status_fmt_age(T0 + 100, T0, b, sizeof(b));
	assert_string_equal(b, "in the future: check the clock");
	status_fmt_time(0, b, sizeof(b));
	assert_string_equal(b, "-");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(success_local_time), cmocka_unit_test(failed_not_unfinished),
		cmocka_unit_test(interrupted_and_pending), cmocka_unit_test(failures_that_need_a_person), cmocka_unit_test(never_ran), cmocka_unit_test(ages),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
