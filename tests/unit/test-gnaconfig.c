/* Unit tests for lib/node/gnaconfig.c: gardener-node-agent's configuration as
 * Gardener renders it (v1.149 and v1.92), unknown fields ignored, wrong
 * types refused, durations, machine names, the newest config-<v>.yaml. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "gnaconfig.h"
#include "osc.h"

/* What gardenlet writes today (runtime.Encode of ComponentConfig() in
 * gardener/gardener pkg/component/extensions/operatingsystemconfig/original/
 * components/nodeagent/component.go): empty defaults included. */
static const char stock[] =
	"apiServer:\n"
	"  caFile: /var/lib/gardener-node-agent/cluster-ca.crt\n"
	"  server: https://api.shoot.example.com\n"
	"apiVersion: nodeagent.config.gardener.cloud/v1alpha1\n"
	"clientConnection:\n"
	"  acceptContentTypes: \"\"\n"
	"  burst: 0\n"
	"  qps: 0\n"
	"controllers:\n"
	"  operatingSystemConfig:\n"
	"    kubernetesVersion: 1.33.2\n"
	"    secretName: gardener-node-agent-worker-1-0123456789abcdef\n"
	"  systemdUnitCheck: {}\n"
	"  token:\n"
	"    syncConfigs:\n"
	"    - path: /var/lib/opentelemetry-collector/auth-token\n"
	"      secretName: shoot-access-opentelemetry-collector\n"
	"    syncPeriod: 12h0m0s\n"
	"kind: NodeAgentConfiguration\n"
	"logFormat: \"\"\n"
	"server: {}\n"
	"aFieldFromTheFuture: [1, 2]\n";

static void parse_stock(void **state)
{
	(void)state;
	struct gnaconfig g;
	char err[GNACONFIG_ERROR_MAX];
	assert_int_equal(gnaconfig_parse(stock, strlen(stock), &g, err, sizeof(err)), 0);
	assert_string_equal(g.server, "https://api.shoot.example.com");
	assert_string_equal(g.ca_file, "/var/lib/gardener-node-agent/cluster-ca.crt");
	assert_null(g.ca_bundle);
	assert_string_equal(g.secret_name, "gardener-node-agent-worker-1-0123456789abcdef");
	assert_string_equal(g.kubernetes_version, "1.33.2");
	assert_int_equal(g.sync_period_ms, 0);
	assert_int_equal(g.n_token_syncs, 1);
	assert_string_equal(g.token_syncs[0].secret_name, "shoot-access-opentelemetry-collector");
	assert_string_equal(g.token_syncs[0].path, "/var/lib/opentelemetry-collector/auth-token");
	assert_int_equal(g.token_sync_period_ms, 12ull * 3600 * 1000);
	assert_int_equal(g.kubelet_data_volume_size, 0);
	gnaconfig_done(&g);
}

#define HDR "apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: NodeAgentConfiguration\n"
/* bootstrap.kubeletDataVolumeSize (*int64, bytes; gardener/gardener
 * pkg/apis/config/nodeagent/v1alpha1/types.go BootstrapConfiguration). */
static void data_volume_size(void **state)
{
	(void)state;
	struct gnaconfig g;
	char err[GNACONFIG_ERROR_MAX];
	static const char ok[] = HDR "bootstrap:\n  kubeletDataVolumeSize: 107374182400\n";
	assert_int_equal(gnaconfig_parse(ok, strlen(ok), &g, err, sizeof(err)), 0);
	assert_true(g.kubelet_data_volume_size == 107374182400ull);
	gnaconfig_done(&g);
	static const char *const bad[] = { HDR "bootstrap:\n  kubeletDataVolumeSize: \"100Gi\"\n",
					   HDR "bootstrap:\n  kubeletDataVolumeSize: 0\n",
					   HDR "bootstrap:\n  kubeletDataVolumeSize: -1\n", HDR "bootstrap: 5\n" };
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		assert_int_equal(gnaconfig_parse(bad[i], strlen(bad[i]), &g, err, sizeof(err)), -EINVAL);
	static const char none[] = HDR "bootstrap: {}\n";
	assert_int_equal(gnaconfig_parse(none, strlen(none), &g, err, sizeof(err)), 0);
	assert_int_equal(g.kubelet_data_volume_size, 0);
	gnaconfig_done(&g);
}

