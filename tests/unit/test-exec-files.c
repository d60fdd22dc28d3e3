/* Unit tests for cloud-config-exec/files.c: which files an apply marks as
 * changed (for unit restarts) and which it removes (only owned ones); image
 * files (content.imageRef) change only with their reference and are never
 * written, owned or removed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "../../cloud-config-exec/files.h"
#include "../../cloud-config-exec/units.h"
#include "fsx.h"
#include "log.h"
#include "osc.h"
#include "scratch.h"

struct f {
	const char *path;
	const char *content;
	mode_t mode;
	const char *image;         /* non-NULL: an image file (content "") */
	const char *path_in_image; /* "/bin" when NULL */
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
		if (t[i].image) {
			o->files[i].source = OSC_SOURCE_IMAGE;
			o->files[i].content_len = 0;
			o->files[i].image = (char *)(uintptr_t)t[i].image;
			o->files[i].path_in_image =
				(char *)(uintptr_t)(t[i].path_in_image ? t[i].path_in_image : "/bin");
		}
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

/* Table rows leave image and path_in_image out for inline files. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
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
	/* Image files: no bytes here, so the reference is what changes. */
	{ .name = "image: same reference is unchanged", .old = { { "/k", "", 0755, "hk:1" } }, .n_old = 1,
	  .new = { { "/k", "", 0755, "hk:1" } }, .n_new = 1 },
	{ .name = "image: new image reference is a change", .old = { { "/k", "", 0755, "hk:1" } }, .n_old = 1,
	  .new = { { "/k", "", 0755, "hk:2" } }, .n_new = 1, .changed = { "/k" } },
	{ .name = "image: new filePathInImage is a change", .old = { { "/k", "", 0755, "hk:1", "/kubelet" } },
	  .n_old = 1, .new = { { "/k", "", 0755, "hk:1", "/bin/kubelet" } }, .n_new = 1, .changed = { "/k" } },
	{ .name = "image: new permissions are a change", .old = { { "/k", "", 0755, "hk:1" } }, .n_old = 1,
	  .new = { { "/k", "", 0700, "hk:1" } }, .n_new = 1, .changed = { "/k" } },
	{ .name = "image: inline to image is a change", .old = { { "/k", "", 0755 } }, .n_old = 1,
	  .new = { { "/k", "", 0755, "hk:1" } }, .n_new = 1, .changed = { "/k" } },
	{ .name = "image: image to inline is a change", .old = { { "/k", "", 0755, "hk:1" } }, .n_old = 1,
	  .new = { { "/k", "", 0755 } }, .n_new = 1, .changed = { "/k" } },
	{ .name = "image: dropped, not owned, stays", .old = { { "/a", "1", 0 }, { "/k", "", 0755, "hk:1" } },
	  .n_old = 2, .new = { { "/a", "1", 0 } }, .n_new = 1, .owned = { "/a" }, .changed = { "/k" } },
	{ .name = "image: an owned path that is now an image file is not removed",
	  .old = { { "/k", "x", 0755 } }, .n_old = 1, .new = { { "/k", "", 0755, "hk:1" } }, .n_new = 1,
	  .owned = { "/k" }, .changed = { "/k" } },
	{ .name = "image: first apply", .no_old = true, .new = { { "/a", "1", 0 }, { "/k", "", 0755, "hk:1" } },
	  .n_new = 2, .changed = { "/a", "/k" } },
};
#pragma GCC diagnostic pop

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

