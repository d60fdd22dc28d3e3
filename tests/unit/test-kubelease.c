/* Unit tests for lib/kube/kubelease.c: the Lease node-agent writes (the fields
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

static void body_update(void **state)
{
	/* What the server answered: labels, a foreign owner reference,
	 * managedFields, a spec with leaseTransitions. */
	static const char got[] =
		"{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{\"name\":\"gardener-node-agent-n\","
		"\"namespace\":\"kube-system\",\"uid\":\"l-uid\",\"resourceVersion\":\"42\",\"labels\":{\"a\":\"b\"},"
		"\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"old\",\"uid\":\"old-uid\","
		"\"controller\":true},{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"c\",\"uid\":\"c-uid\"}],"
		"\"managedFields\":[{\"manager\":\"x\"}]},\"spec\":{\"holderIdentity\":\"someone\",\"leaseTransitions\":3}}";
	_cleanup_free_ char *b = NULL;
	assert_int_equal(kube_lease_update_body(got, strlen(got), "gardener-node-agent-n", "n", "uid-1",
						"2026-11-25T02:00:00.000000Z", &b, NULL),
			 0);
	assert_string_equal(
		b, "{\"metadata\":{\"name\":\"gardener-node-agent-n\",\"namespace\":\"kube-system\",\"uid\":\"l-uid\","
		   "\"resourceVersion\":\"42\",\"labels\":{\"a\":\"b\"},\"ownerReferences\":[{\"apiVersion\":\"v1\","
		   "\"kind\":\"Node\",\"name\":\"n\",\"uid\":\"uid-1\",\"controller\":true,\"blockOwnerDeletion\":true},"
		   "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"c\",\"uid\":\"c-uid\"}]},\"apiVersion\":"
		   "\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"spec\":{\"holderIdentity\":\"gardener-node-agent-n\","
		   "\"leaseDurationSeconds\":40,\"renewTime\":\"2026-11-25T02:00:00.000000Z\"}}");
	struct kube_lease l;
	assert_int_equal(kube_lease_parse(b, strlen(b), &l, NULL), 0);
	assert_string_equal(l.resource_version, "42");
	assert_string_equal(l.owner_uid, "uid-1");
	kube_lease_done(&l);

	/* No resourceVersion, not a Lease, not JSON: refused, naming what. */
	static const char *const bad[] = {
		"{\"metadata\":{\"name\":\"x\"}}", "{\"kind\":\"Secret\",\"metadata\":{\"resourceVersion\":\"1\"}}",
		"{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":[]}", "[]", "{", "",
		"{\"metadata\":{\"resourceVersion\":\"1\",\"ownerReferences\":{}}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		char *x = NULL;
		const char *err = NULL;
		assert_int_equal(kube_lease_update_body(bad[i], strlen(bad[i]), "l", "n", "u", "t", &x, &err), -EINVAL);
		assert_non_null(err);
		assert_null(x);
	}
}

