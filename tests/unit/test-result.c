/* Unit tests for lib/node/result.c: round trips of success and failure records,
 * error sanitising, strictness and ceilings. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "result.h"

#define SUM "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

static char kubelet[] = "kubelet.service", gu[] = "gardener-user.path", bare[] = "kubelet";
static char step_units[] = "units", step_bad[] = "Units!";
static char restart[] = "node-uid/42";

static void round_trip_success(void **state)
{
	char *units[] = { kubelet, gu, NULL };
	struct result r = { .checksum = SUM, .generation = 9007199254740991ULL, .success = true,
			    .changed_units = units, .restart_id = restart, .finished_at = 1763740800 };
	_cleanup_free_ char *out = NULL;
	size_t len;
	assert_int_equal(result_format(&r, &out, &len), 0);
	assert_int_equal(len, strlen(out));
	assert_non_null(strstr(out, "9007199254740991"));
	struct result p = {};
	const char *err = NULL;
	int k = result_parse(out, len, &p, &err);
	if (k < 0)
		fail_msg("%s", err);
	assert_string_equal(p.checksum, SUM);
	assert_int_equal(p.generation, 9007199254740991ULL);
	assert_true(p.success);
	assert_null(p.failed_step);
	assert_null(p.error);
	assert_string_equal(p.changed_units[0], "kubelet.service");
	assert_string_equal(p.changed_units[1], "gardener-user.path");
	assert_null(p.changed_units[2]);
	assert_string_equal(p.restart_id, "node-uid/42");
	assert_int_equal(p.finished_at, 1763740800);
	_cleanup_free_ char *again = NULL;
	assert_int_equal(result_format(&p, &again, NULL), 0);
	assert_string_equal(again, out);
	result_done(&p);
	result_done(&p);
}

static void round_trip_failure(void **state)
{
	/* A failure before the desired state could be read has no checksum. */
	char msg[] = "desired.json: checksum: does not match\n\tline two \x01";
	struct result r = { .checksum = "", .generation = 0, .success = false, .failed_step = step_units,
			    .error = msg, .finished_at = 0 };
	_cleanup_free_ char *out = NULL;
	size_t len;
	assert_int_equal(result_format(&r, &out, &len), 0);
	struct result p = {};
	assert_int_equal(result_parse(out, len, &p, NULL), 0);
	assert_false(p.success);
	assert_string_equal(p.checksum, "");
	assert_string_equal(p.failed_step, "units");
	/* Control characters became spaces. */
	assert_string_equal(p.error, "desired.json: checksum: does not match  line two  ");
	assert_non_null(p.changed_units); /* always written, here empty */
	assert_null(p.changed_units[0]);
	assert_null(p.restart_id);
	result_done(&p);
}

static void round_trip_units_and_condition(void **state)
{
	char a[] = "kubelet.service", b[] = "containerd.service", c[] = "old.timer";
	char *restarted[] = { a, b, NULL }, *stopped[] = { c, NULL };
	char msg[] = "kubelet.service: failed; old.timer: active but should be disabled";
	struct result r = { .checksum = SUM, .generation = 3, .success = true, .restarted_units = restarted,
			    .stopped_units = stopped, .finished_at = 10,
			    .units_ready = { .present = true, .ready = false, .reason = "UnhealthyUnits",
					     .message = msg, .checked_at = 9 } };
	_cleanup_free_ char *out = NULL;
	size_t len;
	assert_int_equal(result_format(&r, &out, &len), 0);
	struct result p = {};
	const char *err = NULL;
	if (result_parse(out, len, &p, &err) < 0)
		fail_msg("%s", err);
	assert_string_equal(p.restarted_units[1], "containerd.service");
	assert_null(p.restarted_units[2]);
	assert_string_equal(p.stopped_units[0], "old.timer");
	assert_true(p.units_ready.present);
	assert_false(p.units_ready.ready);
	assert_string_equal(p.units_ready.reason, "UnhealthyUnits");
	assert_string_equal(p.units_ready.message, msg);
	assert_int_equal(p.units_ready.checked_at, 9);
	_cleanup_free_ char *again = NULL;
	assert_int_equal(result_format(&p, &again, NULL), 0);
	assert_string_equal(again, out);
	result_done(&p);

	/* Absent in an older executor's document: nothing present. */
	const char *old = "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":true,\"finishedAt\":5}";
	assert_int_equal(result_parse(old, strlen(old), &p, NULL), 0);
	assert_false(p.units_ready.present);
	assert_null(p.restarted_units);
	assert_null(p.stopped_units);
	result_done(&p);

	/* format refuses what parse would refuse. */
	r.units_ready.reason[0] = '\0';
	char *bad = NULL;
	assert_int_equal(result_format(&r, &bad, NULL), -EINVAL);
	snprintf(r.units_ready.reason, sizeof(r.units_ready.reason), "Ok");
	r.units_ready.message = NULL;
	assert_int_equal(result_format(&r, &bad, NULL), -EINVAL);
	assert_null(bad);
}

