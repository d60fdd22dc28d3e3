/* Unit tests for cloud-config-exec/keymerge.c: managed vs unmanaged lines,
 * exclusive mode, expiry, and the shrink guard. Fingerprints here are
 * opaque labels: the merge compares them, it never parses keys. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../cloud-config-exec/keymerge.h"
#include "cleanup.h"

#define NOW 1800000000
#define K(fp, exp) { (char *)(uintptr_t)(fp), (char *)(uintptr_t)("key-" fp), (exp) }

/* The existing file: each line "key-FP" is a key with fingerprint FP,
 * anything else is not a key. */
static size_t classify(const char *text, struct keymerge_line **ret)
{
	int n = keymerge_split(text, strlen(text), ret);
	assert_true(n >= 0);
	static char fps[32][32];
	for (int i = 0; i < n; i++) {
		struct keymerge_line *l = &(*ret)[i];
		if (l->len > 4 && memcmp(l->text, "key-", 4) == 0 && l->len - 4 < sizeof(fps[i])) {
			memcpy(fps[i], l->text + 4, l->len - 4);
			fps[i][l->len - 4] = '\0';
			l->fingerprint = fps[i];
		}
	}
	return (size_t)n;
}

struct tcase {
	const char *name;
	const char *file;
	struct state_key prev[4];
	size_t n_prev;
	struct state_key want[4];
	size_t n_want;
	struct state_key stale[2];
	size_t n_stale;
	bool exclusive, ssh_off;
	const char *expect;
	bool refused;
	unsigned added, dropped, expired;
};

