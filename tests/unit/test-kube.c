/* Unit tests for lib/kube/kube.c, on the exact bodies a real kube-apiserver sent
 * (shared/notes/kube-api-responses.md): Status bodies, Secrets, Nodes, watch
 * events (BOOKMARK, ERROR 410), the stream splitter at every chunk boundary,
 * names and merge patches. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "cleanup.h"
#include "kube.h"

/* ---- Status bodies (verbatim) ---- */

static const struct {
	const char *body;
	int code;
	const char *reason;
	const char *message_start;
} statuses[] = {
	{ "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"secrets \\\"cloud-config-worker-a\\\" is forbidden: User \\\"system:node:node-1\\\" cannot get resource \\\"secrets\\\" in API group \\\"\\\" in the namespace \\\"kube-system\\\": no relationship found between node 'node-1' and this object\",\"reason\":\"Forbidden\",\"details\":{\"name\":\"cloud-config-worker-a\",\"kind\":\"secrets\"},\"code\":403}",
	  403, "Forbidden", "secrets \"cloud-config-worker-a\" is forbidden: User \"system:node:node-1\"" },
	{ "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"415: Unsupported Media Type\",\"reason\":\"UnsupportedMediaType\",\"details\":{},\"code\":415}",
	  415, "UnsupportedMediaType", "415: Unsupported Media Type" },
	{ "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}",
	  401, "Unauthorized", "Unauthorized" },
	{ "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"nodes \\\"node-2\\\" is forbidden: node \\\"node-1\\\" is not allowed to modify node \\\"node-2\\\"\",\"reason\":\"Forbidden\",\"details\":{\"name\":\"node-2\",\"kind\":\"nodes\"},\"code\":403}",
	  403, "Forbidden", "nodes \"node-2\" is forbidden" },
	{ "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"The resourceVersion for the provided list is too old.\",\"reason\":\"Expired\",\"code\":410}",
	  410, "Expired", "The resourceVersion for the provided list is too old." },
};

static void status_bodies(void **state)
{
	for (size_t i = 0; i < ELEMENTSOF(statuses); i++) {
		struct kube_status s;
		assert_int_equal(kube_status_parse(statuses[i].body, strlen(statuses[i].body), &s), 0);
		assert_int_equal(s.code, statuses[i].code);
		assert_string_equal(s.reason, statuses[i].reason);
		assert_true(strncmp(s.message, statuses[i].message_start, strlen(statuses[i].message_start)) == 0);
		kube_status_done(&s);
	}
}

static void status_bad(void **state)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{\"kind\":\"Node\"}",
		"{\"code\":403}",
		"{\"kind\":\"Status\",\"code\":\"403\"}",
		"{\"kind\":\"Status\",\"reason\":7}",
		"{\"kind\":\"Status\"} trailing",
		"<html>502 Bad Gateway</html>",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct kube_status s = { .code = 77 };
		assert_int_equal(kube_status_parse(bad[i], strlen(bad[i]), &s), -EINVAL);
		assert_int_equal(s.code, 77);
	}
}

/* ---- Secrets ---- */

static const char osc_yaml[] = "apiVersion: extensions.gardener.cloud/v1alpha1\nkind: OperatingSystemConfig\n";
/* sha256 of osc_yaml, computed with sha256sum. */
static const char osc_sum[] = "b7e643ca42069167e9eabad43dc791c7596b3b4c9554f91cfff0c419ac776a6f";
/* A well-formed checksum of something else. */
static const char other_sum[] = "4c0ed3a39e1b9bb1d56bcd3af6d8e91cc4ad4e7b0fdc5aa5c4f5c7b5d5f4d2a1";

static char *make_secret(const char *rv, const char *checksum, const char *b64)
{
	size_t n = 4096 + strlen(b64);
	char *s = malloc(n);
	assert_non_null(s);
	snprintf(s, n,
		 "{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"osc-worker-a\","
		 "\"namespace\":\"kube-system\",\"resourceVersion\":\"%s\",\"annotations\":{\"checksum/data-script\":"
		 "\"%s\"},\"labels\":{\"gardener.cloud/role\":\"operating-system-config\"}},\"data\":{\"osc.yaml\":\"%s\"},"
		 "\"type\":\"Opaque\"}",
		 rv, checksum, b64);
	return s;
}

