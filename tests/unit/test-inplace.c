/* Unit tests for lib/node/inplace.c and the in-place parts of osc.c,
 * desired.c and result.c: one classification test per kind after gardener's
 * pkg/nodeagent/controller/operatingsystemconfig/changes_test.go cases,
 * GetOSVersion on os-release texts, the version/time/quantity helpers, bad
 * inPlaceUpdates fields, and the desired/result round trips. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "desired.h"
#include "inplace.h"
#include "osc.h"
#include "result.h"

struct params {
	const char *os, *kubelet, *cpu, *mem_avail, *kr_cpu, *ca, *sa;
	bool no_inplace, no_creds, no_kubelet_config;
};

static const struct params base = { .os = "1592.1", .kubelet = "1.31.2", .cpu = "none", .mem_avail = "100Mi",
				     .kr_cpu = "80m", .ca = "2026-11-20T10:00:00Z", .sa = "2026-11-20T10:00:00Z" };

/* An OSC in the shape gardenlet writes for an in-place pool. */
static void make_osc(const struct params *p, struct osc *ret)
{
	char kc[512], doc[4096], ip[1024] = "", creds[512] = "";
	snprintf(kc, sizeof(kc),
		 "          apiVersion: kubelet.config.k8s.io/v1beta1\n"
		 "          kind: KubeletConfiguration\n"
		 "          cpuManagerPolicy: %s\n"
		 "          evictionHard:\n"
		 "            memory.available: %s\n"
		 "            nodefs.available: 5%%\n"
		 "            pid.available: 10%%\n"
		 "          kubeReserved:\n"
		 "            cpu: %s\n"
		 "            memory: 1Gi\n",
		 p->cpu, p->mem_avail, p->kr_cpu);
	if (!p->no_creds)
		snprintf(creds, sizeof(creds),
			 "    credentialsRotation:\n"
			 "      certificateAuthorities:\n%s%s%s"
			 "      serviceAccountKey:\n%s%s%s",
			 p->ca ? "        lastInitiationTime: \"" : "        {}\n", p->ca ? p->ca : "", p->ca ? "\"\n" : "",
			 p->sa ? "        lastInitiationTime: \"" : "        {}\n", p->sa ? p->sa : "", p->sa ? "\"\n" : "");
	if (!p->no_inplace)
		snprintf(ip, sizeof(ip), "  inPlaceUpdates:\n    operatingSystemVersion: \"%s\"\n    kubelet: \"%s\"\n%s",
			 p->os, p->kubelet, creds);
	snprintf(doc, sizeof(doc),
		 "apiVersion: extensions.gardener.cloud/v1alpha1\n"
		 "kind: OperatingSystemConfig\n"
		 "spec:\n%s"
		 "  files:\n"
		 "  - path: %s\n"
		 "    content:\n"
		 "      inline:\n"
		 "        data: |\n%s"
		 "status:\n"
		 "  inPlaceUpdates:\n"
		 "    osUpdate:\n"
		 "      command: /usr/bin/update\n"
		 "      args: [\"--version\", \"%s\"]\n",
		 ip, p->no_kubelet_config ? "/etc/other" : "/var/lib/kubelet/config/kubelet", kc, p->os);
	struct osc_error err;
	if (osc_parse(doc, strlen(doc), NULL, ret, &err) < 0)
		fail_msg("%s\n%s", err.message, doc);
}

static unsigned classify(const struct params *o, const struct params *n, const char *running)
{
	struct osc a = {}, b = {};
	make_osc(o, &a);
	make_osc(n, &b);
	unsigned k = 0;
	char err[INPLACE_ERROR_MAX];
	if (inplace_classify(&a, &b, running, &k, err) < 0)
		fail_msg("%s", err);
	osc_done(&a);
	osc_done(&b);
	return k;
}

static void model(void **state)
{
	struct osc o = {};
	make_osc(&base, &o);
	assert_true(o.inplace.present);
	assert_string_equal(o.inplace.os_version, "1592.1");
	assert_string_equal(o.inplace.kubelet_version, "1.31.2");
	assert_true(o.inplace.credentials_rotation);
	assert_true(o.inplace.ca.present);
	assert_string_equal(o.inplace.ca.time, "2026-11-20T10:00:00Z");
	assert_string_equal(o.os_update.command, "/usr/bin/update");
	assert_int_equal(o.os_update.n_args, 2);
	assert_string_equal(o.os_update.args[1], "1592.1");
	assert_null(o.os_update.args[2]);
	osc_done(&o);
}

