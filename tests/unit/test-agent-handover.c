/* Unit tests for agent/handover.c in a scratch state directory: desired.json
 * is written only when its content changed (the generation bumps on every
 * write), a failed write backs off (1 s doubled, at most 30 s), an earlier
 * run's file is picked up again (generation, checksum, OSC, restart request)
 * so it is not rewritten, and an interrupted write's temporaries are
 * removed, the other files left alone. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "desired.h"
#include "fsx.h"
#include "log.h"
#include "scratch.h"
#include "../../agent/handover.h"

#define SD "/var/lib/node-agent"
#define OSC1 "spec: {files: []}\n"
#define OSC2 "spec: {files: [], units: []}\n"

static char kubelet[] = "kubelet.service", containerd[] = "containerd.service";
static char *units[] = { kubelet, NULL };
static char osc1[] = OSC1, osc2[] = OSC2;
static char r1[] = "r1", r7[] = "r7", r8[] = "r8";

static struct desired doc(char *osc)
{
	struct desired d = {
		.osc = osc,
		.osc_len = strlen(osc),
		.ssh_access = true,
		.generation = 12345, /* ignored */
	};
	desired_sha256_hex(osc, strlen(osc), d.checksum);
	return d;
}

/* desired.json as on disk, parsed. */
static struct desired on_disk(int dfd)
{
	char *data = NULL;
	size_t len;
	struct desired d;
	assert_int_equal(fsx_read_at(dfd, HANDOVER_FILE, DESIRED_MAX, &data, &len), 0);
	assert_int_equal(desired_parse(data, len, &d, NULL), 0);
	free(data);
	return d;
}

static void writes_changes_only(void **state)
{
	struct scratch *s = *state;
	struct handover h = {};
	char why[256] = "";
	struct desired d = doc(osc1);
	assert_int_equal(handover_write(&h, s->fd, SD, &d, 1000, why, sizeof(why)), 1);
	assert_int_equal(h.generation, 1);
	assert_string_equal(h.checksum, d.checksum);
	assert_non_null(h.osc);
	assert_ptr_not_equal(h.osc, d.osc); /* a copy */
	assert_string_equal(h.osc, OSC1);
	struct desired f = on_disk(s->fd);
	assert_int_equal(f.generation, 1);
	assert_string_equal(f.osc, OSC1);
	desired_done(&f);

	/* The same content again: nothing written. */
	assert_int_equal(handover_write(&h, s->fd, SD, &d, 2000, why, sizeof(why)), 0);
	assert_int_equal(h.generation, 1);

	/* A restart request is a change; the OSC in force is kept as it is. */
	d.osc = h.osc;
	d.restart_id = r1;
	d.restart_units = units;
	char *in_force = h.osc;
	assert_int_equal(handover_write(&h, s->fd, SD, &d, 3000, why, sizeof(why)), 1);
	assert_int_equal(h.generation, 2);
	assert_ptr_equal(h.osc, in_force);
	f = on_disk(s->fd);
	assert_int_equal(f.generation, 2);
	assert_string_equal(f.restart_id, "r1");
	assert_string_equal(f.restart_units[0], "kubelet.service");
	desired_done(&f);

	/* A new OSC. */
	struct desired d2 = doc(osc2);
	assert_int_equal(handover_write(&h, s->fd, SD, &d2, 4000, why, sizeof(why)), 1);
	assert_int_equal(h.generation, 3);
	assert_string_equal(h.osc, OSC2);
	assert_string_equal(h.checksum, d2.checksum);
	assert_string_equal(why, "");
	handover_done(&h);
	assert_null(h.osc);
	assert_null(h.key);
}

/* A write starts the wait for the executor; a rewrite puts the same bytes
 * in a new file (what a path unit that missed the write sees as a change). */
