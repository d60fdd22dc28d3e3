/* Unit tests for lib/node/ctrdhealth.c: the containerd probe's verdict,
 * both ways, its strictness, and the server version out of `ctr version`. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "ctrdhealth.h"

static void round_trip(void **state)
{
	struct ctrdhealth h = { .healthy = true, .checked_at = 1764170000, .server_version = "1.6.20~ds1" };
	_cleanup_free_ char *out = NULL;
	size_t len;
	assert_int_equal(ctrdhealth_format(&h, &out, &len), 0);
	struct ctrdhealth p;
	const char *err = NULL;
	if (ctrdhealth_parse(out, len, &p, &err) < 0)
		fail_msg("%s", err);
	assert_true(p.healthy);
	assert_int_equal(p.checked_at, 1764170000);
	assert_string_equal(p.server_version, "1.6.20~ds1");
	assert_string_equal(p.error, "");

	struct ctrdhealth u = { .healthy = false, .checked_at = 5, .error = "no answer within 10 s" };
	_cleanup_free_ char *out2 = NULL;
	assert_int_equal(ctrdhealth_format(&u, &out2, &len), 0);
	assert_int_equal(ctrdhealth_parse(out2, len, &p, NULL), 0);
	assert_false(p.healthy);
	assert_string_equal(p.error, "no answer within 10 s");
	assert_string_equal(p.server_version, "");

	/* What the parser refuses is not formatted either. */
	struct ctrdhealth bad = { .healthy = false, .checked_at = 5 };
	char *x = NULL;
	assert_int_equal(ctrdhealth_format(&bad, &x, &len), -EINVAL);
	struct ctrdhealth bad2 = { .healthy = true, .checked_at = 5, .server_version = "1.6 beta" };
	assert_int_equal(ctrdhealth_format(&bad2, &x, &len), -EINVAL);
	assert_null(x);
}

static void strict(void **state)
{
	static const struct {
		const char *doc;
		int r;
	} cases[] = {
		{ "{\"version\":1,\"healthy\":true,\"checkedAt\":1,\"serverVersion\":\"1.7.0\"}", 0 },
		{ "{\"version\":2,\"healthy\":true,\"checkedAt\":1,\"serverVersion\":\"1.7.0\"}", -EPROTONOSUPPORT },
		{ "{\"version\":1,\"healthy\":true,\"checkedAt\":1}", -EINVAL },
		{ "{\"version\":1,\"healthy\":true,\"checkedAt\":1,\"serverVersion\":\"1\",\"error\":\"e\"}", -EINVAL },
		{ "{\"version\":1,\"healthy\":false,\"checkedAt\":1}", -EINVAL },
		{ "{\"version\":1,\"healthy\":false,\"checkedAt\":1,\"error\":\"\"}", -EINVAL },
		{ "{\"version\":1,\"healthy\":false,\"checkedAt\":1,\"error\":\"a\\nb\"}", -EINVAL },
		{ "{\"version\":1,\"healthy\":false,\"checkedAt\":1,\"error\":\"e\",\"serverVersion\":\"1\"}", -EINVAL },
		{ "{\"version\":1,\"healthy\":\"yes\",\"checkedAt\":1,\"serverVersion\":\"1\"}", -EINVAL },
		{ "{\"version\":1,\"healthy\":true,\"checkedAt\":-1,\"serverVersion\":\"1\"}", -EINVAL },
		{ "{\"version\":1,\"healthy\":true,\"checkedAt\":1,\"serverVersion\":\"1\",\"extra\":1}", -EINVAL },
		{ "{\"version\":1,\"healthy\":true,\"healthy\":true,\"checkedAt\":1,\"serverVersion\":\"1\"}", -EINVAL },
		{ "{\"version\":1,\"healthy\":true,\"checkedAt\":1,\"serverVersion\":\"1 2\"}", -EINVAL },
		{ "[]", -EINVAL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ctrdhealth p;
		const char *err = NULL;
		int r = ctrdhealth_parse(cases[i].doc, strlen(cases[i].doc), &p, &err);
		if (r != cases[i].r)
			fail_msg("case %zu: %d, want %d (%s)", i, r, cases[i].r, err ? err : "");
		if (r < 0)
			assert_non_null(err);
	}
	char big[CTRDHEALTH_MAX + 2];
	memset(big, ' ', sizeof(big));
	assert_int_equal(ctrdhealth_parse(big, sizeof(big), &(struct ctrdhealth){}, NULL), -EMSGSIZE);
}

static void server_version(void **state)
{
	char v[CTRDHEALTH_VERSION_MAX + 1] = "unchanged";
	/* containerd 1.6's ctr version, and a client-only answer (no server). */
	const char *both = "Client:\n  Version:  1.6.20~ds1\n  Revision: r\n  Go version: go1.19.8\n\n"
			   "Server:\n  Version:  1.7.24\n  Revision: r2\n  UUID: 5f0e\n";
	assert_int_equal(ctrdhealth_server_version(both, v), 0);
	assert_string_equal(v, "1.7.24");
	strcpy(v, "unchanged");
	assert_int_equal(ctrdhealth_server_version("Client:\n  Version:  1.6.20\n", v), -ENOENT);
	assert_int_equal(ctrdhealth_server_version("x\nServer:\n  Revision: r\n", v), -ENOENT);
	assert_int_equal(ctrdhealth_server_version("x\nServer:\n  Version:  \n", v), -ENOENT);
	assert_int_equal(ctrdhealth_server_version("x\nServer:\n  Version:  1.7 x\n", v), -ENOENT);
	assert_int_equal(ctrdhealth_server_version("x\nServer:\nVersion: 1.7\n", v), -ENOENT);
	assert_string_equal(v, "unchanged");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(strict),
		cmocka_unit_test(server_version),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
