/* Unit tests for lib/kubelease.c: the Lease node-agent writes (the fields
 * gardener-node-agent sets, pkg/nodeagent/controller/lease/reconciler.go),
 * MicroTime, the name, and parsing the server's answers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "kube.h"
#include "kubelease.h"

static void microtime(void **state)
{
	char out[KUBE_MICROTIME_LEN];
	struct timespec t = { .tv_sec = 1795658462, .tv_nsec = 123456789 };
	assert_int_equal(kube_microtime(&t, out), 0);
	assert_string_equal(out, "2026-11-26T02:01:02.123456Z");
	t = (struct timespec){ .tv_sec = 0, .tv_nsec = 0 };
	assert_int_equal(kube_microtime(&t, out), 0);
	assert_string_equal(out, "1970-01-01T00:00:00.000000Z");
	t.tv_nsec = 1000000000L;
	assert_int_equal(kube_microtime(&t, out), -EINVAL);
}

static void names(void **state)
{
	char out[KUBE_NAME_MAX + 1];
	assert_int_equal(kube_lease_name("node-1", out, sizeof(out)), 0);
	assert_string_equal(out, "gardener-node-agent-node-1");
	char longname[KUBE_NAME_MAX + 1];
	memset(longname, 'a', KUBE_NAME_MAX - 20);
	longname[KUBE_NAME_MAX - 20] = '\0';
	assert_int_equal(kube_lease_name(longname, out, sizeof(out)), 0); /* exactly 253 */
	memset(longname, 'a', KUBE_NAME_MAX - 19);
	longname[KUBE_NAME_MAX - 19] = '\0';
	assert_int_equal(kube_lease_name(longname, out, sizeof(out)), -ENAMETOOLONG);
}

static void body_create(void **state)
{
	_cleanup_free_ char *b = kube_lease_body(true, "gardener-node-agent-n", "n", "uid-1", NULL,
						 "2026-11-25T02:00:00.000000Z");
	assert_non_null(b);
	assert_string_equal(
		b, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":"
		   "\"gardener-node-agent-n\",\"namespace\":\"kube-system\",\"ownerReferences\":[{\"apiVersion\":\"v1\","
		   "\"kind\":\"Node\",\"name\":\"n\",\"uid\":\"uid-1\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
		   "\"spec\":{\"holderIdentity\":\"gardener-node-agent-n\",\"leaseDurationSeconds\":40,\"renewTime\":"
		   "\"2026-11-25T02:00:00.000000Z\"}}");
	struct kube_lease l;
	assert_int_equal(kube_lease_parse(b, strlen(b), &l, NULL), 0);
	assert_string_equal(l.holder, "gardener-node-agent-n");
	assert_string_equal(l.owner_uid, "uid-1");
	assert_true(l.has_duration);
	assert_int_equal(l.duration_s, 40);
	assert_null(l.resource_version);
	kube_lease_done(&l);
}

static void body_patch(void **state)
{
	_cleanup_free_ char *b = kube_lease_body(false, "gardener-node-agent-n", "n", "uid-1", "42",
						 "2026-11-25T02:00:00.000000Z");
	assert_non_null(b);
	/* The precondition, the owner, the spec; no name (it is in the URL). */
	assert_non_null(strstr(b, "\"metadata\":{\"resourceVersion\":\"42\",\"ownerReferences\":[{"));
	assert_non_null(strstr(b, "\"acquireTime\":null,\"leaseTransitions\":null"));
	assert_null(strstr(b, "\"kind\":\"Lease\""));
}

static void parse_answers(void **state)
{
	static const char gna[] =
		"{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{\"name\":"
		"\"gardener-node-agent-node-1\",\"namespace\":\"kube-system\",\"resourceVersion\":\"4711\","
		"\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"name\":\"s\",\"uid\":\"s-uid\"},"
		"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"node-1\",\"uid\":\"n-uid\",\"controller\":true}]},"
		"\"spec\":{\"holderIdentity\":\"someone-else\",\"leaseDurationSeconds\":600,"
		"\"renewTime\":\"2026-11-25T02:01:02.123456Z\"}}\n";
	struct kube_lease l;
	assert_int_equal(kube_lease_parse(gna, strlen(gna), &l, NULL), 0);
	assert_string_equal(l.name, "gardener-node-agent-node-1");
	assert_string_equal(l.resource_version, "4711");
	assert_string_equal(l.holder, "someone-else");
	assert_string_equal(l.owner_uid, "n-uid");
	assert_int_equal(l.duration_s, 600);
	assert_string_equal(l.renew_time, "2026-11-25T02:01:02.123456Z");
	kube_lease_done(&l);

	static const char empty[] = "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":null}}";
	assert_int_equal(kube_lease_parse(empty, strlen(empty), &l, NULL), 0);
	assert_null(l.holder);
	assert_false(l.has_duration);
	kube_lease_done(&l);

	static const struct {
		const char *body;
		const char *err;
	} bad[] = {
		{ "{\"kind\":\"Status\",\"code\":404}", "kind" },
		{ "[]", "not a JSON object" },
		{ "{} x", "not a JSON object" },
		{ "{\"metadata\":{\"resourceVersion\":\"1 2\"}}", "metadata.resourceVersion" },
		{ "{\"metadata\":{\"ownerReferences\":{}}}", "metadata.ownerReferences" },
		{ "{\"metadata\":{\"ownerReferences\":[7]}}", "metadata.ownerReferences" },
		{ "{\"spec\":{\"holderIdentity\":7}}", "spec.holderIdentity" },
		{ "{\"spec\":{\"leaseDurationSeconds\":1.5}}", "spec.leaseDurationSeconds" },
		{ "{\"spec\":{\"leaseDurationSeconds\":1e12}}", "spec.leaseDurationSeconds" },
		{ "{\"spec\":[]}", "spec" },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		const char *err = NULL;
		assert_int_equal(kube_lease_parse(bad[i].body, strlen(bad[i].body), &l, &err), -EINVAL);
		assert_string_equal(err, bad[i].err);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(microtime),
		cmocka_unit_test(names),
		cmocka_unit_test(body_create),
		cmocka_unit_test(body_patch),
		cmocka_unit_test(parse_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
