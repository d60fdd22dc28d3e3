/* Unit tests for agent/filter.c: after filter_install() what the daemon does
 * keeps working (files, sockets, getrandom, clone3 -> ENOSYS) and a system
 * call outside the list kills the process with SIGSYS. Each case runs in a
 * forked child, which exits with _exit() (no atexit handlers under the
 * filter). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../agent/filter.h"

static int run_child(int (*fn)(void))
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (filter_install(NULL) < 0)
			_exit(2);
		_exit(fn());
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

static int allowed_calls(void)
{
	char buf[16];
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, buf, sizeof(buf)) != 0)
		return 10;
	close(fd);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return 11;
	close(s);
	if (getrandom(buf, sizeof(buf), 0) != sizeof(buf))
		return 12;
	/* clone3 answers ENOSYS so glibc falls back to clone. */
	if (syscall(SYS_clone3, NULL, 0) != -1 || errno != ENOSYS)
		return 13;
	return 42;
}

static void allowed_calls_work(void **state)
{
	int st = run_child(allowed_calls);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 42);
}

static int call_execve(void)
{
	char *const argv[] = { (char *)(uintptr_t) "/bin/true", NULL };
	execve("/bin/true", argv, NULL);
	return 1;
}

static int call_ptrace(void)
{
	ptrace(PTRACE_TRACEME, 0, NULL, NULL);
	return 1;
}

static int call_setuid(void)
{
	return setuid(0) == 0 ? 1 : 3;
}

static void forbidden_calls_kill(void **state)
{
#ifdef NA_SANITIZER
	/* The sanitizer build allows ptrace (the leak checker's tracer). */
	int (*const cases[])(void) = { call_execve, call_setuid };
	(void)call_ptrace;
#else
	int (*const cases[])(void) = { call_execve, call_ptrace, call_setuid };
#endif
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int st = run_child(cases[i]);
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS)
			fail_msg("case %zu: status %#x, want SIGSYS", i, st);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(allowed_calls_work),
		cmocka_unit_test(forbidden_calls_kill),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
