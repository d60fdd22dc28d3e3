/* Unit tests for spec.criConfig: lib/node/osc.c's strict parsing into the model
 * and lib/node/criconfig.c's renderers (containerd config version 2, 3, 4, the
 * containerd 2.2 bin_dirs switch, hosts.toml), compared with what Gardener's
 * pkg/nodeagent/controller/operatingsystemconfig/containerd_config.go and
 * templates/containerd-hosts.toml.tpl produce for the same input. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "criconfig.h"
#include "fsx.h"
#include "toml.h"
#include "osc.h"

static const char full[] =
	"spec:\n"
	"  criConfig:\n"
	"    name: containerd\n"
	"    cgroupDriver: systemd\n"
	"    containerd:\n"
	"      sandboxImage: registry.k8s.io/pause:3.10\n"
	"      registries:\n"
	"      - upstream: registry.example:5000\n"
	"        server: https://registry.example:5000\n"
	"        readinessProbe: false\n"
	"        hosts:\n"
	"        - url: https://mirror.example\n"
	"          caCerts: [/etc/ssl/mirror-ca.pem]\n"
	"          overridePath: true\n"
	"        - url: http://127.0.0.1:5001\n"
	"          capabilities: [pull, resolve]\n"
	"      - upstream: _default\n"
	"        hosts:\n"
	"        - url: https://cache.example\n"
	"          capabilities: [pull]\n"
	"      plugins:\n"
	"      - path: [io.containerd.grpc.v1.cri, containerd, runtimes, runsc]\n"
	"        values: {runtime_type: io.containerd.runsc.v1}\n";

static void parse_ok(const char *yaml, struct osc *o)
{
	struct osc_error err = { { 0 } };
	int r = osc_parse(yaml, strlen(yaml), NULL, o, &err);
	if (r < 0)
		fail_msg("parse failed: %s", err.message);
}

static void parse_model(void **state)
{
	(void)state;
	struct osc o = { 0 };
	parse_ok(full, &o);
	assert_true(o.cri.present);
	assert_true(o.cri.containerd);
	assert_int_equal(o.cri.cgroup_driver, OSC_CGROUP_SYSTEMD);
	assert_string_equal(o.cri.sandbox_image, "registry.k8s.io/pause:3.10");
	assert_int_equal(o.cri.n_plugins, 1);
	assert_int_equal(o.cri.n_registries, 2);
	/* sorted by upstream: "_default" < "registry..." */
	assert_string_equal(o.cri.registries[0].upstream, "_default");
	assert_int_equal(o.cri.registries[0].hosts[0].capabilities, OSC_CAP_PULL);
	const struct osc_registry *g = &o.cri.registries[1];
	assert_string_equal(g->server, "https://registry.example:5000");
	assert_int_equal(g->n_hosts, 2);
	assert_int_equal(g->hosts[0].n_ca, 1);
	assert_string_equal(g->hosts[0].ca[0], "/etc/ssl/mirror-ca.pem");
	assert_null(g->hosts[0].ca[1]);
	assert_int_equal(g->hosts[0].override_path, 1);
	assert_int_equal(g->hosts[1].override_path, -1);
	assert_int_equal(g->hosts[1].capabilities, OSC_CAP_PULL | OSC_CAP_RESOLVE);
	osc_done(&o);

	/* Absent, and only the name. */
	parse_ok("spec: {files: []}\n", &o);
	assert_false(o.cri.present);
	osc_done(&o);
	parse_ok("spec: {criConfig: {name: containerd}}\n", &o);
	assert_true(o.cri.present);
	assert_false(o.cri.containerd);
	assert_int_equal(o.cri.cgroup_driver, OSC_CGROUP_UNSET);
	osc_done(&o);
	/* sandboxImage "" reads as not given. */
	parse_ok("spec: {criConfig: {name: containerd, cgroupDriver: cgroupfs, containerd: {sandboxImage: ''}}}\n",
		 &o);
	assert_null(o.cri.sandbox_image);
	assert_int_equal(o.cri.cgroup_driver, OSC_CGROUP_CGROUPFS);
	osc_done(&o);
}

