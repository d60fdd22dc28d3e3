/* Unit tests for the document helpers of lib/base/jsonx.c that desired.c,
 * result.c and cloud-config-exec/state.c share: the strict, versioned
 * document prologue, string arrays both ways with their ceiling, and the
 * printed form with its final newline. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"

static const char *const allowed[] = { "version", "a", NULL };

static void parse_document(void **state)
{
	static const struct {
		const char *in;
		int r;
		const char *err;
	} table[] = {
		{ "{\"version\":3}", 0, NULL },
		{ " {\"version\":3,\"a\":[]}\n", 0, NULL },
		{ "", -EINVAL, "not valid JSON" },
		{ "{\"version\":3} x", -EINVAL, "not valid JSON" },
		{ "[3]", -EINVAL, "document: not a JSON object" },
		{ "{\"version\":3,\"b\":1}", -EINVAL, "document: unknown or duplicate key" },
		{ "{\"version\":3,\"version\":3}", -EINVAL, "document: unknown or duplicate key" },
		{ "{\"a\":1}", -EINVAL, "version: missing or not an unsigned integer" },
		{ "{\"version\":\"3\"}", -EINVAL, "version: missing or not an unsigned integer" },
		{ "{\"version\":3.5}", -EINVAL, "version: missing or not an unsigned integer" },
		{ "{\"version\":-3}", -EINVAL, "version: missing or not an unsigned integer" },
		{ "{\"version\":4}", -EPROTONOSUPPORT, "version: unsupported" },
	};
	for (size_t i = 0; i < ELEMENTSOF(table); i++) {
		cJSON *root = (cJSON *)(uintptr_t)1; /* must stay untouched on failure */
		const char *err = NULL;
		int r = jsonx_parse_document(table[i].in, strlen(table[i].in), allowed, 3, &root, &err);
		if (r != table[i].r)
			fail_msg("%s: %d, wanted %d", table[i].in, r, table[i].r);
		if (r == 0) {
			assert_true(cJSON_IsObject(root));
			assert_null(err);
			cJSON_Delete(root);
		} else {
			assert_ptr_equal(root, (cJSON *)(uintptr_t)1);
			assert_string_equal(err, table[i].err);
		}
	}
	/* err may be NULL. */
	cJSON *root = NULL;
	assert_int_equal(jsonx_parse_document("[]", 2, allowed, 3, &root, NULL), -EINVAL);
	assert_null(root);
}

static void get_strv(void **state)
{
	static const struct {
		const char *in;
		size_t max;
		int r;
	} table[] = {
		{ "[]", 0, 0 },
		{ "[\"x\",\"y\"]", 2, 2 },
		{ "[\"x\",\"y\"]", 1, -EMSGSIZE },
		{ "[\"x\",1]", 2, -EINVAL },
		{ "[null]", 1, -EINVAL },
		{ "[[\"x\"]]", 1, -EINVAL },
		{ "\"x\"", 1, -EINVAL },
		{ "{\"x\":\"y\"}", 1, -EINVAL },
	};
	for (size_t i = 0; i < ELEMENTSOF(table); i++) {
		_cleanup_(cJSON_Deletep) cJSON *a = cJSON_Parse(table[i].in);
		assert_non_null(a);
		char **v = NULL;
		int r = jsonx_get_strv(a, table[i].max, &v);
		if (r != table[i].r)
			fail_msg("%s (max %zu): %d, wanted %d", table[i].in, table[i].max, r, table[i].r);
		if (r < 0) {
			assert_null(v);
			continue;
		}
		assert_non_null(v);
		assert_null(v[r]);
		strv_free(v);
	}
	/* A missing member is not an array. */
	char **v = NULL;
	assert_int_equal(jsonx_get_strv(NULL, 1, &v), -EINVAL);
}

static void strv_round_trip_and_print(void **state)
{
	static char a[] = "kubelet.service", b[] = "with \"quotes\" and \\";
	char *strv[] = { a, b, NULL };
	_cleanup_(cJSON_Deletep) cJSON *root = cJSON_CreateObject();
	assert_non_null(root);
	assert_non_null(cJSON_AddNumberToObject(root, "version", 3));
	assert_non_null(jsonx_add_strv(root, "a", strv));
	assert_non_null(jsonx_add_strv(root, "empty", NULL));

	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	assert_int_equal(jsonx_print(root, &out, &len), 0);
	assert_int_equal(len, strlen(out));
	assert_true(len > 1 && out[len - 1] == '\n' && out[len - 2] == '}');
	_cleanup_free_ char *out2 = NULL;
	assert_int_equal(jsonx_print(root, &out2, NULL), 0);
	assert_string_equal(out, out2);

	_cleanup_(cJSON_Deletep) cJSON *back = cJSON_Parse(out);
	assert_non_null(back);
	char **v = NULL;
	assert_int_equal(jsonx_get_strv(cJSON_GetObjectItemCaseSensitive(back, "a"), 2, &v), 2);
	assert_string_equal(v[0], a);
	assert_string_equal(v[1], b);
	strv_free(v);
	assert_int_equal(jsonx_get_strv(cJSON_GetObjectItemCaseSensitive(back, "empty"), 0, &v), 0);
	assert_null(v[0]);
	strv_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_document),
		cmocka_unit_test(get_strv),
		cmocka_unit_test(strv_round_trip_and_print),
	};
	return cmocka_run_group_tests_name("jsonx", tests, NULL, NULL);
}
