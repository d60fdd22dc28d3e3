/* Unit tests for agent/settings.c: what the daemon needs beyond a valid
 * configuration file (server, CA, Secret and Node names that are valid
 * Kubernetes names, a credential), and with check_files, readable
 * credential and CA files (the token file may be missing while a bootstrap
 * token covers first contact). Error texts name the file and the key. */
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
#include "fsx.h"
#include "scratch.h"
#include "../../agent/settings.h"

/* Writes conf.json into the scratch directory; returns its path. */
static const char *conf(struct scratch *s, const char *json, char path[static 128])
{
	assert_true(fsx_write_atomic_at(s->fd, "conf.json", json, strlen(json), 0600, FSX_UID_KEEP, FSX_GID_KEEP,
					0) >= 0);
	snprintf(path, 128, "%s/conf.json", s->path);
	return path;
}

#define SERVER "\"server\": \"https://api.example.com\""
#define CA "\"caFile\": \"/nonexistent/ca.crt\""
#define NAMES "\"node\": {\"name\": \"worker-1\"}, \"osc\": {\"secretName\": \"osc-secret\"}"
/* Node names at the limits (../shared/notes/gardener-names.md): a label
 * (63), a DNS subdomain (253) of four labels, its first 64 bytes. */
#define L63 "ip-10-250-17-203-eu-central-1-compute-internal-0123456789abcdef"
#define N253 L63 "." L63 "." L63 "." "ip-10-250-17-203-eu-central-1-compute-internal-0123456789abcd"
#define N64 L63 "."

static void requirements(void **state)
{
	struct scratch *s = *state;
	static const struct {
		const char *json;
		const char *err; /* after "<path>: "; NULL: loads */
	} cases[] = {
		{ "{\"apiServer\": {" SERVER ", " CA ", \"tokenFile\": \"/t\"}, " NAMES "}", NULL },
		{ "{\"apiServer\": {" CA ", \"tokenFile\": \"/t\"}, " NAMES "}", "apiServer.server: required" },
		{ "{\"apiServer\": {" SERVER ", \"tokenFile\": \"/t\"}, " NAMES "}", "apiServer.caFile: required" },
		{ "{\"apiServer\": {" SERVER ", " CA ", \"tokenFile\": \"/t\"}, \"node\": {\"name\": \"worker-1\"}}",
		  "osc.secretName: required" },
		{ "{\"apiServer\": {" SERVER ", " CA ", \"tokenFile\": \"/t\"}, \"node\": {\"name\": \"Worker_1\"}, "
		  "\"osc\": {\"secretName\": \"s\"}}",
		  "node.name: \"Worker_1\" (8 characters) is not a valid Kubernetes name (lowercase letters, digits, '-' "
		  "and '.', alphanumeric at both ends, at most 253 characters)" },
		/* The longest Node name the API allows and one more (issue 34). */
		{ "{\"apiServer\": {" SERVER ", " CA ", \"tokenFile\": \"/t\"}, \"node\": {\"name\": \"" N253 "x\"}, "
		  "\"osc\": {\"secretName\": \"s\"}}",
		  "node.name: \"" N64 "\"... (254 characters) is not a valid Kubernetes name (lowercase letters, digits, "
		  "'-' and '.', alphanumeric at both ends, at most 253 characters)" },
		{ "{\"apiServer\": {" SERVER ", " CA ", \"tokenFile\": \"/t\"}, \"node\": {\"name\": \"w\"}, "
		  "\"osc\": {\"secretName\": \"s\", \"secretNamespace\": \"Kube\"}}",
		  "osc.secretNamespace: \"Kube\" (4 characters) is not a valid Kubernetes name (lowercase letters, "
		  "digits, '-' and '.', alphanumeric at both ends, at most 253 characters)" },
		{ "{\"apiServer\": {" SERVER ", " CA "}, " NAMES "}",
		  "apiServer: no credential (tokenFile, clientCertificateFile + clientKeyFile, bootstrapTokenFile)" },
	};
	char path[128], err[1024], want[1200];
	unsetenv("CREDENTIALS_DIRECTORY");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config c;
		struct stock st;
		err[0] = '\0';
		int r = settings_load(conf(s, cases[i].json, path), false, &c, &st, err, sizeof(err));
		if (!cases[i].err) {
			assert_int_equal(r, 0);
			assert_string_equal(c.node_name, "worker-1");
			assert_false(st.defaulted);
			stock_done(&st);
			config_done(&c);
			continue;
		}
		snprintf(want, sizeof(want), "%s: %s", path, cases[i].err);
		assert_int_equal(r, -EINVAL);
		assert_string_equal(err, want);
	}
}