static void secret_good(void **state)
{
	const char *sum = osc_sum;
	_cleanup_free_ char *b64 = b64_encode(osc_yaml, strlen(osc_yaml), false);
	_cleanup_free_ char *body = make_secret("4711", sum, b64);
	struct kube_secret s;
	const char *err = NULL;
	assert_int_equal(kube_secret_parse(body, strlen(body), 1 << 20, &s, &err), 0);
	assert_string_equal(s.name, "osc-worker-a");
	assert_string_equal(s.resource_version, "4711");
	assert_string_equal(s.checksum, sum);
	assert_int_equal(s.osc_len, strlen(osc_yaml));
	assert_memory_equal(s.osc, osc_yaml, s.osc_len);
	char got[65];
	assert_int_equal(kube_secret_verify(&s, got), 0);
	assert_string_equal(got, sum);
	kube_secret_done(&s);

	/* Wrong checksum, upper-case checksum, truncated checksum: rejected. */
	char upper[65];
	for (int i = 0; i < 65; i++)
		upper[i] = (char)((sum[i] >= 'a' && sum[i] <= 'f') ? sum[i] - 32 : sum[i]);
	const char *wrong[] = { other_sum, upper, "abc" };
	for (size_t i = 0; i < ELEMENTSOF(wrong); i++) {
		_cleanup_free_ char *b = make_secret("1", wrong[i], b64);
		assert_int_equal(kube_secret_parse(b, strlen(b), 1 << 20, &s, &err), 0);
		assert_int_equal(kube_secret_verify(&s, got), -EBADMSG);
		kube_secret_done(&s);
	}
}

static void secret_missing_fields(void **state)
{
	const char *body = "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"5\"}}";
	struct kube_secret s;
	assert_int_equal(kube_secret_parse(body, strlen(body), 1 << 20, &s, NULL), 0);
	assert_null(s.checksum);
	assert_null(s.osc);
	char got[65];
	assert_int_equal(kube_secret_verify(&s, got), -ENODATA);
	assert_string_equal(got, "");
	kube_secret_done(&s);
}

static void secret_bad(void **state)
{
	static const struct {
		const char *body;
		int r;
		const char *err;
	} bad[] = {
		{ "{\"kind\":\"ConfigMap\"}", -EINVAL, "kind" },
		{ "{\"kind\":\"Secret\",\"metadata\":[]}", -EINVAL, "metadata" },
		{ "{\"kind\":\"Secret\",\"metadata\":{\"resourceVersion\":5}}", -EINVAL, "metadata.resourceVersion" },
		/* It goes into watch URLs: no query smuggling, no control characters. */
		{ "{\"kind\":\"Secret\",\"metadata\":{\"resourceVersion\":\"5&watch=0\"}}", -EINVAL,
		  "metadata.resourceVersion" },
		{ "{\"kind\":\"Secret\",\"metadata\":{\"resourceVersion\":\"5\\n\"}}", -EINVAL,
		  "metadata.resourceVersion" },
		{ "{\"kind\":\"Secret\",\"metadata\":{\"annotations\":{\"checksum/data-script\":1}}}", -EINVAL,
		  "metadata.annotations[checksum/data-script]" },
		{ "{\"kind\":\"Secret\",\"data\":{\"osc.yaml\":\"not base64!\"}}", -EINVAL, "data[osc.yaml]" },
		{ "{\"kind\":\"Secret\",\"data\":{\"osc.yaml\":\"YWJj\\nZA==\"}}", -EINVAL, "data[osc.yaml]" },
		{ "{\"kind\":\"Secret\",\"data\":{\"osc.yaml\":\"QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB\"}}", -EMSGSIZE,
		  "data[osc.yaml]" },
		{ "{\"kind\":\"Secret\",\"data\":{\"osc.yaml\":true}}", -EINVAL, "data[osc.yaml]" },
		{ "{\"kind\":\"Secret\",\"data\":\"x\"}", -EINVAL, "data" },
		{ "{\"kind\":\"Secret\"", -EINVAL, "not a JSON object" },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct kube_secret s = {};
		const char *err = NULL;
		int r = kube_secret_parse(bad[i].body, strlen(bad[i].body), 16, &s, &err);
		if (r != bad[i].r || !err || strcmp(err, bad[i].err) != 0)
			fail_msg("case %zu: r=%d err=%s", i, r, err ? err : "(null)");
		assert_null(s.name);
	}
}

/* ---- Nodes ---- */

static const char node_body[] =
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-1\",\"uid\":\"6d3b\","
	"\"resourceVersion\":\"203\",\"labels\":{\"kubernetes.io/hostname\":\"node-1\","
	"\"worker.gardener.cloud/gardener-node-agent-secret-name\":\"osc-worker-b\","
	"\"worker.gardener.cloud/kubernetes-version\":\"1.31.1\"},"
	"\"annotations\":{\"agent.example.com/state\":\"configured\",\"agent.example.com/ts\":\"1\","
	"\"checksum/cloud-config-data\":\"abc\",\"worker.gardener.cloud/restart-systemd-services\":\"kubelet,containerd.service\","
	"\"node-agent.gardener.cloud/authorized-keys\":\"[]\"}},"
	"\"spec\":{},\"status\":{\"nodeInfo\":{\"kubeletVersion\":\"v1.20.2\"}}}";