static void long_error_is_cut_at_utf8_boundary(void **state)
{
	char *msg = malloc(RESULT_ERROR_MAX * 2 + 1);
	/* "é" is 2 bytes: start at an odd offset so the cut lands mid-sequence. */
	msg[0] = 'x';
	for (size_t i = 1; i + 1 < RESULT_ERROR_MAX * 2; i += 2) {
		msg[i] = (char)0xc3;
		msg[i + 1] = (char)0xa9;
	}
	msg[RESULT_ERROR_MAX * 2 - 1] = '\0';
	struct result r = { .checksum = SUM, .success = false, .failed_step = step_units, .error = msg };
	_cleanup_free_ char *out = NULL;
	assert_int_equal(result_format(&r, &out, NULL), 0);
	struct result p = {};
	assert_int_equal(result_parse(out, strlen(out), &p, NULL), 0);
	size_t n = strlen(p.error);
	assert_true(n <= RESULT_ERROR_MAX && n >= RESULT_ERROR_MAX - 2);
	assert_int_equal((unsigned char)p.error[n - 2], 0xc3); /* ends on a whole "é" */
	assert_int_equal((unsigned char)p.error[n - 1], 0xa9);
	result_done(&p);
	free(msg);
}

static void format_refuses_bad_input(void **state)
{
	char *out = NULL;
	struct result r = { .checksum = SUM, .success = true, .failed_step = step_units };
	assert_int_equal(result_format(&r, &out, NULL), -EINVAL); /* failedStep on success */
	r.success = false;
	r.failed_step = NULL;
	assert_int_equal(result_format(&r, &out, NULL), -EINVAL); /* no failedStep on failure */
	r.failed_step = step_bad;
	assert_int_equal(result_format(&r, &out, NULL), -EINVAL);
	r.failed_step = step_units;
	char *units[] = { bare, NULL };
	r.changed_units = units;
	assert_int_equal(result_format(&r, &out, NULL), -EINVAL);
	char *dup[] = { kubelet, kubelet, NULL };
	r.changed_units = dup;
	assert_int_equal(result_format(&r, &out, NULL), -EINVAL);
	r.changed_units = NULL;
	r.success = true;
	r.failed_step = NULL;
	r.checksum[0] = '\0';
	assert_int_equal(result_format(&r, &out, NULL), -EINVAL); /* success needs a checksum */
	memcpy(r.checksum, "BA78", 4);
	assert_int_equal(result_format(&r, &out, NULL), -EINVAL);
	memcpy(r.checksum, SUM, 65);
	r.finished_at = -1;
	assert_int_equal(result_format(&r, &out, NULL), -EINVAL);
	assert_null(out);
}