static void parse_rejects(void **state)
{
	(void)state;
	static const struct {
		const char *yaml, *needle;
	} bad[] = {
		{ "spec: {criConfig: {name: docker}}\n", "spec.criConfig.name" },
		{ "spec: {criConfig: {cgroupDriver: systemd}}\n", "spec.criConfig.name: missing" },
		{ "spec: {criConfig: {name: containerd, cgroupDriver: systemdd}}\n", "cgroupDriver" },
		{ "spec: {criConfig: [containerd]}\n", "spec.criConfig" },
		{ "spec: {criConfig: {name: containerd, containerd: {sandboxImage: 'a b'}}}\n", "sandboxImage" },
		{ "spec: {criConfig: {name: containerd, containerd: {sandboxImage: 'a\"b'}}}\n", "sandboxImage" },
		{ "spec: {criConfig: {name: containerd, containerd: {registries: [{upstream: ../etc}]}}}\n",
		  "registries[0].upstream" },
		{ "spec: {criConfig: {name: containerd, containerd: {registries: [{upstream: a/b}]}}}\n",
		  "registries[0].upstream" },
		{ "spec: {criConfig: {name: containerd, containerd: {registries: [{server: x}]}}}\n",
		  "registries[0].upstream: missing" },
		{ "spec: {criConfig: {name: containerd, containerd: {registries: [{upstream: a}, {upstream: a}]}}}\n",
		  "given twice" },
		{ "spec: {criConfig: {name: containerd, containerd: {registries: [{upstream: a, hosts: [{}]}]}}}\n",
		  "hosts[0].url: missing" },
		{ "spec: {criConfig: {name: containerd, containerd: {registries: [{upstream: a, hosts: [{url: "
		  "'http://x\\\\y'}]}]}}}\n",
		  "hosts[0].url" },
		{ "spec: {criConfig: {name: containerd, containerd: {registries: [{upstream: a, hosts: [{url: u, "
		  "capabilities: [fly]}]}]}}}\n",
		  "capabilities[0]" },
		{ "spec: {criConfig: {name: containerd, containerd: {registries: [{upstream: a, hosts: [{url: u, "
		  "caCerts: [1]}]}]}}}\n",
		  "caCerts[0]" },
		{ "spec: {criConfig: {name: containerd, containerd: {registries: [{upstream: a, hosts: [{url: u, "
		  "overridePath: maybe}]}]}}}\n",
		  "overridePath" },
		{ "spec: {criConfig: {name: containerd, containerd: {plugins: [{op: add}]}}}\n", "plugins[0].path" },
		{ "spec: {criConfig: {name: containerd, containerd: {plugins: [{path: [a], op: replace}]}}}\n",
		  "plugins[0].op" },
		{ "spec: {criConfig: {name: containerd, containerd: {plugins: [{path: ['']}]}}}\n", "plugins[0].path[0]" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct osc o = { 0 };
		struct osc_error err = { { 0 } };
		int r = osc_parse(bad[i].yaml, strlen(bad[i].yaml), NULL, &o, &err);
		if (r >= 0)
			fail_msg("accepted: %s", bad[i].yaml);
		if (!strstr(err.message, bad[i].needle))
			fail_msg("'%s' lacks '%s' for %s", err.message, bad[i].needle, bad[i].yaml);
	}
}

static void versions(void **state)
{
	(void)state;
	static const struct {
		const char *out;
		int config_version;
		bool bin_dirs;
	} ok[] = {
		{ "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3\n", 2, false },
		{ "containerd containerd.io 1.7.23 57f17b0a6295a39009d861b89e3b3b87b005ca27\n", 2, false },
		{ "containerd github.com/containerd/containerd/v2 v2.0.2 c507a0257ea6462fbd6f5ba4f5c74facb04021f4\n", 3,
		  false },
		{ "containerd github.com/containerd/containerd/v2 v2.2.0 x\n", 3, true },
		{ "containerd github.com/containerd/containerd/v2 v2.3.1 x\n", 4, true },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct cri_target t;
		assert_int_equal(cri_target_from_version(ok[i].out, strlen(ok[i].out), &t), 0);
		assert_int_equal(t.config_version, ok[i].config_version);
		assert_int_equal(t.cni_bin_dirs, ok[i].bin_dirs);
	}
	static const char *const bad[] = { "", "containerd", "containerd x", "containerd x 3.0.0",
					   "containerd x 0.9.1", "containerd x v", "containerd x 1", "containerd x 1.",
					   "containerd x 12345.1", "containerd\nx 1.6.0" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cri_target t;
		if (cri_target_from_version(bad[i], strlen(bad[i]), &t) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
	}
}

static void render_config(void **state)
{
	(void)state;
	struct osc o = { 0 };
	parse_ok(full, &o);
	struct cri_target v2 = { .config_version = 2 }, v3 = { .config_version = 3 },
			  v22 = { .config_version = 3, .cni_bin_dirs = true };
	_cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
	assert_int_equal(cri_render_config(&o.cri, &v2, &a), 0);
	const char *want2 = "version = 2\n"
			    "imports = [\"/etc/containerd/conf.d/*.toml\"]\n"
			    "\n[plugins.\"io.containerd.grpc.v1.cri\"]\n"
			    "  sandbox_image = \"registry.k8s.io/pause:3.10\"\n"
			    "\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n"
			    "  config_path = \"/etc/containerd/certs.d\"\n"
			    "\n[plugins.\"io.containerd.grpc.v1.cri\".cni]\n"
			    "  bin_dir = \"/opt/cni/bin\"\n"
			    "\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
			    "  runtime_type = \"io.containerd.runc.v2\"\n"
			    "\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
			    "  SystemdCgroup = true\n";
	assert_non_null(strstr(a, want2));
	assert_true(a[0] == '#'); /* the managed-by header comes first */

	assert_int_equal(cri_render_config(&o.cri, &v3, &b), 0);
	assert_non_null(strstr(b, "version = 3\n"));
	assert_non_null(strstr(b, "[plugins.\"io.containerd.cri.v1.images\".pinned_images]\n  sandbox = "
				  "\"registry.k8s.io/pause:3.10\"\n"));
	assert_non_null(strstr(b, "[plugins.\"io.containerd.cri.v1.images\".registry]\n  config_path = "));
	assert_non_null(strstr(b, "[plugins.\"io.containerd.cri.v1.runtime\".cni]\n  bin_dir = \"/opt/cni/bin\"\n"));
	assert_non_null(strstr(b, "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc.options]\n"
				  "  SystemdCgroup = true\n"));
	assert_null(strstr(b, "grpc.v1.cri"));

	assert_int_equal(cri_render_config(&o.cri, &v22, &c), 0);
	assert_non_null(strstr(c, "  bin_dirs = [\"/opt/cni/bin\"]\n"));
	assert_null(strstr(c, "bin_dir ="));
	osc_done(&o);

	/* No cgroupDriver: containerd's runc default stays untouched;
	 * cgroupfs: SystemdCgroup = false. No sandbox image: not written. */
	_cleanup_free_ char *d = NULL, *e = NULL;
	parse_ok("spec: {criConfig: {name: containerd}}\n", &o);
	assert_int_equal(cri_render_config(&o.cri, &v2, &d), 0);
	assert_null(strstr(d, "runtimes"));
	assert_null(strstr(d, "sandbox"));
	osc_done(&o);
	parse_ok("spec: {criConfig: {name: containerd, cgroupDriver: cgroupfs}}\n", &o);
	assert_int_equal(cri_render_config(&o.cri, &v2, &e), 0);
	assert_non_null(strstr(e, "SystemdCgroup = false\n"));
	struct cri_target v9 = { .config_version = 9 };
	char *x = NULL;
	assert_int_equal(cri_render_config(&o.cri, &v9, &x), -EINVAL);
	osc_done(&o);
	assert_int_equal(cri_render_config(&o.cri, &v2, &x), -EINVAL); /* not present */
}

/* criConfig.containerd.plugins: tables of their own (nested, scalars,
 * lists), Gardener's path replacement from version 3, remove, and the
 * refusals (set twice, value vs table, removing node-agent's own keys). */
static void render_plugins(void **state)
{
	(void)state;
	struct osc o = { 0 };
	struct cri_target v2 = { .config_version = 2 }, v3 = { .config_version = 3 };
	parse_ok("spec: {criConfig: {name: containerd, cgroupDriver: systemd, containerd: {plugins: [\n"
		 "  {path: [io.containerd.grpc.v1.cri, containerd, runtimes, runsc],\n"
		 "   values: {runtime_type: io.containerd.runsc.v1, n: -3, b: false, l: [a, b],\n"
		 "            options: {TypeUrl: x, deep: {k: 1}}}},\n"
		 "  {path: [io.containerd.grpc.v1.cri, containerd, runtimes, kata], values: {runtime_type: k}},\n"
		 "  {path: [io.containerd.grpc.v1.cri, containerd, runtimes, kata], op: remove},\n"
		 "  {path: [io.containerd.nothing.v1], op: remove},\n"
		 "  {path: [io.containerd.tracing.processor.v1.otlp]}]}}}\n",
		 &o);
	assert_int_equal(o.cri.n_plugins, 5);
	assert_true(o.cri.plugins[2].remove);
	_cleanup_free_ char *a = NULL, *b = NULL;
	assert_int_equal(cri_render_config(&o.cri, &v2, &a), 0);
	assert_non_null(strstr(a, "\n[plugins.\"io.containerd.grpc.v1.cri\".\"containerd\".\"runtimes\".\"runsc\"]\n"
				  "  \"runtime_type\" = \"io.containerd.runsc.v1\"\n"
				  "  \"n\" = -3\n"
				  "  \"b\" = false\n"
				  "  \"l\" = [\"a\", \"b\"]\n"
				  "\n[plugins.\"io.containerd.grpc.v1.cri\".\"containerd\".\"runtimes\".\"runsc\".\"options\"]\n"
				  "  \"TypeUrl\" = \"x\"\n"
				  "\n[plugins.\"io.containerd.grpc.v1.cri\".\"containerd\".\"runtimes\".\"runsc\".\"options\".\"deep\"]\n"
				  "  \"k\" = 1\n"));
	assert_null(strstr(a, "kata")); /* removed by the later entry */
	assert_non_null(strstr(a, "\n[plugins.\"io.containerd.tracing.processor.v1.otlp\"]\n")); /* empty table */
	assert_int_equal(cri_render_config(&o.cri, &v3, &b), 0);
	assert_non_null(strstr(b, "\n[plugins.\"io.containerd.cri.v1.runtime\".\"containerd\".\"runtimes\".\"runsc\"]\n"));
	assert_null(strstr(b, "grpc.v1.cri"));
	bool active[5];
	char why[256];
	assert_int_equal(cri_plugins_check(&o.cri, &v2, active, why, sizeof(why)), 0);
	assert_true(active[0]);
	assert_false(active[1]);
	assert_false(active[2]);
	osc_done(&o);

	static const struct {
		const char *yaml, *why;
	} bad[] = {
		{ "spec: {criConfig: {name: containerd, cgroupDriver: systemd, containerd: {plugins: [\n"
		  "  {path: [io.containerd.grpc.v1.cri, containerd, runtimes, runc, options], values: {BinaryName: x}}]}}}\n",
		  "plugins[0]: plugins.io.containerd.grpc.v1.cri.containerd.runtimes.runc.options is set by node-agent "
		  "itself too" },
		{ "spec: {criConfig: {name: containerd, containerd: {plugins: [\n"
		  "  {path: [io.containerd.grpc.v1.cri], values: {registry: x}}]}}}\n",
		  "plugins[0]: plugins.io.containerd.grpc.v1.cri.registry is set by node-agent itself too" },
		{ "spec: {criConfig: {name: containerd, containerd: {plugins: [\n"
		  "  {path: [i.o.x.v1, b], values: {c: 1}}, {path: [i.o.x.v1, b], values: {d: 1}}]}}}\n",
		  "plugins[1]: plugins.i.o.x.v1.b is set by another plugin too" },
		{ "spec: {criConfig: {name: containerd, containerd: {plugins: [\n"
		  "  {path: [i.o.x.v1], values: {b: 1}}, {path: [i.o.x.v1, b, c]}]}}}\n",
		  "plugins[1]: plugins.i.o.x.v1.b.c is set by another plugin too" },
		{ "spec: {criConfig: {name: containerd, containerd: {plugins: [\n"
		  "  {path: [io.containerd.grpc.v1.cri], op: remove}]}}}\n",
		  "plugins[0]: removing plugins.io.containerd.grpc.v1.cri would remove what node-agent renders" },
		{ "spec: {criConfig: {name: containerd, containerd: {plugins: [\n"
		  "  {path: [i.o.x.v1], values: {b: {c: 1}}}, {path: [i.o.x.v1, b], op: remove}]}}}\n",
		  "plugins[1]: removing plugins.i.o.x.v1.b inside plugins[0]'s values is not supported" },
		/* what containerd 1.6's TOML parser (go-toml v1) refuses in a
		 * table header, and the allow-list around it (issue 21) */
		{ "spec: {criConfig: {name: containerd, containerd: {plugins: [\n"
		  "  {path: [io.containerd.grpc.v1.cri, containerd, runtimes, 'a]b'], values: {runtime_type: x}}]}}}\n",
		  "plugins[0].path[3]: 'a]b' has a byte outside [A-Za-z0-9._:/@+-]" },
		{ "spec: {criConfig: {name: containerd, containerd: {plugins: [\n"
		  "  {path: [io.containerd.grpc.v1.cri, 'c[d'], op: remove}]}}}\n",
		  "plugins[0].path[1]: 'c[d' has a byte outside" },
		{ "spec: {criConfig: {name: containerd, containerd: {plugins: [\n"
		  "  {path: [io.containerd.grpc.v1.cri, containerd, runtimes, x], values: {options: {'k]': 1}}}]}}}\n",
		  "plugins[0]: key 'k]' has a byte outside" },
		{ "spec: {criConfig: {name: containerd, containerd: {plugins: [\n"
		  "  {path: [io.containerd.grpc.v1.cri, containerd, runtimes, x], values: {'it''s': 1}}]}}}\n",
		  "plugins[0]: key 'it's' has a byte outside" },
		{ "spec: {criConfig: {name: containerd, containerd: {plugins: [\n"
		  "  {path: [io.containerd.grpc.v1.cri, containerd, runtimes, 'a#b']}]}}}\n",
		  "plugins[0].path[3]: 'a#b' has a byte outside" },
		{ "spec: {criConfig: {name: containerd, containerd: {plugins: [\n"
		  "  {path: [cri, containerd], values: {x: 1}}]}}}\n",
		  "plugins[0].path[0]: 'cri' is not a plugin URI as containerd wants it" },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		parse_ok(bad[i].yaml, &o);
		why[0] = '\0';
		assert_int_equal(cri_plugins_check(&o.cri, &v2, NULL, why, sizeof(why)), -EINVAL);
		if (!strstr(why, bad[i].why))
			fail_msg("case %zu: '%s' lacks '%s'", i, why, bad[i].why);
		char *x = NULL;
		assert_int_equal(cri_render_config(&o.cri, &v2, &x), -EINVAL);
		osc_done(&o);
	}

	/* Floats, nulls, lists of tables and of lists, as gardener-node-agent
	 * takes them (issue 36): a float stays a float, null deletes the key,
	 * a list of tables is a list of inline tables. */
	parse_ok("spec: {criConfig: {name: containerd, containerd: {plugins: [{path: [i.o.x.v1, t], values: {"
		 "f: 1.5, g: 2.0, i: 1, n: null, l: [{x: 1, y: null}, {x: 2}], ll: [[1], [2, 3]]}}]}}}\n", &o);
	_cleanup_free_ char *fl = NULL;
	assert_int_equal(cri_render_config(&o.cri, &v2, &fl), 0);
	assert_non_null(strstr(fl, "\n[plugins.\"i.o.x.v1\".\"t\"]\n  \"f\" = 1.5\n  \"g\" = 2.0\n  \"i\" = 1\n"
				   "  \"l\" = [{ \"x\" = 1 }, { \"x\" = 2 }]\n  \"ll\" = [[1], [2, 3]]\n"));
	assert_null(strstr(fl, "\"n\""));
	osc_done(&o);

	/* Parser refusals: infinities, null in a list, mixed lists, quotes. */
	static const char *const refused[] = {
		"spec: {criConfig: {name: containerd, containerd: {plugins: [{path: [a], values: {f: .inf}}]}}}\n",
		"spec: {criConfig: {name: containerd, containerd: {plugins: [{path: [a], values: {l: [1, null]}}]}}}\n",
		"spec: {criConfig: {name: containerd, containerd: {plugins: [{path: [a], values: {l: [{x: 1}, 2]}}]}}}\n",
		"spec: {criConfig: {name: containerd, containerd: {plugins: [{path: [a], values: {l: [1, x]}}]}}}\n",
		"spec: {criConfig: {name: containerd, containerd: {plugins: [{path: [a], values: {s: 'a\"b'}}]}}}\n",
		"spec: {criConfig: {name: containerd, containerd: {plugins: [{path: [a], values: {'a b': 1}}]}}}\n",
		"spec: {criConfig: {name: containerd, containerd: {plugins: [{path: ['a\\\\b']}]}}}\n",
	};
	for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
		struct osc_error err = { { 0 } };
		if (osc_parse(refused[i], strlen(refused[i]), NULL, &o, &err) != -EINVAL)
			fail_msg("accepted: %s", refused[i]);
	}
}

static void key_allow_list(void **state)
{
	(void)state;
	static const char *const ok[] = { "runsc", "io.containerd.grpc.v1.cri", "gvisor:runsc/v1@x+y_z-1.2",
					  "SystemdCgroup", "0" };
	static const char *const no[] = { "", "a]b", "[", "]", "a[b", "a#b", "a=b", "it's", "a,b", "{}", "a b",
					  "a\"b", "a\\b", "a\tb", "\x7f", "\xc3\xa9" };
	for (size_t i = 0; i < ELEMENTSOF(ok); i++)
		if (!cri_key_is_safe(ok[i]))
			fail_msg("refused: '%s'", ok[i]);
	for (size_t i = 0; i < ELEMENTSOF(no); i++)
		if (cri_key_is_safe(no[i]))
			fail_msg("accepted: '%s'", no[i]);
	assert_false(cri_key_is_safe(NULL));
}

static void render_hosts(void **state)
{
	(void)state;
	struct osc o = { 0 };
	parse_ok(full, &o);
	_cleanup_free_ char *a = NULL, *b = NULL;
	assert_int_equal(cri_render_hosts(&o.cri.registries[1], &a), 0);
	const char *want = "server = \"https://registry.example:5000\"\n"
			   "\n[host.\"https://mirror.example\"]\n"
			   "  capabilities = [\"pull\",\"resolve\"]\n"
			   "  ca = [\"/etc/ssl/mirror-ca.pem\"]\n"
			   "  override_path = true\n"
			   "\n[host.\"http://127.0.0.1:5001\"]\n"
			   "  capabilities = [\"pull\",\"resolve\"]\n";
	assert_non_null(strstr(a, want));
	assert_int_equal(cri_render_hosts(&o.cri.registries[0], &b), 0);
	assert_null(strstr(b, "server"));
	assert_non_null(strstr(b, "[host.\"https://cache.example\"]\n  capabilities = [\"pull\"]\n"));
	osc_done(&o);
}

static void equality(void **state)
{
	(void)state;
	struct osc a = { 0 }, b = { 0 }, c = { 0 };
	struct cri_target t = { .config_version = 2 };
	parse_ok(full, &a);
	parse_ok(full, &b);
	assert_true(cri_equal(&a.cri, &b.cri, &t));
	assert_false(cri_equal(&a.cri, NULL, &t));
	assert_true(cri_equal(NULL, NULL, &t));
	char *changed = strdup(full);
	assert_non_null(changed);
	char *p = strstr(changed, "cache.example");
	p[0] = 'k'; /* another mirror URL: a different hosts.toml */
	parse_ok(changed, &c);
	assert_false(cri_equal(&a.cri, &c.cri, &t));
	free(changed);
	osc_done(&a);
	osc_done(&b);
	osc_done(&c);
}

/* config.toml patched as gardener-node-agent patches it (issue 36): a GPU
 * image's file keeps everything node-agent does not own. */
static void merge_image(void **state)
{
	(void)state;
	const char *src = getenv("SRCDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/tests/fixtures/containerd/gpu-image-1.6.toml", src ? src : ".");
	_cleanup_free_ char *base = NULL, *out = NULL, *alone = NULL, *ours = NULL;
	size_t len;
	assert_int_equal(fsx_read_at(AT_FDCWD, path, 1u << 20, &base, &len), 0);
	struct osc o = { 0 };
	parse_ok("spec: {criConfig: {name: containerd, cgroupDriver: systemd, containerd: {sandboxImage: p:1, plugins: [\n"
		 "  {path: [io.containerd.grpc.v1.cri, containerd, runtimes, nvidia],\n"
		 "   values: {privileged_without_host_devices: null, options: {BinaryName: /x}}},\n"
		 "  {path: [io.containerd.monitor.v1.cgroups], op: remove}]}}}\n", &o);
	struct cri_target v2 = { .config_version = 2 };
	char why[256] = "";
	assert_int_equal(cri_merge_config(base, len, &o.cri, &v2, &out, why, sizeof(why)), 0);
	_cleanup_(toml_freep) struct toml_node *t = NULL;
	char err[TOML_ERROR_MAX];
	assert_int_equal(toml_parse(out, strlen(out), &t, err, sizeof(err)), 0);
	struct toml_node *cri = toml_get(toml_get(t, "plugins"), "io.containerd.grpc.v1.cri");
	struct toml_node *rt = toml_get(toml_get(cri, "containerd"), "runtimes");
	struct toml_node *nv = toml_get(rt, "nvidia");
	assert_null(toml_get(nv, "privileged_without_host_devices")); /* null: deleted */
	assert_string_equal(toml_get(nv, "runtime_type")->str, "io.containerd.runc.v2"); /* not named: kept */
	assert_int_equal(toml_get(nv, "options")->n_items, 1);                            /* named: replaced whole */
	assert_string_equal(toml_get(toml_get(nv, "options"), "BinaryName")->str, "/x");
	assert_true(toml_get(toml_get(toml_get(rt, "runc"), "options"), "SystemdCgroup")->b);
	assert_string_equal(toml_get(toml_get(cri, "containerd"), "default_runtime_name")->str, "nvidia");
	assert_true(toml_get(cri, "enable_cdi")->b);
	assert_string_equal(toml_get(cri, "sandbox_image")->str, "p:1");
	assert_null(toml_get(toml_get(t, "plugins"), "io.containerd.monitor.v1.cgroups")); /* removed */
	struct toml_node *imp = toml_get(t, "imports");
	assert_int_equal(imp->n_items, 2);
	assert_string_equal(imp->items[1]->str, "/etc/containerd/conf.d/*.toml");
	assert_int_equal(toml_get(t, "proxy_plugins_list")->n_items, 2);
	assert_int_equal(toml_get(t, "oom_score")->i, -999);
	/* Patched again: the same text (imports not appended twice). */
	_cleanup_free_ char *again = NULL;
	assert_int_equal(cri_merge_config(out, strlen(out), &o.cri, &v2, &again, why, sizeof(why)), 0);
	assert_string_equal(out, again);
	/* No file there: node-agent's keys alone. */
	assert_int_equal(cri_merge_config(NULL, 0, &o.cri, &v2, &alone, why, sizeof(why)), 0);
	assert_non_null(strstr(alone, "SystemdCgroup = true"));
	assert_null(strstr(alone, "nvidia\""));
	/* A value where a table must be: gardener-node-agent cannot traverse it either. */
	assert_int_equal(cri_merge_config("version = 2\nplugins = 1\n", 23, &o.cri, &v2, &ours, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "plugins is not a table"));
	int v = 0;
	_cleanup_(toml_freep) struct toml_node *v1 = NULL;
	assert_int_equal(toml_parse("x = 1\n", 6, &v1, err, sizeof(err)), 0);
	assert_int_equal(cri_file_version(v1, &v, why, sizeof(why)), 0);
	assert_int_equal(v, 1);
	osc_done(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_model),  cmocka_unit_test(parse_rejects), cmocka_unit_test(versions),
		cmocka_unit_test(render_config), cmocka_unit_test(render_plugins), cmocka_unit_test(key_allow_list), cmocka_unit_test(render_hosts),  cmocka_unit_test(equality),
		cmocka_unit_test(merge_image),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
