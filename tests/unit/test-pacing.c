/* Unit tests for lib/node/pacing.c: Go durations as gardener-resource-manager
 * writes them, and the restart decision, checked against
 * cloud-config-exec's own plan (units_plan_compute()) on every case so the
 * agent's "no unit restarts" can never disagree with what the executor then
 * does. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "osc.h"
#include "pacing.h"
#include "../../cloud-config-exec/units.h"

static void delays(void **state)
{
	static const struct {
		const char *in;
		int r;
		uint64_t ms;
	} cases[] = {
		{ "0", 0, 0 },           { "0s", 0, 0 },         { "1m23.456789s", 0, 83457 }, { "300ms", 0, 300 },
		{ "2h45m", 0, 9900000 }, { "1.5h", 0, 5400000 }, { "-1.5h", 0, 0 },          { "+5s", 0, 5000 },
		{ "1us", 0, 1 },         { "1\xc2\xb5s", 0, 1 }, { "1\xce\xbcs", 0, 1 },     { "999999ns", 0, 1 },
		{ ".5s", 0, 500 },       { "1.s", 0, 1000 },     { "4m59.999999999s", 0, 300000 },
		{ "24h", 0, 86400000 },  { "24h0.000000001s", -ERANGE, 0 }, { "9999999999999999999h", -ERANGE, 0 },
		{ "", -EINVAL, 0 },      { "5", -EINVAL, 0 },    { "s", -EINVAL, 0 },        { "5 s", -EINVAL, 0 },
		{ "5mins", -EINVAL, 0 }, { ".s", -EINVAL, 0 },   { "-", -EINVAL, 0 },        { "1d", -EINVAL, 0 },
		{ "five minutes", -EINVAL, 0 },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		uint64_t ms = 4711;
		int r = pacing_parse_delay(cases[i].in, &ms);
		if (r != cases[i].r || (r == 0 && ms != cases[i].ms))
			fail_msg("\"%s\": r=%d ms=%llu, want r=%d ms=%llu", cases[i].in, r, (unsigned long long)ms,
				 cases[i].r, (unsigned long long)cases[i].ms);
	}
}

#define KEYS "/var/lib/gardener-user-authorized-keys"
#define GU "{name: gardener-user.service, content: \"[Service]\\nExecStart=/bin/true\\n\", filePaths: [" KEYS "]}"
#define KUBELET(c) "{name: kubelet.service, content: \"" c "\", filePaths: [/etc/kubelet.conf]}"
#define FILE(p, d) "{path: " p ", content: {inline: {data: \"" d "\"}}}"
#define OSC(files, units) "spec: {files: [" files "], units: [" units "]}"

static const struct {
	const char *what;
	const char *old, *new;
	bool restarts;
	const char *why;
} changes[] = {
	{ "keys only", OSC(FILE(KEYS, "k1") "," FILE("/etc/kubelet.conf", "a"), GU "," KUBELET("x")),
	  OSC(FILE(KEYS, "k2") "," FILE("/etc/kubelet.conf", "a"), GU "," KUBELET("x")), false, "" },
	{ "a file no unit depends on", OSC(FILE("/etc/motd", "a"), KUBELET("x")), OSC(FILE("/etc/motd", "b"), KUBELET("x")),
	  false, "" },
	{ "a new file no unit depends on", OSC(FILE("/etc/motd", "a"), KUBELET("x")),
	  OSC(FILE("/etc/motd", "a") "," FILE("/etc/issue", "b"), KUBELET("x")), false, "" },
	{ "a file the kubelet depends on", OSC(FILE("/etc/kubelet.conf", "a"), KUBELET("x")),
	  OSC(FILE("/etc/kubelet.conf", "b"), KUBELET("x")), true,
	  "file /etc/kubelet.conf (filePaths of kubelet.service) changed" },
	{ "that file added", OSC("", KUBELET("x")), OSC(FILE("/etc/kubelet.conf", "b"), KUBELET("x")), true,
	  "file /etc/kubelet.conf (filePaths of kubelet.service) added" },
	{ "that file removed", OSC(FILE("/etc/kubelet.conf", "a"), KUBELET("x")), OSC("", KUBELET("x")), true,
	  "file /etc/kubelet.conf (filePaths of kubelet.service) removed" },
	{ "unit content", OSC("", KUBELET("x")), OSC("", KUBELET("y")), true, "unit kubelet.service changed" },
	{ "unit added", OSC("", GU), OSC("", GU "," KUBELET("y")), true, "unit kubelet.service added" },
	{ "unit dropped", OSC("", GU "," KUBELET("y")), OSC("", GU), true, "unit kubelet.service dropped" },
	{ "gardener-user changed", OSC("", GU), OSC("", "{name: gardener-user.service, content: \"other\"}"), false, "" },
	{ "drop-in added", OSC("", "{name: containerd.service}"),
	  OSC("", "{name: containerd.service, dropIns: [{name: 10-a.conf, content: x}]}"), true,
	  "unit containerd.service changed" },
	{ "enable false", OSC("", KUBELET("x")),
	  OSC("", "{name: kubelet.service, enable: false, content: \"x\", filePaths: [/etc/kubelet.conf]}"), true,
	  "unit kubelet.service changed" },
};

static void parse(const char *text, struct osc *ret)
{
	struct osc_error err;
	if (osc_parse(text, strlen(text), NULL, ret, &err) < 0)
		fail_msg("osc_parse(%s): %s", text, err.message);
}

/* The files the executor counts as changed: added, removed or different. */
static char **changed_files(const struct osc *old, const struct osc *new)
{
	char **v = calloc(old->n_files + new->n_files + 1, sizeof(char *));
	size_t n = 0;
	assert_non_null(v);
	for (size_t i = 0; i < new->n_files; i++) {
		const struct osc_file *f = &new->files[i], *g = osc_find_file(old, f->path);
		if (!g || g->content_len != f->content_len || memcmp(g->content, f->content, f->content_len) != 0 ||
		    g->mode != f->mode)
			v[n++] = f->path;
	}
	for (size_t i = 0; i < old->n_files; i++)
		if (!osc_find_file(new, old->files[i].path))
			v[n++] = old->files[i].path;
	return v;
}

