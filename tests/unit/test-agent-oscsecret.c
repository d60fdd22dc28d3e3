/* Unit tests for agent/oscsecret.c, the Secret duty, with the other duties
 * off (zeroed): a Secret whose checksum matches and whose OSC passes is the
 * new last good one; an incomplete Secret, a checksum mismatch, an OSC that
 * does not parse, has a NUL byte or that the agent cannot write keep the
 * last good one; a refused Secret is reported once until it changes (not
 * when the agent ran out of memory); gardener-node-agent's configuration
 * in the OSC is handed over once, for its checksum only. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "desired.h"
#include "kube.h"
#include "log.h"
#include "../../agent/oscsecret.h"

#define OSC_A "spec:\n  files:\n  - path: /etc/a\n    content: {inline: {data: a}}\n"
#define OSC_B "spec:\n  files:\n  - path: /etc/b\n    content: {inline: {data: b}}\n"
#define OSC_GNA "spec:\n  files:\n" \
	"  - path: /var/lib/gardener-node-agent/config-v1.148.0.yaml\n" \
	"    content: {inline: {data: \"apiVersion: nodeagent.config.gardener.cloud/v1alpha1\\nkind: " \
	"NodeAgentConfiguration\\ncontrollers: {operatingSystemConfig: {kubernetesVersion: '1.33.1'}}\\n\"}}\n"

static int check_result;
static unsigned checks;

static int check(void *userdata, char *osc, size_t osc_len, const char *checksum)
{
	checks++;
	assert_int_equal(strlen(osc), osc_len);
	return check_result;
}

struct fixture {
	struct oscsecret o;
	struct health health;
	struct events events;
	struct tokensync tokens;
	char error[256];
	struct oscsecret_env env;
	char osc[512];
	char sum[65];
	char given[65];
	struct kube_secret s;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	f->env = (struct oscsecret_env){
		.ns = "kube-system",
		.name = "osc-secret",
		.state_dir = "/var/lib/node-agent",
		.health = &f->health,
		.events = &f->events,
		.tokens = &f->tokens,
		.check = check,
		.error = f->error,
		.errlen = sizeof(f->error),
	};
	check_result = 0;
	checks = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	oscsecret_done(&f->o);
	tokensync_done(&f->tokens);
	free(f);
	return 0;
}

/* The Secret f->s with osc (len bytes) and its right checksum, or sum. */
static struct kube_secret *secret(struct fixture *f, const char *osc, size_t len, const char *sum)
{
	snprintf(f->given, sizeof(f->given), "%s", sum ? sum : "");
	memcpy(f->osc, osc, len);
	f->osc[len] = '\0';
	desired_sha256_hex(f->osc, len, f->sum);
	f->s = (struct kube_secret){ .checksum = sum ? f->given : f->sum, .osc = (unsigned char *)f->osc,
				     .osc_len = len };
	f->error[0] = '\0';
	return &f->s;
}

static void takes_good_ones(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_A, strlen(OSC_A), NULL), &f->env), 1);
	assert_string_equal(f->o.osc, OSC_A);
	assert_int_equal(f->o.osc_len, strlen(OSC_A));
	assert_string_equal(f->o.checksum, f->sum);
	assert_null(f->o.k8s_version);
	assert_string_equal(f->error, "");
	assert_int_equal(checks, 1);
	/* The same again (a resync): nothing new, not even checked. */
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_A, strlen(OSC_A), NULL), &f->env), 0);
	assert_int_equal(checks, 1);
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_B, strlen(OSC_B), NULL), &f->env), 1);
	assert_string_equal(f->o.osc, OSC_B);
	/* --once switching Secrets. */
	oscsecret_drop(&f->o);
	assert_null(f->o.osc);
}

