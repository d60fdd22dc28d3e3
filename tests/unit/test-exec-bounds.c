/* Unit tests for cloud-config-exec/bounds.c (issue 21): each field of
 * desired.json beyond the OSC is refused outside its bound, with one line
 * naming the field and the value; within it, accepted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../cloud-config-exec/bounds.h"
#include "cleanup.h"
#include "desired.h"
#include "osc.h"

#define S(x) ((char *)(uintptr_t)(x))
#define STATE "/var/lib/cloud-config-exec"
#define SNAP "/var/lib/cloud-config-exec/authkeys.snap"

/* An OSC carrying gardener-node-agent's configuration with syncs (a YAML
 * fragment of controllers.token.syncConfigs entries), or none at all. */
static struct osc *osc_with(const char *config_body)
{
	char yaml[4096];
	if (config_body)
		snprintf(yaml, sizeof(yaml),
			 "apiVersion: extensions.gardener.cloud/v1alpha1\n"
			 "kind: OperatingSystemConfig\n"
			 "spec:\n"
			 "  files:\n"
			 "  - path: /var/lib/gardener-node-agent/config-v1.149.3.yaml\n"
			 "    permissions: 384\n"
			 "    content:\n"
			 "      inline:\n"
			 "        data: |\n"
			 "          apiVersion: nodeagent.config.gardener.cloud/v1alpha1\n"
			 "          kind: NodeAgentConfiguration\n"
			 "%s",
			 config_body);
	else
		snprintf(yaml, sizeof(yaml), "apiVersion: extensions.gardener.cloud/v1alpha1\n"
					     "kind: OperatingSystemConfig\nspec: {}\n");
	struct osc *o = calloc(1, sizeof(*o));
	struct osc_error e = { 0 };
	assert_non_null(o);
	if (osc_parse(yaml, strlen(yaml), STATE, o, &e) < 0)
		fail_msg("test OSC does not parse: %s", e.message);
	return o;
}

static void osc_free(struct osc *o)
{
	osc_done(o);
	free(o);
}

static const char syncs[] = "          controllers:\n"
			    "            token:\n"
			    "              syncConfigs:\n"
			    "              - secretName: shoot-access-otelcol\n"
			    "                path: /var/lib/otelcol/auth-token\n"
			    "              - secretName: evil\n"
			    "                path: /etc/systemd/system/evil.service\n"
			    "              - secretName: evil2\n"
			    "                path: /etc/passwd\n";

/* Runs bounds_check on d with the OSC (and last applied one); returns r,
 * the error in err. */
static int run(const struct desired *d, struct osc *o, struct osc *last, char *err, size_t size)
{
	struct bounds b = { .gna_dir = NULL, .exec_state_dir = STATE, .snapshot_path = SNAP, .osc = o, .last = last };
	return bounds_check(d, &b, err, size);
}

static void tokens(void **state)
{
	(void)state;
	struct osc *o = osc_with(syncs);
	char err[BOUNDS_ERROR_MAX];
	struct desired_token t = { S("/var/lib/otelcol/auth-token"), S("tok") };
	struct desired d = { .tokens = &t, .n_tokens = 1 };
	assert_int_equal(run(&d, o, NULL, err, sizeof(err)), 0);
	assert_string_equal(err, "");

	/* A path the OSC's configuration does not name. */
	t.path = S("/var/lib/other/token");
	assert_int_equal(run(&d, o, NULL, err, sizeof(err)), -EPERM);
	assert_string_equal(err, "tokens[0].path '/var/lib/other/token': not a path the OSC's gardener-node-agent "
				 "configuration names in controllers.token.syncConfigs");
	/* The executor's own state, even if the OSC named it. */
	t.path = S(STATE "/state.json");
	assert_int_equal(run(&d, o, NULL, err, sizeof(err)), -EPERM);
	assert_string_equal(err, "tokens[0].path '" STATE "/state.json': below the executor's state directory, "
				 "where no synced token may go");
	/* A unit directory, although the OSC names it. */
	t.path = S("/etc/systemd/system/evil.service");
	assert_int_equal(run(&d, o, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "tokens[0].path '/etc/systemd/system/evil.service': below a systemd unit directory"));
	/* An account database, although the OSC names it. */
	t.path = S("/etc/passwd");
	assert_int_equal(run(&d, o, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "tokens[0].path '/etc/passwd': below an account database"));
	/* No gardener-node-agent configuration in the OSC: no token at all. */
	struct osc *none = osc_with(NULL);
	t.path = S("/var/lib/otelcol/auth-token");
	assert_int_equal(run(&d, none, NULL, err, sizeof(err)), -EPERM);
	/* A malformed configuration: the last applied OSC's stands in. */
	struct osc *bad = osc_with("          controllers: [5]\n");
	assert_int_equal(run(&d, bad, NULL, err, sizeof(err)), -EPERM);
	assert_int_equal(run(&d, bad, o, err, sizeof(err)), 0);
	assert_int_equal(run(&d, bad, none, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "the last applied OSC's"));
	/* The second of two is named. */
	struct desired_token two[2] = { { S("/var/lib/otelcol/auth-token"), S("a") }, { S("/root/.bashrc"), S("b") } };
	d.tokens = two;
	d.n_tokens = 2;
	assert_int_equal(run(&d, o, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "tokens[1].path '/root/.bashrc'"));
	osc_free(o);
	osc_free(none);
	osc_free(bad);
}

