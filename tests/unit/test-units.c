/* Unit tests for cloud-config-exec/units.c: which units restart, stop or go
 * for which change (the plan, table-driven), the one-line summary, and
 * writing unit files into a scratch root without a bus. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "osc.h"
#include "../../cloud-config-exec/units.h"
#include "scratch.h"

/* The base OSC most cases start from (YAML flow style keeps it short):
 * a.service: ours, unchanged in most cases; b.service: ours, restarted when
 * /etc/b.conf changes; os.service: an OS unit we only add a drop-in to. */
#define UNIT_A "{name: a.service, content: \"[Service]\\nExecStart=/bin/true\\n\"}"
#define UNIT_A2 "{name: a.service, content: \"[Service]\\nExecStart=/bin/false\\n\"}"
#define UNIT_B "{name: b.service, content: B, filePaths: [/etc/b.conf]}"
#define UNIT_OS "{name: os.service, dropIns: [{name: 10-x.conf, content: X}]}"
#define BASE "spec: {units: [" UNIT_A ", " UNIT_B ", " UNIT_OS "]}"
#define WITH(...) "spec: {units: [" __VA_ARGS__ "]}"

struct plan_case {
	const char *name;
	const char *old;            /* NULL: first apply */
	const char *new;
	const char *changed[4];     /* changed files, NULL-terminated */
	const char *requests[6];    /* restart requests, NULL-terminated */
	const char *expect[10];     /* "unit: actions: reason" per entry, in order */
	const char *summary;
	const char *owned[8];       /* owned unit paths (units_plan_compute_owned) */
};
#define SYSD "/etc/systemd/system/"
#define LEFT " (left by an unfinished apply)"

