/* Unit tests for lib/node/config.c: defaults, every field parsed, strict errors
 * (unknown keys, wrong types, duplicates, ranges) and the file checks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"

static void defaults(void **state)
{
	struct config c;
	assert_int_equal(config_defaults(&c), 0);
	assert_null(c.server);
	assert_string_equal(c.secret_namespace, "kube-system");
	assert_true(c.follow_secret_name_label);
	assert_true(c.lease_enabled);
	assert_string_equal(c.server_bind_address, "127.0.0.1");
	assert_int_equal(c.server_health_port, 2751);
	assert_int_equal(c.server_metrics_port, 2752);
	assert_string_equal(c.login_user, "gardener");
	assert_false(c.keys_exclusive);
	assert_true(c.create_user);
	assert_string_equal(c.sudoers, "ALL=(ALL) NOPASSWD:ALL");
	assert_int_equal(c.rsa_min_bits, 2048);
	assert_false(c.keys_from_node_annotation);
	assert_string_equal(c.key_document_path, "/var/lib/node-agent/authorized-keys.json");
	assert_true(c.max_key_shrink == 0.5);
	assert_false(c.allow_root);
	assert_string_equal(c.state_dir, "/var/lib/node-agent");
	assert_string_equal(c.exec_state_dir, "/var/lib/cloud-config-exec");
	assert_string_equal(c.snapshot_path, "/var/lib/cloud-config-exec/authkeys.snap");
	assert_int_equal(c.connect_timeout_ms, 10000);
	assert_int_equal(c.request_timeout_ms, 30000);
	assert_int_equal(c.watch_idle_timeout_ms, 720000); /* above a stream's timeoutSeconds (660) */
	assert_int_equal(c.resync_interval_ms, 36000000);
	assert_int_equal(c.apply_timeout_ms, 300000);
	assert_int_equal(c.response_max, 16u << 20);
	assert_non_null(c.node_name); /* the host name, lowercased */
	for (const char *p = c.node_name; *p; p++)
		assert_false(*p >= 'A' && *p <= 'Z');
	config_done(&c);

	/* An empty object gives the same defaults. */
	char err[256];
	assert_int_equal(config_parse("{}", 2, &c, err, sizeof(err)), 0);
	assert_string_equal(c.state_dir, "/var/lib/node-agent");
	config_done(&c);
}

static const char full[] =
	"{\"apiServer\": {\"server\": \"https://api.example.com:6443\", \"caFile\": \"/etc/na/ca.crt\",\n"
	"  \"tokenFile\": \"/var/lib/na/token\", \"clientCertificateFile\": \"/etc/na/c.crt\",\n"
	"  \"clientKeyFile\": \"/etc/na/c.key\", \"bootstrapTokenFile\": \"/etc/na/bt\",\n"
	"  \"httpsProxy\": \"http://proxy:3128\", \"noProxy\": \"10.0.0.0/8\"},\n"
	" \"node\": {\"name\": \"worker-1\", \"kubernetesVersion\": \"1.31.1\"},\n"
	" \"osc\": {\"secretNamespace\": \"kube-system\", \"secretName\": \"osc-secret\",\n"
	"  \"followSecretNameLabel\": false},\n"
	" \"ssh\": {\"loginUser\": \"ops\", \"exclusive\": true, \"createUser\": false, \"sudoers\": \"\",\n"
	"  \"rsaMinBits\": 3072, \"keysFromNodeAnnotation\": true, \"keyDocumentPath\": \"/var/lib/k.json\",\n"
	"  \"maxKeyShrink\": 0.25, \"allowRoot\": true},\n"
	" \"gardener\": {\"nodeAgentDir\": \"/var/lib/gardener-node-agent\"},\n"
	" \"paths\": {\"stateDir\": \"/run/na\", \"execStateDir\": \"/run/cce\", \"snapshot\": \"/run/cce/s\"},\n"
	" \"timeouts\": {\"connectMs\": 1000, \"requestMs\": 2000, \"watchIdleMs\": 3000, \"resyncMs\": 4000,\n"
	"  \"applyMs\": 5000},\n"
	" \"limits\": {\"responseMaxBytes\": 65536}}\n";