static void serial_update(void **state)
{
	static const char mine[] =
		"{\"kind\":\"Lease\",\"metadata\":{\"name\":\"gna-pool\",\"resourceVersion\":\"7\"},\"spec\":{"
		"\"holderIdentity\":\"node-1\",\"leaseDurationSeconds\":600,\"acquireTime\":\"a\",\"renewTime\":\"r\","
		"\"leaseTransitions\":2}}";
	_cleanup_free_ char *renew = NULL, *release = NULL, *take = NULL, *same = NULL;
	/* A renewal: renewTime only. */
	assert_int_equal(kube_serial_lease_update_body(mine, strlen(mine), "node-1", NULL, "t2", &renew, NULL), 0);
	assert_non_null(strstr(renew, "\"spec\":{\"holderIdentity\":\"node-1\",\"leaseDurationSeconds\":600,"
				      "\"acquireTime\":\"a\",\"leaseTransitions\":2,\"renewTime\":\"t2\"}"));
	assert_non_null(strstr(renew, "\"resourceVersion\":\"7\""));
	assert_non_null(strstr(renew, "\"apiVersion\":\"coordination.k8s.io/v1\""));
	/* The release: the four fields gone, the transitions kept. */
	assert_int_equal(kube_serial_lease_update_body(mine, strlen(mine), NULL, NULL, NULL, &release, NULL), 0);
	assert_non_null(strstr(release, "\"spec\":{\"leaseTransitions\":2}"));
	/* Taken from another holder: one more transition. */
	assert_int_equal(kube_serial_lease_update_body(mine, strlen(mine), "node-2", "t3", "t3", &take, NULL), 0);
	assert_non_null(strstr(take, "\"leaseTransitions\":3"));
	assert_non_null(strstr(take, "\"holderIdentity\":\"node-2\""));
	assert_non_null(strstr(take, "\"acquireTime\":\"t3\""));
	/* Taken again by the same holder: no transition. */
	assert_int_equal(kube_serial_lease_update_body(mine, strlen(mine), "node-1", "t3", "t3", &same, NULL), 0);
	assert_non_null(strstr(same, "\"leaseTransitions\":2"));
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

static void microtime_parse(void **state)
{
	struct timespec t;
	assert_int_equal(kube_microtime_parse("2026-11-26T02:01:02.123456Z", &t), 0);
	assert_int_equal(t.tv_sec, 1795658462);
	assert_int_equal(t.tv_nsec, 123456000);
	assert_int_equal(kube_microtime_parse("2026-11-26T02:01:02Z", &t), 0);
	assert_int_equal(t.tv_sec, 1795658462);
	assert_int_equal(t.tv_nsec, 0);
	assert_int_equal(kube_microtime_parse("2026-11-26T03:01:02.5+01:00", &t), 0);
	assert_int_equal(t.tv_sec, 1795658462);
	assert_int_equal(t.tv_nsec, 500000000);
	assert_int_equal(kube_microtime_parse("1970-01-01T00:00:00.000000Z", &t), 0);
	assert_int_equal(t.tv_sec, 0);
	assert_int_equal(kube_microtime_parse("2024-02-29T00:00:00Z", &t), 0);
	/* Round trip with the writer. */
	char out[KUBE_MICROTIME_LEN];
	struct timespec w = { .tv_sec = 4102444799, .tv_nsec = 999999000 };
	assert_int_equal(kube_microtime(&w, out), 0);
	assert_int_equal(kube_microtime_parse(out, &t), 0);
	assert_int_equal(t.tv_sec, w.tv_sec);
	assert_int_equal(t.tv_nsec, w.tv_nsec);
	static const char *const bad[] = { "", "2026-11-26", "2026-11-26T02:01:02", "2026-11-26 02:01:02Z",
					   "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2100-02-29T00:00:00Z",
					   "2026-11-26T24:00:00Z", "2026-11-26T02:01:02.Z", "2026-11-26T02:01:02.1234567890Z",
					   "2026-11-26T02:01:02Zx", "2026-11-26T02:01:02+0100", "+026-11-26T02:01:02Z" };
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (kube_microtime_parse(bad[i], &t) != -EINVAL)
			fail_msg("\"%s\" accepted", bad[i]);
}

/* GNA's acquiredByMe / acquiredByAnotherInstance / renewedInTime. */
static void serial_judge(void **state)
{
	struct timespec now = { .tv_sec = 1795658462, .tv_nsec = 0 }; /* 2026-11-26T02:01:02Z */
	char node2[] = "node-2", empty[] = "", rt1[] = "2026-11-26T01:51:02.500000Z", rt2[] = "2026-11-26T02:01:00Z",
	     bad[] = "yesterday";
	struct kube_lease l = { .holder = node2, .has_duration = true, .duration_s = 600, .renew_time = rt1 };
	uint64_t left = 1;
	assert_int_equal(kube_serial_judge(&l, "node-1", &now, &left), KUBE_SERIAL_TAKEN);
	assert_int_equal(left, 500);
	now.tv_nsec = 500000000;
	assert_int_equal(kube_serial_judge(&l, "node-1", &now, &left), KUBE_SERIAL_EXPIRED); /* exactly then */
	assert_int_equal(left, 0);
	assert_int_equal(kube_serial_judge(&l, "node-2", &now, &left), KUBE_SERIAL_MINE);
	l.holder = empty;
	assert_int_equal(kube_serial_judge(&l, "node-1", &now, &left), KUBE_SERIAL_FREE);
	l.holder = NULL;
	assert_int_equal(kube_serial_judge(&l, "node-1", &now, &left), KUBE_SERIAL_FREE);
	l.holder = node2;
	l.renew_time = NULL;
	assert_int_equal(kube_serial_judge(&l, "node-1", &now, &left), KUBE_SERIAL_EXPIRED);
	l.renew_time = rt2;
	l.has_duration = false; /* duration 0 */
	assert_int_equal(kube_serial_judge(&l, "node-1", &now, &left), KUBE_SERIAL_EXPIRED);
	l.has_duration = true;
	l.duration_s = -1;
	assert_int_equal(kube_serial_judge(&l, "node-1", &now, &left), KUBE_SERIAL_EXPIRED);
	l.duration_s = 2147483647; /* far future: still taken, no overflow */
	assert_int_equal(kube_serial_judge(&l, "node-1", &now, &left), KUBE_SERIAL_TAKEN);
	assert_true(left > 1000ull * 2147483600ull);
	l.renew_time = bad;
	assert_int_equal(kube_serial_judge(&l, "node-1", &now, &left), -EINVAL);
}

static void serial_bodies(void **state)
{
	_cleanup_free_ char *c = kube_serial_lease_body(true, "kube-system", "gna-pool", "sec-uid", NULL, "node-1",
							"2026-11-25T02:00:00.000000Z", "2026-11-25T02:00:00.000000Z");
	assert_string_equal(
		c, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"gna-pool\","
		   "\"namespace\":\"kube-system\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Secret\","
		   "\"name\":\"gna-pool\",\"uid\":\"sec-uid\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
		   "\"spec\":{\"holderIdentity\":\"node-1\",\"leaseDurationSeconds\":600,\"acquireTime\":"
		   "\"2026-11-25T02:00:00.000000Z\",\"renewTime\":\"2026-11-25T02:00:00.000000Z\"}}");
	_cleanup_free_ char *t = kube_serial_lease_body(false, "kube-system", "gna-pool", "sec-uid", "41", "node-1",
							"2026-11-25T02:00:00.000000Z", "2026-11-25T02:00:00.000000Z");
	assert_string_equal(t, "{\"metadata\":{\"resourceVersion\":\"41\"},\"spec\":{\"holderIdentity\":\"node-1\","
			       "\"leaseDurationSeconds\":600,\"acquireTime\":\"2026-11-25T02:00:00.000000Z\","
			       "\"renewTime\":\"2026-11-25T02:00:00.000000Z\"}}");
	_cleanup_free_ char *r = kube_serial_lease_body(false, "kube-system", "gna-pool", NULL, "42", "node-1", NULL,
							"2026-11-25T02:03:20.000000Z");
	assert_string_equal(r, "{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{\"renewTime\":"
			       "\"2026-11-25T02:03:20.000000Z\"}}");
	_cleanup_free_ char *x = kube_serial_lease_body(false, "kube-system", "gna-pool", NULL, "43", NULL, NULL, NULL);
	assert_string_equal(x, "{\"metadata\":{\"resourceVersion\":\"43\"},\"spec\":{\"holderIdentity\":null,"
			       "\"leaseDurationSeconds\":null,\"acquireTime\":null,\"renewTime\":null}}");
	/* Without the Secret's uid: no owner reference rather than an invalid one. */
	_cleanup_free_ char *n = kube_serial_lease_body(true, "kube-system", "gna-pool", NULL, NULL, "node-1",
							"2026-11-25T02:00:00.000000Z", "2026-11-25T02:00:00.000000Z");
	assert_null(strstr(n, "ownerReferences"));
	/* What the agent writes, judged by another node. */
	struct kube_lease l;
	assert_int_equal(kube_lease_parse(c, strlen(c), &l, NULL), 0);
	struct timespec now = { .tv_sec = 1795658462 - 86400, .tv_nsec = 0 }; /* 2026-11-25T02:01:02Z */
	uint64_t left;
	assert_int_equal(kube_serial_judge(&l, "node-2", &now, &left), KUBE_SERIAL_TAKEN);
	assert_int_equal(left, 538000);
	kube_lease_done(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(microtime),
		cmocka_unit_test(names),
		cmocka_unit_test(body_create),
		cmocka_unit_test(body_patch),
		cmocka_unit_test(body_update),
		cmocka_unit_test(serial_update),
		cmocka_unit_test(parse_answers),
		cmocka_unit_test(microtime_parse),
		cmocka_unit_test(serial_judge),
		cmocka_unit_test(serial_bodies),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