static void node_good(void **state)
{
	struct kube_node n;
	assert_int_equal(kube_node_parse(node_body, strlen(node_body), &n, NULL), 0);
	assert_string_equal(n.name, "node-1");
	assert_string_equal(n.resource_version, "203");
	assert_string_equal(n.applied_checksum, "abc");
	assert_string_equal(n.restart_services, "kubelet,containerd.service");
	assert_string_equal(n.authorized_keys, "[]");
	assert_null(n.ssh_host_keys);
	assert_string_equal(n.secret_name_label, "osc-worker-b");
	assert_string_equal(n.kubernetes_version, "1.31.1");
	kube_node_done(&n);

	const char *bare = "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"1\"}}";
	assert_int_equal(kube_node_parse(bare, strlen(bare), &n, NULL), 0);
	assert_null(n.restart_services);
	assert_null(n.secret_name_label);
	kube_node_done(&n);
}

/* The Ready condition (agent/health.c counts its toggles): absent or
 * malformed reads as -1, never as an error. */
static void node_ready(void **state)
{
	static const struct {
		const char *status;
		int want;
	} cases[] = {
		{ "", -1 },
		{ ",\"status\":{}", -1 },
		{ ",\"status\":{\"conditions\":{}}", -1 },
		{ ",\"status\":{\"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"True\"}]}", -1 },
		{ ",\"status\":{\"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"False\"},"
		  "{\"type\":\"Ready\",\"status\":\"True\"}]}", 1 },
		{ ",\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}", 0 },
		{ ",\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\"}]}", 0 },
		{ ",\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":true}]}", 0 },
		{ ",\"status\":{\"conditions\":[7,{\"type\":3},{\"type\":\"Ready\",\"status\":\"True\"}]}", 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char body[512];
		snprintf(body, sizeof(body), "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"1\"}%s}",
			 cases[i].status);
		struct kube_node n;
		assert_int_equal(kube_node_parse(body, strlen(body), &n, NULL), 0);
		if (n.ready != cases[i].want)
			fail_msg("%s: ready %d, want %d", body, n.ready, cases[i].want);
		kube_node_done(&n);
	}
}

/* The in-place update's condition, label and annotations: the condition
 * by type and reason (gardener's nodeHasInPlaceUpdateConditionWithReason
 * ReadyForUpdate), whatever its status; malformed reads as absent. */
