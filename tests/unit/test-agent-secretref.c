/* Unit tests for agent/secretref.c (issue 25, item 5): which Secrets the
 * duty follows for an OSC, what each answer does to the bytes it hands the
 * executor, and that the desired state waits for the first answers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../agent/secretref.h"
#include "cleanup.h"
#include "desired.h"

#define STATE "/var/lib/node-agent"

static const char osc1[] = "spec:\n"
			   "  files:\n"
			   "  - path: /etc/inline\n"
			   "    content: {inline: {data: plain}}\n"
			   "  - path: /etc/pki/a.crt\n"
			   "    content: {secretRef: {name: etcd-ca, dataKey: ca.crt}}\n"
			   "  - path: /etc/pki/b.key\n"
			   "    content: {secretRef: {name: etcd-ca, dataKey: ca.key}}\n"
			   "  - path: /etc/mine\n"
			   "    hostName: node-1\n"
			   "    content: {secretRef: {name: mine, dataKey: k}}\n"
			   "  - path: /etc/theirs\n"
			   "    hostName: node-2\n"
			   "    content: {secretRef: {name: theirs, dataKey: k}}\n";

/* The same a.crt, b.key from another key, no /etc/mine. */
static const char osc2[] = "spec:\n"
			   "  files:\n"
			   "  - path: /etc/pki/a.crt\n"
			   "    content: {secretRef: {name: etcd-ca, dataKey: ca.crt}}\n"
			   "  - path: /etc/pki/b.key\n"
			   "    content: {secretRef: {name: etcd-ca, dataKey: other.key}}\n";

static const char secret_body[] =
	"{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"etcd-ca\",\"namespace\":\"kube-system\"},"
	"\"data\":{\"ca.crt\":\"Y2VydA==\",\"ca.key\":\"a2V5\"}}";
static const char secret_body2[] =
	"{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"etcd-ca\",\"namespace\":\"kube-system\"},"
	"\"data\":{\"ca.crt\":\"Y2VydDI=\"}}";

static size_t entry(const struct secretref *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->entries[i].path, path) == 0)
			return i;
	fail_msg("no entry %s", path);
	return SIZE_MAX;
}