/* Positional and short: trailing fields left out are empty. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct plan_case plan_cases[] = {
	{ "first apply: every unit is new", NULL, BASE, {}, {},
	  { "a.service: write,enable,restart: new unit", "b.service: write,enable,restart: new unit",
	    "os.service: write,enable,restart: new unit" },
	  "restart: a.service b.service os.service" },
	{ "unchanged: nothing", BASE, BASE, {}, {},
	  { "a.service: none: unchanged", "b.service: none: unchanged", "os.service: none: unchanged" },
	  "unchanged: 3" },
	{ "new unit", BASE, WITH(UNIT_A ", " UNIT_B ", " UNIT_OS ", {name: c.service, content: C}"), {}, {},
	  { "a.service: none: unchanged", "b.service: none: unchanged", "c.service: write,enable,restart: new unit",
	    "os.service: none: unchanged" },
	  "restart: c.service; unchanged: 3" },
	{ "changed content", BASE, WITH(UNIT_A2 ", " UNIT_B ", " UNIT_OS), {}, {},
	  { "a.service: write,enable,restart: content changed", "b.service: none: unchanged",
	    "os.service: none: unchanged" },
	  "restart: a.service; unchanged: 2" },
	{ "changed drop-in", BASE, WITH(UNIT_A ", " UNIT_B ", {name: os.service, dropIns: [{name: 10-x.conf, content: Q}]}"),
	  {}, {},
	  { "a.service: none: unchanged", "b.service: none: unchanged",
	    "os.service: write,enable,restart: drop-in 10-x.conf changed" },
	  NULL },
	{ "added drop-in", BASE,
	  WITH(UNIT_A ", " UNIT_B ", {name: os.service, dropIns: [{name: 10-x.conf, content: X}, {name: 20-y.conf, content: Q}]}"),
	  {}, {},
	  { "a.service: none: unchanged", "b.service: none: unchanged",
	    "os.service: write,enable,restart: drop-in 20-y.conf added" },
	  NULL },
	{ "one of two drop-ins removed",
	  WITH("{name: os.service, dropIns: [{name: 10-x.conf, content: X}, {name: 20-y.conf, content: Q}]}"),
	  WITH(UNIT_OS), {}, {},
	  { "os.service: write,remove-dropins,enable,restart: drop-in 20-y.conf removed" }, NULL },
	{ "filePaths hit", BASE, BASE, { "/etc/b.conf" }, {},
	  { "a.service: none: unchanged", "b.service: restart: file /etc/b.conf changed", "os.service: none: unchanged" },
	  "restart: b.service; unchanged: 2" },
	{ "changed file nobody lists", BASE, BASE, { "/etc/other" }, {},
	  { "a.service: none: unchanged", "b.service: none: unchanged", "os.service: none: unchanged" }, NULL },
	{ "filePaths changed", BASE, WITH(UNIT_A ", {name: b.service, content: B, filePaths: [/etc/b.conf, /etc/b2]}, " UNIT_OS),
	  {}, {},
	  { "a.service: none: unchanged", "b.service: write,enable,restart: filePaths changed",
	    "os.service: none: unchanged" },
	  NULL },
	{ "enable false stops", BASE, WITH(UNIT_A ", {name: b.service, content: B, filePaths: [/etc/b.conf], enable: false}, " UNIT_OS),
	  {}, {},
	  { "a.service: none: unchanged", "b.service: write,disable,stop: enable changed to false",
	    "os.service: none: unchanged" },
	  "stop: b.service; unchanged: 2" },
	{ "enable unset equals true", WITH("{name: a.service, content: A}"),
	  WITH("{name: a.service, content: A, enable: true}"), {}, {}, { "a.service: none: unchanged" }, NULL },
	{ "command stop", BASE, WITH(UNIT_A ", {name: b.service, content: B, filePaths: [/etc/b.conf], command: stop}, " UNIT_OS),
	  {}, {},
	  { "a.service: none: unchanged", "b.service: write,enable,stop: command changed", "os.service: none: unchanged" },
	  NULL },
	{ "command start still restarts (as gardener-node-agent)", NULL,
	  WITH("{name: a.service, content: A, command: start}"), {}, {},
	  { "a.service: write,enable,restart: new unit" }, NULL },
	{ "new unit with enable false and command stop", NULL,
	  WITH("{name: a.service, content: A, enable: false}, {name: s.service, content: S, command: stop}"), {}, {},
	  { "a.service: write,disable,stop: new unit", "s.service: write,enable,stop: new unit" },
	  "stop: a.service s.service" },
	{ "dropped unit we created: removed", BASE, WITH(UNIT_B ", " UNIT_OS), {}, {},
	  { "b.service: none: unchanged", "os.service: none: unchanged",
	    "a.service: remove,disable,stop: dropped by the OSC" },
	  "remove: a.service; unchanged: 2" },
	{ "dropped drop-in-only OS unit: restarted, not removed", BASE, WITH(UNIT_A ", " UNIT_B), {}, {},
	  { "a.service: none: unchanged", "b.service: none: unchanged",
	    "os.service: remove-dropins,restart: dropped by the OSC (OS unit: our drop-ins removed, unit kept)" },
	  "restart: os.service; unchanged: 2" },
	{ "dropped OS unit without drop-ins: nothing", WITH("{name: os.service, command: restart}"), WITH(UNIT_A), {}, {},
	  { "a.service: write,enable,restart: new unit",
	    "os.service: none: dropped by the OSC (nothing of ours to remove)" },
	  NULL },
	{ "our unit became a drop-in-only OS unit: our file goes", WITH(UNIT_A),
	  WITH("{name: a.service, dropIns: [{name: 10-x.conf, content: X}]}"), {}, {},
	  { "a.service: write,remove,enable,restart: content removed" }, "restart: a.service" },
	{ "restart requests with and without .service", BASE, BASE, {},
	  { "kubelet", "containerd.service", "b.timer", "kubelet.service" },
	  { "a.service: none: unchanged", "b.service: none: unchanged", "os.service: none: unchanged",
	    "kubelet.service: restart,requested: restart requested",
	    "containerd.service: restart,requested: restart requested",
	    "b.timer: restart,requested: restart requested", "kubelet.service: requested: restart requested twice" },
	  "restart requested: kubelet.service containerd.service b.timer; unchanged: 3" },
	{ "restart request for a unit this apply restarts, stops or removes", BASE,
	  WITH(UNIT_A2 ", {name: b.service, content: B, filePaths: [/etc/b.conf], enable: false}"), {},
	  { "a", "b.service", "os.service", "../etc/passwd" },
	  { "a.service: write,enable,restart: content changed", "b.service: write,disable,stop: enable changed to false",
	    "os.service: remove-dropins,restart: dropped by the OSC (OS unit: our drop-ins removed, unit kept)",
	    "a.service: requested: restart requested; already restarted by this apply",
	    "b.service: requested: restart requested, but the OSC stops the unit",
	    "os.service: requested: restart requested; already restarted by this apply",
	    "../etc/passwd: requested: invalid unit name" },
	  "restart: a.service os.service; stop: b.service" },
	{ "restart request for a dropped unit of ours", BASE, WITH(UNIT_B ", " UNIT_OS), {}, { "a.service" },
	  { "b.service: none: unchanged", "os.service: none: unchanged", "a.service: remove,disable,stop: dropped by the OSC",
	    "a.service: requested: restart requested, but the OSC dropped the unit" },
	  NULL },
	{ "gardener-user units are superseded", BASE,
	  WITH(UNIT_A ", " UNIT_B ", " UNIT_OS ", {name: gardener-user.service, content: G}, "
	       "{name: gardener-user.path, content: P, command: start}"),
	  {}, { "gardener-user" },
	  { "a.service: none: unchanged", "b.service: none: unchanged",
	    "gardener-user.path: superseded: superseded by cloud-config-exec's native SSH key handling",
	    "gardener-user.service: superseded: superseded by cloud-config-exec's native SSH key handling",
	    "os.service: none: unchanged",
	    "gardener-user.service: requested,superseded: superseded by cloud-config-exec's native SSH key handling" },
	  "superseded: gardener-user.path gardener-user.service; unchanged: 3" },
	{ "gardener-node-agent's own units are superseded", BASE,
	  WITH(UNIT_A ", " UNIT_B ", " UNIT_OS ", {name: gardener-node-agent.service, content: GNA, enable: true, "
	       "filePaths: [/opt/bin/gardener-node-agent]}, {name: gardener-node-init.service, content: I, command: start}"),
	  {}, { "gardener-node-agent" },
	  { "a.service: none: unchanged", "b.service: none: unchanged",
	    "gardener-node-agent.service: superseded: superseded by node-agent and cloud-config-exec, which do "
	    "gardener-node-agent's work",
	    "gardener-node-init.service: superseded: superseded by node-agent and cloud-config-exec, which do "
	    "gardener-node-agent's work",
	    "os.service: none: unchanged",
	    "gardener-node-agent.service: requested,superseded: superseded by node-agent and cloud-config-exec, which "
	    "do gardener-node-agent's work" },
	  "superseded: gardener-node-agent.service gardener-node-init.service; unchanged: 3" },
	{ "dropped gardener-user units: nothing to remove", WITH("{name: gardener-user.service, content: G}"), WITH(UNIT_A),
	  {}, {},
	  { "a.service: write,enable,restart: new unit",
	    "gardener-user.service: superseded: superseded by cloud-config-exec's native SSH key handling" },
	  "restart: a.service" },
	{ "empty OSCs", "spec: {}", "spec: {}", {}, {}, {}, "nothing to do" },
	{ "owned files old accounts for change nothing", BASE, BASE, {}, {},
	  { "a.service: none: unchanged", "b.service: none: unchanged", "os.service: none: unchanged" }, "unchanged: 3",
	  { SYSD "a.service", SYSD "b.service", SYSD "os.service.d/10-x.conf" } },
	{ "units left by a failed apply are dropped", BASE, BASE, {}, {},
	  { "a.service: none: unchanged", "b.service: none: unchanged",
	    "os.service: write,remove-dropins,enable,restart: drop-in 20-y.conf removed" LEFT,
	    "bad.service: remove,disable,stop: dropped by the OSC" LEFT,
	    "osx.service: remove-dropins,restart: dropped by the OSC (OS unit: our drop-ins removed, unit kept)" LEFT },
	  "restart: os.service osx.service; remove: bad.service; unchanged: 2",
	  { SYSD "a.service", SYSD "bad.service", SYSD "bad.service.d/10-b.conf", SYSD "os.service.d/20-y.conf",
	    SYSD "osx.service.d/10-x.conf" } },
	{ "a unit written by a failed first apply is restarted again", NULL, WITH(UNIT_A), {}, {},
	  { "a.service: write,enable,restart: content changed" LEFT }, NULL, { SYSD "a.service" } },
	{ "owned paths that are no unit files of ours are ignored", WITH(UNIT_A), WITH(UNIT_A), {}, {},
	  { "a.service: none: unchanged" }, NULL,
	  { "/etc/b.service", SYSD "x.d/10-x.conf", SYSD "a.service.d/", SYSD "a.service.d/x", SYSD "gardener-user.service",
	    SYSD "../a.service", SYSD "sub/dir/a.service" } },
};
#pragma GCC diagnostic pop

static void parse(const char *text, struct osc *ret)
{
	struct osc_error err = {};
	int r = osc_parse(text, strlen(text), NULL, ret, &err);
	if (r < 0)
		fail_msg("osc_parse(%s): %s", text, err.message);
}

static void test_plan(void **state)
{
	const struct plan_case *c = *state;
	struct osc old = {}, new = {};
	_cleanup_units_plan_ struct units_plan *plan = NULL;
	_cleanup_free_ char *summary = NULL;
	size_t n_expect = 0;

	if (c->old)
		parse(c->old, &old);
	parse(c->new, &new);
	assert_int_equal(units_plan_compute_owned(c->old ? &old : NULL, &new, (char *const *)(uintptr_t)c->changed,
						  (char *const *)(uintptr_t)c->requests, (char *const *)(uintptr_t)c->owned,
						  &plan),
			 0);
	while (n_expect < ELEMENTSOF(c->expect) && c->expect[n_expect])
		n_expect++;
	for (size_t i = 0; i < units_plan_size(plan); i++) {
		const struct units_plan_entry *e = units_plan_get(plan, i);
		char actions[96], line[512];
		snprintf(line, sizeof(line), "%s: %s: %s", e->unit, units_actions_to_string(e->actions, actions, sizeof(actions)),
			 e->reason);
		if (i >= n_expect)
			fail_msg("%s: unexpected entry %zu '%s'", c->name, i, line);
		if (strcmp(line, c->expect[i]) != 0)
			fail_msg("%s: entry %zu\n  got      '%s'\n  expected '%s'", c->name, i, line, c->expect[i]);
	}
	assert_int_equal(units_plan_size(plan), n_expect);
	assert_null(units_plan_get(plan, n_expect));
	assert_int_equal(units_plan_format(plan, &summary), 0);
	if (c->summary && strcmp(summary, c->summary) != 0)
		fail_msg("%s: summary\n  got      '%s'\n  expected '%s'", c->name, summary, c->summary);
	osc_done(&old);
	osc_done(&new);
}

static void test_find(void **state)
{
	struct osc old = {}, new = {};
	_cleanup_units_plan_ struct units_plan *plan = NULL;
	char *requests[] = { (char *)(uintptr_t) "a", NULL };

	parse(BASE, &old);
	parse(WITH(UNIT_A2 ", " UNIT_B), &new);
	assert_int_equal(units_plan_compute(&old, &new, NULL, requests, &plan), 0);
	const struct units_plan_entry *a = units_plan_find(plan, "a.service", false);
	const struct units_plan_entry *ra = units_plan_find(plan, "a.service", true);
	const struct units_plan_entry *os = units_plan_find(plan, "os.service", false);
	assert_non_null(a);
	assert_non_null(ra);
	assert_ptr_not_equal(a, ra);
	assert_true(a->actions & UNITS_RESTART);
	assert_ptr_equal(a->old, osc_find_unit(&old, "a.service"));
	assert_ptr_equal(a->new, osc_find_unit(&new, "a.service"));
	assert_true(ra->actions & UNITS_REQUESTED);
	assert_non_null(os);
	assert_null(os->new);
	assert_null(units_plan_find(plan, "b.service", true));
	assert_null(units_plan_find(plan, "nope.service", false));
	units_plan_free(TAKE_PTR(plan));
	osc_done(&old);
	osc_done(&new);
	units_plan_free(NULL);
}

static void test_owned_paths(void **state)
{
	struct osc osc = {};
	_cleanup_strv_free_ char **paths = NULL;
	_cleanup_strv_free_ char **none = NULL;
	_cleanup_units_plan_ struct units_plan *plan = NULL;

	parse(WITH(UNIT_OS ", " UNIT_B ", {name: gardener-user.service, content: G}, " UNIT_A
		   ", {name: plain.service, enable: false}"),
	      &osc);
	assert_int_equal(units_owned_paths(&osc, &paths), 0);
	assert_non_null(paths);
	assert_string_equal(paths[0], SYSD "a.service");
	assert_string_equal(paths[1], SYSD "b.service");
	assert_string_equal(paths[2], SYSD "os.service.d/10-x.conf");
	assert_null(paths[3]);
	/* What an OSC writes is exactly what the plan of a fresh apply with
	 * those paths owned treats as known: nothing is "left over". */
	assert_int_equal(units_plan_compute_owned(&osc, &osc, NULL, NULL, paths, &plan), 0);
	for (size_t i = 0; i < units_plan_size(plan); i++)
		assert_null(strstr(units_plan_get(plan, i)->reason, "unfinished"));
	osc_done(&osc);
	parse("spec: {}", &osc);
	assert_int_equal(units_owned_paths(&osc, &none), 0);
	assert_non_null(none);
	assert_null(none[0]);
	osc_done(&osc);
}