static void places(void **state)
{
	(void)state;
	const char *yes[] = { "/etc/systemd",	   "/etc/systemd/system/a.service", "/run/systemd/system/x",
			      "/usr/lib/systemd/system/y", "/lib/systemd/z",	   "/etc/passwd",
			      "/etc/shadow",	   "/etc/group",		    "/etc/gshadow",
			      "/etc/shadow-",	   "/etc/sudoers",		    "/etc/sudoers.d/90-x",
			      "/etc/subuid",	   STATE,			    STATE "/revoked-keys.krl" };
	for (size_t i = 0; i < ELEMENTSOF(yes); i++)
		if (!bounds_forbidden_place(yes[i], STATE, SNAP))
			fail_msg("%s should be forbidden", yes[i]);
	const char *no[] = { "/etc/passwdx", "/etc/systemdx/a", "/var/lib/cloud-config-execx/a", "/var/lib/otelcol/t",
			     "/etc/ssl/x" };
	for (size_t i = 0; i < ELEMENTSOF(no); i++)
		if (bounds_forbidden_place(no[i], STATE, SNAP))
			fail_msg("%s should be allowed", no[i]);
	const char *more[] = { "/usr/local/lib/systemd/system/x.service", "/usr/share/systemd/user/x.service",
			       "/etc/xdg/systemd/user/x.service", "/home/u/.config/systemd/user/x.service",
			       "/root/.local/share/systemd/user", "/root/.config/systemd" };
	for (size_t i = 0; i < ELEMENTSOF(more); i++)
		if (!bounds_forbidden_place(more[i], STATE, SNAP))
			fail_msg("%s should be forbidden", more[i]);
	assert_null(bounds_forbidden_place("/home/u/.config/systemdx/a", STATE, SNAP));
	/* A snapshot configured elsewhere: its directory is the executor's. */
	assert_non_null(bounds_forbidden_place("/etc/ssh/x", STATE, "/etc/ssh/authkeys.snap"));
	assert_null(bounds_forbidden_place("/etc/ssh/x", STATE, NULL));
}

/* Every unit search path systemd itself lists (system manager, --global
 * and --user) is forbidden, and so is a file in it. */