static void bad_documents(void **state)
{
	static const struct {
		const char *doc;
		int r;
		const char *err;
	} table[] = {
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":true,\"finishedAt\":5}", 0, NULL },
		{ "{\"version\":1,\"checksum\":\"\",\"generation\":1,\"success\":false,\"failedStep\":\"read\","
		  "\"finishedAt\":5}", 0, NULL },
		{ "", -EINVAL, "not valid JSON" },
		{ "{\"version\":2,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":true,\"finishedAt\":5}",
		  -EPROTONOSUPPORT, "version" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":true,\"finishedAt\":5,\"x\":1}",
		  -EINVAL, "document: unknown" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":true,\"success\":false,"
		  "\"finishedAt\":5}", -EINVAL, "document: unknown or duplicate" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":\"yes\",\"finishedAt\":5}",
		  -EINVAL, "success" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"finishedAt\":5}", -EINVAL, "success" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":true}", -EINVAL, "finishedAt" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":true,\"finishedAt\":-5}", -EINVAL,
		  "finishedAt" },
		{ "{\"version\":1,\"checksum\":\"\",\"generation\":1,\"success\":true,\"finishedAt\":5}", -EINVAL,
		  "checksum: empty on success" },
		{ "{\"version\":1,\"checksum\":\"abc\",\"generation\":1,\"success\":false,\"failedStep\":\"x\","
		  "\"finishedAt\":5}", -EINVAL, "checksum" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":false,\"finishedAt\":5}", -EINVAL,
		  "failedStep: missing" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":true,\"error\":\"e\","
		  "\"finishedAt\":5}", -EINVAL, "failedStep/error: present on success" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":false,\"failedStep\":\"a b\","
		  "\"finishedAt\":5}", -EINVAL, "failedStep" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":false,\"failedStep\":\"x\","
		  "\"error\":\"a\\nb\",\"finishedAt\":5}", -EINVAL, "error" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":true,"
		  "\"changedUnits\":[\"kubelet\"],\"finishedAt\":5}", -EINVAL, "changedUnits: invalid" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":true,"
		  "\"changedUnits\":\"kubelet.service\",\"finishedAt\":5}", -EINVAL, "changedUnits: not an array" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":true,"
		  "\"changedUnits\":[null],\"finishedAt\":5}", -EINVAL, "changedUnits: not a string" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":true,"
		  "\"restartId\":\"\",\"finishedAt\":5}", -EINVAL, "restartId" },
		{ "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":true,"
		  "\"restartId\":7,\"finishedAt\":5}", -EINVAL, "restartId: not a string" },
#define OK_HEAD "{\"version\":1,\"checksum\":\"" SUM "\",\"generation\":1,\"success\":true,"
		{ OK_HEAD "\"restartedUnits\":[\"a.service\",\"a.service\"],\"finishedAt\":5}", -EINVAL,
		  "restartedUnits: duplicate" },
		{ OK_HEAD "\"stoppedUnits\":{},\"finishedAt\":5}", -EINVAL, "stoppedUnits: not an array" },
		{ OK_HEAD "\"stoppedUnits\":[\"../x\"],\"finishedAt\":5}", -EINVAL, "stoppedUnits: invalid" },
		{ OK_HEAD "\"unitsReady\":[],\"finishedAt\":5}", -EINVAL, "unitsReady: not an object" },
		{ OK_HEAD "\"unitsReady\":{\"status\":\"True\",\"reason\":\"A\",\"message\":\"m\","
			  "\"checkedAt\":1,\"x\":1},\"finishedAt\":5}", -EINVAL, "unitsReady: not an object" },
		{ OK_HEAD "\"unitsReady\":{\"status\":\"true\",\"reason\":\"A\",\"message\":\"m\","
			  "\"checkedAt\":1},\"finishedAt\":5}", -EINVAL, "unitsReady.status" },
		{ OK_HEAD "\"unitsReady\":{\"status\":\"True\",\"reason\":\"A b\",\"message\":\"m\","
			  "\"checkedAt\":1},\"finishedAt\":5}", -EINVAL, "unitsReady.reason" },
		{ OK_HEAD "\"unitsReady\":{\"status\":\"True\",\"reason\":\"A\",\"message\":\"a\\nb\","
			  "\"checkedAt\":1},\"finishedAt\":5}", -EINVAL, "unitsReady.message" },
		{ OK_HEAD "\"unitsReady\":{\"status\":\"True\",\"reason\":\"A\",\"message\":\"m\"},"
			  "\"finishedAt\":5}", -EINVAL, "unitsReady.checkedAt" },
		{ OK_HEAD "\"unitsReady\":{\"status\":\"True\",\"reason\":\"A\",\"message\":\"\","
			  "\"checkedAt\":1},\"finishedAt\":5}", 0, NULL },
	};
	for (size_t i = 0; i < ELEMENTSOF(table); i++) {
		struct result p = { .generation = 4242 };
		const char *err = "(none)";
		int k = result_parse(table[i].doc, strlen(table[i].doc), &p, &err);
		if (k != table[i].r || (table[i].err && strncmp(err, table[i].err, strlen(table[i].err)) != 0))
			fail_msg("case %zu: %s\n  want %d '%s'\n  got  %d '%s'", i, table[i].doc, table[i].r,
				 table[i].err ? table[i].err : "", k, err);
		if (k == 0)
			result_done(&p);
		else
			assert_int_equal(p.generation, 4242);
	}
}

static void ceilings(void **state)
{
	struct result p = {};
	const char *err;
	char *huge = malloc(RESULT_MAX + 1);
	memset(huge, ' ', RESULT_MAX + 1);
	assert_int_equal(result_parse(huge, RESULT_MAX + 1, &p, &err), -EMSGSIZE);
	free(huge);

	char **units = calloc(RESULT_CHANGED_UNITS_MAX + 2, sizeof(char *));
	for (int i = 0; i <= RESULT_CHANGED_UNITS_MAX; i++) {
		units[i] = malloc(32);
		snprintf(units[i], 32, "u%d.service", i);
	}
	char *last = units[RESULT_CHANGED_UNITS_MAX];
	units[RESULT_CHANGED_UNITS_MAX] = NULL;
	struct result r = { .checksum = SUM, .success = true, .changed_units = units };
	_cleanup_free_ char *out = NULL;
	assert_int_equal(result_format(&r, &out, NULL), 0);
	assert_int_equal(result_parse(out, strlen(out), &p, NULL), 0);
	result_done(&p);
	units[RESULT_CHANGED_UNITS_MAX] = last;
	char *out2 = NULL;
	assert_int_equal(result_format(&r, &out2, NULL), -EMSGSIZE);
	strv_free(units);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip_success),
		cmocka_unit_test(round_trip_failure),
		cmocka_unit_test(round_trip_units_and_condition),
		cmocka_unit_test(long_error_is_cut_at_utf8_boundary),
		cmocka_unit_test(format_refuses_bad_input),
		cmocka_unit_test(bad_documents),
		cmocka_unit_test(ceilings),
	};
	return cmocka_run_group_tests_name("result", tests, NULL, NULL);
}