static void rewrite_is_the_same_bytes_in_a_new_file(void **state)
{
	struct scratch *s = *state;
	struct handover h = {};
	char why[256] = "";
	struct desired d = doc(osc1);
	assert_int_equal(handover_write(&h, s->fd, SD, &d, 1000, why, sizeof(why)), 1);
	assert_int_equal(h.pickup.want, 1);
	assert_int_equal(h.pickup.next_ms, 1000 + PICKUP_FIRST_MS);
	char *before = NULL, *after = NULL;
	size_t blen, alen;
	struct stat st1, st2;
	assert_int_equal(fsx_read_at(s->fd, HANDOVER_FILE, DESIRED_MAX, &before, &blen), 0);
	assert_int_equal(fstatat(s->fd, HANDOVER_FILE, &st1, 0), 0);
	handover_rewrite(s->fd, SD);
	assert_int_equal(fsx_read_at(s->fd, HANDOVER_FILE, DESIRED_MAX, &after, &alen), 0);
	assert_int_equal(fstatat(s->fd, HANDOVER_FILE, &st2, 0), 0);
	assert_int_equal(alen, blen);
	assert_memory_equal(after, before, blen);
	assert_int_not_equal(st1.st_ino, st2.st_ino);
	assert_int_equal(st2.st_mode & 07777, 0600);
	free(before);
	free(after);
	/* Nothing to rewrite: logged, nothing created. */
	assert_int_equal(unlinkat(s->fd, HANDOVER_FILE, 0), 0);
	handover_rewrite(s->fd, SD);
	assert_int_equal(faccessat(s->fd, HANDOVER_FILE, F_OK, 0), -1);
	handover_forget(&h);
	assert_int_equal(h.pickup.want, 0);
	handover_done(&h);
}

static void invalid_is_not_written(void **state)
{
	struct scratch *s = *state;
	struct handover h = {};
	char why[256] = "";
	struct desired d = doc(osc1);
	d.checksum[0] = d.checksum[0] == '0' ? '1' : '0'; /* not the OSC's */
	assert_int_equal(handover_write(&h, s->fd, SD, &d, 1000, why, sizeof(why)), -EBADMSG);
	assert_non_null(strstr(why, "cannot format the desired state: "));
	assert_int_equal(h.generation, 0);
	assert_int_equal(h.wake_at, 0);
	assert_int_equal(faccessat(s->fd, HANDOVER_FILE, F_OK, 0), -1);
	handover_done(&h);
}

static uint64_t longest(void *ctx, uint64_t n)
{
	(void)ctx;
	return n ? n - 1 : 0;
}

static void failed_write_backs_off(void **state)
{
	struct scratch *s = *state;
	struct handover h = {};
	char why[256] = "";
	struct desired d = doc(osc1);
	/* The longest wait each draw allows: the ceiling, 1 s doubling
	 * every 2 s of the condition up to 30 s. */
	h.retry.random = longest;
	static const uint64_t delays[] = { 1000, 2000, 4000, 8000, 16000, 30000, 30000 };
	for (size_t i = 0; i < sizeof(delays) / sizeof(delays[0]); i++) {
		uint64_t now = 100000 + 2000 * i;
		assert_int_equal(handover_write(&h, -1, SD, &d, now, why, sizeof(why)), -EBADF);
		assert_int_equal(h.retry.attempts, i + 1);
		assert_int_equal(h.wake_at, now + delays[i]);
	}
	assert_string_equal(why, "cannot write " SD "/desired.json: Bad file descriptor");
	assert_int_equal(h.generation, 0);
	assert_null(h.osc);
	assert_int_equal(handover_write(&h, s->fd, SD, &d, 200000, why, sizeof(why)), 1);
	assert_false(backoff_failing(&h.retry));
	assert_int_equal(h.wake_at, 0);
	assert_int_equal(h.generation, 1);
	handover_done(&h);
}