static void node_in_place(void **state)
{
	static const struct {
		const char *status;
		bool want;
	} cases[] = {
		{ "", false },
		{ ",\"status\":{\"conditions\":[{\"type\":\"InPlaceUpdate\",\"status\":\"True\","
		  "\"reason\":\"ReadyForUpdate\"}]}", true },
		{ ",\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":"
		  "\"InPlaceUpdate\",\"status\":\"False\",\"reason\":\"ReadyForUpdate\"}]}", true },
		{ ",\"status\":{\"conditions\":[{\"type\":\"InPlaceUpdate\",\"status\":\"True\","
		  "\"reason\":\"UpdateSuccessful\"}]}", false },
		{ ",\"status\":{\"conditions\":[{\"type\":\"Ready\",\"reason\":\"ReadyForUpdate\"}]}", false },
		{ ",\"status\":{\"conditions\":[{\"type\":\"InPlaceUpdate\",\"reason\":7}]}", false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char body[512];
		snprintf(body, sizeof(body), "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"1\"}%s}",
			 cases[i].status);
		struct kube_node n;
		assert_int_equal(kube_node_parse(body, strlen(body), &n, NULL), 0);
		if (n.ready_for_update != cases[i].want)
			fail_msg("%s: ready_for_update %d, want %d", body, n.ready_for_update, cases[i].want);
		kube_node_done(&n);
	}
	const char *body = "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"1\","
			   "\"labels\":{\"node.machine.sapcloud.io/update-result\":\"failed\"},\"annotations\":{"
			   "\"node.machine.sapcloud.io/update-failed-reason\":\"OS rolled back\","
			   "\"node-agent.gardener.cloud/updating-operating-system-version\":\"1877.3\"}}}";
	struct kube_node n;
	assert_int_equal(kube_node_parse(body, strlen(body), &n, NULL), 0);
	assert_string_equal(n.update_result, "failed");
	assert_string_equal(n.update_failed_reason, "OS rolled back");
	assert_string_equal(n.updating_os_version, "1877.3");
	kube_node_done(&n);
	assert_null(n.update_result);
}

static void node_bad(void **state)
{
	static const struct {
		const char *body;
		const char *err;
	} bad[] = {
		{ "{\"kind\":\"Secret\"}", "kind" },
		{ "{\"kind\":\"Node\",\"metadata\":{\"labels\":[]}}", "metadata.annotations[checksum/cloud-config-data]" },
		{ "{\"kind\":\"Node\",\"metadata\":{\"labels\":{\"worker.gardener.cloud/kubernetes-version\":1}}}",
		  "metadata.labels[kubernetes-version]" },
		{ "{\"kind\":\"Node\",\"metadata\":{\"annotations\":{\"worker.gardener.cloud/restart-systemd-services\":[]}}}",
		  "metadata.annotations[restart-systemd-services]" },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct kube_node n = {};
		const char *err = NULL;
		int r = kube_node_parse(bad[i].body, strlen(bad[i].body), &n, &err);
		/* labels:[] fails on the first lookup into labels, which comes
		 * after the annotations lookups; accept the label name too. */
		if (r != -EINVAL || !err)
			fail_msg("case %zu: r=%d", i, r);
		if (i != 1 && strcmp(err, bad[i].err) != 0)
			fail_msg("case %zu: err=%s", i, err);
		if (i == 1 && strcmp(err, "metadata.labels[gardener-node-agent-secret-name]") != 0)
			fail_msg("case %zu: err=%s", i, err);
	}
}

/* ---- Watch events (verbatim lines) ---- */

static const char ev_modified[] =
	"{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-1\",\"resourceVersion\":\"208\",\"annotations\":{\"agent.example.com/state\":\"configured\",\"agent.example.com/ts\":\"w1\"}}}}";
static const char ev_added[] =
	"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-1\",\"resourceVersion\":\"209\",\"annotations\":{\"agent.example.com/state\":\"configured\",\"agent.example.com/ts\":\"w2\"}}}}";
static const char ev_bookmark[] =
	"{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"209\",\"creationTimestamp\":null},\"spec\":{},\"status\":{\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":0}},\"nodeInfo\":{\"machineID\":\"\",\"systemUUID\":\"\",\"bootID\":\"\",\"kernelVersion\":\"\",\"osImage\":\"\",\"containerRuntimeVersion\":\"\",\"kubeletVersion\":\"\",\"kubeProxyVersion\":\"\",\"operatingSystem\":\"\",\"architecture\":\"\"}}}}";
static const char ev_error[] =
	"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: 203 (212)\",\"reason\":\"Expired\",\"code\":410}}";

static void events_node(void **state)
{
	struct kube_event e;
	assert_int_equal(kube_event_parse(ev_modified, strlen(ev_modified), KUBE_KIND_NODE, 0, &e, NULL), 0);
	assert_int_equal(e.type, KUBE_EVENT_MODIFIED);
	assert_string_equal(e.resource_version, "208");
	assert_string_equal(e.node.name, "node-1");
	kube_event_done(&e);

	assert_int_equal(kube_event_parse(ev_added, strlen(ev_added), KUBE_KIND_NODE, 0, &e, NULL), 0);
	assert_int_equal(e.type, KUBE_EVENT_ADDED);
	assert_string_equal(e.resource_version, "209");
	kube_event_done(&e);

	assert_int_equal(kube_event_parse(ev_bookmark, strlen(ev_bookmark), KUBE_KIND_NODE, 0, &e, NULL), 0);
	assert_int_equal(e.type, KUBE_EVENT_BOOKMARK);
	assert_string_equal(e.resource_version, "209");
	assert_null(e.node.name);
	kube_event_done(&e);

	assert_int_equal(kube_event_parse(ev_error, strlen(ev_error), KUBE_KIND_NODE, 0, &e, NULL), 0);
	assert_int_equal(e.type, KUBE_EVENT_ERROR);
	assert_null(e.resource_version);
	assert_int_equal(e.status.code, 410);
	assert_string_equal(e.status.reason, "Expired");
	assert_string_equal(e.status.message, "too old resource version: 203 (212)");
	kube_event_done(&e);

	/* A Node event on a Secret watch is refused. */
	const char *err = NULL;
	assert_int_equal(kube_event_parse(ev_modified, strlen(ev_modified), KUBE_KIND_SECRET, 1024, &e, &err),
			 -EINVAL);
	assert_string_equal(err, "kind");
	assert_int_equal(kube_event_parse(ev_bookmark, strlen(ev_bookmark), KUBE_KIND_SECRET, 1024, &e, &err),
			 -EINVAL);
}

