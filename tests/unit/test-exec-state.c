/* Unit tests for cloud-config-exec/state.c: state.json round trip and
 * rejection of malformed records, the owned-file set, and last-applied.yaml
 * recognising a torn or edited record. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../cloud-config-exec/state.h"
#include "cleanup.h"
#include "desired.h"
#include "fsx.h"
#include "scratch.h"

static void test_roundtrip(void **state)
{
	(void)state;
	struct state s = { 0 };
	s.owned_files = calloc(1, sizeof(char *));
	assert_int_equal(state_own(&s, "/b"), 1);
	assert_int_equal(state_own(&s, "/a"), 1);
	assert_int_equal(state_own(&s, "/a"), 0);
	assert_true(state_owns(&s, "/a"));
	assert_false(state_owns(&s, "/c"));
	struct state_key k[2] = { { (char *)(uintptr_t)"SHA256:x", (char *)(uintptr_t)"ssh-ed25519 AAAA c", 0 },
				  { (char *)(uintptr_t)"SHA256:y", (char *)(uintptr_t)"ssh-ed25519 BBBB", 1800000000 } };
	assert_int_equal(state_set_user(&s, "gardener", k, 2), 0);
	/* Stale keys (issue 21): kept apart from the managed ones, which a
	 * later state_set_user() replaces without touching them. */
	struct state_key st3[3] = { k[0], k[1], k[0] };
	assert_int_equal(state_set_stale(&s, "gardener", st3, 3), 0);
	assert_int_equal(state_set_user(&s, "gardener", k + 1, 1), 0);
	assert_int_equal(state_set_user(&s, "gardener", k, 2), 0);
	assert_int_equal(state_set_stale(&s, "nobody-known", NULL, 0), 0);
	assert_null(state_find_user(&s, "nobody-known"));
	memcpy(s.progress_checksum, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 65);
	s.progress_steps = STATE_STEP_FILES;
	memcpy(s.snapshot_digest, s.progress_checksum, 65);
	s.snapshot_generation = 7;
	s.owned_units = calloc(3, sizeof(char *));
	s.owned_units[0] = strdup("/etc/systemd/system/a.service");
	s.owned_units[1] = strdup("/etc/systemd/system/b.service.d/10-x.conf");

	_cleanup_free_ char *text = NULL;
	size_t len;
	assert_int_equal(state_format(&s, &text, &len), 0);
	struct state t = { 0 };
	assert_int_equal(state_parse(text, len, &t), 0);
	assert_int_equal(t.n_owned, 2);
	assert_string_equal(t.owned_files[0], "/a");
	const struct state_user *u = state_find_user(&t, "gardener");
	assert_non_null(u);
	assert_int_equal(u->n_keys, 2);
	assert_int_equal(u->keys[1].expiry, 1800000000);
	assert_int_equal(u->n_stale, 2); /* each fingerprint once */
	assert_string_equal(u->stale[0].fingerprint, "SHA256:x");
	assert_int_equal(u->stale[1].expiry, 1800000000);
	assert_string_equal(t.progress_checksum, s.progress_checksum);
	assert_int_equal(t.progress_steps, STATE_STEP_FILES);
	assert_int_equal(t.snapshot_generation, 7);
	assert_non_null(t.owned_units);
	assert_string_equal(t.owned_units[0], "/etc/systemd/system/a.service");
	assert_string_equal(t.owned_units[1], "/etc/systemd/system/b.service.d/10-x.conf");
	assert_null(t.owned_units[2]);
	_cleanup_free_ char *text2 = NULL;
	size_t len2;
	assert_int_equal(state_format(&t, &text2, &len2), 0);
	assert_string_equal(text, text2);

	assert_non_null(strstr(text, "\"staleKeys\""));
	assert_int_equal(state_set_stale(&t, "gardener", NULL, 0), 0);
	assert_int_equal(state_find_user(&t, "gardener")->n_stale, 0);
	assert_int_equal(state_find_user(&t, "gardener")->n_keys, 2);
	_cleanup_free_ char *text3 = NULL;
	assert_int_equal(state_format(&t, &text3, &len2), 0);
	assert_null(strstr(text3, "staleKeys"));

	state_disown(&t, "/a");
	assert_false(state_owns(&t, "/a"));
	assert_int_equal(t.n_owned, 1);
	state_done(&s);
	state_done(&t);
}

static void test_bad(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", "[]", "{}", "{\"version\":2}", "{\"version\":1,\"ownedFiles\":[1]}",
		"{\"version\":1,\"managedKeys\":{\"u\":[{\"fingerprint\":1}]}}",
		"{\"version\":1,\"progress\":{\"checksum\":\"short\",\"steps\":1}}",
		"{\"version\":1,\"snapshot\":{\"digest\":\"x\"}}",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct state s = { 0 };
		if (state_parse(bad[i], strlen(bad[i]), &s) >= 0)
			fail_msg("accepted: %s", bad[i]);
	}
}

static int setup(void **state)
{
	return scratch_setup(state, "exec-state");
}

static void test_last_applied(void **state)
{
	int dfd = ((struct scratch *)*state)->fd;
	char *data = NULL, sum[65];
	size_t len;
	assert_int_equal(state_load_last_applied(dfd, &data, &len, sum), -ENOENT);
	const char *osc = "spec:\n  files: []\n";
	assert_int_equal(state_save_last_applied(dfd, osc, strlen(osc)), 1);
	assert_int_equal(state_save_last_applied(dfd, osc, strlen(osc)), 0); /* unchanged: no write */
	assert_int_equal(state_load_last_applied(dfd, &data, &len, sum), 0);
	assert_string_equal(data, osc);
	char want[65];
	desired_sha256_hex(osc, strlen(osc), want);
	assert_string_equal(sum, want);
	free(data);

	/* An edited body or a truncated file is not trusted. */
	_cleanup_free_ char *raw = NULL;
	size_t raw_len;
	assert_int_equal(fsx_read_at(dfd, STATE_LAST_APPLIED, 1 << 20, &raw, &raw_len), 0);
	raw[raw_len - 2] = 'X';
	assert_true(fsx_write_atomic_at(dfd, STATE_LAST_APPLIED, raw, raw_len, 0600, FSX_UID_KEEP, FSX_GID_KEEP, 0) > 0);
	assert_int_equal(state_load_last_applied(dfd, &data, &len, sum), -EBADMSG);
	assert_true(fsx_write_atomic_at(dfd, STATE_LAST_APPLIED, raw, 30, 0600, FSX_UID_KEEP, FSX_GID_KEEP, 0) > 0);
	assert_int_equal(state_load_last_applied(dfd, &data, &len, sum), -EBADMSG);
	assert_true(fsx_write_atomic_at(dfd, STATE_LAST_APPLIED, osc, strlen(osc), 0600, FSX_UID_KEEP, FSX_GID_KEEP, 0) > 0);
	assert_int_equal(state_load_last_applied(dfd, &data, &len, sum), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_bad),
		cmocka_unit_test_setup_teardown(test_last_applied, setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
