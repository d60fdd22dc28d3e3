/* Unit tests for agent/stock.c: stock user data read from the directory and
 * from systemd's flattened credentials, explicit settings win, bad files are
 * refused with the path, a missing directory is fine. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "scratch.h"
#include "../../agent/settings.h"
#include "../../agent/stock.h"

static const char cfg_yaml[] = "apiVersion: nodeagent.config.gardener.cloud/v1alpha1\n"
			       "kind: NodeAgentConfiguration\n"
			       "apiServer:\n"
			       "  server: https://api.example.com\n"
			       "  caFile: /var/lib/gardener-node-agent/cluster-ca.crt\n"
			       "controllers:\n"
			       "  operatingSystemConfig:\n"
			       "    secretName: gardener-node-agent-worker-1-abc\n"
			       "    kubernetesVersion: 1.33.2\n";

static void put(const struct scratch *s, const char *rel, const char *data)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", s->path, rel);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(data, f);
	assert_int_equal(fclose(f), 0);
}

static char *sub(const struct scratch *s, const char *rel)
{
	char *p = NULL;
	assert_true(asprintf(&p, "%s/%s", s->path, rel) > 0);
	return p;
}

static void from_directory(void **state)
{
	struct scratch *s = *state;
	assert_int_equal(mkdirat(s->fd, "credentials", 0700), 0);
	put(s, "config-v1.149.3.yaml", cfg_yaml);
	put(s, "config-v1.99.0.yaml", "not: [yaml");   /* older: never read */
	put(s, "cluster-ca.crt", "CA");
	put(s, "credentials/bootstrap-token", "abcdef.0123456789abcdef");
	put(s, "machine-name", "machine-1\n");

	struct config c;
	assert_int_equal(config_defaults(&c), 0);
	c.kubernetes_version = strdup("1.30.0"); /* explicit: wins */
	struct stock st;
	char err[512];
	assert_int_equal(stock_load(s->path, NULL, &st, err, sizeof(err)), 0);
	assert_int_equal(stock_merge(&st, &c), 0);
	assert_string_equal(c.server, "https://api.example.com");
	char *ca = sub(s, "cluster-ca.crt"), *tok = sub(s, "credentials/bootstrap-token"),
	     *cfg = sub(s, "config-v1.149.3.yaml");
	assert_string_equal(c.ca_file, ca);
	assert_string_equal(c.bootstrap_token_file, tok);
	assert_string_equal(c.secret_name, "gardener-node-agent-worker-1-abc");
	assert_string_equal(c.kubernetes_version, "1.30.0");
	assert_null(st.from_version);
	assert_string_equal(st.from_server, cfg);
	assert_string_equal(st.machine_name, "machine-1");
	free(ca);
	free(tok);
	free(cfg);
	stock_done(&st);
	config_done(&c);
}

/* LoadCredential=gardener-node-agent:/var/lib/gardener-node-agent flattens
 * the tree into gardener-node-agent_<rel with / as _>. */
static void from_credentials(void **state)
{
	struct scratch *s = *state;
	put(s, "gardener-node-agent_config-v1.149.3.yaml", cfg_yaml);
	put(s, "gardener-node-agent_cluster-ca.crt", "CA");
	put(s, "gardener-node-agent_credentials_bootstrap-token", "abcdef.0123456789abcdef");
	put(s, "gardener-node-agent", ""); /* the empty SetCredential= fallback */

	struct config c;
	assert_int_equal(config_defaults(&c), 0);
	struct stock st;
	char err[512];
	assert_int_equal(stock_load("/var/lib/gardener-node-agent", s->path, &st, err, sizeof(err)), 0);
	assert_int_equal(stock_merge(&st, &c), 0);
	char *ca = sub(s, "gardener-node-agent_cluster-ca.crt");
	char *tok = sub(s, "gardener-node-agent_credentials_bootstrap-token");
	assert_string_equal(c.ca_file, ca);
	assert_string_equal(c.bootstrap_token_file, tok);
	assert_string_equal(c.kubernetes_version, "1.33.2");
	assert_null(st.machine_name);
	free(ca);
	free(tok);
	stock_done(&st);
	config_done(&c);
}