static void test_actions_to_string(void **state)
{
	char buf[96], small[8];
	assert_string_equal(units_actions_to_string(0, buf, sizeof(buf)), "none");
	assert_string_equal(units_actions_to_string(UNITS_WRITE | UNITS_STOP, buf, sizeof(buf)), "write,stop");
	/* Truncation never overruns. */
	units_actions_to_string(UNITS_WRITE | UNITS_REMOVE | UNITS_STOP, small, sizeof(small));
	assert_true(strlen(small) < sizeof(small));
}

/* ---- units_apply() without a bus, in a scratch root ------------------- */

static int root_setup(void **state)
{
	return scratch_setup(state, "units");
}

/* Plans old -> new and applies it below the root; returns the changed units
 * joined by spaces ("" for none) in a static buffer. */
static const char *apply(struct scratch *s, const char *old_text, const char *new_text, int expect_r)
{
	static char out[512];
	struct osc old = {}, new = {};
	_cleanup_units_plan_ struct units_plan *plan = NULL;
	_cleanup_strv_free_ char **changed = NULL;
	_cleanup_free_ char *error = NULL;

	if (old_text)
		parse(old_text, &old);
	parse(new_text, &new);
	assert_int_equal(units_plan_compute(old_text ? &old : NULL, &new, NULL, NULL, &plan), 0);
	int r = units_apply(plan, s->fd, NULL, 0, &changed, &error);
	if (r != expect_r)
		fail_msg("units_apply: %d (%s), expected %d", r, error ? error : "-", expect_r);
	out[0] = 0;
	if (r < 0) {
		assert_non_null(error);
		snprintf(out, sizeof(out), "%s", error);
	} else {
		assert_null(error);
	}
	for (char **u = changed; u && *u; u++)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", out[0] ? " " : "", *u);
	osc_done(&old);
	osc_done(&new);
	return out;
}

