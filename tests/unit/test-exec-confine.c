/* Unit tests for cloud-config-exec/confine.c: after the filters are in,
 * AF_UNIX sockets (the bus, the journal) work, netlink is refused with
 * EAFNOSUPPORT, and an Internet socket or a forbidden system call kills
 * the process with SIGSYS. Each case runs in a forked child. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../cloud-config-exec/confine.h"

enum { CASE_UNIX, CASE_NETLINK, CASE_INET, CASE_INET6, CASE_MOUNT };

/* Returns the child's wait status. Exit 0: the call behaved as allowed. */
static int run_case(int which)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (confine_install() < 0)
			_exit(90);
		int fd;
		switch (which) {
		case CASE_UNIX:
			fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			_exit(fd >= 0 ? 0 : 91);
		case CASE_NETLINK:
			fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0);
			_exit(fd < 0 && errno == EAFNOSUPPORT ? 0 : 92);
		case CASE_INET:
			fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			_exit(93); /* must not get here */
		case CASE_INET6:
			fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			_exit(94);
		case CASE_MOUNT:
			/* not on the list (and not added for sanitizers either) */
			syscall(SYS_mount, "none", "/", "tmpfs", 0UL, NULL);
			_exit(95);
		}
		(void)fd;
		_exit(99);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void test_unix_allowed(void **state)
{
	(void)state;
	int s = run_case(CASE_UNIX);
	assert_true(WIFEXITED(s));
	assert_int_equal(WEXITSTATUS(s), 0);
}

static void test_netlink_refused(void **state)
{
	(void)state;
	int s = run_case(CASE_NETLINK);
	assert_true(WIFEXITED(s));
	assert_int_equal(WEXITSTATUS(s), 0);
}

static void test_inet_killed(void **state)
{
	(void)state;
	int s = run_case(CASE_INET);
	assert_true(WIFSIGNALED(s));
	assert_int_equal(WTERMSIG(s), SIGSYS);
	s = run_case(CASE_INET6);
	assert_true(WIFSIGNALED(s));
	assert_int_equal(WTERMSIG(s), SIGSYS);
}

static void test_forbidden_syscall_killed(void **state)
{
	(void)state;
	int s = run_case(CASE_MOUNT);
	assert_true(WIFSIGNALED(s));
	assert_int_equal(WTERMSIG(s), SIGSYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unix_allowed),
		cmocka_unit_test(test_netlink_refused),
		cmocka_unit_test(test_inet_killed),
		cmocka_unit_test(test_forbidden_syscall_killed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
