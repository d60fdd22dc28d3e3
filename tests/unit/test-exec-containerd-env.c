/* Unit tests for containerd's PATH drop-in (cloud-config-exec/containerd.h,
 * after gardener/gardener pkg/nodeagent/controller/operatingsystemconfig/
 * containerd.go addContainerdEnvironmentDropIn) and lib/osc.c's
 * osc_set_dropin(): the exact bytes Gardener renders, where the drop-in
 * goes, nothing without a criConfig, and the PATH's sources. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "osc.h"
#include "../../cloud-config-exec/containerd.h"
#include "../../cloud-config-exec/units.h"

static void parse(const char *y, struct osc *o)
{
	struct osc_error err = { { 0 } };
	int r = osc_parse(y, strlen(y), NULL, o, &err);
	if (r < 0)
		fail_msg("osc_parse: %s", err.message);
}

static const char with_cri[] =
	"spec:\n"
	"  criConfig: {name: containerd, cgroupDriver: systemd}\n"
	"  units:\n"
	"  - name: a.service\n"
	"    content: \"[Service]\\nExecStart=/bin/true\\n\"\n"
	"  - name: kubelet.service\n"
	"    content: \"[Service]\\nExecStart=/opt/bin/kubelet\\n\"\n"
	"status:\n"
	"  extensionUnits:\n"
	"  - name: containerd.service\n"
	"    dropIns:\n"
	"    - {name: 10-override.conf, content: \"[Service]\\nLimitNOFILE=1\\n\"}\n"
	"    - {name: 99-z.conf, content: \"[Unit]\\n\"}\n";

static void gardener_bytes(void **state)
{
	(void)state;
	struct osc o = { 0 };
	parse(with_cri, &o);
	assert_int_equal(containerd_env_dropin(&o, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"), 0);
	const struct osc_unit *u = osc_find_unit(&o, "containerd.service");
	assert_non_null(u);
	assert_null(u->content);
	assert_int_equal(u->n_dropins, 3);
	/* sorted by name: 10-, 30-, 99- */
	assert_string_equal(u->dropins[0].name, "10-override.conf");
	assert_string_equal(u->dropins[1].name, "30-env_config.conf");
	assert_string_equal(u->dropins[2].name, "99-z.conf");
	/* Gardener: "[Service]\nEnvironment=\"PATH=" + ContainerDRuntimeContainersBinFolder + ":" + os.Getenv("PATH") + "\"\n" */
	assert_string_equal(u->dropins[1].content,
			    "[Service]\nEnvironment=\"PATH=/var/bin/containerruntimes:/usr/local/sbin:/usr/local/bin:"
			    "/usr/sbin:/usr/bin\"\n");
	/* again (an OSC parsed twice, or GNA's last-applied that has it): replaced, not doubled */
	assert_int_equal(containerd_env_dropin(&o, "/usr/bin"), 0);
	u = osc_find_unit(&o, "containerd.service");
	assert_int_equal(u->n_dropins, 3);
	assert_string_equal(u->dropins[1].content, "[Service]\nEnvironment=\"PATH=/var/bin/containerruntimes:/usr/bin\"\n");
	osc_done(&o);
}

static void unit_added_sorted(void **state)
{
	(void)state;
	struct osc o = { 0 };
	static const char y[] =
		"spec:\n"
		"  criConfig: {name: containerd}\n"
		"  units:\n"
		"  - {name: a.service, content: \"[Service]\\n\"}\n"
		"  - {name: kubelet.service, content: \"[Service]\\n\"}\n";
	parse(y, &o);
	assert_int_equal(o.n_units, 2);
	assert_int_equal(containerd_env_dropin(&o, "/usr/bin:/bin"), 0);
	assert_int_equal(o.n_units, 3);
	assert_string_equal(o.units[0].name, "a.service");
	assert_string_equal(o.units[1].name, "containerd.service");
	assert_string_equal(o.units[2].name, "kubelet.service");
	assert_null(o.units[1].content);
	assert_int_equal(o.units[1].enable, -1);
	assert_int_equal(o.units[1].n_dropins, 1);
	assert_int_equal(o.units[1].n_file_paths, 0);
	assert_ptr_equal(osc_find_unit(&o, "kubelet.service"), &o.units[2]);
	/* the executor owns the drop-in (removed when criConfig goes) */
	char **paths = NULL;
	assert_int_equal(units_owned_paths(&o, &paths), 0);
	bool found = false;
	for (char **p = paths; *p; p++)
		found = found || strcmp(*p, "/etc/systemd/system/containerd.service.d/30-env_config.conf") == 0;
	assert_true(found);
	for (char **p = paths; *p; p++)
		free(*p);
	free(paths);
	osc_done(&o);
}