static void refuses_bad_ones(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_A, strlen(OSC_A), NULL), &f->env), 1);
	char good[65];
	memcpy(good, f->o.checksum, sizeof(good));

	/* Incomplete: reported every time (nothing to remember it by). */
	struct kube_secret *s = secret(f, OSC_B, strlen(OSC_B), NULL);
	s->checksum = NULL;
	assert_int_equal(oscsecret_take(&f->o, s, &f->env), 0);
	assert_string_equal(f->error, "Secret osc-secret incomplete");

	/* A checksum mismatch: reported once. */
	static const char wrong[] = "0000000000000000000000000000000000000000000000000000000000000000";
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_B, strlen(OSC_B), wrong), &f->env), 0);
	assert_string_equal(f->error, "checksum mismatch in Secret osc-secret");
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_B, strlen(OSC_B), wrong), &f->env), 0);
	assert_string_equal(f->error, "");
	assert_string_equal(f->o.checksum, good);

	/* Not an OSC; then one with a NUL byte: neither is checked. */
	assert_int_equal(oscsecret_take(&f->o, secret(f, "spec: [", 7, NULL), &f->env), 0);
	assert_string_equal(f->error, "invalid OSC in Secret osc-secret");
	assert_int_equal(oscsecret_take(&f->o, secret(f, "spec: [", 7, NULL), &f->env), 0);
	assert_string_equal(f->error, "");
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_B "\0x", strlen(OSC_B) + 2, NULL), &f->env), 0);
	assert_string_equal(f->error, "invalid OSC in Secret osc-secret");
	assert_int_equal(checks, 1);

	/* The agent cannot write it: refused, once; out of memory: again. */
	check_result = -ENOMEM;
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_B, strlen(OSC_B), NULL), &f->env), 0);
	assert_string_equal(f->error, "invalid OSC in Secret osc-secret");
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_B, strlen(OSC_B), NULL), &f->env), 0);
	assert_string_equal(f->error, "invalid OSC in Secret osc-secret");
	check_result = -EINVAL;
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_B, strlen(OSC_B), NULL), &f->env), 0);
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_B, strlen(OSC_B), NULL), &f->env), 0);
	assert_string_equal(f->error, "");
	assert_int_equal(checks, 4);
	assert_string_equal(f->o.checksum, good);
	assert_string_equal(f->o.osc, OSC_A);

	/* The same Secret stays refused; a corrected one is taken, and the
	 * memory of the refusal cleared. */
	check_result = 0;
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_B, strlen(OSC_B), NULL), &f->env), 0);
	assert_string_equal(f->o.rejected_data, f->sum);
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_GNA, strlen(OSC_GNA), NULL), &f->env), 1);
	assert_string_equal(f->o.rejected_checksum, "");
	assert_string_equal(f->o.rejected_data, "");
	assert_string_equal(f->o.osc, OSC_GNA);
}

static void gna_config(void **state)
{
	struct fixture *f = *state;
	struct gnaconfig g;
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_GNA, strlen(OSC_GNA), NULL), &f->env), 1);
	char sum[65];
	memcpy(sum, f->sum, sizeof(sum));
	assert_string_equal(f->o.k8s_version, "1.33.1");
	assert_false(oscsecret_take_gna(&f->o, "other", &g));
	assert_true(oscsecret_take_gna(&f->o, sum, &g));
	assert_string_equal(g.kubernetes_version, "1.33.1");
	gnaconfig_done(&g);
	assert_false(oscsecret_take_gna(&f->o, sum, &g)); /* once */
	/* An OSC without one: the version label goes back to the default. */
	assert_int_equal(oscsecret_take(&f->o, secret(f, OSC_A, strlen(OSC_A), NULL), &f->env), 1);
	assert_null(f->o.k8s_version);
}

int main(void)
{
	log_open("test-agent-oscsecret", LOG_TARGET_STDERR);
	log_set_max_level(LOG_WARNING);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(takes_good_ones, setup, teardown),
		cmocka_unit_test_setup_teardown(refuses_bad_ones, setup, teardown),
		cmocka_unit_test_setup_teardown(gna_config, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
