/* Unit tests for agent/notify.c: datagrams reach a socket named by
 * $NOTIFY_SOCKET, as a path and in the abstract namespace; no socket, no
 * error; $WATCHDOG_USEC only counts when $WATCHDOG_PID is unset or ours. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../../agent/notify.h"

static int bind_dgram(const char *name, bool abstract)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t len = strlen(name);
	memcpy(a.sun_path + abstract, name, len);
	socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, alen), 0);
	return fd;
}

static void expect_datagram(int fd, const char *want)
{
	char buf[256];
	ssize_t k = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	assert_true(k >= 0);
	buf[k] = '\0';
	assert_string_equal(buf, want);
}

static void path_socket(void **state)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/na-test-notify.%d", (int)getpid());
	unlink(path);
	int fd = bind_dgram(path, false);
	setenv("NOTIFY_SOCKET", path, 1);
	struct notify n;
	assert_int_equal(notify_open(&n), 0);
	assert_int_equal(notify_send(&n, "READY=1"), 0);
	expect_datagram(fd, "READY=1");
	assert_int_equal(notify_send(&n, "STATUS=applied x"), 0);
	expect_datagram(fd, "STATUS=applied x");
	/* RELOADING=1 with the monotonic clock in microseconds. */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	unsigned long long before = (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000u;
	assert_int_equal(notify_reloading(&n), 0);
	char buf[256];
	ssize_t k = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	assert_true(k > 0);
	buf[k] = '\0';
	unsigned long long usec = 0;
	assert_int_equal(strncmp(buf, "RELOADING=1\nMONOTONIC_USEC=", 27), 0);
	usec = strtoull(buf + 27, NULL, 10);
	assert_true(usec >= before && usec < before + 10000000ull);
	notify_close(&n);
	close(fd);
	unlink(path);
}

static void abstract_socket(void **state)
{
	char name[64], env[70];
	snprintf(name, sizeof(name), "na-test-notify-%d", (int)getpid());
	int fd = bind_dgram(name, true);
	snprintf(env, sizeof(env), "@%s", name);
	setenv("NOTIFY_SOCKET", env, 1);
	struct notify n;
	assert_int_equal(notify_open(&n), 0);
	assert_int_equal(notify_send(&n, "WATCHDOG=1"), 0);
	expect_datagram(fd, "WATCHDOG=1");
	notify_close(&n);
	close(fd);
}

static void no_socket(void **state)
{
	struct notify n;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(notify_open(&n), 0);
	assert_int_equal(n.fd, -1);
	assert_int_equal(notify_send(&n, "READY=1"), 0);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	assert_true(notify_open(&n) < 0);
	unsetenv("NOTIFY_SOCKET");
}

static void watchdog(void **state)
{
	char pid[32];
	unsetenv("WATCHDOG_PID");
	unsetenv("WATCHDOG_USEC");
	assert_int_equal(notify_watchdog_usec(), 0);
	setenv("WATCHDOG_USEC", "30000000", 1);
	assert_int_equal(notify_watchdog_usec(), 30000000);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	assert_int_equal(notify_watchdog_usec(), 30000000);
	setenv("WATCHDOG_PID", "1", 1);
	assert_int_equal(notify_watchdog_usec(), 0);
	unsetenv("WATCHDOG_PID");
	setenv("WATCHDOG_USEC", "30s", 1);
	assert_int_equal(notify_watchdog_usec(), 0);
	unsetenv("WATCHDOG_USEC");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(path_socket),
		cmocka_unit_test(abstract_socket),
		cmocka_unit_test(no_socket),
		cmocka_unit_test(watchdog),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