static void events_secret(void **state)
{
	_cleanup_free_ char *b64 = b64_encode("abc", 3, false);
	_cleanup_free_ char *obj = make_secret("12", "x", b64);
	char line[8192];
	snprintf(line, sizeof(line), "{\"type\":\"DELETED\",\"object\":%s}", obj);
	struct kube_event e;
	assert_int_equal(kube_event_parse(line, strlen(line), KUBE_KIND_SECRET, 1024, &e, NULL), 0);
	assert_int_equal(e.type, KUBE_EVENT_DELETED);
	assert_string_equal(e.resource_version, "12");
	assert_int_equal(e.secret.osc_len, 3);
	kube_event_done(&e);
}

static void events_bad(void **state)
{
	static const struct {
		const char *line;
		const char *err;
	} bad[] = {
		{ "{\"type\":\"SYNC\",\"object\":{}}", "type" },
		{ "{\"type\":1,\"object\":{}}", "type" },
		{ "{\"object\":{}}", "type" },
		{ "{\"type\":\"ADDED\"}", "object" },
		{ "{\"type\":\"ADDED\",\"object\":[]}", "object" },
		{ "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"metadata\":{}}}", "object.metadata.resourceVersion" },
		{ "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Node\",\"metadata\":{}}}", "object.metadata.resourceVersion" },
		{ "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Node\"}}", "object (Status)" },
		{ "{\"type\":\"ADDED\",\"object\":{}} {}", "not a JSON object" },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct kube_event e;
		const char *err = NULL;
		int r = kube_event_parse(bad[i].line, strlen(bad[i].line), KUBE_KIND_NODE, 0, &e, &err);
		if (r != -EINVAL || !err || strcmp(err, bad[i].err) != 0)
			fail_msg("case %zu: r=%d err=%s", i, r, err ? err : "(null)");
	}
}

/* ---- splitter ---- */

struct collect {
	char lines[8][1024];
	size_t n;
};

static int collect_cb(const char *line, size_t len, void *userdata)
{
	struct collect *c = userdata;
	if (c->n >= ELEMENTSOF(c->lines) || len >= sizeof(c->lines[0]))
		return -E2BIG;
	memcpy(c->lines[c->n], line, len);
	c->lines[c->n][len] = '\0';
	c->n++;
	return 0;
}

static void splitter_every_boundary(void **state)
{
	char stream[2048];
	snprintf(stream, sizeof(stream), "%s\n%s\r\n\n%s\n", ev_modified, ev_added, ev_error);
	size_t n = strlen(stream);
	/* Every split point into two chunks, and byte-by-byte. */
	for (size_t cut = 0; cut <= n; cut++) {
		struct kube_splitter s;
		struct collect c = {};
		kube_splitter_init(&s, 1024);
		assert_int_equal(kube_splitter_feed(&s, stream, cut, collect_cb, &c), 0);
		assert_int_equal(kube_splitter_feed(&s, stream + cut, n - cut, collect_cb, &c), 0);
		assert_int_equal(c.n, 3);
		assert_string_equal(c.lines[0], ev_modified);
		assert_string_equal(c.lines[1], ev_added);
		assert_string_equal(c.lines[2], ev_error);
		assert_int_equal(kube_splitter_pending(&s), 0);
		kube_splitter_done(&s);
	}
	struct kube_splitter s;
	struct collect c = {};
	kube_splitter_init(&s, 1024);
	for (size_t i = 0; i < n; i++) {
		uint64_t before = s.lines;
		assert_int_equal(kube_splitter_feed(&s, stream + i, 1, collect_cb, &c), 0);
		/* The count moves exactly on the byte that completes a line,
		 * and not for the blank one ("\r\n\n"). */
		bool completes = stream[i] == '\n' && i > 0 && stream[i - 1] != '\n';
		assert_int_equal(s.lines - before, completes ? 1 : 0);
	}
	assert_int_equal(c.n, 3);
	assert_int_equal(s.lines, 3); /* three events; the blank line is not one */
	kube_splitter_done(&s);
}

/* Blank lines are no events and no progress: a peer that sends only
 * newlines must not keep a watch alive (agent/http.c counts on this). */
