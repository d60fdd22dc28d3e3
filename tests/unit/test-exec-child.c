/* Unit tests for cloud-config-exec/child.c's deadlines (issue 23): a child
 * that keeps writing runs past the idle deadline (an image layer streamed
 * out of containerd, inflated and hashed, took more than the 60 s that used
 * to be its whole deadline on a real node under qemu's TCG); one that stays
 * silent for the idle deadline, or outlives the total one, is killed; and
 * child_run_sink() keeps its single deadline. Runs /bin/sh. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "../../cloud-config-exec/child.h"

static char env0[] = "PATH=/usr/bin:/bin";
static char *const env[] = { env0, NULL };

static int count(void *userdata, const void *data, size_t len)
{
	(void)data;
	*(size_t *)userdata += len;
	return 0;
}

static long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int run(const char *script, unsigned idle_ms, unsigned total_ms, size_t *n, int *status)
{
	char a0[] = "sh", a1[] = "-c";
	char *argv[] = { a0, a1, (char *)(uintptr_t)script, NULL };
	*n = 0;
	return child_run_stream("/bin/sh", argv, env, idle_ms, total_ms, count, n, status);
}

/* Ten writes 0.2 s apart: 2 s in all, never 1 s silent. */
#define STEADY "for i in 1 2 3 4 5 6 7 8 9 10; do echo x; sleep 0.2; done"

static void steady_writer_outlives_idle(void **state)
{
	(void)state;
	size_t n;
	int status = -1;
	assert_int_equal(run(STEADY, 1000, 20000, &n, &status), 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(n, 20);
}

static void silence_killed_after_idle(void **state)
{
	(void)state;
	size_t n;
	int status = -1;
	long t0 = now_ms();
	assert_int_equal(run("echo x; sleep 30", 500, 20000, &n, &status), -ETIMEDOUT);
	assert_int_equal(n, 2);
	assert_true(now_ms() - t0 < 10000);
}

static void total_deadline_kills_a_steady_writer(void **state)
{
	(void)state;
	size_t n;
	int status = -1;
	long t0 = now_ms();
	assert_int_equal(run("while :; do echo x; sleep 0.1; done", 1000, 800, &n, &status), -ETIMEDOUT);
	assert_true(now_ms() - t0 < 10000);
}

static void closed_stdout_then_silence(void **state)
{
	(void)state;
	size_t n;
	int status = -1;
	/* stdout closed, the child lingers: the idle deadline still holds. */
	assert_int_equal(run("echo x; exec >&-; sleep 30", 500, 20000, &n, &status), -ETIMEDOUT);
}

static void sink_keeps_one_deadline(void **state)
{
	(void)state;
	char a0[] = "sh", a1[] = "-c", a2[] = STEADY;
	char *argv[] = { a0, a1, a2, NULL };
	size_t n = 0;
	int status = -1;
	assert_int_equal(child_run_sink("/bin/sh", argv, env, 1000, count, &n, &status), -ETIMEDOUT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(steady_writer_outlives_idle),
		cmocka_unit_test(silence_killed_after_idle),
		cmocka_unit_test(total_deadline_kills_a_steady_writer),
		cmocka_unit_test(closed_stdout_then_silence),
		cmocka_unit_test(sink_keeps_one_deadline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