/* Reads root/rel into buf (NUL-terminated); -errno when it cannot. */
static int read_rel(int rootfd, const char *rel, char *buf, size_t size)
{
	int fd = openat(rootfd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	return 0;
}

static void put_rel(int rootfd, const char *rel, const char *content)
{
	int fd = openat(rootfd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0755);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

/* files_apply in a scratch root: image files are not written here (the
 * images step does); one absent before is owned (the images step creates
 * it) and removed when dropped, one the OS image provided is neither; an
 * owned file that became an image file stays owned; gardener-node-agent's
 * binary (superseded) is never owned; inline files still work. */
static void test_apply_image_files(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* files are written root:root */
	char dir[] = "/tmp/test-exec-files.XXXXXX";
	assert_non_null(mkdtemp(dir));
	int rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(rootfd >= 0);
	assert_int_equal(mkdirat(rootfd, "opt", 0755), 0);
	assert_int_equal(mkdirat(rootfd, "opt/bin", 0755), 0);
	assert_int_equal(mkdirat(rootfd, "state", 0755), 0);
	int statefd = openat(rootfd, "state", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(statefd >= 0);
	put_rel(rootfd, "opt/bin/kubelet", "os-image kubelet");
	put_rel(rootfd, "opt/bin/tool", "written by us while inline");

	static const struct f v1[] = {
		{ "/etc/a", "inline a", 0644, NULL, NULL },
		{ "/opt/bin/absent", "", 0755, "img:1", "/absent" },
		{ "/opt/bin/gardener-node-agent", "", 0755, "gna:1", "/gardener-node-agent" },
		{ "/opt/bin/kubelet", "", 0755, "hyperkube:v1.31.1", "/kubelet" },
		{ "/opt/bin/tool", "", 0755, "tools:1", "/tool" },
	};
	struct osc o1;
	build(&o1, v1, ELEMENTSOF(v1));
	struct state st = { 0 };
	assert_int_equal(state_load(statefd, &st), 0);
	assert_int_equal(state_own(&st, "/opt/bin/tool"), 1);
	struct files_plan p = { 0 };
	assert_int_equal(files_plan_compute(NULL, &o1, st.owned_files, &p), 0);
	char **written = NULL;
	assert_int_equal(files_apply(rootfd, &o1, &p, &st, statefd, &written), 0);
	files_plan_done(&p);

	char buf[256];
	assert_non_null(written);
	assert_int_equal(len(written), 1);
	assert_string_equal(written[0], "/etc/a");
	strv_free(written);
	assert_int_equal(read_rel(rootfd, "etc/a", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "inline a");
	assert_int_equal(read_rel(rootfd, "opt/bin/kubelet", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "os-image kubelet"); /* not written over */
	assert_int_equal(read_rel(rootfd, "opt/bin/tool", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "written by us while inline");
	assert_int_equal(read_rel(rootfd, "opt/bin/absent", buf, sizeof(buf)), -ENOENT); /* not created */
	assert_true(state_owns(&st, "/etc/a"));
	assert_false(state_owns(&st, "/opt/bin/kubelet"));
	assert_true(state_owns(&st, "/opt/bin/absent")); /* the images step creates it */
	assert_false(state_owns(&st, "/opt/bin/gardener-node-agent"));
	assert_true(state_owns(&st, "/opt/bin/tool")); /* still ours */
	/* ... and that is what state.json says. */
	struct state saved = { 0 };
	assert_int_equal(state_load(statefd, &saved), 0);
	assert_true(state_owns(&saved, "/etc/a"));
	assert_true(state_owns(&saved, "/opt/bin/tool"));
	assert_true(state_owns(&saved, "/opt/bin/absent"));
	assert_false(state_owns(&saved, "/opt/bin/kubelet"));
	state_done(&saved);

	/* v2 drops every image file: ours go (the one the images step would
	 * have created, the one that was inline), the OS image's stays. */
	static const struct f v2[] = { { "/etc/a", "inline a", 0644, NULL, NULL } };
	struct osc o2;
	build(&o2, v2, ELEMENTSOF(v2));
	assert_int_equal(files_plan_compute(&o1, &o2, st.owned_files, &p), 0);
	assert_int_equal(len(p.remove), 2);
	assert_string_equal(p.remove[0], "/opt/bin/absent");
	assert_string_equal(p.remove[1], "/opt/bin/tool");
	assert_int_equal(len(p.changed), 4);
	assert_int_equal(files_apply(rootfd, &o2, &p, &st, statefd, &written), 0);
	assert_int_equal(len(written), 0);
	strv_free(written);
	files_plan_done(&p);
	assert_int_equal(read_rel(rootfd, "opt/bin/kubelet", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "os-image kubelet");
	assert_int_equal(read_rel(rootfd, "opt/bin/tool", buf, sizeof(buf)), -ENOENT);
	assert_false(state_owns(&st, "/opt/bin/tool"));
	assert_false(state_owns(&st, "/opt/bin/absent"));

	state_done(&st);
	free(o1.files);
	free(o2.files);
	close(statefd);
	close(rootfd);
	/* Clean up the scratch root. */
	static const char *const rm[] = { "etc/a", "opt/bin/kubelet", "opt/bin/tool", "state/state.json" };
	for (size_t i = 0; i < ELEMENTSOF(rm); i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", dir, rm[i]);
		(void)unlink(path);
	}
	static const char *const rmd[] = { "etc", "opt/bin", "opt", "state", "" };
	for (size_t i = 0; i < ELEMENTSOF(rmd); i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", dir, rmd[i]);
		assert_int_equal(rmdir(path), 0);
	}
}

/* 022 found it: a run toward v1 (which has /etc/d) owns /etc/d, creates its
 * temporary and is killed before the rename; the next run goes back to v2
 * (last applied, without /etc/d), so the plan names /etc/d only as owned and
 * dropped. Removing it must take its temporary along before disowning it,
 * or nothing claims the temporary again. Another file's temporary, and a
 * file that merely looks like one, stay. */
static void test_remove_dropped_takes_its_temporaries(void **state)
{
	if (geteuid() != 0)
		skip(); /* as test_apply_image_files */
	int rootfd = ((struct scratch *)*state)->fd;
	assert_int_equal(mkdirat(rootfd, "etc", 0755), 0);
	assert_int_equal(mkdirat(rootfd, "state", 0755), 0);
	_cleanup_close_ int statefd = openat(rootfd, "state", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(statefd >= 0);
	put_rel(rootfd, "etc/.#d.c61fbf2d92a3aa6d", "half of d");
	put_rel(rootfd, "etc/.#a.0123456789abcdef", "someone's write of a");
	put_rel(rootfd, "etc/.#d.not-a-temporary", "not fsx's name");

	static const struct f v2[] = { { "/etc/a", "inline a", 0644, NULL, NULL } };
	struct osc o2;
	build(&o2, v2, ELEMENTSOF(v2));
	struct state st = { 0 };
	assert_int_equal(state_load(statefd, &st), 0);
	assert_int_equal(state_own(&st, "/etc/d"), 1);
	struct files_plan p = { 0 };
	assert_int_equal(files_plan_compute(&o2, &o2, st.owned_files, &p), 0);
	assert_int_equal(len(p.changed), 0);
	assert_int_equal(len(p.remove), 1);
	assert_string_equal(p.remove[0], "/etc/d");
	assert_int_equal(files_remove_dropped(rootfd, &p, &st, statefd), 0);
	files_plan_done(&p);

	char buf[64];
	assert_int_equal(read_rel(rootfd, "etc/.#d.c61fbf2d92a3aa6d", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(read_rel(rootfd, "etc/.#a.0123456789abcdef", buf, sizeof(buf)), 0);
	assert_int_equal(read_rel(rootfd, "etc/.#d.not-a-temporary", buf, sizeof(buf)), 0);
	assert_false(state_owns(&st, "/etc/d"));
	state_done(&st);
	free(o2.files);
}

static int setup(void **state)
{
	return scratch_setup(state, "exec-files");
}

/* A unit whose filePaths name an image file restarts only when the image
 * reference changes: the files plan feeds the units plan. */
static const char *kubelet_actions(const char *old_image, const char *new_image, char *buf, size_t size)
{
	static const char fmt[] =
		"spec:\n"
		"  files:\n"
		"  - {path: /opt/bin/kubelet, permissions: 493, content: {imageRef: {image: '%s', filePathInImage: /kubelet}}}\n"
		"  units:\n"
		"  - {name: kubelet.service, content: x, filePaths: [/opt/bin/kubelet]}\n";
	char a[512], b[512];
	snprintf(a, sizeof(a), fmt, old_image);
	snprintf(b, sizeof(b), fmt, new_image);
	struct osc old = {}, new = {};
	struct osc_error err;
	if (osc_parse(a, strlen(a), NULL, &old, &err) < 0 || osc_parse(b, strlen(b), NULL, &new, &err) < 0)
		fail_msg("%s", err.message);
	struct files_plan p = { 0 };
	assert_int_equal(files_plan_compute(&old, &new, NULL, &p), 0);
	_cleanup_units_plan_ struct units_plan *plan = NULL;
	assert_int_equal(units_plan_compute_owned(&old, &new, p.changed, NULL, NULL, &plan), 0);
	const struct units_plan_entry *e = units_plan_find(plan, "kubelet.service", false);
	assert_non_null(e);
	units_actions_to_string(e->actions, buf, size);
	files_plan_done(&p);
	osc_done(&old);
	osc_done(&new);
	return buf;
}

static void test_image_ref_restarts(void **state)
{
	(void)state;
	char buf[96];
	assert_string_equal(kubelet_actions("hyperkube:v1.31.1", "hyperkube:v1.31.1", buf, sizeof(buf)), "none");
	assert_string_equal(kubelet_actions("hyperkube:v1.31.1", "hyperkube:v1.31.2", buf, sizeof(buf)), "restart");
}

int main(void)
{
	log_open("test-exec-files", LOG_TARGET_STDERR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_apply_image_files),
		cmocka_unit_test_setup_teardown(test_remove_dropped_takes_its_temporaries, setup, scratch_teardown),
		cmocka_unit_test(test_image_ref_restarts),
		cmocka_unit_test(test_strv_add_sorted_unique),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