static void follow_and_answers(void **state)
{
	(void)state;
	struct secretref s = {};
	char sum1[65], sum2[65];
	desired_sha256_hex(osc1, strlen(osc1), sum1);
	desired_sha256_hex(osc2, strlen(osc2), sum2);
	assert_int_equal(secretref_follow(&s, osc1, strlen(osc1), sum1, STATE, "node-1"), 0);
	assert_int_equal(s.n, 3); /* a.crt, b.key, mine: not the other node's */
	assert_true(s.changed);
	assert_true(secretref_pending(&s));
	size_t a = entry(&s, "/etc/pki/a.crt"), b = entry(&s, "/etc/pki/b.key"), m = entry(&s, "/etc/mine");
	assert_string_equal(s.entries[m].secret, "mine");

	s.changed = false;
	secretref_answer(&s, a, 200, secret_body, strlen(secret_body), NULL, 1000);
	secretref_answer(&s, b, 200, secret_body, strlen(secret_body), NULL, 1000);
	assert_true(s.changed);
	assert_true(secretref_pending(&s));
	secretref_answer(&s, m, 404, NULL, 0, NULL, 1000); /* missing Secret */
	assert_false(secretref_pending(&s));
	assert_memory_equal(s.entries[a].data, "cert", 4);
	assert_int_equal(s.entries[a].len, 4);
	assert_memory_equal(s.entries[b].data, "key", 3);
	assert_null(s.entries[m].data);
	assert_true(s.entries[m].next_at > 1000 && s.entries[m].next_at <= 1000 + SECRETREF_RETRY_MS);
	assert_int_equal(s.entries[a].next_at, UINT64_MAX);

	struct desired_secret_file *d = NULL;
	size_t n = 0;
	assert_int_equal(secretref_desired(&s, osc1, strlen(osc1), sum1, STATE, "node-1", &d, &n), 0);
	assert_int_equal(n, 2);
	free(d);

	/* No answer (or a 403, a 500): the last bytes stay. */
	s.changed = false;
	secretref_refresh(&s);
	assert_int_equal(s.entries[a].next_at, 0);
	secretref_answer(&s, a, 0, NULL, 0, "connection refused", 2000);
	secretref_answer(&s, b, 403, "{}", 2, "403 Forbidden", 2000);
	assert_false(s.changed);
	assert_memory_equal(s.entries[a].data, "cert", 4);
	assert_memory_equal(s.entries[b].data, "key", 3);
	/* The Secret changes: new bytes for a.crt; b.key's key is gone. */
	secretref_answer(&s, a, 200, secret_body2, strlen(secret_body2), NULL, 3000);
	assert_true(s.changed);
	assert_memory_equal(s.entries[a].data, "cert2", 5);
	secretref_answer(&s, b, 200, secret_body2, strlen(secret_body2), NULL, 3000);
	assert_null(s.entries[b].data);
	/* The same bytes again: no change. */
	s.changed = false;
	secretref_answer(&s, a, 200, secret_body2, strlen(secret_body2), NULL, 4000);
	assert_false(s.changed);
	/* Not a Secret, or bad base64: the file's bytes are dropped. */
	static const char bad[] = "{\"kind\":\"Secret\",\"data\":{\"ca.crt\":\"!!\"}}";
	secretref_answer(&s, a, 200, bad, strlen(bad), NULL, 5000);
	assert_true(s.changed);
	assert_null(s.entries[a].data);
	secretref_answer(&s, a, 200, secret_body, strlen(secret_body), NULL, 6000);

	/* A held-back OSC (rollout) gets only the references it has too:
	 * a.crt (same Secret and key), not b.key (another key) nor mine. */
	secretref_answer(&s, b, 200, secret_body, strlen(secret_body), NULL, 6000);
	static const char mine[] = "{\"kind\":\"Secret\",\"data\":{\"k\":\"bQ==\"}}";
	secretref_answer(&s, m, 200, mine, strlen(mine), NULL, 6000);
	assert_memory_equal(s.entries[m].data, "m", 1);
	assert_int_equal(secretref_desired(&s, osc2, strlen(osc2), sum2, STATE, "node-1", &d, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(d[0].path, "/etc/pki/a.crt");
	free(d);

	/* Following osc2: a.crt keeps its bytes (read again), b.key is new. */
	assert_int_equal(secretref_follow(&s, osc2, strlen(osc2), sum2, STATE, "node-1"), 0);
	assert_int_equal(s.n, 2);
	a = entry(&s, "/etc/pki/a.crt");
	b = entry(&s, "/etc/pki/b.key");
	assert_non_null(s.entries[a].data);
	assert_true(s.entries[a].answered);
	assert_null(s.entries[b].data);
	assert_int_equal(s.entries[a].next_at, 0);
	assert_true(secretref_pending(&s));
	secretref_done(&s);
}

static void oversized(void **state)
{
	(void)state;
	struct secretref s = {};
	char sum[65];
	desired_sha256_hex(osc2, strlen(osc2), sum);
	assert_int_equal(secretref_follow(&s, osc2, strlen(osc2), sum, STATE, NULL), 0);
	size_t big = DESIRED_SECRET_FILE_MAX + 3; /* a multiple of 3: no padding */
	size_t b64 = big / 3 * 4;
	char *body = malloc(b64 + 128);
	assert_non_null(body);
	int k = snprintf(body, 128, "{\"kind\":\"Secret\",\"data\":{\"ca.crt\":\"");
	memset(body + k, 'A', b64);
	memcpy(body + k + b64, "\"}}", 4);
	size_t a = entry(&s, "/etc/pki/a.crt");
	secretref_answer(&s, a, 200, body, strlen(body), NULL, 1);
	assert_null(s.entries[a].data);
	free(body);
	secretref_done(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(follow_and_answers),
		cmocka_unit_test(oversized),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
