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
#include "criconfig.h"
#include "desired.h"
#include "osc.h"

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

/* readinessProbe (issue 25, item 8): when a flagged registry's hosts.toml
 * may be written. */
static void mirror_decision(void **state)
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
	if (osc_parse(yaml, strlen(yaml), "/var/lib/cloud-config-exec", &o, &e) < 0)
		fail_msg("test OSC does not parse: %s", e.message);
	const struct osc_registry *a = &o.cri.registries[0], *b = &o.cri.registries[1];
	_cleanup_free_ char *ha = NULL, *hb = NULL;
	char da[65], db[65];
	assert_int_equal(cri_render_hosts(a, &ha), 0);
	assert_int_equal(cri_render_hosts(b, &hb), 0);
	assert_int_equal(cri_hosts_digest(a, da), 0);
	assert_int_equal(cri_hosts_digest(b, db), 0);

	struct desired_ready_registry rr = { .upstream = (char *)(uintptr_t) "a.example" };
	struct desired d = { 0 };
	/* Without the flag, or an operator's apply (no desired state): at once. */
	assert_true(containerd_mirror_may_write(b, hb, db, NULL, 0, &d));
	assert_true(containerd_mirror_may_write(a, ha, da, NULL, 0, NULL));
	/* Flagged, new, not listed: waits. */
	assert_false(containerd_mirror_may_write(a, ha, da, NULL, 0, &d));
	/* Flagged, on disk another configuration: waits. */
	assert_false(containerd_mirror_may_write(a, ha, da, hb, strlen(hb), &d));
	/* Flagged, on disk exactly this one (unchanged): written before. */
	assert_true(containerd_mirror_may_write(a, ha, da, ha, strlen(ha), &d));
	/* Listed with this configuration's digest: written. */
	d.ready_registries = &rr;
	d.n_ready_registries = 1;
	memcpy(rr.sha256, da, 65);
	assert_true(containerd_mirror_may_write(a, ha, da, NULL, 0, &d));
	/* Listed for another configuration (probed before a change): waits. */
	memcpy(rr.sha256, db, 65);
	assert_false(containerd_mirror_may_write(a, ha, da, hb, strlen(hb), &d));
	osc_done(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cache_decision),
		cmocka_unit_test(cache_roundtrip),
		cmocka_unit_test(mirror_decision),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