static void none(void **state)
{
	assert_int_equal(classify(&base, &base, "1592.1"), 0);
	/* No last applied OSC, or one without inPlaceUpdates: never in-place. */
	struct osc n = {};
	make_osc(&base, &n);
	unsigned k = 1;
	assert_int_equal(inplace_classify(NULL, &n, "1000", &k, NULL), 0);
	assert_int_equal(k, 0);
	struct params p = base;
	p.no_inplace = true;
	assert_int_equal(classify(&p, &base, "1000"), 0);
	assert_int_equal(classify(&base, &p, NULL), 0);
	/* A patch update of the kubelet alone is not in-place. */
	p = base;
	p.kubelet = "1.31.5";
	assert_int_equal(classify(&base, &p, "1592.1"), 0);
	/* eviction entries Gardener does not look at. */
	osc_done(&n);
}

static void os_version(void **state)
{
	struct params p = base;
	p.os = "1592.2";
	assert_int_equal(classify(&base, &p, "1592.1"), INPLACE_OS_VERSION);
	/* Against the running OS, not the old OSC: after the reboot it is done. */
	assert_int_equal(classify(&base, &p, "1592.2"), 0);
	/* Old OSC already said 1592.2 but the node still runs 1592.1. */
	assert_int_equal(classify(&p, &p, "1592.1"), INPLACE_OS_VERSION);
	/* Missing running version: Gardener's "current OS version is nil". */
	struct osc a = {}, b = {};
	make_osc(&base, &a);
	make_osc(&p, &b);
	unsigned k;
	char err[INPLACE_ERROR_MAX];
	assert_int_equal(inplace_classify(&a, &b, NULL, &k, err), -EINVAL);
	assert_non_null(strstr(err, "current OS version is nil"));
	osc_done(&a);
	osc_done(&b);
}

static void kubelet_minor(void **state)
{
	struct params p = base;
	p.kubelet = "1.32.0";
	assert_int_equal(classify(&base, &p, "1592.1"), INPLACE_KUBELET_MINOR_VERSION);
	p.kubelet = "v1.32.0-gardener.1";
	assert_int_equal(classify(&base, &p, "1592.1"), INPLACE_KUBELET_MINOR_VERSION);
}

static void kubelet_config(void **state)
{
	struct params p = base;
	p.mem_avail = "200Mi";
	assert_int_equal(classify(&base, &p, "1592.1"), INPLACE_KUBELET_CONFIG);
	p = base;
	p.kr_cpu = "100m";
	assert_int_equal(classify(&base, &p, "1592.1"), INPLACE_KUBELET_CONFIG);
	/* kubeReserved that is no quantity: Gardener's "error validating quantities". */
	p.kr_cpu = "lots";
	struct osc a = {}, b = {};
	make_osc(&base, &a);
	make_osc(&p, &b);
	unsigned k;
	char err[INPLACE_ERROR_MAX];
	assert_int_equal(inplace_classify(&a, &b, "1592.1", &k, err), -EINVAL);
	assert_non_null(strstr(err, "quantities"));
	osc_done(&b);
	/* No kubelet configuration in the OSC. */
	p = base;
	p.no_kubelet_config = true;
	make_osc(&p, &b);
	assert_int_equal(inplace_classify(&a, &b, "1592.1", &k, err), -EINVAL);
	assert_non_null(strstr(err, "not found in OSC"));
	osc_done(&a);
	osc_done(&b);
}

static void cpu_manager_policy(void **state)
{
	struct params p = base;
	p.cpu = "static";
	assert_int_equal(classify(&base, &p, "1592.1"), INPLACE_KUBELET_CPU_MANAGER_POLICY);
	p.mem_avail = "1Gi";
	assert_int_equal(classify(&base, &p, "1592.1"), INPLACE_KUBELET_CPU_MANAGER_POLICY | INPLACE_KUBELET_CONFIG);
}