static void unit_paths_of_systemd(void **state)
{
	(void)state;
	static const char *const scopes[] = { "--system", "--global", "--user" };
	if (access("/usr/bin/systemd-analyze", X_OK) != 0)
		skip();
	size_t checked = 0;
	for (size_t k = 0; k < ELEMENTSOF(scopes); k++) {
		int fds[2];
		assert_int_equal(pipe(fds), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			dup2(fds[1], 1);
			close(fds[0]);
			char a0[] = "systemd-analyze", a1[] = "unit-paths", *a2 = S(scopes[k]);
			char e0[] = "HOME=/root", e1[] = "XDG_RUNTIME_DIR=/run/user/0";
			char *argv[] = { a0, a1, a2, NULL }, *envp[] = { e0, e1, NULL };
			execve("/usr/bin/systemd-analyze", argv, envp);
			_exit(127);
		}
		close(fds[1]);
		char buf[16384];
		size_t len = 0;
		ssize_t n;
		while (len < sizeof(buf) - 1 && (n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
			len += (size_t)n;
		buf[len] = 0;
		close(fds[0]);
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			continue; /* --user needs a user manager on some systems */
		for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
			char file[4200];
			snprintf(file, sizeof(file), "%s/x.service", line);
			if (!bounds_forbidden_place(line, STATE, SNAP) || !bounds_forbidden_place(file, STATE, SNAP))
				fail_msg("systemd-analyze unit-paths %s lists %s, which bounds allows", scopes[k], line);
			checked++;
		}
	}
	assert_true(checked >= 10);
}

static void kubelet(void **state)
{
	(void)state;
	char err[BOUNDS_ERROR_MAX];
	struct desired d = { .kb_server = S("https://api.example.com"),
			     .kb_ca_file = S("/var/lib/gardener-node-agent/cluster-ca.crt"),
			     .kb_token_file = S("/var/lib/gardener-node-agent/credentials/bootstrap-token"),
			     .kb_node_registered = true };
	assert_int_equal(run(&d, NULL, NULL, err, sizeof(err)), 0);
	d.kb_token_file = S("/etc/passwd");
	assert_int_equal(run(&d, NULL, NULL, err, sizeof(err)), -EPERM);
	assert_string_equal(err, "kubeletBootstrap.tokenFile '/etc/passwd': not the stock bootstrap token file "
				 "/var/lib/gardener-node-agent/credentials/bootstrap-token");
	d.kb_token_file = S("/var/lib/gardener-node-agent/credentials/bootstrap-token");
	d.kb_ca_file = S("/etc/shadow");
	assert_int_equal(run(&d, NULL, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "kubeletBootstrap.caFile '/etc/shadow': not the stock cluster CA file"));
	/* The configured stock directory. */
	d.kb_ca_file = S("/srv/gna/cluster-ca.crt");
	d.kb_token_file = S("/srv/gna/credentials/bootstrap-token");
	struct bounds b = { .gna_dir = "/srv/gna", .exec_state_dir = STATE };
	assert_int_equal(bounds_check(&d, &b, err, sizeof(err)), 0);
	b.gna_dir = NULL;
	assert_int_equal(bounds_check(&d, &b, err, sizeof(err)), -EPERM);
}

static void restart(void **state)
{
	(void)state;
	char err[BOUNDS_ERROR_MAX];
	char *units[] = { S("kubelet.service"), S("a@b.service"), NULL };
	struct desired d = { .restart_id = S("1"), .restart_units = units };
	assert_int_equal(run(&d, NULL, NULL, err, sizeof(err)), 0);
	units[1] = S("getty@.service");
	assert_int_equal(run(&d, NULL, NULL, err, sizeof(err)), -EPERM);
	assert_string_equal(err, "restart.units[1] 'getty@.service': a template, not a unit that can be restarted");
	units[1] = S("../../etc/passwd");
	assert_int_equal(run(&d, NULL, NULL, err, sizeof(err)), -EPERM);
	assert_string_equal(err, "restart.units[1] '../../etc/passwd': not a valid systemd unit name");
	units[1] = S("a\nb.service");
	assert_int_equal(run(&d, NULL, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "'a?b.service'"));
}

/* readyRegistries (issue 25, item 8): only a registry of the OSC with
 * readinessProbe: true. */
static void ready_registries(void **state)
{
	(void)state;
	static const char yaml[] = "spec:\n"
				   "  criConfig:\n"
				   "    name: containerd\n"
				   "    containerd:\n"
				   "      registries:\n"
				   "      - upstream: a.example\n"
				   "        readinessProbe: true\n"
				   "        hosts: [{url: 'http://10.0.0.1'}]\n"
				   "      - upstream: b.example\n"
				   "        hosts: [{url: 'http://10.0.0.2'}]\n";
	struct osc o;
	struct osc_error e = { 0 };
	if (osc_parse(yaml, strlen(yaml), STATE, &o, &e) < 0)
		fail_msg("test OSC does not parse: %s", e.message);
	char err[BOUNDS_ERROR_MAX];
	struct desired_ready_registry rr = { .upstream = S("a.example") };
	memset(rr.sha256, 'a', 64);
	struct desired d = { .ready_registries = &rr, .n_ready_registries = 1 };
	assert_int_equal(run(&d, &o, NULL, err, sizeof(err)), 0);
	rr.upstream = S("b.example");
	assert_int_equal(run(&d, &o, NULL, err, sizeof(err)), -EPERM);
	assert_string_equal(err, "readyRegistries[0].upstream 'b.example': not a registry of the OSC's criConfig "
				 "with readinessProbe");
	rr.upstream = S("c.example");
	assert_int_equal(run(&d, &o, NULL, err, sizeof(err)), -EPERM);
	struct osc *none = osc_with(NULL);
	rr.upstream = S("a.example");
	assert_int_equal(run(&d, none, NULL, err, sizeof(err)), -EPERM);
	osc_free(none);
	osc_done(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tokens),
		cmocka_unit_test(places),
		cmocka_unit_test(unit_paths_of_systemd),
		cmocka_unit_test(kubelet),
		cmocka_unit_test(restart),
		cmocka_unit_test(ready_registries),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