static void parse_v192_and_json(void **state)
{
	(void)state;
	static const char old[] = "apiVersion: nodeagent.config.gardener.cloud/v1alpha1\n"
				  "kind: NodeAgentConfiguration\n"
				  "apiServer:\n"
				  "  server: https://api.example.com\n"
				  "  caBundle: aGVsbG8=\n"
				  "controllers:\n"
				  "  operatingSystemConfig:\n"
				  "    secretName: gardener-node-agent-worker-b1c2d\n"
				  "    kubernetesVersion: v1.28.2\n"
				  "    syncPeriod: 10m\n"
				  "    syncJitterPeriod: 5m\n";
	struct gnaconfig g;
	char err[GNACONFIG_ERROR_MAX];
	assert_int_equal(gnaconfig_parse(old, strlen(old), &g, err, sizeof(err)), 0);
	assert_int_equal(g.ca_bundle_len, 5);
	assert_memory_equal(g.ca_bundle, "hello", 5);
	assert_null(g.ca_file);
	assert_string_equal(g.kubernetes_version, "v1.28.2");
	assert_int_equal(g.sync_period_ms, 600000);
	assert_int_equal(g.n_token_syncs, 0);
	gnaconfig_done(&g);

	static const char json[] = "{\"apiVersion\":\"nodeagent.config.gardener.cloud/v1alpha1\","
				   "\"kind\":\"NodeAgentConfiguration\",\"controllers\":{\"token\":{\"syncConfigs\":"
				   "[{\"secretName\":\"a\",\"path\":\"/a\"},{\"secretName\":\"b\",\"path\":\"/b\"}]}}}";
	assert_int_equal(gnaconfig_parse(json, strlen(json), &g, err, sizeof(err)), 0);
	assert_null(g.server);
	assert_int_equal(g.n_token_syncs, 2);
	assert_string_equal(g.token_syncs[1].path, "/b");
	gnaconfig_done(&g);
}