static void ca_rotation(void **state)
{
	struct params p = base;
	p.ca = "2026-11-25T10:00:00Z";
	assert_int_equal(classify(&base, &p, "1592.1"), INPLACE_KUBELET_CA_ROTATION | INPLACE_NODE_AGENT_CA_ROTATION);
	/* The same instant written in another zone is no rotation (Time.Equal). */
	p.ca = "2026-11-20T12:00:00+02:00";
	assert_int_equal(classify(&base, &p, "1592.1"), 0);
	/* First rotation: the old OSC had no credentialsRotation. */
	struct params o = base;
	o.no_creds = true;
	p = base;
	p.sa = NULL;
	assert_int_equal(classify(&o, &p, "1592.1"), INPLACE_KUBELET_CA_ROTATION | INPLACE_NODE_AGENT_CA_ROTATION);
	/* Old had the rotation without a time, new has one: nil != non-nil. */
	o = base;
	o.ca = NULL;
	assert_int_equal(classify(&o, &base, "1592.1"), INPLACE_KUBELET_CA_ROTATION | INPLACE_NODE_AGENT_CA_ROTATION);
	/* New OSC without credentialsRotation: nothing. */
	p = base;
	p.no_creds = true;
	assert_int_equal(classify(&base, &p, "1592.1"), 0);
}

static void sa_rotation(void **state)
{
	struct params p = base;
	p.sa = "2026-11-26T08:00:00.5Z";
	assert_int_equal(classify(&base, &p, "1592.1"), INPLACE_SA_KEY_ROTATION);
	struct params o = base;
	o.no_creds = true;
	p = base;
	p.ca = NULL;
	assert_int_equal(classify(&o, &p, "1592.1"), INPLACE_SA_KEY_ROTATION);
}

static void os_release(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "NAME=\"Garden Linux\"\nPRETTY_NAME=\"Garden Linux 1592.2\"\nVERSION_ID=1592.2\n", "1592.2" },
		{ "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n", "12" },
		{ "PRETTY_NAME=\"Ubuntu 24.04.1 LTS\"", "24.04.1" },
		{ "PRETTY_NAME=Flatcar 3815.2.1abc 9\n", "3815.2" },
		{ "PRETTY_NAME=\"SUSE x86_64 15\"\nPRETTY_NAME=\"Other 7\"\n", "15" },
		{ "ID=x\n  XPRETTY_NAME=\"v2 3.1\"\n", "3.1" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char v[INPLACE_VERSION_MAX + 1];
		assert_int_equal(inplace_os_version(cases[i].text, strlen(cases[i].text), v, sizeof(v)), 0);
		assert_string_equal(v, cases[i].want);
	}
	char v[8];
	assert_int_equal(inplace_os_version("NAME=x\n", 7, v, sizeof(v)), -ENOENT);
	assert_int_equal(inplace_os_version("PRETTY_NAME=\"Arch Linux\"\n", 25, v, sizeof(v)), -ENOENT);
	assert_int_equal(inplace_os_version("PRETTY_NAME=1.2.3.4.5.6.7.8", 28, v, sizeof(v)), -EMSGSIZE);
}

static void versions(void **state)
{
	bool eq;
	assert_int_equal(inplace_version_equal("1592.2", "1592.2", &eq), 0);
	assert_true(eq);
	assert_int_equal(inplace_version_equal("1592.2.0", "1592.2", &eq), 0);
	assert_true(eq);
	/* "= 1592.2" is a tilde constraint in Masterminds semver: any patch. */
	assert_int_equal(inplace_version_equal("1592.2.7", "1592.2", &eq), 0);
	assert_true(eq);
	assert_int_equal(inplace_version_equal("1592.2", "1592.2.7", &eq), 0);
	assert_false(eq);
	assert_int_equal(inplace_version_equal("1592.1", "1592.2", &eq), 0);
	assert_false(eq);
	assert_int_equal(inplace_version_equal("v1.31.1-rc.1", "1.31.1", &eq), 0);
	assert_true(eq);
	assert_int_equal(inplace_version_equal("1.2.3.4", "1.2", &eq), -EINVAL);
	assert_int_equal(inplace_version_equal("", "1.2", &eq), -EINVAL);
	assert_int_equal(inplace_version_equal("1..2", "1.2", &eq), -EINVAL);
	assert_int_equal(inplace_minor_differs("1.31.9", "1.32.0", &eq), 0);
	assert_true(eq);
	assert_int_equal(inplace_minor_differs("1.31.1", "2.31.0", &eq), 0);
	assert_false(eq);
}