static void splitter_blank_lines(void **state)
{
	struct kube_splitter s;
	struct collect c = {};
	kube_splitter_init(&s, 64);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(kube_splitter_feed(&s, i % 2 ? "\n" : "\r\n\n", i % 2 ? 1 : 3, collect_cb, &c), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(s.lines, 0);
	assert_int_equal(kube_splitter_feed(&s, "\n{}\r\n\n", 6, collect_cb, &c), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(s.lines, 1);
	kube_splitter_done(&s);
}

static void splitter_ceiling(void **state)
{
	struct kube_splitter s;
	struct collect c = {};
	kube_splitter_init(&s, 16);
	/* Exactly 16 bytes is fine, 17 is not, whether in one chunk or many. */
	assert_int_equal(kube_splitter_feed(&s, "0123456789abcdef\n", 17, collect_cb, &c), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(kube_splitter_feed(&s, "0123456789", 10, collect_cb, &c), 0);
	assert_int_equal(kube_splitter_pending(&s), 10);
	assert_int_equal(kube_splitter_feed(&s, "abcdefg", 7, collect_cb, &c), -EMSGSIZE);
	kube_splitter_reset(&s);
	assert_int_equal(kube_splitter_pending(&s), 0);
	assert_int_equal(kube_splitter_feed(&s, "0123456789abcdefX\n", 18, collect_cb, &c), -EMSGSIZE);
	kube_splitter_done(&s);
}

static int stop_cb(const char *line, size_t len, void *userdata)
{
	(*(int *)userdata)++;
	return -ECANCELED;
}

static void splitter_cb_error(void **state)
{
	struct kube_splitter s;
	int calls = 0;
	kube_splitter_init(&s, 64);
	assert_int_equal(kube_splitter_feed(&s, "a\nb\n", 4, stop_cb, &calls), -ECANCELED);
	assert_int_equal(calls, 1);
	kube_splitter_done(&s);
}

/* ---- names, patches ---- */

static void names(void **state)
{
	static const char *const good[] = { "node-1", "a", "ip-10-0-0-1.eu-west-1.compute.internal",
					    "gardener-node-agent-worker-a-1b2c3" };
	static const char *const bad[] = { "", "Node-1", "-a", "a-", "a_b", "a/b", "a b", "a%3Db", "a&x=1", ".a" };
	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		assert_true(kube_name_is_valid(good[i]));
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (kube_name_is_valid(bad[i]))
			fail_msg("accepted '%s'", bad[i]);
	char long_name[300];
	memset(long_name, 'a', sizeof(long_name));
	long_name[254] = '\0';
	assert_false(kube_name_is_valid(long_name));
	long_name[253] = '\0';
	assert_true(kube_name_is_valid(long_name));
	assert_false(kube_name_is_valid(NULL));
}

static void patches(void **state)
{
	const struct kube_patch_entry ann[] = {
		{ KUBE_ANN_NODE_CHECKSUM, "abc" },
		{ KUBE_ANN_RESTART, NULL },
	};
	const struct kube_patch_entry lab[] = { { KUBE_LABEL_K8S_VERSION, "1.31.1" } };
	_cleanup_free_ char *p = kube_merge_patch(ann, 2, lab, 1, NULL);
	assert_string_equal(p, "{\"metadata\":{\"annotations\":{\"checksum/cloud-config-data\":\"abc\","
			       "\"worker.gardener.cloud/restart-systemd-services\":null},"
			       "\"labels\":{\"worker.gardener.cloud/kubernetes-version\":\"1.31.1\"}}}");
	_cleanup_free_ char *q = kube_merge_patch(NULL, 0, lab, 1, NULL);
	assert_string_equal(q, "{\"metadata\":{\"labels\":{\"worker.gardener.cloud/kubernetes-version\":\"1.31.1\"}}}");
	/* Quotes and newlines in values are escaped, not injected. */
	const struct kube_patch_entry evil[] = { { KUBE_ANN_SSH_HOST_KEYS, "a\"}\nb" } };
	_cleanup_free_ char *r = kube_merge_patch(evil, 1, NULL, 0, NULL);
	assert_string_equal(r, "{\"metadata\":{\"annotations\":{\"node-agent.gardener.cloud/ssh-host-keys\":\"a\\\"}\\nb\"}}}");
	/* With a precondition. */
	_cleanup_free_ char *t = kube_merge_patch(ann + 1, 1, NULL, 0, "4711");
	assert_string_equal(t, "{\"metadata\":{\"resourceVersion\":\"4711\",\"annotations\":"
			       "{\"worker.gardener.cloud/restart-systemd-services\":null}}}");
}

/* The Node found by the kubernetes.io/hostname label, as gardener-node-agent
 * does before it knows its name. */
static void node_list(void **state)
{
	(void)state;
	const char *err = NULL;
	char *name = NULL;
#define ITEM(n, h) "{\"metadata\": {\"name\": \"" n "\", \"labels\": {\"kubernetes.io/hostname\": \"" h "\"}}}"
	static const char one[] = "{\"kind\": \"NodeList\", \"items\": [" ITEM("ip-10-0-1-5.eu-west-1.compute.internal", "ip-10-0-1-5") "]}";
	assert_int_equal(kube_node_list_find(one, strlen(one), KUBE_LABEL_HOSTNAME, "ip-10-0-1-5", &name, &err), 0);
	assert_string_equal(name, "ip-10-0-1-5.eu-west-1.compute.internal");
	free(name);
	name = NULL;
	/* A server that ignored the selector: only the item with the label counts. */
	static const char mixed[] = "{\"kind\": \"NodeList\", \"items\": [" ITEM("a", "other") ", {\"metadata\": {\"name\": \"b\"}}, " ITEM("c", "me") "]}";
	assert_int_equal(kube_node_list_find(mixed, strlen(mixed), KUBE_LABEL_HOSTNAME, "me", &name, &err), 0);
	assert_string_equal(name, "c");
	free(name);
	name = NULL;
	static const char none[] = "{\"kind\": \"NodeList\", \"metadata\": {}, \"items\": []}";
	assert_int_equal(kube_node_list_find(none, strlen(none), KUBE_LABEL_HOSTNAME, "me", &name, &err), -ENOENT);
	static const char null_items[] = "{\"kind\": \"NodeList\", \"items\": null}";
	assert_int_equal(kube_node_list_find(null_items, strlen(null_items), KUBE_LABEL_HOSTNAME, "me", &name, &err), -ENOENT);
	static const char two[] = "{\"kind\": \"NodeList\", \"items\": [" ITEM("a", "me") ", " ITEM("b", "me") "]}";
	assert_int_equal(kube_node_list_find(two, strlen(two), KUBE_LABEL_HOSTNAME, "me", &name, &err), -ENOTUNIQ);
	assert_null(name);
	static const char bad_name[] = "{\"kind\": \"NodeList\", \"items\": [" ITEM("Bad_Name", "me") "]}";
	assert_int_equal(kube_node_list_find(bad_name, strlen(bad_name), KUBE_LABEL_HOSTNAME, "me", &name, &err), -EINVAL);
	assert_string_equal(err, "items[].metadata.name");
	static const char kind[] = "{\"kind\": \"SecretList\", \"items\": []}";
	assert_int_equal(kube_node_list_find(kind, strlen(kind), KUBE_LABEL_HOSTNAME, "me", &name, &err), -EINVAL);
	static const char items[] = "{\"kind\": \"NodeList\", \"items\": {}}";
	assert_int_equal(kube_node_list_find(items, strlen(items), KUBE_LABEL_HOSTNAME, "me", &name, &err), -EINVAL);
	static const char labels[] = "{\"items\": [{\"metadata\": {\"name\": \"a\", \"labels\": []}}]}";
	assert_int_equal(kube_node_list_find(labels, strlen(labels), KUBE_LABEL_HOSTNAME, "me", &name, &err), -EINVAL);
	assert_null(name);
#undef ITEM
}

/* The agent's own Node read with a list by name (fieldSelector
 * metadata.name=<node>): Gardener's node-agent authorizer refuses a GET of a
 * Node that does not exist yet, the list answers with no item. */
static void node_list_named(void **state)
{
	(void)state;
	const char *err = NULL;
	struct kube_node n = {};
	static const char one[] =
		"{\"kind\": \"NodeList\", \"apiVersion\": \"v1\", \"metadata\": {\"resourceVersion\": \"900\"}, \"items\": ["
		"{\"metadata\": {\"name\": \"node-1\", \"uid\": \"u-1\", \"resourceVersion\": \"812\", "
		"\"labels\": {\"worker.gardener.cloud/gardener-node-agent-secret-name\": \"osc-a\"}, "
		"\"annotations\": {\"worker.gardener.cloud/restart-systemd-services\": \"kubelet\"}}, "
		"\"status\": {\"addresses\": [{\"type\": \"InternalIP\", \"address\": \"10.0.0.5\"}], "
		"\"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"}]}}]}";
	assert_int_equal(kube_node_list_named(one, strlen(one), "node-1", &n, &err), 0);
	assert_string_equal(n.name, "node-1");
	assert_string_equal(n.uid, "u-1");
	/* The object's own version (the list's is not the Node's). */
	assert_string_equal(n.resource_version, "812");
	assert_string_equal(n.secret_name_label, "osc-a");
	assert_string_equal(n.restart_services, "kubelet");
	assert_string_equal(n.internal_ip, "10.0.0.5");
	assert_int_equal(n.ready, 1);
	kube_node_done(&n);
	/* The same as kube_node_parse() of the item itself. */
	static const char item[] = "{\"kind\": \"Node\", \"metadata\": {\"name\": \"node-1\", \"uid\": \"u-1\", "
				   "\"resourceVersion\": \"812\"}}";
	struct kube_node m = {};
	assert_int_equal(kube_node_parse(item, strlen(item), &m, &err), 0);
	assert_string_equal(m.resource_version, "812");
	kube_node_done(&m);
	/* Absent: an empty list, items null or missing. */
	static const char none[] = "{\"kind\": \"NodeList\", \"metadata\": {\"resourceVersion\": \"900\"}, \"items\": []}";
	assert_int_equal(kube_node_list_named(none, strlen(none), "node-1", &n, &err), -ENOENT);
	static const char null_items[] = "{\"kind\": \"NodeList\", \"items\": null}";
	assert_int_equal(kube_node_list_named(null_items, strlen(null_items), "node-1", &n, &err), -ENOENT);
	static const char no_items[] = "{\"kind\": \"NodeList\"}";
	assert_int_equal(kube_node_list_named(no_items, strlen(no_items), "node-1", &n, &err), -ENOENT);
	/* A server ignoring the selector: other Nodes are skipped. */
	static const char others[] = "{\"kind\": \"NodeList\", \"items\": [{\"metadata\": {\"name\": \"node-2\"}}, "
				     "{\"metadata\": {\"name\": \"node-1\", \"resourceVersion\": \"7\"}}]}";
	assert_int_equal(kube_node_list_named(others, strlen(others), "node-1", &n, &err), 0);
	assert_string_equal(n.name, "node-1");
	assert_string_equal(n.resource_version, "7");
	kube_node_done(&n);
	static const char only_others[] = "{\"kind\": \"NodeList\", \"items\": [{\"metadata\": {\"name\": \"node-2\"}}]}";
	assert_int_equal(kube_node_list_named(only_others, strlen(only_others), "node-1", &n, &err), -ENOENT);
	/* Twice the name: no guess. */
	static const char twice[] = "{\"kind\": \"NodeList\", \"items\": [{\"metadata\": {\"name\": \"node-1\"}}, "
				    "{\"metadata\": {\"name\": \"node-1\"}}]}";
	assert_int_equal(kube_node_list_named(twice, strlen(twice), "node-1", &n, &err), -ENOTUNIQ);
	/* Not a NodeList, or items that are not Nodes. */
	static const char kind[] = "{\"kind\": \"SecretList\", \"items\": []}";
	assert_int_equal(kube_node_list_named(kind, strlen(kind), "node-1", &n, &err), -EINVAL);
	assert_string_equal(err, "kind");
	static const char items[] = "{\"kind\": \"NodeList\", \"items\": {}}";
	assert_int_equal(kube_node_list_named(items, strlen(items), "node-1", &n, &err), -EINVAL);
	static const char no_name[] = "{\"kind\": \"NodeList\", \"items\": [{\"metadata\": {}}]}";
	assert_int_equal(kube_node_list_named(no_name, strlen(no_name), "node-1", &n, &err), -EINVAL);
	assert_string_equal(err, "items[].metadata.name");
	static const char item_kind[] = "{\"kind\": \"NodeList\", \"items\": [{\"kind\": \"Secret\", "
					"\"metadata\": {\"name\": \"node-1\"}}]}";
	assert_int_equal(kube_node_list_named(item_kind, strlen(item_kind), "node-1", &n, &err), -EINVAL);
	static const char bad_label[] = "{\"kind\": \"NodeList\", \"items\": [{\"metadata\": {\"name\": \"node-1\", "
					"\"labels\": []}}]}";
	assert_int_equal(kube_node_list_named(bad_label, strlen(bad_label), "node-1", &n, &err), -EINVAL);
	assert_null(n.name);
	assert_int_equal(kube_node_list_named("[]", 2, "node-1", &n, &err), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(status_bodies),
		cmocka_unit_test(status_bad),
		cmocka_unit_test(secret_good),
		cmocka_unit_test(secret_missing_fields),
		cmocka_unit_test(secret_bad),
		cmocka_unit_test(node_good),
		cmocka_unit_test(node_ready),
		cmocka_unit_test(node_in_place),
		cmocka_unit_test(node_bad),
		cmocka_unit_test(events_node),
		cmocka_unit_test(events_secret),
		cmocka_unit_test(events_bad),
		cmocka_unit_test(splitter_every_boundary),
		cmocka_unit_test(splitter_blank_lines),
		cmocka_unit_test(splitter_ceiling),
		cmocka_unit_test(splitter_cb_error),
		cmocka_unit_test(names),
		cmocka_unit_test(patches),
		cmocka_unit_test(node_list),
		cmocka_unit_test(node_list_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
