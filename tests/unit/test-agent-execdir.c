/* Unit tests for agent/execdir.c in a scratch root: the executor's state
 * directory opened once it exists, result.json read (a result seen before
 * is not reported again, an invalid one keeps the last good one), inotify
 * telling a written result.json, and the directory closed and opened
 * again. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsx.h"
#include "inplace.h"
#include "log.h"
#include "result.h"
#include "scratch.h"
#include "../../agent/execdir.h"

#define SUM "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define DIR "/exec"

static void put_result(struct scratch *s, uint64_t generation, bool success)
{
	static char step[] = "units";
	struct result r = { .checksum = SUM, .generation = generation, .success = success,
			    .failed_step = success ? NULL : step, .finished_at = 1763740800 };
	char *out = NULL;
	size_t len;
	assert_int_equal(result_format(&r, &out, &len), 0);
	int dfd = openat(s->fd, "exec", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_true(fsx_write_atomic_at(dfd, EXECDIR_RESULT_FILE, out, len, 0644, FSX_UID_KEEP, FSX_GID_KEEP, 0) >= 0);
	close(dfd);
	free(out);
}

/* A result for the same checksum and generation, not successful, with an
 * in-place update in state st (enum inplace_state) and, when failed, a
 * reason. */
static void put_inplace(struct scratch *s, int st)
{
	static char step[] = "inplace-os-update", reason[] = "OS update might have failed and rolled back";
	struct result r = { .checksum = SUM, .generation = 5, .success = false, .failed_step = step,
			    .finished_at = 1763740800,
			    .inplace = { .present = true, .kinds = INPLACE_OS_VERSION, .state = st,
					 .reason = st == INPLACE_STATE_FAILED ? reason : NULL } };
	char *out = NULL;
	size_t len;
	assert_int_equal(result_format(&r, &out, &len), 0);
	int dfd = openat(s->fd, "exec", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_true(fsx_write_atomic_at(dfd, EXECDIR_RESULT_FILE, out, len, 0644, FSX_UID_KEEP, FSX_GID_KEEP, 0) >= 0);
	close(dfd);
	free(out);
}

/* The executor's in-place state changes within one generation (waiting ->
 * running after the handshake; running -> failed after the reboot into the
 * old OS), checksum and success unchanged: each is a new result, reported
 * (so the agent logs the failure and emits its Event), and one read again
 * is not. */
static void inplace_state_change(void **state)
{
	struct scratch *s = *state;
	struct execdir x = EXECDIR_INIT;
	int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	assert_true(ifd >= 0);
	assert_int_equal(mkdirat(s->fd, "exec", 0755), 0);
	assert_int_equal(execdir_open(&x, s->fd, ifd, DIR), 0);
	put_inplace(s, INPLACE_STATE_WAITING);
	assert_int_equal(execdir_read(&x, DIR), 2);
	assert_int_equal(execdir_read(&x, DIR), 1);
	put_inplace(s, INPLACE_STATE_RUNNING);
	assert_int_equal(execdir_read(&x, DIR), 2);
	assert_int_equal(x.result.inplace.state, INPLACE_STATE_RUNNING);
	assert_int_equal(execdir_read(&x, DIR), 1);
	put_inplace(s, INPLACE_STATE_FAILED);
	assert_int_equal(execdir_read(&x, DIR), 2);
	assert_int_equal(x.result.inplace.state, INPLACE_STATE_FAILED);
	assert_int_equal(execdir_read(&x, DIR), 1);
	execdir_done(&x, ifd);
	close(ifd);
}

static void results(void **state)
{
	struct scratch *s = *state;
	struct execdir x = EXECDIR_INIT;
	int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	assert_true(ifd >= 0);

	/* Not there yet. */
	assert_true(execdir_open(&x, s->fd, ifd, DIR) < 0);
	assert_int_equal(x.fd, -1);
	assert_int_equal(execdir_read(&x, DIR), 0);
	assert_int_equal(mkdirat(s->fd, "exec", 0755), 0);
	assert_int_equal(execdir_open(&x, s->fd, ifd, DIR), 0);
	int fd = x.fd;
	assert_true(fd >= 0);
	assert_int_equal(execdir_open(&x, s->fd, ifd, DIR), 0); /* open already */
	assert_int_equal(x.fd, fd);
	assert_int_equal(execdir_read(&x, DIR), 0); /* no result.json */
	assert_false(x.valid);
	assert_false(execdir_inotify(&x, ifd, DIR));

	put_result(s, 1, true);
	assert_true(execdir_inotify(&x, ifd, DIR));
	assert_int_equal(execdir_read(&x, DIR), 2);
	assert_true(x.valid);
	assert_true(x.result.success);
	assert_int_equal(x.result.generation, 1);
	assert_int_equal(execdir_read(&x, DIR), 1); /* the same again */
	put_result(s, 1, false);
	assert_int_equal(execdir_read(&x, DIR), 2);
	assert_false(x.result.success);

	/* An invalid one: the last good one stays. */
	int dfd = openat(s->fd, "exec", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_true(fsx_write_atomic_at(dfd, EXECDIR_RESULT_FILE, "{}", 2, 0644, FSX_UID_KEEP, FSX_GID_KEEP, 0) >= 0);
	assert_true(execdir_inotify(&x, ifd, DIR));
	assert_int_equal(execdir_read(&x, DIR), 0);
	assert_true(x.valid);
	assert_false(x.result.success);

	/* Closed (as on a reload) and opened again: results still read. */
	close(dfd);
	execdir_close(&x, ifd);
	assert_int_equal(x.fd, -1);
	assert_int_equal(x.wd, -1);
	assert_int_equal(execdir_read(&x, DIR), 0);
	assert_int_equal(execdir_open(&x, s->fd, ifd, DIR), 0);
	assert_false(execdir_inotify(&x, ifd, DIR)); /* the old watch's IN_IGNORED only */
	put_result(s, 2, true);
	assert_true(execdir_inotify(&x, ifd, DIR));
	assert_int_equal(execdir_read(&x, DIR), 2);
	assert_int_equal(x.result.generation, 2);

	execdir_done(&x, ifd);
	assert_int_equal(x.fd, -1);
	assert_false(x.valid);
	close(ifd);
}

static int setup(void **state)
{
	return scratch_setup(state, "execdir");
}

int main(void)
{
	log_open("test-agent-execdir", LOG_TARGET_STDERR);
	log_set_max_level(LOG_WARNING);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(results, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(inplace_state_change, setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