static void times_and_quantities(void **state)
{
	int64_t s;
	int32_t ns;
	assert_int_equal(inplace_parse_time("1970-01-01T00:00:00Z", &s, &ns), 0);
	assert_int_equal(s, 0);
	assert_int_equal(inplace_parse_time("2026-11-20T12:00:00.25+02:00", &s, &ns), 0);
	int64_t s2;
	int32_t ns2;
	assert_int_equal(inplace_parse_time("2026-11-20T10:00:00Z", &s2, &ns2), 0);
	assert_int_equal(s, s2);
	assert_int_equal(ns, 250000000);
	assert_int_equal(inplace_parse_time("2026-02-29T10:00:00Z", &s, &ns), -EINVAL);
	assert_int_equal(inplace_parse_time("2024-02-29T10:00:00Z", &s, &ns), 0);
	assert_int_equal(inplace_parse_time("2026-11-20 10:00:00Z", &s, &ns), -EINVAL);
	assert_int_equal(inplace_parse_time("2026-11-20T10:00:00", &s, &ns), -EINVAL);
	assert_int_equal(inplace_parse_time("2026-11-20T10:00:60Z", &s, &ns), -EINVAL);
	assert_true(inplace_quantity_is_valid("80m"));
	assert_true(inplace_quantity_is_valid("1Gi"));
	assert_true(inplace_quantity_is_valid("20k"));
	assert_true(inplace_quantity_is_valid("1.5"));
	assert_true(inplace_quantity_is_valid("1e3"));
	assert_false(inplace_quantity_is_valid("lots"));
	assert_false(inplace_quantity_is_valid("1GB"));
	assert_false(inplace_quantity_is_valid(""));
}