static void restarts(void **state)
{
	for (size_t i = 0; i < ELEMENTSOF(changes); i++) {
		struct osc old, new;
		parse(changes[i].old, &old);
		parse(changes[i].new, &new);
		char why[256];
		bool got = pacing_restarts_units(&old, &new, why, sizeof(why));
		if (got != changes[i].restarts || strcmp(why, changes[i].why) != 0)
			fail_msg("%s: %d \"%s\", want %d \"%s\"", changes[i].what, got, why, changes[i].restarts,
				 changes[i].why);
		/* The executor's plan agrees. */
		_cleanup_free_ char **files = changed_files(&old, &new);
		struct units_plan *plan;
		assert_int_equal(units_plan_compute(&old, &new, files, NULL, &plan), 0);
		bool exec = false;
		for (size_t k = 0; k < units_plan_size(plan); k++)
			if (units_plan_get(plan, k)->actions &
			    (UNITS_RESTART | UNITS_STOP | UNITS_REMOVE | UNITS_DISABLE | UNITS_WRITE | UNITS_REMOVE_DROPINS))
				exec = true;
		if (exec != got)
			fail_msg("%s: pacing says %d, the executor's plan %d", changes[i].what, got, exec);
		units_plan_free(plan);
		/* Against itself: never; as a first apply: when it has units that count. */
		assert_false(pacing_restarts_units(&new, &new, why, sizeof(why)));
		osc_done(&old);
		osc_done(&new);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(delays),
		cmocka_unit_test(restarts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
