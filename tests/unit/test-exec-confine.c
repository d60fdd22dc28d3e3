/* Unit tests for cloud-config-exec/confine.c: after the filters are in,
 * AF_UNIX sockets (the bus, the journal) work, netlink is refused with
 * EAFNOSUPPORT, and an Internet socket or a forbidden system call kills
 * the process with SIGSYS, while a real bash script (what an OS update
 * command is: it runs under the filter with --no-systemd) runs to its end.
 * Each case runs in a forked child. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../cloud-config-exec/confine.h"

enum { CASE_UNIX, CASE_NETLINK, CASE_INET, CASE_INET6, CASE_MOUNT, CASE_BASH };

static char bash_script[64], bash_out[64];

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
		case CASE_BASH: {
			char a0[] = "bash";
			char *argv[] = { a0, bash_script, bash_out, NULL };
			char e0[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
			char *envp[] = { e0, NULL };
			execve("/bin/bash", argv, envp);
			_exit(96);
		}
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

/* What OS update scripts do: pipes, command substitution, a subshell, a
 * background job and wait, a trap, redirections. bash asks getpgrp() at
 * start (job control bookkeeping), which the filter once killed with
 * SIGSYS: the in-place OS update then failed for good under --no-systemd. */
static const char script[] =
	"#!/bin/bash\n"
	"set -euo pipefail\n"
	"trap 'echo done >>\"$1\"' EXIT\n"
	"ver=$(sed -n 's/^ID=//p' /etc/os-release | tr -d '\"')\n"
	"( cd / && ls >/dev/null )\n"
	"sleep 0.01 &\n"
	"wait $!\n"
	"printf 'updated %s\\n' \"$ver\" | tee \"$1\" >/dev/null\n"
	"exit 0\n";

static void test_bash_script_runs(void **state)
{
	(void)state;
	snprintf(bash_script, sizeof(bash_script), "/tmp/test-confine-%d.sh", (int)getpid());
	snprintf(bash_out, sizeof(bash_out), "/tmp/test-confine-%d.out", (int)getpid());
	FILE *f = fopen(bash_script, "w");
	assert_non_null(f);
	assert_int_equal(fputs(script, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	int s = run_case(CASE_BASH);
	char got[256] = "";
	f = fopen(bash_out, "r");
	size_t n = f ? fread(got, 1, sizeof(got) - 1, f) : 0;
	got[n] = 0;
	if (f)
		fclose(f);
	unlink(bash_script);
	unlink(bash_out);
	if (WIFSIGNALED(s))
		fail_msg("bash under the filter died of signal %d (%s)", WTERMSIG(s), strsignal(WTERMSIG(s)));
	assert_true(WIFEXITED(s));
	assert_int_equal(WEXITSTATUS(s), 0);
	assert_non_null(strstr(got, "updated "));
	assert_non_null(strstr(got, "done\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unix_allowed),
		cmocka_unit_test(test_netlink_refused),
		cmocka_unit_test(test_inet_killed),
		cmocka_unit_test(test_forbidden_syscall_killed),
		cmocka_unit_test(test_bash_script_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