static void every_field(void **state)
{
	struct config c;
	char err[256];
	assert_int_equal(config_parse(full, strlen(full), &c, err, sizeof(err)), 0);
	assert_string_equal(c.server, "https://api.example.com:6443");
	assert_string_equal(c.ca_file, "/etc/na/ca.crt");
	assert_string_equal(c.token_file, "/var/lib/na/token");
	assert_string_equal(c.client_cert_file, "/etc/na/c.crt");
	assert_string_equal(c.client_key_file, "/etc/na/c.key");
	assert_string_equal(c.bootstrap_token_file, "/etc/na/bt");
	assert_string_equal(c.https_proxy, "http://proxy:3128");
	assert_string_equal(c.no_proxy, "10.0.0.0/8");
	assert_string_equal(c.node_name, "worker-1");
	assert_string_equal(c.kubernetes_version, "1.31.1");
	assert_string_equal(c.secret_name, "osc-secret");
	assert_false(c.follow_secret_name_label);
	assert_string_equal(c.login_user, "ops");
	assert_true(c.keys_exclusive);
	assert_false(c.create_user);
	assert_string_equal(c.sudoers, "");
	assert_int_equal(c.rsa_min_bits, 3072);
	assert_true(c.keys_from_node_annotation);
	assert_string_equal(c.key_document_path, "/var/lib/k.json");
	assert_true(c.max_key_shrink == 0.25);
	assert_true(c.allow_root);
	assert_string_equal(c.gna_dir, "/var/lib/gardener-node-agent");
	assert_string_equal(c.state_dir, "/run/na");
	assert_string_equal(c.exec_state_dir, "/run/cce");
	assert_string_equal(c.snapshot_path, "/run/cce/s");
	assert_int_equal(c.connect_timeout_ms, 1000);
	assert_int_equal(c.request_timeout_ms, 2000);
	assert_int_equal(c.watch_idle_timeout_ms, 3000);
	assert_int_equal(c.resync_interval_ms, 4000);
	assert_int_equal(c.apply_timeout_ms, 5000);
	assert_int_equal(c.response_max, 65536);
	config_done(&c);
}

