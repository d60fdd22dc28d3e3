/* Unit tests for token sync's desired.json entries (round trip, refusals)
 * and the executor's step (0640, written only when it differs, a removed
 * file written again), and kube_secret_data(). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../cloud-config-exec/tokens.h"
#include "cleanup.h"
#include "desired.h"
#include "kube.h"
#include "scratch.h"

#define S(x) ((char *)(uintptr_t)(x))

static void desired_tokens(void **state)
{
	(void)state;
	struct desired_token t[2] = { { S("/var/lib/otelcol/auth-token"), S("tok-1") }, { S("/etc/b"), S("tok-2") } };
	struct desired d = { .osc = S("spec: {}\n"), .osc_len = 9, .generation = 1, .tokens = t, .n_tokens = 2 };
	desired_sha256_hex(d.osc, d.osc_len, d.checksum);
	char *doc = NULL;
	assert_int_equal(desired_format(&d, &doc, NULL), 0);
	struct desired p;
	const char *err = NULL;
	assert_int_equal(desired_parse(doc, strlen(doc), &p, &err), 0);
	assert_int_equal(p.n_tokens, 2);
	assert_string_equal(p.tokens[0].path, "/var/lib/otelcol/auth-token");
	assert_string_equal(p.tokens[1].token, "tok-2");
	desired_done(&p);
	free(doc);
	t[1].path = S("/var/lib/otelcol/auth-token");
	assert_int_equal(desired_format(&d, &doc, NULL), -EINVAL);
	t[1].path = S("relative");
	assert_int_equal(desired_format(&d, &doc, NULL), -EINVAL);
}

static void secret_data(void **state)
{
	(void)state;
	unsigned char *v = NULL;
	size_t n = 0;
	const char *err = NULL;
	const char ok[] = "{\"kind\":\"Secret\",\"data\":{\"token\":\"dG9r\"}}";
	assert_int_equal(kube_secret_data(ok, strlen(ok), "token", 100, &v, &n, &err), 0);
	assert_string_equal((char *)v, "tok");
	free(v);
	const char none[] = "{\"kind\":\"Secret\",\"data\":{\"other\":\"dG9r\"}}";
	assert_int_equal(kube_secret_data(none, strlen(none), "token", 100, &v, &n, &err), -ENOENT);
	const char bad[] = "{\"kind\":\"Secret\",\"data\":{\"token\":\"!\"}}";
	assert_int_equal(kube_secret_data(bad, strlen(bad), "token", 100, &v, &n, &err), -EINVAL);
	const char node[] = "{\"kind\":\"Node\"}";
	assert_int_equal(kube_secret_data(node, strlen(node), "token", 100, &v, &n, &err), -EINVAL);
}

static void step(void **state)
{
	struct scratch *s = *state;
	struct desired_token t[1] = { { S("/var/lib/otelcol/auth-token"), S("tok-1") } };
	struct desired d = { .tokens = t, .n_tokens = 1 };
	assert_int_equal(tokens_apply(s->fd, &d), 1);
	struct stat st;
	assert_int_equal(fstatat(s->fd, "var/lib/otelcol/auth-token", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(tokens_apply(s->fd, &d), 0);
	assert_int_equal(unlinkat(s->fd, "var/lib/otelcol/auth-token", 0), 0);
	assert_int_equal(tokens_apply(s->fd, &d), 1);
	t[0].token = S("tok-2");
	assert_int_equal(tokens_apply(s->fd, &d), 1);
	assert_int_equal(tokens_apply(s->fd, NULL), 0);
}

static int setup(void **state)
{
	return scratch_setup(state, "tokens");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(desired_tokens),
		cmocka_unit_test(secret_data),
		cmocka_unit_test_setup_teardown(step, setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
