/* Unit tests for cloud-config-exec/containerd.c's version cache (issue 27):
 * containerd_cached_version() answers only for the very binary the version
 * was learnt from, and state.json keeps the cache across runs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../cloud-config-exec/containerd.h"
#include "../../cloud-config-exec/state.h"
#include "cleanup.h"

static struct stat binary(void)
{
	struct stat st = { 0 };
	st.st_mode = S_IFREG | 0755;
	st.st_dev = 2049;
	st.st_ino = 1234567;
	st.st_size = 52428800;
	st.st_mtim.tv_sec = 1700000000;
	st.st_mtim.tv_nsec = 123456789;
	st.st_ctim.tv_sec = 1700000100;
	st.st_ctim.tv_nsec = 5;
	return st;
}

static void learn(struct state *s, const struct stat *st, const char *version)
{
	char stamp[STATE_STAMP_MAX];
	state_stamp(st, stamp);
	s->containerd_stamp = strdup(stamp);
	s->containerd_version = strdup(version);
	assert_non_null(s->containerd_stamp);
	assert_non_null(s->containerd_version);
}

static void cache_decision(void **unused)
{
	(void)unused;
	struct state s = { 0 };
	struct stat st = binary();
	assert_null(containerd_cached_version(&s, &st)); /* nothing learnt yet */
	learn(&s, &st, "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3");
	assert_string_equal(containerd_cached_version(&s, &st),
			    "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3");

	/* any change of the binary: asked again */
	struct stat x;
	x = st, x.st_ino++;
	assert_null(containerd_cached_version(&s, &x)); /* replaced (package upgrade: new inode) */
	x = st, x.st_dev++;
	assert_null(containerd_cached_version(&s, &x)); /* another file system */
	x = st, x.st_size++;
	assert_null(containerd_cached_version(&s, &x)); /* rewritten in place */
	x = st, x.st_mtim.tv_nsec++;
	assert_null(containerd_cached_version(&s, &x));
	x = st, x.st_ctim.tv_sec++;
	assert_null(containerd_cached_version(&s, &x)); /* in-place rewrite with mtime set back */
	x = st, x.st_mode = S_IFLNK | 0777;
	assert_null(containerd_cached_version(&s, &x)); /* not a regular file */
	x = st, x.st_atim.tv_sec++;
	assert_non_null(containerd_cached_version(&s, &x)); /* reading it changes nothing */
	state_done(&s);
}

static void cache_roundtrip(void **unused)
{
	(void)unused;
	struct state s = { 0 }, back = { 0 };
	s.owned_files = calloc(1, sizeof(char *));
	struct stat st = binary();
	learn(&s, &st, "containerd containerd.io v2.0.2 c507a0257ea6462fbd6f5ba4f5c74facb04021f4");
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	assert_int_equal(state_format(&s, &text, &len), 0);
	assert_int_equal(state_parse(text, len, &back), 0);
	assert_string_equal(back.containerd_stamp, s.containerd_stamp);
	assert_string_equal(back.containerd_version, s.containerd_version);
	/* nanoseconds survive (cJSON numbers would not: they are doubles) */
	assert_non_null(strstr(back.containerd_stamp, "1700000000.123456789"));
	assert_non_null(containerd_cached_version(&back, &st));
	state_done(&back);

	/* a malformed cache is dropped, not a reason to refuse the record */
	_cleanup_free_ char *good = NULL;
	size_t glen = 0;
	struct state empty = { 0 };
	empty.owned_files = calloc(1, sizeof(char *));
	assert_int_equal(state_format(&empty, &good, &glen), 0);
	state_done(&empty);
	/* use the real version number of the record format */
	char *v = strstr(good, "\"version\":");
	assert_non_null(v);
	_cleanup_free_ char *doc = NULL;
	assert_true(asprintf(&doc, "{%.*s,\"containerd\":{\"binary\":5,\"version\":\"x\"}}",
			     (int)strcspn(v, ",}\n"), v) > 0);
	assert_int_equal(state_parse(doc, strlen(doc), &back), 0);
	assert_null(back.containerd_stamp);
	assert_null(back.containerd_version);
	state_done(&back);
	state_done(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cache_decision),
		cmocka_unit_test(cache_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