static void picks_up_the_previous_file(void **state)
{
	struct scratch *s = *state;
	struct handover h = {};
	char why[256] = "";
	struct desired d = doc(osc1);
	d.restart_id = r7;
	d.restart_units = units;
	assert_int_equal(handover_write(&h, s->fd, SD, &d, 0, why, sizeof(why)), 1);
	assert_int_equal(handover_write(&h, s->fd, SD, &d, 0, why, sizeof(why)), 0);
	d.restart_id = r8;
	assert_int_equal(handover_write(&h, s->fd, SD, &d, 0, why, sizeof(why)), 1);
	handover_done(&h);

	/* A restarted agent: the same state, the restart request handed over. */
	char id[96] = "";
	char **got = NULL;
	handover_load(&h, s->fd, SD, id, sizeof(id), &got, 1000);
	assert_int_equal(h.generation, 2);
	/* ... whose generation is awaited like one just written */
	assert_int_equal(h.pickup.want, 2);
	assert_int_equal(h.pickup.next_ms, 1000 + PICKUP_FIRST_MS);
	assert_string_equal(h.checksum, d.checksum);
	assert_string_equal(h.osc, OSC1);
	assert_string_equal(id, "r8");
	assert_non_null(got);
	assert_string_equal(got[0], "kubelet.service");
	assert_null(got[1]);
	/* The request handed over is no longer in the comparison form, so
	 * the same document is written once more (as before handover.c). */
	assert_int_equal(handover_write(&h, s->fd, SD, &d, 0, why, sizeof(why)), 1);
	assert_int_equal(h.generation, 3);

	/* A request already known (the Node's) is kept, and what is on disk
	 * is not written again; an id too long is not handed over. */
	struct handover h2 = {};
	char id2[96] = "mine";
	char *mine[] = { containerd, NULL };
	char **known = mine;
	handover_load(&h2, s->fd, SD, id2, sizeof(id2), &known, 1000);
	assert_ptr_equal(known, mine);
	assert_string_equal(id2, "mine");
	assert_int_equal(h2.generation, 3);
	assert_int_equal(handover_write(&h2, s->fd, SD, &d, 0, why, sizeof(why)), 0);
	assert_int_equal(h2.generation, 3);
	handover_done(&h2);
	char small[2] = "";
	char **none = NULL;
	handover_load(&h2, s->fd, SD, small, sizeof(small), &none, 1000);
	assert_null(none);
	assert_string_equal(small, "");
	handover_done(&h2);

	/* Another state directory: what was written is forgotten, not the
	 * OSC in force. */
	handover_forget(&h);
	assert_int_equal(h.generation, 0);
	assert_string_equal(h.checksum, "");
	assert_null(h.key);
	assert_string_equal(h.osc, OSC1);
	assert_int_equal(handover_write(&h, s->fd, SD, &d, 0, why, sizeof(why)), 1);
	assert_int_equal(h.generation, 1);
	handover_done(&h);
	for (char **u = got; *u; u++)
		free(*u);
	free(got);
}

static void ignores_a_bad_file(void **state)
{
	struct scratch *s = *state;
	struct handover h = {};
	char id[96] = "";
	char **got = NULL;
	handover_load(&h, s->fd, SD, id, sizeof(id), &got, 1000); /* none there */
	assert_int_equal(h.generation, 0);
	assert_int_equal(h.pickup.want, 0); /* nothing to wait for */
	assert_int_equal(fsx_write_atomic_at(s->fd, HANDOVER_FILE, "{\"version\": 1}", 14, 0600, FSX_UID_KEEP,
					     FSX_GID_KEEP, 0),
			 1);
	handover_load(&h, s->fd, SD, id, sizeof(id), &got, 1000);
	assert_int_equal(h.generation, 0);
	assert_null(h.osc);
	assert_null(h.key);
	assert_null(got);
}

static void removes_temporaries(void **state)
{
	struct scratch *s = *state;
	static const char *const names[] = { ".#desired.json.0123456789abcdef", ".#desired.json.fedcba9876543210",
					     ".#result.json.0123456789abcdef", "desired.json", ".#desired.json.x" };
	for (size_t i = 0; i < 5; i++) {
		int fd = openat(s->fd, names[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	handover_remove_temporaries(s->fd, SD);
	assert_int_equal(faccessat(s->fd, names[0], F_OK, 0), -1);
	assert_int_equal(faccessat(s->fd, names[1], F_OK, 0), -1);
	for (size_t i = 2; i < 5; i++)
		assert_int_equal(faccessat(s->fd, names[i], F_OK, 0), 0);
}

static int setup(void **state)
{
	return scratch_setup(state, "handover");
}

int main(void)
{
	log_open("test-agent-handover", LOG_TARGET_STDERR);
	log_set_max_level(LOG_WARNING);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(writes_changes_only, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(rewrite_is_the_same_bytes_in_a_new_file, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(invalid_is_not_written, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(failed_write_backs_off, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(picks_up_the_previous_file, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(ignores_a_bad_file, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(removes_temporaries, setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