static void bad_fields(void **state)
{
	static const struct {
		const char *doc, *want;
	} cases[] = {
		{ "spec:\n  inPlaceUpdates:\n    operatingSystemVersion: 1592.1\n", "spec.inPlaceUpdates.operatingSystemVersion" },
		{ "spec:\n  inPlaceUpdates:\n    kubelet: \"1.31 .1\"\n", "spec.inPlaceUpdates.kubelet: not a version" },
		{ "spec:\n  inPlaceUpdates:\n    credentialsRotation:\n      serviceAccountKey:\n        lastInitiationTime: yesterday\n",
		  "spec.inPlaceUpdates.credentialsRotation.serviceAccountKey.lastInitiationTime" },
		{ "spec:\n  inPlaceUpdates: []\n", "spec.inPlaceUpdates" },
		{ "status:\n  inPlaceUpdates:\n    osUpdate:\n      command: /x\n      args: [1]\n",
		  "status.inPlaceUpdates.osUpdate.args[0]" },
		{ "status:\n  inPlaceUpdates:\n    osUpdate:\n      command: \"/x\\ny\"\n", "status.inPlaceUpdates.osUpdate.command" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct osc o = {};
		struct osc_error err;
		assert_int_equal(osc_parse(cases[i].doc, strlen(cases[i].doc), NULL, &o, &err), -EINVAL);
		if (!strstr(err.message, cases[i].want))
			fail_msg("case %zu: %s", i, err.message);
	}
	/* osUpdate without a command is accepted (refused when it would run). */
	const char *doc = "status:\n  inPlaceUpdates:\n    osUpdate: {}\n";
	struct osc o = {};
	assert_int_equal(osc_parse(doc, strlen(doc), NULL, &o, NULL), 0);
	assert_string_equal(o.os_update.command, "");
	assert_false(o.inplace.present);
	osc_done(&o);
}

static void desired_round_trip(void **state)
{
	static char osc[] = "spec: {}\n";
	struct desired d = { .osc = osc, .osc_len = strlen(osc), .generation = 3, .ssh_access = true,
			     .inplace_present = true, .inplace_ready = true };
	desired_sha256_hex(osc, strlen(osc), d.checksum);
	_cleanup_free_ char *out = NULL;
	size_t len;
	assert_int_equal(desired_format(&d, &out, &len), 0);
	assert_non_null(strstr(out, "\"readyForUpdate\":\ttrue"));
	struct desired p = {};
	const char *err = NULL;
	assert_int_equal(desired_parse(out, len, &p, &err), 0);
	assert_true(p.inplace_present);
	assert_true(p.inplace_ready);
	desired_done(&p);
	/* Strict: an unknown key or a wrong type. */
	char *bad = strdup(out);
	char *at = strstr(bad, "readyForUpdate");
	memcpy(at, "readyForUpdatX", 14);
	assert_int_equal(desired_parse(bad, len, &p, &err), -EINVAL);
	assert_non_null(strstr(err, "inPlaceUpdate"));
	free(bad);
}

static void result_round_trip(void **state)
{
	static char reason[] = "OS update might have failed and rolled back to the previous version. "
			       "Desired version: \"1592.2\", Current version: \"1592.1\"";
	static char des[] = "1592.2", run[] = "1592.1", step[] = "inplace-os-update";
	struct result r = { .checksum = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
			    .generation = 2,
			    .failed_step = step,
			    .finished_at = 1,
			    .inplace = { .present = true,
					 .kinds = INPLACE_OS_VERSION | INPLACE_SA_KEY_ROTATION,
					 .state = INPLACE_STATE_FAILED,
					 .reason = reason,
					 .os_desired = des,
					 .os_running = run } };
	_cleanup_free_ char *out = NULL;
	size_t len;
	assert_int_equal(result_format(&r, &out, &len), 0);
	assert_non_null(strstr(out, "\"kinds\":\t[\"os-version\", \"sa-key-rotation\"]"));
	struct result p = {};
	const char *err = NULL;
	if (result_parse(out, len, &p, &err) < 0)
		fail_msg("%s", err);
	assert_true(p.inplace.present);
	assert_int_equal(p.inplace.kinds, INPLACE_OS_VERSION | INPLACE_SA_KEY_ROTATION);
	assert_int_equal(p.inplace.state, INPLACE_STATE_FAILED);
	assert_string_equal(p.inplace.reason, reason);
	assert_string_equal(p.inplace.os_running, "1592.1");
	result_done(&p);
	/* Failed needs a reason; successful goes with success. */
	r.inplace.reason = NULL;
	assert_int_equal(result_format(&r, &out, &len), -EINVAL);
	r.inplace.state = INPLACE_STATE_SUCCESSFUL;
	assert_int_equal(result_format(&r, &out, &len), -EINVAL);
	r.success = true;
	r.failed_step = NULL;
	char *o2 = NULL;
	assert_int_equal(result_format(&r, &o2, &len), 0);
	free(o2);
	r.inplace.kinds = 0;
	assert_int_equal(result_format(&r, &o2, &len), -EINVAL);
	/* Unknown kind and unknown state are refused. */
	const char *bad = "{\"version\":1,\"checksum\":\"\",\"generation\":1,\"success\":false,\"failedStep\":\"x\","
			  "\"inPlaceUpdate\":{\"kinds\":[\"os\"],\"state\":\"waiting\"},\"finishedAt\":1}";
	assert_int_equal(result_parse(bad, strlen(bad), &p, &err), -EINVAL);
	assert_non_null(strstr(err, "inPlaceUpdate.kinds"));
	bad = "{\"version\":1,\"checksum\":\"\",\"generation\":1,\"success\":false,\"failedStep\":\"x\","
	      "\"inPlaceUpdate\":{\"kinds\":[\"os-version\"],\"state\":\"paused\"},\"finishedAt\":1}";
	assert_int_equal(result_parse(bad, strlen(bad), &p, &err), -EINVAL);
	assert_non_null(strstr(err, "inPlaceUpdate.state"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(model),
		cmocka_unit_test(none),
		cmocka_unit_test(os_version),
		cmocka_unit_test(kubelet_minor),
		cmocka_unit_test(kubelet_config),
		cmocka_unit_test(cpu_manager_policy),
		cmocka_unit_test(ca_rotation),
		cmocka_unit_test(sa_rotation),
		cmocka_unit_test(os_release),
		cmocka_unit_test(versions),
		cmocka_unit_test(times_and_quantities),
		cmocka_unit_test(bad_fields),
		cmocka_unit_test(desired_round_trip),
		cmocka_unit_test(result_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
