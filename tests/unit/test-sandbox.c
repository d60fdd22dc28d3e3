/* Unit tests for lib/base/sandbox.c: each case forks, installs a filter in the
 * child and reports through the child's wait status. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../authkeys-cmd/confine.h"
#include "cleanup.h"
#include "sandbox.h"

static const char *const small[] = { "write", "getppid" };

/* Runs fn in a child and returns its raw wait status. */
static int run_child(void (*fn)(void))
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(99);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

static void child_forbidden(void)
{
	if (sandbox_install(small, ELEMENTSOF(small), NULL) < 0)
		_exit(2);
	(void)socket(AF_INET, SOCK_STREAM, 0); /* not in the list: killed here */
	_exit(1);
}

static void forbidden_syscall_kills_with_sigsys(void **state)
{
	int st = run_child(child_forbidden);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSYS);
}

static void child_allowed(void)
{
	if (sandbox_install(small, ELEMENTSOF(small), NULL) < 0)
		_exit(2);
	_exit(getppid() > 0 ? 42 : 3);
}

static void allowed_syscall_runs(void **state)
{
	int st = run_child(child_allowed);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 42);
}

static void child_clone3(void)
{
	if (sandbox_install(small, ELEMENTSOF(small), NULL) < 0)
		_exit(2);
	long r = syscall(SYS_clone3, NULL, 0);
	_exit(r < 0 && errno == ENOSYS ? 42 : 3);
}

static void clone3_gets_enosys(void **state)
{
	int st = run_child(child_clone3);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 42);
}

static void child_unknown_name(void)
{
	static const char *const bad[] = { "write", "no_such_syscall" };
	const char *what = NULL;
	if (sandbox_install(bad, ELEMENTSOF(bad), &what) != -EINVAL || !what || strcmp(what, "no_such_syscall"))
		_exit(2);
	/* Nothing was installed: a syscall outside the list still works. */
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	_exit(fd >= 0 ? 42 : 3);
}

static void unknown_name_installs_nothing(void **state)
{
	int st = run_child(child_unknown_name);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 42);
}

/* authkeys-cmd's own filter, installed by the function authkeys-cmd calls:
 * what it needs works, a socket (what an exploited parser would want
 * first) kills the process. */
static void child_akc_forbidden(void)
{
	if (akc_confine(NULL) < 0)
		_exit(2);
	(void)socket(AF_INET, SOCK_STREAM, 0);
	_exit(1);
}

static void child_akc_allowed(void)
{
	if (akc_confine(NULL) < 0)
		_exit(2);
	int fd = openat(AT_FDCWD, "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || close(fd) < 0)
		_exit(3);
	_exit(write(STDOUT_FILENO, "", 0) == 0 ? 42 : 4);
}

static void child_akc_exec(void)
{
	if (akc_confine(NULL) < 0)
		_exit(2);
	execl("/bin/true", "true", (char *)NULL);
	_exit(1);
}

static void authkeys_cmd_filter(void **state)
{
	int st = run_child(child_akc_forbidden);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSYS);

	st = run_child(child_akc_exec);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSYS);

	st = run_child(child_akc_allowed);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(forbidden_syscall_kills_with_sigsys),
		cmocka_unit_test(allowed_syscall_runs),
		cmocka_unit_test(clone3_gets_enosys),
		cmocka_unit_test(unknown_name_installs_nothing),
		cmocka_unit_test(authkeys_cmd_filter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