static const struct tcase cases[] = {
	{ .name = "first apply into an empty file", .file = "", .want = { K("A", 0), K("B", 0) }, .n_want = 2,
	  .expect = "key-A\nkey-B\n", .added = 2 },
	{ .name = "user's keys and comments are kept, ours appended",
	  .file = "# mine\nkey-U\n\nssh-rsa garbage\n", .want = { K("A", 0) }, .n_want = 1,
	  .expect = "# mine\nkey-U\n\nssh-rsa garbage\nkey-A\n", .added = 1 },
	{ .name = "rotation: previous managed key replaced, user's key untouched",
	  .file = "key-U\nkey-A\nkey-B\n", .prev = { K("A", 0), K("B", 0) }, .n_prev = 2,
	  .want = { K("C", 0), K("A", 0) }, .n_want = 2, .expect = "key-U\nkey-C\nkey-A\n", .added = 1,
	  .dropped = 1 },
	{ .name = "exclusive drops everything not managed", .file = "key-U\n# c\nkey-A\n",
	  .prev = { K("A", 0) }, .n_prev = 1, .want = { K("A", 0) }, .n_want = 1, .exclusive = true,
	  .expect = "key-A\n" },
	{ .name = "a user copy of a wanted key is taken over, not duplicated", .file = "key-A\n",
	  .want = { K("A", 0) }, .n_want = 1, .expect = "key-A\n", .added = 1 },
	{ .name = "expired wanted key is not written", .file = "", .want = { K("A", 0), K("E", NOW - 1) },
	  .n_want = 2, .expect = "key-A\n", .added = 1, .expired = 1 },
	{ .name = "a managed key expires and is dropped (not a shrink)", .file = "key-A\nkey-E\n",
	  .prev = { K("A", 0), K("E", NOW) }, .n_prev = 2, .want = { K("A", 0), K("E", NOW) }, .n_want = 2,
	  .expect = "key-A\n", .expired = 1 },
	{ .name = "future expiry is kept", .file = "", .want = { K("F", NOW + 60) }, .n_want = 1,
	  .expect = "key-F\n", .added = 1 },
	{ .name = "empty set refused: last good keys stay", .file = "key-U\nkey-A\nkey-B\n",
	  .prev = { K("A", 0), K("B", 0) }, .n_prev = 2, .n_want = 0, .expect = "key-U\nkey-A\nkey-B\n",
	  .refused = true },
	{ .name = "empty set applied when SSH is disabled", .file = "key-U\nkey-A\nkey-B\n",
	  .prev = { K("A", 0), K("B", 0) }, .n_prev = 2, .n_want = 0, .ssh_off = true, .expect = "key-U\n",
	  .dropped = 2 },
	{ .name = "drastic shrink 4 -> 1 refused", .file = "",
	  .prev = { K("A", 0), K("B", 0), K("C", 0), K("D", 0) }, .n_prev = 4, .want = { K("A", 0) }, .n_want = 1,
	  .expect = "key-A\nkey-B\nkey-C\nkey-D\n", .refused = true },
	{ .name = "shrink 4 -> 2 (half) allowed", .file = "",
	  .prev = { K("A", 0), K("B", 0), K("C", 0), K("D", 0) }, .n_prev = 4, .want = { K("A", 0), K("B", 0) },
	  .n_want = 2, .expect = "key-A\nkey-B\n", .dropped = 2 },
	{ .name = "refused set still loses expired keys", .file = "",
	  .prev = { K("A", 0), K("E", NOW - 5) }, .n_prev = 2, .n_want = 0, .expect = "key-A\n", .refused = true,
	  .expired = 1 },
	{ .name = "duplicate wanted fingerprints written once", .file = "", .want = { K("A", 0), K("A", 0) },
	  .n_want = 2, .expect = "key-A\n", .added = 1 },
	/* Issue 21: keys dropped while the file could not be rewritten are no
	 * longer managed (revoked at once) but still ours in the file. */
	{ .name = "stale keys (dropped while the file was stuck) are removed, not kept as the user's",
	  .file = "key-U\nkey-A\nkey-P\nkey-Q\n", .prev = { K("A", 0) }, .n_prev = 1, .stale = { K("P", 0), K("Q", 0) },
	  .n_stale = 2, .want = { K("A", 0) }, .n_want = 1, .expect = "key-U\nkey-A\n" },
	{ .name = "last line without newline is kept", .file = "key-U", .want = { K("A", 0) }, .n_want = 1,
	  .expect = "key-U\nkey-A\n", .added = 1 },
};

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		const struct tcase *t = &cases[i];
		_cleanup_free_ struct keymerge_line *lines = NULL;
		size_t n = classify(t->file, &lines);
		struct state_user prev = { .user = (char *)(uintptr_t)"u",
					   .keys = (struct state_key *)(uintptr_t)t->prev, .n_keys = t->n_prev,
					   .stale = (struct state_key *)(uintptr_t)t->stale, .n_stale = t->n_stale };
		struct keymerge_params p = { .exclusive = t->exclusive, .ssh_access = !t->ssh_off, .max_shrink = 0.5,
					     .now = NOW };
		struct keymerge_result r = { 0 };
		assert_int_equal(keymerge_compute(lines, n, t->n_prev || t->n_stale ? &prev : NULL, t->want, t->n_want, &p, &r), 0);
		if (strcmp(r.content, t->expect) != 0)
			fail_msg("%s: got\n%s\nwant\n%s", t->name, r.content, t->expect);
		if (r.refused != t->refused || r.added != t->added || r.dropped != t->dropped || r.expired != t->expired)
			fail_msg("%s: refused %d added %u dropped %u expired %u", t->name, r.refused, r.added, r.dropped,
				 r.expired);
		keymerge_result_done(&r);
	}
}

static void test_shrink_rule(void **state)
{
	(void)state;
	assert_false(keymerge_shrink_refused(0, 0, 0.5, true));  /* nothing managed yet */
	assert_true(keymerge_shrink_refused(1, 0, 0.5, true));   /* empty */
	assert_false(keymerge_shrink_refused(1, 0, 0.5, false)); /* SSH disabled */
	assert_false(keymerge_shrink_refused(2, 1, 0.5, true));  /* rotation drops one of two */
	assert_true(keymerge_shrink_refused(10, 4, 0.5, true));
	assert_false(keymerge_shrink_refused(10, 5, 0.5, true));
	assert_false(keymerge_shrink_refused(3, 3, 0.0, true)); /* replacement is no shrink */
	assert_true(keymerge_shrink_refused(3, 2, 0.0, true));
	assert_false(keymerge_shrink_refused(3, 1, 1.0, true));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_shrink_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