static const struct {
	const char *json;
	const char *err;
} bad[] = {
	{ "", "malformed JSON near byte 0" },
	{ "[]", "expected a JSON object at the top level" },
	{ "{} x", "trailing data after the JSON document at byte 3" },
	{ "{\"apiserver\": {}}", "apiserver: unknown key" },
	{ "{\"apiServer\": []}", "apiServer: expected an object" },
	{ "{\"apiServer\": {\"caFile\": 1}}", "apiServer.caFile: expected a string" },
	{ "{\"apiServer\": {\"cafile\": \"/x\"}}", "apiServer.cafile: unknown key" },
	{ "{\"apiServer\": {\"caFile\": \"ca.crt\"}}", "apiServer.caFile: not an absolute normalised path: \"ca.crt\"" },
	{ "{\"apiServer\": {\"caFile\": \"/a/../b\"}}", "apiServer.caFile: not an absolute normalised path: \"/a/../b\"" },
	{ "{\"apiServer\": {\"server\": \"http://x\"}}", "apiServer.server: expected an https:// URL: \"http://x\"" },
	{ "{\"apiServer\": {\"server\": \"https://u@x\"}}", "apiServer.server: expected an https:// URL: \"https://u@x\"" },
	{ "{\"apiServer\": {\"server\": \"https://\"}}", "apiServer.server: expected an https:// URL: \"https://\"" },
	{ "{\"apiServer\": {\"server\": \"https://a\\nb\"}}", "apiServer.server: control character in value" },
	{ "{\"apiServer\": {\"clientCertificateFile\": \"/c\"}}",
	  "apiServer.clientKeyFile: required together with apiServer.clientCertificateFile" },
	{ "{\"apiServer\": {\"httpsProxy\": \"socks5://p\"}}",
	  "apiServer.httpsProxy: expected an http:// or https:// URL: \"socks5://p\"" },
	{ "{\"osc\": {\"followSecretNameLabel\": \"yes\"}}", "osc.followSecretNameLabel: expected true or false" },
	{ "{\"osc\": {\"secretName\": \"\"}}", "osc.secretName: must not be empty" },
	{ "{\"osc\": {\"secretName\": \"a\", \"secretName\": \"b\"}}", "osc.secretName: given more than once" },
	{ "{\"osc\": {}, \"osc\": {}}", "osc: given more than once" },
	{ "{\"ssh\": {\"rsaMinBits\": 512}}", "ssh.rsaMinBits: expected an integer from 1024 to 16384" },
	{ "{\"ssh\": {\"rsaMinBits\": \"2048\"}}", "ssh.rsaMinBits: expected a number" },
	{ "{\"ssh\": {\"maxKeyShrink\": 1.5}}", "ssh.maxKeyShrink: expected a number from 0 to 1" },
	{ "{\"timeouts\": {\"connectMs\": 0}}", "timeouts.connectMs: expected an integer from 1 to 86400000" },
	{ "{\"timeouts\": {\"connectMs\": 1.5}}", "timeouts.connectMs: expected an integer from 1 to 86400000" },
	{ "{\"timeouts\": {\"connectMs\": -1}}", "timeouts.connectMs: expected an integer from 1 to 86400000" },
	{ "{\"timeouts\": {\"connectMs\": 1e300}}", "timeouts.connectMs: expected an integer from 1 to 86400000" },
	{ "{\"limits\": {\"responseMaxBytes\": 100}}",
	  "limits.responseMaxBytes: expected an integer from 4096 to 1073741824" },
	{ "{\"paths\": {\"stateDir\": \"/var/lib/na/\"}}", "paths.stateDir: not an absolute normalised path: \"/var/lib/na/\"" },
	{ "{\"node\": {\"name\": true}}", "node.name: expected a string" },
	{ "{\"server\": {\"healthPort\": 65536}}", "server.healthPort: expected an integer from 0 (off) to 65535" },
	{ "{\"server\": {\"bindAddress\": \"::1x\"}}", "server.bindAddress: expected an IPv4 or IPv6 address: \"::1x\"" },
	{ "{\"server\": {\"bindAddress\": \"[::1\"}}", "server.bindAddress: expected an IPv4 or IPv6 address: \"[::1\"" },
	{ "{\"server\": {\"bindAddress\": \"localhost\"}}", "server.bindAddress: expected an IPv4 or IPv6 address: \"localhost\"" },
	{ "{\"lease\": {\"enabled\": 1}}", "lease.enabled: expected true or false" },
};

static void bad_inputs(void **state)
{
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		char untouched[] = "untouched";
		struct config c = { .server = untouched };
		char err[256] = "";
		int r = config_parse(bad[i].json, strlen(bad[i].json), &c, err, sizeof(err));
		if (r != -EINVAL || strcmp(err, bad[i].err) != 0)
			fail_msg("input %zu '%s': r=%d err='%s', want '%s'", i, bad[i].json, r, err, bad[i].err);
		assert_string_equal(c.server, "untouched"); /* output untouched on failure */
	}
}

static void null_means_default(void **state)
{
	struct config c;
	char err[256];
	const char *j = "{\"osc\": {\"secretNamespace\": null}, \"timeouts\": {\"resyncMs\": null}}";
	assert_int_equal(config_parse(j, strlen(j), &c, err, sizeof(err)), 0);
	assert_string_equal(c.secret_namespace, "kube-system");
	assert_int_equal(c.resync_interval_ms, 36000000);
	config_done(&c);
}

