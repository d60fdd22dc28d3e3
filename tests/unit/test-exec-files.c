/* Unit tests for cloud-config-exec/files.c: which files an apply marks as
 * changed (for unit restarts) and which it removes (only owned ones). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "../../cloud-config-exec/files.h"
#include "osc.h"

struct f {
	const char *path;
	const char *content;
	mode_t mode;
};

/* Builds a model from a sorted table (the parser's invariant). */
static void build(struct osc *o, const struct f *t, size_t n)
{
	memset(o, 0, sizeof(*o));
	o->files = calloc(n + 1, sizeof(*o->files));
	o->n_files = n;
	for (size_t i = 0; i < n; i++) {
		o->files[i].path = (char *)(uintptr_t)t[i].path;
		o->files[i].content = (unsigned char *)(uintptr_t)t[i].content;
		o->files[i].content_len = strlen(t[i].content);
		o->files[i].mode = t[i].mode ? t[i].mode : 0600;
	}
}

static size_t len(char **v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

static bool has(char **v, const char *s)
{
	for (; v && *v; v++)
		if (strcmp(*v, s) == 0)
			return true;
	return false;
}

struct tcase {
	const char *name;
	struct f old[4];
	size_t n_old;
	bool no_old;
	struct f new[4];
	size_t n_new;
	const char *owned[4];
	const char *changed[5];
	const char *removed[4];
};

static const struct tcase cases[] = {
	{ .name = "first apply: everything changed, nothing removed", .no_old = true,
	  .new = { { "/a", "1", 0 }, { "/b", "2", 0 } }, .n_new = 2,
	  .changed = { "/a", "/b", 0 } },
	{ .name = "identical: nothing", .old = { { "/a", "1", 0 }, { "/b", "2", 0 } }, .n_old = 2,
	  .new = { { "/a", "1", 0 }, { "/b", "2", 0 } }, .n_new = 2, .owned = { "/a", "/b", 0 } },
	{ .name = "one content change", .old = { { "/a", "1", 0 }, { "/b", "2", 0 } }, .n_old = 2,
	  .new = { { "/a", "1", 0 }, { "/b", "3", 0 } }, .n_new = 2, .owned = { "/a", "/b", 0 }, .changed = { "/b" } },
	{ .name = "mode change is a change", .old = { { "/a", "1", 0644 } }, .n_old = 1,
	  .new = { { "/a", "1", 0755 } }, .n_new = 1, .changed = { "/a" } },
	{ .name = "dropped owned file is removed", .old = { { "/a", "1", 0 }, { "/b", "2", 0 } }, .n_old = 2,
	  .new = { { "/a", "1", 0 } }, .n_new = 1, .owned = { "/a", "/b", 0 }, .changed = { "/b" },
	  .removed = { "/b" } },
	{ .name = "dropped foreign file stays", .old = { { "/a", "1", 0 }, { "/etc/hosts", "x", 0 } }, .n_old = 2,
	  .new = { { "/a", "1", 0 } }, .n_new = 1, .owned = { "/a" }, .changed = { "/etc/hosts" } },
	{ .name = "no last-applied record: owned files still removed", .no_old = true,
	  .new = { { "/a", "1", 0 } }, .n_new = 1, .owned = { "/a", "/gone", 0 }, .changed = { "/a" },
	  .removed = { "/gone" } },
	{ .name = "added file", .old = { { "/a", "1", 0 } }, .n_old = 1,
	  .new = { { "/a", "1", 0 }, { "/c", "new", 0 } }, .n_new = 2, .owned = { "/a" }, .changed = { "/c" } },
	{ .name = "empty content vs missing", .old = { { "/a", "", 0 } }, .n_old = 1,
	  .new = { { "/a", "", 0 } }, .n_new = 1, .owned = { "/a" } },
};

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		const struct tcase *t = &cases[i];
		struct osc old, new;
		build(&old, t->old, t->n_old);
		build(&new, t->new, t->n_new);
		char *owned[5] = { 0 };
		for (size_t j = 0; j < 4 && t->owned[j]; j++)
			owned[j] = (char *)(uintptr_t)t->owned[j];
		struct files_plan p = { 0 };
		assert_int_equal(files_plan_compute(t->no_old ? NULL : &old, &new, owned, &p), 0);
		size_t nc = 0, nr = 0;
		while (nc < 5 && t->changed[nc])
			nc++;
		while (nr < 4 && t->removed[nr])
			nr++;
		if (len(p.changed) != nc || len(p.remove) != nr)
			fail_msg("%s: %zu changed (want %zu), %zu removed (want %zu)", t->name, len(p.changed), nc,
				 len(p.remove), nr);
		for (size_t j = 0; j < nc; j++)
			if (!has(p.changed, t->changed[j]))
				fail_msg("%s: %s not marked changed", t->name, t->changed[j]);
		for (size_t j = 0; j < nr; j++)
			if (!has(p.remove, t->removed[j]))
				fail_msg("%s: %s not removed", t->name, t->removed[j]);
		files_plan_done(&p);
		free(old.files);
		free(new.files);
	}
}

static void test_strv_add_sorted_unique(void **state)
{
	(void)state;
	_cleanup_strv_free_ char **v = NULL;
	assert_int_equal(files_strv_add(&v, "/b"), 1);
	assert_int_equal(files_strv_add(&v, "/a"), 1);
	assert_int_equal(files_strv_add(&v, "/c"), 1);
	assert_int_equal(files_strv_add(&v, "/a"), 0);
	assert_int_equal(len(v), 3);
	assert_string_equal(v[0], "/a");
	assert_string_equal(v[1], "/b");
	assert_string_equal(v[2], "/c");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_strv_add_sorted_unique),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