static void nothing_without_cri(void **state)
{
	(void)state;
	struct osc o = { 0 };
	parse("spec:\n  units:\n  - {name: a.service, content: \"[Service]\\n\"}\n", &o);
	assert_int_equal(containerd_env_dropin(&o, "/usr/bin"), 0);
	assert_int_equal(o.n_units, 1);
	assert_null(osc_find_unit(&o, "containerd.service"));
	osc_done(&o);
}

/* The same drop-in in old and new: containerd is not restarted for it; it
 * appears with a criConfig: restarted; goes with it: our drop-in removed. */
static void plan_follows(void **state)
{
	(void)state;
	struct osc old = { 0 }, new = { 0 }, none = { 0 };
	parse(with_cri, &old);
	parse(with_cri, &new);
	parse("spec:\n  units:\n  - name: containerd.service\n    dropIns:\n"
	      "    - {name: 10-override.conf, content: \"[Service]\\nLimitNOFILE=1\\n\"}\n"
	      "    - {name: 99-z.conf, content: \"[Unit]\\n\"}\n", &none);
	assert_int_equal(containerd_env_dropin(&old, "/usr/bin"), 0);
	assert_int_equal(containerd_env_dropin(&new, "/usr/bin"), 0);
	struct units_plan *p = NULL;
	assert_int_equal(units_plan_compute(&old, &new, NULL, NULL, &p), 0);
	assert_int_equal(units_plan_find(p, "containerd.service", false)->actions, 0);
	units_plan_free(p);
	assert_int_equal(units_plan_compute(&none, &new, NULL, NULL, &p), 0);
	const struct units_plan_entry *e = units_plan_find(p, "containerd.service", false);
	assert_true(e->actions & UNITS_WRITE);
	assert_true(e->actions & UNITS_RESTART);
	assert_string_equal(e->reason, "drop-in 30-env_config.conf added");
	units_plan_free(p);
	assert_int_equal(units_plan_compute(&new, &none, NULL, NULL, &p), 0);
	e = units_plan_find(p, "containerd.service", false);
	assert_true(e->actions & UNITS_REMOVE_DROPINS);
	units_plan_free(p);
	osc_done(&old);
	osc_done(&new);
	osc_done(&none);
}

static void set_dropin_refusals(void **state)
{
	(void)state;
	struct osc o = { 0 };
	assert_int_equal(osc_set_dropin(&o, "not a unit", "a.conf", ""), -EINVAL);
	assert_int_equal(osc_set_dropin(&o, "a.service", "../a.conf", ""), -EINVAL);
	assert_int_equal(osc_set_dropin(&o, "a.service", "a.txt", ""), -EINVAL);
	assert_int_equal(o.n_units, 0);
	assert_int_equal(osc_set_dropin(&o, "b.service", "a.conf", "x"), 0);
	assert_int_equal(osc_set_dropin(&o, "a.service", "b.conf", "y"), 0);
	assert_int_equal(osc_set_dropin(&o, "a.service", "a.conf", "z"), 0);
	assert_string_equal(o.units[0].name, "a.service");
	assert_string_equal(o.units[0].dropins[0].name, "a.conf");
	assert_string_equal(o.units[0].dropins[1].name, "b.conf");
	assert_string_equal(o.units[1].name, "b.service");
	osc_done(&o);
}

static void path_sources(void **state)
{
	(void)state;
	char *saved = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	setenv("PATH", "/usr/sbin:/usr/bin", 1);
	char *p = containerd_service_path(NULL);
	assert_string_equal(p, "/usr/sbin:/usr/bin");
	free(p);
	/* "%" is a specifier and '"' would end the value in the drop-in */
	setenv("PATH", "/usr/bin:/opt/%h", 1);
	p = containerd_service_path(NULL);
	assert_string_equal(p, CONTAINERD_PATH_FALLBACK);
	free(p);
	setenv("PATH", "/usr/bin\"\nExecStartPre=/bin/x", 1);
	p = containerd_service_path(NULL);
	assert_string_equal(p, CONTAINERD_PATH_FALLBACK);
	free(p);
	unsetenv("PATH");
	p = containerd_service_path(NULL);
	assert_string_equal(p, CONTAINERD_PATH_FALLBACK);
	free(p);
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gardener_bytes),     cmocka_unit_test(unit_added_sorted),
		cmocka_unit_test(nothing_without_cri), cmocka_unit_test(plan_follows),
		cmocka_unit_test(set_dropin_refusals), cmocka_unit_test(path_sources),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