static void too_large(void **state)
{
	size_t n = CONFIG_MAX + 1;
	_cleanup_free_ char *big = malloc(n);
	assert_non_null(big);
	memset(big, ' ', n);
	big[0] = '{';
	big[n - 1] = '}';
	struct config c;
	char err[256];
	assert_int_equal(config_parse(big, n, &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "larger than 262144 bytes");
}

static void load_file(void **state)
{
	char dir[] = "/tmp/na-test-config.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/config.json", dir);
	struct config c;
	char err[512];

	/* Missing file. */
	assert_int_equal(config_load(path, &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, path));

	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	const char *j = "{\"apiServer\": {\"caFile\": 7}}";
	assert_int_equal(write(fd, j, strlen(j)), (ssize_t)strlen(j));
	close(fd);
	assert_int_equal(config_load(path, &c, err, sizeof(err)), -EINVAL);
	char want[256];
	snprintf(want, sizeof(want), "%s: apiServer.caFile: expected a string", path);
	assert_string_equal(err, want);

	/* World-writable: refused whatever it says. */
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_int_equal(write(fd, "{}", 2), 2);
	close(fd);
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(config_load(path, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "world-writable"));
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(config_load(path, &c, err, sizeof(err)), 0);
	config_done(&c);

	/* A directory is not a config file. */
	assert_int_equal(config_load(dir, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a regular file"));

	unlink(path);
	rmdir(dir);
}

/* IPv6 listen addresses, bare or in brackets (agent/httpd.c binds both). */
static void ipv6_bind_address(void **state)
{
	(void)state;
	static const char *const ok[] = { "::1", "[::1]", "::", "0.0.0.0", "fd00::2" };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct config c;
		char err[256], json[128];
		snprintf(json, sizeof(json), "{\"server\": {\"bindAddress\": \"%s\"}}", ok[i]);
		assert_int_equal(config_parse(json, strlen(json), &c, err, sizeof(err)), 0);
		assert_string_equal(c.server_bind_address, ok[i]);
		config_done(&c);
	}
}

struct seen {
	unsigned n, in_file;
	char token[64], proxy[128], ns[32], port[8];
};

static void collect(const char *name, const char *value, bool in_file, void *userdata)
{
	struct seen *s = userdata;
	s->n++;
	s->in_file += in_file;
	if (strcmp(name, "apiServer.tokenFile") == 0)
		snprintf(s->token, sizeof(s->token), "%s %d", value ? value : "(null)", in_file);
	if (strcmp(name, "apiServer.httpsProxy") == 0)
		snprintf(s->proxy, sizeof(s->proxy), "%s", value ? value : "(null)");
	if (strcmp(name, "osc.secretNamespace") == 0)
		snprintf(s->ns, sizeof(s->ns), "%s %d", value, in_file);
	if (strcmp(name, "server.healthPort") == 0)
		snprintf(s->port, sizeof(s->port), "%s", value);
}

/* --check-config's table: every setting, whether the file sets it (a JSON
 * null does not), the proxy's password hidden. */
static void each_setting(void **state)
{
	(void)state;
	static const char json[] = "{\"apiServer\": {\"tokenFile\": \"/t\", \"httpsProxy\": "
				   "\"http://u:secret@proxy:3128\"}, \"osc\": {\"secretNamespace\": null}, "
				   "\"server\": {\"healthPort\": 0}}";
	struct config c;
	char err[256];
	assert_int_equal(config_parse(json, strlen(json), &c, err, sizeof(err)), 0);
	struct seen s = {};
	assert_int_equal(config_each(&c, json, strlen(json), collect, &s), 0);
	assert_true(s.n >= 49);
	assert_int_equal(s.in_file, 3);
	assert_string_equal(s.token, "/t 1");
	assert_string_equal(s.proxy, "http://***@proxy:3128");
	assert_string_equal(s.ns, "kube-system 0");
	assert_string_equal(s.port, "0");
	/* Without a file: nothing from it. */
	s = (struct seen){};
	assert_int_equal(config_each(&c, NULL, 0, collect, &s), 0);
	assert_int_equal(s.in_file, 0);
	assert_int_equal(config_each(&c, "{", 1, collect, &s), -EINVAL);
	config_done(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(every_field),
		cmocka_unit_test(bad_inputs),
		cmocka_unit_test(null_means_default),
		cmocka_unit_test(too_large),
		cmocka_unit_test(load_file),
		cmocka_unit_test(ipv6_bind_address),
		cmocka_unit_test(each_setting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