static void bad_inputs(void **state)
{
	(void)state;
	static const struct {
		const char *yaml;
		const char *error; /* a substring of the message */
	} cases[] = {
		{ "kind: NodeAgentConfiguration\n", "apiVersion: '' is not" },
		{ "apiVersion: v1\nkind: NodeAgentConfiguration\n", "apiVersion: 'v1' is not" },
		{ "apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: Other\n", "kind: 'Other'" },
		{ "- a\n", "expected a mapping" },
		{ "a: [\n", "yaml: line" },
		{ HDR "apiServer: https://x\n", "apiServer: expected a mapping, got a string" },
		{ HDR "apiServer:\n  server: 5\n", "apiServer.server: expected a string, got an integer '5'" },
		{ HDR "apiServer:\n  server: http://x\n", "apiServer.server: expected an https:// URL" },
		{ HDR "apiServer:\n  caFile: ca.crt\n", "apiServer.caFile: not an absolute normalised path" },
		{ HDR "apiServer:\n  caBundle: '!!'\n", "apiServer.caBundle: not base64" },
		{ HDR "apiServer:\n  server: \"https://x\\ny\"\n", "apiServer.server: control character" },
		{ HDR "controllers:\n  operatingSystemConfig:\n    kubernetesVersion: 1.33\n",
		  "kubernetesVersion: expected a string, got a number '1.33'" },
		{ HDR "controllers:\n  operatingSystemConfig:\n    kubernetesVersion: 'x1'\n",
		  "kubernetesVersion: not a version" },
		{ HDR "controllers:\n  operatingSystemConfig:\n    secretName: Not_A_Name\n",
		  "secretName: not a valid Kubernetes name" },
		{ HDR "controllers:\n  operatingSystemConfig:\n    secretName: [a]\n",
		  "secretName: expected a string, got a list" },
		{ HDR "controllers:\n  operatingSystemConfig:\n    syncPeriod: 10\n",
		  "syncPeriod: expected a string, got an integer" },
		{ HDR "controllers:\n  operatingSystemConfig:\n    syncPeriod: 10x\n",
		  "syncPeriod: not a positive duration" },
		{ HDR "controllers:\n  token:\n    syncConfigs: {}\n", "syncConfigs: expected a list" },
		{ HDR "controllers:\n  token:\n    syncConfigs:\n    - path: /a\n", "syncConfigs[0].secretName: missing" },
		{ HDR "controllers:\n  token:\n    syncConfigs:\n    - {secretName: a, path: a}\n",
		  "syncConfigs[0].path: not an absolute" },
		{ HDR "controllers:\n  token:\n    syncConfigs:\n    - {secretName: a, path: /a}\n"
		      "    - {secretName: b, path: /a}\n",
		  "syncConfigs[1].path: also the path of syncConfigs[0]" },
		{ HDR "apiServer: {}\napiServer: {}\n", "apiServer: duplicate key" },
		{ HDR "a: &x 1\nb: *x\n", "aliases are not supported" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char untouched[] = "untouched";
		struct gnaconfig g = { .server = untouched };
		char err[GNACONFIG_ERROR_MAX] = "";
		int r = gnaconfig_parse(cases[i].yaml, strlen(cases[i].yaml), &g, err, sizeof(err));
		if (r >= 0 || !strstr(err, cases[i].error))
			fail_msg("case %zu: r=%d err=\"%s\", want \"%s\"", i, r, err, cases[i].error);
		assert_string_equal(g.server, "untouched");
	}
	char err[GNACONFIG_ERROR_MAX];
	struct gnaconfig g;
	_cleanup_free_ char *big = calloc(1, GNACONFIG_INPUT_MAX + 2);
	assert_non_null(big);
	memset(big, '#', GNACONFIG_INPUT_MAX + 1);
	assert_int_equal(gnaconfig_parse(big, GNACONFIG_INPUT_MAX + 1, &g, err, sizeof(err)), -EMSGSIZE);
}

static void durations(void **state)
{
	(void)state;
	uint64_t ms;
	assert_int_equal(gna_duration_parse("10m", &ms), 0);
	assert_int_equal(ms, 600000);
	assert_int_equal(gna_duration_parse("1h30m", &ms), 0);
	assert_int_equal(ms, 5400000);
	assert_int_equal(gna_duration_parse("1.5h", &ms), 0);
	assert_int_equal(ms, 5400000);
	assert_int_equal(gna_duration_parse("12h0m0s", &ms), 0);
	assert_int_equal(ms, 43200000);
	assert_int_equal(gna_duration_parse("300ms", &ms), 0);
	assert_int_equal(ms, 300);
	assert_int_equal(gna_duration_parse("2m5s", &ms), 0);
	assert_int_equal(ms, 125000);
	assert_int_equal(gna_duration_parse("", &ms), -EINVAL);
	assert_int_equal(gna_duration_parse("0s", &ms), -EINVAL);
	assert_int_equal(gna_duration_parse("-1s", &ms), -EINVAL);
	assert_int_equal(gna_duration_parse("10", &ms), -EINVAL);
	assert_int_equal(gna_duration_parse("5d", &ms), -EINVAL);
	assert_int_equal(gna_duration_parse("9000h", &ms), -ERANGE);
}

static void machine_names(void **state)
{
	(void)state;
	char err[GNACONFIG_ERROR_MAX];
	char *n = NULL;
	assert_int_equal(gna_machine_name_parse("shoot--p--s-worker-1-z1-abc12\nignored\n", 38, &n, err, sizeof(err)), 0);
	assert_string_equal(n, "shoot--p--s-worker-1-z1-abc12");
	free(n);
	assert_int_equal(gna_machine_name_parse("m1 \r\n", 5, &n, err, sizeof(err)), 0);
	assert_string_equal(n, "m1");
	free(n);
	assert_int_equal(gna_machine_name_parse("\n", 1, &n, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "empty");
	assert_int_equal(gna_machine_name_parse("a\x1b[31mb", 8, &n, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "control or non-ASCII character at byte 1"));
	assert_int_equal(gna_machine_name_parse("<<MACHINE_NAME>>", 16, &n, err, sizeof(err)), -EINVAL);
	char long_name[GNA_MACHINE_NAME_MAX + 1];
	memset(long_name, 'a', sizeof(long_name));
	assert_int_equal(gna_machine_name_parse(long_name, sizeof(long_name), &n, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "longer than 253 bytes");
	assert_int_equal(gna_machine_name_parse(long_name, GNA_MACHINE_NAME_MAX, &n, err, sizeof(err)), 0);
	free(n);
}

static void pick(void **state)
{
	(void)state;
	const char *a[] = { "config.yaml", "config-v1.100.0.yaml", "config-v1.149.3.yaml", "config-v1.99.9.yaml",
			    "cluster-ca.crt" };
	assert_int_equal(gna_config_pick(a, 5), 2);
	const char *b[] = { "config-v1.149.3-dev.yaml", "config-v1.149.3.yaml", "config-v1.149.2.yaml" };
	assert_int_equal(gna_config_pick(b, 3), 1);
	const char *c[] = { "machine-name", "config.yaml" };
	assert_int_equal(gna_config_pick(c, 2), 1);
	const char *d[] = { "config-.yaml", "config-x.yaml", "config-1.2.yaml.bak" };
	assert_int_equal(gna_config_pick(d, 3), -ENOENT);
	const char *e[] = { "config-v1.9.0.yaml", "config-v1.10.0.yaml" };
	assert_int_equal(gna_config_pick(e, 2), 1);
}

static void from_osc(void **state)
{
	(void)state;
	static const char yaml[] =
		"spec:\n  files:\n"
		"  - path: /var/lib/gardener-node-agent/config-v1.148.0.yaml\n"
		"    content: {inline: {data: \"apiVersion: nodeagent.config.gardener.cloud/v1alpha1\\nkind: "
		"NodeAgentConfiguration\\ncontrollers: {operatingSystemConfig: {kubernetesVersion: '1.33.1'}}\\n\"}}\n"
		"  - path: /var/lib/gardener-node-agent/config-v1.149.3.yaml\n"
		"    content: {inline: {encoding: b64, data: "
		"YXBpVmVyc2lvbjogbm9kZWFnZW50LmNvbmZpZy5nYXJkZW5lci5jbG91ZC92MWFscGhhMQpraW5kOiBOb2RlQWdlbnRDb25maWd1cmF0aW9uCmNvbnRyb2xsZXJzOgogIG9wZXJhdGluZ1N5c3RlbUNvbmZpZzoKICAgIGt1YmVybmV0ZXNWZXJzaW9uOiAxLjMzLjIK}}\n"
		"  - path: /var/lib/gardener-node-agent/sub/config-v9.yaml\n"
		"    content: {inline: {data: x}}\n"
		"  - path: /etc/config-v9.9.9.yaml\n"
		"    content: {inline: {data: x}}\n";
	struct osc o;
	struct osc_error oe;
	assert_int_equal(osc_parse(yaml, strlen(yaml), NULL, &o, &oe), 0);
	struct gnaconfig g;
	char err[GNACONFIG_ERROR_MAX];
	assert_int_equal(gnaconfig_from_osc(&o, &g, err, sizeof(err)), 0);
	assert_string_equal(g.kubernetes_version, "1.33.2");
	gnaconfig_done(&g);
	osc_done(&o);
	static const char none[] = "spec:\n  files:\n  - path: /etc/x\n    content: {inline: {data: x}}\n";
	assert_int_equal(osc_parse(none, strlen(none), NULL, &o, &oe), 0);
	assert_int_equal(gnaconfig_from_osc(&o, &g, err, sizeof(err)), -ENOENT);
	osc_done(&o);
}

static void kubeconfig(void **state)
{
	(void)state;
	static const char kc[] = "apiVersion: v1\nkind: Config\nusers:\n- name: other\n  user:\n    token: x\n"
				 "- name: node-agent\n  user:\n    client-certificate-data: Q0VSVA==\n"
				 "    client-key-data: S0VZ\n";
	char *cert = NULL, *key = NULL, err[GNACONFIG_ERROR_MAX];
	size_t cl = 0, kl = 0;
	assert_int_equal(gna_kubeconfig_client(kc, strlen(kc), &cert, &cl, &key, &kl, err, sizeof(err)), 0);
	assert_string_equal(cert, "CERT");
	assert_string_equal(key, "KEY");
	free(cert);
	free(key);
	static const char none[] = "users:\n- name: a\n  user: {token: x}\n";
	assert_int_equal(gna_kubeconfig_client(none, strlen(none), &cert, &cl, &key, &kl, err, sizeof(err)), -ENOENT);
	static const char bad[] = "users:\n- user: {client-certificate-data: '!', client-key-data: S0VZ}\n";
	assert_int_equal(gna_kubeconfig_client(bad, strlen(bad), &cert, &cl, &key, &kl, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "users[0].user.client-certificate-data: not base64");
	static const char wrong[] = "users: {a: 1}\n";
	assert_int_equal(gna_kubeconfig_client(wrong, strlen(wrong), &cert, &cl, &key, &kl, err, sizeof(err)), -EINVAL);
}

static void zones(void **state)
{
	(void)state;
	char *z = NULL;
	assert_int_equal(gna_zone_parse("eu-west-1a\n", 11, &z), 0);
	assert_string_equal(z, "eu-west-1a");
	free(z);
	assert_int_equal(gna_zone_parse("\n", 1, &z), -EINVAL);
	assert_int_equal(gna_zone_parse("-a", 2, &z), -EINVAL);
	assert_int_equal(gna_zone_parse("a b", 3, &z), -EINVAL);
	char long_zone[65];
	memset(long_zone, 'z', 64);
	long_zone[64] = '\0';
	assert_int_equal(gna_zone_parse(long_zone, 64, &z), -EINVAL);
	assert_true(gna_label_value_is_valid(""));
	assert_true(gna_label_value_is_valid("A.b_c-1"));
	assert_false(gna_label_value_is_valid("a/b"));
	/* A hostname as the kubernetes.io/hostname label value (the Node found
	 * by it, agent/nodefind.c): 63 at most; a 64-character hostname
	 * (HOST_NAME_MAX) is looked for by name only. */
	long_zone[63] = '\0';
	assert_true(gna_label_value_is_valid(long_zone));
	long_zone[63] = 'z';
	assert_false(gna_label_value_is_valid(long_zone));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_stock),  cmocka_unit_test(parse_v192_and_json),
		cmocka_unit_test(bad_inputs),   cmocka_unit_test(durations),
		cmocka_unit_test(machine_names), cmocka_unit_test(pick),
		cmocka_unit_test(from_osc),     cmocka_unit_test(kubeconfig),
		cmocka_unit_test(zones),        cmocka_unit_test(data_volume_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