static void refusals(void **state)
{
	struct scratch *s = *state;
	struct stock st;
	char err[512];
	put(s, "config.yaml", "apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: NodeAgentConfiguration\n"
			      "apiServer:\n  server: 5\n");
	assert_int_equal(stock_load(s->path, NULL, &st, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "/config.yaml: apiServer.server: expected a string, got an integer '5'"));
	put(s, "config.yaml", "apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: NodeAgentConfiguration\n");
	char big[300];
	memset(big, 'm', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	put(s, "machine-name", big);
	assert_int_equal(stock_load(s->path, NULL, &st, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "/machine-name: machine name refused: longer than 253 bytes"));
	put(s, "machine-name", "ok\n");
	assert_int_equal(stock_load(s->path, NULL, &st, err, sizeof(err)), 0);
	assert_false(st.have_config && st.gna.server);
	stock_done(&st);

	/* Not a Gardener node: nothing, no error. */
	char *none = sub(s, "missing");
	assert_int_equal(stock_load(none, NULL, &st, err, sizeof(err)), 0);
	assert_false(st.have_config);
	assert_null(st.ca_path);
	stock_done(&st);
	free(none);
}

/* No node-agent.conf on a Gardener node: the stock data configures the
 * agent alone; without it a missing file stays an error. */
static void without_config_file(void **state)
{
	struct scratch *s = *state;
	char *missing = sub(s, "no-such-config.json");
	struct config c;
	struct stock st;
	char err[1024];
	assert_int_equal(setenv("CREDENTIALS_DIRECTORY", s->path, 1), 0);
	put(s, "gardener-node-agent", "none"); /* the SetCredential= fallback alone: not a Gardener node */
	assert_int_equal(settings_load(missing, false, &c, &st, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no-such-config.json: No such file or directory"));

	put(s, "gardener-node-agent_config-v1.149.3.yaml", cfg_yaml);
	put(s, "gardener-node-agent_cluster-ca.crt", "CA");
	put(s, "gardener-node-agent_machine-name", "machine-7\n");
	assert_int_equal(settings_load(missing, false, &c, &st, err, sizeof(err)), 0);
	assert_true(st.defaulted);
	assert_string_equal(c.gna_dir, "/var/lib/gardener-node-agent");
	assert_string_equal(c.server, "https://api.example.com");
	assert_string_equal(c.secret_name, "gardener-node-agent-worker-1-abc");
	assert_string_equal(c.machine_name, "machine-7");
	assert_string_equal(c.secret_namespace, "kube-system"); /* a default */
	char *out = NULL;
	size_t out_len = 0;
	FILE *f = open_memstream(&out, &out_len);
	assert_non_null(f);
	stock_print(&st, &c, f);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(out, "(no node-agent.conf: gardener.nodeAgentDir by default)"));
	assert_non_null(strstr(out, "https://api.example.com"));
	assert_non_null(strstr(out, "config-v1.149.3.yaml\n"));
	free(out);
	stock_done(&st);
	config_done(&c);

	/* A malformed stock config is that file's error, named. */
	put(s, "gardener-node-agent_config-v1.150.0.yaml", "apiVersion: nodeagent.config.gardener.cloud/v1alpha1\n"
							  "kind: NodeAgentConfiguration\napiServer:\n  server: [1]\n");
	assert_int_equal(settings_load(missing, false, &c, &st, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "(absent; stock user data in /var/lib/gardener-node-agent): gardener.nodeAgentDir: "));
	assert_non_null(strstr(err, "config-v1.150.0.yaml: apiServer.server"));

	/* An existing file is the configuration: stock data only if it names it. */
	char *file = sub(s, "config.json");
	FILE *cf = fopen(file, "w");
	assert_non_null(cf);
	fputs("{\"apiServer\": {\"server\": \"https://explicit.example.com\", \"caFile\": \"/etc/ca.crt\", "
	      "\"tokenFile\": \"/etc/token\"}, \"osc\": {\"secretName\": \"s1\"}}",
	      cf);
	assert_int_equal(fclose(cf), 0);
	assert_int_equal(settings_load(file, false, &c, &st, err, sizeof(err)), 0);
	assert_null(c.gna_dir);
	assert_false(st.defaulted);
	assert_string_equal(c.server, "https://explicit.example.com");
	stock_done(&st);
	config_done(&c);
	unsetenv("CREDENTIALS_DIRECTORY");
	free(file);
	free(missing);
}

static void parse_gna(const char *yaml, struct gnaconfig *g)
{
	char why[GNACONFIG_ERROR_MAX];
	assert_int_equal(gnaconfig_parse(yaml, strlen(yaml), g, why, sizeof(why)), 0);
}

/* A newer config-<version>.yaml through the OSC: what stock data provided
 * follows it, explicit settings stay, a second time changes nothing. */
static void follow_osc(void **state)
{
	struct scratch *s = *state;
	assert_int_equal(mkdirat(s->fd, "gna", 0700), 0);
	assert_int_equal(mkdirat(s->fd, "state", 0700), 0);
	put(s, "gna/config-v1.149.3.yaml", cfg_yaml);
	put(s, "gna/cluster-ca.crt", "CA1\n");
	char *dir = sub(s, "gna"), *state_path = sub(s, "state");
	int state_fd = openat(s->fd, "state", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(state_fd >= 0);

	struct config c;
	assert_int_equal(config_defaults(&c), 0);
	struct stock st;
	char err[512], what[1024];
	assert_int_equal(stock_load(dir, NULL, &st, err, sizeof(err)), 0);
	assert_int_equal(stock_merge(&st, &c), 0);

	/* The same settings (the caFile maps to the stock copy): nothing. */
	struct gnaconfig g = {};
	parse_gna(cfg_yaml, &g);
	assert_int_equal(stock_follow(&st, &c, &g, state_fd, state_path, what, sizeof(what)), 0);
	assert_string_equal(what, "");
	gnaconfig_done(&g);

	/* New server, Secret and CA bundle ("CA2\n" is Q0EyCg==). */
	parse_gna("apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: NodeAgentConfiguration\n"
		  "apiServer:\n  server: https://api2.example.com\n  caBundle: Q0EyCg==\n"
		  "controllers:\n  operatingSystemConfig:\n    secretName: gardener-node-agent-worker-1-def\n",
		  &g);
	assert_int_equal(stock_follow(&st, &c, &g, state_fd, state_path, what, sizeof(what)),
			 STOCK_NEW_CONNECTION | STOCK_NEW_SECRET);
	assert_non_null(strstr(what, "apiServer.server \"https://api.example.com\" -> \"https://api2.example.com\""));
	assert_non_null(strstr(what, "osc.secretName \"gardener-node-agent-worker-1-abc\" -> "
				     "\"gardener-node-agent-worker-1-def\""));
	assert_string_equal(c.server, "https://api2.example.com");
	assert_string_equal(c.secret_name, "gardener-node-agent-worker-1-def");
	char *ca = sub(s, "state/" STOCK_OSC_CA_FILE);
	assert_string_equal(c.ca_file, ca);
	char buf[16] = "";
	FILE *f = fopen(ca, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "CA2\n");
	/* Once followed, the same configuration again changes nothing. */
	assert_int_equal(stock_follow(&st, &c, &g, state_fd, state_path, what, sizeof(what)), 0);
	gnaconfig_done(&g);

	/* An explicit server stays whatever the OSC says. */
	free(c.server);
	c.server = strdup("https://explicit.example.com");
	st.from_server = NULL;
	parse_gna("apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: NodeAgentConfiguration\n"
		  "apiServer:\n  server: https://api3.example.com\n",
		  &g);
	assert_int_equal(stock_follow(&st, &c, &g, state_fd, state_path, what, sizeof(what)), 0);
	assert_string_equal(c.server, "https://explicit.example.com");
	gnaconfig_done(&g);

	/* The CA cannot be written: an error naming the file, nothing changed. */
	parse_gna("apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: NodeAgentConfiguration\n"
		  "apiServer:\n  caBundle: Q0EzCg==\n"
		  "controllers:\n  operatingSystemConfig:\n    secretName: other\n",
		  &g);
	assert_true(stock_follow(&st, &c, &g, -EBADF, "/nonexistent", what, sizeof(what)) < 0);
	assert_non_null(strstr(what, "cannot write /nonexistent/" STOCK_OSC_CA_FILE));
	assert_string_equal(c.secret_name, "gardener-node-agent-worker-1-def");
	gnaconfig_done(&g);

	close(state_fd);
	free(ca);
	free(dir);
	free(state_path);
	stock_done(&st);
	config_done(&c);
}

static int setup(void **state)
{
	return scratch_setup(state, "stock");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(from_directory, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(from_credentials, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(refusals, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(without_config_file, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(follow_osc, setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