static void files(void **state)
{
	struct scratch *s = *state;
	char path[128], json[1024], err[1024], want[1200];
	struct config c;
	/* The CA is missing. */
	snprintf(json, sizeof(json), "{\"apiServer\": {" SERVER ", \"caFile\": \"%s/ca.crt\", \"tokenFile\": \"%s/t\"}, "
		 NAMES "}", s->path, s->path);
	conf(s, json, path);
	assert_int_equal(settings_load(path, false, &c, NULL, err, sizeof(err)), 0);
	config_done(&c);
	assert_int_equal(settings_load(path, true, &c, NULL, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: apiServer.caFile \"%s/ca.crt\": No such file or directory", path, s->path);
	assert_string_equal(err, want);
	/* The CA is there, the token is not. */
	assert_true(fsx_write_atomic_at(s->fd, "ca.crt", "CA", 2, 0644, FSX_UID_KEEP, FSX_GID_KEEP, 0) >= 0);
	assert_int_equal(settings_load(path, true, &c, NULL, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: apiServer.tokenFile \"%s/t\": No such file or directory", path, s->path);
	assert_string_equal(err, want);
	/* A bootstrap token covers first contact: the token file may come later. */
	snprintf(json, sizeof(json), "{\"apiServer\": {" SERVER ", \"caFile\": \"%s/ca.crt\", \"tokenFile\": \"%s/t\", "
		 "\"bootstrapTokenFile\": \"%s/ca.crt\"}, " NAMES "}", s->path, s->path, s->path);
	conf(s, json, path);
	assert_int_equal(settings_load(path, true, &c, NULL, err, sizeof(err)), 0);
	config_done(&c);
}

/* No configuration at all: one reason naming the file, the stock user data
 * and the example (the unit's ExecCondition= and the exit code 78 at start
 * use it); either the file or the stock config-<version>.yaml is enough. */
static void present(void **state)
{
	struct scratch *s = *state;
	char path[160], gna[160], why[1024], want[1200];
	assert_int_equal(mkdirat(s->fd, "gna", 0700), 0);
	snprintf(path, sizeof(path), "%s/conf.json", s->path);
	snprintf(gna, sizeof(gna), "%s/gna", s->path);
	why[0] = '\0';
	assert_false(settings_present(path, gna, NULL, why, sizeof(why)));
	snprintf(want, sizeof(want),
		 "no configuration: neither %s nor Gardener's stock user data (%s/config-<version>.yaml) exists; "
		 "write one (example: /etc/node-agent/config.json.example); node-agent.path starts the agent when "
		 "one appears",
		 path, gna);
	assert_string_equal(why, want);
	/* A missing stock directory is the same. */
	assert_false(settings_present(path, "/nonexistent/gna", NULL, why, sizeof(why)));
	/* Something else in the stock directory is not its configuration. */
	int gfd = openat(s->fd, "gna", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(gfd >= 0);
	assert_true(fsx_write_atomic_at(gfd, "token", "t", 1, 0600, FSX_UID_KEEP, FSX_GID_KEEP, 0) >= 0);
	assert_false(settings_present(path, gna, NULL, why, sizeof(why)));
	assert_true(fsx_write_atomic_at(gfd, "config-v1.31.yaml", "x", 1, 0600, FSX_UID_KEEP, FSX_GID_KEEP, 0) >= 0);
	close(gfd);
	assert_true(settings_present(path, gna, NULL, why, sizeof(why)));
	/* ExecCondition= runs before systemd writes the credentials copy:
	 * CREDENTIALS_DIRECTORY names a directory that is not there yet. */
	assert_true(settings_present(path, gna, "/nonexistent/creds", why, sizeof(why)));
	assert_true(settings_present(path, "/nonexistent/gna", NULL, why, sizeof(why)) == false);
	conf(s, "{}", path);
	assert_true(settings_present(path, "/nonexistent/gna", NULL, why, sizeof(why)));
}

static int setup(void **state)
{
	return scratch_setup(state, "settings");
}

/* The Node name loads at each length the API allows: the shortest, a
 * label's 63, one more, a subdomain's 253 (254: the table above). */
static void node_name_limits(void **state)
{
	struct scratch *s = *state;
	static const char *const names[] = { "a", L63, L63 "x", N253 };
	char path[128], err[1024], json[1024];
	unsetenv("CREDENTIALS_DIRECTORY");
	assert_int_equal(strlen(N253), 253);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct config c;
		struct stock st;
		snprintf(json, sizeof(json),
			 "{\"apiServer\": {" SERVER ", " CA ", \"tokenFile\": \"/t\"}, \"node\": {\"name\": \"%s\"}, "
			 "\"osc\": {\"secretName\": \"s\"}}",
			 names[i]);
		assert_int_equal(settings_load(conf(s, json, path), false, &c, &st, err, sizeof(err)), 0);
		assert_string_equal(c.node_name, names[i]);
		stock_done(&st);
		config_done(&c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(requirements, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(node_name_limits, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(files, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(present, setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