static char *read_below(struct scratch *s, const char *path, mode_t *ret_mode)
{
	static char buf[256];
	struct stat st;
	int fd = openat(s->fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	ssize_t k = read(fd, buf, sizeof(buf) - 1);
	assert_true(k >= 0);
	buf[k] = 0;
	assert_int_equal(fstat(fd, &st), 0);
	if (ret_mode)
		*ret_mode = st.st_mode & 07777;
	close(fd);
	return buf;
}

static bool exists_below(struct scratch *s, const char *path)
{
	struct stat st;
	return fstatat(s->fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void write_below(struct scratch *s, const char *path, const char *text)
{
	int fd = openat(s->fd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

#define SYS "etc/systemd/system/"

static void test_apply_files(void **state)
{
	struct scratch *s = *state;
	mode_t mode = 0;
	struct stat st;

	/* First apply writes everything, 0644, drop-in dir 0755. */
	assert_string_equal(apply(s, NULL, BASE, 0), "a.service b.service os.service");
	assert_string_equal(read_below(s, SYS "a.service", &mode), "[Service]\nExecStart=/bin/true\n");
	assert_int_equal(mode, 0644);
	assert_string_equal(read_below(s, SYS "os.service.d/10-x.conf", &mode), "X");
	assert_int_equal(mode, 0644);
	assert_int_equal(fstatat(s->fd, SYS "os.service.d", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_false(exists_below(s, SYS "os.service"));

	/* Re-apply: nothing written, nothing changed. */
	assert_int_equal(fstatat(s->fd, SYS "a.service", &st, 0), 0);
	ino_t ino = st.st_ino;
	assert_string_equal(apply(s, BASE, BASE, 0), "");
	assert_int_equal(fstatat(s->fd, SYS "a.service", &st, 0), 0);
	assert_int_equal(st.st_ino, ino);

	/* A wrong mode (gardener-node-agent wrote 0600) is fixed, but the
	 * definition is the same: no change, so no reload and no restart. */
	assert_int_equal(fchmodat(s->fd, SYS "a.service", 0600, 0), 0);
	assert_int_equal(fchmodat(s->fd, SYS "os.service.d/10-x.conf", 0600, 0), 0);
	assert_string_equal(apply(s, BASE, BASE, 0), "");
	read_below(s, SYS "a.service", &mode);
	assert_int_equal(mode, 0644);
	read_below(s, SYS "os.service.d/10-x.conf", &mode);
	assert_int_equal(mode, 0644);

	/* One changed unit: exactly that one. */
	assert_string_equal(apply(s, BASE, WITH(UNIT_A2 ", " UNIT_B ", " UNIT_OS), 0), "a.service");
	assert_string_equal(read_below(s, SYS "a.service", NULL), "[Service]\nExecStart=/bin/false\n");

	/* Drift: an edited file of an unchanged unit is rewritten and reported. */
	write_below(s, SYS "b.service", "edited");
	assert_string_equal(apply(s, WITH(UNIT_A2 ", " UNIT_B ", " UNIT_OS), WITH(UNIT_A2 ", " UNIT_B ", " UNIT_OS), 0),
			    "b.service");
	assert_string_equal(read_below(s, SYS "b.service", NULL), "B");

	/* A foreign drop-in next to ours; then the OSC drops a.service (ours)
	 * and os.service (an OS unit): a goes with its empty .d dir, os keeps
	 * the foreign drop-in and its directory. */
	write_below(s, SYS "os.service.d/50-admin.conf", "admin");
	assert_string_equal(apply(s, NULL, WITH("{name: a.service, content: A, dropIns: [{name: 10-a.conf, content: D}]}"), 0),
			    "a.service");
	assert_true(exists_below(s, SYS "a.service.d/10-a.conf"));
	assert_string_equal(apply(s, WITH("{name: a.service, content: A, dropIns: [{name: 10-a.conf, content: D}]}, " UNIT_B
					  ", " UNIT_OS),
				  WITH(UNIT_B), 0),
			    "a.service os.service");
	assert_false(exists_below(s, SYS "a.service"));
	assert_false(exists_below(s, SYS "a.service.d"));
	assert_false(exists_below(s, SYS "os.service.d/10-x.conf"));
	assert_string_equal(read_below(s, SYS "os.service.d/50-admin.conf", NULL), "admin");

	/* gardener-user units are never written. */
	assert_string_equal(apply(s, WITH(UNIT_B), WITH(UNIT_B ", {name: gardener-user.service, content: G}"), 0), "");
	assert_false(exists_below(s, SYS "gardener-user.service"));
}

static void test_apply_dropped_files_already_gone(void **state)
{
	struct scratch *s = *state;

	/* Gardener PR #8898: a dropped unit whose files are already gone is fine. */
	assert_string_equal(apply(s, WITH(UNIT_A ", " UNIT_OS), "spec: {}", 0), "");
}

static void test_apply_refuses_symlinked_dropin_dir(void **state)
{
	struct scratch *s = *state;

	assert_string_equal(apply(s, NULL, WITH(UNIT_A), 0), "a.service");
	/* A symlink where the drop-in directory goes is not followed; the
	 * error names the unit, and the other units are still written. */
	assert_int_equal(symlinkat("/tmp", s->fd, SYS "os.service.d"), 0);
	const char *out = apply(s, NULL, WITH(UNIT_A2 ", " UNIT_OS), -EIO);
	assert_non_null(strstr(out, "os.service: creating /etc/systemd/system/os.service.d"));
	assert_string_equal(read_below(s, SYS "a.service", NULL), "[Service]\nExecStart=/bin/false\n");
}

/* An image file failed (gardener-node-agent's reconciler.go returns before
 * any unit step): every unit entry is held back with what it would have
 * done; the Node's restart requests still restart, a held unit included;
 * nothing is written below the root, no drift repaired. */
static void test_held(void **state)
{
	struct scratch *s = *state;
	struct osc old = {}, new = {};
	_cleanup_units_plan_ struct units_plan *plan = NULL;
	parse(BASE, &old);
	parse(WITH(UNIT_A2 ", " UNIT_B ", {name: c.service, content: C}"), &new);
	char bconf[] = "/etc/b.conf", ra[] = "a", rz[] = "z.service";
	char *changed_files[] = { bconf, NULL };
	char *requests[] = { ra, rz, NULL };
	assert_int_equal(units_plan_compute_held(&old, &new, changed_files, requests, NULL,
						 "an image file was not written", &plan), 0);
	const struct units_plan_entry *e = units_plan_find(plan, "a.service", false);
	assert_int_equal(e->actions, UNITS_HELD);
	assert_int_equal(e->held, UNITS_WRITE | UNITS_ENABLE | UNITS_RESTART);
	assert_string_equal(e->reason, "held back (an image file was not written): content changed");
	e = units_plan_find(plan, "b.service", false);
	assert_int_equal(e->actions, UNITS_HELD);
	assert_int_equal(e->held, UNITS_RESTART);
	e = units_plan_find(plan, "c.service", false);
	assert_int_equal(e->held, UNITS_WRITE | UNITS_ENABLE | UNITS_RESTART);
	e = units_plan_find(plan, "os.service", false); /* dropped: our drop-in would go */
	assert_int_equal(e->actions, UNITS_HELD);
	assert_int_equal(e->held, UNITS_REMOVE_DROPINS | UNITS_RESTART);
	/* a.service is not restarted by the plan any more: its request is */
	e = units_plan_find(plan, "a.service", true);
	assert_int_equal(e->actions, UNITS_REQUESTED | UNITS_RESTART);
	assert_string_equal(e->reason, "restart requested");
	e = units_plan_find(plan, "z.service", true);
	assert_int_equal(e->actions, UNITS_REQUESTED | UNITS_RESTART);
	_cleanup_free_ char *summary = NULL;
	assert_int_equal(units_plan_format(plan, &summary), 0);
	assert_string_equal(summary, "restart requested: a.service z.service; held back: a.service b.service c.service "
				     "os.service");
	char buf[96];
	assert_string_equal(units_actions_to_string(UNITS_HELD, buf, sizeof(buf)), "held");

	/* Without a bus, in a scratch root: nothing of the OSC's written, and
	 * a unit file that drifted is not repaired either. */
	assert_int_equal(mkdirat(s->fd, "etc", 0755), 0);
	assert_int_equal(mkdirat(s->fd, "etc/systemd", 0755), 0);
	assert_int_equal(mkdirat(s->fd, SYS, 0755), 0);
	int fd = openat(s->fd, SYS "b.service", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "drifted", 7), 7);
	close(fd);
	_cleanup_strv_free_ char **changed = NULL;
	_cleanup_free_ char *error = NULL;
	assert_int_equal(units_apply(plan, s->fd, NULL, 0, &changed, &error), 0);
	assert_null(changed[0]);
	assert_null(read_below(s, SYS "a.service", NULL));
	assert_null(read_below(s, SYS "c.service", NULL));
	assert_string_equal(read_below(s, SYS "b.service", NULL), "drifted");
	osc_done(&old);
	osc_done(&new);

	/* hold NULL: the plain plan */
	_cleanup_units_plan_ struct units_plan *plain = NULL;
	parse(BASE, &old);
	assert_int_equal(units_plan_compute_held(&old, &old, NULL, NULL, NULL, NULL, &plain), 0);
	assert_int_equal(units_plan_find(plain, "a.service", false)->actions, 0);
	osc_done(&old);
}

int main(void)
{
	struct CMUnitTest tests[ELEMENTSOF(plan_cases) + 8];
	size_t n = 0;

	log_open("test-units", LOG_TARGET_STDERR);
	log_set_max_level(LOG_WARNING);
	for (size_t i = 0; i < ELEMENTSOF(plan_cases); i++)
		tests[n++] = (struct CMUnitTest){ .name = plan_cases[i].name, .test_func = test_plan,
						  .initial_state = (void *)(uintptr_t)&plan_cases[i] };
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_find);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_actions_to_string);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_owned_paths);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_apply_files, root_setup, scratch_teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_apply_dropped_files_already_gone,
									 root_setup, scratch_teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_apply_refuses_symlinked_dropin_dir,
									 root_setup, scratch_teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_held, root_setup, scratch_teardown);
	return _cmocka_run_group_tests("units", tests, n, NULL, NULL);
}
